//! The database cache of one instance: which pages are in memory and in what state.
//!
//! Page contents are a pure function of (database, page, generation), so frames carry metadata
//! only (state, pins, LRU and dirty order): the simulated cache has the size and behaviour of a
//! real one without holding its bytes. "Available" pages are unused frames plus clean, unpinned
//! frames (evictable); the flusher keeps them between the start and stop thresholds.

use rustc_hash::FxHashMap;
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

/// No frame (the end of a list).
const NIL: u32 = u32::MAX;

/// Which order a frame is in.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum On {
    /// Neither (pinned, being read or being written).
    None,
    /// The LRU order (clean, unpinned: evictable).
    Lru,
    /// The dirty order (flush order).
    Dirty,
}

#[derive(Debug, Clone)]
struct Frame {
    page: u64,
    state: FrameState,
    pins: u32,
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
    /// The order the frame is in, and its neighbours there (frame slots).
    on: On,
    prev: u32,
    next: u32,
}

/// A list of frames through their `prev`/`next` links, oldest first: frames join at the tail,
/// so the order is the order they joined (as by a stamp that only grows).
#[derive(Debug, Clone, Copy)]
struct List {
    head: u32,
    tail: u32,
    len: usize,
}

impl List {
    const EMPTY: List = List {
        head: NIL,
        tail: NIL,
        len: 0,
    };
}

/// The cache of one database. Frames live in a slab indexed by slot (at most `max_frames`,
/// reused on eviction); the LRU and dirty orders are intrusive lists through them, so no
/// cache transition allocates once the cache is full.
#[derive(Debug)]
pub struct Cache {
    /// Page -> frame slot.
    index: FxHashMap<u64, u32>,
    frames: Vec<Frame>,
    /// Clean, unpinned frames by last use (evictable).
    lru: List,
    /// Dirty frames by the time they became dirty (flush order).
    dirty: List,
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
        // Slots are u32 (NIL excluded): far beyond any cache (2^32 pages of 32 KiB is 128 TiB).
        let max_frames = max_frames.min(NIL as usize - 1);
        Cache {
            index: FxHashMap::with_capacity_and_hasher(max_frames, Default::default()),
            frames: Vec::with_capacity(max_frames),
            lru: List::EMPTY,
            dirty: List::EMPTY,
            max_frames,
            start_threshold: t(start_pct, 16),
            stop_threshold: t(stop_pct, 32).max(t(start_pct, 16) + 1),
            checkpoint_depth: (max_frames / CHECKPOINT_DEPTH_DIVISOR).max(1),
            flushing: 0,
        }
    }

    /// Upper estimate of the memory this cache's bookkeeping takes when full: a frame (with its
    /// list links) and its hash-map slot. Frames carry no page bytes.
    pub fn metadata_bytes(&self) -> usize {
        let per_frame = std::mem::size_of::<Frame>() + std::mem::size_of::<(u64, u32)>() + 16;
        self.max_frames.saturating_mul(per_frame)
    }

    fn list(&mut self, on: On) -> &mut List {
        match on {
            On::Dirty => &mut self.dirty,
            _ => &mut self.lru,
        }
    }

    /// Appends frame `slot` (in no list) to the tail of `on`'s list.
    fn push_back(&mut self, on: On, slot: u32) {
        let tail = self.list(on).tail;
        {
            let f = &mut self.frames[slot as usize];
            assert_eq!(
                f.on,
                On::None,
                "cache: page {} joins a list while in one",
                f.page
            );
            f.on = on;
            f.prev = tail;
            f.next = NIL;
        }
        if tail == NIL {
            self.list(on).head = slot;
        } else {
            self.frames[tail as usize].next = slot;
        }
        let l = self.list(on);
        l.tail = slot;
        l.len += 1;
    }

    /// Takes frame `slot` out of the list it is in, if any.
    fn unlink(&mut self, slot: u32) {
        let (on, prev, next) = {
            let f = &self.frames[slot as usize];
            (f.on, f.prev, f.next)
        };
        if on == On::None {
            return;
        }
        if prev == NIL {
            self.list(on).head = next;
        } else {
            self.frames[prev as usize].next = next;
        }
        if next == NIL {
            self.list(on).tail = prev;
        } else {
            self.frames[next as usize].prev = prev;
        }
        let l = self.list(on);
        assert!(l.len > 0, "cache: a frame leaves an empty list");
        l.len -= 1;
        let f = &mut self.frames[slot as usize];
        f.on = On::None;
        f.prev = NIL;
        f.next = NIL;
    }

    fn slot(&self, page: u64) -> Option<u32> {
        self.index.get(&page).copied()
    }

    fn frame(&self, page: u64) -> Option<&Frame> {
        self.slot(page).map(|s| &self.frames[s as usize])
    }

    /// State of `page`, if cached.
    pub fn state(&self, page: u64) -> Option<FrameState> {
        self.frame(page).map(|f| f.state)
    }

    /// Frames in use.
    pub fn len(&self) -> usize {
        self.index.len()
    }

    /// True if no page is cached.
    pub fn is_empty(&self) -> bool {
        self.index.is_empty()
    }

    /// Fraction of the cache in use (the "cache prerequisite" is 90%).
    pub fn fill(&self) -> f64 {
        self.index.len() as f64 / self.max_frames.max(1) as f64
    }

    /// Unused frames plus evictable clean frames.
    pub fn available(&self) -> usize {
        self.max_frames.saturating_sub(self.index.len()) + self.lru.len
    }

    /// Frames being written.
    pub fn flushing(&self) -> usize {
        self.flushing
    }

    /// Dirty frames (not being written).
    pub fn dirty_count(&self) -> usize {
        self.dirty.len
    }

    /// A frame slot for a new page, evicting the least recently used clean page if needed.
    fn make_room(&mut self) -> Option<u32> {
        if self.index.len() < self.max_frames && self.frames.len() < self.max_frames {
            return Some(self.frames.len() as u32);
        }
        let slot = self.lru.head;
        if slot == NIL {
            return None;
        }
        self.unlink(slot);
        let f = &self.frames[slot as usize];
        // Only a clean, unpinned frame is in the LRU order: nothing else may be evicted.
        assert!(
            f.pins == 0 && f.state == FrameState::Clean,
            "cache: evicting page {} ({:?}, {} pins)",
            f.page,
            f.state,
            f.pins
        );
        let page = f.page;
        self.index.remove(&page);
        Some(slot)
    }

    /// Puts `f` in frame `slot` (from [`Cache::make_room`]) as `page`'s.
    fn insert(&mut self, slot: u32, f: Frame) {
        let page = f.page;
        let before = self.index.insert(page, slot);
        assert!(before.is_none(), "cache: page {page} is cached twice");
        if slot as usize == self.frames.len() {
            self.frames.push(f);
        } else {
            self.frames[slot as usize] = f;
        }
        self.check_counts();
    }

    /// Cache accounting: the frames in use are at most the cache, and the evictable (LRU),
    /// dirty and being-written frames are each in use (the rest are pinned or being read).
    fn check_counts(&self) {
        let used = self.index.len();
        assert!(
            used <= self.max_frames,
            "cache: {used} frames in use, more than its {} frames",
            self.max_frames
        );
        assert!(
            self.lru.len + self.dirty.len + self.flushing <= used,
            "cache: {} clean, {} dirty and {} flushing frames, more than the {used} in use",
            self.lru.len,
            self.dirty.len,
            self.flushing
        );
    }

    fn new_frame(page: u64, state: FrameState, pins: u32, now: Instant) -> Frame {
        Frame {
            page,
            state,
            pins,
            dirtied_at: now,
            first_dirty_lsn: 0,
            last_lsn: 0,
            redirty_lsn: 0,
            gen: 0,
            on: On::None,
            prev: NIL,
            next: NIL,
        }
    }

    /// Starts reading `page` into a new, pinned frame. False if no frame is available (a page
    /// fault stall).
    pub fn begin_read(&mut self, page: u64, now: Instant) -> bool {
        if self.index.contains_key(&page) {
            return false;
        }
        let Some(slot) = self.make_room() else {
            return false;
        };
        self.insert(slot, Cache::new_frame(page, FrameState::Reading, 1, now));
        true
    }

    /// The read of `page` completed.
    pub fn end_read(&mut self, page: u64) {
        if let Some(s) = self.slot(page) {
            let f = &mut self.frames[s as usize];
            if f.state == FrameState::Reading {
                f.state = FrameState::Clean;
            }
        }
    }

    /// Pins a cached page (it cannot be evicted until unpinned).
    pub fn pin(&mut self, page: u64) {
        let slot = self.slot(page);
        assert!(
            slot.is_some(),
            "cache: pinning page {page}, which is not cached"
        );
        if let Some(s) = slot {
            let f = &self.frames[s as usize];
            if f.pins == 0 && f.state == FrameState::Clean {
                self.unlink(s);
            }
            self.frames[s as usize].pins += 1;
        }
    }

    /// Releases a pin; an unpinned clean page becomes evictable (most recently used).
    pub fn unpin(&mut self, page: u64) {
        if let Some(s) = self.slot(page) {
            let f = &mut self.frames[s as usize];
            assert!(
                f.pins > 0,
                "cache: unpinning page {page}, which is not pinned"
            );
            f.pins -= 1;
            if f.pins == 0 && f.state == FrameState::Clean {
                // Most recently used: to the tail (from wherever it was).
                self.unlink(s);
                self.push_back(On::Lru, s);
            }
        }
    }

    /// Modifies a cached page (pinned by the caller), or allocates a new dirty page (`new_page`):
    /// the change is logged in the record ending at `lsn` and gives the page generation `gen`.
    /// Returns false if a new page found no frame.
    pub fn modify(&mut self, page: u64, now: Instant, lsn: u64, gen: u64) -> bool {
        match self.slot(page) {
            Some(s) => {
                let f = &mut self.frames[s as usize];
                // Each change of a page is logged after the one before it, at a newer
                // generation (generations only grow within a run).
                assert!(
                    lsn >= f.last_lsn && gen > f.gen,
                    "cache: page {page} changed at log position {lsn}, generation {gen}, after position {}, generation {}",
                    f.last_lsn,
                    f.gen
                );
                f.gen = gen;
                f.last_lsn = lsn;
                match f.state {
                    FrameState::Clean => {
                        f.state = FrameState::Dirty;
                        f.dirtied_at = now;
                        f.first_dirty_lsn = lsn;
                        // Out of the LRU order (if unpinned), into the dirty order.
                        self.unlink(s);
                        self.push_back(On::Dirty, s);
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
                let Some(slot) = self.make_room() else {
                    return false;
                };
                let mut f = Cache::new_frame(page, FrameState::Dirty, 0, now);
                f.first_dirty_lsn = lsn;
                f.last_lsn = lsn;
                f.gen = gen;
                self.insert(slot, f);
                self.push_back(On::Dirty, slot);
                true
            }
        }
    }

    /// When the oldest dirty page became dirty.
    pub fn oldest_dirty_at(&self) -> Option<Instant> {
        let head = self.dirty.head;
        (head != NIL).then(|| self.frames[head as usize].dirtied_at)
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
        let head = self.dirty.head;
        if head == NIL {
            return Ok(None);
        }
        let f = &self.frames[head as usize];
        if f.last_lsn > durable_lsn {
            return Err(f.last_lsn);
        }
        let first = f.page;
        self.set_flushing(head, durable_lsn);
        let mut n = 1;
        while n < max_pages {
            let next = first + n;
            match self.slot(next) {
                Some(s)
                    if self.frames[s as usize].state == FrameState::Dirty
                        && self.frames[s as usize].last_lsn <= durable_lsn =>
                {
                    self.set_flushing(s, durable_lsn);
                    n += 1;
                }
                _ => break,
            }
        }
        Ok(Some((first, n)))
    }

    /// The generation a cached page has after its last change (what a flush writes).
    pub fn generation(&self, page: u64) -> Option<u64> {
        self.frame(page).map(|f| f.gen)
    }

    /// A dirty frame leaves the dirty order for a write; the log is durable up to
    /// `durable_lsn`.
    fn set_flushing(&mut self, slot: u32, durable_lsn: u64) {
        let f = &self.frames[slot as usize];
        assert_eq!(
            f.state,
            FrameState::Dirty,
            "cache: page {} flushed while not dirty",
            f.page
        );
        // The write-ahead rule: no page is written before the log records of its changes are
        // durable.
        assert!(
            f.last_lsn <= durable_lsn,
            "write-ahead: page {} would be written before its log record (position {}) is durable (durable to {durable_lsn})",
            f.page,
            f.last_lsn
        );
        self.unlink(slot);
        self.frames[slot as usize].state = FrameState::Flushing { redirty: false };
        self.flushing += 1;
        self.check_counts();
    }

    /// The write of `page` completed.
    pub fn end_flush(&mut self, page: u64, now: Instant) {
        let Some(s) = self.slot(page) else {
            return;
        };
        let f = &mut self.frames[s as usize];
        if let FrameState::Flushing { redirty } = f.state {
            assert!(
                self.flushing > 0,
                "cache: more page writes ended than began"
            );
            self.flushing -= 1;
            if redirty {
                f.state = FrameState::Dirty;
                f.dirtied_at = now;
                f.first_dirty_lsn = f.redirty_lsn;
                self.push_back(On::Dirty, s);
            } else {
                f.state = FrameState::Clean;
                if f.pins == 0 {
                    self.push_back(On::Lru, s);
                }
            }
        }
    }

    /// The oldest log position a dirty or flushing page still depends on (for the checkpoint).
    pub fn min_dirty_lsn(&self) -> Option<u64> {
        self.frames
            .iter()
            .filter(|f| matches!(f.state, FrameState::Dirty | FrameState::Flushing { .. }))
            .map(|f| f.first_dirty_lsn)
            .min()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A cache holding dirty page 5, changed in the record ending at log position 100.
    fn dirty_page() -> Cache {
        let now = Instant::now();
        let mut c = Cache::new(64, 1.0, 2.0);
        assert!(c.modify(5, now, 100, 1));
        c
    }

    #[test]
    #[should_panic(expected = "write-ahead")]
    fn a_page_is_never_written_ahead_of_its_log() {
        let mut c = dirty_page();
        let slot = c.slot(5).unwrap_or(NIL);
        // What take_flush_run refuses to do: take the page with the log durable only to 99.
        c.set_flushing(slot, 99);
    }

    #[test]
    #[should_panic(expected = "not pinned")]
    fn an_unpinned_page_cannot_be_unpinned() {
        let mut c = dirty_page();
        c.unpin(5);
    }

    #[test]
    #[should_panic(expected = "changed at log position")]
    fn a_page_change_never_goes_back_in_the_log() {
        let mut c = dirty_page();
        c.modify(5, Instant::now(), 50, 2);
    }

    #[test]
    #[should_panic(expected = "more page writes ended than began")]
    fn the_flush_count_never_goes_below_zero() {
        let mut c = dirty_page();
        let slot = c.slot(5).unwrap_or(NIL);
        c.set_flushing(slot, 100);
        c.flushing = 0;
        c.end_flush(5, Instant::now());
    }

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
