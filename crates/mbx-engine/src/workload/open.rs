//! Open-loop arrivals and the per-transaction figures of both pacing modes.
//!
//! Open loop (`--pacing open`): transactions arrive on the [`Pacer`]'s schedule (its
//! feed-forward turns the target I/O into a transaction rate), whether or not a session is free:
//! Poisson (exponential gaps) or evenly spaced. An arrival waits in a FIFO backlog until a
//! session is idle; one that waited longer than `max_backlog_s` is dropped (counted, and the
//! pacer told). Closed loop: a transaction is due when its start slot was.
//!
//! Either way every transaction has two latencies, each in its own HDR histogram (one set per
//! reactor, merged for the result): from its submission (the service time) and from when it was
//! due (what a user waits, with no coordinated omission: a transaction that waited for a session
//! carries that wait).

use std::collections::VecDeque;
use std::time::{Duration, Instant};

use mbx_config::Arrivals;
use mbx_io::LatencyHistogram;

use crate::model::Rng;
use crate::result::SamplePacing;
use crate::sampling::Running;
use crate::workload::pacing::Pacer;

/// A transaction that starts more than this after it was due is late.
pub const LATE_AFTER: Duration = Duration::from_millis(1);

/// Most arrivals the backlog holds, whatever `max_backlog_s` allows (16 MiB of instants): beyond
/// it the oldest are dropped (counted), so memory stays bounded at any target.
pub const MAX_BACKLOG_TXNS: usize = 1 << 20;

/// The open-loop backlog: arrivals waiting for a session, oldest first.
#[derive(Debug)]
pub(crate) struct OpenLoop {
    arrivals: Arrivals,
    rng: Rng,
    queue: VecDeque<Instant>,
    max_wait: Duration,
    /// Most arrivals held ([`MAX_BACKLOG_TXNS`]).
    max_len: usize,
}

impl OpenLoop {
    /// A backlog for arrivals spaced as `arrivals`, dropping those older than `max_wait`.
    pub fn new(arrivals: Arrivals, seed: u64, max_wait: Duration) -> OpenLoop {
        OpenLoop {
            arrivals,
            // Its own stream: the workload's choices stay the same sequence in both modes.
            rng: Rng::new(seed ^ 0x6f70_656e_6c6f_6f70),
            queue: VecDeque::new(),
            max_wait,
            max_len: MAX_BACKLOG_TXNS,
        }
    }

    /// A gap of mean 1 between arrivals.
    fn gap(rng: &mut Rng, arrivals: Arrivals) -> f64 {
        match arrivals {
            Arrivals::Uniform => 1.0,
            Arrivals::Poisson => {
                // 53 random bits in (0, 1]: ln never sees 0.
                let u = ((rng.next_u64() >> 11) as f64 + 1.0) / (1u64 << 53) as f64;
                -u.ln()
            }
        }
    }

    /// Brings the backlog up to `now`: every arrival due joins it, those that waited longer than
    /// the bound are dropped (counted in `stats` and told to the pacer), and the pacer learns the
    /// backlog's length.
    pub fn arrive(&mut self, pacer: &mut Pacer, now: Instant, stats: &mut TxnStats) {
        let (rng, kind) = (&mut self.rng, self.arrivals);
        while let Some(at) = pacer.take_arrival(now, || Self::gap(rng, kind)) {
            // Arrivals join in the order they are due, none in the future: the backlog is served
            // oldest first and never early.
            assert!(
                at <= now && self.queue.back().is_none_or(|&last| last <= at),
                "open loop: an arrival out of order or in the future"
            );
            self.queue.push_back(at);
            stats.arrived(1);
        }
        let mut dropped = 0u64;
        while let Some(&oldest) = self.queue.front() {
            let too_old = now.saturating_duration_since(oldest) > self.max_wait;
            if !too_old && self.queue.len() <= self.max_len {
                break;
            }
            self.queue.pop_front();
            dropped += 1;
        }
        pacer.drop_arrivals(dropped);
        pacer.set_backlog(self.queue.len());
        stats.backlog(self.queue.len());
    }

    /// The oldest arrival waiting, taken out of the backlog (a session starts it).
    pub fn pop(&mut self, pacer: &mut Pacer) -> Option<Instant> {
        let at = self.queue.pop_front()?;
        pacer.set_backlog(self.queue.len());
        Some(at)
    }

    /// Arrivals waiting.
    pub fn len(&self) -> usize {
        self.queue.len()
    }
}

/// Per-transaction figures of the measured phase (one set per reactor; [`TxnStats::merge`]).
#[derive(Debug)]
pub struct TxnStats {
    /// The measured phase is running.
    pub measuring: bool,
    /// From submission to end.
    pub service: LatencyHistogram,
    /// From when it was due to end.
    pub from_arrival: LatencyHistogram,
    /// Transactions due (open loop: arrived) while measuring.
    pub arrived: u64,
    /// Transactions started while measuring.
    pub started: u64,
    /// Of them, started more than [`LATE_AFTER`] after they were due.
    pub late: u64,
    /// Most arrivals waiting at once while measuring.
    pub backlog_max: u64,
    /// The pacer's dropped count when measuring began.
    pub dropped_before: u64,
    /// Transactions dropped while measuring (set when it ends).
    pub dropped: u64,
    /// The current sample interval's figures.
    pub interval: SamplePacing,
    /// The per-sample maxima of the backlog.
    pub(crate) backlog_per_sample: Running,
    /// The pacer's dropped count at the start of the current interval.
    dropped_at_interval: u64,
}

impl Default for TxnStats {
    fn default() -> Self {
        TxnStats {
            measuring: false,
            service: LatencyHistogram::new(),
            from_arrival: LatencyHistogram::new(),
            arrived: 0,
            started: 0,
            late: 0,
            backlog_max: 0,
            dropped_before: 0,
            dropped: 0,
            interval: SamplePacing::default(),
            backlog_per_sample: Running::default(),
            dropped_at_interval: 0,
        }
    }
}

impl TxnStats {
    /// The measured phase begins; `dropped` is the pacer's dropped count now.
    pub fn begin_measure(&mut self, dropped: u64) {
        *self = TxnStats {
            measuring: true,
            dropped_before: dropped,
            dropped_at_interval: dropped,
            ..TxnStats::default()
        };
    }

    /// The measured phase ends; `dropped` is the pacer's dropped count now.
    pub fn end_measure(&mut self, dropped: u64) {
        if self.measuring {
            self.measuring = false;
            self.dropped = dropped.saturating_sub(self.dropped_before);
        }
    }

    fn arrived(&mut self, n: u64) {
        self.interval.arrived += n;
        if self.measuring {
            self.arrived += n;
        }
    }

    fn backlog(&mut self, n: usize) {
        let n = n as u64;
        self.interval.backlog_max = self.interval.backlog_max.max(n);
        if self.measuring {
            self.backlog_max = self.backlog_max.max(n);
        }
    }

    /// A transaction due at `due` starts at `now`.
    pub fn started(&mut self, due: Instant, now: Instant, closed: bool) {
        let late = now.saturating_duration_since(due) > LATE_AFTER;
        self.interval.started += 1;
        self.interval.late += u64::from(late);
        if closed {
            self.interval.arrived += 1;
        }
        if self.measuring {
            self.started += 1;
            self.late += u64::from(late);
            if closed {
                self.arrived += 1;
            }
        }
    }

    /// A transaction submitted at `started`, due at `due`, ends at `now`.
    pub fn finished(&mut self, due: Instant, started: Instant, now: Instant) {
        if self.measuring {
            self.service.record(now.saturating_duration_since(started));
            self.from_arrival.record(now.saturating_duration_since(due));
        }
    }

    /// The figures of the interval now ending (`dropped`: the pacer's dropped count now); the
    /// next interval starts from zero.
    pub fn take_interval(&mut self, dropped: u64, backlog_now: usize) -> SamplePacing {
        let mut s = std::mem::take(&mut self.interval);
        s.dropped = dropped.saturating_sub(self.dropped_at_interval);
        self.dropped_at_interval = dropped;
        self.backlog_per_sample.add(s.backlog_max as f64);
        // The next interval starts with what is waiting now.
        self.interval.backlog_max = backlog_now as u64;
        s
    }

    /// Adds another reactor's figures (the histograms merged, counts summed, maxima kept).
    pub fn merge(&mut self, o: &TxnStats) {
        self.service.merge(&o.service);
        self.from_arrival.merge(&o.from_arrival);
        self.arrived += o.arrived;
        self.started += o.started;
        self.late += o.late;
        self.dropped += o.dropped;
        self.backlog_max = self.backlog_max.max(o.backlog_max);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::workload::pacing::PacerConfig;

    fn paced(target: f64, t0: Instant) -> Pacer {
        let mut p = Pacer::new(PacerConfig::default(), target, t0).expect("pacer");
        // 4 reads per transaction, no writes: 1,000 IOPS is 250 transactions/s.
        for _ in 0..1000 {
            p.on_read(t0, 4);
            p.on_txn(t0, 4);
        }
        p.start_pacing(t0);
        p
    }

    #[test]
    fn uniform_arrivals_are_evenly_spaced_whether_or_not_anyone_takes_them() {
        let t0 = Instant::now();
        let mut p = paced(1000.0, t0);
        let mut open = OpenLoop::new(Arrivals::Uniform, 1, Duration::from_secs(10));
        let mut stats = TxnStats::default();
        // 100 ms later, nobody has started anything: 25 arrivals at 4 ms, all waiting.
        let now = t0 + Duration::from_millis(98);
        open.arrive(&mut p, now, &mut stats);
        assert_eq!(open.len(), 25);
        let mut times = Vec::new();
        while let Some(at) = open.pop(&mut p) {
            times.push(at.duration_since(t0).as_secs_f64());
        }
        let gaps: Vec<f64> = times.windows(2).map(|w| w[1] - w[0]).collect();
        let (lo, hi) = gaps
            .iter()
            .fold((f64::MAX, f64::MIN), |(lo, hi), &g| (lo.min(g), hi.max(g)));
        // Evenly spaced (to the nanosecond an Instant holds), 4 ms apart (the integral term,
        // seeing no I/O for 98 ms, may move the rate by a fraction of a percent).
        assert!(hi - lo < 2e-9, "gaps from {lo} to {hi}");
        assert!((lo / 0.004 - 1.0).abs() < 0.01, "gap {lo}");
        assert_eq!(stats.interval.arrived, 25);
        assert_eq!(stats.interval.backlog_max, 25);
    }

    #[test]
    fn poisson_arrivals_have_the_rate_and_the_spread_of_a_poisson_process() {
        let t0 = Instant::now();
        let mut p = paced(1000.0, t0);
        let mut open = OpenLoop::new(Arrivals::Poisson, 7, Duration::from_secs(100));
        let mut stats = TxnStats::default();
        let mut gaps = Vec::new();
        let mut last: Option<Instant> = None;
        // 40 s, taken every 10 ms (the integral term sees no I/O; keep it out by telling the
        // pacer the reads each started transaction makes).
        for k in 1..=4000u64 {
            let now = t0 + Duration::from_millis(10 * k);
            open.arrive(&mut p, now, &mut stats);
            while let Some(at) = open.pop(&mut p) {
                if let Some(l) = last {
                    gaps.push(at.duration_since(l).as_secs_f64());
                }
                last = Some(at);
                p.on_read(now, 4);
                p.on_txn(now, 4);
            }
        }
        let n = gaps.len() as f64;
        let mean = gaps.iter().sum::<f64>() / n;
        let sd = (gaps.iter().map(|g| (g - mean).powi(2)).sum::<f64>() / n).sqrt();
        // 250 transactions/s: gaps of 4 ms mean, and (exponential) a deviation equal to it.
        assert!((mean / 0.004 - 1.0).abs() < 0.02, "mean gap {mean}");
        assert!((sd / mean - 1.0).abs() < 0.05, "cv {}", sd / mean);
    }

    #[test]
    fn arrivals_waiting_too_long_are_dropped_and_counted() {
        let t0 = Instant::now();
        let mut p = paced(1000.0, t0);
        let mut open = OpenLoop::new(Arrivals::Uniform, 1, Duration::from_millis(50));
        let mut stats = TxnStats::default();
        stats.begin_measure(p.dropped_slots());
        open.arrive(&mut p, t0 + Duration::from_millis(10), &mut stats);
        assert_eq!(open.len(), 3);
        // 100 ms on, nobody took any: only the last 50 ms wait, the rest are dropped.
        open.arrive(&mut p, t0 + Duration::from_millis(110), &mut stats);
        assert!((12..=14).contains(&open.len()), "{}", open.len());
        let dropped = p.dropped_slots();
        assert_eq!(dropped as usize + open.len(), 28);
        let s = stats.take_interval(dropped, open.len());
        assert_eq!(s.dropped, dropped);
        assert_eq!(s.arrived, 28);
        // However long arrivals may wait, the backlog holds at most its bound: the oldest go.
        let mut p = paced(1000.0, t0);
        let mut open = OpenLoop::new(Arrivals::Uniform, 1, Duration::from_secs(3600));
        open.max_len = 10;
        open.arrive(&mut p, t0 + Duration::from_millis(98), &mut stats);
        assert_eq!(open.len(), 10);
        assert_eq!(p.dropped_slots(), 15);
    }
}
