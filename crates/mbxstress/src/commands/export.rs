//! `mbxstress export jetstress-config`: the JetstressConfig.xml of a run (from the run flags or
//! a result), so the same test can be run in Jetstress for a side-by-side comparison.

use std::io::Write;
use std::process::ExitCode;

use anyhow::Context;
use mbx_config::jetstress::{to_xml, unmapped_paths, ExportSpec, PathMap};
use mbx_config::TestKind;

use crate::cli::{ExportCommand, ExportJetstressArgs, RunTest};
use crate::exit::usage;

/// Runs `export`.
pub fn run(cmd: ExportCommand) -> anyhow::Result<ExitCode> {
    match cmd {
        ExportCommand::JetstressConfig(args) => jetstress_config(&args),
    }
}

fn jetstress_config(args: &ExportJetstressArgs) -> anyhow::Result<ExitCode> {
    let mut map = PathMap::default();
    for rule in &args.run.jetstress.map_path {
        map.add(rule)
            .map_err(|e| usage(format!("invalid --map-path {e}")))?;
    }
    let (config, test) = match &args.from_result {
        Some(path) => {
            let run = mbx_report::report::load_run(path)
                .with_context(|| format!("reading --from-result {}", path.display()))?;
            (run.result.config, run.result.test.test_type)
        }
        None => {
            let test = match args.run.test {
                Some(RunTest::Suite) => {
                    return Err(usage(
                        "--test suite is five tests: export one of them (performance, stress, backup or soft-recovery)",
                    ))
                }
                Some(RunTest::Kind(k)) => k,
                None => TestKind::Performance,
            };
            (super::run::resolve(&args.run, test)?, test)
        }
    };
    if test == TestKind::Checksum {
        return Err(usage(
            "Jetstress has no Checksum test type (it checksums after Stress): export performance or stress",
        ));
    }
    for line in losses(&config) {
        errln!("note: not expressible in a Jetstress configuration: {line}");
    }
    let spec = ExportSpec {
        config: &config,
        test,
        attach_existing: args.attach_existing,
        map: &map,
    };
    let unmapped = unmapped_paths(&spec);
    if let Some(first) = unmapped.first() {
        errln!(
            "warning: not Windows paths, written as they are (Jetstress runs on Windows and cannot use them): {}. Map each local folder to a Windows one with --map-path, e.g. --map-path 'E:\\={first}' writes it as E:\\ (repeatable; the longest matching folder wins), or edit the paths in the file.",
            unmapped.join(", ")
        );
    }
    let xml = to_xml(&spec);
    let mut out = std::io::stdout().lock();
    out.write_all(xml.as_bytes())
        .and_then(|()| out.flush())
        .context("writing the configuration to stdout")?;
    Ok(ExitCode::SUCCESS)
}

/// Settings of `c` a Jetstress configuration has no element for, when they differ from the
/// defaults (Jetstress then runs with its own).
fn losses(c: &mbx_config::RunConfig) -> Vec<String> {
    let d = mbx_config::RunConfig::default();
    let mut out = Vec::new();
    let t = &c.thresholds;
    if t.page_fault_stalls_per_s != d.thresholds.page_fault_stalls_per_s {
        out.push(format!(
            "thresholds.page_fault_stalls_per_s = {}",
            t.page_fault_stalls_per_s
        ));
    }
    if t.hung_io_s != d.thresholds.hung_io_s {
        out.push(format!("thresholds.hung_io_s = {}", t.hung_io_s));
    }
    if c.cache != d.cache {
        out.push("the [cache] settings (Jetstress sizes its cache from the profile)".into());
    }
    if c.compressibility_pct != d.compressibility_pct {
        out.push(format!("compressibility_pct = {}", c.compressibility_pct));
    }
    if c.checksum_reads_pct > 0 && c.checksum_reads_pct < 100 {
        out.push(format!(
            "checksum_reads_pct = {}: Jetstress's VerifyChecksum is on or off; exported as true \
             (Jetstress checksums every page read)",
            c.checksum_reads_pct
        ));
    }
    if c.bdm_reads_per_s != d.bdm_reads_per_s {
        out.push(format!("bdm_reads_per_s = {}", c.bdm_reads_per_s));
    }
    if c.pacing != d.pacing {
        out.push(format!(
            "pacing = \"{}\" (arrivals {}, max_backlog_s {}): Jetstress paces closed loop only",
            c.pacing, c.arrivals, c.max_backlog_s
        ));
    }
    out
}
