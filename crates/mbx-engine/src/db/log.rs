//! The log writer of one database: the log buffer, commit grouping, log files and their
//! roll-over, all through the reactor.
//!
//! Two positions are kept apart:
//! - the log *sequence* (`LogSeq`): payload bytes appended to the buffer so far, a counter the
//!   cache stamps changes with (a change is "at" the sequence just past its bytes);
//! - the [`Lsn`]: where a record really is (generation x file size + offset), what records and
//!   checkpoints carry.
//!
//! When a record is formed it covers whole transactions; the writer remembers which sequence range
//! each record holds until a checkpoint no longer needs it, so a sequence maps to the Lsn of the
//! record that holds it.
//!
//! Files: the writer keeps a spare file created ahead of need (header written through the queue),
//! so a roll-over never opens, writes or truncates a file inside the loop.

use std::collections::VecDeque;
use std::path::PathBuf;
use std::time::Instant;

use super::logfmt::{
    encode_log_header, encode_record, log_file_name, record_size, txn_payload, Lsn, RedoEntry,
    LOG_FILE_SIZE, LOG_SECTOR,
};
use mbx_io::{IoOp, OpenMode};

use crate::reactor::{Owner, Reactor};
use crate::stats::FlushReason;
use crate::EngineError;

/// Largest log write: a record takes whole transactions up to this size (one bigger
/// transaction is written alone).
pub(crate) const MAX_LOG_WRITE: usize = 256 * 1024;
/// The log buffer of a database. As ESE does, the writer writes it without waiting for a
/// commit once half of it is filled ([`FlushReason::Capacity`]).
pub(crate) const LOG_BUFFER_BYTES: u64 = 64 * 1024;

/// The flush policy: why a record should be written now, if at all, given what is buffered
/// (`buffered` payload bytes, nothing if 0), whether a durable commit waits for it, whether a
/// page write waits for the log to reach further than it is durable, and whether the buffer is
/// being drained (shutdown). Only one record is in flight per database: the caller asks only when
/// none is (commits arriving meanwhile go out together in the next record: commit grouping).
pub(crate) fn flush_reason(
    buffered: u64,
    commit_waits: bool,
    page_waits: bool,
    drain: bool,
) -> Option<FlushReason> {
    if buffered == 0 {
        None
    } else if commit_waits {
        Some(FlushReason::Commit)
    } else if buffered >= LOG_BUFFER_BYTES / 2 {
        Some(FlushReason::Capacity)
    } else if page_waits {
        Some(FlushReason::WriteAhead)
    } else if drain {
        Some(FlushReason::Shutdown)
    } else {
        None
    }
}

/// One log file the writer knows.
#[derive(Debug)]
pub(crate) struct LogFile {
    pub gen: u64,
    pub file: usize,
    pub path: PathBuf,
    /// Bytes used (header + records).
    pub used: u64,
    /// No more records go here.
    pub closed: bool,
    /// Requests in flight on it (writes, replication reads).
    pub in_flight: u32,
    /// Bytes read by the replication reader.
    pub replicated_to: u64,
    /// Bytes durable on disk: the header and every record whose write completed (records are
    /// whole sectors, written one at a time, never rewritten), what replication may read of a
    /// file still being written.
    pub durable: u64,
    /// Its header is written (records may follow).
    pub ready: bool,
    /// A write to it failed (counted as an I/O error with `continue_on_errors`): what
    /// replication reads of it cannot be verified.
    pub write_failed: bool,
}

/// One buffered transaction's log.
#[derive(Debug, Clone, Copy)]
struct Pending {
    bytes: u64,
    ops: u32,
    entries: usize,
}

/// Where the records written so far are: for each, the log sequence just past its last change
/// and its Lsn, oldest first, until a checkpoint no longer needs them.
#[derive(Debug, Default)]
pub(crate) struct RecordMap {
    placed: VecDeque<(u64, Lsn)>,
}

impl RecordMap {
    /// A record holding the changes up to sequence `seq_end` was placed at `lsn`.
    pub fn place(&mut self, seq_end: u64, lsn: Lsn) {
        // Records are placed in log order, each holding changes no earlier than the last.
        if let Some(&(end, at)) = self.placed.back() {
            assert!(
                end <= seq_end && at < lsn,
                "log: record at {lsn:?} (changes to {seq_end}) placed after {at:?} (changes to {end})"
            );
        }
        self.placed.push_back((seq_end, lsn));
    }

    /// The Lsn of the record holding the change that ends at `seq`: the first record ending at
    /// or past it (a change ending exactly where a record ends is in that record).
    pub fn record_of(&self, seq: u64) -> Option<Lsn> {
        self.placed
            .iter()
            .find(|&&(end, _)| end >= seq)
            .map(|&(_, lsn)| lsn)
    }

    /// Forgets records wholly before the change ending at `seq`.
    pub fn forget_before(&mut self, seq: u64) {
        while self.placed.front().is_some_and(|&(end, _)| end < seq) {
            self.placed.pop_front();
        }
    }
}

/// The log writer of one database.
pub(crate) struct LogWriter {
    db: usize,
    dir: PathBuf,
    database_id: u64,
    direct: bool,
    /// Files from the oldest still needed to the spare.
    pub files: VecDeque<LogFile>,
    /// Offset of the next record in the current file.
    tail: u64,
    pending: VecDeque<Pending>,
    entries: VecDeque<RedoEntry>,
    /// The entries of the record being encoded (reused: no allocation per record).
    record_entries: Vec<RedoEntry>,
    buffered_bytes: u64,
    /// Sequence just past the last change appended.
    pub seq_buffered: u64,
    /// Sequence up to which the log is durable.
    pub seq_durable: u64,
    in_flight: bool,
    placed: RecordMap,
    /// Sessions waiting for a durable commit: (session, sequence).
    pub commit_waiters: Vec<(usize, u64)>,
    /// Files to delete once nothing needs them (earlier runs' logs, retired generations).
    pub retire: Vec<PathBuf>,
    /// Log writes submitted (records), for the shape checks.
    pub records_written: u64,
    /// Circular logging: files the checkpoint no longer needs are deleted.
    pub circular: bool,
    /// Passive copies read the log: a file is kept until it has been read.
    pub replicated: bool,
    /// Files closed but kept ([`LogWriter::close_finished`]), oldest first.
    pub kept: Vec<KeptLog>,
}

/// A log file written, closed and kept on disk.
#[derive(Debug, Clone)]
pub(crate) struct KeptLog {
    pub gen: u64,
    pub path: PathBuf,
    /// Bytes used (header + records).
    pub used: u64,
}

impl LogWriter {
    /// A writer that continues at `next_gen` in `dir`; opens the first file and its spare.
    pub fn new(
        reactor: &mut Reactor,
        db: usize,
        dir: PathBuf,
        database_id: u64,
        direct: bool,
        next_gen: u64,
        now: Instant,
    ) -> Result<LogWriter, EngineError> {
        let mut w = LogWriter {
            db,
            dir,
            database_id,
            direct,
            files: VecDeque::new(),
            tail: LOG_SECTOR as u64,
            pending: VecDeque::new(),
            entries: VecDeque::new(),
            record_entries: Vec::new(),
            buffered_bytes: 0,
            seq_buffered: 0,
            seq_durable: 0,
            in_flight: false,
            placed: RecordMap::default(),
            commit_waiters: Vec::new(),
            retire: Vec::new(),
            records_written: 0,
            circular: true,
            replicated: false,
            kept: Vec::new(),
        };
        w.create_file(reactor, next_gen.max(1), now)?;
        w.create_file(reactor, next_gen.max(1) + 1, now)?;
        Ok(w)
    }

    /// Opens log generation `gen` and writes its header through the queue.
    fn create_file(
        &mut self,
        reactor: &mut Reactor,
        gen: u64,
        now: Instant,
    ) -> Result<(), EngineError> {
        let path = self.dir.join(log_file_name(gen));
        let file = reactor.open_file(
            &path,
            OpenMode {
                direct: self.direct,
                write_through: true,
                write: true,
                create: true,
            },
        )?;
        let mut head = reactor.buf(LOG_SECTOR);
        let created = reactor
            .clock()
            .wall()
            .duration_since(std::time::UNIX_EPOCH)
            .map(|d| d.as_secs())
            .unwrap_or(0);
        encode_log_header(head.as_mut_slice(), gen, self.database_id, created);
        let _ = now;
        reactor.submit(
            Owner::LogCreate {
                db: self.db,
                gen,
                step: 0,
            },
            IoOp::Write,
            file,
            0,
            head,
            None,
        )?;
        self.files.push_back(LogFile {
            gen,
            file,
            path,
            used: LOG_SECTOR as u64,
            closed: false,
            in_flight: 1,
            replicated_to: 0,
            durable: 0,
            ready: false,
            write_failed: false,
        });
        Ok(())
    }

    /// A step of creating a file completed.
    pub fn created(
        &mut self,
        reactor: &mut Reactor,
        gen: u64,
        step: u8,
    ) -> Result<(), EngineError> {
        let Some(f) = self.files.iter_mut().find(|f| f.gen == gen) else {
            return Ok(());
        };
        match step {
            0 => {
                // Preallocate the file so log writes never extend it (no journal commit per
                // write, no punt to a worker thread).
                let file = f.file;
                let buf = reactor.buf(0);
                reactor.submit(
                    Owner::LogCreate {
                        db: self.db,
                        gen,
                        step: 1,
                    },
                    IoOp::Allocate,
                    file,
                    0,
                    buf,
                    Some(LOG_FILE_SIZE),
                )
            }
            _ => {
                assert!(
                    f.in_flight > 0,
                    "log: generation {gen} created with nothing in flight"
                );
                f.in_flight -= 1;
                f.ready = true;
                Ok(())
            }
        }
    }

    /// Appends one transaction's log: `bytes` of payload, `ops` operations, its redo entries.
    /// Returns the log sequence just past it (what its commit waits for).
    pub fn append(
        &mut self,
        bytes: u32,
        ops: u32,
        entries: impl Iterator<Item = RedoEntry>,
    ) -> u64 {
        let before = self.entries.len();
        self.entries.extend(entries);
        let n = self.entries.len() - before;
        let bytes = txn_payload(bytes, n);
        self.pending.push_back(Pending {
            bytes,
            ops,
            entries: n,
        });
        self.buffered_bytes += bytes;
        self.seq_buffered += bytes;
        self.seq_buffered
    }

    /// The sequence a transaction of `bytes` with `entries` redo entries will end at if it is
    /// appended next (for stamping its pages before it is).
    pub fn next_seq(&self, bytes: u32, entries: usize) -> u64 {
        self.seq_buffered + txn_payload(bytes, entries)
    }

    /// Writes a record if one is due ([`flush_reason`]): a durable commit waits, half the buffer
    /// is filled, `need` (a page write waits for the log to reach it), or `drain`. Returns why
    /// a record was written, if one was.
    pub fn maybe_flush(
        &mut self,
        reactor: &mut Reactor,
        now: Instant,
        drain: bool,
        need: Option<u64>,
    ) -> Result<Option<FlushReason>, EngineError> {
        if self.in_flight {
            return Ok(None);
        }
        let Some(reason) = flush_reason(
            self.buffered_bytes,
            !self.commit_waiters.is_empty(),
            need.is_some_and(|n| n > self.seq_durable),
            drain,
        ) else {
            return Ok(None);
        };
        let (payload, ops, n_entries, txns) = self.next_record();
        let size = record_size(payload as usize, n_entries) as u64;
        if self.tail + size > LOG_FILE_SIZE as u64 && !self.roll_over(reactor, now)? {
            return Ok(None);
        }
        let n = self.files.len();
        let Some(cur) = self.files.get_mut(n.saturating_sub(2)) else {
            return Ok(None);
        };
        if !cur.ready {
            return Ok(None);
        }
        cur.in_flight += 1;
        let (gen, file) = (cur.gen, cur.file);
        let offset = self.tail;
        assert!(
            offset + size <= LOG_FILE_SIZE as u64,
            "log: a record of {size} bytes at offset {offset} runs past the end of generation {gen}"
        );
        self.tail += size;
        cur.used = self.tail;
        let lsn = Lsn::new(gen, offset);
        for _ in 0..txns {
            self.pending.pop_front();
        }
        // Log buffer accounting: the bytes buffered are the pending transactions' bytes.
        assert!(
            payload <= self.buffered_bytes && n_entries <= self.entries.len(),
            "log: a record of {payload} bytes and {n_entries} entries, {} bytes and {} entries buffered",
            self.buffered_bytes,
            self.entries.len()
        );
        self.buffered_bytes -= payload;
        let seq_end = self.seq_buffered - self.buffered_bytes;
        self.placed.place(seq_end, lsn);
        self.record_entries.clear();
        self.record_entries.extend(self.entries.drain(..n_entries));
        let mut buf = reactor.buf(size as usize);
        encode_record(
            buf.as_mut_slice(),
            lsn,
            payload as usize,
            ops,
            &self.record_entries,
        );
        self.in_flight = true;
        self.records_written += 1;
        reactor.submit(
            Owner::LogWrite {
                db: self.db,
                gen,
                end_lsn: seq_end,
            },
            IoOp::Write,
            file,
            offset,
            buf,
            None,
        )?;
        Ok(Some(reason))
    }

    /// The next record: its payload, operations and entries, and how many buffered
    /// transactions it takes (whole ones, up to the largest write, at least one).
    fn next_record(&self) -> (u64, u32, usize, usize) {
        // Whole transactions, up to the largest write (at least one).
        let mut payload = 0u64;
        let mut ops = 0u32;
        let mut n_entries = 0usize;
        let mut txns = 0usize;
        for p in &self.pending {
            let with = payload + p.bytes;
            if txns > 0 && record_size(with as usize, n_entries + p.entries) > MAX_LOG_WRITE {
                break;
            }
            payload = with;
            ops += p.ops;
            n_entries += p.entries;
            txns += 1;
        }
        (payload, ops, n_entries, txns)
    }

    /// The current file is full: records go on in the spare, and a new spare is created. False
    /// while the spare is not ready (its completion retries).
    fn roll_over(&mut self, reactor: &mut Reactor, now: Instant) -> Result<bool, EngineError> {
        // Roll over to the spare, if it is ready (its completion retries otherwise).
        let ready =
            self.files.iter().rev().nth(0).is_some_and(|f| f.ready) && self.files.len() >= 2;
        if !ready {
            return Ok(false);
        }
        let n = self.files.len();
        if let Some(cur) = self.files.get_mut(n - 2) {
            cur.closed = true;
            cur.used = self.tail;
        }
        self.tail = LOG_SECTOR as u64;
        let next = self.files.back().map(|f| f.gen + 1).unwrap_or(1);
        self.create_file(reactor, next, now)?;
        Ok(true)
    }

    /// A record write completed: the log is durable up to `seq_end`. Returns the sessions whose
    /// commits are now durable (into `done`).
    pub fn written(&mut self, gen: u64, seq_end: u64, done: &mut Vec<usize>) {
        assert!(
            self.in_flight,
            "log: a record write completed with none in flight"
        );
        // One record is in flight at a time: the log becomes durable in order, never past what
        // was buffered.
        assert!(
            seq_end >= self.seq_durable && seq_end <= self.seq_buffered,
            "log: durable to {seq_end} after {}, with {} buffered",
            self.seq_durable,
            self.seq_buffered
        );
        self.in_flight = false;
        self.seq_durable = self.seq_durable.max(seq_end);
        if let Some(f) = self.files.iter_mut().find(|f| f.gen == gen) {
            assert!(
                f.in_flight > 0,
                "log: a write of generation {gen} completed with none in flight"
            );
            f.in_flight -= 1;
            // One record write is in flight at a time and `used` moves only when one is
            // submitted, so everything up to it is on disk now.
            f.durable = f.used;
        }
        let durable = self.seq_durable;
        self.commit_waiters.retain(|&(s, seq)| {
            if seq <= durable {
                done.push(s);
                false
            } else {
                true
            }
        });
    }

    /// The Lsn of the record holding the change that ends at sequence `seq` (the first record
    /// ending at or past it), or the position of the next record when it is still buffered.
    pub fn lsn_of(&self, seq: u64) -> Lsn {
        self.placed
            .record_of(seq)
            .unwrap_or_else(|| self.tail_lsn())
    }

    /// Where the next record will go.
    pub fn tail_lsn(&self) -> Lsn {
        let n = self.files.len();
        match self.files.get(n.saturating_sub(2)) {
            // A file filled to its last byte: the next record starts the next file.
            Some(f) if self.tail >= LOG_FILE_SIZE as u64 => Lsn::new(f.gen + 1, LOG_SECTOR as u64),
            Some(f) => Lsn::new(f.gen, self.tail),
            None => Lsn::new(1, LOG_SECTOR as u64),
        }
    }

    /// Forgets record positions a checkpoint at sequence `seq` no longer needs.
    pub fn forget_before(&mut self, seq: u64) {
        self.placed.forget_before(seq);
    }

    /// Closes and schedules for deletion every file wholly before generation `gen` that nothing
    /// uses (circular logging), keeping the current file and the spare.
    pub fn retire_before(&mut self, reactor: &mut Reactor, gen: u64) {
        let replicated = self.replicated;
        while self.circular && self.files.len() > 2 {
            let Some(f) = self.files.front() else { break };
            let copied = !replicated || f.replicated_to >= f.used;
            if !(f.closed && f.in_flight == 0 && copied && f.gen < gen) {
                break;
            }
            if let Some(f) = self.files.pop_front() {
                reactor.close_file(f.file);
                self.retire.push(f.path);
            }
        }
    }

    /// Closes the files wholly written before the current one (nothing in flight on them, read
    /// by the replication reader when replicated) without deleting them, and remembers them in
    /// [`LogWriter::kept`]: with circular logging off, a long test would otherwise hold every
    /// log file it wrote open (500 per database in a Soft Recovery test).
    pub fn close_finished(&mut self, reactor: &mut Reactor) {
        while self.files.len() > 2 {
            let Some(f) = self.files.front() else { break };
            let copied = !self.replicated || f.replicated_to >= f.used;
            if !(f.closed && f.in_flight == 0 && copied) {
                break;
            }
            if let Some(f) = self.files.pop_front() {
                reactor.close_file(f.file);
                self.kept.push(KeptLog {
                    gen: f.gen,
                    path: f.path,
                    used: f.used,
                });
            }
        }
    }

    /// The log files this writer leaves on disk, oldest first: the ones closed and kept, then
    /// the ones still open (the current file and the spare). Files retired by circular logging
    /// are not listed (they are being deleted).
    pub fn files_on_disk(&self) -> Vec<PathBuf> {
        let mut files: Vec<(u64, PathBuf)> = self
            .kept
            .iter()
            .map(|k| (k.gen, k.path.clone()))
            .chain(self.files.iter().map(|f| (f.gen, f.path.clone())))
            .collect();
        files.sort_by_key(|(gen, _)| *gen);
        files.into_iter().map(|(_, path)| path).collect()
    }

    /// A write to log generation `gen` failed (and was gone past): its content is not what
    /// the writer wrote.
    pub fn write_failed(&mut self, gen: u64) {
        if let Some(f) = self.files.iter_mut().find(|f| f.gen == gen) {
            f.write_failed = true;
        }
    }

    /// Whether the log files are opened with O_DIRECT.
    pub fn direct(&self) -> bool {
        self.direct
    }

    /// True if anything is buffered or being written.
    pub fn busy(&self) -> bool {
        self.in_flight || !self.pending.is_empty()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    #[should_panic(expected = "placed after")]
    fn records_are_placed_in_log_order() {
        let mut m = RecordMap::default();
        m.place(100, Lsn::new(1, 8192));
        m.place(200, Lsn::new(1, 4096));
    }

    #[test]
    fn the_flush_policy_follows_ese() {
        use FlushReason::*;
        let half = LOG_BUFFER_BYTES / 2;
        // Nothing buffered: nothing to write, whatever waits.
        assert_eq!(flush_reason(0, true, true, true), None);
        // Lazily committed log alone is not written ...
        assert_eq!(flush_reason(half - 1, false, false, false), None);
        // ... until half the buffer is used, a durable commit or a page write waits, or at
        // shutdown.
        assert_eq!(flush_reason(half, false, false, false), Some(Capacity));
        assert_eq!(flush_reason(100, true, false, false), Some(Commit));
        assert_eq!(flush_reason(100, false, true, false), Some(WriteAhead));
        assert_eq!(flush_reason(100, false, false, true), Some(Shutdown));
        // A durable commit is the reason when there are several.
        assert_eq!(flush_reason(half, true, true, true), Some(Commit));
    }

    #[test]
    fn a_change_maps_to_the_record_holding_it() {
        let mut m = RecordMap::default();
        // Records hold the changes ending in (0, 100], (100, 250], (250, 300].
        m.place(100, Lsn::new(1, 4096));
        m.place(250, Lsn::new(1, 8192));
        m.place(300, Lsn::new(2, 4096));
        assert_eq!(m.record_of(1), Some(Lsn::new(1, 4096)));
        // A change ending exactly where a record ends is in that record, not the next.
        assert_eq!(m.record_of(100), Some(Lsn::new(1, 4096)));
        assert_eq!(m.record_of(101), Some(Lsn::new(1, 8192)));
        assert_eq!(m.record_of(300), Some(Lsn::new(2, 4096)));
        // Still buffered: no record yet.
        assert_eq!(m.record_of(301), None);
        // A checkpoint at the change ending at 250 still needs its record.
        m.forget_before(250);
        assert_eq!(m.record_of(250), Some(Lsn::new(1, 8192)));
        assert_eq!(m.record_of(1), Some(Lsn::new(1, 8192)));
    }
}
