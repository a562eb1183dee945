//! The seeded generator: SplitMix64 (Steele, Lea and Flood, 2014; the seeding generator of
//! xoshiro). Written here rather than taken from `rand`: the streams are part of what a run
//! produces (page contents, simulated latencies, the loadgen schedule) and must be the same on
//! every platform and version, which a 10-line function guarantees and a crate's major versions
//! do not.

/// SplitMix64's increment (the golden ratio in 64 bits).
pub const GAMMA: u64 = 0x9e37_79b9_7f4a_7c15;

/// SplitMix64's output function: a bijection of 64-bit words that mixes every input bit into
/// every output bit.
pub const fn mix(mut z: u64) -> u64 {
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    z ^ (z >> 31)
}

/// The first output of a SplitMix64 seeded with `z` (`mix(z + GAMMA)`): a hash of one word.
pub const fn hash(z: u64) -> u64 {
    mix(z.wrapping_add(GAMMA))
}

/// A SplitMix64 generator: the same seed gives the same stream everywhere.
#[derive(Debug, Clone)]
pub struct SplitMix64(u64);

impl SplitMix64 {
    /// A generator whose state is `seed` (any value, zero included).
    pub const fn new(seed: u64) -> Self {
        SplitMix64(seed)
    }

    /// The next 64 bits.
    pub fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(GAMMA);
        mix(self.0)
    }

    /// Uniform in [0, 1), 53 bits.
    pub fn unit(&mut self) -> f64 {
        (self.next_u64() >> 11) as f64 / (1u64 << 53) as f64
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_reference_stream() {
        // The reference implementation's first outputs for seed 1234567 (Vigna's splitmix64.c).
        let mut r = SplitMix64::new(1_234_567);
        assert_eq!(r.next_u64(), 6_457_827_717_110_365_317);
        assert_eq!(r.next_u64(), 3_203_168_211_198_807_973);
        assert_eq!(hash(1_234_567), 6_457_827_717_110_365_317);
        let u = SplitMix64::new(7).unit();
        assert!((0.0..1.0).contains(&u));
    }
}
