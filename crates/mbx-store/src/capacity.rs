//! Capacity sizing (Jetstress's "disk subsystem throughput" test): databases sized from a
//! percentage of the free space of the volumes that hold them, 25% of it reserved for growth.
//!
//! Per volume: `free x capacity_pct / 100 x 0.75`, split evenly over the databases on that
//! volume. The store creates databases of one size, so every database gets the smallest of
//! those shares (on a single volume, the share; on several, the tightest volume decides and no
//! volume is filled past its share). A database file's size (data pages plus the two header
//! pages) never exceeds its share: the size is rounded down to whole 32 KiB pages.
//!
//! The space the set's own database files already occupy counts as free (they are reused or
//! replaced), so a second run computes about the same size; an existing set within
//! [`REUSE_TOLERANCE`] of the computed size is kept as it is rather than refused for a few pages.

use std::path::PathBuf;

use mbx_core::path::existing_ancestor;
use mbx_io::platform;

use crate::create::{DatabaseSpec, MAX_DATABASE_BYTES};
use crate::header::HEADER_PAGES;
use crate::page::PAGE_SIZE;
use crate::StoreError;

/// Fewest data pages a capacity-sized database may have (1 MiB): below it the percentage of
/// the free space is too small to test anything.
pub const MIN_DATA_PAGES: u64 = 32;

/// An existing, complete set whose databases all have the same size within this fraction of
/// the computed size is kept (the free space moves a little between runs: logs, other writers).
pub const REUSE_TOLERANCE: f64 = 0.05;

/// One volume: its free space (the set's own database files included) and the databases on it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct VolumeFree {
    /// Bytes available on the volume, plus what the set's database files on it occupy.
    pub free_bytes: u64,
    /// Databases of the set on this volume (at least 1).
    pub databases: u32,
}

/// What capacity sizing chose.
#[derive(Debug, Clone, PartialEq)]
pub struct CapacitySizing {
    /// Free bytes over the volumes (the set's own database files included).
    pub free_bytes: u64,
    /// Data pages per database.
    pub data_pages: u64,
    /// Bytes of all database files (data and header pages).
    pub database_bytes: u64,
    /// The volumes, as measured.
    pub volumes: Vec<VolumeFree>,
    /// An existing set of this size was kept (within [`REUSE_TOLERANCE`] of the computed size).
    pub reused: bool,
}

/// Why capacity sizing cannot size the databases.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum CapacityError {
    /// No volume, or a volume without databases.
    #[error("no database volume to size from")]
    NoVolume,
    /// The percentage is not above 0 and at most 100.
    #[error("capacity_pct must be above 0 and at most 100, got {0}")]
    Percent(f64),
    /// The share is below [`MIN_DATA_PAGES`].
    #[error("{pct}% of the free space ({free_mib} MiB on the tightest volume, 25% reserved for growth) gives databases of {pages} pages of 32 KiB; at least {MIN_DATA_PAGES} (1 MiB) are needed: raise --capacity-pct or free some space")]
    TooSmall {
        /// The percentage asked for.
        pct: f64,
        /// Free MiB on the volume that decided.
        free_mib: u64,
        /// Data pages it gave.
        pages: u64,
    },
}

/// Data pages per database for `capacity_pct` percent of each volume's free space, 25%
/// reserved for growth: the smallest per-volume share, rounded down to whole pages (headers
/// included), at most [`MAX_DATABASE_BYTES`] per database.
pub fn data_pages_for(volumes: &[VolumeFree], capacity_pct: f64) -> Result<u64, CapacityError> {
    if !(capacity_pct > 0.0 && capacity_pct <= 100.0) {
        return Err(CapacityError::Percent(capacity_pct));
    }
    // Parts per 10^12 of the free space (1..=10^12), exact in integers from here on: a
    // fraction of a percent of a large volume keeps its precision.
    let ppt = (capacity_pct * 1e10).round().max(1.0) as u128;
    let reserve_num = 3u128; // 1 - CAPACITY_RESERVE (0.25) = 3 / 4
    let reserve_den = 4u128;
    let mut least: Option<(u64, u64)> = None; // (pages, free bytes of that volume)
    for v in volumes {
        if v.databases == 0 {
            return Err(CapacityError::NoVolume);
        }
        let share = u128::from(v.free_bytes) * ppt * reserve_num
            / (1_000_000_000_000 * reserve_den)
            / u128::from(v.databases);
        let share = share.min(u128::from(MAX_DATABASE_BYTES));
        let file_pages = share / PAGE_SIZE as u128;
        // Below u64 by MAX_DATABASE_BYTES.
        let pages = u64::try_from(file_pages)
            .unwrap_or(u64::MAX)
            .saturating_sub(HEADER_PAGES);
        if least.is_none_or_larger(pages) {
            least = Some((pages, v.free_bytes));
        }
    }
    let (pages, free) = least.ok_or(CapacityError::NoVolume)?;
    if pages < MIN_DATA_PAGES {
        return Err(CapacityError::TooSmall {
            pct: capacity_pct,
            free_mib: free >> 20,
            pages,
        });
    }
    Ok(pages)
}

/// `Option::is_none_or` is newer than the MSRV.
trait Least {
    fn is_none_or_larger(&self, pages: u64) -> bool;
}
impl Least for Option<(u64, u64)> {
    fn is_none_or_larger(&self, pages: u64) -> bool {
        match self {
            None => true,
            Some((p, _)) => pages < *p,
        }
    }
}

/// Measures the volumes of `specs` and sizes their databases from `capacity_pct` percent of the
/// free space ([`data_pages_for`]); an existing complete set within [`REUSE_TOLERANCE`] of that
/// size is kept. Capacity sizing needs files on filesystems: block devices are refused.
pub fn size_databases(
    specs: &[DatabaseSpec],
    capacity_pct: f64,
) -> Result<CapacitySizing, StoreError> {
    // (filesystem id, free bytes with the set's files, databases)
    let mut volumes: Vec<(u64, u64, u32)> = Vec::new();
    for s in specs {
        if platform::is_block_device(&s.path).unwrap_or(false) {
            return Err(StoreError::Invalid(format!(
                "{} is a block device: capacity sizing sizes database files from the free space of a filesystem; give a folder, or use profile sizing (--mailboxes, --quota-mb) on devices",
                s.path.display()
            )));
        }
        let anchor = existing_ancestor(s.path.parent().unwrap_or(&s.path));
        let fs = platform::filesystem_id(&anchor)
            .map_err(|e| mbx_io::IoError::new("inspect", &anchor, e))?;
        let own = if s.path.is_file() {
            platform::allocated_bytes(&s.path).unwrap_or(0)
        } else {
            0
        };
        match volumes.iter_mut().find(|(id, _, _)| *id == fs) {
            Some(v) => {
                v.1 = v.1.saturating_add(own);
                v.2 = v.2.saturating_add(1);
            }
            None => {
                let free = platform::free_space(&anchor)
                    .map_err(|e| mbx_io::IoError::new("query free space of", &anchor, e))?;
                volumes.push((fs, free.saturating_add(own), 1));
            }
        }
    }
    let volumes: Vec<VolumeFree> = volumes
        .into_iter()
        .map(|(_, free_bytes, databases)| VolumeFree {
            free_bytes,
            databases,
        })
        .collect();
    let computed =
        data_pages_for(&volumes, capacity_pct).map_err(|e| StoreError::Invalid(e.to_string()))?;
    let existing = existing_size(specs);
    let (data_pages, reused) = match existing {
        Some(e) if within_tolerance(e, computed) => (e, true),
        _ => (computed, false),
    };
    let files = u64::try_from(specs.len()).unwrap_or(u64::MAX);
    Ok(CapacitySizing {
        free_bytes: volumes
            .iter()
            .fold(0u64, |a, v| a.saturating_add(v.free_bytes)),
        data_pages,
        database_bytes: data_pages
            .saturating_add(HEADER_PAGES)
            .saturating_mul(PAGE_SIZE as u64)
            .saturating_mul(files),
        volumes,
        reused,
    })
}

/// Whether an existing size `existing` is close enough to `computed` to be kept.
pub fn within_tolerance(existing: u64, computed: u64) -> bool {
    let (e, c) = (existing as f64, computed as f64);
    (e - c).abs() <= c * REUSE_TOLERANCE
}

/// The data pages of an existing, complete set whose databases all have one size.
fn existing_size(specs: &[DatabaseSpec]) -> Option<u64> {
    let mut size = None;
    for s in specs {
        let h = crate::verify::read_database_header(&s.path).ok()?;
        if h.state == crate::DbState::Creating || h.created_pages < h.data_pages() {
            return None;
        }
        match size {
            None => size = Some(h.data_pages()),
            Some(p) if p == h.data_pages() => {}
            Some(_) => return None,
        }
    }
    size
}

/// Why the log files Soft Recovery generates cannot fit: the arithmetic, per volume.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LogSpaceShort {
    /// A log folder on the volume that is short.
    pub volume: PathBuf,
    /// Databases whose logs (or files) are on that volume.
    pub databases: u32,
    /// Bytes the test needs there: the log files, and the database files not yet allocated.
    pub needed: u64,
    /// Of those, the database files' bytes not yet allocated.
    pub database_bytes: u64,
    /// Bytes free there now.
    pub free: u64,
    /// The most log files per database that would fit (0 if none).
    pub fits: u64,
}

/// Checks that `files` log files per database (plus the open one and its spare, and the
/// database files of `database_bytes` each that are not yet allocated on the same volume) fit
/// the free space of every log volume of `specs`. `Ok(None)`: they fit.
pub fn log_space_short(
    specs: &[DatabaseSpec],
    files: u64,
    database_bytes: u64,
) -> Result<Option<LogSpaceShort>, StoreError> {
    let log_bytes = crate::log::LOG_FILE_SIZE as u64;
    // (filesystem id, a log folder, free bytes, databases logging there, database bytes still to
    // allocate there)
    let mut volumes: Vec<(u64, PathBuf, u64, u32, u64)> = Vec::new();
    for s in specs {
        let anchor = existing_ancestor(&s.log_dir);
        let fs = platform::filesystem_id(&anchor)
            .map_err(|e| mbx_io::IoError::new("inspect", &anchor, e))?;
        let i = match volumes.iter().position(|v| v.0 == fs) {
            Some(i) => i,
            None => {
                let free = platform::free_space(&anchor)
                    .map_err(|e| mbx_io::IoError::new("query free space of", &anchor, e))?;
                volumes.push((fs, s.log_dir.clone(), free, 0, 0));
                volumes.len() - 1
            }
        };
        volumes[i].3 = volumes[i].3.saturating_add(1);
        if platform::is_block_device(&s.path).unwrap_or(false) {
            continue;
        }
        let db_anchor = existing_ancestor(s.path.parent().unwrap_or(&s.path));
        if platform::filesystem_id(&db_anchor).ok() == Some(fs) {
            let have = if s.path.is_file() {
                platform::allocated_bytes(&s.path).unwrap_or(0)
            } else {
                0
            };
            volumes[i].4 = volumes[i]
                .4
                .saturating_add(database_bytes.saturating_sub(have));
        }
    }
    for (_, volume, free, databases, db_bytes) in volumes {
        let per_db = files.saturating_add(2).saturating_mul(log_bytes);
        let needed = per_db
            .saturating_mul(u64::from(databases))
            .saturating_add(db_bytes);
        if needed > free {
            let for_logs = free.saturating_sub(db_bytes) / u64::from(databases.max(1));
            return Ok(Some(LogSpaceShort {
                volume,
                databases,
                needed,
                database_bytes: db_bytes,
                free,
                fits: (for_logs / log_bytes).saturating_sub(2),
            }));
        }
    }
    Ok(None)
}

#[cfg(test)]
mod tests {
    use super::*;

    const MIB: u64 = 1 << 20;
    const GIB: u64 = 1 << 30;

    fn vol(free_bytes: u64, databases: u32) -> VolumeFree {
        VolumeFree {
            free_bytes,
            databases,
        }
    }

    #[test]
    fn a_quarter_is_reserved_for_growth() {
        // 100 GiB free, 80%: 60 GiB for the databases, 30 GiB each (2 header pages included).
        let pages = data_pages_for(&[vol(100 * GIB, 2)], 80.0).expect("size");
        let file = (pages + HEADER_PAGES) * PAGE_SIZE as u64;
        assert_eq!(file, 30 * GIB);
        // 100%: 75% of the free space, never more.
        let all = data_pages_for(&[vol(64 * MIB, 1)], 100.0).expect("size");
        assert_eq!((all + HEADER_PAGES) * PAGE_SIZE as u64, 48 * MIB);
    }

    #[test]
    fn rounds_down_to_whole_pages() {
        // 2 MiB + 10 KiB of share: 64 whole pages of file, less the two headers.
        let free = (2 * MIB + 10 * 1024) * 4 / 3 + 3;
        let pages = data_pages_for(&[vol(free, 1)], 100.0).expect("size");
        assert_eq!(pages, 64 - HEADER_PAGES);
        let file = (pages + HEADER_PAGES) * PAGE_SIZE as u64;
        assert!(file * 4 <= free * 3, "{file} of {free}");
    }

    #[test]
    fn several_volumes_take_the_tightest_share() {
        // 40 GiB free for 2 databases (15 GiB each) and 100 GiB for 2 (37.5 GiB each): every
        // database gets 15 GiB, so no volume passes its share.
        let pages = data_pages_for(&[vol(40 * GIB, 2), vol(100 * GIB, 2)], 100.0).expect("size");
        assert_eq!((pages + HEADER_PAGES) * PAGE_SIZE as u64, 15 * GIB);
        let reversed = data_pages_for(&[vol(100 * GIB, 2), vol(40 * GIB, 2)], 100.0).expect("size");
        assert_eq!(pages, reversed);
        // One database alone on a volume gets what the tightest allows too.
        let one = data_pages_for(&[vol(100 * GIB, 3), vol(10 * GIB, 1)], 100.0).expect("size");
        assert_eq!((one + HEADER_PAGES) * PAGE_SIZE as u64, 7680 * MIB);
    }

    #[test]
    fn tiny_and_huge_values() {
        // Too small a share is refused with the numbers.
        let e = data_pages_for(&[vol(10 * MIB, 1)], 1.0).expect_err("too small");
        assert!(
            matches!(e, CapacityError::TooSmall { pages: 0, .. }),
            "{e:?}"
        );
        assert!(e.to_string().contains("--capacity-pct"), "{e}");
        // The smallest fraction of a percent still works on a large volume.
        let p = data_pages_for(&[vol(1 << 50, 1)], 0.0001).expect("size");
        assert!(p >= MIN_DATA_PAGES);
        // An exabyte volume is capped at the largest database, without overflow.
        let huge = data_pages_for(&[vol(u64::MAX, 1)], 100.0).expect("size");
        assert_eq!(huge, MAX_DATABASE_BYTES / PAGE_SIZE as u64 - HEADER_PAGES);
        // Out-of-range percentages and empty sets are errors, not panics.
        for pct in [0.0, -1.0, 100.5, f64::NAN, f64::INFINITY] {
            assert!(matches!(
                data_pages_for(&[vol(GIB, 1)], pct),
                Err(CapacityError::Percent(_))
            ));
        }
        assert_eq!(data_pages_for(&[], 50.0), Err(CapacityError::NoVolume));
        assert_eq!(
            data_pages_for(&[vol(GIB, 0)], 50.0),
            Err(CapacityError::NoVolume)
        );
    }

    #[test]
    fn an_existing_set_close_to_the_size_is_kept() {
        assert!(within_tolerance(1000, 1000));
        assert!(within_tolerance(1040, 1000));
        assert!(within_tolerance(960, 1000));
        assert!(!within_tolerance(1060, 1000));
        assert!(!within_tolerance(500, 1000));
    }

    #[test]
    fn measures_the_free_space_of_a_real_folder() {
        let dir = tempfile::tempdir().expect("tempdir");
        let specs = crate::plan_paths(&[dir.path().join("db")], &[dir.path().join("logs")], 2)
            .expect("paths");
        let free = platform::free_space(dir.path()).expect("free");
        // A percentage giving about 4 MiB and 5 KiB per database on this volume, whatever its
        // size: off a page boundary, so the free space changing a little between this reading
        // and the sizing's own (other processes write to this disk) cannot move the rounding
        // across one and fail the bound below by a float's width.
        let pct = ((8 * MIB + 10 * 1024) as f64 / 0.75 / free as f64 * 100.0).min(100.0);
        let s = size_databases(&specs, pct).expect("size");
        assert_eq!(s.volumes.len(), 1);
        assert_eq!(s.volumes[0].databases, 2);
        assert!(!s.reused);
        let share = s.free_bytes as f64 * pct / 100.0 * 0.75;
        assert!(s.database_bytes as f64 <= share, "{s:?}");
        assert!(
            s.database_bytes as f64 > share - 2.0 * 2.0 * PAGE_SIZE as f64 - 2.0 * MIB as f64,
            "{s:?}"
        );
    }

    #[test]
    fn log_files_that_cannot_fit_the_free_space_are_counted() {
        let dir = tempfile::tempdir().expect("tempdir");
        let specs = vec![DatabaseSpec {
            index: 0,
            path: dir.path().join("db.edb"),
            log_dir: dir.path().join("logs"),
        }];
        assert_eq!(log_space_short(&specs, 1, 1 << 20).expect("measure"), None);
        let short = log_space_short(&specs, u64::MAX / 4, 0)
            .expect("measure")
            .expect("short");
        assert_eq!(short.databases, 1);
        assert!(short.needed > short.free, "{short:?}");
        let free = platform::free_space(dir.path()).expect("free");
        let fits = free / crate::log::LOG_FILE_SIZE as u64;
        // The open file and its spare are not counted; the free space may move a little
        // between the two measurements (other writers on the machine).
        assert!(
            short.fits.abs_diff(fits.saturating_sub(2)) <= 64,
            "{short:?}, {fits}"
        );
    }
}
