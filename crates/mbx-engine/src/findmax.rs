//! find-max: the largest mailbox count, at the profile's IOPS per mailbox, whose load passes
//! every threshold, on the same databases. A ramp from the profile's count (doubling while
//! steps pass, halving while they fail) then a bisection to within a resolution, each step a
//! short measured run ([`Plan::search_step`]) at that count's target; then the answer is
//! confirmed by a run three steps long (backing off 5% while a confirmation fails). The curve
//! (achieved IOPS and latency percentiles at every step) is the evidence.
//!
//! The databases stay as prepared (sized for the profile's mailboxes): a step stands for `m`
//! mailboxes by its target, `m` x IOPS per mailbox, spread over the same pages. The sessions of
//! a step are the configuration's `threads`, or enough for the target at the read-latency
//! threshold: one per [`IOPS_PER_SESSION`] of target, at least 4 per database.

use std::sync::atomic::AtomicBool;

use mbx_config::{RunConfig, MAX_TARGET_IOPS, MAX_THREADS};

use crate::plan::Plan;
use crate::result::{FindMax, RunResult};
use crate::search::{Direction, Search, SearchSpec};
use crate::tune::{drive, outcome, step_of, Driver, StepObserver, StepRunner};
use crate::{EngineError, Observer, RunEvent};

/// Target IOPS one session is given when find-max chooses the sessions: a session at the
/// 20 ms read-latency threshold, with about 2.5 reads per transaction done one after the other
/// plus the writes they cause, carries about 50; half that leaves room.
pub const IOPS_PER_SESSION: f64 = 25.0;

/// How a find-max search runs.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct FindMaxSpec {
    /// Most steps.
    pub max_steps: usize,
    /// The search ends when its bracket is at most this fraction of the answer wide.
    pub resolution: f64,
    /// Longest search, seconds.
    pub max_s: f64,
    /// Confirmation runs: the answer is run again for [`CONFIRM_LENGTHS`] step lengths; one that
    /// fails moves the answer down by [`CONFIRM_BACKOFF`] and confirms again, at most this many
    /// times (0: no confirmation).
    pub confirmations: usize,
}

/// A confirmation run lasts this many step lengths.
pub const CONFIRM_LENGTHS: f64 = 3.0;
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

/// The sessions of a find-max step at `target_iops`.
pub fn sessions_for(cfg: &RunConfig, target_iops: f64) -> u32 {
    if cfg.threads > 0 {
        return cfg.threads;
    }
    let least = cfg
        .profile
        .databases
        .saturating_mul(4)
        .clamp(1, MAX_THREADS);
    let want = (target_iops / IOPS_PER_SESSION).ceil();
    if want.is_finite() && want > 0.0 {
        (want.min(f64::from(MAX_THREADS)) as u32).clamp(least, MAX_THREADS)
    } else {
        least
    }
}

/// The configuration of a find-max step standing for `mailboxes` mailboxes: the target
/// `mailboxes` x IOPS per mailbox on the profile's databases (same mailbox count and size),
/// measured for the tuning step's length.
pub fn step_config(cfg: &RunConfig, mailboxes: u64) -> RunConfig {
    let mut c = cfg.clone();
    let target = mailboxes as f64 * cfg.profile.iops_per_mailbox;
    c.profile.iops_per_mailbox = target / cfg.profile.mailboxes.max(1) as f64;
    c.threads = sessions_for(cfg, target);
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
    let started = clock.wall();
    observer.on_event(RunEvent::Log(&format!(
        "find-max is starting: from {} mailboxes x {} IOPS, steps of {:.0} s measured after read latency is stable, at most {} steps, to within {:.0}%.",
        cfg.profile.mailboxes,
        ipm,
        cfg.tuning.step_for(cfg.duration_s),
        spec.max_steps,
        spec.resolution * 100.0
    )));
    let driven = drive(
        Driver {
            search: &mut search,
            max_s: spec.max_s,
            config: &|m| {
                let c = step_config(cfg, m);
                let sessions = c.threads;
                (c, sessions)
            },
            prefix: &|i, m| format!("find-max step {i} ({m} mailboxes): "),
            line: &|s| {
                format!(
                    "{} mailboxes ({} sessions) have actual {:.1} IOPS (target IOPS: {:.1}), database reads {:.2} ms average, {:.2} ms p99: {}.",
                    mailboxes_of(s.target_iops, ipm),
                    s.sessions,
                    s.achieved_iops,
                    s.target_iops,
                    s.db_read_avg_ms,
                    s.db_read_p99_ms,
                    outcome(s)
                )
            },
            kept_up_passes: false,
        },
        observer,
        cancel,
        clock,
        run_step,
    )?;
    let mut steps = driven.steps;
    // A step stands for the mailboxes its target is, not the databases' mailbox count.
    for s in &mut steps {
        s.mailboxes = mailboxes_of(s.target_iops, ipm);
    }
    let mut answer = driven.answer;
    let mut end = driven.end.to_string();
    // A short step that passed near the edge may have been lucky: confirm the answer with a
    // longer run at it, backing off until one holds.
    if spec.confirmations > 0 && end != "interrupted" && end != "error" {
        let mut tries = 0;
        while let Some(m) = answer {
            if tries == spec.confirmations {
                answer = None;
                end = "unconfirmed".into();
                break;
            }
            tries += 1;
            let mut c = step_config(cfg, m);
            c.duration_s *= CONFIRM_LENGTHS;
            let plan = Plan::search_step(&c);
            let mut obs = StepObserver {
                inner: observer,
                prefix: format!("find-max confirmation {tries} ({m} mailboxes): "),
            };
            let r = run_step(&c, &plan, &mut obs)?;
            let mut step = step_of(&r, c.threads);
            step.mailboxes = m;
            step.confirmation = true;
            let pass = step.pass;
            observer.on_event(RunEvent::Log(&format!(
                "find-max confirmation: {m} mailboxes for {:.0} s have actual {:.1} IOPS (target IOPS: {:.1}), database reads {:.2} ms average: {}.",
                c.duration_s,
                step.achieved_iops,
                step.target_iops,
                step.db_read_avg_ms,
                outcome(&step)
            )));
            steps.push(step);
            if r.stopped.reason == crate::result::StopReason::Interrupted
                || cancel.load(std::sync::atomic::Ordering::Relaxed)
            {
                answer = None;
                end = "interrupted".into();
                break;
            }
            if pass {
                break;
            }
            let lower = ((m as f64) * (1.0 - CONFIRM_BACKOFF)).floor() as u64;
            answer = (lower >= 1 && lower < m).then_some(lower);
        }
    }
    let line = match answer {
        Some(m) => format!(
            "find-max: {m} mailboxes ({:.1} IOPS) is the largest count that passed every threshold ({}, {} steps, {:.0} s).",
            m as f64 * ipm,
            end,
            steps.len(),
            driven.elapsed_s
        ),
        None => format!(
            "find-max: no mailbox count passed ({}, {} steps).",
            end,
            steps.len()
        ),
    };
    observer.on_event(RunEvent::Log(&line));
    Ok(Found {
        find_max: FindMax {
            schema: crate::result::FIND_MAX_SCHEMA.into(),
            machine: crate::hostname(),
            tool_version: env!("CARGO_PKG_VERSION").into(),
            start: crate::rfc3339(started),
            mailboxes: answer,
            iops: answer.map(|m| m as f64 * ipm),
            iops_per_mailbox: ipm,
            steps,
            end,
            elapsed_s: driven.elapsed_s,
            config: cfg.clone(),
        },
        last: driven.last,
    })
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
        "Searching for the maximum transactional IOPS: from {start_iops} IOPS, steps of {:.0} s measured after read latency is stable, at most {} steps, to within {:.0}%.",
        cfg.tuning.step_for(cfg.duration_s),
        spec.max_steps,
        spec.resolution * 100.0
    )));
    let driven = drive(
        Driver {
            search: &mut search,
            max_s: spec.max_s,
            config: &|t| {
                let mut c = iops_config(cfg, t as f64);
                c.threads = sessions_for(cfg, t as f64);
                c.duration_s = cfg.tuning.step_for(cfg.duration_s);
                let sessions = c.threads;
                (c, sessions)
            },
            prefix: &|i, t| format!("throughput step {i} ({t} IOPS): "),
            line: &|s| {
                format!(
                    "{} sessions have actual {:.1} IOPS (target IOPS: {:.1}), database reads {:.2} ms average, {:.2} ms p99: {}.",
                    s.sessions,
                    s.achieved_iops,
                    s.target_iops,
                    s.db_read_avg_ms,
                    s.db_read_p99_ms,
                    outcome(s)
                )
            },
            kept_up_passes: false,
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
