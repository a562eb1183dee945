//! The one I/O path every test type uses: submit requests to a queue, reap completions.
//!
//! A queue owns its in-flight requests (and their buffers) until they complete, so a buffer can
//! never be reused while the kernel still writes into it. Each completion carries its measured
//! latency: from `submit` to the moment the completion was reaped.

use std::path::{Path, PathBuf};
use std::sync::{Arc, PoisonError, RwLock};
use std::time::Duration;

use crate::remove::Remover;
use crate::{AlignedBuf, Clock, IoError, IoFile, Machine, OpenMode, RealClock, RealMachine};

/// The files a queue may address, by index. Files can be added while the queue runs (a new log
/// file) and removed once nothing is in flight for them; indexes of removed files are reused.
///
/// The table also removes files from disk off the caller's thread ([`Files::remove_path`]): when
/// it is dropped, it waits for the removals handed to it.
#[derive(Debug, Default)]
pub struct Files {
    slots: RwLock<Vec<Option<Arc<IoFile>>>>,
    removals: Remover,
}

/// Shared handle to a [`Files`] table.
pub type FileTable = Arc<Files>;

impl Files {
    /// A table holding `files` at indexes 0..n.
    pub fn new(files: Vec<IoFile>) -> FileTable {
        Arc::new(Files {
            slots: RwLock::new(files.into_iter().map(|f| Some(Arc::new(f))).collect()),
            removals: Remover::default(),
        })
    }

    /// The file at `index`, if present.
    pub fn get(&self, index: usize) -> Option<Arc<IoFile>> {
        self.slots
            .read()
            .ok()
            .and_then(|s| s.get(index).cloned().flatten())
    }

    /// The file at `index`, or an error saying it is missing.
    pub fn file(&self, index: usize) -> Result<Arc<IoFile>, IoError> {
        self.get(index)
            .ok_or_else(|| IoError::Unsupported(format!("no file with index {index}")))
    }

    /// Adds a file; returns its index.
    pub fn add(&self, file: IoFile) -> usize {
        // No critical section of this lock can panic; recover the table if one ever did.
        let mut slots = self.slots.write().unwrap_or_else(PoisonError::into_inner);
        let f = Some(Arc::new(file));
        match slots.iter().position(Option::is_none) {
            Some(i) => {
                slots[i] = f;
                i
            }
            None => {
                slots.push(f);
                slots.len() - 1
            }
        }
    }

    /// Removes a file (it closes when the last in-flight request using it completes).
    pub fn remove(&self, index: usize) -> Option<Arc<IoFile>> {
        self.slots
            .write()
            .ok()
            .and_then(|mut s| s.get_mut(index).and_then(Option::take))
    }

    /// The path of the file at `index` (empty if absent), for messages.
    pub fn path(&self, index: usize) -> PathBuf {
        self.get(index)
            .map(|f| f.path().to_path_buf())
            .unwrap_or_default()
    }

    /// Opens (or, with `mode.create`, creates) the file at `path` and adds it; returns its index.
    /// Waits first for a removal of the same path still pending (see [`Files::remove_path`]), so
    /// a late unlink cannot delete the new file.
    pub fn open(&self, path: &Path, mode: OpenMode) -> Result<usize, IoError> {
        self.removals.wait_for(path);
        Ok(self.add(IoFile::open(path, mode)?))
    }

    /// Removes the file at `path` from disk on a background thread and returns at once (an unlink
    /// can take milliseconds). A missing file is not an error. Any other failure is reported
    /// later: by a following call of this method (the error names the path that failed; the
    /// removal asked for now is handed over regardless) or by [`Files::wait_removals`]. Does not
    /// close the file if it is open in the table (on Unix an open file stays usable).
    pub fn remove_path(&self, path: &Path) -> Result<(), IoError> {
        self.removals.remove(path)
    }

    /// Waits until every removal handed to [`Files::remove_path`] is done; returns the oldest
    /// failure not yet reported (one per call). Failures still unreported when the table is
    /// dropped are lost: call this before, where they matter.
    pub fn wait_removals(&self) -> Result<(), IoError> {
        self.removals.wait_all()
    }

    /// Waits until no removal of `path` is pending, without taking its failure (for tests).
    #[cfg(test)]
    pub(crate) fn removals_wait_for(&self, path: &Path) {
        self.removals.wait_for(path);
    }
}

/// Kind of operation.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum IoOp {
    /// Read `len` bytes at `offset` into the buffer.
    Read,
    /// Write the buffer's first `len` bytes at `offset`.
    Write,
    /// Make the file's written data durable (fdatasync).
    Sync,
    /// Preallocate `len` bytes at `offset`, extending the file if that range ends past its end
    /// (Linux `fallocate` mode 0; elsewhere the file is extended when shorter). The buffer is
    /// unused and may be empty (`AlignedBuf::zeroed(0)`).
    Allocate,
}

impl IoOp {
    /// The verb used in messages ("read", "write", "sync", "allocate").
    pub fn name(self) -> &'static str {
        match self {
            IoOp::Read => "read",
            IoOp::Write => "write",
            IoOp::Sync => "sync",
            IoOp::Allocate => "allocate",
        }
    }

    /// The noun used in messages ("a read", "an allocation").
    pub fn noun(self) -> &'static str {
        match self {
            IoOp::Allocate => "allocation",
            op => op.name(),
        }
    }

    /// True for operations whose result carries no byte count (sync, allocate).
    pub fn is_control(self) -> bool {
        matches!(self, IoOp::Sync | IoOp::Allocate)
    }
}

/// One request.
#[derive(Debug)]
pub struct IoRequest {
    /// What to do.
    pub op: IoOp,
    /// Index into the queue's [`FileTable`].
    pub file: usize,
    /// Byte offset (aligned for O_DIRECT). Unused by `Sync`.
    pub offset: u64,
    /// Bytes to transfer (at most `buf.len()`); for `Allocate`, bytes to preallocate (the buffer
    /// is unused then). Unused by `Sync`.
    pub len: usize,
    /// The data (written) or the destination (read). Returned in the completion.
    pub buf: AlignedBuf,
    /// Caller's identifier, returned in the completion.
    pub tag: u64,
}

/// A finished request.
#[derive(Debug)]
pub struct IoCompletion {
    /// The request, with its buffer.
    pub req: IoRequest,
    /// Bytes transferred, or the error.
    pub result: Result<usize, std::io::Error>,
    /// Time from submission to completion.
    pub latency: Duration,
}

impl IoCompletion {
    /// Turns the result into an error naming the file and offset, treating a short transfer as an
    /// error too (a read past the end, or a device that accepted only part of a write).
    pub fn check(&self, files: &FileTable) -> Result<usize, IoError> {
        self.check_with(files, || files.path(self.req.file))
    }

    /// Like [`IoCompletion::check`], naming the file as `queue` knows it: use this with a queue
    /// whose files are not all in its table (the simulated queue keeps its files in memory).
    pub fn check_in(&self, queue: &dyn IoQueue) -> Result<usize, IoError> {
        self.check_with(queue.files(), || queue.file_path(self.req.file))
    }

    fn check_with(&self, files: &Files, path: impl Fn() -> PathBuf) -> Result<usize, IoError> {
        match &self.result {
            Ok(n) if self.req.op.is_control() || *n == self.req.len => Ok(*n),
            // Errors only from here on: building the path is off the hot path.
            Ok(n) => {
                // A short write is how a full file system often first shows (tmpfs, NFS): write
                // the rest once, synchronously, so the user reads "No space left on device"
                // rather than a byte count.
                if let Some(e) = self.probe_short_write(files, *n) {
                    let offset = self.req.offset.saturating_add(*n as u64);
                    return Err(IoError::at("write", path(), offset, e));
                }
                Err(IoError::Short {
                    op: self.op_name(),
                    path: path(),
                    offset: self.req.offset,
                    expected: self.req.len,
                    got: *n,
                })
            }
            Err(e) => Err(IoError::at(
                self.op_name(),
                path(),
                self.req.offset,
                // Keep the OS error code (ENOSPC must stay recognisable), else the text.
                match e.raw_os_error() {
                    Some(code) => std::io::Error::from_raw_os_error(code),
                    None => std::io::Error::new(e.kind(), e.to_string()),
                },
            )),
        }
    }

    /// After a short write of `done` bytes: the OS error that writing the remainder gives, if
    /// any. Skipped where the remainder cannot be written directly (unaligned with O_DIRECT).
    fn probe_short_write(&self, files: &Files, done: usize) -> Option<std::io::Error> {
        if self.req.op != IoOp::Write || done >= self.req.len {
            return None;
        }
        let file = files.get(self.req.file)?;
        let rest = self.req.buf.as_slice().get(done..self.req.len)?;
        let offset = self.req.offset.checked_add(done as u64)?;
        let aligned = offset % crate::ALIGN as u64 == 0 && rest.len() % crate::ALIGN == 0;
        if file.mode().direct && !aligned {
            return None;
        }
        crate::platform::write_at(file.file(), rest, offset).err()
    }

    fn op_name(&self) -> &'static str {
        self.req.op.name()
    }
}

/// What a reap waits for (see [`IoQueue::reap_for`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Reap {
    /// Completions to wait for, capped at the number in flight (0: only what is ready).
    pub min: usize,
    /// The longest wait; `None` waits for `min` however long it takes.
    pub timeout: Option<Duration>,
}

/// What a queue is, whatever its engine: the files it addresses, how many requests it holds at
/// most and its engine's name. Every backend keeps one; a queue wrapping another hands out the
/// inner one's.
#[derive(Debug, Clone)]
pub struct QueueBase {
    /// The real files the queue addresses (empty for a simulated queue).
    pub files: FileTable,
    /// Most requests that may be in flight.
    pub depth: usize,
    /// Engine name for results ("io_uring", "sync").
    pub engine: &'static str,
}

/// A queue of asynchronous I/O against a set of files.
///
/// Every file a test touches goes through its queue: requests address files by index, and the
/// queue opens, closes and removes them ([`IoQueue::open_file`]...). The default implementations
/// use the queue's [`FileTable`] (real files); the simulated queue (`sim`) keeps its files in
/// memory and overrides them all. Time comes from [`IoQueue::clock`], so an engine given a
/// simulated queue runs on its virtual time.
pub trait IoQueue: Send {
    /// Queues a request. At most [`IoQueue::depth`] requests may be in flight.
    fn submit(&mut self, req: IoRequest) -> Result<(), IoError>;

    /// Sends queued requests to the device and waits until at least `want.min` (capped at the
    /// number in flight) have completed, or, with `want.timeout`, until that time has passed
    /// even if fewer completed; appends every completion available to `out`. The one wait every
    /// queue implements: [`IoQueue::reap`] and [`IoQueue::reap_timeout`] call it.
    fn reap_for(&mut self, want: Reap, out: &mut Vec<IoCompletion>) -> Result<(), IoError>;

    /// Sends queued requests to the device and waits until at least `min` (capped at the number
    /// in flight) have completed; appends every completion available to `out`.
    fn reap(&mut self, min: usize, out: &mut Vec<IoCompletion>) -> Result<(), IoError> {
        self.reap_for(Reap { min, timeout: None }, out)
    }

    /// Like [`IoQueue::reap`], but returns after `timeout` even if fewer than `min` completed
    /// (for event loops that also have timers).
    fn reap_timeout(
        &mut self,
        min: usize,
        timeout: Duration,
        out: &mut Vec<IoCompletion>,
    ) -> Result<(), IoError> {
        let timeout = Some(timeout);
        self.reap_for(Reap { min, timeout }, out)
    }

    /// Requests submitted and not yet reaped.
    fn in_flight(&self) -> usize;

    /// What the queue is: its files, depth and engine name.
    fn base(&self) -> &QueueBase;

    /// Most requests that may be in flight.
    fn depth(&self) -> usize {
        self.base().depth
    }

    /// The real files this queue addresses (empty for a simulated queue, whose files are in
    /// memory: use [`IoQueue::file_path`] and [`IoQueue::file_len`] to work with either).
    fn files(&self) -> &FileTable {
        &self.base().files
    }

    /// Engine name for results ("io_uring", "sync").
    fn engine_name(&self) -> &'static str {
        self.base().engine
    }

    /// Opens (or, with `mode.create` and `mode.write`, creates) the file at `path` for this
    /// queue; returns the index requests use. See [`Files::open`].
    fn open_file(&mut self, path: &Path, mode: OpenMode) -> Result<usize, IoError> {
        self.files().open(path, mode)
    }

    /// Closes the file at `index`: it closes once no request in flight uses it, and the index
    /// may be given to a file opened later.
    fn close_file(&mut self, index: usize) {
        self.files().remove(index);
    }

    /// Removes the file at `path` without stalling the caller (real files are unlinked on a
    /// background thread); a missing file is not an error. A failure is reported by a later
    /// call of this method or by [`IoQueue::wait_removals`]. See [`Files::remove_path`].
    fn remove_file(&mut self, path: &Path) -> Result<(), IoError> {
        self.files().remove_path(path)
    }

    /// Waits until every removal asked of [`IoQueue::remove_file`] is done; returns the oldest
    /// failure not yet reported. Call it before finishing a test, or a last failure goes unseen.
    fn wait_removals(&mut self) -> Result<(), IoError> {
        self.files().wait_removals()
    }

    /// The size in bytes of the file at `index`.
    fn file_len(&self, index: usize) -> Result<u64, IoError> {
        self.files().file(index)?.len()
    }

    /// The path of the file at `index` (empty if absent), for messages.
    fn file_path(&self, index: usize) -> PathBuf {
        self.files().path(index)
    }

    /// The time this queue's latencies are measured in: the system clock, or a simulated queue's
    /// virtual clock. An engine given a queue takes its time from here.
    fn clock(&self) -> Arc<dyn Clock> {
        Arc::new(RealClock)
    }

    /// The machine whose host counters a test records: this computer, or for a simulated queue
    /// none (see [`crate::Machine`]). An engine given a queue takes them from here.
    fn machine(&self) -> Arc<dyn Machine> {
        Arc::new(RealMachine)
    }
}

/// The [`IoQueue`] methods a queue wrapping another hands on unchanged: what the queue is
/// ([`IoQueue::base`]), its file operations, clock and machine. Used inside the
/// `impl IoQueue` of a wrapper (fault injection, a tap), naming the field that holds the
/// wrapped queue, so each wrapper writes only what it changes.
macro_rules! forward_to_inner {
    ($inner:ident) => {
        fn base(&self) -> &$crate::queue::QueueBase {
            self.$inner.base()
        }

        fn open_file(
            &mut self,
            path: &std::path::Path,
            mode: $crate::OpenMode,
        ) -> Result<usize, $crate::IoError> {
            self.$inner.open_file(path, mode)
        }

        fn close_file(&mut self, index: usize) {
            self.$inner.close_file(index)
        }

        fn remove_file(&mut self, path: &std::path::Path) -> Result<(), $crate::IoError> {
            self.$inner.remove_file(path)
        }

        fn wait_removals(&mut self) -> Result<(), $crate::IoError> {
            self.$inner.wait_removals()
        }

        fn file_len(&self, index: usize) -> Result<u64, $crate::IoError> {
            self.$inner.file_len(index)
        }

        fn file_path(&self, index: usize) -> std::path::PathBuf {
            self.$inner.file_path(index)
        }

        fn clock(&self) -> std::sync::Arc<dyn $crate::Clock> {
            self.$inner.clock()
        }

        fn machine(&self) -> std::sync::Arc<dyn $crate::Machine> {
            self.$inner.machine()
        }
    };
}
pub(crate) use forward_to_inner;

/// Performs one request synchronously on the calling thread (the thread-pool backend's worker).
pub(crate) fn perform(f: &IoFile, req: &mut IoRequest) -> Result<usize, std::io::Error> {
    let len = req.len.min(req.buf.len());
    let (file, offset) = (f.file(), req.offset);
    match req.op {
        IoOp::Read => {
            let buf = &mut req.buf.as_mut_slice()[..len];
            transfer_all(len, |done| {
                crate::platform::read_at(file, &mut buf[done..], offset + done as u64)
            })
        }
        IoOp::Write => {
            let buf = &req.buf.as_slice()[..len];
            transfer_all(len, |done| {
                crate::platform::write_at(file, &buf[done..], offset + done as u64)
            })
        }
        IoOp::Sync => file.sync_data().map(|_| 0),
        IoOp::Allocate => crate::platform::allocate(file, offset, req.len as u64).map(|_| 0),
    }
}

/// Calls `step` with the bytes done so far until `len` are done or it transfers none (the end of
/// the file): the kernel may split a large read or write into short ones. Returns the bytes done.
fn transfer_all(
    len: usize,
    mut step: impl FnMut(usize) -> Result<usize, std::io::Error>,
) -> Result<usize, std::io::Error> {
    let mut done = 0;
    while done < len {
        let n = step(done)?;
        if n == 0 {
            break;
        }
        done += n;
    }
    Ok(done)
}
