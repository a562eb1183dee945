//! The sequential-pass test types (Database Backup, Checksum) on the simulated clock and device:
//! every byte read once in the plan's read size, nothing written, rows that add up, every
//! damaged page found, classified and placed, and the log checked as a log (file lengths,
//! generations from the checkpoint on, both checkpoint slots).

use std::path::{Path, PathBuf};
use std::sync::atomic::AtomicBool;
use std::sync::{Arc, Mutex};

use mbx_config::{RunConfig, TestKind};
use mbx_engine::result::{ErrorEntry, RunResult, StopReason};
use mbx_engine::{run_plan, InstanceSpec, LogStart, Observer, Plan, RunEvent};
use mbx_io::sim::{LatencyModel, SimClock, SimDevice, SimQueue};
use mbx_io::{IoOp, IoQueue, Tap};
use mbx_store::checkpoint::{Checkpoint, CHECKPOINT_FILE, SLOT};
use mbx_store::header::{DbHeader, DbState, FORMAT_VERSION, HEADER_PAGES};
use mbx_store::log::{
    encode_log_header, encode_record, log_file_name, parse_log_file_name, record_size, RedoEntry,
    LOG_FILE_SIZE, LOG_SECTOR,
};
use mbx_store::page::{build_data_page, PageHeader, KIND_DATA, PAGE_SIZE};
use mbx_store::Lsn;

const DB_ID: u64 = 0xbac0;
const PAGE: u64 = PAGE_SIZE as u64;

struct Quiet;
impl Observer for Quiet {
    fn on_event(&mut self, _e: RunEvent<'_>) {}
}

/// Every request submitted: (path, op, offset, len).
type Trace = Arc<Mutex<Vec<(PathBuf, IoOp, u64, usize)>>>;

/// A queue that records every request in `trace` and forwards it.
fn recording(inner: Box<dyn IoQueue>, trace: &Trace) -> Tap {
    let trace = trace.clone();
    Tap::new(
        inner,
        Box::new(move |path, req| {
            if let Ok(mut t) = trace.lock() {
                t.push((path.to_path_buf(), req.op, req.offset, req.len));
            }
        }),
        Box::new(|_| {}),
    )
}

fn data_page(n: u64, database_id: u64, generation: u64) -> Vec<u8> {
    let mut page = vec![0u8; PAGE_SIZE];
    build_data_page(
        &mut page,
        &PageHeader {
            page_number: n,
            database_id,
            generation,
            kind: KIND_DATA,
            compressibility_pct: 0,
        },
    );
    page
}

/// A complete database of `pages` data pages on the simulated device (both header copies and
/// every page written, as `prepare` leaves it), with `logs` log files in its log folder and,
/// when there is one, a checkpoint at the first record of generation 1 (as `prepare` writes it).
fn sim_database(dev: &SimDevice, index: usize, pages: u64, logs: u64) -> InstanceSpec {
    let db_path = PathBuf::from(format!("/sim/db/db{index}.edb"));
    let log_dir = PathBuf::from(format!("/sim/logs/db{index}"));
    let database_id = DB_ID + index as u64;
    dev.create(&db_path, (HEADER_PAGES + pages) * PAGE);
    let header = DbHeader {
        database_id,
        generation: 1,
        format_version: FORMAT_VERSION,
        page_size: PAGE_SIZE as u32,
        page_count: HEADER_PAGES + pages,
        state: DbState::Clean,
        database_index: index as u32,
        created_pages: pages,
        mailboxes: 10,
        quota_mb: 1,
        databases: 1,
        compressibility_pct: 0,
        created_unix_s: 0,
        tool_version: "test".into(),
    };
    let mut page = vec![0u8; PAGE_SIZE];
    for copy in 0..HEADER_PAGES {
        header.encode(&mut page, copy);
        dev.write_at(&db_path, copy * PAGE, &page).expect("header");
    }
    for n in HEADER_PAGES..HEADER_PAGES + pages {
        dev.write_at(&db_path, n * PAGE, &data_page(n, database_id, 1))
            .expect("write page");
    }
    let mut earlier_logs = Vec::new();
    for gen in 1..=logs {
        let path = log_dir.join(log_file_name(gen));
        dev.create(&path, LOG_FILE_SIZE as u64);
        let mut sector = vec![0u8; 4096];
        encode_log_header(&mut sector, gen, database_id, 0);
        dev.write_at(&path, 0, &sector).expect("log header");
        earlier_logs.push(path);
    }
    if logs > 0 {
        write_checkpoint(
            dev,
            &log_dir,
            database_id,
            1,
            Lsn::new(1, LOG_SECTOR as u64),
        );
    }
    InstanceSpec {
        name: format!("Instance.{}", index + 1),
        db_path,
        log_dir,
        database_id,
        data_pages: pages,
        log: LogStart {
            next_generation: logs + 1,
            checkpoint_sequence: 0,
            earlier_logs,
        },
    }
}

fn run(dev: &SimDevice, plan: &Plan, specs: Vec<InstanceSpec>) -> (RunResult, Trace) {
    let cfg = RunConfig::default();
    let clock = Arc::new(SimClock::new());
    let queue = SimQueue::new(dev.clone(), clock, 64, LatencyModel::typical(), 11);
    let trace = Trace::default();
    let queue = recording(Box::new(queue), &trace);
    let r = run_plan(
        &cfg,
        plan,
        specs,
        Box::new(queue),
        &mut Quiet,
        &AtomicBool::new(false),
    )
    .expect("run");
    (r, trace)
}

/// The reads of `path`, sorted by offset; panics on a write anywhere.
fn reads_of(trace: &Trace, path: &Path) -> Vec<(u64, usize)> {
    let t = trace.lock().expect("trace");
    assert!(
        t.iter().all(|(_, op, _, _)| *op == IoOp::Read),
        "a read-only pass wrote"
    );
    let mut v: Vec<_> = t
        .iter()
        .filter(|(p, ..)| p == path)
        .map(|&(_, _, o, l)| (o, l))
        .collect();
    v.sort_unstable();
    v
}

/// Asserts the reads tile `[0, size)` exactly once in `chunk`-byte reads (a shorter last one).
fn assert_tiles(reads: &[(u64, usize)], size: u64, chunk: usize) {
    let mut at = 0u64;
    for (i, &(o, l)) in reads.iter().enumerate() {
        assert_eq!(o, at, "read {i} at {o}, expected {at}");
        if i + 1 < reads.len() {
            assert_eq!(l, chunk, "read {i} of {l} bytes");
        } else {
            assert!(l <= chunk && l > 0, "last read of {l} bytes");
        }
        at += l as u64;
    }
    assert_eq!(at, size, "bytes read");
}

#[test]
fn backup_reads_every_byte_once_in_256_kib_reads_and_the_rows_add_up() {
    let dev = SimDevice::new();
    // 102 pages: 12 full 256 KiB reads and a last one of 6 pages.
    let specs = vec![sim_database(&dev, 0, 100, 2), sim_database(&dev, 1, 60, 0)];
    let paths: Vec<_> = specs.iter().map(|s| s.db_path.clone()).collect();
    let sizes = [102 * PAGE, 62 * PAGE];
    let plan = Plan::backup(&RunConfig::default());
    let (r, trace) = run(&dev, &plan, specs);
    assert_eq!(r.stopped.reason, StopReason::Completed, "{:?}", r.stopped);
    assert!(r.verdict.pass(), "{:?}", r.verdict);
    assert_eq!(r.test.test_type, TestKind::Backup);
    for (p, &size) in paths.iter().zip(&sizes) {
        assert_tiles(&reads_of(&trace, p), size, 262_144);
    }
    // A backup reads databases only, never logs.
    let logs_read = trace
        .lock()
        .expect("trace")
        .iter()
        .filter(|(p, ..)| p.starts_with("/sim/logs"))
        .count();
    assert_eq!(logs_read, 0);
    let rows = &r.sections.backup;
    assert_eq!(rows.len(), 2);
    for (row, &size) in rows.iter().zip(&sizes) {
        assert!(
            (row.database_size_mb - size as f64 / 1e6).abs() < 1e-9,
            "{row:?}"
        );
        assert!(row.elapsed_s > 0.0, "{row:?}");
        assert!(
            (row.mb_per_s * row.elapsed_s - row.database_size_mb).abs() < 1e-6,
            "{row:?}"
        );
    }
    let sum: f64 = rows.iter().map(|b| b.mb_per_s).sum();
    assert_eq!(r.sections.backup_sum_mb_per_s, Some(sum));
    assert_eq!(r.sections.backup_avg_mb_per_s, Some(sum / 2.0));
    assert_eq!(r.integrity.pages_verified, 164);
    assert!(r.errors.is_empty(), "{:?}", r.errors);
    assert!(r.sections.checksum.is_empty());
}

#[test]
fn checksum_of_an_untouched_database_and_its_logs_finds_nothing() {
    let dev = SimDevice::new();
    let spec = sim_database(&dev, 0, 40, 2);
    let (db, logs) = (spec.db_path.clone(), spec.log.earlier_logs.clone());
    let (r, trace) = run(&dev, &Plan::checksum(&RunConfig::default()), vec![spec]);
    assert_eq!(r.stopped.reason, StopReason::Completed, "{:?}", r.stopped);
    assert_eq!(r.test.test_type, TestKind::Checksum);
    assert_tiles(&reads_of(&trace, &db), 42 * PAGE, 65_536);
    for log in &logs {
        assert_tiles(&reads_of(&trace, log), LOG_FILE_SIZE as u64, 65_536);
    }
    let rows = &r.sections.checksum;
    assert_eq!(rows.len(), 2, "{rows:?}");
    assert_eq!(rows[0].database_path, db.display().to_string());
    assert_eq!(rows[0].seen_pages, 42);
    assert_eq!(rows[0].bytes, 42 * PAGE);
    assert_eq!(rows[0].errors(), 0);
    assert_eq!(rows[1].database_path, "/sim/logs/db0");
    assert_eq!(rows[1].seen_pages, 2 * LOG_FILE_SIZE as u64 / PAGE);
    assert_eq!(rows[1].errors(), 0);
    assert!(r.errors.is_empty(), "{:?}", r.errors);
    assert!(r.verdict.pass());
}

#[test]
fn checksum_finds_each_damaged_page_classified_and_placed() {
    let dev = SimDevice::new();
    let spec = sim_database(&dev, 0, 80, 1);
    let db = spec.db_path.clone();
    let put = |n: u64, page: &[u8]| dev.write_at(&db, n * PAGE, page).expect("damage");
    // One flipped bit: correctable.
    let mut p = data_page(10, DB_ID, 1);
    p[5000] ^= 0x10;
    put(10, &p);
    // Another page's content: wrong page number.
    put(20, &data_page(21, DB_ID, 1));
    // Another database's page: wrong database.
    put(30, &data_page(30, DB_ID + 7, 1));
    // Zeroed: unwritten.
    put(40, &vec![0u8; PAGE_SIZE]);
    // Torn: the first half of a newer write over the old page.
    let mut torn = data_page(50, DB_ID, 1);
    torn[..PAGE_SIZE / 2].copy_from_slice(&data_page(50, DB_ID, 2)[..PAGE_SIZE / 2]);
    put(50, &torn);
    // Header copy 1 overwritten by a data page.
    put(1, &data_page(1, DB_ID, 1));
    // Garbage after the log file's header: a damaged record.
    let log = spec.log.earlier_logs[0].clone();
    dev.write_at(&log, 4096, &[0xab; 512]).expect("log damage");

    let (r, _) = run(&dev, &Plan::checksum(&RunConfig::default()), vec![spec]);
    assert_eq!(
        r.stopped.reason,
        StopReason::VerdictFailed,
        "{:?}",
        r.stopped
    );
    assert!(!r.verdict.pass());
    let found: Vec<(&str, Option<u64>, Option<u64>)> = r
        .errors
        .iter()
        .map(|e| (e.class.as_str(), e.page, e.offset))
        .collect();
    let at = |n: u64| (Some(n), Some(n * PAGE));
    let expected = vec![
        ("bad_header", at(1).0, at(1).1),
        ("correctable_page", at(10).0, at(10).1),
        ("wrong_page_number", at(20).0, at(20).1),
        ("wrong_database_page", at(30).0, at(30).1),
        ("unwritten_page", at(40).0, at(40).1),
        ("bad_page", at(50).0, at(50).1),
        ("log_damaged", None, Some(4096)),
    ];
    assert_eq!(found, expected);
    for e in &r.errors[..6] {
        assert_eq!(e.path.as_deref(), Some(db.to_str().expect("utf-8")));
        assert_eq!(e.count, 1);
        assert!(e.message.contains("page "), "{}", e.message);
    }
    assert_eq!(
        r.errors[6].path.as_deref(),
        Some(log.to_str().expect("utf-8"))
    );
    let row = &r.sections.checksum[0];
    assert_eq!(
        (
            row.seen_pages,
            row.bad_pages,
            row.correctable_pages,
            row.wrong_page_number_pages
        ),
        (82, 4, 1, 1),
        "{row:?}"
    );
    assert_eq!(r.sections.checksum[1].bad_pages, 1);
    let check = r
        .verdict
        .checks()
        .iter()
        .find(|c| c.name == "data_integrity_errors")
        .expect("integrity check");
    assert_eq!(check.value, 7.0);
    assert!(!check.pass());
}

#[test]
fn an_interrupted_backup_stops_reading_and_says_so() {
    let dev = SimDevice::new();
    let specs = vec![sim_database(&dev, 0, 400, 0)];
    let path = specs[0].db_path.clone();
    let cfg = RunConfig::default();
    let clock = Arc::new(SimClock::new());
    let queue = SimQueue::new(dev.clone(), clock, 64, LatencyModel::typical(), 3);
    let trace = Trace::default();
    let queue = recording(Box::new(queue), &trace);
    // Cancelled from the start: only the first reads (submitted on entering the phase) happen.
    let r = run_plan(
        &cfg,
        &Plan::backup(&cfg),
        specs,
        Box::new(queue),
        &mut Quiet,
        &AtomicBool::new(true),
    )
    .expect("run");
    assert_eq!(r.stopped.reason, StopReason::Interrupted, "{:?}", r.stopped);
    assert!(r.test.interrupted);
    assert!(!r.verdict.pass());
    let completed = r
        .verdict
        .checks()
        .iter()
        .find(|c| c.name == "pass_completed")
        .expect("pass_completed");
    assert!(!completed.pass());
    let reads = reads_of(&trace, &path);
    assert_eq!(reads.len(), 4, "the first depth of reads only: {reads:?}");
}

/// Writes checkpoint `sequence` of database `id` at `lsn` into its slot of `log_dir`'s checkpoint
/// file (a file of two slots, the other one left as it was, zeros in a new file).
fn write_checkpoint(dev: &SimDevice, log_dir: &Path, id: u64, sequence: u64, lsn: Lsn) {
    let path = log_dir.join(CHECKPOINT_FILE);
    if !dev.exists(&path) {
        dev.create(&path, 2 * SLOT as u64);
    }
    let c = Checkpoint {
        sequence,
        database_id: id,
        lsn,
    };
    let mut slot = vec![0u8; SLOT];
    c.encode(&mut slot);
    dev.write_at(&path, c.slot_offset(), &slot)
        .expect("checkpoint");
}

/// Bytes of each record [`add_records`] writes.
const RECORD: u64 = 8192;

/// Writes `n` records after the header of log generation `gen` of `spec` (each changing one page);
/// returns the offset where its log ends.
fn add_records(dev: &SimDevice, spec: &InstanceSpec, gen: u64, n: u64) -> u64 {
    assert_eq!(record_size(6000, 1) as u64, RECORD);
    let path = spec.log_dir.join(log_file_name(gen));
    let mut off = LOG_SECTOR as u64;
    let mut buf = vec![0u8; RECORD as usize];
    for i in 0..n {
        let entries = [RedoEntry {
            page: HEADER_PAGES + i % spec.data_pages,
            generation: gen * 100 + i,
        }];
        let size = encode_record(&mut buf, Lsn::new(gen, off), 6000, 1, &entries);
        dev.write_at(&path, off, &buf[..size]).expect("record");
        off += size as u64;
    }
    off
}

/// Runs the Checksum test on `spec` with the log files its folder holds now (as `run` lists
/// them).
fn checksum(dev: &SimDevice, mut spec: InstanceSpec) -> RunResult {
    spec.log.earlier_logs = dev
        .list(&spec.log_dir)
        .into_iter()
        .filter(|p| {
            p.file_name()
                .and_then(|n| n.to_str())
                .and_then(parse_log_file_name)
                .is_some()
        })
        .collect();
    run(dev, &Plan::checksum(&RunConfig::default()), vec![spec]).0
}

/// A database whose log has generations 1..=3, each with records, and a checkpoint in
/// generation 2 (what a run that stopped without a clean shutdown leaves: recovery needs
/// generations 2 and 3).
fn logged_database(dev: &SimDevice) -> InstanceSpec {
    let spec = sim_database(dev, 0, 40, 3);
    for gen in 1..=3 {
        add_records(dev, &spec, gen, 10);
    }
    write_checkpoint(
        dev,
        &spec.log_dir,
        spec.database_id,
        2,
        Lsn::new(2, LOG_SECTOR as u64 + 3 * RECORD),
    );
    spec
}

/// The test failed its verdict (not an I/O error), and its log problems are exactly `want`:
/// (class, file name, words in the message). Every other check of the pass is untouched.
fn assert_log_problems(r: &RunResult, want: &[(&str, &str, &str)]) {
    assert_eq!(
        r.stopped.reason,
        StopReason::VerdictFailed,
        "{:?}\n{:?}",
        r.stopped,
        r.errors
    );
    assert!(!r.verdict.pass());
    let found: Vec<&ErrorEntry> = r.errors.iter().collect();
    assert_eq!(found.len(), want.len(), "{found:#?}");
    for (e, (class, file, words)) in found.iter().zip(want) {
        assert_eq!(e.class, *class, "{e:?}");
        let path = e.path.as_deref().unwrap_or_default();
        assert!(path.ends_with(file), "{path} is not {file}: {e:?}");
        assert!(
            e.message.contains(path),
            "the message names the file: {e:?}"
        );
        assert!(e.message.contains(words), "{:?} lacks {words:?}", e.message);
        assert_eq!(e.instance.as_deref(), Some("Instance.1"));
    }
    let check = r
        .verdict
        .checks()
        .iter()
        .find(|c| c.name == "data_integrity_errors")
        .expect("integrity check");
    assert_eq!(check.value, want.len() as f64);
    assert!(!check.pass());
    assert_eq!(r.integrity.bad_pages, 0, "no database page is bad");
    let logs = r.sections.checksum.last().expect("the log folder's row");
    assert_eq!(logs.database_path, "/sim/logs/db0");
    assert_eq!(logs.bad_pages, want.len() as u64, "{logs:?}");
}

#[test]
fn checksum_of_a_log_with_records_over_generations_from_the_checkpoint_finds_nothing() {
    let dev = SimDevice::new();
    let spec = logged_database(&dev);
    let r = checksum(&dev, spec);
    assert_eq!(r.stopped.reason, StopReason::Completed, "{:?}", r.errors);
    assert!(r.errors.is_empty(), "{:?}", r.errors);
    assert!(r.verdict.pass());
    // Generations older than the checkpoint's may be gone or have gaps: recovery never reads
    // them (circular logging deletes them, in any order after a crash).
    let dev = SimDevice::new();
    let spec = sim_database(&dev, 0, 40, 5);
    dev.remove(&spec.log_dir.join(log_file_name(2)))
        .expect("remove");
    write_checkpoint(
        &dev,
        &spec.log_dir,
        spec.database_id,
        2,
        Lsn::new(3, LOG_SECTOR as u64),
    );
    let r = checksum(&dev, spec);
    assert!(r.errors.is_empty(), "{:?}", r.errors);
    assert!(r.verdict.pass());
}

#[test]
fn checksum_fails_a_truncated_log_file_whose_records_recovery_needs() {
    let dev = SimDevice::new();
    let spec = logged_database(&dev);
    // Generation 2 cut after its third record, at a record boundary: what is left scans clean.
    let gen2 = spec.log_dir.join(log_file_name(2));
    let cut = LOG_SECTOR as u64 + 3 * RECORD;
    dev.set_len(&gen2, cut).expect("truncate");
    let r = checksum(&dev, spec);
    assert_log_problems(
        &r,
        &[(
            "log_damaged",
            "E0000000002.log",
            &format!("is {cut} bytes long; its header says {LOG_FILE_SIZE}"),
        )],
    );
}

#[test]
fn checksum_fails_a_log_file_longer_than_its_header_says() {
    let dev = SimDevice::new();
    let spec = logged_database(&dev);
    let gen3 = spec.log_dir.join(log_file_name(3));
    dev.set_len(&gen3, LOG_FILE_SIZE as u64 + 4096)
        .expect("extend");
    let r = checksum(&dev, spec);
    assert_log_problems(
        &r,
        &[(
            "log_damaged",
            "E0000000003.log",
            &format!(
                "is {} bytes long; its header says {LOG_FILE_SIZE}",
                LOG_FILE_SIZE + 4096
            ),
        )],
    );
}

#[test]
fn an_unaligned_log_length_is_read_buffered_and_reported_as_damage_not_an_os_error() {
    let dev = SimDevice::new();
    let spec = logged_database(&dev);
    // Cut in the middle of a record, at a length no O_DIRECT read can end at.
    let gen3 = spec.log_dir.join(log_file_name(3));
    let cut = LOG_SECTOR as u64 + 2 * RECORD + 1003;
    dev.set_len(&gen3, cut).expect("truncate");
    let r = checksum(&dev, spec);
    assert_log_problems(
        &r,
        &[(
            "log_damaged",
            "E0000000003.log",
            &format!("is {cut} bytes long; its header says {LOG_FILE_SIZE}"),
        )],
    );
    // Every byte of it was read.
    let logs = r.sections.checksum.last().expect("log row");
    assert_eq!(logs.bytes, 2 * LOG_FILE_SIZE as u64 + cut);
}

#[test]
fn a_foreign_tiny_log_file_is_reported_as_damage_not_an_os_error() {
    let dev = SimDevice::new();
    let spec = logged_database(&dev);
    let foreign = spec.log_dir.join(log_file_name(4));
    dev.create(&foreign, 0);
    dev.write_at(&foreign, 0, b"not a log!").expect("write");
    let r = checksum(&dev, spec);
    assert_log_problems(
        &r,
        &[(
            "log_damaged",
            "E0000000004.log",
            "(10 bytes) has no valid log header",
        )],
    );
}

#[test]
fn checksum_fails_a_missing_generation_between_the_checkpoint_and_the_newest() {
    let dev = SimDevice::new();
    let spec = sim_database(&dev, 0, 40, 4);
    for gen in 1..=4 {
        add_records(&dev, &spec, gen, 3);
    }
    dev.remove(&spec.log_dir.join(log_file_name(2)))
        .expect("remove");
    dev.remove(&spec.log_dir.join(log_file_name(3)))
        .expect("remove");
    let r = checksum(&dev, spec);
    assert_log_problems(
        &r,
        &[(
            "log_missing",
            "E0000000002.log",
            "is missing, and so are the generations after it up to 0x3 (E0000000003.log)",
        )],
    );
    // The checkpoint's own generation gone.
    let dev = SimDevice::new();
    let spec = logged_database(&dev);
    dev.remove(&spec.log_dir.join(log_file_name(2)))
        .expect("remove");
    dev.remove(&spec.log_dir.join(log_file_name(1)))
        .expect("remove");
    let r = checksum(&dev, spec);
    assert_log_problems(
        &r,
        &[(
            "log_missing",
            "E0000000002.log",
            "is missing (log generation 0x2)",
        )],
    );
}

#[test]
fn checksum_fails_a_zeroed_deleted_or_damaged_checkpoint() {
    let zeroed = SimDevice::new();
    let spec = logged_database(&zeroed);
    let ckpt = spec.log_dir.join(CHECKPOINT_FILE);
    zeroed
        .write_at(&ckpt, 0, &vec![0u8; 2 * SLOT])
        .expect("zero");
    let r = checksum(&zeroed, spec);
    assert_log_problems(
        &r,
        &[(
            "checkpoint_damaged",
            "checkpoint.chk",
            "no valid checkpoint of this database",
        )],
    );

    let deleted = SimDevice::new();
    let spec = logged_database(&deleted);
    deleted
        .remove(&spec.log_dir.join(CHECKPOINT_FILE))
        .expect("remove");
    let r = checksum(&deleted, spec);
    assert_log_problems(
        &r,
        &[("checkpoint_damaged", "checkpoint.chk", "is missing")],
    );

    // Slot 0 holds the checkpoint (sequence 2); slot 1's (sequence 1) is overwritten with
    // garbage: the checkpoint is still there, but the slot is damaged.
    let one_slot = SimDevice::new();
    let spec = logged_database(&one_slot);
    one_slot
        .write_at(
            &spec.log_dir.join(CHECKPOINT_FILE),
            SLOT as u64 + 100,
            b"garbage",
        )
        .expect("damage");
    let r = checksum(&one_slot, spec);
    assert_log_problems(
        &r,
        &[("checkpoint_damaged", "checkpoint.chk", "slot 1 is damaged")],
    );

    // A checkpoint past the end of the log: changes it says are in the database are in no log.
    let ahead = SimDevice::new();
    let spec = logged_database(&ahead);
    write_checkpoint(
        &ahead,
        &spec.log_dir,
        spec.database_id,
        3,
        Lsn::new(3, LOG_SECTOR as u64 + 20 * RECORD),
    );
    let r = checksum(&ahead, spec);
    assert_log_problems(
        &r,
        &[(
            "checkpoint_damaged",
            "checkpoint.chk",
            "past the end of the log",
        )],
    );
}
