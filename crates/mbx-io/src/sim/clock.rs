//! Virtual time: mbx-core's simulated clock, re-exported where the simulated device lives.

pub use mbx_core::clock::SimClock;
