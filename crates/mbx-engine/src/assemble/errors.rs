//! Errors in a result: the entry an error makes, the stop it causes, and the results of tests
//! that stopped (or never ran) before anything was measured.

use std::path::Path;
use std::time::SystemTime;

use mbx_config::{RunConfig, TestKind};
use mbx_store::StoreError;

use mbx_io::Clock;

use super::{hostname, kernel_release, verdict};
use crate::errors::{is_no_space, located};
use crate::result::*;
use crate::{rfc3339, EngineError, Phase};

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
        verdict::integrity_stop(result);
        return;
    }
    let entry = error_entry(e, &result.instances, at);
    let reason = if entry.class.is_os_io() {
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
    verdict::errors_met(result);
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
                    ErrorClass::NoSpace
                } else {
                    ErrorClass::IoError
                },
                Some(path.clone()),
                *offset,
                error.raw_os_error(),
            ),
            mbx_io::IoError::Short { path, offset, .. } => {
                (ErrorClass::IoError, Some(path.clone()), Some(*offset), None)
            }
            mbx_io::IoError::Unsupported(_) => (ErrorClass::IoError, None, None, None),
        },
        _ => (ErrorClass::Error, None, None, None),
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
        class,
        instance,
        errno,
        count: 1,
        first_at: rfc3339(at),
        message: e.to_string(),
        ..located(path.as_deref(), offset, in_database)
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
        verdict: verdict::unmeasured(cfg),
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

/// The result of a test whose tuning found no session count to run it with (or was stopped).
pub(crate) fn untuned_result(
    cfg: &RunConfig,
    started: SystemTime,
    ended: SystemTime,
    tuned: crate::tune::Tuned,
) -> RunResult {
    let no_count = format!(
        "automatic tuning found no session count up to {} that meets {:.1} IOPS within every threshold: the storage cannot carry this target (the steps are in `tuning`); lower the target or give --threads to run the test anyway",
        tuned.tuning.steps.iter().map(|s| s.sessions).max().unwrap_or(0),
        cfg.target_iops()
    );
    let mut r = search_not_run(
        cfg,
        started,
        ended,
        NotRun {
            last: tuned.last,
            end: &tuned.tuning.end,
            steps: &tuned.tuning.steps,
            what: "automatic tuning",
            record: "tuning",
            check: "automatic_tuning",
            found_nothing: no_count,
        },
    );
    r.tuning = Some(tuned.tuning);
    r
}

/// What [`search_not_run`] reports: how the search before the test ended and what it ran.
pub(crate) struct NotRun<'a> {
    /// The last step's result (its stop, its errors).
    pub last: Option<RunResult>,
    /// How the search ended ("interrupted", "error", or why it found nothing).
    pub end: &'a str,
    /// Its steps.
    pub steps: &'a [crate::result::SearchStep],
    /// Its name in messages ("automatic tuning").
    pub what: &'a str,
    /// Its key in result.json ("tuning").
    pub record: &'a str,
    /// The check that fails when it found nothing ("automatic_tuning").
    pub check: &'a str,
    /// The stop message when it found nothing.
    pub found_nothing: String,
}

/// The result of a test that never ran because the search before it (automatic tuning, the
/// throughput search) found nothing, was interrupted or met an error: no figures of its own (a
/// step's figures are the step's, in the search's record, never the test's), and a stop that
/// says why, in phase `tuning`. An error a step met stays in `errors[]` (it is the storage's).
pub(crate) fn search_not_run(
    cfg: &RunConfig,
    started: SystemTime,
    ended: SystemTime,
    s: NotRun<'_>,
) -> RunResult {
    let last_stop = s.last.as_ref().map(|r| r.stopped.clone());
    let step = s
        .steps
        .last()
        .map(|st| {
            let phase = last_stop
                .as_ref()
                .and_then(|l| l.phase.as_deref())
                .map(|p| format!(", in its {p} phase"))
                .unwrap_or_default();
            format!(
                " (step {}, {} session(s){phase})",
                s.steps.len(),
                st.sessions
            )
        })
        .unwrap_or_default();
    let not_run = format!(
        "the test did not run, so nothing of its own was measured (the steps are in `{}`)",
        s.record
    );
    let stopped = match s.end {
        "interrupted" => Stopped::new(
            StopReason::Interrupted,
            format!("interrupted during {}{step}: {not_run}", s.what),
        ),
        "error" => {
            let (reason, message) = last_stop
                .map(|l| (l.reason, l.message))
                .unwrap_or((StopReason::Error, "an error".into()));
            let reason = if reason.ran_to_completion() || reason == StopReason::Interrupted {
                StopReason::Error
            } else {
                reason
            };
            Stopped::new(
                reason,
                format!("{} stopped{step}: {message}; {not_run}", s.what),
            )
        }
        _ => Stopped::new(StopReason::VerdictFailed, s.found_nothing),
    };
    let found_nothing = stopped.reason == StopReason::VerdictFailed;
    let mut r = unmeasured_result_at(cfg, started, ended, stopped.in_phase("tuning"));
    if found_nothing {
        verdict::found_nothing(&mut r, s.check);
    }
    if let Some(last) = s.last.filter(|_| !found_nothing) {
        r.errors = last.errors;
        if verdict::error_total(&r.errors) > 0 {
            verdict::errors_met(&mut r);
        }
    }
    r.notes.insert(
        0,
        format!(
            "The test did not run: {} ended without a choice ({}); its steps' figures are in `{}`, never the test's.",
            s.what, s.end, s.record
        ),
    );
    r
}

/// The result of a test that an error stopped before the engine could produce one (`phase`:
/// where, when known).
pub(crate) fn stopped_result(
    cfg: &RunConfig,
    started: SystemTime,
    ended: SystemTime,
    e: &EngineError,
    phase: Option<&str>,
) -> RunResult {
    let reason = match e {
        EngineError::Store(StoreError::Interrupted { .. }) => StopReason::Interrupted,
        EngineError::Io(_) | EngineError::Store(StoreError::Io(_)) => StopReason::IoError,
        _ => StopReason::Error,
    };
    let mut stopped = Stopped::new(reason, e.to_string());
    stopped.phase = phase.map(str::to_string);
    let mut r = unmeasured_result_at(cfg, started, ended, stopped);
    if reason == StopReason::IoError {
        r.errors.push(error_entry(e, &[], ended));
        verdict::errors_met(&mut r);
    }
    r
}
