//! `mbxstress import`: a Jetstress report's tables into our model.

use std::io::Write;
use std::process::ExitCode;

use anyhow::Context;

use crate::cli::ImportArgs;

pub fn run(args: ImportArgs) -> anyhow::Result<ExitCode> {
    let r = mbx_report::import_file(&args.file)?;
    let mut out = std::io::stdout().lock();
    if args.json {
        serde_json::to_writer_pretty(&mut out, &r).context("writing JSON to stdout")?;
        writeln!(out).context("writing to stdout")?;
        return Ok(ExitCode::SUCCESS);
    }
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
    write!(out, "{text}").context("writing to stdout")?;
    Ok(ExitCode::SUCCESS)
}
