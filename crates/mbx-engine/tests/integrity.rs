//! Integrity by default, on the simulated clock and device (deterministic, seeded):
//! - every transactional read checksums its whole page at the default `checksum_reads_pct`, so a
//!   one-bit flip inside a block's payload (which the block stamps cannot see) is found by the
//!   first read that meets it;
//! - the generation journal: a page rolled back to an older copy between two runs is found by the
//!   next run, and a crash leaves no false stale finding behind.

#[path = "support/config.rs"]
mod config;
#[path = "support/simdb.rs"]
mod simdb;

use config::config;

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

/// Reads a whole simulated file.
fn image(dev: &SimDevice, path: &Path) -> Vec<u8> {
    let len = dev.len(path).unwrap_or(0) as usize;
    let mut buf = vec![0u8; len];
    let n = dev.read_at(path, 0, &mut buf).unwrap_or(0);
    buf.truncate(n);
    buf
}

/// The generation page `n` carries in a database image (the page header's field).
fn generation_in(img: &[u8], n: u64) -> u64 {
    let at = n as usize * PAGE_SIZE + 32;
    u64::from_le_bytes(img[at..at + 8].try_into().expect("8 bytes"))
}

/// The journal entry of page `n` on the device (0 where the journal holds none).
fn journal_entry(dev: &SimDevice, db: &Path, n: u64) -> u64 {
    let path = mbx_store::journal::journal_path(db).expect("a journal path");
    let img = image(dev, &path);
    let at = mbx_store::journal::entry_offset(n).expect("a data page") as usize;
    img.get(at..at + 8)
        .map_or(0, |b| u64::from_le_bytes(b.try_into().expect("8 bytes")))
}

const PAGES: u64 = 256;

/// A database of [`PAGES`] pages at generation 1 with both header copies, as `prepare` leaves it
/// (the Checksum test verifies the headers too); no journal yet (the first run creates it).
fn sim_db(dev: &SimDevice) -> InstanceSpec {
    let spec = simdb::database(
        dev,
        "/sim/db/db0.edb",
        0x5eed,
        PAGES,
        "Instance.1",
        "/sim/logs/db0",
    );
    let header = mbx_store::header::DbHeader {
        database_id: spec.database_id,
        generation: 1,
        format_version: mbx_store::header::FORMAT_VERSION,
        page_size: PAGE_SIZE as u32,
        page_count: HEADER_PAGES + PAGES,
        state: mbx_store::DbState::Clean,
        database_index: 0,
        created_pages: PAGES,
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

/// Copies pages `pages` of `older` (a database image taken earlier) over the database at `db`.
fn roll_back(dev: &SimDevice, db: &Path, older: &[u8], pages: &[u64]) {
    for &n in pages {
        let at = n as usize * PAGE_SIZE;
        dev.write_at(db, at as u64, &older[at..at + PAGE_SIZE])
            .expect("put the older copy back");
    }
}

/// A page rolled back to an older copy between runs passes every check of the page itself (it
/// is a valid page of that database at that position); the Checksum test and the next run find
/// it stale against the generation journal and name it. Before the journal it went unnoticed:
/// both passed.
#[test]
fn the_checksum_test_and_the_next_run_find_a_page_rolled_back_between_runs() {
    let dev = SimDevice::new();
    let spec = sim_db(&dev);
    let db = spec.db_path.clone();
    let cfg = config(30.0);
    let plan = Plan::performance(&cfg);
    let first = run_with(&dev, &cfg, &plan, vec![spec.clone()], 1, 0);
    assert_eq!(
        first.stopped.reason,
        StopReason::Completed,
        "{:?}",
        first.stopped
    );
    let snapshot = image(&dev, &db);
    // The second run, an hour later, rewrites pages (its generations are higher). The simulated
    // device has no log adoption (`log_start` reads a real folder), so each later run starts
    // its log at generation 1 in a folder of its own: reusing the first run's folder would mix
    // two logs, which the Checksum test rightly reports (`log_missing`).
    let fresh_log = |spec: &InstanceSpec, name: &str| InstanceSpec {
        log_dir: spec.log_dir.with_file_name(name),
        ..spec.clone()
    };
    let spec = fresh_log(&spec, "second");
    let second = run_with(&dev, &cfg, &plan, vec![spec.clone()], 2, 3600);
    assert_eq!(
        second.stopped.reason,
        StopReason::Completed,
        "{:?}",
        second.stopped
    );
    let now = image(&dev, &db);
    let rewritten: Vec<u64> = (HEADER_PAGES..HEADER_PAGES + PAGES)
        .filter(|&n| generation_in(&now, n) > generation_in(&snapshot, n))
        .collect();
    assert!(rewritten.len() > 10, "{} pages rewritten", rewritten.len());
    // The journal records each rewritten page's generation (it was shut down cleanly).
    for &n in &rewritten {
        assert_eq!(
            journal_entry(&dev, &db, n),
            generation_in(&now, n),
            "page {n}"
        );
    }
    // Three of them go back to their copies of before the second run.
    let rolled = [
        rewritten[0],
        rewritten[rewritten.len() / 2],
        rewritten[rewritten.len() - 1],
    ];
    roll_back(&dev, &db, &snapshot, &rolled);
    // The Checksum test reads every page and the journal beside it: the three, and only them.
    // The Checksum test reads the log files the CLI finds in the folder (`log_start`).
    let mut on_disk = spec.clone();
    on_disk.log.earlier_logs = dev
        .list(&spec.log_dir)
        .into_iter()
        .filter(|p| p.extension().is_some_and(|e| e == "log"))
        .collect();
    let checksum = run_with(&dev, &cfg, &Plan::checksum(&cfg), vec![on_disk], 3, 5400);
    assert_eq!(
        checksum.stopped.reason,
        StopReason::VerdictFailed,
        "{:?}",
        checksum.stopped
    );
    let mut named: Vec<u64> = checksum
        .errors
        .iter()
        .filter(|e| e.class == "stale_page")
        .filter_map(|e| e.page)
        .collect();
    named.sort_unstable();
    let mut want = rolled.to_vec();
    want.sort_unstable();
    assert_eq!(named, want, "{:?}", checksum.errors);
    assert_eq!(checksum.integrity.stale_pages, 3);
    assert_eq!(checksum.errors.len(), 3, "{:?}", checksum.errors);
    let check = checksum
        .verdict
        .checks()
        .iter()
        .find(|c| c.name == "data_integrity_errors")
        .expect("the integrity check");
    assert_eq!((check.value, check.pass()), (3.0, false));
    let third = run_with(&dev, &cfg, &plan, vec![fresh_log(&spec, "third")], 3, 7200);
    assert_eq!(
        third.stopped.reason,
        StopReason::IntegrityError,
        "{:?} {:?}",
        third.stopped,
        third.errors
    );
    let stale: Vec<&mbx_engine::result::ErrorEntry> = third
        .errors
        .iter()
        .filter(|e| e.class == "stale_page")
        .collect();
    assert!(!stale.is_empty(), "{:?}", third.errors);
    for e in &stale {
        let n = e.page.expect("the page is named");
        assert!(rolled.contains(&n), "page {n} was not rolled back: {e:?}");
        assert!(e.message.contains("generation journal"), "{}", e.message);
        assert_eq!(e.path.as_deref(), db.to_str());
    }
    assert_eq!(third.integrity.stale_pages, stale.len() as u64);
}

/// Stopped dead at any point (the device keeping only what was durable), a run leaves a journal
/// that never records a generation newer than the page on disk: a page ahead of its entry (its
/// write was durable, the entry was not yet) is fine; an entry ahead of its page would be a
/// false stale finding. Every page of every crashed device is compared with its entry, and a
/// run after the crash (BDM reads every page) finds nothing stale. Before the journal there was
/// no entry at all.
#[test]
fn after_a_crash_the_journal_never_leads_the_pages() {
    use mbx_io::sim::Latency;
    use mbx_io::{FaultKind, FaultRule};
    use std::time::Duration;
    let mut recorded = 0u64;
    let mut lagging = 0u64;
    for seed in 0..60u64 {
        let dev = SimDevice::new();
        let mut cfg = config(30.0);
        cfg.profile.iops_per_mailbox = 4.0;
        cfg.cache.checkpoint_interval_s = 0.2;
        cfg.seed = seed;
        let spec = sim_db(&dev);
        let at = 200 + (seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) >> 33) % 4000;
        let us = |m: u64| Duration::from_micros(m);
        let model = LatencyModel::typical().reads(Latency::mean_sd(us(500), us(300)));
        let model = match seed % 3 {
            0 => model.writes(Latency::mean_sd(us(30_000), us(10_000))),
            1 => model.syncs(Latency::mean_sd(us(20_000), us(5_000))),
            _ => model,
        };
        let queue = SimQueue::new(
            dev.clone(),
            Arc::new(SimClock::new()),
            mbx_engine::queue_depth(&cfg, 1),
            model,
            seed,
        )
        .with_faults(vec![FaultRule::new(None, FaultKind::Error(5))
            .after(at)
            .times(1)]);
        let _ = run_plan(
            &cfg,
            &Plan::performance(&cfg),
            vec![spec.clone()],
            Box::new(queue),
            &mut Quiet,
            &AtomicBool::new(false),
        );
        let crashed = dev.crash();
        let img = image(&crashed, &spec.db_path);
        for n in HEADER_PAGES..HEADER_PAGES + PAGES {
            let (page, entry) = (
                generation_in(&img, n),
                journal_entry(&crashed, &spec.db_path, n),
            );
            assert!(
                !mbx_store::journal::is_stale(page, entry),
                "seed {seed}: page {n} at generation {page}, its journal entry {entry}"
            );
            recorded += u64::from(entry > 1);
            lagging += u64::from(entry != 0 && entry < page);
        }
        // A run after the crash reads every page (BDM) and finds none stale.
        if seed % 10 == 0 {
            let mut after = config(20.0);
            after.bdm_reads_per_s = 50.0;
            let r = run_with(
                &crashed,
                &after,
                &Plan::performance(&after),
                vec![spec],
                seed,
                3600,
            );
            assert_eq!(r.integrity.stale_pages, 0, "seed {seed}: {:?}", r.errors);
            assert!(r.errors.iter().all(|e| e.class != "stale_page"));
        }
    }
    eprintln!("60 crashes: {recorded} journal entries recorded, {lagging} behind their page");
    // The journal recorded writes before the crashes, and some crashes left it behind.
    assert!(recorded > 100, "{recorded}");
}

/// A database without a journal (prepared by an earlier version) is checked for everything
/// else; the Checksum test says stale pages across runs were not checked, and why.
#[test]
fn without_a_journal_the_checksum_test_says_stale_pages_were_not_checked() {
    let dev = SimDevice::new();
    let spec = sim_db(&dev);
    let cfg = config(30.0);
    let r = run_with(&dev, &cfg, &Plan::checksum(&cfg), vec![spec], 1, 0);
    assert_eq!(r.stopped.reason, StopReason::Completed, "{:?}", r.stopped);
    assert!(r.errors.is_empty(), "{:?}", r.errors);
    assert!(
        r.notes
            .iter()
            .any(|n| n.contains("stale pages across runs not checked")
                && n.contains("earlier version")),
        "{:?}",
        r.notes
    );
}
