//! The sections of the test types that are passes over files: the sequential pass of Backup and
//! Checksum (and the Stress test's final checksum), and Soft Recovery's replay.

use std::time::Instant;

use mbx_config::{RunConfig, TestKind};

use super::{build_result, ended, verdict, wall, Measured};
use crate::db::Database;
use crate::plan::PassPurpose;
use crate::result::*;
use crate::RunTimes;

/// What a pass found: the rows of its table and every problem.
#[derive(Debug, Clone)]
pub(crate) struct PassReport {
    pub purpose: PassPurpose,
    pub backup: Vec<BackupRow>,
    pub checksum: Vec<ChecksumRow>,
    pub integrity: Integrity,
    pub errors: Vec<ErrorEntry>,
    /// Every file was read to its end.
    pub completed: bool,
    pub started: Instant,
    pub ended: Instant,
}

/// Adds a pass that followed the transactions (the Stress test's checksum) to the result they
/// produced: its rows (`sections.checksum`), the pages it verified and found not good
/// (`integrity`, `errors`), and its checks in the verdict (`data_integrity_errors` counts its
/// findings too; `pass_completed`: every file read to its end). `report` is `None` when the pass
/// never ran (the test was interrupted or stopped before it). Returns the test-log line.
pub(crate) fn add_final_pass(
    result: &mut RunResult,
    report: Option<PassReport>,
    times: &RunTimes,
) -> String {
    let completed = report.as_ref().is_some_and(|r| r.completed);
    let pages_read = report.as_ref().map_or(0, |r| r.integrity.pages_verified);
    let mut found = 0u64;
    let line = match report {
        Some(r) => {
            let g = r.integrity;
            found = g.damaged();
            result.integrity.add(&g);
            result.errors.extend(r.errors);
            result.sections.checksum = r.checksum;
            format!(
                "Checksum after the test: {} pages verified, {found} not good{}.",
                g.pages_verified,
                if r.completed {
                    ""
                } else {
                    "; not every file was read"
                }
            )
        }
        None => "Checksum after the test: not run (the test did not reach it).".to_string(),
    };
    verdict::final_pass(result, found, pages_read, completed);
    if !times.interrupted && result.stopped.reason.ran_to_completion() {
        result.stopped = ended(
            times,
            &result.verdict,
            [
                "",
                "the test ran its full duration, every check passed and the checksum pass found every page good",
                "the test ran its full duration; at least one check failed",
            ],
        );
    }
    line
}

/// Turns the result the executor built into a Soft Recovery result: the test type, the rows
/// (one per database whose replay finished), seconds per log, and the verdict: every database
/// recovered, at least `files` log files replayed each, no page ahead of the log, no integrity
/// error.
pub(crate) fn soft_recovery(
    result: &mut RunResult,
    dbs: &[Database],
    files: u64,
    times: &RunTimes,
) {
    result.test.test_type = TestKind::SoftRecovery;
    let rows: Vec<SoftRecoveryRow> = dbs
        .iter()
        .filter(|d| d.replay.done())
        .map(|d| SoftRecoveryRow {
            instance: d.spec.name.clone(),
            log_files_replayed: d.replay.files_replayed,
            elapsed_s: d.replay.elapsed.map_or(0.0, |e| e.as_secs_f64()),
        })
        .collect();
    result.sections.seconds_per_log = SoftRecoveryRow::averages(&rows)
        .map(|(logs, secs)| SoftRecoveryRow::seconds_per_log(logs, secs));
    let least = rows.iter().map(|r| r.log_files_replayed).min().unwrap_or(0);
    let ahead: u64 = dbs.iter().map(|d| d.replay.ahead).sum();
    verdict::soft_recovery(result, rows.len(), dbs.len(), least, files, ahead);
    result.sections.soft_recovery = rows;
    result.stopped = ended(
        times,
        &result.verdict,
        [
            "interrupted while generating logs; the logs generated were replayed",
            "every database's log was replayed and every check passed",
            "the logs were replayed; at least one check failed",
        ],
    );
}

/// The result of a plan that only read its databases (Database Backup, Checksum): the figures
/// of the pass, its rows, what it found and its verdict; and the test-log line that sums it up
/// (none when the pass never ran).
#[allow(clippy::too_many_arguments)]
pub(crate) fn read_pass(
    cfg: &RunConfig,
    kind: TestKind,
    engine: Measured<'_>,
    times: &RunTimes,
    reference: (Instant, std::time::SystemTime),
    engine_name: &str,
    report: Option<PassReport>,
    notes: &[String],
) -> (RunResult, Option<String>) {
    let (ref_instant, ref_wall) = reference;
    let wall = |t: Instant| wall(t, ref_instant, ref_wall);
    let mut result = build_result(cfg, &engine, times, &wall, engine_name);
    result.test.test_type = kind;
    // Nothing paced, no transaction: neither block means anything.
    result.pacing = None;
    result.max_latency = None;
    result.target_iops = 0.0;
    result.achieved_iops = 0.0;
    result.notes.extend(notes.iter().cloned());
    let completed = report.as_ref().is_some_and(|r| r.completed);
    let mut found = 0u64;
    let mut line = None;
    if let Some(r) = report {
        result.test.collection_start = wall(r.started);
        result.test.collection_end = wall(r.ended);
        result.test.duration_s = r.ended.saturating_duration_since(r.started).as_secs_f64();
        let g = r.integrity;
        found = g.damaged();
        result.integrity = g;
        result.errors = r.errors;
        result.errors.extend(engine.hung.iter().cloned());
        if r.purpose == PassPurpose::Backup {
            result.sections.backup_avg_mb_per_s =
                BackupRow::avg_and_sum(&r.backup).map(|(avg, _)| avg);
            result.sections.backup_sum_mb_per_s =
                BackupRow::avg_and_sum(&r.backup).map(|(_, sum)| sum);
            result.sections.backup = r.backup;
        } else {
            result.sections.checksum = r.checksum;
        }
        line = Some(match kind {
            TestKind::Backup => format!(
                "Database backup: {} database(s), {:.1} MB/s per database, {:.1} MB/s in all.",
                result.sections.backup.len(),
                result.sections.backup_avg_mb_per_s.unwrap_or(0.0),
                result.sections.backup_sum_mb_per_s.unwrap_or(0.0)
            ),
            _ => format!(
                "Checksum: {} pages verified, {found} not good.",
                result.integrity.pages_verified
            ),
        });
    }
    verdict::read_pass(&mut result, found, completed, engine.hung.len());
    result.stopped = ended(
        times,
        &result.verdict,
        [
            "interrupted: the files were not all read",
            "every file was read to its end and every page verified good",
            "every file was read; at least one check failed",
        ],
    );
    (result, line)
}
