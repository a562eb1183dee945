//! `mbxstress esrp`: the ESRP summary across servers.

use std::io::Write;
use std::process::ExitCode;

use anyhow::Context;

use crate::cli::EsrpArgs;

pub fn run(args: EsrpArgs) -> anyhow::Result<ExitCode> {
    let inputs = args
        .files
        .iter()
        .map(|f| mbx_report::load(f))
        .collect::<Result<Vec<_>, _>>()?;
    let s = mbx_report::summarize(&inputs);
    let warnings: Vec<String> = s
        .warnings
        .iter()
        .map(|w| format!("warning: {}: {}", w.source, w.message))
        .collect();
    let mut out = std::io::stdout().lock();
    if args.json {
        // The JSON carries them in `warnings` and per server in `flags`; people watching see them.
        for w in &warnings {
            eprintln!("{w}");
        }
        serde_json::to_writer_pretty(&mut out, &s).context("writing JSON to stdout")?;
        writeln!(out).context("writing to stdout")?;
        return Ok(ExitCode::SUCCESS);
    }
    let mut text = String::new();
    if !s.servers.is_empty() {
        text.push_str(&format!(
            "{:<24} {:>12} {:>10} {:>10} {:>12} {:>12} {:>10} {:>12}\n",
            "server",
            "transfers/s",
            "reads/s",
            "writes/s",
            "read ms",
            "write ms",
            "log w/s",
            "log w ms"
        ));
        for f in s.servers.iter().chain(s.aggregate.iter()) {
            // A flagged row (or an aggregate that sums one) is marked; the warnings say why.
            let mark = if f.flags.is_empty() { "" } else { " *" };
            text.push_str(&format!(
                "{:<24} {:>12.2} {:>10.2} {:>10.2} {:>12.2} {:>12.2} {:>10.2} {:>12.4}\n",
                format!("{}{mark}", f.machine),
                f.db_transfers_per_s,
                f.db_reads_per_s,
                f.db_writes_per_s,
                f.db_read_avg_latency_ms,
                f.db_write_avg_latency_ms,
                f.log_writes_per_s,
                f.log_write_avg_latency_ms
            ));
        }
    }
    for b in &s.backup {
        text.push_str(&format!(
            "backup {}: {:.2} MB/s per database (Avg), {:.2} MB/s per server (Sum)\n",
            b.source, b.mb_per_s_per_database, b.mb_per_s_per_server
        ));
    }
    for r in &s.soft_recovery {
        text.push_str(&format!(
            "soft recovery {}: {:.2} s per log (average elapsed / average logs replayed)\n",
            r.source, r.seconds_per_log
        ));
    }
    for d in &s.discrepancies {
        text.push_str(&format!("discrepancy: {d}\n"));
    }
    for w in &warnings {
        text.push_str(&format!("{w}\n"));
    }
    let flagged = s.servers.iter().filter(|f| !f.flags.is_empty()).count();
    if flagged > 0 && s.aggregate.is_some() {
        text.push_str(&format!(
            "warning: the aggregate includes {flagged} of {} server results that are not complete, passing measurements (marked *)\n",
            s.servers.len()
        ));
    }
    write!(out, "{text}").context("writing to stdout")?;
    Ok(ExitCode::SUCCESS)
}
