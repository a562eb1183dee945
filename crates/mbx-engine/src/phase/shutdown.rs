//! Shutdown: no new transactions; open ones finish, the caches and logs drain, then a final
//! checkpoint is written through the queue. Always runs, also after an interruption, so the
//! databases are left consistent.

use std::time::{Duration, Instant};

use super::{Flow, Mode, PhaseRun};
use crate::exec::{begin_checkpoint, PhaseCx};
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

    fn enter(&mut self, e: &mut PhaseCx<'_, '_>, now: Instant) -> Result<(), EngineError> {
        *e.mode = Mode::Stopping;
        *e.shutdown_start = Some(now);
        Ok(())
    }

    fn tick(&mut self, e: &mut PhaseCx<'_, '_>, now: Instant) -> Result<Flow, EngineError> {
        if !e.drained() {
            give_up_on_hung_io(e, now)?;
            return Ok(Flow::Continue);
        }
        if self.checkpointing {
            return Ok(Flow::Done);
        }
        self.checkpointing = true;
        for i in 0..e.dbs.len() {
            begin_checkpoint(e.reactor, &mut e.dbs[i], i, now)?;
        }
        Ok(Flow::Continue)
    }

    fn interrupt(&mut self, _e: &mut PhaseCx<'_, '_>, _now: Instant) -> Result<Flow, EngineError> {
        Ok(Flow::Continue)
    }
}

/// How long shutdown waits for an I/O past the hung-I/O threshold: the threshold again, at least
/// 10 s.
fn grace(hung_io: Duration) -> Duration {
    hung_io.max(Duration::from_secs(10))
}

/// Shutdown waits for every I/O in flight, but not forever: an I/O outstanding for longer than
/// the hung-I/O threshold plus a grace period ([`grace`]) is given up on. Its buffers are leaked
/// on purpose (the kernel may still transfer them: [`crate::reactor::Reactor::abandon`]) and the
/// test ends with an I/O error naming it; the result is written as for any error.
fn give_up_on_hung_io(e: &mut PhaseCx<'_, '_>, now: Instant) -> Result<(), EngineError> {
    let limit = e.settings.hung_io + grace(e.settings.hung_io);
    let Some(h) = e.reactor.oldest_in_flight(now) else {
        return Ok(());
    };
    if h.outstanding <= limit {
        return Ok(());
    }
    let what = h.op.noun();
    let message = format!(
        "a hung {what} of {} bytes never completed ({:.0} s outstanding at shutdown); gave up waiting, its buffers left to the kernel",
        h.len,
        h.outstanding.as_secs_f64()
    );
    e.log(
        &format!("Shutdown: {message} ({}).", h.path.display()),
        false,
    );
    // What was carried past the measured phase and never completed counts with its age now.
    e.settle_carried(now);
    e.reactor.abandon();
    Err(EngineError::Io(mbx_io::IoError::Os {
        op: "complete a hung I/O on",
        path: h.path,
        offset: Some(h.offset),
        error: std::io::Error::new(std::io::ErrorKind::TimedOut, message),
    }))
}
