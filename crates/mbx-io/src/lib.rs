//! The I/O engine of mbxstress.
//!
//! Every test type issues its I/O through one path: an [`IoQueue`] that accepts [`IoRequest`]s
//! (read, write, sync or allocate at an offset of a file in a [`FileTable`]) and returns
//! [`IoCompletion`]s with measured latency. Backends:
//!
//! - [`EngineKind::IoUring`] (Linux, default): one thread, up to `depth` requests in flight, one
//!   system call per batch.
//! - [`EngineKind::Sync`] (portable): `depth` threads doing positional reads and writes.
//! - [`EngineKind::Iocp`] (Windows, default): overlapped I/O on an I/O completion port, one
//!   thread, completions reaped in batches (`GetQueuedCompletionStatusEx`).
//! - [`FaultQueue`]: wraps either and injects errors, short or torn transfers, latency, bit flips.
//! - [`sim::SimQueue`]: a simulated device in virtual time ([`sim`]), for deterministic engine
//!   tests: seeded latencies, fault rules, and a crash that keeps only what was made durable.
//!
//! The queue also opens, closes and removes the files it addresses and gives the time
//! ([`IoQueue::clock`]), so code that is given a queue runs unchanged on the simulated device.
//!
//! Sequential passes over a range (creating, verifying, laying out, scanning a file) go through
//! [`seq`]: the pure [`seq::SeqPass`] state machine and its blocking runner [`seq::run_pass`].
//!
//! Files are opened with O_DIRECT by default ([`OpenMode`]); buffers are 4 KiB aligned
//! ([`AlignedBuf`]). Latency goes into per-thread [`LatencyHistogram`]s that are merged, never
//! averaged. OS-specific calls live in [`platform`].

mod backend;
pub mod bench;
mod buf;
mod clock;
mod fault;
mod file;
mod hist;
#[cfg(windows)]
mod iocp;
mod machine;
pub mod platform;
pub mod probe;
mod queue;
mod remove;
pub mod seq;
pub mod sim;
#[cfg(any(target_os = "linux", windows))]
mod slots;
mod tap;
mod threads;
#[cfg(target_os = "linux")]
mod uring;

use std::path::{Path, PathBuf};

pub use backend::{open_queue, EngineKind};
pub use buf::{AlignedBuf, ALIGN};
pub use clock::{Clock, RealClock};
pub use fault::{FaultKind, FaultQueue, FaultRule};
pub use file::{IoFile, OpenMode};
pub use hist::{LatencyHistogram, Percentiles};
pub use machine::{Machine, NoMachine, RealMachine};
pub use queue::{FileTable, Files, IoCompletion, IoOp, IoQueue, IoRequest, QueueBase, Reap};
pub use tap::{OnComplete, OnSubmit, Tap};

/// An I/O failure, naming the operation, the file and (when known) the offset.
///
/// Like every error type of the workspace, its message is complete: it includes the OS error,
/// which is therefore not also returned by `source()` (an error chain printed with `{:#}` shows
/// it once). Use [`IoError::os_error`] to inspect it.
#[derive(Debug, thiserror::Error)]
pub enum IoError {
    /// The operating system refused or failed an operation.
    #[error("cannot {op} {}{}: {error}", path.display(), offset.map(|o| format!(" at offset {o}")).unwrap_or_default())]
    Os {
        /// What we were doing.
        op: &'static str,
        /// The file.
        path: PathBuf,
        /// Byte offset, for reads and writes.
        offset: Option<u64>,
        /// The OS error: part of the message, deliberately not a `source()`.
        error: std::io::Error,
    },
    /// A read or write transferred fewer bytes than asked.
    #[error("short {op} on {} at offset {offset}: {got} of {expected} bytes", path.display())]
    Short {
        /// "read" or "write".
        op: &'static str,
        /// The file.
        path: PathBuf,
        /// Byte offset.
        offset: u64,
        /// Bytes asked for.
        expected: usize,
        /// Bytes transferred.
        got: usize,
    },
    /// The backend cannot do what was asked (io_uring unavailable, queue misuse).
    #[error("{0}")]
    Unsupported(String),
}

impl IoError {
    /// An OS error without an offset.
    pub fn new(op: &'static str, path: impl AsRef<Path>, error: std::io::Error) -> Self {
        IoError::Os {
            op,
            path: path.as_ref().to_path_buf(),
            offset: None,
            error,
        }
    }

    /// The OS error, if this is one (to tell "no space left" from other failures).
    pub fn os_error(&self) -> Option<&std::io::Error> {
        match self {
            IoError::Os { error, .. } => Some(error),
            _ => None,
        }
    }

    /// An OS error at an offset.
    pub fn at(
        op: &'static str,
        path: impl AsRef<Path>,
        offset: u64,
        error: std::io::Error,
    ) -> Self {
        IoError::Os {
            op,
            path: path.as_ref().to_path_buf(),
            offset: Some(offset),
            error,
        }
    }
}

#[cfg(test)]
mod tests;
