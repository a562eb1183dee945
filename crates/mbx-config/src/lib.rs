//! Workload configuration shared by the mbxstress commands.
//!
//! The pipeline is configuration -> plan -> engine -> measurements -> result -> reports; this crate
//! holds the first stage's types, which every later stage names:
//! - the mailbox [`Profile`]: the handful of numbers a storage test needs (what Jetstress calls
//!   the "mailbox profile"), produced by `mbxstress size --profile-out`, accepted by `mbxstress
//!   run --profile`, embedded in [`RunConfig`] and in the result (one definition of its fields
//!   and of their ranges, [`Profile::check`]);
//! - [`RunConfig`], the resolved configuration of a run;
//! - the named choices [`TestKind`] and [`IoBackend`] (one name table each; with the `clap`
//!   feature they are clap `ValueEnum`s).
//!
//! Files written by users are strict: an unknown key is an error, so a typo cannot silently change
//! an experiment.

pub mod atomic;
pub mod input;
pub mod jetstress;
mod kind;
mod run;
pub mod text;

use std::path::{Path, PathBuf};

pub use kind::{Arrivals, IoBackend, Pacing, TestKind, UnknownName};
pub use run::{
    sample_interval_for, CacheConfig, OpMix, RunConfig, Sizing, Thresholds, TuningConfig,
    CAPACITY_RESERVE, DEFAULT_SAMPLE_INTERVAL_S, MAX_BACKLOG_S, MAX_CACHE_MB_PER_DB,
    MAX_DIRTY_AGE_S, MAX_DURATION_S, MAX_LATENCY_ERRORS, MAX_REACTORS, MAX_SAMPLE_INTERVAL_S,
    MAX_TARGET_IOPS, MAX_THREADS, MAX_THRESHOLD, MIN_TARGET_IOPS,
};

use serde::{Deserialize, Serialize};

/// Errors reading or writing configuration files. Each carries the path it concerns, and its
/// message is complete: the OS error is part of it, not also a `source()`, so an error chain
/// shows it once.
#[derive(Debug, thiserror::Error)]
pub enum ConfigError {
    /// The file could not be read or written.
    #[error("cannot {op} {}: {error}", path.display())]
    Io {
        /// What we were doing ("read", "write", "rename").
        op: &'static str,
        /// The file concerned.
        path: PathBuf,
        /// The OS error: part of the message, deliberately not a `source()`.
        error: std::io::Error,
    },
    /// The file is not valid TOML for the expected structure (includes unknown keys).
    #[error("{path} is not a valid {what}: {message}")]
    Parse {
        /// The file concerned.
        path: PathBuf,
        /// What the file was expected to be ("mailbox profile").
        what: &'static str,
        /// The parser's message, which names the line and key.
        message: String,
    },
    /// The file parsed but a value is out of range.
    #[error("{path}: invalid `{key}`: {reason}")]
    Invalid {
        /// The file concerned.
        path: PathBuf,
        /// The offending key.
        key: &'static str,
        /// Why it is invalid and what would be valid.
        reason: String,
    },
    /// The file is not a regular file within its size limit, or not UTF-8 (the bounded reader's
    /// error names the path and what was expected).
    #[error(transparent)]
    Input(#[from] input::InputError),
    /// Refused to overwrite a file that we did not write.
    #[error("refusing to overwrite {path}: it exists and is not an mbxstress profile; remove it or choose another path")]
    WouldOverwrite {
        /// The existing file.
        path: PathBuf,
    },
}

/// Most mailboxes on one server's test (and in a `size` deployment).
pub const MAX_MAILBOXES: u64 = 10_000_000;
/// Largest transactional IOPS per mailbox (the published tables stop near 0.6).
pub const MAX_IOPS_PER_MAILBOX: f64 = 100.0;
/// Largest mailbox quota, MB (100 GB: Exchange's largest supported mailbox).
pub const MAX_QUOTA_MB: u64 = 102_400;
/// Most databases on one server (Exchange 2013 CU2+, 2016, 2019).
pub const MAX_DATABASES: u32 = 100;
/// Most copies of a database a storage test simulates: Jetstress's "number of copies per
/// database" is 1..=3 (its DatabaseCopyCount). A deployment may have more DAG copies
/// (`size --copies` up to 16); the profile `size` writes then says 3, with a warning.
pub const MAX_COPIES_PER_DATABASE: u32 = 3;

/// The profile's key names, in file order (every one is required in a profile file).
pub const PROFILE_KEYS: [&str; 5] = [
    "mailboxes",
    "iops_per_mailbox",
    "mailbox_quota_mb",
    "databases",
    "copies_per_database",
];

/// Largest average message size a profile carries, KB (what `loadgen` sends).
pub const MAX_PROFILE_MESSAGE_SIZE_KB: f64 = 10_240.0;

/// The mailbox profile of one server's storage test (the Jetstress "mailbox profile" category):
/// what `mbxstress run` simulates. The one definition of these fields: a profile file, the
/// profile keys of a `--config` file and of result.json's `config` (flattened there), result.json's
/// `profile` block and `size --json`'s `profile` are all this type. Key names are part of the
/// result contract. The ranges below are checked by [`Profile::check`], which `run`'s validation
/// uses too; `size` only writes profiles within them.
///
/// `Default` is the quick demonstration's slice (1,000 mailboxes x 0.2 IOPS, 1 MB, 2 databases, 1
/// copy): the values a `--config` file without profile keys keeps.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct Profile {
    /// Mailboxes simulated on this server (all hosted database copies active, as ESRP tests):
    /// 1..=10,000,000.
    pub mailboxes: u64,
    /// Transactional IOPS per mailbox, headroom included (the figure typed into Jetstress):
    /// above 0, at most 100.
    pub iops_per_mailbox: f64,
    /// Mailbox quota in MB (MiB); database size = mailboxes x quota: 1..=102,400.
    pub mailbox_quota_mb: u64,
    /// Databases on this server: 1..=100.
    pub databases: u32,
    /// Copies of each database (1 = no log replication reads): 1..=3, as in Jetstress.
    pub copies_per_database: u32,
    /// Messages sent + received per mailbox per day (the calculator's profile): what
    /// `loadgen run` simulates (`run` does not read it). Optional: 1..=10,000.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub messages_per_day: Option<u32>,
    /// Average message size in KB (x 1,024 bytes), for `loadgen`. Optional: above 0, at most
    /// 10,240.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub message_size_kb: Option<f64>,
}

impl Default for Profile {
    fn default() -> Self {
        Profile {
            mailboxes: 1000,
            iops_per_mailbox: 0.2,
            mailbox_quota_mb: 1,
            databases: 2,
            copies_per_database: 1,
            messages_per_day: None,
            message_size_kb: None,
        }
    }
}

impl Profile {
    /// Checks every field against its range: the key (as in a file) and the reason of the first
    /// that is out of range. The one place these ranges are written; [`Profile::validate`] and
    /// [`RunConfig::validate`] both call it.
    pub fn check(&self) -> Result<(), (&'static str, String)> {
        if !(1..=MAX_MAILBOXES).contains(&self.mailboxes) {
            return Err((
                "mailboxes",
                format!("must be 1..={MAX_MAILBOXES}, got {}", self.mailboxes),
            ));
        }
        if !(self.iops_per_mailbox.is_finite()
            && self.iops_per_mailbox > 0.0
            && self.iops_per_mailbox <= MAX_IOPS_PER_MAILBOX)
        {
            return Err((
                "iops_per_mailbox",
                format!(
                    "must be above 0 and at most {MAX_IOPS_PER_MAILBOX}, got {}",
                    show_number(self.iops_per_mailbox)
                ),
            ));
        }
        if !(1..=MAX_QUOTA_MB).contains(&self.mailbox_quota_mb) {
            return Err((
                "mailbox_quota_mb",
                format!("must be 1..={MAX_QUOTA_MB}, got {}", self.mailbox_quota_mb),
            ));
        }
        if !(1..=MAX_DATABASES).contains(&self.databases) {
            return Err((
                "databases",
                format!("must be 1..={MAX_DATABASES}, got {}", self.databases),
            ));
        }
        if !(1..=MAX_COPIES_PER_DATABASE).contains(&self.copies_per_database) {
            return Err((
                "copies_per_database",
                format!(
                    "must be 1..={MAX_COPIES_PER_DATABASE} (as in Jetstress), got {}",
                    self.copies_per_database
                ),
            ));
        }
        if let Some(m) = self.messages_per_day.filter(|m| !(1..=10_000).contains(m)) {
            return Err(("messages_per_day", format!("must be 1..=10000, got {m}")));
        }
        if let Some(kb) = self
            .message_size_kb
            .filter(|kb| !(kb.is_finite() && *kb > 0.0 && *kb <= MAX_PROFILE_MESSAGE_SIZE_KB))
        {
            return Err((
                "message_size_kb",
                format!("must be above 0, at most 10240, got {kb}"),
            ));
        }
        Ok(())
    }

    /// Checks ranges ([`Profile::check`]); `path` is only used to name the file in errors.
    pub fn validate(&self, path: &Path) -> Result<(), ConfigError> {
        self.check().map_err(|(key, reason)| ConfigError::Invalid {
            path: path.to_path_buf(),
            key,
            reason,
        })
    }

    /// Target transactional IOPS = mailboxes x IOPS per mailbox.
    pub fn target_iops(&self) -> f64 {
        self.mailboxes as f64 * self.iops_per_mailbox
    }

    /// Reads and validates a profile file (strict: unknown keys are errors).
    pub fn load(path: &Path) -> Result<Self, ConfigError> {
        let text = input::read_bounded(path, input::CONFIG_LIMIT, "a mailbox profile (TOML)")?;
        let profile = Self::from_toml(&text, path)?;
        profile.validate(path)?;
        Ok(profile)
    }

    /// Parses a profile file: unknown keys are errors, and so are missing ones (the type's
    /// defaults serve `--config` files, where every key is optional, not profile files).
    fn from_toml(text: &str, path: &Path) -> Result<Self, ConfigError> {
        let parse_error = |message: String| ConfigError::Parse {
            path: path.to_path_buf(),
            what: "mailbox profile",
            message,
        };
        let profile: Profile = toml::from_str(text).map_err(|e| parse_error(e.to_string()))?;
        let table: toml::Table = toml::from_str(text).map_err(|e| parse_error(e.to_string()))?;
        if let Some(key) = PROFILE_KEYS.iter().find(|k| !table.contains_key(**k)) {
            return Err(parse_error(format!("missing key `{key}`")));
        }
        Ok(profile)
    }

    /// Renders the profile as TOML, preceded by `# ` comment lines (provenance for the reader).
    pub fn to_toml(&self, comments: &[String]) -> String {
        let mut out = String::new();
        out.push_str(PROFILE_HEADER);
        out.push('\n');
        for c in comments {
            out.push_str("# ");
            out.push_str(c);
            out.push('\n');
        }
        // Serializing a struct of plain numbers cannot fail; fall back to an explicit rendering
        // rather than unwrap so the library never panics.
        let body = toml::to_string(self).unwrap_or_else(|_| {
            format!(
                "mailboxes = {}\niops_per_mailbox = {}\nmailbox_quota_mb = {}\ndatabases = {}\ncopies_per_database = {}\n",
                self.mailboxes,
                self.iops_per_mailbox,
                self.mailbox_quota_mb,
                self.databases,
                self.copies_per_database
            )
        });
        out.push_str(&body);
        out
    }

    /// Writes the profile atomically (temporary file + rename). An existing file is replaced only
    /// if it is itself an mbxstress profile; anything else is refused. A profile out of range is
    /// refused too ([`Profile::check`]), so every profile written loads.
    pub fn save(&self, path: &Path, comments: &[String]) -> Result<(), ConfigError> {
        self.validate(path)?;
        if path.exists() {
            // Read through the bounded reader: a FIFO or device there is refused, not read.
            let ours = match input::read_bounded(
                path,
                input::CONFIG_LIMIT,
                "an mbxstress profile to replace, or no file",
            ) {
                Ok(t) => t.starts_with(PROFILE_HEADER) && Self::from_toml(&t, path).is_ok(),
                Err(e @ input::InputError::NotAFile { .. }) => return Err(e.into()),
                Err(_) => false,
            };
            if !ours {
                return Err(ConfigError::WouldOverwrite {
                    path: path.to_path_buf(),
                });
            }
        }
        atomic::write_atomic(path, self.to_toml(comments).as_bytes()).map_err(|error| {
            ConfigError::Io {
                op: "write",
                path: path.to_path_buf(),
                error,
            }
        })
    }
}

/// A number as messages show it: plain when moderate (`0.2`, `7200`), scientific when huge or
/// tiny (`1e300`, not 301 digits), and `NaN`/`inf` as such.
pub fn show_number(v: f64) -> String {
    if v != 0.0 && v.is_finite() && !(1e-6..1e12).contains(&v.abs()) {
        format!("{v:e}")
    } else {
        format!("{v}")
    }
}

/// First line of every profile file we write; used to recognise our own files before replacing one.
pub const PROFILE_HEADER: &str = "# mbxstress mailbox profile (mbxstress.profile/1)";

#[cfg(test)]
mod tests {
    use super::*;

    fn sample() -> Profile {
        Profile {
            mailboxes: 5000,
            iops_per_mailbox: 0.12,
            mailbox_quota_mb: 2048,
            databases: 6,
            copies_per_database: 2,
            messages_per_day: None,
            message_size_kb: None,
        }
    }

    /// A fresh temporary directory, removed with its contents when the guard is dropped (also
    /// when the test panics).
    fn tempdir(name: &str) -> tempfile::TempDir {
        tempfile::Builder::new()
            .prefix(&format!("mbx-config-{name}-"))
            .tempdir()
            .expect("create temp dir")
    }

    #[test]
    fn round_trip_through_file() {
        let dir = tempdir("rt");
        let path = dir.path().join("p.toml");
        sample().save(&path, &["from a test".into()]).expect("save");
        let back = Profile::load(&path).expect("load");
        assert_eq!(back, sample());
        // Saving again over our own file is allowed.
        sample().save(&path, &[]).expect("overwrite own profile");
    }

    #[test]
    fn unknown_key_is_an_error_naming_it() {
        let dir = tempdir("unknown");
        let path = dir.path().join("p.toml");
        let mut text = sample().to_toml(&[]);
        text.push_str("mailbox_qouta_mb = 1\n");
        std::fs::write(&path, text).expect("write");
        let err = Profile::load(&path).expect_err("typo must be refused");
        let msg = err.to_string();
        assert!(msg.contains("mailbox_qouta_mb"), "{msg}");
        assert!(msg.contains("p.toml"), "{msg}");
    }

    /// `Default` serves `--config` files; a profile file still needs every key.
    #[test]
    fn missing_key_is_an_error_naming_it() {
        let dir = tempdir("missing");
        let path = dir.path().join("p.toml");
        let text = sample()
            .to_toml(&[])
            .replace("copies_per_database = 2\n", "");
        std::fs::write(&path, text).expect("write");
        let msg = Profile::load(&path).expect_err("incomplete").to_string();
        assert!(msg.contains("missing key `copies_per_database`"), "{msg}");
    }

    /// A profile out of range is never written, so every profile on disk loads.
    #[test]
    fn out_of_range_profile_is_not_saved() {
        let dir = tempdir("range");
        let path = dir.path().join("p.toml");
        let mut p = sample();
        p.copies_per_database = MAX_COPIES_PER_DATABASE + 1;
        let e = p.save(&path, &[]).expect_err("out of range");
        assert!(e.to_string().contains("copies_per_database"), "{e}");
        assert!(!path.exists());
    }

    #[test]
    fn refuses_to_overwrite_foreign_file() {
        let dir = tempdir("foreign");
        let path = dir.path().join("notes.txt");
        std::fs::write(&path, "precious").expect("write");
        let err = sample().save(&path, &[]).expect_err("must refuse");
        assert!(matches!(err, ConfigError::WouldOverwrite { .. }), "{err}");
        assert_eq!(std::fs::read_to_string(&path).expect("read"), "precious");
    }

    #[test]
    fn numbers_in_messages_stay_short() {
        assert_eq!(show_number(0.2), "0.2");
        assert_eq!(show_number(7200.0), "7200");
        assert_eq!(show_number(1e300), "1e300");
        assert_eq!(show_number(-1e-300), "-1e-300");
        assert_eq!(show_number(0.0), "0");
        assert_eq!(show_number(f64::NAN), "NaN");
    }

    #[test]
    fn out_of_range_values_are_rejected() {
        let p = Path::new("x.toml");
        let mut bad = sample();
        bad.databases = 101;
        assert!(bad.validate(p).is_err());
        let mut bad = sample();
        bad.iops_per_mailbox = f64::NAN;
        assert!(bad.validate(p).is_err());
        let mut bad = sample();
        bad.mailboxes = 0;
        assert!(bad.validate(p).is_err());
        assert!(sample().validate(p).is_ok());
    }
}
