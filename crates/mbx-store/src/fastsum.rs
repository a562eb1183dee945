//! XXH3-64 of a checksummed block without its checksum field (bytes 0..8 then 16..end): the
//! value `xxhash_rust::xxh3::Xxh3Default` gives for those bytes, computed here so that it can
//! run with AVX2 where the CPU has it (detected at run time; the build targets baseline x86-64,
//! where xxhash-rust uses SSE2 only). The code is the XXH3 long-input algorithm (inputs over
//! 240 bytes) written over the block in place, without concatenating the two parts, with AVX2
//! intrinsics over whole 16-stripe blocks and a prefetch of its input ahead. Tests compare it
//! with xxhash-rust on many lengths and contents. (Before, one generic body compiled with AVX2
//! enabled: the compiler vectorised each stripe but indexed and bounds-checked every one,
//! 15.7k instructions per 32 KiB page against 9.7k now; on a page in the CPU's caches about
//! 10-20% less time, on a cold one the same: a cold page's hash waits for memory.)

/// XXH3's default secret (xxhash-rust's `DEFAULT_SECRET`, the reference kSecret).
const SECRET: [u8; 192] = [
    0xb8, 0xfe, 0x6c, 0x39, 0x23, 0xa4, 0x4b, 0xbe, 0x7c, 0x01, 0x81, 0x2c, 0xf7, 0x21, 0xad, 0x1c,
    0xde, 0xd4, 0x6d, 0xe9, 0x83, 0x90, 0x97, 0xdb, 0x72, 0x40, 0xa4, 0xa4, 0xb7, 0xb3, 0x67, 0x1f,
    0xcb, 0x79, 0xe6, 0x4e, 0xcc, 0xc0, 0xe5, 0x78, 0x82, 0x5a, 0xd0, 0x7d, 0xcc, 0xff, 0x72, 0x21,
    0xb8, 0x08, 0x46, 0x74, 0xf7, 0x43, 0x24, 0x8e, 0xe0, 0x35, 0x90, 0xe6, 0x81, 0x3a, 0x26, 0x4c,
    0x3c, 0x28, 0x52, 0xbb, 0x91, 0xc3, 0x00, 0xcb, 0x88, 0xd0, 0x65, 0x8b, 0x1b, 0x53, 0x2e, 0xa3,
    0x71, 0x64, 0x48, 0x97, 0xa2, 0x0d, 0xf9, 0x4e, 0x38, 0x19, 0xef, 0x46, 0xa9, 0xde, 0xac, 0xd8,
    0xa8, 0xfa, 0x76, 0x3f, 0xe3, 0x9c, 0x34, 0x3f, 0xf9, 0xdc, 0xbb, 0xc7, 0xc7, 0x0b, 0x4f, 0x1d,
    0x8a, 0x51, 0xe0, 0x4b, 0xcd, 0xb4, 0x59, 0x31, 0xc8, 0x9f, 0x7e, 0xc9, 0xd9, 0x78, 0x73, 0x64,
    0xea, 0xc5, 0xac, 0x83, 0x34, 0xd3, 0xeb, 0xc3, 0xc5, 0x81, 0xa0, 0xff, 0xfa, 0x13, 0x63, 0xeb,
    0x17, 0x0d, 0xdd, 0x51, 0xb7, 0xf0, 0xda, 0x49, 0xd3, 0x16, 0x55, 0x26, 0x29, 0xd4, 0x68, 0x9e,
    0x2b, 0x16, 0xbe, 0x58, 0x7d, 0x47, 0xa1, 0xfc, 0x8f, 0xf8, 0xb8, 0xd1, 0x7a, 0xd0, 0x31, 0xce,
    0x45, 0xcb, 0x3a, 0x8f, 0x95, 0x16, 0x04, 0x28, 0xaf, 0xd7, 0xfb, 0xca, 0xbb, 0x4b, 0x40, 0x7e,
];

const PRIME32_1: u64 = 0x9E37_79B1;
const PRIME32_2: u64 = 0x85EB_CA77;
const PRIME32_3: u64 = 0xC2B2_AE3D;
const PRIME64_1: u64 = 0x9E37_79B1_85EB_CA87;
const PRIME64_2: u64 = 0xC2B2_AE3D_27D4_EB4F;
const PRIME64_3: u64 = 0x1656_67B1_9E37_79F9;
const PRIME64_4: u64 = 0x85EB_CA77_C2B2_AE63;
const PRIME64_5: u64 = 0x27D4_EB2F_1656_67C5;
const INITIAL_ACC: [u64; 8] = [
    PRIME32_3, PRIME64_1, PRIME64_2, PRIME64_3, PRIME64_4, PRIME32_2, PRIME64_5, PRIME32_1,
];
/// Stripes of 64 bytes per block (between scrambles): (secret size - 64) / 8.
const STRIPES_PER_BLOCK: usize = 16;
const BLOCK_LEN: usize = 64 * STRIPES_PER_BLOCK;

/// `n` little-endian words of the secret from byte `at`.
const fn secret_words<const N: usize>(at: usize) -> [u64; N] {
    let mut w = [0u64; N];
    let mut i = 0;
    while i < N {
        let b = at + 8 * i;
        w[i] = u64::from_le_bytes([
            SECRET[b],
            SECRET[b + 1],
            SECRET[b + 2],
            SECRET[b + 3],
            SECRET[b + 4],
            SECRET[b + 5],
            SECRET[b + 6],
            SECRET[b + 7],
        ]);
        i += 1;
    }
    w
}

/// The secret as words at every multiple of 8: stripe `n` of a block uses words `n..n + 8`.
const STRIPE_KEYS: [u64; 24] = secret_words(0);
/// The scramble key: the secret's last 64 bytes.
const SCRAMBLE_KEY: [u64; 8] = secret_words(192 - 64);
/// The key of the input's last stripe (secret size - 64 - 7).
const LAST_KEY: [u64; 8] = secret_words(192 - 64 - 7);
/// The key of the final merge (from byte 11).
const MERGE_KEY: [u64; 8] = secret_words(11);

#[cfg(test)]
#[inline(always)]
fn word(p: &[u8], at: usize) -> u64 {
    let mut b = [0u8; 8];
    b.copy_from_slice(&p[at..at + 8]);
    u64::from_le_bytes(b)
}

/// How far ahead of the stripe being hashed its input is prefetched, in bytes (the reference
/// XXH3 prefetches ahead too, `XXH_PREFETCH_DIST`). A page a read has just brought from the
/// device is in memory, not in the CPU's caches, and the hardware prefetcher starts over at
/// every 4 KiB page boundary: asking for the lines ahead keeps the multiplies fed. 2 KiB was
/// the best of 512 B to 4 KiB on crates/mbx-store/examples/coldsum.rs (a cold page: about 20%
/// less CPU than without). It changes no value.
const PREFETCH_DIST: usize = 2048;

/// Asks for the cache lines of `p[at..at + BLOCK_LEN]` (nothing unless all of it is in `p`).
#[inline(always)]
fn prefetch_block(p: &[u8], at: usize) {
    #[cfg(target_arch = "x86_64")]
    if at.saturating_add(BLOCK_LEN) <= p.len() {
        for line in 0..BLOCK_LEN / 64 {
            // SAFETY: a prefetch reads nothing and cannot fault; the address is inside `p`.
            #[allow(unsafe_code)]
            unsafe {
                std::arch::x86_64::_mm_prefetch::<{ std::arch::x86_64::_MM_HINT_T0 }>(
                    p.as_ptr().add(at + 64 * line).cast::<i8>(),
                );
            }
        }
    }
    #[cfg(not(target_arch = "x86_64"))]
    let _ = (p, at);
}

#[cfg(test)]
/// XXH3's accumulate step over one 64-byte stripe.
#[inline(always)]
fn accumulate(acc: &mut [u64; 8], stripe: &[u8], key: &[u64]) {
    let stripe = &stripe[..64];
    let key = &key[..8];
    let mut d = [0u64; 8];
    for (i, w) in d.iter_mut().enumerate() {
        *w = word(stripe, 8 * i);
    }
    for i in 0..8 {
        let dk = d[i] ^ key[i];
        acc[i ^ 1] = acc[i ^ 1].wrapping_add(d[i]);
        acc[i] = acc[i].wrapping_add((dk & 0xffff_ffff).wrapping_mul(dk >> 32));
    }
}

#[cfg(test)]
/// XXH3's scramble step, after each block.
#[inline(always)]
fn scramble(acc: &mut [u64; 8]) {
    for (a, k) in acc.iter_mut().zip(SCRAMBLE_KEY) {
        let x = (*a ^ (*a >> 47)) ^ k;
        *a = x.wrapping_mul(PRIME32_1);
    }
}

#[inline(always)]
fn mul128_fold64(a: u64, b: u64) -> u64 {
    let t = (a as u128).wrapping_mul(b as u128);
    (t as u64) ^ ((t >> 64) as u64)
}

#[cfg(test)]
/// The hash of `p[..8]` followed by `p[16..]`; `p` must be longer than 248 bytes (the part
/// hashed longer than 240 bytes, XXH3's long-input path). The plain statement of the steps and
/// of the layout (the field skipped), checked against xxhash-rust on every CPU by the tests;
/// [`body_avx2`] is what runs.
#[inline(always)]
fn body(p: &[u8]) -> u64 {
    // Logical input: byte i is p[i] for i < 8, p[i + 8] after. Stripe k >= 1 (logical bytes
    // 64k..64k+64) is therefore p[64k + 8..64k + 72]; stripe 0 is assembled.
    let len = p.len() - 8;
    let mut first = [0u8; 64];
    first[..8].copy_from_slice(&p[..8]);
    first[8..].copy_from_slice(&p[16..72]);
    let stripe = |k: usize| -> &[u8] {
        if k == 0 {
            &first
        } else {
            &p[64 * k + 8..64 * k + 72]
        }
    };
    let mut acc = INITIAL_ACC;
    let blocks = (len - 1) / BLOCK_LEN;
    for b in 0..blocks {
        // The lines of the block PREFETCH_DIST ahead, asked for at once (a branch per block,
        // not per stripe: the stripes' code stays as the compiler unrolls it).
        prefetch_block(p, BLOCK_LEN * b + 8 + PREFETCH_DIST);
        for n in 0..STRIPES_PER_BLOCK {
            accumulate(
                &mut acc,
                stripe(b * STRIPES_PER_BLOCK + n),
                &STRIPE_KEYS[n..],
            );
        }
        scramble(&mut acc);
    }
    let stripes = ((len - 1) - BLOCK_LEN * blocks) / 64;
    for n in 0..stripes {
        accumulate(
            &mut acc,
            stripe(blocks * STRIPES_PER_BLOCK + n),
            &STRIPE_KEYS[n..],
        );
    }
    // The last 64 logical bytes are the last 64 bytes of the block.
    accumulate(&mut acc, &p[p.len() - 64..], &LAST_KEY);
    merge(&acc, len)
}

/// The same hash as [`body`], its accumulate and scramble steps written with AVX2 intrinsics
/// (two 256-bit accumulators, the reference XXH3's AVX2 steps) over whole 16-stripe blocks
/// taken as arrays, so that a block's loop has no bounds check or branch per stripe: about
/// half the instructions per 32 KiB page of what the compiler made of `body` (callgrind on
/// crates/mbx-store/examples/coldsum.rs: 15.7k to 7.9k per page), the same value (the tests
/// compare both with xxhash-rust).
#[cfg(target_arch = "x86_64")]
#[allow(unsafe_code)]
#[target_feature(enable = "avx2")]
unsafe fn body_avx2(p: &[u8]) -> u64 {
    use std::arch::x86_64::{
        __m256i, _mm256_add_epi64, _mm256_loadu_si256, _mm256_mul_epu32, _mm256_set1_epi64x,
        _mm256_shuffle_epi32, _mm256_slli_epi64, _mm256_srli_epi64, _mm256_storeu_si256,
        _mm256_xor_si256,
    };

    /// Loads 4 words from `w[at..at + 4]`.
    #[inline(always)]
    fn load_words(w: &[u64], at: usize) -> __m256i {
        let w = &w[at..at + 4];
        // SAFETY: the four words are in bounds (the slice above); an unaligned load.
        unsafe { _mm256_loadu_si256(w.as_ptr().cast()) }
    }
    /// Loads the 32 bytes `s[32h..32h + 32]` of a stripe (`h` is 0 or 1).
    #[inline(always)]
    fn load_half(s: &[u8; 64], h: usize) -> __m256i {
        let b = &s[32 * h..32 * h + 32];
        // SAFETY: the 32 bytes are in bounds (the slice above); an unaligned load.
        unsafe { _mm256_loadu_si256(b.as_ptr().cast()) }
    }
    /// XXH3's accumulate step over one stripe, its key the 8 words from `key[at..]`.
    #[inline(always)]
    fn accumulate_v(acc: &mut [__m256i; 2], stripe: &[u8; 64], key: &[u64], at: usize) {
        for (h, a) in acc.iter_mut().enumerate() {
            let d = load_half(stripe, h);
            let k = load_words(key, at + 4 * h);
            // SAFETY: AVX2 is enabled for the function these steps are inlined into (the
            // only caller, `body_avx2`); the intrinsics touch registers only.
            unsafe {
                let dk = _mm256_xor_si256(d, k);
                let product = _mm256_mul_epu32(dk, _mm256_srli_epi64::<32>(dk));
                // acc[i ^ 1] += d[i]: the two words of each 128-bit half swapped.
                let swapped = _mm256_shuffle_epi32::<0x4E>(d);
                *a = _mm256_add_epi64(*a, _mm256_add_epi64(product, swapped));
            }
        }
    }
    /// XXH3's scramble step.
    #[inline(always)]
    fn scramble_v(acc: &mut [__m256i; 2]) {
        for (h, a) in acc.iter_mut().enumerate() {
            let k = load_words(&SCRAMBLE_KEY, 4 * h);
            // SAFETY: as in `accumulate_v`. x * PRIME32_1 (a 32-bit prime) modulo 2^64 is
            // lo(x) * p + (hi(x) * p << 32).
            unsafe {
                let x = _mm256_xor_si256(_mm256_xor_si256(*a, _mm256_srli_epi64::<47>(*a)), k);
                let prime = _mm256_set1_epi64x(PRIME32_1 as i64);
                let lo = _mm256_mul_epu32(x, prime);
                let hi = _mm256_mul_epu32(_mm256_srli_epi64::<32>(x), prime);
                *a = _mm256_add_epi64(lo, _mm256_slli_epi64::<32>(hi));
            }
        }
    }

    let len = p.len() - 8;
    let mut first = [0u8; 64];
    first[..8].copy_from_slice(&p[..8]);
    first[8..].copy_from_slice(&p[16..72]);
    // Logical stripe k >= 1 is p[64k + 8..64k + 72]: the (k - 1)th 64-byte chunk of p[72..].
    let (rest, _) = p[72..].as_chunks::<64>();
    let stripe = |k: usize| -> &[u8; 64] {
        match k.checked_sub(1) {
            None => &first,
            Some(i) => &rest[i],
        }
    };
    let mut acc = [load_words(&INITIAL_ACC, 0), load_words(&INITIAL_ACC, 4)];
    let blocks = (len - 1) / BLOCK_LEN;
    if blocks > 0 {
        prefetch_block(p, 8 + PREFETCH_DIST);
        for n in 0..STRIPES_PER_BLOCK {
            accumulate_v(&mut acc, stripe(n), &STRIPE_KEYS, n);
        }
        scramble_v(&mut acc);
    }
    // Blocks 1.. are rest[16b - 1..16b + 15]: whole arrays of 16 stripes.
    let (later, _) = rest
        .get(STRIPES_PER_BLOCK - 1..)
        .unwrap_or_default()
        .as_chunks::<STRIPES_PER_BLOCK>();
    for (i, block) in later.iter().take(blocks.saturating_sub(1)).enumerate() {
        // The lines of the block PREFETCH_DIST ahead, asked for at once.
        prefetch_block(p, BLOCK_LEN * (i + 1) + 8 + PREFETCH_DIST);
        // Four stripes a turn: the loop's own counting is a quarter of what it was.
        let (quads, _) = block.as_chunks::<4>();
        for (q, four) in quads.iter().enumerate() {
            for (j, s) in four.iter().enumerate() {
                accumulate_v(&mut acc, s, &STRIPE_KEYS, 4 * q + j);
            }
        }
        scramble_v(&mut acc);
    }
    let stripes = ((len - 1) - BLOCK_LEN * blocks) / 64;
    for n in 0..stripes {
        accumulate_v(
            &mut acc,
            stripe(blocks * STRIPES_PER_BLOCK + n),
            &STRIPE_KEYS,
            n,
        );
    }
    // The last 64 logical bytes are the last 64 bytes of the block.
    let mut last = [0u8; 64];
    last.copy_from_slice(&p[p.len() - 64..]);
    accumulate_v(&mut acc, &last, &LAST_KEY, 0);
    let mut words = [0u64; 8];
    for (h, a) in acc.iter().enumerate() {
        let out = &mut words[4 * h..4 * h + 4];
        // SAFETY: the four words are in bounds (the slice above); an unaligned store.
        unsafe { _mm256_storeu_si256(out.as_mut_ptr().cast(), *a) };
    }
    merge(&words, len)
}

/// XXH3's final merge of the accumulators of an input of `len` bytes.
#[inline(always)]
fn merge(acc: &[u64; 8], len: usize) -> u64 {
    let mut h = (len as u64).wrapping_mul(PRIME64_1);
    for i in 0..4 {
        h = h.wrapping_add(mul128_fold64(
            acc[2 * i] ^ MERGE_KEY[2 * i],
            acc[2 * i + 1] ^ MERGE_KEY[2 * i + 1],
        ));
    }
    h ^= h >> 37;
    h = h.wrapping_mul(0x1656_6791_9E37_79F9);
    h ^ (h >> 32)
}

/// True if the CPU runs the AVX2 body (detected once, then a cached flag). Without AVX2 the
/// baseline body is slower than xxhash-rust's hand-written SSE2 code, which is then used.
#[inline]
pub(crate) fn available() -> bool {
    #[cfg(target_arch = "x86_64")]
    {
        std::arch::is_x86_feature_detected!("avx2")
    }
    #[cfg(not(target_arch = "x86_64"))]
    {
        false
    }
}

/// The checksum of `p` without its field at 8..16 when the AVX2 body can compute it: `None`
/// without AVX2 or when `p` is too short for the long-input path (the caller then hashes it
/// with xxhash-rust).
#[inline]
pub(crate) fn without_field(p: &[u8]) -> Option<u64> {
    if p.len() <= 248 || !available() {
        return None;
    }
    #[cfg(target_arch = "x86_64")]
    {
        // SAFETY: the CPU supports AVX2 (`available`), the only requirement of a
        // `#[target_feature(enable = "avx2")]` function; its body is safe code.
        #[allow(unsafe_code)]
        Some(unsafe { body_avx2(p) })
    }
    #[cfg(not(target_arch = "x86_64"))]
    None
}

#[cfg(test)]
mod tests {
    use super::*;
    use xxhash_rust::xxh3::{xxh3_64, Xxh3Default};

    fn reference(p: &[u8]) -> u64 {
        let mut h = Xxh3Default::new();
        h.update(&p[..8]);
        h.update(&p[16..]);
        h.digest()
    }

    #[test]
    fn equals_xxh3_on_every_length_and_content() {
        let mut x = 0x1234_5678_9abc_def0u64;
        let mut data = vec![0u8; 40_000];
        for b in data.iter_mut() {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            *b = x as u8;
        }
        // Around every block and stripe boundary, up to past a page.
        let mut lens: Vec<usize> = (249..2_200).collect();
        lens.extend([4_096, 8_192, 16_384, 32_767, 32_768, 32_769, 40_000]);
        for len in lens {
            let p = &data[..len];
            if available() {
                assert_eq!(without_field(p), Some(reference(p)), "length {len}");
            }
            assert_eq!(body(p), reference(p), "length {len}, baseline");
        }
        assert_eq!(without_field(&data[..248]), None);
        // All zeros and all ones pages.
        for fill in [0u8, 0xff] {
            let p = vec![fill; 32_768];
            assert_eq!(body(&p), reference(&p));
            if available() {
                assert_eq!(without_field(&p), Some(reference(&p)));
            }
        }
        // The plain one-shot hash agrees for a block whose field is moved out of the way.
        let mut joined = data[..8].to_vec();
        joined.extend_from_slice(&data[16..1_000]);
        assert_eq!(body(&data[..1_000]), xxh3_64(&joined));
    }
}
