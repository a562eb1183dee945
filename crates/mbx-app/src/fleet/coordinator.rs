//! The coordinator's state machine: the hosts' states during a fleet run, driven by
//! [`Message`]s (a host's line of its event stream, its ssh session's end, a collection's end,
//! an interrupt, time passing) and answering with [`Action`]s (send the start time, stop a run,
//! give up a host, collect it, write fleet.json, tell the user). It does no I/O and reads no
//! clock: time is an input ([`Now`]), so a recorded stream of messages replays exactly, without
//! ssh (see the tests below). The driver ([`super::driver`]) carries the actions out.
//!
//! A host's lines are read as [`Line`]s, the same type the run writes: a line that is a JSON
//! object but not an event of this version (a renamed or missing field) fails that host loudly
//! with a protocol error naming the line, never reads as zero.

use std::time::Duration;

use mbx_result::DoctorReport;

use crate::event::{Event, Line};

use super::remote::signal_text;

/// The watchdog's allowance during a host's setup (before its engine's first event): database
/// creation sends an event a second, other steps (attaching, checking) are silent.
pub const SETUP_SILENCE: Duration = Duration::from_secs(600);

/// How much of a line a protocol error quotes.
const QUOTE_LIMIT: usize = 300;

/// What the checks found on one host.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Checked {
    /// The remote binary to run.
    pub bin: String,
    /// Remote clock minus local clock, seconds.
    pub offset_s: f64,
    /// The round trip of the best clock reading, seconds.
    pub rtt_s: f64,
    /// It runs the static build --push copies (uploaded now, or already there: `push_reused`).
    pub pushed: bool,
    /// The static build was there already, verified by SHA-256: nothing was uploaded.
    pub push_reused: bool,
    /// `mbxstress doctor --json` on the host, for the host's paths and the run's flags.
    pub doctor: Option<DoctorReport>,
    /// How long that doctor took, seconds (ssh round trip included).
    pub doctor_s: f64,
}

/// The times a message arrives at, as inputs: the coordinator reads no clock.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Now {
    /// A monotonic clock (the watchdog's): time since the coordinator started.
    pub mono: Duration,
    /// The wall clock, Unix seconds (the start time sent to the hosts).
    pub unix_s: f64,
}

/// How a host's run ended.
#[derive(Debug, Clone, PartialEq)]
pub enum State {
    /// Checked, its run not started yet.
    Checking,
    /// Its run's ssh session is open.
    Running,
    /// The remote run exited (its exit code).
    Exited(i32),
    /// ssh, the check, the protocol or the watchdog failed it: why.
    Failed(String),
}

impl State {
    /// Its name in fleet.json and the `host_end` event.
    pub fn name(&self) -> &'static str {
        match self {
            State::Checking => "not started",
            State::Running => "running",
            State::Exited(0) => "passed",
            State::Exited(1) => "failed_verdict",
            State::Exited(130) => "interrupted",
            State::Exited(_) => "stopped",
            State::Failed(_) => "failed",
        }
    }

    /// Why, for a host that did not pass or fail its verdict.
    pub fn message(&self) -> Option<String> {
        match self {
            State::Failed(m) => Some(m.clone()),
            State::Exited(c) if *c > 128 && *c != 130 => Some(format!(
                "the remote run was killed by {} after writing its result",
                signal_text(i64::from(*c))
            )),
            State::Exited(c) if !matches!(c, 0 | 1 | 130) => {
                Some(format!("the remote run exited with {c}"))
            }
            _ => None,
        }
    }

    /// Name and message, for a line of text.
    pub fn describe(&self) -> String {
        match self.message() {
            Some(m) => format!("{}: {m}", self.name()),
            None => self.name().to_string(),
        }
    }
}

/// How a host's remote run is to be collected once its ssh session has ended.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Collect {
    /// It ended and wrote its result: copy it back.
    Finished,
    /// The connection dropped while it ran: reach it again, give it `wait` to finish (it stops
    /// by itself once its input ends), then stop it; copy back what it wrote.
    Lost {
        /// How long its run may still take.
        wait: Duration,
    },
    /// Given up (the watchdog, or no answer to the stop): stop it now, copy back what exists.
    Stop,
}

/// A host during the run, as the coordinator knows it.
#[derive(Debug, Clone)]
pub struct HostRun {
    /// Its name (its results folder).
    pub name: String,
    /// Its ssh destination.
    pub ssh: String,
    /// What the checks found.
    pub checked: Checked,
    /// Its state.
    pub state: State,
    /// It sent `ready` (so it got the synchronized start).
    pub ready: bool,
    /// The phase it last reported (`Phase::key`), empty before the first.
    pub phase: String,
    /// Its last progress: IOPS, target IOPS, database read latency (ms).
    pub iops: f64,
    /// Target IOPS.
    pub target: f64,
    /// Average database read latency, ms.
    pub read_ms: f64,
    /// Seconds left in the current phase, when its length is known.
    pub eta_s: Option<f64>,
    /// A loadgen client's progress: done, of, per second (tasks in the day; users in the
    /// baseline).
    pub tasks: Option<(u64, u64, f64)>,
    /// It sent its `result`.
    pub result_seen: bool,
    /// The run's own exit status, reported by the remote wrapper (`remote_exit`).
    pub remote_exit: Option<i64>,
    /// Its ssh was started (there is a remote folder to copy back).
    pub started: bool,
    /// Its engine has sent a `progress` event (one a second from then on): the watchdog's
    /// setup allowance is over.
    pub heard: bool,
    /// Its collection (waiting for its remote run, copying its results back) is over.
    pub collected: bool,
    /// Its run's input is open (the start gate, `stop`).
    input_open: bool,
    /// When the host last sent a line (the watchdog's clock).
    last_seen: Duration,
}

impl HostRun {
    /// A checked host whose run has not started.
    pub fn new(name: &str, ssh: &str, checked: Checked) -> HostRun {
        HostRun {
            name: name.into(),
            ssh: ssh.into(),
            checked,
            state: State::Checking,
            ready: false,
            phase: String::new(),
            iops: 0.0,
            target: 0.0,
            read_ms: 0.0,
            eta_s: None,
            tasks: None,
            result_seen: false,
            remote_exit: None,
            started: false,
            heard: false,
            collected: false,
            input_open: false,
            last_seen: Duration::ZERO,
        }
    }
}

/// What happened: the coordinator's input.
#[derive(Debug, Clone, PartialEq)]
pub enum Message {
    /// The host's run was started over ssh (`error: None`), or could not be.
    Started {
        /// The host's index.
        host: usize,
        /// Why it could not start.
        error: Option<String>,
    },
    /// A line of the host's event stream (its ssh's stdout).
    Line {
        /// The host's index.
        host: usize,
        /// The line, without its newline.
        text: String,
    },
    /// The host's ssh session ended.
    Exit {
        /// The host's index.
        host: usize,
        /// ssh's exit code (`None`: ssh itself was killed).
        code: Option<i32>,
        /// The last line ssh wrote to its stderr (ssh-stderr.log).
        stderr_last: String,
    },
    /// The host's collection ended.
    Collected {
        /// The host's index.
        host: usize,
        /// What happened to its remote run, for the host's message.
        note: Option<String>,
        /// Why its results could not be copied back.
        error: Option<String>,
        /// What was left out of the copy.
        warnings: Vec<String>,
    },
    /// The user asked to stop (Ctrl-C, SIGTERM): how many times so far.
    Interrupt {
        /// The count: the first stops every host cleanly, the second stops waiting.
        presses: usize,
    },
    /// Time passed (the watchdog's and the start's chance to act).
    Tick,
}

/// Something to tell the user, in words (the binary renders them; the event stream carries
/// the machine-readable ones as [`Action::Emit`]).
#[derive(Debug, Clone, PartialEq)]
pub enum Notice {
    /// The checks begin.
    Checking {
        /// Hosts to check.
        hosts: usize,
        /// At most this many at once.
        at_once: usize,
    },
    /// A host passed its checks.
    Checked {
        /// The host.
        host: String,
        /// What they found.
        checked: Box<Checked>,
    },
    /// A host's doctor found something to warn about or failing (the run goes on).
    Finding {
        /// The host.
        host: String,
        /// The finding.
        check: mbx_engine::result::DoctorCheck,
    },
    /// A host failed its checks (nothing will start).
    CheckFailed {
        /// The host.
        host: String,
        /// Why.
        error: String,
    },
    /// Every running host is ready: measuring starts after the margin.
    AllReady {
        /// Hosts that got the start.
        hosts: usize,
        /// Seconds until the start.
        margin_s: f64,
    },
    /// Every host is being asked to stop.
    Stopping,
    /// `fleet loadgen`: a mail server is being watched.
    Watching {
        /// Its name.
        server: String,
        /// Its ssh destination.
        ssh: String,
        /// Seconds between samples.
        every_s: f64,
    },
    /// A host's state changed (its run ended, or its collection added to its message).
    HostState {
        /// The host.
        host: String,
        /// Its state, described.
        text: String,
    },
    /// A host's results could not be copied back.
    CollectError {
        /// The host.
        host: String,
        /// Why.
        error: String,
    },
    /// A warning (a file not copied back, a result that does not load, fleet.json not
    /// written).
    Warning(String),
}

/// What to do: the coordinator's output.
#[derive(Debug, Clone, PartialEq)]
pub enum Action {
    /// A line for the event stream (`--progress jsonl`): a host's forwarded line (with `host`)
    /// or fleet's own event.
    Emit(Line),
    /// Tell the user.
    Notice(Notice),
    /// Write `text` to the host's run input (`start <time>`, `stop`).
    Send {
        /// The host's index.
        host: usize,
        /// The text, with its newline.
        text: String,
    },
    /// Close the host's run input.
    CloseInput {
        /// The host's index.
        host: usize,
    },
    /// End the host's ssh client (a host given up).
    KillSsh {
        /// The host's index.
        host: usize,
    },
    /// Collect the host: wait for or stop its remote run as `how` says, copy its results back;
    /// answered by [`Message::Collected`].
    Collect {
        /// The host's index.
        host: usize,
        /// How.
        how: Collect,
    },
    /// Stop waiting for hosts (collections in progress give up waiting).
    Quit,
    /// Rewrite fleet.json and fleet.html.
    WriteFleet {
        /// Not every host has finished with a result.
        partial: bool,
        /// The run was interrupted.
        interrupted: bool,
    },
}

/// The coordinator's settings.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Config {
    /// The watchdog's bound (`--host-timeout`): a running host silent for longer is given up.
    pub host_timeout: Duration,
    /// The time between the start being sent and measuring (`--start-margin`).
    pub start_margin: Duration,
    /// Stop every host once one fails (`--abort-on-host-failure`).
    pub abort_on_host_failure: bool,
}

/// The coordinator: every host's state and the run's.
#[derive(Debug, Clone)]
pub struct Coordinator {
    hosts: Vec<HostRun>,
    config: Config,
    start_at: Option<f64>,
    stopping: bool,
    presses: usize,
    quit: bool,
}

impl Coordinator {
    /// A coordinator for checked hosts whose runs are about to start.
    pub fn new(hosts: Vec<HostRun>, config: Config) -> Coordinator {
        Coordinator {
            hosts,
            config,
            start_at: None,
            stopping: false,
            presses: 0,
            quit: false,
        }
    }

    /// The hosts.
    pub fn hosts(&self) -> &[HostRun] {
        &self.hosts
    }

    /// The start time sent to the hosts, in the coordinator's clock (Unix seconds).
    pub fn start_at(&self) -> Option<f64> {
        self.start_at
    }

    /// The user asked to stop.
    pub fn interrupted(&self) -> bool {
        self.presses >= 1
    }

    /// Every started host is collected: the run is over.
    pub fn finished(&self) -> bool {
        self.hosts.iter().all(|h| !h.started || h.collected)
    }

    /// The run is partial: interrupted, or a host did not end with a verdict and a result
    /// (`has_result(name)`: its result.json came back).
    pub fn partial(&self, has_result: impl Fn(&str) -> bool) -> bool {
        self.interrupted()
            || self
                .hosts
                .iter()
                .any(|h| !matches!(h.state, State::Exited(0 | 1)) || !has_result(&h.name))
    }

    /// Every host passed its verdict.
    pub fn all_passed(&self) -> bool {
        self.hosts.iter().all(|h| h.state == State::Exited(0))
    }

    /// One message in, the actions it calls for out.
    pub fn on(&mut self, now: Now, msg: Message) -> Vec<Action> {
        let mut out = Vec::new();
        match msg {
            Message::Started { host, error } => {
                if let Some(h) = self.hosts.get_mut(host) {
                    h.last_seen = now.mono;
                    match error {
                        None => {
                            h.started = true;
                            h.input_open = true;
                            h.state = State::Running;
                        }
                        Some(e) => h.state = State::Failed(e),
                    }
                }
            }
            Message::Line { host, text } => self.on_line(now, host, &text, &mut out),
            Message::Exit {
                host,
                code,
                stderr_last,
            } => self.on_exit(host, code, &stderr_last, &mut out),
            Message::Collected {
                host,
                note,
                error,
                warnings,
            } => {
                if let Some(h) = self.hosts.get_mut(host) {
                    h.collected = true;
                    if let Some(n) = &note {
                        if let State::Failed(m) = &mut h.state {
                            m.push_str("; ");
                            m.push_str(n);
                        }
                    }
                    out.extend(
                        warnings
                            .into_iter()
                            .map(|w| Action::Notice(Notice::Warning(w))),
                    );
                    if let Some(e) = error {
                        out.push(Action::Notice(Notice::CollectError {
                            host: h.name.clone(),
                            error: e.clone(),
                        }));
                        match &mut h.state {
                            State::Failed(m) => {
                                if !m.contains(&e) {
                                    m.push_str("; ");
                                    m.push_str(&e);
                                }
                            }
                            s => *s = State::Failed(e),
                        }
                    }
                    if note.is_some() {
                        out.push(Action::Notice(Notice::HostState {
                            host: h.name.clone(),
                            text: h.state.describe(),
                        }));
                    }
                }
                out.push(Action::WriteFleet {
                    partial: true,
                    interrupted: self.interrupted(),
                });
            }
            Message::Interrupt { presses } => self.presses = self.presses.max(presses),
            Message::Tick => {}
        }
        self.housekeeping(now, &mut out);
        self.check_invariants();
        out
    }

    /// What holds after every message, whatever it was.
    fn check_invariants(&self) {
        // An interrupt, or a failed host with --abort-on-host-failure, has asked every host to
        // stop; the second interrupt (quit) comes after the first.
        debug_assert!(self.presses == 0 || self.stopping);
        debug_assert!(!self.quit || (self.stopping && self.presses >= 2));
        for h in &self.hosts {
            // Only a started run runs, and its input stays open until it ends or is given up.
            debug_assert!(h.state != State::Running || h.started, "{}", h.name);
            debug_assert!(h.state != State::Running || h.input_open, "{}", h.name);
            // A host is collected only once its run has ended.
            debug_assert!(!h.collected || h.state != State::Running, "{}", h.name);
        }
        // The start went out only once a host was ready (and ready is never taken back).
        debug_assert!(self.start_at.is_none() || self.hosts.iter().any(|h| h.ready));
    }

    fn on_line(&mut self, now: Now, host: usize, text: &str, out: &mut Vec<Action>) {
        let Some(h) = self.hosts.get_mut(host) else {
            return;
        };
        h.last_seen = now.mono;
        let line = match Line::parse(text) {
            Ok(l) => l,
            Err(e) => {
                // Not JSON at all (a shell's greeting on stdout): not the run's, ignored. JSON
                // that is not an event of this version: the run and the coordinator disagree
                // on the stream, and nothing it says can be trusted.
                let is_object =
                    serde_json::from_str::<serde_json::Value>(text).is_ok_and(|v| v.is_object());
                if is_object && h.state == State::Running {
                    let quoted: String = text.chars().take(QUOTE_LIMIT).collect();
                    let more = if quoted.len() < text.len() {
                        " ..."
                    } else {
                        ""
                    };
                    let why = format!(
                        "protocol error: a line of its event stream is not an event of mbxstress {} ({e}): {quoted}{more}",
                        env!("CARGO_PKG_VERSION")
                    );
                    give_up(host, h, why, out);
                }
                return;
            }
        };
        match &line.event {
            Event::Ready { .. } => h.ready = true,
            Event::Phase { phase } => h.phase = phase.key().to_string(),
            Event::Progress { progress: p } => {
                // The engine runs: from here on an event a second, the watchdog's full bound.
                h.heard = true;
                h.phase = p.phase.key().to_string();
                h.iops = p.iops;
                h.target = p.target_iops;
                h.read_ms = p.db_read_avg_ms;
                h.eta_s = p.phase_total_s.map(|t| (t - p.phase_elapsed_s).max(0.0));
            }
            Event::LoadgenProgress { progress: p } => {
                // A loadgen client: an event a second from its start.
                h.heard = true;
                h.phase = p.phase.clone();
                h.eta_s = p.eta_s;
                h.tasks = Some((p.done, p.total, p.per_s));
            }
            Event::Result { .. } => h.result_seen = true,
            // The wrapper's, not the run's: kept out of the event stream.
            Event::RemoteExit { status } => {
                h.remote_exit = Some(*status);
                return;
            }
            _ => {}
        }
        out.push(Action::Emit(Line {
            host: Some(h.name.clone()),
            event: line.event,
        }));
    }

    fn on_exit(
        &mut self,
        host: usize,
        code: Option<i32>,
        stderr_last: &str,
        out: &mut Vec<Action>,
    ) {
        let silence = self.config.host_timeout;
        let Some(h) = self.hosts.get_mut(host) else {
            return;
        };
        h.input_open = false;
        out.push(Action::CloseInput { host });
        let how = if matches!(h.state, State::Failed(_)) {
            // Given up (the watchdog, a second interrupt, a protocol error): its run is stopped.
            Collect::Stop
        } else {
            h.state = ended_state(h, code, stderr_last);
            if h.remote_exit.is_none() && matches!(code, Some(255) | None) {
                // The connection ended before the run reported its end: the remote run may
                // still be going (it stops by itself once its input ends) and write its result
                // later: wait for it.
                Collect::Lost { wait: silence }
            } else {
                Collect::Finished
            }
        };
        out.push(Action::Emit(
            Event::HostEnd {
                host: h.name.clone(),
                state: h.state.name().into(),
                message: h.state.message(),
            }
            .into(),
        ));
        out.push(Action::Notice(Notice::HostState {
            host: h.name.clone(),
            text: h.state.describe(),
        }));
        // Its run is over: passed, failed, stopped, or given up.
        debug_assert!(
            matches!(h.state, State::Exited(_) | State::Failed(_)),
            "{}: {:?}",
            h.name,
            h.state
        );
        debug_assert!(!h.input_open);
        out.push(Action::Collect { host, how });
    }

    /// What is due whatever the message: stopping, giving up, the watchdog, the start.
    fn housekeeping(&mut self, now: Now, out: &mut Vec<Action>) {
        if !self.stopping
            && (self.presses >= 1
                || self.config.abort_on_host_failure
                    && self
                        .hosts
                        .iter()
                        .any(|h| matches!(h.state, State::Failed(_))))
        {
            self.stopping = true;
            for (i, h) in self.hosts.iter().enumerate() {
                if h.input_open {
                    out.push(Action::Send {
                        host: i,
                        text: "stop\n".into(),
                    });
                }
            }
            out.push(Action::Notice(Notice::Stopping));
        }
        if self.presses >= 2 && !self.quit {
            self.quit = true;
            out.push(Action::Quit);
            for (i, h) in self.hosts.iter_mut().enumerate() {
                if h.state == State::Running {
                    let why = format!(
                        "not waited for: the coordinator was interrupted a second time (last phase {:?})",
                        h.phase
                    );
                    give_up(i, h, why, out);
                }
            }
        }
        // The watchdog: a run sends an event a second; one silent for longer than the host
        // timeout (its setup allowance before its first) has stopped answering.
        let silence = self.config.host_timeout;
        for (i, h) in self.hosts.iter_mut().enumerate() {
            if h.state != State::Running {
                continue;
            }
            let allowance = if h.heard {
                silence
            } else {
                silence.max(SETUP_SILENCE)
            };
            let quiet = now.mono.saturating_sub(h.last_seen);
            if quiet >= allowance {
                let why = format!(
                    "the watchdog gave up on it: no event for {:.0} s (--host-timeout {:.0}s{}) in phase {:?}",
                    quiet.as_secs_f64(),
                    silence.as_secs_f64(),
                    if h.heard { "" } else { ", at least 10 min during the setup" },
                    h.phase
                );
                give_up(i, h, why, out);
            }
        }
        // Every host still running is ready: one start time for all, in each host's clock.
        let running = self
            .hosts
            .iter()
            .filter(|h| h.state == State::Running)
            .count();
        if self.start_at.is_none()
            && !self.stopping
            && running > 0
            && self
                .hosts
                .iter()
                .filter(|h| h.state == State::Running)
                .all(|h| h.ready)
        {
            let margin_s = self.config.start_margin.as_secs_f64();
            let t = now.unix_s + margin_s;
            self.start_at = Some(t);
            let mut sent = 0;
            for (i, h) in self.hosts.iter().enumerate() {
                if h.input_open {
                    out.push(Action::Send {
                        host: i,
                        text: format!("start {:.6}\n", t + h.checked.offset_s),
                    });
                    sent += 1;
                }
            }
            // Every running host gets the start (its input is open while it runs).
            debug_assert!(sent >= running, "{sent} starts for {running} running hosts");
            out.push(Action::Emit(
                Event::FleetStart { start_at_unix_s: t }.into(),
            ));
            out.push(Action::Notice(Notice::AllReady {
                hosts: running,
                margin_s,
            }));
        }
    }
}

/// Gives up on a running host: marks it failed (`why`) and ends its ssh; its remote run is
/// then stopped over a fresh connection and its folder copied back ([`Collect::Stop`]).
fn give_up(i: usize, h: &mut HostRun, why: String, out: &mut Vec<Action>) {
    // Only a running host is given up (the watchdog, a second interrupt, a protocol error).
    debug_assert_eq!(h.state, State::Running, "{}", h.name);
    h.state = State::Failed(why);
    h.input_open = false;
    out.push(Action::CloseInput { host: i });
    out.push(Action::KillSsh { host: i });
}

/// How a host's run ended, from ssh's exit status (`code`, `None` if ssh itself was killed) and
/// the remote wrapper's report of the run's own status. ssh exits 255 both when the connection
/// fails and when the remote command is killed by a signal; the wrapper's line tells them apart:
/// without it, the connection ended before the run did. `last` is ssh's last line of stderr.
fn ended_state(h: &HostRun, code: Option<i32>, last: &str) -> State {
    match (h.remote_exit, code) {
        // 130 is the run's own exit after a clean stop (SIGINT or SIGTERM), with its result.
        (Some(st), _) if st > 128 && !h.result_seen => State::Failed(format!(
            "the remote run was killed by {} in phase {:?}: {last}",
            signal_text(st),
            h.phase
        )),
        (Some(st), _) if !h.result_seen => State::Failed(format!(
            "the remote run exited with {st} before writing its result: {last}"
        )),
        (Some(st), _) => State::Exited(i32::try_from(st).unwrap_or(i32::MAX)),
        (None, Some(255) | None) => State::Failed(format!(
            "the ssh connection ended ({}) in phase {:?}: {last}",
            code.map_or("killed".into(), |c| format!("exit {c}")),
            h.phase
        )),
        (None, Some(c)) if !h.result_seen => State::Failed(format!(
            "the remote run exited with {c} before writing its result: {last}"
        )),
        (None, Some(c)) => State::Exited(c),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A real run's `--progress jsonl` stream (`mbxstress run --start-gate stdin`, 3 s,
    /// recorded): what a host sends, line for line.
    const RECORDED: &str = include_str!("../../tests/fixtures/host-run.jsonl");

    const TIMEOUT: Duration = Duration::from_secs(60);

    fn config(abort_on_host_failure: bool) -> Config {
        Config {
            host_timeout: TIMEOUT,
            start_margin: Duration::from_secs(2),
            abort_on_host_failure,
        }
    }

    /// A coordinator for hosts named `names`, their clocks `offsets` ahead of ours, all started.
    struct Replay {
        c: Coordinator,
        /// Seconds since the start (the monotonic clock); the wall clock is 1e9 + it.
        t: f64,
        actions: Vec<Action>,
    }

    impl Replay {
        fn new(names: &[&str], offsets: &[f64], abort: bool) -> Replay {
            let hosts = names
                .iter()
                .zip(offsets)
                .map(|(n, o)| {
                    let checked = Checked {
                        offset_s: *o,
                        ..Checked::default()
                    };
                    HostRun::new(n, &format!("user@{n}"), checked)
                })
                .collect();
            let mut r = Replay {
                c: Coordinator::new(hosts, config(abort)),
                t: 0.0,
                actions: Vec::new(),
            };
            for i in 0..names.len() {
                r.on(Message::Started {
                    host: i,
                    error: None,
                });
            }
            r
        }

        fn now(&self) -> Now {
            Now {
                mono: Duration::from_secs_f64(self.t),
                unix_s: 1.0e9 + self.t,
            }
        }

        /// One message at the current time; its actions are kept (and returned).
        fn on(&mut self, m: Message) -> Vec<Action> {
            let a = self.c.on(self.now(), m);
            self.actions.extend(a.iter().cloned());
            a
        }

        /// `host` sends `lines`, 0.1 s apart.
        fn lines<'a>(&mut self, host: usize, lines: impl IntoIterator<Item = &'a str>) {
            for text in lines {
                self.t += 0.1;
                self.on(Message::Line {
                    host,
                    text: text.into(),
                });
            }
        }

        fn wait(&mut self, s: f64) -> Vec<Action> {
            self.t += s;
            self.on(Message::Tick)
        }

        fn host(&self, i: usize) -> &HostRun {
            &self.c.hosts()[i]
        }

        fn take(&mut self) -> Vec<Action> {
            std::mem::take(&mut self.actions)
        }
    }

    /// The recorded stream up to and including `ready`, and the rest.
    fn recorded() -> (Vec<&'static str>, Vec<&'static str>) {
        let lines: Vec<&str> = RECORDED.lines().collect();
        let ready = lines
            .iter()
            .position(|l| l.contains("\"event\":\"ready\""))
            .expect("the recording has its ready line");
        let (a, b) = lines.split_at(ready + 1);
        (a.to_vec(), b.to_vec())
    }

    fn sends(actions: &[Action], what: &str) -> Vec<(usize, String)> {
        actions
            .iter()
            .filter_map(|a| match a {
                Action::Send { host, text } if text.starts_with(what) => {
                    Some((*host, text.clone()))
                }
                _ => None,
            })
            .collect()
    }

    fn collects(actions: &[Action]) -> Vec<(usize, Collect)> {
        actions
            .iter()
            .filter_map(|a| match a {
                Action::Collect { host, how } => Some((*host, *how)),
                _ => None,
            })
            .collect()
    }

    fn failed_with(h: &HostRun) -> &str {
        match &h.state {
            State::Failed(m) => m,
            s => panic!("{} is {s:?}, not failed", h.name),
        }
    }

    /// Three hosts replay a real run's stream: the start goes out once all are ready, in each
    /// host's clock; every line is forwarded with its host; the progress figures are the
    /// stream's. Host c's connection drops mid-measure: it fails, naming the phase, and is
    /// collected as lost (its run may still write its result) while a and b finish and pass.
    #[test]
    fn a_recorded_stream_replays_and_a_host_failing_mid_run_leaves_the_others_to_finish() {
        let (setup, rest) = recorded();
        let mut r = Replay::new(&["a", "b", "c"], &[0.0, 0.5, -0.25], false);
        r.lines(0, setup.iter().copied());
        r.lines(1, setup.iter().copied());
        assert!(
            sends(&r.actions, "start").is_empty(),
            "started before c was ready"
        );
        assert_eq!(r.c.start_at(), None);
        r.lines(2, setup.iter().copied());
        let t = r.c.start_at().expect("the start once every host is ready");
        assert!((t - (1.0e9 + r.t + 2.0)).abs() < 1e-6, "{t}");
        let starts = sends(&r.actions, "start");
        assert_eq!(
            starts,
            [
                (0, format!("start {t:.6}\n")),
                (1, format!("start {:.6}\n", t + 0.5)),
                (2, format!("start {:.6}\n", t - 0.25)),
            ]
        );
        assert!(r.actions.contains(&Action::Emit(
            Event::FleetStart { start_at_unix_s: t }.into()
        )));
        assert!(r.actions.contains(&Action::Notice(Notice::AllReady {
            hosts: 3,
            margin_s: 2.0
        })));
        // c measures for a while, then its connection drops (ssh exits 255, no wrapper line).
        let measuring = rest
            .iter()
            .position(|l| l.contains("\"phase\":\"measure\"") && l.contains("progress"))
            .expect("a progress line in measure");
        r.lines(2, rest[..=measuring].iter().copied());
        r.take();
        r.t += 0.1;
        r.on(Message::Exit {
            host: 2,
            code: Some(255),
            stderr_last: "Connection to c closed by remote host.".into(),
        });
        let why = failed_with(r.host(2));
        assert!(
            why.contains("the ssh connection ended (exit 255) in phase \"measure\"")
                && why.contains("closed by remote host"),
            "{why}"
        );
        assert_eq!(collects(&r.actions), [(2, Collect::Lost { wait: TIMEOUT })]);
        assert!(r.actions.contains(&Action::Emit(
            Event::HostEnd {
                host: "c".into(),
                state: "failed".into(),
                message: Some(why.to_string()),
            }
            .into()
        )));
        // No --abort-on-host-failure: the others are not stopped.
        assert!(sends(&r.actions, "stop").is_empty());
        // a and b run to the end: their result, the wrapper's exit status, ssh's exit 0.
        r.take();
        for h in [0, 1] {
            r.lines(h, rest.iter().copied());
            r.lines(h, [r#"{"event":"remote_exit","status":0}"#]);
            r.on(Message::Exit {
                host: h,
                code: Some(0),
                stderr_last: String::new(),
            });
        }
        assert_eq!(r.host(0).state, State::Exited(0));
        assert_eq!(r.host(1).state, State::Exited(0));
        assert_eq!(
            collects(&r.actions),
            [(0, Collect::Finished), (1, Collect::Finished)]
        );
        // Every line of the run is forwarded with its host (the wrapper's is not), and the
        // live figures are the last progress line's, not zeros.
        let forwarded: Vec<&Line> = r
            .actions
            .iter()
            .filter_map(|a| match a {
                Action::Emit(l) if l.host.as_deref() == Some("a") => Some(l),
                _ => None,
            })
            .collect();
        assert_eq!(forwarded.len(), rest.len());
        let last_progress = rest
            .iter()
            .rev()
            .find_map(|l| match Line::parse(l).expect("recorded").event {
                Event::Progress { progress } => Some(progress),
                _ => None,
            })
            .expect("progress in the recording");
        assert!(last_progress.iops > 0.0);
        let a = r.host(0);
        assert_eq!(
            (a.iops, a.target, a.read_ms),
            (
                last_progress.iops,
                last_progress.target_iops,
                last_progress.db_read_avg_ms
            )
        );
        assert_eq!(a.phase, "shutdown");
        assert!(a.result_seen && a.ready && a.heard);
        assert_eq!(a.remote_exit, Some(0));
        // The collections end: fleet.json is rewritten after each; the run is over, partial.
        assert!(!r.c.finished());
        for h in [0, 1, 2] {
            let a = r.on(Message::Collected {
                host: h,
                note: (h == 2).then(|| "the host was reached again; its run had ended".into()),
                error: None,
                warnings: Vec::new(),
            });
            assert!(a.contains(&Action::WriteFleet {
                partial: true,
                interrupted: false
            }));
        }
        assert!(r.c.finished());
        assert!(failed_with(r.host(2)).ends_with("; the host was reached again; its run had ended"));
        assert!(r.c.partial(|_| true));
        assert!(!r.c.all_passed());
    }

    /// The watchdog: a running host that falls silent is given up after --host-timeout (its
    /// ssh ended, its input closed), and after at least SETUP_SILENCE before its engine's first
    /// progress event; its run is then collected by stopping it.
    #[test]
    fn the_watchdog_gives_up_a_silent_host_and_its_run_is_stopped() {
        let (setup, rest) = recorded();
        // a's engine runs (it sent progress), then a falls silent; b says nothing yet (setting
        // up): a is given up after the host timeout, b has the setup allowance.
        let mut r = Replay::new(&["a", "b"], &[0.0, 0.0], false);
        r.lines(0, setup.iter().copied());
        r.take();
        r.wait(TIMEOUT.as_secs_f64() + 1.0);
        assert!(
            failed_with(r.host(0))
                .contains("no event for 61 s (--host-timeout 60s) in phase \"wait_start\""),
            "{:?}",
            r.host(0).state
        );
        assert_eq!(r.host(1).state, State::Running);

        // Both measure; a keeps talking, b falls silent.
        let mut r = Replay::new(&["a", "b"], &[0.0, 0.0], false);
        r.lines(0, setup.iter().copied());
        r.lines(1, setup.iter().copied());
        let measuring = rest
            .iter()
            .position(|l| l.contains("\"phase\":\"measure\"") && l.contains("progress"))
            .expect("measure");
        r.lines(0, rest[..=measuring].iter().copied());
        r.lines(1, rest[..=measuring].iter().copied());
        let last_b = r.t;
        let progress = rest[measuring];
        while r.t < last_b + TIMEOUT.as_secs_f64() - 0.5 {
            r.lines(0, [progress]);
            r.wait(0.3);
        }
        assert_eq!(r.host(1).state, State::Running, "given up too early");
        r.take();
        r.wait(1.0);
        let why = failed_with(r.host(1));
        assert!(
            why.starts_with("the watchdog gave up on it: no event for 6")
                && why.ends_with(" s (--host-timeout 60s) in phase \"measure\""),
            "{why}"
        );
        assert!(r.actions.contains(&Action::KillSsh { host: 1 }));
        assert!(r.actions.contains(&Action::CloseInput { host: 1 }));
        assert_eq!(r.host(0).state, State::Running);
        // Its ssh ends (killed): the run is stopped over a fresh connection, the reason kept.
        r.take();
        r.on(Message::Exit {
            host: 1,
            code: None,
            stderr_last: String::new(),
        });
        assert_eq!(collects(&r.actions), [(1, Collect::Stop)]);
        assert!(failed_with(r.host(1)).contains("watchdog"));

        // Setup: a host never heard from is given up after SETUP_SILENCE, not the timeout.
        let mut r = Replay::new(&["s"], &[0.0], false);
        r.wait(SETUP_SILENCE.as_secs_f64() - 1.0);
        assert_eq!(r.host(0).state, State::Running);
        r.wait(1.0);
        assert!(failed_with(r.host(0)).contains("at least 10 min during the setup"));
    }

    /// A dropped connection after the run wrote its result (no wrapper line: the connection
    /// ended first) is a failed host collected as lost; a run killed by a signal (the
    /// wrapper's status 137, ssh's 255) is told apart and collected as finished.
    #[test]
    fn a_dropped_connection_is_told_from_a_run_killed_by_a_signal() {
        let (setup, rest) = recorded();
        let mut r = Replay::new(&["a", "b"], &[0.0, 0.0], false);
        for h in [0, 1] {
            r.lines(h, setup.iter().copied());
            r.lines(h, rest.iter().copied());
        }
        r.take();
        r.on(Message::Exit {
            host: 0,
            code: Some(255),
            stderr_last: "client_loop: send disconnect: Broken pipe".into(),
        });
        assert!(failed_with(r.host(0)).contains("the ssh connection ended (exit 255)"));
        assert_eq!(collects(&r.actions), [(0, Collect::Lost { wait: TIMEOUT })]);
        r.take();
        r.lines(1, [r#"{"event":"remote_exit","status":137}"#]);
        r.on(Message::Exit {
            host: 1,
            code: Some(255),
            stderr_last: String::new(),
        });
        // It wrote its result before the signal: its verdict stands, the signal is named.
        assert_eq!(r.host(1).state, State::Exited(137));
        assert_eq!(
            r.host(1).state.message().as_deref(),
            Some("the remote run was killed by signal 9 (SIGKILL) after writing its result")
        );
        assert_eq!(collects(&r.actions), [(1, Collect::Finished)]);
        // The collection of the lost host says what it found; a copy that failed is kept too.
        r.take();
        r.on(Message::Collected {
            host: 0,
            note: Some(
                "the host was reached again; its run had ended; its result was copied back".into(),
            ),
            error: None,
            warnings: vec![
                "host a: \"./x\" (a FIFO) in its results folder was not copied back".into(),
            ],
        });
        assert!(failed_with(r.host(0)).ends_with("; its result was copied back"));
        assert!(r.actions.contains(&Action::Notice(Notice::Warning(
            "host a: \"./x\" (a FIFO) in its results folder was not copied back".into()
        ))));
        r.on(Message::Collected {
            host: 1,
            note: None,
            error: Some("copying the results of host b back failed".into()),
            warnings: Vec::new(),
        });
        assert_eq!(
            failed_with(r.host(1)),
            "copying the results of host b back failed"
        );
        assert!(r.c.finished() && r.c.partial(|_| true));
    }

    /// A renamed field in a host's line does not read as zero: the host fails with a protocol
    /// error quoting the line, its ssh is ended and the line is not forwarded. A line that is
    /// not JSON at all (a shell's greeting) is not the run's and is ignored.
    #[test]
    fn a_renamed_field_in_a_hosts_line_fails_the_host_loudly() {
        let (setup, rest) = recorded();
        let mut r = Replay::new(&["a", "b"], &[0.0, 0.0], false);
        r.lines(0, ["Welcome to a (motd on stdout)"]);
        assert_eq!(r.host(0).state, State::Running);
        r.lines(0, setup.iter().copied());
        r.lines(1, setup.iter().copied());
        let progress = rest
            .iter()
            .find(|l| l.contains("\"phase\":\"measure\"") && l.contains("progress"))
            .expect("measure");
        r.lines(0, [*progress]);
        let iops = r.host(0).iops;
        assert!(iops > 0.0);
        // The same line from a run whose `iops` is called something else.
        let renamed = progress.replace("\"iops\":", "\"iops_now\":");
        assert_ne!(&renamed, progress);
        r.take();
        r.lines(0, [renamed.as_str()]);
        let why = failed_with(r.host(0));
        assert!(
            why.starts_with(
                "protocol error: a line of its event stream is not an event of mbxstress"
            ) && why.contains("missing field `iops`")
                && why.contains("\"iops_now\":"),
            "{why}"
        );
        assert_eq!(r.host(0).iops, iops, "the renamed line changed the figures");
        assert!(r.actions.contains(&Action::KillSsh { host: 0 }));
        assert!(!r.actions.iter().any(|a| matches!(a, Action::Emit(_))));
        // An event this version does not know fails the same way.
        r.lines(1, [r#"{"event":"progress_v2","iops":5}"#]);
        assert!(failed_with(r.host(1)).contains("progress_v2"));
    }

    /// The first interrupt (or, with --abort-on-host-failure, a failed host) asks every run to
    /// stop and no start goes out after it; the second stops waiting for the hosts.
    #[test]
    fn interrupts_stop_every_host_then_stop_waiting() {
        let (setup, _) = recorded();
        let mut r = Replay::new(&["a", "b"], &[0.0, 0.0], false);
        r.lines(0, setup.iter().copied());
        r.take();
        r.on(Message::Interrupt { presses: 1 });
        assert_eq!(
            sends(&r.actions, "stop"),
            [(0, "stop\n".into()), (1, "stop\n".into())]
        );
        assert!(r.actions.contains(&Action::Notice(Notice::Stopping)));
        r.lines(1, setup.iter().copied());
        assert_eq!(r.c.start_at(), None, "a start after the stop");
        r.take();
        r.on(Message::Interrupt { presses: 2 });
        assert!(r.actions.contains(&Action::Quit));
        for h in [0, 1] {
            assert!(failed_with(r.host(h)).contains("interrupted a second time"));
        }
        assert!(r.c.interrupted());

        let mut r = Replay::new(&["a", "b"], &[0.0, 0.0], true);
        r.take();
        r.on(Message::Exit {
            host: 0,
            code: Some(255),
            stderr_last: String::new(),
        });
        assert_eq!(sends(&r.actions, "stop"), [(1, "stop\n".into())]);
    }
}
