//! How a test ended and what its verdict judged (issue 24, cases 4 and 5), on the simulated
//! device and clock: a check that could not judge anything says so ("not judged", with the
//! reason) instead of passing with 0; an interruption names the phase it came in and keeps a
//! measurement that was already complete; a damaged page that stops the test is not an
//! interruption.
//!
//! The assertions read the result as JSON (its contract), as a consumer of result.json does.

#[path = "support/simdb.rs"]
mod simdb;

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

use mbx_config::RunConfig;
use mbx_engine::result::RunResult;
use mbx_engine::{run_plan, run_plan_reactors, EngineError, Observer, Phase, Plan, RunEvent};
use mbx_io::sim::{LatencyModel, SimClock, SimDevice, SimQueue};
use mbx_io::{FaultKind, FaultRule, IoOp, IoQueue};
use serde_json::Value;

const PAGES: u64 = 1024;

fn config(duration_s: f64) -> RunConfig {
    let mut cfg = RunConfig::default();
    cfg.profile.databases = 1;
    cfg.profile.mailboxes = 100;
    cfg.profile.iops_per_mailbox = 0.5;
    cfg.threads = 4;
    cfg.duration_s = duration_s;
    cfg.sample_interval_s = 15.0;
    cfg.cache.max_dirty_age_s = 1.0;
    cfg
}

/// Sets `cancel` when the test enters `at` (or at its first sample, for `None`).
struct StopAt<'a> {
    cancel: Option<&'a AtomicBool>,
    at: Option<Phase>,
    lines: Vec<String>,
}

impl Observer for StopAt<'_> {
    fn on_event(&mut self, e: RunEvent<'_>) {
        let Some(cancel) = self.cancel else {
            if let RunEvent::Log(l) = e {
                self.lines.push(l.to_string());
            }
            return;
        };
        match e {
            RunEvent::Phase(p) if Some(p) == self.at => cancel.store(true, Ordering::Relaxed),
            RunEvent::Sample(_) if self.at.is_none() => cancel.store(true, Ordering::Relaxed),
            RunEvent::Log(l) => self.lines.push(l.to_string()),
            _ => {}
        }
    }
}

/// A Performance test of `cfg` on one simulated database; interrupted on entering `stop_at`
/// (`Some(None)`: at its first sample; `None`: never).
fn run(cfg: &RunConfig, stop_at: Option<Option<Phase>>) -> (Value, Vec<String>) {
    let dev = SimDevice::new();
    let spec = simdb::database(&dev, "/sim/db/s.edb", 9, PAGES, "Instance.1", "/sim/logs");
    let clock = Arc::new(SimClock::new());
    let queue = SimQueue::new(
        dev,
        clock,
        mbx_engine::queue_depth(cfg, 1),
        LatencyModel::typical(),
        5,
    );
    let cancel = AtomicBool::new(false);
    let never = AtomicBool::new(false);
    let flag = if stop_at.is_some() { &cancel } else { &never };
    let mut obs = StopAt {
        cancel: stop_at.is_some().then_some(flag),
        at: stop_at.flatten(),
        lines: Vec::new(),
    };
    let r = run_plan(
        cfg,
        &Plan::performance(cfg),
        vec![spec],
        Box::new(queue),
        &mut obs,
        flag,
    )
    .expect("run");
    (json(&r), obs.lines)
}

fn json(r: &RunResult) -> Value {
    serde_json::to_value(r).expect("serializes")
}

fn check<'a>(v: &'a Value, name: &str) -> &'a Value {
    v["verdict"]["checks"]
        .as_array()
        .and_then(|c| c.iter().find(|c| c["name"] == name))
        .unwrap_or_else(|| panic!("no check {name}: {}", v["verdict"]))
}

/// 20 s measured at 15 s samples: 2 samples per instance, and 6 over the limit are tolerated.
/// The maximum-latency checks could not fail: they are "not judged", with the reason, never a
/// pass of 0; the verdict is not a pass, and the test still ran to its end.
#[test]
fn max_latency_checks_of_a_run_with_too_few_samples_are_not_judged() {
    let (v, _) = run(&config(20.0), None);
    for name in ["db_read_latency_max_ms", "log_write_latency_max_ms"] {
        let c = check(&v, name);
        assert_eq!(c["state"], "not_judged", "{c}");
        assert_eq!(c["pass"], false, "{c}");
        let reason = c["reason"].as_str().unwrap_or_default();
        assert!(
            reason.contains("2 sample") && reason.contains("6"),
            "{reason}"
        );
    }
    // What could be judged was, and passed.
    for name in [
        "db_read_latency_avg_ms",
        "log_write_latency_avg_ms",
        "achieved_transactional_iops",
        "data_integrity_errors",
    ] {
        assert_eq!(check(&v, name)["state"], "pass", "{}", check(&v, name));
    }
    assert_eq!(v["verdict"]["pass"], false, "{}", v["verdict"]);
    assert_eq!(v["stopped"]["reason"], "verdict_failed", "{}", v["stopped"]);
    let msg = v["stopped"]["message"].as_str().unwrap_or_default();
    assert!(msg.contains("not judged"), "{msg}");
    // With no tolerance (or enough samples) the same run is judged, and passes.
    let mut cfg = config(20.0);
    cfg.thresholds.max_latency_errors = 0;
    let (v, _) = run(&cfg, None);
    assert_eq!(check(&v, "db_read_latency_max_ms")["state"], "pass");
    assert_eq!(v["verdict"]["pass"], true, "{}", v["verdict"]);
    assert_eq!(v["stopped"]["reason"], "completed");
}

/// Interrupted while attaining the cache prerequisite: nothing was measured, so no latency,
/// stall or IOPS check judged anything; the stop names the phase.
#[test]
fn an_interruption_before_measuring_judges_no_latency_and_names_the_phase() {
    let (v, _) = run(&config(60.0), Some(Some(Phase::Attain)));
    for name in [
        "db_read_latency_avg_ms",
        "db_read_latency_max_ms",
        "log_write_latency_avg_ms",
        "log_write_latency_max_ms",
        "page_fault_stalls_per_s_avg",
        "achieved_transactional_iops",
    ] {
        let c = check(&v, name);
        assert_eq!(c["state"], "not_judged", "{c}");
        assert_eq!(c["pass"], false, "{c}");
        assert!(
            c["reason"]
                .as_str()
                .is_some_and(|r| r.contains("nothing was measured")),
            "{c}"
        );
    }
    assert_eq!(check(&v, "completed_duration_s")["state"], "fail");
    assert_eq!(v["verdict"]["pass"], false);
    assert_eq!(v["stopped"]["reason"], "interrupted");
    assert_eq!(v["stopped"]["phase"], "attain", "{}", v["stopped"]);
    assert_eq!(v["test"]["duration_s"], 0.0);
}

/// Interrupted in the measured phase: the figures cover the time measured, the stop says so and
/// names the phase.
#[test]
fn an_interruption_in_the_measured_phase_names_it() {
    let mut cfg = config(60.0);
    cfg.sample_interval_s = 5.0;
    let (v, _) = run(&cfg, Some(None));
    assert_eq!(v["stopped"]["reason"], "interrupted");
    assert_eq!(v["stopped"]["phase"], "measure", "{}", v["stopped"]);
    assert!(v["stopped"]["message"]
        .as_str()
        .is_some_and(|m| m.contains("during the measured phase")));
    assert_eq!(check(&v, "completed_duration_s")["state"], "fail");
    assert_eq!(v["test"]["interrupted"], true);
    let secs = v["test"]["duration_s"].as_f64().expect("duration");
    assert!(secs > 4.0 && secs < 7.0, "{secs}");
}

/// Ctrl-C during shutdown, after the whole duration was measured: the measurement is kept whole
/// and judged (no `completed_duration_s` failure of 20.000089 of 20), and the stop says it came
/// during shutdown, not "during the measured phase".
#[test]
fn an_interruption_during_shutdown_keeps_the_complete_measurement() {
    let mut cfg = config(20.0);
    cfg.thresholds.max_latency_errors = 0;
    let (v, _) = run(&cfg, Some(Some(Phase::Shutdown)));
    assert_eq!(v["stopped"]["reason"], "interrupted", "{}", v["stopped"]);
    assert_eq!(v["stopped"]["phase"], "shutdown", "{}", v["stopped"]);
    let msg = v["stopped"]["message"].as_str().unwrap_or_default();
    assert!(
        msg.contains("after the measured phase completed") && !msg.contains("during the measured"),
        "{msg}"
    );
    let checks = v["verdict"]["checks"].as_array().expect("checks");
    assert!(
        !checks.iter().any(|c| c["name"] == "completed_duration_s"),
        "{}",
        v["verdict"]
    );
    assert_eq!(v["verdict"]["pass"], true, "{}", v["verdict"]);
    let secs = v["test"]["duration_s"].as_f64().expect("duration");
    assert!((secs - 20.0).abs() < 0.5, "{secs}");
}

/// A damaged page read on one reactor stops the test with `integrity_error`: the other reactor
/// is stopped with it, which is not a user's interruption (`test.interrupted` false), and the
/// stop names the phase it came in.
#[test]
fn a_damaged_page_on_one_reactor_is_not_an_interruption() {
    let mut cfg = config(60.0);
    cfg.profile.databases = 2;
    cfg.profile.mailboxes = 200;
    cfg.checksum_reads_pct = 100;
    let dev = SimDevice::new();
    let specs: Vec<_> = (0..2)
        .map(|i| {
            simdb::database(
                &dev,
                &format!("/sim/db/d{i}.edb"),
                20 + i as u64,
                PAGES,
                &format!("Instance.{}", i + 1),
                &format!("/sim/logs/{i}"),
            )
        })
        .collect();
    // A bit flipped in a page header read back on reactor 2, well into the run.
    let queue_for = |r: usize, depth: usize| -> Result<Box<dyn IoQueue>, EngineError> {
        let faults = if r == 1 {
            vec![
                FaultRule::new(Some(IoOp::Read), FaultKind::FlipBit { byte: 3, bit: 1 })
                    .on_file(0)
                    .after(300)
                    .times(1),
            ]
        } else {
            Vec::new()
        };
        let q = SimQueue::new(
            dev.clone(),
            Arc::new(SimClock::new()),
            depth,
            LatencyModel::typical(),
            3 + r as u64,
        )
        .with_faults(faults);
        Ok(Box::new(q))
    };
    let cancel = AtomicBool::new(false);
    let mut obs = StopAt {
        cancel: None,
        at: None,
        lines: Vec::new(),
    };
    let r = run_plan_reactors(
        &cfg,
        &Plan::performance(&cfg),
        specs,
        2,
        &queue_for,
        &mut obs,
        &cancel,
    )
    .expect("run");
    let v = json(&r);
    assert_eq!(
        v["stopped"]["reason"], "integrity_error",
        "{}",
        v["stopped"]
    );
    assert_eq!(v["test"]["interrupted"], false, "{}", v["test"]);
    assert!(v["stopped"]["phase"].is_string(), "{}", v["stopped"]);
    assert!(
        !obs.lines.iter().any(|l| l.starts_with("Interrupted")),
        "{:?}",
        obs.lines
    );
}

/// Sets `cancel` a second into the measured phase of step `step` of automatic tuning.
struct StopInStep<'a> {
    cancel: &'a AtomicBool,
    step: usize,
    in_step: bool,
}

impl Observer for StopInStep<'_> {
    fn on_event(&mut self, e: RunEvent<'_>) {
        match e {
            RunEvent::Log(l) if l.starts_with("Tuning step ") => {
                self.in_step = l.starts_with(&format!("Tuning step {} (", self.step));
            }
            RunEvent::Progress(p)
                if self.in_step && p.phase == Phase::Measure && p.phase_elapsed_s >= 1.0 =>
            {
                self.cancel.store(true, Ordering::Relaxed)
            }
            _ => {}
        }
    }
}

/// Ctrl-C inside a tuning step's measured window: the test did not run, so the result has no
/// measured figures of its own (the step's 43-55 IOPS over a second are in `tuning`, never the
/// test's `achieved_iops`), and the stop says it came during automatic tuning, not "during the
/// measured phase".
#[test]
fn an_interruption_during_tuning_reports_no_step_figures_as_the_test() {
    let mut cfg = config(60.0);
    cfg.threads = 0;
    cfg.tuning.step_s = 5.0;
    cfg.tuning.window_s = 0.5;
    cfg.tuning.start = 4;
    let dev = SimDevice::new();
    let spec = simdb::database(&dev, "/sim/db/t.edb", 9, PAGES, "Instance.1", "/sim/logs");
    let clock = Arc::new(SimClock::new());
    let cancel = AtomicBool::new(false);
    let mut runs = 0u64;
    let mut obs = StopInStep {
        cancel: &cancel,
        step: 2,
        in_step: false,
    };
    let r = mbx_engine::tune_then_run(
        &cfg,
        &Plan::performance(&cfg),
        std::time::SystemTime::now(),
        &mut obs,
        &cancel,
        &*clock.clone(),
        &mut |c, p, o| {
            runs += 1;
            let mut s = spec.clone();
            s.log_dir = format!("/sim/logs/{runs}").into();
            let q = SimQueue::new(
                dev.clone(),
                clock.clone(),
                mbx_engine::queue_depth(c, 1),
                LatencyModel::typical(),
                runs,
            );
            run_plan(c, p, vec![s], Box::new(q), o, &cancel)
        },
    )
    .expect("runs");
    let v = json(&r);
    let tuning = &v["tuning"];
    assert_eq!(tuning["end"], "interrupted", "{tuning}");
    assert_eq!(
        tuning["steps"].as_array().map(Vec::len),
        Some(2),
        "{tuning}"
    );
    // The interrupted step's figures are the step's only.
    assert!(
        tuning["steps"][1]["achieved_iops"].as_f64() > Some(0.0),
        "{tuning}"
    );
    assert_eq!(v["achieved_iops"], 0.0, "{}", v["achieved_iops"]);
    assert_eq!(v["test"]["duration_s"], 0.0);
    assert_eq!(v["instances"].as_array().map(Vec::len), Some(0));
    assert_eq!(v["stopped"]["reason"], "interrupted");
    assert_eq!(v["stopped"]["phase"], "tuning", "{}", v["stopped"]);
    let msg = v["stopped"]["message"].as_str().unwrap_or_default();
    assert!(
        msg.contains("automatic tuning") && !msg.contains("during the measured phase"),
        "{msg}"
    );
    assert_eq!(v["verdict"]["pass"], false);
}
