//! Waiting for a synchronized start (`fleet run`): paced at the target, not measured, until the
//! [`StartGate`] is opened and its wall-clock time has come, so that several servers begin
//! measuring at the same instant. The settle phase has ended before it: the workload simply
//! keeps running as it did, and the measured phase begins when the gate's time comes.

use std::sync::Arc;
use std::time::{Duration, Instant};

use super::{interrupted_before_measuring, Flow, Mode, PhaseRun};
use crate::exec::PhaseCx;
pub use crate::plan::StartGate;
use crate::{EngineError, Phase};

/// How often an unopened gate is looked at (the loop turns at least this often).
const POLL: Duration = Duration::from_millis(5);

/// The phase: done once the gate's time has come.
#[derive(Debug)]
pub(crate) struct WaitStart {
    gate: Arc<StartGate>,
    next: Option<Instant>,
}

impl WaitStart {
    pub fn new(gate: Arc<StartGate>) -> WaitStart {
        WaitStart { gate, next: None }
    }
}

impl PhaseRun for WaitStart {
    fn kind(&self) -> Phase {
        Phase::WaitStart
    }

    fn enter(&mut self, e: &mut PhaseCx<'_, '_>, now: Instant) -> Result<(), EngineError> {
        *e.mode = Mode::Paced;
        self.next = Some(now);
        Ok(())
    }

    fn tick(&mut self, e: &mut PhaseCx<'_, '_>, now: Instant) -> Result<Flow, EngineError> {
        // The queue's clock: the system's wall clock on a real queue, the simulated one in tests.
        match self.gate.remaining(e.reactor.clock().wall()) {
            Some(left) if left.is_zero() => Ok(Flow::Done),
            Some(left) => {
                self.next = Some(now + left.min(POLL));
                Ok(Flow::Continue)
            }
            None => {
                self.next = Some(now + POLL);
                Ok(Flow::Continue)
            }
        }
    }

    fn interrupt(&mut self, e: &mut PhaseCx<'_, '_>, _now: Instant) -> Result<Flow, EngineError> {
        interrupted_before_measuring(e)
    }

    fn wake_at(&self) -> Option<Instant> {
        self.next
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::{SystemTime, UNIX_EPOCH};

    #[test]
    fn a_gate_opens_only_at_a_valid_time() {
        let g = StartGate::new();
        assert_eq!(g.remaining(SystemTime::now()), None);
        assert!(!g.open_at(f64::NAN));
        assert!(!g.open_at(-1.0));
        assert!(!g.open_at(1e30));
        assert_eq!(g.opens_at(), None);
        assert!(g.open_at(1_000.5));
        assert_eq!(
            g.opens_at(),
            Some(UNIX_EPOCH + Duration::from_millis(1_000_500))
        );
        let before = UNIX_EPOCH + Duration::from_secs(999);
        assert_eq!(g.remaining(before), Some(Duration::from_millis(1_500)));
        assert_eq!(
            g.remaining(UNIX_EPOCH + Duration::from_secs(2_000)),
            Some(Duration::ZERO)
        );
    }
}
