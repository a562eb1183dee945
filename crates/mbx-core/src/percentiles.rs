//! The latency percentile summary.

use serde::{Deserialize, Serialize};

/// Percentile summary in milliseconds: the result contract's `PCT` (its serialized form is part
/// of result.json: the keys and their order must not change). The I/O histograms summarize
/// into it and result.json carries it, one type for both.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize, Default)]
pub struct Percentiles {
    /// Mean.
    pub avg: f64,
    /// Median.
    pub p50: f64,
    /// 90th percentile.
    pub p90: f64,
    /// 99th percentile.
    pub p99: f64,
    /// 99.9th percentile.
    pub p999: f64,
    /// Largest value.
    pub max: f64,
}
