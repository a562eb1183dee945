//! `mbxstress size`: the issue's acceptance commands, input files, profiles and bad input.

use crate::common::{close, mbx, mbx_in, scratch};

const TINTRI: &[&str] = &[
    "size",
    "--mailboxes",
    "16000",
    "--messages-per-day",
    "150",
    "--quota-mb",
    "2048",
    "--servers",
    "4",
    "--databases-per-server",
    "4",
    "--specint-rate",
    "1120",
    "--specint-cores",
    "16",
    "--cores-per-server",
    "4",
    "--cpu-mhz",
    "2500",
    "--peak-cpu-pct",
    "35",
];

fn tintri_with(extra: &[&str]) -> Vec<&'static str> {
    let mut v: Vec<&'static str> = TINTRI.to_vec();
    for e in extra {
        v.push(Box::leak(e.to_string().into_boxed_str()));
    }
    v
}

/// Acceptance: the Tintri CPU and memory chain with the 2010 / VMware method.
#[test]
fn tintri_acceptance_json() {
    let run = mbx(&tintri_with(&["--method", "exchange2010-vmware", "--json"]));
    assert_eq!(run.code, 0, "{}", run.stderr);
    let v = run.json();
    assert_eq!(v["method"], "exchange2010-vmware-guide");
    close(&v["megacycles_required"], 48_000.0, 1e-9);
    close(&v["megacycles_per_core"], 9_333.0, 0.5);
    close(&v["cores_required"], 14.7, 0.05);
    close(&v["cpu_peak_utilization_pct"], 32.0, 0.5);
    close(&v["ram_gb_total"], 200.0, 0.5);
    close(&v["ram_gb_per_server"], 50.0, 0.1);
    close(&v["mailbox_size_on_disk_mb"], 2299.0, 1e-9);
    assert_eq!(v["sources"]["capacity"], "exchange2013-calculator");
}

/// Acceptance: the same deployment with the 2013 calculator.
#[test]
fn tintri_with_2013_calculator() {
    let run = mbx(&tintri_with(&["--method", "exchange2013", "--json"]));
    assert_eq!(run.code, 0, "{}", run.stderr);
    let v = run.json();
    assert_eq!(v["method"], "exchange2013-calculator");
    close(&v["iops_per_mailbox"], 0.1005, 1e-12);
    close(&v["mailbox_size_on_disk_mb"], 2299.0, 1e-9);
    close(&v["headroom_pct"], 20.0, 1e-12);
    close(&v["iops_per_mailbox_esrp"], 0.12, 1e-12);
    close(&v["target_iops_per_server"], 480.0, 1e-9);
    assert_eq!(v["profile"]["mailboxes"], 4000);
    assert_eq!(v["profile"]["databases"], 4);
}

/// Acceptance: each figure of the human report says which method it came from.
#[test]
fn human_report_labels_methods() {
    let run = mbx(&tintri_with(&["--method", "exchange2010-vmware"]));
    assert_eq!(run.code, 0, "{}", run.stderr);
    let out = &run.stdout;
    for needle in ["48,000", "9,333", "14.69 (15)", "32.1%", "200.3", "2,299"] {
        assert!(out.contains(needle), "missing {needle} in:\n{out}");
    }
    for line in out.lines().filter(|l| l.contains("Megacycles")) {
        assert!(line.ends_with("2010/VMware guide"), "{line}");
    }
    for line in out.lines().filter(|l| l.contains("Mailbox size on disk")) {
        assert!(line.ends_with("2013 calculator"), "{line}");
    }
}

/// The README's first command: `size` with no arguments sizes the built-in example.
#[test]
fn bare_size_uses_builtin_example() {
    let run = mbx(&["size"]);
    assert_eq!(run.code, 0, "{}", run.stderr);
    assert!(
        run.stderr.contains("built-in example 'tintri'"),
        "{}",
        run.stderr
    );
    assert!(run.stdout.contains("16,000 mailboxes"), "{}", run.stdout);
    // Other flags still apply to the implicit example.
    let v = mbx(&["size", "--method", "exchange2013", "--json"]).json();
    close(&v["iops_per_mailbox"], 0.1005, 1e-12);
}

#[test]
fn examples_reproduce_esrp_targets() {
    let v = mbx(&["size", "--example", "dell-esrp", "--json"]).json();
    close(&v["target_iops_per_server"], 600.0, 1e-9);
    close(&v["iops_per_mailbox_esrp"], 0.12, 1e-12);
    let v = mbx(&["size", "--example", "pure", "--json"]).json();
    close(&v["target_iops_per_server"], 2500.0, 1e-9);
    let v = mbx(&[
        "size",
        "--example",
        "pure",
        "--mailboxes",
        "80000",
        "--json",
    ])
    .json();
    close(&v["target_iops_per_server"], 2000.0, 1e-9);
}

#[test]
fn version_and_help() {
    let run = mbx(&["--version"]);
    assert_eq!(run.code, 0);
    assert!(run.stdout.starts_with("mbxstress "), "{}", run.stdout);
    let run = mbx(&["size", "--help"]);
    assert_eq!(run.code, 0);
    assert!(run.stdout.contains("Examples:"), "{}", run.stdout);
    assert!(run.stdout.contains("--profile-out"), "{}", run.stdout);
    let run = mbx(&["--help"]);
    assert!(run.stdout.contains("Exit codes"), "{}", run.stdout);
}

/// Bad input gets exit 2 and a message naming the flag.
#[test]
fn bad_flags_exit_2_naming_the_flag() {
    let base = ["size", "--messages-per-day", "150", "--servers", "2"];
    let cases: &[(&[&str], &str)] = &[
        (&["--mailboxes", "0"], "--mailboxes"),
        (&["--mailboxes", "-5"], "--mailboxes"),
        (&["--mailboxes", "lots"], "--mailboxes"),
        (
            &["--mailboxes", "100", "--quota-mb", "204800"],
            "--quota-mb",
        ),
        (
            &["--mailboxes", "100", "--databases-per-server", "101"],
            "--databases-per-server",
        ),
        (&["--mailboxes", "100", "--copies", "3"], "--copies"),
        (
            &["--mailboxes", "100", "--headroom-pct", "nan"],
            "--headroom-pct",
        ),
        (
            &["--mailboxes", "100", "--peak-cpu-pct", "150"],
            "--peak-cpu-pct",
        ),
        (
            &["--mailboxes", "100", "--specint-rate", "1120"],
            "--specint-cores",
        ),
        (
            &[
                "--mailboxes",
                "100",
                "--databases-per-server",
                "2",
                "--mailboxes-per-database",
                "50",
            ],
            "--mailboxes-per-database",
        ),
        (
            &["--mailboxes", "100", "--method", "exchange2007"],
            "--method",
        ),
    ];
    for (extra, flag) in cases {
        let mut args: Vec<&str> = base.to_vec();
        args.extend_from_slice(extra);
        let run = mbx(&args);
        assert_eq!(run.code, 2, "{args:?}: {}", run.stderr);
        assert!(
            run.stderr.contains(flag),
            "{args:?} should name {flag}: {}",
            run.stderr
        );
        assert!(
            run.stdout.is_empty(),
            "{args:?} printed a report: {}",
            run.stdout
        );
    }
    // A missing required flag is named too.
    let run = mbx(&["size", "--mailboxes", "100", "--servers", "2"]);
    assert_eq!(run.code, 2);
    assert!(run.stderr.contains("--messages-per-day"), "{}", run.stderr);
}

#[test]
fn input_file_same_as_flags() {
    let dir = scratch("input-file");
    std::fs::write(
        dir.join("tintri.toml"),
        "method = \"exchange2010-vmware\"\nmailboxes = 16000\nmessages_per_day = 150\nquota_mb = 2048\n\
         servers = 4\ndatabases_per_server = 4\nspecint_rate = 1120\nspecint_cores = 16\n\
         cores_per_server = 4\ncpu_mhz = 2500\npeak_cpu_pct = 35\nvirtualized = false\n",
    )
    .expect("write");
    let from_file = mbx_in(Some(&dir), &["size", "--input", "tintri.toml", "--json"]);
    assert_eq!(from_file.code, 0, "{}", from_file.stderr);
    let from_flags = mbx(&tintri_with(&["--method", "exchange2010-vmware", "--json"]));
    let (mut a, mut b) = (from_file.json(), from_flags.json());
    // Identical reports, figure for figure.
    a.as_object_mut().expect("object").remove("input");
    b.as_object_mut().expect("object").remove("input");
    assert_eq!(a, b);
    // Flags override the file.
    let v = mbx_in(
        Some(&dir),
        &[
            "size",
            "--input",
            "tintri.toml",
            "--method",
            "exchange2013",
            "--json",
        ],
    )
    .json();
    assert_eq!(v["method"], "exchange2013-calculator");
}

#[test]
fn input_file_errors_name_file_and_key() {
    let dir = scratch("input-errors");
    std::fs::write(
        dir.join("typo.toml"),
        "mailboxes = 100\nmesages_per_day = 150\nservers = 1\n",
    )
    .expect("write");
    let run = mbx_in(Some(&dir), &["size", "--input", "typo.toml"]);
    assert_eq!(run.code, 2, "{}", run.stderr);
    assert!(
        run.stderr.contains("typo.toml") && run.stderr.contains("mesages_per_day"),
        "{}",
        run.stderr
    );

    std::fs::write(
        dir.join("big.toml"),
        "mailboxes = 100\nmessages_per_day = 150\nservers = 1\nquota_mb = 999999\n",
    )
    .expect("write");
    let run = mbx_in(Some(&dir), &["size", "--input", "big.toml"]);
    assert_eq!(run.code, 2, "{}", run.stderr);
    assert!(
        run.stderr.contains("`quota_mb` in big.toml"),
        "{}",
        run.stderr
    );

    let run = mbx_in(Some(&dir), &["size", "--input", "missing.toml"]);
    assert_eq!(run.code, 2, "{}", run.stderr);
    assert!(run.stderr.contains("missing.toml"), "{}", run.stderr);

    std::fs::write(dir.join("short.toml"), "mailboxes = 100\nservers = 1\n").expect("write");
    let run = mbx_in(Some(&dir), &["size", "--input", "short.toml"]);
    assert_eq!(run.code, 2, "{}", run.stderr);
    assert!(
        run.stderr.contains("messages_per_day") && run.stderr.contains("short.toml"),
        "{}",
        run.stderr
    );
}

#[test]
fn profile_out_round_trips_and_protects_foreign_files() {
    let dir = scratch("profile-out");
    let run = mbx_in(
        Some(&dir),
        &[
            "size",
            "--example",
            "dell-esrp",
            "--profile-out",
            "esrp.toml",
        ],
    );
    assert_eq!(run.code, 0, "{}", run.stderr);
    assert!(run.stdout.contains("esrp.toml"), "{}", run.stdout);
    let profile = mbx_config::Profile::load(&dir.join("esrp.toml")).expect("a valid profile");
    assert_eq!(profile.mailboxes, 5000);
    assert_eq!(profile.iops_per_mailbox, 0.12);
    assert_eq!(profile.databases, 6);
    assert_eq!(profile.copies_per_database, 2);
    assert_eq!(profile.mailbox_quota_mb, 2048);

    std::fs::write(dir.join("notes.txt"), "keep me").expect("write");
    let run = mbx_in(
        Some(&dir),
        &[
            "size",
            "--example",
            "dell-esrp",
            "--profile-out",
            "notes.txt",
        ],
    );
    assert_eq!(run.code, 2, "{}", run.stderr);
    assert!(run.stderr.contains("notes.txt"), "{}", run.stderr);
    assert_eq!(
        std::fs::read_to_string(dir.join("notes.txt")).expect("read"),
        "keep me"
    );
}

#[test]
fn json_output_is_clean_when_piped() {
    // stdout carries only JSON; notes go to stderr.
    let run = mbx(&["size", "--json"]);
    assert_eq!(run.code, 0);
    let v = run.json();
    assert!(v["warnings"].is_array());
}

const ACCEPTANCE_29: &[&str] = &[
    "size",
    "--mailboxes",
    "5000",
    "--messages-per-day",
    "150",
    "--quota-mb",
    "2048",
    "--copies",
    "2",
    "--servers",
    "4",
];

/// Issue 29's acceptance command: disks, replication bandwidth and the smallest valid server
/// count, each with its method, and whole mailbox counts.
#[test]
fn issue_29_acceptance_prints_disks_replication_and_server_count() {
    let run = mbx(ACCEPTANCE_29);
    assert_eq!(run.code, 0, "{}", run.stderr);
    let out = &run.stdout;
    for needle in [
        "Disks (7,200 rpm NL-SAS/SATA, 4,000 GB, 75 IOPS each)",
        "Database volumes: RAID 10 (write penalty 2)",
        "Database disks by capacity / by IOPS",
        "Disks per server",
        "Log replication, busiest hour (12% of a day's logs, assumption)",
        "Mbit/s per database to each other copy",
        "Smallest valid server count: 3 (asked: 4, within the ceilings)",
        "Mailbox counts are whole",
    ] {
        assert!(out.contains(needle), "missing {needle:?} in:\n{out}");
    }
    // Whole mailboxes: 5,000 / 3 survivors -> 1,667, not 1,666.7; 833.33 per database -> 834.
    let line = out
        .lines()
        .find(|l| l.contains("Active mailboxes, worst failure mode"))
        .expect("row");
    assert!(
        line.contains("1,667") && !line.contains("1,666.7"),
        "{line}"
    );
    let line = out
        .lines()
        .find(|l| l.contains("Mailboxes per database"))
        .expect("row");
    assert!(line.contains("834"), "{line}");
    for label in [
        "Disks per server",
        "Mbit/s per database",
        "Database disks (",
    ] {
        let line = out.lines().find(|l| l.contains(label)).expect(label);
        assert!(line.trim_end().ends_with("2013 calculator"), "{line}");
    }
    let line = out
        .lines()
        .find(|l| l.contains("Disks per server"))
        .expect("row");
    let cells: Vec<&str> = line.split_whitespace().collect();
    assert!(cells.contains(&"9") && cells.contains(&"36"), "{line}");

    let run = mbx(&[ACCEPTANCE_29, &["--json"]].concat());
    assert_eq!(run.code, 0, "{}", run.stderr);
    let v = run.json();
    assert_eq!(v["storage_design"]["method"], "exchange2013-calculator");
    assert_eq!(v["storage_design"]["disks_per_server"], 9);
    assert_eq!(v["storage_design"]["database"]["write_penalty"], 2);
    assert_eq!(v["log_replication"]["method"], "exchange2013-calculator");
    close(&v["log_replication"]["mbit_per_s_per_dag"], 41.943, 0.001);
    assert_eq!(v["server_count"]["smallest_valid"], 3);
    assert_eq!(v["server_count"]["asked"], 4);
    assert_eq!(v["active_mailboxes_per_server_worst_whole"], 1667);
    // Existing keys keep their names and values.
    close(&v["active_mailboxes_per_server_worst"], 5000.0 / 3.0, 1e-9);
    close(&v["target_iops_per_server"], 300.0, 1e-9);
}

/// Storage and replication flags, Exchange SE, and their errors naming the flag (exit 2).
#[test]
fn issue_29_flags_and_errors() {
    let run = mbx(&[
        &ACCEPTANCE_29[..7],
        &[
            "--servers",
            "4",
            "--method",
            "exchange-se",
            "--disk-class",
            "10k",
            "--db-raid",
            "raid6",
            "--copies",
            "4",
            "--sites",
            "2",
            "--lagged-copies",
            "1",
            "--archive-quota-mb",
            "1024",
            "--json",
        ],
    ]
    .concat());
    assert_eq!(run.code, 0, "{}", run.stderr);
    let v = run.json();
    assert_eq!(v["method"], "exchange-se-calculator");
    assert_eq!(v["storage_design"]["disk_class"], "10k");
    assert_eq!(v["storage_design"]["database"]["write_penalty"], 6);
    assert_eq!(v["log_replication"]["cross_site_copies_per_database"], 2);
    assert_eq!(v["highly_available_copies"], 3);
    assert!(v["archive_size_on_disk_mb"].as_f64().unwrap_or(0.0) > 1024.0);
    for (extra, flag) in [
        (&["--sites", "3"][..], "--sites"),
        (&["--lagged-copies", "2"][..], "--lagged-copies"),
        (&["--disk-iops", "0"][..], "--disk-iops"),
        (&["--peak-hour-log-pct", "2"][..], "--peak-hour-log-pct"),
        (&["--db-raid", "raid4"][..], "--db-raid"),
    ] {
        let run = mbx(&[ACCEPTANCE_29, extra].concat());
        assert_eq!(run.code, 2, "{extra:?}: {}", run.stderr);
        assert!(run.stderr.contains(flag), "{extra:?}: {}", run.stderr);
    }
    let dir = scratch("issue-29-input");
    std::fs::write(
        dir.join("d.toml"),
        "mailboxes = 5000\nmessages_per_day = 150\nservers = 4\ncopies = 2\nlog_raid = \"raid7\"\n",
    )
    .expect("write");
    let run = mbx_in(Some(&dir), &["size", "--input", "d.toml"]);
    assert_eq!(run.code, 2, "{}", run.stderr);
    assert!(run.stderr.contains("`log_raid` in"), "{}", run.stderr);
    // The profile still carries what `loadgen run --profile` reads.
    let run = mbx_in(
        Some(&dir),
        &[ACCEPTANCE_29, &["--profile-out", "p.toml"]].concat(),
    );
    assert_eq!(run.code, 0, "{}", run.stderr);
    let p = mbx_config::Profile::load(&dir.join("p.toml")).expect("a valid profile");
    assert_eq!(p.messages_per_day, Some(150));
    assert_eq!(p.message_size_kb, Some(75.0));
}

/// Issue 35, item 9: `size --example NAME` prints its paper's figures beside ours, each "same"
/// or with its reason, and `--json` carries the same comparison; the table and the JSON agree
/// (D1: 670 IOPS, RAM 240 GB for the active mailboxes and 256 GB configured); changed inputs
/// are not compared.
#[test]
fn every_example_prints_its_paper_comparison() {
    for name in ["tintri", "dell-esrp", "dell-sizing", "pure"] {
        let run = mbx(&["size", "--example", name]);
        assert_eq!(run.code, 0, "{name}: {}", run.stderr);
        let at = run
            .stdout
            .find("Against the paper (")
            .unwrap_or_else(|| panic!("{name}: no comparison: {}", run.stdout));
        let rows: Vec<&str> = run.stdout[at..]
            .lines()
            .skip(2)
            .take_while(|l| !l.is_empty())
            .collect();
        let v = mbx(&["size", "--example", name, "--json"]).json();
        let json = v["paper_comparison"].as_array().expect("paper_comparison");
        assert_eq!(rows.len(), json.len(), "{name}: {rows:?}");
        for (row, f) in rows.iter().zip(json) {
            assert!(row.contains(f["figure"].as_str().expect("figure")), "{row}");
            assert!(!row.contains("unexplained"), "{name}: {row}");
            match f["why"].as_str() {
                None => {
                    assert!(row.ends_with("  same"), "{row}");
                    assert_eq!(f["agrees"], true, "{f}");
                }
                Some(why) => {
                    assert!(row.ends_with(why), "{row}");
                    assert_eq!(f["agrees"], false, "{f}");
                }
            }
        }
    }
    let run = mbx(&["size", "--example", "dell-sizing"]);
    let v = mbx(&["size", "--example", "dell-sizing", "--json"]).json();
    close(&v["target_iops_per_server"], 670.0, 1e-9);
    close(&v["ram_for_active_mailboxes_gb"], 240.0, 1e-9);
    close(&v["ram_gb_per_server"], 256.0, 1e-9);
    for (label, figure) in [
        ("Target transactional IOPS", "670.0"),
        ("RAM for the active mailboxes, GB", "240.0"),
        ("RAM, GB (rounded to a configuration)", "256.0"),
        (
            "IOPS per mailbox, no headroom (as published, 3 places)",
            "0.134",
        ),
    ] {
        let line = run
            .stdout
            .lines()
            .find(|l| l.trim_start().starts_with(label))
            .unwrap_or_else(|| panic!("no {label} row: {}", run.stdout));
        // "LABEL  PER-SERVER  TOTAL  2013 calculator": the per-server column.
        assert_eq!(line.split_whitespace().rev().nth(3), Some(figure), "{line}");
    }
    let run = mbx(&["size", "--example", "dell-sizing", "--mailboxes", "6000"]);
    assert!(!run.stdout.contains("Against the paper"), "{}", run.stdout);
    assert!(run.stdout.contains(
        "No comparison with the paper of example 'dell-sizing': flags changed its inputs"
    ));
}
