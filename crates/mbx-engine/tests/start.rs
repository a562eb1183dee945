//! The engine's one entry point, [`mbx_engine::start`] (issue 26 item 5): whatever the storage,
//! it always gives back a result that says how the test ended, with the error that stopped it.

use std::path::PathBuf;
use std::sync::atomic::AtomicBool;

use mbx_config::RunConfig;
use mbx_engine::result::StopReason;
use mbx_engine::{Observer, Plan, RunEvent, RunRequest, Storage};
use mbx_io::EngineKind;
use mbx_store::{plan_paths, CreateParams};

#[derive(Default)]
struct Lines(Vec<String>);
impl Observer for Lines {
    fn on_event(&mut self, e: RunEvent<'_>) {
        if let RunEvent::Log(l) = e {
            self.0.push(l.to_string());
        }
    }
}

fn params() -> CreateParams {
    CreateParams {
        data_pages: 32,
        mailboxes: 1,
        quota_mb: 1,
        databases: 1,
        compressibility_pct: 0,
        engine: EngineKind::Sync,
        direct: false,
        force: false,
        allow_device: false,
        queue_depth: 4,
        tool_version: "test".into(),
    }
}

#[test]
fn a_test_whose_databases_are_missing_still_ends_with_a_result_that_says_why() {
    // A Checksum attaches existing databases; there are none: nothing is written or read.
    let dir = tempfile::tempdir().expect("tempdir");
    let db: Vec<PathBuf> = vec![dir.path().join("db")];
    let logs: Vec<PathBuf> = vec![dir.path().join("logs")];
    let specs = plan_paths(&db, &logs, 1).expect("plan");
    let cfg = RunConfig::default();
    let plan = Plan::checksum(&cfg);
    let create = params();
    let mut lines = Lines::default();
    let out = mbx_engine::start(
        RunRequest {
            cfg: &cfg,
            plan: &plan,
            storage: Storage::Files {
                specs: &specs,
                create: &create,
                wrap: None,
            },
            throughput: None,
        },
        &mut lines,
        &AtomicBool::new(false),
    );
    let e = out
        .error
        .unwrap_or_else(|| panic!("no error: {:?} {:?}", out.result.stopped, lines.0));
    assert!(e.to_string().contains("no database at"), "{e}");
    assert_eq!(out.result.stopped.reason, StopReason::Error);
    assert_eq!(out.result.stopped.phase.as_deref(), Some("prepare"));
    assert_eq!(out.result.test.test_type, mbx_config::TestKind::Checksum);
    assert!(!out.result.verdict.pass());
    assert!(
        lines
            .0
            .last()
            .is_some_and(|l| l.starts_with("Test error: ")),
        "{:?}",
        lines.0
    );
    // Nothing was created.
    assert!(!db[0].exists());
}
