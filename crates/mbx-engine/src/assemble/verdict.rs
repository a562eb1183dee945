//! The verdict builder: the only code of the engine that writes a verdict (tests/verdict.rs
//! checks it). Each test type's checks are decided here, from figures the rest of `assemble`
//! measured; [`Verdict::of`] and its methods keep `pass` equal to "every check passed".

use mbx_config::RunConfig;

use super::Measured;
use crate::result::*;
use crate::stats::Stream;
use crate::RunTimes;

/// What the transactional checks judge, as `build_result` measured it.
pub(super) struct Figures<'a> {
    pub worst_read_avg: f64,
    pub worst_log_avg: f64,
    pub achieved: f64,
    pub host: &'a Host,
    pub integrity: &'a Integrity,
    pub max_latency: &'a MaxLatencyChecks,
    /// Errors met (a patched page is not one).
    pub errors: u64,
}

/// The verdict of a test that ran transactions (Performance, Stress, a search step): latency,
/// stalls, IOPS and integrity checks, each judged only over what was measured; `errors`,
/// `hung_ios` and `completed_duration_s` listed only when they fail.
pub(super) fn transactional(
    cfg: &RunConfig,
    engine: &Measured<'_>,
    times: &RunTimes,
    f: Figures<'_>,
) -> Verdict {
    let Figures {
        worst_read_avg,
        worst_log_avg,
        achieved,
        host,
        integrity,
        max_latency,
        errors: total,
    } = f;
    let secs = engine.secs;
    let target = cfg.target_iops();
    let t = &cfg.thresholds;
    // A check judges only what was measured: nothing measured, no I/O of its stream, or too few
    // samples for a maximum to be able to fail, and it says so instead of passing with 0.
    let nothing = (!times.measured || secs <= 0.0)
        .then_some("nothing was measured (the test stopped before its measured phase)");
    let measured_ios = |s: Stream| {
        engine
            .dbs
            .iter()
            // I/O still in flight when measuring ended counts as measured (its age is).
            .map(|d| {
                d.stats.measured[s as usize]
                    .ios
                    .saturating_add(d.stats.incomplete[s as usize].count)
            })
            .sum::<u64>()
    };
    let none_of =
        |s: Stream, what: &'static str| nothing.or((measured_ios(s) == 0).then_some(what));
    let judged = |name: &str, value: f64, limit: f64, why_not: Option<&str>| match why_not {
        Some(why) => Check::not_judged(name, limit, why),
        None => Check::new(name, value, limit, value <= limit),
    };
    let max_check = |name: &str, m: &MaxLatency, stream: Stream, what: &'static str| {
        match none_of(stream, what) {
            Some(why) => Check::not_judged(name, m.limit_ms, why),
            // The strict maximum (the slowest single I/O) is shown beside the value judged,
            // judged or not: it was measured.
            None if !m.judged => Check::not_judged(
                name,
                m.limit_ms,
                format!(
                    "{} sample(s) per instance and {} over the limit tolerated (--max-latency-errors): the check could not fail; the strict maxima are in max_latency (sample more often, run longer or lower the tolerance)",
                    m.samples, max_latency.max_latency_errors
                ),
            )
            .with_strict_max(m.per_io_max_ms),
            // The tolerated per-sample figure and, without tolerance, the average
            // latency of the I/O left in flight when measuring ended (docs/method.md, "I/O in
            // flight at the end").
            None => Check::new(
                name,
                m.tolerated_ms.max(m.incomplete_avg_ms),
                m.limit_ms,
                m.pass,
            )
            .with_strict_max(m.per_io_max_ms.max(m.incomplete_max_ms)),
        }
    };
    const NO_READ: &str = "no database read was measured";
    const NO_LOG: &str = "no log write was measured";
    let mut checks = vec![
        judged(
            "db_read_latency_avg_ms",
            worst_read_avg,
            t.db_read_avg_ms,
            none_of(Stream::DbRead, NO_READ),
        ),
        max_check(
            "db_read_latency_max_ms",
            &max_latency.db_read,
            Stream::DbRead,
            NO_READ,
        ),
        judged(
            "log_write_latency_avg_ms",
            worst_log_avg,
            t.log_write_avg_ms,
            none_of(Stream::LogWrite, NO_LOG),
        ),
        max_check(
            "log_write_latency_max_ms",
            &max_latency.log_write,
            Stream::LogWrite,
            NO_LOG,
        ),
        judged(
            "page_fault_stalls_per_s_avg",
            host.page_fault_stalls_per_s.avg,
            t.page_fault_stalls_per_s,
            nothing.or(engine
                .host
                .stalls_per_s
                .is_empty()
                .then_some("no sample was taken")),
        ),
        match nothing {
            Some(why) => Check::not_judged(
                "achieved_transactional_iops",
                target * (1.0 - t.iops_margin),
                why,
            ),
            None => Check::new(
                "achieved_transactional_iops",
                achieved,
                target * (1.0 - t.iops_margin),
                achieved >= target * (1.0 - t.iops_margin),
            ),
        },
        {
            let errors = integrity.damaged() as f64;
            if integrity.pages_verified == 0 && errors == 0.0 {
                Check::not_judged("data_integrity_errors", 0.0, "no page was read")
            } else {
                Check::new("data_integrity_errors", errors, 0.0, errors == 0.0)
            }
        },
    ];
    if total > 0 {
        checks.push(Check::new("errors", total as f64, 0.0, false));
    }
    // A hung I/O fails the test, as any I/O error does in Jetstress 2013. The check is listed
    // only when one was seen (older results and the report's check table stay as they were).
    if !engine.hung.is_empty() {
        let n = engine.hung.len() as f64;
        checks.push(Check::new("hung_ios", n, 0.0, false));
    }
    // A measured phase cut short fails; one that ran its length is whole, whatever came after.
    if (times.interrupted && !times.measure_complete) || secs + 0.5 < cfg.duration_s {
        checks.push(Check::new(
            "completed_duration_s",
            secs,
            cfg.duration_s,
            false,
        ));
    }
    Verdict::of(checks)
}

/// The verdict of a sequential pass (Backup, Checksum): no page found damaged, every file read
/// to its end, and no hung I/O.
pub(super) fn read_pass(result: &mut RunResult, found: u64, completed: bool, hung: usize) {
    let check = Check::new;
    let mut checks = vec![
        check("data_integrity_errors", found as f64, 0.0, found == 0),
        check(
            "pass_completed",
            if completed { 1.0 } else { 0.0 },
            1.0,
            completed,
        ),
    ];
    if hung != 0 {
        checks.push(check("hung_ios", hung as f64, 0.0, false));
    }
    result.verdict = Verdict::of(checks);
}

/// The verdict of a test that measured nothing: its duration was not completed.
pub(super) fn unmeasured(cfg: &RunConfig) -> Verdict {
    Verdict::of(vec![Check::new(
        "completed_duration_s",
        0.0,
        cfg.duration_s,
        false,
    )])
}

/// Errors met (a patched page is the remedy of a damaged page already counted, not another).
pub(crate) fn error_total(errors: &[ErrorEntry]) -> u64 {
    errors
        .iter()
        .filter(|e| e.class != ErrorClass::PatchedPage)
        .fold(0u64, |a, e| a.saturating_add(e.count))
}

/// Every error met fails the test: the `errors` check, counting `result.errors`.
pub(super) fn errors_met(result: &mut RunResult) {
    let total = error_total(&result.errors);
    result
        .verdict
        .set(Check::new("errors", total as f64, 0.0, false));
}

/// A damaged page stopped the test: it is already named in errors[] and counted by its check,
/// which fails (at least one page) if nothing failed it yet.
pub(super) fn integrity_stop(result: &mut RunResult) {
    if result.verdict.pass() {
        let found = result.integrity.damaged().max(1) as f64;
        result
            .verdict
            .set(Check::new("data_integrity_errors", found, 0.0, false));
    }
}

/// The search before the test (automatic tuning, the throughput search) found nothing: its
/// `check` fails.
pub(super) fn found_nothing(result: &mut RunResult, check: &str) {
    result.verdict.set(Check::new(check, 0.0, 1.0, false));
}

/// A damaged database header copy was found (and rewritten): one more integrity error.
pub(crate) fn damaged_header(result: &mut RunResult) {
    let before = result
        .verdict
        .check("data_integrity_errors")
        .map_or(0.0, |c| c.value);
    result.verdict.set(Check::new(
        "data_integrity_errors",
        before + 1.0,
        0.0,
        false,
    ));
}

/// A pass after the transactions (the Stress test's checksum): its findings add to the
/// transactions' (a check that judged nothing before judges the pages the pass read), and
/// `pass_completed` says whether every file was read to its end.
pub(super) fn final_pass(result: &mut RunResult, found: u64, pages_read: u64, completed: bool) {
    let verdict = &mut result.verdict;
    let before = verdict
        .check("data_integrity_errors")
        .filter(|c| c.state() != CheckState::NotJudged)
        .map(|c| c.value);
    if before.is_some() || pages_read > 0 {
        let total = before.unwrap_or(0.0) + found as f64;
        verdict.set(Check::new(
            "data_integrity_errors",
            total,
            0.0,
            total == 0.0,
        ));
    }
    verdict.set(Check::new(
        "pass_completed",
        if completed { 1.0 } else { 0.0 },
        1.0,
        completed,
    ));
}

/// The verdict of a Soft Recovery test: every database recovered, at least `files` log files
/// replayed each (`least`: the fewest), no page ahead of the log, and the integrity, hung I/O
/// and error checks the transactions that generated the logs had.
pub(super) fn soft_recovery(
    result: &mut RunResult,
    recovered: usize,
    databases: usize,
    least: u64,
    files: u64,
    ahead: u64,
) {
    let check = Check::new;
    let mut checks = vec![
        check(
            "databases_recovered",
            recovered as f64,
            databases as f64,
            recovered == databases,
        ),
        check(
            "log_files_replayed_min",
            least as f64,
            files as f64,
            least >= files,
        ),
        check("pages_ahead_of_log", ahead as f64, 0.0, ahead == 0),
    ];
    checks.extend(
        result
            .verdict
            .checks()
            .iter()
            .filter(|c| {
                matches!(
                    c.name.as_str(),
                    "data_integrity_errors" | "hung_ios" | "errors"
                )
            })
            .cloned(),
    );
    result.verdict = Verdict::of(checks);
}
