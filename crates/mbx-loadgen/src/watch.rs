//! The accounting side's own view of delivery, independent of the users' schedule.
//!
//! **Watchers**: one IMAP session per watched recipient (at most [`WatchPlan::mailboxes`]),
//! its INBOX opened read-only (EXAMINE: nothing changes, `\Recent` included), polled every
//! [`WatchPlan::poll`] with NOOP; when the server announces more messages, the new ones' `X-Mbx-Id`
//! is fetched (`BODY.PEEK[HEADER.FIELDS (X-Mbx-Id)]`, a few hundred bytes) and the copy recorded
//! as present at the NOOP's answer ([`Ledger::server_seen`]): the server delivery latency, with
//! a resolution of one poll interval (a copy is listed at most `poll` + one NOOP after it was
//! stored). Cost: one connection per watched mailbox and one NOOP per poll each (32 mailboxes
//! at 0.5 s: 32 connections, 64 NOOPs a second), on a recorder of its own (the run's
//! per-command tables hold the users' commands only).
//!
//! **IDLE probes**: on the first [`WatchPlan::probes`] watched mailboxes (when the server has
//! IDLE), one more session that only idles (RFC 2177) and notes when each new UID was
//! announced. Compared with the watcher's listing of the same UID, that is the server's IDLE
//! notification delay, without the users' tasks interrupting IDLE; a copy the watcher listed
//! that IDLE did not announce within [`WatchPlan::slow_after`] makes IDLE slow
//! ([`IdleProbe::slow`]).

use std::collections::{HashMap, HashSet};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use hdrhistogram::Histogram;
use tokio::task::JoinSet;

use crate::clock::{self, Instant};
use crate::conn::Endpoint;
use crate::error::Result;
use crate::imap::{IdleEvent, ImapClient};
use crate::ledger::Ledger;
use crate::message::Generator;
use crate::metrics::Recorder;
use crate::users::User;

/// What to watch.
#[derive(Debug, Clone, Copy)]
pub struct WatchPlan {
    /// Recipients' mailboxes watched, at most (the first users): one connection each. 0: no
    /// watcher, no server delivery figure.
    pub mailboxes: usize,
    /// The poll interval: the server delivery latency's resolution.
    pub poll: Duration,
    /// IDLE probes (one more connection each, on the first watched mailboxes).
    pub probes: usize,
    /// A copy IDLE did not announce within this long after the watcher listed it makes IDLE
    /// slow.
    pub slow_after: Duration,
}

impl Default for WatchPlan {
    /// 32 mailboxes polled every 0.5 s, 2 IDLE probes, IDLE slow beyond 5 s.
    fn default() -> Self {
        WatchPlan {
            mailboxes: 32,
            poll: Duration::from_millis(500),
            probes: 2,
            slow_after: Duration::from_secs(5),
        }
    }
}

/// The IDLE probes' finding.
#[derive(Debug, Clone)]
pub struct IdleProbe {
    /// Probe sessions that ran.
    pub probes: u64,
    /// Copies the watcher listed in probed mailboxes while their probe idled.
    pub copies: u64,
    /// Of those, announced by IDLE within `slow_after` of the watcher's listing.
    pub prompt: u64,
    /// IDLE's delay after the watcher's listing (0 when IDLE was first), microseconds, of the
    /// copies IDLE announced.
    pub lag_us: Histogram<u64>,
    /// The limit `prompt` was judged against.
    pub slow_after: Duration,
    /// IDLE is slow: fewer than 9 in 10 copies announced within `slow_after`.
    pub slow: bool,
}

impl IdleProbe {
    /// A sentence for the report: how promptly this server's IDLE notifies.
    pub fn note(&self) -> String {
        if self.copies == 0 {
            return "IDLE not judged: no copy came to a probed mailbox while it idled".into();
        }
        let late = self.copies - self.prompt;
        if self.slow {
            let every = if self.lag_us.is_empty() {
                format!(
                    "it announced none of them within the test (more than {} s)",
                    self.slow_after.as_secs()
                )
            } else {
                format!(
                    "it notifies about every {:.0} s (the longest delay seen)",
                    self.lag_us.max() as f64 / 1e6
                )
            };
            format!(
                "this server's IDLE is slow: {late} of {} copies were not announced within {} s of being in the mailbox; {every}. Desktop users see new mail at their next command instead (user-seen latency)",
                self.copies,
                self.slow_after.as_secs()
            )
        } else {
            format!(
                "IDLE notifies promptly: {} of {} copies announced within {} s (p95 {:.1} s after the watcher)",
                self.prompt,
                self.copies,
                self.slow_after.as_secs(),
                self.lag_us.value_at_quantile(0.95) as f64 / 1e6
            )
        }
    }
}

/// What the watchers did.
#[derive(Debug, Clone)]
pub struct WatchReport {
    /// Mailboxes watched (sessions that came up).
    pub watched: u64,
    /// The poll interval (the resolution).
    pub poll: Duration,
    /// Connections used: watchers and probes.
    pub connections: u64,
    /// NOOPs sent.
    pub polls: u64,
    /// Sessions that failed (each reopened after a second).
    pub failures: u64,
    /// The IDLE probes' finding (None: no probe, or the server has no IDLE).
    pub idle: Option<IdleProbe>,
}

/// Per probed (user, UID): when the watcher listed it, and when IDLE announced it.
#[derive(Default)]
struct Probed {
    seen: HashMap<(u32, u32), (Option<Instant>, Option<Instant>)>,
    /// Per probed user: when its probe's current IDLE started (None: not idling).
    idling_since: HashMap<u32, Instant>,
    /// Copies the watcher listed while the user's probe idled (the only ones judged).
    judged: HashSet<(u32, u32)>,
}

/// How long the watchers' sessions get to open, all together: a server slow to log them on
/// delays the day by this much at most (the mailboxes not open by then are not watched).
pub const OPEN_WAIT: Duration = Duration::from_secs(5);

/// Entries kept per probe table, at most (memory bounded whatever the test's length).
const PROBED_MAX: usize = 100_000;

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    match m.lock() {
        Ok(g) => g,
        Err(p) => p.into_inner(),
    }
}

/// Running watchers; [`Watch::finish`] stops them and gives the report.
pub struct Watch {
    stop: Arc<AtomicBool>,
    tasks: JoinSet<()>,
    plan: WatchPlan,
    probed: Arc<Mutex<Probed>>,
    polls: Arc<AtomicU64>,
    failures: Arc<AtomicU64>,
    up: Arc<AtomicU64>,
    probes: u64,
}

/// Starts watching the first `plan.mailboxes` of `users` (user index = their place): each
/// watcher opens its session and notes the UIDNEXT before this returns (mail already there
/// is not counted), then polls in the background. Returns within [`OPEN_WAIT`], or soon
/// after `cancel` is set.
pub async fn start(
    imap: &Endpoint,
    users: &[User],
    gen: &Generator,
    ledger: Arc<Mutex<Ledger>>,
    plan: WatchPlan,
    cancel: &AtomicBool,
) -> Watch {
    let stop = Arc::new(AtomicBool::new(false));
    let probed = Arc::new(Mutex::new(Probed::default()));
    let (polls, failures, up) = (
        Arc::new(AtomicU64::new(0)),
        Arc::new(AtomicU64::new(0)),
        Arc::new(AtomicU64::new(0)),
    );
    let rec = Recorder::new();
    let mut tasks = JoinSet::new();
    let n = plan.mailboxes.min(users.len());
    let deadline = clock::now() + OPEN_WAIT;
    // Every session opens at once (at most `mailboxes` + `probes`), all within OPEN_WAIT.
    let mut opening: JoinSet<Option<(bool, u32, ImapClient, u32)>> = JoinSet::new();
    let probes_wanted = plan.probes.min(n);
    for (i, u) in users.iter().take(n).enumerate() {
        for is_probe in [false, true] {
            if is_probe && i >= probes_wanted {
                continue;
            }
            let (ep, u, rec) = (imap.clone(), u.clone(), rec.clone());
            opening.spawn(async move {
                let mut s = ImapClient::connect(&ep, rec).await.ok()?;
                if is_probe && !s.has_capability("IDLE") {
                    return None;
                }
                s.login(&u.login, &u.password).await.ok()?;
                let sel = s.examine("INBOX").await.ok()?;
                Some((is_probe, i as u32, s, sel.uid_next.saturating_sub(1)))
            });
        }
    }
    let mut probes = 0;
    // Not open by the deadline (or a stop of the run): not watched (dropping the JoinSet
    // cancels them).
    while !opening.is_empty() && !cancel.load(Ordering::Relaxed) && clock::now() < deadline {
        let step = (clock::now() + Duration::from_millis(50)).min(deadline);
        let Ok(Some(r)) = clock::timeout_at(step, opening.join_next()).await else {
            continue;
        };
        match r {
            Ok(Some((false, i, s, last))) => spawn_watcher(
                &mut tasks,
                (i, s, last),
                &stop,
                &ledger,
                gen,
                &probed,
                &polls,
                &failures,
                &up,
                imap,
                users,
                plan,
            ),
            Ok(Some((true, i, s, last))) => {
                probes += 1;
                let (stop, probed) = (stop.clone(), probed.clone());
                tasks.spawn(probe(s, i, last, stop, probed));
            }
            _ => {}
        }
    }
    Watch {
        stop,
        tasks,
        plan,
        probed,
        polls,
        failures,
        up,
        probes,
    }
}

#[allow(clippy::too_many_arguments)]
fn spawn_watcher(
    tasks: &mut JoinSet<()>,
    (me, s, last): (u32, ImapClient, u32),
    stop: &Arc<AtomicBool>,
    ledger: &Arc<Mutex<Ledger>>,
    gen: &Generator,
    probed: &Arc<Mutex<Probed>>,
    polls: &Arc<AtomicU64>,
    failures: &Arc<AtomicU64>,
    up: &Arc<AtomicU64>,
    imap: &Endpoint,
    users: &[User],
    plan: WatchPlan,
) {
    lock(ledger).watch(me);
    up.fetch_add(1, Ordering::Relaxed);
    let w = Watcher {
        me,
        last,
        stop: stop.clone(),
        ledger: ledger.clone(),
        gen: gen.clone(),
        probed: probed.clone(),
        polls: polls.clone(),
        failures: failures.clone(),
        imap: imap.clone(),
        user: users[me as usize].clone(),
        poll: plan.poll,
    };
    tasks.spawn(w.run(s));
}

struct Watcher {
    me: u32,
    last: u32,
    stop: Arc<AtomicBool>,
    ledger: Arc<Mutex<Ledger>>,
    gen: Generator,
    probed: Arc<Mutex<Probed>>,
    polls: Arc<AtomicU64>,
    failures: Arc<AtomicU64>,
    imap: Endpoint,
    user: User,
    poll: Duration,
}

impl Watcher {
    async fn run(mut self, first: ImapClient) {
        let mut session = Some(first);
        let mut tick = clock::ticks(clock::now(), self.poll);
        while !self.stop.load(Ordering::Relaxed) {
            tick.tick().await;
            let s = match session.as_mut() {
                Some(s) => s,
                None => match self.reopen().await {
                    Ok(s) => session.insert(s),
                    Err(_) => {
                        clock::sleep(Duration::from_secs(1)).await;
                        continue;
                    }
                },
            };
            if let Err(_e) = self.look(s).await {
                self.failures.fetch_add(1, Ordering::Relaxed);
                session = None;
            }
        }
        if let Some(s) = session {
            let _ = s.logout().await;
        }
    }

    async fn reopen(&self) -> Result<ImapClient> {
        let mut s = ImapClient::connect(&self.imap, Recorder::new()).await?;
        s.login(&self.user.login, &self.user.password).await?;
        s.examine("INBOX").await?;
        Ok(s)
    }

    /// One poll: NOOP; new UIDs' ids fetched and recorded as present at the NOOP's answer.
    async fn look(&mut self, s: &mut ImapClient) -> Result<()> {
        s.noop().await?;
        let at = clock::now();
        self.polls.fetch_add(1, Ordering::Relaxed);
        // News since the last poll is in the listing: nothing kept for an IDLE.
        s.take_news();
        let listed = s
            .uid_fetch(
                &format!("{}:*", self.last.saturating_add(1)),
                "(UID BODY.PEEK[HEADER.FIELDS (X-Mbx-Id)])",
            )
            .await?;
        for f in listed {
            let Some(uid) = f.uid.filter(|&u| u > self.last) else {
                continue;
            };
            self.last = self.last.max(uid);
            if let Some(id) = f.body.as_deref().and_then(|h| self.gen.id_of(h)) {
                lock(&self.ledger).server_seen(self.me, &id, at);
            }
            let mut p = lock(&self.probed);
            // Judged when the probe idled as the copy came, or announced it already.
            let key = (self.me, uid);
            let idling = p.idling_since.get(&self.me).is_some_and(|&t| t <= at);
            let announced = p.seen.get(&key).is_some_and(|e| e.1.is_some());
            if announced || idling && p.seen.len() < PROBED_MAX {
                p.judged.insert(key);
                p.seen.entry(key).or_default().0 = Some(at);
            }
        }
        Ok(())
    }
}

/// An IDLE probe: idles, and on each EXISTS notes when the new UIDs were announced.
async fn probe(
    mut s: ImapClient,
    me: u32,
    mut last: u32,
    stop: Arc<AtomicBool>,
    probed: Arc<Mutex<Probed>>,
) {
    'outer: while !stop.load(Ordering::Relaxed) {
        if s.idle().await.is_err() {
            break;
        }
        lock(&probed).idling_since.insert(me, clock::now());
        let reissue = clock::now() + crate::imap::IDLE_REISSUE;
        let announced = loop {
            if stop.load(Ordering::Relaxed) || clock::now() >= reissue {
                break None;
            }
            match s.idle_wait(Duration::from_millis(200)).await {
                Ok(IdleEvent::Changed(at, news)) => {
                    let exists = news.iter().any(|n| {
                        n.split_whitespace()
                            .nth(1)
                            .is_some_and(|k| k.eq_ignore_ascii_case("EXISTS"))
                    });
                    if exists {
                        break Some(at);
                    }
                }
                Ok(IdleEvent::Quiet) => {}
                Err(_) => break 'outer,
            }
        };
        if s.done().await.is_err() {
            break;
        }
        let Some(at) = announced else { continue };
        let Ok(listed) = s
            .uid_fetch(&format!("{}:*", last.saturating_add(1)), "(UID)")
            .await
        else {
            break;
        };
        s.take_news();
        let mut p = lock(&probed);
        let before = last;
        for uid in listed
            .into_iter()
            .filter_map(|f| f.uid)
            .filter(|&u| u > before)
        {
            last = last.max(uid);
            if p.seen.len() < PROBED_MAX || p.seen.contains_key(&(me, uid)) {
                p.seen.entry((me, uid)).or_default().1.get_or_insert(at);
            }
        }
    }
    lock(&probed).idling_since.remove(&me);
    let _ = s.logout().await;
}

impl Watch {
    /// Stops the watchers (one last poll each is not waited for beyond a poll interval and 2 s)
    /// and reports.
    pub async fn finish(mut self) -> WatchReport {
        self.stop.store(true, Ordering::Relaxed);
        let deadline = clock::now() + self.plan.poll + Duration::from_secs(2);
        while let Ok(Some(_)) = clock::timeout_at(deadline, self.tasks.join_next()).await {}
        self.tasks.abort_all();
        let end = clock::now();
        let p = lock(&self.probed);
        let idle = (self.probes > 0).then(|| {
            let mut lag_us = Histogram::new_with_bounds(1, 3_600_000_000, 3)
                .expect("constant bounds within hdrhistogram's limits");
            let (mut copies, mut prompt) = (0u64, 0u64);
            for key in &p.judged {
                let Some(&(Some(w), i)) = p.seen.get(key) else {
                    continue;
                };
                match i {
                    Some(i) => {
                        let lag = i.saturating_duration_since(w);
                        copies += 1;
                        prompt += u64::from(lag <= self.plan.slow_after);
                        lag_us.saturating_record((lag.as_micros() as u64).max(1));
                    }
                    // Not announced: judged only once the probe had the time to.
                    None if end.saturating_duration_since(w) > self.plan.slow_after => copies += 1,
                    None => {}
                }
            }
            IdleProbe {
                probes: self.probes,
                copies,
                prompt,
                lag_us,
                slow_after: self.plan.slow_after,
                slow: copies > 0 && prompt * 10 < copies * 9,
            }
        });
        WatchReport {
            watched: self.up.load(Ordering::Relaxed),
            poll: self.plan.poll,
            connections: self.up.load(Ordering::Relaxed) + self.probes,
            polls: self.polls.load(Ordering::Relaxed),
            failures: self.failures.load(Ordering::Relaxed),
            idle,
        }
    }
}
