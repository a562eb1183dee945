//! `mbxstress report`: a run's files in the formats asked for (HTML and CSV by default), written
//! by the exporters of `mbx_report::export`.

use std::process::ExitCode;

use crate::cli::ReportArgs;

pub fn run(args: ReportArgs) -> anyhow::Result<ExitCode> {
    let formats = if args.format.is_empty() {
        mbx_report::Format::DEFAULT.to_vec()
    } else {
        args.format.clone()
    };
    let written = mbx_report::report::write_report_as(&args.input, args.out.as_deref(), &formats)?;
    let (_, result_json) = mbx_report::report::locate(&args.input);
    for f in &written.flags {
        errln!("warning: {}: {}", result_json.display(), f.message);
    }
    for n in &written.notes {
        errln!("note: {n}");
    }
    for f in written.files {
        outln!("{}", f.display())?;
    }
    Ok(ExitCode::SUCCESS)
}
