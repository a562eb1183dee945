//! The Performance test's event loop. One thread drives every session, flusher, log writer, BDM
//! scan and replication reader of every instance through one I/O queue: sessions are state
//! machines, I/O is asynchronous, and all bookkeeping is single-threaded (no locks).
//!
//! Phases: attain (run unthrottled until every cache is 90% full) -> settle (paced, one dirty-page
//! age, so flushing reaches steady state) -> measure (paced at the target, sampled) -> shutdown
//! (finish transactions, flush the caches and the logs, checkpoint, mark databases clean).

use std::collections::{HashMap, VecDeque};
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use mbx_config::RunConfig;
use mbx_io::{
    AlignedBuf, FileTable, Files, IoCompletion, IoFile, IoOp, IoQueue, IoRequest, OpenMode,
};
use mbx_store::checkpoint::{Checkpoint, CHECKPOINT_FILE, SLOT};
use mbx_store::header::HEADER_PAGES;
use mbx_store::log::{
    encode_log_header, encode_record, log_file_name, record_size, LOG_FILE_SIZE, LOG_SECTOR,
};
use mbx_store::page::{
    build_data_page, check_data_page, PageCheck, PageHeader, KIND_DATA, PAGE_SIZE,
};

use crate::cache::{Cache, FrameState};
use crate::model::{self, Access, Rng, OPS_PER_TXN};
use crate::result::Integrity;
use crate::stats::{InstanceStats, Stream};
use crate::{EngineError, Observer, Phase, Progress, RunEvent};

const PAGE: u64 = PAGE_SIZE as u64;
/// Largest log write; a larger buffer is written in pieces.
const MAX_LOG_WRITE: usize = 256 * 1024;
/// A log flush happens once this much is buffered even without a durable commit.
const LOG_FLUSH_BYTES: u32 = 32 * 1024;
/// Lazily committed log data is flushed after this long at most.
const LOG_LAZY_FLUSH: Duration = Duration::from_millis(200);
/// BDM read size (Jetstress: 256 KiB).
const BDM_BYTES: u64 = 256 * 1024;
/// Log replication read size (Jetstress: ~232 KiB).
const REPL_BYTES: u64 = 232 * 1024;
/// Most page writes in flight per instance.
const MAX_FLUSH_WRITES: usize = 32;
/// Most contiguous dirty pages coalesced into one write.
const MAX_COALESCE: u64 = 4;
/// Checkpoint interval.
const CHECKPOINT_EVERY: Duration = Duration::from_secs(5);
/// Longest the attain phase may take before the run proceeds anyway.
const ATTAIN_LIMIT: Duration = Duration::from_secs(600);
/// The attain phase also ends when the emptiest cache has not grown for this long: waiting
/// longer could not meet the prerequisite, only hang the test.
const ATTAIN_STALL: Duration = Duration::from_secs(60);

/// One database to drive.
#[derive(Debug, Clone)]
pub struct InstanceSpec {
    /// Jetstress-style name.
    pub name: String,
    /// Database file.
    pub db_path: PathBuf,
    /// Log directory.
    pub log_dir: PathBuf,
    /// Database id (from its header).
    pub database_id: u64,
    /// Data pages.
    pub data_pages: u64,
}

#[derive(Debug, Clone, Copy)]
struct PageDisk {
    gen: u64,
    write_submit_seq: u64,
    write_done_seq: u64,
}

#[derive(Debug)]
struct LogFile {
    gen: u64,
    file: usize,
    used: u64,
    closed: bool,
    in_flight: u32,
    replicated_to: u64,
    path: PathBuf,
}

pub(crate) struct Instance {
    pub spec: InstanceSpec,
    db_file: usize,
    pub cache: Cache,
    disk: HashMap<u64, PageDisk>,
    waiters: HashMap<u64, Vec<usize>>,
    flush_writes: usize,
    pressure: bool,
    // log
    logs: VecDeque<LogFile>,
    log_offset: u64,
    buffer_bytes: u32,
    buffer_ops: u32,
    oldest_pending: Option<Instant>,
    lsn_buffered: u64,
    lsn_durable: u64,
    log_in_flight: bool,
    commit_waiters: Vec<(usize, u64)>,
    // checkpoint, BDM, replication
    next_checkpoint: Instant,
    checkpoint_seq: u64,
    bdm_next: Instant,
    bdm_page: u64,
    bdm_in_flight: bool,
    repl_in_flight: bool,
    stalled: VecDeque<usize>,
    pub stats: InstanceStats,
    pub integrity: Integrity,
    /// When and on which page the first integrity error was found.
    pub first_integrity_error: Option<(std::time::SystemTime, u64)>,
    mailboxes: u64,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum SState {
    Idle,
    Reading,
    Stalled,
    Committing,
}

struct Session {
    state: SState,
    next_start: Instant,
    /// Intended start of the current (or last) transaction; a rate change reschedules from it.
    last_start: Instant,
    inst: usize,
    accesses: Vec<Access>,
    pending: u32,
    log_bytes: u32,
}

enum Pending {
    TxnRead {
        inst: usize,
        first: u64,
        pages: u64,
    },
    Flush {
        inst: usize,
        first: u64,
        pages: u64,
        gen: u64,
    },
    LogWrite {
        inst: usize,
        log: u64,
        end_lsn: u64,
    },
    Bdm {
        inst: usize,
        first: u64,
        pages: u64,
        seq: u64,
    },
    Repl {
        inst: usize,
        log: u64,
    },
}

/// Everything the loop owns.
pub(crate) struct Driver<'a> {
    cfg: &'a RunConfig,
    queue: Box<dyn IoQueue>,
    files: FileTable,
    pub instances: Vec<Instance>,
    sessions: Vec<Session>,
    pending: Vec<Option<Pending>>,
    free_tags: Vec<usize>,
    rng: Rng,
    seq: u64,
    gen_base: u64,
    gen_next: u64,
    pool: HashMap<usize, Vec<AlignedBuf>>,
    completions: Vec<IoCompletion>,
    pub phase: Phase,
    /// Transactions per second across sessions (paced phases), as used for pacing.
    rate: f64,
    /// The controller's proportional estimate of the rate that meets the target.
    base_rate: f64,
    io_per_txn: f64,
    target: f64,
    direct: bool,
    max_dirty_age: Duration,
    /// Per measured sample: (CPU %, available MB, page fault stalls/s).
    pub host_samples: Vec<(f64, f64, f64)>,
    /// Things the user must know about how the run went (also logged), for the result.
    pub notes: Vec<String>,
    /// Page-sized buffer for rebuilding a page during verification (reused on every read).
    scratch: Vec<u8>,
}

fn now_unix() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_secs())
        .unwrap_or(0)
}

impl<'a> Driver<'a> {
    pub fn new(
        cfg: &'a RunConfig,
        specs: Vec<InstanceSpec>,
        queue_factory: &dyn Fn(FileTable, usize) -> Result<Box<dyn IoQueue>, EngineError>,
    ) -> Result<Self, EngineError> {
        let mode = OpenMode {
            direct: cfg.direct,
            write_through: false,
            write: true,
            create: false,
        };
        let mut db_files = Vec::new();
        for s in &specs {
            db_files.push(IoFile::open(&s.db_path, mode)?);
        }
        let files = Files::new(db_files);
        let sessions_n = cfg.sessions() as usize;
        // The most I/O that can be in flight: every session's transaction reads (each operation
        // reads at most model::MAX_READS_PER_OP pages) plus, per database, the flusher's writes,
        // one log write, one BDM read and one replication read. A smaller queue overflows when
        // the storage is slow, which is exactly when the test must keep going.
        let depth = sessions_n * OPS_PER_TXN * model::MAX_READS_PER_OP
            + specs.len() * (MAX_FLUSH_WRITES + 3);
        let queue = queue_factory(files.clone(), depth)?;
        let now = Instant::now();
        let dbs = specs.len() as u64;
        let mut instances = Vec::new();
        for (i, spec) in specs.into_iter().enumerate() {
            let db_bytes = spec.data_pages * PAGE;
            // Jetstress gives each database 32..256 MiB of cache; small test databases get at
            // most an eighth of their size, so the cache stays a cache (see docs/method.md).
            // A cache never holds more frames than the database has pages: otherwise the 90%
            // prerequisite could never be met (a 1 MiB database has 32 pages).
            let max_bytes = cfg
                .cache
                .max_mb_per_db
                .saturating_mul(1 << 20)
                .min(db_bytes / 8)
                .max(
                    cfg.cache
                        .min_mb_per_db
                        .saturating_mul(1 << 20)
                        .min(db_bytes / 8),
                )
                .max(64 * PAGE)
                .min(db_bytes);
            let frames = usize::try_from(max_bytes / PAGE)
                .map_err(|_| EngineError::Invalid("database cache too large".into()))?
                .max(1);
            let mailboxes = (cfg.profile.mailboxes + dbs - 1 - i as u64) / dbs;
            instances.push(Instance {
                db_file: i,
                cache: Cache::new(frames, cfg.cache.flush_start_pct, cfg.cache.flush_stop_pct),
                disk: HashMap::new(),
                waiters: HashMap::new(),
                flush_writes: 0,
                pressure: false,
                logs: VecDeque::new(),
                log_offset: 0,
                buffer_bytes: 0,
                buffer_ops: 0,
                oldest_pending: None,
                lsn_buffered: 0,
                lsn_durable: 0,
                log_in_flight: false,
                commit_waiters: Vec::new(),
                next_checkpoint: now + CHECKPOINT_EVERY,
                checkpoint_seq: 1,
                bdm_next: now,
                bdm_page: HEADER_PAGES,
                bdm_in_flight: false,
                repl_in_flight: false,
                stalled: VecDeque::new(),
                stats: InstanceStats::default(),
                integrity: Integrity::default(),
                first_integrity_error: None,
                mailboxes: mailboxes.max(1),
                spec,
            });
        }
        let sessions = (0..sessions_n)
            .map(|_| Session {
                state: SState::Idle,
                next_start: now,
                last_start: now,
                inst: 0,
                accesses: Vec::new(),
                pending: 0,
                log_bytes: 0,
            })
            .collect();
        let mut d = Driver {
            cfg,
            queue,
            files,
            instances,
            sessions,
            pending: Vec::new(),
            free_tags: Vec::new(),
            rng: Rng::new(cfg.seed),
            seq: 0,
            // Generations above anything an earlier run wrote: microseconds since the epoch.
            gen_base: now_unix().saturating_mul(1_000_000),
            gen_next: 0,
            pool: HashMap::new(),
            completions: Vec::new(),
            phase: Phase::Attain,
            rate: f64::INFINITY,
            base_rate: 1.0,
            io_per_txn: 4.3,
            target: cfg.target_iops(),
            direct: cfg.direct,
            max_dirty_age: Duration::from_secs_f64(cfg.cache.max_dirty_age_s),
            host_samples: Vec::new(),
            notes: Vec::new(),
            scratch: vec![0u8; PAGE_SIZE],
        };
        for i in 0..d.instances.len() {
            d.open_next_log(i)?;
        }
        Ok(d)
    }

    pub fn engine_name(&self) -> &'static str {
        self.queue.engine_name()
    }

    // ---- small helpers ---------------------------------------------------------------------

    fn tag(&mut self, p: Pending) -> u64 {
        match self.free_tags.pop() {
            Some(i) => {
                self.pending[i] = Some(p);
                i as u64
            }
            None => {
                self.pending.push(Some(p));
                (self.pending.len() - 1) as u64
            }
        }
    }

    fn buf(&mut self, len: usize) -> AlignedBuf {
        self.pool
            .get_mut(&len)
            .and_then(Vec::pop)
            .unwrap_or_else(|| AlignedBuf::zeroed(len))
    }

    fn give_back(&mut self, b: AlignedBuf) {
        let v = self.pool.entry(b.len()).or_default();
        if v.len() < 64 {
            v.push(b);
        }
    }

    fn submit(
        &mut self,
        op: IoOp,
        file: usize,
        offset: u64,
        buf: AlignedBuf,
        p: Pending,
    ) -> Result<(), EngineError> {
        let tag = self.tag(p);
        self.seq += 1;
        let len = buf.len();
        self.queue.submit(IoRequest {
            op,
            file,
            offset,
            len,
            buf,
            tag,
        })?;
        Ok(())
    }

    fn measuring(&self) -> bool {
        self.phase == Phase::Measure
    }

    // ---- logs ------------------------------------------------------------------------------

    fn open_next_log(&mut self, i: usize) -> Result<(), EngineError> {
        let inst = &mut self.instances[i];
        let gen = inst.logs.back().map(|l| l.gen + 1).unwrap_or_else(|| {
            // Continue after whatever generations exist in the log directory.
            std::fs::read_dir(&inst.spec.log_dir)
                .ok()
                .map(|rd| {
                    rd.filter_map(|e| e.ok())
                        .filter_map(|e| {
                            let n = e.file_name().to_string_lossy().to_string();
                            n.strip_prefix("E00")
                                .and_then(|s| s.strip_suffix(".log"))
                                .and_then(|h| u64::from_str_radix(h, 16).ok())
                        })
                        .max()
                        .unwrap_or(0)
                })
                .unwrap_or(0)
                + 1
        });
        if let Some(last) = inst.logs.back_mut() {
            last.closed = true;
            last.used = inst.log_offset;
        }
        std::fs::create_dir_all(&inst.spec.log_dir)
            .map_err(|e| mbx_io::IoError::new("create directory", &inst.spec.log_dir, e))?;
        let path = inst.spec.log_dir.join(log_file_name(gen));
        let f = IoFile::open(
            &path,
            OpenMode {
                direct: self.direct,
                write_through: true,
                write: true,
                create: true,
            },
        )?;
        let mut head = AlignedBuf::zeroed(LOG_SECTOR);
        encode_log_header(head.as_mut_slice(), gen, inst.spec.database_id, now_unix());
        f.write_all_at(head.as_slice(), 0)?;
        f.set_len(LOG_FILE_SIZE as u64)?;
        let file = self.files.add(f);
        let inst = &mut self.instances[i];
        inst.logs.push_back(LogFile {
            gen,
            file,
            used: LOG_SECTOR as u64,
            closed: false,
            in_flight: 0,
            replicated_to: 0,
            path,
        });
        inst.log_offset = LOG_SECTOR as u64;
        Ok(())
    }

    fn maybe_flush_log(&mut self, i: usize, now: Instant, force: bool) -> Result<(), EngineError> {
        let inst = &self.instances[i];
        if inst.log_in_flight || inst.buffer_bytes == 0 {
            return Ok(());
        }
        let due = force
            || !inst.commit_waiters.is_empty()
            || inst.buffer_bytes >= LOG_FLUSH_BYTES
            || inst
                .oldest_pending
                .is_some_and(|t| now >= t + LOG_LAZY_FLUSH);
        if !due {
            return Ok(());
        }
        let payload = (inst.buffer_bytes as usize).min(MAX_LOG_WRITE - LOG_SECTOR);
        let size = record_size(payload);
        if inst.log_offset + size as u64 > LOG_FILE_SIZE as u64 {
            self.open_next_log(i)?;
        }
        let inst = &mut self.instances[i];
        let (gen, file) = match inst.logs.back_mut() {
            Some(l) => {
                l.in_flight += 1;
                (l.gen, l.file)
            }
            None => return Ok(()),
        };
        let offset = inst.log_offset;
        let ops = inst.buffer_ops;
        let taken = payload as u32;
        inst.buffer_bytes -= taken;
        inst.buffer_ops = 0;
        inst.oldest_pending = (inst.buffer_bytes > 0).then_some(now);
        inst.log_offset += size as u64;
        if let Some(l) = inst.logs.back_mut() {
            l.used = inst.log_offset;
        }
        // Durable up to the bytes taken (the rest, if any, goes in the next write).
        let end_lsn = inst.lsn_buffered - inst.buffer_bytes as u64;
        inst.log_in_flight = true;
        let mut buf = self.buf(size);
        encode_record(
            buf.as_mut_slice(),
            gen,
            gen * LOG_FILE_SIZE as u64 + offset,
            payload,
            ops,
        );
        self.submit(
            IoOp::Write,
            file,
            offset,
            buf,
            Pending::LogWrite {
                inst: i,
                log: gen,
                end_lsn,
            },
        )
    }

    fn log_done(
        &mut self,
        i: usize,
        log: u64,
        end_lsn: u64,
        now: Instant,
    ) -> Result<(), EngineError> {
        let inst = &mut self.instances[i];
        inst.log_in_flight = false;
        inst.lsn_durable = inst.lsn_durable.max(end_lsn);
        if let Some(l) = inst.logs.iter_mut().find(|l| l.gen == log) {
            l.in_flight = l.in_flight.saturating_sub(1);
        }
        let durable = inst.lsn_durable;
        let mut done = Vec::new();
        inst.commit_waiters.retain(|&(s, lsn)| {
            if lsn <= durable {
                done.push(s);
                false
            } else {
                true
            }
        });
        for s in done {
            self.finish_txn(s, now);
        }
        self.maybe_flush_log(i, now, false)
    }

    // ---- sessions and transactions -------------------------------------------------------

    fn start_txn(&mut self, s: usize, now: Instant) -> Result<(), EngineError> {
        let dbs = self.instances.len() as u64;
        // With fewer mailboxes than databases every database still gets transactions (each
        // holds at least one mailbox), so every cache can fill and every database is tested.
        let mailbox = self.rng.below(self.cfg.profile.mailboxes.max(dbs));
        let i = (mailbox % dbs) as usize;
        let local = mailbox / dbs;
        let (first_data, data_pages, mbx) = {
            let inst = &self.instances[i];
            (HEADER_PAGES, inst.spec.data_pages, inst.mailboxes)
        };
        let region = model::region(first_data, data_pages, mbx, local);
        let last_page = first_data + data_pages - 1;
        let mut acc = std::mem::take(&mut self.sessions[s].accesses);
        acc.clear();
        let mut log_bytes = 0;
        for _ in 0..OPS_PER_TXN {
            let op = model::pick_op(&self.cfg.op_mix, &mut self.rng);
            log_bytes += model::accesses(op, region, last_page, &mut self.rng, &mut acc);
        }
        let sess = &mut self.sessions[s];
        sess.inst = i;
        sess.accesses = acc;
        sess.log_bytes = log_bytes;
        self.acquire(s, now)
    }

    /// Pins the transaction's pages, issuing reads for misses; stalls if the cache has no room.
    fn acquire(&mut self, s: usize, now: Instant) -> Result<(), EngineError> {
        let i = self.sessions[s].inst;
        let acc = std::mem::take(&mut self.sessions[s].accesses);
        // Frames needed: distinct missing pages (reads and new pages).
        let mut needed = 0;
        for (k, a) in acc.iter().enumerate() {
            let dup = acc[..k].iter().any(|b| b.page == a.page);
            if !dup && self.instances[i].cache.state(a.page).is_none() {
                needed += 1;
            }
        }
        if needed > self.instances[i].cache.available() {
            // One stall per transaction that has to wait (retries of the same one do not count).
            let first_stall = self.sessions[s].state != SState::Stalled;
            self.sessions[s].accesses = acc;
            self.sessions[s].state = SState::Stalled;
            let inst = &mut self.instances[i];
            inst.stalled.push_back(s);
            if first_stall {
                inst.stats.stalls_interval += 1;
            }
            inst.pressure = true;
            return Ok(());
        }
        let mut pending = 0;
        let mut k = 0;
        while k < acc.len() {
            let a = acc[k];
            k += 1;
            if a.new_page || acc[..k - 1].iter().any(|b| b.page == a.page && !b.new_page) {
                continue;
            }
            let cache = &mut self.instances[i].cache;
            match cache.state(a.page) {
                Some(FrameState::Reading) => {
                    cache.pin(a.page);
                    self.instances[i].waiters.entry(a.page).or_default().push(s);
                    pending += 1;
                }
                Some(_) => cache.pin(a.page),
                None => {
                    cache.begin_read(a.page, now);
                    let mut pages = 1;
                    // An adjacent page read in the same I/O, when it misses too.
                    if a.join_next && k < acc.len() {
                        let b = acc[k];
                        if b.page == a.page + 1
                            && !b.new_page
                            && cache.state(b.page).is_none()
                            && cache.begin_read(b.page, now)
                        {
                            pages = 2;
                            k += 1;
                        }
                    }
                    let inst = &mut self.instances[i];
                    for p in a.page..a.page + pages {
                        inst.waiters.entry(p).or_default().push(s);
                        pending += 1;
                    }
                    let file = self.instances[i].db_file;
                    let buf = self.buf(pages as usize * PAGE_SIZE);
                    self.submit(
                        IoOp::Read,
                        file,
                        a.page * PAGE,
                        buf,
                        Pending::TxnRead {
                            inst: i,
                            first: a.page,
                            pages,
                        },
                    )?;
                }
            }
        }
        let sess = &mut self.sessions[s];
        sess.accesses = acc;
        sess.pending = pending;
        if pending == 0 {
            self.apply(s, now)
        } else {
            sess.state = SState::Reading;
            Ok(())
        }
    }

    /// All pages are in: modify, log, commit.
    fn apply(&mut self, s: usize, now: Instant) -> Result<(), EngineError> {
        let i = self.sessions[s].inst;
        let acc = std::mem::take(&mut self.sessions[s].accesses);
        let log_bytes = self.sessions[s].log_bytes;
        let inst = &mut self.instances[i];
        let lsn = inst.lsn_buffered + log_bytes as u64;
        for (k, a) in acc.iter().enumerate() {
            if a.modify {
                inst.cache.modify(a.page, now, lsn);
            }
            let first_use = !acc[..k].iter().any(|b| b.page == a.page && !b.new_page);
            if !a.new_page && first_use {
                inst.cache.unpin(a.page);
            }
        }
        self.sessions[s].accesses = acc;
        let durable = !self
            .rng
            .chance(self.cfg.op_mix.lazy_commit_pct as f64 / 100.0);
        let inst = &mut self.instances[i];
        if log_bytes > 0 {
            inst.buffer_bytes += log_bytes;
            inst.buffer_ops += OPS_PER_TXN as u32;
            inst.lsn_buffered = lsn;
            inst.oldest_pending.get_or_insert(now);
        }
        if durable && log_bytes > 0 {
            inst.commit_waiters.push((s, lsn));
            self.sessions[s].state = SState::Committing;
            self.maybe_flush_log(i, now, false)
        } else {
            self.finish_txn(s, now);
            Ok(())
        }
    }

    fn finish_txn(&mut self, s: usize, now: Instant) {
        let i = self.sessions[s].inst;
        let measuring = self.measuring();
        let st = &mut self.instances[i].stats;
        st.txns_interval += 1;
        if measuring {
            st.txns_measured += 1;
        }
        let n = self.sessions.len() as f64;
        let sess = &mut self.sessions[s];
        sess.state = SState::Idle;
        sess.last_start = sess.next_start;
        if self.rate.is_finite() && self.rate > 0.0 {
            let interval = Duration::from_secs_f64(n / self.rate);
            let next = sess.next_start + interval;
            // Behind by more than one interval: do not build a backlog, start now.
            sess.next_start = if next + interval < now { now } else { next };
        } else {
            sess.next_start = now;
        }
    }

    fn read_done(
        &mut self,
        i: usize,
        first: u64,
        pages: u64,
        c: &IoCompletion,
        now: Instant,
    ) -> Result<(), EngineError> {
        self.verify_pages(i, first, pages, c.req.buf.as_slice(), None);
        let mut ready = Vec::new();
        for p in first..first + pages {
            self.instances[i].cache.end_read(p);
            if let Some(ws) = self.instances[i].waiters.remove(&p) {
                for s in ws {
                    let sess = &mut self.sessions[s];
                    sess.pending = sess.pending.saturating_sub(1);
                    if sess.pending == 0 && sess.state == SState::Reading {
                        ready.push(s);
                    }
                }
            }
        }
        for s in ready {
            self.apply(s, now)?;
        }
        Ok(())
    }

    /// Verifies pages read at `first..`; `bdm_seq` skips pages written while a BDM read ran.
    fn verify_pages(
        &mut self,
        i: usize,
        first: u64,
        pages: u64,
        data: &[u8],
        bdm_seq: Option<u64>,
    ) {
        let inst = &mut self.instances[i];
        let scratch = &mut self.scratch;
        for (k, page) in data
            .chunks_exact(PAGE_SIZE)
            .take(pages as usize)
            .enumerate()
        {
            let n = first + k as u64;
            let known = inst.disk.get(&n).copied();
            if let (Some(seq), Some(d)) = (bdm_seq, known) {
                // A write in flight during the scan may have been read half-done: not evidence.
                if d.write_submit_seq >= seq
                    || d.write_done_seq >= seq
                    || d.write_done_seq < d.write_submit_seq
                {
                    continue;
                }
            }
            inst.integrity.pages_verified += 1;
            let found = match check_data_page(page, n, inst.spec.database_id, scratch) {
                PageCheck::Good { generation } => {
                    let stale = known.is_some_and(|d| {
                        d.write_done_seq >= d.write_submit_seq && generation < d.gen
                    });
                    if stale {
                        inst.integrity.stale_pages += 1;
                    }
                    stale
                }
                PageCheck::Correctable => {
                    inst.integrity.correctable_pages += 1;
                    true
                }
                PageCheck::WrongPageNumber { .. } => {
                    inst.integrity.wrong_page_number_pages += 1;
                    true
                }
                PageCheck::Bad | PageCheck::Unwritten | PageCheck::WrongDatabase { .. } => {
                    inst.integrity.bad_pages += 1;
                    true
                }
            };
            if found && inst.first_integrity_error.is_none() {
                inst.first_integrity_error = Some((std::time::SystemTime::now(), n));
            }
        }
    }

    // ---- flushing ------------------------------------------------------------------------

    fn flush(&mut self, i: usize, now: Instant, drain: bool) -> Result<(), EngineError> {
        loop {
            let inst = &mut self.instances[i];
            if inst.flush_writes >= MAX_FLUSH_WRITES
                || inst.cache.dirty_count() == 0
                || self.queue.in_flight() >= self.queue.depth()
            {
                return Ok(());
            }
            let avail = inst.cache.available();
            if avail < inst.cache.start_threshold {
                inst.pressure = true;
            }
            if inst.pressure && avail + inst.cache.flushing() >= inst.cache.stop_threshold {
                inst.pressure = false;
            }
            let aged = inst
                .cache
                .oldest_dirty_at()
                .is_some_and(|t| now >= t + self.max_dirty_age);
            if !(drain || inst.pressure || aged) {
                return Ok(());
            }
            let Some((first, pages)) = inst.cache.take_flush_run(MAX_COALESCE) else {
                return Ok(());
            };
            inst.flush_writes += 1;
            self.gen_next += 1;
            let gen = self.gen_base + self.gen_next;
            let seq = self.seq + 1;
            let db_id = self.instances[i].spec.database_id;
            let mut buf = self.buf(pages as usize * PAGE_SIZE);
            for (k, page) in buf.as_mut_slice().chunks_exact_mut(PAGE_SIZE).enumerate() {
                let n = first + k as u64;
                build_data_page(
                    page,
                    &PageHeader {
                        page_number: n,
                        database_id: db_id,
                        generation: gen,
                        kind: KIND_DATA,
                        compressibility_pct: self.cfg.compressibility_pct,
                    },
                );
                let d = self.instances[i].disk.entry(n).or_insert(PageDisk {
                    gen: 0,
                    write_submit_seq: 0,
                    write_done_seq: 0,
                });
                d.write_submit_seq = seq;
            }
            let file = self.instances[i].db_file;
            self.submit(
                IoOp::Write,
                file,
                first * PAGE,
                buf,
                Pending::Flush {
                    inst: i,
                    first,
                    pages,
                    gen,
                },
            )?;
        }
    }

    fn flush_done(&mut self, i: usize, first: u64, pages: u64, gen: u64, now: Instant) {
        let seq = self.seq;
        let inst = &mut self.instances[i];
        inst.flush_writes -= 1;
        let lsn = inst.lsn_buffered;
        for n in first..first + pages {
            if let Some(d) = inst.disk.get_mut(&n) {
                d.gen = gen;
                d.write_done_seq = seq;
            }
            inst.cache.end_flush(n, now, lsn);
        }
    }

    fn retry_stalled(&mut self, i: usize, now: Instant) -> Result<(), EngineError> {
        let n = self.instances[i].stalled.len();
        for _ in 0..n {
            let Some(s) = self.instances[i].stalled.pop_front() else {
                break;
            };
            self.acquire(s, now)?;
            if self.sessions[s].state == SState::Stalled {
                // Still no room: acquire re-queued it (and counted a stall); stop trying.
                break;
            }
        }
        Ok(())
    }

    // ---- checkpoint, BDM, replication -----------------------------------------------------

    fn checkpoint(&mut self, i: usize, now: Instant) -> Result<(), EngineError> {
        let inst = &mut self.instances[i];
        inst.next_checkpoint = now + CHECKPOINT_EVERY;
        let lsn = inst
            .cache
            .min_dirty_lsn()
            .unwrap_or(inst.lsn_durable)
            .min(inst.lsn_durable);
        // The log generation holding `lsn` is not tracked per byte; the checkpoint names the
        // oldest generation still open or in flight, which is conservative.
        let needed_gen = inst
            .logs
            .iter()
            .find(|l| {
                !l.closed
                    || l.in_flight > 0
                    || (self.cfg.profile.copies_per_database > 1 && l.replicated_to < l.used)
            })
            .map(|l| l.gen)
            .unwrap_or(1);
        inst.checkpoint_seq += 1;
        let c = Checkpoint {
            sequence: inst.checkpoint_seq,
            database_id: inst.spec.database_id,
            log_generation: needed_gen,
            lsn,
        };
        let path = inst.spec.log_dir.join(CHECKPOINT_FILE);
        let f = IoFile::open(
            &path,
            OpenMode {
                direct: false,
                write_through: false,
                write: true,
                create: true,
            },
        )?;
        let mut slot = vec![0u8; SLOT];
        c.encode(&mut slot);
        f.write_all_at(&slot, c.slot_offset())?;
        f.sync_data()?;
        // Circular logging: delete closed, replicated, idle files older than the checkpoint.
        while inst.logs.len() > 1 {
            let Some(l) = inst.logs.front() else { break };
            let replicated = self.cfg.profile.copies_per_database == 1 || l.replicated_to >= l.used;
            if !(l.closed && l.in_flight == 0 && replicated && l.gen < needed_gen) {
                break;
            }
            if let Some(l) = inst.logs.pop_front() {
                self.files.remove(l.file);
                let _ = std::fs::remove_file(&l.path);
            }
        }
        Ok(())
    }

    fn bdm(&mut self, i: usize, now: Instant) -> Result<(), EngineError> {
        let interval = Duration::from_secs_f64(1.0 / self.cfg.bdm_reads_per_s);
        let inst = &mut self.instances[i];
        if inst.bdm_in_flight || now < inst.bdm_next {
            return Ok(());
        }
        inst.bdm_next += interval;
        if inst.bdm_next + interval < now {
            inst.bdm_next = now + interval;
        }
        let end = HEADER_PAGES + inst.spec.data_pages;
        if inst.bdm_page >= end {
            inst.bdm_page = HEADER_PAGES;
        }
        let first = inst.bdm_page;
        let pages = (BDM_BYTES / PAGE).min(end - first);
        inst.bdm_page += pages;
        inst.bdm_in_flight = true;
        let file = inst.db_file;
        let seq = self.seq + 1;
        let buf = self.buf((BDM_BYTES / PAGE) as usize * PAGE_SIZE);
        // Read only the pages that exist (the last read of the file may be shorter).
        let tag = self.tag(Pending::Bdm {
            inst: i,
            first,
            pages,
            seq,
        });
        self.seq += 1;
        self.queue.submit(IoRequest {
            op: IoOp::Read,
            file,
            offset: first * PAGE,
            len: pages as usize * PAGE_SIZE,
            buf,
            tag,
        })?;
        Ok(())
    }

    fn replicate(&mut self, i: usize) -> Result<(), EngineError> {
        if self.cfg.profile.copies_per_database < 2 || self.instances[i].repl_in_flight {
            return Ok(());
        }
        let inst = &mut self.instances[i];
        let Some(l) = inst
            .logs
            .iter_mut()
            .find(|l| l.closed && l.replicated_to < l.used)
        else {
            return Ok(());
        };
        let start = l.replicated_to;
        let len = REPL_BYTES.min(l.used - start);
        let len = len.div_ceil(LOG_SECTOR as u64) * LOG_SECTOR as u64;
        l.replicated_to = start + len;
        l.in_flight += 1;
        let (gen, file) = (l.gen, l.file);
        inst.repl_in_flight = true;
        let buf = self.buf(len as usize);
        self.submit(
            IoOp::Read,
            file,
            start,
            buf,
            Pending::Repl { inst: i, log: gen },
        )
    }

    // ---- completions ---------------------------------------------------------------------

    fn complete(&mut self, c: IoCompletion, now: Instant) -> Result<(), EngineError> {
        self.seq += 1;
        let tag = c.req.tag as usize;
        let Some(p) = self.pending.get_mut(tag).and_then(Option::take) else {
            return Ok(());
        };
        self.free_tags.push(tag);
        let bytes = c.check(&self.files)? as u64;
        let measuring = self.measuring();
        match p {
            Pending::TxnRead { inst, first, pages } => {
                self.instances[inst]
                    .stats
                    .record(Stream::DbRead, bytes, c.latency, measuring);
                self.read_done(inst, first, pages, &c, now)?;
            }
            Pending::Flush {
                inst,
                first,
                pages,
                gen,
            } => {
                self.instances[inst]
                    .stats
                    .record(Stream::DbWrite, bytes, c.latency, measuring);
                self.flush_done(inst, first, pages, gen, now);
                self.retry_stalled(inst, now)?;
            }
            Pending::LogWrite { inst, log, end_lsn } => {
                self.instances[inst]
                    .stats
                    .record(Stream::LogWrite, bytes, c.latency, measuring);
                self.log_done(inst, log, end_lsn, now)?;
            }
            Pending::Bdm {
                inst,
                first,
                pages,
                seq,
            } => {
                self.instances[inst]
                    .stats
                    .record(Stream::Bdm, bytes, c.latency, measuring);
                self.instances[inst].bdm_in_flight = false;
                self.verify_pages(inst, first, pages, c.req.buf.as_slice(), Some(seq));
            }
            Pending::Repl { inst, log } => {
                self.instances[inst]
                    .stats
                    .record(Stream::LogRead, bytes, c.latency, measuring);
                let ins = &mut self.instances[inst];
                ins.repl_in_flight = false;
                if let Some(l) = ins.logs.iter_mut().find(|l| l.gen == log) {
                    l.in_flight = l.in_flight.saturating_sub(1);
                }
            }
        }
        self.give_back(c.req.buf);
        Ok(())
    }

    // ---- the loop ------------------------------------------------------------------------

    /// Runs every phase; calls `observer` for progress, log lines and samples. Returns when the
    /// test ended, and the error that stopped it early, if any: what was measured until then is
    /// kept in the instances' counters so a result can still be written.
    pub fn run(
        &mut self,
        observer: &mut dyn Observer,
        cancel: &AtomicBool,
    ) -> (RunTimes, Result<(), EngineError>) {
        let mut marks = Marks {
            started: Instant::now(),
            measure_start: None,
            measure_end: None,
        };
        match self.run_loop(observer, cancel, &mut marks) {
            Ok(times) => (times, Ok(())),
            Err(e) => {
                let end = Instant::now();
                let times = RunTimes {
                    started: marks.started,
                    measure_start: marks.measure_start.unwrap_or(end),
                    measure_end: marks.measure_end.unwrap_or(end),
                    ended: end,
                    interrupted: cancel.load(Ordering::Relaxed),
                    measured: marks.measure_start.is_some(),
                };
                (times, Err(e))
            }
        }
    }

    /// An interruption before the measured phase: straight to shutdown, nothing measured.
    fn stop_before_measuring(&mut self, observer: &mut dyn Observer) -> bool {
        self.phase = Phase::Shutdown;
        observer.on_event(RunEvent::Phase(Phase::Shutdown));
        observer.on_event(RunEvent::Log(
            "Interrupted before the measured phase: nothing was measured; shutting down databases ...",
        ));
        true
    }

    fn run_loop(
        &mut self,
        observer: &mut dyn Observer,
        cancel: &AtomicBool,
        marks: &mut Marks,
    ) -> Result<RunTimes, EngineError> {
        let started = marks.started;
        let sample_every = Duration::from_secs_f64(self.cfg.sample_interval_s);
        let duration = Duration::from_secs_f64(self.cfg.duration_s);
        let mut phase_start = started;
        let mut next_sample = started + sample_every;
        let mut last_sample = started;
        let mut next_tick = started + Duration::from_secs(1);
        let mut tick_ios = 0u64;
        let mut tick_txns = 0u64;
        let mut last_tick = started;
        let mut attain_ios = (0u64, 0u64);
        // Best cache fill seen in the attain phase, and when it was reached.
        let mut attain_best = (0f64, started);
        observer.on_event(RunEvent::Phase(Phase::Attain));
        observer.on_event(RunEvent::Log(
            "Attaining prerequisites: database cache at least 90% full.",
        ));
        let mut stopping = false;
        loop {
            let now = Instant::now();
            let interrupted = cancel.load(Ordering::Relaxed);
            // Phase transitions.
            match self.phase {
                Phase::Attain => {
                    let fill = self
                        .instances
                        .iter()
                        .map(|i| i.cache.fill())
                        .fold(1.0, f64::min);
                    if fill > attain_best.0 {
                        attain_best = (fill, now);
                    }
                    let timed_out = now.duration_since(phase_start) > ATTAIN_LIMIT;
                    let stalled = now.duration_since(attain_best.1) > ATTAIN_STALL;
                    if interrupted {
                        stopping = self.stop_before_measuring(observer);
                    } else if fill >= 0.9 || timed_out || stalled {
                        if (timed_out || stalled) && fill < 0.9 {
                            let line = format!(
                                "The cache prerequisite was not met: the emptiest database cache is {:.0}% full and {}; continuing with the test.",
                                fill * 100.0,
                                if timed_out {
                                    "the 10-minute limit was reached".to_string()
                                } else {
                                    format!("did not grow for {} s", ATTAIN_STALL.as_secs())
                                }
                            );
                            observer.on_event(RunEvent::Log(&line));
                            self.notes.push(line);
                        }
                        // Counters since the start (the cache may fill before the first tick).
                        let (ios, txns) = self.instances.iter().fold(attain_ios, |(a, t), inst| {
                            (
                                a + inst.stats.interval[Stream::DbRead as usize].ios
                                    + inst.stats.interval[Stream::DbWrite as usize].ios,
                                t + inst.stats.txns_interval,
                            )
                        });
                        let (ios, txns) =
                            (ios.saturating_sub(tick_ios), txns.saturating_sub(tick_txns));
                        if txns > 100 {
                            self.io_per_txn = (ios as f64 / txns as f64).max(0.5);
                        }
                        self.base_rate = self.target / self.io_per_txn;
                        self.rate = self.base_rate;
                        for s in &mut self.sessions {
                            s.next_start = now;
                        }
                        self.phase = Phase::Settle;
                        phase_start = now;
                        observer.on_event(RunEvent::Phase(Phase::Settle));
                        let line = format!(
                            "Cache prerequisite met ({:.0}% full); pacing {:.1} transactions/s ({:.2} I/Os each) for the {:.0} IOPS target.",
                            fill * 100.0,
                            self.rate,
                            self.io_per_txn,
                            self.target
                        );
                        observer.on_event(RunEvent::Log(&line));
                    }
                }
                Phase::Settle => {
                    if interrupted {
                        stopping = self.stop_before_measuring(observer);
                    } else if now.duration_since(phase_start) >= self.max_dirty_age {
                        self.phase = Phase::Measure;
                        phase_start = now;
                        marks.measure_start = Some(now);
                        // Start the sample series clean.
                        for inst in &mut self.instances {
                            inst.stats.interval = Default::default();
                            inst.stats.txns_interval = 0;
                            inst.stats.stalls_interval = 0;
                        }
                        last_sample = now;
                        next_sample = now + sample_every;
                        observer.on_event(RunEvent::Phase(Phase::Measure));
                        observer.on_event(RunEvent::Log("Performance logging started."));
                    }
                }
                Phase::Measure => {
                    if now.duration_since(phase_start) >= duration || interrupted {
                        marks.measure_end = Some(now);
                        if now > last_sample + Duration::from_millis(500) {
                            self.sample(observer, now, now.duration_since(last_sample));
                        }
                        self.phase = Phase::Shutdown;
                        stopping = true;
                        observer.on_event(RunEvent::Phase(Phase::Shutdown));
                        observer.on_event(RunEvent::Log(if interrupted {
                            "Interrupted: stopping transactions and shutting down databases ..."
                        } else {
                            "Performance logging has ended. Shutting down databases ..."
                        }));
                    }
                }
                Phase::Shutdown => {}
            }
            // Start transactions that are due.
            if !stopping {
                for s in 0..self.sessions.len() {
                    if self.sessions[s].state == SState::Idle && self.sessions[s].next_start <= now
                    {
                        self.start_txn(s, now)?;
                    }
                }
            }
            // Background work per instance.
            for i in 0..self.instances.len() {
                self.maybe_flush_log(i, now, stopping)?;
                let drain = stopping
                    && self
                        .sessions
                        .iter()
                        .all(|s| s.state == SState::Idle || s.state == SState::Stalled);
                self.flush(i, now, drain)?;
                if !self.instances[i].stalled.is_empty() {
                    self.retry_stalled(i, now)?;
                }
                if !stopping {
                    if self.cfg.bdm {
                        self.bdm(i, now)?;
                    }
                    self.replicate(i)?;
                    if now >= self.instances[i].next_checkpoint {
                        self.checkpoint(i, now)?;
                    }
                }
            }
            // Done shutting down?
            if stopping {
                let busy = self.queue.in_flight() > 0
                    || self
                        .sessions
                        .iter()
                        .any(|s| s.state == SState::Reading || s.state == SState::Committing)
                    || self.instances.iter().any(|i| {
                        i.cache.dirty_count() > 0 || i.buffer_bytes > 0 || i.cache.flushing() > 0
                    });
                if !busy {
                    for i in 0..self.instances.len() {
                        self.checkpoint(i, now)?;
                    }
                    let end = Instant::now();
                    return Ok(RunTimes {
                        started,
                        measure_start: marks.measure_start.unwrap_or(end),
                        measure_end: marks.measure_end.unwrap_or(end),
                        ended: end,
                        interrupted: cancel.load(Ordering::Relaxed),
                        measured: marks.measure_start.is_some(),
                    });
                }
            }
            // Per-second tick: pacing controller and progress.
            if now >= next_tick {
                let secs = now.duration_since(last_tick).as_secs_f64().max(1e-3);
                let (ios, txns) = self.instances.iter().fold((0u64, 0u64), |(a, t), inst| {
                    (
                        a + inst.stats.interval[Stream::DbRead as usize].ios
                            + inst.stats.interval[Stream::DbWrite as usize].ios,
                        t + inst.stats.txns_interval,
                    )
                });
                let d_ios = ios.saturating_sub(tick_ios);
                let d_txns = txns.saturating_sub(tick_txns);
                let iops = d_ios as f64 / secs;
                if self.phase == Phase::Attain {
                    attain_ios.0 += d_ios;
                    attain_ios.1 += d_txns;
                } else if matches!(self.phase, Phase::Settle | Phase::Measure) {
                    // Proportional step on the last second...
                    let ratio = if iops > 0.0 { self.target / iops } else { 1.5 };
                    self.base_rate *= ratio.powf(0.7).clamp(0.67, 1.5);
                    let cap = 20.0 * self.target / self.io_per_txn.max(0.5);
                    self.base_rate = self.base_rate.clamp(0.1, cap);
                    // ...plus, while measuring, an integral term that makes up any deficit of the
                    // phase so far within the next second (bounded), so the measured total tracks
                    // the target rather than just the latest second.
                    let mut extra = 0.0;
                    if let Some(ms) = marks.measure_start {
                        let elapsed = now.duration_since(ms).as_secs_f64();
                        let done: u64 = self
                            .instances
                            .iter()
                            .map(|i| {
                                i.stats.measured[Stream::DbRead as usize].ios
                                    + i.stats.measured[Stream::DbWrite as usize].ios
                            })
                            .sum();
                        let deficit = self.target * elapsed - done as f64;
                        extra = (deficit / self.io_per_txn.max(0.5))
                            .clamp(-0.3 * self.base_rate, 0.5 * self.base_rate);
                    }
                    self.rate = (self.base_rate + extra).max(0.1);
                    // Idle sessions follow the new rate now, not after the interval they were
                    // given under the old one (which may be far longer).
                    let interval = Duration::from_secs_f64(self.sessions.len() as f64 / self.rate);
                    for sess in &mut self.sessions {
                        if sess.state == SState::Idle {
                            let next = (sess.last_start + interval).max(now);
                            if next < sess.next_start {
                                sess.next_start = next;
                            }
                        }
                    }
                }
                tick_ios = ios;
                tick_txns = txns;
                last_tick = now;
                next_tick = now + Duration::from_secs(1);
                let (rd, lw) = self.instances.iter().fold(
                    (Default::default(), Default::default()),
                    |(r, l): (crate::stats::Counter, crate::stats::Counter), inst| {
                        (
                            r.plus(&inst.stats.interval[Stream::DbRead as usize]),
                            l.plus(&inst.stats.interval[Stream::LogWrite as usize]),
                        )
                    },
                );
                let (phase_elapsed, phase_total) = match self.phase {
                    Phase::Measure => (
                        now.duration_since(phase_start).as_secs_f64(),
                        Some(duration.as_secs_f64()),
                    ),
                    Phase::Settle => (
                        now.duration_since(phase_start).as_secs_f64(),
                        Some(self.max_dirty_age.as_secs_f64()),
                    ),
                    _ => (now.duration_since(phase_start).as_secs_f64(), None),
                };
                observer.on_event(RunEvent::Progress(Progress {
                    phase: self.phase,
                    phase_elapsed_s: phase_elapsed,
                    phase_total_s: phase_total,
                    iops,
                    target_iops: self.target,
                    db_read_avg_ms: rd.avg_ms(),
                    log_write_avg_ms: lw.avg_ms(),
                    cache_fill: self
                        .instances
                        .iter()
                        .map(|i| i.cache.fill())
                        .fold(1.0, f64::min),
                }));
            }
            if self.phase == Phase::Measure && now >= next_sample {
                self.sample(observer, now, now.duration_since(last_sample));
                // Reset tick baselines: interval counters were cleared by the sample.
                tick_ios = 0;
                tick_txns = 0;
                last_sample = now;
                next_sample += sample_every;
            } else if self.phase != Phase::Measure
                && now.duration_since(last_sample) >= Duration::from_secs(60)
            {
                // Keep interval counters bounded outside measurement (not written as samples).
                for inst in &mut self.instances {
                    inst.stats.interval = Default::default();
                    inst.stats.txns_interval = 0;
                    inst.stats.stalls_interval = 0;
                }
                tick_ios = 0;
                tick_txns = 0;
                last_sample = now;
            }
            // Wait for I/O or the next timer.
            let mut wake = next_tick.min(if self.phase == Phase::Measure {
                next_sample
            } else {
                next_tick
            });
            if !stopping {
                for s in &self.sessions {
                    if s.state == SState::Idle {
                        wake = wake.min(s.next_start);
                    }
                }
                for inst in &self.instances {
                    if self.cfg.bdm && !inst.bdm_in_flight {
                        wake = wake.min(inst.bdm_next);
                    }
                    wake = wake.min(inst.next_checkpoint);
                }
            }
            // Only wake for work that can start then: a lazy log flush waits for the write in
            // flight, an aged page for a free flush slot (their completions wake us anyway).
            for inst in &self.instances {
                if let (Some(t), false) = (inst.oldest_pending, inst.log_in_flight) {
                    wake = wake.min(t + LOG_LAZY_FLUSH);
                }
                if inst.flush_writes < MAX_FLUSH_WRITES {
                    if let Some(t) = inst.cache.oldest_dirty_at() {
                        wake = wake.min(t + self.max_dirty_age);
                    }
                }
            }
            let timeout = wake.saturating_duration_since(Instant::now());
            let mut batch = std::mem::take(&mut self.completions);
            batch.clear();
            if self.queue.in_flight() > 0 {
                if timeout.is_zero() {
                    self.queue.reap_timeout(0, Duration::ZERO, &mut batch)?;
                } else {
                    self.queue.reap_timeout(1, timeout, &mut batch)?;
                }
            } else if !timeout.is_zero() {
                std::thread::sleep(timeout.min(Duration::from_millis(50)));
            }
            let now = Instant::now();
            for c in batch.drain(..) {
                self.complete(c, now)?;
            }
            self.completions = batch;
        }
    }

    fn sample(&mut self, observer: &mut dyn Observer, now: Instant, span: Duration) {
        let secs = span.as_secs_f64().max(1e-3);
        let host = crate::host::sample();
        let mut instances = Vec::new();
        let mut stalls = 0u64;
        for inst in &mut self.instances {
            let st = &mut inst.stats;
            let c = |s: Stream| st.interval[s as usize];
            let rd = c(Stream::DbRead);
            let lw = c(Stream::LogWrite);
            st.sample_avgs.push((rd.avg_ms(), lw.avg_ms()));
            stalls += st.stalls_interval;
            instances.push(crate::result::SampleInstance {
                name: inst.spec.name.clone(),
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
                cache_fill: inst.cache.fill(),
            });
            st.interval = Default::default();
            st.txns_interval = 0;
            st.stalls_interval = 0;
        }
        let _ = now;
        self.host_samples
            .push((host.cpu_pct, host.available_mb, stalls as f64 / secs));
        let v = crate::result::Sample {
            timestamp: crate::rfc3339_now(),
            phase: "measure".into(),
            interval_s: secs,
            instances,
            host: crate::result::SampleHost {
                cpu_pct: host.cpu_pct,
                available_mb: host.available_mb,
                page_fault_stalls_per_s: stalls as f64 / secs,
            },
        };
        observer.on_event(RunEvent::Sample(&v));
    }
}

/// When things happened.
#[derive(Debug, Clone, Copy)]
pub struct RunTimes {
    /// Run start.
    pub started: Instant,
    /// Measured phase start.
    pub measure_start: Instant,
    /// Measured phase end.
    pub measure_end: Instant,
    /// Shutdown complete.
    pub ended: Instant,
    /// Stopped by the user.
    pub interrupted: bool,
    /// The measured phase began (otherwise no rate in the result means anything).
    pub measured: bool,
}

/// Phase boundaries as the loop reaches them (kept outside it so an error can report them).
struct Marks {
    started: Instant,
    measure_start: Option<Instant>,
    measure_end: Option<Instant>,
}
