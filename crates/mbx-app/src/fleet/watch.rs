//! Watching a mail server during a `fleet loadgen` run: CPU, memory, disk throughput and
//! latency read from its Linux /proc over ssh, as LoadGen users watch the servers' perfmon
//! beside the clients' latency.
//!
//! - [`script`]: the POSIX sh the server runs (over `ssh dest sh -c '...'`): every interval one
//!   snapshot of `/proc/uptime`, the `cpu ` line of `/proc/stat`, `MemTotal` and `MemAvailable`
//!   of `/proc/meminfo`, the whole disks (`ls /sys/block`, read once) and `/proc/diskstats`,
//!   between marker lines. It ends by itself after its snapshots, when a write fails (the ssh is
//!   gone), or when its stdin ends (the watcher closed it): nothing is left running on the server.
//! - [`parse_snapshot`] and [`sample`]: pure parsing and arithmetic, every number from the server
//!   parsed with checked conversions, lines and snapshots bounded in size; counters that go
//!   backwards (a reboot, a disk removed) give no sample ([`WatchError::Backwards`]).
//! - [`Watcher`]: the ssh process and a thread reading its output, appending each
//!   [`ServerSample`] to `servers/<name>.jsonl` as it comes; [`Watcher::stop`] gives the
//!   [`ServerWatch`] summary.
//!
//! Windows servers are not read. Watching one would need its performance counters instead of
//! /proc, sampled with `typeperf` or PowerShell's `Get-Counter` over its OpenSSH server:
//! `\Processor(_Total)\% Processor Time`, `\Memory\Available MBytes` (with the total from
//! `Win32_ComputerSystem.TotalPhysicalMemory`), `\PhysicalDisk(_Total)\Disk Reads/sec`,
//! `\PhysicalDisk(_Total)\Disk Writes/sec`, `\PhysicalDisk(_Total)\Disk Read Bytes/sec`,
//! `\PhysicalDisk(_Total)\Disk Write Bytes/sec`, `\PhysicalDisk(*)\Avg. Disk sec/Read` and
//! `\PhysicalDisk(*)\Avg. Disk sec/Write`. Until then a server without /proc/stat (or whose
//! shell is not POSIX, so the script does not even start) is reported with `source`
//! `not read: ...` and `error` set.

use std::fs::File;
use std::io::{BufRead, BufReader, Read, Write};
use std::path::{Path, PathBuf};
use std::process::{Child, ChildStdin, Command, ExitStatus, Stdio};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{mpsc, Arc, Mutex};
use std::time::{Duration, Instant};

use mbx_result::{ServerSample, ServerWatch};

use super::remote::sh;
use super::ssh::{unix_now, Ssh};

/// `source` of a server read through its Linux /proc.
pub const SOURCE_LINUX: &str = "linux /proc";

/// The longest line kept from the server, bytes (a diskstats line is about 150): the rest of a
/// longer line is read and dropped, and its snapshot is not used.
pub const MAX_LINE: usize = 4096;

/// The largest snapshot used, bytes: /proc/diskstats of a server with some 20,000 block devices
/// (multipath, device-mapper); a larger one is read and dropped.
pub const MAX_SNAPSHOT_BYTES: usize = 4 << 20;

/// The most lines in a snapshot used.
pub const MAX_SNAPSHOT_LINES: usize = 65_536;

/// How long [`Watcher::stop`] waits for the script to end after closing its input, then for the
/// process after killing it, then for the reader thread to drain the output.
const STOP_WAIT: Duration = Duration::from_secs(5);
const KILL_WAIT: Duration = Duration::from_secs(2);
const DRAIN_WAIT: Duration = Duration::from_secs(2);

/// Most of ssh's stderr kept for the error message.
const STDERR_LIMIT: u64 = 64 << 10;

/// The first marker line of the script's output (its protocol version).
const HEADER: &str = "@@mbx-watch 1";
/// The script's only line when the server has no /proc/stat (then the `uname -s`).
const NOPROC: &str = "@@mbx-watch noproc";
const SNAP: &str = "@@snap";
const END: &str = "@@end";
const DISKSTATS: &str = "@@diskstats";

/// Why a snapshot or a sample could not be had, or the watch could not start; each names what.
#[derive(Debug, thiserror::Error)]
pub enum WatchError {
    /// A figure the snapshot must have is not in it.
    #[error("{what} is missing from the server's snapshot")]
    Missing {
        /// Which figure.
        what: &'static str,
    },
    /// A figure appears twice.
    #[error("{what} appears twice in the server's snapshot")]
    Duplicate {
        /// Which figure.
        what: &'static str,
    },
    /// A line is not what it should be (not a number, a number too large, a wrong unit).
    #[error("{what}: {reason} in {line:?}")]
    Invalid {
        /// Which figure.
        what: &'static str,
        /// What is wrong.
        reason: String,
        /// The line (its first 120 characters).
        line: String,
    },
    /// The snapshot is over [`MAX_SNAPSHOT_BYTES`] or [`MAX_SNAPSHOT_LINES`], or a line over
    /// [`MAX_LINE`].
    #[error("the server's snapshot is too large: {what}")]
    TooLarge {
        /// Which bound it passed.
        what: String,
    },
    /// A counter is smaller than in the snapshot before.
    #[error("{what} went backwards ({prev} then {cur}): the server restarted or a disk went away")]
    Backwards {
        /// Which counter.
        what: &'static str,
        /// Its value before.
        prev: u64,
        /// Its value now.
        cur: u64,
    },
    /// The whole disks are not those of the snapshot before.
    #[error("the server's disks changed between two snapshots ({prev:?} then {cur:?})")]
    DisksChanged {
        /// The disks before.
        prev: Vec<String>,
        /// The disks now.
        cur: Vec<String>,
    },
    /// No time passed between the snapshots (no CPU tick, or an interval of no length).
    #[error("no time passed between two snapshots ({what})")]
    NoInterval {
        /// What did not advance.
        what: &'static str,
    },
    /// A local file or process could not be made.
    #[error("{what}: {error}")]
    Io {
        /// What was being done, naming the file or command.
        what: String,
        /// The OS error (part of the message, deliberately not a `source()`).
        error: std::io::Error,
    },
}

/// CPU time of all cores from the `cpu ` line of /proc/stat, in ticks (USER_HZ): the same
/// figures, by the same arithmetic, as this machine's own ([`mbx_core::procfs`]).
pub use mbx_core::procfs::CpuTicks;

/// The counters of /proc/diskstats summed over the whole disks.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct DiskCounters {
    /// Reads completed.
    pub reads: u64,
    /// Sectors read (512 bytes each, whatever the disk's sector size).
    pub read_sectors: u64,
    /// Milliseconds spent reading.
    pub read_ms: u64,
    /// Writes completed.
    pub writes: u64,
    /// Sectors written.
    pub write_sectors: u64,
    /// Milliseconds spent writing.
    pub write_ms: u64,
}

/// One snapshot of a server's counters, as [`parse_snapshot`] reads it.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Snapshot {
    /// The first figure of /proc/uptime, seconds (the interval between two snapshots when both
    /// have it).
    pub uptime_s: Option<f64>,
    /// CPU time.
    pub cpu: CpuTicks,
    /// MemTotal, bytes.
    pub mem_total_bytes: u64,
    /// MemAvailable, bytes.
    pub mem_available_bytes: u64,
    /// The whole disks counted (in /sys/block and /proc/diskstats, not `loop*`, `ram*`,
    /// `zram*`, `dm-*`, `md*`), sorted.
    pub disks: Vec<String>,
    /// Their counters, summed.
    pub disk: DiskCounters,
}

/// The first 120 characters of a line, for an error message.
fn quote(line: &str) -> String {
    mbx_config::text::visible(line, 120)
}

/// A counter of the server: an unsigned decimal integer that fits 64 bits.
fn number(what: &'static str, word: &str, line: &str) -> Result<u64, WatchError> {
    if word.is_empty() || !word.bytes().all(|b| b.is_ascii_digit()) {
        return Err(WatchError::Invalid {
            what,
            reason: format!("{:?} is not a whole number", quote(word)),
            line: quote(line),
        });
    }
    word.parse::<u64>().map_err(|_| WatchError::Invalid {
        what,
        reason: "a number over 2^64".into(),
        line: quote(line),
    })
}

/// Sets a figure that may appear once.
fn once<T>(slot: &mut Option<T>, value: T, what: &'static str) -> Result<(), WatchError> {
    if slot.is_some() {
        return Err(WatchError::Duplicate { what });
    }
    *slot = Some(value);
    Ok(())
}

/// `MemTotal:  16318480 kB` -> bytes.
fn mem_bytes(what: &'static str, rest: &str, line: &str) -> Result<u64, WatchError> {
    let mut words = rest.split_whitespace();
    let kb = number(what, words.next().unwrap_or(""), line)?;
    if words.next() != Some("kB") || words.next().is_some() {
        return Err(WatchError::Invalid {
            what,
            reason: "not in kB".into(),
            line: quote(line),
        });
    }
    kb.checked_mul(1024).ok_or_else(|| WatchError::Invalid {
        what,
        reason: "more bytes than 2^64".into(),
        line: quote(line),
    })
}

/// The `cpu ` line's figures after its name.
fn cpu_ticks(rest: &str, line: &str) -> Result<CpuTicks, WatchError> {
    const WHAT: &str = "the cpu line of /proc/stat";
    let mut fields = Vec::new();
    for w in rest.split_whitespace().take(10) {
        fields.push(number(WHAT, w, line)?);
    }
    // user nice system idle are in every kernel; iowait .. steal came later.
    let (Some(&idle), true) = (fields.get(3), fields.len() >= 4) else {
        return Err(WatchError::Invalid {
            what: WHAT,
            reason: format!("{} figures, not at least 4", fields.len()),
            line: quote(line),
        });
    };
    let total = fields
        .iter()
        .take(8)
        .try_fold(0u64, |a, &b| a.checked_add(b))
        .ok_or_else(|| WatchError::Invalid {
            what: WHAT,
            reason: "its sum is over 2^64".into(),
            line: quote(line),
        })?;
    // Checked above (every figure a number, at least four, a sum that fits): which figures
    // make the total is mbx_core's arithmetic, the one this machine's CPU time is read with.
    let ticks = mbx_core::procfs::parse_stat_cpu(line).ok_or_else(|| WatchError::Invalid {
        what: WHAT,
        reason: "not as the kernel writes it".into(),
        line: quote(line),
    })?;
    debug_assert_eq!((ticks.total, ticks.idle), (total, idle));
    debug_assert!(ticks.idle <= ticks.total);
    Ok(ticks)
}

/// A disk name of /sys/block counted as a whole disk: not a loop device or a RAM disk
/// (`loop*`, `ram*`, `zram*`), nor a device stacked on disks (`dm-*` of LVM, `md*` of software
/// RAID), whose I/O the disks beneath already count. (Its `!` stands for the `/` of
/// /proc/diskstats: `cciss!c0d0` is `cciss/c0d0`.)
fn whole_disk(name: &str) -> Option<String> {
    let virtual_disk = ["loop", "ram", "zram", "dm-", "md"]
        .iter()
        .any(|p| name.starts_with(p));
    (!name.is_empty() && !virtual_disk).then(|| name.replace('!', "/"))
}

/// Parses one snapshot of the script (the lines between its `@@snap` and `@@end` markers):
/// `uptime S`, the `cpu ` line of /proc/stat, `MemTotal:` and `MemAvailable:` of
/// /proc/meminfo, `disks NAME...` (from /sys/block), then `@@diskstats` and /proc/diskstats.
/// Every number is checked (digits only, fits 64 bits, sums without overflow); a line the script
/// does not print, a figure twice or missing, or a snapshot over the bounds is an error.
pub fn parse_snapshot(text: &str) -> Result<Snapshot, WatchError> {
    if text.len() > MAX_SNAPSHOT_BYTES {
        return Err(WatchError::TooLarge {
            what: format!("{} bytes, over {MAX_SNAPSHOT_BYTES}", text.len()),
        });
    }
    let mut uptime = None;
    let mut cpu = None;
    let mut total = None;
    let mut available = None;
    let mut disks: Option<Vec<String>> = None;
    let mut stats: Option<Vec<&str>> = None;
    for (i, line) in text.lines().enumerate() {
        if i >= MAX_SNAPSHOT_LINES {
            return Err(WatchError::TooLarge {
                what: format!("over {MAX_SNAPSHOT_LINES} lines"),
            });
        }
        if line.len() > MAX_LINE {
            return Err(WatchError::TooLarge {
                what: format!("a line of {} bytes, over {MAX_LINE}", line.len()),
            });
        }
        if let Some(s) = stats.as_mut() {
            s.push(line);
        } else if line == DISKSTATS {
            stats = Some(Vec::new());
        } else if let Some(rest) = line.strip_prefix("uptime ") {
            const WHAT: &str = "/proc/uptime";
            let word = rest.split_whitespace().next().unwrap_or("");
            let v = word
                .parse::<f64>()
                .ok()
                .filter(|v| v.is_finite() && *v >= 0.0 && word.len() <= 32)
                .ok_or_else(|| WatchError::Invalid {
                    what: WHAT,
                    reason: "not a number of seconds".into(),
                    line: quote(line),
                })?;
            once(&mut uptime, v, WHAT)?;
        } else if let Some(rest) = line.strip_prefix("cpu ") {
            once(
                &mut cpu,
                cpu_ticks(rest, line)?,
                "the cpu line of /proc/stat",
            )?;
        } else if let Some(rest) = line.strip_prefix("MemTotal:") {
            const WHAT: &str = "MemTotal of /proc/meminfo";
            once(&mut total, mem_bytes(WHAT, rest, line)?, WHAT)?;
        } else if let Some(rest) = line.strip_prefix("MemAvailable:") {
            const WHAT: &str = "MemAvailable of /proc/meminfo";
            once(&mut available, mem_bytes(WHAT, rest, line)?, WHAT)?;
        } else if let Some(rest) = line
            .strip_prefix("disks")
            .filter(|r| r.is_empty() || r.starts_with(' '))
        {
            let names = rest.split_whitespace().filter_map(whole_disk).collect();
            once(&mut disks, names, "the disks of /sys/block")?;
        } else if !line.trim().is_empty() {
            return Err(WatchError::Invalid {
                what: "a snapshot line",
                reason: "not one the watch script prints".into(),
                line: quote(line),
            });
        }
    }
    let cpu = cpu.ok_or(WatchError::Missing {
        what: "the cpu line of /proc/stat",
    })?;
    let mem_total_bytes = total.ok_or(WatchError::Missing {
        what: "MemTotal of /proc/meminfo",
    })?;
    let mem_available_bytes = available.ok_or(WatchError::Missing {
        what: "MemAvailable of /proc/meminfo",
    })?;
    if mem_available_bytes > mem_total_bytes {
        return Err(WatchError::Invalid {
            what: "MemAvailable of /proc/meminfo",
            reason: format!("{mem_available_bytes} bytes, over MemTotal's {mem_total_bytes}"),
            line: String::new(),
        });
    }
    let wanted = disks.ok_or(WatchError::Missing {
        what: "the disks of /sys/block",
    })?;
    let stats = stats.ok_or(WatchError::Missing {
        what: "/proc/diskstats",
    })?;
    let (disks, disk) = disk_sums(&wanted, &stats)?;
    Ok(Snapshot {
        uptime_s: uptime,
        cpu,
        mem_total_bytes,
        mem_available_bytes,
        disks,
        disk,
    })
}

/// The diskstats counters of the `wanted` disks, summed; the disks found, sorted. A disk twice
/// is an error; lines of other devices (partitions, loop devices) are not read.
fn disk_sums(wanted: &[String], stats: &[&str]) -> Result<(Vec<String>, DiskCounters), WatchError> {
    const WHAT: &str = "a line of /proc/diskstats";
    let mut found: Vec<String> = Vec::new();
    let mut sum = DiskCounters::default();
    let add = |a: u64, b: u64, line: &str| {
        a.checked_add(b).ok_or_else(|| WatchError::Invalid {
            what: WHAT,
            reason: "the disks' sum is over 2^64".into(),
            line: quote(line),
        })
    };
    for line in stats {
        let f: Vec<&str> = line.split_whitespace().take(11).collect();
        let Some(name) = f.get(2) else { continue };
        if !wanted.iter().any(|w| w == name) {
            continue;
        }
        if found.iter().any(|d| d == name) {
            return Err(WatchError::Duplicate {
                what: "a disk of /proc/diskstats",
            });
        }
        if f.len() < 11 {
            return Err(WatchError::Invalid {
                what: WHAT,
                reason: format!("{} fields, not at least 11", f.len()),
                line: quote(line),
            });
        }
        let n = |i: usize| number(WHAT, f.get(i).copied().unwrap_or(""), line);
        sum.reads = add(sum.reads, n(3)?, line)?;
        sum.read_sectors = add(sum.read_sectors, n(5)?, line)?;
        sum.read_ms = add(sum.read_ms, n(6)?, line)?;
        sum.writes = add(sum.writes, n(7)?, line)?;
        sum.write_sectors = add(sum.write_sectors, n(9)?, line)?;
        sum.write_ms = add(sum.write_ms, n(10)?, line)?;
        found.push((*name).to_string());
    }
    found.sort();
    Ok((found, sum))
}

/// `cur - prev` of a counter, or [`WatchError::Backwards`].
fn delta(what: &'static str, prev: u64, cur: u64) -> Result<u64, WatchError> {
    cur.checked_sub(prev)
        .ok_or(WatchError::Backwards { what, prev, cur })
}

/// The differences of the disk counters between two snapshots.
fn disk_delta(prev: &Snapshot, cur: &Snapshot) -> Result<DiskCounters, WatchError> {
    if prev.disks != cur.disks {
        return Err(WatchError::DisksChanged {
            prev: prev.disks.clone(),
            cur: cur.disks.clone(),
        });
    }
    let (p, c) = (&prev.disk, &cur.disk);
    Ok(DiskCounters {
        reads: delta("reads completed (/proc/diskstats)", p.reads, c.reads)?,
        read_sectors: delta("sectors read", p.read_sectors, c.read_sectors)?,
        read_ms: delta("time reading", p.read_ms, c.read_ms)?,
        writes: delta("writes completed", p.writes, c.writes)?,
        write_sectors: delta("sectors written", p.write_sectors, c.write_sectors)?,
        write_ms: delta("time writing", p.write_ms, c.write_ms)?,
    })
}

/// Milliseconds per I/O (none without I/O).
fn per_io(ms: u64, ios: u64) -> Option<f64> {
    (ios > 0).then(|| ms as f64 / ios as f64)
}

/// The figures of the interval between two snapshots, ending at `t_unix_s` (the coordinator's
/// clock) and `interval_s` long: CPU busy = 1 - (idle + iowait) / total over the interval, in
/// percent; iowait percent; memory used = MemTotal - MemAvailable now; disk IOPS and MB/s
/// (10^6 bytes, sectors of 512 bytes) over the whole disks; latency = time spent / I/Os (none
/// without I/O). A counter that went backwards, changed disks or no time passed give no sample
/// (an error), never a negative figure. (iowait alone may decrease, as the kernel documents:
/// such a decrease counts as none.)
pub fn sample(
    prev: &Snapshot,
    cur: &Snapshot,
    t_unix_s: f64,
    interval_s: f64,
) -> Result<ServerSample, WatchError> {
    if !(interval_s.is_finite() && interval_s > 0.0) {
        return Err(WatchError::NoInterval {
            what: "the interval",
        });
    }
    let total = delta("CPU time (/proc/stat)", prev.cpu.total, cur.cpu.total)?;
    let idle = delta("CPU idle time (/proc/stat)", prev.cpu.idle, cur.cpu.idle)?;
    if total == 0 {
        return Err(WatchError::NoInterval {
            what: "CPU time (/proc/stat)",
        });
    }
    let iowait = cur.cpu.iowait.saturating_sub(prev.cpu.iowait).min(total);
    let not_busy = idle.saturating_add(iowait).min(total);
    // Busy and iowait are disjoint shares of the interval's ticks: never over 100% together.
    debug_assert!(iowait <= not_busy && not_busy <= total);
    let d = disk_delta(prev, cur)?;
    let mb_s = |sectors: u64| sectors as f64 * 512.0 / 1e6 / interval_s;
    Ok(ServerSample {
        t_unix_s,
        interval_s,
        cpu_pct: (total - not_busy) as f64 * 100.0 / total as f64,
        iowait_pct: iowait as f64 * 100.0 / total as f64,
        mem_used_bytes: cur.mem_total_bytes.saturating_sub(cur.mem_available_bytes),
        mem_total_bytes: cur.mem_total_bytes,
        disk_read_iops: d.reads as f64 / interval_s,
        disk_write_iops: d.writes as f64 / interval_s,
        disk_read_mb_s: mb_s(d.read_sectors),
        disk_write_mb_s: mb_s(d.write_sectors),
        disk_read_ms: per_io(d.read_ms, d.reads),
        disk_write_ms: per_io(d.write_ms, d.writes),
    })
}

/// The POSIX sh script that takes `max_snapshots` snapshots, `interval` apart (whole seconds,
/// at least 1: POSIX `sleep` takes no fraction), printing each between `@@snap` and `@@end`
/// lines after a `@@mbx-watch 1` header (or only `@@mbx-watch noproc <uname -s>` without
/// /proc/stat). One line (any login shell passes it to `sh -c`). It ends by itself after its
/// snapshots, when a write fails (SIGPIPE is ignored so the failed write is seen), or when its
/// stdin ends: a background subshell reads stdin and sends the script SIGTERM at its end, and
/// the script then kills its `sleep` and that subshell and waits for them (no zombie either).
/// So closing its stdin (or the ssh connection going) leaves nothing running.
pub fn script(interval: Duration, max_snapshots: u64) -> String {
    let secs = interval
        .as_secs()
        .saturating_add(u64::from(interval.subsec_nanos() > 0));
    let secs = secs.max(1);
    [
        "trap '' PIPE",
        &format!(
            "if [ ! -r /proc/stat ]; then echo \"{NOPROC} $(uname -s 2>/dev/null)\"; exit 0; fi"
        ),
        &format!("echo '{HEADER}' || exit 0"),
        "exec 3<&0",
        "{ while read -r _ <&3; do :; done; kill -TERM $$; } </dev/null >/dev/null 2>&1 & w=$!",
        "sp=",
        "trap 'kill $sp $w 2>/dev/null; wait; exit 0' TERM",
        "d=$(ls /sys/block 2>/dev/null | tr '\\n' ' ')",
        "n=0",
        &format!(
            "while [ $n -lt {max_snapshots} ]; do n=$((n+1)); \
             s=$(read -r u _ </proc/uptime && echo \"uptime $u\"; grep '^cpu ' /proc/stat; \
             grep -E '^(MemTotal|MemAvailable):' /proc/meminfo; echo \"disks $d\"; \
             echo {DISKSTATS}; cat /proc/diskstats); \
             printf '{SNAP}\\n%s\\n{END}\\n' \"$s\" 2>/dev/null || break; \
             [ $n -lt {max_snapshots} ] || break; \
             sleep {secs} </dev/null >/dev/null 2>&1 & sp=$!; wait $sp; sp=; done"
        ),
        "kill $w 2>/dev/null",
        "wait",
        "exit 0",
    ]
    .join("; ")
}

/// The samples file of a server, relative to the result: `servers/<name>.jsonl` (what
/// [`ServerWatch::samples_file`] says; [`Watcher::start`]'s `samples_path` is expected there).
pub fn samples_file(name: &str) -> String {
    format!("servers/{name}.jsonl")
}

/// What [`Watcher::start`] runs on the server: [`script`] with `max_samples + 1` snapshots,
/// under `sh -c` whatever the login shell.
fn remote_command(interval: Duration, max_samples: u64) -> String {
    format!(
        "sh -c {}",
        sh(&script(interval, max_samples.saturating_add(1)))
    )
}

/// What the reader thread has seen so far.
#[derive(Debug, Default)]
struct Acc {
    header: bool,
    noproc: Option<String>,
    snapshots: u64,
    samples: u64,
    /// The last good snapshot, when it came (Instant) and the clock then.
    prev: Option<(Snapshot, Instant)>,
    cpu_sum: f64,
    cpu_max: f64,
    mem_used_max: u64,
    mem_total: u64,
    read_iops_sum: f64,
    write_iops_sum: f64,
    read_mb_s_sum: f64,
    write_mb_s_sum: f64,
    /// Over every interval sampled: I/Os and the time they took (the run-long latency; equal to
    /// last-minus-first counters, but not spoilt by a reset in between).
    reads: u64,
    read_ms: u64,
    writes: u64,
    write_ms: u64,
    /// Snapshots or intervals that gave no sample, and the first reason.
    dropped: u64,
    first_drop: Option<String>,
    write_error: Option<String>,
}

impl Acc {
    fn drop_one(&mut self, why: String) {
        self.dropped = self.dropped.saturating_add(1);
        self.first_drop.get_or_insert(why);
    }

    /// A snapshot's text: parsed, sampled against the one before, the sample written.
    fn on_snapshot(&mut self, text: &str, file: &mut Option<File>, path: &Path, max: u64) {
        self.snapshots = self.snapshots.saturating_add(1);
        let cur = match parse_snapshot(text) {
            Ok(s) => s,
            Err(e) => return self.drop_one(e.to_string()),
        };
        let now = Instant::now();
        self.mem_total = cur.mem_total_bytes;
        if let Some((prev, at)) = &self.prev {
            let interval = match (prev.uptime_s, cur.uptime_s) {
                (Some(a), Some(b)) if b > a => b - a,
                _ => now.duration_since(*at).as_secs_f64(),
            };
            match sample(prev, &cur, unix_now(), interval) {
                Ok(s) if self.samples < max => {
                    if let Ok(d) = disk_delta(prev, &cur) {
                        self.reads = self.reads.saturating_add(d.reads);
                        self.read_ms = self.read_ms.saturating_add(d.read_ms);
                        self.writes = self.writes.saturating_add(d.writes);
                        self.write_ms = self.write_ms.saturating_add(d.write_ms);
                    }
                    self.add(&s);
                    self.write(&s, file, path);
                }
                Ok(_) => {}
                Err(e) => self.drop_one(e.to_string()),
            }
        }
        self.prev = Some((cur, now));
    }

    fn add(&mut self, s: &ServerSample) {
        self.samples = self.samples.saturating_add(1);
        self.cpu_sum += s.cpu_pct;
        self.cpu_max = self.cpu_max.max(s.cpu_pct);
        self.mem_used_max = self.mem_used_max.max(s.mem_used_bytes);
        self.read_iops_sum += s.disk_read_iops;
        self.write_iops_sum += s.disk_write_iops;
        self.read_mb_s_sum += s.disk_read_mb_s;
        self.write_mb_s_sum += s.disk_write_mb_s;
    }

    /// Appends the sample as a JSON line (one write, so a line is whole or torn only at the end).
    fn write(&mut self, s: &ServerSample, file: &mut Option<File>, path: &Path) {
        let Some(f) = file else { return };
        let written = serde_json::to_string(s)
            .map_err(|e| e.to_string())
            .and_then(|mut line| {
                line.push('\n');
                f.write_all(line.as_bytes()).map_err(|e| e.to_string())
            });
        if let Err(e) = written {
            self.write_error = Some(format!("writing {}: {e}", path.display()));
            *file = None;
        }
    }
}

/// Reads one line of at most [`MAX_LINE`] bytes into `buf` (the rest of a longer line is read
/// and dropped): `None` at the end, else whether the line was whole.
fn read_line_bounded(r: &mut impl BufRead, buf: &mut Vec<u8>) -> std::io::Result<Option<bool>> {
    buf.clear();
    let mut whole = true;
    let mut any = false;
    loop {
        let avail = match r.fill_buf() {
            Ok(a) => a,
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
            Err(e) => return Err(e),
        };
        if avail.is_empty() {
            return Ok(any.then_some(whole));
        }
        any = true;
        let newline = avail.iter().position(|&b| b == b'\n');
        let chunk = avail.get(..newline.unwrap_or(avail.len())).unwrap_or(&[]);
        let room = MAX_LINE.saturating_sub(buf.len());
        if chunk.len() > room {
            whole = false;
        }
        buf.extend_from_slice(chunk.get(..room.min(chunk.len())).unwrap_or(&[]));
        let used = newline.map_or(avail.len(), |i| i.saturating_add(1));
        r.consume(used);
        if newline.is_some() {
            return Ok(Some(whole));
        }
    }
}

/// The reader thread: the script's output, line by line, into `acc`.
fn read_stream(
    out: impl Read,
    acc: &Mutex<Acc>,
    stopping: &AtomicBool,
    mut file: Option<File>,
    path: &Path,
    max: u64,
) {
    let mut r = BufReader::new(out);
    let mut buf = Vec::new();
    // The snapshot being read: its text, and whether it is still within bounds.
    let mut snap: Option<(String, usize, bool)> = None;
    while let Ok(Some(whole)) = read_line_bounded(&mut r, &mut buf) {
        let line = String::from_utf8_lossy(&buf);
        let line = line.strip_suffix('\r').unwrap_or(&line);
        let Ok(mut a) = acc.lock() else { return };
        if stopping.load(Ordering::SeqCst) {
            return;
        }
        if line == END {
            if let Some((text, _, ok)) = snap.take() {
                if ok {
                    a.on_snapshot(&text, &mut file, path, max);
                } else {
                    a.snapshots = a.snapshots.saturating_add(1);
                    a.drop_one(
                        WatchError::TooLarge {
                            what: format!(
                                "over {MAX_SNAPSHOT_BYTES} bytes, {MAX_SNAPSHOT_LINES} lines or a line over {MAX_LINE} bytes"
                            ),
                        }
                        .to_string(),
                    );
                }
            }
        } else if let Some((text, lines, ok)) = snap.as_mut() {
            *lines = lines.saturating_add(1);
            if !whole
                || *lines > MAX_SNAPSHOT_LINES
                || text.len().saturating_add(line.len()) >= MAX_SNAPSHOT_BYTES
            {
                *ok = false;
            }
            if *ok {
                text.push_str(line);
                text.push('\n');
            }
        } else if line == SNAP {
            snap = Some((String::new(), 0, true));
        } else if line == HEADER {
            a.header = true;
        } else if let Some(os) = line.strip_prefix(NOPROC) {
            a.noproc = Some(quote(os.trim()));
        }
        // Anything else outside a snapshot (a login banner) is not ours: skipped.
    }
}

/// Waits at most `limit` for the child to end.
fn wait_for(child: &mut Child, limit: Duration) -> Option<ExitStatus> {
    let start = Instant::now();
    loop {
        match child.try_wait() {
            Ok(Some(s)) => return Some(s),
            Ok(None) if start.elapsed() < limit => std::thread::sleep(Duration::from_millis(20)),
            _ => return None,
        }
    }
}

/// One server watched: the process running [`script`] (ssh, or a local `sh -c` in tests) and
/// the thread reading its output, which appends each [`ServerSample`] to the samples file as it
/// comes. [`Watcher::stop`] ends it and gives the summary. Dropped without `stop`, the process
/// is killed.
#[derive(Debug)]
pub struct Watcher {
    name: String,
    dest: String,
    child: Child,
    stdin: Option<ChildStdin>,
    acc: Arc<Mutex<Acc>>,
    stopping: Arc<AtomicBool>,
    drained: mpsc::Receiver<()>,
    stderr: mpsc::Receiver<Vec<u8>>,
    max_samples: u64,
}

impl Watcher {
    /// Watches `dest` over ssh (`name` from the hosts file): runs [`script`] there with
    /// `max_samples + 1` snapshots `interval` apart (at most `max_samples` samples), appending
    /// each sample to `samples_path` (its folder made if need be; expected at
    /// `<result folder>/`[`samples_file`]`(name)`). An error only if the file or the ssh
    /// process cannot be made: a server that cannot be reached or read is the summary's `error`.
    pub fn start(
        ssh: &Ssh,
        name: &str,
        dest: &str,
        interval: Duration,
        max_samples: u64,
        samples_path: &Path,
    ) -> Result<Watcher, WatchError> {
        Watcher::with_command(
            ssh.cmd(dest, &remote_command(interval, max_samples)),
            name,
            dest,
            max_samples,
            samples_path,
        )
    }

    /// [`Watcher::start`] with a ready command that runs [`script`], e.g. `sh -c SCRIPT` on
    /// this machine (its stdin, stdout and stderr are set here). `dest` only names the server in
    /// the summary.
    pub fn with_command(
        mut cmd: Command,
        name: &str,
        dest: &str,
        max_samples: u64,
        samples_path: &Path,
    ) -> Result<Watcher, WatchError> {
        let io = |what: String| move |error| WatchError::Io { what, error };
        if let Some(dir) = samples_path.parent().filter(|d| !d.as_os_str().is_empty()) {
            std::fs::create_dir_all(dir)
                .map_err(io(format!("making the folder {}", dir.display())))?;
        }
        let file = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(samples_path)
            .map_err(io(format!(
                "opening the samples file {}",
                samples_path.display()
            )))?;
        let mut child = cmd
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .map_err(io(format!(
                "starting {:?} to watch server {name}",
                cmd.get_program()
            )))?;
        let stdin = child.stdin.take();
        let out = child.stdout.take();
        let err = child.stderr.take();
        let acc = Arc::new(Mutex::new(Acc::default()));
        let stopping = Arc::new(AtomicBool::new(false));
        let (done_tx, drained) = mpsc::channel();
        {
            let (acc, stopping) = (Arc::clone(&acc), Arc::clone(&stopping));
            let path: PathBuf = samples_path.to_path_buf();
            std::thread::spawn(move || {
                if let Some(out) = out {
                    read_stream(out, &acc, &stopping, Some(file), &path, max_samples);
                }
                let _ = done_tx.send(());
            });
        }
        let (err_tx, stderr) = mpsc::channel();
        std::thread::spawn(move || {
            let mut buf = Vec::new();
            if let Some(mut p) = err {
                let _ = Read::read_to_end(&mut Read::take(&mut p, STDERR_LIMIT), &mut buf);
                let _ = std::io::copy(&mut p, &mut std::io::sink());
            }
            let _ = err_tx.send(buf);
        });
        Ok(Watcher {
            name: name.to_string(),
            dest: dest.to_string(),
            child,
            stdin,
            acc,
            stopping,
            drained,
            stderr,
            max_samples,
        })
    }

    /// The process id of the ssh (or local) process.
    pub fn id(&self) -> u32 {
        self.child.id()
    }

    /// Ends the watch and returns its summary: closes the script's stdin (it ends itself on the
    /// server, killing its `sleep`), waits up to 5 s for the process, kills it if need be (2 s
    /// more), lets the reader take what was printed (2 s), and sums up: averages over the
    /// samples, the largest CPU and memory, the disks' latency over the whole run, and `error`
    /// if the connection failed or ended early, the server has no /proc, or snapshots gave no
    /// sample.
    pub fn stop(mut self) -> ServerWatch {
        let ended_by_itself = self.child.try_wait().ok().flatten();
        drop(self.stdin.take());
        let status = ended_by_itself
            .or_else(|| wait_for(&mut self.child, STOP_WAIT))
            .or_else(|| {
                let _ = self.child.kill();
                wait_for(&mut self.child, KILL_WAIT)
            });
        // The output is read to its end (the process has ended), bounded in case a child of it
        // still holds the pipe.
        let _ = self.drained.recv_timeout(DRAIN_WAIT);
        self.stopping.store(true, Ordering::SeqCst);
        let stderr = self
            .stderr
            .recv_timeout(Duration::from_millis(500))
            .unwrap_or_default();
        let stderr = String::from_utf8_lossy(&stderr);
        let said = stderr
            .lines()
            .rev()
            .find(|l| !l.trim().is_empty())
            .map(|l| quote(l.trim()))
            .unwrap_or_default();
        let acc = match self.acc.lock() {
            Ok(mut a) => std::mem::take(&mut *a),
            Err(_) => Acc::default(),
        };
        let ended_early =
            ended_by_itself.filter(|_| acc.snapshots < self.max_samples.saturating_add(1));
        summary(&self.name, &self.dest, acc, ended_early, status, &said)
    }
}

impl Drop for Watcher {
    fn drop(&mut self) {
        drop(self.stdin.take());
        if matches!(self.child.try_wait(), Ok(None)) {
            let _ = self.child.kill();
            let _ = wait_for(&mut self.child, KILL_WAIT);
        }
    }
}

/// The [`ServerWatch`] of what the reader saw.
fn summary(
    name: &str,
    dest: &str,
    a: Acc,
    ended_early: Option<ExitStatus>,
    status: Option<ExitStatus>,
    stderr: &str,
) -> ServerWatch {
    let how = |s: Option<ExitStatus>| {
        let s = s.map_or_else(|| "not ended".to_string(), |s| s.to_string());
        if stderr.is_empty() {
            s
        } else {
            format!("{s}: {stderr}")
        }
    };
    let mut errors = Vec::new();
    let source = if let Some(os) = &a.noproc {
        errors.push(format!(
            "server {name} ({dest}) has no /proc/stat ({}): only Linux servers are watched (a Windows server's counters would need typeperf or Get-Counter)",
            if os.is_empty() { "unknown system" } else { os }
        ));
        format!(
            "not read: no /proc/stat on {}",
            if os.is_empty() { "the server" } else { os }
        )
    } else if !a.header {
        errors.push(format!(
            "the watch of server {name} over `ssh {dest}` did not start ({})",
            how(status)
        ));
        "not read: the watch script did not start (ssh failed, or the login shell is not POSIX sh: a Windows server?)".into()
    } else {
        if let Some(s) = ended_early {
            errors.push(format!(
                "the connection to {dest} ended after {} samples ({})",
                a.samples,
                how(Some(s))
            ));
        }
        SOURCE_LINUX.into()
    };
    if let Some(why) = &a.first_drop {
        errors.push(format!(
            "{} snapshot(s) gave no sample, the first because {why}",
            a.dropped
        ));
    }
    if let Some(e) = &a.write_error {
        errors.push(e.clone());
    }
    // A sample is the interval between two snapshots read: fewer samples than snapshots.
    debug_assert!(
        a.samples < a.snapshots.max(1),
        "{} samples of {} snapshots",
        a.samples,
        a.snapshots
    );
    let n = a.samples as f64;
    let avg = |sum: f64| if a.samples > 0 { sum / n } else { 0.0 };
    ServerWatch {
        name: name.to_string(),
        ssh: dest.to_string(),
        source,
        samples: a.samples,
        samples_file: samples_file(name),
        cpu_pct_avg: avg(a.cpu_sum),
        cpu_pct_max: a.cpu_max,
        mem_used_bytes_max: a.mem_used_max,
        mem_total_bytes: a.mem_total,
        disk_read_iops_avg: avg(a.read_iops_sum),
        disk_write_iops_avg: avg(a.write_iops_sum),
        disk_read_mb_s_avg: avg(a.read_mb_s_sum),
        disk_write_mb_s_avg: avg(a.write_mb_s_sum),
        disk_read_ms_avg: per_io(a.read_ms, a.reads),
        disk_write_ms_avg: per_io(a.write_ms, a.writes),
        error: (!errors.is_empty()).then(|| errors.join("; ")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// One snapshot of this machine's /proc as the script prints it (captured once; a VM with
    /// loop devices, a zram device and one virtio disk, no partitions).
    const REAL: &str = "uptime 30581.34
cpu  2370640 291636 636122 2470720 274404 0 22223 4957 0 0
MemTotal:       24684096 kB
MemAvailable:   24085920 kB
disks loop0 loop1 loop2 loop3 loop4 loop5 loop6 loop7 vda zram0 
@@diskstats
   7       0 loop0 5488953 101 353546016 1325579 128260 53936 6364478 59280 0 101852 1396347 288 0 15737120 205 8138 11282
   7       1 loop1 1656866 0 106152824 491710 12523 7307 1495338 4928 0 30784 499091 180 0 11757748 110 2535 2342
   7       2 loop2 1503324 0 96149068 317566 1136 850 277520 909 0 18504 319186 22 0 1441814 94 225 616
   7       3 loop3 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0
   7       4 loop4 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0
   7       5 loop5 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0
   7       6 loop6 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0
   7       7 loop7 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0
 254       0 vda 30503819 1119075 2438746498 73535538 18253450 1526554 1690186824 18994707 0 3266820 93455754 1471265 450 818389544 417683 2085748 507825
 253       0 zram0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0
";

    /// A made-up snapshot: two disks (one named with `!` in /sys/block), their partitions, an
    /// LVM volume on them, an old kernel's short partition line.
    fn snap(cpu: &str, avail_kb: u64, sda: &str, cciss: &str, uptime: &str) -> String {
        format!(
            "uptime {uptime}\ncpu  {cpu}\nMemTotal: 8388608 kB\nMemAvailable: {avail_kb} kB\n\
             disks sda cciss!c0d0 dm-0 md0 loop0\n@@diskstats\n\
             8 0 sda {sda}\n8 1 sda1 1 2 3 4\n104 0 cciss/c0d0 {cciss}\n\
             253 0 dm-0 9 9 9 9 9 9 9 9 0 0 0\n7 0 loop0 5 5 5 5 5 5 5 5 0 0 0\n"
        )
    }

    fn parsed(text: &str) -> Snapshot {
        match parse_snapshot(text) {
            Ok(s) => s,
            Err(e) => panic!("{e}\n{text}"),
        }
    }

    fn err(text: &str) -> String {
        match parse_snapshot(text) {
            Ok(s) => panic!("parsed {s:?} from\n{text}"),
            Err(e) => e.to_string(),
        }
    }

    #[test]
    fn real_proc_text_parses() {
        let s = parsed(REAL);
        assert_eq!(s.uptime_s, Some(30581.34));
        assert_eq!(
            s.cpu,
            CpuTicks {
                total: 2370640 + 291636 + 636122 + 2470720 + 274404 + 22223 + 4957,
                idle: 2470720,
                iowait: 274404,
            }
        );
        assert_eq!(s.mem_total_bytes, 24684096 * 1024);
        assert_eq!(s.mem_available_bytes, 24085920 * 1024);
        // Only the disk: no loop or zram device.
        assert_eq!(s.disks, ["vda"]);
        assert_eq!(
            s.disk,
            DiskCounters {
                reads: 30503819,
                read_sectors: 2438746498,
                read_ms: 73535538,
                writes: 18253450,
                write_sectors: 1690186824,
                write_ms: 18994707,
            }
        );
    }

    #[test]
    fn whole_disks_only_are_summed() {
        let s = parsed(&snap(
            "10 0 10 100 0 0 0 0",
            4194304,
            "1 0 10 5 2 0 20 7 0 0 0",
            "3 0 30 15 4 0 40 9 0 0 0 0 0 0 0",
            "1.00",
        ));
        // cciss!c0d0 is cciss/c0d0; partitions, dm-0, md0 and loop0 are not counted.
        assert_eq!(s.disks, ["cciss/c0d0", "sda"]);
        assert_eq!(
            s.disk,
            DiskCounters {
                reads: 4,
                read_sectors: 40,
                read_ms: 20,
                writes: 6,
                write_sectors: 60,
                write_ms: 16,
            }
        );
        // A kernel without iowait: user nice system idle only.
        assert_eq!(
            s.cpu,
            CpuTicks {
                total: 120,
                idle: 100,
                iowait: 0
            }
        );
        let short = parsed(&REAL.replace(
            "cpu  2370640 291636 636122 2470720 274404 0 22223 4957 0 0",
            "cpu 1 2 3 4",
        ));
        assert_eq!(
            short.cpu,
            CpuTicks {
                total: 10,
                idle: 4,
                iowait: 0
            }
        );
        // No disk at all (a container): a snapshot still, with no disk figures.
        let none = parsed(&REAL.replace(
            "disks loop0 loop1 loop2 loop3 loop4 loop5 loop6 loop7 vda zram0 ",
            "disks",
        ));
        assert!(none.disks.is_empty());
        assert_eq!(none.disk, DiskCounters::default());
    }

    #[test]
    fn hostile_snapshots_are_errors_not_panics() {
        let cases: Vec<(String, &str)> = vec![
            ("garbage\n".into(), "not one the watch script prints"),
            (String::new(), "cpu line of /proc/stat is missing"),
            ("\u{0}\u{7f}ÿ\n".into(), "not one the watch script prints"),
            (
                REAL.replace("2370640", "99999999999999999999999"),
                "over 2^64",
            ),
            (REAL.replace("2370640", "-5"), "not a whole number"),
            (REAL.replace("2370640", "1e9"), "not a whole number"),
            (
                REAL.replace("2370640", &u64::MAX.to_string()),
                "sum is over 2^64",
            ),
            (
                REAL.replace("24684096 kB", &format!("{} kB", u64::MAX / 2)),
                "more bytes than 2^64",
            ),
            (REAL.replace("24684096 kB", "24684096 MB"), "not in kB"),
            (REAL.replace("24085920", "99999999"), "over MemTotal"),
            (
                REAL.replace("MemAvailable:   24085920 kB\n", ""),
                "MemAvailable of /proc/meminfo is missing",
            ),
            (
                REAL.replace("@@diskstats\n", ""),
                "not one the watch script prints",
            ),
            (
                REAL.split("@@diskstats").next().unwrap_or("").to_string(),
                "/proc/diskstats is missing",
            ),
            (
                REAL.replace(
                    "disks loop0 loop1 loop2 loop3 loop4 loop5 loop6 loop7 vda zram0 \n",
                    "",
                ),
                "disks of /sys/block is missing",
            ),
            (
                format!("cpu  1 2 3 4\n{REAL}"),
                "cpu line of /proc/stat appears twice",
            ),
            (
                REAL.replace(
                    "cpu  2370640 291636 636122 2470720 274404 0 22223 4957 0 0",
                    "cpu 1 2 3",
                ),
                "3 figures",
            ),
            (
                REAL.replace("uptime 30581.34", "uptime NaN"),
                "not a number of seconds",
            ),
            (
                REAL.replace("uptime 30581.34", "uptime -1"),
                "not a number of seconds",
            ),
            (
                REAL.lines()
                    .map(|l| {
                        if l.contains(" vda 3") {
                            "254 0 vda 1 2 3"
                        } else {
                            l
                        }
                    })
                    .collect::<Vec<_>>()
                    .join("\n"),
                "fields, not at least 11",
            ),
            (
                format!("{REAL}254 0 vda 1 1 1 1 1 1 1 1 1 1 1\n"),
                "a disk of /proc/diskstats appears twice",
            ),
            (format!("{REAL}{}\n", "x".repeat(MAX_LINE + 1)), "too large"),
            (
                format!("{REAL}{}", "0 0 sdz\n".repeat(MAX_SNAPSHOT_LINES)),
                "too large",
            ),
        ];
        for (text, want) in cases {
            let e = err(&text);
            assert!(e.contains(want), "{e:?} does not say {want:?}");
        }
        // Two whole disks whose sum overflows.
        let big = u64::MAX / 2 + 1;
        let sum = parse_snapshot(&snap(
            "1 0 1 1",
            1,
            &format!("{big} 0 1 1 1 0 1 1 0 0 0"),
            &format!("{big} 0 1 1 1 0 1 1 0 0 0"),
            "1",
        ));
        assert!(
            matches!(&sum, Err(WatchError::Invalid { reason, .. }) if reason.contains("2^64")),
            "{sum:?}"
        );
    }

    #[test]
    fn a_sample_from_two_known_snapshots() {
        // 400 ticks: 200 idle, 40 iowait -> 40% busy, 10% iowait; 2 GiB of 8 used; in 2 s:
        // 200 reads of 4000 sectors taking 500 ms, 100 writes of 20000 sectors taking 50 ms.
        let prev = parsed(&snap(
            "200 0 100 600 100 0 0 0 0 0",
            6291456,
            "1000 0 10000 3000 500 0 50000 1000 0 0 0",
            "0 0 0 0 0 0 0 0 0 0 0",
            "100.00",
        ));
        let cur = parsed(&snap(
            "300 0 160 800 140 0 0 0 0 0",
            6291456,
            "1150 0 13000 3400 560 0 62000 1030 0 0 0",
            "50 0 1000 100 40 0 8000 20 0 0 0",
            "102.00",
        ));
        let s = sample(&prev, &cur, 1_800_000_000.5, 2.0).expect("a sample");
        assert_eq!(
            s,
            ServerSample {
                t_unix_s: 1_800_000_000.5,
                interval_s: 2.0,
                cpu_pct: 40.0,
                iowait_pct: 10.0,
                mem_used_bytes: 2 << 30,
                mem_total_bytes: 8 << 30,
                disk_read_iops: 100.0,
                disk_write_iops: 50.0,
                disk_read_mb_s: 1.024,
                disk_write_mb_s: 5.12,
                disk_read_ms: Some(2.5),
                disk_write_ms: Some(0.5),
            }
        );
        // No I/O: no latency, zero rates.
        let idle = sample(
            &cur,
            &Snapshot {
                cpu: CpuTicks {
                    total: cur.cpu.total + 10,
                    ..cur.cpu
                },
                ..cur.clone()
            },
            1.0,
            1.0,
        )
        .expect("a sample");
        assert_eq!((idle.disk_read_ms, idle.disk_write_ms), (None, None));
        assert_eq!((idle.disk_read_iops, idle.disk_write_mb_s), (0.0, 0.0));
        assert_eq!(idle.cpu_pct, 100.0);
        // iowait that decreases (the kernel says it may) counts as none, never negative.
        let mut less = cur.clone();
        less.cpu.total += 100;
        less.cpu.idle += 50;
        less.cpu.iowait -= 30;
        let s = sample(&cur, &less, 1.0, 1.0).expect("a sample");
        assert_eq!((s.cpu_pct, s.iowait_pct), (50.0, 0.0));
    }

    #[test]
    fn backwards_counters_give_no_sample() {
        let a = parsed(REAL);
        let mut rebooted = a.clone();
        rebooted.cpu.total = 1000;
        rebooted.cpu.idle = 10;
        let mut disk_reset = a.clone();
        disk_reset.cpu.total += 100;
        disk_reset.disk.write_ms -= 1;
        let mut gone = a.clone();
        gone.cpu.total += 100;
        gone.disks.clear();
        let mut later = a.clone();
        later.cpu.total += 100;
        for (cur, interval, want) in [
            (&rebooted, 1.0, "CPU time (/proc/stat) went backwards"),
            (&disk_reset, 1.0, "time writing went backwards"),
            (&gone, 1.0, "disks changed"),
            (&a, 1.0, "no time passed"),
            (&later, 0.0, "no time passed"),
            (&later, f64::NAN, "no time passed"),
            (&later, -1.0, "no time passed"),
        ] {
            match sample(&a, cur, 1.0, interval) {
                Ok(s) => panic!("a sample {s:?} for {want}"),
                Err(e) => assert!(e.to_string().contains(want), "{e} for {want}"),
            }
        }
        assert!(sample(&a, &later, 1.0, 1.0).is_ok());
    }

    /// The snapshot markers around a snapshot's text.
    fn framed(text: &str) -> String {
        format!("{SNAP}\n{text}{END}\n")
    }

    #[test]
    fn the_stream_is_read_bounded_and_samples_are_appended() {
        let dir = tempfile::tempdir().expect("tempdir");
        let path = dir.path().join("s.jsonl");
        let a = parsed(REAL);
        let mut text = REAL.replace("uptime 30581.34", "uptime 30582.34");
        for (from, to) in [
            ("2370640", "2370740"), // +100 user ticks, no idle: 100% busy
            ("30503819", "30503829"),
            ("73535538", "73535578"),
        ] {
            text = text.replace(from, to);
        }
        let b = parsed(&text);
        let mut rebooted = REAL.replace("cpu  2370640", "cpu  1");
        rebooted = rebooted.replace("uptime 30581.34", "uptime 5.0");
        let stream = [
            "Welcome to the server\n".to_string(),
            format!("{HEADER}\n"),
            framed(REAL),
            framed(&format!("{}\n", "y".repeat(MAX_LINE * 3))),
            framed("garbage\n"),
            framed(&text),
            framed(&rebooted),
            framed(&text.replace("uptime 30582.34", "uptime 6.0")),
            // A snapshot cut off by the end of the connection: not used.
            format!("{SNAP}\n{REAL}"),
        ]
        .concat();
        let acc = Mutex::new(Acc::default());
        let file = File::create(&path).expect("file");
        read_stream(
            stream.as_bytes(),
            &acc,
            &AtomicBool::new(false),
            Some(file),
            &path,
            10,
        );
        let a_acc = acc.into_inner().expect("lock");
        assert!(a_acc.header);
        assert_eq!(a_acc.snapshots, 6);
        // REAL -> text: one sample; text -> rebooted: backwards; rebooted -> text at 6.0 s: a
        // sample again from the new baseline.
        assert_eq!(a_acc.samples, 2, "{:?}", a_acc.first_drop);
        assert_eq!(a_acc.dropped, 3);
        let first = a_acc.first_drop.clone().unwrap_or_default();
        assert!(first.contains("too large"), "{first}");
        let lines: Vec<ServerSample> = std::fs::read_to_string(&path)
            .expect("samples")
            .lines()
            .map(|l| serde_json::from_str(l).expect("a sample line"))
            .collect();
        assert_eq!(lines.len(), 2);
        let want = sample(&a, &b, lines[0].t_unix_s, 1.0).expect("sample");
        assert_eq!(lines[0], want);
        assert_eq!(lines[0].disk_read_ms, Some(4.0));
        assert!((lines[0].cpu_pct - 100.0).abs() < 1e-9);
        let w = summary("m", "root@m", a_acc, None, None, "");
        assert_eq!(w.source, SOURCE_LINUX);
        assert_eq!(w.samples, 2);
        assert_eq!(w.mem_total_bytes, 24684096 * 1024);
        assert!(w
            .error
            .as_deref()
            .unwrap_or("")
            .contains("3 snapshot(s) gave no sample"));
    }

    /// The processes of this machine in process group `pgid` (not zombies: they run nothing).
    #[cfg(target_os = "linux")]
    fn in_group(pgid: u32) -> Vec<u32> {
        let mut found = Vec::new();
        for e in std::fs::read_dir("/proc").expect("/proc").flatten() {
            let Some(pid) = e.file_name().to_str().and_then(|s| s.parse::<u32>().ok()) else {
                continue;
            };
            let Ok(stat) = std::fs::read_to_string(e.path().join("stat")) else {
                continue;
            };
            // pid (comm) state ppid pgrp ...: comm may hold spaces, so after its ')'.
            let after = stat.rsplit_once(')').map_or("", |(_, r)| r);
            let mut fields = after.split_whitespace();
            let zombie = fields.next() == Some("Z");
            if !zombie && fields.nth(1) == Some(pgid.to_string().as_str()) {
                found.push(pid);
            }
        }
        found
    }

    #[cfg(target_os = "linux")]
    fn local(script: &str) -> Command {
        let mut c = Command::new("sh");
        c.arg("-c").arg(script);
        std::os::unix::process::CommandExt::process_group(&mut c, 0);
        c
    }

    #[cfg(target_os = "linux")]
    #[test]
    fn a_local_watch_samples_this_machine_and_leaves_nothing_running() {
        let dir = tempfile::tempdir().expect("tempdir");
        let path = dir.path().join("servers").join("local.jsonl");
        let cmd = local(&script(Duration::from_secs(1), 100));
        let w = Watcher::with_command(cmd, "local", "localhost", 100, &path).expect("start");
        let pid = w.id();
        std::thread::sleep(Duration::from_millis(3300));
        assert!(!in_group(pid).is_empty(), "the script is running");
        let t0 = Instant::now();
        let s = w.stop();
        // The script ended itself on the closed stdin: no kill after the 5 s wait.
        assert!(t0.elapsed() < STOP_WAIT, "{:?}", t0.elapsed());
        assert_eq!(left_in_group(pid), Vec::<String>::new());
        assert_eq!(s.error, None);
        assert_eq!(s.source, SOURCE_LINUX);
        assert!(s.samples >= 2, "{s:?}");
        assert_eq!(s.samples_file, "servers/local.jsonl");
        let meminfo = std::fs::read_to_string("/proc/meminfo").expect("meminfo");
        let kb: u64 = meminfo
            .lines()
            .find_map(|l| l.strip_prefix("MemTotal:"))
            .and_then(|r| r.split_whitespace().next())
            .and_then(|n| n.parse().ok())
            .expect("MemTotal");
        assert_eq!(s.mem_total_bytes, kb * 1024);
        assert!(s.mem_used_bytes_max > 0 && s.mem_used_bytes_max < s.mem_total_bytes);
        assert!((0.0..=100.0).contains(&s.cpu_pct_avg) && s.cpu_pct_avg <= s.cpu_pct_max);
        assert!(s.cpu_pct_max <= 100.0);
        for v in [
            s.disk_read_iops_avg,
            s.disk_write_iops_avg,
            s.disk_read_mb_s_avg,
            s.disk_write_mb_s_avg,
        ] {
            assert!(v.is_finite() && v >= 0.0, "{s:?}");
        }
        let lines: Vec<ServerSample> = std::fs::read_to_string(&path)
            .expect("samples file")
            .lines()
            .map(|l| serde_json::from_str(l).expect("a sample"))
            .collect();
        assert_eq!(lines.len() as u64, s.samples);
        for l in &lines {
            // The interval from /proc/uptime: about the second asked.
            assert!((0.5..2.5).contains(&l.interval_s), "{l:?}");
            assert!(l.t_unix_s > 1.7e9);
        }
    }

    #[cfg(target_os = "linux")]
    #[test]
    fn the_script_ends_by_itself_after_its_snapshots_or_when_its_output_is_gone() {
        // Its snapshots taken: it ends (stdin still open).
        let mut c = local(&script(Duration::from_secs(1), 2));
        let mut child = c
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .spawn()
            .expect("sh");
        let mut out = String::new();
        child
            .stdout
            .take()
            .expect("stdout")
            .read_to_string(&mut out)
            .expect("read");
        assert!(wait_for(&mut child, Duration::from_secs(5)).is_some_and(|s| s.success()));
        assert_eq!(out.matches(END).count(), 2, "{out}");
        assert!(out.starts_with(HEADER));
        assert_eq!(left_in_group(child.id()), Vec::<String>::new());
        // The reader gone (the ssh connection dropped): its next write fails and it ends.
        let mut c = local(&script(Duration::from_secs(1), 1000));
        let mut child = c
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .spawn()
            .expect("sh");
        let mut first = Vec::new();
        let mut r = BufReader::new(child.stdout.take().expect("stdout"));
        while read_line_bounded(&mut r, &mut first)
            .expect("read")
            .is_some()
            && first != END.as_bytes()
        {}
        drop(r);
        let status = wait_for(&mut child, Duration::from_secs(5));
        let _ = child.kill();
        assert!(
            status.is_some(),
            "the script kept running without its reader"
        );
        assert_eq!(left_in_group(child.id()), Vec::<String>::new());
    }

    /// The command lines of the processes still in group `pgid` after up to 3 s.
    #[cfg(target_os = "linux")]
    fn left_in_group(pgid: u32) -> Vec<String> {
        let start = Instant::now();
        while !in_group(pgid).is_empty() && start.elapsed() < Duration::from_secs(3) {
            std::thread::sleep(Duration::from_millis(50));
        }
        in_group(pgid)
            .iter()
            .map(|p| std::fs::read_to_string(format!("/proc/{p}/cmdline")).unwrap_or_default())
            .collect()
    }

    #[cfg(target_os = "linux")]
    #[test]
    fn the_remote_command_runs_under_a_login_shell_and_stops_after_its_samples() {
        let dir = tempfile::tempdir().expect("tempdir");
        let path = dir.path().join("m.jsonl");
        // The login shell given the command line as ssh gives it.
        let w = Watcher::with_command(
            local(&remote_command(Duration::from_millis(300), 1)),
            "m",
            "m",
            1,
            &path,
        )
        .expect("start");
        // Two snapshots a second apart (the interval rounded up), then the script ends.
        std::thread::sleep(Duration::from_millis(1800));
        let pid = w.id();
        let s = w.stop();
        assert_eq!((s.samples, s.error.as_deref()), (1, None), "{s:?}");
        assert_eq!(left_in_group(pid), Vec::<String>::new());
        let text = std::fs::read_to_string(&path).expect("samples");
        assert_eq!(text.lines().count(), 1);
    }

    #[cfg(target_os = "linux")]
    #[test]
    fn a_failed_connection_or_a_server_without_proc_is_said() {
        let dir = tempfile::tempdir().expect("tempdir");
        let path = dir.path().join("x.jsonl");
        let failed = Watcher::with_command(
            local("echo 'ssh: connect to host mail1 port 22: Connection refused' >&2; exit 255"),
            "mail1",
            "root@mail1",
            10,
            &path,
        )
        .expect("start");
        std::thread::sleep(Duration::from_millis(300));
        let s = failed.stop();
        assert!(s.source.starts_with("not read:"), "{s:?}");
        let e = s.error.unwrap_or_default();
        assert!(
            e.contains("Connection refused") && e.contains("root@mail1"),
            "{e}"
        );
        assert_eq!(s.samples, 0);
        let windows = Watcher::with_command(
            local(&format!("echo '{NOPROC} Windows_NT'")),
            "mail2",
            "mail2",
            10,
            &path,
        )
        .expect("start");
        std::thread::sleep(Duration::from_millis(300));
        let s = windows.stop();
        assert_eq!(s.source, "not read: no /proc/stat on Windows_NT");
        assert!(s.error.unwrap_or_default().contains("typeperf"));
        // Ended after some samples, not by us: said with ssh's last words.
        let dropped = Watcher::with_command(
            local(&format!(
                "({}); echo 'Connection to mail3 closed by remote host.' >&2; exit 255",
                script(Duration::from_secs(1), 2)
            )),
            "mail3",
            "mail3",
            10,
            &path,
        )
        .expect("start");
        std::thread::sleep(Duration::from_millis(2500));
        let s = dropped.stop();
        assert_eq!(s.samples, 1);
        let e = s.error.unwrap_or_default();
        assert!(
            e.contains("ended after 1 samples") && e.contains("closed by remote host"),
            "{e}"
        );
    }
}
