//! The user-day scheduler on a simulated clock: a day of 1,000 users gives the action table's
//! task counts, each task dispatched at its scheduled time.

use std::collections::BTreeMap;
use std::time::Duration;

use mbx_loadgen::sched::{ActionTable, ClientType, Scheduler, SimClock, TaskKind, RECIPIENTS};

fn clients(n: u32) -> Vec<ClientType> {
    // 70% desktop IMAP, 20% webmail, 10% POP3, interleaved.
    (0..n)
        .map(|u| match u % 10 {
            0..=6 => ClientType::DesktopImap,
            7 | 8 => ClientType::Webmail,
            _ => ClientType::Pop3,
        })
        .collect()
}

#[test]
fn a_day_of_1000_users_gives_the_tables_task_counts_at_their_scheduled_times() {
    let users = clients(1000);
    let day = Duration::from_secs(8 * 3600);
    let mut s = Scheduler::new(7, 150, day, 1, &users);
    let clock = SimClock::new();
    let step = Duration::from_secs(1);
    let mut counts: BTreeMap<(ClientType, TaskKind), u64> = BTreeMap::new();
    let mut per_hour = [0u64; 8];
    let mut last = Duration::ZERO;
    let mut due = Vec::new();
    let mut received = vec![0u64; users.len()];
    let mut sent = 0u64;
    while clock.elapsed() <= day {
        due.clear();
        s.due(clock.elapsed(), &mut due);
        for t in &due {
            assert!(
                t.at <= clock.elapsed() && clock.elapsed() - t.at < step,
                "dispatched at its time: {t:?} at {:?}",
                clock.elapsed()
            );
            assert!(t.at >= last, "in time order");
            assert!(t.at < day, "within the day");
            last = t.at;
            *counts.entry((users[t.user as usize], t.kind)).or_insert(0) += 1;
            per_hour[(t.at.as_secs() / 3600) as usize] += 1;
            if t.kind.sends() {
                sent += 1;
                let r = s.recipients(t);
                assert_eq!(r.len() as u32, RECIPIENTS);
                assert!(!r.contains(&t.user));
                let mut d = r.clone();
                d.sort();
                d.dedup();
                assert_eq!(d.len(), r.len(), "distinct recipients");
                for x in r {
                    received[x as usize] += 1;
                }
            }
        }
        clock.advance(step);
    }
    assert!(s.next_task().is_none(), "the day is over");

    // Every (client type, kind): users of that type x the table's rate, within rounding (1 task).
    for client in [
        ClientType::DesktopImap,
        ClientType::Webmail,
        ClientType::Pop3,
    ] {
        let n = users.iter().filter(|&&c| c == client).count() as f64;
        let table = ActionTable::for_profile(150, client);
        for (kind, rate) in &table.per_user {
            let got = counts.get(&(client, *kind)).copied().unwrap_or(0) as f64;
            assert!(
                (got - n * rate).abs() <= 1.0,
                "{client:?} {}: {got} tasks, table {}",
                kind.name(),
                n * rate
            );
        }
        for ((c, k), got) in &counts {
            if *c == client {
                assert!(
                    table.per_user.iter().any(|(x, _)| x == k),
                    "{client:?} has no {} in its table but got {got}",
                    k.name()
                );
            }
        }
    }
    // 150 messages a day = 30 sent + 120 received per user.
    assert_eq!(sent, 30 * 1000);
    let mean_received = received.iter().sum::<u64>() as f64 / 1000.0;
    assert_eq!(mean_received, 120.0);
    // Spread evenly over the day (LoadGen's fixed task interval): each hour within 2% of 1/8.
    let total: u64 = per_hour.iter().sum();
    for (h, n) in per_hour.iter().enumerate() {
        let share = *n as f64 / total as f64;
        assert!((share - 0.125).abs() < 0.0025, "hour {h}: {share}");
    }
    // Desktop clients log on first and off last.
    assert_eq!(counts[&(ClientType::DesktopImap, TaskKind::Logon)], 700);
}

#[test]
fn later_days_repeat_the_table_and_a_task_is_never_early() {
    let users = clients(100);
    let day = Duration::from_secs(600);
    let mut s = Scheduler::new(1, 50, day, 3, &users);
    let planned = s.planned();
    let mut per_day = [0u64; 3];
    let mut first_of_user_day: BTreeMap<(u32, u32), TaskKind> = BTreeMap::new();
    let mut last_of_user_day: BTreeMap<(u32, u32), TaskKind> = BTreeMap::new();
    while let Some(t) = s.next_task() {
        assert_eq!(t.day, (t.at.as_nanos() / day.as_nanos()) as u32, "{t:?}");
        per_day[t.day as usize] += 1;
        first_of_user_day.entry((t.user, t.day)).or_insert(t.kind);
        last_of_user_day.insert((t.user, t.day), t.kind);
    }
    let per_user_day: f64 = [
        ClientType::DesktopImap,
        ClientType::Webmail,
        ClientType::Pop3,
    ]
    .iter()
    .map(|c| {
        users.iter().filter(|&&u| u == *c).count() as f64
            * ActionTable::for_profile(50, *c).tasks_per_user()
    })
    .sum();
    assert_eq!(
        per_day.iter().sum::<u64>(),
        planned,
        "planned() counts what is dispatched"
    );
    for n in per_day {
        assert!(
            (n as f64 - per_user_day).abs() <= 11.0,
            "{n} vs {per_user_day}"
        );
    }
    for ((u, _), k) in first_of_user_day {
        if users[u as usize] == ClientType::DesktopImap {
            assert_eq!(k, TaskKind::Logon);
        }
    }
    for ((u, _), k) in last_of_user_day {
        if users[u as usize] == ClientType::DesktopImap {
            assert_eq!(k, TaskKind::Logoff);
        }
    }
}

#[test]
fn a_test_length_shorter_than_the_days_plans_and_dispatches_only_the_tasks_before_it() {
    let users = clients(300);
    let day = Duration::from_secs(3600);
    let full = Scheduler::new(3, 150, day, 2, &users).planned();
    // 1.5 days of 2: three quarters of the tasks, within a task per user (the evenly spread
    // tasks and per-user offsets).
    let end = Duration::from_secs(5400);
    let mut s = Scheduler::new(3, 150, day, 2, &users).until(end);
    assert_eq!(s.end(), Some(end));
    let planned = s.planned();
    assert!(
        (planned as f64 - full as f64 * 0.75).abs() <= users.len() as f64,
        "{planned} of {full}"
    );
    let clock = SimClock::new();
    let (mut n, mut due) = (0u64, Vec::new());
    while clock.elapsed() <= day * 2 {
        due.clear();
        s.due(clock.elapsed(), &mut due);
        for t in &due {
            assert!(t.at < end, "nothing at or after the end: {t:?}");
        }
        n += due.len() as u64;
        clock.advance(Duration::from_secs(1));
    }
    assert_eq!(n, planned, "what is dispatched is what was planned");
    assert_eq!(s.next_due(), None);
}

#[test]
fn stress_mode_gives_each_users_tasks_in_order_whatever_their_times() {
    let users = clients(50);
    let day = Duration::from_secs(8 * 3600);
    let mut s = Scheduler::new(5, 100, day, 2, &users);
    let all = s.planned_all();
    assert_eq!(all, s.planned(), "no end: the same");
    let mut total = 0u64;
    for u in 0..users.len() as u32 {
        let mut last: Option<(u32, u32)> = None;
        let mut kinds = Vec::new();
        while let Some(t) = s.next_for(u) {
            assert_eq!(t.user, u);
            if let Some(prev) = last {
                assert!((t.day, t.index) > prev, "in the user's order");
            }
            last = Some((t.day, t.index));
            kinds.push((t.day, t.kind));
            total += 1;
        }
        if users[u as usize] == ClientType::DesktopImap {
            for d in 0..2 {
                let today: Vec<TaskKind> = kinds
                    .iter()
                    .filter(|(x, _)| *x == d)
                    .map(|(_, k)| *k)
                    .collect();
                assert_eq!(today.first(), Some(&TaskKind::Logon));
                assert_eq!(today.last(), Some(&TaskKind::Logoff));
            }
        }
        assert_eq!(s.next_for(u), None, "done stays done");
    }
    assert_eq!(total, all, "every task of the days, once");
}
