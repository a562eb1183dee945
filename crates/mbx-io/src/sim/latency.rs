//! Seeded latency distributions for the simulated queue.

use std::time::Duration;

use crate::IoOp;

/// How long one kind of request takes: a fixed `base` plus an exponentially distributed `tail`
/// of mean `tail`. The mean is `base + tail`, the standard deviation `tail`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Latency {
    /// The least time a request takes.
    pub base: Duration,
    /// Mean (and standard deviation) of the random part added to `base`.
    pub tail: Duration,
}

impl Latency {
    /// No time at all.
    pub const ZERO: Latency = Latency {
        base: Duration::ZERO,
        tail: Duration::ZERO,
    };

    /// Always exactly `d`.
    pub const fn fixed(d: Duration) -> Self {
        Latency {
            base: d,
            tail: Duration::ZERO,
        }
    }

    /// Mean `mean`, standard deviation `sd` ("5 ms +/- 2 ms"): `base = mean - sd`, `tail = sd`.
    /// An `sd` above `mean` is taken as `mean` (the time cannot go below zero).
    pub fn mean_sd(mean: Duration, sd: Duration) -> Self {
        let sd = sd.min(mean);
        Latency {
            base: mean.saturating_sub(sd),
            tail: sd,
        }
    }

    /// The mean, `base + tail`.
    pub fn mean(&self) -> Duration {
        self.base.saturating_add(self.tail)
    }

    pub(crate) fn sample(&self, rng: &mut SimRng) -> Duration {
        self.base.saturating_add(rng.exponential(self.tail))
    }
}

/// The simulated device's timing: a [`Latency`] per kind of request, optionally a number of
/// channels (requests served at once; more wait their turn, so queue depth and load matter) and
/// a transfer rate (bytes per second per channel, added to each read and write).
///
/// ```
/// use std::time::Duration;
/// use mbx_io::sim::{Latency, LatencyModel};
/// let ms = Duration::from_millis;
/// // Reads 5 ms +/- 2 ms, log writes 1 ms, everything else 2 ms; 4 requests at a time.
/// let model = LatencyModel::uniform(Latency::fixed(ms(2)))
///     .reads(Latency::mean_sd(ms(5), ms(2)))
///     .log_writes(Latency::fixed(ms(1)))
///     .channels(4);
/// assert_eq!(model.read.mean(), ms(5));
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LatencyModel {
    /// Reads.
    pub read: Latency,
    /// Writes to files opened without `write_through`.
    pub write: Latency,
    /// Writes to files opened with `write_through` (the engine's log files).
    pub log_write: Latency,
    /// Syncs.
    pub sync: Latency,
    /// Allocations.
    pub allocate: Latency,
    /// Requests served at once; 0 = no limit (every request starts when submitted).
    pub channels: usize,
    /// Transfer rate of one channel in bytes per second, added to reads and writes; 0 = none.
    pub bytes_per_sec: u64,
}

impl LatencyModel {
    /// Every kind of request takes `l`; no channel limit, no transfer time.
    pub fn uniform(l: Latency) -> Self {
        LatencyModel {
            read: l,
            write: l,
            log_write: l,
            sync: l,
            allocate: l,
            channels: 0,
            bytes_per_sec: 0,
        }
    }

    /// A plausible array of disks: reads 5 ms +/- 2 ms, writes 2 ms +/- 1 ms, log writes
    /// 1 ms +/- 0.2 ms, syncs 1 ms +/- 0.5 ms, allocations 0.1 ms; no channel limit.
    pub fn typical() -> Self {
        let ms = Duration::from_millis;
        let us = Duration::from_micros;
        LatencyModel {
            read: Latency::mean_sd(ms(5), ms(2)),
            write: Latency::mean_sd(ms(2), ms(1)),
            log_write: Latency::mean_sd(ms(1), us(200)),
            sync: Latency::mean_sd(ms(1), us(500)),
            allocate: Latency::fixed(us(100)),
            channels: 0,
            bytes_per_sec: 0,
        }
    }

    /// With reads taking `l`.
    pub fn reads(mut self, l: Latency) -> Self {
        self.read = l;
        self
    }

    /// With writes to files opened without `write_through` taking `l`.
    pub fn writes(mut self, l: Latency) -> Self {
        self.write = l;
        self
    }

    /// With writes to files opened with `write_through` (log files) taking `l`.
    pub fn log_writes(mut self, l: Latency) -> Self {
        self.log_write = l;
        self
    }

    /// With syncs taking `l`.
    pub fn syncs(mut self, l: Latency) -> Self {
        self.sync = l;
        self
    }

    /// With allocations taking `l`.
    pub fn allocations(mut self, l: Latency) -> Self {
        self.allocate = l;
        self
    }

    /// With at most `n` requests served at once (0 = no limit).
    pub fn channels(mut self, n: usize) -> Self {
        self.channels = n;
        self
    }

    /// With reads and writes also taking `len / bytes_per_sec` (0 = no transfer time).
    pub fn bandwidth(mut self, bytes_per_sec: u64) -> Self {
        self.bytes_per_sec = bytes_per_sec;
        self
    }

    /// The latency of `op` on a file opened with (`write_through`) or without it.
    pub(crate) fn of(&self, op: IoOp, write_through: bool) -> Latency {
        match op {
            IoOp::Read => self.read,
            IoOp::Write if write_through => self.log_write,
            IoOp::Write => self.write,
            IoOp::Sync => self.sync,
            IoOp::Allocate => self.allocate,
        }
    }

    /// Time to move `bytes` over one channel.
    pub(crate) fn transfer(&self, bytes: usize) -> Duration {
        if self.bytes_per_sec == 0 {
            return Duration::ZERO;
        }
        let nanos = (bytes as u128).saturating_mul(1_000_000_000) / u128::from(self.bytes_per_sec);
        Duration::from_nanos(u64::try_from(nanos).unwrap_or(u64::MAX))
    }
}

/// A small seeded generator (mbx-core's SplitMix64): the same seed gives the same latencies
/// everywhere.
#[derive(Debug, Clone)]
pub(crate) struct SimRng(mbx_core::SplitMix64);

impl SimRng {
    pub(crate) fn new(seed: u64) -> Self {
        SimRng(mbx_core::SplitMix64::new(seed))
    }

    /// Uniform in [0, 1).
    fn unit(&mut self) -> f64 {
        self.0.unit()
    }

    /// Exponentially distributed with mean `mean` (at most about 37 times the mean).
    pub(crate) fn exponential(&mut self, mean: Duration) -> Duration {
        if mean.is_zero() {
            return Duration::ZERO;
        }
        let x = -(1.0 - self.unit()).ln() * mean.as_secs_f64();
        Duration::try_from_secs_f64(x).unwrap_or(Duration::ZERO)
    }
}
