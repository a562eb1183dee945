//! The database cache of one instance: which pages are in memory and in what state.
//!
//! Page contents are a pure function of (database, page, generation), so frames carry metadata
//! only (state, pins, LRU and dirty order): the simulated cache has the size and behaviour of a
//! real one without holding its bytes. "Available" pages are unused frames plus clean, unpinned
//! frames (evictable); the flusher keeps them between the start and stop thresholds.

use std::collections::{BTreeMap, HashMap};
use std::time::Instant;

/// The checkpoint depth is this fraction of the cache (1 / this): ESE writes a dirty page once
/// the log has moved on more than the checkpoint depth since the page's first change. With the
/// same log volume per page change at every rate, that holds the number of dirty pages steady
/// whatever the rate, so how often a page is changed again before it is written (absorption) and
/// how often dirty neighbours are written together (coalescing) do not depend on the rate either
/// (docs/method.md, "Log writes per database write"). A sixteenth of the cache keeps both small:
/// about 1% of a scaled test database is dirty, as little of a real one.
pub const CHECKPOINT_DEPTH_DIVISOR: usize = 16;

/// State of a cached page.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FrameState {
    /// A read is in flight.
    Reading,
    /// Same as on disk.
    Clean,
    /// Modified, not yet written.
    Dirty,
    /// A write is in flight; `redirty` if modified again meanwhile.
    Flushing {
        /// Modified again during the write.
        redirty: bool,
    },
}

#[derive(Debug, Clone)]
struct Frame {
    state: FrameState,
    pins: u32,
    lru_stamp: u64,
    dirty_stamp: u64,
    dirtied_at: Instant,
    /// Log position of the first change not yet written (the checkpoint may not pass it).
    first_dirty_lsn: u64,
    /// Log position just past the last change's record (write-ahead logging: the page may not
    /// be written before the log is durable up to here).
    last_lsn: u64,
    /// First change made while a write was in flight (becomes `first_dirty_lsn` after it).
    redirty_lsn: u64,
    /// The page's write generation after its last change.
    gen: u64,
}

/// The cache of one database.
#[derive(Debug)]
pub struct Cache {
    frames: HashMap<u64, Frame>,
    /// Clean, unpinned frames by last use (evictable).
    lru: BTreeMap<u64, u64>,
    /// Dirty frames by the time they became dirty (flush order).
    dirty: BTreeMap<u64, u64>,
    stamp: u64,
    /// Most frames.
    pub max_frames: usize,
    /// Flushing starts below this many available frames.
    pub start_threshold: usize,
    /// Flushing stops at this many available (+ being written) frames.
    pub stop_threshold: usize,
    /// The checkpoint depth, in dirty pages ([`CHECKPOINT_DEPTH_DIVISOR`]): the oldest dirty
    /// pages are written while more are dirty.
    pub checkpoint_depth: usize,
    flushing: usize,
}

impl Cache {
    /// A cache of `max_frames` pages with flush thresholds in percent of it.
    /// The thresholds never go below 16 and 32 frames, so that a small cache (scaled-down test
    /// databases) starts flushing before one transaction's pages no longer fit.
    pub fn new(max_frames: usize, start_pct: f64, stop_pct: f64) -> Self {
        let t = |pct: f64, floor: usize| {
            ((max_frames as f64 * pct / 100.0).ceil() as usize)
                .max(floor)
                .min(max_frames / 4)
                .max(1)
        };
        Cache {
            frames: HashMap::with_capacity(max_frames),
            lru: BTreeMap::new(),
            dirty: BTreeMap::new(),
            stamp: 0,
            max_frames,
            start_threshold: t(start_pct, 16),
            stop_threshold: t(stop_pct, 32).max(t(start_pct, 16) + 1),
            checkpoint_depth: (max_frames / CHECKPOINT_DEPTH_DIVISOR).max(1),
            flushing: 0,
        }
    }

    fn next_stamp(&mut self) -> u64 {
        self.stamp += 1;
        self.stamp
    }

    /// Upper estimate of the memory this cache's bookkeeping takes when full: a frame, its
    /// hash-map slot and its place in the LRU or dirty order. Frames carry no page bytes.
    pub fn metadata_bytes(&self) -> usize {
        let per_frame = std::mem::size_of::<Frame>() + 2 * std::mem::size_of::<u64>() + 64;
        self.max_frames.saturating_mul(per_frame)
    }

    /// State of `page`, if cached.
    pub fn state(&self, page: u64) -> Option<FrameState> {
        self.frames.get(&page).map(|f| f.state)
    }

    /// Frames in use.
    pub fn len(&self) -> usize {
        self.frames.len()
    }

    /// True if no page is cached.
    pub fn is_empty(&self) -> bool {
        self.frames.is_empty()
    }

    /// Fraction of the cache in use (the "cache prerequisite" is 90%).
    pub fn fill(&self) -> f64 {
        self.frames.len() as f64 / self.max_frames.max(1) as f64
    }

    /// Unused frames plus evictable clean frames.
    pub fn available(&self) -> usize {
        self.max_frames.saturating_sub(self.frames.len()) + self.lru.len()
    }

    /// Frames being written.
    pub fn flushing(&self) -> usize {
        self.flushing
    }

    /// Dirty frames (not being written).
    pub fn dirty_count(&self) -> usize {
        self.dirty.len()
    }

    /// Makes room for one frame, evicting the least recently used clean page if needed.
    fn make_room(&mut self) -> bool {
        if self.frames.len() < self.max_frames {
            return true;
        }
        let Some((&stamp, &page)) = self.lru.iter().next() else {
            return false;
        };
        self.lru.remove(&stamp);
        self.frames.remove(&page);
        true
    }

    /// Starts reading `page` into a new, pinned frame. False if no frame is available (a page
    /// fault stall).
    pub fn begin_read(&mut self, page: u64, now: Instant) -> bool {
        if self.frames.contains_key(&page) || !self.make_room() {
            return false;
        }
        self.frames.insert(
            page,
            Frame {
                state: FrameState::Reading,
                pins: 1,
                lru_stamp: 0,
                dirty_stamp: 0,
                dirtied_at: now,
                first_dirty_lsn: 0,
                last_lsn: 0,
                redirty_lsn: 0,
                gen: 0,
            },
        );
        true
    }

    /// The read of `page` completed.
    pub fn end_read(&mut self, page: u64) {
        if let Some(f) = self.frames.get_mut(&page) {
            if f.state == FrameState::Reading {
                f.state = FrameState::Clean;
            }
        }
    }

    /// Pins a cached page (it cannot be evicted until unpinned).
    pub fn pin(&mut self, page: u64) {
        let stamp = self.next_stamp();
        if let Some(f) = self.frames.get_mut(&page) {
            if f.pins == 0 && f.state == FrameState::Clean {
                self.lru.remove(&f.lru_stamp);
            }
            f.pins += 1;
            f.lru_stamp = stamp;
        }
    }

    /// Releases a pin; an unpinned clean page becomes evictable (most recently used).
    pub fn unpin(&mut self, page: u64) {
        let stamp = self.next_stamp();
        if let Some(f) = self.frames.get_mut(&page) {
            f.pins = f.pins.saturating_sub(1);
            if f.pins == 0 && f.state == FrameState::Clean {
                f.lru_stamp = stamp;
                self.lru.insert(stamp, page);
            }
        }
    }

    /// Modifies a cached page (pinned by the caller), or allocates a new dirty page (`new_page`):
    /// the change is logged in the record ending at `lsn` and gives the page generation `gen`.
    /// Returns false if a new page found no frame.
    pub fn modify(&mut self, page: u64, now: Instant, lsn: u64, gen: u64) -> bool {
        let stamp = self.next_stamp();
        match self.frames.get_mut(&page) {
            Some(f) => {
                f.gen = gen;
                f.last_lsn = lsn;
                match f.state {
                    FrameState::Clean => {
                        if f.pins == 0 {
                            self.lru.remove(&f.lru_stamp);
                        }
                        f.state = FrameState::Dirty;
                        f.dirty_stamp = stamp;
                        f.dirtied_at = now;
                        f.first_dirty_lsn = lsn;
                        self.dirty.insert(stamp, page);
                    }
                    FrameState::Flushing { redirty } => {
                        if !redirty {
                            f.redirty_lsn = lsn;
                        }
                        f.state = FrameState::Flushing { redirty: true };
                    }
                    FrameState::Dirty | FrameState::Reading => {}
                }
                true
            }
            None => {
                if !self.make_room() {
                    return false;
                }
                self.frames.insert(
                    page,
                    Frame {
                        state: FrameState::Dirty,
                        pins: 0,
                        lru_stamp: 0,
                        dirty_stamp: stamp,
                        dirtied_at: now,
                        first_dirty_lsn: lsn,
                        last_lsn: lsn,
                        redirty_lsn: 0,
                        gen,
                    },
                );
                self.dirty.insert(stamp, page);
                true
            }
        }
    }

    /// When the oldest dirty page became dirty.
    pub fn oldest_dirty_at(&self) -> Option<Instant> {
        self.dirty
            .iter()
            .next()
            .and_then(|(_, p)| self.frames.get(p))
            .map(|f| f.dirtied_at)
    }

    /// Takes the oldest dirty page and its dirty neighbours after it (up to `max_pages`
    /// contiguous pages) for one write; they become `Flushing`. Returns (first page, count).
    /// Write-ahead logging: only pages whose changes are logged durably (up to `durable_lsn`) are
    /// taken; `Err(lsn)` says the oldest dirty page waits for the log to reach `lsn`.
    pub fn take_flush_run(
        &mut self,
        max_pages: u64,
        durable_lsn: u64,
    ) -> Result<Option<(u64, u64)>, u64> {
        let Some((&stamp, &first)) = self.dirty.iter().next() else {
            return Ok(None);
        };
        if let Some(f) = self.frames.get(&first) {
            if f.last_lsn > durable_lsn {
                return Err(f.last_lsn);
            }
        }
        self.dirty.remove(&stamp);
        self.set_flushing(first);
        let mut n = 1;
        while n < max_pages {
            let next = first + n;
            match self.frames.get(&next) {
                Some(f) if f.state == FrameState::Dirty && f.last_lsn <= durable_lsn => {
                    let s = f.dirty_stamp;
                    self.dirty.remove(&s);
                    self.set_flushing(next);
                    n += 1;
                }
                _ => break,
            }
        }
        Ok(Some((first, n)))
    }

    /// The generation a cached page has after its last change (what a flush writes).
    pub fn generation(&self, page: u64) -> Option<u64> {
        self.frames.get(&page).map(|f| f.gen)
    }

    fn set_flushing(&mut self, page: u64) {
        if let Some(f) = self.frames.get_mut(&page) {
            f.state = FrameState::Flushing { redirty: false };
            self.flushing += 1;
        }
    }

    /// The write of `page` completed.
    pub fn end_flush(&mut self, page: u64, now: Instant) {
        let stamp = self.next_stamp();
        if let Some(f) = self.frames.get_mut(&page) {
            if let FrameState::Flushing { redirty } = f.state {
                self.flushing -= 1;
                if redirty {
                    f.state = FrameState::Dirty;
                    f.dirty_stamp = stamp;
                    f.dirtied_at = now;
                    f.first_dirty_lsn = f.redirty_lsn;
                    self.dirty.insert(stamp, page);
                } else {
                    f.state = FrameState::Clean;
                    if f.pins == 0 {
                        f.lru_stamp = stamp;
                        self.lru.insert(stamp, page);
                    }
                }
            }
        }
    }

    /// The oldest log position a dirty or flushing page still depends on (for the checkpoint).
    pub fn min_dirty_lsn(&self) -> Option<u64> {
        self.frames
            .values()
            .filter(|f| matches!(f.state, FrameState::Dirty | FrameState::Flushing { .. }))
            .map(|f| f.first_dirty_lsn)
            .min()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lru_eviction_dirty_flush_cycle() {
        let now = Instant::now();
        let mut c = Cache::new(3, 34.0, 67.0);
        for p in [10, 11, 12] {
            assert!(c.begin_read(p, now));
            c.end_read(p);
            c.unpin(p);
        }
        assert_eq!(c.len(), 3);
        assert_eq!(c.available(), 3);
        // Modify 11 and 12 (pinned while modified), then unpin.
        for p in [11, 12] {
            c.pin(p);
            assert!(c.modify(p, now, 100, 7));
            c.unpin(p);
        }
        assert_eq!(c.available(), 1);
        assert_eq!(c.dirty_count(), 2);
        // Reading a new page evicts the only clean one (10).
        assert!(c.begin_read(13, now));
        assert_eq!(c.state(10), None);
        // No frame left: a stall.
        assert!(!c.begin_read(14, now));
        // Flushing takes 11 and its dirty neighbour 12 as one run.
        // Write-ahead logging: nothing is written before the log is durable past its change.
        assert_eq!(c.take_flush_run(4, 99), Err(100));
        assert_eq!(c.take_flush_run(4, 100), Ok(Some((11, 2))));
        assert_eq!(c.generation(12), Some(7));
        assert_eq!(c.flushing(), 2);
        assert_eq!(c.min_dirty_lsn(), Some(100));
        // 12 is modified again during the write: stays dirty afterwards.
        c.pin(12);
        c.modify(12, now, 200, 8);
        c.unpin(12);
        c.end_flush(11, now);
        c.end_flush(12, now);
        assert_eq!(c.state(11), Some(FrameState::Clean));
        assert_eq!(c.state(12), Some(FrameState::Dirty));
        // Its oldest unwritten change is the one made during the write.
        assert_eq!(c.min_dirty_lsn(), Some(200));
        assert_eq!(c.available(), 1);
    }

    #[test]
    fn thresholds_follow_jetstress() {
        // 1 GiB of 32 KiB pages: start 1% = 328 pages (10.2 MB), stop 2% = 656 (20.5 MB).
        let c = Cache::new(32768, 1.0, 2.0);
        assert_eq!((c.start_threshold, c.stop_threshold), (328, 656));
        // The checkpoint depth: a sixteenth of the cache, at least one page.
        assert_eq!(c.checkpoint_depth, 2048);
        assert_eq!(Cache::new(8, 1.0, 2.0).checkpoint_depth, 1);
    }
}
