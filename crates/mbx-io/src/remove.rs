//! Removing files off the caller's thread. Unlinking a large file on ext4 or XFS frees its extents
//! and can take milliseconds; an event loop that retires log files must not stall for that. A
//! [`Remover`] hands each removal to one background thread (started on first use), remembers the
//! paths still pending (so a file re-created at the same path is not deleted by a late unlink) and
//! keeps failures until someone asks, so none is lost.

use std::collections::VecDeque;
use std::path::{Path, PathBuf};
use std::sync::mpsc::{channel, Sender};
use std::sync::{Arc, Condvar, Mutex, MutexGuard, PoisonError};
use std::thread::JoinHandle;

use crate::IoError;

#[derive(Default)]
struct State {
    /// Paths handed over and not yet removed (a path may appear more than once).
    pending: Vec<PathBuf>,
    /// Failures not yet reported, oldest first.
    failures: VecDeque<IoError>,
}

#[derive(Default)]
struct Shared {
    state: Mutex<State>,
    changed: Condvar,
}

impl Shared {
    fn lock(&self) -> MutexGuard<'_, State> {
        // The critical sections cannot panic; recover the data rather than fail if one ever did.
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Removes `path` now; a missing file is not an error, any other failure is kept.
    fn remove_now(&self, path: &Path) {
        let result = std::fs::remove_file(path);
        let mut s = self.lock();
        if let Err(e) = result {
            if e.kind() != std::io::ErrorKind::NotFound {
                s.failures.push_back(IoError::new("remove", path, e));
            }
        }
        if let Some(i) = s.pending.iter().position(|p| p == path) {
            s.pending.swap_remove(i);
        }
        drop(s);
        self.changed.notify_all();
    }
}

struct Worker {
    jobs: Sender<PathBuf>,
    thread: JoinHandle<()>,
}

/// Removes files on a background thread; see the module documentation.
#[derive(Default)]
pub(crate) struct Remover {
    shared: Arc<Shared>,
    worker: Mutex<Option<Worker>>,
}

impl std::fmt::Debug for Remover {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let s = self.shared.lock();
        f.debug_struct("Remover")
            .field("pending", &s.pending.len())
            .field("failures", &s.failures.len())
            .finish()
    }
}

impl Remover {
    /// Hands `path` to the background thread and returns at once. The error, if any, is an
    /// earlier removal's failure (it names that path); `path` is handed over in either case. If
    /// no thread can be started, the removal happens here.
    pub(crate) fn remove(&self, path: &Path) -> Result<(), IoError> {
        let earlier = self.take_failure();
        self.shared.lock().pending.push(path.to_path_buf());
        let handed = {
            let mut worker = self.worker.lock().unwrap_or_else(PoisonError::into_inner);
            if worker.is_none() {
                *worker = self.spawn();
            }
            worker
                .as_ref()
                .is_some_and(|w| w.jobs.send(path.to_path_buf()).is_ok())
        };
        if !handed {
            self.shared.remove_now(path);
        }
        match earlier {
            Some(e) => Err(e),
            None if handed => Ok(()),
            None => self.take_failure().map_or(Ok(()), Err),
        }
    }

    /// Waits until every removal handed over so far is done; returns the oldest failure not yet
    /// reported (one per call).
    pub(crate) fn wait_all(&self) -> Result<(), IoError> {
        let mut s = self.shared.lock();
        while !s.pending.is_empty() {
            s = self
                .shared
                .changed
                .wait(s)
                .unwrap_or_else(PoisonError::into_inner);
        }
        s.failures.pop_front().map_or(Ok(()), Err)
    }

    /// Waits until no removal of `path` is pending (before a file is created there again).
    pub(crate) fn wait_for(&self, path: &Path) {
        let mut s = self.shared.lock();
        while s.pending.iter().any(|p| p == path) {
            s = self
                .shared
                .changed
                .wait(s)
                .unwrap_or_else(PoisonError::into_inner);
        }
    }

    fn take_failure(&self) -> Option<IoError> {
        self.shared.lock().failures.pop_front()
    }

    fn spawn(&self) -> Option<Worker> {
        let (jobs, rx) = channel::<PathBuf>();
        let shared = Arc::clone(&self.shared);
        let thread = std::thread::Builder::new()
            .name("mbx-io-remove".into())
            .spawn(move || {
                for path in rx {
                    shared.remove_now(&path);
                }
            })
            .ok()?;
        Some(Worker { jobs, thread })
    }
}

impl Drop for Remover {
    /// Finishes the removals handed over (the thread drains its channel, then exits). A failure
    /// nobody asked for is dropped here: callers that must know call `wait_all` first.
    fn drop(&mut self) {
        let worker = self
            .worker
            .get_mut()
            .unwrap_or_else(PoisonError::into_inner)
            .take();
        if let Some(Worker { jobs, thread }) = worker {
            drop(jobs);
            let _ = thread.join();
        }
    }
}
