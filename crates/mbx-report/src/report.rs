//! Reads a run's result folder and writes its HTML report, CSV and JSON files through the
//! exporters of [`crate::export`].

use std::path::{Path, PathBuf};

use mbx_result::{RunResult, Sample};

use crate::export::{export, Exporter, Format};
use crate::flags::{result_flags, Flag};
/// What the exporters render and their errors, defined with them (crate::folder).
pub use crate::folder::{ReportError, RunFolder};
use crate::input::{
    folder_file, for_each_line, for_each_line_ended, read_bounded, InputError, LOG_LIMIT,
    REPORT_LIMIT, SAMPLES_LIMIT,
};

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
const SAMPLES_WHAT: &str = "the samples of a run (samples.jsonl)";
const LOG_WHAT: &str = "the log of a run (test.log)";

/// The result.json of a results folder: a regular file in it, not a link
/// ([`folder_file`]); every reader of a results folder finds it through here.
pub fn folder_result(dir: &Path) -> Result<PathBuf, InputError> {
    folder_file(dir, "result.json", RESULT_WHAT)
}

/// Reads a result folder: result.json, and samples.jsonl and test.log if present. Each file must
/// be a regular file within its limit ([`REPORT_LIMIT`], [`SAMPLES_LIMIT`], [`LOG_LIMIT`]), and
/// a file of the folder (result.json when the folder is given; the samples and log files
/// result.json names) must be in it: a name out of it (absolute, `..`) or a symbolic link is
/// refused ([`folder_file`]), so a folder copied from elsewhere cannot make the report embed
/// another file.
///
/// samples.jsonl is appended as the test runs, so a crash can leave its last line cut short: a
/// last line without a line feed that is not a sample is skipped, with a note. Any other line
/// that is not a sample is an error naming the line.
pub fn load_run(input: &Path) -> Result<RunFolder, ReportError> {
    let (dir, result_path) = locate(input);
    // A folder's result.json is one of its files (never a link); a result.json named by the user
    // is read as given.
    let result_path = if input.is_dir() {
        folder_result(&dir)?
    } else {
        result_path
    };
    let text = read_bounded(&result_path, REPORT_LIMIT, RESULT_WHAT)?;
    let invalid = |e: serde_json::Error| ReportError::Invalid {
        path: result_path.clone(),
        reason: format!("not an mbxstress result ({e})"),
    };
    // Parsed from the text (errors then give line and column), and once more as JSON for the
    // flags, which also read keys that this version's RunResult may not have.
    let result: RunResult = serde_json::from_str(&text).map_err(invalid)?;
    let flags = result_flags(&serde_json::from_str(&text).map_err(invalid)?);
    drop(text);

    // The samples and the log are files of the folder, named by result.json: never a path out of
    // it, never through a link.
    let (samples, torn, samples_path) = match folder_file(&dir, &result.samples_file, SAMPLES_WHAT)
    {
        Ok(path) => {
            let (samples, torn) = read_samples(&path)?;
            (samples, torn, path)
        }
        Err(e) if e.is_not_found() => (Vec::new(), None, dir.join(&result.samples_file)),
        Err(e) => return Err(e.into()),
    };
    let notes = torn
        .map(|n| {
            format!(
                "{}: line {n}, the last, is incomplete (the run stopped while writing it) and was skipped",
                samples_path.display()
            )
        })
        .into_iter()
        .collect();

    let mut log = Vec::new();
    let read = folder_file(&dir, &result.log_file, LOG_WHAT)
        .map_err(ReportError::from)
        .and_then(|path| {
            for_each_line(&path, LOG_LIMIT, LOG_WHAT, |_, line| {
                log.push(line.to_string());
                Ok::<_, ReportError>(())
            })
        });
    skip_if_absent(read)?;
    Ok(RunFolder {
        result,
        samples,
        log,
        dir,
        flags,
        notes,
    })
}

/// The samples of a samples.jsonl (none if the file does not exist), and the number of a torn last
/// line that was skipped.
pub fn read_samples(path: &Path) -> Result<(Vec<Sample>, Option<usize>), ReportError> {
    let mut samples = Vec::new();
    let mut torn = None;
    let read = for_each_line_ended(path, SAMPLES_LIMIT, SAMPLES_WHAT, |n, line, ended| {
        if line.trim().is_empty() {
            return Ok(());
        }
        match serde_json::from_str::<Sample>(line) {
            Ok(s) => samples.push(s),
            // Only the last line can lack its line feed: the writer stopped in the middle.
            Err(_) if !ended => torn = Some(n),
            Err(e) => {
                return Err(ReportError::Invalid {
                    path: path.to_path_buf(),
                    reason: format!("line {n}: not a sample ({e})"),
                })
            }
        }
        Ok(())
    });
    skip_if_absent(read)?;
    Ok((samples, torn))
}

/// An optional file that does not exist is not an error.
fn skip_if_absent(read: Result<(), ReportError>) -> Result<(), ReportError> {
    match read {
        Err(ReportError::Input(e)) if e.is_not_found() => Ok(()),
        other => other,
    }
}

/// Writes report.html, instances.csv and samples.csv for the run at `input` (a result folder or
/// its result.json) into `out` (default: the result folder). Returns the files written.
pub fn write_report(input: &Path, out: Option<&Path>) -> Result<Vec<PathBuf>, ReportError> {
    write_report_as(input, out, &Format::DEFAULT).map(|w| w.files)
}

/// What [`write_report_as`] wrote, and what the caller should tell the user.
#[derive(Debug)]
pub struct Written {
    /// The files written, in the order of the formats.
    pub files: Vec<PathBuf>,
    /// Why the result is not a complete, passing measurement (empty if it is).
    pub flags: Vec<Flag>,
    /// What reading the folder met (a torn last sample skipped).
    pub notes: Vec<String>,
}

/// Reads the run at `input` and writes it in each of `formats` into `out` (default: the result
/// folder), through the formats' exporters.
pub fn write_report_as(
    input: &Path,
    out: Option<&Path>,
    formats: &[Format],
) -> Result<Written, ReportError> {
    let run = load_run(input)?;
    let out = out
        .map(Path::to_path_buf)
        .unwrap_or_else(|| run.dir.clone());
    let exporters: Vec<Box<dyn Exporter>> = formats.iter().flat_map(|f| f.exporters()).collect();
    let files = export(&run, &out, &exporters)?;
    Ok(Written {
        files,
        flags: run.flags,
        notes: run.notes,
    })
}
