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

/// The errors of result `out` as (class, path, message), and checks the run failed its verdict
/// (exit 1, FAIL, `verdict_failed`: a finding, not an I/O error).
fn log_findings(dir: &std::path::Path, run: &crate::common::Run, out: &str) -> Vec<[String; 3]> {
    assert_eq!(run.code, 1, "{}\n{}", run.stdout, run.stderr);
    assert!(run.stdout.contains("FAIL"), "{}", run.stdout);
    let r = result(dir, out);
    assert_eq!(r["stopped"]["reason"], "verdict_failed", "{}", r["stopped"]);
    let text = |v: &serde_json::Value| v.as_str().unwrap_or_default().to_string();
    let found: Vec<[String; 3]> = r["errors"]
        .as_array()
        .expect("errors")
        .iter()
        .map(|e| [text(&e["class"]), text(&e["path"]), text(&e["message"])])
        .collect();
    let check = r["verdict"]["checks"]
        .as_array()
        .expect("checks")
        .iter()
        .find(|c| c["name"] == "data_integrity_errors")
        .cloned()
        .expect("data_integrity_errors");
    assert_eq!(check["value"], found.len() as f64, "{check}");
    assert_eq!(check["pass"], false);
    found
}

/// Asserts `found` holds exactly one finding of `class` on `path`, whose message names the file
/// and says `words`.
fn assert_finding(found: &[[String; 3]], class: &str, path: &std::path::Path, words: &str) {
    let path = path.display().to_string();
    let hits: Vec<_> = found
        .iter()
        .filter(|[c, p, _]| c == class && *p == path)
        .collect();
    assert_eq!(hits.len(), 1, "{class} on {path}: {found:#?}");
    let message = &hits[0][2];
    assert!(message.starts_with(&path), "{message}");
    assert!(message.contains(words), "{message} lacks {words:?}");
}

/// The Checksum test checks the log folders of real databases as logs: a log file cut short at
/// an unaligned length (as ENOSPC leaves one) or at an aligned one, a foreign tiny `E*.log`, a
/// generation missing between the checkpoint and the newest, a zeroed and a deleted checkpoint
/// each fail it with a finding naming the file, never an OS error.
#[test]
fn checksum_checks_the_log_files_and_checkpoint_on_disk() {
    use mbx_store::log::{decode_log_header, encode_log_header, log_file_name, LOG_FILE_SIZE};
    let dir = scratch("checksum-log");
    let backup = run_test(&dir, "backup", "b1");
    assert_eq!(backup.code, 0, "{}", backup.stderr);
    // As the run names them: relative to its working directory.
    let logs = std::path::Path::new("mbxstress-data/logs");
    let (l1, l2) = (logs.join("db001"), logs.join("db002"));
    let first = |l: &std::path::Path| l.join(log_file_name(1));
    let ckpt = |l: &std::path::Path| l.join("checkpoint.chk");
    let at = |p: &std::path::Path| dir.join(p);
    let (log1, log2) = (
        std::fs::read(at(&first(&l1))).expect("log"),
        std::fs::read(at(&first(&l2))).expect("log"),
    );
    let ckpt2 = std::fs::read(at(&ckpt(&l2))).expect("checkpoint");
    let cut = |path: &std::path::Path, len: u64| {
        std::fs::OpenOptions::new()
            .write(true)
            .open(at(path))
            .and_then(|f| f.set_len(len))
            .expect("truncate");
    };

    // Database 1's log cut to an unaligned length, database 2's checkpoint zeroed.
    cut(&first(&l1), 808_961);
    std::fs::write(at(&ckpt(&l2)), vec![0u8; ckpt2.len()]).expect("zero");
    let run = run_test(&dir, "checksum", "c1");
    let found = log_findings(&dir, &run, "c1");
    assert_eq!(found.len(), 2, "{found:#?}");
    assert_finding(
        &found,
        "log_damaged",
        &first(&l1),
        &format!("is 808961 bytes long; its header says {LOG_FILE_SIZE}"),
    );
    assert_finding(
        &found,
        "checkpoint_damaged",
        &ckpt(&l2),
        "holds no valid checkpoint of this database",
    );

    // A foreign tiny log file beside database 1's log; database 2's checkpoint deleted.
    std::fs::write(at(&first(&l1)), &log1).expect("restore");
    let foreign = l1.join(log_file_name(2));
    std::fs::write(at(&foreign), b"not a log").expect("foreign");
    std::fs::remove_file(at(&ckpt(&l2))).expect("delete");
    let run = run_test(&dir, "checksum", "c2");
    let found = log_findings(&dir, &run, "c2");
    assert_eq!(found.len(), 2, "{found:#?}");
    assert_finding(
        &found,
        "log_damaged",
        &foreign,
        "(9 bytes) has no valid log header",
    );
    assert_finding(&found, "checkpoint_damaged", &ckpt(&l2), "is missing");

    // Database 1's log continues over generations 2 and 3, and 2 is deleted; database 2's log
    // file is cut at a sector boundary.
    std::fs::write(at(&ckpt(&l2)), &ckpt2).expect("restore");
    let (_, id) = decode_log_header(&log1).expect("a log header");
    for gen in [2, 3] {
        let mut file = vec![0u8; LOG_FILE_SIZE];
        encode_log_header(&mut file, gen, id, 0);
        std::fs::write(at(&l1.join(log_file_name(gen))), &file).expect("write log");
    }
    std::fs::remove_file(at(&l1.join(log_file_name(2)))).expect("delete");
    cut(&first(&l2), 512 * 1024);
    let run = run_test(&dir, "checksum", "c3");
    let found = log_findings(&dir, &run, "c3");
    assert_eq!(found.len(), 2, "{found:#?}");
    assert_finding(
        &found,
        "log_missing",
        &l1.join(log_file_name(2)),
        "is missing (log generation 0x2)",
    );
    assert_finding(
        &found,
        "log_damaged",
        &first(&l2),
        &format!("is 524288 bytes long; its header says {LOG_FILE_SIZE}"),
    );

    // Repaired: it passes again.
    std::fs::write(at(&first(&l2)), &log2).expect("restore");
    std::fs::write(at(&l1.join(log_file_name(2))), {
        let mut file = vec![0u8; LOG_FILE_SIZE];
        encode_log_header(&mut file, 2, id, 0);
        file
    })
    .expect("write log");
    let run = run_test(&dir, "checksum", "c4");
    assert_eq!(run.code, 0, "{}\n{}", run.stdout, run.stderr);
}

/// Issue 25, case 16: Backup and Checksum of existing databases, with no size given, take the
/// size from the database headers (Backup refused them, Checksum printed the default profile's
/// size); a size that is given still has to match.
#[test]
fn backup_and_checksum_take_the_size_of_existing_databases() {
    let dir = scratch("sized-by-headers");
    let prep = mbx_in(
        Some(&dir),
        &[
            "prepare",
            "--mailboxes",
            "4",
            "--quota-mb",
            "1",
            "--databases",
            "2",
        ],
    );
    assert_eq!(prep.code, 0, "{}", prep.stderr);
    let bare = |test: &str, out: &str| {
        mbx_in(
            Some(&dir),
            &["run", "--test", test, "--threads", "4", "--out", out],
        )
    };
    for (test, out) in [("backup", "b"), ("checksum", "c")] {
        let run = bare(test, out);
        assert_eq!(run.code, 0, "{test}: {}\n{}", run.stdout, run.stderr);
        assert!(
            run.stderr.contains(
                "test: 2 database(s) of 2 MiB (the size of the existing databases, from their headers)"
            ),
            "{test}: {}",
            run.stderr
        );
        let r = result(&dir, out);
        assert_eq!(r["config"]["mailboxes"], 4, "{test}");
        assert_eq!(r["config"]["mailbox_quota_mb"], 1, "{test}");
        assert_eq!(r["config"]["databases"], 2, "{test}");
    }
    let r = result(&dir, "b");
    let rows = r["backup"].as_array().expect("backup rows");
    assert_eq!(rows.len(), 2, "{rows:?}");
    let r = result(&dir, "c");
    // 2 MiB of data pages plus the two header pages, in each database.
    assert_eq!(r["checksum"][0]["seen_pages"], 66, "{r}");
    assert_eq!(r["checksum"][2]["seen_pages"], 66, "{r}");
    // A size given is the user's: databases of another size are refused, as before.
    let run = mbx_in(
        Some(&dir),
        &[
            "run",
            "--test",
            "backup",
            "--mailboxes",
            "8",
            "--quota-mb",
            "1",
            "--databases",
            "2",
            "--out",
            "b2",
        ],
    );
    assert_eq!(run.code, 2, "{}", run.stderr);
    assert!(
        run.stderr
            .contains("was created with data pages = 64, but this run needs 128"),
        "{}",
        run.stderr
    );
}
