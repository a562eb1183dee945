//! Per-command measurement: an HDR histogram of latency per protocol command, and errors per
//! class. One [`Recorder`] is shared by every connection of a run (a mutex taken once per
//! command, so memory depends on the commands used, not on the connections or the test length).

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use hdrhistogram::Histogram;

use crate::error::ErrorClass;

/// The protocol a command belongs to.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Protocol {
    /// SMTP submission.
    Smtp,
    /// IMAP4rev1.
    Imap,
    /// POP3.
    Pop3,
    /// Exchange ActiveSync (a command is one HTTP request: `Sync`, `SendMail`, ...).
    Eas,
}

impl Protocol {
    /// `smtp`, `imap` or `pop3`.
    pub fn name(self) -> &'static str {
        match self {
            Protocol::Smtp => "smtp",
            Protocol::Imap => "imap",
            Protocol::Pop3 => "pop3",
            Protocol::Eas => "eas",
        }
    }
}

/// Latency bounds of the histograms: 1 us to 1 hour, 3 significant digits.
const HIGHEST_US: u64 = 3_600_000_000;

/// One command's figures.
#[derive(Debug, Clone)]
pub struct CommandStats {
    /// Latency in microseconds of the commands that succeeded, from the first byte written
    /// to the last byte of the answer read (`connect`: TCP, TLS and the greeting).
    pub latency_us: Histogram<u64>,
    /// Errors by class; a failed command is not in the histogram.
    pub errors: BTreeMap<&'static str, u64>,
}

impl CommandStats {
    fn new() -> Self {
        CommandStats {
            latency_us: Histogram::new_with_bounds(1, HIGHEST_US, 3)
                .expect("constant bounds within hdrhistogram's limits"),
            errors: BTreeMap::new(),
        }
    }

    /// Commands that succeeded.
    pub fn ok(&self) -> u64 {
        self.latency_us.len()
    }

    /// Commands that failed.
    pub fn failed(&self) -> u64 {
        self.errors.values().sum()
    }
}

/// Which status a [`Recorder::status`] count is of.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum StatusKind {
    /// An HTTP status (EAS: 200, 401, 449, 5xx, ...).
    Http,
    /// A protocol status code in the answer (EAS `Status`: 1 success, 2-99 the command's own,
    /// 101-177 the common ones of MS-ASCMD 2.2.2).
    Eas,
}

impl StatusKind {
    /// The class of status `code`: `http_2xx`, `http_449`, `http_4xx`, `http_5xx`; `eas_ok` (1),
    /// `eas_command` (2-99, the command's own), `eas_provision` (139-145: provisioning and
    /// policy), `eas_request` (101-138, 146-177 apart from the server's), `eas_server` (110,
    /// 111, 113-115, 127, 128, 131-134: server-side failures).
    pub fn class(self, code: u32) -> &'static str {
        match self {
            StatusKind::Http => match code {
                449 => "http_449",
                200..=299 => "http_2xx",
                300..=399 => "http_3xx",
                400..=499 => "http_4xx",
                500..=599 => "http_5xx",
                _ => "http_other",
            },
            StatusKind::Eas => match code {
                1 => "eas_ok",
                2..=99 => "eas_command",
                110 | 111 | 113..=115 | 127 | 128 | 131..=134 => "eas_server",
                139..=145 => "eas_provision",
                101..=177 => "eas_request",
                _ => "eas_other",
            },
        }
    }
}

/// Everything recorded: per (protocol, command).
#[derive(Debug, Clone, Default)]
pub struct Stats {
    /// Figures per protocol and command name (`EHLO`, `UID FETCH`, `RETR`, `connect`, ...).
    pub commands: BTreeMap<(Protocol, &'static str), CommandStats>,
    /// Statuses answered, per protocol, command, kind and code (EAS: HTTP statuses and
    /// `Status` codes; a bounded set: codes are below 1000).
    pub statuses: BTreeMap<(Protocol, &'static str, StatusKind, u32), u64>,
}

impl Stats {
    /// The figures of one command, if it ran.
    pub fn get(&self, protocol: Protocol, command: &str) -> Option<&CommandStats> {
        self.commands
            .iter()
            .find(|((p, c), _)| *p == protocol && *c == command)
            .map(|(_, s)| s)
    }

    /// Adds another recorder's figures (histograms merged, never averaged).
    pub fn merge(&mut self, other: &Stats) {
        for (k, s) in &other.commands {
            let mine = self.commands.entry(*k).or_insert_with(CommandStats::new);
            // Same bounds on both sides: add cannot fail.
            let _ = mine.latency_us.add(&s.latency_us);
            for (c, n) in &s.errors {
                *mine.errors.entry(c).or_insert(0) += n;
            }
        }
        for (k, n) in &other.statuses {
            *self.statuses.entry(*k).or_insert(0) += n;
        }
    }

    /// Statuses of `protocol` by class ([`StatusKind::class`]), every command together.
    pub fn status_classes(&self, protocol: Protocol) -> BTreeMap<&'static str, u64> {
        let mut out = BTreeMap::new();
        for ((p, _, kind, code), n) in &self.statuses {
            if *p == protocol {
                *out.entry(kind.class(*code)).or_insert(0) += n;
            }
        }
        out
    }
}

/// Shared, cheap to clone: every connection of a run records into the same one.
#[derive(Debug, Clone, Default)]
pub struct Recorder {
    inner: Arc<Mutex<Stats>>,
    /// Counts every command recorded through this handle (see [`Recorder::counting`]).
    sent: Option<Arc<AtomicU64>>,
}

impl Recorder {
    /// An empty recorder.
    pub fn new() -> Self {
        Recorder::default()
    }

    /// A handle on the same figures that also counts each command it records (succeeded or
    /// not) in its own counter, read with [`Recorder::sent`]: one per user, so the engine
    /// knows whether a task did protocol work.
    pub fn counting(&self) -> Recorder {
        Recorder {
            inner: self.inner.clone(),
            sent: Some(Arc::new(AtomicU64::new(0))),
        }
    }

    /// Commands recorded through this handle and its clones (0 unless made by
    /// [`Recorder::counting`]).
    pub fn sent(&self) -> u64 {
        self.sent.as_ref().map_or(0, |n| n.load(Ordering::Relaxed))
    }

    /// Records one command's outcome.
    pub fn record(
        &self,
        protocol: Protocol,
        command: &'static str,
        latency: Duration,
        outcome: Result<(), ErrorClass>,
    ) {
        if let Some(n) = &self.sent {
            n.fetch_add(1, Ordering::Relaxed);
        }
        let mut stats = match self.inner.lock() {
            Ok(g) => g,
            Err(poisoned) => poisoned.into_inner(),
        };
        let s = stats
            .commands
            .entry((protocol, command))
            .or_insert_with(CommandStats::new);
        let before = s.ok() + s.failed();
        match outcome {
            Ok(()) => {
                let us = (latency.as_micros() as u64).clamp(1, HIGHEST_US);
                s.latency_us.saturating_record(us);
            }
            Err(class) => *s.errors.entry(class.name()).or_insert(0) += 1,
        }
        assert_eq!(
            s.ok() + s.failed(),
            before + 1,
            "{command}: one command recorded is one count"
        );
    }

    /// Counts one status `command` answered (not a command: [`Recorder::sent`] stays).
    pub fn status(&self, protocol: Protocol, command: &'static str, kind: StatusKind, code: u32) {
        let mut stats = match self.inner.lock() {
            Ok(g) => g,
            Err(poisoned) => poisoned.into_inner(),
        };
        *stats
            .statuses
            .entry((protocol, command, kind, code.min(999)))
            .or_insert(0) += 1;
    }

    /// A copy of everything recorded so far.
    pub fn snapshot(&self) -> Stats {
        match self.inner.lock() {
            Ok(g) => g.clone(),
            Err(poisoned) => poisoned.into_inner().clone(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::error::Rejection;

    #[test]
    fn records_latency_of_successes_and_counts_errors_by_class() {
        let r = Recorder::new();
        r.record(Protocol::Smtp, "DATA", Duration::from_millis(3), Ok(()));
        r.record(Protocol::Smtp, "DATA", Duration::from_millis(5), Ok(()));
        r.record(
            Protocol::Smtp,
            "DATA",
            Duration::from_millis(9),
            Err(ErrorClass::Rejected(Rejection::Quota)),
        );
        let s = r.snapshot();
        let d = s.get(Protocol::Smtp, "DATA").expect("DATA recorded");
        assert_eq!(d.ok(), 2);
        assert_eq!(d.failed(), 1);
        assert_eq!(d.errors.get("rejected_quota"), Some(&1));
        assert!((4990..=5010).contains(&d.latency_us.value_at_quantile(1.0)));
        let mut m = Stats::default();
        m.merge(&s);
        m.merge(&s);
        assert_eq!(m.get(Protocol::Smtp, "DATA").map(|d| d.ok()), Some(4));
    }

    #[test]
    fn a_counting_handle_counts_its_own_commands_into_the_shared_figures() {
        let r = Recorder::new();
        let a = r.counting();
        let b = r.counting();
        a.clone()
            .record(Protocol::Imap, "LOGIN", Duration::from_millis(1), Ok(()));
        a.record(
            Protocol::Imap,
            "SELECT",
            Duration::from_millis(1),
            Err(ErrorClass::Timeout),
        );
        r.record(Protocol::Imap, "NOOP", Duration::from_millis(1), Ok(()));
        assert_eq!((a.sent(), b.sent(), r.sent()), (2, 0, 0));
        assert_eq!(r.snapshot().commands.len(), 3);
    }
}
