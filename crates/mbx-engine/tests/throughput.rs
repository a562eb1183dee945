//! The disk subsystem throughput test on the simulated device (issue 12 item 4): the search
//! finds the device's known maximum, and the test then holds the asked percentage of it.

#[path = "support/simdb.rs"]
mod simdb;
#[path = "support/steps.rs"]
mod steps;

use std::sync::atomic::AtomicBool;
use std::time::Duration;

use mbx_config::{RunConfig, Sizing, TestKind};
use mbx_engine::findmax::FindMaxSpec;
use mbx_engine::throughput::{throughput, Sized};
use mbx_engine::Plan;
use mbx_io::sim::{Latency, LatencyModel};
use steps::{config, Lines, Sim};

/// A device of 400 transactional IOPS (four channels, database I/O 10 ms each), thresholds that
/// only the IOPS check can fail (within 1%), the test held at `pct` percent.
fn run(pct: f64) -> (mbx_engine::throughput::ThroughputRun, Vec<String>) {
    let ten = Latency::fixed(Duration::from_millis(10));
    let model = LatencyModel::uniform(Latency::ZERO)
        .reads(ten)
        .writes(ten)
        .channels(4);
    let mut sim = Sim::new(model);
    let mut cfg = config(100.0);
    cfg.sizing = Sizing::Capacity;
    cfg.capacity_pct = 10.0;
    cfg.throughput_pct = pct;
    cfg.bdm = false;
    cfg.threads = 64;
    cfg.duration_s = 20.0;
    cfg.thresholds.iops_margin = 0.01;
    cfg.thresholds.db_read_avg_ms = 100_000.0;
    cfg.thresholds.db_read_max_ms = 100_000.0;
    cfg.thresholds.log_write_avg_ms = 100_000.0;
    cfg.thresholds.log_write_max_ms = 100_000.0;
    cfg.thresholds.page_fault_stalls_per_s = 100_000.0;
    // 20 s of 5 s samples: the maximum-latency checks judge with no tolerance (with 6 tolerated
    // they could not fail, and would be "not judged").
    cfg.thresholds.max_latency_errors = 0;
    let clock = sim.clock.clone();
    let mut lines = Lines::default();
    let out = throughput(
        &cfg,
        FindMaxSpec {
            max_steps: 16,
            resolution: 0.02,
            max_s: 86_400.0,
            // The throughput test's own run at the percentage is what holds the maximum.
            confirmations: 0,
        },
        Sized {
            free_bytes: 1 << 30,
            database_bytes: 8192 * 32768,
        },
        &|c: &RunConfig| Plan::performance(c),
        &mut lines,
        &AtomicBool::new(false),
        &*clock,
        &mut |c, p, o| sim.step(c, p, o),
    );
    (out, lines.0)
}

#[test]
fn the_test_holds_the_percentage_of_the_maximum_the_search_finds() {
    let (out, lines) = run(50.0);
    let t = &out.record;
    for s in &t.steps {
        eprintln!(
            "target {:.0}, achieved {:.1} IOPS, pass {}",
            s.target_iops, s.achieved_iops, s.pass
        );
    }
    // The search starts at 100 IOPS per database and finds the device's 400 within 5%.
    assert_eq!(t.steps[0].target_iops, 100.0);
    assert_eq!(t.end, "converged", "{t:#?}");
    let max = t.max_iops.unwrap_or_else(|| panic!("no maximum: {t:#?}"));
    assert!((380.0..=420.0).contains(&max), "{max}");
    // The held target is exactly half of it, and the test ran (and achieved it) at that target.
    let held = t.held_iops.expect("held");
    assert_eq!(held, max * 0.5);
    let r = out.outcome.expect("the held test");
    assert_eq!(r.test.test_type, TestKind::Performance);
    assert!(
        (r.target_iops - held).abs() < 1e-6,
        "{} vs {held}",
        r.target_iops
    );
    assert!(
        r.achieved_iops >= held * 0.99,
        "{} of {held}",
        r.achieved_iops
    );
    assert_eq!(r.test.duration_s.round(), 20.0);
    assert!(r.verdict.pass(), "{:#?}", r.verdict);
    assert!(r.notes[0].contains("held 50% of it"), "{}", r.notes[0]);
    assert_eq!((t.capacity_pct, t.throughput_pct), (10.0, 50.0));
    assert!(lines
        .iter()
        .any(|l| l.starts_with("Throughput: the maximum is ")));
}

#[test]
fn a_full_percentage_holds_the_maximum_itself() {
    let (out, _) = run(100.0);
    let t = &out.record;
    assert_eq!(t.held_iops, t.max_iops);
    let r = out.outcome.expect("the held test");
    assert_eq!(Some(r.target_iops), t.held_iops);
}
