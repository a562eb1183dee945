//! The HTML report of a run: one self-contained file (inline CSS and SVG, no scripts, no network)
//! with Jetstress's sections in Jetstress's order and column names, plus the verdict, latency
//! percentiles, time-series charts and the resolved configuration. Rendered with maud (escaped).

use maud::{html, Markup, PreEscaped, DOCTYPE};
use mbx_result::{CheckState, Io12, RunResult, Sample, SampleInstance, StopReason};

use crate::folder::RunFolder;
use crate::svg::{LineChart, Series};

/// Jetstress's section titles, in report order (tests check them).
pub use crate::columns::SECTIONS;

/// The title of a Soft Recovery result's table (Jetstress's "Soft-Recovery Statistics").
pub const SOFT_RECOVERY: &str = "Soft Recovery Statistics";

/// Log files replayed and elapsed seconds per database, the Avg and Sum rows, and seconds per log
/// (average elapsed / average logs, as ESRP quotes it).
fn soft_recovery_table(s: &mbx_result::Sections) -> Markup {
    let rows = &s.soft_recovery;
    let n = rows.len() as f64;
    html! {
        table #soft-recovery {
            tr { th { "Database Instance" } th.n { "Log files replayed" } th.n { "Elapsed seconds" } }
            @for row in rows { tr { td { (row.instance) } td.n { (row.log_files_replayed) } td.n { (f3(row.elapsed_s)) } } }
            @if let Some((logs, secs)) = mbx_result::SoftRecoveryRow::averages(rows) {
                tr { td { "Avg" } td.n { (f3(logs)) } td.n { (f3(secs)) } }
                tr { td { "Sum" } td.n { (f3(logs * n)) } td.n { (f3(secs * n)) } }
            }
        }
        @if let Some(spl) = s.seconds_per_log { p { "Seconds per log (average elapsed / average log files): " (f3(spl)) } }
    }
}

pub use crate::columns::IO12_COLUMNS;

pub(crate) const CSS: &str = "
body { font-family: 'Segoe UI', Arial, sans-serif; font-size: 12px; color: #222; margin: 24px; max-width: 1200px; }
h1 { font-size: 20px; margin-bottom: 4px; }
h2 { font-size: 15px; border-bottom: 2px solid #0072B2; padding-bottom: 2px; margin-top: 28px; }
table { border-collapse: collapse; margin: 6px 0; }
th, td { border: 1px solid #bbb; padding: 3px 6px; text-align: left; vertical-align: top; }
th { background: #eef3f8; font-weight: 600; }
td.n, th.n { text-align: right; font-variant-numeric: tabular-nums; }
table.kv td:first-child { font-weight: 600; background: #f6f8fa; }
.pass { color: #006b3c; font-weight: bold; }
.notjudged { color: #8a5a00; font-weight: bold; }
.fail { color: #b00020; font-weight: bold; }
.warn { color: #8a5a00; }
pre { background: #f6f8fa; border: 1px solid #ddd; padding: 8px; overflow-x: auto; font-size: 11px; }
.charts { display: flex; flex-wrap: wrap; gap: 12px; }
.note { color: #555; }
.banner { border: 2px solid #b00020; background: #fdecea; color: #7a0016; padding: 8px 12px; margin: 12px 0; font-size: 13px; }
.banner ul { margin: 4px 0 0 0; }
@media print {
  body { margin: 0; max-width: none; font-size: 10px; }
  h2 { page-break-after: avoid; }
  table, .chart { page-break-inside: avoid; }
  pre { white-space: pre-wrap; }
}
";

/// A verdict's or a check's state as the report says it (Jetstress's Pass and Fail).
pub(crate) fn state_word(s: CheckState) -> &'static str {
    match s {
        CheckState::Pass => "Pass",
        CheckState::Fail => "Fail",
        CheckState::NotJudged => "Not judged",
    }
}

/// The CSS class of a state.
pub(crate) fn state_class(s: CheckState) -> &'static str {
    match s {
        CheckState::Pass => "pass",
        CheckState::Fail => "fail",
        CheckState::NotJudged => "notjudged",
    }
}

/// How the test stopped, when it did not run its course (`None` when it did): the reason, the
/// phase and the message.
fn stop_line(r: &RunResult) -> Option<String> {
    // Results of versions without `stopped` say only `test.interrupted`.
    stop_sentence(
        &r.stopped,
        r.test.interrupted,
        "The test was interrupted before the end of its duration: a partial result.",
    )
}

/// How a test stopped, when it did not run its course (`None` when it did): the reason, the
/// phase and the message; `interrupted_text` when it ran its course but says it was
/// interrupted.
pub(crate) fn stop_sentence(
    s: &mbx_result::Stopped,
    interrupted: bool,
    interrupted_text: &str,
) -> Option<String> {
    if s.reason.ran_to_completion() {
        return interrupted.then(|| interrupted_text.to_string());
    }
    let what = match s.reason {
        StopReason::Interrupted => "The test was interrupted",
        _ => "The test stopped early",
    };
    let phase = s
        .phase
        .as_deref()
        .map(|p| format!(" in its {p} phase"))
        .unwrap_or_default();
    Some(format!(
        "{what}{phase} ({}): {}.",
        s.reason.name().replace('_', " "),
        s.message
    ))
}

pub(crate) fn f3(v: f64) -> String {
    format!("{v:.3}")
}

fn io_row(name: &str, io: &Io12) -> Markup {
    html! { tr { td { (name) } @for x in io.values() { td.n { (f3(x)) } } } }
}

fn io_table(rows: &[(String, Io12)]) -> Markup {
    html! {
        table {
            tr { th { "MSExchange Database ==> Instances" } @for c in IO12_COLUMNS { th.n { (c) } } }
            @for (name, io) in rows { (io_row(name, io)) }
        }
    }
}

pub(crate) fn kv(rows: &[(&str, String)]) -> Markup {
    html! { table.kv { @for (k, v) in rows { tr { td { (k) } td { (v) } } } } }
}

/// Time series per instance from the samples: x = seconds since the start of measurement.
fn series(samples: &[Sample], names: &[String], f: impl Fn(&SampleInstance) -> f64) -> Vec<Series> {
    let mut t = 0.0;
    let mut out: Vec<Series> = names
        .iter()
        .map(|n| Series {
            name: n.clone(),
            points: Vec::new(),
        })
        .collect();
    for s in samples {
        t += s.interval_s;
        for i in &s.instances {
            if let Some(ser) = out.iter_mut().find(|x| x.name == i.name) {
                ser.points.push((t, f(i)));
            }
        }
    }
    out
}

/// One figure of a sample's instance.
type Figure = fn(&SampleInstance) -> f64;

fn charts(samples: &[Sample], names: &[String]) -> Markup {
    let mut list = vec![
        LineChart {
            title: "Transactional IOPS (DB reads + writes per second)".into(),
            x_label: "seconds of measurement".into(),
            y_label: "IOPS".into(),
            series: series(samples, names, SampleInstance::transactional_iops),
        },
        LineChart {
            title: "Throughput (database and log, MB/s)".into(),
            x_label: "seconds of measurement".into(),
            y_label: "MB/s".into(),
            series: series(samples, names, SampleInstance::throughput_mb_per_s),
        },
    ];
    let latencies: [(&str, Figure); 3] = [
        ("Database read latency (ms, sample average)", |i| {
            i.db_read_avg_latency_ms
        }),
        ("Database write latency (ms, sample average)", |i| {
            i.db_write_avg_latency_ms
        }),
        ("Log write latency (ms, sample average)", |i| {
            i.log_write_avg_latency_ms
        }),
    ];
    for (title, f) in latencies {
        list.push(LineChart {
            title: title.into(),
            x_label: "seconds of measurement".into(),
            y_label: "ms".into(),
            series: series(samples, names, f),
        });
    }
    if samples.iter().any(|s| s.pacing.is_some()) {
        // Open loop: how far the sessions fell behind the arrivals, per sample.
        let mut t = 0.0;
        let mut lines: [Series; 3] = ["backlog (max)", "late", "dropped"].map(|n| Series {
            name: n.into(),
            points: Vec::new(),
        });
        for s in samples {
            t += s.interval_s;
            if let Some(p) = s.pacing {
                for (line, v) in lines.iter_mut().zip([p.backlog_max, p.late, p.dropped]) {
                    line.points.push((t, v as f64));
                }
            }
        }
        list.push(LineChart {
            title: "Open loop: arrivals waiting (most at once), late and dropped transactions per sample".into(),
            x_label: "seconds of measurement".into(),
            y_label: "transactions".into(),
            series: lines.into(),
        });
    }
    html! { div.charts { @for c in &list { (c.render()) } } }
}

/// The title of the Database Backup table (Jetstress's).
pub const BACKUP_SECTION: &str = "Database Backup Statistics";
/// The title of the checksum table.
pub const CHECKSUM_SECTION: &str = "Database Checksum Statistics";

/// The tables of a Backup or Checksum result (Jetstress's "Database Backup Statistics" with its
/// Avg and Sum rows; the checksum counts per file). Empty for a Performance result. The pages
/// found bad are in the errors section, as for every test type.
fn pass_sections(r: &mbx_result::RunResult) -> Markup {
    let s = &r.sections;
    html! {
        @if !s.backup.is_empty() {
            h2 { (BACKUP_SECTION) }
            table {
                tr { th { "Database Instance" } th.n { "Database Size (MBytes)" } th.n { "Elapsed Backup Time (s)" } th.n { "MBytes Transferred/sec" } }
                @for b in &s.backup { tr { td { (b.instance) } td.n { (f3(b.database_size_mb)) } td.n { (f3(b.elapsed_s)) } td.n { (f3(b.mb_per_s)) } } }
                @if let Some(avg) = s.backup_avg_mb_per_s { tr { td { "Avg" } td.n {} td.n {} td.n { (f3(avg)) } } }
                @if let Some(sum) = s.backup_sum_mb_per_s { tr { td { "Sum" } td.n {} td.n {} td.n { (f3(sum)) } } }
            }
        }
        @if !s.checksum.is_empty() {
            h2 { (CHECKSUM_SECTION) }
            table {
                tr { th { "Database / Log Folder" } th.n { "Seen Pages" } th.n { "Bad Pages" } th.n { "Correctable Pages" } th.n { "Wrong Page-Number Pages" } th.n { "Bytes" } th.n { "Elapsed (s)" } th.n { "MBytes/sec" } }
                @for c in &s.checksum { tr { td { (c.database_path) } td.n { (c.seen_pages) } td.n { (c.bad_pages) } td.n { (c.correctable_pages) } td.n { (c.wrong_page_number_pages) } td.n { (c.bytes) } td.n { (f3(c.elapsed_s)) } td.n { (f3(c.mb_per_s())) } } }
            }
        }
    }
}

/// Errors counted per volume (an entry without one counts under "-"), in volume order.
/// `mbxstress doctor`'s checks as the run performed them first (they never change the verdict).
fn doctor_section(d: &mbx_result::DoctorReport) -> Markup {
    html! {
        h2 id="doctor" { "Preflight Checks" }
        p.note { "What `mbxstress doctor` found before the test (the fast subset); findings never change the verdict." }
        table id="doctor-checks" {
            tr { th { "Status" } th { "Check" } th { "Subject" } th { "Fact" } th { "Fix" } }
            @for c in &d.checks {
                @let class = match c.status {
                    mbx_result::DoctorStatus::Fail => "fail",
                    mbx_result::DoctorStatus::Warn => "warn",
                    _ => "",
                };
                tr class=(class) { td { (c.status.name()) } td { (c.name) } td { (c.subject) } td { (c.fact) } td { (c.fix) } }
            }
        }
    }
}

fn errors_per_volume(errors: &[mbx_result::ErrorEntry]) -> Vec<(String, u64)> {
    let mut per: std::collections::BTreeMap<String, u64> = std::collections::BTreeMap::new();
    for e in errors {
        let v = per
            .entry(e.volume.clone().unwrap_or_else(|| "-".into()))
            .or_default();
        *v = v.saturating_add(e.count);
    }
    // The counts per volume add up to every error's count (both saturate alike).
    debug_assert_eq!(
        per.values().fold(0u64, |a, n| a.saturating_add(*n)),
        total_errors(errors)
    );
    per.into_iter().collect()
}

/// Every error's count, added (saturating).
fn total_errors(errors: &[mbx_result::ErrorEntry]) -> u64 {
    errors.iter().fold(0, |a, e| a.saturating_add(e.count))
}

/// Errors counted per instance and class (an entry without an instance counts under "-"), in
/// instance then class order.
fn errors_per_instance(errors: &[mbx_result::ErrorEntry]) -> Vec<(String, String, u64)> {
    let mut per: std::collections::BTreeMap<(String, String), u64> =
        std::collections::BTreeMap::new();
    for e in errors {
        let who = e.instance.clone().unwrap_or_else(|| "-".into());
        let v = per.entry((who, e.class.to_string())).or_default();
        *v = v.saturating_add(e.count);
    }
    // The counts per instance and class add up to every error's count.
    debug_assert_eq!(
        per.values().fold(0u64, |a, n| a.saturating_add(*n)),
        total_errors(errors)
    );
    per.into_iter().map(|((i, c), n)| (i, c, n)).collect()
}

/// Renders the report of a run: its result, samples (charts) and log; its flags (why the result
/// is not a complete, passing measurement) as a banner at the top, and the notes of reading it.
/// The sections in Jetstress's order, each from a function of its own.
pub fn render(run: &RunFolder) -> String {
    let RunFolder {
        result: r,
        samples,
        log,
        flags,
        notes,
        ..
    } = run;
    let names: Vec<String> = r.instances.iter().map(|i| i.name.clone()).collect();
    let markup = html! {
        (DOCTYPE)
        html lang="en" {
            (page_head(html! { "mbxstress " (r.test.test_type) " test report: " (r.test.machine) }))
            body {
                h1 { "mbxstress " (r.test.test_type) " test result report" }
                (flags_banner(flags))
                p.note { "Sections and column names follow Microsoft Exchange Jetstress 2013 so that results compare; how each figure is measured: docs/method.md." }

                (test_summary(r))
                (verdict_section(r))
                @if let Some(t) = &r.tuning { (tuning_section(t)) }
                @if let Some(t) = &r.throughput { (throughput_section(t)) }
                (pass_sections(r))
                @if let Some(d) = &r.doctor {
                    (doctor_section(d))
                }
                @if !r.errors.is_empty() { (errors_section(&r.errors)) }
                (sizing_and_configuration(r))
                (io_sections(r))
                (latency_percentiles(r))
                @if let Some(m) = &r.max_latency { (max_latency_section(m)) }
                @if let Some(p) = &r.pacing { (pacing_section(p)) }

                h2 { "Time Series" }
                @for n in notes { p.note { (n) } }
                @if samples.is_empty() { p.note { "No samples were recorded (the measured phase was shorter than one sample interval)." } }
                @else { (charts(samples, &names)) }

                (host_section(r))

                h2 { (SECTIONS[9]) }
                pre { @for l in log { (l) "\n" } }

                h2 { "Resolved Configuration" }
                pre { (serde_json::to_string_pretty(&r.config).unwrap_or_default()) }
            }
        }
    };
    crate::markup_check::checked(markup, "report.html")
}

/// The banner of a result's flags (nothing when it has none).
pub(crate) fn flags_banner(flags: &[crate::flags::Flag]) -> Markup {
    html! {
        @if !flags.is_empty() {
            div.banner role="alert" id="flags" {
                strong { "Not a complete, passing measurement: do not use these figures as the storage's capability." }
                ul { @for f in flags { li data-code=(f.code) { (f.message) } } }
            }
        }
    }
}

/// Jetstress's Test Summary, and how the test stopped when it did not run its course.
fn test_summary(r: &RunResult) -> Markup {
    let profile = &r.profile.profile;
    html! {
        h2 { (SECTIONS[0]) }
        (kv(&[
            ("Overall Test Result", state_word(r.verdict.state()).into()),
            ("Machine Name", r.test.machine.clone()),
            ("Test Description", format!("{} test, {} mailboxes x {} IOPS, {} database(s), {} cop{}", r.test.test_type, profile.mailboxes, profile.iops_per_mailbox, profile.databases, profile.copies_per_database, if profile.copies_per_database == 1 { "y" } else { "ies" })),
            ("Test Start Time", r.test.start.clone()),
            ("Test End Time", r.test.end.clone()),
            ("Collection Start Time", r.test.collection_start.clone()),
            ("Collection End Time", r.test.collection_end.clone()),
            ("mbxstress Version", r.test.tool_version.clone()),
            ("I/O Engine", format!("{} ({})", r.test.engine, if r.test.direct { "O_DIRECT" } else { "buffered: results measure memory" })),
            ("Operating System", r.test.os.clone()),
            ("Performance Log", r.samples_file.clone()),
        ]))
        @if let Some(line) = stop_line(r) { p.fail id="stopped" { (line) } }
    }
}

/// The verdict: each check with its value, limit and strict maximum, the overall state, and
/// the write-through findings that put the figures in doubt.
fn verdict_section(r: &RunResult) -> Markup {
    let verdict_state = r.verdict.state();
    html! {
        h2 { "Verdict" }
        table {
            tr { th { "Check" } th { "Measures" } th.n { "Value" } th.n { "Limit" } th.n title="The slowest single I/O of the measured phase, any instance (no limit applies to it)" { "Strict max" } th { "Result" } }
            @for c in r.verdict.checks() {
                tr data-check=(c.name) {
                    td { (c.name) }
                    td.measures { (c.measures().unwrap_or("")) }
                    td.n { @if c.state() == CheckState::NotJudged { "-" } @else { (f3(c.value)) } }
                    td.n { (f3(c.limit)) }
                    td.n.strict { @match r.strict_max_ms(c) { Some(ms) => { (f3(ms)) }, None => { "-" } } }
                    td class=(state_class(c.state())) {
                        (state_word(c.state()))
                        @if let Some(why) = c.reason() { ": " (why) }
                    }
                }
            }
        }
        @if r.verdict.checks().iter().any(|c| r.strict_max_ms(c).is_some()) {
            p.note id="verdict-maxima" { "A maximum-latency check judges Jetstress's maximum: the largest per-sample average latency, with the worst samples tolerated (--max-latency-errors), which can be below the average over every I/O. The strict maximum beside it is the slowest single I/O; no limit applies to it. Both are in full under Maximum Latency." }
        }
        p { "Overall: " span class=(state_class(verdict_state)) { (state_word(verdict_state)) } }
        @if let Some(d) = &r.doctor {
            @for c in d.write_through_findings() {
                p.fail id="write-through-finding" { "Write-through " (c.status.name()) " (" (c.subject) "): " (c.fact) ". The figures may measure a volatile cache, not the storage; see Preflight Checks." }
            }
        }
    }
}

/// Automatic Tuning: the session count chosen (or why none was) and its steps.
fn tuning_section(t: &mbx_result::Tuning) -> Markup {
    html! {
        h2 { "Automatic Tuning" }
        p {
            @match t.sessions {
                Some(n) => { "Chose " (n) " sessions: " @if let Some(p) = t.smallest_passing { (p) " is the smallest count whose IOPS met the target with every threshold met, and " (format!("{:.0}", t.headroom_pct)) "% more is kept as headroom (idle sessions to catch up after a stall)" } @else { "the smallest count whose IOPS met the target with every threshold met" } ", in " (t.steps.len()) " steps (" (format!("{:.0}", t.elapsed_s)) " s)." }
                None => { "No session count chosen (" (t.end) ") after " (t.steps.len()) " steps (" (format!("{:.0}", t.elapsed_s)) " s): the test did not run." }
            }
        }
        (crate::steps::section(&t.steps, crate::steps::Axis::Sessions))
    }
}

/// Disk Subsystem Throughput: the databases' size, the maximum found and what the test held.
fn throughput_section(t: &mbx_result::Throughput) -> Markup {
    html! {
        h2 { "Disk Subsystem Throughput" }
        p {
            "Databases of " (format!("{:.1}", t.database_bytes as f64 / 1_048_576.0)) " MiB in all, from "
            (t.capacity_pct) "% of " (format!("{:.1}", t.free_bytes as f64 / 1_048_576.0))
            " MiB free (25% reserved for growth). "
            @match (t.max_iops, t.held_iops) {
                (Some(max), Some(held)) => { "Maximum found: " (format!("{max:.0}")) " transactional IOPS in " (t.steps.len()) " steps (" (t.end) ", " (format!("{:.0}", t.elapsed_s)) " s); the test held " (t.throughput_pct) "% of it: " (format!("{held:.1}")) " IOPS." }
                _ => { "No target passed every threshold (" (t.end) ", " (t.steps.len()) " steps): the test did not run." }
            }
        }
        (crate::steps::section(&t.steps, crate::steps::Axis::TargetIops))
    }
}

/// The errors shown in full at the most; the rest are counted.
const ERRORS_SHOWN: usize = 200;

/// Errors: counted per volume and per instance and class, then each (the first 200).
fn errors_section(errors: &[mbx_result::ErrorEntry]) -> Markup {
    html! {
        h2 { "Errors" }
        p.note { "Errors are logged against the volume where they occurred, as Jetstress 2013 does; a single one fails the test." }
        table id="errors-per-volume" {
            tr { th { "Volume" } th.n { "Errors" } }
            @for (volume, count) in errors_per_volume(errors) { tr { td { (volume) } td.n { (count) } } }
        }
        table id="errors-per-instance" {
            tr { th { "Instance" } th { "Class" } th.n { "Errors" } }
            @for (instance, class, count) in errors_per_instance(errors) { tr { td { (instance) } td { (class) } td.n { (count) } } }
        }
        table id="errors" {
            tr { th { "Class" } th { "Instance" } th { "Volume" } th { "File" } th.n { "Offset" } th.n { "Page" } th.n { "Count" } th { "First at" } th { "Message" } }
            @for e in errors.iter().take(ERRORS_SHOWN) {
                tr.fail {
                    td { (e.class) } td { (e.instance.as_deref().unwrap_or("-")) } td { (e.volume.as_deref().unwrap_or("-")) }
                    td { (e.path.as_deref().unwrap_or("-")) } td.n { (e.offset.map_or("-".to_string(), |o| o.to_string())) }
                    td.n { (e.page.map_or("-".to_string(), |p| p.to_string())) } td.n { (e.count) } td { (e.first_at) } td { (e.message) }
                }
            }
        }
        @if errors.len() > ERRORS_SHOWN { p.note { (errors.len() - ERRORS_SHOWN) " more in result.json." } }
    }
}

/// Database Sizing and Throughput, System Parameters and Database Configuration.
fn sizing_and_configuration(r: &RunResult) -> Markup {
    let cfg = &r.config;
    let pct = |p: u32| format!("{p}%");
    html! {
        h2 { (SECTIONS[1]) }
        (kv(&[
            ("Achieved Transactional I/O per Second", f3(r.achieved_iops)),
            ("Target Transactional I/O per Second", format!("{}", r.target_iops)),
            ("Initial Database Size (bytes)", r.database_size_bytes.initial.to_string()),
            ("Final Database Size (bytes)", r.database_size_bytes.final_.to_string()),
            ("Database Files (Count)", r.instances.len().to_string()),
        ]))

        h2 { (SECTIONS[2]) }
        (kv(&[
            ("Thread Count", r.profile.threads.to_string()),
            ("Reactors (event-loop threads, databases partitioned among them)", r.test.reactors.to_string()),
            ("Minimum Database Cache (per database)", format!("{} MB", cfg.cache.min_mb_per_db)),
            ("Maximum Database Cache (per database, before scaling to 1/8 of the database)", format!("{} MB", cfg.cache.max_mb_per_db)),
            ("Insert Operations", pct(cfg.op_mix.insert_pct)),
            ("Delete Operations", pct(cfg.op_mix.delete_pct)),
            ("Replace Operations", pct(cfg.op_mix.replace_pct)),
            ("Read Operations", pct(cfg.op_mix.read_pct)),
            ("Lazy Commits", pct(cfg.op_mix.lazy_commit_pct)),
            ("Run Background Database Maintenance", if cfg.bdm { "True".into() } else { "False".into() }),
            ("Number of Copies per Database", r.profile.profile.copies_per_database.to_string()),
        ]))

        h2 { (SECTIONS[3]) }
        table {
            tr { th { "Instance" } th { "Log path" } th { "Database" } }
            @for i in &r.instances { tr { td { (i.name) } td { (i.log_path) } td { (i.database_path) } } }
        }
    }
}

/// The I/O tables of Jetstress's report: Soft Recovery (when run), Transactional, Background
/// Database Maintenance, Log Replication and Total I/O Performance.
fn io_sections(r: &RunResult) -> Markup {
    html! {
        @if !r.sections.soft_recovery.is_empty() {
            h2 { (SOFT_RECOVERY) }
            (soft_recovery_table(&r.sections))
        }

        h2 { (SECTIONS[4]) }
        (io_table(&r.instances.iter().map(|i| (i.name.clone(), i.transactional)).collect::<Vec<_>>()))

        h2 { (SECTIONS[5]) }
        table {
            tr { th { "MSExchange Database ==> Instances" } th.n { "Database Maintenance IO Reads/sec" } th.n { "Database Maintenance IO Reads Average Bytes" } }
            @for i in &r.instances { tr { td { (i.name) } td.n { (f3(i.bdm.reads_per_s)) } td.n { (f3(i.bdm.read_avg_bytes)) } } }
        }

        h2 { (SECTIONS[6]) }
        table {
            tr { th { "MSExchange Database ==> Instances" } th.n { "I/O Log Reads/sec" } th.n { "I/O Log Reads Average Bytes" } }
            @for i in &r.instances { tr { td { (i.name) } td.n { (f3(i.log_replication.reads_per_s)) } td.n { (f3(i.log_replication.read_avg_bytes)) } } }
        }

        h2 { (SECTIONS[7]) }
        (io_table(&r.instances.iter().map(|i| (i.name.clone(), i.total)).collect::<Vec<_>>()))
    }
}

/// The true per-I/O latency percentiles of each instance's streams.
fn latency_percentiles(r: &RunResult) -> Markup {
    html! {
        h2 { "Latency Percentiles (true per-I/O, ms)" }
        table {
            tr { th { "Instance" } th { "Stream" } th.n { "avg" } th.n { "p50" } th.n { "p90" } th.n { "p99" } th.n { "p99.9" } th.n { "max" } }
            @for i in &r.instances {
                @for (stream, p) in [("DB reads", i.latency_ms.db_read), ("DB writes", i.latency_ms.db_write), ("Log writes", i.latency_ms.log_write)] {
                    tr { td { (i.name) } td { (stream) } td.n { (f3(p.avg)) } td.n { (f3(p.p50)) } td.n { (f3(p.p90)) } td.n { (f3(p.p99)) } td.n { (f3(p.p999)) } td.n { (f3(p.max)) } }
                }
            }
        }
    }
}

/// Maximum Latency: Jetstress's judged maximum beside the strict figures.
fn max_latency_section(m: &mbx_result::MaxLatencyChecks) -> Markup {
    html! {
        h2 { "Maximum Latency" }
        p.note { "Jetstress's maximum latency is the largest per-sample average. With MaximumLatencyErrors = " (m.max_latency_errors) ", an instance fails a maximum-latency check only when more than " (m.max_latency_errors) " of its samples are over the limit; the judged value sets those aside. The strict figures are shown for honesty (docs/method.md, \"Maximum latency\")." }
        table id="max-latency" {
            tr { th { "Stream" } th.n { "Judged (ms)" } th.n { "Limit (ms)" } th.n { "Samples over" } th.n { "Strict sample maximum (ms)" } th.n { "Slowest I/O (ms)" } th { "Result" } }
            @for (stream, x) in [("DB reads", &m.db_read), ("Log writes", &m.log_write)] {
                @let state = if !x.judged { CheckState::NotJudged } else if x.pass { CheckState::Pass } else { CheckState::Fail };
                tr {
                    td { (stream) }
                    td.n { @if x.judged { (f3(x.tolerated_ms)) } @else { "-" } }
                    td.n { (f3(x.limit_ms)) } td.n { (x.samples_over) } td.n { (f3(x.sample_max_ms)) } td.n { (f3(x.per_io_max_ms)) }
                    td class=(state_class(state)) {
                        (state_word(state))
                        @if !x.judged { ": " (x.samples) " sample(s), " (m.max_latency_errors) " tolerated: the check could not fail" }
                    }
                }
            }
        }
    }
}

/// Pacing and Transaction Latency (an open-loop run's arrivals, and what a user waits).
fn pacing_section(p: &mbx_result::PacingResult) -> Markup {
    html! {
        h2 { "Pacing and Transaction Latency" }
        (kv(&[
            ("Pacing", match p.arrivals { Some(a) => format!("{} loop, {a} arrivals", p.mode), None => format!("{} loop (Jetstress's model)", p.mode) }),
            ("Transactions due", p.transactions_arrived.to_string()),
            ("Transactions started", p.transactions_started.to_string()),
            (&*format!("Late (started more than {} ms after due)", f3(p.late_threshold_ms)), p.transactions_late.to_string()),
            ("Dropped (waited too long, counted, never retried)", p.transactions_dropped.to_string()),
            ("Backlog, most arrivals waiting at once", p.backlog_max.to_string()),
        ]))
        table id="transaction-latency" {
            tr { th { "Transaction latency (ms)" } th.n { "avg" } th.n { "p50" } th.n { "p90" } th.n { "p99" } th.n { "p99.9" } th.n { "max" } }
            @for (what, x) in [("from submission (service)", p.transaction_latency_ms), ("from arrival (what a user waits)", p.latency_from_arrival_ms)] {
                tr { td { (what) } td.n { (f3(x.avg)) } td.n { (f3(x.p50)) } td.n { (f3(x.p90)) } td.n { (f3(x.p99)) } td.n { (f3(x.p999)) } td.n { (f3(x.max)) } }
            }
        }
        @if p.transactions_dropped > 0 {
            p.fail { (p.transactions_dropped) " transaction(s) were dropped: the storage (or the sessions) fell behind the target." }
        }
    }
}

/// Host System Performance: the counters, peak memory and data integrity.
fn host_section(r: &RunResult) -> Markup {
    let h = &r.host;
    let g = &r.integrity;
    html! {
        h2 { (SECTIONS[8]) }
        table {
            tr { th { "Counter" } th.n { "Average" } th.n { "Minimum" } th.n { "Maximum" } }
            tr { td { "% Processor Time" } td.n { (f3(h.cpu_pct.avg)) } td.n { (f3(h.cpu_pct.min)) } td.n { (f3(h.cpu_pct.max)) } }
            tr { td { "Available MBytes" } td.n { (f3(h.available_mb.avg)) } td.n { (f3(h.available_mb.min)) } td.n { (f3(h.available_mb.max)) } }
            tr { td { "Database Page Fault Stalls/sec" } td.n { (f3(h.page_fault_stalls_per_s.avg)) } td.n { (f3(h.page_fault_stalls_per_s.min)) } td.n { (f3(h.page_fault_stalls_per_s.max)) } }
        }
        p.note { "mbxstress process peak resident memory: " (format!("{:.1}", h.process_peak_rss_mb)) " MB. Data integrity: " (g.pages_verified) " pages verified" (checksummed_note(g)) ", " (g.bad_pages) " bad, " (g.correctable_pages) " correctable, " (g.wrong_page_number_pages) " misplaced, " (g.stale_pages) " stale." @if g.log_problems > 0 { " Log and checkpoint: " (g.log_problems) " problem(s), listed with the errors." } }
    }
}

/// The `<head>` of every report page: its title and the stylesheet.
pub(crate) fn page_head(title: Markup) -> Markup {
    html! {
        head {
            meta charset="utf-8";
            meta name="generator" content="mbxstress";
            title { (title) }
            style { (PreEscaped(CSS)) }
        }
    }
}

/// find-max.html: the answer, the curve of steps (a table and charts against the target) and
/// the configuration.
pub fn render_find_max(f: &mbx_result::FindMax) -> String {
    let cfg = &f.config;
    let markup = html! {
        (DOCTYPE)
        html lang="en" {
            (page_head(html! { "mbxstress find-max: " (f.machine) }))
            body {
                h1 { "mbxstress find-max" }
                @match (f.answer_words(), f.mailboxes, f.iops) {
                    (Some(words), Some(m), Some(iops)) => {
                        p.pass { "Answer: " (words) ". " (m) " mailboxes at " (f.iops_per_mailbox) " IOPS per mailbox (" (format!("{iops:.1}")) " transactional IOPS) passed every threshold in every try." @if f.lower_bound { " No step above failed before the search stopped (" (f.end) "), so the largest count is not known." } }
                    }
                    _ => { p.fail { "No mailbox count passed every threshold (" (f.end) ")." } }
                }
                @if let Some(m) = &f.stop_message {
                    p.fail { "The search stopped: " (m) "." }
                }
                (kv(&[
                    ("Machine Name", f.machine.clone()),
                    ("Start", f.start.clone()),
                    ("mbxstress Version", f.tool_version.clone()),
                    ("Search", format!("{} steps, ended: {}, {:.0} s", f.steps.len(), f.end, f.elapsed_s)),
                    ("Databases", format!("{} database(s) sized for {} mailboxes x {} MB, {} cop{}", cfg.profile.databases, cfg.profile.mailboxes, cfg.profile.mailbox_quota_mb, cfg.profile.copies_per_database, if cfg.profile.copies_per_database == 1 { "y" } else { "ies" })),
                    ("Thresholds", format!("read avg {} / max {} ms, log write avg {} / max {} ms, stalls {}/s, IOPS within {}% of target", cfg.thresholds.db_read_avg_ms, cfg.thresholds.db_read_max_ms, cfg.thresholds.log_write_avg_ms, cfg.thresholds.log_write_max_ms, cfg.thresholds.page_fault_stalls_per_s, cfg.thresholds.iops_margin * 100.0)),
                ]))
                p.note { "Each step is a short Performance run on the same databases at the target of its mailbox count: attain the cache, wait until read latency is stable, measure. Confirm the answer with a full-length run (`mbxstress run --mailboxes N`)." }
                h2 { "Steps" }
                (crate::steps::section(&f.steps, crate::steps::Axis::TargetIops))
                h2 { "Resolved Configuration" }
                pre { (serde_json::to_string_pretty(cfg).unwrap_or_default()) }
            }
        }
    };
    crate::markup_check::checked(markup, "find-max.html")
}

/// How many of the pages verified were checksummed whole (the rest passed by header and block
/// stamps); nothing when all were, or for results of versions that checksummed every page and
/// did not count them.
fn checksummed_note(i: &mbx_result::Integrity) -> String {
    match i.pages_checksummed {
        Some(m) if m < i.pages_verified => {
            format!(
                " ({m} checksummed whole, every BDM read among them; the others by header and \
                 block stamps)"
            )
        }
        _ => String::new(),
    }
}

#[cfg(test)]
mod tests {
    use super::{checksummed_note, errors_per_instance, errors_per_volume};
    use mbx_result::{Check, ErrorEntry, Integrity, RunResult, StopReason, Stopped, Verdict};

    fn fixture() -> RunResult {
        let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("tests/fixtures/mbxstress-result.json");
        serde_json::from_str(&std::fs::read_to_string(path).expect("fixture")).expect("result")
    }

    fn render(r: RunResult) -> String {
        super::render(&crate::folder::RunFolder::of_result(r, ".".into()))
    }

    /// A check that judged nothing shows "Not judged" and its reason, never a value that passes;
    /// the overall result says so too; a stop names its phase.
    #[test]
    fn a_check_not_judged_shows_as_such_with_its_reason() {
        let mut r = fixture();
        r.verdict = Verdict::of(vec![
            Check::new("db_read_latency_avg_ms", 1.5, 20.0, true),
            Check::not_judged("db_read_latency_max_ms", 100.0, "4 sample(s) per instance"),
        ]);
        if let Some(m) = &mut r.max_latency {
            m.db_read.judged = false;
            m.db_read.pass = false;
        }
        r.stopped = Stopped::new(StopReason::Interrupted, "interrupted while shutting down")
            .in_phase("shutdown");
        let html = render(r);
        assert!(
            html.contains("Not judged: 4 sample(s) per instance"),
            "{html}"
        );
        assert!(
            html.contains("<span class=\"notjudged\">Not judged</span>"),
            "{html}"
        );
        assert!(html.contains("in its shutdown phase"), "{html}");
        // A result with no figures of its own (the test did not run) still renders.
        let mut r = fixture();
        r.instances.clear();
        r.tuning = Some(mbx_result::Tuning::default());
        assert!(render(r).contains("Automatic Tuning"));
    }

    fn entry(volume: Option<&str>, count: u64) -> ErrorEntry {
        ErrorEntry {
            class: "hung_io".into(),
            volume: volume.map(str::to_string),
            count,
            ..Default::default()
        }
    }

    #[test]
    fn errors_are_counted_per_instance_and_class() {
        let mut a = entry(None, 2);
        a.instance = Some("I.2".into());
        let mut b = entry(None, 3);
        b.instance = Some("I.1".into());
        b.class = "io_error".into();
        let mut c = entry(None, 4);
        c.instance = Some("I.2".into());
        let d = entry(None, 1);
        assert_eq!(
            errors_per_instance(&[a, b, c, d]),
            vec![
                ("-".to_string(), "hung_io".to_string(), 1),
                ("I.1".to_string(), "io_error".to_string(), 3),
                ("I.2".to_string(), "hung_io".to_string(), 6)
            ]
        );
    }

    #[test]
    fn errors_are_counted_per_volume() {
        let errors = [
            entry(Some("/mnt/e"), 2),
            entry(None, 1),
            entry(Some("/mnt/d"), 5),
            entry(Some("/mnt/e"), 3),
        ];
        assert_eq!(
            errors_per_volume(&errors),
            vec![
                ("-".to_string(), 1),
                ("/mnt/d".to_string(), 5),
                ("/mnt/e".to_string(), 5)
            ]
        );
    }

    #[test]
    fn the_integrity_note_says_how_many_pages_were_checksummed_whole() {
        let note = |verified, checksummed| {
            checksummed_note(&Integrity {
                pages_verified: verified,
                pages_checksummed: checksummed,
                ..Integrity::default()
            })
        };
        assert_eq!(
            note(1000, Some(104)),
            " (104 checksummed whole, every BDM read among them; the others by header and block stamps)"
        );
        // None checksummed (--checksum-reads-pct 0, BDM off): said so.
        assert_eq!(
            note(1000, Some(0)),
            " (0 checksummed whole, every BDM read among them; the others by header and block stamps)"
        );
        // Every page checksummed, or a result of a version that did not count: nothing to add.
        for (verified, checksummed) in [(1000, Some(1000)), (1000, None), (0, Some(0))] {
            assert_eq!(note(verified, checksummed), "");
        }
    }

    /// The cells of every table but the key-value ones: (class attribute, text), text without
    /// inner tags.
    fn cells(html: &str) -> Vec<(String, String)> {
        let mut out = Vec::new();
        for table in html.split("<table").skip(1) {
            let table = table.split("</table>").next().unwrap_or("");
            if table.starts_with(" class=\"kv\"") {
                continue;
            }
            for cell in table.split("<td").skip(1) {
                let (attrs, rest) = cell.split_once('>').unwrap_or(("", ""));
                let inner = rest.split("</td>").next().unwrap_or("");
                let mut text = String::new();
                let mut in_tag = false;
                for ch in inner.chars() {
                    match ch {
                        '<' => in_tag = true,
                        '>' => in_tag = false,
                        c if !in_tag => text.push(c),
                        _ => {}
                    }
                }
                out.push((attrs.to_string(), text.trim().to_string()));
            }
        }
        out
    }

    /// Issue 25, case 17: text is left-aligned and numbers right-aligned: every cell holding a
    /// number is of class `n` (right-aligned), and no cell holding text is.
    #[test]
    fn numbers_are_right_aligned_and_text_left_aligned() {
        let mut r = fixture();
        r.errors = vec![ErrorEntry {
            class: "bad_page".into(),
            instance: Some("Instance.1".into()),
            volume: Some("vda".into()),
            path: Some("/db/mbxstress001.edb".into()),
            offset: Some(163_840),
            page: Some(5),
            count: 1,
            message: "fails its checksum".into(),
            ..ErrorEntry::default()
        }];
        let html = render(r);
        assert!(
            html.contains("th, td { border: 1px solid #bbb; padding: 3px 6px; text-align: left;")
        );
        assert!(html.contains("td.n, th.n { text-align: right;"));
        let cells = cells(&html);
        assert!(cells.len() > 40, "{} cells", cells.len());
        let (mut numbers, mut texts) = (0, 0);
        for (attrs, text) in &cells {
            let right = attrs.split_whitespace().any(|a| a == "class=\"n\"");
            if text.is_empty() || text == "-" {
                continue;
            }
            if text.replace(',', "").parse::<f64>().is_ok() {
                numbers += 1;
                assert!(right, "number {text:?} not right-aligned ({attrs:?})");
            } else {
                texts += 1;
                assert!(!right, "text {text:?} right-aligned ({attrs:?})");
            }
        }
        assert!(
            numbers > 20 && texts > 10,
            "{numbers} numbers, {texts} texts"
        );
    }
}
