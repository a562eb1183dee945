//! The verification primitive: read a database sequentially (an [`mbx_io::seq`] read pass, pages
//! classified in file order) and classify every page.
//!
//! Counters (what the checksum test type reports, see docs/store-format.md):
//! - `seen_pages`: every page of the file, header pages included (file size / 32 KiB).
//! - `bad_pages`: pages whose content cannot be trusted: checksum failures beyond one bit (torn,
//!   overwritten, garbage), all-zero pages, pages of another database, damaged header copies.
//! - `correctable_pages`: checksum failures explained by exactly one flipped bit (what ESE's ECC
//!   corrects); not counted as bad.
//! - `wrong_page_number_pages`: valid pages of this database stored at the wrong position
//!   (misdirected writes); not counted as bad, reported separately as Jetstress does.
//! - `stale_pages`: valid pages older than the generation the database's journal
//!   ([`crate::journal`]) records for them: rolled back to an older copy, or a write lost, since
//!   that write was made durable. Checked only where the journal is available (`stale_check`
//!   says so, or why not).

use std::path::{Path, PathBuf};
use std::sync::atomic::AtomicBool;
use std::sync::Arc;
use std::time::Instant;

use mbx_io::seq::{run_pass, ChunkData, SeqOp, SeqPass};
use mbx_io::{open_queue, EngineKind, IoFile, OpenMode};
use serde::Serialize;

use crate::header::{DbHeader, DbState, HEADER_PAGES};
use crate::page::{check_data_page, PageCheck, PAGE_SIZE};
use crate::StoreError;

/// How to read.
#[derive(Debug, Clone, Copy)]
pub struct VerifyOptions {
    /// Backend.
    pub engine: EngineKind,
    /// O_DIRECT.
    pub direct: bool,
    /// Bytes per read (a multiple of 32 KiB; Jetstress's checksum pass reads 64 KiB).
    pub read_bytes: usize,
    /// Reads in flight.
    pub queue_depth: usize,
}

impl Default for VerifyOptions {
    fn default() -> Self {
        VerifyOptions {
            engine: EngineKind::default(),
            direct: true,
            read_bytes: 1 << 20,
            queue_depth: 4,
        }
    }
}

/// One problem page, for the report (the first few are kept).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct PageProblem {
    /// Page number (position).
    pub page: u64,
    /// "bad", "unwritten", "correctable", "wrong_page_number", "wrong_database", "bad_header",
    /// "stale".
    pub kind: &'static str,
    /// The page number, database id or (stale) generation the page carried, when relevant.
    pub found: Option<u64>,
    /// For a stale page: the generation its journal entry records.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub expected: Option<u64>,
    /// Byte offset of the page in the file.
    pub offset: u64,
    /// What is wrong, in words (as the Checksum test's `errors[].message` says it).
    pub reason: String,
}

impl PageProblem {
    fn new(page: u64, kind: &'static str, found: Option<u64>, expected: Option<u64>) -> Self {
        let reason = match (kind, found, expected) {
            ("unwritten", ..) => "is all zeros (never written, or zeroed by the device)".into(),
            ("bad", ..) => "fails its checksum beyond one bit (torn, overwritten or garbage)".into(),
            ("correctable", ..) => "has exactly one flipped bit (correctable)".into(),
            ("wrong_page_number", Some(f), _) => {
                format!("holds another page of this database (a misdirected write): page {f}")
            }
            ("wrong_database", Some(f), _) => {
                format!("holds a page of another database: id {f:#x}")
            }
            ("bad_header", ..) => {
                "is not a header copy of this database (damaged or overwritten)".into()
            }
            ("stale", Some(f), Some(e)) => format!(
                "carries generation {f}, older than the generation {e} its journal records written and made durable (rolled back to an older copy, or that write was lost)"
            ),
            (other, ..) => other.replace('_', " "),
        };
        PageProblem {
            page,
            kind,
            found,
            expected,
            offset: page.saturating_mul(PAGE_SIZE as u64),
            reason,
        }
    }
}

/// Result of verifying one database (the `checksum` entries of the result contract).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct VerifyReport {
    /// The file.
    pub database_path: PathBuf,
    /// Pages read.
    pub seen_pages: u64,
    /// Untrustworthy pages (see the module documentation).
    pub bad_pages: u64,
    /// Single-bit errors.
    pub correctable_pages: u64,
    /// Valid pages at the wrong position.
    pub wrong_page_number_pages: u64,
    /// Pages of another database (included in `bad_pages`).
    pub wrong_database_pages: u64,
    /// All-zero pages (included in `bad_pages`).
    pub unwritten_pages: u64,
    /// Bytes read.
    pub bytes: u64,
    /// Seconds taken.
    pub elapsed_s: f64,
    /// The first problems found (at most 20).
    pub problems: Vec<PageProblem>,
    /// Bytes in the file beyond the database's last page (something appended to it).
    pub trailing_bytes: u64,
    /// Valid pages older than their journal entry (rolled back, or a write lost).
    pub stale_pages: u64,
    /// "journal" when pages were checked against the generation journal; otherwise why not.
    pub stale_check: String,
}

impl VerifyReport {
    /// True if no page is bad, correctable, misplaced or stale.
    pub fn is_clean(&self) -> bool {
        self.bad_pages == 0
            && self.correctable_pages == 0
            && self.wrong_page_number_pages == 0
            && self.stale_pages == 0
            && self.trailing_bytes == 0
    }

    fn note(&mut self, page: u64, kind: &'static str, found: Option<u64>) {
        if self.problems.len() < 20 {
            self.problems
                .push(PageProblem::new(page, kind, found, None));
        }
    }

    fn count(&mut self, page: u64, check: PageCheck) {
        match check {
            PageCheck::Good { .. } => {}
            PageCheck::Unwritten => {
                self.bad_pages += 1;
                self.unwritten_pages += 1;
                self.note(page, "unwritten", None);
            }
            PageCheck::Bad => {
                self.bad_pages += 1;
                self.note(page, "bad", None);
            }
            PageCheck::Correctable => {
                self.correctable_pages += 1;
                self.note(page, "correctable", None);
            }
            PageCheck::WrongPageNumber { found } => {
                self.wrong_page_number_pages += 1;
                self.note(page, "wrong_page_number", Some(found));
            }
            PageCheck::WrongDatabase { found } => {
                self.bad_pages += 1;
                self.wrong_database_pages += 1;
                self.note(page, "wrong_database", Some(found));
            }
        }
    }
}

/// Which of the two header copies (0, 1) of a database cannot be decoded or belong to another
/// database than the newest valid copy. Empty when both are intact.
pub fn damaged_header_copies(path: &Path) -> Result<Vec<u64>, StoreError> {
    let two = read_header_pages(path)?;
    let Some(newest) = DbHeader::from_first_pages(&two) else {
        return Err(StoreError::NotADatabase {
            path: path.to_path_buf(),
        });
    };
    Ok(newest.damaged_copies(&two))
}

/// Reads the header of a database file: `NotADatabase` if it is readable and not one (too short,
/// or neither header copy valid), an I/O error if it cannot be read.
pub fn read_database_header(path: &Path) -> Result<DbHeader, StoreError> {
    let two = read_header_pages(path)?;
    DbHeader::from_first_pages(&two).ok_or_else(|| StoreError::NotADatabase {
        path: path.to_path_buf(),
    })
}

/// Data pages looked at when neither header copy is valid, to tell a database whose header was
/// destroyed from a file that never was one.
const PAGES_PROBED: u64 = 8;

/// The header of the database to verify. Neither copy valid is damage, not a foreign file, when
/// the pages after them are mbxstress data pages (both copies zeroed or overwritten: the audit's
/// case); otherwise `NotADatabase`.
fn header_or_damage(path: &Path) -> Result<DbHeader, StoreError> {
    match read_database_header(path) {
        Err(StoreError::NotADatabase { .. }) => {}
        other => return other,
    }
    let f = IoFile::open(path, OpenMode::read_buffered())?;
    let mut page = vec![0u8; PAGE_SIZE];
    let mut scratch = vec![0u8; PAGE_SIZE];
    for n in HEADER_PAGES..HEADER_PAGES + PAGES_PROBED {
        if f.read_exact_at(&mut page, n * PAGE_SIZE as u64).is_err() {
            break;
        }
        let id = match check_data_page(&page, n, 0, &mut scratch) {
            PageCheck::WrongDatabase { found } => found,
            PageCheck::Good { .. } => 0,
            _ => continue,
        };
        return Err(StoreError::Damaged {
            path: path.to_path_buf(),
            reason: format!(
                "both header copies (pages 0 and 1) are unreadable (zeroed or overwritten), but page {n} is an mbxstress data page of database {id:#x}: the header was destroyed, the pages cannot be checked without it; recreate the database with `mbxstress prepare --force`"
            ),
        });
    }
    Err(StoreError::NotADatabase {
        path: path.to_path_buf(),
    })
}

/// The two header pages of a database file (buffered read). A file that ends before them is
/// `NotADatabase`; a read that fails is an I/O error naming the file, the offset and the OS error
/// (a disk error is never mistaken for a foreign file).
fn read_header_pages(path: &Path) -> Result<Vec<u8>, StoreError> {
    let f = IoFile::open(path, OpenMode::read_buffered())?;
    let mut two = vec![0u8; 2 * PAGE_SIZE];
    match f.read_exact_at(&mut two, 0) {
        Ok(()) => Ok(two),
        Err(mbx_io::IoError::Os { error, .. })
            if error.kind() == std::io::ErrorKind::UnexpectedEof =>
        {
            Err(StoreError::NotADatabase {
                path: path.to_path_buf(),
            })
        }
        Err(e) => Err(e.into()),
    }
}

/// Verifies every page of the database at `path`. `on_progress` gets the bytes read so far.
pub fn verify_database(
    path: &Path,
    opts: &VerifyOptions,
    cancel: &AtomicBool,
    on_progress: &dyn Fn(u64),
) -> Result<VerifyReport, StoreError> {
    let started = Instant::now();
    let header = header_or_damage(path)?;
    if header.state == DbState::Creating {
        return Err(StoreError::Incomplete {
            path: path.to_path_buf(),
            created: header.created_pages,
            total: header.data_pages(),
        });
    }
    let read_bytes = (opts.read_bytes / PAGE_SIZE).max(1) * PAGE_SIZE;
    let file = IoFile::open(
        path,
        OpenMode {
            direct: opts.direct,
            ..OpenMode::read_direct()
        },
    )?;
    let file_len = file.len()?;
    if file_len < header.file_bytes() {
        return Err(StoreError::Damaged {
            path: path.to_path_buf(),
            reason: format!(
                "the file has {file_len} bytes but its header says {}",
                header.file_bytes()
            ),
        });
    }
    let files = mbx_io::Files::new(vec![file]);
    let mut queue = open_queue(opts.engine, Arc::clone(&files), opts.queue_depth.max(1))?;
    let mut report = VerifyReport {
        database_path: path.to_path_buf(),
        seen_pages: 0,
        bad_pages: 0,
        correctable_pages: 0,
        wrong_page_number_pages: 0,
        wrong_database_pages: 0,
        unwritten_pages: 0,
        bytes: 0,
        elapsed_s: 0.0,
        problems: Vec::new(),
        stale_pages: 0,
        stale_check: String::new(),
        // A device may be larger than the database; a file must end where the database ends.
        trailing_bytes: if mbx_io::platform::is_block_device(path).unwrap_or(false) {
            0
        } else {
            file_len.saturating_sub(header.file_bytes())
        },
    };
    let mut journal =
        match crate::journal::JournalReader::open(path, header.database_id, header.data_pages())? {
            crate::journal::JournalOpen::Reader(r) => {
                report.stale_check = "journal".into();
                Some(r)
            }
            crate::journal::JournalOpen::NotAvailable(why) => {
                report.stale_check = why;
                None
            }
        };
    let page_bytes = PAGE_SIZE as u64;
    let end = header.page_count.saturating_mul(page_bytes);
    let mut pass = SeqPass::new(0..end, read_bytes, opts.queue_depth.max(1), SeqOp::Read)
        .map_err(|e| StoreError::Invalid(e.to_string()))?;
    let mut scratch = vec![0u8; PAGE_SIZE];
    // Chunks come in offset order, so the problems listed are the first ones in the file.
    let mut check = |offset: u64, data: &[u8]| -> Result<(), StoreError> {
        let first = offset / page_bytes;
        for (i, page) in data.chunks_exact(PAGE_SIZE).enumerate() {
            let n = first + i as u64;
            report.seen_pages += 1;
            if n < HEADER_PAGES {
                if DbHeader::decode(page).map(|h| h.database_id) != Some(header.database_id) {
                    report.bad_pages += 1;
                    report.note(n, "bad_header", None);
                }
                continue;
            }
            let check = check_data_page(page, n, header.database_id, &mut scratch);
            if let (PageCheck::Good { generation }, Some(j)) = (check, journal.as_mut()) {
                let entry = j.entry(n)?;
                if crate::journal::is_stale(generation, entry) {
                    report.stale_pages += 1;
                    if report.problems.len() < 20 {
                        report.problems.push(PageProblem::new(
                            n,
                            "stale",
                            Some(generation),
                            Some(entry),
                        ));
                    }
                }
            }
            report.count(n, check);
        }
        report.bytes += data.len() as u64;
        Ok(())
    };
    // Cancelled or complete, the report says what was read.
    let _ended = run_pass(
        &mut *queue,
        0,
        &mut pass,
        ChunkData::Check(&mut check),
        &mut |pass: &SeqPass| {
            on_progress(pass.done_bytes());
            Ok(())
        },
        cancel,
    )?;
    report.elapsed_s = started.elapsed().as_secs_f64();
    Ok(report)
}
