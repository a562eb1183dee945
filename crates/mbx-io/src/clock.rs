//! Time as an input: the [`Clock`] trait and the real clock are mbx-core's (one trait for the
//! engine and the loadgen day), re-exported here where the I/O layer's users find them.

pub use mbx_core::clock::{Clock, RealClock};
