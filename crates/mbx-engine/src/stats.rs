//! Counters per instance and stream: per sample interval and over the measured phase.

use std::time::Duration;

use mbx_io::LatencyHistogram;

/// Why the log writer writes a record. These are ESE's reasons (its commit path and log writer,
/// docs/method.md "Logs"): a lazily committed transaction never causes a log write by itself;
/// its log goes out with the next record written for one of these reasons.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum FlushReason {
    /// A durable commit waits for its log to be on disk.
    Commit = 0,
    /// Half of the log buffer is filled.
    Capacity = 1,
    /// A page write waits for the log holding its change (write-ahead logging).
    WriteAhead = 2,
    /// Shutdown writes whatever is buffered.
    Shutdown = 3,
}

/// Number of [`FlushReason`]s.
pub(crate) const FLUSH_REASONS: usize = 4;

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
    /// I/O that is measured but not reported as a Jetstress stream: a checkpoint's database sync
    /// and checkpoint file write (ESE keeps its checkpoint file out of its log I/O counters,
    /// which are what Jetstress reports) and log file preallocation (not a write).
    Other = 5,
}

/// Number of streams.
pub const STREAMS: usize = 6;

/// What shaped the measured I/O, counted while measuring: why each log record was written, how
/// transactions committed and how page changes became page writes. The executor logs it per
/// instance at the end of the measured phase (docs/method.md, "Logs"), so the ratio of log
/// writes to database writes in a result can be traced to its causes.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Shape {
    /// Log records written, by reason (`db::log::FlushReason` as index).
    pub records: [u64; FLUSH_REASONS],
    /// Transactions that logged changes and committed durably (waited for the log).
    pub durable: u64,
    /// Transactions that logged changes and committed lazily.
    pub lazy: u64,
    /// Transactions that changed nothing (no log, no commit wait).
    pub read_only: u64,
    /// Page changes: pages modified by a transaction (a page modified twice counts twice).
    pub page_changes: u64,
    /// Pages written by page writes.
    pub pages_written: u64,
}

impl Shape {
    /// Log records written for any reason.
    pub fn records_total(&self) -> u64 {
        self.records.iter().sum()
    }

    /// The test.log line of instance `name`, given its measured log writes (records and log
    /// file headers) and database writes.
    pub fn line(&self, name: &str, log_writes: u64, db_writes: u64) -> String {
        // (Shutdown records come after the measured phase.)
        let [commit, capacity, write_ahead, _] = self.records;
        let ratio = if db_writes > 0 {
            log_writes as f64 / db_writes as f64
        } else {
            0.0
        };
        format!(
            "{name}: {log_writes} log writes per {db_writes} database writes ({ratio:.3}): \
             {commit} records for {} durable commits, {capacity} at half the log buffer, \
             {write_ahead} for page writes, {} log file headers; \
             {} lazy commits and {} read-only transactions; {} page changes written as {} pages.",
            self.durable,
            log_writes.saturating_sub(self.records_total()),
            self.lazy,
            self.read_only,
            self.page_changes,
            self.pages_written,
        )
    }
}

/// Count, bytes and latency sum.
#[derive(Debug, Clone, Copy, Default)]
pub struct Counter {
    /// I/Os completed.
    pub ios: u64,
    /// Bytes.
    pub bytes: u64,
    /// Sum of latencies, ns (of the completed I/Os and of the `pending` ones).
    pub lat_ns: u128,
    /// I/Os counted in the latency only, not in the rates or sizes: I/Os in flight when the
    /// measured phase ended (docs/method.md, "I/O in flight at the end").
    pub pending: u64,
}

impl Counter {
    fn add(&mut self, bytes: u64, lat: Duration) {
        self.ios += 1;
        self.bytes += bytes;
        self.lat_ns += lat.as_nanos();
    }
    /// Counts an I/O's latency only (an I/O the window ended on: see `pending`).
    fn add_latency(&mut self, lat: Duration) {
        self.pending += 1;
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
    /// Average latency, ms (of the completed I/Os and of the `pending` ones).
    pub fn avg_ms(&self) -> f64 {
        let n = self.ios.saturating_add(self.pending);
        if n == 0 {
            0.0
        } else {
            self.lat_ns as f64 / n as f64 / 1e6
        }
    }
    /// Combines two counters.
    pub fn plus(&self, o: &Counter) -> Counter {
        Counter {
            ios: self.ios + o.ios,
            bytes: self.bytes + o.bytes,
            lat_ns: self.lat_ns + o.lat_ns,
            pending: self.pending + o.pending,
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
    /// What shaped the measured I/O.
    pub shape: Shape,
    /// The per-sample averages the maximum-latency checks judge, with their tolerance.
    pub maxima: [SampleMaxima; 2],
    /// Per stream, the I/Os in flight when the measured phase ended.
    pub incomplete: [Incomplete; STREAMS],
}

/// The I/Os of one stream in flight when the measured phase ended (docs/method.md, "I/O in
/// flight at the end"): each counts in the measured latency figures once, with its whole
/// latency when it completes (during shutdown), or with its age when the test stopped waiting
/// for it.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Incomplete {
    /// How many were in flight.
    pub count: u64,
    /// The oldest one's age when measuring ended.
    pub oldest_at_end: Duration,
    /// The longest latency among them as finally known: to completion, or the age when the test
    /// stopped waiting (at least `oldest_at_end`).
    pub longest: Duration,
    /// Of them, how many never completed (the test ended, or gave up on them, first).
    pub never_completed: u64,
    /// How many of them have a latency known (completed, or given up on; not those that failed).
    pub known: u64,
    /// The sum of those latencies.
    pub known_total: Duration,
}

impl Incomplete {
    /// The average latency of those whose latency is known, ms (0 with none): the figure the
    /// maximum-latency check judges, as it judges a sample's average.
    pub fn avg_ms(&self) -> f64 {
        if self.known == 0 {
            0.0
        } else {
            self.known_total.as_secs_f64() * 1e3 / self.known as f64
        }
    }
}

/// The highest per-sample average latencies of one stream of one instance, for a
/// maximum-latency check with Jetstress's `MaximumLatencyErrors` tolerance: the `tolerated + 1`
/// highest are kept (memory does not grow with the test's length), and the samples over the
/// limit are counted.
#[derive(Debug, Clone, Default)]
pub struct SampleMaxima {
    /// Samples over the limit that are tolerated.
    pub tolerated: usize,
    /// The limit, ms.
    pub limit_ms: f64,
    /// The highest per-sample averages, highest first (at most `tolerated + 1`).
    pub top: Vec<f64>,
    /// Samples whose average was over the limit.
    pub over: u64,
    /// Samples seen.
    pub samples: u64,
}

impl SampleMaxima {
    /// Tracks a check of `limit_ms` that tolerates `tolerated` samples over it.
    pub fn new(tolerated: usize, limit_ms: f64) -> SampleMaxima {
        SampleMaxima {
            tolerated,
            limit_ms,
            top: Vec::new(),
            over: 0,
            samples: 0,
        }
    }

    /// One sample's average latency, ms.
    pub fn add(&mut self, avg_ms: f64) {
        self.samples += 1;
        if avg_ms > self.limit_ms {
            self.over += 1;
        }
        let at = self.top.partition_point(|&v| v >= avg_ms);
        if at <= self.tolerated {
            self.top.insert(at, avg_ms);
            self.top.truncate(self.tolerated.saturating_add(1));
        }
    }

    /// The largest per-sample average (0 with no sample).
    pub fn strict(&self) -> f64 {
        self.top.first().copied().unwrap_or(0.0)
    }

    /// The largest per-sample average once the `tolerated` highest are set aside (0 when there
    /// were no more samples than that): within the limit exactly when at most `tolerated`
    /// samples are over it.
    pub fn tolerated_value(&self) -> f64 {
        self.top.get(self.tolerated).copied().unwrap_or(0.0)
    }
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
            shape: Shape::default(),
            maxima: [SampleMaxima::default(), SampleMaxima::default()],
            incomplete: [Incomplete::default(); STREAMS],
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

    /// Counts a log record written for `why` (while measuring).
    pub(crate) fn count_record(&mut self, why: Option<FlushReason>) {
        if let (true, Some(why)) = (self.measuring, why) {
            self.shape.records[why as usize] += 1;
        }
    }

    /// Records one completed I/O.
    pub fn record(&mut self, s: Stream, bytes: u64, lat: Duration) {
        self.interval[s as usize].add(bytes, lat);
        if self.measuring {
            self.measured[s as usize].add(bytes, lat);
            self.hist[s as usize].record(lat);
        }
    }

    /// An I/O of stream `s` in flight, `age` old, as the measured phase ends: it counts in the
    /// last sample's average latency with that age (the sample is taken now), and is carried
    /// to the measured figures, which take it once its latency is known ([`Self::carried_done`]).
    pub(crate) fn carried_at_end(&mut self, s: Stream, age: Duration) {
        self.interval[s as usize].add_latency(age);
        let inc = &mut self.incomplete[s as usize];
        inc.count += 1;
        inc.oldest_at_end = inc.oldest_at_end.max(age);
        inc.longest = inc.longest.max(age);
    }

    /// A carried I/O of stream `s` ([`Self::carried_at_end`]) is done with: it completed after
    /// `lat` (`completed`), or the test stopped waiting for it when it was `lat` old. Its latency
    /// enters the measured average and distribution (not the rates: it did not complete inside
    /// the window).
    pub(crate) fn carried_done(&mut self, s: Stream, lat: Duration, completed: bool) {
        self.measured[s as usize].add_latency(lat);
        self.hist[s as usize].record(lat);
        let inc = &mut self.incomplete[s as usize];
        inc.longest = inc.longest.max(lat);
        inc.known += 1;
        inc.known_total = inc.known_total.saturating_add(lat);
        if !completed {
            inc.never_completed += 1;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sample_maxima_tolerate_the_given_number_of_samples_over_the_limit() {
        let mut m = SampleMaxima::new(2, 100.0);
        for v in [10.0, 150.0, 20.0, 120.0, 30.0] {
            m.add(v);
        }
        // Two samples over 100 ms, two tolerated: the third highest (30 ms) is judged.
        assert_eq!(m.over, 2);
        assert_eq!(m.strict(), 150.0);
        assert_eq!(m.tolerated_value(), 30.0);
        // A third one over the limit: the judged value is over it.
        m.add(101.0);
        assert_eq!(m.over, 3);
        assert_eq!(m.tolerated_value(), 101.0);
        assert_eq!(m.top, vec![150.0, 120.0, 101.0]);
        // Strict (none tolerated): the maximum.
        let mut s = SampleMaxima::new(0, 100.0);
        s.add(5.0);
        s.add(7.0);
        assert_eq!(s.tolerated_value(), 7.0);
        // Fewer samples than tolerated: nothing is judged over the limit.
        assert_eq!(SampleMaxima::new(6, 1.0).tolerated_value(), 0.0);
    }

    #[test]
    fn shape_line_names_every_cause_of_the_log_writes() {
        let shape = Shape {
            records: [80, 5, 1, 0],
            durable: 100,
            lazy: 230,
            read_only: 45,
            page_changes: 500,
            pages_written: 420,
        };
        let line = shape.line("Instance1.1", 88, 350);
        assert_eq!(
            line,
            "Instance1.1: 88 log writes per 350 database writes (0.251): 80 records for 100 \
             durable commits, 5 at half the log buffer, 1 for page writes, 2 log file headers; \
             230 lazy commits and 45 read-only transactions; 500 page changes written as 420 \
             pages."
        );
        // No database writes: no ratio to speak of, and no panic.
        assert!(Shape::default().line("x", 0, 0).contains("(0.000)"));
    }
}
