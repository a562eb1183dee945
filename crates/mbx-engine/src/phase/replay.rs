//! Soft Recovery, phase 2: every database's log is replayed from its checkpoint into the database
//! file (`db::replay`), all databases at once, background maintenance off. The replay is the
//! measured part: its I/O (log reads, database reads and writes) makes the result's figures, and
//! each database's log files replayed and elapsed seconds make the Soft Recovery rows.

use std::time::{Duration, Instant};

use mbx_store::Lsn;

use super::{Flow, Mode, PhaseRun};
use crate::db::replay::ReplayFile;
use crate::exec::PhaseCx;
use crate::{EngineError, Phase};

/// The replay phase.
#[derive(Debug, Default)]
pub(crate) struct Replay {
    start: Option<Instant>,
    estimate: Option<Duration>,
}

impl PhaseRun for Replay {
    fn kind(&self) -> Phase {
        Phase::Replay
    }

    fn planned(&self) -> Option<Duration> {
        self.estimate
    }

    fn enter(&mut self, e: &mut PhaseCx<'_, '_>, now: Instant) -> Result<(), EngineError> {
        *e.mode = Mode::Halted;
        self.start = Some(now);
        e.marks.measure_start = Some(now);
        e.reset_intervals();
        e.log(
            "Recovering databases: replaying the transaction logs from the checkpoint ...",
            false,
        );
        let compressibility = e.settings.compressibility_pct;
        for i in 0..e.dbs.len() {
            let db = &mut e.dbs[i];
            db.stats.measuring = true;
            // The files closed and kept (opened again to be read), then the open ones but the
            // spare (created ahead, holding no record yet).
            let n = db.log.files.len();
            let files = db
                .log
                .kept
                .iter()
                .map(|k| ReplayFile {
                    gen: k.gen,
                    file: None,
                    path: k.path.clone(),
                    used: k.used,
                })
                .chain(
                    db.log
                        .files
                        .iter()
                        .take(n.saturating_sub(1))
                        .map(|f| ReplayFile {
                            gen: f.gen,
                            file: Some(f.file),
                            path: f.path.clone(),
                            used: f.used,
                        }),
                )
                .collect();
            let checkpoint = db
                .checkpointer
                .last
                .map(|_| (db.checkpointer.file, db.checkpointer.sequence));
            // Without a checkpoint in this run: from its first log generation (the database
            // was clean when the run began).
            let fallback =
                Lsn::checked_new(db.spec.log.next_generation.max(1), 0).unwrap_or(Lsn::ZERO);
            db.replay.begin(
                e.reactor,
                i,
                db.spec.database_id,
                compressibility,
                db.spec.log_dir.clone(),
                db.log.direct(),
                checkpoint,
                fallback,
                files,
                now,
            )?;
        }
        Ok(())
    }

    fn tick(&mut self, e: &mut PhaseCx<'_, '_>, now: Instant) -> Result<Flow, EngineError> {
        for i in 0..e.dbs.len() {
            let db = &mut e.dbs[i];
            db.replay.pump(e.reactor, i, db.file)?;
        }
        let fraction = e
            .dbs
            .iter()
            .map(|d| d.replay.fraction())
            .fold(1.0, f64::min);
        if let (Some(start), true) = (self.start, fraction > 0.0) {
            self.estimate = Some(now.saturating_duration_since(start).div_f64(fraction));
        }
        if !e.dbs.iter().all(|d| d.replay.done()) {
            return Ok(Flow::Continue);
        }
        e.marks.measure_end = Some(now);
        let wall = e.reactor.clock().wall();
        let mut lines = Vec::new();
        for db in e.dbs.iter_mut() {
            db.stats.measuring = false;
            for &(page, f) in &db.replay.damaged {
                db.damage
                    .record(&db.spec.name, &db.spec.db_path, page, f, wall);
            }
            let r = &db.replay;
            lines.push(format!(
                "{}: {} log files replayed ({} of them closed and reopened; {} records from the checkpoint) in {:.3} s; {} pages read, {} rewritten at their logged generation.",
                db.spec.name,
                r.files_replayed,
                r.files_reopened,
                r.records,
                r.elapsed.map_or(0.0, |d| d.as_secs_f64()),
                r.pages_read,
                r.pages_written
            ));
        }
        for line in lines {
            e.log(&line, false);
        }
        e.log("Recovery complete.", false);
        Ok(Flow::Done)
    }

    fn interrupt(&mut self, e: &mut PhaseCx<'_, '_>, _now: Instant) -> Result<Flow, EngineError> {
        super::log_stopping(
            e,
            "recovery continues so the databases are left consistent.",
        );
        Ok(Flow::Continue)
    }
}
