//! Tests of the sequential pass: the state machine on its own (deterministic, no I/O), and the
//! runner over a thread-pool queue wrapped in a [`FaultQueue`] on a small temporary file.

use std::collections::BTreeSet;
use std::time::Duration;

use proptest::prelude::*;

use super::*;
use crate::{open_queue, EngineKind, FaultKind, FaultQueue, FaultRule, Files, IoFile, OpenMode};

fn pass(range: Range<u64>, chunk: usize, depth: usize) -> SeqPass {
    SeqPass::new(range, chunk, depth, SeqOp::Write).expect("valid pass")
}

/// Issues everything the pass allows now.
fn issue_all(p: &mut SeqPass) -> Vec<Chunk> {
    std::iter::from_fn(|| p.next_request()).collect()
}

#[test]
fn a_range_not_a_multiple_of_the_chunk_ends_with_a_shorter_chunk() {
    let mut p = pass(100..10_100, 4096, 8);
    let chunks = issue_all(&mut p);
    assert_eq!(
        chunks,
        [
            Chunk {
                offset: 100,
                len: 4096
            },
            Chunk {
                offset: 4196,
                len: 4096
            },
            Chunk {
                offset: 8292,
                len: 1808
            },
        ]
    );
    assert_eq!((p.in_flight(), p.total_bytes()), (3, 10_000));
    assert!(!p.finished() && !p.drained());
    for c in &chunks {
        p.complete(c.offset, c.len).expect("in flight");
    }
    assert!(p.finished() && p.drained());
    assert_eq!((p.done_bytes(), p.watermark()), (10_000, 10_100));
    assert_eq!(p.next_request(), None);
}

#[test]
fn depth_one_issues_one_chunk_at_a_time() {
    let mut p = pass(0..3 * 512, 512, 1);
    for i in 0..3u64 {
        let c = p.next_request().expect("a chunk");
        assert_eq!(c.offset, i * 512);
        assert_eq!(p.next_request(), None, "only one in flight at depth 1");
        assert_eq!(p.watermark(), i * 512);
        p.complete(c.offset, c.len).expect("in flight");
        assert_eq!(p.watermark(), (i + 1) * 512);
    }
    assert!(p.finished());
}

#[test]
fn many_in_flight_up_to_the_depth_and_refilled_as_they_complete() {
    let mut p = pass(0..1 << 20, 4096, 16);
    let first = issue_all(&mut p);
    assert_eq!((first.len(), p.in_flight()), (16, 16));
    p.complete(first[5].offset, first[5].len)
        .expect("in flight");
    let more = issue_all(&mut p);
    assert_eq!(more.len(), 1, "one slot freed, one chunk issued");
    assert_eq!(more[0].offset, 16 * 4096);
    assert_eq!(p.watermark(), 0, "chunk 0 is still in flight");
}

#[test]
fn out_of_order_completions_advance_the_watermark_only_over_contiguous_bytes() {
    let mut p = pass(0..1000, 100, 4);
    let c = issue_all(&mut p);
    assert_eq!(c.len(), 4);
    p.complete(200, 100).expect("in flight");
    p.complete(100, 100).expect("in flight");
    assert_eq!(p.watermark(), 0, "chunk 0 has not completed");
    assert_eq!(p.done_bytes(), 200);
    p.complete(0, 100).expect("in flight");
    assert_eq!(p.watermark(), 300, "0..300 is contiguous; 300 is in flight");
    let c = issue_all(&mut p);
    assert_eq!(
        c.iter().map(|c| c.offset).collect::<Vec<_>>(),
        [400, 500, 600]
    );
    p.complete(600, 100).expect("in flight");
    p.complete(300, 100).expect("in flight");
    assert_eq!(p.watermark(), 400);
    // Completing what is not in flight (twice, or a wrong length) is refused, not counted.
    assert_eq!(
        p.complete(300, 100),
        Err(SeqError::NotInFlight {
            offset: 300,
            len: 100
        })
    );
    assert!(p.complete(400, 99).is_err());
    assert_eq!(p.done_bytes(), 500);
}

#[test]
fn a_failure_stops_the_pass_and_caps_the_watermark() {
    let mut p = pass(0..1000, 100, 3);
    issue_all(&mut p);
    p.fail(100, 100).expect("in flight");
    assert!(p.is_stopped());
    assert_eq!(p.next_request(), None, "no request after a failure");
    p.complete(200, 100).expect("in flight");
    p.complete(0, 100).expect("in flight");
    assert_eq!((p.watermark(), p.failed_at()), (100, Some(100)));
    assert!(p.drained() && !p.finished());
}

#[test]
fn stop_lets_what_is_in_flight_complete() {
    let mut p = pass(0..1000, 100, 2);
    issue_all(&mut p);
    p.stop();
    assert_eq!(p.next_request(), None);
    assert!(!p.drained());
    p.complete(0, 100).expect("in flight");
    p.complete(100, 100).expect("in flight");
    assert!(p.drained() && !p.finished());
    assert_eq!(p.watermark(), 200);
}

#[test]
fn a_resumed_pass_starts_at_its_offset_and_counts_only_the_rest() {
    let mut p = pass(64..1064, 256, 8).resume_from(576).expect("inside");
    assert_eq!(
        (p.watermark(), p.total_bytes(), p.resumed_at()),
        (576, 488, 576)
    );
    let c = issue_all(&mut p);
    assert_eq!(
        c,
        [
            Chunk {
                offset: 576,
                len: 256
            },
            Chunk {
                offset: 832,
                len: 232
            }
        ]
    );
    for c in &c {
        p.complete(c.offset, c.len).expect("in flight");
    }
    assert!(p.finished());
    assert_eq!((p.done_bytes(), p.range()), (488, 64..1064));
    // Resuming at the end is a finished pass; outside the range, or late, is refused.
    assert!(pass(0..100, 10, 1)
        .resume_from(100)
        .expect("end")
        .finished());
    assert!(pass(64..1064, 256, 8).resume_from(63).is_err());
    assert!(pass(64..1064, 256, 8).resume_from(1065).is_err());
    let mut started = pass(0..1000, 100, 2);
    started.next_request();
    assert!(started.resume_from(500).is_err());
}

#[test]
fn invalid_passes_are_refused_and_an_empty_one_is_finished() {
    let (start, end) = (10, 5);
    assert!(SeqPass::new(start..end, 1, 1, SeqOp::Read).is_err());
    assert!(SeqPass::new(0..5, 0, 1, SeqOp::Read).is_err());
    assert!(SeqPass::new(0..5, 1, 0, SeqOp::Read).is_err());
    let mut p = SeqPass::new(7..7, 4096, 1, SeqOp::Read).expect("empty is valid");
    assert_eq!(p.next_request(), None);
    assert!(p.finished() && p.drained());
}

proptest! {
    /// Against a model (the set of completed chunks): in any completion order the watermark is
    /// the end of the completed prefix, never decreases, and in-flight stays within the depth.
    #[test]
    fn watermark_is_the_completed_prefix_in_any_order(
        len in 0u64..5000,
        chunk in 1usize..700,
        depth in 1usize..9,
        picks in proptest::collection::vec(any::<prop::sample::Index>(), 0..200),
    ) {
        let mut p = pass(0..len, chunk, depth);
        let mut flying: Vec<Chunk> = Vec::new();
        let mut completed: BTreeSet<u64> = BTreeSet::new();
        let mut ends = std::collections::HashMap::new();
        let mut last = 0;
        let mut picks = picks.into_iter();
        loop {
            flying.extend(std::iter::from_fn(|| p.next_request()));
            prop_assert!(p.in_flight() <= depth);
            if flying.is_empty() {
                break;
            }
            let i = picks.next().map_or(0, |ix| ix.index(flying.len()));
            let c = flying.swap_remove(i);
            p.complete(c.offset, c.len).expect("in flight");
            completed.insert(c.offset);
            ends.insert(c.offset, c.end());
            let mut prefix = 0;
            while completed.contains(&prefix) {
                prefix = ends[&prefix];
            }
            prop_assert_eq!(p.watermark(), prefix);
            prop_assert!(p.watermark() >= last);
            last = p.watermark();
        }
        prop_assert!(p.finished());
        prop_assert_eq!(p.done_bytes(), len);
    }
}

// ---- the runner ---------------------------------------------------------------------------

/// Test error: an I/O error, or a callback's own.
#[derive(Debug)]
enum TestError {
    Io(IoError),
    Refused(u64),
}

impl From<IoError> for TestError {
    fn from(e: IoError) -> Self {
        TestError::Io(e)
    }
}

/// The byte at `pos` of the test pattern.
fn byte_at(pos: u64) -> u8 {
    (pos % 251) as u8
}

struct Scratch {
    _dir: tempfile::TempDir,
    path: std::path::PathBuf,
}

/// A zeroed file of `len` bytes in a fresh temporary directory (removed when dropped).
fn scratch_file(len: usize) -> Scratch {
    let dir = tempfile::Builder::new()
        .prefix("mbx-io-seq-")
        .tempdir()
        .expect("scratch dir");
    let path = dir.path().join("data");
    std::fs::write(&path, vec![0u8; len]).expect("create");
    Scratch { _dir: dir, path }
}

/// A thread-pool queue of `depth` on `path` (buffered), wrapped in a fault queue with `rules`.
fn queue(path: &std::path::Path, depth: usize, rules: Vec<FaultRule>) -> FaultQueue {
    let mode = OpenMode {
        direct: false,
        ..OpenMode::read_write_direct()
    };
    let files = Files::new(vec![IoFile::open(path, mode).expect("open")]);
    let inner = open_queue(EngineKind::Sync, files, depth).expect("queue");
    FaultQueue::new(inner, rules)
}

fn fill_pattern(offset: u64, buf: &mut [u8]) -> Result<(), TestError> {
    for (i, b) in buf.iter_mut().enumerate() {
        *b = byte_at(offset + i as u64);
    }
    Ok(())
}

fn no_progress(_: &SeqPass) -> Result<(), TestError> {
    Ok(())
}

#[test]
fn runner_writes_then_checks_every_chunk_in_order_reusing_its_buffers() {
    let f = scratch_file(300_000);
    let never = AtomicBool::new(false);
    let range = 1000..290_000;
    let mut q = queue(&f.path, 4, vec![]);
    let mut w = SeqPass::new(range.clone(), 16_384, 4, SeqOp::Write).expect("pass");
    let mut buffers = BTreeSet::new();
    let mut fill = |offset: u64, buf: &mut [u8]| {
        buffers.insert(buf.as_ptr() as usize);
        fill_pattern(offset, buf)
    };
    let mut progress_calls = 0;
    let end = run_pass(
        &mut q,
        0,
        &mut w,
        ChunkData::Fill(&mut fill),
        &mut |p: &SeqPass| {
            progress_calls += 1;
            assert!(p.watermark() <= range.start + p.done_bytes());
            Ok(())
        },
        &never,
    )
    .expect("write pass");
    assert_eq!(end, PassEnd::Complete);
    assert_eq!(w.done_bytes(), 289_000);
    assert!(progress_calls > 0);
    assert!(
        buffers.len() <= 4,
        "{} buffers for 18 chunks at depth 4",
        buffers.len()
    );
    let data = std::fs::read(&f.path).expect("read back");
    assert!(data[..1000].iter().all(|&b| b == 0), "before the range");
    assert!(data[290_000..].iter().all(|&b| b == 0), "after the range");
    assert!((1000..290_000).all(|p| data[p] == byte_at(p as u64)));

    // Read it back. The first read is delayed so that later ones complete before it: the
    // checks still come in offset order.
    let slow = FaultRule::new(
        Some(IoOp::Read),
        FaultKind::Latency(Duration::from_millis(30)),
    )
    .times(1);
    let mut q = queue(&f.path, 4, vec![slow]);
    let mut r = SeqPass::new(range.clone(), 16_384, 4, SeqOp::Read).expect("pass");
    let mut seen = Vec::new();
    let mut check = |offset: u64, data: &[u8]| {
        seen.push(offset);
        let good = data
            .iter()
            .enumerate()
            .all(|(i, &b)| b == byte_at(offset + i as u64));
        if good {
            Ok(())
        } else {
            Err(TestError::Refused(offset))
        }
    };
    let end = run_pass(
        &mut q,
        0,
        &mut r,
        ChunkData::Check(&mut check),
        &mut no_progress,
        &never,
    )
    .expect("read pass");
    assert_eq!(end, PassEnd::Complete);
    let expected: Vec<u64> = range.clone().step_by(16_384).collect();
    assert_eq!(seen, expected, "every chunk checked once, in order");
    assert_eq!(q.injected(), 1);
}

#[test]
fn an_injected_write_error_names_the_file_and_offset_and_keeps_the_watermark_below_it() {
    let f = scratch_file(1 << 20);
    let eio = FaultRule::new(Some(IoOp::Write), FaultKind::Error(5))
        .after(3)
        .times(1);
    let mut q = queue(&f.path, 4, vec![eio]);
    let mut p = SeqPass::new(0..1 << 20, 65_536, 4, SeqOp::Write).expect("pass");
    let err = run_pass(
        &mut q,
        0,
        &mut p,
        ChunkData::Fill(&mut fill_pattern),
        &mut no_progress,
        &AtomicBool::new(false),
    )
    .expect_err("EIO fails the pass");
    let TestError::Io(e) = err else {
        panic!("expected an I/O error, got {err:?}");
    };
    let msg = e.to_string();
    assert!(
        msg.contains(&f.path.display().to_string()) && msg.contains("at offset 196608"),
        "{msg}"
    );
    assert_eq!(e.os_error().and_then(std::io::Error::raw_os_error), Some(5));
    // Everything before the failed chunk completed (the runner drains), nothing after counts.
    assert_eq!((p.watermark(), p.failed_at()), (196_608, Some(196_608)));
    assert!(p.drained() && !p.finished());
    assert_eq!(q.in_flight(), 0, "nothing left in the queue");
}

#[test]
fn a_read_error_stops_the_checks_before_the_bad_offset() {
    let f = scratch_file(1 << 20);
    let eio = FaultRule::new(Some(IoOp::Read), FaultKind::Error(5))
        .after(5)
        .times(1);
    let mut q = queue(&f.path, 3, vec![eio]);
    let mut p = SeqPass::new(0..1 << 20, 32_768, 3, SeqOp::Read).expect("pass");
    let mut seen = Vec::new();
    let err = run_pass(
        &mut q,
        0,
        &mut p,
        ChunkData::Check(&mut |offset, _| {
            seen.push(offset);
            Ok::<(), TestError>(())
        }),
        &mut no_progress,
        &AtomicBool::new(false),
    )
    .expect_err("EIO fails the pass");
    assert!(
        matches!(&err, TestError::Io(e) if e.to_string().contains("read") && e.to_string().contains("at offset 163840")),
        "{err:?}"
    );
    assert!(seen.windows(2).all(|w| w[1] == w[0] + 32_768), "{seen:?}");
    assert!(seen.iter().all(|&o| o < 163_840), "{seen:?}");
    assert!(p.watermark() <= 163_840 && p.drained());
    assert_eq!(q.in_flight(), 0);
}

#[test]
fn cancel_stops_submitting_at_once_and_lets_what_is_in_flight_finish() {
    let f = scratch_file(1 << 20);
    let cancel = AtomicBool::new(false);
    let mut q = queue(&f.path, 4, vec![]);
    let mut p = SeqPass::new(0..1 << 20, 4096, 4, SeqOp::Write).expect("pass");
    let mut fills = 0u64;
    let end = run_pass(
        &mut q,
        0,
        &mut p,
        ChunkData::Fill(&mut |o, b| {
            fills += 1;
            fill_pattern(o, b)
        }),
        &mut |_: &SeqPass| {
            cancel.store(true, Ordering::Relaxed);
            Ok(())
        },
        &cancel,
    )
    .expect("cancelled cleanly");
    assert_eq!(end, PassEnd::Cancelled);
    // Cancelled at the first completion: only the first full queue was ever submitted.
    assert!(fills <= 4, "{fills} chunks of 256 submitted");
    assert_eq!(
        p.done_bytes(),
        fills * 4096,
        "all that was submitted completed"
    );
    assert_eq!(p.watermark(), p.done_bytes(), "and is contiguous");
    assert!(p.drained() && !p.finished());

    // A flag set before the start submits nothing.
    let mut p = SeqPass::new(0..1 << 20, 4096, 4, SeqOp::Write).expect("pass");
    let end = run_pass(
        &mut q,
        0,
        &mut p,
        ChunkData::Fill(&mut |_, _| panic!("nothing may be filled")),
        &mut no_progress,
        &cancel,
    )
    .expect("cancelled");
    assert_eq!((end, p.done_bytes()), (PassEnd::Cancelled, 0));
}

#[test]
fn a_callback_error_stops_the_pass_and_is_returned() {
    let f = scratch_file(1 << 20);
    let mut q = queue(&f.path, 2, vec![]);
    let mut p = SeqPass::new(0..1 << 20, 65_536, 2, SeqOp::Write).expect("pass");
    let err = run_pass(
        &mut q,
        0,
        &mut p,
        ChunkData::Fill(&mut |o, b| {
            if o == 5 * 65_536 {
                Err(TestError::Refused(o))
            } else {
                fill_pattern(o, b)
            }
        }),
        &mut no_progress,
        &AtomicBool::new(false),
    )
    .expect_err("the fill refused");
    assert!(matches!(err, TestError::Refused(327_680)), "{err:?}");
    assert_eq!(p.watermark(), 327_680);
    assert!(p.drained());
    // The data callback must match the direction.
    let mut p = SeqPass::new(0..1 << 20, 65_536, 2, SeqOp::Read).expect("pass");
    let err = run_pass(
        &mut q,
        0,
        &mut p,
        ChunkData::Fill(&mut fill_pattern),
        &mut no_progress,
        &AtomicBool::new(false),
    )
    .expect_err("mismatch");
    assert!(
        matches!(err, TestError::Io(IoError::Unsupported(_))),
        "{err:?}"
    );
    assert_eq!(p.in_flight(), 0);
}
