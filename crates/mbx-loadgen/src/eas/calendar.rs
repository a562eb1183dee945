//! Calendar items of ActiveSync (MS-ASCAL): an [`Appointment`] as the `ApplicationData` of a
//! Sync `Add` to the Calendar folder, and read back from a Sync of it.
//!
//! Times are Unix seconds in UTC; on the wire MS-ASCAL's compact form `20261202T130000Z`
//! (a server may answer the extended `2026-12-02T13:00:00.000Z`: both are read). The time
//! zone sent is UTC (MS-ASCAL `TimeZone`: a base64 TIME_ZONE_INFORMATION of 172 bytes, all
//! zero), so the times a second device reads are the ones the first wrote. The body is
//! AirSyncBase plain text (type 1), as EAS 12.0 and later carry it.

use base64::engine::general_purpose::STANDARD as B64;
use base64::Engine as _;

use super::codepages::{airsync, airsyncbase, calendar};
use super::wbxml::Element;

/// What is wrong with a calendar or contact item read from a server.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum PimError {
    /// A required element is absent.
    #[error("reading a {item}: no {element} element")]
    Missing {
        /// `appointment` or `contact`.
        item: &'static str,
        /// The element's name.
        element: &'static str,
    },
    /// A date that is not MS-ASCAL's compact or extended UTC form.
    #[error("reading a {item}: {element} {value:?} is not a UTC date-time")]
    Date {
        /// `appointment`.
        item: &'static str,
        /// The element's name.
        element: &'static str,
        /// The text found (cut at 64 characters).
        value: String,
    },
}

/// MS-ASCAL `BusyStatus`.
pub mod busy {
    /// Free.
    pub const FREE: u8 = 0;
    /// Tentative.
    pub const TENTATIVE: u8 = 1;
    /// Busy.
    pub const BUSY: u8 = 2;
    /// Out of office.
    pub const OUT_OF_OFFICE: u8 = 3;
}

/// One appointment (a single occurrence; recurrence is not simulated).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Appointment {
    /// Its iCalendar UID (MS-ASCAL `UID`): what tells the items of a run apart.
    pub uid: String,
    /// The subject.
    pub subject: String,
    /// Where (empty: no `Location`).
    pub location: String,
    /// Start, Unix seconds (UTC).
    pub start: u64,
    /// End, Unix seconds (UTC), after `start`.
    pub end: u64,
    /// Plain-text body (empty: none).
    pub body: String,
    /// MS-ASCAL `BusyStatus` ([`busy`]).
    pub busy_status: u8,
    /// Minutes before the start of the reminder (None: no reminder).
    pub reminder: Option<u32>,
    /// When the item was made, Unix seconds (MS-ASCAL `DtStamp`).
    pub dtstamp: u64,
}

/// The base64 TIME_ZONE_INFORMATION of UTC: 172 zero bytes (bias 0, no daylight time).
pub fn utc_timezone() -> String {
    B64.encode([0u8; 172])
}

/// Days since 1970-01-01 to (year, month, day) (H. Hinnant's civil-from-days).
fn civil(days: i64) -> (i64, u32, u32) {
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = (doy - (153 * mp + 2) / 5 + 1) as u32;
    let m = if mp < 10 { mp + 3 } else { mp - 9 } as u32;
    (yoe + era * 400 + i64::from(m <= 2), m, d)
}

/// (year, month, day) to days since 1970-01-01 (H. Hinnant's days-from-civil).
fn days_from_civil(y: i64, m: u32, d: u32) -> i64 {
    let y = if m <= 2 { y - 1 } else { y };
    let era = y.div_euclid(400);
    let yoe = y - era * 400;
    let m = i64::from(m);
    let doy = (153 * (if m > 2 { m - 3 } else { m + 9 }) + 2) / 5 + i64::from(d) - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    era * 146_097 + doe - 719_468
}

/// `20261202T130000Z` for Unix seconds: the compact UTC form of MS-ASCAL and iCalendar.
pub fn compact_utc(secs: u64) -> String {
    let days = i64::try_from(secs / 86_400).unwrap_or(i64::MAX / 2);
    let rem = secs % 86_400;
    let (y, m, d) = civil(days);
    format!(
        "{y:04}{m:02}{d:02}T{:02}{:02}{:02}Z",
        rem / 3600,
        rem / 60 % 60,
        rem % 60
    )
}

/// Unix seconds of `20261202T130000Z` or `2026-12-02T13:00:00.000Z` (UTC only).
pub fn parse_utc(s: &str) -> Option<u64> {
    let s = s.trim();
    let s = s.strip_suffix('Z')?;
    // Fractions of a second are dropped.
    let s = s.split('.').next()?;
    let digits: String = s.chars().filter(|c| *c != '-' && *c != ':').collect();
    let (date, time) = digits.split_once('T')?;
    if date.len() != 8
        || time.len() != 6
        || !(date.bytes().chain(time.bytes())).all(|b| b.is_ascii_digit())
    {
        return None;
    }
    let num = |t: &str| t.parse::<u32>().ok();
    let (y, mo, d) = (num(&date[..4])?, num(&date[4..6])?, num(&date[6..])?);
    let (h, mi, se) = (num(&time[..2])?, num(&time[2..4])?, num(&time[4..])?);
    if !(1..=12).contains(&mo) || !(1..=31).contains(&d) || h > 23 || mi > 59 || se > 60 {
        return None;
    }
    let days = days_from_civil(i64::from(y), mo, d);
    let secs = days * 86_400 + i64::from(h * 3600 + mi * 60 + se);
    u64::try_from(secs).ok()
}

/// An AirSyncBase plain-text `Body`.
pub(crate) fn plain_body(text: &str) -> Element {
    Element::new(airsyncbase::Body)
        .with(Element::text(airsyncbase::Type, "1"))
        .with(Element::text(airsyncbase::Data, text))
}

/// The text of an AirSyncBase `Body` in `data` (its `Data`), when there is one.
pub(crate) fn body_text(data: &Element) -> Option<String> {
    let bytes = data
        .path(&[airsyncbase::Body, airsyncbase::Data])?
        .bytes_content()?;
    Some(String::from_utf8_lossy(bytes).into_owned())
}

fn cut(s: &str) -> String {
    s.chars().take(64).collect()
}

impl Appointment {
    /// Its `ApplicationData` for a Sync `Add` (MS-ASCAL 2.2.2, EAS 12.0 and later).
    pub fn to_application_data(&self) -> Element {
        let mut d = Element::new(airsync::ApplicationData)
            .with(Element::text(calendar::TimeZone, utc_timezone()))
            .with(Element::text(calendar::AllDayEvent, "0"));
        if !self.body.is_empty() {
            d = d.with(plain_body(&self.body));
        }
        d = d
            .with(Element::text(
                calendar::BusyStatus,
                self.busy_status.to_string(),
            ))
            .with(Element::text(calendar::DTStamp, compact_utc(self.dtstamp)))
            .with(Element::text(calendar::EndTime, compact_utc(self.end)));
        if !self.location.is_empty() {
            d = d.with(Element::text(calendar::Location, self.location.as_str()));
        }
        if let Some(r) = self.reminder {
            d = d.with(Element::text(calendar::Reminder, r.to_string()));
        }
        d.with(Element::text(calendar::Sensitivity, "0"))
            .with(Element::text(calendar::Subject, self.subject.as_str()))
            .with(Element::text(calendar::StartTime, compact_utc(self.start)))
            .with(Element::text(calendar::UID, self.uid.as_str()))
            // 0: an appointment, not a meeting.
            .with(Element::text(calendar::MeetingStatus, "0"))
    }

    /// The appointment in a Sync's `ApplicationData`. Required: `Subject`, `StartTime`,
    /// `EndTime`; the others default (empty text, busy, no reminder, `DtStamp` = start). A
    /// server may give no `UID` (MS-ASCAL makes it optional in answers): then it is empty.
    pub fn from_application_data(data: &Element) -> Result<Appointment, PimError> {
        let item = "appointment";
        let text = |t, element| {
            data.child_text(t)
                .map(str::to_owned)
                .ok_or(PimError::Missing { item, element })
        };
        let date = |t, element| -> Result<u64, PimError> {
            let v = text(t, element)?;
            parse_utc(&v).ok_or_else(|| PimError::Date {
                item,
                element,
                value: cut(&v),
            })
        };
        let start = date(calendar::StartTime, "StartTime")?;
        Ok(Appointment {
            uid: data
                .child_text(calendar::UID)
                .unwrap_or_default()
                .to_owned(),
            subject: data
                .child(calendar::Subject)
                .map(|s| s.text_content().unwrap_or_default().to_owned())
                .ok_or(PimError::Missing {
                    item,
                    element: "Subject",
                })?,
            location: data
                .child_text(calendar::Location)
                .unwrap_or_default()
                .to_owned(),
            start,
            end: date(calendar::EndTime, "EndTime")?,
            body: body_text(data).unwrap_or_default(),
            busy_status: data
                .child_text(calendar::BusyStatus)
                .and_then(|s| s.trim().parse().ok())
                .unwrap_or(busy::BUSY),
            reminder: data
                .child_text(calendar::Reminder)
                .and_then(|s| s.trim().parse().ok()),
            dtstamp: match data.child_text(calendar::DTStamp) {
                Some(v) => parse_utc(v).ok_or_else(|| PimError::Date {
                    item,
                    element: "DtStamp",
                    value: cut(v),
                })?,
                None => start,
            },
        })
    }
}

#[cfg(test)]
mod tests {
    use super::super::wbxml::{decode, encode, Limits};
    use super::*;

    fn sample() -> Appointment {
        Appointment {
            uid: "mbx-1-loadgen1-7".into(),
            subject: "Budget review".into(),
            location: "Room 4 & the <annex>".into(),
            start: 1_796_216_400,
            end: 1_796_220_000,
            body: "Agenda: numbers.\r\nBring the draft.".into(),
            busy_status: busy::BUSY,
            reminder: Some(15),
            dtstamp: 1_796_200_000,
        }
    }

    #[test]
    fn dates_both_ways() {
        assert_eq!(compact_utc(0), "19700101T000000Z");
        // 2026-12-02 13:00:00 UTC.
        assert_eq!(compact_utc(1_796_216_400), "20261202T130000Z");
        assert_eq!(parse_utc("20261202T130000Z"), Some(1_796_216_400));
        assert_eq!(parse_utc("2026-12-02T13:00:00.000Z"), Some(1_796_216_400));
        assert_eq!(parse_utc("2024-02-29T23:59:59Z"), Some(1_709_251_199));
        for bad in [
            "20261202T130000",
            "2026-13-02T13:00:00Z",
            "x",
            "",
            "20261202T1300Z",
        ] {
            assert_eq!(parse_utc(bad), None, "{bad}");
        }
        for s in [0u64, 951_782_400, 1_796_216_400, 4_102_444_799] {
            assert_eq!(parse_utc(&compact_utc(s)), Some(s));
        }
    }

    #[test]
    fn appointment_round_trips_through_wbxml() {
        let a = sample();
        let data = a.to_application_data();
        let bytes = encode(&data, 16).expect("encodes");
        let back = decode(&bytes, &Limits::default()).expect("decodes");
        assert_eq!(back, data);
        assert_eq!(Appointment::from_application_data(&back), Ok(a));
        // The calendar elements go on page 4, the body on page 17.
        assert_eq!(back.child(calendar::Subject).map(|e| e.tag.page()), Some(4));
        assert_eq!(
            back.child(airsyncbase::Body).map(|e| e.tag.page()),
            Some(17)
        );
        let xml = back.to_xml();
        assert!(
            xml.contains("<StartTime xmlns=\"Calendar:\">20261202T130000Z</StartTime>"),
            "{xml}"
        );
        assert!(xml.contains("Room 4 &amp; the &lt;annex&gt;"), "{xml}");
    }

    #[test]
    fn readers_refuse_what_is_missing_or_malformed() {
        let data = Element::new(airsync::ApplicationData)
            .with(Element::text(calendar::Subject, "s"))
            .with(Element::text(calendar::StartTime, "20261202T130000Z"));
        assert_eq!(
            Appointment::from_application_data(&data),
            Err(PimError::Missing {
                item: "appointment",
                element: "EndTime"
            })
        );
        let data = data.with(Element::text(calendar::EndTime, "tomorrow"));
        assert!(matches!(
            Appointment::from_application_data(&data),
            Err(PimError::Date {
                element: "EndTime",
                ..
            })
        ));
    }
}
