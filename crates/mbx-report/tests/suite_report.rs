//! suite.html says what the suite folder holds (issue 35, item 7): a suite stopped part way is
//! "Not complete" with the tests not run named as such, an interrupted test shows how it ended,
//! an attempt moved aside is linked, and a failed test fails the suite.

use std::path::{Path, PathBuf};

use mbx_report::suite::{render_suite, suite_state, SuiteTest};
use mbx_result::{CheckState, TestKind};

/// The fixture result (a complete, passing Performance run), as this version writes `stopped`.
fn fixture() -> serde_json::Value {
    let path =
        PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/mbxstress-result.json");
    let mut v: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(path).expect("fixture")).expect("json");
    v["stopped"] = serde_json::json!({"reason": "completed", "message": "ran its duration"});
    v
}

fn put(root: &Path, folder: &str, v: &serde_json::Value) {
    std::fs::create_dir_all(root.join(folder)).expect("mkdir");
    std::fs::write(root.join(folder).join("result.json"), v.to_string()).expect("write");
    std::fs::write(root.join(folder).join("report.html"), "<html></html>").expect("write");
}

const STEPS: [(&str, TestKind); 5] = [
    ("1-performance", TestKind::Performance),
    ("2-stress", TestKind::Stress),
    ("3-backup", TestKind::Backup),
    ("4-soft-recovery", TestKind::SoftRecovery),
    ("5-checksum", TestKind::Checksum),
];

fn read(root: &Path) -> Vec<SuiteTest> {
    STEPS
        .iter()
        .map(|&(f, k)| SuiteTest::read(root, f, k))
        .collect()
}

fn row<'a>(html: &'a str, folder: &str) -> &'a str {
    let at = html
        .find(&format!("data-test=\"{folder}\""))
        .unwrap_or_else(|| panic!("{folder}: {html}"));
    let rest = &html[at..];
    &rest[..rest.find("</tr>").expect("end")]
}

#[test]
fn a_stopped_suite_is_not_complete_and_names_each_test_as_its_folder_has_it() {
    let dir = tempfile::tempdir().expect("tempdir");
    let root = dir.path();
    let perf = fixture();
    assert_eq!(perf["stopped"]["reason"], "completed");
    put(root, "1-performance", &perf);
    let mut stress = fixture();
    stress["test"]["type"] = "stress".into();
    stress["stopped"]["reason"] = "interrupted".into();
    put(root, "2-stress.interrupted-1", &stress);
    put(root, "2-stress", &stress);
    std::fs::create_dir_all(root.join("3-backup")).expect("mkdir");
    std::fs::write(root.join("3-backup/result.json"), "{ not json").expect("write");
    let tests = read(root);
    assert_eq!(suite_state(&tests), None);
    let html = render_suite(root, &tests, None);
    assert!(html.contains("Not complete") && html.contains("1 of 5 tests ran to completion"));
    assert!(html.contains("run the same command again to resume"));
    assert!(row(&html, "1-performance").contains("<td class=\"pass\">Pass</td>"));
    assert!(row(&html, "1-performance").contains("href=\"1-performance/report.html\""));
    let stress_row = row(&html, "2-stress");
    assert!(stress_row.contains("<td>interrupted</td>"), "{stress_row}");
    assert!(
        stress_row.contains("href=\"2-stress.interrupted-1/report.html\""),
        "{stress_row}"
    );
    assert!(row(&html, "3-backup").contains("Unreadable"));
    assert!(row(&html, "3-backup").contains("3-backup"));
    assert!(row(&html, "4-soft-recovery").contains("Not run"));
    assert!(html.contains("No Performance, Backup or Soft Recovery result yet"));

    // A completed test that failed fails the suite, whatever is still to run.
    let mut failed = fixture();
    failed["verdict"]["pass"] = false.into();
    failed["verdict"]["checks"][0]["pass"] = false.into();
    failed["verdict"]["checks"][0]["state"] = "fail".into();
    put(root, "1-performance", &failed);
    let tests = read(root);
    assert_eq!(suite_state(&tests), Some(CheckState::Fail));
    assert!(render_suite(root, &tests, None).contains("<span class=\"fail\">Fail</span>"));
}
