//! The flusher of one database: writes dirty pages back when the cache runs short of free frames
//! (between the start and stop thresholds), when more pages are dirty than the checkpoint depth,
//! when a page has been dirty too long, or to drain the cache at shutdown. Write-ahead logging: a
//! page is written only once the log holding its changes is durable; a flush that has to wait
//! asks the log writer to flush.

use std::time::{Duration, Instant};

use mbx_io::IoOp;
use mbx_store::page::{build_data_page, PageHeader, KIND_DATA, PAGE_SIZE};

use super::pages::PageTracker;
use crate::cache::Cache;
use crate::reactor::{Owner, Reactor};
use crate::EngineError;

/// Most page writes in flight per database, at least (see [`max_flush_writes`]).
pub(crate) const MAX_FLUSH_WRITES: usize = 32;

/// Most page writes in flight per database with `sessions` sessions on `databases` databases:
/// [`MAX_FLUSH_WRITES`], or one per session of the database when there are more. A session
/// has about one read in flight at a time and writes come at a fraction of the reads, so with as
/// many writes allowed as sessions the flusher frees frames as fast as the sessions take them
/// whatever the session count; a fixed 32 let 256 sessions on an 8 ms device stall on the cache
/// thousands of times a second (tests/flusher.rs).
pub(crate) fn max_flush_writes(sessions: usize, databases: usize) -> usize {
    MAX_FLUSH_WRITES.max(sessions.div_ceil(databases.max(1)))
}
/// Most contiguous dirty pages coalesced into one write.
pub(crate) const MAX_COALESCE: u64 = 4;

/// Flusher state.
#[derive(Debug, Default)]
pub(crate) struct Flusher {
    /// Writes in flight.
    pub writes: usize,
    /// Most writes in flight ([`max_flush_writes`]).
    pub max_writes: usize,
    /// Below the start threshold and not yet back at the stop threshold.
    pub pressure: bool,
    /// A page waits for the log to be durable up to this sequence.
    pub wal_wait: Option<u64>,
}

/// What a flush writes (passed instead of the whole database to keep borrows apart).
pub(crate) struct FlushCtx<'a> {
    pub db: usize,
    pub file: usize,
    pub database_id: u64,
    pub compressibility_pct: u8,
    pub cache: &'a mut Cache,
    pub pages: &'a mut PageTracker,
    pub seq_durable: u64,
}

impl Flusher {
    /// Submits page writes while they are due and there is room.
    pub fn run(
        &mut self,
        mut c: FlushCtx<'_>,
        reactor: &mut Reactor,
        now: Instant,
        max_dirty_age: Duration,
        drain: bool,
    ) -> Result<(), EngineError> {
        self.wal_wait = None;
        loop {
            if self.writes >= self.max_writes.max(1)
                || c.cache.dirty_count() == 0
                || !reactor.has_room()
            {
                return Ok(());
            }
            let avail = c.cache.available();
            if avail < c.cache.start_threshold {
                self.pressure = true;
            }
            if self.pressure && avail + c.cache.flushing() >= c.cache.stop_threshold {
                self.pressure = false;
            }
            let aged = c
                .cache
                .oldest_dirty_at()
                .is_some_and(|t| now >= t + max_dirty_age);
            // Beyond the checkpoint depth (a rate-independent number of dirty pages), or dirty
            // for too long (which bounds how long a change waits at low rates).
            let deep = c.cache.dirty_count() > c.cache.checkpoint_depth;
            if !(drain || self.pressure || aged || deep) {
                return Ok(());
            }
            let (first, pages) = match c.cache.take_flush_run(MAX_COALESCE, c.seq_durable) {
                Ok(Some(run)) => run,
                Ok(None) => return Ok(()),
                Err(need) => {
                    self.wal_wait = Some(need);
                    return Ok(());
                }
            };
            self.writes += 1;
            assert!(
                self.writes <= self.max_writes.max(1),
                "flusher: {} page writes in flight, at most {}",
                self.writes,
                self.max_writes.max(1)
            );
            let seq = reactor.events + 1;
            let mut buf = reactor.buf(pages as usize * PAGE_SIZE);
            build_run(&mut c, buf.as_mut_slice(), first, seq);
            reactor.submit(
                Owner::Flush {
                    db: c.db,
                    first,
                    pages,
                },
                IoOp::Write,
                c.file,
                first * PAGE_SIZE as u64,
                buf,
                None,
            )?;
        }
    }

    /// One of the page writes in flight ended (`how`: "completed", "failed").
    fn write_ended(&mut self, how: &str) {
        assert!(
            self.writes > 0,
            "flusher: a page write {how} with none in flight"
        );
        self.writes -= 1;
    }

    /// A page write completed.
    #[allow(clippy::too_many_arguments)]
    pub fn done(
        &mut self,
        cache: &mut Cache,
        pages: &mut PageTracker,
        journal: &mut super::journal::Journal,
        first: u64,
        n: u64,
        seq: u64,
        now: Instant,
    ) {
        self.write_ended("completed");
        for p in first..first + n {
            if let Some(gen) = pages.write_done(p, seq) {
                journal.written(p, gen);
            }
            cache.end_flush(p, now);
        }
    }

    /// A flush of `n` pages from `first` failed (counted, `continue_on_errors`): the pages
    /// leave the flush as if written, and the tracker forgets them (their content on disk is
    /// unknown).
    pub fn failed(
        &mut self,
        cache: &mut Cache,
        pages: &mut PageTracker,
        first: u64,
        n: u64,
        now: Instant,
    ) {
        self.write_ended("failed");
        for p in first..first + n {
            pages.write_failed(p);
            cache.end_flush(p, now);
        }
    }
}

/// Builds the pages of a write from page `first` into `buf`, each at the generation its cached
/// change gave it, and tells the tracker of their write (reactor sequence `seq`).
fn build_run(c: &mut FlushCtx<'_>, buf: &mut [u8], first: u64, seq: u64) {
    for (k, page) in buf.chunks_exact_mut(PAGE_SIZE).enumerate() {
        let n = first + k as u64;
        let gen = c.cache.generation(n).unwrap_or(0);
        build_data_page(
            page,
            &PageHeader {
                page_number: n,
                database_id: c.database_id,
                generation: gen,
                kind: KIND_DATA,
                compressibility_pct: c.compressibility_pct,
            },
        );
        // The page header names the place it is written to.
        let h = PageHeader::read(page);
        assert!(
            h.page_number == n && h.database_id == c.database_id,
            "flusher: page {n} of database {:#x} built as page {} of {:#x}",
            c.database_id,
            h.page_number,
            h.database_id
        );
        c.pages.write_submitted(n, gen, seq);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    #[should_panic(expected = "none in flight")]
    fn a_write_cannot_end_that_never_began() {
        let mut cache = Cache::new(64, 1.0, 2.0);
        let mut pages = PageTracker::new(64);
        Flusher::default().failed(&mut cache, &mut pages, 5, 1, Instant::now());
    }
}
