//! Virtual time.

use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant, SystemTime};

use crate::Clock;

/// A simulated clock: time stands still until something advances it (the simulated queue when a
/// caller waits for completions, or [`Clock::sleep`], which returns at once).
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
        let _ = self
            .elapsed
            .fetch_update(Ordering::SeqCst, Ordering::SeqCst, |e| {
                Some(e.saturating_add(d))
            });
    }

    /// Moves time forward to `t`; does nothing if `t` is not later than now.
    pub fn advance_to(&self, t: Instant) {
        self.advance_to_elapsed(t.saturating_duration_since(self.base));
    }

    /// Moves time forward until `elapsed` has passed since the start; never moves it back.
    pub fn advance_to_elapsed(&self, elapsed: Duration) {
        self.elapsed.fetch_max(nanos(elapsed), Ordering::SeqCst);
    }

    /// The instant at virtual time `elapsed`.
    pub fn instant_at(&self, elapsed: Duration) -> Instant {
        self.base.checked_add(elapsed).unwrap_or(self.base)
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
