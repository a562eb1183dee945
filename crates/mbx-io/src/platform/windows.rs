//! The Windows implementations behind [`crate::platform`]'s portable functions (Win32 through
//! `windows-sys`). Every call here is a plain Win32 call on buffers this module owns.

#![allow(unsafe_code)] // Win32 calls; each block says what it relies on.

use std::ffi::OsStr;
use std::fs::File;
use std::io;
use std::os::windows::ffi::OsStrExt;
use std::os::windows::io::AsRawHandle;
use std::path::{Path, PathBuf};
use std::time::Duration;

use super::{DeviceClaim, DeviceStatus, DeviceUse};
use windows_sys::Win32::Foundation::{
    GetLastError, ERROR_LOCK_VIOLATION, ERROR_SHARING_VIOLATION, FILETIME, HANDLE, NO_ERROR,
};
use windows_sys::Win32::Storage::FileSystem::{
    GetCompressedFileSizeW, GetDiskFreeSpaceExW, GetVolumeInformationW, GetVolumePathNameW,
    LockFileEx, FILE_SHARE_READ, FILE_SHARE_WRITE, INVALID_FILE_SIZE, LOCKFILE_EXCLUSIVE_LOCK,
    LOCKFILE_FAIL_IMMEDIATELY,
};
use windows_sys::Win32::System::Ioctl::{IOCTL_STORAGE_GET_DEVICE_NUMBER, STORAGE_DEVICE_NUMBER};
use windows_sys::Win32::System::ProcessStatus::{K32GetProcessMemoryInfo, PROCESS_MEMORY_COUNTERS};
use windows_sys::Win32::System::SystemInformation::{GlobalMemoryStatusEx, MEMORYSTATUSEX};
use windows_sys::Win32::System::Threading::{
    GetCurrentProcess, GetCurrentThread, GetProcessTimes, GetSystemTimes, GetThreadTimes,
};
use windows_sys::Win32::System::IO::{DeviceIoControl, OVERLAPPED};

/// `path` as a NUL-terminated UTF-16 string for the W functions.
pub(crate) fn wide(path: &OsStr) -> Vec<u16> {
    path.encode_wide().chain(std::iter::once(0)).collect()
}

/// True for paths in the Win32 device namespace (`\\.\PhysicalDrive1`, `\\.\E:`, `\\?\Volume{..}`
/// without a trailing file name): raw disks and volumes, which `--allow-device` guards.
pub(crate) fn is_device_path(path: &Path) -> bool {
    let s = path.as_os_str().to_string_lossy().replace('/', "\\");
    let lower = s.to_ascii_lowercase();
    if let Some(rest) = lower.strip_prefix(r"\\.\") {
        // \\.\C:\dir\file is an ordinary file reached through the device namespace.
        return !rest.contains('\\');
    }
    // \\?\Volume{guid} (no trailing backslash) is a volume; \\?\C:\x is a long file path.
    lower.starts_with(r"\\?\volume{") && !lower.trim_start_matches(r"\\?\").contains('\\')
}

/// The nearest existing directory at or above `path` (a file not created yet is on the volume of
/// its folder), for the volume functions that want a directory.
fn existing_dir(path: &Path) -> PathBuf {
    let mut p = path.to_path_buf();
    loop {
        if p.is_dir() {
            return p;
        }
        if !p.pop() || p.as_os_str().is_empty() {
            return PathBuf::from(".");
        }
    }
}

pub(crate) fn free_space(path: &Path) -> io::Result<u64> {
    let dir = wide(existing_dir(path).as_os_str());
    let mut avail = 0u64;
    // SAFETY: `dir` is NUL-terminated; the out pointers are to locals (the others may be null).
    let ok = unsafe {
        GetDiskFreeSpaceExW(
            dir.as_ptr(),
            &mut avail,
            std::ptr::null_mut(),
            std::ptr::null_mut(),
        )
    };
    if ok == 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(avail)
}

/// The volume mount point holding `path` (`C:\`, `E:\mnt\db\`), as Windows names it.
pub(crate) fn volume_path(path: &Path) -> io::Result<String> {
    let name = wide(existing_dir(path).as_os_str());
    let mut buf = vec![0u16; 1024];
    // SAFETY: `name` is NUL-terminated; `buf` holds `buf.len()` UTF-16 units.
    let ok = unsafe { GetVolumePathNameW(name.as_ptr(), buf.as_mut_ptr(), buf.len() as u32) };
    if ok == 0 {
        return Err(io::Error::last_os_error());
    }
    let end = buf.iter().position(|&c| c == 0).unwrap_or(buf.len());
    Ok(String::from_utf16_lossy(&buf[..end]))
}

pub(crate) fn filesystem_id(path: &Path) -> io::Result<u64> {
    use std::hash::{Hash, Hasher};
    let v = volume_path(path)?.to_lowercase();
    // DefaultHasher::new() has fixed keys: the same volume gives the same id in every process.
    let mut h = std::collections::hash_map::DefaultHasher::new();
    v.hash(&mut h);
    Ok(h.finish())
}

pub(crate) fn allocated_bytes(path: &Path) -> io::Result<u64> {
    let name = wide(path.as_os_str());
    let mut high = 0u32;
    // SAFETY: `name` is NUL-terminated; `high` is a local.
    let low = unsafe { GetCompressedFileSizeW(name.as_ptr(), &mut high) };
    if low == INVALID_FILE_SIZE {
        // SAFETY: no preconditions.
        let err = unsafe { GetLastError() };
        if err != NO_ERROR {
            return Err(io::Error::from_raw_os_error(err as i32));
        }
    }
    Ok((u64::from(high) << 32) | u64::from(low))
}

/// Where the lock byte lives: far past any file's end, so the lock (mandatory on Windows for the
/// bytes it covers) never blocks reading or writing the data through other handles.
const LOCK_OFFSET: u64 = 0x7fff_ffff_ffff_fff0;

pub(crate) fn try_lock(f: &File, exclusive: bool) -> io::Result<bool> {
    let mut flags = LOCKFILE_FAIL_IMMEDIATELY;
    if exclusive {
        flags |= LOCKFILE_EXCLUSIVE_LOCK;
    }
    // SAFETY: OVERLAPPED is plain data; zeroed is its documented initial state.
    let mut ov: OVERLAPPED = unsafe { std::mem::zeroed() };
    ov.Anonymous.Anonymous.Offset = LOCK_OFFSET as u32;
    ov.Anonymous.Anonymous.OffsetHigh = (LOCK_OFFSET >> 32) as u32;
    // SAFETY: the handle is open for the call's duration; `ov` outlives it (the handle is
    // synchronous, so the call completes before returning).
    let ok = unsafe { LockFileEx(f.as_raw_handle() as HANDLE, flags, 0, 1, 0, &mut ov) };
    if ok != 0 {
        return Ok(true);
    }
    let err = io::Error::last_os_error();
    if err.raw_os_error() == Some(ERROR_LOCK_VIOLATION as i32) {
        return Ok(false);
    }
    Err(err)
}

fn filetime(t: FILETIME) -> u64 {
    (u64::from(t.dwHighDateTime) << 32) | u64::from(t.dwLowDateTime)
}

/// FILETIME intervals are 100 ns units.
fn hundred_ns(t: u64) -> Duration {
    Duration::from_nanos(t.saturating_mul(100))
}

const ZERO_FT: FILETIME = FILETIME {
    dwLowDateTime: 0,
    dwHighDateTime: 0,
};

pub(crate) fn thread_cpu_time() -> Option<Duration> {
    let (mut c, mut e, mut k, mut u) = (ZERO_FT, ZERO_FT, ZERO_FT, ZERO_FT);
    // SAFETY: the pseudo-handle of the current thread is always valid; outputs are locals.
    let ok = unsafe { GetThreadTimes(GetCurrentThread(), &mut c, &mut e, &mut k, &mut u) };
    (ok != 0).then(|| hundred_ns(filetime(k).saturating_add(filetime(u))))
}

pub(crate) fn cpu_times() -> (f64, f64) {
    let (mut c, mut e, mut k, mut u) = (ZERO_FT, ZERO_FT, ZERO_FT, ZERO_FT);
    // SAFETY: the pseudo-handle of the current process is always valid; outputs are locals.
    let ok = unsafe { GetProcessTimes(GetCurrentProcess(), &mut c, &mut e, &mut k, &mut u) };
    if ok == 0 {
        return (0.0, 0.0);
    }
    (
        hundred_ns(filetime(u)).as_secs_f64(),
        hundred_ns(filetime(k)).as_secs_f64(),
    )
}

pub(crate) fn system_cpu_ticks() -> Option<(u64, u64)> {
    let (mut idle, mut kernel, mut user) = (ZERO_FT, ZERO_FT, ZERO_FT);
    // SAFETY: outputs are locals.
    let ok = unsafe { GetSystemTimes(&mut idle, &mut kernel, &mut user) };
    if ok == 0 {
        return None;
    }
    // Kernel time includes idle time.
    let total = filetime(kernel).saturating_add(filetime(user));
    Some((total.saturating_sub(filetime(idle)), total))
}

pub(crate) fn available_memory_bytes() -> Option<u64> {
    // SAFETY: MEMORYSTATUSEX is plain data; dwLength must be set before the call.
    let mut m: MEMORYSTATUSEX = unsafe { std::mem::zeroed() };
    m.dwLength = std::mem::size_of::<MEMORYSTATUSEX>() as u32;
    // SAFETY: `m` is a local with its length set.
    let ok = unsafe { GlobalMemoryStatusEx(&mut m) };
    (ok != 0).then_some(m.ullAvailPhys)
}

pub(crate) fn peak_resident_memory_bytes() -> Option<u64> {
    // SAFETY: plain data, zeroed; cb is its size.
    let mut c: PROCESS_MEMORY_COUNTERS = unsafe { std::mem::zeroed() };
    let size = std::mem::size_of::<PROCESS_MEMORY_COUNTERS>() as u32;
    c.cb = size;
    // SAFETY: the current-process pseudo-handle is valid; `c` is a local of `size` bytes.
    let ok = unsafe { K32GetProcessMemoryInfo(GetCurrentProcess(), &mut c, size) };
    (ok != 0).then_some(c.PeakWorkingSetSize as u64)
}

/// Drive letters whose volume lives on physical drive `disk` (`IOCTL_STORAGE_GET_DEVICE_NUMBER`).
fn letters_on_disk(disk: u32) -> Vec<char> {
    ('A'..='Z')
        .filter(|l| device_number(&format!(r"\\.\{l}:")) == Some(disk))
        .collect()
}

/// The physical drive number of a device path, where Windows tells.
fn device_number(device: &str) -> Option<u32> {
    use std::os::windows::fs::OpenOptionsExt;
    // Access 0: a query handle, no read or write rights needed, nothing locked.
    let f = std::fs::OpenOptions::new()
        .access_mode(0)
        .share_mode(FILE_SHARE_READ | FILE_SHARE_WRITE)
        .open(device)
        .ok()?;
    // SAFETY: plain data, zeroed.
    let mut n: STORAGE_DEVICE_NUMBER = unsafe { std::mem::zeroed() };
    let mut got = 0u32;
    // SAFETY: `f` is open for the call; `n` is a local of the size passed; synchronous handle.
    let ok = unsafe {
        DeviceIoControl(
            f.as_raw_handle() as HANDLE,
            IOCTL_STORAGE_GET_DEVICE_NUMBER,
            std::ptr::null(),
            0,
            (&mut n as *mut STORAGE_DEVICE_NUMBER).cast(),
            std::mem::size_of::<STORAGE_DEVICE_NUMBER>() as u32,
            &mut got,
            std::ptr::null_mut(),
        )
    };
    (ok != 0).then_some(n.DeviceNumber)
}

/// The filesystem mounted at `root` (`E:\`), if any.
fn filesystem_at(root: &str) -> Option<String> {
    let name = wide(OsStr::new(root));
    let mut fs = vec![0u16; 64];
    // SAFETY: `name` is NUL-terminated; `fs` holds `fs.len()` units; other outputs may be null.
    let ok = unsafe {
        GetVolumeInformationW(
            name.as_ptr(),
            std::ptr::null_mut(),
            0,
            std::ptr::null_mut(),
            std::ptr::null_mut(),
            std::ptr::null_mut(),
            fs.as_mut_ptr(),
            fs.len() as u32,
        )
    };
    if ok == 0 {
        return None;
    }
    let end = fs.iter().position(|&c| c == 0).unwrap_or(fs.len());
    Some(String::from_utf16_lossy(&fs[..end]))
}

/// [`crate::platform::claim_device`] on Windows: a volume (`\\.\E:`) with a mounted filesystem,
/// or a physical drive (`\\.\PhysicalDrive1`) holding one, is in use; otherwise the device is
/// opened with no sharing, which fails (ERROR_SHARING_VIOLATION) while another program has it
/// open, and holds it against others while the claim lives.
pub(crate) fn claim(path: &Path) -> io::Result<DeviceStatus> {
    use std::os::windows::fs::OpenOptionsExt;
    if !super::is_block_device(path)? {
        return Ok(DeviceStatus::NotADevice);
    }
    let s = path.as_os_str().to_string_lossy().replace('/', "\\");
    let tail = s.get(4..).unwrap_or_default().to_string();
    let letter = tail
        .strip_suffix(':')
        .filter(|l| l.len() == 1 && l.chars().all(|c| c.is_ascii_alphabetic()));
    if let Some(l) = letter {
        let root = format!("{}:\\", l.to_ascii_uppercase());
        if let Some(fstype) = filesystem_at(&root) {
            return Ok(DeviceStatus::InUse(DeviceUse::Mounted {
                partition: None,
                mount_point: root,
                fstype,
            }));
        }
    }
    let disk = tail
        .to_ascii_lowercase()
        .strip_prefix("physicaldrive")
        .and_then(|n| n.parse::<u32>().ok());
    if let Some(disk) = disk {
        if let Some(l) = letters_on_disk(disk).first() {
            let root = format!("{l}:\\");
            return Ok(DeviceStatus::InUse(DeviceUse::Mounted {
                partition: Some(PathBuf::from(format!(r"\\.\{l}:"))),
                fstype: filesystem_at(&root).unwrap_or_else(|| "unknown".into()),
                mount_point: root,
            }));
        }
    }
    match std::fs::OpenOptions::new()
        .read(true)
        .share_mode(0)
        .open(path)
    {
        Ok(f) => Ok(DeviceStatus::Unused(DeviceClaim {
            rdev: 0,
            _file: Some(f),
        })),
        Err(e) if e.raw_os_error() == Some(ERROR_SHARING_VIOLATION as i32) => {
            Ok(DeviceStatus::InUse(DeviceUse::Busy))
        }
        Err(e) => Err(e),
    }
}

/// The callback [`on_console_close`] registered (the first one: a process stops once).
static ON_CLOSE: std::sync::OnceLock<Box<dyn Fn() + Send + Sync>> = std::sync::OnceLock::new();

/// How long the handler holds a closing console: Windows ends the process when a close handler
/// returns, and at the latest after 5 s; the process exits earlier when its work has stopped.
const CLOSE_GRACE: Duration = Duration::from_millis(4500);

/// What the console handler does with event `ctrl`: a close, logoff or shutdown runs the callback
/// and holds the process up to `grace` so the work can stop cleanly (true: handled); anything
/// else (Ctrl-C, Ctrl-Break) is left to the next handler (false).
fn handle_ctrl(ctrl: u32, grace: Duration) -> bool {
    use windows_sys::Win32::System::Console::{
        CTRL_CLOSE_EVENT, CTRL_LOGOFF_EVENT, CTRL_SHUTDOWN_EVENT,
    };
    if !matches!(
        ctrl,
        CTRL_CLOSE_EVENT | CTRL_LOGOFF_EVENT | CTRL_SHUTDOWN_EVENT
    ) {
        return false;
    }
    if let Some(f) = ON_CLOSE.get() {
        f();
    }
    std::thread::sleep(grace);
    true
}

unsafe extern "system" fn console_handler(ctrl: u32) -> windows_sys::core::BOOL {
    windows_sys::core::BOOL::from(handle_ctrl(ctrl, CLOSE_GRACE))
}

pub(crate) fn on_console_close(f: Box<dyn Fn() + Send + Sync>) -> io::Result<bool> {
    if ON_CLOSE.set(f).is_err() {
        return Ok(false);
    }
    // SAFETY: registers a plain function with the signature Windows expects.
    let ok = unsafe {
        windows_sys::Win32::System::Console::SetConsoleCtrlHandler(Some(console_handler), 1)
    };
    if ok == 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(true)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn console_close_runs_the_callback_and_ctrl_c_is_left_to_the_next_handler() {
        use std::sync::atomic::{AtomicU32, Ordering};
        use windows_sys::Win32::System::Console::{CTRL_CLOSE_EVENT, CTRL_C_EVENT};
        static CALLS: AtomicU32 = AtomicU32::new(0);
        assert!(on_console_close(Box::new(|| {
            CALLS.fetch_add(1, Ordering::SeqCst);
        }))
        .expect("register"));
        assert!(
            !on_console_close(Box::new(|| {})).expect("second"),
            "one callback"
        );
        assert!(!handle_ctrl(CTRL_C_EVENT, Duration::ZERO));
        assert_eq!(CALLS.load(Ordering::SeqCst), 0);
        assert!(handle_ctrl(CTRL_CLOSE_EVENT, Duration::ZERO));
        assert_eq!(CALLS.load(Ordering::SeqCst), 1);
    }

    /// Meaningful on Windows only: Wine 8 does not enforce byte-range locks on reads and writes,
    /// so under Wine this passes even with the lock byte at offset 0 (checked).
    #[test]
    fn a_locked_file_stays_readable_and_writable_through_other_handles() {
        let dir = tempfile::tempdir().expect("tempdir");
        let path = dir.path().join("db.edb");
        std::fs::write(&path, vec![7u8; 65536]).expect("write");
        let holder = File::open(&path).expect("open");
        assert!(try_lock(&holder, true).expect("lock"));
        let other = std::fs::OpenOptions::new()
            .read(true)
            .write(true)
            .open(&path)
            .expect("open again");
        assert!(!try_lock(&other, false).expect("conflicting lock"));
        // Windows locks are mandatory for the bytes they cover: the lock byte is past the end.
        crate::platform::write_all_at(&other, &[1u8; 4096], 0).expect("write under the lock");
        let mut b = [0u8; 4096];
        crate::platform::read_exact_at(&other, &mut b, 61440).expect("read under the lock");
        assert_eq!(b, [7u8; 4096]);
    }

    #[test]
    fn volume_space_and_counters_answer() {
        let dir = tempfile::tempdir().expect("tempdir");
        let file = dir.path().join("f");
        std::fs::write(&file, vec![1u8; 65536]).expect("write");
        let v = volume_path(&file).expect("volume");
        assert!(v.ends_with('\\'), "{v}");
        // A file not created yet is on the volume of its folder.
        assert_eq!(
            filesystem_id(&dir.path().join("not-yet")).expect("id"),
            filesystem_id(&file).expect("id")
        );
        assert!(free_space(&dir.path().join("not-yet")).expect("free") > 0);
        assert!(allocated_bytes(&file).expect("allocated") > 0);
        assert!(matches!(
            claim(&file).expect("claim"),
            DeviceStatus::NotADevice
        ));
        let (busy, total) = system_cpu_ticks().expect("system times");
        assert!(busy <= total && total > 0);
        assert!(available_memory_bytes().expect("memory") > 0);
        assert!(peak_resident_memory_bytes().expect("peak") > 0);
        assert!(thread_cpu_time().is_some());
    }

    #[test]
    fn device_namespace_paths_are_devices_and_files_are_not() {
        for p in [
            r"\\.\PhysicalDrive1",
            r"\\.\E:",
            r"\\?\Volume{1234-abcd}",
            "//./PhysicalDrive0",
        ] {
            assert!(is_device_path(Path::new(p)), "{p}");
        }
        for p in [
            r"E:\db1\db",
            r"\\.\C:\x\y.edb",
            r"\\?\C:\long\path",
            r"C:\",
            "db",
        ] {
            assert!(!is_device_path(Path::new(p)), "{p}");
        }
    }
}
