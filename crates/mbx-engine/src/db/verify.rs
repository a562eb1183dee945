//! The verifier: every page read is checked (checksum, page number, database id) and, while the
//! page tracker remembers its last write, for staleness (a lost write).

use mbx_store::page::{check_data_page, PageCheck, PAGE_SIZE};

use super::pages::{Known, PageTracker};
use crate::result::Integrity;

/// Checks the pages read at `first..`; `scan_seq` (a BDM read submitted at that sequence) skips
/// pages written while the read ran: a write in flight may have been read half-done. Returns the
/// first page found bad, if any.
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
) -> Option<u64> {
    let mut first_bad = None;
    for (k, page) in data
        .chunks_exact(PAGE_SIZE)
        .take(count as usize)
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
        let found = match check_data_page(page, n, database_id, scratch) {
            PageCheck::Good { generation } => {
                let stale = matches!(known, Known::Written { gen, .. } if generation < gen);
                if stale {
                    integrity.stale_pages += 1;
                }
                stale
            }
            PageCheck::Correctable => {
                integrity.correctable_pages += 1;
                true
            }
            PageCheck::WrongPageNumber { .. } => {
                integrity.wrong_page_number_pages += 1;
                true
            }
            PageCheck::Bad | PageCheck::Unwritten | PageCheck::WrongDatabase { .. } => {
                integrity.bad_pages += 1;
                true
            }
        };
        if found && first_bad.is_none() {
            first_bad = Some(n);
        }
    }
    first_bad
}
