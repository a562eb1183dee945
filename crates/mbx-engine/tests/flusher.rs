//! The flusher keeps up with many sessions (issue 11): with 256 sessions on one database at a
//! rate the simulated device serves easily, sessions do not stall for want of free cache frames.

#[path = "support/simdb.rs"]
mod simdb;

use std::sync::atomic::AtomicBool;
use std::sync::Arc;
use std::time::Duration;

use mbx_config::RunConfig;
use mbx_engine::result::StopReason;
use mbx_engine::{run_plan, InstanceSpec, Observer, Plan, RunEvent};
use mbx_io::sim::{Latency, LatencyModel, SimClock, SimDevice, SimQueue};

const PAGES: u64 = 16384;

struct Quiet;
impl Observer for Quiet {
    fn on_event(&mut self, _: RunEvent<'_>) {}
}

fn spec(dev: &SimDevice) -> InstanceSpec {
    simdb::database(
        dev,
        "/sim/db/flusher.edb",
        5,
        PAGES,
        "Instance.1",
        "/sim/logs",
    )
}

#[test]
fn many_sessions_do_not_stall_on_a_device_that_keeps_up() {
    // 256 sessions at 20,000 transactional IOPS on a device averaging 8 ms per request: about
    // 8,000 page writes/s, which 32 writes in flight (the old fixed cap) can carry only at
    // 4,000/s: there the run made 14,400 IOPS with 2,400 cache stalls/s.
    let sessions: u32 = 256;
    let rate: f64 = 20000.0;
    let dev = SimDevice::new();
    let mut cfg = RunConfig::default();
    cfg.profile.databases = 1;
    cfg.profile.mailboxes = PAGES / 32;
    cfg.profile.iops_per_mailbox = rate / cfg.profile.mailboxes as f64;
    cfg.threads = sessions;
    cfg.duration_s = 20.0;
    cfg.sample_interval_s = 2.0;
    let clock = Arc::new(SimClock::new());
    let ms = |m: u64| Duration::from_micros(m);
    let model = LatencyModel::uniform(Latency {
        base: ms(4000),
        tail: ms(4000),
    });
    let queue = SimQueue::new(
        dev.clone(),
        clock,
        mbx_engine::queue_depth(&cfg, 1),
        model,
        9,
    );
    let r = run_plan(
        &cfg,
        &Plan::performance(&cfg),
        vec![spec(&dev)],
        Box::new(queue),
        &mut Quiet,
        &AtomicBool::new(false),
    )
    .expect("run");
    eprintln!(
        "{sessions} sessions at {rate}: {:.0} IOPS, {:.1} page fault stalls/s (max {:.1}), {:?}",
        r.achieved_iops,
        r.host.page_fault_stalls_per_s.avg,
        r.host.page_fault_stalls_per_s.max,
        r.stopped.reason
    );
    assert_eq!(r.stopped.reason, StopReason::Completed, "{:?}", r.stopped);
    assert!(r.host.page_fault_stalls_per_s.max < 1.0);
    assert!(r.achieved_iops > rate * 0.99, "{}", r.achieved_iops);
}
