//! `mbxstress loadgen find-max` against a real Postfix + Dovecot on loopback
//! (scripts/mailserver.sh), with small counts: the search finishes with an answer, every step a
//! `loadgen run` in its own folder, the mailboxes filled once per new user, find-max.json and the
//! curve written. Without root, Postfix or Dovecot the test prints `SKIPPED` and returns, unless
//! MBX_REQUIRE_MAIL_SERVER is set (.ci/run sets it).

use std::path::Path;

use serde_json::Value;

use crate::common::{mbx, scratch};
use crate::mailserver::MailServer;
use crate::skip::{skip, Need};

fn json(path: &Path) -> Value {
    let text = std::fs::read_to_string(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    serde_json::from_str(&text).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

#[test]
fn find_max_on_postfix_and_dovecot_finishes_with_an_answer_and_a_curve() {
    let s = match MailServer::start(6) {
        Ok(s) => s,
        Err(why) => {
            skip(Need::MailServer, &format!("no mail server: {why}"));
            return;
        }
    };
    let dir = scratch("loadgen-find-max");
    let out = dir.join("fm");
    let out_s = out.display().to_string();
    let env = s.dir.join("server.env").display().to_string();
    let r = mbx(&[
        "loadgen",
        "find-max",
        "--server-env",
        &env,
        // 3 then 6 (the users given: the bound), then the confirmations at the answer.
        "--start-users",
        "3",
        "--step",
        "30s",
        "--day",
        "2m",
        "--messages-per-day",
        "100",
        "--message-kb",
        "10",
        "--grace",
        "20s",
        "--init-messages",
        "3",
        // As loadgen.rs's day: the test proves the search on a real server, not this shared
        // machine's latency (the limits' own judgement is tested on day_verdict).
        "--overload",
        "10",
        "--task-p95-ms",
        "10000",
        "--out",
        &out_s,
        "--progress",
        "jsonl",
    ]);
    let f = json(&out.join("find-max.json"));
    eprintln!(
        "loadgen find-max: {} users, end {}, steps {}",
        f["users"],
        f["end"],
        f["steps"]
            .as_array()
            .into_iter()
            .flatten()
            .map(|s| format!(
                "{}{}",
                s["users"],
                if s["pass"] == true { "+" } else { "-" }
            ))
            .collect::<Vec<_>>()
            .join(" ")
    );
    assert_eq!(r.code, 0, "{f:#}\n{}", r.stderr);
    assert_eq!(f["schema"], "mbxstress.loadgen-find-max/1");
    let users = f["users"].as_u64().expect("an answer");
    assert!((3..=6).contains(&users), "{f:#}");
    let steps = f["steps"].as_array().expect("steps");
    assert!(steps.len() >= 2, "{f:#}");
    for st in steps {
        // Each step a loadgen run with its own result; a failing one names what failed.
        let res = json(&out.join(st["result"].as_str().expect("result")));
        assert_eq!(res["kind"], "loadgen");
        assert_eq!(res["verdict"]["pass"] == true, st["pass"] == true, "{st}");
        if st["pass"] != true {
            assert!(
                st["failed_checks"]
                    .as_array()
                    .is_some_and(|c| !c.is_empty()),
                "a failing step names its check: {st}"
            );
        }
        assert!(st["tasks_per_s"].as_f64() > Some(0.0), "{st}");
    }
    // The mailboxes filled once per user: users 1-3 before the first step, 4-6 before the
    // first step of 6, never again.
    let mut inits: Vec<String> = std::fs::read_dir(&out)
        .expect("the results folder")
        .filter_map(|e| e.ok())
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .filter(|n| n.starts_with("init-"))
        .collect();
    inits.sort();
    assert_eq!(inits, ["init-1-3", "init-4-6"], "{f:#}");
    let init = json(&out.join("init-1-3/result.json"));
    assert_eq!(init["init"]["users_done"], 3, "{init:#}");
    // The curve, the knee marked at the answer.
    let html = std::fs::read_to_string(out.join("find-max.html")).expect("find-max.html");
    assert!(html.contains(&format!("knee: {users} users")), "the knee");
    // Progress: a line before each step (with an ETA once one has run) and the closing line.
    let logs: Vec<String> = r
        .stdout
        .lines()
        .filter_map(|l| serde_json::from_str::<Value>(l).ok())
        .filter(|e| e["event"] == "log")
        .filter_map(|e| e["text"].as_str().map(str::to_owned))
        .collect();
    assert!(
        logs.iter()
            .any(|l| l.contains("step 1 (3 users) is starting")),
        "{logs:#?}"
    );
    assert!(
        logs.iter()
            .any(|l| l.contains("is starting") && l.contains("s left")),
        "{logs:#?}"
    );
    assert!(
        logs.iter().any(|l| l.contains(&format!(
            "loadgen find-max: {users} users passed, no check failed"
        ))),
        "{logs:#?}"
    );
}

/// The search's flags are checked before any server is contacted: each refusal a usage error
/// (exit 2) naming the flag.
#[test]
fn find_max_refuses_flags_that_mean_nothing_or_are_out_of_range() {
    let base = [
        "loadgen",
        "find-max",
        "--smtp",
        "smtp://127.0.0.1:9",
        "--imap",
        "imap://127.0.0.1:9",
        "--pop3",
        "pop3://127.0.0.1:9",
        "--users",
        "10",
        "--password",
        "pw",
        "--domain",
        "example.test",
    ];
    for (extra, says) in [
        (&["--start-users", "1"][..], "--start-users 1"),
        (&["--duration", "5m"][..], "--step, not --duration"),
        (&["--resolution-pct", "0"][..], "--resolution-pct"),
        (&["--max-steps", "0"][..], "--max-steps"),
        (&["--confirmations", "21"][..], "--confirmations"),
        (&["--day", "10m", "--step", "11m"][..], "--step must be"),
        (&["--partition", "1/2"][..], "--partition"),
        (&["--start-gate", "stdin"][..], "--start-gate"),
        (&["--init-concurrency", "0"][..], "--init-concurrency"),
    ] {
        let mut args = base.to_vec();
        args.extend_from_slice(extra);
        let r = mbx(&args);
        assert_eq!(r.code, 2, "{extra:?}: {}\n{}", r.stdout, r.stderr);
        assert!(r.stderr.contains(says), "{extra:?}: {}", r.stderr);
    }
}

/// Ctrl-C during the second step: that step stops cleanly, find-max.json and the curve are
/// written with the largest count that passed so far, the exit code is the interruption's.
#[test]
fn ctrl_c_mid_search_reports_the_largest_pass_so_far() {
    let s = match MailServer::start(4) {
        Ok(s) => s,
        Err(why) => {
            skip(Need::MailServer, &format!("no mail server: {why}"));
            return;
        }
    };
    let dir = scratch("loadgen-find-max-int");
    let out = dir.join("fm");
    let env = s.dir.join("server.env").display().to_string();
    let child = crate::common::spawn_in(
        &dir,
        &[
            "loadgen",
            "find-max",
            "--server-env",
            &env,
            "--start-users",
            "2",
            "--step",
            "20s",
            "--day",
            "2m",
            "--messages-per-day",
            "100",
            "--message-kb",
            "10",
            "--grace",
            "15s",
            "--init-messages",
            "2",
            "--overload",
            "10",
            "--task-p95-ms",
            "10000",
            "--out",
            "fm",
            "--progress",
            "quiet",
        ],
    );
    let start = std::time::Instant::now();
    let second = out.join("step-02-4u/result.json");
    while !second.exists() && start.elapsed() < std::time::Duration::from_secs(180) {
        std::thread::sleep(std::time::Duration::from_millis(200));
    }
    assert!(second.exists(), "the second step never started");
    crate::common::signal(&child, "INT");
    let o = child.wait_with_output().expect("wait");
    let f = json(&out.join("find-max.json"));
    assert_eq!(
        o.status.code(),
        Some(130),
        "{f:#}\n{}",
        String::from_utf8_lossy(&o.stderr)
    );
    assert_eq!(f["end"], "interrupted", "{f:#}");
    let steps = f["steps"].as_array().expect("steps");
    assert_eq!(steps.len(), 2, "{f:#}");
    assert_eq!(
        (&steps[0]["users"], &steps[0]["pass"]),
        (&2.into(), &true.into())
    );
    assert_eq!(steps[1]["interrupted"], true, "{f:#}");
    // The second step's pass or fail is not known: the answer is the first's.
    assert_eq!(f["users"], 2, "{f:#}");
    assert_eq!(f["confirmation"]["confirmed"], false, "{f:#}");
    assert!(out.join("find-max.html").is_file());
}
