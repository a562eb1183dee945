//! mbxstress test types. For now the Performance test: a simulation of the mailbox database
//! engine's I/O with Jetstress semantics (see docs/method.md).
//!
//! A test is a [`Plan`]: how its databases are made ready, then phases that one executor runs
//! on one reactor (docs/ARCHITECTURE.md). [`execute`] runs a test from start to end, as the CLI
//! asks for it; [`run_test`] runs a plan on prepared databases; [`run_plan`] runs one on any I/O
//! queue, real or simulated. Progress, log lines and samples go to an [`Observer`] as they
//! happen, and the result is a [`result::RunResult`] with its verdict. The engine
//! never prints; persistence and display belong to the observer.

pub mod cache;
mod db;
mod exec;
pub mod findmax;
pub mod host;
pub mod model;
mod multi;
mod phase;
pub mod plan;
mod reactor;
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

use std::path::Path;
use std::sync::atomic::AtomicBool;
use std::time::{Duration, Instant};

use mbx_config::RunConfig;
use mbx_io::{open_queue, Clock, EngineKind, Files, IoQueue};
use mbx_store::{DbState, PreparedDatabase, StoreError};

use db::{Database, DbParams};
pub use db::{InstanceSpec, LogStart};
use exec::{Engine, Settings};
use mbx_config::Pacing;
pub use multi::{reactors_for, run_plan_reactors, QueueFactory};
pub use phase::wait_start::StartGate;
pub use plan::{Databases, PassPurpose, PhaseSpec, Plan, SeqPassSpec, StabilizeSpec};
use reactor::Reactor;
use result::*;
pub use runner::{execute, execute_find_max, execute_throughput, tune_then_run, tunes, Executed};
use stats::{Counter, Stream};
use workload::open::OpenLoop;
use workload::pacing::{Pacer, PacerConfig};
use workload::session::Workload;

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

fn wall(at: Instant, ref_instant: Instant, ref_wall: std::time::SystemTime) -> String {
    let t = if at >= ref_instant {
        ref_wall + (at - ref_instant)
    } else {
        ref_wall - (ref_instant - at)
    };
    rfc3339(t)
}

/// Runs the Performance test on prepared databases, on the chosen I/O backend.
pub fn run_performance(
    cfg: &RunConfig,
    databases: &[PreparedDatabase],
    observer: &mut dyn Observer,
    cancel: &AtomicBool,
    wrap: Option<&QueueWrapper>,
) -> Result<RunResult, EngineError> {
    run_test(
        cfg,
        &Plan::performance(cfg),
        databases,
        observer,
        cancel,
        wrap,
    )
}

/// Runs `plan` on prepared databases, on the chosen I/O backend: marks them in use (dirty),
/// continues their logs where the last run left them, executes the plan and marks them clean
/// again when it ended cleanly, through the files held open since the start
/// ([`mbx_store::HeldDatabases`]). An error marking them clean comes after the measurement: the
/// result keeps its figures and stops with that error.
pub fn run_test(
    cfg: &RunConfig,
    plan: &Plan,
    databases: &[PreparedDatabase],
    observer: &mut dyn Observer,
    cancel: &AtomicBool,
    wrap: Option<&QueueWrapper>,
) -> Result<RunResult, EngineError> {
    cfg.validate_for(plan.kind)
        .map_err(|(k, m)| EngineError::Invalid(format!("invalid {k}: {m}")))?;
    let engine = engine_kind(cfg.engine);
    let pid = std::process::id();
    let mut specs = Vec::new();
    for d in databases {
        specs.push(InstanceSpec {
            name: format!("Instance{pid}.{}", d.spec.index + 1),
            db_path: d.spec.path.clone(),
            log_dir: d.spec.log_dir.clone(),
            database_id: d.header.database_id,
            data_pages: d.header.data_pages(),
            log: log_start(&d.spec.log_dir, d.header.database_id)?,
        });
    }
    let initial_bytes: u64 = databases.iter().map(|d| d.header.file_bytes()).sum();
    // A damaged header copy is rewritten from the intact one when the run marks the database
    // dirty: that repair is an integrity finding, never silent.
    // A plan that only reads its databases writes nothing to them: no state change, no header
    // repair (its pass reports a damaged header copy as a bad page).
    // The database files stay open from here to the end: the end marks them clean through
    // these descriptors, from the headers read now (never reopening a path: a file deleted or
    // replaced meanwhile, or a read error there, cannot lose the measurement).
    let writes = !plan.reads_only();
    let mut held = if writes {
        let paths: Vec<&Path> = databases.iter().map(|d| d.spec.path.as_path()).collect();
        Some(mbx_store::HeldDatabases::open(&paths, true, wrap)?)
    } else {
        None
    };
    let mut header_errors = Vec::new();
    for (k, d) in databases.iter().enumerate() {
        let damaged = held.as_ref().map_or(&[][..], |h| h.damaged_copies(k));
        for &copy in damaged {
            let line = format!(
                "Database header copy {} of {} was damaged; it was rewritten from the intact copy.",
                copy + 1,
                d.spec.path.display()
            );
            observer.on_event(RunEvent::Log(&line));
            header_errors.push(ErrorEntry {
                class: "header_copy_damaged".into(),
                instance: specs.get(k).map(|s| s.name.clone()),
                count: 1,
                first_at: rfc3339(mbx_io::RealClock.wall()),
                message: line,
                ..located(
                    Some(&d.spec.path),
                    Some(copy * mbx_store::page::PAGE_SIZE as u64),
                    true,
                )
            });
        }
    }
    if let Some(h) = held.as_mut() {
        for k in 0..h.len() {
            h.set_state(k, DbState::Dirty)?;
        }
    }
    // One queue per reactor, each with the depth of its share, made on the reactor's thread
    // (an io_uring ring accepts submissions only from the thread that set it up).
    let queue_for = |_reactor: usize, depth: usize| -> Result<Box<dyn IoQueue>, EngineError> {
        let q = open_queue(engine, Files::new(Vec::new()), depth)?;
        Ok(match wrap {
            Some(w) => w(q),
            None => q,
        })
    };
    let reactors = reactors_for(cfg, plan, specs.len());
    let mut result = run_plan_reactors(cfg, plan, specs, reactors, &queue_for, observer, cancel)?;
    // A run stopped by an error leaves its databases marked dirty (pages were not all flushed):
    // that is the truth, and the next run attaches them all the same.
    if let Some(h) = held.as_mut() {
        let ended = result.stopped.reason.ran_to_completion()
            || result.stopped.reason == StopReason::Interrupted;
        if ended {
            mark_clean(h, &mut result, observer);
        }
        for k in (0..h.len()).filter(|&k| !h.still_at_path(k)) {
            let line = format!(
                "Database file {} was deleted or replaced during the test: the figures are of the file the test held open from its start; that path no longer names it.",
                h.path(k).unwrap_or(Path::new("?")).display()
            );
            observer.on_event(RunEvent::Log(&line));
            result.notes.push(line);
        }
    }
    let final_bytes: u64 = databases
        .iter()
        .enumerate()
        .map(|(k, d)| match held.as_ref().map(|h| h.size_bytes(k)) {
            Some(Ok(bytes)) => bytes,
            _ => std::fs::metadata(&d.spec.path)
                .map(|m| m.len())
                .unwrap_or(0),
        })
        .sum();
    result.database_size_bytes = DbSizes {
        initial: initial_bytes,
        final_: final_bytes,
    };
    if !header_errors.is_empty() {
        for e in &header_errors {
            if let Some(i) = result
                .instances
                .iter_mut()
                .find(|i| Some(&i.name) == e.instance.as_ref())
            {
                i.errors = i.errors.saturating_add(e.count);
            }
        }
        result.errors.splice(0..0, header_errors);
        let before = result
            .verdict
            .check("data_integrity_errors")
            .map_or(0.0, |c| c.value);
        result.verdict.set(Check::new(
            "data_integrity_errors",
            before + 1.0,
            0.0,
            false,
        ));
        if result.stopped.reason == StopReason::Completed {
            result.stopped = Stopped::new(
                StopReason::VerdictFailed,
                "the test ran its full duration; at least one check failed",
            );
        }
    }
    Ok(result)
}

/// Marks the held databases clean after a run that ended cleanly (or was interrupted). An error
/// there comes after the measurement: the result keeps every figure and says the test stopped
/// with that error (`errors[]` names it with its path, offset and errno); the database stays
/// marked dirty, which the next run attaches all the same.
fn mark_clean(
    held: &mut mbx_store::HeldDatabases,
    result: &mut RunResult,
    observer: &mut dyn Observer,
) {
    let mut first = None;
    for k in 0..held.len() {
        let Err(e) = held.set_state(k, DbState::Clean) else {
            continue;
        };
        let e = EngineError::from(e);
        let line = format!(
            "Could not mark the database clean after the test: {e}. The figures measured are kept; the database stays marked dirty."
        );
        observer.on_event(RunEvent::Log(&line));
        let kept = first.clone();
        stop_with_error(result, &e, mbx_io::RealClock.wall(), Some(Phase::Shutdown));
        match kept {
            Some(stopped) => result.stopped = stopped,
            None => first = Some(result.stopped.clone()),
        }
    }
}

/// The most I/O a test can have in flight: every session's transaction reads (each operation
/// reads at most model::MAX_READS_PER_OP pages) plus, per database, the flusher's writes, a log
/// write, two log file creations, a checkpoint step, a BDM read, a replication read, the
/// generation journal's I/O (`db::journal::JOURNAL_SLOTS` and its header) and, with
/// copies > 1, a few page patching writes. A smaller
/// queue overflows when the storage is slow, which is exactly when the test must keep going.
pub fn queue_depth(cfg: &RunConfig, databases: usize) -> usize {
    queue_depth_for(cfg, cfg.sessions() as usize, databases)
}

/// [`queue_depth`] of one reactor running `sessions` sessions on `databases` databases.
pub fn queue_depth_for(cfg: &RunConfig, sessions: usize, databases: usize) -> usize {
    let patches = if cfg.profile.copies_per_database > 1 {
        PATCH_SLOTS
    } else {
        0
    };
    sessions * model::MAX_OPS_PER_TXN * model::MAX_READS_PER_OP
        + databases
            * (db::flusher::max_flush_writes(sessions, databases)
                + 6
                + patches
                + db::journal::JOURNAL_SLOTS
                + 1)
}

/// Room per database for page patching writes (copies > 1); beyond it a damaged page is counted
/// but not patched.
pub(crate) const PATCH_SLOTS: usize = 8;

/// What an earlier run left in a log folder: where this run's log continues (read with the
/// file system; a simulated device's caller builds it directly). Every earlier generation is
/// retired once this run's first checkpoint is written (it covers everything from then on).
pub fn log_start(dir: &Path, database_id: u64) -> Result<LogStart, EngineError> {
    let state = mbx_store::log_dir::describe_log_dir(dir, database_id)?;
    Ok(LogStart {
        next_generation: state.next_generation(),
        checkpoint_sequence: state.next_checkpoint_sequence.saturating_sub(1),
        earlier_logs: state
            .generations
            .iter()
            .map(|&g| dir.join(mbx_store::log::log_file_name(g)))
            .collect(),
    })
}

/// Runs `plan` on the databases `specs` through `queue` (a real backend or a simulated device):
/// opens them, executes every phase, and returns the result with its verdict. Figures measured
/// before an error stopped the test are kept in the result, with the error. One reactor on one
/// thread; [`run_plan_reactors`] runs several.
pub fn run_plan(
    cfg: &RunConfig,
    plan: &Plan,
    specs: Vec<InstanceSpec>,
    queue: Box<dyn IoQueue>,
    observer: &mut dyn Observer,
    cancel: &AtomicBool,
) -> Result<RunResult, EngineError> {
    if specs.is_empty() {
        return Err(EngineError::Invalid("no databases to test".into()));
    }
    if plan.reads_only() {
        return phase::seqpass::run_reads(cfg, plan, specs, queue, observer, cancel);
    }
    let share = multi::Share::whole(cfg, specs.len());
    let part = run_part(cfg, plan, specs, &share, queue, observer, cancel, None)?;
    Ok(finish(cfg, plan, vec![part], None, observer))
}

/// What one reactor leaves when its phases are done: its databases (with their counters and
/// histograms), what it found, and when things happened on its clock.
pub(crate) struct Part {
    dbs: Vec<Database>,
    hung: Vec<ErrorEntry>,
    notes: Vec<String>,
    host: sampling::HostSeries,
    pass_report: Option<phase::seqpass::PassReport>,
    times: RunTimes,
    /// The wall clock when its measured phase began.
    measure_start_wall: Option<std::time::SystemTime>,
    ref_instant: Instant,
    ref_wall: std::time::SystemTime,
    engine_name: &'static str,
    /// Its transactions' figures (pacing and latency from arrival).
    txn: workload::open::TxnStats,
    /// The error that stopped this reactor, if one did.
    outcome: Result<(), EngineError>,
    /// How long its shutdown phase took (`None`: it had none).
    shutdown: Option<Duration>,
    /// The phase it was in when it ended (for an error: the phase the error came in).
    stopped_in: Phase,
    /// Where its host counters come from.
    machine: std::sync::Arc<dyn mbx_io::Machine>,
}

/// Runs `plan` on one reactor over the databases `specs`, its `share` of the test.
#[allow(clippy::too_many_arguments)]
pub(crate) fn run_part(
    cfg: &RunConfig,
    plan: &Plan,
    specs: Vec<InstanceSpec>,
    share: &multi::Share,
    queue: Box<dyn IoQueue>,
    observer: &mut dyn Observer,
    cancel: &AtomicBool,
    gate: Option<multi::Link>,
) -> Result<Part, EngineError> {
    let mut reactor = Reactor::new(queue);
    let clock = reactor.clock().clone();
    let (ref_instant, ref_wall) = (clock.now(), clock.wall());
    // Generations above anything an earlier run wrote: microseconds since the epoch.
    let gen_base = ref_wall
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_micros() as u64)
        .unwrap_or(0);
    let n = share.total_dbs as u64;
    let local = specs.len();
    let mut dbs = Vec::new();
    for (i, spec) in specs.into_iter().enumerate() {
        // The database's number in the whole test (its mailboxes depend on it).
        let global = (share.first_db + i) as u64;
        let params = DbParams {
            index: i,
            cache_frames: cache_frames(cfg, spec.data_pages)?,
            flush_start_pct: cfg.cache.flush_start_pct,
            flush_stop_pct: cfg.cache.flush_stop_pct,
            mailboxes: (cfg.profile.mailboxes + n - 1 - global) / n,
            direct: cfg.direct,
            bdm_reads_per_s: cfg.bdm_reads_per_s,
            gen_base,
            circular_logging: cfg.circular_logging,
            replicated: cfg.profile.copies_per_database > 1,
            checkpoint_every: Duration::from_secs_f64(cfg.cache.checkpoint_interval_s),
            flush_writes: db::flusher::max_flush_writes(share.sessions, local),
        };
        dbs.push(Database::open(spec, params, &mut reactor, ref_instant)?);
    }
    let engine_name = reactor.engine_name();
    let settings = Settings {
        target_iops: share.target_iops,
        max_dirty_age: Duration::from_secs_f64(cfg.cache.max_dirty_age_s),
        sample_every: Duration::from_secs_f64(cfg.sample_interval_s),
        bdm: cfg.bdm,
        copies: cfg.profile.copies_per_database,
        compressibility_pct: cfg.compressibility_pct,
        checksum_reads_pct: cfg.checksum_reads_pct,
        hung_io: Duration::from_secs_f64(cfg.thresholds.hung_io_s),
        direct: cfg.direct,
        continue_on_errors: cfg.continue_on_errors,
    };
    let t = &cfg.thresholds;
    let tolerated = t.max_latency_errors as usize;
    for db in &mut dbs {
        db.stats.maxima = [
            stats::SampleMaxima::new(tolerated, t.db_read_max_ms),
            stats::SampleMaxima::new(tolerated, t.log_write_max_ms),
        ];
    }
    let max_backlog = Duration::from_secs_f64(cfg.max_backlog_s);
    let (pacer_cfg, open) = match cfg.pacing {
        Pacing::Closed => (PacerConfig::default(), None),
        // Open loop: an arrival is dropped only once it waited the configured bound.
        Pacing::Open => (
            PacerConfig {
                max_backlog,
                charge_actual_reads: false,
                ..PacerConfig::default()
            },
            Some(OpenLoop::new(cfg.arrivals, share.seed, max_backlog)),
        ),
    };
    let pacer = Pacer::new(pacer_cfg, share.target_iops, ref_instant)
        .map_err(|e| EngineError::Invalid(e.to_string()))?;
    let work = Workload::new(
        share.sessions,
        share.seed,
        cfg.op_mix.clone(),
        share.mailboxes,
        pacer,
        open,
    );
    let mut engine = Engine::new(settings, reactor, dbs, work, observer);
    engine.sample_host = share.index == 0;
    engine.gate = gate;
    // With several reactors, the first logs the test's settings once (its sessions: all of
    // them); each logs its own bookkeeping.
    let several = engine.gate.is_some();
    let settings_lines = !several || share.index == 0;
    let c = &engine.dbs[0].cache;
    let line = format!(
        "Database cache settings per database: maximum {:.1} MB; flush thresholds: start {} pages, stop {} pages.",
        c.max_frames as f64 * 32768.0 / 1e6,
        c.start_threshold,
        c.stop_threshold
    );
    if settings_lines {
        engine.log(&line, false);
    }
    let (cache_meta, tracker, journal): (usize, usize, usize) =
        engine.dbs.iter().fold((0, 0, 0), |(c, t, j), d| {
            (
                c + d.cache.metadata_bytes(),
                t + d.pages.memory_bytes(),
                j + d.journal.memory_bytes(),
            )
        });
    let whose = if several {
        format!(" of reactor {}'s databases", share.index + 1)
    } else {
        String::new()
    };
    let line = format!(
        "Engine bookkeeping{whose} (bounded, whatever the database size or test length): cache metadata {:.1} MiB, page write tracker {:.1} MiB, generation journal window {:.1} MiB.",
        cache_meta as f64 / (1 << 20) as f64,
        tracker as f64 / (1 << 20) as f64,
        journal as f64 / (1 << 20) as f64
    );
    engine.log(&line, false);
    if settings_lines {
        let t = &cfg.thresholds;
        let line = format!(
            "Database read latency thresholds: (average: {} msec/read, maximum: {} msec/read).",
            t.db_read_avg_ms, t.db_read_max_ms
        );
        engine.log(&line, false);
        let line = format!(
            "Log write latency thresholds: (average: {} msec/write, maximum: {} msec/write).",
            t.log_write_avg_ms, t.log_write_max_ms
        );
        engine.log(&line, false);
        let m = &cfg.op_mix;
        let sessions = if several {
            cfg.sessions() as usize
        } else {
            share.sessions
        };
        let line = format!(
            "Operation mix: Sessions {}, Inserts {}%, Deletes {}%, Replaces {}%, Reads {}%, Lazy Commits {}%.",
            sessions,
            m.insert_pct,
            m.delete_pct,
            m.replace_pct,
            m.read_pct,
            m.lazy_commit_pct
        );
        engine.log(&line, false);
    }
    let outcome = engine.execute(plan, cancel);
    engine.journal_lines();
    // Retired log files are deleted in the background: a failure there is the test's too.
    let outcome = outcome.and_then(|()| Ok(engine.reactor.wait_removals()?));
    let end = engine.reactor.now();
    // An error that stopped the test while it measured ended the measured phase too: what was
    // in flight then is carried as at its end.
    if engine.dbs.iter().any(|d| d.stats.measuring) {
        engine.carry_in_flight(end);
    }
    // I/O carried past the measured phase and still in flight counts with its age now.
    engine.settle_carried(end);
    let shutdown = engine
        .shutdown_start
        .map(|t| end.saturating_duration_since(t));
    if let Some(d) = shutdown {
        let line = shutdown_line(&engine, d);
        engine.log(&line, false);
    }
    let marks = engine.marks;
    let times = RunTimes {
        started: marks.started,
        measure_start: marks.measure_start.unwrap_or(end),
        measure_end: marks.measure_end.unwrap_or(end),
        ended: end,
        interrupted: marks.interrupted,
        interrupted_in: marks.interrupted_in,
        measured: marks.measure_start.is_some(),
        measure_complete: marks.measure_complete,
    };
    let stopped_in = engine.phase;
    Ok(Part {
        dbs: std::mem::take(&mut engine.dbs),
        hung: std::mem::take(&mut engine.hung),
        notes: std::mem::take(&mut engine.notes),
        host: std::mem::take(&mut engine.host),
        pass_report: engine.pass_report.take(),
        times,
        measure_start_wall: marks.measure_start_wall,
        ref_instant,
        ref_wall,
        engine_name,
        txn: std::mem::take(&mut engine.work.txn),
        outcome,
        shutdown,
        stopped_in,
        machine: engine.reactor.machine().clone(),
    })
}

/// The test-log line saying how long shutdown took `d`, the hung I/Os it met and how long the
/// I/Os carried past the measured phase took (docs/method.md, "I/O in flight at the end").
fn shutdown_line(engine: &Engine<'_>, d: Duration) -> String {
    let mut line = format!("Shutdown took {:.2} s", d.as_secs_f64());
    if engine.shutdown_hung > 0 {
        line.push_str(&format!(
            "; {} I/O(s) were hung during it (outstanding over {:.0} s)",
            engine.shutdown_hung,
            engine.settings.hung_io.as_secs_f64()
        ));
    }
    let carried = engine
        .dbs
        .iter()
        .flat_map(|db| db.stats.incomplete.iter())
        .fold((0u64, Duration::ZERO), |(n, l), i| {
            (n.saturating_add(i.count), l.max(i.longest))
        });
    if carried.0 > 0 {
        line.push_str(&format!(
            "; the {} I/O(s) in flight when measuring ended took up to {:.1} ms",
            carried.0,
            carried.1.as_secs_f64() * 1e3
        ));
    }
    line.push('.');
    line
}

/// Measured seconds of a part (0 when nothing was measured: no rate means anything then).
fn measured_secs(t: &RunTimes) -> f64 {
    if t.measured {
        t.measure_end
            .saturating_duration_since(t.measure_start)
            .as_secs_f64()
    } else {
        0.0
    }
}

/// The result of the reactors' `parts` (one, or one per reactor in reactor order, so their
/// databases come in database order): rows concatenated, counters summed, histograms kept per
/// database, the host series `host` when several reactors were merged (their merged samples),
/// otherwise the one reactor's.
pub(crate) fn finish(
    cfg: &RunConfig,
    plan: &Plan,
    parts: Vec<Part>,
    host: Option<sampling::HostSeries>,
    observer: &mut dyn Observer,
) -> RunResult {
    let several = parts.len() > 1;
    let mut dbs = Vec::new();
    let mut db_secs = Vec::new();
    let mut hung = Vec::new();
    let mut txns = Vec::new();
    let mut notes = Vec::new();
    let mut pass_report = None;
    let mut error = None;
    let mut parts = parts.into_iter().enumerate();
    let Some((_, first)) = parts.next() else {
        // No reactor, so no clock of the run: the system's.
        let now = mbx_io::RealClock.wall();
        return unmeasured_result_at(
            cfg,
            now,
            now,
            Stopped::new(StopReason::Error, "no reactor ran"),
        );
    };
    let (ref_instant, ref_wall, engine_name) =
        (first.ref_instant, first.ref_wall, first.engine_name);
    let machine = first.machine.clone();
    let measure_start_wall = first.measure_start_wall;
    let mut times = first.times;
    let mut min_secs = measured_secs(&first.times);
    let host = host.unwrap_or(first.host);
    let mut error_at = ref_wall;
    let mut shutdown: Option<Duration> = None;
    let mut error_in = None;
    for (r, p) in std::iter::once((
        0,
        Part {
            host: Default::default(),
            ..first
        },
    ))
    .chain(parts)
    {
        let secs = measured_secs(&p.times);
        min_secs = min_secs.min(secs);
        shutdown = shutdown.max(p.shutdown);
        times.interrupted |= p.times.interrupted;
        times.interrupted_in = times.interrupted_in.or(p.times.interrupted_in);
        times.measured &= p.times.measured;
        times.measure_complete &= p.times.measure_complete;
        db_secs.extend(std::iter::repeat_n(secs, p.dbs.len()));
        dbs.extend(p.dbs);
        hung.extend(p.hung);
        txns.push(p.txn);
        if several {
            notes.extend(
                p.notes
                    .into_iter()
                    .map(|n| format!("Reactor {}: {n}", r + 1)),
            );
        } else {
            notes.extend(p.notes);
        }
        if pass_report.is_none() {
            pass_report = p.pass_report;
        }
        if let (Err(e), None) = (p.outcome, &error) {
            if several {
                notes.push(format!(
                    "Reactor {} stopped with an error; the other reactors were stopped with it.",
                    r + 1
                ));
            }
            error_at = p.ref_wall + p.times.ended.saturating_duration_since(p.ref_instant);
            error_in = Some(p.stopped_in);
            error = Some(e);
        }
    }
    let wall = |t: Instant| wall(t, ref_instant, ref_wall);
    let view = Measured {
        dbs: &dbs,
        db_secs: &db_secs,
        secs: min_secs,
        hung: &hung,
        host: &host,
        txns: &txns,
        machine: &*machine,
    };
    let mut result = build_result(cfg, &view, &times, &wall, engine_name);
    result.test.shutdown_s = shutdown.map(|d| d.as_secs_f64());
    if times.measured {
        result.test.collection_start_unix_s = measure_start_wall
            .and_then(|t| t.duration_since(std::time::UNIX_EPOCH).ok())
            .map(|d| d.as_secs_f64());
    }
    result.test.test_type = plan.test_kind();
    if !plan.test_kind().paced() {
        // No transaction was paced (Soft Recovery generates its logs flat out).
        result.pacing = None;
        result.max_latency = None;
    }
    if plan.final_pass().is_some() {
        let line = phase::seqpass::add_final_pass(&mut result, pass_report, &times);
        observer.on_event(RunEvent::Log(&line));
    }
    if plan.test_kind() == TestKind::SoftRecovery {
        let files = plan.log_files_to_replay().unwrap_or(0);
        phase::replay::into_result(&mut result, &dbs, files, &times);
    }
    for inst in &result.instances {
        for (what, v) in [
            (
                "I/O Database Reads Average Latency",
                inst.transactional.db_read_avg_latency_ms,
            ),
            (
                "I/O Log Writes Average Latency",
                inst.transactional.log_write_avg_latency_ms,
            ),
            (
                "I/O Log Reads Average Latency",
                inst.total.log_read_avg_latency_ms,
            ),
        ] {
            let line = format!("{} has {:.1} for {what}.", inst.name, v);
            observer.on_event(RunEvent::Log(&line));
        }
    }
    // Checkpoints (database sync + slot write) and log file preallocation go through the queue
    // and are measured, outside the Jetstress streams (ESE does not count them as log I/O).
    for db in &dbs {
        let o = db.stats.measured[Stream::Other as usize];
        if o.ios > 0 {
            let line = format!(
                "{} had {} checkpoint and log-preallocation I/Os while measuring, {:.2} ms average (not counted in the Jetstress streams).",
                db.spec.name,
                o.ios,
                o.avg_ms()
            );
            observer.on_event(RunEvent::Log(&line));
        }
    }
    let line = format!(
        "Test has {:.1} Maximum Database Page Fault Stalls/sec.",
        result.host.page_fault_stalls_per_s.max
    );
    observer.on_event(RunEvent::Log(&line));
    result.notes.extend(notes);
    for c in result.verdict.not_judged() {
        let line = format!(
            "Check {} not judged: {}.",
            c.name,
            c.reason().unwrap_or("nothing to judge")
        );
        observer.on_event(RunEvent::Log(&line));
    }
    if let Some(e) = error {
        stop_with_error(&mut result, &e, error_at, error_in);
    }
    result
}

/// How a test that ran to its end (or was interrupted) stopped: `messages` for interrupted,
/// passed and not passed (the last gets the checks that judged nothing when none failed).
pub(crate) fn ended(times: &RunTimes, verdict: &Verdict, messages: [&str; 3]) -> Stopped {
    if times.interrupted {
        let stop = Stopped::new(StopReason::Interrupted, messages[0]);
        return match times.interrupted_in {
            Some(p) => stop.in_phase(p.key()),
            None => stop,
        };
    }
    if verdict.pass() {
        return Stopped::new(StopReason::Completed, messages[1]);
    }
    Stopped::new(StopReason::VerdictFailed, not_passed(verdict, messages[2]))
}

/// The message of a test that ran to its end without passing: `failed` when a check failed,
/// otherwise the checks that judged nothing.
fn not_passed(verdict: &Verdict, failed: &str) -> String {
    if verdict.failed().next().is_some() {
        return failed.to_string();
    }
    let names: Vec<&str> = verdict.not_judged().map(|c| c.name.as_str()).collect();
    format!(
        "the test ran its full duration, but the verdict is not a pass: {} check(s) not judged ({}; the reasons are in the verdict)",
        names.len(),
        names.join(", ")
    )
}

/// Marks `result` as stopped by `e` (at wall time `at`, in phase `phase` when known): why it
/// stopped, the error entry, and a failed check (`errors`, or `data_integrity_errors` for a
/// damaged page). What was measured before the error stays.
pub(crate) fn stop_with_error(
    result: &mut RunResult,
    e: &EngineError,
    at: std::time::SystemTime,
    phase: Option<Phase>,
) {
    let in_phase = |s: Stopped| match phase {
        Some(p) => s.in_phase(p.key()),
        None => s,
    };
    if let EngineError::Integrity(message) = e {
        // The damaged page is already named in errors[] and counted by its check.
        result.stopped = in_phase(Stopped::new(StopReason::IntegrityError, message.clone()));
        if result.verdict.pass() {
            let found = result.integrity.damaged().max(1) as f64;
            result
                .verdict
                .set(Check::new("data_integrity_errors", found, 0.0, false));
        }
        return;
    }
    let entry = error_entry(e, &result.instances, at);
    let reason = if entry.class == "io_error" || entry.class == "no_space" {
        StopReason::IoError
    } else {
        StopReason::Error
    };
    result.stopped = in_phase(Stopped::new(reason, entry.message.clone()));
    if let Some(name) = &entry.instance {
        if let Some(i) = result.instances.iter_mut().find(|i| &i.name == name) {
            i.errors = i.errors.saturating_add(entry.count);
        }
    }
    result.errors.push(entry);
    // Every error fails the test, the one that stopped it too.
    let total = result
        .errors
        .iter()
        .filter(|e| e.class != "patched_page")
        .fold(0u64, |a, e| a.saturating_add(e.count));
    result
        .verdict
        .set(Check::new("errors", total as f64, 0.0, false));
}

/// Cache frames of a database: Jetstress gives each database 32..256 MiB of cache; small test
/// databases get at most an eighth of their size, so the cache stays a cache (see
/// docs/method.md). A cache never holds more frames than the database has pages: otherwise the
/// 90% prerequisite could never be met (a 1 MiB database has 32 pages).
fn cache_frames(cfg: &RunConfig, data_pages: u64) -> Result<usize, EngineError> {
    let page = mbx_store::page::PAGE_SIZE as u64;
    let db_bytes = data_pages.saturating_mul(page);
    let max_bytes = cfg
        .cache
        .max_mb_per_db
        .saturating_mul(1 << 20)
        .min(db_bytes / 8)
        .max(
            cfg.cache
                .min_mb_per_db
                .saturating_mul(1 << 20)
                .min(db_bytes / 8),
        )
        .max(64 * page)
        .min(db_bytes);
    Ok(usize::try_from(max_bytes / page)
        .map_err(|_| EngineError::Invalid("database cache too large".into()))?
        .max(1))
}

/// The stop reason of a test that ran to its end or was interrupted: an interruption names the
/// phase it came in, and one after the measured phase completed says the measurement is whole.
fn stop_of(times: &RunTimes, verdict: &Verdict, secs: f64, duration_s: f64) -> Stopped {
    if times.interrupted {
        let phase = times.interrupted_in;
        let message = match phase {
            _ if times.measure_complete => format!(
                "interrupted while {}, after the measured phase completed: the measurement is whole ({}) and judged",
                phase.map_or("shutdown", Phase::name),
                measured_words(secs)
            ),
            Some(Phase::Measure) => format!(
                "interrupted during the measured phase, after {} of {}: the figures cover the time measured",
                measured_words(secs),
                measured_words(duration_s)
            ),
            Some(p) if !times.measured => format!(
                "interrupted before the measured phase (while {}): nothing was measured",
                p.name()
            ),
            Some(p) => format!(
                "interrupted while {}, after {} measured",
                p.name(),
                measured_words(secs)
            ),
            None => "interrupted".to_string(),
        };
        let stop = Stopped::new(StopReason::Interrupted, message);
        return match phase {
            Some(p) => stop.in_phase(p.key()),
            None => stop,
        };
    }
    if verdict.pass() {
        return Stopped::new(
            StopReason::Completed,
            "the test ran its full duration and every check passed",
        );
    }
    Stopped::new(
        StopReason::VerdictFailed,
        not_passed(
            verdict,
            "the test ran its full duration; at least one check failed",
        ),
    )
}

/// Seconds as a message says them: "0.994 s", "20 s", "2h00m00s".
fn measured_words(secs: f64) -> String {
    if secs >= 60.0 {
        human_duration(Duration::from_secs_f64(secs.round()))
    } else {
        let s = format!("{secs:.3}");
        format!("{} s", s.trim_end_matches('0').trim_end_matches('.'))
    }
}

/// True if an I/O error is the file system running out of space.
pub fn is_no_space(e: &std::io::Error) -> bool {
    // ENOSPC on Unix; ERROR_HANDLE_DISK_FULL and ERROR_DISK_FULL on Windows.
    let codes: &[i32] = if cfg!(windows) { &[39, 112] } else { &[28] };
    e.raw_os_error().is_some_and(|c| codes.contains(&c))
}

/// Describes an error that stopped a test as a result entry (class, path, offset, instance).
pub fn error_entry(
    e: &EngineError,
    instances: &[InstanceResult],
    at: std::time::SystemTime,
) -> ErrorEntry {
    let (class, path, offset, errno) = match e {
        EngineError::Io(io) | EngineError::Store(StoreError::Io(io)) => match io {
            mbx_io::IoError::Os {
                path,
                offset,
                error,
                ..
            } => (
                if is_no_space(error) {
                    "no_space"
                } else {
                    "io_error"
                },
                Some(path.clone()),
                *offset,
                error.raw_os_error(),
            ),
            mbx_io::IoError::Short { path, offset, .. } => {
                ("io_error", Some(path.clone()), Some(*offset), None)
            }
            mbx_io::IoError::Unsupported(_) => ("io_error", None, None, None),
        },
        _ => ("error", None, None, None),
    };
    let instance = path.as_ref().and_then(|p| {
        instances
            .iter()
            .find(|i| Path::new(&i.database_path) == p.as_path() || p.starts_with(&i.log_path))
            .map(|i| i.name.clone())
    });
    // A page number only means something in a database file (not in a log file).
    let in_database = path.as_ref().is_some_and(|p| {
        instances
            .iter()
            .any(|i| Path::new(&i.database_path) == p.as_path())
    });
    ErrorEntry {
        class: class.into(),
        instance,
        errno,
        count: 1,
        first_at: rfc3339(at),
        message: e.to_string(),
        ..located(path.as_deref(), offset, in_database)
    }
}

/// An `errors[]` entry with only its place filled in: the path, its volume, the offset and, in a
/// database file (not a log file), the page number there.
pub(crate) fn located(path: Option<&Path>, offset: Option<u64>, in_database: bool) -> ErrorEntry {
    ErrorEntry {
        path: path.map(|p| p.display().to_string()),
        volume: path.and_then(mbx_io::platform::volume_of),
        offset,
        page: offset
            .filter(|_| in_database)
            .map(|o| o / mbx_store::page::PAGE_SIZE as u64),
        ..ErrorEntry::default()
    }
}

/// The result of a run that stopped before the engine measured anything (preparation failed or
/// was interrupted): the configuration, zero figures and why it stopped.
pub fn unmeasured_result(
    cfg: &RunConfig,
    started: std::time::SystemTime,
    stopped: Stopped,
) -> RunResult {
    unmeasured_result_at(cfg, started, mbx_io::RealClock.wall(), stopped)
}

/// [`unmeasured_result`] of a run that ended at `now` (on the run's clock).
pub(crate) fn unmeasured_result_at(
    cfg: &RunConfig,
    started: std::time::SystemTime,
    now: std::time::SystemTime,
    stopped: Stopped,
) -> RunResult {
    RunResult {
        schema: SCHEMA.into(),
        test: TestInfo {
            test_type: TestKind::Performance,
            start: rfc3339(started),
            end: rfc3339(now),
            collection_start: rfc3339(now),
            collection_end: rfc3339(now),
            duration_s: 0.0,
            machine: hostname(),
            os: format!("{} {}", std::env::consts::OS, kernel_release()),
            tool_version: env!("CARGO_PKG_VERSION").into(),
            engine: cfg.engine.name().into(),
            direct: cfg.direct,
            interrupted: stopped.reason == StopReason::Interrupted,
            reactors: 1,
            collection_start_unix_s: None,
            shutdown_s: None,
        },
        config: cfg.clone(),
        profile: ProfileBlock::of(cfg),
        target_iops: cfg.target_iops(),
        achieved_iops: 0.0,
        database_size_bytes: DbSizes::default(),
        verdict: Verdict::of(vec![Check::new(
            "completed_duration_s",
            0.0,
            cfg.duration_s,
            false,
        )]),
        instances: Vec::new(),
        host: Host::default(),
        integrity: Integrity::default(),
        samples_file: "samples.jsonl".into(),
        log_file: "test.log".into(),
        stopped,
        errors: Vec::new(),
        notes: Vec::new(),
        tuning: None,
        pacing: None,
        max_latency: None,
        throughput: None,
        doctor: None,
        sections: Sections::default(),
    }
}

fn io12(
    rd: &Counter,
    wr: &Counter,
    lr: &Counter,
    lw: &Counter,
    secs: f64,
    read_latency: f64,
) -> Io12 {
    Io12 {
        db_read_avg_latency_ms: read_latency,
        db_write_avg_latency_ms: wr.avg_ms(),
        db_reads_per_s: rd.rate(secs),
        db_writes_per_s: wr.rate(secs),
        db_read_avg_bytes: rd.avg_bytes(),
        db_write_avg_bytes: wr.avg_bytes(),
        log_read_avg_latency_ms: lr.avg_ms(),
        log_write_avg_latency_ms: lw.avg_ms(),
        log_reads_per_s: lr.rate(secs),
        log_writes_per_s: lw.rate(secs),
        log_read_avg_bytes: lr.avg_bytes(),
        log_write_avg_bytes: lw.avg_bytes(),
    }
}

/// What the result is built from: every database (in database order), the seconds each was
/// measured (its reactor's), the shortest of them, the hung I/Os, the host series.
pub(crate) struct Measured<'a> {
    dbs: &'a [Database],
    db_secs: &'a [f64],
    secs: f64,
    hung: &'a [ErrorEntry],
    host: &'a sampling::HostSeries,
    /// Every reactor's transaction figures (merged into `pacing`).
    txns: &'a [workload::open::TxnStats],
    /// Where the host counters come from.
    machine: &'a dyn mbx_io::Machine,
}

/// The result of one engine (a plan run on one reactor) over `times`.
pub(crate) fn engine_result(
    cfg: &RunConfig,
    engine: &Engine<'_>,
    times: &RunTimes,
    wall: &dyn Fn(Instant) -> String,
    engine_name: &str,
) -> RunResult {
    let secs = measured_secs(times);
    let db_secs = vec![secs; engine.dbs.len()];
    let view = Measured {
        dbs: &engine.dbs,
        db_secs: &db_secs,
        secs,
        hung: &engine.hung,
        host: &engine.host,
        txns: std::slice::from_ref(&engine.work.txn),
        machine: &**engine.reactor.machine(),
    };
    build_result(cfg, &view, times, wall, engine_name)
}

fn build_result(
    cfg: &RunConfig,
    engine: &Measured<'_>,
    times: &RunTimes,
    wall: &dyn Fn(Instant) -> String,
    engine_name: &str,
) -> RunResult {
    // No measured phase, no rates: an interruption during attain must not report "1000 IOPS
    // over 0.001 s".
    let secs = engine.secs;
    let mut instances = Vec::new();
    let mut integrity = Integrity::default();
    let mut worst_read_avg = 0f64;
    let mut worst_read_max = 0f64;
    let mut worst_log_avg = 0f64;
    let mut worst_log_max = 0f64;
    for (k, inst) in engine.dbs.iter().enumerate() {
        // Rates over the time this database's reactor measured.
        let secs = engine.db_secs.get(k).copied().unwrap_or(secs);
        let st = &inst.stats;
        let m = |s: Stream| st.measured[s as usize];
        let zero = Counter::default();
        let (rd, wr, lw, lr, bdm) = (
            m(Stream::DbRead),
            m(Stream::DbWrite),
            m(Stream::LogWrite),
            m(Stream::LogRead),
            m(Stream::Bdm),
        );
        let transactional = io12(&rd, &wr, &zero, &lw, secs, rd.avg_ms());
        let total = io12(&rd.plus(&bdm), &wr, &lr, &lw, secs, rd.avg_ms());
        worst_read_avg = worst_read_avg.max(rd.avg_ms());
        worst_log_avg = worst_log_avg.max(lw.avg_ms());
        worst_read_max = worst_read_max.max(st.max_sample_avgs.0);
        worst_log_max = worst_log_max.max(st.max_sample_avgs.1);
        integrity.add(&inst.integrity);
        instances.push(InstanceResult {
            name: inst.spec.name.clone(),
            database_path: inst.spec.db_path.display().to_string(),
            log_path: inst.spec.log_dir.display().to_string(),
            transactional,
            total,
            bdm: RateBytes {
                reads_per_s: bdm.rate(secs),
                read_avg_bytes: bdm.avg_bytes(),
            },
            log_replication: RateBytes {
                reads_per_s: lr.rate(secs),
                read_avg_bytes: lr.avg_bytes(),
            },
            latency_ms: LatencyPercentiles {
                db_read: pct(st.hist[Stream::DbRead as usize].percentiles()),
                db_write: pct(st.hist[Stream::DbWrite as usize].percentiles()),
                log_write: pct(st.hist[Stream::LogWrite as usize].percentiles()),
            },
            integrity: inst.integrity,
            transactions_per_s: if secs > 0.0 {
                st.txns_measured as f64 / secs
            } else {
                0.0
            },
            cache_fill: inst.cache.fill(),
            errors: 0,
            incomplete_at_end: incomplete_at_end(&st.incomplete),
        });
    }
    let achieved: f64 = instances
        .iter()
        .map(|i| i.transactional.db_reads_per_s + i.transactional.db_writes_per_s)
        .sum();
    let host = Host {
        cpu_pct: engine.host.cpu_pct.amm(),
        available_mb: engine.host.available_mb.amm(),
        page_fault_stalls_per_s: engine.host.stalls_per_s.amm(),
        process_peak_rss_mb: engine
            .machine
            .peak_resident_memory_bytes()
            .map(|b| b as f64 / (1 << 20) as f64)
            .unwrap_or(0.0),
    };
    let t = &cfg.thresholds;
    let target = cfg.target_iops();
    let max_latency = max_latency_checks(cfg, engine.dbs, worst_read_max, worst_log_max);
    // A check judges only what was measured: nothing measured, no I/O of its stream, or too few
    // samples for a maximum to be able to fail, and it says so instead of passing with 0.
    let nothing = (!times.measured || secs <= 0.0)
        .then_some("nothing was measured (the test stopped before its measured phase)");
    let measured_ios = |s: Stream| {
        engine
            .dbs
            .iter()
            // I/O still in flight when measuring ended counts as measured (its age is).
            .map(|d| {
                d.stats.measured[s as usize]
                    .ios
                    .saturating_add(d.stats.incomplete[s as usize].count)
            })
            .sum::<u64>()
    };
    let none_of =
        |s: Stream, what: &'static str| nothing.or((measured_ios(s) == 0).then_some(what));
    let judged = |name: &str, value: f64, limit: f64, why_not: Option<&str>| match why_not {
        Some(why) => Check::not_judged(name, limit, why),
        None => Check::new(name, value, limit, value <= limit),
    };
    let max_check = |name: &str, m: &MaxLatency, stream: Stream, what: &'static str| {
        match none_of(stream, what) {
            Some(why) => Check::not_judged(name, m.limit_ms, why),
            None if !m.judged => Check::not_judged(
                name,
                m.limit_ms,
                format!(
                    "{} sample(s) per instance and {} over the limit tolerated (--max-latency-errors): the check could not fail; the strict maxima are in max_latency (sample more often, run longer or lower the tolerance)",
                    m.samples, max_latency.max_latency_errors
                ),
            ),
            // The tolerated per-sample figure and, without tolerance, the average
            // latency of the I/O left in flight when measuring ended (docs/method.md, "I/O in
            // flight at the end").
            None => Check::new(
                name,
                m.tolerated_ms.max(m.incomplete_avg_ms),
                m.limit_ms,
                m.pass,
            ),
        }
    };
    const NO_READ: &str = "no database read was measured";
    const NO_LOG: &str = "no log write was measured";
    let mut checks = vec![
        judged(
            "db_read_latency_avg_ms",
            worst_read_avg,
            t.db_read_avg_ms,
            none_of(Stream::DbRead, NO_READ),
        ),
        max_check(
            "db_read_latency_max_ms",
            &max_latency.db_read,
            Stream::DbRead,
            NO_READ,
        ),
        judged(
            "log_write_latency_avg_ms",
            worst_log_avg,
            t.log_write_avg_ms,
            none_of(Stream::LogWrite, NO_LOG),
        ),
        max_check(
            "log_write_latency_max_ms",
            &max_latency.log_write,
            Stream::LogWrite,
            NO_LOG,
        ),
        judged(
            "page_fault_stalls_per_s_avg",
            host.page_fault_stalls_per_s.avg,
            t.page_fault_stalls_per_s,
            nothing.or(engine
                .host
                .stalls_per_s
                .is_empty()
                .then_some("no sample was taken")),
        ),
        match nothing {
            Some(why) => Check::not_judged(
                "achieved_transactional_iops",
                target * (1.0 - t.iops_margin),
                why,
            ),
            None => Check::new(
                "achieved_transactional_iops",
                achieved,
                target * (1.0 - t.iops_margin),
                achieved >= target * (1.0 - t.iops_margin),
            ),
        },
        {
            let errors = integrity.damaged() as f64;
            if integrity.pages_verified == 0 && errors == 0.0 {
                Check::not_judged("data_integrity_errors", 0.0, "no page was read")
            } else {
                Check::new("data_integrity_errors", errors, 0.0, errors == 0.0)
            }
        },
    ];
    let errors: Vec<ErrorEntry> = integrity_errors(engine.dbs, &wall(times.ended))
        .into_iter()
        .chain(engine.dbs.iter().flat_map(|d| d.log_errors.iter().cloned()))
        .chain(engine.dbs.iter().flat_map(|d| d.io_errors.iter().cloned()))
        .chain(engine.hung.iter().cloned())
        .collect();
    // A patch is the remedy of a damaged page already counted, not another error.
    let counted = |e: &&ErrorEntry| e.class != "patched_page";
    for inst in &mut instances {
        inst.errors = errors
            .iter()
            .filter(counted)
            .filter(|e| e.instance.as_deref() == Some(inst.name.as_str()))
            .fold(0u64, |a, e| a.saturating_add(e.count));
    }
    // Every error met fails the test (Jetstress 2013), counted or not: listed only when there
    // was one (older results and the report's check table stay as they were).
    let total = errors
        .iter()
        .filter(counted)
        .fold(0u64, |a, e| a.saturating_add(e.count));
    if total > 0 {
        checks.push(Check::new("errors", total as f64, 0.0, false));
    }
    // A hung I/O fails the test, as any I/O error does in Jetstress 2013. The check is listed
    // only when one was seen (older results and the report's check table stay as they were).
    if !engine.hung.is_empty() {
        let n = engine.hung.len() as f64;
        checks.push(Check::new("hung_ios", n, 0.0, false));
    }
    // A measured phase cut short fails; one that ran its length is whole, whatever came after.
    if (times.interrupted && !times.measure_complete) || secs + 0.5 < cfg.duration_s {
        checks.push(Check::new(
            "completed_duration_s",
            secs,
            cfg.duration_s,
            false,
        ));
    }
    let verdict = Verdict::of(checks);
    let stopped = stop_of(times, &verdict, secs, cfg.duration_s);
    RunResult {
        schema: SCHEMA.into(),
        test: TestInfo {
            test_type: TestKind::Performance,
            start: wall(times.started),
            end: wall(times.ended),
            collection_start: wall(times.measure_start),
            collection_end: wall(times.measure_end),
            duration_s: secs,
            machine: hostname(),
            os: format!("{} {}", std::env::consts::OS, kernel_release()),
            tool_version: env!("CARGO_PKG_VERSION").into(),
            engine: engine_name.into(),
            direct: cfg.direct,
            interrupted: times.interrupted,
            reactors: 1,
            collection_start_unix_s: None,
            shutdown_s: None,
        },
        config: cfg.clone(),
        profile: ProfileBlock::of(cfg),
        target_iops: target,
        achieved_iops: achieved,
        database_size_bytes: DbSizes::default(),
        verdict,
        instances,
        host,
        integrity,
        samples_file: "samples.jsonl".into(),
        log_file: "test.log".into(),
        stopped,
        errors,
        notes: Vec::new(),
        tuning: None,
        pacing: Some(pacing_result(cfg, engine.txns)),
        max_latency: Some(max_latency),
        throughput: None,
        doctor: None,
        sections: Sections::default(),
    }
}

/// `max_latency` of the result: each maximum-latency check with the strict figures (the
/// slowest I/O, the largest per-sample average `sample_max`) and the value judged with the
/// `MaximumLatencyErrors` tolerance (docs/method.md, "Maximum latency").
fn max_latency_checks(
    cfg: &RunConfig,
    dbs: &[Database],
    read_sample_max: f64,
    log_sample_max: f64,
) -> MaxLatencyChecks {
    let t = &cfg.thresholds;
    let one = |k: usize, stream: Stream, limit: f64, sample_max: f64| {
        let mut m = MaxLatency {
            limit_ms: limit,
            sample_max_ms: sample_max,
            ..MaxLatency::default()
        };
        for db in dbs {
            let st = &db.stats;
            m.per_io_max_ms = m
                .per_io_max_ms
                .max(st.hist[stream as usize].percentiles().max);
            m.tolerated_ms = m.tolerated_ms.max(st.maxima[k].tolerated_value());
            m.samples_over = m.samples_over.max(st.maxima[k].over);
            let inc = &st.incomplete[stream as usize];
            m.incomplete_at_end = m.incomplete_at_end.saturating_add(inc.count);
            m.incomplete_avg_ms = m.incomplete_avg_ms.max(inc.avg_ms());
            m.incomplete_max_ms = m.incomplete_max_ms.max(inc.longest.as_secs_f64() * 1e3);
        }
        // The fewest samples of any instance: with no more than the tolerance, the check
        // cannot fail, so it judges nothing.
        m.samples = dbs
            .iter()
            .map(|d| d.stats.maxima[k].samples)
            .min()
            .unwrap_or(0);
        // The I/O in flight at the end is judged like one more sample, without tolerance: over
        // the limit, it fails the check however few samples there are.
        let stalled = m.incomplete_at_end > 0 && m.incomplete_avg_ms > limit;
        m.judged = m.samples > u64::from(t.max_latency_errors) || stalled;
        m.pass = m.judged && m.tolerated_ms <= limit && !stalled;
        m
    };
    MaxLatencyChecks {
        max_latency_errors: t.max_latency_errors,
        db_read: one(0, Stream::DbRead, t.db_read_max_ms, read_sample_max),
        log_write: one(1, Stream::LogWrite, t.log_write_max_ms, log_sample_max),
    }
}

/// `instances[].incomplete_at_end` of a database's per-stream figures.
fn incomplete_at_end(inc: &[stats::Incomplete; stats::STREAMS]) -> IncompleteAtEnd {
    let one = |s: Stream| {
        let i = &inc[s as usize];
        IncompleteIo {
            count: i.count,
            age_max_ms: i.oldest_at_end.as_secs_f64() * 1e3,
            latency_avg_ms: i.avg_ms(),
            latency_max_ms: i.longest.as_secs_f64() * 1e3,
            never_completed: i.never_completed,
        }
    };
    IncompleteAtEnd {
        db_read: one(Stream::DbRead),
        db_write: one(Stream::DbWrite),
        log_write: one(Stream::LogWrite),
        log_read: one(Stream::LogRead),
        bdm: one(Stream::Bdm),
    }
}

/// `pacing` of the result: how transactions were started over the measured phase and their
/// latencies, the figures of every reactor's workload merged (one reactor today).
fn pacing_result<'a>(
    cfg: &RunConfig,
    reactors: impl IntoIterator<Item = &'a workload::open::TxnStats>,
) -> PacingResult {
    let mut txn = workload::open::TxnStats::default();
    let mut per_sample = sampling::Running::default();
    for t in reactors {
        txn.merge(t);
        per_sample.merge(&t.backlog_per_sample);
    }
    let open = cfg.pacing == Pacing::Open;
    PacingResult {
        mode: cfg.pacing,
        arrivals: open.then_some(cfg.arrivals),
        late_threshold_ms: workload::open::LATE_AFTER.as_secs_f64() * 1e3,
        transactions_arrived: txn.arrived,
        transactions_started: txn.started,
        transactions_late: txn.late,
        transactions_dropped: txn.dropped,
        backlog_max: txn.backlog_max,
        backlog_max_per_sample: per_sample.amm(),
        transaction_latency_ms: pct(txn.service.percentiles()),
        latency_from_arrival_ms: pct(txn.from_arrival.percentiles()),
    }
}

/// The `errors[]` entries of the damaged pages: per instance, each page named (the first
/// `verify::NAMED_PAGES`), then one entry per class counting the rest, so the counts of a class
/// sum to its total in `integrity`.
fn integrity_errors(dbs: &[Database], at: &str) -> Vec<ErrorEntry> {
    let mut out = Vec::new();
    for inst in dbs {
        let (name, path) = (&inst.spec.name, &inst.spec.db_path);
        out.extend(inst.damage.entries(name, path));
        let g = &inst.integrity;
        let checksum = g
            .bad_pages
            .saturating_sub(g.unwritten_pages)
            .saturating_sub(g.wrong_database_pages);
        // Pages counted but not recorded one by one (soft recovery's beyond the named ones).
        for (class, total) in [
            ("bad_page", checksum),
            ("unwritten_page", g.unwritten_pages),
            ("wrong_database_page", g.wrong_database_pages),
            ("correctable_page", g.correctable_pages),
            ("wrong_page_number", g.wrong_page_number_pages),
            ("stale_page", g.stale_pages),
            ("patched_page", g.patched_pages),
        ] {
            let more = total.saturating_sub(inst.damage.count_of(class));
            if more > 0 {
                out.push(ErrorEntry {
                    class: class.into(),
                    instance: Some(name.clone()),
                    count: more,
                    first_at: at.to_string(),
                    message: format!("{more} {class} pages in {}", path.display()),
                    ..located(Some(path), None, true)
                });
            }
        }
    }
    out
}

fn hostname() -> String {
    std::fs::read_to_string("/proc/sys/kernel/hostname")
        .or_else(|_| std::fs::read_to_string("/etc/hostname"))
        .map(|s| s.trim().to_string())
        .ok()
        .filter(|s| !s.is_empty())
        .or_else(|| std::env::var("HOSTNAME").ok())
        // Windows names the computer in the environment.
        .or_else(|| std::env::var("COMPUTERNAME").ok())
        .unwrap_or_else(|| "unknown".into())
}

fn kernel_release() -> String {
    std::fs::read_to_string("/proc/sys/kernel/osrelease")
        .map(|s| s.trim().to_string())
        .unwrap_or_default()
}

/// The I/O backend `b` names: `mbx_io` mirrors the configuration's enum so it needs no
/// configuration crate.
pub fn engine_kind(b: mbx_config::IoBackend) -> EngineKind {
    match b {
        mbx_config::IoBackend::IoUring => EngineKind::IoUring,
        mbx_config::IoBackend::Sync => EngineKind::Sync,
        mbx_config::IoBackend::Iocp => EngineKind::Iocp,
    }
}

/// A histogram's summary in the result model's type (`mbx_io` mirrors it).
pub(crate) fn pct(p: mbx_io::Percentiles) -> Percentiles {
    Percentiles {
        avg: p.avg,
        p50: p.p50,
        p90: p.p90,
        p99: p.p99,
        p999: p.p999,
        max: p.max,
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
