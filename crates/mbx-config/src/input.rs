//! Bounded reading of input files: the one reader every file mbxstress reads from a user goes
//! through (`--config`, `--profile`, `--jetstress-config`, `size --input`, `fleet --hosts`, and
//! every file `import`, `esrp`, `compare` and `report` read), so none of them can be made to read
//! without end (`/dev/zero`), block forever (a FIFO with no writer) or allocate a file's whole
//! size before checking it.
//!
//! The rules:
//! - Only regular files are read. A directory, character or block device, FIFO or socket is
//!   refused before it is opened, and again after opening (the open itself is non-blocking, so a
//!   path swapped for a FIFO in between cannot hang us).
//! - A path given by the user is resolved (a symbolic link to a regular file is read) and the
//!   file it resolves to is what is checked.
//! - A file inside a results folder is not followed out of it: [`folder_file`] refuses a name
//!   that is not a plain relative path (`..`, an absolute path) and any symbolic link on the way
//!   (a folder copied from another machine could link `test.log` to `/etc/shadow`).
//! - A file whose size is over the limit is refused before anything is read. Reading goes through
//!   `take(limit + 1)`, so a file that grows while it is read is bounded too. The limit is per
//!   kind of input; each constant below says why its figure.
//! - Text must be UTF-8 (a leading UTF-8 byte-order mark is dropped). Anything else is an error
//!   naming the byte offset, never a panic.
//!
//! `what` in every call says which input the file is (the flag, e.g. "the --config file (a run
//! configuration)"); every error names it and the path.

use std::fs::File;
use std::io::{BufRead, BufReader, Read};
use std::path::{Path, PathBuf};

const MIB: u64 = 1024 * 1024;

/// Limit for a Jetstress report (HTML or text) and for an mbxstress `result.json`.
///
/// A Jetstress HTML report is tens of kilobytes to a few MB (its largest table has one row per
/// database, at most 100). An mbxstress result.json is about 2.5 KB per instance plus the
/// configuration: under 0.5 MB for 100 databases. 64 MiB is over ten times the largest real input.
pub const REPORT_LIMIT: u64 = 64 * MIB;

/// Limit for `samples.jsonl`.
///
/// One line per sample interval, about 600 bytes per instance plus 200 bytes of host counters
/// (measured on a real run). The largest configuration run validates is 100 databases; a 24-hour
/// run at the default 15 s interval writes 24 x 3600 / 15 = 5,760 lines of about 60 KB, about
/// 346 MB. 512 MiB covers that with 50% to spare. A longer run with that many instances, or one
/// with a shorter sample interval, needs a longer `sample_interval_s` to stay reportable.
pub const SAMPLES_LIMIT: u64 = 512 * MIB;

/// Limit for `test.log`.
///
/// The log has a few lines per database and phase plus one line per finding: kilobytes for a
/// normal run. 64 MiB is about 600,000 lines of 100 bytes, far more than any run writes, and all
/// of it is copied into report.html.
pub const LOG_LIMIT: u64 = 64 * MIB;

/// Limit for the small TOML and XML files users write: `--config`, `--profile`, `size --input`,
/// `--jetstress-config`.
///
/// A `--config` file sets at most a few dozen keys (about 2 KB with comments); a profile is five
/// numbers (about 300 bytes); a JetstressConfig.xml is a few KB, tens with every database path.
/// 1 MiB is far more than any of them.
pub const CONFIG_LIMIT: u64 = MIB;

/// Limit for a `fleet --hosts` file.
///
/// One `[[host]]` table is about 200 bytes (name, ssh, db_path, log_path, profile, work_dir).
/// 4 MiB holds some 20,000 hosts, far more than a fleet runs (3,000 is already large).
pub const HOSTS_LIMIT: u64 = 4 * MIB;

/// Why an input file could not be read; each variant names the file.
#[derive(Debug, thiserror::Error)]
pub enum InputError {
    /// The file could not be opened or read (the message includes the OS error, which is not
    /// also a `source()`, so an error chain prints it once).
    #[error("cannot read {}: {error}", path.display())]
    Read {
        /// The file.
        path: PathBuf,
        /// What it should have been.
        what: &'static str,
        /// The OS error.
        error: std::io::Error,
    },
    /// Not a regular file.
    #[error("{} is {kind}, not a regular file: expected {what}", path.display())]
    NotAFile {
        /// The path.
        path: PathBuf,
        /// What it is ("a directory", "a character device", ...).
        kind: &'static str,
        /// What it should have been.
        what: &'static str,
    },
    /// Larger than the limit for this kind of file.
    #[error("{} is {}{size} bytes ({}), over the {} limit for {what}; is it the right file?", path.display(), at_least(.grew), mib(.size), mib(.limit))]
    TooLarge {
        /// The file.
        path: PathBuf,
        /// What it should have been.
        what: &'static str,
        /// Its size (from its metadata, or the bytes seen when it grew while being read).
        size: u64,
        /// The limit.
        limit: u64,
        /// True if the file grew past the limit while being read (`size` is a lower bound).
        grew: bool,
    },
    /// Not UTF-8 text.
    #[error("{} is not UTF-8 text (invalid byte at offset {offset}): expected {what}{hint}", path.display())]
    NotUtf8 {
        /// The file.
        path: PathBuf,
        /// What it should have been.
        what: &'static str,
        /// Byte offset of the first invalid byte.
        offset: u64,
        /// A hint for a recognizable encoding (UTF-16), or empty.
        hint: &'static str,
    },
    /// A file inside a results folder is a symbolic link (never followed out of the folder).
    #[error("{} is a symbolic link (to {}): expected {what}; a results folder's files are never followed through links", path.display(), target.display())]
    Symlink {
        /// The link.
        path: PathBuf,
        /// What it points to.
        target: PathBuf,
        /// What it should have been.
        what: &'static str,
    },
    /// A file name that would leave its folder (absolute, or with `..`).
    #[error("{}: {name:?} is not a file name inside the folder (expected {what}); it is not read", dir.display())]
    OutsideFolder {
        /// The folder.
        dir: PathBuf,
        /// The name as given (e.g. in result.json's `log_file`).
        name: String,
        /// What it should have been.
        what: &'static str,
    },
}

impl InputError {
    /// True if the file does not exist (optional inputs are then skipped).
    pub fn is_not_found(&self) -> bool {
        matches!(self, InputError::Read { error, .. } if error.kind() == std::io::ErrorKind::NotFound)
    }
}

/// A size in MiB for messages.
fn mib(bytes: &u64) -> String {
    // Display only: the rounding of a u64 to f64 does not matter here.
    format!("{:.1} MiB", *bytes as f64 / MIB as f64)
}

fn at_least(grew: &bool) -> &'static str {
    if *grew {
        "at least "
    } else {
        ""
    }
}

/// What a non-regular file is, for messages.
fn kind_of(ft: &std::fs::FileType) -> &'static str {
    #[cfg(unix)]
    {
        use std::os::unix::fs::FileTypeExt;
        if ft.is_char_device() {
            return "a character device";
        }
        if ft.is_block_device() {
            return "a block device";
        }
        if ft.is_fifo() {
            return "a FIFO (named pipe)";
        }
        if ft.is_socket() {
            return "a socket";
        }
    }
    if ft.is_dir() {
        "a directory"
    } else if ft.is_file() {
        "a regular file"
    } else if ft.is_symlink() {
        "a symbolic link"
    } else {
        "not a regular file"
    }
}

/// Opens a regular file for reading and returns it with its size; refuses anything else and a
/// file over `limit`, before reading a byte.
fn open_regular(path: &Path, limit: u64, what: &'static str) -> Result<(File, u64), InputError> {
    let read_err = |error| InputError::Read {
        path: path.to_path_buf(),
        what,
        error,
    };
    let check = |meta: &std::fs::Metadata| -> Result<u64, InputError> {
        if !meta.is_file() {
            return Err(InputError::NotAFile {
                path: path.to_path_buf(),
                kind: kind_of(&meta.file_type()),
                what,
            });
        }
        within_limit(path, what, meta.len(), limit, false)?;
        Ok(meta.len())
    };
    // Checked before opening: opening a FIFO blocks until a writer comes, and opening some
    // devices has side effects.
    check(&std::fs::metadata(path).map_err(read_err)?)?;
    let mut opts = std::fs::OpenOptions::new();
    opts.read(true);
    #[cfg(unix)]
    {
        use std::os::unix::fs::OpenOptionsExt;
        // Non-blocking open: if the path was replaced by a FIFO since the check, the open returns
        // at once and the check below refuses it. Reads from a regular file ignore the flag.
        opts.custom_flags(libc::O_NONBLOCK);
    }
    let file = opts.open(path).map_err(read_err)?;
    let size = check(&file.metadata().map_err(read_err)?)?;
    Ok((file, size))
}

/// Reads at most `limit` bytes of a regular file: the whole file, or an error if it is larger
/// (also when it grows past the limit while being read).
pub fn read_bounded_bytes(
    path: &Path,
    limit: u64,
    what: &'static str,
) -> Result<Vec<u8>, InputError> {
    let (file, size) = open_regular(path, limit, what)?;
    // The size is at most `limit` (checked), so the capacity hint cannot be excessive; a size
    // that does not fit usize only loses the hint.
    let bytes = read_at_most(
        file,
        limit.saturating_add(1),
        usize::try_from(size).unwrap_or(0),
        path,
        what,
    )?;
    let read = u64::try_from(bytes.len()).unwrap_or(u64::MAX);
    within_limit(path, what, read, limit, true)?;
    Ok(bytes)
}

/// `TooLarge` when `size` bytes of `path` are over `limit` (`grew`: found while reading it, the
/// file having grown past the limit since its size was checked).
fn within_limit(
    path: &Path,
    what: &'static str,
    size: u64,
    limit: u64,
    grew: bool,
) -> Result<(), InputError> {
    if size > limit {
        return Err(InputError::TooLarge {
            path: path.to_path_buf(),
            what,
            size,
            limit,
            grew,
        });
    }
    Ok(())
}

/// The error for `bytes` (starting at byte `offset` of the file) that are not UTF-8.
fn not_utf8(
    bytes: &[u8],
    err: std::str::Utf8Error,
    offset: u64,
    path: &Path,
    what: &'static str,
) -> InputError {
    let utf16 =
        offset == 0 && (bytes.starts_with(&[0xff, 0xfe]) || bytes.starts_with(&[0xfe, 0xff]));
    InputError::NotUtf8 {
        path: path.to_path_buf(),
        what,
        offset: offset.saturating_add(u64::try_from(err.valid_up_to()).unwrap_or(u64::MAX)),
        hint: if utf16 {
            "; it looks like UTF-16: convert it, e.g. iconv -f UTF-16 -t UTF-8"
        } else {
            ""
        },
    }
}

const BOM: &str = "\u{feff}";

/// Reads a regular file of at most `limit` bytes as UTF-8 text. `what` says what the file should
/// be ("a Jetstress report ...") and appears in every error, with the path.
pub fn read_bounded(path: &Path, limit: u64, what: &'static str) -> Result<String, InputError> {
    let bytes = read_bounded_bytes(path, limit, what)?;
    let text = String::from_utf8(bytes)
        .map_err(|e| not_utf8(e.as_bytes(), e.utf8_error(), 0, path, what))?;
    Ok(match text.strip_prefix(BOM) {
        Some(rest) => rest.to_string(),
        None => text,
    })
}

/// Calls `f(line_number, line)` for each line (1-based, without the line ending) of a regular
/// file of at most `limit` bytes, without holding the whole file in memory.
pub fn for_each_line<E: From<InputError>>(
    path: &Path,
    limit: u64,
    what: &'static str,
    mut f: impl FnMut(usize, &str) -> Result<(), E>,
) -> Result<(), E> {
    for_each_line_ended(path, limit, what, |n, line, _| f(n, line))
}

/// [`for_each_line`], also telling `f` whether the line ended with a line feed (false only for a
/// last line cut short: a file appended to when a writer stopped mid-line).
pub fn for_each_line_ended<E: From<InputError>>(
    path: &Path,
    limit: u64,
    what: &'static str,
    mut f: impl FnMut(usize, &str, bool) -> Result<(), E>,
) -> Result<(), E> {
    let (file, _) = open_regular(path, limit, what)?;
    let mut reader = BufReader::new(file.take(limit.saturating_add(1)));
    let mut buf = Vec::new();
    let mut offset = 0u64;
    let mut line_no = 0usize;
    loop {
        buf.clear();
        let n = reader
            .read_until(b'\n', &mut buf)
            .map_err(|error| InputError::Read {
                path: path.to_path_buf(),
                what,
                error,
            })?;
        if n == 0 {
            return Ok(());
        }
        let start = offset;
        offset = offset.saturating_add(u64::try_from(n).unwrap_or(u64::MAX));
        within_limit(path, what, offset, limit, true)?;
        line_no = line_no.saturating_add(1);
        let mut line =
            std::str::from_utf8(&buf).map_err(|e| not_utf8(&buf, e, start, path, what))?;
        if line_no == 1 {
            line = line.strip_prefix(BOM).unwrap_or(line);
        }
        let ended = line.ends_with('\n');
        let line = line.strip_suffix('\n').unwrap_or(line);
        let line = line.strip_suffix('\r').unwrap_or(line);
        f(line_no, line, ended)?;
    }
}

/// The path of `name` inside the folder `dir`, for a results folder's files: `name` must be a
/// relative path of plain components (no `..`, not absolute), and neither it nor any folder on
/// the way below `dir` may be a symbolic link; the file itself must be a regular file (checked
/// without following a link). `dir` itself is the user's choice and may be reached through links.
///
/// A missing file is an error for which [`InputError::is_not_found`] is true (optional files are
/// then skipped). The caller then reads the path with the bounded readers.
pub fn folder_file(dir: &Path, name: &str, what: &'static str) -> Result<PathBuf, InputError> {
    use std::path::Component;
    let rel = Path::new(name);
    let plain = !name.is_empty() && rel.components().all(|c| matches!(c, Component::Normal(_)));
    if !plain {
        return Err(InputError::OutsideFolder {
            dir: dir.to_path_buf(),
            name: name.to_string(),
            what,
        });
    }
    let mut path = dir.to_path_buf();
    let mut parts = rel.components().peekable();
    while let Some(part) = parts.next() {
        path.push(part);
        let last = parts.peek().is_none();
        let meta = std::fs::symlink_metadata(&path).map_err(|error| InputError::Read {
            path: path.clone(),
            what,
            error,
        })?;
        if meta.file_type().is_symlink() {
            return Err(InputError::Symlink {
                target: std::fs::read_link(&path).unwrap_or_default(),
                path,
                what: if last { what } else { "a folder" },
            });
        }
        if last && !meta.is_file() {
            return Err(InputError::NotAFile {
                kind: kind_of(&meta.file_type()),
                path,
                what,
            });
        }
        if !last && !meta.is_dir() {
            return Err(InputError::NotAFile {
                kind: kind_of(&meta.file_type()),
                path,
                what: "a folder",
            });
        }
    }
    Ok(path)
}

/// Reads the first `n` bytes (or fewer) of a regular file of any size: enough to recognize it.
pub fn read_head(path: &Path, n: u64, what: &'static str) -> Result<Vec<u8>, InputError> {
    let (file, _) = open_regular(path, u64::MAX, what)?;
    read_at_most(file, n, 0, path, what)
}

/// Reads the last `n` bytes (or fewer) of a regular file of any size (a log's tail).
pub fn read_tail(path: &Path, n: u64) -> Result<Vec<u8>, InputError> {
    use std::io::{Seek, SeekFrom};
    let what = "a log file";
    let (mut file, size) = open_regular(path, u64::MAX, what)?;
    let err = |error| InputError::Read {
        path: path.to_path_buf(),
        what,
        error,
    };
    file.seek(SeekFrom::Start(size.saturating_sub(n)))
        .map_err(err)?;
    read_at_most(file, n, 0, path, what)
}

/// At most `n` bytes of an open file (`capacity` a hint for the buffer), a read error naming
/// the file.
fn read_at_most(
    file: File,
    n: u64,
    capacity: usize,
    path: &Path,
    what: &'static str,
) -> Result<Vec<u8>, InputError> {
    let mut bytes = Vec::with_capacity(capacity);
    file.take(n)
        .read_to_end(&mut bytes)
        .map_err(|error| InputError::Read {
            path: path.to_path_buf(),
            what,
            error,
        })?;
    Ok(bytes)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn messages_name_size_and_limit() {
        let e = InputError::TooLarge {
            path: "r.html".into(),
            what: "a report",
            size: 70 * MIB,
            limit: 64 * MIB,
            grew: false,
        };
        assert_eq!(
            e.to_string(),
            "r.html is 73400320 bytes (70.0 MiB), over the 64.0 MiB limit for a report; is it the right file?"
        );
    }

    #[test]
    fn utf16_gets_a_hint() {
        let check = |bytes: &[u8], offset: u64| {
            let err = std::str::from_utf8(bytes).expect_err("not UTF-8");
            not_utf8(bytes, err, offset, Path::new("x"), "a report").to_string()
        };
        let e = check(&[0xff, 0xfe, b'a', 0], 0);
        assert!(e.contains("UTF-16") && e.contains("offset 0"), "{e}");
        let e = check(&[b'a', 0xc3], 10);
        assert!(e.contains("offset 11") && !e.contains("UTF-16"), "{e}");
    }
}
