//! What several commands share: the application layer's errors as the binary's, the exit code
//! of a test's end, the preflight, the start gate's reader. A leaf of `commands` (it uses no
//! other command's file), so `run`, `suite`, `jetstress` and the rest depend on it, never on
//! each other for these.

use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

use mbx_app::AppError;
use mbx_config::RunConfig;
use mbx_engine::result::StopReason;
use mbx_store::CreateParams;

use crate::exit::usage;

/// Files a run writes into its results folder.
pub(crate) use mbx_app::results_folder::RESULT_FILES;

/// The results folder, checked (nothing of ours or anyone's in the way) but not created.
pub(crate) fn results_dir(out: Option<&Path>) -> anyhow::Result<PathBuf> {
    mbx_app::results_folder::results_dir(out).map_err(into_anyhow)
}

/// The application layer's error as the exit code classification expects it: each library
/// error as itself (a transparent wrapper would hide it from the chain), with its context.
pub(crate) fn into_anyhow(e: AppError) -> anyhow::Error {
    use mbx_engine::EngineError;
    match e {
        AppError::Usage(m) => usage(m),
        AppError::Config { context, source } => anyhow::Error::new(source).context(context),
        AppError::Store(s) | AppError::Engine(EngineError::Store(s)) => anyhow::Error::new(s),
        AppError::Engine(EngineError::Io(io)) => anyhow::Error::new(io),
        AppError::Engine(other) => anyhow::Error::new(other),
        AppError::Report { context, source } => anyhow::Error::new(source).context(context),
        AppError::Io { context, source } => anyhow::Error::new(source).context(context),
        AppError::File(io) => anyhow::Error::new(io),
        AppError::Failed(m) => anyhow::anyhow!(m),
        AppError::Input(e) => anyhow::Error::new(e),
        AppError::Import(e) => anyhow::Error::new(e),
        AppError::Context { context, source } => into_anyhow(*source).context(context),
        AppError::Output(io) => anyhow::Error::new(io).context("writing the summary to stdout"),
    }
}

/// The exit code of a test that ended this way (its own, in a suite).
pub(crate) fn code_for(reason: StopReason) -> ExitCode {
    match reason {
        StopReason::Interrupted => ExitCode::from(crate::interrupt::INTERRUPTED),
        StopReason::Completed => ExitCode::SUCCESS,
        StopReason::VerdictFailed => ExitCode::from(1),
        StopReason::IoError
        | StopReason::IntegrityError
        | StopReason::Error
        | StopReason::Running => ExitCode::from(crate::exit::RUNTIME),
    }
}

/// The preflight checks a run performs first (`doctor`'s fast subset).
pub(crate) fn preflight(
    cfg: &RunConfig,
    specs: &[mbx_store::DatabaseSpec],
    create: &CreateParams,
) -> mbx_result::DoctorReport {
    mbx_app::doctor::inspect(cfg, specs, create, mbx_app::doctor::ProbePlan::FAST)
}

/// `--start-gate stdin`: a thread reads the coordinator's lines: `start <unix seconds>` opens
/// the gate, `stop` (or the end of stdin: the coordinator or its connection is gone) stops the
/// test as Ctrl-C does, so no run outlives its coordinator.
pub(crate) fn start_gate_from_stdin(cancel: Arc<AtomicBool>) -> Arc<mbx_engine::StartGate> {
    use std::io::BufRead;
    let gate = mbx_engine::StartGate::new();
    let g = Arc::clone(&gate);
    std::thread::spawn(move || {
        for line in std::io::stdin().lock().lines() {
            let Ok(line) = line else { break };
            let mut words = line.split_whitespace();
            match (words.next(), words.next(), words.next()) {
                (Some("start"), Some(t), None)
                    if t.parse::<f64>().is_ok_and(|t| g.open_at(t)) => {}
                (Some("stop"), None, None) => cancel.store(true, Ordering::SeqCst),
                _ => errln!("warning: --start-gate: ignoring the line {line:?} (expected `start <unix seconds>` or `stop`)"),
            }
        }
        cancel.store(true, Ordering::SeqCst);
    });
    gate
}
