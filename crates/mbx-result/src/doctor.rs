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

/// Which check a [`DoctorCheck`] is. One name table behind serde, [`CheckName::as_str`] and
/// `Display`, so code finds a check by its variant, never by comparing text; a name this version
/// does not know (a result written by a later one) is kept as it is ([`CheckName::Other`]).
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(from = "String", into = "String")]
pub enum CheckName {
    /// `write_cache`: the device's volatile write cache and FUA.
    WriteCache,
    /// `write_through_probe`: timed write-through writes, against a volatile cache.
    WriteThroughProbe,
    /// `queue_depth`: the device's request queue.
    QueueDepth,
    /// `filesystem`: what the folder is on.
    Filesystem,
    /// `alignment`: partition and filesystem alignment.
    Alignment,
    /// `layout`: databases and logs on separate volumes.
    Layout,
    /// `direct_io`: O_DIRECT (unbuffered) I/O works there.
    DirectIo,
    /// `discard`: online discard.
    Discard,
    /// `capacity`: free space for what the test writes.
    Capacity,
    /// `data_reduction`: compression or deduplication under the databases.
    DataReduction,
    /// `virtualization`: the host is a virtual machine.
    Virtualization,
    /// `cpu`: frequency scaling and cores.
    Cpu,
    /// `clock`: clock synchronization.
    Clock,
    /// `memory`: memory for the cache.
    Memory,
    /// A name this version does not know.
    Other(String),
}

impl CheckName {
    /// Every check this version knows, in the name table's order.
    pub const KNOWN: [CheckName; 14] = [
        CheckName::WriteCache,
        CheckName::WriteThroughProbe,
        CheckName::QueueDepth,
        CheckName::Filesystem,
        CheckName::Alignment,
        CheckName::Layout,
        CheckName::DirectIo,
        CheckName::Discard,
        CheckName::Capacity,
        CheckName::DataReduction,
        CheckName::Virtualization,
        CheckName::Cpu,
        CheckName::Clock,
        CheckName::Memory,
    ];

    /// The name in `doctor --json` and `result.json` (`write_cache`, ...).
    pub fn as_str(&self) -> &str {
        match self {
            CheckName::WriteCache => "write_cache",
            CheckName::WriteThroughProbe => "write_through_probe",
            CheckName::QueueDepth => "queue_depth",
            CheckName::Filesystem => "filesystem",
            CheckName::Alignment => "alignment",
            CheckName::Layout => "layout",
            CheckName::DirectIo => "direct_io",
            CheckName::Discard => "discard",
            CheckName::Capacity => "capacity",
            CheckName::DataReduction => "data_reduction",
            CheckName::Virtualization => "virtualization",
            CheckName::Cpu => "cpu",
            CheckName::Clock => "clock",
            CheckName::Memory => "memory",
            CheckName::Other(name) => name,
        }
    }
}

name_conversions!(CheckName);

/// One check of one location (or of the host).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct DoctorCheck {
    /// What is checked.
    pub name: CheckName,
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
            matches!(c.name, CheckName::WriteCache | CheckName::WriteThroughProbe)
                && matches!(c.status, DoctorStatus::Warn | DoctorStatus::Fail)
        })
    }
}
