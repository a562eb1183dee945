//! Readers of Linux's `/proc`: the system's CPU time (`/proc/stat`), a process's or thread's
//! CPU time (`/proc/self/stat`, `/proc/thread-self/stat`) and `Key: value kB` files
//! (`/proc/self/status`, `/proc/meminfo`). The parsers take the text (so they are tested, and
//! a remote host's text can be read with them); the readers return None where there is no
//! /proc or the text is not as the kernel writes it.
//!
//! CPU arithmetic (proc(5)): the `cpu` line's fields are user, nice, system, idle, iowait, irq,
//! softirq, steal, guest, guest_nice, in USER_HZ ticks. Guest time is already counted in user
//! and nice, so the total is the first eight fields, never all ten (which counts a guest's time
//! twice); busy is the total less idle and iowait.

use std::time::Duration;

/// USER_HZ: the unit of /proc's CPU times, 100 on every Linux architecture's user ABI
/// (`sysconf(_SC_CLK_TCK)`).
pub const USER_HZ: u64 = 100;

/// CPU time of all cores from the `cpu` line of /proc/stat, in ticks (USER_HZ).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct CpuTicks {
    /// user + nice + system + idle + iowait + irq + softirq + steal (guest time is already in
    /// user and nice).
    pub total: u64,
    /// idle.
    pub idle: u64,
    /// iowait.
    pub iowait: u64,
}

impl CpuTicks {
    /// Ticks not idle and not waiting for I/O.
    pub fn busy(&self) -> u64 {
        self.total
            .saturating_sub(self.idle)
            .saturating_sub(self.iowait)
    }
}

/// The `cpu` line (all cores) of /proc/stat text. None when it is missing or has fewer than
/// the four fields every kernel writes (user, nice, system, idle).
pub fn parse_stat_cpu(text: &str) -> Option<CpuTicks> {
    let line = text
        .lines()
        .find(|l| l.split_whitespace().next() == Some("cpu"))?;
    let v: Vec<u64> = line
        .split_whitespace()
        .skip(1)
        .take(8)
        .map(|x| x.parse().ok())
        .collect::<Option<Vec<u64>>>()?;
    if v.len() < 4 {
        return None;
    }
    let total = v.iter().fold(0u64, |a, &x| a.saturating_add(x));
    let idle = v[3];
    let iowait = v.get(4).copied().unwrap_or(0);
    Some(CpuTicks {
        total,
        idle,
        iowait,
    })
}

/// The user and system CPU time (utime, stime: fields 14 and 15, in USER_HZ ticks) of
/// /proc/PID/stat text. The command name (field 2) may hold spaces and parentheses: the fields
/// are counted after its last `)`.
pub fn parse_pid_stat_ticks(text: &str) -> Option<(u64, u64)> {
    let rest = text.get(text.rfind(')')? + 1..)?;
    // After the command: state (3), ppid (4), ... utime is the 12th, stime the 13th.
    let mut f = rest.split_whitespace().skip(11);
    let utime = f.next()?.parse().ok()?;
    let stime = f.next()?.parse().ok()?;
    Some((utime, stime))
}

/// USER_HZ ticks as a duration (10 ms each), saturating.
pub fn ticks_to_duration(ticks: u64) -> Duration {
    Duration::from_millis(ticks.saturating_mul(1000 / USER_HZ))
}

/// The value of `key` (`VmRSS`, `VmHWM`, `MemAvailable`, ...) in a `Key:   value kB` file, in
/// bytes.
pub fn parse_kib_field(text: &str, key: &str) -> Option<u64> {
    let line = text.lines().find(|l| {
        l.strip_prefix(key)
            .is_some_and(|rest| rest.starts_with(':'))
    })?;
    let kib: u64 = line.split_whitespace().nth(1)?.parse().ok()?;
    Some(kib.saturating_mul(1024))
}

fn read(path: &str) -> Option<String> {
    if cfg!(target_os = "linux") {
        std::fs::read_to_string(path).ok()
    } else {
        None
    }
}

/// The whole system's CPU ticks now (Linux).
pub fn system_cpu() -> Option<CpuTicks> {
    parse_stat_cpu(&read("/proc/stat")?)
}

/// This process's user + system CPU time since it began (Linux; 10 ms resolution).
pub fn process_cpu_time() -> Option<Duration> {
    let (u, s) = parse_pid_stat_ticks(&read("/proc/self/stat")?)?;
    Some(ticks_to_duration(u.saturating_add(s)))
}

/// The calling thread's user + system CPU time (Linux; 10 ms resolution).
pub fn thread_cpu_time() -> Option<Duration> {
    let (u, s) = parse_pid_stat_ticks(&read("/proc/thread-self/stat")?)?;
    Some(ticks_to_duration(u.saturating_add(s)))
}

/// A field of /proc/self/status (`VmRSS`, `VmHWM`), bytes (Linux).
pub fn self_status_bytes(key: &str) -> Option<u64> {
    parse_kib_field(&read("/proc/self/status")?, key)
}

/// A field of /proc/meminfo (`MemAvailable`, `MemTotal`), bytes (Linux).
pub fn meminfo_bytes(key: &str) -> Option<u64> {
    parse_kib_field(&read("/proc/meminfo")?, key)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn guest_time_is_not_counted_twice() {
        let t = "cpu  100 5 50 1000 20 3 2 1 40 4\ncpu0 1 2 3 4\nintr 1\n";
        let c = parse_stat_cpu(t).expect("cpu line");
        assert_eq!(c.total, 100 + 5 + 50 + 1000 + 20 + 3 + 2 + 1);
        assert_eq!((c.idle, c.iowait), (1000, 20));
        assert_eq!(c.busy(), 161);
        // An old kernel's four fields.
        let c = parse_stat_cpu("cpu 1 2 3 4\n").expect("four fields");
        assert_eq!((c.total, c.idle, c.iowait), (10, 4, 0));
        assert_eq!(parse_stat_cpu("cpu 1 2\n"), None);
        assert_eq!(parse_stat_cpu("cpu 1 x 3 4\n"), None);
        assert_eq!(parse_stat_cpu("intr 1\n"), None);
    }

    #[test]
    fn a_command_name_with_spaces_and_parentheses() {
        let t = "42 (a b) c) S 1 42 42 0 -1 4194560 100 0 0 0 7 3 0 0 20 0 1 0 5 1000 200";
        assert_eq!(parse_pid_stat_ticks(t), Some((7, 3)));
        assert_eq!(ticks_to_duration(10), Duration::from_millis(100));
        assert_eq!(parse_pid_stat_ticks("42 (x) S 1"), None);
    }

    #[test]
    fn kib_fields() {
        let t = "Name:\tx\nVmHWM:\t  2048 kB\nVmRSS:\t  1024 kB\n";
        assert_eq!(parse_kib_field(t, "VmRSS"), Some(1024 * 1024));
        assert_eq!(parse_kib_field(t, "VmHWM"), Some(2048 * 1024));
        assert_eq!(parse_kib_field(t, "Vm"), None);
        if cfg!(target_os = "linux") {
            assert!(process_cpu_time().is_some());
            assert!(self_status_bytes("VmRSS").is_some_and(|b| b > 0));
            assert!(system_cpu().is_some_and(|c| c.total > 0));
        }
    }
}
