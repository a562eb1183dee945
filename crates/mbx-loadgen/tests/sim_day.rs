//! The loadgen day end to end on a simulated clock: 1,000 users of the default profile (150
//! messages a day, 75 KB on average) and client mix (desktop IMAP 70%, webmail 20%, POP3 10%)
//! through an 8-hour day, the baseline, the watchers and the grace sweep, against the in-process
//! model server (`model`), on tokio's paused clock. Every wait, timeout and "now" of the day is
//! on that clock, so the run takes seconds of wall time and repeats byte for byte for a seed.

mod model;

use std::time::{Duration, SystemTime};

use mbx_loadgen::day::{run_days, DayPlan, DayReport, Servers};
use mbx_loadgen::message::Generator;
use mbx_loadgen::sched::{ClientType, TaskKind};
use mbx_loadgen::users::User;
use mbx_loadgen::watch::WatchPlan;
use mbx_loadgen::{AuthMechanism, DayClock, Endpoint, Recorder, Security};

const USERS: usize = 1_000;

/// The default mix (`--clients desktop_imap=70,webmail=20,pop3=10`), interleaved so every ten
/// users hold seven, two and one.
fn client_of(i: usize) -> ClientType {
    match i % 10 {
        0..=6 => ClientType::DesktopImap,
        7 | 8 => ClientType::Webmail,
        _ => ClientType::Pop3,
    }
}

/// One simulated day: the report and the recorder's figures, printed in full (every count and
/// histogram bucket), and the model's totals.
fn day(seed: u64) -> (String, DayReport, model::Totals) {
    let users: Vec<User> = (0..USERS)
        .map(|i| User {
            login: format!("user{i}"),
            password: format!("pw{i}"),
            address: format!("user{i}@model.test"),
        })
        .collect();
    let clients: Vec<ClientType> = (0..USERS).map(client_of).collect();
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .start_paused(true)
        .build()
        .expect("a current-thread runtime");
    rt.block_on(async {
        let server = model::Model::new(&users);
        // Mail there before the day: the baseline records it, the day reads it, never changes it.
        for i in 0..USERS {
            server.preload(
                i,
                format!("Subject: old {i}\r\n\r\nold mail\r\n").as_bytes(),
            );
        }
        let ep = |port| Endpoint {
            connector: Some(server.connector()),
            ..Endpoint::new("model.test", port, Security::Plain, None)
        };
        let servers = Servers {
            smtp: ep(model::SMTP_PORT),
            imap: ep(model::IMAP_PORT),
            pop3: ep(model::POP3_PORT),
            helo: "sim.test".into(),
            auth: AuthMechanism::Plain,
            eas: None,
        };
        let wall_start = SystemTime::UNIX_EPOCH + Duration::from_secs(1_800_000_000);
        let gen = Generator::new("simday", seed, 75 * 1024, 1_800_000_000);
        let plan = DayPlan {
            seed,
            clock: DayClock::simulated(wall_start),
            // The watchers as by default (32 mailboxes, 2 IDLE probes), polling every 10 s
            // rather than 0.5 s: 92,000 polls in the day instead of 1.8 million, which would be
            // most of the test's time and none of its point.
            watch: WatchPlan {
                poll: Duration::from_secs(10),
                ..WatchPlan::default()
            },
            ..DayPlan::default()
        };
        let rec = Recorder::new();
        let report = run_days(&servers, &users, &clients, &gen, &plan, rec.clone()).await;
        let printed = format!("{report:#?}\n{:#?}", rec.snapshot());
        (printed, report, server.totals())
    })
}

#[test]
fn a_day_of_1000_users_on_the_simulated_clock_repeats_byte_for_byte_and_finds_every_copy_once() {
    let wall = std::time::Instant::now();
    let (a, report, totals) = day(7);
    let first = wall.elapsed();
    let (b, _, totals_b) = day(7);
    eprintln!(
        "two simulated 8-hour days of {USERS} users: {:.1} s and {:.1} s of wall time; {} tasks, {} copies",
        first.as_secs_f64(),
        (wall.elapsed() - first).as_secs_f64(),
        report.dispatched,
        report.delivery.expected
    );
    // Byte-identical: every count, histogram bucket, error and time of the report.
    assert_eq!(a.len(), b.len(), "the two days' reports differ in length");
    assert!(a == b, "the two days' reports differ");
    assert_eq!(totals, totals_b);

    // The day ran whole: every planned task dispatched, none failed, nothing cut short.
    assert!(
        !report.overloaded && !report.interrupted,
        "{:?}",
        report.deadline
    );
    assert_eq!(report.deadline, None);
    assert_eq!(report.dispatched, report.planned);
    assert!(
        report.planned > 250 * USERS as u64,
        "{} tasks",
        report.planned
    );
    let failed: u64 = report.tasks.values().flat_map(|t| t.failed.values()).sum();
    assert_eq!(failed, 0, "{:?}", report.first_errors);
    assert!(
        report.baseline_failed.is_empty(),
        "{:?}",
        report.baseline_failed
    );
    for kind in [
        TaskKind::SendNew,
        TaskKind::Read,
        TaskKind::Move,
        TaskKind::CheckInbox,
    ] {
        assert!(report.tasks[&kind].completed > 0, "{kind:?}");
    }
    // The simulated day took its 8 hours (plus the sweep), on the clock.
    assert!(
        report.elapsed >= Duration::from_secs(8 * 3600),
        "{:?}",
        report.elapsed
    );
    assert_eq!(
        report.start_unix_s,
        1_800_000_000.0 + report.baseline.as_secs_f64()
    );

    // The proof: every copy sent found exactly once, intact, nothing else of the run found.
    let d = &report.delivery;
    assert_eq!(d.expected, totals.delivered, "copies the server delivered");
    assert!(d.expected >= 100 * USERS as u64, "{} copies", d.expected);
    assert_eq!(d.delivered, d.expected);
    assert_eq!((d.missing, d.duplicated, d.unexpected), (0, 0, 0));
    assert!(d.corrupted.is_empty(), "{:?}", d.corrupted);
    assert_eq!(d.seen_by_idle + d.seen_by_poll, d.delivered);
    assert!(
        d.seen_by_idle > 0,
        "desktop sessions idle and are told of new mail"
    );
    assert_eq!(
        d.latency_us.len(),
        d.delivered,
        "one latency per copy delivered"
    );
    // The watchers saw the server deliver.
    let w = report.watch.as_ref().expect("the watchers ran");
    assert_eq!(w.watched, 32);
    assert!(!d.server_latency_us.is_empty());
}
