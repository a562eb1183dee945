//! Several reactors, one per thread, the databases partitioned among them (issue 11, "every
//! core"). Each runs the plan's phases on its share of the databases, sessions and IOPS target;
//! a [`Gate`] makes them enter every phase together (a phase ends only when it is done on all:
//! the attain phase when every cache of every reactor meets the prerequisite, and the measured
//! phase starts at one instant for all), and an interruption or an error on one stops all.
//! Their events come to the caller's observer on the caller's thread: the first reactor's log
//! lines as they are, the others' prefixed with the reactor, progress summed, samples merged per sample time (rates summed, per-database rows
//! concatenated in database order). The result is built from all databases at once
//! ([`crate::finish`]): per-database rows and histograms as measured, counters summed, never an
//! average of averages. `iobench --numjobs` (mbx-io's `bench.rs`) follows the same pattern.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc;
use std::sync::{Arc, Condvar, Mutex};

use mbx_config::RunConfig;

use crate::result::Sample;
use crate::sampling::HostSeries;
use crate::{Observer, Phase, Plan, Progress, RunEvent};

/// One reactor's share of the test.
#[derive(Debug, Clone)]
pub(crate) struct Share {
    /// The reactor's number (0 reads the host's counters).
    pub index: usize,
    /// The number, in the whole test, of its first database.
    pub first_db: usize,
    /// Databases in the whole test.
    pub total_dbs: usize,
    /// Its sessions.
    pub sessions: usize,
    /// Its part of the IOPS target.
    pub target_iops: f64,
    /// Its mailboxes (those of its databases).
    pub mailboxes: u64,
    /// Its random seed.
    pub seed: u64,
}

impl Share {
    /// All of the test on one reactor.
    pub fn whole(cfg: &RunConfig, databases: usize) -> Share {
        Share {
            index: 0,
            first_db: 0,
            total_dbs: databases,
            sessions: cfg.sessions() as usize,
            target_iops: cfg.target_iops(),
            mailboxes: cfg.profile.mailboxes,
            seed: cfg.seed,
        }
    }

    /// The shares of `reactors` reactors over `databases` databases: consecutive databases
    /// each (the first ones one more when they do not divide evenly), sessions and the target in
    /// proportion to the databases (at least one session each), the mailboxes of its databases.
    pub fn split(cfg: &RunConfig, databases: usize, reactors: usize) -> Vec<Share> {
        let r = reactors.clamp(1, databases.max(1));
        if r == 1 {
            return vec![Share::whole(cfg, databases)];
        }
        let n = databases as u64;
        let sessions = u64::from(cfg.sessions());
        let (base, extra) = (databases / r, databases % r);
        let mut first = 0usize;
        let mut out = Vec::with_capacity(r);
        for index in 0..r {
            let k = base + usize::from(index < extra);
            let end = first + k;
            let cut = |d: usize| sessions.saturating_mul(d as u64) / n.max(1);
            let mailboxes = (first..end)
                .map(|i| (cfg.profile.mailboxes + n - 1 - i as u64) / n)
                .sum();
            out.push(Share {
                index,
                first_db: first,
                total_dbs: databases,
                sessions: usize::try_from(cut(end).saturating_sub(cut(first)))
                    .unwrap_or(usize::MAX)
                    .max(1),
                target_iops: cfg.target_iops() * k as f64 / databases as f64,
                mailboxes,
                seed: cfg
                    .seed
                    .wrapping_add((index as u64).wrapping_mul(0x9E37_79B9_7F4A_7C15)),
            });
            first = end;
        }
        // The shares partition the databases: each in exactly one, in order.
        assert_eq!(
            first, databases,
            "reactor shares cover {first} of {databases} databases"
        );
        // Each share has at least one session; one raised to it is taken back from the share
        // with the most, so the reactors run exactly the sessions set or tuned (there are never
        // more reactors than sessions: [`reactors_for`]).
        let want = usize::try_from(sessions).unwrap_or(usize::MAX);
        while out.iter().map(|s| s.sessions).sum::<usize>() > want {
            match out
                .iter_mut()
                .filter(|s| s.sessions > 1)
                .max_by_key(|s| s.sessions)
            {
                Some(most) => most.sessions -= 1,
                None => break,
            }
        }
        out
    }
}

/// How many reactors a test on `databases` databases runs: `cfg.reactors` (0: one per core),
/// never more than the databases or the sessions (each reactor runs at least one: two reactors
/// for one session would run two), at least one. Plans other than the transaction mix with a
/// clean shutdown (a final checksum pass, soft recovery, a plan that only reads) run on one.
pub fn reactors_for(cfg: &RunConfig, plan: &Plan, databases: usize) -> usize {
    if plan.reads_only() || plan.final_pass().is_some() || plan.log_files_to_replay().is_some() {
        return 1;
    }
    let wanted = match cfg.reactors {
        0 => std::thread::available_parallelism().map_or(1, |n| n.get()),
        n => usize::try_from(n).unwrap_or(usize::MAX),
    };
    wanted
        .min(databases)
        .min(usize::try_from(cfg.sessions()).unwrap_or(usize::MAX))
        .max(1)
}

/// The phase gate the reactors of one test share.
#[derive(Debug)]
pub(crate) struct Gate {
    stop: AtomicBool,
    state: Mutex<GateState>,
    cv: Condvar,
}

#[derive(Debug)]
struct GateState {
    /// Per reactor: the phases it has entered.
    entered: Vec<usize>,
    /// Per reactor: the phases it is done with.
    done: Vec<usize>,
}

impl Gate {
    pub(crate) fn new(n: usize) -> Gate {
        Gate {
            stop: AtomicBool::new(false),
            state: Mutex::new(GateState {
                entered: vec![0; n],
                done: vec![0; n],
            }),
            cv: Condvar::new(),
        }
    }
}

/// A reactor's place at the [`Gate`].
#[derive(Debug, Clone)]
pub(crate) struct Link {
    pub(crate) gate: Arc<Gate>,
    pub(crate) me: usize,
}

impl Link {
    /// Blocks until every reactor has come to phase `idx` (or the test is stopped): they enter
    /// it together.
    pub fn enter(&self, idx: usize) {
        let g = &*self.gate;
        let Ok(mut st) = g.state.lock() else {
            return self.halt();
        };
        if let Some(e) = st.entered.get_mut(self.me) {
            *e = (*e).max(idx + 1);
        }
        g.cv.notify_all();
        while !self.stopped() && st.entered.iter().any(|&e| e < idx + 1) {
            st = match g.cv.wait(st) {
                Ok(st) => st,
                Err(_) => return self.halt(),
            };
        }
    }

    /// This reactor is done with phase `idx`.
    pub fn done(&self, idx: usize) {
        if let Ok(mut st) = self.gate.state.lock() {
            if let Some(d) = st.done.get_mut(self.me) {
                *d = (*d).max(idx + 1);
            }
        }
    }

    /// True when every reactor is done with phase `idx` (or the test is stopped).
    pub fn all_done(&self, idx: usize) -> bool {
        self.stopped()
            || self
                .gate
                .state
                .lock()
                .map_or(true, |st| st.done.iter().all(|&d| d > idx))
    }

    /// Stops every reactor (an interruption, or an error on this one).
    pub fn halt(&self) {
        self.gate.stop.store(true, Ordering::Relaxed);
        // Take the lock so no reactor misses the wake-up between its check and its wait.
        let _guard = self.gate.state.lock();
        self.gate.cv.notify_all();
    }

    /// True once any reactor stopped the test.
    pub fn stopped(&self) -> bool {
        self.gate.stop.load(Ordering::Relaxed)
    }
}

/// An event of one reactor, owned, on its way to the caller's thread.
pub(crate) enum Msg {
    Phase(Phase),
    Log(String),
    Progress(Progress),
    Sample(Sample),
}

/// The observer of a reactor's thread: sends its events to the caller's.
pub(crate) struct Forward {
    pub(crate) r: usize,
    pub(crate) tx: mpsc::Sender<(usize, Msg)>,
}

impl Observer for Forward {
    fn on_event(&mut self, e: RunEvent<'_>) {
        let m = match e {
            RunEvent::Phase(p) => Msg::Phase(p),
            RunEvent::Log(l) => Msg::Log(l.to_string()),
            RunEvent::Progress(p) => Msg::Progress(p),
            RunEvent::Sample(s) => Msg::Sample(s.clone()),
            // Preparation happens before the reactors start.
            RunEvent::Prepare(_) => return,
        };
        // The caller's thread receives until every reactor ended: a send cannot fail before.
        let _ = self.tx.send((self.r, m));
    }
}

/// Merges the reactors' events for the caller's observer.
pub(crate) struct Merger<'o> {
    pub(crate) n: usize,
    pub(crate) observer: &'o mut dyn Observer,
    pub(crate) progress: Vec<Option<Progress>>,
    /// Samples received, per reactor, not yet merged (the k-th of each go together).
    pub(crate) samples: Vec<std::collections::VecDeque<Sample>>,
    /// The host series of the merged samples.
    pub(crate) host: HostSeries,
}

impl Merger<'_> {
    pub(crate) fn on(&mut self, r: usize, m: Msg) {
        match m {
            // The reactors enter every phase together: the first one's phases are the test's.
            Msg::Phase(p) => {
                if r == 0 {
                    self.observer.on_event(RunEvent::Phase(p));
                }
            }
            // The first reactor speaks for the test (its settings lines are the test's, and
            // the lines of its phases read as before); the others' lines say whose they are.
            Msg::Log(line) if r == 0 => {
                self.observer.on_event(RunEvent::Log(&line));
            }
            Msg::Log(line) => {
                let line = format!("Reactor {}/{}: {line}", r + 1, self.n);
                self.observer.on_event(RunEvent::Log(&line));
            }
            Msg::Progress(p) => {
                if let Some(slot) = self.progress.get_mut(r) {
                    *slot = Some(p);
                }
                if r == 0 {
                    let merged = merge_progress(p, &self.progress);
                    self.observer.on_event(RunEvent::Progress(merged));
                }
            }
            Msg::Sample(s) => {
                if let Some(q) = self.samples.get_mut(r) {
                    q.push_back(s);
                }
                while self.samples.iter().all(|q| !q.is_empty()) {
                    self.emit_sample();
                }
            }
        }
    }

    /// Merges the oldest sample of every reactor that has one (all of them, except for the
    /// last samples of a test some reactor stopped before the others).
    fn emit_sample(&mut self) {
        let parts: Vec<Sample> = self
            .samples
            .iter_mut()
            .filter_map(|q| q.pop_front())
            .collect();
        let Some(merged) = merge_samples(parts) else {
            return;
        };
        self.host.cpu_pct.add(merged.host.cpu_pct);
        self.host.available_mb.add(merged.host.available_mb);
        self.host
            .stalls_per_s
            .add(merged.host.page_fault_stalls_per_s);
        self.observer.on_event(RunEvent::Sample(&merged));
    }

    pub(crate) fn flush(&mut self) {
        while self.samples.iter().any(|q| !q.is_empty()) {
            self.emit_sample();
        }
    }
}

/// Progress over all reactors (`first`: the first reactor's, which names the phase): IOPS and
/// targets summed, the emptiest cache, the slowest reactor's average latencies (display only).
fn merge_progress(first: Progress, all: &[Option<Progress>]) -> Progress {
    let mut p = first;
    p.iops = 0.0;
    p.target_iops = 0.0;
    for q in all.iter().flatten() {
        p.iops += q.iops;
        p.target_iops += q.target_iops;
        p.cache_fill = p.cache_fill.min(q.cache_fill);
        p.db_read_avg_ms = p.db_read_avg_ms.max(q.db_read_avg_ms);
        p.log_write_avg_ms = p.log_write_avg_ms.max(q.log_write_avg_ms);
    }
    p
}

/// One sample of the whole test from the reactors' samples of the same sample time (in reactor
/// order): their database rows concatenated (database order), page fault stalls and open-loop
/// counts summed, the host's CPU and memory as the first reactor read them, its time stamp and
/// interval.
pub(crate) fn merge_samples(parts: Vec<Sample>) -> Option<Sample> {
    let mut parts = parts.into_iter();
    let mut merged = parts.next()?;
    for s in parts {
        merged.instances.extend(s.instances);
        merged.host.page_fault_stalls_per_s += s.host.page_fault_stalls_per_s;
        // Open loop: arrivals, starts, late and dropped transactions summed; the backlogs of
        // separate reactors add up too (each waited at its own peak at most).
        if let (Some(m), Some(p)) = (merged.pacing.as_mut(), s.pacing) {
            m.arrived += p.arrived;
            m.started += p.started;
            m.late += p.late;
            m.dropped += p.dropped;
            m.backlog_max += p.backlog_max;
        }
    }
    Some(merged)
}

/// Stops the other reactors when this one's thread panics (they would wait for it at the gate).
pub(crate) struct HaltOnPanic(pub(crate) Link);

impl Drop for HaltOnPanic {
    fn drop(&mut self) {
        if std::thread::panicking() {
            self.0.halt();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Issue 35, item 5: the sessions that run are the sessions set or tuned, however the
    /// databases split over the reactors (tuning's "1 sessions" once ran one on each of 2).
    #[test]
    fn the_reactors_run_exactly_the_sessions_set() {
        for sessions in 1..=12u32 {
            for databases in 1..=8u32 {
                for reactors in 1..=4u32 {
                    let mut cfg = RunConfig {
                        threads: sessions,
                        reactors,
                        ..RunConfig::default()
                    };
                    cfg.profile.databases = databases;
                    let plan = Plan::performance(&cfg);
                    let r = reactors_for(&cfg, &plan, databases as usize);
                    assert!(
                        r <= sessions as usize && r >= 1,
                        "{sessions} {databases} {r}"
                    );
                    let shares = Share::split(&cfg, databases as usize, r);
                    let total: usize = shares.iter().map(|s| s.sessions).sum();
                    assert_eq!(
                        total, sessions as usize,
                        "{sessions} sessions, {databases} databases, {r} reactors: {shares:?}"
                    );
                    assert!(shares.iter().all(|s| s.sessions >= 1), "{shares:?}");
                }
            }
        }
    }
}
