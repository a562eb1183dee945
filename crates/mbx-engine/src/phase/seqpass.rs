//! The sequential-pass phase (Database Backup, Checksum): no transactions; every database file
//! (and, for a checksum, every log file still in its log folder and the checkpoint file) is read
//! from start to end with one [`mbx_io::seq::SeqPass`] per file, all databases in parallel as a
//! VSS backup reads them. Reads go through the reactor as [`Owner::Pass`]; the executor keeps
//! their data in the engine's pass inbox, and this phase verifies it on its next tick: every data
//! page with [`check_data_page`], the two header pages with the store's header decoding, every
//! log file with [`scan_log_file`]. A page that is not good becomes an error entry naming the
//! file, the page, its byte offset and what is wrong. Once a database's log files and checkpoint
//! are read, its log is checked as a log ([`check_log`]: every file's length against its header,
//! every generation from the checkpoint's to the newest, both checkpoint slots); each problem is
//! an error entry naming the file. A file whose length is not a multiple of the O_DIRECT
//! alignment (a truncated or foreign file) is read buffered, so its length is a finding, never
//! an OS error.
//!
//! A checksum also reads each database's generation journal (`mbx_store::journal`) beside its
//! reads, as [`Owner::PassJournal`]: the entries of the pages of each read, and a valid page
//! older than its entry is stale (rolled back, or a write lost, since that write was made
//! durable). What waits for its other half (pages or entries) is a read's worth at most, so
//! memory stays bounded by the reads in flight. Without a journal (a database of an earlier
//! version, a block device) a line says stale pages across runs were not checked.

use std::collections::{BTreeMap, VecDeque};
use std::path::PathBuf;
use std::sync::atomic::AtomicBool;
use std::time::{Duration, Instant};

use mbx_config::RunConfig;
use mbx_io::seq::{SeqOp, SeqPass as Pass};
use mbx_io::{IoOp, IoQueue, OpenMode};
use mbx_store::checkpoint::{CHECKPOINT_FILE, SLOT};
use mbx_store::header::{DbHeader, HEADER_PAGES};
use mbx_store::journal::{entry_at, entry_offset, is_stale, JournalHeader, ENTRY_BYTES};
use mbx_store::log::{parse_log_file_name, scan_log_file, ScanEnd, LOG_FILE_SIZE};
use mbx_store::log_dir::{check_log, LogFileSummary};
use mbx_store::page::{check_data_page, PageCheck, PAGE_SIZE};

use super::{Flow, Mode, PhaseRun};
use crate::exec::{PassChunk, PassPart, PhaseCx, Settings};
use crate::plan::{PassPurpose, Plan, SeqPassSpec};
use crate::reactor::{Owner, Reactor};
use crate::result::{BackupRow, ChecksumRow, ErrorClass, ErrorEntry, Integrity, RunResult};
use crate::workload::pacing::{Pacer, PacerConfig};
use crate::workload::session::Workload;
use crate::{rfc3339, EngineError, InstanceSpec, Observer, PassBytes, Phase, RunTimes};

/// Problem pages listed one by one per file; beyond that they are counted per class.
const LISTED_PER_FILE: usize = 20;

#[derive(Debug)]
enum Kind {
    Database,
    Log {
        generation: u64,
        image: Vec<u8>,
        /// The file's length (it may differ from what its header states).
        len: u64,
        /// Its scan, once read to its end.
        summary: Option<LogFileSummary>,
    },
    /// The checkpoint file of the log folder: both slots are read.
    Checkpoint {
        image: Vec<u8>,
        /// The file does not exist.
        missing: bool,
    },
}

/// Where a database's generation journal stands in a checksum pass.
#[derive(Debug, PartialEq, Eq)]
enum JournalState {
    /// Its header is being read.
    Header,
    /// A journal of this database: its entries are checked.
    Valid,
    /// Not checked: why.
    Off(String),
}

/// A database's generation journal in a checksum pass, read beside the database file.
#[derive(Debug)]
struct PassJournal {
    file: Option<usize>,
    state: JournalState,
    in_flight: usize,
    /// The valid pages of each read (by offset) waiting for their entries: (page, generation).
    pages: BTreeMap<u64, Vec<(u64, u64)>>,
    /// The entries of each read (by offset) waiting for its pages.
    entries: BTreeMap<u64, Vec<u8>>,
}

impl PassJournal {
    fn off(&mut self, why: String) {
        self.state = JournalState::Off(why);
        self.pages.clear();
        self.entries.clear();
    }
}

/// One file of the pass.
#[derive(Debug)]
struct Target {
    db: usize,
    path: PathBuf,
    kind: Kind,
    pass: Pass,
    file: Option<usize>,
    started: Option<Instant>,
    ended: Option<Instant>,
    seen_pages: u64,
    bad: u64,
    /// Of `bad`: all-zero pages and pages of another database.
    unwritten: u64,
    wrong_database: u64,
    correctable: u64,
    wrong_page_number: u64,
    /// Valid pages older than their journal entry.
    stale: u64,
    /// The database's generation journal (a checksum's database file only).
    journal: Option<PassJournal>,
    bytes: u64,
    errors: Vec<ErrorEntry>,
    /// Problems beyond the listed ones: class -> (count, first page, its offset, what).
    more: BTreeMap<ErrorClass, (u64, Option<u64>, u64, &'static str)>,
}

impl Target {
    fn new(
        db: usize,
        path: PathBuf,
        kind: Kind,
        bytes: u64,
        spec: &SeqPassSpec,
    ) -> Result<Target, EngineError> {
        // Whole pages per read, so every read verifies whole pages.
        let chunk = (spec.chunk_bytes / PAGE_SIZE).max(1) * PAGE_SIZE;
        let pass = Pass::new(0..bytes, chunk, spec.depth_per_file.max(1), SeqOp::Read)
            .map_err(|e| EngineError::Invalid(format!("{}: {e}", path.display())))?;
        Ok(Target {
            db,
            path,
            kind,
            pass,
            file: None,
            started: None,
            ended: None,
            seen_pages: 0,
            bad: 0,
            unwritten: 0,
            wrong_database: 0,
            correctable: 0,
            wrong_page_number: 0,
            stale: 0,
            journal: None,
            bytes: 0,
            errors: Vec::new(),
            more: BTreeMap::new(),
        })
    }

    /// Compares the valid pages of every read whose journal entries arrived too: a page older
    /// than its entry is stale.
    fn match_journal(&mut self, instance: &str, at: &str) {
        let Some(j) = &mut self.journal else {
            return;
        };
        if j.state != JournalState::Valid {
            return;
        }
        let ready: Vec<u64> = j
            .pages
            .keys()
            .filter(|o| j.entries.contains_key(o))
            .copied()
            .collect();
        let mut stale = Vec::new();
        for offset in ready {
            let (Some(pages), Some(entries)) = (j.pages.remove(&offset), j.entries.remove(&offset))
            else {
                continue;
            };
            // The entries start at the read's first data page.
            let first = (offset / PAGE_SIZE as u64).max(HEADER_PAGES);
            for (n, generation) in pages {
                let entry = n
                    .checked_sub(first)
                    .and_then(|i| usize::try_from(i).ok())
                    .map_or(0, |i| entry_at(&entries, i));
                if is_stale(generation, entry) {
                    stale.push((n, generation, entry));
                }
            }
        }
        for (n, generation, entry) in stale {
            self.stale += 1;
            self.problem(
                ErrorClass::StalePage,
                instance,
                Some(n),
                n * PAGE_SIZE as u64,
                "is stale: ",
                format!(
                    "generation {generation}; the generation journal records generation {entry} written and made durable (rolled back to an older copy, or that write was lost)"
                ),
                at,
            );
        }
    }

    /// True when no journal read is in flight.
    fn journal_idle(&self) -> bool {
        self.journal.as_ref().is_none_or(|j| j.in_flight == 0)
    }

    #[allow(clippy::too_many_arguments)]
    fn problem(
        &mut self,
        class: ErrorClass,
        instance: &str,
        page: Option<u64>,
        offset: u64,
        what: &'static str,
        detail: String,
        at: &str,
    ) {
        if self.errors.len() < LISTED_PER_FILE {
            let path = self.path.display().to_string();
            let place = match page {
                Some(n) => format!("page {n} (byte offset {offset})"),
                None => format!("byte offset {offset}"),
            };
            self.errors.push(ErrorEntry {
                class,
                instance: Some(instance.to_string()),
                count: 1,
                first_at: at.to_string(),
                message: format!("{path}: {place} {what}{detail}"),
                ..crate::errors::located(Some(&self.path), Some(offset), page.is_some())
            });
        } else {
            let e = self.more.entry(class).or_insert((0, page, offset, what));
            e.0 += 1;
        }
    }
}

/// One database's files, read one after the other (the database file first).
#[derive(Debug, Default)]
struct DbQueue {
    queue: VecDeque<usize>,
    active: Option<usize>,
}

/// The sequential-pass phase.
pub(crate) struct SeqPass {
    spec: SeqPassSpec,
    targets: Vec<Target>,
    dbs: Vec<DbQueue>,
    started: Option<Instant>,
    planned: u64,
    done: u64,
    estimate: Option<Duration>,
    stopped: bool,
    /// A page-sized buffer for the page checks.
    scratch: Vec<u8>,
}

impl SeqPass {
    pub fn new(spec: SeqPassSpec) -> SeqPass {
        SeqPass {
            spec,
            targets: Vec::new(),
            dbs: Vec::new(),
            started: None,
            planned: 0,
            done: 0,
            estimate: None,
            stopped: false,
            scratch: vec![0u8; PAGE_SIZE],
        }
    }

    /// Verifies one completed read.
    fn verify(&mut self, specs: &[InstanceSpec], c: &PassChunk, scratch: &mut [u8], at: &str) {
        let Some(t) = self.targets.get_mut(c.file) else {
            return;
        };
        let Some(spec) = specs.get(t.db) else {
            return;
        };
        let data = &c.data.as_slice()[..c.len.min(c.data.len())];
        match c.part {
            PassPart::File => {}
            PassPart::JournalFailed => {
                if let Some(j) = &mut t.journal {
                    j.in_flight = j.in_flight.saturating_sub(1);
                    j.off("a read of it failed".into());
                }
                return;
            }
            PassPart::Journal => {
                if let Some(j) = &mut t.journal {
                    j.in_flight = j.in_flight.saturating_sub(1);
                    if c.offset == u64::MAX {
                        match JournalHeader::decode(data) {
                            Some(h) if h.belongs_to(spec.database_id, spec.data_pages) => {
                                j.state = JournalState::Valid;
                            }
                            Some(_) => j.off("it is the journal of another database".into()),
                            None => j.off("it is not a valid generation journal".into()),
                        }
                    } else if matches!(j.state, JournalState::Valid | JournalState::Header) {
                        j.entries.insert(c.offset, data.to_vec());
                    }
                }
                t.match_journal(&spec.name, at);
                return;
            }
        }
        t.bytes += data.len() as u64;
        if let Kind::Log { image, .. } | Kind::Checkpoint { image, .. } = &mut t.kind {
            let start = usize::try_from(c.offset).unwrap_or(usize::MAX);
            if let Some(dst) = image.get_mut(start..start.saturating_add(data.len())) {
                dst.copy_from_slice(data);
            }
            return;
        }
        let first = c.offset / PAGE_SIZE as u64;
        let mut valid = Vec::new();
        for (k, page) in data.chunks_exact(PAGE_SIZE).enumerate() {
            let n = first + k as u64;
            let offset = n * PAGE_SIZE as u64;
            t.seen_pages += 1;
            if n < HEADER_PAGES {
                if DbHeader::decode(page).map(|h| h.database_id) != Some(spec.database_id) {
                    t.bad += 1;
                    t.problem(
                        ErrorClass::BadHeader,
                        &spec.name,
                        Some(n),
                        offset,
                        "is not a valid header copy of this database",
                        String::new(),
                        at,
                    );
                }
                continue;
            }
            let (class, what, detail) = match check_data_page(page, n, spec.database_id, scratch) {
                PageCheck::Good { generation } => {
                    valid.push((n, generation));
                    continue;
                }
                PageCheck::Unwritten => {
                    t.bad += 1;
                    t.unwritten += 1;
                    (
                        ErrorClass::UnwrittenPage,
                        "is all zeros (never written, or zeroed by the device)",
                        String::new(),
                    )
                }
                PageCheck::Bad => {
                    t.bad += 1;
                    (
                        ErrorClass::BadPage,
                        "fails its checksum beyond one bit (torn, overwritten or garbage)",
                        String::new(),
                    )
                }
                PageCheck::Correctable => {
                    t.correctable += 1;
                    (
                        ErrorClass::CorrectablePage,
                        "has exactly one flipped bit (correctable)",
                        String::new(),
                    )
                }
                PageCheck::WrongPageNumber { found } => {
                    t.wrong_page_number += 1;
                    (
                        ErrorClass::WrongPageNumber,
                        "holds another page of this database (a misdirected write): page ",
                        found.to_string(),
                    )
                }
                PageCheck::WrongDatabase { found } => {
                    t.bad += 1;
                    t.wrong_database += 1;
                    (
                        ErrorClass::WrongDatabasePage,
                        "holds a page of another database: id ",
                        format!("{found:#x}"),
                    )
                }
            };
            t.problem(class, &spec.name, Some(n), offset, what, detail, at);
        }
        if let Some(j) = &mut t.journal {
            if matches!(j.state, JournalState::Valid | JournalState::Header) {
                j.pages.insert(c.offset, valid);
            }
        }
        t.match_journal(&spec.name, at);
    }

    /// The files of database `d` (`s`) to read, queued: the database file, and for a checksum
    /// pass its log files and checkpoint file.
    fn add_targets(&mut self, d: usize, s: &InstanceSpec) -> Result<DbQueue, EngineError> {
        let spec = self.spec;
        let mut q = DbQueue::default();
        let bytes = (HEADER_PAGES.saturating_add(s.data_pages)).saturating_mul(PAGE_SIZE as u64);
        q.queue.push_back(self.targets.len());
        self.targets.push(Target::new(
            d,
            s.db_path.clone(),
            Kind::Database,
            bytes,
            &spec,
        )?);
        if spec.purpose == PassPurpose::Checksum {
            for path in &s.log.earlier_logs {
                let generation = path
                    .file_name()
                    .and_then(|n| n.to_str())
                    .and_then(parse_log_file_name)
                    .unwrap_or(0);
                q.queue.push_back(self.targets.len());
                self.targets.push(Target::new(
                    d,
                    path.clone(),
                    Kind::Log {
                        generation,
                        // Allocated when the file is opened (one per database at a time).
                        image: Vec::new(),
                        len: 0,
                        summary: None,
                    },
                    LOG_FILE_SIZE as u64,
                    &spec,
                )?);
            }
            q.queue.push_back(self.targets.len());
            self.targets.push(Target::new(
                d,
                s.log_dir.join(CHECKPOINT_FILE),
                Kind::Checkpoint {
                    image: Vec::new(),
                    missing: false,
                },
                2 * SLOT as u64,
                &spec,
            )?);
        }
        Ok(q)
    }

    /// Files with nothing (left) to read finish without a read.
    fn finish_empty(&mut self, e: &mut PhaseCx<'_, '_>, now: Instant) -> Result<(), EngineError> {
        // Empty files finish without a read.
        for d in 0..self.dbs.len() {
            while let Some(i) = self.dbs[d].active {
                if !self.targets[i].pass.drained()
                    || self.targets[i].pass.in_flight() > 0
                    || !self.targets[i].journal_idle()
                {
                    break;
                }
                self.finish_target(i, e, now);
                self.dbs[d].active = None;
                self.submit(e, now)?;
            }
        }
        Ok(())
    }

    /// A file's pass is over: a log file is scanned, the file closed.
    fn finish_target(&mut self, i: usize, e: &mut PhaseCx<'_, '_>, now: Instant) {
        let Some(t) = self.targets.get_mut(i) else {
            return;
        };
        t.ended = Some(now);
        if let Some(f) = t.file.take() {
            e.reactor.close_file(f);
        }
        if let Some(j) = &mut t.journal {
            if let Some(f) = j.file.take() {
                e.reactor.close_file(f);
            }
            if let JournalState::Off(why) = &j.state {
                let line = format!(
                    "Checksum: stale pages across runs not checked in {}: its generation journal: {why}.",
                    t.path.display()
                );
                e.log(&line, true);
            }
        }
        let Some(database_id) = e.pass_specs.get(t.db).map(|s| s.database_id) else {
            return;
        };
        if !t.pass.finished() {
            return;
        }
        if let Kind::Log {
            generation,
            image,
            len,
            summary,
        } = &mut t.kind
        {
            // Only what the file holds: a truncated file's records end where it does.
            let read = usize::try_from(*len).map_or(image.len(), |l| l.min(image.len()));
            let scan = scan_log_file(&image[..read], *generation, database_id);
            *image = Vec::new();
            *summary = Some(LogFileSummary::of(&scan, *len));
            t.seen_pages = t.bytes / PAGE_SIZE as u64;
            // Damage is reported with the log's other problems, once its database's files are all
            // read ([`check_log`]); a torn tail is what a crash leaves.
            if let ScanEnd::TornTail { offset } = scan.end {
                let line = format!(
                    "{} ends in a torn write at byte {offset}: a write a crash cut short, never acknowledged and not replayed.",
                    t.path.display()
                );
                e.log(&line, true);
            }
        }
    }

    /// Starts the next file of every database whose current file is done, and submits reads
    /// while the queue has room.
    fn submit(&mut self, e: &mut PhaseCx<'_, '_>, now: Instant) -> Result<(), EngineError> {
        for d in 0..self.dbs.len() {
            if self.dbs[d].active.is_none() && !self.stopped {
                self.dbs[d].active = self.dbs[d].queue.pop_front();
            }
            let Some(i) = self.dbs[d].active else {
                continue;
            };
            let t = &mut self.targets[i];
            if t.started.is_none() {
                t.started = Some(now);
                if matches!(t.kind, Kind::Database) && self.spec.purpose == PassPurpose::Checksum {
                    t.journal = Some(open_journal(e, &t.path, i));
                }
                self.planned = self.planned.saturating_sub(t.pass.total_bytes());
                open_target(t, e)?;
                self.planned = self.planned.saturating_add(t.pass.total_bytes());
            }
            let Some(file) = t.file else {
                continue;
            };
            let journal = t
                .journal
                .as_ref()
                .and_then(|j| j.file.filter(|_| !matches!(j.state, JournalState::Off(_))));
            while e.reactor.has_room_for(1 + usize::from(journal.is_some())) {
                let Some(chunk) = t.pass.next_request() else {
                    break;
                };
                let buf = e.reactor.buf(t.pass.chunk_size());
                e.reactor.submit(
                    Owner::Pass {
                        db: i,
                        offset: chunk.offset,
                    },
                    IoOp::Read,
                    file,
                    chunk.offset,
                    buf,
                    Some(chunk.len),
                )?;
                // The entries of the read's data pages.
                let (Some(jf), Some(j)) = (journal, t.journal.as_mut()) else {
                    continue;
                };
                let page = PAGE_SIZE as u64;
                let first = (chunk.offset / page).max(HEADER_PAGES);
                let end = (chunk.offset + chunk.len as u64) / page;
                let Some(at) = entry_offset(first).filter(|_| end > first) else {
                    continue;
                };
                let len = (end - first) as usize * ENTRY_BYTES;
                let buf = e.reactor.buf(len);
                j.in_flight += 1;
                e.reactor.submit(
                    Owner::PassJournal {
                        db: i,
                        offset: chunk.offset,
                    },
                    IoOp::Read,
                    jf,
                    at,
                    buf,
                    Some(len),
                )?;
            }
        }
        Ok(())
    }

    /// The problems of database `d`'s log ([`check_log`]), once its log files and checkpoint
    /// are all read to their end; `None` before (or when the pass reads no log).
    fn log_problems(
        &self,
        d: usize,
        database_id: u64,
    ) -> Option<Vec<mbx_store::log_dir::LogProblem>> {
        let mut files = Vec::new();
        let mut checkpoint: Option<Option<&[u8]>> = None;
        for t in self.targets.iter().filter(|t| t.db == d) {
            match &t.kind {
                Kind::Database => {}
                Kind::Log { summary, .. } => files.push((*summary)?),
                Kind::Checkpoint { image, missing } => {
                    if !*missing && !t.pass.finished() {
                        return None;
                    }
                    checkpoint = Some((!*missing).then_some(&image[..]));
                }
            }
        }
        let checkpoint = checkpoint?;
        Some(check_log(&files, checkpoint, database_id))
    }

    fn report(&self, e: &PhaseCx<'_, '_>, now: Instant) -> crate::assemble::PassReport {
        let started = self.started.unwrap_or(now);
        let mut report = crate::assemble::PassReport {
            purpose: self.spec.purpose,
            backup: Vec::new(),
            checksum: Vec::new(),
            integrity: Integrity::default(),
            errors: Vec::new(),
            completed: self.targets.iter().all(|t| t.pass.finished()),
            started,
            ended: now,
        };
        for (d, spec) in e.pass_specs.iter().enumerate() {
            let mine = || self.targets.iter().filter(move |t| t.db == d);
            let mut logs = ChecksumRow {
                database_path: spec.log_dir.display().to_string(),
                seen_pages: 0,
                bad_pages: 0,
                correctable_pages: 0,
                wrong_page_number_pages: 0,
                bytes: 0,
                elapsed_s: 0.0,
            };
            let mut any_log = false;
            for t in mine() {
                let elapsed = match (t.started, t.ended) {
                    (Some(s), Some(x)) => x.saturating_duration_since(s).as_secs_f64(),
                    _ => 0.0,
                };
                report.integrity.pages_verified += t.seen_pages;
                report.integrity.checksummed(t.seen_pages);
                report.integrity.bad_pages += t.bad;
                report.integrity.unwritten_pages += t.unwritten;
                report.integrity.wrong_database_pages += t.wrong_database;
                report.integrity.correctable_pages += t.correctable;
                report.integrity.wrong_page_number_pages += t.wrong_page_number;
                report.integrity.stale_pages += t.stale;
                let mut errors = t.errors.clone();
                errors.sort_by_key(|x| x.offset);
                report.errors.extend(errors);
                for (class, (count, page, offset, what)) in &t.more {
                    report.errors.push(ErrorEntry {
                        class: class.clone(),
                        instance: Some(spec.name.clone()),
                        count: *count,
                        first_at: rfc3339(e.reactor.clock().wall()),
                        message: format!(
                            "{}: {count} more pages beyond the {LISTED_PER_FILE} listed {what}",
                            t.path.display()
                        ),
                        ..crate::errors::located(Some(&t.path), Some(*offset), page.is_some())
                    });
                }
                match t.kind {
                    Kind::Database => {
                        if self.spec.purpose == PassPurpose::Backup {
                            // From the start of the pass: all databases start together.
                            let secs = t.ended.map_or(0.0, |x| {
                                x.saturating_duration_since(started).as_secs_f64()
                            });
                            let mb = t.bytes as f64 / 1e6;
                            report.backup.push(BackupRow {
                                instance: spec.name.clone(),
                                database_size_mb: t.pass.range().end as f64 / 1e6,
                                elapsed_s: secs,
                                mb_per_s: if secs > 0.0 { mb / secs } else { 0.0 },
                            });
                        }
                        if self.spec.purpose == PassPurpose::Checksum {
                            report.checksum.push(ChecksumRow {
                                database_path: t.path.display().to_string(),
                                seen_pages: t.seen_pages,
                                bad_pages: t.bad,
                                correctable_pages: t.correctable,
                                wrong_page_number_pages: t.wrong_page_number,
                                bytes: t.bytes,
                                elapsed_s: elapsed,
                            });
                        }
                    }
                    Kind::Log { .. } => {
                        any_log = true;
                        logs.seen_pages += t.seen_pages;
                        logs.bad_pages += t.bad;
                        logs.bytes += t.bytes;
                        logs.elapsed_s += elapsed;
                    }
                    // Its problems are the log's; its bytes are not a log file's.
                    Kind::Checkpoint { .. } => any_log = true,
                }
            }
            if let Some(problems) = self.log_problems(d, spec.database_id) {
                let at = rfc3339(e.reactor.clock().wall());
                for p in problems {
                    let path = spec.log_dir.join(p.file_name());
                    logs.bad_pages += 1;
                    report.integrity.log_problems += 1;
                    report.errors.push(ErrorEntry {
                        class: p.class(),
                        instance: Some(spec.name.clone()),
                        count: 1,
                        first_at: at.clone(),
                        message: format!("{}: {}", path.display(), p.describe(spec.database_id)),
                        ..crate::errors::located(Some(&path), p.offset(), false)
                    });
                }
            }
            if any_log {
                report.checksum.push(logs);
            }
        }
        report
    }
}

impl PhaseRun for SeqPass {
    fn kind(&self) -> Phase {
        match self.spec.purpose {
            PassPurpose::Backup => Phase::Backup,
            PassPurpose::Checksum => Phase::Checksum,
        }
    }

    fn planned(&self) -> Option<Duration> {
        self.estimate
    }

    fn pass_bytes(&self) -> Option<PassBytes> {
        Some(PassBytes {
            done: self.done,
            planned: self.planned,
        })
    }

    fn enter(&mut self, e: &mut PhaseCx<'_, '_>, now: Instant) -> Result<(), EngineError> {
        *e.mode = Mode::Stopping;
        self.started = Some(now);
        let spec = self.spec;
        // After transactions (the Stress test's checksum): the databases the plan opened, shut
        // down cleanly by now (nothing in flight, nothing dirty), and the log files on disk.
        if e.pass_specs.is_empty() {
            *e.pass_specs = e.dbs.iter().map(|d| d.pass_spec()).collect();
        }
        for (d, s) in e.pass_specs.iter().enumerate() {
            let q = self.add_targets(d, s)?;
            self.dbs.push(q);
        }
        self.planned = self.targets.iter().map(|t| t.pass.total_bytes()).sum();
        let line = format!(
            "{}: reading {} file(s), {:.1} MB, in {} KiB reads, {} in flight per database.",
            match spec.purpose {
                PassPurpose::Backup => "Database backup",
                PassPurpose::Checksum => "Checksum",
            },
            self.targets.len(),
            self.planned as f64 / 1e6,
            spec.chunk_bytes / 1024,
            spec.depth_per_file
        );
        e.log(&line, false);
        self.submit(e, now)
    }

    fn tick(&mut self, e: &mut PhaseCx<'_, '_>, now: Instant) -> Result<Flow, EngineError> {
        let at = rfc3339(e.reactor.clock().wall());
        let inbox = std::mem::take(e.pass_inbox);
        // The completed reads free their slots first and the next reads go out before any page is
        // verified, so the device is kept busy while this thread checks pages (as fio keeps its
        // queue full).
        for c in inbox.iter().filter(|c| c.part == PassPart::File) {
            if let Some(t) = self.targets.get_mut(c.file) {
                t.pass
                    .complete(c.offset, c.len)
                    .map_err(|x| EngineError::Invalid(x.to_string()))?;
                self.done = self.done.saturating_add(c.len as u64);
            }
        }
        if !inbox.is_empty() {
            self.submit(e, now)?;
        }
        let mut scratch = std::mem::take(&mut self.scratch);
        scratch.resize(PAGE_SIZE, 0);
        let mut touched = Vec::new();
        for c in inbox {
            self.verify(e.pass_specs, &c, &mut scratch, &at);
            e.reactor.give_back(c.data);
            if !touched.contains(&c.file) {
                touched.push(c.file);
            }
        }
        self.scratch = scratch;
        // Only once every chunk of this batch is verified: a file's row counts all its pages.
        for i in touched {
            let Some(t) = self.targets.get(i) else {
                continue;
            };
            if t.pass.drained() && t.journal_idle() && t.ended.is_none() {
                let db = t.db;
                self.finish_target(i, e, now);
                if let Some(q) = self.dbs.get_mut(db) {
                    q.active = None;
                }
            }
        }
        if let Some(s) = self.started {
            let elapsed = now.saturating_duration_since(s);
            if self.done > 0 && self.planned > 0 {
                self.estimate = Some(elapsed.mul_f64(self.planned as f64 / self.done as f64));
            }
        }
        self.submit(e, now)?;
        self.finish_empty(e, now)?;
        let idle = self.dbs.iter().all(|d| d.active.is_none())
            && (self.stopped || self.dbs.iter().all(|d| d.queue.is_empty()))
            && e.reactor.in_flight() == 0;
        if idle {
            *e.pass_report = Some(self.report(e, now));
            return Ok(Flow::Done);
        }
        Ok(Flow::Continue)
    }

    fn interrupt(&mut self, e: &mut PhaseCx<'_, '_>, _now: Instant) -> Result<Flow, EngineError> {
        self.stopped = true;
        for t in &mut self.targets {
            t.pass.stop();
        }
        super::log_stopping(e, "no more reads; the reads in flight complete ...");
        Ok(Flow::Continue)
    }
}

/// Opens a target's file when its turn comes and fits its pass to the file: a log file is read
/// to its end or to [`LOG_FILE_SIZE`], whichever comes first (a file shorter than its header
/// says, as a crash during its creation or a truncation leaves, or longer: [`check_log`] then
/// reports its length), buffered if its length is not a multiple of the O_DIRECT alignment; the
/// checkpoint file is read buffered (as the engine writes it), and a missing one is read as
/// nothing (its absence is a finding).
fn open_target(t: &mut Target, e: &mut PhaseCx<'_, '_>) -> Result<(), EngineError> {
    let mode = |direct| OpenMode {
        direct,
        write_through: false,
        write: false,
        create: false,
    };
    let direct = e.settings.direct && !matches!(t.kind, Kind::Checkpoint { .. });
    let mut f = match e.reactor.open_file(&t.path, mode(direct)) {
        Ok(f) => f,
        Err(mbx_io::IoError::Os { error, .. })
            if error.kind() == std::io::ErrorKind::NotFound
                && matches!(t.kind, Kind::Checkpoint { .. }) =>
        {
            if let Kind::Checkpoint { missing, .. } = &mut t.kind {
                *missing = true;
            }
            t.pass = Pass::new(0..0, t.pass.chunk_size(), t.pass.depth(), SeqOp::Read)
                .map_err(|x| EngineError::Invalid(x.to_string()))?;
            return Ok(());
        }
        Err(x) => return Err(x.into()),
    };
    let len = match &mut t.kind {
        Kind::Database => {
            t.file = Some(f);
            return Ok(());
        }
        Kind::Log {
            image, len: size, ..
        } => {
            *image = vec![0u8; LOG_FILE_SIZE];
            let len = e.reactor.file_len(f)?;
            *size = len;
            len
        }
        Kind::Checkpoint { image, .. } => {
            *image = vec![0u8; 2 * SLOT];
            e.reactor.file_len(f)?
        }
    };
    if direct && !len.is_multiple_of(mbx_io::ALIGN as u64) {
        e.reactor.close_file(f);
        f = e.reactor.open_file(&t.path, mode(false))?;
    }
    t.file = Some(f);
    let end = t.pass.range().end;
    if len < end {
        t.pass = Pass::new(0..len, t.pass.chunk_size(), t.pass.depth(), SeqOp::Read)
            .map_err(|x| EngineError::Invalid(x.to_string()))?;
    }
    Ok(())
}

/// Opens the generation journal of the database file at `db_path` (the pass's file number
/// `target`) for a checksum and reads its header; without one, says why.
fn open_journal(e: &mut PhaseCx<'_, '_>, db_path: &std::path::Path, target: usize) -> PassJournal {
    let mut j = PassJournal {
        file: None,
        state: JournalState::Header,
        in_flight: 0,
        pages: BTreeMap::new(),
        entries: BTreeMap::new(),
    };
    let Some(path) = mbx_store::journal::journal_path(db_path) else {
        j.off("none beside a block device".into());
        return j;
    };
    let mode = OpenMode::read_buffered();
    let f = match e.reactor.open_file(&path, mode) {
        Ok(f) => f,
        Err(_) => {
            j.off(format!(
                "{} is missing (the database was prepared by an earlier version; the next run or prepare creates it)",
                path.display()
            ));
            return j;
        }
    };
    j.file = Some(f);
    let len = mbx_store::journal::JOURNAL_HEADER_BYTES;
    let buf = e.reactor.buf(len);
    let submitted = e.reactor.has_room()
        && e.reactor
            .submit(
                Owner::PassJournal {
                    db: target,
                    offset: u64::MAX,
                },
                IoOp::Read,
                f,
                0,
                buf,
                Some(len),
            )
            .is_ok();
    if submitted {
        j.in_flight += 1;
    } else {
        j.off("its header could not be read".into());
    }
    j
}

/// The executor's settings for a plan that only reads its databases.
fn pass_settings(cfg: &RunConfig) -> Settings {
    Settings {
        target_iops: 0.0,
        max_dirty_age: Duration::from_secs_f64(cfg.cache.max_dirty_age_s),
        sample_every: Duration::from_secs_f64(cfg.sample_interval_s),
        bdm: false,
        copies: 1,
        compressibility_pct: cfg.compressibility_pct,
        // A pass checks whole pages itself; no transactional read is verified here.
        checksum_reads_pct: 100,
        hung_io: Duration::from_secs_f64(cfg.thresholds.hung_io_s),
        direct: cfg.direct,
        // A pass counts what it finds and reads on; an I/O error stops it.
        continue_on_errors: false,
    }
}

/// Runs a plan that only reads its databases ([`Plan::reads_only`]) through `queue`: the
/// databases are not opened for the workload (no cache, log writer or checkpoint, nothing
/// written); the pass phase reads them and the result carries its rows and verdict.
pub(crate) fn run_reads(
    cfg: &RunConfig,
    plan: &Plan,
    specs: Vec<InstanceSpec>,
    queue: Box<dyn IoQueue>,
    observer: &mut dyn Observer,
    cancel: &AtomicBool,
) -> Result<RunResult, EngineError> {
    let reactor = Reactor::new(queue);
    let clock = reactor.clock().clone();
    let (ref_instant, ref_wall) = (clock.now(), clock.wall());
    let engine_name = reactor.engine_name();
    let settings = pass_settings(cfg);
    let pacer = Pacer::new(PacerConfig::default(), 1.0, ref_instant)
        .map_err(|e| EngineError::Invalid(e.to_string()))?;
    let work = Workload::new(0, cfg.seed, cfg.op_mix.clone(), 1, pacer, None);
    let mut engine = crate::exec::Engine::new(settings, reactor, Vec::new(), work, observer);
    engine.read_only(specs);
    let outcome = crate::phase::execute(&mut engine, plan, cancel);
    let end = engine.now();
    let marks = engine.marks();
    let times = RunTimes {
        started: marks.started,
        measure_start: end,
        measure_end: end,
        ended: end,
        interrupted: marks.interrupted,
        interrupted_in: marks.interrupted_in,
        measured: false,
        measure_complete: false,
    };
    let stopped_in = engine.phase();
    let left = engine.leftovers();
    let (result, line) = crate::assemble::read_pass(
        cfg,
        plan.kind,
        crate::assemble::Measured::single(
            &left.dbs,
            &left.hung,
            &left.host,
            &left.txn,
            &*left.machine,
            &times,
        ),
        &times,
        (ref_instant, ref_wall),
        engine_name,
        left.pass_report,
        &left.notes,
    );
    if let Some(line) = line {
        engine.log(&line, false);
    }
    let mut result = result;
    if let Err(e) = outcome {
        crate::assemble::stop_with_error(&mut result, &e, clock.wall(), Some(stopped_in));
    }
    Ok(result)
}
