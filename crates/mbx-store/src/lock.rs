//! One command per database at a time.
//!
//! Every command that reads or writes a database set takes an advisory lock (`flock`) on each
//! database file and each log directory for its whole duration: exclusive for commands that
//! write (`prepare`, `run`), shared for readers (`verify`), so two runs on the same databases can
//! never interleave their writes and report integrity errors the tool itself caused. The OS
//! drops the locks when the process ends, however it ends (kill -9 included), so there is no
//! stale lock file to clean up.
//!
//! A database file that does not exist yet is created empty to be locked (an empty file holds no
//! data, so [`crate::prepare`] treats it as absent); if the command ends without writing it, the
//! empty file and any log directory we created are removed again.

use std::fs::File;
use std::path::{Path, PathBuf};

use mbx_io::platform;

use crate::{DatabaseSpec, StoreError};

/// Exclusive (writers) or shared (readers).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LockMode {
    /// No other command may use the databases.
    Exclusive,
    /// Other readers may, writers may not.
    Shared,
}

#[derive(Debug)]
struct Held {
    path: PathBuf,
    /// Holds the lock; closed before cleaning up (Windows cannot remove an open folder).
    _file: Option<File>,
    /// We created it (an empty database file, or a log directory) to lock it.
    created: bool,
    is_dir: bool,
    /// The topmost directory we created on the way to it, if any.
    top_created: Option<PathBuf>,
}

/// Locks on a database set, released on drop.
#[derive(Debug)]
pub struct StoreLock {
    held: Vec<Held>,
}

/// The highest ancestor of `path` (or `path` itself) that does not exist yet.
fn first_missing(path: &Path) -> Option<PathBuf> {
    let mut top = None;
    let mut cur = Some(path);
    while let Some(p) = cur.filter(|p| !p.as_os_str().is_empty()) {
        if p.exists() {
            break;
        }
        top = Some(p.to_path_buf());
        cur = p.parent();
    }
    top
}

impl StoreLock {
    /// Locks every database file and log directory of `specs`, or fails at once naming the path
    /// and, where the OS tells, the process that holds it.
    pub fn acquire(specs: &[DatabaseSpec], mode: LockMode) -> Result<StoreLock, StoreError> {
        let mut lock = StoreLock { held: Vec::new() };
        for spec in specs {
            lock.take(&spec.path, false, mode)?;
            lock.take(&spec.log_dir, true, mode)?;
        }
        Ok(lock)
    }

    /// Locks the given database files only (for readers that have no log directory).
    pub fn acquire_files(paths: &[PathBuf], mode: LockMode) -> Result<StoreLock, StoreError> {
        let mut lock = StoreLock { held: Vec::new() };
        for p in paths {
            lock.take(p, false, mode)?;
        }
        Ok(lock)
    }

    /// The locks `iobench` takes on the file it benchmarks, for its whole run: exclusive on the
    /// file if it exists (a database a running test holds is refused, `--force` or not), and
    /// shared on its folder (a file in a log folder a running test holds is refused; other
    /// readers and benches in the folder share it). Nothing is created.
    pub fn acquire_bench_file(path: &Path) -> Result<StoreLock, StoreError> {
        let mut lock = StoreLock { held: Vec::new() };
        let dir = path
            .parent()
            .filter(|d| !d.as_os_str().is_empty())
            .unwrap_or(Path::new("."));
        if path.exists() {
            lock.take(path, false, LockMode::Exclusive)?;
        }
        if dir.is_dir() {
            lock.take(dir, true, LockMode::Shared)?;
        }
        Ok(lock)
    }

    fn take(&mut self, path: &Path, is_dir: bool, mode: LockMode) -> Result<(), StoreError> {
        let exists = path.exists();
        if !exists && mode == LockMode::Shared {
            // Readers never create anything; a missing path is reported by the reader itself.
            return Ok(());
        }
        let io = |op: &'static str, e: std::io::Error| mbx_io::IoError::new(op, path, e);
        let created = !exists;
        let top_created = if is_dir {
            first_missing(path)
        } else {
            path.parent().and_then(first_missing)
        };
        let file = if is_dir {
            if created {
                std::fs::create_dir_all(path).map_err(|e| io("create directory", e))?;
            }
            platform::open_dir(path).map_err(|e| io("open", e))?
        } else {
            if created {
                if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
                    std::fs::create_dir_all(dir)
                        .map_err(|e| mbx_io::IoError::new("create directory", dir, e))?;
                }
            }
            std::fs::OpenOptions::new()
                .read(true)
                .write(created)
                .create(created)
                .truncate(false)
                .open(path)
                .map_err(|e| io("open", e))?
        };
        let locked =
            platform::try_lock(&file, mode == LockMode::Exclusive).map_err(|e| io("lock", e))?;
        if !locked {
            return Err(StoreError::Locked {
                path: path.to_path_buf(),
                holder: platform::lock_holder(path),
            });
        }
        self.held.push(Held {
            path: path.to_path_buf(),
            _file: Some(file),
            created,
            is_dir,
            top_created,
        });
        Ok(())
    }
}

impl Drop for StoreLock {
    fn drop(&mut self) {
        // Close first: Windows keeps an open file or folder (delete pending) until closed.
        for h in &mut self.held {
            h._file = None;
        }
        // Files before directories (a database file may live in a log directory's parent).
        for h in self.held.iter().filter(|h| h.created && !h.is_dir) {
            if std::fs::metadata(&h.path).is_ok_and(|m| m.is_file() && m.len() == 0) {
                let _ = std::fs::remove_file(&h.path);
            }
        }
        // Then every directory we created, bottom-up, as long as it is empty (remove_dir
        // refuses a directory with anything in it).
        for h in self.held.iter().rev() {
            let Some(top) = &h.top_created else { continue };
            let mut cur = if h.is_dir {
                Some(h.path.as_path())
            } else {
                h.path.parent()
            };
            while let Some(d) = cur {
                if std::fs::remove_dir(d).is_err() || d == top.as_path() {
                    break;
                }
                cur = d.parent();
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::plan_paths;

    #[test]
    fn second_exclusive_lock_is_refused_with_the_path_and_shared_locks_coexist() {
        let dir = tempfile::tempdir().expect("tempdir");
        let specs =
            plan_paths(&[dir.path().join("db")], &[dir.path().join("logs")], 2).expect("plan");
        let first = StoreLock::acquire(&specs, LockMode::Exclusive).expect("first");
        let err = StoreLock::acquire(&specs, LockMode::Exclusive).expect_err("second");
        let msg = err.to_string();
        assert!(msg.contains("mbxstress001.edb"), "{msg}");
        assert!(err.is_user_error());
        let err = StoreLock::acquire(&specs, LockMode::Shared).expect_err("reader vs writer");
        assert!(matches!(err, StoreError::Locked { .. }), "{err}");
        drop(first);
        // Nothing was written: the empty files and directories made for locking are gone.
        assert!(!specs[0].path.exists());
        assert!(!specs[0].log_dir.exists());
        assert!(!dir.path().join("db").exists() && !dir.path().join("logs").exists());
        // A file with data is kept; readers share.
        std::fs::create_dir_all(dir.path().join("db")).expect("mkdir");
        std::fs::write(&specs[0].path, b"data").expect("write");
        let paths = vec![specs[0].path.clone()];
        let r1 = StoreLock::acquire_files(&paths, LockMode::Shared).expect("r1");
        let r2 = StoreLock::acquire_files(&paths, LockMode::Shared).expect("r2");
        assert!(StoreLock::acquire_files(&paths, LockMode::Exclusive).is_err());
        drop((r1, r2));
        assert!(specs[0].path.exists());
    }

    /// iobench's locks: refused on a database or in a log folder a writer holds, named; nothing
    /// created for a new file; shared with another bench of the same folder.
    #[test]
    fn a_bench_file_held_by_a_writer_is_refused() {
        let dir = tempfile::tempdir().expect("tempdir");
        let specs =
            plan_paths(&[dir.path().join("db")], &[dir.path().join("logs")], 1).expect("plan");
        std::fs::create_dir_all(dir.path().join("db")).expect("mkdir");
        std::fs::write(&specs[0].path, b"data").expect("write");
        let run = StoreLock::acquire(&specs, LockMode::Exclusive).expect("run");
        let err = StoreLock::acquire_bench_file(&specs[0].path).expect_err("database in use");
        assert!(
            matches!(&err, StoreError::Locked { path, .. } if path == &specs[0].path),
            "{err}"
        );
        let in_logs = specs[0].log_dir.join("E0000000001.log");
        if cfg!(windows) {
            // Folders cannot be locked on Windows (docs/windows.md, "one command per
            // database"): a new file in a held log folder is not refused there.
            assert!(StoreLock::acquire_bench_file(&in_logs).is_ok());
        } else {
            let err = StoreLock::acquire_bench_file(&in_logs).expect_err("log folder in use");
            assert!(
                matches!(&err, StoreError::Locked { path, .. } if path == &specs[0].log_dir),
                "{err}"
            );
        }
        drop(run);
        let new = dir.path().join("bench.dat");
        let a = StoreLock::acquire_bench_file(&new).expect("a new file");
        let b = StoreLock::acquire_bench_file(&dir.path().join("other.dat")).expect("shared");
        assert!(!new.exists(), "nothing created");
        drop((a, b));
    }
}
