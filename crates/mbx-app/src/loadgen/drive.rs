//! Drives `mbx-loadgen`'s async work from the command's thread: the work runs on the runtime;
//! progress and samples come back over channels and go to the files and the sink here (the
//! sink is the caller's, not `Send`).

use std::collections::BTreeMap;
use std::time::{Duration, Instant};

use mbx_loadgen::day::{DayPlan, DayReport, Servers};
use mbx_loadgen::imap::ImapClient;
use mbx_loadgen::init::Fill;
use mbx_loadgen::message::Generator;
use mbx_loadgen::sched::ClientType;
use mbx_loadgen::users::User;
use mbx_loadgen::{Endpoint, Recorder};
use tokio::runtime::Runtime;
use tokio::sync::mpsc;

use super::{progress, Files, InitRequest};
use crate::event::{Event, EventSink};

/// What an initialization did.
#[derive(Debug, Default)]
pub(crate) struct InitDone {
    pub users_done: u64,
    pub users_failed: u64,
    pub found: u64,
    pub appended: u64,
    pub bytes: u64,
    pub elapsed: Duration,
    pub errors_by_class: BTreeMap<String, u64>,
    pub first_errors: Vec<mbx_loadgen::Error>,
}

enum FillMsg {
    Batch { appended: u64, bytes: u64 },
    Done(Result<mbx_loadgen::init::Filled, mbx_loadgen::Error>),
}

async fn fill_one(
    imap: Endpoint,
    user: User,
    gen: Generator,
    fill: Fill,
    rec: Recorder,
    tx: mpsc::UnboundedSender<FillMsg>,
) {
    let r = async {
        let mut s = ImapClient::connect(&imap, rec).await?;
        s.login(&user.login, &user.password).await?;
        let filled = mbx_loadgen::init::fill_mailbox(&mut s, &gen, &user.address, &fill).await?;
        let _ = tx.send(FillMsg::Batch {
            appended: u64::from(filled.appended),
            bytes: filled.bytes,
        });
        let _ = s.logout().await;
        Ok(filled)
    }
    .await;
    let _ = tx.send(FillMsg::Done(r));
}

/// Fills every user's mailbox, `req.concurrency` at once, with progress once a second.
#[allow(clippy::too_many_arguments)]
pub(crate) fn init(
    rt: &Runtime,
    imap: &Endpoint,
    users: &[User],
    gen: &Generator,
    req: &InitRequest,
    rec: Recorder,
    files: &mut Files,
    sink: &mut dyn EventSink,
) -> InitDone {
    let started = Instant::now();
    let fill = Fill {
        target: req.messages,
        batch: req.batch.max(1),
        ..Fill::default()
    };
    let total_msgs = users.len() as u64 * u64::from(req.messages);
    let cancel = &req.common.cancel;
    rt.block_on(async {
        let (tx, mut rx) = mpsc::unbounded_channel();
        let mut next = 0usize;
        let mut running = 0usize;
        let mut done = InitDone::default();
        let mut tick = tokio::time::interval(Duration::from_secs(1));
        let (mut last_appended, mut last_bytes, mut last_t) = (0u64, 0u64, 0.0f64);
        loop {
            while running < req.concurrency.max(1)
                && next < users.len()
                && !cancel.load(std::sync::atomic::Ordering::SeqCst)
            {
                let u = users[next].clone();
                next += 1;
                running += 1;
                tokio::spawn(fill_one(
                    imap.clone(),
                    u,
                    gen.clone(),
                    fill.clone(),
                    rec.clone(),
                    tx.clone(),
                ));
            }
            if running == 0 {
                break;
            }
            tokio::select! {
                m = rx.recv() => match m {
                    Some(FillMsg::Batch { appended, bytes }) => {
                        done.appended += appended;
                        done.bytes += bytes;
                    }
                    Some(FillMsg::Done(r)) => {
                        running -= 1;
                        match r {
                            Ok(f) => {
                                done.users_done += 1;
                                done.found += u64::from(f.found);
                            }
                            Err(e) => {
                                done.users_failed += 1;
                                *done.errors_by_class.entry(e.class.name().to_string()).or_insert(0) += 1;
                                if done.first_errors.len() < 20 {
                                    done.first_errors.push(e);
                                }
                            }
                        }
                    }
                    None => break,
                },
                _ = tick.tick() => {
                    let t = started.elapsed();
                    let have = done.found + done.appended;
                    let mut p = progress("init", t, None, have, total_msgs, "messages");
                    let dt = (t.as_secs_f64() - last_t).max(1e-9);
                    p.per_s = (done.appended - last_appended) as f64 / dt;
                    p.mb_per_s = Some((done.bytes - last_bytes) as f64 / 1e6 / dt);
                    p.failed = done.users_failed;
                    p.users_done = Some(done.users_done);
                    p.users_total = Some(users.len() as u64);
                    let s = mbx_result::LoadgenSample {
                        t_s: t.as_secs_f64(),
                        interval_s: dt,
                        completed: done.users_done,
                        failed: done.users_failed,
                        completed_total: done.users_done,
                        planned_total: users.len() as u64,
                        appended: Some(done.appended - last_appended),
                        appended_bytes: Some(done.bytes - last_bytes),
                        ..Default::default()
                    };
                    if t.as_secs_f64() >= 1.0 {
                        files.sample(sink, &s);
                    }
                    (last_appended, last_bytes, last_t) = (done.appended, done.bytes, t.as_secs_f64());
                    sink.event(&Event::LoadgenProgress { progress: p });
                }
            }
        }
        done.elapsed = started.elapsed();
        done
    })
}

/// Runs the days, with progress once a second (time-based: the day is open loop).
#[allow(clippy::too_many_arguments)]
pub(crate) fn day(
    rt: &Runtime,
    servers: &Servers,
    users: &[User],
    kinds: &[ClientType],
    gen: &Generator,
    plan: &DayPlan,
    _sample_interval: Duration,
    rec: Recorder,
    _files: &mut Files,
    sink: &mut dyn EventSink,
) -> DayReport {
    let started = Instant::now();
    let total = plan.day.saturating_mul(plan.days);
    rt.block_on(async {
        let fut = mbx_loadgen::day::run_days(servers, users, kinds, gen, plan, rec);
        tokio::pin!(fut);
        let mut tick = tokio::time::interval(Duration::from_secs(1));
        loop {
            tokio::select! {
                r = &mut fut => break r,
                _ = tick.tick() => {
                    let t = started.elapsed();
                    let phase = if t < total { "day" } else { "grace" };
                    let p = progress(phase, t, Some(total), t.as_secs().min(total.as_secs()), total.as_secs(), "s");
                    sink.event(&Event::LoadgenProgress { progress: p });
                }
            }
        }
    })
}
