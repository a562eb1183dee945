//! Stop without a clean shutdown, as after a crash: no new transaction starts, the I/O in flight
//! completes, and then nothing else happens. Dirty pages are not flushed, the log buffer is not
//! written and no final checkpoint is taken; the databases stay marked dirty. What the database
//! files lack is exactly what recovery must redo from the log.

use std::time::Instant;

use super::{Flow, Mode, PhaseRun};
use crate::exec::PhaseCx;
use crate::{EngineError, Phase};

/// The stop-dirty phase.
#[derive(Debug)]
pub(crate) struct StopDirty;

impl PhaseRun for StopDirty {
    fn kind(&self) -> Phase {
        Phase::StopDirty
    }

    fn enter(&mut self, e: &mut PhaseCx<'_, '_>, _now: Instant) -> Result<(), EngineError> {
        *e.mode = Mode::Halted;
        Ok(())
    }

    fn tick(&mut self, e: &mut PhaseCx<'_, '_>, _now: Instant) -> Result<Flow, EngineError> {
        if e.reactor.in_flight() > 0 {
            return Ok(Flow::Continue);
        }
        let dirty: usize = e.dbs.iter().map(|d| d.cache.dirty_count()).sum();
        let line = format!(
            "Databases stopped without a clean shutdown: {dirty} dirty pages and the log buffer left unwritten, no final checkpoint."
        );
        e.log(&line, false);
        Ok(Flow::Done)
    }

    fn interrupt(&mut self, _e: &mut PhaseCx<'_, '_>, _now: Instant) -> Result<Flow, EngineError> {
        Ok(Flow::Continue)
    }
}
