//! Stabilize: paced at the target until every instance's database read latency is stable, the
//! check each step of automatic tuning makes before it measures (Jetstress 2013 logs a "read
//! latency slope" per instance for about 50 s per step). The average read latency of each
//! window is kept per instance; latency is stable when the least-squares slope over the last
//! `windows` windows is at most `slope_ms` per window for every instance. A phase that has not
//! seen that within `max` ends anyway and says so (the step's measurement then shows it).

use std::collections::VecDeque;
use std::time::{Duration, Instant};

use super::{interrupted_before_measuring, Flow, Mode, PhaseRun};
use crate::exec::PhaseCx;
use crate::plan::StabilizeSpec;
use crate::stats::Stream;
use crate::{EngineError, Phase};

/// The stabilize phase.
#[derive(Debug)]
pub(crate) struct Stabilize {
    spec: StabilizeSpec,
    start: Option<Instant>,
    next: Option<Instant>,
    /// Per instance, the last window averages (ms), oldest first.
    history: Vec<VecDeque<f64>>,
}

impl Stabilize {
    pub fn new(spec: StabilizeSpec) -> Stabilize {
        Stabilize {
            spec: StabilizeSpec {
                windows: spec.windows.max(2),
                ..spec
            },
            start: None,
            next: None,
            history: Vec::new(),
        }
    }
}

/// The least-squares slope of `ys` against 0, 1, 2, ... (per step), or `None` for fewer than
/// two points.
pub(crate) fn slope(ys: impl ExactSizeIterator<Item = f64> + Clone) -> Option<f64> {
    let n = ys.len();
    if n < 2 {
        return None;
    }
    let nf = n as f64;
    let mean_x = (nf - 1.0) / 2.0;
    let mean_y = ys.clone().sum::<f64>() / nf;
    let (mut num, mut den) = (0.0, 0.0);
    for (i, y) in ys.enumerate() {
        let dx = i as f64 - mean_x;
        num += dx * (y - mean_y);
        den += dx * dx;
    }
    Some(num / den)
}

impl PhaseRun for Stabilize {
    fn kind(&self) -> Phase {
        Phase::Stabilize
    }

    fn planned(&self) -> Option<Duration> {
        Some(self.spec.window * self.spec.windows as u32)
    }

    fn enter(&mut self, e: &mut PhaseCx<'_, '_>, now: Instant) -> Result<(), EngineError> {
        *e.mode = Mode::Paced;
        self.start = Some(now);
        self.next = Some(now + self.spec.window);
        self.history = vec![VecDeque::with_capacity(self.spec.windows + 1); e.dbs.len()];
        e.reset_intervals();
        // The executor resets the interval counters a minute after the last sample outside the
        // measured phase; each window is such a sample.
        e.sampler.last = now;
        Ok(())
    }

    fn tick(&mut self, e: &mut PhaseCx<'_, '_>, now: Instant) -> Result<Flow, EngineError> {
        let (Some(start), Some(next)) = (self.start, self.next) else {
            return Ok(Flow::Done);
        };
        if now < next {
            return Ok(Flow::Continue);
        }
        for (db, h) in e.dbs.iter().zip(self.history.iter_mut()) {
            let c = db.stats.interval[Stream::DbRead as usize];
            // A window without reads (an idle instance) tells nothing: the fit skips it.
            if c.ios > 0 {
                h.push_back(c.avg_ms());
                if h.len() > self.spec.windows {
                    h.pop_front();
                }
            }
        }
        e.reset_intervals();
        e.sampler.last = now;
        self.next = Some(next + self.spec.window);
        let slopes: Vec<Option<f64>> = self
            .history
            .iter()
            .map(|h| {
                if h.len() < self.spec.windows {
                    None
                } else {
                    slope(h.iter().copied())
                }
            })
            .collect();
        let stable = slopes
            .iter()
            .all(|s| s.is_some_and(|s| s.abs() <= self.spec.slope_ms));
        let describe = |e: &PhaseCx<'_, '_>| {
            e.dbs
                .iter()
                .zip(&slopes)
                .map(|(db, s)| match s {
                    Some(s) => format!("{} {:+.3} ms", db.spec.name, s),
                    None => format!("{} (too few reads)", db.spec.name),
                })
                .collect::<Vec<_>>()
                .join(", ")
        };
        if stable {
            let line = format!(
                "Read latency is stable after {:.0} s (slope per {:.0} s window: {}).",
                now.duration_since(start).as_secs_f64(),
                self.spec.window.as_secs_f64(),
                describe(e)
            );
            e.log(&line, false);
            return Ok(Flow::Done);
        }
        if now.duration_since(start) >= self.spec.max {
            let line = format!(
                "{} within {:.0} s (slope per {:.0} s window: {}; limit {} ms); measuring anyway.",
                crate::tune::UNSTABLE,
                self.spec.max.as_secs_f64(),
                self.spec.window.as_secs_f64(),
                describe(e),
                self.spec.slope_ms
            );
            e.log(&line, true);
            return Ok(Flow::Done);
        }
        Ok(Flow::Continue)
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

    #[test]
    fn slope_of_a_line_and_of_noise() {
        let s = |v: &[f64]| slope(v.iter().copied());
        assert_eq!(s(&[1.0]), None);
        assert!((s(&[1.0, 2.0, 3.0, 4.0]).expect("slope") - 1.0).abs() < 1e-12);
        assert!((s(&[5.0, 5.0, 5.0]).expect("slope")).abs() < 1e-12);
        assert!((s(&[4.0, 3.0, 2.0]).expect("slope") + 1.0).abs() < 1e-12);
        // Noise around a level: a small slope.
        assert!((s(&[5.0, 6.0, 4.0, 5.0]).expect("slope") + 0.2).abs() < 1e-12);
    }
}
