//! Tests of the simulated device, clock and queue: all in virtual time.

use std::path::Path;
use std::sync::Arc;
use std::time::{Duration, SystemTime};

use super::*;
use crate::{
    AlignedBuf, Clock, FaultKind, FaultRule, IoCompletion, IoError, IoOp, IoQueue, IoRequest,
    OpenMode,
};

fn ms(n: u64) -> Duration {
    Duration::from_millis(n)
}

const DB: &str = "/sim/db/1.edb";
const LOG: &str = "/sim/log/E00.log";

fn db() -> &'static Path {
    Path::new(DB)
}

fn log() -> &'static Path {
    Path::new(LOG)
}

fn fixed(latency: Duration) -> LatencyModel {
    LatencyModel::uniform(Latency::fixed(latency))
}

fn queue(model: LatencyModel, seed: u64) -> (SimDevice, Arc<SimClock>, SimQueue) {
    let device = SimDevice::new();
    let clock = Arc::new(SimClock::new());
    let q = SimQueue::new(device.clone(), Arc::clone(&clock), 64, model, seed);
    (device, clock, q)
}

fn create(write_through: bool) -> OpenMode {
    OpenMode {
        direct: true,
        write_through,
        write: true,
        create: true,
    }
}

fn filled(len: usize, byte: u8) -> AlignedBuf {
    let mut b = AlignedBuf::zeroed(len);
    b.as_mut_slice().fill(byte);
    b
}

fn write(file: usize, offset: u64, byte: u8, len: usize, tag: u64) -> IoRequest {
    IoRequest {
        op: IoOp::Write,
        file,
        offset,
        len,
        buf: filled(len, byte),
        tag,
    }
}

fn read(file: usize, offset: u64, len: usize, tag: u64) -> IoRequest {
    IoRequest {
        op: IoOp::Read,
        file,
        offset,
        len,
        buf: AlignedBuf::zeroed(len),
        tag,
    }
}

fn control(op: IoOp, file: usize, offset: u64, len: usize, tag: u64) -> IoRequest {
    IoRequest {
        op,
        file,
        offset,
        len,
        buf: AlignedBuf::zeroed(0),
        tag,
    }
}

/// Submits one request and reaps until it completes.
fn run(q: &mut SimQueue, r: IoRequest) -> IoCompletion {
    q.submit(r).expect("submit");
    let mut out = Vec::new();
    q.reap(1, &mut out).expect("reap");
    assert_eq!(out.len(), 1);
    out.pop().expect("one completion")
}

/// The bytes of a file's live image (all of it).
fn contents(device: &SimDevice, path: &Path) -> Vec<u8> {
    let len = device.len(path).expect("len") as usize;
    let mut buf = vec![0xEE; len];
    assert_eq!(device.read_at(path, 0, &mut buf).expect("read"), len);
    buf
}

// ---------------------------------------------------------------------------------------------
// Virtual time

/// An engine-like loop over two virtual hours (a timer every 200 ms submitting database reads
/// and writes of 8 KiB and log writes, a database sync every second, waiting with reap_timeout
/// in between, buffers reused as an engine does) runs without ever waiting in real time. The
/// cost is mostly copying data (reads and writes really move it): on a loaded 2-core machine
/// about 3 us per 8 KiB request, 7 us per 32 KiB one.
#[test]
fn two_hour_workload_runs_in_well_under_a_second() {
    let model = LatencyModel::typical().channels(4);
    let (device, clock, mut q) = queue(model, 42);
    device.create(db(), 1 << 30); // 1 GiB, sparse
    let db = q.open_file(db(), create(false)).expect("open db");
    let log = q.open_file(log(), create(true)).expect("open log");
    let real = std::time::Instant::now();
    let cpu = thread_cpu();
    let two_hours = Duration::from_secs(2 * 3600);
    let tick = ms(200);
    const PAGE: u64 = 8192;
    let (mut next_tick, mut next_sync) = (Duration::ZERO, Duration::ZERO);
    let (mut submitted, mut completed, mut log_off) = (0u64, 0u64, 0u64);
    let mut pages: Vec<AlignedBuf> = Vec::new();
    let mut out = Vec::new();
    while clock.elapsed() < two_hours {
        let now = clock.elapsed();
        if now >= next_tick {
            next_tick = now + tick;
            for i in 0..3u64 {
                // Spread over 4096 pages (32 MiB of the file): the blocks stored stay bounded.
                let page = (submitted.wrapping_mul(2_654_435_761) >> 7) % 4096;
                let buf = pages
                    .pop()
                    .unwrap_or_else(|| AlignedBuf::zeroed(PAGE as usize));
                let op = if i == 2 { IoOp::Write } else { IoOp::Read };
                let r = IoRequest {
                    op,
                    file: db,
                    offset: page * PAGE,
                    len: PAGE as usize,
                    buf,
                    tag: submitted,
                };
                q.submit(r).expect("submit");
                submitted += 1;
            }
            log_off = (log_off + 4096) % (1 << 20);
            q.submit(write(log, log_off, 7, 4096, submitted))
                .expect("log write");
            submitted += 1;
        }
        if now >= next_sync {
            next_sync = now + Duration::from_secs(1);
            q.submit(control(IoOp::Sync, db, 0, 0, submitted))
                .expect("sync");
            submitted += 1;
        }
        out.clear();
        let wait = next_tick.saturating_sub(clock.elapsed());
        if q.in_flight() > 0 {
            q.reap_timeout(1, wait, &mut out).expect("reap");
        } else {
            clock.sleep(wait);
        }
        for c in out.drain(..) {
            c.check_in(&q).expect("no errors");
            completed += 1;
            if c.req.buf.len() == PAGE as usize {
                pages.push(c.req.buf);
            }
        }
    }
    let took = real.elapsed();
    let cpu = thread_cpu().zip(cpu).map(|(b, a)| b.saturating_sub(a));
    assert!(clock.elapsed() >= two_hours);
    assert!(submitted > 150_000, "{submitted} requests");
    assert_eq!(completed + q.in_flight() as u64, submitted);
    // Only the blocks written are stored: at most 32 MiB of database and 1 MiB of log, with at
    // most one unsynced version per block on top.
    assert!(
        device.stored_blocks() <= 2 * (8192 + 256),
        "{}",
        device.stored_blocks()
    );
    eprintln!("2 virtual hours, {submitted} requests: {took:?} real, {cpu:?} CPU");
    // About 0.4 s of CPU in a debug build. The bound is on this thread's CPU time where it can
    // be read, so that other processes loading the machine do not make the test fail.
    match cpu {
        Some(cpu) => assert!(cpu < Duration::from_secs(1), "took {cpu:?} of CPU"),
        None => assert!(took < Duration::from_secs(5), "took {took:?}"),
    }
}

fn thread_cpu() -> Option<Duration> {
    crate::platform::thread_cpu_time()
}

fn trace(seed: u64) -> Vec<(u64, Duration, Duration, usize)> {
    let model = LatencyModel::typical().channels(3).bandwidth(200 << 20);
    let (device, clock, mut q) = queue(model, seed);
    device.create(db(), 1 << 20);
    let db = q.open_file(db(), create(false)).expect("open");
    let mut seen = Vec::new();
    let mut out = Vec::new();
    for i in 0..2000u64 {
        let r = match i % 5 {
            0 => control(IoOp::Sync, db, 0, 0, i),
            1 | 2 => write(db, (i % 32) * 32768, i as u8, 32768, i),
            _ => read(db, (i % 32) * 32768, 32768, i),
        };
        q.submit(r).expect("submit");
        if q.in_flight() == q.depth() || i % 7 == 0 {
            q.reap(1 + (i % 3) as usize, &mut out).expect("reap");
        }
        for c in out.drain(..) {
            let n = c.check_in(&q).expect("ok");
            seen.push((c.req.tag, clock.elapsed(), c.latency, n));
        }
    }
    q.reap(q.in_flight(), &mut out).expect("reap");
    for c in out.drain(..) {
        seen.push((c.req.tag, clock.elapsed(), c.latency, c.result.unwrap_or(0)));
    }
    seen
}

#[test]
fn same_seed_same_completions_other_seed_differs() {
    let a = trace(7);
    assert_eq!(a.len(), 2000);
    assert_eq!(a, trace(7));
    let b = trace(8);
    assert_ne!(
        a.iter().map(|t| t.2).collect::<Vec<_>>(),
        b.iter().map(|t| t.2).collect::<Vec<_>>()
    );
}

/// reap_timeout moves the clock to the completion it waits for, or to its deadline, never
/// further; min 0 (or nothing in flight) does not move it; reap moves to the min-th completion.
#[test]
fn reap_timeout_advances_the_clock_exactly() {
    let (device, clock, mut q) = queue(fixed(ms(10)), 1);
    device.create(db(), 1 << 20);
    let f = q.open_file(db(), create(false)).expect("open");
    let mut out = Vec::new();

    // Nothing in flight: no wait, even with a timeout.
    q.reap_timeout(1, ms(100), &mut out).expect("reap");
    assert_eq!(clock.elapsed(), Duration::ZERO);

    q.submit(read(f, 0, 4096, 1)).expect("submit");
    q.reap_timeout(0, ms(100), &mut out).expect("poll");
    assert!(out.is_empty());
    assert_eq!(clock.elapsed(), Duration::ZERO, "min 0 never waits");

    q.reap_timeout(1, ms(3), &mut out).expect("reap");
    assert!(out.is_empty());
    assert_eq!(clock.elapsed(), ms(3), "timed out: clock at now + timeout");

    q.reap_timeout(1, ms(100), &mut out).expect("reap");
    assert_eq!(out.len(), 1);
    assert_eq!(
        clock.elapsed(),
        ms(10),
        "the completion's time, not the deadline"
    );
    assert_eq!(out[0].latency, ms(10));
    out.clear();

    // Two in flight, due at 20 and 25 ms; min 2 with a deadline between them returns the first
    // at the deadline.
    q.submit(read(f, 0, 4096, 2)).expect("submit");
    clock.sleep(ms(5));
    q.submit(read(f, 0, 4096, 3)).expect("submit");
    q.reap_timeout(2, ms(8), &mut out).expect("reap");
    assert_eq!(clock.elapsed(), ms(23));
    assert_eq!(out.iter().map(|c| c.req.tag).collect::<Vec<_>>(), [2]);
    q.reap_timeout(2, ms(100), &mut out).expect("reap");
    assert_eq!(clock.elapsed(), ms(25), "min capped at the one in flight");
    assert_eq!(out.len(), 2);
    out.clear();

    // reap waits for the min-th completion (due at 35, 40, 45 ms): min 2 stops at 40.
    for tag in 4..7 {
        q.submit(read(f, 0, 4096, tag)).expect("submit");
        clock.sleep(ms(5));
    }
    assert_eq!(clock.elapsed(), ms(40));
    q.reap(0, &mut out).expect("poll");
    assert_eq!(out.len(), 2, "due by now: 35 and 40 ms");
    out.clear();
    q.reap(1, &mut out).expect("reap");
    assert_eq!(clock.elapsed(), ms(45));
    assert_eq!(
        out[0].latency,
        ms(10),
        "latency is virtual: completion - submission"
    );
    assert_eq!(q.in_flight(), 0);
}

#[test]
fn channels_make_requests_wait_their_turn() {
    let (device, clock, mut q) = queue(fixed(ms(10)).channels(2), 1);
    device.create(db(), 1 << 20);
    let f = q.open_file(db(), create(false)).expect("open");
    for tag in 0..5 {
        q.submit(read(f, 0, 4096, tag)).expect("submit");
    }
    let mut out = Vec::new();
    q.reap(5, &mut out).expect("reap");
    assert_eq!(clock.elapsed(), ms(30));
    let lat: Vec<_> = out.iter().map(|c| (c.req.tag, c.latency)).collect();
    assert_eq!(
        lat,
        [
            (0, ms(10)),
            (1, ms(10)),
            (2, ms(20)),
            (3, ms(20)),
            (4, ms(30))
        ]
    );
    // With a transfer rate, a 1 MiB read takes 1 MiB / rate more.
    let (device, clock, mut q) = queue(fixed(ms(1)).bandwidth(100 << 20), 1);
    device.create(db(), 1 << 20);
    let f = q.open_file(db(), create(false)).expect("open");
    let c = run(&mut q, read(f, 0, 1 << 20, 1));
    assert_eq!(c.latency, ms(11));
    assert_eq!(clock.elapsed(), ms(11));
}

#[test]
fn latencies_follow_the_model() {
    let model = LatencyModel::uniform(Latency::fixed(ms(1)))
        .reads(Latency::mean_sd(ms(5), ms(2)))
        .log_writes(Latency::fixed(ms(1)));
    let (device, _clock, mut q) = queue(model, 3);
    device.create(db(), 1 << 20);
    let f = q.open_file(db(), create(false)).expect("open");
    let l = q.open_file(log(), create(true)).expect("open log");
    let n = 20_000u32;
    let mut sum = Duration::ZERO;
    let mut min = Duration::MAX;
    for i in 0..n {
        let c = run(&mut q, read(f, 0, 4096, u64::from(i)));
        sum += c.latency;
        min = min.min(c.latency);
    }
    let mean = sum / n;
    assert!(
        mean > Duration::from_micros(4900) && mean < Duration::from_micros(5100),
        "{mean:?}"
    );
    assert!(min >= ms(3), "never below the base: {min:?}");
    assert_eq!(run(&mut q, write(l, 0, 1, 4096, 1)).latency, ms(1));
}

#[test]
fn sim_clock_sleeps_without_waiting_and_has_a_fixed_wall_time() {
    let c = SimClock::new();
    let t0 = c.now();
    let real = std::time::Instant::now();
    c.sleep(Duration::from_secs(3600));
    assert!(real.elapsed() < Duration::from_secs(1));
    assert_eq!(c.now() - t0, Duration::from_secs(3600));
    let start = SystemTime::UNIX_EPOCH + Duration::from_secs(SimClock::DEFAULT_WALL_START);
    assert_eq!(c.wall(), start + Duration::from_secs(3600));
    c.advance_to(t0 + ms(5));
    assert_eq!(c.elapsed(), Duration::from_secs(3600), "never backwards");
    // A queue hands out its clock.
    let (_d, clock, q) = queue(fixed(ms(1)), 1);
    clock.sleep(ms(7));
    assert_eq!(q.clock().now(), clock.now());
}

// ---------------------------------------------------------------------------------------------
// Data

#[test]
fn reads_return_what_was_written_and_stop_at_the_end() {
    let (device, _clock, mut q) = queue(fixed(ms(1)), 1);
    let f = q.open_file(db(), create(false)).expect("create");
    assert_eq!(q.file_len(f).expect("len"), 0);
    run(&mut q, write(f, 8192, 0xAB, 8192, 1))
        .check_in(&q)
        .expect("write");
    assert_eq!(q.file_len(f).expect("len"), 16384);
    let c = run(&mut q, read(f, 4096, 8192, 2));
    assert_eq!(c.check_in(&q).expect("read"), 8192);
    assert!(
        c.req.buf.as_slice()[..4096].iter().all(|&b| b == 0),
        "hole reads zeros"
    );
    assert!(c.req.buf.as_slice()[4096..].iter().all(|&b| b == 0xAB));
    // Past the end: a short count, which check_in reports naming the simulated path.
    let c = run(&mut q, read(f, 12288, 8192, 3));
    assert_eq!(c.result.as_ref().ok(), Some(&4096));
    let err = c.check_in(&q).expect_err("short read");
    assert!(matches!(err, IoError::Short { got: 4096, .. }), "{err}");
    assert!(err.to_string().contains(DB), "{err}");
    // Unaligned transfers inside a block (a buffered file allows them).
    let b = q
        .open_file(
            Path::new("/sim/buffered"),
            OpenMode {
                direct: false,
                ..create(false)
            },
        )
        .expect("create");
    run(&mut q, write(b, 4000, 0x11, 200, 4))
        .check_in(&q)
        .expect("write");
    let mut buf = [0u8; 300];
    assert_eq!(
        device
            .read_at(Path::new("/sim/buffered"), 3950, &mut buf)
            .expect("read"),
        250
    );
    assert!(buf[..50].iter().all(|&x| x == 0) && buf[50..250].iter().all(|&x| x == 0x11));
}

#[test]
fn sparse_files_cost_only_their_written_blocks() {
    let (device, _clock, mut q) = queue(fixed(ms(1)), 1);
    device.create(db(), 1 << 30);
    let f = q.open_file(db(), create(false)).expect("open");
    for i in 0..4u64 {
        run(&mut q, write(f, i * (256 << 20), 1, 32768, i))
            .check_in(&q)
            .expect("write");
    }
    // 4 writes of 8 blocks, live only (no sync): 32 blocks for a 1 GiB file.
    assert_eq!(device.stored_blocks(), 32);
    let c = run(&mut q, read(f, (1 << 30) - 4096, 4096, 9));
    assert_eq!(c.check_in(&q).expect("read at the end"), 4096);
    assert_eq!(q.file_len(f).expect("len"), 1 << 30);
    // Allocating 1 TiB more stores nothing.
    run(&mut q, control(IoOp::Allocate, f, 1 << 30, 1 << 40, 10))
        .check_in(&q)
        .expect("allocate");
    assert_eq!(q.file_len(f).expect("len"), (1 << 30) + (1 << 40));
    assert_eq!(device.stored_blocks(), 32);
}

#[test]
fn requests_fail_like_a_real_queue() {
    let (device, _clock, mut q) = queue(fixed(ms(1)), 1);
    let err = q
        .open_file(db(), OpenMode::read_write_direct())
        .expect_err("no create");
    assert!(
        err.to_string().contains("cannot open") && err.to_string().contains(DB),
        "{err}"
    );
    device.create(db(), 1 << 20);
    let ro = q.open_file(db(), OpenMode::read_direct()).expect("open");
    let err = run(&mut q, write(ro, 0, 1, 4096, 1))
        .check_in(&q)
        .expect_err("read-only");
    assert!(
        err.to_string().contains("cannot write") && err.to_string().contains(DB),
        "{err}"
    );
    let err = run(&mut q, read(ro, 100, 4096, 2))
        .check_in(&q)
        .expect_err("unaligned O_DIRECT");
    assert!(err.to_string().contains("at offset 100"), "{err}");
    assert!(q.submit(read(99, 0, 4096, 3)).is_err(), "no such index");
    let mut q = SimQueue::new(device, Arc::new(SimClock::new()), 2, fixed(ms(1)), 1);
    let f = q.open_file(db(), create(false)).expect("open");
    q.submit(read(f, 0, 4096, 1)).expect("1");
    q.submit(read(f, 0, 4096, 2)).expect("2");
    assert!(q.submit(read(f, 0, 4096, 3)).is_err(), "depth 2");
}

#[test]
fn files_are_opened_closed_and_removed_through_the_queue() {
    let (device, _clock, mut q) = queue(fixed(ms(1)), 1);
    let a = q
        .open_file(Path::new("/sim/log/E01.log"), create(true))
        .expect("a");
    let b = q
        .open_file(Path::new("/sim/log/E02.log"), create(true))
        .expect("b");
    q.open_file(Path::new("/sim/other"), create(true))
        .expect("c");
    assert_eq!(q.file_path(b), Path::new("/sim/log/E02.log"));
    assert_eq!(
        device.list(Path::new("/sim/log")),
        [Path::new("/sim/log/E01.log"), Path::new("/sim/log/E02.log")]
    );
    run(&mut q, write(a, 0, 5, 4096, 1))
        .check_in(&q)
        .expect("write");
    // Removed while open: gone from the device, still usable through the handle (as on Unix).
    q.remove_file(Path::new("/sim/log/E01.log"))
        .expect("remove");
    q.remove_file(Path::new("/sim/log/none"))
        .expect("missing is fine");
    q.wait_removals().expect("nothing failed");
    assert!(!device.exists(Path::new("/sim/log/E01.log")));
    let c = run(&mut q, read(a, 0, 4096, 2));
    assert_eq!(c.check_in(&q).expect("read"), 4096);
    assert!(c.req.buf.as_slice().iter().all(|&x| x == 5));
    q.close_file(a);
    assert_eq!(q.file_path(a), Path::new(""));
    assert!(q.file_len(a).is_err());
    // The index is reused.
    let d = q
        .open_file(Path::new("/sim/log/E03.log"), create(true))
        .expect("d");
    assert_eq!(d, a);
}

// ---------------------------------------------------------------------------------------------
// Durability and crashes

#[test]
fn write_through_writes_survive_a_crash_once_complete() {
    let (device, _clock, mut q) = queue(fixed(ms(1)), 1);
    let l = q.open_file(log(), create(true)).expect("open");
    run(&mut q, write(l, 0, 1, 4096, 1))
        .check_in(&q)
        .expect("w");
    run(&mut q, write(l, 4096, 2, 4096, 2))
        .check_in(&q)
        .expect("w");
    q.submit(write(l, 8192, 3, 4096, 3))
        .expect("in flight at the crash");
    let after = device.crash();
    let mut expected = vec![1u8; 4096];
    expected.extend([2u8; 4096]);
    assert_eq!(contents(&after, log()), expected);
    // The device that did not crash goes on; the crashed one is independent of it.
    let mut out = Vec::new();
    q.reap(1, &mut out).expect("reap");
    assert_eq!(device.len(log()).expect("len"), 12288);
    assert_eq!(after.len(log()).expect("len"), 8192);
}

#[test]
fn plain_writes_need_a_completed_sync_submitted_after_them() {
    let (device, _clock, mut q) = queue(fixed(ms(1)), 1);
    device.create(db(), 16384);
    let f = q.open_file(db(), create(false)).expect("open");
    run(&mut q, write(f, 0, 1, 4096, 1))
        .check_in(&q)
        .expect("w");
    run(&mut q, control(IoOp::Sync, f, 0, 0, 2))
        .check_in(&q)
        .expect("sync");
    run(&mut q, write(f, 4096, 2, 4096, 3))
        .check_in(&q)
        .expect("w");
    let live = contents(&device, db());
    assert!(
        live[4096..8192].iter().all(|&b| b == 2),
        "visible before the crash"
    );
    let after = contents(&device.crash(), db());
    assert!(after[..4096].iter().all(|&b| b == 1), "synced: kept");
    assert!(after[4096..].iter().all(|&b| b == 0), "not synced: lost");
    assert_eq!(after.len(), 16384);

    // A sync still in flight at the crash covers nothing.
    q.submit(control(IoOp::Sync, f, 0, 0, 4)).expect("sync");
    let after = contents(&device.crash(), db());
    assert!(after[4096..8192].iter().all(|&b| b == 0));
    let mut out = Vec::new();
    q.reap(1, &mut out).expect("reap");
    let after = contents(&device.crash(), db());
    assert!(after[4096..8192].iter().all(|&b| b == 2), "now synced");
}

#[test]
fn a_sync_submitted_before_a_write_completes_does_not_cover_it() {
    let model = fixed(ms(10)).syncs(Latency::fixed(ms(1)));
    let (device, clock, mut q) = queue(model, 1);
    device.create(db(), 8192);
    let f = q.open_file(db(), create(false)).expect("open");
    q.submit(write(f, 0, 9, 4096, 1))
        .expect("write, done at 10 ms");
    q.submit(control(IoOp::Sync, f, 0, 0, 2))
        .expect("sync, done at 1 ms");
    let mut out = Vec::new();
    q.reap(2, &mut out).expect("reap");
    assert_eq!(out.iter().map(|c| c.req.tag).collect::<Vec<_>>(), [2, 1]);
    assert_eq!(clock.elapsed(), ms(10));
    assert!(contents(&device, db())[..4096].iter().all(|&b| b == 9));
    assert!(contents(&device.crash(), db())[..4096]
        .iter()
        .all(|&b| b == 0));
    // A sync that ends after the write but was submitted before it completed covers it not.
    let model = fixed(ms(10)).syncs(Latency::fixed(ms(20)));
    let (device, _clock, mut q) = queue(model, 1);
    device.create(db(), 8192);
    let f = q.open_file(db(), create(false)).expect("open");
    q.submit(write(f, 0, 9, 4096, 1))
        .expect("write, done at 10 ms");
    q.submit(control(IoOp::Sync, f, 0, 0, 2))
        .expect("sync, done at 20 ms");
    q.reap(2, &mut out).expect("reap");
    assert!(contents(&device.crash(), db())[..4096]
        .iter()
        .all(|&b| b == 0));
}

/// A block written twice around a sync in flight: the sync makes the first version durable,
/// not the second, though the live image holds the second.
#[test]
fn a_sync_makes_durable_the_version_it_covers() {
    let model = fixed(ms(1)).syncs(Latency::fixed(ms(10)));
    let (device, _clock, mut q) = queue(model, 1);
    device.create(db(), 4096);
    let f = q.open_file(db(), create(false)).expect("open");
    run(&mut q, write(f, 0, 1, 4096, 1))
        .check_in(&q)
        .expect("v1");
    q.submit(control(IoOp::Sync, f, 0, 0, 2)).expect("sync");
    run(&mut q, write(f, 0, 2, 4096, 3))
        .check_in(&q)
        .expect("v2");
    run(&mut q, write(f, 0, 3, 4096, 4))
        .check_in(&q)
        .expect("v3");
    let mut out = Vec::new();
    q.reap(1, &mut out).expect("sync done");
    assert!(contents(&device, db()).iter().all(|&b| b == 3));
    assert!(contents(&device.crash(), db()).iter().all(|&b| b == 1));
    // Versions 2 and 3 were merged (no sync between them): one version pending, one durable.
    assert_eq!(device.stored_blocks(), 2);
    run(&mut q, control(IoOp::Sync, f, 0, 0, 5))
        .check_in(&q)
        .expect("sync");
    assert!(contents(&device.crash(), db()).iter().all(|&b| b == 3));
}

#[test]
fn lengths_and_new_files_after_a_crash() {
    let (device, _clock, mut q) = queue(fixed(ms(1)), 1);
    let f = q.open_file(db(), create(false)).expect("create");
    run(&mut q, control(IoOp::Allocate, f, 0, 1 << 20, 1))
        .check_in(&q)
        .expect("allocate");
    let after = device.crash();
    assert!(after.exists(db()), "created, never synced: exists");
    assert_eq!(
        after.len(db()).expect("len"),
        0,
        "the allocation was not synced"
    );
    run(&mut q, control(IoOp::Sync, f, 0, 0, 2))
        .check_in(&q)
        .expect("sync");
    assert_eq!(device.crash().len(db()).expect("len"), 1 << 20);
    // A write-through write makes the length up to its end durable, not an allocation's.
    let l = q.open_file(log(), create(true)).expect("log");
    run(&mut q, control(IoOp::Allocate, l, 0, 1 << 20, 3))
        .check_in(&q)
        .expect("a");
    run(&mut q, write(l, 0, 4, 4096, 4))
        .check_in(&q)
        .expect("w");
    assert_eq!(device.crash().len(log()).expect("len"), 4096);
    // A removed file stays removed.
    q.remove_file(db()).expect("remove");
    assert!(!device.crash().exists(db()));
}

// ---------------------------------------------------------------------------------------------
// Faults

#[test]
fn injected_errors_fail_at_once_and_name_the_simulated_file() {
    let rules = vec![FaultRule::new(Some(IoOp::Write), FaultKind::Error(5))
        .after(1)
        .times(1)];
    let (device, clock, q) = queue(fixed(ms(2)), 1);
    let mut q = q.with_faults(rules);
    device.create(db(), 1 << 20);
    let f = q.open_file(db(), create(false)).expect("open");
    run(&mut q, write(f, 0, 1, 4096, 1))
        .check_in(&q)
        .expect("first passes");
    let before = clock.elapsed();
    let c = run(&mut q, write(f, 4096, 2, 4096, 2));
    assert_eq!(clock.elapsed(), before, "an injected error takes no time");
    assert_eq!(c.latency, Duration::ZERO);
    let err = c.check_in(&q).expect_err("injected");
    let msg = err.to_string();
    assert!(msg.contains(DB) && msg.contains("offset 4096"), "{msg}");
    assert_eq!(err.os_error().and_then(|e| e.raw_os_error()), Some(5));
    assert!(
        contents(&device, db())[4096..8192].iter().all(|&b| b == 0),
        "never written"
    );
    run(&mut q, write(f, 8192, 3, 4096, 3))
        .check_in(&q)
        .expect("third passes");
    assert_eq!(q.injected(), 1);
}

#[test]
fn short_and_torn_transfers() {
    // The first rule that applies takes a request: the second rule never sees the first write.
    let rules = vec![
        FaultRule::new(Some(IoOp::Write), FaultKind::Short).times(1),
        FaultRule::new(Some(IoOp::Write), FaultKind::Torn).times(1),
    ];
    let (device, _clock, q) = queue(fixed(ms(1)), 1);
    let mut q = q.with_faults(rules);
    device.create(db(), 1 << 20);
    let f = q.open_file(db(), create(false)).expect("open");
    let err = run(&mut q, write(f, 0, 1, 32768, 1))
        .check_in(&q)
        .expect_err("short");
    assert!(
        matches!(
            err,
            IoError::Short {
                got: 16384,
                expected: 32768,
                ..
            }
        ),
        "{err}"
    );
    let c = run(&mut q, write(f, 65536, 2, 32768, 2));
    assert_eq!(c.check_in(&q).expect("torn looks fine"), 32768);
    let data = contents(&device, db());
    assert!(data[..16384].iter().all(|&b| b == 1) && data[16384..32768].iter().all(|&b| b == 0));
    assert!(data[65536..81920].iter().all(|&b| b == 2));
    assert!(
        data[81920..98304].iter().all(|&b| b == 0),
        "second half never written"
    );
}

/// An injected latency of an hour delays the completion by exactly an hour of virtual time and
/// no real time.
#[test]
fn injected_latency_is_virtual() {
    let rules = vec![FaultRule::new(
        Some(IoOp::Read),
        FaultKind::Latency(Duration::from_secs(3600)),
    )
    .times(1)];
    let (device, clock, q) = queue(fixed(ms(5)), 1);
    let mut q = q.with_faults(rules);
    device.create(db(), 1 << 20);
    let f = q.open_file(db(), create(false)).expect("open");
    let real = std::time::Instant::now();
    q.submit(read(f, 0, 4096, 1)).expect("slow");
    q.submit(read(f, 0, 4096, 2)).expect("normal");
    let mut out = Vec::new();
    q.reap(2, &mut out).expect("reap");
    assert!(real.elapsed() < Duration::from_secs(1));
    assert_eq!(out.iter().map(|c| c.req.tag).collect::<Vec<_>>(), [2, 1]);
    assert_eq!(out[1].latency, Duration::from_secs(3600) + ms(5));
    assert_eq!(clock.elapsed(), Duration::from_secs(3600) + ms(5));
}

/// A rule with a time window affects only the requests submitted inside it (virtual time),
/// and counts only those: a stall can be placed at a chosen moment of a simulated run.
#[test]
fn a_rule_applies_only_inside_its_time_window() {
    let rules = vec![
        FaultRule::new(Some(IoOp::Read), FaultKind::Latency(ms(1000)))
            .starting_at(ms(100))
            .ending_at(ms(200)),
    ];
    let (device, clock, q) = queue(fixed(ms(5)), 1);
    let mut q = q.with_faults(rules);
    device.create(db(), 1 << 20);
    let f = q.open_file(db(), create(false)).expect("open");
    let mut latency_at = |at: Duration, tag: u64| {
        clock.advance_to_elapsed(at);
        run(&mut q, read(f, 0, 4096, tag)).latency
    };
    assert_eq!(latency_at(ms(0), 1), ms(5));
    assert_eq!(latency_at(ms(99), 2), ms(5));
    assert_eq!(latency_at(ms(150), 3), ms(1005));
    assert_eq!(latency_at(ms(1300), 4), ms(5), "past the window");
    assert_eq!(q.injected(), 1);
}

#[test]
fn bit_flips_on_write_reach_the_device_and_on_read_the_buffer() {
    let rules = vec![
        FaultRule::new(Some(IoOp::Write), FaultKind::FlipBit { byte: 3, bit: 1 }).times(1),
        FaultRule::new(Some(IoOp::Read), FaultKind::FlipBit { byte: 10, bit: 7 })
            .after(1)
            .times(1),
    ];
    let (device, _clock, q) = queue(fixed(ms(1)), 1);
    let mut q = q.with_faults(rules);
    device.create(db(), 1 << 20);
    let f = q.open_file(db(), create(false)).expect("open");
    let c = run(&mut q, write(f, 0, 0, 4096, 1));
    assert!(
        c.req.buf.as_slice().iter().all(|&b| b == 0),
        "caller's buffer unchanged"
    );
    let stored = contents(&device, db());
    assert_eq!(stored[3], 0b10);
    assert_eq!(stored.iter().map(|b| b.count_ones()).sum::<u32>(), 1);
    let clean = run(&mut q, read(f, 0, 4096, 2));
    assert_eq!(clean.req.buf.as_slice()[3], 0b10);
    let flipped = run(&mut q, read(f, 0, 4096, 3));
    assert_eq!(flipped.req.buf.as_slice()[10], 0x80);
    assert_eq!(contents(&device, db())[10], 0, "a read flip is not stored");
    assert_eq!(q.injected(), 2);
}

#[test]
fn faults_on_a_file_index_only() {
    let rules = vec![FaultRule::new(None, FaultKind::Error(28)).on_file(1)];
    let (_device, _clock, q) = queue(fixed(ms(1)), 1);
    let mut q = q.with_faults(rules);
    let a = q.open_file(db(), create(false)).expect("a");
    let b = q.open_file(log(), create(true)).expect("b");
    run(&mut q, write(a, 0, 1, 4096, 1))
        .check_in(&q)
        .expect("file 0 fine");
    let err = run(&mut q, control(IoOp::Allocate, b, 0, 4096, 2))
        .check_in(&q)
        .expect_err("ENOSPC on file 1");
    assert!(
        err.to_string().contains("cannot allocate") && err.to_string().contains(LOG),
        "{err}"
    );
}
