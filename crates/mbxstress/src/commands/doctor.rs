//! `mbxstress doctor`: the flags, the table and the exit code. The checks themselves are
//! `mbx_app::doctor`'s (`run` performs their fast subset first, `crate::findings` shows it).

use std::process::ExitCode;

use mbx_app::doctor::{
    DoctorCheck, DoctorError, DoctorReport, DoctorRequest, DoctorStatus, ProbePlan,
};
use mbx_config::TestKind;
use mbx_store::CreateParams;

use crate::cli::{DoctorArgs, RunTest};

/// `mbxstress doctor`.
pub fn run(mut args: DoctorArgs) -> anyhow::Result<ExitCode> {
    // A `fleet run` host's doctor: the request's configuration (with the host's paths).
    let from_request = super::run::apply_request(&mut args.run)?;
    let kind = match args.run.test {
        Some(RunTest::Kind(k)) => k,
        Some(RunTest::Suite) | None => TestKind::Performance,
    };
    let cfg = match from_request {
        Some(layers) => layers
            .resolve_for(kind)
            .map_err(super::shared::into_anyhow)?,
        None => super::run::resolve_for(&args.run, kind)?,
    };
    let p = &cfg.profile;
    let data_pages = CreateParams::data_pages_for(p.mailboxes, p.mailbox_quota_mb, p.databases)
        .ok_or_else(|| {
            crate::exit::usage(
                "invalid --mailboxes x --quota-mb / --databases: each database would be too large; use fewer mailboxes, a smaller quota or more databases",
            )
        })?;
    let create = super::run::create_params(&args.run, &cfg, data_pages);
    let report = mbx_app::doctor::run(
        DoctorRequest {
            config: cfg,
            create,
            probe: ProbePlan::full(args.probe_writes),
        },
        &mut Vec::new(),
    )
    // The store's error itself, so the exit code is the one it gives (2 for a user's paths).
    .map_err(|e| match e {
        DoctorError::Plan(e) => e,
    })?;
    if args.json {
        outln!("{}", serde_json::to_string_pretty(&report)?)?;
    } else {
        print_table(&report)?;
    }
    Ok(if report.worst() == DoctorStatus::Fail {
        ExitCode::from(1)
    } else {
        ExitCode::SUCCESS
    })
}

/// The human table: status, check, subject, fact; then why and fix for what is not ok.
fn print_table(r: &DoctorReport) -> std::io::Result<()> {
    let count = |s: DoctorStatus| r.checks.iter().filter(|c| c.status == s).count();
    outln!(
        "mbxstress doctor: {} checks: {} ok, {} warn, {} fail, {} unknown",
        r.checks.len(),
        count(DoctorStatus::Ok),
        count(DoctorStatus::Warn),
        count(DoctorStatus::Fail),
        count(DoctorStatus::Unknown)
    )?;
    outln!()?;
    let w_name = r
        .checks
        .iter()
        .map(|c| c.name.as_str().len())
        .max()
        .unwrap_or(5)
        .max(5);
    let w_subj = r
        .checks
        .iter()
        .map(|c| c.subject.chars().count())
        .max()
        .unwrap_or(7)
        .clamp(7, 40);
    outln!(
        "{:<7} {:<w_name$} {:<w_subj$} FACT",
        "STATUS",
        "CHECK",
        "SUBJECT"
    )?;
    for c in &r.checks {
        outln!(
            "{:<7} {:<w_name$} {:<w_subj$} {}",
            c.status.name(),
            c.name,
            c.subject,
            c.fact
        )?;
    }
    let notable: Vec<&DoctorCheck> = r
        .checks
        .iter()
        .filter(|c| matches!(c.status, DoctorStatus::Warn | DoctorStatus::Fail))
        .collect();
    if !notable.is_empty() {
        outln!()?;
        for c in notable {
            outln!("{} {} ({}):", c.status.name(), c.name, c.subject)?;
            outln!("  why: {}", c.why)?;
            if !c.fix.is_empty() {
                outln!("  fix: {}", c.fix)?;
            }
        }
    }
    Ok(())
}
