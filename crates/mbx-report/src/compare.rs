//! Key figures of two results side by side (mbxstress results or imported Jetstress reports).

use serde::Serialize;

use crate::esrp::{server_figures, ServerFigures};
use crate::import::ImportedReport;

/// One compared figure.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Row {
    /// Figure.
    pub figure: &'static str,
    /// Value in A.
    pub a: Option<f64>,
    /// Value in B.
    pub b: Option<f64>,
    /// B - A.
    pub diff: Option<f64>,
    /// (B - A) / A in percent.
    pub diff_pct: Option<f64>,
}

/// A figure of a server's instances.
type Figure = fn(&ServerFigures) -> f64;

/// The figures compared from the instances' rows (absent from a result without them), in order.
const FIGURES: [(&str, Figure); 7] = [
    ("database transfers/s (from instances)", |f| {
        f.db_transfers_per_s
    }),
    ("database reads/s", |f| f.db_reads_per_s),
    ("database writes/s", |f| f.db_writes_per_s),
    ("database read latency, ms (mean of instances)", |f| {
        f.db_read_avg_latency_ms
    }),
    ("database write latency, ms", |f| f.db_write_avg_latency_ms),
    ("log writes/s", |f| f.log_writes_per_s),
    ("log write latency, ms", |f| f.log_write_avg_latency_ms),
];

/// Compares two loaded results.
pub fn compare(a: &ImportedReport, b: &ImportedReport) -> Vec<Row> {
    let fa = server_figures("", "", &a.transactional);
    let fb = server_figures("", "", &b.transactional);
    let has = |r: &ImportedReport| !r.transactional.is_empty();
    let pick = |r: &ImportedReport, v: f64| has(r).then_some(v);
    let mut rows: Vec<(&'static str, Option<f64>, Option<f64>)> = vec![
        ("target IOPS", a.target_iops, b.target_iops),
        (
            "achieved IOPS (as reported)",
            a.achieved_iops_typed,
            b.achieved_iops_typed,
        ),
    ];
    rows.extend(
        FIGURES
            .iter()
            .map(|(figure, of)| (*figure, pick(a, of(&fa)), pick(b, of(&fb)))),
    );
    rows.push((
        "instances",
        Some(a.transactional.len() as f64),
        Some(b.transactional.len() as f64),
    ));
    rows.into_iter()
        .map(|(figure, a, b)| {
            let diff = a.zip(b).map(|(x, y)| y - x);
            let diff_pct = a
                .zip(diff)
                .and_then(|(x, d)| (x != 0.0).then(|| d / x * 100.0));
            Row {
                figure,
                a,
                b,
                diff,
                diff_pct,
            }
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::import::import_file;

    #[test]
    fn compares_the_two_seed_reports() {
        let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures");
        let a = import_file(&dir.join("dell-ps6210e-esrp-performance.txt")).expect("dell");
        let b = import_file(&dir.join("tintri-t880-performance.txt")).expect("tintri");
        let rows = compare(&a, &b);
        let target = rows
            .iter()
            .find(|r| r.figure == "target IOPS")
            .expect("row");
        assert_eq!(
            (target.a, target.b, target.diff),
            (Some(600.0), Some(720.0), Some(120.0))
        );
        assert!((target.diff_pct.expect("pct") - 20.0).abs() < 1e-9);
        let inst = rows.iter().find(|r| r.figure == "instances").expect("row");
        assert_eq!((inst.a, inst.b), (Some(6.0), Some(4.0)));
    }
}
