//! `loadgen find-max` on tokio's simulated clock against the in-process model server of
//! mbx-loadgen's tests (`crates/mbx-loadgen/tests/model`), built to be slow past a known number
//! of mailboxes ([`model::Model::with_capacity`]): every step is the whole `loadgen run` of the
//! binary (`mbx_app::loadgen::day_on`: baseline, day, grace, the verdict), the request resolved
//! from flags as the command resolves them, only the servers and the clock are the model's.

#[path = "../../mbx-loadgen/tests/model/mod.rs"]
mod model;

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, SystemTime};

use mbx_app::loadgen::find_max::FindMax;
use mbx_app::loadgen::find_max_run::{self, FindMaxRequest};
use mbx_app::loadgen::request::{ConnFlags, DayFlags};
use mbx_app::loadgen::resolve::{find_max_request, FindMaxFlags};
use mbx_app::loadgen::{day_on, DayOn, DayRequest, Ran};
use mbx_app::{AppError, Event, EventSink};
use mbx_loadgen::day::Servers;
use mbx_loadgen::{AuthMechanism, Endpoint, Security};

/// The model carries this many mailboxes at once; past it every command waits [`SLOW`].
const KNEE: usize = 37;
/// A command's wait past the knee: above the 1,000 ms task p95 limit by itself.
const SLOW: Duration = Duration::from_millis(1500);
/// Users given: the most any step runs.
const USERS: u32 = 200;

fn request(dir: &std::path::Path, cancel: Arc<AtomicBool>) -> FindMaxRequest {
    let flags = FindMaxFlags {
        day: DayFlags {
            conn: ConnFlags {
                smtp: Some(format!("smtp://model.test:{}", model::SMTP_PORT)),
                imap: Some(format!("imap://model.test:{}", model::IMAP_PORT)),
                pop3: Some(format!("pop3://model.test:{}", model::POP3_PORT)),
                smtp_auth: "plain".into(),
                users: Some(USERS),
                first_user: 1,
                password: Some("pw".into()),
                domain: Some("model.test".into()),
                seed: 7,
                out: Some(dir.to_path_buf()),
                ..ConnFlags::default()
            },
            messages_per_day: None,
            // A compressed day: an hour, each step its first 10 minutes.
            day: Duration::from_secs(3600),
            days: 1,
            clients: "desktop_imap=70,webmail=20,pop3=10".into(),
            overload: 1.5,
            grace: Duration::from_secs(60),
            tasks_achieved_pct: 99.0,
            task_p95_ms: 1000.0,
            delivery_p95_ms: 60_000.0,
            sample_interval: Duration::from_secs(5),
            duration: None,
            stress: false,
            eas: None,
            eas_ping: None,
        },
        start_users: 8,
        step: Duration::from_secs(600),
        max_steps: 12,
        resolution_pct: 5.0,
        confirmations: 3,
        init_messages: 0,
        init_concurrency: 16,
    };
    find_max_request(&flags, cancel).expect("the flags resolve")
}

/// One step's day: a model of the step's users on a paused runtime.
fn model_day(day: &DayRequest, sink: &mut dyn EventSink) -> Result<Ran, AppError> {
    let server = model::Model::with_capacity(&day.common.users, KNEE, SLOW);
    let ep = |port| Endpoint {
        connector: Some(server.connector()),
        ..Endpoint::new("model.test", port, Security::Plain, None)
    };
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .start_paused(true)
        .build()
        .map_err(|source| AppError::Io {
            context: "a paused runtime".into(),
            source,
        })?;
    let on = DayOn {
        servers: Servers {
            smtp: ep(model::SMTP_PORT),
            imap: ep(model::IMAP_PORT),
            pop3: ep(model::POP3_PORT),
            helo: "sim.test".into(),
            auth: AuthMechanism::Plain,
            eas: None,
        },
        runtime,
        simulated_from: Some(SystemTime::UNIX_EPOCH + Duration::from_secs(1_800_000_000)),
    };
    day_on(day, on, sink)
}

fn logs(events: &[Event]) -> Vec<String> {
    events
        .iter()
        .filter_map(|e| match e {
            Event::Log { text, .. } => Some(text.clone()),
            _ => None,
        })
        .collect()
}

/// find-max.json says what the search returned (its floats to JSON's precision).
fn assert_written(dir: &std::path::Path, f: &FindMax) {
    let text = std::fs::read_to_string(dir.join("find-max.json")).expect("find-max.json");
    let w: FindMax = serde_json::from_str(&text).expect("find-max.json parses");
    assert_eq!(w.schema, mbx_app::loadgen::find_max::SCHEMA);
    assert_eq!(
        (
            &w.users,
            &w.confirmation,
            &w.end,
            &w.limited_by,
            w.limited_at_users
        ),
        (
            &f.users,
            &f.confirmation,
            &f.end,
            &f.limited_by,
            f.limited_at_users
        )
    );
    let steps = |f: &FindMax| -> Vec<(u64, bool, bool, Vec<String>, String)> {
        f.steps
            .iter()
            .map(|s| {
                (
                    s.users,
                    s.pass,
                    s.interrupted,
                    s.failed_checks.clone(),
                    s.result.clone(),
                )
            })
            .collect()
    };
    assert_eq!(steps(&w), steps(f));
    for s in &w.steps {
        assert!(dir.join(&s.result).is_file(), "{}", s.result);
    }
}

#[test]
fn find_max_finds_the_models_knee_within_one_bisection_step_and_names_what_limited_it() {
    let tmp = tempfile::tempdir().expect("a temporary folder");
    let dir = tmp.path().join("fm");
    let cancel = Arc::new(AtomicBool::new(false));
    let req = request(&dir, cancel);
    let mut events: Vec<Event> = Vec::new();
    let wall = std::time::Instant::now();
    let found = find_max_run::run_with(&req, &mut events, &mut model_day).expect("searched");
    let lines = logs(&events);
    let f = &found.find_max;
    eprintln!(
        "{} steps in {:.1} s of wall time: {:?}",
        f.steps.len(),
        wall.elapsed().as_secs_f64(),
        f.steps
            .iter()
            .map(|s| (s.users, s.pass, s.failed_checks.clone()))
            .collect::<Vec<_>>()
    );
    // Within one bisection step of the knee: the answer is at most the knee and the bracket the
    // search stopped at (5% of the answer, at least one user) reaches it.
    let users = f.users.expect("a count passed") as usize;
    let bracket = ((users as f64) * 0.05).ceil().max(1.0) as usize;
    assert!(
        users <= KNEE && users + bracket >= KNEE,
        "answer {users}, knee {KNEE}: {lines:#?}"
    );
    assert_eq!(f.end, "converged", "{lines:#?}");
    let c = f.confirmation.as_ref().expect("confirmed or said why not");
    assert!(c.confirmed, "{c:?}");
    // Every step either passed or failed on a check it names; the limit is a latency check of
    // a count past the knee.
    for s in &f.steps {
        assert_eq!(s.pass, (s.users as usize) <= KNEE, "{s:?}");
        assert_eq!(s.pass, s.failed_checks.is_empty(), "{s:?}");
    }
    let at = f
        .limited_at_users
        .expect("a failing count above the answer") as usize;
    assert!(at > KNEE && at <= users + bracket + 1, "limited at {at}");
    assert!(
        f.limited_by
            .iter()
            .any(|c| c.starts_with("task_latency_p95_ms.")),
        "{:?}",
        f.limited_by
    );
    // The files, the progress and its ETA, the closing line.
    assert_written(&dir, f);
    let html = std::fs::read_to_string(found.html.as_ref().expect("find-max.html")).expect("html");
    assert!(
        html.contains(&format!("knee: {users} users")),
        "the knee is marked"
    );
    assert!(
        lines
            .iter()
            .any(|l| l.contains("is starting") && l.contains("s left")),
        "an ETA: {lines:#?}"
    );
    assert!(
        lines
            .iter()
            .any(|l| l.contains(&format!("{users} users passed, no check failed (confirmed"))),
        "{lines:#?}"
    );
}

#[test]
fn an_interrupted_search_reports_the_largest_count_that_passed_so_far() {
    let tmp = tempfile::tempdir().expect("a temporary folder");
    let dir = tmp.path().join("fm");
    let cancel = Arc::new(AtomicBool::new(false));
    let req = request(&dir, Arc::clone(&cancel));
    let mut events: Vec<Event> = Vec::new();
    let mut n = 0;
    // Ctrl-C as the third step (32 users) starts: that step is cut short, 16 is the best pass.
    let found = find_max_run::run_with(&req, &mut events, &mut |day, sink| {
        n += 1;
        if n == 3 {
            cancel.store(true, Ordering::Relaxed);
        }
        model_day(day, sink)
    })
    .expect("searched");
    let f = &found.find_max;
    assert_eq!(f.end, "interrupted");
    assert_eq!(f.users, Some(16), "{:?}", f.steps);
    let tried: Vec<(u64, bool, bool)> = f
        .steps
        .iter()
        .map(|s| (s.users, s.pass, s.interrupted))
        .collect();
    assert_eq!(
        tried,
        [(8, true, false), (16, true, false), (32, false, true)]
    );
    let c = f.confirmation.as_ref().expect("the answer's confirmation");
    assert!(!c.confirmed);
    assert_written(&dir, f);
    let lines = logs(&events);
    assert!(
        lines
            .iter()
            .any(|l| l.contains("16 users passed, no check failed (unconfirmed")),
        "{lines:#?}"
    );
}
