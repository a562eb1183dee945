//! Configuration of a storage test run (`mbxstress run`): every default taken from Jetstress
//! 2013 unless noted, validated once, and embedded in every result file.

use std::path::PathBuf;

use serde::{Deserialize, Serialize};

use crate::show_number as show;
use crate::{Arrivals, ConfigError, IoBackend, Pacing, Profile};

/// Operation mix (Jetstress: insert 40, delete 20, replace 5, read 35; lazy commits 70). Each
/// percentage is 0..=100, and insert + delete + replace + read = 100.
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
    /// Minimum cache per database, MiB (Jetstress: 32): 1..=`max_mb_per_db`.
    pub min_mb_per_db: u64,
    /// Maximum cache per database, MiB (Jetstress: 256): at most 65,536 (64 GiB). Scaled down
    /// for small databases: the engine uses min(this, database size / 8), see docs/method.md.
    pub max_mb_per_db: u64,
    /// Flushing starts when available pages fall below this percent of the maximum cache (1):
    /// above 0 and below `flush_stop_pct`.
    pub flush_start_pct: f64,
    /// Flushing stops when available pages reach this percent (2): below 50.
    pub flush_stop_pct: f64,
    /// A page dirty for longer than this is written (the scaled checkpoint depth), seconds:
    /// 0.1..=3600.
    pub max_dirty_age_s: f64,
    /// Seconds between checkpoints (5): how far back the log must be kept for recovery; each
    /// one syncs the database file and writes the checkpoint slot. 0.1..=3600.
    pub checkpoint_interval_s: f64,
}

impl Default for CacheConfig {
    fn default() -> Self {
        CacheConfig {
            min_mb_per_db: 32,
            max_mb_per_db: 256,
            flush_start_pct: 1.0,
            flush_stop_pct: 2.0,
            max_dirty_age_s: 15.0,
            checkpoint_interval_s: 5.0,
        }
    }
}

/// Automatic tuning (`threads` 0 on a Performance or Stress test, Jetstress's default): after
/// the databases are ready, short steps at different session counts find the smallest count
/// whose IOPS meet the target with every threshold met; the test then runs with it. Each step
/// waits until every instance's database read latency is stable (the slope of its per-window
/// averages), then measures.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct TuningConfig {
    /// Measured seconds per step; 0 = automatic: the test's duration / 120, within 5..=60 s
    /// (a 2-hour test measures a minute per step). 0 or 1..=3600.
    pub step_s: f64,
    /// Seconds per latency window of the stability check; 0 = automatic: a quarter of the
    /// step, within 0.25..=5 s (Jetstress logs every 5 s while tuning). 0 or 0.1..=600.
    pub window_s: f64,
    /// Windows the slope is fitted over (at least this many before a step can measure): 2..=100.
    pub windows: u32,
    /// Largest slope of the per-window average read latency, ms per window, counted as stable
    /// (older Jetstress: 0.5 ms per sample): above 0, at most 1,000.
    pub slope_ms: f64,
    /// Longest wait for stable latency per step, seconds; the step then measures anyway and says
    /// so. 0 = automatic: the step's measured length, at least the fitted windows. 0 or
    /// 1..=3600.
    pub stabilize_max_s: f64,
    /// Sessions of the first step; 0 = 4 per database (Jetstress 2013 began with 16 for 4
    /// databases). 0..=1024.
    pub start: u32,
    /// Most steps (a search that has not converged then keeps the best passing count): 1..=64.
    pub max_steps: u32,
    /// Longest tuning, seconds: no step starts that would, by the last step's length, end past
    /// it (the search keeps the best passing count). 900 = 15 min, below the 15 min 39 s
    /// Jetstress 2013 took for its 4 steps. 10..=86,400.
    pub max_s: f64,
}

impl Default for TuningConfig {
    fn default() -> Self {
        TuningConfig {
            step_s: 0.0,
            window_s: 0.0,
            windows: 4,
            slope_ms: 0.5,
            stabilize_max_s: 0.0,
            start: 0,
            max_steps: 8,
            max_s: 900.0,
        }
    }
}

impl TuningConfig {
    /// Measured seconds per step for a test of `duration_s` seconds.
    pub fn step_for(&self, duration_s: f64) -> f64 {
        if self.step_s > 0.0 {
            self.step_s
        } else {
            (duration_s / 120.0).clamp(5.0, 60.0)
        }
    }

    /// Seconds per latency window for steps of `step_s` seconds.
    pub fn window_for(&self, step_s: f64) -> f64 {
        if self.window_s > 0.0 {
            self.window_s
        } else {
            (step_s / 4.0).clamp(0.25, 5.0)
        }
    }

    /// Longest wait for stable latency per step, seconds, for steps of `step_s` seconds.
    pub fn stabilize_max_for(&self, step_s: f64) -> f64 {
        if self.stabilize_max_s > 0.0 {
            self.stabilize_max_s
        } else {
            step_s.max(self.window_for(step_s) * f64::from(self.windows))
        }
    }

    fn check(&self) -> Result<(), (&'static str, String)> {
        if !(self.step_s == 0.0 || within(self.step_s, 1.0, 3600.0)) {
            return Err((
                "tuning.step_s",
                format!(
                    "must be 0 (automatic) or 1..=3600 s, got {}",
                    show(self.step_s)
                ),
            ));
        }
        if !(self.window_s == 0.0 || within(self.window_s, 0.1, 600.0)) {
            return Err((
                "tuning.window_s",
                format!(
                    "must be 0 (automatic) or 0.1..=600 s, got {}",
                    show(self.window_s)
                ),
            ));
        }
        if !(2..=100).contains(&self.windows) {
            return Err((
                "tuning.windows",
                format!("must be 2..=100, got {}", self.windows),
            ));
        }
        if !(self.slope_ms.is_finite() && self.slope_ms > 0.0 && self.slope_ms <= 1000.0) {
            return Err((
                "tuning.slope_ms",
                format!(
                    "must be above 0 and at most 1000, got {}",
                    show(self.slope_ms)
                ),
            ));
        }
        if !(self.stabilize_max_s == 0.0 || within(self.stabilize_max_s, 1.0, 3600.0)) {
            return Err((
                "tuning.stabilize_max_s",
                format!(
                    "must be 0 (automatic) or 1..=3600 s, got {}",
                    show(self.stabilize_max_s)
                ),
            ));
        }
        if self.start > MAX_THREADS {
            return Err((
                "tuning.start",
                format!(
                    "must be at most {MAX_THREADS} (0 = 4 per database), got {}",
                    self.start
                ),
            ));
        }
        if !within(self.max_s, 10.0, 86_400.0) {
            return Err((
                "tuning.max_s",
                format!("must be 10..=86400 s, got {}", show(self.max_s)),
            ));
        }
        if !(1..=64).contains(&self.max_steps) {
            return Err((
                "tuning.max_steps",
                format!("must be 1..=64, got {}", self.max_steps),
            ));
        }
        Ok(())
    }
}

/// Longest hung-I/O threshold, seconds (a day).
pub const MAX_HUNG_IO_S: f64 = 86_400.0;

/// Pass/fail thresholds (Jetstress "Strict", used by the Performance test). Latencies are above 0
/// and at most 1,000,000 ms; stalls above 0 and at most 1,000,000 per second.
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
    /// Achieved IOPS may fall this fraction below target (MarginIops 0.05): 0 to below 1.
    pub iops_margin: f64,
    /// An I/O outstanding for longer than this is a hung I/O, seconds (60): reported while it is
    /// still outstanding, and it fails the test. Above 0 and at most 86,400.
    pub hung_io_s: f64,
    /// Jetstress `MaximumLatencyErrors` (6): per instance, how many samples may have an average
    /// latency above a maximum-latency threshold (`db_read_max_ms`, `log_write_max_ms`) before
    /// that check fails. 0 is strict (the maximum of the per-sample averages); at most
    /// [`MAX_LATENCY_ERRORS`].
    pub max_latency_errors: u32,
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
            hung_io_s: 60.0,
            max_latency_errors: 6,
        }
    }
}

impl Thresholds {
    /// Jetstress's "Lenient" set, used by the Stress test: the maximum latencies (of the
    /// per-sample averages) are 200 ms for database reads and log writes; every other threshold
    /// is the Strict one ([`Thresholds::default`]).
    pub fn lenient() -> Thresholds {
        Thresholds {
            db_read_max_ms: 200.0,
            log_write_max_ms: 200.0,
            ..Thresholds::default()
        }
    }
}

/// How the databases are sized: Jetstress's two test categories (`DatabaseSizing`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Sizing {
    /// "Test an Exchange mailbox profile": databases of mailboxes x quota, the target
    /// mailboxes x IOPS per mailbox (the default).
    #[default]
    Profile,
    /// "Test disk subsystem throughput": databases sized from `capacity_pct` of the free space
    /// of their volumes (25% of it reserved for growth), the maximum transactional IOPS found
    /// on them by a search, and the test held at `throughput_pct` of it.
    Capacity,
}

impl Sizing {
    /// The name in a `--config` file and in result.json.
    pub fn name(self) -> &'static str {
        match self {
            Sizing::Profile => "profile",
            Sizing::Capacity => "capacity",
        }
    }
}

/// Share of the capacity-sized databases Jetstress reserves for growth (`DatabaseSpaceReserved`
/// 25): the databases get `capacity_pct` of the free space times `1 - this`.
pub const CAPACITY_RESERVE: f64 = 0.25;

/// A resolved run configuration. In a `--config` file every key is optional (missing keys keep
/// these defaults) and unknown keys are errors. Every number has a range, checked by
/// [`RunConfig::validate`]; within them the derived values ([`RunConfig::target_iops`],
/// [`RunConfig::sessions`], the durations and the total database bytes) are finite and
/// constructible without overflow.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct RunConfig {
    /// The mailbox profile: `mailboxes`, `iops_per_mailbox`, `mailbox_quota_mb`, `databases`,
    /// `copies_per_database` ([`Profile`], flattened: the keys sit at the top level of a
    /// `--config` file and of result.json's `config`, as they always have). The target
    /// (mailboxes x IOPS per mailbox) must be 1..=1,000,000 IOPS.
    #[serde(flatten)]
    pub profile: Profile,
    /// Sessions (Jetstress "threads"), global across databases: 0..=1024. 0 = automatic: a
    /// Performance or Stress test tunes it ([`TuningConfig`]); other tests use 4 per database.
    pub threads: u32,
    /// Measured duration, seconds (Jetstress Performance default: 2 h): 1..=2,592,000 (30 days).
    pub duration_s: f64,
    /// Sample interval, seconds (15): 1..=3600 (a run shorter than it still gets its last sample).
    /// `run` shortens it for a short run when the user sets none ([`sample_interval_for`]).
    pub sample_interval_s: f64,
    /// Background database maintenance (on).
    pub bdm: bool,
    /// BDM reads per second per database (Jetstress: about 9 reads of 256 KiB): 0.01..=1000.
    pub bdm_reads_per_s: f64,
    /// Database locations (a directory, or one per database).
    pub db_paths: Vec<PathBuf>,
    /// Log locations (a directory, or one per database).
    pub log_paths: Vec<PathBuf>,
    /// I/O backend ("io_uring", the default on Linux, or "sync").
    pub engine: IoBackend,
    /// O_DIRECT (true) or the page cache (false; then the results measure memory).
    pub direct: bool,
    /// Compressibility of new databases' pages, percent: 0..=99.
    pub compressibility_pct: u8,
    /// Percent of transactional page reads whose whole page is checksummed: 0..=100 (100, every
    /// read, as ESE does). Below 100 (for CPU-bound hosts), a read not picked for the checksum
    /// is checked by its header and the stamp pages written by this version carry per 4 KiB
    /// block (a misplaced, torn or zeroed page fails them; a stale one shows its older
    /// generation), which cannot see a flipped bit inside a block's payload. BDM reads, pages
    /// without stamps and pages failing the quick check are always checksummed.
    /// docs/method.md, "Verification of every read".
    pub checksum_reads_pct: u8,
    /// Circular logging (on): log files a checkpoint no longer needs are deleted. Off keeps
    /// every log file (what Soft Recovery replays; it needs the space).
    pub circular_logging: bool,
    /// Soft Recovery: log files generated per database, then replayed (Jetstress
    /// `LogFilesToReplay`, 500): 1..=100,000.
    pub log_files_to_replay: u64,
    /// Operation mix.
    pub op_mix: OpMix,
    /// Cache and flushing.
    pub cache: CacheConfig,
    /// Pass/fail thresholds.
    pub thresholds: Thresholds,
    /// Seed of the workload's random choices (same seed, same sequence of operations): any.
    pub seed: u64,
    /// Keep running after an I/O error (other than a full disk) or a damaged page, counting
    /// them, instead of stopping at the first one (Jetstress `ContinueOnErrors`; off). The
    /// verdict fails either way.
    pub continue_on_errors: bool,
    /// Automatic tuning (with `threads` 0).
    pub tuning: TuningConfig,
    /// How transactions are started: "closed" (the default, Jetstress's paced closed loop) or
    /// "open" (arrivals on a schedule, a backlog when no session is free, latency measured from
    /// the arrival too). See docs/method.md, "Pacing".
    pub pacing: Pacing,
    /// Open loop: how arrivals are spaced, "poisson" (the default) or "uniform".
    pub arrivals: Arrivals,
    /// Open loop: an arrival that waited longer than this for a session is dropped (counted,
    /// never silently skipped), seconds (10): 0.001..=3600.
    pub max_backlog_s: f64,
    /// Reactors (event-loop threads) the databases are partitioned among: 0 = one per core,
    /// never more than the databases; 1 runs everything on one thread: 0..=1024.
    pub reactors: u32,
    /// How the databases are sized: "profile" (the default: mailboxes x quota, target
    /// mailboxes x IOPS per mailbox) or "capacity" (Jetstress's disk subsystem throughput test:
    /// `capacity_pct` and `throughput_pct`; Performance and Stress tests only).
    pub sizing: Sizing,
    /// Capacity sizing: percent of the free space of the database volume(s) the databases are
    /// sized from, 25% of it reserved for growth (Jetstress `CapacityPercentage`, 100): above 0,
    /// at most 100.
    pub capacity_pct: f64,
    /// Capacity sizing: percent of the maximum transactional IOPS found on the databases that
    /// the test holds (Jetstress `ThroughputPercentage`, 100): 1..=100.
    pub throughput_pct: f64,
}

/// The built-in quick demonstration: 2 databases of 500 MiB, 200 target IOPS, 60 s measured.
/// Not a sizing: a small slice of a 300-message profile (0.2 IOPS per mailbox) that shows the
/// machinery end to end in about two minutes.
impl Default for RunConfig {
    fn default() -> Self {
        RunConfig {
            profile: Profile::default(),
            threads: 0,
            duration_s: 60.0,
            sample_interval_s: DEFAULT_SAMPLE_INTERVAL_S,
            bdm: true,
            bdm_reads_per_s: 9.0,
            db_paths: vec![PathBuf::from("mbxstress-data/databases")],
            log_paths: vec![PathBuf::from("mbxstress-data/logs")],
            engine: IoBackend::default(),
            direct: true,
            compressibility_pct: 0,
            checksum_reads_pct: DEFAULT_CHECKSUM_READS_PCT,
            circular_logging: true,
            log_files_to_replay: 500,
            op_mix: OpMix::default(),
            cache: CacheConfig::default(),
            thresholds: Thresholds::default(),
            seed: 1,
            continue_on_errors: false,
            tuning: TuningConfig::default(),
            pacing: Pacing::Closed,
            arrivals: Arrivals::Poisson,
            max_backlog_s: 10.0,
            reactors: 0,
            sizing: Sizing::Profile,
            capacity_pct: 100.0,
            throughput_pct: 100.0,
        }
    }
}

impl RunConfig {
    /// Applies a sizing profile's numbers.
    pub fn apply_profile(&mut self, p: &Profile) {
        self.profile = p.clone();
    }

    /// Target transactional IOPS = mailboxes x IOPS per mailbox.
    pub fn target_iops(&self) -> f64 {
        self.profile.target_iops()
    }

    /// Sessions actually used (`threads`, or 4 per database when 0).
    pub fn sessions(&self) -> u32 {
        if self.threads == 0 {
            self.profile.databases.saturating_mul(4).min(256)
        } else {
            self.threads
        }
    }

    /// Reads a `--config` file (strict).
    pub fn load(path: &std::path::Path) -> Result<Self, ConfigError> {
        let text = crate::input::read_bounded(
            path,
            crate::input::CONFIG_LIMIT,
            "a run configuration (TOML)",
        )?;
        Self::from_toml(&text).map_err(|message| ConfigError::Parse {
            path: path.to_path_buf(),
            what: "run configuration",
            message,
        })
    }

    /// Parses a `--config` file's text (strict: unknown keys are errors). The error message
    /// names the key and its line.
    pub fn from_toml(text: &str) -> Result<Self, String> {
        toml::from_str(text).map_err(|e| top_level_key_error(text).unwrap_or_else(|| e.to_string()))
    }

    /// Total bytes of all databases (mailboxes x quota), or `None` if it does not fit a u64.
    pub fn total_database_bytes(&self) -> Option<u64> {
        self.profile
            .mailboxes
            .checked_mul(self.profile.mailbox_quota_mb)?
            .checked_mul(1 << 20)
    }

    /// Checks every value against its documented range (see the field docs). The error names the
    /// key as written in a `--config` file (`cache.max_mb_per_db`); the CLI maps it to a flag
    /// where one exists.
    pub fn validate(&self) -> Result<(), (&'static str, String)> {
        self.validate_for(crate::TestKind::Performance)
    }

    /// [`RunConfig::validate`] for a test of type `kind`: the target IOPS range is checked only
    /// for the types that pace at it ([`crate::TestKind::paced`]).
    pub fn validate_for(&self, kind: crate::TestKind) -> Result<(), (&'static str, String)> {
        self.check_size(kind)?;
        self.check_engine_and_timing()?;
        self.tuning.check()?;
        self.check_data_and_op_mix()?;
        self.cache.check()?;
        self.thresholds.check()?;
        self.check_capacity_and_paths(kind)?;
        // What the engine relies on from here: the ranges just checked hold.
        debug_assert!(self.total_database_bytes().is_some());
        debug_assert!(
            self.cache.min_mb_per_db >= 1 && self.cache.min_mb_per_db <= self.cache.max_mb_per_db
        );
        debug_assert!(!self.db_paths.is_empty() && !self.log_paths.is_empty());
        Ok(())
    }

    /// The profile and the target and size it makes.
    fn check_size(&self, kind: crate::TestKind) -> Result<(), (&'static str, String)> {
        // The profile's own ranges: written once, in `Profile::check`.
        self.profile.check()?;
        let p = &self.profile;
        let target = self.target_iops();
        if kind.paced() && !within(target, MIN_TARGET_IOPS, MAX_TARGET_IOPS) {
            return bad(
                "iops_per_mailbox",
                format!(
                    "{} mailboxes x {} IOPS per mailbox is a target of {} IOPS; the test needs {MIN_TARGET_IOPS}..={MAX_TARGET_IOPS} IOPS: change the IOPS per mailbox or the mailboxes",
                    p.mailboxes,
                    show(p.iops_per_mailbox),
                    show(target)
                ),
            );
        }
        if self.total_database_bytes().is_none() {
            return bad(
                "mailbox_quota_mb",
                format!(
                    "{} mailboxes x {} MB is too large a database set",
                    p.mailboxes, p.mailbox_quota_mb
                ),
            );
        }
        Ok(())
    }

    /// Threads, reactors, the test's length and sampling, maintenance and replay.
    fn check_engine_and_timing(&self) -> Result<(), (&'static str, String)> {
        if self.threads > MAX_THREADS {
            return bad(
                "threads",
                format!(
                    "must be at most {MAX_THREADS} (0 = automatic), got {}",
                    self.threads
                ),
            );
        }
        if self.reactors > MAX_REACTORS {
            return bad(
                "reactors",
                format!(
                    "must be at most {MAX_REACTORS} (0 = one per core), got {}",
                    self.reactors
                ),
            );
        }
        if !within(self.duration_s, 1.0, MAX_DURATION_S) {
            return bad(
                "duration_s",
                format!(
                    "must be 1 s to {MAX_DURATION_S} s (30 days), got {} s",
                    show(self.duration_s)
                ),
            );
        }
        if !within(self.sample_interval_s, 1.0, MAX_SAMPLE_INTERVAL_S) {
            return bad(
                "sample_interval_s",
                format!(
                    "must be 1 s to {MAX_SAMPLE_INTERVAL_S} s, got {} s",
                    show(self.sample_interval_s)
                ),
            );
        }
        // A sample interval longer than the duration is fine: the engine always takes a last
        // sample when the measured phase ends, so a 10 s run with 15 s samples has one.
        if !within(self.bdm_reads_per_s, 0.01, 1000.0) {
            return bad(
                "bdm_reads_per_s",
                format!(
                    "must be 0.01..=1000 reads per second, got {}",
                    show(self.bdm_reads_per_s)
                ),
            );
        }
        if !(1..=MAX_LOG_FILES_TO_REPLAY).contains(&self.log_files_to_replay) {
            return bad(
                "log_files_to_replay",
                format!(
                    "must be 1..={MAX_LOG_FILES_TO_REPLAY} log files per database, got {}",
                    self.log_files_to_replay
                ),
            );
        }
        Ok(())
    }

    /// The data written (compressibility, read checksums) and the operation mix.
    fn check_data_and_op_mix(&self) -> Result<(), (&'static str, String)> {
        if self.compressibility_pct > 99 {
            return bad("compressibility_pct", "must be 0..=99".into());
        }
        if self.checksum_reads_pct > 100 {
            return bad(
                "checksum_reads_pct",
                format!("must be 0..=100, got {}", self.checksum_reads_pct),
            );
        }
        let m = &self.op_mix;
        // Summed in u64: four u32 values cannot overflow it.
        let sum: u64 = [m.insert_pct, m.delete_pct, m.replace_pct, m.read_pct]
            .iter()
            .map(|&v| u64::from(v))
            .sum();
        if sum != 100 {
            return bad(
                "op_mix",
                format!("insert + delete + replace + read must be 100, got {sum}"),
            );
        }
        if m.lazy_commit_pct > 100 {
            return bad("op_mix.lazy_commit_pct", "must be 0..=100".into());
        }
        Ok(())
    }

    /// Backlog, capacity and throughput sizing, and the paths.
    fn check_capacity_and_paths(
        &self,
        kind: crate::TestKind,
    ) -> Result<(), (&'static str, String)> {
        if !within(self.max_backlog_s, 0.001, MAX_BACKLOG_S) {
            return bad(
                "max_backlog_s",
                format!(
                    "must be 0.001 s to {MAX_BACKLOG_S} s, got {} s",
                    show(self.max_backlog_s)
                ),
            );
        }
        if !(self.capacity_pct > 0.0 && self.capacity_pct <= 100.0) {
            return bad(
                "capacity_pct",
                format!(
                    "must be above 0 and at most 100 (percent of the free space), got {}",
                    show(self.capacity_pct)
                ),
            );
        }
        if !within(self.throughput_pct, 1.0, 100.0) {
            return bad(
                "throughput_pct",
                format!(
                    "must be 1..=100 (percent of the maximum IOPS found), got {}",
                    show(self.throughput_pct)
                ),
            );
        }
        if self.sizing == Sizing::Capacity
            && !matches!(kind, crate::TestKind::Performance | crate::TestKind::Stress)
        {
            return bad(
                "sizing",
                format!(
                    "capacity sizing (the disk subsystem throughput test) runs Performance or Stress tests, not {}: use sizing = \"profile\" for it",
                    kind.name()
                ),
            );
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

impl CacheConfig {
    fn check(&self) -> Result<(), (&'static str, String)> {
        let c = self;
        if c.max_mb_per_db > MAX_CACHE_MB_PER_DB {
            return bad(
                "cache.max_mb_per_db",
                format!(
                    "must be at most {MAX_CACHE_MB_PER_DB} MiB, got {}",
                    c.max_mb_per_db
                ),
            );
        }
        if c.min_mb_per_db == 0 || c.min_mb_per_db > c.max_mb_per_db {
            return bad(
                "cache.min_mb_per_db",
                "must be at least 1 and at most cache.max_mb_per_db".into(),
            );
        }
        // NaN fails every comparison, so it is refused here too.
        if !(c.flush_start_pct > 0.0
            && c.flush_start_pct < c.flush_stop_pct
            && c.flush_stop_pct < 50.0)
        {
            return bad(
                "cache.flush_start_pct",
                "need 0 < flush_start_pct < flush_stop_pct < 50".into(),
            );
        }
        if !within(c.max_dirty_age_s, 0.1, MAX_DIRTY_AGE_S) {
            return bad(
                "cache.max_dirty_age_s",
                format!(
                    "must be 0.1 s to {MAX_DIRTY_AGE_S} s, got {}",
                    show(c.max_dirty_age_s)
                ),
            );
        }
        if !within(c.checkpoint_interval_s, 0.1, MAX_DIRTY_AGE_S) {
            return bad(
                "cache.checkpoint_interval_s",
                format!(
                    "must be 0.1 s to {MAX_DIRTY_AGE_S} s, got {}",
                    show(c.checkpoint_interval_s)
                ),
            );
        }
        Ok(())
    }
}

impl Thresholds {
    fn check(&self) -> Result<(), (&'static str, String)> {
        let t = self;
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
            if !(v.is_finite() && v > 0.0 && v <= MAX_THRESHOLD) {
                return bad(
                    k,
                    format!(
                        "must be above 0 and at most {MAX_THRESHOLD}, got {}",
                        show(v)
                    ),
                );
            }
        }
        // Written so that NaN is refused.
        if !(t.iops_margin >= 0.0 && t.iops_margin < 1.0) {
            return bad("thresholds.iops_margin", "must be in [0, 1)".into());
        }
        if !(t.hung_io_s > 0.0 && t.hung_io_s <= MAX_HUNG_IO_S) {
            return bad(
                "thresholds.hung_io_s",
                format!(
                    "must be above 0 s and at most {MAX_HUNG_IO_S} s, got {}",
                    show(t.hung_io_s)
                ),
            );
        }
        if t.max_latency_errors > MAX_LATENCY_ERRORS {
            return bad(
                "thresholds.max_latency_errors",
                format!(
                    "must be at most {MAX_LATENCY_ERRORS} samples, got {}",
                    t.max_latency_errors
                ),
            );
        }
        Ok(())
    }
}

/// The error of a value out of range: its key and why.
fn bad(key: &'static str, why: String) -> Result<(), (&'static str, String)> {
    Err((key, why))
}

/// Whether `v` is a finite number in `lo..=hi`.
fn within(v: f64, lo: f64, hi: f64) -> bool {
    v.is_finite() && (lo..=hi).contains(&v)
}

/// Why a configuration's top-level keys do not parse, naming the key and its line, or `None` to
/// keep the parser's own message. Needed for the profile's keys: they are flattened into
/// [`RunConfig`], and through serde's `flatten` the parser can no longer say which key or line
/// an error is about (nor, for an unknown key, which keys exist).
fn top_level_key_error(text: &str) -> Option<String> {
    // A syntax error keeps the parser's message (it has the position).
    let given: toml::Table = toml::from_str(text).ok()?;
    let known = toml::Table::try_from(RunConfig::default()).ok()?;
    let line = |key: &str| {
        text.lines()
            .position(|l| {
                l.trim_start()
                    .strip_prefix(key)
                    .is_some_and(|rest| rest.trim_start().starts_with('='))
            })
            .map(|n| format!("line {}: ", n + 1))
            .unwrap_or_default()
    };
    if let Some(key) = given.keys().find(|k| !known.contains_key(*k)) {
        let names: Vec<String> = known.keys().map(|k| format!("`{k}`")).collect();
        return Some(format!(
            "{}unknown key `{key}`, expected one of {}",
            line(key),
            names.join(", ")
        ));
    }
    for key in crate::PROFILE_KEYS {
        let Some(value) = given.get(key) else {
            continue;
        };
        let mut alone = toml::Table::try_from(Profile::default()).ok()?;
        alone.insert(key.to_string(), value.clone());
        if let Err(e) = alone.try_into::<Profile>() {
            return Some(format!("{}`{key}`: {}", line(key), e.message()));
        }
    }
    None
}

/// Smallest target IOPS of a run (mailboxes x IOPS per mailbox).
pub const MIN_TARGET_IOPS: f64 = 1.0;
/// Largest target IOPS of a run.
pub const MAX_TARGET_IOPS: f64 = 1_000_000.0;
/// Longest measured duration, seconds (30 days).
pub const MAX_DURATION_S: f64 = 2_592_000.0;
/// Longest sample interval, seconds.
pub const MAX_SAMPLE_INTERVAL_S: f64 = 3600.0;
/// Jetstress's sample interval, seconds (the default `sample_interval_s`).
pub const DEFAULT_SAMPLE_INTERVAL_S: f64 = 15.0;

/// The sample interval of a run whose user set none: Jetstress's 15 s, or shorter for a short
/// run, so that the maximum-latency checks have at least 2 x (`max_latency_errors` + 1) samples
/// per instance to judge (with `max_latency_errors` samples or fewer they cannot fail, and are
/// not judged): `duration_s` / (2 x (`max_latency_errors` + 1)), rounded down to the
/// millisecond, 1 s at the shortest. With the defaults (6 tolerated) every run of 210 s or more
/// keeps 15 s; the 60 s quick start samples every 4.285 s (14 samples).
pub fn sample_interval_for(duration_s: f64, max_latency_errors: u32) -> f64 {
    let want = 2.0 * (f64::from(max_latency_errors) + 1.0);
    let s = (duration_s / want * 1000.0).floor() / 1000.0;
    if s.is_finite() {
        s.clamp(1.0, DEFAULT_SAMPLE_INTERVAL_S)
    } else {
        DEFAULT_SAMPLE_INTERVAL_S
    }
}

/// Longest dirty-page age, seconds.
pub const MAX_DIRTY_AGE_S: f64 = 3600.0;
/// Largest cache per database, MiB (64 GiB).
pub const MAX_CACHE_MB_PER_DB: u64 = 65_536;
/// Most sessions.
pub const MAX_THREADS: u32 = 1024;
/// Default `checksum_reads_pct`: every transactional read checksums its whole page, as ESE
/// does, so a flipped bit inside a block's payload (which the block stamps cannot see) is found
/// by the first read that meets it. Checksumming a 32 KiB page fresh from the device reads all
/// of it from memory: about 15% of the engine's CPU at 32 sessions, CPU per I/O 1.14x fio's with
/// every read checksummed against 1.00x at one read in ten (bench/results/
/// mix-2026-11-26T224233Z and mix-2026-11-26T231012Z); a lower share is for CPU-bound hosts.
pub const DEFAULT_CHECKSUM_READS_PCT: u8 = 100;

/// Most reactors (`reactors`).
pub const MAX_REACTORS: u32 = 1024;
/// Most log files per database a Soft Recovery test generates and replays (1 MiB each).
pub const MAX_LOG_FILES_TO_REPLAY: u64 = 100_000;
/// Largest latency (ms) or stall-rate threshold.
pub const MAX_THRESHOLD: f64 = 1_000_000.0;

/// Most samples over a maximum-latency threshold that can be tolerated
/// ([`Thresholds::max_latency_errors`]).
pub const MAX_LATENCY_ERRORS: u32 = 10_000;

/// Longest an open-loop arrival may wait for a session, seconds ([`RunConfig::max_backlog_s`]).
pub const MAX_BACKLOG_S: f64 = 3600.0;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lenient_thresholds_relax_only_the_maximum_latencies() {
        let (l, s) = (Thresholds::lenient(), Thresholds::default());
        assert_eq!((l.db_read_max_ms, l.log_write_max_ms), (200.0, 200.0));
        assert_eq!((s.db_read_max_ms, s.log_write_max_ms), (100.0, 100.0));
        assert_eq!(
            Thresholds {
                db_read_max_ms: s.db_read_max_ms,
                log_write_max_ms: s.log_write_max_ms,
                ..l
            },
            s
        );
    }

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
        assert_eq!(c.profile.mailboxes, 5000);
        assert_eq!(c.profile.databases, Profile::default().databases);
        assert_eq!(c.thresholds.db_read_avg_ms, 15.0);
        assert_eq!(c.thresholds.log_write_avg_ms, 10.0);
        assert!(toml::from_str::<RunConfig>("mailboxs = 5\n").is_err());
        assert!(toml::from_str::<RunConfig>("[cache]\nmax_mb = 5\n").is_err());
    }

    /// The profile's keys are flattened into the configuration; errors about them and about
    /// unknown keys still name the key and its line.
    #[test]
    fn errors_name_the_key_and_line() {
        let e = RunConfig::from_toml("duration_s = 5\nmailboxs = 5\n").expect_err("typo");
        assert!(
            e.starts_with("line 2: unknown key `mailboxs`, expected one of"),
            "{e}"
        );
        assert!(
            e.contains("`mailboxes`") && e.contains("`thresholds`"),
            "{e}"
        );
        let e = RunConfig::from_toml("seed = 1\nmailboxes = \"x\"\n").expect_err("type");
        assert!(
            e.starts_with("line 2: `mailboxes`: invalid type: string"),
            "{e}"
        );
        let e = RunConfig::from_toml("  databases   = -5\n").expect_err("negative");
        assert!(e.starts_with("line 1: `databases`: invalid value"), "{e}");
        // Errors elsewhere keep the parser's own message, with its position.
        let e = RunConfig::from_toml("[cache]\nmax_mb = 5\n").expect_err("nested typo");
        assert!(e.contains("line 2") && e.contains("max_mb_per_db"), "{e}");
        let e = RunConfig::from_toml("duration_s = \"x\"\n").expect_err("type");
        assert!(e.contains("line 1") && e.contains("duration_s"), "{e}");
        let c = RunConfig::from_toml("databases = 3\niops_per_mailbox = 1\n").expect("valid");
        assert_eq!((c.profile.databases, c.profile.iops_per_mailbox), (3, 1.0));
        assert_eq!(c.profile.mailboxes, Profile::default().mailboxes);
    }

    #[test]
    fn only_paced_tests_need_a_target_in_range() {
        // 2 mailboxes at 0.2 IOPS: a target of 0.4 IOPS, below the 1 IOPS minimum.
        let mut c = RunConfig::default();
        c.profile.mailboxes = 2;
        for kind in crate::TestKind::ALL {
            let r = c.validate_for(kind).map_err(|e| e.0);
            if kind.paced() {
                assert_eq!(r, Err("iops_per_mailbox"), "{kind:?}");
            } else {
                assert_eq!(r, Ok(()), "{kind:?}");
            }
        }
        assert_eq!(c.validate().map_err(|e| e.0), Err("iops_per_mailbox"));
    }

    #[test]
    fn invalid_values_name_their_key() {
        let mut c = RunConfig::default();
        c.op_mix.read_pct = 50;
        assert_eq!(c.validate().map_err(|e| e.0), Err("op_mix"));
        let mut c = RunConfig::default();
        c.profile.copies_per_database = 4;
        assert_eq!(c.validate().map_err(|e| e.0), Err("copies_per_database"));
        let mut c = RunConfig::default();
        c.profile.mailboxes = 0;
        assert_eq!(c.validate().map_err(|e| e.0), Err("mailboxes"));
    }

    #[test]
    fn capacity_sizing_keys_are_checked_by_name() {
        let key = |f: &dyn Fn(&mut RunConfig), kind: crate::TestKind| {
            let mut c = RunConfig::default();
            f(&mut c);
            c.validate_for(kind).map_err(|e| e.0)
        };
        let perf = crate::TestKind::Performance;
        for pct in [0.0, -5.0, 100.5, f64::NAN] {
            assert_eq!(key(&|c| c.capacity_pct = pct, perf), Err("capacity_pct"));
        }
        assert_eq!(key(&|c| c.capacity_pct = 0.001, perf), Ok(()));
        for pct in [0.5, 101.0, f64::INFINITY] {
            assert_eq!(
                key(&|c| c.throughput_pct = pct, perf),
                Err("throughput_pct")
            );
        }
        let capacity = |c: &mut RunConfig| c.sizing = Sizing::Capacity;
        assert_eq!(key(&capacity, perf), Ok(()));
        assert_eq!(key(&capacity, crate::TestKind::Stress), Ok(()));
        assert_eq!(key(&capacity, crate::TestKind::Backup), Err("sizing"));
        // In a file: lowercase names, and the defaults are Jetstress's (100, 100).
        let c =
            RunConfig::from_toml("sizing = \"capacity\"\ncapacity_pct = 20\nthroughput_pct = 80\n")
                .expect("parse");
        assert_eq!(
            (c.sizing, c.capacity_pct, c.throughput_pct),
            (Sizing::Capacity, 20.0, 80.0)
        );
        let d = RunConfig::default();
        assert_eq!(
            (d.sizing, d.capacity_pct, d.throughput_pct),
            (Sizing::Profile, 100.0, 100.0)
        );
        assert!(RunConfig::from_toml("sizing = \"throughput\"\n").is_err());
    }
}
