//! The Performance test on small databases (MiBs) for a few seconds, on the real device: a run
//! with fewer mailboxes than databases on databases the cache holds whole. What needs no real
//! device (the I/O shape and totals of a passing run, slow storage, replication, crashes, the
//! continuity of a run's log) is tested on the simulated one (tests/sim.rs). Each test's files
//! live in a temporary directory under the target directory, removed when the test ends.

use std::sync::atomic::AtomicBool;
use std::time::Duration;

use mbx_config::RunConfig;
use mbx_engine::{run_performance, Observer, RunEvent};
use mbx_io::EngineKind;
use mbx_store::{plan_paths, prepare, CreateParams, PreparedDatabase};

#[derive(Default)]
struct Collect {
    logs: Vec<String>,
    samples: Vec<mbx_engine::result::Sample>,
    progress: usize,
}

impl Observer for Collect {
    fn on_event(&mut self, e: RunEvent<'_>) {
        match e {
            RunEvent::Log(t) => self.logs.push(t.to_string()),
            RunEvent::Sample(v) => self.samples.push(v.clone()),
            RunEvent::Progress(_) => self.progress += 1,
            RunEvent::Phase(_) | RunEvent::Prepare(_) => {}
        }
    }
}

/// `databases` databases of `mib_per_db` MiB each, created in a fresh scratch directory that is
/// removed when the returned guard is dropped (keep it alive while the databases are used).
fn setup(
    name: &str,
    databases: u32,
    mib_per_db: u64,
) -> (RunConfig, Vec<PreparedDatabase>, tempfile::TempDir) {
    let scratch = tempfile::Builder::new()
        .prefix(&format!("engine-{name}-"))
        .tempdir_in(env!("CARGO_TARGET_TMPDIR"))
        .expect("create scratch dir");
    let dir = scratch.path();
    let cfg = RunConfig {
        profile: mbx_config::Profile {
            mailboxes: 200,
            iops_per_mailbox: 1.0,
            mailbox_quota_mb: mib_per_db,
            databases,
            messages_per_day: None,
            message_size_kb: None,
            copies_per_database: 1,
        },
        duration_s: 4.0,
        sample_interval_s: 1.0,
        db_paths: vec![dir.join("db")],
        log_paths: vec![dir.join("logs")],
        engine: mbx_config::IoBackend::default(),
        cache: mbx_config::CacheConfig {
            max_dirty_age_s: 1.0,
            ..Default::default()
        },
        // Seconds-long runs on a shared CI machine: judge the mechanism, not pacing precision
        // (bench/fidelity measures that over minutes).
        thresholds: mbx_config::Thresholds {
            iops_margin: 0.25,
            // Other tests load the same disk; latency limits are tested by the fault test below.
            db_read_avg_ms: 10_000.0,
            db_read_max_ms: 10_000.0,
            log_write_avg_ms: 10_000.0,
            log_write_max_ms: 10_000.0,
            // 4 one-second samples: no tolerance, so the maximum-latency checks judge them.
            max_latency_errors: 0,
            ..Default::default()
        },
        ..Default::default()
    };
    // Databases of `mib_per_db` MiB each (set through data pages directly).
    let p = &cfg.profile;
    let specs = plan_paths(&cfg.db_paths, &cfg.log_paths, p.databases).expect("plan");
    let params = CreateParams {
        data_pages: mib_per_db * 32,
        mailboxes: p.mailboxes,
        quota_mb: p.mailbox_quota_mb,
        databases: p.databases,
        compressibility_pct: 0,
        engine: EngineKind::default(),
        direct: true,
        force: false,
        allow_device: false,
        queue_depth: 4,
        tool_version: "test".into(),
    };
    let dbs = prepare(&specs, &params, &|_| {}, &AtomicBool::new(false), None).expect("prepare");
    (cfg, dbs, scratch)
}

/// Issue 8.5: with fewer mailboxes than databases, or a database smaller than the minimum cache,
/// the attain phase used to wait forever (one database never got a transaction; a 32-page cache
/// of 64 frames can never be 90% full). Every database must now get I/O and the prerequisite met.
#[test]
fn fewer_mailboxes_than_databases_and_tiny_databases_complete() {
    let (mut cfg, dbs, _dir) = setup("tiny", 2, 1);
    cfg.profile.mailboxes = 1;
    cfg.profile.iops_per_mailbox = 40.0;
    // Every page fits in the cache, so the measured I/O is the flusher's writes of pages older
    // than the dirty-page age (1 s): measure long enough for each database to have some.
    cfg.duration_s = 5.0;
    let mut obs = Collect::default();
    let started = std::time::Instant::now();
    let r = run_performance(&cfg, &dbs, &mut obs, &AtomicBool::new(false), None).expect("run");
    assert!(
        started.elapsed() < Duration::from_secs(50),
        "took {:?}",
        started.elapsed()
    );
    assert!(
        obs.logs
            .iter()
            .any(|l| l.starts_with("Cache prerequisite met")),
        "{:#?}",
        obs.logs
    );
    assert!(
        !obs.logs
            .iter()
            .any(|l| l.contains("prerequisite was not met")),
        "{:#?}",
        obs.logs
    );
    for inst in &r.instances {
        assert!(
            inst.transactional.db_reads_per_s + inst.transactional.db_writes_per_s > 0.0,
            "{} had no I/O",
            inst.name
        );
        assert!(
            inst.cache_fill >= 0.9,
            "{} cache {}",
            inst.name,
            inst.cache_fill
        );
    }
}
