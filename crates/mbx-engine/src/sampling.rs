//! Samples: per-interval figures of every database and the host, emitted as events while the
//! measured phase runs. Host figures are kept as running summaries (memory does not grow with
//! the length of the test).

use std::time::Instant;

use crate::db::Database;
use crate::result::Amm;
use crate::stats::Stream;
use crate::{Observer, RunEvent};

/// Running average / minimum / maximum.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Running {
    sum: f64,
    n: u64,
    min: f64,
    max: f64,
}

impl Default for Running {
    fn default() -> Self {
        Running {
            sum: 0.0,
            n: 0,
            min: f64::INFINITY,
            max: f64::NEG_INFINITY,
        }
    }
}

impl Running {
    pub fn add(&mut self, v: f64) {
        self.sum += v;
        self.n += 1;
        self.min = self.min.min(v);
        self.max = self.max.max(v);
    }

    /// Adds another series' figures (the same interval on another reactor: maxima of maxima).
    pub fn merge(&mut self, o: &Running) {
        self.sum += o.sum;
        self.n += o.n;
        self.min = self.min.min(o.min);
        self.max = self.max.max(o.max);
    }

    /// True when nothing was added.
    pub fn is_empty(&self) -> bool {
        self.n == 0
    }

    pub fn amm(&self) -> Amm {
        if self.n == 0 {
            return Amm::default();
        }
        Amm {
            avg: self.sum / self.n as f64,
            min: self.min,
            max: self.max,
        }
    }
}

/// Host series over the measured phase.
#[derive(Debug, Default)]
pub(crate) struct HostSeries {
    pub cpu_pct: Running,
    pub available_mb: Running,
    pub stalls_per_s: Running,
}

/// Takes one sample over the `secs` since the previous one, emits it and resets the interval
/// counters. The host's counters are read from `machine` only when there is one (one reactor of
/// several reads them; the others leave them zero).
pub(crate) fn sample(
    dbs: &mut [Database],
    host_series: &mut HostSeries,
    observer: &mut dyn Observer,
    timestamp: String,
    secs: f64,
    pacing: Option<crate::result::SamplePacing>,
    machine: Option<&dyn mbx_io::Machine>,
) {
    let secs = secs.max(1e-3);
    let host = match machine {
        Some(m) => crate::host::sample(m),
        None => crate::host::HostSample::default(),
    };
    let mut instances = Vec::new();
    let mut stalls = 0u64;
    for db in dbs.iter_mut() {
        let st = &mut db.stats;
        let c = |s: Stream| st.interval[s as usize];
        let rd = c(Stream::DbRead);
        let lw = c(Stream::LogWrite);
        st.max_sample_avgs.0 = st.max_sample_avgs.0.max(rd.avg_ms());
        st.max_sample_avgs.1 = st.max_sample_avgs.1.max(lw.avg_ms());
        st.maxima[0].add(rd.avg_ms());
        st.maxima[1].add(lw.avg_ms());
        stalls += st.stalls_interval;
        instances.push(crate::result::SampleInstance {
            name: db.spec.name.clone(),
            db_reads_per_s: rd.rate(secs),
            db_writes_per_s: c(Stream::DbWrite).rate(secs),
            db_read_avg_latency_ms: rd.avg_ms(),
            db_write_avg_latency_ms: c(Stream::DbWrite).avg_ms(),
            db_read_avg_bytes: rd.avg_bytes(),
            db_write_avg_bytes: c(Stream::DbWrite).avg_bytes(),
            log_writes_per_s: lw.rate(secs),
            log_write_avg_latency_ms: lw.avg_ms(),
            log_write_avg_bytes: lw.avg_bytes(),
            log_reads_per_s: c(Stream::LogRead).rate(secs),
            bdm_reads_per_s: c(Stream::Bdm).rate(secs),
            transactions_per_s: st.txns_interval as f64 / secs,
            page_fault_stalls_per_s: st.stalls_interval as f64 / secs,
            cache_fill: db.cache.fill(),
        });
        st.reset_interval();
    }
    host_series.cpu_pct.add(host.cpu_pct);
    host_series.available_mb.add(host.available_mb);
    host_series.stalls_per_s.add(stalls as f64 / secs);
    let v = crate::result::Sample {
        timestamp,
        phase: "measure".into(),
        interval_s: secs,
        pacing,
        instances,
        host: crate::result::SampleHost {
            cpu_pct: host.cpu_pct,
            available_mb: host.available_mb,
            page_fault_stalls_per_s: stalls as f64 / secs,
        },
    };
    observer.on_event(RunEvent::Sample(&v));
}

/// When samples are due.
#[derive(Debug)]
pub(crate) struct Sampler {
    pub every: std::time::Duration,
    pub last: Instant,
    pub next: Instant,
}
