//! The ESRP summary across servers (jetstress-model.md section 9, verified against D2):
//! per server, from the Transactional I/O table, transfers/s = sum of reads/s + writes/s, reads/s
//! and writes/s are sums, read and write latency are unweighted means over instances, log
//! writes/s is a sum and log write latency a mean. The aggregate sums the server sums and
//! averages the server means. Backup: MB/s per database = the Avg row, per server = the Sum row.
//! Soft recovery: seconds per log = average elapsed / average logs replayed.

use std::path::Path;

use serde::Serialize;

use crate::import::{import_text, ImportError, ImportedReport, InstanceIo};

/// Figures of one server (or of the aggregate).
#[derive(Debug, Clone, PartialEq, Serialize, Default)]
pub struct ServerFigures {
    /// Machine name (or "aggregate").
    pub machine: String,
    /// Database transfers per second.
    pub db_transfers_per_s: f64,
    /// Database reads per second.
    pub db_reads_per_s: f64,
    /// Database writes per second.
    pub db_writes_per_s: f64,
    /// Average database read latency, ms.
    pub db_read_avg_latency_ms: f64,
    /// Average database write latency, ms.
    pub db_write_avg_latency_ms: f64,
    /// Log writes per second.
    pub log_writes_per_s: f64,
    /// Average log write latency, ms.
    pub log_write_avg_latency_ms: f64,
    /// The file it came from.
    pub source: String,
}

/// Backup figures of one server.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct BackupFigures {
    /// Machine or file.
    pub source: String,
    /// MB/s per database (the Avg row).
    pub mb_per_s_per_database: f64,
    /// MB/s per server (the Sum row).
    pub mb_per_s_per_server: f64,
}

/// Soft recovery figures of one server.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct SoftRecoveryFigures {
    /// Machine or file.
    pub source: String,
    /// Average seconds to replay one log file.
    pub seconds_per_log: f64,
}

/// `mbxstress esrp --json`.
#[derive(Debug, Clone, PartialEq, Serialize, Default)]
pub struct EsrpSummary {
    /// Per server (performance inputs).
    pub servers: Vec<ServerFigures>,
    /// Across servers.
    pub aggregate: Option<ServerFigures>,
    /// Backup inputs.
    pub backup: Vec<BackupFigures>,
    /// Soft recovery inputs.
    pub soft_recovery: Vec<SoftRecoveryFigures>,
    /// Typed summaries in the inputs that disagree with their own per-instance data.
    pub discrepancies: Vec<String>,
}

fn mean(v: impl Iterator<Item = f64>) -> f64 {
    let (s, n) = v.fold((0.0, 0usize), |(s, n), x| (s + x, n + 1));
    if n == 0 {
        0.0
    } else {
        s / n as f64
    }
}

/// One server's figures from its instances' transactional rows.
pub fn server_figures(machine: &str, source: &str, inst: &[InstanceIo]) -> ServerFigures {
    let reads: f64 = inst.iter().map(|i| i.io.db_reads_per_s).sum();
    let writes: f64 = inst.iter().map(|i| i.io.db_writes_per_s).sum();
    ServerFigures {
        machine: machine.to_string(),
        db_transfers_per_s: reads + writes,
        db_reads_per_s: reads,
        db_writes_per_s: writes,
        db_read_avg_latency_ms: mean(inst.iter().map(|i| i.io.db_read_avg_latency_ms)),
        db_write_avg_latency_ms: mean(inst.iter().map(|i| i.io.db_write_avg_latency_ms)),
        log_writes_per_s: inst.iter().map(|i| i.io.log_writes_per_s).sum(),
        log_write_avg_latency_ms: mean(inst.iter().map(|i| i.io.log_write_avg_latency_ms)),
        source: source.to_string(),
    }
}

/// An input file: an mbxstress result.json or a Jetstress report as text.
pub fn load(path: &Path) -> Result<ImportedReport, ImportError> {
    let text = std::fs::read_to_string(path).map_err(|error| ImportError::Read {
        path: path.to_path_buf(),
        error,
    })?;
    if text.trim_start().starts_with('{') {
        return from_result_json(&text, path);
    }
    import_text(&text, path)
}

/// Reads an mbxstress `result.json` into the same model as an imported report.
fn from_result_json(text: &str, path: &Path) -> Result<ImportedReport, ImportError> {
    let bad = |reason: String| ImportError::Malformed {
        path: path.to_path_buf(),
        table: "result.json".into(),
        row: "-".into(),
        reason,
    };
    let v: serde_json::Value =
        serde_json::from_str(text).map_err(|e| bad(format!("not valid JSON: {e}")))?;
    if v["schema"] != "mbxstress.result/1" {
        return Err(bad(
            "not an mbxstress result (schema mbxstress.result/1)".into()
        ));
    }
    let instances = v["instances"]
        .as_array()
        .ok_or_else(|| bad("no instances".into()))?;
    let mut r = ImportedReport {
        source: path.display().to_string(),
        kind: v["test"]["type"].as_str().unwrap_or("unknown").to_string(),
        machine: v["test"]["machine"].as_str().map(str::to_string),
        achieved_iops_typed: v["achieved_iops"].as_f64(),
        target_iops: v["target_iops"].as_f64(),
        ..Default::default()
    };
    for (k, i) in instances.iter().enumerate() {
        let io = serde_json::from_value(i["transactional"].clone())
            .map_err(|e| bad(format!("instance {}: {e}", k + 1)))?;
        r.transactional.push(InstanceIo {
            instance: i["name"].as_str().unwrap_or("?").to_string(),
            io,
        });
    }
    Ok(r)
}

/// Summarizes loaded inputs.
pub fn summarize(inputs: &[ImportedReport]) -> EsrpSummary {
    let mut s = EsrpSummary::default();
    for r in inputs {
        let machine = r.machine.clone().unwrap_or_else(|| r.source.clone());
        // Only Performance tests feed the performance summary: backup and soft recovery reports
        // carry a Transactional I/O table of their own (the I/O during that test), and stress
        // tests are summarized separately in ESRP.
        if !r.transactional.is_empty() && matches!(r.kind.as_str(), "performance" | "unknown") {
            s.servers
                .push(server_figures(&machine, &r.source, &r.transactional));
        }
        if !r.backup.is_empty() {
            let n = r.backup.len() as f64;
            let sum: f64 = r.backup.iter().map(|b| b.mb_per_s).sum();
            s.backup.push(BackupFigures {
                source: machine.clone(),
                mb_per_s_per_database: r.backup_avg_typed.unwrap_or(sum / n),
                mb_per_s_per_server: r.backup_sum_typed.unwrap_or(sum),
            });
        }
        if !r.soft_recovery.is_empty() {
            let n = r.soft_recovery.len() as f64;
            let (logs, secs) = r.soft_recovery_avg_typed.unwrap_or((
                r.soft_recovery
                    .iter()
                    .map(|x| x.log_files_replayed)
                    .sum::<f64>()
                    / n,
                r.soft_recovery.iter().map(|x| x.elapsed_s).sum::<f64>() / n,
            ));
            s.soft_recovery.push(SoftRecoveryFigures {
                source: machine.clone(),
                seconds_per_log: if logs > 0.0 { secs / logs } else { 0.0 },
            });
        }
        s.discrepancies
            .extend(r.discrepancies.iter().map(|d| format!("{}: {d}", r.source)));
    }
    if !s.servers.is_empty() {
        let sv = &s.servers;
        s.aggregate = Some(ServerFigures {
            machine: "aggregate".into(),
            db_transfers_per_s: sv.iter().map(|x| x.db_transfers_per_s).sum(),
            db_reads_per_s: sv.iter().map(|x| x.db_reads_per_s).sum(),
            db_writes_per_s: sv.iter().map(|x| x.db_writes_per_s).sum(),
            db_read_avg_latency_ms: mean(sv.iter().map(|x| x.db_read_avg_latency_ms)),
            db_write_avg_latency_ms: mean(sv.iter().map(|x| x.db_write_avg_latency_ms)),
            log_writes_per_s: sv.iter().map(|x| x.log_writes_per_s).sum(),
            log_write_avg_latency_ms: mean(sv.iter().map(|x| x.log_write_avg_latency_ms)),
            source: format!("{} servers", sv.len()),
        });
    }
    s
}
