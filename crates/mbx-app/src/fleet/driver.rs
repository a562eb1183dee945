//! The thin I/O loop of `fleet run`: checks the hosts (at most `fanout` at once), starts their
//! runs, feeds the [`Coordinator`] what happens (lines, exits, collections, interrupts, time) and
//! carries out what it answers (writes to a run's input, ends an ssh, collects a host, writes
//! fleet.json, reports to the [`FleetView`]). Every decision is the coordinator's.

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::ChildStdin;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{mpsc, Arc};
use std::time::{Duration, Instant};

use mbx_result::DoctorStatus;

use super::coordinator::{Action, Checked, Config, Coordinator, HostRun, Message, Notice, Now};
use super::error::{failed, usage, Ctx, Result};
use super::hosts::Host;
use super::html;
use super::plan::{host_request, host_uploads};
use super::remote::{remote_command_for, remote_run_dir, RemoteJob, PASSWORD_FILE};
use super::ssh::{
    bounded_map, check_host, spawn_collect, spawn_run, unix_now, CollectJob, Push, Ssh, Watched,
};
use super::summary::{self, FleetSummary};
use crate::event::{Event, Line};
use crate::request::HostJob;

/// What `fleet run` is asked to do (the binary builds it from the flags).
#[derive(Debug, Clone)]
pub struct FleetRequest {
    /// The hosts, loaded and checked ([`super::hosts::load`]).
    pub hosts: Vec<Host>,
    /// The ssh client's options.
    pub ssh: Ssh,
    /// The static build to copy to hosts without this version (`--push`).
    pub push: Option<Push>,
    /// At most this many hosts checked at once (`--fanout`).
    pub fanout: usize,
    /// The results folder (made, an unfinished earlier run set aside).
    pub out: PathBuf,
    /// This run's id (the remote run folders' name).
    pub run_id: String,
    /// Each host's job, resolved ([`super::plan`]), in the hosts' order; its request sets the
    /// host's run folder.
    pub jobs: Vec<HostJob>,
    /// Files copied into every host's run folder beside its request.
    pub uploads: super::plan::Uploads,
    /// The coordinator's settings.
    pub config: Config,
    /// What the hosts run.
    pub job: FleetJob,
}

/// What a fleet's hosts run.
#[derive(Debug, Clone)]
pub enum FleetJob {
    /// `fleet run`: the storage test, and the ESRP aggregate of the results.
    Run,
    /// `fleet loadgen`: `loadgen run` on every client host, each its slice of the users; the
    /// results merged into `--out`/result.json (and report.html); the mail servers watched.
    Loadgen {
        /// The mail servers to watch over ssh (`[[server]]` tables).
        servers: Vec<super::hosts::ServerHost>,
        /// Their sampling interval.
        server_interval: Duration,
    },
}

/// How the run went.
#[derive(Debug)]
pub enum Ran {
    /// Interrupted during the checks: nothing was started.
    NotStarted,
    /// The runs took place; fleet.json is written.
    Finished {
        /// fleet.json's contents.
        summary: Box<FleetSummary>,
        /// A host failed, had no result, or the run was interrupted.
        partial: bool,
        /// The run was interrupted.
        interrupted: bool,
        /// Every host passed its verdict.
        all_passed: bool,
        /// `fleet loadgen`: the merged result.
        merged: Option<Merged>,
    },
}

/// `fleet loadgen`'s merged result, written into `--out`.
#[derive(Debug)]
pub struct Merged {
    /// The result.
    pub result: Box<mbx_result::LoadgenResult>,
    /// Its result.json.
    pub path: PathBuf,
    /// Its report.html, when written.
    pub report: Option<PathBuf>,
}

/// Where `fleet run` reports: the binary's terminal or JSON-lines renderer, a test's recorder.
pub trait FleetView {
    /// A line of the event stream (`--progress jsonl`): fleet's own events and the hosts'.
    fn line(&mut self, line: &Line);
    /// Something to tell the user.
    fn notice(&mut self, notice: &Notice);
    /// The hosts' states, several times a second while the runs go (for a live table).
    fn hosts(&mut self, hosts: &[HostRun]);
}

/// How often the loop wakes without a message (the watchdog's and the interrupts' resolution).
const POLL: Duration = Duration::from_millis(200);

/// `fleet run`: checks every host, runs the test on all of them with one synchronized start,
/// collects their results and writes fleet.json. `presses` counts the requests to stop (the
/// binary's signal handler); `runs_started` is set once remote runs exist.
pub fn run(
    req: FleetRequest,
    view: &mut dyn FleetView,
    presses: &AtomicUsize,
    runs_started: &AtomicBool,
) -> Result<Ran> {
    if req.jobs.len() != req.hosts.len() {
        return Err(failed(format!(
            "{} host job(s) for {} host(s)",
            req.jobs.len(),
            req.hosts.len()
        )));
    }
    // 1. Checks.
    let lives = check_all(&req, view)?;
    if presses.load(Ordering::SeqCst) >= 1 {
        nothing_started(&req.hosts, &req.out);
        return Ok(Ran::NotStarted);
    }
    runs_started.store(true, Ordering::SeqCst);
    let watches = start_watches(&req, view);
    let loadgen = matches!(req.job, FleetJob::Loadgen { .. });
    let remote_job = if loadgen {
        RemoteJob::Loadgen {
            password: req.uploads.iter().any(|(_, name)| name == PASSWORD_FILE),
        }
    } else {
        RemoteJob::Run
    };
    let FleetRequest {
        hosts,
        ssh,
        out,
        run_id,
        config,
        ..
    } = req;
    // 2. The runs. Each host's results are collected (copied back) as soon as its run ends,
    // and fleet.json is kept up to date from here on (partial until the end), so whatever stops
    // the coordinator, the finished hosts' results and a fleet.json are there.
    let t0 = Instant::now();
    let now = || Now {
        mono: t0.elapsed(),
        unix_s: unix_now(),
    };
    let mut coord = Coordinator::new(lives, config);
    let (tx, rx) = mpsc::channel();
    let mut io = Io {
        ssh,
        hosts,
        out,
        run_id,
        inputs: Vec::new(),
        children: Vec::new(),
        quit: Arc::new(AtomicBool::new(false)),
        tx,
        loadgen,
    };
    start_runs(&mut coord, &mut io, remote_job, &now, view);
    let mut seen_presses = 0;
    while !coord.finished() {
        let p = presses.load(Ordering::SeqCst);
        if p > seen_presses {
            seen_presses = p;
            let actions = coord.on(now(), Message::Interrupt { presses: p });
            io.carry_out(actions, &coord, view);
        }
        let msg = match rx.recv_timeout(POLL) {
            Ok(m) => m,
            Err(mpsc::RecvTimeoutError::Timeout) => Message::Tick,
            Err(mpsc::RecvTimeoutError::Disconnected) => break,
        };
        let actions = coord.on(now(), msg);
        io.carry_out(actions, &coord, view);
        view.hosts(coord.hosts());
    }
    // 3. The aggregate. An interrupt after the last collection still makes the run interrupted
    // (nothing is left to stop: the actions are moot).
    let p = presses.load(Ordering::SeqCst);
    if p > seen_presses {
        let _moot = coord.on(now(), Message::Interrupt { presses: p });
    }
    aggregate(&coord, &io, watches, view)
}

/// Nothing started: the host folders made by the checks are empty; removed, so the same command
/// can be run again into the same --out once the setup is fixed.
fn nothing_started(hosts: &[Host], out: &Path) {
    for h in hosts {
        let _ = std::fs::remove_dir(out.join(&h.name));
    }
}

/// The checks, at most `fanout` hosts at once, each host sent its request: the hosts ready to
/// run. A host that fails its checks is a setup to fix: nothing runs anywhere.
fn check_all(req: &FleetRequest, view: &mut dyn FleetView) -> Result<Vec<HostRun>> {
    let (hosts, out) = (&req.hosts, &req.out);
    let loadgen = matches!(req.job, FleetJob::Loadgen { .. });
    view.notice(&Notice::Checking {
        hosts: hosts.len(),
        at_once: req.fanout.min(hosts.len()),
    });
    let indexed: Vec<(&Host, &HostJob)> = hosts.iter().zip(&req.jobs).collect();
    let checks: Vec<Result<Checked>> = bounded_map(&indexed, req.fanout, |(h, job)| {
        let run_dir = remote_run_dir(&h.work_dir, &req.run_id, &h.name);
        let up = host_uploads(&req.uploads, &host_request(job, &run_dir))?;
        check_host(&req.ssh, h, req.push.as_ref(), &run_dir, &up, !loadgen)
    })
    .into_iter()
    .map(|c| c.unwrap_or_else(|| Err(failed("the check thread panicked"))))
    .collect();
    let mut lives = Vec::new();
    let mut failures = 0usize;
    let mut usage_error = false;
    for (h, c) in hosts.iter().zip(checks) {
        fs_err::create_dir_all(out.join(&h.name))
            .ctx(|| format!("making the results folder of host {}", h.name))?;
        match c {
            Ok(c) => {
                view.notice(&Notice::Checked {
                    host: h.name.clone(),
                    checked: Box::new(c.clone()),
                });
                // A finding never stops the run (only a capacity failure did, in the check).
                for f in c.doctor.iter().flat_map(|d| &d.checks) {
                    if matches!(f.status, DoctorStatus::Warn | DoctorStatus::Fail) {
                        view.notice(&Notice::Finding {
                            host: h.name.clone(),
                            check: f.clone(),
                        });
                    }
                }
                lives.push(HostRun::new(&h.name, &h.entry.ssh, c));
            }
            Err(e) => {
                usage_error |= e.is_usage();
                failures += 1;
                view.notice(&Notice::CheckFailed {
                    host: h.name.clone(),
                    error: e.to_string(),
                });
            }
        }
    }
    if failures > 0 {
        nothing_started(hosts, out);
        let msg = format!(
            "fleet run: {failures} of {} host(s) failed the checks (see above); nothing was started",
            hosts.len()
        );
        return Err(if usage_error { usage(msg) } else { failed(msg) });
    }
    Ok(lives)
}

/// fleet loadgen: the mail servers are watched from before the clients' baselines to the last
/// collection.
fn start_watches(req: &FleetRequest, view: &mut dyn FleetView) -> Vec<super::loadgen::Watch> {
    match &req.job {
        FleetJob::Loadgen {
            servers,
            server_interval,
        } => {
            for s in servers {
                view.notice(&Notice::Watching {
                    server: s.name.clone(),
                    ssh: s.ssh.clone(),
                    every_s: server_interval.as_secs_f64(),
                })
            }
            super::loadgen::start(&req.ssh, servers, *server_interval, &req.out)
        }
        FleetJob::Run => Vec::new(),
    }
}

/// Starts every host's run on its request, then writes the first fleet.json.
fn start_runs(
    coord: &mut Coordinator,
    io: &mut Io,
    job: RemoteJob,
    now: &dyn Fn() -> Now,
    view: &mut dyn FleetView,
) {
    for (i, h) in io.hosts.clone().iter().enumerate() {
        let run_dir = remote_run_dir(&h.work_dir, &io.run_id, &h.name);
        let bin = coord.hosts().get(i).map_or("", |l| l.checked.bin.as_str());
        let cmd = remote_command_for(job, bin, &run_dir);
        let stderr_path = io.out.join(&h.name).join("ssh-stderr.log");
        let (input, child, error) =
            match spawn_run(&io.ssh, i, &h.entry.ssh, &cmd, &stderr_path, io.tx.clone()) {
                Ok((input, child)) => (input, Some(child), None),
                Err(e) => (None, None, Some(e.to_string())),
            };
        io.inputs.push(input);
        io.children.push(child);
        let actions = coord.on(now(), Message::Started { host: i, error });
        io.carry_out(actions, coord, view);
    }
    if let Err(e) = write_fleet(
        &io.out,
        &io.run_id,
        coord.hosts(),
        None,
        true,
        false,
        io.loadgen,
    ) {
        view.notice(&Notice::Warning(format!("writing fleet.json: {e}")));
    }
}

/// The end: fleet.json, and for fleet loadgen the watches stopped and the merged result.
fn aggregate(
    coord: &Coordinator,
    io: &Io,
    watches: Vec<super::loadgen::Watch>,
    view: &mut dyn FleetView,
) -> Result<Ran> {
    let interrupted = coord.interrupted();
    let partial = coord.partial(|name| io.out.join(name).join("result.json").exists());
    debug_assert!(!interrupted || partial, "an interrupted run is partial");
    let (summary, warnings, results) = write_fleet(
        &io.out,
        &io.run_id,
        coord.hosts(),
        coord.start_at(),
        partial,
        interrupted,
        io.loadgen,
    )?;
    for w in warnings {
        view.notice(&Notice::Warning(w));
    }
    let servers = super::loadgen::stop(watches);
    let merged = if io.loadgen {
        let (result, path, report) =
            super::loadgen::write_merged(&io.out, &summary, results, servers)?;
        let report = report.unwrap_or_else(|w| {
            view.notice(&Notice::Warning(w));
            None
        });
        view.line(
            &Event::Result {
                path: path.clone(),
                pass: result.verdict.pass(),
                verdict: result.verdict.state().name().to_string(),
                stopped: result.stopped.clone(),
            }
            .into(),
        );
        Some(Merged {
            result: Box::new(result),
            path,
            report,
        })
    } else {
        None
    };
    view.line(
        &Event::FleetResult {
            path: io.out.join("fleet.json"),
            partial,
            skew_ms: summary.skew_ms,
        }
        .into(),
    );
    Ok(Ran::Finished {
        summary: Box::new(summary),
        partial,
        interrupted,
        all_passed: coord.all_passed() && merged.as_ref().is_none_or(|m| m.result.verdict.pass()),
        merged,
    })
}

/// Writes fleet.json and fleet.html into `out`; returns the summary, the warnings and the
/// loadgen clients' results as read.
#[allow(clippy::too_many_arguments)]
fn write_fleet(
    out: &std::path::Path,
    run_id: &str,
    hosts: &[HostRun],
    start_at: Option<f64>,
    partial: bool,
    interrupted: bool,
    loadgen: bool,
) -> Result<(
    FleetSummary,
    Vec<String>,
    Vec<Option<mbx_result::LoadgenResult>>,
)> {
    let (s, warnings, results) =
        summary::summarize(out, run_id, hosts, start_at, partial, interrupted, loadgen);
    // Through the exporters: each file replaced atomically, so a coordinator killed while it
    // writes leaves the previous fleet.json whole.
    let exporters: [Box<dyn mbx_report::Exporter<FleetSummary>>; 2] = [
        Box::new(html::FleetJsonExporter),
        Box::new(html::FleetHtmlExporter),
    ];
    mbx_report::export::export(&s, out, &exporters)
        .ctx(|| "writing fleet.json and fleet.html".into())?;
    Ok((s, warnings, results))
}

/// The loop's handles: the hosts' inputs and ssh clients, the collection threads' channel.
struct Io {
    ssh: Ssh,
    hosts: Vec<Host>,
    out: PathBuf,
    run_id: String,
    inputs: Vec<Option<ChildStdin>>,
    children: Vec<Option<Watched>>,
    /// Set at the second interrupt: collections stop waiting for hosts.
    quit: Arc<AtomicBool>,
    tx: mpsc::Sender<Message>,
    /// `fleet loadgen`'s hosts.
    loadgen: bool,
}

impl Io {
    fn carry_out(&mut self, actions: Vec<Action>, coord: &Coordinator, view: &mut dyn FleetView) {
        for a in actions {
            match a {
                Action::Emit(line) => view.line(&line),
                Action::Notice(n) => view.notice(&n),
                Action::Send { host, text } => {
                    if let Some(Some(s)) = self.inputs.get_mut(host) {
                        let _ = s.write_all(text.as_bytes()).and_then(|_| s.flush());
                    }
                }
                Action::CloseInput { host } => {
                    if let Some(s) = self.inputs.get_mut(host) {
                        *s = None;
                    }
                }
                Action::KillSsh { host } => {
                    if let Some(Some(c)) = self.children.get(host) {
                        c.kill();
                    }
                }
                Action::Collect { host, how } => {
                    if let Some(h) = self.hosts.get(host) {
                        let job = CollectJob {
                            idx: host,
                            host: h.clone(),
                            run_dir: remote_run_dir(&h.work_dir, &self.run_id, &h.name),
                            dest: self.out.join(&h.name),
                            how,
                        };
                        spawn_collect(&self.ssh, job, Arc::clone(&self.quit), self.tx.clone());
                    }
                }
                Action::Quit => self.quit.store(true, Ordering::SeqCst),
                Action::WriteFleet {
                    partial,
                    interrupted,
                } => {
                    match write_fleet(
                        &self.out,
                        &self.run_id,
                        coord.hosts(),
                        coord.start_at(),
                        partial,
                        interrupted,
                        self.loadgen,
                    ) {
                        Ok((_, warnings, _)) => {
                            for w in warnings {
                                view.notice(&Notice::Warning(w));
                            }
                        }
                        Err(e) => view.notice(&Notice::Warning(format!("writing fleet.json: {e}"))),
                    }
                }
            }
        }
    }
}
