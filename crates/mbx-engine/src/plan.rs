//! Plans: a test is a list of phase specifications that the executor runs in order. Adding a
//! test type means adding a plan here (and, if it needs one, a phase), not editing a loop.

use std::time::Duration;

use mbx_config::{RunConfig, TestKind};

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{SystemTime, UNIX_EPOCH};

/// One phase of a plan.
#[derive(Debug, Clone, PartialEq)]
pub enum PhaseSpec {
    /// Unthrottled until the caches are 90% full.
    Attain,
    /// Paced, not measured, for this long.
    Settle(Duration),
    /// Paced, not measured, until every instance's database read latency is stable (automatic
    /// tuning's check before each step measures).
    Stabilize(StabilizeSpec),
    /// Paced, not measured, until the gate's wall-clock start time (a multi-server run's
    /// synchronized start; see [`Plan::wait_for_start`]).
    WaitStart(GateRef),
    /// Paced and measured for this long.
    Measure(Duration),
    /// Drain and checkpoint (always runs, also after an interruption).
    Shutdown,
    /// Read every database file (and, for a checksum, every log file) from start to end,
    /// verifying every page; no transactions.
    SeqPass(SeqPassSpec),
    /// Soft Recovery, phase 1: the transaction mix, unpaced, with circular logging off and the
    /// checkpoint held where the phase began, until every database has `files_per_db` log
    /// generations beyond its checkpoint.
    GenerateLogs {
        /// Log files per database (Jetstress `LogFilesToReplay`).
        files_per_db: u64,
    },
    /// Stop without a clean shutdown: no new transaction, in-flight I/O completes, dirty pages
    /// and the log buffer are left unwritten, no final checkpoint (always runs once reached).
    StopDirty,
    /// Soft Recovery, phase 2: replay the logs from the checkpoint into the databases (always
    /// runs, so an interrupted test still leaves them consistent).
    Replay,
}

/// A shared [`StartGate`] in a plan (equal when it is the same gate).
#[derive(Debug, Clone)]
pub struct GateRef(pub std::sync::Arc<StartGate>);

impl PartialEq for GateRef {
    fn eq(&self, other: &GateRef) -> bool {
        std::sync::Arc::ptr_eq(&self.0, &other.0)
    }
}

/// How a stability check runs ([`PhaseSpec::Stabilize`]).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct StabilizeSpec {
    /// Length of one latency window.
    pub window: Duration,
    /// Windows the slope is fitted over.
    pub windows: usize,
    /// Largest slope counted as stable, ms per window.
    pub slope_ms: f64,
    /// Longest wait.
    pub max: Duration,
}

/// What a sequential pass over the databases is for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PassPurpose {
    /// Database Backup: read every database file, as a VSS backup would (rows `BackupRow`).
    Backup,
    /// Checksum: read and verify every database file and every log file still in the log
    /// folder (rows `ChecksumRow`).
    Checksum,
}

/// A sequential pass: how much each read takes and how many are in flight per file.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SeqPassSpec {
    /// What the pass is for.
    pub purpose: PassPurpose,
    /// Bytes per read (a multiple of the 32 KiB page).
    pub chunk_bytes: usize,
    /// Reads in flight per file.
    pub depth_per_file: usize,
}

impl SeqPassSpec {
    /// Jetstress's backup reads: 256 KiB, 4 in flight per database.
    pub fn backup() -> SeqPassSpec {
        SeqPassSpec {
            purpose: PassPurpose::Backup,
            chunk_bytes: 256 * 1024,
            depth_per_file: 4,
        }
    }

    /// Jetstress's checksum reads: 64 KiB, 4 in flight per file.
    pub fn checksum() -> SeqPassSpec {
        SeqPassSpec {
            purpose: PassPurpose::Checksum,
            chunk_bytes: 64 * 1024,
            depth_per_file: 4,
        }
    }
}

impl PhaseSpec {
    /// Runs even when the test was interrupted (it leaves the databases consistent).
    pub fn always_runs(&self) -> bool {
        matches!(
            self,
            PhaseSpec::Shutdown | PhaseSpec::StopDirty | PhaseSpec::Replay
        )
    }
}

/// Where a plan's databases come from, before its first phase.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Databases {
    /// Created where missing, resumed where a creation was interrupted, attached where complete
    /// (`mbx_store::prepare`): what the Performance test does. Test types that read databases
    /// without writing them (Backup, Checksum) only attach.
    Prepare,
    /// Attached only, never created or written: a missing or incomplete database is an error
    /// that says to run `prepare` or a performance test first (Checksum).
    Attach,
}

/// A test as data.
#[derive(Debug, Clone, PartialEq)]
pub struct Plan {
    /// The test type (`test.type` in result.json).
    pub kind: TestKind,
    /// How the databases are made ready, before the first phase.
    pub databases: Databases,
    /// The phases, in order.
    pub phases: Vec<PhaseSpec>,
}

impl Plan {
    /// Inserts a [`PhaseSpec::WaitStart`] on `gate` before the plan's measured phase (after the
    /// cache prerequisite and the settle phase), so the measured phase begins at the gate's
    /// time. Returns false, leaving the plan as it was, when it has no measured phase.
    pub fn wait_for_start(&mut self, gate: std::sync::Arc<StartGate>) -> bool {
        match self
            .phases
            .iter()
            .position(|p| matches!(p, PhaseSpec::Measure(_)))
        {
            Some(i) => {
                self.phases.insert(i, PhaseSpec::WaitStart(GateRef(gate)));
                true
            }
            None => false,
        }
    }

    /// The Performance test: attain the cache prerequisite, settle for one dirty-page age,
    /// measure for the duration, shut down.
    pub fn performance(cfg: &RunConfig) -> Plan {
        Plan {
            kind: TestKind::Performance,
            databases: Databases::Prepare,
            phases: vec![
                PhaseSpec::Attain,
                PhaseSpec::Settle(Duration::from_secs_f64(cfg.cache.max_dirty_age_s)),
                PhaseSpec::Measure(Duration::from_secs_f64(cfg.duration_s)),
                PhaseSpec::Shutdown,
            ],
        }
    }

    /// One step of automatic tuning or find-max: attain the cache prerequisite, wait until read
    /// latency is stable ([`PhaseSpec::Stabilize`]), measure for `cfg.duration_s`, shut down.
    /// The stability wait is at least its windows (4 x a quarter of the step, within 0.25..5 s
    /// each); a step shorter than about a dirty-page age (15 s) can measure the flush of the
    /// pages the attain phase dirtied (docs/method.md, "Short steps at small targets").
    pub fn search_step(cfg: &RunConfig) -> Plan {
        let t = &cfg.tuning;
        let window = t.window_for(cfg.duration_s);
        Plan {
            kind: TestKind::Performance,
            databases: Databases::Prepare,
            phases: vec![
                PhaseSpec::Attain,
                PhaseSpec::Stabilize(StabilizeSpec {
                    window: Duration::from_secs_f64(window),
                    windows: t.windows as usize,
                    slope_ms: t.slope_ms,
                    max: Duration::from_secs_f64(t.stabilize_max_for(cfg.duration_s)),
                }),
                PhaseSpec::Measure(Duration::from_secs_f64(cfg.duration_s)),
                PhaseSpec::Shutdown,
            ],
        }
    }

    /// The Stress test: the Performance phases (attain, settle, measure for the duration, shut
    /// down) on the configuration's thresholds (the CLI gives it Jetstress's Lenient set unless the
    /// user chose thresholds), then the checksum pass over the same databases, once they are shut
    /// down cleanly: every page of every database file and every log file still in the log
    /// folders verified. Its verdict includes the pass (no page found bad, every file read). An
    /// interrupted test skips the pass (the shutdown always runs).
    pub fn stress(cfg: &RunConfig) -> Plan {
        let mut phases = Plan::performance(cfg).phases;
        phases.push(PhaseSpec::SeqPass(SeqPassSpec::checksum()));
        Plan {
            kind: TestKind::Stress,
            databases: Databases::Prepare,
            phases,
        }
    }

    /// The sequential pass a plan ends with after transactions (the Stress test's checksum), if
    /// any. `None` for a plan that only reads ([`Plan::reads_only`]) or has no pass.
    pub fn final_pass(&self) -> Option<SeqPassSpec> {
        if self.reads_only() {
            return None;
        }
        self.phases.iter().find_map(|p| match p {
            PhaseSpec::SeqPass(spec) => Some(*spec),
            _ => None,
        })
    }

    /// Database Backup: the databases prepared (created where missing, as the Performance test
    /// does), then every database file read once from start to end, all in parallel, in 256 KiB
    /// reads, every page verified.
    pub fn backup(_cfg: &RunConfig) -> Plan {
        Plan {
            kind: TestKind::Backup,
            databases: Databases::Prepare,
            phases: vec![PhaseSpec::SeqPass(SeqPassSpec::backup())],
        }
    }

    /// Checksum: existing databases attached, then every database file and every log file still
    /// in the log folders read in 64 KiB reads and verified.
    pub fn checksum(_cfg: &RunConfig) -> Plan {
        Plan {
            kind: TestKind::Checksum,
            databases: Databases::Attach,
            phases: vec![PhaseSpec::SeqPass(SeqPassSpec::checksum())],
        }
    }

    /// True when the plan only reads its databases (every phase is a sequential pass): they are
    /// neither marked in use nor given a cache, log writer or checkpoint.
    pub fn reads_only(&self) -> bool {
        !self.phases.is_empty()
            && self
                .phases
                .iter()
                .all(|p| matches!(p, PhaseSpec::SeqPass(_)))
    }

    /// The Soft Recovery test: generate `files` log files per database (circular logging off,
    /// checkpoint held), stop without a clean shutdown, replay the logs from the checkpoint.
    /// Background database maintenance does not run while the databases are stopped or
    /// recovering.
    pub fn soft_recovery(_cfg: &RunConfig, files: u64) -> Plan {
        Plan {
            kind: TestKind::SoftRecovery,
            databases: Databases::Prepare,
            phases: vec![
                PhaseSpec::GenerateLogs {
                    files_per_db: files.max(1),
                },
                PhaseSpec::StopDirty,
                PhaseSpec::Replay,
            ],
        }
    }

    /// The test type this plan is (`kind`).
    pub fn test_kind(&self) -> TestKind {
        self.kind
    }

    /// Log files per database a Soft Recovery plan generates (`None` for other plans).
    pub fn log_files_to_replay(&self) -> Option<u64> {
        self.phases.iter().find_map(|p| match p {
            PhaseSpec::GenerateLogs { files_per_db } => Some(*files_per_db),
            _ => None,
        })
    }

    /// The index of the first phase after `idx` that always runs (or the end).
    pub(crate) fn final_phase_after(&self, idx: usize) -> usize {
        self.phases
            .iter()
            .enumerate()
            .skip(idx + 1)
            .find(|(_, p)| p.always_runs())
            .map(|(i, _)| i)
            .unwrap_or(self.phases.len())
    }
}

/// A start time shared between whoever decides it (the CLI, reading the coordinator's
/// `start <unix seconds>` line) and the reactors waiting in [`PhaseSpec::WaitStart`]
/// (crate::PhaseSpec). Unset until [`StartGate::open_at`] is called.
#[derive(Debug, Default)]
pub struct StartGate {
    /// Nanoseconds since the Unix epoch; 0 while unset.
    at_unix_ns: AtomicU64,
}

impl StartGate {
    /// An unopened gate.
    pub fn new() -> Arc<StartGate> {
        Arc::new(StartGate::default())
    }

    /// Opens the gate at wall time `unix_s` (seconds since the Unix epoch, with fractions).
    /// Returns false, leaving the gate as it was, for a time that is not finite and positive or
    /// lies beyond the year 2500.
    pub fn open_at(&self, unix_s: f64) -> bool {
        if !unix_s.is_finite() || unix_s <= 0.0 || unix_s > 16_725_225_600.0 {
            return false;
        }
        // In range by the check above: at most 1.7e19 ns < u64::MAX.
        let ns = (unix_s * 1e9) as u64;
        self.at_unix_ns.store(ns.max(1), Ordering::SeqCst);
        true
    }

    /// The wall time the gate opens at, once set.
    pub fn opens_at(&self) -> Option<SystemTime> {
        match self.at_unix_ns.load(Ordering::SeqCst) {
            0 => None,
            ns => Some(UNIX_EPOCH + Duration::from_nanos(ns)),
        }
    }

    /// How long from `now` (wall time) until the gate opens: `None` while unset, zero once due.
    pub fn remaining(&self, now: SystemTime) -> Option<Duration> {
        self.opens_at()
            .map(|t| t.duration_since(now).unwrap_or(Duration::ZERO))
    }
}
