//! Doctor's findings on the terminal around a run: before the test (`announce`) and next to
//! the verdict (`print_write_through`). The checks are `mbx_app::doctor`'s.

use mbx_app::doctor::{DoctorCheck, DoctorReport, DoctorStatus};

/// What `run` says before the test about its preflight checks on a terminal: one line per
/// warning or failure on stderr (in jsonl mode the `doctor` event carries every check).
pub(crate) fn announce(r: &DoctorReport) {
    let notable: Vec<&DoctorCheck> = r
        .checks
        .iter()
        .filter(|c| matches!(c.status, DoctorStatus::Warn | DoctorStatus::Fail))
        .collect();
    for c in &notable {
        errln!(
            "doctor: {} {} ({}): {}",
            c.status.name(),
            c.name,
            c.subject,
            c.fact
        );
    }
    if !notable.is_empty() {
        errln!("doctor: findings never change the verdict; `mbxstress doctor` with the same flags explains each and its fix");
    }
}

/// Next to the verdict: the write-through findings that make the figures suspect.
pub(crate) fn print_write_through(r: &mbx_result::RunResult) -> std::io::Result<()> {
    if let Some(d) = &r.doctor {
        for c in d.write_through_findings() {
            outln!(
                "  write-through {}: {} ({}): the figures may measure a volatile cache",
                c.status.name(),
                c.fact,
                c.subject
            )?;
        }
    }
    Ok(())
}
