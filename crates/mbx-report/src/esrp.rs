//! The ESRP summary across servers (docs/results.md, "`esrp` and `compare` output"; verified
//! against the published Dell EqualLogic PS6210E ESRP paper, D2 in docs/sizing.md):
//! per server, from the Transactional I/O table, transfers/s = sum of reads/s + writes/s, reads/s
//! and writes/s are sums, read and write latency are unweighted means over instances, log
//! writes/s is a sum and log write latency a mean. The aggregate sums the server sums and
//! averages the server means. Backup: MB/s per database = the Avg row, per server = the Sum row.
//! Soft recovery: seconds per log = average elapsed / average logs replayed. Where the input
//! states a summary (a report's Avg and Sum rows, a result's `backup_*_mb_per_s` and
//! `seconds_per_log`) it is used, as ESRP quotes it; otherwise it is computed from the rows. A
//! Jetstress report and an mbxstress result give the same rows ([`mbx_result::BackupRow`],
//! [`mbx_result::SoftRecoveryRow`]) and go through the same arithmetic.
//!
//! An input that is not a complete, passing measurement (interrupted, stopped, failed, or too
//! short to mean anything) is still summed, as the user asked, but never silently: it gets a
//! [`Warning`], its server row lists the flags, and the aggregate carries every flag of the
//! servers it sums.

use std::path::Path;

use serde::Serialize;

use mbx_result::{BackupRow, SoftRecoveryRow, TestKind};

use crate::import::{import_text, ImportError, ImportedReport, InstanceIo, REPORT_WHAT};
use crate::input::{read_bounded, REPORT_LIMIT};

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
    /// Codes of the input's flags (see [`crate::flags::Flag`]); for the aggregate, every code of
    /// the servers it sums. Empty for a complete, passing measurement.
    pub flags: Vec<&'static str>,
}

/// An input that is not a complete, passing measurement.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Warning {
    /// The file.
    pub source: String,
    /// The flag's code ("interrupted", "stopped", "unfinished", "verdict_failed", "too_short"), or
    /// "damaged_input" for damage met while importing a report's text.
    pub code: &'static str,
    /// What it means.
    pub message: String,
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

/// An input that is in none of the summary's sections, and why.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Exclusion {
    /// The file.
    pub source: String,
    /// The machine it names (or the file, if it names none).
    pub machine: String,
    /// Why: "duplicate" (the same measurement as an earlier input: the same file given twice, or
    /// another file with the same content), "no_instances" (a Performance or Stress input
    /// without one instance's transactional I/O: a run refused or stopped before measuring),
    /// "no_rows" (a Backup or Soft Recovery input without its test's rows), "not_summarized"
    /// (a test type ESRP does not summarize: Checksum).
    pub code: &'static str,
    /// What it means, in words.
    pub message: String,
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
    /// Stress inputs, per server: ESRP reports the Stress test apart from the Performance test,
    /// so they are never in `servers` or `aggregate`.
    pub stress: Vec<ServerFigures>,
    /// Inputs in none of the sections above, each with the reason. Every input is in a section
    /// or here.
    pub excluded: Vec<Exclusion>,
    /// Typed summaries in the inputs that disagree with their own per-instance data.
    pub discrepancies: Vec<String>,
    /// Inputs that are not complete, passing measurements, and why.
    pub warnings: Vec<Warning>,
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
        flags: Vec::new(),
    }
}

/// An input file: an mbxstress result.json or a Jetstress report as text (a regular file of at
/// most [`REPORT_LIMIT`] bytes of UTF-8).
pub fn load(path: &Path) -> Result<ImportedReport, ImportError> {
    let text = read_bounded(path, REPORT_LIMIT, REPORT_WHAT)?;
    if text.trim_start().starts_with('{') {
        // Figures no measurement can have are refused here too, as `esrp` and `import` do.
        let r = from_result_json(&text, path)?;
        crate::import::check_figures(&r, path)?;
        return Ok(r);
    }
    import_text(&text, path)
}

/// Reading a result.json as a report is the importer's; kept here too, where `esrp` named it.
pub use crate::import::{from_result_json, imported_from_result};

impl EsrpSummary {
    /// Whether anything was summarized: a server, a stress, backup or soft recovery row. When
    /// not, every input is in `excluded`.
    pub fn is_empty(&self) -> bool {
        self.servers.is_empty()
            && self.stress.is_empty()
            && self.backup.is_empty()
            && self.soft_recovery.is_empty()
    }
}

/// The earlier input `r` duplicates (the same measurement: equal in everything but the file's
/// name), if any.
fn duplicate_of<'a>(
    earlier: &'a [ImportedReport],
    r: &ImportedReport,
) -> Option<&'a ImportedReport> {
    earlier.iter().find(|e| {
        ImportedReport {
            source: r.source.clone(),
            ..(*e).clone()
        } == *r
    })
}

/// Summarizes loaded inputs. Every input ends up in a section (`servers` and the aggregate for
/// Performance, `stress`, `backup`, `soft_recovery`) or in `excluded` with the reason; an input
/// that duplicates an earlier one is counted once.
pub fn summarize(inputs: &[ImportedReport]) -> EsrpSummary {
    let mut s = EsrpSummary::default();
    // The inputs shown in a section (each at least once).
    let mut shown_inputs = 0usize;
    for (i, r) in inputs.iter().enumerate() {
        let machine = r.machine.clone().unwrap_or_else(|| r.source.clone());
        let earlier = inputs.get(..i).unwrap_or_default();
        if let Some(first) = duplicate_of(earlier, r) {
            let message = if first.source == r.source {
                format!("{} was given more than once: counted once", r.source)
            } else {
                format!(
                    "the same measurement as {} (identical content): counted once",
                    first.source
                )
            };
            s.excluded.push(Exclusion {
                source: r.source.clone(),
                machine,
                code: "duplicate",
                message,
            });
            continue;
        }
        // Only Performance tests feed the performance summary: backup and soft recovery reports
        // carry a Transactional I/O table of their own (the I/O during that test), and stress
        // tests are summarized separately in ESRP.
        let mut shown = false;
        if !r.transactional.is_empty() {
            let mut f = server_figures(&machine, &r.source, &r.transactional);
            f.flags = r.flags.iter().map(|f| f.code).collect();
            match r.kind {
                None | Some(TestKind::Performance) => {
                    s.servers.push(f);
                    shown = true;
                }
                Some(TestKind::Stress) => {
                    s.stress.push(f);
                    shown = true;
                }
                _ => {}
            }
        }
        s.warnings.extend(r.flags.iter().map(|f| Warning {
            source: r.source.clone(),
            code: f.code,
            message: f.message.clone(),
        }));
        s.warnings.extend(r.warnings.iter().map(|w| Warning {
            source: r.source.clone(),
            code: "damaged_input",
            message: w.clone(),
        }));
        if let Some((avg, sum)) = BackupRow::avg_and_sum(&r.backup) {
            s.backup.push(BackupFigures {
                source: machine.clone(),
                mb_per_s_per_database: r.backup_avg_typed.unwrap_or(avg),
                mb_per_s_per_server: r.backup_sum_typed.unwrap_or(sum),
            });
            shown = true;
        }
        if let Some((logs, secs)) = SoftRecoveryRow::averages(&r.soft_recovery) {
            s.soft_recovery.push(SoftRecoveryFigures {
                source: machine.clone(),
                seconds_per_log: r
                    .seconds_per_log_typed
                    .unwrap_or_else(|| SoftRecoveryRow::seconds_per_log(logs, secs)),
            });
            shown = true;
        }
        s.discrepancies
            .extend(r.discrepancies.iter().map(|d| format!("{}: {d}", r.source)));
        shown_inputs += usize::from(shown);
        if !shown {
            let (code, message) = match r.kind {
                None | Some(TestKind::Performance) | Some(TestKind::Stress) => (
                    "no_instances",
                    "no instance's transactional I/O was measured (a run refused or stopped \
                     before measuring): not in the servers or the aggregate"
                        .to_string(),
                ),
                Some(k @ (TestKind::Backup | TestKind::SoftRecovery)) => (
                    "no_rows",
                    format!("a {} test without its rows: nothing to summarize", k.name()),
                ),
                Some(k @ TestKind::Checksum) => (
                    "not_summarized",
                    format!("ESRP summarizes no figure of a {} test", k.name()),
                ),
            };
            s.excluded.push(Exclusion {
                source: r.source.clone(),
                machine,
                code,
                message,
            });
        }
    }
    // Every input is in a section or excluded, never both nor neither.
    assert_eq!(
        shown_inputs + s.excluded.len(),
        inputs.len(),
        "inputs summarized or excluded"
    );
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
            flags: sv.iter().flat_map(|x| x.flags.iter().copied()).fold(
                Vec::new(),
                |mut all, code| {
                    if !all.contains(&code) {
                        all.push(code);
                    }
                    all
                },
            ),
        });
    }
    s
}
