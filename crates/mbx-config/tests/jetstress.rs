//! Real Jetstress 2013 configuration files (tests/fixtures/jetstress-config/, copied from
//! ../shared/fixtures with their provenance README) read into a run configuration.

use std::path::{Path, PathBuf};

use mbx_config::jetstress::{load, JetstressError, PathMap};
use mbx_config::TestKind;

fn fixture(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures/jetstress-config")
        .join(name)
}

fn e_drive() -> PathMap {
    let mut m = PathMap::default();
    m.add("E:\\=/mnt/e/").expect("rule");
    m
}

/// JetTest's file: a 15-minute Performance test, tuning on, attaching 4 existing databases of
/// 300 mailboxes x 100 MB x 1 IOPS with 3 copies, Strict thresholds, paths on E:.
#[test]
fn the_complete_file_maps_every_value() {
    let j = load(&fixture("jettest-performance-4db.xml"), &e_drive()).expect("imports");
    let c = &j.config;
    assert_eq!(j.test, TestKind::Performance);
    assert!(j.tuning, "SuppressTuning false");
    assert!(j.attach_existing, "DatabaseSource Open");
    assert_eq!(c.duration_s, 900.0);
    assert_eq!(c.sample_interval_s, 15.0);
    assert_eq!(c.threads, 4);
    assert_eq!(c.profile.mailboxes, 300);
    assert_eq!(c.profile.mailbox_quota_mb, 100);
    assert_eq!(c.profile.iops_per_mailbox, 1.0);
    assert_eq!(c.profile.copies_per_database, 3);
    assert_eq!(c.profile.databases, 4);
    assert_eq!(c.thresholds.iops_margin, 0.05);
    assert_eq!(
        (c.thresholds.db_read_avg_ms, c.thresholds.db_read_max_ms),
        (20.0, 100.0)
    );
    assert_eq!(
        (c.thresholds.log_write_avg_ms, c.thresholds.log_write_max_ms),
        (10.0, 100.0)
    );
    assert_eq!(
        (
            c.op_mix.insert_pct,
            c.op_mix.delete_pct,
            c.op_mix.replace_pct
        ),
        (40, 20, 5)
    );
    assert_eq!((c.op_mix.read_pct, c.op_mix.lazy_commit_pct), (35, 70));
    assert!(c.bdm);
    assert!(c.circular_logging);
    assert!(!c.continue_on_errors);
    assert_eq!(c.log_files_to_replay, 500);
    let dbs: Vec<PathBuf> = (1..=4)
        .map(|i| PathBuf::from(format!("/mnt/e/db{i}/db")))
        .collect();
    let logs: Vec<PathBuf> = (1..=4)
        .map(|i| PathBuf::from(format!("/mnt/e/db{i}/log")))
        .collect();
    assert_eq!(c.db_paths, dbs);
    assert_eq!(c.log_paths, logs);
    assert_eq!(j.instances.len(), 4);
    assert!(c.validate_for(j.test).is_ok());
    // Every element the file has is either mapped or listed with a reason.
    let ignored: Vec<&str> = j.ignored.iter().map(|i| i.element.as_str()).collect();
    for e in [
        "BinaryPerfLog",
        "UseEseCounters",
        "MaxVerPages",
        "BatchUpdates",
        "LogInterval2",
    ] {
        assert!(ignored.contains(&e), "{e} listed: {ignored:?}");
    }
    assert!(j.ignored.iter().all(|i| !i.reason.is_empty()));
    assert!(!ignored.contains(&"Type") && !ignored.contains(&"MailboxCount"));
}

/// The Stress thresholds are the file's Lenient set.
#[test]
fn a_stress_file_takes_the_lenient_thresholds() {
    let text = std::fs::read_to_string(fixture("jettest-performance-4db.xml"))
        .expect("read")
        .replace("<Type>Performance</Type>", "<Type>Stress</Type>");
    let j =
        mbx_config::jetstress::from_str(&text, Path::new("s.xml"), &e_drive()).expect("imports");
    assert_eq!(j.test, TestKind::Stress);
    assert_eq!(j.config.thresholds.db_read_max_ms, 200.0);
    assert_eq!(j.config.thresholds.log_write_max_ms, 200.0);
    assert_eq!(j.config.thresholds.db_read_avg_ms, 20.0);
}

/// Without a rule for E:, the error names the unmapped path and the flag.
#[test]
fn an_unmapped_windows_path_is_named_with_the_fix() {
    if cfg!(windows) {
        return;
    }
    let err =
        load(&fixture("jettest-performance-4db.xml"), &PathMap::default()).expect_err("unmapped");
    let msg = err.to_string();
    assert!(msg.contains("'E:\\db1\\db'"), "{msg}");
    assert!(msg.contains("--map-path 'E:\\=/local/folder/'"), "{msg}");
}

/// The automation template: `Type` is junk and the counts are empty; all named at once.
#[test]
fn the_template_names_type_and_the_empty_counts() {
    let err = load(
        &fixture("automation-template-blank-profile.xml"),
        &PathMap::default(),
    )
    .expect_err("junk");
    let JetstressError::Invalid { problems, .. } = &err else {
        panic!("{err}");
    };
    let all = problems.join("\n");
    for element in [
        "<Type> is 'asfdsa'",
        "<ThreadCount> is empty",
        "<MailboxCount> is empty",
        "<MailboxQuota> is empty",
        "<MailboxIops> is empty",
    ] {
        assert!(all.contains(element), "{element} in:\n{all}");
    }
}

/// Not XML, or not a Jetstress configuration: errors naming the file.
#[test]
fn other_files_are_refused() {
    let m = PathMap::default();
    let e = mbx_config::jetstress::from_str("<configuration><a>", Path::new("x.xml"), &m)
        .expect_err("unterminated");
    assert!(e.to_string().starts_with("x.xml: "), "{e}");
    let e = mbx_config::jetstress::from_str("<html></html>", Path::new("y.xml"), &m)
        .expect_err("not jetstress");
    assert!(
        e.to_string().contains("not a Jetstress configuration"),
        "{e}"
    );
}
