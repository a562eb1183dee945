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

use xxhash_rust::xxh3::{xxh3_64, Xxh3Default};

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
    // Pages and other blocks over 248 bytes: the same value, with AVX2 where the CPU has it.
    if let Some(sum) = crate::fastsum::without_field(p) {
        return sum;
    }
    // The default-secret hasher: the same value as `Xxh3::new()`, without copying the secret in.
    let mut h = Xxh3Default::new();
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

/// The wyrand generator's increment: its state after `k` outputs is `seed + k * WY_INC`.
const WY_INC: u64 = 0xa076_1d64_78bd_642f;
/// The wyrand mixing constant.
const WY_XOR: u64 = 0xe703_7ed1_a0b4_28db;

/// The wyrand output for state `s` (a pure function of the state: the generator is counter
/// mode, so outputs can be computed independently of each other).
#[inline(always)]
fn wymix(s: u64) -> u64 {
    let t = (s as u128).wrapping_mul((s ^ WY_XOR) as u128);
    ((t >> 64) as u64) ^ (t as u64)
}

/// Fills `out` (a multiple of 8 bytes long) with the wyrand stream that follows state `s`, one
/// little-endian word per output, and returns the state after the last output. Four outputs per
/// step from independent states keep the multiplier busy (the same bytes as one at a time).
#[inline]
fn fill_random(out: &mut [u8], mut s: u64) -> u64 {
    let mut quads = out.chunks_exact_mut(32);
    for q in &mut quads {
        let a = wymix(s.wrapping_add(WY_INC));
        let b = wymix(s.wrapping_add(WY_INC.wrapping_mul(2)));
        let c = wymix(s.wrapping_add(WY_INC.wrapping_mul(3)));
        s = s.wrapping_add(WY_INC.wrapping_mul(4));
        let d = wymix(s);
        q[..8].copy_from_slice(&a.to_le_bytes());
        q[8..16].copy_from_slice(&b.to_le_bytes());
        q[16..24].copy_from_slice(&c.to_le_bytes());
        q[24..].copy_from_slice(&d.to_le_bytes());
    }
    for w in quads.into_remainder().chunks_exact_mut(8) {
        s = s.wrapping_add(WY_INC);
        w.copy_from_slice(&wymix(s).to_le_bytes());
    }
    s
}

/// Random bytes at the start of each 4 KiB block for a compressibility (multiple of 8, >= 40).
fn random_bytes_per_block(compressibility_pct: u8) -> usize {
    let pct = compressibility_pct.min(MAX_COMPRESSIBILITY_PCT) as usize;
    let r = BLOCK * (100 - pct) / 100;
    (r - r % 8).max(40)
}

/// Writes a complete data page into `p` (exactly [`PAGE_SIZE`] bytes).
pub fn build_data_page(p: &mut [u8], h: &PageHeader) {
    build(p, h, crate::fastsum::available());
}

/// [`build_data_page`], checksumming the finished page (`whole`) or block by block.
fn build(p: &mut [u8], h: &PageHeader, whole: bool) {
    debug_assert_eq!(p.len(), PAGE_SIZE);
    h.write(p);
    let mut seed = [0u8; 24];
    seed[..8].copy_from_slice(&h.database_id.to_le_bytes());
    seed[8..16].copy_from_slice(&h.page_number.to_le_bytes());
    seed[16..].copy_from_slice(&h.generation.to_le_bytes());
    let mut state = xxh3_64(&seed);
    let random = random_bytes_per_block(h.compressibility_pct);
    // With AVX2 the checksum is taken over the finished page; without it, with xxhash-rust block
    // by block as each block is made (still in the L1 cache): the faster way on each (pages.sh).
    let mut sum = Xxh3Default::new();
    sum.update(&p[..8]);
    for b in 0..PAGE_SIZE / BLOCK {
        let block_start = b * BLOCK;
        let start = if b == 0 { PAGE_HEADER } else { block_start };
        let rand_end = (block_start + random)
            .max(start + 16)
            .min(block_start + BLOCK);
        // `start`, `rand_end` and block boundaries are multiples of 8: exact 8-byte stores.
        state = fill_random(&mut p[start..rand_end], state);
        p[rand_end..block_start + BLOCK].fill(0);
        if !whole {
            sum.update(&p[if b == 0 { 16 } else { block_start }..block_start + BLOCK]);
        }
    }
    let sum = if whole {
        block_checksum(p)
    } else {
        sum.digest()
    };
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
    // By 64-byte chunks (the OR of a chunk vectorises; a byte loop with an early exit does not).
    if p.chunks(64).all(|c| c.iter().fold(0u8, |a, &b| a | b) == 0) {
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
        let x = get_u64(a, 0) ^ get_u64(b, 0);
        // Nearly every word is equal: count bits (a software popcount on baseline x86-64) only
        // in the words that differ.
        if x != 0 {
            diff_bits += x.count_ones();
            if diff_bits > 1 {
                return PageCheck::Bad;
            }
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

    /// The generator as it was written before it was unrolled: one wyrand step per word.
    fn reference_page(h: &PageHeader) -> Vec<u8> {
        let mut p = vec![0u8; PAGE_SIZE];
        h.write(&mut p);
        let mut seed = [0u8; 24];
        seed[..8].copy_from_slice(&h.database_id.to_le_bytes());
        seed[8..16].copy_from_slice(&h.page_number.to_le_bytes());
        seed[16..].copy_from_slice(&h.generation.to_le_bytes());
        let mut s = xxh3_64(&seed);
        let random = random_bytes_per_block(h.compressibility_pct);
        for b in 0..PAGE_SIZE / BLOCK {
            let block_start = b * BLOCK;
            let start = if b == 0 { PAGE_HEADER } else { block_start };
            let rand_end = (block_start + random)
                .max(start + 16)
                .min(block_start + BLOCK);
            for chunk in p[start..rand_end].chunks_exact_mut(8) {
                s = s.wrapping_add(0xa076_1d64_78bd_642f);
                let t = (s as u128).wrapping_mul((s ^ 0xe703_7ed1_a0b4_28db) as u128);
                chunk.copy_from_slice(&(((t >> 64) as u64) ^ (t as u64)).to_le_bytes());
            }
        }
        let sum = block_checksum(&p);
        put_u64(&mut p, 8, sum);
        p
    }

    #[test]
    fn the_format_does_not_move() {
        // Checksums of pages built before issue 11 (commit cafa14c): the checksum covers every
        // byte but its own, so equal checksums mean the same page bytes as databases prepared
        // then hold.
        for (n, db, gen, pct, sum) in [
            (0x2, 0x1, 0x0, 0, 0x913d_15f7_375d_fcb6u64),
            (
                0x3039,
                0xdead_beef_0123_4567,
                0x63,
                0,
                0x59fe_fd09_aa38_edff,
            ),
            (0x7, 0x2a, 0x3, 50, 0x8fc0_408f_cf7e_f15c),
            (1 << 40, u64::MAX, u64::MAX, 99, 0xd57e_c5fa_0765_b98c),
            (0x3, 0x5, 0x8, 33, 0xb4fb_57d8_d8f7_b35b),
        ] {
            let p = page(n, db, gen, pct);
            assert_eq!(
                get_u64(&p, 8),
                sum,
                "page {n} db {db:#x} gen {gen} pct {pct}"
            );
        }
        // Every compressibility (every length of the random prefix, including those that are
        // not a multiple of the four-word step) builds byte for byte what the one-word loop did.
        for pct in 0..=100u8 {
            for gen in [0u64, 1, 0x8000_0000_0000_0001] {
                let h = PageHeader {
                    page_number: 3 + u64::from(pct),
                    database_id: 0x1234_5678_9abc_def0 ^ gen,
                    generation: gen,
                    kind: KIND_DATA,
                    compressibility_pct: pct,
                };
                let mut p = vec![0xa5u8; PAGE_SIZE];
                build_data_page(&mut p, &h);
                assert!(p == reference_page(&h), "pct {pct} gen {gen}");
                // Both ways of taking the checksum (AVX2 present or not) give the same page.
                for whole in [false, true] {
                    let mut q = vec![0x5au8; PAGE_SIZE];
                    build(&mut q, &h, whole);
                    assert!(q == p, "pct {pct} gen {gen} whole {whole}");
                }
            }
        }
    }

    #[test]
    fn classification_holds_at_the_page_edges() {
        // The word-wise comparison and the chunked zero scan must see the first and last bytes.
        let mut scratch = vec![0u8; PAGE_SIZE];
        let good = page(9, 1, 4, 30);
        for at in [0usize, 8, 15, 16, 63, 64, PAGE_SIZE - 8, PAGE_SIZE - 1] {
            let mut p = good.clone();
            p[at] ^= 0x80;
            assert_eq!(
                check_data_page(&p, 9, 1, &mut scratch),
                PageCheck::Correctable,
                "one bit at byte {at}"
            );
            // A second flipped bit far away makes it bad.
            p[PAGE_SIZE / 2 + 7] ^= 0x01;
            assert_eq!(
                check_data_page(&p, 9, 1, &mut scratch),
                PageCheck::Bad,
                "two bits, one at byte {at}"
            );
        }
        // Zeros but for one byte, at either end or in the middle of a 64-byte chunk: not unwritten.
        for at in [0usize, 100, PAGE_SIZE - 1] {
            let mut p = vec![0u8; PAGE_SIZE];
            p[at] = 1;
            assert_eq!(
                check_data_page(&p, 9, 1, &mut scratch),
                PageCheck::Bad,
                "byte {at}"
            );
        }
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
