//! The 32 KiB database page: header, deterministic unique payload, checksum, verification.
//!
//! Layout (little-endian; see docs/store-format.md):
//!
//! | offset | size | field |
//! |---|---|---|
//! | 0 | 8 | magic `MBXPAGE1` |
//! | 8 | 8 | checksum: XXH3-64 of bytes 0..8 and 16..32768 |
//! | 16 | 8 | page number (position in the file, in pages) |
//! | 24 | 8 | database id (random per database) |
//! | 32 | 8 | write generation (0 when created, +1 per rewrite) |
//! | 40 | 4 | kind (1 data, 2 database header) |
//! | 44 | 1 | compressibility percent the payload was made with |
//! | 45 | 19 | reserved, zero |
//! | 64 | 32704 | payload |
//!
//! The payload of a data page is a pure function of (database id, page number, generation,
//! compressibility): in each 4 KiB block, a pseudo-random prefix followed by zeros, the zero part
//! being `compressibility` percent of the block. Every 4 KiB block therefore holds bytes that no
//! other block of any database holds (no deduplication), while compressors see about the requested
//! ratio. Determinism lets the verifier rebuild what a page should contain, which is how it tells
//! a single flipped bit (correctable) from real damage.

use xxhash_rust::xxh3::{xxh3_64, Xxh3};

/// Page size in bytes (Jetstress / ESE 2013: 32 KiB).
pub const PAGE_SIZE: usize = 32768;
/// Bytes of the page header.
pub const PAGE_HEADER: usize = 64;
/// Page magic.
pub const PAGE_MAGIC: &[u8; 8] = b"MBXPAGE1";
/// Kind of a data page.
pub const KIND_DATA: u32 = 1;
/// Kind of a database header page.
pub const KIND_HEADER: u32 = 2;
/// Largest compressibility accepted: each 4 KiB block keeps at least 40 random bytes.
pub const MAX_COMPRESSIBILITY_PCT: u8 = 99;

const BLOCK: usize = 4096;

fn get_u64(p: &[u8], off: usize) -> u64 {
    let mut b = [0u8; 8];
    b.copy_from_slice(&p[off..off + 8]);
    u64::from_le_bytes(b)
}

fn get_u32(p: &[u8], off: usize) -> u32 {
    let mut b = [0u8; 4];
    b.copy_from_slice(&p[off..off + 4]);
    u32::from_le_bytes(b)
}

fn put_u64(p: &mut [u8], off: usize, v: u64) {
    p[off..off + 8].copy_from_slice(&v.to_le_bytes());
}

fn put_u32(p: &mut [u8], off: usize, v: u32) {
    p[off..off + 4].copy_from_slice(&v.to_le_bytes());
}

/// The checksum of a page (or any checksummed block with the checksum at 8..16): XXH3-64 of
/// everything except the checksum field.
pub fn block_checksum(p: &[u8]) -> u64 {
    let mut h = Xxh3::new();
    h.update(&p[..8]);
    h.update(&p[16..]);
    h.digest()
}

/// Fields of a page header.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PageHeader {
    /// Position in the file, in pages.
    pub page_number: u64,
    /// Database the page belongs to.
    pub database_id: u64,
    /// Write generation.
    pub generation: u64,
    /// Data or header page.
    pub kind: u32,
    /// Compressibility of the payload.
    pub compressibility_pct: u8,
}

impl PageHeader {
    /// Reads the header fields (without checking anything).
    pub fn read(p: &[u8]) -> PageHeader {
        PageHeader {
            page_number: get_u64(p, 16),
            database_id: get_u64(p, 24),
            generation: get_u64(p, 32),
            kind: get_u32(p, 40),
            compressibility_pct: p[44],
        }
    }

    fn write(&self, p: &mut [u8]) {
        p[..8].copy_from_slice(PAGE_MAGIC);
        put_u64(p, 16, self.page_number);
        put_u64(p, 24, self.database_id);
        put_u64(p, 32, self.generation);
        put_u32(p, 40, self.kind);
        p[44] = self.compressibility_pct;
        p[45..PAGE_HEADER].fill(0);
    }
}

/// Fast, small, deterministic generator (wyrand).
struct Wy(u64);

impl Wy {
    #[inline]
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0xa076_1d64_78bd_642f);
        let t = (self.0 as u128).wrapping_mul((self.0 ^ 0xe703_7ed1_a0b4_28db) as u128);
        ((t >> 64) as u64) ^ (t as u64)
    }
}

/// Random bytes at the start of each 4 KiB block for a compressibility (multiple of 8, >= 40).
fn random_bytes_per_block(compressibility_pct: u8) -> usize {
    let pct = compressibility_pct.min(MAX_COMPRESSIBILITY_PCT) as usize;
    let r = BLOCK * (100 - pct) / 100;
    (r - r % 8).max(40)
}

/// Writes a complete data page into `p` (exactly [`PAGE_SIZE`] bytes).
pub fn build_data_page(p: &mut [u8], h: &PageHeader) {
    debug_assert_eq!(p.len(), PAGE_SIZE);
    h.write(p);
    let mut seed = [0u8; 24];
    seed[..8].copy_from_slice(&h.database_id.to_le_bytes());
    seed[8..16].copy_from_slice(&h.page_number.to_le_bytes());
    seed[16..].copy_from_slice(&h.generation.to_le_bytes());
    let mut rng = Wy(xxh3_64(&seed));
    let random = random_bytes_per_block(h.compressibility_pct);
    for b in 0..PAGE_SIZE / BLOCK {
        let block_start = b * BLOCK;
        let start = if b == 0 { PAGE_HEADER } else { block_start };
        let rand_end = (block_start + random)
            .max(start + 16)
            .min(block_start + BLOCK);
        // `start`, `rand_end` and block boundaries are multiples of 8: exact 8-byte stores.
        for chunk in p[start..rand_end].chunks_exact_mut(8) {
            chunk.copy_from_slice(&rng.next().to_le_bytes());
        }
        p[rand_end..block_start + BLOCK].fill(0);
    }
    let sum = block_checksum(p);
    put_u64(p, 8, sum);
}

/// Seals a page whose header and payload are filled in: sets magic-independent checksum.
pub fn seal(p: &mut [u8]) {
    let sum = block_checksum(p);
    put_u64(p, 8, sum);
}

/// True if the magic is right and the checksum matches.
pub fn checksum_ok(p: &[u8]) -> bool {
    &p[..8] == PAGE_MAGIC && get_u64(p, 8) == block_checksum(p)
}

/// What verification found in one page.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PageCheck {
    /// Checksum, database id and page number are right.
    Good {
        /// The page's write generation.
        generation: u64,
    },
    /// The page is all zeros: never written (or zeroed by the device).
    Unwritten,
    /// Checksum fails, and the page differs from what it should hold by exactly one bit: what
    /// ESE's ECC would correct.
    Correctable,
    /// Checksum fails (or magic is wrong) beyond a single bit: torn, overwritten or garbage.
    Bad,
    /// A valid page of this database, stored at the wrong position (misdirected write).
    WrongPageNumber {
        /// The page number the page carries.
        found: u64,
    },
    /// A valid page of another database (misdirected write across files).
    WrongDatabase {
        /// The database id the page carries.
        found: u64,
    },
}

/// Verifies a data page read from position `expected_page` of database `database_id`.
/// `scratch` is a page-sized buffer used to rebuild the expected content when the checksum fails.
pub fn check_data_page(
    p: &[u8],
    expected_page: u64,
    database_id: u64,
    scratch: &mut [u8],
) -> PageCheck {
    if checksum_ok(p) {
        let h = PageHeader::read(p);
        if h.database_id != database_id {
            return PageCheck::WrongDatabase {
                found: h.database_id,
            };
        }
        if h.page_number != expected_page {
            return PageCheck::WrongPageNumber {
                found: h.page_number,
            };
        }
        return PageCheck::Good {
            generation: h.generation,
        };
    }
    if p.iter().all(|&b| b == 0) {
        return PageCheck::Unwritten;
    }
    // Rebuild what the page should be, trusting only the generation and compressibility fields
    // (a flip in either of those makes the rebuild differ in many bits: counted as bad).
    let claimed = PageHeader::read(p);
    let expected = PageHeader {
        page_number: expected_page,
        database_id,
        generation: claimed.generation,
        kind: KIND_DATA,
        compressibility_pct: claimed.compressibility_pct,
    };
    build_data_page(scratch, &expected);
    let mut diff_bits = 0u32;
    for (a, b) in p.chunks_exact(8).zip(scratch.chunks_exact(8)) {
        let x = u64::from_le_bytes(a.try_into().unwrap_or([0; 8]))
            ^ u64::from_le_bytes(b.try_into().unwrap_or([0; 8]));
        diff_bits += x.count_ones();
        if diff_bits > 1 {
            return PageCheck::Bad;
        }
    }
    if diff_bits == 1 {
        PageCheck::Correctable
    } else {
        // Identical content with a failing checksum cannot happen; be conservative.
        PageCheck::Bad
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn page(n: u64, db: u64, gen: u64, pct: u8) -> Vec<u8> {
        let mut p = vec![0u8; PAGE_SIZE];
        build_data_page(
            &mut p,
            &PageHeader {
                page_number: n,
                database_id: db,
                generation: gen,
                kind: KIND_DATA,
                compressibility_pct: pct,
            },
        );
        p
    }

    #[test]
    fn round_trip_and_determinism() {
        let p = page(7, 42, 3, 0);
        assert!(checksum_ok(&p));
        let h = PageHeader::read(&p);
        assert_eq!(
            (h.page_number, h.database_id, h.generation, h.kind),
            (7, 42, 3, KIND_DATA)
        );
        assert_eq!(p, page(7, 42, 3, 0));
        assert_ne!(p[64..], page(7, 42, 4, 0)[64..]);
        let mut scratch = vec![0u8; PAGE_SIZE];
        assert_eq!(
            check_data_page(&p, 7, 42, &mut scratch),
            PageCheck::Good { generation: 3 }
        );
    }

    #[test]
    fn every_corruption_is_classified() {
        let mut scratch = vec![0u8; PAGE_SIZE];
        let good = page(9, 1, 0, 0);
        // A flipped bit in the payload: correctable.
        let mut p = good.clone();
        p[20_000] ^= 0x10;
        assert_eq!(
            check_data_page(&p, 9, 1, &mut scratch),
            PageCheck::Correctable
        );
        // Two flipped bits: bad.
        p[30_000] ^= 0x01;
        assert_eq!(check_data_page(&p, 9, 1, &mut scratch), PageCheck::Bad);
        // Torn page: the second half from another generation.
        let mut torn = good.clone();
        torn[16384..].copy_from_slice(&page(9, 1, 1, 0)[16384..]);
        assert_eq!(check_data_page(&torn, 9, 1, &mut scratch), PageCheck::Bad);
        // Torn page: the second half never written.
        let mut torn = good.clone();
        torn[16384..].fill(0);
        assert_eq!(check_data_page(&torn, 9, 1, &mut scratch), PageCheck::Bad);
        // A valid page at the wrong place.
        assert_eq!(
            check_data_page(&page(10, 1, 0, 0), 9, 1, &mut scratch),
            PageCheck::WrongPageNumber { found: 10 }
        );
        // A valid page of another database.
        assert_eq!(
            check_data_page(&page(9, 2, 0, 0), 9, 1, &mut scratch),
            PageCheck::WrongDatabase { found: 2 }
        );
        // Zeros.
        assert_eq!(
            check_data_page(&vec![0u8; PAGE_SIZE], 9, 1, &mut scratch),
            PageCheck::Unwritten
        );
        // Garbage.
        let garbage: Vec<u8> = (0..PAGE_SIZE).map(|i| (i * 13 % 251) as u8).collect();
        assert_eq!(
            check_data_page(&garbage, 9, 1, &mut scratch),
            PageCheck::Bad
        );
    }

    #[test]
    fn compressibility_shapes_the_payload() {
        for pct in [0u8, 25, 50, 75, 99] {
            let p = page(1, 1, 0, pct);
            let zeros = p[PAGE_HEADER..].iter().filter(|&&b| b == 0).count() as f64;
            let share = zeros / (PAGE_SIZE - PAGE_HEADER) as f64 * 100.0;
            assert!(
                (share - pct as f64).abs() < 3.0,
                "pct {pct}: {share:.1}% zeros"
            );
        }
    }
}
