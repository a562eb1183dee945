//! Inputs built to hurt the importer (issue 25, cases 10 and 11): deeply nested HTML is refused at
//! a depth cap instead of costing time quadratic in its depth; figures that no measurement can
//! have (negative, or beyond any plausible bound such as 1e308) are refused naming the file, the
//! row and the column.

use std::path::{Path, PathBuf};

use mbx_report::import::{import_text, ImportError};

fn fixture(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures")
        .join(name)
}

/// 200,000 nested `<div>`s (2.2 MB): before the cap the tree builder scanned its stack of open
/// elements on every tag (quadratic, over 30 s); now the parse stops at the cap with an error
/// naming the file and the cap.
#[test]
fn deeply_nested_html_is_refused_at_the_depth_cap() {
    let depth = 200_000;
    let mut html = String::with_capacity(depth * 11 + 100);
    html.push_str("<!DOCTYPE html><html><body>");
    for _ in 0..depth {
        html.push_str("<div>");
    }
    html.push_str("Transactional I/O Performance");
    for _ in 0..depth {
        html.push_str("</div>");
    }
    html.push_str("</body></html>");
    let e = import_text(&html, Path::new("nested.html")).expect_err("refused");
    let msg = e.to_string();
    assert!(
        matches!(e, ImportError::Malformed { .. })
            && msg.contains("nested.html")
            && msg.contains("nest")
            && msg.contains("256"),
        "{msg}"
    );
}

/// A real report nested a little deeper than Jetstress nests it (inside 200 `<div>`s) is still
/// read: the cap is far above any report's depth.
#[test]
fn a_report_nested_below_the_cap_is_read() {
    let page = std::fs::read_to_string(fixture("html/dell-ps6210e-esrp-performance.html"))
        .expect("fixture");
    let clean = import_text(&page, Path::new("a.html")).expect("the page");
    let body = page.find("<body").expect("a body");
    let open = page[body..].find('>').expect("body tag") + body + 1;
    let close = page.rfind("</body>").expect("closing body");
    let wrapped = format!(
        "{}{}{}{}{}",
        &page[..open],
        "<div>".repeat(200),
        &page[open..close],
        "</div>".repeat(200),
        &page[close..]
    );
    let r = import_text(&wrapped, Path::new("a.html")).expect("nested 200 deeper");
    assert_eq!(r.transactional, clean.transactional);
    assert_eq!(r.transactional.len(), 6);
}

fn dell(kind: &str) -> String {
    std::fs::read_to_string(fixture(&format!("dell-ps6210e-esrp-{kind}.txt"))).expect("fixture")
}

fn refused(text: &str, wants: &[&str]) {
    let e = import_text(text, Path::new("hostile.txt")).expect_err("refused");
    let msg = e.to_string();
    assert!(msg.contains("hostile.txt"), "{msg}");
    for w in wants {
        assert!(msg.contains(w), "'{w}' in: {msg}");
    }
}

/// Negative rates and latencies, and 1e308 (which sums to infinity: `inf` in the text output,
/// `null` in JSON), are no measurement: refused naming the file, the table, the row and the
/// column, in every table and in the typed figures.
#[test]
fn figures_no_measurement_can_have_are_refused_naming_row_and_column() {
    let perf = dell("performance");
    let row = "Instance5004.1\t16.962\t0.779\t123.928\t52.734";
    for (to, why) in [
        (
            "Instance5004.1\t16.962\t0.779\t-123.928\t52.734",
            "negative",
        ),
        ("Instance5004.1\t16.962\t0.779\t1e308\t52.734", "at most"),
        (
            "Instance5004.1\t-16.962\t0.779\t123.928\t52.734",
            "negative",
        ),
    ] {
        let col = if to.contains("-16") {
            "column 2"
        } else {
            "column 4"
        };
        refused(
            &perf.replacen(row, to, 1),
            &["Transactional I/O Performance", "Instance5004.1", col, why],
        );
    }
    refused(
        &perf.replacen(
            "Achieved Transactional I/O per Second 1056.711",
            "Achieved Transactional I/O per Second -1056.711",
            1,
        ),
        &["Achieved Transactional I/O per Second", "negative"],
    );
    refused(
        &perf.replacen(
            "Target Transactional I/O per Second 600",
            "Target Transactional I/O per Second 1e308",
            1,
        ),
        &["Target Transactional I/O per Second", "at most"],
    );
    let backup = dell("backup");
    refused(
        &backup.replacen(
            "Instance4604.2\t1714179.09\t04:56:02\t96.50",
            "Instance4604.2\t1714179.09\t04:56:02\t-96.50",
            1,
        ),
        &[
            "Database Backup Statistics",
            "Instance4604.2",
            "column 4",
            "negative",
        ],
    );
    refused(
        &backup.replacen("Sum\t\t\t577.17", "Sum\t\t\t1e308", 1),
        &["Database Backup Statistics", "Sum", "at most"],
    );
    let soft = dell("softrecovery");
    let first = soft
        .lines()
        .find(|l| l.starts_with("Instance") && l.matches('\t').count() == 2)
        .expect("a soft recovery row");
    let cells: Vec<&str> = first.split('\t').collect();
    refused(
        &soft.replacen(
            first,
            &format!("{}\t{}\t-{}", cells[0], cells[1], cells[2]),
            1,
        ),
        &["Soft-Recovery Statistics", cells[0], "column 3", "negative"],
    );
}

/// The same for a result.json given to `esrp` (`load_each`): a result with a negative rate (or
/// 1e308) is refused naming the file, the instance and the column.
#[test]
fn a_result_json_with_such_figures_is_refused_by_esrp() {
    let text = std::fs::read_to_string(fixture("mbxstress-result.json")).expect("fixture");
    let mut v: serde_json::Value = serde_json::from_str(&text).expect("JSON");
    let dir = tempfile::tempdir().expect("tempdir");
    let ok = dir.path().join("ok.json");
    std::fs::write(&ok, &text).expect("write");
    assert_eq!(
        mbx_report::import::load_each(&ok)
            .expect("the fixture")
            .len(),
        1
    );
    for (value, why) in [(-184.7, "negative"), (1e308, "at most")] {
        v["instances"][0]["transactional"]["db_reads_per_s"] = value.into();
        let bad = dir.path().join("bad.json");
        std::fs::write(&bad, v.to_string()).expect("write");
        let e = mbx_report::import::load_each(&bad).expect_err("refused");
        let msg = e.to_string();
        for want in ["bad.json", "Instance5281.1", "column 4", why] {
            assert!(msg.contains(want), "'{want}' in: {msg}");
        }
        // `compare` reads its inputs through `esrp::load`: refused there too.
        let e = mbx_report::esrp::load(&bad).expect_err("refused by load");
        assert!(e.to_string().contains(why), "{e}");
    }
}
