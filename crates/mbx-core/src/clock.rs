//! Time as an input. Every part of a test that needs the time asks a [`Clock`]; the real clock
//! reads the system's, a simulated one ([`SimClock`]) advances only when told (the simulated
//! device, a scheduler's test), which lets an engine test run two simulated hours in well under
//! a second. The loadgen day's clock (tokio's time, real or paused) implements the same trait.

use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant, SystemTime};

/// A source of time.
pub trait Clock: Send + Sync {
    /// The current monotonic time.
    fn now(&self) -> Instant;
    /// The current wall-clock time (for timestamps in results and logs).
    fn wall(&self) -> SystemTime;
    /// Waits `d`, blocking the thread (a simulated clock advances by `d` and returns at once).
    fn sleep(&self, d: Duration);
}

/// The system's clock.
#[derive(Debug, Clone, Copy, Default)]
pub struct RealClock;

impl Clock for RealClock {
    fn now(&self) -> Instant {
        Instant::now()
    }

    fn wall(&self) -> SystemTime {
        SystemTime::now()
    }

    fn sleep(&self, d: Duration) {
        std::thread::sleep(d);
    }
}

/// A simulated clock: time stands still until something advances it (the simulated queue when a
/// caller waits for completions, a test, or [`Clock::sleep`], which returns at once).
///
/// Its [`Instant`]s are a base taken when the clock is made plus the virtual time elapsed, so
/// durations between them are exact and repeatable (the base itself is not; compare instants of
/// one clock only). Its wall time starts at a fixed date ([`SimClock::DEFAULT_WALL_START`] unless
/// told otherwise) and advances with it, so timestamps in results repeat too.
#[derive(Debug)]
pub struct SimClock {
    base: Instant,
    wall_start: SystemTime,
    /// Virtual nanoseconds since `base`.
    elapsed: AtomicU64,
}

impl SimClock {
    /// The default wall time at virtual time zero: 2024-01-01 00:00:00 UTC, in seconds since the
    /// Unix epoch.
    pub const DEFAULT_WALL_START: u64 = 1_704_067_200;

    /// A clock at virtual time zero whose wall time starts at [`SimClock::DEFAULT_WALL_START`].
    pub fn new() -> Self {
        Self::starting_at(SystemTime::UNIX_EPOCH + Duration::from_secs(Self::DEFAULT_WALL_START))
    }

    /// A clock at virtual time zero whose wall time starts at `wall_start`.
    pub fn starting_at(wall_start: SystemTime) -> Self {
        SimClock {
            base: Instant::now(),
            wall_start,
            elapsed: AtomicU64::new(0),
        }
    }

    /// Virtual time since the clock was made.
    pub fn elapsed(&self) -> Duration {
        Duration::from_nanos(self.elapsed.load(Ordering::SeqCst))
    }

    /// Moves time forward by `d` (saturating after about 584 years).
    pub fn advance(&self, d: Duration) {
        let d = nanos(d);
        let before = self
            .elapsed
            .fetch_update(Ordering::SeqCst, Ordering::SeqCst, |e| {
                Some(e.saturating_add(d))
            })
            .unwrap_or_else(|e| e);
        assert!(
            self.elapsed.load(Ordering::SeqCst) >= before,
            "a simulated clock never goes back"
        );
    }

    /// Moves time forward to `t`; does nothing if `t` is not later than now.
    pub fn advance_to(&self, t: Instant) {
        self.advance_to_elapsed(t.saturating_duration_since(self.base));
    }

    /// Moves time forward until `elapsed` has passed since the start; never moves it back.
    pub fn advance_to_elapsed(&self, elapsed: Duration) {
        self.elapsed.fetch_max(nanos(elapsed), Ordering::SeqCst);
    }

    /// Moves time to `elapsed` since the start (never backwards): the scheduler's tests' name.
    pub fn set(&self, elapsed: Duration) {
        self.advance_to_elapsed(elapsed);
    }

    /// The instant at virtual time `elapsed`.
    pub fn instant_at(&self, elapsed: Duration) -> Instant {
        self.base.checked_add(elapsed).unwrap_or(self.base)
    }

    /// The instant at virtual time zero.
    pub fn start(&self) -> Instant {
        self.base
    }
}

impl Default for SimClock {
    fn default() -> Self {
        Self::new()
    }
}

impl Clock for SimClock {
    fn now(&self) -> Instant {
        self.instant_at(self.elapsed())
    }

    fn wall(&self) -> SystemTime {
        self.wall_start
            .checked_add(self.elapsed())
            .unwrap_or(self.wall_start)
    }

    fn sleep(&self, d: Duration) {
        self.advance(d);
    }
}

fn nanos(d: Duration) -> u64 {
    u64::try_from(d.as_nanos()).unwrap_or(u64::MAX)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn real_clock_moves_forward() {
        let c = RealClock;
        let a = c.now();
        c.sleep(Duration::from_millis(2));
        assert!(c.now() >= a + Duration::from_millis(2));
    }

    #[test]
    fn a_simulated_clock_moves_only_when_told_and_never_back() {
        let c = SimClock::new();
        let t0 = c.now();
        assert_eq!(c.now(), t0);
        c.sleep(Duration::from_secs(3600));
        assert_eq!(c.now() - t0, Duration::from_secs(3600));
        c.set(Duration::from_secs(10));
        assert_eq!(c.elapsed(), Duration::from_secs(3600));
        let wall = c.wall().duration_since(SystemTime::UNIX_EPOCH).ok();
        assert_eq!(
            wall,
            Some(Duration::from_secs(SimClock::DEFAULT_WALL_START + 3600))
        );
    }
}
