//! Issue 24.7: every run leaves a result.json. It is written as the test starts (`stopped.reason`
//! "running") and replaced atomically as it ends, so a run killed on the way (kill -9, out of
//! memory, power lost) leaves a result that says it never finished, which `report` renders and
//! `esrp` flags; a test refused before it starts (a read-only --db-path) leaves one that says why.
//! Databases are MiBs; every folder is a `TempDir` removed at the end.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

use crate::common::{mbx_in, scratch, signal, spawn_in, FAST};

fn run_args<'a>(duration: &'a str, out: &'a str, extra: &[&'a str]) -> Vec<&'a str> {
    let mut v = vec![
        "run",
        "--threads",
        "4",
        "--config",
        "fast.toml",
        "--mailboxes",
        "4",
        "--quota-mb",
        "2",
        "--databases",
        "1",
        "--iops-per-mailbox",
        "10",
        "--duration",
        duration,
        "--sample-interval",
        "1s",
        "--out",
        out,
        "--progress",
        "quiet",
    ];
    v.extend_from_slice(extra);
    v
}

fn read_json(p: &Path) -> serde_json::Value {
    let text = std::fs::read_to_string(p).unwrap_or_else(|e| panic!("{}: {e}", p.display()));
    serde_json::from_str(&text).unwrap_or_else(|e| panic!("{}: {e}\n{text}", p.display()))
}

fn wait_for(limit: Duration, what: &str, ready: impl Fn() -> bool) {
    let start = Instant::now();
    while !ready() {
        assert!(start.elapsed() < limit, "timed out waiting for {what}");
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// kill -9 in the measured phase: result.json is there and says the test is still running (not
/// a measurement, not a pass); `report` renders the folder with the "unfinished" flag, and
/// `esrp` flags it the same way.
#[test]
fn a_killed_run_leaves_a_result_that_says_it_did_not_finish() {
    let dir = scratch("result-killed");
    std::fs::write(dir.join("fast.toml"), FAST).expect("config");
    let mut child = spawn_in(&dir, &run_args("60s", "r", &[]));
    let log = dir.join("r/test.log");
    wait_for(Duration::from_secs(60), "the measured phase", || {
        std::fs::read_to_string(&log).is_ok_and(|t| t.contains("Performance logging started"))
    });
    std::thread::sleep(Duration::from_millis(1500));
    signal(&child, "KILL");
    let status = child.wait().expect("wait");
    assert_eq!(status.code(), None, "killed by a signal: {status:?}");

    let v = read_json(&dir.join("r/result.json"));
    assert_eq!(v["stopped"]["reason"], "running", "{}", v["stopped"]);
    assert!(
        v["stopped"]["message"]
            .as_str()
            .is_some_and(|m| m.contains("never finished")),
        "{}",
        v["stopped"]
    );
    assert_eq!(v["verdict"]["pass"], false);
    assert_eq!(v["test"]["type"], "performance");

    let report = mbx_in(Some(&dir), &["report", "r"]);
    assert_eq!(report.code, 0, "{}", report.stderr);
    assert!(
        report.stderr.contains("never finished"),
        "{}",
        report.stderr
    );
    let html = std::fs::read_to_string(dir.join("r/report.html")).expect("report.html");
    assert!(
        html.contains("data-code=\"unfinished\""),
        "no unfinished flag"
    );

    // Killed before its first figures: nothing to summarize, said as such (exit 2, the input
    // named as excluded, its flag still a warning; issue 25, case 13).
    let esrp = mbx_in(Some(&dir), &["esrp", "r/result.json", "--json"]);
    assert_eq!(esrp.code, 2, "{}", esrp.stderr);
    let summary = esrp.json();
    assert_eq!(summary["excluded"][0]["code"], "no_instances", "{summary}");
    let codes: Vec<&str> = summary["warnings"]
        .as_array()
        .expect("warnings")
        .iter()
        .filter_map(|w| w["code"].as_str())
        .collect();
    assert!(codes.contains(&"unfinished"), "{codes:?}");
}

/// A read-only file system under the test's directory: a tmpfs of 1 MiB remounted read-only
/// (root), unmounted and removed on drop, also when the test fails.
struct ReadOnlyMount {
    dir: PathBuf,
}

impl Drop for ReadOnlyMount {
    fn drop(&mut self) {
        let _ = Command::new("umount").arg(&self.dir).status();
    }
}

fn sh(program: &str, args: &[&str]) -> Result<(), String> {
    let out = Command::new(program)
        .args(args)
        .output()
        .map_err(|e| format!("{program}: {e}"))?;
    if out.status.success() {
        Ok(())
    } else {
        Err(format!(
            "{program} {}: {}",
            args.join(" "),
            String::from_utf8_lossy(&out.stderr).trim()
        ))
    }
}

/// `dir` made read-only for this process: as root (who writes through permissions) a read-only
/// tmpfs mounted on it; otherwise its permissions. `None` when root cannot mount (a container
/// without the capability): then, as the device tests, the test is skipped, visibly
/// ([`crate::skip`]), unless MBX_REQUIRE_DEVICE_TESTS is set, when it fails.
fn read_only(dir: &Path) -> Option<Option<ReadOnlyMount>> {
    std::fs::create_dir_all(dir).expect("mkdir");
    let uid = Command::new("id").arg("-u").output().expect("id -u");
    let root = String::from_utf8_lossy(&uid.stdout).trim() == "0";
    if !root {
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(dir, std::fs::Permissions::from_mode(0o555)).expect("chmod");
        return Some(None);
    }
    let d = dir.to_str().expect("UTF-8 path");
    let mounted = sh("mount", &["-t", "tmpfs", "-o", "size=1m", "tmpfs", d]);
    let mount = mounted.as_ref().ok().map(|_| ReadOnlyMount {
        dir: dir.to_path_buf(),
    });
    match mounted.and_then(|()| sh("mount", &["-o", "remount,ro", d])) {
        Ok(()) => Some(mount),
        Err(why) => {
            crate::skip::skip(
                crate::skip::Need::Devices,
                &format!("the read-only mount failed: {why} (needs root and mount)"),
            );
            None
        }
    }
}

/// --db-path on a read-only file system: the test is refused before it starts (exit 3), and
/// the results folder holds a result.json that says so, with the message, the path and errno.
#[test]
fn a_refusal_before_the_start_leaves_a_result() {
    let dir = scratch("result-read-only");
    std::fs::write(dir.join("fast.toml"), FAST).expect("config");
    let ro = dir.join("ro");
    let Some(_mount) = read_only(&ro) else {
        return;
    };
    let run = mbx_in(
        Some(&dir),
        &run_args("2s", "r", &["--db-path", "ro/db", "--log-path", "ro/logs"]),
    );
    assert_eq!(run.code, 3, "{}", run.stderr);
    let v = read_json(&dir.join("r/result.json"));
    assert_eq!(v["stopped"]["reason"], "error", "{}", v["stopped"]);
    let message = v["stopped"]["message"].as_str().expect("message");
    assert!(message.contains("ro/db"), "{message}");
    assert!(
        message.contains("Read-only file system") || message.contains("Permission denied"),
        "{message}"
    );
    let e = &v["errors"][0];
    assert_eq!(e["class"], "error", "{e}");
    assert_eq!(e["path"], "ro/db", "{e}");
    // EROFS (the mount, as root) or EACCES (the permissions, otherwise), Linux's numbers.
    assert!(e["errno"] == 30 || e["errno"] == 13, "{e}");
    // Nothing was created on the read-only path, and the run made no databases elsewhere.
    assert!(!dir.join("ro/db").exists());
    assert!(!dir.join("mbxstress-data").exists());
}
