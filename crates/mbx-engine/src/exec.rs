//! The executor: runs a [`Plan`]'s phases, one after the other, on one reactor. Each loop turn
//! asks the current phase whether it is done, lets the workload and every database's components
//! do what is due, ticks the pacer and progress once per second, and waits for the next
//! completion or timer. Completions are routed to their owners here, and only here.

use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use mbx_io::IoCompletion;

use crate::db::finding::Finding;
use crate::db::{verify, Database};
use crate::plan::Plan;
use crate::reactor::{Owner, Reactor};
use crate::sampling::{HostSeries, Sampler};
use crate::stats::Stream;
use crate::workload::session::Workload;
use crate::{EngineError, Observer, PassBytes, Phase, Progress, RunEvent};

/// How often a reactor done with a phase looks whether the others are done too.
pub(crate) const GATE_POLL: Duration = Duration::from_millis(10);

/// Whether a phase continues.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Flow {
    /// Keep going.
    Continue,
    /// The phase is over.
    Done,
}

/// How sessions start transactions.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Mode {
    /// As fast as they can (cache warm-up).
    Unpaced,
    /// At the pacer's rate.
    Paced,
    /// No new transactions; background work drains.
    Stopping,
    /// Nothing: no transaction starts, no page is flushed, no log is written, no checkpoint is
    /// taken (a stop without a clean shutdown, and recovery after it). Only what a phase
    /// submits itself runs.
    Halted,
}

/// One phase of a plan.
pub(crate) trait PhaseRun {
    /// Which phase this is (for events and progress).
    fn kind(&self) -> Phase;
    /// Its planned length, when known (for progress and ETA).
    fn planned(&self) -> Option<Duration> {
        None
    }
    /// Called once when the phase begins.
    fn enter(&mut self, e: &mut PhaseCx<'_, '_>, now: Instant) -> Result<(), EngineError>;
    /// Called every loop turn.
    fn tick(&mut self, e: &mut PhaseCx<'_, '_>, now: Instant) -> Result<Flow, EngineError>;
    /// The user interrupted the test during this phase. `Done` ends it (the executor then runs
    /// the plan's closing phase); `Continue` keeps it running.
    fn interrupt(&mut self, e: &mut PhaseCx<'_, '_>, now: Instant) -> Result<Flow, EngineError>;
    /// Its own next timer, if any.
    fn wake_at(&self) -> Option<Instant> {
        None
    }
    /// Bytes done and planned, for a phase that moves a known amount of data (a sequential
    /// pass): progress and ETA come from them.
    fn pass_bytes(&self) -> Option<PassBytes> {
        None
    }

    /// Log files generated and requested (Soft Recovery's first phase).
    fn log_files(&self) -> Option<PassBytes> {
        None
    }
}

/// A completed sequential-pass read, kept for the pass phase to verify on its next tick (the
/// completion's own buffer goes back to the pool when routing ends).
pub(crate) struct PassChunk {
    /// The pass's file number (its `Owner::Pass` `db`).
    pub file: usize,
    /// Offset read.
    pub offset: u64,
    /// The bytes read (a pool buffer: give it back when done).
    pub data: mbx_io::AlignedBuf,
    /// How many of them.
    pub len: usize,
    /// What was read: the file itself, or its generation journal.
    pub part: PassPart,
}

/// What a sequential-pass read was of.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum PassPart {
    /// The file (`offset` in it).
    File,
    /// The database's generation journal: the entries of the pages read at `offset`, or its
    /// header (`offset` `u64::MAX`).
    Journal,
    /// A journal read that failed (nothing is checked against the journal then).
    JournalFailed,
}

/// Settings the executor needs from the configuration.
#[derive(Debug, Clone)]
pub(crate) struct Settings {
    pub target_iops: f64,
    pub max_dirty_age: Duration,
    pub sample_every: Duration,
    pub bdm: bool,
    pub copies: u32,
    pub compressibility_pct: u8,
    /// Percent of transactional page reads checksummed whole (`checksum_reads_pct`).
    pub checksum_reads_pct: u8,
    /// An I/O outstanding longer than this is reported as hung.
    pub hung_io: Duration,
    /// Files are opened for direct I/O (O_DIRECT).
    pub direct: bool,
    /// Count I/O errors (but a full disk) and damaged pages and go on, instead of stopping at
    /// the first (Jetstress `ContinueOnErrors`).
    pub continue_on_errors: bool,
}

/// Phase boundaries as the executor reaches them.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Marks {
    pub started: Instant,
    pub measure_start: Option<Instant>,
    /// The clock's wall time when the measured phase began (what a synchronized start is
    /// judged by: the wall clock itself, not the start-time reference moved by the monotonic
    /// clock, which drifts from it over a long preparation).
    pub measure_start_wall: Option<std::time::SystemTime>,
    pub measure_end: Option<Instant>,
    /// The measured phase ran its whole length (an interruption came after it, if at all).
    pub measure_complete: bool,
    /// The user asked to stop (Ctrl-C, SIGTERM, SIGHUP).
    pub interrupted: bool,
    /// The phase the user's stop came in.
    pub interrupted_in: Option<Phase>,
    /// Another reactor stopped the test (its error), not the user.
    pub halted: bool,
}

impl Marks {
    /// The test is stopping early: interrupted by the user, or halted with another reactor.
    pub fn stopping(&self) -> bool {
        self.interrupted || self.halted
    }
}

/// What a phase works with: the reactor (its clock, files and I/O), the databases, the
/// workload, the test-log and result sinks, the phase marks, sampling and the pass state; not
/// the [`Engine`] itself (its loop bookkeeping, routing scratch, per-second tick and phase
/// gate stay the executor's). [`Engine::cx`] lends it for one phase call.
pub(crate) struct PhaseCx<'a, 'o> {
    pub settings: &'a Settings,
    pub reactor: &'a mut Reactor,
    pub dbs: &'a mut Vec<Database>,
    pub work: &'a mut Workload,
    /// How the workload runs while the phase lasts (each phase sets it when it begins).
    pub mode: &'a mut Mode,
    pub observer: &'a mut (dyn Observer + 'o),
    /// Test-log lines kept for the result.
    pub notes: &'a mut Vec<String>,
    pub marks: &'a mut Marks,
    pub host: &'a mut HostSeries,
    pub sampler: &'a mut Sampler,
    /// This reactor reads the host's counters at each sample.
    pub sample_host: bool,
    /// Sequential-pass reads completed and not yet verified by the pass phase.
    pub pass_inbox: &'a mut Vec<PassChunk>,
    /// The databases of a plan that only reads them.
    pub pass_specs: &'a mut Vec<crate::InstanceSpec>,
    /// What a sequential pass found, once it is done (or stopped).
    pub pass_report: &'a mut Option<crate::assemble::PassReport>,
    /// When the shutdown phase began.
    pub shutdown_start: &'a mut Option<Instant>,
}

impl PhaseCx<'_, '_> {
    /// A test-log line (also kept as a note for the result when `note`).
    pub fn log(&mut self, line: &str, note: bool) {
        self.observer.on_event(RunEvent::Log(line));
        if note {
            self.notes.push(line.to_string());
        }
    }

    /// The fill of the emptiest cache.
    pub fn min_cache_fill(&self) -> f64 {
        min_cache_fill(self.dbs)
    }

    /// Clears every database's per-sample counters.
    pub fn reset_intervals(&mut self) {
        reset_intervals(self.dbs);
    }

    /// True when nothing is in flight, buffered or dirty, and no transaction is open.
    pub fn drained(&self) -> bool {
        self.reactor.in_flight() == 0
            && self.work.all_idle()
            && self.dbs.iter().all(|d| {
                d.cache.dirty_count() == 0
                    && d.cache.flushing() == 0
                    && !d.log.busy()
                    && !d.checkpointer.busy()
                    && !d.journal.busy()
            })
    }

    /// How a log line says the test is stopping early: "Interrupted" (the user), or stopped with
    /// another reactor.
    pub fn stop_word(&self) -> &'static str {
        stop_word(self.marks)
    }

    /// The measured phase ends at `now`: every I/O in flight is carried past it. Each counts in
    /// the last sample with its age so far, and in the measured figures once its latency is
    /// known (docs/method.md, "I/O in flight at the end"). Logs what each database left in
    /// flight.
    pub fn carry_in_flight(&mut self, now: Instant) {
        for (owner, age) in self.reactor.carry(now) {
            if let Some((db, s)) = measured_stream(owner) {
                if let Some(d) = self.dbs.get_mut(db) {
                    d.stats.carried_at_end(s, age);
                }
            }
        }
        for line in in_flight_lines(self.dbs) {
            self.log(&line, false);
        }
    }

    /// The test stops waiting for the carried I/Os still in flight at `now` (it ends, or gives
    /// up on them): each counts with its age.
    pub fn settle_carried(&mut self, now: Instant) {
        record_carried(self.reactor, self.dbs);
        for (owner, age) in self.reactor.uncarry(now) {
            if let Some((db, s)) = measured_stream(owner) {
                if let Some(d) = self.dbs.get_mut(db) {
                    d.stats.carried_done(s, age, false);
                }
            }
        }
    }
}

/// The fill of the emptiest cache.
fn min_cache_fill(dbs: &[Database]) -> f64 {
    dbs.iter().map(|d| d.cache.fill()).fold(1.0, f64::min)
}

/// Clears every database's per-sample counters.
fn reset_intervals(dbs: &mut [Database]) {
    for db in dbs {
        db.stats.reset_interval();
    }
}

/// "Interrupted" (the user's stop), or stopped with another reactor.
fn stop_word(marks: &Marks) -> &'static str {
    if marks.interrupted {
        "Interrupted"
    } else {
        "Stopped with another reactor, which met an error"
    }
}

/// The lines saying what each database left in flight when measuring ended.
fn in_flight_lines(dbs: &[Database]) -> Vec<String> {
    let mut lines = Vec::new();
    for db in dbs {
        let inc = &db.stats.incomplete;
        let parts: Vec<String> = [
            (Stream::DbRead, "database reads"),
            (Stream::DbWrite, "database writes"),
            (Stream::LogWrite, "log writes"),
            (Stream::LogRead, "log reads"),
            (Stream::Bdm, "maintenance reads"),
        ]
        .iter()
        .filter(|(s, _)| inc[*s as usize].count > 0)
        .map(|&(s, what)| {
            let i = &inc[s as usize];
            format!(
                "{} {what} (the oldest {:.1} ms old)",
                i.count,
                i.oldest_at_end.as_secs_f64() * 1e3
            )
        })
        .collect();
        if !parts.is_empty() {
            lines.push(format!(
                "{}: in flight when measuring ended: {}; each counts in the measured latency figures with its whole latency once known.",
                db.spec.name,
                parts.join(", ")
            ));
        }
    }
    lines
}

/// Hands the completions of carried I/Os to their databases' measured figures.
fn record_carried(reactor: &mut Reactor, dbs: &mut [Database]) {
    for (owner, lat, ok) in std::mem::take(&mut reactor.carried_done) {
        if let (true, Some((db, s))) = (ok, measured_stream(owner)) {
            if let Some(d) = dbs.get_mut(db) {
                d.stats.carried_done(s, lat, true);
            }
        }
    }
}

/// What a test leaves for its result ([`Engine::leftovers`]).
pub(crate) struct Leftovers {
    pub dbs: Vec<Database>,
    pub hung: Vec<crate::result::ErrorEntry>,
    pub notes: Vec<String>,
    pub host: HostSeries,
    pub pass_report: Option<crate::assemble::PassReport>,
    pub txn: crate::workload::open::TxnStats,
    pub machine: std::sync::Arc<dyn mbx_io::Machine>,
}

/// Everything a test runs on.
pub(crate) struct Engine<'o> {
    settings: Settings,
    reactor: Reactor,
    dbs: Vec<Database>,
    work: Workload,
    mode: Mode,
    phase: Phase,
    phase_start: Instant,
    observer: &'o mut dyn Observer,
    notes: Vec<String>,
    marks: Marks,
    host: HostSeries,
    sampler: Sampler,
    /// Transactional I/Os and transactions counted since the start (all phases).
    txn_ios: u64,
    /// Hung I/Os reported so far (each once, while it was outstanding).
    hung: Vec<crate::result::ErrorEntry>,
    /// Sequential-pass reads completed and not yet verified by the pass phase.
    pass_inbox: Vec<PassChunk>,
    /// The databases of a plan that only reads them (they are not opened as [`Database`]s).
    pass_specs: Vec<crate::InstanceSpec>,
    /// What a sequential pass found, once it is done (or stopped).
    pass_report: Option<crate::assemble::PassReport>,
    scratch: Vec<u8>,
    /// Damaged pages of the read being verified (reused).
    found: Vec<(u64, Finding)>,
    /// Sessions whose commits a log write made durable (reused).
    done: Vec<usize>,
    next_tick: Instant,
    last_tick: Instant,
    tick_ios: u64,
    /// With several reactors: this one's place at the phase gate they share (`None`: the only
    /// reactor, nothing to wait for).
    gate: Option<crate::multi::Link>,
    /// Read the host's counters (CPU, memory) at each sample: only one reactor does, the CPU
    /// figure covers the time since the previous reading, whoever took it.
    sample_host: bool,
    /// When the shutdown phase began (none yet: `None`).
    shutdown_start: Option<Instant>,
    /// Hung I/Os reported while shutting down (also in `hung`).
    shutdown_hung: u64,
}

impl<'o> Engine<'o> {
    pub fn new(
        settings: Settings,
        reactor: Reactor,
        dbs: Vec<Database>,
        work: Workload,
        observer: &'o mut dyn Observer,
    ) -> Engine<'o> {
        let now = reactor.now();
        Engine {
            sampler: Sampler {
                every: settings.sample_every,
                last: now,
                next: now + settings.sample_every,
            },
            settings,
            reactor,
            dbs,
            work,
            mode: Mode::Unpaced,
            phase: Phase::Attain,
            phase_start: now,
            observer,
            notes: Vec::new(),
            marks: Marks {
                started: now,
                measure_start: None,
                measure_start_wall: None,
                measure_end: None,
                measure_complete: false,
                interrupted: false,
                interrupted_in: None,
                halted: false,
            },
            host: HostSeries::default(),
            txn_ios: 0,
            hung: Vec::new(),
            pass_inbox: Vec::new(),
            pass_specs: Vec::new(),
            pass_report: None,
            scratch: vec![0u8; mbx_store::page::PAGE_SIZE],
            found: Vec::new(),
            done: Vec::new(),
            next_tick: now + Duration::from_secs(1),
            last_tick: now,
            tick_ios: 0,
            gate: None,
            sample_host: true,
            shutdown_start: None,
            shutdown_hung: 0,
        }
    }

    /// Lends the phase its handles ([`PhaseCx`]).
    pub fn cx(&mut self) -> PhaseCx<'_, 'o> {
        PhaseCx {
            settings: &self.settings,
            reactor: &mut self.reactor,
            dbs: &mut self.dbs,
            work: &mut self.work,
            mode: &mut self.mode,
            observer: &mut *self.observer,
            notes: &mut self.notes,
            marks: &mut self.marks,
            host: &mut self.host,
            sampler: &mut self.sampler,
            sample_host: self.sample_host,
            pass_inbox: &mut self.pass_inbox,
            pass_specs: &mut self.pass_specs,
            pass_report: &mut self.pass_report,
            shutdown_start: &mut self.shutdown_start,
        }
    }

    /// With several reactors: this one's place at the phase gate they share, and whether it
    /// reads the host's counters at each sample.
    pub fn join(&mut self, gate: Option<crate::multi::Link>, sample_host: bool) {
        self.gate = gate;
        self.sample_host = sample_host;
    }

    /// The databases of a plan that only reads them.
    pub fn read_only(&mut self, specs: Vec<crate::InstanceSpec>) {
        self.pass_specs = specs;
    }

    /// True with several reactors.
    pub fn several(&self) -> bool {
        self.gate.is_some()
    }

    /// The databases.
    pub fn dbs(&self) -> &[Database] {
        &self.dbs
    }

    /// The reactor's clock now.
    pub fn now(&self) -> Instant {
        self.reactor.now()
    }

    /// Phase boundaries reached.
    pub fn marks(&self) -> Marks {
        self.marks
    }

    /// The phase the test is in (or stopped in).
    pub fn phase(&self) -> Phase {
        self.phase
    }

    /// When the shutdown phase began, if it did.
    pub fn shutdown_start(&self) -> Option<Instant> {
        self.shutdown_start
    }

    /// Waits for the retired log files being deleted in the background.
    pub fn wait_removals(&mut self) -> Result<(), EngineError> {
        Ok(self.reactor.wait_removals()?)
    }

    /// A test-log line (also kept as a note for the result when `note`).
    pub fn log(&mut self, line: &str, note: bool) {
        self.cx().log(line, note);
    }

    /// See [`PhaseCx::carry_in_flight`].
    pub fn carry_in_flight(&mut self, now: Instant) {
        self.cx().carry_in_flight(now);
    }

    /// See [`PhaseCx::settle_carried`].
    pub fn settle_carried(&mut self, now: Instant) {
        self.cx().settle_carried(now);
    }

    /// The line saying how long shutdown took (`d`), what hung during it and how long the I/O
    /// carried past the measured phase took.
    pub fn shutdown_line(&self, d: Duration) -> String {
        let mut line = format!("Shutdown took {:.2} s", d.as_secs_f64());
        if self.shutdown_hung > 0 {
            line.push_str(&format!(
                "; {} I/O(s) were hung during it (outstanding over {:.0} s)",
                self.shutdown_hung,
                self.settings.hung_io.as_secs_f64()
            ));
        }
        let carried = self
            .dbs
            .iter()
            .flat_map(|db| db.stats.incomplete.iter())
            .fold((0u64, Duration::ZERO), |(n, l), i| {
                (n.saturating_add(i.count), l.max(i.longest))
            });
        if carried.0 > 0 {
            line.push_str(&format!(
                "; the {} I/O(s) in flight when measuring ended took up to {:.1} ms",
                carried.0,
                carried.1.as_secs_f64() * 1e3
            ));
        }
        line.push('.');
        line
    }

    /// What the test leaves for its result, taken out of the engine.
    pub fn leftovers(&mut self) -> Leftovers {
        Leftovers {
            dbs: std::mem::take(&mut self.dbs),
            hung: std::mem::take(&mut self.hung),
            notes: std::mem::take(&mut self.notes),
            host: std::mem::take(&mut self.host),
            pass_report: self.pass_report.take(),
            txn: std::mem::take(&mut self.work.txn),
            machine: self.reactor.machine().clone(),
        }
    }

    /// True when the user asked to stop, or (with several reactors) another reactor stopped.
    pub(crate) fn stop_asked(&self, cancel: &AtomicBool) -> bool {
        cancel.load(Ordering::Relaxed) || self.gate.as_ref().is_some_and(|g| g.stopped())
    }

    /// Records why the test stops early: the user's stop (and the phase it came in), or another
    /// reactor's (an error there: not an interruption). The user's stop is set before any
    /// reactor halts the others for it, so it is seen first.
    pub(crate) fn mark_stop(&mut self, cancel: &AtomicBool) {
        if cancel.load(Ordering::Relaxed) {
            self.marks.interrupted = true;
            self.marks.interrupted_in = Some(self.phase);
        } else {
            self.marks.halted = true;
        }
    }

    /// One loop turn: start what is due, tick once per second, wait for the next completion
    /// or timer (or `until`, if earlier) and route what completed.
    pub(crate) fn turn(
        &mut self,
        now: Instant,
        phase: &dyn PhaseRun,
        until: Option<Instant>,
    ) -> Result<(), EngineError> {
        self.step(now)?;
        self.per_second(now, phase);
        let mut wake = phase
            .wake_at()
            .map_or_else(|| self.wake_at(), |t| t.min(self.wake_at()));
        if let Some(t) = until {
            wake = wake.min(t);
        }
        let Engine {
            reactor,
            dbs,
            work,
            scratch,
            txn_ios,
            pass_inbox,
            settings,
            found,
            done,
            ..
        } = self;
        let mut cx = RouteCtx {
            scratch,
            txn_ios,
            pass_inbox,
            found,
            done,
            cont: settings.continue_on_errors,
            copies: settings.copies,
            compressibility_pct: settings.compressibility_pct,
            checksum_reads_pct: settings.checksum_reads_pct,
        };
        let waited = reactor.wait(wake, |r, owner, c| route(r, dbs, work, &mut cx, owner, c));
        if !self.reactor.carried_done.is_empty() {
            record_carried(&mut self.reactor, &mut self.dbs);
        }
        waited
    }

    /// Starts due transactions and lets every database's components work.
    fn step(&mut self, now: Instant) -> Result<(), EngineError> {
        if self.mode == Mode::Halted {
            return Ok(());
        }
        if self.mode != Mode::Stopping {
            // The sessions idle now, each once (one whose transaction ends at once is idle
            // again, for the next turn): work in proportion to the transactions started.
            let w = &mut self.work;
            if let (Mode::Paced, Some(open)) = (self.mode, &mut w.open) {
                // Open loop: arrivals join the backlog whether or not a session is free.
                open.arrive(&mut w.pacer, now, &mut w.txn);
            }
            for _ in 0..self.work.idle_count() {
                let w = &mut self.work;
                // When the transaction was due: its arrival (open loop), its start slot
                // (closed loop), or now (unpaced).
                let due = match (self.mode, &mut w.open) {
                    (Mode::Paced, Some(open)) => open.pop(&mut w.pacer),
                    (Mode::Paced, None) => w.pacer.take_slot_at(now),
                    _ => Some(now),
                };
                let Some(due) = due else {
                    break;
                };
                let Some(s) = self.work.next_idle() else {
                    break;
                };
                // Never early: a transaction starts at or after the time it was due.
                assert!(
                    due <= now,
                    "scheduler: a transaction starts before it is due"
                );
                self.work
                    .start(s, &mut self.dbs, &mut self.reactor, now, due)?;
            }
        }
        let stopping = self.mode == Mode::Stopping;
        let drain = stopping && self.work.quiescent();
        for i in 0..self.dbs.len() {
            self.step_db(i, now, stopping, drain)?;
        }
        Ok(())
    }

    /// Lets database `i`'s components do what is due at `now`: the log writer, the flusher
    /// (`drain`: the cache empties at shutdown), stalled sessions, BDM, replication, the
    /// checkpoint and the generation journal (`stopping`: only what drains runs).
    fn step_db(
        &mut self,
        i: usize,
        now: Instant,
        stopping: bool,
        drain: bool,
    ) -> Result<(), EngineError> {
        let s = &self.settings;
        let db = &mut self.dbs[i];
        let need = db.flusher.wal_wait;
        let why = db.log.maybe_flush(&mut self.reactor, now, stopping, need)?;
        db.stats.count_record(why);
        let seq_durable = db.log.seq_durable;
        db.flusher.run(
            crate::db::flusher::FlushCtx {
                db: i,
                file: db.file,
                database_id: db.spec.database_id,
                compressibility_pct: s.compressibility_pct,
                cache: &mut db.cache,
                pages: &mut db.pages,
                seq_durable,
            },
            &mut self.reactor,
            now,
            s.max_dirty_age,
            drain,
        )?;
        if db.flusher.wal_wait.is_some() {
            let need = db.flusher.wal_wait;
            let why = db.log.maybe_flush(&mut self.reactor, now, false, need)?;
            db.stats.count_record(why);
        }
        if !db.stalled.is_empty() {
            self.work
                .retry_stalled(i, &mut self.dbs, &mut self.reactor, now)?;
        }
        let db = &mut self.dbs[i];
        if !stopping {
            if s.bdm {
                db.bdm
                    .run(&mut self.reactor, i, db.file, db.spec.data_pages, now)?;
            }
            if s.copies > 1 {
                db.repl.run(&mut self.reactor, i, &mut db.log)?;
            }
            if db.journal.wants_sync() && !db.checkpointer.busy() {
                // Enough page writes wait for a sync to record them: checkpoint now.
                db.checkpointer.next_at = db.checkpointer.next_at.min(now);
            }
            if now >= db.checkpointer.next_at {
                begin_checkpoint(&mut self.reactor, db, i, now)?;
            }
        }
        db.journal.run(&mut self.reactor, !stopping)?;
        Ok(())
    }

    /// Shows the generation journals' test-log lines (kept as notes).
    pub fn journal_lines(&mut self) {
        for i in 0..self.dbs.len() {
            for line in std::mem::take(&mut self.dbs[i].journal.lines) {
                self.log(&line, true);
            }
        }
    }

    /// The earliest timer of the workload and the components.
    fn wake_at(&self) -> Instant {
        let mut wake = self.next_tick;
        if self.mode == Mode::Halted {
            return wake;
        }
        if self.phase == Phase::Measure {
            wake = wake.min(self.sampler.next);
        }
        if self.mode == Mode::Paced && self.work.idle_count() > 0 {
            let next = if self.work.open.is_some() {
                self.work.pacer.next_arrival_at()
            } else {
                self.work.pacer.next_slot_at()
            };
            if let Some(t) = next {
                wake = wake.min(t);
            }
        }
        for db in &self.dbs {
            if self.mode != Mode::Stopping {
                if self.settings.bdm {
                    if let Some(t) = db.bdm.wake_at() {
                        wake = wake.min(t);
                    }
                }
                wake = wake.min(db.checkpointer.next_at);
            }
            // An aged page waiting for the log (write-ahead) is woken by the log write instead.
            if db.flusher.writes < db.flusher.max_writes && db.flusher.wal_wait.is_none() {
                if let Some(t) = db.cache.oldest_dirty_at() {
                    wake = wake.min(t + self.settings.max_dirty_age);
                }
            }
        }
        wake
    }

    /// Reports every I/O that has just passed the hung-I/O threshold, while it is still
    /// outstanding: a test-log line now, and an error entry for the result.
    fn report_hung(&mut self, now: Instant) {
        let threshold = self.settings.hung_io;
        for h in self.reactor.newly_hung(now, threshold) {
            let db = self
                .dbs
                .iter()
                .find(|d| d.spec.db_path == h.path || h.path.starts_with(&d.spec.log_dir));
            let in_database = db.is_some_and(|d| d.spec.db_path == h.path);
            let instance = db.map(|d| d.spec.name.clone());
            let what = h.op.noun();
            let when = if self.phase == Phase::Shutdown {
                self.shutdown_hung += 1;
                " during shutdown"
            } else {
                ""
            };
            let message = format!(
                "Hung I/O{when}: a {what} of {} bytes at offset {} of {} has been outstanding for {:.0} s (threshold {:.0} s).",
                h.len,
                h.offset,
                h.path.display(),
                h.outstanding.as_secs_f64(),
                threshold.as_secs_f64()
            );
            self.log(&message, false);
            self.hung.push(crate::result::ErrorEntry {
                class: crate::result::ErrorClass::HungIo,
                instance,
                count: 1,
                first_at: crate::rfc3339(self.reactor.clock().wall()),
                message,
                ..crate::errors::located(Some(&h.path), Some(h.offset), in_database)
            });
        }
    }

    /// Once per second: the pacer's tick and a progress event.
    fn per_second(&mut self, now: Instant, phase: &dyn PhaseRun) {
        if now < self.next_tick {
            return;
        }
        let secs = now.duration_since(self.last_tick).as_secs_f64().max(1e-3);
        let iops = (self.txn_ios - self.tick_ios) as f64 / secs;
        self.tick_ios = self.txn_ios;
        self.last_tick = now;
        self.next_tick = now + Duration::from_secs(1);
        self.report_hung(now);
        self.journal_lines();
        let (rd, lw) = self.dbs.iter().fold(
            (
                crate::stats::Counter::default(),
                crate::stats::Counter::default(),
            ),
            |(r, l), db| {
                (
                    r.plus(&db.stats.interval[Stream::DbRead as usize]),
                    l.plus(&db.stats.interval[Stream::LogWrite as usize]),
                )
            },
        );
        let progress = Progress {
            phase: self.phase,
            phase_elapsed_s: now.duration_since(self.phase_start).as_secs_f64(),
            phase_total_s: phase.planned().map(|d| d.as_secs_f64()),
            iops,
            target_iops: self.settings.target_iops,
            db_read_avg_ms: rd.avg_ms(),
            log_write_avg_ms: lw.avg_ms(),
            cache_fill: min_cache_fill(&self.dbs),
            pass_bytes: phase.pass_bytes(),
            log_files: phase.log_files(),
        };
        self.observer.on_event(RunEvent::Progress(progress));
        // Outside measurement, keep the interval counters bounded (they are not samples).
        if self.phase != Phase::Measure
            && now.duration_since(self.sampler.last) >= Duration::from_secs(60)
        {
            reset_intervals(&mut self.dbs);
            self.sampler.last = now;
        }
    }
}

/// Makes the phase a spec describes, beginning at an instant (the phases are built by
/// [`crate::phase`], which depends on this module, not the other way round).
pub(crate) type PhaseBuilder = fn(&crate::plan::PhaseSpec, Instant) -> Box<dyn PhaseRun>;

/// Runs the plan, its phases made by `build`. Returns when the last phase is done (or an error stopped the test). With
/// several reactors, each enters a phase only when all do, and a phase ends only when it is
/// done on all (this one keeps working meanwhile); an interruption or an error of any stops
/// them all ([`crate::multi`]).
pub(crate) fn execute(
    e: &mut Engine<'_>,
    plan: &Plan,
    cancel: &AtomicBool,
    build: PhaseBuilder,
) -> Result<(), EngineError> {
    let outcome = execute_phases(e, plan, cancel, build);
    if let (Err(_), Some(g)) = (&outcome, &e.gate) {
        g.halt();
    }
    outcome
}

fn execute_phases(
    e: &mut Engine<'_>,
    plan: &Plan,
    cancel: &AtomicBool,
    build: PhaseBuilder,
) -> Result<(), EngineError> {
    let mut idx = 0;
    while let Some(spec) = plan.phases.get(idx) {
        let mut phase = build(spec, e.reactor.now());
        if let Some(g) = &e.gate {
            g.enter(idx);
        }
        let now = e.reactor.now();
        e.phase = phase.kind();
        e.phase_start = now;
        e.observer.on_event(RunEvent::Phase(e.phase));
        phase.enter(&mut e.cx(), now)?;
        loop {
            let now = e.reactor.now();
            if !e.marks.stopping() && e.stop_asked(cancel) {
                e.mark_stop(cancel);
                if let Some(g) = &e.gate {
                    g.halt();
                }
                if phase.interrupt(&mut e.cx(), now)? == Flow::Done {
                    break;
                }
            }
            if phase.tick(&mut e.cx(), now)? == Flow::Done {
                break;
            }
            e.turn(now, &*phase, None)?;
        }
        // Done here: with several reactors, keep working until the phase is done on all
        // (the last phase needs no gate: nothing follows it).
        if !e.marks.stopping() && idx + 1 < plan.phases.len() {
            if let Some(g) = e.gate.clone() {
                g.done(idx);
                while !g.all_done(idx) {
                    let now = e.reactor.now();
                    if e.stop_asked(cancel) {
                        e.mark_stop(cancel);
                        g.halt();
                        break;
                    }
                    e.turn(now, &*phase, Some(now + GATE_POLL))?;
                }
            }
        }
        idx = if e.marks.stopping() {
            // An interrupted test goes straight to the phase that must always run.
            plan.final_phase_after(idx)
        } else {
            idx + 1
        };
    }
    Ok(())
}

/// The database and measured stream of an I/O (as [`route`] records it), if it has one.
fn measured_stream(owner: Owner) -> Option<(usize, Stream)> {
    Some(match owner {
        Owner::TxnRead { db, .. } => (db, Stream::DbRead),
        Owner::Flush { db, .. } => (db, Stream::DbWrite),
        Owner::LogWrite { db, .. } | Owner::LogCreate { db, step: 0, .. } => (db, Stream::LogWrite),
        Owner::LogCreate { db, .. }
        | Owner::Checkpoint { db, .. }
        | Owner::Patch { db, .. }
        | Owner::Journal { db, .. } => (db, Stream::Other),
        Owner::Bdm { db, .. } => (db, Stream::Bdm),
        Owner::Repl { db, .. } => (db, Stream::LogRead),
        Owner::Replay { db, io } => (db, io.stream()),
        Owner::Pass { .. } | Owner::PassJournal { .. } => return None,
    })
}

/// Begins a checkpoint of database `i` at the oldest change not yet in the database file.
pub(crate) fn begin_checkpoint(
    reactor: &mut Reactor,
    db: &mut Database,
    i: usize,
    now: Instant,
) -> Result<(), EngineError> {
    // The oldest change not yet in the database file; with none, everything logged is in it
    // and the checkpoint moves to where the next record goes.
    let (lsn, seq) = match db.cache.min_dirty_lsn() {
        Some(seq) => (db.log.lsn_of(seq), seq),
        None => (db.log.tail_lsn(), db.log.seq_buffered),
    };
    // A checkpoint never points past where the log has reached.
    assert!(
        lsn <= db.log.tail_lsn(),
        "checkpoint of database {i} at {lsn:?}, past the log's tail {:?}",
        db.log.tail_lsn()
    );
    if db.checkpointer.begin(reactor, i, db.file, lsn, seq, now)? {
        // The sync just submitted makes every page write completed so far durable.
        db.journal.seal();
    }
    Ok(())
}

/// What routing needs besides the reactor, the databases and the workload.
struct RouteCtx<'a> {
    scratch: &'a mut [u8],
    txn_ios: &'a mut u64,
    pass_inbox: &'a mut Vec<PassChunk>,
    found: &'a mut Vec<(u64, Finding)>,
    /// Sessions whose commits a log write made durable (reused).
    done: &'a mut Vec<usize>,
    /// `continue_on_errors`.
    cont: bool,
    /// Copies per database: above 1, damaged pages are patched.
    copies: u32,
    compressibility_pct: u8,
    checksum_reads_pct: u8,
}

/// Routes one completion to its owner. A failed I/O stops the test, unless
/// `continue_on_errors` and it is an error the workload can go past ([`gone_past`]): then it is
/// counted and the I/O is treated as done (a read's pages are not verified; a failed flush
/// leaves the tracker expecting nothing of those pages; a failed log write completes its
/// waiters).
fn route(
    reactor: &mut Reactor,
    dbs: &mut [Database],
    work: &mut Workload,
    cx: &mut RouteCtx<'_>,
    owner: Owner,
    c: &mut IoCompletion,
) -> Result<(), EngineError> {
    match owner {
        // The journal judges its own completions (a short read is a shorter file).
        Owner::Journal { db, io } => return journal_done(reactor, &mut dbs[db], db, io, cx, c),
        Owner::PassJournal { db, offset } => {
            pass_journal_done(reactor, cx, db, offset, c);
            return Ok(());
        }
        _ => {}
    }
    let got = match reactor.check(c) {
        Ok(n) => (n as u64, true),
        Err(e) => {
            gone_past(reactor, dbs, owner, e, cx.cont)?;
            (0, false)
        }
    };
    let (bytes, ok) = got;
    let now = reactor.now();
    match owner {
        Owner::TxnRead { db, first, pages } => {
            if ok {
                dbs[db].stats.record(Stream::DbRead, bytes, c.latency);
            }
            *cx.txn_ios += 1;
            work.pacer.on_read(now, 1);
            if ok {
                let data = c.req.buf.as_slice();
                check_pages(&mut dbs[db], db, first, pages, data, None, cx, reactor)?;
            }
            work.pages_read(db, first, pages, dbs, now)?;
        }
        Owner::Flush { db, first, pages } => {
            *cx.txn_ios += 1;
            work.pacer.on_write(now, 1);
            flush_done(reactor, &mut dbs[db], (first, pages), got, c, now);
            work.retry_stalled(db, dbs, reactor, now)?;
        }
        Owner::LogWrite { db, gen, end_lsn } => {
            if ok {
                dbs[db].stats.record(Stream::LogWrite, bytes, c.latency);
            } else {
                dbs[db].log.write_failed(gen);
            }
            let done = &mut *cx.done;
            done.clear();
            dbs[db].log.written(gen, end_lsn, done);
            for &s in done.iter() {
                work.finish(s, dbs, now)?;
            }
        }
        Owner::LogCreate { db, gen, step } => {
            // The header is a log write; the preallocation that follows is not a write.
            let stream = if step == 0 {
                Stream::LogWrite
            } else {
                Stream::Other
            };
            if ok {
                dbs[db].stats.record(stream, bytes, c.latency);
            } else {
                dbs[db].log.write_failed(gen);
            }
            dbs[db].log.created(reactor, gen, step)?;
        }
        Owner::Checkpoint { db, step } => checkpoint_done(reactor, &mut dbs[db], db, step, got, c)?,
        Owner::Bdm {
            db,
            first,
            pages,
            seq,
        } => {
            if ok {
                dbs[db].stats.record(Stream::Bdm, bytes, c.latency);
            }
            dbs[db].bdm.done(first, pages)?;
            if ok {
                let data = c.req.buf.as_slice();
                check_pages(&mut dbs[db], db, first, pages, data, Some(seq), cx, reactor)?;
            }
        }
        Owner::Repl { db, gen } => repl_done(reactor, &mut dbs[db], gen, got, cx.cont, c)?,
        Owner::Pass { db, offset } => {
            let len = usize::try_from(bytes).unwrap_or(usize::MAX).min(c.req.len);
            to_inbox(reactor, cx, db, offset, len, PassPart::File, c);
        }
        Owner::Patch { db, page, gen } => patch_done(reactor, &mut dbs[db], page, gen, got, c),
        Owner::Replay { db, io } => {
            let d = &mut dbs[db];
            d.stats.record(io.stream(), bytes, c.latency);
            let len = usize::try_from(bytes).unwrap_or(usize::MAX);
            let data = c.req.buf.as_slice().get(..len).unwrap_or_default();
            d.replay
                .completed(reactor, io, data, &mut d.integrity, cx.scratch, now)?;
        }
        // Routed before the check, above.
        Owner::Journal { .. } | Owner::PassJournal { .. } => {}
    }
    Ok(())
}

/// A generation-journal I/O of database `index` completed: the journal judges it, and the
/// reads it resolved are counted and named.
fn journal_done(
    reactor: &mut Reactor,
    d: &mut Database,
    index: usize,
    io: crate::reactor::JournalIo,
    cx: &mut RouteCtx<'_>,
    c: &mut IoCompletion,
) -> Result<(), EngineError> {
    if let Ok(n) = &c.result {
        d.stats.record(Stream::Other, *n as u64, c.latency);
    }
    d.journal.completed(reactor, io, c)?;
    if d.journal.resolved.is_empty() {
        return Ok(());
    }
    cx.found.clear();
    cx.found.append(&mut d.journal.resolved);
    for &(_, f) in cx.found.iter() {
        f.count(&mut d.integrity);
    }
    report_found(d, index, cx, reactor)
}

/// A sequential pass's journal read completed: kept for the pass phase. It may end early (a
/// shorter or sparse file: the rest is 0); an error leaves the pass without the journal, not
/// stopped.
fn pass_journal_done(
    reactor: &mut Reactor,
    cx: &mut RouteCtx<'_>,
    db: usize,
    offset: u64,
    c: &mut IoCompletion,
) {
    let (len, part) = match &c.result {
        Ok(n) => (*n.min(&c.req.len), PassPart::Journal),
        Err(_) => (0, PassPart::JournalFailed),
    };
    to_inbox(reactor, cx, db, offset, len, part, c);
}

/// A pass read's buffer moves to the inbox (a pooled one takes its place and goes back to the
/// pool when routing ends): no copy of the data.
fn to_inbox(
    reactor: &mut Reactor,
    cx: &mut RouteCtx<'_>,
    db: usize,
    offset: u64,
    len: usize,
    part: PassPart,
    c: &mut IoCompletion,
) {
    let fresh = reactor.buf(c.req.buf.len());
    let data = std::mem::replace(&mut c.req.buf, fresh);
    cx.pass_inbox.push(PassChunk {
        file: db,
        offset,
        data,
        len,
        part,
    });
}

/// A page write of `run` (first page, pages) completed, with `got` (bytes, success).
fn flush_done(
    reactor: &Reactor,
    d: &mut Database,
    (first, pages): (u64, u64),
    (bytes, ok): (u64, bool),
    c: &IoCompletion,
    now: Instant,
) {
    if ok {
        d.stats.record(Stream::DbWrite, bytes, c.latency);
        if d.stats.measuring {
            d.stats.shape.pages_written += pages;
        }
    }
    let seq = reactor.events;
    if ok {
        d.flusher.done(
            &mut d.cache,
            &mut d.pages,
            &mut d.journal,
            first,
            pages,
            seq,
            now,
        );
    } else {
        d.flusher
            .failed(&mut d.cache, &mut d.pages, first, pages, now);
    }
}

/// A step of a checkpoint of database `db` completed, with `got` (bytes, success). Measured,
/// but not as log writes (docs/method.md, "Logs").
fn checkpoint_done(
    reactor: &mut Reactor,
    d: &mut Database,
    db: usize,
    step: u8,
    (bytes, ok): (u64, bool),
    c: &IoCompletion,
) -> Result<(), EngineError> {
    if ok {
        d.stats.record(Stream::Other, bytes, c.latency);
    }
    if step == 0 {
        // The database sync: the page writes it covered are durable (or, failed, wait
        // for the next one).
        if ok {
            d.journal.covered(reactor.events);
        } else {
            d.journal.sync_failed();
        }
    }
    let id = d.spec.database_id;
    if let Some((lsn, seq)) = d.checkpointer.step_done(reactor, db, id, step)? {
        d.log.forget_before(seq);
        d.log.retire_before(reactor, lsn_generation(lsn));
        for path in std::mem::take(&mut d.log.retire) {
            reactor.remove_file(&path)?;
        }
    }
    Ok(())
}

/// A replication read of log generation `gen` completed, with `got` (bytes, success): a
/// problem it found stops the test unless `cont`.
fn repl_done(
    reactor: &Reactor,
    d: &mut Database,
    gen: u64,
    (bytes, ok): (u64, bool),
    cont: bool,
    c: &IoCompletion,
) -> Result<(), EngineError> {
    if ok {
        d.stats.record(Stream::LogRead, bytes, c.latency);
    }
    let len = usize::try_from(bytes).unwrap_or(usize::MAX);
    let data = ok.then(|| c.req.buf.as_slice().get(..len).unwrap_or_default());
    if let Some(p) = d.repl.done(&mut d.log, gen, data, d.spec.database_id) {
        let message = d.log_problem(&p, reactor.clock().wall());
        if !cont {
            return Err(EngineError::Integrity(message));
        }
    }
    Ok(())
}

/// A patch of `page` at generation `gen` completed, with `got` (bytes, success).
fn patch_done(
    reactor: &Reactor,
    d: &mut Database,
    page: u64,
    gen: u64,
    (bytes, ok): (u64, bool),
    c: &IoCompletion,
) {
    assert!(
        d.patching > 0,
        "patch: a page patch completed with none in flight"
    );
    d.patching -= 1;
    if ok {
        d.stats.record(Stream::Other, bytes, c.latency);
        d.pages.write_done(page, reactor.events);
        d.journal.written(page, gen);
        let f = Finding::Patched { generation: gen };
        f.count(&mut d.integrity);
        let at = reactor.clock().wall();
        d.damage.record(&d.spec.name, &d.spec.db_path, page, f, at);
    } else {
        d.pages.write_failed(page);
    }
}

/// Decides about a failed I/O: `Err` stops the test (the default; always for a full disk, a
/// queue failure, and the sequential-pass and recovery reads, which have no way to go on);
/// with `cont` an I/O error of the workload is counted in its database's `io_errors` (one
/// entry per class and errno) and `Ok` lets the routing treat the I/O as done.
fn gone_past(
    reactor: &Reactor,
    dbs: &mut [Database],
    owner: Owner,
    e: mbx_io::IoError,
    cont: bool,
) -> Result<(), EngineError> {
    let db = match owner {
        Owner::TxnRead { db, .. }
        | Owner::Flush { db, .. }
        | Owner::LogWrite { db, .. }
        | Owner::LogCreate { db, .. }
        | Owner::Checkpoint { db, .. }
        | Owner::Bdm { db, .. }
        | Owner::Repl { db, .. }
        | Owner::Patch { db, .. } => db,
        Owner::Pass { .. }
        | Owner::PassJournal { .. }
        | Owner::Replay { .. }
        | Owner::Journal { .. } => return Err(e.into()),
    };
    let (errno, path, offset) = match &e {
        mbx_io::IoError::Os {
            error,
            path,
            offset,
            ..
        } if !crate::errors::is_no_space(error) => (error.raw_os_error(), path.clone(), *offset),
        mbx_io::IoError::Short { path, offset, .. } => (None, path.clone(), Some(*offset)),
        _ => return Err(e.into()),
    };
    if !cont {
        return Err(e.into());
    }
    let Some(d) = dbs.get_mut(db) else {
        return Err(e.into());
    };
    if let Some(x) = d
        .io_errors
        .iter_mut()
        .find(|x| x.class == crate::result::ErrorClass::IoError && x.errno == errno)
    {
        x.count += 1;
        return Ok(());
    }
    let in_database = path == d.spec.db_path;
    let message = e.to_string();
    d.io_errors.push(crate::result::ErrorEntry {
        class: crate::result::ErrorClass::IoError,
        instance: Some(d.spec.name.clone()),
        errno,
        count: 1,
        first_at: crate::rfc3339(reactor.clock().wall()),
        message,
        ..crate::errors::located(Some(&path), offset, in_database)
    });
    Ok(())
}

fn lsn_generation(lsn: crate::db::logfmt::Lsn) -> u64 {
    lsn.generation()
}

/// Verifies the pages of a completed read: each damaged page is counted and named in its
/// database's damage list. With copies > 1 each is patched (rewritten from its known content,
/// as Exchange patches a page from a passive copy) and the test goes on; otherwise the first
/// one stops the test unless `continue_on_errors`.
#[allow(clippy::too_many_arguments)]
fn check_pages(
    db: &mut Database,
    index: usize,
    first: u64,
    pages: u64,
    data: &[u8],
    scan_seq: Option<u64>,
    cx: &mut RouteCtx<'_>,
    reactor: &mut Reactor,
) -> Result<(), EngineError> {
    cx.found.clear();
    verify::verify_pages(
        &mut db.integrity,
        &db.pages,
        Some(&mut db.journal),
        reactor.events,
        db.spec.database_id,
        first,
        pages,
        data,
        scan_seq,
        cx.checksum_reads_pct,
        cx.scratch,
        cx.found,
    );
    report_found(db, index, cx, reactor)
}

/// Names and counts in the damage list the pages in `cx.found` (already counted in
/// `integrity`); patches them (copies > 1), or stops the test unless `continue_on_errors`.
fn report_found(
    db: &mut Database,
    index: usize,
    cx: &mut RouteCtx<'_>,
    reactor: &mut Reactor,
) -> Result<(), EngineError> {
    if cx.found.is_empty() {
        return Ok(());
    }
    let at = reactor.clock().wall();
    let before = db.damage.named.len();
    for &(page, f) in cx.found.iter() {
        db.damage
            .record(&db.spec.name, &db.spec.db_path, page, f, at);
    }
    if cx.copies > 1 {
        for &(page, _) in cx.found.iter() {
            patch(reactor, db, index, page, cx.compressibility_pct)?;
        }
        return Ok(());
    }
    if cx.cont {
        return Ok(());
    }
    let message = db
        .damage
        .named
        .get(before)
        .map(|e| e.message.clone())
        .unwrap_or_else(|| "a damaged page was read".into());
    Err(EngineError::Integrity(message))
}

/// Rewrites damaged `page` of database `index` from its known content: at the generation the
/// page tracker remembers, or the prepared generation (0) when it remembers nothing. A page
/// with a write in flight is left to that write, a page in the cache to the cache; with [`crate::PATCH_SLOTS`] patches already in
/// flight the page stays unpatched (it is counted as damaged all the same).
fn patch(
    reactor: &mut Reactor,
    db: &mut Database,
    index: usize,
    page: u64,
    compressibility_pct: u8,
) -> Result<(), EngineError> {
    use mbx_store::page::{build_data_page, PageHeader, KIND_DATA, PAGE_SIZE};
    // Only pages the cache does not hold: a cached page may be modified and flushed while the
    // patch is in flight, and the patch, landing last, would leave older content than the
    // tracker expects (a false lost write). A page met by a transaction (cached from then on)
    // is patched when BDM or a later read meets it uncached, or rewritten by its next flush.
    if db.cache.state(page).is_some() {
        return Ok(());
    }
    let gen = match db.pages.known(page) {
        crate::db::pages::Known::Written { gen, .. } => gen,
        crate::db::pages::Known::InFlight { .. } => return Ok(()),
        // What the generation journal records, if held; else what `prepare` wrote.
        crate::db::pages::Known::Unknown => db.journal.entry(page).unwrap_or(PREPARED_GENERATION),
    };
    if db.patching >= crate::PATCH_SLOTS {
        return Ok(());
    }
    db.patching += 1;
    assert!(
        db.patching <= crate::PATCH_SLOTS,
        "patch: more patches in flight than slots"
    );
    let mut buf = reactor.buf(PAGE_SIZE);
    build_data_page(
        buf.as_mut_slice(),
        &PageHeader {
            page_number: page,
            database_id: db.spec.database_id,
            generation: gen,
            kind: KIND_DATA,
            compressibility_pct,
        },
    );
    // The page header names the place it is written to.
    let h = PageHeader::read(buf.as_slice());
    assert!(
        h.page_number == page && h.database_id == db.spec.database_id,
        "patch: page {page} built as page {} of {:#x}",
        h.page_number,
        h.database_id
    );
    db.pages.write_submitted(page, gen, reactor.events + 1);
    reactor.submit(
        Owner::Patch {
            db: index,
            page,
            gen,
        },
        mbx_io::IoOp::Write,
        db.file,
        page.saturating_mul(PAGE_SIZE as u64),
        buf,
        None,
    )
}

/// The generation `mbx_store::prepare` writes every page at.
const PREPARED_GENERATION: u64 = 0;
