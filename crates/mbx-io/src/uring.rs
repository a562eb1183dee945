//! The io_uring backend (Linux): one thread keeps up to `depth` requests in flight with one
//! system call per batch.

#![allow(unsafe_code)] // pushing SQEs is unsafe: the kernel keeps the buffer address (see below)

use std::os::unix::io::AsRawFd;
use std::sync::Arc;
use std::time::Instant;

use io_uring::{opcode, types, IoUring};

use crate::buf::RegionHandle;
use crate::queue::{FileTable, IoCompletion, IoOp, IoQueue, IoRequest, QueueBase, Reap};
use crate::slots::Slots;
use crate::{AlignedBuf, IoError, IoFile};

/// Most buffer regions registered with a ring as fixed buffers (2 MiB each: 64 MiB at most
/// pinned and held, several times the regions a test's buffers use at once). When the table is
/// full, a region only the table still holds (the pool gave it back) makes room.
const FIXED_REGIONS: usize = 32;

/// The buffer regions registered with the ring as fixed buffers (fio's `fixedbufs`): a read or
/// write into a registered region skips pinning and unpinning its pages in the kernel on every
/// I/O (`IORING_OP_READ_FIXED` / `WRITE_FIXED`). Whole 2 MiB regions are registered, the first
/// time a buffer of each is submitted, so every slot of a region is fixed at once and the pool's
/// buffers are all fixed after warm-up. Each registered region is held (it stays mapped at its
/// address while the ring may use it), so an address found here is always that region.
struct FixedBufs {
    /// Registered regions sorted by base address: (base, index in the ring's buffer table).
    by_base: Vec<(usize, u16)>,
    /// The regions held, by table index.
    held: Vec<RegionHandle>,
    /// False where the kernel refused the table or a registration (no sparse tables before
    /// Linux 5.13, or the locked-memory limit of a user without CAP_IPC_LOCK): buffers not yet
    /// registered then go the plain way, as before.
    enabled: bool,
}

impl FixedBufs {
    /// The table index of `buf`'s region, registering the region if it is new.
    #[inline]
    fn index(&mut self, ring: &IoUring, buf: &AlignedBuf) -> Option<u16> {
        let base = buf.region_base()?;
        match self.by_base.binary_search_by_key(&base, |e| e.0) {
            Ok(i) => Some(self.by_base[i].1),
            Err(mut at) => {
                if !self.enabled {
                    return None;
                }
                let slot = if self.held.len() < FIXED_REGIONS {
                    self.held.len()
                } else {
                    // A region no buffer uses any more: its entry is replaced (the kernel
                    // lets go of it once no request uses it, and none does: no buffer lives).
                    let old = self.held.iter().position(RegionHandle::unused)?;
                    let old_base = self.held[old].base() as usize;
                    if let Ok(i) = self.by_base.binary_search_by_key(&old_base, |e| e.0) {
                        self.by_base.remove(i);
                        if i < at {
                            at -= 1;
                        }
                    }
                    old
                };
                let region = buf.region()?;
                let index = u16::try_from(slot).ok()?;
                let iov = libc::iovec {
                    iov_base: region.base().cast(),
                    iov_len: region.size(),
                };
                // SAFETY: the region stays mapped while `held` keeps it, and `held` is dropped
                // after the ring (field order of `UringQueue`), which unregisters the table.
                let done = unsafe {
                    ring.submitter()
                        .register_buffers_update(u32::from(index), &[iov], None)
                };
                if done.is_err() {
                    self.enabled = false;
                    return None;
                }
                if slot < self.held.len() {
                    self.held[slot] = region;
                } else {
                    self.held.push(region);
                }
                self.by_base.insert(at, (base, index));
                Some(index)
            }
        }
    }
}

struct Slot {
    req: IoRequest,
    start: Instant,
    /// Keeps the file (and so its descriptor) open until the kernel is done with the request.
    _file: Arc<IoFile>,
}

/// io_uring queue. In-flight requests live in `slots`, indexed by the SQE's user_data.
pub struct UringQueue {
    /// First field: dropped (and its fixed buffers unregistered) before `fixed` lets go of
    /// the regions.
    ring: IoUring,
    base: QueueBase,
    slots: Slots<Slot>,
    in_flight: usize,
    unsubmitted: usize,
    /// The last read or write queued since the last submission: (file, end offset, is a write).
    tail: Option<(usize, u64, bool)>,
    fixed: FixedBufs,
}

impl UringQueue {
    /// Sets up a ring with room for `depth` requests.
    pub fn new(files: FileTable, depth: usize) -> Result<Self, IoError> {
        let entries = depth.next_power_of_two().max(8) as u32;
        // A single issuer with deferred task running (kernel 6.1) processes completions only when
        // this thread waits for them, which is exactly how the queue is used; cooperative task
        // running (5.19) is the next best. Older kernels refuse the flags: fall back.
        let ring = IoUring::builder()
            .setup_single_issuer()
            .setup_defer_taskrun()
            .build(entries)
            .or_else(|_| {
                IoUring::builder()
                    .setup_coop_taskrun()
                    .setup_single_issuer()
                    .build(entries)
            })
            .or_else(|_| IoUring::new(entries))
            .map_err(|e| {
                IoError::Unsupported(format!(
                "cannot set up io_uring ({e}); the kernel may have it disabled: use --engine sync"
            ))
            })?;
        let fixed = FixedBufs {
            by_base: Vec::new(),
            held: Vec::new(),
            enabled: ring
                .submitter()
                .register_buffers_sparse(FIXED_REGIONS as u32)
                .is_ok(),
        };
        Ok(UringQueue {
            fixed,
            ring,
            base: QueueBase {
                files,
                depth,
                engine: "io_uring",
            },
            slots: Slots::new(depth),
            in_flight: 0,
            unsubmitted: 0,
            tail: None,
        })
    }

    /// [`IoQueue::reap_for`] with no timeout.
    fn reap_blocking(&mut self, min: usize, out: &mut Vec<IoCompletion>) -> Result<(), IoError> {
        let target = min.min(self.in_flight);
        if target == 0 && self.in_flight > 0 {
            self.poll()?;
            self.drain(out);
            return Ok(());
        }
        let mut got = self.drain(out);
        if self.unsubmitted > 0 || got < target {
            loop {
                let want = target.saturating_sub(got);
                self.enter(want)?;
                got += self.drain(out);
                if got >= target {
                    break;
                }
            }
        }
        Ok(())
    }

    fn drain(&mut self, out: &mut Vec<IoCompletion>) -> usize {
        let now = Instant::now();
        let mut n = 0;
        // Split borrows: the completion queue borrows the ring while we update the slots.
        let UringQueue {
            ring,
            slots,
            in_flight,
            ..
        } = self;
        for cqe in ring.completion() {
            let idx = cqe.user_data() as usize;
            let res = cqe.result();
            let Some(slot) = slots.complete(idx) else {
                continue;
            };
            // Each completion ends one request in flight (its slot was taken just above).
            assert!(
                *in_flight > 0,
                "io_uring: a completion with nothing in flight"
            );
            *in_flight -= 1;
            let result = if res < 0 {
                Err(std::io::Error::from_raw_os_error(-res))
            } else {
                Ok(res as usize)
            };
            out.push(IoCompletion {
                latency: now.saturating_duration_since(slot.start),
                req: slot.req,
                result,
            });
            n += 1;
        }
        n
    }

    /// Enters the kernel to collect completions without blocking. Needed with DEFER_TASKRUN:
    /// completions are only posted while the issuer is inside io_uring_enter asking for events,
    /// so draining the completion queue alone would never see them (and a poll loop would spin).
    fn poll(&mut self) -> Result<(), IoError> {
        let ts = types::Timespec::new();
        let args = types::SubmitArgs::new().timespec(&ts);
        match self.ring.submitter().submit_with_args(1, &args) {
            Ok(_) => {
                self.unsubmitted = 0;
                Ok(())
            }
            Err(e)
                if e.raw_os_error() == Some(libc::ETIME)
                    || e.raw_os_error() == Some(libc::EBUSY)
                    || e.kind() == std::io::ErrorKind::Interrupted =>
            {
                self.unsubmitted = 0;
                Ok(())
            }
            Err(e) => Err(IoError::new("submit to io_uring for", "queue", e)),
        }
    }

    fn enter(&mut self, want: usize) -> Result<(), IoError> {
        loop {
            match self.ring.submit_and_wait(want) {
                Ok(_) => {
                    self.unsubmitted = 0;
                    return Ok(());
                }
                Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
                Err(e) if e.raw_os_error() == Some(libc::EBUSY) => {
                    // Completion queue full: the caller drains and retries.
                    return Ok(());
                }
                Err(e) => return Err(IoError::new("submit to io_uring for", "queue", e)),
            }
        }
    }
}

impl IoQueue for UringQueue {
    fn submit(&mut self, mut req: IoRequest) -> Result<(), IoError> {
        let Some(idx) = self.slots.reserve() else {
            return Err(IoError::Unsupported(format!(
                "queue full: {} requests in flight (depth {})",
                self.in_flight, self.base.depth
            )));
        };
        let Some(file) = self.base.files.get(req.file) else {
            self.slots.release(idx);
            return Err(IoError::Unsupported(format!(
                "no file with index {}",
                req.file
            )));
        };
        let fd = types::Fd(file.file().as_raw_fd());
        let file_guard = Arc::clone(&file);
        let len = req.len.min(req.buf.len()) as u32;
        let rw = match req.op {
            IoOp::Read => Some(false),
            IoOp::Write => Some(true),
            IoOp::Sync | IoOp::Allocate => None,
        };
        // A read or write that continues the previous one queued in this batch is submitted in
        // a batch of its own. Several requests submitted at once are plugged and the block
        // layer merges contiguous ones: sequential 256 KiB reads reached a virtio disk as 1 MiB
        // requests, a quarter as many in flight, at 0.6x fio's MB/s (fio submits one at a
        // time). What the device sees must be what the workload issues.
        if self.unsubmitted > 0
            && rw.is_some()
            && self.tail == rw.map(|w| (req.file, req.offset, w))
        {
            self.enter(0)?;
        }
        self.tail = rw.map(|w| (req.file, req.offset.saturating_add(u64::from(len)), w));
        let fixed = match rw {
            Some(_) if len > 0 => self.fixed.index(&self.ring, &req.buf),
            _ => None,
        };
        let entry = sqe(&mut req, fd, len, fixed).user_data(idx as u64);
        // The buffer's heap allocation is owned by the slot until the completion is reaped, and
        // moving the request into the slot does not move that allocation.
        self.slots.fill(
            idx,
            Slot {
                req,
                start: Instant::now(),
                _file: file_guard,
            },
        );
        // SAFETY: the entry points at a buffer and fd that stay valid until its completion is
        // reaped (the slot owns the buffer, the file table owns the fd and outlives the ring).
        let pushed = unsafe { self.ring.submission().push(&entry).is_ok() };
        if !pushed {
            self.enter(0)?;
            // SAFETY: as above.
            let again = unsafe { self.ring.submission().push(&entry).is_ok() };
            if !again {
                self.slots.release(idx);
                return Err(IoError::Unsupported(
                    "io_uring submission queue full".into(),
                ));
            }
        }
        self.in_flight += 1;
        self.unsubmitted += 1;
        // Slot accounting: every slot is free or holds a request in flight.
        assert_eq!(
            self.slots.free_len() + self.in_flight,
            self.base.depth,
            "io_uring: {} free slots and {} in flight, depth {}",
            self.slots.free_len(),
            self.in_flight,
            self.base.depth
        );
        Ok(())
    }

    fn reap_for(&mut self, want: Reap, out: &mut Vec<IoCompletion>) -> Result<(), IoError> {
        let Some(timeout) = want.timeout else {
            return self.reap_blocking(want.min, out);
        };
        let target = want.min.min(self.in_flight);
        let deadline = Instant::now() + timeout;
        let mut got = self.drain(out);
        if (self.unsubmitted > 0 || self.in_flight > 0) && (got >= target || timeout.is_zero()) {
            self.poll()?;
            got += self.drain(out);
        }
        while got < target {
            let left = deadline.saturating_duration_since(Instant::now());
            if left.is_zero() {
                break;
            }
            let ts = types::Timespec::new()
                .sec(left.as_secs())
                .nsec(left.subsec_nanos());
            let args = types::SubmitArgs::new().timespec(&ts);
            match self.ring.submitter().submit_with_args(target - got, &args) {
                Ok(_) => self.unsubmitted = 0,
                Err(e) if e.raw_os_error() == Some(libc::ETIME) => {
                    self.unsubmitted = 0;
                    self.drain(out);
                    break;
                }
                Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
                Err(e) if e.raw_os_error() == Some(libc::EBUSY) => {}
                Err(e) => return Err(IoError::new("submit to io_uring for", "queue", e)),
            }
            got += self.drain(out);
        }
        Ok(())
    }

    fn in_flight(&self) -> usize {
        self.in_flight
    }

    fn base(&self) -> &QueueBase {
        &self.base
    }
}

#[inline]
/// The submission entry of `req` on `fd` (`len` bytes; `fixed`: its registered buffer, if any).
fn sqe(
    req: &mut IoRequest,
    fd: types::Fd,
    len: u32,
    fixed: Option<u16>,
) -> io_uring::squeue::Entry {
    match (req.op, fixed) {
        (IoOp::Read, Some(i)) => opcode::ReadFixed::new(fd, req.buf.as_mut_ptr(), len, i)
            .offset(req.offset)
            .build(),
        (IoOp::Write, Some(i)) => opcode::WriteFixed::new(fd, req.buf.as_ptr(), len, i)
            .offset(req.offset)
            .build(),
        (IoOp::Read, None) => opcode::Read::new(fd, req.buf.as_mut_ptr(), len)
            .offset(req.offset)
            .build(),
        (IoOp::Write, None) => opcode::Write::new(fd, req.buf.as_ptr(), len)
            .offset(req.offset)
            .build(),
        (IoOp::Sync, _) => opcode::Fsync::new(fd)
            .flags(types::FsyncFlags::DATASYNC)
            .build(),
        // Mode 0: reserve the blocks and extend the file if the range ends past its end.
        (IoOp::Allocate, _) => opcode::Fallocate::new(fd, req.len as u64)
            .offset(req.offset)
            .mode(0)
            .build(),
    }
}

impl Drop for UringQueue {
    fn drop(&mut self) {
        // Never free buffers the kernel may still write into: wait for everything in flight.
        let mut sink = Vec::new();
        while self.in_flight > 0 {
            if self.reap(self.in_flight, &mut sink).is_err() {
                // The ring is broken; leak the buffers rather than risk a use-after-free.
                self.slots.leak();
                break;
            }
            sink.clear();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{Files, OpenMode};

    fn pattern(len: usize, seed: u8) -> AlignedBuf {
        let mut b = AlignedBuf::zeroed(len);
        for (i, x) in b.as_mut_slice().iter_mut().enumerate() {
            *x = (i as u8).wrapping_mul(13).wrapping_add(seed);
        }
        b
    }

    /// Pool-sized buffers go through fixed reads and writes (their 2 MiB regions registered
    /// once each), a buffer with a region of its own the plain way, and every byte arrives
    /// where it was asked for either way.
    #[test]
    fn fixed_and_plain_buffers_carry_the_same_bytes() {
        let dir = tempfile::Builder::new()
            .prefix("mbx-io-fixed-")
            .tempdir()
            .expect("scratch");
        let path = dir.path().join("data");
        std::fs::write(&path, vec![0u8; 4 << 20]).expect("create");
        let mode = OpenMode::read_write_direct();
        let f = IoFile::open(&path, mode)
            .or_else(|_| {
                IoFile::open(
                    &path,
                    OpenMode {
                        direct: false,
                        ..mode
                    },
                )
            })
            .expect("open");
        let files = Files::new(vec![f]);
        let mut q = UringQueue::new(Arc::clone(&files), 16).expect("io_uring queue");
        // 8 writes of 32 KiB (fixed), one of 2 MiB (a region of its own: plain).
        let sizes: Vec<(u64, usize)> = (0..8u64)
            .map(|i| (i * 32768, 32768))
            .chain([(1 << 20, 2 << 20)])
            .collect();
        for (tag, &(offset, len)) in sizes.iter().enumerate() {
            q.submit(IoRequest {
                op: IoOp::Write,
                file: 0,
                offset,
                len,
                buf: pattern(len, tag as u8),
                tag: tag as u64,
            })
            .expect("submit write");
        }
        let mut out = Vec::new();
        q.reap(sizes.len(), &mut out).expect("reap");
        assert_eq!(out.len(), sizes.len());
        for c in &out {
            assert_eq!(c.check(&files).expect("write"), c.req.len);
        }
        if q.fixed.enabled {
            assert!(
                !q.fixed.held.is_empty(),
                "the 32 KiB buffers' region is registered"
            );
            assert!(
                q.fixed.held.len() <= 2,
                "{} regions for 8 small buffers",
                q.fixed.held.len()
            );
        }
        // Read everything back, into the very buffers the writes used (now fixed) and new ones.
        let mut back: Vec<AlignedBuf> = out.drain(..).map(|c| c.req.buf).collect();
        for (tag, &(offset, len)) in sizes.iter().enumerate() {
            let mut buf = back
                .pop()
                .filter(|b| b.len() == len)
                .unwrap_or_else(|| AlignedBuf::zeroed(len));
            buf.as_mut_slice().fill(0xEE);
            q.submit(IoRequest {
                op: IoOp::Read,
                file: 0,
                offset,
                len,
                buf,
                tag: tag as u64,
            })
            .expect("submit read");
        }
        q.reap(sizes.len(), &mut out).expect("reap");
        for c in &out {
            assert_eq!(c.check(&files).expect("read"), c.req.len);
            let want = pattern(c.req.len, c.req.tag as u8);
            assert!(c.req.buf.as_slice() == want.as_slice(), "tag {}", c.req.tag);
        }
    }

    /// More regions than the table holds, used and given back in turn: the table stays at its
    /// size, replaces regions nobody uses, and every entry names the region at its index.
    #[test]
    fn the_fixed_table_stays_bounded_and_true_when_regions_come_and_go() {
        let dir = tempfile::Builder::new()
            .prefix("mbx-io-fixed-churn-")
            .tempdir()
            .expect("scratch");
        let path = dir.path().join("data");
        std::fs::write(&path, vec![0u8; 1 << 20]).expect("create");
        let files = Files::new(vec![IoFile::open(
            &path,
            OpenMode {
                direct: false,
                ..OpenMode::read_write_direct()
            },
        )
        .expect("open")]);
        let mut q = UringQueue::new(Arc::clone(&files), 4).expect("io_uring queue");
        let mut out = Vec::new();
        for round in 0..3u8 {
            // 1 MiB buffers: two per region, so 2 x FIXED_REGIONS buffers span many regions.
            let bufs: Vec<AlignedBuf> = (0..2 * FIXED_REGIONS + 8)
                .map(|i| pattern(1 << 20, round.wrapping_add(i as u8)))
                .collect();
            for (i, buf) in bufs.into_iter().enumerate() {
                let seed = round.wrapping_add(i as u8);
                q.submit(IoRequest {
                    op: IoOp::Write,
                    file: 0,
                    offset: 0,
                    len: 1 << 20,
                    buf,
                    tag: 0,
                })
                .expect("write");
                q.reap(1, &mut out).expect("reap");
                let done = out.pop().expect("completion");
                done.check(&files).expect("write ok");
                drop(done);
                q.submit(IoRequest {
                    op: IoOp::Read,
                    file: 0,
                    offset: 0,
                    len: 1 << 20,
                    buf: AlignedBuf::zeroed(1 << 20),
                    tag: 0,
                })
                .expect("read");
                q.reap(1, &mut out).expect("reap");
                let back = out.pop().expect("completion");
                back.check(&files).expect("read ok");
                assert!(back.req.buf.as_slice() == pattern(1 << 20, seed).as_slice());
            }
            assert!(q.fixed.held.len() <= FIXED_REGIONS);
            assert!(q.fixed.by_base.len() <= q.fixed.held.len());
            for &(base, index) in &q.fixed.by_base {
                assert_eq!(q.fixed.held[usize::from(index)].base() as usize, base);
            }
        }
    }
}
