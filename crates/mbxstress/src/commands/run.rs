//! `mbxstress run`: the flags, as the application layer's request (`mbx_app::run`), and the
//! rendering of a test's start and its summary. What the test does and decides is in mbx-app.

use std::process::ExitCode;
use std::sync::Arc;

use mbx_app::config::{Flag, Layers, Sources};
use mbx_config::{RunConfig, TestKind};
use mbx_store::CreateParams;

use super::shared::{code_for, into_anyhow, preflight, start_gate_from_stdin};
use crate::cli::{ProgressMode, RunArgs, RunTest};
use crate::exit::usage;

/// Where the configuration of the run the flags describe comes from: the files, and one line
/// per flag that sets a key (given or not: a message names the flag that would set a key).
/// Adding a run setting adds its line here.
pub(crate) fn sources(args: &RunArgs) -> Sources {
    let secs = |d: Option<std::time::Duration>| d.map(|d| d.as_secs_f64());
    let flags = vec![
        Flag::new("mailboxes", "--mailboxes", args.mailboxes, |c, v| {
            c.profile.mailboxes = v
        }),
        Flag::new(
            "iops_per_mailbox",
            "--iops-per-mailbox",
            args.iops_per_mailbox,
            |c, v| c.profile.iops_per_mailbox = v,
        ),
        Flag::new("mailbox_quota_mb", "--quota-mb", args.quota_mb, |c, v| {
            c.profile.mailbox_quota_mb = v
        }),
        Flag::new("databases", "--databases", args.databases, |c, v| {
            c.profile.databases = v
        }),
        Flag::new("copies_per_database", "--copies", args.copies, |c, v| {
            c.profile.copies_per_database = v
        }),
        Flag::new("threads", "--threads", args.threads, |c, v| c.threads = v),
        Flag::new(
            "tuning.step_s",
            "--tuning-step",
            secs(args.tuning_step),
            |c, v| c.tuning.step_s = v,
        ),
        Flag::new(
            "tuning.max_steps",
            "--tuning-max-steps",
            args.tuning_max_steps,
            |c, v| c.tuning.max_steps = v,
        ),
        Flag::new("reactors", "--reactors", args.reactors, |c, v| {
            c.reactors = v
        }),
        Flag::new("duration_s", "--duration", secs(args.duration), |c, v| {
            c.duration_s = v
        }),
        Flag::new(
            "sample_interval_s",
            "--sample-interval",
            secs(args.sample_interval),
            |c, v| c.sample_interval_s = v,
        ),
        Flag::new(
            "bdm",
            "--bdm",
            args.bdm.as_deref().map(|b| b == "on"),
            |c, v| c.bdm = v,
        ),
        Flag::new(
            "compressibility_pct",
            "--compressibility-pct",
            args.compressibility_pct,
            |c, v| c.compressibility_pct = v,
        ),
        Flag::new(
            "checksum_reads_pct",
            "--checksum-reads-pct",
            args.checksum_reads_pct,
            |c, v| c.checksum_reads_pct = v,
        ),
        Flag::new("seed", "--seed", args.seed, |c, v| c.seed = v),
        Flag::new(
            "log_files_to_replay",
            "--log-files-to-replay",
            args.log_files_to_replay,
            |c, v| c.log_files_to_replay = v,
        ),
        Flag::switch(
            "continue_on_errors",
            "--continue-on-errors",
            args.continue_on_errors,
            |c| c.continue_on_errors = true,
        ),
        Flag::new("pacing", "--pacing", args.pacing, |c, v| c.pacing = v),
        Flag::new("arrivals", "--arrivals", args.arrivals, |c, v| {
            c.arrivals = v
        }),
        Flag::new(
            "max_backlog_s",
            "--max-backlog",
            secs(args.max_backlog),
            |c, v| c.max_backlog_s = v,
        ),
        Flag::new(
            "thresholds.max_latency_errors",
            "--max-latency-errors",
            args.max_latency_errors,
            |c, v| c.thresholds.max_latency_errors = v,
        ),
        Flag::new(
            "sizing",
            "--capacity-pct",
            args.capacity_pct.map(|_| mbx_config::Sizing::Capacity),
            |c, v| c.sizing = v,
        ),
        Flag::new(
            "capacity_pct",
            "--capacity-pct",
            args.capacity_pct,
            |c, v| c.capacity_pct = v,
        ),
        Flag::new(
            "throughput_pct",
            "--throughput-pct",
            args.throughput_pct,
            |c, v| c.throughput_pct = v,
        ),
        Flag::new("engine", "--engine", args.engine.engine, |c, v| {
            c.engine = v
        }),
        Flag::switch("direct", "--buffered", args.engine.buffered, |c| {
            c.direct = false
        }),
        Flag::new(
            "db_paths",
            "--db-path",
            (!args.paths.db_path.is_empty()).then(|| args.paths.db_path.clone()),
            |c, v| c.db_paths = v,
        ),
        Flag::new(
            "log_paths",
            "--log-path",
            (!args.paths.log_path.is_empty()).then(|| args.paths.log_path.clone()),
            |c, v| c.log_paths = v,
        ),
    ];
    Sources {
        config: args.config.clone(),
        jetstress: args.jetstress.jetstress_config.clone(),
        map_path: args.jetstress.map_path.clone(),
        profile: args.profile.clone(),
        flags,
    }
}

/// The configuration's layers the flags name, each file read once.
pub(crate) fn layers(args: &RunArgs) -> anyhow::Result<Layers> {
    Layers::read(sources(args)).map_err(into_anyhow)
}

/// `--request FILE` (a `fleet run` host): the request's test type, results folder and switches
/// in `args`, and its configuration's layers; None without one.
pub(crate) fn apply_request(args: &mut RunArgs) -> anyhow::Result<Option<Layers>> {
    use mbx_app::request::{out_agrees, HostJob, HostRequest};
    let Some(path) = &args.request else {
        return Ok(None);
    };
    let req = HostRequest::read(path).map_err(into_anyhow)?;
    let HostJob::Run(spec) = req.job else {
        return Err(usage(format!(
            "--request {}: not a storage test's request (a loadgen client's runs with `loadgen run --request`)",
            path.display()
        )));
    };
    out_agrees(args.out.as_deref(), &spec.out).map_err(into_anyhow)?;
    args.test = Some(RunTest::Kind(spec.kind));
    args.out = Some(spec.out);
    args.force = spec.force;
    args.allow_device = spec.allow_device;
    Ok(Some(Layers::from_carried(spec.config)))
}

/// Defaults < --config or --jetstress-config < --profile < flags; then validated.
pub(crate) fn resolve(args: &RunArgs, kind: TestKind) -> anyhow::Result<RunConfig> {
    layers(args)?.resolve(kind).map_err(into_anyhow)
}

/// The configuration of a `kind` test, with the defaults that depend on the test
/// (`mbx_app::config::Layers::resolve_for`).
pub(crate) fn resolve_for(args: &RunArgs, kind: TestKind) -> anyhow::Result<RunConfig> {
    layers(args)?.resolve_for(kind).map_err(into_anyhow)
}

/// How the databases of `cfg` are created (or attached) for a test: `data_pages` each.
pub(crate) fn create_params(args: &RunArgs, cfg: &RunConfig, data_pages: u64) -> CreateParams {
    mbx_app::run::create_params(cfg, data_pages, args.force, args.allow_device)
}

pub fn run(mut args: RunArgs) -> anyhow::Result<ExitCode> {
    if !args.jetstress.map_path.is_empty() && args.jetstress.jetstress_config.is_none() {
        return Err(usage(
            "--map-path maps the paths of a --jetstress-config file: give the file too",
        ));
    }
    let layers = match apply_request(&mut args)? {
        Some(l) => l,
        None => layers(&args)?,
    };
    let jetstress = layers.jetstress();
    let test = args.test.unwrap_or(RunTest::Kind(
        jetstress.map_or(TestKind::Performance, |j| j.test),
    ));
    if let Some(j) = jetstress {
        if args.progress == ProgressMode::Human {
            for line in super::jetstress::notes(j) {
                errln!("note: --jetstress-config: {line}");
            }
        }
    }
    let kind = match test {
        RunTest::Suite if args.start_gate.is_some() => {
            return Err(usage(
                "--start-gate (used by `fleet run`) runs one test type: choose --test performance, stress or soft-recovery",
            ))
        }
        RunTest::Suite => return super::suite::run(&args, &layers),
        RunTest::Kind(kind) => kind,
    };
    if args.stress_duration.is_some() {
        return Err(usage(
            "--stress-duration is the Stress duration of --test suite; for --test stress use --duration",
        ));
    }
    let cancel = crate::interrupt::install();
    let gate = args
        .start_gate
        .as_ref()
        .map(|_| start_gate_from_stdin(Arc::clone(&cancel)));
    let req = mbx_app::run::RunRequest {
        layers: &layers,
        kind,
        out: args.out.clone(),
        force: args.force,
        allow_device: args.allow_device,
        gate,
        cancel: &cancel,
        preflight: &preflight,
    };
    let mut term = crate::terminal::Terminal::new(args.progress);
    let ran = mbx_app::run::run(&req, &mut term);
    term.finish()?;
    Ok(code_for(ran.map_err(into_anyhow)?.reason))
}

#[cfg(test)]
mod resolve_tests {
    use super::*;
    use clap::{CommandFactory, Parser};
    use mbx_app::config::STRESS_DEFAULT_S;
    use mbx_config::Thresholds;

    fn run_flags() -> Vec<String> {
        let cli = crate::cli::Cli::command();
        let run = cli.find_subcommand("run").expect("run subcommand");
        run.get_arguments()
            .filter_map(|a| a.get_long().map(|l| format!("--{l}")))
            .collect()
    }

    fn args(extra: &[&str]) -> RunArgs {
        let mut argv = vec!["mbxstress", "run"];
        argv.extend_from_slice(extra);
        match crate::cli::Cli::try_parse_from(argv)
            .expect("parses")
            .command
        {
            crate::cli::Command::Run(a) => a,
            _ => unreachable!("parsed run"),
        }
    }

    /// Every key of a resolved configuration, dotted for tables (`cache.max_mb_per_db`).
    fn config_keys() -> Vec<String> {
        fn walk(v: &serde_json::Value, prefix: &str, out: &mut Vec<String>) {
            if let Some(o) = v.as_object() {
                for (k, x) in o {
                    let key = if prefix.is_empty() {
                        k.clone()
                    } else {
                        format!("{prefix}.{k}")
                    };
                    walk(x, &key, out);
                    out.push(key);
                }
            }
        }
        let mut out = Vec::new();
        let v = serde_json::to_value(RunConfig::default()).expect("serializes");
        walk(&v, "", &mut out);
        out
    }

    /// An empty --config file and a valid --profile file in `dir`: (config, profile).
    fn files(dir: &std::path::Path) -> (String, String) {
        let config = dir.join("c.toml");
        std::fs::write(&config, "").expect("write");
        let profile = dir.join("p.toml");
        std::fs::write(
            &profile,
            "mailboxes = 100\niops_per_mailbox = 0.1\nmailbox_quota_mb = 10\ndatabases = 1\ncopies_per_database = 1\n",
        )
        .expect("write");
        (config.display().to_string(), profile.display().to_string())
    }

    #[test]
    fn every_mapped_flag_exists() {
        let flags = run_flags();
        let sources = sources(&args(&[]));
        assert!(sources.flags.len() >= 28, "{:?}", sources.flags);
        for f in &sources.flags {
            assert!(
                flags.iter().any(|name| name == f.name()),
                "{} -> {} is not a run flag",
                f.key(),
                f.name()
            );
        }
    }

    /// No message names a flag that `run` does not have (issue 8: `--thresholds.db-read-avg-ms`),
    /// whatever the key and wherever its value came from.
    #[test]
    fn messages_name_only_real_flags() {
        let flags = run_flags();
        let keys = config_keys();
        assert!(keys.iter().any(|k| k == "thresholds.db_read_avg_ms"));
        let dir = tempfile::tempdir().expect("tempdir");
        let (config, profile) = files(dir.path());
        for extra in [
            &[][..],
            &["--config", &config][..],
            &["--profile", &profile][..],
            &["--mailboxes", "5", "--duration", "9s", "--buffered"][..],
        ] {
            let a = args(extra);
            let layers = layers(&a).expect("reads");
            let flagged = sources(&a).flags;
            for key in &keys {
                let msg = layers.describe_invalid(key, "reason");
                for word in msg.split(|c: char| !(c.is_ascii_alphanumeric() || "-._".contains(c))) {
                    if let Some(rest) = word.strip_prefix("--") {
                        let flag = format!("--{}", rest.trim_end_matches('.'));
                        assert!(flags.contains(&flag), "{key}: {msg}");
                    }
                }
                if !flagged.iter().any(|f| f.key() == key) {
                    assert!(msg.contains(&format!("`{key}`")), "{key}: {msg}");
                }
            }
        }
    }

    /// A profile `size` writes is one `run` accepts: `size --copies 4` used to write
    /// `copies_per_database = 4`, which `run` refused (1..=3).
    #[test]
    fn a_profile_written_by_size_is_accepted() {
        let dir = tempfile::tempdir().expect("tempdir");
        for (copies, servers) in [(1, 1), (2, 2), (3, 4), (4, 4), (16, 16)] {
            let mut input = mbx_sizing::SizingInput::new(
                mbx_sizing::Method::Exchange2013,
                5000,
                150.0,
                servers,
            );
            input.copies = copies;
            let report = mbx_sizing::size(&input).expect("sizes");
            let path = dir.path().join(format!("p{copies}.toml"));
            report.profile.save(&path, &[]).expect("size writes it");
            let path_arg = path.display().to_string();
            let cfg = resolve(&args(&["--profile", &path_arg]), TestKind::Performance)
                .unwrap_or_else(|e| panic!("run refuses size's profile ({copies} copies): {e:#}"));
            assert_eq!(cfg.profile, report.profile);
            assert_eq!(cfg.profile.copies_per_database, copies.min(3));
        }
    }

    /// Stress takes Jetstress's Stress defaults (24 h, Lenient maximum latencies) only where the
    /// user chose nothing: a --duration or a [thresholds] key in --config wins.
    #[test]
    fn stress_defaults_yield_to_what_the_user_set() {
        let cfg = resolve_for(&args(&[]), TestKind::Stress).expect("resolves");
        assert_eq!(cfg.duration_s, STRESS_DEFAULT_S);
        assert_eq!(cfg.thresholds, Thresholds::lenient());
        let cfg = resolve_for(&args(&[]), TestKind::Performance).expect("resolves");
        assert_eq!(cfg.thresholds, Thresholds::default());
        assert_eq!(cfg.duration_s, RunConfig::default().duration_s);
        let cfg = resolve_for(&args(&["--duration", "90s"]), TestKind::Stress).expect("resolves");
        assert_eq!(cfg.duration_s, 90.0);
        let dir = tempfile::tempdir().expect("tempdir");
        let path = dir.path().join("c.toml");
        std::fs::write(
            &path,
            "duration_s = 30\n[thresholds]\ndb_read_max_ms = 150\n",
        )
        .expect("write");
        let path_arg = path.display().to_string();
        let cfg = resolve_for(&args(&["--config", &path_arg]), TestKind::Stress).expect("resolves");
        assert_eq!(cfg.duration_s, 30.0);
        assert_eq!(cfg.thresholds.db_read_max_ms, 150.0);
        assert_eq!(cfg.thresholds.log_write_max_ms, 200.0);
    }

    /// Off by default (Jetstress 2013 stops at the first error); the flag turns it on.
    #[test]
    fn continue_on_errors_is_off_unless_asked() {
        assert!(
            !resolve(&args(&[]), TestKind::Performance)
                .expect("resolves")
                .continue_on_errors
        );
        assert!(
            resolve(&args(&["--continue-on-errors"]), TestKind::Performance)
                .expect("resolves")
                .continue_on_errors
        );
    }

    /// Closed loop by default; --pacing open takes --arrivals and --max-backlog, which a closed
    /// loop refuses naming the flag and the fix; --max-latency-errors sets the tolerance and
    /// its range is checked naming the flag.
    #[test]
    fn pacing_and_latency_tolerance_flags() {
        let perf = TestKind::Performance;
        let c = resolve(&args(&[]), perf).expect("resolves");
        assert_eq!(c.pacing, mbx_config::Pacing::Closed);
        assert_eq!(c.thresholds.max_latency_errors, 6);
        let c = resolve(
            &args(&[
                "--pacing",
                "open",
                "--arrivals",
                "uniform",
                "--max-backlog",
                "2.5s",
                "--max-latency-errors",
                "0",
            ]),
            perf,
        )
        .expect("resolves");
        assert_eq!(c.pacing, mbx_config::Pacing::Open);
        assert_eq!(c.arrivals, mbx_config::Arrivals::Uniform);
        assert_eq!(c.max_backlog_s, 2.5);
        assert_eq!(c.thresholds.max_latency_errors, 0);
        for flags in [["--arrivals", "uniform"], ["--max-backlog", "5s"]] {
            let e = resolve(&args(&flags), perf).expect_err("closed loop refuses it");
            let msg = format!("{e:#}");
            assert!(
                msg.contains(flags[0]) && msg.contains("--pacing open"),
                "{msg}"
            );
        }
        let e = resolve(&args(&["--max-latency-errors", "10001"]), perf).expect_err("range");
        assert!(
            format!("{e:#}").contains("invalid --max-latency-errors"),
            "{e:#}"
        );
        let e =
            resolve(&args(&["--pacing", "open", "--max-backlog", "2h"]), perf).expect_err("range");
        assert!(format!("{e:#}").contains("invalid --max-backlog"), "{e:#}");
    }

    /// Durations print as measured: a run of 0.994 s is not "0s" beside its IOPS.
    #[test]
    fn durations_print_as_measured() {
        assert_eq!(crate::summary::fmt_secs(0.994), "0.994s");
        assert_eq!(crate::summary::fmt_secs(2.000089), "2s");
        assert_eq!(crate::summary::fmt_secs(12.5), "12.5s");
        assert_eq!(crate::summary::fmt_secs(0.0), "0s");
        assert_eq!(crate::summary::fmt_secs(90.4), "1m30s");
        assert_eq!(crate::summary::fmt_secs(7200.0), "2h00m00s");
    }

    /// The quick start (`run`, 60 s measured, no sample interval given) samples often enough for
    /// its maximum-latency checks to judge (more samples than the 6 tolerated); a long run keeps
    /// Jetstress's 15 s, and an interval the user gives is kept.
    #[test]
    fn an_unset_sample_interval_gives_the_max_latency_checks_enough_samples() {
        let perf = TestKind::Performance;
        let c = resolve_for(&args(&[]), perf).expect("resolves");
        let samples = (c.duration_s / c.sample_interval_s).floor();
        assert!(
            samples > f64::from(c.thresholds.max_latency_errors),
            "{} s at {} s",
            c.duration_s,
            c.sample_interval_s
        );
        assert!(c.sample_interval_s >= 1.0);
        let c = resolve_for(&args(&["--duration", "2h"]), perf).expect("resolves");
        assert_eq!(c.sample_interval_s, 15.0);
        let c = resolve_for(&args(&["--sample-interval", "15s"]), perf).expect("resolves");
        assert_eq!(c.sample_interval_s, 15.0);
        let c = resolve_for(&args(&["--max-latency-errors", "0"]), perf).expect("resolves");
        assert_eq!(c.sample_interval_s, 15.0);
    }

    #[test]
    fn messages_say_where_the_value_came_from() {
        let describe =
            |key: &str, a: &[&str]| layers(&args(a)).expect("reads").describe_invalid(key, "r");
        let msg = describe("duration_s", &["--duration", "9s"]);
        assert_eq!(msg, "invalid --duration: r");
        let msg = describe("thresholds.db_read_avg_ms", &[]);
        assert!(msg.starts_with("invalid `thresholds.db_read_avg_ms` (the built-in default)"));
        assert!(msg.ends_with("in a --config FILE"), "{msg}");
        let dir = tempfile::tempdir().expect("tempdir");
        let (_, profile) = files(dir.path());
        let msg = describe("mailboxes", &["--profile", &profile]);
        assert!(
            msg.contains(&format!("`mailboxes` in --profile {profile}")),
            "{msg}"
        );
        assert!(msg.contains("--mailboxes"), "{msg}");
    }
}
