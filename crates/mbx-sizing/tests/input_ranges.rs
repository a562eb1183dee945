//! Property tests: any value of any field, including NaN, infinities, zeros and the integer
//! extremes, gives either an `InputError` naming a field or a report whose every number is finite
//! and a profile within its documented ranges. `size()` never panics.

use mbx_sizing::storage::{DiskClass, Raid};
use mbx_sizing::{size, CpuInput, DatabaseLayout, Method, SizingInput, SizingReport, StorageInput};
use proptest::prelude::*;
use serde_json::Value;

/// The awkward floats: zeros, the smallest and largest, NaN, infinities.
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
            f64::MIN_POSITIVE,
            f64::NAN,
            f64::INFINITY,
            f64::NEG_INFINITY,
            18_446_744_073_709_551_615.0,
        ]),
    ]
}

/// Mostly a value in `lo..=hi` (so that whole inputs are often valid and reach `size()`'s
/// arithmetic), sometimes just outside, sometimes anything at all.
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
        1 => prop::sample::select(vec![0, hi + 1, u64::MAX, u64::MAX / 2, 1 << 32]),
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

fn method() -> impl Strategy<Value = Method> {
    prop::sample::select(Method::ALL.to_vec())
}

fn layout() -> impl Strategy<Value = DatabaseLayout> {
    prop_oneof![
        Just(DatabaseLayout::Auto),
        u32_in(1, 100).prop_map(DatabaseLayout::PerServer),
        u64_in(1, 10_000_000).prop_map(DatabaseLayout::MailboxesPerDatabase),
    ]
}

/// SPECint rate and cores: usually both or neither, sometimes one alone.
fn specint() -> impl Strategy<Value = (Option<f64>, Option<u32>)> {
    prop_oneof![
        4 => Just((None, None)),
        6 => (f64_in(1.0, 1_000_000.0), u32_in(1, 16_384)).prop_map(|(r, c)| (Some(r), Some(c))),
        1 => prop::option::of(f64_in(1.0, 1_000_000.0)).prop_map(|r| (r, None)),
        1 => prop::option::of(u32_in(1, 16_384)).prop_map(|c| (None, c)),
    ]
}

fn input() -> impl Strategy<Value = SizingInput> {
    let deployment = (
        method(),
        u64_in(1, 10_000_000),
        f64_in(1.0, 10_000.0),
        f64_in(1.0, 100_000.0),
        u64_in(1, 102_400),
        u32_in(1, 16),
        u32_in(1, 10_000),
        layout(),
        f64_in(0.0, 1000.0),
        prop::option::of(f64_in(0.0001, 100.0)),
    );
    let cpu = (
        specint(),
        prop::option::of(u32_in(1, 16_384)),
        prop::option::of(f64_in(100.0, 10_000.0)),
        f64_in(1.0, 100.0),
        u32_in(1, 16_384),
    )
        .prop_map(
            |((specint_rate, specint_cores), cores_per_server, cpu_mhz, peak, ca)| CpuInput {
                specint_rate,
                specint_cores,
                cores_per_server,
                cpu_mhz,
                peak_cpu_pct: peak,
                client_access_cores: ca,
            },
        );
    let rest = (
        any::<bool>(),
        any::<bool>(),
        u32_in(1, 365),
        u32_in(0, 3650),
        f64_in(0.0, 1000.0),
    );
    let storage = (
        prop::sample::select(DiskClass::ALL.to_vec()),
        prop::option::of(f64_in(1.0, 1_000_000.0)),
        prop::option::of(f64_in(1.0, 10_000_000.0)),
        prop::sample::select(Raid::ALL.to_vec()),
        prop::sample::select(Raid::ALL.to_vec()),
        f64_in(100.0 / 24.0 + 1e-9, 100.0),
        u32_in(0, 15),
        u32_in(0, 15),
        f64_in(0.0, 14.0),
        u64_in(0, 102_400),
    );
    (deployment, cpu, rest, storage).prop_map(
        |(
            (method, mailboxes, m, kb, quota, copies, servers, layout, headroom, iops),
            cpu,
            (virtualized, multi_role, log_days, dir_days, overhead),
            (class, disk_gb, disk_iops, db_raid, log_raid, peak, lagged, sites, lag, archive),
        )| SizingInput {
            method,
            mailboxes,
            messages_per_day: m,
            message_size_kb: kb,
            quota_mb: quota,
            copies,
            servers,
            layout,
            headroom_pct: headroom,
            iops_per_mailbox: iops,
            cpu,
            virtualized,
            multi_role,
            log_retention_days: log_days,
            deleted_item_retention_days: dir_days,
            data_overhead_pct: overhead,
            storage: StorageInput {
                disk_class: class,
                disk_capacity_gb: disk_gb,
                disk_iops,
                db_raid,
                log_raid,
            },
            peak_hour_log_pct: peak,
            sites: 1 + sites % copies.max(1),
            lagged_copies: lagged % copies.max(1),
            lag_days: lag,
            archive_quota_mb: archive,
        },
    )
}

/// serde_json writes a non-finite f64 as `null`; a `null` is therefore allowed only where the
/// report has an `Option` that is `None`.
fn null_allowed(path: &str, r: &SizingReport) -> bool {
    match path {
        "cores_per_server" => r.cores_per_server.is_none(),
        "cpu_peak_utilization_pct" => r.cpu_peak_utilization_pct.is_none(),
        "client_access_servers" => r.client_access_servers.is_none(),
        "ram_per_active_mailbox_mb" => r.ram_per_active_mailbox_mb.is_none(),
        "ram_for_active_mailboxes_gb" => r.ram_for_active_mailboxes_gb.is_none(),
        "input.iops_per_mailbox" => r.input.iops_per_mailbox.is_none(),
        "input.cpu.specint_rate" => r.input.cpu.specint_rate.is_none(),
        "input.cpu.specint_cores" => r.input.cpu.specint_cores.is_none(),
        "input.cpu.cores_per_server" => r.input.cpu.cores_per_server.is_none(),
        "input.cpu.cpu_mhz" => r.input.cpu.cpu_mhz.is_none(),
        "input.storage.disk_capacity_gb" => r.input.storage.disk_capacity_gb.is_none(),
        "input.storage.disk_iops" => r.input.storage.disk_iops.is_none(),
        "storage_design.database.iops_headroom_pct" => {
            r.storage_design.database.iops_headroom_pct.is_none()
        }
        "storage_design.log.iops_headroom_pct" => r.storage_design.log.iops_headroom_pct.is_none(),
        "server_count.smallest_valid" => r.server_count.smallest_valid.is_none(),
        "server_count.cores_per_server" => r.server_count.cores_per_server.is_none(),
        "server_count.ram_ceiling_gb" => r.server_count.ram_ceiling_gb.is_none(),
        p if p.starts_with("server_count.candidates[") && p.ends_with("].cpu_utilization_pct") => r
            .server_count
            .candidates
            .iter()
            .any(|c| c.cpu_utilization_pct.is_none()),
        _ => false,
    }
}

/// Walks the JSON: every number finite, every `null` an absent option, no text says inf or NaN.
fn check_json(v: &Value, path: &str, r: &SizingReport) -> Result<(), String> {
    match v {
        Value::Null if null_allowed(path, r) => Ok(()),
        Value::Null => Err(format!("{path} is null (a non-finite number?)")),
        Value::Number(n) => match n.as_f64() {
            Some(f) if f.is_finite() => Ok(()),
            _ => Err(format!("{path} = {n} is not finite")),
        },
        Value::String(s) => {
            let bad = s
                .split(|c: char| !c.is_ascii_alphanumeric())
                .any(|w| w == "inf" || w == "NaN");
            if bad {
                Err(format!("{path} says {s:?}"))
            } else {
                Ok(())
            }
        }
        Value::Bool(_) => Ok(()),
        Value::Array(a) => a
            .iter()
            .enumerate()
            .try_for_each(|(i, x)| check_json(x, &format!("{path}[{i}]"), r)),
        Value::Object(o) => o.iter().try_for_each(|(k, x)| {
            let p = if path.is_empty() {
                k.clone()
            } else {
                format!("{path}.{k}")
            };
            check_json(x, &p, r)
        }),
    }
}

fn check_report(r: &SizingReport) -> Result<(), String> {
    let v = serde_json::to_value(r).map_err(|e| format!("does not serialize: {e}"))?;
    check_json(&v, "", r)?;
    let p = &r.profile;
    if !(1..=mbx_sizing::MAX_MAILBOXES).contains(&p.mailboxes) {
        return Err(format!("profile mailboxes {}", p.mailboxes));
    }
    if !(p.iops_per_mailbox.is_finite()
        && p.iops_per_mailbox > 0.0
        && p.iops_per_mailbox <= mbx_sizing::MAX_IOPS_PER_MAILBOX)
    {
        return Err(format!("profile iops_per_mailbox {}", p.iops_per_mailbox));
    }
    if !(1..=mbx_sizing::MAX_QUOTA_MB).contains(&p.mailbox_quota_mb) {
        return Err(format!("profile quota {}", p.mailbox_quota_mb));
    }
    if !(1..=mbx_sizing::MAX_DATABASES_PER_SERVER).contains(&p.databases) {
        return Err(format!("profile databases {}", p.databases));
    }
    if !(1..=mbx_config::MAX_COPIES_PER_DATABASE).contains(&p.copies_per_database) {
        return Err(format!("profile copies {}", p.copies_per_database));
    }
    p.validate(std::path::Path::new("profile.toml"))
        .map_err(|e| format!("profile does not validate: {e}"))?;
    accepted_by_run(r)?;
    if !(1..=mbx_sizing::MAX_DATABASES_PER_SERVER).contains(&r.databases_per_server) {
        return Err(format!("databases_per_server {}", r.databases_per_server));
    }
    if r.databases_total == 0 || r.databases_total == u32::MAX {
        return Err(format!("databases_total {}", r.databases_total));
    }
    if r.client_access_servers == Some(u32::MAX) {
        return Err("client_access_servers saturated".into());
    }
    Ok(())
}

/// The profile `size` writes is accepted by `run`'s validation (the same ranges, one
/// definition), unless `size` said why not: a target outside the 1..=1,000,000 IOPS a run tests.
fn accepted_by_run(r: &SizingReport) -> Result<(), String> {
    let mut cfg = mbx_config::RunConfig::default();
    cfg.apply_profile(&r.profile);
    match cfg.validate() {
        Ok(()) => Ok(()),
        Err(("iops_per_mailbox", _))
            if r.warnings.iter().any(|w| {
                w.code == "target-below-1-iops" || w.code == "target-above-1000000-iops"
            }) =>
        {
            Ok(())
        }
        Err((key, reason)) => Err(format!(
            "run refuses the profile without a warning from size: {key}: {reason}"
        )),
    }
}

fn config() -> ProptestConfig {
    ProptestConfig {
        cases: 5000,
        // Tests leave no files behind: a failure prints its minimal input instead.
        failure_persistence: None,
        ..ProptestConfig::default()
    }
}

proptest! {
    #![proptest_config(config())]

    /// Random values: no panic; an error names a field; a report is finite and in range.
    #[test]
    fn any_input_gives_an_error_or_a_finite_report(input in input()) {
        match size(&input) {
            Ok(r) => {
                prop_assert!(input.validate().is_ok());
                if let Err(e) = check_report(&r) {
                    return Err(TestCaseError::fail(format!("{e}\ninput: {input:?}")));
                }
            }
            Err(e) => {
                prop_assert!(!e.field.is_empty());
                prop_assert!(!e.reason.is_empty());
            }
        }
    }

    /// The documented extremes of every range together: the largest deployment sizes finitely.
    #[test]
    fn extremes_within_ranges_are_finite(
        method in method(),
        mailboxes in prop::sample::select(vec![1u64, 2, 999_999, 10_000_000]),
        m in prop::sample::select(vec![1.0, 10_000.0]),
        kb in prop::sample::select(vec![1.0, 100_000.0]),
        quota in prop::sample::select(vec![1u64, 102_400]),
        servers in prop::sample::select(vec![1u32, 16, 10_000]),
        layout in prop_oneof![
            Just(DatabaseLayout::Auto),
            Just(DatabaseLayout::PerServer(1)),
            Just(DatabaseLayout::PerServer(100)),
            Just(DatabaseLayout::MailboxesPerDatabase(1)),
            Just(DatabaseLayout::MailboxesPerDatabase(10_000_000)),
        ],
        headroom in prop::sample::select(vec![0.0, 1000.0]),
        iops in prop::option::of(prop::sample::select(vec![0.0001, 100.0])),
        spec in prop::option::of(prop::sample::select(vec![(1.0, 1u32), (1_000_000.0, 16_384), (16_384.0, 16_384)])),
        mhz in prop::option::of(prop::sample::select(vec![100.0, 10_000.0])),
        peak in prop::sample::select(vec![1.0, 100.0]),
        cores in prop::sample::select(vec![1u32, 16_384]),
        overhead in prop::sample::select(vec![0.0, 1000.0]),
        flags in any::<(bool, bool)>(),
    ) {
        let mut input = SizingInput::new(method, mailboxes, m, servers);
        input.message_size_kb = kb;
        input.quota_mb = quota;
        input.copies = servers.min(16);
        input.layout = layout;
        input.headroom_pct = headroom;
        input.iops_per_mailbox = iops;
        input.cpu.specint_rate = spec.map(|s| s.0);
        input.cpu.specint_cores = spec.map(|s| s.1);
        input.cpu.cpu_mhz = mhz.or(spec.map(|_| 100.0));
        input.cpu.peak_cpu_pct = peak;
        input.cpu.cores_per_server = Some(cores);
        input.cpu.client_access_cores = cores;
        input.log_retention_days = 365;
        input.deleted_item_retention_days = 3650;
        input.data_overhead_pct = overhead;
        (input.virtualized, input.multi_role) = flags;
        prop_assert_eq!(input.validate(), Ok(()));
        match size(&input) {
            Ok(r) => {
                if let Err(e) = check_report(&r) {
                    return Err(TestCaseError::fail(format!("{e}\ninput: {input:?}")));
                }
            }
            // The only refusals left within the ranges are combinations: too many databases
            // per server, or IOPS with headroom above what a profile accepts.
            Err(e) => prop_assert!(
                ["mailboxes_per_database", "iops_per_mailbox", "headroom_pct"].contains(&e.field),
                "{e}"
            ),
        }
    }
}

/// The inputs issue 8 found printing `inf` or writing 4,294,967,295 databases are refused,
/// each naming the field to change.
#[test]
fn reported_inputs_are_refused_naming_the_field() {
    let base = || SizingInput::new(Method::Exchange2013, 1000, 150.0, 2);
    type Change = Box<dyn Fn(&mut SizingInput)>;
    let cases: Vec<(&str, Change)> = vec![
        ("mailboxes", Box::new(|i| i.mailboxes = u64::MAX)),
        (
            "messages_per_day",
            Box::new(|i| i.messages_per_day = 1e-300),
        ),
        ("messages_per_day", Box::new(|i| i.messages_per_day = 1e300)),
        ("message_size_kb", Box::new(|i| i.message_size_kb = 1e300)),
        (
            "iops_per_mailbox",
            Box::new(|i| i.iops_per_mailbox = Some(1e308)),
        ),
        (
            "iops_per_mailbox",
            Box::new(|i| i.iops_per_mailbox = Some(1e-308)),
        ),
        ("headroom_pct", Box::new(|i| i.headroom_pct = 1e300)),
        (
            "data_overhead_pct",
            Box::new(|i| i.data_overhead_pct = 1e300),
        ),
        ("servers", Box::new(|i| i.servers = u32::MAX)),
        (
            "specint_rate",
            Box::new(|i| {
                i.cpu.specint_rate = Some(1e-300);
                i.cpu.specint_cores = Some(1);
            }),
        ),
        ("cpu_mhz", Box::new(|i| i.cpu.cpu_mhz = Some(1e-300))),
        ("peak_cpu_pct", Box::new(|i| i.cpu.peak_cpu_pct = 1e-300)),
        (
            "mailboxes_per_database",
            Box::new(|i| {
                i.mailboxes = 10_000_000;
                i.layout = DatabaseLayout::MailboxesPerDatabase(1);
            }),
        ),
        (
            "iops_per_mailbox",
            Box::new(|i| {
                i.iops_per_mailbox = Some(100.0);
                i.headroom_pct = 20.0;
            }),
        ),
    ];
    for (field, set) in cases {
        let mut i = base();
        set(&mut i);
        let e = size(&i).expect_err(field);
        assert_eq!(e.field, field, "{e}");
    }
}

/// The largest deployment sizes to at most 100 databases per server (the auto layout stops at
/// Exchange's maximum and says so) instead of 4,294,967,295.
#[test]
fn auto_layout_stops_at_100_databases_per_server() {
    let mut i = SizingInput::new(Method::Exchange2013, 10_000_000, 150.0, 1);
    i.quota_mb = 102_400;
    let r = size(&i).expect("sizes");
    assert_eq!(r.databases_per_server, 100);
    assert_eq!(r.profile.databases, 100);
    assert_eq!(r.profile.mailboxes, 10_000_000);
    assert!(r
        .warnings
        .iter()
        .any(|w| w.code == "databases-per-server-capped"));
    check_report(&r).expect("finite and in range");
}

/// A deployment too small for `run` (target below 1 IOPS) still sizes, and says so.
#[test]
fn tiny_target_is_sized_with_a_warning() {
    let r = size(&SizingInput::new(Method::Exchange2013, 1, 150.0, 1)).expect("sizes");
    assert!(r.target_iops_per_server < 1.0);
    assert!(r.warnings.iter().any(|w| w.code == "target-below-1-iops"));
    check_report(&r).expect("finite and in range");
}

/// `size --copies 4` used to write a profile `run` refused (copies 1..=3 there, 1..=16 in the
/// profile). The profile now says 3, with a warning, and `run` accepts it.
#[test]
fn a_dag_of_four_copies_gives_a_profile_run_accepts() {
    let mut i = SizingInput::new(Method::Exchange2013, 5000, 150.0, 4);
    i.copies = 4;
    let r = size(&i).expect("sizes");
    assert_eq!(r.copies_per_database, 4);
    assert_eq!(r.profile.copies_per_database, 3);
    assert!(r.warnings.iter().any(|w| w.code == "profile-copies-capped"));
    let mut cfg = mbx_config::RunConfig::default();
    cfg.apply_profile(&r.profile);
    assert_eq!(cfg.validate(), Ok(()));
    check_report(&r).expect("finite, in range, accepted by run");
}
