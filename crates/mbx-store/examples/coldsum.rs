//! The checksum of a page that is not in the CPU's caches, as the engine meets every page a read
//! just brought from the device (bench/profile.sh's biggest single item): `checksum_ok` over
//! the pages of a 1 GiB area, far beyond the last-level cache, in a scattered order, against
//! the same pages hashed again while warm (one page, over and over). Prints the thread's CPU
//! time (and wall time) per page, the best of `ROUNDS` rounds. Usage: cargo run --release -p mbx-store
//! --example coldsum (COLDSUM_MIB=N: an area of N MiB)

use std::hint::black_box;
use std::time::{Duration, Instant};

use mbx_store::page::{build_data_page, checksum_ok, PageHeader, KIND_DATA, PAGE_SIZE};

/// The area's size: 1 GiB, or COLDSUM_MIB MiB (a small one for counting instructions under
/// callgrind, where caches are not the question).
fn area_bytes() -> usize {
    std::env::var("COLDSUM_MIB")
        .ok()
        .and_then(|v| v.parse::<usize>().ok())
        .map_or(1 << 30, |m| m.max(1) << 20)
}
const ROUNDS: usize = 7;
/// Walks over the whole area per round (the thread CPU clock ticks in milliseconds here).
const WALKS: usize = 4;

fn cpu() -> Duration {
    mbx_io::platform::thread_cpu_time().unwrap_or_default()
}

fn main() {
    let bytes = area_bytes();
    let pages = bytes / PAGE_SIZE;
    let mut area = vec![0u8; bytes];
    for (n, p) in area.chunks_exact_mut(PAGE_SIZE).enumerate() {
        build_data_page(
            p,
            &PageHeader {
                page_number: n as u64,
                database_id: 0x5eed,
                generation: 1,
                kind: KIND_DATA,
                compressibility_pct: 0,
            },
        );
    }
    // A full-period walk over the pages (odd step, power-of-two count): no two neighbours in
    // memory follow each other, so no prefetcher has the next page ready.
    let step = pages / 2 + 1 + (pages / 8) * 2;
    let mut cold = Duration::MAX;
    let mut warm = Duration::MAX;
    let mut cold_wall = Duration::MAX;
    for _ in 0..ROUNDS {
        let t = cpu();
        let w = Instant::now();
        let mut n = 0usize;
        let mut ok = 0usize;
        for _ in 0..pages * WALKS {
            n = (n + step) % pages;
            ok += usize::from(checksum_ok(black_box(&area[n * PAGE_SIZE..][..PAGE_SIZE])));
        }
        cold = cold.min((cpu() - t) / (pages * WALKS) as u32);
        cold_wall = cold_wall.min(w.elapsed() / (pages * WALKS) as u32);
        assert_eq!(ok, pages * WALKS);
        let mut ok = ok - pages * (WALKS - 1);
        let t = cpu();
        for _ in 0..pages * WALKS {
            ok += usize::from(checksum_ok(black_box(&area[..PAGE_SIZE])));
        }
        warm = warm.min((cpu() - t) / (pages * WALKS) as u32);
        assert_eq!(ok, (WALKS + 1) * pages);
    }
    println!(
        "| checksum_ok of a 32 KiB page | cold (1 GiB area, scattered) | warm (one page) |\n|---|---|---|\n| CPU ns per page, best of {ROUNDS} | {} | {} |\n| wall ns per page, best of {ROUNDS} | {} | |",
        cold.as_nanos(),
        warm.as_nanos(),
        cold_wall.as_nanos()
    );
}
