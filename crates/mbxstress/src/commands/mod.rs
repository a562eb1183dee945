//! One file per subcommand: glue from parsed flags to the library crates and the renderers.

mod compare;
mod doctor;
mod engine;
mod esrp;
mod export;
pub(crate) mod findmax;
mod fleet;
mod import;
mod iobench;
mod jetstress;
mod loadgen;
mod loadgen_findmax;
mod prepare;
mod report;
pub(crate) mod run;
pub(crate) mod shared;
mod size;
pub(crate) mod suite;
mod verify;

use std::process::ExitCode;

use crate::cli::{Cli, Command};

/// Runs the chosen subcommand.
pub fn dispatch(cli: Cli) -> anyhow::Result<ExitCode> {
    match cli.command {
        Command::Run(args) => run::run(args),
        Command::Export(cmd) => export::run(cmd),
        Command::FindMax(args) => findmax::run(args),
        Command::Doctor(args) => doctor::run(args),
        Command::Size(args) => size::run(args),
        Command::Prepare(args) => prepare::run(args),
        Command::Verify(args) => verify::run(args),
        Command::Iobench(args) => iobench::run(args),
        Command::Import(args) => import::run(args),
        Command::Report(args) => report::run(args),
        Command::Compare(args) => compare::run(args),
        Command::Esrp(args) => esrp::run(args),
        Command::Fleet(crate::cli::FleetCommand::Run(args)) => fleet::run(args),
        Command::Fleet(crate::cli::FleetCommand::Loadgen(args)) => fleet::loadgen(args),
        Command::Loadgen(crate::cli::LoadgenCommand::Init(args)) => loadgen::init(args),
        Command::Loadgen(crate::cli::LoadgenCommand::Run(args)) => loadgen::run(args),
        Command::Loadgen(crate::cli::LoadgenCommand::Idle(args)) => loadgen::idle(args),
        Command::Loadgen(crate::cli::LoadgenCommand::Submit(args)) => loadgen::submit(args),
        Command::Loadgen(crate::cli::LoadgenCommand::FindMax(args)) => loadgen_findmax::run(args),
    }
}
