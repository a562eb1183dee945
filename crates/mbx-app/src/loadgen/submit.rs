//! `loadgen submit`: SMTP submission at full speed, as smtp-source (`-s N -m M -d`) and postal
//! do: N sessions send M generated messages in all as fast as the server accepts them. Writes a
//! results folder as `loadgen init` does (result.json with `test.phase` `submit` and the
//! `submit` figures, the commands table, samples.jsonl once a second, test.log, report.html).

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use mbx_loadgen::message::Generator;
use mbx_loadgen::submit::{Counters, Login, SubmitPlan};
use mbx_loadgen::{AuthMechanism, Recorder, Trust};
use mbx_result::{LoadgenConfig, LoadgenSample, ServerUrl, SubmitFigures, Verdict};

use super::servers::{self, Proto, ServerSpec, ServersSpec};
use super::{assemble, info, progress, running, stamp, stopped_of, unix_now, Files, Ran};
use crate::event::{Event, EventSink, Notice};
use crate::AppError;

/// `loadgen submit`.
#[derive(Debug, Clone)]
pub struct SubmitRequest {
    /// The submission server (`smtp://`, `smtp+starttls://` or `smtps://`).
    pub smtp: ServerSpec,
    /// How its certificate is trusted (TLS only).
    pub trust: Trust,
    /// AUTH after EHLO, when given: user, password, mechanism.
    pub login: Option<(String, String, AuthMechanism)>,
    /// The EHLO name.
    pub helo: String,
    /// Sessions at once.
    pub connections: usize,
    /// Messages in all.
    pub messages: u64,
    /// Each message's size, KB (x 1,024 bytes).
    pub message_kb: f64,
    /// Sizes from the LoadSim mix around `message_kb` instead of every message that size.
    pub mixed_sizes: bool,
    /// MAIL, RCPT and DATA in one write when the server offers PIPELINING.
    pub pipelining: bool,
    /// The envelope sender.
    pub from: String,
    /// The envelope recipients of every message.
    pub to: Vec<String>,
    /// The messages' seed.
    pub seed: u64,
    /// Client runtime threads (0: automatic: one for plain SMTP, one per core with TLS).
    pub threads: usize,
    /// The results folder (a time-stamped one under ./mbxstress-results when none).
    pub out: Option<PathBuf>,
    /// Set by Ctrl-C or SIGTERM.
    pub cancel: Arc<AtomicBool>,
}

fn config(req: &SubmitRequest) -> LoadgenConfig {
    let spec = ServersSpec {
        smtp: req.smtp.clone(),
        imap: req.smtp.clone(),
        pop3: req.smtp.clone(),
    };
    LoadgenConfig {
        servers: vec![ServerUrl {
            protocol: "smtp".into(),
            url: spec.smtp.url(Proto::Smtp),
        }],
        tls_trust: servers::trust_name(&req.trust),
        smtp_auth: match &req.login {
            None => "none".into(),
            Some((_, _, AuthMechanism::Plain)) => "plain".into(),
            Some((_, _, AuthMechanism::Login)) => "login".into(),
        },
        users_source: format!("from {} to {}", req.from, req.to.join(", ")),
        users: 1,
        domain: req.from.rsplit('@').next().unwrap_or_default().to_string(),
        messages_per_day: 0,
        message_kb: req.message_kb,
        clients: Vec::new(),
        day_s: 0.0,
        days: 0,
        seed: req.seed,
        overload_per_user: 0.0,
        grace_s: 0.0,
        init_messages: None,
        profile_source: if req.mixed_sizes {
            "flags (LoadSim size mix)".into()
        } else {
            "flags (every message the same size)".into()
        },
        thresholds: Default::default(),
        duration_s: 0.0,
        stress: false,
    }
}

fn cpu_now() -> f64 {
    let (u, s) = mbx_io::platform::cpu_times();
    u + s
}

/// Runs the submission and writes its results folder.
pub fn submit(req: &SubmitRequest, sink: &mut dyn EventSink) -> Result<Ran, AppError> {
    let start = mbx_engine::rfc3339_now();
    let started = Instant::now();
    let run_id = format!("submit-{}", stamp());
    let config = config(req);
    let (ep, _, _) = servers::endpoints(
        &ServersSpec {
            smtp: req.smtp.clone(),
            imap: req.smtp.clone(),
            pop3: req.smtp.clone(),
        },
        &req.trust,
    )?;
    let mut files = Files::create(req.out.as_deref(), "submit")?;
    files.write_result(&running("submit", &run_id, &start, started, &config))?;
    let _ = sink.notice(&Notice::LoadgenStart {
        phase: "submit",
        dir: &files.dir,
        users: req.connections as u64,
    });
    files.log(
        sink,
        &format!(
            "loadgen submit {run_id}: {} messages of {} KB{} over {} sessions to {}, from {} to {}",
            req.messages,
            crate::num::num(
                req.message_kb,
                if req.message_kb.fract() == 0.0 { 0 } else { 1 }
            ),
            if req.mixed_sizes {
                " on average (LoadSim mix)"
            } else {
                " each"
            },
            req.connections,
            config.servers[0].url,
            req.from,
            req.to.join(", ")
        ),
    );
    let bytes = (req.message_kb * 1024.0)
        .round()
        .clamp(1024.0, 64.0 * 1024.0 * 1024.0) as u64;
    let mut gen = Generator::new(&run_id, req.seed, bytes, unix_now());
    if !req.mixed_sizes {
        gen = gen.with_fixed_size(bytes as usize);
    }
    let plan = plan_of(req);
    let threads = threads_for(req);
    // One thread: the connections run on this thread (no hand-over between threads, as
    // smtp-source's one process); more: a worker pool.
    let rt = super::runtime_with(threads)?;
    let rec = Recorder::new();
    let counters = Arc::new(Counters::default());
    let cpu0 = cpu_now();
    let report = rt.block_on(async {
        let fut = mbx_loadgen::submit::submit(&ep, &gen, &plan, rec.clone(), Arc::clone(&counters));
        tokio::pin!(fut);
        let t0 = Instant::now();
        let mut tick = tokio::time::interval_at(
            tokio::time::Instant::now() + Duration::from_secs(1),
            Duration::from_secs(1),
        );
        let (mut last_ok, mut last_failed, mut last_bytes, mut last_t) = (0u64, 0u64, 0u64, 0.0);
        loop {
            tokio::select! {
                r = &mut fut => break r,
                _ = tick.tick() => {
                    let t = t0.elapsed().as_secs_f64();
                    let ok = counters.accepted.load(Ordering::Relaxed);
                    let failed = counters.failed.load(Ordering::Relaxed);
                    let b = counters.bytes.load(Ordering::Relaxed);
                    let dt = (t - last_t).max(1e-9);
                    let s = LoadgenSample {
                        t_s: t,
                        interval_s: dt,
                        dispatched: (ok + failed) - (last_ok + last_failed),
                        completed: ok - last_ok,
                        failed: failed - last_failed,
                        unfinished: counters.open.load(Ordering::Relaxed),
                        completed_total: ok,
                        planned_total: req.messages,
                        bytes: Some(b - last_bytes),
                        ..Default::default()
                    };
                    files.sample(sink, &s);
                    let mut p = progress("submit", t0.elapsed(), None, ok + failed, req.messages, "messages");
                    p.per_s = (ok - last_ok) as f64 / dt;
                    p.mb_per_s = Some((b - last_bytes) as f64 / 1e6 / dt);
                    p.failed = failed;
                    p.unfinished = Some(counters.open.load(Ordering::Relaxed));
                    sink.event(&Event::LoadgenProgress { progress: p });
                    (last_ok, last_failed, last_bytes, last_t) = (ok, failed, b, t);
                }
            }
        }
    });
    let cpu = (cpu_now() - cpu0).max(0.0);
    drop(rt);
    let figures = figures_of(req, &report, &counters, cpu);
    log_end(&figures, &mut files, sink);
    for e in report.first_errors.iter().take(5) {
        files.log(sink, &format!("error: {e}"));
    }
    let verdict = Verdict::of(vec![mbx_result::Check::new(
        "messages_accepted",
        figures.accepted as f64,
        figures.messages as f64,
        figures.accepted == figures.messages,
    )]);
    let by_class: BTreeMap<String, u64> = report
        .errors_by_class
        .iter()
        .map(|(k, v)| ((*k).to_string(), *v))
        .collect();
    let mut test = info("submit", &run_id, &start, started);
    test.interrupted = report.interrupted;
    let result = mbx_result::LoadgenResult {
        test,
        commands: assemble::commands(&rec.snapshot()),
        submit: Some(figures),
        stopped: stopped_of(report.interrupted, false, &verdict, "submit"),
        verdict,
        errors: assemble::errors(&by_class, &report.first_errors),
        ..running("submit", &run_id, &start, started, &config)
    };
    super::finish(files, result, sink)
}

/// The submission's plan: sessions, messages, envelope, login, the stop flag.
fn plan_of(req: &SubmitRequest) -> SubmitPlan {
    SubmitPlan {
        connections: req.connections.max(1),
        messages: req.messages,
        from: req.from.clone(),
        to: req.to.clone(),
        helo: req.helo.clone(),
        login: req.login.as_ref().map(|(user, password, mechanism)| Login {
            user: user.clone(),
            password: password.clone(),
            mechanism: *mechanism,
        }),
        pipelining: req.pipelining,
        stop: Arc::clone(&req.cancel),
    }
}

/// The client runtime's threads: as asked, else automatic.
fn threads_for(req: &SubmitRequest) -> usize {
    // Automatic: one thread for plain SMTP (it sends over 10,000 messages of 10 KB a second on
    // loopback, and the server keeps the other cores), one per core with TLS (handshakes and
    // encryption).
    if req.threads == 0 {
        if req.smtp.security == mbx_loadgen::Security::Plain {
            1
        } else {
            std::thread::available_parallelism().map_or(2, |n| n.get())
        }
    } else {
        req.threads
    }
}

/// The submission's figures from its report and counters; `cpu`: the client's CPU seconds.
fn figures_of(
    req: &SubmitRequest,
    report: &mbx_loadgen::submit::SubmitReport,
    counters: &Counters,
    cpu: f64,
) -> SubmitFigures {
    let secs = report.elapsed.as_secs_f64().max(1e-9);
    SubmitFigures {
        connections: req.connections as u64,
        messages: req.messages,
        accepted: report.accepted,
        failed: report.failed,
        unsent: report.unsent,
        bytes: report.bytes,
        recipients: req.to.len() as u64,
        duration_s: report.elapsed.as_secs_f64(),
        messages_per_s: report.accepted as f64 / secs,
        mb_per_s: report.bytes as f64 / 1e6 / secs,
        sessions: report.sessions,
        sessions_failed: report.sessions_failed,
        pipelined: counters.pipelined.load(Ordering::Relaxed),
        client_cpu_s: cpu,
        client_cpu_us_per_message: if report.accepted > 0 {
            cpu * 1e6 / report.accepted as f64
        } else {
            0.0
        },
    }
}

/// The submission's last line in test.log.
fn log_end(figures: &SubmitFigures, files: &mut Files, sink: &mut dyn EventSink) {
    files.log(
        sink,
        &format!(
            "loadgen submit ended: {} of {} messages accepted, {} failed, {} unsent ({:.1} MB) in {:.2} s: {:.0} messages/s, {:.1} MB/s; {} sessions ({} failed); client CPU {:.2} s ({:.0} us per message)",
            figures.accepted,
            figures.messages,
            figures.failed,
            figures.unsent,
            figures.bytes as f64 / 1e6,
            figures.duration_s,
            figures.messages_per_s,
            figures.mb_per_s,
            figures.sessions,
            figures.sessions_failed,
            figures.client_cpu_s,
            figures.client_cpu_us_per_message
        ),
    );
}
