//! `mbxstress run --test suite`: the ESRP suite as a sequence of ordinary runs on the same
//! databases (Performance -> Stress -> Backup -> Soft Recovery -> Checksum), one results folder
//! each under --out, then the ESRP summary over the Performance, Backup and Soft Recovery results
//! (`esrp.txt`, `esrp.json`) and a verdict per test on stdout.
//!
//! A failed verdict goes on to the next test (the suite fails); an error or an interruption ends
//! the suite with that test's exit code. Running the same command again resumes: a test whose
//! folder holds a result.json that ran to completion is skipped; an incomplete folder is moved
//! aside (`NAME.interrupted-N`) and the test run again.

use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::sync::atomic::Ordering;

use anyhow::Context;
use mbx_config::{RunConfig, TestKind};
use mbx_engine::result::StopReason;

use super::run::{resolve_for, run_one};
use crate::cli::RunArgs;
use crate::exit::usage;

/// The tests of the suite, in order, with their folder names.
pub(crate) const STEPS: [(&str, TestKind); 5] = [
    ("1-performance", TestKind::Performance),
    ("2-stress", TestKind::Stress),
    ("3-backup", TestKind::Backup),
    ("4-soft-recovery", TestKind::SoftRecovery),
    ("5-checksum", TestKind::Checksum),
];

/// The Performance test's duration in a suite without --duration (Jetstress: 2 h).
const PERFORMANCE_DEFAULT_S: f64 = 7_200.0;

/// How a test of the suite went.
struct Outcome {
    name: &'static str,
    kind: TestKind,
    pass: bool,
    reason: StopReason,
    skipped: bool,
}

/// The configuration of one test of the suite: as a single run of that type would resolve it,
/// with the suite's durations (Performance: --duration, else `duration_s` in --config, else
/// 2 h; Stress: --stress-duration, else 24 h).
fn config_for(args: &RunArgs, kind: TestKind) -> anyhow::Result<RunConfig> {
    let mut cfg = resolve_for(args, kind)?;
    let from_config = args
        .config
        .as_deref()
        .is_some_and(|p| super::run::config_sets(p, "duration_s"));
    match kind {
        TestKind::Performance if args.duration.is_none() && !from_config => {
            cfg.duration_s = PERFORMANCE_DEFAULT_S;
        }
        TestKind::Stress => {
            cfg.duration_s = args
                .stress_duration
                .map_or(super::run::STRESS_DEFAULT_S, |d| d.as_secs_f64());
        }
        _ => {}
    }
    cfg.validate_for(kind).map_err(|(key, reason)| {
        let what = match (key, kind) {
            ("duration_s", TestKind::Stress) => "--stress-duration".to_string(),
            ("duration_s", _) => "--duration".to_string(),
            (key, _) => format!("`{key}`"),
        };
        usage(format!("invalid {what}: {reason}"))
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
fn move_aside(dir: &Path) -> anyhow::Result<Option<PathBuf>> {
    if !dir.exists() {
        return Ok(None);
    }
    let empty = fs_err::read_dir(dir)?.next().is_none();
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
            fs_err::rename(dir, &to).context("moving an incomplete test's folder aside")?;
            return Ok(Some(to));
        }
    }
    Err(anyhow::anyhow!(
        "{}: too many earlier interrupted attempts kept beside it; remove some",
        dir.display()
    ))
}

/// Runs the suite (see the module documentation).
pub fn run(args: &RunArgs) -> anyhow::Result<ExitCode> {
    let root = match &args.out {
        Some(d) => d.clone(),
        None => {
            let stamp = mbx_engine::rfc3339_now().replace(':', "");
            PathBuf::from("mbxstress-results").join(format!("suite-{stamp}"))
        }
    };
    if root.exists() && !root.is_dir() {
        return Err(usage(format!(
            "--out {} is not a folder; choose a folder for the suite (the same one resumes it)",
            root.display()
        )));
    }
    // Every configuration first: a usage error stops the suite before anything runs.
    let configs = STEPS
        .iter()
        .map(|&(_, kind)| config_for(args, kind))
        .collect::<anyhow::Result<Vec<_>>>()?;
    fs_err::create_dir_all(&root).context("creating the suite's results folder")?;
    let human = args.progress == "human";
    let jsonl = args.progress == "jsonl";
    let cancel = crate::interrupt::install();
    let mut outcomes: Vec<Outcome> = Vec::new();
    for (k, (&(name, kind), cfg)) in STEPS.iter().zip(configs).enumerate() {
        let dir = root.join(name);
        if let Some((pass, reason)) = finished(&dir) {
            if jsonl {
                outln!(
                    "{}",
                    serde_json::json!({"event": "suite_skip", "test": name, "pass": pass})
                )?;
            } else {
                outln!(
                    "skipping {name}: it ran to completion earlier ({})",
                    if pass { "PASS" } else { "FAIL" }
                )?;
            }
            outcomes.push(Outcome {
                name,
                kind,
                pass,
                reason,
                skipped: true,
            });
            continue;
        }
        if let Some(to) = move_aside(&dir)? {
            errln!(
                "{name}: an incomplete earlier attempt was moved aside to {}; running it again",
                to.display()
            );
        }
        if human {
            errln!(
                "\n== Suite test {} of {}: {kind} ({})",
                k + 1,
                STEPS.len(),
                dir.display()
            );
        }
        let ran = match run_one(args, kind, cfg, Some(&dir), &cancel, None) {
            Ok(ran) => ran,
            Err(e) => {
                print_summary(&outcomes, Some(name), &root)?;
                return Err(e.context(format!("suite test {name}")));
            }
        };
        outcomes.push(Outcome {
            name,
            kind,
            pass: ran.pass,
            reason: ran.reason,
            skipped: false,
        });
        if !ran.reason.ran_to_completion() || cancel.load(Ordering::Relaxed) {
            print_summary(&outcomes, Some(name), &root)?;
            return Ok(ran.code);
        }
    }
    write_esrp(&root)?;
    let pass = print_summary(&outcomes, None, &root)?;
    Ok(if pass {
        ExitCode::SUCCESS
    } else {
        ExitCode::from(1)
    })
}

/// Writes `esrp.txt` and `esrp.json` in the suite folder: `mbxstress esrp` over its
/// Performance, Backup and Soft Recovery results.
fn write_esrp(root: &Path) -> anyhow::Result<()> {
    let inputs = super::esrp::load_all(&[root.to_path_buf()])
        .context("reading the suite's results for the ESRP summary")?;
    let s = mbx_report::summarize(&inputs);
    fs_err::write(root.join("esrp.txt"), super::esrp::text(&s))?;
    let json = serde_json::to_vec_pretty(&s).context("serializing the ESRP summary")?;
    fs_err::write(root.join("esrp.json"), json)?;
    Ok(())
}

/// The suite's summary on stdout: each test's verdict, then the suite's. `stopped_at` names the
/// test that ended the suite early. Returns whether the suite passed.
fn print_summary(
    outcomes: &[Outcome],
    stopped_at: Option<&str>,
    root: &Path,
) -> std::io::Result<bool> {
    let complete = stopped_at.is_none() && outcomes.len() == STEPS.len();
    let pass = complete && outcomes.iter().all(|o| o.pass);
    outln!()?;
    outln!(
        "{} | suite: {} of {} tests ran to completion{}",
        if pass { "PASS" } else { "FAIL" },
        outcomes
            .iter()
            .filter(|o| o.reason.ran_to_completion())
            .count(),
        STEPS.len(),
        match stopped_at {
            Some(name) => format!("; stopped at {name}"),
            None => String::new(),
        }
    )?;
    for o in outcomes {
        outln!(
            "  {:<18} {:<14} {:<5} {}{}",
            o.name,
            o.kind.name(),
            if o.pass { "PASS" } else { "FAIL" },
            o.reason.name(),
            if o.skipped { " (earlier run)" } else { "" }
        )?;
    }
    if complete {
        outln!("ESRP summary: {}", root.join("esrp.txt").display())?;
    }
    outln!("Suite: {}", root.display())?;
    Ok(pass)
}
