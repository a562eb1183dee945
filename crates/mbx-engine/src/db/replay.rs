//! Soft recovery of one database: replay of its log from the checkpoint into the database file,
//! entirely through the reactor (so it is measured, and runs on the simulated device).
//!
//! As ESE's recovery does, after a stop without a clean shutdown:
//! 1. read the checkpoint slot the last checkpoint wrote: replay starts at its Lsn (a database
//!    that never completed a checkpoint in this run starts at the run's first log generation,
//!    which began on a clean database);
//! 2. read the log files from the checkpoint's generation to the newest one, in reads of at most
//!    [`LOG_READ_BYTES`], a few files ahead ([`LOG_FILES_AHEAD`]); each file, once read, is
//!    scanned (`mbx_store::log::scan_log_file`) and its records from the checkpoint on are added
//!    to the redo set (`mbx_store::redo`): page -> the newest generation logged;
//! 3. read every page the records touch (one page per read, [`PAGES_AHEAD`] in flight), verify
//!    it, and note its generation on disk;
//! 4. once every log file is scanned (so the redo set is final), write every page behind the log
//!    at its logged generation (`mbx_store::redo::redo_page`), then sync the database file.
//!
//! A page touched twice is read once and written at most once, at its newest generation: the
//! redo set is the state the log describes, which is what recovery must reach. A damaged page is
//! counted as an integrity error and not rewritten; a page ahead of the log is counted
//! ([`Replayer::ahead`]): both fail the test.

use std::collections::{HashMap, VecDeque};
use std::path::PathBuf;
use std::time::{Duration, Instant};

use mbx_io::{IoOp, OpenMode};
use mbx_store::checkpoint::{Checkpoint, SLOT};
use mbx_store::log::{scan_log_file, ScanEnd, LOG_FILE_SIZE, LOG_SECTOR};
use mbx_store::log_dir::LogBreak;
use mbx_store::page::{check_data_page, PageCheck, PAGE_SIZE};
use mbx_store::redo::{add_file, compare_generations, redo_page, PageRedo, RedoSet};
use mbx_store::{Lsn, StoreError};

use crate::reactor::{Owner, Reactor, ReplayIo};
use crate::result::Integrity;
use crate::stats::Stream;
use crate::EngineError;

/// Largest log read (the seeds' replay reads average ~209 KB).
pub(crate) const LOG_READ_BYTES: u64 = 256 * 1024;
/// Log files read ahead of the one being scanned.
pub(crate) const LOG_FILES_AHEAD: usize = 3;
/// Page reads in flight per database.
pub(crate) const PAGES_AHEAD: usize = 16;
/// Most pages one replay read covers: consecutive pages a log file touches are read together,
/// as ESE's recovery prefetch does (D2's replay reads average ~39.9 KB, a little over a page).
pub(crate) const MAX_PAGES_PER_READ: u64 = 8;
/// Page writes in flight per database.
pub(crate) const WRITES_AHEAD: usize = 8;
const PAGE: u64 = PAGE_SIZE as u64;

impl ReplayIo {
    /// The stream it is measured as: log reads, database reads and writes; the checkpoint read
    /// and the sync as other I/O.
    pub fn stream(self) -> Stream {
        match self {
            ReplayIo::Log { .. } => Stream::LogRead,
            ReplayIo::Read { .. } => Stream::DbRead,
            ReplayIo::Write { .. } => Stream::DbWrite,
            ReplayIo::Checkpoint | ReplayIo::Sync => Stream::Other,
        }
    }
}

/// A log file of the replay: its handle and how much of it to read.
#[derive(Debug, Clone)]
pub(crate) struct ReplayFile {
    pub gen: u64,
    /// Its handle if the log writer still has it open; otherwise the replay opens `path` to read
    /// it and closes it once scanned.
    pub file: Option<usize>,
    pub path: PathBuf,
    /// Bytes written to it (header and records), rounded up to a sector when read.
    pub used: u64,
}

/// A log file being read.
#[derive(Debug)]
struct Image {
    gen: u64,
    file: usize,
    /// Opened by the replay (closed once scanned).
    opened: bool,
    len: u64,
    next: u64,
    done: u64,
    bytes: Vec<u8>,
}

/// Where a page touched by the log stands.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum PageState {
    /// Waiting to be read, or being read.
    Reading,
    /// Read: its generation on disk (damaged pages are not rewritten).
    OnDisk(u64),
    /// Damaged or ahead of the log: left alone.
    Skip,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
enum Stage {
    /// Not started.
    #[default]
    Idle,
    /// Reading the checkpoint slot.
    Checkpoint,
    /// Reading logs, pages; writing pages.
    Replaying,
    /// Syncing the database file.
    Syncing,
    /// Finished.
    Done,
}

/// The replay of one database.
#[derive(Debug, Default)]
pub(crate) struct Replayer {
    stage: Stage,
    database_id: u64,
    compressibility_pct: u8,
    log_dir: PathBuf,
    direct: bool,
    /// Replay starts here (the checkpoint's Lsn).
    pub from: Option<Lsn>,
    fallback: Lsn,
    files: Vec<ReplayFile>,
    next_file: usize,
    reading: VecDeque<Image>,
    redo: RedoSet,
    pages: HashMap<u64, PageState>,
    to_read: VecDeque<u64>,
    to_write: VecDeque<u64>,
    reads_in_flight: usize,
    writes_in_flight: usize,
    started: Option<Instant>,
    /// How long the replay took (set when it is done).
    pub elapsed: Option<Duration>,
    /// Log files read and scanned.
    pub files_replayed: u64,
    /// Of them, files the log writer had closed (opened again to be read).
    pub files_reopened: u64,
    /// Records replayed (at or after the checkpoint).
    pub records: u64,
    /// Pages read (touched by the log).
    pub pages_read: u64,
    /// Pages rewritten at their logged generation.
    pub pages_written: u64,
    /// Pages found ahead of every generation logged for them.
    pub ahead: u64,
    /// The first page found damaged.
    pub first_damaged: Option<u64>,
    /// The first damaged pages found (at most `verify::NAMED_PAGES`), with what is wrong.
    pub damaged: Vec<(u64, super::finding::Finding)>,
}

impl Replayer {
    /// Starts the replay: reads the slot of checkpoint `sequence` (`None`: no checkpoint was
    /// written in this run; replay starts at `fallback`), then the log `files` from the
    /// checkpoint's generation on.
    #[allow(clippy::too_many_arguments)]
    pub fn begin(
        &mut self,
        reactor: &mut Reactor,
        db: usize,
        database_id: u64,
        compressibility_pct: u8,
        log_dir: PathBuf,
        direct: bool,
        checkpoint: Option<(usize, u64)>,
        fallback: Lsn,
        files: Vec<ReplayFile>,
        now: Instant,
    ) -> Result<(), EngineError> {
        *self = Replayer {
            database_id,
            compressibility_pct,
            log_dir,
            direct,
            fallback,
            files,
            started: Some(now),
            ..Replayer::default()
        };
        match checkpoint {
            Some((file, sequence)) => {
                self.stage = Stage::Checkpoint;
                let slot = Checkpoint {
                    sequence,
                    database_id,
                    lsn: Lsn::ZERO,
                }
                .slot_offset();
                let buf = reactor.buf(SLOT);
                reactor.submit(
                    Owner::Replay {
                        db,
                        io: ReplayIo::Checkpoint,
                    },
                    IoOp::Read,
                    file,
                    slot,
                    buf,
                    None,
                )
            }
            None => {
                self.start_from(fallback);
                Ok(())
            }
        }
    }

    fn start_from(&mut self, from: Lsn) {
        self.from = Some(from);
        self.files.retain(|f| f.gen >= from.generation());
        self.stage = Stage::Replaying;
    }

    /// True once the database file holds what the log describes (and is synced).
    pub fn done(&self) -> bool {
        self.stage == Stage::Done
    }

    /// Fraction of the log files read so far (for progress).
    pub fn fraction(&self) -> f64 {
        match self.stage {
            Stage::Idle | Stage::Checkpoint => 0.0,
            Stage::Done => 1.0,
            _ if self.files.is_empty() => 1.0,
            _ => self.files_replayed as f64 / self.files.len() as f64,
        }
    }

    /// Submits what is due: log reads ahead, page reads, page writes, the final sync.
    pub fn pump(
        &mut self,
        reactor: &mut Reactor,
        db: usize,
        db_file: usize,
    ) -> Result<(), EngineError> {
        if self.stage != Stage::Replaying {
            return Ok(());
        }
        // Log reads, a few files ahead.
        while self.reading.len() < LOG_FILES_AHEAD {
            let Some(f) = self.files.get(self.next_file) else {
                break;
            };
            let sector = LOG_SECTOR as u64;
            let len = f.used.min(LOG_FILE_SIZE as u64).div_ceil(sector) * sector;
            let (file, opened) = match f.file {
                Some(file) => (file, false),
                None => {
                    let mode = OpenMode {
                        direct: self.direct,
                        write_through: false,
                        write: false,
                        create: false,
                    };
                    self.files_reopened += 1;
                    (reactor.open_file(&f.path, mode)?, true)
                }
            };
            self.reading.push_back(Image {
                gen: f.gen,
                file,
                opened,
                len,
                next: 0,
                done: 0,
                // The whole file's size: the scan sees zeros past what was read, as on disk.
                bytes: vec![0u8; LOG_FILE_SIZE],
            });
            self.next_file += 1;
        }
        for img in self.reading.iter_mut() {
            while img.next < img.len {
                if !reactor.has_room() {
                    return Ok(());
                }
                let chunk = (img.len - img.next).min(LOG_READ_BYTES);
                let buf = reactor.buf(chunk as usize);
                reactor.submit(
                    Owner::Replay {
                        db,
                        io: ReplayIo::Log {
                            gen: img.gen,
                            offset: img.next,
                        },
                    },
                    IoOp::Read,
                    img.file,
                    img.next,
                    buf,
                    None,
                )?;
                img.next += chunk;
            }
        }
        // Page reads.
        while self.reads_in_flight < PAGES_AHEAD && reactor.has_room() {
            let Some(page) = self.to_read.pop_front() else {
                break;
            };
            // The pages queued right after it that follow it on disk join the read.
            let mut count = 1;
            while count < MAX_PAGES_PER_READ && self.to_read.front() == Some(&(page + count)) {
                self.to_read.pop_front();
                count += 1;
            }
            // At most MAX_PAGES_PER_READ pages: fits a usize.
            let buf = reactor.buf(PAGE_SIZE * count as usize);
            reactor.submit(
                Owner::Replay {
                    db,
                    io: ReplayIo::Read { page, count },
                },
                IoOp::Read,
                db_file,
                page * PAGE,
                buf,
                None,
            )?;
            self.reads_in_flight += 1;
        }
        // Page writes, once the redo set is final.
        while self.logs_done() && self.writes_in_flight < WRITES_AHEAD && reactor.has_room() {
            let Some(page) = self.to_write.pop_front() else {
                break;
            };
            let Some(&gen) = self.redo.get(&page) else {
                continue;
            };
            let mut buf = reactor.buf(PAGE_SIZE);
            redo_page(
                buf.as_mut_slice(),
                page,
                self.database_id,
                gen,
                self.compressibility_pct,
            );
            reactor.submit(
                Owner::Replay {
                    db,
                    io: ReplayIo::Write { page },
                },
                IoOp::Write,
                db_file,
                page * PAGE,
                buf,
                None,
            )?;
            self.writes_in_flight += 1;
        }
        let idle = self.reads_in_flight == 0
            && self.writes_in_flight == 0
            && self.to_read.is_empty()
            && self.to_write.is_empty();
        if self.logs_done() && idle && reactor.has_room() {
            self.stage = Stage::Syncing;
            let buf = reactor.buf(0);
            reactor.submit(
                Owner::Replay {
                    db,
                    io: ReplayIo::Sync,
                },
                IoOp::Sync,
                db_file,
                0,
                buf,
                Some(0),
            )?;
        }
        Ok(())
    }

    /// Every log file is read and scanned.
    fn logs_done(&self) -> bool {
        self.next_file >= self.files.len() && self.reading.is_empty()
    }

    /// A replay request completed with `data` (what was read).
    pub fn completed(
        &mut self,
        reactor: &mut Reactor,
        io: ReplayIo,
        data: &[u8],
        integrity: &mut Integrity,
        scratch: &mut [u8],
        now: Instant,
    ) -> Result<(), EngineError> {
        match io {
            ReplayIo::Checkpoint => {
                let found =
                    Checkpoint::from_file(data).filter(|c| c.database_id == self.database_id);
                let Some(c) = found else {
                    return Err(EngineError::Invalid(format!(
                        "recovery: the checkpoint of {} is not readable",
                        self.log_dir.display()
                    )));
                };
                self.start_from(c.lsn);
            }
            ReplayIo::Log { gen, offset } => {
                let Some(img) = self.reading.iter_mut().find(|i| i.gen == gen) else {
                    return Ok(());
                };
                let start = usize::try_from(offset)
                    .unwrap_or(usize::MAX)
                    .min(img.bytes.len());
                let end = start.saturating_add(data.len()).min(img.bytes.len());
                img.bytes[start..end].copy_from_slice(&data[..end - start]);
                img.done += data.len() as u64;
                self.scan_ready(reactor)?;
            }
            ReplayIo::Read { page: first, count } => {
                assert!(
                    self.reads_in_flight > 0,
                    "replay: a page read completed with none in flight"
                );
                self.reads_in_flight -= 1;
                for (k, data) in data
                    .chunks_exact(PAGE_SIZE)
                    .take(count as usize)
                    .enumerate()
                {
                    self.page_read(first + k as u64, data, integrity, scratch);
                }
            }
            ReplayIo::Write { page } => {
                assert!(
                    self.writes_in_flight > 0,
                    "replay: a page write completed with none in flight"
                );
                self.writes_in_flight -= 1;
                self.pages_written += 1;
                if let Some(&g) = self.redo.get(&page) {
                    self.pages.insert(page, PageState::OnDisk(g));
                }
            }
            ReplayIo::Sync => {
                self.stage = Stage::Done;
                self.elapsed = self.started.map(|s| now.saturating_duration_since(s));
            }
        }
        Ok(())
    }

    /// One page of a replay read: verified, then compared with the log once the redo set is
    /// final.
    fn page_read(&mut self, page: u64, data: &[u8], integrity: &mut Integrity, scratch: &mut [u8]) {
        self.pages_read += 1;
        integrity.pages_verified += 1;
        integrity.checksummed(1);
        let state = match check_data_page(data, page, self.database_id, scratch) {
            PageCheck::Good { generation } => PageState::OnDisk(generation),
            check => {
                if let Some(f) = super::finding::Finding::of_check(check) {
                    f.count(integrity);
                    if self.damaged.len() < super::verify::NAMED_PAGES {
                        self.damaged.push((page, f));
                    }
                }
                self.first_damaged.get_or_insert(page);
                PageState::Skip
            }
        };
        self.pages.insert(page, state);
        // Compared with the log once the redo set is final: now if it is, otherwise
        // when the last log file is scanned.
        if self.logs_done() {
            self.settle(page);
        }
    }

    /// Scans the log files read completely, in generation order.
    fn scan_ready(&mut self, reactor: &mut Reactor) -> Result<(), EngineError> {
        while self.reading.front().is_some_and(|i| i.done >= i.len) {
            let Some(img) = self.reading.pop_front() else {
                break;
            };
            if img.opened {
                reactor.close_file(img.file);
            }
            let scan = scan_log_file(&img.bytes, img.gen, self.database_id);
            // A torn tail is what a stop without a clean shutdown leaves; any other damage
            // breaks the log.
            if matches!(scan.end, ScanEnd::Damaged { .. }) {
                return Err(StoreError::LogBroken {
                    dir: self.log_dir.clone(),
                    problem: LogBreak::Damaged {
                        generation: img.gen,
                        end: scan.end,
                    },
                }
                .into());
            }
            let from = self.from.unwrap_or(self.fallback);
            self.records += add_file(&mut self.redo, &scan, from);
            self.files_replayed += 1;
            // Pages seen for the first time are read, those of one log file in page order so
            // that consecutive pages go in one read.
            let queued = self.to_read.len();
            for record in scan.records.iter().filter(|r| r.lsn >= from) {
                for e in &record.entries {
                    if let std::collections::hash_map::Entry::Vacant(v) = self.pages.entry(e.page) {
                        v.insert(PageState::Reading);
                        self.to_read.push_back(e.page);
                    }
                }
            }
            self.to_read.make_contiguous()[queued..].sort_unstable();
            if self.logs_done() {
                // The redo set is final: every page read so far is compared with it.
                let mut read: Vec<u64> = self
                    .pages
                    .iter()
                    .filter(|(_, s)| matches!(s, PageState::OnDisk(_)))
                    .map(|(&p, _)| p)
                    .collect();
                read.sort_unstable();
                for page in read {
                    self.settle(page);
                }
            }
        }
        Ok(())
    }

    /// Compares a page read with the final redo set: behind it, the page is written at the
    /// logged generation; ahead of it, it is counted.
    fn settle(&mut self, page: u64) {
        let (Some(PageState::OnDisk(on_disk)), Some(&logged)) =
            (self.pages.get(&page).copied(), self.redo.get(&page))
        else {
            return;
        };
        match compare_generations(on_disk, logged) {
            PageRedo::Behind { .. } => self.to_write.push_back(page),
            PageRedo::Ahead { .. } => {
                self.ahead += 1;
                self.pages.insert(page, PageState::Skip);
            }
            PageRedo::Current | PageRedo::Damaged(_) => {}
        }
    }
}
