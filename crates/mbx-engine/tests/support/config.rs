//! The small Performance configuration the simulated-device tests share.

use mbx_config::RunConfig;

/// 100 IOPS (100 mailboxes at 1 IOPS) on one database for `duration_s`, pages dirty for at most
/// 1 s, and samples often enough for the maximum-latency checks to judge, as `run` chooses them
/// ([`mbx_config::sample_interval_for`]).
pub fn config(duration_s: f64) -> RunConfig {
    let mut cfg = RunConfig::default();
    cfg.profile.mailboxes = 100;
    cfg.profile.iops_per_mailbox = 1.0;
    cfg.profile.databases = 1;
    cfg.duration_s = duration_s;
    cfg.sample_interval_s =
        mbx_config::sample_interval_for(duration_s, cfg.thresholds.max_latency_errors);
    cfg.cache.max_dirty_age_s = 1.0;
    cfg
}
