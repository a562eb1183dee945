//! The search step a measured run describes: apart from search.rs, which holds the records
//! (`RunResult` holds a `Tuning`), so that the records name no run and the files form no circle.

use crate::{RunResult, SearchStep};

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
            transactions: r.pacing.as_ref().map_or(0, |p| p.transactions_started),
            pass: !r.verdict.checks().is_empty() && r.verdict.failed().next().is_none(),
            failed_checks: r.verdict.failed().map(|c| c.name.clone()).collect(),
            confirmation: false,
            kept_up: false,
            recheck: false,
        }
    }

    /// Whether the sessions of `r` took the transactions that came due in its measured phase
    /// when they came due: none dropped, at least (1 - the IOPS margin) of them started, and at
    /// most the margin's share of those started late (a due transaction found no idle session;
    /// closed-loop pacing starts a due transaction at once when a session is idle, so in the
    /// closed loop, where every transaction due is started, lateness is what shows it).
    pub fn sessions_kept_up(r: &RunResult) -> bool {
        r.pacing.as_ref().is_some_and(|p| {
            let margin = r.config.thresholds.iops_margin.clamp(0.0, 1.0);
            let started = p.transactions_started as f64;
            p.transactions_dropped == 0
                && p.transactions_arrived > 0
                && started >= p.transactions_arrived as f64 * (1.0 - margin)
                && p.transactions_late as f64 <= started * margin
        })
    }
}
