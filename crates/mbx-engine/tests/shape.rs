//! The I/O shape on the simulated device (deterministic, seeded; minutes of test in simulated
//! time): on storage as fast as the seed reports' (log writes well under a millisecond), the
//! ratio of log writes to database writes, the read share and the average sizes stay in the seeds'
//! bands whatever the target rate and the number of sessions, as they do in Jetstress
//! (docs/method.md, "Log writes per database write"). bench/fidelity-sweep.sh measures the same
//! grid on real storage.

use std::path::PathBuf;
use std::sync::atomic::AtomicBool;
use std::sync::Arc;
use std::time::Duration;

use mbx_config::{Pacing, RunConfig};
use mbx_engine::result::RunResult;
use mbx_engine::{run_plan, InstanceSpec, LogStart, Observer, Plan, RunEvent};
use mbx_io::sim::{Latency, LatencyModel, SimClock, SimDevice, SimQueue};
use mbx_store::header::HEADER_PAGES;
use mbx_store::page::PAGE_SIZE;

struct Quiet;
impl Observer for Quiet {
    fn on_event(&mut self, _: RunEvent<'_>) {}
}

/// Data pages of the database: 128 MiB, sparse on the simulated device (pages never written
/// read back as zeros and count as unwritten, which does not change the shape). Its cache is an
/// eighth of it, as for any database below 2 GiB.
const PAGES: u64 = 4096;

/// One run of `seconds` at `rate` IOPS with `sessions` sessions on one database with 2 copies.
fn run(rate: f64, sessions: u32, seconds: f64, model: LatencyModel) -> RunResult {
    run_paced(rate, sessions, seconds, model, Pacing::Closed)
}

/// [`run`] with the given pacing.
fn run_paced(
    rate: f64,
    sessions: u32,
    seconds: f64,
    model: LatencyModel,
    pacing: Pacing,
) -> RunResult {
    let dev = SimDevice::new();
    let db_path = PathBuf::from("/sim/db/shape.edb");
    dev.create(&db_path, (HEADER_PAGES + PAGES) * PAGE_SIZE as u64);
    let spec = InstanceSpec {
        name: "Instance.1".into(),
        db_path,
        log_dir: PathBuf::from("/sim/logs"),
        database_id: 7,
        data_pages: PAGES,
        log: LogStart {
            next_generation: 1,
            ..LogStart::default()
        },
    };
    let mut cfg = RunConfig::default();
    cfg.profile.databases = 1;
    // 32 pages per mailbox, as in bench/fidelity-sweep.sh's databases (a transaction's pages
    // are in its mailbox's pages: fewer would make them neighbours more often).
    cfg.profile.mailboxes = PAGES / 32;
    cfg.profile.iops_per_mailbox = rate / (PAGES / 32) as f64;
    cfg.profile.copies_per_database = 2;
    cfg.threads = sessions;
    cfg.duration_s = seconds;
    cfg.bdm = false;
    cfg.pacing = pacing;
    let clock = Arc::new(SimClock::new());
    let queue = SimQueue::new(dev, clock, mbx_engine::queue_depth(&cfg, 1), model, 11);
    run_plan(
        &cfg,
        &Plan::performance(&cfg),
        vec![spec],
        Box::new(queue),
        &mut Quiet,
        &AtomicBool::new(false),
    )
    .expect("run")
}

/// Storage like the seed reports': log writes 0.4 ms on average, reads 5 ms, page writes 2 ms
/// (each a least time plus an exponential tail).
fn seed_like() -> LatencyModel {
    let us = Duration::from_micros;
    LatencyModel::uniform(Latency {
        base: us(200),
        tail: us(1800),
    })
    .reads(Latency {
        base: us(500),
        tail: us(4500),
    })
    .log_writes(Latency {
        base: us(200),
        tail: us(200),
    })
}

#[test]
fn the_shape_does_not_depend_on_rate_or_sessions() {
    let mut seen = Vec::new();
    for (rate, sessions) in [(50.0, 1), (50.0, 16), (500.0, 1), (500.0, 16)] {
        // About 18,000 I/Os per point: enough transactions for the ratio to be within a few
        // percent of its steady value.
        let r = run(rate, sessions, 18_000.0 / rate, seed_like());
        let i = &r.instances[0];
        let t = &i.transactional;
        let ratio = t.log_writes_per_s / t.db_writes_per_s;
        let read_share = t.db_reads_per_s / (t.db_reads_per_s + t.db_writes_per_s);
        let point = format!(
            "{rate} IOPS, {sessions} sessions: ratio {ratio:.3}, read share {read_share:.3}, \
             DB writes {:.0} B, log writes {:.0} B, replication reads {:.0} B, {:.1} IOPS",
            t.db_write_avg_bytes,
            t.log_write_avg_bytes,
            i.log_replication.read_avg_bytes,
            r.achieved_iops
        );
        eprintln!("{point}");
        assert!((0.22..=0.26).contains(&ratio), "{point}");
        assert!((0.67..=0.72).contains(&read_share), "{point}");
        assert!(
            (34_900.0..=36_700.0).contains(&t.db_write_avg_bytes),
            "{point}"
        );
        assert!(
            (8_192.0..=24_576.0).contains(&t.log_write_avg_bytes),
            "{point}"
        );
        assert!(
            (t.db_read_avg_bytes - 33_000.0).abs() < 600.0,
            "{point}: DB reads {}",
            t.db_read_avg_bytes
        );
        // Every byte of log is read once by replication, in reads of the seeds' size on average
        // (within the half read the plan may be off at the end of a run).
        let written = t.log_writes_per_s * t.log_write_avg_bytes;
        let read = i.log_replication.reads_per_s * i.log_replication.read_avg_bytes;
        assert!(
            (0.85..=1.1).contains(&(read / written)),
            "{point}: {read} of {written}"
        );
        assert!(
            (i.log_replication.read_avg_bytes - 232_550.0).abs() < 232_550.0 * 0.05,
            "{point}"
        );
        seen.push(ratio);
    }
    // Not merely inside the band: close together.
    let (lo, hi) = seen
        .iter()
        .fold((f64::MAX, f64::MIN), |(lo, hi), &x| (lo.min(x), hi.max(x)));
    assert!(hi - lo < 0.02, "{seen:?}");
}

/// Storage with log writes of `mean` on average (0.2 ms at least, the rest an exponential tail).
fn slow_log(mean: Duration) -> LatencyModel {
    let base = Duration::from_micros(200);
    seed_like().log_writes(Latency {
        base,
        tail: mean.saturating_sub(base),
    })
}

#[test]
fn only_log_writes_slower_than_jetstress_allows_merge_enough_commits_to_lower_the_ratio() {
    let ms = Duration::from_millis;
    let ratio = |r: &RunResult| {
        let t = &r.instances[0].transactional;
        (
            t.log_writes_per_s / t.db_writes_per_s,
            t.log_write_avg_latency_ms,
        )
    };
    // Within Jetstress's limit (10 ms on average), at 500 IOPS with 16 sessions: durable commits
    // seldom find a log write in flight, and the ratio stays in the band.
    let (at_limit, latency) = ratio(&run(500.0, 16, 36.0, slow_log(ms(8))));
    eprintln!("log writes {latency:.1} ms on average: ratio {at_limit:.3}");
    assert!(
        (0.22..=0.26).contains(&at_limit),
        "{at_limit} at {latency} ms"
    );
    // Four times slower: commits arriving during a write go out together in the next one (group
    // commit, as in ESE), so there are fewer log writes; the test fails on log latency anyway.
    let (slow, latency) = ratio(&run(500.0, 16, 36.0, slow_log(ms(40))));
    eprintln!("log writes {latency:.1} ms on average: ratio {slow:.3}");
    assert!(slow < 0.21 && latency > 10.0, "{slow} at {latency} ms");
}

#[test]
fn open_loop_pacing_keeps_the_shape() {
    // The same grid as above with transactions arriving on a Poisson schedule: what the I/O
    // looks like does not depend on how transactions are started, only on the mix.
    let mut seen = Vec::new();
    for (rate, sessions) in [(50.0, 1), (50.0, 16), (500.0, 1), (500.0, 16)] {
        let r = run_paced(rate, sessions, 18_000.0 / rate, seed_like(), Pacing::Open);
        let i = &r.instances[0];
        let t = &i.transactional;
        let ratio = t.log_writes_per_s / t.db_writes_per_s;
        let read_share = t.db_reads_per_s / (t.db_reads_per_s + t.db_writes_per_s);
        let point = format!(
            "open, {rate} IOPS, {sessions} sessions: ratio {ratio:.3}, read share \
             {read_share:.3}, DB writes {:.0} B, log writes {:.0} B, DB reads {:.0} B, {:.1} IOPS",
            t.db_write_avg_bytes, t.log_write_avg_bytes, t.db_read_avg_bytes, r.achieved_iops
        );
        eprintln!("{point}");
        assert!((0.22..=0.26).contains(&ratio), "{point}");
        assert!((0.67..=0.72).contains(&read_share), "{point}");
        assert!(
            (34_900.0..=36_700.0).contains(&t.db_write_avg_bytes),
            "{point}"
        );
        assert!(
            (8_192.0..=24_576.0).contains(&t.log_write_avg_bytes),
            "{point}"
        );
        assert!((t.db_read_avg_bytes - 33_000.0).abs() < 600.0, "{point}");
        let written = t.log_writes_per_s * t.log_write_avg_bytes;
        let read = i.log_replication.reads_per_s * i.log_replication.read_avg_bytes;
        assert!((0.85..=1.1).contains(&(read / written)), "{point}");
        seen.push(ratio);
    }
    let (lo, hi) = seen
        .iter()
        .fold((f64::MAX, f64::MIN), |(lo, hi), &x| (lo.min(x), hi.max(x)));
    assert!(hi - lo < 0.02, "{seen:?}");
}

#[test]
fn replication_reads_back_the_measured_phase_s_own_log_in_short_runs_too() {
    // A short run at a low rate closes only a few 1 MiB log files per database (64 KiB/s of
    // log closes one every 16 s): reading a file only once it closed read back 0.55-1.09 of
    // the log written in the measured phase, depending on where file ends fell. Reading the
    // log as it is written keeps it within one read (about 230 KB) of the log written.
    for (rate, sessions, seconds) in [
        (32.0, 2, 60.0),
        (64.0, 2, 30.0),
        (64.0, 4, 45.0),
        (64.0, 2, 60.0),
        (128.0, 4, 60.0),
        (64.0, 2, 600.0),
    ] {
        let r = run(rate, sessions, seconds, seed_like());
        let i = &r.instances[0];
        let t = &i.transactional;
        let written = t.log_writes_per_s * t.log_write_avg_bytes;
        let read = i.log_replication.reads_per_s * i.log_replication.read_avg_bytes;
        let point = format!(
            "{rate} IOPS, {sessions} sessions, {seconds} s: log written {written:.0} B/s, \
             replication read {read:.0} B/s in reads of {:.0} B",
            i.log_replication.read_avg_bytes
        );
        eprintln!("{point}");
        assert!((0.9..=1.1).contains(&(read / written)), "{point}");
        if seconds >= 600.0 {
            // Over a long run the reads average the seeds' size.
            assert!(
                (i.log_replication.read_avg_bytes - 232_550.0).abs() < 232_550.0 * 0.02,
                "{point}"
            );
        }
    }
}
