//! The verifier: every page read is checked (page number, database id, and the checksum or the
//! block stamps) and for staleness: against its last write while the page tracker remembers it
//! (a lost write), otherwise against the generation journal (a page rolled back, or a write
//! lost, since an earlier run; [`super::journal`]). Each damaged page is counted in its class
//! and named in the database's [`Damage`] list.
//!
//! A transactional read checksums its whole page for `checksum_pct` percent of pages
//! ([`checksum_this`]); the others pass by the quick check of header and block stamps
//! (`mbx_store::page::quick_check_data_page`), which reads nine cache lines instead of 32 KiB.
//! A page failing the quick check, or without stamps (written by an earlier version), is
//! checksummed and classified as before. BDM reads checksum every page: checking pages is what
//! database maintenance is for.

use std::path::Path;
use std::time::SystemTime;

use mbx_store::page::{
    check_data_page, quick_check_data_page, splitmix64_mix, PageCheck, PAGE_SIZE, SPLITMIX_GAMMA,
};

use super::finding::Finding;
use super::journal::Journal;
use super::pages::{Known, PageTracker};
use crate::result::{ErrorClass, ErrorEntry, Integrity};

/// Damaged pages named one by one per database; beyond them one entry per class counts the rest.
pub(crate) const NAMED_PAGES: usize = 64;

/// The damaged pages of one database, in bounded memory: the first [`NAMED_PAGES`] named (one
/// `errors[]` entry each), then one counting entry per class.
#[derive(Debug, Default)]
pub(crate) struct Damage {
    /// One entry per damaged page, in the order found.
    pub named: Vec<ErrorEntry>,
    /// Pages beyond the named ones: (class, count, first seen).
    pub rest: Vec<(ErrorClass, u64, SystemTime)>,
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
                class: class.clone(),
                instance: Some(instance.to_string()),
                count: 1,
                first_at: crate::rfc3339(at),
                message: format!(
                    "page {page} at offset {offset} of {}: {}",
                    path.display(),
                    finding.what()
                ),
                ..crate::errors::located(Some(path), Some(offset), true)
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
        for (class, count, at) in &self.rest {
            let (count, at) = (*count, *at);
            out.push(ErrorEntry {
                class: class.clone(),
                instance: Some(instance.to_string()),
                count,
                first_at: crate::rfc3339(at),
                message: format!(
                    "{count} more {class} pages in {} beyond the {NAMED_PAGES} named",
                    path.display()
                ),
                ..crate::errors::located(Some(path), None, true)
            });
        }
        out
    }

    /// Pages counted so far per class (named and the rest).
    pub fn count_of(&self, class: &ErrorClass) -> u64 {
        let named: u64 = self
            .named
            .iter()
            .filter(|e| &e.class == class)
            .map(|e| e.count)
            .sum();
        let rest: u64 = self
            .rest
            .iter()
            .filter(|r| &r.0 == class)
            .map(|r| r.1)
            .sum();
        named + rest
    }
}

/// Whether the read of `page`, the `seen`-th page verified, checksums its whole page:
/// `pct` percent of reads, picked by a SplitMix64 hash of both (spread evenly over pages and
/// time; which reads are picked follows the order reads complete in).
pub(crate) fn checksum_this(pct: u8, page: u64, seen: u64) -> bool {
    if pct >= 100 {
        return true;
    }
    let z = splitmix64_mix((page ^ seen.rotate_left(32)).wrapping_add(SPLITMIX_GAMMA));
    z % 100 < u64::from(pct)
}

/// Checks the pages read at `first..`; `scan_seq` (a BDM read submitted at that sequence) skips
/// pages written while the read ran: a write in flight may have been read half-done. A BDM
/// read checksums every page, a transactional one `checksum_pct` percent of them (the rest pass
/// by header and block stamps, or are checksummed when they do not). A valid page the tracker
/// remembers nothing of is checked against `journal` (`seq`: the reactor's sequence number now).
/// Each damaged page is counted in `integrity` and pushed on `found` with what is wrong.
#[allow(clippy::too_many_arguments)]
pub(crate) fn verify_pages(
    integrity: &mut Integrity,
    pages: &PageTracker,
    mut journal: Option<&mut Journal>,
    seq: u64,
    database_id: u64,
    first: u64,
    count: u64,
    data: &[u8],
    scan_seq: Option<u64>,
    checksum_pct: u8,
    scratch: &mut [u8],
    found: &mut Vec<(u64, Finding)>,
) {
    let count = usize::try_from(count).unwrap_or(usize::MAX);
    // A completed read holds every page it was for (a short read is an error, never verified).
    assert!(
        data.len() / PAGE_SIZE >= count,
        "verify: {count} pages from page {first} in a read of {} bytes",
        data.len()
    );
    for (k, page) in data.chunks_exact(PAGE_SIZE).take(count).enumerate() {
        // The next page's head starts coming into the caches while this one is checked.
        if k + 1 < count {
            if let Some(next) = data.get((k + 1) * PAGE_SIZE..(k + 2) * PAGE_SIZE) {
                mbx_store::page::prefetch_head(next);
            }
        }
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
        let seen = integrity.pages_verified;
        integrity.pages_verified += 1;
        let quick = if scan_seq.is_none() && !checksum_this(checksum_pct, n, seen) {
            quick_check_data_page(page, n, database_id)
        } else {
            None
        };
        let check = match quick {
            Some(generation) => {
                integrity.checksummed(0);
                PageCheck::Good { generation }
            }
            None => {
                integrity.checksummed(1);
                check_data_page(page, n, database_id, scratch)
            }
        };
        let finding = match check {
            PageCheck::Good { generation } => {
                stale(known, journal.as_deref_mut(), n, generation, scan_seq, seq)
            }
            check => Finding::of_check(check),
        };
        if let Some(f) = finding {
            f.count(integrity);
            found.push((n, f));
        }
    }
}

/// Whether valid page `n` read at `generation` is stale: older than its last write the tracker
/// remembers (`known`), or than the generation `journal` records (`scan_seq`: a BDM read's
/// sequence number; `seq`: the reactor's now).
#[inline]
fn stale(
    known: Known,
    journal: Option<&mut Journal>,
    n: u64,
    generation: u64,
    scan_seq: Option<u64>,
    seq: u64,
) -> Option<Finding> {
    match known {
        Known::Written { gen, .. } if generation < gen => Some(Finding::Stale {
            found: generation,
            expected: gen,
        }),
        Known::Unknown => journal.and_then(|j| j.check(n, generation, scan_seq, seq)),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use mbx_store::page::{build_data_page, PageHeader, KIND_DATA};

    const DB: u64 = 0x5eed;

    fn page(n: u64, gen: u64) -> Vec<u8> {
        let mut p = vec![0u8; PAGE_SIZE];
        build_data_page(
            &mut p,
            &PageHeader {
                page_number: n,
                database_id: DB,
                generation: gen,
                kind: KIND_DATA,
                compressibility_pct: 0,
            },
        );
        p
    }

    /// Verifies `data` (pages from `first`) as a transactional read, or a BDM read with `bdm`.
    fn verify(data: &[u8], first: u64, pct: u8, bdm: bool) -> (Integrity, Vec<(u64, Finding)>) {
        let mut integrity = Integrity::default();
        let mut found = Vec::new();
        let mut scratch = vec![0u8; PAGE_SIZE];
        let tracker = PageTracker::new(1024);
        verify_pages(
            &mut integrity,
            &tracker,
            None,
            0,
            DB,
            first,
            (data.len() / PAGE_SIZE) as u64,
            data,
            bdm.then_some(0),
            pct,
            &mut scratch,
            &mut found,
        );
        (integrity, found)
    }

    #[test]
    fn the_checksum_share_is_what_is_asked_for() {
        for pct in [0u8, 1, 10, 50, 99, 100] {
            let picked = (0..100_000u64)
                .filter(|&k| checksum_this(pct, k * 7919 % 65_536, k))
                .count() as f64
                / 1000.0;
            assert!(
                (picked - f64::from(pct)).abs() < 0.5,
                "pct {pct}: {picked:.2}% picked"
            );
        }
        // The same page read again is not always picked or always skipped.
        let same: usize = (0..1000u64).filter(|&k| checksum_this(10, 42, k)).count();
        assert!(
            (60..=140).contains(&same),
            "{same} of 1000 reads of one page"
        );
    }

    #[test]
    fn stamps_pass_whole_pages_and_the_checksum_sees_payload_damage() {
        let good: Vec<u8> = (0..16).flat_map(|n| page(n, 1)).collect();
        // Every page good at any share: checksummed as asked for, the rest by stamps.
        for pct in [0u8, 10, 100] {
            let (i, found) = verify(&good, 0, pct, false);
            assert!(found.is_empty() && i.clean(), "pct {pct}");
            assert_eq!(i.pages_verified, 16);
            if pct == 0 {
                assert_eq!(i.pages_checksummed, Some(0));
            }
            if pct == 100 {
                assert_eq!(i.pages_checksummed, Some(16));
            }
        }
        // A torn page (second half from generation 0) and a misplaced page are found without
        // any checksum picked: they fail the stamps, then the checksum classifies them.
        let mut bad = good.clone();
        let torn_at = 3 * PAGE_SIZE + PAGE_SIZE / 2;
        bad[torn_at..4 * PAGE_SIZE].copy_from_slice(&page(3, 0)[PAGE_SIZE / 2..]);
        bad[5 * PAGE_SIZE..6 * PAGE_SIZE].copy_from_slice(&page(9, 1));
        let (i, found) = verify(&bad, 0, 0, false);
        assert_eq!(
            found,
            vec![(3, Finding::Checksum), (5, Finding::WrongPage { found: 9 })]
        );
        assert_eq!((i.bad_pages, i.wrong_page_number_pages), (1, 1));
        assert_eq!(i.pages_checksummed, Some(2));
        // A flipped bit inside a block's payload: the stamps cannot see it, the checksum does
        // (every transactional read at 100%, every BDM read at any share).
        let mut flipped = good.clone();
        flipped[7 * PAGE_SIZE + 20_000] ^= 0x10;
        assert!(verify(&flipped, 0, 0, false).1.is_empty());
        assert_eq!(
            verify(&flipped, 0, 100, false).1,
            vec![(7, Finding::Correctable)]
        );
        let (i, found) = verify(&flipped, 0, 0, true);
        assert_eq!(found, vec![(7, Finding::Correctable)]);
        assert_eq!(i.pages_checksummed, Some(16));
    }
}
