//! `mbxstress run --test suite`: the flags as `mbx_app::suite`'s request, and the suite's
//! summary on stdout (each test's verdict, then the suite's).

use std::process::ExitCode;

use mbx_app::config::Layers;
use mbx_app::suite::{SuiteEnd, SuiteRequest};

/// The tests of the suite, in order, with their folder names.
pub(crate) use mbx_app::suite::STEPS;

use super::shared::{code_for, into_anyhow, preflight};
use crate::cli::RunArgs;

/// Runs the suite (`mbx_app::suite`).
pub fn run(args: &RunArgs, layers: &Layers) -> anyhow::Result<ExitCode> {
    let cancel = crate::interrupt::install();
    let req = SuiteRequest {
        layers,
        out: args.out.clone(),
        stress_duration_s: args.stress_duration.map(|d| d.as_secs_f64()),
        force: args.force,
        allow_device: args.allow_device,
        cancel: &cancel,
        preflight: &preflight,
    };
    let mut term = crate::terminal::Terminal::new(args.progress);
    let end = mbx_app::suite::run(&req, &mut term);
    term.finish()?;
    Ok(match end.map_err(into_anyhow)? {
        SuiteEnd::Stopped(ran) => code_for(ran.reason),
        SuiteEnd::Done { pass: true } => ExitCode::SUCCESS,
        SuiteEnd::Done { pass: false } => ExitCode::from(1),
    })
}
