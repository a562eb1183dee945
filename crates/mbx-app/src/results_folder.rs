//! The results folder of a run: where it is, and that nothing is in the way.

use std::path::{Path, PathBuf};

use crate::AppError;

/// Files a run writes into its results folder.
pub const RESULT_FILES: [&str; 10] = [
    "result.json",
    "find-max.json",
    "find-max.html",
    "test.log",
    "samples.jsonl",
    "report.html",
    "instances.csv",
    "samples.csv",
    "tasks.csv",
    "commands.csv",
];

/// A new time-stamped folder under `./mbxstress-results/`, its name `prefix` and the time.
pub fn stamped(prefix: &str) -> PathBuf {
    let stamp = mbx_engine::rfc3339_now().replace(':', "");
    PathBuf::from("mbxstress-results").join(format!("{prefix}{stamp}"))
}

/// The results folder (`out`, or a time-stamped one), checked (nothing of ours or anyone's in
/// the way) but not created.
pub fn results_dir(out: Option<&Path>) -> Result<PathBuf, AppError> {
    let dir = match out {
        Some(d) => d.to_path_buf(),
        None => stamped(""),
    };
    if dir.exists() && !dir.is_dir() {
        return Err(AppError::usage(format!(
            "--out {} is not a folder; choose a new or empty folder for the results",
            dir.display()
        )));
    }
    // Never append to, or replace, a file already there (ours from an earlier run, or not).
    if let Some(name) = RESULT_FILES.iter().find(|n| dir.join(n).exists()) {
        return Err(AppError::usage(format!(
            "--out {} already holds {name}; choose a new or empty folder for the results",
            dir.display()
        )));
    }
    Ok(dir)
}
