//! Errors met during a Performance test, on the simulated clock and device (deterministic,
//! seeded): I/O errors injected into database reads, and pages damaged in every way the verifier
//! tells apart. By default the first error stops the test (Jetstress 2013); with
//! `continue_on_errors` the test runs its whole course, counts them per instance and fails.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;

use mbx_config::RunConfig;
use mbx_engine::result::{RunResult, StopReason};
use mbx_engine::{run_plan, InstanceSpec, LogStart, Observer, Plan, RunEvent};
use mbx_io::sim::{LatencyModel, SimClock, SimDevice, SimQueue};
use mbx_io::{FaultKind, FaultRule, IoOp, Tap};
use mbx_store::header::HEADER_PAGES;
use mbx_store::page::{
    build_data_page, check_data_page, PageCheck, PageHeader, KIND_DATA, PAGE_SIZE,
};

const DB_ID: u64 = 0x5eed;

struct Quiet;

impl Observer for Quiet {
    fn on_event(&mut self, _: RunEvent<'_>) {}
}

/// A data page of database `id` at `generation`.
fn page(n: u64, id: u64, generation: u64) -> Vec<u8> {
    let mut p = vec![0u8; PAGE_SIZE];
    build_data_page(
        &mut p,
        &PageHeader {
            page_number: n,
            database_id: id,
            generation,
            kind: KIND_DATA,
            compressibility_pct: 0,
        },
    );
    p
}

/// A database of `pages` data pages on the simulated device, every page at generation 0, as
/// `prepare` writes them.
fn sim_database(dev: &SimDevice, pages: u64) -> InstanceSpec {
    let db_path = PathBuf::from("/sim/db/db0.edb");
    dev.create(&db_path, (HEADER_PAGES + pages) * PAGE_SIZE as u64);
    for n in HEADER_PAGES..HEADER_PAGES + pages {
        dev.write_at(&db_path, n * PAGE_SIZE as u64, &page(n, DB_ID, 0))
            .expect("write page");
    }
    InstanceSpec {
        name: "Instance.1".into(),
        db_path,
        log_dir: PathBuf::from("/sim/logs/db0"),
        database_id: DB_ID,
        data_pages: pages,
        log: LogStart {
            next_generation: 1,
            checkpoint_sequence: 0,
            earlier_logs: Vec::new(),
        },
    }
}

fn config(duration_s: f64, continue_on_errors: bool) -> RunConfig {
    let mut cfg = RunConfig::default();
    cfg.profile.mailboxes = 100;
    cfg.profile.iops_per_mailbox = 0.5;
    cfg.profile.databases = 1;
    cfg.duration_s = duration_s;
    cfg.sample_interval_s = 15.0;
    cfg.cache.max_dirty_age_s = 1.0;
    cfg.continue_on_errors = continue_on_errors;
    cfg
}

/// Runs the Performance plan on `spec` with `faults`; the result and the errors injected.
fn run(
    dev: &SimDevice,
    cfg: &RunConfig,
    spec: InstanceSpec,
    faults: Vec<FaultRule>,
) -> (RunResult, u64) {
    let errors = Arc::new(AtomicU64::new(0));
    // Counts the completions carrying an error (the injected ones).
    let seen = errors.clone();
    let queue = Tap::new(
        Box::new(
            SimQueue::new(
                dev.clone(),
                Arc::new(SimClock::new()),
                mbx_engine::queue_depth(cfg, 1),
                LatencyModel::typical(),
                5,
            )
            .with_faults(faults),
        ),
        Box::new(|_, _| {}),
        Box::new(move |c| {
            if c.result.is_err() {
                seen.fetch_add(1, Ordering::Relaxed);
            }
        }),
    );
    let r = run_plan(
        cfg,
        &Plan::performance(cfg),
        vec![spec],
        Box::new(queue),
        &mut Quiet,
        &AtomicBool::new(false),
    )
    .expect("run");
    let injected = errors.load(Ordering::Relaxed);
    (r, injected)
}

/// EIO on 1% of the database file's reads (file 0 is the first database's file).
fn eio_on_one_percent() -> Vec<FaultRule> {
    vec![FaultRule::new(Some(IoOp::Read), FaultKind::Error(5))
        .on_file(0)
        .one_in(100)]
}

/// The test ran its whole duration (errors did not stop it) and its verdict failed.
fn assert_ran_its_course_and_failed(r: &RunResult, secs: f64) {
    assert_eq!(
        r.stopped.reason,
        StopReason::VerdictFailed,
        "{:?}",
        r.stopped
    );
    assert!(
        (r.test.duration_s - secs).abs() < 1.0,
        "{}",
        r.test.duration_s
    );
}

#[test]
fn with_continue_on_errors_eio_on_one_percent_of_reads_is_counted_and_the_test_runs_its_course() {
    let dev = SimDevice::new();
    let cfg = config(120.0, true);
    let spec = sim_database(&dev, 2048);
    let db_path = spec.db_path.display().to_string();
    let (r, injected) = run(&dev, &cfg, spec, eio_on_one_percent());
    assert!(
        injected >= 5,
        "enough reads failed to mean something: {injected}"
    );
    assert_ran_its_course_and_failed(&r, 120.0);
    let io: Vec<_> = r.errors.iter().filter(|e| e.class == "io_error").collect();
    // One entry per instance, class and errno, counting every injected error.
    assert_eq!(io.len(), 1, "{io:?}");
    assert_eq!(io[0].count, injected);
    assert_eq!(io[0].errno, Some(5));
    assert_eq!(io[0].instance.as_deref(), Some("Instance.1"));
    assert_eq!(io[0].path.as_deref(), Some(db_path.as_str()));
    assert_eq!(r.instances[0].errors, injected);
    let check = r
        .verdict
        .checks()
        .iter()
        .find(|c| c.name == "errors")
        .expect("an errors check");
    assert_eq!(check.value, injected as f64);
    assert!(!check.pass() && !r.verdict.pass());
    // The failed reads were not verified, and nothing else was found.
    assert!(r.integrity.clean(), "{:?}", r.integrity);
    assert!(r.integrity.pages_verified > 0);
}

#[test]
fn without_continue_on_errors_the_first_eio_stops_the_test_and_names_it() {
    let dev = SimDevice::new();
    let cfg = config(120.0, false);
    let spec = sim_database(&dev, 2048);
    let db_path = spec.db_path.display().to_string();
    let (r, injected) = run(&dev, &cfg, spec, eio_on_one_percent());
    assert!(injected >= 1);
    assert_eq!(r.stopped.reason, StopReason::IoError, "{:?}", r.stopped);
    assert!(
        r.test.duration_s < 119.0,
        "stopped early: {}",
        r.test.duration_s
    );
    let io: Vec<_> = r.errors.iter().filter(|e| e.class == "io_error").collect();
    assert_eq!(io.len(), 1, "{io:?}");
    let e = io[0];
    assert_eq!(e.count, 1);
    assert_eq!(e.errno, Some(5));
    assert_eq!(e.path.as_deref(), Some(db_path.as_str()));
    let offset = e.offset.expect("offset");
    assert_eq!(e.page, Some(offset / PAGE_SIZE as u64));
    assert_eq!(e.instance.as_deref(), Some("Instance.1"));
    assert!(!r.verdict.pass());
}

/// The ways a page is damaged before the run, and the class each must be reported as.
fn damage(dev: &SimDevice, path: &Path, pages: u64) -> BTreeMap<u64, &'static str> {
    let at = |n: u64| n * PAGE_SIZE as u64;
    let first = HEADER_PAGES;
    let mut want = BTreeMap::new();
    let mut p = vec![0u8; PAGE_SIZE];
    // A flipped bit.
    let n = first + pages / 8;
    dev.read_at(path, at(n), &mut p).expect("read");
    p[1000] ^= 0x10;
    dev.write_at(path, at(n), &p).expect("write");
    want.insert(n, "correctable_page");
    // Another page's content (a misdirected write).
    let n = first + 2 * pages / 8;
    dev.write_at(path, at(n), &page(n + 1, DB_ID, 0))
        .expect("write");
    want.insert(n, "wrong_page_number");
    // Another database's page.
    let n = first + 3 * pages / 8;
    dev.write_at(path, at(n), &page(n, DB_ID + 7, 0))
        .expect("write");
    want.insert(n, "wrong_database_page");
    // Zeroed.
    let n = first + 4 * pages / 8;
    dev.write_at(path, at(n), &vec![0u8; PAGE_SIZE])
        .expect("write");
    want.insert(n, "unwritten_page");
    // Torn: the first half of a newer generation over the old page.
    let n = first + 5 * pages / 8;
    let newer = page(n, DB_ID, 9);
    dev.write_at(path, at(n), &newer[..PAGE_SIZE / 2])
        .expect("write");
    want.insert(n, "bad_page");
    want
}

/// Each damaged page is reported as what it is, once, named by page and offset, or, if the run
/// rewrote it before any read met it (a new page), it is good at the end. Stale pages (a lost
/// write, injected as a write reported done that never reached the device) are pages the engine
/// wrote during the run.
#[test]
fn damaged_pages_are_named_and_classified_with_continue_on_errors() {
    let dev = SimDevice::new();
    let pages = 256;
    let mut cfg = config(60.0, true);
    cfg.profile.iops_per_mailbox = 1.0;
    let spec = sim_database(&dev, pages);
    let path = spec.db_path.clone();
    let want = damage(&dev, &path, pages);
    // Lost writes: a few flushes of the database file reported done but never written.
    let lost = vec![FaultRule::new(Some(IoOp::Write), FaultKind::Lost)
        .on_file(0)
        .after(200)
        .one_in(50)
        .times(5)];
    let (r, _) = run(&dev, &cfg, spec, lost);
    assert_eq!(
        r.stopped.reason,
        StopReason::VerdictFailed,
        "{:?}",
        r.stopped
    );
    let named: Vec<_> = r
        .errors
        .iter()
        .filter(|e| e.class != "io_error" && e.class != "hung_io")
        .collect();
    let mut met = BTreeMap::new();
    for e in &named {
        let n = e.page.expect("a damaged page is named");
        assert_eq!(e.offset, Some(n * PAGE_SIZE as u64), "{e:?}");
        assert_eq!(e.path.as_deref(), Some(path.display().to_string().as_str()));
        assert!(
            e.message
                .starts_with(&format!("page {n} at offset {} of ", n * PAGE_SIZE as u64)),
            "{}",
            e.message
        );
        assert!(
            met.insert(n, e.class.clone()).is_none(),
            "one entry per page: {n}"
        );
        match want.get(&n) {
            Some(class) => assert_eq!(e.class, *class, "page {n}: {}", e.message),
            None => assert_eq!(e.class, "stale_page", "page {n}: {}", e.message),
        }
    }
    assert!(
        named.iter().any(|e| e.class == "stale_page"),
        "a lost write was met: {named:?}"
    );
    let mut scratch = vec![0u8; PAGE_SIZE];
    let mut p = vec![0u8; PAGE_SIZE];
    for (&n, class) in &want {
        if met.contains_key(&n) {
            continue;
        }
        dev.read_at(&path, n * PAGE_SIZE as u64, &mut p)
            .expect("read");
        assert!(
            matches!(
                check_data_page(&p, n, DB_ID, &mut scratch),
                PageCheck::Good { .. }
            ),
            "page {n} ({class}) was neither met nor rewritten"
        );
    }
    assert!(met.len() >= 3, "most damaged pages were met: {met:?}");
    // The counts by class add up to the integrity totals.
    let g = &r.integrity;
    let sum = |class: &str| -> u64 {
        r.errors
            .iter()
            .filter(|e| e.class == class)
            .map(|e| e.count)
            .sum()
    };
    assert_eq!(
        sum("bad_page") + sum("unwritten_page") + sum("wrong_database_page"),
        g.bad_pages
    );
    assert_eq!(sum("unwritten_page"), g.unwritten_pages);
    assert_eq!(sum("wrong_database_page"), g.wrong_database_pages);
    assert_eq!(sum("correctable_page"), g.correctable_pages);
    assert_eq!(sum("wrong_page_number"), g.wrong_page_number_pages);
    assert_eq!(sum("stale_page"), g.stale_pages);
    assert!(!r.verdict.pass());
}

#[test]
fn without_continue_on_errors_the_first_damaged_page_stops_the_test() {
    let dev = SimDevice::new();
    let pages = 256;
    let cfg = config(60.0, false);
    let spec = sim_database(&dev, pages);
    let path = spec.db_path.clone();
    let want = damage(&dev, &path, pages);
    let (r, _) = run(&dev, &cfg, spec, Vec::new());
    assert_eq!(
        r.stopped.reason,
        StopReason::IntegrityError,
        "{:?}",
        r.stopped
    );
    assert!(
        r.test.duration_s < 59.0,
        "stopped early: {}",
        r.test.duration_s
    );
    let named: Vec<_> = r.errors.iter().filter(|e| e.page.is_some()).collect();
    assert!(!named.is_empty());
    // The read that met it may have held more than one damaged page; the first is the reason.
    let first = named[0];
    let n = first.page.expect("page");
    assert_eq!(want.get(&n).copied(), Some(first.class.as_str()));
    assert_eq!(r.stopped.message, first.message);
    assert!(!r.verdict.pass());
}

/// With copies > 1 a damaged page is patched (rewritten from its known content, here the
/// prepared generation 0: the run had not written it), counted, named, and the test goes on
/// without `continue_on_errors`, failing its verdict. Read back afterwards, every patched page is
/// good.
#[test]
fn with_copies_damaged_pages_are_patched_and_the_test_goes_on() {
    let dev = SimDevice::new();
    let pages = 256;
    let mut cfg = config(60.0, false);
    cfg.profile.copies_per_database = 2;
    let spec = sim_database(&dev, pages);
    let path = spec.db_path.clone();
    let want = damage(&dev, &path, pages);
    let (r, _) = run(&dev, &cfg, spec, Vec::new());
    assert_ran_its_course_and_failed(&r, 60.0);
    let patched: Vec<_> = r
        .errors
        .iter()
        .filter(|e| e.class == "patched_page")
        .collect();
    assert!(!patched.is_empty(), "{:?}", r.errors);
    let g = &r.integrity;
    assert_eq!(
        patched.iter().map(|e| e.count).sum::<u64>(),
        g.patched_pages
    );
    assert!(g.patched_pages <= g.damaged(), "{g:?}");
    let mut scratch = vec![0u8; PAGE_SIZE];
    let mut p = vec![0u8; PAGE_SIZE];
    for e in &patched {
        let n = e.page.expect("page");
        assert!(want.contains_key(&n), "page {n} was not damaged");
        assert!(e.message.contains("at generation 0"), "{}", e.message);
        // The damage was named too.
        assert!(r
            .errors
            .iter()
            .any(|d| d.page == Some(n) && d.class == want[&n]));
        dev.read_at(&path, n * PAGE_SIZE as u64, &mut p)
            .expect("read");
        match check_data_page(&p, n, DB_ID, &mut scratch) {
            // At the patched generation, or a newer one the run wrote since.
            PageCheck::Good { generation } => assert!(generation == 0 || generation > 1 << 40),
            other => panic!("page {n} after patching: {other:?}"),
        }
    }
    assert!(!r.verdict.pass());
    let check = |name: &str| r.verdict.checks().iter().find(|c| c.name == name).cloned();
    let integrity = check("data_integrity_errors").expect("integrity check");
    assert!(!integrity.pass());
    // Patches are not counted as more errors: the damage is.
    let errors = check("errors").expect("errors check");
    assert_eq!(errors.value, g.damaged() as f64);
    assert_eq!(r.instances[0].errors, g.damaged());
}

/// A read that never completes (ten days of latency) does not hold shutdown forever: once it
/// has been outstanding for the hung-I/O threshold plus a grace period (the threshold again),
/// shutdown gives up on it and the test ends with an I/O error naming it, result and all.
#[test]
fn shutdown_gives_up_on_a_hung_io_that_never_completes() {
    let dev = SimDevice::new();
    let mut cfg = config(30.0, false);
    cfg.thresholds.hung_io_s = 20.0;
    let spec = sim_database(&dev, 2048);
    let db_path = spec.db_path.display().to_string();
    let stuck = vec![FaultRule::new(
        Some(IoOp::Read),
        FaultKind::Latency(Duration::from_secs(10 * 86_400)),
    )
    .on_file(0)
    .after(300)
    .times(1)];
    let (r, _) = run(&dev, &cfg, spec, stuck);
    assert_eq!(r.stopped.reason, StopReason::IoError, "{:?}", r.stopped);
    assert!(
        r.stopped.message.contains("never completed"),
        "{}",
        r.stopped.message
    );
    assert!(
        r.stopped.message.contains(&db_path),
        "{}",
        r.stopped.message
    );
    let hung = r
        .errors
        .iter()
        .find(|e| e.class == "hung_io")
        .expect("reported as hung");
    let io = r
        .errors
        .iter()
        .find(|e| e.class == "io_error")
        .expect("the give-up");
    assert_eq!(io.path.as_deref(), Some(db_path.as_str()));
    assert_eq!(io.offset, hung.offset);
    assert!(!r.verdict.pass());
}

/// Every write submitted: (path, file index, offset).
type Writes = Arc<std::sync::Mutex<Vec<(PathBuf, usize, u64)>>>;

/// Runs the Performance plan with copies 2 (so replication reads every closed log file) and
/// `faults`, recording every write submitted.
fn run_replicated(
    dev: &SimDevice,
    cfg: &RunConfig,
    spec: InstanceSpec,
    faults: Vec<FaultRule>,
) -> (RunResult, Writes) {
    let writes = Writes::default();
    let seen = writes.clone();
    let queue = Tap::new(
        Box::new(
            SimQueue::new(
                dev.clone(),
                Arc::new(SimClock::new()),
                mbx_engine::queue_depth(cfg, 1),
                LatencyModel::typical(),
                5,
            )
            .with_faults(faults),
        ),
        Box::new(move |path, req| {
            if req.op == IoOp::Write {
                if let Ok(mut w) = seen.lock() {
                    w.push((path.to_path_buf(), req.file, req.offset));
                }
            }
        }),
        Box::new(|_| {}),
    );
    let r = run_plan(
        cfg,
        &Plan::performance(cfg),
        vec![spec],
        Box::new(queue),
        &mut Quiet,
        &AtomicBool::new(false),
    )
    .expect("run");
    (r, writes)
}

/// A log write the storage acknowledged but dropped is found by the replication reads of its
/// file (the record reads back as zeros): an integrity error naming the log file, the record's
/// offset and its Lsn, which stops the test, or with `continue_on_errors` is counted and fails
/// the verdict. The replication reads are the same with and without the fault.
#[test]
fn a_dropped_log_write_is_caught_by_the_replication_reads() {
    let mut cfg = config(60.0, false);
    cfg.profile.copies_per_database = 2;
    // Samples enough for the maximum-latency checks to judge (12 > 6 tolerated): the clean
    // run passes.
    cfg.sample_interval_s = 5.0;
    // A clean run first: nothing found, and where generation 1's writes go.
    let dev = SimDevice::new();
    let (clean, writes) = run_replicated(&dev, &cfg, sim_database(&dev, 2048), Vec::new());
    assert_eq!(
        clean.stopped.reason,
        StopReason::Completed,
        "{:?}",
        clean.errors
    );
    assert!(clean.errors.is_empty(), "{:?}", clean.errors);
    assert_eq!(clean.integrity.log_problems, 0);
    let repl = clean.instances[0].log_replication;
    assert!(repl.reads_per_s > 0.0, "replication read the log: {repl:?}");
    let writes = writes.lock().expect("writes").clone();
    let gen1: Vec<_> = writes
        .iter()
        .filter(|(p, ..)| p.ends_with("E0000000001.log"))
        .collect();
    // The header, then records: drop the 11th write (a record) of generation 1.
    assert!(gen1.len() > 20, "generation 1 filled: {}", gen1.len());
    let (file, dropped) = (gen1[0].1, gen1[10].2);
    assert!(dropped > 0, "a record, not the header");
    let drop = || {
        vec![FaultRule::new(Some(IoOp::Write), FaultKind::Lost)
            .on_file(file)
            .after(10)
            .times(1)]
    };

    let dev = SimDevice::new();
    let (r, _) = run_replicated(&dev, &cfg, sim_database(&dev, 2048), drop());
    assert_eq!(
        r.stopped.reason,
        StopReason::IntegrityError,
        "{:?}",
        r.stopped
    );
    let lost: Vec<_> = r
        .errors
        .iter()
        .filter(|e| e.class == "lost_log_write")
        .collect();
    assert_eq!(lost.len(), 1, "{:?}", r.errors);
    let e = lost[0];
    assert_eq!(e.path.as_deref(), Some("/sim/logs/db0/E0000000001.log"));
    assert_eq!(e.offset, Some(dropped));
    assert_eq!(e.page, None);
    assert_eq!(e.instance.as_deref(), Some("Instance.1"));
    assert!(
        e.message
            .starts_with("/sim/logs/db0/E0000000001.log: byte offset ")
            && e.message
                .contains(&format!("Lsn gen 0x1 offset {dropped:#X}"))
            && e.message.contains("lost write"),
        "{}",
        e.message
    );
    assert_eq!(r.stopped.message, e.message);
    assert!(!r.verdict.pass());

    // With continue_on_errors: counted, and the test runs its course and fails.
    let cfg = RunConfig {
        continue_on_errors: true,
        ..cfg
    };
    let dev = SimDevice::new();
    let (r, _) = run_replicated(&dev, &cfg, sim_database(&dev, 2048), drop());
    assert_ran_its_course_and_failed(&r, 60.0);
    assert_eq!(r.integrity.log_problems, 1);
    let classes: Vec<_> = r.errors.iter().map(|e| e.class.as_str()).collect();
    assert_eq!(classes, ["lost_log_write"]);
    let integrity = r
        .verdict
        .checks()
        .iter()
        .find(|c| c.name == "data_integrity_errors")
        .expect("integrity check");
    assert_eq!(integrity.value, 1.0);
    assert!(!integrity.pass());
    // Verifying changed no read: replication read as much, in reads of the same size.
    let faulty = r.instances[0].log_replication;
    assert_eq!(faulty.read_avg_bytes, repl.read_avg_bytes);
    assert_eq!(faulty.reads_per_s, repl.reads_per_s);
}
