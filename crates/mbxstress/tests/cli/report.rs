//! `import` and `esrp` end to end on the seed fixtures (crates/mbx-report/tests/fixtures).

use std::path::PathBuf;

use crate::common::{close, mbx, mbx_in, scratch};

fn fixture(name: &str) -> String {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../mbx-report/tests/fixtures")
        .join(name)
        .display()
        .to_string()
}

#[test]
fn esrp_over_the_dell_reports() {
    let run = mbx(&[
        "esrp",
        &fixture("dell-ps6210e-esrp-performance.txt"),
        &fixture("dell-ps6210e-esrp-backup.txt"),
        &fixture("dell-ps6210e-esrp-softrecovery.txt"),
        "--json",
    ]);
    assert_eq!(run.code, 0, "{}", run.stderr);
    let v = run.json();
    let a = &v["aggregate"];
    assert!((a["db_transfers_per_s"].as_f64().expect("n") - 1056.71).abs() < 0.005);
    assert!((v["backup"][0]["mb_per_s_per_server"].as_f64().expect("n") - 577.17).abs() < 1e-9);
    assert!(
        (v["soft_recovery"][0]["seconds_per_log"]
            .as_f64()
            .expect("n")
            - 2.02)
            .abs()
            < 0.005
    );
    // Human table.
    let run = mbx(&["esrp", &fixture("dell-ps6210e-esrp-performance.txt")]);
    assert!(
        run.stdout.contains("EQLESRP5") && run.stdout.contains("1056.71"),
        "{}",
        run.stdout
    );
}

#[test]
fn compare_two_reports() {
    let run = mbx(&[
        "compare",
        &fixture("dell-ps6210e-esrp-performance.txt"),
        &fixture("tintri-t880-performance.txt"),
        "--json",
    ]);
    assert_eq!(run.code, 0, "{}", run.stderr);
    let v = run.json();
    let rows = v["rows"].as_array().expect("rows");
    let target = rows
        .iter()
        .find(|r| r["figure"] == "target IOPS")
        .expect("target row");
    assert_eq!(target["diff"], 120.0);
    let run = mbx(&[
        "compare",
        &fixture("dell-ps6210e-esrp-performance.txt"),
        &fixture("tintri-t880-performance.txt"),
    ]);
    assert!(run.stdout.contains("+20.0%"), "{}", run.stdout);
}

/// `compare` takes a result folder as `report` and `esrp` do (issue 25, case 17), and says
/// what to give for a folder without a result.json.
#[test]
fn compare_takes_result_folders() {
    let dir = tempfile::tempdir().expect("tempdir");
    let (a, b) = (dir.path().join("a"), dir.path().join("b"));
    for d in [&a, &b] {
        std::fs::create_dir(d).expect("mkdir");
        std::fs::copy(fixture("mbxstress-result.json"), d.join("result.json")).expect("copy");
    }
    let (a, b) = (a.to_str().expect("utf8"), b.to_str().expect("utf8"));
    let run = mbx(&["compare", a, b, "--json"]);
    assert_eq!(run.code, 0, "{}", run.stderr);
    let v = run.json();
    assert_eq!(v["a"], format!("{a}/result.json"));
    let iops = v["rows"]
        .as_array()
        .expect("rows")
        .iter()
        .find(|r| r["figure"] == "database transfers/s (from instances)")
        .unwrap_or_else(|| panic!("{v}"));
    assert_eq!(iops["diff"], 0.0, "{v}");
    // The same folders through `esrp`, for the record: it accepts them too.
    assert_eq!(mbx(&["esrp", a]).code, 0);

    let suite = dir.path().join("suite");
    std::fs::create_dir_all(suite.join("1-performance")).expect("mkdir");
    std::fs::copy(
        fixture("mbxstress-result.json"),
        suite.join("1-performance/result.json"),
    )
    .expect("copy");
    let run = mbx(&["compare", suite.to_str().expect("utf8"), a]);
    assert_eq!(run.code, 2, "{}", run.stderr);
    assert!(
        run.stderr
            .contains("is a suite folder, a result per test: compare one of them (")
            && run.stderr.contains("1-performance"),
        "{}",
        run.stderr
    );
    let run = mbx(&["compare", dir.path().to_str().expect("utf8"), a]);
    assert_eq!(run.code, 2, "{}", run.stderr);
    assert!(
        run.stderr.contains("holds no result.json"),
        "{}",
        run.stderr
    );
}

#[test]
fn import_reports_tables_and_rejects_garbage() {
    let run = mbx(&["import", &fixture("tintri-t880-performance.txt"), "--json"]);
    assert_eq!(run.code, 0, "{}", run.stderr);
    let v = run.json();
    assert_eq!(v["transactional"].as_array().map(Vec::len), Some(4));
    assert_eq!(v["total"][0]["io"]["db_read_avg_bytes"], 44606.519);
    let dir = scratch("import-bad");
    let bad = dir.join("bad.txt");
    let text = std::fs::read_to_string(fixture("dell-ps6210e-esrp-performance.txt"))
        .expect("read")
        .replacen("52.528", "n/a", 1);
    std::fs::write(&bad, text).expect("write");
    let run = mbx(&["import", bad.to_str().expect("utf8")]);
    assert_eq!(run.code, 2, "{}", run.stderr);
    assert!(
        run.stderr.contains("bad.txt")
            && run.stderr.contains("Transactional I/O Performance")
            && run.stderr.contains("Instance5004.2"),
        "{}",
        run.stderr
    );
    let run = mbx(&["esrp", "nowhere.txt"]);
    assert_eq!(run.code, 2, "{}", run.stderr);
    assert!(run.stderr.contains("nowhere.txt"), "{}", run.stderr);
}

fn chromium() -> Option<&'static str> {
    [
        "/usr/bin/chromium",
        "/usr/bin/chromium-browser",
        "/usr/bin/google-chrome",
    ]
    .into_iter()
    .find(|p| std::path::Path::new(p).exists())
}

/// A run writes report.html; headless Chromium opens it with no console messages, and every
/// Jetstress section heading and every instance row is in the page. The screenshot is taken into
/// the scratch directory, which is removed afterwards (MBX_KEEP_TEST_FILES=1 keeps it).
#[test]
fn run_report_opens_in_headless_chromium() {
    let dir = scratch("report-html");
    let run = crate::run::small_run(&dir, "r", &[]);
    assert_eq!(run.code, 0, "{}\n{}", run.stdout, run.stderr);
    assert!(
        run.stdout.contains("Report: r/report.html"),
        "{}",
        run.stdout
    );
    let html_path = dir.join("r/report.html");
    let html = std::fs::read_to_string(&html_path).expect("report.html");
    assert!(
        !html.contains("<script"),
        "the report must not need scripts"
    );
    assert!(
        !html.contains("src=\"http") && !html.contains("href=\"http") && !html.contains("url(http"),
        "no network resources"
    );
    let csv = std::fs::read_to_string(dir.join("r/instances.csv")).expect("instances.csv");
    assert_eq!(csv.lines().count(), 1 + 2 * 2, "{csv}");
    assert!(
        std::fs::read_to_string(dir.join("r/samples.csv"))
            .expect("samples.csv")
            .lines()
            .count()
            >= 3
    );

    // The HTML report imports back (Jetstress's headings and column names) with the same numbers.
    let run = crate::common::mbx_in(Some(&dir), &["import", "r/report.html", "--json"]);
    assert_eq!(run.code, 0, "{}", run.stderr);
    let imported = run.json();
    let result: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(dir.join("r/result.json")).expect("result"))
            .expect("json");
    for (k, inst) in result["instances"]
        .as_array()
        .expect("instances")
        .iter()
        .enumerate()
    {
        for key in [
            "db_reads_per_s",
            "db_write_avg_bytes",
            "log_write_avg_latency_ms",
        ] {
            let want = inst["transactional"][key].as_f64().expect("number");
            let got = imported["transactional"][k]["io"][key]
                .as_f64()
                .expect("imported");
            assert!((want - got).abs() < 0.0006, "{key}: {want} vs {got}");
        }
    }
    // A truncated HTML report is refused, naming the file.
    let truncated = dir.join("truncated.html");
    std::fs::write(&truncated, &html[..html.len() / 2]).expect("write");
    let run = crate::common::mbx_in(Some(&dir), &["import", "truncated.html"]);
    assert_eq!(run.code, 2, "{}", run.stderr);
    assert!(
        run.stderr.contains("truncated.html") && run.stderr.contains("truncated"),
        "{}",
        run.stderr
    );

    let Some(browser) = chromium() else {
        crate::skip::skip(
            crate::skip::Need::Browser,
            "the browser check: Chromium is not installed (apt-get install -y chromium)",
        );
        return;
    };
    let url = format!("file://{}", html_path.display());
    let flags = [
        "--headless",
        "--no-sandbox",
        "--disable-gpu",
        "--disable-quic",
        "--no-first-run",
        "--disable-background-networking",
        "--disable-component-update",
        "--disable-sync",
        "--enable-logging=stderr",
        "--v=0",
    ];
    // Chromium's profile, home and temporary files go to a short folder under /tmp (removed at
    // the end): Chromium dies with SIGTRAP when its temporary folder's path is longer than about
    // 62 characters (its socket paths overflow), which a deep checkout's target folder can be.
    let short = tempfile::Builder::new()
        .prefix("mbx-cr")
        .tempdir_in("/tmp")
        .expect("a short folder for Chromium");
    let profile = format!("--user-data-dir={}", short.path().join("p").display());
    let browser_home = short.path().join("h");
    std::fs::create_dir_all(&browser_home).expect("mkdir");
    let chromium = || {
        let mut cmd = std::process::Command::new(browser);
        cmd.env("HOME", &browser_home)
            .env("TMPDIR", &browser_home)
            .env_remove("XDG_CONFIG_HOME")
            .env_remove("XDG_CACHE_HOME")
            .args(flags)
            .arg(&profile);
        cmd
    };
    let out = browser_output(|| {
        let mut cmd = chromium();
        cmd.arg("--dump-dom").arg(&url);
        cmd
    });
    let dom = String::from_utf8_lossy(&out.stdout);
    let log = String::from_utf8_lossy(&out.stderr);
    let console: Vec<&str> = log.lines().filter(|l| l.contains("CONSOLE")).collect();
    assert!(console.is_empty(), "console messages: {console:?}");
    for section in mbx_report::html::SECTIONS {
        assert!(
            dom.contains(&format!("<h2>{section}</h2>")),
            "missing section {section}"
        );
    }
    let result: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(dir.join("r/result.json")).expect("result"))
            .expect("json");
    for inst in result["instances"].as_array().expect("instances") {
        let name = inst["name"].as_str().expect("name");
        // Database Configuration, Transactional, BDM, Replication, Total, percentiles (3 streams).
        assert!(
            dom.matches(&format!("<td>{name}</td>")).count() >= 8,
            "rows of {name}"
        );
    }
    assert_eq!(dom.matches("<svg").count(), 5, "five charts");
    let shot = dir.join("report.png");
    browser_output(|| {
        let mut cmd = chromium();
        cmd.arg("--window-size=1280,4200")
            .arg(format!("--screenshot={}", shot.display()))
            .arg(&url);
        cmd
    });
    assert!(
        std::fs::metadata(&shot).map(|m| m.len()).unwrap_or(0) > 10_000,
        "screenshot"
    );
}

/// Runs the browser until it exits successfully, at most three times, and returns its output.
/// Headless Chromium on a loaded two-core machine occasionally dies at start-up with nothing on
/// stderr but its launcher's noise (CI, 2026-11-22); that says nothing about the report, so a
/// failed start is retried. Three failures fail the test with every attempt's exit status and log.
fn browser_output(command: impl Fn() -> std::process::Command) -> std::process::Output {
    let mut failures = Vec::new();
    for _ in 0..3 {
        let out = command().output().expect("run chromium");
        if out.status.success() {
            return out;
        }
        failures.push(format!(
            "{}: {}",
            out.status,
            String::from_utf8_lossy(&out.stderr)
        ));
    }
    panic!("Chromium failed three times:\n{}", failures.join("\n---\n"));
}

/// `report --format` picks the exporters: only the files asked for are written, and the JSON
/// exporter never writes over a result.json (the source itself, without --out).
#[test]
fn report_formats_choose_the_files() {
    let dir = scratch("report-format");
    std::fs::copy(fixture("mbxstress-result.json"), dir.join("result.json")).expect("copy");
    let run = mbx_in(Some(&dir), &["report", ".", "--format", "csv"]);
    assert_eq!(run.code, 0, "{}", run.stderr);
    assert_eq!(run.stdout.lines().count(), 2, "{}", run.stdout);
    assert!(dir.join("instances.csv").exists() && dir.join("samples.csv").exists());
    assert!(!dir.join("report.html").exists());

    let run = mbx_in(Some(&dir), &["report", ".", "--format", "json"]);
    assert_eq!(run.code, 2, "{}", run.stderr);
    assert!(run.stderr.contains("never overwritten"), "{}", run.stderr);

    let run = mbx_in(
        Some(&dir),
        &[
            "report",
            "result.json",
            "--format",
            "json,html",
            "--out",
            "copy",
        ],
    );
    assert_eq!(run.code, 0, "{}", run.stderr);
    let copy: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(dir.join("copy/result.json")).expect("copy"))
            .expect("json");
    assert_eq!(copy["test"]["type"], "performance");
    assert!(dir.join("copy/report.html").exists());

    let run = mbx_in(Some(&dir), &["report", ".", "--format", "pdf"]);
    assert_eq!(run.code, 2, "{}", run.stderr);
    assert!(run.stderr.contains("html, csv, json"), "{}", run.stderr);
}

/// A file holding four Jetstress reports (the Dell paper's appendices, issue 25 case 12): `import`
/// lists each (a JSON array), `esrp` reads each as an input: the Performance report is the
/// server's row at its own 1056.71 IOPS (merged, 24 rows summed to 6,314.7 and no row printed).
#[test]
fn import_and_esrp_read_each_report_of_a_file() {
    let four = fixture("dell-ps6210e-esrp-four-reports.txt");
    let run = mbx(&["import", &four, "--json"]);
    assert_eq!(run.code, 0, "{}", run.stderr);
    let v = run.json();
    let kinds: Vec<&str> = v
        .as_array()
        .expect("an array of reports")
        .iter()
        .map(|r| r["kind"].as_str().expect("kind"))
        .collect();
    assert_eq!(kinds, ["stress", "performance", "backup", "soft-recovery"]);
    let run = mbx(&["import", &four]);
    assert_eq!(run.code, 0, "{}", run.stderr);
    assert_eq!(
        run.stdout.matches("6 transactional I/O rows").count(),
        4,
        "{}",
        run.stdout
    );
    let run = mbx(&["esrp", &four, "--json"]);
    assert_eq!(run.code, 0, "{}", run.stderr);
    let v = run.json();
    let perf: Vec<&serde_json::Value> = v["servers"]
        .as_array()
        .expect("servers")
        .iter()
        .filter(|s| {
            s["source"]
                .as_str()
                .is_some_and(|x| x.contains("report 2 of 4"))
        })
        .collect();
    assert_eq!(perf.len(), 1, "{v}");
    close(&perf[0]["db_transfers_per_s"], 1056.711, 0.005);
    assert_eq!(v["discrepancies"].as_array().map(Vec::len), Some(0), "{v}");
    // `compare` takes one report per side: refused naming the four.
    let run = mbx(&[
        "compare",
        &four,
        &fixture("dell-ps6210e-esrp-performance.txt"),
    ]);
    assert_eq!(run.code, 2, "{}", run.stderr);
    assert!(
        run.stderr.contains("4 Jetstress reports") && run.stderr.contains("Performance (line 163)"),
        "{}",
        run.stderr
    );
}

/// A loadgen results folder as `loadgen run` writes it, by hand: result.json (with a hostile
/// user name and server message), samples.jsonl and test.log. Returns the folder.
fn loadgen_folder(dir: &std::path::Path) -> PathBuf {
    let lat = |p95: f64| {
        serde_json::json!({"count": 10, "avg": p95 / 2.0, "p50": p95 / 3.0, "p90": p95 * 0.9,
                           "p95": p95, "p99": p95 * 1.5, "max": p95 * 2.0})
    };
    let result = serde_json::json!({
        "schema": "mbxstress.loadgen/1",
        "kind": "loadgen",
        "test": {"phase": "day", "run_id": "r1", "start": "2026-11-27T10:00:00Z",
                 "end": "2026-11-27T10:03:00Z", "duration_s": 180.0, "machine": "client1",
                 "os": "Linux", "tool_version": "0.1.0", "interrupted": false},
        "config": {
            "servers": [{"protocol": "smtp", "url": "smtp+starttls://127.0.0.1:587"},
                        {"protocol": "imap", "url": "imaps://127.0.0.1:993"}],
            "tls_trust": "insecure", "smtp_auth": "plain",
            "users_source": "template loadgen%d from 1", "users": 50,
            "domain": "example.test", "messages_per_day": 150, "message_kb": 75.0,
            "clients": [{"type": "desktop_imap", "share_pct": 70.0, "users": 35, "tasks_per_user_day": 120.0},
                        {"type": "pop3", "share_pct": 30.0, "users": 15, "tasks_per_user_day": 40.0}],
            "day_s": 180.0, "days": 1, "seed": 7, "overload_per_user": 1.5, "grace_s": 60.0,
            "profile_source": "flags",
            "thresholds": {"tasks_achieved_pct": 99.0, "task_p95_ms": 1000.0, "delivery_p95_ms": 60000.0}
        },
        "tasks_planned": 4800, "tasks_dispatched": 4800, "tasks_completed": 4799,
        "tasks_failed": 1, "max_unfinished": 9, "overload_limit": 75, "overloaded": false,
        "tasks": [
            {"task": "send_new", "dispatched": 800, "completed": 799, "failed": {"timeout": 1},
             "latency_ms": lat(120.0), "service_ms": lat(100.0)},
            {"task": "check_inbox", "dispatched": 4000, "completed": 4000, "failed": {},
             "latency_ms": lat(40.0), "service_ms": lat(30.0)}
        ],
        "commands": [
            {"protocol": "smtp", "command": "DATA end", "ok": 799, "errors": {"timeout": 1},
             "latency_ms": lat(80.0)},
            {"protocol": "imap", "command": "UID FETCH", "ok": 4000, "errors": {},
             "latency_ms": lat(20.0)}
        ],
        "delivery": {"messages_sent": 799, "expected": 1598, "delivered": 1598, "lost": 0,
                     "duplicated": 0, "corrupted": 0, "unexpected": 0,
                     "latency_ms": lat(900.0), "measured_by": "idle"},
        "verdict": {"pass": false, "checks": [
            {"name": "tasks_achieved_pct", "value": 99.98, "limit": 99.0, "pass": true, "state": "pass"},
            {"name": "errors", "value": 1.0, "limit": 0.0, "pass": false, "state": "fail"}
        ]},
        "stopped": {"reason": "verdict_failed", "message": "a check failed"},
        "errors": [{"class": "timeout", "count": 1,
                    "message": "user <script>alert(1)</script>@example.test: smtp DATA end timed out"}],
        "samples_file": "samples.jsonl",
        "log_file": "test.log",
        "notes": []
    });
    let folder = dir.join("lg");
    std::fs::create_dir_all(&folder).expect("mkdir");
    std::fs::write(
        folder.join("result.json"),
        serde_json::to_string_pretty(&result).expect("json"),
    )
    .expect("write result.json");
    let mut samples = String::new();
    for k in 1..=6u64 {
        samples.push_str(&format!(
            "{}\n",
            serde_json::json!({"t_s": 30.0 * k as f64, "interval_s": 30.0, "dispatched": 800,
                               "completed": 799, "failed": u64::from(k == 3), "unfinished": 3 + k,
                               "completed_total": 799 * k, "planned_total": 4800,
                               "delivered": 266, "task_p50_ms": 15.0, "task_p95_ms": 80.0 + k as f64,
                               "task_max_ms": 200.0, "delivery_p95_ms": 850.0})
        ));
    }
    std::fs::write(folder.join("samples.jsonl"), samples).expect("write samples");
    std::fs::write(folder.join("test.log"), "10:00:00 loadgen day started\n").expect("log");
    folder
}

/// `report` on a loadgen results folder writes its report (the task and command rows, the
/// hostile message escaped) and CSV files; `compare` and `esrp` refuse it, naming the file.
#[test]
fn report_renders_a_loadgen_result_and_compare_refuses_it() {
    let dir = scratch("loadgen-report");
    let folder = loadgen_folder(&dir);
    let f = folder.to_str().expect("utf8");
    let run = mbx(&["report", f]);
    assert_eq!(run.code, 0, "{}\n{}", run.stdout, run.stderr);
    for file in ["report.html", "tasks.csv", "commands.csv", "samples.csv"] {
        assert!(
            run.stdout.contains(&format!("lg/{file}")),
            "{file}: {}",
            run.stdout
        );
    }
    let html = std::fs::read_to_string(folder.join("report.html")).expect("report.html");
    assert!(html.contains("<td>send_new</td>"), "{html}");
    assert!(html.contains("<td>check_inbox</td>"), "{html}");
    assert!(html.contains("<td>UID FETCH</td>"), "{html}");
    assert!(html.contains("10:00:00 loadgen day started"));
    assert!(!html.contains("<script"), "{html}");
    assert!(html.contains("user &lt;script&gt;alert(1)&lt;/script&gt;@example.test"));
    let tasks = std::fs::read_to_string(folder.join("tasks.csv")).expect("tasks.csv");
    assert_eq!(tasks.lines().count(), 3, "{tasks}");
    assert!(
        tasks.starts_with("task,dispatched,completed,failed,"),
        "{tasks}"
    );
    assert!(
        tasks
            .lines()
            .next()
            .is_some_and(|h| h.ends_with(",failed_timeout")),
        "{tasks}"
    );
    let samples = std::fs::read_to_string(folder.join("samples.csv")).expect("samples.csv");
    assert_eq!(samples.lines().count(), 7, "{samples}");
    // A second report replaces the report it wrote.
    assert_eq!(mbx(&["report", f, "--format", "html"]).code, 0);

    let result_json = folder.join("result.json").display().to_string();
    for args in [
        vec!["compare", f, f],
        vec!["esrp", f],
        vec!["compare", &result_json, f],
    ] {
        let run = mbx(&args);
        assert_eq!(run.code, 2, "{args:?}: {}", run.stderr);
        assert!(
            run.stderr.contains(&format!(
                "{result_json}: a loadgen result: compare and esrp read storage results"
            )),
            "{args:?}: {}",
            run.stderr
        );
    }
}

/// The loadgen report opens in headless Chromium with no console messages; its sections and
/// task rows are in the page, with its four charts.
#[test]
fn loadgen_report_opens_in_headless_chromium() {
    let dir = scratch("loadgen-html");
    let folder = loadgen_folder(&dir);
    let run = mbx(&["report", folder.to_str().expect("utf8"), "--format", "html"]);
    assert_eq!(run.code, 0, "{}", run.stderr);
    let html_path = folder.join("report.html");
    let Some(browser) = chromium() else {
        crate::skip::skip(
            crate::skip::Need::Browser,
            "the browser check: Chromium is not installed (apt-get install -y chromium)",
        );
        return;
    };
    let short = tempfile::Builder::new()
        .prefix("mbx-cr")
        .tempdir_in("/tmp")
        .expect("a short folder for Chromium");
    let browser_home = short.path().join("h");
    std::fs::create_dir_all(&browser_home).expect("mkdir");
    let out = browser_output(|| {
        let mut cmd = std::process::Command::new(browser);
        cmd.env("HOME", &browser_home)
            .env("TMPDIR", &browser_home)
            .env_remove("XDG_CONFIG_HOME")
            .env_remove("XDG_CACHE_HOME")
            .args([
                "--headless",
                "--no-sandbox",
                "--disable-gpu",
                "--disable-quic",
                "--no-first-run",
                "--disable-background-networking",
                "--disable-component-update",
                "--disable-sync",
                "--enable-logging=stderr",
                "--v=0",
            ])
            .arg(format!(
                "--user-data-dir={}",
                short.path().join("p").display()
            ))
            .arg("--dump-dom")
            .arg(format!("file://{}", html_path.display()));
        cmd
    });
    let dom = String::from_utf8_lossy(&out.stdout);
    let log = String::from_utf8_lossy(&out.stderr);
    let console: Vec<&str> = log.lines().filter(|l| l.contains("CONSOLE")).collect();
    assert!(console.is_empty(), "console messages: {console:?}");
    for section in mbx_report::loadgen::SECTIONS
        .iter()
        .filter(|s| **s != "Initialization" && **s != "Idle Connections")
    {
        assert!(
            dom.contains(&format!("<h2>{section}</h2>")),
            "missing section {section}"
        );
    }
    for task in ["send_new", "check_inbox"] {
        assert!(dom.contains(&format!("<td>{task}</td>")), "row of {task}");
    }
    assert!(!dom.contains("<script"), "{dom}");
    assert_eq!(dom.matches("<svg").count(), 4, "four charts");
}
