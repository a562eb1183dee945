//! Named choices shared by the configuration, the results and the command line: the test type
//! ([`TestKind`]) and the I/O backend ([`IoBackend`]). Each has one table of names: serde, `FromStr`
//! and (with the `clap` feature) clap's `ValueEnum` all read it, so a name accepted in one place is
//! accepted in every other.

use std::fmt;
use std::str::FromStr;

use serde::{Deserialize, Serialize};

/// A name that is not one of a choice's names.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("unknown {what} `{got}`: expected {expected}")]
pub struct UnknownName {
    /// What was being named ("test type", "I/O backend").
    pub what: &'static str,
    /// The name given.
    pub got: String,
    /// The names accepted, for people.
    pub expected: String,
}

/// Implements the name table plumbing for a fieldless enum with `ALL`, `name()` and `aliases()`.
macro_rules! named_choice {
    ($ty:ident, $what:literal) => {
        impl $ty {
            /// Parses a name or one of its aliases.
            fn from_name(s: &str) -> Result<Self, UnknownName> {
                Self::ALL
                    .iter()
                    .copied()
                    .find(|v| v.name() == s || v.aliases().contains(&s))
                    .ok_or_else(|| UnknownName {
                        what: $what,
                        got: s.to_string(),
                        expected: Self::ALL
                            .iter()
                            .map(|v| v.name())
                            .collect::<Vec<_>>()
                            .join(", "),
                    })
            }
        }

        impl fmt::Display for $ty {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str(self.name())
            }
        }

        impl FromStr for $ty {
            type Err = UnknownName;
            fn from_str(s: &str) -> Result<Self, UnknownName> {
                Self::from_name(s)
            }
        }

        impl TryFrom<String> for $ty {
            type Error = UnknownName;
            fn try_from(s: String) -> Result<Self, UnknownName> {
                Self::from_name(&s)
            }
        }

        impl From<$ty> for &'static str {
            fn from(v: $ty) -> &'static str {
                v.name()
            }
        }

        #[cfg(feature = "clap")]
        impl clap::ValueEnum for $ty {
            fn value_variants<'a>() -> &'a [Self] {
                &Self::ALL
            }
            fn to_possible_value(&self) -> Option<clap::builder::PossibleValue> {
                Some(
                    clap::builder::PossibleValue::new(self.name())
                        .aliases(self.aliases().iter().copied())
                        .help(self.help()),
                )
            }
        }
    };
}

/// The type of a storage test (Jetstress's `Type`, plus the checksum pass). Its name is
/// `test.type` in result.json (docs/results.md) and `kind` in an imported report.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(try_from = "String", into = "&'static str")]
pub enum TestKind {
    /// Paced transactional I/O at the target rate, judged by strict thresholds (2 h by default).
    Performance,
    /// The Performance workload for a long time (24 h), lenient thresholds.
    Stress,
    /// Sequential reads of every database file (Database Backup).
    Backup,
    /// Generate transaction logs, then replay them (Soft Recovery).
    SoftRecovery,
    /// Read every page of every database and verify it (the checksum pass).
    Checksum,
}

impl TestKind {
    /// Every test type, in the order Jetstress lists them.
    pub const ALL: [TestKind; 5] = [
        TestKind::Performance,
        TestKind::Stress,
        TestKind::Backup,
        TestKind::SoftRecovery,
        TestKind::Checksum,
    ];

    /// The name in results and on the command line: "performance", "stress", "backup",
    /// "soft-recovery" (as the result contract spells it), "checksum".
    pub fn name(self) -> &'static str {
        match self {
            TestKind::Performance => "performance",
            TestKind::Stress => "stress",
            TestKind::Backup => "backup",
            TestKind::SoftRecovery => "soft-recovery",
            TestKind::Checksum => "checksum",
        }
    }

    /// Other spellings accepted when reading.
    pub fn aliases(self) -> &'static [&'static str] {
        match self {
            TestKind::SoftRecovery => &["soft_recovery", "softrecovery"],
            TestKind::Backup => &["database-backup", "database_backup"],
            _ => &[],
        }
    }

    /// True for the types that pace transactions at the target IOPS (Performance, Stress): only
    /// they need a target within range. Backup and Checksum only read; Soft Recovery generates
    /// its logs as fast as the storage allows.
    pub fn paced(self) -> bool {
        matches!(self, TestKind::Performance | TestKind::Stress)
    }

    /// One line for `--help`.
    pub fn help(self) -> &'static str {
        match self {
            TestKind::Performance => "paced transactional I/O, strict thresholds",
            TestKind::Stress => "the Performance workload for 24 h, lenient thresholds",
            TestKind::Backup => "sequential reads of every database",
            TestKind::SoftRecovery => "generate transaction logs, then replay them",
            TestKind::Checksum => "read and verify every page",
        }
    }
}

named_choice!(TestKind, "test type");

/// The I/O backend every queue is opened with (`--engine`; `engine` in a configuration).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default, Serialize, Deserialize)]
#[serde(try_from = "String", into = "&'static str")]
pub enum IoBackend {
    /// Linux io_uring: one thread keeps `depth` requests in flight (default on Linux).
    #[cfg_attr(target_os = "linux", default)]
    IoUring,
    /// Portable: `depth` threads doing positional reads and writes.
    #[cfg_attr(not(any(target_os = "linux", windows)), default)]
    Sync,
    /// Windows overlapped I/O on an I/O completion port: one thread keeps `depth` requests in
    /// flight and reaps completions in batches (default on Windows).
    #[cfg_attr(windows, default)]
    Iocp,
}

impl IoBackend {
    /// Every backend.
    pub const ALL: [IoBackend; 3] = [IoBackend::IoUring, IoBackend::Sync, IoBackend::Iocp];

    /// The name used in flags and results: "io_uring", "sync", "iocp".
    pub fn name(self) -> &'static str {
        match self {
            IoBackend::IoUring => "io_uring",
            IoBackend::Sync => "sync",
            IoBackend::Iocp => "iocp",
        }
    }

    /// Other spellings accepted (fio's names among them).
    pub fn aliases(self) -> &'static [&'static str] {
        match self {
            IoBackend::IoUring => &["io-uring", "iouring"],
            IoBackend::Sync => &["psync", "threads"],
            IoBackend::Iocp => &["windowsaio"],
        }
    }

    /// One line for `--help`.
    pub fn help(self) -> &'static str {
        match self {
            IoBackend::IoUring => "Linux io_uring (the default on Linux)",
            IoBackend::Sync => "portable thread pool of positional reads and writes",
            IoBackend::Iocp => {
                "Windows overlapped I/O on a completion port (the default on Windows)"
            }
        }
    }
}

named_choice!(IoBackend, "I/O backend");

/// How transactions are started (`--pacing`; `pacing` in a configuration).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default, Serialize, Deserialize)]
#[serde(try_from = "String", into = "&'static str")]
pub enum Pacing {
    /// Paced closed loop (Jetstress's model, the default): an idle session takes the next due
    /// start slot; a slot nobody is free to take waits at most a second, then is dropped, so a
    /// slow storage sets its own rate and the time transactions waited for a session is not
    /// seen in any latency.
    #[default]
    Closed,
    /// Open loop: transactions arrive on a schedule that yields the target whatever the
    /// storage does; an arrival with no idle session waits in a backlog (FIFO), and latency is
    /// measured from the arrival as well as from the submission.
    Open,
}

impl Pacing {
    /// Both modes.
    pub const ALL: [Pacing; 2] = [Pacing::Closed, Pacing::Open];

    /// The name in flags, configurations and results: "closed", "open".
    pub fn name(self) -> &'static str {
        match self {
            Pacing::Closed => "closed",
            Pacing::Open => "open",
        }
    }

    /// Other spellings accepted.
    pub fn aliases(self) -> &'static [&'static str] {
        match self {
            Pacing::Closed => &["closed-loop", "closed_loop"],
            Pacing::Open => &["open-loop", "open_loop"],
        }
    }

    /// One line for `--help`.
    pub fn help(self) -> &'static str {
        match self {
            Pacing::Closed => "idle sessions take due start slots (Jetstress's model, the default)",
            Pacing::Open => "transactions arrive on schedule; latency also from the arrival",
        }
    }
}

named_choice!(Pacing, "pacing");

/// How open-loop arrivals are spaced (`--arrivals`; `arrivals` in a configuration).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default, Serialize, Deserialize)]
#[serde(try_from = "String", into = "&'static str")]
pub enum Arrivals {
    /// Exponentially distributed gaps (a Poisson process: independent users).
    #[default]
    Poisson,
    /// Evenly spaced arrivals.
    Uniform,
}

impl Arrivals {
    /// Both kinds.
    pub const ALL: [Arrivals; 2] = [Arrivals::Poisson, Arrivals::Uniform];

    /// The name in flags, configurations and results: "poisson", "uniform".
    pub fn name(self) -> &'static str {
        match self {
            Arrivals::Poisson => "poisson",
            Arrivals::Uniform => "uniform",
        }
    }

    /// Other spellings accepted.
    pub fn aliases(self) -> &'static [&'static str] {
        match self {
            Arrivals::Poisson => &["exponential"],
            Arrivals::Uniform => &["even", "constant"],
        }
    }

    /// One line for `--help`.
    pub fn help(self) -> &'static str {
        match self {
            Arrivals::Poisson => "exponential gaps, as independent users (the default)",
            Arrivals::Uniform => "evenly spaced arrivals",
        }
    }
}

named_choice!(Arrivals, "arrivals");

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_round_trip_through_every_parser() {
        for k in TestKind::ALL {
            assert_eq!(k.name().parse::<TestKind>(), Ok(k));
            assert_eq!(k.to_string(), k.name());
            let json = serde_json_like(k.name());
            assert_eq!(toml::from_str::<Wrap<TestKind>>(&json).map(|w| w.v), Ok(k));
            for a in k.aliases() {
                assert_eq!(a.parse::<TestKind>(), Ok(k));
            }
        }
        for b in IoBackend::ALL {
            assert_eq!(b.name().parse::<IoBackend>(), Ok(b));
            for a in b.aliases() {
                assert_eq!(a.parse::<IoBackend>(), Ok(b));
            }
        }
        assert_eq!(TestKind::SoftRecovery.name(), "soft-recovery");
        assert_eq!("soft_recovery".parse(), Ok(TestKind::SoftRecovery));
    }

    #[test]
    fn unknown_names_say_what_is_expected() {
        let e = "posix".parse::<IoBackend>().expect_err("unknown");
        assert_eq!(
            e.to_string(),
            "unknown I/O backend `posix`: expected io_uring, sync, iocp"
        );
        let e = toml::from_str::<Wrap<IoBackend>>("v = \"posix\"").expect_err("unknown");
        assert!(
            e.to_string().contains("expected io_uring, sync, iocp"),
            "{e}"
        );
    }

    #[derive(Debug, Deserialize)]
    struct Wrap<T> {
        v: T,
    }

    fn serde_json_like(name: &str) -> String {
        format!("v = \"{name}\"")
    }
}
