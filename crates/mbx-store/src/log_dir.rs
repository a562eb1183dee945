//! A database's log directory on disk: which generations are there, whether they form one
//! continuous log, the records from a position on (replay), and what an earlier run left behind
//! (adoption). The byte-level work is [`crate::log::scan_log_file`]; this module reads files.
//!
//! Continuity rules (what [`scan_log_dir`] reports as a [`LogBreak`]):
//! - generations are contiguous: a missing generation between two present ones is a break;
//! - every file has a valid header of its generation and database, and ends cleanly or with a
//!   torn tail. A torn tail is what a crash leaves; the next run continues in a new generation,
//!   so a torn tail may end any file, and replay skips the rest of that file. Any other damage
//!   is a break.
//!
//! Record Lsns are verified against their position in each file, so Lsns strictly increase
//! across files in generation order. A writer must count as durable only the contiguous prefix of
//! its writes: a record after a hole is never replayed.
//!
//! [`check_log`] is the stricter check of the Checksum test: the log as recovery would need it
//! (every file's length against its header, every generation from the checkpoint's to the
//! newest, both checkpoint slots; [`LogProblem`]).

use std::io::Read;
use std::path::Path;

use crate::checkpoint::{read_checkpoint, slot_states, Checkpoint, SlotState};
use crate::log::{
    log_file_name, parse_log_file_name, scan_log_file, FileScan, LogRecord, ScanEnd, LOG_FILE_SIZE,
};
use crate::lsn::Lsn;
use crate::StoreError;

pub use crate::log::LogBreak;

/// The log generations present in `dir` (files named as [`log_file_name`] makes them),
/// ascending. A directory that does not exist holds none.
pub fn list_log_generations(dir: &Path) -> Result<Vec<u64>, StoreError> {
    let entries = match std::fs::read_dir(dir) {
        Ok(rd) => rd,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Vec::new()),
        Err(e) => return Err(mbx_io::IoError::new("list", dir, e).into()),
    };
    let mut generations = Vec::new();
    for entry in entries {
        let entry = entry.map_err(|e| mbx_io::IoError::new("list", dir, e))?;
        if let Some(g) = entry.file_name().to_str().and_then(parse_log_file_name) {
            generations.push(g);
        }
    }
    generations.sort_unstable();
    Ok(generations)
}

/// Reads and scans log generation `generation` of `dir` (at most [`crate::log::LOG_FILE_SIZE`]
/// bytes are read).
pub fn scan_log_generation(
    dir: &Path,
    generation: u64,
    database_id: u64,
) -> Result<FileScan, StoreError> {
    let path = dir.join(log_file_name(generation));
    let file = std::fs::File::open(&path).map_err(|e| mbx_io::IoError::new("open", &path, e))?;
    let mut image = Vec::with_capacity(crate::log::LOG_FILE_SIZE);
    file.take(crate::log::LOG_FILE_SIZE as u64)
        .read_to_end(&mut image)
        .map_err(|e| mbx_io::IoError::new("read", &path, e))?;
    Ok(scan_log_file(&image, generation, database_id))
}

/// Every log file of a directory, scanned.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LogDirScan {
    /// One scan per file, ascending generation.
    pub files: Vec<FileScan>,
    /// Every place the log is not continuous, in generation order; empty for a good log.
    pub breaks: Vec<LogBreak>,
}

impl LogDirScan {
    /// True if the files form one continuous log ([`LogDirScan::breaks`] is empty).
    pub fn is_continuous(&self) -> bool {
        self.breaks.is_empty()
    }

    /// Where the log ends: after the last valid record of the newest file (`None` without files).
    pub fn end(&self) -> Option<Lsn> {
        self.files.last().map(FileScan::end_lsn)
    }

    /// Every valid record, in Lsn order.
    pub fn records(&self) -> impl Iterator<Item = &LogRecord> {
        self.files.iter().flat_map(|f| f.records.iter())
    }
}

/// Scans every log file of `dir` (database `database_id`) and checks that they form one
/// continuous log (module docs). Holds every record in memory: for tests and checks of small
/// logs; replay uses [`visit_records_from`].
pub fn scan_log_dir(dir: &Path, database_id: u64) -> Result<LogDirScan, StoreError> {
    let mut scan = LogDirScan {
        files: Vec::new(),
        breaks: Vec::new(),
    };
    let mut previous: Option<u64> = None;
    for generation in list_log_generations(dir)? {
        if let Some(brk) = gap(previous, generation) {
            scan.breaks.push(brk);
        }
        let file = scan_log_generation(dir, generation, database_id)?;
        if let Some(brk) = damage(&file) {
            scan.breaks.push(brk);
        }
        scan.files.push(file);
        previous = Some(generation);
    }
    Ok(scan)
}

fn gap(previous: Option<u64>, generation: u64) -> Option<LogBreak> {
    let first = previous?.checked_add(1)?;
    (generation > first).then(|| LogBreak::Missing {
        first,
        last: generation - 1,
    })
}

fn damage(file: &FileScan) -> Option<LogBreak> {
    matches!(file.end, ScanEnd::Damaged { .. }).then_some(LogBreak::Damaged {
        generation: file.generation,
        end: file.end,
    })
}

/// Calls `visit` with every record at or after `from`, in Lsn order, reading one file at a time
/// (replay from a checkpoint's Lsn). Returns where the log ends. Fails with
/// [`StoreError::LogBroken`] if a generation from `from.generation()` (at least 1) on is missing
/// or damaged; `visit` has then seen the records before the break.
pub fn visit_records_from(
    dir: &Path,
    database_id: u64,
    from: Lsn,
    mut visit: impl FnMut(&LogRecord),
) -> Result<Lsn, StoreError> {
    let broken = |problem| StoreError::LogBroken {
        dir: dir.to_path_buf(),
        problem,
    };
    let first_needed = from.generation().max(1);
    let mut previous = first_needed.checked_sub(1);
    let mut end = from;
    for generation in list_log_generations(dir)?
        .into_iter()
        .filter(|&g| g >= first_needed)
    {
        if let Some(brk) = gap(previous, generation) {
            return Err(broken(brk));
        }
        let file = scan_log_generation(dir, generation, database_id)?;
        for record in file.records.iter().filter(|r| r.lsn >= from) {
            visit(record);
        }
        if let Some(brk) = damage(&file) {
            return Err(broken(brk));
        }
        end = end.max(file.end_lsn());
        previous = Some(generation);
    }
    Ok(end)
}

/// What [`check_log`] needs of one log file: its length and how its scan ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct LogFileSummary {
    /// The generation its name says.
    pub generation: u64,
    /// Its length in bytes.
    pub len: u64,
    /// True if its header is a valid header of this generation and database.
    pub header_valid: bool,
    /// Where and why its scan ended.
    pub end: ScanEnd,
    /// Where its valid records end ([`FileScan::end_lsn`]).
    pub end_lsn: Lsn,
}

impl LogFileSummary {
    /// The summary of `scan`, of a file `len` bytes long.
    pub fn of(scan: &FileScan, len: u64) -> LogFileSummary {
        LogFileSummary {
            generation: scan.generation,
            len,
            header_valid: scan.header_valid,
            end: scan.end,
            end_lsn: scan.end_lsn(),
        }
    }
}

/// What is wrong with a database's log as the Checksum test sees it ([`check_log`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LogProblem {
    /// A log file with a valid header is not the size the header states: truncated (records
    /// past its end are lost) or extended.
    Length {
        /// The file's generation.
        generation: u64,
        /// Its length.
        len: u64,
        /// The size its header states.
        expected: u64,
    },
    /// A log file's header is invalid, or a record in it is damaged (not a torn tail).
    Damaged {
        /// The file's generation.
        generation: u64,
        /// Its length.
        len: u64,
        /// Where and why its scan ended.
        end: ScanEnd,
    },
    /// Generations `first..=last` are absent although recovery needs them (they are at or after
    /// the checkpoint's generation and not after the newest), or, without a usable checkpoint,
    /// absent between two present ones.
    Missing {
        /// First absent generation.
        first: u64,
        /// Last absent generation.
        last: u64,
    },
    /// The log folder has no checkpoint file.
    CheckpointMissing,
    /// Neither slot of the checkpoint file holds a valid checkpoint of this database.
    NoCheckpoint {
        /// What each slot holds.
        slots: [SlotState; 2],
    },
    /// A slot of the checkpoint file is damaged or holds another database's checkpoint (the
    /// other slot holds this database's).
    Slot {
        /// Which slot (0 or 1).
        slot: usize,
        /// What it holds.
        state: SlotState,
    },
    /// The checkpoint is past the end of the log: changes it says are in the database file are
    /// in no log file.
    CheckpointAhead {
        /// The checkpoint's Lsn.
        checkpoint: Lsn,
        /// Where the log ends (the newest file's last valid record), if anywhere.
        end: Option<Lsn>,
    },
}

impl LogProblem {
    /// The `errors[]` class: `log_damaged`, `log_missing` or `checkpoint_damaged`.
    pub fn class(&self) -> mbx_result::ErrorClass {
        use mbx_result::ErrorClass;
        match self {
            LogProblem::Length { .. } | LogProblem::Damaged { .. } => ErrorClass::LogDamaged,
            LogProblem::Missing { .. } => ErrorClass::LogMissing,
            LogProblem::CheckpointMissing
            | LogProblem::NoCheckpoint { .. }
            | LogProblem::Slot { .. }
            | LogProblem::CheckpointAhead { .. } => ErrorClass::CheckpointDamaged,
        }
    }

    /// The file the problem is in: a log file's name, or the checkpoint file's.
    pub fn file_name(&self) -> String {
        match *self {
            LogProblem::Length { generation, .. } | LogProblem::Damaged { generation, .. } => {
                log_file_name(generation)
            }
            LogProblem::Missing { first, .. } => log_file_name(first),
            _ => crate::checkpoint::CHECKPOINT_FILE.to_string(),
        }
    }

    /// The byte offset in that file where the problem is, when there is one.
    pub fn offset(&self) -> Option<u64> {
        match *self {
            LogProblem::Length { len, expected, .. } => Some(len.min(expected)),
            LogProblem::Damaged { end, .. } => Some(end.offset() as u64),
            LogProblem::Slot { slot, .. } => Some((slot * crate::checkpoint::SLOT) as u64),
            _ => None,
        }
    }
}

fn describe_slot(state: SlotState, database_id: u64) -> String {
    match state {
        SlotState::Empty => "empty".into(),
        SlotState::Damaged => "damaged (neither empty nor a valid checkpoint)".into(),
        SlotState::Valid(c) if c.database_id == database_id => {
            format!("checkpoint {} at Lsn {}", c.sequence, c.lsn)
        }
        SlotState::Valid(c) => format!("a checkpoint of another database ({:#x})", c.database_id),
    }
}

impl LogProblem {
    /// What is wrong, in words, after the file's path (`database_id` names what a slot of
    /// another database is not).
    pub fn describe(&self, database_id: u64) -> String {
        match *self {
            LogProblem::Length { len, expected, .. } if len < expected => format!(
                "is {len} bytes long; its header says {expected}: the file was truncated, \
                 and whatever it held past byte {len} is lost"
            ),
            LogProblem::Length { len, expected, .. } => {
                format!("is {len} bytes long; its header says {expected}: the file was extended")
            }
            LogProblem::Damaged {
                len,
                end:
                    ScanEnd::Damaged {
                        offset: 0,
                        damage: crate::log::Damage::Header(p),
                    },
                generation,
            } => format!(
                "({len} bytes) has no valid log header of generation {generation:#X} of this \
                 database: {p}"
            ),
            LogProblem::Damaged { end, .. } => match end.damage() {
                Some(d) => format!(
                    "is damaged at byte offset {}: {d}; the log ends before it",
                    end.offset()
                ),
                None => "is damaged".into(),
            },
            LogProblem::Missing { first, last } if first == last => format!(
                "is missing (log generation {first:#X}): the log is not continuous from the \
                 checkpoint's generation to the newest, and recovery needs every one"
            ),
            LogProblem::Missing { last, .. } => format!(
                "is missing, and so are the generations after it up to {last:#X} ({}): the \
                 log is not continuous from the checkpoint's generation to the newest, and \
                 recovery needs every one",
                log_file_name(last)
            ),
            LogProblem::CheckpointMissing => {
                "is missing: without it recovery cannot tell where to start".into()
            }
            LogProblem::NoCheckpoint { slots } => format!(
                "holds no valid checkpoint of this database (slot 0: {}; slot 1: {})",
                describe_slot(slots[0], database_id),
                describe_slot(slots[1], database_id)
            ),
            LogProblem::Slot { slot, state } => format!(
                "slot {slot} is {}; the other slot holds the checkpoint",
                match state {
                    SlotState::Damaged => "damaged (neither empty nor a valid checkpoint)".into(),
                    other => describe_slot(other, database_id),
                }
            ),
            LogProblem::CheckpointAhead { checkpoint, end } => format!(
                "holds a checkpoint at Lsn {checkpoint}, past the end of the log ({}): changes \
                 it says are in the database are in no log file",
                end.map_or_else(|| "no valid log file".to_string(), |e| format!("Lsn {e}"))
            ),
        }
    }
}

/// Checks a database's log as recovery would need it, from what was read of its log folder:
/// `files` (every log file, any order), `checkpoint` (the checkpoint file's bytes, `None` if
/// it does not exist). Problems, in this order:
/// - each file: a valid header stating a size other than the file's length
///   ([`LogProblem::Length`]), else an invalid header or a damaged record
///   ([`LogProblem::Damaged`]; a torn tail is what a crash leaves, not a problem);
/// - the checkpoint: missing, no valid slot of this database, or a slot damaged or of another
///   database beside the valid one;
/// - generations: with a checkpoint, every generation from its generation to the newest must be
///   present (older ones may be gone, in any order); without one, the present ones must be
///   contiguous ([`LogProblem::Missing`]);
/// - the checkpoint past the end of the log ([`LogProblem::CheckpointAhead`]), when no file it
///   needs was found damaged (which already explains it).
pub fn check_log(
    files: &[LogFileSummary],
    checkpoint: Option<&[u8]>,
    database_id: u64,
) -> Vec<LogProblem> {
    let mut files = files.to_vec();
    files.sort_by_key(|f| f.generation);
    let mut out = Vec::new();
    for f in &files {
        if f.header_valid && f.len != LOG_FILE_SIZE as u64 {
            out.push(LogProblem::Length {
                generation: f.generation,
                len: f.len,
                expected: LOG_FILE_SIZE as u64,
            });
        } else if matches!(f.end, ScanEnd::Damaged { .. }) {
            out.push(LogProblem::Damaged {
                generation: f.generation,
                len: f.len,
                end: f.end,
            });
        }
    }
    let mut current = None;
    match checkpoint {
        // No log and no checkpoint: a database never run since it was prepared (or whose log
        // was removed after a clean shutdown); there is nothing to recover, so nothing missing.
        None if files.is_empty() => {}
        None => out.push(LogProblem::CheckpointMissing),
        Some(image) => {
            let slots = slot_states(image);
            let ours = |s: &SlotState| match *s {
                SlotState::Valid(c) if c.database_id == database_id => Some(c),
                _ => None,
            };
            current = slots.iter().filter_map(ours).max_by_key(|c| c.sequence);
            if current.is_none() {
                out.push(LogProblem::NoCheckpoint { slots });
            } else {
                for (slot, state) in slots.iter().enumerate() {
                    if *state != SlotState::Empty && ours(state).is_none() {
                        out.push(LogProblem::Slot {
                            slot,
                            state: *state,
                        });
                    }
                }
            }
        }
    }
    let generations: Vec<u64> = files.iter().map(|f| f.generation).collect();
    let Some(c) = current else {
        let mut previous = None;
        for &g in &generations {
            if let Some(LogBreak::Missing { first, last }) = gap(previous, g) {
                out.push(LogProblem::Missing { first, last });
            }
            previous = Some(g);
        }
        return out;
    };
    let needed = c.lsn.generation().max(1);
    let newest = files.last();
    let end = newest.filter(|f| f.header_valid).map(|f| f.end_lsn);
    if newest.is_none_or(|f| f.generation < needed) {
        // The checkpoint's generation is after every file there is.
        out.push(match newest {
            None => LogProblem::Missing {
                first: needed,
                last: needed,
            },
            Some(_) => LogProblem::CheckpointAhead {
                checkpoint: c.lsn,
                end,
            },
        });
        return out;
    }
    let mut previous = needed.checked_sub(1);
    for &g in generations.iter().filter(|&&g| g >= needed) {
        if let Some(LogBreak::Missing { first, last }) = gap(previous, g) {
            out.push(LogProblem::Missing { first, last });
        }
        previous = Some(g);
    }
    let needed_damaged = out.iter().any(|p| match *p {
        LogProblem::Length { generation, .. } | LogProblem::Damaged { generation, .. } => {
            generation >= needed
        }
        LogProblem::Missing { .. } => true,
        _ => false,
    });
    if !needed_damaged && end.is_none_or(|e| c.lsn > e) {
        out.push(LogProblem::CheckpointAhead {
            checkpoint: c.lsn,
            end,
        });
    }
    out
}

/// What an earlier run left in a log directory ([`describe_log_dir`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LogDirState {
    /// Log generations present, ascending.
    pub generations: Vec<u64>,
    /// Where the log ends: after the last valid record of the newest file, or `None` if there is
    /// no file or the newest one has no valid header of this database.
    pub end: Option<Lsn>,
    /// The directory's checkpoint, if it is one of this database.
    pub checkpoint: Option<Checkpoint>,
    /// The sequence the next checkpoint written here must carry: one more than the checkpoint
    /// found, whichever database it names (so the next one wins), or 1.
    pub next_checkpoint_sequence: u64,
}

impl LogDirState {
    /// The newest generation present.
    pub fn newest(&self) -> Option<u64> {
        self.generations.last().copied()
    }

    /// The generation a new run writes next: one after the newest present, or 1.
    pub fn next_generation(&self) -> u64 {
        self.newest().map_or(1, |g| g.saturating_add(1))
    }

    /// Generations present that the checkpoint no longer needs (safe to delete); none without a
    /// checkpoint of this database.
    pub fn retirable(&self) -> impl Iterator<Item = u64> + '_ {
        self.generations
            .iter()
            .copied()
            .filter(|&g| self.checkpoint.is_some_and(|c| !c.needs_generation(g)))
    }
}

/// Describes what an earlier run left in `dir` for database `database_id`: the generations, where
/// the log ends, the checkpoint. Reads the newest file and the checkpoint only. The engine
/// continues with [`LogDirState::next_generation`] and deletes [`LogDirState::retirable`] files
/// once its own checkpoints no longer need them.
pub fn describe_log_dir(dir: &Path, database_id: u64) -> Result<LogDirState, StoreError> {
    let generations = list_log_generations(dir)?;
    let end = match generations.last() {
        Some(&g) => {
            let file = scan_log_generation(dir, g, database_id)?;
            file.header_valid.then(|| file.end_lsn())
        }
        None => None,
    };
    let found = read_checkpoint(dir)?;
    Ok(LogDirState {
        generations,
        end,
        checkpoint: found.filter(|c| c.database_id == database_id),
        next_checkpoint_sequence: found.map_or(1, |c| c.next_sequence()),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::checkpoint::{CHECKPOINT_FILE, SLOT};
    use crate::log::{
        encode_log_header, encode_record, record_size, Damage, RedoEntry, LOG_SECTOR,
    };
    use crate::redo::{add_entries, redo_set, RedoSet};

    const DB: u64 = 5;

    fn io(op: &'static str, path: &Path) -> impl FnOnce(std::io::Error) -> StoreError {
        let path = path.to_path_buf();
        move |e| mbx_io::IoError::new(op, path, e).into()
    }

    /// Writes log generation `gen` of database `db` with `records` records; record `i` changes
    /// page `10 + i` to generation `gen * 100 + i`. Returns the image.
    fn write_log(dir: &Path, gen: u64, db: u64, records: usize) -> Result<Vec<u8>, StoreError> {
        let mut file = vec![0u8; LOG_FILE_SIZE];
        encode_log_header(&mut file, gen, db, 1);
        let mut off = LOG_SECTOR;
        for i in 0..records as u64 {
            let entries = [RedoEntry {
                page: 10 + i,
                generation: gen * 100 + i,
            }];
            off += encode_record(
                &mut file[off..],
                Lsn::new(gen, off as u64),
                6000,
                2,
                &entries,
            );
        }
        let path = dir.join(log_file_name(gen));
        std::fs::write(&path, &file).map_err(io("write", &path))?;
        Ok(file)
    }

    fn write_checkpoint(dir: &Path, c: Checkpoint) -> Result<(), StoreError> {
        let mut image = vec![0u8; 2 * SLOT];
        let off = c.slot_offset() as usize;
        c.encode(&mut image[off..off + SLOT]);
        let path = dir.join(CHECKPOINT_FILE);
        std::fs::write(&path, image).map_err(io("write", &path))
    }

    fn tmp() -> Result<tempfile::TempDir, StoreError> {
        tempfile::tempdir().map_err(io("create", Path::new("temporary directory")))
    }

    #[test]
    fn lsns_continue_across_files() -> Result<(), StoreError> {
        let dir = tmp()?;
        write_log(dir.path(), 1, DB, 3)?;
        write_log(dir.path(), 2, DB, 2)?;
        // Not log files: ignored.
        for other in [
            "E000000003.log",
            "E0000000003.LOG",
            "notes.txt",
            CHECKPOINT_FILE,
        ] {
            std::fs::write(dir.path().join(other), b"x").map_err(io("write", dir.path()))?;
        }
        assert_eq!(list_log_generations(dir.path())?, vec![1, 2]);
        let scan = scan_log_dir(dir.path(), DB)?;
        assert!(scan.is_continuous(), "{:?}", scan.breaks);
        assert!(scan
            .files
            .iter()
            .all(|f| f.header_valid && f.end.is_clean()));
        let lsns: Vec<Lsn> = scan.records().map(|r| r.lsn).collect();
        assert_eq!(lsns.len(), 5);
        assert!(lsns.windows(2).all(|w| w[0] < w[1]));
        let step = record_size(6000, 1) as u64;
        assert_eq!(lsns[2], Lsn::new(1, LOG_SECTOR as u64 + 2 * step));
        assert_eq!(lsns[3], Lsn::new(2, LOG_SECTOR as u64));
        assert_eq!(scan.end(), Some(Lsn::new(2, LOG_SECTOR as u64 + 2 * step)));
        Ok(())
    }

    #[test]
    fn gaps_and_damage_break_the_log_but_a_torn_tail_does_not() -> Result<(), StoreError> {
        let dir = tmp()?;
        write_log(dir.path(), 1, DB, 2)?;
        let mut torn = write_log(dir.path(), 2, DB, 2)?;
        write_log(dir.path(), 3, DB, 1)?;
        write_log(dir.path(), 5, DB, 1)?;
        write_log(dir.path(), 6, 99, 1)?; // another database's file
                                          // Generation 2 ends with a torn write (a crash; generation 3 is the next run's).
        let second = LOG_SECTOR + record_size(6000, 1);
        torn[second + LOG_SECTOR..second + 2 * LOG_SECTOR].fill(0);
        let path = dir.path().join(log_file_name(2));
        std::fs::write(&path, &torn).map_err(io("write", &path))?;
        let scan = scan_log_dir(dir.path(), DB)?;
        assert_eq!(
            scan.files[1].end,
            crate::log::ScanEnd::TornTail { offset: second }
        );
        assert_eq!(
            scan.breaks,
            vec![
                LogBreak::Missing { first: 4, last: 4 },
                LogBreak::Damaged {
                    generation: 6,
                    end: ScanEnd::Damaged {
                        offset: 0,
                        damage: Damage::Header(crate::log::HeaderProblem::Database { found: 99 })
                    }
                }
            ]
        );
        assert_eq!(
            scan.breaks[0].to_string(),
            "log generation 0x4 (E0000000004.log) is missing"
        );
        // Replay from generation 2 goes past the torn tail and stops at the gap.
        let mut seen = Vec::new();
        let err = visit_records_from(dir.path(), DB, Lsn::new(2, 0), |r| seen.push(r.lsn));
        assert!(matches!(
            err,
            Err(StoreError::LogBroken {
                problem: LogBreak::Missing { first: 4, last: 4 },
                ..
            })
        ));
        assert_eq!(
            seen,
            vec![
                Lsn::new(2, LOG_SECTOR as u64),
                Lsn::new(3, LOG_SECTOR as u64)
            ]
        );
        Ok(())
    }

    #[test]
    fn replay_visits_the_records_from_the_checkpoint_on() -> Result<(), StoreError> {
        let dir = tmp()?;
        let step = record_size(6000, 1) as u64;
        write_log(dir.path(), 3, DB, 4)?;
        write_log(dir.path(), 4, DB, 3)?;
        let checkpoint = Lsn::new(3, LOG_SECTOR as u64 + 2 * step);
        let mut set = RedoSet::new();
        let mut lsns = Vec::new();
        let end = visit_records_from(dir.path(), DB, checkpoint, |r| {
            lsns.push(r.lsn);
            add_entries(&mut set, &r.entries);
        })?;
        assert_eq!(lsns.len(), 2 + 3);
        assert_eq!(lsns[0], checkpoint);
        assert_eq!(end, Lsn::new(4, LOG_SECTOR as u64 + 3 * step));
        // Records 2 and 3 of generation 3 and all of generation 4: pages 10..=13.
        assert_eq!(
            set,
            RedoSet::from([(10, 400), (11, 401), (12, 402), (13, 303)])
        );
        let all = scan_log_dir(dir.path(), DB)?;
        assert_eq!(redo_set(all.records().filter(|r| r.lsn >= checkpoint)), set);
        // A checkpoint at the end of the log: nothing to replay.
        let none = visit_records_from(dir.path(), DB, end, |_| panic!("no record expected"))?;
        assert_eq!(none, end);
        // The checkpoint's generation is gone: replay cannot start.
        let before = Lsn::new(2, LOG_SECTOR as u64);
        let err = visit_records_from(dir.path(), DB, before, |_| {}).err();
        assert!(err.is_some_and(|e| e.to_string().contains("E0000000002.log) is missing")));
        Ok(())
    }

    /// A file of generation `gen` with a valid header, clean, `len` bytes long, its records
    /// ending at `end`.
    fn file(gen: u64, len: u64, end: u64) -> LogFileSummary {
        LogFileSummary {
            generation: gen,
            len,
            header_valid: true,
            end: ScanEnd::Clean {
                offset: end as usize,
            },
            end_lsn: Lsn::new(gen, end),
        }
    }

    fn checkpoint_at(lsn: Lsn, db: u64) -> Vec<u8> {
        let mut image = vec![0u8; 2 * SLOT];
        let c = Checkpoint {
            sequence: 1,
            database_id: db,
            lsn,
        };
        let off = c.slot_offset() as usize;
        c.encode(&mut image[off..off + SLOT]);
        image
    }

    #[test]
    fn the_log_is_checked_from_the_checkpoint_to_the_newest() {
        let full = LOG_FILE_SIZE as u64;
        let sector = LOG_SECTOR as u64;
        let ckpt = checkpoint_at(Lsn::new(3, sector), DB);
        // Generations 1 and 3..=5 with the checkpoint in 3: the gap at 2 is before it.
        let good: Vec<_> = [1, 3, 4, 5].map(|g| file(g, full, 2 * sector)).to_vec();
        assert_eq!(check_log(&good, Some(&ckpt), DB), vec![]);
        // Generation 4 gone: recovery needs it.
        let gap: Vec<_> = [3, 5].map(|g| file(g, full, 2 * sector)).to_vec();
        assert_eq!(
            check_log(&gap, Some(&ckpt), DB),
            vec![LogProblem::Missing { first: 4, last: 4 }]
        );
        // Without a checkpoint, any gap between present generations is one.
        assert_eq!(
            check_log(&good, None, DB),
            vec![
                LogProblem::CheckpointMissing,
                LogProblem::Missing { first: 2, last: 2 }
            ]
        );
        // No log and no checkpoint: a database never run since it was prepared has nothing to
        // recover, so nothing is missing.
        assert_eq!(check_log(&[], None, DB), vec![]);
        // A short file, a long one, a damaged one; the checkpoint of another database.
        let mut bad = good.clone();
        bad[1].len = 5 * sector;
        bad[2].len = full + 1;
        bad[3].end = ScanEnd::Damaged {
            offset: 3 * LOG_SECTOR,
            damage: Damage::Checksum,
        };
        let foreign = checkpoint_at(Lsn::new(3, sector), DB + 1);
        let problems = check_log(&bad, Some(&foreign), DB);
        // Without a checkpoint of this database, the gap at 2 counts too.
        assert_eq!(problems.len(), 5, "{problems:?}");
        assert_eq!(
            problems[0],
            LogProblem::Length {
                generation: 3,
                len: 5 * sector,
                expected: full
            }
        );
        assert_eq!(problems[1].class(), "log_damaged");
        assert_eq!(problems[2].file_name(), log_file_name(5));
        assert!(matches!(problems[3], LogProblem::NoCheckpoint { .. }));
        assert!(problems[3]
            .describe(DB)
            .contains("slot 1: a checkpoint of another database (0x6)"));
        assert_eq!(problems[4], LogProblem::Missing { first: 2, last: 2 });
        // The checkpoint after the newest file, or past its last record.
        let ahead = checkpoint_at(Lsn::new(6, sector), DB);
        assert!(matches!(
            check_log(&good, Some(&ahead), DB)[..],
            [LogProblem::CheckpointAhead { .. }]
        ));
        let ahead = checkpoint_at(Lsn::new(5, 3 * sector), DB);
        assert!(matches!(
            check_log(&good, Some(&ahead), DB)[..],
            [LogProblem::CheckpointAhead { .. }]
        ));
        // No log file at all: the checkpoint's generation is missing.
        assert_eq!(
            check_log(&[], Some(&ckpt), DB),
            vec![LogProblem::Missing { first: 3, last: 3 }]
        );
    }

    #[test]
    fn adoption_describes_what_a_run_left() -> Result<(), StoreError> {
        let dir = tmp()?;
        let empty = describe_log_dir(&dir.path().join("absent"), DB)?;
        assert_eq!(empty.generations, Vec::<u64>::new());
        assert_eq!(
            (empty.newest(), empty.end, empty.checkpoint),
            (None, None, None)
        );
        assert_eq!(
            (empty.next_generation(), empty.next_checkpoint_sequence),
            (1, 1)
        );
        for gen in 7..=9 {
            write_log(dir.path(), gen, DB, 2)?;
        }
        let checkpoint = Checkpoint {
            sequence: 41,
            database_id: DB,
            lsn: Lsn::new(8, LOG_SECTOR as u64),
        };
        write_checkpoint(dir.path(), checkpoint)?;
        let state = describe_log_dir(dir.path(), DB)?;
        assert_eq!(state.generations, vec![7, 8, 9]);
        assert_eq!(state.newest(), Some(9));
        assert_eq!(state.next_generation(), 10);
        let step = record_size(6000, 1) as u64;
        assert_eq!(state.end, Some(Lsn::new(9, LOG_SECTOR as u64 + 2 * step)));
        assert_eq!(state.checkpoint, Some(checkpoint));
        assert_eq!(state.next_checkpoint_sequence, 42);
        assert_eq!(state.retirable().collect::<Vec<_>>(), vec![7]);
        // Another database's checkpoint is not ours, but the sequence still continues after it,
        // and without our checkpoint nothing may be deleted.
        write_checkpoint(
            dir.path(),
            Checkpoint {
                database_id: 1,
                ..checkpoint
            },
        )?;
        let state = describe_log_dir(dir.path(), DB)?;
        assert_eq!(
            (state.checkpoint, state.next_checkpoint_sequence),
            (None, 42)
        );
        assert_eq!(state.retirable().count(), 0);
        Ok(())
    }
}
