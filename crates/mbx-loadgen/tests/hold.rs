//! Idle connections held against a real Dovecot (scripts/mailserver.sh): every connection
//! established over IMAPS and in IDLE, the process's memory and CPU measured. Linux only.
#![cfg(target_os = "linux")]

mod support;

use std::sync::Arc;
use std::time::Duration;

use mbx_loadgen::hold::{hold, HoldCounters, HoldPlan};
use mbx_loadgen::users::User;
use mbx_loadgen::{Protocol, Recorder, Security};
use support::MailServer;

#[test]
fn fifty_idle_connections_over_imaps_are_held_and_measured() {
    let Some(s) = MailServer::shared() else {
        return;
    };
    // Users cycled: 50 sessions over 10 users (Dovecot allows several per user and address).
    let users: Vec<User> = (1..=10)
        .map(|i| User {
            login: s.user(i),
            password: s.password.clone(),
            address: s.address(i),
        })
        .collect();
    let plan = HoldPlan {
        connections: 50,
        hold: Duration::from_secs(2),
        concurrency: 25,
        settle: Duration::from_millis(200),
        ..HoldPlan::default()
    };
    let rec = Recorder::new();
    let counters = Arc::new(HoldCounters::default());
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .expect("runtime");
    let ep = s.endpoint(s.imaps, Security::Implicit);
    let r = rt.block_on(hold(&ep, &users, &plan, rec.clone(), counters.clone()));
    assert_eq!(
        (r.established, r.failed, r.dropped, r.open_at_end),
        (50, 0, 0, 50),
        "all 50 established and held: {:?}",
        r.first_errors
    );
    assert!(r.errors_by_class.is_empty(), "{:?}", r.errors_by_class);
    assert!(!r.interrupted);
    assert!(r.held >= Duration::from_secs(2), "held {:?}", r.held);
    assert!(r.establish_time > Duration::ZERO);
    let per_conn = r.rss_per_connection().expect("RSS per connection measured");
    assert!(
        per_conn > 0.0 && per_conn < 1024.0 * 1024.0,
        "RSS per connection {per_conn} bytes"
    );
    let cpu = r.idle_cpu_pct().expect("CPU while idle measured");
    assert!((0.0..=200.0).contains(&cpu), "CPU {cpu}%");
    // Every step was timed, once per connection.
    let stats = rec.snapshot();
    for cmd in ["connect", "LOGIN", "SELECT", "IDLE"] {
        let c = stats.get(Protocol::Imap, cmd).expect(cmd);
        assert_eq!((c.ok(), c.failed()), (50, 0), "{cmd}");
    }
    // Closing: DONE and LOGOUT on each.
    assert_eq!(stats.get(Protocol::Imap, "DONE").map(|c| c.ok()), Some(50));
    eprintln!(
        "50 IMAPS IDLE connections: established in {:?}, {:.0} bytes RSS each, {cpu:.2}% CPU idle",
        r.establish_time, per_conn
    );
}

#[test]
fn a_wrong_password_fails_its_connections_and_the_rest_are_held() {
    let Some(s) = MailServer::shared() else {
        return;
    };
    let users = vec![
        User {
            login: s.user(11),
            password: s.password.clone(),
            address: s.address(11),
        },
        User {
            login: s.user(12),
            password: "wrong".into(),
            address: s.address(12),
        },
    ];
    let plan = HoldPlan {
        connections: 6,
        hold: Duration::from_millis(300),
        settle: Duration::ZERO,
        ..HoldPlan::default()
    };
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("runtime");
    let ep = s.endpoint(s.imap, Security::StartTls);
    let r = rt.block_on(hold(
        &ep,
        &users,
        &plan,
        Recorder::new(),
        Arc::new(HoldCounters::default()),
    ));
    assert_eq!((r.established, r.failed, r.open_at_end), (3, 3, 3));
    assert_eq!(r.errors_by_class.get("auth"), Some(&3));
    assert!(r.first_errors[0].to_string().contains("loadgen12"));
}

#[test]
fn a_stop_ends_the_hold_early_with_what_was_measured() {
    let Some(s) = MailServer::shared() else {
        return;
    };
    let users: Vec<User> = (13..=14)
        .map(|i| User {
            login: s.user(i),
            password: s.password.clone(),
            address: s.address(i),
        })
        .collect();
    let plan = HoldPlan {
        connections: 4,
        hold: Duration::from_secs(600),
        settle: Duration::ZERO,
        ..HoldPlan::default()
    };
    let stop = plan.stop.clone();
    let counters = Arc::new(HoldCounters::default());
    let watcher = {
        let (stop, counters) = (stop.clone(), counters.clone());
        std::thread::spawn(move || {
            // Stop once every connection is in IDLE, and a moment more.
            while counters.open() < 4 {
                std::thread::sleep(Duration::from_millis(20));
            }
            std::thread::sleep(Duration::from_millis(300));
            stop.store(true, std::sync::atomic::Ordering::SeqCst);
        })
    };
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("runtime");
    let t = std::time::Instant::now();
    let ep = s.endpoint(s.imaps, Security::Implicit);
    let r = rt.block_on(hold(&ep, &users, &plan, Recorder::new(), counters));
    watcher.join().expect("watcher");
    assert!(r.interrupted);
    assert!(t.elapsed() < Duration::from_secs(30), "{:?}", t.elapsed());
    assert_eq!((r.established, r.open_at_end, r.failed), (4, 4, 0));
    assert!(r.held < Duration::from_secs(30));
    assert!(r.idle_cpu_pct().is_some() && r.rss_per_connection().is_some());
}
