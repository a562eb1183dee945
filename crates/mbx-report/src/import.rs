//! Import of Jetstress reports given as text: the report's tables copied out of its HTML page or a
//! PDF, as tab-separated rows (as in the Dell ESRP paper) or markdown pipe tables with bold keys
//! (as in the Tintri paper). The source's own numbers are kept; where a typed summary row
//! disagrees with the per-instance rows beyond rounding, a discrepancy is recorded.

use std::path::{Path, PathBuf};

use serde::Serialize;

use crate::flags::{report_flags, result_flags, Flag};
use crate::input::{read_bounded, InputError, REPORT_LIMIT};

/// What `import`, `esrp` and `compare` expect a file to be (for error messages).
pub const REPORT_WHAT: &str =
    "a Jetstress report (HTML or its tables as text) or an mbxstress result.json";

/// The 12 Jetstress columns, as imported.
pub use mbx_result::Io12;
/// The per-database rows of backup and soft recovery reports: the result model's own, so an
/// imported report and an mbxstress result carry the same rows.
pub use mbx_result::{BackupRow, SoftRecoveryRow};
use mbx_result::{CheckState, InstanceResult, RateBytes, RunResult, TestKind, SCHEMA};

/// Errors of the import, naming the file, the table and the row. Messages are complete: the OS
/// error is part of the message, not also a `source()`, so an error chain shows it once.
#[derive(Debug, thiserror::Error)]
pub enum ImportError {
    /// The file could not be read.
    #[error("cannot read {}: {error}", path.display())]
    Read {
        /// The file.
        path: PathBuf,
        /// The OS error: part of the message, deliberately not a `source()`.
        error: std::io::Error,
    },
    /// A table or value is malformed.
    #[error("{}: table \"{table}\", row {row}: {reason}", path.display())]
    Malformed {
        /// The file.
        path: PathBuf,
        /// The table's title.
        table: String,
        /// The row (1-based line number in the file, or the instance name).
        row: String,
        /// What is wrong.
        reason: String,
    },
    /// The file is not a readable regular file of a sensible size, or not UTF-8 text.
    #[error(transparent)]
    Input(#[from] InputError),
    /// The file holds several Jetstress reports where one was expected.
    #[error("{}: holds {} Jetstress reports ({}); `import` and `esrp` read each on its own, `compare` takes one report per file: save the report to compare in a file of its own", path.display(), reports.len(), reports.join(", "))]
    SeveralReports {
        /// The file.
        path: PathBuf,
        /// Each report: its test type and the line of its title ("Performance (line 163)").
        reports: Vec<String>,
    },
    /// A loadgen result (`kind` `loadgen`): not a storage measurement.
    #[error("{}: a loadgen result: compare and esrp read storage results (`mbxstress report` renders a loadgen result)", path.display())]
    Loadgen {
        /// The file.
        path: PathBuf,
    },
    /// Nothing recognizable.
    #[error("{}: no Jetstress report tables found (expected e.g. \"Transactional I/O Performance\", \"Database Backup Statistics\" or \"Soft-Recovery Statistics\")", path.display())]
    Empty {
        /// The file.
        path: PathBuf,
    },
}

/// A per-instance pair of figures (BDM or log replication).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct RateRow {
    /// Instance.
    pub instance: String,
    /// Reads per second.
    pub reads_per_s: f64,
    /// Average bytes.
    pub read_avg_bytes: f64,
}

/// An instance's row of a 12-column table.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct InstanceIo {
    /// Instance.
    pub instance: String,
    /// Its 12 columns.
    pub io: Io12,
}

/// Everything recognized in a report.
#[derive(Debug, Clone, PartialEq, Serialize, Default)]
pub struct ImportedReport {
    /// The file.
    pub source: String,
    /// The test type the report names ("performance", "stress", "backup", "soft-recovery"),
    /// `None` when it names none (serialized as "unknown").
    #[serde(serialize_with = "kind_or_unknown")]
    pub kind: Option<TestKind>,
    /// Machine name, if given.
    pub machine: Option<String>,
    /// Overall result ("Pass"/"Fail"), if given.
    pub overall_result: Option<String>,
    /// Achieved transactional IOPS as typed in the report.
    pub achieved_iops_typed: Option<f64>,
    /// Target transactional IOPS.
    pub target_iops: Option<f64>,
    /// Transactional I/O Performance.
    pub transactional: Vec<InstanceIo>,
    /// Total I/O Performance.
    pub total: Vec<InstanceIo>,
    /// Background Database Maintenance I/O Performance.
    pub bdm: Vec<RateRow>,
    /// Log Replication I/O Performance.
    pub log_replication: Vec<RateRow>,
    /// Database Backup Statistics.
    pub backup: Vec<BackupRow>,
    /// The backup table's typed Avg row (MB/s).
    pub backup_avg_typed: Option<f64>,
    /// The backup table's typed Sum row (MB/s).
    pub backup_sum_typed: Option<f64>,
    /// Soft-Recovery Statistics.
    pub soft_recovery: Vec<SoftRecoveryRow>,
    /// The soft recovery table's typed Avg row: (logs, seconds).
    pub soft_recovery_avg_typed: Option<(f64, f64)>,
    /// Seconds per log as the input states it: from the typed Avg row of a report (average
    /// elapsed / average logs), or an mbxstress result's `seconds_per_log`.
    pub seconds_per_log_typed: Option<f64>,
    /// Typed summaries that disagree with the per-instance data beyond rounding.
    pub discrepancies: Vec<String>,
    /// Damage met and what was done about it, one per line of the input ("line 12: ...").
    /// Only figures the input really holds are imported: a damaged row that no summary needs
    /// is skipped, a damaged title, label or number that can be read unambiguously is read.
    pub warnings: Vec<String>,
    /// Why this is not a complete, passing measurement (empty if it is).
    pub flags: Vec<Flag>,
}

/// `kind` as `import --json` has always printed it: the test type's name, or "unknown".
fn kind_or_unknown<S: serde::Serializer>(kind: &Option<TestKind>, s: S) -> Result<S::Ok, S::Error> {
    s.serialize_str(kind.map_or("unknown", TestKind::name))
}

use crate::columns::{IO12_COLUMNS, SECTIONS};
use crate::header::squash;

/// Removes markdown and HTML emphasis and surrounding space.
fn clean(s: &str) -> String {
    s.replace("**", "")
        .replace("<b>", "")
        .replace("</b>", "")
        .replace('\u{a0}', " ")
        .trim()
        .trim_start_matches('#')
        .trim()
        .to_string()
}

/// Splits a table row: tab-separated, or a markdown pipe row. `None` if the line is not a row.
fn cells(line: &str) -> Option<Vec<String>> {
    let t = line.trim();
    if t.starts_with('|') {
        let inner = t.trim_matches('|');
        if inner
            .chars()
            .all(|c| c == '-' || c == '|' || c == ':' || c == ' ')
        {
            return None; // separator row
        }
        return Some(inner.split('|').map(clean).collect());
    }
    if line.contains('\t') {
        let mut v: Vec<String> = line
            .trim_end_matches(['\t', ' ', '\r'])
            .split('\t')
            .map(clean)
            .collect();
        while v.len() > 1 && v.last().is_some_and(String::is_empty) {
            v.pop();
        }
        return Some(v);
    }
    None
}

/// A markdown table's separator row (`|---|:--|`).
fn is_separator(line: &str) -> bool {
    let t = line.trim();
    t.starts_with('|') && t.chars().all(|c| matches!(c, '-' | '|' | ':' | ' '))
}

/// Parses a number at the start of a value as Jetstress prints it ("96.19(Average)", "720").
fn number(s: &str) -> Option<f64> {
    let s = s.trim();
    let mut end = s
        .find(|c: char| !(c.is_ascii_digit() || c == '.' || c == '-' || c == ','))
        .unwrap_or(s.len());
    // An exponent is part of the number ("1e308" is not 1, and is then refused as implausible).
    let exp = s[end..]
        .strip_prefix(['e', 'E'])
        .map(|x| x.strip_prefix(['+', '-']).unwrap_or(x));
    if let Some(digits) = exp.filter(|x| x.starts_with(|c: char| c.is_ascii_digit())) {
        let n = digits
            .find(|c: char| !c.is_ascii_digit())
            .unwrap_or(digits.len());
        end = s.len() - (digits.len() - n);
    }
    let v = s[..end].replace(',', "");
    if v.is_empty() {
        return None;
    }
    v.parse().ok()
}

fn hms(s: &str) -> Option<f64> {
    let parts: Vec<&str> = s.trim().split(':').collect();
    if parts.len() != 3 {
        return None;
    }
    let n: Vec<f64> = parts.iter().filter_map(|p| p.parse().ok()).collect();
    (n.len() == 3).then(|| n[0] * 3600.0 + n[1] * 60.0 + n[2])
}

#[derive(Clone, Copy, PartialEq)]
enum Table {
    Transactional,
    Total,
    Bdm,
    Replication,
    Backup,
    SoftRecovery,
}

impl Table {
    fn title(self) -> &'static str {
        match self {
            Table::Transactional => "Transactional I/O Performance",
            Table::Total => "Total I/O Performance",
            Table::Bdm => "Background Database Maintenance I/O Performance",
            Table::Replication => "Log Replication I/O Performance",
            Table::Backup => "Database Backup Statistics",
            Table::SoftRecovery => "Soft-Recovery Statistics",
        }
    }
    const ALL: [Table; 6] = [
        Table::Transactional,
        Table::Total,
        Table::Bdm,
        Table::Replication,
        Table::Backup,
        Table::SoftRecovery,
    ];
    /// The table a line titles, and whether its title was damaged (a word split by a stray
    /// space or tab, or letters pushed into the next cell).
    fn detect(line: &str) -> Option<(Table, bool)> {
        // A title set as a one-cell markdown row ("| Total I/O Performance |") is a title too.
        let line = line.trim().trim_matches('|');
        let l = clean(line);
        if let Some(t) = Table::ALL
            .into_iter()
            .find(|t| l.starts_with(t.title()) && l.len() < t.title().len() + 12)
        {
            return Some((t, false));
        }
        // A line longer than any title (a row, a sentence) is none: the squash below is the
        // importer's main cost, run on every line.
        let longest = "backgrounddatabasemaintenancei/operformance".len() + 6;
        let mut letters = line
            .chars()
            .filter(|c| !c.is_whitespace() && !matches!(c, '*' | '#'));
        // Every title starts with one of these letters (squashed: lower case).
        if letters
            .next()
            .is_none_or(|c| !matches!(c.to_ascii_lowercase(), 't' | 'b' | 'l' | 'd' | 's'))
            || letters.nth(longest - 1).is_some()
        {
            return None;
        }
        let sq = squash(line);
        if sq.is_empty() {
            return None;
        }
        Table::ALL
            .into_iter()
            .find(|t| {
                let st = squash(t.title());
                sq.starts_with(&st) && sq.len() <= st.len() + 6
            })
            .map(|t| (t, true))
            .or_else(|| {
                // A title cut short (a PDF's line or page ended inside it): read when what is
                // left names one section only.
                let title = cut_title(&sq)?;
                Table::ALL
                    .into_iter()
                    .find(|t| t.title() == title)
                    .map(|t| (t, true))
            })
    }
    /// Cells of a row: the instance (or Avg/Sum) and its figures.
    fn width(self) -> usize {
        match self {
            Table::Transactional | Table::Total => 13,
            Table::Bdm | Table::Replication | Table::SoftRecovery => 3,
            Table::Backup => 4,
        }
    }
    /// The summaries (`esrp`) need this table's rows: a damaged one is an error; in another
    /// table it is a warning and the row is skipped.
    fn needed(self) -> bool {
        matches!(
            self,
            Table::Transactional | Table::Backup | Table::SoftRecovery
        )
    }
}

/// Imports a report file: a regular file of at most [`REPORT_LIMIT`] bytes of UTF-8 text holding
/// one Jetstress report (a file of several is refused naming them: see [`import_file_all`]).
pub fn import_file(path: &Path) -> Result<ImportedReport, ImportError> {
    let text = read_bounded(path, REPORT_LIMIT, REPORT_WHAT)?;
    import_text(&text, path)
}

/// Imports every Jetstress report in a file (a paper converted from PDF may quote several, one
/// after another), each on its own, in the file's order.
pub fn import_file_all(path: &Path) -> Result<Vec<ImportedReport>, ImportError> {
    let text = read_bounded(path, REPORT_LIMIT, REPORT_WHAT)?;
    import_text_all(&text, path)
}

/// The inputs of `esrp` in a file: an mbxstress result.json (its figures checked as a report's
/// are), or each Jetstress report the file holds.
pub fn load_each(path: &Path) -> Result<Vec<ImportedReport>, ImportError> {
    let text = read_bounded(path, REPORT_LIMIT, REPORT_WHAT)?;
    if text.trim_start().starts_with('{') {
        let r = from_result_json(&text, path)?;
        check_figures(&r, path)?;
        return Ok(vec![r]);
    }
    import_text_all(&text, path)
}

/// True if the text is an HTML document (or fragment with tables).
fn looks_like_html(text: &str) -> bool {
    let head: String = text
        .chars()
        .take(4096)
        .collect::<String>()
        .to_ascii_lowercase();
    head.contains("<html") || head.contains("<!doctype html") || head.contains("<table")
}

/// The sections of a Jetstress report in the order its HTML page has them, one `<fieldset>`
/// each (the public parsers of real reports index them this way: the second holds Database Sizing
/// and Throughput, the fifth the Transactional I/O Performance table; a Database Backup or Soft
/// Recovery report opens with its statistics; the later sections are in the order of the Dell
/// ESRP paper's reports). Used for a fieldset without a `<legend>` or heading naming it.
fn fieldset_title(kind: Option<TestKind>, index: usize) -> Option<&'static str> {
    // A Performance or Stress report has the first ten, in SECTION_TITLES' order.
    const PERFORMANCE: usize = 10;
    const BACKUP: [&str; 6] = [
        "Database Backup Statistics",
        "Jetstress System Parameters",
        "Database Configuration",
        "Transactional I/O Performance",
        "Host System Performance",
        "Test Log",
    ];
    const SOFT_RECOVERY: [&str; 7] = [
        "Soft-Recovery Statistics",
        "Database Configuration",
        "Transactional I/O Performance",
        "Background Database Maintenance I/O Performance",
        "Total I/O Performance",
        "Host System Performance",
        "Test Log",
    ];
    match kind? {
        TestKind::Performance | TestKind::Stress => {
            SECTION_TITLES[..PERFORMANCE].get(index).copied()
        }
        TestKind::Backup => BACKUP.get(index).copied(),
        TestKind::SoftRecovery => SOFT_RECOVERY.get(index).copied(),
        TestKind::Checksum => None,
    }
}

/// The test type a report's title names ("Stress Test Result Report", ...).
fn kind_named(text: &str) -> Option<TestKind> {
    let lower = text.to_ascii_lowercase();
    if lower.contains("stress test result report") {
        Some(TestKind::Stress)
    } else if lower.contains("performance test result report") {
        Some(TestKind::Performance)
    } else if lower.contains("backup test result report") {
        Some(TestKind::Backup)
    } else if lower.contains("softrecovery test result report")
        || lower.contains("soft recovery test result report")
    {
        Some(TestKind::SoftRecovery)
    } else {
        None
    }
}

/// Turns an HTML report into the text form the importer reads: a table row per line with cells
/// separated by tabs, headings, legends and other blocks on lines of their own; scripts, styles
/// and comments dropped. The document is parsed by a real HTML parser (html5ever, through
/// `scraper`): entities (`&#160;`), `>` inside attribute values, comments and unclosed cells are
/// read as a browser reads them; elements nested deeper than [`crate::html_input::MAX_DEPTH`]
/// are refused (the parse's work grows with the depth). A `<fieldset>` that names no section (no
/// `<legend>` or heading) gets the title its position has in a Jetstress report
/// ([`fieldset_title`]).
fn html_to_text(html: &str, path: &Path) -> Result<String, ImportError> {
    use scraper::node::Node;
    let lower = html.to_ascii_lowercase();
    if lower.contains("<html") && !lower.contains("</html>") {
        return Err(ImportError::Malformed {
            path: path.to_path_buf(),
            table: "HTML document".into(),
            row: "end of file".into(),
            reason: "the HTML is truncated (no closing </html>); save the complete report".into(),
        });
    }
    let doc = crate::html_input::parse_document(html).map_err(|t| ImportError::Malformed {
        path: path.to_path_buf(),
        table: "HTML document".into(),
        row: format!("line {}", t.line),
        reason: t.to_string(),
    })?;
    let kind = kind_named(&doc.root_element().text().collect::<String>());
    let mut out = String::with_capacity(html.len() / 2);
    let mut text = String::new();
    let flush = |text: &mut String, out: &mut String| {
        out.push_str(&text.split_whitespace().collect::<Vec<_>>().join(" "));
        text.clear();
    };
    let named = |node: ego_tree::NodeRef<'_, Node>| {
        node.children().any(|c| {
            c.value().as_element().is_some_and(|e| {
                matches!(
                    e.name(),
                    "legend" | "h1" | "h2" | "h3" | "h4" | "h5" | "h6" | "caption"
                )
            })
        })
    };
    let mut skipping = 0usize;
    let mut fieldsets = 0usize;
    for edge in doc.tree.root().traverse() {
        match edge {
            ego_tree::iter::Edge::Open(node) => match node.value() {
                Node::Text(t) if skipping == 0 => text.push_str(t),
                Node::Element(e) => match e.name() {
                    "script" | "style" | "template" | "noscript" => skipping += 1,
                    "fieldset" => {
                        flush(&mut text, &mut out);
                        out.push('\n');
                        if !named(node) {
                            // A section this importer does not know still ends the table
                            // before it.
                            out.push_str(fieldset_title(kind, fieldsets).unwrap_or("[section]"));
                            out.push('\n');
                        }
                        fieldsets += 1;
                    }
                    "tr" | "table" | "p" | "div" | "li" | "pre" | "legend" | "caption" | "h1"
                    | "h2" | "h3" | "h4" | "h5" | "h6" => {
                        flush(&mut text, &mut out);
                        out.push('\n');
                    }
                    _ => {}
                },
                _ => {}
            },
            ego_tree::iter::Edge::Close(node) => {
                let Some(e) = node.value().as_element() else {
                    continue;
                };
                match e.name() {
                    "script" | "style" | "template" | "noscript" => {
                        skipping = skipping.saturating_sub(1)
                    }
                    "td" | "th" if skipping == 0 => {
                        flush(&mut text, &mut out);
                        out.push('\t');
                    }
                    "tr" | "br" | "p" | "div" | "h1" | "h2" | "h3" | "h4" | "h5" | "h6"
                    | "table" | "li" | "pre" | "title" | "legend" | "caption" | "fieldset"
                        if skipping == 0 =>
                    {
                        flush(&mut text, &mut out);
                        out.push('\n');
                    }
                    _ => {}
                }
            }
        }
    }
    flush(&mut text, &mut out);
    Ok(out)
}

/// Imports report text (or an HTML report) holding one Jetstress report; `path` names the source
/// in errors. Text holding several reports is refused naming them ([`ImportError::SeveralReports`]).
pub fn import_text(text: &str, path: &Path) -> Result<ImportedReport, ImportError> {
    let mut all = import_all(text, path)?;
    if all.len() == 1 {
        if let Some((r, _)) = all.pop() {
            return Ok(r);
        }
    }
    Err(ImportError::SeveralReports {
        path: path.to_path_buf(),
        reports: all
            .iter()
            .map(|(r, line)| format!("{} (line {line})", kind_title(r.kind)))
            .collect(),
    })
}

/// Imports every Jetstress report in report text (or an HTML report), each on its own: a report
/// starts at its title ("Performance Test Result Report", ...) when tables follow the title.
/// The reports of a text of several are named "FILE (report K of N, line L)", L being the line
/// of the title; line numbers in warnings and errors are the file's.
pub fn import_text_all(text: &str, path: &Path) -> Result<Vec<ImportedReport>, ImportError> {
    Ok(import_all(text, path)?
        .into_iter()
        .map(|(r, _)| r)
        .collect())
}

/// [`import_text_all`], with the line of each report's title (1 for a text of one report).
fn import_all(text: &str, path: &Path) -> Result<Vec<(ImportedReport, usize)>, ImportError> {
    let converted;
    let text = if looks_like_html(text) {
        converted = html_to_text(text, path)?;
        converted.as_str()
    } else {
        text
    };
    let parts = report_parts(text);
    let n = parts.len();
    if n <= 1 {
        return Ok(vec![(import_plain(text, path, 1)?, 1)]);
    }
    let mut out = Vec::with_capacity(n);
    for (k, part) in parts.iter().enumerate() {
        let end = parts.get(k + 1).map_or(text.len(), |p| p.start);
        let mut r = import_plain(&text[part.start..end], path, part.first_line)?;
        r.source = format!(
            "{} (report {} of {n}, line {})",
            path.display(),
            k + 1,
            part.title_line
        );
        out.push((r, part.title_line));
    }
    Ok(out)
}

/// Every figure of a report (as [`import_row`] checks a report's cells): finite, not negative
/// and within [`plausible_max`]. For inputs not read cell by cell (an mbxstress result.json).
pub fn check_figures(r: &ImportedReport, path: &Path) -> Result<(), ImportError> {
    let bad = |table: Table, row: &str, column: usize, v: f64| {
        let (max, what) = plausible_max(table, column);
        implausible(v, max, what).map(|why| ImportError::Malformed {
            path: path.to_path_buf(),
            table: table.title().to_string(),
            row: row.to_string(),
            reason: format!("column {} ({v}) {why}", column + 1),
        })
    };
    let mut found = None;
    for (table, rows) in [
        (Table::Transactional, &r.transactional),
        (Table::Total, &r.total),
    ] {
        for i in rows {
            let io = &i.io;
            let v = [
                io.db_read_avg_latency_ms,
                io.db_write_avg_latency_ms,
                io.db_reads_per_s,
                io.db_writes_per_s,
                io.db_read_avg_bytes,
                io.db_write_avg_bytes,
                io.log_read_avg_latency_ms,
                io.log_write_avg_latency_ms,
                io.log_reads_per_s,
                io.log_writes_per_s,
                io.log_read_avg_bytes,
                io.log_write_avg_bytes,
            ];
            for (c, x) in v.into_iter().enumerate() {
                found = found.or_else(|| bad(table, &i.instance, c + 1, x));
            }
        }
    }
    for (table, rows) in [
        (Table::Bdm, &r.bdm),
        (Table::Replication, &r.log_replication),
    ] {
        for i in rows {
            found = found
                .or_else(|| bad(table, &i.instance, 1, i.reads_per_s))
                .or_else(|| bad(table, &i.instance, 2, i.read_avg_bytes));
        }
    }
    for b in &r.backup {
        found = found
            .or_else(|| bad(Table::Backup, &b.instance, 1, b.database_size_mb))
            .or_else(|| bad(Table::Backup, &b.instance, 3, b.mb_per_s));
    }
    for s in &r.soft_recovery {
        found = found.or_else(|| bad(Table::SoftRecovery, &s.instance, 2, s.elapsed_s));
    }
    for (key, v) in [
        ("achieved_iops", r.achieved_iops_typed),
        ("target_iops", r.target_iops),
    ] {
        if let Some(why) = v.and_then(|v| implausible(v, 1e12, key)) {
            found = found.or(Some(ImportError::Malformed {
                path: path.to_path_buf(),
                table: "result".into(),
                row: key.into(),
                reason: format!("{key} {why}"),
            }));
        }
    }
    found.map_or(Ok(()), Err)
}

/// A test type as a report's title names it.
fn kind_title(kind: Option<TestKind>) -> &'static str {
    match kind {
        Some(TestKind::Performance) => "Performance",
        Some(TestKind::Stress) => "Stress",
        Some(TestKind::Backup) => "Backup",
        Some(TestKind::SoftRecovery) => "Soft Recovery",
        Some(TestKind::Checksum) => "Checksum",
        None => "untitled",
    }
}

/// Where a report starts in a text: the byte offset and number of its first line, and the line
/// of its title.
struct Part {
    start: usize,
    first_line: usize,
    title_line: usize,
}

/// The reports in a text. A report title ("Stress Test Result Report" on a line of its own)
/// starts a report when a table follows it and that table is one the current report has given
/// already, or the title names another test type; otherwise (a PDF's running page header) the
/// report goes on. The text before the first title belongs to the first report. One part (or
/// none) means the whole text is one report.
fn report_parts(text: &str) -> Vec<Part> {
    let mut parts: Vec<Part> = Vec::new();
    let mut kind: Option<TestKind> = None;
    let mut tables: Vec<Table> = Vec::new();
    // The last title no table has followed yet, and the test type it names.
    let mut title: Option<(Part, TestKind)> = None;
    let mut start = 0;
    let mut scratch = Vec::new();
    for (n, line) in text.split_inclusive('\n').enumerate() {
        let plain = clean(line);
        // A title is short: a sentence that names a report is not one.
        let named = kind_named(&plain).filter(|_| plain.len() <= 60);
        if let Some(k) = named {
            let at = Part {
                start,
                first_line: n + 1,
                title_line: n + 1,
            };
            title = Some((at, k));
        } else {
            // The line's sections, as the import splits them (a title and a header row may
            // share a line).
            for (_, piece) in split_sections(line, n + 1, &mut scratch) {
                let Some((t, _)) = Table::detect(&piece) else {
                    continue;
                };
                if let Some((at, k)) = title.take() {
                    if parts.is_empty() || kind != Some(k) || tables.contains(&t) {
                        parts.push(at);
                        kind = Some(k);
                        tables.clear();
                    }
                }
                tables.push(t);
            }
            scratch.clear();
        }
        start += line.len();
    }
    if let Some(first) = parts.first_mut() {
        first.start = 0;
        first.first_line = 1;
    }
    parts
}

/// Every section title of a Jetstress report (tables or not): where two sections run together
/// on one line, the line is split before the second. The first ten are a Performance report's,
/// in its order (`fieldset_title`).
/// Jetstress's own report says "Jetstress System Parameters" where report.html says "System
/// Parameters".
const SECTION_TITLES: [&str; 13] = [
    SECTIONS[0],
    SECTIONS[1],
    "Jetstress System Parameters",
    SECTIONS[3],
    SECTIONS[4],
    SECTIONS[5],
    SECTIONS[6],
    SECTIONS[7],
    SECTIONS[8],
    SECTIONS[9],
    "Database Backup Statistics",
    "Soft-Recovery Statistics",
    "Soft Recovery Statistics",
];

/// The fewest letters of a title cut short that are read as the title ("Background Database
/// Maintenance I/O P" is; "Total" is not: it is also a summary row's label).
const CUT_TITLE_MIN: usize = 12;

/// The share of a title's letters (percent) a title cut short keeps at least: "Database Backup"
/// alone (58% of "Database Backup Statistics") is more likely a sentence cut than the title.
const CUT_TITLE_MIN_PCT: usize = 60;

/// The one section title that the squashed `sq` is a cut-short start of, if at least
/// [`CUT_TITLE_MIN`] letters and [`CUT_TITLE_MIN_PCT`] of the title are left and no other title
/// starts the same way.
fn cut_title(sq: &str) -> Option<&'static str> {
    if sq.len() < CUT_TITLE_MIN {
        return None;
    }
    let mut found = SECTION_TITLES
        .iter()
        .filter(|t| {
            let st = squash(t);
            st.len() > sq.len()
                && st.starts_with(sq)
                && sq.len() * 100 >= st.len() * CUT_TITLE_MIN_PCT
        })
        .map(|t| {
            if *t == "Soft Recovery Statistics" {
                "Soft-Recovery Statistics"
            } else {
                *t
            }
        });
    let first = found.next()?;
    found.all(|t| t == first).then_some(first)
}

/// The section a line titles, among those with no table the importer reads ("Host System
/// Performance", "Test Log", ...): its title, and whether the title was cut short.
fn other_section(line: &str) -> Option<(&'static str, bool)> {
    // A row or a sentence is none (and is not cleaned: this runs on every line).
    if line.len() > 120 {
        return None;
    }
    let l = clean(line);
    if l.len() > 60 {
        return None;
    }
    let sq = squash(l.trim_matches('|'));
    let tables: Vec<&str> = Table::ALL.iter().map(|t| t.title()).collect();
    let others = || {
        SECTION_TITLES
            .iter()
            .copied()
            .filter(|t| !tables.contains(t) && *t != "Soft Recovery Statistics")
    };
    if let Some(t) = others().find(|t| {
        let st = squash(t);
        sq.starts_with(&st) && sq.len() <= st.len() + 6
    }) {
        return Some((t, false));
    }
    cut_title(&sq)
        .filter(|t| !tables.contains(t))
        .map(|t| (t, true))
}

/// Where a section title cut short ends a table row's last cell ("20327.961 Background Database
/// Maintenance I/O P": a row and the next title joined, the title's end lost): the byte offset of
/// the title, if the text before it ends in a number.
fn cut_title_at_end(line: &str) -> Option<usize> {
    let last = line.rfind('\t').map_or(0, |i| i + 1);
    let cell = &line[last..];
    let at = cell.find(char::is_whitespace)?;
    let (figure, rest) = cell.split_at(at);
    let rest = rest.trim_start();
    if cell_value(figure).is_none() || rest.is_empty() {
        return None;
    }
    cut_title(&squash(rest))?;
    Some(line.len() - rest.len())
}

/// The input's lines with their numbers, a line holding two sections split before the second
/// section's title (a table's last row and the next title, or a title and its header row).
/// Markdown tables are left alone. Each split is a warning.
fn split_sections(
    text: &str,
    first_line: usize,
    warnings: &mut Vec<String>,
) -> Vec<(usize, String)> {
    let mut out = Vec::new();
    for (n, raw) in text.lines().enumerate() {
        let line_no = n + first_line;
        if raw.trim_start().starts_with('|') {
            out.push((line_no, raw.to_string()));
            continue;
        }
        let mut rest = raw;
        loop {
            // The first title that starts after a boundary (the line start, or whitespace).
            let found = SECTION_TITLES
                .iter()
                .filter_map(|t| {
                    rest.match_indices(t)
                        .find(|(at, _)| {
                            *at == 0
                                || rest[..*at].ends_with(|c: char| c.is_whitespace() || c == '*')
                        })
                        .map(|(at, _)| (at, *t))
                })
                .min_by_key(|(at, t)| (*at, usize::MAX - t.len()));
            // A title after prose ("... about the Database Configuration:") is prose: a split is
            // for a table's last row (its last figure) or a row's cell that runs into a title.
            let found = found.filter(|(at, _)| {
                let before = rest[..*at].trim_end_matches(['*', ' ', '#']);
                before.trim().is_empty()
                    || before.ends_with(|c: char| c.is_ascii_digit())
                    || before.contains('\t')
            });
            let Some((at, title)) = found else {
                if let Some(at) = cut_title_at_end(rest) {
                    let tail = rest[at..].trim_end();
                    out.push((line_no, rest[..at].trim_end().to_string()));
                    warnings.push(format!(
                        "line {line_no}: a row and the title cut short \"{tail}\" were on one line; split before the title"
                    ));
                    out.push((line_no, tail.to_string()));
                } else {
                    out.push((line_no, rest.to_string()));
                }
                break;
            };
            let before = rest[..at].trim_end_matches(['*', ' ', '#']);
            if !before.trim().is_empty() {
                out.push((line_no, before.to_string()));
                warnings.push(format!(
                    "line {line_no}: two sections run together; split before \"{title}\""
                ));
            }
            // The title, with its " - All" suffix if any, then whatever follows it.
            let after_title = &rest[at + title.len()..];
            let suffix = after_title
                .trim_start()
                .strip_prefix(['-', '\u{2013}'])
                .map(str::trim_start)
                .and_then(|x| x.strip_prefix("All"))
                .map_or(0, |x| after_title.len() - x.len());
            let end = at + title.len() + suffix;
            let tail = &rest[end..];
            if tail
                .trim_matches(|c: char| c.is_whitespace() || c == '*')
                .is_empty()
            {
                out.push((line_no, rest[at..].to_string()));
                break;
            }
            out.push((line_no, rest[at..end].to_string()));
            warnings.push(format!(
                "line {line_no}: \"{title}\" and what follows it were on one line; split after the title"
            ));
            rest = tail.trim_start_matches(['*', ' ', '\t']);
        }
    }
    // Every line of the text is read, in its order; a line split keeps its number (the
    // warnings are put in the file's order by it).
    debug_assert!(out
        .windows(2)
        .all(|w| w[1].0 == w[0].0 || w[1].0 == w[0].0 + 1));
    out
}

/// A number cell: a whole cell that is a number ("1056.711", ".394", "1,234.5"). A single
/// comma and no point is a decimal comma (Jetstress never groups thousands without a point):
/// the flag says so.
fn cell_value(s: &str) -> Option<(f64, bool)> {
    let t = s.trim();
    if t.is_empty() {
        return None;
    }
    let decimal_comma = !t.contains('.') && t.matches(',').count() == 1;
    let v = if decimal_comma {
        t.replace(',', ".")
    } else {
        t.replace(',', "")
    };
    v.parse::<f64>()
        .ok()
        .filter(|x| x.is_finite())
        .map(|x| (x, decimal_comma))
}

/// The largest value a figure can plausibly have, and what it is (for the message): far above
/// any real measurement, low enough that sums over every instance stay finite (1e308 in a cell
/// summed to infinity: `inf` in the text output, `null` in JSON).
fn plausible_max(table: Table, column: usize) -> (f64, &'static str) {
    const RATE: f64 = 1e9; // I/O per second, of one instance
    const BYTES: f64 = 1e9; // the average size of one I/O
    const LATENCY: f64 = 3.6e6; // ms: an hour
    match table {
        Table::Transactional | Table::Total => {
            let what = IO12_COLUMNS
                .get(column.wrapping_sub(1))
                .copied()
                .unwrap_or("figure");
            match column {
                1 | 2 | 7 | 8 => (LATENCY, what),
                3 | 4 | 9 | 10 => (RATE, what),
                _ => (BYTES, what),
            }
        }
        Table::Bdm | Table::Replication => match column {
            1 => (RATE, "reads/sec"),
            _ => (BYTES, "read average bytes"),
        },
        Table::Backup => match column {
            1 => (1e12, "database size (MB)"),
            _ => (1e7, "MB transferred/sec"),
        },
        Table::SoftRecovery => match column {
            1 => (1e12, "log files replayed"),
            _ => (1e9, "elapsed seconds"),
        },
    }
}

/// Why `v` is no measurement of `what` (at most `max`), if it is not one.
fn implausible(v: f64, max: f64, what: &str) -> Option<String> {
    if !v.is_finite() {
        Some(format!("is not a finite number: no {what} is"))
    } else if v < 0.0 {
        Some(format!("is negative: no {what} is"))
    } else if v > max {
        Some(format!("is beyond any {what} (at most {max:e})"))
    } else {
        None
    }
}

/// The label of a summary row, read through stray spaces ("A vg", "S um").
#[derive(Clone, Copy, PartialEq)]
enum Label {
    Avg,
    Sum,
    Other,
}

fn label(name: &str) -> Label {
    match squash(name).as_str() {
        "avg" | "average" => Label::Avg,
        "sum" | "total" => Label::Sum,
        _ => Label::Other,
    }
}

/// Whether a row's first cell names an instance (what every Jetstress report has:
/// "Instance1604.1"), read through stray spaces.
fn instance_like(name: &str) -> bool {
    let sq = squash(name);
    sq.starts_with("instance") && sq.len() > "instance".len()
}

/// Imports one report's text, whose first line is line `first_line` of the file: its lines read
/// one by one into tables of rows ([`PlainReader::line`]), then the rows into the report
/// ([`PlainReader::finish`]).
fn import_plain(text: &str, path: &Path, first_line: usize) -> Result<ImportedReport, ImportError> {
    let mut reader = PlainReader {
        path,
        r: ImportedReport {
            source: path.display().to_string(),
            ..Default::default()
        },
        warnings: Vec::new(),
        seen: Vec::new(),
        current: None,
        header_seen: false,
        pending: None,
        rows: Vec::new(),
        table_rows: 0,
        interrupted: None,
        lost: Vec::new(),
        last_text: None,
    };
    let lines = split_sections(text, first_line, &mut reader.warnings);
    for (line_no, raw) in &lines {
        reader.line(*line_no, raw)?;
    }
    reader.finish()
}

/// A report's table or row refused, in the file `path`.
fn malformed(path: &Path, table: &str, row: String, reason: String) -> ImportError {
    ImportError::Malformed {
        path: path.to_path_buf(),
        table: table.to_string(),
        row,
        reason,
    }
}

/// One report's text being read, line by line: the tables met and the rows gathered so far.
struct PlainReader<'a> {
    path: &'a Path,
    /// The report: its summary fields as they are met, its tables' rows at the end.
    r: ImportedReport,
    warnings: Vec<String>,
    /// The tables met so far and the line of each title: a table given twice is a second report
    /// whose title was lost, not more rows of the first.
    seen: Vec<(Table, usize)>,
    current: Option<Table>,
    header_seen: bool,
    /// A row whose cells landed on several lines: its first line number and its cells so far.
    pending: Option<(usize, Vec<String>)>,
    /// The rows of every table, with the line of each.
    rows: Vec<(Table, usize, Vec<String>)>,
    /// The data rows of the current table so far.
    table_rows: usize,
    /// A line inside the current table that is none of its rows (a PDF's page header or footer,
    /// or the end of the table): its number and text. The table goes on if its rows do.
    interrupted: Option<(usize, String)>,
    /// Tables skipped whole because their title is lost or unreadable: the line of each and why.
    lost: Vec<String>,
    /// The last line of text outside any table (what a lost table's damaged title may be).
    last_text: Option<(usize, String)>,
}

/// What [`import_row`] did with a row.
#[derive(Clone, Copy, PartialEq, Debug)]
enum Kept {
    /// Kept as a row of one of the report's tables.
    Row,
    /// Read as a typed summary (an Avg or Sum row), or passed over as one.
    Summary,
    /// Neither: ignored with a warning.
    Ignored,
}

impl PlainReader<'_> {
    fn err(&self, table: &str, row: String, reason: String) -> ImportError {
        malformed(self.path, table, row, reason)
    }

    /// An incomplete pending row: an error in a needed table, else a warning.
    fn unfinished(
        &mut self,
        table: Table,
        (line_no, cells): (usize, Vec<String>),
    ) -> Result<(), ImportError> {
        let msg = format!(
            "expected {} cells, found {} (a row split over lines that does not add up): give the row its cells",
            table.width(),
            cells.len()
        );
        let name = cells.first().cloned().unwrap_or_default();
        if table.needed() {
            return Err(self.err(table.title(), format!("line {line_no} ({name})"), msg));
        }
        self.warnings.push(format!(
            "line {line_no}: {} row {name}: {msg}; skipped (no summary needs it)",
            table.title()
        ));
        Ok(())
    }

    /// The pending row, if any, is unfinished where the current table ends.
    fn end_pending(&mut self) -> Result<(), ImportError> {
        if let (Some(p), Some(table)) = (self.pending.take(), self.current) {
            self.unfinished(table, p)?;
        }
        Ok(())
    }

    /// One line of the text.
    fn line(&mut self, line_no: usize, raw: &str) -> Result<(), ImportError> {
        let plain = clean(raw);
        self.summary_fields(line_no, &plain)?;
        if self.table_title(line_no, raw, &plain)? || self.other_section(line_no, raw, &plain)? {
            return Ok(());
        }
        let Some(table) = self.current else {
            self.outside_tables(line_no, raw, plain);
            return Ok(());
        };
        if is_separator(raw) {
            return Ok(());
        }
        match self.row_of(table, line_no, raw, &plain)? {
            Some(row) => self.table_row(table, line_no, row, plain),
            None => Ok(()),
        }
    }

    /// The report's fields that are no table: its kind, IOPS, machine and result.
    fn summary_fields(&mut self, line_no: usize, plain: &str) -> Result<(), ImportError> {
        if let Some(kind) = kind_named(plain) {
            self.r.kind = Some(kind);
        }
        for (key, typed) in [
            ("Achieved Transactional I/O per Second", true),
            ("Target Transactional I/O per Second", false),
        ] {
            if let Some(rest) = plain.strip_prefix(key) {
                let at = format!("line {line_no}");
                let table = "Database Sizing and Throughput";
                let v = number(rest).ok_or_else(|| {
                    self.err(
                        table,
                        at.clone(),
                        format!("'{}' is not a number", rest.trim()),
                    )
                })?;
                // The sum over every instance: at most the instances' bound times a thousand.
                if let Some(why) = implausible(v, 1e12, key) {
                    return Err(self.err(
                        table,
                        at,
                        format!("{key} ('{}') {why}: fix the value", rest.trim()),
                    ));
                }
                if typed {
                    self.r.achieved_iops_typed = Some(v);
                } else {
                    self.r.target_iops = Some(v);
                }
            }
        }
        if let Some(rest) = plain.strip_prefix("Machine Name") {
            self.r.machine = Some(rest.trim().to_string());
        }
        if let Some(rest) = plain.strip_prefix("Overall Test Result") {
            self.r.overall_result = Some(rest.trim().to_string());
        }
        Ok(())
    }

    /// A table's title: the table is the current one from here (true). A damaged or cut title of
    /// a table given already is text (false); an intact one is a second report (an error).
    fn table_title(&mut self, line_no: usize, raw: &str, plain: &str) -> Result<bool, ImportError> {
        let Some((t, damaged)) = Table::detect(raw) else {
            return Ok(false);
        };
        if let Some(&(_, first)) = self.seen.iter().find(|(s, _)| *s == t) {
            if damaged {
                self.warnings.push(format!(
                    "line {line_no}: \"{plain}\" reads like the title of {} (given at line {first}); read as text",
                    t.title()
                ));
                return Ok(false);
            }
            return Err(self.err(
                t.title(),
                format!("line {line_no}"),
                format!("the table is given again (first at line {first}): the text seems to hold several reports whose titles (\"Performance Test Result Report\", ...) are lost; give each report its title or a file of its own"),
            ));
        }
        if let Some(prev) = self.current {
            // The rows counted for the table that ends are the rows gathered for it.
            debug_assert_eq!(
                self.table_rows,
                self.rows.iter().filter(|(t, _, _)| *t == prev).count(),
                "rows of {}",
                prev.title()
            );
        }
        self.seen.push((t, line_no));
        self.end_pending()?;
        if damaged {
            self.warnings.push(format!(
                "line {line_no}: section title \"{}\" read as \"{}\"",
                plain,
                t.title()
            ));
        }
        self.current = Some(t);
        self.header_seen = false;
        self.table_rows = 0;
        self.interrupted = None;
        Ok(true)
    }

    /// A section with no table to read (Host System Performance, Test Log, ...): it ends the
    /// table before it (true).
    fn other_section(
        &mut self,
        line_no: usize,
        raw: &str,
        plain: &str,
    ) -> Result<bool, ImportError> {
        let Some((title, cut)) = other_section(raw) else {
            return Ok(false);
        };
        self.end_pending()?;
        if cut {
            self.warnings.push(format!(
                "line {line_no}: section title \"{plain}\" read as \"{title}\" (cut short)"
            ));
        }
        self.current = None;
        self.interrupted = None;
        Ok(true)
    }

    /// A line where no table is open: text (what a lost title may be), or a table's header whose
    /// title is lost or too damaged to read (a table after a section with none, or the first
    /// one).
    fn outside_tables(&mut self, line_no: usize, raw: &str, plain: String) {
        let header = cells(raw).filter(|row| {
            row.len() > 1
                && row
                    .first()
                    .is_some_and(|c| squash(c).ends_with("==>instances"))
        });
        if let Some(row) = header {
            let after = self.last_text.take();
            self.lost_table(line_no, after, &format!(" ({} columns)", row.len()));
        } else if !plain.is_empty() && cells(raw).is_none() {
            self.last_text = Some((line_no, plain));
        }
    }

    /// A table's header at `line_no` with no readable title before it (`after`: the text
    /// before it, which names no section): its rows are skipped, and the report is refused if it
    /// was a table the report needs.
    fn lost_table(&mut self, line_no: usize, after: Option<(usize, String)>, columns: &str) {
        let after = after
            .map(|(at, text)| {
                format!(" (line {at}: \"{text}\" names no section this importer knows)")
            })
            .unwrap_or_default();
        let msg = format!(
            "line {line_no}: a table's header with no readable section title before it{after}; its rows are skipped up to the next title{columns}"
        );
        self.warnings.push(msg.clone());
        self.lost.push(msg);
    }

    /// The cells of a line inside `table`: its cells, the next cells of a row split over lines,
    /// or a row's name alone on its line; none for a line that is no row (the table's end, or a
    /// page header or footer inside it if its rows go on).
    fn row_of(
        &mut self,
        table: Table,
        line_no: usize,
        raw: &str,
        plain: &str,
    ) -> Result<Option<Vec<String>>, ImportError> {
        if let Some(row) = cells(raw) {
            return Ok(Some(row));
        }
        let tokens: Vec<String> = plain.split_whitespace().map(str::to_string).collect();
        let numeric = !tokens.is_empty() && tokens.iter().all(|c| cell_value(c).is_some());
        if self.pending.is_some() && numeric {
            // The next cells of a row split over lines.
            return Ok(Some(tokens));
        }
        if self.header_seen
            && tokens.len() == 1
            && (instance_like(&tokens[0]) || label(&tokens[0]) != Label::Other)
        {
            // A row's name alone on its line: its cells follow.
            return Ok(Some(tokens));
        }
        // Blank lines and text before the header are allowed.
        if self.header_seen && !plain.is_empty() {
            if let Some(p) = self.pending.take() {
                self.unfinished(table, p)?;
            }
            if self.interrupted.is_none() {
                self.interrupted = Some((line_no, plain.to_string()));
            }
        }
        Ok(None)
    }

    /// A line of cells inside `table`: one of its rows (or part of one), its header, another
    /// table's header (that table's title lost), or a line that interrupts it.
    fn table_row(
        &mut self,
        table: Table,
        line_no: usize,
        row: Vec<String>,
        plain: String,
    ) -> Result<(), ImportError> {
        let first_cell = row.first().map(String::as_str).unwrap_or("");
        let a_row_of_it = instance_like(first_cell) || label(first_cell) != Label::Other;
        let figures_numeric = row
            .get(1..)
            .unwrap_or_default()
            .iter()
            .all(|c| c.trim().is_empty() || cell_value(c).is_some() || hms(c).is_some());
        // Another table's header row after this table's rows: that table's title is lost (or
        // too damaged to read). Its rows are not this table's.
        if self.header_seen
            && self.table_rows > 0
            && self.pending.is_none()
            && squash(first_cell).ends_with("instances")
        {
            let after = self.interrupted.take();
            self.lost_table(line_no, after, "");
            self.current = None;
            return Ok(());
        }
        // A row: its figures are numbers, and it has some or its name is a row's (its cells may
        // follow on the next lines). A damaged name is still a row.
        // An instance's row with a damaged figure is its row too (read, or refused, below).
        let data_row = a_row_of_it || (figures_numeric && row.len() > 1);
        if self.header_seen && self.pending.is_none() && !data_row {
            // A line with cells that is no row of this table (a page header set in cells).
            if self.interrupted.is_none() {
                self.interrupted = Some((line_no, plain));
            }
            return Ok(());
        }
        if let Some((at, text)) = self.interrupted.take() {
            if !data_row {
                // The table ended there.
                self.current = None;
                return Ok(());
            }
            self.warnings.push(format!(
                "line {at}: \"{text}\" inside {} skipped: the table's rows go on after it at line {line_no} (a page header or footer)",
                table.title()
            ));
        }
        let Some(row) = self.join_pending(table, row)? else {
            return Ok(());
        };
        if !self.header_seen {
            self.header_seen = true;
            if self.header_row(table, line_no, &row)? {
                return Ok(());
            }
        }
        self.keep_row(table, line_no, row);
        Ok(())
    }

    /// `row` joined to the pending row, when there is one and `row` is its next cells (none: the
    /// row goes on, is complete and kept, or is refused); else `row` itself.
    fn join_pending(
        &mut self,
        table: Table,
        row: Vec<String>,
    ) -> Result<Option<Vec<String>>, ImportError> {
        let Some((first, mut cells_so_far)) = self.pending.take() else {
            return Ok(Some(row));
        };
        let numeric_row = row
            .iter()
            .all(|c| c.trim().is_empty() || cell_value(c).is_some());
        if !numeric_row {
            self.unfinished(table, (first, cells_so_far))?;
            return Ok(Some(row));
        }
        cells_so_far.extend(row);
        match cells_so_far.len().cmp(&table.width()) {
            std::cmp::Ordering::Less => self.pending = Some((first, cells_so_far)),
            std::cmp::Ordering::Greater => self.unfinished(table, (first, cells_so_far))?,
            std::cmp::Ordering::Equal => {
                self.warnings.push(format!(
                    "line {first}: the cells of row {} were on several lines; joined",
                    cells_so_far[0]
                ));
                self.rows.push((table, first, cells_so_far));
                self.table_rows += 1;
            }
        }
        Ok(None)
    }

    /// The first row of `table`: its header (true), or a data row when it has numbers (the
    /// table has no header row).
    fn header_row(
        &mut self,
        table: Table,
        line_no: usize,
        row: &[String],
    ) -> Result<bool, ImportError> {
        let figures = row.get(1..).unwrap_or_default();
        if figures.iter().any(|c| cell_value(c).is_some()) {
            self.warnings.push(format!(
                "line {line_no}: {} has no header row; the columns are taken in Jetstress's order",
                table.title()
            ));
            return Ok(false);
        }
        if table.width() != 13 {
            return Ok(true);
        }
        // A header damaged by a PDF copy is read when its cells align with Jetstress's columns
        // in one way only (crate::header).
        match crate::header::align(row) {
            Ok(aligned) => {
                let (repaired, lost) = aligned.repairs();
                for r in repaired {
                    self.warnings
                        .push(format!("line {line_no}: {} {r}", table.title()));
                }
                if !lost.is_empty() {
                    self.warnings.push(format!(
                        "line {line_no}: {} header has {} of its 12 column names; the columns are taken in Jetstress's order (lost: \"{}\")",
                        table.title(),
                        12 - lost.len(),
                        lost.join("\", \"")
                    ));
                }
            }
            Err(refused) => {
                let msg = refused.to_string();
                if table.needed() {
                    return Err(self.err(table.title(), format!("line {line_no}"), msg));
                }
                self.warnings.push(format!(
                    "line {line_no}: {}: {msg}; table skipped (no summary needs it)",
                    table.title()
                ));
                self.current = None;
            }
        }
        Ok(true)
    }

    /// A data row of `table`: kept, split where rows ran together on one line, or held as
    /// pending when its cells follow on the next lines.
    fn keep_row(&mut self, table: Table, line_no: usize, row: Vec<String>) {
        if row.len() > table.width() {
            if let Some(parts) = split_joined(&row, table.width()) {
                self.warnings.push(format!(
                    "line {line_no}: {} rows of {} were on one line; split",
                    parts.len(),
                    table.title()
                ));
                self.table_rows += parts.len();
                self.rows
                    .extend(parts.into_iter().map(|p| (table, line_no, p)));
                return;
            }
        }
        let name_only = row.len() < table.width()
            && row.first().is_some_and(|c| cell_value(c).is_none())
            && row
                .get(1..)
                .unwrap_or_default()
                .iter()
                .all(|c| cell_value(c).is_some());
        if name_only && (table.width() == 13 || row.len() == 1) {
            self.pending = Some((line_no, row));
            return;
        }
        self.rows.push((table, line_no, row));
        self.table_rows += 1;
    }

    /// The rows into the report, the warnings in the file's order, and the report refused when
    /// a section it needs is lost or it has no table at all.
    fn finish(mut self) -> Result<ImportedReport, ImportError> {
        self.end_pending()?;
        let path = self.path;
        let mut r = self.r;
        let mut warnings = self.warnings;
        let mut kept = 0usize;
        for (table, line_no, row) in self.rows {
            match import_row(&mut r, table, line_no, row, path, &mut warnings) {
                Ok(k) => kept += usize::from(k == Kept::Row),
                Err(ImportError::Malformed { row, reason, .. }) if !table.needed() => {
                    warnings.push(format!(
                        "{row}: {}: {reason}; skipped (no summary needs it)",
                        table.title()
                    ));
                }
                Err(e) => return Err(e),
            }
        }
        // Every row kept is in exactly one of the report's tables.
        assert_eq!(
            kept,
            r.transactional.len()
                + r.total.len()
                + r.bdm.len()
                + r.log_replication.len()
                + r.backup.len()
                + r.soft_recovery.len(),
            "{}: rows kept against rows in the tables",
            path.display()
        );
        // In the file's order (a row's damage is met when the rows are read, after the tables).
        warnings.sort_by_key(|w| {
            w.strip_prefix("line ")
                .and_then(|x| x.split(|c: char| !c.is_ascii_digit()).next())
                .and_then(|n| n.parse::<usize>().ok())
                .unwrap_or(usize::MAX)
        });
        r.warnings = warnings;
        // Each table skipped for its lost title is one of the warnings the report carries.
        debug_assert!(self.lost.iter().all(|m| r.warnings.contains(m)));
        if let Some(e) = lost_needed_section(&r, &self.lost, path) {
            return Err(e);
        }
        if r.transactional.is_empty()
            && r.backup.is_empty()
            && r.soft_recovery.is_empty()
            && r.total.is_empty()
        {
            return Err(ImportError::Empty {
                path: path.to_path_buf(),
            });
        }
        check_summaries(&mut r);
        r.flags = report_flags(r.overall_result.as_deref());
        Ok(r)
    }
}

/// The error when a section the summaries of `r` need is missing and a table was skipped for
/// its lost title (`lost`: why each was): a damaged title hid it, and the report is refused
/// naming it, never one that silently lacks it.
fn lost_needed_section(r: &ImportedReport, lost: &[String], path: &Path) -> Option<ImportError> {
    let needed = match r.kind {
        Some(TestKind::Performance | TestKind::Stress) => {
            Some((Table::Transactional, r.transactional.is_empty()))
        }
        Some(TestKind::Backup) => Some((Table::Backup, r.backup.is_empty())),
        Some(TestKind::SoftRecovery) => Some((Table::SoftRecovery, r.soft_recovery.is_empty())),
        _ => None,
    };
    let (Some((table, true)), Some(why)) = (needed, lost.first()) else {
        return None;
    };
    Some(malformed(
        path,
        table.title(),
        "-".into(),
        format!(
            "the section is not found in this {} report, and {why}: give the section its title \"{}\"",
            kind_title(r.kind),
            table.title()
        ),
    ))
}

/// One data row of `table` into `r`: what was done with it, or why it is refused.
fn import_row(
    r: &mut ImportedReport,
    table: Table,
    line_no: usize,
    row: Vec<String>,
    path: &Path,
    warnings: &mut Vec<String>,
) -> Result<Kept, ImportError> {
    let name = instance_name(&row, line_no, warnings);
    let mut cells = RowCells {
        path,
        table,
        line_no,
        row: &row,
        rowname: format!("line {line_no} ({name})"),
        commas: Vec::new(),
        r,
        warnings,
    };
    let kept = match table {
        Table::Transactional | Table::Total => cells.io12(name)?,
        Table::Bdm | Table::Replication => cells.rate(name)?,
        Table::Backup => cells.backup(name)?,
        Table::SoftRecovery => cells.soft_recovery(name)?,
    };
    let commas = std::mem::take(&mut cells.commas);
    cells.warnings.extend(commas);
    Ok(kept)
}

/// A row's name: an instance name with stray spaces is read without them.
fn instance_name(row: &[String], line_no: usize, warnings: &mut Vec<String>) -> String {
    let written = row.first().cloned().unwrap_or_default();
    if instance_like(&written) && written.contains(char::is_whitespace) {
        let joined: String = written.split_whitespace().collect();
        warnings.push(format!(
            "line {line_no}: instance name \"{written}\" read as \"{joined}\""
        ));
        joined
    } else {
        written
    }
}

/// The cells of one data row, read as figures of its table into the report `r`.
struct RowCells<'a> {
    path: &'a Path,
    table: Table,
    line_no: usize,
    row: &'a [String],
    /// The row as messages name it: its line and name.
    rowname: String,
    /// The warnings of cells read with a decimal comma (the report's once the row is read).
    commas: Vec<String>,
    r: &'a mut ImportedReport,
    warnings: &'a mut Vec<String>,
}

/// Why a row is ignored when it is neither a database nor a summary row.
fn neither_row(line_no: usize, name: &str) -> String {
    format!(
        "line {line_no}: row \"{name}\" is neither a database nor a readable Avg or Sum row; ignored (the summaries are computed from the databases)"
    )
}

/// Which summary row a row's name is (Avg or Sum), if it is one and no instance's.
fn summary_label(name: &str) -> Option<Label> {
    let lbl = label(name);
    (lbl != Label::Other && !instance_like(name)).then_some(lbl)
}

impl RowCells<'_> {
    fn err(&self, reason: String) -> ImportError {
        malformed(self.path, self.table.title(), self.rowname.clone(), reason)
    }

    /// Cell `i` as a figure of its column: a number within what the column can hold.
    fn num(&mut self, i: usize) -> Result<f64, ImportError> {
        let cell = self.row.get(i).map(String::as_str).unwrap_or("");
        let (v, comma) = cell_value(cell).ok_or_else(|| {
            self.err(format!(
                "column {} ('{cell}') is not a number: fix the cell",
                i + 1
            ))
        })?;
        let (max, what) = plausible_max(self.table, i);
        if let Some(why) = implausible(v, max, what) {
            return Err(self.err(format!("column {} ('{cell}') {why}: fix the cell", i + 1)));
        }
        if comma {
            self.commas.push(format!(
                "line {}: \"{cell}\" (column {}) read with a decimal comma as {v}",
                self.line_no,
                i + 1
            ));
        }
        Ok(v)
    }

    /// A typed Avg or Sum row's figure: its last cell, if readable (the summaries are computed
    /// from the databases otherwise), and then a figure like any other.
    fn typed_last(&mut self) -> Result<Option<f64>, ImportError> {
        let last = self.row.iter().rposition(|c| !c.is_empty()).unwrap_or(0);
        match self.row.get(last).and_then(|c| cell_value(c)) {
            Some(_) => self.num(last).map(Some),
            None => Ok(None),
        }
    }

    /// A row of a 12-column table (Transactional or Total I/O Performance).
    fn io12(&mut self, name: String) -> Result<Kept, ImportError> {
        if self.row.len() != 13 {
            return Err(self.err(format!("expected 13 cells, found {}", self.row.len())));
        }
        let v: Vec<f64> = (1..13).map(|i| self.num(i)).collect::<Result<_, _>>()?;
        if !instance_like(&name) {
            self.warnings.push(format!(
                "line {}: instance name \"{name}\" looks damaged; kept as written",
                self.line_no
            ));
        }
        let io = Io12 {
            db_read_avg_latency_ms: v[0],
            db_write_avg_latency_ms: v[1],
            db_reads_per_s: v[2],
            db_writes_per_s: v[3],
            db_read_avg_bytes: v[4],
            db_write_avg_bytes: v[5],
            log_read_avg_latency_ms: v[6],
            log_write_avg_latency_ms: v[7],
            log_reads_per_s: v[8],
            log_writes_per_s: v[9],
            log_read_avg_bytes: v[10],
            log_write_avg_bytes: v[11],
        };
        let dest = if self.table == Table::Transactional {
            &mut self.r.transactional
        } else {
            &mut self.r.total
        };
        dest.push(InstanceIo { instance: name, io });
        Ok(Kept::Row)
    }

    /// A row of a rate table (Background Database Maintenance or Log Replication).
    fn rate(&mut self, name: String) -> Result<Kept, ImportError> {
        if self.row.len() > 3 {
            return Err(self.err(format!(
                "expected 3 cells, found {} (rows run together?)",
                self.row.len()
            )));
        }
        let rr = RateRow {
            instance: name,
            reads_per_s: self.num(1)?,
            read_avg_bytes: self.num(2)?,
        };
        if self.table == Table::Bdm {
            self.r.bdm.push(rr)
        } else {
            self.r.log_replication.push(rr)
        }
        Ok(Kept::Row)
    }

    /// A row of Database Backup Statistics: a database's, or the typed Avg or Sum.
    fn backup(&mut self, name: String) -> Result<Kept, ImportError> {
        let elapsed = self.row.get(2).cloned().unwrap_or_default();
        match summary_label(&name) {
            Some(Label::Avg) => self.r.backup_avg_typed = self.typed_last()?,
            Some(_) => self.r.backup_sum_typed = self.typed_last()?,
            None if !instance_like(&name) && elapsed.trim().is_empty() => {
                // A summary row whose label is unreadable: not a database, and which summary it
                // is cannot be told. The summaries come from the databases.
                self.warnings.push(neither_row(self.line_no, &name));
                return Ok(Kept::Ignored);
            }
            None => {
                let elapsed_s = hms(&elapsed)
                    .ok_or_else(|| self.err(format!("elapsed time '{elapsed}' is not hh:mm:ss")))?;
                if let Some(why) = implausible(elapsed_s, 1e9, "elapsed backup time") {
                    return Err(self.err(format!("column 3 ('{elapsed}') {why}: fix the cell")));
                }
                let row = BackupRow {
                    instance: name,
                    database_size_mb: self.num(1)?,
                    elapsed_s,
                    mb_per_s: self.num(3)?,
                };
                self.r.backup.push(row);
                return Ok(Kept::Row);
            }
        }
        Ok(Kept::Summary)
    }

    /// A row of Soft-Recovery Statistics: a database's, or the typed Avg (a Sum is passed over).
    fn soft_recovery(&mut self, name: String) -> Result<Kept, ImportError> {
        match summary_label(&name) {
            Some(Label::Avg) => {
                let (logs, secs) = (self.num(1)?, self.num(2)?);
                self.r.soft_recovery_avg_typed = Some((logs, secs));
                self.r.seconds_per_log_typed = Some(SoftRecoveryRow::seconds_per_log(logs, secs));
                Ok(Kept::Summary)
            }
            Some(_) => Ok(Kept::Summary),
            None if !instance_like(&name) => {
                self.warnings.push(neither_row(self.line_no, &name));
                Ok(Kept::Ignored)
            }
            None => {
                let logs = self.num(1)?;
                // A count: whole, not negative, and within u64 (so the cast is exact).
                if !(logs >= 0.0 && logs.fract() == 0.0 && logs < 18_446_744_073_709_551_616.0) {
                    return Err(
                        self.err(format!("column 2 ('{logs}') is not a number of log files"))
                    );
                }
                let row = SoftRecoveryRow {
                    instance: name,
                    log_files_replayed: logs as u64,
                    elapsed_s: self.num(2)?,
                };
                self.r.soft_recovery.push(row);
                Ok(Kept::Row)
            }
        }
    }
}

/// Rows run together on one line ("...20225.485 Instance5004.2 16.974 ..."): the rows, if the
/// cells split into rows of `width` cells that each start with an instance's name.
fn split_joined(row: &[String], width: usize) -> Option<Vec<Vec<String>>> {
    // A figure and the next row's name in one cell (joined by a space, not a tab).
    let mut cells = Vec::with_capacity(row.len() + 4);
    for c in row {
        match c.split_once(char::is_whitespace) {
            Some((a, b)) if cell_value(a).is_some() && instance_like(b.trim()) => {
                cells.push(a.to_string());
                cells.push(b.trim().to_string());
            }
            _ => cells.push(c.clone()),
        }
    }
    if width == 0 || cells.len() % width != 0 {
        return None;
    }
    let parts: Vec<Vec<String>> = cells.chunks(width).map(<[String]>::to_vec).collect();
    // Every cell is in one row of the table's width.
    debug_assert!(parts.iter().all(|p| p.len() == width) && parts.len() * width == cells.len());
    parts
        .iter()
        .all(|p| p.first().is_some_and(|n| instance_like(n)))
        .then_some(parts)
}

/// Records typed summaries that disagree with per-instance data by more than rounding.
fn check_summaries(r: &mut ImportedReport) {
    // Tolerance: each of n values printed with 3 (or 2) decimals may be off by half a unit.
    if let Some(typed) = r.achieved_iops_typed {
        if !r.transactional.is_empty() {
            let sum: f64 = r
                .transactional
                .iter()
                .map(|i| i.io.db_reads_per_s + i.io.db_writes_per_s)
                .sum();
            let tol = 2.0 * r.transactional.len() as f64 * 0.0005 + 0.0005;
            if (sum - typed).abs() > tol {
                r.discrepancies.push(format!("achieved IOPS typed as {typed} but the instances' reads/s + writes/s sum to {sum:.3}"));
            }
        }
    }
    let n = r.backup.len() as f64;
    if let Some((avg, sum)) = BackupRow::avg_and_sum(&r.backup) {
        let tol = n * 0.005 + 0.005;
        if let Some(typed) = r.backup_sum_typed {
            if (sum - typed).abs() > tol {
                r.discrepancies.push(format!(
                    "backup Sum typed as {typed} MB/s but the databases sum to {sum:.2}"
                ));
            }
        }
        if let Some(typed) = r.backup_avg_typed {
            if (avg - typed).abs() > 0.01 {
                r.discrepancies.push(format!(
                    "backup Avg typed as {typed} MB/s but the databases average {avg:.2}"
                ));
            }
        }
    }
    if let (Some((logs, secs)), Some((avg_logs, avg_secs))) = (
        r.soft_recovery_avg_typed,
        SoftRecoveryRow::averages(&r.soft_recovery),
    ) {
        if (avg_logs - logs).abs() > 0.5 || (avg_secs - secs).abs() > 0.001 * secs.max(1.0) {
            r.discrepancies.push(format!("soft recovery Avg typed as {logs} logs / {secs} s but the databases average {avg_logs:.2} / {avg_secs:.3}"));
        }
    }
    // An mbxstress result states seconds per log only (a report's Avg row is checked above).
    if let (None, Some(typed), Some((logs, secs))) = (
        r.soft_recovery_avg_typed,
        r.seconds_per_log_typed,
        SoftRecoveryRow::averages(&r.soft_recovery),
    ) {
        let rows = SoftRecoveryRow::seconds_per_log(logs, secs);
        if (typed - rows).abs() > 0.001 * rows.max(1e-9) {
            r.discrepancies.push(format!(
                "seconds per log stated as {typed} but the databases give {rows:.4}"
            ));
        }
    }
}

/// Reads an mbxstress `result.json` into the same model as an imported report, through the
/// typed result model (as `report` reads it): the instances' transactional and total I/O, BDM and
/// log replication rows, and the backup and soft-recovery rows and summaries of those tests, which
/// are the very row types the Jetstress importer produces.
pub fn from_result_json(text: &str, path: &Path) -> Result<ImportedReport, ImportError> {
    let bad = |reason: String| ImportError::Malformed {
        path: path.to_path_buf(),
        table: "result.json".into(),
        row: "-".into(),
        reason,
    };
    // Leniently first (a typed summary, unknown keys ignored): to recognize a foreign file by
    // its schema, and for the flags, which also read keys of other versions' results (see
    // `flags::result_flags`).
    let summary: crate::flags::ResultSummary =
        serde_json::from_str(text).map_err(|e| bad(format!("not valid JSON: {e}")))?;
    if summary.kind.get().map(String::as_str) == Some(mbx_result::LOADGEN_KIND) {
        return Err(ImportError::Loadgen {
            path: path.to_path_buf(),
        });
    }
    if summary.schema.get().map(String::as_str) != Some(SCHEMA) {
        return Err(bad(format!("not an mbxstress result (schema {SCHEMA})")));
    }
    // Then typed, from the text, so that an error names its line and column.
    let result: RunResult = serde_json::from_str(text)
        .map_err(|e| bad(format!("not a valid mbxstress result: {e}")))?;
    Ok(imported_from_result(result, path, result_flags(&summary)))
}

/// An mbxstress result as an imported report: the same rows, whichever tool measured them.
pub fn imported_from_result(r: RunResult, path: &Path, flags: Vec<Flag>) -> ImportedReport {
    let rows = |f: fn(&InstanceResult) -> Io12| -> Vec<InstanceIo> {
        r.instances
            .iter()
            .map(|i| InstanceIo {
                instance: i.name.clone(),
                io: f(i),
            })
            .collect()
    };
    let rates = |f: fn(&InstanceResult) -> RateBytes| -> Vec<RateRow> {
        r.instances
            .iter()
            .map(|i| RateRow {
                instance: i.name.clone(),
                reads_per_s: f(i).reads_per_s,
                read_avg_bytes: f(i).read_avg_bytes,
            })
            .collect()
    };
    let mut imported = ImportedReport {
        source: path.display().to_string(),
        kind: Some(r.test.test_type),
        machine: Some(r.test.machine.clone()),
        // Jetstress's words, and ours for a verdict that judged nothing.
        overall_result: Some(
            match r.verdict.state() {
                CheckState::Pass => "Pass",
                CheckState::Fail => "Fail",
                CheckState::NotJudged => "Not judged",
            }
            .into(),
        ),
        achieved_iops_typed: Some(r.achieved_iops),
        target_iops: Some(r.target_iops),
        transactional: rows(|i| i.transactional),
        total: rows(|i| i.total),
        bdm: rates(|i| i.bdm),
        log_replication: rates(|i| i.log_replication),
        backup: r.sections.backup.clone(),
        backup_avg_typed: r.sections.backup_avg_mb_per_s,
        backup_sum_typed: r.sections.backup_sum_mb_per_s,
        soft_recovery: r.sections.soft_recovery.clone(),
        soft_recovery_avg_typed: None,
        seconds_per_log_typed: r.sections.seconds_per_log,
        discrepancies: Vec::new(),
        warnings: Vec::new(),
        flags,
    };
    // A result's typed summaries are checked against its rows exactly as a report's are.
    check_summaries(&mut imported);
    imported
}
