//! A run's result folder as the exporters see it ([`RunFolder`]), and the errors of reading and
//! writing one ([`ReportError`]), and reading its result.json ([`ResultText`]) and JSON-lines
//! files: what [`crate::report`] and [`crate::loadgen`] read and [`crate::export`] writes share.

use std::path::{Path, PathBuf};

use mbx_result::{RunResult, Sample};

use crate::flags::Flag;
use crate::input::{
    folder_file, for_each_line, for_each_line_ended, read_bounded, InputError, LOG_LIMIT,
    REPORT_LIMIT, SAMPLES_LIMIT,
};

/// Errors writing a report; each names the file. Messages are complete: the OS error is part of
/// the message, not also a `source()`, so an error chain shows it once.
#[derive(Debug, thiserror::Error)]
pub enum ReportError {
    /// A file could not be read.
    #[error("cannot read {}: {error}", path.display())]
    Read {
        /// The file.
        path: PathBuf,
        /// The OS error: part of the message, deliberately not a `source()`.
        error: std::io::Error,
    },
    /// A file is not a readable regular file of a sensible size, or not UTF-8 text.
    #[error(transparent)]
    Input(#[from] InputError),
    /// A file is not what it should be.
    #[error("{}: {reason}", path.display())]
    Invalid {
        /// The file.
        path: PathBuf,
        /// What is wrong.
        reason: String,
    },
    /// A file could not be written.
    #[error("cannot write {}: {error}", path.display())]
    Write {
        /// The file.
        path: PathBuf,
        /// The OS error: part of the message, deliberately not a `source()`.
        error: std::io::Error,
    },
}

impl ReportError {
    /// True when the input (not the machine) is at fault: exit code 2.
    pub fn is_user_error(&self) -> bool {
        !matches!(self, ReportError::Write { .. })
    }
}

/// A result folder as read from disk: what every [`Exporter`](crate::export::Exporter) renders.
#[derive(Debug)]
pub struct RunFolder {
    /// result.json.
    pub result: RunResult,
    /// The samples of samples.jsonl (empty if there is none).
    pub samples: Vec<Sample>,
    /// The lines of test.log (empty if there is none).
    pub log: Vec<String>,
    /// The folder.
    pub dir: PathBuf,
    /// Why the result is not a complete, passing measurement (empty if it is).
    pub flags: Vec<Flag>,
    /// What reading the folder met that the reader should know (a torn last sample skipped).
    pub notes: Vec<String>,
}

impl RunFolder {
    /// A run held in memory (just measured, not yet on disk): its result, nothing else read.
    pub fn of_result(result: RunResult, dir: PathBuf) -> RunFolder {
        RunFolder {
            result,
            samples: Vec::new(),
            log: Vec::new(),
            dir,
            flags: Vec::new(),
            notes: Vec::new(),
        }
    }
}

/// The result folder and result.json for an input that is either.
pub fn locate(input: &Path) -> (PathBuf, PathBuf) {
    if input.is_dir() {
        (input.to_path_buf(), input.join("result.json"))
    } else {
        let dir = input
            .parent()
            .filter(|p| !p.as_os_str().is_empty())
            .unwrap_or(Path::new("."))
            .to_path_buf();
        (dir, input.to_path_buf())
    }
}

const RESULT_WHAT: &str = "an mbxstress result.json";

/// The result.json of a results folder: a regular file in it, not a link
/// ([`folder_file`]); every reader of a results folder finds it through here.
pub fn folder_result(dir: &Path) -> Result<PathBuf, InputError> {
    folder_file(dir, "result.json", RESULT_WHAT)
}

/// A result.json as read from a folder or named by the user: its folder, its path and its text.
/// Read once, so that `report` can tell a storage result from a loadgen result before parsing it.
#[derive(Debug)]
pub struct ResultText {
    /// The result folder (result.json's folder when a file was given).
    pub dir: PathBuf,
    /// result.json.
    pub path: PathBuf,
    /// Its text.
    pub text: String,
}

impl ResultText {
    /// Reads the result.json of `input` (a result folder or its result.json), bounded
    /// ([`REPORT_LIMIT`]); a folder's result.json is one of its files, never a link.
    pub fn read(input: &Path) -> Result<ResultText, ReportError> {
        let (dir, path) = locate(input);
        // A folder's result.json is one of its files (never a link); a result.json named by the
        // user is read as given.
        let path = if input.is_dir() {
            folder_result(&dir)?
        } else {
            path
        };
        let text = read_bounded(&path, REPORT_LIMIT, RESULT_WHAT)?;
        Ok(ResultText { dir, path, text })
    }

    /// True when it is a loadgen result (its `kind`, [`mbx_result::is_loadgen`]); text that is
    /// not JSON is not (the storage reader then names the error).
    pub fn is_loadgen(&self) -> bool {
        serde_json::from_str::<serde_json::Value>(&self.text)
            .is_ok_and(|v| mbx_result::is_loadgen(&v))
    }
}

/// The lines of a JSON-lines file of `T` (none if the file does not exist), and the number of a
/// torn last line that was skipped (only the last line can lack its line feed: the writer stopped
/// in the middle). Any other line that is not a `T` is an error naming the line.
pub(crate) fn read_jsonl<T: serde::de::DeserializeOwned>(
    path: &Path,
    what: &'static str,
    one: &str,
) -> Result<(Vec<T>, Option<usize>), ReportError> {
    let mut samples = Vec::new();
    let mut torn = None;
    let read = for_each_line_ended(path, SAMPLES_LIMIT, what, |n, line, ended| {
        if line.trim().is_empty() {
            return Ok(());
        }
        match serde_json::from_str::<T>(line) {
            Ok(s) => samples.push(s),
            Err(_) if !ended => torn = Some(n),
            Err(e) => {
                return Err(ReportError::Invalid {
                    path: path.to_path_buf(),
                    reason: format!("line {n}: not {one} ({e})"),
                })
            }
        }
        Ok(())
    });
    skip_if_absent(read)?;
    Ok((samples, torn))
}

/// An optional file that does not exist is not an error.
pub(crate) fn skip_if_absent(read: Result<(), ReportError>) -> Result<(), ReportError> {
    match read {
        Err(ReportError::Input(e)) if e.is_not_found() => Ok(()),
        other => other,
    }
}

/// What [`crate::report::write_report_as`] wrote, and what the caller should tell the user.
#[derive(Debug)]
pub struct Written {
    /// The files written, in the order of the formats.
    pub files: Vec<PathBuf>,
    /// Why the result is not a complete, passing measurement (empty if it is).
    pub flags: Vec<Flag>,
    /// What reading the folder met (a torn last sample skipped).
    pub notes: Vec<String>,
}

const LOG_WHAT: &str = "the log of a run (test.log)";

/// A results folder's test.log (`name`, as its result names it), its lines; none when absent.
pub(crate) fn read_log(dir: &Path, name: &str) -> Result<Vec<String>, ReportError> {
    let mut log = Vec::new();
    let read = folder_file(dir, name, LOG_WHAT)
        .map_err(ReportError::from)
        .and_then(|path| {
            for_each_line(&path, LOG_LIMIT, LOG_WHAT, |_, line| {
                log.push(line.to_string());
                Ok::<_, ReportError>(())
            })
        });
    skip_if_absent(read)?;
    Ok(log)
}
