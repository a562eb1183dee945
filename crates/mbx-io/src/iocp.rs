//! The Windows backend: overlapped reads and writes on an I/O completion port, completions reaped
//! in batches with `GetQueuedCompletionStatusEx` (one system call for up to [`BATCH`] of them).
//!
//! The files of the table are ordinary synchronous handles (std, the thread pool and the
//! synchronous helpers use them). This queue reopens each file it addresses once with
//! `ReOpenFile` adding FILE_FLAG_OVERLAPPED (same access, same NO_BUFFERING / WRITE_THROUGH
//! flags) and associates that handle with its port, so synchronous I/O elsewhere never posts
//! stray packets to the port. Syncs (`FlushFileBuffers`) and allocations have no overlapped form:
//! one helper thread performs them and posts a packet, so they complete through the same port.

#![allow(unsafe_code)] // Win32 overlapped I/O: the kernel keeps buffer and OVERLAPPED addresses.

use std::cell::UnsafeCell;
use std::os::windows::io::{AsRawHandle, FromRawHandle, OwnedHandle};
use std::sync::mpsc;
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use windows_sys::Win32::Foundation::{
    GetLastError, ERROR_HANDLE_EOF, ERROR_IO_PENDING, GENERIC_READ, GENERIC_WRITE, HANDLE,
    INVALID_HANDLE_VALUE, WAIT_TIMEOUT,
};
use windows_sys::Win32::Storage::FileSystem::{
    ReOpenFile, ReadFile, WriteFile, FILE_FLAG_OVERLAPPED, FILE_SHARE_DELETE, FILE_SHARE_READ,
    FILE_SHARE_WRITE,
};
use windows_sys::Win32::System::IO::{
    CancelIoEx, CreateIoCompletionPort, GetOverlappedResult, GetQueuedCompletionStatusEx,
    PostQueuedCompletionStatus, OVERLAPPED, OVERLAPPED_ENTRY,
};

use crate::queue::{FileTable, IoCompletion, IoOp, IoQueue, IoRequest, QueueBase, Reap};
use crate::slots::Slots;
use crate::{IoError, IoFile};

/// Completions taken from the port per system call, at most.
pub(crate) const BATCH: usize = 64;
/// Completion key of the overlapped file handles.
const KEY_FILE: usize = 0;
/// Completion key of the packets the control thread posts (no OVERLAPPED).
const KEY_CONTROL: usize = 1;

/// An overlapped handle of one table file, with the file it was reopened from (to notice a table
/// index given to another file).
struct Reopened {
    file: Arc<IoFile>,
    handle: Arc<OwnedHandle>,
}

struct Slot {
    req: IoRequest,
    start: Instant,
    /// Keeps the overlapped handle open until the kernel is done (reads and writes).
    handle: Option<Arc<OwnedHandle>>,
    /// Keeps the table's file open until the request completes.
    _file: Arc<IoFile>,
}

/// A sync or allocation for the control thread.
struct Job {
    idx: usize,
    op: IoOp,
    offset: u64,
    len: u64,
    file: Arc<IoFile>,
}

/// I/O completion port queue.
pub struct IocpQueue {
    port: OwnedHandle,
    base: QueueBase,
    /// One OVERLAPPED per slot, never moved while the queue lives (the kernel writes them).
    overlapped: Box<[UnsafeCell<OVERLAPPED>]>,
    slots: Slots<Slot>,
    /// Requests that finished at submission (an error the OS returned at once): no packet comes.
    ready: Vec<(usize, Result<usize, std::io::Error>)>,
    in_flight: usize,
    handles: Vec<Option<Reopened>>,
    entries: Vec<OVERLAPPED_ENTRY>,
    jobs: Option<mpsc::Sender<Job>>,
    results: mpsc::Receiver<(usize, Result<usize, std::io::Error>)>,
    control: Option<JoinHandle<()>>,
}

// SAFETY: the raw pointers inside (the OVERLAPPED array, the entries' pointers) refer to memory
// this queue owns; the queue is used from one thread at a time (`&mut self`), as `IoQueue: Send`
// requires, and nothing in it is tied to the creating thread.
unsafe impl Send for IocpQueue {}

fn last_error() -> std::io::Error {
    std::io::Error::last_os_error()
}

impl IocpQueue {
    /// A port and its control thread, with room for `depth` requests.
    pub fn new(files: FileTable, depth: usize) -> Result<Self, IoError> {
        // SAFETY: creating a new port (no file handle yet); one thread reaps it.
        let raw =
            unsafe { CreateIoCompletionPort(INVALID_HANDLE_VALUE, std::ptr::null_mut(), 0, 1) };
        if raw.is_null() {
            return Err(IoError::new(
                "create an I/O completion port for",
                "queue",
                last_error(),
            ));
        }
        // SAFETY: `raw` is a new handle nothing else owns.
        let port = unsafe { OwnedHandle::from_raw_handle(raw) };
        let (jobs, job_rx) = mpsc::channel::<Job>();
        let (result_tx, results) = mpsc::channel();
        // The port as an integer: the thread only posts to it, and the queue joins the thread
        // before closing the port (Drop).
        let port_addr = raw as usize;
        let control = std::thread::Builder::new()
            .name("mbx-iocp-control".into())
            .spawn(move || {
                for job in job_rx {
                    let result = match job.op {
                        IoOp::Sync => job.file.file().sync_data().map(|_| 0),
                        _ => crate::platform::allocate(job.file.file(), job.offset, job.len)
                            .map(|_| 0),
                    };
                    if result_tx.send((job.idx, result)).is_err() {
                        return;
                    }
                    // SAFETY: the port outlives this thread (joined before it is closed).
                    unsafe {
                        PostQueuedCompletionStatus(
                            port_addr as HANDLE,
                            0,
                            KEY_CONTROL,
                            std::ptr::null(),
                        )
                    };
                }
            })
            .map_err(|e| IoError::new("start the I/O control thread for", "queue", e))?;
        Ok(IocpQueue {
            port,
            base: QueueBase {
                files,
                depth,
                engine: "iocp",
            },
            // SAFETY: OVERLAPPED is plain data; all zeroes is its initial state.
            overlapped: (0..depth)
                .map(|_| UnsafeCell::new(unsafe { std::mem::zeroed() }))
                .collect(),
            slots: Slots::new(depth),
            ready: Vec::new(),
            in_flight: 0,
            handles: Vec::new(),
            // SAFETY: plain data, filled by the kernel before it is read.
            entries: (0..BATCH).map(|_| unsafe { std::mem::zeroed() }).collect(),
            jobs: Some(jobs),
            results,
            control: Some(control),
        })
    }

    /// The overlapped handle of table file `index` (reopened and associated on first use).
    fn handle_for(
        &mut self,
        index: usize,
        file: &Arc<IoFile>,
    ) -> Result<Arc<OwnedHandle>, IoError> {
        if let Some(Some(r)) = self.handles.get(index) {
            if Arc::ptr_eq(&r.file, file) {
                return Ok(Arc::clone(&r.handle));
            }
        }
        let mode = file.mode();
        let mut access = GENERIC_READ;
        if mode.write {
            access |= GENERIC_WRITE;
        }
        let flags = crate::file::windows_open_flags(mode) | FILE_FLAG_OVERLAPPED;
        // SAFETY: the table's handle is open (we hold its file); the result is checked.
        let raw = unsafe {
            ReOpenFile(
                file.file().as_raw_handle() as HANDLE,
                access,
                FILE_SHARE_READ | FILE_SHARE_WRITE | FILE_SHARE_DELETE,
                flags,
            )
        };
        if raw == INVALID_HANDLE_VALUE || raw.is_null() {
            return Err(IoError::new(
                "reopen for overlapped I/O",
                file.path(),
                last_error(),
            ));
        }
        // SAFETY: a new handle nothing else owns.
        let handle = Arc::new(unsafe { OwnedHandle::from_raw_handle(raw) });
        // SAFETY: both handles are open; associating a file handle with an existing port.
        let assoc = unsafe {
            CreateIoCompletionPort(raw, self.port.as_raw_handle() as HANDLE, KEY_FILE, 0)
        };
        if assoc.is_null() {
            return Err(IoError::new(
                "attach to the I/O completion port",
                file.path(),
                last_error(),
            ));
        }
        if self.handles.len() <= index {
            self.handles.resize_with(index + 1, || None);
        }
        self.handles[index] = Some(Reopened {
            file: Arc::clone(file),
            handle: Arc::clone(&handle),
        });
        Ok(handle)
    }

    /// The slot of an OVERLAPPED address the port returned: its position in the array.
    fn slot_of(&self, p: *const OVERLAPPED) -> Option<usize> {
        let base = self.overlapped.as_ptr() as usize;
        let size = std::mem::size_of::<UnsafeCell<OVERLAPPED>>();
        let off = (p as usize).checked_sub(base)?;
        (off % size == 0 && off / size < self.base.depth).then_some(off / size)
    }

    fn finish(
        &mut self,
        idx: usize,
        result: Result<usize, std::io::Error>,
        now: Instant,
        out: &mut Vec<IoCompletion>,
    ) -> bool {
        let Some(slot) = self.slots.complete(idx) else {
            return false;
        };
        self.in_flight -= 1;
        // A read at or past the end of the file is a short read, as on the other backends.
        let result = match result {
            Err(e)
                if slot.req.op == IoOp::Read
                    && e.raw_os_error() == Some(ERROR_HANDLE_EOF as i32) =>
            {
                Ok(0)
            }
            r => r,
        };
        out.push(IoCompletion {
            latency: now.saturating_duration_since(slot.start),
            req: slot.req,
            result,
        });
        true
    }

    /// One call to the port: waits up to `wait_ms` for at least one packet, takes up to
    /// [`BATCH`]; returns the completions delivered and the packets taken (a full batch means
    /// more may be waiting).
    fn take(
        &mut self,
        wait_ms: u32,
        out: &mut Vec<IoCompletion>,
    ) -> Result<(usize, usize), IoError> {
        let mut n = 0u32;
        // SAFETY: `entries` holds BATCH entries the call fills; the port is open.
        let ok = unsafe {
            GetQueuedCompletionStatusEx(
                self.port.as_raw_handle() as HANDLE,
                self.entries.as_mut_ptr(),
                BATCH as u32,
                &mut n,
                wait_ms,
                0,
            )
        };
        if ok == 0 {
            // SAFETY: no preconditions.
            let err = unsafe { GetLastError() };
            if err == WAIT_TIMEOUT {
                return Ok((0, 0));
            }
            return Err(IoError::new(
                "wait on the I/O completion port of",
                "queue",
                std::io::Error::from_raw_os_error(err as i32),
            ));
        }
        let now = Instant::now();
        let mut got = 0;
        let taken = (n as usize).min(BATCH);
        for k in 0..taken {
            let e = self.entries[k];
            if e.lpCompletionKey == KEY_CONTROL {
                if let Ok((idx, result)) = self.results.try_recv() {
                    got += usize::from(self.finish(idx, result, now, out));
                }
                continue;
            }
            let Some(idx) = self.slot_of(e.lpOverlapped) else {
                continue;
            };
            let result = match self.slots.get(idx).and_then(|s| s.handle.as_ref()) {
                Some(h) => {
                    let mut bytes = 0u32;
                    // SAFETY: the request has completed (its packet is here), so the OVERLAPPED
                    // is no longer written by the kernel; the handle is open (the slot holds it).
                    let ok = unsafe {
                        GetOverlappedResult(
                            h.as_raw_handle() as HANDLE,
                            self.overlapped[idx].get(),
                            &mut bytes,
                            0,
                        )
                    };
                    if ok != 0 {
                        Ok(bytes as usize)
                    } else {
                        Err(last_error())
                    }
                }
                None => Ok(e.dwNumberOfBytesTransferred as usize),
            };
            got += usize::from(self.finish(idx, result, now, out));
        }
        Ok((got, taken))
    }

    fn collect(
        &mut self,
        min: usize,
        timeout: Option<Duration>,
        out: &mut Vec<IoCompletion>,
    ) -> Result<(), IoError> {
        let target = min.min(self.in_flight);
        let now = Instant::now();
        let mut got = 0;
        for (idx, result) in std::mem::take(&mut self.ready) {
            got += usize::from(self.finish(idx, result, now, out));
        }
        let deadline = timeout.map(|t| now + t);
        while self.in_flight > 0 {
            let wait_ms = if got >= target {
                0
            } else {
                match deadline {
                    None => u32::MAX, // INFINITE
                    Some(d) => {
                        let left = d.saturating_duration_since(Instant::now());
                        // Round up: a wait shorter than the timer tick would spin.
                        u32::try_from(left.as_nanos().div_ceil(1_000_000)).unwrap_or(u32::MAX - 1)
                    }
                }
            };
            let (n, taken) = self.take(wait_ms, out)?;
            got += n;
            if taken < BATCH && (got >= target || wait_ms == 0) {
                break;
            }
            if taken == 0 && deadline.is_some_and(|d| Instant::now() >= d) {
                break;
            }
        }
        Ok(())
    }
}

impl IoQueue for IocpQueue {
    fn submit(&mut self, req: IoRequest) -> Result<(), IoError> {
        let Some(idx) = self.slots.reserve() else {
            return Err(IoError::Unsupported(format!(
                "queue full: {} requests in flight (depth {})",
                self.in_flight, self.base.depth
            )));
        };
        let file = match self.base.files.file(req.file) {
            Ok(f) => f,
            Err(e) => {
                self.slots.release(idx);
                return Err(e);
            }
        };
        if req.op.is_control() {
            let job = Job {
                idx,
                op: req.op,
                offset: req.offset,
                len: req.len as u64,
                file: Arc::clone(&file),
            };
            self.slots.fill(
                idx,
                Slot {
                    req,
                    start: Instant::now(),
                    handle: None,
                    _file: file,
                },
            );
            let sent = self.jobs.as_ref().is_some_and(|j| j.send(job).is_ok());
            if !sent {
                self.slots.release(idx);
                return Err(IoError::Unsupported(
                    "the I/O control thread has stopped".into(),
                ));
            }
            self.in_flight += 1;
            return Ok(());
        }
        let handle = match self.handle_for(req.file, &file) {
            Ok(h) => h,
            Err(e) => {
                self.slots.release(idx);
                return Err(e);
            }
        };
        let Ok(len) = u32::try_from(req.len.min(req.buf.len())) else {
            self.slots.release(idx);
            return Err(IoError::Unsupported(format!(
                "a single {} of {} bytes is over 4 GiB",
                req.op.noun(),
                req.len
            )));
        };
        let ov = self.overlapped[idx].get();
        // SAFETY: slot `idx` is free, so the kernel holds no request on this OVERLAPPED.
        unsafe {
            ov.write(std::mem::zeroed());
            (*ov).Anonymous.Anonymous.Offset = req.offset as u32;
            (*ov).Anonymous.Anonymous.OffsetHigh = (req.offset >> 32) as u32;
        }
        let op = req.op;
        let raw = handle.as_raw_handle() as HANDLE;
        let slot = self.slots.fill(
            idx,
            Slot {
                req,
                start: Instant::now(),
                handle: Some(handle),
                _file: file,
            },
        );
        // SAFETY: the buffer's heap allocation is owned by the slot until the completion is
        // reaped (moving the request does not move it), the OVERLAPPED lives in the queue's
        // fixed array, and the handle is held by the slot: all stay valid until the packet.
        let ok = unsafe {
            match op {
                IoOp::Read => ReadFile(
                    raw,
                    slot.req.buf.as_mut_ptr(),
                    len,
                    std::ptr::null_mut(),
                    ov,
                ),
                _ => WriteFile(raw, slot.req.buf.as_ptr(), len, std::ptr::null_mut(), ov),
            }
        };
        self.in_flight += 1;
        if ok == 0 {
            let err = last_error();
            if err.raw_os_error() != Some(ERROR_IO_PENDING as i32) {
                // Failed at once: no packet will come.
                self.ready.push((idx, Err(err)));
            }
        }
        Ok(())
    }

    fn reap_for(&mut self, want: Reap, out: &mut Vec<IoCompletion>) -> Result<(), IoError> {
        self.collect(want.min, want.timeout, out)
    }

    fn in_flight(&self) -> usize {
        self.in_flight
    }

    fn base(&self) -> &QueueBase {
        &self.base
    }

    fn close_file(&mut self, index: usize) {
        // Our overlapped handle too (requests in flight hold their own reference).
        if let Some(h) = self.handles.get_mut(index) {
            *h = None;
        }
        self.files().remove(index);
    }
}

impl Drop for IocpQueue {
    fn drop(&mut self) {
        // Never free buffers or OVERLAPPEDs the kernel may still write: cancel what is in flight
        // and wait for every packet.
        for (idx, slot) in self.slots.held() {
            if let Some(h) = slot.handle.as_ref() {
                // SAFETY: the handle is open; cancelling a finished request is harmless.
                unsafe { CancelIoEx(h.as_raw_handle() as HANDLE, self.overlapped[idx].get()) };
            }
        }
        let mut sink = Vec::new();
        while self.in_flight > 0 {
            if self
                .collect(self.in_flight, Some(Duration::from_secs(30)), &mut sink)
                .is_err()
                || sink.is_empty()
            {
                // The port is broken or the device hangs: leak rather than risk a use after free.
                self.slots.leak();
                std::mem::forget(std::mem::replace(&mut self.overlapped, Box::new([])));
                break;
            }
            sink.clear();
        }
        // Stop the control thread before the port closes (it posts to it).
        self.jobs = None;
        if let Some(t) = self.control.take() {
            let _ = t.join();
        }
    }
}
