//! Several reactors (issue 11, "every core"): the databases partitioned among reactors on their
//! own threads, each on its own simulated queue and clock (`run_plan_reactors`). The threads
//! make the run not bit-for-bit repeatable (when a reactor done with a phase looks at the gate
//! depends on scheduling), so these tests assert what must hold whatever the interleaving: the
//! totals and the shape of the result against one reactor, and that an error or an interruption
//! on one stops them all.

#[path = "support/simdb.rs"]
mod simdb;

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

use mbx_config::RunConfig;
use mbx_engine::result::{RunResult, Sample, StopReason};
use mbx_engine::{
    run_plan_reactors, EngineError, InstanceSpec, Observer, Phase, Plan, RunEvent, StartGate,
};
use mbx_io::sim::{Latency, LatencyModel, SimClock, SimDevice, SimQueue};
use mbx_io::{Clock, FaultKind, FaultRule, IoOp, IoQueue};

/// Data pages per database, each written at generation 1 as `prepare` would.
const PAGES: u64 = 1024;
const DATABASES: usize = 4;

fn spec(dev: &SimDevice, i: usize) -> InstanceSpec {
    simdb::database(
        dev,
        &format!("/sim/db/r{i}.edb"),
        40 + i as u64,
        PAGES,
        &format!("Instance.{}", i + 1),
        &format!("/sim/logs/{i}"),
    )
}

fn config() -> RunConfig {
    let mut cfg = RunConfig::default();
    cfg.profile.databases = DATABASES as u32;
    cfg.profile.mailboxes = DATABASES as u64 * PAGES / 32;
    cfg.profile.iops_per_mailbox = 400.0 / cfg.profile.mailboxes as f64;
    cfg.threads = 16;
    cfg.duration_s = 60.0;
    // 12 samples: more than the 6 the maximum-latency checks tolerate, so they judge.
    cfg.sample_interval_s = 5.0;
    cfg
}

/// Reads 2 ms and writes 1 ms on average, log writes 0.3 ms.
fn model() -> LatencyModel {
    let us = Duration::from_micros;
    LatencyModel::uniform(Latency {
        base: us(300),
        tail: us(700),
    })
    .reads(Latency {
        base: us(500),
        tail: us(1500),
    })
    .log_writes(Latency {
        base: us(200),
        tail: us(100),
    })
}

/// Keeps the samples and log lines; sets `cancel` at the first sample when asked to.
#[derive(Default)]
struct Seen<'a> {
    samples: Vec<Sample>,
    lines: Vec<String>,
    cancel_at_first_sample: Option<&'a AtomicBool>,
}

impl Observer for Seen<'_> {
    fn on_event(&mut self, e: RunEvent<'_>) {
        match e {
            RunEvent::Sample(s) => {
                self.samples.push(s.clone());
                if let Some(c) = self.cancel_at_first_sample {
                    c.store(true, Ordering::Relaxed);
                }
            }
            RunEvent::Log(l) => self.lines.push(l.to_string()),
            _ => {}
        }
    }
}

/// Runs the test on `reactors` reactors, each on its own simulated queue and clock (one
/// device); `faults(reactor)` are injected into that reactor's queue.
fn run(
    cfg: &RunConfig,
    reactors: usize,
    seen: &mut Seen<'_>,
    cancel: &AtomicBool,
    faults: &(dyn Fn(usize) -> Vec<FaultRule> + Sync),
) -> RunResult {
    let dev = SimDevice::new();
    let specs: Vec<_> = (0..DATABASES).map(|i| spec(&dev, i)).collect();
    let queue_for = |r: usize, depth: usize| -> Result<Box<dyn IoQueue>, EngineError> {
        let clock = Arc::new(SimClock::new());
        let q =
            SimQueue::new(dev.clone(), clock, depth, model(), 11 + r as u64).with_faults(faults(r));
        Ok(Box::new(q))
    };
    run_plan_reactors(
        cfg,
        &Plan::performance(cfg),
        specs,
        reactors,
        &queue_for,
        seen,
        cancel,
    )
    .expect("run")
}

fn plain(_: usize) -> Vec<FaultRule> {
    Vec::new()
}

#[test]
fn two_reactors_give_the_totals_and_the_shape_of_one() {
    let cfg = config();
    let target = cfg.target_iops();
    let mut results = Vec::new();
    for reactors in [1, 2] {
        let mut seen = Seen::default();
        let r = run(&cfg, reactors, &mut seen, &AtomicBool::new(false), &plain);
        let what = format!("{reactors} reactor(s): {:?} {:?}", r.stopped, r.verdict);
        assert_eq!(r.test.reactors as usize, reactors, "{what}");
        assert_eq!(r.stopped.reason, StopReason::Completed, "{what}");
        assert!(
            (r.achieved_iops - target).abs() <= 0.01 * target,
            "{what}: {:.1} IOPS for {target}",
            r.achieved_iops
        );
        // Every database has its row, in database order, each measured.
        let names: Vec<_> = r.instances.iter().map(|i| i.name.as_str()).collect();
        assert_eq!(
            names,
            ["Instance.1", "Instance.2", "Instance.3", "Instance.4"],
            "{what}"
        );
        for i in &r.instances {
            let t = &i.transactional;
            assert!(t.db_reads_per_s > 0.0 && t.db_writes_per_s > 0.0, "{what}");
            assert!(i.latency_ms.db_read.p50 > 0.0, "{what}");
        }
        // The total is the sum of the rows: counters summed, not averaged.
        let sum: f64 = r
            .instances
            .iter()
            .map(|i| i.transactional.db_reads_per_s + i.transactional.db_writes_per_s)
            .sum();
        assert!((sum - r.achieved_iops).abs() < 1e-6, "{what}");
        // Every sample covers every database, in database order; the merged samples' rates
        // add up to the target (12 samples of 5 s).
        assert_eq!(seen.samples.len(), 12, "{what}");
        for s in &seen.samples {
            let names: Vec<_> = s.instances.iter().map(|i| i.name.as_str()).collect();
            assert_eq!(
                names,
                ["Instance.1", "Instance.2", "Instance.3", "Instance.4"]
            );
        }
        let avg: f64 = seen
            .samples
            .iter()
            .flat_map(|s| &s.instances)
            .map(|i| i.db_reads_per_s + i.db_writes_per_s)
            .sum::<f64>()
            / seen.samples.len() as f64;
        assert!(
            (avg - target).abs() <= 0.03 * target,
            "{what}: samples {avg:.1}"
        );
        assert!(r.integrity.clean(), "{what}: {:?}", r.integrity);
        results.push(r);
    }
    // The same verdict shape: the same checks, passing alike.
    let checks = |r: &RunResult| {
        r.verdict
            .checks()
            .iter()
            .map(|c| (c.name.clone(), c.pass()))
            .collect::<Vec<_>>()
    };
    assert_eq!(checks(&results[0]), checks(&results[1]));
    assert!(results[1].verdict.pass(), "{:?}", results[1].verdict);
    // The worst database's average read latency is the verdict's, from the rows as measured.
    let worst = results[1]
        .instances
        .iter()
        .map(|i| i.transactional.db_read_avg_latency_ms)
        .fold(0.0, f64::max);
    assert_eq!(results[1].verdict.checks()[0].value, worst);
}

#[test]
fn an_error_on_one_reactor_stops_the_other() {
    let cfg = config();
    let mut seen = Seen::default();
    // EIO on one read of the second reactor's first database file, well into the run.
    let faults = |r: usize| {
        if r == 1 {
            vec![FaultRule::new(Some(IoOp::Read), FaultKind::Error(5))
                .on_file(0)
                .after(3000)
                .times(1)]
        } else {
            Vec::new()
        }
    };
    let r = run(&cfg, 2, &mut seen, &AtomicBool::new(false), &faults);
    assert_eq!(r.stopped.reason, StopReason::IoError, "{:?}", r.stopped);
    assert!(!r.verdict.pass());
    assert!(
        r.notes
            .iter()
            .any(|n| n.contains("Reactor 2 stopped with an error")),
        "{:?}",
        r.notes
    );
    // The first reactor did not run on: it was stopped and shut down, which is not a user's
    // interruption.
    assert!(!r.test.interrupted, "{:?}", r.test);
    assert_eq!(
        r.stopped.phase.as_deref(),
        Some("measure"),
        "{:?}",
        r.stopped
    );
    assert!(
        seen.lines
            .iter()
            .any(|l| l.starts_with("Stopped with another reactor")),
        "{:?}",
        seen.lines
    );
    assert!(
        !seen.lines.iter().any(|l| l.starts_with("Interrupted")),
        "{:?}",
        seen.lines
    );
    assert!(r.test.duration_s < cfg.duration_s, "{}", r.test.duration_s);
    assert_eq!(r.instances.len(), DATABASES);
}

#[test]
fn an_interruption_stops_every_reactor() {
    let cfg = config();
    let cancel = AtomicBool::new(false);
    let mut seen = Seen {
        cancel_at_first_sample: Some(&cancel),
        ..Seen::default()
    };
    let r = run(&cfg, 2, &mut seen, &cancel, &plain);
    assert_eq!(r.stopped.reason, StopReason::Interrupted, "{:?}", r.stopped);
    assert!(r.test.interrupted);
    for reactor in ["Interrupted", "Reactor 2/2: Interrupted"] {
        assert!(
            seen.lines.iter().any(|l| l.starts_with(reactor)),
            "{reactor}: {:?}",
            seen.lines
        );
    }
    // Both measured until they were stopped.
    for i in &r.instances {
        assert!(i.transactional.db_reads_per_s > 0.0, "{}", i.name);
    }
}

/// Keeps the phases it saw; interrupts the test when it enters the wait, when given `cancel`.
struct AtTheGate<'a> {
    cancel: Option<&'a AtomicBool>,
    phases: Vec<Phase>,
}

impl Observer for AtTheGate<'_> {
    fn on_event(&mut self, e: RunEvent<'_>) {
        if let RunEvent::Phase(p) = e {
            self.phases.push(p);
            if let (Phase::WaitStart, Some(c)) = (p, self.cancel) {
                c.store(true, Ordering::Relaxed);
            }
        }
    }
}

/// Seconds after the simulated clocks' start when the gate opens: well after attain and
/// settle.
const GATE_AT_S: f64 = 300.0;

/// A performance test on two reactors, its measured phase gated to `GATE_AT_S` on the
/// simulated wall clock.
fn gated(cancel: Option<&AtomicBool>) -> (RunResult, Vec<Phase>, f64) {
    let mut cfg = config();
    cfg.duration_s = 15.0;
    cfg.sample_interval_s = 2.0;
    let gate = StartGate::new();
    let epoch = SimClock::new()
        .wall()
        .duration_since(std::time::UNIX_EPOCH)
        .expect("sim epoch")
        .as_secs_f64();
    let opens = epoch + GATE_AT_S;
    assert!(gate.open_at(opens));
    let mut plan = Plan::performance(&cfg);
    assert!(plan.wait_for_start(Arc::clone(&gate)));
    let mut seen = AtTheGate {
        cancel,
        phases: Vec::new(),
    };
    let dev = SimDevice::new();
    let specs: Vec<_> = (0..DATABASES).map(|i| spec(&dev, i)).collect();
    let queue_for = |r: usize, depth: usize| -> Result<Box<dyn IoQueue>, EngineError> {
        let clock = Arc::new(SimClock::new());
        let q = SimQueue::new(dev.clone(), clock, depth, model(), 11 + r as u64);
        Ok(Box::new(q))
    };
    let never = AtomicBool::new(false);
    let r = run_plan_reactors(
        &cfg,
        &plan,
        specs,
        2,
        &queue_for,
        &mut seen,
        cancel.unwrap_or(&never),
    )
    .expect("run");
    (r, seen.phases, opens)
}

#[test]
fn a_start_gate_holds_every_reactor_until_its_wall_time() {
    let (r, phases, opens) = gated(None);
    assert_eq!(
        phases,
        [
            Phase::Attain,
            Phase::Settle,
            Phase::WaitStart,
            Phase::Measure,
            Phase::Shutdown
        ]
    );
    assert_eq!(r.stopped.reason, StopReason::Completed, "{:?}", r.stopped);
    // The measured phase began when the gate's wall time came (the gate is looked at every
    // 5 ms), on every reactor (the phase gate holds them together), and it is recorded.
    let start = r.test.collection_start_unix_s.expect("precise start");
    assert!(
        (0.0..0.01).contains(&(start - opens)),
        "measured from {start}, gate at {opens}"
    );
    assert!(
        (r.test.duration_s - 15.0).abs() < 0.1,
        "{}",
        r.test.duration_s
    );
    for i in &r.instances {
        assert!(i.transactional.db_reads_per_s > 0.0, "{}", i.name);
    }
}

#[test]
fn an_interruption_at_the_start_gate_measures_nothing() {
    let cancel = AtomicBool::new(false);
    let (r, phases, _) = gated(Some(&cancel));
    assert_eq!(r.stopped.reason, StopReason::Interrupted, "{:?}", r.stopped);
    assert!(!phases.contains(&Phase::Measure), "{phases:?}");
    assert_eq!(r.test.collection_start_unix_s, None);
}
