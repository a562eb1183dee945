//! `mbxstress esrp`: the ESRP summary across servers.

use std::io::Write;
use std::process::ExitCode;

use anyhow::Context;

use crate::cli::EsrpArgs;

/// Prints the summary. Exit code 0 when something was summarized (some inputs may be excluded,
/// each named with its reason), 2 when nothing could be: every input is excluded.
pub fn run(args: EsrpArgs) -> anyhow::Result<ExitCode> {
    let inputs = mbx_app::esrp::load_all(&args.files).map_err(super::shared::into_anyhow)?;
    let s = mbx_report::summarize(&inputs);
    let mut out = std::io::stdout().lock();
    if args.json {
        // The JSON carries them in `warnings`, per server in `flags` and in `excluded`; people
        // watching see them.
        for w in &mbx_app::esrp::warnings(&s) {
            eprintln!("{w}");
        }
        for x in &s.excluded {
            eprintln!("excluded: {} ({}): {}", x.source, x.machine, x.message);
        }
        serde_json::to_writer_pretty(&mut out, &s).context("writing JSON to stdout")?;
        writeln!(out).context("writing to stdout")?;
    } else {
        write!(out, "{}", mbx_app::esrp::text(&s)).context("writing to stdout")?;
    }
    if s.is_empty() {
        eprintln!(
            "error: nothing to summarize: none of the {} inputs holds figures ESRP summarizes (each is named above with the reason)",
            inputs.len()
        );
        return Ok(ExitCode::from(crate::exit::USAGE));
    }
    Ok(ExitCode::SUCCESS)
}

/// The summary as text (`fleet run`'s summary uses it too).
pub(crate) use mbx_app::esrp::text;
