//! Submission at full speed, as smtp-source (`-s sessions -m messages -d`) and postal do: N
//! connections send M messages in all as fast as the server accepts them, each connection
//! keeping its session (EHLO once, optionally STARTTLS and AUTH, then MAIL/RCPT/DATA per
//! message, in one write when the server offers PIPELINING and the plan allows it). One tokio
//! task per connection, no thread each; every command is timed in the
//! shared [`Recorder`] and every failure counted by class.
//!
//! No RSET between messages: the end of DATA resets the transaction (RFC 5321 4.1.1.4), and
//! smtp-source `-d` sends none either. A refused transaction is reset (RSET) and the session
//! goes on; a session that breaks (disconnect, timeout, protocol error) is opened again for the
//! next message, and a connection whose session fails [`MAX_CONSECUTIVE_FAILURES`] times in a
//! row stops (its messages go to the other connections).

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;

use crate::clock;
use crate::conn::Endpoint;
use crate::error::{Error, ErrorClass};
use crate::message::Generator;
use crate::metrics::Recorder;
use crate::smtp::{AuthMechanism, SmtpClient};

/// A connection stops after this many failures in a row (session or message).
pub const MAX_CONSECUTIVE_FAILURES: u32 = 3;

/// How many errors are kept with their full message.
const FIRST_ERRORS: usize = 20;

/// Credentials for AUTH.
#[derive(Debug, Clone)]
pub struct Login {
    /// The SASL user name.
    pub user: String,
    /// Its password.
    pub password: String,
    /// PLAIN or LOGIN.
    pub mechanism: AuthMechanism,
}

/// What to submit.
#[derive(Debug, Clone)]
pub struct SubmitPlan {
    /// Connections (sessions) at once.
    pub connections: usize,
    /// Messages in all.
    pub messages: u64,
    /// The envelope sender (and the messages' From; the generator's sender).
    pub from: String,
    /// The envelope recipients of every message (and its To).
    pub to: Vec<String>,
    /// The EHLO name.
    pub helo: String,
    /// AUTH after EHLO (and STARTTLS), when given.
    pub login: Option<Login>,
    /// MAIL, RCPT and DATA in one write when the server offers PIPELINING (RFC 2920).
    pub pipelining: bool,
    /// Set to stop early: connections finish the message in flight and QUIT.
    pub stop: Arc<AtomicBool>,
}

/// Running totals, readable while the submission goes on (samples, progress).
#[derive(Debug, Default)]
pub struct Counters {
    /// Messages the server accepted (250 after the data).
    pub accepted: AtomicU64,
    /// Messages that failed (refused, or their session broke).
    pub failed: AtomicU64,
    /// Bytes of the accepted messages (as generated, before dot-stuffing).
    pub bytes: AtomicU64,
    /// Sessions open now.
    pub open: AtomicU64,
    /// Messages sent pipelined (MAIL, RCPT and DATA in one write).
    pub pipelined: AtomicU64,
}

/// What a submission did.
#[derive(Debug, Default)]
pub struct SubmitReport {
    /// Messages accepted.
    pub accepted: u64,
    /// Messages failed.
    pub failed: u64,
    /// Messages never tried (every connection stopped, or the run was stopped).
    pub unsent: u64,
    /// Bytes of the accepted messages.
    pub bytes: u64,
    /// From the first connection attempt to the last session's end.
    pub elapsed: Duration,
    /// Sessions opened (EHLO, STARTTLS and AUTH done).
    pub sessions: u64,
    /// Sessions that could not be opened.
    pub sessions_failed: u64,
    /// Failed messages and sessions by error class.
    pub errors_by_class: BTreeMap<&'static str, u64>,
    /// The first errors met, in full.
    pub first_errors: Vec<Error>,
    /// Stopped by [`SubmitPlan::stop`].
    pub interrupted: bool,
}

#[derive(Default)]
struct ConnDone {
    sessions: u64,
    sessions_failed: u64,
    errors: Vec<(ErrorClass, Option<Error>)>,
}

/// Whether a failed message leaves its session usable (the server refused; the transaction was
/// reset) or broken (open a new one).
fn session_survives(class: ErrorClass) -> bool {
    matches!(class, ErrorClass::Rejected(_) | ErrorClass::Auth)
}

async fn open(ep: &Endpoint, plan: &SubmitPlan, rec: &Recorder) -> crate::Result<SmtpClient> {
    let mut s = SmtpClient::connect(ep, &plan.helo, rec.clone()).await?;
    if let Some(l) = &plan.login {
        s.auth(&l.user, &l.password, l.mechanism).await?;
    }
    Ok(s)
}

#[allow(clippy::too_many_arguments)]
async fn connection(
    ep: Endpoint,
    gen: Arc<Generator>,
    plan: Arc<SubmitPlan>,
    next: Arc<AtomicU64>,
    rec: Recorder,
    counters: Arc<Counters>,
    keep_errors: Arc<AtomicU64>,
) -> ConnDone {
    let mut done = ConnDone::default();
    let to: Vec<&str> = plan.to.iter().map(String::as_str).collect();
    let mut session: Option<SmtpClient> = None;
    let mut failures_in_a_row = 0u32;
    let note = |done: &mut ConnDone, e: Error| {
        let keep = keep_errors.fetch_add(1, Ordering::Relaxed) < FIRST_ERRORS as u64;
        done.errors.push((e.class, keep.then_some(e)));
    };
    loop {
        if plan.stop.load(Ordering::Relaxed) || failures_in_a_row >= MAX_CONSECUTIVE_FAILURES {
            break;
        }
        if session.is_none() {
            match open(&ep, &plan, &rec).await {
                Ok(s) => {
                    done.sessions += 1;
                    counters.open.fetch_add(1, Ordering::Relaxed);
                    session = Some(s);
                }
                Err(e) => {
                    done.sessions_failed += 1;
                    failures_in_a_row += 1;
                    note(&mut done, e);
                    continue;
                }
            }
        }
        let seq = next.fetch_add(1, Ordering::Relaxed);
        if seq >= plan.messages {
            break;
        }
        let Some(s) = session.as_mut() else { break };
        let message = gen.message(&plan.from, seq, &to);
        let sent = if plan.pipelining && s.can_pipeline() {
            counters.pipelined.fetch_add(1, Ordering::Relaxed);
            s.send_pipelined(&plan.from, &to, &message).await
        } else {
            s.send(&plan.from, &to, &message).await
        };
        match sent {
            Ok(_) => {
                failures_in_a_row = 0;
                counters.accepted.fetch_add(1, Ordering::Relaxed);
                counters
                    .bytes
                    .fetch_add(message.len() as u64, Ordering::Relaxed);
            }
            Err(e) => {
                failures_in_a_row += 1;
                counters.failed.fetch_add(1, Ordering::Relaxed);
                let survives = session_survives(e.class);
                note(&mut done, e);
                if !survives {
                    session = None;
                    counters.open.fetch_sub(1, Ordering::Relaxed);
                }
            }
        }
    }
    if let Some(s) = session {
        let _ = s.quit().await;
        counters.open.fetch_sub(1, Ordering::Relaxed);
    }
    done
}

/// Submits `plan.messages` messages of `gen` over `plan.connections` sessions to `ep`, as fast
/// as the server accepts them. Message `i` is `gen.message(from, i, to)`.
pub async fn submit(
    ep: &Endpoint,
    gen: &Generator,
    plan: &SubmitPlan,
    rec: Recorder,
    counters: Arc<Counters>,
) -> SubmitReport {
    let started = clock::now();
    let gen = Arc::new(gen.clone());
    let plan = Arc::new(plan.clone());
    let next = Arc::new(AtomicU64::new(0));
    let keep_errors = Arc::new(AtomicU64::new(0));
    let n = plan.connections.clamp(
        1,
        usize::try_from(plan.messages.max(1)).unwrap_or(usize::MAX),
    );
    let mut tasks = tokio::task::JoinSet::new();
    for _ in 0..n {
        tasks.spawn(connection(
            ep.clone(),
            Arc::clone(&gen),
            Arc::clone(&plan),
            Arc::clone(&next),
            rec.clone(),
            Arc::clone(&counters),
            Arc::clone(&keep_errors),
        ));
    }
    let mut report = SubmitReport::default();
    while let Some(joined) = tasks.join_next().await {
        // A task that panicked counts as nothing sent (its messages are unsent).
        let Ok(d) = joined else { continue };
        report.sessions += d.sessions;
        report.sessions_failed += d.sessions_failed;
        for (class, e) in d.errors {
            *report.errors_by_class.entry(class.name()).or_insert(0) += 1;
            if let Some(e) = e {
                report.first_errors.push(e);
            }
        }
    }
    report.elapsed = started.elapsed();
    report.accepted = counters.accepted.load(Ordering::Relaxed);
    report.failed = counters.failed.load(Ordering::Relaxed);
    report.bytes = counters.bytes.load(Ordering::Relaxed);
    report.unsent = plan
        .messages
        .saturating_sub(report.accepted + report.failed);
    report.interrupted = plan.stop.load(Ordering::Relaxed);
    report
}
