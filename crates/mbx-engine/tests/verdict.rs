//! The verdict (issue 26 item 5): for every test type, on the simulated device, a verdict is
//! `pass` exactly when it has checks and every one of them passed, in the result and in
//! result.json, whether the test passed, failed a check or stopped on an error; and one module
//! of the engine (`assemble::verdict`) is the only one that writes a verdict.

#[path = "support/kinds.rs"]
mod kinds;
#[path = "support/simdb.rs"]
mod simdb;
#[path = "support/steps.rs"]
mod steps;

use mbx_engine::result::{RunResult, StopReason};
use mbx_io::{FaultKind, FaultRule, IoOp};

fn assert_consistent(what: &str, r: &RunResult) {
    let checks = r.verdict.checks();
    let every = !checks.is_empty() && checks.iter().all(|c| c.pass());
    assert_eq!(r.verdict.pass(), every, "{what}: {:#?}", r.verdict);
    // result.json says the same.
    let json: serde_json::Value = serde_json::to_value(r).expect("serialize");
    let v = &json["verdict"];
    let listed = v["checks"].as_array().expect("checks");
    let every_listed = !listed.is_empty() && listed.iter().all(|c| c["pass"] == true);
    assert_eq!(v["pass"] == true, every_listed, "{what}: {v}");
    // A test that ran its course and did not pass says so.
    if r.stopped.reason.ran_to_completion() {
        assert_eq!(
            r.stopped.reason == StopReason::VerdictFailed,
            !r.verdict.pass(),
            "{what}: {:?} with {:#?}",
            r.stopped,
            r.verdict
        );
    }
}

#[test]
fn every_test_type_passes_exactly_when_every_check_passes() {
    let cfg = kinds::config();
    for kind in kinds::KINDS {
        let r = kinds::run(kind, &cfg, 3, Vec::new());
        assert!(!r.verdict.checks().is_empty(), "{kind}: no check");
        assert_consistent(kind, &r);
    }
}

#[test]
fn a_failed_check_fails_every_test_type() {
    // Latency thresholds no I/O can meet: each type that judges latency fails on them.
    let mut cfg = kinds::config();
    cfg.thresholds.db_read_avg_ms = 0.0;
    cfg.thresholds.log_write_avg_ms = 0.0;
    for kind in kinds::KINDS {
        let r = kinds::run(kind, &cfg, 3, Vec::new());
        assert_consistent(kind, &r);
    }
    let r = kinds::run("performance", &cfg, 3, Vec::new());
    assert!(!r.verdict.pass(), "{:#?}", r.verdict);
}

#[test]
fn an_error_fails_every_test_type_and_the_verdict_says_so() {
    let cfg = kinds::config();
    for kind in kinds::KINDS {
        let eio = vec![FaultRule::new(Some(IoOp::Read), FaultKind::Error(5))
            .after(20)
            .on_file(0)];
        let r = kinds::run(kind, &cfg, 3, eio);
        assert_consistent(kind, &r);
        assert!(
            !r.verdict.pass(),
            "{kind}: {:?} {:#?}",
            r.stopped,
            r.verdict
        );
    }
}

#[test]
fn the_throughput_test_and_a_test_tuning_did_not_run_are_consistent_too() {
    let passed = kinds::run_throughput(0.5);
    assert_consistent("throughput", &passed);
    assert!(passed.verdict.pass(), "{:#?}", passed.verdict);
    // An IOPS margin of -10 %: no target is ever met.
    let failed = kinds::run_throughput(-0.1);
    assert_consistent("throughput, failing", &failed);
    let unmeasured = mbx_engine::unmeasured_result(
        &kinds::config(),
        std::time::SystemTime::UNIX_EPOCH,
        mbx_engine::result::Stopped::new(StopReason::Error, "stopped before it began"),
    );
    assert_consistent("unmeasured", &unmeasured);
    assert!(!unmeasured.verdict.pass());
}

/// The engine's sources that write a verdict: building one (`Verdict::of`) or changing one
/// (`set`, `retain`, `judge_nothing_but`, assigning a result's `verdict`, borrowing it mutably).
/// Whitespace is ignored, so a call rustfmt spread over lines is found too.
fn verdict_writers(dir: &std::path::Path, out: &mut Vec<String>) {
    let writes = [
        "Verdict::of(",
        "verdict.set(",
        "verdict.retain(",
        "judge_nothing_but(",
        ".verdict=",
        "&mutresult.verdict",
        "&mutr.verdict",
        "&mutself.verdict",
    ];
    for entry in std::fs::read_dir(dir).expect("src") {
        let path = entry.expect("entry").path();
        if path.is_dir() {
            verdict_writers(&path, out);
            continue;
        }
        let text = std::fs::read_to_string(&path).expect("read");
        // A file's unit tests (at its end) build results of their own.
        let code = text.split("#[cfg(test)]\nmod tests").next().unwrap_or("");
        let squeezed: String = code
            .lines()
            .map(|l| l.split("//").next().unwrap_or(""))
            .flat_map(|l| l.chars().filter(|c| !c.is_whitespace()))
            .collect();
        for w in writes {
            for (at, _) in squeezed.match_indices(w) {
                let from = squeezed[..at]
                    .char_indices()
                    .rev()
                    .nth(40)
                    .map_or(0, |(i, _)| i);
                let to = (at + w.len() + 30).min(squeezed.len());
                let to = (to..=squeezed.len())
                    .find(|&i| squeezed.is_char_boundary(i))
                    .unwrap_or(squeezed.len());
                out.push(format!("{}: ...{}...", path.display(), &squeezed[from..to]));
            }
        }
    }
}

#[test]
fn only_the_verdict_builder_writes_a_verdict() {
    let src = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let mut found = Vec::new();
    verdict_writers(&src, &mut found);
    let builder = src.join("assemble").join("verdict.rs");
    let elsewhere: Vec<&String> = found
        .iter()
        .filter(|f| !f.starts_with(&*builder.to_string_lossy()))
        .collect();
    assert!(
        elsewhere.is_empty(),
        "verdicts written outside {}:\n{}",
        builder.display(),
        elsewhere
            .iter()
            .map(|s| s.as_str())
            .collect::<Vec<_>>()
            .join("\n")
    );
    assert!(
        !found.is_empty(),
        "no verdict writer found at all: the scan is broken"
    );
}
