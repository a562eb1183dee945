//! The one sequential pass: read or write a byte range in chunks, keeping up to `depth` in flight.
//!
//! Creating a database, verifying one, laying out the benchmark file, the engine's background
//! database maintenance (BDM) and, next, Backup and Checksum all walk a range of a file the same
//! way. Two layers serve them:
//!
//! - [`SeqPass`]: a pure state machine. It says which chunk to issue next ([`SeqPass::next_request`]),
//!   is told what completed ([`SeqPass::complete`], [`SeqPass::fail`]) and tracks the contiguous
//!   watermark: every byte below [`SeqPass::watermark`] is complete, whatever order completions
//!   came in. It does no I/O and reads no clock, so an event loop can drive it one chunk at a time
//!   (paced, as BDM is) or at full depth.
//! - [`run_pass`]: a blocking runner over any [`IoQueue`], for commands that do only this. It fills
//!   each chunk before it is written, checks each chunk read *in offset order*, reports progress,
//!   stops promptly on a cancel flag and reuses its buffers (no allocation per chunk).
//!
//! Requests are aligned for O_DIRECT when the range's start and end and the chunk size are.

use std::ops::Range;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

use crate::{AlignedBuf, IoCompletion, IoError, IoOp, IoQueue, IoRequest};

/// Direction of a pass.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SeqOp {
    /// Read every chunk.
    Read,
    /// Write every chunk.
    Write,
}

impl SeqOp {
    /// The queue operation.
    pub fn io_op(self) -> IoOp {
        match self {
            SeqOp::Read => IoOp::Read,
            SeqOp::Write => IoOp::Write,
        }
    }
}

/// One request of a pass: `len` bytes at `offset`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Chunk {
    /// Byte offset in the file.
    pub offset: u64,
    /// Bytes; the chunk size, except for a shorter last chunk.
    pub len: usize,
}

impl Chunk {
    /// The first byte after the chunk.
    pub fn end(&self) -> u64 {
        // A chunk lies inside its pass's range, so this cannot overflow.
        self.offset.saturating_add(self.len as u64)
    }
}

/// A pass used against its contract (a programming error of the caller, reported, not panicked).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum SeqError {
    /// The parameters describe no valid pass.
    #[error("invalid sequential pass: {0}")]
    Invalid(String),
    /// A completion for a chunk that is not in flight.
    #[error("sequential pass: no chunk of {len} bytes at offset {offset} is in flight")]
    NotInFlight {
        /// Offset given.
        offset: u64,
        /// Length given.
        len: usize,
    },
}

/// The state of one sequential pass over `[start, end)`; see the module documentation.
///
/// Memory is bounded by `depth`: the pass remembers only the chunks in flight, and the contiguous
/// watermark is the lowest of them (or the next offset to issue when none is).
#[derive(Debug, Clone)]
pub struct SeqPass {
    start: u64,
    end: u64,
    /// Where this run began: `start`, or the offset a resumed pass continues from.
    from: u64,
    chunk: usize,
    depth: usize,
    op: SeqOp,
    /// Next offset to issue.
    next: u64,
    /// Chunks issued and neither completed nor failed (at most `depth`).
    in_flight: Vec<Chunk>,
    /// Bytes completed since `from`.
    done: u64,
    /// Lowest offset of a failed chunk: the watermark never passes it.
    failed_at: Option<u64>,
    /// No more requests (cancelled, or a chunk failed).
    stopped: bool,
}

impl SeqPass {
    /// A pass over `range` in chunks of `chunk` bytes, at most `depth` in flight.
    pub fn new(range: Range<u64>, chunk: usize, depth: usize, op: SeqOp) -> Result<Self, SeqError> {
        if range.start > range.end {
            return Err(SeqError::Invalid(format!(
                "range {}..{} ends before it starts",
                range.start, range.end
            )));
        }
        if chunk == 0 || depth == 0 {
            return Err(SeqError::Invalid(format!(
                "chunk size ({chunk}) and depth ({depth}) must be at least 1"
            )));
        }
        Ok(SeqPass {
            start: range.start,
            end: range.end,
            from: range.start,
            chunk,
            depth,
            op,
            next: range.start,
            in_flight: Vec::with_capacity(depth),
            done: 0,
            failed_at: None,
            stopped: false,
        })
    }

    /// The same pass continuing at `offset` (everything below it is taken as done by an earlier
    /// run, as an interrupted creation resumes from its durable watermark). Chunks then start at
    /// `offset`. Only before the first request.
    pub fn resume_from(mut self, offset: u64) -> Result<Self, SeqError> {
        if !(self.start..=self.end).contains(&offset) {
            return Err(SeqError::Invalid(format!(
                "resume offset {offset} is outside {}..{}",
                self.start, self.end
            )));
        }
        if self.next != self.from || !self.in_flight.is_empty() {
            return Err(SeqError::Invalid(
                "a pass can only be resumed before its first request".into(),
            ));
        }
        self.from = offset;
        self.next = offset;
        Ok(self)
    }

    /// The next chunk to issue, if fewer than `depth` are in flight, the pass is not stopped and
    /// the range is not exhausted. The chunk counts as in flight from now on.
    pub fn next_request(&mut self) -> Option<Chunk> {
        if self.stopped || self.next >= self.end || self.in_flight.len() >= self.depth {
            return None;
        }
        let rest = self.end - self.next;
        // At most `chunk`, so it fits a usize.
        let len = usize::try_from(rest).map_or(self.chunk, |r| r.min(self.chunk));
        let c = Chunk {
            offset: self.next,
            len,
        };
        self.next = c.end();
        assert!(
            self.next <= self.end && self.in_flight.len() < self.depth,
            "sequential pass: a chunk past the range's end or beyond its depth"
        );
        self.in_flight.push(c);
        Some(c)
    }

    fn take(&mut self, offset: u64, len: usize) -> Result<Chunk, SeqError> {
        let pos = self
            .in_flight
            .iter()
            .position(|c| c.offset == offset && c.len == len)
            .ok_or(SeqError::NotInFlight { offset, len })?;
        Ok(self.in_flight.swap_remove(pos))
    }

    /// The chunk at `offset` completed (in any order).
    pub fn complete(&mut self, offset: u64, len: usize) -> Result<(), SeqError> {
        let c = self.take(offset, len)?;
        self.done = self.done.saturating_add(c.len as u64);
        // Each chunk completes once: never more bytes done than the pass covers.
        assert!(
            self.done <= self.end - self.from,
            "sequential pass: {} bytes done of {}",
            self.done,
            self.end - self.from
        );
        Ok(())
    }

    /// The chunk at `offset` failed: no more requests are issued, and the watermark stays at or
    /// below `offset` for good. Chunks still in flight may complete.
    pub fn fail(&mut self, offset: u64, len: usize) -> Result<(), SeqError> {
        let c = self.take(offset, len)?;
        self.failed_at = Some(self.failed_at.map_or(c.offset, |f| f.min(c.offset)));
        self.stopped = true;
        Ok(())
    }

    /// Issue no more requests (cancel); what is in flight may still complete.
    pub fn stop(&mut self) {
        self.stopped = true;
    }

    /// Every byte in `[start, watermark)` has completed: the lowest chunk in flight or failed, or
    /// the next offset to issue.
    pub fn watermark(&self) -> u64 {
        let lowest = self.in_flight.iter().map(|c| c.offset).min();
        [lowest, self.failed_at]
            .into_iter()
            .flatten()
            .fold(self.next, u64::min)
    }

    /// Chunks issued and not yet completed or failed.
    pub fn in_flight(&self) -> usize {
        self.in_flight.len()
    }

    /// Bytes completed by this run (since the resume offset).
    pub fn done_bytes(&self) -> u64 {
        self.done
    }

    /// Bytes this run has to do: from the resume offset to the end.
    pub fn total_bytes(&self) -> u64 {
        self.end - self.from
    }

    /// True when every byte of the range has completed.
    pub fn finished(&self) -> bool {
        self.watermark() >= self.end
    }

    /// True when nothing is in flight and nothing more will be issued (finished, stopped or
    /// failed).
    pub fn drained(&self) -> bool {
        self.in_flight.is_empty() && (self.stopped || self.next >= self.end)
    }

    /// True once [`SeqPass::stop`] was called or a chunk failed.
    pub fn is_stopped(&self) -> bool {
        self.stopped
    }

    /// The lowest offset of a failed chunk.
    pub fn failed_at(&self) -> Option<u64> {
        self.failed_at
    }

    /// The whole range.
    pub fn range(&self) -> Range<u64> {
        self.start..self.end
    }

    /// Where this run began (the resume offset, or the start).
    pub fn resumed_at(&self) -> u64 {
        self.from
    }

    /// Chunk size.
    pub fn chunk_size(&self) -> usize {
        self.chunk
    }

    /// Most chunks in flight.
    pub fn depth(&self) -> usize {
        self.depth
    }

    /// Read or write.
    pub fn op(&self) -> SeqOp {
        self.op
    }
}

/// Fills the buffer of the chunk at an offset, before it is written.
pub type FillFn<'a, E> = dyn FnMut(u64, &mut [u8]) -> Result<(), E> + 'a;
/// Checks the data read for the chunk at an offset.
pub type CheckFn<'a, E> = dyn FnMut(u64, &[u8]) -> Result<(), E> + 'a;

/// What the runner does with the data of each chunk; must match the pass's [`SeqOp`].
pub enum ChunkData<'a, E> {
    /// A write pass: fill `buf` (the chunk's bytes) for the chunk at `offset` before it is
    /// submitted. Called in offset order.
    Fill(&'a mut FillFn<'a, E>),
    /// A read pass: check the data read for the chunk at `offset`. Called in offset order, each
    /// chunk once, and never after the first error.
    Check(&'a mut CheckFn<'a, E>),
}

/// How a [`run_pass`] ended without error.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[must_use]
pub enum PassEnd {
    /// Every chunk completed.
    Complete,
    /// The cancel flag stopped it; everything issued before has completed.
    Cancelled,
}

/// Runs `pass` to its end over `queue`, against file index `file`.
///
/// - Writes: `Fill` fills each chunk's buffer, in offset order, just before it is submitted.
/// - Reads: `Check` gets each chunk's data in offset order (a chunk that completes early waits,
///   counting against the depth, for the ones before it), so the first problem reported is the
///   first in the file. The pass marks a read chunk complete only once it has been checked.
/// - `on_progress` is called after each batch of completions; `pass.done_bytes()` and
///   `pass.watermark()` tell how far it is. It may do synchronous work (a durable point).
/// - `cancel` is read before every submission: once set, nothing more is submitted, what is in
///   flight completes, and the result is [`PassEnd::Cancelled`].
/// - The first error (an I/O error naming the file and offset, or one returned by a callback)
///   stops submissions; what is in flight is reaped (its buffers belong to the queue until then),
///   and the error is returned. `pass.watermark()` then says how far the range is complete.
///
/// At most `pass.depth()` buffers of the chunk size are allocated, once; the queue must not
/// be used by anyone else meanwhile.
pub fn run_pass<E: From<IoError>>(
    queue: &mut dyn IoQueue,
    file: usize,
    pass: &mut SeqPass,
    mut data: ChunkData<'_, E>,
    on_progress: &mut dyn FnMut(&SeqPass) -> Result<(), E>,
    cancel: &AtomicBool,
) -> Result<PassEnd, E> {
    let matches = matches!(
        (&data, pass.op()),
        (ChunkData::Fill(_), SeqOp::Write) | (ChunkData::Check(_), SeqOp::Read)
    );
    if !matches {
        return Err(E::from(IoError::Unsupported(format!(
            "sequential pass: {:?} pass given the wrong chunk callback",
            pass.op()
        ))));
    }
    let files = Arc::clone(queue.files());
    let depth = pass.depth();
    let mut pool: Vec<AlignedBuf> = Vec::with_capacity(depth);
    let mut reaped: Vec<IoCompletion> = Vec::with_capacity(depth);
    // Reads that completed before an earlier chunk: held until they can be checked in order.
    let mut held: Vec<IoCompletion> = Vec::with_capacity(depth);
    let mut failure: Option<E> = None;
    let misuse = |e: SeqError| E::from(IoError::Unsupported(e.to_string()));

    loop {
        // Submit while the pass and the queue allow.
        while failure.is_none() && queue.in_flight() < queue.depth() {
            if cancel.load(Ordering::Relaxed) {
                pass.stop();
                break;
            }
            let Some(chunk) = pass.next_request() else {
                break;
            };
            let mut buf = pool
                .pop()
                .unwrap_or_else(|| AlignedBuf::zeroed(pass.chunk_size()));
            if let ChunkData::Fill(fill) = &mut data {
                if let Err(e) = fill(chunk.offset, &mut buf.as_mut_slice()[..chunk.len]) {
                    pool.push(buf);
                    pass.fail(chunk.offset, chunk.len).map_err(misuse)?;
                    failure = Some(e);
                    break;
                }
            }
            let req = IoRequest {
                op: pass.op().io_op(),
                file,
                offset: chunk.offset,
                len: chunk.len,
                buf,
                // Offsets are unique among the chunks in flight.
                tag: chunk.offset,
            };
            if let Err(e) = queue.submit(req) {
                pass.fail(chunk.offset, chunk.len).map_err(misuse)?;
                failure = Some(E::from(e));
                break;
            }
        }
        if queue.in_flight() == 0 {
            break;
        }
        reaped.clear();
        queue.reap(1, &mut reaped)?;
        for c in reaped.drain(..) {
            match c.check(&files) {
                Ok(_) if pass.op() == SeqOp::Read => held.push(c),
                Ok(_) => {
                    pass.complete(c.req.offset, c.req.len).map_err(misuse)?;
                    pool.push(c.req.buf);
                }
                Err(e) => {
                    pass.fail(c.req.offset, c.req.len).map_err(misuse)?;
                    pool.push(c.req.buf);
                    if failure.is_none() {
                        failure = Some(E::from(e));
                    }
                }
            }
        }
        // Check held reads in offset order: the next one is always at the watermark.
        if let ChunkData::Check(check) = &mut data {
            while failure.is_none() {
                let watermark = pass.watermark();
                let Some(pos) = held.iter().position(|c| c.req.offset == watermark) else {
                    break;
                };
                let c = held.swap_remove(pos);
                let (offset, len) = (c.req.offset, c.req.len);
                let checked = check(offset, &c.req.buf.as_slice()[..len]);
                pool.push(c.req.buf);
                match checked {
                    Ok(()) => pass.complete(offset, len).map_err(misuse)?,
                    Err(e) => {
                        pass.fail(offset, len).map_err(misuse)?;
                        failure = Some(e);
                    }
                }
            }
            if failure.is_some() {
                // Read but never to be checked: released as failed, so the pass ends drained.
                for c in held.drain(..) {
                    pass.fail(c.req.offset, c.req.len).map_err(misuse)?;
                    pool.push(c.req.buf);
                }
            }
        }
        if failure.is_none() {
            if let Err(e) = on_progress(pass) {
                pass.stop();
                failure = Some(e);
            }
        }
    }
    if let Some(e) = failure {
        return Err(e);
    }
    if !held.is_empty() {
        // Cannot happen: with nothing in the queue, the chunk at the watermark is held.
        return Err(misuse(SeqError::Invalid(format!(
            "{} chunks read but not checkable in order",
            held.len()
        ))));
    }
    if pass.finished() {
        Ok(PassEnd::Complete)
    } else if pass.is_stopped() {
        Ok(PassEnd::Cancelled)
    } else {
        Err(misuse(SeqError::Invalid(format!(
            "stalled at offset {} with nothing in flight (queue depth {})",
            pass.watermark(),
            queue.depth()
        ))))
    }
}

#[cfg(test)]
mod tests;
