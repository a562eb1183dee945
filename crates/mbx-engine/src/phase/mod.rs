//! Phases: small types behind one trait, run one after the other by the executor. A phase says
//! how the workload runs while it lasts ([`Mode`]), and decides when it is done.

pub(crate) mod attain;
pub(crate) mod generate;
pub(crate) mod measure;
pub(crate) mod replay;
pub(crate) mod seqpass;
pub(crate) mod settle;
pub(crate) mod shutdown;
pub(crate) mod stabilize;
pub(crate) mod stop_dirty;
pub(crate) mod wait_start;

use std::time::{Duration, Instant};

use crate::exec::Engine;
use crate::{EngineError, PassBytes, Phase};

/// Whether a phase continues.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Flow {
    /// Keep going.
    Continue,
    /// The phase is over.
    Done,
}

/// How sessions start transactions.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Mode {
    /// As fast as they can (cache warm-up).
    Unpaced,
    /// At the pacer's rate.
    Paced,
    /// No new transactions; background work drains.
    Stopping,
    /// Nothing: no transaction starts, no page is flushed, no log is written, no checkpoint is
    /// taken (a stop without a clean shutdown, and recovery after it). Only what a phase
    /// submits itself runs.
    Halted,
}

/// One phase of a plan.
pub(crate) trait PhaseRun {
    /// Which phase this is (for events and progress).
    fn kind(&self) -> Phase;
    /// Its planned length, when known (for progress and ETA).
    fn planned(&self) -> Option<Duration> {
        None
    }
    /// Called once when the phase begins.
    fn enter(&mut self, e: &mut Engine<'_>, now: Instant) -> Result<(), EngineError>;
    /// Called every loop turn.
    fn tick(&mut self, e: &mut Engine<'_>, now: Instant) -> Result<Flow, EngineError>;
    /// The user interrupted the test during this phase. `Done` ends it (the executor then runs
    /// the plan's closing phase); `Continue` keeps it running.
    fn interrupt(&mut self, e: &mut Engine<'_>, now: Instant) -> Result<Flow, EngineError>;
    /// Its own next timer, if any.
    fn wake_at(&self) -> Option<Instant> {
        None
    }
    /// Bytes done and planned, for a phase that moves a known amount of data (a sequential
    /// pass): progress and ETA come from them.
    fn pass_bytes(&self) -> Option<PassBytes> {
        None
    }
}

/// The line logged when a test is interrupted before it measured anything.
pub(crate) fn interrupted_before_measuring(e: &mut Engine<'_>) {
    let line = format!(
        "{} before the measured phase: nothing was measured; shutting down databases ...",
        e.stop_word()
    );
    e.log(&line, false);
}
