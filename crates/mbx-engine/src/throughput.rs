//! The disk subsystem throughput test (Jetstress's second category, `sizing = "capacity"`):
//! on databases sized from a percentage of the free space (the caller sizes them, see
//! `mbx_store::capacity`), first the maximum transactional IOPS that passes every threshold
//! ([`find_max_iops`]), then the test (Performance or Stress) held at `throughput_pct` of it.
//!
//! Running a step or the test is the caller's ([`StepRunner`]): real databases
//! (`runner::start` with a `throughput` request) or the simulated device in tests.

use std::sync::atomic::AtomicBool;

use mbx_config::{RunConfig, MIN_TARGET_IOPS};

use crate::findmax::{find_max_iops, iops_config, sessions_for, FindMaxSpec};
use crate::plan::Plan;
use crate::result::{RunResult, Throughput};
use crate::tune::StepRunner;
use crate::{EngineError, Observer, RunEvent};

/// How the databases were sized (measured by the caller before they were made ready).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Sized {
    /// Free bytes of the database volume(s).
    pub free_bytes: u64,
    /// Bytes of all database files.
    pub database_bytes: u64,
}

/// The target IOPS one step starts from when none is given: 100 per database (the search
/// doubles from it while steps pass).
pub const START_IOPS_PER_DATABASE: u64 = 100;

/// Where the search starts for `cfg`.
pub fn start_iops(cfg: &RunConfig) -> u64 {
    u64::from(cfg.profile.databases.max(1)).saturating_mul(START_IOPS_PER_DATABASE)
}

/// The target held for a maximum of `max_iops` at `throughput_pct` percent, at least
/// [`MIN_TARGET_IOPS`].
pub fn held_iops(max_iops: f64, throughput_pct: f64) -> f64 {
    (max_iops * throughput_pct / 100.0).max(MIN_TARGET_IOPS)
}

/// What the throughput test did: the record (whatever happened), and the held test's result or
/// the error that stopped it.
#[derive(Debug)]
pub struct ThroughputRun {
    /// `throughput` in result.json.
    pub record: Throughput,
    /// The held test's result (or, when no target passed, the last step's, saying why the test
    /// did not run), or the error that stopped the search or the test.
    pub outcome: Result<RunResult, EngineError>,
}

/// Runs the throughput test for `cfg` on databases sized as `sized` says: the search, then
/// the test `plan_for` builds at the held target.
#[allow(clippy::too_many_arguments)]
pub fn throughput(
    cfg: &RunConfig,
    spec: FindMaxSpec,
    sized: Sized,
    plan_for: &dyn Fn(&RunConfig) -> Plan,
    observer: &mut dyn Observer,
    cancel: &AtomicBool,
    clock: &dyn mbx_io::Clock,
    run: &mut StepRunner<'_>,
) -> ThroughputRun {
    let started = clock.wall();
    let mut record = Throughput {
        capacity_pct: cfg.capacity_pct,
        throughput_pct: cfg.throughput_pct,
        free_bytes: sized.free_bytes,
        database_bytes: sized.database_bytes,
        ..Throughput::default()
    };
    let found = match find_max_iops(cfg, spec, start_iops(cfg), observer, cancel, clock, run) {
        Ok(f) => f,
        Err(e) => {
            record.end = "error".into();
            return ThroughputRun {
                record,
                outcome: Err(e),
            };
        }
    };
    record.steps = found.steps;
    record.end = found.end.to_string();
    record.elapsed_s = found.elapsed_s;
    let max = match (found.iops, found.end) {
        (Some(m), end) if !matches!(end, "interrupted" | "error") => m as f64,
        _ => {
            let line = format!(
                "Throughput search: no target passed every threshold ({}, {} steps).",
                found.end,
                record.steps.len()
            );
            observer.on_event(RunEvent::Log(&line));
            let r = crate::assemble::search_not_run(
                cfg,
                started,
                clock.wall(),
                crate::assemble::NotRun {
                    last: found.last,
                    end: found.end,
                    steps: &record.steps,
                    what: "the throughput search",
                    record: "throughput",
                    check: "throughput_search",
                    found_nothing: "the throughput search found no target transactional IOPS down to 1 that passes every threshold on these databases (the steps are in `throughput`): the storage fails the thresholds at any load; check its latency (the steps show where it fails)".to_string(),
                },
            );
            return ThroughputRun {
                record,
                outcome: Ok(r),
            };
        }
    };
    let held = held_iops(max, cfg.throughput_pct);
    let mut c = iops_config(cfg, held);
    c.threads = sessions_for(cfg, held, &record.steps);
    record.max_iops = Some(max);
    record.held_iops = Some(held);
    record.sessions = Some(c.threads);
    let line = format!(
        "Throughput: the maximum is {max:.0} transactional IOPS ({}, {} steps, {:.0} s); holding {}% of it: {held:.1} IOPS with {} sessions.",
        found.end,
        record.steps.len(),
        found.elapsed_s,
        mbx_config::show_number(cfg.throughput_pct),
        c.threads
    );
    observer.on_event(RunEvent::Log(&line));
    let plan = plan_for(&c);
    let outcome = run(&c, &plan, observer).map(|mut r| {
        r.notes.insert(
            0,
            format!(
                "Disk subsystem throughput test: databases from {}% of the free space (25% reserved for growth); the maximum found was {max:.0} transactional IOPS in {} steps; the test held {}% of it, {held:.1} IOPS.",
                mbx_config::show_number(cfg.capacity_pct),
                record.steps.len(),
                mbx_config::show_number(cfg.throughput_pct)
            ),
        );
        r
    });
    ThroughputRun { record, outcome }
}
