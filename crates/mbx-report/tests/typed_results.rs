//! The typed result model at work in the report writer and in esrp: a torn last line of
//! samples.jsonl, and backup and soft-recovery rows that go through esrp the same way whether
//! Jetstress or mbxstress measured them.

use std::path::{Path, PathBuf};

use mbx_report::esrp::{load, summarize};
use mbx_report::import::import_file;
use mbx_report::report::{write_report_as, ReportError};
use mbx_report::{Format, ImportedReport};
use mbx_result::{RunResult, TestKind};

fn fixture(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures")
        .join(name)
}

/// Two samples written by the untyped writer (see mbx-result's tests for their source).
fn old_samples() -> String {
    std::fs::read_to_string(
        Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("../mbx-result/tests/fixtures/samples-fidelity-2026-11-22.jsonl"),
    )
    .expect("samples fixture")
}

fn result() -> RunResult {
    let text = std::fs::read_to_string(fixture("mbxstress-result.json")).expect("fixture");
    serde_json::from_str(&text).expect("a result")
}

fn scratch() -> tempfile::TempDir {
    tempfile::Builder::new()
        .prefix("typed-results-")
        .tempdir_in(env!("CARGO_TARGET_TMPDIR"))
        .expect("mkdir")
}

fn folder_with_samples(samples: &str) -> tempfile::TempDir {
    let dir = scratch();
    std::fs::copy(
        fixture("mbxstress-result.json"),
        dir.path().join("result.json"),
    )
    .expect("copy");
    std::fs::write(dir.path().join("samples.jsonl"), samples).expect("write");
    dir
}

/// A crash while the last sample was being written leaves it cut short: the report is written
/// from the complete samples and says that the last line was skipped.
#[test]
fn a_torn_last_sample_is_skipped_with_a_note() {
    let full = old_samples();
    let second = full.lines().nth(1).expect("two lines");
    let torn = format!("{full}{}", &second[..second.len() / 2]);
    let dir = folder_with_samples(&torn);
    let w = write_report_as(dir.path(), None, &Format::DEFAULT).expect("report");
    assert_eq!(w.notes.len(), 1, "{:?}", w.notes);
    assert!(
        w.notes[0].contains("line 3, the last, is incomplete"),
        "{}",
        w.notes[0]
    );
    let csv = std::fs::read_to_string(dir.path().join("samples.csv")).expect("csv");
    // Header + 2 samples x 2 instances.
    assert_eq!(csv.lines().count(), 5, "{csv}");
    let html = std::fs::read_to_string(dir.path().join("report.html")).expect("html");
    assert!(html.contains("the last, is incomplete"));

    // Without the torn line there is nothing to say.
    let dir = folder_with_samples(&full);
    let w = write_report_as(dir.path(), None, &Format::DEFAULT).expect("report");
    assert!(w.notes.is_empty(), "{:?}", w.notes);
}

/// An open-loop result: report.html shows the pacing block (both transaction latencies, late and
/// dropped counts), the backlog chart from the samples, and the maximum-latency checks with their
/// tolerance and strict figures; a result without these blocks (the fixture, an earlier
/// version's) has none of these sections.
#[test]
fn pacing_and_max_latency_are_shown_when_the_result_has_them() {
    use mbx_result::{
        Arrivals, MaxLatency, MaxLatencyChecks, Pacing, PacingResult, Percentiles, Sample,
        SamplePacing,
    };
    let dir = folder_with_samples(&old_samples());
    let html = |dir: &Path| {
        write_report_as(dir, None, &Format::DEFAULT).expect("report");
        std::fs::read_to_string(dir.join("report.html")).expect("html")
    };
    let before = html(dir.path());
    assert!(!before.contains("Pacing and Transaction Latency"));
    assert!(!before.contains("id=\"max-latency\""));

    let mut r = result();
    let pct = |p99: f64| Percentiles {
        p99,
        ..Percentiles::default()
    };
    r.pacing = Some(PacingResult {
        mode: Pacing::Open,
        arrivals: Some(Arrivals::Poisson),
        late_threshold_ms: 1.0,
        transactions_arrived: 6021,
        transactions_started: 5999,
        transactions_late: 733,
        transactions_dropped: 22,
        backlog_max: 31,
        backlog_max_per_sample: Default::default(),
        transaction_latency_ms: pct(9.125),
        latency_from_arrival_ms: pct(268.5),
    });
    let m = MaxLatency {
        limit_ms: 100.0,
        per_io_max_ms: 4005.5,
        sample_max_ms: 130.25,
        tolerated_ms: 12.5,
        samples_over: 2,
        samples: 480,
        judged: true,
        pass: true,
        ..MaxLatency::default()
    };
    r.max_latency = Some(MaxLatencyChecks {
        max_latency_errors: 6,
        db_read: m,
        log_write: MaxLatency::default(),
    });
    std::fs::write(
        dir.path().join("result.json"),
        serde_json::to_string(&r).expect("json"),
    )
    .expect("write");
    let mut samples = String::new();
    for line in old_samples().lines() {
        let mut s: Sample = serde_json::from_str(line).expect("sample");
        s.pacing = Some(SamplePacing {
            arrived: 600,
            backlog_max: 31,
            dropped: 11,
            late: 300,
            started: 589,
        });
        samples.push_str(&serde_json::to_string(&s).expect("json"));
        samples.push('\n');
    }
    std::fs::write(dir.path().join("samples.jsonl"), samples).expect("write");
    let after = html(dir.path());
    for want in [
        "Pacing and Transaction Latency",
        "open loop, poisson arrivals",
        "from arrival (what a user waits)",
        "268.500",
        "9.125",
        "733",
        "22 transaction(s) were dropped",
        "Open loop: arrivals waiting",
        "id=\"max-latency\"",
        "MaximumLatencyErrors = 6",
        "4005.500",
        "130.250",
    ] {
        assert!(after.contains(want), "report.html lacks {want}");
    }
}

/// Only an unfinished last line is forgiven: a complete line (it ends with a line feed) that is
/// not a sample is an error naming it, wherever it is.
#[test]
fn a_damaged_complete_line_is_an_error() {
    let full = old_samples();
    let first = full.lines().next().expect("a line");
    for text in [
        format!("{}\n{full}", &first[..40]),
        format!("{full}{}\n", &first[..40]),
        format!("{full}{{\"interval_s\": \"15\"}}\n"),
    ] {
        let dir = folder_with_samples(&text);
        let e = write_report_as(dir.path(), None, &Format::DEFAULT).expect_err("damaged");
        assert!(matches!(e, ReportError::Invalid { .. }), "{e:?}");
        assert!(e.to_string().contains("samples.jsonl: line"), "{e}");
        assert!(!dir.path().join("report.html").exists());
    }
}

/// The JSON exporter writes the typed result, and never over a result.json.
#[test]
fn json_export_rewrites_the_result_but_never_over_one() {
    let dir = folder_with_samples(&old_samples());
    let e = write_report_as(dir.path(), None, &[Format::Json]).expect_err("the source itself");
    assert!(e.to_string().contains("never overwritten"), "{e}");
    let out = dir.path().join("copy");
    let w = write_report_as(dir.path(), Some(&out), &[Format::Json, Format::Html]).expect("json");
    assert_eq!(w.files, [out.join("result.json"), out.join("report.html")]);
    let text = std::fs::read_to_string(out.join("result.json")).expect("written");
    let copy: RunResult = serde_json::from_str(&text).expect("a result");
    assert_eq!(copy, result());
}

/// The figures of esrp's backup rows, without their source (a file name or a machine).
fn backup_figures(s: &mbx_report::EsrpSummary) -> Vec<(f64, f64)> {
    s.backup
        .iter()
        .map(|b| (b.mb_per_s_per_database, b.mb_per_s_per_server))
        .collect()
}

/// The figures of esrp's soft recovery rows, without their source.
fn soft_recovery_figures(s: &mbx_report::EsrpSummary) -> Vec<f64> {
    s.soft_recovery.iter().map(|x| x.seconds_per_log).collect()
}

/// Writes `r` as result.json in a fresh folder and loads it as esrp does.
fn load_result(r: &RunResult) -> (ImportedReport, tempfile::TempDir) {
    let dir = scratch();
    let path = dir.path().join("result.json");
    std::fs::write(&path, serde_json::to_vec_pretty(r).expect("json")).expect("write");
    (load(&path).expect("esrp loads it"), dir)
}

/// The same databases backed up, as a Jetstress report states them and as an mbxstress backup
/// result carries them: esrp gives the same figures, with and without the stated summaries.
#[test]
fn backup_rows_from_jetstress_and_mbxstress_summarize_alike() {
    let jetstress = import_file(&fixture("dell-ps6210e-esrp-backup.txt")).expect("import");
    assert_eq!(jetstress.backup.len(), 6);
    let mut r = result();
    r.test.test_type = TestKind::Backup;
    r.sections.backup = jetstress.backup.clone();
    r.sections.backup_avg_mb_per_s = jetstress.backup_avg_typed;
    r.sections.backup_sum_mb_per_s = jetstress.backup_sum_typed;
    let (ours, _dir) = load_result(&r);
    assert_eq!(ours.kind, Some(TestKind::Backup));
    assert_eq!(ours.backup, jetstress.backup);

    let (a, b) = (
        summarize(std::slice::from_ref(&jetstress)),
        summarize(std::slice::from_ref(&ours)),
    );
    assert_eq!(backup_figures(&a), backup_figures(&b));
    assert!((b.backup[0].mb_per_s_per_server - 577.17).abs() < 1e-9);
    // A backup test's own I/O table is not a Performance figure, for either.
    assert!(a.servers.is_empty() && b.servers.is_empty());
    assert!(b.discrepancies.is_empty(), "{:?}", b.discrepancies);

    // Without stated summaries both are computed from the rows.
    let mut plain = jetstress;
    plain.backup_avg_typed = None;
    plain.backup_sum_typed = None;
    r.sections.backup_avg_mb_per_s = None;
    r.sections.backup_sum_mb_per_s = None;
    let (ours, _dir) = load_result(&r);
    let (a, b) = (summarize(&[plain]), summarize(&[ours]));
    assert_eq!(backup_figures(&a), backup_figures(&b));
    assert!((b.backup[0].mb_per_s_per_database - 577.15 / 6.0).abs() < 1e-9);
}

/// The same for soft recovery: the report's Avg row and the result's `seconds_per_log` are the
/// stated summary; without them, both come from the rows.
#[test]
fn soft_recovery_rows_from_jetstress_and_mbxstress_summarize_alike() {
    let jetstress = import_file(&fixture("dell-ps6210e-esrp-softrecovery.txt")).expect("import");
    let mut r = result();
    r.test.test_type = TestKind::SoftRecovery;
    r.sections.soft_recovery = jetstress.soft_recovery.clone();
    r.sections.seconds_per_log = jetstress.seconds_per_log_typed;
    let (ours, _dir) = load_result(&r);
    let (a, b) = (
        summarize(std::slice::from_ref(&jetstress)),
        summarize(&[ours]),
    );
    assert_eq!(soft_recovery_figures(&a), soft_recovery_figures(&b));
    assert!((b.soft_recovery[0].seconds_per_log - 2.02).abs() < 0.005);

    let mut plain = jetstress;
    plain.soft_recovery_avg_typed = None;
    plain.seconds_per_log_typed = None;
    r.sections.seconds_per_log = None;
    let (ours, _dir) = load_result(&r);
    let (a, b) = (summarize(&[plain]), summarize(&[ours]));
    assert_eq!(soft_recovery_figures(&a), soft_recovery_figures(&b));

    // A stated figure that its rows contradict is a discrepancy, for a result as for a report.
    r.sections.seconds_per_log = Some(3.0);
    let (ours, _dir) = load_result(&r);
    let s = summarize(&[ours]);
    assert_eq!(s.discrepancies.len(), 1, "{:?}", s.discrepancies);
    assert!(s.discrepancies[0].contains("seconds per log stated as 3"));
}

/// A result with automatic tuning's steps: they round-trip through result.json and the report
/// shows them (a row per step with its outcome, the count chosen, the charts); a result without
/// them has no such section and no `tuning` key.
#[test]
fn tuning_steps_round_trip_and_are_reported() {
    use mbx_result::{SearchStep, Tuning};
    let step = |sessions: u32, iops: f64, pass: bool| SearchStep {
        sessions,
        mailboxes: 1000,
        target_iops: 200.0,
        achieved_iops: iops,
        db_read_avg_ms: 4.0,
        db_read_p99_ms: 9.0,
        db_read_p999_ms: 12.0,
        log_write_avg_ms: 1.0,
        log_write_p99_ms: 2.0,
        page_fault_stalls_per_s: 0.0,
        stable: true,
        measured_s: 5.0,
        transactions: 300,
        pass,
        failed_checks: if pass {
            vec![]
        } else {
            vec!["achieved_transactional_iops".into()]
        },
        confirmation: false,
        kept_up: false,
        recheck: false,
    };
    let mut r = result();
    let plain = serde_json::to_value(&r).expect("json");
    assert!(plain.get("tuning").is_none(), "no key without tuning");
    r.tuning = Some(Tuning {
        steps: vec![
            step(8, 201.0, true),
            step(2, 120.5, false),
            step(4, 199.9, true),
        ],
        sessions: Some(8),
        smallest_passing: Some(4),
        headroom_pct: 100.0,
        end: "converged".into(),
        elapsed_s: 61.0,
    });
    let text = serde_json::to_string_pretty(&r).expect("json");
    let back: RunResult = serde_json::from_str(&text).expect("a result");
    assert_eq!(back, r);
    let dir = folder_with_samples(&old_samples());
    std::fs::write(dir.path().join("result.json"), text).expect("write");
    write_report_as(dir.path(), None, &[mbx_report::Format::Html]).expect("report");
    let html = std::fs::read_to_string(dir.path().join("report.html")).expect("html");
    assert!(html.contains("<h2>Automatic Tuning</h2>"), "section");
    assert!(
        html.contains("Chose 8 sessions: 4 is the smallest count")
            && html.contains("100% more is kept as headroom"),
        "chosen"
    );
    assert!(
        html.contains("Fail: achieved_transactional_iops"),
        "failed step"
    );
    assert!(html.contains("120.5"), "step figures");
    assert!(html.contains("Transactional IOPS per step"), "chart");
}
