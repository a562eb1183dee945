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

use mbx_io::IoOp;

use super::log::{LogFile, LogWriter};
use super::logfmt::{LOG_FILE_SIZE, LOG_SECTOR};
use crate::reactor::{Owner, Reactor};
use crate::EngineError;

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

/// Replication reader state.
#[derive(Debug, Default)]
pub(crate) struct Replicator {
    in_flight: bool,
    plan: ReadPlan,
    reading: Option<Reading>,
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
        l.replicated_to = start + len;
        l.in_flight += 1;
        if l.closed && l.replicated_to >= l.used && r.planned != l.used {
            // The file ended shorter than planned (closed while being read): the plan counts
            // the bytes and reads it really had.
            self.plan.settle(r.planned, r.reads, l.used, r.next);
        }
        self.reading = Some(r);
        self.in_flight = true;
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

    /// A read completed.
    pub fn done(&mut self, log: &mut LogWriter, gen: u64) {
        self.in_flight = false;
        if let Some(l) = log.files.iter_mut().find(|l| l.gen == gen) {
            l.in_flight = l.in_flight.saturating_sub(1);
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
