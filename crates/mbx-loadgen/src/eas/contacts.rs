//! Contacts of ActiveSync (MS-ASCNTC): a [`Contact`] as the `ApplicationData` of a Sync `Add`
//! to the Contacts folder, and read back from a Sync of it.
//!
//! The fields are the ones a phone's address book fills for most entries: names, company and
//! title, one e-mail address, two telephone numbers, a note. `FileAs` is not sent: servers
//! compute it (SOGo from the names), so a run's contacts are told apart by their e-mail address
//! rather than by a field a server may rewrite.

use super::calendar::{body_text, plain_body, PimError};
use super::codepages::{airsync, contacts};
use super::wbxml::Element;

/// One contact.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Contact {
    /// Given name.
    pub first_name: String,
    /// Family name.
    pub last_name: String,
    /// E-mail address (MS-ASCNTC `Email1Address`): what tells the items of a run apart.
    pub email: String,
    /// Company (empty: none).
    pub company: String,
    /// Job title (empty: none).
    pub job_title: String,
    /// Business telephone (empty: none).
    pub business_phone: String,
    /// Mobile telephone (empty: none).
    pub mobile_phone: String,
    /// A plain-text note (empty: none).
    pub body: String,
}

/// The bare address of an `Email1Address` value: servers may answer `"Name" <a@b>` for `a@b`.
pub fn bare_address(v: &str) -> &str {
    let v = v.trim();
    match (v.rfind('<'), v.rfind('>')) {
        (Some(l), Some(r)) if l < r => v[l + 1..r].trim(),
        _ => v,
    }
}

impl Contact {
    /// Its `ApplicationData` for a Sync `Add` (MS-ASCNTC 2.2.2, EAS 12.0 and later).
    pub fn to_application_data(&self) -> Element {
        let mut d = Element::new(airsync::ApplicationData);
        if !self.body.is_empty() {
            d = d.with(plain_body(&self.body));
        }
        for (tag, v) in [
            (contacts::BusinessPhoneNumber, &self.business_phone),
            (contacts::CompanyName, &self.company),
            (contacts::Email1Address, &self.email),
            (contacts::FirstName, &self.first_name),
            (contacts::JobTitle, &self.job_title),
            (contacts::LastName, &self.last_name),
            (contacts::MobilePhoneNumber, &self.mobile_phone),
        ] {
            if !v.is_empty() {
                d = d.with(Element::text(tag, v.as_str()));
            }
        }
        d
    }

    /// The contact in a Sync's `ApplicationData`. Required: `Email1Address` (as a bare
    /// address); the other fields are empty when absent.
    pub fn from_application_data(data: &Element) -> Result<Contact, PimError> {
        let text = |t| data.child_text(t).unwrap_or_default().trim().to_owned();
        let email = data
            .child_text(contacts::Email1Address)
            .map(|v| bare_address(v).to_owned())
            .ok_or(PimError::Missing {
                item: "contact",
                element: "Email1Address",
            })?;
        Ok(Contact {
            first_name: text(contacts::FirstName),
            last_name: text(contacts::LastName),
            email,
            company: text(contacts::CompanyName),
            job_title: text(contacts::JobTitle),
            business_phone: text(contacts::BusinessPhoneNumber),
            mobile_phone: text(contacts::MobilePhoneNumber),
            body: body_text(data).unwrap_or_default(),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::super::wbxml::{decode, encode, Limits};
    use super::*;

    #[test]
    fn contact_round_trips_through_wbxml() {
        let c = Contact {
            first_name: "Ada".into(),
            last_name: "Lovelace-Byron".into(),
            email: "ada.7@contacts.loadgen.test".into(),
            company: "Analytical Engines & Co".into(),
            job_title: "Programmer".into(),
            business_phone: "+44 20 7946 0007".into(),
            mobile_phone: "+44 7700 900007".into(),
            body: "Met at the exhibition.".into(),
        };
        let data = c.to_application_data();
        let bytes = encode(&data, 16).expect("encodes");
        let back = decode(&bytes, &Limits::default()).expect("decodes");
        assert_eq!(back, data);
        assert_eq!(Contact::from_application_data(&back), Ok(c));
        assert_eq!(
            back.child(contacts::FirstName).map(|e| e.tag.page()),
            Some(1)
        );
    }

    #[test]
    fn addresses_as_servers_give_them() {
        assert_eq!(bare_address("\"Ada L\" <ada@x.test>"), "ada@x.test");
        assert_eq!(bare_address(" ada@x.test "), "ada@x.test");
        let data = Element::new(airsync::ApplicationData)
            .with(Element::text(contacts::Email1Address, "\"A\" <a@b.test>"))
            .with(Element::text(contacts::LastName, "B"));
        let c = Contact::from_application_data(&data).expect("reads");
        assert_eq!((c.email.as_str(), c.last_name.as_str()), ("a@b.test", "B"));
        assert!(Contact::from_application_data(&Element::new(airsync::ApplicationData)).is_err());
    }
}
