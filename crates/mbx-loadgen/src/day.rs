//! Running simulated days against a real server: the scheduler's tasks dispatched at their
//! times (open loop) to one actor per user, each doing its tasks in order with its client
//! type's sessions; every copy delivered is checked by the ledger; LoadGen's overload guard.
//!
//! This is the engine the `loadgen` command will drive and report; it returns its figures
//! ([`DayReport`]) and knows nothing of output.

use std::collections::{BTreeMap, HashSet};
use std::future::Future;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, SystemTime};

use hdrhistogram::Histogram;
use tokio::sync::mpsc;
use tokio::task::JoinSet;

use crate::clock::{self, DayClock, Instant};
use crate::conn::Endpoint;
use crate::deadline;
use crate::eas::device::{self, Device, NewItem};
use crate::error::{Error, Result};
use crate::imap::{IdleEvent, ImapClient, Listed, Namespace};
use crate::init::{uid_set, INIT_SEQ_BASE};
use crate::ledger::{DeliverySummary, Ledger, Via};
use crate::message::{Generator, MessageId, Verdict};
use crate::metrics::Recorder;
use crate::pop3::Pop3Client;
use crate::sched::{ClientType, Scheduler, Task, TaskKind};
use crate::smtp::{AuthMechanism, SmtpClient};
use crate::users::User;
use crate::watch::{WatchPlan, WatchReport};

/// Where the users' clients connect.
#[derive(Debug, Clone)]
pub struct Servers {
    /// SMTP submission.
    pub smtp: Endpoint,
    /// IMAP.
    pub imap: Endpoint,
    /// POP3.
    pub pop3: Endpoint,
    /// The name clients give in EHLO.
    pub helo: String,
    /// The SASL mechanism of submission.
    pub auth: AuthMechanism,
    /// The ActiveSync endpoint of the `eas` users (None: a run without them).
    pub eas: Option<device::Target>,
}

/// What to run.
#[derive(Debug, Clone)]
pub struct DayPlan {
    /// The schedule's seed.
    pub seed: u64,
    /// The profile: messages sent + received per mailbox per day.
    pub messages_per_day: u32,
    /// The simulated day's length.
    pub day: Duration,
    /// Simulated days to run.
    pub days: u32,
    /// LoadGen's guard: stop when unfinished tasks exceed this many per user (1.5).
    pub overload_per_user: f64,
    /// After the last task, how long to keep looking for copies not yet delivered.
    pub grace: Duration,
    /// Set it (from a Ctrl-C or SIGTERM handler) to stop the run: it ends as after the overload
    /// guard (queued tasks dropped, running ones cancelled after [`STOP_WAIT`]) and reports
    /// what it did.
    pub stop: Arc<AtomicBool>,
    /// How often a [`DaySample`] goes to [`DayPlan::samples`] (zero: only the final one).
    pub sample_interval: Duration,
    /// Where samples go: one every `sample_interval` from the day's start, and a final one
    /// (`last`) when the run ends. None: no samples.
    pub samples: Option<mpsc::UnboundedSender<DaySample>>,
    /// Record each mailbox's state before the first task (true; see [`run_days`]), so checks
    /// fetch only mail that came after it. False starts every user from UID 0 and no UIDL.
    pub baseline: bool,
    /// The test's length from the day's start (after the baseline): tasks scheduled at or
    /// after it are not planned or dispatched; then the grace sweep. None: `day` x `days`.
    pub duration: Option<Duration>,
    /// Stress mode (LoadGen's): each user's tasks in order, the next dispatched as soon as its
    /// previous one ends (closed loop), whatever their scheduled times, until `duration` or
    /// the days' tasks are done. Task latency is then service time (from dispatch), desktop
    /// users do not idle (the next task is already due), and the overload guard cannot trip
    /// (at most one task per user is unfinished).
    pub stress: bool,
    /// A synchronized start (several client machines at one instant): after the baseline the
    /// run says it is ready and waits for the gate to open before the day's clock starts.
    /// None: the day starts as soon as the baseline ends.
    pub gate: Option<DayGate>,
    /// The accounting side's watchers (server delivery latency, IDLE's promptness): see
    /// [`crate::watch`]. `mailboxes: 0` runs none.
    pub watch: WatchPlan,
    /// Counters the caller may read at any moment (progress between samples). None: none kept.
    pub live: Option<Arc<Live>>,
    /// `eas` devices between tasks: a parked Ping on the Inbox with this heartbeat (push, as a
    /// phone waits), renewed when it passes; a Ping that reports new mail is followed by a
    /// check, its copies seen at the Ping's answer (by push). None (the default): no Ping, new
    /// mail is seen at the checks. Not in stress mode. A task that comes cancels the parked
    /// Ping (its connection closed; a server may hold a worker for it until the heartbeat).
    pub eas_ping: Option<Duration>,
    /// The day's wall time (the start in the report, the gate's): the system's, or a simulated
    /// one on a paused runtime (see [`crate::clock`]; every wait and timeout is on that runtime's
    /// clock).
    pub clock: DayClock,
}

/// What a run has done so far, updated as it goes (a terminal's progress reads it every
/// second; samples come every `sample_interval`).
#[derive(Debug, Default)]
pub struct Live {
    /// Users whose baseline is over (failed ones included).
    pub baseline_done: AtomicU64,
    /// When the day's clock started (after the baseline, the watchers and the gate).
    pub day_started: std::sync::OnceLock<Instant>,
    /// Tasks the schedule holds (as [`DaySample::planned`]), set before the baseline.
    pub planned: AtomicU64,
    /// Tasks completed since the day started.
    pub completed: AtomicU64,
    /// Tasks failed since the day started.
    pub failed: AtomicU64,
}

/// The day's start gate: `ready` gets one message when the baseline is done; the day then
/// waits until `opens_at` answers a wall time and that time comes (or [`DayPlan::stop`]).
#[derive(Clone)]
pub struct DayGate {
    /// Told once, when the run waits at the gate.
    pub ready: mpsc::UnboundedSender<()>,
    /// The wall time the gate opens at, once known.
    pub opens_at: Arc<dyn Fn() -> Option<SystemTime> + Send + Sync>,
}

impl std::fmt::Debug for DayGate {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("DayGate")
            .field("opens_at", &(self.opens_at)())
            .finish_non_exhaustive()
    }
}

/// How often the gate is looked at while it has no time (the coordinator's line may come at
/// any moment; 10 ms is well under the start margin).
const GATE_POLL: Duration = Duration::from_millis(10);

/// Waits at `gate`: ready said once, then until its time (true) or a stop (false).
async fn wait_at_gate(gate: &DayGate, stop: &AtomicBool, clock: &DayClock) -> bool {
    let _ = gate.ready.send(());
    loop {
        if stop.load(Ordering::SeqCst) {
            return false;
        }
        if let Some(at) = (gate.opens_at)() {
            // The wait in small steps: a stop during a long margin is seen at once.
            match clock.wall_until(at) {
                left if !left.is_zero() => clock::sleep(left.min(GATE_POLL)).await,
                _ => return true,
            }
        } else {
            clock::sleep(GATE_POLL).await;
        }
    }
}

impl Default for DayPlan {
    /// LoadGen's defaults: an 8-hour day at 150 messages, the guard at 1.5 per user; a minute of
    /// grace, a sample every 10 s (none sent until `samples` is set), the baseline on.
    fn default() -> Self {
        DayPlan {
            seed: 1,
            messages_per_day: 150,
            day: Duration::from_secs(8 * 3600),
            days: 1,
            overload_per_user: 1.5,
            grace: Duration::from_secs(60),
            stop: Arc::new(AtomicBool::new(false)),
            sample_interval: Duration::from_secs(10),
            samples: None,
            baseline: true,
            duration: None,
            stress: false,
            gate: None,
            watch: WatchPlan::default(),
            live: None,
            eas_ping: None,
            clock: DayClock::real(),
        }
    }
}

/// Counts of a sample, for its interval or since the day started.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct SampleCounts {
    /// Tasks dispatched.
    pub dispatched: u64,
    /// Tasks that finished without error.
    pub completed: u64,
    /// Tasks that failed.
    pub failed: u64,
    /// Failed tasks by error class name (`auth`, `timeout`, ...).
    pub failed_by_class: BTreeMap<&'static str, u64>,
    /// Copies sent: messages accepted by SMTP x their recipients (copies expected).
    pub copies_sent: u64,
    /// Copies delivered: seen intact in their recipient's mailbox.
    pub copies_delivered: u64,
}

/// Latency percentiles of one interval, milliseconds.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct LatencyMs {
    /// Median.
    pub p50: f64,
    /// 95th percentile.
    pub p95: f64,
    /// Highest.
    pub max: f64,
}

/// The run's state at one moment, and what happened since the previous sample.
#[derive(Debug, Clone)]
pub struct DaySample {
    /// Since the day started (after the baseline).
    pub elapsed: Duration,
    /// Since the previous sample (or the day's start).
    pub interval: Duration,
    /// Whether this is the run's final sample (after the grace sweep or a stop).
    pub last: bool,
    /// What happened in the interval.
    pub this_interval: SampleCounts,
    /// What happened since the day started (the sums of every interval so far).
    pub cumulative: SampleCounts,
    /// Tasks dispatched and not finished (queued or running) now.
    pub unfinished: u64,
    /// Tasks the schedule holds (progress: `cumulative.dispatched / planned`; the days end at
    /// `day x days`).
    pub planned: u64,
    /// Latency of the tasks completed in the interval, from their scheduled time, every task
    /// kind together; None when none completed.
    pub task_latency_ms: Option<LatencyMs>,
    /// 95th percentile of the delivery latency of the copies delivered in the interval; None
    /// when none was.
    pub delivery_p95_ms: Option<f64>,
}

/// One task kind's figures.
#[derive(Debug, Clone)]
pub struct TaskStats {
    /// Tasks dispatched.
    pub dispatched: u64,
    /// Tasks that did the work they name, without error (each sent protocol commands: see
    /// [`NO_COMMAND`]).
    pub completed: u64,
    /// Tasks that ran their session but had nothing to act on (a move, delete or flag when the
    /// user holds no message of the run even after a check; a log off with no session open):
    /// not completed, and not held against the server.
    pub skipped: u64,
    /// Failed tasks by error class.
    pub failed: BTreeMap<&'static str, u64>,
    /// Latency from the scheduled time to the end, microseconds (a task that waited behind the
    /// user's earlier tasks counts its wait: no coordinated omission).
    pub from_schedule_us: Histogram<u64>,
    /// Latency from the task's own start to its end, microseconds.
    pub service_us: Histogram<u64>,
}

fn histogram() -> Histogram<u64> {
    Histogram::new_with_bounds(1, 3_600_000_000, 3)
        .expect("constant bounds within hdrhistogram's limits")
}

impl TaskStats {
    fn new() -> TaskStats {
        let h = histogram;
        TaskStats {
            dispatched: 0,
            completed: 0,
            skipped: 0,
            failed: BTreeMap::new(),
            from_schedule_us: h(),
            service_us: h(),
        }
    }
}

/// What a run of days did.
#[derive(Debug, Clone)]
pub struct DayReport {
    /// Tasks the schedule holds for the days, before `duration` (stress mode: every task of
    /// the days, an upper bound: judge tasks completed against `dispatched`).
    pub planned: u64,
    /// Tasks dispatched (all of them unless the guard stopped the run).
    pub dispatched: u64,
    /// Per task kind.
    pub tasks: BTreeMap<TaskKind, TaskStats>,
    /// The most tasks unfinished (queued or running) at once.
    pub max_unfinished: u64,
    /// Whether the overload guard stopped the run.
    pub overloaded: bool,
    /// Whether the caller asked the run to stop ([`DayPlan::stop`]: Ctrl-C, SIGTERM).
    pub interrupted: bool,
    /// A phase that overran its deadline ([`crate::deadline`]) and ended the run: what it was,
    /// the deadline, and the servers its sessions were waiting on.
    pub deadline: Option<String>,
    /// Copies expected, delivered, missing, duplicated, corrupted; delivery latency.
    pub delivery: DeliverySummary,
    /// The first error of each class met (in tasks, the baseline or the sweep), for messages.
    pub first_errors: Vec<Error>,
    /// Wall time from the day's start (after the baseline) to the end of the grace sweep.
    pub elapsed: Duration,
    /// Wall time of the baseline, before the day.
    pub baseline: Duration,
    /// Users whose baseline failed, by error class (they start from an empty view: their
    /// first check fetches the whole INBOX once).
    pub baseline_failed: BTreeMap<&'static str, u64>,
    /// Messages downloaded by checks for new mail (IMAP and POP3), and their bytes: only mail
    /// that arrived after the baseline, each once.
    pub check_fetched: u64,
    /// Bytes of those messages.
    pub check_fetched_bytes: u64,
    /// When the day's clock started (after the baseline and the gate), Unix seconds.
    pub start_unix_s: f64,
    /// What folder discovery found at the first move (NAMESPACE, SPECIAL-USE, the folder
    /// moves go to), for the log; None when no move ran.
    pub folders: Option<String>,
    /// The first refused CREATE of the move folder (its detail names the folder, the server's
    /// answer and the fix): said once, whatever the moves that failed after it.
    pub folder_refused: Option<Error>,
    /// What the watchers measured (None: none ran).
    pub watch: Option<WatchReport>,
    /// Recipients whose mailbox could not be read at the grace sweep's last look (user index
    /// -> the error): their missing copies were not looked for.
    pub unreadable: BTreeMap<u32, String>,
    /// Copies sent by `eas` users that arrived as their server composed them anew (headers or
    /// body rewritten, the identity and the sender's text kept: [`Generator::composed_from`]),
    /// counted delivered; part of `delivery.delivered`.
    pub composed: u64,
    /// Missing copies of those recipients (part of `delivery.missing`).
    pub missing_not_looked: u64,
}

/// Sessions at once of the baseline, the grace sweep and the final logouts.
pub const SESSIONS_AT_ONCE: usize = 64;

/// Messages already in a mailbox before the day that a user may read: the last ones (4 KB a
/// user; 64 MB for 16,000 users).
pub const OLD_READABLE: usize = 1_000;

/// How often an idling session re-issues IDLE (an IMAP fact: [`crate::imap::IDLE_REISSUE`]).
pub use crate::imap::IDLE_REISSUE;

/// What ended an IDLE.
enum Wake {
    /// A task came (None: no more will).
    Job(Option<Job>),
    /// The server announced new messages (`EXISTS`): when, and the count.
    News(Instant, u32),
    /// Time to re-issue IDLE.
    Reissue,
    /// The session failed.
    Lost(Error),
}

/// The highest message count an `EXISTS` among `news` announced.
fn announced_exists(news: &[String]) -> Option<u32> {
    news.iter()
        .filter_map(|n| {
            let mut w = n.split_whitespace();
            let count = w.next()?.parse::<u32>().ok()?;
            w.next()
                .is_some_and(|k| k.eq_ignore_ascii_case("EXISTS"))
                .then_some(count)
        })
        .max()
}

/// How long running tasks get to finish when the overload guard or a stop request (Ctrl-C,
/// SIGTERM) stops a run: no wait outlives a stop request by more than this.
pub const STOP_WAIT: Duration = Duration::from_secs(1);

/// Task figures: per kind for the report, and the current interval's for samples.
struct Meter {
    tasks: BTreeMap<TaskKind, TaskStats>,
    interval: SampleCounts,
    cumulative: SampleCounts,
    /// From the scheduled time, every kind, this interval only.
    interval_latency_us: Histogram<u64>,
}

impl Meter {
    fn dispatched(&mut self, kind: TaskKind) {
        self.tasks
            .entry(kind)
            .or_insert_with(TaskStats::new)
            .dispatched += 1;
        self.interval.dispatched += 1;
        self.cumulative.dispatched += 1;
    }

    fn finished(
        &mut self,
        kind: TaskKind,
        outcome: Outcome,
        due: Instant,
        started: Instant,
        end: Instant,
    ) {
        let st = self.tasks.entry(kind).or_insert_with(TaskStats::new);
        match outcome {
            Outcome::Skipped => st.skipped += 1,
            Outcome::Completed => {
                let from_schedule = (end.saturating_duration_since(due).as_micros() as u64).max(1);
                st.completed += 1;
                st.from_schedule_us.saturating_record(from_schedule);
                st.service_us.saturating_record(
                    (end.saturating_duration_since(started).as_micros() as u64).max(1),
                );
                self.interval_latency_us.saturating_record(from_schedule);
                self.interval.completed += 1;
                self.cumulative.completed += 1;
            }
            Outcome::Failed(class) => {
                *st.failed.entry(class).or_insert(0) += 1;
                for c in [&mut self.interval, &mut self.cumulative] {
                    c.failed += 1;
                    *c.failed_by_class.entry(class).or_insert(0) += 1;
                }
            }
        }
        let st = &self.tasks[&kind];
        let failed: u64 = st.failed.values().sum();
        assert!(
            st.completed + st.skipped + failed <= st.dispatched,
            "{kind:?}: more tasks finished than dispatched"
        );
        assert_eq!(
            st.from_schedule_us.len(),
            st.completed,
            "{kind:?}: one latency per completed task"
        );
        assert_eq!(
            self.interval_latency_us.len(),
            self.interval.completed,
            "the interval's latencies are its completed tasks'"
        );
    }
}

/// What a task's action did, when it did not fail.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Acted {
    /// The work the task names.
    Done,
    /// Nothing to act on (see [`TaskStats::skipped`]).
    Nothing,
}

/// How a finished task is counted.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Outcome {
    Completed,
    Skipped,
    Failed(&'static str),
}

/// The failure class of a task that claimed to be done without sending a single protocol
/// command: a fault of the engine, never counted completed.
pub const NO_COMMAND: &str = "no_command";

/// The invariant of counting: a task is completed only when it did the work it names and sent
/// at least one protocol command (`commands`, counted by the user's [`Recorder::counting`]
/// handle over the task, log on and log off included).
fn outcome(r: &Result<Acted>, commands: u64) -> Outcome {
    match r {
        Err(e) => Outcome::Failed(e.class.name()),
        Ok(Acted::Nothing) => Outcome::Skipped,
        Ok(Acted::Done) if commands == 0 => Outcome::Failed(NO_COMMAND),
        Ok(Acted::Done) => Outcome::Completed,
    }
}

/// Where a user's moves go: the server's `\Archive` folder (RFC 6154) when it lists one (not
/// created), else `Archive` under the personal namespace's prefix, joined with its delimiter
/// when the prefix does not end with it (to be created). No namespace: top level (`Archive`).
pub fn archive_folder(ns: Option<&Namespace>, listed: &[Listed]) -> (String, bool) {
    if let Some(l) = listed.iter().find(|l| l.has("\\Archive")) {
        return (l.name.clone(), false);
    }
    let name = match ns {
        Some(n) if !n.prefix.is_empty() => match n.delimiter {
            Some(d) if !n.prefix.ends_with(d) => format!("{}{d}Archive", n.prefix),
            _ => format!("{}Archive", n.prefix),
        },
        _ => "Archive".to_owned(),
    };
    (name, true)
}

/// What folder discovery found, for the run's log.
fn folders_note(ns: Option<&Namespace>, listed: &[Listed], archive: &str, created: bool) -> String {
    let ns = match ns {
        Some(n) => format!(
            "personal namespace {:?} (delimiter {:?})",
            n.prefix,
            n.delimiter.map(String::from).unwrap_or_default()
        ),
        None => "no NAMESPACE (top level)".to_owned(),
    };
    let uses: Vec<String> = listed
        .iter()
        .flat_map(|l| {
            ["\\Archive", "\\Trash", "\\Sent", "\\Drafts", "\\Junk"]
                .into_iter()
                .filter(|a| l.has(a))
                .map(|a| format!("{a} {:?}", l.name))
        })
        .collect();
    format!(
        "folders: {ns}; special-use {}; moves go to {archive:?} ({})",
        if uses.is_empty() {
            "none listed".to_owned()
        } else {
            uses.join(", ")
        },
        if created {
            "made by the run"
        } else {
            "the server's \\Archive"
        }
    )
}

/// A discovery command's answer: a `NO` or `BAD` (the server answered; the session is in step)
/// is None, as from a server without the extension; other errors are the task's.
fn answered<T>(r: Result<T>) -> Result<Option<T>> {
    match r {
        Ok(v) => Ok(Some(v)),
        Err(e)
            if matches!(e.class, crate::error::ErrorClass::Rejected(_))
                || e.detail.starts_with("BAD") =>
        {
            Ok(None)
        }
        Err(e) => Err(e),
    }
}

/// The example errors a run keeps for messages: the first of each class (its count is the
/// tasks table's), so a class first met late in a run still has its message.
#[derive(Debug, Default)]
struct Examples(Vec<Error>);

impl Examples {
    fn keep(&mut self, e: Error) {
        if !self.0.iter().any(|k| k.class == e.class) {
            self.0.push(e);
        }
    }
}

/// When the last sample was taken, and whether the final one has been.
struct Sampling {
    last: Duration,
    closed: bool,
}

struct Shared {
    ledger: Arc<Mutex<Ledger>>,
    stats: Mutex<Meter>,
    errors: Mutex<Examples>,
    /// The first refused CREATE of the move folder.
    folder_refused: Mutex<Option<Error>>,
    /// What the first folder discovery found.
    folders: Mutex<Option<String>>,
    /// Users whose last look at the grace sweep failed, with the error.
    unreadable: Mutex<BTreeMap<u32, String>>,
    live: Option<Arc<Live>>,
    unfinished: AtomicU64,
    /// Set when the run stops early: queued tasks are dropped, not run.
    stopping: AtomicBool,
    fetched: AtomicU64,
    fetched_bytes: AtomicU64,
    sampling: Mutex<Sampling>,
    gen: Generator,
    servers: Servers,
    rec: Recorder,
    addresses: Vec<String>,
    /// The addresses of the `eas` users: copies they sent may arrive composed by the server.
    eas_senders: HashSet<String>,
    /// Copies accepted as server-composed ([`DayReport::composed`]).
    composed: AtomicU64,
    /// Desktop IMAP sessions idle between tasks (not in stress mode).
    idle: bool,
    /// The heartbeat of `eas` devices' parked Ping between tasks (None: none).
    eas_ping: Option<Duration>,
}

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    match m.lock() {
        Ok(g) => g,
        Err(p) => p.into_inner(),
    }
}

fn latency_ms(h: &Histogram<u64>) -> Option<LatencyMs> {
    (!h.is_empty()).then(|| LatencyMs {
        p50: h.value_at_quantile(0.5) as f64 / 1000.0,
        p95: h.value_at_quantile(0.95) as f64 / 1000.0,
        max: h.max() as f64 / 1000.0,
    })
}

impl Shared {
    /// What a fetched message is: [`Generator::verify`]'s verdict, except that a copy an `eas`
    /// user sent and its server composed anew ([`Generator::composed_from`]) is intact.
    fn verify(&self, body: &[u8]) -> Verdict {
        let v = self.gen.verify(body);
        if let Verdict::Corrupted { id, .. } = &v {
            if self.eas_senders.contains(&id.sender) && self.gen.composed_from(id, body) {
                self.composed.fetch_add(1, Ordering::Relaxed);
                return Verdict::Intact(id.clone());
            }
        }
        v
    }

    /// One task dispatched is no longer unfinished (done, dropped or never handed over).
    fn unfinished_done(&self) {
        let before = self.unfinished.fetch_sub(1, Ordering::Relaxed);
        assert!(before > 0, "more tasks finished than were dispatched");
    }

    /// Keeps the first error of each class for messages.
    fn keep_error(&self, e: Error) {
        lock(&self.errors).keep(e);
    }

    /// The sample now (`elapsed` since the day's start), starting a new interval; None once the
    /// final sample has been taken. Sends it when the plan has a sample channel.
    fn sample(
        &self,
        elapsed: Duration,
        planned: u64,
        last: bool,
        to: Option<&mpsc::UnboundedSender<DaySample>>,
    ) -> Option<DaySample> {
        let mut sampling = lock(&self.sampling);
        if sampling.closed {
            return None;
        }
        sampling.closed = last;
        let interval = elapsed.saturating_sub(sampling.last);
        sampling.last = elapsed;
        let mut meter = lock(&self.stats);
        let (mut this_interval, mut cumulative) = (
            std::mem::take(&mut meter.interval),
            meter.cumulative.clone(),
        );
        let task_latency_ms = latency_ms(&meter.interval_latency_us);
        meter.interval_latency_us.reset();
        drop(meter);
        let mut ledger = lock(&self.ledger);
        let d = ledger.take_interval();
        let (expected, delivered) = ledger.totals();
        drop(ledger);
        this_interval.copies_sent = d.sent;
        this_interval.copies_delivered = d.delivered;
        cumulative.copies_sent = expected;
        cumulative.copies_delivered = delivered;
        assert!(
            delivered <= expected,
            "copies delivered ({delivered}) beyond those sent ({expected})"
        );
        let sample = DaySample {
            elapsed,
            interval,
            last,
            this_interval,
            cumulative,
            unfinished: self.unfinished.load(Ordering::Relaxed),
            planned,
            task_latency_ms,
            delivery_p95_ms: (!d.latency_us.is_empty())
                .then(|| d.latency_us.value_at_quantile(0.95) as f64 / 1000.0),
        };
        if let Some(tx) = to {
            let _ = tx.send(sample.clone());
        }
        Some(sample)
    }
}

struct Job {
    task: Task,
    recipients: Vec<u32>,
    due: Instant,
}

/// A user's view of its INBOX.
#[derive(Debug, Default)]
struct Inbox {
    /// The highest UID looked at: checks fetch only above it (set by the baseline).
    last_uid: u32,
    /// Messages of this run's day the user has seen: the only ones it flags, moves or deletes.
    known: Vec<u32>,
    /// Messages it did not make (there before the day, or not this run's): read (with
    /// BODY.PEEK, so not even \Seen changes), never changed. At most [`OLD_READABLE`].
    old: Vec<u32>,
    /// Where moves go, once looked up ([`Actor::archive`]): the folder, or the refusal of its
    /// CREATE (remembered: never tried again by this user).
    archive: Option<std::result::Result<String, Error>>,
    /// POP3: the UIDLs already retrieved or there at the baseline (the messages left on the
    /// server), never retrieved again.
    uidls: HashSet<String>,
}

impl Inbox {
    fn keep_old(&mut self, uid: u32) {
        if self.old.len() < OLD_READABLE {
            self.old.push(uid);
        }
    }
}

struct Actor {
    me: u32,
    user: User,
    client: ClientType,
    session: Option<ImapClient>,
    /// An `eas` user's device (made at its first task).
    device: Option<Device>,
    inbox: Inbox,
    pick: u64,
    shared: Arc<Shared>,
    /// The run's recorder, counting this user's commands (a task's are the difference).
    rec: Recorder,
    /// Stress mode: told the user's index after each task, so its next one is dispatched.
    finished: Option<mpsc::UnboundedSender<u32>>,
}

/// Which messages a task may pick.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Pick {
    /// Any message seen: reading, replying, forwarding.
    Read,
    /// Only this run's: flag, move, delete.
    Change,
}

impl Actor {
    fn next_pick(&mut self, n: usize) -> usize {
        self.pick = self
            .pick
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        ((u128::from(self.pick >> 11) * n as u128) >> 53) as usize
    }

    async fn open(&mut self) -> Result<()> {
        if self.session.is_none() {
            let mut s = ImapClient::connect(&self.shared.servers.imap, self.rec.clone()).await?;
            s.login(&self.user.login, &self.user.password).await?;
            s.select("INBOX").await?;
            self.session = Some(s);
        }
        Ok(())
    }

    async fn close(&mut self) {
        if let Some(s) = self.session.take() {
            let _ = s.logout().await;
        }
    }

    /// Before the day: what the mailbox holds already. IMAP: the UIDNEXT (checks fetch only
    /// above it) and the UIDs there (readable, never changed); POP3: the UIDLs there (never
    /// retrieved).
    async fn baseline(&mut self) -> Result<()> {
        let shared = self.shared.clone();
        if self.client == ClientType::Eas {
            self.eas()?.baseline().await?;
            return Ok(());
        }
        if self.client == ClientType::Pop3 {
            let mut p = Pop3Client::connect(&shared.servers.pop3, self.rec.clone()).await?;
            p.login(&self.user.login, &self.user.password).await?;
            let list = p.uidl().await?;
            self.inbox.uidls = list.into_iter().map(|(_, u)| u).collect();
            return p.quit().await;
        }
        let mut s = ImapClient::connect(&shared.servers.imap, self.rec.clone()).await?;
        s.login(&self.user.login, &self.user.password).await?;
        let selected = s.select("INBOX").await?;
        // The last OLD_READABLE messages' UIDs (in windows: a large mailbox's SEARCH ALL would
        // answer with a line over the bound).
        let first = selected
            .exists
            .saturating_sub(OLD_READABLE as u32 - 1)
            .max(1);
        let mut uids = s.uid_search_windows(first, selected.exists, "").await?;
        uids.sort_unstable();
        uids.dedup();
        // A server that gives no UIDNEXT: the highest UID there.
        let last = match selected.uid_next {
            0 => uids.last().copied().unwrap_or(0),
            n => n - 1,
        };
        // A message delivered between SELECT and SEARCH is above `last`: the day's first
        // check fetches it.
        uids.retain(|&u| u <= last);
        let keep = uids.len().saturating_sub(OLD_READABLE);
        self.inbox.last_uid = last;
        self.inbox.old = uids.split_off(keep);
        s.logout().await
    }

    /// New messages in INBOX (above the last UID looked at): fetched, verified, counted by the
    /// ledger, remembered.
    async fn check_imap(&mut self) -> Result<()> {
        self.check_imap_noticed(None).await
    }

    /// [`Actor::check_imap`], after an IDLE notice (`Some((at, exists))`: the instant it came
    /// and the message count it announced) or as a poll (`None`: NOOP first). Copies the
    /// notice announced (sequence number <= `exists`) are recorded as seen at the notice, by
    /// IDLE; any others at the fetch, by a poll.
    async fn check_imap_noticed(&mut self, notice: Option<(Instant, u32)>) -> Result<()> {
        self.open().await?;
        let Some(s) = self.session.as_mut() else {
            return Ok(());
        };
        if notice.is_none() {
            s.noop().await?;
        }
        let before = self.inbox.last_uid;
        // `n:*` names the highest message even when it is below n: UIDs first, then only the
        // new ones' bodies.
        let listed = s
            .uid_fetch(&format!("{}:*", before.saturating_add(1)), "(UID)")
            .await?;
        // What the session was told so far is in this listing: the next IDLE waits for news.
        s.take_news();
        let mut new: Vec<u32> = listed
            .into_iter()
            .filter_map(|f| f.uid)
            .filter(|&u| u > before)
            .collect();
        new.sort_unstable();
        new.dedup();
        for chunk in new.chunks(50) {
            let fetched = s.uid_fetch(&uid_set(chunk), "(UID BODY.PEEK[])").await?;
            let now = clock::now();
            for f in fetched {
                let Some(uid) = f.uid.filter(|&u| u > before) else {
                    continue;
                };
                let (at, via) = match notice {
                    Some((at, exists)) if f.seq <= exists => (at, Via::Idle),
                    _ => (now, Via::Poll),
                };
                let body = f.body.as_deref().unwrap_or_default();
                self.shared.fetched.fetch_add(1, Ordering::Relaxed);
                self.shared
                    .fetched_bytes
                    .fetch_add(body.len() as u64, Ordering::Relaxed);
                self.inbox.last_uid = self.inbox.last_uid.max(uid);
                let verdict = self.shared.verify(body);
                match &verdict {
                    Verdict::Intact(id) if id.seq < INIT_SEQ_BASE => self.inbox.known.push(uid),
                    // This run's initialization messages and others' mail: read only.
                    Verdict::Intact(_) | Verdict::NotOurs(_) => {
                        self.inbox.keep_old(uid);
                        continue;
                    }
                    Verdict::Corrupted { .. } => {}
                }
                lock(&self.shared.ledger).seen_via(self.me, &verdict, at, via);
            }
        }
        Ok(())
    }

    /// Desktop IMAP between tasks: the session idles (as Outlook and Thunderbird do); an
    /// `EXISTS` notice ends IDLE (DONE), the new messages are fetched and counted as seen at
    /// the notice, and IDLE starts again; IDLE is re-issued every [`IDLE_REISSUE`] (RFC 2177).
    /// Returns the next job (IDLE ended first), or None when no more will come. A session
    /// that fails here is dropped (its error kept): the next task opens a new one.
    async fn idle_until_job(&mut self, rx: &mut mpsc::UnboundedReceiver<Job>) -> Option<Job> {
        // A task already due (a backlog) runs at once: no IDLE for nothing.
        match rx.try_recv() {
            Ok(job) => return Some(job),
            Err(mpsc::error::TryRecvError::Disconnected) => return None,
            Err(mpsc::error::TryRecvError::Empty) => {}
        }
        loop {
            if self.shared.stopping.load(Ordering::Relaxed) {
                return rx.recv().await;
            }
            let Some(s) = self.session.as_mut() else {
                return rx.recv().await;
            };
            if let Err(e) = s.idle().await {
                self.lose_session(e);
                return rx.recv().await;
            }
            let reissue = clock::now() + IDLE_REISSUE;
            let woke = loop {
                let left = reissue.saturating_duration_since(clock::now());
                tokio::select! {
                biased;
                    job = rx.recv() => break Wake::Job(job),
                    ev = s.idle_wait(left) => match ev {
                        Ok(IdleEvent::Changed(at, news)) => {
                            if let Some(n) = announced_exists(&news) {
                                break Wake::News(at, n);
                            }
                        }
                        Ok(IdleEvent::Quiet) => break Wake::Reissue,
                        Err(e) => break Wake::Lost(e),
                    },
                }
            };
            let ended = match &woke {
                Wake::Lost(_) => Ok(Vec::new()),
                _ => s.done().await,
            };
            if let Err(e) = ended {
                self.lose_session(e);
            }
            match woke {
                Wake::Job(job) => return job,
                Wake::Lost(e) => {
                    self.lose_session(e);
                    return rx.recv().await;
                }
                Wake::Reissue => {}
                Wake::News(at, exists) => {
                    if self.session.is_some() {
                        if let Err(e) = self.check_imap_noticed(Some((at, exists))).await {
                            self.lose_session(e);
                        }
                    }
                }
            }
        }
    }

    /// Drops the session after an error outside a task (kept for messages).
    fn lose_session(&mut self, mut e: Error) {
        self.session = None;
        e.user.get_or_insert_with(|| self.user.login.clone());
        self.shared.keep_error(e);
    }

    /// A POP3 check: every message not retrieved before (nor there at the baseline) retrieved,
    /// verified, counted; the run's own deleted from the server.
    async fn check_pop3(&mut self) -> Result<()> {
        let mut p = Pop3Client::connect(&self.shared.servers.pop3, self.rec.clone()).await?;
        p.login(&self.user.login, &self.user.password).await?;
        let list = p.uidl().await?;
        let mut left: HashSet<String> = HashSet::new();
        for (n, uidl) in list {
            if self.inbox.uidls.contains(&uidl) {
                left.insert(uidl);
                continue;
            }
            let m = p.retr(n).await?;
            self.shared.fetched.fetch_add(1, Ordering::Relaxed);
            self.shared
                .fetched_bytes
                .fetch_add(m.len() as u64, Ordering::Relaxed);
            // Remembered at once: if the session fails before QUIT (which commits the DELEs),
            // the message is not counted twice.
            self.inbox.uidls.insert(uidl.clone());
            let verdict = self.shared.verify(&m);
            let ours = match &verdict {
                Verdict::Intact(id) => id.seq < INIT_SEQ_BASE,
                Verdict::Corrupted { .. } => true,
                Verdict::NotOurs(_) => false,
            };
            lock(&self.shared.ledger).seen(self.me, &verdict, clock::now());
            // Only messages this run's day made are deleted.
            if ours {
                p.dele(n).await?;
            } else {
                left.insert(uidl);
            }
        }
        p.quit().await?;
        // What is still on the server: memory follows the mailbox, not the run.
        self.inbox.uidls = left;
        Ok(())
    }

    async fn send(&mut self, task: &Task, recipients: &[u32]) -> Result<()> {
        let from = self.user.address.clone();
        let to: Vec<&str> = recipients
            .iter()
            .filter_map(|&r| self.shared.addresses.get(r as usize).map(String::as_str))
            .collect();
        let seq = (u64::from(task.day) << 32) | u64::from(task.index);
        let message = self.shared.gen.message(&from, seq, &to);
        let mut smtp = SmtpClient::connect(
            &self.shared.servers.smtp,
            &self.shared.servers.helo,
            self.rec.clone(),
        )
        .await?;
        smtp.auth(
            &self.user.login,
            &self.user.password,
            self.shared.servers.auth,
        )
        .await?;
        let accepted = smtp.send(&from, &to, &message).await?;
        let id = MessageId {
            run: self.shared.gen.run().to_owned(),
            sender: from,
            seq,
        };
        lock(&self.shared.ledger).sent(&id, recipients, accepted.at);
        smtp.quit().await
    }

    /// A message this user may act on (after a check when it knows none): `(index in known,
    /// uid)` for one of the run's, `(None, uid)` for an older one (reading only).
    async fn some_message(&mut self, pick: Pick) -> Result<Option<(Option<usize>, u32)>> {
        let count = |inbox: &Inbox| match pick {
            Pick::Read => inbox.known.len() + inbox.old.len(),
            Pick::Change => inbox.known.len(),
        };
        if count(&self.inbox) == 0 {
            self.check_imap().await?;
        }
        let n = count(&self.inbox);
        if n == 0 {
            return Ok(None);
        }
        let i = self.next_pick(n);
        Ok(Some(match self.inbox.known.get(i) {
            Some(&uid) => (Some(i), uid),
            None => (None, self.inbox.old[i - self.inbox.known.len()]),
        }))
    }

    /// The task's protocol work. Every IMAP task first has a session (webmail: log on and
    /// SELECT per task; [`Actor::run`] logs it off after), so an action on a message is always
    /// a command to the server, never a no-op on what the user knew.
    async fn act(&mut self, task: &Task, recipients: &[u32]) -> Result<Acted> {
        use TaskKind::*;
        if self.client == ClientType::Eas {
            return self.act_eas(task, recipients).await;
        }
        match (self.client, task.kind) {
            (_, SendNew) | (ClientType::Pop3, Reply | Forward) => {
                self.send(task, recipients).await?;
                return Ok(Acted::Done);
            }
            (ClientType::Pop3, _) => {
                self.check_pop3().await?;
                return Ok(Acted::Done);
            }
            (_, Logon) => {
                let had = self.session.is_some();
                self.open().await?;
                return Ok(if had { Acted::Nothing } else { Acted::Done });
            }
            (_, Logoff) => {
                let had = self.session.is_some();
                self.close().await;
                return Ok(if had { Acted::Done } else { Acted::Nothing });
            }
            _ => {}
        }
        self.open().await?;
        match task.kind {
            Reply | Forward => {
                // Read the message replied to or forwarded, then send.
                if let Some((_, uid)) = self.some_message(Pick::Read).await? {
                    self.session()?
                        .uid_fetch(&uid.to_string(), "(BODY.PEEK[])")
                        .await?;
                }
                self.send(task, recipients).await?;
            }
            CheckInbox => self.check_imap().await?,
            Read => {
                let Some((i, uid)) = self.some_message(Pick::Read).await? else {
                    return Ok(Acted::Nothing);
                };
                // The run's own mail is read as a client does (sets \Seen); older mail with
                // PEEK, so nothing of it changes.
                let items = if i.is_some() {
                    "(BODY[])"
                } else {
                    "(BODY.PEEK[])"
                };
                self.session()?.uid_fetch(&uid.to_string(), items).await?;
            }
            Flag => {
                let Some((_, uid)) = self.some_message(Pick::Change).await? else {
                    return Ok(Acted::Nothing);
                };
                self.session()?
                    .uid_store(&uid.to_string(), "+FLAGS.SILENT", "\\Flagged")
                    .await?;
            }
            Move => {
                let Some((Some(i), uid)) = self.some_message(Pick::Change).await? else {
                    return Ok(Acted::Nothing);
                };
                let target = self.archive().await?;
                self.session()?.uid_move(&uid.to_string(), &target).await?;
                self.inbox.known.swap_remove(i);
            }
            Delete => {
                let Some((Some(i), uid)) = self.some_message(Pick::Change).await? else {
                    return Ok(Acted::Nothing);
                };
                let s = self.session()?;
                s.uid_store(&uid.to_string(), "+FLAGS.SILENT", "\\Deleted")
                    .await?;
                // UID EXPUNGE removes this message only; a plain EXPUNGE would also remove
                // what another client marked \Deleted.
                if s.has_capability("UIDPLUS") {
                    s.uid_expunge(&uid.to_string()).await?;
                } else {
                    s.expunge().await?;
                }
                self.inbox.known.swap_remove(i);
            }
            Search => {
                let run = self.shared.gen.run().to_owned();
                self.session()?
                    .search(&format!("HEADER X-Mbx-Id \"{run}/\""), true)
                    .await?;
            }
            SendNew | Logon | Logoff => {}
        }
        Ok(Acted::Done)
    }

    /// The user's device (made at first use). Errors: a run without an ActiveSync endpoint,
    /// a URL the client refuses.
    fn eas(&mut self) -> Result<&mut Device> {
        if self.device.is_none() {
            let target = self.shared.servers.eas.as_ref().ok_or_else(|| {
                Error::new(
                    crate::error::ErrorClass::Connect,
                    Some(&self.user.login),
                    "eas",
                    "ActiveSync",
                    "an eas user but no ActiveSync endpoint (--eas URL) given",
                )
            })?;
            let id = device::device_id(self.shared.gen.run(), self.me);
            let d = Device::new(
                target,
                &self.user.login,
                &self.user.password,
                &id,
                self.rec.clone(),
            )?;
            self.device = Some(d);
        }
        self.device.as_mut().ok_or_else(|| {
            Error::new(
                crate::error::ErrorClass::Connect,
                Some(&self.user.login),
                "eas",
                "ActiveSync",
                "no device",
            )
        })
    }

    /// An `eas` check: the Inbox's new items, each verified and counted by the ledger.
    async fn check_eas(&mut self) -> Result<()> {
        self.check_eas_pushed(None).await
    }

    /// [`Actor::check_eas`], after a Ping that reported the Inbox (`Some(at)`: when it
    /// answered; its copies are seen then, by push) or as a poll (`None`).
    async fn check_eas_pushed(&mut self, pushed: Option<Instant>) -> Result<()> {
        let items = self.eas()?.check().await?;
        self.eas_seen_via(items, pushed);
        Ok(())
    }

    /// An `eas` device between tasks: a parked Ping on its Inbox ([`DayPlan::eas_ping`]),
    /// renewed at each heartbeat; new mail reported is checked at once. Returns the next job
    /// (the Ping dropped), or None when no more will come. A Ping or check that fails is kept
    /// as an error and the device waits for its next task without one.
    async fn ping_until_job(
        &mut self,
        rx: &mut mpsc::UnboundedReceiver<Job>,
        heartbeat: Duration,
    ) -> Option<Job> {
        match rx.try_recv() {
            Ok(job) => return Some(job),
            Err(mpsc::error::TryRecvError::Disconnected) => return None,
            Err(mpsc::error::TryRecvError::Empty) => {}
        }
        loop {
            if self.shared.stopping.load(Ordering::Relaxed) {
                return rx.recv().await;
            }
            let Some(dev) = self.device.as_mut().filter(|d| d.logged_on()) else {
                return rx.recv().await;
            };
            let Ok(inbox) = dev.inbox().await else {
                return rx.recv().await;
            };
            let folders = [(inbox.as_str(), "Email")];
            let woke = tokio::select! {
                biased;
                job = rx.recv() => Err(job),
                r = dev.client().ping(heartbeat, &folders) => Ok(r),
            };
            match woke {
                Err(job) => return job,
                Ok(Ok(p)) if p.status == 2 => {
                    if let Err(e) = self.check_eas_pushed(Some(clock::now())).await {
                        self.lose_device(e);
                        return rx.recv().await;
                    }
                }
                Ok(Ok(_)) => {}
                Ok(Err(e)) => {
                    self.lose_device(e);
                    return rx.recv().await;
                }
            }
        }
    }

    /// A device's failure outside a task (kept for messages): its sync state starts again.
    fn lose_device(&mut self, mut e: Error) {
        if let Some(d) = self.device.as_mut() {
            d.reset();
        }
        e.user.get_or_insert_with(|| self.user.login.clone());
        self.shared.keep_error(e);
    }

    /// Items a Sync brought: this run's day's copies counted (and remembered as the device's
    /// to act on), the rest readable only. An item without its MIME cannot be checked: a copy
    /// it was stays missing.
    fn eas_seen(&mut self, items: Vec<NewItem>) {
        self.eas_seen_via(items, None);
    }

    /// [`Actor::eas_seen`], the copies seen at `pushed` by push when a Ping reported them.
    fn eas_seen_via(&mut self, items: Vec<NewItem>, pushed: Option<Instant>) {
        let (now, via) = match pushed {
            Some(at) => (at, Via::Idle),
            None => (clock::now(), Via::Poll),
        };
        let shared = self.shared.clone();
        let Some(dev) = self.device.as_mut() else {
            return;
        };
        for item in items {
            let Some(mime) = item.mime else {
                dev.keep_old(item.server_id);
                continue;
            };
            let body = device::crlf(&mime);
            shared.fetched.fetch_add(1, Ordering::Relaxed);
            shared
                .fetched_bytes
                .fetch_add(body.len() as u64, Ordering::Relaxed);
            let verdict = shared.verify(&body);
            match &verdict {
                Verdict::Intact(id) if id.seq < INIT_SEQ_BASE => dev.known.push(item.server_id),
                Verdict::Intact(_) | Verdict::NotOurs(_) => {
                    dev.keep_old(item.server_id);
                    continue;
                }
                Verdict::Corrupted { .. } => {}
            }
            lock(&shared.ledger).seen_via(self.me, &verdict, now, via);
        }
    }

    /// A message of the device's Inbox to act on (after a check when it knows none): `(index
    /// in known, id)` for one of the run's, `(None, id)` for an older one (reading only).
    async fn eas_pick(&mut self, pick: Pick) -> Result<Option<(Option<usize>, String)>> {
        let count = |d: &Device| match pick {
            Pick::Read => d.known.len() + d.old.len(),
            Pick::Change => d.known.len(),
        };
        if count(self.eas()?) == 0 {
            self.check_eas().await?;
        }
        let n = count(self.eas()?);
        if n == 0 {
            return Ok(None);
        }
        let i = self.next_pick(n);
        let d = self.eas()?;
        Ok(Some(match d.known.get(i) {
            Some(id) => (Some(i), id.clone()),
            None => (None, d.old[i - d.known.len()].clone()),
        }))
    }

    /// An `eas` user's task (see [`ClientType::Eas`]). Sends go by SendMail, replies and
    /// forwards by SmartReply/SmartForward of a message the device holds (SendMail when it
    /// holds none); the copies are the ledger's as any other.
    async fn act_eas(&mut self, task: &Task, recipients: &[u32]) -> Result<Acted> {
        use TaskKind::*;
        let dev = self.eas()?;
        if task.kind == Logon {
            dev.logon().await?;
            return Ok(Acted::Done);
        }
        let inbox = dev.inbox().await?;
        match task.kind {
            CheckInbox => self.check_eas().await?,
            SendNew | Reply | Forward => {
                let source = match task.kind {
                    SendNew => None,
                    _ => self.eas_pick(Pick::Read).await?.map(|(_, id)| id),
                };
                let from = self.user.address.clone();
                let to: Vec<&str> = recipients
                    .iter()
                    .filter_map(|&r| self.shared.addresses.get(r as usize).map(String::as_str))
                    .collect();
                let seq = (u64::from(task.day) << 32) | u64::from(task.index);
                let message = self.shared.gen.message(&from, seq, &to);
                let c = self.eas()?.client();
                match (task.kind, source) {
                    (Reply, Some(id)) => c.smart_reply(&inbox, &id, &message).await?,
                    (Forward, Some(id)) => c.smart_forward(&inbox, &id, &message).await?,
                    _ => c.send_mail(&message).await?,
                };
                let id = MessageId {
                    run: self.shared.gen.run().to_owned(),
                    sender: from,
                    seq,
                };
                lock(&self.shared.ledger).sent(&id, recipients, clock::now());
            }
            Read => {
                let Some((_, id)) = self.eas_pick(Pick::Read).await? else {
                    return Ok(Acted::Nothing);
                };
                self.eas()?.client().fetch_mime(&inbox, &id).await?;
            }
            Move | Delete | Flag => {
                let Some((Some(_), id)) = self.eas_pick(Pick::Change).await? else {
                    return Ok(Acted::Nothing);
                };
                let dev = self.eas()?;
                let mut news = Vec::new();
                match task.kind {
                    Move => {
                        let to = dev.move_target().await?;
                        dev.client().move_item(&id, &inbox, &to).await?;
                        dev.known.retain(|k| *k != id);
                    }
                    Delete => {
                        let b = dev
                            .client()
                            .sync_delete(&inbox, &id, device::WINDOW)
                            .await?;
                        dev.known.retain(|k| *k != id);
                        dev.take(b, &mut news);
                    }
                    _ => {
                        let b = dev.client().sync_flag(&inbox, &id, device::WINDOW).await?;
                        dev.take(b, &mut news);
                    }
                }
                self.eas_seen(news);
            }
            Logon | Logoff | Search => return Ok(Acted::Nothing),
        }
        Ok(Acted::Done)
    }

    /// The folder this user's moves go to, looked up at its first move: the server's
    /// `\Archive` (RFC 6154) if it lists one, else `Archive` under the personal namespace
    /// (RFC 2342), created once. A refused CREATE is remembered (later moves fail with it at
    /// once, no command sent) and given to the run once ([`DayReport::folder_refused`]).
    async fn archive(&mut self) -> Result<String> {
        match &self.inbox.archive {
            Some(Ok(name)) => return Ok(name.clone()),
            Some(Err(e)) => return Err(e.clone()),
            None => {}
        }
        let s = self.session()?;
        let ns = answered(s.namespace().await)?.flatten();
        let prefix = ns.as_ref().map_or("", |n| n.prefix.as_str()).to_owned();
        let listed = answered(s.list_special_use(&prefix).await)?.unwrap_or_default();
        let (name, create) = archive_folder(ns.as_ref(), &listed);
        if create {
            if let Err(mut e) = s.create(&name).await {
                if !matches!(e.class, crate::error::ErrorClass::Rejected(_)) {
                    // A timeout or a lost session: the next move tries again.
                    return Err(e);
                }
                e.detail = format!(
                    "the move task's folder {name:?} was refused ({}): moves are not tried again this run. The folder was named from the server's personal namespace ({}); let the test users create it (or create it for them), or give them a \\Archive special-use folder (RFC 6154)",
                    e.detail,
                    match &ns {
                        Some(n) => format!("NAMESPACE prefix {:?}, delimiter {:?}", n.prefix, n.delimiter.map(String::from).unwrap_or_default()),
                        None => "none announced: top level".to_owned(),
                    }
                );
                lock(&self.shared.folder_refused).get_or_insert_with(|| e.clone());
                self.inbox.archive = Some(Err(e.clone()));
                return Err(e);
            }
        }
        lock(&self.shared.folders)
            .get_or_insert_with(|| folders_note(ns.as_ref(), &listed, &name, create));
        self.inbox.archive = Some(Ok(name.clone()));
        Ok(name)
    }

    /// The open session (after [`Actor::open`]; a check that lost it is an error, not a
    /// silent no-op).
    fn session(&mut self) -> Result<&mut ImapClient> {
        let server = self.shared.servers.imap.url("imap");
        let login = self.user.login.clone();
        self.session.as_mut().ok_or_else(|| {
            Error::new(
                crate::error::ErrorClass::Disconnect,
                Some(&login),
                &server,
                "session",
                "the IMAP session was closed before the task's command",
            )
        })
    }

    async fn run(mut self, mut rx: mpsc::UnboundedReceiver<Job>) -> Actor {
        loop {
            // A server without IDLE (RFC 2177) is polled at the checks only.
            let next = if self.client == ClientType::DesktopImap
                && self.shared.idle
                && self
                    .session
                    .as_ref()
                    .is_some_and(|s| s.has_capability("IDLE"))
            {
                self.idle_until_job(&mut rx).await
            } else if let Some(hb) = self
                .shared
                .eas_ping
                .filter(|_| self.client == ClientType::Eas)
            {
                self.ping_until_job(&mut rx, hb).await
            } else {
                rx.recv().await
            };
            let Some(job) = next else { break };
            if self.shared.stopping.load(Ordering::Relaxed) {
                self.shared.unfinished_done();
                continue;
            }
            let started = clock::now();
            let sent_before = self.rec.sent();
            let r = self.act(&job.task, &job.recipients).await;
            if self.client == ClientType::Webmail {
                self.close().await;
            }
            let end = clock::now();
            let outcome = outcome(&r, self.rec.sent().saturating_sub(sent_before));
            if let Err(mut e) = r {
                // The session may be unusable: the next task opens a new one (a device starts
                // its sync state again, keeping what it has seen).
                self.session = None;
                if let Some(d) = self.device.as_mut() {
                    d.reset();
                }
                // A failure before the login (connect, TLS) still names whose task it was.
                e.user.get_or_insert_with(|| self.user.login.clone());
                self.shared.keep_error(e);
            }
            lock(&self.shared.stats).finished(job.task.kind, outcome, job.due, started, end);
            if let Some(l) = &self.shared.live {
                match outcome {
                    Outcome::Completed => l.completed.fetch_add(1, Ordering::Relaxed),
                    Outcome::Failed(_) => l.failed.fetch_add(1, Ordering::Relaxed),
                    Outcome::Skipped => 0,
                };
            }
            self.shared.unfinished_done();
            if let Some(tx) = &self.finished {
                let _ = tx.send(self.me);
            }
        }
        self
    }

    /// One last look for copies not yet seen (after the days).
    async fn sweep(&mut self) -> Result<()> {
        let r = match self.client {
            ClientType::Pop3 => self.check_pop3().await,
            ClientType::Eas => self.check_eas().await,
            _ => self.check_imap().await,
        };
        if self.client == ClientType::Webmail || r.is_err() {
            self.close().await;
        }
        // The last look decides: a mailbox that could not be read holds copies not looked for,
        // not copies lost.
        let mut unreadable = lock(&self.shared.unreadable);
        match &r {
            Err(e) => {
                unreadable.insert(self.me, e.to_string());
            }
            Ok(()) => {
                unreadable.remove(&self.me);
            }
        }
        drop(unreadable);
        r
    }
}

/// A sending task's recipients (none for the others).
fn recipients_of(sched: &Scheduler, t: &Task) -> Vec<u32> {
    if t.kind.sends() {
        sched.recipients(t)
    } else {
        Vec::new()
    }
}

/// Hands tasks to the users' actors and counts them.
struct Dispatcher<'a> {
    shared: &'a Shared,
    senders: &'a [Option<mpsc::UnboundedSender<Job>>],
    dispatched: u64,
    max_unfinished: u64,
}

impl Dispatcher<'_> {
    /// Task `t` (with its recipients when it sends) to its user, its latency counted from
    /// `due`; false when the user's actor is gone.
    fn send(&mut self, t: Task, recipients: Vec<u32>, due: Instant) -> bool {
        let n = self.shared.unfinished.fetch_add(1, Ordering::Relaxed) + 1;
        self.max_unfinished = self.max_unfinished.max(n);
        self.dispatched += 1;
        lock(&self.shared.stats).dispatched(t.kind);
        let job = Job {
            due,
            recipients,
            task: t,
        };
        let sent = self
            .senders
            .get(t.user as usize)
            .and_then(Option::as_ref)
            .is_some_and(|tx| tx.send(job).is_ok());
        if !sent {
            self.shared.unfinished_done();
        }
        sent
    }
}

/// Runs `work` on every actor, [`SESSIONS_AT_ONCE`] at a time. A stop request starts no more
/// and gives the running ones [`STOP_WAIT`], then cancels them (their actors are dropped, their
/// connections closed). At `deadline` the running ones are cancelled at once (those not started
/// are given back). Returns the actors back (in user order), the errors, whether it was
/// stopped, and how many were cancelled at the deadline.
async fn each_actor<F, Fut>(
    actors: Vec<Actor>,
    stop: &AtomicBool,
    deadline: Option<Instant>,
    work: F,
) -> (Vec<Actor>, Vec<Error>, bool, usize)
where
    F: Fn(Actor) -> Fut,
    Fut: Future<Output = (Actor, Result<()>)> + Send + 'static,
{
    let mut pending = actors.into_iter();
    let mut running: JoinSet<(Actor, Result<()>)> = JoinSet::new();
    let (mut back, mut errors) = (Vec::new(), Vec::new());
    let mut stopped = false;
    let mut cut = 0;
    loop {
        if deadline.is_some_and(|d| clock::now() >= d) {
            cut = running.len();
            running.abort_all();
            back.extend(pending.by_ref());
            break;
        }
        if stop.load(Ordering::Relaxed) {
            stopped = true;
            let deadline = clock::now() + STOP_WAIT;
            while let Ok(Some(done)) = clock::timeout_at(deadline, running.join_next()).await {
                if let Ok((a, r)) = done {
                    back.push(a);
                    errors.extend(r.err());
                }
            }
            running.abort_all();
            // Those not started are given back untouched.
            back.extend(pending.by_ref());
            break;
        }
        while running.len() < SESSIONS_AT_ONCE {
            let Some(a) = pending.next() else { break };
            running.spawn(work(a));
        }
        if running.is_empty() {
            break;
        }
        tokio::select! {
                biased;
            done = running.join_next() => {
                if let Some(Ok((a, r))) = done {
                    back.push(a);
                    errors.extend(r.err());
                }
            }
            _ = clock::sleep(Duration::from_millis(50)) => {}
        }
    }
    back.sort_by_key(|a| a.me);
    (back, errors, stopped, cut)
}

/// The client types of the users missing from `back` (cancelled at a deadline).
fn missing_kinds(back: &[Actor], clients: &[ClientType], users: usize) -> Vec<ClientType> {
    let mut present = vec![false; users];
    for a in back {
        if let Some(p) = present.get_mut(a.me as usize) {
            *p = true;
        }
    }
    present
        .iter()
        .enumerate()
        .filter(|(_, p)| !**p)
        .map(|(i, _)| clients.get(i).copied().unwrap_or(ClientType::DesktopImap))
        .collect()
}

/// Runs `plan.days` simulated days of `users` (with their client types) against `servers`.
///
/// First the **baseline** (unless `plan.baseline` is false), [`SESSIONS_AT_ONCE`] users at a
/// time: each IMAP user (desktop, webmail) records its INBOX's UIDNEXT, so checks fetch only
/// mail that came later, and the UIDs of the last [`OLD_READABLE`] messages there (`UID
/// SEARCH`, in windows), which reads, replies and forwards may pick (with BODY.PEEK: nothing of
/// them changes); each POP3 user records the UIDLs there, never retrieved. A user whose
/// baseline fails is counted by class and starts from nothing. Only the day's own messages of
/// `gen`'s run are flagged, moved or deleted; `gen`'s run id must be unique to this run.
///
/// Then the days, with a [`DaySample`] to `plan.samples` every `plan.sample_interval` and a
/// final one.
pub async fn run_days(
    servers: &Servers,
    users: &[User],
    clients: &[ClientType],
    gen: &Generator,
    plan: &DayPlan,
    rec: Recorder,
) -> DayReport {
    let mut sched = Scheduler::new(
        plan.seed,
        plan.messages_per_day,
        plan.day,
        plan.days,
        clients,
    );
    if let (Some(end), false) = (plan.duration, plan.stress) {
        sched = sched.until(end);
    }
    let planned = if plan.stress {
        sched.planned_all()
    } else {
        sched.planned()
    };
    let shared = new_shared(servers, users, clients, gen, plan, rec);
    let (finished_tx, finished_rx) = match plan.stress {
        true => {
            let (tx, rx) = mpsc::unbounded_channel();
            (Some(tx), Some(rx))
        }
        false => (None, None),
    };
    let actors = make_actors(users, clients, plan.seed, &shared, finished_tx.as_ref());
    drop(finished_tx);
    if let Some(l) = &plan.live {
        l.planned.store(planned, Ordering::Relaxed);
    }
    // Each phase's wall deadline (crate::deadline); a phase that overruns it ends the run.
    let length = plan
        .duration
        .unwrap_or_else(|| plan.day.saturating_mul(plan.days));
    let mut run = Phases {
        plan,
        servers,
        clients,
        users: users.len(),
        shared: &shared,
        command: deadline::command_timeout([&servers.smtp, &servers.imap, &servers.pop3]),
        length,
        interrupted: false,
        deadline_hit: None,
    };
    let baseline_start = clock::now();
    let (actors, baseline_failed) = run.baseline(actors).await;
    // The watchers start after the baseline (what the mailboxes hold is not theirs either)
    // and before the gate (their logins do not delay a synchronized start).
    let watch = match (run.interrupted, plan.watch.mailboxes) {
        (false, 1..) => Some(
            crate::watch::start(
                &servers.imap,
                users,
                gen,
                shared.ledger.clone(),
                plan.watch,
                &plan.stop,
            )
            .await,
        ),
        _ => None,
    };
    let baseline = baseline_start.elapsed();
    if let Some(gate) = plan.gate.as_ref().filter(|_| !run.interrupted) {
        run.interrupted = !wait_at_gate(gate, &plan.stop, &plan.clock).await;
    }

    let start = clock::now();
    if let Some(l) = &plan.live {
        let _ = l.day_started.set(start);
    }
    let start_unix_s = plan.clock.unix_s();
    let sampler = spawn_sampler(&shared, plan, start, planned);
    let day = run.day(actors, &mut sched, start, finished_rx).await;
    let done = run.drain(day.running, day.overloaded, start).await;
    let done = run.grace(done, day.overloaded).await;
    let watch = match watch {
        Some(w) => Some(w.finish().await),
        None => None,
    };
    if !day.overloaded && !run.interrupted {
        let until = clock::now() + deadline::CLOSE_WAIT;
        let _ = each_actor(done, &plan.stop, Some(until), |mut a| async move {
            a.close().await;
            (a, Ok(()))
        })
        .await;
    }
    // Otherwise the sessions are dropped (closed without LOGOUT): a stop is prompt.
    let elapsed = start.elapsed();
    shared.sample(elapsed, planned, true, plan.samples.as_ref());
    if let Some(s) = sampler {
        s.abort();
    }
    let unreadable = lock(&shared.unreadable).clone();
    let missing_not_looked = lock(&shared.ledger).missing_for(&unreadable);
    let tasks = lock(&shared.stats).tasks.clone();
    let delivery = lock(&shared.ledger).summary();
    let first_errors = lock(&shared.errors).0.clone();
    let folders = lock(&shared.folders).clone();
    let folder_refused = lock(&shared.folder_refused).clone();
    DayReport {
        planned,
        dispatched: day.dispatched,
        tasks,
        max_unfinished: day.max_unfinished,
        overloaded: day.overloaded,
        // A deadline that ended the run is not a stop request.
        interrupted: run.interrupted && run.deadline_hit.is_none(),
        deadline: run.deadline_hit,
        delivery,
        first_errors,
        elapsed,
        baseline,
        baseline_failed,
        check_fetched: shared.fetched.load(Ordering::Relaxed),
        check_fetched_bytes: shared.fetched_bytes.load(Ordering::Relaxed),
        start_unix_s,
        folders,
        folder_refused,
        watch,
        unreadable,
        missing_not_looked,
        composed: shared.composed.load(Ordering::Relaxed),
    }
}

/// One actor per user, in user order.
fn make_actors(
    users: &[User],
    clients: &[ClientType],
    seed: u64,
    shared: &Arc<Shared>,
    finished: Option<&mpsc::UnboundedSender<u32>>,
) -> Vec<Actor> {
    users
        .iter()
        .enumerate()
        .map(|(i, u)| Actor {
            me: i as u32,
            user: u.clone(),
            client: clients.get(i).copied().unwrap_or(ClientType::DesktopImap),
            session: None,
            device: None,
            inbox: Inbox::default(),
            pick: seed ^ (i as u64).wrapping_mul(0x9E37_79B9_7F4A_7C15),
            shared: shared.clone(),
            rec: shared.rec.counting(),
            finished: finished.cloned(),
        })
        .collect()
}

/// The sampler: a [`DaySample`] every `plan.sample_interval` from the day's `start` (None
/// when the plan takes no samples).
fn spawn_sampler(
    shared: &Arc<Shared>,
    plan: &DayPlan,
    start: Instant,
    planned: u64,
) -> Option<tokio::task::JoinHandle<()>> {
    if plan.sample_interval.is_zero() || plan.samples.is_none() {
        return None;
    }
    let (shared, every, to) = (shared.clone(), plan.sample_interval, plan.samples.clone());
    Some(tokio::spawn(async move {
        let mut tick = clock::ticks(clock::now() + every, every);
        loop {
            tick.tick().await;
            if shared
                .sample(start.elapsed(), planned, false, to.as_ref())
                .is_none()
            {
                break;
            }
        }
    }))
}

/// The run's state shared by all users.
fn new_shared(
    servers: &Servers,
    users: &[User],
    clients: &[ClientType],
    gen: &Generator,
    plan: &DayPlan,
    rec: Recorder,
) -> Arc<Shared> {
    Arc::new(Shared {
        ledger: Arc::new(Mutex::new(Ledger::new())),
        stats: Mutex::new(Meter {
            tasks: BTreeMap::new(),
            interval: SampleCounts::default(),
            cumulative: SampleCounts::default(),
            interval_latency_us: histogram(),
        }),
        errors: Mutex::new(Examples::default()),
        folder_refused: Mutex::new(None),
        folders: Mutex::new(None),
        unreadable: Mutex::new(BTreeMap::new()),
        live: plan.live.clone(),
        unfinished: AtomicU64::new(0),
        stopping: AtomicBool::new(false),
        fetched: AtomicU64::new(0),
        fetched_bytes: AtomicU64::new(0),
        sampling: Mutex::new(Sampling {
            last: Duration::ZERO,
            closed: false,
        }),
        gen: gen.clone(),
        servers: servers.clone(),
        rec,
        addresses: users.iter().map(|u| u.address.clone()).collect(),
        eas_senders: users
            .iter()
            .zip(clients)
            .filter(|(_, c)| **c == ClientType::Eas)
            .map(|(u, _)| u.address.clone())
            .collect(),
        composed: AtomicU64::new(0),
        idle: !plan.stress,
        eas_ping: plan.eas_ping.filter(|_| !plan.stress),
    })
}

/// What the day's dispatch left: the actors still running (with their users) and its counts.
struct DayRun {
    running: Vec<(u32, tokio::task::JoinHandle<Actor>)>,
    dispatched: u64,
    max_unfinished: u64,
    overloaded: bool,
}

/// The phases of a run (baseline, day, drain, grace), each with the handles it needs, and
/// what ends the run early (a stop, a deadline).
struct Phases<'a> {
    plan: &'a DayPlan,
    servers: &'a Servers,
    clients: &'a [ClientType],
    users: usize,
    shared: &'a Arc<Shared>,
    /// The longest command timeout of the servers.
    command: Duration,
    /// The test's length (`duration`, else `day x days`).
    length: Duration,
    interrupted: bool,
    deadline_hit: Option<String>,
}

impl Phases<'_> {
    /// The servers the users of `kinds` were waiting on in `phase`.
    fn servers_of(&self, kinds: Vec<ClientType>, phase: &str) -> String {
        let s = self.servers;
        deadline::servers_of([&s.smtp, &s.imap, &s.pop3], kinds, phase)
    }

    /// The baseline (unless the plan has none): each mailbox's state before the day. The
    /// actors back, and the users whose baseline failed by class.
    async fn baseline(&mut self, actors: Vec<Actor>) -> (Vec<Actor>, BTreeMap<&'static str, u64>) {
        let mut failed = BTreeMap::new();
        if !self.plan.baseline {
            return (actors, failed);
        }
        let limit = deadline::baseline(self.length);
        let until = clock::now() + limit;
        let (back, errors, stopped, cut) =
            each_actor(actors, &self.plan.stop, Some(until), |mut a| async move {
                let r = a.baseline().await;
                if let Some(l) = &a.shared.live {
                    l.baseline_done.fetch_add(1, Ordering::Relaxed);
                }
                let r = r.map_err(|mut e| {
                    e.user.get_or_insert_with(|| a.user.login.clone());
                    e
                });
                (a, r)
            })
            .await;
        if cut > 0 {
            let on = self.servers_of(missing_kinds(&back, self.clients, self.users), "baseline");
            self.deadline_hit = Some(deadline::message("baseline", limit, cut, &on));
        }
        for e in errors {
            *failed.entry(e.class.name()).or_insert(0) += 1;
            self.shared.keep_error(e);
        }
        self.interrupted = stopped || cut > 0;
        (back, failed)
    }

    /// The day: the actors started, the tasks dispatched (open loop at their times, or in
    /// stress mode each user's next as its last ends) until the schedule, the test or the
    /// overload guard ends it, or a stop.
    async fn day(
        &mut self,
        actors: Vec<Actor>,
        sched: &mut Scheduler,
        start: Instant,
        mut finished_rx: Option<mpsc::UnboundedReceiver<u32>>,
    ) -> DayRun {
        let plan = self.plan;
        // By user index; a user whose actor was lost (a stopped baseline) gets no tasks.
        let mut senders: Vec<Option<mpsc::UnboundedSender<Job>>> =
            (0..self.users).map(|_| None).collect();
        let mut running = Vec::with_capacity(actors.len());
        if !self.interrupted {
            for a in actors {
                let (tx, rx) = mpsc::unbounded_channel();
                if let Some(slot) = senders.get_mut(a.me as usize) {
                    *slot = Some(tx);
                }
                running.push((a.me, tokio::spawn(a.run(rx))));
            }
        }
        let mut dispatcher = Dispatcher {
            shared: self.shared,
            senders: &senders,
            dispatched: 0,
            max_unfinished: 0,
        };
        let mut overloaded = false;
        if let Some(finished) = finished_rx.as_mut().filter(|_| !self.interrupted) {
            self.interrupted |= stress(&mut dispatcher, sched, finished, plan, start).await;
        }
        if !self.interrupted && !plan.stress {
            let limit = (plan.overload_per_user * self.users as f64).ceil() as u64;
            match open_loop(&mut dispatcher, sched, plan, start, limit).await {
                LoopEnd::Done => {}
                LoopEnd::Stopped => self.interrupted = true,
                LoopEnd::Overloaded => overloaded = true,
            }
        }
        let (dispatched, max_unfinished) = (dispatcher.dispatched, dispatcher.max_unfinished);
        DayRun {
            running,
            dispatched,
            max_unfinished,
            overloaded,
        }
    }

    /// The tasks still running when the dispatch ended: on a stop or overload they get
    /// [`STOP_WAIT`] and are cancelled; otherwise until the day's deadline (the schedule's
    /// end, then [`deadline::drain`]). The actors that finished.
    async fn drain(
        &mut self,
        running: Vec<(u32, tokio::task::JoinHandle<Actor>)>,
        overloaded: bool,
        start: Instant,
    ) -> Vec<Actor> {
        let plan = self.plan;
        if overloaded || self.interrupted {
            return self.stop_running(running).await;
        }
        let mut done = Vec::with_capacity(running.len());
        // The last tasks finish; a stop request meanwhile gives them STOP_WAIT, then cancels.
        let mut stop_at: Option<Instant> = None;
        let drain = deadline::drain(self.command, plan.grace);
        let drain_at = (start + self.length).max(clock::now()) + drain;
        let mut cut_kinds = Vec::new();
        let kind_of = |me: u32| {
            self.clients
                .get(me as usize)
                .copied()
                .unwrap_or(ClientType::DesktopImap)
        };
        for (me, mut a) in running {
            if clock::now() >= drain_at {
                a.abort();
                cut_kinds.push(kind_of(me));
                continue;
            }
            let actor = loop {
                if stop_at.is_none() && plan.stop.load(Ordering::Relaxed) {
                    self.interrupted = true;
                    self.shared.stopping.store(true, Ordering::Relaxed);
                    stop_at = Some(clock::now() + STOP_WAIT);
                }
                let until = stop_at
                    .unwrap_or_else(|| clock::now() + Duration::from_millis(100))
                    .min(drain_at);
                match clock::timeout_at(until, &mut a).await {
                    Ok(r) => break r.ok(),
                    Err(_) if stop_at.is_some() => {
                        a.abort();
                        break None;
                    }
                    Err(_) if clock::now() >= drain_at => {
                        a.abort();
                        cut_kinds.push(kind_of(me));
                        break None;
                    }
                    Err(_) => {}
                }
            };
            done.extend(actor);
        }
        if !cut_kinds.is_empty() && !self.interrupted {
            let n = cut_kinds.len();
            let on = self.servers_of(cut_kinds, "day");
            self.deadline_hit = Some(deadline::message("day", self.length + drain, n, &on));
            self.interrupted = true;
        }
        done
    }

    /// Stop: queued tasks are dropped; running ones get [`STOP_WAIT`], then are cancelled
    /// (their connections closed). The actors that finished in time.
    async fn stop_running(
        &self,
        running: Vec<(u32, tokio::task::JoinHandle<Actor>)>,
    ) -> Vec<Actor> {
        self.shared.stopping.store(true, Ordering::Relaxed);
        let deadline = clock::now() + STOP_WAIT;
        let mut done = Vec::with_capacity(running.len());
        for (_, mut a) in running {
            match clock::timeout_at(deadline, &mut a).await {
                Ok(Ok(actor)) => done.push(actor),
                _ => a.abort(),
            }
        }
        done
    }

    /// Copies still on their way: the users look again until all are seen or the grace time
    /// is over (sweeps started before its end get one command timeout more, then are cut).
    async fn grace(&mut self, mut done: Vec<Actor>, overloaded: bool) -> Vec<Actor> {
        let plan = self.plan;
        let grace_end = clock::now() + plan.grace;
        while !lock(&self.shared.ledger).complete()
            && clock::now() < grace_end
            && !overloaded
            && !self.interrupted
        {
            let until = grace_end + self.command;
            let (back, _, stopped, cut) =
                each_actor(done, &plan.stop, Some(until), |mut a| async move {
                    let r = a.sweep().await;
                    (a, r)
                })
                .await;
            if cut > 0 {
                let on = self.servers_of(missing_kinds(&back, self.clients, self.users), "grace");
                self.deadline_hit = Some(deadline::message(
                    "grace sweep",
                    plan.grace + self.command,
                    cut,
                    &on,
                ));
            }
            done = back;
            if stopped || cut > 0 {
                self.interrupted = true;
                break;
            }
            if !lock(&self.shared.ledger).complete() {
                clock::sleep(Duration::from_millis(200)).await;
            }
        }
        done
    }
}

/// How the open loop ended.
enum LoopEnd {
    /// The schedule (or the test) is over.
    Done,
    /// A stop request.
    Stopped,
    /// The overload guard: more unfinished tasks than `limit`.
    Overloaded,
}

/// Open loop: every task dispatched at its time, whatever happened to the ones before, until
/// the schedule ends, a stop, or more than `limit` tasks are unfinished.
async fn open_loop(
    dispatcher: &mut Dispatcher<'_>,
    sched: &mut Scheduler,
    plan: &DayPlan,
    start: Instant,
    limit: u64,
) -> LoopEnd {
    let mut due = Vec::new();
    loop {
        if plan.stop.load(Ordering::Relaxed) {
            return LoopEnd::Stopped;
        }
        sched.due(start.elapsed(), &mut due);
        for t in due.drain(..) {
            let recipients = recipients_of(sched, &t);
            dispatcher.send(t, recipients, start + t.at);
        }
        if dispatcher.shared.unfinished.load(Ordering::Relaxed) > limit {
            return LoopEnd::Overloaded;
        }
        let Some(next) = sched.next_due() else {
            return LoopEnd::Done;
        };
        let wait = next
            .saturating_sub(start.elapsed())
            .min(Duration::from_millis(100));
        clock::sleep(wait).await;
    }
}

/// Stress (closed loop): each user's first task now, then its next as soon as one ends, until
/// the test's end or the days' tasks are done. True when a stop request ended it.
async fn stress(
    dispatcher: &mut Dispatcher<'_>,
    sched: &mut Scheduler,
    finished: &mut mpsc::UnboundedReceiver<u32>,
    plan: &DayPlan,
    start: Instant,
) -> bool {
    let end_at = plan.duration.map(|d| start + d);
    let mut running_users = 0usize;
    for u in 0..dispatcher.senders.len() as u32 {
        if let Some(t) = sched.next_for(u) {
            let r = recipients_of(sched, &t);
            running_users += usize::from(dispatcher.send(t, r, clock::now()));
        }
    }
    while running_users > 0 {
        if plan.stop.load(Ordering::Relaxed) {
            return true;
        }
        let now = clock::now();
        if end_at.is_some_and(|e| now >= e) {
            break;
        }
        let wait = end_at.map_or(Duration::from_millis(100), |e| {
            e.saturating_duration_since(now)
                .min(Duration::from_millis(100))
        });
        tokio::select! {
            biased;
            u = finished.recv() => {
                let Some(u) = u else { break };
                running_users = running_users.saturating_sub(1);
                if let Some(t) = sched.next_for(u) {
                    let r = recipients_of(sched, &t);
                    running_users += usize::from(dispatcher.send(t, r, clock::now()));
                }
            }
            _ = clock::sleep(wait) => {}
        }
    }
    false
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::error::ErrorClass;

    fn meter() -> Meter {
        Meter {
            tasks: BTreeMap::new(),
            interval: SampleCounts::default(),
            cumulative: SampleCounts::default(),
            interval_latency_us: histogram(),
        }
    }

    #[test]
    fn a_task_that_sent_no_command_is_never_counted_completed() {
        // The invariant: "done" with zero protocol commands is a fault, not a completion.
        assert_eq!(outcome(&Ok(Acted::Done), 0), Outcome::Failed(NO_COMMAND));
        assert_eq!(outcome(&Ok(Acted::Done), 3), Outcome::Completed);
        assert_eq!(outcome(&Ok(Acted::Nothing), 0), Outcome::Skipped);
        assert_eq!(outcome(&Ok(Acted::Nothing), 2), Outcome::Skipped);
        let e = Error::new(ErrorClass::Timeout, Some("u1"), "imap://h:1", "SELECT", "x");
        assert_eq!(outcome(&Err(e), 1), Outcome::Failed("timeout"));

        let mut m = meter();
        let t = clock::now();
        m.dispatched(TaskKind::Move);
        m.dispatched(TaskKind::Move);
        m.dispatched(TaskKind::Move);
        m.finished(TaskKind::Move, outcome(&Ok(Acted::Done), 0), t, t, t);
        m.finished(TaskKind::Move, outcome(&Ok(Acted::Nothing), 4), t, t, t);
        m.finished(TaskKind::Move, outcome(&Ok(Acted::Done), 5), t, t, t);
        let st = &m.tasks[&TaskKind::Move];
        assert_eq!((st.dispatched, st.completed, st.skipped), (3, 1, 1));
        assert_eq!(st.failed.get(NO_COMMAND), Some(&1));
        assert_eq!(st.from_schedule_us.len(), 1);
        assert_eq!(m.cumulative.completed, 1);
    }

    #[test]
    fn the_move_folder_is_the_servers_archive_or_made_under_its_personal_prefix() {
        let ns = |p: &str, d: Option<char>| Namespace {
            prefix: p.into(),
            delimiter: d,
        };
        let listed = |name: &str, attr: &str| Listed {
            name: name.into(),
            delimiter: Some('/'),
            attributes: vec!["\\HasNoChildren".into(), attr.into()],
        };
        // No NAMESPACE: today's top-level folder.
        assert_eq!(archive_folder(None, &[]), ("Archive".into(), true));
        assert_eq!(
            archive_folder(Some(&ns("", Some('/'))), &[]),
            ("Archive".into(), true)
        );
        assert_eq!(
            archive_folder(Some(&ns("INBOX.", Some('.'))), &[]),
            ("INBOX.Archive".into(), true)
        );
        assert_eq!(
            archive_folder(Some(&ns("INBOX", Some('.'))), &[]),
            ("INBOX.Archive".into(), true)
        );
        // The server's \Archive is used as it is, whatever its name; \Sent is not a target.
        let l = [
            listed("INBOX.Sent", "\\Sent"),
            listed("[Gmail]/All Mail", "\\Archive"),
        ];
        assert_eq!(
            archive_folder(Some(&ns("INBOX.", Some('.'))), &l),
            ("[Gmail]/All Mail".into(), false)
        );
        assert_eq!(
            archive_folder(Some(&ns("INBOX.", Some('.'))), &l[..1]),
            ("INBOX.Archive".into(), true)
        );
        let note = folders_note(
            Some(&ns("INBOX.", Some('.'))),
            &l[..1],
            "INBOX.Archive",
            true,
        );
        assert!(note.contains("\\Sent \"INBOX.Sent\""), "{note}");
        assert!(note.contains("made by the run"), "{note}");
    }

    #[test]
    fn one_example_error_is_kept_per_class_however_many_come_first() {
        let mut ex = Examples::default();
        for i in 0..50 {
            ex.keep(Error::new(
                ErrorClass::Auth,
                Some("u"),
                "s",
                "LOGIN",
                format!("a{i}"),
            ));
        }
        ex.keep(Error::new(
            ErrorClass::Timeout,
            Some("u"),
            "s",
            "NOOP",
            "late",
        ));
        ex.keep(Error::new(
            ErrorClass::Timeout,
            Some("u"),
            "s",
            "NOOP",
            "later",
        ));
        let kept: Vec<(&str, &str)> =
            ex.0.iter()
                .map(|e| (e.class.name(), e.detail.as_str()))
                .collect();
        assert_eq!(kept, [("auth", "a0"), ("timeout", "late")]);
    }
}
