//! find-max on the simulated device (issue 12): it returns the known capacity of the device
//! model within 5%.

#[path = "support/simdb.rs"]
mod simdb;
#[path = "support/steps.rs"]
mod steps;

use std::sync::atomic::AtomicBool;
use std::time::Duration;

use mbx_engine::findmax::{find_max, FindMaxSpec};
use mbx_io::sim::{Latency, LatencyModel};
use steps::{config, Lines, Sim};

#[test]
fn find_max_returns_the_known_capacity_of_the_model() {
    // Four requests at a time, database reads and writes 10 ms each, log writes and everything
    // else free: the database can do 400 transactional I/Os per second, whatever the sessions.
    let ten = Latency::fixed(Duration::from_millis(10));
    let model = LatencyModel::uniform(Latency::ZERO)
        .reads(ten)
        .writes(ten)
        .channels(4);
    let mut sim = Sim::new(model);
    // 100 mailboxes x 1 IOPS to start; the verdict's limits are the capacity, not latency
    // (queueing at saturation would fail a latency threshold first): achieved IOPS within 1%.
    let mut cfg = config(100.0);
    cfg.profile.mailboxes = 100;
    cfg.profile.iops_per_mailbox = 1.0;
    cfg.bdm = false;
    cfg.threads = 64;
    cfg.thresholds.iops_margin = 0.01;
    cfg.thresholds.db_read_avg_ms = 100_000.0;
    cfg.thresholds.db_read_max_ms = 100_000.0;
    cfg.thresholds.log_write_avg_ms = 100_000.0;
    cfg.thresholds.log_write_max_ms = 100_000.0;
    cfg.thresholds.page_fault_stalls_per_s = 100_000.0;
    let clock = sim.clock.clone();
    let mut lines = Lines::default();
    let found = find_max(
        &cfg,
        FindMaxSpec {
            max_steps: 16,
            resolution: 0.02,
            max_s: 86_400.0,
            confirmations: 2,
        },
        &mut lines,
        &AtomicBool::new(false),
        &*clock,
        &mut |c, p, o| sim.step(c, p, o),
    )
    .expect("find-max");
    let f = &found.find_max;
    for s in &f.steps {
        eprintln!(
            "{} mailboxes: target {:.0}, achieved {:.1} IOPS, read {:.1} ms, pass {}",
            s.mailboxes, s.target_iops, s.achieved_iops, s.db_read_avg_ms, s.pass
        );
    }
    let iops = f.iops.unwrap_or_else(|| panic!("no answer: {f:#?}"));
    assert_eq!(f.end, "converged", "{f:#?}");
    assert!((380.0..=420.0).contains(&iops), "{iops} IOPS: {f:#?}");
    assert_eq!(f.mailboxes.map(|m| m as f64), Some(iops));
    // The ramp went up from 100 by doubling, then bisected: a pass and a fail bracket it.
    assert_eq!(f.steps[0].mailboxes, 100);
    assert!(f.steps.iter().any(|s| !s.pass));
    // The answer held in a confirmation run three steps long (the last step).
    let last_step = f.steps.last().expect("steps");
    assert!(last_step.confirmation && last_step.pass, "{last_step:?}");
    assert_eq!(Some(last_step.mailboxes), f.mailboxes);
    assert!(
        (last_step.measured_s - 30.0).abs() < 1.0,
        "{}",
        last_step.measured_s
    );
    let last = lines.0.last().expect("a line");
    assert!(last.starts_with("find-max: "), "{last}");
}

#[test]
fn find_max_sizes_sessions_from_the_latency_it_measures() {
    // A fast device: 1 ms reads and writes, four at a time (4,000 transactional IOPS at most),
    // sessions left to find-max. One session per 25 IOPS would be 160 at the capacity; the
    // latency measured (about 1 ms) asks for about a tenth of that, and the capacity is still
    // found within 5%.
    let one = Latency::fixed(Duration::from_millis(1));
    let model = LatencyModel::uniform(Latency::ZERO)
        .reads(one)
        .writes(one)
        .channels(4);
    let mut sim = Sim::new(model);
    let mut cfg = config(100.0);
    cfg.profile.mailboxes = 500;
    cfg.profile.iops_per_mailbox = 1.0;
    cfg.bdm = false;
    cfg.threads = 0;
    cfg.thresholds.iops_margin = 0.01;
    cfg.thresholds.db_read_max_ms = 100_000.0;
    cfg.thresholds.log_write_max_ms = 100_000.0;
    cfg.thresholds.page_fault_stalls_per_s = 100_000.0;
    let clock = sim.clock.clone();
    let mut lines = Lines::default();
    let found = find_max(
        &cfg,
        FindMaxSpec {
            max_steps: 16,
            resolution: 0.02,
            max_s: 86_400.0,
            confirmations: 2,
        },
        &mut lines,
        &AtomicBool::new(false),
        &*clock,
        &mut |c, p, o| sim.step(c, p, o),
    )
    .expect("find-max");
    let f = &found.find_max;
    for s in &f.steps {
        eprintln!(
            "{} mailboxes, {} sessions: target {:.0}, achieved {:.1} IOPS, read {:.2} ms, log {:.2} ms, pass {}",
            s.mailboxes, s.sessions, s.target_iops, s.achieved_iops, s.db_read_avg_ms, s.log_write_avg_ms, s.pass
        );
    }
    let iops = f.iops.unwrap_or_else(|| panic!("no answer: {f:#?}"));
    assert!((3_800.0..=4_200.0).contains(&iops), "{iops} IOPS: {f:#?}");
    // The first step, with nothing measured, is sized at the read threshold (one session per
    // 25 IOPS); later ones by Little's law at what the steps measured: while the device keeps
    // its 1 ms (the passing steps), under a quarter of that.
    assert_eq!(f.steps[0].sessions, 20, "{f:#?}");
    let later_passes: Vec<_> = f.steps[1..].iter().filter(|s| s.pass).collect();
    assert!(later_passes.len() >= 3, "{f:#?}");
    for s in later_passes {
        assert!(
            f64::from(s.sessions) < s.target_iops / 25.0 / 4.0,
            "{} sessions for {} IOPS: {f:#?}",
            s.sessions,
            s.target_iops
        );
    }
}
