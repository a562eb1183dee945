//! The log replication reader of one database (copies > 1): reads each closed log file as a
//! passive copy's log shipping would, in ~232 KiB reads, one at a time.

use mbx_io::IoOp;

use super::log::LogWriter;
use super::logfmt::LOG_SECTOR;
use crate::reactor::{Owner, Reactor};
use crate::EngineError;

/// Log replication read size (Jetstress: ~232 KiB).
pub(crate) const REPL_BYTES: u64 = 232 * 1024;

/// Replication reader state.
#[derive(Debug, Default)]
pub(crate) struct Replicator {
    in_flight: bool,
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
        let start = l.replicated_to;
        let len = REPL_BYTES.min(l.used - start);
        let len = len.div_ceil(LOG_SECTOR as u64) * LOG_SECTOR as u64;
        l.replicated_to = start + len;
        l.in_flight += 1;
        let (gen, file) = (l.gen, l.file);
        self.in_flight = true;
        let buf = reactor.buf(len as usize);
        reactor.submit(Owner::Repl { db, gen }, IoOp::Read, file, start, buf, None)
    }

    /// A read completed.
    pub fn done(&mut self, log: &mut LogWriter, gen: u64) {
        self.in_flight = false;
        if let Some(l) = log.files.iter_mut().find(|l| l.gen == gen) {
            l.in_flight = l.in_flight.saturating_sub(1);
        }
    }
}
