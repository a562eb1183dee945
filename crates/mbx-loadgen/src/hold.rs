//! Idle connections held (`mbxstress loadgen idle`): N IMAP sessions opened (TLS as the endpoint
//! says), logged in (users cycled), INBOX selected, IDLE started, then held until the hold ends
//! or the caller stops it; what the process costs meanwhile is measured ([`usage`]).
//!
//! One tokio task per connection, no thread each. What a held connection keeps: its
//! [`ImapClient`] (the 4 KiB read buffer of [`crate::conn`], the capabilities), rustls's state
//! when TLS (keys, and its buffers: the received-record buffer shrinks back to what is unread
//! plus 4 KiB after the handshake), and the task itself. The establishing steps run in a boxed
//! future dropped once IDLE is on, so the task keeps only the small idle loop's state.
//!
//! Servers end an IDLE after 30 minutes at most (RFC 2177); a connection held longer renews its
//! IDLE (DONE, IDLE) every [`RENEW`]. Untagged news while idle (`* OK Still here`, EXISTS) is
//! read and counted, never an error.

use std::collections::BTreeMap;
use std::future::Future;
use std::pin::Pin;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;

use tokio::sync::{watch, Semaphore};

use crate::clock::{self, Instant};
use crate::conn::Endpoint;
use crate::error::Error;
use crate::imap::{IdleEvent, ImapClient};
use crate::metrics::Recorder;
use crate::users::User;

/// How often a held IDLE is renewed (servers may end one after 30 minutes, RFC 2177).
pub const RENEW: Duration = Duration::from_secs(25 * 60);

/// What to hold.
#[derive(Debug, Clone)]
pub struct HoldPlan {
    /// Connections opened.
    pub connections: u32,
    /// How long they are held in IDLE once every connection has been tried.
    pub hold: Duration,
    /// Connections being established at once (TCP, TLS, LOGIN, SELECT, IDLE).
    pub concurrency: usize,
    /// The mailbox selected before IDLE.
    pub mailbox: String,
    /// How long after the last connection was established the process is left to settle before
    /// the hold's first measure (allocator and runtime quiet).
    pub settle: Duration,
    /// Set by the caller (Ctrl-C, SIGTERM): stop holding, close, report what was measured.
    pub stop: Arc<AtomicBool>,
}

impl Default for HoldPlan {
    fn default() -> Self {
        HoldPlan {
            connections: 100,
            hold: Duration::from_secs(60),
            concurrency: 100,
            mailbox: "INBOX".into(),
            settle: Duration::from_secs(2),
            stop: Arc::new(AtomicBool::new(false)),
        }
    }
}

/// Live counters, read by the caller while the hold runs (samples once a second).
#[derive(Debug, Default)]
pub struct HoldCounters {
    /// Connections established (in IDLE).
    pub established: AtomicU64,
    /// Connections that could not be established.
    pub failed: AtomicU64,
    /// Established connections lost while held (the server closed, an IDLE renewal failed).
    pub dropped: AtomicU64,
    /// Untagged responses received while idle (`* OK Still here`, EXISTS, ...).
    pub notices: AtomicU64,
    /// 0 while establishing, 1 while holding, 2 while closing.
    pub stage: AtomicU64,
}

impl HoldCounters {
    /// Connections open in IDLE now.
    pub fn open(&self) -> u64 {
        self.established
            .load(Ordering::Relaxed)
            .saturating_sub(self.dropped.load(Ordering::Relaxed))
    }
}

/// The process's memory and CPU time at an instant.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Usage {
    /// Resident set size, bytes (Linux: VmRSS of /proc/self/status).
    pub rss_bytes: u64,
    /// User + system CPU time since the process began (Linux: utime + stime of
    /// /proc/self/stat, in USER_HZ ticks of 10 ms).
    pub cpu: Duration,
    /// When it was read.
    pub at: Instant,
}

/// The process's [`Usage`] now: Linux only (/proc/self). Elsewhere None: Windows would need
/// GetProcessMemoryInfo (WorkingSetSize, or PrivateUsage) and GetProcessTimes (kernel + user
/// time), macOS task_info and getrusage.
pub fn usage() -> Option<Usage> {
    #[cfg(target_os = "linux")]
    {
        let at = clock::now();
        // mbx-core's readers: VmRSS, and utime + stime in USER_HZ ticks (saturating).
        Some(Usage {
            rss_bytes: mbx_core::procfs::self_status_bytes("VmRSS")?,
            cpu: mbx_core::procfs::process_cpu_time()?,
            at,
        })
    }
    #[cfg(not(target_os = "linux"))]
    {
        None
    }
}

/// What a hold did and cost.
#[derive(Debug, Default)]
pub struct HoldReport {
    /// Connections asked.
    pub asked: u32,
    /// Connections established (in IDLE).
    pub established: u64,
    /// Connections that could not be established.
    pub failed: u64,
    /// Established connections lost while held.
    pub dropped: u64,
    /// Connections never tried (the hold was stopped first).
    pub not_started: u64,
    /// Connections still open at the hold's end.
    pub open_at_end: u64,
    /// Untagged responses received while idle.
    pub notices: u64,
    /// From the first connect to the last connection established (or failed).
    pub establish_time: Duration,
    /// The hold measured: from the settled start of the hold to its end.
    pub held: Duration,
    /// The process before any connection.
    pub baseline: Option<Usage>,
    /// At the hold's start (every connection tried, settled).
    pub hold_start: Option<Usage>,
    /// At the hold's end (before any connection was closed).
    pub hold_end: Option<Usage>,
    /// Stopped by the caller.
    pub interrupted: bool,
    /// Failures by class (establishing and while held).
    pub errors_by_class: BTreeMap<String, u64>,
    /// The first errors (at most 10), for the log.
    pub first_errors: Vec<Error>,
}

impl HoldReport {
    /// Resident memory per connection held: (RSS at the hold's end - the baseline) / the
    /// connections open then. None without figures or connections.
    pub fn rss_per_connection(&self) -> Option<f64> {
        let (b, e) = (self.baseline?, self.hold_end?);
        if self.open_at_end == 0 {
            return None;
        }
        Some(e.rss_bytes.saturating_sub(b.rss_bytes) as f64 / self.open_at_end as f64)
    }

    /// CPU used while idle, percent of one core: (CPU time at the hold's end - at its start)
    /// / the hold's length.
    pub fn idle_cpu_pct(&self) -> Option<f64> {
        let (s, e) = (self.hold_start?, self.hold_end?);
        let wall = e.at.duration_since(s.at).as_secs_f64();
        if wall <= 0.0 {
            return None;
        }
        Some(100.0 * e.cpu.saturating_sub(s.cpu).as_secs_f64() / wall)
    }
}

enum Outcome {
    /// Not tried: the hold was stopped first.
    NotStarted,
    /// Held to the end (the news count), still open.
    Held(u64),
    /// Never established.
    Failed(Error),
    /// Established, then lost.
    Dropped(u64, Error),
}

type Boxed<'a, T> = Pin<Box<dyn Future<Output = T> + Send + 'a>>;

/// Connect, LOGIN, SELECT, IDLE: boxed, so its (large) state is freed once IDLE is on and the
/// held task keeps only the idle loop's.
fn establish<'a>(
    ep: &'a Endpoint,
    user: &'a User,
    mailbox: &'a str,
    rec: Recorder,
) -> Boxed<'a, crate::error::Result<ImapClient>> {
    Box::pin(async move {
        let mut s = ImapClient::connect(ep, rec).await?;
        s.login(&user.login, &user.password).await?;
        s.select(mailbox).await?;
        s.idle().await?;
        s.shrink();
        Ok(s)
    })
}

/// Holds one connection until `stop` turns true.
async fn hold_one(
    ep: Arc<Endpoint>,
    user: User,
    mailbox: Arc<str>,
    rec: Recorder,
    permits: Arc<Semaphore>,
    counters: Arc<HoldCounters>,
    mut stop: watch::Receiver<bool>,
) -> Outcome {
    let established = {
        // Closed permits or a stop: the hold ended before this connection's turn.
        let Ok(_permit) = permits.acquire().await else {
            return Outcome::NotStarted;
        };
        if *stop.borrow() {
            return Outcome::NotStarted;
        }
        establish(&ep, &user, &mailbox, rec).await
    };
    let mut s = match established {
        Ok(s) => s,
        Err(e) => {
            counters.failed.fetch_add(1, Ordering::Relaxed);
            return Outcome::Failed(e);
        }
    };
    drop(user);
    counters.established.fetch_add(1, Ordering::Relaxed);
    let mut notices = 0u64;
    let mut renew_at = clock::now() + RENEW;
    loop {
        if *stop.borrow() {
            break;
        }
        let wait = renew_at.saturating_duration_since(clock::now());
        let r = tokio::select! {
            changed = stop.changed() => {
                // A closed channel (the hold itself gone) stops too.
                if changed.is_err() {
                    break;
                }
                continue;
            }
            r = s.idle_wait(wait) => r,
        };
        match r {
            Ok(IdleEvent::Changed(_, news)) => {
                notices += news.len() as u64;
                counters
                    .notices
                    .fetch_add(news.len() as u64, Ordering::Relaxed);
            }
            Ok(IdleEvent::Quiet) => {
                // Time to renew the IDLE.
                let renewed = match s.done().await {
                    Ok(_) => s.idle().await,
                    Err(e) => Err(e),
                };
                if let Err(e) = renewed {
                    counters.dropped.fetch_add(1, Ordering::Relaxed);
                    return Outcome::Dropped(notices, e);
                }
                renew_at = clock::now() + RENEW;
            }
            Err(e) => {
                counters.dropped.fetch_add(1, Ordering::Relaxed);
                return Outcome::Dropped(notices, e);
            }
        }
    }
    // Closing (the hold's end was measured before the stop was sent): DONE and LOGOUT, each
    // bounded by the command timeout; errors while closing are not counted.
    if s.done().await.is_ok() {
        let _ = s.logout().await;
    }
    Outcome::Held(notices)
}

/// Opens `plan.connections` IDLE sessions over `users` (cycled), holds them for `plan.hold`
/// once every connection was tried (or until `plan.stop`), measures the process before,
/// at the hold's start and at its end, then closes them. Commands are timed in `rec`
/// (`connect`, `LOGIN`, `SELECT`, `IDLE`); `counters` move as it goes.
pub async fn hold(
    ep: &Endpoint,
    users: &[User],
    plan: &HoldPlan,
    rec: Recorder,
    counters: Arc<HoldCounters>,
) -> HoldReport {
    let mut report = HoldReport {
        asked: plan.connections,
        baseline: usage(),
        ..HoldReport::default()
    };
    if users.is_empty() || plan.connections == 0 {
        return report;
    }
    let ep = Arc::new(ep.clone());
    let mailbox: Arc<str> = Arc::from(plan.mailbox.as_str());
    let permits = Arc::new(Semaphore::new(plan.concurrency.max(1)));
    let (stop_tx, stop_rx) = watch::channel(false);
    let started = clock::now();
    let mut tasks = Vec::with_capacity(plan.connections as usize);
    for i in 0..plan.connections as usize {
        let user = users[i % users.len()].clone();
        tasks.push(tokio::spawn(hold_one(
            ep.clone(),
            user,
            mailbox.clone(),
            rec.clone(),
            permits.clone(),
            counters.clone(),
            stop_rx.clone(),
        )));
    }
    let tick = Duration::from_millis(50);
    let asked = u64::from(plan.connections);
    // Establishing: until every connection is in IDLE or failed.
    while counters.established.load(Ordering::Relaxed) + counters.failed.load(Ordering::Relaxed)
        < asked
    {
        if plan.stop.load(Ordering::Relaxed) {
            report.interrupted = true;
            break;
        }
        clock::sleep(tick).await;
    }
    report.establish_time = started.elapsed();
    // The hold.
    if !report.interrupted {
        let settle_end = clock::now() + plan.settle;
        while clock::now() < settle_end && !plan.stop.load(Ordering::Relaxed) {
            clock::sleep(tick).await;
        }
        counters.stage.store(1, Ordering::Relaxed);
        report.hold_start = usage();
        let hold_start = clock::now();
        let end = hold_start + plan.hold;
        while clock::now() < end {
            if plan.stop.load(Ordering::Relaxed) {
                report.interrupted = true;
                break;
            }
            let left = end.saturating_duration_since(clock::now());
            clock::sleep(left.min(Duration::from_millis(200))).await;
        }
        report.held = hold_start.elapsed();
    }
    report.hold_end = usage();
    report.open_at_end = counters.open();
    counters.stage.store(2, Ordering::Relaxed);
    let _ = stop_tx.send(true);
    permits.close();
    for t in tasks {
        let outcome = match t.await {
            Ok(o) => o,
            Err(_) => continue,
        };
        let (err, notices) = match outcome {
            Outcome::NotStarted => {
                report.not_started += 1;
                continue;
            }
            Outcome::Held(n) => (None, n),
            Outcome::Failed(e) => (Some(e), 0),
            Outcome::Dropped(n, e) => (Some(e), n),
        };
        report.notices += notices;
        if let Some(e) = err {
            *report
                .errors_by_class
                .entry(e.class.name().to_string())
                .or_insert(0) += 1;
            if report.first_errors.len() < 10 {
                report.first_errors.push(e);
            }
        }
    }
    report.established = counters.established.load(Ordering::Relaxed);
    report.failed = counters.failed.load(Ordering::Relaxed);
    report.dropped = counters.dropped.load(Ordering::Relaxed);
    report
}
