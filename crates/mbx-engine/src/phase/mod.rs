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

use std::sync::atomic::AtomicBool;

use crate::exec::Engine;
pub(crate) use crate::exec::{Flow, Mode, PhaseRun};
use crate::plan::{PhaseSpec, Plan};
use crate::EngineError;
use crate::RunEvent;
use attain::Attain;
use generate::GenerateLogs;
use measure::Measure;
use replay::Replay;
use seqpass::SeqPass;
use settle::Settle;
use shutdown::Shutdown;
use stabilize::Stabilize;
use stop_dirty::StopDirty;
use wait_start::WaitStart;

/// The line logged when a test is interrupted before it measured anything.
pub(crate) fn interrupted_before_measuring(e: &mut Engine<'_>) {
    let line = format!(
        "{} before the measured phase: nothing was measured; shutting down databases ...",
        e.stop_word()
    );
    e.log(&line, false);
}

/// The phase `spec` describes, ready to run on `e`.
pub(crate) fn build(spec: &PhaseSpec, e: &Engine<'_>) -> Box<dyn PhaseRun> {
    let now = e.reactor.now();
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

/// Runs the plan. Returns when the last phase is done (or an error stopped the test). With
/// several reactors, each enters a phase only when all do, and a phase ends only when it is
/// done on all (this one keeps working meanwhile); an interruption or an error of any stops
/// them all ([`crate::multi`]).
pub(crate) fn execute(
    e: &mut Engine<'_>,
    plan: &Plan,
    cancel: &AtomicBool,
) -> Result<(), EngineError> {
    let outcome = execute_phases(e, plan, cancel);
    if let (Err(_), Some(g)) = (&outcome, &e.gate) {
        g.halt();
    }
    outcome
}

fn execute_phases(e: &mut Engine<'_>, plan: &Plan, cancel: &AtomicBool) -> Result<(), EngineError> {
    let mut idx = 0;
    while let Some(spec) = plan.phases.get(idx) {
        let mut phase = build(spec, e);
        if let Some(g) = &e.gate {
            g.enter(idx);
        }
        let now = e.reactor.now();
        e.phase = phase.kind();
        e.phase_start = now;
        e.observer.on_event(RunEvent::Phase(e.phase));
        phase.enter(e, now)?;
        loop {
            let now = e.reactor.now();
            if !e.marks.stopping() && e.stop_asked(cancel) {
                e.mark_stop(cancel);
                if let Some(g) = &e.gate {
                    g.halt();
                }
                if phase.interrupt(e, now)? == Flow::Done {
                    break;
                }
            }
            if phase.tick(e, now)? == Flow::Done {
                break;
            }
            e.turn(now, &*phase, None)?;
        }
        // Done here: with several reactors, keep working until the phase is done on all
        // (the last phase needs no gate: nothing follows it).
        if !e.marks.stopping() && idx + 1 < plan.phases.len() {
            if let Some(g) = e.gate.clone() {
                g.done(idx);
                while !g.all_done(idx) {
                    let now = e.reactor.now();
                    if e.stop_asked(cancel) {
                        e.mark_stop(cancel);
                        g.halt();
                        break;
                    }
                    e.turn(now, &*phase, Some(now + crate::exec::GATE_POLL))?;
                }
            }
        }
        idx = if e.marks.stopping() {
            // An interrupted test goes straight to the phase that must always run.
            plan.final_phase_after(idx)
        } else {
            idx + 1
        };
    }
    Ok(())
}
