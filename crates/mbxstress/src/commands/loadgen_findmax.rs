//! `mbxstress loadgen find-max`: `loadgen run`'s flags and the search's to the application
//! layer's request (`mbx_app::loadgen::resolve::find_max_request`: every check is there), the
//! search run with the terminal's rendering, exit codes.

use std::process::ExitCode;

use mbx_app::loadgen::resolve::{self, FindMaxFlags};

use crate::cli::LoadgenFindMaxArgs;
use crate::exit::usage;

/// `loadgen find-max`.
pub fn run(args: LoadgenFindMaxArgs) -> anyhow::Result<ExitCode> {
    let r = &args.run;
    // `loadgen run` flags that mean nothing here: refused, never ignored.
    let refused = [
        (
            r.start_gate.is_some(),
            "--start-gate",
            "`fleet loadgen` starts only `loadgen run`",
        ),
        (
            r.request.is_some(),
            "--request",
            "a fleet client runs `loadgen run`",
        ),
    ];
    if let Some((_, flag, why)) = refused.iter().find(|(given, ..)| *given) {
        return Err(usage(format!(
            "loadgen find-max does not take {flag}: {why} (see `mbxstress loadgen find-max --help`)"
        )));
    }
    let flags = FindMaxFlags {
        day: super::loadgen::day_flags(r),
        start_users: args.start_users,
        step: args.step,
        max_steps: args.max_steps,
        resolution_pct: args.resolution_pct,
        confirmations: args.confirmations,
        init_messages: args.init_messages,
        init_concurrency: args.init_concurrency,
    };
    let req = resolve::find_max_request(&flags, crate::interrupt::install())
        .map_err(super::shared::into_anyhow)?;
    let mut term = crate::terminal::Terminal::new(r.conn.progress);
    let found = mbx_app::loadgen::find_max_run::run(&req, &mut term);
    term.finish()?;
    let f = found.map_err(super::shared::into_anyhow)?.find_max;
    Ok(match (f.end.as_str(), f.users) {
        ("interrupted", _) => ExitCode::from(crate::interrupt::INTERRUPTED),
        (_, Some(_)) => ExitCode::SUCCESS,
        (_, None) => ExitCode::from(1),
    })
}
