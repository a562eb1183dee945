//! The checkpointer of one database, every few seconds and at shutdown, entirely through the
//! queue: first the database file is synced (every page write completed so far is durable), then
//! the checkpoint slot is written (write-through). Its Lsn is the record holding the oldest change
//! not yet written when the checkpoint began, so replay from it redoes every change the database
//! file may lack. The sequence continues the previous run's, so the newest checkpoint always wins.
//!
//! **Held** (Soft Recovery's log generation): the recovery start point must not move, but page
//! writes still need syncs to become durable (the generation journal records a write only once
//! it is, and asks for a sync when [`super::journal`]'s cap of waiting writes is reached). A held
//! checkpointer syncs the database file and writes no slot: the last checkpoint stays where it
//! was, and no log file before it is retired.

use std::time::{Duration, Instant};

use mbx_io::IoOp;

use super::logfmt::{encode_checkpoint, Lsn, SLOT};
use crate::reactor::{Owner, Reactor};
use crate::EngineError;

/// Checkpointer state.
#[derive(Debug)]
pub(crate) struct Checkpointer {
    /// The checkpoint file.
    pub file: usize,
    /// Sequence of the last checkpoint written (or found from an earlier run).
    pub sequence: u64,
    /// When the next one is due.
    pub next_at: Instant,
    /// The checkpoint being written: its Lsn and the log sequence it covers.
    pending: Option<(Lsn, u64)>,
    /// The last checkpoint completed: its Lsn.
    pub last: Option<Lsn>,
    /// Held: a checkpoint begun only syncs the database file (see the module's notes).
    pub held: bool,
    /// The sync in flight is a held one (no slot follows).
    sync_only: bool,
    every: Duration,
}

impl Checkpointer {
    pub fn new(file: usize, previous_sequence: u64, every: Duration, now: Instant) -> Checkpointer {
        Checkpointer {
            file,
            sequence: previous_sequence,
            next_at: now + every,
            pending: None,
            last: None,
            held: false,
            sync_only: false,
            every,
        }
    }

    /// True while a checkpoint (or a held one's sync) is being written.
    pub fn busy(&self) -> bool {
        self.pending.is_some()
    }

    /// True while a checkpoint that moves the start point is being written (not a held sync).
    pub fn moving(&self) -> bool {
        self.pending.is_some() && !self.sync_only
    }

    /// Begins a checkpoint at `lsn` (covering log sequence `seq`): syncs the database file.
    /// False if one is still being written (nothing submitted).
    pub fn begin(
        &mut self,
        reactor: &mut Reactor,
        db: usize,
        db_file: usize,
        lsn: Lsn,
        seq: u64,
        now: Instant,
    ) -> Result<bool, EngineError> {
        self.next_at = now + self.every;
        if self.pending.is_some() {
            return Ok(false);
        }
        self.pending = Some((lsn, seq));
        self.sync_only = self.held;
        let buf = reactor.buf(0);
        reactor.submit(
            Owner::Checkpoint { db, step: 0 },
            IoOp::Sync,
            db_file,
            0,
            buf,
            Some(0),
        )?;
        Ok(true)
    }

    /// A step completed: after the sync, writes the slot; after the slot, returns the completed
    /// checkpoint's Lsn and covered sequence.
    pub fn step_done(
        &mut self,
        reactor: &mut Reactor,
        db: usize,
        database_id: u64,
        step: u8,
    ) -> Result<Option<(Lsn, u64)>, EngineError> {
        let Some((lsn, seq)) = self.pending else {
            return Ok(None);
        };
        if step == 0 && self.sync_only {
            // Held: the sync was all; the start point stays.
            self.pending = None;
            self.sync_only = false;
            return Ok(None);
        }
        if step == 0 {
            self.sequence += 1;
            let mut buf = reactor.buf(SLOT);
            let offset = encode_checkpoint(buf.as_mut_slice(), self.sequence, database_id, lsn);
            reactor.submit(
                Owner::Checkpoint { db, step: 1 },
                IoOp::Write,
                self.file,
                offset,
                buf,
                None,
            )?;
            return Ok(None);
        }
        // The checkpoint only moves forward: recovery never needs log it was told it could drop.
        assert!(
            self.last.is_none_or(|last| last <= lsn),
            "checkpoint moved back from {:?} to {lsn:?}",
            self.last
        );
        self.pending = None;
        self.last = Some(lsn);
        Ok(Some((lsn, seq)))
    }
}
