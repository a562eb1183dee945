//! mbxstress test types. For now the Performance test: a simulation of the mailbox database
//! engine's I/O with Jetstress semantics (see docs/method.md).
//!
//! A test is a [`Plan`]: how its databases are made ready, then phases that one executor runs
//! on one reactor (docs/ARCHITECTURE.md). [`start`] runs a test from start to end, as the
//! application layer asks for it; [`run_test`] runs a plan on prepared databases; [`run_plan`] runs one on any I/O
//! queue, real or simulated. Progress, log lines and samples go to an [`Observer`] as they
//! happen, and the result is a [`result::RunResult`] with its verdict. The engine
//! never prints; persistence and display belong to the observer.

mod assemble;
pub mod cache;
mod db;
mod errors;
mod exec;
pub mod findmax;
pub mod host;
pub mod model;
mod multi;
mod phase;
pub mod plan;
mod reactor;
mod run;
mod runner;
mod sampling;
pub mod search;
pub mod stats;
pub mod throughput;
pub mod tune;
pub mod workload;

/// The result model (`result.json`, samples, rows): the `mbx-result` crate, under the path this
/// crate has always offered it.
pub use mbx_result as result;

use std::time::{Duration, Instant};

use mbx_io::{EngineKind, IoQueue};
use mbx_store::StoreError;

pub use assemble::{error_entry, hostname, kernel_release, unmeasured_result};
pub use db::{InstanceSpec, LogStart};
pub use errors::is_no_space;
pub use multi::reactors_for;
pub use plan::{Databases, PassPurpose, PhaseSpec, Plan, SeqPassSpec, StabilizeSpec, StartGate};
pub use run::{
    log_start, queue_depth, queue_depth_for, run_performance, run_plan, run_plan_reactors,
    run_test, QueueFactory,
};
pub use runner::{execute_find_max, start, tune_then_run, tunes, Executed, RunRequest, Storage};

/// When things happened.
#[derive(Debug, Clone, Copy)]
pub struct RunTimes {
    /// Run start.
    pub started: Instant,
    /// Measured phase start.
    pub measure_start: Instant,
    /// Measured phase end.
    pub measure_end: Instant,
    /// Shutdown complete.
    pub ended: Instant,
    /// Stopped by the user.
    pub interrupted: bool,
    /// The phase the user's stop came in (when `interrupted`).
    pub interrupted_in: Option<Phase>,
    /// The measured phase began (otherwise no rate in the result means anything).
    pub measured: bool,
    /// The measured phase ran its whole length (an interruption, if any, came after it).
    pub measure_complete: bool,
}

/// Errors of a run.
#[derive(Debug, thiserror::Error)]
pub enum EngineError {
    /// I/O failed (the message names the file and offset).
    #[error(transparent)]
    Io(#[from] mbx_io::IoError),
    /// The store refused or failed.
    #[error(transparent)]
    Store(#[from] StoreError),
    /// The configuration cannot run.
    #[error("{0}")]
    Invalid(String),
    /// A damaged page was read (the first one stops the test unless `continue_on_errors`).
    #[error("{0}")]
    Integrity(String),
}

/// Phases of a run.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Phase {
    /// Filling the cache (unthrottled) to the 90% prerequisite.
    Attain,
    /// Paced at the target for one dirty-page age, so flushing reaches steady state.
    Settle,
    /// Automatic tuning: waiting until read latency is stable before a step measures.
    Stabilize,
    /// Paced, not measured, until the synchronized start of a multi-server run (`fleet run`).
    WaitStart,
    /// The measured phase.
    Measure,
    /// Finishing transactions, flushing cache and logs.
    Shutdown,
    /// Database Backup: reading every database file sequentially.
    Backup,
    /// Checksum: reading and verifying every database and log file.
    Checksum,
    /// Soft Recovery, phase 1: the transaction mix until every database has its log files.
    GenerateLogs,
    /// Soft Recovery: stopped without a clean shutdown (dirty pages left unwritten).
    StopDirty,
    /// Soft Recovery, phase 2: replaying the logs into the databases.
    Replay,
}

impl Phase {
    /// The name in result.json (`stopped.phase`) and in JSON progress.
    pub fn key(self) -> &'static str {
        match self {
            Phase::Attain => "attain",
            Phase::Settle => "settle",
            Phase::Stabilize => "stabilize",
            Phase::WaitStart => "wait_start",
            Phase::Measure => "measure",
            Phase::Shutdown => "shutdown",
            Phase::Backup => "backup",
            Phase::Checksum => "checksum",
            Phase::GenerateLogs => "generate_logs",
            Phase::StopDirty => "stop_dirty",
            Phase::Replay => "replay",
        }
    }

    /// Human name.
    pub fn name(self) -> &'static str {
        match self {
            Phase::Attain => "attaining cache prerequisite",
            Phase::Settle => "settling",
            Phase::Stabilize => "waiting for stable latency",
            Phase::WaitStart => "waiting for the synchronized start",
            Phase::Measure => "measuring",
            Phase::Shutdown => "shutting down",
            Phase::Backup => "backing up databases",
            Phase::Checksum => "verifying checksums",
            Phase::GenerateLogs => "generating transaction logs",
            Phase::StopDirty => "stopping without a clean shutdown",
            Phase::Replay => "recovering databases",
        }
    }
}

/// A once-per-second progress report.
#[derive(Debug, Clone, Copy, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct Progress {
    /// Current phase.
    pub phase: Phase,
    /// Seconds into the phase.
    pub phase_elapsed_s: f64,
    /// Length of the phase, when known.
    pub phase_total_s: Option<f64>,
    /// Transactional IOPS over the last second.
    pub iops: f64,
    /// Target IOPS.
    pub target_iops: f64,
    /// Average DB read latency since the last sample, ms.
    pub db_read_avg_ms: f64,
    /// Average log write latency since the last sample, ms.
    pub log_write_avg_ms: f64,
    /// Fill of the emptiest cache.
    pub cache_fill: f64,
    /// A sequential pass's bytes done and planned (Backup, Checksum); `None` otherwise.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub pass_bytes: Option<PassBytes>,
    /// Soft Recovery's log generation: log files beyond the held checkpoint on the database with
    /// the fewest (`done`) of those requested per database (`planned`); `None` otherwise.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub log_files: Option<PassBytes>,
}

/// How far a sequential pass is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct PassBytes {
    /// Bytes read and verified so far.
    pub done: u64,
    /// Bytes the pass reads in all.
    pub planned: u64,
}

/// What the engine reports while it runs.
#[derive(Debug)]
pub enum RunEvent<'a> {
    /// A phase began.
    Phase(Phase),
    /// A test-log line (Jetstress style).
    Log(&'a str),
    /// Progress, once per second.
    Progress(Progress),
    /// One sample (a `samples.jsonl` line).
    Sample(&'a result::Sample),
    /// Preparing the databases: the plan for each, then creation progress (from
    /// [`execute`]).
    Prepare(&'a mbx_store::CreateEvent),
}

/// Receives events as they happen.
pub trait Observer {
    /// Called for every event.
    fn on_event(&mut self, e: RunEvent<'_>);

    /// A line of a search's own: automatic tuning's or find-max's start, each step's outcome and
    /// the end, what a terminal shows while the search runs. It is a test-log line too: passed
    /// on as [`RunEvent::Log`] unless the observer tells the two apart (the application does).
    fn on_search_line(&mut self, line: &str) {
        self.on_event(RunEvent::Log(line));
    }
}

/// Wraps the run's I/O queue (tests inject faults, e.g. latency, with it).
pub type QueueWrapper = dyn Fn(Box<dyn IoQueue>) -> Box<dyn IoQueue> + Sync;

/// The current time as RFC 3339 (UTC, seconds).
pub fn rfc3339_now() -> String {
    rfc3339(std::time::SystemTime::now())
}

/// RFC 3339 (UTC) of a system time.
pub fn rfc3339(t: std::time::SystemTime) -> String {
    let secs = t
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_secs())
        .unwrap_or(0);
    let days = secs / 86400;
    let rem = secs % 86400;
    // Civil from days (Howard Hinnant's algorithm).
    let z = days as i64 + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36524 - doe / 146_096) / 365;
    let y = yoe + era * 400;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = doy - (153 * mp + 2) / 5 + 1;
    let m = if mp < 10 { mp + 3 } else { mp - 9 };
    let y = if m <= 2 { y + 1 } else { y };
    format!(
        "{y:04}-{m:02}-{d:02}T{:02}:{:02}:{:02}Z",
        rem / 3600,
        (rem % 3600) / 60,
        rem % 60
    )
}

/// Room per database for page patching writes (copies > 1); beyond it a damaged page is counted
/// but not patched.
pub(crate) const PATCH_SLOTS: usize = 8;

/// The I/O backend `b` names: `mbx_io` mirrors the configuration's enum so it needs no
/// configuration crate.
pub fn engine_kind(b: mbx_config::IoBackend) -> EngineKind {
    match b {
        mbx_config::IoBackend::IoUring => EngineKind::IoUring,
        mbx_config::IoBackend::Sync => EngineKind::Sync,
        mbx_config::IoBackend::Iocp => EngineKind::Iocp,
    }
}

/// Seconds as "1h02m03s" for messages.
pub fn human_duration(d: Duration) -> String {
    let s = d.as_secs();
    if s >= 3600 {
        format!("{}h{:02}m{:02}s", s / 3600, (s % 3600) / 60, s % 60)
    } else if s >= 60 {
        format!("{}m{:02}s", s / 60, s % 60)
    } else {
        format!("{}s", s)
    }
}

/// Seconds as a search step's length is shown ("8 s", "7.5 s"): the same words in the run's
/// first line and in the tuning and find-max logs.
pub fn step_secs(s: f64) -> String {
    if (s - s.round()).abs() < 0.05 {
        format!("{:.0} s", s)
    } else {
        format!("{:.1} s", s)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rfc3339_known_dates() {
        let t = std::time::UNIX_EPOCH + Duration::from_secs(1_795_000_000);
        assert_eq!(rfc3339(t), "2026-11-18T11:06:40Z"); // `date -u -d @1795000000`
        assert_eq!(rfc3339(std::time::UNIX_EPOCH), "1970-01-01T00:00:00Z");
        let leap = std::time::UNIX_EPOCH + Duration::from_secs(951_782_400); // 2000-02-29
        assert_eq!(rfc3339(leap), "2000-02-29T00:00:00Z");
    }
}
