//! The loadgen day's time: every "now", sleep, deadline and timeout of this crate goes through
//! this module, nothing else reads a clock. Its clock is tokio's time: the system's monotonic
//! clock in production, and in a test tokio's paused clock (a current-thread runtime started
//! paused: time stands still while a task can run and jumps to the next timer when none can), so
//! a day of 1,000 users and 8 hours runs in seconds, the same every time for a seed.
//!
//! The wall time (the day's start in the result, a synchronized start's gate) comes from a
//! [`DayClock`]: a wall time read once, then moved on by the monotonic clock, so on a paused
//! clock it is simulated too.

use std::future::Future;
use std::time::{Duration, SystemTime};

/// A wait that ran out ([`timeout`], [`timeout_at`]).
pub use tokio::time::error::Elapsed;
/// An instant on the day's clock (tokio's: paused in a simulated day).
pub use tokio::time::Instant;

/// Now, on the day's clock.
pub fn now() -> Instant {
    Instant::now()
}

/// Waits `d` on the day's clock.
pub async fn sleep(d: Duration) {
    tokio::time::sleep(d).await;
}

/// Waits until `t` on the day's clock.
pub async fn sleep_until(t: Instant) {
    tokio::time::sleep_until(t).await;
}

/// `f`, unless `d` passes on the day's clock first.
pub fn timeout<F: Future>(d: Duration, f: F) -> tokio::time::Timeout<F> {
    tokio::time::timeout(d, f)
}

/// `f`, unless the day's clock reaches `t` first.
pub fn timeout_at<F: Future>(t: Instant, f: F) -> tokio::time::Timeout<F> {
    tokio::time::timeout_at(t, f)
}

/// A tick every `every` from `start`; a late tick delays the next ones (never a burst).
pub fn ticks(start: Instant, every: Duration) -> tokio::time::Interval {
    let mut tick = tokio::time::interval_at(start, every);
    tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    tick
}

/// The day's clock with its wall time: the monotonic clock above, and a wall time read when it
/// was made (real) or given (simulated), moved on by the monotonic clock since.
#[derive(Debug, Clone, Copy)]
pub struct DayClock {
    origin: Instant,
    wall_origin: SystemTime,
}

impl DayClock {
    /// The system's clock: the wall time now.
    pub fn real() -> DayClock {
        DayClock {
            origin: now(),
            wall_origin: SystemTime::now(),
        }
    }

    /// A simulated day's clock (on a paused runtime): its wall time is `wall_start` now.
    pub fn simulated(wall_start: SystemTime) -> DayClock {
        DayClock {
            origin: now(),
            wall_origin: wall_start,
        }
    }

    /// The monotonic time now.
    pub fn now(&self) -> Instant {
        now()
    }

    /// The wall time now.
    pub fn wall(&self) -> SystemTime {
        let since = now().saturating_duration_since(self.origin);
        self.wall_origin
            .checked_add(since)
            .unwrap_or(self.wall_origin)
    }

    /// How long the wall clock has to go to `at` (zero once it is there).
    pub fn wall_until(&self, at: SystemTime) -> Duration {
        at.duration_since(self.wall()).unwrap_or(Duration::ZERO)
    }

    /// The wall time now in Unix seconds (0 before 1970).
    pub fn unix_s(&self) -> f64 {
        self.wall()
            .duration_since(SystemTime::UNIX_EPOCH)
            .map_or(0.0, |d| d.as_secs_f64())
    }
}

impl Default for DayClock {
    fn default() -> Self {
        DayClock::real()
    }
}

/// The day's clock as mbx-core's [`mbx_core::Clock`] (the scheduler's and the engine's trait).
/// Its blocking [`mbx_core::Clock::sleep`] is the thread's: async code awaits [`sleep`].
impl mbx_core::Clock for DayClock {
    fn now(&self) -> std::time::Instant {
        now().into_std()
    }

    fn wall(&self) -> SystemTime {
        DayClock::wall(self)
    }

    fn sleep(&self, d: Duration) {
        std::thread::sleep(d);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_paused_days_wall_time_is_simulated() {
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_time()
            .start_paused(true)
            .build()
            .expect("runtime");
        rt.block_on(async {
            let start = SystemTime::UNIX_EPOCH + Duration::from_secs(1_800_000_000);
            let c = DayClock::simulated(start);
            let t0 = c.now();
            sleep(Duration::from_secs(8 * 3600)).await;
            assert_eq!(c.now() - t0, Duration::from_secs(8 * 3600));
            assert_eq!(c.unix_s(), 1_800_000_000.0 + 8.0 * 3600.0);
            assert_eq!(
                c.wall_until(start + Duration::from_secs(9 * 3600)),
                Duration::from_secs(3600)
            );
            let r = timeout(Duration::from_secs(5), sleep(Duration::from_secs(60))).await;
            assert!(r.is_err());
            assert_eq!(c.now() - t0, Duration::from_secs(8 * 3600 + 5));
        });
    }
}
