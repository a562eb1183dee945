//! Integration tests of creation, attach, resume, safety and verification on real files
//! (databases of a few MiB, under the target directory: ext4 here, so O_DIRECT is exercised), in
//! temporary directories removed when each test ends, also when it fails.

use std::collections::HashSet;
use std::path::Path;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Mutex;

use mbx_io::{EngineKind, FaultKind, FaultQueue, FaultRule, IoOp};
use mbx_store::create::QueueWrapper;
use mbx_store::page::{build_data_page_with, PageHeader, PayloadGenerator, PAGE_SIZE};
use mbx_store::verify::read_database_header;
use mbx_store::{
    plan_paths, prepare, verify_database, CreateEvent, CreateParams, DatabaseSpec, DbState,
    StoreError, VerifyOptions,
};

/// A fresh directory `store-NAME-XXXXXX` under the target directory, removed with its contents
/// when the guard is dropped (also when the test panics); `dir.path()` names it.
fn scratch(name: &str) -> tempfile::TempDir {
    tempfile::Builder::new()
        .prefix(&format!("store-{name}-"))
        .tempdir_in(env!("CARGO_TARGET_TMPDIR"))
        .expect("create scratch dir")
}

/// `databases` databases of `mib` MiB each in `dir`.
fn setup(dir: &Path, databases: u32, mib: u64) -> (Vec<DatabaseSpec>, CreateParams) {
    let specs = plan_paths(&[dir.join("db")], &[dir.join("logs")], databases).expect("plan");
    let params = CreateParams {
        data_pages: mib * (1 << 20) / PAGE_SIZE as u64,
        mailboxes: databases as u64,
        quota_mb: mib,
        databases,
        compressibility_pct: 0,
        engine: EngineKind::default(),
        direct: true,
        force: false,
        allow_device: false,
        queue_depth: 4,
        tool_version: "test".into(),
    };
    (specs, params)
}

fn run(
    specs: &[DatabaseSpec],
    params: &CreateParams,
    wrap: Option<&QueueWrapper>,
) -> (
    Result<Vec<mbx_store::PreparedDatabase>, StoreError>,
    Vec<CreateEvent>,
) {
    let events = Mutex::new(Vec::new());
    let cancel = AtomicBool::new(false);
    let r = prepare(
        specs,
        params,
        &|e| events.lock().expect("lock").push(e),
        &cancel,
        wrap,
    );
    (r, events.into_inner().expect("lock"))
}

fn verify(path: &Path) -> mbx_store::VerifyReport {
    verify_database(
        path,
        &VerifyOptions::default(),
        &AtomicBool::new(false),
        &|_| {},
    )
    .expect("verify")
}

fn actions(events: &[CreateEvent]) -> Vec<&'static str> {
    events
        .iter()
        .filter_map(|e| match e {
            CreateEvent::Planned { action, .. } => Some(*action),
            _ => None,
        })
        .collect()
}

#[test]
fn create_verify_then_attach() {
    let dir = scratch("create-attach");
    let (specs, params) = setup(dir.path(), 2, 3);
    let (r, events) = run(&specs, &params, None);
    let prepared = r.expect("created");
    assert_eq!(actions(&events), ["create", "create"]);
    for p in &prepared {
        assert!(!p.attached);
        assert_eq!(p.header.state, DbState::Clean);
        let len = std::fs::metadata(&p.spec.path).expect("stat").len();
        assert_eq!(len, params.file_bytes());
        let v = verify(&p.spec.path);
        assert!(v.is_clean(), "{v:?}");
        assert_eq!(v.seen_pages, len / PAGE_SIZE as u64);
        assert!(p.spec.log_dir.join("E0000000001.log").exists());
        assert!(p.spec.log_dir.join("checkpoint.chk").exists());
    }
    assert_ne!(
        prepared[0].header.database_id,
        prepared[1].header.database_id
    );
    let modified = std::fs::metadata(&prepared[0].spec.path)
        .and_then(|m| m.modified())
        .expect("mtime");
    // Second run: attach, no writes.
    let (r, events) = run(&specs, &params, None);
    let again = r.expect("attached");
    assert_eq!(actions(&events), ["attach", "attach"]);
    assert!(again.iter().all(|p| p.attached));
    assert_eq!(again[0].header.database_id, prepared[0].header.database_id);
    let after = std::fs::metadata(&prepared[0].spec.path)
        .and_then(|m| m.modified())
        .expect("mtime");
    assert_eq!(modified, after, "attach must not write");
}

#[test]
fn two_databases_share_no_4k_block() {
    let dir = scratch("dedup");
    let (specs, params) = setup(dir.path(), 2, 2);
    run(&specs, &params, None).0.expect("created");
    let mut seen = HashSet::new();
    let mut blocks = 0;
    for s in &specs {
        let data = std::fs::read(&s.path).expect("read");
        for block in data.chunks_exact(4096) {
            blocks += 1;
            assert!(
                seen.insert(xxhash_rust_free_hash(block)),
                "duplicate 4 KiB block in {}",
                s.path.display()
            );
        }
    }
    assert_eq!(blocks, 2 * params.file_bytes() / 4096);
}

/// A 128-bit hash from two 64-bit FNV-style passes (no extra dependency; collisions across a few
/// thousand blocks are negligible, and a real duplicate always collides).
fn xxhash_rust_free_hash(b: &[u8]) -> (u64, u64) {
    let mut h1 = 0xcbf2_9ce4_8422_2325u64;
    let mut h2 = 0x8422_2325_cbf2_9ce4u64;
    for &x in b {
        h1 = (h1 ^ x as u64).wrapping_mul(0x100_0000_01b3);
        h2 = (h2 ^ x as u64).wrapping_mul(0x100_0000_01b3).rotate_left(5);
    }
    (h1, h2)
}

#[test]
fn compressibility_is_what_was_asked() {
    let dir = scratch("compress");
    let (specs, mut params) = setup(dir.path(), 1, 1);
    params.compressibility_pct = 50;
    run(&specs, &params, None).0.expect("created");
    let data = std::fs::read(&specs[0].path).expect("read");
    let pages = &data[2 * PAGE_SIZE..];
    let compressed = lz4_flex::block::compress(pages);
    let saved = 1.0 - compressed.len() as f64 / pages.len() as f64;
    assert!(
        (0.40..=0.60).contains(&saved),
        "lz4 saved {:.1}%",
        saved * 100.0
    );
    // The default is incompressible.
    let dir = scratch("compress0");
    let (specs, params) = setup(dir.path(), 1, 1);
    run(&specs, &params, None).0.expect("created");
    let data = std::fs::read(&specs[0].path).expect("read");
    let compressed = lz4_flex::block::compress(&data[2 * PAGE_SIZE..]);
    assert!(compressed.len() as f64 > 0.99 * (data.len() - 2 * PAGE_SIZE) as f64);
}

fn write_at(path: &Path, offset: u64, bytes: &[u8]) {
    let f = std::fs::OpenOptions::new()
        .write(true)
        .open(path)
        .expect("open");
    mbx_io::platform::write_all_at(&f, bytes, offset).expect("write");
}

fn read_page(path: &Path, n: u64) -> Vec<u8> {
    let f = std::fs::File::open(path).expect("open");
    let mut p = vec![0u8; PAGE_SIZE];
    mbx_io::platform::read_exact_at(&f, &mut p, n * PAGE_SIZE as u64).expect("read");
    p
}

#[test]
fn every_kind_of_corruption_is_counted() {
    let dir = scratch("corrupt");
    let (specs, params) = setup(dir.path(), 2, 1);
    run(&specs, &params, None).0.expect("created");
    let (a, b) = (&specs[0].path, &specs[1].path);
    let page = |n: u64| n * PAGE_SIZE as u64;
    // Page 5: one flipped bit (correctable).
    let mut p = read_page(a, 5);
    p[1000] ^= 0x20;
    write_at(a, page(5), &p);
    // Page 6: two flipped bits (bad).
    let mut p = read_page(a, 6);
    p[1000] ^= 0x20;
    p[9000] ^= 0x01;
    write_at(a, page(6), &p);
    // Page 7: torn (second half zeros; bad).
    write_at(a, page(7) + 16384, &[0u8; 16384]);
    // Page 8 holds a copy of page 9 (wrong page number).
    write_at(a, page(8), &read_page(a, 9));
    // Page 10 holds page 10 of the other database (wrong database; bad).
    write_at(a, page(10), &read_page(b, 10));
    // Page 11 zeroed (unwritten; bad).
    write_at(a, page(11), &[0u8; PAGE_SIZE]);
    let v = verify(a);
    assert_eq!(v.correctable_pages, 1, "{v:?}");
    assert_eq!(v.wrong_page_number_pages, 1, "{v:?}");
    assert_eq!(v.wrong_database_pages, 1, "{v:?}");
    assert_eq!(v.unwritten_pages, 1, "{v:?}");
    assert_eq!(v.bad_pages, 4, "{v:?}"); // 6, 7, 10, 11
    let kinds: Vec<(u64, &str)> = v.problems.iter().map(|p| (p.page, p.kind)).collect();
    assert_eq!(
        kinds,
        [
            (5, "correctable"),
            (6, "bad"),
            (7, "bad"),
            (8, "wrong_page_number"),
            (10, "wrong_database"),
            (11, "unwritten")
        ]
    );
    assert!(verify(b).is_clean());
    // A damaged header copy is survivable (shadow) but counted.
    write_at(b, 100, &[0xFFu8; 64]);
    let v = verify(b);
    assert_eq!((v.bad_pages, v.problems[0].kind), (1, "bad_header"));
}

#[test]
fn a_database_of_the_earlier_generator_still_verifies_and_classifies() {
    // A database prepared before the payload generator was recorded holds wyrand pages with
    // byte 45 zero; the engine rewrites pages with the current generator, so a database mixes
    // both. Rewrite every other data page as the earlier version wrote it.
    let dir = scratch("oldgen");
    let (specs, params) = setup(dir.path(), 1, 1);
    run(&specs, &params, None).0.expect("created");
    let a = &specs[0].path;
    let pages = 2 + params.data_pages;
    for n in (2..pages).step_by(2) {
        let current = read_page(a, n);
        assert_eq!(
            PayloadGenerator::of_page(&current),
            Some(PayloadGenerator::CURRENT)
        );
        let mut old = vec![0u8; PAGE_SIZE];
        build_data_page_with(
            &mut old,
            &PageHeader::read(&current),
            PayloadGenerator::Wyrand,
        );
        assert_eq!(old[45], 0);
        assert_ne!(old[64..], current[64..]);
        write_at(a, n * PAGE_SIZE as u64, &old);
    }
    assert!(verify(a).is_clean(), "{:?}", verify(a));
    // One flipped bit in an old page and in a new one: both correctable; two bits: bad.
    for (n, at) in [(4u64, 1000usize), (5, 3000)] {
        let mut p = read_page(a, n);
        p[at] ^= 0x20;
        write_at(a, n * PAGE_SIZE as u64, &p);
    }
    let mut p = read_page(a, 6);
    p[1000] ^= 0x20;
    p[9000] ^= 0x01;
    write_at(a, 6 * PAGE_SIZE as u64, &p);
    let v = verify(a);
    let kinds: Vec<(u64, &str)> = v.problems.iter().map(|p| (p.page, p.kind)).collect();
    assert_eq!(
        kinds,
        [(4, "correctable"), (5, "correctable"), (6, "bad")],
        "{v:?}"
    );
}

fn faults(
    rule: FaultRule,
) -> impl Fn(u32, Box<dyn mbx_io::IoQueue>) -> Box<dyn mbx_io::IoQueue> + Sync {
    move |_, q| Box::new(FaultQueue::new(q, vec![rule.clone()]))
}

#[test]
fn injected_eio_leaves_an_incomplete_database_that_resumes() {
    let dir = scratch("eio");
    let (specs, params) = setup(dir.path(), 1, 4);
    let wrap = faults(
        FaultRule::new(Some(IoOp::Write), FaultKind::Error(5))
            .after(2)
            .times(1),
    );
    let (r, _) = run(&specs, &params, Some(&wrap));
    let err = r.expect_err("EIO must fail the creation");
    let msg = err.to_string();
    assert!(
        // Error 5 is EIO on Unix ("Input/output error"), ERROR_ACCESS_DENIED on Windows.
        msg.contains("mbxstress001.edb")
            && msg.contains(&std::io::Error::from_raw_os_error(5).to_string()),
        "{msg}"
    );
    assert!(!err.is_user_error());
    // Never a valid database: the header still says Creating, and verification refuses it.
    let h = read_database_header(&specs[0].path).expect("header");
    assert_eq!(h.state, DbState::Creating);
    let v = verify_database(
        &specs[0].path,
        &VerifyOptions::default(),
        &AtomicBool::new(false),
        &|_| {},
    );
    assert!(matches!(v, Err(StoreError::Incomplete { .. })), "{v:?}");
    // Without the fault, the same call resumes and completes.
    let (r, events) = run(&specs, &params, None);
    r.expect("resumed");
    assert_eq!(actions(&events), ["resume"]);
    assert!(verify(&specs[0].path).is_clean());
}

#[test]
fn short_write_fails_and_torn_write_is_caught_by_verification() {
    let dir = scratch("short");
    let (specs, params) = setup(dir.path(), 1, 2);
    let wrap = faults(
        FaultRule::new(Some(IoOp::Write), FaultKind::Short)
            .after(1)
            .times(1),
    );
    let err = run(&specs, &params, Some(&wrap))
        .0
        .expect_err("short write must fail");
    assert!(err.to_string().contains("short write"), "{err}");
    assert_eq!(
        read_database_header(&specs[0].path).expect("header").state,
        DbState::Creating
    );

    // A device that silently drops half a write: creation cannot know, verification must.
    let dir = scratch("torn");
    let (specs, params) = setup(dir.path(), 1, 2);
    let wrap = faults(
        FaultRule::new(Some(IoOp::Write), FaultKind::Torn)
            .after(1)
            .times(1),
    );
    run(&specs, &params, Some(&wrap))
        .0
        .expect("the device lied");
    let v = verify(&specs[0].path);
    // The torn 1 MiB write kept its first 512 KiB: 16 pages lost.
    assert_eq!(v.bad_pages, 16, "{v:?}");
    assert!(!v.is_clean());
}

#[test]
fn interrupted_creation_resumes_where_it_stopped() {
    let dir = scratch("interrupt");
    let (specs, params) = setup(dir.path(), 1, 8);
    let cancel = AtomicBool::new(false);
    let r = prepare(
        &specs,
        &params,
        &|e| {
            if matches!(e, CreateEvent::Progress { .. }) {
                cancel.store(true, Ordering::Relaxed);
            }
        },
        &cancel,
        None,
    );
    let Err(StoreError::Interrupted {
        done_bytes,
        total_bytes,
    }) = r
    else {
        panic!("expected an interruption, got {r:?}");
    };
    assert!(
        done_bytes > 0 && done_bytes < total_bytes,
        "{done_bytes}/{total_bytes}"
    );
    let h = read_database_header(&specs[0].path).expect("header");
    assert_eq!(h.state, DbState::Creating);
    assert_eq!(h.created_pages * PAGE_SIZE as u64, done_bytes);
    let (r, events) = run(&specs, &params, None);
    r.expect("resumed");
    assert_eq!(actions(&events), ["resume"]);
    let written: u64 = events
        .iter()
        .filter_map(|e| match e {
            CreateEvent::Planned { bytes_to_write, .. } => Some(*bytes_to_write),
            _ => None,
        })
        .sum();
    assert_eq!(
        written,
        total_bytes - done_bytes,
        "only the rest is written"
    );
    assert!(verify(&specs[0].path).is_clean());
}

#[test]
fn foreign_files_are_refused_unless_forced() {
    let dir = scratch("foreign");
    let (specs, mut params) = setup(dir.path(), 1, 1);
    std::fs::create_dir_all(specs[0].path.parent().expect("parent")).expect("mkdir");
    std::fs::write(&specs[0].path, b"someone's data").expect("write");
    let err = run(&specs, &params, None).0.expect_err("must refuse");
    assert!(matches!(err, StoreError::NotOurs { .. }), "{err}");
    assert!(err.is_user_error());
    assert!(err.to_string().contains("--force"), "{err}");
    assert_eq!(
        std::fs::read(&specs[0].path).expect("read"),
        b"someone's data"
    );
    params.force = true;
    run(&specs, &params, None).0.expect("forced");
    assert!(verify(&specs[0].path).is_clean());
}

/// Writes log generation `gen` of database `db` with one record (what a run leaves).
fn write_log(dir: &Path, gen: u64, db: u64) {
    use mbx_store::log::{
        encode_log_header, encode_record, log_file_name, LOG_FILE_SIZE, LOG_SECTOR,
    };
    let mut image = vec![0u8; LOG_FILE_SIZE];
    encode_log_header(&mut image, gen, db, 1);
    let lsn = mbx_store::Lsn::new(gen, LOG_SECTOR as u64);
    encode_record(&mut image[LOG_SECTOR..], lsn, 100, 1, &[]);
    std::fs::write(dir.join(log_file_name(gen)), image).expect("write log");
}

fn write_checkpoint(dir: &Path, c: mbx_store::checkpoint::Checkpoint) {
    use mbx_store::checkpoint::{CHECKPOINT_FILE, SLOT};
    let mut image = std::fs::read(dir.join(CHECKPOINT_FILE)).expect("read checkpoint");
    let off = c.slot_offset() as usize;
    c.encode(&mut image[off..off + SLOT]);
    std::fs::write(dir.join(CHECKPOINT_FILE), image).expect("write checkpoint");
}

/// An earlier run's log is adopted as it is when it is usable; a broken one is replaced by a new
/// log at generation 1 whose checkpoint still wins over the old one.
#[test]
fn prepare_adopts_a_usable_log_and_restarts_a_broken_one() {
    use mbx_store::checkpoint::{read_checkpoint, Checkpoint};
    use mbx_store::log_dir::{describe_log_dir, list_log_generations, scan_log_dir};
    use mbx_store::Lsn;
    let dir = scratch("adopt-logs");
    let (specs, params) = setup(dir.path(), 1, 1);
    let prepared = run(&specs, &params, None).0.expect("created");
    let (logs, db) = (&specs[0].log_dir, prepared[0].header.database_id);
    let first = read_checkpoint(logs).expect("read").expect("a checkpoint");
    assert_eq!(first.lsn, Lsn::new(1, 4096));
    assert!(scan_log_dir(logs, db).expect("scan").is_continuous());
    // A run continued with generations 2..4, checkpointed in 3 and retired generations 1 and 2.
    for gen in 2..=4 {
        write_log(logs, gen, db);
    }
    let ran = Checkpoint {
        sequence: first.sequence + 7,
        database_id: db,
        lsn: Lsn::new(3, 4096),
    };
    write_checkpoint(logs, ran);
    for gen in 1..=2 {
        std::fs::remove_file(logs.join(mbx_store::log::log_file_name(gen))).expect("retire");
    }
    run(&specs, &params, None).0.expect("attached");
    let state = describe_log_dir(logs, db).expect("describe");
    assert_eq!(
        state.generations,
        vec![3, 4],
        "the log is adopted untouched"
    );
    assert_eq!(state.checkpoint, Some(ran));
    assert_eq!(state.next_generation(), 5);
    // The disk filled (or the run crashed) after generation 5's file was created and before
    // its header was written: the empty file is not a foreign one, and the log still ends at 4.
    std::fs::write(logs.join(mbx_store::log::log_file_name(5)), b"").expect("empty");
    run(&specs, &params, None).0.expect("attached");
    let state = describe_log_dir(logs, db).expect("describe");
    assert_eq!(state.generations, vec![3, 4], "the empty file is dropped");
    assert_eq!(state.checkpoint, Some(ran));
    // A generation the checkpoint needs is lost: the log cannot be continued and starts again.
    std::fs::remove_file(logs.join(mbx_store::log::log_file_name(3))).expect("lose");
    run(&specs, &params, None).0.expect("attached");
    assert_eq!(list_log_generations(logs).expect("list"), vec![1]);
    let restarted = read_checkpoint(logs).expect("read").expect("a checkpoint");
    assert_eq!(restarted.sequence, ran.sequence + 1);
    assert_eq!(restarted.lsn, Lsn::new(1, 4096));
    assert!(scan_log_dir(logs, db).expect("scan").is_continuous());
    // A file with a log's name that is not ours is refused, and kept.
    let foreign = logs.join(mbx_store::log::log_file_name(2));
    std::fs::write(&foreign, b"someone's log").expect("write");
    let err = run(&specs, &params, None).0.expect_err("must refuse");
    assert!(
        matches!(err, StoreError::NotOurs { ref path, .. } if *path == foreign),
        "{err}"
    );
    assert_eq!(std::fs::read(&foreign).expect("read"), b"someone's log");
}

#[test]
fn insufficient_space_is_refused_before_writing() {
    let dir = scratch("space");
    let (specs, mut params) = setup(dir.path(), 2, 1);
    params.data_pages = 1 << 30; // 32 TiB per database
    let err = run(&specs, &params, None).0.expect_err("must refuse");
    assert!(matches!(err, StoreError::InsufficientSpace { .. }), "{err}");
    assert!(err.is_user_error());
    assert!(!specs[0].path.exists() && !specs[1].path.exists());
}

#[test]
fn mismatched_parameters_are_refused_on_attach() {
    let dir = scratch("mismatch");
    let (specs, mut params) = setup(dir.path(), 1, 1);
    run(&specs, &params, None).0.expect("created");
    params.data_pages *= 2;
    let err = run(&specs, &params, None).0.expect_err("must refuse");
    assert!(
        matches!(
            err,
            StoreError::ParamsMismatch {
                field: "data pages",
                ..
            }
        ),
        "{err}"
    );
    params.data_pages /= 2;
    params.compressibility_pct = 30;
    let err = run(&specs, &params, None).0.expect_err("must refuse");
    assert!(err.to_string().contains("compressibility"), "{err}");
}

#[test]
fn sync_engine_and_buffered_io_work_too() {
    let dir = scratch("sync-engine");
    let (specs, mut params) = setup(dir.path(), 2, 1);
    params.engine = EngineKind::Sync;
    params.direct = false;
    run(&specs, &params, None).0.expect("created");
    let opts = VerifyOptions {
        engine: EngineKind::Sync,
        direct: false,
        read_bytes: 65536,
        queue_depth: 2,
    };
    let v =
        verify_database(&specs[1].path, &opts, &AtomicBool::new(false), &|_| {}).expect("verify");
    assert!(v.is_clean());
    assert_eq!(v.seen_pages, params.data_pages + 2);
}

/// Issue 8.9: after a creation stopped by an error (or kill -9) before its first durable
/// watermark, the rerun's space check asks only for what is still missing, not the whole size.
#[test]
fn resume_needs_only_the_missing_space() {
    let dir = tempfile::tempdir().expect("tempdir");
    let (specs, params) = setup(dir.path(), 1, 8);
    // EIO on the 6th 1 MiB write: 5 MiB written, the header's watermark still 0.
    let wrap = faults(
        FaultRule::new(Some(IoOp::Write), FaultKind::Error(5))
            .after(5)
            .times(1),
    );
    run(&specs, &params, Some(&wrap))
        .0
        .expect_err("EIO stops the creation");
    let h = read_database_header(&specs[0].path).expect("header");
    assert_eq!((h.state, h.created_pages), (DbState::Creating, 0));
    let needed: u64 = mbx_store::create::space_needed(&specs, &params)
        .expect("space")
        .iter()
        .map(|(_, b)| b)
        .sum();
    let log_and_checkpoint =
        (mbx_store::log::LOG_FILE_SIZE + 2 * mbx_store::checkpoint::SLOT) as u64;
    assert!(
        needed <= (4 << 20) + log_and_checkpoint,
        "asks for {} MiB again",
        needed >> 20
    );
    let (r, events) = run(&specs, &params, None);
    r.expect("resumed");
    assert_eq!(actions(&events), ["resume"]);
    assert!(verify(&specs[0].path).is_clean());
}

/// Issue 24.6: a header that cannot be read is an I/O error naming the file, the offset and the
/// errno (a runtime error, exit 3), never "not an mbxstress database" (a usage error, exit 2).
/// The EIO is the kernel's own: /proc/self/mem read at address 0, which is never mapped. A file
/// too short to hold a header, and a readable header that is not ours, stay "not a database".
#[cfg(target_os = "linux")]
#[test]
fn an_unreadable_header_is_an_io_error_not_a_foreign_file() {
    const EIO: i32 = 5;
    let mem = Path::new("/proc/self/mem");
    let read = read_database_header(mem).expect_err("no header there");
    let verified = verify_database(
        mem,
        &VerifyOptions::default(),
        &AtomicBool::new(false),
        &|_| {},
    )
    .expect_err("no database there");
    for e in [read, verified] {
        assert!(!e.is_user_error(), "{e}");
        let StoreError::Io(mbx_io::IoError::Os {
            path,
            offset,
            error,
            ..
        }) = &e
        else {
            panic!("not an I/O error: {e:?}");
        };
        assert_eq!(path, mem, "{e}");
        assert_eq!(*offset, Some(0), "{e}");
        assert_eq!(error.raw_os_error(), Some(EIO), "{e}");
        assert!(!e.to_string().contains("not an mbxstress database"), "{e}");
    }
    let dir = scratch("foreign-header");
    let short = dir.path().join("short.edb");
    std::fs::write(&short, b"too short for a header").expect("write");
    let foreign = dir.path().join("foreign.edb");
    std::fs::write(&foreign, vec![0x5a; 2 * PAGE_SIZE]).expect("write");
    for p in [&short, &foreign] {
        let e = read_database_header(p).expect_err("not ours");
        assert!(
            matches!(&e, StoreError::NotADatabase { path } if path == p),
            "{e:?}"
        );
        assert!(e.is_user_error());
    }
}

/// Issue 34: a database whose two header copies were both zeroed is damage (`verify` reports
/// it, naming the pages), not "not an mbxstress database"; a file that never was one still is.
#[test]
fn a_zeroed_header_pair_is_damage_not_a_foreign_file() {
    let dir = scratch("zeroed-headers");
    let (specs, params) = setup(dir.path(), 1, 2);
    let (r, _) = run(&specs, &params, None);
    r.expect("created");
    let path = &specs[0].path;
    write_at(path, 0, &vec![0u8; 2 * PAGE_SIZE]);
    let opts = VerifyOptions::default();
    let e = verify_database(path, &opts, &AtomicBool::new(false), &|_| {}).expect_err("no header");
    assert!(matches!(e, StoreError::Damaged { .. }), "{e}");
    let text = e.to_string();
    assert!(
        text.contains("both header copies") && text.contains("page 2"),
        "{text}"
    );
    let foreign = dir.path().join("foreign.bin");
    std::fs::write(&foreign, vec![7u8; 16 * PAGE_SIZE]).expect("foreign");
    let e =
        verify_database(&foreign, &opts, &AtomicBool::new(false), &|_| {}).expect_err("not ours");
    assert!(matches!(e, StoreError::NotADatabase { .. }), "{e}");
}
