//! `mbxstress doctor`'s findings: the preflight checks of the storage stack and the host, as
//! `mbxstress doctor --json` prints them and as `result.json` records them (key `doctor`).

use serde::{Deserialize, Serialize};

/// The schema name of [`DoctorReport`] (`mbxstress doctor --json`, `result.json`'s `doctor`).
pub const DOCTOR_SCHEMA: &str = "mbxstress.doctor/1";

/// How a check came out. A finding never changes a test's verdict.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum DoctorStatus {
    /// Fine, or information only.
    Ok,
    /// Could not be measured here (not Linux, no sysfs entry, no permission).
    Unknown,
    /// Likely to make the results wrong or the test fail; the run can still go on.
    Warn,
    /// The test cannot run as planned (e.g. not enough free space).
    Fail,
}

impl DoctorStatus {
    /// "ok", "unknown", "warn" or "fail".
    pub fn name(self) -> &'static str {
        match self {
            DoctorStatus::Ok => "ok",
            DoctorStatus::Unknown => "unknown",
            DoctorStatus::Warn => "warn",
            DoctorStatus::Fail => "fail",
        }
    }
}

/// One check of one location (or of the host).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct DoctorCheck {
    /// What is checked: `write_cache`, `write_through_probe`, `queue_depth`, `filesystem`,
    /// `alignment`, `layout`, `direct_io`, `discard`, `capacity`, `data_reduction`,
    /// `virtualization`, `cpu`, `clock`, `memory`.
    pub name: String,
    /// Where: a path (and its device), or `host`.
    pub subject: String,
    /// The outcome.
    pub status: DoctorStatus,
    /// The measured fact, e.g. "vda: write_cache 'write back', fua 0".
    pub fact: String,
    /// Why it matters, with the source where one exists.
    pub why: String,
    /// What to do about it (empty when nothing needs doing).
    pub fix: String,
}

/// All checks of a `doctor` (or of the fast subset a `run` performs first).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct DoctorReport {
    /// [`DOCTOR_SCHEMA`].
    pub schema: String,
    /// Whether the write-through probe ran with its full count of writes (`doctor`) or the
    /// fast subset (`run`).
    pub fast: bool,
    /// The checks, in a stable order (locations first, then the host).
    pub checks: Vec<DoctorCheck>,
}

impl DoctorReport {
    /// The worst status of any check (`Ok` when there is none).
    pub fn worst(&self) -> DoctorStatus {
        self.checks
            .iter()
            .map(|c| c.status)
            .max()
            .unwrap_or(DoctorStatus::Ok)
    }

    /// The checks about write-through (`write_cache`, `write_through_probe`) that are not ok:
    /// what a run shows next to its verdict.
    pub fn write_through_findings(&self) -> impl Iterator<Item = &DoctorCheck> {
        self.checks.iter().filter(|c| {
            matches!(c.name.as_str(), "write_cache" | "write_through_probe")
                && matches!(c.status, DoctorStatus::Warn | DoctorStatus::Fail)
        })
    }
}
