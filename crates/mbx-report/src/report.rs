//! Writes a run's HTML report and CSV files from its result folder.

use std::path::{Path, PathBuf};

use mbx_engine::result::RunResult;

/// Errors writing a report; each names the file. Messages are complete: the OS error is part of
/// the message, not also a `source()`, so an error chain shows it once.
#[derive(Debug, thiserror::Error)]
pub enum ReportError {
    /// A file could not be read.
    #[error("cannot read {}: {error}", path.display())]
    Read {
        /// The file.
        path: PathBuf,
        /// The OS error: part of the message, deliberately not a `source()`.
        error: std::io::Error,
    },
    /// A file is not what it should be.
    #[error("{}: {reason}", path.display())]
    Invalid {
        /// The file.
        path: PathBuf,
        /// What is wrong.
        reason: String,
    },
    /// A file could not be written.
    #[error("cannot write {}: {error}", path.display())]
    Write {
        /// The file.
        path: PathBuf,
        /// The OS error: part of the message, deliberately not a `source()`.
        error: std::io::Error,
    },
}

impl ReportError {
    /// True when the input (not the machine) is at fault: exit code 2.
    pub fn is_user_error(&self) -> bool {
        !matches!(self, ReportError::Write { .. })
    }
}

fn read(path: &Path) -> Result<String, ReportError> {
    std::fs::read_to_string(path).map_err(|error| ReportError::Read {
        path: path.to_path_buf(),
        error,
    })
}

/// The result folder and result.json for an input that is either.
pub fn locate(input: &Path) -> (PathBuf, PathBuf) {
    if input.is_dir() {
        (input.to_path_buf(), input.join("result.json"))
    } else {
        let dir = input
            .parent()
            .filter(|p| !p.as_os_str().is_empty())
            .unwrap_or(Path::new("."))
            .to_path_buf();
        (dir, input.to_path_buf())
    }
}

/// Reads a result folder (result.json, and samples.jsonl and test.log if present).
pub fn load_run(
    input: &Path,
) -> Result<(RunResult, Vec<serde_json::Value>, Vec<String>, PathBuf), ReportError> {
    let (dir, result_path) = locate(input);
    let text = read(&result_path)?;
    let result: RunResult = serde_json::from_str(&text).map_err(|e| ReportError::Invalid {
        path: result_path.clone(),
        reason: format!("not an mbxstress result ({e})"),
    })?;
    let mut samples = Vec::new();
    let samples_path = dir.join(&result.samples_file);
    if let Ok(text) = std::fs::read_to_string(&samples_path) {
        for (n, line) in text
            .lines()
            .enumerate()
            .filter(|(_, l)| !l.trim().is_empty())
        {
            samples.push(
                serde_json::from_str(line).map_err(|e| ReportError::Invalid {
                    path: samples_path.clone(),
                    reason: format!("line {}: {e}", n + 1),
                })?,
            );
        }
    }
    let log = std::fs::read_to_string(dir.join(&result.log_file))
        .map(|t| t.lines().map(str::to_string).collect())
        .unwrap_or_default();
    Ok((result, samples, log, dir))
}

fn write(path: &Path, bytes: &[u8]) -> Result<(), ReportError> {
    let tmp = path.with_extension("tmp");
    std::fs::write(&tmp, bytes)
        .and_then(|_| std::fs::rename(&tmp, path))
        .map_err(|error| ReportError::Write {
            path: path.to_path_buf(),
            error,
        })
}

fn csv_bytes(rows: Vec<Vec<String>>, path: &Path) -> Result<Vec<u8>, ReportError> {
    let mut w = csv::Writer::from_writer(Vec::new());
    for r in rows {
        w.write_record(&r).map_err(|e| ReportError::Invalid {
            path: path.to_path_buf(),
            reason: e.to_string(),
        })?;
    }
    w.into_inner().map_err(|e| ReportError::Invalid {
        path: path.to_path_buf(),
        reason: e.to_string(),
    })
}

/// Writes report.html, instances.csv and samples.csv for the run at `input` (a result folder or
/// its result.json) into `out` (default: the result folder). Returns the files written.
pub fn write_report(input: &Path, out: Option<&Path>) -> Result<Vec<PathBuf>, ReportError> {
    let (result, samples, log, dir) = load_run(input)?;
    let out = out.map(Path::to_path_buf).unwrap_or(dir);
    std::fs::create_dir_all(&out).map_err(|error| ReportError::Write {
        path: out.clone(),
        error,
    })?;
    let html_path = out.join("report.html");
    if let Ok(existing) = std::fs::read_to_string(&html_path) {
        if !existing.contains("<meta name=\"generator\" content=\"mbxstress\">") {
            return Err(ReportError::Invalid {
                path: html_path,
                reason:
                    "exists and was not written by mbxstress; remove it or choose another --out"
                        .into(),
            });
        }
    }
    write(
        &html_path,
        crate::html::render(&result, &samples, &log).as_bytes(),
    )?;

    let inst_path = out.join("instances.csv");
    let mut rows = vec![{
        let mut h = vec!["instance".to_string(), "table".to_string()];
        h.extend(crate::html::IO12_COLUMNS.iter().map(|s| s.to_string()));
        h.extend(
            [
                "bdm_reads_per_s",
                "bdm_read_avg_bytes",
                "log_replication_reads_per_s",
                "log_replication_read_avg_bytes",
            ]
            .map(String::from),
        );
        h
    }];
    for i in &result.instances {
        for (table, io) in [("transactional", i.transactional), ("total", i.total)] {
            let mut r = vec![i.name.clone(), table.to_string()];
            r.extend(io.values().map(|v| format!("{v:.3}")));
            r.extend(
                [
                    i.bdm.reads_per_s,
                    i.bdm.read_avg_bytes,
                    i.log_replication.reads_per_s,
                    i.log_replication.read_avg_bytes,
                ]
                .map(|v| format!("{v:.3}")),
            );
            rows.push(r);
        }
    }
    write(&inst_path, &csv_bytes(rows, &inst_path)?)?;

    let samples_path = out.join("samples.csv");
    const KEYS: [&str; 14] = [
        "db_reads_per_s",
        "db_writes_per_s",
        "db_read_avg_latency_ms",
        "db_write_avg_latency_ms",
        "db_read_avg_bytes",
        "db_write_avg_bytes",
        "log_writes_per_s",
        "log_write_avg_latency_ms",
        "log_write_avg_bytes",
        "log_reads_per_s",
        "bdm_reads_per_s",
        "transactions_per_s",
        "page_fault_stalls_per_s",
        "cache_fill",
    ];
    let mut rows = vec![{
        let mut h = vec![
            "sample".to_string(),
            "timestamp".to_string(),
            "instance".to_string(),
        ];
        h.extend(KEYS.map(String::from));
        h.extend(["host_cpu_pct", "host_available_mb"].map(String::from));
        h
    }];
    for (n, s) in samples.iter().enumerate() {
        for i in s["instances"].as_array().into_iter().flatten() {
            let mut r = vec![
                (n + 1).to_string(),
                s["timestamp"].as_str().unwrap_or("").to_string(),
                i["name"].as_str().unwrap_or("").to_string(),
            ];
            r.extend(KEYS.map(|k| format!("{:.3}", i[k].as_f64().unwrap_or(0.0))));
            r.push(format!(
                "{:.3}",
                s["host"]["cpu_pct"].as_f64().unwrap_or(0.0)
            ));
            r.push(format!(
                "{:.1}",
                s["host"]["available_mb"].as_f64().unwrap_or(0.0)
            ));
            rows.push(r);
        }
    }
    write(&samples_path, &csv_bytes(rows, &samples_path)?)?;
    Ok(vec![html_path, inst_path, samples_path])
}
