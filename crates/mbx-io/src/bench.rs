//! Raw I/O benchmark (`mbxstress iobench`): fio-like jobs through the same queues the store uses,
//! for calibrating mbxstress against a device and against fio.

use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use serde::Serialize;

use crate::seq::{run_pass, ChunkData, PassEnd, SeqOp, SeqPass};
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
    /// Laying out the file was stopped (Ctrl-C) before it was complete.
    #[error("interrupted while laying out {}: {} of {} MiB written; {after}", path.display(), done_bytes >> 20, total_bytes >> 20)]
    Interrupted {
        /// The file or device.
        path: PathBuf,
        /// Bytes written by this run.
        done_bytes: u64,
        /// Bytes this run had to write.
        total_bytes: u64,
        /// What became of the partial file.
        after: &'static str,
    },
}

impl BenchError {
    /// An interruption, saying what became of the partial file; other errors unchanged.
    fn with_after(self, after: &'static str) -> BenchError {
        match self {
            BenchError::Interrupted {
                path,
                done_bytes,
                total_bytes,
                ..
            } => BenchError::Interrupted {
                path,
                done_bytes,
                total_bytes,
                after,
            },
            other => other,
        }
    }
}

/// Largest `--bs`: 64 MiB.
pub const MAX_BS: u64 = 64 << 20;
/// Largest `--iodepth`.
pub const MAX_IODEPTH: usize = 4096;
/// Largest `--numjobs`.
pub const MAX_NUMJOBS: usize = 256;
/// Ceiling of the I/O buffer memory (`--bs` x `--iodepth` x `--numjobs`): 1 GiB, lowered to
/// half the available memory by [`memory_budget`].
pub const MAX_BUFFER_BYTES: u64 = 1 << 30;
/// Largest `--size`: 1 EiB (keeps every offset computation far from overflow).
pub const MAX_SIZE: u64 = 1 << 60;
/// Shortest `--runtime`: a measurement needs time to mean anything.
pub const MIN_RUNTIME: Duration = Duration::from_secs(1);
/// Longest `--runtime`: 30 days.
pub const MAX_RUNTIME: Duration = Duration::from_secs(30 * 86_400);

/// The memory the benchmark's I/O buffers may use: [`MAX_BUFFER_BYTES`], or half the memory
/// available now, whichever is smaller.
pub fn memory_budget() -> u64 {
    platform::available_memory_bytes().map_or(MAX_BUFFER_BYTES, |a| MAX_BUFFER_BYTES.min(a / 2))
}

/// Checks `--bs` (bytes) and converts it: a multiple of 4 KiB from 4 KiB to [`MAX_BS`].
pub fn check_bs(bs: u64) -> Result<usize, BenchError> {
    let align = crate::ALIGN as u64;
    if bs == 0 || !bs.is_multiple_of(align) || bs > MAX_BS {
        return Err(BenchError::Invalid(format!(
            "--bs must be a multiple of 4k from 4k to 64M, got {bs} bytes"
        )));
    }
    usize::try_from(bs)
        .map_err(|_| BenchError::Invalid(format!("--bs {bs} does not fit this platform's memory")))
}

fn mib(bytes: u64) -> String {
    let m = bytes as f64 / (1u64 << 20) as f64;
    if m >= 10.0 {
        format!("{m:.0} MiB")
    } else {
        format!("{m:.2} MiB")
    }
}

impl BenchSpec {
    /// Checks every number against its documented range, with `memory_budget` bytes for the I/O
    /// buffers ([`memory_budget`] in the CLI). Never panics; the error names the flag and the
    /// valid range.
    pub fn validate(&self, memory_budget: u64) -> Result<(), BenchError> {
        let invalid = |m: String| Err(BenchError::Invalid(m));
        let bs = check_bs(u64::try_from(self.bs).unwrap_or(u64::MAX))? as u64;
        if !(1..=MAX_IODEPTH).contains(&self.iodepth) {
            return invalid(format!(
                "--iodepth must be from 1 to {MAX_IODEPTH}, got {}",
                self.iodepth
            ));
        }
        if !(1..=MAX_NUMJOBS).contains(&self.numjobs) {
            return invalid(format!(
                "--numjobs must be from 1 to {MAX_NUMJOBS}, got {}",
                self.numjobs
            ));
        }
        if self.rwmixread > 100 {
            return invalid(format!(
                "--rwmixread must be from 0 to 100, got {}",
                self.rwmixread
            ));
        }
        // Both factors are bounded above, so this cannot overflow; checked all the same.
        let buffers = u64::try_from(self.iodepth)
            .ok()
            .and_then(|d| d.checked_mul(u64::try_from(self.numjobs).ok()?))
            .and_then(|n| n.checked_mul(bs));
        match buffers {
            Some(b) if b <= memory_budget => {}
            _ => {
                return invalid(format!(
                    "--bs x --iodepth x --numjobs ({bs} x {} x {}) needs {} of I/O buffers, more than the budget of {} (1 GiB, or half the available memory if that is less); lower --bs, --iodepth or --numjobs",
                    self.iodepth,
                    self.numjobs,
                    buffers.map_or_else(|| "more than 16 EiB".into(), mib),
                    mib(memory_budget)
                ));
            }
        }
        let min_size = bs * self.numjobs as u64;
        if self.size < min_size || self.size > MAX_SIZE {
            return invalid(format!(
                "--size must be at least --bs x --numjobs ({min_size} bytes) and at most 1 EiB, got {} bytes",
                self.size
            ));
        }
        if self.runtime < MIN_RUNTIME || self.runtime > MAX_RUNTIME {
            return invalid(format!(
                "--runtime must be from 1s to 30 days (720h), got {:.3}s",
                self.runtime.as_secs_f64()
            ));
        }
        Ok(())
    }
}

/// What [`prepare_file`] holds for the benchmark; keep it until [`run`] returns. For a block
/// device it is the exclusive claim that keeps the device from being mounted meanwhile.
#[derive(Debug)]
#[must_use = "dropping it releases the device"]
pub struct PreparedFile {
    _claim: Option<platform::DeviceClaim>,
}

/// Checks the spec, and lays the file out if needed: a missing file is created and filled with
/// random data (as fio does); an existing file is only written with `force`, and a block device
/// only with `force` and if nothing uses it (it stays claimed while the result is held).
/// `cancel` stops the fill: a file this call created is then removed, so that a partial file is
/// never taken for a laid-out one.
pub fn prepare_file(
    spec: &BenchSpec,
    force: bool,
    cancel: &AtomicBool,
) -> Result<PreparedFile, BenchError> {
    spec.validate(memory_budget())?;
    let path = &spec.file;
    let device = platform::is_block_device(path).unwrap_or(false);
    if device {
        if !force {
            return Err(BenchError::Invalid(format!(
                "{} is a block device; pass --force to benchmark it (its contents will be overwritten)",
                path.display()
            )));
        }
        let claim =
            match platform::claim_device(path).map_err(|e| IoError::new("inspect", path, e))? {
                platform::DeviceStatus::InUse(u) => {
                    return Err(BenchError::Invalid(format!(
                        "{} is {u} — --force permits an unused device only",
                        path.display()
                    )))
                }
                platform::DeviceStatus::Unused(c) => Some(c),
                platform::DeviceStatus::NotADevice => None,
            };
        let capacity = IoFile::open(path, OpenMode::read_direct())?.len()?;
        if capacity < spec.size {
            return Err(BenchError::Invalid(format!(
                "--size {} is larger than {} ({capacity} bytes); give --size {capacity} or less",
                spec.size,
                path.display()
            )));
        }
        // A device is laid out every time: its length says nothing about what it holds.
        fill(spec, 0, cancel)
            .map_err(|e| e.with_after("the device is laid out again next time"))?;
        return Ok(PreparedFile { _claim: claim });
    }
    let done = PreparedFile { _claim: None };
    let exists = path.exists();
    let current = std::fs::metadata(path).map(|m| m.len()).unwrap_or(0);
    if exists && spec.rw.writes() && !force {
        return Err(BenchError::Invalid(format!(
            "{} exists and --rw {:?} would overwrite it; pass --force, or give a new --file",
            path.display(),
            spec.rw
        )));
    }
    if exists && current >= spec.size {
        return Ok(done);
    }
    if exists && !force {
        return Err(BenchError::Invalid(format!(
            "{} has {current} bytes, less than --size {}; pass --force to extend it, or a smaller --size",
            path.display(),
            spec.size
        )));
    }
    if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
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
    match fill(spec, current, cancel) {
        Ok(()) => Ok(done),
        Err(e) if !exists => {
            // Ours and incomplete: remove it rather than leave a file that looks laid out.
            let removed = std::fs::remove_file(path).is_ok();
            Err(e.with_after(if removed {
                "removed the partial file"
            } else {
                "could not remove the partial file; delete it"
            }))
        }
        Err(e) => Err(e),
    }
}

/// Writes in flight while laying out the file.
const FILL_DEPTH: usize = 4;
/// Write size while laying out the file.
const FILL_CHUNK: usize = 1 << 20;

/// Fills `spec.file` from `from` (rounded down to 4 KiB) to `spec.size` (rounded up to 4 KiB, as
/// O_DIRECT needs) with random data in 1 MiB writes, [`FILL_DEPTH`] in flight through the
/// spec's engine, then syncs. Checks `cancel` before every write.
fn fill(spec: &BenchSpec, from: u64, cancel: &AtomicBool) -> Result<(), BenchError> {
    let f = IoFile::open(
        &spec.file,
        OpenMode {
            direct: spec.direct,
            write_through: false,
            write: true,
            create: true,
        },
    )?;
    let align = crate::ALIGN as u64;
    let start = from - from % align;
    let end = spec
        .size
        .checked_next_multiple_of(align)
        .ok_or_else(|| BenchError::Invalid(format!("--size {} is too large", spec.size)))?;
    let mut pass = SeqPass::new(start..end, FILL_CHUNK, FILL_DEPTH, SeqOp::Write)
        .map_err(|e| BenchError::Invalid(e.to_string()))?;
    let files = crate::Files::new(vec![f]);
    let mut queue = open_queue(spec.engine, Arc::clone(&files), FILL_DEPTH)?;
    let mut rng = Rng(0x1234_5678_9abc_def1);
    let mut random = |_: u64, buf: &mut [u8]| -> Result<(), BenchError> {
        for c in buf.chunks_exact_mut(8) {
            c.copy_from_slice(&rng.next().to_le_bytes());
        }
        Ok(())
    };
    let ended = run_pass(
        &mut *queue,
        0,
        &mut pass,
        ChunkData::Fill(&mut random),
        &mut |_: &SeqPass| Ok(()),
        cancel,
    )?;
    drop(queue);
    if ended == PassEnd::Cancelled {
        return Err(BenchError::Interrupted {
            path: spec.file.clone(),
            done_bytes: pass.done_bytes(),
            total_bytes: pass.total_bytes(),
            after: "run again with --force to finish it",
        });
    }
    files.file(0)?.sync_all()?;
    Ok(())
}

/// Runs the benchmark (the file must be prepared). `cancel` stops it early.
pub fn run(spec: &BenchSpec, cancel: &AtomicBool) -> Result<BenchResult, BenchError> {
    spec.validate(memory_budget())?;
    let jobs = spec.numjobs.max(1);
    let (u0, s0) = platform::cpu_times();
    let started = Instant::now();
    let deadline = started.checked_add(spec.runtime).ok_or_else(|| {
        BenchError::Invalid("--runtime is too long for this system's clock".into())
    })?;
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
    use proptest::prelude::*;

    fn spec(file: PathBuf) -> BenchSpec {
        BenchSpec {
            file,
            size: 4 << 20,
            rw: RwMode::RandRw,
            rwmixread: 70,
            bs: 32768,
            iodepth: 4,
            numjobs: 2,
            runtime: Duration::from_secs(1),
            engine: EngineKind::Sync,
            direct: false,
        }
    }

    #[test]
    fn short_randrw_run_counts_both_directions() {
        let dir = tempfile::tempdir().expect("temporary directory");
        let spec = spec(dir.path().join("sub").join("bench.dat"));
        let never = AtomicBool::new(false);
        let prepared = prepare_file(&spec, false, &never).expect("layout");
        assert_eq!(std::fs::metadata(&spec.file).expect("stat").len(), 4 << 20);
        let r = run(&spec, &never).expect("run");
        drop(prepared);
        assert!(r.read.ios > 0 && r.write.ios > 0, "{r:?}");
        let share = r.read.ios as f64 / (r.read.ios + r.write.ios) as f64;
        assert!((0.55..0.85).contains(&share), "read share {share}");
        assert_eq!(r.read.bytes, r.read.ios * 32768);
        assert!(r.read.latency_ms.p50 > 0.0);
        // Writing to an existing file needs --force.
        let err = prepare_file(&spec, false, &never).expect_err("refuse");
        assert!(err.to_string().contains("--force"), "{err}");
    }

    fn invalid_message(spec: &BenchSpec, budget: u64) -> String {
        match spec.validate(budget) {
            Err(BenchError::Invalid(m)) => m,
            other => panic!("expected a usage error, got {other:?}"),
        }
    }

    /// The numbers of issue 8 that panicked or aborted are usage errors naming the flag.
    #[test]
    fn out_of_range_numbers_name_the_flag_and_range() {
        let base = spec(PathBuf::from("x"));
        let huge_bs = BenchSpec {
            bs: 4_611_686_018_427_387_904,
            numjobs: 4,
            ..base.clone()
        };
        let m = invalid_message(&huge_bs, 1 << 30);
        assert!(m.contains("--bs") && m.contains("4k to 64M"), "{m}");
        let too_deep = BenchSpec {
            bs: 64 << 20,
            iodepth: 4096,
            ..base.clone()
        };
        let m = invalid_message(&too_deep, 1 << 30);
        assert!(
            m.contains("--iodepth") && m.contains("budget of 1024 MiB"),
            "{m}"
        );
        let zero = BenchSpec {
            runtime: Duration::ZERO,
            ..base.clone()
        };
        let m = invalid_message(&zero, 1 << 30);
        assert!(
            m.contains("--runtime") && m.contains("1s to 30 days"),
            "{m}"
        );
        let small = BenchSpec {
            size: 32768,
            ..base.clone()
        };
        let m = invalid_message(&small, 1 << 30);
        assert!(m.contains("--size") && m.contains("65536"), "{m}");
        assert!(base.validate(1 << 30).is_ok());
        // A tiny budget (little free memory) refuses even the defaults, saying so.
        let m = invalid_message(&base, 64 << 10);
        assert!(m.contains("budget of 0.06 MiB"), "{m}");
        assert!(matches!(check_bs(u64::MAX), Err(BenchError::Invalid(_))));
        assert!(memory_budget() <= MAX_BUFFER_BYTES);
    }

    /// Ctrl-C during the fill of a file we create removes it; of a file we extend (--force)
    /// keeps the user's file and says how to finish.
    #[test]
    fn interrupted_fill_removes_the_file_it_created() {
        let dir = tempfile::tempdir().expect("temporary directory");
        let spec = spec(dir.path().join("bench.dat"));
        let stop = AtomicBool::new(true);
        let err = prepare_file(&spec, false, &stop).expect_err("interrupted");
        assert!(
            matches!(err, BenchError::Interrupted { after, .. } if after == "removed the partial file"),
            "{err}"
        );
        assert!(!spec.file.exists(), "the partial file was removed");
        std::fs::write(&spec.file, b"user data").expect("write");
        let err = prepare_file(&spec, true, &stop).expect_err("interrupted");
        assert!(err.to_string().contains("--force to finish"), "{err}");
        assert!(spec.file.exists(), "a file we did not create is kept");
        // Without --force it is not touched at all.
        let err = prepare_file(&spec, false, &AtomicBool::new(false)).expect_err("refused");
        assert!(err.to_string().contains("--force"), "{err}");
    }

    fn any_duration() -> impl Strategy<Value = Duration> {
        prop_oneof![
            6 => (0u64..=3_000_000, 0u32..1_000_000_000).prop_map(|(s, n)| Duration::new(s, n)),
            1 => (any::<u64>(), 0u32..1_000_000_000).prop_map(|(s, n)| Duration::new(s, n)),
            1 => Just(Duration::ZERO),
            1 => Just(MIN_RUNTIME),
            1 => Just(MAX_RUNTIME),
            1 => Just(Duration::MAX),
        ]
    }

    fn any_bs() -> impl Strategy<Value = usize> {
        prop_oneof![
            3 => (1usize..=64).prop_map(|k| k * 4096),
            1 => (0usize..=(1 << 15)).prop_map(|k| k * 4096),
            1 => any::<usize>(),
            1 => (0u32..64).prop_map(|b| 1usize << b),
            1 => Just(usize::MAX),
        ]
    }

    fn any_count() -> impl Strategy<Value = usize> {
        prop_oneof![3 => 1usize..=16, 1 => 0usize..=5000, 1 => any::<usize>()]
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(2000))]

        /// Random numbers never panic, and whatever is accepted is within every documented
        /// range, the buffers within the memory budget.
        #[test]
        fn validation_never_panics_and_accepted_specs_fit(
            bs in any_bs(),
            iodepth in any_count(),
            numjobs in any_count(),
            size in prop_oneof![1 => any::<u64>(), 3 => 0u64..(1 << 34)],
            runtime in any_duration(),
            rwmixread in prop_oneof![3 => 0u8..=100, 1 => any::<u8>()],
            budget in prop_oneof![any::<u64>(), 0u64..=MAX_BUFFER_BYTES, Just(MAX_BUFFER_BYTES)],
        ) {
            let s = BenchSpec {
                bs,
                iodepth,
                numjobs,
                size,
                runtime,
                rwmixread,
                ..spec(PathBuf::from("x"))
            };
            match s.validate(budget) {
                Ok(()) => {
                    let buffers = bs as u128 * iodepth as u128 * numjobs as u128;
                    prop_assert!(buffers <= budget as u128);
                    prop_assert!(bs % 4096 == 0 && bs > 0 && bs as u64 <= MAX_BS);
                    prop_assert!((1..=MAX_IODEPTH).contains(&iodepth));
                    prop_assert!((1..=MAX_NUMJOBS).contains(&numjobs));
                    prop_assert!(size as u128 >= bs as u128 * numjobs as u128);
                    prop_assert!(size <= MAX_SIZE);
                    prop_assert!((MIN_RUNTIME..=MAX_RUNTIME).contains(&runtime));
                    prop_assert!(rwmixread <= 100);
                }
                Err(BenchError::Invalid(m)) => prop_assert!(m.starts_with("--"), "{}", m),
                Err(e) => prop_assert!(false, "unexpected error {e}"),
            }
        }
    }
}
