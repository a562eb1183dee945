//! The reactor: the only code that touches the [`IoQueue`]. Components submit requests with an
//! owner token; the reactor keeps the token while the request is in flight and hands each
//! completion back with its owner, so the executor can route it. It also owns the buffer pool and
//! the file table (through the queue), and asks the queue's clock for the time.
//!
//! A reactor is self-contained (no globals): a later step of the engine runs several, one per
//! thread, each owning some databases.

use rustc_hash::FxHashMap;
use std::path::Path;
use std::sync::Arc;
use std::time::{Duration, Instant};

use mbx_io::{
    AlignedBuf, Clock, IoCompletion, IoError, IoOp, IoQueue, IoRequest, Machine, OpenMode,
    QueueBase, Reap,
};

use crate::EngineError;

/// Who is waiting for a request: enough to route the completion, nothing more.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Owner {
    /// Transaction reads of `pages` pages from `first`.
    TxnRead { db: usize, first: u64, pages: u64 },
    /// A flush of `pages` dirty pages from `first`.
    Flush { db: usize, first: u64, pages: u64 },
    /// A log record write ending (durably) at `end_lsn`, into log generation `gen`.
    LogWrite { db: usize, gen: u64, end_lsn: u64 },
    /// Creating log generation `gen`: its header write, then its preallocation.
    LogCreate { db: usize, gen: u64, step: u8 },
    /// A checkpoint: the database sync, then the checkpoint slot write.
    Checkpoint { db: usize, step: u8 },
    /// A background database maintenance read (submitted as I/O number `seq`).
    Bdm {
        db: usize,
        first: u64,
        pages: u64,
        seq: u64,
    },
    /// A log replication read of generation `gen`.
    Repl { db: usize, gen: u64 },
    /// A sequential-pass read at `offset` of the pass's file number `db` (a database file, or
    /// for a checksum a log file): handed back to the pass phase through the engine's inbox.
    Pass { db: usize, offset: u64 },
    /// A sequential-pass read of the generation journal of the pass's database file number `db`:
    /// the entries of the pages of its read at `offset` (`u64::MAX`: the journal's header).
    PassJournal { db: usize, offset: u64 },
    /// Page patching (copies > 1): `page`, found damaged, rewritten at generation `gen`.
    Patch { db: usize, page: u64, gen: u64 },
    /// The generation journal: its header, a chunk read, a write-back write or its sync.
    Journal { db: usize, io: JournalIo },
    /// Soft recovery: a checkpoint, log or page read, a page write or the final sync.
    Replay { db: usize, io: ReplayIo },
}

/// A journal request.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum JournalIo {
    /// The header read at the start.
    Header,
    /// Writing the header of a new (or replaced) journal.
    HeaderWrite,
    /// Reading one chunk.
    Load { chunk: u64 },
    /// A write-back write.
    Write,
    /// The sync after a write-back.
    Sync,
}

/// One replay request, for routing its completion.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum ReplayIo {
    /// The checkpoint slot.
    Checkpoint,
    /// `offset..` of log generation `gen`.
    Log { gen: u64, offset: u64 },
    /// A read of `count` consecutive pages from `page`.
    Read { page: u64, count: u64 },
    /// A page written at its logged generation.
    Write { page: u64 },
    /// The database file's sync at the end.
    Sync,
}

/// Buffers of one size kept for reuse: at least this many, and as many as the queue holds
/// requests (a size never has more buffers out at once), so that no size in use misses once
/// the run has seen its peak.
const POOL_PER_SIZE: usize = 64;

/// An I/O in flight: who submitted it, when, and what it is (for the hung-I/O report).
#[derive(Debug, Clone, Copy)]
struct Slot {
    owner: Owner,
    submitted: Instant,
    op: IoOp,
    file: usize,
    offset: u64,
    len: usize,
    /// Already reported as hung (each hung I/O is reported once, while outstanding).
    hung: bool,
    /// In flight when the measured phase ended: its completion is handed to the measured
    /// figures ([`Reactor::carried_done`]).
    carried: bool,
}

/// An I/O that has been outstanding longer than the hung-I/O threshold.
#[derive(Debug, Clone)]
pub(crate) struct HungIo {
    pub op: IoOp,
    pub path: std::path::PathBuf,
    pub offset: u64,
    pub len: usize,
    pub outstanding: Duration,
}

/// Owns the queue, the in-flight owners and the buffers.
pub(crate) struct Reactor {
    queue: Box<dyn IoQueue>,
    clock: Arc<dyn Clock>,
    machine: Arc<dyn Machine>,
    owners: Vec<Option<Slot>>,
    free: Vec<usize>,
    /// Free buffers by size (every size in use: pages, coalesced writes, log records).
    pool: FxHashMap<usize, Vec<AlignedBuf>>,
    /// Most buffers kept per size.
    pool_cap: usize,
    batch: Vec<IoCompletion>,
    /// Submissions plus completions so far: a sequence number for "happened before" questions
    /// (a write that completed at a higher number than a read's submission raced it).
    pub events: u64,
    /// I/Os submitted and completed since the start (in-flight accounting: their difference is
    /// the number of owned slots).
    submitted: u64,
    completed: u64,
    /// Completions of I/Os carried past the end of the measured phase ([`Reactor::carry`]):
    /// the owner, the latency, and whether it succeeded. The executor drains it after each wait.
    pub carried_done: Vec<(Owner, Duration, bool)>,
}

impl Reactor {
    pub fn new(queue: Box<dyn IoQueue>) -> Reactor {
        Reactor {
            clock: queue.clock(),
            machine: queue.machine(),
            pool_cap: POOL_PER_SIZE.max(queue.depth()),
            queue,
            owners: Vec::new(),
            free: Vec::new(),
            pool: FxHashMap::default(),
            batch: Vec::new(),
            events: 0,
            submitted: 0,
            completed: 0,
            carried_done: Vec::new(),
        }
    }

    pub fn now(&self) -> Instant {
        self.clock.now()
    }

    pub fn clock(&self) -> &Arc<dyn Clock> {
        &self.clock
    }

    /// Where the host counters come from (the queue's machine: none on the simulated device).
    pub fn machine(&self) -> &Arc<dyn Machine> {
        &self.machine
    }

    pub fn engine_name(&self) -> &'static str {
        self.queue.engine_name()
    }

    pub fn in_flight(&self) -> usize {
        self.queue.in_flight()
    }

    pub fn has_room(&self) -> bool {
        self.queue.in_flight() < self.queue.depth()
    }

    /// True if `n` more requests fit in the queue.
    pub fn has_room_for(&self, n: usize) -> bool {
        self.queue.in_flight().saturating_add(n) <= self.queue.depth()
    }

    pub fn open_file(&mut self, path: &Path, mode: OpenMode) -> Result<usize, IoError> {
        self.queue.open_file(path, mode)
    }

    /// The size in bytes of an open file.
    pub fn file_len(&self, file: usize) -> Result<u64, IoError> {
        self.queue.file_len(file)
    }

    pub fn close_file(&mut self, file: usize) {
        self.queue.close_file(file);
    }

    pub fn remove_file(&mut self, path: &Path) -> Result<(), IoError> {
        self.queue.remove_file(path)
    }

    /// A buffer of `len` bytes (reused when one is free; contents unspecified).
    pub fn buf(&mut self, len: usize) -> AlignedBuf {
        self.pool
            .get_mut(&len)
            .and_then(Vec::pop)
            .unwrap_or_else(|| AlignedBuf::zeroed(len))
    }

    /// Returns a buffer to the pool.
    pub fn give_back(&mut self, b: AlignedBuf) {
        let v = self.pool.entry(b.len()).or_default();
        if v.len() < self.pool_cap {
            v.push(b);
        }
    }

    /// Submits `len` bytes of `buf` (all of it for reads and writes when `len` is `None`).
    pub fn submit(
        &mut self,
        owner: Owner,
        op: IoOp,
        file: usize,
        offset: u64,
        buf: AlignedBuf,
        len: Option<usize>,
    ) -> Result<(), EngineError> {
        let len = len.unwrap_or(buf.len());
        let slot = Slot {
            owner,
            submitted: self.clock.now(),
            op,
            file,
            offset,
            len,
            hung: false,
            carried: false,
        };
        let tag = match self.free.pop() {
            Some(i) => {
                assert!(
                    self.owners[i].is_none(),
                    "reactor: tag {i} reused while its I/O is in flight"
                );
                self.owners[i] = Some(slot);
                i
            }
            None => {
                self.owners.push(Some(slot));
                self.owners.len() - 1
            }
        };
        self.events += 1;
        self.submitted += 1;
        self.check_in_flight();
        self.queue.submit(IoRequest {
            op,
            file,
            offset,
            len,
            buf,
            tag: tag as u64,
        })?;
        Ok(())
    }

    /// Waits until a completion arrives or `deadline` passes (sleeping on the clock when nothing
    /// is in flight), then calls `route` for every completion with its owner. The completion's
    /// buffer goes back to the pool afterwards.
    pub fn wait(
        &mut self,
        deadline: Instant,
        mut route: impl FnMut(&mut Reactor, Owner, &mut IoCompletion) -> Result<(), EngineError>,
    ) -> Result<(), EngineError> {
        let timeout = deadline.saturating_duration_since(self.clock.now());
        let mut batch = std::mem::take(&mut self.batch);
        batch.clear();
        if self.queue.in_flight() > 0 {
            if timeout.is_zero() {
                self.queue.reap_timeout(0, Duration::ZERO, &mut batch)?;
            } else {
                self.queue.reap_timeout(1, timeout, &mut batch)?;
            }
        } else if !timeout.is_zero() {
            // Nothing in flight: only a timer can be due. Sleep in short steps on a real clock,
            // so an interruption is noticed promptly.
            self.clock.sleep(timeout.min(Duration::from_millis(50)));
        }
        let mut result = Ok(());
        let mut completions = batch.drain(..).peekable();
        while let Some(mut c) = completions.next() {
            // The next read's data is verified after this completion's: its first lines start
            // coming into the caches now (a read's buffer is in memory, not in the caches).
            if let Some(next) = completions.peek() {
                if next.req.op == IoOp::Read && next.result.is_ok() {
                    mbx_store::page::prefetch_head(next.req.buf.as_slice());
                }
            }
            let tag = c.req.tag as usize;
            let slot = self.owners.get_mut(tag).and_then(Option::take);
            // Every completion is of an I/O this reactor submitted and still owns: the queue
            // completes each request once.
            assert!(
                slot.is_some(),
                "reactor: a completion (tag {tag}) that no I/O in flight owns"
            );
            let owner = slot.map(|s| s.owner);
            if let Some(s) = slot {
                assert!(
                    self.completed < self.submitted,
                    "reactor: more I/Os completed ({}) than submitted ({})",
                    self.completed + 1,
                    self.submitted
                );
                self.completed += 1;
                self.free.push(tag);
                if s.carried {
                    self.carried_done
                        .push((s.owner, c.latency, c.result.is_ok()));
                }
            }
            self.events += 1;
            if let (Some(owner), true) = (owner, result.is_ok()) {
                result = route(self, owner, &mut c);
            }
            self.give_back(c.req.buf);
        }
        drop(completions);
        self.batch = batch;
        self.check_in_flight();
        result
    }

    /// In-flight accounting: submitted = completed + in flight, where in flight is the slots
    /// owned; and the queue holds no I/O without an owner.
    fn check_in_flight(&self) {
        let owned = self.owners.len() - self.free.len();
        assert_eq!(
            self.submitted - self.completed,
            owned as u64,
            "reactor: {} submitted and {} completed, but {owned} in flight",
            self.submitted,
            self.completed
        );
        assert!(
            self.queue.in_flight() <= owned,
            "reactor: the queue holds {} I/Os, {owned} owned",
            self.queue.in_flight()
        );
    }

    /// The I/Os outstanding for longer than `threshold` at `now` that were not reported yet;
    /// each is reported once. A scan of the slots in flight (bounded by the queue depth).
    pub fn newly_hung(&mut self, now: Instant, threshold: Duration) -> Vec<HungIo> {
        let mut out = Vec::new();
        for s in self.owners.iter_mut().flatten() {
            let age = now.saturating_duration_since(s.submitted);
            if !s.hung && age > threshold {
                s.hung = true;
                out.push(HungIo {
                    op: s.op,
                    path: self.queue.file_path(s.file),
                    offset: s.offset,
                    len: s.len,
                    outstanding: age,
                });
            }
        }
        out
    }

    /// Marks every I/O in flight as carried past the end of the measured phase (its completion
    /// goes to [`Reactor::carried_done`] too) and returns each one's owner and age at `now`.
    pub fn carry(&mut self, now: Instant) -> Vec<(Owner, Duration)> {
        self.owners
            .iter_mut()
            .flatten()
            .map(|s| {
                s.carried = true;
                (s.owner, now.saturating_duration_since(s.submitted))
            })
            .collect()
    }

    /// The carried I/Os still in flight, with their age at `now`, no longer carried: what the
    /// test stops waiting for (it ends, or gives up on them).
    pub fn uncarry(&mut self, now: Instant) -> Vec<(Owner, Duration)> {
        self.owners
            .iter_mut()
            .flatten()
            .filter(|s| s.carried)
            .map(|s| {
                s.carried = false;
                (s.owner, now.saturating_duration_since(s.submitted))
            })
            .collect()
    }

    /// The I/O in flight the longest, with how long it has been outstanding at `now`.
    pub fn oldest_in_flight(&self, now: Instant) -> Option<HungIo> {
        let s = self.owners.iter().flatten().min_by_key(|s| s.submitted)?;
        Some(HungIo {
            op: s.op,
            path: self.queue.file_path(s.file),
            offset: s.offset,
            len: s.len,
            outstanding: now.saturating_duration_since(s.submitted),
        })
    }

    /// Gives up on the I/O in flight: the queue, with the buffers the kernel may still read or
    /// write, is leaked on purpose (never freed, never waited for: a hung I/O would hold the
    /// process forever) and replaced by one that accepts nothing. For the end of a test only.
    pub fn abandon(&mut self) {
        let gone = std::mem::replace(
            &mut self.queue,
            Box::new(Abandoned {
                base: QueueBase {
                    files: mbx_io::Files::new(Vec::new()),
                    depth: 0,
                    engine: "abandoned",
                },
                clock: self.clock.clone(),
            }),
        );
        std::mem::forget(gone);
        self.owners.clear();
        self.free.clear();
        // The abandoned I/Os never complete: none is in flight any more.
        self.completed = self.submitted;
    }

    /// Bytes transferred by a completion, or the error naming the file and offset.
    pub fn check(&self, c: &IoCompletion) -> Result<usize, IoError> {
        c.check_in(self.queue.as_ref())
    }

    /// Waits for every file removal asked so far; returns a failure not yet reported.
    pub fn wait_removals(&mut self) -> Result<(), IoError> {
        self.queue.wait_removals()
    }
}

/// What a reactor's queue is once it gave up on its I/O in flight ([`Reactor::abandon`]):
/// nothing in flight, nothing accepted.
struct Abandoned {
    base: QueueBase,
    clock: Arc<dyn Clock>,
}

impl IoQueue for Abandoned {
    fn submit(&mut self, _req: IoRequest) -> Result<(), IoError> {
        Err(IoError::Unsupported(
            "the I/O queue was abandoned (a hung I/O never completed)".into(),
        ))
    }
    fn reap_for(&mut self, _want: Reap, _out: &mut Vec<IoCompletion>) -> Result<(), IoError> {
        Ok(())
    }
    fn in_flight(&self) -> usize {
        0
    }
    fn base(&self) -> &QueueBase {
        &self.base
    }
    fn clock(&self) -> Arc<dyn Clock> {
        self.clock.clone()
    }
}

#[cfg(test)]
mod tests {
    /// The pool keeps every buffer of a size up to the queue's depth (beyond the old fixed 64),
    /// and hands the same ones back: a run with more I/Os of one size in flight than 64 does not
    /// allocate per I/O.
    #[test]
    fn the_pool_keeps_as_many_buffers_as_the_queue_holds() {
        use mbx_io::sim::{LatencyModel, SimClock, SimDevice, SimQueue};
        let clock = std::sync::Arc::new(SimClock::new());
        let q = SimQueue::new(SimDevice::new(), clock, 300, LatencyModel::typical(), 1);
        let mut r = super::Reactor::new(Box::new(q));
        let bufs: Vec<_> = (0..300).map(|_| r.buf(32768)).collect();
        let addrs: std::collections::HashSet<usize> = bufs
            .iter()
            .map(|b| b.as_slice().as_ptr() as usize)
            .collect();
        for b in bufs {
            r.give_back(b);
        }
        r.give_back(mbx_io::AlignedBuf::zeroed(32768));
        assert_eq!(r.pool.get(&32768).map(Vec::len), Some(300));
        for _ in 0..300 {
            let b = r.buf(32768);
            assert!(addrs.contains(&(b.as_slice().as_ptr() as usize)));
        }
    }

    /// A reactor (and so each database it owns) can move to its own thread: the engine's way to
    /// use every core is several reactors, each with some databases.
    #[test]
    #[should_panic(expected = "reactor: 1 submitted and 0 completed, but 0 in flight")]
    fn in_flight_accounting_is_checked() {
        use mbx_io::sim::{LatencyModel, SimClock, SimDevice, SimQueue};
        let clock = std::sync::Arc::new(SimClock::new());
        let q = SimQueue::new(SimDevice::new(), clock, 4, LatencyModel::typical(), 1);
        let mut r = super::Reactor::new(Box::new(q));
        // An I/O counted as submitted that no slot owns.
        r.submitted = 1;
        r.check_in_flight();
    }

    #[test]
    fn a_reactor_can_run_on_another_thread() {
        fn is_send<T: Send>() {}
        is_send::<super::Reactor>();
        is_send::<crate::db::Database>();
    }
}
