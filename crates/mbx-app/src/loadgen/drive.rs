//! Drives `mbx-loadgen`'s async work from the command's thread: the work runs on the runtime;
//! progress and samples come back (a callback, a channel) and go to the files and the sink here
//! (the sink is the caller's, not `Send`).

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::{Duration, Instant};

use mbx_loadgen::day::{DayGate, DayPlan, DayReport, DaySample, Live, Servers};
use mbx_loadgen::init::{Fill, InitProgress};
use mbx_loadgen::message::Generator;
use mbx_loadgen::sched::ClientType;
use mbx_loadgen::users::User;
use mbx_loadgen::{Endpoint, Recorder};
use mbx_result::LoadgenSample;
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

/// Turns fill progress into samples (one a second) and progress events (each report).
struct InitObserver<'a> {
    files: &'a mut Files,
    sink: &'a mut dyn EventSink,
    last: InitProgress,
    last_sample: Duration,
    /// Messages and bytes appended, users filled and failed at the last sample.
    sampled: Option<(u64, u64, u64, u64)>,
}

impl InitObserver<'_> {
    fn on(&mut self, p: &InitProgress) {
        let dt = p.elapsed.saturating_sub(self.last.elapsed).as_secs_f64();
        let appended = p
            .messages_appended
            .saturating_sub(self.last.messages_appended);
        let bytes = p.bytes_appended.saturating_sub(self.last.bytes_appended);
        let have = p.messages_found + p.messages_appended;
        let mut e = progress(
            "init",
            p.elapsed,
            None,
            have,
            p.messages_total_target,
            "messages",
        );
        // The ETA from this run's append rate (messages found were there already).
        e.eta_s = (p.messages_appended > 0).then(|| {
            p.messages_total_target.saturating_sub(have) as f64 * p.elapsed.as_secs_f64()
                / p.messages_appended as f64
        });
        if dt > 0.0 {
            e.per_s = appended as f64 / dt;
            e.mb_per_s = Some(bytes as f64 / 1e6 / dt);
        }
        // The library's users_done counts every fill that ended, failed ones too.
        let filled = p
            .users_done
            .saturating_sub(p.users_failed)
            .saturating_sub(p.users_stopped);
        e.failed = p.users_failed;
        e.users_done = Some(filled);
        e.users_total = Some(p.users_total);
        self.sink.event(&Event::LoadgenProgress { progress: e });
        let since = p.elapsed.saturating_sub(self.last_sample);
        let done = p.users_done == p.users_total;
        if since >= Duration::from_secs(1) || (done && since > Duration::ZERO) {
            let (sa, sb, sok, sfail) = self.sampled.unwrap_or((0, 0, 0, 0));
            let ok = filled;
            let s = LoadgenSample {
                t_s: p.elapsed.as_secs_f64(),
                interval_s: since.as_secs_f64(),
                completed: ok.saturating_sub(sok),
                failed: p.users_failed.saturating_sub(sfail),
                completed_total: ok,
                planned_total: p.users_total,
                appended: Some(p.messages_appended.saturating_sub(sa)),
                appended_bytes: Some(p.bytes_appended.saturating_sub(sb)),
                ..LoadgenSample::default()
            };
            self.files.sample(self.sink, &s);
            self.last_sample = p.elapsed;
            self.sampled = Some((p.messages_appended, p.bytes_appended, ok, p.users_failed));
        }
        self.last = *p;
    }
}

/// Fills every user's mailbox, `req.concurrency` at once.
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
    let fill = Fill {
        target: req.messages,
        batch: req.batch.max(1),
        ..Fill::default()
    };
    let cancel = &req.common.cancel;
    let mut obs = InitObserver {
        files,
        sink,
        last: InitProgress::default(),
        last_sample: Duration::ZERO,
        sampled: None,
    };
    let report = rt.block_on(mbx_loadgen::init::fill_users(
        imap,
        users,
        gen,
        &fill,
        req.concurrency.max(1),
        cancel,
        rec,
        |p| obs.on(p),
    ));
    let p = &report.progress;
    InitDone {
        // The library's `users_done` counts every user finished, failed ones too.
        // ... and stopped ones: only mailboxes at their target are filled.
        users_done: p
            .users_done
            .saturating_sub(p.users_failed)
            .saturating_sub(p.users_stopped),
        users_failed: p.users_failed,
        found: p.messages_found,
        appended: p.messages_appended,
        bytes: p.bytes_appended,
        elapsed: p.elapsed,
        errors_by_class: report
            .failed_by_class
            .iter()
            .map(|(k, v)| ((*k).to_string(), *v))
            .collect(),
        first_errors: report.errors.clone(),
    }
}

/// A day sample as samples.jsonl has it.
fn sample_of(s: &DaySample) -> LoadgenSample {
    LoadgenSample {
        t_s: s.elapsed.as_secs_f64(),
        interval_s: s.interval.as_secs_f64(),
        dispatched: s.this_interval.dispatched,
        completed: s.this_interval.completed,
        failed: s.this_interval.failed,
        unfinished: s.unfinished,
        completed_total: s.cumulative.completed,
        planned_total: s.planned,
        delivered: s.this_interval.copies_delivered,
        task_p50_ms: s.task_latency_ms.map(|l| l.p50),
        task_p95_ms: s.task_latency_ms.map(|l| l.p95),
        task_max_ms: s.task_latency_ms.map(|l| l.max),
        delivery_p95_ms: s.delivery_p95_ms,
        appended: None,
        appended_bytes: None,
        ..LoadgenSample::default()
    }
}

/// Runs the days: samples every `sample_interval` to samples.jsonl and the stream, progress
/// once a second (tasks done of planned; the ETA is the days' end, the day being open loop).
#[allow(clippy::too_many_arguments)]
pub(crate) fn day(
    rt: &Runtime,
    servers: &Servers,
    users: &[User],
    kinds: &[ClientType],
    gen: &Generator,
    plan: &DayPlan,
    rec: Recorder,
    files: &mut Files,
    sink: &mut dyn EventSink,
    gate: Option<Arc<mbx_engine::StartGate>>,
) -> DayReport {
    let (tx, mut rx) = mpsc::unbounded_channel();
    let (ready_tx, mut ready_rx) = mpsc::unbounded_channel();
    let live = Arc::new(Live::default());
    let plan = DayPlan {
        samples: Some(tx),
        live: Some(live.clone()),
        gate: gate.map(|g| DayGate {
            ready: ready_tx,
            opens_at: Arc::new(move || g.opens_at()),
        }),
        ..plan.clone()
    };
    let mut waiting = false;
    let total = plan
        .duration
        .unwrap_or_else(|| plan.day.saturating_mul(plan.days));
    let started = Instant::now();
    rt.block_on(async {
        let fut = mbx_loadgen::day::run_days(servers, users, kinds, gen, &plan, rec);
        tokio::pin!(fut);
        let mut tick = tokio::time::interval(Duration::from_secs(1));
        // The day's clock starts after the baseline (the first sample says where it is).
        let mut last: Option<(Instant, DaySample)> = None;
        let mut rate = 0.0;
        let report = loop {
            tokio::select! {
                r = &mut fut => break r,
                Some(()) = ready_rx.recv() => {
                    // The baseline is done: the coordinator may give the start.
                    waiting = true;
                    sink.event(&Event::Ready { pid: std::process::id() });
                }
                Some(s) = rx.recv() => {
                    if s.interval > Duration::ZERO {
                        rate = s.this_interval.completed as f64 / s.interval.as_secs_f64();
                    }
                    files.sample(sink, &sample_of(&s));
                    last = Some((Instant::now(), s));
                }
                _ = tick.tick() => {
                    // Each second from the live counters (samples come every interval).
                    let completed = live.completed.load(std::sync::atomic::Ordering::Relaxed);
                    let failed = live.failed.load(std::sync::atomic::Ordering::Relaxed);
                    let baseline_done = live.baseline_done.load(std::sync::atomic::Ordering::Relaxed);
                    let e = match (live.day_started.get(), &last) {
                        (None, _) if waiting => progress("start gate", started.elapsed(), None, users.len() as u64, users.len() as u64, "users"),
                        (None, _) => progress("baseline", started.elapsed(), None, baseline_done, users.len() as u64, "users"),
                        (Some(day_start), last) => {
                            let t = day_start.elapsed();
                            let phase = if t < total { "day" } else { "grace" };
                            let planned = live.planned.load(std::sync::atomic::Ordering::Relaxed);
                            let mut e = progress(phase, t, Some(total), completed, planned, "tasks");
                            e.per_s = rate;
                            e.failed = failed;
                            e.unfinished = last.as_ref().map(|(_, s)| s.unfinished);
                            e
                        }
                    };
                    sink.event(&Event::LoadgenProgress { progress: e });
                }
            }
        };
        // Samples sent as the run ended.
        while let Ok(s) = rx.try_recv() {
            files.sample(sink, &sample_of(&s));
        }
        report
    })
}
