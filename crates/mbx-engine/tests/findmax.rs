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
    // Issue 35: the answer says what was measured, confirmation included.
    let c = f.confirmation.clone().expect("confirmation");
    assert_eq!((c.passed, c.required, c.confirmed), (2, 2, true), "{c:?}");
    let words = f.answer_words().expect("words");
    assert_eq!(
        words,
        format!(
            "largest passing count {} (confirmed 2 of 2)",
            f.mailboxes.expect("answer")
        )
    );
    assert!(last.contains(&words), "{last}");
}

/// Issue 35: find-max stopped during a confirmation still answers the largest count that passed
/// every try (the confirmation cut short is no try), says it is not confirmed and why.
#[test]
fn a_search_interrupted_in_a_confirmation_answers_the_largest_passing_count() {
    let model = LatencyModel::uniform(Latency::ZERO)
        .reads(Latency::fixed(Duration::from_millis(10)))
        .writes(Latency::fixed(Duration::from_millis(10)))
        .channels(4);
    let mut sim = Sim::new(model);
    let mut cfg = config(100.0);
    cfg.profile.mailboxes = 20;
    cfg.profile.iops_per_mailbox = 1.0;
    cfg.bdm = false;
    cfg.threads = 64;
    cfg.thresholds.iops_margin = 0.01;
    cfg.thresholds.db_read_avg_ms = 100_000.0;
    cfg.thresholds.log_write_avg_ms = 100_000.0;
    cfg.thresholds.db_read_max_ms = 100_000.0;
    cfg.thresholds.log_write_max_ms = 100_000.0;
    cfg.thresholds.page_fault_stalls_per_s = 100_000.0;
    let clock = sim.clock.clone();
    let cancel = AtomicBool::new(false);
    let step_s = cfg.tuning.step_s;
    let mut lines = Lines::default();
    let found = find_max(
        &cfg,
        FindMaxSpec {
            max_steps: 3,
            resolution: 0.02,
            max_s: 86_400.0,
            confirmations: 2,
        },
        &mut lines,
        &cancel,
        &*clock,
        &mut |c, p, o| {
            // Ctrl-C during the first confirmation (a run three steps long).
            if c.duration_s > step_s * 2.0 {
                cancel.store(true, std::sync::atomic::Ordering::Relaxed);
            }
            sim.step(c, p, o)
        },
    )
    .expect("find-max");
    let f = found.find_max;
    assert_eq!(f.end, "interrupted", "{f:#?}");
    // 20, 40 and 80 passed; the confirmation at 80 was cut short.
    assert_eq!(f.mailboxes, Some(80), "{f:#?}");
    assert_eq!(f.iops, Some(80.0));
    let c = f.confirmation.clone().expect("confirmation");
    assert!(!c.confirmed, "{c:?}");
    assert_eq!((c.passed, c.required), (0, 2));
    let words = f.answer_words().expect("words");
    assert!(
        words.starts_with("largest passing count 80")
            && words.ends_with("not confirmed: interrupted during confirmation 1 of 2 at 80"),
        "{words}"
    );
    let last = lines.0.last().cloned().unwrap_or_default();
    assert!(last.contains(&words), "{last}");
}

/// Issue 35: a step whose target per database mailbox is above the most a run takes (100 IOPS)
/// spreads it over more slices of the same pages and runs (it once stopped the search with
/// "invalid iops_per_mailbox ... got 128" and lost the answer); find-max.json's answer is a step
/// that ran.
#[test]
fn a_step_above_100_iops_per_mailbox_of_the_databases_still_runs() {
    // 200 mailboxes x 1 IOPS, doubling: 200, 400, ..., 25,600 mailboxes (128 IOPS each of the
    // databases' 200), on a device with no latency.
    let model = LatencyModel::uniform(Latency::ZERO).channels(64);
    let mut sim = Sim::new(model);
    let mut cfg = config(100.0);
    cfg.profile.mailboxes = 200;
    cfg.profile.iops_per_mailbox = 1.0;
    cfg.bdm = false;
    cfg.threads = 64;
    cfg.tuning.step_s = 2.0;
    cfg.thresholds.iops_margin = 0.5;
    cfg.thresholds.db_read_max_ms = 100_000.0;
    cfg.thresholds.log_write_max_ms = 100_000.0;
    cfg.thresholds.page_fault_stalls_per_s = 100_000.0;
    let clock = sim.clock.clone();
    let mut lines = Lines::default();
    let found = find_max(
        &cfg,
        FindMaxSpec {
            max_steps: 8,
            resolution: 0.02,
            max_s: 86_400.0,
            confirmations: 0,
        },
        &mut lines,
        &AtomicBool::new(false),
        &*clock,
        &mut |c, p, o| {
            c.validate().map_err(|(k, m)| panic!("{k}: {m}")).ok();
            sim.step(c, p, o)
        },
    )
    .expect("find-max");
    let f = found.find_max;
    assert_eq!(f.steps.len(), 8, "{f:#?}");
    assert_eq!(f.steps[7].mailboxes, 25_600, "{f:#?}");
    assert!(f.stop_message.is_none(), "{f:#?}");
    let m = f.mailboxes.expect("an answer");
    assert!(f.steps.iter().any(|s| s.pass && s.mailboxes == m), "{f:#?}");
    let c = f.confirmation.expect("confirmation");
    assert_eq!(c.why.as_deref(), Some("no confirmation runs"));
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
        last.starts_with(
            "find-max: largest passing count 80 (at least: no step above it failed) (confirmed 2 of 2)"
        ),
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
