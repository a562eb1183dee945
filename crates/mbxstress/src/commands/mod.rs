//! One file per subcommand: glue from parsed flags to the library crates and the renderers.

mod size;

use std::process::ExitCode;

use crate::cli::{Cli, Command};

/// Runs the chosen subcommand.
pub fn dispatch(cli: Cli) -> anyhow::Result<ExitCode> {
    match cli.command {
        Command::Size(args) => size::run(args),
    }
}
