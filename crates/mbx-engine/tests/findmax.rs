//! find-max on the simulated device (issue 12): it returns the known capacity of the device
//! model within 5%, and sizes its sessions from the latency it measures.

#[path = "support/simdb.rs"]
mod simdb;
#[path = "support/steps.rs"]
mod steps;

use std::sync::atomic::AtomicBool;
use std::time::Duration;

use mbx_engine::findmax::{find_max, FindMaxSpec};
use mbx_engine::result::FindMax;
use mbx_io::sim::{Latency, LatencyModel};
use steps::{config, Lines, Sim};

/// find-max from `mailboxes` x 1 IOPS on a device doing database reads and writes in `io`
/// each, four at a time (log writes and everything else free), with `threads` sessions (0:
/// find-max sizes them). The verdict's limits are the capacity (achieved IOPS within 1%) and,
/// when `latency_limits` is false, nothing else (queueing at saturation would fail a latency
/// threshold first). Returns the record and the last log line.
fn search(io: Duration, mailboxes: u64, threads: u32, latency_limits: bool) -> (FindMax, String) {
    search_steps(io, mailboxes, threads, latency_limits, 16)
}

/// [`search`] with at most `max_steps` search steps.
fn search_steps(
    io: Duration,
    mailboxes: u64,
    threads: u32,
    latency_limits: bool,
    max_steps: usize,
) -> (FindMax, String) {
    let io = Latency::fixed(io);
    let model = LatencyModel::uniform(Latency::ZERO)
        .reads(io)
        .writes(io)
        .channels(4);
    let mut sim = Sim::new(model);
    let mut cfg = config(100.0);
    cfg.profile.mailboxes = mailboxes;
    cfg.profile.iops_per_mailbox = 1.0;
    cfg.bdm = false;
    cfg.threads = threads;
    cfg.thresholds.iops_margin = 0.01;
    if !latency_limits {
        cfg.thresholds.db_read_avg_ms = 100_000.0;
        cfg.thresholds.log_write_avg_ms = 100_000.0;
    }
    cfg.thresholds.db_read_max_ms = 100_000.0;
    cfg.thresholds.log_write_max_ms = 100_000.0;
    cfg.thresholds.page_fault_stalls_per_s = 100_000.0;
    let clock = sim.clock.clone();
    let mut lines = Lines::default();
    let found = find_max(
        &cfg,
        FindMaxSpec {
            max_steps,
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
    for s in &found.find_max.steps {
        eprintln!(
            "{} mailboxes, {} sessions: target {:.0}, achieved {:.1} IOPS, read {:.2} ms, log {:.2} ms, pass {}",
            s.mailboxes,
            s.sessions,
            s.target_iops,
            s.achieved_iops,
            s.db_read_avg_ms,
            s.log_write_avg_ms,
            s.pass
        );
    }
    let last = lines.0.last().cloned().unwrap_or_default();
    (found.find_max, last)
}

#[test]
fn find_max_returns_the_known_capacity_of_the_model() {
    // 10 ms reads and writes, four at a time: 400 transactional I/Os per second, whatever the
    // sessions (64 here).
    let (f, last) = search(Duration::from_millis(10), 100, 64, false);
    let iops = f.iops.unwrap_or_else(|| panic!("no answer: {f:#?}"));
    assert_eq!(f.end, "converged", "{f:#?}");
    assert!((380.0..=420.0).contains(&iops), "{iops} IOPS: {f:#?}");
    assert_eq!(f.mailboxes.map(|m| m as f64), Some(iops));
    // The ramp went up from 100 by doubling, then bisected: a pass and a fail bracket it.
    assert_eq!(f.steps[0].mailboxes, 100);
    assert!(f.steps.iter().any(|s| !s.pass));
    // The answer held in two confirmation runs in a row, each three steps long (the last two
    // steps).
    let n = f.steps.len();
    assert!(n >= 2, "{f:#?}");
    for last_step in &f.steps[n - 2..] {
        assert!(last_step.confirmation && last_step.pass, "{last_step:?}");
        assert_eq!(Some(last_step.mailboxes), f.mailboxes);
        assert!(
            (last_step.measured_s - 30.0).abs() < 1.0,
            "{}",
            last_step.measured_s
        );
    }
    assert!(last.starts_with("find-max: "), "{last}");
    // Bracketed by a failing step: not a lower bound.
    assert!(!f.lower_bound, "{f:#?}");
}

/// Issue 25, case 15: a search that stops at --max-steps while every step passed answers a
/// lower bound, and says so; `elapsed_s` covers the confirmation runs too.
#[test]
fn a_search_stopped_before_any_failing_step_answers_a_lower_bound() {
    // 400 IOPS of capacity, from 20 mailboxes x 1 IOPS: 20, 40, 80 all pass.
    let (f, last) = search_steps(Duration::from_millis(10), 20, 64, false, 3);
    assert_eq!(f.end, "steps", "{f:#?}");
    assert!(f.steps.iter().all(|s| s.pass), "{f:#?}");
    assert_eq!(f.mailboxes, Some(80), "{f:#?}");
    assert!(f.lower_bound, "{f:#?}");
    assert!(
        last.starts_with("find-max: at least 80 mailboxes"),
        "{last}"
    );
    // Three search steps and two confirmations of three step lengths each: the confirmations'
    // 60 s of measurement alone is more than the search steps took.
    assert_eq!(
        f.steps.iter().filter(|s| s.confirmation).count(),
        2,
        "{f:#?}"
    );
    let measured: f64 = f.steps.iter().map(|s| s.measured_s).sum();
    assert!(
        f.elapsed_s >= measured,
        "elapsed {} s < {measured} s measured by the steps: {f:#?}",
        f.elapsed_s
    );
}

#[test]
fn find_max_sizes_sessions_from_the_latency_it_measures() {
    // A fast device: 1 ms reads and writes, four at a time (4,000 transactional IOPS at most),
    // sessions left to find-max. One session per 25 IOPS would be 160 at the capacity; the
    // latency measured (about 1 ms, counted as the 5 ms floor) asks for under half of that, and
    // the capacity is still found within 5%.
    let (f, _) = search(Duration::from_millis(1), 500, 0, true);
    let iops = f.iops.unwrap_or_else(|| panic!("no answer: {f:#?}"));
    assert!((3_800.0..=4_200.0).contains(&iops), "{iops} IOPS: {f:#?}");
    // The first step, with nothing measured, is sized at the read threshold (one session per
    // 25 IOPS); later ones by Little's law at what the steps measured: while the device keeps
    // its 1 ms (the passing steps), at most half of that.
    assert_eq!(f.steps[0].sessions, 20, "{f:#?}");
    let later_passes: Vec<_> = f.steps[1..].iter().filter(|s| s.pass).collect();
    assert!(later_passes.len() >= 3, "{f:#?}");
    for s in later_passes {
        assert!(
            f64::from(s.sessions) <= s.target_iops / 25.0 / 2.0,
            "{} sessions for {} IOPS: {f:#?}",
            s.sessions,
            s.target_iops
        );
    }
}
