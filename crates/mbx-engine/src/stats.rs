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
    /// Highest per-sample average latencies during measurement: (db read, log write), for
    /// "maximum" (kept as a running maximum: memory does not grow with the test's length).
    pub max_sample_avgs: (f64, f64),
    /// Transactions in every phase.
    pub txns_total: u64,
    /// The measured phase is running (I/O counts towards the result).
    pub measuring: bool,
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
            max_sample_avgs: (0.0, 0.0),
            txns_total: 0,
            measuring: false,
        }
    }
}

impl InstanceStats {
    /// Clears the per-sample counters (the one place they are reset).
    pub fn reset_interval(&mut self) {
        self.interval = [Counter::default(); STREAMS];
        self.txns_interval = 0;
        self.stalls_interval = 0;
    }

    /// Records one completed I/O.
    pub fn record(&mut self, s: Stream, bytes: u64, lat: Duration) {
        self.interval[s as usize].add(bytes, lat);
        if self.measuring {
            self.measured[s as usize].add(bytes, lat);
            self.hist[s as usize].record(lat);
        }
    }
}
