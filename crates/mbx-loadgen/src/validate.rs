//! The one check of every name that enters a protocol line: mail addresses (MAIL FROM, RCPT TO),
//! domains and EHLO names, user names and passwords (LOGIN, USER/PASS, AUTH), user templates.
//! Every subcommand (`loadgen init`, `run`, `idle`, `submit`, `fleet loadgen`) checks its
//! users, domain, addresses and EHLO name here before anything connects, so a CR, LF or NUL in a
//! flag or a users file can never become a second SMTP, IMAP or POP3 command.
//!
//! Syntax as RFC 5321 4.1.2 defines it (a dot-string local part of at most 64 octets, a domain
//! of dot-separated labels of letters, digits and hyphens of at most 63 octets each, or an
//! address literal, the whole path at most 254 octets: 4.5.3.1); non-ASCII letters are allowed
//! in both parts (RFC 6531, SMTPUTF8), control characters nowhere.

use crate::users::User;

/// The most users one run takes (`--users`, a users file): a client machine holds each user's
/// state and schedule (about 1 KB), so a million users is about a gigabyte; LoadGen drives
/// thousands per client machine, and `fleet loadgen` splits a larger population among clients.
pub const MAX_USERS: u32 = 1_000_000;

/// The longest password accepted (a line of IMAP LOGIN or POP3 PASS stays far under every
/// server's command-line limit).
pub const MAX_PASSWORD: usize = 1024;

/// The longest user name accepted (Dovecot's default limit is 255, Exchange's UPN 1024).
pub const MAX_LOGIN: usize = 255;

/// Why a name was refused; the message says which rule and how to fix it.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{what} {shown}: {why}")]
pub struct Invalid {
    /// What the name is ("address", "domain", "user name", ...).
    pub what: &'static str,
    /// The name, quoted with its control characters escaped (never the password itself).
    pub shown: String,
    /// The rule it breaks.
    pub why: String,
}

fn invalid(what: &'static str, name: &str, why: impl Into<String>) -> Invalid {
    Invalid {
        what,
        shown: format!("\"{}\"", mbx_config::text::visible(name, 100)),
        why: why.into(),
    }
}

/// A control character (C0, DEL, C1): never allowed in any protocol name.
fn control(s: &str) -> Option<char> {
    s.chars()
        .find(|c| c.is_control() || ('\u{80}'..='\u{9f}').contains(c))
}

fn no_controls(what: &'static str, s: &str) -> Result<(), Invalid> {
    if let Some(c) = control(s) {
        return Err(invalid(
            what,
            s,
            format!(
                "holds the control character {:?} (CR, LF and NUL would end the protocol line and start another command)",
                c
            ),
        ));
    }
    Ok(())
}

/// RFC 5322 atext (the characters of a dot-string's atoms), plus non-ASCII (RFC 6531).
fn is_atext(c: char) -> bool {
    c.is_ascii_alphanumeric() || "!#$%&'*+-/=?^_`{|}~".contains(c) || !c.is_ascii()
}

/// A domain (RFC 5321 `Domain`) or an address literal (`[192.0.2.1]`, `[IPv6:...]`), as in an
/// address or EHLO.
pub fn domain(d: &str) -> Result<(), Invalid> {
    const WHAT: &str = "domain";
    no_controls(WHAT, d)?;
    if d.is_empty() {
        return Err(invalid(WHAT, d, "is empty"));
    }
    if d.len() > 253 {
        return Err(invalid(WHAT, d, "is longer than 253 octets"));
    }
    if let Some(lit) = d.strip_prefix('[') {
        let Some(inner) = lit.strip_suffix(']') else {
            return Err(invalid(WHAT, d, "an address literal must end with ]"));
        };
        let ok = match inner.strip_prefix("IPv6:") {
            Some(v6) => v6.parse::<std::net::Ipv6Addr>().is_ok(),
            None => inner.parse::<std::net::Ipv4Addr>().is_ok(),
        };
        if !ok {
            return Err(invalid(
                WHAT,
                d,
                "not an address literal ([192.0.2.1] or [IPv6:2001:db8::1])",
            ));
        }
        return Ok(());
    }
    for label in d.split('.') {
        if label.is_empty() {
            return Err(invalid(
                WHAT,
                d,
                "has an empty label (two dots, or a dot at an end)",
            ));
        }
        if label.len() > 63 {
            return Err(invalid(WHAT, d, "has a label longer than 63 octets"));
        }
        if label.starts_with('-') || label.ends_with('-') {
            return Err(invalid(
                WHAT,
                d,
                "has a label starting or ending with a hyphen",
            ));
        }
        if let Some(c) = label
            .chars()
            .find(|c| !(c.is_ascii_alphanumeric() || *c == '-' || !c.is_ascii()))
        {
            return Err(invalid(
                WHAT,
                d,
                format!("holds {c:?}: a domain is letters, digits, hyphens and dots"),
            ));
        }
    }
    Ok(())
}

/// A mail address as MAIL FROM and RCPT TO carry it: `local@domain`, a dot-string local part
/// (RFC 5321 4.1.2) of at most 64 octets, at most 254 octets in all.
pub fn address(a: &str) -> Result<(), Invalid> {
    const WHAT: &str = "mail address";
    no_controls(WHAT, a)?;
    if a.len() > 254 {
        return Err(invalid(
            WHAT,
            a,
            "is longer than 254 octets (RFC 5321 4.5.3.1.3)",
        ));
    }
    let Some((local, dom)) = a.rsplit_once('@') else {
        return Err(invalid(WHAT, a, "has no @ (expected user@domain)"));
    };
    if local.is_empty() || local.len() > 64 {
        return Err(invalid(WHAT, a, "the part before @ must be 1 to 64 octets"));
    }
    if local.starts_with('.') || local.ends_with('.') || local.contains("..") {
        return Err(invalid(
            WHAT,
            a,
            "the part before @ may not start or end with a dot, or hold two in a row",
        ));
    }
    if let Some(c) = local.chars().find(|c| !(is_atext(*c) || *c == '.')) {
        return Err(invalid(
            WHAT,
            a,
            format!("holds {c:?} before the @ (no spaces, angle brackets, quotes, @ or commas)"),
        ));
    }
    domain(dom).map_err(|e| invalid(WHAT, a, format!("its domain {}", e.why)))
}

/// A login name as IMAP LOGIN, POP3 USER and SMTP AUTH carry it: 1 to 255 octets, no control
/// character or space.
pub fn login(u: &str) -> Result<(), Invalid> {
    const WHAT: &str = "user name";
    no_controls(WHAT, u)?;
    if u.is_empty() || u.len() > MAX_LOGIN {
        return Err(invalid(WHAT, u, format!("must be 1 to {MAX_LOGIN} octets")));
    }
    if u.contains(char::is_whitespace) {
        return Err(invalid(WHAT, u, "holds a space"));
    }
    Ok(())
}

/// A password: 1 to 1024 octets, no control character (never shown in the error).
pub fn password(user: &str, p: &str) -> Result<(), Invalid> {
    let what = "the password of user";
    if p.is_empty() || p.len() > MAX_PASSWORD {
        return Err(invalid(
            what,
            user,
            format!("must be 1 to {MAX_PASSWORD} octets"),
        ));
    }
    if control(p).is_some() {
        return Err(invalid(
            what,
            user,
            "holds a control character (CR, LF or NUL would end the login line)",
        ));
    }
    Ok(())
}

/// A user template (`loadgen%d`): `%d` exactly once, and the names it makes are valid user
/// names (and addresses, when it holds an @).
pub fn template(t: &str) -> Result<(), Invalid> {
    const WHAT: &str = "user template";
    no_controls(WHAT, t)?;
    if t.matches("%d").count() != 1 {
        return Err(invalid(
            WHAT,
            t,
            "must contain %d exactly once (e.g. loadgen%d)",
        ));
    }
    let sample = t.replacen("%d", "4294967295", 1);
    login(&sample).map_err(|e| invalid(WHAT, t, format!("makes names that {}", e.why)))?;
    if sample.contains('@') {
        address(&sample).map_err(|e| invalid(WHAT, t, format!("makes addresses: {}", e.why)))?;
    }
    Ok(())
}

/// Every user of a run: its login, password and address.
pub fn users(users: &[User]) -> Result<(), Invalid> {
    if users.len() > MAX_USERS as usize {
        return Err(Invalid {
            what: "users",
            shown: users.len().to_string(),
            why: format!("more than the {MAX_USERS} one run takes"),
        });
    }
    for u in users {
        login(&u.login)?;
        password(&u.login, &u.password)?;
        address(&u.address)?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn injection_is_refused_everywhere() {
        for bad in ["dom\r\nNOOP dom-inj", "a\nb", "a\0b"] {
            assert!(domain(bad).is_err(), "{bad:?}");
            assert!(address(&format!("u@{bad}")).is_err(), "{bad:?}");
            assert!(login(bad).is_err(), "{bad:?}");
            assert!(password("u", bad).is_err(), "{bad:?}");
            assert!(template(&format!("u%d{bad}")).is_err(), "{bad:?}");
        }
        let e = domain("dom\r\nNOOP").expect_err("CRLF");
        assert!(e.to_string().contains("\\r"), "{e}");
        assert!(!e.to_string().contains('\r'), "{e}");
        let e = password("alice", "zq\nxw").expect_err("LF");
        assert!(!e.to_string().contains("zq"), "never shown: {e}");
    }

    #[test]
    fn rfc5321_syntax() {
        for ok in [
            "loadgen1@loadgen.test",
            "a.b+tag@example.org",
            "u@[192.0.2.1]",
            "u@[IPv6:2001:db8::1]",
            "jörg@bücher.example",
            "u@localhost",
        ] {
            assert_eq!(address(ok), Ok(()), "{ok}");
        }
        for bad in [
            "noat",
            "@d.test",
            "u@",
            "a b@d.test",
            "<u>@d.test",
            ".u@d.test",
            "u..v@d.test",
            "u@d..test",
            "u@-d.test",
            "u@d_x.test",
            "u@[1.2.3]",
        ] {
            assert!(address(bad).is_err(), "{bad}");
        }
        assert!(address(&format!("{}@d.test", "x".repeat(65))).is_err());
        assert!(address(&format!("u@{}.test", "x".repeat(64))).is_err());
        assert!(template("loadgen%d").is_ok());
        assert!(template("lg%d@d.test").is_ok());
        assert!(template("lg %d").is_err());
        assert!(template("lg").is_err());
    }
}
