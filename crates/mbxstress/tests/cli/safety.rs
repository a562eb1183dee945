//! Issue 8: nothing filled, overwritten, hung or lost. Sizes that overflow, duplicate paths, two
//! commands on one database set, signals, a full disk during measurement, resume after a crash.
//! Databases are MiBs; every folder is a `TempDir` removed at the end.

use std::path::{Path, PathBuf};
use std::process::Child;
use std::time::{Duration, Instant};

use crate::common::{mbx_in, FAST};

fn tmp() -> crate::common::Scratch {
    crate::common::scratch("safety")
}

fn in_dir(dir: &Path, args: &[&str]) -> crate::common::Run {
    mbx_in(Some(dir), args)
}

/// Every file under `dir` (relative), sorted.
fn files_under(dir: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        for e in std::fs::read_dir(&d).expect("read_dir").flatten() {
            let p = e.path();
            if p.is_dir() {
                stack.push(p.clone());
            }
            out.push(p.strip_prefix(dir).expect("prefix").to_path_buf());
        }
    }
    out.sort();
    out
}

/// Args of a run on 1 database of 4 MiB for `duration` (one database is all these cases need:
/// a second one only doubled what they write).
fn run_args<'a>(duration: &'a str, out: &'a str, extra: &[&'a str]) -> Vec<&'a str> {
    run_args_on("1", duration, out, extra)
}

/// Args of a run on `databases` databases of 4 MiB (2 mailboxes of 2 MiB each) for `duration`.
fn run_args_on<'a>(
    databases: &'a str,
    duration: &'a str,
    out: &'a str,
    extra: &[&'a str],
) -> Vec<&'a str> {
    let mailboxes = if databases == "2" { "4" } else { "2" };
    let mut v = vec![
        "run",
        "--threads",
        "4",
        "--config",
        "fast.toml",
        "--mailboxes",
        mailboxes,
        "--quota-mb",
        "2",
        "--databases",
        databases,
        "--iops-per-mailbox",
        "10",
        "--duration",
        duration,
        "--sample-interval",
        "1s",
        "--out",
        out,
    ];
    v.extend_from_slice(extra);
    if !extra.contains(&"--progress") {
        v.extend_from_slice(&["--progress", "quiet"]);
    }
    v
}

fn spawn(dir: &Path, args: &[&str]) -> Child {
    crate::common::spawn_in(dir, args)
}

fn wait_for(limit: Duration, what: &str, ready: impl Fn() -> bool) {
    let start = Instant::now();
    while !ready() {
        assert!(start.elapsed() < limit, "timed out waiting for {what}");
        std::thread::sleep(Duration::from_millis(50));
    }
}

fn read_json(p: &Path) -> serde_json::Value {
    let text = std::fs::read_to_string(p).unwrap_or_else(|e| panic!("{}: {e}", p.display()));
    serde_json::from_str(&text).expect("json")
}

fn log_has(path: &Path, text: &str) -> bool {
    std::fs::read_to_string(path).is_ok_and(|t| t.contains(text))
}

/// 8.1: sizes that used to wrap around ("0.1 MiB each"), pass the space check and fill the disk
/// are usage errors naming the flag, and nothing is written.
#[test]
fn overflowing_sizes_are_refused_before_writing() {
    let dir = tmp();
    for args in [
        &[
            "prepare",
            "--databases",
            "1",
            "--database-size-mb",
            "17592186044416",
        ][..],
        &[
            "prepare",
            "--databases",
            "1",
            "--database-size-mb",
            "17592186044415",
        ],
        &[
            "prepare",
            "--databases",
            "1",
            "--mailboxes",
            "8796093022208",
            "--quota-mb",
            "2",
        ],
        &[
            "run",
            "--threads",
            "4",
            "--databases",
            "1",
            "--mailboxes",
            "8796093022208",
            "--quota-mb",
            "2",
        ],
    ] {
        let run = in_dir(&dir, args);
        assert_eq!(run.code, 2, "{args:?}: {}", run.stderr);
        assert!(
            run.stderr.contains("--database-size-mb") || run.stderr.contains("--mailboxes"),
            "{args:?}: {}",
            run.stderr
        );
        assert_eq!(files_under(&dir), Vec::<PathBuf>::new(), "{args:?}");
    }
}

/// 8.4 and 8.11: two databases in one file or two log streams in one folder (also through a
/// symlink or `..`), and a log path that is a file, are refused before anything is written.
#[test]
#[cfg(unix)] // symbolic links need a privilege on Windows
fn duplicate_paths_and_a_file_as_log_folder_are_refused_first() {
    let dir = tmp();
    let d = &*dir;
    std::fs::create_dir(d.join("db")).expect("mkdir");
    std::os::unix::fs::symlink("db", d.join("alias")).expect("symlink");
    std::fs::write(d.join("not-a-folder"), b"user data").expect("write");
    let cases: [&[&str]; 3] = [
        &[
            "--db-path",
            "db/x.edb",
            "--db-path",
            "alias/../db/x.edb",
            "--log-path",
            "l1",
            "--log-path",
            "l2",
        ],
        &[
            "--db-path",
            "db/a.edb",
            "--db-path",
            "db/b.edb",
            "--log-path",
            "L",
            "--log-path",
            "./L",
        ],
        &["--db-path", "db", "--log-path", "not-a-folder"],
    ];
    let before = files_under(d);
    for (k, paths) in cases.iter().enumerate() {
        let mut args = vec!["prepare", "--databases", "2", "--database-size-mb", "1"];
        args.extend_from_slice(paths);
        let run = in_dir(d, &args);
        assert_eq!(run.code, 2, "case {k}: {}", run.stderr);
        let flag = ["--db-path", "--log-path", "not a directory"][k];
        assert!(run.stderr.contains(flag), "case {k}: {}", run.stderr);
        assert_eq!(files_under(d), before, "case {k} wrote something");
    }
    assert_eq!(
        std::fs::read(d.join("not-a-folder")).expect("read"),
        b"user data"
    );
}

/// 8.11: a results folder holding a test.log we did not write is refused, the file untouched.
#[test]
fn results_are_never_appended_to_existing_files() {
    let dir = tmp();
    let d = &*dir;
    std::fs::create_dir(d.join("out")).expect("mkdir");
    std::fs::write(d.join("out/test.log"), b"someone else's log\n").expect("write");
    std::fs::write(d.join("fast.toml"), FAST).expect("config");
    let run = in_dir(d, &run_args("2s", "out", &[]));
    assert_eq!(run.code, 2, "{}", run.stderr);
    assert!(run.stderr.contains("test.log"), "{}", run.stderr);
    assert_eq!(
        std::fs::read(d.join("out/test.log")).expect("read"),
        b"someone else's log\n"
    );
    assert!(!d.join("mbxstress-data").exists(), "nothing prepared");
}

/// 8.3, 8.10 and 8.8: a second run on databases in use exits at once naming the path and the
/// holder's PID; SIGTERM makes the first stop like Ctrl-C, with a result.json marked interrupted,
/// no integrity errors, and test.log ending with the reason. The next run attaches.
#[test]
fn second_run_is_locked_out_and_sigterm_keeps_the_result() {
    let dir = tmp();
    let d = &*dir;
    std::fs::write(d.join("fast.toml"), FAST).expect("config");
    let first = spawn(d, &run_args("60s", "r1", &[]));
    let log = d.join("r1/test.log");
    wait_for(Duration::from_secs(60), "the first run to measure", || {
        log_has(&log, "Performance logging started")
    });
    let started = Instant::now();
    let second = in_dir(d, &run_args("2s", "r2", &[]));
    assert!(started.elapsed() < Duration::from_secs(10), "not at once");
    assert_eq!(second.code, 2, "{}", second.stderr);
    assert!(second.stderr.contains("in use"), "{}", second.stderr);
    assert!(
        second.stderr.contains(&format!("PID {}", first.id())),
        "{}",
        second.stderr
    );
    assert!(
        !d.join("r2").exists(),
        "the refused run made no results folder"
    );
    // A second prepare is refused the same way.
    let prep = in_dir(
        d,
        &[
            "prepare",
            "--mailboxes",
            "2",
            "--quota-mb",
            "2",
            "--databases",
            "1",
        ],
    );
    assert_eq!(prep.code, 2, "{}", prep.stderr);
    assert!(prep.stderr.contains("in use"), "{}", prep.stderr);

    crate::common::signal(&first, "TERM");
    let out = first.wait_with_output().expect("wait");
    assert_eq!(
        out.status.code(),
        Some(130),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let r = read_json(&d.join("r1/result.json"));
    assert_eq!(r["test"]["interrupted"], true);
    assert_eq!(r["stopped"]["reason"], "interrupted");
    assert_eq!(r["verdict"]["pass"], false);
    let integrity = &r["integrity"];
    for k in [
        "bad_pages",
        "correctable_pages",
        "wrong_page_number_pages",
        "stale_pages",
    ] {
        assert_eq!(integrity[k], 0, "{k}: {integrity}");
    }
    assert!(r["integrity"]["pages_verified"].as_u64().unwrap_or(0) > 0);
    let text = std::fs::read_to_string(&log).expect("log");
    let last = text.lines().last().expect("a line");
    assert!(last.contains("Test interrupted"), "{last}");

    // The databases were shut down cleanly and attach.
    let again = in_dir(d, &run_args("2s", "r3", &[]));
    assert_eq!(again.code, 0, "{}\n{}", again.stdout, again.stderr);
    assert!(log_has(&d.join("r3/test.log"), "Attach "));
}

/// 8.11: Ctrl-C during the attain phase reports nothing measured, not "1000 IOPS over 0.001 s".
#[test]
fn interruption_before_measuring_reports_nothing_measured() {
    let dir = tmp();
    let d = &*dir;
    // A settle as long as the test: interrupting in it is interrupting before measuring.
    std::fs::write(
        d.join("fast.toml"),
        FAST.replace("max_dirty_age_s = 1", "max_dirty_age_s = 120"),
    )
    .expect("config");
    let child = spawn(d, &run_args("60s", "r", &["--progress", "jsonl"]));
    let log = d.join("r/test.log");
    wait_for(Duration::from_secs(60), "the settle phase", || {
        log_has(&log, "Cache prerequisite met")
    });
    crate::common::signal(&child, "INT");
    let out = child.wait_with_output().expect("wait");
    assert_eq!(out.status.code(), Some(130));
    let r = read_json(&d.join("r/result.json"));
    assert_eq!(r["stopped"]["reason"], "interrupted");
    assert_eq!(r["achieved_iops"], 0.0);
    assert_eq!(r["test"]["duration_s"], 0.0);
    // Every figure is a number (a 0/0 rate used to be written as null and broke the report).
    let text = std::fs::read_to_string(d.join("r/result.json")).expect("result");
    assert!(!text.contains("null"), "{text}");
    assert!(d.join("r/report.html").exists(), "the report was written");
    // The event stream ends with the result and its reason.
    let stdout = String::from_utf8_lossy(&out.stdout);
    let last: serde_json::Value =
        serde_json::from_str(stdout.lines().last().expect("events")).expect("json");
    assert_eq!(last["event"], "result");
    assert_eq!(last["stopped"]["reason"], "interrupted");
}

/// 8.8: interrupted while preparing, a run still writes a result.json saying so.
#[test]
fn interruption_during_prepare_still_writes_a_result() {
    let dir = tmp();
    let d = &*dir;
    std::fs::write(d.join("fast.toml"), FAST).expect("config");
    // 2 x 256 MiB; the writer is paused as soon as data is on disk, so the signal lands
    // mid-creation however fast the disk is, and the test writes little.
    let child = spawn(
        d,
        &[
            "run",
            "--threads",
            "4",
            "--config",
            "fast.toml",
            "--mailboxes",
            "2",
            "--quota-mb",
            "256",
            "--databases",
            "2",
            "--iops-per-mailbox",
            "10",
            "--out",
            "r",
            "--progress",
            "quiet",
        ],
    );
    let db = d.join("mbxstress-data/databases/mbxstress001.edb");
    let start = Instant::now();
    while mbx_io::platform::allocated_bytes(&db).unwrap_or(0) < 4 << 20 {
        assert!(
            start.elapsed() < Duration::from_secs(60),
            "creation did not start"
        );
        std::thread::sleep(Duration::from_millis(1));
    }
    crate::common::signal(&child, "STOP");
    let written = mbx_io::platform::allocated_bytes(&db).unwrap_or(0);
    assert!(written < 256 << 20, "creation finished before the signal");
    crate::common::signal(&child, "HUP");
    crate::common::signal(&child, "CONT");
    let out = child.wait_with_output().expect("wait");
    assert_eq!(
        out.status.code(),
        Some(130),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let r = read_json(&d.join("r/result.json"));
    assert_eq!(r["stopped"]["reason"], "interrupted");
    assert_eq!(r["instances"].as_array().map(Vec::len), Some(0));
    let text = std::fs::read_to_string(d.join("r/test.log")).expect("log");
    assert!(
        text.lines()
            .last()
            .is_some_and(|l| l.contains("Test interrupted")),
        "{text}"
    );
}

/// 8.11: bytes appended to a database file are a verification failure, not "clean".
#[test]
fn verify_fails_on_bytes_appended_to_a_database() {
    let dir = tmp();
    let d = &*dir;
    let prep = in_dir(
        d,
        &["prepare", "--databases", "1", "--database-size-mb", "1"],
    );
    assert_eq!(prep.code, 0, "{}", prep.stderr);
    let run = in_dir(d, &["verify", "--json"]);
    assert_eq!(run.code, 0, "{}", run.stderr);
    assert_eq!(run.json()["checksum"][0]["trailing_bytes"], 0);
    let db = d.join("mbxstress-data/databases/mbxstress001.edb");
    let mut f = std::fs::OpenOptions::new()
        .append(true)
        .open(&db)
        .expect("open");
    std::io::Write::write_all(&mut f, &vec![7u8; 1 << 20]).expect("append");
    drop(f);
    let run = in_dir(d, &["verify", "--json"]);
    assert_eq!(run.code, 1, "{}", run.stderr);
    assert_eq!(run.json()["checksum"][0]["trailing_bytes"], 1 << 20);
    let run = in_dir(d, &["verify"]);
    assert_eq!(run.code, 1);
    assert!(
        run.stdout.contains("1,048,576 bytes follow"),
        "{}",
        run.stdout
    );
    // An absurd read size is a usage error, not an allocation abort.
    let run = in_dir(d, &["verify", "--read-size", "1T"]);
    assert_eq!(run.code, 2, "{}", run.stderr);
    assert!(run.stderr.contains("--read-size"), "{}", run.stderr);
}

/// 8.11: a run that finds a damaged header copy reports it as an integrity finding (and fails),
/// rather than rewriting it silently; the repaired database then passes.
#[test]
fn a_damaged_header_copy_is_reported_by_run() {
    let dir = tmp();
    let d = &*dir;
    std::fs::write(d.join("fast.toml"), FAST).expect("config");
    let prep = in_dir(
        d,
        &[
            "prepare",
            "--mailboxes",
            "4",
            "--quota-mb",
            "2",
            "--databases",
            "2",
        ],
    );
    assert_eq!(prep.code, 0, "{}", prep.stderr);
    let db = d.join("mbxstress-data/databases/mbxstress002.edb");
    let f = std::fs::OpenOptions::new()
        .write(true)
        .open(&db)
        .expect("open");
    mbx_io::platform::write_all_at(&f, &[0xA5u8; 512], 32768 + 100).expect("damage");
    drop(f);
    let run = in_dir(d, &run_args_on("2", "2s", "r1", &[]));
    assert_eq!(run.code, 1, "{}\n{}", run.stdout, run.stderr);
    let r = read_json(&d.join("r1/result.json"));
    let errors = r["errors"].as_array().expect("errors");
    let e = errors
        .iter()
        .find(|e| e["class"] == "header_copy_damaged")
        .unwrap_or_else(|| panic!("{errors:?}"));
    assert_eq!(e["page"], 1);
    assert!(e["path"]
        .as_str()
        .is_some_and(|p| p.ends_with("mbxstress002.edb")));
    assert_eq!(r["stopped"]["reason"], "verdict_failed");
    assert!(log_has(&d.join("r1/test.log"), "header copy 2"));
    let again = in_dir(d, &run_args_on("2", "2s", "r2", &[]));
    assert_eq!(again.code, 0, "{}\n{}", again.stdout, again.stderr);
}

/// 8.8 (acceptance): the disk fills during measurement. The run stops with a result.json that
/// says why (no space, naming the file), test.log ends with the reason, the exit code is 3, and
/// once space is freed the next run attaches the databases.
#[test]
#[cfg(target_os = "linux")]
fn full_disk_during_measurement_keeps_the_result_and_the_databases() {
    let dir = tmp();
    let d = &*dir;
    let Some(fs) = crate::devices::mounted_loop_fs(false, 24) else {
        return;
    };
    std::fs::write(d.join("fast.toml"), FAST).expect("config");
    let db = fs.mnt.join("db");
    let logs = fs.mnt.join("logs");
    let (db_s, logs_s) = (db.display().to_string(), logs.display().to_string());
    // 400 IOPS makes a new 1 MiB log file every few seconds.
    let args = |duration: &'static str, out: &'static str| {
        let mut a: Vec<String> =
            run_args(duration, out, &["--db-path", &db_s, "--log-path", &logs_s])
                .into_iter()
                .map(String::from)
                .collect();
        for (k, v) in [
            ("--databases", "2"),
            ("--mailboxes", "4"),
            ("--quota-mb", "2"),
            ("--iops-per-mailbox", "100"),
        ] {
            if let Some(i) = a.iter().position(|x| x == k) {
                a[i + 1] = v.into();
            }
        }
        a
    };
    let a = args("120s", "r1");
    let mut a = a;
    if let Some(i) = a.iter().position(|x| x == "quiet") {
        a[i] = "jsonl".into();
    }
    let refs: Vec<&str> = a.iter().map(String::as_str).collect();
    let child = spawn(d, &refs);
    let log = d.join("r1/test.log");
    wait_for(Duration::from_secs(60), "measurement", || {
        log_has(&log, "Performance logging started")
    });
    // Fill the filesystem, and keep it full (circular logging frees log files) until the run
    // stops.
    let filler = fs.mnt.join("filler");
    let mut f = std::fs::File::create(&filler).expect("filler");
    // MiB chunks until the first one fails, then 4 KiB ones: a write that fails for want of space
    // is still charged to the writer (as bytes written, then cancelled), and the suite's write
    // budget counts it.
    let mut chunk = vec![0x5Au8; 1 << 20];
    let started = Instant::now();
    let mut child = child;
    // Drain the event stream while waiting, so a full pipe can never block the run.
    let stdout = child.stdout.take().expect("stdout");
    let events = std::thread::spawn(move || {
        let mut text = String::new();
        std::io::Read::read_to_string(&mut { stdout }, &mut text).expect("events");
        text
    });
    let status = loop {
        while std::io::Write::write_all(&mut f, &chunk).is_ok() {}
        chunk.truncate(4096);
        let _ = f.sync_all();
        if let Some(s) = child.try_wait().expect("wait") {
            break s;
        }
        assert!(
            started.elapsed() < Duration::from_secs(90),
            "the run did not stop on a full disk"
        );
        std::thread::sleep(Duration::from_millis(100));
    };
    drop(f);
    std::fs::remove_file(&filler).expect("free the space");
    assert_eq!(status.code(), Some(3));
    let events = events.join().expect("events thread");
    let lines: Vec<serde_json::Value> = events
        .lines()
        .map(|l| serde_json::from_str(l).expect("json line"))
        .collect();
    assert!(
        lines
            .iter()
            .any(|e| e["event"] == "error" && e["error"]["class"] == "no_space"),
        "no error event"
    );
    let last = lines.last().expect("events");
    assert_eq!(last["event"], "result");
    assert_eq!(last["stopped"]["reason"], "io_error");
    let r = read_json(&d.join("r1/result.json"));
    assert_eq!(r["stopped"]["reason"], "io_error", "{}", r["stopped"]);
    let msg = r["stopped"]["message"].as_str().unwrap_or("");
    assert!(msg.contains("No space left on device"), "{msg}");
    assert!(msg.contains(&logs_s) || msg.contains(&db_s), "{msg}");
    assert_eq!(r["errors"][0]["class"], "no_space", "{}", r["errors"]);
    // An offset in a log file is not a database page.
    if msg.contains(&logs_s) {
        assert!(r["errors"][0]["page"].is_null(), "{}", r["errors"]);
    }
    assert_eq!(r["verdict"]["pass"], false);
    // Logged against the volume where it occurred: the loop device's mount point.
    let mnt = fs.mnt.display().to_string();
    assert_eq!(
        r["errors"][0]["volume"].as_str(),
        Some(mnt.as_str()),
        "{}",
        r["errors"]
    );
    let html = std::fs::read_to_string(d.join("r1/report.html")).expect("report");
    assert!(
        html.contains("id=\"errors-per-volume\""),
        "no errors section"
    );
    assert!(html.contains(&mnt), "the volume is not in the report");
    let text = std::fs::read_to_string(&log).expect("log");
    assert!(
        text.lines()
            .last()
            .is_some_and(|l| l.contains("Test io error") && l.contains("No space left")),
        "{text}"
    );
    // The check here is that the databases attach and the next run completes on them without
    // an error or an integrity finding. Its IOPS verdict is not the point: 2 s at a low target
    // is a few dozen I/Os on a loaded loop device (8.5 of 20 IOPS was seen in CI).
    let mut a = args("2s", "r2");
    if let Some(i) = a.iter().position(|x| x == "--iops-per-mailbox") {
        a[i + 1] = "5".into();
    }
    let refs: Vec<&str> = a.iter().map(String::as_str).collect();
    let again = in_dir(d, &refs);
    assert!(
        again.code == 0 || again.code == 1,
        "{}\n{}",
        again.stdout,
        again.stderr
    );
    assert!(log_has(&d.join("r2/test.log"), "Attach "));
    let r2 = read_json(&d.join("r2/result.json"));
    assert!(
        r2["stopped"]["reason"] == "completed" || r2["stopped"]["reason"] == "verdict_failed",
        "{}",
        r2["stopped"]
    );
    assert_eq!(r2["errors"], serde_json::json!([]), "{}", r2["errors"]);
    let integrity = r2["verdict"]["checks"]
        .as_array()
        .and_then(|c| c.iter().find(|c| c["name"] == "data_integrity_errors"))
        .expect("integrity check");
    assert_eq!(integrity["pass"], true, "{integrity}");
    assert_eq!(r2["test"]["duration_s"].as_f64().map(f64::round), Some(2.0));
}

/// Issue 25, case 7: `iobench --file <a database in use> --force` (which overwrote both header
/// copies of a live database) respects the lock a running test holds: it exits 2 at once naming
/// the file and the holder's PID, before writing; so does a log file in the run's log folder.
/// After the run stops, its databases verify clean and the run found no integrity error.
#[test]
fn iobench_respects_the_lock_of_a_running_test() {
    let dir = tmp();
    let d = &*dir;
    std::fs::write(d.join("fast.toml"), FAST).expect("config");
    // Two databases: the log folders are logs/db001 and logs/db002 (one alone is logs/).
    let first = spawn(d, &run_args_on("2", "60s", "r1", &[]));
    let log = d.join("r1/test.log");
    wait_for(Duration::from_secs(60), "the first run to measure", || {
        log_has(&log, "Performance logging started")
    });
    let db = d.join("mbxstress-data/databases/mbxstress001.edb");
    let log_dir = d.join("mbxstress-data/logs/db001");
    let log_file = log_dir.join("E0000000001.log");
    let bench = |file: &Path| {
        let f = file.to_str().expect("UTF-8 path");
        let started = Instant::now();
        let run = in_dir(
            d,
            &[
                "iobench",
                "--file",
                f,
                "--force",
                "--size",
                "1M",
                "--rw",
                "write",
                "--bs",
                "32k",
                "--runtime",
                "1s",
                "--engine",
                "sync",
            ],
        );
        (run, started.elapsed())
    };
    let on_db = bench(&db);
    let on_log = bench(&log_file);
    let log_existed = log_file.is_file();
    let pid = first.id();
    crate::common::signal(&first, "TERM");
    let out = first.wait_with_output().expect("wait");
    for (what, (run, took), path) in [("database", on_db, &db), ("log", on_log, &log_dir)] {
        assert_eq!(run.code, 2, "iobench on the {what}: {}", run.stderr);
        assert!(
            run.stderr.contains(&format!(
                "{} is in use by another mbxstress command (PID {})",
                path.display(),
                pid
            )),
            "iobench on the {what} names the path and the holder: {}",
            run.stderr
        );
        assert!(took < Duration::from_secs(10), "{what}: not at once");
    }
    assert!(log_existed, "the log file the test aimed at exists");
    assert_eq!(
        out.status.code(),
        Some(130),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let r = read_json(&d.join("r1/result.json"));
    assert_eq!(r["integrity"]["bad_pages"], 0, "{}", r["integrity"]);
    assert!(
        r["errors"].as_array().is_none_or(Vec::is_empty),
        "{}",
        r["errors"]
    );
    let verify = in_dir(d, &["verify", "--json"]);
    assert_eq!(verify.code, 0, "{}\n{}", verify.stdout, verify.stderr);
}
