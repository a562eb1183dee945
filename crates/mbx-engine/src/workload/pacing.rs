//! Pacing: turns the target IOPS into transaction start slots (placeholder controller; the
//! tested controller replaces it).

use std::time::{Duration, Instant};

/// The rate controller.
#[derive(Debug)]
pub(crate) struct Pacer {
    target: f64,
    rate: f64,
    io_per_txn: f64,
    next_slot: Option<Instant>,
    window_start: Instant,
    window_ios: u64,
    measure: Option<(Instant, u64)>,
    total_ios: u64,
}

impl Pacer {
    pub fn new(target_iops: f64, now: Instant) -> Pacer {
        Pacer {
            target: target_iops,
            rate: f64::INFINITY,
            io_per_txn: 4.3,
            next_slot: None,
            window_start: now,
            window_ios: 0,
            measure: None,
            total_ios: 0,
        }
    }

    /// Starts pacing with an estimate of I/Os per transaction.
    pub fn start(&mut self, now: Instant, io_per_txn: f64) {
        self.io_per_txn = io_per_txn.max(0.5);
        self.rate = self.target / self.io_per_txn;
        self.next_slot = Some(now);
        self.window_start = now;
        self.window_ios = 0;
    }

    /// The transactions per second being paced.
    pub fn rate(&self) -> f64 {
        self.rate
    }

    /// The measured phase begins: the integral term counts from here.
    pub fn begin_measure(&mut self, now: Instant) {
        self.measure = Some((now, self.total_ios));
    }

    /// Transactional I/Os completed.
    pub fn on_ios(&mut self, n: u64) {
        self.window_ios += n;
        self.total_ios += n;
    }

    /// Once per second: adjusts the rate from its own window.
    pub fn tick(&mut self, now: Instant) {
        let Some(_) = self.next_slot else { return };
        let secs = now.duration_since(self.window_start).as_secs_f64();
        if secs < 0.5 {
            return;
        }
        let iops = self.window_ios as f64 / secs;
        let ratio = if iops > 0.0 { self.target / iops } else { 1.5 };
        let base = (self.rate * ratio.powf(0.5).clamp(0.8, 1.25)).max(0.1);
        let mut extra = 0.0;
        if let Some((t0, ios0)) = self.measure {
            let elapsed = now.duration_since(t0).as_secs_f64();
            let deficit = self.target * elapsed - (self.total_ios - ios0) as f64;
            extra = (deficit / self.io_per_txn / 5.0).clamp(-0.2 * base, 0.2 * base);
        }
        self.rate = (base + extra).max(0.1);
        self.window_start = now;
        self.window_ios = 0;
    }

    /// Takes a start slot if one is due (unpaced: always).
    pub fn take_slot(&mut self, now: Instant) -> bool {
        let Some(next) = self.next_slot else {
            return true;
        };
        if next > now {
            return false;
        }
        let interval = Duration::from_secs_f64(1.0 / self.rate.max(1e-3));
        // Behind by more than one interval: no backlog burst, continue from now.
        self.next_slot = Some(if next + interval < now {
            now
        } else {
            next + interval
        });
        true
    }

    /// When the next slot is due (None when unpaced).
    pub fn next_slot(&self) -> Option<Instant> {
        self.next_slot
    }
}
