//! The text a terminal shows, from results and typed events: what a test is about to do, its
//! status line while it runs, its summary (verdict, checks, figures) and the sizing report. Pure
//! functions, data in, text out: the binary decides where the text goes (stdout or stderr,
//! when, and whether at all for its `--progress` mode) and prints it; nothing here prints.

use std::fmt;
use std::path::Path;

use mbx_config::TestKind;
use mbx_engine::result::RunResult;
use mbx_result::{FindMax, LoadgenResult};

use crate::doctor::DoctorReport;
use crate::event::{FindMaxStart, LoadgenProgress, RunStart};
use crate::suite_plan::SuiteSummary;

mod doctor;
mod loadgen;
mod run;
pub mod sizing;

pub use crate::num::num;

/// Where a summary goes: most go to stdout, the line of a run that measured nothing to stderr.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Shown {
    /// For stdout.
    Stdout(String),
    /// For stderr.
    Stderr(String),
}

/// Seconds as measured: to the millisecond under a minute ("0.994s", "12.5s", "2s"), then
/// rounded to the second ("1m30s", "2h00m00s").
pub fn fmt_secs(s: f64) -> String {
    let s = if s.is_finite() { s.max(0.0) } else { 0.0 };
    if s < 59.9995 {
        let text = format!("{s:.3}");
        let text = text.trim_end_matches('0').trim_end_matches('.');
        return format!("{text}s");
    }
    mbx_engine::human_duration(std::time::Duration::from_secs_f64(s.round()))
}

/// The first letter upper case ("performance" -> "Performance").
pub fn capitalize(s: &str) -> String {
    let mut c = s.chars();
    match c.next() {
        Some(f) => f.to_uppercase().collect::<String>() + c.as_str(),
        None => String::new(),
    }
}

/// The text `f` writes, line by line.
fn text(f: impl FnOnce(&mut String) -> fmt::Result) -> String {
    let mut o = String::new();
    // Writing to a String never fails: fmt::Write for String returns Ok always.
    let _ = f(&mut o);
    o
}

/// What a test is about to do, and where its results go (for stderr, human mode).
pub fn run_start(s: &RunStart) -> String {
    text(|o| run::start(o, s))
}

/// A test's summary: Backup's and Checksum's table, or the performance summary (Soft
/// Recovery's and Stress's are it plus their rows), or a line when nothing was measured.
pub fn run_end(kind: TestKind, result: &RunResult, path: &Path, report: Option<&Path>) -> Shown {
    run::end(kind, result, path, report)
}

/// A storage test's status line while it runs.
pub fn run_progress(p: &mbx_engine::Progress) -> String {
    run::progress_line(p)
}

/// What find-max is about to do (for stderr, human mode).
pub fn find_max_start(s: &FindMaxStart) -> String {
    text(|o| run::find_max_start(o, s))
}

/// The search's steps and its answer (for stdout).
pub fn find_max_end(f: &FindMax, json: &Path, html: &Path) -> String {
    text(|o| run::find_max_end(o, f, json, html))
}

/// The suite's summary (for stdout): each test's verdict, then the suite's, naming the test
/// that ended it early.
pub fn suite_end(s: &SuiteSummary) -> String {
    text(|o| run::suite_summary(o, s))
}

/// What a loadgen phase is about to do (for stderr, human mode): `phase` is "init", "run",
/// "idle" or "submit"; `count` its users, or its connections for submit.
pub fn loadgen_start(phase: &str, dir: &Path, count: u64) -> String {
    if phase == "submit" {
        format!(
            "loadgen submit: {count} connections; results in {}\n",
            dir.display()
        )
    } else {
        format!(
            "loadgen {}: {count} users; results in {}\n",
            if phase == "init" { "init" } else { "run" },
            dir.display()
        )
    }
}

/// A loadgen phase's status line while it runs.
pub fn loadgen_progress(p: &LoadgenProgress) -> String {
    loadgen::progress_line(p)
}

/// The summary of a loadgen phase (for stdout): the verdict, the tasks or the fill, delivery,
/// errors.
pub fn loadgen_end(r: &LoadgenResult, path: &Path, report: Option<&Path>) -> String {
    text(|o| loadgen::end(o, r, path, report))
}

/// The preflight checks worth a line before a run (for stderr, human mode): each warning or
/// failure, then a line saying findings never change the verdict; nothing when all passed.
pub fn doctor_findings(r: &DoctorReport) -> String {
    text(|o| doctor::announce(o, r))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn seconds_as_measured() {
        assert_eq!(fmt_secs(0.994), "0.994s");
        assert_eq!(fmt_secs(2.000089), "2s");
        assert_eq!(fmt_secs(12.5), "12.5s");
        assert_eq!(fmt_secs(0.0), "0s");
        assert_eq!(fmt_secs(90.4), "1m30s");
        assert_eq!(fmt_secs(7200.0), "2h00m00s");
        assert_eq!(fmt_secs(f64::NAN), "0s");
        assert_eq!(capitalize("performance"), "Performance");
        assert_eq!(capitalize(""), "");
    }
}
