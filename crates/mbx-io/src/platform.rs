//! The operating-system specific pieces, behind portable functions. Linux (and other Unix) now;
//! a Windows build needs these functions and a queue backend, nothing else.

use std::fs::File;
use std::io;
use std::path::Path;

/// Bytes available to unprivileged users on the filesystem holding `path`.
pub fn free_space(path: &Path) -> io::Result<u64> {
    let s = rustix::fs::statvfs(path).map_err(io::Error::from)?;
    Ok(s.f_bavail.saturating_mul(s.f_frsize))
}

/// An identifier of the filesystem (device) holding `path`, to add up space needs per filesystem.
pub fn filesystem_id(path: &Path) -> io::Result<u64> {
    #[cfg(unix)]
    {
        use std::os::unix::fs::MetadataExt;
        Ok(std::fs::metadata(path)?.dev())
    }
    #[cfg(not(unix))]
    {
        let _ = path;
        Ok(0)
    }
}

/// True if `path` is a block device.
pub fn is_block_device(path: &Path) -> io::Result<bool> {
    #[cfg(unix)]
    {
        use std::os::unix::fs::FileTypeExt;
        Ok(std::fs::metadata(path)?.file_type().is_block_device())
    }
    #[cfg(not(unix))]
    {
        let _ = path;
        Ok(false)
    }
}

/// Bytes actually allocated on disk for a file (a sparse file holds fewer than its length).
pub fn allocated_bytes(path: &Path) -> io::Result<u64> {
    let meta = std::fs::metadata(path)?;
    #[cfg(unix)]
    {
        use std::os::unix::fs::MetadataExt;
        Ok(meta.blocks().saturating_mul(512))
    }
    #[cfg(not(unix))]
    {
        Ok(meta.len())
    }
}

/// Takes an advisory lock on an open file or directory without waiting: exclusive, or shared
/// (several readers). Returns false if another open file holds a conflicting lock. The lock lives
/// as long as `f` is open, and the OS drops it when the process dies (even on kill -9).
pub fn try_lock(f: &File, exclusive: bool) -> io::Result<bool> {
    #[cfg(unix)]
    {
        use rustix::fs::{flock, FlockOperation};
        let op = if exclusive {
            FlockOperation::NonBlockingLockExclusive
        } else {
            FlockOperation::NonBlockingLockShared
        };
        match flock(f, op) {
            Ok(()) => Ok(true),
            Err(e) if e == rustix::io::Errno::WOULDBLOCK => Ok(false),
            Err(e) => Err(io::Error::from(e)),
        }
    }
    #[cfg(not(unix))]
    {
        let _ = (f, exclusive);
        Ok(true)
    }
}

/// The process holding a `flock` on `path`, where the OS tells (Linux: /proc/locks).
pub fn lock_holder(path: &Path) -> Option<u32> {
    #[cfg(target_os = "linux")]
    {
        use std::os::unix::fs::MetadataExt;
        let meta = std::fs::metadata(path).ok()?;
        let dev = meta.dev();
        let id = format!(
            "{:02x}:{:02x}:{}",
            rustix::fs::major(dev),
            rustix::fs::minor(dev),
            meta.ino()
        );
        let text = std::fs::read_to_string("/proc/locks").ok()?;
        parse_lock_holder(&text, &id, std::process::id())
    }
    #[cfg(not(target_os = "linux"))]
    {
        let _ = path;
        None
    }
}

/// The PID of a FLOCK in `/proc/locks` text on the file `id` ("maj:min:inode", as the kernel
/// prints it), other than `own_pid`.
#[cfg_attr(not(target_os = "linux"), allow(dead_code))]
fn parse_lock_holder(text: &str, id: &str, own_pid: u32) -> Option<u32> {
    text.lines().find_map(|line| {
        // "1: FLOCK  ADVISORY  WRITE 12345 fd:00:1234567 0 EOF" (blocked waiters have "->").
        let f: Vec<&str> = line.split_whitespace().collect();
        if f.get(1) != Some(&"FLOCK") || f.get(5) != Some(&id) {
            return None;
        }
        let pid: u32 = f.get(4)?.parse().ok()?;
        (pid != own_pid).then_some(pid)
    })
}

/// Size of a file or block device.
pub fn file_size(f: &File) -> io::Result<u64> {
    use std::io::{Seek, SeekFrom};
    let meta = f.metadata()?;
    if meta.is_file() {
        return Ok(meta.len());
    }
    // Block devices report 0 in metadata; seeking to the end gives their size.
    let mut f = f;
    let end = f.seek(SeekFrom::End(0))?;
    Ok(end)
}

/// Positional read of exactly `buf.len()` bytes.
pub fn read_exact_at(f: &File, buf: &mut [u8], offset: u64) -> io::Result<()> {
    #[cfg(unix)]
    {
        use std::os::unix::fs::FileExt;
        f.read_exact_at(buf, offset)
    }
    #[cfg(windows)]
    {
        use std::os::windows::fs::FileExt;
        let mut done = 0;
        while done < buf.len() {
            let n = f.seek_read(&mut buf[done..], offset + done as u64)?;
            if n == 0 {
                return Err(io::ErrorKind::UnexpectedEof.into());
            }
            done += n;
        }
        Ok(())
    }
}

/// Positional read; returns the bytes read (may be short).
pub fn read_at(f: &File, buf: &mut [u8], offset: u64) -> io::Result<usize> {
    #[cfg(unix)]
    {
        use std::os::unix::fs::FileExt;
        f.read_at(buf, offset)
    }
    #[cfg(windows)]
    {
        use std::os::windows::fs::FileExt;
        f.seek_read(buf, offset)
    }
}

/// Positional write; returns the bytes written (may be short).
pub fn write_at(f: &File, buf: &[u8], offset: u64) -> io::Result<usize> {
    #[cfg(unix)]
    {
        use std::os::unix::fs::FileExt;
        f.write_at(buf, offset)
    }
    #[cfg(windows)]
    {
        use std::os::windows::fs::FileExt;
        f.seek_write(buf, offset)
    }
}

/// Positional write of all of `buf`.
pub fn write_all_at(f: &File, buf: &[u8], offset: u64) -> io::Result<()> {
    #[cfg(unix)]
    {
        use std::os::unix::fs::FileExt;
        f.write_all_at(buf, offset)
    }
    #[cfg(windows)]
    {
        let mut done = 0;
        while done < buf.len() {
            let n = write_at(f, &buf[done..], offset + done as u64)?;
            if n == 0 {
                return Err(io::ErrorKind::WriteZero.into());
            }
            done += n;
        }
        Ok(())
    }
}

/// CPU time used by this process so far: (user, system) seconds.
pub fn cpu_times() -> (f64, f64) {
    #[cfg(unix)]
    {
        // SAFETY: getrusage writes a plain-old-data struct we own; RUSAGE_SELF is always valid.
        #[allow(unsafe_code)]
        let usage = unsafe {
            let mut u: libc::rusage = std::mem::zeroed();
            if libc::getrusage(libc::RUSAGE_SELF, &mut u) != 0 {
                return (0.0, 0.0);
            }
            u
        };
        let secs = |t: libc::timeval| t.tv_sec as f64 + t.tv_usec as f64 / 1e6;
        (secs(usage.ru_utime), secs(usage.ru_stime))
    }
    #[cfg(not(unix))]
    {
        (0.0, 0.0)
    }
}

/// Cumulative (busy, total) CPU ticks of the whole system, where the OS exposes them.
pub fn system_cpu_ticks() -> Option<(u64, u64)> {
    #[cfg(target_os = "linux")]
    {
        let text = std::fs::read_to_string("/proc/stat").ok()?;
        let line = text.lines().next()?;
        let v: Vec<u64> = line
            .split_whitespace()
            .skip(1)
            .filter_map(|x| x.parse().ok())
            .collect();
        let total: u64 = v.iter().sum();
        // idle + iowait are not busy.
        let idle = v.get(3).copied().unwrap_or(0) + v.get(4).copied().unwrap_or(0);
        Some((total - idle, total))
    }
    #[cfg(not(target_os = "linux"))]
    {
        None
    }
}

/// Memory available for new work, bytes, where the OS exposes it.
pub fn available_memory_bytes() -> Option<u64> {
    #[cfg(target_os = "linux")]
    {
        let text = std::fs::read_to_string("/proc/meminfo").ok()?;
        let line = text.lines().find(|l| l.starts_with("MemAvailable:"))?;
        let kb: u64 = line.split_whitespace().nth(1)?.parse().ok()?;
        Some(kb * 1024)
    }
    #[cfg(not(target_os = "linux"))]
    {
        None
    }
}

/// Peak resident memory of this process so far, bytes, where the OS exposes it.
pub fn peak_resident_memory_bytes() -> Option<u64> {
    #[cfg(target_os = "linux")]
    {
        let text = std::fs::read_to_string("/proc/self/status").ok()?;
        let line = text.lines().find(|l| l.starts_with("VmHWM:"))?;
        let kb: u64 = line.split_whitespace().nth(1)?.parse().ok()?;
        Some(kb * 1024)
    }
    #[cfg(not(target_os = "linux"))]
    {
        None
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lock_holder_is_parsed_from_proc_locks() {
        let text = "1: POSIX  ADVISORY  WRITE 999 fd:00:42 0 EOF\n\
                    2: FLOCK  ADVISORY  WRITE 4242 fd:00:1234567 0 EOF\n\
                    3: FLOCK  ADVISORY  WRITE 77 fd:00:42 0 EOF\n";
        assert_eq!(parse_lock_holder(text, "fd:00:1234567", 1), Some(4242));
        assert_eq!(parse_lock_holder(text, "fd:00:42", 1), Some(77));
        assert_eq!(parse_lock_holder(text, "fd:00:42", 77), None);
        assert_eq!(parse_lock_holder(text, "fd:00:5", 1), None);
    }

    #[test]
    fn locks_exclude_each_other_and_name_the_holder() {
        let dir = tempfile::tempdir().expect("tempdir");
        let path = dir.path().join("f");
        std::fs::write(&path, b"x").expect("write");
        let a = File::open(&path).expect("open a");
        let b = File::open(&path).expect("open b");
        assert!(try_lock(&a, true).expect("lock a"));
        assert!(!try_lock(&b, true).expect("lock b"));
        assert!(!try_lock(&b, false).expect("shared b"));
        drop(a);
        assert!(try_lock(&b, false).expect("shared b after a closed"));
        let c = File::open(&path).expect("open c");
        assert!(try_lock(&c, false).expect("second shared"));
    }

    #[test]
    fn free_space_and_cpu() {
        let dir = std::env::temp_dir();
        assert!(free_space(&dir).expect("statvfs") > 0);
        assert!(!is_block_device(&dir).expect("stat"));
        let mut x = 0u64;
        for i in 0..5_000_000u64 {
            x = x.wrapping_mul(31).wrapping_add(i);
        }
        std::hint::black_box(x);
        let (u, s) = cpu_times();
        assert!(u + s > 0.0);
    }
}
