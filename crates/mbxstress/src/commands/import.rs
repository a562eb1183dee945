//! `mbxstress import`: a Jetstress report's tables into our model.

use std::io::Write;
use std::process::ExitCode;

use anyhow::Context;

use crate::cli::ImportArgs;

/// Imports every Jetstress report in the file: with `--json` one object for a file of one
/// report (as always), an array of them for a file of several; as text one block per report.
pub fn run(args: ImportArgs) -> anyhow::Result<ExitCode> {
    let all = mbx_report::import::import_file_all(&args.file)?;
    let mut out = std::io::stdout().lock();
    if args.json {
        match all.as_slice() {
            [one] => serde_json::to_writer_pretty(&mut out, one),
            several => serde_json::to_writer_pretty(&mut out, several),
        }
        .context("writing JSON to stdout")?;
        writeln!(out).context("writing to stdout")?;
        return Ok(ExitCode::SUCCESS);
    }
    let text: String = all.iter().map(text).collect();
    write!(out, "{text}").context("writing to stdout")?;
    Ok(ExitCode::SUCCESS)
}

/// One report as text.
fn text(r: &mbx_report::ImportedReport) -> String {
    let mut text = format!(
        "{}: {} report{}{}\n",
        r.source,
        r.kind.map_or("unknown", |k| k.name()),
        r.machine
            .as_ref()
            .map(|m| format!(", machine {m}"))
            .unwrap_or_default(),
        r.overall_result
            .as_ref()
            .map(|m| format!(", result {m}"))
            .unwrap_or_default()
    );
    if let (Some(a), Some(t)) = (r.achieved_iops_typed, r.target_iops) {
        text.push_str(&format!(
            "  achieved {a} of {t} target transactional IOPS\n"
        ));
    }
    for (name, n) in [
        ("transactional I/O rows", r.transactional.len()),
        ("total I/O rows", r.total.len()),
        ("background maintenance rows", r.bdm.len()),
        ("log replication rows", r.log_replication.len()),
        ("backup rows", r.backup.len()),
        ("soft recovery rows", r.soft_recovery.len()),
    ] {
        if n > 0 {
            text.push_str(&format!("  {n} {name}\n"));
        }
    }
    for d in &r.discrepancies {
        text.push_str(&format!("  discrepancy: {d}\n"));
    }
    for f in &r.flags {
        text.push_str(&format!("  warning: {}\n", f.message));
    }
    for w in &r.warnings {
        text.push_str(&format!("  damaged input: {w}\n"));
    }
    text
}
