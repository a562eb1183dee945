//! The operating-system specific pieces, behind portable functions: Linux (and other Unix), and
//! Windows (`platform/windows.rs`, Win32 through `windows-sys`).

use std::fs::File;
use std::io;
use std::path::{Path, PathBuf};

#[cfg(windows)]
mod windows;

/// How direct (unbuffered) I/O is named on this OS, for messages: `O_DIRECT`, or on Windows the
/// flag that gives it, `NO_BUFFERING`.
pub const DIRECT_IO_NAME: &str = if cfg!(windows) {
    "NO_BUFFERING"
} else {
    "O_DIRECT"
};

/// Bytes available to unprivileged users on the filesystem holding `path` (Windows: to the
/// caller, per quota, on the volume of `path` or of its nearest existing folder).
pub fn free_space(path: &Path) -> io::Result<u64> {
    #[cfg(unix)]
    {
        let s = rustix::fs::statvfs(path).map_err(io::Error::from)?;
        Ok(s.f_bavail.saturating_mul(s.f_frsize))
    }
    #[cfg(windows)]
    {
        windows::free_space(path)
    }
}

/// An identifier of the filesystem (device) holding `path`, to add up space needs per filesystem.
pub fn filesystem_id(path: &Path) -> io::Result<u64> {
    #[cfg(unix)]
    {
        use std::os::unix::fs::MetadataExt;
        Ok(std::fs::metadata(path)?.dev())
    }
    #[cfg(windows)]
    {
        windows::filesystem_id(path)
    }
}

/// True if `path` is a block device (Windows: a raw disk or volume in the device namespace,
/// `\\.\PhysicalDrive1`, `\\.\E:`).
pub fn is_block_device(path: &Path) -> io::Result<bool> {
    #[cfg(unix)]
    {
        use std::os::unix::fs::FileTypeExt;
        Ok(std::fs::metadata(path)?.file_type().is_block_device())
    }
    #[cfg(windows)]
    {
        if windows::is_device_path(path) {
            return Ok(true);
        }
        // A missing path is an error, as on Unix.
        std::fs::metadata(path).map(|_| false)
    }
}

/// Bytes actually allocated on disk for a file (a sparse file holds fewer than its length).
pub fn allocated_bytes(path: &Path) -> io::Result<u64> {
    #[cfg(unix)]
    {
        use std::os::unix::fs::MetadataExt;
        Ok(std::fs::metadata(path)?.blocks().saturating_mul(512))
    }
    #[cfg(windows)]
    {
        windows::allocated_bytes(path)
    }
}

/// Takes an advisory lock on an open file or directory without waiting: exclusive, or shared
/// (several readers). Returns false if another open file holds a conflicting lock. The lock lives
/// as long as `f` is open, and the OS drops it when the process dies (even on kill -9).
/// Windows: `LockFileEx` on one byte far past the end of the file (locked bytes cannot be read or
/// written through other handles there, so the data itself is never locked); directories cannot
/// be byte-range locked on Windows, so a directory's lock always succeeds there.
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
    #[cfg(windows)]
    {
        if f.metadata()?.is_dir() {
            return Ok(true);
        }
        windows::try_lock(f, exclusive)
    }
}

/// Runs `f` when the console window is closed, or the user logs off or the system shuts down
/// (Windows: a `SetConsoleCtrlHandler` handler that then holds the process up to 4.5 s, of the 5 s
/// Windows allows, so the work can stop cleanly and write its results; Ctrl-C and Ctrl-Break are
/// left to the other handlers). Returns false where there is nothing to do (elsewhere: SIGHUP
/// and SIGTERM are signals) or a callback was already registered.
pub fn on_console_close(f: impl Fn() + Send + Sync + 'static) -> io::Result<bool> {
    #[cfg(windows)]
    {
        windows::on_console_close(Box::new(f))
    }
    #[cfg(not(windows))]
    {
        let _ = f;
        Ok(false)
    }
}

/// Opens a directory for reading, to hold a lock on it ([`try_lock`]): Windows opens folders only
/// with FILE_FLAG_BACKUP_SEMANTICS.
pub fn open_dir(path: &Path) -> io::Result<File> {
    #[cfg(windows)]
    {
        use std::os::windows::fs::OpenOptionsExt;
        use windows_sys::Win32::Storage::FileSystem::FILE_FLAG_BACKUP_SEMANTICS;
        std::fs::OpenOptions::new()
            .read(true)
            .custom_flags(FILE_FLAG_BACKUP_SEMANTICS)
            .open(path)
    }
    #[cfg(not(windows))]
    {
        File::open(path)
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
        let own = std::process::id();
        parse_lock_holder(&text, &id, own).or_else(|| {
            // Some filesystems (overlayfs directories among them) print a device and inode in
            // /proc/locks that differ from what stat returns: then the holder is the process
            // holding a lock that has the path open.
            let path = std::fs::canonicalize(path).ok()?;
            holder_with_open_fd(&flock_pids(&text, own), &path)
        })
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

/// The PIDs (other than `own_pid`, each once, at most 256) holding a FLOCK in `/proc/locks` text.
#[cfg_attr(not(target_os = "linux"), allow(dead_code))]
fn flock_pids(text: &str, own_pid: u32) -> Vec<u32> {
    let mut pids = Vec::new();
    for line in text.lines() {
        let f: Vec<&str> = line.split_whitespace().collect();
        if f.get(1) != Some(&"FLOCK") {
            continue;
        }
        if let Some(pid) = f.get(4).and_then(|p| p.parse::<u32>().ok()) {
            if pid != own_pid && !pids.contains(&pid) && pids.len() < 256 {
                pids.push(pid);
            }
        }
    }
    pids
}

/// The first of `pids` with a file descriptor open on `path` (canonical), from /proc/PID/fd.
#[cfg(target_os = "linux")]
fn holder_with_open_fd(pids: &[u32], path: &Path) -> Option<u32> {
    pids.iter().copied().find(|pid| {
        std::fs::read_dir(format!("/proc/{pid}/fd")).is_ok_and(|fds| {
            fds.take(65_536)
                .filter_map(Result::ok)
                .any(|fd| std::fs::read_link(fd.path()).is_ok_and(|t| t == path))
        })
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

/// Preallocates `len` bytes at `offset` of a file, extending it if that range ends past its end:
/// `fallocate` mode 0 on Linux (blocks reserved, reads as zeros); elsewhere the file is only
/// extended (`set_len`) when it is shorter, which reserves no blocks.
pub fn allocate(f: &File, offset: u64, len: u64) -> io::Result<()> {
    let end = offset
        .checked_add(len)
        .ok_or_else(|| io::Error::new(io::ErrorKind::InvalidInput, "offset + length overflows"))?;
    #[cfg(target_os = "linux")]
    {
        let _ = end;
        rustix::fs::fallocate(f, rustix::fs::FallocateFlags::empty(), offset, len)
            .map_err(io::Error::from)
    }
    #[cfg(not(target_os = "linux"))]
    {
        if f.metadata()?.len() < end {
            f.set_len(end)?;
        }
        Ok(())
    }
}

/// CPU time (user + system) of the calling thread, from /proc on Linux (10 ms resolution),
/// `GetThreadTimes` on Windows; `None` elsewhere. Tests that must not depend on other processes'
/// load measure with it.
pub fn thread_cpu_time() -> Option<std::time::Duration> {
    #[cfg(windows)]
    return windows::thread_cpu_time();
    #[cfg(not(windows))]
    thread_cpu_time_proc()
}

#[cfg(not(windows))]
fn thread_cpu_time_proc() -> Option<std::time::Duration> {
    mbx_core::procfs::thread_cpu_time()
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
    #[cfg(windows)]
    {
        windows::cpu_times()
    }
}

/// Cumulative (busy, total) CPU ticks of the whole system, where the OS exposes them.
pub fn system_cpu_ticks() -> Option<(u64, u64)> {
    #[cfg(target_os = "linux")]
    {
        // mbx-core's reader: guest time is in user and nice already, never counted twice.
        let c = mbx_core::procfs::system_cpu()?;
        Some((c.busy(), c.total))
    }
    #[cfg(windows)]
    {
        windows::system_cpu_ticks()
    }
    #[cfg(not(any(target_os = "linux", windows)))]
    {
        None
    }
}

/// Memory available for new work, bytes, where the OS exposes it. A reported 0 is taken as
/// unknown: Wine in some containers answers `GlobalMemoryStatusEx` with no available memory,
/// and no machine running this code has none.
pub fn available_memory_bytes() -> Option<u64> {
    os_available_memory_bytes().filter(|&b| b > 0)
}

fn os_available_memory_bytes() -> Option<u64> {
    #[cfg(target_os = "linux")]
    {
        mbx_core::procfs::meminfo_bytes("MemAvailable")
    }
    #[cfg(windows)]
    {
        windows::available_memory_bytes()
    }
    #[cfg(not(any(target_os = "linux", windows)))]
    {
        None
    }
}

/// Peak resident memory of this process so far, bytes, where the OS exposes it.
pub fn peak_resident_memory_bytes() -> Option<u64> {
    #[cfg(target_os = "linux")]
    {
        mbx_core::procfs::self_status_bytes("VmHWM")
    }
    #[cfg(windows)]
    {
        windows::peak_resident_memory_bytes()
    }
    #[cfg(not(any(target_os = "linux", windows)))]
    {
        None
    }
}

// ---------------------------------------------------------------------------------------------
// Block devices in use.
//
// Writing a device that holds a mounted filesystem (or swap, or an LVM/RAID member) destroys it,
// so `--allow-device` and `iobench --force` accept unused devices only. On Linux the kernel is
// the authority: an open with O_EXCL fails with EBUSY while the device or one of its partitions
// is mounted, used as swap or claimed by device mapper or md. The checks before it (mountinfo,
// /proc/swaps, sysfs holders) exist to name what uses the device in the message.

/// What uses a block device, so that it must not be written.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum DeviceUse {
    /// The device, or one of its partitions, holds a mounted filesystem.
    Mounted {
        /// The mounted partition, or `None` if the device itself is mounted.
        partition: Option<PathBuf>,
        /// Where it is mounted.
        mount_point: String,
        /// The filesystem type (ext4, xfs...).
        fstype: String,
    },
    /// The device, or one of its partitions, is active swap.
    Swap {
        /// The partition used as swap, or `None` for the device itself.
        partition: Option<PathBuf>,
    },
    /// Other block devices are stacked on it (device mapper, LVM, software RAID).
    Held {
        /// The partition that is held, or `None` for the device itself.
        partition: Option<PathBuf>,
        /// The holders' kernel names (dm-0, md127).
        holders: Vec<String>,
    },
    /// The kernel refused an exclusive open (EBUSY): another program claimed it.
    Busy,
}

impl std::fmt::Display for DeviceUse {
    /// Completes "`<device>` is ...", with the fix.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let whose = |p: &Option<PathBuf>| match p {
            Some(p) => format!("in use: its partition {} is ", p.display()),
            None => String::new(),
        };
        match self {
            DeviceUse::Mounted {
                partition,
                mount_point,
                fstype,
            } => write!(
                f,
                "{}mounted at {mount_point} ({fstype}); unmount it first",
                whose(partition)
            ),
            DeviceUse::Swap { partition } => {
                write!(f, "{}used as swap; swapoff it first", whose(partition))
            }
            DeviceUse::Held { partition, holders } => write!(
                f,
                "{}held by {} (device mapper, LVM or RAID); remove those first",
                whose(partition),
                holders.join(", ")
            ),
            DeviceUse::Busy => write!(
                f,
                "in use: another program has it open exclusively (EBUSY); stop that program first"
            ),
        }
    }
}

/// An exclusive claim on a block device. While it is held, the kernel refuses to mount the
/// device or any of its partitions, or to use it for swap, LVM or RAID; our own non-exclusive
/// opens (the I/O queues) still work. Dropping it releases the device.
#[derive(Debug)]
pub struct DeviceClaim {
    #[cfg_attr(not(target_os = "linux"), allow(dead_code))]
    rdev: u64,
    /// `None` where the process already holds the device (see [`DeviceClaim::hold_for_process`])
    /// or the OS has no exclusive open.
    _file: Option<File>,
}

/// Claims kept until the process exits.
static HELD: std::sync::Mutex<Vec<DeviceClaim>> = std::sync::Mutex::new(Vec::new());

impl DeviceClaim {
    /// Keeps the claim until the process exits, so that a device checked while planning stays
    /// unmountable through the writing that follows, without threading the claim through every
    /// layer. Later checks of the same device in this process ([`claim_device`],
    /// [`device_in_use`]) know it is ours.
    pub fn hold_for_process(self) {
        if self._file.is_none() {
            return;
        }
        let mut held = HELD.lock().unwrap_or_else(|e| e.into_inner());
        held.push(self);
    }
}

#[cfg(target_os = "linux")]
fn held_by_process(rdev: u64) -> bool {
    HELD.lock()
        .unwrap_or_else(|e| e.into_inner())
        .iter()
        .any(|c| c.rdev == rdev)
}

/// The outcome of [`claim_device`].
#[derive(Debug)]
pub enum DeviceStatus {
    /// The path is not a block device (a regular file, or missing): nothing to claim.
    NotADevice,
    /// An unused block device, now claimed exclusively.
    Unused(DeviceClaim),
    /// A block device that something uses; it must not be written.
    InUse(DeviceUse),
}

/// Checks whether the block device at `path` is in use (mounted itself or through a partition,
/// swap, holders, or an exclusive open by another program) and, if not, claims it exclusively.
/// A device already claimed by this process counts as unused. On systems without these
/// facilities a block device is reported unused (and the claim holds nothing).
pub fn claim_device(path: &Path) -> io::Result<DeviceStatus> {
    #[cfg(target_os = "linux")]
    {
        linux_device::claim(path)
    }
    #[cfg(windows)]
    {
        windows::claim(path)
    }
    #[cfg(not(any(target_os = "linux", windows)))]
    {
        if !is_block_device(path)? {
            return Ok(DeviceStatus::NotADevice);
        }
        Ok(DeviceStatus::Unused(DeviceClaim {
            rdev: 0,
            _file: None,
        }))
    }
}

/// What uses the block device at `path`, or `None` if it is unused, or not a block device, or
/// the OS cannot tell. Checks like [`claim_device`] and releases the claim at once.
pub fn device_in_use(path: &Path) -> io::Result<Option<DeviceUse>> {
    Ok(match claim_device(path)? {
        DeviceStatus::InUse(u) => Some(u),
        DeviceStatus::NotADevice | DeviceStatus::Unused(_) => None,
    })
}

#[cfg(target_os = "linux")]
mod linux_device {
    use super::{
        held_by_process, parse_mountinfo, parse_swaps, DeviceClaim, DeviceStatus, DeviceUse,
    };
    use std::fs::OpenOptions;
    use std::io;
    use std::os::unix::fs::{FileTypeExt, MetadataExt, OpenOptionsExt};
    use std::path::{Path, PathBuf};

    type DevNum = (u32, u32);

    /// The device, or one of its partitions: its numbers, its /dev name (partitions only) and its
    /// sysfs directory.
    struct Member {
        dev: DevNum,
        partition: Option<PathBuf>,
        sysfs: PathBuf,
    }

    pub(super) fn claim(path: &Path) -> io::Result<DeviceStatus> {
        let meta = std::fs::metadata(path)?;
        if !meta.file_type().is_block_device() {
            return Ok(DeviceStatus::NotADevice);
        }
        let rdev = meta.rdev();
        let dev = (rustix::fs::major(rdev), rustix::fs::minor(rdev));
        let members = members(dev);
        if let Some(u) = find_use(&members) {
            return Ok(DeviceStatus::InUse(u));
        }
        if held_by_process(rdev) {
            return Ok(DeviceStatus::Unused(DeviceClaim { rdev, _file: None }));
        }
        // O_EXCL without O_CREAT on a block device: an exclusive claim, EBUSY if mounted/held.
        match OpenOptions::new()
            .read(true)
            .custom_flags(libc::O_EXCL)
            .open(path)
        {
            Ok(f) => Ok(DeviceStatus::Unused(DeviceClaim {
                rdev,
                _file: Some(f),
            })),
            Err(e) if e.raw_os_error() == Some(libc::EBUSY) => {
                // Mounted in the meantime, or claimed by something the files do not show.
                Ok(DeviceStatus::InUse(
                    find_use(&members).unwrap_or(DeviceUse::Busy),
                ))
            }
            Err(e) => Err(e),
        }
    }

    fn read_dev(path: &Path) -> Option<DevNum> {
        let text = std::fs::read_to_string(path).ok()?;
        let (major, minor) = text.trim().split_once(':')?;
        Some((major.parse().ok()?, minor.parse().ok()?))
    }

    fn dev_of(path: &Path) -> Option<DevNum> {
        let meta = std::fs::metadata(path).ok()?;
        meta.file_type().is_block_device().then(|| {
            (
                rustix::fs::major(meta.rdev()),
                rustix::fs::minor(meta.rdev()),
            )
        })
    }

    /// The device and its partitions (sysfs children with a `partition` file).
    fn members(dev: DevNum) -> Vec<Member> {
        let sysfs = PathBuf::from(format!("/sys/dev/block/{}:{}", dev.0, dev.1));
        let mut parts: Vec<Member> = std::fs::read_dir(&sysfs)
            .map(|rd| {
                rd.flatten()
                    .filter(|e| e.path().join("partition").is_file())
                    .filter_map(|e| {
                        let dir = e.path();
                        Some(Member {
                            dev: read_dev(&dir.join("dev"))?,
                            partition: Some(Path::new("/dev").join(e.file_name())),
                            sysfs: dir,
                        })
                    })
                    .collect()
            })
            .unwrap_or_default();
        parts.sort_by(|a, b| a.partition.cmp(&b.partition));
        let mut all = vec![Member {
            dev,
            partition: None,
            sysfs,
        }];
        all.extend(parts);
        all
    }

    /// Mounts, swap and holders of the device or its partitions. Unreadable sources are
    /// skipped: the exclusive open that follows is the authority, these only name the user.
    fn find_use(members: &[Member]) -> Option<DeviceUse> {
        let member = |dev: DevNum| members.iter().find(|m| m.dev == dev);
        if let Ok(text) = std::fs::read_to_string("/proc/self/mountinfo") {
            for m in parse_mountinfo(&text) {
                // Compare numbers; btrfs shows an anonymous 0:N there, so also the source device.
                let hit = member(m.dev).or_else(|| {
                    m.source
                        .starts_with("/dev/")
                        .then(|| dev_of(Path::new(&m.source)))
                        .flatten()
                        .and_then(member)
                });
                if let Some(hit) = hit {
                    return Some(DeviceUse::Mounted {
                        partition: hit.partition.clone(),
                        mount_point: m.mount_point,
                        fstype: m.fstype,
                    });
                }
            }
        }
        if let Ok(text) = std::fs::read_to_string("/proc/swaps") {
            for name in parse_swaps(&text) {
                if let Some(hit) = dev_of(Path::new(&name)).and_then(member) {
                    return Some(DeviceUse::Swap {
                        partition: hit.partition.clone(),
                    });
                }
            }
        }
        for m in members {
            let mut holders: Vec<String> = std::fs::read_dir(m.sysfs.join("holders"))
                .map(|rd| {
                    rd.flatten()
                        .map(|e| e.file_name().to_string_lossy().into_owned())
                        .collect()
                })
                .unwrap_or_default();
            if !holders.is_empty() {
                holders.sort();
                return Some(DeviceUse::Held {
                    partition: m.partition.clone(),
                    holders,
                });
            }
        }
        None
    }
}

/// The volume a path is on: the mount point of the filesystem holding it (the longest mount
/// point that is a prefix of the path, symlinks resolved as far as the path exists), or the path
/// itself for a block device (Windows: the volume path, `E:\\` or a mounted folder). `None`
/// where mounts cannot be read (other platforms).
pub fn volume_of(path: &Path) -> Option<String> {
    if is_block_device(path).unwrap_or(false) {
        return Some(path.display().to_string());
    }
    #[cfg(target_os = "linux")]
    {
        // Resolve what exists: a file not created yet lives where its folder does.
        let mut probe = path.to_path_buf();
        let resolved = loop {
            if let Ok(p) = std::fs::canonicalize(&probe) {
                break p;
            }
            if !probe.pop() {
                break path.to_path_buf();
            }
        };
        let text = std::fs::read_to_string("/proc/self/mountinfo").ok()?;
        longest_mount_prefix(
            &resolved,
            parse_mountinfo(&text)
                .iter()
                .map(|m| m.mount_point.as_str()),
        )
    }
    #[cfg(windows)]
    {
        windows::volume_path(path).ok()
    }
    #[cfg(not(any(target_os = "linux", windows)))]
    {
        None
    }
}

/// The longest of `mount_points` that is `path` or one of its ancestors.
#[cfg(any(target_os = "linux", test))]
fn longest_mount_prefix<'a>(
    path: &Path,
    mount_points: impl Iterator<Item = &'a str>,
) -> Option<String> {
    mount_points
        .filter(|m| path.starts_with(m))
        .max_by_key(|m| m.len())
        .map(str::to_string)
}

/// One line of /proc/self/mountinfo, the fields we use.
#[cfg(any(target_os = "linux", test))]
#[derive(Debug, Clone, PartialEq, Eq)]
struct MountEntry {
    /// Field 3, major:minor of the mounted device.
    dev: (u32, u32),
    /// Field 5, unescaped.
    mount_point: String,
    /// First field after the " - " separator.
    fstype: String,
    /// Second field after the separator (the device path for disk filesystems).
    source: String,
}

/// Parses /proc/self/mountinfo (proc(5)): `36 35 98:0 /mnt1 /mnt2 rw,noatime master:1 - ext3
/// /dev/root rw`. Optional fields vary in number, so the filesystem type and source are found
/// after the lone `-`. Malformed lines are skipped.
#[cfg(any(target_os = "linux", test))]
fn parse_mountinfo(text: &str) -> Vec<MountEntry> {
    text.lines()
        .filter_map(|line| {
            let fields: Vec<&str> = line.split(' ').collect();
            let (major, minor) = fields.get(2)?.split_once(':')?;
            let sep = fields.iter().skip(6).position(|f| *f == "-")? + 6;
            Some(MountEntry {
                dev: (major.parse().ok()?, minor.parse().ok()?),
                mount_point: unescape_octal(fields.get(4)?),
                fstype: unescape_octal(fields.get(sep + 1)?),
                source: unescape_octal(fields.get(sep + 2)?),
            })
        })
        .collect()
}

/// The file names of /proc/swaps (the header line is skipped).
#[cfg(any(target_os = "linux", test))]
fn parse_swaps(text: &str) -> Vec<String> {
    text.lines()
        .skip(1)
        .filter_map(|l| l.split_whitespace().next())
        .map(unescape_octal)
        .collect()
}

/// Undoes the kernel's escaping of space, tab, newline and backslash as `\040`, `\011`, `\012`,
/// `\134` in mount tables.
#[cfg(any(target_os = "linux", test))]
fn unescape_octal(s: &str) -> String {
    let b = s.as_bytes();
    let mut out = Vec::with_capacity(b.len());
    let mut i = 0;
    while i < b.len() {
        let digits = b.get(i + 1..i + 4);
        let code = digits
            .filter(|d| b[i] == b'\\' && d.iter().all(|c| (b'0'..=b'7').contains(c)))
            .map(|d| d.iter().fold(0u32, |acc, c| acc * 8 + u32::from(c - b'0')))
            .and_then(|v| u8::try_from(v).ok());
        match code {
            Some(c) => {
                out.push(c);
                i += 4;
            }
            None => {
                out.push(b[i]);
                i += 1;
            }
        }
    }
    String::from_utf8_lossy(&out).into_owned()
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
    fn flock_holders_are_listed_once_without_our_own() {
        let text = "1: POSIX  ADVISORY  WRITE 999 fd:00:42 0 EOF\n\
                    2: FLOCK  ADVISORY  WRITE 4242 fd:00:1234567 0 EOF\n\
                    3: FLOCK  ADVISORY  READ 4242 00:2f:7 0 EOF\n\
                    4: FLOCK  ADVISORY  WRITE 77 fd:00:42 0 EOF\n\
                    5: FLOCK  ADVISORY  WRITE 1 fd:00:43 0 EOF\n";
        assert_eq!(flock_pids(text, 1), vec![4242, 77]);
    }

    /// The fallback when /proc/locks names another device or inode (overlayfs directories):
    /// the process with the path open is found through /proc/PID/fd.
    #[cfg(target_os = "linux")]
    #[test]
    fn a_holder_is_found_by_its_open_descriptor() {
        let dir = tempfile::tempdir().expect("tempdir");
        let sub = dir.path().join("logs");
        std::fs::create_dir(&sub).expect("mkdir");
        let canonical = std::fs::canonicalize(&sub).expect("canonical");
        let me = std::process::id();
        assert_eq!(holder_with_open_fd(&[me], &canonical), None);
        let _held = open_dir(&sub).expect("open");
        assert_eq!(holder_with_open_fd(&[me], &canonical), Some(me));
        assert_eq!(holder_with_open_fd(&[], &canonical), None);
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
    fn the_volume_is_the_longest_mount_point_above_the_path() {
        let mounts = ["/", "/mnt", "/mnt/e", "/mnt/e2"];
        let v = |p: &str| super::longest_mount_prefix(Path::new(p), mounts.iter().copied());
        assert_eq!(v("/mnt/e/db/x.edb").as_deref(), Some("/mnt/e"));
        assert_eq!(v("/mnt/e2/logs").as_deref(), Some("/mnt/e2"));
        assert_eq!(v("/mnt/ex/logs").as_deref(), Some("/mnt"));
        assert_eq!(v("/srv/db").as_deref(), Some("/"));
    }

    #[test]
    fn mountinfo_lines_are_parsed_with_escapes_and_optional_fields() {
        let text = "\
22 1 254:0 / / rw,relatime shared:1 - ext4 /dev/vda rw
36 35 98:0 /mnt1 /mnt2 rw,noatime master:1 - ext3 /dev/root rw,errors=continue
42 27 259:0 / /tmp/my\\040disk\\011x rw,relatime - ext4 /dev/loop0p1 rw
43 27 7:3 / /mnt/back\\134slash rw shared:5 master:2 propagate_from:1 - xfs /dev/loop3 rw
44 27 0:45 / /data rw - btrfs /dev/sdb1 rw,space_cache=v2
garbage line
45 27 0:5 / /dev rw - devtmpfs devtmpfs rw,size=1k
";
        let m = parse_mountinfo(text);
        assert_eq!(m.len(), 6, "{m:?}");
        assert_eq!(m[0].dev, (254, 0));
        assert_eq!(m[0].mount_point, "/");
        assert_eq!(m[1].dev, (98, 0));
        assert_eq!(m[1].mount_point, "/mnt2");
        assert_eq!(m[1].fstype, "ext3");
        assert_eq!(m[1].source, "/dev/root");
        assert_eq!(m[2].dev, (259, 0));
        assert_eq!(m[2].mount_point, "/tmp/my disk\tx");
        assert_eq!(m[2].source, "/dev/loop0p1");
        // Three optional fields before the separator.
        assert_eq!(m[3].dev, (7, 3));
        assert_eq!(m[3].mount_point, "/mnt/back\\slash");
        assert_eq!(m[3].fstype, "xfs");
        assert_eq!(m[4].fstype, "btrfs");
        assert_eq!(m[4].source, "/dev/sdb1");
        assert_eq!(m[5].source, "devtmpfs");
        // Not octal, or out of range: kept as written.
        assert_eq!(unescape_octal("a\\09b\\400\\"), "a\\09b\\400\\");
    }

    #[test]
    fn swaps_file_names() {
        let text = "Filename\t\t\t\tType\t\tSize\t\tUsed\t\tPriority\n\
                    /dev/zram0                              partition\t8388604\t\t0\t\t100\n\
                    /swap\\040file                           file\t\t1048572\t\t0\t\t-2\n";
        assert_eq!(parse_swaps(text), vec!["/dev/zram0", "/swap file"]);
    }

    #[test]
    fn regular_files_are_not_devices() {
        let dir = std::env::temp_dir();
        assert!(matches!(
            claim_device(&dir).expect("stat"),
            DeviceStatus::NotADevice
        ));
        assert_eq!(device_in_use(&dir).expect("stat"), None);
        assert!(claim_device(&dir.join("mbx-no-such-file-here")).is_err());
    }

    #[test]
    fn device_use_messages_name_the_partition_and_the_fix() {
        let u = DeviceUse::Mounted {
            partition: Some(PathBuf::from("/dev/loop3p1")),
            mount_point: "/mnt/x".into(),
            fstype: "ext4".into(),
        };
        assert_eq!(
            u.to_string(),
            "in use: its partition /dev/loop3p1 is mounted at /mnt/x (ext4); unmount it first"
        );
        let u = DeviceUse::Held {
            partition: None,
            holders: vec!["dm-0".into(), "dm-1".into()],
        };
        assert!(u.to_string().starts_with("held by dm-0, dm-1"), "{u}");
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
