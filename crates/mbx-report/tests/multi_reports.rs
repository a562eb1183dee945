//! A text file holding several Jetstress reports (issue 25, case 12): the Dell ESRP paper's
//! appendices, converted from its PDF, hold four (Stress, Performance, Backup, Soft Recovery).
//! They were merged into one "soft-recovery report" with 24 transactional rows; each is now a
//! report of its own, and an API that takes one report refuses the file naming them.

use std::path::{Path, PathBuf};

use mbx_report::esrp::summarize;
use mbx_report::import::{import_file, import_file_all, load_each, ImportError, ImportedReport};
use mbx_result::TestKind;

fn fixture(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures")
        .join(name)
}

/// The figures of a report, without its source and warnings.
fn figures(mut r: ImportedReport) -> ImportedReport {
    r.source.clear();
    r.warnings.clear();
    r
}

#[test]
fn each_report_in_a_file_is_imported_on_its_own() {
    let all = import_file_all(&fixture("dell-ps6210e-esrp-four-reports.txt")).expect("import");
    let kinds: Vec<Option<TestKind>> = all.iter().map(|r| r.kind).collect();
    assert_eq!(
        kinds,
        [
            Some(TestKind::Stress),
            Some(TestKind::Performance),
            Some(TestKind::Backup),
            Some(TestKind::SoftRecovery)
        ]
    );
    for r in &all {
        assert_eq!(r.transactional.len(), 6, "{}", r.source);
        assert!(
            r.discrepancies.is_empty(),
            "{}: {:?}",
            r.source,
            r.discrepancies
        );
    }
    // Only the Stress and Performance reports name the machine (as the paper prints them).
    assert_eq!(all[0].machine.as_deref(), Some("EQLESRP5"));
    assert_eq!(all[1].machine.as_deref(), Some("EQLESRP5"));
    // Each names the file, its place in it and the line its title is on.
    assert!(
        all[1].source.contains("dell-ps6210e-esrp-four-reports.txt")
            && all[1].source.contains("report 2 of 4")
            && all[1].source.contains("line 163"),
        "{}",
        all[1].source
    );
    // The same figures as the single-report fixtures cut from the same paper.
    for (r, single) in [
        (&all[1], "performance"),
        (&all[2], "backup"),
        (&all[3], "softrecovery"),
    ] {
        let one =
            import_file(&fixture(&format!("dell-ps6210e-esrp-{single}.txt"))).expect("single");
        assert_eq!(figures(r.clone()), figures(one), "{single}");
    }
    assert_eq!(all[0].achieved_iops_typed, Some(1009.779));
}

#[test]
fn one_report_is_refused_naming_the_reports_found() {
    let e = import_file(&fixture("dell-ps6210e-esrp-four-reports.txt")).expect_err("several");
    assert!(matches!(e, ImportError::SeveralReports { .. }), "{e}");
    let msg = e.to_string();
    for want in [
        "dell-ps6210e-esrp-four-reports.txt",
        "4 Jetstress reports",
        "Stress (line 8)",
        "Performance (line 163)",
        "Backup (line 349)",
        "Soft Recovery (line 433)",
        "one report per file",
    ] {
        assert!(msg.contains(want), "'{want}' in: {msg}");
    }
}

/// `esrp` gets each report as an input of its own: the Performance report is the server's row
/// (1056.711 transactional IOPS, not 24 rows summing to 6,314.7), the Backup and Soft Recovery
/// reports give their lines.
#[test]
fn esrp_reads_each_report_as_an_input() {
    let inputs = load_each(&fixture("dell-ps6210e-esrp-four-reports.txt")).expect("load");
    assert_eq!(inputs.len(), 4);
    let s = summarize(&inputs);
    let perf: Vec<_> = s
        .servers
        .iter()
        .filter(|f| f.source.contains("report 2 of 4"))
        .collect();
    assert_eq!(perf.len(), 1, "{:?}", s.servers);
    assert!((perf[0].db_transfers_per_s - 1056.711).abs() < 0.005);
    assert_eq!(s.backup.len(), 1);
    assert!((s.backup[0].mb_per_s_per_server - 577.17).abs() < 1e-9);
    assert_eq!(s.soft_recovery.len(), 1);
    assert!(s.discrepancies.is_empty(), "{:?}", s.discrepancies);
}

/// Tables repeated with no report title between them are not merged either: the file is refused
/// naming the table and both lines.
#[test]
fn a_table_given_twice_in_one_report_is_refused() {
    let perf =
        std::fs::read_to_string(fixture("dell-ps6210e-esrp-performance.txt")).expect("fixture");
    let title = "Performance Test Result Report\n";
    let doubled = format!("{perf}\n{}", perf.replacen(title, "\n", 1));
    let e = mbx_report::import::import_text(&doubled, Path::new("twice.txt"))
        .expect_err("a table twice");
    let msg = e.to_string();
    assert!(
        msg.contains("twice.txt")
            && msg.contains("Transactional I/O Performance")
            && msg.contains("first at line 92")
            && msg.contains("several reports"),
        "{msg}"
    );
}

/// A PDF's running page header repeats the report's title: a title of the same test type
/// followed by tables the report has not given yet continues the report.
#[test]
fn a_title_repeated_as_a_page_header_does_not_split_the_report() {
    let perf =
        std::fs::read_to_string(fixture("dell-ps6210e-esrp-performance.txt")).expect("fixture");
    let clean = mbx_report::import::import_text(&perf, Path::new("a.txt")).expect("clean");
    let paged = perf.replacen(
        "\nTotal I/O Performance\n",
        "\nPerformance Test Result Report\n\nTotal I/O Performance\n",
        1,
    );
    assert_ne!(paged, perf);
    let r = mbx_report::import::import_text(&paged, Path::new("a.txt")).expect("one report");
    assert_eq!(figures(r), figures(clean));
}

/// Two reports of the same test type (two servers' Performance reports in one file) are two:
/// the second title is followed by a table the first report has given already.
#[test]
fn two_reports_of_one_type_are_two() {
    let perf =
        std::fs::read_to_string(fixture("dell-ps6210e-esrp-performance.txt")).expect("fixture");
    let clean = import_file(&fixture("dell-ps6210e-esrp-performance.txt")).expect("clean");
    let all = mbx_report::import::import_text_all(&format!("{perf}\n{perf}"), Path::new("b.txt"))
        .expect("two");
    assert_eq!(all.len(), 2);
    for r in all {
        assert_eq!(figures(r), figures(clean.clone()));
    }
}
