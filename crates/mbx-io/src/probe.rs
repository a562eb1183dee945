//! Facts about the storage stack and the host for `mbxstress doctor`: the block device under a
//! path (sysfs), the filesystem (mountinfo), a short write-through probe, and the host (CPU,
//! memory, hypervisor, clock). Linux reads sysfs and /proc; elsewhere every fact is `None`
//! ("unknown"), and the probe still runs (it needs only files).
//!
//! Nothing here judges: the checks (what is ok, what warns) live in the CLI's doctor.

use std::fs::File;
use std::io;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

/// What kind of block device holds a path.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum DeviceKind {
    /// A whole disk (sda, vda, nvme0n1).
    Disk,
    /// A partition of a disk (its queue settings are the disk's).
    Partition,
    /// A device-mapper volume (LVM, dm-crypt, multipath): the settings of the devices under it
    /// matter too (`slaves`).
    DeviceMapper,
    /// A software RAID (md).
    Md,
    /// A loop device over a file (`loop_backing_file`).
    Loop,
    /// A RAM disk (brd `ram*`, `zram*`): it measures memory.
    Ram,
    /// No block device: tmpfs, a network or FUSE filesystem, or not Linux.
    #[default]
    None,
}

impl DeviceKind {
    /// A short name for messages.
    pub fn name(self) -> &'static str {
        match self {
            DeviceKind::Disk => "disk",
            DeviceKind::Partition => "partition",
            DeviceKind::DeviceMapper => "device-mapper",
            DeviceKind::Md => "md RAID",
            DeviceKind::Loop => "loop device",
            DeviceKind::Ram => "RAM disk",
            DeviceKind::None => "no block device",
        }
    }
}

/// The block device under a path and its queue settings, as sysfs reports them. Every field
/// the kernel does not expose (or that is not Linux) is `None`; the default knows nothing (no
/// device, kind `None`).
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct DeviceFacts {
    /// `major:minor` of the device holding the path (the filesystem's `st_dev`, or the device
    /// itself when the path is a block device).
    pub dev: String,
    /// The kernel's name of that device (`vda1`, `dm-0`, `loop3`).
    pub name: Option<String>,
    /// The disk whose queue serves it (the parent of a partition; else `name`).
    pub disk: Option<String>,
    /// What kind of device it is.
    pub kind: DeviceKind,
    /// `queue/write_cache`: "write back" (a volatile cache the kernel flushes) or "write
    /// through".
    pub write_cache: Option<String>,
    /// `queue/fua`: the device takes Forced Unit Access writes.
    pub fua: Option<bool>,
    /// `queue/nr_requests`: requests the block layer queues per hardware queue.
    pub nr_requests: Option<u64>,
    /// `device/queue_depth` (SCSI, SATA, iSCSI): commands outstanding at the device.
    pub scsi_queue_depth: Option<u64>,
    /// `queue/rotational`.
    pub rotational: Option<bool>,
    /// `queue/discard_max_bytes` (0: no discard / TRIM / UNMAP).
    pub discard_max_bytes: Option<u64>,
    /// A partition's first sector (512-byte units).
    pub partition_start_sector: Option<u64>,
    /// The drivers from the disk up to its controller (`virtio_blk`; `sd`, `vmw_pvscsi`).
    pub drivers: Vec<String>,
    /// The devices under a device-mapper or md device.
    pub slaves: Vec<String>,
    /// A loop device's backing file.
    pub loop_backing_file: Option<String>,
    /// The queues of the disks under a device-mapper or md device (for multipath, each path).
    pub slave_queues: Vec<SlaveQueue>,
}

/// The queue of one disk under a device-mapper or md device.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SlaveQueue {
    /// Its name (`sdb`; a partition `sdb1` is read through its disk).
    pub name: String,
    /// `queue/nr_requests`.
    pub nr_requests: Option<u64>,
    /// `device/queue_depth`.
    pub scsi_queue_depth: Option<u64>,
}

/// The filesystem holding a path (/proc/self/mountinfo and statvfs).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FsFacts {
    /// Type (`ext4`, `xfs`, `tmpfs`, `nfs4`), when known.
    pub fs_type: Option<String>,
    /// Where it is mounted, when known.
    pub mount_point: Option<PathBuf>,
    /// The mount source (`/dev/vda`), when known.
    pub source: Option<String>,
    /// Mount options (`rw,relatime,discard`), when known.
    pub options: Option<String>,
    /// The filesystem's block size (allocation unit), bytes.
    pub block_size: Option<u64>,
    /// Bytes free for unprivileged users.
    pub free_bytes: Option<u64>,
}

/// The nearest existing ancestor of `p` (itself when it exists): doctor inspects locations that
/// `prepare` has not created yet through the folder they will be created in.
pub use mbx_core::path::existing_ancestor;

/// The block device under `path` (which must exist).
pub fn device_facts(path: &Path) -> io::Result<DeviceFacts> {
    #[cfg(target_os = "linux")]
    {
        linux::device_facts(path)
    }
    #[cfg(not(target_os = "linux"))]
    {
        let _ = path;
        Ok(DeviceFacts::default())
    }
}

/// The filesystem holding `path` (which must exist).
pub fn fs_facts(path: &Path) -> io::Result<FsFacts> {
    #[cfg(unix)]
    let (block_size, free_bytes) = {
        let st = rustix::fs::statvfs(path).map_err(io::Error::from)?;
        (Some(st.f_bsize), st.f_bavail.saturating_mul(st.f_frsize))
    };
    // Elsewhere (Windows) the free space only: the allocation unit is not asked for yet.
    #[cfg(not(unix))]
    let (block_size, free_bytes) = (None, crate::platform::free_space(path)?);
    #[allow(unused_mut)] // filled in on Linux
    let mut facts = FsFacts {
        fs_type: None,
        mount_point: None,
        source: None,
        options: None,
        block_size,
        free_bytes: Some(free_bytes),
    };
    #[cfg(target_os = "linux")]
    {
        if let Ok(text) = std::fs::read_to_string("/proc/self/mountinfo") {
            let canon = std::fs::canonicalize(path)?;
            let dev = linux::dev_of(path).ok();
            if let Some(m) = linux::mount_of(&text, &canon, dev.as_deref()) {
                facts.fs_type = Some(m.fs_type);
                facts.mount_point = Some(m.mount_point);
                facts.source = Some(m.source);
                facts.options = Some(m.options);
            }
        }
    }
    Ok(facts)
}

/// What the write-through probe measured.
#[derive(Debug, Clone, PartialEq)]
pub struct ProbeResult {
    /// Writes done (fewer than asked when the time budget ran out).
    pub writes: u32,
    /// Size of each write, bytes.
    pub write_bytes: usize,
    /// Whether the file was opened with O_DIRECT (false: the filesystem refused it and the
    /// probe went through the page cache, still with O_DSYNC).
    pub direct: bool,
    /// Median latency, microseconds.
    pub median_us: f64,
    /// 99th percentile latency, microseconds.
    pub p99_us: f64,
}

/// The probe's temporary file, removed when dropped (also on an error or a panic).
struct TempFile(PathBuf);

impl Drop for TempFile {
    fn drop(&mut self) {
        let _ = std::fs::remove_file(&self.0);
    }
}

/// Measures write-through writes as the log writer issues them: up to `writes` sequential 4 KiB
/// writes with O_DIRECT | O_DSYNC on Linux (O_DSYNC alone where O_DIRECT is refused; elsewhere a
/// data sync after each write) into a new temporary file in `dir` of at most a log file's size
/// (1 MiB; written once first, as a log file is preallocated, so the probe measures data writes,
/// not block allocation; more writes than it holds wrap around to its start), stopping early
/// after `budget`. The file is removed afterwards; nothing else in `dir` is touched.
pub fn write_through_probe(dir: &Path, writes: u32, budget: Duration) -> io::Result<ProbeResult> {
    const SIZE: usize = 4096;
    /// Blocks in the file: 1 MiB, a log file.
    const BLOCKS: u32 = 256;
    let writes = writes.max(1);
    let blocks = writes.min(BLOCKS);
    let path = dir.join(format!(".mbxstress-doctor-{}.tmp", std::process::id()));
    let total = SIZE.saturating_mul(blocks as usize);
    let mut f = std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .open(&path)?;
    let guard = TempFile(path);
    {
        use std::io::Write;
        f.write_all(&vec![0x5au8; total])?;
        f.sync_all()?;
    }
    drop(f);
    let (file, direct) = open_write_through(&guard.0)?;
    let mut buf = crate::AlignedBuf::zeroed(SIZE);
    buf.as_mut_slice().fill(0xa5);
    let mut lat = Vec::with_capacity(writes as usize);
    let started = Instant::now();
    for i in 0..writes {
        let offset = u64::from(i % blocks) * SIZE as u64;
        let t = Instant::now();
        crate::platform::write_all_at(&file, buf.as_slice(), offset)?;
        #[cfg(not(target_os = "linux"))]
        file.sync_data()?;
        lat.push(t.elapsed().as_secs_f64() * 1e6);
        if started.elapsed() >= budget {
            break;
        }
    }
    drop(file);
    drop(guard);
    lat.sort_by(f64::total_cmp);
    let pick = |q: f64| -> f64 {
        let last = lat.len().saturating_sub(1);
        let i = ((last as f64) * q).round() as usize;
        lat.get(i.min(last)).copied().unwrap_or(0.0)
    };
    Ok(ProbeResult {
        writes: u32::try_from(lat.len()).unwrap_or(u32::MAX),
        write_bytes: SIZE,
        direct,
        median_us: pick(0.5),
        p99_us: pick(0.99),
    })
}

/// Opens `path` for write-through writes, O_DIRECT if the filesystem takes it.
fn open_write_through(path: &Path) -> io::Result<(File, bool)> {
    #[cfg(target_os = "linux")]
    {
        use std::os::unix::fs::OpenOptionsExt;
        let open = |flags: i32| {
            std::fs::OpenOptions::new()
                .write(true)
                .custom_flags(flags)
                .open(path)
        };
        match open(libc::O_DIRECT | libc::O_DSYNC) {
            Ok(f) => Ok((f, true)),
            Err(e) if e.raw_os_error() == Some(libc::EINVAL) => Ok((open(libc::O_DSYNC)?, false)),
            Err(e) => Err(e),
        }
    }
    #[cfg(not(target_os = "linux"))]
    {
        // No O_DIRECT here: each write is followed by a data sync instead (see the loop).
        Ok((std::fs::OpenOptions::new().write(true).open(path)?, false))
    }
}

/// Facts about the host.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HostFacts {
    /// CPUs this process may use.
    pub cpus: Option<usize>,
    /// The CPU reports running under a hypervisor (/proc/cpuinfo `hypervisor` flag).
    pub hypervisor: Option<bool>,
    /// DMI system vendor (`VMware, Inc.`, `Microsoft Corporation`, `QEMU`).
    pub sys_vendor: Option<String>,
    /// DMI product name (`VMware Virtual Platform`, `Virtual Machine`).
    pub product_name: Option<String>,
    /// Physical memory, bytes.
    pub memory_total_bytes: Option<u64>,
    /// Memory available for new work, bytes.
    pub memory_available_bytes: Option<u64>,
    /// The kernel's clock is synchronized (adjtimex: not TIME_ERROR, no STA_UNSYNC).
    pub clock_synced: Option<bool>,
}

/// Facts about this host.
pub fn host_facts() -> HostFacts {
    let cpus = std::thread::available_parallelism().ok().map(|n| n.get());
    #[cfg(target_os = "linux")]
    {
        let read = |p: &str| {
            std::fs::read_to_string(p)
                .ok()
                .map(|s| s.trim().to_string())
                .filter(|s| !s.is_empty())
        };
        let hypervisor = std::fs::read_to_string("/proc/cpuinfo").ok().map(|t| {
            t.lines()
                .filter(|l| l.starts_with("flags"))
                .any(|l| l.split_whitespace().any(|f| f == "hypervisor"))
        });
        let total = std::fs::read_to_string("/proc/meminfo")
            .ok()
            .and_then(|t| linux::meminfo_kib(&t, "MemTotal:"))
            .map(|k| k.saturating_mul(1024));
        HostFacts {
            cpus,
            hypervisor,
            sys_vendor: read("/sys/class/dmi/id/sys_vendor"),
            product_name: read("/sys/class/dmi/id/product_name"),
            memory_total_bytes: total,
            memory_available_bytes: crate::platform::available_memory_bytes(),
            clock_synced: linux::clock_synced(),
        }
    }
    #[cfg(not(target_os = "linux"))]
    {
        HostFacts {
            cpus,
            hypervisor: None,
            sys_vendor: None,
            product_name: None,
            memory_total_bytes: None,
            memory_available_bytes: crate::platform::available_memory_bytes(),
            clock_synced: None,
        }
    }
}

#[cfg(target_os = "linux")]
mod linux {
    use super::{DeviceFacts, DeviceKind};
    use std::io;
    use std::path::{Path, PathBuf};

    /// `major:minor` of the device holding `path` (or of `path` itself, a block device).
    pub(super) fn dev_of(path: &Path) -> io::Result<String> {
        use std::os::unix::fs::{FileTypeExt, MetadataExt};
        let meta = std::fs::metadata(path)?;
        let dev = if meta.file_type().is_block_device() {
            meta.rdev()
        } else {
            meta.dev()
        };
        Ok(format!(
            "{}:{}",
            rustix::fs::major(dev),
            rustix::fs::minor(dev)
        ))
    }

    fn read_trim(p: &Path) -> Option<String> {
        std::fs::read_to_string(p)
            .ok()
            .map(|s| s.trim().to_string())
    }

    fn read_u64(p: &Path) -> Option<u64> {
        read_trim(p)?.parse().ok()
    }

    fn names_in(dir: &Path) -> Vec<String> {
        let mut v: Vec<String> = std::fs::read_dir(dir)
            .map(|rd| {
                rd.filter_map(|e| e.ok())
                    .map(|e| e.file_name().to_string_lossy().into_owned())
                    .collect()
            })
            .unwrap_or_default();
        v.sort();
        v
    }

    pub(super) fn device_facts(path: &Path) -> io::Result<DeviceFacts> {
        let dev = dev_of(path)?;
        let mut f = DeviceFacts {
            dev: dev.clone(),
            ..DeviceFacts::default()
        };
        let Ok(node) = std::fs::canonicalize(Path::new("/sys/dev/block").join(&dev)) else {
            // tmpfs, NFS, FUSE, overlay: an anonymous device with no sysfs entry.
            return Ok(f);
        };
        let name = node
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_default();
        let partition = node.join("partition").exists();
        let disk_node = if partition {
            node.parent().map(Path::to_path_buf).unwrap_or(node.clone())
        } else {
            node.clone()
        };
        let disk = disk_node
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_default();
        f.kind = if partition {
            DeviceKind::Partition
        } else if node.join("dm").exists() {
            DeviceKind::DeviceMapper
        } else if node.join("md").exists() {
            DeviceKind::Md
        } else if name.starts_with("loop") {
            DeviceKind::Loop
        } else if name.starts_with("zram")
            || (name.starts_with("ram") && !node.join("device").exists())
        {
            DeviceKind::Ram
        } else {
            DeviceKind::Disk
        };
        if partition {
            f.partition_start_sector = read_u64(&node.join("start"));
        }
        let q = disk_node.join("queue");
        f.write_cache = read_trim(&q.join("write_cache"));
        f.fua = read_u64(&q.join("fua")).map(|v| v != 0);
        f.nr_requests = read_u64(&q.join("nr_requests"));
        f.rotational = read_u64(&q.join("rotational")).map(|v| v != 0);
        f.discard_max_bytes = read_u64(&q.join("discard_max_bytes"));
        f.scsi_queue_depth = read_u64(&disk_node.join("device/queue_depth"));
        f.slaves = names_in(&disk_node.join("slaves"));
        f.loop_backing_file = read_trim(&disk_node.join("loop/backing_file"));
        for slave in &f.slaves {
            let Ok(mut s) = std::fs::canonicalize(Path::new("/sys/class/block").join(slave)) else {
                continue;
            };
            if s.join("partition").exists() {
                if let Some(p) = s.parent() {
                    s = p.to_path_buf();
                }
            }
            f.slave_queues.push(super::SlaveQueue {
                name: slave.clone(),
                nr_requests: read_u64(&s.join("queue/nr_requests")),
                scsi_queue_depth: read_u64(&s.join("device/queue_depth")),
            });
        }
        // The drivers from the disk's device up to the controller (the first few levels).
        if let Ok(mut cur) = std::fs::canonicalize(disk_node.join("device")) {
            for _ in 0..6 {
                if let Ok(target) = std::fs::read_link(cur.join("driver")) {
                    if let Some(n) = target.file_name() {
                        let n = n.to_string_lossy().into_owned();
                        if !f.drivers.contains(&n) {
                            f.drivers.push(n);
                        }
                    }
                }
                match cur.parent() {
                    Some(p) if p != Path::new("/sys/devices") && p != Path::new("/") => {
                        cur = p.to_path_buf()
                    }
                    _ => break,
                }
            }
        }
        f.name = Some(name);
        f.disk = Some(disk);
        Ok(f)
    }

    /// One line of /proc/self/mountinfo.
    pub(super) struct Mount {
        pub(super) dev: String,
        pub(super) mount_point: PathBuf,
        pub(super) fs_type: String,
        pub(super) source: String,
        pub(super) options: String,
    }

    /// Undoes mountinfo's octal escapes (`\040` for a space).
    fn unescape(s: &str) -> String {
        let b = s.as_bytes();
        let mut out = Vec::with_capacity(b.len());
        let mut i = 0;
        while i < b.len() {
            let oct = b.get(i + 1..i + 4).and_then(|d| {
                let t = std::str::from_utf8(d).ok()?;
                u8::from_str_radix(t, 8).ok()
            });
            match (b[i], oct) {
                (b'\\', Some(v)) => {
                    out.push(v);
                    i += 4;
                }
                (c, _) => {
                    out.push(c);
                    i += 1;
                }
            }
        }
        String::from_utf8_lossy(&out).into_owned()
    }

    fn parse_mount(line: &str) -> Option<Mount> {
        // "27 1 254:0 / / rw,relatime - ext4 /dev/vda rw,discard"
        let (left, right) = line.split_once(" - ")?;
        let l: Vec<&str> = left.split_whitespace().collect();
        let r: Vec<&str> = right.split_whitespace().collect();
        Some(Mount {
            dev: l.get(2)?.to_string(),
            mount_point: PathBuf::from(unescape(l.get(4)?)),
            options: format!("{},{}", l.get(5)?, r.get(2).copied().unwrap_or("")),
            fs_type: r.first()?.to_string(),
            source: unescape(r.get(1).copied().unwrap_or("")),
        })
    }

    /// The mount holding `canon` (a canonical path): the deepest mount point above it, among
    /// the mounts of its device when one is known (the last mount wins when stacked).
    pub(super) fn mount_of(text: &str, canon: &Path, dev: Option<&str>) -> Option<Mount> {
        let mounts: Vec<Mount> = text.lines().filter_map(parse_mount).collect();
        let best = |same_dev: bool| {
            mounts
                .iter()
                .enumerate()
                .filter(|(_, m)| canon.starts_with(&m.mount_point))
                .filter(|(_, m)| !same_dev || Some(m.dev.as_str()) == dev)
                .max_by_key(|(i, m)| (m.mount_point.components().count(), *i))
                .map(|(i, _)| i)
        };
        let i = best(true).or_else(|| best(false))?;
        mounts.into_iter().nth(i)
    }

    pub(super) fn meminfo_kib(text: &str, key: &str) -> Option<u64> {
        text.lines()
            .find(|l| l.starts_with(key))?
            .split_whitespace()
            .nth(1)?
            .parse()
            .ok()
    }

    /// The kernel's view of clock synchronization (adjtimex with no changes).
    pub(super) fn clock_synced() -> Option<bool> {
        // SAFETY: adjtimex with modes 0 only reads; it fills a plain-old-data struct we own.
        #[allow(unsafe_code)]
        let (state, status) = unsafe {
            let mut tx: libc::timex = std::mem::zeroed();
            let state = libc::adjtimex(&mut tx);
            (state, tx.status)
        };
        if state < 0 {
            return None;
        }
        Some(state != libc::TIME_ERROR && status & libc::STA_UNSYNC == 0)
    }

    #[cfg(test)]
    mod tests {
        use super::*;

        #[test]
        fn mountinfo_picks_the_deepest_mount_of_the_device() {
            let text = "27 1 254:0 / / rw,relatime - ext4 /dev/vda rw,discard\n\
                        30 24 0:27 / /dev/shm rw,relatime - tmpfs tmpfs rw,size=1k\n\
                        50 27 7:3 / /mnt/my\\040disk rw - xfs /dev/loop3 rw\n";
            let m =
                mount_of(text, Path::new("/mnt/my disk/db"), Some("7:3")).expect("the loop mount");
            assert_eq!(m.fs_type, "xfs");
            assert_eq!(m.mount_point, PathBuf::from("/mnt/my disk"));
            assert_eq!(m.source, "/dev/loop3");
            let m = mount_of(text, Path::new("/work/x"), Some("254:0")).expect("the root mount");
            assert_eq!(m.fs_type, "ext4");
            assert!(m.options.contains("discard"));
            let m = mount_of(text, Path::new("/dev/shm/a"), Some("0:27")).expect("the tmpfs mount");
            assert_eq!(m.fs_type, "tmpfs");
        }

        #[test]
        fn meminfo_reads_kib() {
            let t = "MemTotal:       24684096 kB\nMemFree: 1 kB\n";
            assert_eq!(meminfo_kib(t, "MemTotal:"), Some(24_684_096));
            assert_eq!(meminfo_kib(t, "Nope:"), None);
        }
    }
}

#[cfg(test)]
mod probe_tests {
    use super::*;

    /// More writes than a log file holds wrap within it: every write is made, and the
    /// temporary file is gone afterwards.
    #[test]
    fn the_probe_wraps_within_a_log_file_and_leaves_nothing() {
        let dir = tempfile::Builder::new()
            .prefix("mbx-probe-")
            .tempdir()
            .expect("scratch");
        let r = write_through_probe(dir.path(), 300, Duration::from_secs(60)).expect("probe");
        assert_eq!(r.writes, 300);
        assert_eq!(r.write_bytes, 4096);
        assert!(r.median_us > 0.0 && r.p99_us >= r.median_us, "{r:?}");
        let left: Vec<_> = std::fs::read_dir(dir.path()).expect("list").collect();
        assert!(left.is_empty(), "{left:?}");
    }
}
