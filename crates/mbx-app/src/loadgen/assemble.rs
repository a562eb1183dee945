//! A loadgen result from what the clients measured: tasks, commands, delivery, errors, and the
//! verdict (the one place its checks are made).

use std::collections::BTreeMap;
use std::time::Duration;

use hdrhistogram::Histogram;
use mbx_loadgen::day::DayReport;
use mbx_loadgen::Stats;
use mbx_result::{
    Check, CommandRow, CorruptedCopy, Delivery, IdleProbeFigures, LatencyMs, LoadgenError,
    LoadgenThresholds, TaskRow, Verdict,
};

/// A histogram of microseconds as milliseconds.
pub fn latency_ms(h: &Histogram<u64>) -> LatencyMs {
    if h.is_empty() {
        return LatencyMs::default();
    }
    let ms = |us: u64| us as f64 / 1000.0;
    LatencyMs {
        count: h.len(),
        avg: h.mean() / 1000.0,
        p50: ms(h.value_at_quantile(0.50)),
        p90: ms(h.value_at_quantile(0.90)),
        p95: ms(h.value_at_quantile(0.95)),
        p99: ms(h.value_at_quantile(0.99)),
        max: ms(h.max()),
    }
}

fn classes(m: &BTreeMap<&'static str, u64>) -> BTreeMap<String, u64> {
    m.iter().map(|(k, v)| ((*k).to_string(), *v)).collect()
}

/// The commands table.
pub fn commands(stats: &Stats) -> Vec<CommandRow> {
    stats
        .commands
        .iter()
        .map(|((proto, command), s)| CommandRow {
            protocol: proto.name().to_string(),
            command: (*command).to_string(),
            ok: s.ok(),
            errors: classes(&s.errors),
            latency_ms: latency_ms(&s.latency_us),
            statuses: stats
                .statuses
                .iter()
                .filter(|((p, c, _, _), _)| p == proto && c == command)
                .map(|((_, _, kind, code), n)| {
                    let k = match kind {
                        mbx_loadgen::StatusKind::Http => "http",
                        mbx_loadgen::StatusKind::Eas => "eas",
                    };
                    (format!("{k}_{code}"), *n)
                })
                .collect(),
        })
        .collect()
}

/// The tasks table, in the action table's order.
pub fn tasks(day: &DayReport) -> Vec<TaskRow> {
    mbx_loadgen::sched::TaskKind::ALL
        .iter()
        .filter_map(|k| day.tasks.get(k).map(|s| (k, s)))
        .map(|(k, s)| TaskRow {
            task: k.name().to_string(),
            dispatched: s.dispatched,
            completed: s.completed,
            skipped: s.skipped,
            failed: classes(&s.failed),
            latency_ms: latency_ms(&s.from_schedule_us),
            service_ms: latency_ms(&s.service_us),
        })
        .collect()
}

/// Errors by class: the count of failed tasks (or fills) and the first message of the class.
pub fn errors(counts: &BTreeMap<String, u64>, first: &[mbx_loadgen::Error]) -> Vec<LoadgenError> {
    let mut out: Vec<LoadgenError> = counts
        .iter()
        .filter(|(_, n)| **n > 0)
        .map(|(class, n)| LoadgenError {
            class: class.clone(),
            count: *n,
            message: first
                .iter()
                .find(|e| e.class.name() == class)
                .map(|e| e.to_string())
                .unwrap_or_default(),
        })
        .collect();
    // An error met outside a task (the baseline, the grace sweep) still names its class.
    for e in first {
        if !out.iter().any(|o| o.class == e.class.name()) {
            out.push(LoadgenError {
                class: e.class.name().to_string(),
                count: 1,
                message: e.to_string(),
            });
        }
    }
    out
}

/// The delivery block: `addresses` names the recipients (user index -> address); copies
/// delivered after `late_after` count as late. Lost copies are named only when the run looked
/// for late copies (`judged_lost`: it did not stop before its grace sweep).
pub fn delivery(
    day: &DayReport,
    addresses: &[String],
    late_after: Duration,
    judged_lost: bool,
) -> Delivery {
    let d = &day.delivery;
    let name = |r: u32| {
        addresses
            .get(r as usize)
            .cloned()
            .unwrap_or_else(|| format!("user #{r}"))
    };
    Delivery {
        messages_sent: day
            .tasks
            .iter()
            .filter(|(k, _)| k.sends())
            .map(|(_, s)| s.completed)
            .sum(),
        expected: d.expected,
        delivered: d.delivered,
        lost: d.missing,
        duplicated: d.duplicated,
        corrupted: d.corrupted.len() as u64,
        unexpected: d.unexpected,
        corrupted_copies: d
            .corrupted
            .iter()
            .map(|(id, r, what)| CorruptedCopy {
                id: id.to_string(),
                recipient: name(*r),
                what: what.clone(),
            })
            .collect(),
        lost_copies: if judged_lost {
            d.missing_copies
                .iter()
                .map(|(id, r)| CorruptedCopy {
                    id: id.to_string(),
                    recipient: name(*r),
                    what: match day.unreadable.get(r) {
                        Some(e) => format!("{NOT_LOOKED_WHAT}: {e}"),
                        None => LOST_WHAT.to_string(),
                    },
                })
                .collect()
        } else {
            Vec::new()
        },
        latency_ms: latency_ms(&d.latency_us),
        measured_by: d.measured_by().to_string(),
        seen_by_idle: d.seen_by_idle,
        seen_by_poll: d.seen_by_poll,
        late: d.late(late_after),
        server_latency_ms: latency_ms(&d.server_latency_us),
        server_measured_by: day.watch.as_ref().map_or_else(String::new, |w| {
            format!(
                "watcher: {} mailboxes polled every {} ms (NOOP, then the new messages' X-Mbx-Id), {} connections",
                w.watched,
                w.poll.as_millis(),
                w.connections
            )
        }),
        server_resolution_ms: day
            .watch
            .as_ref()
            .map_or(0.0, |w| w.poll.as_secs_f64() * 1000.0),
        server_watched: d.server_watched,
        not_looked: if judged_lost { day.missing_not_looked } else { 0 },
        unreadable_mailboxes: if judged_lost {
            day.unreadable.len() as u64
        } else {
            0
        },
        server_late: over(&d.server_latency_us, late_after),
        idle_probe: day
            .watch
            .as_ref()
            .and_then(|w| w.idle.as_ref())
            .map(|i| IdleProbeFigures {
                probes: i.probes,
                copies: i.copies,
                prompt: i.prompt,
                slow_after_s: i.slow_after.as_secs_f64(),
                lag_ms: latency_ms(&i.lag_us),
                slow: i.slow,
                note: i.note(),
            }),
    }
}

/// Values of `h` (microseconds) over `limit`.
fn over(h: &Histogram<u64>, limit: Duration) -> u64 {
    let limit_us = limit.as_micros().min(u128::from(u64::MAX)) as u64;
    h.iter_recorded()
        .filter(|v| v.value_iterated_to() > limit_us)
        .map(|v| v.count_at_value())
        .sum()
}

/// What a lost copy's `what` says.
pub const LOST_WHAT: &str = "not found after the grace time";

/// What a copy's `what` starts with when its recipient's mailbox could not be read.
pub const NOT_LOOKED_WHAT: &str =
    "could not look: the mailbox could not be read at the grace sweep";

/// The figures a day's verdict judges.
#[derive(Debug, Clone, Copy)]
pub struct DayFigures {
    /// Tasks planned for the days (before the test's end).
    pub planned: u64,
    /// Tasks dispatched.
    pub dispatched: u64,
    /// Stress mode: tasks achieved are judged against those dispatched (the days' tasks are
    /// an upper bound), task latency by service time.
    pub stress: bool,
    /// Tasks completed without error.
    pub completed: u64,
    /// The most unfinished at once.
    pub max_unfinished: u64,
    /// The guard's limit.
    pub overload_limit: u64,
    /// The guard stopped the run.
    pub overloaded: bool,
    /// The run stopped before its grace sweep (the guard, Ctrl-C): copies not seen yet may
    /// still be on their way, so none is judged lost.
    pub ended_early: bool,
}

/// The verdict of a simulated day: tasks achieved against planned, LoadGen's queue guard, each
/// task type's p95 from its scheduled time, and every copy delivered once, intact, in time.
/// In stress mode tasks achieved are judged against tasks dispatched, and each task type's p95
/// of its service time (`task_service_p95_ms.<task>`: there is no schedule to count from).
pub fn day_verdict(
    f: DayFigures,
    tasks: &[TaskRow],
    delivery: &Delivery,
    t: &LoadgenThresholds,
) -> Verdict {
    let mut checks = Vec::new();
    let (of, of_what) = if f.stress {
        (f.dispatched, "no task was dispatched")
    } else {
        (f.planned, "no task was planned")
    };
    if of == 0 {
        checks.push(Check::not_judged(
            "tasks_achieved_pct",
            t.tasks_achieved_pct,
            of_what,
        ));
    } else {
        // Tasks that had nothing to act on are not the server's to achieve.
        let skipped: u64 = tasks.iter().map(|r| r.skipped).sum();
        let of = of.saturating_sub(skipped).max(1);
        let pct = f.completed as f64 * 100.0 / of as f64;
        checks.push(Check::new(
            "tasks_achieved_pct",
            pct,
            t.tasks_achieved_pct,
            pct >= t.tasks_achieved_pct,
        ));
    }
    checks.push(Check::new(
        "task_queue_max",
        f.max_unfinished as f64,
        f.overload_limit as f64,
        !f.overloaded && f.max_unfinished <= f.overload_limit,
    ));
    for row in tasks.iter().filter(|r| r.dispatched > 0) {
        let (name, lat) = if f.stress {
            (format!("task_service_p95_ms.{}", row.task), &row.service_ms)
        } else {
            (format!("task_latency_p95_ms.{}", row.task), &row.latency_ms)
        };
        if lat.count == 0 {
            checks.push(Check::not_judged(
                &name,
                t.task_p95_ms,
                "no task of this type completed",
            ));
        } else {
            checks.push(Check::new(
                &name,
                lat.p95,
                t.task_p95_ms,
                lat.p95 <= t.task_p95_ms,
            ));
        }
    }
    if f.ended_early {
        checks.push(Check::not_judged(
            "messages_lost",
            0.0,
            format!(
                "the run stopped before looking for late copies: {} not seen yet",
                delivery.lost
            ),
        ));
    } else {
        // Copies in a mailbox that could not be read were not looked for: the check below
        // names that, this one the copies not found where the run could look.
        let lost = delivery.lost.saturating_sub(delivery.not_looked);
        checks.push(Check::new("messages_lost", lost as f64, 0.0, lost == 0));
        if delivery.unreadable_mailboxes > 0 {
            checks.push(Check::new(
                "mailboxes_unreadable",
                delivery.unreadable_mailboxes as f64,
                0.0,
                false,
            ));
        }
    }
    for (name, value) in [
        ("messages_corrupted", delivery.corrupted),
        ("messages_duplicated", delivery.duplicated),
        ("messages_unexpected", delivery.unexpected),
    ] {
        checks.push(Check::new(name, value as f64, 0.0, value == 0));
    }
    if delivery.latency_ms.count == 0 {
        checks.push(Check::not_judged(
            "delivery_latency_p95_ms",
            t.delivery_p95_ms,
            "no copy was delivered",
        ));
    } else {
        // The server's figure (the watcher's) when it has copies; else the user-seen one.
        let p95 = if delivery.server_latency_ms.count > 0 {
            delivery.server_latency_ms.p95
        } else {
            delivery.latency_ms.p95
        };
        checks.push(Check::new(
            "delivery_latency_p95_ms",
            p95,
            t.delivery_p95_ms,
            p95 <= t.delivery_p95_ms,
        ));
    }
    Verdict::of(checks)
}

/// The verdict of an initialization: every mailbox filled to its target.
pub fn init_verdict(users: u64, users_done: u64) -> Verdict {
    Verdict::of(vec![Check::new(
        "mailboxes_initialized",
        users_done as f64,
        users as f64,
        users_done == users && users > 0,
    )])
}

#[cfg(test)]
mod tests {
    use super::*;

    fn row(task: &str, dispatched: u64, p95: f64, count: u64) -> TaskRow {
        TaskRow {
            task: task.into(),
            dispatched,
            completed: count,
            skipped: 0,
            failed: BTreeMap::new(),
            latency_ms: LatencyMs {
                count,
                p95,
                ..LatencyMs::default()
            },
            service_ms: LatencyMs::default(),
        }
    }

    fn limits() -> LoadgenThresholds {
        LoadgenThresholds {
            tasks_achieved_pct: 99.0,
            task_p95_ms: 1000.0,
            delivery_p95_ms: 60_000.0,
        }
    }

    fn delivered(n: u64) -> Delivery {
        Delivery {
            expected: n,
            delivered: n,
            latency_ms: LatencyMs {
                count: n,
                p95: 800.0,
                ..LatencyMs::default()
            },
            ..Delivery::default()
        }
    }

    #[test]
    fn a_day_passes_exactly_when_every_check_passes() {
        let f = DayFigures {
            planned: 1000,
            dispatched: 1000,
            stress: false,
            completed: 1000,
            max_unfinished: 10,
            overload_limit: 75,
            overloaded: false,
            ended_early: false,
        };
        let rows = [
            row("send_new", 100, 300.0, 100),
            row("read", 900, 20.0, 900),
        ];
        let v = day_verdict(f, &rows, &delivered(400), &limits());
        assert!(v.pass(), "{v:?}");
        assert_eq!(v.checks().len(), 9);

        // Each failure alone fails the verdict, naming its check.
        let slow = [row("send_new", 100, 1500.0, 100)];
        let v = day_verdict(f, &slow, &delivered(400), &limits());
        assert_eq!(
            v.failed().map(|c| c.name.as_str()).collect::<Vec<_>>(),
            ["task_latency_p95_ms.send_new"]
        );
        let mut lost = delivered(400);
        lost.lost = 1;
        let v = day_verdict(f, &rows, &lost, &limits());
        assert_eq!(
            v.failed().map(|c| c.name.as_str()).collect::<Vec<_>>(),
            ["messages_lost"]
        );
        let short = DayFigures {
            completed: 980,
            ..f
        };
        assert!(!day_verdict(short, &rows, &delivered(400), &limits()).pass());
        let over = DayFigures {
            overloaded: true,
            max_unfinished: 76,
            ended_early: true,
            ..f
        };
        let v = day_verdict(over, &rows, &lost, &limits());
        assert!(!v.pass());
        // Stopped early, copies not seen yet are not called lost.
        let not_judged: Vec<&str> = v.not_judged().map(|c| c.name.as_str()).collect();
        assert_eq!(not_judged, ["messages_lost"]);
        // Nothing delivered: the delivery check says it could not judge, and that is no pass.
        let v = day_verdict(f, &rows, &Delivery::default(), &limits());
        assert!(!v.pass());
        assert_eq!(v.not_judged().count(), 1);
    }

    #[test]
    fn stress_mode_judges_tasks_dispatched_and_service_time() {
        // A 2-day schedule of 1,000 tasks of which 600 were dispatched before the test's end,
        // all completed; service p95 300 ms, latency "from schedule" meaningless.
        let f = DayFigures {
            planned: 1000,
            dispatched: 600,
            stress: true,
            completed: 600,
            max_unfinished: 10,
            overload_limit: 75,
            overloaded: false,
            ended_early: false,
        };
        let mut r = row("read", 600, 99_000.0, 600);
        r.service_ms = LatencyMs {
            count: 600,
            p95: 300.0,
            ..LatencyMs::default()
        };
        let v = day_verdict(f, &[r.clone()], &delivered(400), &limits());
        assert!(v.pass(), "{v:?}");
        let names: Vec<&str> = v.checks().iter().map(|c| c.name.as_str()).collect();
        assert!(names.contains(&"task_service_p95_ms.read"), "{names:?}");
        assert!(!names.iter().any(|n| n.starts_with("task_latency_p95_ms")));
        r.service_ms.p95 = 1200.0;
        let v = day_verdict(f, &[r], &delivered(400), &limits());
        assert_eq!(
            v.failed().map(|c| c.name.as_str()).collect::<Vec<_>>(),
            ["task_service_p95_ms.read"]
        );
    }

    #[test]
    fn an_initialization_passes_when_every_mailbox_is_filled() {
        assert!(init_verdict(50, 50).pass());
        assert!(!init_verdict(50, 49).pass());
        assert!(!init_verdict(0, 0).pass());
    }
}
