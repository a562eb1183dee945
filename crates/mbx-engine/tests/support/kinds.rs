//! One run of each test type on a fresh simulated device and clock, seeded: what the
//! determinism and verdict-consistency tests share.

use std::sync::atomic::AtomicBool;
use std::sync::Arc;
use std::time::Duration;

use mbx_config::{RunConfig, Sizing};
use mbx_engine::findmax::FindMaxSpec;
use mbx_engine::result::RunResult;
use mbx_engine::throughput::{throughput, Sized};
use mbx_engine::{InstanceSpec, Observer, Plan, RunEvent, RunRequest, Storage};
use mbx_io::sim::{Latency, LatencyModel, SimClock, SimDevice, SimQueue};
use mbx_io::FaultRule;
use mbx_store::header::{DbHeader, DbState, FORMAT_VERSION, HEADER_PAGES};
use mbx_store::page::PAGE_SIZE;

/// Every plan-driven test type, by name.
pub const KINDS: [&str; 6] = [
    "performance",
    "stress",
    "backup",
    "checksum",
    "soft_recovery",
    "search_step",
];

pub struct Quiet;
impl Observer for Quiet {
    fn on_event(&mut self, _e: RunEvent<'_>) {}
}

/// 200 IOPS on one database of 256 pages for 30 s, samples short enough for the
/// maximum-latency checks to judge.
pub fn config() -> RunConfig {
    let mut cfg = RunConfig::default();
    cfg.profile.mailboxes = 100;
    cfg.profile.iops_per_mailbox = 2.0;
    cfg.profile.databases = 1;
    cfg.duration_s = 30.0;
    cfg.sample_interval_s =
        mbx_config::sample_interval_for(30.0, cfg.thresholds.max_latency_errors);
    cfg.cache.max_dirty_age_s = 1.0;
    cfg
}

/// A database as `prepare` leaves it (pages at generation 1, both header copies).
fn database(dev: &SimDevice) -> InstanceSpec {
    let pages = 256;
    let spec = crate::simdb::database(
        dev,
        "/sim/db/db0.edb",
        0xd0,
        pages,
        "Instance.1",
        "/sim/logs/db0",
    );
    let header = DbHeader {
        database_id: spec.database_id,
        generation: 1,
        format_version: FORMAT_VERSION,
        page_size: PAGE_SIZE as u32,
        page_count: HEADER_PAGES + pages,
        state: DbState::Clean,
        database_index: 0,
        created_pages: pages,
        mailboxes: 100,
        quota_mb: 1,
        databases: 1,
        compressibility_pct: 0,
        created_unix_s: 0,
        tool_version: "test".into(),
    };
    let mut page = vec![0u8; PAGE_SIZE];
    for copy in 0..HEADER_PAGES {
        header.encode(&mut page, copy);
        dev.write_at(&spec.db_path, copy * PAGE_SIZE as u64, &page)
            .expect("header");
    }
    spec
}

/// The plan of test type `kind` for `cfg`.
pub fn plan(kind: &str, cfg: &RunConfig) -> Plan {
    match kind {
        "performance" => Plan::performance(cfg),
        "stress" => Plan::stress(cfg),
        "backup" => Plan::backup(cfg),
        "checksum" => Plan::checksum(cfg),
        "soft_recovery" => Plan::soft_recovery(cfg, 2),
        "search_step" => Plan::search_step(cfg),
        other => panic!("no test type {other}"),
    }
}

/// Runs test type `kind` with `cfg` on a fresh simulated device and clock with `seed`, the
/// device failing as `faults` say, through the engine's one entry point ([`mbx_engine::start`]).
pub fn run(kind: &str, cfg: &RunConfig, seed: u64, faults: Vec<FaultRule>) -> RunResult {
    let dev = SimDevice::new();
    let spec = database(&dev);
    let clock = Arc::new(SimClock::new());
    let depth = mbx_engine::queue_depth(cfg, 1);
    let queue = SimQueue::new(dev, clock, depth, LatencyModel::typical(), seed).with_faults(faults);
    let plan = plan(kind, cfg);
    let req = RunRequest {
        cfg,
        plan: &plan,
        storage: Storage::Queue {
            specs: vec![spec],
            queue: Box::new(queue),
        },
        throughput: None,
    };
    let out = mbx_engine::start(req, &mut Quiet, &AtomicBool::new(false));
    if let Some(e) = out.error {
        panic!("{kind}: {e}");
    }
    out.result
}

/// The throughput test (search, then the held test) on a device of 400 transactional IOPS;
/// `iops_margin` decides whether the held test can pass.
pub fn run_throughput(iops_margin: f64) -> RunResult {
    let ten = Latency::fixed(Duration::from_millis(10));
    let model = LatencyModel::uniform(Latency::ZERO)
        .reads(ten)
        .writes(ten)
        .channels(4);
    let mut sim = crate::steps::Sim::new(model);
    let mut cfg = crate::steps::config(100.0);
    cfg.sizing = Sizing::Capacity;
    cfg.capacity_pct = 10.0;
    cfg.throughput_pct = 50.0;
    cfg.bdm = false;
    cfg.threads = 64;
    cfg.duration_s = 20.0;
    cfg.thresholds.iops_margin = iops_margin;
    cfg.thresholds.max_latency_errors = 0;
    let clock = sim.clock.clone();
    let out = throughput(
        &cfg,
        FindMaxSpec {
            max_steps: 8,
            resolution: 0.05,
            max_s: 86_400.0,
            confirmations: 0,
        },
        Sized {
            free_bytes: 1 << 30,
            database_bytes: 8192 * 32768,
        },
        &|c: &RunConfig| Plan::performance(c),
        &mut Quiet,
        &AtomicBool::new(false),
        &*clock,
        &mut |c, p, o| sim.step(c, p, o),
    );
    out.outcome.expect("the held test")
}
