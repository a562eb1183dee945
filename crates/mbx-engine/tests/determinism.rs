//! Determinism (issue 26 item 7): on the simulated device and clock, the same seed gives a
//! byte-identical result.json, for every test type. Every time the engine writes into a result
//! (start and end, error timestamps, durations) comes from the run's `Clock`, never the system's.

#[path = "support/kinds.rs"]
mod kinds;
#[path = "support/simdb.rs"]
mod simdb;
#[path = "support/steps.rs"]
mod steps;

use mbx_engine::result::RunResult;
use mbx_io::{FaultKind, FaultRule, IoOp};

/// result.json's bytes, as `run` writes them (pretty JSON and a final newline).
fn json(r: &RunResult) -> Vec<u8> {
    let mut b = serde_json::to_vec_pretty(r).expect("serialize");
    b.push(b'\n');
    b
}

fn assert_same(kind: &str, a: &RunResult, b: &RunResult) {
    let (a, b) = (json(a), json(b));
    if a != b {
        let (a, b) = (String::from_utf8_lossy(&a), String::from_utf8_lossy(&b));
        // Each differing line with the line before it (the key of an object's field).
        let (la, lb): (Vec<&str>, Vec<&str>) = (a.lines().collect(), b.lines().collect());
        let diff: Vec<String> = (0..la.len().min(lb.len()))
            .filter(|&i| la[i] != lb[i])
            .take(12)
            .map(|i| format!("{} | {}\n  vs {}", la[i.saturating_sub(1)], la[i], lb[i]))
            .collect();
        panic!(
            "{kind}: two runs with the same seed differ ({} and {} lines):\n{}",
            la.len(),
            lb.len(),
            diff.join("\n")
        );
    }
}

#[test]
fn the_same_seed_gives_a_byte_identical_result_for_every_test_type() {
    let cfg = kinds::config();
    for kind in kinds::KINDS {
        let a = kinds::run(kind, &cfg, 42, Vec::new());
        // Wall time passes between the two runs: a system clock read would show.
        std::thread::sleep(std::time::Duration::from_millis(1100));
        let b = kinds::run(kind, &cfg, 42, Vec::new());
        assert_same(kind, &a, &b);
    }
}

#[test]
fn a_run_stopped_by_an_error_is_byte_identical_too() {
    // An I/O error on a database read: the result's errors[] carries a timestamp.
    let cfg = kinds::config();
    let fault = || {
        vec![FaultRule::new(Some(IoOp::Read), FaultKind::Error(5))
            .after(50)
            .on_file(0)]
    };
    let a = kinds::run("performance", &cfg, 7, fault());
    std::thread::sleep(std::time::Duration::from_millis(1100));
    let b = kinds::run("performance", &cfg, 7, fault());
    assert!(
        !a.errors.is_empty(),
        "the fault stopped nothing: {:?}",
        a.stopped
    );
    assert_same("performance with an I/O error", &a, &b);
}

#[test]
fn the_throughput_test_is_byte_identical_too() {
    let a = kinds::run_throughput(0.5);
    std::thread::sleep(std::time::Duration::from_millis(1100));
    let b = kinds::run_throughput(0.5);
    assert_same("throughput", &a, &b);
}

#[test]
fn another_seed_gives_other_figures() {
    // Not vacuous: the seed does reach the figures.
    let cfg = kinds::config();
    let a = json(&kinds::run("performance", &cfg, 1, Vec::new()));
    let b = json(&kinds::run("performance", &cfg, 2, Vec::new()));
    assert_ne!(a, b);
}

/// Automatic tuning that finds no session count for an unreachable target: the result that
/// says the test did not run is byte-identical too (its end time is the run's clock's).
fn untuned() -> RunResult {
    let mut sim = steps::Sim::new(mbx_io::sim::LatencyModel::typical());
    let mut cfg = steps::config(1_000_000.0);
    cfg.tuning.max_steps = 3;
    let clock = sim.clock.clone();
    let plan = mbx_engine::Plan::performance(&cfg);
    mbx_engine::tune_then_run(
        &cfg,
        &plan,
        mbx_io::Clock::wall(&*clock),
        &mut kinds::Quiet,
        &std::sync::atomic::AtomicBool::new(false),
        &*clock,
        &mut |c, p, o| sim.step(c, p, o),
    )
    .expect("tuning")
}

#[test]
fn a_test_tuning_did_not_run_is_byte_identical_too() {
    let a = untuned();
    assert!(a.tuning.is_some() && !a.verdict.pass(), "{:?}", a.stopped);
    std::thread::sleep(std::time::Duration::from_millis(1100));
    let b = untuned();
    assert_same("untuned", &a, &b);
}
