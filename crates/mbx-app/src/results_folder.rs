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

/// Creates `name` in the results folder `dir` for writing, refusing one already there (a
/// result is never appended to), buffered: test.log and samples.jsonl.
pub(crate) fn create_new(
    dir: &Path,
    name: &str,
) -> Result<std::io::BufWriter<std::fs::File>, AppError> {
    let f = fs_err::OpenOptions::new()
        .create_new(true)
        .write(true)
        .open(dir.join(name))
        .map_err(AppError::File)?
        .into_parts()
        .0;
    Ok(std::io::BufWriter::new(f))
}

/// Appends one timestamped line to test.log and flushes it (a crash loses at most this line).
pub(crate) fn log_line(log: &mut impl std::io::Write, text: &str) -> std::io::Result<()> {
    let line = format!("{} -- {text}\n", mbx_engine::rfc3339_now());
    log.write_all(line.as_bytes()).and_then(|_| log.flush())
}
