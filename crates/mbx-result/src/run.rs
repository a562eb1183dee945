//! `result.json` as docs/results.md lists it.

use mbx_config::{Arrivals, Pacing, Profile, RunConfig, TestKind};
use serde::{Deserialize, Deserializer, Serialize};

use crate::error_class::ErrorClass;
use crate::rows::{BackupRow, ChecksumRow, SoftRecoveryRow};

/// The schema of every result.json this version writes.
pub const SCHEMA: &str = "mbxstress.result/1";

/// Percentile summary in milliseconds (the result contract's `PCT`): mbx-core's type, which the
/// I/O histograms summarize into.
pub use mbx_core::Percentiles;

/// The 12 Jetstress columns of an instance (transactional or total I/O).
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize, Default)]
pub struct Io12 {
    /// I/O Database Reads Average Latency, ms.
    pub db_read_avg_latency_ms: f64,
    /// I/O Database Writes Average Latency, ms.
    pub db_write_avg_latency_ms: f64,
    /// I/O Database Reads/sec.
    pub db_reads_per_s: f64,
    /// I/O Database Writes/sec.
    pub db_writes_per_s: f64,
    /// I/O Database Reads Average Bytes.
    pub db_read_avg_bytes: f64,
    /// I/O Database Writes Average Bytes.
    pub db_write_avg_bytes: f64,
    /// I/O Log Reads Average Latency, ms.
    pub log_read_avg_latency_ms: f64,
    /// I/O Log Writes Average Latency, ms.
    pub log_write_avg_latency_ms: f64,
    /// I/O Log Reads/sec.
    pub log_reads_per_s: f64,
    /// I/O Log Writes/sec.
    pub log_writes_per_s: f64,
    /// I/O Log Reads Average Bytes.
    pub log_read_avg_bytes: f64,
    /// I/O Log Writes Average Bytes.
    pub log_write_avg_bytes: f64,
}

impl Io12 {
    /// The 12 values in Jetstress's column order.
    pub fn values(&self) -> [f64; 12] {
        [
            self.db_read_avg_latency_ms,
            self.db_write_avg_latency_ms,
            self.db_reads_per_s,
            self.db_writes_per_s,
            self.db_read_avg_bytes,
            self.db_write_avg_bytes,
            self.log_read_avg_latency_ms,
            self.log_write_avg_latency_ms,
            self.log_reads_per_s,
            self.log_writes_per_s,
            self.log_read_avg_bytes,
            self.log_write_avg_bytes,
        ]
    }
}

/// A stream's rate and size.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize, Default)]
pub struct RateBytes {
    /// Reads per second.
    pub reads_per_s: f64,
    /// Average bytes per read.
    pub read_avg_bytes: f64,
}

/// Latency percentiles per stream.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize, Default)]
pub struct LatencyPercentiles {
    /// Transactional database reads.
    pub db_read: Percentiles,
    /// Database writes (flushes).
    pub db_write: Percentiles,
    /// Log writes.
    pub log_write: Percentiles,
}

/// Data integrity findings of every verified read during the run. As in mbx-store's verify
/// report and the checksum rows, `bad_pages` counts every page that fails its checksum, and
/// `unwritten_pages` (all zeros) and `wrong_database_pages` (another database's page) say how
/// many of them were which; `bad_pages - unwritten_pages - wrong_database_pages` are checksum
/// failures proper (torn, overwritten, garbage). The other classes are disjoint from it.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize, Default)]
pub struct Integrity {
    /// Pages verified (transactional and BDM reads).
    pub pages_verified: u64,
    /// Of `pages_verified`: pages whose whole content was checksummed (the others passed by
    /// header and block stamps; `checksum_reads_pct`). `None` (absent or null) where nothing
    /// counted them: results of earlier versions, which checksummed every page they verified.
    #[serde(default)]
    pub pages_checksummed: Option<u64>,
    /// Pages failing their checksum beyond one bit: torn or garbage, zeroed, another database's.
    pub bad_pages: u64,
    /// Single-bit errors.
    pub correctable_pages: u64,
    /// Valid pages at the wrong position.
    pub wrong_page_number_pages: u64,
    /// Valid pages with an older generation than last written (lost writes).
    pub stale_pages: u64,
    /// Of `bad_pages`: all-zero pages where a written page should be.
    #[serde(default)]
    pub unwritten_pages: u64,
    /// Of `bad_pages`: valid pages of another database.
    #[serde(default)]
    pub wrong_database_pages: u64,
    /// Damaged pages rewritten from their known content (page patching, copies > 1); each is
    /// also counted in its class.
    #[serde(default)]
    pub patched_pages: u64,
    /// Problems found in the log, not in pages: log files damaged, of the wrong length or
    /// missing, checkpoint slots damaged or missing (the Checksum test), and log records a
    /// replication read found lost or damaged (`errors[]` classes `log_damaged`, `log_missing`,
    /// `checkpoint_damaged`, `lost_log_write`). Counted in [`Integrity::damaged`].
    #[serde(default)]
    pub log_problems: u64,
}

impl Integrity {
    /// Counts `n` pages checksummed whole (0 still says that pages are being counted).
    pub fn checksummed(&mut self, n: u64) {
        self.pages_checksummed = Some(self.pages_checksummed.unwrap_or(0).saturating_add(n));
    }

    /// Damaged pages found, all classes, and log problems (saturating).
    pub fn damaged(&self) -> u64 {
        self.bad_pages
            .saturating_add(self.correctable_pages)
            .saturating_add(self.wrong_page_number_pages)
            .saturating_add(self.stale_pages)
            .saturating_add(self.log_problems)
    }
    /// True when nothing was found (nothing damaged, nothing patched).
    pub fn clean(&self) -> bool {
        self.damaged() == 0 && self.patched_pages == 0
    }
    /// Adds another instance's counts.
    pub fn add(&mut self, o: &Integrity) {
        let damaged = self.damaged();
        self.pages_verified += o.pages_verified;
        self.pages_checksummed = match (self.pages_checksummed, o.pages_checksummed) {
            (None, None) => None,
            (a, b) => Some(a.unwrap_or(0).saturating_add(b.unwrap_or(0))),
        };
        self.bad_pages += o.bad_pages;
        self.correctable_pages += o.correctable_pages;
        self.wrong_page_number_pages += o.wrong_page_number_pages;
        self.stale_pages += o.stale_pages;
        self.unwritten_pages += o.unwritten_pages;
        self.wrong_database_pages += o.wrong_database_pages;
        self.patched_pages += o.patched_pages;
        self.log_problems += o.log_problems;
        // The whole's damage is the sum of its parts' (both sides saturate alike).
        debug_assert_eq!(self.damaged(), damaged.saturating_add(o.damaged()));
    }
}

/// One database instance's results.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct InstanceResult {
    /// Jetstress-style name ("Instance<pid>.<n>").
    pub name: String,
    /// Database file.
    pub database_path: String,
    /// Log directory.
    pub log_path: String,
    /// Transactional I/O (Jetstress "Transactional I/O Performance").
    pub transactional: Io12,
    /// All I/O (transactional + BDM + replication; DB read latency is the transactional one).
    pub total: Io12,
    /// Background database maintenance.
    pub bdm: RateBytes,
    /// Log replication reads (copies > 1).
    pub log_replication: RateBytes,
    /// True per-I/O latency percentiles over the measured phase.
    pub latency_ms: LatencyPercentiles,
    /// Integrity of what this instance read.
    pub integrity: Integrity,
    /// Transactions per second.
    pub transactions_per_s: f64,
    /// Database cache in use at the end, fraction of its maximum.
    pub cache_fill: f64,
    /// Errors met by this instance: the sum of the counts of its `errors[]` entries (I/O
    /// errors, damaged pages, hung I/Os; a `patched_page` entry is the remedy of a damaged page
    /// already counted, not another error).
    #[serde(default)]
    pub errors: u64,
    /// The I/Os in flight when the measured phase ended, per stream: each counts in the measured
    /// latency figures (average, percentiles, slowest I/O) with its whole latency, though not in
    /// the rates (docs/method.md, "I/O in flight at the end"). All zero in results of earlier
    /// versions.
    #[serde(default)]
    pub incomplete_at_end: IncompleteAtEnd,
}

/// `instances[].incomplete_at_end`: per stream, the I/Os in flight when the measured phase
/// ended.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize, Default)]
pub struct IncompleteAtEnd {
    /// Transactional database reads.
    pub db_read: IncompleteIo,
    /// Database writes.
    pub db_write: IncompleteIo,
    /// Log writes.
    pub log_write: IncompleteIo,
    /// Log replication reads.
    pub log_read: IncompleteIo,
    /// Background maintenance reads.
    pub bdm: IncompleteIo,
}

/// The I/Os of one stream in flight when the measured phase ended.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize, Default)]
pub struct IncompleteIo {
    /// How many.
    pub count: u64,
    /// The oldest one's age when measuring ended, ms.
    pub age_max_ms: f64,
    /// Their average latency, ms: each to its completion (during shutdown), or its age when the
    /// test stopped waiting for it (one that failed is left out).
    pub latency_avg_ms: f64,
    /// The longest latency among them, ms (at least `age_max_ms`).
    pub latency_max_ms: f64,
    /// Of them, how many never completed (the test ended, or gave up on them, first).
    pub never_completed: u64,
}

/// Average, minimum, maximum.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize, Default)]
pub struct Amm {
    /// Average.
    pub avg: f64,
    /// Minimum.
    pub min: f64,
    /// Maximum.
    pub max: f64,
}

impl Amm {
    /// Summary of a series (zeros if empty).
    pub fn of(values: &[f64]) -> Amm {
        if values.is_empty() {
            return Amm::default();
        }
        Amm {
            avg: values.iter().sum::<f64>() / values.len() as f64,
            min: values.iter().cloned().fold(f64::INFINITY, f64::min),
            max: values.iter().cloned().fold(f64::NEG_INFINITY, f64::max),
        }
    }
}

/// Host counters over the measured phase.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize, Default)]
pub struct Host {
    /// CPU busy, percent of all cores.
    pub cpu_pct: Amm,
    /// Available memory, MB.
    pub available_mb: Amm,
    /// Database page fault stalls per second (all instances).
    pub page_fault_stalls_per_s: Amm,
    /// Peak resident memory of the mbxstress process, MB (the simulated cache holds metadata
    /// only, so this stays far below the configured cache size).
    pub process_peak_rss_mb: f64,
}

/// What a check found: it passed, it failed, or it could not judge anything (with the reason).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum CheckState {
    /// The value is within the limit.
    Pass,
    /// The value is past the limit.
    Fail,
    /// Nothing was there to judge (nothing measured, or too few samples for the check to be
    /// able to fail): not a pass.
    NotJudged,
}

impl CheckState {
    /// The name used in result.json.
    pub fn name(self) -> &'static str {
        match self {
            CheckState::Pass => "pass",
            CheckState::Fail => "fail",
            CheckState::NotJudged => "not_judged",
        }
    }

    /// The words a summary or report prints ("pass", "FAIL", "not judged").
    pub fn label(self) -> &'static str {
        match self {
            CheckState::Pass => "pass",
            CheckState::Fail => "FAIL",
            CheckState::NotJudged => "not judged",
        }
    }

    /// A verdict's headline ("PASS", "FAIL", "NOT JUDGED").
    pub fn headline(self) -> &'static str {
        match self {
            CheckState::Pass => "PASS",
            CheckState::Fail => "FAIL",
            CheckState::NotJudged => "NOT JUDGED",
        }
    }
}

/// One verdict check. `pass` is true exactly when `state` is [`CheckState::Pass`]: a check
/// that judged nothing is `not_judged` (with its `reason`) and does not pass. Built with
/// [`Check::new`] or [`Check::not_judged`]; read with [`Check::pass`], [`Check::state`] and
/// [`Check::reason`].
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(from = "CheckFields")]
pub struct Check {
    /// What is checked.
    pub name: String,
    /// Measured value (0, and meaningless, when the check is not judged).
    pub value: f64,
    /// Limit.
    pub limit: f64,
    /// Passed (`state` is `pass`).
    pass: bool,
    /// Pass, fail or not judged.
    state: CheckState,
    /// Why the check was not judged (absent otherwise).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    reason: Option<String>,
    /// What the value measures, in words ([`Check::measures_of`]; absent for a name this
    /// version does not describe).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    measures: Option<String>,
    /// For the maximum-latency checks: the strict maximum, the slowest single I/O of the
    /// measured phase (any instance), ms, shown beside the value judged (the largest sample
    /// average) so that no maximum reads below an average unexplained. No limit applies to it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    strict_max_ms: Option<f64>,
}

/// A check as result.json holds it: results of earlier versions have no `state` (it follows
/// from `pass`).
#[derive(Deserialize)]
struct CheckFields {
    name: String,
    value: f64,
    limit: f64,
    pass: bool,
    #[serde(default)]
    state: Option<CheckState>,
    #[serde(default)]
    reason: Option<String>,
    #[serde(default)]
    measures: Option<String>,
    #[serde(default)]
    strict_max_ms: Option<f64>,
}

impl From<CheckFields> for Check {
    fn from(c: CheckFields) -> Check {
        let name = c.name.clone();
        let state = c.state.unwrap_or(if c.pass {
            CheckState::Pass
        } else {
            CheckState::Fail
        });
        Check {
            name: c.name,
            value: c.value,
            limit: c.limit,
            pass: state == CheckState::Pass,
            state,
            measures: c
                .measures
                .or_else(|| Check::measures_of(&name).map(str::to_string)),
            reason: c.reason,
            strict_max_ms: c.strict_max_ms,
        }
    }
}

impl Check {
    /// A check named `name` that judged `value` against `limit`: passed or failed.
    pub fn new(name: &str, value: f64, limit: f64, pass: bool) -> Check {
        Check {
            name: name.to_string(),
            value,
            limit,
            pass,
            state: if pass {
                CheckState::Pass
            } else {
                CheckState::Fail
            },
            reason: None,
            measures: Check::measures_of(name).map(str::to_string),
            strict_max_ms: None,
        }
    }

    /// What the check named `name` measures, in the words the verdict table shows (`None` for a
    /// name not described here). The maximum-latency checks judge Jetstress's "maximum": the
    /// largest per-sample average latency, its worst samples tolerated (`max_latency_errors`),
    /// which can be below the average latency (an average over every I/O); the strict maximum,
    /// the slowest single I/O, is [`Check::strict_max_ms`].
    pub fn measures_of(name: &str) -> Option<&'static str> {
        Some(match name {
            "db_read_latency_avg_ms" => "average read latency, worst instance",
            "db_read_latency_max_ms" | "log_write_latency_max_ms" => {
                "largest sample average (Jetstress's maximum), tolerated samples excluded"
            }
            "log_write_latency_avg_ms" => "average log write latency, worst instance",
            "page_fault_stalls_per_s_avg" => "page fault stalls per second, average",
            "achieved_transactional_iops" => "transactional IOPS (limit: target less the margin)",
            "data_integrity_errors" => "pages and logs that failed verification",
            "errors" => "I/O, verification and store errors",
            "hung_ios" => "I/Os that never completed",
            "completed_duration_s" => "seconds of the measured phase that ran",
            _ => return None,
        })
    }

    /// The same check with its strict maximum ([`Check::strict_max_ms`]).
    pub fn with_strict_max(mut self, ms: f64) -> Check {
        self.strict_max_ms = Some(ms);
        self
    }

    /// What the value measures, in words (`None` for a check this version does not describe).
    pub fn measures(&self) -> Option<&str> {
        self.measures.as_deref()
    }

    /// The strict maximum of a maximum-latency check: the slowest single I/O, ms.
    pub fn strict_max_ms(&self) -> Option<f64> {
        self.strict_max_ms
    }

    /// A check named `name` (limit `limit`) that could not judge anything, and why: not a pass.
    pub fn not_judged(name: &str, limit: f64, reason: impl Into<String>) -> Check {
        Check {
            name: name.to_string(),
            value: 0.0,
            limit,
            pass: false,
            state: CheckState::NotJudged,
            reason: Some(reason.into()),
            measures: Check::measures_of(name).map(str::to_string),
            strict_max_ms: None,
        }
    }

    /// True when the check passed (false when it failed or judged nothing).
    pub fn pass(&self) -> bool {
        // Every constructor (reading one back included) derives one from the other.
        debug_assert_eq!(self.pass, self.state == CheckState::Pass, "{}", self.name);
        self.pass
    }

    /// Pass, fail or not judged.
    pub fn state(&self) -> CheckState {
        self.state
    }

    /// Why the check was not judged (`None` for a judged check).
    pub fn reason(&self) -> Option<&str> {
        self.reason.as_deref()
    }
}

/// The verdict: every check, and whether the test passed, which is true exactly when there is
/// at least one check and every check passed (a check not judged is not a pass). [`Verdict::of`]
/// is the only way to build one, and its methods the only way to change one: `pass` always
/// follows from the checks.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Verdict {
    /// Every check passed.
    pass: bool,
    /// The checks.
    checks: Vec<Check>,
}

impl Verdict {
    /// The verdict of `checks`.
    pub fn of(checks: Vec<Check>) -> Verdict {
        let mut v = Verdict {
            pass: false,
            checks,
        };
        v.rederive();
        v
    }

    fn passes(checks: &[Check]) -> bool {
        !checks.is_empty() && checks.iter().all(Check::pass)
    }

    fn rederive(&mut self) {
        self.pass = Verdict::passes(&self.checks);
        // The verdict passes exactly when every check passed: none failed, none judged
        // nothing, and there is one at least.
        debug_assert_eq!(
            self.pass,
            !self.checks.is_empty()
                && self.failed().next().is_none()
                && self.not_judged().next().is_none()
        );
        debug_assert_eq!(self.pass, self.state() == CheckState::Pass);
    }

    /// True when the test passed: every check passed.
    pub fn pass(&self) -> bool {
        self.pass
    }

    /// The checks, in order.
    pub fn checks(&self) -> &[Check] {
        &self.checks
    }

    /// The check named `name`.
    pub fn check(&self, name: &str) -> Option<&Check> {
        self.checks.iter().find(|c| c.name == name)
    }

    /// Pass (every check passed), fail (at least one failed), or not judged (none failed, but at
    /// least one judged nothing, or there is no check at all).
    pub fn state(&self) -> CheckState {
        if self.pass {
            CheckState::Pass
        } else if self.checks.iter().any(|c| c.state == CheckState::Fail) {
            CheckState::Fail
        } else if self.checks.is_empty() || self.not_judged().next().is_some() {
            CheckState::NotJudged
        } else {
            // A result of another version that says it failed with every check passing.
            CheckState::Fail
        }
    }

    /// The checks that failed.
    pub fn failed(&self) -> impl Iterator<Item = &Check> {
        self.checks.iter().filter(|c| c.state == CheckState::Fail)
    }

    /// The checks that judged nothing.
    pub fn not_judged(&self) -> impl Iterator<Item = &Check> {
        self.checks
            .iter()
            .filter(|c| c.state == CheckState::NotJudged)
    }

    /// Adds `check`, or replaces the check of the same name.
    pub fn set(&mut self, check: Check) {
        match self.checks.iter_mut().find(|c| c.name == check.name) {
            Some(c) => *c = check,
            None => self.checks.push(check),
        }
        self.rederive();
    }

    /// Keeps only the checks `keep` returns true for.
    pub fn retain(&mut self, keep: impl FnMut(&Check) -> bool) {
        self.checks.retain(keep);
        self.rederive();
    }

    /// Makes every check that is not judged yet (all but those `keep` names) "not judged" for
    /// `reason`: what a result whose figures are not the test's says of them.
    pub fn judge_nothing_but(&mut self, keep: &[&str], reason: &str) {
        for c in &mut self.checks {
            if !keep.contains(&c.name.as_str()) && c.state != CheckState::NotJudged {
                *c = Check::not_judged(&c.name, c.limit, reason);
            }
        }
        debug_assert!(self
            .checks
            .iter()
            .all(|c| keep.contains(&c.name.as_str()) || c.state == CheckState::NotJudged));
        self.rederive();
    }
}

/// Test identification and timing.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct TestInfo {
    /// The test type ("performance", ...).
    #[serde(rename = "type")]
    pub test_type: TestKind,
    /// Start, RFC 3339.
    pub start: String,
    /// End.
    pub end: String,
    /// Start of the measured phase.
    pub collection_start: String,
    /// End of the measured phase.
    pub collection_end: String,
    /// Measured seconds.
    pub duration_s: f64,
    /// Host name.
    pub machine: String,
    /// Operating system.
    pub os: String,
    /// mbxstress version.
    pub tool_version: String,
    /// I/O engine used.
    pub engine: String,
    /// O_DIRECT (false: buffered, results measure memory).
    pub direct: bool,
    /// Stopped early by the user.
    pub interrupted: bool,
    /// Reactors (event-loop threads) the databases were partitioned among (1 in results of
    /// versions that had one).
    #[serde(default = "one")]
    pub reactors: u32,
    /// Start of the measured phase in seconds since the Unix epoch, with fractions (absent when
    /// nothing was measured, and in results of earlier versions): `fleet run` computes the skew
    /// of a synchronized start from it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub collection_start_unix_s: Option<f64>,
    /// Seconds the shutdown phase took (open transactions finished, caches and logs drained,
    /// the final checkpoint written), the longest of any reactor's; absent for a test without
    /// one (Backup, Checksum) and in results of earlier versions.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub shutdown_s: Option<f64>,
}

fn one() -> u32 {
    1
}

/// The profile block of the contract: the [`Profile`] (flattened: its keys sit in the block) and
/// the sessions used.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ProfileBlock {
    /// Mailboxes, IOPS per mailbox, quota, databases, copies.
    #[serde(flatten)]
    pub profile: Profile,
    /// Sessions.
    pub threads: u32,
}

impl ProfileBlock {
    /// The profile block of a configuration.
    pub fn of(cfg: &RunConfig) -> ProfileBlock {
        ProfileBlock {
            profile: cfg.profile.clone(),
            threads: cfg.sessions(),
        }
    }
}

/// Database sizes in bytes.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize, Default)]
pub struct DbSizes {
    /// At the start.
    pub initial: u64,
    /// At the end.
    #[serde(rename = "final")]
    pub final_: u64,
}

/// `result.json`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RunResult {
    /// "mbxstress.result/1" ([`SCHEMA`]).
    pub schema: String,
    /// Identification and timing.
    pub test: TestInfo,
    /// The resolved configuration, every default filled in. Read leniently
    /// ([`read_config_leniently`]): a result is evidence, and one written by another version
    /// must still read.
    #[serde(deserialize_with = "read_config_leniently")]
    pub config: RunConfig,
    /// The profile.
    pub profile: ProfileBlock,
    /// Target transactional IOPS.
    pub target_iops: f64,
    /// Achieved transactional IOPS: sum over instances of DB reads/s + writes/s.
    pub achieved_iops: f64,
    /// Database sizes (sum over databases).
    pub database_size_bytes: DbSizes,
    /// Pass/fail.
    pub verdict: Verdict,
    /// Per instance.
    pub instances: Vec<InstanceResult>,
    /// Host counters.
    pub host: Host,
    /// Integrity over all instances.
    pub integrity: Integrity,
    /// Samples file (in the same folder).
    pub samples_file: String,
    /// Log file (in the same folder).
    pub log_file: String,
    /// How the test ended, so no consumer mistakes a partial result for a complete one.
    #[serde(default)]
    pub stopped: Stopped,
    /// I/O, verification and store errors met during the test.
    #[serde(default)]
    pub errors: Vec<ErrorEntry>,
    /// Things about the run the user must know (a prerequisite not met, a repaired header).
    #[serde(default)]
    pub notes: Vec<String>,
    /// Automatic tuning, when the test tuned its session count first (absent otherwise).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tuning: Option<crate::Tuning>,
    /// How transactions were started and what they waited (Performance and Stress; absent
    /// from the other test types and from results of earlier versions).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pacing: Option<PacingResult>,
    /// The maximum-latency checks in full: the strict figures and the value Jetstress's
    /// `MaximumLatencyErrors` tolerance judges (Performance and Stress; absent from the other
    /// test types and from results of earlier versions).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_latency: Option<MaxLatencyChecks>,
    /// The disk subsystem throughput test (capacity sizing): the sizing, the maximum found and
    /// the target held (absent from profile-sized tests and results of earlier versions).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub throughput: Option<crate::Throughput>,
    /// The preflight checks `run` performed before the test (`mbxstress doctor`'s fast
    /// subset); they never change the verdict. Absent from results of earlier versions and of
    /// runs that did not check.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub doctor: Option<crate::DoctorReport>,
    /// The per-database rows of the test types other than Performance (absent from a
    /// Performance result: every field is skipped when empty).
    #[serde(flatten)]
    pub sections: Sections,
}

impl RunResult {
    /// The strict maximum of a maximum-latency check, ms: the check's own, or for a result of an
    /// earlier version (whose checks lack it) the slowest I/O in its `max_latency`.
    pub fn strict_max_ms(&self, c: &Check) -> Option<f64> {
        c.strict_max_ms().or_else(|| {
            let m = self.max_latency.as_ref()?;
            let x = match c.name.as_str() {
                "db_read_latency_max_ms" => &m.db_read,
                "log_write_latency_max_ms" => &m.log_write,
                _ => return None,
            };
            Some(x.per_io_max_ms.max(x.incomplete_max_ms))
        })
    }
}

/// `pacing` in result.json: how transactions were started over the measured phase, and the
/// latency of a transaction both from its submission and from when it was due.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PacingResult {
    /// "closed" or "open" (`config.pacing`).
    pub mode: Pacing,
    /// Open loop: how arrivals were spaced (`config.arrivals`); absent for closed loop.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub arrivals: Option<Arrivals>,
    /// A transaction that starts more than this after it was due is late, ms.
    pub late_threshold_ms: f64,
    /// Transactions due in the measured phase (open loop: arrivals; closed loop: start slots
    /// taken).
    pub transactions_arrived: u64,
    /// Transactions started in the measured phase.
    pub transactions_started: u64,
    /// Of them, started more than `late_threshold_ms` after they were due.
    pub transactions_late: u64,
    /// Transactions dropped in the measured phase: due but not started within
    /// `config.max_backlog_s` (open loop), or start slots nobody was free to take within a second
    /// (closed loop). Counted, never silently skipped.
    pub transactions_dropped: u64,
    /// Most arrivals waiting for a session at once (open loop; 0 for closed loop).
    pub backlog_max: u64,
    /// The per-sample maxima of the backlog (open loop; zeros for closed loop).
    pub backlog_max_per_sample: Amm,
    /// Latency of a transaction from its submission (its first read) to its end (commit durable,
    /// or lazy commit), ms: the service time.
    pub transaction_latency_ms: Percentiles,
    /// Latency of a transaction from when it was due (open loop: its arrival; closed loop: its
    /// start slot) to its end, ms: what a user waits, without coordinated omission.
    pub latency_from_arrival_ms: Percentiles,
}

/// One maximum-latency check in full (`max_latency.db_read`, `max_latency.log_write`).
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize, Default)]
pub struct MaxLatency {
    /// The threshold, ms (`thresholds.db_read_max_ms` or `thresholds.log_write_max_ms`).
    pub limit_ms: f64,
    /// The strict per-I/O maximum: the slowest single I/O of the measured phase, any instance,
    /// ms (no threshold applies to it; reported for honesty).
    pub per_io_max_ms: f64,
    /// The largest per-sample average, any instance, ms (Jetstress's "maximum" without
    /// tolerance).
    pub sample_max_ms: f64,
    /// The value judged: per instance, the largest per-sample average once the
    /// `max_latency_errors` highest are tolerated; the worst instance's, ms. The check passes
    /// when it is within `limit_ms`, that is when no instance has more than
    /// `max_latency_errors` samples over the limit.
    pub tolerated_ms: f64,
    /// The most samples over the limit of any instance.
    pub samples_over: u64,
    /// The fewest samples of any instance (0 in results of earlier versions).
    #[serde(default)]
    pub samples: u64,
    /// The check could judge: `samples` is more than `max_latency_errors`, or the I/Os in flight
    /// when the measured phase ended are over the limit (true in results of earlier versions).
    /// When false the check judged nothing, and does not pass.
    #[serde(default = "yes")]
    pub judged: bool,
    /// `judged`, `tolerated_ms <= limit_ms` and `incomplete_avg_ms <= limit_ms`.
    pub pass: bool,
    /// I/Os of the stream in flight when the measured phase ended, all instances (0 in results
    /// of earlier versions).
    #[serde(default)]
    pub incomplete_at_end: u64,
    /// The average latency of those I/Os (to their completion during shutdown, or their age
    /// when the test stopped waiting), the worst instance's, ms. Judged like one more sample,
    /// without tolerance: a test whose measured phase ends in a stall does not pass. The check's
    /// value is the larger of this and `tolerated_ms` (docs/method.md, "I/O in flight at the
    /// end").
    #[serde(default)]
    pub incomplete_avg_ms: f64,
    /// The slowest of those I/Os, any instance, ms (reported, not judged by itself).
    #[serde(default)]
    pub incomplete_max_ms: f64,
}

fn yes() -> bool {
    true
}

/// `max_latency` in result.json: both maximum-latency checks with Jetstress's
/// `MaximumLatencyErrors` tolerance.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize, Default)]
pub struct MaxLatencyChecks {
    /// Samples per instance allowed over a maximum-latency threshold
    /// (`thresholds.max_latency_errors`).
    pub max_latency_errors: u32,
    /// Database reads.
    pub db_read: MaxLatency,
    /// Log writes.
    pub log_write: MaxLatency,
}

/// The rows backup, soft-recovery and checksum runs add to result.json, at its top level (keys as
/// in the result contract). The same row types the Jetstress importer produces, so `esrp` treats
/// both alike.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, Default)]
pub struct Sections {
    /// Database Backup: one row per database.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub backup: Vec<BackupRow>,
    /// Database Backup: MB/s per database (Jetstress's Avg row).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub backup_avg_mb_per_s: Option<f64>,
    /// Database Backup: MB/s per server (Jetstress's Sum row).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub backup_sum_mb_per_s: Option<f64>,
    /// Soft Recovery: one row per database.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub soft_recovery: Vec<SoftRecoveryRow>,
    /// Soft Recovery: average elapsed seconds / average log files replayed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub seconds_per_log: Option<f64>,
    /// Checksum: one row per database file.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub checksum: Vec<ChecksumRow>,
}

impl Sections {
    /// True for a Performance (or Stress) result.
    pub fn is_empty(&self) -> bool {
        *self == Sections::default()
    }
}

/// Reads result.json's `config` whatever version wrote it: keys this version does not know (a
/// newer writer's) are dropped, keys it misses (an older writer's) take their defaults. A value
/// of the wrong type is still an error. (A `--config` file, by contrast, is strict.)
pub fn read_config_leniently<'de, D: Deserializer<'de>>(d: D) -> Result<RunConfig, D::Error> {
    use serde::de::Error;
    let mut given = serde_json::Value::deserialize(d)?;
    let known = serde_json::to_value(RunConfig::default()).map_err(D::Error::custom)?;
    keep_known(&mut given, &known);
    RunConfig::deserialize(given).map_err(D::Error::custom)
}

/// Drops every key of `v` (recursively, through objects) that `known` does not have.
fn keep_known(v: &mut serde_json::Value, known: &serde_json::Value) {
    if let (serde_json::Value::Object(given), serde_json::Value::Object(known)) = (v, known) {
        given.retain(|k, _| known.contains_key(k));
        for (k, x) in given.iter_mut() {
            if let Some(kx) = known.get(k) {
                keep_known(x, kx);
            }
        }
    }
}

/// Why a test ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, Default)]
#[serde(rename_all = "snake_case")]
pub enum StopReason {
    /// Ran its full duration and every check passed.
    #[default]
    Completed,
    /// Ran its full duration; the verdict is not a pass (a check failed, or judged nothing).
    VerdictFailed,
    /// Stopped by Ctrl-C, SIGTERM or SIGHUP (`stopped.phase` says in which phase).
    Interrupted,
    /// An I/O error stopped it (disk full, device error).
    IoError,
    /// A damaged page stopped it (the first integrity error, without `continue_on_errors`).
    IntegrityError,
    /// Anything else stopped it (a store or configuration problem met while running).
    Error,
    /// Not ended: the result written as the test starts, replaced as it ends. Read after the
    /// test, it says the process never finished it (killed, out of memory, power lost): nothing
    /// in it was measured.
    Running,
}

impl StopReason {
    /// The name used in result.json.
    pub fn name(self) -> &'static str {
        match self {
            StopReason::Completed => "completed",
            StopReason::VerdictFailed => "verdict_failed",
            StopReason::Interrupted => "interrupted",
            StopReason::IoError => "io_error",
            StopReason::IntegrityError => "integrity_error",
            StopReason::Error => "error",
            StopReason::Running => "running",
        }
    }

    /// True if the test ran its whole course (whatever the verdict).
    pub fn ran_to_completion(self) -> bool {
        matches!(self, StopReason::Completed | StopReason::VerdictFailed)
    }
}

/// `stopped` in result.json: the reason, a human message and, for a test that stopped early,
/// the phase it stopped in.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, Default)]
pub struct Stopped {
    /// Why the test ended.
    pub reason: StopReason,
    /// What happened, in words (the error message for errors).
    pub message: String,
    /// The phase the test was in when it was interrupted or an error stopped it ([`STOP_PHASES`]);
    /// absent when it ran to its end, and in results of earlier versions.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub phase: Option<String>,
}

/// The names `stopped.phase` takes: `prepare` (creating or attaching the databases), `tuning`
/// (automatic tuning or a capacity search's steps: the test itself never ran), then the
/// engine's phases.
pub const STOP_PHASES: [&str; 13] = [
    "prepare",
    "tuning",
    "attain",
    "settle",
    "stabilize",
    "wait_start",
    "measure",
    "shutdown",
    "backup",
    "checksum",
    "generate_logs",
    "stop_dirty",
    "replay",
];

impl Stopped {
    /// A stop for `reason` with `message` (no phase).
    pub fn new(reason: StopReason, message: impl Into<String>) -> Stopped {
        Stopped {
            reason,
            message: message.into(),
            phase: None,
        }
    }

    /// The same stop, in `phase`.
    pub fn in_phase(mut self, phase: &str) -> Stopped {
        self.phase = Some(phase.to_string());
        self
    }
}

/// One error class met during a test (`errors[]` in result.json).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, Default)]
pub struct ErrorEntry {
    /// What kind of error (serialized as its name: `io_error`, `bad_page`, ...).
    pub class: ErrorClass,
    /// Instance name, when the error belongs to one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub instance: Option<String>,
    /// The file or device.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub path: Option<String>,
    /// The volume `path` is on (its mount point; the device itself for a block device), as
    /// Jetstress logs errors against the volume where they occurred.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub volume: Option<String>,
    /// Byte offset, when known.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub offset: Option<u64>,
    /// Page number, when known.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub page: Option<u64>,
    /// The OS error number of an I/O error, when the OS gave one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub errno: Option<i32>,
    /// How many times it happened.
    pub count: u64,
    /// When it first happened, RFC 3339.
    pub first_at: String,
    /// The message.
    pub message: String,
}
