//! `mbxstress size`: flags and/or an input file -> `mbx_app::size` (merged, validated, sized)
//! -> report, JSON, profile.

use std::process::ExitCode;

use anyhow::Context;
use mbx_app::size::{describe_base, profile_comments, Base, SizeFlags};
use mbx_sizing::{examples, SizingReport};

use super::shared::into_anyhow;
use crate::cli::SizeArgs;
use crate::render;

/// The flags as the application layer's layer (`mbx_app::size`): the deployment's flags by
/// their names (the same as the `--input` file's keys).
fn size_flags(args: &SizeArgs) -> anyhow::Result<SizeFlags> {
    let inputs = serde_json::to_value(&args.inputs)
        .and_then(serde_json::from_value)
        .context("the size flags as the sizing inputs")?;
    Ok(SizeFlags {
        inputs,
        virtualized: args.virtualized,
        multi_role: args.multi_role,
        input: args.input.clone(),
        example: args.example.clone(),
    })
}

pub fn run(args: SizeArgs) -> anyhow::Result<ExitCode> {
    let flags = size_flags(&args)?;
    let req = mbx_app::size::resolve(&flags).map_err(into_anyhow)?;
    let (input, base) = (&req.input, &req.base);
    if let Base::Example {
        name,
        source,
        implicit: true,
    } = base
    {
        errln!(
            "note: no deployment given (--mailboxes, --input or --example); sizing the built-in example '{name}': {source}"
        );
    }
    let report = mbx_app::size::size(&flags, &req).map_err(into_anyhow)?;

    if let Some(path) = &args.profile_out {
        report
            .profile
            .save(path, &profile_comments(&report, base))
            .with_context(|| {
                format!(
                    "writing the test profile (--profile-out {})",
                    path.display()
                )
            })?;
    }

    // A built-in example sized as its paper stated it is compared with the paper, row by row.
    let example = match base {
        Base::Example { name, .. } => examples::by_name(name),
        _ => None,
    };
    let paper = example.as_ref().filter(|e| e.input == *input);
    let mut out = std::io::stdout().lock();
    if args.json {
        let mut v = serde_json::to_value(&report).context("serializing the sizing report")?;
        if let (Some(e), Some(obj)) = (paper, v.as_object_mut()) {
            obj.insert("paper_comparison".into(), paper_json(e, &report));
        }
        serde_json::to_writer_pretty(&mut out, &v).context("writing JSON to stdout")?;
        writeln_out(&mut out, "")?;
    } else {
        let mut text = render::size_report(&report, &describe_base(base));
        match (paper, &example) {
            (Some(e), _) => text.push_str(&render::paper_comparison(e, &report)),
            (None, Some(e)) => text.push_str(&format!(
                "\nNo comparison with the paper of example '{}': flags changed its inputs.\n",
                e.name
            )),
            _ => {}
        }
        writeln_out(&mut out, &text)?;
        if let Some(path) = &args.profile_out {
            writeln_out(
                &mut out,
                &format!(
                    "Test profile written to {} (use it with `mbxstress run --profile {}`).",
                    path.display(),
                    path.display()
                ),
            )?;
        }
    }
    Ok(ExitCode::SUCCESS)
}

fn writeln_out(out: &mut impl std::io::Write, text: &str) -> anyhow::Result<()> {
    writeln!(out, "{text}").context("writing to stdout")
}

/// `paper_comparison` in `size --json` of a built-in example: each figure its paper reports, ours,
/// whether they agree at the paper's precision, and why not.
fn paper_json(e: &examples::Example, r: &SizingReport) -> serde_json::Value {
    serde_json::Value::Array(
        e.paper
            .iter()
            .map(|f| {
                serde_json::json!({
                    "figure": f.what,
                    "paper": f.paper,
                    "ours": f.ours_of(r),
                    "agrees": f.agrees(r),
                    "why": f.why,
                })
            })
            .collect(),
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::Parser;

    /// Every deployment flag reaches the application layer's inputs by its name (a flag the
    /// inputs do not have is refused there: `deny_unknown_fields`).
    #[test]
    fn every_size_flag_reaches_the_sizing_inputs() {
        let argv = "mbxstress size --method exchange2016 --mailboxes 10 --messages-per-day 100 \
            --message-size-kb 80 --quota-mb 1024 --copies 2 --servers 1 --databases-per-server 2 \
            --headroom-pct 20 --iops-per-mailbox 0.1 --specint-rate 100 --specint-cores 8 \
            --cores-per-server 8 --cpu-mhz 2000 --peak-cpu-pct 70 --client-access-cores 2 \
            --log-retention-days 3 --deleted-item-retention-days 14 --data-overhead-pct 20 \
            --disk-class ssd --disk-capacity-gb 900 --disk-iops 5000 --db-raid raid10 \
            --log-raid raid1 --peak-hour-log-pct 15 --sites 1 --lagged-copies 0 --lag-days 0 \
            --archive-quota-mb 0 --virtualized";
        let cli = crate::cli::Cli::try_parse_from(argv.split_whitespace()).expect("parses");
        let crate::cli::Command::Size(args) = cli.command else {
            panic!("not size");
        };
        let f = size_flags(&args).expect("maps");
        let v = serde_json::to_value(&f.inputs).expect("json");
        let unset: Vec<&String> = v
            .as_object()
            .expect("object")
            .iter()
            // The switches are SizeFlags' own; --mailboxes-per-database excludes the other layout.
            .filter(|(k, x)| {
                x.is_null()
                    && !matches!(
                        k.as_str(),
                        "virtualized" | "multi_role" | "mailboxes_per_database"
                    )
            })
            .map(|(k, _)| k)
            .collect();
        assert!(unset.is_empty(), "flags that did not arrive: {unset:?}");
        assert!(f.virtualized && !f.multi_role);
        assert_eq!(f.inputs.disk_class.as_deref(), Some("ssd"));
    }
}
