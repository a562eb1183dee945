//! A deterministic simulated device and clock, for engine tests that run hours of virtual time
//! in well under a second and check crash consistency over many seeds (the idea of redb's crash
//! backend and TigerBeetle's storage simulator).
//!
//! - [`SimClock`]: virtual time. It stands still until the queue advances it (when a caller
//!   waits for completions) or someone calls [`Clock::sleep`](crate::Clock::sleep), which returns
//!   at once.
//! - [`SimDevice`]: an in-memory file system of sparse files (4 KiB blocks; unwritten blocks read
//!   as zeros), each with a live and a durable image, and [`SimDevice::crash`], which keeps only
//!   the durable one.
//! - [`SimQueue`]: an [`IoQueue`](crate::IoQueue) over a device. Each request completes at its
//!   submission time plus a latency drawn from a seeded distribution for its kind
//!   ([`LatencyModel`]: reads, writes, log writes, syncs, allocations), after waiting for a free
//!   channel if their number is limited. Completions come in order of completion time, then of
//!   submission, so the same seed and the same requests give the same sequence. Data is really
//!   stored: reads return what was written, and a read past the end of a file returns a short
//!   count. [`FaultRule`](crate::FaultRule)s apply as in `FaultQueue`, in virtual time.
//!
//! What is simulated: latency per kind of request, queueing on a limited number of channels and
//! an optional transfer rate; durability (a write is durable once it completes on a file opened
//! `write_through`, otherwise once a sync of the file submitted after it completes; see
//! [`SimDevice`]); the errors a real queue gives for a missing file, a write to a file opened
//! read-only and an O_DIRECT transfer not aligned to 512 bytes; short reads at the end of a file.
//!
//! What is not: the page cache (buffered files behave like direct ones, and reads never hit
//! memory), directories and their durability (creating and removing a file is immediate and
//! durable), free space (a write never fails for lack of it unless a fault rule says so),
//! write ordering inside the device beyond the rules above (a crash keeps exactly the durable
//! image: no torn blocks unless a `Torn` fault made one), and CPU time (submitting and reaping
//! take no virtual time).
//!
//! ```
//! use std::path::Path;
//! use std::sync::Arc;
//! use std::time::Duration;
//! use mbx_io::sim::{Latency, LatencyModel, SimClock, SimDevice, SimQueue};
//! use mbx_io::{AlignedBuf, IoOp, IoQueue, IoRequest, OpenMode};
//!
//! let device = SimDevice::new();
//! let clock = Arc::new(SimClock::new());
//! let model = LatencyModel::uniform(Latency::fixed(Duration::from_millis(2)));
//! let mut q = SimQueue::new(device.clone(), Arc::clone(&clock), 8, model, 1);
//! let mode = OpenMode { create: true, ..OpenMode::read_write_direct() };
//! let file = q.open_file(Path::new("/db/1.edb"), mode)?;
//! q.submit(IoRequest { op: IoOp::Write, file, offset: 0, len: 4096, buf: AlignedBuf::zeroed(4096), tag: 1 })?;
//! let mut done = Vec::new();
//! q.reap(1, &mut done)?;
//! assert_eq!(done[0].check_in(&q)?, 4096);
//! assert_eq!(clock.elapsed(), Duration::from_millis(2));
//! // Never synced: a crash loses the write (the file stays, empty).
//! assert_eq!(device.crash().len(Path::new("/db/1.edb"))?, 0);
//! # Ok::<(), mbx_io::IoError>(())
//! ```

mod clock;
mod device;
mod latency;
mod queue;
#[cfg(test)]
mod tests;

pub use clock::SimClock;
pub use device::SimDevice;
pub use latency::{Latency, LatencyModel};
pub use queue::SimQueue;
