//! Soft Recovery, phase 1: the transaction mix runs with circular logging off and the checkpoint
//! held where the phase began, until every database has the requested number of log generations
//! beyond its checkpoint ("% generated", as Jetstress reports it).
//!
//! Unpaced, as fast as the storage allows: this phase is not measured (only the replay is), and
//! what it must produce is a log of the transaction mix, whose content does not depend on the
//! rate. Pacing it at the target would only make a 500-file test take hours at a low target.

use std::time::{Duration, Instant};

use super::{Flow, Mode, PhaseRun};
use crate::db::Database;
use crate::exec::{begin_checkpoint, PhaseCx};
use crate::{EngineError, Phase};

/// Checkpoints are held this long after the phase begins: for the rest of the test.
const HOLD: Duration = Duration::from_secs(10 * 365 * 24 * 3600);

/// The log generation records go to now.
pub(crate) fn current_generation(db: &Database) -> u64 {
    let n = db.log.files.len();
    db.log.files.get(n.saturating_sub(2)).map_or(0, |f| f.gen)
}

/// Log generations beyond the checkpoint written when the phase began (0 until it is durable).
fn generated(db: &Database) -> u64 {
    match db.checkpointer.last {
        Some(c) if !db.checkpointer.moving() => {
            current_generation(db).saturating_sub(c.generation())
        }
        _ => 0,
    }
}

/// The generate-logs phase.
#[derive(Debug)]
pub(crate) struct GenerateLogs {
    files: u64,
    start: Option<Instant>,
    /// Tenths reported so far.
    reported: u64,
    /// The most files seen generated on the database with the fewest (progress never goes back).
    least: u64,
    estimate: Option<Duration>,
}

impl GenerateLogs {
    pub fn new(files: u64) -> GenerateLogs {
        GenerateLogs {
            files: files.max(1),
            start: None,
            reported: 0,
            least: 0,
            estimate: None,
        }
    }
}

impl PhaseRun for GenerateLogs {
    fn kind(&self) -> Phase {
        Phase::GenerateLogs
    }

    fn planned(&self) -> Option<Duration> {
        self.estimate
    }

    fn log_files(&self) -> Option<crate::PassBytes> {
        Some(crate::PassBytes {
            done: self.least,
            planned: self.files,
        })
    }

    fn enter(&mut self, e: &mut PhaseCx<'_, '_>, now: Instant) -> Result<(), EngineError> {
        *e.mode = Mode::Unpaced;
        self.start = Some(now);
        for i in 0..e.dbs.len() {
            let db = &mut e.dbs[i];
            // Every log file is kept: replay needs them.
            db.log.circular = false;
            // A checkpoint where the log begins, then none: replay goes back to it.
            begin_checkpoint(e.reactor, db, i, now)?;
            db.checkpointer.next_at = now + HOLD;
            // From here on a checkpoint asked for (the generation journal's sync) only syncs.
            db.checkpointer.held = true;
        }
        let line = format!(
            "Generating {} transaction log files per database (circular logging off, checkpoint held) ...",
            self.files
        );
        e.log(&line, false);
        Ok(())
    }

    fn tick(&mut self, e: &mut PhaseCx<'_, '_>, now: Instant) -> Result<Flow, EngineError> {
        for db in e.dbs.iter_mut() {
            db.log.close_finished(e.reactor);
        }
        // The held checkpoint does not move, so the count only grows; kept as the most seen
        // all the same, so progress never goes back.
        self.least = self
            .least
            .max(e.dbs.iter().map(generated).min().unwrap_or(0));
        let least = self.least;
        let fraction = (least as f64 / self.files as f64).min(1.0);
        if let (Some(start), true) = (self.start, fraction > 0.0) {
            let elapsed = now.saturating_duration_since(start);
            let rate = elapsed.div_f64(fraction);
            // The ETA only counts down: a later estimate from the average rate is taken only
            // once the earlier one has run out (a slower stretch does not push the end back
            // while the earlier end is still ahead).
            self.estimate = Some(match self.estimate {
                Some(was) if was > elapsed => was.min(rate),
                _ => rate,
            });
        }
        let tenths = (fraction * 10.0).floor() as u64;
        if tenths > self.reported {
            self.reported = tenths;
            let line = format!(
                "{:.1}% generated ({least} of {} log files on the database with the fewest).",
                fraction * 100.0,
                self.files
            );
            e.log(&line, false);
        }
        Ok(if least >= self.files {
            Flow::Done
        } else {
            Flow::Continue
        })
    }

    fn interrupt(&mut self, e: &mut PhaseCx<'_, '_>, _now: Instant) -> Result<Flow, EngineError> {
        super::log_stopping(
            e,
            "stopping the databases and replaying the logs generated so far ...",
        );
        Ok(Flow::Done)
    }
}
