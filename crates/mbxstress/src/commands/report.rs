//! `mbxstress report`: the HTML report and CSV files of a run.

use std::process::ExitCode;

use crate::cli::ReportArgs;

pub fn run(args: ReportArgs) -> anyhow::Result<ExitCode> {
    let (files, flags) =
        mbx_report::report::write_report_with_flags(&args.input, args.out.as_deref())?;
    let (_, result_json) = mbx_report::report::locate(&args.input);
    for f in &flags {
        eprintln!("warning: {}: {}", result_json.display(), f.message);
    }
    for f in files {
        outln!("{}", f.display())?;
    }
    Ok(ExitCode::SUCCESS)
}
