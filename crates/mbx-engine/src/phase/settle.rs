//! Settle: paced at the target for one dirty-page age, so flushing reaches steady state before
//! anything is measured. The attain phase ran unthrottled: the pages it dirtied reach the
//! dirty-page age together, just as one age of settling ends. That flood of writes (seconds of the
//! target's I/O at low rates) must land here, not in the first measured seconds, so the phase
//! also lasts until every page dirtied before it began has been taken for writing, and a second
//! more (at most a minute beyond the age, for a device that cannot write them).

use std::time::{Duration, Instant};

use super::{interrupted_before_measuring, Flow, Mode, PhaseRun};
use crate::exec::Engine;
use crate::{EngineError, Phase};

/// How long after the attain phase's pages were taken for writing the phase still lasts (their
/// writes complete and the pacer's view of them passes) ...
const SETTLE_AFTER_FLOOD: Duration = Duration::from_secs(1);
/// ... but at most this much longer than a dirty-page age.
const SETTLE_FLOOD_LIMIT: Duration = Duration::from_secs(60);

/// The settle phase.
#[derive(Debug)]
pub(crate) struct Settle {
    pub length: Duration,
    start: Option<Instant>,
    flood_written: Option<Instant>,
}

impl Settle {
    pub fn new(length: Duration) -> Settle {
        Settle {
            length,
            start: None,
            flood_written: None,
        }
    }
}

impl PhaseRun for Settle {
    fn kind(&self) -> Phase {
        Phase::Settle
    }

    fn planned(&self) -> Option<Duration> {
        Some(self.length)
    }

    fn enter(&mut self, e: &mut Engine<'_>, now: Instant) -> Result<(), EngineError> {
        e.mode = Mode::Paced;
        self.start = Some(now);
        Ok(())
    }

    fn tick(&mut self, e: &mut Engine<'_>, now: Instant) -> Result<Flow, EngineError> {
        let Some(start) = self.start else {
            return Ok(Flow::Done);
        };
        if self.flood_written.is_none()
            && e.dbs
                .iter()
                .all(|d| d.cache.oldest_dirty_at().map_or(true, |t| t >= start))
        {
            self.flood_written = Some(now);
        }
        let aged = now.duration_since(start);
        let flood_over = self
            .flood_written
            .is_some_and(|t| now.duration_since(t) >= SETTLE_AFTER_FLOOD);
        Ok(
            if aged >= self.length && (flood_over || aged >= self.length + SETTLE_FLOOD_LIMIT) {
                Flow::Done
            } else {
                Flow::Continue
            },
        )
    }

    fn interrupt(&mut self, e: &mut Engine<'_>, _now: Instant) -> Result<Flow, EngineError> {
        interrupted_before_measuring(e);
        Ok(Flow::Done)
    }

    fn wake_at(&self) -> Option<Instant> {
        let start = self.start?;
        let age = start + self.length;
        Some(match self.flood_written {
            Some(t) => age.max(t + SETTLE_AFTER_FLOOD),
            // Until the flood is taken for writing, the flush completions wake the loop (then
            // `flood_written` is set); the limit is the only timer (one in the past would spin).
            None => age + SETTLE_FLOOD_LIMIT,
        })
    }
}
