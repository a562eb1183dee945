//! The scheduler alone on a simulated clock (bench/loadgen-sched.sh): a day of `--users` users
//! at `--messages-per-day`, every task dispatched as the day engine does it (due in time order,
//! recipients chosen for the tasks that send, counted per kind, handed to the user's channel and
//! taken off it), no network. Prints tasks per second of one core and the share of one core a
//! real-time day of the same users needs.
//!
//! `cargo run --release -p mbx-loadgen --example sched_bench -- [--users N]
//! [--messages-per-day M] [--day-hours H] [--tick-ms T] [--seed S]`

use std::collections::BTreeMap;
use std::hint::black_box;
use std::time::{Duration, Instant};

use mbx_loadgen::sched::{ClientType, Scheduler, SimClock, TaskKind};
use tokio::sync::mpsc;

/// utime + stime of this process (Linux: /proc/self/stat, in USER_HZ ticks of 10 ms); None
/// elsewhere.
fn cpu_s() -> Option<f64> {
    let stat = std::fs::read_to_string("/proc/self/stat").ok()?;
    let rest = &stat[stat.rfind(')')? + 1..];
    let f: Vec<&str> = rest.split_whitespace().collect();
    let ticks = f.get(11)?.parse::<u64>().ok()? + f.get(12)?.parse::<u64>().ok()?;
    Some(ticks as f64 / 100.0)
}

/// A /proc/self/status figure in KiB (VmRSS, VmHWM).
fn status_kib(key: &str) -> Option<u64> {
    let s = std::fs::read_to_string("/proc/self/status").ok()?;
    let line = s.lines().find(|l| l.starts_with(key))?;
    line.split_whitespace().nth(1)?.parse().ok()
}

fn arg<T: std::str::FromStr>(args: &[String], name: &str, default: T) -> T {
    args.iter()
        .position(|a| a == name)
        .and_then(|i| args.get(i + 1))
        .map(|v| {
            v.parse().unwrap_or_else(|_| {
                eprintln!("sched_bench: {name} {v}: not a number");
                std::process::exit(2)
            })
        })
        .unwrap_or(default)
}

struct Job {
    at: Duration,
    kind: TaskKind,
    recipients: Vec<u32>,
}

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let users: u32 = arg(&args, "--users", 100_000);
    let mpd: u32 = arg(&args, "--messages-per-day", 150);
    let hours: f64 = arg(&args, "--day-hours", 8.0);
    let tick_ms: u64 = arg(&args, "--tick-ms", 100);
    let seed: u64 = arg(&args, "--seed", 1);
    let day = Duration::from_secs_f64(hours * 3600.0);
    // loadgen run's default mix, interleaved: 70% desktop IMAP, 20% webmail, 10% POP3.
    let clients: Vec<ClientType> = (0..users)
        .map(|u| match u % 10 {
            0..=6 => ClientType::DesktopImap,
            7 | 8 => ClientType::Webmail,
            _ => ClientType::Pop3,
        })
        .collect();

    let rss0 = status_kib("VmRSS:").unwrap_or(0);
    let cpu0 = cpu_s();
    let t0 = Instant::now();
    let mut sched = Scheduler::new(seed, mpd, day, 1, &clients);
    let built = t0.elapsed();
    let planned = sched.planned();
    // One channel per user, as the day engine's actors have.
    let (mut txs, mut rxs) = (Vec::with_capacity(users as usize), Vec::new());
    for _ in 0..users {
        let (tx, rx) = mpsc::unbounded_channel::<Job>();
        txs.push(tx);
        rxs.push(rx);
    }
    let setup = t0.elapsed();
    let cpu_setup = cpu_s();

    let clock = SimClock::new();
    let tick = Duration::from_millis(tick_ms.max(1));
    let mut due = Vec::new();
    let mut per_kind: BTreeMap<TaskKind, u64> = BTreeMap::new();
    let (mut dispatched, mut copies, mut late_max) = (0u64, 0u64, Duration::ZERO);
    let t1 = Instant::now();
    loop {
        due.clear();
        sched.due(clock.elapsed(), &mut due);
        for t in due.drain(..) {
            let recipients = if t.kind.sends() {
                sched.recipients(&t)
            } else {
                Vec::new()
            };
            copies += recipients.len() as u64;
            *per_kind.entry(t.kind).or_insert(0) += 1;
            dispatched += 1;
            late_max = late_max.max(clock.elapsed() - t.at);
            let u = t.user as usize;
            if let Some(tx) = txs.get(u) {
                let _ = tx.send(Job {
                    at: t.at,
                    kind: t.kind,
                    recipients,
                });
            }
            // The actor's side: the job taken off its channel.
            if let Some(job) = rxs.get_mut(u).and_then(|rx| rx.try_recv().ok()) {
                black_box((job.at, job.kind, job.recipients));
            }
        }
        let Some(next) = sched.next_due() else { break };
        // The engine sleeps until the next task is due (at most 100 ms): the simulated clock
        // jumps there at once.
        let now = clock.elapsed();
        clock.set(next.min(now + tick).max(now + Duration::from_nanos(1)));
    }
    let run = t1.elapsed();
    let cpu1 = cpu_s();
    let hwm = status_kib("VmHWM:").unwrap_or(0);

    let run_s = run.as_secs_f64();
    let cpu_run = match (cpu_setup, cpu1) {
        (Some(a), Some(b)) => b - a,
        _ => run_s,
    };
    let cpu_all = match (cpu0, cpu1) {
        (Some(a), Some(b)) => b - a,
        _ => (setup + run).as_secs_f64(),
    };
    let tasks_per_s = dispatched as f64 / cpu_run.max(1e-9);
    let real_rate = dispatched as f64 / day.as_secs_f64();
    let core_share = 100.0 * cpu_all / day.as_secs_f64();
    println!("users={users}");
    println!("messages_per_day={mpd}");
    println!("day_s={}", day.as_secs_f64());
    println!("mix=desktop_imap 70%, webmail 20%, pop3 10% (interleaved)");
    println!("tick_ms={tick_ms}");
    println!("tasks_planned={planned}");
    println!("tasks_dispatched={dispatched}");
    println!("copies_addressed={copies}");
    for (k, n) in &per_kind {
        println!("tasks_{}={n}", k.name());
    }
    println!("max_lateness_ms={:.1}", late_max.as_secs_f64() * 1e3);
    println!("setup_s={:.3}", setup.as_secs_f64());
    println!("scheduler_new_s={:.3}", built.as_secs_f64());
    println!("dispatch_wall_s={run_s:.3}");
    println!("dispatch_cpu_s={cpu_run:.2}");
    println!("total_cpu_s={cpu_all:.2}");
    println!("tasks_per_cpu_s={tasks_per_s:.0}");
    println!(
        "ns_per_task={:.0}",
        1e9 * cpu_run / dispatched.max(1) as f64
    );
    println!("real_time_rate_tasks_per_s={real_rate:.1}");
    println!("core_share_of_real_time_day_pct={core_share:.3}");
    println!("rss_start_kib={rss0}");
    println!("rss_peak_kib={hwm}");
    if dispatched != planned {
        eprintln!("sched_bench: dispatched {dispatched} of {planned} planned tasks");
        std::process::exit(1);
    }
}
