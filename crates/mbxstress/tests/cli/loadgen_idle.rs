//! `mbxstress loadgen idle` against a real Dovecot on loopback (scripts/mailserver.sh): 50 IMAPS
//! sessions held in IDLE, result.json with the idle figures, samples with the connections open.
//! Without root, Postfix or Dovecot it prints `SKIPPED` and returns, unless
//! MBX_REQUIRE_MAIL_SERVER is set.

use std::path::Path;

use serde_json::Value;

use crate::common::{mbx, scratch};
use crate::mailserver::MailServer;
use crate::skip::{skip, Need};

fn json(path: &Path) -> Value {
    let text = std::fs::read_to_string(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    serde_json::from_str(&text).expect("JSON")
}

#[test]
fn fifty_imaps_connections_are_held_in_idle_with_memory_and_cpu_measured() {
    let s = match MailServer::start(10) {
        Ok(s) => s,
        Err(why) => {
            skip(Need::MailServer, &format!("no mail server: {why}"));
            return;
        }
    };
    let dir = scratch("loadgen-idle");
    let out = dir.join("idle").display().to_string();
    // --imap alone names the server; template users need no --domain here.
    let url = format!("imaps://{}:{}", s.host, s.imaps);
    let ca = s.ca_file.display().to_string();
    let r = mbx(&[
        "loadgen",
        "idle",
        "--imap",
        &url,
        "--ca-file",
        &ca,
        "--users",
        "10",
        "--password",
        &s.password,
        "--connections",
        "50",
        "--hold",
        "2s",
        "--concurrency",
        "20",
        "--out",
        &out,
        "--progress",
        "quiet",
    ]);
    assert_eq!(r.code, 0, "{}\n{}", r.stdout, r.stderr);
    let v = json(&Path::new(&out).join("result.json"));
    assert_eq!(v["kind"], "loadgen");
    assert_eq!(v["test"]["phase"], "idle");
    assert_eq!(
        v["config"]["servers"],
        serde_json::json!([{"protocol": "imap", "url": url}]),
        "{v}"
    );
    assert_eq!(v["verdict"]["pass"], true, "{v}");
    let i = &v["idle"];
    assert_eq!(i["connections"], 50, "{v}");
    assert_eq!(i["established"], 50, "{v}");
    assert_eq!(
        (&i["failed"], &i["dropped"]),
        (&Value::from(0), &Value::from(0))
    );
    assert_eq!(i["open_at_end"], 50);
    assert_eq!(i["security"], "imaps");
    assert!(i["hold_s"].as_f64().is_some_and(|h| h >= 2.0), "{i}");
    let per = i["rss_per_connection_bytes"]
        .as_f64()
        .expect("RSS per connection");
    assert!(per > 0.0 && per < 1024.0 * 1024.0, "{per}");
    assert!(i["cpu_idle_pct"].as_f64().is_some(), "{i}");
    assert!(
        i["rss_held_bytes"].as_u64() > i["rss_baseline_bytes"].as_u64(),
        "{i}"
    );
    let idle_cmd = v["commands"]
        .as_array()
        .and_then(|c| c.iter().find(|c| c["command"] == "IDLE"))
        .expect("IDLE in the commands table");
    assert_eq!(idle_cmd["ok"], 50);
    // Samples once a second: the connections open, the process's memory.
    let text = std::fs::read_to_string(Path::new(&out).join("samples.jsonl")).expect("samples");
    let samples: Vec<Value> = text
        .lines()
        .map(|l| serde_json::from_str(l).expect("a sample is JSON"))
        .collect();
    assert!(samples.len() >= 2, "{text}");
    assert!(samples.iter().all(|s| s["rss_bytes"].as_u64().is_some()));
    assert_eq!(
        samples.last().map(|s| s["connections_open"].clone()),
        Some(Value::from(50))
    );
    assert!(r.stdout.contains("loadgen idle"), "{}", r.stdout);
    assert!(r.stdout.contains("KiB per connection"), "{}", r.stdout);
}
