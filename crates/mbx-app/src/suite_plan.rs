//! The suite's plan and outcomes as plain data: its tests in order ([`STEPS`]) and how each went
//! ([`Outcome`], [`SuiteSummary`]). A leaf module, so the event stream's notices can carry a
//! suite's summary without the event module depending on the suite that runs it.

use std::path::PathBuf;

use mbx_config::TestKind;
use mbx_engine::result::StopReason;

/// The tests of the suite, in order, with their folder names.
pub const STEPS: [(&str, TestKind); 5] = [
    ("1-performance", TestKind::Performance),
    ("2-stress", TestKind::Stress),
    ("3-backup", TestKind::Backup),
    ("4-soft-recovery", TestKind::SoftRecovery),
    ("5-checksum", TestKind::Checksum),
];

/// How a test of the suite went.
#[derive(Debug, Clone)]
pub struct Outcome {
    /// Its folder's name.
    pub name: &'static str,
    /// Its type.
    pub kind: TestKind,
    /// Its verdict.
    pub pass: bool,
    /// Why it stopped.
    pub reason: StopReason,
    /// It ran to completion in an earlier run of the suite and was skipped.
    pub skipped: bool,
}

/// The suite's outcomes so far ([`Notice::SuiteEnd`]).
#[derive(Debug, Clone)]
pub struct SuiteSummary {
    /// Each test's, in order.
    pub outcomes: Vec<Outcome>,
    /// The test that ended the suite early.
    pub stopped_at: Option<&'static str>,
    /// The suite's folder.
    pub root: PathBuf,
}

impl SuiteSummary {
    /// Every test ran.
    pub fn complete(&self) -> bool {
        self.stopped_at.is_none() && self.outcomes.len() == STEPS.len()
    }

    /// Every test ran and passed.
    pub fn pass(&self) -> bool {
        self.complete() && self.outcomes.iter().all(|o| o.pass)
    }
}
