//! `mbxstress find-max`: the largest mailbox count (at the profile's IOPS per mailbox) this
//! storage carries within every threshold, by a ramp and a bisection of short measured steps on
//! the same databases. Writes find-max.json, find-max.html and test.log.

use std::process::ExitCode;

use mbx_app::findmax::FindMaxRequest;
use mbx_app::AppError;
use mbx_config::TestKind;

use super::shared::into_anyhow;
use crate::cli::{FindMaxArgs, RunTest};
use crate::exit::usage;

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
