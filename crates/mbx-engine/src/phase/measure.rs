//! Measure: paced at the target for the test's duration; I/O counts towards the result and a
//! sample is taken every sample interval. An interruption ends it early (what was measured is
//! kept).

use std::time::{Duration, Instant};

use super::{Flow, Mode, PhaseRun};
use crate::exec::PhaseCx;
use crate::stats::Stream;
use crate::{EngineError, Phase};

/// The measured phase.
#[derive(Debug)]
pub(crate) struct Measure {
    pub length: Duration,
    end: Option<Instant>,
}

impl Measure {
    pub fn new(length: Duration) -> Measure {
        Measure { length, end: None }
    }

    fn finish(&mut self, e: &mut PhaseCx<'_, '_>, now: Instant) {
        e.marks.measure_end = Some(now);
        // The I/O in flight counts in this window (the last sample, then the measured figures).
        e.carry_in_flight(now);
        if now > e.sampler.last + Duration::from_millis(500) {
            take_sample(e, now);
        }
        let dropped = e.work.pacer.dropped_slots();
        e.work.txn.end_measure(dropped);
        let mut lines = Vec::new();
        for db in e.dbs.iter_mut() {
            db.stats.measuring = false;
            let m = &db.stats.measured;
            lines.push(db.stats.shape.line(
                &db.spec.name,
                m[Stream::LogWrite as usize].ios,
                m[Stream::DbWrite as usize].ios,
            ));
        }
        for line in lines {
            e.log(&line, false);
        }
    }
}

fn take_sample(e: &mut PhaseCx<'_, '_>, now: Instant) {
    let secs = now.duration_since(e.sampler.last).as_secs_f64();
    let stamp = crate::rfc3339(e.reactor.clock().wall());
    let w = &mut *e.work;
    let dropped = w.pacer.dropped_slots();
    // Open loop: how far behind the arrivals the sessions were (closed-loop samples are as
    // they always were).
    let pacing = w
        .open
        .as_ref()
        .map(|o| o.len())
        .map(|waiting| w.txn.take_interval(dropped, waiting));
    crate::sampling::sample(
        e.dbs,
        e.host,
        &mut *e.observer,
        stamp,
        secs,
        pacing,
        e.sample_host.then(|| &**e.reactor.machine()),
    );
    e.sampler.last = now;
}

impl PhaseRun for Measure {
    fn kind(&self) -> Phase {
        Phase::Measure
    }

    fn planned(&self) -> Option<Duration> {
        Some(self.length)
    }

    fn enter(&mut self, e: &mut PhaseCx<'_, '_>, now: Instant) -> Result<(), EngineError> {
        *e.mode = Mode::Paced;
        self.end = Some(now + self.length);
        e.marks.measure_start = Some(now);
        e.marks.measure_start_wall = Some(e.reactor.clock().wall());
        // The sample series starts clean.
        e.reset_intervals();
        for db in e.dbs.iter_mut() {
            db.stats.measuring = true;
        }
        e.sampler.last = now;
        e.sampler.next = now + e.sampler.every;
        e.work.pacer.begin_measure(now);
        let dropped = e.work.pacer.dropped_slots();
        e.work.txn.begin_measure(dropped);
        e.log("Performance logging started.", false);
        Ok(())
    }

    fn tick(&mut self, e: &mut PhaseCx<'_, '_>, now: Instant) -> Result<Flow, EngineError> {
        if self.end.is_some_and(|end| now >= end) {
            e.marks.measure_complete = true;
            self.finish(e, now);
            e.log(
                "Performance logging has ended. Shutting down databases ...",
                false,
            );
            return Ok(Flow::Done);
        }
        if now >= e.sampler.next {
            take_sample(e, now);
            e.sampler.next += e.sampler.every;
        }
        Ok(Flow::Continue)
    }

    fn interrupt(&mut self, e: &mut PhaseCx<'_, '_>, now: Instant) -> Result<Flow, EngineError> {
        self.finish(e, now);
        super::log_stopping(e, "stopping transactions and shutting down databases ...");
        Ok(Flow::Done)
    }

    fn wake_at(&self) -> Option<Instant> {
        self.end
    }
}
