//! `import` and `esrp` end to end on the seed fixtures (crates/mbx-report/tests/fixtures).

use std::path::PathBuf;

use crate::common::{mbx, scratch};

fn fixture(name: &str) -> String {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../mbx-report/tests/fixtures")
        .join(name)
        .display()
        .to_string()
}

#[test]
fn esrp_over_the_dell_reports() {
    let run = mbx(&[
        "esrp",
        &fixture("dell-ps6210e-esrp-performance.txt"),
        &fixture("dell-ps6210e-esrp-backup.txt"),
        &fixture("dell-ps6210e-esrp-softrecovery.txt"),
        "--json",
    ]);
    assert_eq!(run.code, 0, "{}", run.stderr);
    let v = run.json();
    let a = &v["aggregate"];
    assert!((a["db_transfers_per_s"].as_f64().expect("n") - 1056.71).abs() < 0.005);
    assert!((v["backup"][0]["mb_per_s_per_server"].as_f64().expect("n") - 577.17).abs() < 1e-9);
    assert!(
        (v["soft_recovery"][0]["seconds_per_log"]
            .as_f64()
            .expect("n")
            - 2.02)
            .abs()
            < 0.005
    );
    // Human table.
    let run = mbx(&["esrp", &fixture("dell-ps6210e-esrp-performance.txt")]);
    assert!(
        run.stdout.contains("EQLESRP5") && run.stdout.contains("1056.71"),
        "{}",
        run.stdout
    );
}

#[test]
fn import_reports_tables_and_rejects_garbage() {
    let run = mbx(&["import", &fixture("tintri-t880-performance.txt"), "--json"]);
    assert_eq!(run.code, 0, "{}", run.stderr);
    let v = run.json();
    assert_eq!(v["transactional"].as_array().map(Vec::len), Some(4));
    assert_eq!(v["total"][0]["io"]["db_read_avg_bytes"], 44606.519);
    let dir = scratch("import-bad");
    let bad = dir.join("bad.txt");
    let text = std::fs::read_to_string(fixture("dell-ps6210e-esrp-performance.txt"))
        .expect("read")
        .replacen("52.528", "n/a", 1);
    std::fs::write(&bad, text).expect("write");
    let run = mbx(&["import", bad.to_str().expect("utf8")]);
    assert_eq!(run.code, 2, "{}", run.stderr);
    assert!(
        run.stderr.contains("bad.txt")
            && run.stderr.contains("Transactional I/O Performance")
            && run.stderr.contains("Instance5004.2"),
        "{}",
        run.stderr
    );
    let run = mbx(&["esrp", "nowhere.txt"]);
    assert_eq!(run.code, 2, "{}", run.stderr);
    assert!(run.stderr.contains("nowhere.txt"), "{}", run.stderr);
}
