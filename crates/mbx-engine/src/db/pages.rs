//! What the engine remembers about pages on disk, in bounded memory.
//!
//! Correctness needs two facts per page: whether a write is in flight (a read racing it is not
//! evidence of anything), and the generation of the last completed write (a read that returns an
//! older one found a lost write). Keeping the second for every page ever written grows with the
//! database (53 M pages for a 1.6 TiB database); instead the tracker keeps a fixed-size,
//! 4-way set-associative table of the most recent writes: memory is `capacity x 24` bytes,
//! set when the engine starts, never more. A lost write is found when the page is read back while
//! its write is still in the table (the last `capacity` pages written); older ones are checked for
//! everything else (checksum, page number, database) but not for staleness. docs/method.md states
//! the bound and the coverage.

/// One remembered write.
#[derive(Debug, Clone, Copy, Default)]
struct Entry {
    /// Page number + 1 (0 = empty slot).
    key: u64,
    /// Generation written.
    gen: u64,
    /// Reactor sequence number when the write was submitted (odd: in flight) or completed.
    seq: u64,
    in_flight: bool,
}

/// Ways per set.
const WAYS: usize = 4;

/// The bounded page tracker of one database.
#[derive(Debug)]
pub(crate) struct PageTracker {
    table: Vec<Entry>,
    mask: usize,
    /// Writes in flight that no longer fit in their set (rare): kept exactly, never dropped.
    overflow: Vec<(u64, u64, u64)>,
}

/// What the tracker knows about a page.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Known {
    /// Nothing (never written in this run, or forgotten).
    Unknown,
    /// A write is in flight since sequence `seq`.
    InFlight { seq: u64 },
    /// The last completed write gave generation `gen`, completed at sequence `seq`.
    Written { gen: u64, seq: u64 },
}

impl PageTracker {
    /// A tracker remembering about `capacity` writes (rounded up to a power of two, at least 64).
    pub fn new(capacity: usize) -> PageTracker {
        let slots = capacity.max(64).next_power_of_two();
        PageTracker {
            table: vec![Entry::default(); slots],
            mask: slots / WAYS - 1,
            overflow: Vec::new(),
        }
    }

    /// Bytes of memory the table uses.
    pub fn memory_bytes(&self) -> usize {
        self.table.len() * std::mem::size_of::<Entry>()
    }

    fn set(&self, page: u64) -> usize {
        // A multiplicative hash spreads sequential pages over the sets.
        let h = page.wrapping_mul(0x9E37_79B9_7F4A_7C15) >> 20;
        ((h as usize) & self.mask) * WAYS
    }

    /// What is known about `page`.
    pub fn known(&self, page: u64) -> Known {
        let base = self.set(page);
        for e in &self.table[base..base + WAYS] {
            if e.key == page.wrapping_add(1) {
                return if e.in_flight {
                    Known::InFlight { seq: e.seq }
                } else {
                    Known::Written {
                        gen: e.gen,
                        seq: e.seq,
                    }
                };
            }
        }
        match self.overflow.iter().find(|o| o.0 == page) {
            Some(&(_, _, seq)) => Known::InFlight { seq },
            None => Known::Unknown,
        }
    }

    /// Puts `entry` in the page's set: its own slot, else an empty one, else the oldest
    /// completed write. False if every slot holds a write in flight.
    fn place(&mut self, page: u64, entry: Entry) -> bool {
        let base = self.set(page);
        let set = &mut self.table[base..base + WAYS];
        let slot = set.iter().position(|e| e.key == entry.key);
        // One write of a page at a time: the flusher takes only pages not being written, and a
        // patch only pages with no write in flight.
        assert!(
            !(entry.in_flight && slot.is_some_and(|i| set[i].in_flight)),
            "page tracker: a second write of page {page} while one is in flight"
        );
        let slot = slot
            .or_else(|| set.iter().position(|e| e.key == 0))
            .or_else(|| {
                set.iter()
                    .enumerate()
                    .filter(|(_, e)| !e.in_flight)
                    .min_by_key(|(_, e)| e.seq)
                    .map(|(i, _)| i)
            });
        match slot {
            Some(i) => {
                set[i] = entry;
                true
            }
            None => false,
        }
    }

    /// A write of `page` with generation `gen` was submitted at sequence `seq`.
    pub fn write_submitted(&mut self, page: u64, gen: u64, seq: u64) {
        let entry = Entry {
            key: page.wrapping_add(1),
            gen,
            seq,
            in_flight: true,
        };
        if !self.place(page, entry) {
            self.overflow.push((page, gen, seq));
        }
    }

    /// The write of `page` failed: nothing is known of what the page holds now, so a later read
    /// must not call it stale.
    pub fn write_failed(&mut self, page: u64) {
        let base = self.set(page);
        let key = page.wrapping_add(1);
        if let Some(e) = self.table[base..base + WAYS]
            .iter_mut()
            .find(|e| e.key == key)
        {
            *e = Entry::default();
        }
        self.overflow.retain(|o| o.0 != page);
    }

    /// The write of `page` completed at sequence `seq`. Returns the generation it wrote (`None`
    /// if no write of it was in flight).
    pub fn write_done(&mut self, page: u64, seq: u64) -> Option<u64> {
        let base = self.set(page);
        let key = page.wrapping_add(1);
        if let Some(e) = self.table[base..base + WAYS]
            .iter_mut()
            .find(|e| e.key == key && e.in_flight)
        {
            e.in_flight = false;
            e.seq = seq;
            return Some(e.gen);
        }
        if let Some(i) = self.overflow.iter().position(|o| o.0 == page) {
            let (_, gen, _) = self.overflow.swap_remove(i);
            // Remembered if a slot is free; a completed write may be forgotten.
            self.place(
                page,
                Entry {
                    key,
                    gen,
                    seq,
                    in_flight: false,
                },
            );
            return Some(gen);
        }
        None
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    #[should_panic(expected = "a second write of page 5")]
    fn a_page_has_one_write_in_flight_at_most() {
        let mut t = PageTracker::new(64);
        t.write_submitted(5, 100, 1);
        t.write_submitted(5, 101, 2);
    }

    #[test]
    fn remembers_recent_writes_and_forgets_old_ones_within_a_fixed_size() {
        let mut t = PageTracker::new(64);
        let bytes = t.memory_bytes();
        t.write_submitted(5, 100, 1);
        assert_eq!(t.known(5), Known::InFlight { seq: 1 });
        t.write_done(5, 2);
        assert_eq!(t.known(5), Known::Written { gen: 100, seq: 2 });
        assert_eq!(t.known(6), Known::Unknown);
        // Ten thousand more writes: memory stays the same, page 5 is forgotten (its set was
        // reused), the latest writes are remembered.
        for p in 1000..11_000u64 {
            t.write_submitted(p, p, p * 2);
            t.write_done(p, p * 2 + 1);
        }
        assert_eq!(t.memory_bytes(), bytes);
        assert_eq!(t.known(5), Known::Unknown);
        assert_eq!(
            t.known(10_999),
            Known::Written {
                gen: 10_999,
                seq: 21_999
            }
        );
    }

    #[test]
    fn writes_in_flight_are_never_forgotten() {
        let mut t = PageTracker::new(64);
        // More writes in flight than slots: every one is still known as in flight.
        for p in 0..500u64 {
            t.write_submitted(p, 1, p);
        }
        for p in 0..500u64 {
            assert_eq!(t.known(p), Known::InFlight { seq: p }, "page {p}");
        }
        for p in 0..500u64 {
            t.write_done(p, 1000 + p);
        }
        assert!(t.overflow.is_empty());
        assert_eq!(t.known(499), Known::Written { gen: 1, seq: 1499 });
    }
}
