//! Automatic tuning and find-max: the steps of a search over session or mailbox counts, each a
//! short measured run, and what the search found.

use serde::{Deserialize, Serialize};

/// One step: a short measured run at a session count and target.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, Default)]
pub struct SearchStep {
    /// Sessions of the step.
    pub sessions: u32,
    /// Mailboxes the target stands for (find-max varies it; tuning keeps the profile's).
    pub mailboxes: u64,
    /// Target transactional IOPS.
    pub target_iops: f64,
    /// Achieved transactional IOPS.
    pub achieved_iops: f64,
    /// Database read latency, ms, over all instances: the worst instance's average, and the
    /// percentiles of the worst instance by p99.
    pub db_read_avg_ms: f64,
    /// Database read latency p99, ms (worst instance).
    pub db_read_p99_ms: f64,
    /// Database read latency p99.9, ms (worst instance).
    pub db_read_p999_ms: f64,
    /// Log write latency average, ms (worst instance).
    pub log_write_avg_ms: f64,
    /// Log write latency p99, ms (worst instance).
    pub log_write_p99_ms: f64,
    /// Database page fault stalls per second, average.
    pub page_fault_stalls_per_s: f64,
    /// Read latency was stable before the step measured.
    pub stable: bool,
    /// Seconds measured.
    pub measured_s: f64,
    /// Transactions started in the measured phase: the count the achieved IOPS rest on (its
    /// counting error: [`SearchStep::counting_error_iops`]). 0 in results from before it was
    /// recorded.
    #[serde(default)]
    pub transactions: u64,
    /// No check failed (a check the step was too short to judge, such as a maximum-latency
    /// check with fewer samples than it tolerates, does not count against it; the step's own
    /// checks are in its record only as `failed_checks`).
    pub pass: bool,
    /// The checks that failed, by name (as in `verdict.checks`).
    pub failed_checks: Vec<String>,
    /// find-max: a confirmation of the answer (a longer run at it), not a search step.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub confirmation: bool,
    /// Tuning: the step missed the IOPS target and nothing else, by no more than one standard
    /// error of its own count ([`SearchStep::within_counting_error`]), while its sessions kept
    /// up ([`SearchStep::sessions_kept_up`]), so it counts as passed: the shortfall is counting
    /// noise over a short step, not a lack of sessions more of them would fix.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub kept_up: bool,
    /// find-max: a second run at a value whose first run failed, before that failure was
    /// trusted as the upper bound (only bounds more than 10% above the best pass are re-checked).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub recheck: bool,
}

impl SearchStep {
    /// One standard error of the step's achieved IOPS, had it met its target: transactions
    /// start independently, so the count of a window is a Poisson count; a step that counted
    /// `transactions` at `achieved_iops` would have counted M = transactions x target /
    /// achieved at its target, with a standard error of sqrt(M), which is target / sqrt(M) in
    /// IOPS. `None` when nothing was counted (no transaction, or no I/O).
    pub fn counting_error_iops(&self) -> Option<f64> {
        let ok = |x: f64| x.is_finite() && x > 0.0;
        if self.transactions == 0 || !ok(self.achieved_iops) || !ok(self.target_iops) {
            return None;
        }
        let at_target = self.transactions as f64 * self.target_iops / self.achieved_iops;
        Some(self.target_iops / at_target.sqrt())
    }

    /// Whether the step's shortfall from its target is within one standard error of its own
    /// count ([`SearchStep::counting_error_iops`]): below that, the step measured a rate that
    /// falls short of the target, whatever the step's length.
    pub fn within_counting_error(&self) -> bool {
        self.counting_error_iops()
            .is_some_and(|e| self.target_iops - self.achieved_iops <= e)
    }
}

/// Automatic tuning's record in result.json (`tuning`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, Default)]
pub struct Tuning {
    /// The steps, in the order they ran.
    pub steps: Vec<SearchStep>,
    /// The session count the test runs: the smallest that passed with the headroom kept over
    /// it (`headroom_pct`), if any passed.
    pub sessions: Option<u32>,
    /// The smallest count that passed (absent in files of earlier versions, whose `sessions`
    /// was it, and when none passed).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub smallest_passing: Option<u32>,
    /// The extra sessions kept over `smallest_passing`, percent of it (100: twice as many), so
    /// that the test has idle sessions to catch up after a stall (docs/method.md).
    #[serde(default)]
    pub headroom_pct: f64,
    /// Why the search ended: "converged" (a pass next to a fail), "bound" (no count up to the
    /// most sessions passed), "steps" (the step budget ran out), "time" (`tuning.max_s` ran
    /// out), "interrupted" or "error".
    pub end: String,
    /// Seconds the tuning took, wall clock.
    pub elapsed_s: f64,
}

/// The disk subsystem throughput test's record in result.json (`throughput`, with
/// `config.sizing` "capacity"): how the databases were sized from the free space, the maximum
/// transactional IOPS a search found on them, and the target the test held.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, Default)]
pub struct Throughput {
    /// Percent of the free space the databases were sized from (`config.capacity_pct`).
    pub capacity_pct: f64,
    /// Percent of the maximum the test held (`config.throughput_pct`).
    pub throughput_pct: f64,
    /// Free bytes of the database volume(s) when sized (the set's own database files counted
    /// as free).
    pub free_bytes: u64,
    /// Bytes of all database files: at most free x capacity_pct x 0.75 (25% reserved for
    /// growth), per volume.
    pub database_bytes: u64,
    /// The largest transactional IOPS that passed every threshold (null when none passed: the
    /// test then did not run).
    pub max_iops: Option<f64>,
    /// The target the test held: max_iops x throughput_pct / 100 (null when none passed).
    pub held_iops: Option<f64>,
    /// Sessions of the held test.
    pub sessions: Option<u32>,
    /// The search's steps, in the order they ran (`STEP` as in `tuning.steps`).
    pub steps: Vec<SearchStep>,
    /// Why the search ended: "converged", "bound", "steps", "time", "interrupted" or "error".
    pub end: String,
    /// Seconds the search took.
    pub elapsed_s: f64,
}

/// The schema of find-max.json.
pub const FIND_MAX_SCHEMA: &str = "mbxstress.find-max/1";

/// What `mbxstress find-max` found (find-max.json): the largest mailbox count at the profile's
/// IOPS per mailbox that passed every threshold, and the curve of steps that shows it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct FindMax {
    /// [`FIND_MAX_SCHEMA`].
    #[serde(default)]
    pub schema: String,
    /// Machine the search ran on.
    #[serde(default)]
    pub machine: String,
    /// mbxstress version.
    #[serde(default)]
    pub tool_version: String,
    /// Start, RFC 3339.
    #[serde(default)]
    pub start: String,
    /// The answer: the largest mailbox count that passed every try (search steps and
    /// confirmations; a step cut short by an interruption is no try). None only when no step
    /// passed.
    pub mailboxes: Option<u64>,
    /// Its transactional IOPS (mailboxes x IOPS per mailbox).
    pub iops: Option<f64>,
    /// IOPS per mailbox of the profile.
    pub iops_per_mailbox: f64,
    /// The steps, in the order they ran (`STEP` as in `tuning.steps`).
    pub steps: Vec<SearchStep>,
    /// Why the search ended: "converged", "bound" (every count passed up to the most the
    /// target range allows, or none down to 1), "steps", "time", "interrupted", "error" or
    /// "unconfirmed" (no answer held in its confirmation runs).
    pub end: String,
    /// Seconds the search took, its confirmation runs included.
    pub elapsed_s: f64,
    /// True when the answer is a lower bound: no step above it failed, so the storage carries
    /// at least `mailboxes`, and the search stopped (`end` "steps", "time" or "bound") before
    /// finding how many more. False with no answer, and in files of earlier versions.
    #[serde(default)]
    pub lower_bound: bool,
    /// Whether the answer held in its confirmation runs (absent in files of earlier versions
    /// and when no count passed).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub confirmation: Option<Confirmation>,
    /// What ended the search when it was not the search itself: the run's limit a step could
    /// not be built within, or the error a step met (`end` "limit" or "error").
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub stop_message: Option<String>,
    /// The configuration (its profile is where the search started; the databases' size).
    #[serde(deserialize_with = "crate::read_config_leniently")]
    pub config: crate::RunConfig,
}

/// The confirmation of a find-max answer: runs [`Confirmation::required`] in a row at it, each
/// three steps long.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
pub struct Confirmation {
    /// Confirmation runs at the answer that passed.
    pub passed: u32,
    /// Runs in a row that confirm it.
    pub required: u32,
    /// `passed` reached `required` at this count.
    pub confirmed: bool,
    /// Why it is not confirmed (absent when it is).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub why: Option<String>,
}

impl FindMax {
    /// The answer in words, the same in the terminal, test.log and find-max.html: "largest
    /// passing count N (confirmed M of K)" or "largest passing count N, not confirmed: why";
    /// None when no step passed.
    pub fn answer_words(&self) -> Option<String> {
        let m = self.mailboxes?;
        let count = if self.lower_bound {
            format!("largest passing count {m} (at least: no step above it failed)")
        } else {
            format!("largest passing count {m}")
        };
        Some(match &self.confirmation {
            Some(c) if c.confirmed => format!("{count} (confirmed {} of {})", c.passed, c.required),
            Some(c) => format!(
                "{count}, not confirmed: {}",
                c.why
                    .as_deref()
                    .unwrap_or("its confirmation runs did not pass")
            ),
            None => format!("{count}, not confirmed: no confirmation runs"),
        })
    }
}
