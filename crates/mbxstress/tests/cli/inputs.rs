//! `import`, `esrp`, `compare` and `report` on inputs that are not what they should be (issue 8,
//! item 7: bounded reads of regular files only), and on results that are not complete, passing
//! measurements (item 11: flagged wherever they are used).

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use crate::common::{mbx, Run};

fn fixture(name: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../mbx-report/tests/fixtures")
        .join(name)
}

fn s(p: &Path) -> &str {
    p.to_str().expect("UTF-8 path")
}

/// Runs `mbxstress` with at most 4 GiB of address space and a 20 s deadline, so that a
/// regression to an unbounded read fails the test quickly (allocation failure or timeout)
/// instead of exhausting the machine or hanging.
fn mbx_bounded(args: &[&str]) -> (Run, Duration) {
    let start = Instant::now();
    let mut child = Command::new("sh")
        .arg("-c")
        .arg("ulimit -v 4194304 && exec \"$0\" \"$@\"")
        .arg(env!("CARGO_BIN_EXE_mbxstress"))
        .args(args)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("spawn mbxstress");
    while child.try_wait().expect("try_wait").is_none() {
        if start.elapsed() > Duration::from_secs(20) {
            let _ = child.kill();
            let _ = child.wait();
            panic!("mbxstress {args:?} did not finish within 20 s");
        }
        std::thread::sleep(Duration::from_millis(10));
    }
    let out = child.wait_with_output().expect("wait");
    (
        Run {
            code: out.status.code().unwrap_or(-1),
            stdout: String::from_utf8_lossy(&out.stdout).into_owned(),
            stderr: String::from_utf8_lossy(&out.stderr).into_owned(),
        },
        start.elapsed(),
    )
}

fn mkfifo(path: &Path) {
    let ok = Command::new("mkfifo")
        .arg(path)
        .status()
        .expect("run mkfifo")
        .success();
    assert!(ok, "mkfifo {}", path.display());
}

/// `import /dev/zero` (which grew to 24 GB before) exits 2 at once, naming /dev/zero and what
/// was expected; `esrp`, `compare` and `report` share the check.
#[test]
fn dev_zero_is_refused_at_once() {
    let (run, took) = mbx_bounded(&["import", "/dev/zero"]);
    assert_eq!(run.code, 2, "{}", run.stderr);
    assert!(
        run.stderr
            .contains("/dev/zero is a character device, not a regular file")
            && run.stderr.contains("expected a Jetstress report"),
        "{}",
        run.stderr
    );
    assert!(took < Duration::from_secs(5), "took {took:?}");
    for args in [
        &["esrp", "/dev/zero"][..],
        &["compare", "/dev/zero", "/dev/zero"],
        &["report", "/dev/zero"],
    ] {
        let (run, _) = mbx_bounded(args);
        assert_eq!(run.code, 2, "{args:?}: {}", run.stderr);
        assert!(run.stderr.contains("/dev/zero"), "{args:?}: {}", run.stderr);
    }
}

/// A FIFO (which blocked forever) and a directory are refused with exit 2.
#[test]
fn fifo_and_directory_are_refused() {
    let dir = tempfile::tempdir().expect("tempdir");
    let fifo = dir.path().join("jetstress.html");
    mkfifo(&fifo);
    let (run, _) = mbx_bounded(&["esrp", s(&fifo)]);
    assert_eq!(run.code, 2, "{}", run.stderr);
    assert!(
        run.stderr
            .contains("jetstress.html is a FIFO (named pipe), not a regular file"),
        "{}",
        run.stderr
    );
    let (run, _) = mbx_bounded(&["import", s(dir.path())]);
    assert_eq!(run.code, 2, "{}", run.stderr);
    assert!(
        run.stderr.contains("is a directory, not a regular file"),
        "{}",
        run.stderr
    );
}

/// A file over the 64 MiB limit (sparse: no disk used) is refused from its size, naming the
/// file, its size and the limit; a 64 GiB one as fast, so nothing was read.
#[test]
fn over_limit_file_is_refused_without_reading_it() {
    let dir = tempfile::tempdir().expect("tempdir");
    let big = dir.path().join("huge-report.txt");
    let f = std::fs::File::create(&big).expect("create");
    f.set_len((64 << 20) + 1).expect("set_len");
    let (run, _) = mbx_bounded(&[
        "compare",
        s(&big),
        s(&fixture("tintri-t880-performance.txt")),
    ]);
    assert_eq!(run.code, 2, "{}", run.stderr);
    assert!(
        run.stderr.contains("huge-report.txt is 67108865 bytes")
            && run.stderr.contains("over the 64.0 MiB limit"),
        "{}",
        run.stderr
    );
    f.set_len(64 << 30).expect("set_len 64 GiB");
    let (run, took) = mbx_bounded(&["import", s(&big)]);
    assert_eq!(run.code, 2, "{}", run.stderr);
    assert!(run.stderr.contains("68719476736 bytes"), "{}", run.stderr);
    assert!(took < Duration::from_secs(5), "took {took:?}");
}

/// Invalid UTF-8 gives exit 2 and a message, not a panic.
#[test]
fn invalid_utf8_is_a_usage_error() {
    let dir = tempfile::tempdir().expect("tempdir");
    let bad = dir.path().join("latin1.txt");
    std::fs::write(&bad, b"Machine Name\tM\xfcnchen\n").expect("write");
    let run = mbx(&["import", s(&bad)]);
    assert_eq!(run.code, 2, "{}", run.stderr);
    assert!(
        run.stderr
            .contains("latin1.txt is not UTF-8 text (invalid byte at offset 14)"),
        "{}",
        run.stderr
    );
}

/// A result interrupted during attain: "achieved 1000 IOPS" over 0.001 s, verdict Fail. Built
/// from the fixture (a real, complete result).
fn interrupted_result(dir: &Path) -> PathBuf {
    let text = std::fs::read_to_string(fixture("mbxstress-result.json")).expect("fixture");
    let mut v: serde_json::Value = serde_json::from_str(&text).expect("fixture JSON");
    v["test"]["interrupted"] = true.into();
    v["test"]["duration_s"] = 0.001.into();
    v["achieved_iops"] = 1000.0.into();
    v["verdict"]["pass"] = false.into();
    v["verdict"]["checks"] = serde_json::json!([
        { "name": "completed_duration_s", "value": 0.001, "limit": 300.0, "pass": false }
    ]);
    let path = dir.join("result.json");
    std::fs::write(&path, serde_json::to_string_pretty(&v).expect("json")).expect("write");
    path
}

/// `esrp` still sums an interrupted result but says so: a warning line naming the file and why
/// (human), `warnings` and per-server and aggregate `flags` (JSON, existing keys unchanged).
#[test]
fn esrp_warns_about_an_interrupted_result() {
    let dir = tempfile::tempdir().expect("tempdir");
    let bad = interrupted_result(dir.path());
    let good = fixture("dell-ps6210e-esrp-performance.txt");
    let run = mbx(&["esrp", s(&good), s(&bad)]);
    assert_eq!(run.code, 0, "{}", run.stderr);
    let line = format!("warning: {}: the test was interrupted", bad.display());
    assert!(run.stdout.contains(&line), "{}", run.stdout);
    assert!(
        run.stdout.contains("0.001 s were measured"),
        "{}",
        run.stdout
    );
    // Flagged rows, and the aggregate that sums one, are marked in the table.
    for row in ["\nvm *  ", "\naggregate *  ", "\nEQLESRP5   "] {
        assert!(run.stdout.contains(row), "{row:?}: {}", run.stdout);
    }
    assert!(
        run.stdout
            .contains("the aggregate includes 1 of 2 server results"),
        "{}",
        run.stdout
    );

    let run = mbx(&["esrp", s(&good), s(&bad), "--json"]);
    assert_eq!(run.code, 0, "{}", run.stderr);
    let v = run.json();
    let codes = |x: &serde_json::Value| -> Vec<String> {
        x.as_array()
            .expect("array")
            .iter()
            .map(|c| c.as_str().expect("code").to_string())
            .collect()
    };
    assert!(codes(&v["servers"][0]["flags"]).is_empty());
    assert_eq!(
        codes(&v["servers"][1]["flags"]),
        ["interrupted", "verdict_failed", "too_short"]
    );
    assert_eq!(
        codes(&v["aggregate"]["flags"]),
        ["interrupted", "verdict_failed", "too_short"]
    );
    assert_eq!(v["warnings"][0]["code"], "interrupted");
    assert_eq!(v["warnings"][0]["source"], s(&bad));
    assert!(v["aggregate"]["db_transfers_per_s"].is_number());
    assert!(run.stderr.contains("warning:"), "{}", run.stderr);
}

/// `compare` and `report` flag it too: a warning line, `warnings` in compare's JSON, a banner at
/// the top of report.html.
#[test]
fn compare_and_report_flag_an_interrupted_result() {
    let dir = tempfile::tempdir().expect("tempdir");
    let bad = interrupted_result(dir.path());
    let good = fixture("mbxstress-result.json");
    let run = mbx(&["compare", s(&good), s(&bad)]);
    assert_eq!(run.code, 0, "{}", run.stderr);
    assert!(
        run.stdout.contains(&format!(
            "warning: B ({}): the test was interrupted",
            bad.display()
        )),
        "{}",
        run.stdout
    );
    let run = mbx(&["compare", s(&good), s(&bad), "--json"]);
    let v = run.json();
    let w = v["warnings"].as_array().expect("warnings");
    assert_eq!(w.len(), 3, "{w:?}");
    assert!(w.iter().all(|x| x["which"] == "b"));
    assert!(v["rows"].is_array() && v["a"].is_string());

    let run = mbx(&["report", s(dir.path())]);
    assert_eq!(run.code, 0, "{}", run.stderr);
    let line = format!("warning: {}: the test was interrupted", bad.display());
    assert!(run.stderr.contains(&line), "{}", run.stderr);
    let html = std::fs::read_to_string(dir.path().join("report.html")).expect("html");
    let banner = html.find("class=\"banner\"").expect("banner");
    assert!(banner < html.find("Test Summary").expect("summary"));
    assert!(html.contains("interrupted before the end of its duration"));
}

/// Every file a user names on the command line goes through the one bounded reader (issue 25,
/// case 9): `/dev/zero` (which ran the machine out of memory) and a FIFO (which blocked forever)
/// given to `--config`, `--profile`, `--jetstress-config`, `size --input`, `size --profile-out`
/// (an existing file there is read to see whether it is ours) and `fleet run --hosts` exit 2 at
/// once, and the message names the flag and the path.
#[cfg(unix)]
#[test]
fn every_file_input_is_bounded() {
    let dir = tempfile::tempdir().expect("tempdir");
    let fifo = dir.path().join("input.fifo");
    mkfifo(&fifo);
    let out = dir.path().join("results");
    let o = s(&out);
    let cases: [(&str, &[&str]); 7] = [
        (
            "--config",
            &["run", "--duration", "1s", "--out", o, "--config"],
        ),
        (
            "--profile",
            &["run", "--duration", "1s", "--out", o, "--profile"],
        ),
        (
            "--jetstress-config",
            &["run", "--duration", "1s", "--out", o, "--jetstress-config"],
        ),
        ("--profile", &["prepare", "--db-path", o, "--profile"]),
        ("--input", &["size", "--input"]),
        ("--profile-out", &["size", "--profile-out"]),
        ("--hosts", &["fleet", "run", "--out", o, "--hosts"]),
    ];
    for (flag, args) in cases {
        for path in ["/dev/zero", s(&fifo)] {
            let mut refs = args.to_vec();
            refs.push(path);
            let (run, took) = mbx_bounded(&refs);
            assert_eq!(run.code, 2, "{refs:?}: {}", run.stderr);
            assert!(
                run.stderr.contains(flag) && run.stderr.contains(path),
                "{refs:?}: the message names {flag} and {path}: {}",
                run.stderr
            );
            assert!(
                run.stderr.contains("not a regular file"),
                "{refs:?}: {}",
                run.stderr
            );
            assert!(took < Duration::from_secs(5), "{refs:?} took {took:?}");
        }
    }
    assert!(!out.exists(), "nothing written for a refused input");
}

/// A results folder's files are never followed through symbolic links (issue 25, case 8): a
/// folder whose test.log or samples.jsonl links to another file (/etc/shadow in the issue), whose
/// result.json names a log outside the folder, whose result.json is itself a link, or a suite
/// folder whose test folder is a link, is refused by `report` and `esrp` (exit 2) with a message
/// naming the file, and nothing of the linked file reaches report.html.
#[cfg(unix)]
#[test]
fn results_folder_links_are_not_followed() {
    use std::os::unix::fs::symlink;
    let dir = tempfile::tempdir().expect("tempdir");
    let secret = dir.path().join("secret.txt");
    std::fs::write(&secret, "TOP-SECRET-LINE\n").expect("secret");
    let fixture_text = std::fs::read_to_string(fixture("mbxstress-result.json")).expect("fixture");
    let folder = |name: &str, log_file: &str| -> PathBuf {
        let f = dir.path().join(name);
        std::fs::create_dir(&f).expect("folder");
        let mut v: serde_json::Value = serde_json::from_str(&fixture_text).expect("json");
        v["log_file"] = log_file.into();
        std::fs::write(f.join("result.json"), v.to_string()).expect("result.json");
        f
    };
    let refused = |args: &[&str], names: &str, why: &str| {
        let (run, took) = mbx_bounded(args);
        assert_eq!(run.code, 2, "{args:?}: {}", run.stderr);
        assert!(
            run.stderr.contains(names) && run.stderr.contains(why),
            "{args:?}: the message names {names} ({why}): {}",
            run.stderr
        );
        assert!(!run.stdout.contains("TOP-SECRET"), "{}", run.stdout);
        assert!(took < Duration::from_secs(5), "{args:?} took {took:?}");
    };
    let no_secret_in_report = |f: &Path| {
        let html = std::fs::read_to_string(f.join("report.html")).unwrap_or_default();
        assert!(!html.contains("TOP-SECRET"), "the linked file was embedded");
    };

    // test.log and samples.jsonl as links to a file outside the folder.
    for name in ["test.log", "samples.jsonl"] {
        let f = folder(&format!("link-{name}"), "test.log");
        symlink(&secret, f.join(name)).expect("symlink");
        refused(
            &["report", s(&f)],
            &f.join(name).display().to_string(),
            "symbolic link",
        );
        no_secret_in_report(&f);
    }
    // A log_file naming a path outside the folder, absolute or through `..`.
    for log in [s(&secret), "../secret.txt"] {
        let f = folder(&format!("name-{}", log.len()), log);
        refused(
            &["report", s(&f)],
            &format!("{log:?}"),
            "not a file name inside the folder",
        );
        no_secret_in_report(&f);
    }
    // result.json itself a link, in a folder given to report and esrp.
    let real = folder("real", "test.log");
    let linked = dir.path().join("linked");
    std::fs::create_dir(&linked).expect("folder");
    symlink(real.join("result.json"), linked.join("result.json")).expect("symlink");
    for cmd in ["report", "esrp"] {
        refused(&[cmd, s(&linked)], "result.json", "symbolic link");
    }
    // A suite folder whose 1-performance folder is a link.
    let suite = dir.path().join("suite");
    std::fs::create_dir(&suite).expect("suite");
    symlink(&real, suite.join("1-performance")).expect("symlink");
    refused(&["esrp", s(&suite)], "1-performance", "symbolic link");
    // The same folders without links are read (the refusals above are about the links only);
    // a link left where report writes its temporary file is replaced, never written through.
    symlink(&secret, real.join("report.html.tmp")).expect("symlink");
    let (run, _) = mbx_bounded(&["report", s(&real)]);
    assert_eq!(run.code, 0, "{}", run.stderr);
    assert!(
        std::fs::read_to_string(&secret).expect("secret") == "TOP-SECRET-LINE\n",
        "report wrote through a link in the folder"
    );
    assert!(real.join("report.html").is_file());
    let (run, _) = mbx_bounded(&["esrp", s(&real)]);
    assert_eq!(run.code, 0, "{}", run.stderr);
}

/// Issue 34 (the audit's bad flags and files): `loadgen` refuses, with a usage error (exit 2)
/// naming the flag and the limit and before anything connects or allocates: a user count past
/// the bound (4e9 once aborted allocating 288 GB), messages per day outside 50..=500, CR/LF in
/// the domain, the user template or an address (once sent as separate SMTP commands), and a
/// FIFO or device as the users, password or CA file (once blocking forever or reading without
/// end). Run under a 4 GiB address-space limit and a 20 s deadline.
#[test]
fn loadgen_refuses_bad_sizes_names_and_files_at_the_door() {
    let dir = crate::common::scratch("loadgen-door");
    let fifo = dir.join("fifo");
    mkfifo(&fifo);
    let out = dir.join("out");
    let fifo = s(&fifo);
    let base = [
        "loadgen",
        "run",
        "--server",
        "127.0.0.1",
        "--day",
        "2s",
        "--out",
    ];
    let cases: &[(&[&str], &str)] = &[
        (
            &[
                "--users",
                "4000000000",
                "--password",
                "p",
                "--domain",
                "d.test",
            ],
            "at most 1000000 users",
        ),
        (
            &[
                "--users",
                "4",
                "--password",
                "p",
                "--domain",
                "dom\r\nNOOP dom-inj",
            ],
            "--domain: domain \"dom\\r\\nNOOP dom-inj\": holds the control character",
        ),
        (
            &[
                "--users",
                "4",
                "--password",
                "p",
                "--domain",
                "d.test",
                "--user-template",
                "u%d\r\nNOOP",
            ],
            "--user-template",
        ),
        (
            &[
                "--users",
                "4",
                "--password",
                "p",
                "--domain",
                "d.test",
                "--helo",
                "c\nNOOP",
            ],
            "--helo",
        ),
        (
            &[
                "--users",
                "4",
                "--password",
                "p",
                "--domain",
                "d.test",
                "--messages-per-day",
                "1",
            ],
            "--messages-per-day 1: must be 50..=500",
        ),
        (
            &[
                "--users",
                "4",
                "--password",
                "p",
                "--domain",
                "d.test",
                "--messages-per-day",
                "10000",
            ],
            "--messages-per-day 10000: must be 50..=500",
        ),
        (
            &["--users-file", fifo, "--domain", "d.test"],
            "is a FIFO (named pipe), not a regular file",
        ),
        (
            &[
                "--users",
                "4",
                "--password-file",
                fifo,
                "--domain",
                "d.test",
            ],
            "is a FIFO (named pipe), not a regular file",
        ),
        (
            &[
                "--users",
                "4",
                "--password",
                "p",
                "--domain",
                "d.test",
                "--ca-file",
                "/dev/zero",
            ],
            "/dev/zero is a character device, not a regular file",
        ),
        (
            &[
                "--users",
                "4",
                "--password",
                "p",
                "--domain",
                "d.test",
                "--ca-file",
                fifo,
            ],
            "is a FIFO (named pipe), not a regular file",
        ),
    ];
    for (extra, says) in cases {
        let mut args: Vec<&str> = base.to_vec();
        args.push(s(&out));
        args.extend_from_slice(extra);
        let (run, took) = mbx_bounded(&args);
        assert_eq!(run.code, 2, "{extra:?}: {}", run.stderr);
        assert!(run.stderr.contains(says), "{extra:?}: {}", run.stderr);
        assert!(
            !run.stderr.contains('\r') && !run.stderr.contains("NOOP dom-inj\n"),
            "{extra:?}: escaped, not raw: {:?}",
            run.stderr
        );
        assert!(took < Duration::from_secs(10), "{extra:?}: {took:?}");
    }
    // A users file with CR in a name, and submit's addresses: the same checks.
    let users = dir.join("users.txt");
    std::fs::write(&users, "alice\u{7}:pw\nbob:pw\n").expect("users");
    let mut args: Vec<&str> = base.to_vec();
    args.push(s(&out));
    args.extend_from_slice(&["--users-file", s(&users), "--domain", "d.test"]);
    let (run, _) = mbx_bounded(&args);
    assert_eq!(run.code, 2, "{}", run.stderr);
    assert!(run.stderr.contains("\\x07"), "{}", run.stderr);
    let (run, _) = mbx_bounded(&[
        "loadgen",
        "submit",
        "--smtp",
        "smtp://127.0.0.1:1",
        "--from",
        "a@b.test\r\nRCPT TO:<x@y.test>",
        "--messages",
        "1",
    ]);
    assert_eq!(run.code, 2, "{}", run.stderr);
    assert!(run.stderr.contains("mail address"), "{}", run.stderr);
    let (run, _) = mbx_bounded(&[
        "loadgen",
        "init",
        "--server",
        "127.0.0.1",
        "--users",
        "4",
        "--password",
        "p",
        "--domain",
        "d.test",
        "--messages",
        "2000000",
        "--out",
        s(&out),
    ]);
    assert_eq!(run.code, 2, "{}", run.stderr);
    assert!(
        run.stderr.contains("at most 1000000 messages per mailbox"),
        "{}",
        run.stderr
    );
}
