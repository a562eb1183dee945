//! `mbxstress run --test backup|checksum|stress` end to end on small databases: the files written, the
//! tables printed and reported, `esrp` reading the backup result, and checksum refusing to
//! create databases.

use crate::common::{mbx_in, scratch};

fn run_test(dir: &std::path::Path, test: &str, out: &str) -> crate::common::Run {
    mbx_in(
        Some(dir),
        &[
            "run",
            "--threads",
            "4",
            "--test",
            test,
            "--mailboxes",
            "2",
            "--iops-per-mailbox",
            "1",
            "--quota-mb",
            "1",
            "--databases",
            "2",
            "--out",
            out,
            "--progress",
            "quiet",
        ],
    )
}

fn result(dir: &std::path::Path, out: &str) -> serde_json::Value {
    serde_json::from_str(
        &std::fs::read_to_string(dir.join(out).join("result.json")).expect("result"),
    )
    .expect("json")
}

#[test]
fn backup_creates_reads_and_reports_every_database() {
    let dir = scratch("backup");
    let run = run_test(&dir, "backup", "b1");
    assert_eq!(run.code, 0, "{}\n{}", run.stdout, run.stderr);
    assert!(run.stdout.contains("PASS"), "{}", run.stdout);
    assert!(run.stdout.contains("Sum"), "{}", run.stdout);
    let r = result(&dir, "b1");
    assert_eq!(r["test"]["type"], "backup");
    let rows = r["backup"].as_array().expect("backup rows");
    assert_eq!(rows.len(), 2);
    let mut sum = 0.0;
    for row in rows {
        let mb = row["database_size_mb"].as_f64().expect("size");
        // 1 MiB of data pages plus the two header pages.
        assert!((mb - (34.0 * 32768.0) / 1e6).abs() < 1e-6, "{row}");
        sum += row["mb_per_s"].as_f64().expect("rate");
    }
    let typed = r["backup_sum_mb_per_s"].as_f64().expect("sum");
    assert!((typed - sum).abs() < 1e-9 * sum.max(1.0));
    let html = std::fs::read_to_string(dir.join("b1/report.html")).expect("report");
    assert!(html.contains("Database Backup Statistics"));
    let csv = std::fs::read_to_string(dir.join("b1/backup.csv")).expect("backup.csv");
    assert_eq!(csv.lines().count(), 1 + 2 + 2, "{csv}");
    assert!(!dir.join("b1/checksum.csv").exists());
    let esrp = mbx_in(Some(&dir), &["esrp", "b1/result.json", "--json"]);
    assert_eq!(esrp.code, 0, "{}\n{}", esrp.stdout, esrp.stderr);
    let v = esrp.json();
    let per_server = v["backup"][0]["mb_per_s_per_server"]
        .as_f64()
        .expect("esrp backup");
    assert!((per_server - typed).abs() < 1e-9 * typed.max(1.0), "{v}");
}

#[test]
fn checksum_needs_existing_databases_then_verifies_them() {
    let dir = scratch("checksum");
    let run = run_test(&dir, "checksum", "c0");
    assert_ne!(run.code, 0, "{}\n{}", run.stdout, run.stderr);
    assert!(
        run.stderr
            .contains("run `mbxstress prepare` or a performance test first"),
        "{}",
        run.stderr
    );
    let db = dir.join("mbxstress-data/databases/mbxstress001.edb");
    assert!(!db.exists(), "checksum created a database");
    let backup = run_test(&dir, "backup", "b1");
    assert_eq!(backup.code, 0, "{}", backup.stderr);
    let run = run_test(&dir, "checksum", "c1");
    assert_eq!(run.code, 0, "{}\n{}", run.stdout, run.stderr);
    let r = result(&dir, "c1");
    assert_eq!(r["test"]["type"], "checksum");
    let rows = r["checksum"].as_array().expect("checksum rows");
    // Per database: its file, then its log folder (prepare left one 1 MiB log file in each).
    assert_eq!(rows.len(), 4, "{rows:?}");
    for (k, row) in rows.iter().enumerate() {
        let path = row["database_path"].as_str().expect("path");
        let pages = if k % 2 == 0 { 34 } else { 32 };
        assert_eq!(path.ends_with(".edb"), k % 2 == 0, "{row}");
        assert_eq!(row["seen_pages"], pages, "{row}");
        assert_eq!(row["bytes"], pages * 32768, "{row}");
        assert_eq!(row["bad_pages"], 0, "{row}");
    }
    assert_eq!(r["errors"].as_array().map(Vec::len), Some(0));
    let csv = std::fs::read_to_string(dir.join("c1/checksum.csv")).expect("checksum.csv");
    assert_eq!(csv.lines().count(), 5, "{csv}");
    let html = std::fs::read_to_string(dir.join("c1/report.html")).expect("report");
    assert!(html.contains("Database Checksum Statistics"));

    // One flipped bit in data page 5 of the second database: found, placed, and a Fail.
    let db2 = dir.join("mbxstress-data/databases/mbxstress002.edb");
    let mut bytes = std::fs::read(&db2).expect("read db");
    bytes[5 * 32768 + 1000] ^= 1;
    std::fs::write(&db2, &bytes).expect("damage");
    let run = run_test(&dir, "checksum", "c2");
    assert_eq!(run.code, 1, "{}\n{}", run.stdout, run.stderr);
    assert!(run.stdout.contains("FAIL"), "{}", run.stdout);
    let r = result(&dir, "c2");
    let errors = r["errors"].as_array().expect("errors");
    assert_eq!(errors.len(), 1, "{errors:?}");
    assert_eq!(errors[0]["class"], "correctable_page");
    assert_eq!(errors[0]["page"], 5);
    assert_eq!(errors[0]["offset"], 5 * 32768);
    assert!(errors[0]["path"]
        .as_str()
        .is_some_and(|p| p.ends_with("mbxstress002.edb")));
    assert_eq!(r["checksum"][2]["correctable_pages"], 1);
}

/// `--test stress` on a 4 MiB database: the workload for its duration, then the checksum of
/// every page of every database and log file; the result has the performance figures, the
/// checksum rows and the pass's checks; summary and report show both.
#[test]
fn stress_runs_the_workload_then_checksums_every_page() {
    let dir = scratch("stress");
    // As run.rs's small runs (a one-second settle, thresholds no loaded disk fails), on one
    // 4 MiB database.
    std::fs::write(dir.join("fast.toml"), crate::suite::FAST).expect("write config");
    let run = mbx_in(
        Some(&dir),
        &[
            "run",
            "--threads",
            "4",
            "--test",
            "stress",
            "--config",
            "fast.toml",
            "--mailboxes",
            "2",
            "--iops-per-mailbox",
            "10",
            "--quota-mb",
            "1",
            "--databases",
            "1",
            "--duration",
            "3s",
            "--sample-interval",
            "1s",
            "--out",
            "s",
            "--progress",
            "quiet",
        ],
    );
    assert_eq!(run.code, 0, "{}\n{}", run.stdout, run.stderr);
    assert!(run.stdout.contains("PASS | achieved"), "{}", run.stdout);
    assert!(
        run.stdout.contains("correct."),
        "checksum table: {}",
        run.stdout
    );
    let r = result(&dir, "s");
    assert_eq!(r["test"]["type"], "stress");
    // --duration and the config's thresholds win over the Stress defaults.
    assert_eq!(r["config"]["duration_s"], 3.0);
    assert_eq!(r["config"]["thresholds"]["db_read_max_ms"], 10000.0);
    assert_eq!(r["instances"].as_array().map(Vec::len), Some(1));
    assert!(r["achieved_iops"].as_f64().expect("iops") > 0.0);
    let rows = r["checksum"].as_array().expect("checksum rows");
    // The database file (2 MiB of data pages and 2 header pages), then its log folder.
    assert_eq!(rows.len(), 2, "{rows:?}");
    for (k, row) in rows.iter().enumerate() {
        if k % 2 == 0 {
            assert_eq!(row["seen_pages"], 64 + 2, "{row}");
        } else {
            assert!(row["seen_pages"].as_u64().expect("pages") >= 32, "{row}");
        }
        assert_eq!(row["bad_pages"], 0, "{row}");
    }
    let checks = r["verdict"]["checks"].as_array().expect("checks");
    let pass_completed = checks
        .iter()
        .find(|c| c["name"] == "pass_completed")
        .expect("pass_completed check");
    assert_eq!(pass_completed["pass"], true);
    assert_eq!(r["verdict"]["pass"], true, "{}", r["verdict"]);
    let html = std::fs::read_to_string(dir.join("s/report.html")).expect("report");
    assert!(html.contains("Database Checksum Statistics"));
    assert!(
        html.contains("Transactional I/O Performance"),
        "performance sections"
    );
    let log = std::fs::read_to_string(dir.join("s/test.log")).expect("log");
    assert!(log.contains("Checksum after the test"), "{log}");
}
