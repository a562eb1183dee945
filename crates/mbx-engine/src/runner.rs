//! A test from start to end, as the application layer asks for it: the plan's databases made
//! ready, the plan executed on them, and whatever happened, an error included, turned into a
//! result. The caller resolves the configuration, builds the plan, renders the events and exports
//! the result; it does not orchestrate. [`start`] is the one way in (find-max, a search over
//! tests rather than a test, has [`execute_find_max`]).

use std::sync::atomic::AtomicBool;
use std::sync::mpsc;
use std::time::SystemTime;

use mbx_io::Clock;

use mbx_config::{RunConfig, TestKind};
use mbx_store::{CreateEvent, CreateParams, DatabaseSpec, PreparedDatabase, StoreError};

use crate::plan::{Databases, Plan};
use crate::result::RunResult;
use crate::{run_test, EngineError, Observer, QueueWrapper, RunEvent};

/// What [`execute`] gives back: always a result (what was measured and why the test ended), and
/// the error that stopped it, if one did.
#[derive(Debug)]
pub struct Executed {
    /// The result, ready for the exporters.
    pub result: RunResult,
    /// The error that stopped the test before it could end on its own, if any.
    pub error: Option<EngineError>,
}

/// The databases a test runs on.
pub enum Storage<'a> {
    /// Database files, made ready as the plan says ([`Databases`]: created or resumed, or
    /// attached), creation progress arriving as [`RunEvent::Prepare`]; opened on the
    /// configuration's I/O backend, its queue `wrap`ped (tests inject faults with it).
    Files {
        /// The database files and their log folders.
        specs: &'a [DatabaseSpec],
        /// How missing databases are created.
        create: &'a CreateParams,
        /// Wraps the run's I/O queue.
        wrap: Option<&'a QueueWrapper>,
    },
    /// Instances on a queue of the caller's (a real backend, or the simulated device and its
    /// clock): one reactor, the databases already there ([`crate::run_plan`]).
    Queue {
        /// The instances.
        specs: Vec<crate::InstanceSpec>,
        /// The queue every instance's I/O goes through.
        queue: Box<dyn mbx_io::IoQueue>,
    },
}

/// A test to run: its configuration, its plan and its databases.
pub struct RunRequest<'a> {
    /// The configuration (the test's figures, thresholds, sessions).
    pub cfg: &'a RunConfig,
    /// The plan (the test type's phases).
    pub plan: &'a Plan,
    /// Where it runs.
    pub storage: Storage<'a>,
    /// The disk subsystem throughput test (`sizing = "capacity"`, [`Storage::Files`] only): the
    /// search for the maximum transactional IOPS, then the plan's test type held at
    /// `throughput_pct` of it; the result carries `throughput` whatever happened.
    pub throughput: Option<(crate::findmax::FindMaxSpec, crate::throughput::Sized)>,
}

/// Runs a test from start to end: the one way to start a run from outside the engine. The
/// databases are made ready (or taken as they are), the session count tuned first when the
/// configuration asks for it ([`tunes`], on files), the plan executed, and whatever happened, an
/// error included, turned into a result that says why the test ended. Test-log lines frame it
/// as Jetstress's do: "Preparing for testing ...", one line per database, "Preparations for
/// testing are complete.", and a last line with how the test ended. (find-max, a search rather
/// than a test, is [`execute_find_max`].)
pub fn start(req: RunRequest<'_>, observer: &mut dyn Observer, cancel: &AtomicBool) -> Executed {
    let started = mbx_io::RealClock.wall();
    let RunRequest {
        cfg,
        plan,
        storage,
        throughput,
    } = req;
    match (storage, throughput) {
        (
            Storage::Files {
                specs,
                create,
                wrap,
            },
            None,
        ) => {
            let outcome = match ready_databases(plan, specs, create, observer, cancel, wrap) {
                Err(e) => Err((e, Some("prepare"))),
                Ok(prepared) if !tunes(cfg, plan) => {
                    run_test(cfg, plan, &prepared, observer, cancel, wrap).map_err(|e| (e, None))
                }
                Ok(prepared) => tune_then_run(
                    cfg,
                    plan,
                    started,
                    observer,
                    cancel,
                    &mbx_io::RealClock,
                    &mut |c, p, o| run_test(c, p, &prepared, o, cancel, wrap),
                )
                .map_err(|e| (e, None)),
            };
            finish(cfg, plan, started, outcome, observer)
        }
        (
            Storage::Files {
                specs,
                create,
                wrap,
            },
            Some((spec, sized)),
        ) => {
            let kind = plan.kind;
            let plan_for = move |c: &RunConfig| match kind {
                TestKind::Stress => Plan::stress(c),
                _ => Plan::performance(c),
            };
            let (outcome, record) =
                match ready_databases(plan, specs, create, observer, cancel, wrap) {
                    Err(e) => (Err((e, Some("prepare"))), None),
                    Ok(prepared) => {
                        let run = crate::throughput::throughput(
                            cfg,
                            spec,
                            sized,
                            &plan_for,
                            observer,
                            cancel,
                            &mbx_io::RealClock,
                            &mut |c, p, o| run_test(c, p, &prepared, o, cancel, wrap),
                        );
                        (run.outcome.map_err(|e| (e, None)), Some(run.record))
                    }
                };
            let mut executed = finish(cfg, plan, started, outcome, observer);
            executed.result.throughput = record.or_else(|| {
                Some(crate::result::Throughput {
                    capacity_pct: cfg.capacity_pct,
                    throughput_pct: cfg.throughput_pct,
                    free_bytes: sized.free_bytes,
                    database_bytes: sized.database_bytes,
                    end: "error".into(),
                    ..Default::default()
                })
            });
            executed
        }
        (Storage::Queue { specs, queue }, throughput) => {
            let clock = queue.clock();
            let started = clock.wall();
            let outcome = if throughput.is_some() {
                Err((
                    EngineError::Invalid(
                        "the throughput test searches on database files, not on one queue".into(),
                    ),
                    None,
                ))
            } else {
                crate::run_plan(cfg, plan, specs, queue, observer, cancel).map_err(|e| (e, None))
            };
            finish_at(cfg, plan, started, &*clock, outcome, observer)
        }
    }
}

/// Automatic tuning ([`crate::tune::tune`]), then `plan` with the session count it chose. `run`
/// runs a plan with its configuration (each tuning step, then the test) on the test's databases;
/// `clock` is the steps' clock. When tuning chooses no count (or is stopped), the test does not
/// run and the result says why, with the tuning record.
pub fn tune_then_run(
    cfg: &RunConfig,
    plan: &Plan,
    started: SystemTime,
    observer: &mut dyn Observer,
    cancel: &AtomicBool,
    clock: &dyn mbx_io::Clock,
    run: &mut crate::tune::StepRunner<'_>,
) -> Result<RunResult, EngineError> {
    let tuned = crate::tune::tune(cfg, observer, cancel, clock, run)?;
    let Some(sessions) = tuned.tuning.sessions else {
        return Ok(crate::assemble::untuned_result(
            cfg,
            started,
            clock.wall(),
            tuned,
        ));
    };
    let mut c = cfg.clone();
    c.threads = sessions;
    let mut r = run(&c, plan, observer)?;
    r.notes.insert(
        0,
        format!(
            "Automatic tuning chose {sessions} sessions in {} steps ({:.0} s): {} passed, {:.0}% kept over it as headroom.",
            tuned.tuning.steps.len(),
            tuned.tuning.elapsed_s,
            tuned.tuning.smallest_passing.unwrap_or(sessions),
            tuned.tuning.headroom_pct
        ),
    );
    r.tuning = Some(tuned.tuning);
    Ok(r)
}

/// The end of a test: the result (or one that says why there is none), its type, and the last
/// test-log line.
fn finish(
    cfg: &RunConfig,
    plan: &Plan,
    started: SystemTime,
    outcome: Result<RunResult, (EngineError, Option<&str>)>,
    observer: &mut dyn Observer,
) -> Executed {
    finish_at(cfg, plan, started, &mbx_io::RealClock, outcome, observer)
}

/// [`finish`] of a test whose time is `clock`'s.
fn finish_at(
    cfg: &RunConfig,
    plan: &Plan,
    started: SystemTime,
    clock: &dyn Clock,
    outcome: Result<RunResult, (EngineError, Option<&str>)>,
    observer: &mut dyn Observer,
) -> Executed {
    let (mut result, error) = match outcome {
        Ok(result) => (result, None),
        Err((e, phase)) => {
            let ended = clock.wall();
            (
                crate::assemble::stopped_result(cfg, started, ended, &e, phase),
                Some(e),
            )
        }
    };
    result.test.test_type = plan.kind;
    // Only the paced types have a target to compare with.
    let last = if !plan.kind.paced() {
        format!(
            "Test {}: {}.",
            result.stopped.reason.name().replace('_', " "),
            result.stopped.message
        )
    } else {
        format!(
            "Test {}: {}; achieved {:.1} of {:.1} target IOPS.",
            result.stopped.reason.name().replace('_', " "),
            result.stopped.message,
            result.achieved_iops,
            result.target_iops
        )
    };
    observer.on_event(RunEvent::Log(&last));
    Executed { result, error }
}

/// Makes the databases ready as `plan` says. The store creates databases on several threads;
/// their events come back to this thread through a channel, so the observer is only ever called
/// from here. Attached databases' headers are read through a queue `wrap`ped as the test's are.
fn ready_databases(
    plan: &Plan,
    specs: &[DatabaseSpec],
    create: &CreateParams,
    observer: &mut dyn Observer,
    cancel: &AtomicBool,
    wrap: Option<&QueueWrapper>,
) -> Result<Vec<PreparedDatabase>, EngineError> {
    match plan.databases {
        Databases::Prepare => {}
        Databases::Attach => return attach_databases(specs, observer, wrap),
    }
    observer.on_event(RunEvent::Log("Preparing for testing ..."));
    let (tx, rx) = mpsc::channel::<CreateEvent>();
    let mut planned = Vec::with_capacity(specs.len());
    let prepared = std::thread::scope(|s| {
        let worker = s.spawn(move || {
            let send = move |e: CreateEvent| {
                // The receiver lives until this thread ends: a send cannot fail.
                let _ = tx.send(e);
            };
            mbx_store::prepare(specs, create, &send, cancel, None)
        });
        for e in rx.iter() {
            if let CreateEvent::Planned { action, path, .. } = &e {
                planned.push(format!("{} {}", capitalize(action), path.display()));
            }
            observer.on_event(RunEvent::Prepare(&e));
        }
        worker
            .join()
            .unwrap_or_else(|panic| std::panic::resume_unwind(panic))
    });
    // What happened to each database is logged even when preparing another one failed.
    for line in &planned {
        observer.on_event(RunEvent::Log(line));
    }
    let prepared = prepared?;
    observer.on_event(RunEvent::Log("Preparations for testing are complete."));
    Ok(prepared)
}

/// Attaches existing, complete databases without writing anything ([`Databases::Attach`]). A
/// header that cannot be read is an I/O error (its path, offset and errno in the result), never
/// "not an mbxstress database".
fn attach_databases(
    specs: &[DatabaseSpec],
    observer: &mut dyn Observer,
    wrap: Option<&QueueWrapper>,
) -> Result<Vec<PreparedDatabase>, EngineError> {
    const FIRST: &str = "run `mbxstress prepare` or a performance test first";
    observer.on_event(RunEvent::Log("Attaching databases ..."));
    let mut out = Vec::with_capacity(specs.len());
    for s in specs {
        let path = s.path.display();
        if !s.path.exists() {
            return Err(EngineError::Invalid(format!(
                "no database at {path}: {FIRST}"
            )));
        }
        let read = mbx_store::HeldDatabases::open(&[s.path.as_path()], false, wrap);
        let header = match read.map(|h| h.header(0).cloned()) {
            Ok(Some(h)) => h,
            Ok(None) => return Err(EngineError::Invalid(format!("no header read from {path}"))),
            Err(StoreError::NotADatabase { .. }) => {
                return Err(EngineError::Invalid(format!(
                    "{path} is not an mbxstress database: {FIRST}"
                )))
            }
            Err(e) => return Err(e.into()),
        };
        if header.state == mbx_store::DbState::Creating
            || header.created_pages < header.data_pages()
        {
            return Err(EngineError::Invalid(format!(
                "{path} is incomplete ({} of {} data pages created): {FIRST}",
                header.created_pages,
                header.data_pages()
            )));
        }
        let line = format!("Attach {path}");
        observer.on_event(RunEvent::Log(&line));
        out.push(PreparedDatabase {
            spec: s.clone(),
            header,
            attached: true,
        });
    }
    observer.on_event(RunEvent::Log("Preparations for testing are complete."));
    Ok(out)
}

/// find-max from start to end: the databases made ready (created, resumed or attached, as for
/// a Performance test), then [`crate::findmax::find_max`] with each step run on them.
pub fn execute_find_max(
    cfg: &RunConfig,
    spec: crate::findmax::FindMaxSpec,
    specs: &[DatabaseSpec],
    create: &CreateParams,
    observer: &mut dyn Observer,
    cancel: &AtomicBool,
) -> Result<crate::findmax::Found, EngineError> {
    let plan = Plan::search_step(cfg);
    let prepared = ready_databases(&plan, specs, create, observer, cancel, None)?;
    crate::findmax::find_max(
        cfg,
        spec,
        observer,
        cancel,
        &mbx_io::RealClock,
        &mut |c, p, o| run_test(c, p, &prepared, o, cancel, None),
    )
}

/// Whether `plan` tunes its session count first: a Performance or Stress test without a thread
/// count (Jetstress's default; `SuppressTuning` is a thread count).
pub fn tunes(cfg: &RunConfig, plan: &Plan) -> bool {
    cfg.threads == 0 && matches!(plan.kind, TestKind::Performance | TestKind::Stress)
}

fn capitalize(s: &str) -> String {
    let mut c = s.chars();
    match c.next() {
        Some(f) => f.to_uppercase().chain(c).collect(),
        None => String::new(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::result::StopReason;
    use mbx_io::EngineKind;

    struct Recorder(Vec<String>);
    impl Observer for Recorder {
        fn on_event(&mut self, e: RunEvent<'_>) {
            match e {
                RunEvent::Log(l) => self.0.push(l.to_string()),
                RunEvent::Prepare(CreateEvent::Planned { action, .. }) => {
                    self.0.push(format!("planned {action}"))
                }
                _ => {}
            }
        }
    }

    fn params(data_pages: u64) -> CreateParams {
        CreateParams {
            data_pages,
            mailboxes: 1,
            quota_mb: 1,
            databases: 1,
            compressibility_pct: 0,
            engine: EngineKind::Sync,
            direct: false,
            force: false,
            allow_device: false,
            queue_depth: 4,
            tool_version: "test".into(),
        }
    }

    /// Executes the Performance plan on one database under `dir` of `data_pages` pages; the
    /// test log lines it produced come back with the outcome.
    fn execute_in(dir: &std::path::Path, data_pages: u64, cancel: bool) -> (Executed, Vec<String>) {
        let specs =
            mbx_store::plan_paths(&[dir.join("db")], &[dir.join("logs")], 1).expect("paths");
        let cfg = RunConfig::default();
        let mut obs = Recorder(Vec::new());
        let plan = Plan::performance(&cfg);
        let create = params(data_pages);
        let out = start(
            RunRequest {
                cfg: &cfg,
                plan: &plan,
                storage: Storage::Files {
                    specs: &specs,
                    create: &create,
                    wrap: None,
                },
                throughput: None,
            },
            &mut obs,
            &AtomicBool::new(cancel),
        );
        (out, obs.0)
    }

    #[test]
    fn a_refused_preparation_still_ends_in_a_result_that_says_why() {
        let dir = tempfile::tempdir().expect("tempdir");
        let db = dir.path().join("db");
        std::fs::create_dir_all(&db).expect("mkdir");
        // Somebody else's file where the database would go: never overwritten.
        std::fs::write(db.join("mbxstress001.edb"), b"not ours").expect("write");
        let (out, log) = execute_in(dir.path(), 32, false);
        let err = out.error.expect("refused");
        assert!(matches!(err, EngineError::Store(_)), "{err:?}");
        assert_eq!(out.result.stopped.reason, StopReason::Error);
        assert!(!out.result.verdict.pass());
        assert_eq!(
            std::fs::read(db.join("mbxstress001.edb")).expect("read"),
            b"not ours"
        );
        assert_eq!(
            log.first().map(String::as_str),
            Some("Preparing for testing ...")
        );
        let last = log.last().expect("a last line");
        assert!(last.starts_with("Test error: "), "{last}");
        assert!(!log
            .iter()
            .any(|l| l.starts_with("Preparations for testing are complete")));
    }

    #[test]
    fn an_interrupted_preparation_is_reported_as_interrupted() {
        let dir = tempfile::tempdir().expect("tempdir");
        let (out, log) = execute_in(dir.path(), 4096, true);
        assert!(out.error.is_some());
        assert_eq!(out.result.stopped.reason, StopReason::Interrupted);
        assert!(out.result.test.interrupted);
        assert!(log.iter().any(|l| l == "planned create"), "{:?}", log);
        assert!(log.iter().any(|l| l.starts_with("Create ")), "{:?}", log);
    }
}
