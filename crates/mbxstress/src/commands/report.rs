//! `mbxstress report`: the HTML report and CSV files of a run.

use std::process::ExitCode;

use crate::cli::ReportArgs;

pub fn run(args: ReportArgs) -> anyhow::Result<ExitCode> {
    let files = mbx_report::write_report(&args.input, args.out.as_deref())?;
    for f in files {
        outln!("{}", f.display())?;
    }
    Ok(ExitCode::SUCCESS)
}
