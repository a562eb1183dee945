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

use crate::log::{FileScan, LogRecord, RedoEntry};
use crate::lsn::Lsn;
use crate::page::{build_data_page, check_data_page, PageCheck, PageHeader, KIND_DATA};

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

/// Adds the records of one scanned log file that lie at or after `from` (the checkpoint's Lsn;
/// [`Lsn::ZERO`] for all of them) to a redo set. Returns how many records that was. Recovery
/// calls it file by file, in generation order, so it never holds more than one file's records.
pub fn add_file(set: &mut RedoSet, scan: &FileScan, from: Lsn) -> u64 {
    let mut records = 0;
    for record in scan.records.iter().filter(|r| r.lsn >= from) {
        add_entries(set, &record.entries);
        records += 1;
    }
    records
}

/// What recovery must do with a page it read, given the generation the redo set holds for it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PageRedo {
    /// The page is at the logged generation: nothing to redo.
    Current,
    /// The page is behind the log (a change logged but never written): rewrite it at the
    /// logged generation.
    Behind {
        /// Its generation on disk.
        on_disk: u64,
    },
    /// The page is ahead of every generation logged for it since the checkpoint: it was written
    /// before its log record was durable (a write-ahead violation) or the checkpoint was too
    /// late. Recovery cannot vouch for it.
    Ahead {
        /// Its generation on disk.
        on_disk: u64,
    },
    /// The page does not check good (checksum, page number or database).
    Damaged(PageCheck),
}

/// Classifies page `page_number` of database `database_id` as read (`page`, one page) against
/// `logged`, the generation the redo set holds for it. `scratch` is a page-sized buffer.
pub fn classify_page(
    page: &[u8],
    page_number: u64,
    database_id: u64,
    logged: u64,
    scratch: &mut [u8],
) -> PageRedo {
    match check_data_page(page, page_number, database_id, scratch) {
        PageCheck::Good { generation } => compare_generations(generation, logged),
        other => PageRedo::Damaged(other),
    }
}

/// What recovery must do with a good page at generation `on_disk` whose logged generation is
/// `logged` (never [`PageRedo::Damaged`]). Recovery that reads pages while it still scans the log
/// keeps the generation read and compares once the redo set is final.
pub fn compare_generations(on_disk: u64, logged: u64) -> PageRedo {
    if redo_needed(on_disk, logged) {
        PageRedo::Behind { on_disk }
    } else if on_disk > logged {
        PageRedo::Ahead { on_disk }
    } else {
        PageRedo::Current
    }
}

/// Builds into `buf` (one page) what recovery writes for page `page_number`: the page at the
/// logged `generation` (page content is a function of page number, database and generation).
pub fn redo_page(
    buf: &mut [u8],
    page_number: u64,
    database_id: u64,
    generation: u64,
    compressibility_pct: u8,
) {
    build_data_page(
        buf,
        &PageHeader {
            page_number,
            database_id,
            generation,
            kind: KIND_DATA,
            compressibility_pct,
        },
    );
}

/// True if a page whose generation on disk is `page_generation_on_disk` must be rewritten to
/// reach `entry_generation` (the generation the redo set holds for it).
pub fn redo_needed(page_generation_on_disk: u64, entry_generation: u64) -> bool {
    page_generation_on_disk < entry_generation
}

#[cfg(test)]
mod tests {
    use super::*;
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
    fn a_file_adds_its_records_from_the_checkpoint_on() {
        let scan = FileScan {
            generation: 1,
            header_valid: true,
            records: vec![
                record(0x1000, &[(7, 3)]),
                record(0x2000, &[(7, 4), (8, 2)]),
                record(0x3000, &[(9, 1)]),
            ],
            end: crate::log::ScanEnd::Clean { offset: 0x4000 },
        };
        let mut set = RedoSet::new();
        assert_eq!(add_file(&mut set, &scan, Lsn::new(1, 0x2000)), 2);
        assert_eq!(set, RedoSet::from([(7, 4), (8, 2), (9, 1)]));
        let mut all = RedoSet::new();
        assert_eq!(add_file(&mut all, &scan, Lsn::ZERO), 3);
        assert_eq!(all, set);
    }

    #[test]
    fn a_page_read_is_current_behind_ahead_or_damaged() {
        let mut page = vec![0u8; crate::page::PAGE_SIZE];
        let mut scratch = vec![0u8; crate::page::PAGE_SIZE];
        redo_page(&mut page, 12, 5, 40, 0);
        assert_eq!(
            classify_page(&page, 12, 5, 40, &mut scratch),
            PageRedo::Current
        );
        assert_eq!(
            classify_page(&page, 12, 5, 41, &mut scratch),
            PageRedo::Behind { on_disk: 40 }
        );
        assert_eq!(
            classify_page(&page, 12, 5, 39, &mut scratch),
            PageRedo::Ahead { on_disk: 40 }
        );
        assert!(matches!(
            classify_page(&page, 12, 6, 40, &mut scratch),
            PageRedo::Damaged(PageCheck::WrongDatabase { .. })
        ));
        page[1000] ^= 0xff;
        page[2000] ^= 0xff;
        assert_eq!(
            classify_page(&page, 12, 5, 40, &mut scratch),
            PageRedo::Damaged(PageCheck::Bad)
        );
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
