//! Per-database components. A [`Database`] owns the state of one database under test: its cache,
//! the page tracker, the generation journal, and one of each workload component (flusher, log
//! writer, checkpointer, BDM, replication reader), each in its own file. Components submit through the reactor and are told
//! about their completions by the executor.

pub(crate) mod bdm;
pub(crate) mod checkpoint;
pub(crate) mod finding;
pub(crate) mod flusher;
pub(crate) mod journal;
pub(crate) mod log;
pub(crate) mod logfmt;
pub(crate) mod pages;
pub(crate) mod replay;
pub(crate) mod replication;
pub(crate) mod verify;

use std::collections::VecDeque;

use rustc_hash::FxHashMap;
use std::path::PathBuf;
use std::time::Instant;

use mbx_io::OpenMode;

use crate::cache::Cache;
use crate::reactor::Reactor;
use crate::result::Integrity;
use crate::stats::InstanceStats;
use crate::EngineError;

/// Where a database's log continues: what an earlier run left in its log folder.
#[derive(Debug, Clone, Default)]
pub struct LogStart {
    /// The first log generation this run writes (after the newest one present).
    pub next_generation: u64,
    /// The newest checkpoint's sequence (0 if none): this run continues after it.
    pub checkpoint_sequence: u64,
    /// Log files of earlier runs, deleted once this run's first checkpoint is written (circular
    /// logging) or kept (when it is off).
    pub earlier_logs: Vec<PathBuf>,
}

/// One database to drive.
#[derive(Debug, Clone)]
pub struct InstanceSpec {
    /// Jetstress-style name.
    pub name: String,
    /// Database file.
    pub db_path: PathBuf,
    /// Log directory.
    pub log_dir: PathBuf,
    /// Database id (from its header).
    pub database_id: u64,
    /// Data pages.
    pub data_pages: u64,
    /// Where its log continues.
    pub log: LogStart,
}

/// The state of one database under test.
pub(crate) struct Database {
    pub spec: InstanceSpec,
    pub file: usize,
    pub cache: Cache,
    pub pages: pages::PageTracker,
    /// Each page's last durable write generation, across runs.
    pub journal: journal::Journal,
    /// Sessions waiting for a page being read.
    pub waiters: Waiters,
    /// Sessions waiting for free cache frames.
    pub stalled: VecDeque<usize>,
    pub flusher: flusher::Flusher,
    pub log: log::LogWriter,
    pub checkpointer: checkpoint::Checkpointer,
    pub bdm: bdm::Bdm,
    pub repl: replication::Replicator,
    /// Soft recovery (idle unless a plan replays the log).
    pub replay: replay::Replayer,
    pub stats: InstanceStats,
    pub integrity: Integrity,
    /// The damaged pages found, named (bounded).
    pub damage: verify::Damage,
    /// I/O errors counted and gone past (`continue_on_errors`): one entry per class and errno.
    pub io_errors: Vec<crate::result::ErrorEntry>,
    /// Log problems replication reads found ([`Database::log_problem`]): one entry per log
    /// file, the first [`verify::NAMED_PAGES`], then the rest counted in the last entry of
    /// their class.
    pub log_errors: Vec<crate::result::ErrorEntry>,
    /// Page patching writes in flight (at most `crate::PATCH_SLOTS`).
    pub patching: usize,
    pub mailboxes: u64,
    /// The next page write generation (above anything an earlier run wrote).
    next_gen: u64,
}

/// How a database is set up.
pub(crate) struct DbParams {
    pub index: usize,
    pub cache_frames: usize,
    pub flush_start_pct: f64,
    pub flush_stop_pct: f64,
    pub mailboxes: u64,
    pub direct: bool,
    pub bdm_reads_per_s: f64,
    pub gen_base: u64,
    pub circular_logging: bool,
    pub replicated: bool,
    pub checkpoint_every: std::time::Duration,
    /// Most page writes in flight ([`flusher::max_flush_writes`]).
    pub flush_writes: usize,
}

impl Database {
    /// Opens the database file, its log (continuing where the last run stopped) and checkpoint.
    pub fn open(
        spec: InstanceSpec,
        p: DbParams,
        reactor: &mut Reactor,
        now: Instant,
    ) -> Result<Database, EngineError> {
        let (file, ckpt_file) = open_files(&spec, p.direct, reactor)?;
        let log = log::LogWriter::new(
            reactor,
            p.index,
            spec.log_dir.clone(),
            spec.database_id,
            p.direct,
            spec.log.next_generation,
            now,
        )?;
        let mut log = log;
        log.circular = p.circular_logging;
        log.replicated = p.replicated;
        if p.circular_logging {
            log.retire.extend(spec.log.earlier_logs.iter().cloned());
        }
        // The page tracker remembers the last 8 cache-fulls of page writes, at most 2^18 (8 MiB
        // per database; docs/method.md).
        let tracked = p.cache_frames.saturating_mul(8).clamp(4096, 1 << 18);
        let journal = journal::Journal::open(
            reactor,
            p.index,
            mbx_store::journal::journal_path(&spec.db_path),
            spec.database_id,
            spec.data_pages,
            true,
        )?;
        Ok(Database {
            journal,
            cache: Cache::new(p.cache_frames, p.flush_start_pct, p.flush_stop_pct),
            pages: pages::PageTracker::new(tracked),
            waiters: Waiters::default(),
            stalled: VecDeque::new(),
            flusher: flusher::Flusher {
                max_writes: p.flush_writes,
                ..flusher::Flusher::default()
            },
            checkpointer: checkpoint::Checkpointer::new(
                ckpt_file,
                spec.log.checkpoint_sequence,
                p.checkpoint_every,
                now,
            ),
            bdm: bdm::Bdm::new(p.bdm_reads_per_s, now),
            repl: replication::Replicator::default(),
            replay: replay::Replayer::default(),
            stats: InstanceStats::default(),
            integrity: Integrity::default(),
            damage: verify::Damage::default(),
            io_errors: Vec::new(),
            log_errors: Vec::new(),
            patching: 0,
            mailboxes: p.mailboxes.max(1),
            next_gen: p.gen_base,
            log,
            file,
            spec,
        })
    }

    /// This database as a sequential pass after its shutdown sees it (the Stress test's
    /// checksum): its spec, with `log.earlier_logs` the log files on disk now, oldest first:
    /// an earlier run's files when circular logging kept them, then the ones this run wrote and
    /// did not retire.
    pub fn pass_spec(&self) -> InstanceSpec {
        let mut spec = self.spec.clone();
        let mut logs = if self.log.circular {
            Vec::new()
        } else {
            spec.log.earlier_logs.clone()
        };
        logs.extend(self.log.files_on_disk());
        spec.log.earlier_logs = logs;
        spec
    }

    /// Counts and records a log problem a replication read found; returns its message.
    pub fn log_problem(
        &mut self,
        p: &replication::LogReadProblem,
        at: std::time::SystemTime,
    ) -> String {
        self.integrity.log_problems = self.integrity.log_problems.saturating_add(1);
        let path = self.spec.log_dir.join(logfmt::log_file_name(p.gen));
        let message = format!("{}: byte offset {}: {}", path.display(), p.offset, p.what);
        let full = self.log_errors.len() >= verify::NAMED_PAGES;
        if let Some(e) = self
            .log_errors
            .iter_mut()
            .rev()
            .find(|e| full && e.class == p.class)
        {
            e.count = e.count.saturating_add(1);
        } else {
            self.log_errors.push(crate::result::ErrorEntry {
                class: p.class.clone(),
                instance: Some(self.spec.name.clone()),
                count: 1,
                first_at: crate::rfc3339(at),
                message: message.clone(),
                ..crate::errors::located(Some(&path), Some(p.offset), false)
            });
        }
        message
    }

    /// A new page write generation.
    pub fn new_generation(&mut self) -> u64 {
        self.next_gen += 1;
        self.next_gen
    }
}

/// Opens the database file of `spec` (`direct`: with O_DIRECT) and its checkpoint file.
fn open_files(
    spec: &InstanceSpec,
    direct: bool,
    reactor: &mut Reactor,
) -> Result<(usize, usize), EngineError> {
    let file = reactor.open_file(
        &spec.db_path,
        OpenMode {
            direct,
            write_through: false,
            write: true,
            create: false,
        },
    )?;
    let ckpt_file = reactor.open_file(
        &spec.log_dir.join(logfmt::CHECKPOINT_FILE),
        OpenMode {
            direct: false,
            write_through: true,
            write: true,
            create: true,
        },
    )?;
    Ok((file, ckpt_file))
}

/// No node (the end of a waiter chain).
const NIL: usize = usize::MAX;

/// The sessions waiting for each page being read, in the order they began to wait: a chain per
/// page through a pool of nodes reused from one read to the next, so a page miss allocates
/// nothing once the pool and the map have grown to the most waits outstanding at once.
#[derive(Debug)]
pub(crate) struct Waiters {
    /// Page -> (first node, last node) of its chain.
    chains: FxHashMap<u64, (usize, usize)>,
    /// (session, next node) for each node; free nodes are chained through `free`.
    nodes: Vec<(usize, usize)>,
    /// The first free node (`NIL`: none).
    free: usize,
}

impl Default for Waiters {
    fn default() -> Self {
        Waiters {
            chains: FxHashMap::default(),
            nodes: Vec::new(),
            free: NIL,
        }
    }
}

impl Waiters {
    /// Session `s` waits for `page`.
    pub fn push(&mut self, page: u64, s: usize) {
        let node = if self.free < self.nodes.len() {
            let n = self.free;
            self.free = self.nodes[n].1;
            self.nodes[n] = (s, NIL);
            n
        } else {
            self.nodes.push((s, NIL));
            self.nodes.len() - 1
        };
        match self.chains.get_mut(&page) {
            Some((_, last)) => {
                self.nodes[*last].1 = node;
                *last = node;
            }
            None => {
                self.chains.insert(page, (node, node));
            }
        }
    }

    /// Ends the wait for `page`: calls `f` with every session that waited for it, in order.
    pub fn take(&mut self, page: u64, mut f: impl FnMut(usize)) {
        let Some((mut n, _)) = self.chains.remove(&page) else {
            return;
        };
        while n != NIL {
            let (s, next) = self.nodes[n];
            self.nodes[n].1 = self.free;
            self.free = n;
            f(s);
            n = next;
        }
    }

    /// Pages waited for.
    #[cfg(test)]
    pub fn pages(&self) -> usize {
        self.chains.len()
    }
}

#[cfg(test)]
mod tests {
    use super::Waiters;

    #[test]
    fn waiters_come_back_in_order_and_nodes_are_reused() {
        let mut w = Waiters::default();
        w.push(7, 1);
        w.push(9, 2);
        w.push(7, 3);
        w.push(7, 0);
        let mut got = Vec::new();
        w.take(7, |s| got.push(s));
        assert_eq!(got, [1, 3, 0]);
        assert_eq!(w.pages(), 1);
        w.take(7, |_| panic!("page 7 has no waiter left"));
        // The three freed nodes serve the next waits: the pool does not grow.
        for s in 10..13 {
            w.push(8, s);
        }
        assert_eq!(w.nodes.len(), 4);
        got.clear();
        w.take(8, |s| got.push(s));
        w.take(9, |s| got.push(s));
        assert_eq!(got, [10, 11, 12, 2]);
        assert_eq!(w.pages(), 0);
    }
}
