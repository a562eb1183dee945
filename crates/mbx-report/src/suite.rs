//! suite.html: the one document of `run --test suite` that an ESRP author hands in. Each test's
//! verdict, how it ended and its key figure, a link to its own report.html (and to the reports of
//! earlier attempts moved aside), and the ESRP summary.
//!
//! Built from the suite folder's contents alone (each test folder's result.json), never from what
//! one invocation remembers: rewritten after every test and when the suite stops or resumes, it
//! says what the folder holds.

use std::path::Path;

use maud::{html, Markup, DOCTYPE};
use mbx_result::{CheckState, RunResult, TestKind};

use crate::esrp::{EsrpSummary, ServerFigures};
use crate::folder::ResultText;
use crate::html::{f3, page_head, state_class, state_word};

/// The file's name in the suite folder.
pub const SUITE_REPORT: &str = "suite.html";

/// One test of the suite as its folder holds it.
#[derive(Debug, Clone)]
pub struct SuiteTest {
    /// Its folder's name under the suite folder ("1-performance").
    pub folder: String,
    /// Its type.
    pub kind: TestKind,
    /// Its result, if the folder holds a readable one.
    pub result: Option<RunResult>,
    /// Why there is no result when the folder has a result.json that cannot be read.
    pub unreadable: Option<String>,
    /// Whether `FOLDER/report.html` exists.
    pub has_report: bool,
    /// Earlier attempts moved aside (`FOLDER.interrupted-N`), by name, in order, and whether each
    /// has a report.html.
    pub earlier: Vec<(String, bool)>,
}

impl SuiteTest {
    /// Reads test `folder` of type `kind` in suite folder `root`.
    pub fn read(root: &Path, folder: &str, kind: TestKind) -> SuiteTest {
        let dir = root.join(folder);
        let (result, unreadable) = if dir.join("result.json").is_file() {
            match ResultText::read(&dir).and_then(|t| {
                serde_json::from_str::<RunResult>(&t.text).map_err(|e| {
                    crate::ReportError::Invalid {
                        path: t.path,
                        reason: format!("not an mbxstress result ({e})"),
                    }
                })
            }) {
                Ok(r) => (Some(r), None),
                Err(e) => (None, Some(e.to_string())),
            }
        } else {
            (None, None)
        };
        let mut earlier: Vec<(u32, String, bool)> = std::fs::read_dir(root)
            .into_iter()
            .flatten()
            .flatten()
            .filter_map(|e| {
                let name = e.file_name().to_string_lossy().into_owned();
                let n: u32 = name
                    .strip_prefix(folder)?
                    .strip_prefix(".interrupted-")?
                    .parse()
                    .ok()?;
                let report = e.path().join("report.html").is_file();
                Some((n, name, report))
            })
            .collect();
        earlier.sort();
        SuiteTest {
            folder: folder.to_string(),
            kind,
            result,
            unreadable,
            has_report: dir.join("report.html").is_file(),
            earlier: earlier.into_iter().map(|(_, n, r)| (n, r)).collect(),
        }
    }

    /// The test ran to completion (whatever its verdict).
    pub fn completed(&self) -> bool {
        self.result
            .as_ref()
            .is_some_and(|r| r.stopped.reason.ran_to_completion())
    }
}

/// The suite's state from its tests: pass when every test ran to completion and passed, fail
/// when one that ran to completion failed, otherwise not complete (`None`).
pub fn suite_state(tests: &[SuiteTest]) -> Option<CheckState> {
    let done: Vec<&RunResult> = tests
        .iter()
        .filter(|t| t.completed())
        .filter_map(|t| t.result.as_ref())
        .collect();
    if done.iter().any(|r| r.verdict.state() == CheckState::Fail) {
        return Some(CheckState::Fail);
    }
    if done.len() < tests.len() {
        return None;
    }
    if done.iter().all(|r| r.verdict.pass()) {
        Some(CheckState::Pass)
    } else {
        Some(CheckState::NotJudged)
    }
}

/// The key figure of a test, in words.
fn key_figure(r: &RunResult) -> String {
    match r.test.test_type {
        TestKind::Performance | TestKind::Stress => format!(
            "{:.1} of {:.1} target transactional IOPS",
            r.achieved_iops, r.target_iops
        ),
        TestKind::Backup => match (
            r.sections.backup_avg_mb_per_s,
            r.sections.backup_sum_mb_per_s,
        ) {
            (Some(avg), Some(sum)) => {
                format!("{avg:.2} MB/s per database, {sum:.2} MB/s per server")
            }
            _ => format!("{} database(s) read", r.sections.backup.len()),
        },
        TestKind::SoftRecovery => match r.sections.seconds_per_log {
            Some(s) => format!(
                "{s:.3} s per log file ({} database(s))",
                r.sections.soft_recovery.len()
            ),
            None => format!("{} database(s) replayed", r.sections.soft_recovery.len()),
        },
        TestKind::Checksum => {
            let pages: u64 = r.sections.checksum.iter().map(|c| c.seen_pages).sum();
            let bad: u64 = r
                .sections
                .checksum
                .iter()
                .map(|c| c.errors())
                .fold(0, u64::saturating_add);
            format!("{pages} pages verified, {bad} not good")
        }
    }
}

fn server_rows(rows: &[&ServerFigures]) -> Markup {
    html! {
        table {
            tr { th { "Server" } th.n { "Transfers/s" } th.n { "Reads/s" } th.n { "Writes/s" } th.n { "Read latency (ms)" } th.n { "Write latency (ms)" } th.n { "Log writes/s" } th.n { "Log write latency (ms)" } th { "Flags" } }
            @for s in rows {
                tr {
                    td { (s.machine) }
                    td.n { (format!("{:.2}", s.db_transfers_per_s)) }
                    td.n { (format!("{:.2}", s.db_reads_per_s)) }
                    td.n { (format!("{:.2}", s.db_writes_per_s)) }
                    td.n { (f3(s.db_read_avg_latency_ms)) }
                    td.n { (f3(s.db_write_avg_latency_ms)) }
                    td.n { (format!("{:.2}", s.log_writes_per_s)) }
                    td.n { (f3(s.log_write_avg_latency_ms)) }
                    td { (s.flags.join(", ")) }
                }
            }
        }
    }
}

/// The ESRP summary as HTML (what `esrp` prints).
fn esrp_section(s: &EsrpSummary) -> Markup {
    let servers: Vec<&ServerFigures> = s.servers.iter().chain(s.aggregate.iter()).collect();
    let stress: Vec<&ServerFigures> = s.stress.iter().collect();
    html! {
        @if !servers.is_empty() {
            h3 { "Transactional I/O (Performance test)" }
            (server_rows(&servers))
        }
        @if !stress.is_empty() {
            h3 { "Stress test" }
            p.note { "ESRP reports the Stress test apart from the Performance test: not in the aggregate." }
            (server_rows(&stress))
        }
        @if !s.backup.is_empty() {
            h3 { "Database Backup" }
            table {
                tr { th { "Server" } th.n { "MB/s per database" } th.n { "MB/s per server" } }
                @for b in &s.backup { tr { td { (b.source) } td.n { (format!("{:.2}", b.mb_per_s_per_database)) } td.n { (format!("{:.2}", b.mb_per_s_per_server)) } } }
            }
        }
        @if !s.soft_recovery.is_empty() {
            h3 { "Soft Recovery" }
            table {
                tr { th { "Server" } th.n { "Seconds per log file" } }
                @for r in &s.soft_recovery { tr { td { (r.source) } td.n { (format!("{:.4}", r.seconds_per_log)) } } }
            }
        }
        @if !s.excluded.is_empty() {
            p { "Not summarized:" }
            ul { @for e in &s.excluded { li { (e.source) ": " (e.message) } } }
        }
        @if !s.discrepancies.is_empty() {
            p.warn { "Discrepancies:" }
            ul { @for d in &s.discrepancies { li { (d) } } }
        }
        @if !s.warnings.is_empty() {
            p.warn { "Warnings:" }
            ul { @for w in &s.warnings { li { (w.source) ": " (w.message) } } }
        }
    }
}

/// suite.html for the suite folder `root` holding `tests`, with the ESRP summary over its
/// results (`None` when none is there yet) and whether that summary is final (esrp.txt and
/// esrp.json written: every test ran).
pub fn render_suite(root: &Path, tests: &[SuiteTest], esrp: Option<&EsrpSummary>) -> String {
    let state = suite_state(tests);
    let done = tests.iter().filter(|t| t.completed()).count();
    let machine = tests
        .iter()
        .find_map(|t| t.result.as_ref().map(|r| r.test.machine.clone()))
        .unwrap_or_default();
    let markup = html! {
        (DOCTYPE)
        html lang="en" {
            (page_head(html! { "mbxstress ESRP suite: " (machine) }))
            body {
                h1 { "mbxstress ESRP suite report" }
                p id="suite-verdict" {
                    "Suite: "
                    @match state {
                        Some(s) => { span class=(state_class(s)) { (state_word(s)) } }
                        None => { span.notjudged { "Not complete" } }
                    }
                    " (" (done) " of " (tests.len()) " tests ran to completion"
                    @if state.is_none() { "; run the same command again to resume" }
                    ")"
                }
                (crate::html::kv(&[
                    ("Machine Name", machine.clone()),
                    ("Suite Folder", root.display().to_string()),
                ]))
                p.note { "Each test is an ordinary run on the same databases, in its own folder with its own report. This page is rewritten from the folders' result.json after each test and whenever the suite resumes." }
                h2 { "Tests" }
                table id="suite-tests" {
                    tr { th { "#" } th { "Test" } th { "Verdict" } th { "Ended" } th { "Started" } th.n { "Measured (s)" } th { "Key figure" } th { "Report" } }
                    @for (k, t) in tests.iter().enumerate() {
                        tr data-test=(t.folder) {
                            td.n { (k + 1) }
                            td { (t.kind.name()) }
                            @match (&t.result, &t.unreadable) {
                                (Some(r), _) => {
                                    td class=(state_class(r.verdict.state())) { (state_word(r.verdict.state())) }
                                    td { (r.stopped.reason.name().replace('_', " ")) }
                                    td { (r.test.start) }
                                    td.n { (format!("{:.0}", r.test.duration_s)) }
                                    td { (key_figure(r)) }
                                }
                                (None, Some(why)) => {
                                    td.fail { "Unreadable" } td colspan="4" { (why) }
                                }
                                (None, None) => {
                                    td.notjudged { "Not run" } td colspan="4" { "no result yet" }
                                }
                            }
                            td {
                                @if t.has_report { a href=(format!("{}/report.html", t.folder)) { (t.folder) "/report.html" } } @else { "-" }
                                @for (name, report) in &t.earlier {
                                    br;
                                    "earlier attempt: "
                                    @if *report { a href=(format!("{name}/report.html")) { (name) } } @else { (name) }
                                }
                            }
                        }
                    }
                }
                h2 { "ESRP Summary" }
                @match esrp {
                    Some(s) => {
                        @if done < tests.len() { p.warn { "Over the results so far: the suite is not complete." } }
                        @else { p.note { "The same summary as esrp.txt and esrp.json in this folder (`mbxstress esrp` on it prints it)." } }
                        (esrp_section(s))
                    }
                    None => { p.note { "No Performance, Backup or Soft Recovery result yet." } }
                }
            }
        }
    };
    crate::markup_check::checked(markup, "suite.html")
}
