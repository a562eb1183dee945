//! `loadgen idle`: N IMAP connections opened, logged in (users cycled), INBOX selected and held
//! in IDLE, with what they cost this process (resident memory per connection, CPU while idle).
//! The connections are `mbx_loadgen::hold`'s; this module keeps the files, samples once per
//! interval, and judges the result.

use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::{Duration, Instant};

use mbx_loadgen::hold::{self, HoldCounters, HoldPlan, HoldReport};
use mbx_loadgen::{Recorder, Security};
use mbx_result::{Check, IdleFigures, LoadgenResult, LoadgenSample, Verdict};

use super::servers::Proto;
use super::{
    config_block, finish, info, progress, running, runtime, stamp, stopped_of, Common, Files, Ran,
};
use crate::event::{Event, EventSink, Notice};
use crate::AppError;

/// `loadgen idle`.
#[derive(Debug, Clone)]
pub struct IdleRequest {
    /// Servers (IMAP only is used), users (cycled over the connections), output.
    pub common: Common,
    /// Connections opened and held.
    pub connections: u32,
    /// How long they are held once every connection was tried.
    pub hold: Duration,
    /// Connections established at once.
    pub concurrency: usize,
    /// samples.jsonl's interval.
    pub sample_interval: Duration,
}

/// Where the process figures come from, in words.
fn measured_by() -> String {
    if cfg!(target_os = "linux") {
        "linux /proc/self (VmRSS of status; utime + stime of stat, 10 ms ticks)".into()
    } else {
        format!(
            "not measured on {}: Windows would need GetProcessMemoryInfo (WorkingSetSize) and GetProcessTimes",
            std::env::consts::OS
        )
    }
}

fn security_name(s: Security) -> &'static str {
    match s {
        Security::Implicit => "imaps",
        Security::StartTls => "imap+starttls",
        Security::Plain => "imap",
    }
}

/// The figures of a hold.
pub fn figures(r: &HoldReport, security: Security, concurrency: usize) -> IdleFigures {
    let est_s = r.establish_time.as_secs_f64();
    let cpu_idle_s = match (r.hold_start, r.hold_end) {
        (Some(s), Some(e)) => Some(e.cpu.saturating_sub(s.cpu).as_secs_f64()),
        _ => None,
    };
    IdleFigures {
        connections: u64::from(r.asked),
        established: r.established,
        failed: r.failed,
        dropped: r.dropped,
        open_at_end: r.open_at_end,
        security: security_name(security).into(),
        concurrency: concurrency as u64,
        establish_s: est_s,
        established_per_s: r.established as f64 / est_s.max(1e-9),
        hold_s: r.held.as_secs_f64(),
        notices: r.notices,
        rss_baseline_bytes: r.baseline.map(|u| u.rss_bytes),
        rss_held_bytes: r.hold_end.map(|u| u.rss_bytes),
        rss_per_connection_bytes: r.rss_per_connection(),
        cpu_idle_s,
        cpu_idle_pct: r.idle_cpu_pct(),
        measured_by: measured_by(),
    }
}

/// The verdict: every connection established, and every one still open at the hold's end.
pub fn verdict(f: &IdleFigures) -> Verdict {
    Verdict::of(vec![
        Check::new(
            "connections_established",
            f.established as f64,
            f.connections as f64,
            f.established == f.connections && f.connections > 0,
        ),
        Check::new(
            "connections_held",
            f.open_at_end as f64,
            f.established as f64,
            f.open_at_end == f.established && f.established > 0,
        ),
    ])
}

/// `loadgen idle`: opens and holds the connections, writes the results folder.
pub fn idle(req: &IdleRequest, sink: &mut dyn EventSink) -> Result<Ran, AppError> {
    let c = &req.common;
    let start = mbx_engine::rfc3339_now();
    let started = Instant::now();
    let run_id = format!("idle-{}", stamp());
    let mut config = config_block(c, Vec::new());
    // Only IMAP is spoken: the other servers' placeholders are not the test's.
    config.servers.retain(|s| s.protocol == "imap");
    let (_, imap, _) = super::servers::endpoints(&c.servers, &c.trust)?;
    let mut files = Files::create(c.out.as_deref(), "idle")?;
    files.write_result(&running("idle", &run_id, &start, started, &config))?;
    let _ = sink.notice(&Notice::LoadgenStart {
        phase: "idle",
        dir: &files.dir,
        users: c.users.len() as u64,
    });
    files.log(
        sink,
        &format!(
            "loadgen idle: {} IMAP connections to {} over {} users ({}), {} established at once, held {} in IDLE",
            req.connections,
            c.servers.imap.url(Proto::Imap),
            c.users.len(),
            c.users_source,
            req.concurrency,
            super::duration_words(req.hold)
        ),
    );
    let plan = HoldPlan {
        connections: req.connections,
        hold: req.hold,
        concurrency: req.concurrency.max(1),
        stop: Arc::clone(&c.cancel),
        ..HoldPlan::default()
    };
    let rec = Recorder::new();
    let counters = Arc::new(HoldCounters::default());
    let rt = runtime()?;
    let task = {
        let (imap, users, rec, counters, plan) = (
            imap.clone(),
            c.users.clone(),
            rec.clone(),
            counters.clone(),
            plan.clone(),
        );
        rt.spawn(async move { hold::hold(&imap, &users, &plan, rec, counters).await })
    };
    // Samples on this thread (the sink is not Send) while the hold runs.
    let interval = req.sample_interval.max(Duration::from_millis(100));
    let mut last = (Duration::ZERO, hold::usage());
    let mut next = interval;
    while !task.is_finished() {
        std::thread::sleep(Duration::from_millis(50));
        let t = started.elapsed();
        if t < next {
            continue;
        }
        next += interval;
        let now = hold::usage();
        let dt = (t - last.0).as_secs_f64();
        let cpu_pct = match (last.1, now) {
            (Some(a), Some(b)) if dt > 0.0 => {
                Some(100.0 * b.cpu.saturating_sub(a.cpu).as_secs_f64() / dt)
            }
            _ => None,
        };
        let open = counters.open();
        let failed = counters.failed.load(Ordering::Relaxed);
        let s = LoadgenSample {
            t_s: t.as_secs_f64(),
            interval_s: dt,
            completed_total: counters.established.load(Ordering::Relaxed),
            planned_total: u64::from(req.connections),
            connections_open: Some(open),
            connections_failed: Some(failed),
            rss_bytes: now.map(|u| u.rss_bytes),
            cpu_pct,
            ..LoadgenSample::default()
        };
        files.sample(sink, &s);
        let mut p = progress(
            "idle",
            t,
            None,
            open,
            u64::from(req.connections),
            "connections",
        );
        p.failed = failed;
        sink.event(&Event::LoadgenProgress { progress: p });
        last = (t, now);
    }
    let report = match rt.block_on(task) {
        Ok(r) => r,
        Err(e) => {
            return Err(AppError::Io {
                context: "holding the connections".into(),
                source: std::io::Error::other(e.to_string()),
            })
        }
    };
    drop(rt);
    let fig = figures(&report, imap.security, plan.concurrency);
    let kib = |b: Option<f64>| b.map_or("n/a".to_string(), |b| format!("{:.1} KiB", b / 1024.0));
    files.log(
        sink,
        &format!(
            "loadgen idle ended: {} of {} connections established in {:.1} s ({:.0}/s), {} failed, {} dropped, {} open at the end after {:.1} s held; RSS {} per connection (baseline {} MiB, held {} MiB); CPU while idle {} of one core",
            fig.established,
            fig.connections,
            fig.establish_s,
            fig.established_per_s,
            fig.failed,
            fig.dropped,
            fig.open_at_end,
            fig.hold_s,
            kib(fig.rss_per_connection_bytes),
            fig.rss_baseline_bytes.map_or("n/a".into(), |b| format!("{:.1}", b as f64 / 1048576.0)),
            fig.rss_held_bytes.map_or("n/a".into(), |b| format!("{:.1}", b as f64 / 1048576.0)),
            fig.cpu_idle_pct.map_or("n/a".into(), |p| format!("{p:.2}%")),
        ),
    );
    for e in report.first_errors.iter().take(5) {
        files.log(sink, &format!("error: {e}"));
    }
    let verdict = verdict(&fig);
    let mut test = info("idle", &run_id, &start, started);
    test.interrupted = report.interrupted;
    let mut notes = Vec::new();
    if fig.rss_per_connection_bytes.is_none() {
        notes.push(format!(
            "memory and CPU were not measured: {}",
            fig.measured_by
        ));
    }
    let result = LoadgenResult {
        test,
        commands: super::assemble::commands(&rec.snapshot()),
        stopped: stopped_of(report.interrupted, false, &verdict, "idle"),
        verdict,
        errors: super::assemble::errors(&report.errors_by_class, &report.first_errors),
        idle: Some(fig),
        notes,
        ..running("idle", &run_id, &start, started, &config)
    };
    finish(files, result, sink)
}
