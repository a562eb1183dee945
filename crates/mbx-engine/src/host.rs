//! Host counters sampled with the workload (Linux equivalents of Jetstress's Windows counters).

use std::sync::Mutex;

/// One reading.
#[derive(Debug, Clone, Copy, Default)]
pub struct HostSample {
    /// CPU busy since the previous reading, percent of all cores.
    pub cpu_pct: f64,
    /// Available memory, MB.
    pub available_mb: f64,
}

static LAST_CPU: Mutex<Option<(u64, u64)>> = Mutex::new(None);

/// Reads the counters of `machine`; the CPU figure covers the time since the previous call.
pub fn sample(machine: &dyn mbx_io::Machine) -> HostSample {
    let now = machine.cpu_ticks();
    let cpu_pct = match (LAST_CPU.lock().ok().and_then(|g| *g), now) {
        (Some((b0, t0)), Some((b1, t1))) if t1 > t0 => (b1 - b0) as f64 / (t1 - t0) as f64 * 100.0,
        _ => 0.0,
    };
    if let Ok(mut g) = LAST_CPU.lock() {
        *g = now;
    }
    HostSample {
        cpu_pct,
        available_mb: machine
            .available_memory_bytes()
            .map(|b| b as f64 / (1 << 20) as f64)
            .unwrap_or(0.0),
    }
}
