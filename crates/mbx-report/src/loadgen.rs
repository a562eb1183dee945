//! The report of a `mbxstress loadgen` result (`kind` `loadgen`, [`mbx_result::LoadgenResult`]):
//! report.html in the storage report's style (one self-contained file, the same CSS, inline SVG
//! charts, no scripts, every text escaped by maud), and tasks.csv, commands.csv and samples.csv.
//! `mbxstress report` on a loadgen results folder comes here ([`crate::report::write_report_as`]
//! tells the kinds apart by `kind`); `loadgen` itself writes its report through
//! [`LoadgenHtmlExporter`].

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

use maud::{html, Markup, PreEscaped, DOCTYPE};
use mbx_result::{CheckState, LatencyMs, LoadgenResult, LoadgenSample, LOADGEN_KIND};

use crate::export::{csv_bytes, export, refuse_existing_result, result_bytes, Exporter, Format};
use crate::folder::{read_jsonl, ReportError, ResultText, Written};
use crate::html::{f3, kv, page_head, state_class, state_word};
use crate::input::folder_file;

const SAMPLES_WHAT: &str = "the samples of a loadgen run (samples.jsonl)";

/// The section titles of a loadgen report, in order (a section is left out when the result has
/// nothing for it: no tasks for an init-only result, no delivery, no init figures, no errors, no
/// samples).
pub const SECTIONS: [&str; 11] = [
    "Verdict",
    "Run",
    "Tasks",
    "Protocol Commands",
    "Delivery",
    "Initialization",
    "Idle Connections",
    "Errors",
    "Time Series",
    "Test Log",
    "Resolved Configuration",
];

/// The title of the section a merged `fleet loadgen` result has (one row per client machine,
/// `clients[]`); not in [`SECTIONS`], which a one-machine day's report has all of.
pub const CLIENTS_SECTION: &str = "Client Machines";

/// A loadgen results folder as read from disk: what the loadgen exporters render.
#[derive(Debug)]
pub struct LoadgenFolder {
    /// result.json.
    pub result: LoadgenResult,
    /// The samples of samples.jsonl (empty if there is none).
    pub samples: Vec<LoadgenSample>,
    /// The lines of test.log (empty if there is none).
    pub log: Vec<String>,
    /// The folder.
    pub dir: PathBuf,
    /// What reading the folder met that the reader should know (a torn last sample skipped).
    pub notes: Vec<String>,
}

impl LoadgenFolder {
    /// A result held in memory (`loadgen` just measured it) with its samples; no log.
    pub fn of_result(
        result: LoadgenResult,
        samples: Vec<LoadgenSample>,
        dir: PathBuf,
    ) -> LoadgenFolder {
        LoadgenFolder {
            result,
            samples,
            log: Vec::new(),
            dir,
            notes: Vec::new(),
        }
    }
}

/// Reads a loadgen results folder (or its result.json): result.json, and the samples and log
/// files it names if present, with the storage reader's rules (bounded, files of the folder
/// only, never through a link; a torn last sample skipped with a note).
pub fn load(input: &Path) -> Result<LoadgenFolder, ReportError> {
    folder_of(ResultText::read(input)?)
}

/// The folder of a result.json already read.
pub(crate) fn folder_of(source: ResultText) -> Result<LoadgenFolder, ReportError> {
    let ResultText { dir, path, text } = source;
    let result: LoadgenResult = serde_json::from_str(&text).map_err(|e| ReportError::Invalid {
        path: path.clone(),
        reason: format!("not an mbxstress loadgen result ({e})"),
    })?;
    drop(text);
    if result.kind != LOADGEN_KIND {
        return Err(ReportError::Invalid {
            path,
            reason: format!(
                "not an mbxstress loadgen result (kind {:?}, expected {LOADGEN_KIND:?})",
                result.kind
            ),
        });
    }
    let mut notes = Vec::new();
    // A merged fleet result has no samples or log of its own (empty names): each client's
    // folder has them.
    let samples = match folder_file(&dir, &result.samples_file, SAMPLES_WHAT) {
        _ if result.samples_file.is_empty() => Vec::new(),
        Ok(path) => {
            let (samples, torn) = read_jsonl::<LoadgenSample>(&path, SAMPLES_WHAT, "a sample")?;
            if let Some(n) = torn {
                notes.push(format!(
                    "{}: line {n}, the last, is incomplete (the run stopped while writing it) and was skipped",
                    path.display()
                ));
            }
            samples
        }
        Err(e) if e.is_not_found() => Vec::new(),
        Err(e) => return Err(e.into()),
    };
    let log = if result.log_file.is_empty() {
        Vec::new()
    } else {
        crate::folder::read_log(&dir, &result.log_file)?
    };
    Ok(LoadgenFolder {
        result,
        samples,
        log,
        dir,
        notes,
    })
}

/// The exporters of a format for a loadgen result: `html` report.html, `csv` tasks.csv,
/// commands.csv and samples.csv, `json` result.json (never over an existing file).
pub fn exporters(format: Format) -> Vec<Box<dyn Exporter<LoadgenFolder>>> {
    match format {
        Format::Html => vec![Box::new(LoadgenHtmlExporter)],
        Format::Csv => vec![
            Box::new(TasksCsvExporter),
            Box::new(CommandsCsvExporter),
            Box::new(LoadgenSamplesCsvExporter),
        ],
        Format::Json => vec![Box::new(LoadgenJsonExporter)],
    }
}

/// `report` on a loadgen result: writes each of `formats` into `out` (default: the folder).
pub(crate) fn write_report_as(
    source: ResultText,
    out: Option<&Path>,
    formats: &[Format],
) -> Result<Written, ReportError> {
    let folder = folder_of(source)?;
    let out = out
        .map(Path::to_path_buf)
        .unwrap_or_else(|| folder.dir.clone());
    let exporters: Vec<Box<dyn Exporter<LoadgenFolder>>> =
        formats.iter().flat_map(|f| exporters(*f)).collect();
    let files = export(&folder, &out, &exporters)?;
    Ok(Written {
        files,
        flags: Vec::new(),
        notes: folder.notes,
    })
}

/// report.html of a loadgen result ([`render`]).
#[derive(Debug, Clone, Copy)]
pub struct LoadgenHtmlExporter;

impl Exporter<LoadgenFolder> for LoadgenHtmlExporter {
    fn file_name(&self) -> &'static str {
        "report.html"
    }

    fn render(&self, run: &LoadgenFolder, _path: &Path) -> Result<Vec<u8>, ReportError> {
        Ok(render(run).into_bytes())
    }

    fn check_destination(&self, path: &Path) -> Result<(), ReportError> {
        crate::export::check_ours_html(path, "an mbxstress report.html")
    }
}

/// result.json of a loadgen result, re-written by the typed model; never replaces a file.
#[derive(Debug, Clone, Copy)]
pub struct LoadgenJsonExporter;

impl Exporter<LoadgenFolder> for LoadgenJsonExporter {
    fn file_name(&self) -> &'static str {
        "result.json"
    }

    fn render(&self, run: &LoadgenFolder, path: &Path) -> Result<Vec<u8>, ReportError> {
        result_bytes(&run.result, path)
    }

    fn check_destination(&self, path: &Path) -> Result<(), ReportError> {
        refuse_existing_result(path)
    }
}

/// The columns of tasks.csv (then one `failed_<class>` column per error class met).
pub const TASKS_CSV_COLUMNS: [&str; 12] = [
    "task",
    "dispatched",
    "completed",
    "failed",
    "latency_avg_ms",
    "latency_p50_ms",
    "latency_p95_ms",
    "latency_p99_ms",
    "latency_max_ms",
    "service_p50_ms",
    "service_p95_ms",
    "service_max_ms",
];

/// tasks.csv: one row per task type.
#[derive(Debug, Clone, Copy)]
pub struct TasksCsvExporter;

impl Exporter<LoadgenFolder> for TasksCsvExporter {
    fn file_name(&self) -> &'static str {
        "tasks.csv"
    }

    fn applies(&self, run: &LoadgenFolder) -> bool {
        !run.result.tasks.is_empty()
    }

    fn render(&self, run: &LoadgenFolder, path: &Path) -> Result<Vec<u8>, ReportError> {
        let tasks = &run.result.tasks;
        let classes = classes(tasks.iter().map(|t| &t.failed));
        let mut header: Vec<String> = TASKS_CSV_COLUMNS.map(String::from).to_vec();
        header.extend(classes.iter().map(|c| format!("failed_{c}")));
        let mut rows = vec![header];
        for t in tasks {
            let mut r = vec![
                t.task.clone(),
                t.dispatched.to_string(),
                t.completed.to_string(),
                sum(t.failed.values()).to_string(),
            ];
            let (l, s) = (&t.latency_ms, &t.service_ms);
            r.extend([l.avg, l.p50, l.p95, l.p99, l.max, s.p50, s.p95, s.max].map(f3));
            r.extend(
                classes
                    .iter()
                    .map(|c| t.failed.get(c).copied().unwrap_or(0).to_string()),
            );
            rows.push(r);
        }
        csv_bytes(rows, path)
    }
}

/// The columns of commands.csv (then one `errors_<class>` column per error class met).
pub const COMMANDS_CSV_COLUMNS: [&str; 9] = [
    "protocol",
    "command",
    "ok",
    "errors",
    "latency_avg_ms",
    "latency_p50_ms",
    "latency_p95_ms",
    "latency_p99_ms",
    "latency_max_ms",
];

/// commands.csv: one row per protocol command.
#[derive(Debug, Clone, Copy)]
pub struct CommandsCsvExporter;

impl Exporter<LoadgenFolder> for CommandsCsvExporter {
    fn file_name(&self) -> &'static str {
        "commands.csv"
    }

    fn applies(&self, run: &LoadgenFolder) -> bool {
        !run.result.commands.is_empty()
    }

    fn render(&self, run: &LoadgenFolder, path: &Path) -> Result<Vec<u8>, ReportError> {
        let commands = &run.result.commands;
        let classes = classes(commands.iter().map(|c| &c.errors));
        let mut header: Vec<String> = COMMANDS_CSV_COLUMNS.map(String::from).to_vec();
        header.extend(classes.iter().map(|c| format!("errors_{c}")));
        let mut rows = vec![header];
        for c in commands {
            let mut r = vec![
                c.protocol.clone(),
                c.command.clone(),
                c.ok.to_string(),
                sum(c.errors.values()).to_string(),
            ];
            let l = &c.latency_ms;
            r.extend([l.avg, l.p50, l.p95, l.p99, l.max].map(f3));
            r.extend(
                classes
                    .iter()
                    .map(|k| c.errors.get(k).copied().unwrap_or(0).to_string()),
            );
            rows.push(r);
        }
        csv_bytes(rows, path)
    }
}

/// The columns of a loadgen samples.csv: the keys of samples.jsonl (an absent figure is empty).
pub const SAMPLES_CSV_COLUMNS: [&str; 19] = [
    "t_s",
    "interval_s",
    "dispatched",
    "completed",
    "failed",
    "unfinished",
    "completed_total",
    "planned_total",
    "delivered",
    "task_p50_ms",
    "task_p95_ms",
    "task_max_ms",
    "delivery_p95_ms",
    "appended",
    "appended_bytes",
    "connections_open",
    "connections_failed",
    "rss_bytes",
    "cpu_pct",
];

/// samples.csv of a loadgen result: one row per sample.
#[derive(Debug, Clone, Copy)]
pub struct LoadgenSamplesCsvExporter;

impl Exporter<LoadgenFolder> for LoadgenSamplesCsvExporter {
    fn file_name(&self) -> &'static str {
        "samples.csv"
    }

    fn render(&self, run: &LoadgenFolder, path: &Path) -> Result<Vec<u8>, ReportError> {
        let opt = |v: Option<f64>| v.map(f3).unwrap_or_default();
        let opt_n = |v: Option<u64>| v.map(|n| n.to_string()).unwrap_or_default();
        let mut rows = vec![SAMPLES_CSV_COLUMNS.map(String::from).to_vec()];
        for s in &run.samples {
            rows.push(vec![
                f3(s.t_s),
                f3(s.interval_s),
                s.dispatched.to_string(),
                s.completed.to_string(),
                s.failed.to_string(),
                s.unfinished.to_string(),
                s.completed_total.to_string(),
                s.planned_total.to_string(),
                s.delivered.to_string(),
                opt(s.task_p50_ms),
                opt(s.task_p95_ms),
                opt(s.task_max_ms),
                opt(s.delivery_p95_ms),
                opt_n(s.appended),
                opt_n(s.appended_bytes),
                opt_n(s.connections_open),
                opt_n(s.connections_failed),
                opt_n(s.rss_bytes),
                opt(s.cpu_pct),
            ]);
        }
        csv_bytes(rows, path)
    }
}

/// Every error class of the maps, in order.
fn classes<'a>(
    maps: impl Iterator<Item = &'a std::collections::BTreeMap<String, u64>>,
) -> Vec<String> {
    let set: BTreeSet<&String> = maps.flat_map(|m| m.keys()).collect();
    set.into_iter().cloned().collect()
}

fn sum<'a>(v: impl Iterator<Item = &'a u64>) -> u64 {
    v.fold(0u64, |a, b| a.saturating_add(*b))
}

/// report.html of a loadgen result and its samples (no log, no reading notes): what `loadgen`
/// writes as it ends. Every text of the result is escaped.
pub fn html(result: &LoadgenResult, samples: &[LoadgenSample]) -> String {
    page(result, samples, &[], &[], &[])
}

/// report.html of a loadgen results folder: [`html`] with the folder's log and reading notes.
pub fn render(folder: &LoadgenFolder) -> String {
    let watched = crate::loadgen_servers::read_samples(&folder.dir, &folder.result.servers);
    page(
        &folder.result,
        &folder.samples,
        &folder.log,
        &folder.notes,
        &watched,
    )
}

/// Seconds as the report says them ("8 h", "3 min", "90 s").
fn duration(s: f64) -> String {
    if !s.is_finite() {
        return "-".into();
    }
    if s >= 3600.0 && (s / 3600.0).fract() == 0.0 {
        format!("{:.0} h", s / 3600.0)
    } else if s >= 60.0 && (s / 60.0).fract() == 0.0 {
        format!("{:.0} min", s / 60.0)
    } else {
        format!("{s:.1} s")
    }
}

/// Part of whole, percent (`-` of nothing).
fn pct(part: u64, whole: u64) -> String {
    if whole == 0 {
        "-".into()
    } else {
        format!("{:.2}%", part as f64 * 100.0 / whole as f64)
    }
}

/// How the run stopped, when it did not run its course or the guard stopped it.
fn stop_line(r: &LoadgenResult) -> Option<String> {
    let s = &r.stopped;
    if r.overloaded {
        return Some(format!(
            "The overload guard stopped the run: {} tasks unfinished at once, over the limit of {} ({} per user).",
            r.max_unfinished, r.overload_limit, r.config.overload_per_user
        ));
    }
    crate::html::stop_sentence(
        s,
        r.test.interrupted,
        "The test was interrupted: a partial result.",
    )
}

/// A client's folder name as a relative link's path segment: every byte but unreserved ones
/// percent-encoded, so no name makes a scheme (`javascript:`), a query or another folder.
fn path_segment(name: &str) -> String {
    let mut out = String::with_capacity(name.len());
    for b in name.bytes() {
        if b.is_ascii_alphanumeric() || matches!(b, b'-' | b'_' | b'.' | b'~') {
            out.push(char::from(b));
        } else {
            out.push_str(&format!("%{b:02X}"));
        }
    }
    out
}

/// The client machines of a merged `fleet loadgen` result: each one's own figures, its
/// verdict, and whether it is in the merged figures (and why not).
fn clients_section(r: &LoadgenResult) -> Markup {
    let opt = |v: Option<f64>| v.map_or_else(|| "-".to_string(), f3);
    html! {
        h2 { (CLIENTS_SECTION) }
        table id="client-machines" {
            tr {
                th { "Client" } th { "State" } th { "Message" } th { "Partition" } th.n { "Users" }
                th.n { "Tasks completed / planned" } th.n { "Failed" } th.n { "Delivered" } th.n { "Lost" }
                th.n { "Worst task p95 (ms)" } th { "Verdict" } th.n { "Start error (ms)" } th { "Merged" } th { "Report" }
            }
            @for c in &r.clients {
                tr {
                    td { (c.name) } td { (c.state) } td { (c.message.as_deref().unwrap_or("")) } td { (c.partition) }
                    td.n { (c.users) } td.n { (c.tasks_completed) " / " (c.tasks_planned) }
                    td.n.fail[c.tasks_failed > 0] { (c.tasks_failed) } td.n { (c.delivered) } td.n.fail[c.lost > 0] { (c.lost) }
                    td.n { (opt(c.task_p95_ms_worst)) }
                    @match c.verdict.as_deref() {
                        Some(v @ "PASS") => { td.pass { (v) } }
                        Some(v @ "FAIL") => { td.fail { (v) } }
                        Some(v) => { td.notjudged { (v) } }
                        None => { td { "-" } }
                    }
                    td.n { (opt(c.start_error_ms)) }
                    @if c.merged { td { "yes" } } @else { td.fail { "no: " (c.excluded.as_deref().unwrap_or("-")) } }
                    td { @if c.result.is_some() { a href=(format!("{}/report.html", path_segment(&c.name))) { (c.name) "/report.html" } } @else { "-" } }
                }
            }
        }
        p.note { "The figures of this report are merged from the clients marked merged: counts summed, latency percentiles from their histograms merged (never averaged). Each row is the client's own result." }
    }
}

/// The latency cells p50, p95, p99, max.
fn latency_cells(l: &LatencyMs) -> Markup {
    html! { td.n { (f3(l.p50)) } td.n { (f3(l.p95)) } td.n { (f3(l.p99)) } td.n { (f3(l.max)) } }
}

fn tasks_table(r: &LoadgenResult) -> Markup {
    let classes = classes(r.tasks.iter().map(|t| &t.failed));
    html! {
        table id="tasks" {
            tr {
                th { "Task" } th.n { "Dispatched" } th.n { "Completed" } th.n { "Skipped" } th.n { "Failed" }
                @for c in &classes { th.n { "Failed: " (c) } }
                th.n { "Latency p50 (ms)" } th.n { "p95" } th.n { "p99" } th.n { "max" } th.n { "Service p95 (ms)" }
            }
            @for t in &r.tasks {
                @let failed = sum(t.failed.values());
                tr {
                    td { (t.task) } td.n { (t.dispatched) } td.n { (t.completed) } td.n { (t.skipped) }
                    td.n.fail[failed > 0] { (failed) }
                    @for c in &classes { td.n { (t.failed.get(c).copied().unwrap_or(0)) } }
                    (latency_cells(&t.latency_ms))
                    td.n { (f3(t.service_ms.p95)) }
                }
            }
        }
        p.note { "Latency counts from each task's scheduled time to its end, so a task that waited behind a slow one counts the wait (no coordinated omission); service time counts from the task's own start." }
    }
}

fn commands_table(r: &LoadgenResult) -> Markup {
    let classes = classes(r.commands.iter().map(|c| &c.errors));
    html! {
        table id="commands" {
            tr {
                th { "Protocol" } th { "Command" } th.n { "OK" } th.n { "Errors" }
                @for c in &classes { th.n { "Errors: " (c) } }
                th.n { "p50 (ms)" } th.n { "p95" } th.n { "p99" } th.n { "max" }
            }
            @for c in &r.commands {
                @let errors = sum(c.errors.values());
                tr {
                    td { (c.protocol) } td { (c.command) } td.n { (c.ok) }
                    td.n.fail[errors > 0] { (errors) }
                    @for k in &classes { td.n { (c.errors.get(k).copied().unwrap_or(0)) } }
                    (latency_cells(&c.latency_ms))
                }
            }
        }
    }
}

fn delivery_section(d: &mbx_result::Delivery) -> Markup {
    let l = &d.latency_ms;
    html! {
        h2 { (SECTIONS[4]) }
        table id="delivery" {
            tr { th.n { "Messages sent" } th.n { "Copies expected" } th.n { "Delivered" } th.n { "Late" } th.n { "Lost" } th.n { "Duplicated" } th.n { "Corrupted" } th.n { "Unexpected" } }
            tr {
                td.n { (d.messages_sent) } td.n { (d.expected) } td.n { (d.delivered) } td.n.fail[d.late > 0] { (d.late) }
                td.n.fail[d.lost > 0] { (d.lost) } td.n.fail[d.duplicated > 0] { (d.duplicated) }
                td.n.fail[d.corrupted > 0] { (d.corrupted) } td.n.fail[d.unexpected > 0] { (d.unexpected) }
            }
        }
        table id="delivery-latency" {
            tr { th { "Delivery latency (ms)" } th.n { "Copies" } th.n { "avg" } th.n { "p50" } th.n { "p90" } th.n { "p95" } th.n { "p99" } th.n { "max" } }
            @if d.server_latency_ms.count > 0 {
                @let sl = &d.server_latency_ms;
                tr { td { "Server: SMTP acceptance to in the mailbox (the watcher's; judged)" } td.n { (sl.count) } td.n { (f3(sl.avg)) } td.n { (f3(sl.p50)) } td.n { (f3(sl.p90)) } td.n { (f3(sl.p95)) } td.n { (f3(sl.p99)) } td.n { (f3(sl.max)) } }
            }
            tr { td { "User-seen: SMTP acceptance to seen by the user's client" } td.n { (l.count) } td.n { (f3(l.avg)) } td.n { (f3(l.p50)) } td.n { (f3(l.p90)) } td.n { (f3(l.p95)) } td.n { (f3(l.p99)) } td.n { (f3(l.max)) } }
        }
        @if !d.server_measured_by.is_empty() {
            p.note { "Server latency: " (d.server_measured_by) "; resolution " (f3(d.server_resolution_ms)) " ms; " (d.server_late) " late." }
        }
        @if let Some(i) = &d.idle_probe {
            p.note.fail[i.slow] { "IDLE: " (i.note) }
        }
        p.note {
            "Measured by: " (if d.measured_by.is_empty() { "-" } else { d.measured_by.as_str() })
            " (" (d.seen_by_idle) " copies seen through IDLE, " (d.seen_by_poll) " by a poll; poll: includes up to a check interval; idle: includes the server's notification delay). Late: delivered after the delivery p95 limit."
        }
        @if !d.corrupted_copies.is_empty() {
            h3 { "Corrupted copies" }
            table id="corrupted-copies" {
                tr { th { "Message id" } th { "Recipient" } th { "What differs" } }
                @for c in &d.corrupted_copies { tr.fail { td { (c.id) } td { (c.recipient) } td { (c.what) } } }
            }
            @if d.corrupted > d.corrupted_copies.len() as u64 { p.note { (d.corrupted - d.corrupted_copies.len() as u64) " more not named (the first " (d.corrupted_copies.len()) " are)." } }
        }
        @if !d.lost_copies.is_empty() {
            h3 { "Lost copies" }
            table id="lost-copies" {
                tr { th { "Message id" } th { "Recipient" } th { "Note" } }
                @for c in &d.lost_copies { tr.fail { td { (c.id) } td { (c.recipient) } td { (c.what) } } }
            }
            @if d.lost > d.lost_copies.len() as u64 { p.note { (d.lost - d.lost_copies.len() as u64) " more not named (the first " (d.lost_copies.len()) " are)." } }
        }
    }
}

fn init_section(i: &mbx_result::InitFigures) -> Markup {
    html! {
        h2 { (SECTIONS[5]) }
        table id="init" {
            tr { th.n { "Users done" } th.n { "Users failed" } th.n { "Target per mailbox" } th.n { "Messages found" } th.n { "Messages appended" } th.n { "Bytes appended" } th.n { "Seconds" } th.n { "Messages/s" } th.n { "MB/s" } }
            tr {
                td.n { (i.users_done) } td.n.fail[i.users_failed > 0] { (i.users_failed) } td.n { (i.target_per_user) }
                td.n { (i.messages_found) } td.n { (i.messages_appended) } td.n { (i.bytes_appended) }
                td.n { (f3(i.duration_s)) } td.n { (f3(i.messages_per_s)) } td.n { (f3(i.mb_per_s)) }
            }
        }
    }
}

fn idle_section(i: &mbx_result::IdleFigures) -> Markup {
    let kib = |b: Option<f64>| b.map_or("n/a".to_string(), |b| format!("{:.1}", b / 1024.0));
    let mib = |b: Option<u64>| {
        b.map_or("n/a".to_string(), |b| {
            format!("{:.1}", b as f64 / 1_048_576.0)
        })
    };
    html! {
        h2 { (SECTIONS[6]) }
        table id="idle" {
            tr { th { "Security" } th.n { "Asked" } th.n { "Established" } th.n { "Failed" } th.n { "Dropped" } th.n { "Open at end" } th.n { "Establish s" } th.n { "Established/s" } th.n { "Held s" } th.n { "RSS before MiB" } th.n { "RSS held MiB" } th.n { "KiB per connection" } th.n { "CPU idle, % of a core" } }
            tr {
                td { (i.security) } td.n { (i.connections) } td.n { (i.established) }
                td.n.fail[i.failed > 0] { (i.failed) } td.n.fail[i.dropped > 0] { (i.dropped) } td.n { (i.open_at_end) }
                td.n { (f3(i.establish_s)) } td.n { (f3(i.established_per_s)) } td.n { (f3(i.hold_s)) }
                td.n { (mib(i.rss_baseline_bytes)) } td.n { (mib(i.rss_held_bytes)) }
                td.n { (kib(i.rss_per_connection_bytes)) } td.n { (i.cpu_idle_pct.map_or("n/a".to_string(), f3)) }
            }
        }
        p { "Memory and CPU: " (i.measured_by) }
    }
}

/// A line of a chart from the samples: `f` gives a sample's value, or none.
fn line(
    name: &str,
    samples: &[LoadgenSample],
    f: impl Fn(&LoadgenSample) -> Option<f64>,
) -> crate::svg::Series {
    crate::svg::Series {
        name: name.into(),
        points: samples
            .iter()
            .filter_map(|s| f(s).map(|v| (s.t_s, v)))
            .collect(),
    }
}

/// Per second over the sample's interval (none for an interval of no length).
fn rate(n: u64, s: &LoadgenSample) -> Option<f64> {
    (s.interval_s > 0.0).then(|| n as f64 / s.interval_s)
}

fn charts(r: &LoadgenResult, samples: &[LoadgenSample], has_tasks: bool) -> Markup {
    use crate::svg::{LineChart, Series};
    let x = "seconds since the phase began";
    let mut list = Vec::new();
    if has_tasks {
        list.push(LineChart {
            title: "Tasks per second".into(),
            x_label: x.into(),
            y_label: "tasks/s".into(),
            series: vec![
                line("completed", samples, |s| rate(s.completed, s)),
                line("failed", samples, |s| rate(s.failed, s)),
                line("dispatched", samples, |s| rate(s.dispatched, s)),
            ],
        });
        let mut unfinished = vec![line("unfinished", samples, |s| Some(s.unfinished as f64))];
        if r.overload_limit > 0 {
            unfinished.push(Series {
                name: "overload limit".into(),
                points: samples
                    .iter()
                    .map(|s| (s.t_s, r.overload_limit as f64))
                    .collect(),
            });
        }
        list.push(LineChart {
            title: "Tasks unfinished (queued or running) at each sample's end".into(),
            x_label: x.into(),
            y_label: "tasks".into(),
            series: unfinished,
        });
        if samples.iter().any(|s| s.task_p95_ms.is_some()) {
            list.push(LineChart {
                title: "Task latency from the scheduled time (ms, per sample)".into(),
                x_label: x.into(),
                y_label: "ms".into(),
                series: vec![
                    line("p50", samples, |s| s.task_p50_ms),
                    line("p95", samples, |s| s.task_p95_ms),
                    line("max", samples, |s| s.task_max_ms),
                ],
            });
        }
    }
    if samples.iter().any(|s| s.delivery_p95_ms.is_some()) {
        list.push(LineChart {
            title: "Delivery latency p95 (ms, per sample)".into(),
            x_label: x.into(),
            y_label: "ms".into(),
            series: vec![line("p95", samples, |s| s.delivery_p95_ms)],
        });
    }
    if samples.iter().any(|s| s.appended.is_some()) {
        list.push(LineChart {
            title: "Initialization: messages appended per second".into(),
            x_label: x.into(),
            y_label: "messages/s".into(),
            series: vec![line("messages/s", samples, |s| {
                s.appended.and_then(|n| rate(n, s))
            })],
        });
        list.push(LineChart {
            title: "Initialization: MB appended per second".into(),
            x_label: x.into(),
            y_label: "MB/s".into(),
            series: vec![line("MB/s", samples, |s| {
                s.appended_bytes
                    .and_then(|n| rate(n, s))
                    .map(|b| b / 1_000_000.0)
            })],
        });
    }
    if samples.iter().any(|s| s.connections_open.is_some()) {
        list.push(LineChart {
            title: "Idle: connections open".into(),
            x_label: x.into(),
            y_label: "connections".into(),
            series: vec![line("open", samples, |s| {
                s.connections_open.map(|n| n as f64)
            })],
        });
        list.push(LineChart {
            title: "Idle: this process's resident memory (MiB)".into(),
            x_label: x.into(),
            y_label: "MiB".into(),
            series: vec![line("RSS", samples, |s| {
                s.rss_bytes.map(|b| b as f64 / 1_048_576.0)
            })],
        });
    }
    html! { div.charts { @for c in &list { (c.render()) } } }
}

fn page(
    r: &LoadgenResult,
    samples: &[LoadgenSample],
    log: &[String],
    notes: &[String],
    watched: &[(String, Vec<mbx_result::ServerSample>)],
) -> String {
    let cfg = &r.config;
    let t = &r.test;
    let has_tasks = r.tasks_planned > 0 || r.tasks_dispatched > 0 || !r.tasks.is_empty();
    let markup = html! {
        (DOCTYPE)
        html lang="en" {
            (page_head(html! { "mbxstress loadgen " (t.phase) " report: " (t.machine) }))
            body {
                h1 { "mbxstress loadgen " (t.phase) " report" }
                (overall(r, has_tasks))
                @if let Some(line) = stop_line(r) { p.fail id="stopped" { (line) } }
                p.note { "A client load test: simulated users on the mail system through SMTP, IMAP and POP3, in the manner of Microsoft Exchange Load Generator; how each figure is measured: docs/method.md." }

                (verdict_section(r))
                (run_section(r))

                @if !r.clients.is_empty() { (clients_section(r)) }
                @if has_tasks { (tasks_section(r)) }
                (PreEscaped(crate::loadgen_servers::section(&r.servers, watched)))
                @if !r.commands.is_empty() {
                    h2 { (SECTIONS[3]) }
                    (commands_table(r))
                }
                @if let Some(d) = &r.delivery { (delivery_section(d)) }
                @if let Some(i) = &r.init { (init_section(i)) }
                @if let Some(i) = &r.idle { (idle_section(i)) }
                @if !r.errors.is_empty() {
                    h2 { (SECTIONS[7]) }
                    table id="errors" {
                        tr { th { "Class" } th.n { "Count" } th { "First message" } }
                        @for e in &r.errors { tr.fail { td { (e.class) } td.n { (e.count) } td { (e.message) } } }
                    }
                }
                @if !samples.is_empty() || !notes.is_empty() {
                    h2 { (SECTIONS[8]) }
                    @for n in notes { p.note { (n) } }
                    @if !samples.is_empty() { (charts(r, samples, has_tasks)) }
                }
                @if !log.is_empty() {
                    h2 { (SECTIONS[9]) }
                    pre { @for l in log { (l) "\n" } }
                }
                h2 { (SECTIONS[10]) }
                pre { (serde_json::to_string_pretty(cfg).unwrap_or_default()) }
            }
        }
    };
    crate::markup_check::checked(markup, "loadgen report.html")
}

/// The line under the title: the overall state, the tasks completed and the copies delivered.
fn overall(r: &LoadgenResult, has_tasks: bool) -> Markup {
    let verdict_state = r.verdict.state();
    html! {
        p {
            "Overall: " span class=(state_class(verdict_state)) id="overall" { (state_word(verdict_state)) }
            @if has_tasks {
                " · " (r.tasks_completed) " of " (r.tasks_planned) " tasks planned completed (" (pct(r.tasks_completed, r.tasks_planned)) ")"
            }
            @if let Some(d) = &r.delivery {
                " · " (d.delivered) " of " (d.expected) " copies delivered, " (d.lost) " lost, " (d.corrupted) " corrupted"
            }
        }
    }
}

/// The verdict: each check with its value and limit (a sentence when none was judged).
fn verdict_section(r: &LoadgenResult) -> Markup {
    html! {
        h2 { (SECTIONS[0]) }
        @if r.verdict.checks().is_empty() {
            p.notjudged { "No check was judged." }
        } @else {
            table id="verdict" {
                tr { th { "Check" } th.n { "Value" } th.n { "Limit" } th { "Result" } }
                @for c in r.verdict.checks() {
                    tr {
                        td { (c.name) }
                        td.n { @if c.state() == CheckState::NotJudged { "-" } @else { (f3(c.value)) } }
                        td.n { (f3(c.limit)) }
                        td class=(state_class(c.state())) {
                            (state_word(c.state()))
                            @if let Some(why) = c.reason() { ": " (why) }
                        }
                    }
                }
            }
        }
    }
}

/// The run: what was asked (servers, users, profile, day), when it ran and how it stopped,
/// the client types asked, and the notes.
fn run_section(r: &LoadgenResult) -> Markup {
    let cfg = &r.config;
    html! {
        h2 { (SECTIONS[1]) }
        (kv(&run_rows(r)))
        @if !cfg.clients.is_empty() {
            table id="clients" {
                tr { th { "Client type" } th.n { "Share asked (%)" } th.n { "Users" } th.n { "Tasks per user per day" } }
                @for c in &cfg.clients { tr { td { (c.client) } td.n { (f3(c.share_pct)) } td.n { (c.users) } td.n { (f3(c.tasks_per_user_day)) } } }
            }
        }
        @if !r.notes.is_empty() {
            ul id="notes" { @for n in &r.notes { li { (n) } } }
        }
    }
}

/// The rows of the run's table.
fn run_rows(r: &LoadgenResult) -> Vec<(&'static str, String)> {
    let cfg = &r.config;
    let t = &r.test;
    let servers = cfg
        .servers
        .iter()
        .map(|s| format!("{}: {}", s.protocol, s.url))
        .collect::<Vec<_>>()
        .join(", ");
    let day = if cfg.day_s > 0.0 {
        format!("{} simulated day(s) of {}", cfg.days, duration(cfg.day_s))
    } else {
        "-".into()
    };
    let reason = r.stopped.reason.name().replace('_', " ");
    let stopped = if r.stopped.message.is_empty() {
        reason
    } else {
        format!("{reason}: {}", r.stopped.message)
    };
    let mut rows: Vec<(&'static str, String)> = vec![
        ("Phase", t.phase.clone()),
        ("Run id", t.run_id.clone()),
        ("Servers", servers),
        ("TLS trust", cfg.tls_trust.clone()),
        ("SMTP authentication", cfg.smtp_auth.clone()),
        (
            "Users",
            format!(
                "{} ({}), domain {}",
                cfg.users, cfg.users_source, cfg.domain
            ),
        ),
        (
            "Profile",
            format!(
                "{} messages sent + received per mailbox per day, {} KB average message ({})",
                cfg.messages_per_day, cfg.message_kb, cfg.profile_source
            ),
        ),
        ("Day", day),
        ("Seed", cfg.seed.to_string()),
        ("Start", t.start.clone()),
        ("End", t.end.clone()),
        ("Duration", format!("{:.1} s", t.duration_s)),
        ("Stopped", stopped),
        ("Machine", t.machine.clone()),
        ("Operating System", t.os.clone()),
        ("mbxstress Version", t.tool_version.clone()),
    ];
    if let Some(n) = cfg.init_messages {
        rows.push((
            "Initialization target (messages per mailbox)",
            n.to_string(),
        ));
    }
    rows
}

/// The tasks: planned, dispatched, completed, failed, the most unfinished, and per task type.
fn tasks_section(r: &LoadgenResult) -> Markup {
    html! {
        h2 { (SECTIONS[2]) }
        (kv(&[
            ("Planned", r.tasks_planned.to_string()),
            ("Dispatched", r.tasks_dispatched.to_string()),
            ("Completed", format!("{} ({} of planned)", r.tasks_completed, pct(r.tasks_completed, r.tasks_planned))),
            ("Failed", r.tasks_failed.to_string()),
            ("Most unfinished at once", format!("{} (overload limit {}{})", r.max_unfinished, r.overload_limit, if r.overloaded { ": exceeded, the run stopped" } else { "" })),
        ]))
        @if !r.tasks.is_empty() { (tasks_table(r)) }
    }
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeMap;

    use mbx_result::{
        Check, ClientShare, CommandRow, CorruptedCopy, Delivery, InitFigures, LatencyMs,
        LoadgenConfig, LoadgenError, LoadgenInfo, LoadgenResult, LoadgenSample, LoadgenThresholds,
        ServerUrl, StopReason, Stopped, TaskRow, Verdict, LOADGEN_KIND, LOADGEN_SCHEMA,
    };

    use super::{html, SECTIONS};

    const HOSTILE_USER: &str = "<script>alert('user')</script>@example.com";
    const HOSTILE_MESSAGE: &str = "550 <script>alert(\"server\")</script> & <img src=x onerror=1>";

    fn lat(p95: f64) -> LatencyMs {
        LatencyMs {
            count: 10,
            avg: p95 / 2.0,
            p50: p95 / 3.0,
            p90: p95 * 0.9,
            p95,
            p99: p95 * 1.5,
            max: p95 * 2.0,
        }
    }

    /// A day's result as `loadgen run` writes it, with hostile strings where a server's or a
    /// users file's text lands.
    fn day() -> LoadgenResult {
        let failed: BTreeMap<String, u64> = [("timeout".to_string(), 2)].into();
        LoadgenResult {
            schema: LOADGEN_SCHEMA.into(),
            kind: LOADGEN_KIND.into(),
            test: LoadgenInfo {
                phase: "day".into(),
                run_id: "r20261127T1000".into(),
                start: "2026-11-27T10:00:00Z".into(),
                end: "2026-11-27T10:03:00Z".into(),
                duration_s: 180.0,
                machine: "client<1>".into(),
                os: "Linux".into(),
                tool_version: "0.1.0".into(),
                interrupted: false,
                ..LoadgenInfo::default()
            },
            config: LoadgenConfig {
                servers: vec![
                    ServerUrl {
                        protocol: "smtp".into(),
                        url: "smtp+starttls://127.0.0.1:587".into(),
                    },
                    ServerUrl {
                        protocol: "imap".into(),
                        url: "imaps://127.0.0.1:993".into(),
                    },
                ],
                tls_trust: "insecure".into(),
                smtp_auth: "plain".into(),
                users_source: "template loadgen%d from 1".into(),
                users: 50,
                domain: "example.test".into(),
                messages_per_day: 150,
                message_kb: 75.0,
                clients: vec![ClientShare {
                    client: "desktop_imap".into(),
                    share_pct: 100.0,
                    users: 50,
                    tasks_per_user_day: 120.0,
                }],
                day_s: 180.0,
                days: 1,
                seed: 7,
                overload_per_user: 1.5,
                grace_s: 60.0,
                duration_s: 28_800.0,
                stress: false,
                init_messages: None,
                profile_source: "flags".into(),
                thresholds: LoadgenThresholds {
                    tasks_achieved_pct: 99.0,
                    task_p95_ms: 1000.0,
                    delivery_p95_ms: 60000.0,
                },
            },
            tasks_planned: 6000,
            tasks_dispatched: 6000,
            tasks_completed: 5998,
            tasks_failed: 2,
            max_unfinished: 12,
            overload_limit: 75,
            overloaded: false,
            tasks: vec![
                TaskRow {
                    task: "send_new".into(),
                    dispatched: 1000,
                    completed: 998,
                    skipped: 0,
                    failed: failed.clone(),
                    latency_ms: lat(120.0),
                    service_ms: lat(100.0),
                },
                TaskRow {
                    task: "check_inbox".into(),
                    dispatched: 5000,
                    completed: 5000,
                    skipped: 0,
                    failed: BTreeMap::new(),
                    latency_ms: lat(40.0),
                    service_ms: lat(30.0),
                },
            ],
            commands: vec![CommandRow {
                protocol: "smtp".into(),
                command: "DATA end".into(),
                ok: 998,
                errors: failed,
                latency_ms: lat(80.0),
                statuses: Default::default(),
            }],
            delivery: Some(Delivery {
                messages_sent: 998,
                expected: 1996,
                delivered: 1994,
                lost: 1,
                duplicated: 0,
                corrupted: 1,
                unexpected: 0,
                corrupted_copies: vec![CorruptedCopy {
                    id: "r20261127T1000/loadgen3/17".into(),
                    recipient: HOSTILE_USER.into(),
                    what: "body changed at byte 12 of the body".into(),
                }],
                lost_copies: vec![CorruptedCopy {
                    id: "r20261127T1000/loadgen4/2".into(),
                    recipient: "loadgen9@example.test".into(),
                    what: String::new(),
                }],
                latency_ms: lat(900.0),
                measured_by: "idle".into(),
                seen_by_idle: 398,
                seen_by_poll: 0,
                late: 3,
                ..Delivery::default()
            }),
            init: None,
            idle: None,
            submit: None,
            verdict: Verdict::of(vec![
                Check::new("tasks_achieved_pct", 99.97, 99.0, true),
                Check::new("lost_copies", 1.0, 0.0, false),
                Check::not_judged("delivery_p95_ms", 60000.0, "no copy was delivered"),
            ]),
            stopped: Stopped::new(StopReason::VerdictFailed, "a check failed"),
            errors: vec![LoadgenError {
                class: "timeout".into(),
                count: 2,
                message: format!("user {HOSTILE_USER}: {HOSTILE_MESSAGE}"),
            }],
            samples_file: "samples.jsonl".into(),
            log_file: "test.log".into(),
            notes: vec!["a note <b>bold</b>".into()],
            histograms: BTreeMap::new(),
            clients: Vec::new(),
            servers: Vec::new(),
        }
    }

    fn sample(t: f64) -> LoadgenSample {
        LoadgenSample {
            t_s: t,
            interval_s: 10.0,
            dispatched: 300,
            completed: 299,
            failed: 1,
            unfinished: 4,
            completed_total: 299 * (t / 10.0) as u64,
            planned_total: 6000,
            delivered: 100,
            task_p50_ms: Some(20.0),
            task_p95_ms: Some(90.0),
            task_max_ms: Some(300.0),
            delivery_p95_ms: Some(800.0),
            appended: None,
            appended_bytes: None,
            ..LoadgenSample::default()
        }
    }

    fn init_only() -> LoadgenResult {
        let mut r = day();
        r.test.phase = "init".into();
        r.config.init_messages = Some(20);
        r.tasks_planned = 0;
        r.tasks_dispatched = 0;
        r.tasks_completed = 0;
        r.tasks_failed = 0;
        r.tasks.clear();
        r.delivery = None;
        r.errors.clear();
        r.notes.clear();
        r.init = Some(InitFigures {
            users_done: 50,
            users_failed: 0,
            target_per_user: 20,
            messages_found: 0,
            messages_appended: 1000,
            bytes_appended: 75_000_000,
            duration_s: 10.0,
            messages_per_s: 100.0,
            mb_per_s: 7.5,
        });
        r.verdict = Verdict::of(vec![Check::new("users_failed", 0.0, 0.0, true)]);
        r.stopped = Stopped::new(StopReason::Completed, "");
        r
    }

    fn h2(html: &str, title: &str) -> bool {
        html.contains(&format!("<h2>{title}</h2>"))
    }

    /// A user name and a server's message with markup are escaped, never markup of the page.
    #[test]
    fn loadgen_report_escapes_hostile_strings() {
        let page = html(&day(), &[sample(10.0), sample(20.0)]);
        assert!(!page.contains("<script"), "{page}");
        assert!(!page.contains("<img"), "{page}");
        assert!(!page.contains("<b>bold"), "{page}");
        assert!(
            page.contains("&lt;script&gt;alert('user')&lt;/script&gt;@example.com"),
            "{page}"
        );
        assert!(
            page.contains("550 &lt;script&gt;alert(&quot;server&quot;)&lt;/script&gt; &amp; &lt;img src=x onerror=1&gt;"),
            "{page}"
        );
        assert!(page.contains("client&lt;1&gt;"));
    }

    /// A merged fleet result: one row per client machine with its own figures, hostile names
    /// and messages escaped, a link to the report of each client whose result came back (its
    /// name percent-encoded, never a scheme), and no such section for one machine.
    #[test]
    fn loadgen_report_of_a_fleet_has_a_row_per_client_escaped() {
        use mbx_result::ClientPart;
        assert!(!page_has_clients(&html(&day(), &[])));
        let mut r = day();
        r.clients = vec![
            ClientPart {
                name: "client-a".into(),
                ssh: "root@a".into(),
                state: "passed".into(),
                partition: "1/2".into(),
                users: 25,
                result: Some("client-a/result.json".into()),
                merged: true,
                start_error_ms: Some(2.25),
                tasks_planned: 500,
                tasks_completed: 499,
                tasks_failed: 1,
                delivered: 200,
                lost: 0,
                task_p95_ms_worst: Some(312.5),
                verdict: Some("PASS".into()),
                ..ClientPart::default()
            },
            ClientPart {
                name: "javascript:alert(1)<b>".into(),
                state: "failed".into(),
                message: Some(HOSTILE_MESSAGE.into()),
                partition: "2/2".into(),
                result: Some("x/result.json".into()),
                excluded: Some("its result has no histograms <old>".into()),
                verdict: Some("FAIL".into()),
                ..ClientPart::default()
            },
            ClientPart {
                name: "client-c".into(),
                state: "unreachable".into(),
                partition: "3/3".into(),
                excluded: Some("no result came back".into()),
                ..ClientPart::default()
            },
        ];
        let page = html(&r, &[]);
        assert!(page_has_clients(&page), "{page}");
        assert!(page.contains("<tr><td>client-a</td><td>passed</td><td></td><td>1/2</td><td class=\"n\">25</td><td class=\"n\">499 / 500</td><td class=\"n fail\">1</td><td class=\"n\">200</td><td class=\"n\">0</td><td class=\"n\">312.500</td><td class=\"pass\">PASS</td><td class=\"n\">2.250</td><td>yes</td><td><a href=\"client-a/report.html\">client-a/report.html</a></td></tr>"), "{page}");
        // Hostile strings are text, the link a relative path.
        assert!(!page.contains("<b>") && !page.contains("<script") && !page.contains("<old>"));
        assert!(page.contains("javascript:alert(1)&lt;b&gt;"), "{page}");
        assert!(
            page.contains("href=\"javascript%3Aalert%281%29%3Cb%3E/report.html\""),
            "{page}"
        );
        assert!(!page.contains("href=\"javascript:"));
        assert!(page.contains("550 &lt;script&gt;alert(&quot;server&quot;)&lt;/script&gt;"));
        assert!(
            page.contains("<td class=\"fail\">no: its result has no histograms &lt;old&gt;</td>")
        );
        assert!(page.contains("<td class=\"fail\">FAIL</td>"));
        // No result: no link, no verdict.
        assert!(page.contains("<td>client-c</td><td>unreachable</td>"));
        assert!(
            page.contains("<td class=\"fail\">no: no result came back</td><td>-</td></tr>"),
            "{page}"
        );
        assert_eq!(page.matches("/report.html\">").count(), 2);
    }

    fn page_has_clients(page: &str) -> bool {
        h2(page, super::CLIENTS_SECTION) && page.contains("id=\"client-machines\"")
    }

    /// `loadgen idle`'s result: the idle section with its figures, the connections and memory
    /// charts, no tasks.
    #[test]
    fn loadgen_report_of_an_idle_hold_has_its_section_and_charts() {
        let mut r = init_only();
        r.test.phase = "idle".into();
        r.init = None;
        r.idle = Some(mbx_result::IdleFigures {
            connections: 10_000,
            established: 10_000,
            open_at_end: 10_000,
            security: "imaps".into(),
            rss_per_connection_bytes: Some(17.4 * 1024.0),
            cpu_idle_pct: Some(0.1),
            measured_by: "linux /proc/self".into(),
            ..mbx_result::IdleFigures::default()
        });
        let s = LoadgenSample {
            t_s: 1.0,
            interval_s: 1.0,
            connections_open: Some(10_000),
            rss_bytes: Some(187_000_000),
            cpu_pct: Some(0.0),
            ..LoadgenSample::default()
        };
        let page = html(&r, &[s.clone(), LoadgenSample { t_s: 2.0, ..s }]);
        assert!(h2(&page, "Idle Connections"), "{page}");
        assert!(!h2(&page, "Initialization"));
        assert!(page.contains("<td class=\"n\">17.4</td>"), "{page}");
        assert!(page.contains("Idle: connections open"), "{page}");
        assert!(page.contains("linux /proc/self"));
    }

    /// A day's result has every section, the task and command rows, the checks with their
    /// states, the delivery with the corrupted and lost copies named, and four charts.
    #[test]
    fn loadgen_report_of_a_day_has_every_section() {
        let page = html(&day(), &[sample(10.0), sample(20.0)]);
        for s in SECTIONS {
            if s == "Initialization" || s == "Idle Connections" || s == "Test Log" {
                assert!(!h2(&page, s), "{s} present");
            } else {
                assert!(h2(&page, s), "{s} missing");
            }
        }
        assert!(page.starts_with("<!DOCTYPE html>"));
        assert!(page.contains("<meta name=\"generator\" content=\"mbxstress\">"));
        assert!(page.contains("<td>send_new</td><td class=\"n\">1000</td><td class=\"n\">998</td><td class=\"n\">0</td><td class=\"n fail\">2</td>"), "{page}");
        assert!(page.contains("<th class=\"n\">Skipped</th>"));
        assert!(page.contains("User-seen: SMTP acceptance"));
        // The server's latency (the watcher's) and the IDLE probes' finding, when measured.
        let mut r = day();
        if let Some(d) = r.delivery.as_mut() {
            d.server_latency_ms = LatencyMs {
                count: 5,
                p95: 300.0,
                ..LatencyMs::default()
            };
            d.server_measured_by = "watcher: 2 mailboxes polled every 500 ms".into();
            d.idle_probe = Some(mbx_result::IdleProbeFigures {
                slow: true,
                note: "this server's IDLE is slow".into(),
                ..Default::default()
            });
        }
        let with_server = html(&r, &[]);
        assert!(
            with_server.contains("Server: SMTP acceptance to in the mailbox"),
            "{with_server}"
        );
        assert!(with_server.contains("watcher: 2 mailboxes polled every 500 ms"));
        assert!(
            with_server.contains("IDLE: this server&#39;s IDLE is slow")
                || with_server.contains("IDLE: this server's IDLE is slow"),
            "{with_server}"
        );
        assert!(page.contains("<td>check_inbox</td>"));
        assert!(page.contains("<th class=\"n\">Failed: timeout</th>"));
        assert!(page.contains("<td>smtp</td><td>DATA end</td><td class=\"n\">998</td>"));
        assert!(page.contains("<td class=\"pass\">Pass</td>"), "{page}");
        assert!(page.contains("<td class=\"fail\">Fail</td>"));
        assert!(page.contains("Not judged: no copy was delivered"));
        assert!(page.contains("id=\"overall\">Fail</span>"), "{page}");
        assert!(page.contains("r20261127T1000/loadgen3/17"));
        assert!(page.contains("id=\"lost-copies\""));
        assert!(page.contains("r20261127T1000/loadgen4/2"));
        assert!(page.contains("Measured by: idle"));
        assert!(page.contains("smtp+starttls://127.0.0.1:587"));
        assert!(page.contains("<td>desktop_imap</td>"));
        // Completed and failed per second, unfinished, task latency, delivery latency.
        assert_eq!(page.matches("<svg").count(), 4, "{page}");
        assert!(page.contains("Tasks unfinished"));
        // Self-contained: no script, no network resource.
        assert!(!page.contains("src=\"http") && !page.contains("href=\"http"));
        assert!(!page.contains("NaN"));
    }

    /// An init-only result: its figures and its charts, no empty task, delivery or error
    /// sections.
    #[test]
    fn loadgen_report_of_an_init_has_no_empty_sections() {
        let mut s = sample(10.0);
        s.dispatched = 0;
        s.completed = 0;
        s.failed = 0;
        s.unfinished = 0;
        s.task_p50_ms = None;
        s.task_p95_ms = None;
        s.task_max_ms = None;
        s.delivery_p95_ms = None;
        s.appended = Some(1000);
        s.appended_bytes = Some(75_000_000);
        let mut r = init_only();
        r.commands.clear();
        let page = html(&r, &[s]);
        for present in ["Verdict", "Run", "Initialization", "Time Series"] {
            assert!(h2(&page, present), "{present} missing");
        }
        for absent in [
            "Tasks",
            "Protocol Commands",
            "Delivery",
            "Errors",
            "Test Log",
        ] {
            assert!(!h2(&page, absent), "{absent} present");
        }
        assert!(page.contains("<td class=\"n\">1000</td>"));
        assert!(page.contains("Initialization: messages appended per second"));
        assert_eq!(page.matches("<svg").count(), 2, "{page}");
        assert!(page.contains("Initialization target (messages per mailbox)"));
        assert!(page.contains("id=\"overall\">Pass</span>"));
    }

    /// No samples, no tasks, no checks: the page renders with no time series and says the
    /// verdict judged nothing.
    #[test]
    fn loadgen_report_without_samples_or_tasks_renders() {
        let mut r = init_only();
        r.init = None;
        r.commands.clear();
        r.verdict = Verdict::of(Vec::new());
        r.stopped = Stopped::new(StopReason::Interrupted, "Ctrl-C").in_phase("init");
        r.test.interrupted = true;
        let page = html(&r, &[]);
        assert!(!h2(&page, "Time Series"));
        assert!(!h2(&page, "Tasks"));
        assert!(!h2(&page, "Initialization"));
        assert!(page.contains("No check was judged."));
        assert!(!page.contains("<svg"));
        assert!(page.contains("The test was interrupted in its init phase (interrupted): Ctrl-C."));
        assert!(page.ends_with("</html>"));
    }

    /// The overload guard's stop is said in words, with the figures.
    #[test]
    fn loadgen_report_says_the_overload_guard_stopped_the_run() {
        let mut r = day();
        r.overloaded = true;
        r.max_unfinished = 80;
        let page = html(&r, &[]);
        assert!(page.contains(
            "The overload guard stopped the run: 80 tasks unfinished at once, over the limit of 75 (1.5 per user)."
        ));
        assert!(page.contains("80 (overload limit 75: exceeded, the run stopped)"));
    }

    /// A folder is read as the storage reader reads one: a torn last sample is skipped with a
    /// note, a sample file named out of the folder is refused, and a storage result is not a
    /// loadgen result.
    #[test]
    fn loadgen_folder_reading_follows_the_storage_rules() {
        let dir = tempfile::tempdir().expect("tempdir");
        let write = |r: &LoadgenResult| {
            std::fs::write(
                dir.path().join("result.json"),
                serde_json::to_string(r).expect("json"),
            )
            .expect("write")
        };
        write(&day());
        let line = serde_json::to_string(&sample(10.0)).expect("sample");
        std::fs::write(
            dir.path().join("samples.jsonl"),
            format!("{line}\n{}", &line[..line.len() / 2]),
        )
        .expect("write");
        let f = super::load(dir.path()).expect("load");
        assert_eq!(f.samples.len(), 1);
        assert_eq!(f.notes.len(), 1, "{:?}", f.notes);
        assert!(
            f.notes[0].contains("line 2, the last, is incomplete"),
            "{:?}",
            f.notes
        );
        assert!(super::render(&f).contains("line 2, the last, is incomplete"));

        let mut r = day();
        r.samples_file = "../samples.jsonl".into();
        write(&r);
        assert!(super::load(dir.path()).is_err());

        let mut r = day();
        r.kind = "storage".into();
        write(&r);
        let e = super::load(dir.path())
            .expect_err("not loadgen")
            .to_string();
        assert!(e.contains("not an mbxstress loadgen result"), "{e}");
    }

    #[test]
    fn the_loadgen_report_of_a_folder_shows_its_servers_before_the_commands() {
        use crate::loadgen_servers::tests::{sample, watch};
        use crate::loadgen_servers::TITLE;
        let dir = tempfile::tempdir().expect("tempdir");
        // A real loadgen result (submit: commands, no tasks), with a server watched.
        let mut v: serde_json::Value = serde_json::from_str(include_str!(
            "../../../bench/results/loadgen-smtp-2026-11-27T112107Z/mbxstress-round2-c10-result.json"
        ))
        .expect("a result");
        v["servers"] = serde_json::to_value([watch("mail1")]).expect("servers");
        std::fs::write(dir.path().join("result.json"), v.to_string()).expect("write");
        std::fs::create_dir(dir.path().join("servers")).expect("mkdir");
        let lines: Vec<String> = [sample(1.0, 5.0), sample(2.0, 6.0)]
            .iter()
            .map(|s| serde_json::to_string(s).expect("json"))
            .collect();
        std::fs::write(dir.path().join("servers/mail1.jsonl"), lines.join("\n")).expect("write");
        let folder = super::load(dir.path()).expect("load");
        let page = super::render(&folder);
        let at = |h: &str| page.find(&format!("<h2>{h}</h2>"));
        assert!(at(TITLE).is_some(), "{page}");
        assert!(at("Run") < at(TITLE) && at(TITLE) < at("Protocol Commands"));
        assert!(page.contains("mail1: CPU busy (%) and disk latency (ms)"));
        // Without its folder (the in-memory report): the table, no chart.
        let page = html(&folder.result, &[]);
        assert!(page.contains("id=\"servers\"") && !page.contains("mail1: CPU busy"));
    }
}
