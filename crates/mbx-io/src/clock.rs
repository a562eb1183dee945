//! Time as an input. Every part of a test that needs the time asks a [`Clock`]; the real clock
//! reads the system's, a simulated one (see `sim`) advances only when the simulated device says
//! so, which lets an engine test run two simulated hours in well under a second.

use std::time::{Duration, Instant, SystemTime};

/// A source of time.
pub trait Clock: Send + Sync {
    /// The current monotonic time.
    fn now(&self) -> Instant;
    /// The current wall-clock time (for timestamps in results and logs).
    fn wall(&self) -> SystemTime;
    /// Waits `d` (a simulated clock advances by `d` and returns at once).
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
}
