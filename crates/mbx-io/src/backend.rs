//! Which I/O backend a queue uses, and opening one. The backends (`uring`, `threads`, `iocp`)
//! implement [`IoQueue`](crate::IoQueue) from `queue`; this module is the only one that names
//! them all, so `queue` depends on none of them.

use serde::{Deserialize, Serialize};

use crate::queue::{FileTable, IoQueue};
use crate::IoError;

/// Which backend to use. It mirrors `mbx_config::IoBackend` (the flag and configuration name
/// table), with the same names, so this crate needs no configuration crate: the engine converts
/// (`mbx_engine::engine_kind`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default, Serialize, Deserialize)]
pub enum EngineKind {
    /// Linux io_uring: one thread keeps `depth` requests in flight (default on Linux).
    #[cfg_attr(target_os = "linux", default)]
    #[serde(rename = "io_uring")]
    IoUring,
    /// Portable: `depth` threads doing positional reads and writes.
    #[cfg_attr(not(any(target_os = "linux", windows)), default)]
    #[serde(rename = "sync")]
    Sync,
    /// Windows overlapped I/O on an I/O completion port (default on Windows).
    #[cfg_attr(windows, default)]
    #[serde(rename = "iocp")]
    Iocp,
}

impl EngineKind {
    /// Every backend.
    pub const ALL: [EngineKind; 3] = [EngineKind::IoUring, EngineKind::Sync, EngineKind::Iocp];

    /// The name used in flags and results: "io_uring", "sync", "iocp".
    pub fn name(self) -> &'static str {
        match self {
            EngineKind::IoUring => "io_uring",
            EngineKind::Sync => "sync",
            EngineKind::Iocp => "iocp",
        }
    }
}

/// Opens a queue of `depth` over `files` with the chosen backend.
pub fn open_queue(
    kind: EngineKind,
    files: FileTable,
    depth: usize,
) -> Result<Box<dyn IoQueue>, IoError> {
    let depth = depth.max(1);
    match kind {
        #[cfg(target_os = "linux")]
        EngineKind::IoUring => Ok(Box::new(crate::uring::UringQueue::new(files, depth)?)),
        #[cfg(not(target_os = "linux"))]
        EngineKind::IoUring => Err(IoError::Unsupported(
            "io_uring is only available on Linux; use --engine sync".into(),
        )),
        EngineKind::Sync => Ok(Box::new(crate::threads::ThreadQueue::new(files, depth))),
        #[cfg(windows)]
        EngineKind::Iocp => Ok(Box::new(crate::iocp::IocpQueue::new(files, depth)?)),
        #[cfg(not(windows))]
        EngineKind::Iocp => Err(IoError::Unsupported(
            "the iocp engine (I/O completion ports) is only available on Windows; use --engine sync"
                .into(),
        )),
    }
}
