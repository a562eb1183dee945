//! The Performance test's I/O shape over a grid of rates and session counts on the simulated
//! device (virtual time: minutes of test in seconds, the same figures for the same seed), for a
//! storage of chosen latencies. A companion to bench/fidelity-sweep.sh, which measures the same
//! grid on real storage: here the storage's behaviour is a parameter, so what the workload model
//! does can be told apart from what the storage does.
//!
//! Usage: shape [LOG_MS [READ_MS [DURATION_S [PAGES]]]]
//!   LOG_MS: mean log write latency (0.2 ms plus an exponential tail), default 0.5
//!   READ_MS: mean read and page write latency (the same way), default 5
//!   DURATION_S: measured seconds per point, default 60; PAGES: data pages per database
//!   (sparse: never-written pages read back as zeros and count as bad pages, which does not
//!   matter here), default 32768 (1 GiB, as in the sweep)
//! Environment: RATES, SESSIONS (per database, as in the sweep).

use std::path::PathBuf;
use std::sync::atomic::AtomicBool;
use std::sync::Arc;
use std::time::Duration;

use mbx_config::RunConfig;
use mbx_engine::{run_plan, InstanceSpec, LogStart, Observer, Plan, RunEvent};
use mbx_io::sim::{Latency, LatencyModel, SimClock, SimDevice, SimQueue};

/// Keeps the per-instance shape lines the measured phase ends with.
#[derive(Default)]
struct Lines(Vec<String>);

impl Observer for Lines {
    fn on_event(&mut self, e: RunEvent<'_>) {
        if let RunEvent::Log(l) = e {
            if l.contains("log writes per") {
                self.0.push(l.to_string());
            }
        }
    }
}

fn list(var: &str, default: &str) -> Vec<f64> {
    std::env::var(var)
        .unwrap_or_else(|_| default.into())
        .split_whitespace()
        .filter_map(|x| x.parse().ok())
        .collect()
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let args: Vec<f64> = std::env::args()
        .skip(1)
        .map(|a| a.parse())
        .collect::<Result<_, _>>()?;
    let arg = |i: usize, d: f64| args.get(i).copied().unwrap_or(d);
    let (log_ms, read_ms, duration, pages) =
        (arg(0, 0.5), arg(1, 5.0), arg(2, 60.0), arg(3, 32768.0));
    let ms = |m: f64| Duration::from_secs_f64(m / 1000.0);
    // 0.2 ms at least, plus an exponential tail: mostly fast, sometimes very slow, as a shared
    // disk is.
    let lat = |mean: f64| Latency {
        base: ms(0.2_f64.min(mean)),
        tail: ms((mean - 0.2).max(0.0)),
    };
    let model = LatencyModel::uniform(lat(read_ms))
        .log_writes(lat(log_ms))
        .syncs(Latency::mean_sd(ms(1.0), ms(0.5)))
        .allocations(Latency::fixed(ms(0.1)));
    let dbs = 2u32;
    println!("log write {log_ms} ms, reads and page writes {read_ms} ms, {duration} s measured, {pages} pages per database");
    println!("rate/db sessions/db | IOPS/db read% | log w/DB w | commits/record records/txn (capacity, write-ahead, headers) | DB w/txn pages/write changes/page-written | log B/write");
    for rate in list("RATES", "50 150 300 500") {
        for sessions in list("SESSIONS", "1 4 8 16") {
            let dev = SimDevice::new();
            let mut cfg = RunConfig::default();
            cfg.profile.databases = dbs;
            cfg.profile.mailboxes = 2048;
            cfg.profile.iops_per_mailbox = rate * f64::from(dbs) / 2048.0;
            cfg.threads = (sessions as u32) * dbs;
            cfg.duration_s = duration;
            cfg.bdm = false;
            let specs: Vec<InstanceSpec> = (0..dbs)
                .map(|i| {
                    let db_path = PathBuf::from(format!("/sim/db{i}.edb"));
                    dev.create(
                        &db_path,
                        (mbx_store::header::HEADER_PAGES + pages as u64)
                            * mbx_store::page::PAGE_SIZE as u64,
                    );
                    InstanceSpec {
                        name: format!("Instance.{}", i + 1),
                        db_path,
                        log_dir: PathBuf::from(format!("/sim/logs{i}")),
                        database_id: 1 + u64::from(i),
                        data_pages: pages as u64,
                        log: LogStart {
                            next_generation: 1,
                            ..LogStart::default()
                        },
                    }
                })
                .collect();
            let clock = Arc::new(SimClock::new());
            let depth = mbx_engine::queue_depth(&cfg, specs.len());
            let queue = SimQueue::new(dev, clock, depth, model.clone(), 1);
            let mut lines = Lines::default();
            let r = run_plan(
                &cfg,
                &Plan::performance(&cfg),
                specs,
                Box::new(queue),
                &mut lines,
                &AtomicBool::new(false),
            )?;
            let i = &r.instances[0];
            let t = &i.transactional;
            // "...: L log writes per W database writes (x): C records for D durable commits, K at
            // half the log buffer, P for page writes, H log file headers; Z lazy commits and R
            // read-only transactions; X page changes written as Y pages."
            let line = lines.0.first().ok_or("no shape line")?;
            let after_name = line.split_once(": ").map_or("", |(_, rest)| rest);
            let nums: Vec<f64> = after_name
                .split(|c: char| !(c.is_ascii_digit() || c == '.'))
                .filter_map(|w| w.parse().ok())
                .collect();
            if nums.len() < 12 {
                return Err(format!("unexpected shape line: {line}").into());
            }
            let (lw, dw, recs, durable) = (nums[0], nums[1], nums[3], nums[4]);
            let records = nums[3] + nums[5] + nums[6];
            let txns = durable + nums[8] + nums[9];
            let (changes, written) = (nums[10], nums[11]);
            println!(
                "{rate:>7} {sessions:>11} | {:>7.1} {:>5.1} | {:>10.3} | {:>14.2} {:>11.3} ({:.3}, {:.3}, {:.3}) | {:>8.2} {:>11.2} {:>20.2} | {:>11.0}",
                t.db_reads_per_s + t.db_writes_per_s,
                100.0 * t.db_reads_per_s / (t.db_reads_per_s + t.db_writes_per_s),
                lw / dw,
                durable / recs.max(1.0),
                records / txns.max(1.0),
                nums[5] / txns.max(1.0),
                nums[6] / txns.max(1.0),
                nums[7] / txns.max(1.0),
                dw / txns.max(1.0),
                written / dw.max(1.0),
                changes / written.max(1.0),
                t.log_write_avg_bytes,
            );
        }
    }
    Ok(())
}
