//! `mbxstress run --test suite` end to end on an 8 MiB database with seconds-long tests: the five
//! folders, the ESRP summary, `esrp` on the suite folder, and resuming a suite.

use std::time::SystemTime;

use crate::common::{mbx_in, scratch, Run};

/// A one-second settle and thresholds no loaded disk can fail (as `run.rs`'s small runs).
pub(crate) use crate::common::FAST;

/// [`FAST`] with an IOPS check that only a run that did (almost) nothing fails: these tests judge
/// the suite's mechanics (its folders, summary and resume), and a 2 s step of 20 IOPS on a busy
/// shared machine reached 1.5 IOPS once (FAST's 10% of the target is 2). The IOPS check itself is
/// tested on the simulated device (mbx-engine) and by run.rs.
fn suite_config() -> String {
    FAST.replace("iops_margin = 0.9\n", "iops_margin = 0.99\n")
}

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
    let config = suite_config();
    assert!(config.contains("iops_margin = 0.99"), "{config}");
    std::fs::write(dir.join("fast.toml"), config).expect("write config");
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

/// Each test's checks that did not pass (what a failed suite run shows to explain itself).
fn not_passed(dir: &std::path::Path) -> String {
    FOLDERS
        .iter()
        .filter_map(|f| {
            let text =
                std::fs::read_to_string(dir.join("suite").join(f).join("result.json")).ok()?;
            let r: serde_json::Value = serde_json::from_str(&text).ok()?;
            let bad: Vec<String> = r["verdict"]["checks"]
                .as_array()?
                .iter()
                .filter(|c| c["state"] != "pass")
                .map(|c| c.to_string())
                .collect();
            Some(format!("{f}: {bad:?}"))
        })
        .collect::<Vec<_>>()
        .join("; ")
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
    assert_eq!(
        run.code,
        0,
        "{}\n{}\nchecks not passed: {}",
        run.stdout,
        run.stderr,
        not_passed(&dir)
    );
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

/// Issue 35: `run --test suite` with its defaults finishes on the README demo's databases (2 of
/// 500 MiB, 1,000 mailboxes at 0.2 IOPS): Soft Recovery generates its default 500 log files per
/// database beyond the held checkpoint and replays every one. Only what a test cannot afford is
/// shortened: 2 s of Performance and Stress, sessions given (no tuning), FAST's thresholds (a 2 s
/// step judges little), and everything on tmpfs (2 GB written: the demo's databases and the
/// logs).
#[test]
fn the_suite_with_its_defaults_finishes_on_the_demo_databases() {
    let dir = crate::common::scratch_in_memory("suite-demo", 3 << 30);
    let config = suite_config();
    std::fs::write(dir.join("fast.toml"), config).expect("write config");
    let (db, log) = (dir.join("db"), dir.join("log"));
    let run = mbx_in(
        Some(&dir),
        &[
            "run",
            "--test",
            "suite",
            "--config",
            "fast.toml",
            "--threads",
            "2",
            "--duration",
            "2s",
            "--stress-duration",
            "2s",
            "--sample-interval",
            "1s",
            "--db-path",
            &db.display().to_string(),
            "--log-path",
            &log.display().to_string(),
            "--out",
            "suite",
            "--progress",
            "quiet",
        ],
    );
    assert_eq!(
        run.code,
        0,
        "{}\n{}\nchecks not passed: {}",
        run.stdout,
        run.stderr,
        not_passed(&dir)
    );
    assert!(
        run.stdout.contains("PASS | suite: 5 of 5"),
        "{}",
        run.stdout
    );
    let perf = result(&dir, "1-performance");
    assert_eq!(perf["profile"]["mailboxes"], 1000, "the demo's");
    assert_eq!(perf["profile"]["databases"], 2, "the demo's");
    let soft = result(&dir, "4-soft-recovery");
    assert_eq!(
        soft["stopped"]["reason"], "completed",
        "{}",
        soft["stopped"]
    );
    assert_eq!(soft["config"]["log_files_to_replay"], 500, "the default");
    let rows = soft["soft_recovery"]
        .as_array()
        .expect("soft recovery rows");
    assert_eq!(rows.len(), 2, "{rows:?}");
    for row in rows {
        // Every requested file beyond the held checkpoint, and the checkpoint's own.
        let replayed = row["log_files_replayed"].as_u64().expect("count");
        assert!(replayed > 500, "{row}");
    }
    let log_text =
        std::fs::read_to_string(dir.join("suite/4-soft-recovery/test.log")).expect("test.log");
    assert!(
        log_text.contains("100.0% generated (500 of 500 log files"),
        "{log_text}"
    );
}

/// Soft Recovery keeps every log file until it replays them: a count that cannot fit the log
/// volume's free space is refused before anything is created, with the arithmetic.
#[test]
fn soft_recovery_refuses_logs_that_cannot_fit_the_free_space() {
    let dir = crate::common::scratch_in_memory("soft-space", 0);
    let log = dir.join("log");
    let run = mbx_in(
        Some(&dir),
        &[
            "run",
            "--test",
            "soft-recovery",
            "--mailboxes",
            "2",
            "--quota-mb",
            "4",
            "--databases",
            "1",
            "--db-path",
            &dir.join("db").display().to_string(),
            "--log-path",
            &log.display().to_string(),
            "--log-files-to-replay",
            "100000",
            "--out",
            "out",
        ],
    );
    assert_eq!(run.code, 2, "{}\n{}", run.stdout, run.stderr);
    for part in [
        "--log-files-to-replay 100000",
        "1 databases x (100000 + the open file and its spare) x 1 MiB",
        "MiB free",
        "ask for at most",
    ] {
        assert!(run.stderr.contains(part), "{part}: {}", run.stderr);
    }
    assert!(!dir.join("db").exists(), "nothing created");
    assert!(!dir.join("out").exists(), "no results folder");
}
