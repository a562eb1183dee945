//! The result model against the files earlier versions wrote and the keys the documentation
//! promises (docs/results.md).
//!
//! Fixtures: `fixtures/samples-fidelity-2026-11-22.jsonl` is the first two lines of
//! bench/fidelity/2026-11-22T013237Z/copies2/samples.jsonl (commit 029725e), written by the
//! untyped writer (`serde_json::json!`); `../mbx-report/tests/fixtures/mbxstress-result.json` is the
//! result.json of the same run.

use std::collections::BTreeSet;
use std::path::PathBuf;

use mbx_result::{
    BackupRow, ChecksumRow, MaxLatencyChecks, PacingResult, RunResult, Sample, SampleHost,
    SampleInstance, SamplePacing, SoftRecoveryRow, TestKind,
};
use serde_json::Value;

fn manifest(rel: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join(rel)
}

fn read(rel: &str) -> String {
    std::fs::read_to_string(manifest(rel)).unwrap_or_else(|e| panic!("{rel}: {e}"))
}

/// The keys docs/results.md lists for samples.jsonl: a sample, an instance, the host.
const SAMPLE_KEYS: [&str; 5] = ["host", "instances", "interval_s", "phase", "timestamp"];
const INSTANCE_KEYS: [&str; 15] = [
    "bdm_reads_per_s",
    "cache_fill",
    "db_read_avg_bytes",
    "db_read_avg_latency_ms",
    "db_reads_per_s",
    "db_write_avg_bytes",
    "db_write_avg_latency_ms",
    "db_writes_per_s",
    "log_reads_per_s",
    "log_write_avg_bytes",
    "log_write_avg_latency_ms",
    "log_writes_per_s",
    "name",
    "page_fault_stalls_per_s",
    "transactions_per_s",
];
const HOST_KEYS: [&str; 3] = ["available_mb", "cpu_pct", "page_fault_stalls_per_s"];

fn keys(v: &Value) -> BTreeSet<String> {
    v.as_object()
        .map(|o| o.keys().cloned().collect())
        .unwrap_or_default()
}

fn set(k: &[&str]) -> BTreeSet<String> {
    k.iter().map(|s| s.to_string()).collect()
}

/// A typed sample serializes to exactly the documented keys, and reads back equal.
#[test]
fn typed_sample_round_trip_has_the_documented_keys() {
    let sample = Sample {
        host: SampleHost {
            available_mb: 2048.5,
            cpu_pct: 12.25,
            page_fault_stalls_per_s: 0.0,
        },
        instances: vec![SampleInstance {
            name: "Instance42.1".into(),
            db_reads_per_s: 182.5,
            db_writes_per_s: 93.0,
            log_writes_per_s: 15.125,
            cache_fill: 1.0,
            ..Default::default()
        }],
        interval_s: 15.0,
        pacing: None,
        phase: "measure".into(),
        timestamp: "2026-11-22T01:33:09Z".into(),
    };
    let line = serde_json::to_string(&sample).expect("serializes");
    let v: Value = serde_json::from_str(&line).expect("JSON");
    assert_eq!(keys(&v), set(&SAMPLE_KEYS));
    assert_eq!(keys(&v["instances"][0]), set(&INSTANCE_KEYS));
    assert_eq!(keys(&v["host"]), set(&HOST_KEYS));
    let back: Sample = serde_json::from_str(&line).expect("reads back");
    assert_eq!(back, sample);
    // The documentation lists the same keys.
    let doc = read("../../docs/results.md");
    for k in SAMPLE_KEYS.iter().chain(&INSTANCE_KEYS).chain(&HOST_KEYS) {
        assert!(
            doc.contains(&format!("`{k}`")),
            "docs/results.md lacks `{k}`"
        );
    }
}

/// An open-loop sample adds `pacing` with the documented keys, in alphabetical order, and reads
/// back equal; a closed-loop one has no such key (above).
#[test]
fn open_loop_sample_has_the_documented_pacing_keys() {
    let sample = Sample {
        interval_s: 5.0,
        pacing: Some(SamplePacing {
            arrived: 600,
            backlog_max: 12,
            dropped: 1,
            late: 40,
            started: 598,
        }),
        phase: "measure".into(),
        ..Sample::default()
    };
    let line = serde_json::to_string(&sample).expect("serializes");
    let v: Value = serde_json::from_str(&line).expect("JSON");
    let pacing_keys = ["arrived", "backlog_max", "dropped", "late", "started"];
    assert_eq!(keys(&v["pacing"]), set(&pacing_keys));
    assert!(line.find("\"interval_s\"") < line.find("\"pacing\""));
    assert!(line.find("\"pacing\"") < line.find("\"phase\""));
    let back: Sample = serde_json::from_str(&line).expect("reads back");
    assert_eq!(back, sample);
    let doc = read("../../docs/results.md");
    for k in pacing_keys.iter().chain(&["pacing"]) {
        assert!(
            doc.contains(&format!("`{k}`")),
            "docs/results.md lacks `{k}`"
        );
    }
}

/// The `pacing` and `max_latency` blocks of result.json: every key documented, and a result
/// without them (an earlier version's) still reads.
#[test]
fn pacing_and_max_latency_blocks_are_documented() {
    let doc = read("../../docs/results.md");
    let r = MaxLatencyChecks::default();
    let p = PacingResult {
        mode: mbx_result::Pacing::Open,
        arrivals: Some(mbx_result::Arrivals::Poisson),
        late_threshold_ms: 1.0,
        transactions_arrived: 1,
        transactions_started: 1,
        transactions_late: 0,
        transactions_dropped: 0,
        backlog_max: 0,
        backlog_max_per_sample: Default::default(),
        transaction_latency_ms: Default::default(),
        latency_from_arrival_ms: Default::default(),
    };
    let pv = serde_json::to_value(&p).expect("pacing");
    let mv = serde_json::to_value(r).expect("max_latency");
    let mut all = keys(&pv);
    all.extend(keys(&mv));
    all.extend(keys(&mv["db_read"]));
    all.extend(["pacing".to_string(), "max_latency".to_string()]);
    for k in all {
        assert!(
            doc.contains(&format!("`{k}`")),
            "docs/results.md lacks `{k}`"
        );
    }
}

/// Samples written before the types existed read, and the typed writer writes the same bytes the
/// untyped one did for the same figures (same keys, same order, same number formatting).
#[test]
fn old_samples_file_reads_and_is_written_as_before() {
    let text = read("tests/fixtures/samples-fidelity-2026-11-22.jsonl");
    let mut lines = 0;
    for line in text.lines() {
        let s: Sample = serde_json::from_str(line).expect("an old sample reads");
        assert_eq!(s.phase, "measure");
        assert_eq!(s.instances.len(), 2);
        assert!(s.instances.iter().all(|i| i.db_reads_per_s > 100.0));
        assert!(s.host.available_mb > 0.0);
        // The old writer: the same figures through `serde_json::Value`. (Compared after one
        // parse on both sides: serde_json's default float parser may be 1 ulp off the text.)
        let untyped: Value = serde_json::from_str(line).expect("JSON");
        assert_eq!(
            serde_json::to_string(&s).expect("serializes"),
            serde_json::to_string(&untyped).expect("serializes")
        );
        lines += 1;
    }
    assert_eq!(lines, 2);
}

/// Reading is as tolerant as the untyped reader was: missing keys and `null` figures read as 0,
/// unknown keys are ignored; a value of the wrong type is an error.
#[test]
fn samples_read_tolerantly_but_typed() {
    let s: Sample = serde_json::from_str(
        r#"{"instances":[{"name":"a","db_reads_per_s":null,"future_key":1}],"phase":"measure"}"#,
    )
    .expect("tolerant");
    assert_eq!(s.instances[0].name, "a");
    assert_eq!(s.instances[0].db_reads_per_s, 0.0);
    assert_eq!(s.host, SampleHost::default());
    assert!(serde_json::from_str::<Sample>(r#"{"interval_s":"15"}"#).is_err());
}

/// The committed result.json reads typed and serializes back with every key and value it had.
#[test]
fn result_json_keys_and_values_survive_the_typed_model() {
    let text = read("../mbx-report/tests/fixtures/mbxstress-result.json");
    let original: Value = serde_json::from_str(&text).expect("JSON");
    let r: RunResult = serde_json::from_str(&text).expect("typed");
    assert_eq!(r.test.test_type, TestKind::Performance);
    assert_eq!(r.config.profile.copies_per_database, 2);
    assert_eq!(r.profile.profile.mailboxes, 2048);
    assert!(r.sections.is_empty());
    let again = serde_json::to_value(&r).expect("serializes");
    fn same(a: &Value, b: &Value, path: &str) {
        match (a, b) {
            (Value::Object(a), Value::Object(b)) => {
                for (k, x) in a {
                    let y = b.get(k).unwrap_or_else(|| panic!("{path}.{k} is gone"));
                    same(x, y, &format!("{path}.{k}"));
                }
            }
            (Value::Array(a), Value::Array(b)) => {
                assert_eq!(a.len(), b.len(), "{path}");
                for (n, (x, y)) in a.iter().zip(b).enumerate() {
                    same(x, y, &format!("{path}[{n}]"));
                }
            }
            _ => assert_eq!(a, b, "{path}"),
        }
    }
    same(&original, &again, "");
    // Nothing but the fields older results lack is added; no backup or checksum sections.
    let added: Vec<String> = keys(&again).difference(&keys(&original)).cloned().collect();
    assert_eq!(added, ["errors", "notes", "stopped"]);
}

/// A result written by another version reads: its config may have keys this version does not
/// know (dropped) or lack keys (defaults); a wrong type is still an error.
#[test]
fn config_of_other_versions_reads() {
    let text = read("../mbx-report/tests/fixtures/mbxstress-result.json");
    let mut v: Value = serde_json::from_str(&text).expect("JSON");
    v["config"]["a_key_from_the_future"] = 1.into();
    v["config"]["cache"]["another"] = true.into();
    v["config"].as_object_mut().expect("object").remove("seed");
    let r: RunResult = serde_json::from_value(v.clone()).expect("reads");
    assert_eq!(r.config.seed, mbx_result::RunConfig::default().seed);
    assert_eq!(r.config.profile.mailboxes, 2048);
    v["config"]["databases"] = "two".into();
    assert!(serde_json::from_value::<RunResult>(v).is_err());
}

/// Backup, soft-recovery and checksum results carry their rows at the top level, with the
/// contract's keys.
#[test]
fn sections_have_the_contract_keys() {
    let text = read("../mbx-report/tests/fixtures/mbxstress-result.json");
    let mut r: RunResult = serde_json::from_str(&text).expect("typed");
    r.test.test_type = TestKind::Backup;
    r.sections.backup = vec![BackupRow {
        instance: "Instance1.1".into(),
        database_size_mb: 100.0,
        elapsed_s: 2.0,
        mb_per_s: 50.0,
    }];
    r.sections.backup_avg_mb_per_s = Some(50.0);
    r.sections.backup_sum_mb_per_s = Some(50.0);
    r.sections.soft_recovery = vec![SoftRecoveryRow {
        instance: "Instance1.1".into(),
        log_files_replayed: 500,
        elapsed_s: 1000.0,
    }];
    r.sections.seconds_per_log = Some(2.0);
    r.sections.checksum = vec![ChecksumRow {
        database_path: "/db/1.edb".into(),
        seen_pages: 32,
        bad_pages: 0,
        correctable_pages: 0,
        wrong_page_number_pages: 0,
        bytes: 1 << 20,
        elapsed_s: 0.5,
    }];
    let v = serde_json::to_value(&r).expect("serializes");
    assert_eq!(v["test"]["type"], "backup");
    assert_eq!(
        keys(&v["backup"][0]),
        set(&["instance", "database_size_mb", "elapsed_s", "mb_per_s"])
    );
    assert_eq!(v["backup_avg_mb_per_s"], 50.0);
    assert_eq!(v["backup_sum_mb_per_s"], 50.0);
    assert_eq!(
        keys(&v["soft_recovery"][0]),
        set(&["instance", "log_files_replayed", "elapsed_s"])
    );
    assert_eq!(v["seconds_per_log"], 2.0);
    assert_eq!(
        keys(&v["checksum"][0]),
        set(&[
            "database_path",
            "seen_pages",
            "bad_pages",
            "correctable_pages",
            "wrong_page_number_pages",
            "bytes",
            "elapsed_s"
        ])
    );
    let back: RunResult = serde_json::from_value(v).expect("reads back");
    assert_eq!(back, r);
    // The contract spells the soft recovery type with a hyphen.
    assert_eq!(
        serde_json::to_value(TestKind::SoftRecovery).expect("json"),
        "soft-recovery"
    );
}

/// A check is pass, fail or not judged (with its reason): `state` and `reason` beside the
/// contract's `name`, `value`, `limit` and `pass` (false when not judged), documented; a check
/// of an earlier version (no `state`) reads with the state its `pass` gives. The verdict passes
/// exactly when it has checks and every one passed, whatever changes it.
#[test]
fn checks_have_a_state_and_the_verdict_follows_them() {
    use mbx_result::{Check, CheckState, StopReason, Stopped, Verdict};
    let judged = Check::new("db_read_latency_avg_ms", 1.5, 20.0, true);
    let nothing = Check::not_judged("db_read_latency_max_ms", 100.0, "4 sample(s), 6 tolerated");
    let v = serde_json::to_value(&nothing).expect("json");
    assert_eq!(
        keys(&v),
        set(&["name", "value", "limit", "pass", "state", "reason", "measures"])
    );
    assert_eq!(v["state"], "not_judged");
    assert_eq!(v["pass"], false);
    let v = serde_json::to_value(&judged).expect("json");
    assert_eq!(
        keys(&v),
        set(&["name", "value", "limit", "pass", "state", "measures"])
    );
    // A check whose name this version does not describe has no `measures`.
    let v = serde_json::to_value(Check::new("x", 1.0, 1.0, true)).expect("json");
    assert_eq!(keys(&v), set(&["name", "value", "limit", "pass", "state"]));
    assert_eq!(v["state"], "pass");
    // Earlier versions' checks: the state follows `pass`.
    let old: Check =
        serde_json::from_str(r#"{"name":"x","value":1.0,"limit":0.0,"pass":false}"#).expect("old");
    assert_eq!(
        (old.state(), old.pass(), old.reason()),
        (CheckState::Fail, false, None)
    );
    let old: Check =
        serde_json::from_str(r#"{"name":"x","value":0.0,"limit":1.0,"pass":true}"#).expect("old");
    assert_eq!(old.state(), CheckState::Pass);
    // An earlier version's maximum-latency check reads with what it measures (from its name),
    // and no strict maximum of its own.
    let old: Check = serde_json::from_str(
        r#"{"name":"db_read_latency_max_ms","value":0.252,"limit":100.0,"pass":true}"#,
    )
    .expect("old");
    assert!(
        old.measures()
            .is_some_and(|m| m.contains("largest sample average")),
        "{old:?}"
    );
    assert_eq!(old.strict_max_ms(), None);
    let max = Check::new("db_read_latency_max_ms", 0.252, 100.0, true).with_strict_max(3.1);
    let v = serde_json::to_value(&max).expect("json");
    assert_eq!(v["strict_max_ms"], 3.1);
    assert_eq!(
        serde_json::from_value::<Check>(v).expect("reads"),
        max,
        "round trip"
    );
    // Round trip.
    let back: Check =
        serde_json::from_value(serde_json::to_value(&nothing).expect("json")).expect("reads");
    assert_eq!(back, nothing);
    // The verdict: pass exactly when every check passes; a check not judged is not a pass.
    let mut verdict = Verdict::of(vec![judged.clone()]);
    assert!(verdict.pass());
    assert_eq!(verdict.state(), CheckState::Pass);
    verdict.set(nothing.clone());
    assert!(!verdict.pass());
    assert_eq!(verdict.state(), CheckState::NotJudged);
    verdict.set(Check::new("errors", 1.0, 0.0, false));
    assert_eq!(verdict.state(), CheckState::Fail);
    verdict.retain(|c| c.name != "errors");
    verdict.set(Check::new("db_read_latency_max_ms", 12.0, 100.0, true));
    assert!(verdict.pass(), "{verdict:?}");
    assert_eq!(verdict.checks().len(), 2);
    assert!(!Verdict::of(Vec::new()).pass());
    assert_eq!(Verdict::of(Vec::new()).state(), CheckState::NotJudged);
    // `stopped.phase`: only when the test stopped early.
    let s = serde_json::to_value(Stopped::new(StopReason::Completed, "done")).expect("json");
    assert_eq!(keys(&s), set(&["reason", "message"]));
    let s = serde_json::to_value(Stopped::new(StopReason::Interrupted, "m").in_phase("measure"))
        .expect("json");
    assert_eq!(s["phase"], "measure");
    let doc = read("../../docs/results.md");
    for k in ["state", "reason", "not_judged", "phase"] {
        assert!(
            doc.contains(&format!("`{k}`")),
            "docs/results.md lacks `{k}`"
        );
    }
    for p in mbx_result::STOP_PHASES {
        assert!(
            doc.contains(&format!("`{p}`")),
            "docs/results.md lacks `{p}`"
        );
    }
}

/// The section of docs/results.md on loadgen's result.json and samples.jsonl.
fn loadgen_doc() -> String {
    let doc = read("../../docs/results.md");
    let start = doc
        .find("## `result.json` of `loadgen`")
        .expect("docs/results.md has a section on loadgen's result.json");
    let rest = &doc[start + 3..];
    rest[..rest.find("\n## ").unwrap_or(rest.len())].to_string()
}

/// Every key of `v` (at every depth; an array's first element; not the keys of the
/// class-to-count maps, which are error classes) is named in `doc` as a word.
fn assert_keys_documented(v: &Value, doc: &str, path: &str) {
    let word = |k: &str| {
        doc.match_indices(k).any(|(i, _)| {
            let before = doc[..i].chars().next_back();
            let after = doc[i + k.len()..].chars().next();
            let edge = |c: Option<char>| !c.is_some_and(|c| c.is_alphanumeric() || c == '_');
            edge(before) && edge(after)
        })
    };
    match v {
        Value::Object(o) => {
            for (k, x) in o {
                assert!(
                    word(k),
                    "docs/results.md (loadgen) lacks `{k}` ({path}.{k})"
                );
                if (k != "failed" && k != "errors") || x.is_array() {
                    assert_keys_documented(x, doc, &format!("{path}.{k}"));
                }
            }
        }
        Value::Array(a) => {
            if let Some(first) = a.first() {
                assert_keys_documented(first, doc, &format!("{path}[]"));
            }
        }
        _ => {}
    }
}

/// A loadgen result.json and sample, every optional key present, name only documented keys.
#[test]
fn loadgen_keys_are_documented() {
    use mbx_result::{
        Check, ClientShare, CommandRow, CorruptedCopy, Delivery, IdleFigures, InitFigures,
        LoadgenConfig, LoadgenError, LoadgenInfo, LoadgenResult, LoadgenSample, ServerUrl,
        StopReason, Stopped, SubmitFigures, TaskRow, Verdict, LOADGEN_KIND, LOADGEN_SCHEMA,
    };
    use mbx_result::{ClientPart, ServerSample, ServerWatch};
    let copy = CorruptedCopy::default();
    let r = LoadgenResult {
        schema: LOADGEN_SCHEMA.into(),
        kind: LOADGEN_KIND.into(),
        test: LoadgenInfo {
            start_unix_s: Some(1.0),
            partition: Some("1/2".into()),
            ..LoadgenInfo::default()
        },
        config: LoadgenConfig {
            servers: vec![ServerUrl::default()],
            clients: vec![ClientShare::default()],
            init_messages: Some(20),
            ..LoadgenConfig::default()
        },
        tasks_planned: 1,
        tasks_dispatched: 1,
        tasks_completed: 1,
        tasks_failed: 0,
        max_unfinished: 1,
        overload_limit: 1,
        overloaded: false,
        tasks: vec![TaskRow {
            failed: [("timeout".to_string(), 1)].into(),
            ..TaskRow::default()
        }],
        commands: vec![CommandRow {
            errors: [("auth".to_string(), 1)].into(),
            ..CommandRow::default()
        }],
        delivery: Some(Delivery {
            corrupted_copies: vec![copy.clone()],
            lost_copies: vec![copy],
            ..Delivery::default()
        }),
        init: Some(InitFigures::default()),
        idle: Some(IdleFigures {
            rss_baseline_bytes: Some(1),
            rss_held_bytes: Some(1),
            rss_per_connection_bytes: Some(1.0),
            cpu_idle_s: Some(1.0),
            cpu_idle_pct: Some(1.0),
            ..IdleFigures::default()
        }),
        submit: Some(SubmitFigures::default()),
        verdict: Verdict::of(vec![Check::not_judged("x", 1.0, "why")]),
        stopped: Stopped::new(StopReason::Interrupted, "Ctrl-C").in_phase("init"),
        errors: vec![LoadgenError::default()],
        samples_file: "samples.jsonl".into(),
        log_file: "test.log".into(),
        notes: vec!["n".into()],
        histograms: [("delivery".to_string(), "HISTFAAAAB".to_string())].into(),
        clients: vec![ClientPart {
            message: Some("m".into()),
            result: Some("c1/result.json".into()),
            excluded: Some("e".into()),
            start_error_ms: Some(1.0),
            task_p95_ms_worst: Some(1.0),
            verdict: Some("PASS".into()),
            ..ClientPart::default()
        }],
        servers: vec![ServerWatch {
            disk_read_ms_avg: Some(1.0),
            disk_write_ms_avg: Some(1.0),
            error: Some("e".into()),
            ..ServerWatch::default()
        }],
    };
    let server_sample = ServerSample {
        disk_read_ms: Some(1.0),
        disk_write_ms: Some(1.0),
        ..ServerSample::default()
    };
    let sample = LoadgenSample {
        task_p50_ms: Some(1.0),
        task_p95_ms: Some(1.0),
        task_max_ms: Some(1.0),
        delivery_p95_ms: Some(1.0),
        appended: Some(1),
        appended_bytes: Some(1),
        connections_open: Some(1),
        connections_failed: Some(1),
        rss_bytes: Some(1),
        cpu_pct: Some(1.0),
        bytes: Some(1),
        ..LoadgenSample::default()
    };
    let doc = loadgen_doc();
    let v = serde_json::to_value(&r).expect("result");
    assert!(mbx_result::is_loadgen(&v));
    assert_keys_documented(&v, &doc, "result");
    let s = serde_json::to_value(&sample).expect("sample");
    assert_eq!(keys(&s).len(), 20, "{s}");
    assert_keys_documented(&s, &doc, "sample");
    let ss = serde_json::to_value(&server_sample).expect("server sample");
    assert_eq!(keys(&ss).len(), 12, "{ss}");
    assert_keys_documented(&ss, &doc, "server sample");
    // And the check finds a key the section does not name.
    let caught = std::panic::catch_unwind(|| {
        assert_keys_documented(&serde_json::json!({"no_such_key_x": 1}), &doc, "t")
    });
    assert!(caught.is_err());
}
