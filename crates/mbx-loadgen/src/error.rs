//! Typed errors: every failure names the user, the server, the command and a class that a result
//! can count (`auth`, `connect`, `tls`, `protocol`, `timeout`, `rejected`, `disconnect`).

use std::fmt;

use mbx_config::text::visible;

/// An error's detail (a server's reply, a system error) is cut to this many characters.
pub const DETAIL_MAX_CHARS: usize = mbx_config::text::DEFAULT_MAX_CHARS;
/// A user, server or command name in an error is cut to this many characters.
pub const NAME_MAX_CHARS: usize = 200;

/// Why a server refused (a 4xx/5xx reply, `NO`, `-ERR`) when it is not a login failure.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Rejection {
    /// The mailbox or account is full (SMTP 452/552 with 4.2.2/5.2.2, IMAP `[OVERQUOTA]`).
    Quota,
    /// Too many messages, connections or commands (SMTP 421/450/451 with 4.7.x rate wording,
    /// IMAP `[LIMIT]`, POP3 `[IN-USE]`/`[SYS/TEMP]`).
    Rate,
    /// Any other refusal (unknown recipient, message too large, bad mailbox name, ...).
    Other,
}

/// The class of an error, as a result counts it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum ErrorClass {
    /// The server refused the user's credentials.
    Auth,
    /// No TCP connection (refused, unreachable, name not resolved).
    Connect,
    /// The TLS handshake failed (certificate not trusted, no common protocol) or STARTTLS was
    /// refused or not offered.
    Tls,
    /// The server's answer broke the protocol (malformed, over a size limit, unexpected).
    Protocol,
    /// No complete answer within the timeout.
    Timeout,
    /// The server refused the command.
    Rejected(Rejection),
    /// The server closed the connection (or it was reset) before answering.
    Disconnect,
}

impl ErrorClass {
    /// A short stable name for results (`auth`, `rejected_quota`, ...).
    pub fn name(self) -> &'static str {
        match self {
            ErrorClass::Auth => "auth",
            ErrorClass::Connect => "connect",
            ErrorClass::Tls => "tls",
            ErrorClass::Protocol => "protocol",
            ErrorClass::Timeout => "timeout",
            ErrorClass::Rejected(Rejection::Quota) => "rejected_quota",
            ErrorClass::Rejected(Rejection::Rate) => "rejected_rate",
            ErrorClass::Rejected(Rejection::Other) => "rejected",
            ErrorClass::Disconnect => "disconnect",
        }
    }

    /// What the user can do about it, for messages.
    pub fn hint(self) -> &'static str {
        match self {
            ErrorClass::Auth => "check the user's name and password (and that the server allows this login mechanism)",
            ErrorClass::Connect => "check the host and port, and that the service is running and reachable",
            ErrorClass::Tls => "trust the server's certificate (--ca-file), or allow a self-signed lab server explicitly (--insecure-tls)",
            ErrorClass::Protocol => "the server's answer was not understood; check that the port speaks the protocol named",
            ErrorClass::Timeout => "the server did not answer in time: it is overloaded, or the timeout is too short",
            ErrorClass::Rejected(Rejection::Quota) => "the mailbox is full: raise its quota or initialize fewer messages",
            ErrorClass::Rejected(Rejection::Rate) => "the server limits the rate: raise its limits for the test users or lower the load",
            ErrorClass::Rejected(Rejection::Other) => "the server refused the command; its reply says why",
            ErrorClass::Disconnect => "the server closed the connection: see its log (a crash, a restart, or a connection limit)",
        }
    }
}

impl fmt::Display for ErrorClass {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// A failed command: who, where, what, and why.
#[derive(Debug, Clone, thiserror::Error)]
#[error("{class} error: user {user}, server {server}, {command}: {detail} ({hint})", user = user.as_deref().unwrap_or("(none)"), hint = class.hint())]
pub struct Error {
    /// The class a result counts.
    pub class: ErrorClass,
    /// The user the connection logged in (or tried to log in) as.
    pub user: Option<String>,
    /// `host:port` and protocol, e.g. `imap://127.0.0.1:24002`.
    pub server: String,
    /// The command that failed (`connect`, `STARTTLS`, `LOGIN`, `RCPT`, `UID FETCH`, ...).
    pub command: String,
    /// The server's reply or the system's error, control characters shown visibly (`\x1b`),
    /// cut to at most [`DETAIL_MAX_CHARS`] characters (then `...`).
    pub detail: String,
}

impl Error {
    /// An error of `class` for `command` on `server`.
    pub fn new(
        class: ErrorClass,
        user: Option<&str>,
        server: &str,
        command: &str,
        detail: impl Into<String>,
    ) -> Self {
        // Server text and system text alike: control characters shown visibly, at most 300
        // characters (a hostile server cannot write escapes to the terminal, test.log or the
        // report through an error).
        let detail = visible(&detail.into(), DETAIL_MAX_CHARS);
        Error {
            class,
            user: user.map(|u| visible(u, NAME_MAX_CHARS)),
            server: visible(server, NAME_MAX_CHARS),
            command: visible(command, NAME_MAX_CHARS),
            detail,
        }
    }
}

/// Results of this crate.
pub type Result<T> = std::result::Result<T, Error>;

/// The class of an SMTP reply code with its enhanced status text.
pub(crate) fn smtp_rejection(code: u16, text: &str) -> ErrorClass {
    let t = text.to_ascii_lowercase();
    if code == 535 || code == 534 || code == 530 && t.contains("auth") || t.contains("5.7.8") {
        return ErrorClass::Auth;
    }
    if code == 552 && !t.contains("5.3.4")
        || code == 452 && !t.contains("4.5.3")
        || t.contains("5.2.2")
        || t.contains("4.2.2")
        || t.contains("quota")
        || t.contains("mailbox full")
    {
        return ErrorClass::Rejected(Rejection::Quota);
    }
    if code == 421
        || t.contains("rate")
        || t.contains("too many")
        || t.contains("4.7.0") && code / 100 == 4
    {
        return ErrorClass::Rejected(Rejection::Rate);
    }
    ErrorClass::Rejected(Rejection::Other)
}

/// The class of an IMAP `NO`/`BAD` or POP3 `-ERR` text.
pub(crate) fn text_rejection(text: &str) -> ErrorClass {
    let t = text.to_ascii_uppercase();
    if t.contains("[AUTHENTICATIONFAILED]") || t.contains("[AUTH]") {
        return ErrorClass::Auth;
    }
    if t.contains("[OVERQUOTA]") || t.contains("QUOTA") {
        return ErrorClass::Rejected(Rejection::Quota);
    }
    if t.contains("[LIMIT]")
        || t.contains("[IN-USE]")
        || t.contains("[SYS/TEMP]")
        || t.contains("TOO MANY")
    {
        return ErrorClass::Rejected(Rejection::Rate);
    }
    ErrorClass::Rejected(Rejection::Other)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn smtp_codes_map_to_classes() {
        assert_eq!(
            smtp_rejection(535, "5.7.8 Error: authentication failed"),
            ErrorClass::Auth
        );
        assert_eq!(
            smtp_rejection(552, "5.2.2 Mailbox full"),
            ErrorClass::Rejected(Rejection::Quota)
        );
        assert_eq!(
            smtp_rejection(552, "5.3.4 Message size exceeds fixed limit"),
            ErrorClass::Rejected(Rejection::Other)
        );
        assert_eq!(
            smtp_rejection(450, "4.7.1 Error: too many recipients from 127.0.0.1"),
            ErrorClass::Rejected(Rejection::Rate)
        );
        assert_eq!(
            smtp_rejection(550, "5.1.1 User unknown"),
            ErrorClass::Rejected(Rejection::Other)
        );
    }

    #[test]
    fn imap_and_pop3_texts_map_to_classes() {
        assert_eq!(
            text_rejection("[AUTHENTICATIONFAILED] Authentication failed."),
            ErrorClass::Auth
        );
        assert_eq!(
            text_rejection("[AUTH] Authentication failed."),
            ErrorClass::Auth
        );
        assert_eq!(
            text_rejection("[OVERQUOTA] Quota exceeded"),
            ErrorClass::Rejected(Rejection::Quota)
        );
        assert_eq!(
            text_rejection("[IN-USE] mailbox locked"),
            ErrorClass::Rejected(Rejection::Rate)
        );
    }

    #[test]
    fn an_error_names_user_server_command_and_fix() {
        let e = Error::new(
            ErrorClass::Auth,
            Some("loadgen1"),
            "imap://127.0.0.1:143",
            "LOGIN",
            "NO [AUTHENTICATIONFAILED]",
        );
        let s = e.to_string();
        assert!(
            s.starts_with("auth error: user loadgen1, server imap://127.0.0.1:143, LOGIN: NO"),
            "{s}"
        );
        assert!(s.contains("password"), "{s}");
        let long = Error::new(ErrorClass::Protocol, None, "s", "c", "x".repeat(1000));
        assert_eq!(long.detail.len(), 303);
    }
}
