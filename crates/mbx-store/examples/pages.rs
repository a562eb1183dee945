//! Page build and check cost per 32 KiB page (bench/pages.sh runs it in release).
//!
//! Each case runs in rounds of `ITERS` pages over a small ring of page buffers (as the engine's
//! buffer pool reuses them); it prints the thread's CPU time per page over all rounds (the
//! figure to compare on a shared machine) and the best round's wall time per page.

use std::hint::black_box;
use std::time::{Duration, Instant};

use mbx_store::page::{
    block_checksum, build_data_page, check_data_page, PageCheck, PageHeader, KIND_DATA, PAGE_SIZE,
};

const ITERS: usize = 20_000;
const ROUNDS: usize = 10;
const RING: usize = 8;

fn cpu() -> Duration {
    mbx_io::platform::thread_cpu_time().unwrap_or_default()
}

fn header(n: u64, gen: u64, pct: u8) -> PageHeader {
    PageHeader {
        page_number: n,
        database_id: 0x5eed_1234_abcd_0042,
        generation: gen,
        kind: KIND_DATA,
        compressibility_pct: pct,
    }
}

/// Runs `f(i, page)` ITERS times per round; prints CPU µs/page and best wall µs/page.
fn case(name: &str, ring: &mut [Vec<u8>], mut f: impl FnMut(usize, &mut [u8])) {
    // Warm-up round.
    for i in 0..ITERS / 10 {
        f(i, &mut ring[i % RING]);
    }
    let cpu0 = cpu();
    let mut best = f64::MAX;
    for _ in 0..ROUNDS {
        let t = Instant::now();
        for i in 0..ITERS {
            f(i, &mut ring[i % RING]);
        }
        best = best.min(t.elapsed().as_secs_f64() * 1e6 / ITERS as f64);
    }
    let cpu_us = cpu().saturating_sub(cpu0).as_secs_f64() * 1e6 / (ITERS * ROUNDS) as f64;
    println!("| {name} | {cpu_us:.2} | {best:.2} |");
}

fn main() {
    let mut ring: Vec<Vec<u8>> = (0..RING).map(|_| vec![0u8; PAGE_SIZE]).collect();
    let mut scratch = vec![0u8; PAGE_SIZE];
    println!("| case | CPU µs/page | best wall µs/page |");
    println!("|---|---|---|");
    for pct in [0u8, 50] {
        case(&format!("build, {pct}% compressible"), &mut ring, |i, p| {
            build_data_page(p, &header(i as u64 + 2, 7, pct));
            black_box(&p[8..16]);
        });
    }
    case("checksum only (block_checksum)", &mut ring, |_, p| {
        black_box(block_checksum(black_box(p)));
    });
    case("XXH3-64 one-shot of 32 KiB", &mut ring, |_, p| {
        black_box(xxhash_rust::xxh3::xxh3_64(black_box(p)));
    });
    // Good pages: each ring slot holds a valid page.
    for (k, p) in ring.iter_mut().enumerate() {
        build_data_page(p, &header(k as u64 + 2, 7, 0));
    }
    case("check, good page", &mut ring, |i, p| {
        let n = (i % RING) as u64 + 2;
        let c = check_data_page(black_box(p), n, 0x5eed_1234_abcd_0042, &mut scratch);
        assert_eq!(c, PageCheck::Good { generation: 7 });
    });
    // One flipped bit per page: the slow path (rebuild and compare).
    for p in ring.iter_mut() {
        p[20_000] ^= 0x10;
    }
    let mut scratch = vec![0u8; PAGE_SIZE];
    case("check, one flipped bit (rebuild)", &mut ring, |i, p| {
        let n = (i % RING) as u64 + 2;
        let c = check_data_page(black_box(p), n, 0x5eed_1234_abcd_0042, &mut scratch);
        assert_eq!(c, PageCheck::Correctable);
    });
}
