//! Transaction log files: 1 MiB each, a 4 KiB header then sector-aligned records.
//!
//! Log file header (bytes 0..4096):
//!
//! | offset | size | field |
//! |---|---|---|
//! | 0 | 8 | magic `MBXLOGF1` |
//! | 8 | 8 | checksum: XXH3-64 of bytes 0..8 and 16..4096 |
//! | 16 | 8 | log generation (the file's sequence number, from 1) |
//! | 24 | 8 | database id |
//! | 32 | 4 | format version (1) |
//! | 36 | 4 | file size (1048576) |
//! | 40 | 8 | creation time, Unix seconds |
//!
//! Record (at a 4 KiB boundary, padded to the next one):
//!
//! | offset | size | field |
//! |---|---|---|
//! | 0 | 8 | magic `MBXLREC1` |
//! | 8 | 8 | checksum: XXH3-64 of the record header (without this field) and payload |
//! | 16 | 8 | log generation of the file it is in |
//! | 24 | 8 | LSN: byte offset of the record in the log stream (generation x 1 MiB + offset) |
//! | 32 | 4 | payload length |
//! | 36 | 4 | operations in the record (commit group size) |
//! | 40 | 24 | reserved, zero |
//! | 64 | n | payload |
//!
//! A reader stops at the first record whose magic, generation or checksum is wrong: that is the
//! end of the log (the rest of the file is zeros or the tail of a torn write).

use crate::page::block_checksum;

/// Size of a log file.
pub const LOG_FILE_SIZE: usize = 1 << 20;
/// Sector size of log writes (records are padded to it).
pub const LOG_SECTOR: usize = 4096;
/// Log file magic.
pub const LOG_MAGIC: &[u8; 8] = b"MBXLOGF1";
/// Record magic.
pub const RECORD_MAGIC: &[u8; 8] = b"MBXLREC1";
/// Bytes of a record header.
pub const RECORD_HEADER: usize = 64;

/// Encodes a log file header into `p` (at least [`LOG_SECTOR`] bytes; only those are touched).
pub fn encode_log_header(p: &mut [u8], generation: u64, database_id: u64, created_unix_s: u64) {
    let p = &mut p[..LOG_SECTOR];
    p.fill(0);
    p[..8].copy_from_slice(LOG_MAGIC);
    p[16..24].copy_from_slice(&generation.to_le_bytes());
    p[24..32].copy_from_slice(&database_id.to_le_bytes());
    p[32..36].copy_from_slice(&1u32.to_le_bytes());
    p[36..40].copy_from_slice(&(LOG_FILE_SIZE as u32).to_le_bytes());
    p[40..48].copy_from_slice(&created_unix_s.to_le_bytes());
    let sum = block_checksum(p);
    p[8..16].copy_from_slice(&sum.to_le_bytes());
}

/// Decodes a log file header: `(generation, database_id)`, or `None` if invalid.
pub fn decode_log_header(p: &[u8]) -> Option<(u64, u64)> {
    let p = p.get(..LOG_SECTOR)?;
    if &p[..8] != LOG_MAGIC || u64::from_le_bytes(p[8..16].try_into().ok()?) != block_checksum(p) {
        return None;
    }
    Some((
        u64::from_le_bytes(p[16..24].try_into().ok()?),
        u64::from_le_bytes(p[24..32].try_into().ok()?),
    ))
}

/// Bytes a record with `payload_len` payload occupies (padded to a sector).
pub fn record_size(payload_len: usize) -> usize {
    (RECORD_HEADER + payload_len).div_ceil(LOG_SECTOR) * LOG_SECTOR
}

/// Encodes a record into `out` (length = [`record_size`]); the payload is deterministic filler
/// derived from the LSN, so every record is unique.
pub fn encode_record(out: &mut [u8], generation: u64, lsn: u64, payload_len: usize, ops: u32) {
    let size = record_size(payload_len);
    let out = &mut out[..size];
    out.fill(0);
    out[..8].copy_from_slice(RECORD_MAGIC);
    out[16..24].copy_from_slice(&generation.to_le_bytes());
    out[24..32].copy_from_slice(&lsn.to_le_bytes());
    out[32..36].copy_from_slice(&(payload_len as u32).to_le_bytes());
    out[36..40].copy_from_slice(&ops.to_le_bytes());
    let mut x = lsn ^ 0x9e37_79b9_7f4a_7c15;
    for chunk in out[RECORD_HEADER..RECORD_HEADER + payload_len].chunks_mut(8) {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        let v = x.to_le_bytes();
        chunk.copy_from_slice(&v[..chunk.len()]);
    }
    let sum = record_checksum(&out[..RECORD_HEADER + payload_len]);
    out[8..16].copy_from_slice(&sum.to_le_bytes());
}

fn record_checksum(header_and_payload: &[u8]) -> u64 {
    block_checksum(header_and_payload)
}

/// A record found by [`scan_records`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RecordInfo {
    /// Offset in the file.
    pub offset: usize,
    /// LSN.
    pub lsn: u64,
    /// Payload length.
    pub payload_len: usize,
    /// Operations in the record.
    pub ops: u32,
}

/// Why a scan stopped.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LogEnd {
    /// Reached a zeroed sector or the end of the file: a clean end.
    Clean,
    /// Found a damaged record (bad checksum, wrong generation): a torn or corrupt tail.
    Damaged {
        /// Offset of the damaged record.
        offset: usize,
    },
}

/// Walks the records of a log file image (the whole 1 MiB file, header included), verifying each.
pub fn scan_records(file: &[u8], generation: u64) -> (Vec<RecordInfo>, LogEnd) {
    let mut out = Vec::new();
    let mut off = LOG_SECTOR;
    while off + RECORD_HEADER <= file.len() {
        let r = &file[off..];
        if r[..LOG_SECTOR.min(r.len())].iter().all(|&b| b == 0) {
            return (out, LogEnd::Clean);
        }
        match parse_record(r, generation) {
            Some((lsn, payload_len, ops)) => {
                out.push(RecordInfo {
                    offset: off,
                    lsn,
                    payload_len,
                    ops,
                });
                off += record_size(payload_len);
            }
            None => return (out, LogEnd::Damaged { offset: off }),
        }
    }
    (out, LogEnd::Clean)
}

/// Verifies the record at the start of `r`: `(lsn, payload_len, ops)` if it is intact.
fn parse_record(r: &[u8], generation: u64) -> Option<(u64, usize, u32)> {
    let u64_at = |o: usize| r[o..o + 8].try_into().ok().map(u64::from_le_bytes);
    let u32_at = |o: usize| r[o..o + 4].try_into().ok().map(u32::from_le_bytes);
    if &r[..8] != RECORD_MAGIC || u64_at(16)? != generation {
        return None;
    }
    let payload_len = u32_at(32)? as usize;
    if RECORD_HEADER + payload_len > r.len()
        || u64_at(8)? != record_checksum(&r[..RECORD_HEADER + payload_len])
    {
        return None;
    }
    Some((u64_at(24)?, payload_len, u32_at(36)?))
}

/// File name of log generation `g` ("E00" prefix as ESE names logs, hex generation).
pub fn log_file_name(generation: u64) -> String {
    format!("E00{generation:08X}.log")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn log_with_records(gen: u64, sizes: &[usize]) -> Vec<u8> {
        let mut file = vec![0u8; LOG_FILE_SIZE];
        encode_log_header(&mut file, gen, 77, 1);
        let mut off = LOG_SECTOR;
        for (i, &n) in sizes.iter().enumerate() {
            let lsn = gen * LOG_FILE_SIZE as u64 + off as u64;
            encode_record(&mut file[off..], gen, lsn, n, i as u32 + 1);
            off += record_size(n);
        }
        file
    }

    #[test]
    fn round_trip() {
        let file = log_with_records(3, &[100, 8000, 20_000, 4032]);
        assert_eq!(decode_log_header(&file), Some((3, 77)));
        let (recs, end) = scan_records(&file, 3);
        assert_eq!(end, LogEnd::Clean);
        assert_eq!(recs.len(), 4);
        assert_eq!(recs[1].payload_len, 8000);
        assert_eq!(recs[2].ops, 3);
        assert_eq!(record_size(4032), 4096);
        assert_eq!(record_size(4033), 8192);
        assert_eq!(log_file_name(26), "E000000001A.log");
    }

    #[test]
    fn damage_stops_the_scan() {
        let mut file = log_with_records(3, &[100, 8000, 100]);
        let second = LOG_SECTOR + record_size(100);
        file[second + 5000] ^= 4; // flip a bit in the second record's payload
        let (recs, end) = scan_records(&file, 3);
        assert_eq!(recs.len(), 1);
        assert_eq!(end, LogEnd::Damaged { offset: second });
        // A record from another generation (a stale file reused) ends the log too.
        let file = log_with_records(3, &[100]);
        let (recs, end) = scan_records(&file, 4);
        assert!(recs.is_empty());
        assert_eq!(end, LogEnd::Damaged { offset: LOG_SECTOR });
        // A corrupt header is detected.
        let mut file = log_with_records(3, &[100]);
        file[30] ^= 1;
        assert_eq!(decode_log_header(&file), None);
    }
}
