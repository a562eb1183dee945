//! find-max.html of `loadgen find-max`: the curve (tasks/s and the slowest task p95 against
//! users, every step, the knee marked) and a table of every step's figures. Self-contained (no
//! script, no external file) so it opens anywhere.

use std::fmt::Write;

use super::find_max::FindMax;

fn esc(s: &str) -> String {
    s.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
        .replace('"', "&quot;")
}

/// One polyline of `(users, value)` points scaled into the plot.
fn polyline(points: &[(f64, f64)], x_max: f64, y_max: f64, colour: &str) -> String {
    let (w, h, pad) = (640.0, 240.0, 40.0);
    let pts: Vec<String> = points
        .iter()
        .map(|(x, y)| {
            format!(
                "{:.1},{:.1}",
                pad + x / x_max * (w - 2.0 * pad),
                h - pad - y / y_max * (h - 2.0 * pad)
            )
        })
        .collect();
    let dots: String = pts
        .iter()
        .map(|p| {
            let (x, y) = p.split_once(',').unwrap_or(("0", "0"));
            format!("<circle cx=\"{x}\" cy=\"{y}\" r=\"3\" fill=\"{colour}\"/>")
        })
        .collect();
    format!(
        "<polyline fill=\"none\" stroke=\"{colour}\" stroke-width=\"2\" points=\"{}\"/>{dots}",
        pts.join(" ")
    )
}

/// A chart of one figure against users, the answer's users marked by a vertical line.
fn chart(title: &str, unit: &str, points: &[(f64, f64)], knee: Option<u64>) -> String {
    let x_max = points.iter().map(|p| p.0).fold(1.0, f64::max) * 1.05;
    let y_max = points.iter().map(|p| p.1).fold(0.0, f64::max).max(1e-9) * 1.1;
    let (w, h, pad) = (640.0, 240.0, 40.0);
    let mut s = format!(
        "<h2>{}</h2><svg width=\"{w}\" height=\"{h}\" role=\"img\" aria-label=\"{}\"><rect x=\"{pad}\" y=\"{pad}\" width=\"{}\" height=\"{}\" fill=\"none\" stroke=\"#999\"/>",
        esc(title),
        esc(title),
        w - 2.0 * pad,
        h - 2.0 * pad
    );
    let _ = write!(
        s,
        "<text x=\"{pad}\" y=\"{}\" font-size=\"11\">0</text><text x=\"{}\" y=\"{}\" font-size=\"11\" text-anchor=\"end\">{:.0} users</text><text x=\"2\" y=\"{}\" font-size=\"11\">{:.1} {}</text>",
        h - pad + 14.0,
        w - pad,
        h - pad + 14.0,
        x_max,
        pad - 6.0,
        y_max,
        esc(unit)
    );
    if let Some(k) = knee {
        let x = pad + k as f64 / x_max * (w - 2.0 * pad);
        let _ = write!(
            s,
            "<line x1=\"{x:.1}\" y1=\"{pad}\" x2=\"{x:.1}\" y2=\"{}\" stroke=\"#c00\" stroke-dasharray=\"4\"/><text x=\"{:.1}\" y=\"{}\" font-size=\"11\" fill=\"#c00\">knee: {k} users</text>",
            h - pad,
            x + 4.0,
            pad + 12.0
        );
    }
    let mut sorted = points.to_vec();
    sorted.sort_by(|a, b| a.0.total_cmp(&b.0));
    s.push_str(&polyline(&sorted, x_max, y_max, "#036"));
    s.push_str("</svg>");
    s
}

/// The page.
pub fn page(f: &FindMax) -> String {
    let mut s = String::from(
        "<!doctype html><html><head><meta charset=\"utf-8\"><title>mbxstress loadgen find-max</title><style>body{font-family:sans-serif;margin:2em}table{border-collapse:collapse}td,th{border:1px solid #ccc;padding:2px 6px;text-align:right}td.l,th.l{text-align:left}.fail{color:#c00}</style></head><body><h1>loadgen find-max</h1>",
    );
    let _ = write!(s, "<p>{}</p>", esc(&super::find_max::closing_line(f)));
    let done = || f.steps.iter().filter(|x| !x.interrupted);
    let tps: Vec<(f64, f64)> = done().map(|x| (x.users as f64, x.tasks_per_s)).collect();
    let p95: Vec<(f64, f64)> = done()
        .map(|x| {
            (
                x.users as f64,
                x.task_p95_ms.values().copied().fold(0.0, f64::max),
            )
        })
        .collect();
    let delivery: Vec<(f64, f64)> = done()
        .filter_map(|x| x.server_delivery_p95_ms.map(|v| (x.users as f64, v)))
        .collect();
    s.push_str(&chart(
        "Tasks completed per second",
        "tasks/s",
        &tps,
        f.users,
    ));
    s.push_str(&chart(
        "Slowest task's 95th percentile",
        "ms",
        &p95,
        f.users,
    ));
    if !delivery.is_empty() {
        s.push_str(&chart(
            "Server delivery latency, 95th percentile",
            "ms",
            &delivery,
            f.users,
        ));
    }
    let tasks: std::collections::BTreeSet<&String> =
        f.steps.iter().flat_map(|x| x.task_p95_ms.keys()).collect();
    s.push_str("<h2>Steps</h2><table><tr><th>#</th><th>users</th><th class=\"l\">kind</th><th class=\"l\">verdict</th><th>tasks/s</th>");
    for t in &tasks {
        let _ = write!(s, "<th>{} p95 ms</th>", esc(t));
    }
    s.push_str("<th>server delivery p95 ms</th><th class=\"l\">errors by class</th><th>s</th><th class=\"l\">result</th></tr>");
    for (i, x) in f.steps.iter().enumerate() {
        let verdict = if x.interrupted {
            "interrupted".to_string()
        } else if x.pass {
            "pass".to_string()
        } else {
            format!("fail: {}", x.failed_checks.join(", "))
        };
        let _ = write!(
            s,
            "<tr><td>{}</td><td>{}</td><td class=\"l\">{}</td><td class=\"l{}\">{}</td><td>{:.2}</td>",
            i + 1,
            x.users,
            if x.confirmation { "confirmation" } else { "search" },
            if x.pass { "" } else { " fail" },
            esc(&verdict),
            x.tasks_per_s
        );
        for t in &tasks {
            match x.task_p95_ms.get(*t) {
                Some(v) => {
                    let _ = write!(s, "<td>{v:.0}</td>");
                }
                None => s.push_str("<td>-</td>"),
            }
        }
        let errors: Vec<String> = x.errors.iter().map(|(k, n)| format!("{k} {n}")).collect();
        let _ = write!(
            s,
            "<td>{}</td><td class=\"l\">{}</td><td>{:.0}</td><td class=\"l\"><a href=\"{}\">{}</a></td></tr>",
            x.server_delivery_p95_ms
                .map(|v| format!("{v:.0}"))
                .unwrap_or_else(|| "-".into()),
            esc(&errors.join(", ")),
            x.elapsed_s,
            esc(&x.result),
            esc(&x.result)
        );
    }
    s.push_str("</table></body></html>\n");
    s
}
