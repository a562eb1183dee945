//! Property tests: any value of any `RunConfig` key (NaN, infinities, -0, 1e300, the integer
//! extremes) is refused with the key named, or accepted with every derived value finite and
//! constructible without overflow. `validate()` never panics.

use std::path::PathBuf;
use std::time::Duration;

use mbx_config::{Arrivals, CacheConfig, IoBackend, OpMix, Pacing, Profile, RunConfig, Thresholds};
use proptest::prelude::*;

fn awkward_f64() -> impl Strategy<Value = f64> {
    prop_oneof![
        prop::num::f64::ANY,
        prop::sample::select(vec![
            0.0,
            -0.0,
            1e-300,
            5e-324,
            1e300,
            f64::MAX,
            f64::MIN,
            f64::NAN,
            f64::INFINITY,
            f64::NEG_INFINITY,
            18_446_744_073_709_551_615.0,
        ]),
    ]
}

/// Mostly in `lo..=hi` (so whole configurations are often valid), sometimes anything.
fn f64_in(lo: f64, hi: f64) -> impl Strategy<Value = f64> {
    prop_oneof![
        26 => lo..=hi,
        3 => prop::sample::select(vec![lo, hi]),
        1 => prop::sample::select(vec![lo - 1e-9, hi * (1.0 + 1e-9), hi * 10.0]),
        2 => awkward_f64(),
    ]
}

fn u64_in(lo: u64, hi: u64) -> impl Strategy<Value = u64> {
    prop_oneof![
        26 => lo..=hi,
        3 => prop::sample::select(vec![lo, hi]),
        1 => prop::sample::select(vec![0, hi.saturating_add(1), u64::MAX, 1 << 44]),
        1 => any::<u64>(),
    ]
}

fn u32_in(lo: u32, hi: u32) -> impl Strategy<Value = u32> {
    prop_oneof![
        26 => lo..=hi,
        3 => prop::sample::select(vec![lo, hi]),
        1 => prop::sample::select(vec![0, hi.saturating_add(1), u32::MAX]),
        1 => any::<u32>(),
    ]
}

fn op_mix() -> impl Strategy<Value = OpMix> {
    prop_oneof![
        6 => Just(OpMix::default()),
        // Often sums to 100, as a valid mix must.
        1 => (0..=100u32, 0..=100u32, 0..=100u32, u32_in(0, 100)).prop_map(|(i, d, r, l)| OpMix {
            insert_pct: i,
            delete_pct: d,
            replace_pct: r,
            read_pct: 100u32.saturating_sub(i + d + r),
            lazy_commit_pct: l,
        }),
        1 => any::<(u32, u32, u32, u32, u32)>().prop_map(|(i, d, r, x, l)| OpMix {
            insert_pct: i,
            delete_pct: d,
            replace_pct: r,
            read_pct: x,
            lazy_commit_pct: l,
        }),
    ]
}

fn cache() -> impl Strategy<Value = CacheConfig> {
    (
        u64_in(1, 256),
        u64_in(256, 65_536),
        f64_in(0.0, 10.0),
        f64_in(10.0, 50.0),
        f64_in(0.1, 3600.0),
        f64_in(0.1, 3600.0),
    )
        .prop_map(|(min, max, start, stop, age, ckpt)| CacheConfig {
            min_mb_per_db: min,
            max_mb_per_db: max,
            flush_start_pct: start,
            flush_stop_pct: stop,
            max_dirty_age_s: age,
            checkpoint_interval_s: ckpt,
        })
}

fn thresholds() -> impl Strategy<Value = Thresholds> {
    (
        f64_in(0.0, 1e6),
        f64_in(0.0, 1e6),
        f64_in(0.0, 1e6),
        f64_in(0.0, 1e6),
        f64_in(0.0, 1e6),
        f64_in(0.0, 0.99),
        f64_in(0.0, 86_400.0),
        u32_in(0, 20_000),
    )
        .prop_map(|(a, b, c, d, e, m, h, n)| Thresholds {
            db_read_avg_ms: a,
            db_read_max_ms: b,
            log_write_avg_ms: c,
            log_write_max_ms: d,
            page_fault_stalls_per_s: e,
            iops_margin: m,
            hung_io_s: h,
            max_latency_errors: n,
        })
}

fn config() -> impl Strategy<Value = RunConfig> {
    // Spread over the orders of magnitude, so that the target (their product) is often valid.
    let mailboxes = prop_oneof![
        u64_in(1, 100),
        u64_in(100, 10_000),
        u64_in(10_000, 10_000_000)
    ];
    // IOPS per mailbox: usually one that gives a valid target with these mailboxes.
    let mailboxes_ipm = mailboxes.prop_flat_map(|m| {
        // (m may be out of range itself: 0, u64::MAX.)
        let valid = m.clamp(1, 10_000_000) as f64;
        let lo = 1.0 / valid;
        let hi = (1e6 / valid).min(100.0);
        let ipm = prop_oneof![
            4 => lo..=hi,
            1 => f64_in(1e-6, 1e-3),
            1 => f64_in(1e-3, 1.0),
            1 => f64_in(1.0, 100.0),
        ];
        (Just(m), ipm)
    });
    let numbers = (
        mailboxes_ipm,
        u64_in(1, 102_400),
        u32_in(1, 100),
        u32_in(1, 3),
        u32_in(0, 1024),
        f64_in(1.0, 2_592_000.0),
        f64_in(1.0, 3600.0),
        any::<bool>(),
        f64_in(0.01, 1000.0),
    );
    let rest = (
        prop::sample::select(IoBackend::ALL.to_vec()),
        any::<bool>(),
        prop_oneof![26 => 0u8..=99, 1 => any::<u8>()],
        op_mix(),
        cache(),
        thresholds(),
        any::<u64>(),
        prop_oneof![10 => Just(false), 1 => Just(true)],
        prop::sample::select(Pacing::ALL.to_vec()),
        prop::sample::select(Arrivals::ALL.to_vec()),
        f64_in(0.0, 7200.0),
    );
    (numbers, rest).prop_map(
        |(
            ((mailboxes, ipm), quota, dbs, copies, threads, duration, sample, bdm, bdm_rate),
            (
                engine,
                direct,
                compress,
                op_mix,
                cache,
                thresholds,
                seed,
                no_paths,
                pacing,
                arrivals,
                max_backlog,
            ),
        )| RunConfig {
            profile: Profile {
                mailboxes,
                iops_per_mailbox: ipm,
                mailbox_quota_mb: quota,
                databases: dbs,
                messages_per_day: None,
                message_size_kb: None,
                copies_per_database: copies,
            },
            threads,
            duration_s: duration,
            sample_interval_s: sample,
            bdm,
            bdm_reads_per_s: bdm_rate,
            db_paths: if no_paths {
                vec![]
            } else {
                vec![PathBuf::from("db")]
            },
            log_paths: vec![PathBuf::from("logs")],
            engine,
            direct,
            compressibility_pct: compress,
            circular_logging: true,
            log_files_to_replay: 500,
            op_mix,
            cache,
            thresholds,
            seed,
            continue_on_errors: false,
            tuning: Default::default(),
            pacing,
            arrivals,
            max_backlog_s: max_backlog,
            ..RunConfig::default()
        },
    )
}

/// Everything the engine derives from a valid configuration, computed the checked way.
fn derived(c: &RunConfig) -> Result<(), String> {
    let target = c.target_iops();
    if !(target.is_finite() && (1.0..=1_000_000.0).contains(&target)) {
        return Err(format!("target {target}"));
    }
    if !(1..=1024).contains(&c.sessions()) {
        return Err(format!("sessions {}", c.sessions()));
    }
    for (what, secs) in [
        ("duration_s", c.duration_s),
        ("sample_interval_s", c.sample_interval_s),
        ("cache.max_dirty_age_s", c.cache.max_dirty_age_s),
        ("cache.checkpoint_interval_s", c.cache.checkpoint_interval_s),
        ("1 / bdm_reads_per_s", 1.0 / c.bdm_reads_per_s),
        // The pacing interval of one session at the target rate.
        ("sessions / target", f64::from(c.sessions()) / target),
    ] {
        Duration::try_from_secs_f64(secs).map_err(|e| format!("{what} = {secs}: {e}"))?;
    }
    if c.duration_s > 2_592_000.0 || c.sample_interval_s > 3600.0 {
        return Err("durations out of range".into());
    }
    let total = c
        .total_database_bytes()
        .ok_or("total database bytes overflow")?;
    if total == 0 {
        return Err("no database bytes".into());
    }
    c.cache
        .max_mb_per_db
        .checked_mul(1 << 20)
        .ok_or("cache bytes overflow")?;
    let m = &c.op_mix;
    let sum = [m.insert_pct, m.delete_pct, m.replace_pct, m.read_pct]
        .iter()
        .try_fold(0u32, |a, &v| a.checked_add(v));
    if sum != Some(100) {
        return Err("op mix".into());
    }
    Ok(())
}

/// TOML spells the special floats `nan`, `inf` and `-inf`.
fn toml_float(v: f64) -> String {
    if v.is_nan() {
        "nan".into()
    } else if v.is_infinite() {
        if v > 0.0 { "inf" } else { "-inf" }.into()
    } else {
        format!("{v:e}")
    }
}

proptest! {
    #![proptest_config(ProptestConfig {
        cases: 5000,
        // Tests leave no files behind: a failure prints its minimal input instead.
        failure_persistence: None,
        ..ProptestConfig::default()
    })]

    #[test]
    fn validate_never_panics_and_accepts_only_safe_values(c in config()) {
        match c.validate() {
            Ok(()) => {
                if let Err(e) = derived(&c) {
                    return Err(TestCaseError::fail(format!("{e}\nconfig: {c:?}")));
                }
            }
            Err((key, reason)) => {
                prop_assert!(!key.is_empty());
                prop_assert!(!reason.is_empty());
            }
        }
    }

    /// A `--config` file with any number for a numeric key parses or fails cleanly, then
    /// validates (with safe derived values) or names the key.
    #[test]
    fn config_file_numbers(v in awkward_f64(), key in prop::sample::select(vec![
        "duration_s", "sample_interval_s", "iops_per_mailbox", "bdm_reads_per_s",
    ])) {
        let text = format!("{key} = {}\n", toml_float(v));
        if let Ok(c) = toml::from_str::<RunConfig>(&text) {
            match c.validate() {
                Ok(()) => prop_assert!(derived(&c).is_ok()),
                // A short duration can make the default 15 s sample interval the one refused.
                Err((k, _)) => prop_assert!(k == key || k == "sample_interval_s", "{k}"),
            }
        }
    }
}

/// The values issue 8 found panicking `run` are refused, naming their key.
#[test]
fn reported_values_are_refused_naming_the_key() {
    let key = |f: &dyn Fn(&mut RunConfig)| {
        let mut c = RunConfig::default();
        f(&mut c);
        c.validate().expect_err("must be refused").0
    };
    let one_mailbox = |ipm: f64| {
        move |c: &mut RunConfig| {
            c.profile.mailboxes = 1;
            c.profile.iops_per_mailbox = ipm;
        }
    };
    assert_eq!(key(&one_mailbox(0.02)), "iops_per_mailbox");
    assert_eq!(key(&one_mailbox(1e-300)), "iops_per_mailbox");
    assert_eq!(key(&|c| c.duration_s = 1e300), "duration_s");
    assert_eq!(
        key(&|c| c.duration_s = 18_446_744_073_709_551_615.0),
        "duration_s"
    );
    assert_eq!(key(&|c| c.duration_s = 2_592_001.0), "duration_s");
    assert_eq!(key(&|c| c.sample_interval_s = 1e300), "sample_interval_s");
    assert_eq!(key(&|c| c.sample_interval_s = 3601.0), "sample_interval_s");
    assert_eq!(
        key(&|c| c.cache.max_dirty_age_s = 1e300),
        "cache.max_dirty_age_s"
    );
    assert_eq!(
        key(&|c| c.cache.checkpoint_interval_s = 0.0),
        "cache.checkpoint_interval_s"
    );
    assert_eq!(
        key(&|c| c.cache.max_mb_per_db = u64::MAX),
        "cache.max_mb_per_db"
    );
    assert_eq!(key(&|c| c.bdm_reads_per_s = 1e-300), "bdm_reads_per_s");
    assert_eq!(key(&|c| c.checksum_reads_pct = 101), "checksum_reads_pct");
    assert_eq!(key(&|c| c.profile.mailboxes = u64::MAX), "mailboxes");
    assert_eq!(
        key(&|c| c.thresholds.db_read_avg_ms = 1e300),
        "thresholds.db_read_avg_ms"
    );
    for bad in [0.0, -1.0, f64::NAN, 86_401.0] {
        assert_eq!(
            key(&|c| c.thresholds.hung_io_s = bad),
            "thresholds.hung_io_s"
        );
    }
    assert_eq!(
        key(&|c| {
            c.op_mix.insert_pct = u32::MAX;
            c.op_mix.delete_pct = 2;
        }),
        "op_mix"
    );
    // The largest valid database set fits in u64 bytes.
    let c = RunConfig {
        profile: Profile {
            mailboxes: 10_000_000,
            iops_per_mailbox: 0.1,
            mailbox_quota_mb: 102_400,
            ..Profile::default()
        },
        ..RunConfig::default()
    };
    assert_eq!(c.validate(), Ok(()));
    assert_eq!(
        c.total_database_bytes(),
        Some(10_000_000 * 102_400 * (1 << 20))
    );
}

/// Soft Recovery's log file count: 1..=100,000, the error naming the key.
#[test]
fn log_files_to_replay_has_a_range() {
    let mut c = RunConfig::default();
    assert_eq!(c.log_files_to_replay, 500);
    for (n, ok) in [(0, false), (1, true), (100_000, true), (100_001, false)] {
        c.log_files_to_replay = n;
        match c.validate() {
            Ok(()) => assert!(ok, "{n} accepted"),
            Err((key, msg)) => {
                assert!(!ok, "{n} refused: {msg}");
                assert_eq!(key, "log_files_to_replay");
            }
        }
    }
}
