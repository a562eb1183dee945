//! `mbxstress fleet run` against real sshd instances: one per test host, each listening only on
//! a loopback address (127.0.0.1, or 127.0.0.2 and .3 for two servers) on its own port, with host
//! and user keys generated into the scratch folder and an ssh_config (passed with --ssh-config)
//! mapping the aliases h1, h2, h3 to them. The tests need openssh-server (`.ci/run` installs it)
//! and fail, never skip, without it; the resume and dropped-connection tests also need strace (installed there too);
//! the `--push` tests need the static build, which they make (or bring up to date) themselves
//! with `cargo build --profile static --target x86_64-unknown-linux-musl -p mbxstress`
//! ([`crate::common::static_build`]; the toolchain needs that target, or they fail naming
//! `rustup target add`).

use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::mpsc;
use std::time::{Duration, Instant};

use crate::common::{scratch, signal, Scratch};

const SSHD: &str = "/usr/sbin/sshd";

/// Small, fast runs (as run.rs's): a one-second settle, generous thresholds.
use crate::common::FAST;

/// sshd daemons and the files to reach them; the daemons (and their sessions) are killed on drop.
struct Lab {
    dir: Scratch,
    daemons: Vec<Child>,
}

impl Drop for Lab {
    fn drop(&mut self) {
        for d in &mut self.daemons {
            kill_tree(d.id(), "sshd");
            let _ = d.kill();
            let _ = d.wait();
        }
    }
}

fn keygen(path: &Path) {
    let st = Command::new("ssh-keygen")
        .args(["-q", "-t", "ed25519", "-N", "", "-f"])
        .arg(path)
        .status()
        .expect("fleet tests need ssh-keygen (openssh-client); .ci/run installs it");
    assert!(st.success(), "ssh-keygen failed");
}

fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .expect("bind a free port")
        .port()
}

fn user() -> String {
    let out = Command::new("id").arg("-un").output().expect("id -un");
    String::from_utf8_lossy(&out.stdout).trim().to_string()
}

/// Starts `n` sshd daemons (h1..hN) and writes the ssh_config and hosts file for them.
fn lab(name: &str, n: usize, push_last: bool) -> Lab {
    lab_on(name, &vec!["127.0.0.1"; n], push_last)
}

/// As [`lab`], host `i` listening on `addrs[i]` (127.0.0.2 and 127.0.0.3: two servers, as ssh sees
/// them, sharing this account).
fn lab_on(name: &str, addrs: &[&str], push_last: bool) -> Lab {
    let n = addrs.len();
    assert!(
        Path::new(SSHD).exists(),
        "fleet tests need openssh-server ({SSHD} is missing): apt-get install openssh-server (.ci/run does)"
    );
    let dir = scratch(name);
    let d = dir.to_path_buf();
    keygen(&d.join("client_key"));
    fs_err::copy(d.join("client_key.pub"), d.join("authorized_keys")).expect("authorized_keys");
    // As root, sshd wants its privilege separation folder (a package install makes it at boot).
    if user() == "root" {
        let _ = std::fs::create_dir_all("/run/sshd");
    }
    let mut ssh_config = String::new();
    let mut hosts = String::new();
    let mut daemons = Vec::new();
    for (i, addr) in (1..=n).zip(addrs) {
        let key = d.join(format!("host_key_{i}"));
        keygen(&key);
        let port = free_port();
        let cfg = d.join(format!("sshd_{i}.conf"));
        fs_err::write(
            &cfg,
            format!(
                "Port {port}\nListenAddress {addr}\nHostKey {}\nAuthorizedKeysFile {}\nStrictModes no\nPidFile {}\nUsePAM no\nPasswordAuthentication no\nKbdInteractiveAuthentication no\nPubkeyAuthentication yes\nPermitRootLogin prohibit-password\nLogLevel ERROR\n",
                key.display(),
                d.join("authorized_keys").display(),
                d.join(format!("sshd_{i}.pid")).display()
            ),
        )
        .expect("sshd config");
        let log = fs_err::File::create(d.join(format!("sshd_{i}.log")))
            .expect("log")
            .into_parts()
            .0;
        let child = Command::new(SSHD)
            .arg("-f")
            .arg(&cfg)
            .args(["-D", "-e"])
            .stdin(Stdio::null())
            .stderr(Stdio::from(log))
            .spawn()
            .expect("start sshd");
        daemons.push(child);
        let start = Instant::now();
        while std::net::TcpStream::connect((*addr, port)).is_err() {
            assert!(
                start.elapsed() < Duration::from_secs(10),
                "sshd {i} does not listen on port {port}: {}",
                std::fs::read_to_string(d.join(format!("sshd_{i}.log"))).unwrap_or_default()
            );
            std::thread::sleep(Duration::from_millis(50));
        }
        ssh_config.push_str(&format!(
            "Host h{i}\n  HostName {addr}\n  Port {port}\n  User {}\n  IdentityFile {}\n  IdentitiesOnly yes\n  UserKnownHostsFile {}\n  StrictHostKeyChecking accept-new\n  LogLevel ERROR\n",
            user(),
            d.join("client_key").display(),
            d.join("known_hosts").display()
        ));
        let h = d.join(format!("h{i}"));
        hosts.push_str(&format!(
            "[[host]]\nssh = \"h{i}\"\ndb_path = \"{}\"\nlog_path = [\"{}\"]\nwork_dir = \"{}\"\n",
            h.join("db").display(),
            h.join("log").display(),
            h.join("work").display()
        ));
        if !(push_last && i == n) {
            hosts.push_str(&format!(
                "mbxstress = \"{}\"\n",
                env!("CARGO_BIN_EXE_mbxstress")
            ));
        }
    }
    fs_err::write(d.join("ssh_config"), ssh_config).expect("ssh_config");
    fs_err::write(d.join("hosts.toml"), hosts).expect("hosts");
    // A 1 MiB cache: the 4 MiB databases (4 mailboxes of 1 MiB, small to keep what the tests
    // write down) are not held whole, so reads go to disk and the latency checks judge. Every
    // commit durable: at 4 writes/s, with the default 70% lazy commits a 1 s window held no log
    // write about one run in four (0.7^4), and the log checks then judge nothing (not a pass).
    let fast = FAST.replace(
        "[cache]\n",
        "[op_mix]\nlazy_commit_pct = 0\n[cache]\nmin_mb_per_db = 1\nmax_mb_per_db = 1\n",
    );
    fs_err::write(d.join("fast.toml"), fast).expect("fast.toml");
    Lab { dir, daemons }
}

const RUN_FLAGS: [&str; 20] = [
    "--hosts",
    "hosts.toml",
    "--ssh-config",
    "ssh_config",
    "--config",
    "fast.toml",
    "--threads",
    "4",
    "--mailboxes",
    "4",
    "--iops-per-mailbox",
    "4",
    "--quota-mb",
    "1",
    "--databases",
    "1",
    "--sample-interval",
    "1s",
    "--out",
    "out",
];

/// Starts `fleet run` with `extra` flags; its stdout lines arrive on the receiver.
fn spawn_fleet(dir: &Path, extra: &[&str]) -> (Child, mpsc::Receiver<String>) {
    let mut flags: Vec<&str> = RUN_FLAGS.to_vec();
    flags.extend(extra);
    spawn_fleet_with(dir, &flags)
}

/// Starts `fleet run` with exactly `flags`; its stdout lines arrive on the receiver.
fn spawn_fleet_with(dir: &Path, flags: &[&str]) -> (Child, mpsc::Receiver<String>) {
    spawn_lines(dir, &["fleet", "run"], flags)
}

/// Starts mbxstress `sub` with `flags` in `dir`; its stdout lines arrive on the receiver.
fn spawn_lines(dir: &Path, sub: &[&str], flags: &[&str]) -> (Child, mpsc::Receiver<String>) {
    let mut child = Command::new(env!("CARGO_BIN_EXE_mbxstress"))
        .args(sub)
        .args(flags)
        .current_dir(dir)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("spawn mbxstress");
    let out = child.stdout.take().expect("stdout");
    let (tx, rx) = mpsc::channel();
    std::thread::spawn(move || {
        for line in BufReader::new(out).lines().map_while(Result::ok) {
            if tx.send(line).is_err() {
                break;
            }
        }
    });
    (child, rx)
}

/// Reads lines until `want` matches one (panics after `limit`); returns the lines read.
fn wait_line(
    rx: &mpsc::Receiver<String>,
    limit: Duration,
    want: impl Fn(&str) -> bool,
) -> Vec<String> {
    let start = Instant::now();
    let mut seen = Vec::new();
    while start.elapsed() < limit {
        if let Ok(l) = rx.recv_timeout(Duration::from_millis(100)) {
            let hit = want(&l);
            seen.push(l);
            if hit {
                return seen;
            }
        }
    }
    panic!(
        "no matching line within {limit:?}; saw:\n{}",
        seen.join("\n")
    );
}

fn finish(mut child: Child, rx: mpsc::Receiver<String>) -> (i32, String, String) {
    let status = child.wait().expect("wait");
    let mut err = String::new();
    if let Some(mut e) = child.stderr.take() {
        let _ = std::io::Read::read_to_string(&mut e, &mut err);
    }
    let out: Vec<String> = rx.try_iter().collect();
    (status.code().unwrap_or(-1), out.join("\n"), err)
}

fn json(path: &Path) -> serde_json::Value {
    serde_json::from_str(
        &std::fs::read_to_string(path).unwrap_or_else(|e| panic!("{}: {e}", path.display())),
    )
    .expect("json")
}

/// (pid, parent pid, comm, cmdline) of every process.
fn processes() -> Vec<(u32, u32, String, String)> {
    let mut v = Vec::new();
    for e in std::fs::read_dir("/proc").into_iter().flatten().flatten() {
        let Ok(pid) = e.file_name().to_string_lossy().parse::<u32>() else {
            continue;
        };
        let Ok(stat) = std::fs::read_to_string(e.path().join("stat")) else {
            continue;
        };
        // comm is in parentheses and may hold spaces: the fields after the last ')'.
        let (Some(open), Some(close)) = (stat.find('('), stat.rfind(')')) else {
            continue;
        };
        let comm = stat[open + 1..close].to_string();
        let ppid = stat[close + 1..]
            .split_whitespace()
            .nth(1)
            .and_then(|p| p.parse().ok())
            .unwrap_or(0);
        let cmd = std::fs::read(e.path().join("cmdline"))
            .map(|b| String::from_utf8_lossy(&b).replace('\0', " "))
            .unwrap_or_default();
        v.push((pid, ppid, comm, cmd));
    }
    v
}

/// Kills (SIGKILL, by pid) the descendants of `root` whose command name starts with `comm`.
fn kill_tree(root: u32, comm: &str) {
    let ps = processes();
    let mut tree = vec![root];
    let mut i = 0;
    while let Some(&p) = tree.get(i) {
        tree.extend(ps.iter().filter(|q| q.1 == p).map(|q| q.0));
        i += 1;
    }
    for (pid, _, c, _) in &ps {
        if *pid != root && tree.contains(pid) && c.starts_with(comm) {
            let _ = Command::new("kill")
                .args(["-KILL", &pid.to_string()])
                .status();
        }
    }
}

/// mbxstress processes whose command line names `dir`.
fn remote_runs_in(dir: &Path) -> Vec<String> {
    let d = dir.display().to_string();
    processes()
        .into_iter()
        .filter(|p| p.2.starts_with("mbxstress") && p.3.contains(" run ") && p.3.contains(&d))
        .map(|p| p.3)
        .collect()
}

fn assert_no_remote_runs(dir: &Path) {
    let start = Instant::now();
    loop {
        let left = remote_runs_in(dir);
        if left.is_empty() {
            return;
        }
        assert!(
            start.elapsed() < Duration::from_secs(20),
            "remote mbxstress processes remain: {left:?}"
        );
        std::thread::sleep(Duration::from_millis(100));
    }
}

fn per_host(out: &Path) -> Vec<PathBuf> {
    ["h1", "h2", "h3"]
        .iter()
        .map(|h| out.join(h).join("result.json"))
        .collect()
}

#[test]
fn three_hosts_start_together_and_the_aggregate_is_the_esrp_summary() {
    crate::common::static_build();
    let lab = lab("fleet-ok", 3, true);
    let d = &lab.dir;
    let (child, rx) = spawn_fleet(d, &["--duration", "3s", "--push", "--progress", "quiet"]);
    let (code, out, err) = finish(child, rx);
    assert_eq!(code, 0, "{out}\n{err}");
    let f = json(&d.join("out/fleet.json"));
    assert_eq!(f["partial"], false, "{f}");
    for (i, h) in f["hosts"].as_array().expect("hosts").iter().enumerate() {
        assert_eq!(h["state"], "passed", "{h}");
        assert_eq!(h["name"], format!("h{}", i + 1));
        // The host without an `mbxstress` key got the static build, verified by checksum.
        assert_eq!(h["pushed"], i == 2, "{h}");
        assert!(
            h["start_error_ms"].as_f64().expect("start error").abs() < 100.0,
            "{h}"
        );
        // Doctor checked the host's locations first, and its report is kept.
        assert_eq!(h["doctor"]["schema"], "mbxstress.doctor/1", "{h}");
        let checks = h["doctor"]["checks"].as_array().expect("doctor checks");
        let capacity: Vec<_> = checks.iter().filter(|c| c["name"] == "capacity").collect();
        assert!(!capacity.is_empty(), "{h}");
        assert!(capacity.iter().all(|c| c["status"] == "ok"), "{h}");
        assert!(
            checks.iter().any(|c| c["name"] == "write_through_probe"),
            "{h}"
        );
        assert!(h["doctor_elapsed_s"].as_f64().expect("doctor time") > 0.0);
    }
    let skew = f["skew_ms"].as_f64().expect("skew reported");
    assert!(skew < 100.0, "measured windows {skew} ms apart");
    // The aggregate equals `esrp` over the copied-back results.
    let files = per_host(&d.join("out"));
    let mut args: Vec<&str> = vec!["esrp", "--json"];
    let names: Vec<String> = files.iter().map(|p| p.display().to_string()).collect();
    args.extend(names.iter().map(String::as_str));
    let e = crate::common::mbx(&args).json();
    for key in [
        "db_transfers_per_s",
        "db_reads_per_s",
        "db_writes_per_s",
        "db_read_avg_latency_ms",
        "log_writes_per_s",
        "log_write_avg_latency_ms",
    ] {
        let a = f["esrp"]["aggregate"][key].as_f64().expect(key);
        let b = e["aggregate"][key].as_f64().expect(key);
        assert!(
            (a - b).abs() <= 1e-9 * b.abs().max(1.0),
            "{key}: {a} vs {b}"
        );
        let sum: f64 = f["esrp"]["servers"]
            .as_array()
            .expect("servers")
            .iter()
            .map(|s| s[key].as_f64().expect(key))
            .sum();
        assert!(
            sum > 0.0 || key.contains("latency") || key.contains("writes"),
            "{key}"
        );
    }
    assert!(
        f["esrp"]["aggregate"]["db_transfers_per_s"]
            .as_f64()
            .expect("t")
            > 0.0
    );
    let html = std::fs::read_to_string(d.join("out/fleet.html")).expect("html");
    assert_eq!(html.matches("Preflight checks").count(), 3, "{html}");
    let agg = html.find("Aggregate").expect("aggregate section");
    assert!(html.find("id=\"h1\"").is_some_and(|h| h > agg), "{html}");
    assert!(d.join("out/h2/report.html").exists());
    // Issue 25 case 5: what was pushed is the static build (x86_64-unknown-linux-musl, profile
    // `static`, built by `common::static_build`), not this dynamically linked test binary.
    let pushed = d.join(format!(
        "h3/work/bin/mbxstress-{}",
        env!("CARGO_PKG_VERSION")
    ));
    assert!(
        !is_dynamic(&pushed),
        "{} is dynamically linked",
        pushed.display()
    );
    assert_no_remote_runs(d);
}

#[test]
fn a_host_whose_volume_cannot_hold_the_databases_stops_the_run_before_anything_is_created() {
    let lab = lab("fleet-full", 2, false);
    let d = &lab.dir;
    // h2's own profile (issue 14: `profile` per host) asks for 1 TiB of databases (10 x 100 GiB).
    fs_err::write(
        d.join("big.toml"),
        "mailboxes = 1000\niops_per_mailbox = 0.1\nmailbox_quota_mb = 1024\ndatabases = 10\ncopies_per_database = 1\n",
    )
    .expect("profile");
    let hosts = fs_err::read_to_string(d.join("hosts.toml")).expect("hosts");
    let at = hosts.rfind("[[host]]").expect("h2");
    let (h1, h2) = hosts.split_at(at);
    let h2 = h2.replacen(
        "\n",
        &format!("\nprofile = \"{}\"\n", d.join("big.toml").display()),
        1,
    );
    fs_err::write(d.join("hosts.toml"), format!("{h1}{h2}")).expect("hosts");
    let out = Command::new(env!("CARGO_BIN_EXE_mbxstress"))
        .args([
            "fleet",
            "run",
            "--hosts",
            "hosts.toml",
            "--ssh-config",
            "ssh_config",
        ])
        .args([
            "--config",
            "fast.toml",
            "--threads",
            "2",
            "--duration",
            "3s",
        ])
        .args(["--out", "out"])
        .current_dir(d)
        .output()
        .expect("run fleet");
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(
        err.contains("host h2: not enough free space") && err.contains("nothing was started"),
        "{err}"
    );
    assert!(!err.contains("host h1: not enough"), "{err}");
    // Nothing was prepared anywhere: no database or log folder on either host.
    for h in ["h1", "h2"] {
        for sub in ["db", "log"] {
            let p = d.join(h).join(sub);
            assert!(!p.exists(), "{} was created", p.display());
        }
    }
    assert!(!d.join("out/fleet.json").exists());
    // Nor any host folder in --out: the same command can run again once the space is there.
    assert!(!d.join("out/h1").exists() && !d.join("out/h2").exists());
}

#[test]
fn a_host_whose_sshd_dies_fails_and_the_others_complete() {
    let lab = lab("fleet-drop", 3, false);
    let d = &lab.dir;
    let (child, rx) = spawn_fleet(d, &["--duration", "4s", "--progress", "jsonl"]);
    // Once measuring has started everywhere, host 2's sshd (daemon and sessions) goes away.
    wait_line(&rx, Duration::from_secs(120), |l| {
        l.contains("\"host\":\"h2\"") && l.contains("\"phase\":\"measure\"")
    });
    std::thread::sleep(Duration::from_millis(1000));
    let daemon = lab.daemons.get(1).expect("h2").id();
    kill_tree(daemon, "sshd");
    let _ = Command::new("kill")
        .args(["-KILL", &daemon.to_string()])
        .status();
    let (code, out, err) = finish(child, rx);
    assert_eq!(code, 3, "{out}\n{err}");
    let f = json(&d.join("out/fleet.json"));
    assert_eq!(f["partial"], true, "{f}");
    let state = |i: usize| f["hosts"][i]["state"].as_str().unwrap_or("").to_string();
    assert_eq!(state(1), "failed", "{f}");
    assert_eq!(
        (state(0).as_str(), state(2).as_str()),
        ("passed", "passed"),
        "{f}"
    );
    assert!(d.join("out/h1/result.json").exists() && d.join("out/h3/result.json").exists());
    assert_eq!(
        f["esrp"]["servers"].as_array().map(Vec::len),
        Some(2),
        "{f}"
    );
    // The combined stream tags every event with its host.
    assert!(out
        .lines()
        .any(|l| l.contains("\"host\":\"h3\"") && l.contains("\"progress\"")));
    let why = f["hosts"][1]["message"].as_str().unwrap_or("");
    assert!(why.contains("\"measure\""), "{why}");
    // Host 2's run saw its connection end and stopped itself, keeping its partial result there.
    assert_no_remote_runs(d);
    let runs = d.join("h2/work/fleet");
    let run = std::fs::read_dir(&runs)
        .expect("h2's run folder")
        .flatten()
        .next()
        .expect("one run");
    let r = json(&run.path().join("h2/result/result.json"));
    assert_eq!(r["test"]["interrupted"], true, "{r}");
}

#[test]
fn ctrl_c_stops_every_remote_run_and_keeps_partial_results() {
    let lab = lab("fleet-int", 3, false);
    let d = &lab.dir;
    let (child, rx) = spawn_fleet(d, &["--duration", "60s", "--progress", "jsonl"]);
    wait_line(&rx, Duration::from_secs(120), |l| {
        l.contains("\"phase\":\"measure\"")
    });
    std::thread::sleep(Duration::from_millis(1500));
    signal(&child, "INT");
    let (code, out, err) = finish(child, rx);
    assert_eq!(code, 130, "{out}\n{err}");
    assert_no_remote_runs(d);
    let f = json(&d.join("out/fleet.json"));
    assert_eq!(
        (f["partial"].clone(), f["interrupted"].clone()),
        (true.into(), true.into()),
        "{f}"
    );
    for p in per_host(&d.join("out")) {
        let r = json(&p);
        assert_eq!(r["test"]["interrupted"], true, "{}", p.display());
    }
}

#[test]
fn abort_on_host_failure_stops_the_others() {
    let lab = lab("fleet-abort", 2, false);
    let d = &lab.dir;
    let (child, rx) = spawn_fleet(
        d,
        &[
            "--duration",
            "60s",
            "--progress",
            "jsonl",
            "--abort-on-host-failure",
        ],
    );
    wait_line(&rx, Duration::from_secs(120), |l| {
        l.contains("\"host\":\"h2\"") && l.contains("\"phase\":\"measure\"")
    });
    let daemon = lab.daemons.get(1).expect("h2").id();
    kill_tree(daemon, "sshd");
    let (code, out, err) = finish(child, rx);
    assert_eq!(code, 3, "{out}\n{err}");
    assert_no_remote_runs(d);
    let f = json(&d.join("out/fleet.json"));
    assert_eq!(f["partial"], true, "{f}");
    assert_eq!(f["hosts"][1]["state"], "failed", "{f}");
    // Host 1 was stopped long before its 60 s: its partial result came back.
    assert_eq!(f["hosts"][0]["state"], "interrupted", "{f}");
    let r = json(&d.join("out/h1/result.json"));
    assert_eq!(r["test"]["interrupted"], true);
}

#[test]
fn paths_come_from_the_hosts_file_not_the_flags() {
    let dir = scratch("fleet-flags");
    fs_err::write(
        dir.join("hosts.toml"),
        "[[host]]\nssh = \"h1\"\ndb_path = \"/d\"\nlog_path = \"/l\"\n",
    )
    .expect("hosts");
    let r = crate::common::mbx_in(
        Some(&dir),
        &["fleet", "run", "--hosts", "hosts.toml", "--db-path", "/x"],
    );
    assert_eq!(r.code, 2, "{}", r.stderr);
    assert!(
        r.stderr.contains("db_path and log_path for each [[host]]"),
        "{}",
        r.stderr
    );
    let r = crate::common::mbx_in(
        Some(&dir),
        &["fleet", "run", "--hosts", "hosts.toml", "--test", "suite"],
    );
    assert_eq!(r.code, 2, "{}", r.stderr);
    assert!(r.stderr.contains("--test performance"), "{}", r.stderr);
}

/// A process stopped with SIGSTOP; continued when dropped (a failed test leaves none stopped).
#[cfg(target_os = "linux")]
struct Frozen(u32);

#[cfg(target_os = "linux")]
impl Drop for Frozen {
    fn drop(&mut self) {
        let _ = Command::new("kill")
            .args(["-CONT", &self.0.to_string()])
            .status();
    }
}

/// (state, created pages) of a database: the header fields at bytes 88 and 96 of pages 0 and 1
/// (the header and its shadow; the larger resume point is the durable one).
#[cfg(target_os = "linux")]
fn db_header(path: &Path) -> (u32, u64) {
    let b = std::fs::read(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    let field = |at: usize, n: usize| -> u64 {
        let mut v = [0u8; 8];
        v[..n].copy_from_slice(&b[at..at + n]);
        u64::from_le_bytes(v)
    };
    let page = 32768;
    let state = field(88, 4) as u32;
    let created = field(96, 8).max(field(page + 96, 8));
    (state, created)
}

/// Issue 14 item 3: the same `fleet run` again after one host's preparation was interrupted
/// resumes that host's creation and attaches the other host's complete databases.
///
/// Creation is fast (hundreds of MB/s) and polling its progress lags on a loaded machine (by
/// 40 ms, most of a 24 MiB database, in one try), so h2's creation is slowed instead: h2's
/// `mbxstress` is a wrapper that, while the file `slow-h2` exists, runs the binary under strace
/// with every io_uring_enter (and pwrite, for the sync engine) returning 0.5 s late, so its 8
/// MiB database (1 MiB writes, 4 in flight) takes seconds to write, the same data. Once data is
/// on disk h2's run is frozen (SIGSTOP); when h1 is prepared and waits at the start gate, the
/// coordinator gets Ctrl-C and sends every host `stop` (h1 ends first); then h2 continues, reads
/// `stop` and stops its creation cleanly at a durable point, with half the database to write.
/// The rerun (the same command, `slow-h2` removed) must resume h2 and attach h1. Databases of 8
/// MiB, a 1 s test: a small footprint.
#[test]
#[cfg(target_os = "linux")]
fn a_rerun_resumes_the_interrupted_host_and_attaches_the_others() {
    use std::os::unix::fs::MetadataExt;
    use std::os::unix::fs::PermissionsExt;
    let strace = Command::new("strace").arg("-V").output();
    assert!(
        strace.is_ok_and(|o| o.status.success()),
        "this test needs strace (apt-get install strace; .ci/run installs it)"
    );
    let lab = lab("fleet-resume", 2, false);
    let d = &lab.dir;
    let slow = d.join("slow-h2");
    fs_err::write(&slow, "").expect("slow-h2");
    let bin = env!("CARGO_BIN_EXE_mbxstress");
    let wrapper = d.join("h2-mbxstress.sh");
    fs_err::write(
        &wrapper,
        format!(
            "#!/bin/sh\nif [ \"$1\" = run ] && [ -e '{}' ]; then\n  exec strace -f -qq -o /dev/null --seccomp-bpf -e trace=io_uring_enter,pwrite64,pwritev2 -e inject=io_uring_enter,pwrite64,pwritev2:delay_exit=500000 '{bin}' \"$@\"\nfi\nexec '{bin}' \"$@\"\n",
            slow.display()
        ),
    )
    .expect("wrapper");
    fs_err::set_permissions(&wrapper, std::fs::Permissions::from_mode(0o755)).expect("chmod");
    let hosts = fs_err::read_to_string(d.join("hosts.toml")).expect("hosts");
    let at = hosts
        .rfind(&format!("mbxstress = \"{bin}\""))
        .expect("h2's binary");
    let (h1, h2) = hosts.split_at(at);
    let h2 = h2.replacen(bin, &wrapper.display().to_string(), 1);
    fs_err::write(d.join("hosts.toml"), format!("{h1}{h2}")).expect("hosts");
    let flags = [
        "--hosts",
        "hosts.toml",
        "--ssh-config",
        "ssh_config",
        "--config",
        "fast.toml",
        "--threads",
        "2",
        "--mailboxes",
        "4",
        "--iops-per-mailbox",
        "4",
        "--quota-mb",
        "1",
        "--databases",
        "1",
        "--sample-interval",
        "1s",
        "--duration",
        "1s",
        "--out",
        "out",
    ];
    let mut first = flags.to_vec();
    first.extend(["--progress", "jsonl"]);
    let (child, rx) = spawn_fleet_with(d, &first);
    // h2's remote run, then its database with data on disk: freeze it there.
    let h2 = d.join("h2").display().to_string();
    let start = Instant::now();
    let pid = loop {
        let run = processes()
            .into_iter()
            .find(|p| p.2.starts_with("mbxstress") && p.3.contains(" run ") && p.3.contains(&h2));
        if let Some(p) = run {
            break p.0;
        }
        assert!(
            start.elapsed() < Duration::from_secs(120),
            "h2's remote run did not start"
        );
        std::thread::sleep(Duration::from_millis(5));
    };
    let db = d.join("h2/db/mbxstress001.edb");
    let on_disk = || {
        std::fs::metadata(&db)
            .map(|m| (m.blocks() * 512, m.len()))
            .unwrap_or((0, 0))
    };
    while on_disk().0 <= 1 << 20 && start.elapsed() < Duration::from_secs(120) {
        std::thread::sleep(Duration::from_millis(2));
    }
    send_signal(pid, "STOP");
    let frozen = Frozen(pid);
    let (allocated, len) = on_disk();
    // h1 is prepared and waits for the start; Ctrl-C: the coordinator stops every host.
    wait_line(&rx, Duration::from_secs(120), |l| {
        l.contains("\"host\":\"h1\"") && l.contains("\"event\":\"ready\"")
    });
    signal(&child, "INT");
    wait_line(&rx, Duration::from_secs(60), |l| {
        l.contains("\"event\":\"host_end\"") && l.contains("\"host\":\"h1\"")
    });
    drop(frozen);
    let (code, out, err) = finish(child, rx);
    assert!(
        allocated > 0 && allocated < len,
        "h2 not mid-creation when frozen: {allocated} of {len} bytes on disk"
    );
    eprintln!(
        "h2 frozen with {allocated} of {len} bytes on disk; {} of {} pages durable after stop",
        db_header(&db).1,
        (len / 32768).saturating_sub(2)
    );
    assert_eq!(code, 130, "{out}\n{err}");
    assert_no_remote_runs(d);
    // h2's creation stopped at a durable point short of the end.
    let (state, created) = db_header(&db);
    let pages = (len / 32768).saturating_sub(2);
    assert!(
        state == 1 && created > 0 && created < pages,
        "h2's database after the interruption: state {state}, {created} of {pages} pages created"
    );

    let first_id = json(&d.join("out/fleet.json"))["run_id"]
        .as_str()
        .expect("run_id")
        .to_string();

    // The same command again: h2 resumes, h1 attaches, and both pass.
    fs_err::remove_file(&slow).expect("slow-h2");
    let mut again = flags.to_vec();
    again.extend(["--progress", "quiet"]);
    let (child, rx) = spawn_fleet_with(d, &again);
    let (code, out, err) = finish(child, rx);
    assert_eq!(code, 0, "{out}\n{err}");
    let f = json(&d.join("out/fleet.json"));
    assert_eq!(f["partial"], false, "{f}");
    for h in f["hosts"].as_array().expect("hosts") {
        assert_eq!(h["state"], "passed", "{h}");
    }
    let log = |h: &str| {
        std::fs::read_to_string(d.join("out").join(h).join("test.log"))
            .unwrap_or_else(|e| panic!("{h}'s test.log: {e}"))
    };
    let (l1, l2) = (log("h1"), log("h2"));
    assert!(
        l2.contains("Resume ") && !l2.contains("Create "),
        "h2 was not resumed:\n{l2}"
    );
    assert!(
        l1.contains("Attach ") && !l1.contains("Create ") && !l1.contains("Resume "),
        "h1 was not attached:\n{l1}"
    );
    // The interrupted run's results were moved aside, not replaced.
    let earlier = d.join("out/earlier").join(&first_id);
    let r = json(&earlier.join("h2/result.json"));
    assert_eq!(r["test"]["interrupted"], true, "{r}");
    assert!(earlier.join("fleet.json").exists() && earlier.join("h1/test.log").exists());
    let (state, created) = db_header(&db);
    assert!(
        state != 1 && created == pages,
        "h2's database: state {state}, {created} of {pages}"
    );
}

/// Makes host h1 (the first host of the lab's hosts file) run `script` (a shell script naming the
/// real binary itself) instead of mbxstress.
#[cfg(target_os = "linux")]
fn wrap_h1(d: &Path, script: &str) {
    use std::os::unix::fs::PermissionsExt;
    let wrapper = d.join("h1-mbxstress.sh");
    fs_err::write(&wrapper, script).expect("wrapper");
    fs_err::set_permissions(&wrapper, std::fs::Permissions::from_mode(0o755)).expect("chmod");
    let hosts = fs_err::read_to_string(d.join("hosts.toml")).expect("hosts");
    let bin = env!("CARGO_BIN_EXE_mbxstress");
    fs_err::write(
        d.join("hosts.toml"),
        hosts.replacen(bin, &wrapper.display().to_string(), 1),
    )
    .expect("hosts");
}

/// Waits for `fleet run` at most `limit` (a hung coordinator is killed and the test fails).
/// Its callers are the Linux-only fleet tests (signals, /proc).
#[cfg(target_os = "linux")]
fn finish_within(
    mut child: Child,
    rx: mpsc::Receiver<String>,
    limit: Duration,
) -> (i32, String, String) {
    let start = Instant::now();
    while child.try_wait().expect("try_wait").is_none() {
        if start.elapsed() > limit {
            let _ = child.kill();
            let (_, out, err) = finish(child, rx);
            panic!("fleet run did not end within {limit:?}:\n{out}\n{err}");
        }
        std::thread::sleep(Duration::from_millis(100));
    }
    finish(child, rx)
}

/// The pid of host `h`'s remote `mbxstress run` (waits for it, at most 120 s).
fn remote_run_pid(d: &Path, h: &str) -> u32 {
    let dir = d.join(h).display().to_string();
    let start = Instant::now();
    loop {
        let run = processes()
            .into_iter()
            .find(|p| p.2.starts_with("mbxstress") && p.3.contains(" run ") && p.3.contains(&dir));
        if let Some(p) = run {
            return p.0;
        }
        assert!(
            start.elapsed() < Duration::from_secs(120),
            "{h}'s remote run did not start"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
}

#[cfg(target_os = "linux")]
fn freeze(pid: u32) -> Frozen {
    send_signal(pid, "STOP");
    Frozen(pid)
}

/// `kill -SIG pid`, which must succeed.
fn send_signal(pid: u32, sig: &str) {
    let st = Command::new("kill")
        .args([format!("-{sig}"), pid.to_string()])
        .status()
        .expect("kill");
    assert!(st.success(), "kill -{sig} {pid}");
}

/// Issue 25 case 2: a host whose remote run stops answering (SIGSTOP, as a process stuck in D
/// state would) no longer hangs the coordinator: its watchdog gives it up after
/// --host-timeout without an event, ends its ssh and stops its run over a fresh connection;
/// the other host's passing result is copied back and counted.
#[test]
#[cfg(target_os = "linux")]
fn a_host_that_stops_answering_is_given_up_by_the_watchdog_and_the_others_complete() {
    let lab = lab("fleet-frozen", 2, false);
    let d = &lab.dir;
    let (child, rx) = spawn_fleet(
        d,
        &[
            "--duration",
            "5s",
            "--progress",
            "jsonl",
            "--host-timeout",
            "15s",
        ],
    );
    wait_line(&rx, Duration::from_secs(120), |l| {
        l.contains("\"host\":\"h2\"") && l.contains("\"phase\":\"measure\"")
    });
    let _frozen = freeze(remote_run_pid(d, "h2"));
    let (code, out, err) = finish_within(child, rx, Duration::from_secs(150));
    assert_eq!(code, 3, "{out}\n{err}");
    // h2's run was stopped over a fresh connection before the coordinator ended.
    assert!(
        remote_runs_in(d).is_empty(),
        "a remote run outlived the coordinator: {:?}",
        remote_runs_in(d)
    );
    let f = json(&d.join("out/fleet.json"));
    assert_eq!(f["partial"], true, "{f}");
    assert_eq!(f["hosts"][0]["state"], "passed", "{f}");
    assert_eq!(f["hosts"][0]["result"], "h1/result.json", "{f}");
    assert_eq!(json(&d.join("out/h1/result.json"))["verdict"]["pass"], true);
    assert_eq!(f["hosts"][1]["state"], "failed", "{f}");
    let why = f["hosts"][1]["message"].as_str().unwrap_or("");
    assert!(
        why.contains("watchdog") && why.contains("no event") && why.contains("\"measure\""),
        "{why}"
    );
    // Stopped with SIGTERM (and continued), h2's run ended cleanly and its result came back.
    assert!(
        why.contains("SIGTERM") && why.contains("copied back"),
        "{why}"
    );
    assert_eq!(f["hosts"][1]["result"], "h2/result.json", "{f}");
    assert!(d.join("out/h2/result.json").is_file());
}

/// Issue 25 case 2: Ctrl-C with a host that does not answer: the first stops the others
/// cleanly and their results come back at once; the second stops waiting for the silent host,
/// and fleet.json is still written (before, the second Ctrl-C exited with neither).
#[test]
#[cfg(target_os = "linux")]
fn a_second_ctrl_c_gives_up_on_a_silent_host_and_still_writes_fleet_json() {
    let lab = lab("fleet-int2", 2, false);
    let d = &lab.dir;
    let (child, rx) = spawn_fleet(
        d,
        &[
            "--duration",
            "60s",
            "--progress",
            "jsonl",
            "--host-timeout",
            "300s",
        ],
    );
    wait_line(&rx, Duration::from_secs(120), |l| {
        l.contains("\"host\":\"h2\"") && l.contains("\"phase\":\"measure\"")
    });
    let frozen = freeze(remote_run_pid(d, "h2"));
    signal(&child, "INT");
    wait_line(&rx, Duration::from_secs(60), |l| {
        l.contains("\"event\":\"host_end\"") && l.contains("\"host\":\"h1\"")
    });
    // h1's result is copied back as soon as its run ends.
    let h1 = d.join("out/h1/result.json");
    let start = Instant::now();
    while !h1.exists() && start.elapsed() < Duration::from_secs(30) {
        std::thread::sleep(Duration::from_millis(100));
    }
    signal(&child, "INT");
    let second = Instant::now();
    let (code, out, err) = finish_within(child, rx, Duration::from_secs(90));
    assert!(
        second.elapsed() < Duration::from_secs(60),
        "{:?} after the second Ctrl-C",
        second.elapsed()
    );
    assert_eq!(code, 130, "{out}\n{err}");
    let f = json(&d.join("out/fleet.json"));
    assert_eq!(
        (f["partial"].clone(), f["interrupted"].clone()),
        (true.into(), true.into()),
        "{f}"
    );
    assert_eq!(f["hosts"][0]["state"], "interrupted", "{f}");
    assert_eq!(f["hosts"][0]["result"], "h1/result.json", "{f}");
    assert_eq!(json(&h1)["test"]["interrupted"], true);
    assert_eq!(f["hosts"][1]["state"], "failed", "{f}");
    let why = f["hosts"][1]["message"].as_str().unwrap_or("");
    assert!(why.contains("interrupted a second time"), "{why}");
    // h2 was sent SIGTERM (and SIGCONT) on the way out: its run ends by itself.
    drop(frozen);
    assert_no_remote_runs(d);
}

/// Issue 25 case 3: the ssh connection of the last running host drops (its ssh client killed)
/// while its remote run goes on: the coordinator reaches the host again, waits for the run to
/// write its result, copies it back, and ends only once no remote run is left (before, it
/// copied at once: `result: null`, a result written later that nobody collected, and a remote
/// run outliving the coordinator).
#[test]
#[cfg(target_os = "linux")]
fn a_dropped_connection_waits_for_the_remote_result_and_leaves_no_run_behind() {
    let strace = Command::new("strace").arg("-V").output();
    assert!(
        strace.is_ok_and(|o| o.status.success()),
        "this test needs strace (apt-get install strace; .ci/run installs it)"
    );
    let lab = lab("fleet-lost", 1, false);
    let d = &lab.dir;
    // A remote run that takes its time to finish: h1's mbxstress runs under strace with every
    // rename 4 s late, so its final result.json (written through a rename) lands seconds after
    // its connection is gone, as a run flushing a large cache would.
    let bin = env!("CARGO_BIN_EXE_mbxstress");
    wrap_h1(d, &format!(
        "#!/bin/sh\nif [ \"$1\" = run ]; then\n  exec strace -f -qq -o /dev/null -e trace=rename,renameat,renameat2 -e inject=rename,renameat,renameat2:delay_enter=4000000 '{bin}' \"$@\"\nfi\nexec '{bin}' \"$@\"\n"
    ));
    let (child, rx) = spawn_fleet(d, &["--duration", "30s", "--progress", "jsonl"]);
    wait_line(&rx, Duration::from_secs(120), |l| {
        l.contains("\"phase\":\"measure\"")
    });
    std::thread::sleep(Duration::from_millis(1000));
    let coordinator = child.id();
    let ssh = processes()
        .into_iter()
        .find(|p| p.1 == coordinator && p.2 == "ssh" && p.3.contains("'run'"))
        .expect("the coordinator's ssh of h1's run");
    send_signal(ssh.0, "KILL");
    let (code, out, err) = finish_within(child, rx, Duration::from_secs(150));
    let left = remote_runs_in(d);
    assert!(
        left.is_empty(),
        "the remote run outlived the coordinator: {left:?}"
    );
    assert_eq!(code, 3, "{out}\n{err}");
    let f = json(&d.join("out/fleet.json"));
    let h = &f["hosts"][0];
    assert_eq!(h["result"], "h1/result.json", "{f}");
    // The run's final result, not the one it writes as it starts ("running").
    let r = json(&d.join("out/h1/result.json"));
    assert_eq!(r["test"]["interrupted"], true, "{r}");
    assert_ne!(r["stopped"]["reason"], "running", "{r}");
    assert_eq!(h["state"], "failed", "{f}");
    let why = h["message"].as_str().unwrap_or("");
    assert!(
        why.contains("ssh connection ended") && why.contains("result was copied back"),
        "{why}"
    );
}

/// Issue 25 case 8: copying a host's folder back brings only regular files: a test.log that is
/// a symbolic link to /etc/shadow, or a link to a folder, stays behind, named in a warning.
#[test]
#[cfg(target_os = "linux")]
fn links_in_a_remote_results_folder_are_not_brought_home() {
    let lab = lab("fleet-links", 1, false);
    let d = &lab.dir;
    let bin = env!("CARGO_BIN_EXE_mbxstress");
    // h1's mbxstress: the real one, then its results folder gets links.
    wrap_h1(d, &format!(
        "#!/bin/sh\nout=\nprev=\nfor a in \"$@\"; do [ \"$prev\" = --out ] && out=$a; prev=$a; done\n'{bin}' \"$@\"\nrc=$?\nif [ \"$1\" = run ] && [ -n \"$out\" ]; then\n  rm -f \"$out/test.log\"; ln -s /etc/shadow \"$out/test.log\"; ln -s /etc \"$out/etc\"\nfi\nexit $rc\n"
    ));
    let (child, rx) = spawn_fleet(d, &["--duration", "2s", "--progress", "quiet"]);
    let (code, out, err) = finish_within(child, rx, Duration::from_secs(300));
    assert_eq!(code, 0, "{out}\n{err}");
    let h1 = d.join("out/h1");
    assert!(h1.join("result.json").is_file());
    for name in ["test.log", "etc"] {
        assert!(
            std::fs::symlink_metadata(h1.join(name)).is_err(),
            "{name} was brought home"
        );
        assert!(
            err.contains(&format!("\"./{name}\" (a symbolic link to /etc")),
            "no warning names {name}:\n{err}"
        );
    }
}

/// True if the ELF file at `path` names a program interpreter (a dynamically linked executable:
/// glibc's is /lib64/ld-linux-x86-64.so.2).
fn is_dynamic(path: &Path) -> bool {
    let b = std::fs::read(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    b.windows(b"ld-linux".len()).any(|w| w == b"ld-linux")
}

/// Issue 25 case 1: two servers (two sshd, on 127.0.0.2 and 127.0.0.3) logging in to one account
/// whose `work_dir` is one folder (the default `.mbxstress` in a home shared over NFS), both
/// given the binary with `--push`. Each runs in its own folder and comes back as itself; the
/// uploads of one binary into one folder at once do not collide; a second run reuses the
/// verified copy.
#[test]
#[cfg(unix)]
fn two_hosts_sharing_one_account_and_work_dir_keep_their_own_runs_and_push_safely() {
    crate::common::static_build();
    let lab = lab_on("fleet-shared", &["127.0.0.2", "127.0.0.3"], false);
    let d = &lab.dir;
    let shared = d.join("home/.mbxstress");
    let bin = env!("CARGO_BIN_EXE_mbxstress");
    let hosts = fs_err::read_to_string(d.join("hosts.toml"))
        .expect("hosts")
        .replace(&format!("mbxstress = \"{bin}\"\n"), "");
    let mut hosts = hosts;
    for h in ["h1", "h2"] {
        hosts = hosts.replace(
            &d.join(h).join("work").display().to_string(),
            &shared.display().to_string(),
        );
    }
    fs_err::write(d.join("hosts.toml"), &hosts).expect("hosts");
    assert_eq!(hosts.matches(&shared.display().to_string()).count(), 2);
    // A damaged copy where the binary goes: both hosts upload (at once), each verifies its own
    // upload and renames it over this one.
    let target = shared
        .join("bin")
        .join(format!("mbxstress-{}", env!("CARGO_PKG_VERSION")));
    fs_err::create_dir_all(shared.join("bin")).expect("bin");
    fs_err::write(&target, "damaged").expect("damaged copy");
    let (child, rx) = spawn_fleet(d, &["--duration", "3s", "--push", "--progress", "quiet"]);
    let (code, out, err) = finish(child, rx);
    assert_eq!(code, 0, "{out}\n{err}");
    let f = json(&d.join("out/fleet.json"));
    assert_eq!(f["partial"], false, "{f}");
    for h in f["hosts"].as_array().expect("hosts") {
        assert_eq!(
            (
                h["state"].as_str(),
                h["pushed"].as_bool(),
                h["aggregated"].as_bool()
            ),
            (Some("passed"), Some(true), Some(true)),
            "{h}"
        );
    }
    assert_eq!(
        f["esrp"]["servers"].as_array().map(Vec::len),
        Some(2),
        "{f}"
    );
    // Each host's folder is its own run: its databases, nobody else's.
    for (me, other) in [("h1", "h2"), ("h2", "h1")] {
        let r = json(&d.join("out").join(me).join("result.json"));
        let dbs: Vec<&str> = r["instances"]
            .as_array()
            .expect("instances")
            .iter()
            .filter_map(|i| i["database_path"].as_str())
            .collect();
        assert!(
            !dbs.is_empty()
                && dbs.iter().all(|p| p.contains(&format!("/{me}/db"))
                    && !p.contains(&format!("/{other}/"))),
            "{me}'s result names {dbs:?}"
        );
    }
    // On the shared folder: one run folder per host, one verified binary, no temporary left.
    let run_id = f["run_id"].as_str().expect("run_id");
    for h in ["h1", "h2"] {
        let p = shared
            .join("fleet")
            .join(run_id)
            .join(h)
            .join("result/result.json");
        assert!(p.exists(), "{} is missing", p.display());
    }
    let bins: Vec<String> = std::fs::read_dir(shared.join("bin"))
        .expect("bin folder")
        .flatten()
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .collect();
    assert_eq!(
        bins,
        [format!("mbxstress-{}", env!("CARGO_PKG_VERSION"))],
        "{bins:?}"
    );
    assert!(
        std::fs::metadata(&target).expect("binary").len() > 1 << 20 && !is_dynamic(&target),
        "{} is not the static build",
        target.display()
    );
    assert_no_remote_runs(d);
    // Again: the verified copy is used as it is, by both (the same file, not replaced).
    use std::os::unix::fs::MetadataExt;
    let inode = std::fs::metadata(&target).expect("binary").ino();
    let mut flags: Vec<&str> = RUN_FLAGS.to_vec();
    *flags.last_mut().expect("--out value") = "out2";
    // 2 s: at 16 IOPS with reads reaching the disk, 1 s can end before a host's first log write
    // (its log checks then judge nothing).
    flags.extend(["--duration", "2s", "--push", "--progress", "quiet"]);
    let (child, rx) = spawn_fleet_with(d, &flags);
    let (code, out, err) = finish(child, rx);
    assert_eq!(code, 0, "{out}\n{err}");
    let f = json(&d.join("out2/fleet.json"));
    for h in f["hosts"].as_array().expect("hosts") {
        assert_eq!(
            (h["pushed"].as_bool(), h["push_reused"].as_bool()),
            (Some(true), Some(true)),
            "{h}"
        );
    }
    assert_eq!(std::fs::metadata(&target).expect("binary").ino(), inode);
    assert_no_remote_runs(d);
}

/// Issue 25 case 4: a host stopped on its side by SIGTERM ends cleanly (`interrupted`, its
/// partial result kept) and the fleet run is partial: exit 3, as the README says.
#[test]
fn a_host_stopped_by_sigterm_makes_the_run_partial_with_exit_3() {
    let lab = lab("fleet-term", 2, false);
    let d = &lab.dir;
    let (child, rx) = spawn_fleet(d, &["--duration", "6s", "--progress", "jsonl"]);
    wait_line(&rx, Duration::from_secs(120), |l| {
        l.contains("\"host\":\"h2\"") && l.contains("\"phase\":\"measure\"")
    });
    let pid = remote_run_pid(d, "h2");
    send_signal(pid, "TERM");
    let (code, out, err) = finish(child, rx);
    assert_eq!(code, 3, "{out}\n{err}");
    let f = json(&d.join("out/fleet.json"));
    assert_eq!(
        (f["partial"].as_bool(), f["interrupted"].as_bool()),
        (Some(true), Some(false)),
        "{f}"
    );
    assert_eq!(f["hosts"][0]["state"], "passed", "{f}");
    assert_eq!(f["hosts"][1]["state"], "interrupted", "{f}");
    let r = json(&d.join("out/h2/result.json"));
    assert_eq!(r["test"]["interrupted"], true, "{r}");
    assert_no_remote_runs(d);
}

/// Issue 25 case 4: a remote run killed by a signal is described as such, not as an ssh
/// connection that ended with exit 255.
#[test]
fn a_remote_run_killed_by_a_signal_is_reported_as_such() {
    let lab = lab("fleet-sigkill", 2, false);
    let d = &lab.dir;
    let (child, rx) = spawn_fleet(d, &["--duration", "6s", "--progress", "jsonl"]);
    wait_line(&rx, Duration::from_secs(120), |l| {
        l.contains("\"host\":\"h2\"") && l.contains("\"phase\":\"measure\"")
    });
    let pid = remote_run_pid(d, "h2");
    send_signal(pid, "KILL");
    let (code, out, err) = finish(child, rx);
    assert_eq!(code, 3, "{out}\n{err}");
    let f = json(&d.join("out/fleet.json"));
    let h2 = &f["hosts"][1];
    assert_eq!(h2["state"], "failed", "{f}");
    let why = h2["message"].as_str().unwrap_or("");
    assert!(
        why.contains("killed by signal 9 (SIGKILL)")
            && why.contains("\"measure\"")
            && !why.contains("exit 255")
            && !why.contains("connection ended"),
        "{why}"
    );
    assert_eq!(f["hosts"][0]["state"], "passed", "{f}");
    // The wrapper's report stays out of the event stream.
    assert!(!out.contains("remote_exit"), "{out}");
    assert_no_remote_runs(d);
}

/// A hosts file for `fleet run` in `dir` with the given `[[host]]` tables; no sshd is needed by
/// the tests using it (they stop before, or use a stand-in `ssh`).
fn hosts_file(dir: &Path, tables: &str) {
    fs_err::write(dir.join("hosts.toml"), tables).expect("hosts");
}

fn fleet_in(dir: &Path, extra: &[&str], path: Option<&Path>) -> crate::common::Run {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_mbxstress"));
    cmd.args([
        "fleet",
        "run",
        "--hosts",
        "hosts.toml",
        "--duration",
        "1s",
        "--out",
        "out",
    ])
    .args(extra)
    .current_dir(dir);
    if let Some(p) = path {
        let old = std::env::var_os("PATH").unwrap_or_default();
        let mut paths = vec![p.to_path_buf()];
        paths.extend(std::env::split_paths(&old));
        cmd.env("PATH", std::env::join_paths(paths).expect("PATH"));
    }
    let o = cmd.output().expect("run fleet");
    crate::common::Run {
        code: o.status.code().unwrap_or(-1),
        stdout: String::from_utf8_lossy(&o.stdout).into_owned(),
        stderr: String::from_utf8_lossy(&o.stderr).into_owned(),
    }
}

/// Issue 25 case 4: names the coordinator writes beside the host folders (fleet.json,
/// fleet.html, earlier), result file names, Windows device names and unsafe components are
/// refused, naming the hosts file's line; names differing only in case are duplicates.
#[test]
fn reserved_or_unsafe_host_names_are_refused_naming_the_line() {
    let dir = scratch("fleet-names");
    let ok = "[[host]]\nssh = \"a\"\ndb_path = \"/d\"\nlog_path = \"/l\"\n";
    for (table, line) in [
        (
            "[[host]]\nssh = \"b\"\nname = \"fleet.json\"\ndb_path = \"/d\"\nlog_path = \"/l\"\n",
            8,
        ),
        (
            "[[host]]\nssh = \"b\"\nname = \"Fleet.HTML\"\ndb_path = \"/d\"\nlog_path = \"/l\"\n",
            8,
        ),
        (
            "[[host]]\nssh = \"b\"\nname = \"earlier\"\ndb_path = \"/d\"\nlog_path = \"/l\"\n",
            8,
        ),
        (
            "[[host]]\nssh = \"b\"\nname = \"result.json\"\ndb_path = \"/d\"\nlog_path = \"/l\"\n",
            8,
        ),
        (
            "[[host]]\nssh = \"b\"\nname = \"nul.txt\"\ndb_path = \"/d\"\nlog_path = \"/l\"\n",
            8,
        ),
        (
            "[[host]]\nssh = \"b\"\nname = \"../x\"\ndb_path = \"/d\"\nlog_path = \"/l\"\n",
            8,
        ),
        (
            "[[host]]\nssh = \"b\"\nname = \"A\"\ndb_path = \"/d\"\nlog_path = \"/l\"\n",
            8,
        ),
        // No `name`: the one taken from `ssh` is checked too, at the `ssh` line.
        (
            "[[host]]\nssh = \"root@earlier\"\ndb_path = \"/d\"\nlog_path = \"/l\"\n",
            7,
        ),
    ] {
        hosts_file(&dir, &format!("{ok}\n{table}"));
        let r = fleet_in(&dir, &[], None);
        assert_eq!(r.code, 2, "{table}\n{}", r.stderr);
        assert!(
            r.stderr
                .contains(&format!("hosts.toml line {line}: host 2")),
            "{table}\n{}",
            r.stderr
        );
        assert!(
            !dir.join("out").join("fleet.json").exists() && !r.stderr.contains("Checking"),
            "{}",
            r.stderr
        );
    }
}

/// Issue 25 case 2: fleet.json is there whatever stops the coordinator, even SIGKILL: written as
/// the hosts start (partial, every host `running`), so the same command can resume into the same
/// --out; the remote run stops by itself once its connection is gone.
#[test]
fn a_coordinator_killed_outright_leaves_a_partial_fleet_json() {
    let lab = lab("fleet-kill", 1, false);
    let d = &lab.dir;
    let (child, rx) = spawn_fleet(d, &["--duration", "60s", "--progress", "jsonl"]);
    wait_line(&rx, Duration::from_secs(120), |l| {
        l.contains("\"phase\":\"measure\"")
    });
    signal(&child, "KILL");
    let (code, _, _) = finish(child, rx);
    assert_eq!(code, -1, "killed by a signal");
    let f = json(&d.join("out/fleet.json"));
    assert_eq!(f["partial"], true, "{f}");
    assert_eq!(f["hosts"][0]["state"], "running", "{f}");
    assert_no_remote_runs(d);
}

/// Issue 25 case 4: a host's `profile` is read here with a bound and checked as a mailbox
/// profile before anything is copied; the message names the line, never the file's contents.
#[test]
fn a_host_profile_is_checked_here_and_its_contents_never_echoed() {
    let dir = scratch("fleet-profile");
    let secret = "root:$6$s3cr3tSALT$hashhashhash:19000:0:99999:7:::\nmailboxes = \"t0ps3cret\"\n";
    fs_err::write(dir.join("shadow"), secret).expect("shadow");
    fs_err::write(
        dir.join("typed.toml"),
        "mailboxes = \"t0ps3cret\"\niops_per_mailbox = 0.1\nmailbox_quota_mb = 1\ndatabases = 1\ncopies_per_database = 1\n",
    )
    .expect("typed");
    fs_err::write(dir.join("big.toml"), "# x\n".repeat(50_000)).expect("big");
    for (file, want) in [
        ("shadow", "not valid TOML at line 1"),
        ("typed.toml", "line 1: the value has the wrong type"),
        ("big.toml", "over the"),
    ] {
        hosts_file(
            &dir,
            &format!(
                "[[host]]\nssh = \"a\"\ndb_path = \"/d\"\nlog_path = \"/l\"\nprofile = \"{}\"\n",
                dir.join(file).display()
            ),
        );
        let r = fleet_in(&dir, &[], None);
        assert_eq!(r.code, 2, "{file}: {}", r.stderr);
        assert!(
            r.stderr.contains("hosts.toml line 5: host 1") && r.stderr.contains(want),
            "{file}: {}",
            r.stderr
        );
        assert!(
            !r.stderr.contains("s3cr3t") && !r.stderr.contains("root:"),
            "{file}: {}",
            r.stderr
        );
    }
}

/// Issue 25 case 4: at most `--fanout` hosts (32 by default, pdsh's) are checked at once. A
/// stand-in `ssh` on PATH counts the connections open at once, holds each for a second and
/// fails it as an unreachable host would.
#[test]
#[cfg(unix)]
fn at_most_fanout_hosts_are_checked_at_once() {
    use std::os::unix::fs::PermissionsExt;
    let dir = scratch("fleet-fanout");
    let fake = dir.join("bin");
    fs_err::create_dir_all(&fake).expect("bin");
    let live = dir.join("live");
    let counts = dir.join("counts");
    fs_err::write(
        fake.join("ssh"),
        format!(
            "#!/bin/sh\nmkdir -p '{live}'\ntouch '{live}'/$$\nls '{live}' | wc -l >> '{counts}'\nsleep 1\nrm -f '{live}'/$$\necho 'ssh: connect to host: Connection refused' >&2\nexit 255\n",
            live = live.display(),
            counts = counts.display()
        ),
    )
    .expect("fake ssh");
    fs_err::set_permissions(fake.join("ssh"), std::fs::Permissions::from_mode(0o755))
        .expect("chmod");
    let tables = |n: usize| -> String {
        (1..=n)
            .map(|i| format!("[[host]]\nssh = \"h{i}\"\ndb_path = \"/d\"\nlog_path = \"/l\"\n"))
            .collect()
    };
    for (n, extra, bound) in [(40, vec![], 32), (7, vec!["--fanout", "3"], 3)] {
        let _ = std::fs::remove_file(&counts);
        hosts_file(&dir, &tables(n));
        let r = fleet_in(&dir, &extra, Some(&fake));
        assert_eq!(r.code, 3, "{}", r.stderr);
        assert!(
            r.stderr
                .contains(&format!("{n} of {n} host(s) failed the checks")),
            "{}",
            r.stderr
        );
        let seen: Vec<usize> = fs_err::read_to_string(&counts)
            .expect("counts")
            .lines()
            .filter_map(|l| l.trim().parse().ok())
            .collect();
        assert_eq!(seen.len(), n, "one connection per host: {seen:?}");
        assert_eq!(
            seen.iter().max(),
            Some(&bound),
            "{n} hosts {extra:?}: {seen:?}"
        );
    }
}

/// Issue 25 case 5: `--push` copies the static Linux build; a binary that is not one is refused
/// before any host is touched, naming the command that builds it.
#[test]
fn push_refuses_a_dynamically_linked_binary_and_names_the_build_command() {
    let dir = scratch("fleet-push-static");
    hosts_file(
        &dir,
        "[[host]]\nssh = \"a\"\ndb_path = \"/d\"\nlog_path = \"/l\"\n",
    );
    let glibc = env!("CARGO_BIN_EXE_mbxstress");
    assert!(
        is_dynamic(Path::new(glibc)),
        "the test build is expected to be dynamic"
    );
    let r = fleet_in(&dir, &["--push-binary", glibc], None);
    assert_eq!(r.code, 2, "{}", r.stderr);
    assert!(
        r.stderr
            .contains("not a statically linked x86_64 Linux executable")
            && r.stderr
                .contains("cargo build --profile static --target x86_64-unknown-linux-musl"),
        "{}",
        r.stderr
    );
    assert!(!r.stderr.contains("Checking"), "{}", r.stderr);
    // Refused before --out was made (or an unfinished run there moved aside).
    assert!(!dir.join("out").exists());
    // Missing: the same command is named.
    let r = fleet_in(&dir, &["--push-binary", "no-such-build"], None);
    assert_eq!(r.code, 2, "{}", r.stderr);
    assert!(
        r.stderr.contains("it is not at no-such-build")
            && r.stderr
                .contains("cargo build --profile static --target x86_64-unknown-linux-musl"),
        "{}",
        r.stderr
    );
}

/// `fleet loadgen` checks the clients' flags here, before any host is touched (these hosts do
/// not exist): a missing password, too few users for the clients, a flag fleet sets itself.
#[test]
fn fleet_loadgen_refuses_bad_client_flags_before_touching_a_host() {
    let dir = scratch("fleet-loadgen-flags");
    let d = &*dir;
    fs_err::write(
        d.join("hosts.toml"),
        "[[host]]\nssh = \"c1.invalid\"\n[[host]]\nssh = \"c2.invalid\"\n",
    )
    .expect("hosts");
    let base = [
        "fleet",
        "loadgen",
        "--hosts",
        "hosts.toml",
        "--server",
        "127.0.0.1",
        "--domain",
        "d.test",
    ];
    for (extra, want) in [
        (vec!["--users", "20"], "--users needs --password"),
        (
            vec!["--users", "3", "--password", "p"],
            "3 users for 2 client hosts",
        ),
        (
            vec!["--users", "20", "--password", "p", "--partition", "1/2"],
            "--partition is set by fleet loadgen",
        ),
        (
            vec!["--users", "20", "--password", "p", "--day", "0s"],
            "--day must be",
        ),
    ] {
        let mut args: Vec<&str> = base.to_vec();
        args.extend(extra);
        let r = crate::common::mbx_in(Some(d), &args);
        assert_eq!(r.code, 2, "{args:?}: {}", r.stderr);
        assert!(r.stderr.contains(want), "{args:?}: {}", r.stderr);
        assert!(
            !r.stderr.contains("c1.invalid"),
            "no host was tried: {}",
            r.stderr
        );
    }
    assert!(!d.join("mbxstress-results").exists() && !d.join("out").exists());
}

/// `fleet loadgen` (issue 28): two client hosts against the test mail server (Linux only, as
/// scripts/mailserver.sh).
#[cfg(target_os = "linux")]
mod loadgen {
    use super::*;

    /// A lab of two client hosts (sshd on 127.0.0.2 and 127.0.0.3) for `fleet loadgen` against
    /// one Postfix + Dovecot on 127.0.0.1, its servers watched through host h1 (this machine's
    /// /proc, as a mail server's would be read); None (and SKIPPED) without a mail server.
    fn loadgen_lab(name: &str) -> Option<(crate::mailserver::MailServer, Lab)> {
        let server = match crate::mailserver::MailServer::start(20) {
            Ok(s) => s,
            Err(why) => {
                crate::skip::skip(
                    crate::skip::Need::MailServer,
                    &format!("no mail server: {why}"),
                );
                return None;
            }
        };
        let lab = lab_on(name, &["127.0.0.2", "127.0.0.3"], false);
        let d = &lab.dir;
        let mut hosts = String::new();
        for i in 1..=2 {
            hosts.push_str(&format!(
                "[[host]]\nssh = \"h{i}\"\nwork_dir = \"{}\"\nmbxstress = \"{}\"\n",
                d.join(format!("h{i}")).join("work").display(),
                env!("CARGO_BIN_EXE_mbxstress")
            ));
        }
        hosts.push_str("[[server]]\nssh = \"h1\"\nname = \"mail\"\n");
        fs_err::write(d.join("hosts.toml"), hosts).expect("hosts");
        Some((server, lab))
    }

    /// `fleet loadgen` on the lab: 20 users, a 30 s day at 50 messages.
    fn spawn_fleet_loadgen(
        d: &Path,
        s: &crate::mailserver::MailServer,
    ) -> (Child, mpsc::Receiver<String>) {
        let env = s.dir.join("server.env").display().to_string();
        let ca = s.ca_file.display().to_string();
        #[rustfmt::skip]
        let flags = [
            "--hosts", "hosts.toml", "--ssh-config", "ssh_config",
            "--server-env", &env, "--ca-file", &ca,
            // Given on the coordinator's command line: it reaches the hosts as a file.
            "--password", &s.password,
            "--messages-per-day", "50", "--day", "30s", "--overload", "10",
            "--grace", "20s", "--sample-interval", "1s", "--server-interval", "1s",
            // The merge is judged here, not this shared machine's latency.
            "--task-p95-ms", "10000",
            "--out", "out", "--progress", "jsonl",
        ];
        spawn_lines(d, &["fleet", "loadgen"], &flags)
    }

    /// Issue 28: two client hosts drive one mail system: the 20 users split 10 and 10 (no user on
    /// both), the days start together (the skew in fleet.json), the merged result's counts are
    /// the sums of the clients' and its latency counts come from the merged histograms, the mail
    /// server was sampled, and the merged report has a section per client.
    #[test]
    fn loadgen_on_two_clients_partitions_the_users_and_merges_their_results() {
        let Some((s, lab)) = loadgen_lab("fleet-loadgen") else {
            return;
        };
        let d = &lab.dir;
        let (child, rx) = spawn_fleet_loadgen(d, &s);
        let (code, out, err) = finish_within(child, rx, Duration::from_secs(300));
        assert_eq!(code, 0, "{out}\n{err}");
        assert!(out.contains("\"event\":\"fleet_start\""), "{out}");
        let f = json(&d.join("out/fleet.json"));
        assert_eq!(f["partial"], false, "{f}");
        let skew = f["skew_ms"].as_f64().expect("skew of the days' starts");
        assert!(skew < 1000.0, "the clients' days started {skew} ms apart");
        let m = json(&d.join("out/result.json"));
        assert_eq!(m["kind"], "loadgen");
        assert_eq!(m["verdict"]["pass"], true, "{}", m["verdict"]);
        let clients = m["clients"].as_array().expect("clients");
        assert_eq!(clients.len(), 2, "{m}");
        let mut sum = [0u64; 6];
        let mut sources = Vec::new();
        for (i, c) in clients.iter().enumerate() {
            assert_eq!(c["partition"], format!("{}/2", i + 1), "{c}");
            assert_eq!(
                (c["merged"].as_bool(), c["users"].as_u64()),
                (Some(true), Some(10)),
                "{c}"
            );
            let r = json(
                &d.join("out")
                    .join(c["result"].as_str().expect("its result")),
            );
            assert_eq!(r["test"]["partition"], format!("{}/2", i + 1));
            sources.push(
                r["config"]["users_source"]
                    .as_str()
                    .unwrap_or("")
                    .to_string(),
            );
            let delivery = &r["delivery"];
            for (k, v) in [
                r["tasks_completed"].as_u64(),
                r["tasks_planned"].as_u64(),
                delivery["delivered"].as_u64(),
                r["tasks"][0]["latency_ms"]["count"].as_u64(),
                delivery["server_latency_ms"]["count"].as_u64(),
                delivery["server_watched"].as_u64(),
            ]
            .iter()
            .enumerate()
            {
                sum[k] += v.expect("a count");
            }
        }
        assert!(sources[0].contains("users 1..=10 of 20"), "{sources:?}");
        assert!(sources[1].contains("users 11..=20 of 20"), "{sources:?}");
        assert_eq!(m["config"]["users"], 20);
        let merged_source = m["config"]["users_source"].as_str().unwrap_or("");
        assert!(
            merged_source.ends_with("20 users in 2 slice(s), one per client machine")
                && !merged_source.contains("partition"),
            "{merged_source}"
        );
        assert_eq!(m["tasks_completed"].as_u64(), Some(sum[0]), "{m}");
        assert_eq!(m["tasks_planned"].as_u64(), Some(sum[1]));
        assert_eq!(m["delivery"]["delivered"].as_u64(), Some(sum[2]));
        assert_eq!(m["delivery"]["lost"], 0);
        assert_eq!(m["tasks"][0]["latency_ms"]["count"].as_u64(), Some(sum[3]));
        assert!(sum[0] > 0, "the clients completed tasks");
        // Issue 33: the server delivery latency is the clients' watchers' merged, and judged.
        let md = &m["delivery"];
        assert!(sum[4] > 0, "the clients' watchers measured copies");
        assert_eq!(
            md["server_latency_ms"]["count"].as_u64(),
            Some(sum[4]),
            "{md}"
        );
        assert_eq!(md["server_watched"].as_u64(), Some(sum[5]), "{md}");
        assert!(m["histograms"]["delivery.server"].is_string(), "{md}");
        assert!(
            md["server_measured_by"]
                .as_str()
                .is_some_and(|s| s.starts_with("per client: ") && s.contains("watcher: ")),
            "{md}"
        );
        assert!(md["server_resolution_ms"].as_f64() > Some(0.0), "{md}");
        let judged = m["verdict"]["checks"]
            .as_array()
            .and_then(|c| c.iter().find(|c| c["name"] == "delivery_latency_p95_ms"))
            .expect("the delivery latency check");
        assert_eq!(judged["value"], md["server_latency_ms"]["p95"], "{judged}");
        let srv = &m["servers"][0];
        assert_eq!(srv["name"], "mail", "{srv}");
        assert!(srv["samples"].as_u64().unwrap_or(0) >= 5, "{srv}");
        assert!(srv["mem_total_bytes"].as_u64().unwrap_or(0) > 0, "{srv}");
        assert!(d.join("out/servers/mail.jsonl").is_file());
        let html = std::fs::read_to_string(d.join("out/report.html")).expect("merged report");
        assert!(html.contains("h1") && html.contains("h2"), "client rows");
        assert_no_remote_runs(d);
    }

    /// Issue 28: a client killed during the day is reported failed; the other's result is kept and
    /// merged, the merged result says a client is missing (exit 3, partial).
    #[test]
    fn a_killed_loadgen_client_is_reported_failed_and_the_rest_kept() {
        let Some((s, lab)) = loadgen_lab("fleet-loadgen-kill") else {
            return;
        };
        let d = &lab.dir;
        let (child, rx) = spawn_fleet_loadgen(d, &s);
        wait_line(&rx, Duration::from_secs(120), |l| {
            l.contains("\"host\":\"h2\"") && l.contains("\"phase\":\"day\"")
        });
        let pid = remote_run_pid(d, "h2");
        // Issue 34: the password given to the coordinator is on no ssh or remote command line
        // (`ps` shows them); the runs read a 0600 copy.
        for p in processes() {
            if p.2.starts_with("ssh") || p.3.contains(" loadgen run ") {
                assert!(
                    !p.3.contains("--password ")
                        && !p.3.contains("--password=")
                        && !p.3.contains("'--password'"),
                    "{p:?}"
                );
            }
        }
        let run = processes()
            .into_iter()
            .find(|p| p.0 == pid)
            .expect("the remote run");
        let file = run
            .3
            .split(' ')
            .skip_while(|w| *w != "--password-file")
            .nth(1)
            .expect("the run reads --password-file");
        let mode = std::os::unix::fs::PermissionsExt::mode(
            &std::fs::metadata(file)
                .expect("password file")
                .permissions(),
        );
        assert_eq!(mode & 0o777, 0o600, "{file}");
        send_signal(pid, "KILL");
        let (code, out, err) = finish_within(child, rx, Duration::from_secs(300));
        assert_eq!(code, 3, "{out}\n{err}");
        let f = json(&d.join("out/fleet.json"));
        assert_eq!(f["partial"], true, "{f}");
        assert_eq!(f["hosts"][0]["state"], "passed", "{f}");
        assert_eq!(f["hosts"][1]["state"], "failed", "{f}");
        let m = json(&d.join("out/result.json"));
        let c = &m["clients"];
        assert_eq!(
            (c[0]["merged"].as_bool(), c[1]["merged"].as_bool()),
            (Some(true), Some(false)),
            "{c}"
        );
        assert!(
            c[1]["excluded"].as_str().is_some_and(|w| !w.is_empty()),
            "{c}"
        );
        let h1 = json(&d.join("out/h1/result.json"));
        assert_eq!(
            m["tasks_completed"], h1["tasks_completed"],
            "the merged figures are h1's"
        );
        assert_eq!(m["verdict"]["pass"], false);
        let missing = m["verdict"]["checks"]
            .as_array()
            .and_then(|cs| cs.iter().find(|c| c["name"] == "clients_merged"))
            .expect("the clients_merged check");
        assert_eq!(
            (missing["value"].as_f64(), missing["limit"].as_f64()),
            (Some(1.0), Some(2.0))
        );
        assert_no_remote_runs(d);
    }
}
