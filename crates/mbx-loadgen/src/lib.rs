//! Client load for `mbxstress loadgen`: the protocol clients a mail user's day speaks (SMTP
//! submission, IMAP4rev1, POP3; TLS through rustls), each command's latency in an HDR histogram,
//! generated messages that carry their own identity and hash, and the verifier that tells a
//! fetched message intact, corrupted (and where) or not ours.
//!
//! The boundary: this crate knows protocols, messages and (later) the user-day schedule; it
//! knows nothing of the CLI, result files or reports. A caller makes a [`metrics::Recorder`],
//! a TLS configuration ([`tls::client_config`]) and [`conn::Endpoint`]s, drives clients, and
//! reads the recorder's [`metrics::Stats`].
//!
//! The clients are written here rather than taken from lettre, mail-send or async-imap: each
//! command's latency must be measured on its own (no hidden pipelining or reconnects), every read
//! must be bounded (lines, literals, multi-line answers), every wait timed out, and every failure
//! classed with its user, server and command. Those are the clients' whole job and a few hundred
//! lines each.

pub mod clock;
pub mod conn;
pub mod day;
pub mod deadline;
pub mod eas;
pub mod error;
pub mod hold;
pub mod imap;
pub mod init;
pub mod ledger;
pub mod message;
pub mod metrics;
pub mod pop3;
pub mod sched;
pub mod secret;
pub mod smtp;
pub mod submit;
pub mod tls;
pub mod users;
pub mod validate;
pub mod watch;

pub use clock::DayClock;
pub use conn::{Connect, Connecting, Connector, Endpoint, Limits, Security, Stream, Timeouts};
pub use error::{Error, ErrorClass, Rejection, Result};
pub use imap::ImapClient;
pub use metrics::{Protocol, Recorder, Stats, StatusKind};
pub use pop3::Pop3Client;
pub use smtp::{AuthMechanism, SmtpClient};
pub use tls::Trust;
