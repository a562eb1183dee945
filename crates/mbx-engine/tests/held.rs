//! Issue 24.6: errors keep their class, and the end of a test never discards what it measured.
//! A run holds its database files open from its start and marks them clean through those
//! descriptors: a database file deleted during the run, or an I/O error on that last header
//! write, leaves the measurement whole; a header that cannot be read while attaching is an I/O
//! error with its errno and path, never "not an mbxstress database". Real files (one database
//! of a few MiB, seconds), errors from the fault backend. Each test's files live in a temporary
//! directory under the target directory, removed when the test ends.

use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};

use mbx_config::RunConfig;
use mbx_engine::plan::Plan;
use mbx_engine::result::{RunResult, StopReason};
use mbx_engine::{run_performance, Observer, Phase, RunEvent};
use mbx_io::{EngineKind, FaultKind, FaultQueue, FaultRule, IoOp, IoQueue};
use mbx_store::{plan_paths, prepare, CreateParams, DatabaseSpec, DbState, PreparedDatabase};

const EIO: i32 = 5;

struct Setup {
    cfg: RunConfig,
    specs: Vec<DatabaseSpec>,
    params: CreateParams,
    dbs: Vec<PreparedDatabase>,
    _dir: tempfile::TempDir,
}

/// One database of 4 MiB, prepared; a 2 s Performance test of it with lenient latency limits
/// (the machine is shared: what is judged here is what the result keeps).
fn setup(name: &str) -> Setup {
    let dir = tempfile::Builder::new()
        .prefix(&format!("engine-held-{name}-"))
        .tempdir_in(env!("CARGO_TARGET_TMPDIR"))
        .expect("create scratch dir");
    let cfg = RunConfig {
        profile: mbx_config::Profile {
            mailboxes: 40,
            iops_per_mailbox: 1.0,
            mailbox_quota_mb: 4,
            databases: 1,
            messages_per_day: None,
            message_size_kb: None,
            copies_per_database: 1,
        },
        threads: 4,
        duration_s: 2.0,
        sample_interval_s: 1.0,
        db_paths: vec![dir.path().join("db")],
        log_paths: vec![dir.path().join("logs")],
        engine: mbx_config::IoBackend::default(),
        cache: mbx_config::CacheConfig {
            max_dirty_age_s: 0.5,
            ..Default::default()
        },
        thresholds: mbx_config::Thresholds {
            iops_margin: 0.5,
            db_read_avg_ms: 10_000.0,
            db_read_max_ms: 10_000.0,
            log_write_avg_ms: 10_000.0,
            log_write_max_ms: 10_000.0,
            ..Default::default()
        },
        ..Default::default()
    };
    let specs = plan_paths(&cfg.db_paths, &cfg.log_paths, 1).expect("plan");
    let params = CreateParams {
        data_pages: 4 * 32,
        mailboxes: cfg.profile.mailboxes,
        quota_mb: cfg.profile.mailbox_quota_mb,
        databases: 1,
        compressibility_pct: 0,
        engine: EngineKind::default(),
        direct: true,
        force: false,
        allow_device: false,
        queue_depth: 4,
        tool_version: "test".into(),
    };
    let dbs = prepare(&specs, &params, &|_| {}, &AtomicBool::new(false), None).expect("prepare");
    Setup {
        cfg,
        specs,
        params,
        dbs,
        _dir: dir,
    }
}

/// Collects the test log; deletes `delete` when the measured phase begins.
#[derive(Default)]
struct Obs {
    logs: Vec<String>,
    delete: Option<PathBuf>,
    deleted: bool,
}

impl Observer for Obs {
    fn on_event(&mut self, e: RunEvent<'_>) {
        match e {
            RunEvent::Log(t) => self.logs.push(t.to_string()),
            RunEvent::Phase(Phase::Measure) => {
                if let Some(p) = self.delete.take() {
                    std::fs::remove_file(&p).expect("delete the database file");
                    self.deleted = true;
                }
            }
            _ => {}
        }
    }
}

/// A wrapper that puts `rules` on the first queue the test makes and leaves the others alone.
fn first_queue_faults(
    rules: Vec<FaultRule>,
) -> impl Fn(Box<dyn IoQueue>) -> Box<dyn IoQueue> + Sync {
    let made = AtomicUsize::new(0);
    move |q| {
        if made.fetch_add(1, Ordering::SeqCst) == 0 {
            Box::new(FaultQueue::new(q, rules.clone()))
        } else {
            q
        }
    }
}

/// The whole measurement: rates over about the configured duration.
fn assert_measured(r: &RunResult, cfg: &RunConfig) {
    assert!(r.achieved_iops > 0.0, "achieved {}", r.achieved_iops);
    assert!(
        (r.test.duration_s - cfg.duration_s).abs() < 0.5,
        "measured {} s of {}",
        r.test.duration_s,
        cfg.duration_s
    );
    assert_eq!(r.instances.len(), 1);
    assert!(r.instances[0].transactional.db_reads_per_s > 0.0);
}

/// The database file deleted while the test measures: the test writes the file it holds open
/// and marks that one clean, so the measurement stands, and a note says the path no longer
/// names the file measured. (It used to reopen the path to mark it clean: the error discarded
/// the whole measurement.)
#[test]
fn a_database_deleted_during_the_run_keeps_the_measurement() {
    let s = setup("deleted");
    let path = s.dbs[0].spec.path.clone();
    let mut obs = Obs {
        delete: Some(path.clone()),
        ..Obs::default()
    };
    let r = run_performance(&s.cfg, &s.dbs, &mut obs, &AtomicBool::new(false), None)
        .expect("the test ends with a result");
    assert!(obs.deleted, "the measured phase began");
    assert!(r.stopped.reason.ran_to_completion(), "{:?}", r.stopped);
    assert_measured(&r, &s.cfg);
    let note = r
        .notes
        .iter()
        .find(|n| n.contains("deleted or replaced"))
        .expect("a note says so");
    assert!(note.contains(&path.display().to_string()), "{note}");
    assert!(r.database_size_bytes.final_ > 0);
}

/// EIO on the write that marks the database clean, after a complete measurement (also with
/// `continue_on_errors`): the result keeps every figure and stops with `io_error`, `errors[]`
/// naming the errno, the file and the offset; the database stays marked dirty.
#[test]
fn an_io_error_marking_the_database_clean_keeps_the_measurement() {
    let mut s = setup("clean-eio");
    s.cfg.continue_on_errors = true;
    // The first queue a test makes holds its database files: two header writes mark the
    // database dirty at the start, the next two mark it clean at the end.
    let wrap = first_queue_faults(vec![FaultRule::new(
        Some(IoOp::Write),
        FaultKind::Error(EIO),
    )
    .after(2)
    .times(1)]);
    let mut obs = Obs::default();
    let r = run_performance(
        &s.cfg,
        &s.dbs,
        &mut obs,
        &AtomicBool::new(false),
        Some(&wrap),
    )
    .expect("the test ends with a result");
    assert_eq!(r.stopped.reason, StopReason::IoError, "{:?}", r.stopped);
    assert!(!r.verdict.pass());
    assert_measured(&r, &s.cfg);
    let path = s.dbs[0].spec.path.display().to_string();
    let e = r
        .errors
        .iter()
        .find(|e| e.class == "io_error")
        .expect("the error is listed");
    assert_eq!(e.errno, Some(EIO), "{e:?}");
    assert_eq!(e.path.as_deref(), Some(path.as_str()), "{e:?}");
    assert_eq!(e.offset, Some(0), "{e:?}");
    assert!(
        obs.logs
            .iter()
            .any(|l| l.starts_with("Could not mark the database clean")),
        "{:#?}",
        obs.logs
    );
    let h = mbx_store::verify::read_database_header(&s.dbs[0].spec.path).expect("header");
    assert_eq!(h.state, DbState::Dirty);
}

/// EIO reading a database's header as the Checksum test attaches it: an I/O error with its
/// errno, path and offset (exit 3), stopped while attaching (before the test began), never
/// "not an mbxstress database" (a usage error, exit 2).
#[test]
fn an_unreadable_header_while_attaching_is_an_io_error() {
    let s = setup("attach-eio");
    let wrap = first_queue_faults(vec![FaultRule::new(
        Some(IoOp::Read),
        FaultKind::Error(EIO),
    )]);
    let mut obs = Obs::default();
    let plan = Plan::checksum(&s.cfg);
    let out = mbx_engine::start(
        mbx_engine::RunRequest {
            cfg: &s.cfg,
            plan: &plan,
            storage: mbx_engine::Storage::Files {
                specs: &s.specs,
                create: &s.params,
                wrap: Some(&wrap),
            },
            throughput: None,
        },
        &mut obs,
        &AtomicBool::new(false),
    );
    let r = &out.result;
    assert_eq!(r.stopped.reason, StopReason::IoError, "{:?}", r.stopped);
    assert!(
        !r.stopped.message.contains("not an mbxstress database"),
        "{}",
        r.stopped.message
    );
    let err = out.error.expect("the error is returned");
    let store = match &err {
        mbx_engine::EngineError::Store(e) => e,
        other => panic!("not a store error: {other:?}"),
    };
    assert!(!store.is_user_error(), "{store}");
    let path = s.specs[0].path.display().to_string();
    let e = r.errors.first().expect("the error is listed");
    assert_eq!(
        (e.class.as_str(), e.errno, e.path.as_deref(), e.offset),
        ("io_error", Some(EIO), Some(path.as_str()), Some(0)),
        "{e:?}"
    );
    assert!(
        !obs.logs
            .iter()
            .any(|l| l.starts_with("Attach ")
                || l.starts_with("Preparations for testing are complete")),
        "stopped while attaching: {:#?}",
        obs.logs
    );
}
