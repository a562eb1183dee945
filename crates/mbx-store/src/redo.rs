//! Replay logic, pure: which pages recovery must rewrite, and to which generation.
//!
//! Every change to a page is logged as a [`RedoEntry`] (page, the page's write generation after
//! the change) before the page is written (write-ahead logging), and a page's generation only
//! increases. So after a crash, replaying the records from the checkpoint's Lsn on brings every
//! page to the highest generation logged for it: a page whose generation on disk is lower must be
//! rewritten at that generation; a page at that generation or higher is already up to date.
//!
//! A page on disk *above* every generation logged for it since the checkpoint means the page was
//! written before its log record was durable (a write-ahead violation) or the checkpoint was too
//! late; [`redo_needed`] answers `false` for it, so a consistency check compares the two itself.

use std::collections::BTreeMap;

use crate::log::{LogRecord, RedoEntry};

/// The redo set: page number -> the highest generation logged for it, in page order (so recovery
/// reads the database in ascending order).
pub type RedoSet = BTreeMap<u64, u64>;

/// The redo set of `records` (the records from the checkpoint's Lsn on, in any order).
pub fn redo_set<'a>(records: impl IntoIterator<Item = &'a LogRecord>) -> RedoSet {
    let mut set = RedoSet::new();
    for record in records {
        add_entries(&mut set, &record.entries);
    }
    set
}

/// Adds `entries` to a redo set being built record by record (for a visitor such as
/// [`crate::log_dir::visit_records_from`]).
pub fn add_entries(set: &mut RedoSet, entries: &[RedoEntry]) {
    for e in entries {
        let g = set.entry(e.page).or_insert(e.generation);
        *g = (*g).max(e.generation);
    }
}

/// True if a page whose generation on disk is `page_generation_on_disk` must be rewritten to
/// reach `entry_generation` (the generation the redo set holds for it).
pub fn redo_needed(page_generation_on_disk: u64, entry_generation: u64) -> bool {
    page_generation_on_disk < entry_generation
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::lsn::Lsn;
    use proptest::prelude::*;

    fn record(offset: u64, entries: &[(u64, u64)]) -> LogRecord {
        LogRecord {
            lsn: Lsn::new(1, offset),
            payload_len: 4000,
            ops: 1,
            entries: entries
                .iter()
                .map(|&(page, generation)| RedoEntry { page, generation })
                .collect(),
        }
    }

    #[test]
    fn the_highest_generation_logged_wins() {
        let records = [
            record(0x1000, &[(7, 3), (9, 1)]),
            record(0x2000, &[]),
            record(0x3000, &[(7, 4), (2, 10)]),
            record(0x4000, &[(9, 2), (7, 5)]),
        ];
        let set = redo_set(&records);
        assert_eq!(set, RedoSet::from([(2, 10), (7, 5), (9, 2)]));
        // Order of records does not matter (generations say which change is newer).
        assert_eq!(redo_set(records.iter().rev()), set);
        // Building it record by record gives the same set.
        let mut by_record = RedoSet::new();
        for r in &records {
            add_entries(&mut by_record, &r.entries);
        }
        assert_eq!(by_record, set);
        assert!(redo_set([]).is_empty());
    }

    #[test]
    fn redo_only_pages_behind_the_log() {
        assert!(redo_needed(4, 5));
        assert!(redo_needed(0, 1));
        assert!(!redo_needed(5, 5));
        assert!(!redo_needed(6, 5));
    }

    proptest! {
        /// After replay (each page raised to its redo generation where needed), every page is at
        /// the highest generation any entry names for it, whatever it was on disk before.
        #[test]
        fn replay_reaches_the_newest_logged_generation(
            entries in prop::collection::vec((0u64..50, 1u64..1000), 0..200),
            on_disk in prop::collection::vec(0u64..1000, 50),
        ) {
            let records: Vec<_> = entries.chunks(7).enumerate()
                .map(|(i, c)| record(0x1000 * (i as u64 + 1), c))
                .collect();
            let set = redo_set(&records);
            let mut disk = on_disk.clone();
            for (&page, &g) in &set {
                if redo_needed(disk[page as usize], g) {
                    disk[page as usize] = g;
                }
            }
            for (page, &g) in disk.iter().enumerate() {
                let newest = entries.iter().filter(|e| e.0 == page as u64).map(|e| e.1).max();
                prop_assert_eq!(g, newest.map_or(on_disk[page], |n| n.max(on_disk[page])));
            }
        }
    }
}
