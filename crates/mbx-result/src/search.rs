//! Automatic tuning and find-max: the steps of a search over session or mailbox counts, each a
//! short measured run, and what the search found.

use serde::{Deserialize, Serialize};

use crate::RunResult;

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
    /// Every check passed.
    pub pass: bool,
    /// The checks that failed, by name (as in `verdict.checks`).
    pub failed_checks: Vec<String>,
}

impl SearchStep {
    /// The step a measured run's result describes.
    pub fn of_result(r: &RunResult, sessions: u32, stable: bool) -> SearchStep {
        let worst = |f: &dyn Fn(&crate::InstanceResult) -> f64| {
            r.instances.iter().map(f).fold(0.0_f64, f64::max)
        };
        SearchStep {
            sessions,
            mailboxes: r.config.profile.mailboxes,
            target_iops: r.target_iops,
            achieved_iops: r.achieved_iops,
            db_read_avg_ms: worst(&|i| i.latency_ms.db_read.avg),
            db_read_p99_ms: worst(&|i| i.latency_ms.db_read.p99),
            db_read_p999_ms: worst(&|i| i.latency_ms.db_read.p999),
            log_write_avg_ms: worst(&|i| i.latency_ms.log_write.avg),
            log_write_p99_ms: worst(&|i| i.latency_ms.log_write.p99),
            page_fault_stalls_per_s: r.host.page_fault_stalls_per_s.avg,
            stable,
            measured_s: r.test.duration_s,
            pass: r.verdict.pass,
            failed_checks: r
                .verdict
                .checks
                .iter()
                .filter(|c| !c.pass)
                .map(|c| c.name.clone())
                .collect(),
        }
    }
}

/// Automatic tuning's record in result.json (`tuning`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, Default)]
pub struct Tuning {
    /// The steps, in the order they ran.
    pub steps: Vec<SearchStep>,
    /// The session count chosen (the smallest that passed), if any did.
    pub sessions: Option<u32>,
    /// Why the search ended: "converged" (a pass next to a fail), "bound" (no count up to the
    /// most sessions passed), "steps" (the step budget ran out), "time" (`tuning.max_s` ran
    /// out), "interrupted" or "error".
    pub end: String,
    /// Seconds the tuning took, wall clock.
    pub elapsed_s: f64,
}
