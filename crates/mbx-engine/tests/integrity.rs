//! Integrity by default, on the simulated clock and device (deterministic, seeded):
//! - every transactional read checksums its whole page at the default `checksum_reads_pct`, so a
//!   one-bit flip inside a block's payload (which the block stamps cannot see) is found by the
//!   first read that meets it;
//! - the generation journal: a page rolled back to an older copy between two runs is found by the
//!   next run, and a crash leaves no false stale finding behind.

#[path = "support/simdb.rs"]
mod simdb;

use std::path::Path;
use std::sync::atomic::AtomicBool;
use std::sync::Arc;

use mbx_config::RunConfig;
use mbx_engine::result::{RunResult, StopReason};
use mbx_engine::{run_plan, InstanceSpec, Observer, Plan, RunEvent};
use mbx_io::sim::{LatencyModel, SimClock, SimDevice, SimQueue};
use mbx_store::header::HEADER_PAGES;
use mbx_store::page::PAGE_SIZE;

struct Quiet;

impl Observer for Quiet {
    fn on_event(&mut self, _: RunEvent<'_>) {}
}

fn config(duration_s: f64) -> RunConfig {
    let mut cfg = RunConfig::default();
    cfg.profile.mailboxes = 100;
    cfg.profile.iops_per_mailbox = 1.0;
    cfg.profile.databases = 1;
    cfg.duration_s = duration_s;
    cfg.sample_interval_s = 15.0;
    cfg.cache.max_dirty_age_s = 1.0;
    cfg
}

/// Runs `plan` on `specs` on the device with a clock whose wall time starts `wall_offset_s`
/// after the simulated clock's default (a later run has later page generations).
fn run_with(
    dev: &SimDevice,
    cfg: &RunConfig,
    plan: &Plan,
    specs: Vec<InstanceSpec>,
    seed: u64,
    wall_offset_s: u64,
) -> RunResult {
    let wall = std::time::UNIX_EPOCH
        + std::time::Duration::from_secs(SimClock::DEFAULT_WALL_START + wall_offset_s);
    let clock = Arc::new(SimClock::starting_at(wall));
    let depth = mbx_engine::queue_depth(cfg, specs.len());
    let queue = SimQueue::new(dev.clone(), clock, depth, LatencyModel::typical(), seed);
    run_plan(
        cfg,
        plan,
        specs,
        Box::new(queue),
        &mut Quiet,
        &AtomicBool::new(false),
    )
    .expect("run")
}

/// Flips one bit in the middle of block 4's payload of every data page: not in the header, not
/// in a stamp (the last 8 bytes of each 4 KiB block), so only the whole-page checksum sees it.
fn flip_a_payload_bit_of_every_page(dev: &SimDevice, path: &Path, pages: u64) {
    let mut page = vec![0u8; PAGE_SIZE];
    for n in HEADER_PAGES..HEADER_PAGES + pages {
        let at = n * PAGE_SIZE as u64;
        dev.read_at(path, at, &mut page).expect("read page");
        page[4 * 4096 + 2000] ^= 0x08;
        dev.write_at(path, at, &page).expect("flip a bit");
    }
}

/// At the default `checksum_reads_pct`, a page whose payload has one flipped bit is found by the
/// first transactional read that meets it: with every page flipped and BDM off, the test stops
/// at the first page it verifies, for every seed. (At one read in ten it went on reading damaged
/// pages for most seeds.)
#[test]
fn at_the_default_a_payload_bit_flip_is_found_by_the_first_read() {
    let mut cfg = config(60.0);
    cfg.bdm = false;
    assert_eq!(cfg.checksum_reads_pct, 100, "the default");
    for seed in 0..12u64 {
        cfg.seed = seed;
        let dev = SimDevice::new();
        let spec = simdb::database(
            &dev,
            "/sim/db/db0.edb",
            0x5eed,
            256,
            "Instance.1",
            "/sim/logs/db0",
        );
        flip_a_payload_bit_of_every_page(&dev, &spec.db_path, 256);
        let r = run_with(&dev, &cfg, &Plan::performance(&cfg), vec![spec], seed, 0);
        assert_eq!(
            r.stopped.reason,
            StopReason::IntegrityError,
            "seed {seed}: {:?}",
            r.stopped
        );
        let g = &r.integrity;
        // Every page verified was damaged and found: none passed by its stamps.
        assert!(g.pages_verified >= 1, "seed {seed}: {g:?}");
        assert_eq!(
            g.correctable_pages, g.pages_verified,
            "seed {seed}: pages read before the first finding passed unchecked: {g:?}"
        );
        assert_eq!(g.pages_checksummed, Some(g.pages_verified), "seed {seed}");
        let first = r
            .errors
            .iter()
            .find(|e| e.page.is_some())
            .expect("a named page");
        assert_eq!(first.class, "correctable_page", "seed {seed}: {first:?}");
    }
}
