//! Writes a run's HTML report and CSV files from its result folder.

use std::path::{Path, PathBuf};

use mbx_engine::result::RunResult;

use crate::flags::{result_flags, Flag};
use crate::input::{
    for_each_line, read_bounded, read_head, InputError, LOG_LIMIT, REPORT_LIMIT, SAMPLES_LIMIT,
};

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
    /// A file is not a readable regular file of a sensible size, or not UTF-8 text.
    #[error(transparent)]
    Input(#[from] InputError),
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

/// A result folder as read from disk.
#[derive(Debug)]
pub struct RunFolder {
    /// result.json.
    pub result: RunResult,
    /// The lines of samples.jsonl (empty if there is none).
    pub samples: Vec<serde_json::Value>,
    /// The lines of test.log (empty if there is none).
    pub log: Vec<String>,
    /// The folder.
    pub dir: PathBuf,
    /// Why the result is not a complete, passing measurement (empty if it is).
    pub flags: Vec<Flag>,
}

/// Reads a result folder: result.json, and samples.jsonl and test.log if present. Each file must
/// be a regular file within its limit ([`REPORT_LIMIT`], [`SAMPLES_LIMIT`], [`LOG_LIMIT`]).
pub fn load_run(input: &Path) -> Result<RunFolder, ReportError> {
    let (dir, result_path) = locate(input);
    let text = read_bounded(&result_path, REPORT_LIMIT, "an mbxstress result.json")?;
    let invalid = |e: serde_json::Error| ReportError::Invalid {
        path: result_path.clone(),
        reason: format!("not an mbxstress result ({e})"),
    };
    // Parsed from the text (errors then give line and column), and once more as JSON for the
    // flags, which also read keys that this version's RunResult may not have.
    let result: RunResult = serde_json::from_str(&text).map_err(invalid)?;
    let flags = result_flags(&serde_json::from_str(&text).map_err(invalid)?);
    drop(text);

    let mut samples = Vec::new();
    let samples_path = dir.join(&result.samples_file);
    let read = for_each_line(
        &samples_path,
        SAMPLES_LIMIT,
        "the samples of a run (samples.jsonl)",
        |n, line| {
            if !line.trim().is_empty() {
                samples.push(
                    serde_json::from_str(line).map_err(|e| ReportError::Invalid {
                        path: samples_path.clone(),
                        reason: format!("line {n}: {e}"),
                    })?,
                );
            }
            Ok(())
        },
    );
    skip_if_absent(read)?;

    let mut log = Vec::new();
    let read = for_each_line(
        &dir.join(&result.log_file),
        LOG_LIMIT,
        "the log of a run (test.log)",
        |_, line| {
            log.push(line.to_string());
            Ok::<_, ReportError>(())
        },
    );
    skip_if_absent(read)?;
    Ok(RunFolder {
        result,
        samples,
        log,
        dir,
        flags,
    })
}

/// An optional file that does not exist is not an error.
fn skip_if_absent(read: Result<(), ReportError>) -> Result<(), ReportError> {
    match read {
        Err(ReportError::Input(e)) if e.is_not_found() => Ok(()),
        other => other,
    }
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
    write_report_with_flags(input, out).map(|(files, _)| files)
}

/// [`write_report`], also returning the result's flags (shown as a banner in report.html) so the
/// caller can warn about them too.
pub fn write_report_with_flags(
    input: &Path,
    out: Option<&Path>,
) -> Result<(Vec<PathBuf>, Vec<Flag>), ReportError> {
    let RunFolder {
        result,
        samples,
        log,
        dir,
        flags,
    } = load_run(input)?;
    let out = out.map(Path::to_path_buf).unwrap_or(dir);
    std::fs::create_dir_all(&out).map_err(|error| ReportError::Write {
        path: out.clone(),
        error,
    })?;
    let html_path = out.join("report.html");
    // Ours has the generator tag in its first few hundred bytes; anything else that exists there
    // (another file, a directory, a FIFO) is not overwritten.
    match read_head(&html_path, 4096, "an mbxstress report.html") {
        Err(e) if e.is_not_found() => {}
        Ok(head)
            if String::from_utf8_lossy(&head)
                .contains("<meta name=\"generator\" content=\"mbxstress\">") => {}
        _ => {
            return Err(ReportError::Invalid {
                path: html_path,
                reason:
                    "exists and was not written by mbxstress; remove it or choose another --out"
                        .into(),
            })
        }
    }
    write(
        &html_path,
        crate::html::render(&result, &samples, &log, &flags).as_bytes(),
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
    Ok((vec![html_path, inst_path, samples_path], flags))
}
