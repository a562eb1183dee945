//! Shutdown: no new transactions; open ones finish, the caches and logs drain, then a final
//! checkpoint is written through the queue. Always runs, also after an interruption, so the
//! databases are left consistent.

use std::time::Instant;

use super::{Flow, Mode, PhaseRun};
use crate::exec::{begin_checkpoint, Engine};
use crate::{EngineError, Phase};

/// The shutdown phase.
#[derive(Debug, Default)]
pub(crate) struct Shutdown {
    checkpointing: bool,
}

impl PhaseRun for Shutdown {
    fn kind(&self) -> Phase {
        Phase::Shutdown
    }

    fn enter(&mut self, e: &mut Engine<'_>, _now: Instant) -> Result<(), EngineError> {
        e.mode = Mode::Stopping;
        Ok(())
    }

    fn tick(&mut self, e: &mut Engine<'_>, now: Instant) -> Result<Flow, EngineError> {
        if !e.drained() {
            return Ok(Flow::Continue);
        }
        if self.checkpointing {
            return Ok(Flow::Done);
        }
        self.checkpointing = true;
        for i in 0..e.dbs.len() {
            begin_checkpoint(&mut e.reactor, &mut e.dbs[i], i, now)?;
        }
        Ok(Flow::Continue)
    }

    fn interrupt(&mut self, _e: &mut Engine<'_>, _now: Instant) -> Result<Flow, EngineError> {
        Ok(Flow::Continue)
    }
}
