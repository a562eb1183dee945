//! The portable backend: `depth` worker threads doing positional reads and writes.

use std::sync::mpsc::{channel, Receiver, RecvTimeoutError, Sender};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::Instant;

use crate::queue::{perform, FileTable, IoCompletion, IoQueue, IoRequest, QueueBase, Reap};
use crate::{IoError, IoFile};

/// A request, the file it addresses (resolved at submission, so closing the file's index while
/// the request waits does not fail it: the file closes when the request is done) and when it was
/// submitted.
type Job = (IoRequest, Arc<IoFile>, Instant);

/// Thread-pool queue.
pub struct ThreadQueue {
    base: QueueBase,
    jobs: Option<Sender<Job>>,
    done: Receiver<IoCompletion>,
    workers: Vec<JoinHandle<()>>,
    in_flight: usize,
}

impl ThreadQueue {
    /// Starts `depth` workers.
    pub fn new(files: FileTable, depth: usize) -> Self {
        let (jobs_tx, jobs_rx) = channel::<Job>();
        let jobs_rx = Arc::new(Mutex::new(jobs_rx));
        let (done_tx, done_rx) = channel();
        let workers = (0..depth)
            .map(|_| {
                let rx = Arc::clone(&jobs_rx);
                let tx = done_tx.clone();
                std::thread::spawn(move || worker(&rx, &tx))
            })
            .collect();
        ThreadQueue {
            base: QueueBase {
                files,
                depth,
                engine: "sync",
            },
            jobs: Some(jobs_tx),
            done: done_rx,
            workers,
            in_flight: 0,
        }
    }
}

fn worker(jobs: &Mutex<Receiver<Job>>, done: &Sender<IoCompletion>) {
    loop {
        let job = match jobs.lock() {
            Ok(rx) => rx.recv(),
            Err(_) => return,
        };
        let Ok((mut req, file, start)) = job else {
            return;
        };
        let result = perform(&file, &mut req);
        drop(file);
        let c = IoCompletion {
            latency: start.elapsed(),
            req,
            result,
        };
        if done.send(c).is_err() {
            return;
        }
    }
}

impl IoQueue for ThreadQueue {
    fn submit(&mut self, req: IoRequest) -> Result<(), IoError> {
        if self.in_flight >= self.base.depth {
            return Err(IoError::Unsupported(format!(
                "queue full: {} requests in flight (depth {})",
                self.in_flight, self.base.depth
            )));
        }
        let file = self.base.files.file(req.file)?;
        let tx = self
            .jobs
            .as_ref()
            .ok_or_else(|| IoError::Unsupported("queue closed".into()))?;
        tx.send((req, file, Instant::now()))
            .map_err(|_| IoError::Unsupported("I/O worker threads have stopped".into()))?;
        self.in_flight += 1;
        assert!(
            self.in_flight <= self.base.depth,
            "thread queue: {} requests in flight, depth {}",
            self.in_flight,
            self.base.depth
        );
        Ok(())
    }

    fn reap_for(&mut self, want: Reap, out: &mut Vec<IoCompletion>) -> Result<(), IoError> {
        let stopped = || IoError::Unsupported("I/O worker threads have stopped".into());
        let target = want.min.min(self.in_flight);
        let before = self.in_flight;
        let deadline = want.timeout.map(|t| Instant::now() + t);
        let mut got = 0;
        while got < target {
            let c = match deadline {
                None => self.done.recv().map_err(|_| stopped())?,
                Some(deadline) => {
                    let left = deadline.saturating_duration_since(Instant::now());
                    match self.done.recv_timeout(left) {
                        Ok(c) => c,
                        Err(RecvTimeoutError::Timeout) => break,
                        Err(RecvTimeoutError::Disconnected) => return Err(stopped()),
                    }
                }
            };
            out.push(c);
            got += 1;
            self.in_flight -= 1;
        }
        while let Ok(c) = self.done.try_recv() {
            out.push(c);
            self.in_flight -= 1;
        }
        assert!(
            self.in_flight <= before,
            "thread queue: in-flight count grew while reaping"
        );
        Ok(())
    }

    fn in_flight(&self) -> usize {
        self.in_flight
    }

    fn base(&self) -> &QueueBase {
        &self.base
    }
}

impl Drop for ThreadQueue {
    fn drop(&mut self) {
        self.jobs = None; // workers see the channel close after finishing their current job
        for w in self.workers.drain(..) {
            let _ = w.join();
        }
    }
}
