//! The generation journal of one database (`mbx_store::journal`, docs/store-format.md): each data
//! page's last write generation known durable, kept beside the database so that a page rolled
//! back to an older copy between runs is found by the next run's reads (and by `verify` and the
//! Checksum test, which read the file themselves).
//!
//! **Writing.** A page write that completes joins `uncovered`. When a checkpoint syncs the
//! database file, the writes completed before that sync was submitted are durable: they move to
//! `sealed` as it is submitted, and when it completes their entries are applied (to the chunk in
//! memory, or kept in `overflow` when the chunk is not held) and written back, then the journal
//! file is synced. So an entry on disk never leads its page: after a crash the journal may lag
//! (a page ahead of its entry is fine), never lead. Any subset of the entries written is safe.
//!
//! **Checking.** A read of a page the page tracker does not remember (it would know better)
//! compares the page's generation with its entry: lower is stale (rolled back, or a write lost,
//! since that write was made durable). The entries are held in 4 KiB chunks (512 pages, 16 MiB
//! of database), at most [`WINDOW_BYTES`] per database: a database of up to 32 GiB has its whole
//! journal in memory (read once, at the start); a larger one keeps the chunks most recently
//! used, replacing one on demand at most once per [`MISSES_PER_LOAD`] misses. A read whose chunk
//! is on its way is checked when it arrives (at most [`PENDING_CAP`] waiting); others are not
//! checked against the journal (they are for everything else).
//!
//! Every journal I/O goes through the reactor (owner `Owner::Journal`), at most
//! [`JOURNAL_SLOTS`] at a time; loads and write-backs never overlap, so a chunk read sees every
//! entry written before it. A journal I/O error turns the journal off for the rest of the run
//! (a line says so); it never stops the test.

use std::path::PathBuf;

use rustc_hash::FxHashMap;

use mbx_io::{IoCompletion, IoOp, OpenMode};
use mbx_store::header::HEADER_PAGES;
use mbx_store::journal::{
    entry_at, is_stale, journal_len, JournalHeader, ENTRY_BYTES, JOURNAL_HEADER_BYTES,
};

use super::finding::Finding;
use crate::reactor::{JournalIo, Owner, Reactor};
use crate::EngineError;

/// Bytes of journal per chunk.
const CHUNK_BYTES: usize = 4096;
/// Pages per chunk.
const CHUNK_ENTRIES: u64 = (CHUNK_BYTES / ENTRY_BYTES) as u64;
/// Most journal bytes held in memory per database: the entries of 1 Mi pages (32 GiB).
pub(crate) const WINDOW_BYTES: usize = 8 << 20;
/// Journal I/Os in flight per database (part of the queue depth).
pub(crate) const JOURNAL_SLOTS: usize = 4;
/// Reads met while their chunk was on its way, checked when it arrives; beyond these, unchecked.
const PENDING_CAP: usize = 4096;
/// Page writes waiting for the sync that makes them durable: at this many, the next checkpoint
/// is asked for at once (memory stays bounded whatever the write rate).
pub(crate) const UNCOVERED_CAP: usize = 1 << 16;
/// Once the window is full, a chunk is replaced on demand at most once per this many misses.
const MISSES_PER_LOAD: u64 = 16;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum State {
    /// The header is being read or written.
    Opening,
    Ready,
    /// No journal this run (block device, an I/O error, or read-only and absent).
    Off,
}

#[derive(Debug)]
struct Chunk {
    data: Box<[u8]>,
    dirty: bool,
    /// Last use (for replacing the least recently used).
    used: u64,
    /// Reactor sequence number of the latest entry applied to it: a BDM read submitted before
    /// that may have read the page before the write the entry records.
    stamp: u64,
}

/// A write-back item.
#[derive(Debug)]
enum Item {
    /// A held chunk (its bytes as they are when submitted).
    Chunk(u64),
    /// Entries of pages whose chunk is not held: from `first`, one per page.
    Run { first: u64, gens: Vec<u64> },
}

/// The generation journal of one database.
#[derive(Debug)]
pub(crate) struct Journal {
    path: Option<PathBuf>,
    file: Option<usize>,
    db: usize,
    database_id: u64,
    data_pages: u64,
    writable: bool,
    state: State,
    chunks: FxHashMap<u64, Chunk>,
    /// Chunks held at most.
    capacity: usize,
    /// The next chunk read at the start, and where that stops (the window or the journal).
    prefetch: u64,
    prefetch_end: u64,
    loading: Vec<u64>,
    wanted: Option<u64>,
    misses: u64,
    tick: u64,
    /// Reads waiting for their chunk: (page, generation read, reactor sequence number before
    /// which the read began: an entry applied from then on may record a later write).
    pending: Vec<(u64, u64, u64)>,
    /// Page writes completed since the last sync was submitted: (page, generation).
    uncovered: Vec<(u64, u64)>,
    /// Page writes the sync in flight covers.
    sealed: Vec<(u64, u64)>,
    /// Durable page writes whose chunk is not held, to write as such.
    overflow: Vec<(u64, u64)>,
    /// Reactor sequence number when an entry last went to `overflow`.
    overflow_stamp: u64,
    dirty: Vec<u64>,
    items: Vec<Item>,
    writing: bool,
    syncing: bool,
    in_flight: usize,
    said_off: bool,
    /// Test-log lines to show (and keep as notes).
    pub lines: Vec<String>,
    /// Findings of waiting reads, resolved when their chunk arrived.
    pub resolved: Vec<(u64, Finding)>,
}

impl Journal {
    /// Opens the journal of the database `database_id` (`data_pages`) at `path` (`None`: a block
    /// device) and reads its header. `writable`: the run writes the database (it creates or
    /// replaces a journal that is missing or not this database's, and records writes); else a
    /// missing journal means no check.
    #[allow(clippy::too_many_arguments)]
    pub fn open(
        reactor: &mut Reactor,
        db: usize,
        path: Option<PathBuf>,
        database_id: u64,
        data_pages: u64,
        writable: bool,
    ) -> Result<Journal, EngineError> {
        let total_chunks = data_pages.div_ceil(CHUNK_ENTRIES);
        let capacity = WINDOW_BYTES / CHUNK_BYTES;
        let mut j = Journal {
            path,
            file: None,
            db,
            database_id,
            data_pages,
            writable,
            state: State::Off,
            chunks: FxHashMap::default(),
            capacity,
            prefetch: 0,
            prefetch_end: total_chunks.min(capacity as u64),
            loading: Vec::new(),
            wanted: None,
            misses: 0,
            tick: 0,
            pending: Vec::new(),
            uncovered: Vec::new(),
            sealed: Vec::new(),
            overflow: Vec::new(),
            overflow_stamp: 0,
            dirty: Vec::new(),
            items: Vec::new(),
            writing: false,
            syncing: false,
            in_flight: 0,
            said_off: false,
            lines: Vec::new(),
            resolved: Vec::new(),
        };
        let Some(path) = j.path.clone() else {
            j.off("the database is a block device, with no journal beside it".into());
            return Ok(j);
        };
        let mode = OpenMode::buffered(writable, writable);
        match reactor.open_file(&path, mode) {
            Ok(f) => j.file = Some(f),
            Err(e) => {
                j.off(format!("cannot open it ({e})"));
                return Ok(j);
            }
        }
        j.state = State::Opening;
        let buf = reactor_buf(reactor, JOURNAL_HEADER_BYTES);
        j.submit(reactor, JournalIo::Header, IoOp::Read, 0, buf)?;
        Ok(j)
    }

    fn name(&self) -> String {
        self.path
            .as_ref()
            .map_or_else(String::new, |p| p.display().to_string())
    }

    /// Turns the journal off for the rest of the run, saying why.
    fn off(&mut self, why: String) {
        if !self.said_off {
            self.said_off = true;
            let name = self.name();
            let name = if name.is_empty() {
                String::new()
            } else {
                format!(" {name}")
            };
            self.lines.push(format!(
                "Generation journal{name}: {why}; stale pages across runs are not checked or recorded in this run."
            ));
        }
        self.state = State::Off;
        self.chunks.clear();
        self.pending.clear();
        self.uncovered.clear();
        self.sealed.clear();
        self.overflow.clear();
        self.dirty.clear();
        self.items.clear();
        self.loading.clear();
        self.writing = false;
        self.syncing = false;
    }

    /// Bytes of memory the window may take.
    pub fn memory_bytes(&self) -> usize {
        (self.prefetch_end.max(self.chunks.len() as u64) as usize).saturating_mul(CHUNK_BYTES)
    }

    /// True while journal I/O is in flight or durable entries wait to be written: a clean
    /// shutdown waits for it.
    pub fn busy(&self) -> bool {
        self.in_flight > 0
            || self.writing
            || (self.state == State::Ready && (!self.dirty.is_empty() || !self.overflow.is_empty()))
    }

    /// True when enough page writes wait for a sync that the next checkpoint should come now.
    pub fn wants_sync(&self) -> bool {
        self.uncovered.len() >= UNCOVERED_CAP
    }

    /// A write of `page` at `gen` completed.
    pub fn written(&mut self, page: u64, gen: u64) {
        if self.state != State::Off && self.writable {
            self.uncovered.push((page, gen));
        }
    }

    /// A sync of the database file was submitted: the writes completed so far are what it makes
    /// durable.
    pub fn seal(&mut self) {
        self.sealed.append(&mut self.uncovered);
    }

    /// That sync failed: its writes wait for the next one.
    pub fn sync_failed(&mut self) {
        let mut later = std::mem::take(&mut self.uncovered);
        self.uncovered = std::mem::take(&mut self.sealed);
        self.uncovered.append(&mut later);
    }

    /// That sync completed (reactor sequence `seq`): its writes' entries are applied.
    pub fn covered(&mut self, seq: u64) {
        let sealed = std::mem::take(&mut self.sealed);
        for &(page, gen) in &sealed {
            self.apply(page, gen, seq);
        }
        self.sealed = sealed;
        self.sealed.clear();
    }

    fn index(&self, page: u64) -> Option<(u64, usize)> {
        let i = page.checked_sub(HEADER_PAGES)?;
        (i < self.data_pages).then_some((i / CHUNK_ENTRIES, (i % CHUNK_ENTRIES) as usize))
    }

    fn apply(&mut self, page: u64, gen: u64, seq: u64) {
        let Some((chunk, within)) = self.index(page) else {
            return;
        };
        match self.chunks.get_mut(&chunk) {
            Some(c) => {
                let o = within * ENTRY_BYTES;
                c.data[o..o + ENTRY_BYTES].copy_from_slice(&gen.to_le_bytes());
                c.stamp = seq;
                if !c.dirty {
                    c.dirty = true;
                    self.dirty.push(chunk);
                }
            }
            None => {
                self.overflow.push((page, gen));
                self.overflow_stamp = seq;
            }
        }
    }

    /// Checks a valid page read with generation `found` (the tracker remembers nothing of it);
    /// `scan_seq`: the BDM read's sequence number; `seq`: the reactor's now. A stale page's
    /// finding, if its entry is held; a read whose chunk is on its way is checked when it arrives
    /// (into `resolved`). A transactional read never overlaps a write of its page (the cache
    /// holds the page meanwhile), so only a BDM read needs `scan_seq`.
    pub fn check(
        &mut self,
        page: u64,
        found: u64,
        scan_seq: Option<u64>,
        seq: u64,
    ) -> Option<Finding> {
        if self.state == State::Off {
            return None;
        }
        let (chunk, within) = self.index(page)?;
        self.tick += 1;
        if let Some(c) = self.chunks.get_mut(&chunk) {
            c.used = self.tick;
            return judge(c, within, found, scan_seq);
        }
        let mut coming = self.state == State::Opening && chunk < self.prefetch_end
            || self.loading.contains(&chunk)
            || (chunk >= self.prefetch && chunk < self.prefetch_end)
            || self.wanted == Some(chunk);
        if !coming && self.state == State::Ready && self.wanted.is_none() {
            self.misses += 1;
            if self.chunks.len() < self.capacity || self.misses >= MISSES_PER_LOAD {
                self.misses = 0;
                self.wanted = Some(chunk);
                coming = true;
            }
        }
        if coming && self.pending.len() < PENDING_CAP {
            self.pending
                .push((page, found, scan_seq.unwrap_or(seq).min(seq)));
        }
        None
    }

    /// Submits what is due: a write-back of the durable entries, else chunk loads (`loads`:
    /// not when shutting down).
    pub fn run(&mut self, reactor: &mut Reactor, loads: bool) -> Result<(), EngineError> {
        if self.state != State::Ready {
            return Ok(());
        }
        if !self.writing
            && self.loading.is_empty()
            && (!self.dirty.is_empty() || !self.overflow.is_empty())
        {
            self.begin_write_back();
        }
        if self.writing {
            return self.write_back(reactor);
        }
        while loads && self.loading.len() < JOURNAL_SLOTS && reactor.has_room() {
            let next = if self.prefetch < self.prefetch_end {
                let c = self.prefetch;
                self.prefetch += 1;
                c
            } else if let Some(c) = self.wanted.take() {
                c
            } else {
                break;
            };
            if self.chunks.contains_key(&next) || self.loading.contains(&next) {
                continue;
            }
            if self.chunks.len() + self.loading.len() >= self.capacity && !self.evict() {
                break;
            }
            let offset = chunk_offset(next);
            let len = (journal_len(self.data_pages) - offset).min(CHUNK_BYTES as u64) as usize;
            self.loading.push(next);
            let buf = reactor_buf(reactor, len);
            self.submit(
                reactor,
                JournalIo::Load { chunk: next },
                IoOp::Read,
                offset,
                buf,
            )?;
        }
        Ok(())
    }

    /// Drops the least recently used clean chunk; false if every chunk held is dirty.
    fn evict(&mut self) -> bool {
        let victim = self
            .chunks
            .iter()
            .filter(|(_, c)| !c.dirty)
            .min_by_key(|(_, c)| c.used)
            .map(|(&k, _)| k);
        match victim {
            Some(k) => {
                self.chunks.remove(&k);
                true
            }
            None => false,
        }
    }

    fn begin_write_back(&mut self) {
        let mut dirty = std::mem::take(&mut self.dirty);
        dirty.sort_unstable();
        self.items.extend(dirty.into_iter().map(Item::Chunk));
        // Entries of chunks not held: the last of each page, in runs of consecutive pages.
        let mut o = std::mem::take(&mut self.overflow);
        o.reverse();
        o.sort_by_key(|&(p, _)| p);
        o.dedup_by_key(|&mut (p, _)| p);
        let mut run: Option<(u64, Vec<u64>)> = None;
        for (p, g) in o {
            match &mut run {
                Some((first, gens))
                    if *first + gens.len() as u64 == p && gens.len() < CHUNK_ENTRIES as usize =>
                {
                    gens.push(g)
                }
                _ => {
                    if let Some((first, gens)) = run.take() {
                        self.items.push(Item::Run { first, gens });
                    }
                    run = Some((p, vec![g]));
                }
            }
        }
        if let Some((first, gens)) = run {
            self.items.push(Item::Run { first, gens });
        }
        self.writing = true;
    }

    fn write_back(&mut self, reactor: &mut Reactor) -> Result<(), EngineError> {
        while self.in_flight < JOURNAL_SLOTS && reactor.has_room() {
            let Some(item) = self.items.pop() else {
                break;
            };
            let (offset, buf) = match item {
                Item::Chunk(k) => {
                    let Some(c) = self.chunks.get_mut(&k) else {
                        continue;
                    };
                    c.dirty = false;
                    let offset = chunk_offset(k);
                    let len = (journal_len(self.data_pages) - offset).min(CHUNK_BYTES as u64);
                    let mut buf = reactor_buf(reactor, len as usize);
                    buf.as_mut_slice().copy_from_slice(&c.data[..len as usize]);
                    (offset, buf)
                }
                Item::Run { first, gens } => {
                    let Some(offset) = mbx_store::journal::entry_offset(first) else {
                        continue;
                    };
                    let mut buf = reactor_buf(reactor, gens.len() * ENTRY_BYTES);
                    for (d, g) in buf.as_mut_slice().chunks_exact_mut(ENTRY_BYTES).zip(&gens) {
                        d.copy_from_slice(&g.to_le_bytes());
                    }
                    (offset, buf)
                }
            };
            self.submit(reactor, JournalIo::Write, IoOp::Write, offset, buf)?;
        }
        if self.items.is_empty() && self.in_flight == 0 && !self.syncing && reactor.has_room() {
            self.syncing = true;
            let buf = reactor_buf(reactor, 0);
            self.submit(reactor, JournalIo::Sync, IoOp::Sync, 0, buf)?;
        }
        Ok(())
    }

    fn submit(
        &mut self,
        reactor: &mut Reactor,
        io: JournalIo,
        op: IoOp,
        offset: u64,
        buf: mbx_io::AlignedBuf,
    ) -> Result<(), EngineError> {
        let Some(file) = self.file else {
            return Ok(());
        };
        let len = buf.len();
        self.in_flight += 1;
        // Its share of the queue depth: loads and write-backs never overlap, each at most
        // JOURNAL_SLOTS, the header and the sync alone.
        assert!(
            self.in_flight <= JOURNAL_SLOTS,
            "journal: {} I/Os in flight, its share is {JOURNAL_SLOTS}",
            self.in_flight
        );
        reactor.submit(
            Owner::Journal { db: self.db, io },
            op,
            file,
            offset,
            buf,
            Some(len),
        )
    }

    /// A journal request completed.
    pub fn completed(
        &mut self,
        reactor: &mut Reactor,
        io: JournalIo,
        c: &IoCompletion,
    ) -> Result<(), EngineError> {
        assert!(
            self.in_flight > 0,
            "journal: a completion with none in flight"
        );
        self.in_flight -= 1;
        if self.state == State::Off {
            return Ok(());
        }
        let n = match &c.result {
            Ok(n) => *n,
            Err(e) => {
                self.off(format!("its {} failed ({e})", c.req.op.noun()));
                return Ok(());
            }
        };
        // A read may end early: the file is shorter (new, or sparse); what is missing is 0.
        let data = c
            .req
            .buf
            .as_slice()
            .get(..n.min(c.req.len))
            .unwrap_or_default();
        match io {
            JournalIo::Header => self.header_read(reactor, data)?,
            JournalIo::HeaderWrite => self.state = State::Ready,
            JournalIo::Load { chunk } => self.loaded(chunk, data, reactor.events),
            JournalIo::Write => {
                if n != c.req.len {
                    self.off(format!("a write was short ({n} of {} bytes)", c.req.len));
                    return Ok(());
                }
                self.write_back(reactor)?;
            }
            JournalIo::Sync => {
                self.syncing = false;
                self.writing = false;
            }
        }
        Ok(())
    }

    fn header_read(&mut self, reactor: &mut Reactor, data: &[u8]) -> Result<(), EngineError> {
        let header = JournalHeader::decode(data);
        if header.is_some_and(|h| h.belongs_to(self.database_id, self.data_pages)) {
            self.state = State::Ready;
            return Ok(());
        }
        if !self.writable {
            let why = if data.is_empty() {
                "none (the database was prepared by an earlier version)".to_string()
            } else {
                "not this database's".to_string()
            };
            self.off(why);
            return Ok(());
        }
        // A new journal; or one that is not this database's (its entries would be another
        // database's): replaced by an empty one (which knows nothing yet: entries 0).
        if !data.is_empty() {
            let (Some(path), Some(file)) = (self.path.clone(), self.file.take()) else {
                return Ok(());
            };
            reactor.close_file(file);
            reactor.remove_file(&path)?;
            let mode = OpenMode::buffered(true, true);
            match reactor.open_file(&path, mode) {
                Ok(f) => self.file = Some(f),
                Err(e) => {
                    self.off(format!("cannot create it ({e})"));
                    return Ok(());
                }
            }
            self.lines.push(format!(
                "Generation journal {}: not this database's; replaced by a new one (stale pages across runs are found from the writes of this run on).",
                self.name()
            ));
        } else {
            self.lines.push(format!(
                "Generation journal {}: created (stale pages across runs are found from the writes of this run on).",
                self.name()
            ));
        }
        let mut buf = reactor_buf(reactor, JOURNAL_HEADER_BYTES);
        JournalHeader {
            database_id: self.database_id,
            data_pages: self.data_pages,
        }
        .encode(buf.as_mut_slice());
        self.submit(reactor, JournalIo::HeaderWrite, IoOp::Write, 0, buf)
    }

    fn loaded(&mut self, chunk: u64, data: &[u8], seq: u64) {
        self.loading.retain(|&c| c != chunk);
        let mut bytes = vec![0u8; CHUNK_BYTES].into_boxed_slice();
        bytes[..data.len().min(CHUNK_BYTES)].copy_from_slice(&data[..data.len().min(CHUNK_BYTES)]);
        let mut c = Chunk {
            data: bytes,
            dirty: false,
            used: self.tick,
            stamp: self.overflow_stamp,
        };
        // Durable entries of this chunk not written yet: they are newer than the file's.
        let mut applied = false;
        self.overflow.retain(|&(p, g)| {
            let i = p.saturating_sub(HEADER_PAGES);
            if i / CHUNK_ENTRIES != chunk {
                return true;
            }
            let o = (i % CHUNK_ENTRIES) as usize * ENTRY_BYTES;
            c.data[o..o + ENTRY_BYTES].copy_from_slice(&g.to_le_bytes());
            applied = true;
            false
        });
        if applied {
            c.dirty = true;
            c.stamp = seq;
            self.dirty.push(chunk);
        }
        // The reads that waited for it.
        let mut found = std::mem::take(&mut self.resolved);
        self.pending.retain(|&(page, gen, scan)| {
            let i = page.saturating_sub(HEADER_PAGES);
            if i / CHUNK_ENTRIES != chunk {
                return true;
            }
            if let Some(f) = judge(&c, (i % CHUNK_ENTRIES) as usize, gen, Some(scan)) {
                found.push((page, f));
            }
            false
        });
        self.resolved = found;
        self.chunks.insert(chunk, c);
        // Memory stays bounded: the window never holds more chunks than its capacity.
        assert!(
            self.chunks.len() <= self.capacity,
            "journal: {} chunks held, the window holds {}",
            self.chunks.len(),
            self.capacity
        );
    }

    /// The entry of `page` if its chunk is held (what a patch should rewrite it at).
    pub fn entry(&self, page: u64) -> Option<u64> {
        let (chunk, within) = self.index(page)?;
        self.chunks.get(&chunk).map(|c| entry_at(&c.data, within))
    }
}

/// The finding of a read of generation `found` against entry `within` of chunk `c`.
fn judge(c: &Chunk, within: usize, found: u64, scan_seq: Option<u64>) -> Option<Finding> {
    if scan_seq.is_some_and(|s| c.stamp >= s) {
        return None;
    }
    let entry = entry_at(&c.data, within);
    is_stale(found, entry).then_some(Finding::StaleAcrossRuns {
        found,
        expected: entry,
    })
}

fn chunk_offset(chunk: u64) -> u64 {
    JOURNAL_HEADER_BYTES as u64 + chunk * CHUNK_BYTES as u64
}

fn reactor_buf(reactor: &mut Reactor, len: usize) -> mbx_io::AlignedBuf {
    reactor.buf(len)
}
