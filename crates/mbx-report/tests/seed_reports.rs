//! Import and ESRP arithmetic on real Jetstress report tables from the seed papers
//! (fixtures under tests/fixtures/, each naming its source file and lines).

use std::path::{Path, PathBuf};

use mbx_report::esrp::{load, summarize};
use mbx_report::import::{import_file, import_text, ImportError};
use mbx_result::TestKind;

fn fixture(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures")
        .join(name)
}

fn close(v: f64, want: f64, tol: f64) {
    assert!(
        (v - want).abs() <= tol,
        "expected {want} +/- {tol}, got {v}"
    );
}

/// D2 Table 7: 1056.71 transfers/s, 741.49 reads/s, 315.22 writes/s, 16.97 / 1.55 ms,
/// 75.52 log writes/s at 0.394 ms, from the per-instance Transactional I/O table.
#[test]
fn dell_esrp_performance_summary() {
    let r = import_file(&fixture("dell-ps6210e-esrp-performance.txt")).expect("import");
    assert_eq!(r.kind, Some(TestKind::Performance));
    assert_eq!(r.transactional.len(), 6);
    assert_eq!(r.total.len(), 6);
    assert_eq!(r.bdm.len(), 6);
    assert_eq!(r.log_replication.len(), 6);
    assert_eq!(r.achieved_iops_typed, Some(1056.711));
    assert_eq!(r.target_iops, Some(600.0));
    assert!(r.discrepancies.is_empty(), "{:?}", r.discrepancies);
    let s = summarize(&[r]);
    let a = &s.servers[0];
    close(a.db_transfers_per_s, 1056.71, 0.005);
    close(a.db_reads_per_s, 741.49, 0.005);
    close(a.db_writes_per_s, 315.22, 0.005);
    close(a.db_read_avg_latency_ms, 16.97, 0.005);
    close(a.db_write_avg_latency_ms, 1.55, 0.005);
    close(a.log_writes_per_s, 75.52, 0.005);
    close(a.log_write_avg_latency_ms, 0.394, 0.001);
    // One server: the aggregate equals it.
    assert_eq!(
        s.aggregate.as_ref().map(|x| x.db_transfers_per_s),
        Some(a.db_transfers_per_s)
    );
}

/// D2 Table 8: 96.19 MB/s per database (Avg), 577.17 per server (Sum).
#[test]
fn dell_esrp_backup_summary() {
    let r = import_file(&fixture("dell-ps6210e-esrp-backup.txt")).expect("import");
    assert_eq!(r.kind, Some(TestKind::Backup));
    assert_eq!(r.backup.len(), 6);
    assert_eq!(r.backup[0].elapsed_s, 4.0 * 3600.0 + 56.0 * 60.0 + 43.0);
    // The rows sum to 577.15; the typed Sum (577.17) differs only by rounding: no discrepancy.
    assert!(r.discrepancies.is_empty(), "{:?}", r.discrepancies);
    let s = summarize(&[r]);
    close(s.backup[0].mb_per_s_per_database, 96.19, 1e-9);
    close(s.backup[0].mb_per_s_per_server, 577.17, 1e-9);
}

/// D2 Table 9: 2.02 s per log (average elapsed / average logs replayed).
#[test]
fn dell_esrp_soft_recovery_summary() {
    let r = import_file(&fixture("dell-ps6210e-esrp-softrecovery.txt")).expect("import");
    assert_eq!(r.kind, Some(TestKind::SoftRecovery));
    assert_eq!(r.soft_recovery.len(), 6);
    assert_eq!(r.soft_recovery[4].log_files_replayed, 502);
    let s = summarize(&[r]);
    close(s.soft_recovery[0].seconds_per_log, 2.02, 0.005);
}

/// The Tintri report (markdown tables, bold keys) imports with all 12 columns per instance and
/// both the transactional and total tables.
#[test]
fn tintri_report_imports_every_column() {
    let r = import_file(&fixture("tintri-t880-performance.txt")).expect("import");
    assert_eq!(r.kind, Some(TestKind::Performance));
    assert_eq!(r.machine.as_deref(), Some("EXCH2013-1"));
    assert_eq!(r.overall_result.as_deref(), Some("Pass"));
    assert_eq!(r.achieved_iops_typed, Some(958.599));
    assert_eq!(r.target_iops, Some(720.0));
    assert_eq!(r.transactional.len(), 4);
    assert_eq!(r.total.len(), 4);
    let t = &r.transactional[0];
    assert_eq!(t.instance, "Instance11824.1");
    let io = t.io;
    assert_eq!(
        [
            io.db_read_avg_latency_ms,
            io.db_write_avg_latency_ms,
            io.db_reads_per_s,
            io.db_writes_per_s,
            io.db_read_avg_bytes,
            io.db_write_avg_bytes
        ],
        [1.098, 3.730, 168.979, 70.019, 32843.984, 36631.341]
    );
    assert_eq!(
        [
            io.log_read_avg_latency_ms,
            io.log_write_avg_latency_ms,
            io.log_reads_per_s,
            io.log_writes_per_s,
            io.log_read_avg_bytes
        ],
        [0.642, 0.847, 0.148, 17.315, 4070.239]
    );
    assert!(
        io.log_write_avg_bytes > 12_000.0 && io.log_write_avg_bytes < 12_600.0,
        "{}",
        io.log_write_avg_bytes
    );
    assert_eq!(r.total[0].io.db_read_avg_bytes, 44606.519);
    assert_eq!(r.total[3].io.db_reads_per_s, 178.884);
    assert_eq!(r.bdm[1].reads_per_s, 9.145);
    assert_eq!(r.log_replication.len(), 4);
    assert!(r.discrepancies.is_empty(), "{:?}", r.discrepancies);
    let s = summarize(&[r]);
    close(s.servers[0].db_transfers_per_s, 958.60, 0.01);
}

fn dell_text() -> String {
    std::fs::read_to_string(fixture("dell-ps6210e-esrp-performance.txt")).expect("read")
}

#[test]
fn malformed_inputs_name_file_table_and_row() {
    let p = Path::new("broken.txt");
    // A non-numeric cell.
    let text = dell_text().replacen("123.808", "12x.808", 1);
    let e = import_text(&text, p).expect_err("non-numeric");
    let msg = e.to_string();
    assert!(
        msg.contains("broken.txt")
            && msg.contains("Transactional I/O Performance")
            && msg.contains("Instance5004.2"),
        "{msg}"
    );
    // A header cell dropped (as a PDF copy does): the rows still have their 13 cells, so the
    // columns are Jetstress's in order, with a warning naming the line.
    let text = dell_text().replacen("\tI/O Log Writes Average Bytes\n", "\n", 1);
    let r = import_text(&text, p).expect("a dropped header cell is recoverable");
    assert_eq!(r.transactional.len(), 6);
    assert!(
        r.warnings
            .iter()
            .any(|w| w.contains("11 of its 12 column names")),
        "{:?}",
        r.warnings
    );
    // A header cell that is no Jetstress column: the table cannot be read.
    let text = dell_text().replacen("I/O Database Writes/sec", "Something Else", 1);
    let e = import_text(&text, p).expect_err("columns");
    assert!(
        e.to_string()
            .contains("expected \"I/O Database Writes/sec\""),
        "{e}"
    );
    // A row with a missing cell.
    let text = dell_text().replacen("\t20225.485", "", 1);
    let e = import_text(&text, p).expect_err("short row");
    assert!(
        e.to_string().contains("Instance5004.1") && e.to_string().contains("13 cells"),
        "{e}"
    );
    // Truncated before any table.
    let text: String = dell_text().lines().take(20).collect::<Vec<_>>().join("\n");
    assert!(matches!(
        import_text(&text, p),
        Err(ImportError::Empty { .. })
    ));
}

#[test]
fn typed_summaries_that_disagree_are_flagged() {
    let text = dell_text().replacen(
        "Achieved Transactional I/O per Second 1056.711",
        "Achieved Transactional I/O per Second 1100.000",
        1,
    );
    let r = import_text(&text, Path::new("x.txt")).expect("import");
    assert_eq!(r.discrepancies.len(), 1, "{:?}", r.discrepancies);
    assert!(
        r.discrepancies[0].contains("1056.712"),
        "{:?}",
        r.discrepancies
    );
    let text = std::fs::read_to_string(fixture("dell-ps6210e-esrp-backup.txt"))
        .expect("read")
        .replacen("577.17", "597.17", 1);
    let r = import_text(&text, Path::new("b.txt")).expect("import");
    assert_eq!(r.discrepancies.len(), 1, "{:?}", r.discrepancies);
}

/// The three D2 reports together: one server in the performance summary (the backup and soft
/// recovery reports' own Transactional I/O tables do not count), plus backup and recovery figures.
#[test]
fn dell_esrp_all_three_reports() {
    let inputs: Vec<_> = ["performance", "backup", "softrecovery"]
        .iter()
        .map(|k| load(&fixture(&format!("dell-ps6210e-esrp-{k}.txt"))).expect("load"))
        .collect();
    let s = summarize(&inputs);
    assert_eq!(s.servers.len(), 1);
    close(
        s.aggregate.expect("aggregate").db_transfers_per_s,
        1056.71,
        0.005,
    );
    assert_eq!(s.backup.len(), 1);
    assert_eq!(s.soft_recovery.len(), 1);
}

/// Inputs mixed: a Jetstress report and an mbxstress result.json; the aggregate sums the
/// servers' sums and averages their means.
#[test]
fn mixed_inputs_aggregate() {
    // Removed with its contents when dropped, also if the test panics.
    let scratch = tempfile::Builder::new()
        .prefix("esrp-mixed-")
        .tempdir_in(env!("CARGO_TARGET_TMPDIR"))
        .expect("mkdir");
    let dir = scratch.path();
    let io = |reads: f64, writes: f64, rl: f64, wl: f64, lw: f64, lwl: f64| {
        serde_json::json!({
            "db_read_avg_latency_ms": rl, "db_write_avg_latency_ms": wl, "db_reads_per_s": reads,
            "db_writes_per_s": writes, "db_read_avg_bytes": 33000.0, "db_write_avg_bytes": 36000.0,
            "log_read_avg_latency_ms": 0.0, "log_write_avg_latency_ms": lwl, "log_reads_per_s": 0.0,
            "log_writes_per_s": lw, "log_read_avg_bytes": 0.0, "log_write_avg_bytes": 15000.0
        })
    };
    // A real result (the committed fidelity run) with these figures: esrp reads result.json
    // through the typed model, so the input is a whole result.
    let mut result: serde_json::Value = serde_json::from_str(
        &std::fs::read_to_string(fixture("mbxstress-result.json")).expect("fixture"),
    )
    .expect("fixture JSON");
    result["test"]["machine"] = "linux-1".into();
    result["achieved_iops"] = 300.0.into();
    result["target_iops"] = 280.0.into();
    let instance = |name: &str, transactional: serde_json::Value| {
        let mut i = result["instances"][0].clone();
        i["name"] = name.into();
        i["transactional"] = transactional;
        i
    };
    result["instances"] = serde_json::json!([
        instance("Instance1.1", io(100.0, 50.0, 2.0, 1.0, 10.0, 0.5)),
        instance("Instance1.2", io(110.0, 40.0, 4.0, 3.0, 12.0, 0.7)),
    ]);
    let path = dir.join("result.json");
    std::fs::write(&path, serde_json::to_string(&result).expect("json")).expect("write");
    let ours = load(&path).expect("load result.json");
    let theirs = load(&fixture("dell-ps6210e-esrp-performance.txt")).expect("load report");
    let s = summarize(&[ours, theirs]);
    assert_eq!(s.servers.len(), 2);
    let ours = &s.servers[0];
    assert_eq!(ours.machine, "linux-1");
    close(ours.db_transfers_per_s, 300.0, 1e-9);
    close(ours.db_read_avg_latency_ms, 3.0, 1e-9);
    let a = s.aggregate.expect("aggregate");
    close(a.db_transfers_per_s, 300.0 + 1056.712, 0.001);
    close(a.db_read_avg_latency_ms, (3.0 + 16.969333) / 2.0, 0.001);
    close(a.log_writes_per_s, 22.0 + 75.522, 0.001);
    // A JSON file that is not ours is refused, naming it.
    std::fs::write(dir.join("other.json"), "{\"a\": 1}").expect("write");
    let e = load(&dir.join("other.json")).expect_err("not ours");
    assert!(e.to_string().contains("other.json"), "{e}");
}
