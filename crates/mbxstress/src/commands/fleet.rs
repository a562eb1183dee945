//! `mbxstress fleet run`: the flags, the rendering and the exit code. The coordinator (hosts
//! file, checks, remote protocol, the host state machine, fleet.json and fleet.html) is
//! `mbx_app::fleet`.

use std::process::ExitCode;
use std::sync::atomic::AtomicBool;
use std::sync::Arc;
use std::time::{Duration, Instant};

use anyhow::{anyhow, Context};

use mbx_app::fleet::plan::{refuse_flags, FleetCommand, GivenFlags};
use mbx_app::fleet::{self, FleetError, FleetRequest, FleetView, HostRun, Notice, Ran, State};
use mbx_app::Line;

use crate::cli::{FleetArgs, FleetLoadgenArgs, FleetRunArgs, RunTest};
use crate::exit::usage;

/// A library error as the binary's: a usage error exits 2.
fn lift(e: FleetError) -> anyhow::Error {
    match e {
        FleetError::Usage(m) => usage(m),
        FleetError::Failed(m) => anyhow!(m),
    }
}

/// `mbxstress fleet run`.
pub fn run(args: FleetRunArgs) -> anyhow::Result<ExitCode> {
    let r = &args.run;
    // Flags that differ per host, that fleet run sets itself, or that no host's run takes.
    refuse_flags(
        FleetCommand::Run,
        GivenFlags {
            paths: !r.paths.db_path.is_empty() || !r.paths.log_path.is_empty(),
            jetstress_config: r.jetstress.jetstress_config.is_some(),
            start_gate: r.start_gate.is_some(),
            request: r.request.is_some(),
            map_path: !r.jetstress.map_path.is_empty(),
            stress_duration: r.stress_duration.is_some(),
            suite: matches!(r.test, Some(RunTest::Suite)),
            ..GivenFlags::default()
        },
    )
    .map_err(lift)?;
    let kind = match r.test {
        Some(RunTest::Kind(k)) => k,
        Some(RunTest::Suite) | None => mbx_config::TestKind::Performance,
    };
    // The run flags must make sense before any host is touched.
    let cfg = super::run::resolve_for(r, kind)?;
    let f = &args.fleet;
    let silence = fleet::plan::host_timeout(f.host_timeout, cfg.sample_interval_s).map_err(lift)?;
    let hosts = fleet::hosts::load(&f.hosts, &super::shared::RESULT_FILES).map_err(lift)?;
    // Each host's configuration, resolved here with its own paths and profile: its request.
    let jobs = fleet::plan::run_jobs(&hosts, kind, r.force, r.allow_device, &|| {
        super::run::sources(r)
    })
    .map_err(lift)?;
    coordinate(
        f,
        hosts,
        r.out.as_deref(),
        r.progress,
        (jobs, Vec::new()),
        silence,
        fleet::FleetJob::Run,
    )
}

/// `mbxstress fleet loadgen`.
pub fn loadgen(args: FleetLoadgenArgs) -> anyhow::Result<ExitCode> {
    // Flags that fleet loadgen sets itself for every client.
    refuse_flags(
        FleetCommand::Loadgen,
        GivenFlags {
            partition: args.run.conn.partition.is_some(),
            start_gate: args.run.start_gate.is_some(),
            request: args.run.request.is_some(),
            ..GivenFlags::default()
        },
    )
    .map_err(lift)?;
    fleet::plan::server_interval(args.server_interval).map_err(lift)?;
    // The clients' request, resolved and checked before any host is touched.
    let day = mbx_app::loadgen::request::resolve_day(&super::loadgen::day_flags(&args.run))
        .map_err(super::shared::into_anyhow)?;
    let f = &args.fleet;
    let (hosts, servers) = fleet::hosts::load_for(
        &f.hosts,
        &super::shared::RESULT_FILES,
        fleet::hosts::HostsFor::Loadgen,
    )
    .map_err(lift)?;
    // Client K's request takes slice K of the users; the password goes as a file of its own.
    let plan = fleet::plan::loadgen_jobs(&day, hosts.len()).map_err(lift)?;
    let silence = fleet::plan::host_timeout(f.host_timeout, args.run.sample_interval.as_secs_f64())
        .map_err(lift)?;
    coordinate(
        f,
        hosts,
        args.run.conn.out.as_deref(),
        args.run.conn.progress,
        plan,
        silence,
        fleet::FleetJob::Loadgen {
            servers,
            server_interval: args.server_interval,
        },
    )
}

/// The checks, the runs, the summary and the exit code of every fleet command.
fn coordinate(
    f: &FleetArgs,
    hosts: Vec<fleet::hosts::Host>,
    out: Option<&std::path::Path>,
    progress: crate::cli::ProgressMode,
    (jobs, uploads): (Vec<mbx_app::request::HostJob>, fleet::plan::Uploads),
    silence: Duration,
    job: fleet::FleetJob,
) -> anyhow::Result<ExitCode> {
    fleet::plan::start_margin(f.start_margin).map_err(lift)?;
    // The binary --push copies, found and verified before any host or --out is touched.
    let push = if f.push || f.push_binary.is_some() {
        Some(fleet::find_push_binary(f.push_binary.as_deref()).map_err(lift)?)
    } else {
        None
    };
    let out = super::shared::results_dir(out)?;
    fs_err::create_dir_all(&out).context("creating the results folder")?;
    let human = progress == crate::cli::ProgressMode::Human;
    if let Some(moved) = fleet::summary::set_aside_unfinished(&out, &hosts).map_err(lift)? {
        if human {
            errln!(
                "--out {}: the earlier, unfinished fleet run's results were moved to {}",
                out.display(),
                moved.display()
            );
        }
    }
    let run_id = format!(
        "fleet-{}-{}",
        mbx_engine::rfc3339_now().replace(':', ""),
        std::process::id()
    );
    // Ctrl-C, SIGTERM: the first stops every host cleanly, the second stops waiting for them.
    let runs_started = Arc::new(AtomicBool::new(false));
    let presses = crate::interrupt::install_counting(Arc::clone(&runs_started));
    let loadgen = matches!(job, fleet::FleetJob::Loadgen { .. });
    let req = FleetRequest {
        hosts,
        ssh: fleet::ssh::Ssh {
            config: f.ssh_config.clone(),
        },
        push,
        fanout: usize::try_from(f.fanout).unwrap_or(1),
        out: out.clone(),
        run_id,
        jobs,
        uploads,
        config: fleet::Config {
            host_timeout: silence,
            start_margin: f.start_margin,
            abort_on_host_failure: f.abort_on_host_failure,
        },
        job,
    };
    let mut view = Terminal {
        human,
        json_out: progress == crate::cli::ProgressMode::Jsonl,
        drawn: 0,
        last_draw: Instant::now(),
        loadgen,
    };
    let ran = fleet::run(req, &mut view, &presses, &runs_started);
    if human {
        view.clear();
    }
    let (summary, partial, interrupted, all_passed, merged) = match ran.map_err(lift)? {
        Ran::NotStarted => {
            errln!("interrupted during the checks: nothing was started");
            return Ok(ExitCode::from(crate::interrupt::INTERRUPTED));
        }
        Ran::Finished {
            summary,
            partial,
            interrupted,
            all_passed,
            merged,
        } => (summary, partial, interrupted, all_passed, merged),
    };
    if !view.json_out {
        let mut text = String::new();
        match &merged {
            Some(m) => text.push_str(&merged_text(m)),
            None => text.push_str(&super::esrp::text(&summary.esrp)),
        }
        for h in &summary.hosts {
            text.push_str(&format!(
                "{:<16} {}{}{}\n",
                h.name,
                h.state,
                h.message
                    .as_deref()
                    .map(|m| format!(": {m}"))
                    .unwrap_or_default(),
                h.excluded
                    .as_deref()
                    .map(|m| format!(" ({m})"))
                    .unwrap_or_default()
            ));
        }
        if let Some(s) = summary.skew_ms {
            text.push_str(&format!(
                "start skew across hosts: {s:.1} ms ({}, clock offsets corrected)\n",
                if merged.is_some() {
                    "the clients' day starts"
                } else {
                    "measured windows"
                }
            ));
        }
        text.push_str(&format!(
            "{}Fleet report: {}\n",
            if partial {
                "PARTIAL (a host failed or the run was interrupted). "
            } else {
                ""
            },
            out.join("fleet.html").display()
        ));
        outln!("{text}").context("writing the summary to stdout")?;
    }
    // An interrupted run is partial, and "every host passed" is what each host's row says.
    debug_assert!(!interrupted || partial);
    debug_assert!(!all_passed || summary.hosts.iter().all(|h| h.state == "passed"));
    // As documented: interrupted 130; partial (a host failed, was stopped or interrupted on its
    // side, or has no result) 3; every host passed 0; else a verdict failed, 1.
    let code = if interrupted {
        ExitCode::from(crate::interrupt::INTERRUPTED)
    } else if partial {
        ExitCode::from(crate::exit::RUNTIME)
    } else if all_passed {
        ExitCode::SUCCESS
    } else {
        ExitCode::from(1)
    };
    Ok(code)
}

/// The merged loadgen result in a few lines: the clients' sum and the verdict.
fn merged_text(m: &fleet::Merged) -> String {
    let r = &m.result;
    let mut t = format!(
        "{} | merged loadgen result of {} client(s): {} of {} tasks completed, {} failed",
        r.verdict.state().name().to_uppercase(),
        r.clients.iter().filter(|c| c.merged).count(),
        r.tasks_completed,
        r.tasks_planned,
        r.tasks_failed
    );
    if let Some(d) = &r.delivery {
        t.push_str(&format!(
            "; {} of {} copies delivered, {} lost, {} corrupted; delivery p95 {:.0} ms",
            d.delivered, d.expected, d.lost, d.corrupted, d.latency_ms.p95
        ));
    }
    t.push('\n');
    for c in r.verdict.failed() {
        t.push_str(&format!(
            "  failed: {} = {:.1} (limit {:.1})\n",
            c.name, c.value, c.limit
        ));
    }
    for s in &r.servers {
        t.push_str(&format!(
            "server {:<16} CPU {:.0}% avg, {:.0}% max | disk r/w {:.0}/{:.0} IOPS{}\n",
            s.name,
            s.cpu_pct_avg,
            s.cpu_pct_max,
            s.disk_read_iops_avg,
            s.disk_write_iops_avg,
            s.error
                .as_deref()
                .map(|e| format!(" ({e})"))
                .unwrap_or_default()
        ));
    }
    t.push_str(&format!("Result: {}\n", m.path.display()));
    if let Some(p) = &m.report {
        t.push_str(&format!("Report: {}\n", p.display()));
    }
    t
}

/// The terminal: `--progress jsonl` lines on stdout, or words and a live table on stderr.
struct Terminal {
    human: bool,
    json_out: bool,
    /// Lines of the live table on screen (redrawn in place on a terminal).
    drawn: usize,
    last_draw: Instant,
    /// `fleet loadgen`: clients (tasks and users), not storage hosts (IOPS).
    loadgen: bool,
}

impl Terminal {
    fn clear(&mut self) {
        if self.drawn > 0 {
            errp!("\x1b[{}A\x1b[J", self.drawn);
            self.drawn = 0;
        }
    }
}

impl FleetView for Terminal {
    fn line(&mut self, line: &Line) {
        if self.json_out {
            let _ = outln!("{}", line.to_json());
        }
    }

    fn notice(&mut self, n: &Notice) {
        let human = self.human;
        if human {
            self.clear();
        }
        match n {
            Notice::Checking { hosts, at_once } if human => errln!(
                "Checking {hosts} host(s) ({at_once} at once): reachable, version, clock{} ...",
                if self.loadgen { "" } else { ", doctor" }
            ),
            Notice::Checked { host, checked: c } if human => errln!(
                "  {host:<16} ok: clock offset {:+.1} ms (round trip {:.1} ms){}{}",
                c.offset_s * 1e3,
                c.rtt_s * 1e3,
                match &c.doctor {
                    Some(_) => format!(", doctor {:.1} s", c.doctor_s),
                    None => String::new(),
                },
                match (c.pushed, c.push_reused) {
                    (true, false) => ", binary pushed and verified",
                    (true, true) => ", pushed binary already there (verified)",
                    _ => "",
                }
            ),
            Notice::Finding { host, check: f } => errln!(
                "host {host}: doctor: {} {} {}: {}",
                f.status.name(),
                f.name,
                f.subject,
                f.fact
            ),
            Notice::CheckFailed { host, error } => errln!("  {host:<16} FAILED: {error}"),
            Notice::AllReady { hosts, margin_s } if human => errln!(
                "All {hosts} host(s) ready: {} starts in {margin_s:.1} s",
                if self.loadgen {
                    "the simulated day"
                } else {
                    "measuring"
                }
            ),
            Notice::Watching {
                server,
                ssh,
                every_s,
            } if human => errln!(
                "Watching mail server {server} ({ssh}) every {every_s:.0} s: CPU, memory, disks from /proc"
            ),
            Notice::Stopping if human => {
                errln!("stopping every host's run (partial results are kept) ...")
            }
            Notice::HostState { host, text } if human => errln!("{host}: {text}"),
            Notice::CollectError { host, error } => errln!("{host}: {error}"),
            Notice::Warning(w) => errln!("warning: {w}"),
            _ => {}
        }
    }

    /// One line per host and the total: on a terminal redrawn in place every second, in a log
    /// printed every 15 s.
    fn hosts(&mut self, hosts: &[HostRun]) {
        use std::io::IsTerminal;
        let tty = std::io::stderr().is_terminal();
        let every = if tty { 1 } else { 15 };
        if !self.human || self.last_draw.elapsed() < Duration::from_secs(every) {
            return;
        }
        self.last_draw = Instant::now();
        if tty {
            self.clear();
        }
        let mut lines = Vec::new();
        let (mut iops, mut target, mut read, mut n) = (0.0, 0.0, 0.0, 0usize);
        for l in hosts {
            // `[phase, ETA 3m]`
            let at = format!(
                "[{}{}]",
                if l.phase.is_empty() {
                    "starting"
                } else {
                    &l.phase
                },
                l.eta_s
                    .map(|e| format!(", ETA {}", crate::summary::fmt_secs(e.round())))
                    .unwrap_or_default()
            );
            let what = match (&l.state, l.tasks) {
                (State::Running, Some((done, of, per_s))) => format!(
                    "{at} {done} of {of} {} | {per_s:.1}/s",
                    if l.phase == "day" || l.phase == "grace" {
                        "tasks"
                    } else {
                        "users"
                    }
                ),
                (State::Running, None) if self.loadgen => at,
                (State::Running, None) => format!(
                    "{at} IOPS {:.0} (target {:.0}) | DB read {:.2} ms",
                    l.iops, l.target, l.read_ms
                ),
                (s, _) => s.describe(),
            };
            if l.state == State::Running {
                iops += l.iops;
                target += l.target;
                read += l.read_ms;
                n += 1;
            }
            lines.push(format!("{:<16} {what}", l.name));
        }
        if self.loadgen {
            let (done, of, per_s) = hosts
                .iter()
                .filter(|h| h.state == State::Running)
                .filter_map(|h| h.tasks)
                .fold((0u64, 0u64, 0.0), |(a, b, c), (d, o, p)| {
                    (a.saturating_add(d), b.saturating_add(o), c + p)
                });
            lines.push(format!(
                "{:<16} {done} of {of} | {per_s:.1}/s (running clients)",
                "total"
            ));
        } else {
            lines.push(format!(
                "{:<16} IOPS {iops:.0} (target {target:.0}) | DB read {:.2} ms (mean of hosts)",
                "total",
                if n > 0 { read / n as f64 } else { 0.0 }
            ));
        }
        for line in &lines {
            errln!("{line}");
        }
        if tty {
            self.drawn = lines.len();
        }
    }
}
