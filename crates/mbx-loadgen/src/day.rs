//! Running simulated days against a real server: the scheduler's tasks dispatched at their
//! times (open loop) to one actor per user, each doing its tasks in order with its client
//! type's sessions; every copy delivered is checked by the ledger; LoadGen's overload guard.
//!
//! This is the engine the `loadgen` command will drive and report; it returns its figures
//! ([`DayReport`]) and knows nothing of output.

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use hdrhistogram::Histogram;
use tokio::sync::mpsc;

use crate::conn::Endpoint;
use crate::error::{Error, Result};
use crate::imap::ImapClient;
use crate::init::INIT_SEQ_BASE;
use crate::ledger::{DeliverySummary, Ledger};
use crate::message::{Generator, MessageId, Verdict};
use crate::metrics::Recorder;
use crate::pop3::Pop3Client;
use crate::sched::{ClientType, Clock, RealClock, Scheduler, Task, TaskKind};
use crate::smtp::{AuthMechanism, SmtpClient};
use crate::users::User;

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
    pub stop: Arc<std::sync::atomic::AtomicBool>,
}

/// One task kind's figures.
#[derive(Debug, Clone)]
pub struct TaskStats {
    /// Tasks dispatched.
    pub dispatched: u64,
    /// Tasks that finished without error.
    pub completed: u64,
    /// Failed tasks by error class.
    pub failed: BTreeMap<&'static str, u64>,
    /// Latency from the scheduled time to the end, microseconds (a task that waited behind the
    /// user's earlier tasks counts its wait: no coordinated omission).
    pub from_schedule_us: Histogram<u64>,
    /// Latency from the task's own start to its end, microseconds.
    pub service_us: Histogram<u64>,
}

impl TaskStats {
    fn new() -> TaskStats {
        let h = || {
            Histogram::new_with_bounds(1, 3_600_000_000, 3)
                .expect("constant bounds within hdrhistogram's limits")
        };
        TaskStats {
            dispatched: 0,
            completed: 0,
            failed: BTreeMap::new(),
            from_schedule_us: h(),
            service_us: h(),
        }
    }
}

/// What a run of days did.
#[derive(Debug, Clone)]
pub struct DayReport {
    /// Tasks the schedule holds for the days.
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
    /// Copies expected, delivered, missing, duplicated, corrupted; delivery latency.
    pub delivery: DeliverySummary,
    /// The first errors (at most 20), for messages.
    pub first_errors: Vec<Error>,
    /// Wall time from the start to the end of the grace sweep.
    pub elapsed: Duration,
}

/// How long running tasks get to finish when the overload guard stops a run.
pub const STOP_WAIT: Duration = Duration::from_secs(2);

struct Shared {
    ledger: Mutex<Ledger>,
    stats: Mutex<BTreeMap<TaskKind, TaskStats>>,
    errors: Mutex<Vec<Error>>,
    unfinished: AtomicU64,
    /// Set when the run stops early: queued tasks are dropped, not run.
    stopping: std::sync::atomic::AtomicBool,
    gen: Generator,
    servers: Servers,
    rec: Recorder,
    addresses: Vec<String>,
}

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    match m.lock() {
        Ok(g) => g,
        Err(p) => p.into_inner(),
    }
}

struct Job {
    task: Task,
    recipients: Vec<u32>,
    due: Instant,
}

/// A user's view of its INBOX: messages of the run it has seen (and may act on).
#[derive(Debug, Default)]
struct Inbox {
    last_uid: u32,
    known: Vec<u32>,
    archive_made: bool,
}

struct Actor {
    me: u32,
    user: User,
    client: ClientType,
    session: Option<ImapClient>,
    inbox: Inbox,
    pick: u64,
    shared: Arc<Shared>,
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
            let mut s =
                ImapClient::connect(&self.shared.servers.imap, self.shared.rec.clone()).await?;
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

    /// New messages in INBOX: fetched, verified, counted by the ledger, remembered.
    async fn check_imap(&mut self) -> Result<()> {
        self.open().await?;
        let Some(s) = self.session.as_mut() else {
            return Ok(());
        };
        s.noop().await?;
        let fetched = s
            .uid_fetch(
                &format!("{}:*", self.inbox.last_uid + 1),
                "(UID BODY.PEEK[])",
            )
            .await?;
        let now = Instant::now();
        let before = self.inbox.last_uid;
        for f in fetched {
            let Some(uid) = f.uid.filter(|&u| u > before) else {
                continue;
            };
            self.inbox.last_uid = self.inbox.last_uid.max(uid);
            let verdict = self
                .shared
                .gen
                .verify(f.body.as_deref().unwrap_or_default());
            if let Verdict::Intact(id) = &verdict {
                self.inbox.known.push(uid);
                if id.seq >= INIT_SEQ_BASE {
                    continue;
                }
            }
            lock(&self.shared.ledger).seen(self.me, &verdict, now);
        }
        Ok(())
    }

    /// A POP3 check: every message retrieved, verified, counted, deleted from the server.
    async fn check_pop3(&mut self) -> Result<()> {
        let mut p = Pop3Client::connect(&self.shared.servers.pop3, self.shared.rec.clone()).await?;
        p.login(&self.user.login, &self.user.password).await?;
        let list = p.uidl().await?;
        for (n, _) in list {
            let m = p.retr(n).await?;
            let verdict = self.shared.gen.verify(&m);
            let ours = matches!(&verdict, Verdict::Intact(_) | Verdict::Corrupted { .. });
            lock(&self.shared.ledger).seen(self.me, &verdict, Instant::now());
            // Only messages this run made are deleted.
            if ours {
                p.dele(n).await?;
            }
        }
        p.quit().await
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
            self.shared.rec.clone(),
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

    /// A message this user has seen, if any (after a check when none is known).
    async fn some_message(&mut self) -> Result<Option<(usize, u32)>> {
        if self.inbox.known.is_empty() {
            self.check_imap().await?;
        }
        if self.inbox.known.is_empty() {
            return Ok(None);
        }
        let i = self.next_pick(self.inbox.known.len());
        Ok(Some((i, self.inbox.known[i])))
    }

    async fn act(&mut self, task: &Task, recipients: &[u32]) -> Result<()> {
        use TaskKind::*;
        match (self.client, task.kind) {
            (_, SendNew) => self.send(task, recipients).await,
            (ClientType::Pop3, Reply | Forward) => self.send(task, recipients).await,
            (_, Reply | Forward) => {
                // Read the message replied to or forwarded, then send.
                if let Some((_, uid)) = self.some_message().await? {
                    if let Some(s) = self.session.as_mut() {
                        s.uid_fetch(&uid.to_string(), "(BODY.PEEK[])").await?;
                    }
                }
                self.send(task, recipients).await
            }
            (ClientType::Pop3, _) => self.check_pop3().await,
            (_, Logon) => self.open().await,
            (_, Logoff) => {
                self.close().await;
                Ok(())
            }
            (_, CheckInbox) => self.check_imap().await,
            (_, Read) => {
                if let Some((_, uid)) = self.some_message().await? {
                    if let Some(s) = self.session.as_mut() {
                        s.uid_fetch(&uid.to_string(), "(BODY[])").await?;
                    }
                }
                Ok(())
            }
            (_, Flag) => {
                if let Some((_, uid)) = self.some_message().await? {
                    if let Some(s) = self.session.as_mut() {
                        s.uid_store(&uid.to_string(), "+FLAGS.SILENT", "\\Flagged")
                            .await?;
                    }
                }
                Ok(())
            }
            (_, Move) => {
                if let Some((i, uid)) = self.some_message().await? {
                    if let Some(s) = self.session.as_mut() {
                        if !self.inbox.archive_made {
                            s.create("Archive").await?;
                            self.inbox.archive_made = true;
                        }
                        s.uid_move(&uid.to_string(), "Archive").await?;
                        self.inbox.known.swap_remove(i);
                    }
                }
                Ok(())
            }
            (_, Delete) => {
                if let Some((i, uid)) = self.some_message().await? {
                    if let Some(s) = self.session.as_mut() {
                        s.uid_store(&uid.to_string(), "+FLAGS.SILENT", "\\Deleted")
                            .await?;
                        s.expunge().await?;
                        self.inbox.known.swap_remove(i);
                    }
                }
                Ok(())
            }
            (_, Search) => {
                self.open().await?;
                if let Some(s) = self.session.as_mut() {
                    let run = self.shared.gen.run().to_owned();
                    s.search(&format!("HEADER X-Mbx-Id \"{run}/\""), true)
                        .await?;
                }
                Ok(())
            }
        }
    }

    async fn run(mut self, mut rx: mpsc::UnboundedReceiver<Job>) -> Actor {
        while let Some(job) = rx.recv().await {
            if self.shared.stopping.load(Ordering::Relaxed) {
                self.shared.unfinished.fetch_sub(1, Ordering::Relaxed);
                continue;
            }
            let started = Instant::now();
            let r = self.act(&job.task, &job.recipients).await;
            if self.client == ClientType::Webmail {
                self.close().await;
            }
            let end = Instant::now();
            let failed = r.as_ref().err().map(|e| e.class.name());
            if let Err(e) = r {
                // The session may be unusable: the next task opens a new one.
                self.session = None;
                let mut errs = lock(&self.shared.errors);
                if errs.len() < 20 {
                    errs.push(e);
                }
            }
            {
                let mut stats = lock(&self.shared.stats);
                let st = stats.entry(job.task.kind).or_insert_with(TaskStats::new);
                match failed {
                    None => {
                        st.completed += 1;
                        st.from_schedule_us.saturating_record(
                            (end.saturating_duration_since(job.due).as_micros() as u64).max(1),
                        );
                        st.service_us.saturating_record(
                            (end.saturating_duration_since(started).as_micros() as u64).max(1),
                        );
                    }
                    Some(class) => *st.failed.entry(class).or_insert(0) += 1,
                }
            }
            self.shared.unfinished.fetch_sub(1, Ordering::Relaxed);
        }
        self
    }

    /// One last look for copies not yet seen (after the days).
    async fn sweep(&mut self) -> Result<()> {
        let r = match self.client {
            ClientType::Pop3 => self.check_pop3().await,
            _ => self.check_imap().await,
        };
        if self.client == ClientType::Webmail || r.is_err() {
            self.close().await;
        }
        r
    }
}

/// Runs `plan.days` simulated days of `users` (with their client types) against `servers`.
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
    let planned = sched.planned();
    let shared = Arc::new(Shared {
        ledger: Mutex::new(Ledger::new()),
        stats: Mutex::new(BTreeMap::new()),
        errors: Mutex::new(Vec::new()),
        unfinished: AtomicU64::new(0),
        stopping: std::sync::atomic::AtomicBool::new(false),
        gen: gen.clone(),
        servers: servers.clone(),
        rec,
        addresses: users.iter().map(|u| u.address.clone()).collect(),
    });
    let mut senders = Vec::with_capacity(users.len());
    let mut actors = Vec::with_capacity(users.len());
    for (i, u) in users.iter().enumerate() {
        let (tx, rx) = mpsc::unbounded_channel();
        let actor = Actor {
            me: i as u32,
            user: u.clone(),
            client: clients.get(i).copied().unwrap_or(ClientType::DesktopImap),
            session: None,
            inbox: Inbox::default(),
            pick: plan.seed ^ (i as u64).wrapping_mul(0x9E37_79B9_7F4A_7C15),
            shared: shared.clone(),
        };
        senders.push(tx);
        actors.push(tokio::spawn(actor.run(rx)));
    }
    let start = Instant::now();
    let clock = RealClock(start);
    let limit = (plan.overload_per_user * users.len() as f64).ceil() as u64;
    let mut due = Vec::new();
    let (mut dispatched, mut max_unfinished, mut overloaded, mut interrupted) =
        (0u64, 0u64, false, false);
    loop {
        if plan.stop.load(Ordering::Relaxed) {
            interrupted = true;
            break;
        }
        sched.due(&clock, &mut due);
        for t in due.drain(..) {
            let recipients = if t.kind.sends() {
                sched.recipients(&t)
            } else {
                Vec::new()
            };
            let n = shared.unfinished.fetch_add(1, Ordering::Relaxed) + 1;
            max_unfinished = max_unfinished.max(n);
            dispatched += 1;
            lock(&shared.stats)
                .entry(t.kind)
                .or_insert_with(TaskStats::new)
                .dispatched += 1;
            let job = Job {
                due: start + t.at,
                recipients,
                task: t,
            };
            if let Some(tx) = senders.get(t.user as usize) {
                let _ = tx.send(job);
            }
        }
        if shared.unfinished.load(Ordering::Relaxed) > limit {
            overloaded = true;
            break;
        }
        let Some(next) = sched.next_due() else { break };
        let wait = next
            .saturating_sub(clock.now())
            .min(Duration::from_millis(100));
        tokio::time::sleep(wait).await;
    }
    drop(senders);
    let mut done = Vec::with_capacity(actors.len());
    if overloaded || interrupted {
        // Stop: queued tasks are dropped; running ones get a moment, then are cancelled
        // (their connections closed).
        shared.stopping.store(true, Ordering::Relaxed);
        let deadline = tokio::time::Instant::now() + STOP_WAIT;
        for mut a in actors {
            match tokio::time::timeout_at(deadline, &mut a).await {
                Ok(Ok(actor)) => done.push(actor),
                _ => a.abort(),
            }
        }
    } else {
        for a in actors {
            if let Ok(actor) = a.await {
                done.push(actor);
            }
        }
    }
    // Copies still on their way: look again until all are seen or the grace time is over.
    let grace_end = Instant::now() + plan.grace;
    while !lock(&shared.ledger).complete()
        && Instant::now() < grace_end
        && !overloaded
        && !interrupted
    {
        for actor in &mut done {
            let _ = actor.sweep().await;
        }
        if !lock(&shared.ledger).complete() {
            tokio::time::sleep(Duration::from_millis(200)).await;
        }
    }
    for actor in &mut done {
        actor.close().await;
    }
    let delivery = lock(&shared.ledger).summary();
    let tasks = lock(&shared.stats).clone();
    let first_errors = lock(&shared.errors).clone();
    DayReport {
        planned,
        dispatched,
        tasks,
        max_unfinished,
        overloaded,
        interrupted,
        delivery,
        first_errors,
        elapsed: start.elapsed(),
    }
}
