//! Sessions: each runs one transaction at a time through a small state machine
//! (Idle -> Reading -> [Committing] -> Idle, or Stalled while the cache has no free frame).
//! Transitions are checked: an illegal one is an internal error, never silently ignored.

use std::collections::VecDeque;
use std::time::Instant;

use mbx_config::OpMix;
use mbx_io::IoOp;
use mbx_store::header::HEADER_PAGES;
use mbx_store::page::PAGE_SIZE;

use crate::cache::FrameState;
use crate::db::logfmt::RedoEntry;
use crate::db::Database;
use crate::model::{self, Access, Rng};
use crate::reactor::{Owner, Reactor};
use crate::workload::open::{OpenLoop, TxnStats};
use crate::workload::pacing::Pacer;
use crate::EngineError;

/// State of a session.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum SState {
    /// No transaction.
    Idle,
    /// Waiting for page reads.
    Reading,
    /// Waiting for free cache frames.
    Stalled,
    /// Waiting for its commit to be durable.
    Committing,
}

/// One session.
#[derive(Debug)]
pub(crate) struct Session {
    pub state: SState,
    db: usize,
    accesses: Vec<Access>,
    pending: u32,
    log_bytes: u32,
    /// Read I/Os the current transaction issued itself (for the pacer).
    reads: u64,
    ops: u32,
    /// When the current transaction was due (its arrival or start slot).
    due: Instant,
    /// When it was submitted.
    started: Instant,
}

/// The sessions, the transaction generator and the pacer.
pub(crate) struct Workload {
    pub sessions: Vec<Session>,
    rng: Rng,
    mix: OpMix,
    mailboxes: u64,
    /// Transactions completed (all phases).
    pub txns_done: u64,
    entries: Vec<RedoEntry>,
    /// Sessions a read completion made ready (reused).
    ready: Vec<usize>,
    /// Idle sessions, in the order they became idle: the executor starts transactions from
    /// here without looking at the other sessions.
    idle: VecDeque<usize>,
    /// Sessions in each state (indexed by `SState as usize`).
    counts: [usize; 4],
    /// Start slots that meet the target (told about every transactional I/O and transaction).
    pub pacer: Pacer,
    /// Open loop (`--pacing open`): the arrivals waiting for a session; `None` for closed loop.
    pub open: Option<OpenLoop>,
    /// Per-transaction latencies and counts of the measured phase.
    pub txn: TxnStats,
}

impl Workload {
    pub fn new(
        sessions: usize,
        seed: u64,
        mix: OpMix,
        mailboxes: u64,
        pacer: Pacer,
        open: Option<OpenLoop>,
    ) -> Workload {
        let now = pacer.origin();
        Workload {
            pacer,
            open,
            txn: TxnStats::default(),
            sessions: (0..sessions)
                .map(|_| Session {
                    state: SState::Idle,
                    db: 0,
                    accesses: Vec::new(),
                    pending: 0,
                    log_bytes: 0,
                    reads: 0,
                    ops: 0,
                    due: now,
                    started: now,
                })
                .collect(),
            rng: Rng::new(seed),
            mix,
            mailboxes,
            txns_done: 0,
            entries: Vec::new(),
            ready: Vec::new(),
            idle: (0..sessions).collect(),
            counts: [sessions, 0, 0, 0],
        }
    }

    fn set_state(&mut self, s: usize, from: &[SState], to: SState) -> Result<(), EngineError> {
        let st = &mut self.sessions[s].state;
        if !from.contains(st) {
            return Err(EngineError::Invalid(format!(
                "internal: session {s} cannot go from {st:?} to {to:?}"
            )));
        }
        // Sessions per state: this one is counted in the state it leaves.
        assert!(
            self.counts[*st as usize] > 0,
            "sessions: none counted {st:?}, which session {s} leaves"
        );
        self.counts[*st as usize] -= 1;
        self.counts[to as usize] += 1;
        *st = to;
        if to == SState::Idle {
            self.idle.push_back(s);
        }
        Ok(())
    }

    /// True if no session is reading or committing (shutdown may drain the cache).
    pub fn quiescent(&self) -> bool {
        self.counts[SState::Reading as usize] == 0 && self.counts[SState::Committing as usize] == 0
    }

    /// True if no session has a transaction in progress.
    pub fn all_idle(&self) -> bool {
        self.counts[SState::Idle as usize] == self.sessions.len()
    }

    /// Idle sessions.
    pub fn idle_count(&self) -> usize {
        self.idle.len()
    }

    /// The session idle longest, taken out of the idle queue (to start a transaction on it).
    pub fn next_idle(&mut self) -> Option<usize> {
        self.idle.pop_front()
    }

    /// Starts a transaction on idle session `s`, on the database its mailbox lives in; it was
    /// due at `due` (its arrival or start slot).
    pub fn start(
        &mut self,
        s: usize,
        dbs: &mut [Database],
        reactor: &mut Reactor,
        now: Instant,
        due: Instant,
    ) -> Result<(), EngineError> {
        self.txn.started(due, now, self.open.is_none());
        let n = dbs.len() as u64;
        // With fewer mailboxes than databases every database still gets transactions (each
        // holds at least one mailbox), so every cache can fill and every database is tested.
        let mailbox = self.rng.below(self.mailboxes.max(n));
        let i = (mailbox % n) as usize;
        let local = mailbox / n;
        let db = &dbs[i];
        let region = model::region(HEADER_PAGES, db.spec.data_pages, db.mailboxes, local);
        let last_page = HEADER_PAGES + db.spec.data_pages - 1;
        let mut acc = std::mem::take(&mut self.sessions[s].accesses);
        acc.clear();
        let mut log_bytes = 0;
        let ops = model::ops_in_txn(&mut self.rng);
        for _ in 0..ops {
            let op = model::pick_op(&self.mix, &mut self.rng);
            log_bytes += model::accesses(op, region, last_page, &mut self.rng, &mut acc);
        }
        let sess = &mut self.sessions[s];
        sess.db = i;
        sess.accesses = acc;
        sess.log_bytes = log_bytes;
        sess.reads = 0;
        sess.ops = ops as u32;
        sess.due = due;
        sess.started = now;
        self.acquire(s, dbs, reactor, now)
    }

    /// Pins the transaction's pages, issuing reads for misses; stalls if the cache has no room.
    pub fn acquire(
        &mut self,
        s: usize,
        dbs: &mut [Database],
        reactor: &mut Reactor,
        now: Instant,
    ) -> Result<(), EngineError> {
        let i = self.sessions[s].db;
        let db = &mut dbs[i];
        let acc = std::mem::take(&mut self.sessions[s].accesses);
        // Frames needed: distinct missing pages (reads and new pages).
        let mut needed = 0;
        for (k, a) in acc.iter().enumerate() {
            let dup = acc[..k].iter().any(|b| b.page == a.page);
            if !dup && db.cache.state(a.page).is_none() {
                needed += 1;
            }
        }
        if needed > db.cache.available() {
            // One stall per transaction that has to wait (retries of the same one do not count).
            let first_stall = self.sessions[s].state != SState::Stalled;
            self.sessions[s].accesses = acc;
            self.set_state(s, &[SState::Idle, SState::Stalled], SState::Stalled)?;
            db.stalled.push_back(s);
            if first_stall {
                db.stats.stalls_interval += 1;
            }
            db.flusher.pressure = true;
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
            match db.cache.state(a.page) {
                Some(FrameState::Reading) => {
                    db.cache.pin(a.page);
                    db.waiters.push(a.page, s);
                    pending += 1;
                }
                Some(_) => db.cache.pin(a.page),
                None => {
                    db.cache.begin_read(a.page, now);
                    let mut pages = 1;
                    // An adjacent page read in the same I/O, when it misses too.
                    if a.join_next && k < acc.len() {
                        let b = acc[k];
                        if b.page == a.page + 1
                            && !b.new_page
                            && db.cache.state(b.page).is_none()
                            && db.cache.begin_read(b.page, now)
                        {
                            pages = 2;
                            k += 1;
                        }
                    }
                    for p in a.page..a.page + pages {
                        db.waiters.push(p, s);
                        pending += 1;
                    }
                    self.sessions[s].reads += 1;
                    let buf = reactor.buf(pages as usize * PAGE_SIZE);
                    reactor.submit(
                        Owner::TxnRead {
                            db: i,
                            first: a.page,
                            pages,
                        },
                        IoOp::Read,
                        db.file,
                        a.page * PAGE_SIZE as u64,
                        buf,
                        None,
                    )?;
                }
            }
        }
        let sess = &mut self.sessions[s];
        sess.accesses = acc;
        sess.pending = pending;
        if pending == 0 {
            self.set_state(s, &[SState::Idle, SState::Stalled], SState::Reading)?;
            self.apply(s, dbs, now)
        } else {
            self.set_state(s, &[SState::Idle, SState::Stalled], SState::Reading)
        }
    }

    /// Pages `first..first + pages` of database `i` arrived: sessions waiting only for them apply.
    pub fn pages_read(
        &mut self,
        i: usize,
        first: u64,
        pages: u64,
        dbs: &mut [Database],
        now: Instant,
    ) -> Result<(), EngineError> {
        let mut ready = std::mem::take(&mut self.ready);
        ready.clear();
        for p in first..first + pages {
            dbs[i].cache.end_read(p);
            let sessions = &mut self.sessions;
            dbs[i].waiters.take(p, |s| {
                let sess = &mut sessions[s];
                sess.pending = sess.pending.saturating_sub(1);
                if sess.pending == 0 && sess.state == SState::Reading {
                    ready.push(s);
                }
            });
        }
        let mut result = Ok(());
        for &s in &ready {
            result = self.apply(s, dbs, now);
            if result.is_err() {
                break;
            }
        }
        self.ready = ready;
        result
    }

    /// All pages are in: modify, log, commit.
    fn apply(&mut self, s: usize, dbs: &mut [Database], now: Instant) -> Result<(), EngineError> {
        let i = self.sessions[s].db;
        let db = &mut dbs[i];
        let acc = std::mem::take(&mut self.sessions[s].accesses);
        let log_bytes = self.sessions[s].log_bytes;
        let mut entries = std::mem::take(&mut self.entries);
        entries.clear();
        // The changes end at the sequence just past this transaction's log bytes.
        let n_mod = acc.iter().filter(|a| a.modify).count();
        let seq = db.log.next_seq(log_bytes, n_mod);
        for (k, a) in acc.iter().enumerate() {
            if a.modify {
                let gen = db.new_generation();
                db.cache.modify(a.page, now, seq, gen);
                entries.push(RedoEntry {
                    page: a.page,
                    generation: gen,
                });
            }
            let first_use = !acc[..k].iter().any(|b| b.page == a.page && !b.new_page);
            if !a.new_page && first_use {
                db.cache.unpin(a.page);
            }
        }
        self.sessions[s].accesses = acc;
        let durable = !self.rng.chance(self.mix.lazy_commit_pct as f64 / 100.0);
        let logged = log_bytes > 0 || !entries.is_empty();
        if db.stats.measuring {
            let shape = &mut db.stats.shape;
            shape.page_changes += n_mod as u64;
            match (logged, durable) {
                (false, _) => shape.read_only += 1,
                (true, true) => shape.durable += 1,
                (true, false) => shape.lazy += 1,
            }
        }
        if logged {
            db.log
                .append(log_bytes, self.sessions[s].ops, entries.drain(..));
        }
        self.entries = entries;
        if durable && logged {
            db.log.commit_waiters.push((s, seq));
            self.set_state(s, &[SState::Reading], SState::Committing)
        } else {
            self.finish(s, dbs, now)
        }
    }

    /// The transaction of `s` is over.
    pub fn finish(
        &mut self,
        s: usize,
        dbs: &mut [Database],
        now: Instant,
    ) -> Result<(), EngineError> {
        let i = self.sessions[s].db;
        self.pacer.on_txn(now, self.sessions[s].reads);
        let sess = &self.sessions[s];
        self.txn.finished(sess.due, sess.started, now);
        let st = &mut dbs[i].stats;
        st.txns_interval += 1;
        st.txns_total += 1;
        if st.measuring {
            st.txns_measured += 1;
        }
        self.txns_done += 1;
        self.set_state(s, &[SState::Reading, SState::Committing], SState::Idle)
    }

    /// Sessions stalled on database `i` try again (in order, until one still finds no room).
    pub fn retry_stalled(
        &mut self,
        i: usize,
        dbs: &mut [Database],
        reactor: &mut Reactor,
        now: Instant,
    ) -> Result<(), EngineError> {
        let n = dbs[i].stalled.len();
        for _ in 0..n {
            let Some(s) = dbs[i].stalled.pop_front() else {
                break;
            };
            self.acquire(s, dbs, reactor, now)?;
            if self.sessions[s].state == SState::Stalled {
                break;
            }
        }
        Ok(())
    }
}
