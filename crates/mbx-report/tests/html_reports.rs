//! Jetstress HTML reports: the `<fieldset>` structure of real reports, for the four report kinds
//! (fixtures under tests/fixtures/html/, built by its make.py from the Dell ESRP paper's reports),
//! and the HTML constructs a hand-written scanner gets wrong: numeric entities, `>` inside
//! attribute values, commented-out rows.

use std::path::{Path, PathBuf};

use mbx_report::import::{import_file, import_text, ImportedReport};
use mbx_result::TestKind;

fn fixture(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures")
        .join(name)
}

/// The figures a report carries, without its source name.
fn figures(mut r: ImportedReport) -> ImportedReport {
    r.source = String::new();
    r
}

/// Each HTML report imports to exactly what the same report as text imports to.
#[test]
fn fieldset_reports_import_like_their_text() {
    for kind in ["performance", "backup", "softrecovery"] {
        let html = import_file(&fixture(&format!("html/dell-ps6210e-esrp-{kind}.html")))
            .unwrap_or_else(|e| panic!("{kind}: {e}"));
        let text = import_file(&fixture(&format!("dell-ps6210e-esrp-{kind}.txt")))
            .unwrap_or_else(|e| panic!("{kind}: {e}"));
        assert_eq!(figures(html), figures(text), "{kind}");
    }
}

/// D2's Stress report (24 h, 26 threads): 1009.779 achieved IOPS, six instances in each of the
/// four I/O tables.
#[test]
fn the_stress_report_imports() {
    let r = import_file(&fixture("html/dell-ps6210e-esrp-stress.html")).expect("import");
    assert_eq!(r.kind, Some(TestKind::Stress));
    assert_eq!(r.achieved_iops_typed, Some(1009.779));
    assert_eq!(r.target_iops, Some(600.0));
    assert_eq!(r.machine.as_deref(), Some("EQLESRP5"));
    assert_eq!(r.overall_result.as_deref(), Some("Pass"));
    assert_eq!(r.transactional.len(), 6);
    assert_eq!(r.total.len(), 6);
    assert_eq!(r.bdm.len(), 6);
    assert_eq!(r.log_replication.len(), 6);
    assert!(r.transactional[0].instance.starts_with("Instance1604."));
    assert!(r.discrepancies.is_empty(), "{:?}", r.discrepancies);
}

/// Without `<legend>`s (the section names absent), the fieldsets are recognised by their
/// position in a Jetstress report, and the figures are the same.
#[test]
fn fieldsets_without_legends_are_placed_by_position() {
    for kind in ["performance", "stress", "backup", "softrecovery"] {
        let path = fixture(&format!("html/dell-ps6210e-esrp-{kind}.html"));
        let html = std::fs::read_to_string(&path).expect("read");
        let mut bare = String::new();
        let mut rest = html.as_str();
        while let Some(at) = rest.find("<legend>") {
            bare.push_str(&rest[..at]);
            let end = rest[at..].find("</legend>").expect("closed") + at + "</legend>".len();
            rest = &rest[end..];
        }
        bare.push_str(rest);
        assert!(!bare.contains("legend"), "{kind}");
        let with = import_file(&path).expect("import");
        let without = import_text(&bare, &path).unwrap_or_else(|e| panic!("{kind}: {e}"));
        assert_eq!(without, with, "{kind}");
    }
}

/// A small backup report with the constructs real files have: `&#160;` and `&nbsp;` around
/// numbers and inside a title, `>` inside attribute values, a row commented out, a cell left
/// unclosed.
#[test]
fn entities_attributes_and_comments_parse_as_a_browser_reads_them() {
    let html = r#"<!DOCTYPE html><html><head><title>Database Backup Test Result Report</title>
<style>td > b { color: red }</style></head><body>
<h1 title="a > b">Database&#160;Backup Test Result Report</h1>
<fieldset><legend>Database&#160;Backup&nbsp;Statistics - All</legend>
<table class="t" data-note="rows > 0">
<tr><th>Database Instance</th><th>Database Size (MBytes)</th><th>Elapsed Backup Time</th><th>MBytes Transferred/sec</th></tr>
<tr><td title="x>y">Instance1.1</td><td>&#160;100.5&#160;</td><td>00:01:40</td><td>1.005</td></tr>
<!-- <tr><td>Instance1.9</td><td>999</td><td>00:00:01</td><td>999</td></tr> -->
<tr><td>Instance1.2<td>200.0<td>00:01:40<td>2.000</tr>
<tr><td>Avg</td><td></td><td></td><td>1.50</td></tr>
<tr><td>Sum</td><td></td><td></td><td>3.01</td></tr>
</table></fieldset></body></html>"#;
    let r = import_text(html, Path::new("inline.html")).expect("import");
    assert_eq!(r.kind, Some(TestKind::Backup));
    let rows: Vec<(&str, f64, f64)> = r
        .backup
        .iter()
        .map(|b| (b.instance.as_str(), b.database_size_mb, b.mb_per_s))
        .collect();
    assert_eq!(
        rows,
        vec![("Instance1.1", 100.5, 1.005), ("Instance1.2", 200.0, 2.0)]
    );
    assert_eq!(r.backup_avg_typed, Some(1.5));
    assert_eq!(r.backup_sum_typed, Some(3.01));
}
