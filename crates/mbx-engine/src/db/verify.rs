//! The verifier: every page read is checked (checksum, page number, database id) and, while the
//! page tracker remembers its last write, for staleness (a lost write). Each damaged page is
//! counted in its class and named in the database's [`Damage`] list.

use std::path::Path;
use std::time::SystemTime;

use mbx_store::page::{check_data_page, PageCheck, PAGE_SIZE};

use super::pages::{Known, PageTracker};
use crate::result::{ErrorEntry, Integrity};

/// Damaged pages named one by one per database; beyond them one entry per class counts the rest.
pub(crate) const NAMED_PAGES: usize = 64;

/// What is wrong with a page read back.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Finding {
    /// The checksum fails beyond one bit (torn, overwritten, garbage).
    Checksum,
    /// Exactly one flipped bit.
    Correctable,
    /// All zeros.
    Unwritten,
    /// A valid page of this database holding page `found`.
    WrongPage { found: u64 },
    /// A valid page of database `found`.
    WrongDatabase { found: u64 },
    /// A valid page at generation `found`, older than the `expected` one last written.
    Stale { found: u64, expected: u64 },
    /// A damaged page rewritten from its known content at `generation` (page patching).
    Patched { generation: u64 },
}

impl Finding {
    /// The `errors[]` class.
    pub fn class(self) -> &'static str {
        match self {
            Finding::Checksum => "bad_page",
            Finding::Correctable => "correctable_page",
            Finding::Unwritten => "unwritten_page",
            Finding::WrongPage { .. } => "wrong_page_number",
            Finding::WrongDatabase { .. } => "wrong_database_page",
            Finding::Stale { .. } => "stale_page",
            Finding::Patched { .. } => "patched_page",
        }
    }

    /// What is wrong, in words.
    pub fn what(self) -> String {
        match self {
            Finding::Checksum => "checksum mismatch beyond one bit (torn, overwritten or garbage)".into(),
            Finding::Correctable => "checksum mismatch of exactly one bit (correctable)".into(),
            Finding::Unwritten => "all zeros (never written, or zeroed by the device)".into(),
            Finding::WrongPage { found } => format!("wrong page number (holds page {found})"),
            Finding::WrongDatabase { found } => {
                format!("a page of another database (id {found:#x})")
            }
            Finding::Stale { found, expected } => format!(
                "stale (generation {found}, last written {expected}: a lost write)"
            ),
            Finding::Patched { generation } => format!(
                "patched: rewritten from its known content at generation {generation}, as a passive copy would patch it"
            ),
        }
    }

    /// Counts the finding in `integrity`.
    pub fn count(self, integrity: &mut Integrity) {
        match self {
            Finding::Checksum => integrity.bad_pages += 1,
            Finding::Correctable => integrity.correctable_pages += 1,
            Finding::Unwritten => {
                integrity.bad_pages += 1;
                integrity.unwritten_pages += 1;
            }
            Finding::WrongPage { .. } => integrity.wrong_page_number_pages += 1,
            Finding::WrongDatabase { .. } => {
                integrity.bad_pages += 1;
                integrity.wrong_database_pages += 1;
            }
            Finding::Stale { .. } => integrity.stale_pages += 1,
            Finding::Patched { .. } => integrity.patched_pages += 1,
        }
    }

    /// The finding of a page check that is not good (None when it is).
    pub fn of_check(check: PageCheck) -> Option<Finding> {
        match check {
            PageCheck::Good { .. } => None,
            PageCheck::Unwritten => Some(Finding::Unwritten),
            PageCheck::Bad => Some(Finding::Checksum),
            PageCheck::Correctable => Some(Finding::Correctable),
            PageCheck::WrongPageNumber { found } => Some(Finding::WrongPage { found }),
            PageCheck::WrongDatabase { found } => Some(Finding::WrongDatabase { found }),
        }
    }
}

/// The damaged pages of one database, in bounded memory: the first [`NAMED_PAGES`] named (one
/// `errors[]` entry each), then one counting entry per class.
#[derive(Debug, Default)]
pub(crate) struct Damage {
    /// One entry per damaged page, in the order found.
    pub named: Vec<ErrorEntry>,
    /// Pages beyond the named ones: (class, count, first seen).
    pub rest: Vec<(&'static str, u64, SystemTime)>,
}

impl Damage {
    /// Records `finding` on `page` of the database `instance` at `path`, met at `at`.
    pub fn record(
        &mut self,
        instance: &str,
        path: &Path,
        page: u64,
        finding: Finding,
        at: SystemTime,
    ) {
        let class = finding.class();
        // A page met again (a transaction read, then a BDM read) keeps its one entry.
        if let Some(e) = self
            .named
            .iter_mut()
            .find(|e| e.page == Some(page) && e.class == class)
        {
            e.count += 1;
            return;
        }
        if self.named.len() < NAMED_PAGES {
            let offset = page.saturating_mul(PAGE_SIZE as u64);
            self.named.push(ErrorEntry {
                class: class.into(),
                instance: Some(instance.to_string()),
                count: 1,
                first_at: crate::rfc3339(at),
                message: format!(
                    "page {page} at offset {offset} of {}: {}",
                    path.display(),
                    finding.what()
                ),
                ..crate::located(Some(path), Some(offset), true)
            });
            return;
        }
        match self.rest.iter_mut().find(|r| r.0 == class) {
            Some(r) => r.1 += 1,
            None => self.rest.push((class, 1, at)),
        }
    }

    /// The `errors[]` entries: the named pages, then one per class for the rest.
    pub fn entries(&self, instance: &str, path: &Path) -> Vec<ErrorEntry> {
        let mut out = self.named.clone();
        for &(class, count, at) in &self.rest {
            out.push(ErrorEntry {
                class: class.into(),
                instance: Some(instance.to_string()),
                count,
                first_at: crate::rfc3339(at),
                message: format!(
                    "{count} more {class} pages in {} beyond the {NAMED_PAGES} named",
                    path.display()
                ),
                ..crate::located(Some(path), None, true)
            });
        }
        out
    }

    /// Pages counted so far per class (named and the rest).
    pub fn count_of(&self, class: &str) -> u64 {
        let named: u64 = self
            .named
            .iter()
            .filter(|e| e.class == class)
            .map(|e| e.count)
            .sum();
        let rest: u64 = self.rest.iter().filter(|r| r.0 == class).map(|r| r.1).sum();
        named + rest
    }
}

/// Checks the pages read at `first..`; `scan_seq` (a BDM read submitted at that sequence) skips
/// pages written while the read ran: a write in flight may have been read half-done. Each
/// damaged page is counted in `integrity` and pushed on `found` with what is wrong.
#[allow(clippy::too_many_arguments)]
pub(crate) fn verify_pages(
    integrity: &mut Integrity,
    pages: &PageTracker,
    database_id: u64,
    first: u64,
    count: u64,
    data: &[u8],
    scan_seq: Option<u64>,
    scratch: &mut [u8],
    found: &mut Vec<(u64, Finding)>,
) {
    for (k, page) in data
        .chunks_exact(PAGE_SIZE)
        .take(usize::try_from(count).unwrap_or(usize::MAX))
        .enumerate()
    {
        let n = first + k as u64;
        let known = pages.known(n);
        if let Some(seq) = scan_seq {
            let raced = match known {
                Known::InFlight { .. } => true,
                Known::Written { seq: done, .. } => done >= seq,
                Known::Unknown => false,
            };
            if raced {
                continue;
            }
        }
        integrity.pages_verified += 1;
        let finding = match check_data_page(page, n, database_id, scratch) {
            PageCheck::Good { generation } => match known {
                Known::Written { gen, .. } if generation < gen => Some(Finding::Stale {
                    found: generation,
                    expected: gen,
                }),
                _ => None,
            },
            check => Finding::of_check(check),
        };
        if let Some(f) = finding {
            f.count(integrity);
            found.push((n, f));
        }
    }
}
