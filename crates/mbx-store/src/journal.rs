//! The generation journal: a small file beside each database holding, for every data page, the
//! write generation of its last write known durable, so that a page rolled back to an older copy
//! between runs is found by `verify`, the Checksum test and the next run (docs/store-format.md,
//! "Generation journal").
//!
//! Layout (all integers little-endian): a 4,096-byte header, 0 magic `MBXGENJ1` (8), 8 checksum
//! (8, XXH3-64 of the rest of the header), 16 database id (8), 24 format version (4), 28 entry
//! size (4, = 8), 32 data pages (8), 40 the page number of the first entry (8, = 2); then one
//! 8-byte entry per data page: the entry of page `n` is at `4096 + 8 (n - 2)`. A missing or
//! zero entry (the file may be shorter, or sparse) is generation 0, what `prepare` writes every
//! page at.
//!
//! The rule: a valid page whose generation is *lower* than its entry is stale. The writer keeps
//! every entry at or below the generation on disk: an entry is written only after a sync of the
//! database file that covers the page write, so after a crash the journal may lag the pages
//! (pages ahead of it are fine) but never leads them. Entries are full generations, not a few
//! bits of them: "older than" needs the order, which a crash that leaves pages ahead of the
//! journal makes necessary.

use std::path::{Path, PathBuf};

use mbx_io::{IoFile, OpenMode};

use crate::header::HEADER_PAGES;
use crate::page::{open_block, seal_block};
use crate::StoreError;

/// Header magic.
pub const JOURNAL_MAGIC: &[u8; 8] = b"MBXGENJ1";
/// Format version of the journal.
pub const JOURNAL_VERSION: u32 = 1;
/// Bytes of the header; the entries follow.
pub const JOURNAL_HEADER_BYTES: usize = 4096;
/// Bytes per entry (one generation).
pub const ENTRY_BYTES: usize = 8;
/// What the journal's file name adds to the database file's.
pub const JOURNAL_SUFFIX: &str = ".gens";

/// The journal of the database at `db_path`: `<database file>.gens` beside it. `None` for a
/// block device (nothing can be put beside it): stale pages across runs are not checked there.
pub fn journal_path(db_path: &Path) -> Option<PathBuf> {
    if mbx_io::platform::is_block_device(db_path).unwrap_or(false) {
        return None;
    }
    let name = db_path.file_name()?;
    let mut name = name.to_os_string();
    name.push(JOURNAL_SUFFIX);
    Some(db_path.with_file_name(name))
}

/// The byte offset of page `page`'s entry (`None` for a header page).
pub fn entry_offset(page: u64) -> Option<u64> {
    let index = page.checked_sub(HEADER_PAGES)?;
    index
        .checked_mul(ENTRY_BYTES as u64)?
        .checked_add(JOURNAL_HEADER_BYTES as u64)
}

/// The length of a complete journal of `data_pages` pages.
pub fn journal_len(data_pages: u64) -> u64 {
    data_pages
        .saturating_mul(ENTRY_BYTES as u64)
        .saturating_add(JOURNAL_HEADER_BYTES as u64)
}

/// The entry at `index` of a run of entries (0 beyond its end).
pub fn entry_at(entries: &[u8], index: usize) -> u64 {
    index
        .checked_mul(ENTRY_BYTES)
        .and_then(|o| entries.get(o..o + ENTRY_BYTES))
        .and_then(|b| b.try_into().ok())
        .map_or(0, u64::from_le_bytes)
}

/// True if a valid page of generation `found` is stale against its journal entry `entry`.
pub fn is_stale(found: u64, entry: u64) -> bool {
    found < entry
}

/// The journal header.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct JournalHeader {
    /// The database the journal belongs to.
    pub database_id: u64,
    /// Its data pages.
    pub data_pages: u64,
}

impl JournalHeader {
    /// Encodes into the first [`JOURNAL_HEADER_BYTES`] of `buf`.
    ///
    /// # Panics
    /// If `buf` is shorter than [`JOURNAL_HEADER_BYTES`].
    pub fn encode(&self, buf: &mut [u8]) {
        seal_block(buf, JOURNAL_HEADER_BYTES, JOURNAL_MAGIC, |h| {
            h[16..24].copy_from_slice(&self.database_id.to_le_bytes());
            h[24..28].copy_from_slice(&JOURNAL_VERSION.to_le_bytes());
            h[28..32].copy_from_slice(&(ENTRY_BYTES as u32).to_le_bytes());
            h[32..40].copy_from_slice(&self.data_pages.to_le_bytes());
            h[40..48].copy_from_slice(&HEADER_PAGES.to_le_bytes());
        });
    }

    /// Decodes a header: `None` unless magic, checksum, version and layout are ours.
    pub fn decode(buf: &[u8]) -> Option<JournalHeader> {
        let h = open_block(buf, JOURNAL_HEADER_BYTES, JOURNAL_MAGIC)?;
        let u64_at = |o: usize| h[o..o + 8].try_into().ok().map(u64::from_le_bytes);
        let u32_at = |o: usize| h[o..o + 4].try_into().ok().map(u32::from_le_bytes);
        if u32_at(24)? != JOURNAL_VERSION
            || u32_at(28)? != ENTRY_BYTES as u32
            || u64_at(40)? != HEADER_PAGES
        {
            return None;
        }
        Some(JournalHeader {
            database_id: u64_at(16)?,
            data_pages: u64_at(32)?,
        })
    }

    /// True if this is the header of a journal of database `database_id` of `data_pages`.
    pub fn belongs_to(&self, database_id: u64, data_pages: u64) -> bool {
        self.database_id == database_id && self.data_pages == data_pages
    }
}

/// What `prepare` did to a database's journal.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum JournalAction {
    /// A valid journal of this database was kept.
    Kept,
    /// A new, empty journal was written (none was there, or it was not this database's).
    Created,
    /// The database is a block device: no journal.
    NotAvailable,
}

fn open(path: &Path, write: bool, create: bool) -> Result<IoFile, StoreError> {
    Ok(IoFile::open(path, OpenMode::buffered(write, create))?)
}

/// Writes a new, empty journal for database `database_id` of `data_pages` data pages (every
/// entry 0: the generation `prepare` writes), replacing whatever file is at the journal's path,
/// and makes it durable.
pub fn create_journal(
    db_path: &Path,
    database_id: u64,
    data_pages: u64,
) -> Result<JournalAction, StoreError> {
    let Some(path) = journal_path(db_path) else {
        return Ok(JournalAction::NotAvailable);
    };
    let f = open(&path, true, true)?;
    // Entries of an earlier database must not survive: cut the file, then extend it (sparse).
    f.set_len(0)?;
    let mut head = vec![0u8; JOURNAL_HEADER_BYTES];
    JournalHeader {
        database_id,
        data_pages,
    }
    .encode(&mut head);
    f.write_all_at(&head, 0)?;
    f.set_len(journal_len(data_pages))?;
    f.sync_data()?;
    Ok(JournalAction::Created)
}

/// Keeps the journal of a database being attached when it is this database's; otherwise (none
/// there: a database prepared by an earlier version; or another database's) writes a new, empty
/// one. An empty journal knows nothing yet: every entry is 0, which no page is older than.
pub fn ensure_journal(
    db_path: &Path,
    database_id: u64,
    data_pages: u64,
) -> Result<JournalAction, StoreError> {
    let Some(path) = journal_path(db_path) else {
        return Ok(JournalAction::NotAvailable);
    };
    if read_header(&path)?.is_some_and(|h| h.belongs_to(database_id, data_pages)) {
        return Ok(JournalAction::Kept);
    }
    create_journal(db_path, database_id, data_pages)
}

/// The header of the journal at `path`: `None` if there is no file, or it is too short or not a
/// valid journal header.
fn read_header(path: &Path) -> Result<Option<JournalHeader>, StoreError> {
    let f = match IoFile::open(path, OpenMode::read_buffered()) {
        Ok(f) => f,
        Err(mbx_io::IoError::Os { error, .. }) if error.kind() == std::io::ErrorKind::NotFound => {
            return Ok(None)
        }
        Err(e) => return Err(e.into()),
    };
    if f.len()? < JOURNAL_HEADER_BYTES as u64 {
        return Ok(None);
    }
    let mut head = vec![0u8; JOURNAL_HEADER_BYTES];
    f.read_exact_at(&mut head, 0)?;
    Ok(JournalHeader::decode(&head))
}

/// Bytes a [`JournalReader`] reads at once (entries of 4,096 pages).
const READ_WINDOW: usize = 32 * 1024;

/// Reads a database's journal entries in order, a window at a time (for `verify`): memory is one
/// window, whatever the database size.
#[derive(Debug)]
pub struct JournalReader {
    file: IoFile,
    len: u64,
    /// Journal byte offset of `window`'s first byte.
    start: u64,
    window: Vec<u8>,
}

/// Whether a database has a journal to check its pages against, and if not why.
#[derive(Debug)]
pub enum JournalOpen {
    /// This database's journal.
    Reader(JournalReader),
    /// None: the reason, for the report.
    NotAvailable(String),
}

impl JournalReader {
    /// Opens the journal of the database at `db_path` (id `database_id`, `data_pages` pages).
    /// Its absence, or a journal of another database, is not an error: it says why there is no
    /// check.
    pub fn open(
        db_path: &Path,
        database_id: u64,
        data_pages: u64,
    ) -> Result<JournalOpen, StoreError> {
        let Some(path) = journal_path(db_path) else {
            return Ok(JournalOpen::NotAvailable(
                "the database is a block device: no generation journal beside it".into(),
            ));
        };
        match read_header(&path)? {
            None if !path.exists() => Ok(JournalOpen::NotAvailable(format!(
                "no generation journal ({}): the database was prepared by an earlier version; the next run or prepare creates one",
                path.display()
            ))),
            None => Ok(JournalOpen::NotAvailable(format!(
                "{} is not a valid generation journal",
                path.display()
            ))),
            Some(h) if !h.belongs_to(database_id, data_pages) => {
                Ok(JournalOpen::NotAvailable(format!(
                    "{} is the generation journal of another database",
                    path.display()
                )))
            }
            Some(_) => {
                let file = open(&path, false, false)?;
                let len = file.len()?;
                Ok(JournalOpen::Reader(JournalReader {
                    file,
                    len,
                    start: 0,
                    window: Vec::new(),
                }))
            }
        }
    }

    /// The entry of data page `page` (0 for a header page or past the file's end).
    pub fn entry(&mut self, page: u64) -> Result<u64, StoreError> {
        let Some(offset) = entry_offset(page) else {
            return Ok(0);
        };
        if offset.saturating_add(ENTRY_BYTES as u64) > self.len {
            return Ok(0);
        }
        let end = self.start.saturating_add(self.window.len() as u64);
        if offset < self.start || offset.saturating_add(ENTRY_BYTES as u64) > end {
            // A window starting at this entry, up to the end of the file.
            let n = (self.len - offset).min(READ_WINDOW as u64) as usize;
            self.window.resize(n, 0);
            self.file.read_exact_at(&mut self.window, offset)?;
            self.start = offset;
        }
        let within = (offset - self.start) as usize;
        Ok(entry_at(&self.window[within..], 0))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn header_round_trips_and_rejects_damage() {
        let h = JournalHeader {
            database_id: 0x5eed,
            data_pages: 1000,
        };
        let mut buf = vec![0u8; JOURNAL_HEADER_BYTES];
        h.encode(&mut buf);
        assert_eq!(JournalHeader::decode(&buf), Some(h));
        assert!(h.belongs_to(0x5eed, 1000) && !h.belongs_to(0x5eed, 999));
        let mut bad = buf.clone();
        bad[20] ^= 1;
        assert_eq!(JournalHeader::decode(&bad), None);
        assert_eq!(JournalHeader::decode(&buf[..100]), None);
    }

    #[test]
    fn entries_sit_after_the_header_one_per_data_page() {
        assert_eq!(entry_offset(0), None);
        assert_eq!(entry_offset(1), None);
        assert_eq!(entry_offset(2), Some(4096));
        assert_eq!(entry_offset(3), Some(4104));
        assert_eq!(journal_len(10), 4096 + 80);
        let mut run = vec![0u8; 16];
        run[8..].copy_from_slice(&7u64.to_le_bytes());
        assert_eq!(
            (entry_at(&run, 0), entry_at(&run, 1), entry_at(&run, 2)),
            (0, 7, 0)
        );
        assert!(is_stale(6, 7) && !is_stale(7, 7) && !is_stale(8, 7));
        assert_eq!(
            journal_path(Path::new("/d/mbxstress001.edb")),
            Some(PathBuf::from("/d/mbxstress001.edb.gens"))
        );
    }

    #[test]
    fn prepare_creates_keeps_and_replaces_journals() {
        let dir = tempfile::tempdir().expect("tempdir");
        let db = dir.path().join("a.edb");
        assert_eq!(
            ensure_journal(&db, 7, 100).expect("create"),
            JournalAction::Created
        );
        let path = journal_path(&db).expect("path");
        assert_eq!(
            std::fs::metadata(&path).expect("journal").len(),
            journal_len(100)
        );
        // An entry written by a run survives attaching again ...
        let f = open(&path, true, false).expect("open");
        f.write_all_at(&42u64.to_le_bytes(), entry_offset(5).expect("offset"))
            .expect("write");
        assert_eq!(
            ensure_journal(&db, 7, 100).expect("keep"),
            JournalAction::Kept
        );
        let JournalOpen::Reader(mut r) = JournalReader::open(&db, 7, 100).expect("open") else {
            panic!("a journal");
        };
        assert_eq!((r.entry(5).expect("5"), r.entry(6).expect("6")), (42, 0));
        assert_eq!(r.entry(101).expect("last"), 0);
        assert_eq!(r.entry(500).expect("past the end"), 0);
        // ... but not a database of another id: its entries would be another database's.
        assert!(matches!(
            JournalReader::open(&db, 8, 100).expect("open"),
            JournalOpen::NotAvailable(_)
        ));
        assert_eq!(
            ensure_journal(&db, 8, 100).expect("replace"),
            JournalAction::Created
        );
        let JournalOpen::Reader(mut r) = JournalReader::open(&db, 8, 100).expect("open") else {
            panic!("a journal");
        };
        assert_eq!(r.entry(5).expect("5"), 0);
        // No journal at all: not available, with the reason.
        let JournalOpen::NotAvailable(why) =
            JournalReader::open(&dir.path().join("b.edb"), 7, 100).expect("open")
        else {
            panic!("no journal");
        };
        assert!(why.contains("earlier version"), "{why}");
    }
}
