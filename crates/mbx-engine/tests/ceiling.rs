//! The engine's own ceiling (issue 11): a Performance run, unpaced in effect (a target far above
//! what it can reach), on a simulated device whose every I/O takes a fixed 100 us (zero would
//! freeze the simulated clock: nothing would ever be due later), with many sessions. It prints
//! the transactional I/Os of the measured phase per second of this thread's CPU: with the
//! simulator's work (the `SimQueue` and `SimDevice`, standing in for the kernel and the device),
//! and without it (the CPU spent inside the queue's calls is measured and taken off).
//! `bench/ceiling.sh` runs it in release and keeps the figures; the test itself asserts only that
//! the run is complete and correct (no timed assertion: the machine is shared). Unix only: it reads
//! the CPU clocks through rustix.
#![cfg(unix)]

#[path = "support/simdb.rs"]
mod simdb;

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;

use mbx_config::RunConfig;
use mbx_engine::result::StopReason;
use mbx_engine::{
    run_plan, run_plan_reactors, EngineError, InstanceSpec, Observer, Phase, Plan, RunEvent,
};
use mbx_io::sim::{Latency, LatencyModel, SimClock, SimDevice, SimQueue};
use mbx_io::{Clock, IoCompletion, IoError, IoQueue, IoRequest, OpenMode, QueueBase, Reap};

/// This thread's CPU time, at nanosecond resolution (the simulator's share is made of many
/// short calls; /proc's 10 ms ticks cannot measure them).
fn thread_cpu() -> Duration {
    let t = rustix::time::clock_gettime(rustix::time::ClockId::ThreadCPUTime);
    Duration::new(
        u64::try_from(t.tv_sec).unwrap_or(0),
        u32::try_from(t.tv_nsec).unwrap_or(0),
    )
}

/// The process's CPU time (every reactor's thread).
fn process_cpu() -> Duration {
    let t = rustix::time::clock_gettime(rustix::time::ClockId::ProcessCPUTime);
    Duration::new(
        u64::try_from(t.tv_sec).unwrap_or(0),
        u32::try_from(t.tv_nsec).unwrap_or(0),
    )
}

/// CPU time spent inside the simulated queues' calls, nanoseconds, all threads (run one test
/// at a time: `--exact`, as bench/ceiling.sh does, or the two would count each other's).
static SIM_NS: AtomicU64 = AtomicU64::new(0);

fn sim_cpu() -> Duration {
    Duration::from_nanos(SIM_NS.load(Ordering::Relaxed))
}

/// Runs `f`, adding its CPU time (its thread's) to [`SIM_NS`].
fn in_sim<T>(f: impl FnOnce() -> T) -> T {
    let t0 = thread_cpu();
    let r = f();
    let spent = thread_cpu().saturating_sub(t0);
    SIM_NS.fetch_add(
        u64::try_from(spent.as_nanos()).unwrap_or(u64::MAX),
        Ordering::Relaxed,
    );
    r
}

/// The simulated queue, its CPU time measured.
struct Timed(SimQueue);

impl IoQueue for Timed {
    fn submit(&mut self, req: IoRequest) -> Result<(), IoError> {
        in_sim(|| self.0.submit(req))
    }
    fn reap_for(&mut self, want: Reap, out: &mut Vec<IoCompletion>) -> Result<(), IoError> {
        in_sim(|| self.0.reap_for(want, out))
    }
    fn in_flight(&self) -> usize {
        self.0.in_flight()
    }
    fn base(&self) -> &QueueBase {
        self.0.base()
    }
    fn open_file(&mut self, path: &Path, mode: OpenMode) -> Result<usize, IoError> {
        in_sim(|| self.0.open_file(path, mode))
    }
    fn close_file(&mut self, index: usize) {
        in_sim(|| self.0.close_file(index))
    }
    fn remove_file(&mut self, path: &Path) -> Result<(), IoError> {
        in_sim(|| self.0.remove_file(path))
    }
    fn wait_removals(&mut self) -> Result<(), IoError> {
        in_sim(|| self.0.wait_removals())
    }
    fn file_len(&self, index: usize) -> Result<u64, IoError> {
        self.0.file_len(index)
    }
    fn file_path(&self, index: usize) -> PathBuf {
        self.0.file_path(index)
    }
    fn clock(&self) -> Arc<dyn Clock> {
        self.0.clock()
    }
}

/// CPU times (all, in the simulator) at the measured phase's start and end.
#[derive(Default)]
struct Marks {
    start: Option<(Duration, Duration)>,
    end: Option<(Duration, Duration)>,
}

impl Observer for Marks {
    fn on_event(&mut self, e: RunEvent<'_>) {
        if let RunEvent::Phase(p) = e {
            let now = (thread_cpu(), sim_cpu());
            if p == Phase::Measure {
                self.start = Some(now);
            } else if self.start.is_some() && self.end.is_none() {
                self.end = Some(now);
            }
        }
    }
}

/// Data pages per database, each written at generation 1 as `prepare` would.
const PAGES: u64 = 16384;

fn spec(dev: &SimDevice, i: usize) -> InstanceSpec {
    simdb::database(
        dev,
        &format!("/sim/db/ceiling{i}.edb"),
        90 + i as u64,
        PAGES,
        &format!("Instance.{}", i + 1),
        &format!("/sim/logs/{i}"),
    )
}

/// Sessions (`MBX_CEILING_SESSIONS`, default 64) on two databases.
#[test]
#[ignore = "a benchmark (half a minute in release): bench/ceiling.sh runs it"]
fn the_engine_ceiling_on_a_fast_simulated_device() {
    let sessions: u32 = std::env::var("MBX_CEILING_SESSIONS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(64);
    let dev = SimDevice::new();
    let mut cfg = RunConfig::default();
    cfg.profile.databases = 2;
    cfg.profile.mailboxes = 2 * PAGES / 32;
    // Far above what one thread reaches: the pacer never holds a session back.
    cfg.profile.iops_per_mailbox = 1e9 / cfg.profile.mailboxes as f64;
    cfg.threads = sessions;
    cfg.duration_s = std::env::var("MBX_CEILING_SECONDS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(0.05);
    cfg.sample_interval_s = 1.0;
    cfg.cache.max_dirty_age_s = 0.5;
    let specs = vec![spec(&dev, 0), spec(&dev, 1)];
    let clock = Arc::new(SimClock::new());
    let model = LatencyModel::uniform(Latency::fixed(Duration::from_micros(100)));
    let depth = mbx_engine::queue_depth(&cfg, 2);
    let queue = SimQueue::new(dev, clock, depth, model, 5);
    let mut marks = Marks::default();
    let r = run_plan(
        &cfg,
        &Plan::performance(&cfg),
        specs,
        Box::new(Timed(queue)),
        &mut marks,
        &AtomicBool::new(false),
    )
    .expect("run");
    // The target is out of reach on purpose: the verdict fails, the run is complete.
    assert!(
        matches!(
            r.stopped.reason,
            StopReason::Completed | StopReason::VerdictFailed
        ),
        "{:?}",
        r.stopped
    );
    assert!(r.integrity.clean(), "{:?}", r.integrity);
    let (Some((c0, s0)), Some((c1, s1))) = (marks.start, marks.end) else {
        panic!("no measured phase seen");
    };
    let cpu = c1.saturating_sub(c0).as_secs_f64();
    let sim = s1.saturating_sub(s0).as_secs_f64();
    let ios = r.achieved_iops * r.test.duration_s;
    eprintln!(
        "simulated: {:.3} s measured at {:.0} transactional IOPS, {:.0} page fault stalls/s",
        r.test.duration_s, r.achieved_iops, r.host.page_fault_stalls_per_s.avg
    );
    assert!(ios > 10_000.0, "{ios}");
    eprintln!(
        "ceiling: {sessions} sessions, 2 databases: {ios:.0} transactional I/Os in {cpu:.3} s CPU \
         ({sim:.3} s of it in the simulator): {:.0} transactional IOPS per core with the \
         simulator, {:.0} without it ({:.2} us of engine CPU per transactional I/O)",
        ios / cpu.max(1e-9),
        ios / (cpu - sim).max(1e-9),
        (cpu - sim) * 1e6 / ios.max(1.0)
    );
}

/// Wall time and process CPU (all threads; the simulator's part) at the measured phase's start
/// and end, as the caller's thread sees the phases (the reactors enter them together).
#[derive(Default)]
struct WallMarks {
    start: Option<(std::time::Instant, Duration, Duration)>,
    end: Option<(std::time::Instant, Duration, Duration)>,
}

impl Observer for WallMarks {
    fn on_event(&mut self, e: RunEvent<'_>) {
        if let RunEvent::Phase(p) = e {
            let now = (std::time::Instant::now(), process_cpu(), sim_cpu());
            if p == Phase::Measure {
                self.start = Some(now);
            } else if self.start.is_some() && self.end.is_none() {
                self.end = Some(now);
            }
        }
    }
}

/// The same run on 1 and on 2 reactors (`MBX_CEILING_REACTORS`, e.g. "1 2", the default), each
/// reactor on its own simulated device and queue: transactional I/Os of the measured phase per
/// second of wall time (the reactors run in parallel; the simulator's CPU included, it stands in
/// for the kernel and the device) and per second of the process's CPU without the simulator's.
#[test]
#[ignore = "a benchmark (a minute in release): bench/ceiling.sh runs it"]
fn the_engine_ceiling_with_several_reactors() {
    let sessions: u32 = std::env::var("MBX_CEILING_SESSIONS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(64);
    let counts: Vec<usize> = std::env::var("MBX_CEILING_REACTORS")
        .unwrap_or_else(|_| "1 2".into())
        .split_whitespace()
        .filter_map(|v| v.parse().ok())
        .collect();
    const DBS: usize = 2;
    for reactors in counts {
        let mut cfg = RunConfig::default();
        cfg.profile.databases = DBS as u32;
        cfg.profile.mailboxes = DBS as u64 * PAGES / 32;
        cfg.profile.iops_per_mailbox = 1e9 / cfg.profile.mailboxes as f64;
        cfg.threads = sessions;
        cfg.duration_s = std::env::var("MBX_CEILING_SECONDS")
            .ok()
            .and_then(|v| v.parse().ok())
            .unwrap_or(0.1);
        cfg.sample_interval_s = 1.0;
        cfg.cache.max_dirty_age_s = 0.5;
        // One device per reactor (a shared one would serialize them on its lock): database i
        // on the device of the reactor it goes to (consecutive databases per reactor).
        let devs: Vec<SimDevice> = (0..reactors).map(|_| SimDevice::new()).collect();
        let specs: Vec<_> = (0..DBS)
            .map(|i| spec(&devs[i * reactors / DBS], i))
            .collect();
        let model = LatencyModel::uniform(Latency::fixed(Duration::from_micros(100)));
        let queue_for = |r: usize, depth: usize| -> Result<Box<dyn IoQueue>, EngineError> {
            let q = SimQueue::new(
                devs[r].clone(),
                Arc::new(SimClock::new()),
                depth,
                model.clone(),
                5,
            );
            Ok(Box::new(Timed(q)))
        };
        let mut marks = WallMarks::default();
        let r = run_plan_reactors(
            &cfg,
            &Plan::performance(&cfg),
            specs,
            reactors,
            &queue_for,
            &mut marks,
            &AtomicBool::new(false),
        )
        .expect("run");
        assert!(
            matches!(
                r.stopped.reason,
                StopReason::Completed | StopReason::VerdictFailed
            ),
            "{:?}",
            r.stopped
        );
        assert_eq!(r.test.reactors as usize, reactors);
        assert!(r.integrity.clean(), "{:?}", r.integrity);
        let (Some((w0, c0, s0)), Some((w1, c1, s1))) = (marks.start, marks.end) else {
            panic!("no measured phase seen");
        };
        let wall = w1.duration_since(w0).as_secs_f64();
        let cpu = c1.saturating_sub(c0);
        let engine_cpu = cpu.saturating_sub(s1.saturating_sub(s0));
        let ios: f64 = r
            .instances
            .iter()
            .map(|i| i.transactional.db_reads_per_s + i.transactional.db_writes_per_s)
            .sum::<f64>()
            * r.test.duration_s;
        assert!(ios > 10_000.0, "{ios}");
        eprintln!(
            "reactors: {reactors} reactor(s), {sessions} sessions, {DBS} databases: {ios:.0} \
             transactional I/Os in {wall:.3} s wall: {:.0} transactional IOPS per wall second \
             (simulator included); {:.3} s of process CPU ({:.2} cores busy); {:.2} us of \
             engine CPU per transactional I/O",
            ios / wall.max(1e-9),
            cpu.as_secs_f64(),
            cpu.as_secs_f64() / wall.max(1e-9),
            engine_cpu.as_secs_f64() * 1e6 / ios.max(1.0)
        );
    }
}
