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

use crate::exec::Engine;
pub(crate) use crate::exec::{Flow, Mode, PhaseCx, PhaseRun};
use crate::plan::PhaseSpec;
use crate::plan::Plan;
use crate::EngineError;
use attain::Attain;
use generate::GenerateLogs;
use measure::Measure;
use replay::Replay;
use seqpass::SeqPass;
use settle::Settle;
use shutdown::Shutdown;
use stabilize::Stabilize;
use std::sync::atomic::AtomicBool;
use stop_dirty::StopDirty;
use wait_start::WaitStart;

/// A phase before the measured one, interrupted: logs that nothing was measured and ends the
/// phase (the shutdown follows).
pub(crate) fn interrupted_before_measuring(e: &mut PhaseCx<'_, '_>) -> Result<Flow, EngineError> {
    let line = format!(
        "{} before the measured phase: nothing was measured; shutting down databases ...",
        e.stop_word()
    );
    e.log(&line, false);
    Ok(Flow::Done)
}

/// Logs what a phase does now that the test is stopping: "Interrupted: `what`" (or the word for
/// a stop caused by another reactor's error).
pub(crate) fn log_stopping(e: &mut PhaseCx<'_, '_>, what: &str) {
    let line = format!("{}: {what}", e.stop_word());
    e.log(&line, false);
}

/// The phase `spec` describes, ready to begin at `now`.
pub(crate) fn build(spec: &PhaseSpec, now: std::time::Instant) -> Box<dyn PhaseRun> {
    match spec {
        PhaseSpec::Attain => Box::new(Attain::new(now)),
        PhaseSpec::Settle(d) => Box::new(Settle::new(*d)),
        PhaseSpec::Stabilize(s) => Box::new(Stabilize::new(*s)),
        PhaseSpec::WaitStart(g) => Box::new(WaitStart::new(std::sync::Arc::clone(&g.0))),
        PhaseSpec::Measure(d) => Box::new(Measure::new(*d)),
        PhaseSpec::Shutdown => Box::new(Shutdown::default()),
        PhaseSpec::SeqPass(spec) => Box::new(SeqPass::new(*spec)),
        PhaseSpec::GenerateLogs { files_per_db } => Box::new(GenerateLogs::new(*files_per_db)),
        PhaseSpec::StopDirty => Box::new(StopDirty),
        PhaseSpec::Replay => Box::new(Replay::default()),
    }
}

/// Runs `plan` on `e` ([`crate::exec::execute`], with these phases).
pub(crate) fn execute(
    e: &mut Engine<'_>,
    plan: &Plan,
    cancel: &AtomicBool,
) -> Result<(), EngineError> {
    crate::exec::execute(e, plan, cancel, build)
}
