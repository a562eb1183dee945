//! find-max: the largest mailbox count, at the profile's IOPS per mailbox, whose load passes
//! every threshold, on the same databases. A ramp from the profile's count (doubling while
//! steps pass, halving while they fail) then a bisection to within a resolution, each step a
//! short measured run ([`Plan::search_step`]) at that count's target; then the answer is
//! confirmed by a run three steps long (backing off 5% while a confirmation fails). The curve
//! (achieved IOPS and latency percentiles at every step) is the evidence.
//!
//! The databases stay as prepared (sized for the profile's mailboxes): a step stands for `m`
//! mailboxes by its target, `m` x IOPS per mailbox, spread over the same pages. The sessions of
//! a step are the configuration's `threads`, or as many as Little's law asks at the read
//! and log latency the steps so far measured near that load, with twice the headroom
//! ([`sessions_for`]); before any step has measured, as many as the read-latency threshold
//! would ask (one per [`IOPS_PER_SESSION`]). More sessions than the load needs are not free:
//! each holds cache frames for its transaction, and 1,024 sessions on a device carrying
//! 30,000 IOPS at 3 ms ran the caches out of free frames whenever the device paused
//! (bench/results/findmax-2026-11-23T044738Z), a failure of the tool's sizing, not of the
//! storage.

use std::sync::atomic::AtomicBool;

use mbx_config::{RunConfig, MAX_TARGET_IOPS, MAX_THREADS};

use crate::plan::Plan;
use crate::result::{FindMax, RunResult, SearchStep};
use crate::search::{Direction, Search, SearchSpec};
use crate::tune::{drive, outcome, step_of, Driver, StepObserver, StepRunner};
use crate::{EngineError, Observer, RunEvent};

/// Target IOPS one session is given before a step has measured the read latency: a session at
/// the 20 ms read-latency threshold, with about 2.5 reads per transaction done one after the
/// other plus the writes they cause, carries about 50; half that leaves room.
pub const IOPS_PER_SESSION: f64 = 25.0;

/// Headroom over Little's law: a step gets sessions for twice the load at the latency measured
/// (latency grows with load between steps, and a session also waits for commits).
pub const SESSION_HEADROOM: f64 = 2.0;

/// The least latency sessions are sized for, seconds (a quarter of the 20 ms read threshold):
/// a device answering in 0.3 ms still pauses, and sessions sized for 1 ms (16 at 8,000 IOPS)
/// fell behind their target whenever this machine's disk had 100 ms pauses, capping the answer
/// at 6,650 mailboxes where +10% passed too (findmax-2026-11-23T081952Z).
pub const MIN_SIZING_LATENCY_S: f64 = 0.005;

/// How a find-max search runs.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct FindMaxSpec {
    /// Most steps.
    pub max_steps: usize,
    /// The search ends when its bracket is at most this fraction of the answer wide.
    pub resolution: f64,
    /// Longest search, seconds.
    pub max_s: f64,
    /// Confirmation runs: the answer is run again for [`CONFIRM_LENGTHS`] step lengths until
    /// [`CONFIRM_PASSES`] runs in a row pass; one that fails moves the answer down by
    /// [`CONFIRM_BACKOFF`] and confirms again, at most this many
    /// times (0: no confirmation).
    pub confirmations: usize,
}

/// A confirmation run lasts this many step lengths.
pub const CONFIRM_LENGTHS: f64 = 3.0;
/// Confirmation runs in a row that must pass at the answer. One was not enough on this
/// machine's disk, whose capacity moves by several percent from minute to minute: a 60 s
/// confirmation at 38,000 passed and a 60 s run right after it failed
/// (bench/results/findmax-2026-11-23T074312Z).
pub const CONFIRM_PASSES: usize = 2;
/// A failed confirmation moves the answer down by this fraction.
pub const CONFIRM_BACKOFF: f64 = 0.05;

impl Default for FindMaxSpec {
    fn default() -> Self {
        FindMaxSpec {
            max_steps: 12,
            resolution: 0.02,
            max_s: 4.0 * 3600.0,
            confirmations: 3,
        }
    }
}

/// The share of a log write's latency a session waits per transactional I/O: it waits for its
/// durable commits only, about one transaction in four (70% of commits are lazy and read-only
/// transactions commit nothing; the engine logs about 0.27 durable commits per transaction of
/// ~2.5 I/Os), so a quarter is twice the wait. Counting the whole log latency gave 600 sessions
/// at 36,000 IOPS where 232 had passed, and they stalled (findmax-2026-11-23T080054Z).
pub const LOG_WAIT_SHARE: f64 = 0.25;

/// The latency, seconds, a session waits per transactional I/O to size a step at `target_iops`
/// for, from the steps run so far: database read average plus [`LOG_WAIT_SHARE`] of the log
/// write average (a session waits for its reads one after the other and for its durable
/// commits) of the latest step with the
/// largest target at or below it (latency grows with load: the headroom covers the rest), else
/// of the one with the smallest target above it, among the steps that passed (a failed step's
/// latency may be an overloaded device's, which more sessions only lengthen), else among all;
/// none before a step has measured reads.
pub fn sizing_latency_s(target_iops: f64, seen: &[SearchStep]) -> Option<f64> {
    let measured = || {
        seen.iter()
            .filter(|s| s.db_read_avg_ms.is_finite() && s.db_read_avg_ms > 0.0)
    };
    let s = nearest(target_iops, measured().filter(|s| s.pass))
        .or_else(|| nearest(target_iops, measured()))?;
    let log = if s.log_write_avg_ms.is_finite() {
        s.log_write_avg_ms.max(0.0)
    } else {
        0.0
    };
    Some((s.db_read_avg_ms + LOG_WAIT_SHARE * log) / 1000.0)
}

/// Of `steps`, the latest with the largest target at or below `target_iops`, else the first
/// with the smallest target above it.
fn nearest<'a>(
    target_iops: f64,
    steps: impl Iterator<Item = &'a SearchStep> + Clone,
) -> Option<&'a SearchStep> {
    let below = steps.clone().filter(|s| s.target_iops <= target_iops).fold(
        None::<&SearchStep>,
        |best, s| match best {
            Some(b) if b.target_iops > s.target_iops => Some(b),
            _ => Some(s),
        },
    );
    below.or_else(|| {
        steps.fold(None::<&SearchStep>, |best, s| match best {
            Some(b) if b.target_iops <= s.target_iops => Some(b),
            _ => Some(s),
        })
    })
}

/// The sessions of a find-max step at `target_iops`, given the steps run so far: the
/// configuration's `threads`; else Little's law with [`SESSION_HEADROOM`] at the read latency
/// they measured near this load ([`sizing_latency_s`], at least [`MIN_SIZING_LATENCY_S`], at
/// most the read threshold); before any measurement, at the read threshold (one session per
/// [`IOPS_PER_SESSION`] with the default 20 ms). At least 4 per database.
pub fn sessions_for(cfg: &RunConfig, target_iops: f64, seen: &[SearchStep]) -> u32 {
    if cfg.threads > 0 {
        return cfg.threads;
    }
    let least = cfg
        .profile
        .databases
        .saturating_mul(4)
        .clamp(1, MAX_THREADS);
    let threshold_s = cfg.thresholds.db_read_avg_ms / 1000.0;
    let per_session = match sizing_latency_s(target_iops, seen) {
        Some(l) if threshold_s.is_finite() && threshold_s > MIN_SIZING_LATENCY_S => {
            1.0 / (SESSION_HEADROOM * l.clamp(MIN_SIZING_LATENCY_S, threshold_s))
        }
        _ => IOPS_PER_SESSION,
    };
    let want = (target_iops / per_session).ceil();
    if want.is_finite() && want > 0.0 {
        (want.min(f64::from(MAX_THREADS)) as u32).clamp(least, MAX_THREADS)
    } else {
        least
    }
}

/// The configuration of a find-max step standing for `mailboxes` mailboxes: the target
/// `mailboxes` x IOPS per mailbox on the profile's databases (same mailbox count and size),
/// measured for the tuning step's length, its sessions sized from the steps `seen` so far.
pub fn step_config(cfg: &RunConfig, mailboxes: u64, seen: &[SearchStep]) -> RunConfig {
    let target = mailboxes as f64 * cfg.profile.iops_per_mailbox;
    // The databases' mailboxes only slice their pages: a target above the most IOPS per
    // mailbox they take is spread over more slices (as the throughput search does), so the
    // search is not stopped by the slicing of databases sized for fewer mailboxes.
    let mut c = iops_config(cfg, target);
    c.threads = sessions_for(cfg, target, seen);
    c.duration_s = cfg.tuning.step_for(cfg.duration_s);
    c
}

/// The mailboxes a target stands for at `ipm` IOPS per mailbox.
fn mailboxes_of(target_iops: f64, ipm: f64) -> u64 {
    if ipm > 0.0 && target_iops.is_finite() && target_iops >= 0.0 {
        (target_iops / ipm).round().min(u64::MAX as f64) as u64
    } else {
        0
    }
}

/// What find-max found, and the last step's result (for a caller that reports it).
#[derive(Debug)]
pub struct Found {
    /// The record (find-max.json).
    pub find_max: FindMax,
    /// The last step's result.
    pub last: Option<RunResult>,
}

/// What a find-max search runs on.
struct Ctx<'a, 'r> {
    cfg: &'a RunConfig,
    spec: FindMaxSpec,
    observer: &'a mut dyn Observer,
    cancel: &'a AtomicBool,
    clock: &'a dyn mbx_io::Clock,
    run_step: &'a mut StepRunner<'r>,
    /// When the search began (wall clock, and the clock's instant).
    started: std::time::SystemTime,
    started_at: std::time::Instant,
    /// IOPS per mailbox.
    ipm: f64,
}

/// Runs find-max for `cfg` (its profile's mailboxes are where the ramp starts).
pub fn find_max(
    cfg: &RunConfig,
    spec: FindMaxSpec,
    observer: &mut dyn Observer,
    cancel: &AtomicBool,
    clock: &dyn mbx_io::Clock,
    run_step: &mut StepRunner<'_>,
) -> Result<Found, EngineError> {
    let ipm = cfg.profile.iops_per_mailbox;
    let mut ctx = Ctx {
        cfg,
        spec,
        observer,
        cancel,
        clock,
        run_step,
        started: clock.wall(),
        started_at: clock.now(),
        ipm,
    };
    let driven = search(&mut ctx)?;
    let mut steps = driven.steps;
    // A step stands for the mailboxes its target is, not the databases' mailbox count.
    for s in &mut steps {
        s.mailboxes = mailboxes_of(s.target_iops, ipm);
    }
    let mut end = driven.end.to_string();
    let stop_message = driven.stop_message;
    // Steps cut short by an interruption: no try (neither a pass nor a failure).
    let mut cut_short: Vec<usize> = Vec::new();
    if end == "interrupted" && !steps.is_empty() {
        cut_short.push(steps.len() - 1);
    }
    let confirmation = if spec.confirmations > 0 && end != "interrupted" && end != "error" {
        // A short step that passed near the edge may have been lucky: confirm the answer with
        // a longer run at it, backing off until one holds.
        let mut c = Confirming {
            steps: &mut steps,
            cut_short: &mut cut_short,
            end: &mut end,
            search_s: driven.elapsed_s,
        };
        confirm(&mut ctx, &mut c, driven.answer)
    } else if spec.confirmations == 0 {
        Some("no confirmation runs".into())
    } else {
        Some(format!(
            "the search ended before its confirmation ({end}{})",
            stop_message
                .as_deref()
                .map(|m| format!(": {m}"))
                .unwrap_or_default()
        ))
    };
    let find_max = record(&mut ctx, steps, &cut_short, end, confirmation, stop_message);
    Ok(Found {
        find_max,
        last: driven.last,
    })
}

/// The search's steps, from the profile's mailboxes up (or down) to the largest count that
/// passes.
fn search(ctx: &mut Ctx<'_, '_>) -> Result<crate::tune::Driven, EngineError> {
    let (cfg, spec, ipm) = (ctx.cfg, ctx.spec, ctx.ipm);
    let max = if ipm > 0.0 {
        (MAX_TARGET_IOPS / ipm).floor().min(u64::MAX as f64) as u64
    } else {
        1
    };
    let mut search = Search::new(SearchSpec {
        direction: Direction::LargestPassing,
        start: cfg.profile.mailboxes,
        min: 1,
        max,
        growth: 2.0,
        resolution: spec.resolution,
        max_steps: spec.max_steps,
    });
    ctx.observer.on_search_line(&starting_line(cfg, spec, ipm));
    drive(
        Driver {
            search: &mut search,
            max_s: spec.max_s,
            config: &|m, seen| {
                let c = step_config(cfg, m, seen);
                let sessions = c.threads;
                (c, sessions)
            },
            prefix: &|i, m| format!("find-max step {i} ({m} mailboxes): "),
            line: &|s| {
                format!(
                    "{} mailboxes ({} sessions) have {}",
                    mailboxes_of(s.target_iops, ipm),
                    s.sessions,
                    step_figures(s)
                )
            },
            kept_up_passes: false,
            errors_end_search: true,
            announce: Some(&|i, m, elapsed_s, last_s| {
                let left = spec.max_steps.saturating_sub(i.saturating_sub(1));
                match last_s {
                    Some(step_s) => format!(
                        "find-max: step {i} of at most {} ({m} mailboxes) is starting, {:.0} s into the search; at most about {:.0} s left ({left} steps and {CONFIRM_PASSES} confirmation runs of {CONFIRM_LENGTHS} steps, at {:.0} s a step).",
                        spec.max_steps,
                        elapsed_s,
                        (left as f64 + CONFIRM_PASSES as f64 * CONFIRM_LENGTHS) * step_s,
                        step_s
                    ),
                    None => format!(
                        "find-max: step {i} of at most {} ({m} mailboxes) is starting.",
                        spec.max_steps
                    ),
                }
            }),
        },
        &mut *ctx.observer,
        ctx.cancel,
        ctx.clock,
        &mut *ctx.run_step,
    )
}

/// What a search step measured, for its test-log line: "actual ... IOPS (target IOPS: ...),
/// database reads ... ms average, ... ms p99: passed." (find-max and the throughput search).
fn step_figures(s: &SearchStep) -> String {
    format!(
        "actual {:.1} IOPS (target IOPS: {:.1}), database reads {:.2} ms average, {:.2} ms p99: {}.",
        s.achieved_iops,
        s.target_iops,
        s.db_read_avg_ms,
        s.db_read_p99_ms,
        outcome(s)
    )
}

/// find-max's first test-log line: where the ramp starts and how it steps.
fn starting_line(cfg: &RunConfig, spec: FindMaxSpec, ipm: f64) -> String {
    format!(
    "find-max is starting: from {} mailboxes x {} IOPS, steps of {} measured after read latency is stable, at most {} steps, to within {:.0}%.",
    cfg.profile.mailboxes,
    ipm,
    crate::step_secs(cfg.tuning.step_for(cfg.duration_s)),
    spec.max_steps,
    spec.resolution * 100.0
)
}

/// The confirmation runs' record: the steps so far (confirmations are added), the steps an
/// interruption cut short, how the search ended, and how long its steps took.
struct Confirming<'a> {
    steps: &'a mut Vec<SearchStep>,
    cut_short: &'a mut Vec<usize>,
    end: &'a mut String,
    /// Seconds the search's own steps took.
    search_s: f64,
}

/// How one confirmation run went.
enum Confirmed {
    Passed,
    Failed,
    /// The confirmations end here: why, and how the search ends.
    Stopped(String, &'static str),
}

/// Confirms `candidate` with longer runs, backing off after each failure until one holds
/// [`CONFIRM_PASSES`] times in a row; returns why the answer is not confirmed, if it is not.
fn confirm(
    ctx: &mut Ctx<'_, '_>,
    c: &mut Confirming<'_>,
    candidate: Option<u64>,
) -> Option<String> {
    let mut candidate = candidate;
    let mut confirmation = None;
    let (mut tries, mut failures, mut passes) = (0, 0, 0);
    let mut failed_at: Vec<u64> = Vec::new();
    while let Some(m) = candidate {
        if failures == ctx.spec.confirmations {
            *c.end = "unconfirmed".into();
            confirmation = Some(format!(
                "{} confirmation runs failed (at {})",
                failures,
                failed_at
                    .iter()
                    .map(u64::to_string)
                    .collect::<Vec<_>>()
                    .join(", ")
            ));
            break;
        }
        tries += 1;
        match confirmation_run(ctx, c, tries, m, passes) {
            Confirmed::Passed => {
                passes += 1;
                if passes == CONFIRM_PASSES {
                    break;
                }
                continue;
            }
            Confirmed::Stopped(why, end) => {
                confirmation = Some(why);
                *c.end = end.into();
                break;
            }
            Confirmed::Failed => {}
        }
        failures += 1;
        failed_at.push(m);
        passes = 0;
        let lower = ((m as f64) * (1.0 - CONFIRM_BACKOFF)).floor() as u64;
        candidate = (lower >= 1 && lower < m).then_some(lower);
        if candidate.is_none() {
            confirmation = Some(format!(
                "its confirmation at {m} failed, and no lower count is left"
            ));
        }
    }
    confirmation
}

/// Confirmation `tries` at `m` mailboxes, `passes` in a row so far: a step of
/// [`CONFIRM_LENGTHS`] search steps, added to the steps.
fn confirmation_run(
    ctx: &mut Ctx<'_, '_>,
    k: &mut Confirming<'_>,
    tries: usize,
    m: u64,
    passes: usize,
) -> Confirmed {
    let mut c = step_config(ctx.cfg, m, &*k.steps);
    c.duration_s *= CONFIRM_LENGTHS;
    let so_far = ctx
        .clock
        .now()
        .saturating_duration_since(ctx.started_at)
        .as_secs_f64();
    let step_s = if k.steps.is_empty() {
        0.0
    } else {
        k.search_s / k.steps.len() as f64
    };
    ctx.observer.on_search_line(&format!(
        "find-max: confirmation {tries} ({m} mailboxes, {} of {CONFIRM_PASSES} in a row to pass) is starting, {so_far:.0} s into the search; about {:.0} s for this run.",
        passes + 1,
        step_s * CONFIRM_LENGTHS
    ));
    if let Err((key, why)) = c.validate() {
        return Confirmed::Stopped(
            format!("confirming {m} is outside the run's limits ({key}: {why})"),
            "limit",
        );
    }
    let plan = Plan::search_step(&c);
    let mut obs = StepObserver {
        inner: &mut *ctx.observer,
        prefix: format!("find-max confirmation {tries} ({m} mailboxes): "),
    };
    let r = match (ctx.run_step)(&c, &plan, &mut obs) {
        Ok(r) => r,
        Err(e) => {
            return Confirmed::Stopped(
                format!("confirmation {tries} at {m} met an error: {e}"),
                "error",
            )
        }
    };
    let mut step = step_of(&r, c.threads);
    step.mailboxes = m;
    step.confirmation = true;
    let pass = step.pass;
    ctx.observer
        .on_event(RunEvent::Log(&confirmation_line(m, c.duration_s, &step)));
    k.steps.push(step);
    if r.stopped.reason == crate::result::StopReason::Interrupted
        || ctx.cancel.load(std::sync::atomic::Ordering::Relaxed)
    {
        k.cut_short.push(k.steps.len() - 1);
        return Confirmed::Stopped(
            format!(
                "interrupted during confirmation {} of {CONFIRM_PASSES} at {m}",
                passes + 1
            ),
            "interrupted",
        );
    }
    if pass {
        Confirmed::Passed
    } else {
        Confirmed::Failed
    }
}

/// The test-log line of a confirmation run of `duration_s` at `m` mailboxes.
fn confirmation_line(m: u64, duration_s: f64, step: &SearchStep) -> String {
    format!(
    "find-max confirmation: {m} mailboxes for {:.0} s have actual {:.1} IOPS (target IOPS: {:.1}), database reads {:.2} ms average: {}.",
    duration_s,
    step.achieved_iops,
    step.target_iops,
    step.db_read_avg_ms,
    outcome(step)
)
}

/// The find-max record of the steps run, and its closing line logged.
fn record(
    ctx: &mut Ctx<'_, '_>,
    steps: Vec<SearchStep>,
    cut_short: &[usize],
    end: String,
    confirmation: Option<String>,
    stop_message: Option<String>,
) -> FindMax {
    let (cfg, spec, ipm, clock) = (ctx.cfg, ctx.spec, ctx.ipm, ctx.clock);
    let (started, started_at) = (ctx.started, ctx.started_at);
    // The answer is what was measured: the largest count that passed every try of it.
    let answer = largest_passing(&steps, cut_short);
    let required = CONFIRM_PASSES as u32;
    let passed_at = |m: u64| {
        steps
            .iter()
            .enumerate()
            .filter(|(i, s)| !cut_short.contains(i) && s.confirmation && s.pass && s.mailboxes == m)
            .count() as u32
    };
    let confirmation = answer.map(|m| {
        let passed = passed_at(m);
        let confirmed = spec.confirmations > 0 && passed >= required;
        mbx_result::Confirmation {
            passed,
            required,
            confirmed,
            why: (!confirmed).then(|| {
                confirmation.clone().unwrap_or_else(|| {
                    format!("{passed} of {required} confirmation runs passed at {m}")
                })
            }),
        }
    });
    // The whole search, confirmations included.
    let elapsed_s = clock
        .now()
        .saturating_duration_since(started_at)
        .as_secs_f64();
    let lower_bound = answer.is_some_and(|m| lower_bound(&steps, m));
    let mut record = FindMax {
        schema: crate::result::FIND_MAX_SCHEMA.into(),
        machine: crate::assemble::hostname(),
        tool_version: env!("CARGO_PKG_VERSION").into(),
        start: crate::rfc3339(started),
        mailboxes: answer,
        iops: answer.map(|m| m as f64 * ipm),
        iops_per_mailbox: ipm,
        steps,
        end,
        elapsed_s,
        lower_bound,
        confirmation,
        stop_message,
        config: cfg.clone(),
    };
    let line = closing_line(&record, answer, ipm, elapsed_s);
    record.elapsed_s = elapsed_s;
    ctx.observer.on_search_line(&line);
    record
}

/// find-max's last test-log line: the answer `answer` (at `ipm` IOPS per mailbox), how the
/// search ended, its steps and `elapsed_s`.
fn closing_line(record: &FindMax, answer: Option<u64>, ipm: f64, elapsed_s: f64) -> String {
    match (record.answer_words(), answer) {
        (Some(words), Some(m)) => format!(
            "find-max: {words}: {m} mailboxes ({:.1} IOPS) passed every threshold ({}, {} steps, {:.0} s).",
            m as f64 * ipm,
            record.end,
            record.steps.len(),
            elapsed_s
        ),
        _ => format!(
            "find-max: no mailbox count passed ({}, {} steps).",
            record.end,
            record.steps.len()
        ),
    }
}

/// The largest count at which some step passed and every step that ran to its end passed
/// (`cut_short`: indexes of steps an interruption ended, which are no try).
fn largest_passing(steps: &[SearchStep], cut_short: &[usize]) -> Option<u64> {
    let tries = || {
        steps
            .iter()
            .enumerate()
            .filter(|(i, _)| !cut_short.contains(i))
            .map(|(_, s)| s)
    };
    tries()
        .filter(|s| s.pass)
        .map(|s| s.mailboxes)
        .filter(|&m| tries().all(|s| s.mailboxes != m || s.pass))
        .max()
}

/// Whether `answer` is only a lower bound: no step (search or confirmation) above it failed.
fn lower_bound(steps: &[SearchStep], answer: u64) -> bool {
    !steps.iter().any(|s| !s.pass && s.mailboxes > answer)
}

/// The configuration of a test at `target_iops` transactional IOPS on the configuration's
/// databases: the mailboxes kept (they only slice the pages into regions) unless the target
/// would need more than [`mbx_config::MAX_IOPS_PER_MAILBOX`] each, then just enough mailboxes.
pub fn iops_config(cfg: &RunConfig, target_iops: f64) -> RunConfig {
    let mut c = cfg.clone();
    let least = (target_iops / mbx_config::MAX_IOPS_PER_MAILBOX).ceil();
    if least.is_finite() && least > c.profile.mailboxes as f64 {
        c.profile.mailboxes = (least as u64).min(mbx_config::MAX_MAILBOXES);
    }
    c.profile.iops_per_mailbox = target_iops / c.profile.mailboxes.max(1) as f64;
    c
}

/// What [`find_max_iops`] found.
#[derive(Debug)]
pub struct FoundIops {
    /// The largest passing target, whole transactional IOPS (none when no target passed, or
    /// after an interruption or an error).
    pub iops: Option<u64>,
    /// The steps, in the order they ran (each step's `mailboxes` is the databases' slicing).
    pub steps: Vec<crate::result::SearchStep>,
    /// "converged", "bound", "steps", "time", "interrupted" or "error".
    pub end: &'static str,
    /// Seconds the search took, on the steps' clock.
    pub elapsed_s: f64,
    /// The last step's result.
    pub last: Option<RunResult>,
}

/// find-max in IOPS terms (the disk subsystem throughput test): the largest target
/// transactional IOPS that passes every threshold on the configuration's databases, by the same
/// ramp (from `start_iops`, doubling while steps pass) and bisection as [`find_max`], each step
/// a short measured run ([`Plan::search_step`](crate::Plan::search_step)) with its sessions
/// from [`sessions_for`].
pub fn find_max_iops(
    cfg: &RunConfig,
    spec: FindMaxSpec,
    start_iops: u64,
    observer: &mut dyn Observer,
    cancel: &AtomicBool,
    clock: &dyn mbx_io::Clock,
    run_step: &mut StepRunner<'_>,
) -> Result<FoundIops, EngineError> {
    let mut search = Search::new(SearchSpec {
        direction: Direction::LargestPassing,
        start: start_iops.clamp(1, MAX_TARGET_IOPS as u64),
        min: 1,
        max: MAX_TARGET_IOPS as u64,
        growth: 2.0,
        resolution: spec.resolution,
        max_steps: spec.max_steps,
    });
    observer.on_event(RunEvent::Log(&format!(
        "Searching for the maximum transactional IOPS: from {start_iops} IOPS, steps of {} measured after read latency is stable, at most {} steps, to within {:.0}%.",
        crate::step_secs(cfg.tuning.step_for(cfg.duration_s)),
        spec.max_steps,
        spec.resolution * 100.0
    )));
    let driven = drive(
        Driver {
            search: &mut search,
            max_s: spec.max_s,
            config: &|t, seen| {
                let mut c = iops_config(cfg, t as f64);
                c.threads = sessions_for(cfg, t as f64, seen);
                c.duration_s = cfg.tuning.step_for(cfg.duration_s);
                let sessions = c.threads;
                (c, sessions)
            },
            prefix: &|i, t| format!("throughput step {i} ({t} IOPS): "),
            line: &|s| format!("{} sessions have {}", s.sessions, step_figures(s)),
            kept_up_passes: false,
            errors_end_search: false,
            announce: None,
        },
        observer,
        cancel,
        clock,
        run_step,
    )?;
    Ok(FoundIops {
        iops: driven.answer,
        steps: driven.steps,
        end: driven.end,
        elapsed_s: driven.elapsed_s,
        last: driven.last,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn cfg() -> RunConfig {
        let mut c = RunConfig::default();
        c.profile.databases = 2;
        c.threads = 0;
        c
    }

    fn step(target_iops: f64, read_ms: f64) -> SearchStep {
        SearchStep {
            target_iops,
            db_read_avg_ms: read_ms,
            ..SearchStep::default()
        }
    }

    #[test]
    fn before_any_measurement_sessions_are_sized_at_the_read_threshold() {
        // 30,000 IOPS at the 20 ms threshold with twice the headroom: one per 25 IOPS.
        assert_eq!(sessions_for(&cfg(), 30_000.0, &[]), 1_200.min(MAX_THREADS));
        assert_eq!(sessions_for(&cfg(), 1_000.0, &[]), 40);
        // At least 4 per database.
        assert_eq!(sessions_for(&cfg(), 10.0, &[]), 8);
    }

    #[test]
    fn measured_latency_sizes_the_sessions_by_littles_law() {
        // 16,000 IOPS measured reads at 6 ms: 30,000 IOPS x 6 ms x 2 = 360 sessions, not the
        // 1,024 of one per 25 IOPS (which ran the caches out of frames on this machine).
        let seen = [step(2_000.0, 0.8), step(16_000.0, 6.0)];
        assert_eq!(sessions_for(&cfg(), 30_000.0, &seen), 360);
        // The nearest step at or below the target is the reference, not the one above.
        let seen = [step(16_000.0, 6.0), step(32_000.0, 15.0)];
        assert_eq!(sessions_for(&cfg(), 24_000.0, &seen), 288);
        // Below every step: the smallest target above is the reference.
        assert_eq!(sessions_for(&cfg(), 8_000.0, &seen), 96);
        // The latest of equal targets wins (a re-run replaces what it measured).
        let seen = [step(16_000.0, 6.0), step(16_000.0, 8.0)];
        assert_eq!(sessions_for(&cfg(), 16_000.0, &seen), 256);
    }

    #[test]
    fn passing_steps_are_the_reference_and_log_waits_count() {
        let pass = |t, ms| SearchStep {
            pass: true,
            ..step(t, ms)
        };
        // A failed 30,000 at 40 ms (an overloaded device) does not size a second run there:
        // the passing 16,000 at 6 ms does.
        let seen = [pass(16_000.0, 6.0), step(30_000.0, 40.0)];
        assert_eq!(sessions_for(&cfg(), 30_000.0, &seen), 360);
        // With no pass, failed steps are still a reference (nearest below).
        let seen = [step(16_000.0, 6.0), step(30_000.0, 40.0)];
        assert_eq!(sessions_for(&cfg(), 24_000.0, &seen), 288);
        // Durable commits wait for the log: 6 ms reads + a quarter of 8 ms log writes size for
        // 8 ms.
        let slow_log = SearchStep {
            log_write_avg_ms: 8.0,
            ..pass(16_000.0, 6.0)
        };
        assert_eq!(sessions_for(&cfg(), 30_000.0, &[slow_log]), 480);
    }

    #[test]
    fn sizing_latency_is_bounded_by_the_floor_and_the_threshold() {
        // 0.2 ms reads count as 5 ms; 80 ms reads as the 20 ms threshold (one per 25 IOPS).
        assert_eq!(sessions_for(&cfg(), 10_000.0, &[step(5_000.0, 0.2)]), 100);
        assert_eq!(sessions_for(&cfg(), 10_000.0, &[step(5_000.0, 80.0)]), 400);
        // Steps that measured no reads are not references.
        assert_eq!(sessions_for(&cfg(), 1_000.0, &[step(500.0, 0.0)]), 40);
        // A configured thread count is always used.
        let mut fixed = cfg();
        fixed.threads = 12;
        assert_eq!(sessions_for(&fixed, 30_000.0, &[step(16_000.0, 3.0)]), 12);
    }
}
