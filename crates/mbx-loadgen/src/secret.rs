//! Credentials never echoed: the forms in which a client sends a password (as it is, IMAP-quoted,
//! base64 for AUTH LOGIN, the AUTH PLAIN token), so that a server repeating what it was sent (a
//! `535` quoting the AUTH line, a `NO` echoing LOGIN, a `-ERR` echoing PASS) has it redacted
//! before the text becomes an error, is counted, stored or shown.

use base64::engine::general_purpose::STANDARD as B64;
use base64::Engine as _;

/// Every form of `password` (for `user`) a client of this crate sends: the password itself, its
/// IMAP quoted-string body, base64 of the password (AUTH LOGIN) and the AUTH PLAIN tokens (with
/// and without the authorization identity), base64 without its padding too.
pub fn forms(user: &str, password: &str) -> Vec<String> {
    if password.is_empty() {
        return Vec::new();
    }
    let quoted = password.replace('\\', "\\\\").replace('"', "\\\"");
    let mut out = vec![password.to_owned(), quoted];
    for raw in [
        password.to_owned(),
        format!("\0{user}\0{password}"),
        format!("{user}\0{user}\0{password}"),
    ] {
        let b = B64.encode(raw);
        let trimmed = b.trim_end_matches('=').to_owned();
        out.push(b);
        out.push(trimmed);
    }
    out.sort();
    out.dedup();
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_forms_cover_what_the_clients_send() {
        let f = forms("alice", "p\"w");
        for want in [
            "p\"w",
            "p\\\"w",
            &B64.encode("p\"w"),
            &B64.encode("\0alice\0p\"w"),
        ] {
            assert!(f.iter().any(|s| s == want), "{want} in {f:?}");
        }
        assert!(forms("a", "").is_empty());
    }
}
