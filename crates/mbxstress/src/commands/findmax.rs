//! `mbxstress find-max`: the largest mailbox count (at the profile's IOPS per mailbox) this
//! storage carries within every threshold, by a ramp and a bisection of short measured steps on
//! the same databases. Writes find-max.json, find-max.html and test.log.

use std::process::ExitCode;

use std::path::Path;

use mbx_app::event::FindMaxStart;
use mbx_app::findmax::FindMaxRequest;
use mbx_app::AppError;
use mbx_config::TestKind;
use mbx_result::FindMax;

use super::run::{fmt_secs, into_anyhow};
use crate::cli::{FindMaxArgs, RunTest};
use crate::exit::usage;
use crate::render::num;

/// Runs find-max.
pub fn run(args: FindMaxArgs) -> anyhow::Result<ExitCode> {
    let a = &args.run;
    if !matches!(a.test, None | Some(RunTest::Kind(TestKind::Performance))) {
        return Err(usage(
            "find-max measures the Performance workload: leave out --test",
        ));
    }
    // Run flags that mean nothing here (hidden from `find-max --help`): refused, never ignored.
    let refused = [
        (
            a.stress_duration.is_some(),
            "--stress-duration",
            "it runs no Stress test",
        ),
        (
            a.log_files_to_replay.is_some(),
            "--log-files-to-replay",
            "it runs no Soft Recovery test",
        ),
        (
            a.tuning_max_steps.is_some(),
            "--tuning-max-steps",
            "its steps are counted by --max-steps",
        ),
        (
            a.throughput_pct.is_some() && a.capacity_pct.is_none(),
            "--throughput-pct",
            "it answers in mailboxes of a profile, not a share of the maximum IOPS",
        ),
        (
            a.start_gate.is_some(),
            "--start-gate",
            "`fleet run` starts only `run`",
        ),
    ];
    if let Some((_, flag, why)) = refused.iter().find(|(given, ..)| *given) {
        return Err(usage(format!(
            "find-max does not take {flag}: {why} (see `mbxstress find-max --help`)"
        )));
    }
    let layers = super::run::layers(a)?;
    let cancel = crate::interrupt::install();
    let req = FindMaxRequest {
        layers: &layers,
        max_steps: args.max_steps,
        resolution_pct: args.resolution_pct,
        out: a.out.clone(),
        force: a.force,
        allow_device: a.allow_device,
        cancel: &cancel,
    };
    let mut term = crate::terminal::Terminal::new(a.progress);
    let found = mbx_app::findmax::run(&req, &mut term);
    term.finish()?;
    let f = match found {
        Ok(found) => found.find_max,
        // The engine's error as itself, as find-max has always reported it.
        Err(AppError::Engine(e)) => return Err(anyhow::Error::new(e)),
        Err(e) => return Err(into_anyhow(e)),
    };
    Ok(match (f.end.as_str(), f.mailboxes) {
        ("interrupted", _) => ExitCode::from(crate::interrupt::INTERRUPTED),
        ("error", _) => ExitCode::from(crate::exit::RUNTIME),
        (_, Some(_)) => ExitCode::SUCCESS,
        (_, None) => ExitCode::from(1),
    })
}

/// What find-max is about to do (human mode, stderr).
pub(crate) fn print_start(s: &FindMaxStart) {
    let p = &s.config.profile;
    errln!(
        "find-max: from {} mailboxes x {} IOPS on {} database(s) of {} MiB, steps of {} (each after stable read latency), at most {} steps, to within {}%",
        num(p.mailboxes as f64, 0),
        p.iops_per_mailbox,
        p.databases,
        num(s.data_pages as f64 / 32.0, 0),
        fmt_secs(s.config.tuning.step_for(s.config.duration_s)),
        s.max_steps,
        s.resolution_pct
    );
    errln!("Results: {}", s.dir.display());
}

/// The search's steps and its answer (stdout).
pub(crate) fn print_end(f: &FindMax, json: &Path, html: &Path) -> std::io::Result<()> {
    outln!()?;
    outln!(
        "  {:>10} {:>8} {:>10} {:>10} {:>9} {:>9} {:>9}  result",
        "mailboxes",
        "sessions",
        "target",
        "IOPS",
        "read ms",
        "read p99",
        "log ms"
    )?;
    for s in &f.steps {
        outln!(
            "  {:>10} {:>8} {:>10} {:>10} {:>9.2} {:>9.2} {:>9.2}  {}{}",
            num(s.mailboxes as f64, 0),
            s.sessions,
            num(s.target_iops, 1),
            num(s.achieved_iops, 1),
            s.db_read_avg_ms,
            s.db_read_p99_ms,
            s.log_write_avg_ms,
            if s.pass { "pass" } else { "fail: " },
            s.failed_checks.join(", ")
                + if s.confirmation {
                    " (confirmation)"
                } else {
                    ""
                }
        )?;
    }
    match (f.mailboxes, f.iops) {
        (Some(m), Some(iops)) if f.lower_bound => outln!(
            "ANSWER | at least {} mailboxes x {} IOPS = {} transactional IOPS pass every threshold; {} ({}, {} steps, {})",
            num(m as f64, 0),
            f.iops_per_mailbox,
            num(iops, 1),
            why_lower_bound(&f.end),
            f.end,
            f.steps.len(),
            fmt_secs(f.elapsed_s)
        )?,
        (Some(m), Some(iops)) => outln!(
            "ANSWER | {} mailboxes x {} IOPS = {} transactional IOPS pass every threshold ({}, {} steps, {})",
            num(m as f64, 0),
            f.iops_per_mailbox,
            num(iops, 1),
            f.end,
            f.steps.len(),
            fmt_secs(f.elapsed_s)
        )?,
        _ => outln!(
            "NO ANSWER | no mailbox count passed every threshold ({}, {} steps)",
            f.end,
            f.steps.len()
        )?,
    }
    outln!("Result: {}", json.display())?;
    outln!("Report: {}", html.display())?;
    Ok(())
}

/// Why an answer is only a lower bound, from how the search ended.
fn why_lower_bound(end: &str) -> &'static str {
    match end {
        "steps" => "the search stopped at --max-steps before finding a failing step",
        "time" => "the search ran out of time before finding a failing step",
        "bound" => "every count passed up to the most the target range allows",
        _ => "no count above it failed",
    }
}
