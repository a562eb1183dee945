//! `samples.jsonl`: one [`Sample`] per sample interval, appended as the test runs. The engine
//! writes these types and the report reads them back, so a key cannot drift on one side only.
//!
//! Keys (docs/results.md lists them; a test checks the list): a sample has `host`, `instances`,
//! `interval_s`, `phase` and `timestamp`; each instance `bdm_reads_per_s`, `cache_fill`,
//! `db_read_avg_bytes`, `db_read_avg_latency_ms`, `db_reads_per_s`, `db_write_avg_bytes`,
//! `db_write_avg_latency_ms`, `db_writes_per_s`, `log_reads_per_s`, `log_write_avg_bytes`,
//! `log_write_avg_latency_ms`, `log_writes_per_s`, `name`, `page_fault_stalls_per_s` and
//! `transactions_per_s`; the host `available_mb`, `cpu_pct` and `page_fault_stalls_per_s`.
//!
//! Fields are declared in alphabetical order because that is the order in which samples were
//! written before these types existed (through `serde_json::Value`, which sorts keys): files are
//! byte-identical across the change.
//!
//! Reading is as tolerant as the untyped reader was: every key may be missing (every type here is
//! `#[serde(default)]`, so a key added in a later version never makes an older file unreadable;
//! every key above has in fact been written since the first version, dc53999), a missing figure
//! and one written as `null` (serde_json's spelling of NaN or infinity) read as 0, and unknown
//! keys are ignored. What the types add: both sides name the same fields, so a key cannot drift
//! on one side only, and a value of the wrong type is an error, not a silent 0.

use serde::{Deserialize, Deserializer, Serialize};

/// `null` (a non-finite figure, as serde_json writes it) as 0.
fn null_as_zero<'de, D: Deserializer<'de>>(d: D) -> Result<f64, D::Error> {
    Ok(Option::<f64>::deserialize(d)?.unwrap_or(0.0))
}

/// One line of samples.jsonl: the figures of one sample interval.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, Default)]
#[serde(default)]
pub struct Sample {
    /// Host counters over the interval.
    pub host: SampleHost,
    /// One entry per database instance.
    pub instances: Vec<SampleInstance>,
    /// Length of the interval, seconds.
    #[serde(deserialize_with = "null_as_zero")]
    pub interval_s: f64,
    /// Open-loop pacing over the interval (`--pacing open`); absent in closed-loop runs.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub pacing: Option<SamplePacing>,
    /// The phase the interval belongs to ("measure").
    pub phase: String,
    /// End of the interval, RFC 3339 (UTC).
    pub timestamp: String,
}

/// Open-loop pacing over a sample interval: how far the storage (or the sessions) fell behind
/// the arrivals.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, Default)]
#[serde(default)]
pub struct SamplePacing {
    /// Transactions that arrived in the interval.
    pub arrived: u64,
    /// Most arrivals waiting for a session at once during the interval.
    pub backlog_max: u64,
    /// Arrivals dropped in the interval: they waited longer than `config.max_backlog_s`.
    pub dropped: u64,
    /// Transactions started in the interval more than `pacing.late_threshold_ms` after their
    /// arrival.
    pub late: u64,
    /// Transactions started in the interval.
    pub started: u64,
}

/// One instance's rates and average latencies over a sample interval.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, Default)]
#[serde(default)]
pub struct SampleInstance {
    /// Background database maintenance reads per second.
    #[serde(deserialize_with = "null_as_zero")]
    pub bdm_reads_per_s: f64,
    /// Database cache in use, fraction of its maximum.
    #[serde(deserialize_with = "null_as_zero")]
    pub cache_fill: f64,
    /// Average bytes per transactional database read.
    #[serde(deserialize_with = "null_as_zero")]
    pub db_read_avg_bytes: f64,
    /// Average transactional database read latency, ms.
    #[serde(deserialize_with = "null_as_zero")]
    pub db_read_avg_latency_ms: f64,
    /// Transactional database reads per second.
    #[serde(deserialize_with = "null_as_zero")]
    pub db_reads_per_s: f64,
    /// Average bytes per database write.
    #[serde(deserialize_with = "null_as_zero")]
    pub db_write_avg_bytes: f64,
    /// Average database write latency, ms.
    #[serde(deserialize_with = "null_as_zero")]
    pub db_write_avg_latency_ms: f64,
    /// Database writes per second.
    #[serde(deserialize_with = "null_as_zero")]
    pub db_writes_per_s: f64,
    /// Log reads (replication) per second.
    #[serde(deserialize_with = "null_as_zero")]
    pub log_reads_per_s: f64,
    /// Average bytes per log write.
    #[serde(deserialize_with = "null_as_zero")]
    pub log_write_avg_bytes: f64,
    /// Average log write latency, ms.
    #[serde(deserialize_with = "null_as_zero")]
    pub log_write_avg_latency_ms: f64,
    /// Log writes per second.
    #[serde(deserialize_with = "null_as_zero")]
    pub log_writes_per_s: f64,
    /// Instance name ("Instance<pid>.<n>").
    pub name: String,
    /// Database page fault stalls per second.
    #[serde(deserialize_with = "null_as_zero")]
    pub page_fault_stalls_per_s: f64,
    /// Transactions per second.
    #[serde(deserialize_with = "null_as_zero")]
    pub transactions_per_s: f64,
}

impl SampleInstance {
    /// Transactional IOPS: database reads + writes per second.
    pub fn transactional_iops(&self) -> f64 {
        self.db_reads_per_s + self.db_writes_per_s
    }

    /// Database and log throughput, MB (10^6 bytes) per second.
    pub fn throughput_mb_per_s(&self) -> f64 {
        (self.db_reads_per_s * self.db_read_avg_bytes
            + self.db_writes_per_s * self.db_write_avg_bytes
            + self.log_writes_per_s * self.log_write_avg_bytes)
            / 1e6
    }
}

/// Host counters over a sample interval.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize, Default)]
#[serde(default)]
pub struct SampleHost {
    /// Available memory, MB.
    #[serde(deserialize_with = "null_as_zero")]
    pub available_mb: f64,
    /// CPU busy, percent of all cores.
    #[serde(deserialize_with = "null_as_zero")]
    pub cpu_pct: f64,
    /// Database page fault stalls per second, all instances.
    #[serde(deserialize_with = "null_as_zero")]
    pub page_fault_stalls_per_s: f64,
}
