//! Settle: paced at the target for one dirty-page age, then until every page dirtied before
//! that point is written, so flushing is in its steady state before anything is measured. Pages
//! dirtied by the unpaced attain phase, and while the pacer finds its rate, are otherwise written
//! during the first measured samples and inflate their database writes.

use std::time::{Duration, Instant};

use super::{interrupted_before_measuring, Flow, Mode, PhaseRun};
use crate::exec::PhaseCx;
use crate::{EngineError, Phase};

/// The settle phase never takes longer than this many times its length (storage too slow to
/// write the backlog must not hold the test).
const MAX_LENGTHS: u32 = 4;

/// The settle phase.
#[derive(Debug)]
pub(crate) struct Settle {
    pub length: Duration,
    start: Option<Instant>,
    end: Option<Instant>,
    /// The length has passed: the phase waits for the backlog (or the cap).
    past_end: bool,
}

impl Settle {
    pub fn new(length: Duration) -> Settle {
        Settle {
            length,
            start: None,
            end: None,
            past_end: false,
        }
    }
}

/// True when the settle phase that began at `start` may end at `now`: its length has passed
/// (`end`) and no page dirtied before `end` is still dirty (`oldest_dirty`: when the oldest dirty
/// page of each database became dirty), or it has run `MAX_LENGTHS` times its length.
pub(crate) fn settled(
    start: Instant,
    end: Instant,
    now: Instant,
    mut oldest_dirty: impl Iterator<Item = Option<Instant>>,
) -> bool {
    let cap = start + (end - start) * MAX_LENGTHS;
    now >= cap || (now >= end && oldest_dirty.all(|t| t.is_none_or(|t| t >= end)))
}

impl PhaseRun for Settle {
    fn kind(&self) -> Phase {
        Phase::Settle
    }

    fn planned(&self) -> Option<Duration> {
        Some(self.length)
    }

    fn enter(&mut self, e: &mut PhaseCx<'_, '_>, now: Instant) -> Result<(), EngineError> {
        *e.mode = Mode::Paced;
        self.start = Some(now);
        self.end = Some(now + self.length);
        Ok(())
    }

    fn tick(&mut self, e: &mut PhaseCx<'_, '_>, now: Instant) -> Result<Flow, EngineError> {
        let (Some(start), Some(end)) = (self.start, self.end) else {
            return Ok(Flow::Done);
        };
        self.past_end = now >= end;
        let oldest = e.dbs.iter().map(|d| d.cache.oldest_dirty_at());
        Ok(if settled(start, end, now, oldest) {
            Flow::Done
        } else {
            Flow::Continue
        })
    }

    fn interrupt(&mut self, e: &mut PhaseCx<'_, '_>, _now: Instant) -> Result<Flow, EngineError> {
        interrupted_before_measuring(e)
    }

    fn wake_at(&self) -> Option<Instant> {
        // Past its length the phase ends on a page write (a completion wakes the loop) or at the
        // cap: never a timer in the past, which would spin the loop.
        match (self.start, self.end) {
            (Some(start), Some(end)) if self.past_end => Some(start + (end - start) * MAX_LENGTHS),
            _ => self.end,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn settles_once_pages_dirtied_before_its_length_are_written() {
        let start = Instant::now();
        let s = |secs: u64| start + Duration::from_secs(secs);
        let end = s(15);
        // Before its length: never, even with nothing dirty.
        assert!(!settled(start, end, s(14), [None].into_iter()));
        // After it, with a page dirty since before the phase (the attain backlog) or from its
        // first seconds: not yet.
        let before = Some(start - Duration::from_secs(1));
        assert!(!settled(
            start,
            end,
            s(16),
            [Some(s(16)), before].into_iter()
        ));
        assert!(!settled(start, end, s(20), [Some(s(3)), None].into_iter()));
        // Once only pages dirtied after its length are dirty: done.
        assert!(settled(start, end, s(20), [Some(s(16)), None].into_iter()));
        // A backlog that is never written holds the phase for 4 lengths at most.
        assert!(!settled(start, end, s(59), [before].into_iter()));
        assert!(settled(start, end, s(60), [before].into_iter()));
    }
}
