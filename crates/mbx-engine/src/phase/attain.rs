//! Attain: sessions run unthrottled until every database cache is 90% full (Jetstress's cache
//! prerequisite); gives up after a time limit or when the caches stop growing, with a note.

use std::time::{Duration, Instant};

use super::{interrupted_before_measuring, Flow, Mode, PhaseRun};
use crate::exec::PhaseCx;
use crate::{EngineError, Phase};

/// Longest the attain phase may take before the test proceeds anyway.
pub(crate) const ATTAIN_LIMIT: Duration = Duration::from_secs(600);
/// The attain phase also ends when the emptiest cache has not grown for this long: waiting
/// longer could not meet the prerequisite, only hang the test.
pub(crate) const ATTAIN_STALL: Duration = Duration::from_secs(60);
/// The prerequisite.
const FILL: f64 = 0.9;

/// The attain phase.
#[derive(Debug)]
pub(crate) struct Attain {
    start: Instant,
    best: (f64, Instant),
}

impl Attain {
    pub fn new(now: Instant) -> Attain {
        Attain {
            start: now,
            best: (0.0, now),
        }
    }
}

impl PhaseRun for Attain {
    fn kind(&self) -> Phase {
        Phase::Attain
    }

    fn enter(&mut self, e: &mut PhaseCx<'_, '_>, now: Instant) -> Result<(), EngineError> {
        *self = Attain::new(now);
        *e.mode = Mode::Unpaced;
        e.log(
            "Attaining prerequisites: database cache at least 90% full.",
            false,
        );
        Ok(())
    }

    fn tick(&mut self, e: &mut PhaseCx<'_, '_>, now: Instant) -> Result<Flow, EngineError> {
        let fill = e.min_cache_fill();
        if fill > self.best.0 {
            self.best = (fill, now);
        }
        let timed_out = now.duration_since(self.start) > ATTAIN_LIMIT;
        let stalled = now.duration_since(self.best.1) > ATTAIN_STALL;
        if fill < FILL && !timed_out && !stalled {
            return Ok(Flow::Continue);
        }
        if fill < FILL {
            let line = format!(
                "The cache prerequisite was not met: the emptiest database cache is {:.0}% full and {}; continuing with the test.",
                fill * 100.0,
                if timed_out {
                    "the 10-minute limit was reached".to_string()
                } else {
                    format!("did not grow for {} s", ATTAIN_STALL.as_secs())
                }
            );
            e.log(&line, true);
        }
        // The reads per transaction and the write rate seen so far start the pacer.
        e.work.pacer.start_pacing(now);
        let p = &e.work.pacer;
        let line = format!(
            "Cache prerequisite met ({:.0}% full); pacing {:.1} transactions/s ({:.2} reads each, plus {:.0} write IOPS) for the {:.0} IOPS target.",
            fill * 100.0,
            p.txn_rate(),
            p.reads_per_txn(),
            p.background_iops(),
            e.settings.target_iops
        );
        e.log(&line, false);
        Ok(Flow::Done)
    }

    fn interrupt(&mut self, e: &mut PhaseCx<'_, '_>, _now: Instant) -> Result<Flow, EngineError> {
        interrupted_before_measuring(e)
    }
}
