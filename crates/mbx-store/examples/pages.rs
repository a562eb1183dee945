//! Page build and check cost per 32 KiB page (bench/pages.sh runs it in release).
//!
//! Each case times the current code ("now") against a copy of the code as it was before issue 11
//! ("before", in this file), in alternating rounds of `ITERS` pages over a small ring of page
//! buffers (as the engine's buffer pool reuses them), so that both meet the same load on a
//! shared machine. It prints the thread's CPU time per page over all rounds and the best
//! round's wall time per page.

use std::hint::black_box;
use std::time::{Duration, Instant};

use mbx_store::page::{
    block_checksum, build_data_page, build_data_page_with, check_data_page, PageCheck, PageHeader,
    PayloadGenerator, KIND_DATA, PAGE_SIZE,
};

const ITERS: usize = 20_000;
const ROUNDS: usize = 10;
const RING: usize = 8;
const DB: u64 = 0x5eed_1234_abcd_0042;

fn cpu() -> Duration {
    mbx_io::platform::thread_cpu_time().unwrap_or_default()
}

fn header(n: u64, gen: u64, pct: u8) -> PageHeader {
    PageHeader {
        page_number: n,
        database_id: DB,
        generation: gen,
        kind: KIND_DATA,
        compressibility_pct: pct,
    }
}

/// The page code as it was before issue 11 (commit cafa14c), for the A/B comparison.
mod before {
    use super::*;
    use xxhash_rust::xxh3::{xxh3_64, Xxh3};

    pub fn block_checksum(p: &[u8]) -> u64 {
        let mut h = Xxh3::new();
        h.update(&p[..8]);
        h.update(&p[16..]);
        h.digest()
    }

    struct Wy(u64);
    impl Wy {
        #[inline]
        fn next(&mut self) -> u64 {
            self.0 = self.0.wrapping_add(0xa076_1d64_78bd_642f);
            let t = (self.0 as u128).wrapping_mul((self.0 ^ 0xe703_7ed1_a0b4_28db) as u128);
            ((t >> 64) as u64) ^ (t as u64)
        }
    }

    pub fn build_data_page(p: &mut [u8], h: &PageHeader) {
        p[..8].copy_from_slice(b"MBXPAGE1");
        p[16..24].copy_from_slice(&h.page_number.to_le_bytes());
        p[24..32].copy_from_slice(&h.database_id.to_le_bytes());
        p[32..40].copy_from_slice(&h.generation.to_le_bytes());
        p[40..44].copy_from_slice(&h.kind.to_le_bytes());
        p[44] = h.compressibility_pct;
        p[45..64].fill(0);
        let mut seed = [0u8; 24];
        seed[..8].copy_from_slice(&h.database_id.to_le_bytes());
        seed[8..16].copy_from_slice(&h.page_number.to_le_bytes());
        seed[16..].copy_from_slice(&h.generation.to_le_bytes());
        let mut rng = Wy(xxh3_64(&seed));
        let pct = h.compressibility_pct.min(99) as usize;
        let r = 4096 * (100 - pct) / 100;
        let random = (r - r % 8).max(40);
        for b in 0..PAGE_SIZE / 4096 {
            let block_start = b * 4096;
            let start = if b == 0 { 64 } else { block_start };
            let rand_end = (block_start + random)
                .max(start + 16)
                .min(block_start + 4096);
            for chunk in p[start..rand_end].chunks_exact_mut(8) {
                chunk.copy_from_slice(&rng.next().to_le_bytes());
            }
            p[rand_end..block_start + 4096].fill(0);
        }
        let sum = block_checksum(p);
        p[8..16].copy_from_slice(&sum.to_le_bytes());
    }

    pub fn check_data_page(p: &[u8], n: u64, db: u64, scratch: &mut [u8]) -> PageCheck {
        let sum = u64::from_le_bytes(p[8..16].try_into().unwrap_or([0; 8]));
        if &p[..8] == b"MBXPAGE1" && sum == block_checksum(p) {
            let h = PageHeader::read(p);
            if h.database_id != db {
                return PageCheck::WrongDatabase {
                    found: h.database_id,
                };
            }
            if h.page_number != n {
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
        let claimed = PageHeader::read(p);
        build_data_page(
            scratch,
            &PageHeader {
                page_number: n,
                database_id: db,
                generation: claimed.generation,
                kind: KIND_DATA,
                compressibility_pct: claimed.compressibility_pct,
            },
        );
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
            PageCheck::Bad
        }
    }
}

/// CPU time and best wall time per page of `f(i, page)` run ITERS times.
struct Tally {
    cpu: Duration,
    best_us: f64,
}

fn round(t: &mut Tally, ring: &mut [Vec<u8>], f: &mut impl FnMut(usize, &mut [u8])) {
    let c = cpu();
    let w = Instant::now();
    for i in 0..ITERS {
        f(i, &mut ring[i % RING]);
    }
    t.best_us = t
        .best_us
        .min(w.elapsed().as_secs_f64() * 1e6 / ITERS as f64);
    t.cpu += cpu().saturating_sub(c);
}

/// Runs `before` and `now` in alternating rounds (each on its own copy of its ring: `ring_b`
/// holds pages made by the code it times) and prints a table row.
fn case(
    name: &str,
    ring_b: &[Vec<u8>],
    ring_n: &[Vec<u8>],
    mut before: impl FnMut(usize, &mut [u8]),
    mut now: impl FnMut(usize, &mut [u8]),
) {
    let mut ring_b = ring_b.to_vec();
    let mut ring_n = ring_n.to_vec();
    let mut tb = Tally {
        cpu: Duration::ZERO,
        best_us: f64::MAX,
    };
    let mut tn = Tally {
        cpu: Duration::ZERO,
        best_us: f64::MAX,
    };
    // Warm-up round, not counted.
    round(&mut Tally { ..tb }, &mut ring_b, &mut before);
    round(&mut Tally { ..tn }, &mut ring_n, &mut now);
    for _ in 0..ROUNDS {
        round(&mut tb, &mut ring_b, &mut before);
        round(&mut tn, &mut ring_n, &mut now);
    }
    let per = |t: &Tally| t.cpu.as_secs_f64() * 1e6 / (ITERS * ROUNDS) as f64;
    println!(
        "| {name} | {:.2} | {:.2} | {:.2} | {:.2} |",
        per(&tb),
        per(&tn),
        tb.best_us,
        tn.best_us
    );
}

fn main() {
    let blank: Vec<Vec<u8>> = (0..RING).map(|_| vec![0u8; PAGE_SIZE]).collect();
    println!("| case | before: CPU µs/page | now: CPU µs/page | before: best wall µs | now: best wall µs |");
    println!("|---|---|---|---|---|");
    for pct in [0u8, 50] {
        case(
            &format!("build, {pct}% compressible"),
            &blank,
            &blank,
            |i, p| {
                before::build_data_page(p, &header(i as u64 + 2, 7, pct));
                black_box(&p[8..16]);
            },
            |i, p| {
                build_data_page(p, &header(i as u64 + 2, 7, pct));
                black_box(&p[8..16]);
            },
        );
    }
    // The payload generators alone, both in the current code: wyrand (id 0, every page written
    // before the id existed) against the current one.
    for pct in [0u8, 50] {
        case(
            &format!("build, {pct}% compressible: generator 0 (wyrand) vs current"),
            &blank,
            &blank,
            |i, p| {
                build_data_page_with(p, &header(i as u64 + 2, 7, pct), PayloadGenerator::Wyrand);
                black_box(&p[8..16]);
            },
            |i, p| {
                build_data_page(p, &header(i as u64 + 2, 7, pct));
                black_box(&p[8..16]);
            },
        );
    }
    // Valid pages, each made by the code that checks it: each ring slot holds one.
    let mut good = blank.clone();
    let mut good_b = blank.clone();
    for (k, (p, q)) in good.iter_mut().zip(good_b.iter_mut()).enumerate() {
        build_data_page(p, &header(k as u64 + 2, 7, 0));
        before::build_data_page(q, &header(k as u64 + 2, 7, 0));
    }
    case(
        "checksum only (block_checksum)",
        &good_b,
        &good,
        |_, p| {
            black_box(before::block_checksum(black_box(p)));
        },
        |_, p| {
            black_box(block_checksum(black_box(p)));
        },
    );
    case(
        "XXH3-64 one-shot of 32 KiB (floor for the hash)",
        &good_b,
        &good,
        |_, p| {
            black_box(xxhash_rust::xxh3::xxh3_64(black_box(p)));
        },
        |_, p| {
            black_box(xxhash_rust::xxh3::xxh3_64(black_box(p)));
        },
    );
    let mut s1 = vec![0u8; PAGE_SIZE];
    let mut s2 = vec![0u8; PAGE_SIZE];
    case(
        "check, good page",
        &good_b,
        &good,
        |i, p| {
            let c = before::check_data_page(black_box(p), (i % RING) as u64 + 2, DB, &mut s1);
            assert_eq!(c, PageCheck::Good { generation: 7 });
        },
        |i, p| {
            let c = check_data_page(black_box(p), (i % RING) as u64 + 2, DB, &mut s2);
            assert_eq!(c, PageCheck::Good { generation: 7 });
        },
    );
    // One flipped bit per page: the slow path (rebuild and compare).
    let mut flipped = good.clone();
    let mut flipped_b = good_b.clone();
    for p in flipped.iter_mut().chain(flipped_b.iter_mut()) {
        p[20_000] ^= 0x10;
    }
    case(
        "check, one flipped bit (rebuild)",
        &flipped_b,
        &flipped,
        |i, p| {
            let c = before::check_data_page(black_box(p), (i % RING) as u64 + 2, DB, &mut s1);
            assert_eq!(c, PageCheck::Correctable);
        },
        |i, p| {
            let c = check_data_page(black_box(p), (i % RING) as u64 + 2, DB, &mut s2);
            assert_eq!(c, PageCheck::Correctable);
        },
    );
}
