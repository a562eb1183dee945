//! The ESRP summary's inputs and its text (`mbxstress esrp`, and esrp.txt of a suite).

use std::path::{Path, PathBuf};

use crate::AppError;

/// The folders of a `run --test suite` folder that the ESRP summary reads, in order.
pub const SUITE_ESRP_FOLDERS: [&str; 3] = ["1-performance", "3-backup", "4-soft-recovery"];

/// The files an argument stands for: a file as itself, a result folder for its result.json, a
/// suite folder for the result.json of its Performance, Backup and Soft Recovery folders. Inside
/// a folder nothing is followed through a symbolic link (a linked result.json or test folder is
/// refused, naming it).
fn inputs_of(path: &Path) -> Result<Vec<PathBuf>, AppError> {
    if !path.is_dir() {
        return Ok(vec![path.to_path_buf()]);
    }
    match mbx_report::report::folder_result(path) {
        Ok(own) => return Ok(vec![own]),
        Err(e) if e.is_not_found() => {}
        Err(e) => return Err(e.into()),
    }
    let mut found = Vec::new();
    for f in SUITE_ESRP_FOLDERS {
        match mbx_report::input::folder_file(
            path,
            &format!("{f}/result.json"),
            "an mbxstress result.json",
        ) {
            Ok(p) => found.push(p),
            Err(e) if e.is_not_found() => {}
            Err(e) => return Err(e.into()),
        }
    }
    if found.is_empty() {
        return Err(AppError::usage(format!(
            "{} holds no result.json, nor the {} folders of a suite",
            path.display(),
            SUITE_ESRP_FOLDERS.join(", ")
        )));
    }
    Ok(found)
}

/// Reads the files (see [`inputs_of`]).
pub fn load_all(paths: &[PathBuf]) -> Result<Vec<mbx_report::ImportedReport>, AppError> {
    let mut inputs = Vec::new();
    for p in paths {
        for f in inputs_of(p)? {
            // A text file may hold several Jetstress reports: each is an input of its own.
            inputs.extend(mbx_report::import::load_each(&f)?);
        }
    }
    Ok(inputs)
}

/// The summary's warnings, one line each.
pub fn warnings(s: &mbx_report::EsrpSummary) -> Vec<String> {
    s.warnings
        .iter()
        .map(|w| format!("warning: {}: {}", w.source, w.message))
        .collect()
}

/// The summary as text: the performance table (servers and aggregate), the backup and soft
/// recovery lines, discrepancies and warnings.
pub fn text(s: &mbx_report::EsrpSummary) -> String {
    let warnings = warnings(s);
    let mut text = String::new();
    if !s.servers.is_empty() {
        table(&mut text, s.servers.iter().chain(s.aggregate.iter()));
    }
    if !s.stress.is_empty() {
        text.push_str(
            "stress (per server; ESRP reports the Stress test apart from the Performance test, so it is not in the aggregate):\n",
        );
        table(&mut text, s.stress.iter());
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
    for x in &s.excluded {
        text.push_str(&format!(
            "excluded: {} ({}): {}\n",
            x.source, x.machine, x.message
        ));
    }
    let flagged = s.servers.iter().filter(|f| !f.flags.is_empty()).count();
    if flagged > 0 && s.aggregate.is_some() {
        text.push_str(&format!(
            "warning: the aggregate includes {flagged} of {} server results that are not complete, passing measurements (marked *)\n",
            s.servers.len()
        ));
    }
    text
}

/// The server table: a header, then a row per server. A flagged row (or an aggregate that sums
/// one) is marked; the warnings say why.
fn table<'a>(text: &mut String, rows: impl Iterator<Item = &'a mbx_report::esrp::ServerFigures>) {
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
    for f in rows {
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
