//! Files opened for testing: O_DIRECT by default, optional write-through (O_DSYNC), and the
//! synchronous operations every backend shares (size, sync, set_len). On Windows the same modes
//! are FILE_FLAG_NO_BUFFERING and FILE_FLAG_WRITE_THROUGH.

use std::fs::{File, OpenOptions};
use std::path::{Path, PathBuf};

use crate::IoError;

/// How to open a file.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct OpenMode {
    /// Bypass the page cache (O_DIRECT). Buffered I/O must be asked for and is reported.
    pub direct: bool,
    /// Every write reaches stable storage before it completes (O_DSYNC): used for log files.
    pub write_through: bool,
    /// Open for writing too.
    pub write: bool,
    /// Create the file if it does not exist.
    pub create: bool,
}

impl OpenMode {
    /// Read-only, direct.
    pub fn read_direct() -> Self {
        OpenMode {
            direct: true,
            write_through: false,
            write: false,
            create: false,
        }
    }
    /// Read-write, direct, no create.
    pub fn read_write_direct() -> Self {
        OpenMode {
            write: true,
            ..Self::read_direct()
        }
    }
    /// Through the page cache, not write-through: for the small files read or written whole
    /// (headers, journals, checkpoints) that need no aligned buffers. `write` opens for writing
    /// too; `create` (with `write`) creates the file if it does not exist.
    pub fn buffered(write: bool, create: bool) -> Self {
        OpenMode {
            direct: false,
            write_through: false,
            write,
            create,
        }
    }
    /// Read-only, through the page cache.
    pub fn read_buffered() -> Self {
        Self::buffered(false, false)
    }
}

/// An open file and the path it was opened from (for error messages).
#[derive(Debug)]
pub struct IoFile {
    path: PathBuf,
    file: File,
    mode: OpenMode,
}

impl IoFile {
    /// Opens `path` with `mode`.
    pub fn open(path: &Path, mode: OpenMode) -> Result<IoFile, IoError> {
        let mut o = OpenOptions::new();
        o.read(true)
            .write(mode.write)
            .create(mode.create && mode.write);
        #[cfg(target_os = "linux")]
        {
            use std::os::unix::fs::OpenOptionsExt;
            let mut flags = 0;
            if mode.direct {
                flags |= libc::O_DIRECT;
            }
            if mode.write_through {
                flags |= libc::O_DSYNC;
            }
            o.custom_flags(flags);
        }
        #[cfg(windows)]
        {
            use std::os::windows::fs::OpenOptionsExt;
            o.custom_flags(windows_open_flags(mode));
        }
        let file = o.open(path).map_err(|e| IoError::new("open", path, e))?;
        Ok(IoFile {
            path: path.to_path_buf(),
            file,
            mode,
        })
    }

    /// The path the file was opened from.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// The mode it was opened with.
    pub fn mode(&self) -> OpenMode {
        self.mode
    }

    /// The underlying file.
    pub fn file(&self) -> &File {
        &self.file
    }

    /// Size in bytes (for block devices, the device size).
    pub fn len(&self) -> Result<u64, IoError> {
        crate::platform::file_size(&self.file).map_err(|e| IoError::new("stat", &self.path, e))
    }

    /// True if the file is empty.
    pub fn is_empty(&self) -> Result<bool, IoError> {
        Ok(self.len()? == 0)
    }

    /// Sets the size (regular files only).
    pub fn set_len(&self, len: u64) -> Result<(), IoError> {
        self.file
            .set_len(len)
            .map_err(|e| IoError::new("set length of", &self.path, e))
    }

    /// Makes written data durable (fdatasync).
    pub fn sync_data(&self) -> Result<(), IoError> {
        self.file
            .sync_data()
            .map_err(|e| IoError::new("sync", &self.path, e))
    }

    /// Makes data and metadata durable (fsync).
    pub fn sync_all(&self) -> Result<(), IoError> {
        self.file
            .sync_all()
            .map_err(|e| IoError::new("sync", &self.path, e))
    }

    /// Reads exactly `buf.len()` bytes at `offset`, synchronously.
    pub fn read_exact_at(&self, buf: &mut [u8], offset: u64) -> Result<(), IoError> {
        crate::platform::read_exact_at(&self.file, buf, offset)
            .map_err(|e| IoError::at("read", &self.path, offset, e))
    }

    /// Writes all of `buf` at `offset`, synchronously.
    pub fn write_all_at(&self, buf: &[u8], offset: u64) -> Result<(), IoError> {
        crate::platform::write_all_at(&self.file, buf, offset)
            .map_err(|e| IoError::at("write", &self.path, offset, e))
    }
}

/// The CreateFile flags of an [`OpenMode`] on Windows: FILE_FLAG_NO_BUFFERING for direct
/// I/O (sector-aligned offsets, lengths and buffers, as O_DIRECT), FILE_FLAG_WRITE_THROUGH for
/// write-through (each write on stable storage when it completes: the log files).
#[cfg(windows)]
pub(crate) fn windows_open_flags(mode: OpenMode) -> u32 {
    use windows_sys::Win32::Storage::FileSystem::{
        FILE_FLAG_NO_BUFFERING, FILE_FLAG_WRITE_THROUGH,
    };
    let mut flags = 0;
    if mode.direct {
        flags |= FILE_FLAG_NO_BUFFERING;
    }
    if mode.write_through {
        flags |= FILE_FLAG_WRITE_THROUGH;
    }
    flags
}
