//! Background database maintenance of one database: a sequential scan of the database file in
//! 256 KiB reads at a fixed rate (Jetstress: about 9 reads/s per database), every page verified.
//! A scan that reaches the end starts again. The scan is the one sequential-pass component
//! ([`SeqPass`]) that `prepare`, `verify` and the iobench fill also use, driven one chunk at a
//! time at the BDM rate.

use std::time::{Duration, Instant};

use mbx_io::seq::{SeqOp, SeqPass};
use mbx_io::IoOp;
use mbx_store::header::HEADER_PAGES;
use mbx_store::page::PAGE_SIZE;

use crate::reactor::{Owner, Reactor};
use crate::EngineError;

/// BDM read size (Jetstress: 256 KiB).
pub(crate) const BDM_BYTES: u64 = 256 * 1024;
const PAGE: u64 = PAGE_SIZE as u64;

/// BDM state.
#[derive(Debug)]
pub(crate) struct Bdm {
    next_at: Instant,
    pass: Option<SeqPass>,
    in_flight: bool,
    interval: Duration,
}

impl Bdm {
    pub fn new(reads_per_s: f64, now: Instant) -> Bdm {
        Bdm {
            next_at: now,
            pass: None,
            in_flight: false,
            interval: Duration::from_secs_f64(1.0 / reads_per_s.max(1e-3)),
        }
    }

    /// When the next read is due (None while one is in flight: its completion wakes the loop).
    pub fn wake_at(&self) -> Option<Instant> {
        (!self.in_flight).then_some(self.next_at)
    }

    /// Submits the next read if it is due.
    pub fn run(
        &mut self,
        reactor: &mut Reactor,
        db: usize,
        file: usize,
        data_pages: u64,
        now: Instant,
    ) -> Result<(), EngineError> {
        if self.in_flight || now < self.next_at {
            return Ok(());
        }
        self.next_at += self.interval;
        if self.next_at + self.interval < now {
            self.next_at = now + self.interval;
        }
        // One pass over the data pages; a finished pass starts again from the first.
        if self.pass.as_ref().is_none_or(SeqPass::finished) {
            let range = HEADER_PAGES * PAGE..(HEADER_PAGES + data_pages) * PAGE;
            self.pass = Some(
                SeqPass::new(range, BDM_BYTES as usize, 1, SeqOp::Read)
                    .map_err(|e| EngineError::Invalid(format!("BDM scan: {e}")))?,
            );
        }
        let Some(chunk) = self.pass.as_mut().and_then(SeqPass::next_request) else {
            return Ok(());
        };
        self.in_flight = true;
        let seq = reactor.events + 1;
        let buf = reactor.buf(BDM_BYTES as usize);
        // Only the pages that exist (the last read of the file may be shorter).
        reactor.submit(
            Owner::Bdm {
                db,
                first: chunk.offset / PAGE,
                pages: chunk.len as u64 / PAGE,
                seq,
            },
            IoOp::Read,
            file,
            chunk.offset,
            buf,
            Some(chunk.len),
        )
    }

    /// The read of `pages` pages from `first` completed.
    pub fn done(&mut self, first: u64, pages: u64) -> Result<(), EngineError> {
        assert!(self.in_flight, "BDM: a read completed with none in flight");
        self.in_flight = false;
        match self.pass.as_mut() {
            Some(p) => p
                .complete(first * PAGE, (pages * PAGE) as usize)
                .map_err(|e| EngineError::Invalid(format!("BDM scan: {e}"))),
            None => Ok(()),
        }
    }
}
