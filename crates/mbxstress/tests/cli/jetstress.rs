//! `run` and `prepare --jetstress-config` on the real Jetstress configuration fixtures
//! (crates/mbx-config/tests/fixtures/jetstress-config, with their provenance README).

use crate::common::{mbx_in, scratch};

fn fixture(name: &str) -> String {
    format!(
        "{}/../mbx-config/tests/fixtures/jetstress-config/{name}",
        env!("CARGO_MANIFEST_DIR")
    )
}

/// The automation template: exit 2, naming `Type` and the empty counts.
#[test]
fn the_template_is_refused_naming_its_elements() {
    let dir = scratch("jetstress-template");
    let f = fixture("automation-template-blank-profile.xml");
    let run = mbx_in(Some(&dir), &["run", "--jetstress-config", &f]);
    assert_eq!(run.code, 2, "{}", run.stderr);
    for element in [
        "<Type> is 'asfdsa'",
        "<MailboxCount> is empty",
        "<ThreadCount> is empty",
    ] {
        assert!(run.stderr.contains(element), "{element}: {}", run.stderr);
    }
    assert!(
        std::fs::read_dir(&*dir).expect("dir").next().is_none(),
        "nothing written"
    );
}

/// JetTest's file: unmapped E:\ paths are named with the flag; it attaches existing databases
/// (refused until they are prepared); prepared from the same file (smaller mailboxes given as
/// flags, which override it), it runs with its 4 instances and 3 copies, tuning its session count
/// first (SuppressTuning false).
#[test]
fn the_complete_file_prepares_and_runs_with_mapped_paths() {
    let dir = scratch("jetstress-complete");
    let f = fixture("jettest-performance-4db.xml");
    let run = mbx_in(Some(&dir), &["run", "--jetstress-config", &f]);
    assert_eq!(run.code, 2, "{}", run.stderr);
    assert!(
        run.stderr.contains("--map-path 'E:\\=/local/folder/'"),
        "{}",
        run.stderr
    );
    let map = format!("E:\\={}/e/", dir.display());
    let small = ["--mailboxes", "8", "--quota-mb", "1"];
    let mut args = vec!["run", "--jetstress-config", &f, "--map-path", &map];
    args.extend(small);
    args.extend([
        "--duration",
        "2s",
        "--sample-interval",
        "1s",
        "--tuning-step",
        "1s",
        // Two steps: a one-second step at 2 IOPS per database is noise, and an unbounded
        // search ramps up to 1,024 sessions on it (docs/method.md, short steps).
        "--tuning-max-steps",
        "2",
        "--progress",
        "quiet",
    ]);
    let refused = mbx_in(Some(&dir), &args);
    assert_eq!(refused.code, 2, "{}", refused.stderr);
    assert!(
        refused.stderr.contains("DatabaseSource Open"),
        "{}",
        refused.stderr
    );
    let mut prep = vec!["prepare", "--jetstress-config", &f, "--map-path", &map];
    prep.extend(small);
    let prepared = mbx_in(Some(&dir), &prep);
    assert_eq!(prepared.code, 0, "{}", prepared.stderr);
    for i in 1..=4 {
        assert!(
            dir.join(format!("e/db{i}/db/mbxstress00{i}.edb")).is_file(),
            "db{i}"
        );
    }
    args.extend(["--out", "out"]);
    // The file's Strict thresholds apply (--config, which could loosen them, excludes
    // --jetstress-config): a loaded test machine may fail them, so the verdict is not asserted;
    // what the file mapped to is.
    let run = mbx_in(Some(&dir), &args);
    assert!(run.code == 0 || run.code == 1, "{}", run.stderr);
    let r: serde_json::Value = serde_json::from_str(
        &std::fs::read_to_string(dir.join("out/result.json")).expect("result"),
    )
    .expect("json");
    assert_eq!(r["test"]["type"], "performance");
    assert_eq!(r["config"]["copies_per_database"], 3);
    assert_eq!(r["config"]["databases"], 4);
    // SuppressTuning false: the session count was tuned first (its steps are in the result),
    // from 4 per database. Databases this small fit the cache, so a 1-second step may measure
    // no transactional I/O at all: then tuning says no count meets the target and the test
    // does not run; otherwise the test ran with the count chosen.
    let steps = r["tuning"]["steps"].as_array().cloned().unwrap_or_default();
    assert!(!steps.is_empty() && steps.len() <= 2, "{}", r["tuning"]);
    assert_eq!(steps[0]["sessions"], 16, "4 per database first");
    match r["tuning"]["sessions"].as_u64() {
        Some(n) => {
            assert_eq!(r["config"]["threads"], n, "{}", r["tuning"]);
            assert_eq!(r["instances"].as_array().map(Vec::len), Some(4));
            let first = r["instances"][0]["database_path"]
                .as_str()
                .unwrap_or_default();
            assert!(first.ends_with("e/db1/db/mbxstress001.edb"), "{first}");
        }
        None => {
            assert_eq!(run.code, 1, "{}", run.stderr);
            let why = r["stopped"]["message"].as_str().unwrap_or_default();
            assert!(
                why.starts_with("automatic tuning found no session count"),
                "{why}"
            );
            // The test did not run: a step's figures are never reported as the test's.
            assert_eq!(r["instances"].as_array().map(Vec::len), Some(0));
            assert_eq!(r["achieved_iops"], 0.0);
        }
    }
    assert_eq!(r["config"]["mailboxes"], 8);
    assert_eq!(r["config"]["duration_s"], 2.0);
    // The file's paths, mapped.
    let first = r["config"]["db_paths"][0].as_str().unwrap_or_default();
    assert!(first.ends_with("e/db1/db"), "{first}");
}

/// `export jetstress-config` writes the run the flags describe with Windows paths by the
/// --map-path rules read backwards, and re-reading it gives the same run (`run` refuses only
/// because the databases do not exist: the file attaches them); types Jetstress lacks are
/// refused.
#[test]
fn export_writes_a_configuration_run_reads_back() {
    let dir = scratch("jetstress-export");
    let map = format!("E:\\={}/e/", dir.display());
    let db = format!("{}/e/db", dir.display());
    let log = format!("{}/e/log", dir.display());
    let export = mbx_in(
        Some(&dir),
        &[
            "export",
            "jetstress-config",
            "--mailboxes",
            "600",
            "--iops-per-mailbox",
            "0.5",
            "--quota-mb",
            "2",
            "--databases",
            "3",
            "--copies",
            "2",
            "--threads",
            "9",
            "--duration",
            "90m",
            "--test",
            "stress",
            "--db-path",
            &db,
            "--log-path",
            &log,
            "--map-path",
            &map,
            "--attach-existing",
        ],
    );
    assert_eq!(export.code, 0, "{}", export.stderr);
    let xml = &export.stdout;
    for want in [
        "<Type>Stress</Type>",
        "<Duration>P0Y0M0DT1H30M0S</Duration>",
        "<ThreadCount>9</ThreadCount>",
        "<MailboxCount>600</MailboxCount>",
        "<DatabaseCopyCount>2</DatabaseCopyCount>",
        "<DatabaseSource>Open</DatabaseSource>",
        "<Path>E:\\db</Path>",
        "<LogPath>E:\\log\\db003</LogPath>",
    ] {
        assert!(xml.contains(want), "{want} in:\n{xml}");
    }
    std::fs::write(dir.join("exported.xml"), xml).expect("write");
    let run = mbx_in(
        Some(&dir),
        &[
            "run",
            "--jetstress-config",
            "exported.xml",
            "--map-path",
            &map,
        ],
    );
    assert_eq!(run.code, 2, "{}", run.stderr);
    assert!(
        run.stderr
            .contains(&format!("{db}/mbxstress001.edb does not exist")),
        "{}",
        run.stderr
    );
    for test in ["suite", "checksum"] {
        let r = mbx_in(Some(&dir), &["export", "jetstress-config", "--test", test]);
        assert_eq!(r.code, 2, "{test}: {}", r.stderr);
    }
    let r = mbx_in(Some(&dir), &["run", "--map-path", &map]);
    assert_eq!(r.code, 2, "{}", r.stderr);
    assert!(r.stderr.contains("--jetstress-config"), "{}", r.stderr);
}

/// The latency tolerance is exported as MaximumLatencyErrors; open-loop pacing has no Jetstress
/// element and is named on stderr rather than dropped silently.
#[test]
fn export_carries_the_latency_tolerance_and_names_open_loop_pacing() {
    let dir = scratch("jetstress-export-pacing");
    let r = mbx_in(
        Some(&dir),
        &[
            "export",
            "jetstress-config",
            "--pacing",
            "open",
            "--max-latency-errors",
            "3",
        ],
    );
    assert_eq!(r.code, 0, "{}", r.stderr);
    assert!(
        r.stdout
            .contains("<MaximumLatencyErrors>3</MaximumLatencyErrors>"),
        "{}",
        r.stdout
    );
    assert!(
        r.stderr.contains("pacing = \"open\"") && r.stderr.contains("closed loop only"),
        "{}",
        r.stderr
    );
}

/// Issue 25, case 17: `export jetstress-config` warns when it writes paths that are not Windows
/// paths (naming them, and how to map them), and not when --map-path covers them.
#[test]
fn export_warns_about_paths_jetstress_cannot_use() {
    let dir = scratch("jetstress-export-paths");
    let args = [
        "export",
        "jetstress-config",
        "--databases",
        "2",
        "--db-path",
        "/mnt/db",
        "--log-path",
        "/mnt/log",
    ];
    let r = mbx_in(Some(&dir), &args);
    assert_eq!(r.code, 0, "{}", r.stderr);
    assert!(r.stdout.contains("<Path>/mnt/db</Path>"), "{}", r.stdout);
    assert!(
        r.stderr.contains(
            "warning: not Windows paths, written as they are (Jetstress runs on Windows and cannot use them): /mnt/db, /mnt/log/db001, /mnt/log/db002."
        ) && r.stderr.contains("--map-path 'E:\\=/mnt/db'"),
        "{}",
        r.stderr
    );
    let mut mapped = args.to_vec();
    mapped.extend(["--map-path", "E:\\=/mnt/"]);
    let r = mbx_in(Some(&dir), &mapped);
    assert_eq!(r.code, 0, "{}", r.stderr);
    assert!(r.stdout.contains("<Path>E:\\db</Path>"), "{}", r.stdout);
    assert!(!r.stderr.contains("warning"), "{}", r.stderr);
}
