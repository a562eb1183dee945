//! The log replication reader of one database (copies > 1): reads the log as a passive copy's
//! log shipping would, one read at a time, every byte once.
//!
//! Read sizes: the seed reports show 232,527-232,584 bytes per replication read on average,
//! with as many bytes read as written: about 4.5 reads per 1 MiB log file. A file is read in
//! reads of nearly equal size (whole sectors), and the number of reads per file is chosen so that
//! the average over the run follows [`REPL_AVG_BYTES`] ([`ReadPlan`]): some files take 4 reads,
//! some 5. Capping reads at a fixed size instead leaves a short read at the end of every file,
//! which pulls the average below the seeds'.
//!
//! When: a read is made as soon as the log it covers is on disk, not when its file closes (as
//! continuous replication's block mode ships the log as it is written). So the reader trails the
//! writer by at most one read, and a measured phase's replication reads are its own log to
//! within one read per database. Reading whole files only once they closed trailed by up to a
//! file (1 MiB): a 60 s phase at 64 KiB/s of log read back 1.08-1.13 of what it wrote. The
//! plan of a file still being written assumes it will fill (1 MiB); a file that closes shorter
//! (at shutdown) ends with a shorter read, and the plan is told the bytes and reads it really
//! had, so the average keeps following the seeds'.
//!
//! What the reads return is verified ([`ReadCheck`]), as a passive copy verifies the log it
//! copies: the file's header, then every record in order (checksum, generation, Lsn equal to its
//! position, so each follows the one before), up to exactly where the writer stopped writing
//! the file. Every byte read (all of a closed file, what is on disk of an open one) was written
//! by this run and acknowledged, so a sector
//! that reads back as zeros is a log write the storage dropped or tore ([`LOST_LOG_WRITE`]), and
//! anything else not a valid record is damage ([`LOG_DAMAGED`]). The reads themselves are not
//! changed: verifying needs no I/O of its own.

use mbx_io::IoOp;
use mbx_store::log::{check_header, check_record, record_len};

use super::log::{LogFile, LogWriter};
use super::logfmt::{Lsn, LOG_FILE_SIZE, LOG_SECTOR};
use crate::reactor::{Owner, Reactor};
use crate::result::ErrorClass;
use crate::EngineError;

/// `errors[]` class of a log write that reads back as zeros, in whole or in part.
pub(crate) const LOST_LOG_WRITE: ErrorClass = ErrorClass::LostLogWrite;
/// `errors[]` class of log bytes read back that are not what was written (and not zeros).
pub(crate) const LOG_DAMAGED: ErrorClass = ErrorClass::LogDamaged;

/// Average log replication read (the seed reports' 232,527-232,584 bytes).
pub(crate) const REPL_AVG_BYTES: u64 = 232_550;

/// How many reads each log file gets, so that the average read over the run follows
/// [`REPL_AVG_BYTES`]: after every file, the reads so far are the bytes so far divided by the
/// average, rounded (so they never differ from it by more than half a read).
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub(crate) struct ReadPlan {
    bytes: u64,
    reads: u64,
}

impl ReadPlan {
    /// The number of reads for the next file, of `used` bytes: at least 1, at most one per
    /// sector.
    pub fn reads_for(&mut self, used: u64) -> u64 {
        self.bytes = self.bytes.saturating_add(used);
        let due = self.bytes.saturating_add(REPL_AVG_BYTES / 2) / REPL_AVG_BYTES;
        let sectors = used.div_ceil(LOG_SECTOR as u64).max(1);
        let n = due.saturating_sub(self.reads).clamp(1, sectors);
        self.reads = self.reads.saturating_add(n);
        n
    }

    /// A file planned as `planned` bytes in `planned_reads` reads ended with `bytes` bytes in
    /// `reads` reads: the plan counts what happened.
    pub fn settle(&mut self, planned: u64, planned_reads: u64, bytes: u64, reads: u64) {
        self.bytes = self.bytes.saturating_sub(planned).saturating_add(bytes);
        self.reads = self
            .reads
            .saturating_sub(planned_reads)
            .saturating_add(reads);
    }
}

/// Read `k` (0-based) of `n` over a file's first `used` bytes: (offset, length), whole sectors,
/// the file's sectors shared as evenly as possible. The `n` reads cover every sector once.
pub(crate) fn read_span(used: u64, n: u64, k: u64) -> (u64, u64) {
    let sector = LOG_SECTOR as u64;
    let sectors = used.div_ceil(sector);
    let n = n.clamp(1, sectors.max(1));
    let at = |i: u64| (sectors as u128 * i.min(n) as u128 / n as u128) as u64 * sector;
    (at(k), at(k + 1) - at(k))
}

/// The file being read: its generation, the bytes and reads planned for it, the next read and
/// the reads made.
#[derive(Debug, Clone, Copy)]
struct Reading {
    gen: u64,
    planned: u64,
    reads: u64,
    next: u64,
}

/// What a replication read found wrong in the log it read ([`ReadCheck`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct LogReadProblem {
    /// [`LOST_LOG_WRITE`] or [`LOG_DAMAGED`].
    pub class: ErrorClass,
    /// The log generation.
    pub gen: u64,
    /// Byte offset in the file of the header (0) or record that is wrong.
    pub offset: u64,
    /// What is wrong, in words.
    pub what: String,
}

/// Verifies the bytes replication reads of one log file after another, as they come: the
/// header, then each record from byte 4096 in order up to the file's used length. A record cut
/// by the end of a read waits for the next one (at most one record and one read are held).
/// After a problem the rest of that file is not verified (one finding per file).
#[derive(Debug, Default)]
pub(crate) struct ReadCheck {
    gen: u64,
    /// File offset of `carry[0]`.
    at: u64,
    /// Bytes read and not yet verified.
    carry: Vec<u8>,
    /// Offset of what is verified next: 0 the header, then the next record.
    next: u64,
    /// A problem was found in this file, or its reads did not follow each other.
    stopped: bool,
}

fn is_zero(b: &[u8]) -> bool {
    b.iter().all(|&x| x == 0)
}

impl ReadCheck {
    /// Verifies `data`, read at `start` of log generation `gen` of database `database_id`, whose
    /// writer wrote `used` bytes (header and records, every one acknowledged).
    pub fn read(
        &mut self,
        gen: u64,
        database_id: u64,
        used: u64,
        start: u64,
        data: &[u8],
    ) -> Option<LogReadProblem> {
        if gen != self.gen || start == 0 {
            *self = ReadCheck {
                gen,
                carry: std::mem::take(&mut self.carry),
                ..ReadCheck::default()
            };
            self.carry.clear();
        }
        let held = self.at.saturating_add(self.carry.len() as u64);
        if self.stopped || start != held {
            // Not the bytes after the ones held: nothing to verify them against.
            self.stopped = true;
            return None;
        }
        self.carry.extend_from_slice(data);
        let found = self.verify(database_id, used);
        if found.is_some() {
            self.stopped = true;
        }
        // Keep only what is not verified yet (the start of a record cut by the read's end).
        let done = usize::try_from(self.next.saturating_sub(self.at))
            .unwrap_or(usize::MAX)
            .min(self.carry.len());
        self.carry.drain(..done);
        self.at = self.at.saturating_add(done as u64);
        found
    }

    fn verify(&mut self, database_id: u64, used: u64) -> Option<LogReadProblem> {
        let gen = self.gen;
        let problem = |class, offset, what: String| {
            Some(LogReadProblem {
                class,
                gen,
                offset,
                what,
            })
        };
        loop {
            let off = usize::try_from(self.next.saturating_sub(self.at)).ok()?;
            let r = self.carry.get(off..)?;
            if self.next == 0 {
                let head = r.get(..LOG_SECTOR)?;
                if let Err(p) = check_header(head, gen, database_id) {
                    return if is_zero(head) {
                        problem(
                            LOST_LOG_WRITE,
                            0,
                            "the file header reads back as zeros: its write was acknowledged but never reached the storage".into(),
                        )
                    } else {
                        problem(LOG_DAMAGED, 0, format!("the file header is wrong: {p}"))
                    };
                }
                self.next = LOG_SECTOR as u64;
                continue;
            }
            if self.next >= used || r.is_empty() {
                return None;
            }
            let lsn = Lsn::checked_new(gen, self.next).unwrap_or(Lsn::ZERO);
            let first = &r[..r.len().min(LOG_SECTOR)];
            if is_zero(first) {
                return problem(
                    LOST_LOG_WRITE,
                    self.next,
                    format!("the log record at Lsn {lsn} reads back as zeros: its write was acknowledged but never reached the storage (a lost write)"),
                );
            }
            let Some(size) = record_len(r) else {
                return problem(
                    LOG_DAMAGED,
                    self.next,
                    format!("where the log record at Lsn {lsn} was written, the data is not a log record"),
                );
            };
            if self.next.saturating_add(size as u64) > used {
                return problem(
                    LOG_DAMAGED,
                    self.next,
                    format!("the log record at Lsn {lsn} states a length of {size} bytes, past the {used} bytes written to the file"),
                );
            }
            let record = r.get(..size)?;
            match check_record(record, gen, usize::try_from(self.next).ok()?) {
                Ok(size) => self.next = self.next.saturating_add(size as u64),
                Err(_) if record.chunks(LOG_SECTOR).any(is_zero) => {
                    return problem(
                        LOST_LOG_WRITE,
                        self.next,
                        format!("part of the log record at Lsn {lsn} reads back as zeros: its write was acknowledged but only partly reached the storage (a torn or lost write)"),
                    )
                }
                Err(d) => {
                    return problem(
                        LOG_DAMAGED,
                        self.next,
                        format!("the log record at Lsn {lsn} read back holds {d}"),
                    )
                }
            }
        }
    }
}

/// Replication reader state.
#[derive(Debug, Default)]
pub(crate) struct Replicator {
    in_flight: bool,
    plan: ReadPlan,
    reading: Option<Reading>,
    /// The read in flight: (generation, offset).
    pending: Option<(u64, u64)>,
    check: ReadCheck,
}

/// How far a file can be read now: all of it once closed, else what is on disk.
fn readable(l: &LogFile) -> u64 {
    if l.closed {
        l.used
    } else {
        l.durable.min(l.used)
    }
}

impl Replicator {
    /// Submits the next read of the log, if one is due: the next span of the oldest file not
    /// yet read whole, once that span is on disk (or the file is closed).
    pub fn run(
        &mut self,
        reactor: &mut Reactor,
        db: usize,
        log: &mut LogWriter,
    ) -> Result<(), EngineError> {
        if self.in_flight {
            return Ok(());
        }
        let Some(l) = log.files.iter_mut().find(|l| l.replicated_to < readable(l)) else {
            return Ok(());
        };
        let mut r = match self.reading {
            Some(r) if r.gen == l.gen => r,
            _ => {
                // A file closed before its first read is planned at its size; one still being
                // written, as if it fills.
                let planned = if l.closed {
                    l.used
                } else {
                    LOG_FILE_SIZE as u64
                };
                Reading {
                    gen: l.gen,
                    planned,
                    reads: self.plan.reads_for(planned),
                    next: 0,
                }
            }
        };
        let (start, len) = read_span(r.planned, r.reads, r.next);
        let end = start.saturating_add(len);
        // A closed file ends where it ends; an open one is read span by span as it fills.
        let end = if l.closed { end.min(l.used) } else { end };
        if len == 0 || start != l.replicated_to || end <= start {
            // Not where this file's plan says (cannot happen: reads go in order, one at a time,
            // and a file is planned at least at its size); read what is readable in one go
            // rather than skip or repeat bytes.
            let start = l.replicated_to;
            let end = readable(l);
            r.next = r.reads;
            return self.submit(reactor, db, l, start, end - start, r);
        }
        if !l.closed && end > readable(l) {
            // Not on disk yet (the plan is kept: it is made once per file).
            self.reading = Some(r);
            return Ok(());
        }
        r.next += 1;
        self.submit(reactor, db, l, start, end - start, r)
    }

    fn submit(
        &mut self,
        reactor: &mut Reactor,
        db: usize,
        l: &mut LogFile,
        start: u64,
        len: u64,
        r: Reading,
    ) -> Result<(), EngineError> {
        // Each byte of a log file is read once, in order, and only once it can be read.
        assert!(
            start == l.replicated_to && start + len <= readable(l),
            "replication: a read of {len} bytes at {start} of generation {}, read to {} of {}",
            l.gen,
            l.replicated_to,
            readable(l)
        );
        l.replicated_to = start + len;
        l.in_flight += 1;
        if l.closed && l.replicated_to >= l.used && r.planned != l.used {
            // The file ended shorter than planned (closed while being read): the plan counts
            // the bytes and reads it really had.
            self.plan.settle(r.planned, r.reads, l.used, r.next);
        }
        self.reading = Some(r);
        self.in_flight = true;
        self.pending = Some((l.gen, start));
        let buf = reactor.buf(len as usize);
        reactor.submit(
            Owner::Repl { db, gen: l.gen },
            IoOp::Read,
            l.file,
            start,
            buf,
            None,
        )
    }

    /// A read completed, returning `data` (`None` if it failed). Returns what verifying the
    /// data found wrong in the log, if anything. A file with a failed write (an error already
    /// counted, with `continue_on_errors`) is not verified.
    pub fn done(
        &mut self,
        log: &mut LogWriter,
        gen: u64,
        data: Option<&[u8]>,
        database_id: u64,
    ) -> Option<LogReadProblem> {
        assert!(
            self.in_flight,
            "replication: a read completed with none in flight"
        );
        self.in_flight = false;
        let pending = self.pending.take();
        let l = log.files.iter_mut().find(|l| l.gen == gen)?;
        assert!(
            l.in_flight > 0,
            "replication: a read of generation {gen} completed with none in flight"
        );
        l.in_flight -= 1;
        match (pending, data) {
            (Some((g, start)), Some(data)) if g == gen && !l.write_failed => {
                self.check.read(gen, database_id, l.used, start, data)
            }
            _ => {
                // Nothing to verify the next reads of this file against.
                self.check.stopped = true;
                None
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Closed log files as the writer leaves them: 1 MiB less an unused tail of whole sectors
    /// (a record that does not fit goes to the next file), deterministic.
    fn file_sizes(n: usize) -> Vec<u64> {
        let mut x = 0x2545_F491_4F6C_DD1Du64;
        (0..n)
            .map(|_| {
                x ^= x << 13;
                x ^= x >> 7;
                x ^= x << 17;
                (1 << 20) - (x % 8) * LOG_SECTOR as u64
            })
            .collect()
    }

    #[test]
    fn reads_average_the_seeds_size_and_cover_every_byte_once() {
        let mut plan = ReadPlan::default();
        let (mut bytes, mut reads, mut largest) = (0u64, 0u64, 0u64);
        for used in file_sizes(400) {
            let n = plan.reads_for(used);
            let mut next = 0;
            for k in 0..n {
                let (at, len) = read_span(used, n, k);
                assert_eq!(at, next, "reads follow each other without gap or overlap");
                assert_eq!(at % LOG_SECTOR as u64, 0);
                assert_eq!(len % LOG_SECTOR as u64, 0);
                assert!(len > 0);
                next = at + len;
                largest = largest.max(len);
            }
            assert_eq!(next, used, "the whole file is read");
            bytes += used;
            reads += n;
            // After every file, the reads so far are within half a read of the ideal.
            let ideal = bytes as f64 / REPL_AVG_BYTES as f64;
            assert!((reads as f64 - ideal).abs() <= 0.5, "{reads} vs {ideal}");
        }
        let avg = bytes as f64 / reads as f64;
        assert!((avg - 232_550.0).abs() < 300.0, "{avg}");
        // About 4.5 reads per file: 4 or 5, never a read above a quarter of a file.
        assert!(largest <= 256 * 1024, "{largest}");
    }

    const DB: u64 = 0xd0;

    /// A closed log file of generation 3 as the writer leaves it: header, records of varied
    /// sizes (one of 3 sectors), zeros after; and its used length.
    fn closed_file() -> (Vec<u8>, u64) {
        use super::super::logfmt::{encode_log_header, encode_record, RedoEntry, LOG_FILE_SIZE};
        let mut image = vec![0u8; LOG_FILE_SIZE];
        encode_log_header(&mut image, 3, DB, 0);
        let mut off = LOG_SECTOR;
        for (i, len) in [100usize, 9000, 4000, 30_000, 200, 70_000, 1]
            .iter()
            .enumerate()
        {
            let e = [RedoEntry {
                page: 2 + i as u64,
                generation: 7,
            }];
            off += encode_record(&mut image[off..], Lsn::new(3, off as u64), *len, 1, &e);
        }
        (image, off as u64)
    }

    /// Feeds the file to a [`ReadCheck`] in `n` reads as replication splits it; the first
    /// problem found.
    fn check(image: &[u8], used: u64, n: u64) -> Option<LogReadProblem> {
        let mut c = ReadCheck::default();
        let mut found = None;
        for k in 0..n {
            let (at, len) = read_span(used, n, k);
            let data = &image[at as usize..(at + len) as usize];
            if let Some(p) = c.read(3, DB, used, at, data) {
                found.get_or_insert(p);
            }
        }
        found
    }

    #[test]
    fn reads_of_a_good_file_verify_in_any_split() {
        let (image, used) = closed_file();
        for n in 1..=used / LOG_SECTOR as u64 {
            assert_eq!(check(&image, used, n), None, "{n} reads");
        }
        // Another database's file, or another generation, is damage at its header.
        let mut c = ReadCheck::default();
        let p = c.read(3, DB + 1, used, 0, &image[..used as usize]);
        assert_eq!(p.map(|p| (p.class, p.offset)), Some((LOG_DAMAGED, 0)));
    }

    #[test]
    fn a_dropped_torn_or_damaged_log_write_is_found_where_it_is() {
        let (image, used) = closed_file();
        let second = LOG_SECTOR + 4096; // the 100-byte record is one sector
                                        // The second record's write dropped: zeros where it was.
        let mut lost = image.clone();
        lost[second..second + 3 * LOG_SECTOR].fill(0);
        for n in [1, 3, 7] {
            let p = check(&lost, used, n).expect("found");
            assert_eq!((p.class, p.offset), (LOST_LOG_WRITE, second as u64), "{n}");
            assert!(p.what.contains("Lsn gen 0x3 offset 0x2000"), "{}", p.what);
        }
        // Torn: only its first sector reached the storage.
        let mut torn = image.clone();
        torn[second + LOG_SECTOR..second + 3 * LOG_SECTOR].fill(0);
        let p = check(&torn, used, 4).expect("found");
        assert_eq!((p.class, p.offset), (LOST_LOG_WRITE, second as u64));
        assert!(p.what.contains("partly"), "{}", p.what);
        // A flipped bit in the last record.
        let mut flipped = image.clone();
        flipped[used as usize - 10] ^= 4;
        let p = check(&flipped, used, 5).expect("found");
        assert_eq!(p.class, LOG_DAMAGED);
        assert!(p.what.contains("checksum"), "{}", p.what);
        // The header write dropped.
        let mut headless = image.clone();
        headless[..LOG_SECTOR].fill(0);
        let p = check(&headless, used, 2).expect("found");
        assert_eq!((p.class, p.offset), (LOST_LOG_WRITE, 0));
        // One finding per file: the rest of it is not verified; the next file is.
        let half = (used / 2) as usize / LOG_SECTOR * LOG_SECTOR;
        let mut c = ReadCheck::default();
        assert!(c.read(3, DB, used, 0, &lost[..half]).is_some());
        assert_eq!(
            c.read(3, DB, used, half as u64, &flipped[half..used as usize]),
            None
        );
        let next = c.read(3, DB + 1, used, 0, &image[..LOG_SECTOR]);
        assert_eq!(next.map(|p| p.offset), Some(0));
    }

    #[test]
    fn a_file_that_ends_shorter_than_planned_is_counted_as_it_was() {
        let mut plan = ReadPlan::default();
        // Planned as a full file while it was written: 5 reads.
        assert_eq!(plan.reads_for(1 << 20), 5);
        // It closed at 300 KiB (shutdown) after 2 reads: the plan counts those.
        plan.settle(1 << 20, 5, 300 * 1024, 2);
        assert_eq!(
            plan,
            ReadPlan {
                bytes: 300 * 1024,
                reads: 2
            }
        );
        // The next full file brings the average back: (300 KiB + 1 MiB) / 232,550 = 5.83 -> 6
        // reads in all, 4 of them for it.
        assert_eq!(plan.reads_for(1 << 20), 4);
    }

    #[test]
    fn small_files_get_one_read_and_the_average_catches_up() {
        let mut plan = ReadPlan::default();
        // A file much smaller than a read (a test's short run, or shutdown): one read.
        assert_eq!(plan.reads_for(8 * 4096), 1);
        assert_eq!(read_span(8 * 4096, 1, 0), (0, 8 * 4096));
        // The next full file takes fewer reads to bring the average back: the two files are
        // (1 MiB + 32 KiB) / 232,550 = 4.65 -> 5 reads in all, 4 of them for the second file.
        assert_eq!(plan.reads_for(1 << 20), 4);
        // Never more reads than sectors: a one-sector file is one read, even when the average
        // is ahead of the reads.
        let mut plan = ReadPlan {
            bytes: 10 * REPL_AVG_BYTES,
            reads: 5,
        };
        assert_eq!(plan.reads_for(4096), 1);
        assert_eq!(read_span(4096, 3, 0), (0, 4096));
    }
}
