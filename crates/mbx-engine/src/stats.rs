//! Counters per instance and stream: per sample interval and over the measured phase.

use std::time::Duration;

use mbx_io::LatencyHistogram;

/// The I/O streams of an instance.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Stream {
    /// Transactional database reads.
    DbRead = 0,
    /// Database writes (flushes).
    DbWrite = 1,
    /// Log writes.
    LogWrite = 2,
    /// Log reads for replication.
    LogRead = 3,
    /// Background maintenance reads.
    Bdm = 4,
}

/// Number of streams.
pub const STREAMS: usize = 5;

/// Count, bytes and latency sum.
#[derive(Debug, Clone, Copy, Default)]
pub struct Counter {
    /// I/Os.
    pub ios: u64,
    /// Bytes.
    pub bytes: u64,
    /// Sum of latencies, ns.
    pub lat_ns: u128,
}

impl Counter {
    fn add(&mut self, bytes: u64, lat: Duration) {
        self.ios += 1;
        self.bytes += bytes;
        self.lat_ns += lat.as_nanos();
    }
    /// Per second over `secs`.
    pub fn rate(&self, secs: f64) -> f64 {
        if secs > 0.0 {
            self.ios as f64 / secs
        } else {
            0.0
        }
    }
    /// Average bytes.
    pub fn avg_bytes(&self) -> f64 {
        if self.ios == 0 {
            0.0
        } else {
            self.bytes as f64 / self.ios as f64
        }
    }
    /// Average latency, ms.
    pub fn avg_ms(&self) -> f64 {
        if self.ios == 0 {
            0.0
        } else {
            self.lat_ns as f64 / self.ios as f64 / 1e6
        }
    }
    /// Combines two counters.
    pub fn plus(&self, o: &Counter) -> Counter {
        Counter {
            ios: self.ios + o.ios,
            bytes: self.bytes + o.bytes,
            lat_ns: self.lat_ns + o.lat_ns,
        }
    }
}

/// Statistics of one instance.
#[derive(Debug)]
pub struct InstanceStats {
    /// Since the last sample.
    pub interval: [Counter; STREAMS],
    /// Over the measured phase.
    pub measured: [Counter; STREAMS],
    /// Latency distributions over the measured phase.
    pub hist: Vec<LatencyHistogram>,
    /// Transactions since the last sample.
    pub txns_interval: u64,
    /// Transactions in the measured phase.
    pub txns_measured: u64,
    /// Page fault stalls since the last sample.
    pub stalls_interval: u64,
    /// Per-sample average latencies during measurement: (db read, log write), for "maximum".
    pub sample_avgs: Vec<(f64, f64)>,
}

impl Default for InstanceStats {
    fn default() -> Self {
        InstanceStats {
            interval: [Counter::default(); STREAMS],
            measured: [Counter::default(); STREAMS],
            hist: (0..STREAMS).map(|_| LatencyHistogram::new()).collect(),
            txns_interval: 0,
            txns_measured: 0,
            stalls_interval: 0,
            sample_avgs: Vec::new(),
        }
    }
}

impl InstanceStats {
    /// Records one completed I/O.
    pub fn record(&mut self, s: Stream, bytes: u64, lat: Duration, measuring: bool) {
        self.interval[s as usize].add(bytes, lat);
        if measuring {
            self.measured[s as usize].add(bytes, lat);
            self.hist[s as usize].record(lat);
        }
    }
}
