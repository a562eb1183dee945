//! Tests of the queues against real files (O_DIRECT where the filesystem supports it): one
//! conformance suite (`queue_suite!`) run against every backend of the platform (io_uring and
//! the thread pool on Linux, IOCP and the thread pool on Windows).

use std::sync::Arc;
use std::time::Duration;

use super::*;

/// A fresh temporary directory, removed with its contents when the guard is dropped (also when
/// the test panics).
fn scratch(name: &str) -> tempfile::TempDir {
    tempfile::Builder::new()
        .prefix(&format!("mbx-io-{name}-"))
        .tempdir()
        .expect("create scratch dir")
}

/// Opens a 1 MiB file `data` in a scratch directory; O_DIRECT unless the filesystem (e.g. tmpfs)
/// refuses it. Keep the returned directory alive while the file is used.
fn table(name: &str) -> (FileTable, tempfile::TempDir) {
    let dir = scratch(name);
    let path = dir.path().join("data");
    std::fs::write(&path, vec![0u8; 1 << 20]).expect("create");
    let mode = OpenMode::read_write_direct();
    let f = IoFile::open(&path, mode).or_else(|_| {
        IoFile::open(
            &path,
            OpenMode {
                direct: false,
                ..mode
            },
        )
    });
    (Files::new(vec![f.expect("open")]), dir)
}

fn pattern(len: usize, seed: u8) -> AlignedBuf {
    let mut b = AlignedBuf::zeroed(len);
    for (i, x) in b.as_mut_slice().iter_mut().enumerate() {
        *x = (i as u8).wrapping_mul(7).wrapping_add(seed);
    }
    b
}

fn req(op: IoOp, offset: u64, buf: AlignedBuf, tag: u64) -> IoRequest {
    IoRequest {
        op,
        file: 0,
        offset,
        len: buf.len(),
        buf,
        tag,
    }
}

fn round_trip(kind: EngineKind) {
    let (files, _dir) = table(&format!("rt-{}", kind.name()));
    let mut q = open_queue(kind, Arc::clone(&files), 8).expect("queue");
    // 8 writes of 32 KiB in flight at once, then read them back.
    for i in 0..8u64 {
        q.submit(req(IoOp::Write, i * 32768, pattern(32768, i as u8), i))
            .expect("submit");
    }
    let mut out = Vec::new();
    q.reap(8, &mut out).expect("reap");
    assert_eq!(out.len(), 8);
    for c in &out {
        assert_eq!(c.check(&files).expect("write ok"), 32768);
        assert!(c.latency > Duration::ZERO);
    }
    assert_eq!(q.in_flight(), 0);
    out.clear();
    for i in 0..8u64 {
        q.submit(req(IoOp::Read, i * 32768, AlignedBuf::zeroed(32768), i))
            .expect("submit");
    }
    q.reap(8, &mut out).expect("reap");
    for c in &out {
        c.check(&files).expect("read ok");
        assert_eq!(
            c.req.buf.as_slice(),
            pattern(32768, c.req.tag as u8).as_slice()
        );
    }
    // A read past the end is a short read, reported as an error naming the file.
    q.submit(req(IoOp::Read, 1 << 20, AlignedBuf::zeroed(4096), 99))
        .expect("submit");
    out.clear();
    q.reap(1, &mut out).expect("reap");
    let err = out[0].check(&files).expect_err("short read");
    assert!(err.to_string().contains("data"), "{err}");
}

fn faulty(name: &str, rules: Vec<FaultRule>) -> (FileTable, FaultQueue, tempfile::TempDir) {
    let (files, dir) = table(name);
    let inner = open_queue(EngineKind::Sync, Arc::clone(&files), 4).expect("queue");
    (files, FaultQueue::new(inner, rules), dir)
}

fn one(q: &mut FaultQueue, r: IoRequest) -> IoCompletion {
    q.submit(r).expect("submit");
    let mut out = Vec::new();
    q.reap(1, &mut out).expect("reap");
    assert_eq!(out.len(), 1);
    out.pop().expect("one completion")
}

#[test]
fn injected_eio_names_file_and_offset() {
    let (files, mut q, _dir) = faulty(
        "eio",
        vec![FaultRule::new(Some(IoOp::Write), FaultKind::Error(5))
            .after(1)
            .times(1)],
    );
    let ok = one(&mut q, req(IoOp::Write, 0, pattern(4096, 1), 1));
    ok.check(&files).expect("first write passes");
    let bad = one(&mut q, req(IoOp::Write, 4096, pattern(4096, 1), 2));
    let err = bad.check(&files).expect_err("second write fails");
    let msg = err.to_string();
    assert!(msg.contains("offset 4096") && msg.contains("data"), "{msg}");
    let third = one(&mut q, req(IoOp::Write, 8192, pattern(4096, 1), 3));
    third.check(&files).expect("third write passes");
    assert_eq!(q.injected(), 1);
}

#[test]
fn short_write_is_an_error_and_torn_write_is_silent() {
    let (files, mut q, _dir) = faulty(
        "short",
        vec![FaultRule::new(Some(IoOp::Write), FaultKind::Short).times(1)],
    );
    let c = one(&mut q, req(IoOp::Write, 0, pattern(32768, 3), 1));
    assert!(matches!(
        c.check(&files),
        Err(IoError::Short { got: 16384, .. })
    ));

    let (files, mut q, _dir) = faulty(
        "torn",
        vec![FaultRule::new(Some(IoOp::Write), FaultKind::Torn).times(1)],
    );
    let c = one(&mut q, req(IoOp::Write, 0, pattern(32768, 3), 1));
    assert_eq!(c.check(&files).expect("torn write looks fine"), 32768);
    let r = one(&mut q, req(IoOp::Read, 0, AlignedBuf::zeroed(32768), 2));
    let data = r.req.buf.as_slice();
    let expected = pattern(32768, 3);
    assert_eq!(&data[..16384], &expected.as_slice()[..16384]);
    assert_ne!(&data[16384..], &expected.as_slice()[16384..]);
}

#[test]
fn latency_and_bit_flips() {
    let (files, mut q, _dir) = faulty(
        "latency",
        vec![
            FaultRule::new(
                Some(IoOp::Read),
                FaultKind::Latency(Duration::from_millis(30)),
            )
            .times(1),
            FaultRule::new(Some(IoOp::Read), FaultKind::FlipBit { byte: 10, bit: 3 }),
        ],
    );
    one(&mut q, req(IoOp::Write, 0, pattern(4096, 9), 1))
        .check(&files)
        .expect("write");
    let slow = one(&mut q, req(IoOp::Read, 0, AlignedBuf::zeroed(4096), 2));
    assert!(
        slow.latency >= Duration::from_millis(30),
        "{:?}",
        slow.latency
    );
    assert_eq!(slow.req.buf.as_slice(), pattern(4096, 9).as_slice());
    let flipped = one(&mut q, req(IoOp::Read, 0, AlignedBuf::zeroed(4096), 3));
    let diff: u32 = flipped
        .req
        .buf
        .as_slice()
        .iter()
        .zip(pattern(4096, 9).as_slice())
        .map(|(a, b)| (a ^ b).count_ones())
        .sum();
    assert_eq!(diff, 1);
}

/// A loop that only ever polls (min 0, zero timeout) must still see its completions. With
/// io_uring's DEFER_TASKRUN, completions are posted only when the issuer enters the kernel asking
/// for events; a poll that merely drained the queue spun forever (found as a livelock in `run`).
fn polling_sees_completions(kind: EngineKind) {
    let (files, _dir) = table(&format!("poll-{}", kind.name()));
    let mut q = open_queue(kind, Arc::clone(&files), 4).expect("queue");
    q.submit(req(IoOp::Read, 0, AlignedBuf::zeroed(4096), 1))
        .expect("submit");
    let start = std::time::Instant::now();
    let mut out = Vec::new();
    while out.is_empty() && start.elapsed() < Duration::from_secs(5) {
        q.reap_timeout(0, Duration::ZERO, &mut out).expect("poll");
        q.reap(0, &mut out).expect("poll");
    }
    assert_eq!(out.len(), 1, "a polling loop never saw the completion");
    assert_eq!(q.in_flight(), 0);
}

/// An empty file in a scratch directory, opened read-write (O_DIRECT unless refused), as a table.
fn empty_table(name: &str) -> (FileTable, std::path::PathBuf, tempfile::TempDir) {
    let dir = scratch(name);
    let path = dir.path().join("prealloc");
    std::fs::write(&path, b"").expect("create");
    let mode = OpenMode::read_write_direct();
    let f = IoFile::open(&path, mode)
        .or_else(|_| {
            IoFile::open(
                &path,
                OpenMode {
                    direct: false,
                    ..mode
                },
            )
        })
        .expect("open");
    (Files::new(vec![f]), path, dir)
}

fn allocate_req(offset: u64, len: usize, tag: u64) -> IoRequest {
    IoRequest {
        op: IoOp::Allocate,
        file: 0,
        offset,
        len,
        buf: AlignedBuf::zeroed(0),
        tag,
    }
}

/// Allocate extends an empty file to the range's end and (on Linux) reserves its blocks; an
/// allocation inside the file changes nothing; the completion carries no byte count.
fn allocate_extends_and_reserves(q: &mut dyn IoQueue, files: &FileTable, path: &std::path::Path) {
    q.submit(allocate_req(0, 1 << 20, 1)).expect("submit");
    let mut out = Vec::new();
    q.reap(1, &mut out).expect("reap");
    assert_eq!(out.len(), 1);
    assert_eq!(out[0].check(files).expect("allocate ok"), 0);
    assert_eq!(std::fs::metadata(path).expect("stat").len(), 1 << 20);
    #[cfg(target_os = "linux")]
    assert!(
        platform::allocated_bytes(path).expect("blocks") >= 1 << 20,
        "fallocate reserved {} bytes",
        platform::allocated_bytes(path).unwrap_or(0)
    );
    out.clear();
    q.submit(allocate_req(4096, 4096, 2)).expect("submit");
    q.reap(1, &mut out).expect("reap");
    out[0].check(files).expect("allocate inside");
    assert_eq!(std::fs::metadata(path).expect("stat").len(), 1 << 20);
    // Past the end again: the file grows to the new end.
    out.clear();
    q.submit(allocate_req(1 << 20, 8192, 3)).expect("submit");
    q.reap(1, &mut out).expect("reap");
    out[0].check(files).expect("allocate past end");
    assert_eq!(
        std::fs::metadata(path).expect("stat").len(),
        (1 << 20) + 8192
    );
}

#[test]
fn fault_queue_passes_allocate_through_and_can_fail_it() {
    let (files, path, _dir) = empty_table("alloc-fault");
    let inner = open_queue(EngineKind::Sync, Arc::clone(&files), 2).expect("queue");
    let mut q = FaultQueue::new(
        inner,
        vec![FaultRule::new(Some(IoOp::Allocate), FaultKind::Error(28))
            .after(3)
            .times(1)],
    );
    allocate_extends_and_reserves(&mut q, &files, &path);
    let c = one(&mut q, allocate_req(1 << 21, 4096, 4));
    let err = c.check(&files).expect_err("injected ENOSPC");
    assert_eq!(err.os_error().and_then(|e| e.raw_os_error()), Some(28));
    let msg = err.to_string();
    assert!(
        msg.contains("cannot allocate") && msg.contains("prealloc"),
        "{msg}"
    );
    assert_eq!(
        std::fs::metadata(&path).expect("stat").len(),
        (1 << 20) + 8192
    );
}

/// The queue opens, sizes, closes and removes files itself; a removal returns at once, a missing
/// file is not an error, a failure is reported once (by `wait_removals` or the next removal) and
/// names its path, and a file re-created at a path whose removal is pending survives it.
fn file_management(kind: EngineKind) {
    let dir = scratch(&format!("files-{}", kind.name()));
    let files = Files::new(Vec::new());
    let mut q = open_queue(kind, Arc::clone(&files), 4).expect("queue");
    let path = dir.path().join("log1");
    let mode = OpenMode {
        direct: false,
        write_through: true,
        write: true,
        create: true,
    };
    let i = q.open_file(&path, mode).expect("create through the queue");
    assert_eq!(q.file_path(i), path);
    q.submit(IoRequest {
        file: i,
        ..req(IoOp::Write, 0, pattern(4096, 5), 1)
    })
    .expect("submit");
    let mut out = Vec::new();
    q.reap(1, &mut out).expect("reap");
    assert_eq!(out[0].check_in(q.as_ref()).expect("write"), 4096);
    assert_eq!(q.file_len(i).expect("len"), 4096);
    q.close_file(i);
    assert_eq!(q.file_path(i), std::path::PathBuf::new());
    assert!(q.file_len(i).is_err());

    q.remove_file(&path).expect("hand over");
    q.remove_file(&dir.path().join("never-was"))
        .expect("missing is fine");
    q.wait_removals().expect("removed");
    assert!(!path.exists());

    // A removal that fails (a directory is not a file) is reported once, naming the path.
    let sub = dir.path().join("sub");
    std::fs::create_dir(&sub).expect("mkdir");
    q.remove_file(&sub)
        .expect("handed over: the failure comes later");
    let err = q.wait_removals().expect_err("cannot unlink a directory");
    assert!(
        err.to_string().contains("cannot remove") && err.to_string().contains("sub"),
        "{err}"
    );
    q.wait_removals().expect("reported once");
    // ... or by the next removal, once the failed one is done.
    q.remove_file(&sub).expect("handed over");
    files.removals_wait_for(&sub);
    let err = q
        .remove_file(&dir.path().join("other"))
        .expect_err("the earlier failure");
    assert!(err.to_string().contains("sub"), "{err}");
    q.wait_removals().expect("nothing else failed");

    // Remove, then create the same path at once: the late unlink must not delete the new file.
    let i = q.open_file(&path, mode).expect("create");
    q.close_file(i);
    q.remove_file(&path).expect("hand over");
    let i = q.open_file(&path, mode).expect("re-create");
    q.submit(IoRequest {
        file: i,
        ..req(IoOp::Write, 0, pattern(4096, 6), 2)
    })
    .expect("submit");
    out.clear();
    q.reap(1, &mut out).expect("reap");
    out[0].check_in(q.as_ref()).expect("write");
    q.wait_removals().expect("removed");
    assert_eq!(
        std::fs::read(&path).expect("the new file survives"),
        pattern(4096, 6).as_slice()
    );
    q.close_file(i);
    let before = std::time::Instant::now();
    assert!(
        q.clock().now() >= before,
        "a real queue runs on the real clock"
    );
}

fn allocate(kind: EngineKind) {
    let (files, path, _dir) = empty_table(&format!("alloc-{}", kind.name()));
    let mut q = open_queue(kind, Arc::clone(&files), 2).expect("queue");
    allocate_extends_and_reserves(q.as_mut(), &files, &path);
}

/// More requests in flight than one reaping call takes (the IOCP backend takes 64 per call): all
/// complete, each with its own data, and `reap(n)` returns only once `n` have.
fn many_in_flight(kind: EngineKind) {
    let (files, _dir) = table(&format!("many-{}", kind.name()));
    let n = 150u64;
    let mut q = open_queue(kind, Arc::clone(&files), n as usize).expect("queue");
    assert_eq!(q.depth(), n as usize);
    for i in 0..n {
        q.submit(req(IoOp::Write, i * 4096, pattern(4096, i as u8), i))
            .expect("submit");
    }
    assert_eq!(q.in_flight(), n as usize);
    let mut out = Vec::new();
    q.reap(n as usize, &mut out).expect("reap");
    assert_eq!(out.len(), n as usize);
    assert_eq!(q.in_flight(), 0);
    let mut tags: Vec<u64> = out.iter().map(|c| c.req.tag).collect();
    tags.sort_unstable();
    assert_eq!(tags, (0..n).collect::<Vec<_>>());
    for c in &out {
        assert_eq!(c.check(&files).expect("write"), 4096);
    }
    // The queue refuses a request over its depth rather than losing it.
    out.clear();
    for i in 0..n {
        q.submit(req(IoOp::Read, i * 4096, AlignedBuf::zeroed(4096), i))
            .expect("submit");
    }
    assert!(q
        .submit(req(IoOp::Read, 0, AlignedBuf::zeroed(4096), 999))
        .is_err());
    q.reap(n as usize, &mut out).expect("reap");
    for c in &out {
        c.check(&files).expect("read");
        assert_eq!(
            c.req.buf.as_slice(),
            pattern(4096, c.req.tag as u8).as_slice()
        );
    }
}

/// Syncs complete through the queue with no byte count, between writes; `reap_timeout` returns
/// at once with nothing in flight and after its timeout when nothing completes in time.
fn sync_and_timeouts(kind: EngineKind) {
    let (files, _dir) = table(&format!("sync-{}", kind.name()));
    let mut q = open_queue(kind, Arc::clone(&files), 4).expect("queue");
    assert_eq!(q.engine_name(), kind.name());
    let mut out = Vec::new();
    let start = std::time::Instant::now();
    q.reap_timeout(1, Duration::from_secs(30), &mut out)
        .expect("nothing in flight");
    assert!(out.is_empty() && start.elapsed() < Duration::from_secs(10));
    q.submit(req(IoOp::Write, 0, pattern(4096, 9), 1))
        .expect("submit");
    q.submit(IoRequest {
        op: IoOp::Sync,
        ..req(IoOp::Write, 0, AlignedBuf::zeroed(0), 2)
    })
    .expect("submit sync");
    q.reap(2, &mut out).expect("reap");
    assert_eq!(out.len(), 2);
    for c in &out {
        let n = c.check(&files).expect("ok");
        assert_eq!(n, if c.req.op == IoOp::Sync { 0 } else { 4096 });
    }
}

/// One conformance suite, run against every backend available on the platform.
macro_rules! queue_suite {
    ($name:ident, $kind:expr) => {
        mod $name {
            use super::*;

            #[test]
            fn round_trip() {
                super::round_trip($kind);
            }

            #[test]
            fn polling_sees_completions() {
                super::polling_sees_completions($kind);
            }

            #[test]
            fn allocate() {
                super::allocate($kind);
            }

            #[test]
            fn file_management() {
                super::file_management($kind);
            }

            #[test]
            fn many_in_flight() {
                super::many_in_flight($kind);
            }

            #[test]
            fn sync_and_timeouts() {
                super::sync_and_timeouts($kind);
            }
        }
    };
}

#[cfg(target_os = "linux")]
queue_suite!(io_uring, EngineKind::IoUring);
queue_suite!(thread_pool, EngineKind::Sync);
#[cfg(windows)]
queue_suite!(iocp, EngineKind::Iocp);

#[test]
fn backends_of_other_platforms_are_refused_with_the_fix() {
    let (files, _dir) = table("other-platform");
    #[cfg(not(windows))]
    let kind = EngineKind::Iocp;
    #[cfg(windows)]
    let kind = EngineKind::IoUring;
    let err = open_queue(kind, files, 1)
        .err()
        .expect("not available here");
    assert!(err.to_string().contains("--engine sync"), "{err}");
}
