//! The simulated mailbox store.
//!
//! A database set is N database files of 32 KiB [`page`]s, each with a transaction log directory
//! of 1 MiB [`log`] files and a [`checkpoint`] file. Every page carries its page number, database
//! id, write generation and a checksum, and every read is verified ([`page::check_data_page`]).
//! The byte-level format is documented in docs/store-format.md and in each module.
//!
//! - [`create::prepare`]: create the set, or attach an existing one, or resume an interrupted
//!   creation; safe with users' files (never overwrite what is not ours without `force`, refuse
//!   block devices without `allow_device` and mounted or in-use devices always, and with
//!   `allow_device` alone a device that is not blank ([`signature`]: a filesystem, LVM, RAID,
//!   swap, a partition table, unrecognized data); check free space first).
//! - [`verify::verify_database`]: read a database sequentially and classify every page.
//! - [`held::HeldDatabases`]: the database files of a run, held open from start to end; their
//!   state (dirty, clean) written through the descriptors held, never by reopening a path.
//! - [`journal`]: each page's last durable write generation, beside the database, so that a page
//!   rolled back between runs is found.
//! - [`log`], [`log_dir`], [`checkpoint`], [`redo`]: the transaction log in one [`Lsn`] space:
//!   records that carry redo entries, scans of byte images and of log directories, the
//!   checkpoint that continues across runs, and the redo set replay computes.

pub mod capacity;
pub mod checkpoint;
pub mod create;
mod fastsum;
pub mod header;
pub mod held;
pub mod journal;
pub mod lock;
pub mod log;
pub mod log_dir;
pub mod lsn;
pub mod page;
pub mod redo;
mod rows;
pub mod signature;
pub mod verify;

use std::path::PathBuf;

pub use create::{plan_paths, prepare, CreateEvent, CreateParams, DatabaseSpec, PreparedDatabase};
pub use header::{DbHeader, DbState};
pub use held::HeldDatabases;
pub use lock::{LockMode, StoreLock};
pub use lsn::Lsn;
pub use verify::{verify_database, VerifyOptions, VerifyReport};

/// Errors of the store. Each names the path concerned; [`StoreError::is_user_error`] tells the CLI
/// whether the user can fix it by changing flags (exit code 2).
#[derive(Debug, thiserror::Error)]
pub enum StoreError {
    /// An I/O operation failed.
    #[error(transparent)]
    Io(#[from] mbx_io::IoError),
    /// The path holds something that is not an mbxstress database.
    #[error("refusing to overwrite {}: it exists and is not {what}; pass --force to overwrite it, or choose another path", path.display())]
    NotOurs {
        /// The existing file.
        path: PathBuf,
        /// What we expected ("an mbxstress database", "an mbxstress log file").
        what: &'static str,
    },
    /// A file that should be a database has no valid mbxstress header.
    #[error("{} is not an mbxstress database (no valid header); create databases with `mbxstress prepare`", path.display())]
    NotADatabase {
        /// The file.
        path: PathBuf,
    },
    /// The path is a block device and devices were not allowed.
    #[error("{} is a block device; pass --allow-device to use it (everything on it will be overwritten)", path.display())]
    Device {
        /// The device.
        path: PathBuf,
    },
    /// The block device is not blank and holds no mbxstress database: `--allow-device` alone
    /// does not overwrite it.
    #[error("{} holds {contents}; --allow-device permits only a blank device or one holding an mbxstress database: check it is the right device, and pass --force as well to overwrite it (everything on it will be lost)", path.display())]
    DeviceNotBlank {
        /// The device.
        path: PathBuf,
        /// What was found on it.
        contents: signature::Contents,
    },
    /// The path is a block device that is mounted or otherwise in use; `--allow-device` permits
    /// unused devices only.
    #[error("{} is {reason} — --allow-device permits an unused device only", path.display())]
    DeviceInUse {
        /// The device.
        path: PathBuf,
        /// What uses it and the fix ("mounted at /mnt/x (ext4); unmount it first").
        reason: String,
    },
    /// An existing database was created with other parameters.
    #[error("{} was created with {field} = {existing}, but this run needs {requested}; use matching parameters to attach it, or --force to recreate it", path.display())]
    ParamsMismatch {
        /// The database.
        path: PathBuf,
        /// The differing parameter.
        field: &'static str,
        /// Its value in the file.
        existing: String,
        /// The value asked for.
        requested: String,
    },
    /// Not enough free space for what must be written.
    #[error("not enough free space on the filesystem of {}: need {} MiB, {} MiB available; free space, choose another --db-path, or use fewer/smaller databases", path.display(), needed / (1 << 20), available / (1 << 20))]
    InsufficientSpace {
        /// A path on the filesystem.
        path: PathBuf,
        /// Bytes needed.
        needed: u64,
        /// Bytes available.
        available: u64,
    },
    /// Creation was stopped (Ctrl-C); what was written is durable and resumes next time.
    #[error("creation interrupted after {} of {} MiB; run the same command again to resume", done_bytes / (1 << 20), total_bytes / (1 << 20))]
    Interrupted {
        /// Bytes durable.
        done_bytes: u64,
        /// Bytes in total.
        total_bytes: u64,
    },
    /// A database's creation is incomplete, so it cannot be verified or used yet.
    #[error("{} is incomplete ({created} of {total} data pages created); run prepare again to finish it", path.display())]
    Incomplete {
        /// The database.
        path: PathBuf,
        /// Data pages created.
        created: u64,
        /// Data pages in total.
        total: u64,
    },
    /// The database file does not match its own header.
    #[error("{} is damaged: {reason}", path.display())]
    Damaged {
        /// The database.
        path: PathBuf,
        /// What is wrong.
        reason: String,
    },
    /// Another command is using the database or log directory.
    #[error("{} is in use by another mbxstress command{}; wait for it to finish or stop it (one command per database at a time)", path.display(), holder.map(|p| format!(" (PID {p})")).unwrap_or_default())]
    Locked {
        /// The database file or log directory.
        path: PathBuf,
        /// The process holding the lock, where the OS tells.
        holder: Option<u32>,
    },
    /// A database's log is not continuous where replay needs it.
    #[error("the log in {} cannot be replayed: {problem}", dir.display())]
    LogBroken {
        /// The log directory.
        dir: PathBuf,
        /// The first break found.
        problem: log::LogBreak,
    },
    /// The request itself is invalid (path counts, sizes).
    #[error("{0}")]
    Invalid(String),
}

impl StoreError {
    /// True when the user can fix it with different flags or paths (CLI exit code 2).
    pub fn is_user_error(&self) -> bool {
        matches!(
            self,
            StoreError::NotOurs { .. }
                | StoreError::NotADatabase { .. }
                | StoreError::Device { .. }
                | StoreError::DeviceInUse { .. }
                | StoreError::DeviceNotBlank { .. }
                | StoreError::ParamsMismatch { .. }
                | StoreError::InsufficientSpace { .. }
                | StoreError::Locked { .. }
                | StoreError::Invalid(_)
        )
    }
}
