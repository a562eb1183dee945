//! Exporters: one trait, one implementation per output file, as hyperfine's exporters are. Each
//! renders a [`RunFolder`] (the typed result, samples and log), or find-max's answer, into the
//! bytes of one file; [`export`] writes any set of them into a folder, atomically (temporary file
//! + rename), each checking first that what it would replace may be replaced. The CLI's `report
//! --format`, `run` and `find-max` go through them.

use std::path::{Path, PathBuf};

use crate::columns::IO12_COLUMNS;
use crate::folder::{ReportError, RunFolder};
use crate::input::read_head;

/// Renders one input (a run's folder by default; find-max's answer) into one file.
pub trait Exporter<T: ?Sized = RunFolder> {
    /// The file written in the output folder ("report.html").
    fn file_name(&self) -> &'static str;

    /// The file's bytes. `path` (where they will go) only names the file in errors.
    fn render(&self, run: &T, path: &Path) -> Result<Vec<u8>, ReportError>;

    /// Refuses to replace what is at `path` when it is not this exporter's to replace. The
    /// default replaces a file of the same name (the CSV files of an earlier report).
    fn check_destination(&self, path: &Path) -> Result<(), ReportError> {
        let _ = path;
        Ok(())
    }

    /// Whether this run has anything for this file (a Performance result has no backup rows);
    /// [`export`] skips the file otherwise.
    fn applies(&self, run: &T) -> bool {
        let _ = run;
        true
    }
}

/// The output formats (`mbxstress report --format`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[cfg_attr(feature = "clap", derive(clap::ValueEnum))]
pub enum Format {
    /// report.html: Jetstress's sections, verdict, percentiles, charts, configuration.
    Html,
    /// instances.csv (the 12 columns per instance), samples.csv (one row per sample and
    /// instance), backup.csv and checksum.csv (the rows of those tests, for their results only).
    Csv,
    /// result.json, as the typed model writes it (never over an existing file).
    Json,
}

impl Format {
    /// What `report` writes unless told otherwise (and what `run` writes after result.json).
    pub const DEFAULT: [Format; 2] = [Format::Html, Format::Csv];

    /// The exporters of this format.
    pub fn exporters(self) -> Vec<Box<dyn Exporter>> {
        match self {
            Format::Html => vec![Box::new(HtmlExporter)],
            Format::Csv => vec![
                Box::new(InstancesCsvExporter),
                Box::new(SamplesCsvExporter),
                Box::new(BackupCsvExporter),
                Box::new(ChecksumCsvExporter),
            ],
            Format::Json => vec![Box::new(JsonExporter)],
        }
    }
}

/// Renders each exporter's file and writes it into `out` (created if needed). Returns the files
/// written. Every destination is checked before anything is written.
pub fn export<T: ?Sized>(
    run: &T,
    out: &Path,
    exporters: &[Box<dyn Exporter<T>>],
) -> Result<Vec<PathBuf>, ReportError> {
    std::fs::create_dir_all(out).map_err(|error| ReportError::Write {
        path: out.to_path_buf(),
        error,
    })?;
    let exporters: Vec<&Box<dyn Exporter<T>>> =
        exporters.iter().filter(|e| e.applies(run)).collect();
    let paths: Vec<PathBuf> = exporters.iter().map(|e| out.join(e.file_name())).collect();
    for (e, path) in exporters.iter().zip(&paths) {
        e.check_destination(path)?;
    }
    for (e, path) in exporters.iter().zip(&paths) {
        write_atomic(path, &e.render(run, path)?)?;
    }
    Ok(paths)
}

/// Writes a run's result.json at `path`, replacing the one written as the run started (a run
/// owns its result folder: [`JsonExporter`], which never replaces a file, is for other folders).
/// Atomic and durable, as [`write_atomic`]: after a crash the file is the old one or the new one,
/// whole.
pub fn write_result(path: &Path, result: &mbx_result::RunResult) -> Result<(), ReportError> {
    write_atomic(path, &result_bytes(result, path)?)
}

/// Writes atomically and durably through `mbx_config::atomic` (a temporary file, fsync, rename,
/// fsync of the folder), naming the file in the error.
pub(crate) fn write_atomic(path: &Path, bytes: &[u8]) -> Result<(), ReportError> {
    mbx_config::atomic::write_atomic(path, bytes).map_err(|error| ReportError::Write {
        path: path.to_path_buf(),
        error,
    })
}

/// report.html ([`crate::html::render`]).
#[derive(Debug, Clone, Copy)]
pub struct HtmlExporter;

impl Exporter for HtmlExporter {
    fn file_name(&self) -> &'static str {
        "report.html"
    }

    fn render(&self, run: &RunFolder, _path: &Path) -> Result<Vec<u8>, ReportError> {
        Ok(crate::html::render(run).into_bytes())
    }

    fn check_destination(&self, path: &Path) -> Result<(), ReportError> {
        check_ours_html(path, "an mbxstress report.html")
    }
}

/// Ours has the generator tag in its first few hundred bytes; anything else that exists there
/// (another file, a directory, a FIFO) is not overwritten.
pub(crate) fn check_ours_html(path: &Path, what: &'static str) -> Result<(), ReportError> {
    match read_head(path, 4096, what) {
        Err(e) if e.is_not_found() => Ok(()),
        Ok(head)
            if String::from_utf8_lossy(&head)
                .contains("<meta name=\"generator\" content=\"mbxstress\">") =>
        {
            Ok(())
        }
        _ => Err(ReportError::Invalid {
            path: path.to_path_buf(),
            reason: "exists and was not written by mbxstress; remove it or choose another --out"
                .into(),
        }),
    }
}

/// find-max.html ([`crate::html::render_find_max`]): the answer and the curve of steps.
#[derive(Debug, Clone, Copy)]
pub struct FindMaxHtmlExporter;

impl Exporter<mbx_result::FindMax> for FindMaxHtmlExporter {
    fn file_name(&self) -> &'static str {
        "find-max.html"
    }

    fn render(&self, f: &mbx_result::FindMax, _path: &Path) -> Result<Vec<u8>, ReportError> {
        Ok(crate::html::render_find_max(f).into_bytes())
    }

    fn check_destination(&self, path: &Path) -> Result<(), ReportError> {
        check_ours_html(path, "an mbxstress find-max.html")
    }
}

/// find-max.json: the answer, pretty-printed, with a final newline (replaced by a search in the
/// same results folder).
#[derive(Debug, Clone, Copy)]
pub struct FindMaxJsonExporter;

impl Exporter<mbx_result::FindMax> for FindMaxJsonExporter {
    fn file_name(&self) -> &'static str {
        "find-max.json"
    }

    fn render(&self, f: &mbx_result::FindMax, path: &Path) -> Result<Vec<u8>, ReportError> {
        let mut bytes = serde_json::to_vec_pretty(f).map_err(|e| ReportError::Invalid {
            path: path.to_path_buf(),
            reason: format!("cannot serialize find-max's answer: {e}"),
        })?;
        bytes.push(b'\n');
        Ok(bytes)
    }
}

/// result.json: the typed result, pretty-printed. Never replaces a file: in a result folder that
/// file is the source itself.
#[derive(Debug, Clone, Copy)]
pub struct JsonExporter;

impl Exporter for JsonExporter {
    fn file_name(&self) -> &'static str {
        "result.json"
    }

    fn render(&self, run: &RunFolder, path: &Path) -> Result<Vec<u8>, ReportError> {
        result_bytes(&run.result, path)
    }

    fn check_destination(&self, path: &Path) -> Result<(), ReportError> {
        refuse_existing_result(path)
    }
}

/// A result.json is never overwritten: anything at `path` is refused.
pub(crate) fn refuse_existing_result(path: &Path) -> Result<(), ReportError> {
    // symlink_metadata: a dangling link is something there too.
    if std::fs::symlink_metadata(path).is_ok() {
        return Err(ReportError::Invalid {
            path: path.to_path_buf(),
            reason: "exists (a result is never overwritten); choose another --out".into(),
        });
    }
    Ok(())
}

/// result.json's bytes: the typed result, pretty-printed, with a final newline.
pub(crate) fn result_bytes(
    result: &impl serde::Serialize,
    path: &Path,
) -> Result<Vec<u8>, ReportError> {
    let mut bytes = serde_json::to_vec_pretty(result).map_err(|e| ReportError::Invalid {
        path: path.to_path_buf(),
        reason: format!("cannot serialize the result: {e}"),
    })?;
    bytes.push(b'\n');
    Ok(bytes)
}

pub(crate) fn csv_bytes(rows: Vec<Vec<String>>, path: &Path) -> Result<Vec<u8>, ReportError> {
    let invalid = |e: &dyn std::fmt::Display| ReportError::Invalid {
        path: path.to_path_buf(),
        reason: e.to_string(),
    };
    let mut w = csv::Writer::from_writer(Vec::new());
    for r in rows {
        w.write_record(&r).map_err(|e| invalid(&e))?;
    }
    w.into_inner().map_err(|e| invalid(&e))
}

/// instances.csv: per instance, the transactional and total rows of the 12 Jetstress columns,
/// with BDM and log replication.
#[derive(Debug, Clone, Copy)]
pub struct InstancesCsvExporter;

/// The extra columns of instances.csv, after the 12.
pub const INSTANCES_CSV_EXTRA: [&str; 4] = [
    "bdm_reads_per_s",
    "bdm_read_avg_bytes",
    "log_replication_reads_per_s",
    "log_replication_read_avg_bytes",
];

impl Exporter for InstancesCsvExporter {
    fn file_name(&self) -> &'static str {
        "instances.csv"
    }

    fn render(&self, run: &RunFolder, path: &Path) -> Result<Vec<u8>, ReportError> {
        let mut header = vec!["instance".to_string(), "table".to_string()];
        header.extend(IO12_COLUMNS.iter().map(|s| s.to_string()));
        header.extend(INSTANCES_CSV_EXTRA.map(String::from));
        let mut rows = vec![header];
        for i in &run.result.instances {
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
        csv_bytes(rows, path)
    }
}

/// backup.csv: the Database Backup rows (result.json's `backup[]`), then the Avg and Sum rows.
#[derive(Debug, Clone, Copy)]
pub struct BackupCsvExporter;

/// The columns of backup.csv (the keys of `backup[]`).
pub const BACKUP_CSV_COLUMNS: [&str; 4] = ["instance", "database_size_mb", "elapsed_s", "mb_per_s"];

impl Exporter for BackupCsvExporter {
    fn file_name(&self) -> &'static str {
        "backup.csv"
    }

    fn applies(&self, run: &RunFolder) -> bool {
        !run.result.sections.backup.is_empty()
    }

    fn render(&self, run: &RunFolder, path: &Path) -> Result<Vec<u8>, ReportError> {
        let s = &run.result.sections;
        let mut rows = vec![BACKUP_CSV_COLUMNS.map(String::from).to_vec()];
        for b in &s.backup {
            rows.push(vec![
                b.instance.clone(),
                format!("{:.3}", b.database_size_mb),
                format!("{:.3}", b.elapsed_s),
                format!("{:.3}", b.mb_per_s),
            ]);
        }
        for (name, v) in [
            ("Avg", s.backup_avg_mb_per_s),
            ("Sum", s.backup_sum_mb_per_s),
        ] {
            if let Some(v) = v {
                rows.push(vec![
                    name.into(),
                    String::new(),
                    String::new(),
                    format!("{v:.3}"),
                ]);
            }
        }
        csv_bytes(rows, path)
    }
}

/// checksum.csv: the checksum rows (result.json's `checksum[]`).
#[derive(Debug, Clone, Copy)]
pub struct ChecksumCsvExporter;

/// The columns of checksum.csv (the keys of `checksum[]`).
pub const CHECKSUM_CSV_COLUMNS: [&str; 7] = [
    "database_path",
    "seen_pages",
    "bad_pages",
    "correctable_pages",
    "wrong_page_number_pages",
    "bytes",
    "elapsed_s",
];

impl Exporter for ChecksumCsvExporter {
    fn file_name(&self) -> &'static str {
        "checksum.csv"
    }

    fn applies(&self, run: &RunFolder) -> bool {
        !run.result.sections.checksum.is_empty()
    }

    fn render(&self, run: &RunFolder, path: &Path) -> Result<Vec<u8>, ReportError> {
        let mut rows = vec![CHECKSUM_CSV_COLUMNS.map(String::from).to_vec()];
        for c in &run.result.sections.checksum {
            rows.push(vec![
                c.database_path.clone(),
                c.seen_pages.to_string(),
                c.bad_pages.to_string(),
                c.correctable_pages.to_string(),
                c.wrong_page_number_pages.to_string(),
                c.bytes.to_string(),
                format!("{:.3}", c.elapsed_s),
            ]);
        }
        csv_bytes(rows, path)
    }
}

/// samples.csv: one row per sample and instance.
#[derive(Debug, Clone, Copy)]
pub struct SamplesCsvExporter;

/// The columns of samples.csv (a contract: scripts read them by name).
pub const SAMPLES_CSV_COLUMNS: [&str; 19] = [
    "sample",
    "timestamp",
    "instance",
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
    "host_cpu_pct",
    "host_available_mb",
];

impl Exporter for SamplesCsvExporter {
    fn file_name(&self) -> &'static str {
        "samples.csv"
    }

    fn render(&self, run: &RunFolder, path: &Path) -> Result<Vec<u8>, ReportError> {
        let mut rows = vec![SAMPLES_CSV_COLUMNS.map(String::from).to_vec()];
        for (n, s) in run.samples.iter().enumerate() {
            for i in &s.instances {
                let mut r = vec![(n + 1).to_string(), s.timestamp.clone(), i.name.clone()];
                r.extend(
                    [
                        i.db_reads_per_s,
                        i.db_writes_per_s,
                        i.db_read_avg_latency_ms,
                        i.db_write_avg_latency_ms,
                        i.db_read_avg_bytes,
                        i.db_write_avg_bytes,
                        i.log_writes_per_s,
                        i.log_write_avg_latency_ms,
                        i.log_write_avg_bytes,
                        i.log_reads_per_s,
                        i.bdm_reads_per_s,
                        i.transactions_per_s,
                        i.page_fault_stalls_per_s,
                        i.cache_fill,
                        s.host.cpu_pct,
                    ]
                    .map(|v| format!("{v:.3}")),
                );
                r.push(format!("{:.1}", s.host.available_mb));
                rows.push(r);
            }
        }
        csv_bytes(rows, path)
    }
}
