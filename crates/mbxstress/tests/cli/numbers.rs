//! Out-of-range numbers (issue 8): every one is a usage error (exit 2) naming the flag or the
//! config key, found during validation, before anything is written. Never a panic, an abort,
//! `inf` in a report or a saturated count in a profile.

use std::path::Path;

use crate::common::Run;

/// Runs `mbxstress` in `dir`.
fn mbx_in(dir: &Path, args: &[&str]) -> Run {
    crate::common::mbx_in(Some(dir), args)
}

/// The names in `dir`, sorted.
fn listing(dir: &Path) -> Vec<String> {
    let mut names: Vec<String> = std::fs::read_dir(dir)
        .expect("read dir")
        .map(|e| e.expect("entry").file_name().to_string_lossy().into_owned())
        .collect();
    names.sort();
    names
}

/// Asserts exit 2 with `needle` in the message, no panic, and nothing in the JSON output.
fn refused(run: &Run, args: &[&str], needle: &str) {
    assert_eq!(run.code, 2, "{args:?}: {}", run.stderr);
    assert!(
        run.stderr.contains(needle),
        "{args:?} should name {needle}: {}",
        run.stderr
    );
    assert!(!run.stderr.contains("panicked"), "{args:?}: {}", run.stderr);
    assert!(run.stdout.is_empty(), "{args:?} printed: {}", run.stdout);
}

/// Inputs that printed `inf`, panicked or wrote a profile with 4,294,967,295 databases.
#[test]
fn size_refuses_impossible_deployments_naming_the_flag() {
    let dir = tempfile::tempdir().expect("tempdir");
    let base = ["size", "--json", "--profile-out", "p.toml"];
    let deployment = [
        "--mailboxes",
        "1000",
        "--messages-per-day",
        "150",
        "--servers",
        "2",
    ];
    let cases: &[(&[&str], &str)] = &[
        (
            &[
                "--mailboxes",
                "18446744073709551615",
                "--messages-per-day",
                "150",
                "--servers",
                "2",
            ],
            "--mailboxes",
        ),
        (
            &[
                "--mailboxes",
                "10000000",
                "--messages-per-day",
                "150",
                "--servers",
                "2",
                "--mailboxes-per-database",
                "1",
            ],
            "--mailboxes-per-database",
        ),
        (&["--messages-per-day", "1e-300"], "--messages-per-day"),
        (&["--messages-per-day", "1e300"], "--messages-per-day"),
        (&["--message-size-kb", "1e300"], "--message-size-kb"),
        (&["--iops-per-mailbox", "1e308"], "--iops-per-mailbox"),
        (&["--iops-per-mailbox", "1e-300"], "--iops-per-mailbox"),
        (&["--headroom-pct", "1e300"], "--headroom-pct"),
        (&["--data-overhead-pct", "1e300"], "--data-overhead-pct"),
        (
            &["--specint-rate", "1e-300", "--specint-cores", "1"],
            "--specint-rate",
        ),
        (
            &["--cpu-mhz", "1e-300", "--method", "exchange2010-vmware"],
            "--cpu-mhz",
        ),
        (&["--peak-cpu-pct", "1e-300"], "--peak-cpu-pct"),
        (&["--servers", "4294967295"], "--servers"),
    ];
    for (extra, needle) in cases {
        // Flags given later win, so the case's values override the deployment's.
        let mut args: Vec<&str> = base.to_vec();
        if !extra.contains(&"--mailboxes") {
            args.extend_from_slice(&deployment);
        }
        args.extend_from_slice(extra);
        let run = mbx_in(dir.path(), &args);
        refused(&run, &args, needle);
        assert!(listing(dir.path()).is_empty(), "{args:?} wrote a file");
    }
}

/// The largest deployment within the ranges sizes with finite figures and a profile of at most
/// 100 databases.
#[test]
fn size_of_the_largest_deployment_is_finite() {
    let dir = tempfile::tempdir().expect("tempdir");
    let run = mbx_in(
        dir.path(),
        &[
            "size",
            "--json",
            "--mailboxes",
            "10000000",
            "--messages-per-day",
            "10000",
            "--message-size-kb",
            "100000",
            "--quota-mb",
            "102400",
            "--servers",
            "1",
            "--profile-out",
            "p.toml",
        ],
    );
    assert_eq!(run.code, 0, "{}", run.stderr);
    let v = run.json();
    assert_eq!(v["profile"]["databases"], 100);
    assert_eq!(v["databases_per_server"], 100);
    for key in [
        "database_size_gb",
        "target_iops_per_server",
        "cores_required",
    ] {
        assert!(
            v[key].as_f64().is_some_and(f64::is_finite),
            "{key} = {}",
            v[key]
        );
    }
    let text = mbx_in(
        dir.path(),
        &[
            "size",
            "--mailboxes",
            "10000000",
            "--messages-per-day",
            "10000",
            "--message-size-kb",
            "100000",
            "--quota-mb",
            "102400",
            "--servers",
            "1",
        ],
    );
    assert_eq!(text.code, 0, "{}", text.stderr);
    for word in text.stdout.split(|c: char| !c.is_ascii_alphanumeric()) {
        assert!(word != "inf" && word != "NaN", "{}", text.stdout);
    }
    let profile = mbx_config::Profile::load(&dir.path().join("p.toml")).expect("valid profile");
    assert_eq!(profile.databases, 100);
}

/// `run` refuses out-of-range numbers while validating: fast, exit 2, nothing created.
#[test]
fn run_refuses_out_of_range_numbers_before_creating_anything() {
    let dir = tempfile::tempdir().expect("tempdir");
    let cases: &[(&[&str], &str)] = &[
        (
            &["run", "--iops-per-mailbox", "1e-300", "--mailboxes", "1"],
            "--iops-per-mailbox",
        ),
        (
            &["run", "--iops-per-mailbox", "0.02", "--mailboxes", "1"],
            "--iops-per-mailbox",
        ),
        (
            &["run", "--duration", "18446744073709551615s"],
            "--duration",
        ),
        (&["run", "--duration", "31d"], "30 days"),
        (&["run", "--sample-interval", "2h"], "--sample-interval"),
        (
            &["run", "--mailboxes", "18446744073709551615"],
            "--mailboxes",
        ),
        (
            &["run", "--checksum-reads-pct", "101"],
            "--checksum-reads-pct",
        ),
        (
            &["run", "--checksum-reads-pct", "-1"],
            "--checksum-reads-pct",
        ),
    ];
    for (args, needle) in cases {
        let started = std::time::Instant::now();
        let run = mbx_in(dir.path(), args);
        refused(&run, args, needle);
        assert!(
            listing(dir.path()).is_empty(),
            "{args:?} created {:?}",
            listing(dir.path())
        );
        assert!(started.elapsed() < std::time::Duration::from_secs(20));
    }
}

/// A `--config` file with `duration_s = 1e300` (which panicked after the databases were
/// attached) is refused naming the key and the file; config-only keys are named as keys.
#[test]
fn run_names_config_keys_not_flags() {
    let dir = tempfile::tempdir().expect("tempdir");
    let cases = [
        ("duration_s = 1e300\n", "`duration_s` in --config cfg.toml"),
        ("duration_s = nan\n", "`duration_s` in --config cfg.toml"),
        (
            "[thresholds]\ndb_read_avg_ms = 1e300\n",
            "`thresholds.db_read_avg_ms` in --config cfg.toml",
        ),
        (
            "[cache]\nmax_dirty_age_s = inf\n",
            "`cache.max_dirty_age_s` in --config cfg.toml",
        ),
        (
            "bdm_reads_per_s = 1e-300\n",
            "`bdm_reads_per_s` in --config cfg.toml",
        ),
    ];
    for (text, needle) in cases {
        std::fs::write(dir.path().join("cfg.toml"), text).expect("write config");
        let args = ["run", "--config", "cfg.toml"];
        let run = mbx_in(dir.path(), &args);
        refused(&run, &args, needle);
        assert!(!run.stderr.contains("--thresholds"), "{}", run.stderr);
        assert!(!run.stderr.contains("--cache"), "{}", run.stderr);
        assert!(!run.stderr.contains("--bdm-reads"), "{}", run.stderr);
        assert_eq!(listing(dir.path()), ["cfg.toml"], "{text}");
    }
}
