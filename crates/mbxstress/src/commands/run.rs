//! `mbxstress run`: resolve the configuration, build the plan, have the engine execute it
//! (preparing the databases is the plan's first step), persist samples, log and result as the
//! events arrive, export the result and print the verdict.

use std::fs::File;
use std::io::{BufWriter, IsTerminal, Write};
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

use anyhow::Context;
use mbx_config::{RunConfig, TestKind, Thresholds};
use mbx_engine::result::{RunResult, StopReason};
use mbx_engine::{Executed, Observer, Plan, Progress, RunEvent};
use mbx_store::{plan_paths, CreateParams, LockMode, StoreLock};

use crate::cli::{RunArgs, RunTest};
use crate::exit::usage;
use crate::render::num;

/// Defaults < --config or --jetstress-config < --profile < flags; then validated.
pub(crate) fn resolve(args: &RunArgs, kind: TestKind) -> anyhow::Result<RunConfig> {
    let mut cfg = match (&args.config, super::jetstress::load(&args.jetstress)?) {
        (Some(path), _) => {
            RunConfig::load(path).with_context(|| format!("reading --config {}", path.display()))?
        }
        (None, Some(j)) => j.config,
        (None, None) => RunConfig::default(),
    };
    if let Some(path) = &args.profile {
        let p = mbx_config::Profile::load(path)
            .with_context(|| format!("reading --profile {}", path.display()))?;
        cfg.apply_profile(&p);
    }
    macro_rules! set {
        ($flag:expr, $field:expr) => {
            if let Some(v) = $flag {
                $field = v;
            }
        };
    }
    set!(args.mailboxes, cfg.profile.mailboxes);
    set!(args.iops_per_mailbox, cfg.profile.iops_per_mailbox);
    set!(args.quota_mb, cfg.profile.mailbox_quota_mb);
    set!(args.databases, cfg.profile.databases);
    set!(args.copies, cfg.profile.copies_per_database);
    set!(args.threads, cfg.threads);
    set!(args.tuning_step.map(|d| d.as_secs_f64()), cfg.tuning.step_s);
    set!(args.tuning_max_steps, cfg.tuning.max_steps);
    set!(args.reactors, cfg.reactors);
    set!(args.duration.map(|d| d.as_secs_f64()), cfg.duration_s);
    set!(
        args.sample_interval.map(|d| d.as_secs_f64()),
        cfg.sample_interval_s
    );
    set!(args.bdm.as_deref().map(|b| b == "on"), cfg.bdm);
    set!(args.compressibility_pct, cfg.compressibility_pct);
    set!(args.checksum_reads_pct, cfg.checksum_reads_pct);
    set!(args.seed, cfg.seed);
    set!(args.log_files_to_replay, cfg.log_files_to_replay);
    if args.continue_on_errors {
        cfg.continue_on_errors = true;
    }
    set!(args.pacing, cfg.pacing);
    set!(args.arrivals, cfg.arrivals);
    set!(args.max_backlog.map(|d| d.as_secs_f64()), cfg.max_backlog_s);
    set!(args.max_latency_errors, cfg.thresholds.max_latency_errors);
    if let Some(pct) = args.capacity_pct {
        cfg.sizing = mbx_config::Sizing::Capacity;
        cfg.capacity_pct = pct;
    }
    set!(args.throughput_pct, cfg.throughput_pct);
    // The two categories do not mix: a profile flag means nothing to capacity sizing, and the
    // throughput percentage nothing to a profile.
    if cfg.sizing == mbx_config::Sizing::Capacity {
        for (given, flag) in [
            (args.mailboxes.is_some(), "--mailboxes"),
            (args.quota_mb.is_some(), "--quota-mb"),
            (args.iops_per_mailbox.is_some(), "--iops-per-mailbox"),
            (args.profile.is_some(), "--profile"),
        ] {
            if given {
                return Err(usage(format!(
                    "{flag} belongs to the mailbox profile test, and this is the disk subsystem throughput test (sizing = \"capacity\", --capacity-pct): the databases are sized from the free space and the target is a percentage of the maximum found; drop {flag}, or set sizing = \"profile\" in the --config file"
                )));
            }
        }
    } else if args.throughput_pct.is_some() {
        return Err(usage(
            "--throughput-pct applies to the disk subsystem throughput test: add --capacity-pct N (the databases' share of the free space), or give the target as --mailboxes x --iops-per-mailbox instead",
        ));
    }
    // The open-loop settings mean nothing to a closed loop: say so rather than ignore them.
    if cfg.pacing == mbx_config::Pacing::Closed {
        for (given, flag) in [
            (args.arrivals.is_some(), "--arrivals"),
            (args.max_backlog.is_some(), "--max-backlog"),
        ] {
            if given {
                return Err(usage(format!(
                    "{flag} applies to open-loop pacing only; add --pacing open (or set `pacing = \"open\"` in the --config file), or drop {flag}"
                )));
            }
        }
    }
    set!(args.engine.engine, cfg.engine);
    if args.engine.buffered {
        cfg.direct = false;
    }
    if !args.paths.db_path.is_empty() {
        cfg.db_paths = args.paths.db_path.clone();
    }
    if !args.paths.log_path.is_empty() {
        cfg.log_paths = args.paths.log_path.clone();
    }
    cfg.validate_for(kind)
        .map_err(|(key, reason)| usage(describe_invalid(key, &reason, args)))?;
    Ok(cfg)
}

/// The Stress test's duration when neither --duration nor the --config file sets one (Jetstress:
/// 24 h).
pub(crate) const STRESS_DEFAULT_S: f64 = 86_400.0;

/// The configuration of a `kind` test: [`resolve`], then for Stress the Jetstress Stress
/// defaults where the user chose nothing: 24 h (no --duration, no `duration_s` in --config) and
/// the Lenient maximum latencies (no `thresholds.db_read_max_ms` / `log_write_max_ms` in
/// --config; there are no threshold flags).
pub(crate) fn resolve_for(args: &RunArgs, kind: TestKind) -> anyhow::Result<RunConfig> {
    let mut cfg = resolve(args, kind)?;
    if kind == TestKind::Stress {
        // A Jetstress configuration always sets both (Duration, and a Lenient set or the
        // Jetstress defaults for Stress).
        let set = |key: &str| {
            args.jetstress.jetstress_config.is_some()
                || args.config.as_deref().is_some_and(|p| config_sets(p, key))
        };
        if args.duration.is_none() && !set("duration_s") {
            cfg.duration_s = STRESS_DEFAULT_S;
        }
        let lenient = Thresholds::lenient();
        if !set("thresholds.db_read_max_ms") {
            cfg.thresholds.db_read_max_ms = lenient.db_read_max_ms;
        }
        if !set("thresholds.log_write_max_ms") {
            cfg.thresholds.log_write_max_ms = lenient.log_write_max_ms;
        }
    }
    // No sample interval chosen (no --sample-interval, none in --config; a Jetstress
    // configuration has its LogInterval): Jetstress's 15 s, shorter for a short run so that the
    // maximum-latency checks have samples enough to judge.
    let interval_set = args.sample_interval.is_some()
        || args.jetstress.jetstress_config.is_some()
        || args
            .config
            .as_deref()
            .is_some_and(|p| config_sets(p, "sample_interval_s"));
    if !interval_set {
        cfg.sample_interval_s =
            mbx_config::sample_interval_for(cfg.duration_s, cfg.thresholds.max_latency_errors);
    }
    Ok(cfg)
}

/// Files a run writes into its results folder.
pub(crate) const RESULT_FILES: [&str; 8] = [
    "result.json",
    "find-max.json",
    "find-max.html",
    "test.log",
    "samples.jsonl",
    "report.html",
    "instances.csv",
    "samples.csv",
];

/// The results folder, checked (nothing of ours or anyone's in the way) but not created.
/// Whether a flag was given on this command line.
type FlagGiven = fn(&RunArgs) -> bool;

/// The `RunConfig` keys that have a `run` flag, and the flag. Every other key (`thresholds.*`,
/// `cache.*`, `op_mix*`, `bdm_reads_per_s`) is set only in a `--config` file, so a message
/// names it as a key there, never as a flag that does not exist.
const KEY_FLAGS: &[(&str, &str, FlagGiven)] = &[
    ("mailboxes", "--mailboxes", |a| a.mailboxes.is_some()),
    ("iops_per_mailbox", "--iops-per-mailbox", |a| {
        a.iops_per_mailbox.is_some()
    }),
    ("mailbox_quota_mb", "--quota-mb", |a| a.quota_mb.is_some()),
    ("databases", "--databases", |a| a.databases.is_some()),
    ("copies_per_database", "--copies", |a| a.copies.is_some()),
    ("threads", "--threads", |a| a.threads.is_some()),
    ("tuning.step_s", "--tuning-step", |a| {
        a.tuning_step.is_some()
    }),
    ("tuning.max_steps", "--tuning-max-steps", |a| {
        a.tuning_max_steps.is_some()
    }),
    ("reactors", "--reactors", |a| a.reactors.is_some()),
    ("duration_s", "--duration", |a| a.duration.is_some()),
    ("sample_interval_s", "--sample-interval", |a| {
        a.sample_interval.is_some()
    }),
    ("bdm", "--bdm", |a| a.bdm.is_some()),
    ("compressibility_pct", "--compressibility-pct", |a| {
        a.compressibility_pct.is_some()
    }),
    ("checksum_reads_pct", "--checksum-reads-pct", |a| {
        a.checksum_reads_pct.is_some()
    }),
    ("seed", "--seed", |a| a.seed.is_some()),
    ("log_files_to_replay", "--log-files-to-replay", |a| {
        a.log_files_to_replay.is_some()
    }),
    ("continue_on_errors", "--continue-on-errors", |a| {
        a.continue_on_errors
    }),
    ("pacing", "--pacing", |a| a.pacing.is_some()),
    ("arrivals", "--arrivals", |a| a.arrivals.is_some()),
    ("max_backlog_s", "--max-backlog", |a| {
        a.max_backlog.is_some()
    }),
    (
        "thresholds.max_latency_errors",
        "--max-latency-errors",
        |a| a.max_latency_errors.is_some(),
    ),
    ("capacity_pct", "--capacity-pct", |a| {
        a.capacity_pct.is_some()
    }),
    ("throughput_pct", "--throughput-pct", |a| {
        a.throughput_pct.is_some()
    }),
    ("sizing", "--capacity-pct", |a| a.capacity_pct.is_some()),
    ("engine", "--engine", |a| a.engine.engine.is_some()),
    ("direct", "--buffered", |a| a.engine.buffered),
    ("db_paths", "--db-path", |a| !a.paths.db_path.is_empty()),
    ("log_paths", "--log-path", |a| !a.paths.log_path.is_empty()),
];

/// The message for an invalid `key`, naming where its value came from (the flag, the
/// `--profile` or `--config` file, or the built-in default) and how to change it.
fn describe_invalid(key: &str, reason: &str, args: &RunArgs) -> String {
    let flag = KEY_FLAGS
        .iter()
        .find(|(k, _, _)| *k == key)
        .map(|&(_, flag, given)| (flag, given(args)));
    if let Some((flag, true)) = flag {
        return format!("invalid {flag}: {reason}");
    }
    let flag = flag.map(|(flag, _)| flag);
    let config = args.config.as_deref();
    let from_profile = args
        .profile
        .as_deref()
        .filter(|_| mbx_config::PROFILE_KEYS.contains(&key));
    let (source, how) = match (from_profile, config) {
        // The profile overrides the config file: fix the profile, or override it with the flag.
        (Some(profile), _) => (
            format!("`{key}` in --profile {}", profile.display()),
            flag.map(|f| format!("; correct the profile or override it with {f}"))
                .unwrap_or_default(),
        ),
        (None, Some(path)) if config_sets(path, key) => (
            format!("`{key}` in --config {}", path.display()),
            flag.map(|f| format!("; correct it there or override it with {f}"))
                .unwrap_or_default(),
        ),
        (None, Some(path)) => (
            format!("`{key}` (the built-in default)"),
            match flag {
                Some(f) => format!("; set it with {f} or as `{key}` in {}", path.display()),
                None => format!("; set `{key}` in {}", path.display()),
            },
        ),
        (None, None) => (
            format!("`{key}` (the built-in default)"),
            match flag {
                Some(f) => format!("; set it with {f} or as `{key}` in a --config FILE"),
                None => format!("; set `{key}` in a --config FILE"),
            },
        ),
    };
    format!("invalid {source}: {reason}{how}")
}

/// Whether the `--config` file itself sets `key` (dotted for tables: `cache.max_mb_per_db`).
/// The file was already read and parsed once, so a failure here only means "not known to".
pub(crate) fn config_sets(path: &std::path::Path, key: &str) -> bool {
    let Ok(text) = mbx_config::input::read_bounded(
        path,
        mbx_config::input::CONFIG_LIMIT,
        "a run configuration (TOML)",
    ) else {
        return false;
    };
    let Ok(table) = text.parse::<toml::Table>() else {
        return false;
    };
    let mut parts = key.split('.');
    let Some(first) = parts.next() else {
        return false;
    };
    let mut value = table.get(first);
    for part in parts {
        value = value.and_then(|v| v.get(part));
    }
    value.is_some()
}

pub(crate) fn results_dir(out: Option<&Path>) -> anyhow::Result<PathBuf> {
    let dir = match out {
        Some(d) => d.to_path_buf(),
        None => {
            let stamp = mbx_engine::rfc3339_now().replace(':', "");
            PathBuf::from("mbxstress-results").join(stamp)
        }
    };
    if dir.exists() && !dir.is_dir() {
        return Err(usage(format!(
            "--out {} is not a folder; choose a new or empty folder for the results",
            dir.display()
        )));
    }
    // Never append to, or replace, a file already there (ours from an earlier run, or not).
    if let Some(name) = RESULT_FILES.iter().find(|n| dir.join(n).exists()) {
        return Err(usage(format!(
            "--out {} already holds {name}; choose a new or empty folder for the results",
            dir.display()
        )));
    }
    Ok(dir)
}

/// Persists and renders engine events: test.log and samples.jsonl are written (and flushed) as
/// events arrive, so a crash loses at most the current interval.
pub(crate) struct RunObserver {
    log: BufWriter<File>,
    samples: BufWriter<File>,
    mode: String,
    tty: bool,
    last_line_len: usize,
    last_plain: f64,
    pub(crate) errors: Vec<String>,
    /// The database creation progress bar (human mode only).
    create: crate::progress::CreateProgress,
    /// When the last `create` event went out (jsonl: at most one a second, so `fleet run`'s
    /// watchdog hears from a host that is creating its databases).
    last_create_event: Option<std::time::Instant>,
}

impl RunObserver {
    pub(crate) fn new(dir: &Path, mode: &str, databases: usize) -> anyhow::Result<Self> {
        let open = |name: &str| -> anyhow::Result<BufWriter<File>> {
            let path = dir.join(name);
            let f = fs_err::OpenOptions::new()
                .create_new(true)
                .write(true)
                .open(&path)?
                .into_parts()
                .0;
            Ok(BufWriter::new(f))
        };
        Ok(RunObserver {
            log: open("test.log")?,
            samples: open("samples.jsonl")?,
            mode: mode.to_string(),
            tty: std::io::stderr().is_terminal(),
            last_line_len: 0,
            last_plain: -1.0,
            errors: Vec::new(),
            create: crate::progress::CreateProgress::new(databases, mode != "human", false),
            last_create_event: None,
        })
    }

    /// Removes the creation progress bar, if one is shown.
    pub(crate) fn finish_preparing(&self) {
        self.create.finish();
    }

    fn log_line(&mut self, text: &str) {
        let line = format!("{} -- {text}\n", mbx_engine::rfc3339_now());
        if let Err(e) = self
            .log
            .write_all(line.as_bytes())
            .and_then(|_| self.log.flush())
        {
            self.errors.push(format!("writing test.log: {e}"));
        }
        if self.mode == "jsonl" {
            let _ = outln!("{}", serde_json::json!({ "event": "log", "text": text }));
        } else if self.mode == "human" && mbx_engine::tune::is_tuning_line(text) {
            self.clear_status();
            errln!("{text}");
        }
    }

    pub(crate) fn clear_status(&mut self) {
        if self.tty && self.last_line_len > 0 {
            errp!("\r{:width$}\r", "", width = self.last_line_len);
            self.last_line_len = 0;
        }
    }

    fn progress(&mut self, p: &Progress) {
        match self.mode.as_str() {
            "jsonl" => {
                let _ = outln!(
                    "{}",
                    serde_json::json!({ "event": "progress", "progress": p })
                );
            }
            "human" => {
                let timing = match p.phase_total_s {
                    Some(total) => format!(
                        "{} / {} (ETA {})",
                        fmt_secs(p.phase_elapsed_s),
                        fmt_secs(total),
                        fmt_secs((total - p.phase_elapsed_s).max(0.0))
                    ),
                    None => fmt_secs(p.phase_elapsed_s),
                };
                let line = match p.pass_bytes {
                    Some(b) => format!(
                        "[{}] {timing} | {} of {} MB ({:.0}%)",
                        p.phase.name(),
                        num(b.done as f64 / 1e6, 1),
                        num(b.planned as f64 / 1e6, 1),
                        if b.planned > 0 {
                            b.done as f64 * 100.0 / b.planned as f64
                        } else {
                            100.0
                        }
                    ),
                    None => format!(
                        "[{}] {timing} | IOPS {} (target {}) | DB read {:.2} ms | log write {:.2} ms | cache {:.0}%",
                        p.phase.name(),
                        num(p.iops, 0),
                        num(p.target_iops, 0),
                        p.db_read_avg_ms,
                        p.log_write_avg_ms,
                        p.cache_fill * 100.0
                    ),
                };
                if self.tty {
                    let pad = self.last_line_len.saturating_sub(line.len());
                    errp!("\r{line}{:pad$}", "");
                    self.last_line_len = line.len();
                } else if p.phase_elapsed_s - self.last_plain >= 15.0
                    || p.phase_elapsed_s < self.last_plain
                {
                    errln!("{line}");
                    self.last_plain = p.phase_elapsed_s;
                }
            }
            _ => {}
        }
    }
}

/// Seconds as measured: to the millisecond under a minute ("0.994s", "12.5s", "2s"), then
/// rounded to the second ("1m30s", "2h00m00s").
pub(crate) fn fmt_secs(s: f64) -> String {
    let s = if s.is_finite() { s.max(0.0) } else { 0.0 };
    if s < 59.9995 {
        let text = format!("{s:.3}");
        let text = text.trim_end_matches('0').trim_end_matches('.');
        return format!("{text}s");
    }
    mbx_engine::human_duration(std::time::Duration::from_secs_f64(s.round()))
}

impl Observer for RunObserver {
    fn on_event(&mut self, e: RunEvent<'_>) {
        match e {
            RunEvent::Log(text) => self.log_line(text),
            RunEvent::Prepare(e) => {
                self.create.on_event(e.clone());
                if let mbx_store::CreateEvent::Progress { index, bytes_done } = e {
                    let due = self
                        .last_create_event
                        .is_none_or(|t| t.elapsed() >= std::time::Duration::from_secs(1));
                    if self.mode == "jsonl" && due {
                        self.last_create_event = Some(std::time::Instant::now());
                        let _ = outln!(
                            "{}",
                            serde_json::json!({ "event": "create", "database": index, "bytes_done": bytes_done })
                        );
                    }
                }
            }
            RunEvent::Phase(p) => {
                self.finish_preparing();
                self.clear_status();
                self.last_plain = -1.0;
                if self.mode == "human" {
                    errln!("{}", capitalize(p.name()));
                } else if self.mode == "jsonl" {
                    let _ = outln!("{}", serde_json::json!({ "event": "phase", "phase": p }));
                }
                if p == mbx_engine::Phase::WaitStart {
                    // `fleet run` waits for this line from every host before it sends the start.
                    let _ = outln!(
                        "{}",
                        serde_json::json!({ "event": "ready", "pid": std::process::id() })
                    );
                }
            }
            RunEvent::Progress(p) => self.progress(&p),
            RunEvent::Sample(v) => {
                // One line per sample, flushed: a crash loses at most the line being written
                // (which `report` then skips).
                let written = serde_json::to_vec(v)
                    .map_err(std::io::Error::other)
                    .and_then(|mut line| {
                        line.push(b'\n');
                        self.samples.write_all(&line)
                    })
                    .and_then(|_| self.samples.flush());
                if let Err(e) = written {
                    self.errors.push(format!("writing samples.jsonl: {e}"));
                }
                if self.mode == "jsonl" {
                    let _ = outln!("{}", serde_json::json!({ "event": "sample", "sample": v }));
                }
            }
        }
    }
}

fn capitalize(s: &str) -> String {
    let mut c = s.chars();
    match c.next() {
        Some(f) => f.to_uppercase().collect::<String>() + c.as_str(),
        None => String::new(),
    }
}

pub fn run(args: RunArgs) -> anyhow::Result<ExitCode> {
    if !args.jetstress.map_path.is_empty() && args.jetstress.jetstress_config.is_none() {
        return Err(usage(
            "--map-path maps the paths of a --jetstress-config file: give the file too",
        ));
    }
    let jetstress = super::jetstress::load(&args.jetstress)?;
    let test = args.test.unwrap_or(RunTest::Kind(
        jetstress.as_ref().map_or(TestKind::Performance, |j| j.test),
    ));
    if let Some(j) = &jetstress {
        if args.progress == "human" {
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
        RunTest::Suite => return super::suite::run(&args),
        RunTest::Kind(kind) => kind,
    };
    if args.stress_duration.is_some() {
        return Err(usage(
            "--stress-duration is the Stress duration of --test suite; for --test stress use --duration",
        ));
    }
    let cfg = resolve_for(&args, kind)?;
    let cancel = crate::interrupt::install();
    let gate = args
        .start_gate
        .as_ref()
        .map(|_| start_gate_from_stdin(Arc::clone(&cancel)));
    Ok(run_one(
        &args,
        kind,
        cfg,
        args.out.as_deref(),
        &cancel,
        gate.as_ref(),
    )?
    .code)
}

/// `--start-gate stdin`: a thread reads the coordinator's lines: `start <unix seconds>` opens
/// the gate, `stop` (or the end of stdin: the coordinator or its connection is gone) stops the
/// test as Ctrl-C does, so no run outlives its coordinator.
fn start_gate_from_stdin(cancel: Arc<AtomicBool>) -> Arc<mbx_engine::StartGate> {
    use std::io::BufRead;
    let gate = mbx_engine::StartGate::new();
    let g = Arc::clone(&gate);
    std::thread::spawn(move || {
        for line in std::io::stdin().lock().lines() {
            let Ok(line) = line else { break };
            let mut words = line.split_whitespace();
            match (words.next(), words.next(), words.next()) {
                (Some("start"), Some(t), None)
                    if t.parse::<f64>().is_ok_and(|t| g.open_at(t)) => {}
                (Some("stop"), None, None) => cancel.store(true, Ordering::SeqCst),
                _ => errln!("warning: --start-gate: ignoring the line {line:?} (expected `start <unix seconds>` or `stop`)"),
            }
        }
        cancel.store(true, Ordering::SeqCst);
    });
    gate
}

/// Backup and Checksum read the databases that are there. When the command gives no size (no
/// --mailboxes, --quota-mb, --profile or --jetstress-config, and no `mailboxes` or
/// `mailbox_quota_mb` in --config), the size is the databases' own: the first database's header
/// sets the profile (mailboxes, quota, and the database count and compressibility unless given)
/// and the data pages each, which are returned. `None` when a size was given, for other tests,
/// with capacity sizing, or when there is no mbxstress database to read (Backup then creates
/// one as the Performance test does; Checksum says to prepare one).
fn size_from_databases(
    args: &RunArgs,
    kind: TestKind,
    cfg: &mut RunConfig,
) -> anyhow::Result<Option<u64>> {
    let in_config = |key: &str| args.config.as_deref().is_some_and(|p| config_sets(p, key));
    let size_given = args.mailboxes.is_some()
        || args.quota_mb.is_some()
        || args.profile.is_some()
        || args.jetstress.jetstress_config.is_some()
        || in_config("mailboxes")
        || in_config("mailbox_quota_mb");
    if !matches!(kind, TestKind::Backup | TestKind::Checksum)
        || size_given
        || cfg.sizing == mbx_config::Sizing::Capacity
    {
        return Ok(None);
    }
    let specs = plan_paths(&cfg.db_paths, &cfg.log_paths, cfg.profile.databases)?;
    let Some(first) = specs.first().filter(|s| s.path.exists()) else {
        return Ok(None);
    };
    let h = match mbx_store::verify::read_database_header(&first.path) {
        Ok(h) => h,
        // Not ours: preparing (Backup) or attaching (Checksum) refuses it with the reason.
        Err(mbx_store::StoreError::NotADatabase { .. }) => return Ok(None),
        Err(e) => {
            return Err(anyhow::Error::new(e).context(format!(
                "reading the size of the existing database {}",
                first.path.display()
            )))
        }
    };
    let p = &mut cfg.profile;
    if h.mailboxes > 0 && h.quota_mb > 0 {
        p.mailboxes = h.mailboxes;
        p.mailbox_quota_mb = h.quota_mb;
    }
    if args.databases.is_none() && !in_config("databases") && h.databases > 0 {
        p.databases = h.databases;
    }
    if args.compressibility_pct.is_none() && !in_config("compressibility_pct") {
        cfg.compressibility_pct = h.compressibility_pct;
    }
    Ok(Some(h.data_pages()))
}

/// How the databases of `cfg` are created (or attached) for a test: `data_pages` each.
pub(crate) fn create_params(args: &RunArgs, cfg: &RunConfig, data_pages: u64) -> CreateParams {
    let p = &cfg.profile;
    CreateParams {
        data_pages,
        mailboxes: p.mailboxes,
        quota_mb: p.mailbox_quota_mb,
        databases: p.databases,
        compressibility_pct: cfg.compressibility_pct,
        engine: mbx_engine::engine_kind(cfg.engine),
        direct: cfg.direct,
        force: args.force,
        allow_device: args.allow_device,
        queue_depth: 4,
        tool_version: env!("CARGO_PKG_VERSION").to_string(),
    }
}

/// How one test ended (what the suite needs to go on or stop).
pub(crate) struct Ran {
    /// The exit code of the test alone.
    pub code: ExitCode,
    /// Why it stopped.
    pub reason: StopReason,
    /// Its verdict.
    pub pass: bool,
}

/// Runs one `kind` test with `cfg`, its results in `out` (new or empty; default a time-stamped
/// folder): builds the plan, executes it, writes the result, the report and the summary. An
/// error that stopped the test is returned after its result is written.
pub(crate) fn run_one(
    args: &RunArgs,
    kind: TestKind,
    mut cfg: RunConfig,
    out: Option<&Path>,
    cancel: &AtomicBool,
    gate: Option<&Arc<mbx_engine::StartGate>>,
) -> anyhow::Result<Ran> {
    let plan_for: fn(&RunConfig) -> Plan = match kind {
        TestKind::Performance => Plan::performance,
        TestKind::Stress => Plan::stress,
        TestKind::Backup => Plan::backup,
        TestKind::Checksum => Plan::checksum,
        TestKind::SoftRecovery => |cfg| Plan::soft_recovery(cfg, cfg.log_files_to_replay),
    };
    let human = args.progress == "human";
    let from_headers = size_from_databases(args, kind, &mut cfg)?;
    let p = &cfg.profile;
    let specs = plan_paths(&cfg.db_paths, &cfg.log_paths, p.databases)?;
    // Capacity sizing measures the free space now, before anything is created: a share that
    // cannot hold a database stops here.
    let sized = if cfg.sizing == mbx_config::Sizing::Capacity {
        Some(
            mbx_store::capacity::size_databases(&specs, cfg.capacity_pct).map_err(|e| match e {
                mbx_store::StoreError::Invalid(m) => usage(format!("--capacity-pct: {m}")),
                other => {
                    anyhow::Error::new(other).context("measuring the free space for --capacity-pct")
                }
            })?,
        )
    } else {
        None
    };
    let data_pages = match (&sized, from_headers) {
        (Some(s), _) => s.data_pages,
        (None, Some(pages)) => pages,
        (None, None) => CreateParams::data_pages_for(p.mailboxes, p.mailbox_quota_mb, p.databases)
            .ok_or_else(|| {
                usage(format!(
                    "invalid --mailboxes x --quota-mb / --databases: each database would be larger than {} TiB (the most mbxstress creates); use fewer mailboxes, a smaller quota or more databases",
                    mbx_store::create::MAX_DATABASE_BYTES >> 40
                ))
            })?,
    };
    // Jetstress's DatabaseSource Open attaches existing databases: never create one here.
    if super::jetstress::load(&args.jetstress)?.is_some_and(|j| j.attach_existing) {
        if let Some(missing) = specs.iter().find(|s| !s.path.exists()) {
            return Err(usage(format!(
                "the --jetstress-config file attaches existing databases (DatabaseSource Open), and {} does not exist: run `mbxstress prepare --jetstress-config` with the same file first, or set DatabaseSource to New",
                missing.path.display()
            )));
        }
    }
    let mut plan = plan_for(&cfg);
    if let Some(g) = gate {
        if !plan.wait_for_start(Arc::clone(g)) {
            return Err(usage(format!(
                "--start-gate (used by `fleet run`) needs a test with a measured phase, and the {} test has none: use --test performance, stress or soft-recovery",
                kind.name()
            )));
        }
    }
    // One command per database at a time: a second run on these databases stops here, before
    // it creates a results folder or touches anything. Any other refusal from here on (a
    // read-only --db-path) leaves a result.json that says why.
    let dir = results_dir(out)?;
    let started = std::time::SystemTime::now();
    let lock = StoreLock::acquire(&specs, LockMode::Exclusive)
        .map_err(|e| refused(&dir, &cfg, kind, started, anyhow::Error::new(e)))?;
    fs_err::create_dir_all(&dir).context("creating the results folder")?;
    let mut observer = RunObserver::new(&dir, &args.progress, specs.len())
        .map_err(|e| refused(&dir, &cfg, kind, started, e))?;
    // result.json from the first second: it says the test is running until the end replaces
    // it, so a run killed on the way (kill -9, out of memory, power lost) leaves a result that
    // says it never finished.
    let result_path = dir.join("result.json");
    mbx_report::export::write_result(&result_path, &running_result(&cfg, kind, started))
        .context("writing the result")?;
    if human && kind == TestKind::SoftRecovery {
        errln!(
            "Soft Recovery test: {} log files per database generated by {} mailboxes x {} IOPS, then replayed; {} database(s) of {} MiB, {} sessions",
            cfg.log_files_to_replay,
            num(p.mailboxes as f64, 0),
            p.iops_per_mailbox,
            p.databases,
            num(data_pages as f64 / 32.0, 0),
            cfg.sessions(),
        );
        errln!("Results: {}", dir.display());
    } else if human && !matches!(kind, TestKind::Performance | TestKind::Stress) {
        errln!(
            "{} test: {} database(s) of {} MiB{}",
            capitalize(kind.name()),
            p.databases,
            num(data_pages as f64 / 32.0, 0),
            if from_headers.is_some() {
                " (the size of the existing databases, from their headers)"
            } else {
                ""
            }
        );
        errln!("Results: {}", dir.display());
    } else if let (true, Some(s)) = (human, &sized) {
        errln!(
            "{} test, disk subsystem throughput: {} database(s) of {} MiB ({}% of {} MiB free, 25% reserved for growth{}); first the maximum transactional IOPS (steps of {}), then {}% of it for {}{}",
            capitalize(kind.name()),
            p.databases,
            num(data_pages as f64 / 32.0, 0),
            mbx_config::show_number(cfg.capacity_pct),
            num((s.free_bytes >> 20) as f64, 0),
            if s.reused { "; the existing databases kept" } else { "" },
            fmt_secs(cfg.tuning.step_for(cfg.duration_s)),
            mbx_config::show_number(cfg.throughput_pct),
            fmt_secs(cfg.duration_s),
            if kind == TestKind::Stress {
                ", then a checksum of every page"
            } else {
                ""
            }
        );
        errln!("Results: {}", dir.display());
    } else if human {
        errln!(
            "{} test: {} mailboxes x {} IOPS = {} IOPS target, {} database(s) of {} MiB, {} cop{}, {}, {} measured{}",
            capitalize(kind.name()),
            num(p.mailboxes as f64, 0),
            p.iops_per_mailbox,
            num(cfg.target_iops(), 1),
            p.databases,
            num(data_pages as f64 / 32.0, 0),
            p.copies_per_database,
            if p.copies_per_database == 1 { "y" } else { "ies" },
            if mbx_engine::tunes(&cfg, &plan_for(&cfg)) {
                format!(
                    "sessions tuned first (steps of {})",
                    mbx_engine::step_secs(mbx_engine::tune::step_length(&cfg).step_s)
                )
            } else {
                format!("{} sessions", cfg.sessions())
            },
            fmt_secs(cfg.duration_s),
            if kind == TestKind::Stress {
                ", then a checksum of every page"
            } else {
                ""
            }
        );
        errln!("Results: {}", dir.display());
    }
    let create = create_params(args, &cfg, data_pages);
    // The fast subset of `mbxstress doctor` (about a second): recorded, never a verdict.
    let doctor = super::doctor::inspect(&cfg, &specs, &create, super::doctor::ProbePlan::FAST);
    super::doctor::announce(&doctor, &args.progress);
    let Executed { mut result, error } = match &sized {
        Some(s) => mbx_engine::execute_throughput(
            &cfg,
            &plan,
            throughput_spec(args, &cfg),
            mbx_engine::throughput::Sized {
                free_bytes: s.free_bytes,
                database_bytes: s.database_bytes,
            },
            &specs,
            &create,
            &mut observer,
            cancel,
        ),
        None => mbx_engine::execute(&cfg, &plan, &specs, &create, &mut observer, cancel, None),
    };
    result.doctor = Some(doctor);
    observer.finish_preparing();
    observer.clear_status();
    let error = error.map(into_anyhow);
    // result.json replaces the one written as the test started (atomically and durably), then
    // the report from the files on disk through the exporters.
    let written =
        mbx_report::export::write_result(&result_path, &result).context("writing the result");
    for e in &observer.errors {
        errln!("warning: {e}");
    }
    drop(lock);
    if let Err(write_err) = written {
        // Nothing else to keep the figures in: say so loudly, with the original error if any.
        return Err(match error {
            Some(e) => e.context(format!("{write_err:#}")),
            None => write_err,
        });
    }
    // The report is a convenience on top of result.json: a failure to write it is a warning.
    let measured = !result.instances.is_empty()
        || !result.sections.is_empty()
        || result.tuning.is_some()
        || result.throughput.is_some();
    let report = if !measured {
        None
    } else {
        match mbx_report::write_report(&dir, None) {
            Ok(files) => files.into_iter().next(),
            Err(e) => {
                errln!("warning: could not write the HTML report: {e}");
                None
            }
        }
    };
    if args.progress == "jsonl" {
        for e in &result.errors {
            outln!("{}", serde_json::json!({ "event": "error", "error": e }))?;
        }
    }
    match args.progress.as_str() {
        "jsonl" => outln!(
            "{}",
            serde_json::json!({
                "event": "result",
                "path": result_path,
                "pass": result.verdict.pass(),
                "verdict": result.verdict.state().name(),
                "stopped": result.stopped,
            })
        )?,
        // Soft Recovery's and Stress's summaries are the performance one's, plus their rows.
        _ if !result.sections.is_empty()
            && !matches!(kind, TestKind::SoftRecovery | TestKind::Stress) =>
        {
            print_pass_summary(&result, &result_path, report.as_deref())
                .context("writing the summary to stdout")?
        }
        _ if result.instances.is_empty()
            && result.tuning.is_none()
            && result.throughput.is_none() =>
        {
            errln!("Result (nothing measured): {}", result_path.display())
        }
        _ => print_summary(&result, &result_path, report.as_deref())
            .context("writing the summary to stdout")?,
    }
    if let Some(e) = error {
        return Err(e);
    }
    let code = match result.stopped.reason {
        StopReason::Interrupted => ExitCode::from(crate::interrupt::INTERRUPTED),
        StopReason::Completed => ExitCode::SUCCESS,
        StopReason::VerdictFailed => ExitCode::from(1),
        StopReason::IoError
        | StopReason::IntegrityError
        | StopReason::Error
        | StopReason::Running => {
            errln!("error: the test stopped: {}", result.stopped.message);
            ExitCode::from(crate::exit::RUNTIME)
        }
    };
    Ok(Ran {
        code,
        reason: result.stopped.reason,
        pass: result.verdict.pass(),
    })
}

/// The result written as a test starts: nothing measured, `stopped.reason` "running". The end
/// of the test replaces it; read after the test, it says the process never finished it.
fn running_result(cfg: &RunConfig, kind: TestKind, started: std::time::SystemTime) -> RunResult {
    let mut r = mbx_engine::unmeasured_result(
        cfg,
        started,
        mbx_engine::result::Stopped::new(
            StopReason::Running,
            "the test has not finished: this file is written as the test starts and replaced as it ends; read after the test, it means the process never finished it (killed, out of memory, power lost) and nothing was measured",
        ),
    );
    r.test.test_type = kind;
    r
}

/// A test refused before it started (`e`): unless the user fixes it with flags (exit 2, which
/// creates nothing: a usage error, or the databases in use by another command), the results
/// folder gets a result.json that says why (`stopped.reason` "error", the message, and the
/// error's path and errno in `errors[]`). Returns `e` (a result.json that cannot be written is
/// a warning).
fn refused(
    dir: &Path,
    cfg: &RunConfig,
    kind: TestKind,
    started: std::time::SystemTime,
    e: anyhow::Error,
) -> anyhow::Error {
    if crate::exit::code_for(&e) == ExitCode::from(crate::exit::USAGE) {
        return e;
    }
    let message = format!("{e:#}");
    let mut r = mbx_engine::unmeasured_result(
        cfg,
        started,
        mbx_engine::result::Stopped::new(
            StopReason::Error,
            format!("the test did not start: {message}"),
        )
        .in_phase("prepare"),
    );
    r.test.test_type = kind;
    let io = e
        .chain()
        .find_map(|c| match c.downcast_ref::<mbx_store::StoreError>() {
            Some(mbx_store::StoreError::Io(io)) => Some(io),
            _ => c.downcast_ref::<mbx_io::IoError>(),
        });
    if let Some(mbx_io::IoError::Os { path, error, .. }) = io {
        r.errors.push(mbx_engine::result::ErrorEntry {
            class: "error".into(),
            path: Some(path.display().to_string()),
            volume: mbx_io::platform::volume_of(path),
            errno: error.raw_os_error(),
            count: 1,
            first_at: mbx_engine::rfc3339_now(),
            message,
            ..Default::default()
        });
    }
    let path = dir.join("result.json");
    let written = fs_err::create_dir_all(dir)
        .map_err(anyhow::Error::new)
        .and_then(|()| Ok(mbx_report::export::write_result(&path, &r)?));
    if let Err(w) = written {
        errln!("warning: no result.json could be written: {w:#}");
    }
    e
}

/// The engine's error as the exit code classification expects it: a store or I/O error as
/// itself (a transparent wrapper hides it from the error chain).
fn into_anyhow(e: mbx_engine::EngineError) -> anyhow::Error {
    use mbx_engine::EngineError;
    match e {
        EngineError::Store(s) => anyhow::Error::new(s),
        EngineError::Io(io) => anyhow::Error::new(io),
        other => anyhow::Error::new(other),
    }
}

/// The summary of a Backup or Checksum run: the verdict, then Jetstress's table.
fn print_pass_summary(r: &RunResult, path: &Path, report: Option<&Path>) -> std::io::Result<()> {
    outln!()?;
    outln!(
        "{} | {} test | {}{}",
        r.verdict.state().headline(),
        r.test.test_type,
        fmt_secs(r.test.duration_s),
        stop_note(r)
    )?;
    print_stop(r)?;
    print_checks(r)?;
    let s = &r.sections;
    if !s.backup.is_empty() {
        outln!(
            "  {:<22} {:>14} {:>12} {:>10}",
            "instance",
            "database MB",
            "elapsed s",
            "MB/s"
        )?;
        for b in &s.backup {
            outln!(
                "  {:<22} {:>14.1} {:>12.3} {:>10.1}",
                b.instance,
                b.database_size_mb,
                b.elapsed_s,
                b.mb_per_s
            )?;
        }
        if let (Some(avg), Some(sum)) = (s.backup_avg_mb_per_s, s.backup_sum_mb_per_s) {
            outln!("  {:<22} {:>14} {:>12} {:>10.1}", "Avg", "", "", avg)?;
            outln!("  {:<22} {:>14} {:>12} {:>10.1}", "Sum", "", "", sum)?;
        }
    }
    if !s.checksum.is_empty() {
        print_checksum(&s.checksum)?;
    }
    print_errors(r)?;
    outln!("Result: {}", path.display())?;
    if let Some(p) = report {
        outln!("Report: {}", p.display())?;
    }
    Ok(())
}

/// The checksum table: one row per database file and log folder.
fn print_checksum(rows: &[mbx_engine::result::ChecksumRow]) -> std::io::Result<()> {
    outln!(
        "  {:<40} {:>10} {:>8} {:>8} {:>8} {:>10}",
        "file",
        "seen",
        "bad",
        "correct.",
        "wrong #",
        "MB/s"
    )?;
    for c in rows {
        outln!(
            "  {:<40} {:>10} {:>8} {:>8} {:>8} {:>10.1}",
            c.database_path,
            c.seen_pages,
            c.bad_pages,
            c.correctable_pages,
            c.wrong_page_number_pages,
            c.mb_per_s()
        )?;
    }
    Ok(())
}

/// Automatic tuning's steps, one line each, and what it chose.
fn print_tuning(t: &mbx_engine::result::Tuning) -> std::io::Result<()> {
    match t.sessions {
        Some(n) => outln!(
            "  automatic tuning: {n} sessions, chosen in {} steps ({})",
            t.steps.len(),
            fmt_secs(t.elapsed_s)
        )?,
        None => outln!(
            "  automatic tuning: no session count chosen ({}) after {} steps ({})",
            t.end,
            t.steps.len(),
            fmt_secs(t.elapsed_s)
        )?,
    }
    print_steps(&t.steps)
}

/// The throughput search's budgets: find-max's (12 steps, 4 h), unless the --config file sets
/// `tuning.max_steps` or `tuning.max_s` (the search is this test category's tuning).
fn throughput_spec(args: &RunArgs, cfg: &RunConfig) -> mbx_engine::findmax::FindMaxSpec {
    let set = |key: &str| args.config.as_deref().is_some_and(|p| config_sets(p, key));
    let d = mbx_engine::findmax::FindMaxSpec::default();
    mbx_engine::findmax::FindMaxSpec {
        max_steps: if set("tuning.max_steps") {
            cfg.tuning.max_steps as usize
        } else {
            d.max_steps
        },
        max_s: if set("tuning.max_s") {
            cfg.tuning.max_s
        } else {
            d.max_s
        },
        ..d
    }
}

/// The disk subsystem throughput test: the sizing, the maximum found, the target held, and the
/// search's steps.
fn print_throughput(t: &mbx_engine::result::Throughput) -> std::io::Result<()> {
    outln!(
        "  disk subsystem throughput: databases of {} MiB in all from {}% of {} MiB free (25% reserved for growth)",
        num((t.database_bytes >> 20) as f64, 0),
        mbx_config::show_number(t.capacity_pct),
        num((t.free_bytes >> 20) as f64, 0)
    )?;
    match (t.max_iops, t.held_iops) {
        (Some(max), Some(held)) => outln!(
            "  maximum found: {} transactional IOPS ({}, {} steps, {}); held target: {}% of it = {} IOPS with {} sessions",
            num(max, 0),
            t.end,
            t.steps.len(),
            fmt_secs(t.elapsed_s),
            mbx_config::show_number(t.throughput_pct),
            num(held, 1),
            t.sessions.unwrap_or(0)
        )?,
        _ => outln!(
            "  maximum found: none: no target passed every threshold ({}, {} steps)",
            t.end,
            t.steps.len()
        )?,
    }
    print_steps(&t.steps)
}

/// A search's steps (tuning, the throughput search), one line each.
fn print_steps(steps: &[mbx_engine::result::SearchStep]) -> std::io::Result<()> {
    outln!(
        "    {:>8} {:>10} {:>10} {:>9} {:>9} {:>9}  result",
        "sessions",
        "target",
        "IOPS",
        "read ms",
        "read p99",
        "log ms"
    )?;
    for s in steps {
        let result = if s.kept_up {
            format!(
                "pass (short within the counting error, {:.1} IOPS over {} transactions; the sessions kept up)",
                s.counting_error_iops().unwrap_or(0.0),
                s.transactions
            )
        } else if s.pass {
            if s.recheck {
                "pass (re-check)".to_string()
            } else {
                "pass".to_string()
            }
        } else {
            let again = if s.recheck { " (re-check)" } else { "" };
            format!("fail{again}: {}", s.failed_checks.join(", "))
        };
        outln!(
            "    {:>8} {:>10} {:>10} {:>9.2} {:>9.2} {:>9.2}  {result}",
            s.sessions,
            num(s.target_iops, 1),
            num(s.achieved_iops, 1),
            s.db_read_avg_ms,
            s.db_read_p99_ms,
            s.log_write_avg_ms,
        )?;
    }
    Ok(())
}

fn print_summary(r: &RunResult, path: &Path, report: Option<&Path>) -> std::io::Result<()> {
    outln!()?;
    let state = r.verdict.state().headline();
    // Nothing measured (the test did not run, or stopped before its measured phase): no figure
    // of it is shown, not even as 0.
    let nothing = r.instances.is_empty() || r.test.duration_s <= 0.0;
    if r.test.test_type == TestKind::SoftRecovery {
        outln!(
            "{state} | soft recovery: {} of {} database(s) replayed | replay took {:.3} s{}",
            r.sections.soft_recovery.len(),
            r.instances.len(),
            r.test.duration_s,
            stop_note(r)
        )?;
    } else if nothing {
        outln!(
            "{state} | nothing measured of {} target IOPS{}",
            num(r.target_iops, 1),
            stop_note(r)
        )?;
    } else {
        outln!(
            "{state} | achieved {} IOPS of {} target | measured {}{}",
            num(r.achieved_iops, 1),
            num(r.target_iops, 1),
            fmt_secs(r.test.duration_s),
            stop_note(r)
        )?;
    }
    print_stop(r)?;
    super::doctor::print_write_through(r)?;
    if let Some(t) = &r.tuning {
        print_tuning(t)?;
    }
    if let Some(t) = &r.throughput {
        print_throughput(t)?;
    }
    print_checks(r)?;
    if nothing && r.test.test_type != TestKind::SoftRecovery {
        print_errors(r)?;
        outln!("Result: {}", path.display())?;
        if let Some(p) = report {
            outln!("Report: {}", p.display())?;
        }
        return Ok(());
    }
    outln!(
        "  {:<22} {:>9} {:>9} {:>9} {:>9} {:>9} {:>9} {:>9}",
        "instance",
        "reads/s",
        "writes/s",
        "read ms",
        "read p99",
        "log w/s",
        "log ms",
        "bdm r/s"
    )?;
    for i in &r.instances {
        let t = &i.transactional;
        outln!(
            "  {:<22} {:>9.1} {:>9.1} {:>9.2} {:>9.2} {:>9.1} {:>9.2} {:>9.1}",
            i.name,
            t.db_reads_per_s,
            t.db_writes_per_s,
            t.db_read_avg_latency_ms,
            i.latency_ms.db_read.p99,
            t.log_writes_per_s,
            t.log_write_avg_latency_ms,
            i.bdm.reads_per_s
        )?;
    }
    print_latency_tolerance(r)?;
    print_pacing(r)?;
    print_shutdown(r)?;
    if !r.sections.soft_recovery.is_empty() {
        print_soft_recovery(r)?;
    }
    // Stress: the checksum pass that followed the workload.
    if !r.sections.checksum.is_empty() {
        print_checksum(&r.sections.checksum)?;
    }
    print_errors(r)?;
    outln!("Result: {}", path.display())?;
    if let Some(p) = report {
        outln!("Report: {}", p.display())?;
    }
    Ok(())
}

/// The headline's note on how the test stopped, when it did not run its course: "(interrupted
/// in the measure phase)", "(stopped: integrity error in the attain phase)".
fn stop_note(r: &RunResult) -> String {
    let s = &r.stopped;
    let phase = s
        .phase
        .as_deref()
        .map(|p| format!(" in the {p} phase"))
        .unwrap_or_default();
    match s.reason {
        StopReason::Completed | StopReason::VerdictFailed => String::new(),
        StopReason::Interrupted => format!(" (interrupted{phase})"),
        other => format!(" (stopped: {}{phase})", other.name().replace('_', " ")),
    }
}

/// Why the test stopped, in words, when it did not simply pass (nothing for a pass).
fn print_stop(r: &RunResult) -> std::io::Result<()> {
    if r.stopped.reason == StopReason::Completed || r.stopped.message.is_empty() {
        return Ok(());
    }
    outln!("  {}", r.stopped.message)
}

/// The verdict's checks: value, limit and state; a check that judged nothing shows "-" and
/// "not judged" with its reason, never a value that passes.
fn print_checks(r: &RunResult) -> std::io::Result<()> {
    outln!("  {:<32} {:>12} {:>12}  result", "check", "value", "limit")?;
    for c in r.verdict.checks() {
        let value = match c.state() {
            mbx_engine::result::CheckState::NotJudged => "-".to_string(),
            _ => format!("{:.3}", c.value),
        };
        let state = match c.reason() {
            Some(why) => format!("{}: {why}", c.state().label()),
            None => c.state().label().to_string(),
        };
        outln!("  {:<32} {:>12} {:>12.3}  {state}", c.name, value, c.limit)?;
    }
    Ok(())
}

/// The maximum-latency checks in full: the judged value with its tolerance, and the strict
/// figures (nothing for results without them).
fn print_latency_tolerance(r: &RunResult) -> std::io::Result<()> {
    let Some(m) = &r.max_latency else {
        return Ok(());
    };
    outln!(
        "  maximum latency, {} sample(s) over the limit tolerated per instance (--max-latency-errors):",
        m.max_latency_errors
    )?;
    for (name, x) in [("db read", &m.db_read), ("log write", &m.log_write)] {
        let judged = if x.judged {
            format!("judged {:.2} ms", x.tolerated_ms)
        } else {
            format!(
                "not judged ({} sample(s), {} tolerated)",
                x.samples, m.max_latency_errors
            )
        };
        outln!(
            "    {name:<10} {judged} (limit {:.0}) | samples over {} | strict: sample max {:.2} ms, slowest I/O {:.2} ms",
            x.limit_ms,
            x.samples_over,
            x.sample_max_ms,
            x.per_io_max_ms
        )?;
        if x.incomplete_at_end > 0 {
            outln!(
                "    {:<10} in flight when measuring ended: {} I/O(s), {:.2} ms average (judged, no tolerance), slowest {:.2} ms",
                "",
                x.incomplete_at_end,
                x.incomplete_avg_ms,
                x.incomplete_max_ms
            )?;
        }
    }
    Ok(())
}

/// How long shutdown took (nothing for results without it).
fn print_shutdown(r: &RunResult) -> std::io::Result<()> {
    if let Some(s) = r.test.shutdown_s {
        outln!("  shutdown took {s:.2} s")?;
    }
    Ok(())
}

/// How transactions were started and what they waited (nothing for results without it).
fn print_pacing(r: &RunResult) -> std::io::Result<()> {
    let Some(p) = &r.pacing else {
        return Ok(());
    };
    let mode = match p.arrivals {
        Some(a) => format!("{} loop, {a} arrivals", p.mode),
        None => format!("{} loop", p.mode),
    };
    outln!(
        "  pacing: {mode} | transactions due {}, started {}, late (> {} ms) {}, dropped {} | backlog max {}",
        p.transactions_arrived,
        p.transactions_started,
        num(p.late_threshold_ms, 0),
        p.transactions_late,
        p.transactions_dropped,
        p.backlog_max
    )?;
    outln!(
        "  {:<22} {:>9} {:>9} {:>9} {:>9} {:>9} {:>9}",
        "transaction latency",
        "avg ms",
        "p50",
        "p90",
        "p99",
        "p99.9",
        "max"
    )?;
    for (name, x) in [
        ("from submission", &p.transaction_latency_ms),
        ("from arrival", &p.latency_from_arrival_ms),
    ] {
        outln!(
            "  {name:<22} {:>9.2} {:>9.2} {:>9.2} {:>9.2} {:>9.2} {:>9.2}",
            x.avg,
            x.p50,
            x.p90,
            x.p99,
            x.p999,
            x.max
        )?;
    }
    if p.transactions_dropped > 0 {
        outln!(
            "  note: {} transaction(s) were dropped: the storage (or the sessions) fell behind the arrivals by more than {}",
            p.transactions_dropped,
            match p.mode {
                mbx_config::Pacing::Open => format!("{} s (--max-backlog)", num(r.config.max_backlog_s, 3)),
                mbx_config::Pacing::Closed => "1 s".to_string(),
            }
        )?;
    }
    Ok(())
}

/// The errors met, counted per instance and class (nothing when there were none), then the
/// first few entries.
fn print_errors(r: &RunResult) -> std::io::Result<()> {
    if r.errors.is_empty() {
        return Ok(());
    }
    let mut table: Vec<(String, String, u64)> = Vec::new();
    for e in &r.errors {
        let who = e.instance.clone().unwrap_or_else(|| "-".into());
        match table.iter_mut().find(|t| t.0 == who && t.1 == e.class) {
            Some(t) => t.2 = t.2.saturating_add(e.count),
            None => table.push((who, e.class.clone(), e.count)),
        }
    }
    outln!(
        "  {:<22} {:<22} {:>9}",
        "errors: instance",
        "class",
        "count"
    )?;
    for (who, class, count) in &table {
        outln!("  {who:<22} {class:<22} {count:>9}")?;
    }
    for e in r.errors.iter().take(5) {
        outln!("  {}: {}", e.class, e.message)?;
    }
    if r.errors.len() > 5 {
        outln!("  ... {} more in result.json", r.errors.len() - 5)?;
    }
    Ok(())
}

/// The Soft Recovery rows, their Avg and Sum, and seconds per log.
fn print_soft_recovery(r: &RunResult) -> std::io::Result<()> {
    let rows = &r.sections.soft_recovery;
    outln!(
        "  {:<22} {:>19} {:>15}",
        "soft recovery",
        "log files replayed",
        "elapsed s"
    )?;
    for row in rows {
        outln!(
            "  {:<22} {:>19} {:>15.3}",
            row.instance,
            row.log_files_replayed,
            row.elapsed_s
        )?;
    }
    if let Some((logs, secs)) = mbx_engine::result::SoftRecoveryRow::averages(rows) {
        let n = rows.len() as f64;
        outln!("  {:<22} {:>19.3} {:>15.3}", "Avg", logs, secs)?;
        outln!("  {:<22} {:>19.0} {:>15.3}", "Sum", logs * n, secs * n)?;
    }
    if let Some(s) = r.sections.seconds_per_log {
        outln!("  seconds per log: {s:.3}")?;
    }
    Ok(())
}

#[cfg(test)]
mod resolve_tests {
    use super::*;
    use clap::{CommandFactory, Parser};

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

    #[test]
    fn every_mapped_flag_exists() {
        let flags = run_flags();
        for (key, flag, _) in KEY_FLAGS {
            assert!(
                flags.iter().any(|f| f == flag),
                "{key} -> {flag} is not a run flag"
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
        for extra in [
            &[][..],
            &["--config", "no-such.toml"][..],
            &["--profile", "p.toml"][..],
            &["--mailboxes", "5", "--duration", "9s", "--buffered"][..],
        ] {
            let a = args(extra);
            for key in &keys {
                let msg = describe_invalid(key, "reason", &a);
                for word in msg.split(|c: char| !(c.is_ascii_alphanumeric() || "-._".contains(c))) {
                    if let Some(rest) = word.strip_prefix("--") {
                        let flag = format!("--{}", rest.trim_end_matches('.'));
                        assert!(flags.contains(&flag), "{key}: {msg}");
                    }
                }
                if !KEY_FLAGS.iter().any(|(k, _, _)| k == key) {
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
        assert_eq!(fmt_secs(0.994), "0.994s");
        assert_eq!(fmt_secs(2.000089), "2s");
        assert_eq!(fmt_secs(12.5), "12.5s");
        assert_eq!(fmt_secs(0.0), "0s");
        assert_eq!(fmt_secs(90.4), "1m30s");
        assert_eq!(fmt_secs(7200.0), "2h00m00s");
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
        let msg = describe_invalid("duration_s", "r", &args(&["--duration", "9s"]));
        assert_eq!(msg, "invalid --duration: r");
        let msg = describe_invalid("thresholds.db_read_avg_ms", "r", &args(&[]));
        assert!(msg.starts_with("invalid `thresholds.db_read_avg_ms` (the built-in default)"));
        assert!(msg.ends_with("in a --config FILE"), "{msg}");
        let msg = describe_invalid("mailboxes", "r", &args(&["--profile", "p.toml"]));
        assert!(msg.contains("`mailboxes` in --profile p.toml"), "{msg}");
        assert!(msg.contains("--mailboxes"), "{msg}");
    }
}
