//! `mbxstress compare`: key figures of two results side by side.

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::ExitCode;

use anyhow::Context;

use crate::cli::CompareArgs;

/// The file an argument stands for: a file as itself, a result folder (as `report` and `esrp`
/// take it) for its result.json. A folder without one (a suite's folder holds a result per
/// test) is refused, naming what to give instead.
fn input_of(path: &Path) -> anyhow::Result<PathBuf> {
    if !path.is_dir() {
        return Ok(path.to_path_buf());
    }
    let result = path.join("result.json");
    if result.exists() {
        return Ok(result);
    }
    let tests: Vec<String> = super::suite::STEPS
        .iter()
        .map(|&(folder, _)| folder)
        .filter(|f| path.join(f).join("result.json").exists())
        .map(|f| path.join(f).display().to_string())
        .collect();
    Err(crate::exit::usage(if tests.is_empty() {
        format!(
            "{} holds no result.json: give a result folder, a result.json or a Jetstress report",
            path.display()
        )
    } else {
        format!(
            "{} is a suite folder, a result per test: compare one of them ({})",
            path.display(),
            tests.join(", ")
        )
    }))
}

pub fn run(args: CompareArgs) -> anyhow::Result<ExitCode> {
    let a = mbx_report::load(&input_of(&args.a)?)?;
    let b = mbx_report::load(&input_of(&args.b)?)?;
    let rows = mbx_report::compare::compare(&a, &b);
    // Inputs that are not complete, passing measurements: flagged in both output forms.
    let warnings: Vec<serde_json::Value> = [("a", &a), ("b", &b)]
        .into_iter()
        .flat_map(|(which, r)| {
            r.flags.iter().map(move |f| {
                serde_json::json!({
                    "which": which, "source": r.source, "code": f.code, "message": f.message
                })
            })
        })
        .collect();
    let warning_lines: Vec<String> = [("A", &a), ("B", &b)]
        .into_iter()
        .flat_map(|(which, r)| {
            r.flags
                .iter()
                .map(move |f| format!("warning: {which} ({}): {}", r.source, f.message))
        })
        .collect();
    let mut out = std::io::stdout().lock();
    if args.json {
        for w in &warning_lines {
            eprintln!("{w}");
        }
        serde_json::to_writer_pretty(
            &mut out,
            &serde_json::json!({
                "a": a.source, "b": b.source, "rows": rows, "warnings": warnings
            }),
        )
        .context("writing JSON to stdout")?;
        writeln!(out).context("writing to stdout")?;
        return Ok(ExitCode::SUCCESS);
    }
    let cell = |v: Option<f64>| v.map(|x| format!("{x:.3}")).unwrap_or_else(|| "-".into());
    let mut text = format!("A: {}\nB: {}\n", a.source, b.source);
    for w in &warning_lines {
        text.push_str(&format!("{w}\n"));
    }
    text.push_str(&format!(
        "{:<46} {:>14} {:>14} {:>14} {:>9}\n",
        "figure", "A", "B", "B - A", "change"
    ));
    for r in rows {
        text.push_str(&format!(
            "{:<46} {:>14} {:>14} {:>14} {:>9}\n",
            r.figure,
            cell(r.a),
            cell(r.b),
            cell(r.diff),
            r.diff_pct
                .map(|p| format!("{p:+.1}%"))
                .unwrap_or_else(|| "-".into())
        ));
    }
    write!(out, "{text}").context("writing to stdout")?;
    Ok(ExitCode::SUCCESS)
}
