//! Per-mailbox and per-server formulas of the published methods (docs/sizing.md).
//!
//! Each function is one formula, named after what it computes, with the source in its doc comment.
//! `m` is messages sent + received per mailbox per day; `kb` the average message size in KB.

use crate::Method;

/// Rounds half away from zero to `decimals` places, robust to binary representation
/// (0.1005 is stored as 0.10049999...; Excel's ROUND, which the published tables use, gives 0.101).
pub fn round_half_up(x: f64, decimals: i32) -> f64 {
    let f = 10f64.powi(decimals);
    (x * f * (1.0 + 1e-12)).round() / f
}

/// Excel's ROUNDUP to an integer, ignoring floating-point noise just above an integer.
pub fn round_up(x: f64) -> f64 {
    (x - 1e-9).ceil()
}

/// Transactional IOPS per mailbox copy.
/// - 2013 calculator (2016 and 2019 keep it): m x 0.00067 (active or passive copy).
/// - Exchange 2010 table: m x 0.001 with DAG copies, m x 0.0012 standalone.
pub fn iops_per_mailbox(method: Method, m: f64, copies: u32) -> f64 {
    if method.is_calculator() {
        m * 0.00067
    } else if copies > 1 {
        m * 0.001
    } else {
        m * 0.0012
    }
}

/// Database cache per mailbox in MB: 3 MB per 50 messages in both the 2013 calculator and the
/// Exchange 2010 table (150 -> 9 MB).
pub fn db_cache_mb_per_mailbox(m: f64) -> f64 {
    m * 3.0 / 50.0
}

/// RAM per active mailbox in MB (2013 calculator): the ESE cache is 25% of RAM, so 4 x cache.
pub fn ram_per_active_mailbox_mb(m: f64) -> f64 {
    4.0 * db_cache_mb_per_mailbox(m)
}

/// Megacycles per active mailbox, mailbox role (plus Client Access when multi-role in 2013).
/// - 2013: m x 0.0425; multi-role after SP1: x 1.375 (Client Access share is 0.375 x active).
/// - 2016 (and 2019, which publishes no new figure): m x 0.0597; always multi-role.
/// - 2010 / VMware guide: m / 50 (150 -> 3).
pub fn megacycles_active(method: Method, m: f64, multi_role: bool) -> f64 {
    match method {
        Method::Exchange2013 => {
            let mailbox_role = m * 0.0425;
            if multi_role {
                mailbox_role * 1.375
            } else {
                mailbox_role
            }
        }
        Method::Exchange2016 | Method::Exchange2019 | Method::ExchangeSe => m * 0.0597,
        Method::Exchange2010Vmware => m / 50.0,
    }
}

/// Megacycles per passive mailbox copy.
/// - 2013: m x 0.0137; 2016/2019: m x 0.014; 2010: 15% of the active figure.
pub fn megacycles_passive(method: Method, m: f64) -> f64 {
    match method {
        Method::Exchange2013 => m * 0.0137,
        Method::Exchange2016 | Method::Exchange2019 | Method::ExchangeSe => m * 0.014,
        Method::Exchange2010Vmware => 0.15 * megacycles_active(method, m, false),
    }
}

/// Client Access megacycles per active mailbox when Client Access runs on separate servers
/// (2013 only): 0.375 x the mailbox-role active figure.
pub fn megacycles_client_access(m: f64) -> f64 {
    m * 0.0425 * 0.375
}

/// The per-core speed (megacycles) of a processor from its SPECint_rate2006 result.
/// - 2013/2016/2019 calculator: (SPECint_rate2006 / cores) x 2000 / 33.75.
/// - 2010 / VMware guide: (SPECint_rate2006 / cores) x platform MHz / 18.75
///   (T: 70 x 2500 / 18.75 = 9,333).
pub fn megacycles_per_core(method: Method, specint_per_core: f64, cpu_mhz: f64) -> f64 {
    if method.is_calculator() {
        specint_per_core * 2000.0 / 33.75
    } else {
        specint_per_core * cpu_mhz / 18.75
    }
}

/// Transaction log files (1 MB) per mailbox per day: (m / 5) x MROUND(kb / 78.947, 0.1).
pub fn logs_per_mailbox_per_day(m: f64, kb: f64) -> f64 {
    (m / 5.0) * round_half_up(kb / 78.947, 1)
}

/// Mailbox size on disk in MB (2013 calculator):
/// `ROUNDUP(quota + MIN(m x kb/1024 x retention days + 0.012 x quota + 0.03 x quota, 30720) +
/// m x kb/1024)`. The three terms are deleted-item retention, single item recovery and calendar
/// version storage ("dumpster", capped at 30 GB); the last is white space (one day of mail).
pub fn mailbox_size_on_disk_mb(quota_mb: f64, m: f64, kb: f64, retention_days: f64) -> f64 {
    let daily_mb = m * kb / 1024.0;
    let dumpster = (daily_mb * retention_days + 0.012 * quota_mb + 0.03 * quota_mb).min(30720.0);
    round_up(quota_mb + dumpster + daily_mb)
}

/// Archive mailbox size on disk in MB: the archive quota plus the same single item recovery (1.2%)
/// and calendar version storage (3%) shares of quota the primary mailbox carries; no white space
/// or deleted-item churn, since no mail is delivered to an archive. An assumption in the
/// calculator's spirit (docs/sizing.md); 0 without archives.
pub fn archive_size_on_disk_mb(archive_quota_mb: f64) -> f64 {
    if archive_quota_mb <= 0.0 {
        return 0.0;
    }
    round_up(archive_quota_mb * (1.0 + 0.012 + 0.03))
}

/// Minimum server RAM in GB by the number of databases hosted (2013 calculator).
pub fn min_ram_gb_by_database_count(databases: u32) -> f64 {
    match databases {
        0..=10 => 8.0,
        11..=20 => 10.0,
        21..=30 => 12.0,
        31..=40 => 14.0,
        _ => 16.0,
    }
}

/// Rounds a RAM figure up to a configuration a server can have (2013 calculator):
/// 8 GB steps below 32 GB, 16 GB steps from 32 GB, 32 GB steps from 64 GB.
pub fn round_ram_gb(gb: f64) -> f64 {
    let step = if gb > 64.0 {
        32.0
    } else if gb > 32.0 {
        16.0
    } else {
        8.0
    };
    (round_up(gb / step) * step).max(8.0)
}

/// Exchange 2010 / VMware guide: server RAM that provides a given database cache, interpolated
/// linearly from the guide's 128 GB row (92 GB of cache), as T does: 144 / 92 x 128 = 200 GB.
pub fn ram_gb_for_cache_2010(cache_gb: f64) -> f64 {
    cache_gb / 92.0 * 128.0
}

/// Recommended maximum RAM per server in GB, where Microsoft publishes one.
pub fn ram_ceiling_gb(method: Method) -> Option<f64> {
    match method {
        Method::Exchange2013 => Some(96.0),
        Method::Exchange2016 => Some(192.0),
        Method::Exchange2019 | Method::ExchangeSe => Some(256.0),
        Method::Exchange2010Vmware => None,
    }
}

/// Recommended maximum cores per server (Microsoft's preferred architecture guidance:
/// 24 for 2013 and 2016, 48 for 2019). Not stated in the seed papers: a default, documented.
pub fn core_ceiling(method: Method) -> Option<u32> {
    match method {
        Method::Exchange2013 | Method::Exchange2016 => Some(24),
        Method::Exchange2019 | Method::ExchangeSe => Some(48),
        Method::Exchange2010Vmware => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn close(a: f64, b: f64, tol: f64) -> bool {
        (a - b).abs() <= tol
    }

    /// sizing-model.md section 1: the published (rounded to 3 places) IOPS table.
    #[test]
    fn iops_table_2013() {
        let table = [
            (50.0, 0.034),
            (100.0, 0.067),
            (150.0, 0.101),
            (200.0, 0.134),
            (250.0, 0.168),
            (300.0, 0.201),
            (500.0, 0.335),
        ];
        for (m, published) in table {
            let v = iops_per_mailbox(Method::Exchange2013, m, 2);
            assert_eq!(round_half_up(v, 3), published, "{m} messages");
            assert_eq!(iops_per_mailbox(Method::Exchange2016, m, 1), v);
        }
        assert!(close(
            iops_per_mailbox(Method::Exchange2013, 150.0, 1),
            0.1005,
            1e-12
        ));
    }

    #[test]
    fn iops_table_2010() {
        let v = |m, c| iops_per_mailbox(Method::Exchange2010Vmware, m, c);
        assert!(close(v(150.0, 1), 0.18, 1e-12));
        assert!(close(v(150.0, 2), 0.15, 1e-12));
        assert!(close(v(50.0, 2), 0.05, 1e-12));
    }

    #[test]
    fn cache_and_ram_tables() {
        assert_eq!(db_cache_mb_per_mailbox(150.0), 9.0);
        assert_eq!(db_cache_mb_per_mailbox(50.0), 3.0);
        assert_eq!(ram_per_active_mailbox_mb(100.0), 24.0);
        assert_eq!(ram_per_active_mailbox_mb(200.0), 48.0);
        assert_eq!(ram_per_active_mailbox_mb(300.0), 72.0);
    }

    #[test]
    fn megacycle_tables() {
        let r2 = |x| round_half_up(x, 2);
        assert_eq!(
            r2(megacycles_active(Method::Exchange2013, 150.0, false)),
            6.38
        );
        assert_eq!(r2(megacycles_passive(Method::Exchange2013, 150.0)), 2.06);
        assert_eq!(
            r2(megacycles_active(Method::Exchange2016, 100.0, false)),
            5.97
        );
        assert_eq!(r2(megacycles_passive(Method::Exchange2016, 100.0)), 1.40);
        assert_eq!(
            megacycles_active(Method::Exchange2010Vmware, 150.0, false),
            3.0
        );
        assert!(close(
            megacycles_passive(Method::Exchange2010Vmware, 150.0),
            0.45,
            1e-12
        ));
        // Multi-role 2013 adds the Client Access share (0.375 x active).
        let single = megacycles_active(Method::Exchange2013, 150.0, false);
        let multi = megacycles_active(Method::Exchange2013, 150.0, true);
        assert!(close(
            multi - single,
            megacycles_client_access(150.0),
            1e-12
        ));
    }

    #[test]
    fn megacycles_per_core_tintri() {
        // T: 70 x 2500 / 18.75 = 9,333.
        let v = megacycles_per_core(Method::Exchange2010Vmware, 1120.0 / 16.0, 2500.0);
        assert_eq!(v.round(), 9333.0);
        // 2013: a core of the 33.75 baseline is 2,000 megacycles.
        assert_eq!(
            megacycles_per_core(Method::Exchange2013, 33.75, 0.0),
            2000.0
        );
    }

    #[test]
    fn log_generation() {
        assert_eq!(logs_per_mailbox_per_day(150.0, 75.0), 30.0);
        assert!(close(
            logs_per_mailbox_per_day(150.0, 150.0),
            1.9 * 30.0,
            1e-9
        ));
    }

    /// T: 2048 + (153.81 + 24.58 + 61.44) + 10.99 = 2,299 MB.
    #[test]
    fn mailbox_size_tintri() {
        assert_eq!(mailbox_size_on_disk_mb(2048.0, 150.0, 75.0, 14.0), 2299.0);
        // The dumpster is capped at 30 GB for very large quotas.
        let big = mailbox_size_on_disk_mb(100.0 * 1024.0 * 10.0, 150.0, 75.0, 14.0);
        assert_eq!(big, round_up(1_024_000.0 + 30720.0 + 150.0 * 75.0 / 1024.0));
    }

    #[test]
    fn archive_size() {
        assert_eq!(archive_size_on_disk_mb(0.0), 0.0);
        // 2,048 x 1.042 = 2,134.016 -> 2,135.
        assert_eq!(archive_size_on_disk_mb(2048.0), 2135.0);
    }

    #[test]
    fn ram_rounding_steps() {
        assert_eq!(round_ram_gb(5.0), 8.0);
        assert_eq!(round_ram_gb(17.0), 24.0);
        assert_eq!(round_ram_gb(33.0), 48.0);
        assert_eq!(round_ram_gb(64.0), 64.0);
        assert_eq!(round_ram_gb(65.0), 96.0);
        assert_eq!(round_ram_gb(120.0), 128.0);
        assert_eq!(round_ram_gb(236.0), 256.0);
        assert_eq!(min_ram_gb_by_database_count(10), 8.0);
        assert_eq!(min_ram_gb_by_database_count(11), 10.0);
        assert_eq!(min_ram_gb_by_database_count(41), 16.0);
    }

    /// T: 144 / 92 x 128 = 200 GB.
    #[test]
    fn ram_2010_tintri() {
        assert_eq!(ram_gb_for_cache_2010(144.0).round(), 200.0);
    }

    #[test]
    fn rounding_is_robust() {
        assert_eq!(round_half_up(0.1005, 3), 0.101);
        assert_eq!(round_half_up(0.1005 * 1.2, 2), 0.12);
        assert_eq!(round_half_up(0.2, 2), 0.2);
        assert_eq!(round_up(2298.8), 2299.0);
        assert_eq!(round_up(2299.0), 2299.0);
    }
}
