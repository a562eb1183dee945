//! The judgements of `mbxstress doctor`: pure functions of the facts `mbx_io::probe` reads (and
//! of the planned test), unit-tested below with made-up facts. Each gives one [`DoctorCheck`]:
//! a status, the fact, why it matters (with its source) and the fix.

use mbx_config::RunConfig;
use mbx_io::probe::{DeviceFacts, DeviceKind, FsFacts, HostFacts, ProbeResult};
use mbx_result::{CheckName, DoctorCheck, DoctorStatus};
use mbx_store::CreateParams;

use crate::num::num;

/// Below this median write-through latency a non-RAM device acknowledges from a volatile cache:
/// no media (not even NVMe flash with power-loss protection behind a driver and a filesystem)
/// commits a 4 KiB write in less.
pub const EARLY_ACK_US: f64 = 50.0;

/// The read latency the queue-depth estimate assumes: Jetstress's 20 ms average threshold, the
/// worst latency a passing test may have (Little's law: outstanding = IOPS x latency).
const PLANNED_LATENCY_S: f64 = 0.020;

/// Growth reserve on top of the planned databases (Jetstress reserves 25% of the database size
/// for growth, its DatabaseSpaceReserved: docs/guide.md, "Disk subsystem throughput").
const GROWTH_RESERVE: f64 = 0.25;

const SRC_FUA: &str = "Exchange is supported only on storage that honours write-through (FUA): data on persistent media before the write is acknowledged, or a power loss loses committed transactions (ESE writes its logs write-through, as mbxstress does: docs/method.md, 'Structure')";
const SRC_PURE: &str = "Pure Storage's first 100,000-mailbox Jetstress run failed on the iSCSI queue depth, not the array; it passed after raising it (Pure Storage's published 100,000-mailbox Exchange Jetstress paper)";
const SRC_TINTRI: &str = "Tintri measured PVSCSI raising read latency to over 5 ms and write latency to 16 ms against LSI Logic SAS on the same storage (Tintri's published VMstore Exchange 2013 best practices paper, 'Considerations on SCSI controllers')";

pub(super) fn check(
    name: CheckName,
    subject: &str,
    status: DoctorStatus,
    fact: String,
    why: &str,
    fix: &str,
) -> DoctorCheck {
    DoctorCheck {
        name,
        subject: subject.to_string(),
        status,
        fact,
        why: why.to_string(),
        fix: fix.to_string(),
    }
}

pub(super) fn mib(bytes: u64) -> String {
    num(bytes as f64 / f64::from(1u32 << 20), 0)
}

/// `filesystem`: the filesystem's type and block size (memory, network and overlay filesystems warn).
pub fn filesystem_check(
    subject: &str,
    fs: Option<&FsFacts>,
    dev: Option<&DeviceFacts>,
) -> DoctorCheck {
    let why = "the filesystem and its allocation unit shape every database I/O; Exchange guidance is NTFS/ReFS with a 64 KB allocation unit (Dell's published EqualLogic PS6210E ESRP paper, 5,000 mailboxes); on Linux ext4 and XFS with O_DIRECT are the equivalents";
    let Some(fs) = fs else {
        if let Some(d) = dev.filter(|d| d.kind != DeviceKind::None) {
            return check(
                CheckName::Filesystem,
                subject,
                DoctorStatus::Ok,
                format!("a raw block device ({}), no filesystem", d.kind.name()),
                why,
                "",
            );
        }
        return check(
            CheckName::Filesystem,
            subject,
            DoctorStatus::Unknown,
            "the filesystem could not be read".into(),
            why,
            "",
        );
    };
    let ty = fs.fs_type.as_deref().unwrap_or("unknown type");
    let fact = format!(
        "{ty}{}{}, {}-byte blocks",
        fs.source
            .as_deref()
            .map(|s| format!(" on {s}"))
            .unwrap_or_default(),
        fs.mount_point
            .as_ref()
            .map(|m| format!(" mounted at {}", m.display()))
            .unwrap_or_default(),
        fs.block_size.map_or("?".into(), |b| b.to_string()),
    );
    let (status, fix) = match ty {
        "tmpfs" | "ramfs" => (
            DoctorStatus::Warn,
            "this is memory, not storage: point --db-path and --log-path at the volumes under test",
        ),
        "nfs" | "nfs4" | "cifs" | "smb3" | "fuse" | "overlay" | "9p" | "virtiofs" => (
            DoctorStatus::Warn,
            "a network, FUSE or overlay filesystem: its caching may answer for the storage; test a block volume (Exchange does not support NAS for databases)",
        ),
        "unknown type" => (DoctorStatus::Unknown, ""),
        _ => (DoctorStatus::Ok, ""),
    };
    check(CheckName::Filesystem, subject, status, fact, why, fix)
}

/// `write_cache`: the block queue's write-cache mode and FUA (a volatile `write back` cache warns).
pub fn write_cache_check(subject: &str, dev: Option<&DeviceFacts>, ram: bool) -> DoctorCheck {
    let why = SRC_FUA;
    let Some(d) = dev.filter(|d| d.write_cache.is_some()) else {
        let (status, fact) = if ram {
            (
                DoctorStatus::Warn,
                "memory (tmpfs/RAM disk): nothing is persistent".to_string(),
            )
        } else {
            (
                DoctorStatus::Unknown,
                "no block device queue to read (network filesystem, or not Linux)".to_string(),
            )
        };
        return check(CheckName::WriteCache, subject, status, fact, why, "");
    };
    let mode = d.write_cache.as_deref().unwrap_or("");
    let disk = d.disk.as_deref().unwrap_or("?");
    let fua = match d.fua {
        Some(true) => "FUA supported",
        Some(false) => "no FUA (each write-through write costs a cache flush)",
        None => "FUA unknown",
    };
    let over = match &d.loop_backing_file {
        Some(f) => format!("; a loop device over {f}: that file's filesystem decides durability"),
        None => String::new(),
    };
    let media = match d.rotational {
        Some(true) => " (rotational)",
        Some(false) => " (non-rotational)",
        None => "",
    };
    let fact = format!("{disk}{media}: queue/write_cache '{mode}', {fua}{over}");
    if mode == "write back" {
        check(
            CheckName::WriteCache,
            subject,
            DoctorStatus::Warn,
            fact,
            why,
            "a volatile write cache: log writes are durable only if the device honours the flushes the kernel sends (virtual disks with cache=unsafe or writeback do not). Use a cache with power-loss protection, or disable the volatile cache (hdparm -W0 / sdparm --clear WCE / the hypervisor's cache=none or writethrough); if the cache is protected, `echo 'write through' > /sys/block/DISK/queue/write_cache` tells the kernel",
        )
    } else {
        check(
            CheckName::WriteCache,
            subject,
            DoctorStatus::Ok,
            fact,
            why,
            "",
        )
    }
}

/// `write_through_probe`: the median of the write-through probe's writes (early acknowledgement
/// below [`EARLY_ACK_US`], or memory, warns).
pub fn probe_check(
    subject: &str,
    probed: Option<&std::io::Result<ProbeResult>>,
    ram: bool,
) -> DoctorCheck {
    let why = "a 4 KiB write-through (O_DSYNC) write must reach persistent media before it completes; far below what media can do (under 50 us) means a volatile cache acknowledges early, and the test then measures that cache, not the storage (docs/guide.md, 'mbxstress doctor')";
    match probed {
        None => check(
            CheckName::WriteThroughProbe,
            subject,
            DoctorStatus::Unknown,
            "not probed: a block device is written only by the test itself".into(),
            why,
            "",
        ),
        Some(Err(e)) => check(
            CheckName::WriteThroughProbe,
            subject,
            DoctorStatus::Unknown,
            format!("the probe could not write its temporary file: {e}"),
            why,
            "make the log folder writable, or run doctor as the user that runs the test",
        ),
        Some(Ok(r)) => {
            let fact = format!(
                "{} x {} KiB O_DSYNC{} writes: median {} us, p99 {} us",
                r.writes,
                r.write_bytes / 1024,
                if r.direct { "|O_DIRECT" } else { " (buffered)" },
                num(r.median_us, 1),
                num(r.p99_us, 1)
            );
            if ram {
                check(
                    CheckName::WriteThroughProbe,
                    subject,
                    DoctorStatus::Warn,
                    format!("{fact}: this measures memory (tmpfs/RAM disk)"),
                    why,
                    "point --log-path at the log volume under test",
                )
            } else if r.median_us < EARLY_ACK_US {
                check(
                    CheckName::WriteThroughProbe,
                    subject,
                    DoctorStatus::Warn,
                    format!("{fact}: below {EARLY_ACK_US} us, a volatile cache acknowledges early"),
                    why,
                    "disable the volatile write cache or make the device honour flushes/FUA (hypervisor: cache=none or writethrough, not unsafe/writeback); results until then measure the cache",
                )
            } else {
                check(
                    CheckName::WriteThroughProbe,
                    subject,
                    DoctorStatus::Ok,
                    fact,
                    why,
                    "",
                )
            }
        }
    }
}

/// `direct_io`: whether O_DIRECT is accepted where the probe wrote, and whether the test uses it.
pub fn direct_io_check(
    subject: &str,
    probed: Option<&ProbeResult>,
    ram: bool,
    direct_planned: bool,
) -> DoctorCheck {
    let why = "mbxstress bypasses the page cache (O_DIRECT) so that it measures storage; a filesystem that refuses O_DIRECT, or accepts it but serves from memory (tmpfs), measures memory instead";
    let Some(r) = probed else {
        return check(
            CheckName::DirectIo,
            subject,
            DoctorStatus::Unknown,
            "not probed".into(),
            why,
            "",
        );
    };
    let planned = if direct_planned {
        ""
    } else {
        "; this test runs --buffered"
    };
    match (r.direct, ram) {
        (true, true) => check(
            CheckName::DirectIo,
            subject,
            DoctorStatus::Warn,
            format!("O_DIRECT accepted, but the filesystem is memory{planned}"),
            why,
            "point the paths at the storage under test",
        ),
        (false, _) => check(
            CheckName::DirectIo,
            subject,
            DoctorStatus::Warn,
            format!("O_DIRECT refused (EINVAL){planned}"),
            why,
            "use a filesystem that supports O_DIRECT (ext4, XFS) or run with --buffered knowing it measures the page cache",
        ),
        (true, false) => check(
            CheckName::DirectIo,
            subject,
            if direct_planned { DoctorStatus::Ok } else { DoctorStatus::Warn },
            format!("O_DIRECT accepted{planned}"),
            why,
            if direct_planned { "" } else { "drop --buffered" },
        ),
    }
}

/// The outstanding I/O a test will want on a device.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct QueueNeed {
    /// Sessions (each keeps at least one I/O outstanding in a closed loop).
    pub sessions: f64,
    /// Transactional IOPS.
    pub iops: f64,
    /// The most the engine keeps outstanding (its queue depth).
    pub engine_depth: f64,
}

impl QueueNeed {
    pub(super) fn of(cfg: &RunConfig, dbs: usize) -> Self {
        QueueNeed {
            sessions: f64::from(cfg.sessions()),
            iops: cfg.target_iops(),
            engine_depth: mbx_engine::queue_depth(cfg, dbs) as f64,
        }
    }

    /// The part of the test on `on` of `of` databases.
    pub(super) fn share(&self, on: usize, of: usize) -> QueueNeed {
        let f = on as f64 / of.max(1) as f64;
        QueueNeed {
            sessions: self.sessions * f,
            iops: self.iops * f,
            engine_depth: self.engine_depth * f,
        }
    }

    /// Outstanding I/Os: the sessions, or the target IOPS at Jetstress's 20 ms read latency
    /// threshold (Little's law) if more, within the engine's depth.
    pub fn outstanding(&self) -> u64 {
        let little = self.iops * PLANNED_LATENCY_S;
        self.sessions.max(little).min(self.engine_depth).ceil() as u64
    }
}

/// `queue_depth`: the smallest queue depth along the path against the outstanding I/O the test
/// wants there (a stacked device counts the devices under it together).
pub fn queue_depth_check(
    subject: &str,
    dev: Option<&DeviceFacts>,
    need: &QueueNeed,
    logs: usize,
) -> DoctorCheck {
    let why = SRC_PURE;
    let wanted = need.outstanding();
    let plan = if wanted == 0 {
        format!("logs only: about {logs} outstanding (one log writer per database)")
    } else {
        format!(
            "the test wants ~{wanted} outstanding I/Os ({} IOPS x 20 ms, {} sessions)",
            num(need.iops, 0),
            num(need.sessions, 0)
        )
    };
    let Some(d) = dev.filter(|d| d.nr_requests.is_some() || d.scsi_queue_depth.is_some()) else {
        return check(
            CheckName::QueueDepth,
            subject,
            DoctorStatus::Unknown,
            format!("no block queue to read; {plan}"),
            why,
            "",
        );
    };
    let disk = d.disk.as_deref().unwrap_or("?");
    let mut parts = Vec::new();
    if let Some(n) = d.nr_requests {
        parts.push(format!("nr_requests {n}"));
    }
    if let Some(q) = d.scsi_queue_depth {
        parts.push(format!("device queue_depth {q}"));
    }
    let own = |nr: Option<u64>, qd: Option<u64>| [nr, qd].into_iter().flatten().min();
    let stacked = matches!(d.kind, DeviceKind::DeviceMapper | DeviceKind::Md);
    // A stacked device (LVM, multipath, md) queues nothing itself that bounds the disks: its
    // I/O spreads over the devices under it, each with its own depth (multipath: one per path).
    let under: Vec<(String, u64)> = d
        .slave_queues
        .iter()
        .filter_map(|q| Some((q.name.clone(), own(q.nr_requests, q.scsi_queue_depth)?)))
        .collect();
    let (cap, extra) = if stacked && !under.is_empty() {
        let sum = under
            .iter()
            .map(|(_, c)| *c)
            .fold(0u64, u64::saturating_add);
        let list: Vec<String> = under.iter().map(|(n, c)| format!("{n} {c}")).collect();
        (
            sum,
            format!("; under it: {} (together {sum})", list.join(", ")),
        )
    } else {
        (
            own(d.nr_requests, d.scsi_queue_depth).unwrap_or(u64::MAX),
            String::new(),
        )
    };
    let fact = format!("{disk}: {}{extra}; {plan}", parts.join(", "));
    let needed = wanted.max(logs as u64);
    if cap < needed {
        check(
            CheckName::QueueDepth,
            subject,
            DoctorStatus::Warn,
            format!("{fact}: the path caps it at {cap}"),
            why,
            "raise the queue depth along the path: /sys/block/DISK/queue/nr_requests, /sys/block/DISK/device/queue_depth, the HBA or iSCSI initiator (e.g. node.session.queue_depth in iscsid.conf), the hypervisor's per-disk queue",
        )
    } else {
        check(
            CheckName::QueueDepth,
            subject,
            DoctorStatus::Ok,
            fact,
            why,
            "",
        )
    }
}

/// `alignment`: a partition's start on the 1 MiB grid.
pub fn alignment_check(subject: &str, dev: Option<&DeviceFacts>) -> DoctorCheck {
    let why = "a partition that does not start on a 1 MiB boundary splits I/Os across stripe and flash-page boundaries (Exchange guidance: the default alignment of Windows 2008 or later, 1 MiB; Dell's published EqualLogic PS6110E Exchange 2013 sizing paper)";
    let Some(d) = dev.filter(|d| d.kind != DeviceKind::None) else {
        return check(
            CheckName::Alignment,
            subject,
            DoctorStatus::Unknown,
            "no block device to read".into(),
            why,
            "",
        );
    };
    match d.partition_start_sector {
        Some(start) => {
            let bytes = start.saturating_mul(512);
            let aligned = bytes % (1 << 20) == 0;
            check(
                CheckName::Alignment,
                subject,
                if aligned {
                    DoctorStatus::Ok
                } else {
                    DoctorStatus::Warn
                },
                format!(
                    "partition {} starts at sector {start} ({bytes} bytes){}",
                    d.name.as_deref().unwrap_or("?"),
                    if aligned {
                        ": 1 MiB aligned"
                    } else {
                        ": not 1 MiB aligned"
                    }
                ),
                why,
                if aligned {
                    ""
                } else {
                    "recreate the partition at a 1 MiB boundary (parted -a optimal)"
                },
            )
        }
        None => check(
            CheckName::Alignment,
            subject,
            DoctorStatus::Ok,
            format!(
                "whole {} {}: no partition offset",
                d.kind.name(),
                d.name.as_deref().unwrap_or("?")
            ),
            why,
            "",
        ),
    }
}

/// `discard`: whether the device discards (possibly thin-provisioned); information only.
pub fn discard_check(
    subject: &str,
    dev: Option<&DeviceFacts>,
    fs: Option<&FsFacts>,
) -> DoctorCheck {
    let why = "thin-provisioned volumes grow as pages are first written and shrink on discard: mbxstress writes every page when it creates a database, so the test measures a fully allocated volume, as a grown Exchange database is";
    let Some(max) = dev.and_then(|d| d.discard_max_bytes) else {
        return check(
            CheckName::Discard,
            subject,
            DoctorStatus::Unknown,
            "no block queue to read".into(),
            why,
            "",
        );
    };
    let mount_discard = fs
        .and_then(|f| f.options.as_deref())
        .is_some_and(|o| o.split(',').any(|x| x == "discard"));
    let fact = if max > 0 {
        format!(
            "discard supported (up to {} MiB per request){}: possibly thin-provisioned",
            mib(max),
            if mount_discard {
                ", mounted with online discard"
            } else {
                ""
            }
        )
    } else {
        "no discard: thick-provisioned or a device without TRIM/UNMAP".to_string()
    };
    check(CheckName::Discard, subject, DoctorStatus::Ok, fact, why, "")
}

/// `capacity`: free space against what the test writes (fails) and the growth reserve (warns).
pub fn capacity_check(
    subject: &str,
    to_write: u64,
    db_bytes: u64,
    free: Option<u64>,
    why: &str,
) -> DoctorCheck {
    let Some(free) = free else {
        return check(
            CheckName::Capacity,
            subject,
            DoctorStatus::Unknown,
            "free space could not be read".into(),
            why,
            "",
        );
    };
    let reserve = (db_bytes as f64 * GROWTH_RESERVE) as u64;
    let fact = format!(
        "{} MiB free; the test writes {} MiB more (databases of {} MiB in all) + {} MiB growth reserve",
        mib(free),
        mib(to_write),
        mib(db_bytes),
        mib(reserve)
    );
    if to_write > free {
        check(
            CheckName::Capacity,
            subject,
            DoctorStatus::Fail,
            fact,
            why,
            "free space, choose another --db-path / --log-path, or plan fewer mailboxes, a smaller --quota-mb or fewer databases",
        )
    } else if to_write.saturating_add(reserve) > free {
        check(
            CheckName::Capacity,
            subject,
            DoctorStatus::Warn,
            format!("{fact}: it fits, without the growth reserve"),
            why,
            "size the volume with 25% of the database size free",
        )
    } else {
        check(
            CheckName::Capacity,
            subject,
            DoctorStatus::Ok,
            fact,
            why,
            "",
        )
    }
}

/// `data_reduction`: how compressible the pages are; information only.
pub fn data_reduction_check(compressibility_pct: u8) -> DoctorCheck {
    let why = "Jetstress duplicates one database, so deduplicating or compressing arrays store little and report flattering figures (Pure Storage reports ~7:1 on Jetstress data in its published 100,000-mailbox paper); mbxstress writes unique pages, each compressible by --compressibility-pct";
    let fact = if compressibility_pct == 0 {
        "pages are unique and incompressible (--compressibility-pct 0): the array stores every byte, the honest worst case".to_string()
    } else {
        format!("pages are unique and compress by about {compressibility_pct}% (--compressibility-pct): set it to the ratio the array achieves on real mailbox data")
    };
    check(
        CheckName::DataReduction,
        "databases",
        DoctorStatus::Ok,
        fact,
        why,
        "",
    )
}

/// `virtualization`: the hypervisor and the disks' driver chains (PVSCSI warns).
pub fn virtualization_check(host: &HostFacts, drivers: &[(String, Vec<String>)]) -> DoctorCheck {
    let why = SRC_TINTRI;
    let hv = match (host.hypervisor, &host.sys_vendor, &host.product_name) {
        (Some(true), v, p) => format!(
            "virtual machine{}",
            match (v, p) {
                (Some(v), Some(p)) => format!(" ({v} {p})"),
                (Some(v), None) => format!(" ({v})"),
                _ => String::new(),
            }
        ),
        (Some(false), _, _) => "no hypervisor flag (bare metal)".to_string(),
        (None, _, _) => "hypervisor unknown".to_string(),
    };
    let ctl: Vec<String> = drivers
        .iter()
        .map(|(disk, d)| {
            if d.is_empty() {
                format!("{disk}: no driver")
            } else {
                format!("{disk}: {}", d.join(" <- "))
            }
        })
        .collect();
    let fact = if ctl.is_empty() {
        hv
    } else {
        format!("{hv}; {}", ctl.join("; "))
    };
    let pvscsi = drivers
        .iter()
        .any(|(_, d)| d.iter().any(|x| x == "vmw_pvscsi"));
    let virtio = drivers
        .iter()
        .any(|(_, d)| d.iter().any(|x| x == "virtio_blk" || x == "virtio_scsi"));
    if pvscsi {
        check(
            CheckName::Virtualization,
            "host",
            DoctorStatus::Warn,
            fact,
            why,
            "run the test with the LSI Logic SAS controller too and keep the better one; give each virtual disk its own controller and check the per-disk queue depth on the hypervisor",
        )
    } else if virtio {
        check(
            CheckName::Virtualization,
            "host",
            DoctorStatus::Ok,
            format!("{fact} (virtio: the queue depth per virtual disk is the host's queue size; the host's cache mode decides write-through)"),
            why,
            "",
        )
    } else {
        check(
            CheckName::Virtualization,
            "host",
            DoctorStatus::Ok,
            fact,
            why,
            "",
        )
    }
}

/// `cpu`: reactors against CPUs (more reactors than CPUs warns).
pub fn cpu_check(host: &HostFacts, cfg: &RunConfig, dbs: usize) -> DoctorCheck {
    let why = "mbxstress runs its sessions on event-loop threads (reactors), one per core at most; more reactors than CPUs, or a busy host, adds scheduling delay to every latency";
    let Some(cpus) = host.cpus else {
        return check(
            CheckName::Cpu,
            "host",
            DoctorStatus::Unknown,
            "CPU count unknown".into(),
            why,
            "",
        );
    };
    let reactors = if cfg.reactors == 0 {
        cpus.min(dbs)
    } else {
        cfg.reactors as usize
    };
    let fact = format!(
        "{cpus} CPU(s); {} session(s){} on {reactors} reactor(s)",
        cfg.sessions(),
        if cfg.threads == 0 {
            " before tuning"
        } else {
            ""
        }
    );
    if reactors > cpus {
        check(
            CheckName::Cpu,
            "host",
            DoctorStatus::Warn,
            fact,
            why,
            "use --reactors 0 (one per core)",
        )
    } else {
        check(CheckName::Cpu, "host", DoctorStatus::Ok, fact, why, "")
    }
}

/// `clock`: whether the kernel clock is synchronized (multi-server comparisons need it).
pub fn clock_check(host: &HostFacts) -> DoctorCheck {
    let why = "results of several servers tested together (ESRP, fleet) are compared sample by sample by time: their clocks must agree";
    match host.clock_synced {
        Some(true) => check(CheckName::Clock, "host", DoctorStatus::Ok, "the kernel clock is synchronized (adjtimex)".into(), why, ""),
        Some(false) => check(
            CheckName::Clock,
            "host",
            DoctorStatus::Warn,
            "the kernel clock is not synchronized (adjtimex: unsynchronized)".into(),
            why,
            "enable NTP (chrony, systemd-timesyncd) on every server of a multi-server test; a single server's results are unaffected",
        ),
        None => check(CheckName::Clock, "host", DoctorStatus::Unknown, "clock synchronization unknown".into(), why, ""),
    }
}

/// `memory`: the database caches against the available memory (over half of it warns).
pub fn memory_check(
    host: &HostFacts,
    cfg: &RunConfig,
    create: &CreateParams,
    dbs: usize,
) -> DoctorCheck {
    let why = "the simulated database caches live in memory; if they do not fit, the host pages and every latency includes paging";
    let Some(avail) = host.memory_available_bytes else {
        return check(
            CheckName::Memory,
            "host",
            DoctorStatus::Unknown,
            "available memory unknown".into(),
            why,
            "",
        );
    };
    let per_db = (cfg.cache.max_mb_per_db << 20).min(create.file_bytes() / 8);
    let caches = per_db.saturating_mul(dbs as u64);
    let fact = format!(
        "{} MiB available{}; database caches up to {} MiB ({} x {} MiB)",
        mib(avail),
        host.memory_total_bytes
            .map(|t| format!(" of {} MiB", mib(t)))
            .unwrap_or_default(),
        mib(caches),
        dbs,
        mib(per_db)
    );
    if caches > avail / 2 {
        check(
            CheckName::Memory,
            "host",
            DoctorStatus::Warn,
            fact,
            why,
            "lower cache.max_mb_per_db in a --config file, or free memory",
        )
    } else {
        check(CheckName::Memory, "host", DoctorStatus::Ok, fact, why, "")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn disk(write_cache: &str, nr: u64, start: Option<u64>) -> DeviceFacts {
        DeviceFacts {
            dev: "8:1".into(),
            name: Some("sda1".into()),
            disk: Some("sda".into()),
            kind: if start.is_some() {
                DeviceKind::Partition
            } else {
                DeviceKind::Disk
            },
            write_cache: Some(write_cache.into()),
            fua: Some(false),
            nr_requests: Some(nr),
            scsi_queue_depth: Some(32),
            rotational: Some(false),
            discard_max_bytes: Some(0),
            partition_start_sector: start,
            drivers: vec!["sd".into(), "vmw_pvscsi".into()],
            slaves: Vec::new(),
            loop_backing_file: None,
            slave_queues: Vec::new(),
        }
    }

    fn probe(median_us: f64) -> std::io::Result<ProbeResult> {
        Ok(ProbeResult {
            writes: 200,
            write_bytes: 4096,
            direct: true,
            median_us,
            p99_us: median_us * 2.0,
        })
    }

    #[test]
    fn an_early_acknowledgement_warns_on_a_disk_and_ram_always_warns() {
        assert_eq!(
            probe_check("x", Some(&probe(12.0)), false).status,
            DoctorStatus::Warn
        );
        assert_eq!(
            probe_check("x", Some(&probe(180.0)), false).status,
            DoctorStatus::Ok
        );
        let ram = probe_check("x", Some(&probe(180.0)), true);
        assert_eq!(ram.status, DoctorStatus::Warn);
        assert!(ram.fact.contains("measures memory"));
        assert_eq!(probe_check("x", None, false).status, DoctorStatus::Unknown);
    }

    #[test]
    fn write_back_warns_and_write_through_does_not() {
        let wb = write_cache_check("x", Some(&disk("write back", 64, None)), false);
        assert_eq!(wb.status, DoctorStatus::Warn);
        assert!(!wb.fix.is_empty());
        let wt = write_cache_check("x", Some(&disk("write through", 64, None)), false);
        assert_eq!(wt.status, DoctorStatus::Ok);
    }

    /// The Pure lesson: 2,500 IOPS at 20 ms want 50 outstanding; a SCSI queue depth of 32 caps it.
    #[test]
    fn the_smallest_depth_along_the_path_caps_the_planned_outstanding_io() {
        let need = QueueNeed {
            sessions: 16.0,
            iops: 2500.0,
            engine_depth: 10_000.0,
        };
        assert_eq!(need.outstanding(), 50);
        let c = queue_depth_check("x", Some(&disk("write through", 256, None)), &need, 0);
        assert_eq!(c.status, DoctorStatus::Warn);
        assert!(c.fact.contains("caps it at 32"), "{}", c.fact);
        let low = QueueNeed {
            iops: 500.0,
            ..need
        };
        assert_eq!(low.outstanding(), 16);
        let c = queue_depth_check("x", Some(&disk("write through", 256, None)), &low, 0);
        assert_eq!(c.status, DoctorStatus::Ok);
        // Never more than the engine keeps outstanding.
        let capped = QueueNeed {
            engine_depth: 20.0,
            ..need
        };
        assert_eq!(capped.outstanding(), 20);
    }

    /// Multipath: two paths of depth 16 carry 32 together, less than the 50 wanted.
    #[test]
    fn a_stacked_device_is_capped_by_the_devices_under_it_together() {
        let need = QueueNeed {
            sessions: 16.0,
            iops: 2500.0,
            engine_depth: 10_000.0,
        };
        let path = |name: &str| mbx_io::probe::SlaveQueue {
            name: name.into(),
            nr_requests: Some(256),
            scsi_queue_depth: Some(16),
        };
        let mut dm = disk("write through", 128, None);
        dm.kind = DeviceKind::DeviceMapper;
        dm.scsi_queue_depth = None;
        dm.slaves = vec!["sdb".into(), "sdc".into()];
        dm.slave_queues = vec![path("sdb"), path("sdc")];
        let c = queue_depth_check("x", Some(&dm), &need, 0);
        assert_eq!(c.status, DoctorStatus::Warn, "{}", c.fact);
        assert!(c.fact.contains("together 32"), "{}", c.fact);
        dm.slave_queues.push(path("sdd"));
        dm.slave_queues.push(path("sde"));
        assert_eq!(
            queue_depth_check("x", Some(&dm), &need, 0).status,
            DoctorStatus::Ok
        );
    }

    #[test]
    fn capacity_fails_short_warns_without_the_reserve_and_passes_with_it() {
        let mib = 1u64 << 20;
        let c = |free| capacity_check("x", 100 * mib, 100 * mib, Some(free), "").status;
        assert_eq!(c(99 * mib), DoctorStatus::Fail);
        assert_eq!(c(110 * mib), DoctorStatus::Warn);
        assert_eq!(c(125 * mib), DoctorStatus::Ok);
        assert_eq!(
            capacity_check("x", 1, 1, None, "").status,
            DoctorStatus::Unknown
        );
    }

    #[test]
    fn a_partition_off_the_mebibyte_grid_warns() {
        let at = |s| alignment_check("x", Some(&disk("write back", 64, Some(s)))).status;
        assert_eq!(at(63), DoctorStatus::Warn);
        assert_eq!(at(2048), DoctorStatus::Ok);
    }

    #[test]
    fn pvscsi_points_to_the_tintri_measurement() {
        let host = HostFacts {
            cpus: Some(4),
            hypervisor: Some(true),
            sys_vendor: Some("VMware, Inc.".into()),
            product_name: Some("VMware Virtual Platform".into()),
            memory_total_bytes: None,
            memory_available_bytes: None,
            clock_synced: Some(true),
        };
        let c = virtualization_check(
            &host,
            &[("sda".into(), vec!["sd".into(), "vmw_pvscsi".into()])],
        );
        assert_eq!(c.status, DoctorStatus::Warn);
        assert!(c.why.contains("Tintri"));
        let c = virtualization_check(&host, &[("sda".into(), vec!["sd".into(), "mptsas".into()])]);
        assert_eq!(c.status, DoctorStatus::Ok);
    }
}
