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

use crate::event::{Event, Line};

use super::remote::signal_text;
use super::ssh::Checked;

/// The watchdog's allowance during a host's setup (before its engine's first event): database
/// creation sends an event a second, other steps (attaching, checking) are silent.
pub const SETUP_SILENCE: Duration = Duration::from_secs(600);

/// How much of a line a protocol error quotes.
const QUOTE_LIMIT: usize = 300;

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
                    out.extend(warnings.into_iter().map(|w| Action::Notice(Notice::Warning(w))));
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
        out
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
                let is_object = serde_json::from_str::<serde_json::Value>(text)
                    .is_ok_and(|v| v.is_object());
                if is_object && h.state == State::Running {
                    let quoted: String = text.chars().take(QUOTE_LIMIT).collect();
                    let more = if quoted.len() < text.len() { " ..." } else { "" };
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
                h.eta_s = p
                    .phase_total_s
                    .map(|t| (t - p.phase_elapsed_s).max(0.0));
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

    fn on_exit(&mut self, host: usize, code: Option<i32>, stderr_last: &str, out: &mut Vec<Action>) {
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
            for (i, h) in self.hosts.iter().enumerate() {
                if h.input_open {
                    out.push(Action::Send {
                        host: i,
                        text: format!("start {:.6}\n", t + h.checked.offset_s),
                    });
                }
            }
            out.push(Action::Emit(Event::FleetStart { start_at_unix_s: t }.into()));
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
