//! Real Jetstress 2013 configuration files (tests/fixtures/jetstress-config/, copies of real
//! Jetstress files, each naming its source) read into a run configuration.

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
    // Tuning on: the thread count is tuned (ThreadCount 4 is not used).
    assert_eq!(c.threads, 0);
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
    // VerifyChecksum true: every page read checksummed, as Jetstress does.
    assert_eq!(c.checksum_reads_pct, 100);
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
#[cfg_attr(
    windows,
    ignore = "on Windows E:\\ is a path of this machine, not one to map"
)]
fn an_unmapped_windows_path_is_named_with_the_fix() {
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

/// Element names of an XML text (opening tags).
fn element_names(xml: &str) -> std::collections::BTreeSet<String> {
    xml.split('<')
        .skip(1)
        .filter(|t| !t.starts_with(['/', '?', '!']))
        .map(|t| {
            t.chars()
                .take_while(|c| c.is_ascii_alphanumeric())
                .collect::<String>()
        })
        .collect()
}

/// Importing what we export gives the same configuration back; the exported file has only
/// elements a file written by Jetstress has.
#[test]
fn export_then_import_round_trips_the_fixture() {
    use mbx_config::jetstress::{from_str, to_xml, ExportSpec};
    let map = e_drive();
    let first = load(&fixture("jettest-performance-4db.xml"), &map).expect("imports");
    let xml = to_xml(&ExportSpec {
        config: &first.config,
        test: first.test,
        attach_existing: first.attach_existing,
        map: &map,
    });
    let again = from_str(&xml, Path::new("exported.xml"), &map).expect("re-imports");
    assert_eq!(again.config, first.config);
    assert_eq!(again.test, first.test);
    assert_eq!(again.attach_existing, first.attach_existing);
    assert_eq!(again.instances, first.instances);
    assert!(xml.contains("<Path>E:\\db1\\db</Path>"), "{xml}");
    let real = element_names(
        &std::fs::read_to_string(fixture("jettest-performance-4db.xml")).expect("read"),
    );
    let ours = element_names(&xml);
    let extra: Vec<_> = ours.difference(&real).collect();
    assert!(
        extra.is_empty(),
        "elements real files do not have: {extra:?}"
    );
}

/// A configuration with every mappable value changed survives export and import, for each
/// test type Jetstress has; a single database folder and log folder become one folder per
/// instance, as `prepare` lays them out.
#[test]
fn export_then_import_round_trips_changed_values() {
    use mbx_config::jetstress::{from_str, to_xml, ExportSpec};
    use mbx_config::RunConfig;
    let mut c = RunConfig::default();
    c.profile.mailboxes = 1234;
    c.profile.mailbox_quota_mb = 2048;
    c.profile.iops_per_mailbox = 0.12;
    c.profile.databases = 3;
    c.profile.copies_per_database = 2;
    c.threads = 17;
    c.duration_s = 5400.0;
    c.sample_interval_s = 10.0;
    c.bdm = false;
    c.continue_on_errors = true;
    c.circular_logging = false;
    c.log_files_to_replay = 123;
    c.op_mix.insert_pct = 30;
    c.op_mix.delete_pct = 25;
    c.op_mix.replace_pct = 10;
    c.op_mix.read_pct = 35;
    c.op_mix.lazy_commit_pct = 50;
    c.thresholds.db_read_avg_ms = 15.0;
    c.thresholds.db_read_max_ms = 150.0;
    c.thresholds.log_write_avg_ms = 5.0;
    c.thresholds.log_write_max_ms = 50.0;
    c.thresholds.iops_margin = 0.1;
    c.thresholds.max_latency_errors = 2;
    // VerifyChecksum off: no read checksummed whole (the block stamps are still checked).
    c.checksum_reads_pct = 0;
    c.db_paths = vec![PathBuf::from("/mnt/e/db")];
    c.log_paths = vec![PathBuf::from("/mnt/e/log")];
    let map = e_drive();
    for test in [
        TestKind::Performance,
        TestKind::Stress,
        TestKind::Backup,
        TestKind::SoftRecovery,
    ] {
        let xml = to_xml(&ExportSpec {
            config: &c,
            test,
            attach_existing: true,
            map: &map,
        });
        let j = from_str(&xml, Path::new("x.xml"), &map).unwrap_or_else(|e| panic!("{test}: {e}"));
        let mut want = c.clone();
        want.db_paths = vec![PathBuf::from("/mnt/e/db"); 3];
        want.log_paths = (1..=3)
            .map(|i| PathBuf::from(format!("/mnt/e/log/db00{i}")))
            .collect();
        assert_eq!(j.config, want, "{test}");
        assert_eq!(j.test, test);
        assert!(j.attach_existing);
        assert!(!j.tuning);
        // Tuning on round-trips too.
        let tuned = RunConfig {
            threads: 0,
            ..c.clone()
        };
        let xml = to_xml(&ExportSpec {
            config: &tuned,
            test,
            attach_existing: true,
            map: &map,
        });
        assert!(
            xml.contains("<SuppressTuning>false</SuppressTuning>"),
            "{xml}"
        );
        let j = from_str(&xml, Path::new("x.xml"), &map).unwrap_or_else(|e| panic!("{test}: {e}"));
        assert!(j.tuning);
        assert_eq!(j.config.threads, 0);
        // Jetstress's VerifyChecksum is on or off: any share above 0 exports as on, which
        // checksums every read (the export names the difference on stderr).
        for (pct, on, back) in [(10u8, true, 100u8), (100, true, 100), (0, false, 0)] {
            let xml = to_xml(&ExportSpec {
                config: &RunConfig {
                    checksum_reads_pct: pct,
                    ..c.clone()
                },
                test,
                attach_existing: true,
                map: &map,
            });
            assert!(
                xml.contains(&format!("<VerifyChecksum>{on}</VerifyChecksum>")),
                "{pct}: {xml}"
            );
            let j = from_str(&xml, Path::new("x.xml"), &map).unwrap_or_else(|e| panic!("{e}"));
            assert_eq!(j.config.checksum_reads_pct, back);
        }
        assert!(
            xml.contains("<Path>E:\\db</Path>")
                && xml.contains("<LogPath>E:\\log\\db002</LogPath>"),
            "{xml}"
        );
    }
}

/// The disk subsystem throughput category survives export and import: DatabaseSizing,
/// CapacityPercentage and ThroughputPercentage carry `sizing`, `capacity_pct` and
/// `throughput_pct`; the exported file still has only elements real files have; empty mailbox
/// elements are accepted with capacity sizing (it has no profile) and refused without it.
#[test]
fn capacity_sizing_round_trips_and_needs_no_mailbox_profile() {
    use mbx_config::jetstress::{from_str, to_xml, ExportSpec};
    use mbx_config::{RunConfig, Sizing};
    let c = RunConfig {
        sizing: Sizing::Capacity,
        capacity_pct: 40.0,
        throughput_pct: 80.0,
        db_paths: vec![PathBuf::from("/mnt/e/db")],
        log_paths: vec![PathBuf::from("/mnt/e/log")],
        ..RunConfig::default()
    };
    let map = e_drive();
    for test in [TestKind::Performance, TestKind::Stress] {
        let xml = to_xml(&ExportSpec {
            config: &c,
            test,
            attach_existing: false,
            map: &map,
        });
        for element in [
            "<DatabaseSizing>Capacity</DatabaseSizing>",
            "<CapacityPercentage>40</CapacityPercentage>",
            "<ThroughputPercentage>80</ThroughputPercentage>",
            "<DatabaseSpaceReserved>25</DatabaseSpaceReserved>",
        ] {
            assert!(xml.contains(element), "{element}: {xml}");
        }
        let j = from_str(&xml, Path::new("x.xml"), &map).unwrap_or_else(|e| panic!("{test}: {e}"));
        assert_eq!(j.config.sizing, Sizing::Capacity);
        assert_eq!(
            (j.config.capacity_pct, j.config.throughput_pct),
            (40.0, 80.0)
        );
        assert_eq!(j.test, test);
        let real = element_names(
            &std::fs::read_to_string(fixture("jettest-performance-4db.xml")).expect("read"),
        );
        let extra: Vec<_> = element_names(&xml).difference(&real).cloned().collect();
        assert!(extra.is_empty(), "{extra:?}");
        // A profile file keeps Profile sizing and Jetstress's 100s.
        let p = to_xml(&ExportSpec {
            config: &RunConfig {
                sizing: Sizing::Profile,
                ..c.clone()
            },
            test,
            attach_existing: false,
            map: &map,
        });
        assert!(
            p.contains("<DatabaseSizing>Profile</DatabaseSizing>"),
            "{p}"
        );
        let blank = xml
            .replace(
                &format!("<MailboxCount>{}</MailboxCount>", c.profile.mailboxes),
                "<MailboxCount />",
            )
            .replace(
                &format!("<MailboxIops>{}</MailboxIops>", c.profile.iops_per_mailbox),
                "<MailboxIops></MailboxIops>",
            );
        assert_ne!(blank, xml);
        let j = from_str(&blank, Path::new("x.xml"), &map).expect("no profile needed");
        assert_eq!(j.config.sizing, Sizing::Capacity);
        let profile_blank = blank.replace(
            "<DatabaseSizing>Capacity</DatabaseSizing>",
            "<DatabaseSizing>Profile</DatabaseSizing>",
        );
        let e = from_str(&profile_blank, Path::new("x.xml"), &map).expect_err("profile needed");
        assert!(e.to_string().contains("MailboxCount"), "{e}");
    }
    // Out-of-range percentages are problems naming their elements.
    let xml = to_xml(&ExportSpec {
        config: &c,
        test: TestKind::Performance,
        attach_existing: false,
        map: &map,
    })
    .replace("<CapacityPercentage>40<", "<CapacityPercentage>0<")
    .replace("<ThroughputPercentage>80<", "<ThroughputPercentage>150<")
    .replace("<DatabaseSpaceReserved>25<", "<DatabaseSpaceReserved>10<");
    let e = from_str(&xml, Path::new("x.xml"), &map)
        .expect_err("refused")
        .to_string();
    for element in [
        "CapacityPercentage",
        "ThroughputPercentage",
        "DatabaseSpaceReserved",
    ] {
        assert!(e.contains(element), "{element}: {e}");
    }
}

/// A single-valued element given twice (issue 25, case 11: a second `<Type>` was read silently,
/// the last one winning) is refused, naming the element and where; so is a second section or a
/// second threshold set for the same tests. Several `<EseInstance>`s or `<Path>`s are normal.
#[test]
fn a_single_valued_element_given_twice_is_refused_naming_it() {
    let path = fixture("jettest-performance-4db.xml");
    let text = std::fs::read_to_string(&path).expect("fixture");
    for (from, to, want) in [
        (
            "<Type>Performance</Type>",
            "<Type>Performance</Type>\n    <Type>Stress</Type>",
            "<Type> appears 2 times in <TestDesignInfo>",
        ),
        (
            "<LogPath>",
            "<LogPath>E:\\other</LogPath>\n      <LogPath>",
            "<LogPath> appears 2 times in <EseInstance 1>",
        ),
        (
            "<Thresholds Name=\"Strict\">",
            "<Thresholds Name=\"Strict\"><AverageDatabaseReadLatency>1</AverageDatabaseReadLatency><AverageDatabaseReadLatency>2</AverageDatabaseReadLatency></Thresholds>\n    <Thresholds Name=\"Strict\">",
            "<Thresholds> for Performance tests appears 2 times",
        ),
        (
            "<JetSystemParams>",
            "<JetSystemParams></JetSystemParams>\n  <JetSystemParams>",
            "<JetSystemParams> appears 2 times in <configuration>",
        ),
    ] {
        assert!(text.contains(from), "{from}");
        let doubled = text.replacen(from, to, 1);
        let err = mbx_config::jetstress::from_str(&doubled, &path, &e_drive())
            .expect_err("a duplicate");
        let msg = err.to_string();
        assert!(msg.contains(want), "'{want}' in: {msg}");
        assert!(msg.contains("jettest-performance-4db.xml"), "{msg}");
    }
}
