//! `run --test suite`: the ESRP suite as a sequence of ordinary runs on the same databases
//! (Performance -> Stress -> Backup -> Soft Recovery -> Checksum), one results folder each under
//! the suite's folder, then the ESRP summary over the Performance, Backup and Soft Recovery
//! results (`esrp.txt`, `esrp.json`), and `suite.html`, the suite's one document (each test's
//! verdict, the ESRP summary, links to each test's report), rewritten from the folders after
//! every test, when the suite stops and when it resumes.
//!
//! A failed verdict goes on to the next test (the suite fails); an error or an interruption ends
//! the suite with that test's outcome. Running the same suite again resumes: a test whose
//! folder holds a result.json that ran to completion is skipped; an incomplete folder is moved
//! aside (`NAME.interrupted-N`) and the test run again.

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};

use mbx_config::{RunConfig, TestKind};
use mbx_engine::result::StopReason;

use crate::config::{Layers, STRESS_DEFAULT_S};
use crate::error::IoContext;
use crate::event::{Event, EventSink, Notice};
use crate::run::{run_one, Preflight, Ran, RunRequest};
pub use crate::suite_plan::{Outcome, SuiteSummary, STEPS};
use crate::AppError;

/// The Performance test's duration in a suite without --duration (Jetstress: 2 h).
pub const PERFORMANCE_DEFAULT_S: f64 = 7_200.0;

/// What to run.
pub struct SuiteRequest<'a> {
    /// The configuration's layers, read.
    pub layers: &'a Layers,
    /// The suite's folder; `None`: a time-stamped one.
    pub out: Option<PathBuf>,
    /// The Stress test's duration, seconds (`--stress-duration`; default 24 h).
    pub stress_duration_s: Option<f64>,
    /// Overwrite files that are not mbxstress databases.
    pub force: bool,
    /// Allow unused block devices as database paths.
    pub allow_device: bool,
    /// Set to stop the suite (Ctrl-C).
    pub cancel: &'a AtomicBool,
    /// The preflight checks of each test.
    pub preflight: Preflight<'a>,
}

/// How the suite ended.
#[derive(Debug, Clone)]
pub enum SuiteEnd {
    /// A test did not run to completion (or the suite was interrupted): that test's outcome.
    Stopped(Ran),
    /// Every test ran; `pass` when every verdict passed.
    Done {
        /// The suite's verdict.
        pass: bool,
    },
}

/// The configuration of one test of the suite: as a single run of that type would resolve it,
/// with the suite's durations (Performance: --duration, else `duration_s` in --config, else
/// 2 h; Stress: --stress-duration, else 24 h).
fn config_for(
    layers: &Layers,
    kind: TestKind,
    stress_duration_s: Option<f64>,
) -> Result<RunConfig, AppError> {
    let mut cfg = layers.resolve_for(kind)?;
    let given = layers.flag_given("duration_s") || layers.config_sets("duration_s");
    match kind {
        TestKind::Performance if !given => cfg.duration_s = PERFORMANCE_DEFAULT_S,
        TestKind::Stress => cfg.duration_s = stress_duration_s.unwrap_or(STRESS_DEFAULT_S),
        _ => {}
    }
    cfg.validate_for(kind).map_err(|(key, reason)| {
        let what = match (key, kind) {
            ("duration_s", TestKind::Stress) => "--stress-duration".to_string(),
            ("duration_s", _) => "--duration".to_string(),
            (key, _) => format!("`{key}`"),
        };
        AppError::usage(format!("invalid {what}: {reason}"))
    })?;
    Ok(cfg)
}

/// The result in `dir` if it ran to completion (whatever its verdict): (verdict, reason).
fn finished(dir: &Path) -> Option<(bool, StopReason)> {
    if !dir.join("result.json").is_file() {
        return None;
    }
    let run = mbx_report::report::load_run(dir).ok()?;
    let r = run.result;
    r.stopped
        .reason
        .ran_to_completion()
        .then_some((r.verdict.pass(), r.stopped.reason))
}

/// Moves an incomplete test folder aside as `NAME.interrupted-N` (the first N free); an empty
/// folder is simply reused. Returns where it went.
fn move_aside(dir: &Path) -> Result<Option<PathBuf>, AppError> {
    if !dir.exists() {
        return Ok(None);
    }
    let empty = fs_err::read_dir(dir)
        .map_err(AppError::File)?
        .next()
        .is_none();
    if empty && dir.is_dir() {
        return Ok(None);
    }
    let name = dir
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    for n in 1..10_000u32 {
        let to = dir.with_file_name(format!("{name}.interrupted-{n}"));
        if !to.exists() {
            fs_err::rename(dir, &to).io_context("moving an incomplete test's folder aside")?;
            return Ok(Some(to));
        }
    }
    Err(AppError::Failed(format!(
        "{}: too many earlier interrupted attempts kept beside it; remove some",
        dir.display()
    )))
}

/// Runs the suite (see the module documentation).
pub fn run(req: &SuiteRequest<'_>, sink: &mut dyn EventSink) -> Result<SuiteEnd, AppError> {
    let root = match &req.out {
        Some(d) => d.clone(),
        None => crate::results_folder::stamped("suite-"),
    };
    if root.exists() && !root.is_dir() {
        return Err(AppError::usage(format!(
            "--out {} is not a folder; choose a folder for the suite (the same one resumes it)",
            root.display()
        )));
    }
    // Every configuration first: a usage error stops the suite before anything runs.
    let configs = STEPS
        .iter()
        .map(|&(_, kind)| config_for(req.layers, kind, req.stress_duration_s))
        .collect::<Result<Vec<_>, _>>()?;
    fs_err::create_dir_all(&root).io_context("creating the suite's results folder")?;
    let mut summary = SuiteSummary {
        outcomes: Vec::new(),
        stopped_at: None,
        root: root.clone(),
    };
    for (k, (&(name, kind), cfg)) in STEPS.iter().zip(configs).enumerate() {
        let dir = root.join(name);
        if let Some((pass, reason)) = finished(&dir) {
            sink.event(&Event::SuiteSkip {
                test: name.to_string(),
                pass,
            });
            summary.outcomes.push(Outcome {
                name,
                kind,
                pass,
                reason,
                skipped: true,
            });
            continue;
        }
        if let Some(to) = move_aside(&dir)? {
            sink.notice(&Notice::MovedAside {
                test: name,
                to: &to,
            })
            .map_err(AppError::Output)?;
        }
        sink.notice(&Notice::SuiteTest {
            index: k + 1,
            of: STEPS.len(),
            kind,
            dir: &dir,
        })
        .map_err(AppError::Output)?;
        let test = RunRequest {
            layers: req.layers,
            kind,
            out: Some(dir),
            force: req.force,
            allow_device: req.allow_device,
            gate: None,
            cancel: req.cancel,
            preflight: req.preflight,
        };
        // The document says this test is under way (its folder has no result yet).
        write_suite_report(&root)?;
        let ran = match run_one(&test, cfg, sink) {
            Ok(ran) => ran,
            Err(e) => {
                summary.stopped_at = Some(name);
                // Best effort: the test's error is the one to report.
                let _ = write_suite_report(&root);
                sink.notice(&Notice::SuiteEnd(&summary))
                    .map_err(AppError::Output)?;
                return Err(e.context(format!("suite test {name}")));
            }
        };
        summary.outcomes.push(Outcome {
            name,
            kind,
            pass: ran.pass,
            reason: ran.reason,
            skipped: false,
        });
        write_suite_report(&root)?;
        if !ran.reason.ran_to_completion() || req.cancel.load(Ordering::Relaxed) {
            summary.stopped_at = Some(name);
            sink.notice(&Notice::SuiteEnd(&summary))
                .map_err(AppError::Output)?;
            return Ok(SuiteEnd::Stopped(ran));
        }
    }
    write_esrp(&root)?;
    write_suite_report(&root)?;
    sink.notice(&Notice::SuiteEnd(&summary))
        .map_err(AppError::Output)?;
    Ok(SuiteEnd::Done {
        pass: summary.pass(),
    })
}

/// Writes `esrp.txt` and `esrp.json` in the suite folder: the ESRP summary over its
/// Performance, Backup and Soft Recovery results.
fn write_esrp(root: &Path) -> Result<(), AppError> {
    let inputs = crate::esrp::load_all(&[root.to_path_buf()])
        .map_err(|e| e.context("reading the suite's results for the ESRP summary"))?;
    let s = mbx_report::summarize(&inputs);
    fs_err::write(root.join("esrp.txt"), crate::esrp::text(&s)).map_err(AppError::File)?;
    let json = serde_json::to_vec_pretty(&s)
        .map_err(|e| AppError::Failed(format!("serializing the ESRP summary: {e}")))?;
    fs_err::write(root.join("esrp.json"), json).map_err(AppError::File)?;
    Ok(())
}

/// Writes `suite.html` in the suite folder from what its folders hold (see
/// [`mbx_report::suite`]): each test's result, and the ESRP summary over the Performance, Backup
/// and Soft Recovery results there so far.
fn write_suite_report(root: &Path) -> Result<(), AppError> {
    use mbx_report::suite::{render_suite, SuiteTest, SUITE_REPORT};
    let tests: Vec<SuiteTest> = STEPS
        .iter()
        .map(|&(name, kind)| SuiteTest::read(root, name, kind))
        .collect();
    let any = crate::esrp::SUITE_ESRP_FOLDERS
        .iter()
        .any(|f| root.join(f).join("result.json").is_file());
    let summary = if any {
        let inputs = crate::esrp::load_all(&[root.to_path_buf()])
            .map_err(|e| e.context("reading the suite's results for suite.html"))?;
        Some(mbx_report::summarize(&inputs))
    } else {
        None
    };
    let html = render_suite(root, &tests, summary.as_ref());
    let path = root.join(SUITE_REPORT);
    mbx_config::atomic::write_atomic(&path, html.as_bytes())
        .io_context(&format!("writing the suite's report {}", path.display()))?;
    Ok(())
}
