//! `mbxstress run --test suite` end to end on an 8 MiB database with seconds-long tests: the five
//! folders, the ESRP summary, `esrp` on the suite folder, and resuming a suite.

use std::time::SystemTime;

use crate::common::{mbx_in, scratch, Run};

/// A one-second settle and thresholds no loaded disk can fail (as `run.rs`'s small runs).
pub(crate) use crate::common::FAST;

const FOLDERS: [&str; 5] = [
    "1-performance",
    "2-stress",
    "3-backup",
    "4-soft-recovery",
    "5-checksum",
];

/// The suite on 1 database of 8 MiB: 2 s of Performance, 2 s of Stress, 2 log files per
/// database for Soft Recovery. (A database the cache holds whole, 2 MiB, may measure no
/// database read in 2 s: its read-latency checks would then judge nothing, and the verdict
/// would be "not judged".)
fn suite(dir: &std::path::Path) -> Run {
    std::fs::write(dir.join("fast.toml"), FAST).expect("write config");
    mbx_in(
        Some(dir),
        &[
            "run",
            "--threads",
            "4",
            "--test",
            "suite",
            "--config",
            "fast.toml",
            "--mailboxes",
            "2",
            "--iops-per-mailbox",
            "10",
            "--quota-mb",
            "4",
            "--databases",
            "1",
            "--duration",
            "2s",
            "--stress-duration",
            "2s",
            "--sample-interval",
            "1s",
            "--log-files-to-replay",
            "2",
            "--out",
            "suite",
            "--progress",
            "quiet",
        ],
    )
}

fn result(dir: &std::path::Path, folder: &str) -> serde_json::Value {
    let path = dir.join("suite").join(folder).join("result.json");
    serde_json::from_str(&std::fs::read_to_string(&path).expect("result")).expect("json")
}

fn modified(path: &std::path::Path) -> SystemTime {
    std::fs::metadata(path)
        .and_then(|m| m.modified())
        .expect("mtime")
}

/// The whole suite passes, each test in its own folder with its own type, the ESRP summary has
/// the performance, backup and soft recovery parts; rerun after an interrupted Checksum,
/// the finished tests are skipped (their files untouched), the incomplete folder is moved aside
/// and the rest run again.
#[test]
fn the_suite_runs_every_test_writes_the_esrp_summary_and_resumes() {
    let dir = scratch("suite");
    let run = suite(&dir);
    assert_eq!(run.code, 0, "{}\n{}", run.stdout, run.stderr);
    assert!(
        run.stdout.contains("PASS | suite: 5 of 5"),
        "{}",
        run.stdout
    );
    let types = [
        "performance",
        "stress",
        "backup",
        "soft-recovery",
        "checksum",
    ];
    for (folder, kind) in FOLDERS.iter().zip(types) {
        let r = result(&dir, folder);
        assert_eq!(r["test"]["type"], kind, "{folder}");
        assert_eq!(
            r["stopped"]["reason"], "completed",
            "{folder}: {}",
            r["stopped"]
        );
        for file in ["report.html", "test.log", "samples.jsonl"] {
            assert!(
                dir.join("suite").join(folder).join(file).is_file(),
                "{folder}/{file}"
            );
        }
    }
    assert_eq!(result(&dir, "1-performance")["config"]["duration_s"], 2.0);
    assert_eq!(result(&dir, "2-stress")["config"]["duration_s"], 2.0);
    assert_eq!(
        result(&dir, "2-stress")["checksum"]
            .as_array()
            .map(Vec::len),
        Some(2)
    );
    let text = std::fs::read_to_string(dir.join("suite/esrp.txt")).expect("esrp.txt");
    assert!(text.contains("transfers/s"), "performance table: {text}");
    assert!(text.contains("backup "), "{text}");
    assert!(text.contains("soft recovery "), "{text}");
    let json: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(dir.join("suite/esrp.json")).expect("json"))
            .expect("esrp.json");
    for part in ["servers", "backup", "soft_recovery"] {
        assert_eq!(
            json[part].as_array().map(Vec::len),
            Some(1),
            "{part}: {json}"
        );
    }
    suite_report_is_true(&dir, &run, None);
    // `esrp` on the suite folder finds the same three results.
    let esrp = mbx_in(Some(&dir), &["esrp", "suite"]);
    assert_eq!(esrp.code, 0, "{}", esrp.stderr);
    assert_eq!(esrp.stdout, text);

    // The Checksum test "interrupted" (a cheap test to run again: the suite's writes are
    // counted): rerun the same command.
    let last = dir.join("suite/5-checksum/result.json");
    let mut r = result(&dir, "5-checksum");
    r["stopped"]["reason"] = "interrupted".into();
    std::fs::write(&last, serde_json::to_vec(&r).expect("json")).expect("edit");
    let kept: Vec<SystemTime> = FOLDERS[..4]
        .iter()
        .map(|f| modified(&dir.join("suite").join(f).join("result.json")))
        .collect();
    let run = suite(&dir);
    assert_eq!(run.code, 0, "{}\n{}", run.stdout, run.stderr);
    for f in &FOLDERS[..4] {
        assert!(
            run.stdout.contains(&format!("skipping {f}")),
            "{}",
            run.stdout
        );
    }
    assert!(!run.stdout.contains("skipping 5-"), "{}", run.stdout);
    for (f, t) in FOLDERS[..4].iter().zip(kept) {
        assert_eq!(
            modified(&dir.join("suite").join(f).join("result.json")),
            t,
            "{f} rerun"
        );
    }
    let aside = dir.join("suite/5-checksum.interrupted-1/result.json");
    assert!(aside.is_file(), "the incomplete attempt is kept aside");
    let r: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&aside).expect("aside")).expect("json");
    assert_eq!(r["stopped"]["reason"], "interrupted");
    assert_eq!(result(&dir, "5-checksum")["stopped"]["reason"], "completed");
    assert!(
        run.stdout.contains("PASS | suite: 5 of 5"),
        "{}",
        run.stdout
    );
    suite_report_is_true(&dir, &run, Some("5-checksum.interrupted-1"));
    // A test folder left without a result (a crash before it was written) is moved aside too.
    std::fs::remove_file(&last).expect("remove result");
    let run = suite(&dir);
    assert_eq!(run.code, 0, "{}\n{}", run.stdout, run.stderr);
    assert!(dir
        .join("suite/5-checksum.interrupted-2/test.log")
        .is_file());
    assert_eq!(result(&dir, "5-checksum")["stopped"]["reason"], "completed");
}

/// suite.html (issue 35, item 7): one document with each test's verdict and a link to its
/// report, the ESRP summary, and the earlier attempt kept aside when the suite resumed.
fn suite_report_is_true(dir: &std::path::Path, run: &Run, earlier: Option<&str>) {
    let path = dir.join("suite/suite.html");
    assert!(
        run.stdout.contains("Suite report: suite/suite.html"),
        "{}",
        run.stdout
    );
    let html = std::fs::read_to_string(&path).expect("suite.html");
    assert!(
        html.contains("<span class=\"pass\">Pass</span> (5 of 5 tests ran to completion)"),
        "{html}"
    );
    for folder in FOLDERS {
        let row_at = html
            .find(&format!("data-test=\"{folder}\""))
            .unwrap_or_else(|| panic!("{folder} row: {html}"));
        let row = &html[row_at..];
        let row = &row[..row.find("</tr>").expect("row end")];
        assert!(row.contains("<td class=\"pass\">Pass</td>"), "{row}");
        assert!(row.contains("<td>completed</td>"), "{row}");
        let link = format!("href=\"{folder}/report.html\"");
        assert!(row.contains(&link), "{row}");
        assert!(dir.join("suite").join(folder).join("report.html").is_file());
        match earlier {
            Some(e) if e.starts_with(folder) => {
                assert!(row.contains(&format!("href=\"{e}/report.html\"")), "{row}")
            }
            _ => assert!(!row.contains("earlier attempt"), "{row}"),
        }
    }
    // The ESRP summary: the Performance server, backup and soft recovery figures of esrp.json.
    let esrp: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(dir.join("suite/esrp.json")).expect("json"))
            .expect("esrp.json");
    assert!(html.contains("ESRP Summary") && html.contains("Transactional I/O (Performance test)"));
    let transfers = esrp["servers"][0]["db_transfers_per_s"]
        .as_f64()
        .expect("transfers");
    assert!(html.contains(&format!("{transfers:.2}")), "{html}");
    let spl = esrp["soft_recovery"][0]["seconds_per_log"]
        .as_f64()
        .expect("seconds per log");
    assert!(html.contains(&format!("{spl:.4}")), "{html}");
    assert!(html.contains("Database Backup") && html.contains("Soft Recovery"));
}
