//! A queue that injects faults into another: errors (EIO), short transfers, torn writes, extra
//! latency and corruption. Rules are deterministic (the Nth matching request), so tests repeat.
//!
//! [`FaultQueue`] works in real time (an injected latency really waits). The simulated queue
//! (`sim::SimQueue`) takes the same [`FaultRule`]s and applies them in virtual time.

use std::collections::VecDeque;
use std::time::{Duration, Instant};

use crate::queue::{IoCompletion, IoOp, IoQueue, IoRequest, Reap};
use crate::IoError;

/// What to do to a matching request.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum FaultKind {
    /// Fail with this errno (e.g. `libc::EIO` = 5) without touching the device.
    Error(i32),
    /// Transfer only the first half and report the short count (an honest short write/read).
    Short,
    /// Write only the first half but report success for the whole length (a torn write).
    Torn,
    /// Complete normally, `Duration` later.
    Latency(Duration),
    /// Report a write as done without writing anything (a lost write: the device keeps what
    /// it held). Other operations complete normally.
    Lost,
    /// Flip one bit: in the data written, or in the data read back.
    FlipBit {
        /// Byte within the transfer.
        byte: usize,
        /// Bit within the byte (0..8).
        bit: u8,
    },
}

/// Which requests a rule affects: requests that match `op` and `file` and are submitted inside
/// its time window (`from`..`until`, the queue's time: virtual time since the simulated clock's
/// start for `sim::SimQueue`, time since the queue was created for [`FaultQueue`]) are counted;
/// the first `skip` pass untouched; after them every `one_in`-th (1: each one) gets the fault,
/// `count` times in all.
#[derive(Debug, Clone, PartialEq)]
pub struct FaultRule {
    /// Only this operation (None = any).
    pub op: Option<IoOp>,
    /// Only this file index (None = any).
    pub file: Option<usize>,
    /// Matching requests to let through first.
    pub skip: u64,
    /// Matching requests to affect after that (`u64::MAX` = all).
    pub count: u64,
    /// Affect one matching request in this many (the `one_in`-th, the `2 x one_in`-th, ...
    /// after `skip`): a deterministic fraction. 0 and 1 mean every one.
    pub one_in: u64,
    /// The fault.
    pub kind: FaultKind,
    /// Only requests submitted at or after this time (zero: from the start).
    pub from: Duration,
    /// Only requests submitted before this time (None: to the end).
    pub until: Option<Duration>,
    seen: u64,
}

impl FaultRule {
    /// A rule affecting every matching request.
    pub fn new(op: Option<IoOp>, kind: FaultKind) -> Self {
        FaultRule {
            op,
            file: None,
            skip: 0,
            count: u64::MAX,
            one_in: 1,
            kind,
            from: Duration::ZERO,
            until: None,
            seen: 0,
        }
    }

    /// Only requests submitted at or after `at` (queue time: see [`FaultRule`]), e.g. a stall
    /// that begins at a chosen moment of a simulated run.
    pub fn starting_at(mut self, at: Duration) -> Self {
        self.from = at;
        self
    }

    /// Only requests submitted before `at` (queue time: see [`FaultRule`]).
    pub fn ending_at(mut self, at: Duration) -> Self {
        self.until = Some(at);
        self
    }

    /// Let `n` matching requests through first.
    pub fn after(mut self, n: u64) -> Self {
        self.skip = n;
        self
    }

    /// Affect only `n` requests.
    pub fn times(mut self, n: u64) -> Self {
        self.count = n;
        self
    }

    /// Affect one matching request in `n` (every `n`-th), deterministically: `n = 100` hits 1%.
    pub fn one_in(mut self, n: u64) -> Self {
        self.one_in = n;
        self
    }

    /// Only requests to file index `f`.
    pub fn on_file(mut self, f: usize) -> Self {
        self.file = Some(f);
        self
    }

    /// Counts `req`, submitted at queue time `at`, if it matches; true if the fault applies to it.
    fn applies(&mut self, req: &IoRequest, at: Duration) -> bool {
        if self.op.is_some_and(|op| op != req.op)
            || self.file.is_some_and(|f| f != req.file)
            || at < self.from
            || self.until.is_some_and(|u| at >= u)
        {
            return false;
        }
        self.seen += 1;
        let Some(k) = self.seen.checked_sub(self.skip).filter(|&k| k > 0) else {
            return false;
        };
        let every = self.one_in.max(1);
        k % every == 0 && k / every <= self.count
    }
}

/// The fault of the first rule that applies to `req`, submitted at queue time `at` (every
/// matching rule counts it up to there).
pub(crate) fn first_fault(
    rules: &mut [FaultRule],
    req: &IoRequest,
    at: Duration,
) -> Option<FaultKind> {
    rules
        .iter_mut()
        .find_map(|r| r.applies(req, at).then_some(r.kind))
}

/// The length a short or torn transfer of `len` bytes moves: half, kept sector-aligned when it is
/// large enough for O_DIRECT.
pub(crate) fn shortened(len: usize) -> usize {
    let half = len / 2;
    let aligned = half - half % crate::ALIGN;
    if aligned > 0 {
        aligned
    } else {
        half
    }
}

/// Flips one bit of a transfer (no-op if `byte` is past its end).
pub(crate) fn flip(data: &mut [u8], byte: usize, bit: u8) {
    if let Some(b) = data.get_mut(byte) {
        *b ^= 1 << (bit % 8);
    }
}

struct Held {
    c: IoCompletion,
    due: Instant,
}

/// Wraps a queue and applies [`FaultRule`]s to what passes through.
pub struct FaultQueue {
    inner: Box<dyn IoQueue>,
    rules: Vec<FaultRule>,
    /// Completions produced here (errors) or delayed (latency), with when to release them.
    held: VecDeque<Held>,
    /// Per in-flight tag: the fault to finish at completion (flip after read, report full length).
    pending: Vec<(u64, FaultKind, usize)>,
    injected: u64,
    /// When the queue was created: the zero of the rules' time windows.
    created: Instant,
}

impl FaultQueue {
    /// Wraps `inner`.
    pub fn new(inner: Box<dyn IoQueue>, rules: Vec<FaultRule>) -> Self {
        FaultQueue {
            inner,
            rules,
            held: VecDeque::new(),
            pending: Vec::new(),
            injected: 0,
            created: Instant::now(),
        }
    }

    /// Faults injected so far.
    pub fn injected(&self) -> u64 {
        self.injected
    }

    fn finish(&mut self, mut c: IoCompletion, out: &mut Vec<IoCompletion>) {
        let Some(pos) = self.pending.iter().position(|(t, _, _)| *t == c.req.tag) else {
            out.push(c);
            return;
        };
        let (_, kind, full_len) = self.pending.swap_remove(pos);
        match kind {
            FaultKind::Torn => {
                c.req.len = full_len;
                if c.result.is_ok() {
                    c.result = Ok(full_len);
                }
            }
            FaultKind::Short => c.req.len = full_len,
            FaultKind::FlipBit { byte, bit } if c.req.op == IoOp::Read => {
                flip(c.req.buf.as_mut_slice(), byte, bit);
            }
            FaultKind::Latency(d) => {
                c.latency += d;
                let due = Instant::now() + d;
                self.held.push_back(Held { c, due });
                return;
            }
            _ => {}
        }
        out.push(c);
    }

    fn release_due(&mut self, out: &mut Vec<IoCompletion>) -> usize {
        let now = Instant::now();
        let mut n = 0;
        let mut i = 0;
        while i < self.held.len() {
            if self.held[i].due <= now {
                if let Some(h) = self.held.remove(i) {
                    out.push(h.c);
                    n += 1;
                }
            } else {
                i += 1;
            }
        }
        n
    }

    /// [`IoQueue::reap_for`] with no timeout.
    fn reap_blocking(&mut self, min: usize, out: &mut Vec<IoCompletion>) -> Result<(), IoError> {
        let target = min.min(self.in_flight());
        let mut got = self.release_due(out);
        loop {
            if got >= target {
                // Also collect whatever the device has ready, without waiting.
                let mut batch = Vec::new();
                if self.inner.in_flight() > 0 {
                    self.inner.reap(0, &mut batch)?;
                }
                for c in batch {
                    self.finish(c, out);
                }
                return Ok(());
            }
            if self.inner.in_flight() > 0 {
                let mut batch = Vec::new();
                self.inner.reap(1, &mut batch)?;
                let before = out.len();
                for c in batch {
                    self.finish(c, out);
                }
                got += out.len() - before;
            } else if let Some(first) = self.held.iter().map(|h| h.due).min() {
                std::thread::sleep(first.saturating_duration_since(Instant::now()));
            }
            got += self.release_due(out);
        }
    }
}

impl IoQueue for FaultQueue {
    fn submit(&mut self, mut req: IoRequest) -> Result<(), IoError> {
        // Held (delayed) completions are still in flight for the caller: enforce the depth as
        // the wrapped device would, or a latency fault would hide queue overflows.
        if self.in_flight() >= self.depth() {
            return Err(IoError::Unsupported(format!(
                "queue full: {} requests in flight (depth {})",
                self.in_flight(),
                self.depth()
            )));
        }
        let Some(kind) = first_fault(&mut self.rules, &req, self.created.elapsed()) else {
            return self.inner.submit(req);
        };
        self.injected += 1;
        let full_len = req.len;
        match kind {
            FaultKind::Error(errno) => {
                self.held.push_back(Held {
                    c: IoCompletion {
                        req,
                        result: Err(std::io::Error::from_raw_os_error(errno)),
                        latency: Duration::ZERO,
                    },
                    due: Instant::now(),
                });
                return Ok(());
            }
            FaultKind::Lost if req.op == IoOp::Write => {
                self.held.push_back(Held {
                    c: IoCompletion {
                        req,
                        result: Ok(full_len),
                        latency: Duration::ZERO,
                    },
                    due: Instant::now(),
                });
                return Ok(());
            }
            FaultKind::Short | FaultKind::Torn => req.len = shortened(full_len),
            FaultKind::FlipBit { byte, bit } if req.op == IoOp::Write => {
                flip(req.buf.as_mut_slice(), byte, bit);
            }
            _ => {}
        }
        self.pending.push((req.tag, kind, full_len));
        self.inner.submit(req)
    }

    fn reap_for(&mut self, want: Reap, out: &mut Vec<IoCompletion>) -> Result<(), IoError> {
        let Some(timeout) = want.timeout else {
            return self.reap_blocking(want.min, out);
        };
        let target = want.min.min(self.in_flight());
        let deadline = Instant::now() + timeout;
        let mut got = self.release_due(out);
        if target == 0 && self.inner.in_flight() > 0 {
            // A poll: still let the device make progress (send queued requests, collect what
            // is ready), or a caller that only polls would never see its I/O complete.
            let mut batch = Vec::new();
            self.inner.reap_timeout(0, Duration::ZERO, &mut batch)?;
            for c in batch {
                self.finish(c, out);
            }
        }
        while got < target {
            let now = Instant::now();
            if now >= deadline {
                break;
            }
            // Wake for whichever comes first: the deadline or the next held completion.
            let mut wait = deadline - now;
            if let Some(due) = self.held.iter().map(|h| h.due).min() {
                wait = wait.min(due.saturating_duration_since(now));
            }
            let mut batch = Vec::new();
            if self.inner.in_flight() > 0 {
                self.inner.reap_timeout(1, wait, &mut batch)?;
            } else {
                std::thread::sleep(wait);
            }
            let before = out.len();
            for c in batch {
                self.finish(c, out);
            }
            got += out.len() - before;
            got += self.release_due(out);
        }
        Ok(())
    }

    fn in_flight(&self) -> usize {
        self.inner.in_flight() + self.held.len()
    }

    crate::queue::forward_to_inner!(inner);
}

#[cfg(test)]
mod rule_tests {
    use super::*;
    use crate::AlignedBuf;

    fn req(op: IoOp) -> IoRequest {
        IoRequest {
            op,
            file: 0,
            offset: 0,
            len: 0,
            buf: AlignedBuf::zeroed(crate::ALIGN),
            tag: 0,
        }
    }

    #[test]
    fn one_in_hits_every_nth_matching_request_after_skip_up_to_count() {
        let mut r = FaultRule::new(Some(IoOp::Read), FaultKind::Error(5))
            .after(3)
            .one_in(10)
            .times(4);
        let mut hit = Vec::new();
        for i in 1..=100u64 {
            // Writes do not match and are not counted.
            assert!(!r.applies(&req(IoOp::Write), Duration::ZERO));
            if r.applies(&req(IoOp::Read), Duration::ZERO) {
                hit.push(i);
            }
        }
        assert_eq!(hit, vec![13, 23, 33, 43]);
        let mut all = FaultRule::new(None, FaultKind::Short).after(2).times(2);
        let hits: Vec<bool> = (0..5)
            .map(|_| all.applies(&req(IoOp::Read), Duration::ZERO))
            .collect();
        assert_eq!(hits, vec![false, false, true, true, false]);
    }
}
