//! Writing a file whole or not at all: the one atomic writer every crate's outputs go through
//! (result.json and the report files, find-max.json, profiles).

use std::io::Write;
use std::path::Path;

/// Writes `bytes` to `path` through a temporary file in the same folder and a rename, so a
/// reader never sees half a file; the data is made durable before the rename and the rename
/// before returning (fsync of the file, then of its folder), so a power loss leaves the old file
/// or the new one, never an empty one.
///
/// The temporary file (`.<name>.XXXXXX.tmp`) is created new with a random name (O_EXCL, which
/// never follows a symbolic link), so nothing a folder copied from elsewhere left there is
/// written through; it is removed if writing fails. Its mode is what `std::fs::write` gives a
/// new file (0666 less the umask), not the 0600 of a private temporary file.
pub fn write_atomic(path: &Path, bytes: &[u8]) -> std::io::Result<()> {
    let dir = match path.parent() {
        Some(d) if !d.as_os_str().is_empty() => d,
        _ => Path::new("."),
    };
    let name = path
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    let prefix = format!(".{name}.");
    let mut builder = tempfile::Builder::new();
    builder.prefix(&prefix).suffix(".tmp");
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        builder.permissions(std::fs::Permissions::from_mode(0o666));
    }
    let mut tmp = builder.tempfile_in(dir)?;
    tmp.write_all(bytes)?;
    tmp.as_file().sync_all()?;
    tmp.persist(path).map_err(|e| e.error)?;
    sync_folder(dir)
}

/// Makes a rename in `dir` durable.
#[cfg(unix)]
fn sync_folder(dir: &Path) -> std::io::Result<()> {
    std::fs::File::open(dir)?.sync_all()
}

/// Windows makes a rename durable with the file system's journal; a folder cannot be synced.
#[cfg(not(unix))]
fn sync_folder(_dir: &Path) -> std::io::Result<()> {
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The file is replaced whole, nothing else is left in the folder, and a link where an
    /// older version put its temporary file is neither followed nor removed.
    #[test]
    fn replaces_the_file_whole_and_leaves_nothing_else() {
        let dir = tempfile::tempdir().expect("tempdir");
        let path = dir.path().join("out.json");
        write_atomic(&path, b"first").expect("write");
        write_atomic(&path, b"second").expect("replace");
        assert_eq!(std::fs::read(&path).expect("read"), b"second");
        let names: Vec<_> = std::fs::read_dir(dir.path())
            .expect("dir")
            .map(|e| e.expect("entry").file_name())
            .collect();
        assert_eq!(names, vec![std::ffi::OsString::from("out.json")]);
        #[cfg(unix)]
        {
            use std::os::unix::fs::PermissionsExt;
            let mode = std::fs::metadata(&path).expect("meta").permissions().mode();
            assert_ne!(mode & 0o044, 0, "not readable by others: {mode:o}");
        }
        // A folder that does not exist is an error naming nothing half-written.
        assert!(write_atomic(&dir.path().join("no/such/file"), b"x").is_err());
    }
}
