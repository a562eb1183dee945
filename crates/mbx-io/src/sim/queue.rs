//! The simulated queue: requests against a [`SimDevice`] completing in virtual time.

use std::collections::{BTreeMap, VecDeque};
use std::io;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use super::device::SimDevice;
use super::latency::{LatencyModel, SimRng};
use super::SimClock;
use crate::fault::{first_fault, flip, shortened};
use crate::queue::{Files, IoCompletion, IoOp, IoQueue, IoRequest, QueueBase, Reap};
use crate::{Clock, FaultKind, FaultRule, IoError, OpenMode};

/// The least alignment the simulation demands of O_DIRECT transfers (offset and length): 512
/// bytes, what every device accepts. Real 4Kn devices demand more.
const DIRECT_ALIGN: u64 = 512;

/// A file opened through the queue.
#[derive(Debug, Clone)]
struct Handle {
    id: u64,
    path: PathBuf,
    mode: OpenMode,
}

/// A request in flight, keyed in `SimQueue::flights` by (completion time, submission number).
struct Flight {
    req: IoRequest,
    /// Virtual time of submission.
    submitted: Duration,
    /// The file, when the request reaches the device (not for an injected error).
    file: Option<Handle>,
    /// An injected fault to finish at completion, with the request's full length.
    fault: Option<(FaultKind, usize)>,
    /// A sync's id on the device.
    sync: Option<u64>,
    /// The result decided at submission (an injected error).
    error: Option<io::Error>,
}

/// An [`IoQueue`] over a [`SimDevice`] on a [`SimClock`]: see the module documentation.
pub struct SimQueue {
    device: SimDevice,
    clock: Arc<SimClock>,
    model: LatencyModel,
    rng: SimRng,
    rules: Vec<FaultRule>,
    injected: u64,
    handles: Vec<Option<Handle>>,
    flights: BTreeMap<(Duration, u64), Flight>,
    /// Completed, not yet reaped, in completion order.
    ready: VecDeque<IoCompletion>,
    /// When each channel is next free (virtual time); empty = no channel limit.
    channels: Vec<Duration>,
    submitted: u64,
    /// Its file table is always empty: the files are in the device.
    base: QueueBase,
}

impl SimQueue {
    /// A queue of `depth` over `device`, on `clock`, with latencies from `model` drawn from a
    /// generator seeded with `seed` (the same seed and the same requests give the same
    /// completions, at the same virtual times).
    pub fn new(
        device: SimDevice,
        clock: Arc<SimClock>,
        depth: usize,
        model: LatencyModel,
        seed: u64,
    ) -> Self {
        let channels = vec![Duration::ZERO; model.channels];
        SimQueue {
            device,
            clock,
            model,
            rng: SimRng::new(seed),
            rules: Vec::new(),
            injected: 0,
            handles: Vec::new(),
            flights: BTreeMap::new(),
            ready: VecDeque::new(),
            channels,
            submitted: 0,
            base: QueueBase {
                files: Files::new(Vec::new()),
                depth: depth.max(1),
                engine: "sim",
            },
        }
    }

    /// With fault rules, applied in virtual time (see [`FaultKind`]: an injected latency delays
    /// the completion without any real waiting). As with `FaultQueue`, the first rule matching a
    /// request decides.
    pub fn with_faults(mut self, rules: Vec<FaultRule>) -> Self {
        self.rules = rules;
        self
    }

    /// Faults injected so far.
    pub fn injected(&self) -> u64 {
        self.injected
    }

    /// The device.
    pub fn device(&self) -> &SimDevice {
        &self.device
    }

    fn handle(&self, index: usize) -> Option<&Handle> {
        self.handles.get(index).and_then(Option::as_ref)
    }

    /// When a request submitted `now` with service time `service` completes: at once without a
    /// channel limit, else on the channel free first, after what it serves already.
    fn schedule(&mut self, now: Duration, service: Duration) -> Duration {
        let Some(ch) = (0..self.channels.len()).min_by_key(|&i| (self.channels[i], i)) else {
            return now.saturating_add(service);
        };
        let done = self.channels[ch].max(now).saturating_add(service);
        self.channels[ch] = done;
        done
    }

    /// Completes every request due by the clock's time, in (completion time, submission) order.
    fn settle(&mut self) {
        let now = self.clock.elapsed();
        while let Some(entry) = self.flights.first_entry() {
            if entry.key().0 > now {
                break;
            }
            let due = entry.key().0;
            // Completions are handed out in time order, none before its time.
            assert!(
                due <= now,
                "sim queue: a request completed before it was due"
            );
            let flight = entry.remove();
            let c = self.complete(flight, due);
            self.ready.push_back(c);
        }
    }

    fn complete(&mut self, f: Flight, due: Duration) -> IoCompletion {
        let Flight {
            mut req,
            submitted,
            file,
            fault,
            sync,
            error,
        } = f;
        let mut result = match (error, &file) {
            (Some(e), _) => Err(e),
            (None, Some(h)) => self.perform(h, &mut req, sync, fault.map(|(k, _)| k)),
            (None, None) => Err(io::Error::other("request without a file")),
        };
        if let Some(h) = &file {
            self.device.release(h.id);
        }
        match fault {
            Some((FaultKind::Short, full)) => req.len = full,
            Some((FaultKind::Torn, full)) => {
                req.len = full;
                if result.is_ok() {
                    result = Ok(full);
                }
            }
            _ => {}
        }
        IoCompletion {
            req,
            result,
            latency: due.saturating_sub(submitted),
        }
    }

    /// Does what a request asks of the device, as the kernel would have at completion.
    fn perform(
        &mut self,
        h: &Handle,
        req: &mut IoRequest,
        sync: Option<u64>,
        fault: Option<FaultKind>,
    ) -> io::Result<usize> {
        let len = req.len.min(req.buf.len());
        let transfer = matches!(req.op, IoOp::Read | IoOp::Write);
        if transfer
            && h.mode.direct
            && (!req.offset.is_multiple_of(DIRECT_ALIGN)
                || !(len as u64).is_multiple_of(DIRECT_ALIGN))
        {
            return Err(io::Error::new(
                io::ErrorKind::InvalidInput,
                "unaligned O_DIRECT transfer (simulated: 512-byte offset and length)",
            ));
        }
        if matches!(req.op, IoOp::Write | IoOp::Allocate) && !h.mode.write {
            return Err(io::Error::new(
                io::ErrorKind::PermissionDenied,
                "file not opened for writing",
            ));
        }
        match req.op {
            IoOp::Read => {
                let n = self
                    .device
                    .read(h.id, req.offset, &mut req.buf.as_mut_slice()[..len])?;
                if let Some(FaultKind::FlipBit { byte, bit }) = fault {
                    flip(&mut req.buf.as_mut_slice()[..n], byte, bit);
                }
                Ok(n)
            }
            IoOp::Write => {
                let data = &mut req.buf.as_mut_slice()[..len];
                // The device stores the flipped bit; the caller's buffer comes back as it was.
                let flipped = match fault {
                    Some(FaultKind::FlipBit { byte, bit }) => {
                        flip(data, byte, bit);
                        Some((byte, bit))
                    }
                    _ => None,
                };
                if fault == Some(FaultKind::Lost) {
                    // Reported done; the device keeps what it held.
                    return Ok(len);
                }
                let r = self
                    .device
                    .write(h.id, req.offset, data, h.mode.write_through);
                if let Some((byte, bit)) = flipped {
                    flip(data, byte, bit);
                }
                r
            }
            IoOp::Sync => {
                if let Some(s) = sync {
                    self.device.end_sync(h.id, s, true)?;
                }
                Ok(0)
            }
            IoOp::Allocate => self
                .device
                .allocate(h.id, req.offset, req.len as u64)
                .map(|_| 0),
        }
    }

    /// Request `number`, submitted at `now`, fails at once with `errno` without reaching the
    /// device, as FaultQueue's errors do.
    fn fail_at_once(&mut self, req: IoRequest, now: Duration, number: u64, errno: i32) {
        // Fails at once without reaching the device, as FaultQueue's errors do.
        let before = self.flights.insert(
            (now, number),
            Flight {
                req,
                submitted: now,
                file: None,
                fault: None,
                sync: None,
                error: Some(io::Error::from_raw_os_error(errno)),
            },
        );
        assert!(
            before.is_none(),
            "sim queue: request {number} submitted twice"
        );
    }

    fn take_ready(&mut self, out: &mut Vec<IoCompletion>) {
        out.extend(self.ready.drain(..));
    }
}

impl IoQueue for SimQueue {
    fn submit(&mut self, mut req: IoRequest) -> Result<(), IoError> {
        self.settle();
        if self.in_flight() >= self.base.depth {
            return Err(IoError::Unsupported(format!(
                "queue full: {} requests in flight (depth {})",
                self.in_flight(),
                self.base.depth
            )));
        }
        let Some(h) = self.handle(req.file).cloned() else {
            return Err(IoError::Unsupported(format!(
                "no file with index {}",
                req.file
            )));
        };
        let now = self.clock.elapsed();
        let number = self.submitted;
        self.submitted += 1;
        let fault = first_fault(&mut self.rules, &req, now);
        if fault.is_some() {
            self.injected += 1;
        }
        if let Some(FaultKind::Error(errno)) = fault {
            self.fail_at_once(req, now, number, errno);
            return Ok(());
        }
        let full = req.len;
        if matches!(fault, Some(FaultKind::Short | FaultKind::Torn)) {
            req.len = shortened(full);
        }
        let (sync, error) = if req.op == IoOp::Sync {
            match self.device.begin_sync(h.id) {
                Ok(s) => (Some(s), None),
                Err(e) => (None, Some(e)),
            }
        } else {
            (None, None)
        };
        let mut service = self
            .model
            .of(req.op, h.mode.write_through)
            .sample(&mut self.rng);
        if matches!(req.op, IoOp::Read | IoOp::Write) {
            service = service.saturating_add(self.model.transfer(req.len.min(req.buf.len())));
        }
        let mut due = self.schedule(now, service);
        if let Some(FaultKind::Latency(d)) = fault {
            due = due.saturating_add(d);
        }
        // Causality: nothing completes before it is submitted.
        assert!(
            due >= now,
            "sim queue: a request due before it was submitted"
        );
        self.device.acquire(h.id);
        let before = self.flights.insert(
            (due, number),
            Flight {
                req,
                submitted: now,
                file: Some(h),
                fault: fault.map(|k| (k, full)),
                sync,
                error,
            },
        );
        assert!(
            before.is_none(),
            "sim queue: request {number} submitted twice"
        );
        assert!(
            self.in_flight() <= self.base.depth,
            "sim queue: {} requests in flight, depth {}",
            self.in_flight(),
            self.base.depth
        );
        Ok(())
    }

    /// Returns the completions due now; if fewer than `want.min` (capped at the number in
    /// flight), advances the clock to the time the `min`-th completes first, but with
    /// `want.timeout` never past now + that timeout: if they are not all due by then, the clock
    /// moves to now + the timeout and what is due then is returned. With `min` 0 (or nothing in
    /// flight) the clock does not move.
    fn reap_for(&mut self, want: Reap, out: &mut Vec<IoCompletion>) -> Result<(), IoError> {
        self.settle();
        let target = want.min.min(self.in_flight());
        let deadline = want.timeout.map(|t| self.clock.elapsed().saturating_add(t));
        while self.ready.len() < target {
            let next = self.flights.first_key_value().map(|(&(due, _), _)| due);
            match (next, deadline) {
                (Some(due), None) => self.clock.advance_to_elapsed(due),
                (Some(due), Some(deadline)) if due <= deadline => {
                    self.clock.advance_to_elapsed(due)
                }
                (None, None) => break,
                (_, Some(deadline)) => {
                    self.clock.advance_to_elapsed(deadline);
                    self.settle();
                    break;
                }
            }
            self.settle();
        }
        self.take_ready(out);
        Ok(())
    }

    fn in_flight(&self) -> usize {
        self.flights.len() + self.ready.len()
    }

    fn base(&self) -> &QueueBase {
        &self.base
    }

    fn open_file(&mut self, path: &Path, mode: OpenMode) -> Result<usize, IoError> {
        let id = self
            .device
            .open(path, mode)
            .map_err(|e| IoError::new("open", path, e))?;
        let h = Some(Handle {
            id,
            path: path.to_path_buf(),
            mode,
        });
        match self.handles.iter().position(Option::is_none) {
            Some(i) => {
                self.handles[i] = h;
                Ok(i)
            }
            None => {
                self.handles.push(h);
                Ok(self.handles.len() - 1)
            }
        }
    }

    fn close_file(&mut self, index: usize) {
        if let Some(h) = self.handles.get_mut(index).and_then(Option::take) {
            self.device.release(h.id);
        }
    }

    /// Removes the file at once (the device is in memory); a missing file is not an error.
    fn remove_file(&mut self, path: &Path) -> Result<(), IoError> {
        let _ = self.device.remove(path);
        Ok(())
    }

    fn wait_removals(&mut self) -> Result<(), IoError> {
        Ok(())
    }

    fn file_len(&self, index: usize) -> Result<u64, IoError> {
        let h = self
            .handle(index)
            .ok_or_else(|| IoError::Unsupported(format!("no file with index {index}")))?;
        self.device
            .file_len(h.id)
            .map_err(|e| IoError::new("stat", &h.path, e))
    }

    fn file_path(&self, index: usize) -> PathBuf {
        self.handle(index)
            .map(|h| h.path.clone())
            .unwrap_or_default()
    }

    fn clock(&self) -> Arc<dyn Clock> {
        Arc::clone(&self.clock) as Arc<dyn Clock>
    }

    /// The simulated device runs on no machine: no host counter is known, so a simulated run's
    /// result does not depend on the computer that ran it.
    fn machine(&self) -> Arc<dyn crate::Machine> {
        Arc::new(crate::NoMachine)
    }
}

impl Drop for SimQueue {
    /// Lets go of the files this queue holds open (the device outlives it).
    fn drop(&mut self) {
        for f in std::mem::take(&mut self.flights).into_values() {
            if let Some(h) = f.file {
                if let Some(s) = f.sync {
                    let _ = self.device.end_sync(h.id, s, false);
                }
                self.device.release(h.id);
            }
        }
        for h in self.handles.drain(..).flatten() {
            self.device.release(h.id);
        }
    }
}
