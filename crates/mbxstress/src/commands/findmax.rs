//! `mbxstress find-max`: the largest mailbox count (at the profile's IOPS per mailbox) this
//! storage carries within every threshold, by a ramp and a bisection of short measured steps on
//! the same databases. Writes find-max.json, find-max.html and test.log.

use std::process::ExitCode;

use anyhow::Context;
use mbx_config::TestKind;
use mbx_engine::findmax::FindMaxSpec;
use mbx_store::{plan_paths, LockMode, StoreLock};

use super::run::{create_params, fmt_secs, resolve_for, results_dir, RunObserver};
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
    let cfg = resolve_for(a, TestKind::Performance)?;
    if cfg.sizing == mbx_config::Sizing::Capacity {
        return Err(usage(
            "find-max answers in mailboxes of a profile; the disk subsystem throughput test (--capacity-pct, sizing = \"capacity\") finds the maximum IOPS itself: use `mbxstress run --capacity-pct N --throughput-pct P`",
        ));
    }
    let spec = FindMaxSpec {
        max_steps: args.max_steps as usize,
        resolution: args.resolution_pct / 100.0,
        ..FindMaxSpec::default()
    };
    let p = &cfg.profile;
    let data_pages = mbx_store::create::CreateParams::data_pages_for(
        p.mailboxes,
        p.mailbox_quota_mb,
        p.databases,
    )
    .ok_or_else(|| {
        usage("invalid --mailboxes x --quota-mb / --databases: the databases would be too large")
    })?;
    let specs = plan_paths(&cfg.db_paths, &cfg.log_paths, p.databases)?;
    let dir = results_dir(a.out.as_deref())?;
    let lock = StoreLock::acquire(&specs, LockMode::Exclusive)?;
    fs_err::create_dir_all(&dir).context("creating the results folder")?;
    let human = a.progress == "human";
    if human {
        errln!(
            "find-max: from {} mailboxes x {} IOPS on {} database(s) of {} MiB, steps of {} (each after stable read latency), at most {} steps, to within {}%",
            num(p.mailboxes as f64, 0),
            p.iops_per_mailbox,
            p.databases,
            num(data_pages as f64 / 32.0, 0),
            fmt_secs(cfg.tuning.step_for(cfg.duration_s)),
            args.max_steps,
            args.resolution_pct
        );
        errln!("Results: {}", dir.display());
    }
    let mut observer = RunObserver::new(&dir, &a.progress, specs.len())?;
    let create = create_params(a, &cfg, data_pages);
    let cancel = crate::interrupt::install();
    let found = mbx_engine::execute_find_max(&cfg, spec, &specs, &create, &mut observer, &cancel);
    observer.finish_preparing();
    observer.clear_status();
    drop(lock);
    for e in &observer.errors {
        errln!("warning: {e}");
    }
    let found = found.map_err(anyhow::Error::new)?;
    let f = &found.find_max;
    let json = dir.join("find-max.json");
    let found_as = |e: Box<dyn mbx_report::Exporter<mbx_result::FindMax>>| {
        mbx_report::export::export(f, &dir, &[e])
    };
    found_as(Box::new(mbx_report::export::FindMaxJsonExporter)).context("writing find-max.json")?;
    let html = dir.join("find-max.html");
    if let Err(e) = found_as(Box::new(mbx_report::export::FindMaxHtmlExporter)) {
        errln!("warning: could not write the HTML report: {e}");
    }
    if a.progress == "jsonl" {
        outln!(
            "{}",
            serde_json::json!({ "event": "find_max", "path": json, "mailboxes": f.mailboxes, "iops": f.iops, "end": f.end })
        )?;
    } else {
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
    }
    Ok(match (f.end.as_str(), f.mailboxes) {
        ("interrupted", _) => ExitCode::from(crate::interrupt::INTERRUPTED),
        ("error", _) => ExitCode::from(crate::exit::RUNTIME),
        (_, Some(_)) => ExitCode::SUCCESS,
        (_, None) => ExitCode::from(1),
    })
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
