//! Raw I/O benchmark (`mbxstress iobench`): fio-like jobs through the same queues the store uses,
//! for calibrating mbxstress against a device and against fio.

use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use serde::Serialize;

use crate::{
    open_queue, platform, AlignedBuf, EngineKind, IoError, IoFile, IoOp, IoRequest,
    LatencyHistogram, OpenMode, Percentiles,
};

/// Access pattern (fio's `--rw`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum RwMode {
    /// Sequential reads.
    Read,
    /// Sequential writes.
    Write,
    /// Random reads.
    RandRead,
    /// Random writes.
    RandWrite,
    /// Random mix of reads and writes (`rwmixread` percent reads).
    RandRw,
}

impl RwMode {
    /// Parses fio's names.
    pub fn parse(s: &str) -> Option<RwMode> {
        Some(match s {
            "read" => RwMode::Read,
            "write" => RwMode::Write,
            "randread" => RwMode::RandRead,
            "randwrite" => RwMode::RandWrite,
            "randrw" => RwMode::RandRw,
            _ => return None,
        })
    }

    /// True if the mode writes.
    pub fn writes(self) -> bool {
        !matches!(self, RwMode::Read | RwMode::RandRead)
    }

    fn random(self) -> bool {
        matches!(self, RwMode::RandRead | RwMode::RandWrite | RwMode::RandRw)
    }
}

/// What to run.
#[derive(Debug, Clone, Serialize)]
pub struct BenchSpec {
    /// The file (created and laid out if missing).
    pub file: PathBuf,
    /// Bytes of the file used.
    pub size: u64,
    /// Pattern.
    pub rw: RwMode,
    /// Percent reads for `randrw`.
    pub rwmixread: u8,
    /// Block size.
    pub bs: usize,
    /// Requests in flight per job.
    pub iodepth: usize,
    /// Jobs (threads, each with its own queue and file handle).
    pub numjobs: usize,
    /// Measured time.
    pub runtime: Duration,
    /// Backend.
    pub engine: EngineKind,
    /// O_DIRECT.
    pub direct: bool,
}

/// Totals of one direction.
#[derive(Debug, Clone, Serialize, Default)]
pub struct StreamResult {
    /// Requests completed.
    pub ios: u64,
    /// Bytes transferred.
    pub bytes: u64,
    /// Requests per second.
    pub iops: f64,
    /// MiB per second.
    pub mib_per_s: f64,
    /// Completion latency percentiles, ms.
    pub latency_ms: Percentiles,
}

/// The benchmark's result (`mbxstress iobench --json`).
#[derive(Debug, Clone, Serialize)]
pub struct BenchResult {
    /// What ran.
    pub spec: BenchSpec,
    /// Backend actually used.
    pub engine: &'static str,
    /// Seconds measured.
    pub elapsed_s: f64,
    /// Reads.
    pub read: StreamResult,
    /// Writes.
    pub write: StreamResult,
    /// Reads + writes per second.
    pub total_iops: f64,
    /// User CPU seconds of the process during the run.
    pub cpu_user_s: f64,
    /// System CPU seconds of the process during the run.
    pub cpu_system_s: f64,
    /// CPU microseconds (user + system) per request.
    pub cpu_us_per_io: f64,
}

/// Xorshift for offsets and the read/write choice.
struct Rng(u64);
impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }
}

/// Errors of the benchmark.
#[derive(Debug, thiserror::Error)]
pub enum BenchError {
    /// An I/O error.
    #[error(transparent)]
    Io(#[from] IoError),
    /// The request cannot be run as given (the user can fix it).
    #[error("{0}")]
    Invalid(String),
}

/// Checks the spec, and lays the file out if needed: a missing file is created and filled with
/// random data (as fio does); an existing file is only written with `force`.
pub fn prepare_file(spec: &BenchSpec, force: bool) -> Result<(), BenchError> {
    if spec.bs == 0 || spec.bs % crate::ALIGN != 0 {
        return Err(BenchError::Invalid(format!(
            "--bs must be a multiple of 4 KiB, got {} bytes",
            spec.bs
        )));
    }
    if spec.size < spec.bs as u64 * spec.numjobs.max(1) as u64 {
        return Err(BenchError::Invalid(format!(
            "--size {} is smaller than --bs x --numjobs",
            spec.size
        )));
    }
    if spec.rwmixread > 100 {
        return Err(BenchError::Invalid("--rwmixread must be 0..=100".into()));
    }
    let exists = spec.file.exists();
    if exists && platform::is_block_device(&spec.file).unwrap_or(false) && !force {
        return Err(BenchError::Invalid(format!(
            "{} is a block device; pass --force to benchmark it{}",
            spec.file.display(),
            if spec.rw.writes() {
                " (its contents will be overwritten)"
            } else {
                ""
            }
        )));
    }
    let current = std::fs::metadata(&spec.file).map(|m| m.len()).unwrap_or(0);
    if exists && spec.rw.writes() && !force {
        return Err(BenchError::Invalid(format!(
            "{} exists and --rw {:?} would overwrite it; pass --force, or give a new --file",
            spec.file.display(),
            spec.rw
        )));
    }
    if exists && current >= spec.size {
        return Ok(());
    }
    if exists && !force {
        return Err(BenchError::Invalid(format!(
            "{} has {current} bytes, less than --size {}; pass --force to extend it, or a smaller --size",
            spec.file.display(),
            spec.size
        )));
    }
    if let Some(dir) = spec.file.parent().filter(|d| !d.as_os_str().is_empty()) {
        std::fs::create_dir_all(dir).map_err(|e| IoError::new("create directory", dir, e))?;
        let free =
            platform::free_space(dir).map_err(|e| IoError::new("query free space of", dir, e))?;
        if spec.size - current > free {
            return Err(BenchError::Invalid(format!(
                "not enough free space for --size {} in {} ({} bytes available)",
                spec.size,
                dir.display(),
                free
            )));
        }
    }
    let f = IoFile::open(
        &spec.file,
        OpenMode {
            direct: spec.direct,
            write_through: false,
            write: true,
            create: true,
        },
    )?;
    // Fill with random data in 1 MiB writes (the tail in bs-aligned pieces).
    let chunk = 1 << 20;
    let mut buf = AlignedBuf::zeroed(chunk);
    let mut rng = Rng(0x1234_5678_9abc_def1);
    let mut off = current - current % crate::ALIGN as u64;
    while off < spec.size {
        for c in buf.as_mut_slice().chunks_exact_mut(8) {
            c.copy_from_slice(&rng.next().to_le_bytes());
        }
        let n = (spec.size - off).min(chunk as u64) as usize;
        let n = n.div_ceil(crate::ALIGN) * crate::ALIGN;
        f.write_all_at(&buf.as_slice()[..n], off)?;
        off += n as u64;
    }
    f.sync_all()?;
    Ok(())
}

/// Runs the benchmark (the file must be prepared). `cancel` stops it early.
pub fn run(spec: &BenchSpec, cancel: &AtomicBool) -> Result<BenchResult, BenchError> {
    let jobs = spec.numjobs.max(1);
    let (u0, s0) = platform::cpu_times();
    let started = Instant::now();
    let deadline = started + spec.runtime;
    let results: Vec<Result<JobTotals, BenchError>> = std::thread::scope(|s| {
        let handles: Vec<_> = (0..jobs)
            .map(|j| s.spawn(move || run_job(spec, j, deadline, cancel)))
            .collect();
        handles
            .into_iter()
            .map(|h| {
                h.join()
                    .unwrap_or_else(|_| Err(BenchError::Invalid("a benchmark job panicked".into())))
            })
            .collect()
    });
    let elapsed = started.elapsed().as_secs_f64();
    let (u1, s1) = platform::cpu_times();
    let mut total = JobTotals::new();
    let mut engine = spec.engine.name();
    for r in results {
        let r = r?;
        engine = r.engine;
        total.merge(&r);
    }
    let stream = |ios: u64, bytes: u64, h: &LatencyHistogram| StreamResult {
        ios,
        bytes,
        iops: ios as f64 / elapsed,
        mib_per_s: bytes as f64 / elapsed / (1 << 20) as f64,
        latency_ms: h.percentiles(),
    };
    let read = stream(total.read_ios, total.read_bytes, &total.read_lat);
    let write = stream(total.write_ios, total.write_bytes, &total.write_lat);
    let ios = total.read_ios + total.write_ios;
    let (cpu_user_s, cpu_system_s) = (u1 - u0, s1 - s0);
    Ok(BenchResult {
        spec: spec.clone(),
        engine,
        elapsed_s: elapsed,
        total_iops: ios as f64 / elapsed,
        read,
        write,
        cpu_user_s,
        cpu_system_s,
        cpu_us_per_io: if ios == 0 {
            0.0
        } else {
            (cpu_user_s + cpu_system_s) * 1e6 / ios as f64
        },
    })
}

struct JobTotals {
    read_ios: u64,
    read_bytes: u64,
    write_ios: u64,
    write_bytes: u64,
    read_lat: LatencyHistogram,
    write_lat: LatencyHistogram,
    engine: &'static str,
}

impl JobTotals {
    fn new() -> Self {
        JobTotals {
            read_ios: 0,
            read_bytes: 0,
            write_ios: 0,
            write_bytes: 0,
            read_lat: LatencyHistogram::new(),
            write_lat: LatencyHistogram::new(),
            engine: "",
        }
    }
    fn merge(&mut self, o: &JobTotals) {
        self.read_ios += o.read_ios;
        self.read_bytes += o.read_bytes;
        self.write_ios += o.write_ios;
        self.write_bytes += o.write_bytes;
        self.read_lat.merge(&o.read_lat);
        self.write_lat.merge(&o.write_lat);
    }
}

fn run_job(
    spec: &BenchSpec,
    job: usize,
    deadline: Instant,
    cancel: &AtomicBool,
) -> Result<JobTotals, BenchError> {
    let file = IoFile::open(
        &spec.file,
        OpenMode {
            direct: spec.direct,
            write_through: false,
            write: spec.rw.writes(),
            create: false,
        },
    )?;
    let files = crate::Files::new(vec![file]);
    let mut q = open_queue(spec.engine, Arc::clone(&files), spec.iodepth.max(1))?;
    let mut t = JobTotals::new();
    t.engine = q.engine_name();
    let blocks = spec.size / spec.bs as u64;
    let jobs = spec.numjobs.max(1) as u64;
    // Sequential jobs each walk their own slice of the file, wrapping around.
    let region = (blocks / jobs).max(1);
    let region_start = job as u64 * region;
    let mut seq = 0u64;
    let mut rng = Rng(0x9E37_79B9_7F4A_7C15 ^ ((job as u64 + 1) << 32) | 1);
    let mut pool: Vec<AlignedBuf> = (0..spec.iodepth.max(1))
        .map(|_| {
            let mut b = AlignedBuf::zeroed(spec.bs);
            for c in b.as_mut_slice().chunks_exact_mut(8) {
                c.copy_from_slice(&rng.next().to_le_bytes());
            }
            b
        })
        .collect();
    let mut done = Vec::with_capacity(spec.iodepth.max(1));
    let mut tag = 0u64;
    let mut stopping = false;
    loop {
        if !stopping && (cancel.load(Ordering::Relaxed) || Instant::now() >= deadline) {
            stopping = true;
        }
        while !stopping && q.in_flight() < q.depth() {
            let Some(buf) = pool.pop() else { break };
            let block = if spec.rw.random() {
                rng.next() % blocks
            } else {
                let b = region_start + seq % region;
                seq += 1;
                b
            };
            let op = match spec.rw {
                RwMode::Read | RwMode::RandRead => IoOp::Read,
                RwMode::Write | RwMode::RandWrite => IoOp::Write,
                RwMode::RandRw => {
                    if rng.next() % 100 < spec.rwmixread as u64 {
                        IoOp::Read
                    } else {
                        IoOp::Write
                    }
                }
            };
            q.submit(IoRequest {
                op,
                file: 0,
                offset: block * spec.bs as u64,
                len: spec.bs,
                buf,
                tag,
            })?;
            tag += 1;
        }
        if q.in_flight() == 0 {
            break;
        }
        done.clear();
        q.reap(1, &mut done)?;
        for c in done.drain(..) {
            let n = c.check(&files)? as u64;
            match c.req.op {
                IoOp::Read => {
                    t.read_ios += 1;
                    t.read_bytes += n;
                    t.read_lat.record(c.latency);
                }
                _ => {
                    t.write_ios += 1;
                    t.write_bytes += n;
                    t.write_lat.record(c.latency);
                }
            }
            pool.push(c.req.buf);
        }
    }
    Ok(t)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn short_randrw_run_counts_both_directions() {
        // Removed with its contents when dropped, also if the test panics.
        let dir = tempfile::Builder::new()
            .prefix("mbx-bench-")
            .tempdir()
            .expect("create scratch dir");
        let spec = BenchSpec {
            file: dir.path().join("bench.dat"),
            size: 4 << 20,
            rw: RwMode::RandRw,
            rwmixread: 70,
            bs: 32768,
            iodepth: 4,
            numjobs: 2,
            runtime: Duration::from_millis(300),
            engine: EngineKind::Sync,
            direct: false,
        };
        prepare_file(&spec, false).expect("layout");
        assert_eq!(std::fs::metadata(&spec.file).expect("stat").len(), 4 << 20);
        let r = run(&spec, &AtomicBool::new(false)).expect("run");
        assert!(r.read.ios > 0 && r.write.ios > 0, "{r:?}");
        let share = r.read.ios as f64 / (r.read.ios + r.write.ios) as f64;
        assert!((0.55..0.85).contains(&share), "read share {share}");
        assert_eq!(r.read.bytes, r.read.ios * 32768);
        assert!(r.read.latency_ms.p50 > 0.0);
        // Writing to an existing file needs --force.
        let err = prepare_file(&spec, false).expect_err("refuse");
        assert!(err.to_string().contains("--force"), "{err}");
    }
}
