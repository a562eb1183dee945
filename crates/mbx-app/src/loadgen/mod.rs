//! `mbxstress loadgen`: simulated mail users against a real mail system, as a library.
//! [`init`] fills the users' mailboxes; [`day`] runs simulated days of the users' tasks. Both
//! write a results folder as `run` does (result.json, samples.jsonl, test.log, report.html)
//! and report through the event stream ([`Event::LoadgenProgress`], [`Event::LoadgenSample`],
//! [`Event::Log`], [`Event::Result`]).
//!
//! The protocol clients, messages, scheduler and day engine are `mbx-loadgen`'s; this module
//! turns a request into their inputs, keeps the files, and judges the result.

pub mod assemble;
pub mod find_max;
pub mod find_max_html;
pub mod find_max_run;
pub mod hist;
pub mod idle;
pub mod merge;
pub mod request;
pub mod resolve;
pub mod servers;
pub mod submit;

use std::collections::BTreeMap;
use std::fs::File;
use std::io::{BufWriter, Write};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant, SystemTime};

use mbx_loadgen::day::{DayPlan, Servers};
use mbx_loadgen::message::Generator;
use mbx_loadgen::sched::ClientType;
use mbx_loadgen::users::User;
use mbx_loadgen::{AuthMechanism, Recorder, Trust};
use mbx_result::{
    ClientShare, InitFigures, LoadgenConfig, LoadgenInfo, LoadgenResult, LoadgenSample,
    LoadgenThresholds, ServerUrl, StopReason, Stopped, Verdict,
};

use crate::event::{Event, EventSink, LoadgenProgress, Notice};
use crate::AppError;
use request::DayRun;
use servers::{Proto, ServersSpec};

/// The mail profile: what a user's day holds.
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
#[serde(deny_unknown_fields)]
pub struct MailProfile {
    /// Messages sent + received per mailbox per day (the calculator's profile, 50..=500).
    pub messages_per_day: u32,
    /// Average message size, KB (x 1,024 bytes, as the calculator's 75 KB).
    pub message_kb: f64,
    /// Where it came from (`flags`, or the profile file).
    pub source: String,
    /// The mailboxes the profile file sizes (None: no file), said beside the run's users.
    pub mailboxes: Option<u64>,
}

/// The warning when a profile file sizes another number of mailboxes than the run has users
/// (the run loads its users; the profile gives only the messages per day and their size).
pub fn profile_users_note(p: &MailProfile, users: usize, users_source: &str) -> Option<String> {
    let m = p.mailboxes?;
    (m != users as u64 && !users_source.contains("partition")).then(|| {
        format!(
            "--profile {} sizes {m} mailboxes, but this run has {users} users ({users_source}): the day loads those {users}, with the profile's messages per day and size; give as many users (--users, --users-file) to load the profile's server",
            p.source
        )
    })
}

/// What every loadgen command needs.
#[derive(Debug, Clone)]
pub struct Common {
    /// The servers.
    pub servers: ServersSpec,
    /// How their certificates are trusted.
    pub trust: Trust,
    /// Submission's SASL mechanism.
    pub smtp_auth: AuthMechanism,
    /// The EHLO name.
    pub helo: String,
    /// The users.
    pub users: Vec<User>,
    /// Where they came from, in words.
    pub users_source: String,
    /// The mail domain.
    pub domain: String,
    /// The profile.
    pub profile: MailProfile,
    /// The seed of messages and schedule.
    pub seed: u64,
    /// The results folder (a time-stamped one under ./mbxstress-results when none).
    pub out: Option<PathBuf>,
    /// Set by Ctrl-C or SIGTERM: stop cleanly, write what was measured.
    pub cancel: Arc<AtomicBool>,
}

/// `loadgen init`.
#[derive(Debug, Clone)]
pub struct InitRequest {
    /// Servers, users, profile.
    pub common: Common,
    /// Messages each mailbox should hold.
    pub messages: u32,
    /// Users filled at once.
    pub concurrency: usize,
    /// Messages per MULTIAPPEND.
    pub batch: usize,
}

/// `loadgen run`.
#[derive(Debug, Clone)]
pub struct DayRequest {
    /// Servers, users, profile.
    pub common: Common,
    /// The day's own values (what the serialized request carries too).
    pub run: DayRun,
    /// A synchronized start (`--start-gate stdin`, `fleet loadgen`): after the baseline the run
    /// emits `ready` and the day starts when the gate opens.
    pub gate: Option<Arc<mbx_engine::StartGate>>,
    /// This client's slice of the users, `K/N` (`--partition`), for the result.
    pub partition: Option<String>,
}

/// A loadgen command's outcome.
#[derive(Debug)]
pub struct Ran {
    /// result.json.
    pub path: PathBuf,
    /// What it holds.
    pub result: LoadgenResult,
    /// report.html, when written.
    pub report: Option<PathBuf>,
}

/// The client type's name in results.
pub fn client_name(c: ClientType) -> &'static str {
    match c {
        ClientType::DesktopImap => "desktop_imap",
        ClientType::Webmail => "webmail",
        ClientType::Pop3 => "pop3",
        ClientType::Eas => "eas",
    }
}

/// Parses a client type's name (`desktop_imap`, `webmail`, `pop3`, `eas`; `imap`, `desktop`
/// and `activesync` too).
pub fn client_of(name: &str) -> Option<ClientType> {
    match name.trim().to_ascii_lowercase().replace('-', "_").as_str() {
        "desktop_imap" | "desktop" | "imap" => Some(ClientType::DesktopImap),
        "webmail" | "web" => Some(ClientType::Webmail),
        "pop3" | "pop" => Some(ClientType::Pop3),
        "eas" | "activesync" => Some(ClientType::Eas),
        _ => None,
    }
}

/// `192 lost`, or when the run stopped before its grace sweep (nothing judged lost)
/// `192 not seen yet (the run stopped before looking for late copies: not judged lost)`.
pub fn lost_words(lost: u64, ended_early: bool) -> String {
    if ended_early {
        format!(
            "{lost} not seen yet (the run stopped before looking for late copies: not judged lost)"
        )
    } else {
        format!("{lost} lost")
    }
}

/// Under this many seconds of backlog the overload guard is warned about (a stall that short
/// stops the run).
pub const GUARD_WARN_S: f64 = 10.0;

/// How many seconds of the day's dispatch rate LoadGen's guard holds (`overload_per_user` x
/// users unfinished tasks over the tasks per second of users `kinds`), and that rate.
pub fn guard_seconds(
    seed: u64,
    messages_per_day: u32,
    day: Duration,
    kinds: &[ClientType],
    overload_per_user: f64,
) -> (f64, f64) {
    let rate = mbx_loadgen::sched::Scheduler::new(seed, messages_per_day, day, 1, kinds).planned()
        as f64
        / day.as_secs_f64().max(1e-9);
    (
        overload_per_user * kinds.len() as f64 / rate.max(1e-9),
        rate,
    )
}

/// Each user's client type from the shares: user i takes the type furthest behind its share
/// of the first i + 1 users, so the types interleave and every prefix of users is mixed as
/// asked (a type gets round(share x users) users, within one).
pub fn assign_clients(users: usize, shares: &[(ClientType, f64)]) -> Vec<ClientType> {
    let total: f64 = shares.iter().map(|s| s.1.max(0.0)).sum();
    let mut given = vec![0u64; shares.len()];
    let mut out = Vec::with_capacity(users);
    for i in 0..users {
        let mut best = 0;
        let mut behind = f64::NEG_INFINITY;
        for (j, (_, share)) in shares.iter().enumerate() {
            let want = (i + 1) as f64 * share.max(0.0) / total.max(f64::MIN_POSITIVE);
            let b = want - given[j] as f64;
            if b > behind + 1e-9 {
                behind = b;
                best = j;
            }
        }
        if let Some(g) = given.get_mut(best) {
            *g += 1;
        }
        out.push(shares.get(best).map_or(ClientType::DesktopImap, |s| s.0));
    }
    out
}

/// `20261127T110503Z`: a UTC time for names.
fn stamp() -> String {
    mbx_engine::rfc3339_now()
        .chars()
        .filter(|c| c.is_ascii_alphanumeric())
        .collect()
}

fn unix_now() -> u64 {
    SystemTime::now()
        .duration_since(SystemTime::UNIX_EPOCH)
        .map(|d| d.as_secs())
        .unwrap_or(0)
}

/// The run id of initialization messages: stable across runs (a mailbox's fill is counted
/// again by it), so it names the seed only.
pub fn init_run_id(seed: u64) -> String {
    format!("init-{seed}")
}

/// Mean message size in bytes of a profile.
fn mean_bytes(p: &MailProfile) -> u64 {
    (p.message_kb * 1024.0)
        .round()
        .clamp(1024.0, 64.0 * 1024.0 * 1024.0) as u64
}

/// The results folder's files, open for appending lines as the test goes.
pub(crate) struct Files {
    dir: PathBuf,
    log: BufWriter<File>,
    samples: BufWriter<File>,
    errors: Vec<String>,
}

impl Files {
    fn create(out: Option<&Path>, phase: &str) -> Result<Files, AppError> {
        let dir = match out {
            Some(d) => crate::results_folder::results_dir(Some(d))?,
            None => crate::results_folder::results_dir(Some(&crate::results_folder::stamped(
                &format!("loadgen-{phase}-"),
            )))?,
        };
        fs_err::create_dir_all(&dir).map_err(AppError::File)?;
        use crate::results_folder::create_new;
        Ok(Files {
            log: create_new(&dir, "test.log")?,
            samples: create_new(&dir, "samples.jsonl")?,
            dir,
            errors: Vec::new(),
        })
    }

    fn log(&mut self, sink: &mut dyn EventSink, text: &str) {
        if let Err(e) = crate::results_folder::log_line(&mut self.log, text) {
            self.errors.push(format!("writing test.log: {e}"));
        }
        sink.event(&Event::Log {
            text: text.to_string(),
            kind: crate::event::LogKind::Plain,
        });
    }

    fn sample(&mut self, sink: &mut dyn EventSink, s: &LoadgenSample) {
        let written = serde_json::to_vec(s)
            .map_err(std::io::Error::other)
            .and_then(|mut line| {
                line.push(b'\n');
                self.samples.write_all(&line)
            })
            .and_then(|_| self.samples.flush());
        if let Err(e) = written {
            self.errors.push(format!("writing samples.jsonl: {e}"));
        }
        sink.event(&Event::LoadgenSample { sample: s.clone() });
    }

    fn write_result(&self, result: &LoadgenResult) -> Result<PathBuf, AppError> {
        let path = self.dir.join("result.json");
        write_json(&path, result)?;
        Ok(path)
    }
}

/// Writes `value` as pretty JSON (and a last newline) to `path`, atomically.
pub(crate) fn write_json<T: serde::Serialize + ?Sized>(
    path: &Path,
    value: &T,
) -> Result<(), AppError> {
    let mut bytes = serde_json::to_vec_pretty(value).map_err(|e| AppError::Io {
        context: format!("writing {}", path.display()),
        source: std::io::Error::other(e),
    })?;
    bytes.push(b'\n');
    mbx_config::atomic::write_atomic(path, &bytes).map_err(|source| AppError::Io {
        context: format!("writing {}", path.display()),
        source,
    })
}

fn info(phase: &str, run_id: &str, start: &str, started: Instant) -> LoadgenInfo {
    LoadgenInfo {
        phase: phase.to_string(),
        run_id: run_id.to_string(),
        start: start.to_string(),
        end: mbx_engine::rfc3339_now(),
        duration_s: started.elapsed().as_secs_f64(),
        machine: mbx_engine::hostname(),
        os: format!("{} {}", std::env::consts::OS, mbx_engine::kernel_release()),
        tool_version: env!("CARGO_PKG_VERSION").to_string(),
        interrupted: false,
        start_unix_s: None,
        partition: None,
    }
}

fn config_block(c: &Common, clients: Vec<ClientShare>) -> LoadgenConfig {
    LoadgenConfig {
        servers: vec![
            ServerUrl {
                protocol: "smtp".into(),
                url: c.servers.smtp.url(Proto::Smtp),
            },
            ServerUrl {
                protocol: "imap".into(),
                url: c.servers.imap.url(Proto::Imap),
            },
            ServerUrl {
                protocol: "pop3".into(),
                url: c.servers.pop3.url(Proto::Pop3),
            },
        ],
        tls_trust: servers::trust_name(&c.trust),
        smtp_auth: match c.smtp_auth {
            AuthMechanism::Plain => "plain".into(),
            AuthMechanism::Login => "login".into(),
        },
        users_source: c.users_source.clone(),
        users: c.users.len() as u64,
        domain: c.domain.clone(),
        messages_per_day: c.profile.messages_per_day,
        message_kb: c.profile.message_kb,
        clients,
        day_s: 0.0,
        days: 0,
        seed: c.seed,
        overload_per_user: 0.0,
        grace_s: 0.0,
        duration_s: 0.0,
        stress: false,
        init_messages: None,
        profile_source: c.profile.source.clone(),
        thresholds: LoadgenThresholds::default(),
    }
}

fn runtime() -> Result<tokio::runtime::Runtime, AppError> {
    runtime_with(std::thread::available_parallelism().map_or(2, |n| n.get()))
}

/// The clients' runtime on `threads` threads (1: the current thread only).
pub(crate) fn runtime_with(threads: usize) -> Result<tokio::runtime::Runtime, AppError> {
    if threads <= 1 {
        tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
    } else {
        tokio::runtime::Builder::new_multi_thread()
            .worker_threads(threads)
            .enable_all()
            .build()
    }
    .map_err(|source| AppError::Io {
        context: "starting the client runtime".into(),
        source,
    })
}

/// A result that says the test did not end (written first, replaced at the end), so a killed
/// process leaves a result that says so.
fn running(
    phase: &str,
    run_id: &str,
    start: &str,
    started: Instant,
    config: &LoadgenConfig,
) -> LoadgenResult {
    LoadgenResult::empty(
        info(phase, run_id, start, started),
        config.clone(),
        Verdict::of(Vec::new()),
        Stopped::new(
            StopReason::Running,
            "the test has not ended (a result read now says the process never finished it)",
        )
        .in_phase(phase),
    )
}

/// Writes the result, the report, and tells the sink.
fn finish(files: Files, result: LoadgenResult, sink: &mut dyn EventSink) -> Result<Ran, AppError> {
    let path = files.write_result(&result)?;
    for e in &files.errors {
        let _ = sink.notice(&Notice::Warning(e.clone()));
    }
    let report = match mbx_report::write_report(&files.dir, None) {
        Ok(written) => written.into_iter().next(),
        Err(e) => {
            let _ = sink.notice(&Notice::Warning(format!(
                "the report was not written: {}",
                e
            )));
            None
        }
    };
    sink.event(&Event::Result {
        path: path.clone(),
        pass: result.verdict.pass(),
        verdict: result.verdict.state().name().to_string(),
        stopped: result.stopped.clone(),
    });
    let _ = sink.notice(&Notice::LoadgenEnd {
        result: &result,
        path: &path,
        report: report.as_deref(),
    });
    Ok(Ran {
        path,
        result,
        report,
    })
}

/// How an ended loadgen test is described.
fn stopped_of(interrupted: bool, overloaded: bool, verdict: &Verdict, phase: &str) -> Stopped {
    if interrupted {
        Stopped::new(
            StopReason::Interrupted,
            "stopped by the user (Ctrl-C or SIGTERM): the figures cover what ran",
        )
        .in_phase(phase)
    } else if overloaded {
        Stopped::new(
            StopReason::VerdictFailed,
            "LoadGen's overload guard stopped the run: unfinished tasks exceeded the limit (the server, or this client, could not keep up)",
        )
        .in_phase(phase)
    } else if verdict.pass() {
        Stopped::new(StopReason::Completed, "ran to its end; every check passed")
    } else {
        Stopped::new(
            StopReason::VerdictFailed,
            "ran to its end; the verdict is not a pass",
        )
    }
}

mod drive;

/// `loadgen init`: fills every user's mailbox to `messages` generated messages over IMAP.
pub fn init(req: &InitRequest, sink: &mut dyn EventSink) -> Result<Ran, AppError> {
    let c = &req.common;
    let start = mbx_engine::rfc3339_now();
    let started = Instant::now();
    let run_id = init_run_id(c.seed);
    let mut config = config_block(c, Vec::new());
    config.init_messages = Some(u64::from(req.messages));
    let (_, imap, _) = servers::endpoints(&c.servers, &c.trust)?;
    let mut files = Files::create(c.out.as_deref(), "init")?;
    files.write_result(&running("init", &run_id, &start, started, &config))?;
    let _ = sink.notice(&Notice::LoadgenStart {
        phase: "init",
        dir: &files.dir,
        users: c.users.len() as u64,
    });
    files.log(
        sink,
        &format!(
            "loadgen init: {} users ({}), {} messages each of {:.0} KB on average, IMAP {}, {} at once",
            c.users.len(),
            c.users_source,
            req.messages,
            c.profile.message_kb,
            c.servers.imap.url(Proto::Imap),
            req.concurrency
        ),
    );
    let gen = Generator::new(&run_id, c.seed, mean_bytes(&c.profile), unix_now());
    let rec = Recorder::new();
    let rt = runtime()?;
    let done = drive::init(
        &rt,
        &imap,
        &c.users,
        &gen,
        req,
        rec.clone(),
        &mut files,
        sink,
    );
    let figures = InitFigures {
        users_done: done.users_done,
        users_failed: done.users_failed,
        target_per_user: u64::from(req.messages),
        messages_found: done.found,
        messages_appended: done.appended,
        bytes_appended: done.bytes,
        duration_s: done.elapsed.as_secs_f64(),
        messages_per_s: done.appended as f64 / done.elapsed.as_secs_f64().max(1e-9),
        mb_per_s: done.bytes as f64 / 1e6 / done.elapsed.as_secs_f64().max(1e-9),
    };
    files.log(
        sink,
        &format!(
            "loadgen init ended: {} of {} mailboxes filled, {} failed; {} messages were there, {} appended ({:.1} MB) in {:.1} s: {:.0} messages/s, {:.1} MB/s",
            figures.users_done,
            c.users.len(),
            figures.users_failed,
            figures.messages_found,
            figures.messages_appended,
            figures.bytes_appended as f64 / 1e6,
            figures.duration_s,
            figures.messages_per_s,
            figures.mb_per_s
        ),
    );
    for e in done.first_errors.iter().take(5) {
        files.log(sink, &format!("error: {e}"));
    }
    let verdict = assemble::init_verdict(c.users.len() as u64, figures.users_done);
    let interrupted = c.cancel.load(Ordering::SeqCst);
    let mut test = info("init", &run_id, &start, started);
    test.interrupted = interrupted;
    let result = LoadgenResult {
        test,
        commands: assemble::commands(&rec.snapshot()),
        init: Some(figures),
        stopped: stopped_of(interrupted, false, &verdict, "init"),
        verdict,
        errors: assemble::errors(&done.errors_by_class, &done.first_errors),
        ..running("init", &run_id, &start, started, &config)
    };
    drop(rt);
    finish(files, result, sink)
}

/// The `eas` users' endpoint: `url` (resolved by [`request::resolve_eas`]) with the run's TLS
/// trust for `https`, one request within `timeout` (the other clients' command timeout).
fn eas_target(
    url: Option<&str>,
    trust: &Trust,
    timeout: std::time::Duration,
) -> Result<Option<mbx_loadgen::eas::device::Target>, AppError> {
    let Some(url) = url else {
        return Ok(None);
    };
    let tls = if url.starts_with("https://") {
        Some(mbx_loadgen::tls::client_config(trust).map_err(|e| {
            AppError::usage(format!(
                "--eas {url}: the TLS trust: {e}; give a PEM file with --ca-file, or --insecure-tls for a lab server"
            ))
        })?)
    } else {
        None
    };
    Ok(Some(mbx_loadgen::eas::device::Target {
        url: url.to_owned(),
        tls,
        timeout,
    }))
}

/// `loadgen run`: simulated days of the users' tasks, every copy sent accounted for.
pub fn day(req: &DayRequest, sink: &mut dyn EventSink) -> Result<Ran, AppError> {
    let c = &req.common;
    let (smtp, imap, pop3) = servers::endpoints(&c.servers, &c.trust)?;
    let eas = eas_target(req.run.eas.as_deref(), &c.trust, imap.timeouts.command)?;
    let on = DayOn {
        servers: Servers {
            smtp,
            imap,
            pop3,
            helo: c.helo.clone(),
            auth: c.smtp_auth,
            eas,
        },
        runtime: runtime()?,
        simulated_from: None,
    };
    day_on(req, on, sink)
}

/// Where [`day_on`] runs a day.
pub struct DayOn {
    /// The servers' endpoints (their connectors included: an in-process model's in tests).
    pub servers: Servers,
    /// The clients' runtime (a paused current-thread one runs the day on tokio's simulated
    /// clock).
    pub runtime: tokio::runtime::Runtime,
    /// A simulated day's wall time at its start (None: the system's clock).
    pub simulated_from: Option<SystemTime>,
}

/// [`day`] on given servers and runtime: a day on the simulated clock against a model server
/// (`loadgen find-max`'s test) is the same code as on a real mail system.
pub fn day_on(req: &DayRequest, on: DayOn, sink: &mut dyn EventSink) -> Result<Ran, AppError> {
    let c = &req.common;
    let start = mbx_engine::rfc3339_now();
    let started = Instant::now();
    let run_id = format!("day-{}", stamp());
    let kinds = assign_clients(c.users.len(), &req.run.clients);
    let config = day_config(req, &kinds);
    let mut files = Files::create(c.out.as_deref(), "run")?;
    files.write_result(&running("day", &run_id, &start, started, &config))?;
    let _ = sink.notice(&Notice::LoadgenStart {
        phase: "day",
        dir: &files.dir,
        users: c.users.len() as u64,
    });
    log_day_start(req, &run_id, &config, &mut files, sink);
    let mut notes = day_notes(req, &kinds, &mut files, sink);
    let gen = Generator::new(&run_id, c.seed, mean_bytes(&c.profile), unix_now());
    let rec = Recorder::new();
    let DayOn {
        servers: srv,
        runtime: rt,
        simulated_from,
    } = on;
    let plan = day_plan(req, &rt, simulated_from);
    let report = drive::day(
        &rt,
        &srv,
        &c.users,
        &kinds,
        &gen,
        &plan,
        rec.clone(),
        &mut files,
        sink,
        req.gate.clone(),
    );
    drop(rt);
    let addresses: Vec<String> = c.users.iter().map(|u| u.address.clone()).collect();
    let tasks = assemble::tasks(&report);
    let delivery = assemble::delivery(
        &report,
        &addresses,
        Duration::from_secs_f64(req.run.thresholds.delivery_p95_ms.max(0.0) / 1000.0),
        !(report.overloaded || report.interrupted || report.deadline.is_some()),
    );
    let completed: u64 = tasks.iter().map(|t| t.completed).sum();
    let failed: u64 = tasks.iter().map(|t| t.failed.values().sum::<u64>()).sum();
    let skipped: u64 = tasks.iter().map(|t| t.skipped).sum();
    let overload_limit = (req.run.overload_per_user * c.users.len() as f64).ceil() as u64;
    let figures = assemble::DayFigures {
        planned: report.planned,
        dispatched: report.dispatched,
        stress: req.run.stress,
        completed,
        max_unfinished: report.max_unfinished,
        overload_limit,
        overloaded: report.overloaded,
        ended_early: report.overloaded || report.interrupted || report.deadline.is_some(),
    };
    let mut verdict = assemble::day_verdict(figures, &tasks, &delivery, &req.run.thresholds);
    // A phase past its deadline (a server that stopped answering) fails the verdict by name.
    if let Some(d) = &report.deadline {
        files.log(sink, &format!("deadline: {d}"));
        let mut checks = verdict.checks().to_vec();
        checks.push(mbx_result::Check::new("phase_deadline", 1.0, 0.0, false));
        verdict = Verdict::of(checks);
        notes.push(d.clone());
    }
    let by_class = failed_by_class(&tasks, &report);
    log_day_end(
        &report,
        &delivery,
        (completed, skipped, failed),
        &verdict,
        &mut files,
        sink,
    );
    let mut test = info("day", &run_id, &start, started);
    test.interrupted = report.interrupted;
    test.start_unix_s = Some(report.start_unix_s).filter(|t| *t > 0.0);
    test.partition = req.partition.clone();
    let stats = rec.snapshot();
    // The histograms the tables come from, so a fleet merges clients exactly; a failure (a
    // count the format cannot hold) leaves them out and says so: the fleet then excludes this
    // result from its merged figures rather than guess.
    let histograms = match hist::of_day(&report, &stats) {
        Ok(h) => h,
        Err(e) => {
            let n = format!("the latency histograms are not in the result: {e}");
            files.log(sink, &n);
            notes.push(n);
            BTreeMap::new()
        }
    };
    notes.push(format!(
        "checks downloaded {} messages ({:.1} MB); the baseline before the day took {:.1} s",
        report.check_fetched,
        report.check_fetched_bytes as f64 / 1e6,
        report.baseline.as_secs_f64()
    ));
    let result = LoadgenResult {
        test,
        tasks_planned: report.planned,
        tasks_dispatched: report.dispatched,
        tasks_completed: completed,
        tasks_failed: failed,
        max_unfinished: report.max_unfinished,
        overload_limit,
        overloaded: report.overloaded,
        tasks,
        commands: assemble::commands(&stats),
        histograms,
        delivery: Some(delivery),
        notes,
        stopped: day_stopped(&report, &verdict),
        verdict,
        errors: assemble::errors(&by_class, &report.first_errors),
        ..running("day", &run_id, &start, started, &config)
    };
    finish(files, result, sink)
}

/// The day engine's plan of `req`; with `simulated_from`, on the simulated clock of `rt` (a
/// paused runtime) starting at that wall time.
fn day_plan(
    req: &DayRequest,
    rt: &tokio::runtime::Runtime,
    simulated_from: Option<SystemTime>,
) -> DayPlan {
    let c = &req.common;
    let plan = DayPlan {
        seed: c.seed,
        messages_per_day: c.profile.messages_per_day,
        day: req.run.day,
        days: req.run.days,
        overload_per_user: req.run.overload_per_user,
        grace: req.run.grace,
        stop: Arc::clone(&c.cancel),
        sample_interval: req.run.sample_interval,
        duration: req.run.duration,
        stress: req.run.stress,
        eas_ping: req.run.eas_ping,
        ..DayPlan::default()
    };
    match simulated_from {
        Some(wall) => {
            // Made in the runtime's context: its "now" is the paused clock's.
            let _in = rt.enter();
            DayPlan {
                clock: mbx_loadgen::DayClock::simulated(wall),
                ..plan
            }
        }
        None => plan,
    }
}

/// Failed tasks and baseline commands of a day by error class.
fn failed_by_class(
    tasks: &[mbx_result::TaskRow],
    report: &mbx_loadgen::day::DayReport,
) -> BTreeMap<String, u64> {
    let mut by_class: BTreeMap<String, u64> = BTreeMap::new();
    for t in tasks {
        for (k, n) in &t.failed {
            *by_class.entry(k.clone()).or_insert(0) += n;
        }
    }
    for (k, n) in &report.baseline_failed {
        *by_class.entry((*k).to_string()).or_insert(0) += n;
    }
    by_class
}

/// How a day ended: a phase past its deadline names its phase.
fn day_stopped(report: &mbx_loadgen::day::DayReport, verdict: &Verdict) -> Stopped {
    match &report.deadline {
        Some(d) => Stopped::new(StopReason::VerdictFailed, d.clone()).in_phase(
            if d.starts_with("the baseline") {
                "baseline"
            } else if d.starts_with("the grace") {
                "grace"
            } else {
                "day"
            },
        ),
        None => stopped_of(report.interrupted, report.overloaded, verdict, "day"),
    }
}

/// A day's configuration block: the client mix of its users, the day's settings.
fn day_config(req: &DayRequest, kinds: &[ClientType]) -> LoadgenConfig {
    let c = &req.common;
    let shares: Vec<ClientShare> = req
        .run
        .clients
        .iter()
        .map(|(t, share)| ClientShare {
            client: client_name(*t).into(),
            share_pct: *share,
            users: kinds.iter().filter(|k| *k == t).count() as u64,
            tasks_per_user_day: mbx_loadgen::sched::ActionTable::for_profile(
                c.profile.messages_per_day,
                *t,
            )
            .tasks_per_user(),
        })
        .collect();
    let mut config = config_block(c, shares);
    if let Some(url) = &req.run.eas {
        config.servers.push(ServerUrl {
            protocol: "eas".into(),
            url: url.clone(),
        });
    }
    config.day_s = req.run.day.as_secs_f64();
    config.days = req.run.days;
    config.overload_per_user = req.run.overload_per_user;
    config.grace_s = req.run.grace.as_secs_f64();
    config.duration_s = req
        .run
        .duration
        .unwrap_or(req.run.day.saturating_mul(req.run.days))
        .as_secs_f64();
    config.stress = req.run.stress;
    config.thresholds = req.run.thresholds.clone();
    config
}

/// The day's first line in test.log: users, mix, profile, length, servers.
fn log_day_start(
    req: &DayRequest,
    run_id: &str,
    config: &LoadgenConfig,
    files: &mut Files,
    sink: &mut dyn EventSink,
) {
    let c = &req.common;
    let mix: Vec<String> = config
        .clients
        .iter()
        .map(|s| format!("{} {} ({:.0}%)", s.users, s.client, s.share_pct))
        .collect();
    let url = |i: usize| config.servers.get(i).map_or("", |s| s.url.as_str());
    files.log(
        sink,
        &format!(
            "loadgen run {run_id}: {} users ({}; {}), {} messages/day of {:.0} KB, a simulated day of {} x {}{}, servers {}, {}, {}",
            c.users.len(),
            c.users_source,
            mix.join(", "),
            c.profile.messages_per_day,
            c.profile.message_kb,
            duration_words(req.run.day),
            req.run.days,
            match (req.run.stress, req.run.duration) {
                (true, Some(d)) => format!(
                    ", stress mode (each user's tasks back to back) for {}",
                    duration_words(d)
                ),
                (true, None) => ", stress mode (each user's tasks back to back)".to_string(),
                (false, Some(d)) => format!(", test length {}", duration_words(d)),
                (false, None) => String::new(),
            },
            url(0),
            url(1),
            url(2)
        ),
    );
}

/// The warnings said before anything runs (logged, shown, and the result's notes): a profile of
/// other mailboxes than the run's users; LoadGen's guard (users x 1.5 unfinished tasks) under
/// [`GUARD_WARN_S`] of a compressed day's dispatch rate.
fn day_notes(
    req: &DayRequest,
    kinds: &[ClientType],
    files: &mut Files,
    sink: &mut dyn EventSink,
) -> Vec<String> {
    let c = &req.common;
    let mut notes = Vec::new();
    let (guard_s, rate) = guard_seconds(
        c.seed,
        c.profile.messages_per_day,
        req.run.day,
        kinds,
        req.run.overload_per_user,
    );
    if let Some(n) = profile_users_note(&c.profile, c.users.len(), &c.users_source) {
        files.log(sink, &n);
        let _ = sink.notice(&Notice::Warning(n.clone()));
        notes.push(n);
    }
    if !req.run.stress && guard_s < GUARD_WARN_S {
        let n = format!(
            "the overload guard ({} per user: {:.0} unfinished tasks) is {guard_s:.1} s of this day's dispatch rate ({rate:.0} tasks/s): a stall that short stops the run; in a compressed day raise --overload (LoadGen's 1.5 assumes a day of hours)",
            req.run.overload_per_user,
            (req.run.overload_per_user * c.users.len() as f64).ceil()
        );
        files.log(sink, &n);
        let _ = sink.notice(&Notice::Warning(n.clone()));
        notes.push(n);
    }
    notes
}

/// The day's last lines in test.log: folders, the baseline, the counts and the verdict, the
/// delivery latency, the first errors, corrupted and lost copies.
fn log_day_end(
    report: &mbx_loadgen::day::DayReport,
    delivery: &mbx_result::Delivery,
    (completed, skipped, failed): (u64, u64, u64),
    verdict: &Verdict,
    files: &mut Files,
    sink: &mut dyn EventSink,
) {
    let baseline_failed: u64 = report.baseline_failed.values().sum();
    if let Some(f) = &report.folders {
        files.log(sink, f);
    }
    if let Some(e) = &report.folder_refused {
        files.log(sink, &format!("move folder refused: {e}"));
    }
    files.log(
        sink,
        &format!(
            "baseline: the users' mailboxes noted in {:.1} s (what they held is not counted or changed){}",
            report.baseline.as_secs_f64(),
            if baseline_failed > 0 {
                format!("; {baseline_failed} user(s) failed and started from an empty view")
            } else {
                String::new()
            }
        ),
    );
    files.log(
        sink,
        &format!(
            "loadgen run ended: {completed} of {} tasks completed, {skipped} with nothing to act on, {failed} failed; {} of {} copies delivered ({} late), {}, {} corrupted, {} duplicated; delivery p95 {:.0} ms ({}: {} seen through IDLE, {} by a poll); verdict {}",
            report.planned,
            delivery.delivered,
            delivery.expected,
            delivery.late,
            lost_words(delivery.lost, report.overloaded || report.interrupted),
            delivery.corrupted,
            delivery.duplicated,
            delivery.latency_ms.p95,
            delivery.measured_by,
            delivery.seen_by_idle,
            delivery.seen_by_poll,
            verdict.state().name()
        ),
    );
    if delivery.server_latency_ms.count > 0 {
        files.log(
            sink,
            &format!(
                "server delivery latency (judged): p50 {:.0} ms, p95 {:.0} ms, max {:.0} ms of {} copies, {} late ({}; resolution {:.0} ms); user-seen latency (when the users' own clients saw them, not judged): p95 {:.0} ms, max {:.0} ms",
                delivery.server_latency_ms.p50,
                delivery.server_latency_ms.p95,
                delivery.server_latency_ms.max,
                delivery.server_latency_ms.count,
                delivery.server_late,
                delivery.server_measured_by,
                delivery.server_resolution_ms,
                delivery.latency_ms.p95,
                delivery.latency_ms.max,
            ),
        );
    }
    if let Some(i) = &delivery.idle_probe {
        files.log(sink, &format!("IDLE: {}", i.note));
    }
    for e in report.first_errors.iter().take(5) {
        files.log(sink, &format!("error: {e}"));
    }
    for cc in &delivery.corrupted_copies {
        files.log(
            sink,
            &format!("corrupted copy: {} in {}: {}", cc.id, cc.recipient, cc.what),
        );
    }
    for cc in &delivery.lost_copies {
        files.log(
            sink,
            &format!("lost copy: {} in {}: {}", cc.id, cc.recipient, cc.what),
        );
    }
}

/// Progress of a loadgen phase for the stream.
pub(crate) fn progress(
    phase: &str,
    elapsed: Duration,
    total: Option<Duration>,
    done: u64,
    of: u64,
    unit: &str,
) -> LoadgenProgress {
    let e = elapsed.as_secs_f64();
    let eta_s = match total {
        Some(t) => Some((t.as_secs_f64() - e).max(0.0)),
        None if done > 0 && of >= done => Some(e * (of - done) as f64 / done as f64),
        None => None,
    };
    LoadgenProgress {
        phase: phase.to_string(),
        elapsed_s: e,
        eta_s,
        done,
        total: of,
        unit: unit.to_string(),
        ..LoadgenProgress::default()
    }
}

/// `8 h`, `3 min`, `90 s`: a duration in words.
pub fn duration_words(d: Duration) -> String {
    let s = d.as_secs_f64();
    if s >= 3600.0 && (s / 3600.0).fract() == 0.0 {
        format!("{} h", s / 3600.0)
    } else if s >= 60.0 && (s / 60.0).fract() == 0.0 {
        format!("{} min", s / 60.0)
    } else {
        format!(
            "{} s",
            crate::num::num(s, if s.fract() == 0.0 { 0 } else { 1 })
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn client_types_interleave_by_share() {
        let k = assign_clients(
            10,
            &[
                (ClientType::DesktopImap, 70.0),
                (ClientType::Webmail, 20.0),
                (ClientType::Pop3, 10.0),
            ],
        );
        let count = |t| k.iter().filter(|x| **x == t).count();
        assert_eq!(
            (
                count(ClientType::DesktopImap),
                count(ClientType::Webmail),
                count(ClientType::Pop3)
            ),
            (7, 2, 1)
        );
        // The first users already mix: both non-desktop types appear in the first 5.
        assert!(k[..5].contains(&ClientType::Webmail), "{k:?}");
        let k = assign_clients(
            1000,
            &[(ClientType::DesktopImap, 1.0), (ClientType::Pop3, 2.0)],
        );
        assert_eq!(k.iter().filter(|x| **x == ClientType::Pop3).count(), 667);
    }

    #[test]
    fn names_of_client_types_read_back() {
        for t in [
            ClientType::DesktopImap,
            ClientType::Webmail,
            ClientType::Pop3,
        ] {
            assert_eq!(client_of(client_name(t)), Some(t));
        }
        assert_eq!(client_of("Desktop-IMAP"), Some(ClientType::DesktopImap));
        assert_eq!(client_of("mapi"), None);
    }
}
