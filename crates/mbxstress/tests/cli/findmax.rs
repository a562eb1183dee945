//! `find-max` end to end on small databases: the steps run, find-max.json and find-max.html
//! are written, the exit code says whether a count passed; wrong flags exit 2.

use crate::common::{mbx_in, scratch};

#[test]
fn find_max_writes_its_curve_and_answers_or_says_none_passed() {
    let dir = scratch("find-max");
    let run = mbx_in(
        Some(&dir),
        &[
            "find-max",
            "--mailboxes",
            "16",
            "--iops-per-mailbox",
            "2",
            "--quota-mb",
            "1",
            "--databases",
            "1",
            "--tuning-step",
            "1s",
            "--max-steps",
            "2",
            "--out",
            "fm",
        ],
    );
    assert!(run.code == 0 || run.code == 1, "{}", run.stderr);
    let f: serde_json::Value = serde_json::from_str(
        &std::fs::read_to_string(dir.join("fm/find-max.json")).expect("find-max.json"),
    )
    .expect("json");
    assert_eq!(f["schema"], "mbxstress.find-max/1");
    let steps = f["steps"].as_array().cloned().unwrap_or_default();
    // --max-steps counts search steps: not confirmations, not re-checks of a failing bound.
    let search = steps
        .iter()
        .filter(|s| s["confirmation"] != true && s["recheck"] != true)
        .count();
    assert!((1..=2).contains(&search), "{f}");
    // A re-check repeats the step before it.
    for (i, s) in steps
        .iter()
        .enumerate()
        .filter(|(_, s)| s["recheck"] == true)
    {
        assert!(i > 0 && steps[i - 1]["mailboxes"] == s["mailboxes"], "{f}");
        assert_eq!(steps[i - 1]["pass"], false, "{f}");
    }
    // The ramp starts at the profile's count: 16 mailboxes x 2 = 32 IOPS.
    assert_eq!(steps[0]["mailboxes"], 16);
    assert_eq!(steps[0]["target_iops"], 32.0);
    match f["mailboxes"].as_u64() {
        Some(m) => {
            assert_eq!(run.code, 0);
            // No step above the answer failed (issue 25, case 15): the answer is a lower bound
            // and says so.
            let bounded = steps
                .iter()
                .any(|s| s["pass"] == false && s["mailboxes"].as_u64() > Some(m));
            assert_eq!(f["lower_bound"], !bounded, "{f}");
            if bounded {
                assert!(
                    run.stdout
                        .contains(&format!("ANSWER | largest passing count {m}")),
                    "{}",
                    run.stdout
                );
            } else {
                assert!(
                    run.stdout.contains(&format!(
                        "ANSWER | largest passing count {m} (at least: no step above it failed)"
                    )),
                    "{}",
                    run.stdout
                );
                if f["end"] == "steps" {
                    assert!(
                        run.stdout.contains(
                            "; the search stopped at --max-steps before finding a failing step"
                        ),
                        "{}",
                        run.stdout
                    );
                }
            }
            assert!(steps
                .iter()
                .any(|s| s["pass"] == true && s["mailboxes"] == m));
        }
        None => {
            assert_eq!(run.code, 1);
            assert!(run.stdout.contains("NO ANSWER"), "{}", run.stdout);
        }
    }
    let html = std::fs::read_to_string(dir.join("fm/find-max.html")).expect("html");
    assert!(
        html.contains("<h2>Steps</h2>") && html.contains("<svg"),
        "report"
    );
    assert!(dir.join("fm/test.log").is_file());
    // The same folder is never written over.
    let again = mbx_in(Some(&dir), &["find-max", "--out", "fm", "--max-steps", "1"]);
    assert_eq!(again.code, 2, "{}", again.stderr);
    assert!(again.stderr.contains("already holds"), "{}", again.stderr);
}

#[test]
fn find_max_refuses_other_test_types_and_bad_numbers() {
    let dir = scratch("find-max-flags");
    for (args, needle) in [
        (vec!["find-max", "--test", "backup"], "leave out --test"),
        (vec!["find-max", "--max-steps", "0"], "--max-steps"),
        (
            vec!["find-max", "--resolution-pct", "90"],
            "--resolution-pct",
        ),
    ] {
        let run = mbx_in(Some(&dir), &args);
        assert_eq!(run.code, 2, "{args:?}: {}", run.stderr);
        assert!(run.stderr.contains(needle), "{args:?}: {}", run.stderr);
    }
    assert!(
        std::fs::read_dir(&*dir).expect("dir").next().is_none(),
        "nothing written"
    );
}

/// Issue 25, case 17: `find-max --help` lists no run flag that find-max refuses or that means
/// nothing to it, and each such flag is refused with the reason, before anything is written.
#[test]
fn find_max_help_lists_only_the_flags_it_takes() {
    let dir = scratch("find-max-help");
    let help = mbx_in(Some(&dir), &["find-max", "--help"]);
    assert_eq!(help.code, 0, "{}", help.stderr);
    let refused = [
        (vec!["--test", "backup"], "leave out --test"),
        (vec!["--capacity-pct", "10"], "--capacity-pct"),
        (
            vec!["--throughput-pct", "50"],
            "find-max does not take --throughput-pct",
        ),
        (
            vec!["--stress-duration", "1h"],
            "find-max does not take --stress-duration",
        ),
        (
            vec!["--log-files-to-replay", "5"],
            "find-max does not take --log-files-to-replay",
        ),
        (
            vec!["--tuning-max-steps", "3"],
            "find-max does not take --tuning-max-steps",
        ),
        (
            vec!["--start-gate", "stdin"],
            "find-max does not take --start-gate",
        ),
    ];
    for (flag, needle) in &refused {
        assert!(
            !help.stdout.contains(&format!("{} <", flag[0]))
                && !help.stdout.contains(&format!("{}\n", flag[0])),
            "{}: {}",
            flag[0],
            help.stdout
        );
        let mut args = vec!["find-max"];
        args.extend(flag.iter().copied());
        let run = mbx_in(Some(&dir), &args);
        assert_eq!(run.code, 2, "{args:?}: {}", run.stderr);
        assert!(run.stderr.contains(needle), "{args:?}: {}", run.stderr);
    }
    // The flags it takes are still there.
    for flag in [
        "--mailboxes <",
        "--tuning-step <",
        "--max-steps <",
        "--db-path <",
    ] {
        assert!(help.stdout.contains(flag), "{flag}: {}", help.stdout);
    }
    assert!(
        std::fs::read_dir(&*dir).expect("dir").next().is_none(),
        "nothing written"
    );
}

/// Issue 35: find-max interrupted during a confirmation answers the largest count that passed
/// every try, says it is not confirmed and why, in the terminal, find-max.json and
/// find-max.html (it said "NO ANSWER" over a table of passing steps).
#[test]
fn find_max_interrupted_in_a_confirmation_reports_the_largest_passing_count() {
    let dir = scratch("find-max-int");
    std::fs::write(dir.join("fast.toml"), crate::common::FAST).expect("config");
    let child = crate::common::spawn_in(
        &dir,
        &[
            "find-max",
            "--config",
            "fast.toml",
            "--mailboxes",
            "4",
            "--iops-per-mailbox",
            "2",
            "--quota-mb",
            "2",
            "--databases",
            "1",
            "--threads",
            "4",
            "--tuning-step",
            "1s",
            "--max-steps",
            "2",
            "--out",
            "fm",
        ],
    );
    let log = dir.join("fm/test.log");
    let out = crate::common::interrupt_when(child, std::time::Duration::from_secs(120), || {
        std::fs::read_to_string(&log).is_ok_and(|t| t.contains("find-max confirmation 1 ("))
    });
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(130), "{stdout}\n{stderr}");
    let f: serde_json::Value = serde_json::from_str(
        &std::fs::read_to_string(dir.join("fm/find-max.json")).expect("find-max.json"),
    )
    .expect("json");
    assert_eq!(f["end"], "interrupted", "{f}");
    let m = f["mailboxes"]
        .as_u64()
        .unwrap_or_else(|| panic!("no answer: {f}"));
    let steps = f["steps"].as_array().expect("steps");
    assert!(
        steps
            .iter()
            .any(|s| s["pass"] == true && s["mailboxes"] == m && s["confirmation"] != true),
        "{f}"
    );
    assert_eq!(f["confirmation"]["confirmed"], false, "{f}");
    assert_eq!(f["confirmation"]["required"], 2, "{f}");
    let why = f["confirmation"]["why"].as_str().expect("why");
    assert!(
        why.starts_with("interrupted during confirmation 1 of 2 at "),
        "{why}"
    );
    let words = format!("largest passing count {m}");
    assert!(
        stdout.contains(&format!("ANSWER | {words}")) && stdout.contains(why),
        "{stdout}"
    );
    assert!(!stdout.contains("NO ANSWER"), "{stdout}");
    let html = std::fs::read_to_string(dir.join("fm/find-max.html")).expect("html");
    assert!(html.contains(&words) && html.contains(why), "{html}");
    let text = std::fs::read_to_string(&log).expect("test.log");
    assert!(text.contains(&format!("find-max: {words}")), "{text}");
    // Progress between steps: each step and confirmation says where the search is and what is
    // left, in test.log and on the terminal.
    for part in [
        "find-max: step 2 of at most 2 (",
        "s left (",
        "find-max: confirmation 1 (",
    ] {
        assert!(text.contains(part), "{part}: {text}");
        assert!(stderr.contains(part), "{part}: {stderr}");
    }
}
