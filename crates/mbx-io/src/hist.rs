//! Latency histograms: HDR, per thread, merged (never averaged).

use std::time::Duration;

use hdrhistogram::Histogram;

/// Highest latency recorded exactly: one hour. Longer values are clamped (and counted).
const MAX_NS: u64 = 3_600_000_000_000;

/// An HDR histogram of latencies in nanoseconds (3 significant digits, 1 ns to 1 h).
#[derive(Debug, Clone)]
pub struct LatencyHistogram {
    h: Histogram<u64>,
    sum_ns: u128,
}

/// Percentile summary in milliseconds: the result contract's `PCT`, mbx-core's type (the same one
/// `mbx_result` carries).
pub use mbx_core::Percentiles;

impl Default for LatencyHistogram {
    fn default() -> Self {
        Self::new()
    }
}

impl LatencyHistogram {
    /// An empty histogram. Allocates its buckets now, so recording never allocates.
    pub fn new() -> Self {
        // The bounds are constants known to be valid; `new_with_bounds` cannot fail for them.
        let h = Histogram::new_with_bounds(1, MAX_NS, 3).unwrap_or_else(|_| unreachable_bounds());
        LatencyHistogram { h, sum_ns: 0 }
    }

    /// Records one latency.
    pub fn record(&mut self, d: Duration) {
        let ns = (d.as_nanos().min(MAX_NS as u128) as u64).max(1);
        self.h.saturating_record(ns);
        self.sum_ns += ns as u128;
    }

    /// Adds every value of `other` into `self`.
    pub fn merge(&mut self, other: &LatencyHistogram) {
        // Same bounds on both sides: `add` only fails when the other's values do not fit.
        let _ = self.h.add(&other.h);
        self.sum_ns += other.sum_ns;
    }

    /// Values recorded.
    pub fn count(&self) -> u64 {
        self.h.len()
    }

    /// Exact mean in milliseconds (from the running sum, not the buckets).
    pub fn mean_ms(&self) -> f64 {
        if self.count() == 0 {
            0.0
        } else {
            self.sum_ns as f64 / self.count() as f64 / 1e6
        }
    }

    /// The value at quantile `q` (0..=1) in milliseconds.
    pub fn quantile_ms(&self, q: f64) -> f64 {
        if self.count() == 0 {
            0.0
        } else {
            self.h.value_at_quantile(q) as f64 / 1e6
        }
    }

    /// Percentile summary in milliseconds.
    pub fn percentiles(&self) -> Percentiles {
        Percentiles {
            avg: self.mean_ms(),
            p50: self.quantile_ms(0.5),
            p90: self.quantile_ms(0.9),
            p99: self.quantile_ms(0.99),
            p999: self.quantile_ms(0.999),
            max: if self.count() == 0 {
                0.0
            } else {
                self.h.max() as f64 / 1e6
            },
        }
    }

    /// Forgets every value (keeps the allocation).
    pub fn reset(&mut self) {
        self.h.reset();
        self.sum_ns = 0;
    }
}

#[cold]
fn unreachable_bounds() -> Histogram<u64> {
    // Only reachable if the constant bounds above were edited into an invalid combination.
    panic!("invalid histogram bounds: 1..{MAX_NS} with 3 significant digits")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn merge_is_not_averaging() {
        // Thread A: 1000 fast I/Os at 1 ms; thread B: 10 slow ones at 100 ms.
        let mut a = LatencyHistogram::new();
        let mut b = LatencyHistogram::new();
        for _ in 0..1000 {
            a.record(Duration::from_millis(1));
        }
        for _ in 0..10 {
            b.record(Duration::from_millis(100));
        }
        a.merge(&b);
        assert_eq!(a.count(), 1010);
        let p = a.percentiles();
        // The true p99 of the merged set is 1 ms (1000 of 1010 values), whereas averaging the two
        // threads' p99s would give 50.5 ms.
        assert!((p.p99 - 1.0).abs() < 0.01, "{p:?}");
        assert!((p.p999 - 100.0).abs() < 0.1, "{p:?}");
        assert!((p.max - 100.0).abs() < 0.1, "{p:?}");
        let mean = (1000.0 * 1.0 + 10.0 * 100.0) / 1010.0;
        assert!((p.avg - mean).abs() < 1e-9, "{p:?}");
    }

    #[test]
    fn empty_is_zero() {
        let h = LatencyHistogram::new();
        assert_eq!(h.percentiles(), Percentiles::default());
    }
}
