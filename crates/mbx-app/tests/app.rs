//! The application layer as a library: a run without the binary, the configuration's layers
//! and their provenance, and the event stream's wire format.

use std::path::{Path, PathBuf};
use std::sync::atomic::AtomicBool;

use mbx_app::config::{Flag, Layers, Origin, Sources};
use mbx_app::run::RunRequest;
use mbx_app::{Event, Line};
use mbx_config::TestKind;

/// Thresholds no loaded test machine fails, a cache that settles in a second.
const FAST: &str = "[cache]\nmax_dirty_age_s = 1\n[thresholds]\niops_margin = 0.9\ndb_read_avg_ms = 10000\ndb_read_max_ms = 10000\nlog_write_avg_ms = 10000\nlog_write_max_ms = 10000\nmax_latency_errors = 0\n";

fn tiny_flags(dir: &Path) -> Vec<Flag> {
    vec![
        Flag::new("mailboxes", "--mailboxes", Some(4u64), |c, v| {
            c.profile.mailboxes = v
        }),
        Flag::new("mailbox_quota_mb", "--quota-mb", Some(2u64), |c, v| {
            c.profile.mailbox_quota_mb = v
        }),
        Flag::new("databases", "--databases", Some(1u32), |c, v| {
            c.profile.databases = v
        }),
        Flag::new(
            "iops_per_mailbox",
            "--iops-per-mailbox",
            Some(10.0),
            |c, v| c.profile.iops_per_mailbox = v,
        ),
        Flag::new("threads", "--threads", Some(4u32), |c, v| c.threads = v),
        Flag::new("duration_s", "--duration", Some(2.0), |c, v| {
            c.duration_s = v
        }),
        Flag::new(
            "sample_interval_s",
            "--sample-interval",
            Some(1.0),
            |c, v| c.sample_interval_s = v,
        ),
        Flag::switch("direct", "--buffered", true, |c| c.direct = false),
        Flag::new(
            "db_paths",
            "--db-path",
            Some(vec![dir.join("db")]),
            |c, v| c.db_paths = v,
        ),
        Flag::new(
            "log_paths",
            "--log-path",
            Some(vec![dir.join("log")]),
            |c, v| c.log_paths = v,
        ),
    ]
}

fn write(dir: &Path, name: &str, text: &str) -> PathBuf {
    let path = dir.join(name);
    std::fs::write(&path, text).expect("write");
    path
}

fn no_doctor(
    _: &mbx_config::RunConfig,
    _: &[mbx_store::DatabaseSpec],
    _: &mbx_store::CreateParams,
) -> mbx_result::DoctorReport {
    mbx_result::DoctorReport {
        schema: mbx_result::DOCTOR_SCHEMA.into(),
        fast: true,
        checks: Vec::new(),
    }
}

/// Issue 26, item 1: a test runs in-process through `mbx_app::run::run`, its events recorded
/// by a `Vec<Event>` sink: phases, samples, the preflight report, and the result last, naming
/// the result.json written.
#[test]
fn a_run_is_a_library_call_that_reports_through_the_event_stream() {
    let dir = tempfile::tempdir().expect("tempdir");
    let config = write(dir.path(), "fast.toml", FAST);
    let layers = Layers::read(Sources {
        config: Some(config),
        flags: tiny_flags(dir.path()),
        ..Sources::default()
    })
    .expect("reads");
    let cancel = AtomicBool::new(false);
    let out = dir.path().join("out");
    let req = RunRequest {
        layers: &layers,
        kind: TestKind::Performance,
        out: Some(out.clone()),
        force: false,
        allow_device: false,
        gate: None,
        cancel: &cancel,
        preflight: &no_doctor,
    };
    let mut events: Vec<Event> = Vec::new();
    let ran = mbx_app::run::run(&req, &mut events).expect("runs");
    assert_eq!(ran.path, out.join("result.json"));
    assert!(ran.path.is_file());
    assert!(out.join("test.log").is_file() && out.join("samples.jsonl").is_file());
    assert!(events.iter().any(|e| matches!(
        e,
        Event::Phase {
            phase: mbx_engine::Phase::Measure
        }
    )));
    assert!(events.iter().any(|e| matches!(e, Event::Sample { .. })));
    assert!(events
        .iter()
        .any(|e| matches!(e, Event::Doctor { doctor } if doctor.fast)));
    let Some(Event::Result {
        path,
        pass,
        stopped,
        ..
    }) = events.last()
    else {
        panic!("the last event is not the result: {:?}", events.last());
    };
    assert_eq!((path, *pass), (&ran.path, ran.pass));
    assert_eq!(stopped.reason, ran.reason);
    let written: mbx_result::RunResult =
        serde_json::from_slice(&std::fs::read(&ran.path).expect("read")).expect("result.json");
    assert_eq!(written.verdict.pass(), ran.pass);
    assert_eq!(written.stopped.reason, ran.reason);
}

/// Issue 26, item 2: each file is read once. After `Layers::read` the --config file is gone,
/// and still a message names the key and the file it came from (the binary used to read the
/// file again to find out, and said "the built-in default" when it could not).
#[test]
fn provenance_is_known_without_reading_the_files_again() {
    let dir = tempfile::tempdir().expect("tempdir");
    let config = write(dir.path(), "c.toml", "threads = 5000\nduration_s = 30\n");
    let profile = write(
        dir.path(),
        "p.toml",
        "mailboxes = 100\niops_per_mailbox = 0.1\nmailbox_quota_mb = 10\ndatabases = 1\ncopies_per_database = 1\n",
    );
    let layers = Layers::read(Sources {
        config: Some(config.clone()),
        profile: Some(profile.clone()),
        flags: vec![
            Flag::new("threads", "--threads", None::<u32>, |c, v| c.threads = v),
            Flag::new("mailboxes", "--mailboxes", Some(70u64), |c, v| {
                c.profile.mailboxes = v
            }),
        ],
        ..Sources::default()
    })
    .expect("reads");
    std::fs::remove_file(&config).expect("remove");
    std::fs::remove_file(&profile).expect("remove");
    assert_eq!(layers.origin("threads"), Origin::Config(&config));
    assert_eq!(layers.origin("duration_s"), Origin::Config(&config));
    assert_eq!(layers.origin("mailboxes"), Origin::Flag("--mailboxes"));
    assert_eq!(layers.origin("databases"), Origin::Profile(&profile));
    assert_eq!(layers.origin("seed"), Origin::Default);
    let e = layers
        .resolve(TestKind::Performance)
        .expect_err("5000 threads");
    let msg = e.to_string();
    assert!(e.is_usage(), "{msg}");
    assert!(
        msg.starts_with(&format!(
            "invalid `threads` in --config {}: ",
            config.display()
        )),
        "{msg}"
    );
    assert!(
        msg.ends_with("; correct it there or override it with --threads"),
        "{msg}"
    );
    // The Stress default (24 h) yields to the file's duration, known from the same parse.
    let layers = Layers::read(Sources {
        config: Some(write(dir.path(), "d.toml", "duration_s = 30\n")),
        ..Sources::default()
    })
    .expect("reads");
    std::fs::remove_file(dir.path().join("d.toml")).expect("remove");
    let cfg = layers.resolve_for(TestKind::Stress).expect("resolves");
    assert_eq!(cfg.duration_s, 30.0);
}

/// Issue 26, item 3: the lines `--progress jsonl` writes come from `Event`, byte for byte what
/// the `json!` sites wrote before (keys in alphabetical order), and read back as the same
/// events: an error event carries result.json's error entry (an object), find-max's answer may
/// be null.
#[test]
fn the_stream_lines_are_the_documented_bytes_and_read_back() {
    let entry = mbx_result::ErrorEntry {
        class: "no_space".into(),
        path: Some("/x/db1.edb".into()),
        errno: Some(28),
        count: 1,
        first_at: "2026-01-01T00:00:00Z".into(),
        message: "No space left on device".into(),
        ..Default::default()
    };
    let stopped = mbx_result::Stopped::new(mbx_result::StopReason::IoError, "disk full");
    let cases = [
        (
            Event::Error {
                error: entry.clone(),
            },
            serde_json::json!({ "event": "error", "error": entry }),
        ),
        (
            Event::Create {
                database: 1,
                bytes_done: 4096,
            },
            serde_json::json!({ "event": "create", "database": 1, "bytes_done": 4096 }),
        ),
        (
            Event::Result {
                path: "/r/result.json".into(),
                pass: false,
                verdict: "fail".into(),
                stopped: stopped.clone(),
            },
            serde_json::json!({
                "event": "result",
                "path": "/r/result.json",
                "pass": false,
                "verdict": "fail",
                "stopped": stopped,
            }),
        ),
        (
            Event::FindMax {
                path: "/r/find-max.json".into(),
                mailboxes: None,
                iops: None,
                end: "steps".into(),
            },
            serde_json::json!({ "event": "find_max", "path": "/r/find-max.json", "mailboxes": null, "iops": null, "end": "steps" }),
        ),
        (
            Event::SuiteSkip {
                test: "1-performance".into(),
                pass: true,
            },
            serde_json::json!({"event": "suite_skip", "test": "1-performance", "pass": true}),
        ),
        (
            Event::Ready { pid: 7 },
            serde_json::json!({ "event": "ready", "pid": 7 }),
        ),
    ];
    for (event, before) in cases {
        let line = Line::from(event.clone()).to_json();
        assert_eq!(line, before.to_string());
        assert_eq!(Line::parse(&line).expect(&line).event, event);
    }
}
