//! `mbxstress loadgen submit` against Postfix's `smtp-sink` on loopback (it accepts and discards:
//! no disk, no queue, no root needed). Without smtp-sink each test prints `SKIPPED` and returns,
//! unless MBX_REQUIRE_MAIL_SERVER is set (.ci/run sets it; Postfix is installed there).

use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use serde_json::Value;

use crate::common::{mbx, scratch};
use crate::skip::{skip, Need};

const SINK: &str = "/usr/sbin/smtp-sink";

/// A running smtp-sink with its message counter (`-c`) written to a file.
struct Sink {
    child: Child,
    port: u16,
    out: std::path::PathBuf,
}

impl Sink {
    /// Starts smtp-sink on a free loopback port; `extra` are its flags (e.g. `-Q RCPT`).
    fn start(dir: &Path, extra: &[&str]) -> Option<Sink> {
        if !Path::new(SINK).exists() {
            skip(
                Need::MailServer,
                "no /usr/sbin/smtp-sink (apt-get install postfix)",
            );
            return None;
        }
        let port = std::net::TcpListener::bind("127.0.0.1:0")
            .and_then(|l| l.local_addr())
            .expect("a free port")
            .port();
        let out = dir.join("sink.out");
        let file = std::fs::File::create(&out).expect("sink output file");
        let mut cmd = Command::new(SINK);
        cmd.arg("-c");
        // As root, smtp-sink must drop to a user.
        // SAFETY: geteuid has no preconditions.
        #[allow(unsafe_code)]
        if unsafe { libc::geteuid() } == 0 {
            cmd.args(["-u", "nobody"]);
        }
        cmd.args(extra)
            .arg(format!("127.0.0.1:{port}"))
            .arg("256")
            .stdin(Stdio::null())
            .stdout(Stdio::from(file.try_clone().expect("clone")))
            .stderr(Stdio::from(file));
        let child = cmd.spawn().expect("smtp-sink starts");
        let deadline = Instant::now() + Duration::from_secs(10);
        while std::net::TcpStream::connect(("127.0.0.1", port)).is_err() {
            assert!(
                Instant::now() < deadline,
                "smtp-sink did not listen on {port}"
            );
            std::thread::sleep(Duration::from_millis(50));
        }
        Some(Sink { child, port, out })
    }

    /// Messages the sink received (its `mesg=` counter).
    fn messages(&self) -> u64 {
        std::thread::sleep(Duration::from_millis(300));
        let text = std::fs::read_to_string(&self.out).unwrap_or_default();
        text.rsplit("mesg=")
            .next()
            .and_then(|t| {
                t.trim_start()
                    .split(|c: char| !c.is_ascii_digit())
                    .next()
                    .and_then(|n| n.parse().ok())
            })
            .unwrap_or(0)
    }
}

impl Drop for Sink {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn result(dir: &Path) -> Value {
    let text = std::fs::read_to_string(dir.join("result.json"))
        .unwrap_or_else(|e| panic!("{}/result.json: {e}", dir.display()));
    serde_json::from_str(&text).expect("result.json is JSON")
}

fn command<'a>(v: &'a Value, name: &str) -> &'a Value {
    v["commands"]
        .as_array()
        .and_then(|a| a.iter().find(|c| c["command"] == name))
        .unwrap_or_else(|| panic!("no {name} in the commands table: {v}"))
}

/// 600 messages over 20 sessions, pipelined (smtp-sink offers PIPELINING) and not: every one
/// accepted, as many received by the sink, each command timed, a results folder written.
#[test]
fn submit_sends_every_message_to_smtp_sink_and_writes_a_result() {
    let dir = scratch("loadgen-submit");
    for (name, extra) in [
        ("pipelined", None),
        ("one-at-a-time", Some("--no-pipelining")),
    ] {
        let sub = dir.join(name);
        std::fs::create_dir_all(&sub).expect("dir");
        let Some(sink) = Sink::start(&sub, &[]) else {
            return;
        };
        let out = sub.join("out");
        let smtp = format!("smtp://127.0.0.1:{}", sink.port);
        let out_s = out.display().to_string();
        let mut args = vec![
            "loadgen",
            "submit",
            "--smtp",
            &smtp,
            "--connections",
            "20",
            "--messages",
            "600",
            "--message-kb",
            "4",
            "--from",
            "a@example.test",
            "--to",
            "b@example.test",
            "--to",
            "c@example.test",
            "--out",
            &out_s,
            "--progress",
            "quiet",
        ];
        args.extend(extra);
        let r = mbx(&args);
        assert_eq!(r.code, 0, "{name}: {}\n{}", r.stdout, r.stderr);
        assert_eq!(sink.messages(), 600, "{name}: the sink's count");
        let v = result(&out);
        assert_eq!(v["kind"], "loadgen");
        assert_eq!(v["test"]["phase"], "submit");
        let s = &v["submit"];
        assert_eq!(s["accepted"], 600, "{name}: {v}");
        assert_eq!(s["failed"], 0, "{name}: {v}");
        assert_eq!(s["unsent"], 0, "{name}: {v}");
        assert_eq!(s["connections"], 20);
        assert_eq!(
            s["sessions"], 20,
            "{name}: one session per connection, kept: {v}"
        );
        assert_eq!(s["recipients"], 2);
        assert_eq!(
            s["pipelined"],
            if extra.is_some() { 0 } else { 600 },
            "{name}"
        );
        assert!(s["messages_per_s"].as_f64().unwrap_or(0.0) > 0.0, "{v}");
        assert!(
            s["client_cpu_us_per_message"].as_f64().unwrap_or(0.0) > 0.0,
            "{v}"
        );
        // 4 KB each, headers included.
        let per = s["bytes"].as_f64().unwrap_or(0.0) / 600.0;
        assert!(
            (4000.0..=4200.0).contains(&per),
            "{name}: {per} bytes a message"
        );
        assert_eq!(command(&v, "DATA end")["ok"], 600);
        assert_eq!(command(&v, "RCPT")["ok"], 1200);
        assert_eq!(command(&v, "EHLO")["ok"], 20);
        assert_eq!(v["verdict"]["pass"], true, "{v}");
        assert!(out.join("samples.jsonl").exists());
        assert!(out.join("test.log").exists());
    }
}

/// A sink that answers RCPT with 421 and hangs up: every message fails as `rejected_rate`,
/// each connection stops after three failures in a row, the rest is counted unsent, the
/// verdict fails and the result says why.
#[test]
fn refused_messages_are_counted_by_class_and_fail_the_verdict() {
    let dir = scratch("loadgen-submit-refused");
    let Some(sink) = Sink::start(&dir, &["-Q", "RCPT"]) else {
        return;
    };
    let out = dir.join("out");
    let smtp = format!("smtp://127.0.0.1:{}", sink.port);
    let out_s = out.display().to_string();
    let r = mbx(&[
        "loadgen",
        "submit",
        "--smtp",
        &smtp,
        "--connections",
        "4",
        "--messages",
        "100",
        "--out",
        &out_s,
        "--progress",
        "quiet",
    ]);
    assert_ne!(r.code, 0, "{}\n{}", r.stdout, r.stderr);
    let v = result(&out);
    let s = &v["submit"];
    assert_eq!(s["accepted"], 0, "{v}");
    let failed = s["failed"].as_u64().unwrap_or(0);
    let unsent = s["unsent"].as_u64().unwrap_or(0);
    assert!((4..=12).contains(&failed), "{v}");
    assert_eq!(failed + unsent, 100, "{v}");
    assert_eq!(v["verdict"]["pass"], false);
    let errors = v["errors"].as_array().expect("errors");
    assert!(
        errors
            .iter()
            .any(|e| e["class"] == "rejected_rate" || e["class"] == "disconnect"),
        "{v}"
    );
}
