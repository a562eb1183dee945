//! Settle: paced at the target for one dirty-page age, so flushing reaches steady state before
//! anything is measured.

use std::time::{Duration, Instant};

use super::{interrupted_before_measuring, Flow, Mode, PhaseRun};
use crate::exec::Engine;
use crate::{EngineError, Phase};

/// The settle phase.
#[derive(Debug)]
pub(crate) struct Settle {
    pub length: Duration,
    end: Option<Instant>,
}

impl Settle {
    pub fn new(length: Duration) -> Settle {
        Settle { length, end: None }
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
        self.end = Some(now + self.length);
        Ok(())
    }

    fn tick(&mut self, _e: &mut Engine<'_>, now: Instant) -> Result<Flow, EngineError> {
        Ok(match self.end {
            Some(end) if now < end => Flow::Continue,
            _ => Flow::Done,
        })
    }

    fn interrupt(&mut self, e: &mut Engine<'_>, _now: Instant) -> Result<Flow, EngineError> {
        interrupted_before_measuring(e);
        Ok(Flow::Done)
    }

    fn wake_at(&self) -> Option<Instant> {
        self.end
    }
}
