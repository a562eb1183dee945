//! The workload: sessions running transactions from the workload model, paced to the target.

pub(crate) mod open;
pub mod pacing;
pub(crate) mod session;
