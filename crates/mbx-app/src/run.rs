//! One test: resolve its configuration, build the plan, have the engine execute it (preparing
//! the databases is the plan's first step), persist samples, log and result as the events
//! arrive, and export the result. Everything the user sees goes to an [`EventSink`]: the stream
//! ([`Event`]) and the terminal's notices ([`Notice`]).

use std::fs::File;
use std::io::{BufWriter, Write};
use std::path::{Path, PathBuf};
use std::sync::atomic::AtomicBool;
use std::sync::Arc;

use mbx_config::{RunConfig, TestKind};
use mbx_engine::result::{RunResult, StopReason};
use mbx_engine::{Executed, Observer, Plan, RunEvent};
use mbx_store::{plan_paths, CreateParams, DatabaseSpec, LockMode, StoreLock};

use crate::config::Layers;
use crate::error::IoContext;
use crate::event::{Event, EventSink, LogKind, Notice, RunStart};
use crate::results_folder::results_dir;
use crate::AppError;

/// The fast subset of `doctor` a run performs before the test (recorded in result.json, never
/// a verdict): given the test's configuration, databases and how they are created.
pub type Preflight<'a> =
    &'a dyn Fn(&RunConfig, &[DatabaseSpec], &CreateParams) -> mbx_result::DoctorReport;

/// What to run.
pub struct RunRequest<'a> {
    /// The configuration's layers, read.
    pub layers: &'a Layers,
    /// The test type.
    pub kind: TestKind,
    /// The results folder (new or empty); `None`: a time-stamped one.
    pub out: Option<PathBuf>,
    /// Overwrite files that are not mbxstress databases.
    pub force: bool,
    /// Allow unused block devices as database paths.
    pub allow_device: bool,
    /// `fleet run`'s synchronized start: the measured phase waits for it.
    pub gate: Option<Arc<mbx_engine::StartGate>>,
    /// Set to stop the test (Ctrl-C; the result is written).
    pub cancel: &'a AtomicBool,
    /// The preflight checks.
    pub preflight: Preflight<'a>,
}

/// How one test ended.
#[derive(Debug, Clone)]
pub struct Ran {
    /// Why it stopped.
    pub reason: StopReason,
    /// Its verdict.
    pub pass: bool,
    /// Its result.json.
    pub path: PathBuf,
}

/// Runs one test (see the module documentation): the configuration from `req.layers` for its
/// type, then [`run_one`].
pub fn run(req: &RunRequest<'_>, sink: &mut dyn EventSink) -> Result<Ran, AppError> {
    let cfg = req.layers.resolve_for(req.kind)?;
    run_one(req, cfg, sink)
}

/// Persists engine events and passes them on: test.log and samples.jsonl are written (and
/// flushed) as events arrive, so a crash loses at most the current interval.
pub(crate) struct RunObserver<'s> {
    log: BufWriter<File>,
    samples: BufWriter<File>,
    sink: &'s mut dyn EventSink,
    /// Errors writing test.log or samples.jsonl (the run goes on; each is a warning).
    pub(crate) errors: Vec<String>,
    /// When the last `create` event went out (at most one a second, so `fleet run`'s watchdog
    /// hears from a host that is creating its databases).
    last_create_event: Option<std::time::Instant>,
}

impl<'s> RunObserver<'s> {
    pub(crate) fn new(dir: &Path, sink: &'s mut dyn EventSink) -> Result<Self, AppError> {
        use crate::results_folder::create_new;
        Ok(RunObserver {
            log: create_new(dir, "test.log")?,
            samples: create_new(dir, "samples.jsonl")?,
            sink,
            errors: Vec::new(),
            last_create_event: None,
        })
    }

    /// A notice to the sink (its errors end nothing here: the run goes on).
    pub(crate) fn notice(&mut self, n: &Notice<'_>) {
        let _ = self.sink.notice(n);
    }

    /// The sink, after the engine returned.
    pub(crate) fn sink(&mut self) -> &mut dyn EventSink {
        self.sink
    }

    fn log_line(&mut self, text: &str, kind: LogKind) {
        if let Err(e) = crate::results_folder::log_line(&mut self.log, text) {
            self.errors.push(format!("writing test.log: {e}"));
        }
        self.sink.event(&Event::Log {
            text: text.to_string(),
            kind,
        });
    }
}

impl Observer for RunObserver<'_> {
    fn on_search_line(&mut self, line: &str) {
        self.log_line(line, LogKind::Tuning);
    }

    fn on_event(&mut self, e: RunEvent<'_>) {
        match e {
            RunEvent::Log(text) => self.log_line(text, LogKind::Plain),
            RunEvent::Prepare(e) => {
                self.notice(&Notice::Prepare(e));
                if let mbx_store::CreateEvent::Progress { index, bytes_done } = e {
                    let due = self
                        .last_create_event
                        .is_none_or(|t| t.elapsed() >= std::time::Duration::from_secs(1));
                    if due {
                        self.last_create_event = Some(std::time::Instant::now());
                        self.sink.event(&Event::Create {
                            database: *index as usize,
                            bytes_done: *bytes_done,
                        });
                    }
                }
            }
            RunEvent::Phase(phase) => {
                self.sink.event(&Event::Phase { phase });
                if phase == mbx_engine::Phase::WaitStart {
                    // `fleet run` waits for this from every host before it sends the start.
                    self.sink.event(&Event::Ready {
                        pid: std::process::id(),
                    });
                }
            }
            RunEvent::Progress(progress) => self.sink.event(&Event::Progress { progress }),
            RunEvent::Sample(v) => {
                // One line per sample, flushed: a crash loses at most the line being written
                // (which `report` then skips).
                let written = serde_json::to_vec(v)
                    .map_err(std::io::Error::other)
                    .and_then(|mut line| {
                        line.push(b'\n');
                        self.samples.write_all(&line)
                    })
                    .and_then(|_| self.samples.flush());
                if let Err(e) = written {
                    self.errors.push(format!("writing samples.jsonl: {e}"));
                }
                self.sink.event(&Event::Sample { sample: v.clone() });
            }
        }
    }
}

/// Backup and Checksum read the databases that are there. When nothing gives a size (no
/// mailboxes or quota from a flag, a profile, a Jetstress configuration or the --config file),
/// the size is the databases' own: the first database's header sets the profile (mailboxes,
/// quota, and the database count and compressibility unless set) and the data pages each,
/// which are returned. `None` when a size was given, for other tests, with capacity sizing, or
/// when there is no mbxstress database to read (Backup then creates one as the Performance test
/// does; Checksum says to prepare one).
fn size_from_databases(
    layers: &Layers,
    kind: TestKind,
    cfg: &mut RunConfig,
) -> Result<Option<u64>, AppError> {
    let size_given = layers.is_set("mailboxes") || layers.is_set("mailbox_quota_mb");
    if !matches!(kind, TestKind::Backup | TestKind::Checksum)
        || size_given
        || cfg.sizing == mbx_config::Sizing::Capacity
    {
        return Ok(None);
    }
    let specs = plan_paths(&cfg.db_paths, &cfg.log_paths, cfg.profile.databases)?;
    let Some(first) = specs.first().filter(|s| s.path.exists()) else {
        return Ok(None);
    };
    let h = match mbx_store::verify::read_database_header(&first.path) {
        Ok(h) => h,
        // Not ours: preparing (Backup) or attaching (Checksum) refuses it with the reason.
        Err(mbx_store::StoreError::NotADatabase { .. }) => return Ok(None),
        Err(e) => {
            return Err(AppError::Store(e).context(format!(
                "reading the size of the existing database {}",
                first.path.display()
            )))
        }
    };
    let p = &mut cfg.profile;
    if h.mailboxes > 0 && h.quota_mb > 0 {
        p.mailboxes = h.mailboxes;
        p.mailbox_quota_mb = h.quota_mb;
    }
    if !layers.is_set("databases") && h.databases > 0 {
        p.databases = h.databases;
    }
    if !layers.is_set("compressibility_pct") {
        cfg.compressibility_pct = h.compressibility_pct;
    }
    Ok(Some(h.data_pages()))
}

/// How the databases of `cfg` are created (or attached) for a test: `data_pages` each.
pub fn create_params(
    cfg: &RunConfig,
    data_pages: u64,
    force: bool,
    allow_device: bool,
) -> CreateParams {
    let p = &cfg.profile;
    CreateParams {
        data_pages,
        mailboxes: p.mailboxes,
        quota_mb: p.mailbox_quota_mb,
        databases: p.databases,
        compressibility_pct: cfg.compressibility_pct,
        engine: mbx_engine::engine_kind(cfg.engine),
        direct: cfg.direct,
        force,
        allow_device,
        queue_depth: 4,
        tool_version: env!("CARGO_PKG_VERSION").to_string(),
    }
}

/// The throughput search's budgets: find-max's (12 steps, 4 h), unless the --config file sets
/// `tuning.max_steps` or `tuning.max_s` (the search is this test category's tuning).
fn throughput_spec(layers: &Layers, cfg: &RunConfig) -> mbx_engine::findmax::FindMaxSpec {
    let d = mbx_engine::findmax::FindMaxSpec::default();
    mbx_engine::findmax::FindMaxSpec {
        max_steps: if layers.config_sets("tuning.max_steps") {
            cfg.tuning.max_steps as usize
        } else {
            d.max_steps
        },
        max_s: if layers.config_sets("tuning.max_s") {
            cfg.tuning.max_s
        } else {
            d.max_s
        },
        ..d
    }
}

/// Runs one `req.kind` test with `cfg`, its results in `req.out`: builds the plan, executes it,
/// writes the result and the report, and tells the sink (the result's events, then the
/// summary's notice). An error that stopped the test is returned after its result is written.
pub fn run_one(
    req: &RunRequest<'_>,
    mut cfg: RunConfig,
    sink: &mut dyn EventSink,
) -> Result<Ran, AppError> {
    let kind = req.kind;
    let plan_for: fn(&RunConfig) -> Plan = match kind {
        TestKind::Performance => Plan::performance,
        TestKind::Stress => Plan::stress,
        TestKind::Backup => Plan::backup,
        TestKind::Checksum => Plan::checksum,
        TestKind::SoftRecovery => |cfg| Plan::soft_recovery(cfg, cfg.log_files_to_replay),
    };
    let from_headers = size_from_databases(req.layers, kind, &mut cfg)?;
    let p = &cfg.profile;
    let specs = plan_paths(&cfg.db_paths, &cfg.log_paths, p.databases)?;
    let (sized, data_pages) = size_databases(req, &cfg, &specs, from_headers)?;
    let mut plan = plan_for(&cfg);
    if let Some(g) = &req.gate {
        if !plan.wait_for_start(Arc::clone(g)) {
            return Err(AppError::usage(format!(
                "--start-gate (used by `fleet run`) needs a test with a measured phase, and the {} test has none: use --test performance, stress or soft-recovery",
                kind.name()
            )));
        }
    }
    // One command per database at a time: a second run on these databases stops here, before
    // it creates a results folder or touches anything. Any other refusal from here on (a
    // read-only --db-path) leaves a result.json that says why.
    let dir = results_dir(req.out.as_deref())?;
    let started = std::time::SystemTime::now();
    let lock = StoreLock::acquire(&specs, LockMode::Exclusive)
        .map_err(|e| refused(&dir, &cfg, kind, started, AppError::Store(e), sink))?;
    fs_err::create_dir_all(&dir).io_context("creating the results folder")?;
    let observer = match RunObserver::new(&dir, sink) {
        Ok(o) => o,
        Err(e) => return Err(refused(&dir, &cfg, kind, started, e, sink)),
    };
    let mut observer = observer;
    // result.json from the first second: it says the test is running until the end replaces
    // it, so a run killed on the way (kill -9, out of memory, power lost) leaves a result that
    // says it never finished.
    let result_path = dir.join("result.json");
    mbx_report::export::write_result(&result_path, &running_result(&cfg, kind, started)).map_err(
        |source| AppError::Report {
            context: "writing the result".into(),
            source,
        },
    )?;
    let start = RunStart {
        kind,
        config: cfg.clone(),
        data_pages,
        sized: sized.as_ref().map(|s| (s.free_bytes, s.reused)),
        from_headers: from_headers.is_some(),
        tuning_step_s: mbx_engine::tunes(&cfg, &plan_for(&cfg))
            .then(|| mbx_engine::tune::step_length(&cfg).step_s),
        dir: dir.clone(),
    };
    observer.notice(&Notice::RunStart(&start));
    let create = create_params(&cfg, data_pages, req.force, req.allow_device);
    // The fast subset of `mbxstress doctor` (about a second): recorded, never a verdict.
    let doctor = (req.preflight)(&cfg, &specs, &create);
    observer.sink().event(&Event::Doctor {
        doctor: doctor.clone(),
    });
    // The engine's one entry point: the databases made ready as the plan says, tuning first
    // when the test tunes, or the disk subsystem throughput test when the size came from the
    // free space.
    let throughput = sized.as_ref().map(|s| {
        (
            throughput_spec(req.layers, &cfg),
            mbx_engine::throughput::Sized {
                free_bytes: s.free_bytes,
                database_bytes: s.database_bytes,
            },
        )
    });
    let Executed { mut result, error } = mbx_engine::start(
        mbx_engine::RunRequest {
            cfg: &cfg,
            plan: &plan,
            storage: mbx_engine::Storage::Files {
                specs: &specs,
                create: &create,
                wrap: None,
            },
            throughput,
        },
        &mut observer,
        req.cancel,
    );
    result.doctor = Some(doctor);
    observer.notice(&Notice::EngineDone);
    let error = error.map(AppError::Engine);
    // result.json replaces the one written as the test started (atomically and durably), then
    // the report from the files on disk through the exporters.
    let written = mbx_report::export::write_result(&result_path, &result).map_err(|source| {
        AppError::Report {
            context: "writing the result".into(),
            source,
        }
    });
    let errors = std::mem::take(&mut observer.errors);
    drop(observer);
    for e in errors {
        let _ = sink.notice(&Notice::Warning(e));
    }
    drop(lock);
    conclude(kind, result, error, written, &dir, result_path, sink)
}

/// A test's end once its result.json is written (or not: `written`): the report from the files
/// on disk (a failure to write it is a warning), the result's events and the summary's notice.
fn conclude(
    kind: TestKind,
    result: RunResult,
    error: Option<AppError>,
    written: Result<(), AppError>,
    dir: &Path,
    result_path: PathBuf,
    sink: &mut dyn EventSink,
) -> Result<Ran, AppError> {
    if let Err(write_err) = written {
        // Nothing else to keep the figures in: say so loudly, with the original error if any.
        return Err(match error {
            Some(e) => e.context(write_err.chain_text()),
            None => write_err,
        });
    }
    // The report is a convenience on top of result.json: a failure to write it is a warning.
    let measured = !result.instances.is_empty()
        || !result.sections.is_empty()
        || result.tuning.is_some()
        || result.throughput.is_some();
    let report = if !measured {
        None
    } else {
        match mbx_report::write_report(dir, None) {
            Ok(files) => files.into_iter().next(),
            Err(e) => {
                let _ = sink.notice(&Notice::Warning(format!(
                    "could not write the HTML report: {e}"
                )));
                None
            }
        }
    };
    for e in &result.errors {
        sink.event(&Event::Error { error: e.clone() });
    }
    sink.event(&Event::Result {
        path: result_path.clone(),
        pass: result.verdict.pass(),
        verdict: result.verdict.state().name().to_string(),
        stopped: result.stopped.clone(),
    });
    sink.notice(&Notice::RunEnd {
        kind,
        result: &result,
        path: &result_path,
        report: report.as_deref(),
    })
    .map_err(AppError::Output)?;
    if let Some(e) = error {
        return Err(e);
    }
    if matches!(
        result.stopped.reason,
        StopReason::IoError | StopReason::IntegrityError | StopReason::Error | StopReason::Running
    ) {
        let _ = sink.notice(&Notice::TestStopped(&result.stopped.message));
    }
    Ok(Ran {
        reason: result.stopped.reason,
        pass: result.verdict.pass(),
        path: result_path,
    })
}

/// The databases' size: from the free space (capacity sizing, measured now, before anything is
/// created: a share that cannot hold a database stops here), from existing databases' headers,
/// or from the profile; then what must hold before anything is created: a Soft Recovery test's
/// logs fit, a Jetstress configuration's databases to attach exist.
fn size_databases(
    req: &RunRequest<'_>,
    cfg: &RunConfig,
    specs: &[DatabaseSpec],
    from_headers: Option<u64>,
) -> Result<(Option<mbx_store::capacity::CapacitySizing>, u64), AppError> {
    let kind = req.kind;
    let p = &cfg.profile;
    // Capacity sizing measures the free space now, before anything is created: a share that
    // cannot hold a database stops here.
    let sized = if cfg.sizing == mbx_config::Sizing::Capacity {
        Some(
            mbx_store::capacity::size_databases(specs, cfg.capacity_pct).map_err(|e| match e {
                mbx_store::StoreError::Invalid(m) => {
                    AppError::usage(format!("--capacity-pct: {m}"))
                }
                other => {
                    AppError::Store(other).context("measuring the free space for --capacity-pct")
                }
            })?,
        )
    } else {
        None
    };
    let data_pages = match (&sized, from_headers) {
        (Some(s), _) => s.data_pages,
        (None, Some(pages)) => pages,
        (None, None) => CreateParams::data_pages_for(p.mailboxes, p.mailbox_quota_mb, p.databases)
            .ok_or_else(|| {
                AppError::usage(format!(
                    "invalid --mailboxes x --quota-mb / --databases: each database would be larger than {} TiB (the most mbxstress creates); use fewer mailboxes, a smaller quota or more databases",
                    mbx_store::create::MAX_DATABASE_BYTES >> 40
                ))
            })?,
    };
    // Soft Recovery keeps every log file it generates until it replays them: logs that cannot
    // fit stop here, before anything is created, with the arithmetic (it would otherwise run
    // until the volume is full).
    if kind == TestKind::SoftRecovery {
        let db_bytes = data_pages
            .saturating_add(mbx_store::header::HEADER_PAGES)
            .saturating_mul(mbx_store::page::PAGE_SIZE as u64);
        let short = mbx_store::capacity::log_space_short(specs, cfg.log_files_to_replay, db_bytes)
            .map_err(|e| {
                AppError::Store(e).context("measuring the free space for the log files")
            })?;
        if let Some(s) = short {
            let mib = |b: u64| b >> 20;
            return Err(AppError::usage(format!(
                "--log-files-to-replay {}: the Soft Recovery test keeps every log file it generates until it replays them, {} databases x ({} + the open file and its spare) x 1 MiB{} = {} MiB on the volume of {}, which has {} MiB free: free space there, give another --log-path, or ask for at most {} log files",
                cfg.log_files_to_replay,
                s.databases,
                cfg.log_files_to_replay,
                if s.database_bytes > 0 {
                    format!(" + {} MiB of database files still to create there", mib(s.database_bytes))
                } else {
                    String::new()
                },
                mib(s.needed),
                s.volume.display(),
                mib(s.free),
                s.fits
            )));
        }
    }
    // Jetstress's DatabaseSource Open attaches existing databases: never create one here.
    if req.layers.jetstress().is_some_and(|j| j.attach_existing) {
        if let Some(missing) = specs.iter().find(|s| !s.path.exists()) {
            return Err(AppError::usage(format!(
                "the --jetstress-config file attaches existing databases (DatabaseSource Open), and {} does not exist: run `mbxstress prepare --jetstress-config` with the same file first, or set DatabaseSource to New",
                missing.path.display()
            )));
        }
    }
    Ok((sized, data_pages))
}

/// The result written as a test starts: nothing measured, `stopped.reason` "running". The end
/// of the test replaces it; read after the test, it says the process never finished it.
fn running_result(cfg: &RunConfig, kind: TestKind, started: std::time::SystemTime) -> RunResult {
    let mut r = mbx_engine::unmeasured_result(
        cfg,
        started,
        mbx_engine::result::Stopped::new(
            StopReason::Running,
            "the test has not finished: this file is written as the test starts and replaced as it ends; read after the test, it means the process never finished it (killed, out of memory, power lost) and nothing was measured",
        ),
    );
    r.test.test_type = kind;
    r
}

/// A test refused before it started (`e`): unless the user fixes it with flags (a usage
/// error, which creates nothing, or the databases in use by another command), the results
/// folder gets a result.json that says why (`stopped.reason` "error", the message, and the
/// error's path and errno in `errors[]`). Returns `e` (a result.json that cannot be written is
/// a warning).
fn refused(
    dir: &Path,
    cfg: &RunConfig,
    kind: TestKind,
    started: std::time::SystemTime,
    e: AppError,
    sink: &mut dyn EventSink,
) -> AppError {
    if e.is_usage() {
        return e;
    }
    let message = e.chain_text();
    let mut r = mbx_engine::unmeasured_result(
        cfg,
        started,
        mbx_engine::result::Stopped::new(
            StopReason::Error,
            format!("the test did not start: {message}"),
        )
        .in_phase("prepare"),
    );
    r.test.test_type = kind;
    if let Some(mbx_io::IoError::Os { path, error, .. }) = e.io_error() {
        r.errors.push(mbx_engine::result::ErrorEntry {
            class: mbx_engine::result::ErrorClass::Error,
            path: Some(path.display().to_string()),
            volume: mbx_io::platform::volume_of(path),
            errno: error.raw_os_error(),
            count: 1,
            first_at: mbx_engine::rfc3339_now(),
            message,
            ..Default::default()
        });
    }
    let path = dir.join("result.json");
    let written = fs_err::create_dir_all(dir)
        .map_err(AppError::File)
        .and_then(|()| {
            mbx_report::export::write_result(&path, &r).map_err(|source| AppError::Report {
                context: "writing the result".into(),
                source,
            })
        });
    if let Err(w) = written {
        let _ = sink.notice(&Notice::Warning(format!(
            "no result.json could be written: {}",
            w.chain_text()
        )));
    }
    e
}
