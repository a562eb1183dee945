//! Where an error happened, as a result's `errors[]` entry says it: helpers every part of the
//! engine that meets an error uses (a leaf: it depends on no other module of the crate).

use std::path::Path;

use crate::result::ErrorEntry;

/// True if an I/O error is the file system running out of space.
pub fn is_no_space(e: &std::io::Error) -> bool {
    // ENOSPC on Unix; ERROR_HANDLE_DISK_FULL and ERROR_DISK_FULL on Windows.
    let codes: &[i32] = if cfg!(windows) { &[39, 112] } else { &[28] };
    e.raw_os_error().is_some_and(|c| codes.contains(&c))
}

/// An `errors[]` entry with only its place filled in: the path, its volume, the offset and, in a
/// database file (not a log file), the page number there.
pub(crate) fn located(path: Option<&Path>, offset: Option<u64>, in_database: bool) -> ErrorEntry {
    ErrorEntry {
        path: path.map(|p| p.display().to_string()),
        volume: path.and_then(mbx_io::platform::volume_of),
        offset,
        page: offset
            .filter(|_| in_database)
            .map(|o| o / mbx_store::page::PAGE_SIZE as u64),
        ..ErrorEntry::default()
    }
}
