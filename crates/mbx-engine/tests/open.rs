//! Open-loop pacing and the maximum-latency tolerance on the simulated clock and device
//! (deterministic, seeded): the target is met over a simulated minute, latency spikes show in
//! the latency from arrival and in the backlog, uniform arrivals start on time, and
//! `max_latency_errors` tolerates a few slow samples but not more.

use std::path::PathBuf;
use std::sync::atomic::AtomicBool;
use std::sync::Arc;
use std::time::Duration;

use mbx_config::{Arrivals, Pacing, RunConfig};
use mbx_engine::result::{CheckState, RunResult, Sample, StopReason};
use mbx_engine::{run_plan, InstanceSpec, LogStart, Observer, Plan, RunEvent};
use mbx_io::sim::{Latency, LatencyModel, SimClock, SimDevice, SimQueue};
use mbx_io::{FaultKind, FaultRule, IoOp};
use mbx_store::header::HEADER_PAGES;
use mbx_store::page::{build_data_page, PageHeader, KIND_DATA, PAGE_SIZE};

#[derive(Default)]
struct Samples(Vec<Sample>);

impl Observer for Samples {
    fn on_event(&mut self, e: RunEvent<'_>) {
        if let RunEvent::Sample(s) = e {
            self.0.push(s.clone());
        }
    }
}

/// Data pages of the database (32 MiB), each written as `prepare` would.
const PAGES: u64 = 1024;

fn config(target: f64, seconds: f64, sessions: u32, pacing: Pacing) -> RunConfig {
    let mut cfg = RunConfig::default();
    cfg.profile.databases = 1;
    cfg.profile.mailboxes = PAGES / 32;
    cfg.profile.iops_per_mailbox = target / (PAGES / 32) as f64;
    cfg.threads = sessions;
    cfg.duration_s = seconds;
    cfg.sample_interval_s = 5.0;
    cfg.bdm = false;
    cfg.cache.max_dirty_age_s = 2.0;
    cfg.pacing = pacing;
    cfg
}

/// Reads 2 ms, writes 1 ms, log writes 0.3 ms on average: far more than the targets need.
fn fast() -> LatencyModel {
    let us = Duration::from_micros;
    LatencyModel::uniform(Latency {
        base: us(200),
        tail: us(800),
    })
    .reads(Latency {
        base: us(500),
        tail: us(1500),
    })
    .log_writes(Latency {
        base: us(100),
        tail: us(200),
    })
}

fn run(cfg: &RunConfig, model: LatencyModel, faults: Vec<FaultRule>) -> (RunResult, Vec<Sample>) {
    let dev = SimDevice::new();
    let db_path = PathBuf::from("/sim/db/open.edb");
    dev.create(&db_path, (HEADER_PAGES + PAGES) * PAGE_SIZE as u64);
    let mut page = vec![0u8; PAGE_SIZE];
    for n in HEADER_PAGES..HEADER_PAGES + PAGES {
        build_data_page(
            &mut page,
            &PageHeader {
                page_number: n,
                database_id: 7,
                generation: 1,
                kind: KIND_DATA,
                compressibility_pct: 0,
            },
        );
        dev.write_at(&db_path, n * PAGE_SIZE as u64, &page)
            .expect("write page");
    }
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
    let clock = Arc::new(SimClock::new());
    let queue =
        SimQueue::new(dev, clock, mbx_engine::queue_depth(cfg, 1), model, 5).with_faults(faults);
    let mut samples = Samples::default();
    let r = run_plan(
        cfg,
        &Plan::performance(cfg),
        vec![spec],
        Box::new(queue),
        &mut samples,
        &AtomicBool::new(false),
    )
    .expect("run");
    assert!(r.stopped.reason.ran_to_completion(), "{:?}", r.stopped);
    (r, samples.0)
}

/// One database read in `one_in` takes `extra` longer (all the run long).
fn read_spikes(one_in: u64, extra: Duration) -> Vec<FaultRule> {
    let mut rule = FaultRule::new(Some(IoOp::Read), FaultKind::Latency(extra));
    rule.one_in = one_in;
    vec![rule]
}

#[test]
fn open_loop_meets_the_target_within_one_percent_over_a_simulated_minute() {
    for arrivals in [Arrivals::Poisson, Arrivals::Uniform] {
        let mut cfg = config(400.0, 60.0, 8, Pacing::Open);
        cfg.arrivals = arrivals;
        let (r, samples) = run(&cfg, fast(), Vec::new());
        let p = r.pacing.as_ref().expect("pacing block");
        eprintln!(
            "{arrivals}: achieved {:.2} of 400 IOPS; {} arrived, {} started, {} late, {} dropped, \
             backlog max {}; service p99 {:.2} ms, from arrival p99 {:.2} ms",
            r.achieved_iops,
            p.transactions_arrived,
            p.transactions_started,
            p.transactions_late,
            p.transactions_dropped,
            p.backlog_max,
            p.transaction_latency_ms.p99,
            p.latency_from_arrival_ms.p99
        );
        assert!(
            (r.achieved_iops / 400.0 - 1.0).abs() < 0.01,
            "{arrivals}: achieved {}",
            r.achieved_iops
        );
        assert_eq!(p.mode, Pacing::Open);
        assert_eq!(p.arrivals, Some(arrivals));
        assert_eq!(p.transactions_dropped, 0);
        assert!(p.transactions_started > 1000);
        // Every sample says how the arrivals went.
        assert!(!samples.is_empty());
        assert!(samples.iter().all(|s| s.pacing.is_some()));
        if arrivals == Arrivals::Uniform {
            // Evenly spaced arrivals and sessions to spare: each starts when it arrives, so the
            // starts are as evenly spaced as the arrivals (none late, none waiting).
            assert_eq!(p.transactions_late, 0, "uniform starts late");
            assert!(p.backlog_max <= 1, "backlog {}", p.backlog_max);
            // Nothing waited: the latency from arrival is the service latency.
            let (a, s) = (&p.latency_from_arrival_ms, &p.transaction_latency_ms);
            assert!((a.p99 - s.p99).abs() < 0.01, "{a:?} vs {s:?}");
        }
        assert!(r.verdict.pass(), "{:?}", r.verdict);
    }
}

#[test]
fn latency_spikes_show_in_the_latency_from_arrival_and_the_backlog() {
    // One session; one read in 1,000 takes 300 ms longer: the session is held, arrivals queue.
    let cfg = config(200.0, 30.0, 1, Pacing::Open);
    let (r, samples) = run(&cfg, fast(), read_spikes(1000, Duration::from_millis(300)));
    let p = r.pacing.as_ref().expect("pacing block");
    let (a, s) = (&p.latency_from_arrival_ms, &p.transaction_latency_ms);
    eprintln!(
        "spikes: achieved {:.1}; service {s:?}; from arrival {a:?}; late {}, dropped {}, \
         backlog max {} (per sample {:?})",
        r.achieved_iops,
        p.transactions_late,
        p.transactions_dropped,
        p.backlog_max,
        p.backlog_max_per_sample
    );
    assert!(
        a.p99 > s.p99,
        "from arrival p99 {} <= service {}",
        a.p99,
        s.p99
    );
    assert!(p.backlog_max > 0);
    assert!(p.transactions_late > 0);
    assert!(p.backlog_max_per_sample.max > 0.0);
    let in_samples: u64 = samples
        .iter()
        .filter_map(|s| s.pacing.map(|x| x.backlog_max))
        .max()
        .unwrap_or(0);
    assert!(in_samples > 0, "no backlog in any sample");
    // The same storage closed loop: no backlog (a slot waits for a session a second at most,
    // then is dropped), and its samples are as they always were. Its latency from the start
    // slot shows the wait all the same.
    let closed = config(200.0, 30.0, 1, Pacing::Closed);
    let (c, csamples) = run(
        &closed,
        fast(),
        read_spikes(1000, Duration::from_millis(300)),
    );
    let cp = c.pacing.as_ref().expect("pacing block");
    assert_eq!(cp.mode, Pacing::Closed);
    assert_eq!(cp.backlog_max, 0);
    // Closed-loop samples are as they always were.
    assert!(csamples.iter().all(|s| s.pacing.is_none()));
    eprintln!(
        "closed: achieved {:.1}; from slot p99 {:.1} ms, dropped {}",
        c.achieved_iops, cp.latency_from_arrival_ms.p99, cp.transactions_dropped
    );
    assert!(cp.latency_from_arrival_ms.p99 > cp.transaction_latency_ms.p99);
}

/// A run whose database reads take 2 ms except one read in 1,500 of the measured phase's, which
/// takes 4 s longer: a few 1 s samples average far above the 15 ms limit. None in its last 5 s:
/// a read still in flight when measuring ends is judged by itself, not as part of a sample
/// (docs/method.md, "I/O in flight at the end"; tests/stalls.rs).
fn spiky_samples(tolerated: u32) -> RunResult {
    let mut cfg = config(200.0, 30.0, 8, Pacing::Closed);
    cfg.sample_interval_s = 1.0;
    cfg.thresholds.db_read_max_ms = 15.0;
    cfg.thresholds.max_latency_errors = tolerated;
    // The measured phase's start in virtual time, from the same run without spikes (the same
    // up to there: the spikes begin with it).
    let clean = run(&cfg, fast(), Vec::new()).0;
    let start_unix = clean.test.collection_start_unix_s.expect("measured");
    let start = Duration::from_secs_f64(start_unix - SimClock::DEFAULT_WALL_START as f64);
    let spikes = read_spikes(1500, Duration::from_secs(4))
        .into_iter()
        .map(|r| {
            r.starting_at(start)
                .ending_at(start + Duration::from_secs(25))
        })
        .collect();
    run(&cfg, fast(), spikes).0
}

#[test]
fn max_latency_errors_tolerates_that_many_slow_samples_and_no_more() {
    let lenient = spiky_samples(6);
    let m = lenient.max_latency.expect("max_latency block").db_read;
    eprintln!("tolerating 6: {m:?}");
    // A few samples are over the limit, but no more than tolerated: the check passes, and the
    // strict figures are reported all the same.
    assert!((1..=6).contains(&m.samples_over), "{m:?}");
    assert!(m.sample_max_ms > 15.0 && m.per_io_max_ms > 4000.0, "{m:?}");
    assert!(m.pass && m.tolerated_ms <= 15.0, "{m:?}");
    let check = |r: &RunResult| {
        r.verdict
            .checks()
            .iter()
            .find(|c| c.name == "db_read_latency_max_ms")
            .cloned()
            .expect("check")
    };
    let c = check(&lenient);
    assert!(c.pass() && c.value == m.tolerated_ms, "{c:?}");
    // 30 one-second samples: more than tolerated, so the check judged them.
    assert_eq!(c.state(), CheckState::Pass, "{c:?}");
    // The same run tolerating fewer samples than were slow: the check fails.
    let strict = spiky_samples(0);
    let s = strict.max_latency.expect("max_latency block").db_read;
    eprintln!("tolerating 0: {s:?}");
    assert_eq!(s.samples_over, m.samples_over, "same run, same samples");
    assert!(!s.pass && s.tolerated_ms == s.sample_max_ms, "{s:?}");
    let c = check(&strict);
    assert!(!c.pass() && c.value > 15.0, "{c:?}");
    assert!(!strict.verdict.pass());
}

#[test]
fn a_test_too_short_for_the_tolerance_says_so() {
    // 10 s of 5 s samples: 2 samples, 6 tolerated: the maximum-latency checks cannot fail.
    let cfg = config(200.0, 10.0, 8, Pacing::Closed);
    let (r, samples) = run(&cfg, fast(), Vec::new());
    assert!(samples.len() <= 6);
    for name in ["db_read_latency_max_ms", "log_write_latency_max_ms"] {
        let c = r.verdict.check(name).expect("check");
        assert_eq!(c.state(), CheckState::NotJudged, "{c:?}");
        assert!(
            c.reason().is_some_and(|w| w.contains("could not fail")),
            "{c:?}"
        );
    }
    assert!(!r.verdict.pass());
    assert_eq!(r.stopped.reason, StopReason::VerdictFailed);
    let m = r.max_latency.expect("max_latency");
    assert!(!m.db_read.judged && !m.db_read.pass, "{m:?}");
    // Strict: judged, and passed.
    let mut cfg = cfg;
    cfg.thresholds.max_latency_errors = 0;
    let (r, _) = run(&cfg, fast(), Vec::new());
    let c = r.verdict.check("db_read_latency_max_ms").expect("check");
    assert_eq!(c.state(), CheckState::Pass, "{c:?}");
    assert!(r.verdict.pass(), "{:?}", r.verdict);
}

/// Every I/O takes 0.3 ms on average (0.2 ms plus a random 0.1 ms).
fn quick() -> LatencyModel {
    let us = Duration::from_micros;
    LatencyModel::uniform(Latency {
        base: us(200),
        tail: us(100),
    })
}

#[test]
fn closed_loop_with_idle_sessions_starts_every_transaction_when_due() {
    // 32 sessions, 100 IOPS, 0.3 ms storage: nearly every session is idle nearly always, so
    // every start slot finds one. Nothing but the storage may stand between a slot and its
    // transaction's end: the latency from the slot is the service latency, within a millisecond
    // of waking up.
    let cfg = config(100.0, 60.0, 32, Pacing::Closed);
    let (r, _) = run(&cfg, quick(), Vec::new());
    let p = r.pacing.as_ref().expect("pacing block");
    let (a, s) = (&p.latency_from_arrival_ms, &p.transaction_latency_ms);
    eprintln!(
        "closed, 32 sessions: achieved {:.2} of 100 IOPS; {} started, {} late, {} dropped; \
         service {s:?}; from slot {a:?}",
        r.achieved_iops, p.transactions_started, p.transactions_late, p.transactions_dropped
    );
    assert!(
        (r.achieved_iops / 100.0 - 1.0).abs() < 0.02,
        "achieved {}",
        r.achieved_iops
    );
    assert!(
        p.transactions_started > 1000,
        "{} started",
        p.transactions_started
    );
    assert_eq!(p.transactions_dropped, 0);
    // Late (> 1 ms from the slot to the start): none but the odd one the loop woke late for.
    assert!(
        p.transactions_late * 1000 <= p.transactions_started,
        "{} of {} late",
        p.transactions_late,
        p.transactions_started
    );
    assert!(
        a.p99 <= s.p99 + 1.0,
        "from slot p99 {} vs service {}",
        a.p99,
        s.p99
    );
    assert!(a.p99 < 3.0, "from slot p99 {} ms", a.p99);
    assert!(r.verdict.pass(), "{:?}", r.verdict);
}
