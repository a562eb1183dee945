//! The disk subsystem throughput test end to end (`run --capacity-pct`): databases sized from a
//! small share of the scratch volume's free space, a short search, the test at a percentage of
//! the maximum, and `throughput` in result.json; refusals exit 2 before anything is created.

use crate::common::{mbx_in, scratch};

/// The --capacity-pct that gives about `mib` MiB of databases on the volume of `dir`.
fn pct_for(dir: &std::path::Path, mib: u64) -> f64 {
    let free = mbx_io::platform::free_space(dir).expect("free space");
    (mib as f64 * (1 << 20) as f64 / 0.75 / free as f64 * 100.0).min(100.0)
}

#[test]
fn capacity_sizing_finds_the_maximum_and_holds_a_percentage_of_it() {
    let dir = scratch("throughput");
    let pct = pct_for(dir.as_ref(), 8);
    // The search's budgets from the --config file: two steps of a second (and the held test's
    // settle phase of one second).
    std::fs::write(
        dir.join("t.toml"),
        "[cache]\nmax_dirty_age_s = 1\n[tuning]\nstep_s = 1\nwindow_s = 0.25\nmax_steps = 2\n",
    )
    .expect("config");
    let pct_s = format!("{pct:.10}");
    let run = mbx_in(
        Some(&dir),
        &[
            "run",
            "--config",
            "t.toml",
            "--capacity-pct",
            &pct_s,
            "--throughput-pct",
            "50",
            "--databases",
            "1",
            "--duration",
            "1s",
            "--sample-interval",
            "1s",
            "--bdm",
            "off",
            "--out",
            "r",
        ],
    );
    assert!(run.code == 0 || run.code == 1, "{}", run.stderr);
    let r: serde_json::Value = serde_json::from_str(
        &std::fs::read_to_string(dir.join("r/result.json")).expect("result.json"),
    )
    .expect("json");
    let t = &r["throughput"];
    assert_eq!(r["config"]["sizing"], "capacity", "{t}");
    assert_eq!(t["throughput_pct"], 50.0);
    // The database: 8 MiB within the share (25% reserved).
    let free = t["free_bytes"].as_f64().expect("free");
    let bytes = t["database_bytes"].as_f64().expect("bytes");
    assert!(bytes <= free * pct / 100.0 * 0.75, "{t}");
    assert!((7.0..=8.0).contains(&(bytes / (1 << 20) as f64)), "{t}");
    let size = std::fs::metadata(dir.join("mbxstress-data/databases/mbxstress001.edb"))
        .expect("database")
        .len();
    assert_eq!(size, bytes as u64);
    // The search: from 100 IOPS per database, at most two search steps (a re-check of a
    // failing bound far above the best pass repeats a step and is not counted).
    let steps = t["steps"].as_array().cloned().unwrap_or_default();
    let search = steps.iter().filter(|s| s["recheck"] != true).count();
    assert!(!steps.is_empty() && search <= 2, "{t}");
    for (i, s) in steps
        .iter()
        .enumerate()
        .filter(|(_, s)| s["recheck"] == true)
    {
        assert!(
            i > 0 && steps[i - 1]["target_iops"] == s["target_iops"],
            "{t}"
        );
        assert_eq!(steps[i - 1]["pass"], false, "{t}");
    }
    assert_eq!(steps[0]["target_iops"], 100.0);
    match t["max_iops"].as_f64() {
        Some(max) => {
            // The test held half the maximum, and it is the result's target.
            let held = t["held_iops"].as_f64().expect("held");
            assert_eq!(held, max / 2.0);
            assert_eq!(r["target_iops"].as_f64(), Some(held));
            assert!(
                steps
                    .iter()
                    .any(|s| s["pass"] == true && s["target_iops"] == max),
                "{t}"
            );
            assert!(run.stdout.contains("maximum found: "), "{}", run.stdout);
            assert!(
                run.stdout.contains("held target: 50% of it"),
                "{}",
                run.stdout
            );
        }
        None => {
            assert_eq!(run.code, 1);
            assert!(t["held_iops"].is_null());
        }
    }
    let html = std::fs::read_to_string(dir.join("r/report.html")).expect("report");
    assert!(
        html.contains("<h2>Disk Subsystem Throughput</h2>"),
        "report section"
    );
}

#[test]
fn capacity_sizing_refuses_profile_flags_and_impossible_sizes_before_creating_anything() {
    let dir = scratch("throughput-refused");
    for (args, needle) in [
        (
            vec!["--capacity-pct", "10", "--mailboxes", "5"],
            "cannot be used with",
        ),
        (vec!["--throughput-pct", "50"], "--capacity-pct"),
        (
            vec!["--capacity-pct", "0"],
            "--capacity-pct: must be above 0",
        ),
        (
            vec!["--capacity-pct", "10", "--throughput-pct", "0.5"],
            "--throughput-pct: must be 1..=100",
        ),
        // A share too small for a database of 1 MiB: refused with the numbers.
        (
            vec!["--capacity-pct", "0.0000000001"],
            "raise --capacity-pct",
        ),
        (
            vec!["--capacity-pct", "10", "--test", "backup"],
            "capacity sizing",
        ),
    ] {
        let mut all = vec!["run", "--out", "r", "--duration", "1s"];
        all.extend(args.iter().copied());
        let run = mbx_in(Some(&dir), &all);
        assert_eq!(run.code, 2, "{args:?}: {}", run.stderr);
        assert!(run.stderr.contains(needle), "{args:?}: {}", run.stderr);
        assert!(!dir.join("r").exists(), "{args:?}");
        assert!(!dir.join("mbxstress-data").exists(), "{args:?}");
    }
    let fm = mbx_in(Some(&dir), &["find-max", "--capacity-pct", "10"]);
    assert_eq!(fm.code, 2, "{}", fm.stderr);
    assert!(fm.stderr.contains("run --capacity-pct"), "{}", fm.stderr);
}
