//! Transaction log files: 1 MiB each, a 4 KiB header then sector-aligned records that carry redo
//! entries. This module encodes and decodes byte images only (no files), so a simulated device can
//! use it; [`crate::log_dir`] applies it to a directory of real files.
//!
//! Log file header (bytes 0..4096):
//!
//! | offset | size | field |
//! |---|---|---|
//! | 0 | 8 | magic `MBXLOGF1` |
//! | 8 | 8 | checksum: XXH3-64 of bytes 0..8 and 16..4096 |
//! | 16 | 8 | log generation (the file's sequence number, from 1) |
//! | 24 | 8 | database id |
//! | 32 | 4 | format version (2) |
//! | 36 | 4 | file size (1048576) |
//! | 40 | 8 | creation time, Unix seconds |
//!
//! Record (at a 4 KiB boundary, padded with zeros to the next one):
//!
//! | offset | size | field |
//! |---|---|---|
//! | 0 | 8 | magic `MBXLREC2` |
//! | 8 | 8 | checksum: XXH3-64 of the whole padded record without this field |
//! | 16 | 8 | log generation of the file it is in |
//! | 24 | 8 | [`Lsn`] of the record: its own position, generation x 1 MiB + offset |
//! | 32 | 4 | payload length `n` |
//! | 36 | 4 | operations in the record (commit group size) |
//! | 40 | 24 | reserved, zero |
//! | 64 | n | payload |
//!
//! Payload: redo entry count (4), reserved (4), the entries (16 bytes each: page number (8), the
//! page's write generation after the change (8)), then deterministic filler derived from the Lsn up
//! to `n`. `n` is the length the workload asks for, or `8 + 16 x entries` if that is larger.
//!
//! A scan ([`scan_log_file`]) stops at the first position that is not a valid record: an all-zero
//! rest of the file is a clean end; anything else is a torn tail or damage ([`ScanEnd`]).

use std::fmt;

use crate::lsn::Lsn;
use crate::page::{block_checksum, open_block, seal_block};

/// Size of a log file (defined beside [`Lsn`], whose arithmetic it is).
pub use crate::lsn::LOG_FILE_SIZE;
/// Sector size of log writes (records are padded to it).
pub const LOG_SECTOR: usize = 4096;
/// Log file magic.
pub const LOG_MAGIC: &[u8; 8] = b"MBXLOGF1";
/// Log format version in the file header (2: records carry redo entries and their own Lsn).
pub const LOG_FORMAT_VERSION: u32 = 2;
/// Record magic.
pub const RECORD_MAGIC: &[u8; 8] = b"MBXLREC2";
/// Bytes of a record header.
pub const RECORD_HEADER: usize = 64;
/// The largest record that fits in a log file after its header.
pub const MAX_RECORD_SIZE: usize = LOG_FILE_SIZE - LOG_SECTOR;

/// Payload bytes before the entries: count (4) and reserved (4).
const ENTRIES_HEADER: usize = 8;
/// Bytes of one encoded [`RedoEntry`].
const ENTRY_SIZE: usize = 16;

/// What replay needs to redo one page change: the page and its write generation after the
/// change. Generations of a page only increase, so the page on disk is up to date when its
/// generation is at least this one ([`crate::redo::redo_needed`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct RedoEntry {
    /// Page number in the database file.
    pub page: u64,
    /// The page's write generation after the change.
    pub generation: u64,
}

/// Encodes a log file header into `p` (at least [`LOG_SECTOR`] bytes; only those are touched).
///
/// # Panics
/// If `p` is shorter than [`LOG_SECTOR`].
pub fn encode_log_header(p: &mut [u8], generation: u64, database_id: u64, created_unix_s: u64) {
    seal_block(p, LOG_SECTOR, LOG_MAGIC, |p| {
        p[16..24].copy_from_slice(&generation.to_le_bytes());
        p[24..32].copy_from_slice(&database_id.to_le_bytes());
        p[32..36].copy_from_slice(&LOG_FORMAT_VERSION.to_le_bytes());
        p[36..40].copy_from_slice(&(LOG_FILE_SIZE as u32).to_le_bytes());
        p[40..48].copy_from_slice(&created_unix_s.to_le_bytes());
    });
}

/// Decodes a log file header of any format version: `(generation, database_id)`, or `None` if it
/// is not an mbxstress log header (tells whether a file is ours).
pub fn decode_log_header(p: &[u8]) -> Option<(u64, u64)> {
    let p = open_block(p, LOG_SECTOR, LOG_MAGIC)?;
    Some((u64_at(p, 16)?, u64_at(p, 24)?))
}

fn u64_at(p: &[u8], o: usize) -> Option<u64> {
    p.get(o..o.checked_add(8)?)?
        .try_into()
        .ok()
        .map(u64::from_le_bytes)
}

fn u32_at(p: &[u8], o: usize) -> Option<u32> {
    p.get(o..o.checked_add(4)?)?
        .try_into()
        .ok()
        .map(u32::from_le_bytes)
}

/// Payload bytes a record really carries: `payload_len`, or what the entries need if more.
fn payload_size(payload_len: usize, entries: usize) -> usize {
    entries
        .saturating_mul(ENTRY_SIZE)
        .saturating_add(ENTRIES_HEADER)
        .max(payload_len)
}

/// Bytes a record occupies in the log (header + payload, padded to a sector), given the payload
/// length the workload asks for and the number of redo entries. The payload grows to fit the
/// entries when they need more than `payload_len`.
pub fn record_size(payload_len: usize, entries: usize) -> usize {
    payload_size(payload_len, entries)
        .saturating_add(RECORD_HEADER)
        .div_ceil(LOG_SECTOR)
        .saturating_mul(LOG_SECTOR)
}

/// Encodes a record at `lsn` (its own position: `lsn.generation()` is the file's generation,
/// `lsn.offset()` where the record goes in it) into `out` and returns its size
/// ([`record_size`]`(payload_len, entries.len())`). The filler after the entries is derived from
/// the Lsn, so every record is unique.
///
/// # Panics
/// If `out` is shorter than the record, or the record is larger than [`MAX_RECORD_SIZE`]: the
/// writer must roll over to the next log file before a record would cross its end.
pub fn encode_record(
    out: &mut [u8],
    lsn: Lsn,
    payload_len: usize,
    ops: u32,
    entries: &[RedoEntry],
) -> usize {
    let size = record_size(payload_len, entries.len());
    assert!(
        size <= MAX_RECORD_SIZE,
        "a log record of {size} bytes does not fit in a log file"
    );
    let payload = payload_size(payload_len, entries.len());
    assert!(
        size.is_multiple_of(LOG_SECTOR),
        "a log record of {size} bytes is not whole sectors"
    );
    // The payload holds the entry count and every entry; the record lies inside one log file.
    assert!(
        ENTRIES_HEADER + entries.len() * ENTRY_SIZE <= payload && RECORD_HEADER + payload <= size,
        "a log record of {size} bytes cannot hold {} entries",
        entries.len()
    );
    assert!(
        lsn.offset() + size as u64 <= LOG_FILE_SIZE as u64,
        "a log record of {size} bytes at {lsn} crosses the end of its file"
    );
    assert!(
        out.len() >= size,
        "a log record of {size} bytes encoded into {} bytes",
        out.len()
    );
    let out = &mut out[..size];
    // Zero what is not written below: the header's gaps, the entries' reserved word and the
    // padding to the sector (zeroing the whole record first cost a second pass over it).
    out[..RECORD_HEADER + ENTRIES_HEADER].fill(0);
    out[RECORD_HEADER + payload..].fill(0);
    out[..8].copy_from_slice(RECORD_MAGIC);
    out[16..24].copy_from_slice(&lsn.generation().to_le_bytes());
    out[24..32].copy_from_slice(&lsn.raw().to_le_bytes());
    // Both fit in u32: size <= MAX_RECORD_SIZE was asserted above.
    out[32..36].copy_from_slice(&(payload as u32).to_le_bytes());
    out[36..40].copy_from_slice(&ops.to_le_bytes());
    let p = &mut out[RECORD_HEADER..RECORD_HEADER + payload];
    p[..4].copy_from_slice(&(entries.len() as u32).to_le_bytes());
    let (list, filler) = p[ENTRIES_HEADER..].split_at_mut(entries.len() * ENTRY_SIZE);
    for (e, slot) in entries.iter().zip(list.chunks_exact_mut(ENTRY_SIZE)) {
        slot[..8].copy_from_slice(&e.page.to_le_bytes());
        slot[8..].copy_from_slice(&e.generation.to_le_bytes());
    }
    fill_filler(filler, lsn.raw() ^ 0x9e37_79b9_7f4a_7c15);
    let sum = block_checksum(out);
    out[8..16].copy_from_slice(&sum.to_le_bytes());
    size
}

/// The filler of a record's payload: xorshift64 words from `x`, little-endian, the last one
/// cut to what is left. Whole words are stored as such: a copy of a variable-length slice per
/// 8 bytes was a `memcpy` call each, 1.2% of the engine's CPU (perf, 32 sessions).
fn fill_filler(filler: &mut [u8], mut x: u64) {
    let mut next = || {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        x.to_le_bytes()
    };
    let mut words = filler.chunks_exact_mut(8);
    for w in &mut words {
        w.copy_from_slice(&next());
    }
    let rest = words.into_remainder();
    let n = rest.len();
    if n > 0 {
        rest.copy_from_slice(&next()[..n]);
    }
}

/// A valid record found by [`scan_log_file`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LogRecord {
    /// Its position in the log stream (verified to equal where it was found).
    pub lsn: Lsn,
    /// Payload length as stored (at least what the entries need).
    pub payload_len: usize,
    /// Operations in the record (commit group size).
    pub ops: u32,
    /// The redo entries, in the order they were written.
    pub entries: Vec<RedoEntry>,
}

impl LogRecord {
    /// Bytes the record occupies in the log (padded to a sector).
    pub fn size(&self) -> usize {
        record_size(self.payload_len, self.entries.len())
    }

    /// The position just after the record, where the next one starts.
    pub fn end(&self) -> Lsn {
        // A record lies inside one file, so this stays at most the start of the next generation.
        Lsn::from_raw(self.lsn.raw().saturating_add(self.size() as u64))
    }
}

/// Why a log file header was not accepted.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum HeaderProblem {
    /// Missing, wrong magic or bad checksum: not an mbxstress log header.
    Invalid,
    /// An mbxstress log of another format version.
    Version {
        /// The version in the file.
        found: u32,
    },
    /// The file is of another generation than its name says.
    Generation {
        /// The generation in the header.
        found: u64,
    },
    /// The file belongs to another database.
    Database {
        /// The database id in the header.
        found: u64,
    },
    /// The header states another file size.
    FileSize {
        /// The size in the header.
        found: u32,
    },
}

/// What is wrong at the place a scan stopped, when it is not a clean end.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Damage {
    /// The file header is not valid for this generation and database; no record was read.
    Header(HeaderProblem),
    /// A sector holds data but does not start with the record magic.
    Magic,
    /// The record header names another generation (a stale record).
    Generation {
        /// The generation in the record.
        found: u64,
    },
    /// The record's Lsn is not its position (misplaced or stale record).
    Lsn {
        /// The Lsn in the record.
        found: Lsn,
    },
    /// The record's length runs past the end of the file.
    Length,
    /// The checksum does not match (bit flips, overwritten data).
    Checksum,
    /// The checksum matches but the entry count does not fit in the payload (a writer bug).
    Entries,
    /// A torn write: see [`ScanEnd::TornTail`].
    Torn,
}

/// Where and why a scan of one log file ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ScanEnd {
    /// The rest of the file from `offset` is zeros (or the file is full): a clean end.
    Clean {
        /// Offset where the next record would go.
        offset: usize,
    },
    /// A write that did not complete before a crash: a record whose header is right but some of
    /// whose sectors never reached the disk (all zeros), or an all-zero sector followed by data
    /// (a later write that reached the disk before an earlier one). Such a record was never
    /// acknowledged durable; replay ends before it. A bit flip in the unused, zeroed part of a
    /// file also looks like this.
    TornTail {
        /// Offset of the first invalid sector.
        offset: usize,
    },
    /// A record that is invalid in a way a torn write does not explain.
    Damaged {
        /// Offset of the damaged record (0 for the file header).
        offset: usize,
        /// What is wrong.
        damage: Damage,
    },
}

impl ScanEnd {
    /// True for a clean end.
    pub fn is_clean(&self) -> bool {
        matches!(self, ScanEnd::Clean { .. })
    }

    /// The offset where the scan stopped.
    pub fn offset(&self) -> usize {
        match *self {
            ScanEnd::Clean { offset }
            | ScanEnd::TornTail { offset }
            | ScanEnd::Damaged { offset, .. } => offset,
        }
    }

    /// What is wrong, if the end is not clean ([`Damage::Torn`] for a torn tail).
    pub fn damage(&self) -> Option<Damage> {
        match *self {
            ScanEnd::Clean { .. } => None,
            ScanEnd::TornTail { .. } => Some(Damage::Torn),
            ScanEnd::Damaged { damage, .. } => Some(damage),
        }
    }
}

impl fmt::Display for HeaderProblem {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match *self {
            HeaderProblem::Invalid => {
                f.write_str("no mbxstress log header (wrong magic or checksum)")
            }
            HeaderProblem::Version { found } => {
                write!(f, "log format version {found}, not {LOG_FORMAT_VERSION}")
            }
            HeaderProblem::Generation { found } => {
                write!(f, "it is the header of generation {found:#X}")
            }
            HeaderProblem::Database { found } => {
                write!(f, "it is the header of database {found:#x}")
            }
            HeaderProblem::FileSize { found } => {
                write!(f, "it states {found} bytes, not {LOG_FILE_SIZE}")
            }
        }
    }
}

impl fmt::Display for Damage {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match *self {
            Damage::Header(p) => write!(f, "an invalid file header: {p}"),
            Damage::Magic => f.write_str("data that is not a log record (no record magic)"),
            Damage::Generation { found } => {
                write!(f, "a record of generation {found:#X} (a stale record)")
            }
            Damage::Lsn { found } => write!(
                f,
                "a record whose Lsn {found} is not its position (misplaced or stale)"
            ),
            Damage::Length => f.write_str("a record running past the end of the file"),
            Damage::Checksum => f.write_str("a record failing its checksum"),
            Damage::Entries => f.write_str("a record whose redo entries overflow its payload"),
            Damage::Torn => f.write_str("a torn write"),
        }
    }
}

/// The result of scanning one log file image.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FileScan {
    /// The generation scanned for.
    pub generation: u64,
    /// True if the header is a valid header of this generation, database and format version.
    pub header_valid: bool,
    /// The valid records from the start, in order; each one's Lsn equals its position.
    pub records: Vec<LogRecord>,
    /// Where and why the scan ended.
    pub end: ScanEnd,
}

impl FileScan {
    /// The Lsn where this file's valid records end: where the next record would go.
    pub fn end_lsn(&self) -> Lsn {
        // A file scan never reads past LOG_FILE_SIZE, so the offset is at most the file size.
        let start = Lsn::checked_new(self.generation, LOG_SECTOR as u64).unwrap_or(Lsn::ZERO);
        self.records.last().map_or(start, LogRecord::end)
    }
}

/// Scans a log file image (the whole file, header included; only its first [`LOG_FILE_SIZE`]
/// bytes are read) of log generation `expected_generation` of database `database_id`.
///
/// Every record is verified: magic, generation, Lsn equal to its position (so Lsns strictly
/// increase), length inside the file, checksum, entries. The scan stops at the first position
/// that is not a valid record and says why ([`ScanEnd`]). It never panics, whatever the bytes.
pub fn scan_log_file(image: &[u8], expected_generation: u64, database_id: u64) -> FileScan {
    let mut scan = FileScan {
        generation: expected_generation,
        header_valid: false,
        records: Vec::new(),
        end: ScanEnd::Clean { offset: 0 },
    };
    let image = &image[..image.len().min(LOG_FILE_SIZE)];
    if let Err(problem) = check_header(image, expected_generation, database_id) {
        scan.end = ScanEnd::Damaged {
            offset: 0,
            damage: Damage::Header(problem),
        };
        return scan;
    }
    scan.header_valid = true;
    let mut off = LOG_SECTOR;
    scan.end = loop {
        let Some(rest) = image.get(off..).filter(|r| !r.is_empty()) else {
            break ScanEnd::Clean { offset: off };
        };
        let sector = &rest[..rest.len().min(LOG_SECTOR)];
        if is_zero(sector) {
            break if is_zero(rest) {
                ScanEnd::Clean { offset: off }
            } else {
                ScanEnd::TornTail { offset: off }
            };
        }
        match parse_record(rest, expected_generation, off) {
            Ok(record) => {
                off += record.size();
                scan.records.push(record);
            }
            Err(Damage::Torn) => break ScanEnd::TornTail { offset: off },
            Err(damage) => {
                break ScanEnd::Damaged {
                    offset: off,
                    damage,
                }
            }
        }
    };
    scan
}

/// Checks that `image` starts with a valid log header of generation `generation` of database
/// `database_id`, in this format version, stating [`LOG_FILE_SIZE`].
pub fn check_header(image: &[u8], generation: u64, database_id: u64) -> Result<(), HeaderProblem> {
    let (found_gen, found_db) = decode_log_header(image).ok_or(HeaderProblem::Invalid)?;
    let version = u32_at(image, 32).ok_or(HeaderProblem::Invalid)?;
    let size = u32_at(image, 36).ok_or(HeaderProblem::Invalid)?;
    if version != LOG_FORMAT_VERSION {
        Err(HeaderProblem::Version { found: version })
    } else if found_gen != generation {
        Err(HeaderProblem::Generation { found: found_gen })
    } else if found_db != database_id {
        Err(HeaderProblem::Database { found: found_db })
    } else if size as usize != LOG_FILE_SIZE {
        Err(HeaderProblem::FileSize { found: size })
    } else {
        Ok(())
    }
}

fn is_zero(b: &[u8]) -> bool {
    b.iter().all(|&x| x == 0)
}

/// The size of the record whose first sector starts `r` (from its magic and payload length, not
/// yet verified), or `None` if `r` does not start with a record header. Tells a reader of a log
/// stream how many bytes it needs before it can verify the record ([`check_record`]).
pub fn record_len(r: &[u8]) -> Option<usize> {
    if r.get(..8) != Some(&RECORD_MAGIC[..]) {
        return None;
    }
    let payload_len = usize::try_from(u32_at(r, 32)?).ok()?;
    Some(record_size(payload_len, 0))
}

/// Verifies the record at the start of `r`, found at `offset` of a log file of `generation`,
/// as a scan does (magic, generation, Lsn equal to its position, length inside `r`, checksum,
/// entries) without decoding its entries; returns its size. `r` must hold at least the whole
/// record ([`record_len`]). A record failing its checksum with an all-zero sector after its
/// first is [`Damage::Torn`] when nothing follows it in `r`.
pub fn check_record(r: &[u8], generation: u64, offset: usize) -> Result<usize, Damage> {
    frame(r, generation, offset).map(|f| f.size)
}

/// What [`frame`] verified of a record.
struct Frame {
    payload_len: usize,
    ops: u32,
    size: usize,
    count: usize,
}

/// Verifies a record's frame: everything but the decoding of its entries.
fn frame(r: &[u8], generation: u64, offset: usize) -> Result<Frame, Damage> {
    if r.get(..8) != Some(&RECORD_MAGIC[..]) {
        return Err(Damage::Magic);
    }
    // The magic sits in the first sector, which is never torn: the rest of the header is there
    // (or the file is cut short, which only a damaged image does).
    let found_gen = u64_at(r, 16).ok_or(Damage::Length)?;
    if found_gen != generation {
        return Err(Damage::Generation { found: found_gen });
    }
    let found_lsn = Lsn::from_raw(u64_at(r, 24).ok_or(Damage::Length)?);
    if Lsn::checked_new(generation, offset as u64) != Some(found_lsn) {
        return Err(Damage::Lsn { found: found_lsn });
    }
    let payload_len =
        usize::try_from(u32_at(r, 32).ok_or(Damage::Length)?).map_err(|_| Damage::Length)?;
    let ops = u32_at(r, 36).ok_or(Damage::Length)?;
    let size = record_size(payload_len, 0);
    let Some(record) = r.get(..size) else {
        return Err(Damage::Length);
    };
    if u64_at(record, 8) != Some(block_checksum(record)) {
        // Torn: a later sector of the record never arrived and nothing was written after it.
        let torn = record.chunks(LOG_SECTOR).skip(1).any(is_zero) && is_zero(&r[size..]);
        return Err(if torn { Damage::Torn } else { Damage::Checksum });
    }
    let payload = record
        .get(RECORD_HEADER..RECORD_HEADER.saturating_add(payload_len))
        .ok_or(Damage::Length)?;
    let count = u32_at(payload, 0).ok_or(Damage::Entries)?;
    let count = usize::try_from(count)
        .ok()
        .filter(|c| {
            c.checked_mul(ENTRY_SIZE)
                .and_then(|l| l.checked_add(ENTRIES_HEADER))
                .is_some_and(|end| end <= payload.len())
        })
        .ok_or(Damage::Entries)?;
    Ok(Frame {
        payload_len,
        ops,
        size,
        count,
    })
}

/// Verifies the record at the start of `r`, found at `offset` of a file of `generation`, and
/// decodes it.
fn parse_record(r: &[u8], generation: u64, offset: usize) -> Result<LogRecord, Damage> {
    let Frame {
        payload_len,
        ops,
        size: _,
        count,
    } = frame(r, generation, offset)?;
    let list_start = RECORD_HEADER + ENTRIES_HEADER;
    let list = r
        .get(list_start..list_start.saturating_add(count.saturating_mul(ENTRY_SIZE)))
        .ok_or(Damage::Entries)?;
    let mut entries = Vec::with_capacity(list.len() / ENTRY_SIZE);
    for e in list.chunks_exact(ENTRY_SIZE) {
        entries.push(RedoEntry {
            page: u64_at(e, 0).ok_or(Damage::Entries)?,
            generation: u64_at(e, 8).ok_or(Damage::Entries)?,
        });
    }
    Ok(LogRecord {
        // The frame verified that the record's Lsn is its position.
        lsn: Lsn::checked_new(generation, offset as u64).ok_or(Damage::Length)?,
        payload_len,
        ops,
        entries,
    })
}

/// File name of log generation `g` ("E00" prefix as ESE names logs, hex generation, at least 8
/// digits).
pub fn log_file_name(generation: u64) -> String {
    format!("E00{generation:08X}.log")
}

/// The generation a log file name stands for, if it is one [`log_file_name`] produces.
pub fn parse_log_file_name(name: &str) -> Option<u64> {
    let hex = name.strip_prefix("E00")?.strip_suffix(".log")?;
    let generation = u64::from_str_radix(hex, 16).ok()?;
    // Only the canonical spelling: no lower case, sign or extra leading zeros.
    (log_file_name(generation) == name).then_some(generation)
}

/// Why a log directory is not one continuous log.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LogBreak {
    /// Generations `first..=last` are absent although a later one, or the checkpoint, needs them.
    Missing {
        /// First absent generation.
        first: u64,
        /// Last absent generation.
        last: u64,
    },
    /// A file's header is invalid or a record in it is damaged (not a torn tail).
    Damaged {
        /// The file's generation.
        generation: u64,
        /// Where and why its scan ended.
        end: ScanEnd,
    },
}

impl std::fmt::Display for LogBreak {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match *self {
            LogBreak::Missing { first, last } if first == last => {
                write!(
                    f,
                    "log generation {first:#X} ({}) is missing",
                    log_file_name(first)
                )
            }
            LogBreak::Missing { first, last } => write!(
                f,
                "log generations {first:#X} to {last:#X} ({} to {}) are missing",
                log_file_name(first),
                log_file_name(last)
            ),
            LogBreak::Damaged { generation, end } => write!(
                f,
                "{} is damaged at offset {:#X}: {:?}",
                log_file_name(generation),
                end.offset(),
                end.damage()
            ),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    #[should_panic(expected = "crosses the end of its file")]
    fn a_record_never_crosses_the_end_of_its_file() {
        let mut out = vec![0u8; 8192];
        let at = Lsn::new(3, LOG_FILE_SIZE as u64 - LOG_SECTOR as u64);
        encode_record(&mut out, at, 5000, 1, &[]);
    }
    use proptest::prelude::*;

    const DB: u64 = 77;

    /// A log file of generation `gen` with records of the given payload lengths and entries.
    fn log_with(gen: u64, records: &[(usize, Vec<RedoEntry>)]) -> Vec<u8> {
        let mut file = vec![0u8; LOG_FILE_SIZE];
        encode_log_header(&mut file, gen, DB, 1);
        let mut off = LOG_SECTOR;
        for (i, (n, entries)) in records.iter().enumerate() {
            let lsn = Lsn::new(gen, off as u64);
            off += encode_record(&mut file[off..], lsn, *n, i as u32 + 1, entries);
        }
        file
    }

    /// A record as the format describes it, written the plain way: all zeros, the header
    /// fields, the entries, and the xorshift64 filler byte by byte.
    fn reference_record(lsn: Lsn, payload_len: usize, ops: u32, entries: &[RedoEntry]) -> Vec<u8> {
        let payload = payload_size(payload_len, entries.len());
        let mut out = vec![0u8; record_size(payload_len, entries.len())];
        out[..8].copy_from_slice(RECORD_MAGIC);
        out[16..24].copy_from_slice(&lsn.generation().to_le_bytes());
        out[24..32].copy_from_slice(&lsn.raw().to_le_bytes());
        out[32..36].copy_from_slice(&(payload as u32).to_le_bytes());
        out[36..40].copy_from_slice(&ops.to_le_bytes());
        let p = RECORD_HEADER;
        out[p..p + 4].copy_from_slice(&(entries.len() as u32).to_le_bytes());
        for (i, e) in entries.iter().enumerate() {
            let at = p + ENTRIES_HEADER + i * ENTRY_SIZE;
            out[at..at + 8].copy_from_slice(&e.page.to_le_bytes());
            out[at + 8..at + 16].copy_from_slice(&e.generation.to_le_bytes());
        }
        let mut x = lsn.raw() ^ 0x9e37_79b9_7f4a_7c15;
        let start = p + ENTRIES_HEADER + entries.len() * ENTRY_SIZE;
        for (k, b) in out[start..p + payload].iter_mut().enumerate() {
            if k % 8 == 0 {
                x ^= x << 13;
                x ^= x >> 7;
                x ^= x << 17;
            }
            *b = x.to_le_bytes()[k % 8];
        }
        let sum = block_checksum(&out);
        out[8..16].copy_from_slice(&sum.to_le_bytes());
        out
    }

    #[test]
    fn a_record_is_the_same_bytes_over_any_earlier_content() {
        for (len, n) in [
            (0usize, 0u64),
            (1, 0),
            (13, 1),
            (4096, 3),
            (49_999, 7),
            (65_536, 40),
        ] {
            let lsn = Lsn::new(3, 4096);
            let e = entries(n);
            let want = reference_record(lsn, len, 5, &e);
            for garbage in [0x00u8, 0xa5, 0xff] {
                let mut out = vec![garbage; MAX_RECORD_SIZE];
                let size = encode_record(&mut out, lsn, len, 5, &e);
                assert_eq!(size, want.len());
                assert!(
                    out[..size] == want[..],
                    "len {len} entries {n} over {garbage:#x}"
                );
                assert!(
                    out[size..].iter().all(|&b| b == garbage),
                    "wrote past the record"
                );
            }
        }
    }

    fn plain(sizes: &[usize]) -> Vec<(usize, Vec<RedoEntry>)> {
        sizes.iter().map(|&n| (n, Vec::new())).collect()
    }

    fn entries(n: u64) -> Vec<RedoEntry> {
        (0..n)
            .map(|i| RedoEntry {
                page: 2 + i * 3,
                generation: 100 + i,
            })
            .collect()
    }

    #[test]
    fn round_trip() {
        let file = log_with(
            3,
            &[
                (100, Vec::new()),
                (8000, entries(5)),
                (20_000, Vec::new()),
                (0, entries(600)),
            ],
        );
        assert_eq!(decode_log_header(&file), Some((3, DB)));
        let scan = scan_log_file(&file, 3, DB);
        assert!(scan.header_valid);
        assert_eq!(scan.records.len(), 4);
        assert_eq!(scan.records[0].lsn, Lsn::new(3, LOG_SECTOR as u64));
        assert_eq!(scan.records[1].payload_len, 8000);
        assert_eq!(scan.records[1].entries, entries(5));
        assert_eq!(scan.records[2].ops, 3);
        // 600 entries need 8 + 9,600 bytes: the payload grew from 0 to fit them.
        assert_eq!(scan.records[3].payload_len, 9608);
        assert_eq!(scan.records[3].entries, entries(600));
        for pair in scan.records.windows(2) {
            assert_eq!(pair[0].end(), pair[1].lsn);
        }
        let end = scan.records[3].end();
        assert_eq!(
            scan.end,
            ScanEnd::Clean {
                offset: end.offset() as usize
            }
        );
        assert_eq!(scan.end_lsn(), end);
    }

    #[test]
    fn sizes() {
        assert_eq!(record_size(4032, 0), 4096);
        assert_eq!(record_size(4033, 0), 8192);
        assert_eq!(record_size(0, 0), 4096);
        // 251 entries are 8 + 4,016 bytes: one sector; 252 need two.
        assert_eq!(record_size(0, 251), 4096);
        assert_eq!(record_size(0, 252), 8192);
        assert_eq!(record_size(10_000, 1), record_size(10_000, 0));
        assert_eq!(log_file_name(26), "E000000001A.log");
        assert_eq!(parse_log_file_name("E000000001A.log"), Some(26));
        assert_eq!(parse_log_file_name(&log_file_name(1 << 40)), Some(1 << 40));
        for bad in [
            "E000000001a.log",
            "E00000001A.log",
            "E000000001A.chk",
            "E00+0000001A.log",
        ] {
            assert_eq!(parse_log_file_name(bad), None, "{bad}");
        }
        // Leading zeros beyond the canonical 8 digits name no file we write.
        assert_eq!(parse_log_file_name("E00000000001A.log"), None);
    }

    #[test]
    fn an_empty_file_ends_clean_at_its_first_record() {
        let file = log_with(5, &[]);
        let scan = scan_log_file(&file, 5, DB);
        assert!(scan.header_valid && scan.records.is_empty());
        assert_eq!(scan.end, ScanEnd::Clean { offset: LOG_SECTOR });
        assert_eq!(scan.end_lsn(), Lsn::new(5, LOG_SECTOR as u64));
    }

    #[test]
    fn a_full_file_ends_clean() {
        let n = MAX_RECORD_SIZE - RECORD_HEADER;
        let file = log_with(2, &plain(&[n]));
        let scan = scan_log_file(&file, 2, DB);
        assert_eq!(scan.records.len(), 1);
        assert_eq!(
            scan.end,
            ScanEnd::Clean {
                offset: LOG_FILE_SIZE
            }
        );
        assert_eq!(scan.end_lsn(), Lsn::new(3, 0));
    }

    #[test]
    fn bit_flips_are_damage() {
        let mut file = log_with(3, &plain(&[100, 8000, 100]));
        let second = LOG_SECTOR + record_size(100, 0);
        file[second + 5000] ^= 4; // a bit in the second record's payload
        let scan = scan_log_file(&file, 3, DB);
        assert_eq!(scan.records.len(), 1);
        assert_eq!(
            scan.end,
            ScanEnd::Damaged {
                offset: second,
                damage: Damage::Checksum
            }
        );
        // A flip in the zero padding after the payload is covered by the checksum too.
        let mut file = log_with(3, &plain(&[100]));
        file[LOG_SECTOR + 4000] ^= 1;
        assert_eq!(
            scan_log_file(&file, 3, DB).end.damage(),
            Some(Damage::Checksum)
        );
        // A flip after the last record: data after the end of the log.
        let mut file = log_with(3, &plain(&[100]));
        file[LOG_FILE_SIZE - 1] ^= 1;
        let scan = scan_log_file(&file, 3, DB);
        assert_eq!(scan.records.len(), 1);
        assert!(!scan.end.is_clean());
    }

    #[test]
    fn stale_and_misplaced_records_are_damage() {
        // A record of another generation (a stale file reused).
        let file = log_with(3, &plain(&[100]));
        let mut other = log_with(4, &[]);
        other[LOG_SECTOR..].copy_from_slice(&file[LOG_SECTOR..]);
        let scan = scan_log_file(&other, 4, DB);
        assert!(scan.header_valid && scan.records.is_empty());
        assert_eq!(
            scan.end,
            ScanEnd::Damaged {
                offset: LOG_SECTOR,
                damage: Damage::Generation { found: 3 }
            }
        );
        // A valid record at the wrong place: its Lsn is not its position.
        let mut file = log_with(3, &plain(&[100]));
        let (a, b) = file.split_at_mut(2 * LOG_SECTOR);
        b[..LOG_SECTOR].copy_from_slice(&a[LOG_SECTOR..]);
        let scan = scan_log_file(&file, 3, DB);
        assert_eq!(scan.records.len(), 1);
        assert_eq!(
            scan.end,
            ScanEnd::Damaged {
                offset: 2 * LOG_SECTOR,
                damage: Damage::Lsn {
                    found: Lsn::new(3, LOG_SECTOR as u64)
                }
            }
        );
    }

    #[test]
    fn header_problems() {
        let file = log_with(3, &plain(&[100]));
        let header = |img: &[u8], gen, db| match scan_log_file(img, gen, db).end {
            ScanEnd::Damaged {
                offset: 0,
                damage: Damage::Header(p),
            } => Some(p),
            _ => None,
        };
        assert_eq!(header(&file, 3, DB), None);
        assert_eq!(
            header(&file, 4, DB),
            Some(HeaderProblem::Generation { found: 3 })
        );
        assert_eq!(
            header(&file, 3, 1),
            Some(HeaderProblem::Database { found: DB })
        );
        assert_eq!(header(&file[..100], 3, DB), Some(HeaderProblem::Invalid));
        let mut bad = file.clone();
        bad[30] ^= 1;
        assert_eq!(decode_log_header(&bad), None);
        assert_eq!(header(&bad, 3, DB), Some(HeaderProblem::Invalid));
        // A version 1 file is still ours, but not readable as version 2.
        let mut v1 = file.clone();
        v1[32..36].copy_from_slice(&1u32.to_le_bytes());
        let sum = block_checksum(&v1[..LOG_SECTOR]);
        v1[8..16].copy_from_slice(&sum.to_le_bytes());
        assert_eq!(decode_log_header(&v1), Some((3, DB)));
        assert_eq!(
            header(&v1, 3, DB),
            Some(HeaderProblem::Version { found: 1 })
        );
        assert!(scan_log_file(&v1, 3, DB).records.is_empty());
    }

    #[test]
    fn torn_writes_end_the_log_as_a_torn_tail() {
        // The last record is 3 sectors; its second sector never reached the disk.
        let mut file = log_with(3, &plain(&[100, 10_000]));
        let second = LOG_SECTOR + record_size(100, 0);
        file[second + LOG_SECTOR..second + 2 * LOG_SECTOR].fill(0);
        let scan = scan_log_file(&file, 3, DB);
        assert_eq!(scan.records.len(), 1);
        assert_eq!(scan.end, ScanEnd::TornTail { offset: second });
        assert_eq!(scan.end_lsn(), Lsn::new(3, second as u64));
        // Its first sector never arrived but the later ones did.
        let mut file = log_with(3, &plain(&[100, 10_000]));
        file[second..second + LOG_SECTOR].fill(0);
        let scan = scan_log_file(&file, 3, DB);
        assert_eq!(scan.records.len(), 1);
        assert_eq!(scan.end, ScanEnd::TornTail { offset: second });
        // A hole with valid records after it is not a clean end either.
        let mut file = log_with(3, &plain(&[100, 100, 100]));
        file[second..second + LOG_SECTOR].fill(0);
        assert_eq!(
            scan_log_file(&file, 3, DB).end,
            ScanEnd::TornTail { offset: second }
        );
        // A record cut short with data after it is damage, not a torn tail.
        let mut file = log_with(3, &plain(&[10_000, 100]));
        file[2 * LOG_SECTOR..3 * LOG_SECTOR].fill(0);
        assert_eq!(
            scan_log_file(&file, 3, DB).end,
            ScanEnd::Damaged {
                offset: LOG_SECTOR,
                damage: Damage::Checksum
            }
        );
    }

    fn arb_entries() -> impl Strategy<Value = Vec<RedoEntry>> {
        prop::collection::vec(
            (any::<u64>(), any::<u64>())
                .prop_map(|(page, generation)| RedoEntry { page, generation }),
            0..300,
        )
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(64))]

        #[test]
        fn records_round_trip(
            gen in 1u64..1 << 30,
            records in prop::collection::vec((0usize..40_000, any::<u32>(), arb_entries()), 0..12),
        ) {
            let mut file = vec![0u8; LOG_FILE_SIZE];
            encode_log_header(&mut file, gen, DB, 1);
            let mut off = LOG_SECTOR;
            let mut written = Vec::new();
            for (n, ops, entries) in &records {
                let size = record_size(*n, entries.len());
                if off + size > LOG_FILE_SIZE {
                    break;
                }
                let lsn = Lsn::new(gen, off as u64);
                prop_assert_eq!(encode_record(&mut file[off..], lsn, *n, *ops, entries), size);
                written.push((lsn, *n, *ops, entries.clone()));
                off += size;
            }
            let scan = scan_log_file(&file, gen, DB);
            prop_assert_eq!(scan.end, ScanEnd::Clean { offset: off });
            prop_assert_eq!(scan.records.len(), written.len());
            for (r, (lsn, n, ops, entries)) in scan.records.iter().zip(&written) {
                prop_assert_eq!(r.lsn, *lsn);
                prop_assert_eq!(r.ops, *ops);
                prop_assert_eq!(&r.entries, entries);
                prop_assert!(r.payload_len >= *n && r.payload_len >= 8 + 16 * entries.len());
                prop_assert_eq!(r.size(), record_size(*n, entries.len()));
            }
        }

        #[test]
        fn any_bit_flip_in_a_written_record_ends_the_scan_before_it(
            sizes in prop::collection::vec(0usize..20_000, 1..6),
            pick in any::<prop::sample::Index>(),
            bit in 0u8..8,
        ) {
            let records: Vec<_> = sizes.iter().map(|&n| (n, entries(3))).collect();
            let mut file = log_with(9, &records);
            let clean = scan_log_file(&file, 9, DB);
            let end = clean.end.offset();
            let at = LOG_SECTOR + pick.index(end - LOG_SECTOR);
            file[at] ^= 1 << bit;
            let scan = scan_log_file(&file, 9, DB);
            let hit = clean.records.iter().position(|r| r.end().offset() as usize > at);
            let hit = hit.unwrap_or(clean.records.len());
            prop_assert!(!scan.end.is_clean());
            prop_assert_eq!(&scan.records[..], &clean.records[..hit]);
        }

        #[test]
        fn arbitrary_bytes_never_panic(
            noise in prop::collection::vec(any::<u8>(), 0..3 * LOG_SECTOR),
            at in 0usize..LOG_FILE_SIZE,
            keep_header in any::<bool>(),
        ) {
            let mut file = if keep_header { log_with(4, &plain(&[5000])) } else { vec![0; LOG_FILE_SIZE] };
            let at = at.min(LOG_FILE_SIZE - noise.len());
            file[at..at + noise.len()].copy_from_slice(&noise);
            let scan = scan_log_file(&file, 4, DB);
            for (i, r) in scan.records.iter().enumerate() {
                prop_assert_eq!(r.lsn.generation(), 4);
                if let Some(next) = scan.records.get(i + 1) {
                    prop_assert_eq!(r.end(), next.lsn);
                }
            }
            // Short and random images of any length.
            let _ = scan_log_file(&noise, 4, DB);
        }

        #[test]
        fn a_random_record_header_never_panics(
            payload_len in any::<u32>(),
            count in any::<u32>(),
            tail in prop::collection::vec(any::<u8>(), 0..64),
        ) {
            // A record with a valid checksum but an arbitrary length and entry count.
            let mut file = log_with(4, &[]);
            let r = &mut file[LOG_SECTOR..];
            r[..8].copy_from_slice(RECORD_MAGIC);
            r[16..24].copy_from_slice(&4u64.to_le_bytes());
            r[24..32].copy_from_slice(&Lsn::new(4, LOG_SECTOR as u64).raw().to_le_bytes());
            r[32..36].copy_from_slice(&payload_len.to_le_bytes());
            r[RECORD_HEADER..RECORD_HEADER + 4].copy_from_slice(&count.to_le_bytes());
            r[RECORD_HEADER + 8..RECORD_HEADER + 8 + tail.len()].copy_from_slice(&tail);
            if let Some(rec) = r.get_mut(..record_size(payload_len as usize, 0)) {
                let sum = block_checksum(rec);
                rec[8..16].copy_from_slice(&sum.to_le_bytes());
            }
            let scan = scan_log_file(&file, 4, DB);
            if let Some(rec) = scan.records.first() {
                prop_assert!(8 + 16 * rec.entries.len() <= rec.payload_len);
            }
        }
    }
}
