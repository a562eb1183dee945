//! The vocabulary every mbxstress crate shares, kept in one leaf crate so it exists once: time
//! as an input ([`clock`]), the seeded generator whose streams results and page contents depend
//! on ([`rng`]), the Linux `/proc` readers ([`procfs`]), path helpers ([`path`]) and the
//! latency percentile summary of the result contract ([`Percentiles`]).
//!
//! It depends on none of the workspace's crates (std and serde only), so none of them has to
//! depend on another to share a word.

pub mod clock;
pub mod path;
pub mod percentiles;
pub mod procfs;
pub mod rng;

pub use clock::{Clock, RealClock, SimClock};
pub use percentiles::Percentiles;
pub use rng::SplitMix64;
