//! Path helpers.

use std::path::{Path, PathBuf};

/// The nearest existing ancestor of `p` (itself when it exists; `.` when none of a relative
/// path's does): free space, filesystems and devices are asked of locations not created yet
/// through the folder they will be created in.
pub fn existing_ancestor(p: &Path) -> PathBuf {
    let mut cur = p.to_path_buf();
    loop {
        if cur.exists() {
            return cur;
        }
        match cur.parent() {
            Some(parent) if !parent.as_os_str().is_empty() => cur = parent.to_path_buf(),
            _ => return PathBuf::from("."),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_nearest_existing_folder() {
        let here = std::env::temp_dir();
        assert_eq!(existing_ancestor(&here), here);
        assert_eq!(existing_ancestor(&here.join("no-such-mbx/a/b")), here);
        assert_eq!(
            existing_ancestor(Path::new("no-such-mbx-rel/x")),
            PathBuf::from(".")
        );
    }
}
