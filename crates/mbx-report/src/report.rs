//! Reads a run's result folder and writes its HTML report, CSV and JSON files through the
//! exporters of [`crate::export`].

use std::path::{Path, PathBuf};

use mbx_result::{RunResult, Sample};

use crate::export::{export, Exporter, Format};
use crate::flags::result_flags;
/// What the exporters render and their errors, defined with them (crate::folder).
pub use crate::folder::{folder_result, locate, ReportError, ResultText, RunFolder, Written};
use crate::folder::{read_jsonl, read_log};
use crate::input::folder_file;

const SAMPLES_WHAT: &str = "the samples of a run (samples.jsonl)";

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
    let source = ResultText::read(input)?;
    if source.is_loadgen() {
        return Err(ReportError::Invalid {
            path: source.path,
            reason: "a loadgen result: this reads storage results (`mbxstress report` renders a loadgen result)".into(),
        });
    }
    run_of(source)
}

/// A storage result's folder from its result.json's text: the samples and log it names.
fn run_of(source: ResultText) -> Result<RunFolder, ReportError> {
    let ResultText {
        dir,
        path: result_path,
        text,
    } = source;
    let invalid = |e: serde_json::Error| ReportError::Invalid {
        path: result_path.clone(),
        reason: format!("not an mbxstress result ({e})"),
    };
    // Parsed from the text (errors then give line and column), and once more, leniently, for
    // the flags, which also read keys that this version's RunResult may not have.
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

    let log = read_log(&dir, &result.log_file)?;
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
    read_jsonl(path, SAMPLES_WHAT, "a sample")
}

/// Writes report.html, instances.csv and samples.csv for the run at `input` (a result folder or
/// its result.json) into `out` (default: the result folder). Returns the files written.
pub fn write_report(input: &Path, out: Option<&Path>) -> Result<Vec<PathBuf>, ReportError> {
    write_report_as(input, out, &Format::DEFAULT).map(|w| w.files)
}

/// Reads the run at `input` and writes it in each of `formats` into `out` (default: the result
/// folder), through the formats' exporters.
pub fn write_report_as(
    input: &Path,
    out: Option<&Path>,
    formats: &[Format],
) -> Result<Written, ReportError> {
    let source = ResultText::read(input)?;
    if source.is_loadgen() {
        return crate::loadgen::write_report_as(source, out, formats);
    }
    let run = run_of(source)?;
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
