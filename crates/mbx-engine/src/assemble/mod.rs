//! Result assembly: what a test measured, turned into its result. Execution hands over what
//! each reactor leaves ([`Part`]); [`finish`] builds the result from all of them at once
//! (per-database rows and histograms as measured, counters summed, never an average of
//! averages), then the test type's own sections (a final pass, a replay). The verdict is
//! written only by [`verdict`]: a verdict is `pass` exactly when every check passed.

mod errors;
mod passes;
pub(crate) mod verdict;

use std::time::{Duration, Instant};

use mbx_config::{Pacing, RunConfig, TestKind};
use mbx_io::Clock;

use crate::db::Database;
use crate::plan::Plan;
use crate::result::*;
use crate::stats::{self, Counter, Stream};
use crate::{
    human_duration, rfc3339, sampling, workload, EngineError, Observer, Phase, RunEvent, RunTimes,
};

pub use errors::{error_entry, unmeasured_result};
pub(crate) use errors::{
    search_not_run, stop_with_error, stopped_result, unmeasured_result_at, untuned_result, NotRun,
};
pub(crate) use passes::{add_final_pass, read_pass, soft_recovery, PassReport};

/// What one reactor leaves when its phases are done: its databases (with their counters and
/// histograms), what it found, and when things happened on its clock.
pub(crate) struct Part {
    pub(crate) dbs: Vec<Database>,
    pub(crate) hung: Vec<ErrorEntry>,
    pub(crate) notes: Vec<String>,
    pub(crate) host: sampling::HostSeries,
    pub(crate) pass_report: Option<PassReport>,
    pub(crate) times: RunTimes,
    /// The wall clock when its measured phase began.
    pub(crate) measure_start_wall: Option<std::time::SystemTime>,
    pub(crate) ref_instant: Instant,
    pub(crate) ref_wall: std::time::SystemTime,
    pub(crate) engine_name: &'static str,
    /// Its transactions' figures (pacing and latency from arrival).
    pub(crate) txn: workload::open::TxnStats,
    /// The error that stopped this reactor, if one did.
    pub(crate) outcome: Result<(), EngineError>,
    /// How long its shutdown phase took (`None`: it had none).
    pub(crate) shutdown: Option<Duration>,
    /// The phase it was in when it ended (for an error: the phase the error came in).
    pub(crate) stopped_in: Phase,
    /// Where its host counters come from.
    pub(crate) machine: std::sync::Arc<dyn mbx_io::Machine>,
}

/// Measured seconds of a part (0 when nothing was measured: no rate means anything then).
fn measured_secs(t: &RunTimes) -> f64 {
    if t.measured {
        t.measure_end
            .saturating_duration_since(t.measure_start)
            .as_secs_f64()
    } else {
        0.0
    }
}

/// The result of the reactors' `parts` (one, or one per reactor in reactor order, so their
/// databases come in database order): rows concatenated, counters summed, histograms kept per
/// database, the host series `host` when several reactors were merged (their merged samples),
/// otherwise the one reactor's.
pub(crate) fn finish(
    cfg: &RunConfig,
    plan: &Plan,
    parts: Vec<Part>,
    host: Option<sampling::HostSeries>,
    observer: &mut dyn Observer,
) -> RunResult {
    let several = parts.len() > 1;
    let mut dbs = Vec::new();
    let mut db_secs = Vec::new();
    let mut hung = Vec::new();
    let mut txns = Vec::new();
    let mut notes = Vec::new();
    let mut pass_report = None;
    let mut error = None;
    let mut parts = parts.into_iter().enumerate();
    let Some((_, first)) = parts.next() else {
        // No reactor, so no clock of the run: the system's.
        let now = mbx_io::RealClock.wall();
        return unmeasured_result_at(
            cfg,
            now,
            now,
            Stopped::new(StopReason::Error, "no reactor ran"),
        );
    };
    let (ref_instant, ref_wall, engine_name) =
        (first.ref_instant, first.ref_wall, first.engine_name);
    let machine = first.machine.clone();
    let measure_start_wall = first.measure_start_wall;
    let mut times = first.times;
    let mut min_secs = measured_secs(&first.times);
    let host = host.unwrap_or(first.host);
    let mut error_at = ref_wall;
    let mut shutdown: Option<Duration> = None;
    let mut error_in = None;
    for (r, p) in std::iter::once((
        0,
        Part {
            host: Default::default(),
            ..first
        },
    ))
    .chain(parts)
    {
        let secs = measured_secs(&p.times);
        min_secs = min_secs.min(secs);
        shutdown = shutdown.max(p.shutdown);
        times.interrupted |= p.times.interrupted;
        times.interrupted_in = times.interrupted_in.or(p.times.interrupted_in);
        times.measured &= p.times.measured;
        times.measure_complete &= p.times.measure_complete;
        db_secs.extend(std::iter::repeat_n(secs, p.dbs.len()));
        dbs.extend(p.dbs);
        hung.extend(p.hung);
        txns.push(p.txn);
        if several {
            notes.extend(
                p.notes
                    .into_iter()
                    .map(|n| format!("Reactor {}: {n}", r + 1)),
            );
        } else {
            notes.extend(p.notes);
        }
        if pass_report.is_none() {
            pass_report = p.pass_report;
        }
        if let (Err(e), None) = (p.outcome, &error) {
            if several {
                notes.push(format!(
                    "Reactor {} stopped with an error; the other reactors were stopped with it.",
                    r + 1
                ));
            }
            error_at = p.ref_wall + p.times.ended.saturating_duration_since(p.ref_instant);
            error_in = Some(p.stopped_in);
            error = Some(e);
        }
    }
    let wall = |t: Instant| wall(t, ref_instant, ref_wall);
    let view = Measured {
        dbs: &dbs,
        db_secs,
        secs: min_secs,
        hung: &hung,
        host: &host,
        txns: &txns,
        machine: &*machine,
    };
    let mut result = build_result(cfg, &view, &times, &wall, engine_name);
    result.test.shutdown_s = shutdown.map(|d| d.as_secs_f64());
    if times.measured {
        result.test.collection_start_unix_s = measure_start_wall
            .and_then(|t| t.duration_since(std::time::UNIX_EPOCH).ok())
            .map(|d| d.as_secs_f64());
    }
    result.test.test_type = plan.test_kind();
    if !plan.test_kind().paced() {
        // No transaction was paced (Soft Recovery generates its logs flat out).
        result.pacing = None;
        result.max_latency = None;
    }
    if plan.final_pass().is_some() {
        let line = add_final_pass(&mut result, pass_report, &times);
        observer.on_event(RunEvent::Log(&line));
    }
    if plan.test_kind() == TestKind::SoftRecovery {
        let files = plan.log_files_to_replay().unwrap_or(0);
        soft_recovery(&mut result, &dbs, files, &times);
    }
    result.notes.extend(notes);
    log_figures(&result, &dbs, observer);
    if let Some(e) = error {
        stop_with_error(&mut result, &e, error_at, error_in);
    }
    result
}

/// The test-log lines of the figures each database and the test measured, and of the checks
/// not judged.
fn log_figures(result: &RunResult, dbs: &[Database], observer: &mut dyn Observer) {
    for inst in &result.instances {
        for (what, v) in [
            (
                "I/O Database Reads Average Latency",
                inst.transactional.db_read_avg_latency_ms,
            ),
            (
                "I/O Log Writes Average Latency",
                inst.transactional.log_write_avg_latency_ms,
            ),
            (
                "I/O Log Reads Average Latency",
                inst.total.log_read_avg_latency_ms,
            ),
        ] {
            let line = format!("{} has {:.1} for {what}.", inst.name, v);
            observer.on_event(RunEvent::Log(&line));
        }
    }
    // Checkpoints (database sync + slot write) and log file preallocation go through the queue
    // and are measured, outside the Jetstress streams (ESE does not count them as log I/O).
    for db in dbs {
        let o = db.stats.measured[Stream::Other as usize];
        if o.ios > 0 {
            let line = format!(
                "{} had {} checkpoint and log-preallocation I/Os while measuring, {:.2} ms average (not counted in the Jetstress streams).",
                db.spec.name,
                o.ios,
                o.avg_ms()
            );
            observer.on_event(RunEvent::Log(&line));
        }
    }
    let line = format!(
        "Test has {:.1} Maximum Database Page Fault Stalls/sec.",
        result.host.page_fault_stalls_per_s.max
    );
    observer.on_event(RunEvent::Log(&line));
    for c in result.verdict.not_judged() {
        let line = format!(
            "Check {} not judged: {}.",
            c.name,
            c.reason().unwrap_or("nothing to judge")
        );
        observer.on_event(RunEvent::Log(&line));
    }
}

/// How a test that ran to its end (or was interrupted) stopped: `messages` for interrupted,
/// passed and not passed (the last gets the checks that judged nothing when none failed).
pub(crate) fn ended(times: &RunTimes, verdict: &Verdict, messages: [&str; 3]) -> Stopped {
    if times.interrupted {
        let stop = Stopped::new(StopReason::Interrupted, messages[0]);
        return match times.interrupted_in {
            Some(p) => stop.in_phase(p.key()),
            None => stop,
        };
    }
    if verdict.pass() {
        return Stopped::new(StopReason::Completed, messages[1]);
    }
    Stopped::new(StopReason::VerdictFailed, not_passed(verdict, messages[2]))
}

/// The message of a test that ran to its end without passing: `failed` when a check failed,
/// otherwise the checks that judged nothing.
fn not_passed(verdict: &Verdict, failed: &str) -> String {
    if verdict.failed().next().is_some() {
        return failed.to_string();
    }
    let names: Vec<&str> = verdict.not_judged().map(|c| c.name.as_str()).collect();
    format!(
        "the test ran its full duration, but the verdict is not a pass: {} check(s) not judged ({}; the reasons are in the verdict)",
        names.len(),
        names.join(", ")
    )
}

/// The stop reason of a test that ran to its end or was interrupted: an interruption names the
/// phase it came in, and one after the measured phase completed says the measurement is whole.
fn stop_of(times: &RunTimes, verdict: &Verdict, secs: f64, duration_s: f64) -> Stopped {
    if times.interrupted {
        let phase = times.interrupted_in;
        let message = match phase {
            _ if times.measure_complete => format!(
                "interrupted while {}, after the measured phase completed: the measurement is whole ({}) and judged",
                phase.map_or("shutdown", Phase::name),
                measured_words(secs)
            ),
            Some(Phase::Measure) => format!(
                "interrupted during the measured phase, after {} of {}: the figures cover the time measured",
                measured_words(secs),
                measured_words(duration_s)
            ),
            Some(p) if !times.measured => format!(
                "interrupted before the measured phase (while {}): nothing was measured",
                p.name()
            ),
            Some(p) => format!(
                "interrupted while {}, after {} measured",
                p.name(),
                measured_words(secs)
            ),
            None => "interrupted".to_string(),
        };
        let stop = Stopped::new(StopReason::Interrupted, message);
        return match phase {
            Some(p) => stop.in_phase(p.key()),
            None => stop,
        };
    }
    if verdict.pass() {
        return Stopped::new(
            StopReason::Completed,
            "the test ran its full duration and every check passed",
        );
    }
    Stopped::new(
        StopReason::VerdictFailed,
        not_passed(
            verdict,
            "the test ran its full duration; at least one check failed",
        ),
    )
}

/// Seconds as a message says them: "0.994 s", "20 s", "2h00m00s".
fn measured_words(secs: f64) -> String {
    if secs >= 60.0 {
        human_duration(Duration::from_secs_f64(secs.round()))
    } else {
        let s = format!("{secs:.3}");
        format!("{} s", s.trim_end_matches('0').trim_end_matches('.'))
    }
}

fn io12(
    rd: &Counter,
    wr: &Counter,
    lr: &Counter,
    lw: &Counter,
    secs: f64,
    read_latency: f64,
) -> Io12 {
    Io12 {
        db_read_avg_latency_ms: read_latency,
        db_write_avg_latency_ms: wr.avg_ms(),
        db_reads_per_s: rd.rate(secs),
        db_writes_per_s: wr.rate(secs),
        db_read_avg_bytes: rd.avg_bytes(),
        db_write_avg_bytes: wr.avg_bytes(),
        log_read_avg_latency_ms: lr.avg_ms(),
        log_write_avg_latency_ms: lw.avg_ms(),
        log_reads_per_s: lr.rate(secs),
        log_writes_per_s: lw.rate(secs),
        log_read_avg_bytes: lr.avg_bytes(),
        log_write_avg_bytes: lw.avg_bytes(),
    }
}

/// What the result is built from: every database (in database order), the seconds each was
/// measured (its reactor's), the shortest of them, the hung I/Os, the host series.
pub(crate) struct Measured<'a> {
    dbs: &'a [Database],
    db_secs: Vec<f64>,
    secs: f64,
    hung: &'a [ErrorEntry],
    host: &'a sampling::HostSeries,
    /// Every reactor's transaction figures (merged into `pacing`).
    txns: &'a [workload::open::TxnStats],
    /// Where the host counters come from.
    machine: &'a dyn mbx_io::Machine,
}

impl<'a> Measured<'a> {
    /// What one reactor measured over `times`: every database measured as long as the others.
    pub(crate) fn single(
        dbs: &'a [Database],
        hung: &'a [ErrorEntry],
        host: &'a sampling::HostSeries,
        txn: &'a workload::open::TxnStats,
        machine: &'a dyn mbx_io::Machine,
        times: &RunTimes,
    ) -> Measured<'a> {
        let secs = measured_secs(times);
        Measured {
            dbs,
            db_secs: vec![secs; dbs.len()],
            secs,
            hung,
            host,
            txns: std::slice::from_ref(txn),
            machine,
        }
    }
}

fn build_result(
    cfg: &RunConfig,
    engine: &Measured<'_>,
    times: &RunTimes,
    wall: &dyn Fn(Instant) -> String,
    engine_name: &str,
) -> RunResult {
    // No measured phase, no rates: an interruption during attain must not report "1000 IOPS
    // over 0.001 s".
    let secs = engine.secs;
    let mut instances = Vec::new();
    let mut integrity = Integrity::default();
    let mut worst_read_avg = 0f64;
    let mut worst_read_max = 0f64;
    let mut worst_log_avg = 0f64;
    let mut worst_log_max = 0f64;
    for (k, inst) in engine.dbs.iter().enumerate() {
        // Rates over the time this database's reactor measured.
        let secs = engine.db_secs.get(k).copied().unwrap_or(secs);
        let st = &inst.stats;
        let m = |s: Stream| st.measured[s as usize];
        let (rd, lw) = (m(Stream::DbRead), m(Stream::LogWrite));
        worst_read_avg = worst_read_avg.max(rd.avg_ms());
        worst_log_avg = worst_log_avg.max(lw.avg_ms());
        worst_read_max = worst_read_max.max(st.max_sample_avgs.0);
        worst_log_max = worst_log_max.max(st.max_sample_avgs.1);
        integrity.add(&inst.integrity);
        instances.push(instance_result(inst, secs));
    }
    let achieved: f64 = instances
        .iter()
        .map(|i| i.transactional.db_reads_per_s + i.transactional.db_writes_per_s)
        .sum();
    let host = Host {
        cpu_pct: engine.host.cpu_pct.amm(),
        available_mb: engine.host.available_mb.amm(),
        page_fault_stalls_per_s: engine.host.stalls_per_s.amm(),
        process_peak_rss_mb: engine
            .machine
            .peak_resident_memory_bytes()
            .map(|b| b as f64 / (1 << 20) as f64)
            .unwrap_or(0.0),
    };
    let target = cfg.target_iops();
    let max_latency = max_latency_checks(cfg, engine.dbs, worst_read_max, worst_log_max);
    let (errors, total) = errors_of(engine, &wall(times.ended), &mut instances);
    let verdict = verdict::transactional(
        cfg,
        engine,
        times,
        verdict::Figures {
            worst_read_avg,
            worst_log_avg,
            achieved,
            host: &host,
            integrity: &integrity,
            max_latency: &max_latency,
            errors: total,
        },
    );
    let stopped = stop_of(times, &verdict, secs, cfg.duration_s);
    RunResult {
        schema: SCHEMA.into(),
        test: TestInfo {
            test_type: TestKind::Performance,
            start: wall(times.started),
            end: wall(times.ended),
            collection_start: wall(times.measure_start),
            collection_end: wall(times.measure_end),
            duration_s: secs,
            machine: hostname(),
            os: format!("{} {}", std::env::consts::OS, kernel_release()),
            tool_version: env!("CARGO_PKG_VERSION").into(),
            engine: engine_name.into(),
            direct: cfg.direct,
            interrupted: times.interrupted,
            reactors: 1,
            collection_start_unix_s: None,
            shutdown_s: None,
        },
        config: cfg.clone(),
        profile: ProfileBlock::of(cfg),
        target_iops: target,
        achieved_iops: achieved,
        database_size_bytes: DbSizes::default(),
        verdict,
        instances,
        host,
        integrity,
        samples_file: "samples.jsonl".into(),
        log_file: "test.log".into(),
        stopped,
        errors,
        notes: Vec::new(),
        tuning: None,
        pacing: Some(pacing_result(cfg, engine.txns)),
        max_latency: Some(max_latency),
        throughput: None,
        doctor: None,
        sections: Sections::default(),
    }
}

/// The result of one database, its rates over `secs`.
fn instance_result(inst: &Database, secs: f64) -> InstanceResult {
    let st = &inst.stats;
    let m = |s: Stream| st.measured[s as usize];
    let zero = Counter::default();
    let (rd, wr, lw, lr, bdm) = (
        m(Stream::DbRead),
        m(Stream::DbWrite),
        m(Stream::LogWrite),
        m(Stream::LogRead),
        m(Stream::Bdm),
    );
    let transactional = io12(&rd, &wr, &zero, &lw, secs, rd.avg_ms());
    let total = io12(&rd.plus(&bdm), &wr, &lr, &lw, secs, rd.avg_ms());
    InstanceResult {
        name: inst.spec.name.clone(),
        database_path: inst.spec.db_path.display().to_string(),
        log_path: inst.spec.log_dir.display().to_string(),
        transactional,
        total,
        bdm: RateBytes {
            reads_per_s: bdm.rate(secs),
            read_avg_bytes: bdm.avg_bytes(),
        },
        log_replication: RateBytes {
            reads_per_s: lr.rate(secs),
            read_avg_bytes: lr.avg_bytes(),
        },
        latency_ms: LatencyPercentiles {
            db_read: pct(st.hist[Stream::DbRead as usize].percentiles()),
            db_write: pct(st.hist[Stream::DbWrite as usize].percentiles()),
            log_write: pct(st.hist[Stream::LogWrite as usize].percentiles()),
        },
        integrity: inst.integrity,
        transactions_per_s: if secs > 0.0 {
            st.txns_measured as f64 / secs
        } else {
            0.0
        },
        cache_fill: inst.cache.fill(),
        errors: 0,
        incomplete_at_end: incomplete_at_end(&st.incomplete),
    }
}

/// Every error met (the damaged pages, log problems, I/O errors and hung I/Os of the databases),
/// each database's count of them in `instances`, and their total.
fn errors_of(
    engine: &Measured<'_>,
    at: &str,
    instances: &mut [InstanceResult],
) -> (Vec<ErrorEntry>, u64) {
    let errors: Vec<ErrorEntry> = integrity_errors(engine.dbs, at)
        .into_iter()
        .chain(engine.dbs.iter().flat_map(|d| d.log_errors.iter().cloned()))
        .chain(engine.dbs.iter().flat_map(|d| d.io_errors.iter().cloned()))
        .chain(engine.hung.iter().cloned())
        .collect();
    // A patch is the remedy of a damaged page already counted, not another error.
    let counted = |e: &&ErrorEntry| e.class != ErrorClass::PatchedPage;
    for inst in instances.iter_mut() {
        inst.errors = errors
            .iter()
            .filter(counted)
            .filter(|e| e.instance.as_deref() == Some(inst.name.as_str()))
            .fold(0u64, |a, e| a.saturating_add(e.count));
    }
    // Every error met fails the test (Jetstress 2013), counted or not: listed only when there
    // was one (older results and the report's check table stay as they were).
    let total = errors
        .iter()
        .filter(counted)
        .fold(0u64, |a, e| a.saturating_add(e.count));
    (errors, total)
}

/// `max_latency` of the result: each maximum-latency check with the strict figures (the
/// slowest I/O, the largest per-sample average `sample_max`) and the value judged with the
/// `MaximumLatencyErrors` tolerance (docs/method.md, "Maximum latency").
fn max_latency_checks(
    cfg: &RunConfig,
    dbs: &[Database],
    read_sample_max: f64,
    log_sample_max: f64,
) -> MaxLatencyChecks {
    let t = &cfg.thresholds;
    let one = |k: usize, stream: Stream, limit: f64, sample_max: f64| {
        let mut m = MaxLatency {
            limit_ms: limit,
            sample_max_ms: sample_max,
            ..MaxLatency::default()
        };
        for db in dbs {
            let st = &db.stats;
            m.per_io_max_ms = m
                .per_io_max_ms
                .max(st.hist[stream as usize].percentiles().max);
            m.tolerated_ms = m.tolerated_ms.max(st.maxima[k].tolerated_value());
            m.samples_over = m.samples_over.max(st.maxima[k].over);
            let inc = &st.incomplete[stream as usize];
            m.incomplete_at_end = m.incomplete_at_end.saturating_add(inc.count);
            m.incomplete_avg_ms = m.incomplete_avg_ms.max(inc.avg_ms());
            m.incomplete_max_ms = m.incomplete_max_ms.max(inc.longest.as_secs_f64() * 1e3);
        }
        // The fewest samples of any instance: with no more than the tolerance, the check
        // cannot fail, so it judges nothing.
        m.samples = dbs
            .iter()
            .map(|d| d.stats.maxima[k].samples)
            .min()
            .unwrap_or(0);
        // The I/O in flight at the end is judged like one more sample, without tolerance: over
        // the limit, it fails the check however few samples there are.
        let stalled = m.incomplete_at_end > 0 && m.incomplete_avg_ms > limit;
        m.judged = m.samples > u64::from(t.max_latency_errors) || stalled;
        m.pass = m.judged && m.tolerated_ms <= limit && !stalled;
        m
    };
    MaxLatencyChecks {
        max_latency_errors: t.max_latency_errors,
        db_read: one(0, Stream::DbRead, t.db_read_max_ms, read_sample_max),
        log_write: one(1, Stream::LogWrite, t.log_write_max_ms, log_sample_max),
    }
}

/// `instances[].incomplete_at_end` of a database's per-stream figures.
fn incomplete_at_end(inc: &[stats::Incomplete; stats::STREAMS]) -> IncompleteAtEnd {
    let one = |s: Stream| {
        let i = &inc[s as usize];
        IncompleteIo {
            count: i.count,
            age_max_ms: i.oldest_at_end.as_secs_f64() * 1e3,
            latency_avg_ms: i.avg_ms(),
            latency_max_ms: i.longest.as_secs_f64() * 1e3,
            never_completed: i.never_completed,
        }
    };
    IncompleteAtEnd {
        db_read: one(Stream::DbRead),
        db_write: one(Stream::DbWrite),
        log_write: one(Stream::LogWrite),
        log_read: one(Stream::LogRead),
        bdm: one(Stream::Bdm),
    }
}

/// `pacing` of the result: how transactions were started over the measured phase and their
/// latencies, the figures of every reactor's workload merged (one reactor today).
fn pacing_result<'a>(
    cfg: &RunConfig,
    reactors: impl IntoIterator<Item = &'a workload::open::TxnStats>,
) -> PacingResult {
    let mut txn = workload::open::TxnStats::default();
    let mut per_sample = sampling::Running::default();
    for t in reactors {
        txn.merge(t);
        per_sample.merge(&t.backlog_per_sample);
    }
    let open = cfg.pacing == Pacing::Open;
    PacingResult {
        mode: cfg.pacing,
        arrivals: open.then_some(cfg.arrivals),
        late_threshold_ms: workload::open::LATE_AFTER.as_secs_f64() * 1e3,
        transactions_arrived: txn.arrived,
        transactions_started: txn.started,
        transactions_late: txn.late,
        transactions_dropped: txn.dropped,
        backlog_max: txn.backlog_max,
        backlog_max_per_sample: per_sample.amm(),
        transaction_latency_ms: pct(txn.service.percentiles()),
        latency_from_arrival_ms: pct(txn.from_arrival.percentiles()),
    }
}

/// The `errors[]` entries of the damaged pages: per instance, each page named (the first
/// `verify::NAMED_PAGES`), then one entry per class counting the rest, so the counts of a class
/// sum to its total in `integrity`.
fn integrity_errors(dbs: &[Database], at: &str) -> Vec<ErrorEntry> {
    let mut out = Vec::new();
    for inst in dbs {
        let (name, path) = (&inst.spec.name, &inst.spec.db_path);
        out.extend(inst.damage.entries(name, path));
        let g = &inst.integrity;
        let checksum = g
            .bad_pages
            .saturating_sub(g.unwritten_pages)
            .saturating_sub(g.wrong_database_pages);
        // Pages counted but not recorded one by one (soft recovery's beyond the named ones).
        for (class, total) in [
            (ErrorClass::BadPage, checksum),
            (ErrorClass::UnwrittenPage, g.unwritten_pages),
            (ErrorClass::WrongDatabasePage, g.wrong_database_pages),
            (ErrorClass::CorrectablePage, g.correctable_pages),
            (ErrorClass::WrongPageNumber, g.wrong_page_number_pages),
            (ErrorClass::StalePage, g.stale_pages),
            (ErrorClass::PatchedPage, g.patched_pages),
        ] {
            let more = total.saturating_sub(inst.damage.count_of(&class));
            if more > 0 {
                out.push(ErrorEntry {
                    class: class.clone(),
                    instance: Some(name.clone()),
                    count: more,
                    first_at: at.to_string(),
                    message: format!("{more} {class} pages in {}", path.display()),
                    ..crate::errors::located(Some(path), None, true)
                });
            }
        }
    }
    out
}

/// This machine's name (for results).
pub fn hostname() -> String {
    std::fs::read_to_string("/proc/sys/kernel/hostname")
        .or_else(|_| std::fs::read_to_string("/etc/hostname"))
        .map(|s| s.trim().to_string())
        .ok()
        .filter(|s| !s.is_empty())
        .or_else(|| std::env::var("HOSTNAME").ok())
        // Windows names the computer in the environment.
        .or_else(|| std::env::var("COMPUTERNAME").ok())
        .unwrap_or_else(|| "unknown".into())
}

/// The kernel's release (`uname -r`; empty where there is none to read).
pub fn kernel_release() -> String {
    std::fs::read_to_string("/proc/sys/kernel/osrelease")
        .map(|s| s.trim().to_string())
        .unwrap_or_default()
}

/// A histogram's summary in the result model's type (`mbx_io` mirrors it).
pub(crate) fn pct(p: mbx_io::Percentiles) -> Percentiles {
    Percentiles {
        avg: p.avg,
        p50: p.p50,
        p90: p.p90,
        p99: p.p99,
        p999: p.p999,
        max: p.max,
    }
}

pub(crate) fn wall(at: Instant, ref_instant: Instant, ref_wall: std::time::SystemTime) -> String {
    let t = if at >= ref_instant {
        ref_wall + (at - ref_instant)
    } else {
        ref_wall - (ref_instant - at)
    };
    rfc3339(t)
}
