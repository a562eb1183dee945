//! Doctor's findings as a run shows them: before the test (`announce`) and next to the verdict
//! (`write_through`). The checks are [`crate::doctor`]'s.

use std::fmt::{self, Write as _};

use crate::doctor::{DoctorCheck, DoctorReport, DoctorStatus};

/// What `run` says before the test about its preflight checks on a terminal: one line per
/// warning or failure (in jsonl mode the `doctor` event carries every check).
pub(super) fn announce(o: &mut String, r: &DoctorReport) -> fmt::Result {
    let notable: Vec<&DoctorCheck> = r
        .checks
        .iter()
        .filter(|c| matches!(c.status, DoctorStatus::Warn | DoctorStatus::Fail))
        .collect();
    for c in &notable {
        writeln!(
            o,
            "doctor: {} {} ({}): {}",
            c.status.name(),
            c.name,
            c.subject,
            c.fact
        )?;
    }
    if !notable.is_empty() {
        writeln!(o, "doctor: findings never change the verdict; `mbxstress doctor` with the same flags explains each and its fix")?;
    }
    Ok(())
}

/// Next to the verdict: the write-through findings that make the figures suspect.
pub(super) fn write_through(o: &mut String, r: &mbx_result::RunResult) -> fmt::Result {
    if let Some(d) = &r.doctor {
        for c in d.write_through_findings() {
            writeln!(
                o,
                "  write-through {}: {} ({}): the figures may measure a volatile cache",
                c.status.name(),
                c.fact,
                c.subject
            )?;
        }
    }
    Ok(())
}
