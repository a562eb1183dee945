//! `mbxstress`: the command-line definition plus glue. Behaviour lives in the library crates;
//! each subcommand's glue is one file under `commands/`.
//!
//! Exit codes: 0 success, 1 a verdict that is not a pass (or bad pages, or a failed doctor check),
//! 2 usage or configuration error, 3 runtime error, 130 interrupted (work done so far is kept);
//! docs/guide.md, "Exit codes".

/// `println!` that returns the write error instead of panicking (a closed pipe is not a crash).
macro_rules! outln {
    ($($arg:tt)*) => {{
        use std::io::Write as _;
        writeln!(std::io::stdout(), $($arg)*)
    }};
}

/// `errln!` that never panics: after SIGHUP (an SSH session gone) writing to the terminal
/// fails, and that must not stop the run from saving its result.
macro_rules! errln {
    ($($arg:tt)*) => {{
        use std::io::Write as _;
        let _ = writeln!(std::io::stderr(), $($arg)*);
    }};
}

/// `errp!` that never panics (see `errln!`).
macro_rules! errp {
    ($($arg:tt)*) => {{
        use std::io::Write as _;
        let mut e = std::io::stderr();
        let _ = write!(e, $($arg)*);
        let _ = e.flush();
    }};
}

mod cli;
mod commands;
mod exit;
mod interrupt;
mod progress;
mod render;
mod summary;
mod terminal;
mod units;

use std::process::ExitCode;

use clap::Parser;

fn main() -> ExitCode {
    // clap prints its own usage errors and exits with 2; --help and --version exit with 0.
    let cli = cli::Cli::parse();
    if cli.check_args {
        return ExitCode::SUCCESS;
    }
    match commands::dispatch(cli) {
        Ok(code) => code,
        Err(err) => {
            if exit::is_broken_pipe(&err) {
                return ExitCode::SUCCESS;
            }
            errln!("{}", exit::render(&err));
            exit::code_for(&err)
        }
    }
}
