//! The steps of automatic tuning and of find-max: a table (one row per step, in the order they
//! ran) and two charts against the step's setting (IOPS achieved and target; read latency
//! average and percentiles), shared by the run report and the find-max report.

use maud::{html, Markup};
use mbx_result::SearchStep;

use crate::svg::{LineChart, Series};

/// What the charts put on the x axis.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Axis {
    /// Sessions (automatic tuning).
    Sessions,
    /// Target transactional IOPS (find-max).
    TargetIops,
}

fn x_of(axis: Axis, s: &SearchStep) -> f64 {
    match axis {
        Axis::Sessions => f64::from(s.sessions),
        Axis::TargetIops => s.target_iops,
    }
}

fn line(name: &str, steps: &[&SearchStep], axis: Axis, f: fn(&SearchStep) -> f64) -> Series {
    Series {
        name: name.into(),
        points: steps.iter().map(|s| (x_of(axis, s), f(s))).collect(),
    }
}

/// The table and charts of `steps`.
pub fn section(steps: &[SearchStep], axis: Axis) -> Markup {
    // The charts need x increasing: the steps by their setting.
    let mut sorted: Vec<&SearchStep> = steps.iter().collect();
    sorted.sort_by(|a, b| x_of(axis, a).total_cmp(&x_of(axis, b)));
    let x_label = match axis {
        Axis::Sessions => "sessions",
        Axis::TargetIops => "target transactional IOPS",
    };
    let charts = [
        LineChart {
            title: "Transactional IOPS per step".into(),
            x_label: x_label.into(),
            y_label: "IOPS".into(),
            series: vec![
                line("achieved", &sorted, axis, |s| s.achieved_iops),
                line("target", &sorted, axis, |s| s.target_iops),
            ],
        },
        LineChart {
            title: "Database read latency per step (ms)".into(),
            x_label: x_label.into(),
            y_label: "ms".into(),
            series: vec![
                line("average", &sorted, axis, |s| s.db_read_avg_ms),
                line("p99", &sorted, axis, |s| s.db_read_p99_ms),
                line("p99.9", &sorted, axis, |s| s.db_read_p999_ms),
                line("log write avg", &sorted, axis, |s| s.log_write_avg_ms),
            ],
        },
    ];
    html! {
        table.steps {
            tr {
                th { "Step" } th.n { "Sessions" } th.n { "Mailboxes" } th.n { "Target IOPS" } th.n { "Achieved IOPS" }
                th.n { "DB Read Avg (ms)" } th.n { "DB Read p99 (ms)" } th.n { "DB Read p99.9 (ms)" }
                th.n { "Log Write Avg (ms)" } th.n { "Log Write p99 (ms)" } th.n { "Page Fault Stalls/s" }
                th { "Stable" } th.n { "Measured (s)" } th { "Result" }
            }
            @for (i, s) in steps.iter().enumerate() {
                tr {
                    td { (i + 1) @if s.confirmation { " (confirmation)" } @if s.recheck { " (re-check)" } } td.n { (s.sessions) } td.n { (s.mailboxes) }
                    td.n { (format!("{:.1}", s.target_iops)) } td.n { (format!("{:.1}", s.achieved_iops)) }
                    td.n { (format!("{:.3}", s.db_read_avg_ms)) } td.n { (format!("{:.3}", s.db_read_p99_ms)) }
                    td.n { (format!("{:.3}", s.db_read_p999_ms)) } td.n { (format!("{:.3}", s.log_write_avg_ms)) }
                    td.n { (format!("{:.3}", s.log_write_p99_ms)) } td.n { (format!("{:.3}", s.page_fault_stalls_per_s)) }
                    td { (if s.stable { "yes" } else { "no" }) } td.n { (format!("{:.1}", s.measured_s)) }
                    td class=(if s.pass { "pass" } else { "fail" }) {
                        @if s.kept_up { (format!("Pass (short within the counting error, {:.1} IOPS over {} transactions; every due transaction found a session)", s.counting_error_iops().unwrap_or(0.0), s.transactions)) }
                        @else if s.pass { "Pass" } @else { "Fail: " (s.failed_checks.join(", ")) }
                    }
                }
            }
        }
        div.charts { @for c in &charts { (c.render()) } }
    }
}
