//! `loadgen run` against a server that stops answering (issue 34): the run ends at its phase's
//! deadline, derived from the run's own length, with a verdict naming the phase and the server;
//! a SIGTERM meanwhile ends it within about a second. The server is a loopback listener that
//! accepts and never says a word (no real server freezes on demand).

use std::net::TcpListener;
use std::time::{Duration, Instant};

use serde_json::Value;

use crate::common::{scratch, signal, spawn_in};

/// A listener that accepts every connection and holds it silently until the test ends.
fn frozen() -> u16 {
    let l = TcpListener::bind("127.0.0.1:0").expect("bind");
    let port = l.local_addr().expect("addr").port();
    std::thread::spawn(move || {
        let mut held = Vec::new();
        for s in l.incoming() {
            match s {
                Ok(s) => held.push(s),
                Err(_) => break,
            }
        }
    });
    port
}

fn args(port: u16, out: &str) -> Vec<String> {
    let url = |scheme: &str| format!("{scheme}://127.0.0.1:{port}");
    [
        "loadgen",
        "run",
        "--smtp",
        &url("smtp"),
        "--imap",
        &url("imap"),
        "--pop3",
        &url("pop3"),
        "--users",
        "4",
        "--password",
        "pw",
        "--domain",
        "d.test",
        "--day",
        "5s",
        "--progress",
        "quiet",
        "--out",
        out,
    ]
    .iter()
    .map(|s| s.to_string())
    .collect()
}

/// The audit's never-greeting server: the baseline once waited a whole command timeout (60 s)
/// per round of users before a short day. Now it ends at the baseline's deadline (the test's
/// length, at least 10 s): exit 1, `stopped` in phase `baseline` naming the IMAP server, the
/// `phase_deadline` check failed.
#[test]
fn a_frozen_server_ends_the_run_at_the_baselines_deadline() {
    let port = frozen();
    let dir = scratch("loadgen-frozen");
    let a = args(port, "out");
    let a: Vec<&str> = a.iter().map(String::as_str).collect();
    let t = Instant::now();
    let child = spawn_in(&dir, &a);
    let o = child.wait_with_output().expect("wait");
    let took = t.elapsed();
    assert_eq!(
        o.status.code(),
        Some(1),
        "{}",
        String::from_utf8_lossy(&o.stderr)
    );
    assert!(
        took >= Duration::from_secs(10) && took < Duration::from_secs(20),
        "{took:?}"
    );
    let v: Value = serde_json::from_str(
        &std::fs::read_to_string(dir.join("out/result.json")).expect("result.json"),
    )
    .expect("json");
    let stopped = &v["stopped"];
    assert_eq!(stopped["reason"], "verdict_failed", "{stopped}");
    assert_eq!(stopped["phase"], "baseline", "{stopped}");
    let m = stopped["message"].as_str().unwrap_or_default();
    assert!(
        m.contains("deadline (10 s)") && m.contains(&format!("imap://127.0.0.1:{port}")),
        "{m}"
    );
    let deadline = v["verdict"]["checks"]
        .as_array()
        .and_then(|c| c.iter().find(|c| c["name"] == "phase_deadline"))
        .expect("the phase_deadline check");
    assert_eq!(deadline["pass"], false, "{deadline}");
}

/// SIGTERM while every session waits on the frozen server: the run stops within about a second
/// (STOP_WAIT) and says so.
#[test]
fn sigterm_during_a_frozen_baseline_ends_the_run_within_a_second_or_so() {
    let port = frozen();
    let dir = scratch("loadgen-frozen-term");
    let a = args(port, "out");
    let a: Vec<&str> = a.iter().map(String::as_str).collect();
    let child = spawn_in(&dir, &a);
    // The baseline is waiting on greetings by now.
    std::thread::sleep(Duration::from_secs(2));
    let t = Instant::now();
    signal(&child, "TERM");
    let o = child.wait_with_output().expect("wait");
    let took = t.elapsed();
    assert_eq!(
        o.status.code(),
        Some(130),
        "{}",
        String::from_utf8_lossy(&o.stderr)
    );
    assert!(took < Duration::from_millis(2500), "{took:?}");
    let v: Value = serde_json::from_str(
        &std::fs::read_to_string(dir.join("out/result.json")).expect("result.json"),
    )
    .expect("json");
    assert_eq!(v["stopped"]["reason"], "interrupted", "{}", v["stopped"]);
}
