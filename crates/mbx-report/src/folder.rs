//! A run's result folder as the exporters see it ([`RunFolder`]), and the errors of reading and
//! writing one ([`ReportError`]): what [`crate::report`] reads and [`crate::export`] writes share.

use std::path::PathBuf;

use mbx_result::{RunResult, Sample};

use crate::flags::Flag;
use crate::input::InputError;

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
