//! Running a plan: the databases opened, each phase executed on a reactor, the result
//! assembled ([`crate::assemble`]). The entry points below take prepared databases (a real
//! backend) or a queue and instance specs (a real backend or the simulated device).

use std::path::Path;
use std::sync::atomic::AtomicBool;
use std::sync::{mpsc, Arc};
use std::time::Duration;

use mbx_config::{Pacing, RunConfig};
use mbx_io::{open_queue, Clock, Files, IoQueue};
use mbx_store::{DbState, PreparedDatabase};

use crate::assemble;
use crate::db::{self, Database, DbParams, InstanceSpec, LogStart};
use crate::exec::{Engine, Settings};
use crate::model;
use crate::multi::{self, Forward, Gate, HaltOnPanic, Link, Merger, Share};
use crate::phase;
use crate::plan::Plan;
use crate::reactor::Reactor;
use crate::result::*;
use crate::sampling::HostSeries;
use crate::stats::{self};
use crate::workload::open::OpenLoop;
use crate::workload::pacing::{Pacer, PacerConfig};
use crate::workload::session::Workload;
use crate::{
    engine_kind, EngineError, Observer, Phase, QueueWrapper, RunEvent, RunTimes, PATCH_SLOTS,
};

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
                class: ErrorClass::HeaderCopyDamaged,
                instance: specs.get(k).map(|s| s.name.clone()),
                count: 1,
                first_at: crate::rfc3339(mbx_io::RealClock.wall()),
                message: line,
                ..crate::errors::located(
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
    let reactors = multi::reactors_for(cfg, plan, specs.len());
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
        assemble::verdict::damaged_header(&mut result);
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
        assemble::stop_with_error(result, &e, mbx_io::RealClock.wall(), Some(Phase::Shutdown));
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
    Ok(assemble::finish(cfg, plan, vec![part], None, observer))
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
) -> Result<assemble::Part, EngineError> {
    let mut reactor = Reactor::new(queue);
    let clock = reactor.clock().clone();
    let (ref_instant, ref_wall) = (clock.now(), clock.wall());
    // Generations above anything an earlier run wrote: microseconds since the epoch.
    let gen_base = ref_wall
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_micros() as u64)
        .unwrap_or(0);
    let mut dbs = open_databases(cfg, share, specs, &mut reactor, (ref_instant, gen_base))?;
    let engine_name = reactor.engine_name();
    let settings = settings_of(cfg, share);
    let t = &cfg.thresholds;
    let tolerated = t.max_latency_errors as usize;
    for db in &mut dbs {
        db.stats.maxima = [
            stats::SampleMaxima::new(tolerated, t.db_read_max_ms),
            stats::SampleMaxima::new(tolerated, t.log_write_max_ms),
        ];
    }
    let work = workload(cfg, share, ref_instant)?;
    let mut engine = Engine::new(settings, reactor, dbs, work, observer);
    engine.join(gate, share.index == 0);
    log_settings(&mut engine, cfg, share);
    let outcome = crate::phase::execute(&mut engine, plan, cancel);
    engine.journal_lines();
    // Retired log files are deleted in the background: a failure there is the test's too.
    let outcome = outcome.and_then(|()| engine.wait_removals());
    Ok(part_of(
        engine,
        outcome,
        (ref_instant, ref_wall),
        engine_name,
    ))
}

/// The reactor's part of the result, once its phases are done (`outcome`): what was in flight
/// is settled and the shutdown logged.
fn part_of(
    mut engine: Engine<'_>,
    outcome: Result<(), EngineError>,
    (ref_instant, ref_wall): (std::time::Instant, std::time::SystemTime),
    engine_name: &'static str,
) -> assemble::Part {
    let end = engine.now();
    // An error that stopped the test while it measured ended the measured phase too: what was
    // in flight then is carried as at its end.
    if engine.dbs().iter().any(|d| d.stats.measuring) {
        engine.carry_in_flight(end);
    }
    // I/O carried past the measured phase and still in flight counts with its age now.
    engine.settle_carried(end);
    let shutdown = engine
        .shutdown_start()
        .map(|t| end.saturating_duration_since(t));
    if let Some(d) = shutdown {
        let line = engine.shutdown_line(d);
        engine.log(&line, false);
    }
    let marks = engine.marks();
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
    let stopped_in = engine.phase();
    let left = engine.leftovers();
    assemble::Part {
        dbs: left.dbs,
        hung: left.hung,
        notes: left.notes,
        host: left.host,
        pass_report: left.pass_report,
        times,
        measure_start_wall: marks.measure_start_wall,
        ref_instant,
        ref_wall,
        engine_name,
        txn: left.txn,
        outcome,
        shutdown,
        stopped_in,
        machine: left.machine,
    }
}

/// Opens the databases `specs` of `share` on `reactor`, their page generations from `gen_base`.
fn open_databases(
    cfg: &RunConfig,
    share: &multi::Share,
    specs: Vec<InstanceSpec>,
    reactor: &mut Reactor,
    (ref_instant, gen_base): (std::time::Instant, u64),
) -> Result<Vec<Database>, EngineError> {
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
        dbs.push(Database::open(spec, params, reactor, ref_instant)?);
    }
    Ok(dbs)
}

/// The executor's settings for `share` of the test `cfg`.
fn settings_of(cfg: &RunConfig, share: &multi::Share) -> Settings {
    Settings {
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
    }
}

/// The sessions of `share`, paced from `ref_instant`.
fn workload(
    cfg: &RunConfig,
    share: &multi::Share,
    ref_instant: std::time::Instant,
) -> Result<Workload, EngineError> {
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
    Ok(Workload::new(
        share.sessions,
        share.seed,
        cfg.op_mix.clone(),
        share.mailboxes,
        pacer,
        open,
    ))
}

/// Logs the test's settings (with several reactors, the first logs them once) and this
/// reactor's bookkeeping.
fn log_settings(engine: &mut Engine<'_>, cfg: &RunConfig, share: &multi::Share) {
    // With several reactors, the first logs the test's settings once (its sessions: all of
    // them); each logs its own bookkeeping.
    let several = engine.several();
    let settings_lines = !several || share.index == 0;
    let c = &engine.dbs()[0].cache;
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
        engine.dbs().iter().fold((0, 0, 0), |(c, t, j), d| {
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

/// Creates the I/O queue of a reactor, given the reactor's number and the queue depth it needs.
/// It is called on the reactor's thread (an io_uring ring takes submissions only from the
/// thread that set it up).
pub type QueueFactory<'a> =
    dyn Fn(usize, usize) -> Result<Box<dyn IoQueue>, EngineError> + Sync + 'a;

/// Runs `plan` on `reactors` reactors, each on its own thread with its own queue from
/// `queue_for`, the databases `specs` partitioned among them ([`Share::split`]); one reactor
/// (or a plan [`reactors_for`] keeps on one) is exactly [`crate::run_plan`]. Events reach
/// `observer` on this thread; the result covers every database.
pub fn run_plan_reactors(
    cfg: &RunConfig,
    plan: &Plan,
    specs: Vec<InstanceSpec>,
    reactors: usize,
    queue_for: &QueueFactory<'_>,
    observer: &mut dyn Observer,
    cancel: &AtomicBool,
) -> Result<RunResult, EngineError> {
    let n = specs.len();
    let single = plan.reads_only()
        || plan.final_pass().is_some()
        || plan.log_files_to_replay().is_some()
        || reactors.min(n) <= 1;
    if single {
        let q = queue_for(0, queue_depth(cfg, n))?;
        let mut result = run_plan(cfg, plan, specs, q, observer, cancel)?;
        result.test.reactors = 1;
        return Ok(result);
    }
    let shares = Share::split(cfg, n, reactors);
    let mut depths = Vec::with_capacity(shares.len());
    let mut groups = Vec::with_capacity(shares.len());
    let mut specs = specs.into_iter();
    for sh in &shares {
        let k = if sh.index + 1 < shares.len() {
            shares[sh.index + 1].first_db - sh.first_db
        } else {
            n - sh.first_db
        };
        groups.push(specs.by_ref().take(k).collect::<Vec<_>>());
        depths.push(queue_depth_for(cfg, sh.sessions, k));
    }
    let gate = Arc::new(Gate::new(shares.len()));
    let line = format!(
        "Running on {} reactors (threads), the databases partitioned among them: {}.",
        shares.len(),
        shares
            .iter()
            .zip(&groups)
            .map(|(s, g)| format!(
                "reactor {}: {} database(s), {} session(s), {:.0} IOPS target",
                s.index + 1,
                g.len(),
                s.sessions,
                s.target_iops
            ))
            .collect::<Vec<_>>()
            .join("; ")
    );
    observer.on_event(RunEvent::Log(&line));
    let (tx, rx) = mpsc::channel();
    let mut merger = Merger {
        n: shares.len(),
        observer,
        progress: vec![None; shares.len()],
        samples: (0..shares.len()).map(|_| Default::default()).collect(),
        host: HostSeries::default(),
    };
    let parts = std::thread::scope(|scope| {
        let mut handles = Vec::new();
        for ((sh, group), depth) in shares.iter().zip(groups).zip(depths) {
            let tx = tx.clone();
            let link = Link {
                gate: Arc::clone(&gate),
                me: sh.index,
            };
            let stop = link.clone();
            handles.push(scope.spawn(move || {
                let _guard = HaltOnPanic(stop.clone());
                let mut fwd = Forward { r: sh.index, tx };
                let part = queue_for(sh.index, depth)
                    .and_then(|q| run_part(cfg, plan, group, sh, q, &mut fwd, cancel, Some(link)));
                if part.as_ref().map_or(true, |p| p.outcome.is_err()) {
                    stop.halt();
                }
                part
            }));
        }
        drop(tx);
        for (r, m) in rx {
            merger.on(r, m);
        }
        handles
            .into_iter()
            .map(|h| {
                h.join().unwrap_or_else(|_| {
                    Err(EngineError::Invalid(
                        "internal: a reactor thread panicked".into(),
                    ))
                })
            })
            .collect::<Vec<_>>()
    });
    merger.flush();
    let parts = parts.into_iter().collect::<Result<Vec<_>, _>>()?;
    let host = std::mem::take(&mut merger.host);
    let mut result = crate::assemble::finish(cfg, plan, parts, Some(host), merger.observer);
    result.test.reactors = u32::try_from(shares.len()).unwrap_or(u32::MAX);
    Ok(result)
}
