//! What is wrong with a page read back: the verifier ([`super::verify`]) finds it, and the
//! generation journal ([`super::journal`]) finds it for a read that waited for its entries. Its
//! own file so both depend on it downward (neither on the other for it).

use mbx_store::page::PageCheck;

use crate::result::{ErrorClass, Integrity};

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
    /// A valid page at generation `found`, older than the `expected` one its generation journal
    /// records as written and made durable (by this run or an earlier one).
    StaleAcrossRuns { found: u64, expected: u64 },
    /// A damaged page rewritten from its known content at `generation` (page patching).
    Patched { generation: u64 },
}

impl Finding {
    /// The `errors[]` class.
    pub fn class(self) -> ErrorClass {
        match self {
            Finding::Checksum => ErrorClass::BadPage,
            Finding::Correctable => ErrorClass::CorrectablePage,
            Finding::Unwritten => ErrorClass::UnwrittenPage,
            Finding::WrongPage { .. } => ErrorClass::WrongPageNumber,
            Finding::WrongDatabase { .. } => ErrorClass::WrongDatabasePage,
            Finding::Stale { .. } | Finding::StaleAcrossRuns { .. } => ErrorClass::StalePage,
            Finding::Patched { .. } => ErrorClass::PatchedPage,
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
            Finding::StaleAcrossRuns { found, expected } => format!(
                "stale (generation {found}; the generation journal records generation {expected} written and made durable: the page was rolled back to an older copy, or that write was lost)"
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
            Finding::Stale { .. } | Finding::StaleAcrossRuns { .. } => integrity.stale_pages += 1,
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
