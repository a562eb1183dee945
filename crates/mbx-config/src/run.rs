//! Configuration of a storage test run (`mbxstress run`): every default taken from Jetstress
//! 2013 unless noted, validated once, and embedded in every result file.

use std::path::PathBuf;

use serde::{Deserialize, Serialize};

use crate::{ConfigError, Profile};

/// Operation mix (Jetstress: insert 40, delete 20, replace 5, read 35; lazy commits 70).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct OpMix {
    /// Percent of operations that insert (a message).
    pub insert_pct: u32,
    /// Percent that delete.
    pub delete_pct: u32,
    /// Percent that replace (update in place).
    pub replace_pct: u32,
    /// Percent that read.
    pub read_pct: u32,
    /// Percent of transactions that commit lazily (do not wait for the log flush).
    pub lazy_commit_pct: u32,
}

impl Default for OpMix {
    fn default() -> Self {
        OpMix {
            insert_pct: 40,
            delete_pct: 20,
            replace_pct: 5,
            read_pct: 35,
            lazy_commit_pct: 70,
        }
    }
}

/// Database cache (per database) and flushing.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct CacheConfig {
    /// Minimum cache per database, MiB (Jetstress: 32).
    pub min_mb_per_db: u64,
    /// Maximum cache per database, MiB (Jetstress: 256). Scaled down for small databases: the
    /// engine uses min(this, database size / 8), see docs/method.md.
    pub max_mb_per_db: u64,
    /// Flushing starts when available pages fall below this percent of the maximum cache (1).
    pub flush_start_pct: f64,
    /// Flushing stops when available pages reach this percent (2).
    pub flush_stop_pct: f64,
    /// A page dirty for longer than this is written (the scaled checkpoint depth), seconds.
    pub max_dirty_age_s: f64,
}

impl Default for CacheConfig {
    fn default() -> Self {
        CacheConfig {
            min_mb_per_db: 32,
            max_mb_per_db: 256,
            flush_start_pct: 1.0,
            flush_stop_pct: 2.0,
            max_dirty_age_s: 15.0,
        }
    }
}

/// Pass/fail thresholds (Jetstress "Strict", used by the Performance test).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct Thresholds {
    /// Database read latency, average over the test, ms.
    pub db_read_avg_ms: f64,
    /// Database read latency, maximum of the per-sample averages, ms.
    pub db_read_max_ms: f64,
    /// Log write latency, average, ms.
    pub log_write_avg_ms: f64,
    /// Log write latency, maximum of the per-sample averages, ms.
    pub log_write_max_ms: f64,
    /// Database page fault stalls per second, average.
    pub page_fault_stalls_per_s: f64,
    /// Achieved IOPS may fall this fraction below target (MarginIops 0.05).
    pub iops_margin: f64,
}

impl Default for Thresholds {
    fn default() -> Self {
        Thresholds {
            db_read_avg_ms: 20.0,
            db_read_max_ms: 100.0,
            log_write_avg_ms: 10.0,
            log_write_max_ms: 100.0,
            page_fault_stalls_per_s: 1.0,
            iops_margin: 0.05,
        }
    }
}

/// A resolved run configuration. In a `--config` file every key is optional (missing keys keep
/// these defaults) and unknown keys are errors.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct RunConfig {
    /// Mailboxes simulated on this server.
    pub mailboxes: u64,
    /// Target transactional IOPS per mailbox (headroom included).
    pub iops_per_mailbox: f64,
    /// Mailbox quota, MB; database size = mailboxes x quota split over the databases.
    pub mailbox_quota_mb: u64,
    /// Databases.
    pub databases: u32,
    /// Copies per database (1..=3); more than 1 adds log replication reads.
    pub copies_per_database: u32,
    /// Sessions (Jetstress "threads"), global across databases; 0 = 4 per database.
    pub threads: u32,
    /// Measured duration, seconds (Jetstress Performance default: 2 h).
    pub duration_s: f64,
    /// Sample interval, seconds (15).
    pub sample_interval_s: f64,
    /// Background database maintenance (on).
    pub bdm: bool,
    /// BDM reads per second per database (Jetstress: about 9 reads of 256 KiB).
    pub bdm_reads_per_s: f64,
    /// Database locations (a directory, or one per database).
    pub db_paths: Vec<PathBuf>,
    /// Log locations (a directory, or one per database).
    pub log_paths: Vec<PathBuf>,
    /// I/O engine ("io_uring" or "sync").
    pub engine: String,
    /// O_DIRECT (true) or the page cache (false; then the results measure memory).
    pub direct: bool,
    /// Compressibility of new databases' pages, percent.
    pub compressibility_pct: u8,
    /// Operation mix.
    pub op_mix: OpMix,
    /// Cache and flushing.
    pub cache: CacheConfig,
    /// Pass/fail thresholds.
    pub thresholds: Thresholds,
    /// Seed of the workload's random choices (same seed, same sequence of operations).
    pub seed: u64,
}

/// The built-in quick demonstration: 2 databases of 500 MiB, 200 target IOPS, 60 s measured.
/// Not a sizing: a small slice of a 300-message profile (0.2 IOPS per mailbox) that shows the
/// machinery end to end in about two minutes.
impl Default for RunConfig {
    fn default() -> Self {
        RunConfig {
            mailboxes: 1000,
            iops_per_mailbox: 0.2,
            mailbox_quota_mb: 1,
            databases: 2,
            copies_per_database: 1,
            threads: 0,
            duration_s: 60.0,
            sample_interval_s: 15.0,
            bdm: true,
            bdm_reads_per_s: 9.0,
            db_paths: vec![PathBuf::from("mbxstress-data/databases")],
            log_paths: vec![PathBuf::from("mbxstress-data/logs")],
            engine: String::new(),
            direct: true,
            compressibility_pct: 0,
            op_mix: OpMix::default(),
            cache: CacheConfig::default(),
            thresholds: Thresholds::default(),
            seed: 1,
        }
    }
}

impl RunConfig {
    /// Applies a sizing profile's numbers.
    pub fn apply_profile(&mut self, p: &Profile) {
        self.mailboxes = p.mailboxes;
        self.iops_per_mailbox = p.iops_per_mailbox;
        self.mailbox_quota_mb = p.mailbox_quota_mb;
        self.databases = p.databases;
        self.copies_per_database = p.copies_per_database;
    }

    /// Target transactional IOPS = mailboxes x IOPS per mailbox.
    pub fn target_iops(&self) -> f64 {
        self.mailboxes as f64 * self.iops_per_mailbox
    }

    /// Sessions actually used (`threads`, or 4 per database when 0).
    pub fn sessions(&self) -> u32 {
        if self.threads == 0 {
            (4 * self.databases).min(256)
        } else {
            self.threads
        }
    }

    /// Reads a `--config` file (strict).
    pub fn load(path: &std::path::Path) -> Result<Self, ConfigError> {
        let text = fs_err::read_to_string(path).map_err(|source| ConfigError::Io {
            op: "read",
            path: path.to_path_buf(),
            source,
        })?;
        toml::from_str(&text).map_err(|e| ConfigError::Parse {
            path: path.to_path_buf(),
            what: "run configuration",
            message: e.to_string(),
        })
    }

    /// Checks every value. The error names the key (the flag is the key with dashes).
    pub fn validate(&self) -> Result<(), (&'static str, String)> {
        let bad = |k: &'static str, m: String| Err((k, m));
        let pos = |v: f64| v.is_finite() && v > 0.0;
        if self.mailboxes == 0 {
            return bad("mailboxes", "must be at least 1".into());
        }
        if !pos(self.iops_per_mailbox) || self.iops_per_mailbox > 100.0 {
            return bad(
                "iops_per_mailbox",
                format!("must be in (0, 100], got {}", self.iops_per_mailbox),
            );
        }
        if self.mailbox_quota_mb == 0 || self.mailbox_quota_mb > 102_400 {
            return bad(
                "mailbox_quota_mb",
                format!("must be 1..=102400, got {}", self.mailbox_quota_mb),
            );
        }
        if !(1..=100).contains(&self.databases) {
            return bad(
                "databases",
                format!("must be 1..=100, got {}", self.databases),
            );
        }
        if !(1..=3).contains(&self.copies_per_database) {
            return bad(
                "copies_per_database",
                format!(
                    "must be 1..=3 (as in Jetstress), got {}",
                    self.copies_per_database
                ),
            );
        }
        if self.threads > 1024 {
            return bad("threads", "must be at most 1024 (0 = automatic)".into());
        }
        if !pos(self.duration_s) {
            return bad(
                "duration_s",
                format!("must be positive, got {}", self.duration_s),
            );
        }
        if !(self.sample_interval_s.is_finite() && self.sample_interval_s >= 1.0) {
            return bad("sample_interval_s", "must be at least 1 second".into());
        }
        if !(self.bdm_reads_per_s.is_finite()
            && self.bdm_reads_per_s > 0.0
            && self.bdm_reads_per_s <= 1000.0)
        {
            return bad("bdm_reads_per_s", "must be in (0, 1000]".into());
        }
        if !["", "io_uring", "sync"].contains(&self.engine.as_str()) {
            return bad(
                "engine",
                format!("must be io_uring or sync, got {}", self.engine),
            );
        }
        if self.compressibility_pct > 99 {
            return bad("compressibility_pct", "must be 0..=99".into());
        }
        let m = &self.op_mix;
        if m.insert_pct + m.delete_pct + m.replace_pct + m.read_pct != 100 {
            return bad(
                "op_mix",
                format!(
                    "insert + delete + replace + read must be 100, got {}",
                    m.insert_pct + m.delete_pct + m.replace_pct + m.read_pct
                ),
            );
        }
        if m.lazy_commit_pct > 100 {
            return bad("op_mix.lazy_commit_pct", "must be 0..=100".into());
        }
        let c = &self.cache;
        if c.min_mb_per_db == 0 || c.min_mb_per_db > c.max_mb_per_db {
            return bad(
                "cache.min_mb_per_db",
                "must be at least 1 and at most cache.max_mb_per_db".into(),
            );
        }
        if !(c.flush_start_pct > 0.0
            && c.flush_start_pct < c.flush_stop_pct
            && c.flush_stop_pct < 50.0)
        {
            return bad(
                "cache.flush_start_pct",
                "need 0 < flush_start_pct < flush_stop_pct < 50".into(),
            );
        }
        if !pos(c.max_dirty_age_s) {
            return bad("cache.max_dirty_age_s", "must be positive".into());
        }
        let t = &self.thresholds;
        for (k, v) in [
            ("thresholds.db_read_avg_ms", t.db_read_avg_ms),
            ("thresholds.db_read_max_ms", t.db_read_max_ms),
            ("thresholds.log_write_avg_ms", t.log_write_avg_ms),
            ("thresholds.log_write_max_ms", t.log_write_max_ms),
            (
                "thresholds.page_fault_stalls_per_s",
                t.page_fault_stalls_per_s,
            ),
        ] {
            if !pos(v) {
                return bad(k, format!("must be positive, got {v}"));
            }
        }
        if !(0.0..1.0).contains(&t.iops_margin) {
            return bad("thresholds.iops_margin", "must be in [0, 1)".into());
        }
        if self.db_paths.is_empty() || self.log_paths.is_empty() {
            return bad(
                "db_paths",
                "give at least one database and one log path".into(),
            );
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn defaults_are_jetstress_and_valid() {
        let c = RunConfig::default();
        assert_eq!(c.validate(), Ok(()));
        assert_eq!(
            (
                c.op_mix.insert_pct,
                c.op_mix.read_pct,
                c.op_mix.lazy_commit_pct
            ),
            (40, 35, 70)
        );
        assert_eq!((c.cache.min_mb_per_db, c.cache.max_mb_per_db), (32, 256));
        assert_eq!(c.thresholds.db_read_avg_ms, 20.0);
        assert_eq!(c.target_iops(), 200.0);
        assert_eq!(c.sessions(), 8);
    }

    #[test]
    fn partial_file_keeps_defaults_and_unknown_keys_fail() {
        let c: RunConfig =
            toml::from_str("mailboxes = 5000\n[thresholds]\ndb_read_avg_ms = 15\n").expect("parse");
        assert_eq!(c.mailboxes, 5000);
        assert_eq!(c.thresholds.db_read_avg_ms, 15.0);
        assert_eq!(c.thresholds.log_write_avg_ms, 10.0);
        assert!(toml::from_str::<RunConfig>("mailboxs = 5\n").is_err());
        assert!(toml::from_str::<RunConfig>("[cache]\nmax_mb = 5\n").is_err());
    }

    #[test]
    fn invalid_values_name_their_key() {
        let mut c = RunConfig::default();
        c.op_mix.read_pct = 50;
        assert_eq!(c.validate().map_err(|e| e.0), Err("op_mix"));
        let c = RunConfig {
            copies_per_database: 4,
            ..Default::default()
        };
        assert_eq!(c.validate().map_err(|e| e.0), Err("copies_per_database"));
        let c = RunConfig {
            mailboxes: 0,
            ..Default::default()
        };
        assert_eq!(c.validate().map_err(|e| e.0), Err("mailboxes"));
    }
}
