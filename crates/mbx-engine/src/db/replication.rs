//! The log replication reader of one database (copies > 1): reads each closed log file as a
//! passive copy's log shipping would, one read at a time, every byte once.
//!
//! Read sizes: the seed reports show 232,527-232,584 bytes per replication read on average,
//! with as many bytes read as written: about 4.5 reads per 1 MiB log file. A file is read in
//! reads of nearly equal size (whole sectors), and the number of reads per file is chosen so that
//! the average over the run follows [`REPL_AVG_BYTES`] ([`ReadPlan`]): some files take 4 reads,
//! some 5. Capping reads at a fixed size instead leaves a short read at the end of every file,
//! which pulls the average below the seeds'.

use mbx_io::IoOp;

use super::log::LogWriter;
use super::logfmt::LOG_SECTOR;
use crate::reactor::{Owner, Reactor};
use crate::EngineError;

/// Average log replication read (the seed reports' 232,527-232,584 bytes).
pub(crate) const REPL_AVG_BYTES: u64 = 232_550;

/// How many reads each closed log file gets, so that the average read over the run follows
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

/// The file being read: its generation, its reads and the next one.
#[derive(Debug, Clone, Copy)]
struct Reading {
    gen: u64,
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

impl Replicator {
    /// Submits the next read of a closed, not yet copied log file.
    pub fn run(
        &mut self,
        reactor: &mut Reactor,
        db: usize,
        log: &mut LogWriter,
    ) -> Result<(), EngineError> {
        if self.in_flight {
            return Ok(());
        }
        let Some(l) = log
            .files
            .iter_mut()
            .find(|l| l.closed && l.replicated_to < l.used)
        else {
            return Ok(());
        };
        let mut r = match self.reading {
            Some(r) if r.gen == l.gen => r,
            _ => Reading {
                gen: l.gen,
                reads: self.plan.reads_for(l.used),
                next: 0,
            },
        };
        let (start, len) = read_span(l.used, r.reads, r.next);
        if len == 0 || start != l.replicated_to {
            // Not where this file's plan says (cannot happen: reads go in order, one at a time);
            // read the rest of the file in one go rather than skip or repeat bytes.
            let start = l.replicated_to;
            r.next = r.reads;
            return self.submit(reactor, db, l, start, l.used - start, r);
        }
        r.next += 1;
        self.submit(reactor, db, l, start, len, r)
    }

    fn submit(
        &mut self,
        reactor: &mut Reactor,
        db: usize,
        l: &mut super::log::LogFile,
        start: u64,
        len: u64,
        r: Reading,
    ) -> Result<(), EngineError> {
        l.replicated_to = start + len;
        l.in_flight += 1;
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
