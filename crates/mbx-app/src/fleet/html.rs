//! fleet.html: the aggregate first, then a section per host (state, clock, preflight checks, a
//! link to its report). Rendered with maud (every text escaped); figures right-aligned, text
//! left-aligned, as report.html.

use maud::{html, Markup, PreEscaped, DOCTYPE};
use mbx_result::DoctorStatus;

use super::summary::{FleetSummary, HostSummary};

const CSS: &str = "body{font-family:sans-serif;margin:2em}table{border-collapse:collapse}\
td,th{border:1px solid #999;padding:4px 8px;text-align:left;vertical-align:top}th{background:#eee}\
.n{text-align:right;font-variant-numeric:tabular-nums}.bad{color:#b00;font-weight:bold}";

/// The page.
pub fn page(s: &FleetSummary) -> String {
    let markup = html! {
        (DOCTYPE)
        html {
            head {
                meta charset="utf-8";
                title { "mbxstress fleet run" }
                style { (PreEscaped(CSS)) }
            }
            body {
                h1 { "Fleet run " (s.run_id) }
                @if s.partial {
                    p.bad { "Partial: a host failed or the run was interrupted; the aggregate covers the results that exist." }
                }
                @if let Some(k) = s.skew_ms {
                    p { (format!("Measured phases started within {k:.1} ms of each other (clock offsets corrected).")) }
                }
                (aggregate(s))
                @for w in &s.esrp.warnings {
                    p { "warning: " (w.source) ": " (w.message) }
                }
                @for host in &s.hosts {
                    (host_section(host))
                }
            }
        }
    };
    markup.into_string() + "\n"
}

/// The ESRP table: the aggregate row, then one per server.
fn aggregate(s: &FleetSummary) -> Markup {
    html! {
        h2 { "Aggregate (ESRP: sums of sums, means of means)" }
        table {
            tr {
                th { "server" }
                th.n { "transfers/s" }
                th.n { "reads/s" }
                th.n { "writes/s" }
                th.n { "read ms" }
                th.n { "write ms" }
                th.n { "log writes/s" }
                th.n { "log write ms" }
                th { "flags" }
            }
            @for f in s.esrp.aggregate.iter().chain(s.esrp.servers.iter()) {
                tr {
                    td { (f.machine) }
                    td.n { (format!("{:.2}", f.db_transfers_per_s)) }
                    td.n { (format!("{:.2}", f.db_reads_per_s)) }
                    td.n { (format!("{:.2}", f.db_writes_per_s)) }
                    td.n { (format!("{:.2}", f.db_read_avg_latency_ms)) }
                    td.n { (format!("{:.2}", f.db_write_avg_latency_ms)) }
                    td.n { (format!("{:.2}", f.log_writes_per_s)) }
                    td.n { (format!("{:.4}", f.log_write_avg_latency_ms)) }
                    td { (f.flags.join(", ")) }
                }
            }
        }
    }
}

/// One host: its state, clock, exclusion from the aggregate, doctor's checks, its files.
fn host_section(host: &HostSummary) -> Markup {
    let bad = |yes: bool| if yes { "bad" } else { "" };
    html! {
        h2 id=(host.name) { (host.name) }
        p {
            "ssh " (host.ssh) ": "
            span class=(bad(host.state == "failed")) { (host.state) }
            @if let Some(m) = &host.message { ": " (m) }
        }
        p {
            (format!("clock offset {:+.1} ms (round trip {:.1} ms)", host.clock_offset_ms, host.clock_rtt_ms))
            @if let Some(e) = host.start_error_ms {
                (format!("; measured from {e:+.1} ms of the agreed start"))
            }
        }
        @if let Some(m) = &host.excluded {
            p.bad { (m) }
        }
        @if let Some(d) = &host.doctor {
            h3 { "Preflight checks (mbxstress doctor)" }
            table {
                tr { th { "status" } th { "check" } th { "subject" } th { "fact" } th { "fix" } }
                @for c in &d.checks {
                    tr {
                        td class=(bad(matches!(c.status, DoctorStatus::Warn | DoctorStatus::Fail))) {
                            (c.status.name())
                        }
                        td { (c.name) }
                        td { (c.subject) }
                        td { (c.fact) }
                        td { (c.fix) }
                    }
                }
            }
        }
        @if host.result.is_some() {
            p {
                a href=(format!("{}/report.html", host.name)) { "report" }
                " · "
                a href=(format!("{}/result.json", host.name)) { "result.json" }
                " · "
                a href=(format!("{}/test.log", host.name)) { "test.log" }
            }
        } @else {
            p { "No result (last phase: " (host.last_phase) ")" }
        }
    }
}

/// fleet.html as an [`mbx_report::Exporter`]: written through the one atomic writer, as every
/// report is.
#[derive(Debug, Clone, Copy)]
pub struct FleetHtmlExporter;

impl mbx_report::Exporter<FleetSummary> for FleetHtmlExporter {
    fn file_name(&self) -> &'static str {
        "fleet.html"
    }

    fn render(
        &self,
        s: &FleetSummary,
        _path: &std::path::Path,
    ) -> Result<Vec<u8>, mbx_report::ReportError> {
        Ok(page(s).into_bytes())
    }
}

/// fleet.json as an [`mbx_report::Exporter`]: pretty-printed with a final newline, atomically.
#[derive(Debug, Clone, Copy)]
pub struct FleetJsonExporter;

impl mbx_report::Exporter<FleetSummary> for FleetJsonExporter {
    fn file_name(&self) -> &'static str {
        "fleet.json"
    }

    fn render(
        &self,
        s: &FleetSummary,
        path: &std::path::Path,
    ) -> Result<Vec<u8>, mbx_report::ReportError> {
        let mut bytes =
            serde_json::to_vec_pretty(s).map_err(|e| mbx_report::ReportError::Invalid {
                path: path.to_path_buf(),
                reason: format!("cannot serialize the fleet summary: {e}"),
            })?;
        bytes.push(b'\n');
        Ok(bytes)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::fleet::coordinator::{Checked, HostRun, State};

    /// The aggregate first, text left-aligned (the default), figures right-aligned; every text
    /// escaped (a host's message is the remote's words).
    #[test]
    fn the_page_aligns_figures_right_and_escapes_text() {
        let dir = tempfile::tempdir().expect("tempdir");
        let fixture = include_str!("../../../mbx-report/tests/fixtures/mbxstress-result.json");
        let mut v: serde_json::Value = serde_json::from_str(fixture).expect("fixture");
        v["test"]["collection_start_unix_s"] = 1.0e9.into();
        fs_err::create_dir_all(dir.path().join("a")).expect("mkdir");
        fs_err::write(dir.path().join("a/result.json"), v.to_string()).expect("write");
        let mut a = HostRun::new("a", "a", Checked::default());
        (a.state, a.ready, a.started) = (State::Exited(0), true, true);
        let mut b = HostRun::new("b", "b", Checked::default());
        b.state = State::Failed("<script>x</script> & more".into());
        b.started = true;
        let (s, _, _) = crate::fleet::summary::summarize(
            dir.path(),
            "fleet-1",
            &[a, b],
            Some(1.0e9),
            true,
            false,
            false,
        );
        let page = page(&s);
        assert!(page.contains("text-align:left") && page.contains(".n{text-align:right"));
        assert!(page.contains("<th class=\"n\">transfers/s</th>"), "{page}");
        assert!(page.contains("<tr><td>a</td><td class=\"n\">"), "{page}");
        assert!(
            page.find("Aggregate") < page.find("<h2 id=\"a\">"),
            "{page}"
        );
        assert!(
            page.contains("&lt;script&gt;x&lt;/script&gt; &amp; more"),
            "{page}"
        );
        assert!(!page.contains("<script>"), "{page}");
        assert!(
            page.contains("<a href=\"a/report.html\">report</a>"),
            "{page}"
        );
        assert!(page.contains("No result (last phase: )"), "{page}");
        // Written through the exporters: the page as rendered, and fleet.json that reads back.
        let out = dir.path().join("out");
        let exporters: [Box<dyn mbx_report::Exporter<FleetSummary>>; 2] =
            [Box::new(FleetJsonExporter), Box::new(FleetHtmlExporter)];
        mbx_report::export::export(&s, &out, &exporters).expect("export");
        assert_eq!(
            fs_err::read_to_string(out.join("fleet.html")).expect("html"),
            page
        );
        let json = fs_err::read_to_string(out.join("fleet.json")).expect("json");
        assert!(json.ends_with("}\n"), "{json}");
        let v: serde_json::Value = serde_json::from_str(&json).expect("fleet.json");
        assert_eq!(v["run_id"], "fleet-1", "{v}");
    }
}
