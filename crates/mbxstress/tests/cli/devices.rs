//! Block devices that are mounted or in use are never written (`prepare`/`run --allow-device`,
//! `iobench --force`), and a device we write is claimed so that it cannot be mounted meanwhile.
//!
//! These need root and loop devices. Without them they are skipped, with a `SKIPPED` line in the
//! output ([`crate::skip`]), unless MBX_REQUIRE_DEVICE_TESTS is set (.ci/run sets it where loop
//! devices exist): then they fail.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

use crate::common::{mbx_in, Run};

/// Size of each scratch device.
const DEVICE_MIB: u64 = 64;
/// Where the partition starts on a partitioned device, in 512-byte sectors (1 MiB).
const PART_START: u64 = 2048;

/// A loop device over a file in a temporary directory, with an ext4 filesystem mounted on it (or
/// on its first partition). Dropping it unmounts, detaches and removes everything, also when the
/// test fails halfway.
pub(crate) struct LoopFs {
    /// The whole device, e.g. /dev/loop3.
    dev: String,
    /// The device holding the filesystem: `dev` itself or its partition /dev/loop3p1.
    fs_dev: String,
    /// Where the filesystem is mounted while `mounted` is true.
    pub(crate) mnt: PathBuf,
    mounted: bool,
    /// True while `dev` is active swap.
    swap: bool,
    /// Holds the backing file and the mount point; removed last (fields drop after `drop`).
    dir: tempfile::TempDir,
}

impl Drop for LoopFs {
    fn drop(&mut self) {
        if self.swap {
            let _ = Command::new("swapoff").arg(&self.dev).status();
        }
        if self.mounted {
            let _ = Command::new("umount").arg(&self.mnt).status();
        }
        if self.fs_dev != self.dev {
            let _ = Command::new("delpart").args([&self.dev, "1"]).status();
        }
        let _ = Command::new("losetup").args(["-d", &self.dev]).status();
    }
}

/// Skips the test (returns `None`, the skip printed: [`crate::skip`]) when loop devices cannot
/// be used, unless the environment requires device tests, in which case it fails with the reason.
fn unavailable(why: &str) -> Option<LoopFs> {
    crate::skip::skip(
        crate::skip::Need::Devices,
        &format!("{why} (needs root and loop devices)"),
    );
    None
}

fn run_tool(program: &str, args: &[&str]) -> Result<String, String> {
    let out = Command::new(program)
        .args(args)
        .output()
        .map_err(|e| format!("{program}: {e}"))?;
    if out.status.success() {
        Ok(String::from_utf8_lossy(&out.stdout).trim().to_string())
    } else {
        Err(format!(
            "{program} {}: {}",
            args.join(" "),
            String::from_utf8_lossy(&out.stderr).trim()
        ))
    }
}

fn is_block_device(p: &Path) -> bool {
    use std::os::unix::fs::FileTypeExt;
    std::fs::metadata(p).is_ok_and(|m| m.file_type().is_block_device())
}

/// Waits up to a second for `p` to appear as a block device (udev or devtmpfs creates it).
fn wait_for_device(p: &Path) -> bool {
    let start = Instant::now();
    while start.elapsed() < Duration::from_secs(1) {
        if is_block_device(p) {
            return true;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    false
}

/// An MBR with one Linux partition from sector PART_START to the end of the device.
fn write_partition_table(backing: &Path) {
    let mut mbr = vec![0u8; 512];
    let sectors = u32::try_from(DEVICE_MIB * 2048 - PART_START).expect("small device");
    let start = u32::try_from(PART_START).expect("small offset");
    mbr[446 + 4] = 0x83;
    mbr[446 + 8..446 + 12].copy_from_slice(&start.to_le_bytes());
    mbr[446 + 12..446 + 16].copy_from_slice(&sectors.to_le_bytes());
    mbr[510] = 0x55;
    mbr[511] = 0xAA;
    use std::os::unix::fs::FileExt;
    let f = std::fs::OpenOptions::new()
        .write(true)
        .open(backing)
        .expect("open backing file");
    f.write_all_at(&mbr, 0).expect("write partition table");
}

/// Attaches a loop device (with one partition if `partitioned`).
fn attach_loop(partitioned: bool, mib: u64) -> Option<LoopFs> {
    let dir = tempfile::tempdir().expect("temporary directory");
    let backing = dir.path().join("device.img");
    let f = std::fs::File::create(&backing).expect("backing file");
    f.set_len(mib << 20).expect("size backing file");
    drop(f);
    if partitioned {
        write_partition_table(&backing);
    }
    let backing_s = backing.to_string_lossy().into_owned();
    let losetup_args: &[&str] = if partitioned {
        &["-P", "-f", "--show", &backing_s]
    } else {
        &["-f", "--show", &backing_s]
    };
    let dev = match run_tool("losetup", losetup_args) {
        Ok(d) if !d.is_empty() => d,
        Ok(_) => return unavailable("losetup printed no device"),
        Err(e) => return unavailable(&e),
    };
    let mnt = dir.path().join("mnt");
    std::fs::create_dir(&mnt).expect("mount point");
    let mut fs = LoopFs {
        fs_dev: dev.clone(),
        dev,
        mnt,
        mounted: false,
        swap: false,
        dir,
    };
    if partitioned {
        let part = format!("{}p1", fs.dev);
        // Kernels without partition-table support leave the table unread: add the partition
        // explicitly (BLKPG), as partx/addpart would.
        if !wait_for_device(Path::new(&part)) {
            let sectors = (DEVICE_MIB * 2048 - PART_START).to_string();
            if let Err(e) = run_tool(
                "addpart",
                &[&fs.dev, "1", &PART_START.to_string(), &sectors],
            ) {
                drop(fs);
                return unavailable(&e);
            }
            if !wait_for_device(Path::new(&part)) {
                drop(fs);
                return unavailable(&format!("{part} did not appear"));
            }
        }
        fs.fs_dev = part;
    }
    Some(fs)
}

/// Sets up a device of `mib` MiB, makes ext4 on it (or on its partition), mounts it and writes a
/// file there.
pub(crate) fn mounted_loop_fs(partitioned: bool, mib: u64) -> Option<LoopFs> {
    let mut fs = attach_loop(partitioned, mib)?;
    let fs_dev = fs.fs_dev.clone();
    if let Err(e) = run_tool("mkfs.ext4", &["-q", "-F", &fs_dev]) {
        drop(fs);
        return unavailable(&e);
    }
    let mnt_s = fs.mnt.to_string_lossy().into_owned();
    // nodelalloc, and the fsync below: nothing is left for the filesystem to allocate at
    // umount. Where the code under test does overwrite the mounted filesystem (as the old code
    // did), ext4 would otherwise retry a delayed allocation in corrupted metadata forever, and
    // the umount in the guard would hang in the kernel instead of the test failing.
    if let Err(e) = run_tool("mount", &["-o", "nodelalloc", &fs_dev, &mnt_s]) {
        drop(fs);
        return unavailable(&e);
    }
    fs.mounted = true;
    let mut keep = std::fs::File::create(fs.mnt.join("keep.txt")).expect("create on the fs");
    std::io::Write::write_all(&mut keep, b"precious").expect("write on the filesystem");
    keep.sync_all().expect("fsync on the filesystem");
    Some(fs)
}

impl LoopFs {
    fn mnt_str(&self) -> String {
        self.mnt.to_string_lossy().into_owned()
    }

    fn scratch(&self, name: &str) -> String {
        self.dir.path().join(name).to_string_lossy().into_owned()
    }

    /// The file written on the filesystem is intact; then unmount it and check it with
    /// `fsck.ext4 -n -f` (read-only, forced full check).
    fn assert_filesystem_intact(&mut self) {
        let kept = std::fs::read(self.mnt.join("keep.txt")).expect("read back the file");
        assert_eq!(kept, b"precious");
        run_tool("umount", &[&self.mnt_str()]).expect("umount");
        self.mounted = false;
        if let Err(e) = run_tool("fsck.ext4", &["-n", "-f", &self.fs_dev]) {
            panic!("the filesystem on {} was damaged: {e}", self.fs_dev);
        }
    }
}

fn mbx(args: &[&str]) -> Run {
    mbx_in(None, args)
}

fn assert_refused(run: &Run, mnt: &str, fix_flag: &str) {
    assert_eq!(
        run.code, 2,
        "stdout:\n{}\nstderr:\n{}",
        run.stdout, run.stderr
    );
    assert!(
        run.stderr.contains(&format!("mounted at {mnt} (ext4)")),
        "the message names the mount point: {}",
        run.stderr
    );
    assert!(run.stderr.contains("unmount it first"), "{}", run.stderr);
    assert!(run.stderr.contains(fix_flag), "{}", run.stderr);
}

fn prepare_args<'a>(dev: &'a str, logs: &'a str) -> Vec<&'a str> {
    vec![
        "prepare",
        "--databases",
        "1",
        "--database-size-mb",
        "16",
        "--db-path",
        dev,
        "--allow-device",
        "--log-path",
        logs,
    ]
}

/// `prepare --allow-device` and `run --allow-device` on a device with a mounted ext4 exit 2
/// naming the mount point, and write nothing: the filesystem passes fsck afterwards (the old code
/// overwrote its superblock).
#[test]
fn mounted_device_is_refused_by_prepare_and_run() {
    let Some(mut fs) = mounted_loop_fs(false, DEVICE_MIB) else {
        return;
    };
    let logs = fs.scratch("logs");
    let run = mbx(&prepare_args(&fs.dev, &logs));
    assert_refused(
        &run,
        &fs.mnt_str(),
        "--allow-device permits an unused device only",
    );
    assert!(run.stderr.contains(&fs.dev), "{}", run.stderr);
    assert!(
        !Path::new(&logs).exists(),
        "nothing written before the check"
    );
    // --force does not make a mounted device acceptable either.
    let mut forced = prepare_args(&fs.dev, &logs);
    forced.push("--force");
    assert_refused(&mbx(&forced), &fs.mnt_str(), "--allow-device");
    let out = fs.scratch("results");
    let run = mbx(&[
        "run",
        "--threads",
        "4",
        "--databases",
        "1",
        "--mailboxes",
        "1",
        "--quota-mb",
        "16",
        "--iops-per-mailbox",
        "10",
        "--db-path",
        &fs.dev,
        "--log-path",
        &logs,
        "--allow-device",
        "--duration",
        "1s",
        "--out",
        &out,
        "--progress",
        "quiet",
    ]);
    assert_refused(&run, &fs.mnt_str(), "--allow-device");
    fs.assert_filesystem_intact();
}

/// `iobench --force` on a mounted device exits 2 naming the mount point, before filling it.
#[test]
fn mounted_device_is_refused_by_iobench() {
    let Some(mut fs) = mounted_loop_fs(false, DEVICE_MIB) else {
        return;
    };
    for rw in ["randread", "write"] {
        let run = mbx(&[
            "iobench",
            "--file",
            &fs.dev,
            "--force",
            "--size",
            "16M",
            "--runtime",
            "1s",
            "--rw",
            rw,
        ]);
        assert_refused(&run, &fs.mnt_str(), "--force permits an unused device only");
    }
    fs.assert_filesystem_intact();
}

/// A whole disk is refused when one of its partitions is mounted, and the message names the
/// partition and its mount point.
#[test]
fn device_with_a_mounted_partition_is_refused() {
    let Some(mut fs) = mounted_loop_fs(true, DEVICE_MIB) else {
        return;
    };
    let logs = fs.scratch("logs");
    let part = format!("its partition {} is mounted", fs.fs_dev);
    let run = mbx(&prepare_args(&fs.dev, &logs));
    assert_refused(&run, &fs.mnt_str(), "--allow-device");
    assert!(run.stderr.contains(&part), "{}", run.stderr);
    let run = mbx(&[
        "iobench",
        "--file",
        &fs.dev,
        "--force",
        "--size",
        "16M",
        "--runtime",
        "1s",
    ]);
    assert_refused(&run, &fs.mnt_str(), "--force");
    assert!(run.stderr.contains(&part), "{}", run.stderr);
    // The partition itself is refused too.
    let run = mbx(&prepare_args(&fs.fs_dev, &logs));
    assert_refused(&run, &fs.mnt_str(), "--allow-device");
    fs.assert_filesystem_intact();
}

/// While iobench uses a device it holds it exclusively: a mount attempted meanwhile fails with
/// "busy" instead of the benchmark corrupting a live filesystem, and another mbxstress command
/// is refused by the lock, naming iobench's PID. Afterwards it is free again.
#[test]
fn device_in_use_by_iobench_cannot_be_mounted() {
    let Some(mut fs) = mounted_loop_fs(false, DEVICE_MIB) else {
        return;
    };
    run_tool("umount", &[&fs.mnt_str()]).expect("umount");
    fs.mounted = false;
    let child = Command::new(env!("CARGO_BIN_EXE_mbxstress"))
        .args([
            "iobench",
            "--file",
            &fs.dev,
            "--force",
            "--size",
            "16M",
            "--runtime",
            "4s",
            "--rw",
            "randread",
            "--engine",
            "sync",
        ])
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .expect("spawn mbxstress");
    // Wait until it has the device (the fill of 16 MiB takes well under a second), then try.
    std::thread::sleep(Duration::from_millis(1500));
    let mount = Command::new("mount")
        .args([&fs.dev, &fs.mnt_str()])
        .output()
        .expect("mount");
    if mount.status.success() {
        fs.mounted = true;
    }
    // Another mbxstress command finds it locked (iobench takes the lock a test takes), and says
    // who holds it.
    let logs = fs.scratch("logs");
    let prepare = mbx(&prepare_args(&fs.dev, &logs));
    let pid = child.id();
    let out = child.wait_with_output().expect("wait for iobench");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{stderr}");
    assert!(!fs.mounted, "the device was mounted while iobench used it");
    let why = String::from_utf8_lossy(&mount.stderr);
    assert!(
        why.contains("busy"),
        "mount failed for another reason: {why}"
    );
    assert_eq!(prepare.code, 2, "{}", prepare.stderr);
    assert!(
        prepare.stderr.contains(&format!(
            "{} is in use by another mbxstress command (PID {pid})",
            fs.dev
        )),
        "{}",
        prepare.stderr
    );
    // Released at exit: making a filesystem (which opens it exclusively) works again.
    run_tool("mkfs.ext4", &["-q", "-F", &fs.dev]).expect("device released after iobench");
}

/// A device used as swap is refused, and the message says so.
#[test]
fn swap_device_is_refused() {
    let Some(mut dev) = attach_loop(false, DEVICE_MIB) else {
        return;
    };
    if let Err(e) = run_tool("mkswap", &["-q", &dev.dev]) {
        drop(dev);
        unavailable(&e);
        return;
    }
    if let Err(e) = run_tool("swapon", &[&dev.dev]) {
        drop(dev);
        unavailable(&e);
        return;
    }
    dev.swap = true;
    let logs = dev.scratch("logs");
    let run = mbx(&prepare_args(&dev.dev, &logs));
    assert_eq!(run.code, 2, "{}", run.stderr);
    assert!(
        run.stderr.contains("used as swap; swapoff it first"),
        "{}",
        run.stderr
    );
    let run = mbx(&[
        "iobench",
        "--file",
        &dev.dev,
        "--force",
        "--size",
        "16M",
        "--runtime",
        "1s",
    ]);
    assert_eq!(run.code, 2, "{}", run.stderr);
    assert!(run.stderr.contains("used as swap"), "{}", run.stderr);
    run_tool("swapoff", &[&dev.dev]).expect("swapoff");
    dev.swap = false;
    // The swap signature at the end of the first 4 KiB page is intact.
    let mut sig = [0u8; 10];
    use std::os::unix::fs::FileExt;
    std::fs::File::open(&dev.dev)
        .and_then(|f| f.read_exact_at(&mut sig, 4096 - 10))
        .expect("read the device");
    assert_eq!(&sig, b"SWAPSPACE2");
}

/// Issue 25, case 6: `--allow-device` alone overwrote an unmounted device holding an ext4
/// filesystem (a SAN LUN mounted on another server looks exactly like this). Now a device that
/// is not blank and not ours is refused, naming what it holds (ext4, a partition table, swap), and
/// nothing is written: the filesystem passes fsck. With `--force` as well it is used, and then
/// attaches as ours with `--allow-device` alone.
#[test]
fn allow_device_keeps_a_device_that_is_not_blank() {
    let Some(dev) = attach_loop(false, DEVICE_MIB) else {
        return;
    };
    if let Err(e) = run_tool("mkfs.ext4", &["-q", "-F", &dev.dev]) {
        drop(dev);
        unavailable(&e);
        return;
    }
    let logs = dev.scratch("logs");
    fn refused(run: &Run, dev: &str, holds: &str) {
        assert_eq!(run.code, 2, "{}", run.stderr);
        assert!(
            run.stderr.contains(&format!("{dev} holds {holds}"))
                && run.stderr.contains("pass --force as well"),
            "the message names the device, what it holds and the fix: {}",
            run.stderr
        );
    }
    refused(
        &mbx(&prepare_args(&dev.dev, &logs)),
        &dev.dev,
        "an ext4 filesystem",
    );
    assert!(!Path::new(&logs).exists(), "nothing written");
    // `run --allow-device` prepares the same way.
    let out = dev.scratch("results");
    let run = mbx(&[
        "run",
        "--threads",
        "4",
        "--databases",
        "1",
        "--mailboxes",
        "1",
        "--quota-mb",
        "16",
        "--iops-per-mailbox",
        "10",
        "--db-path",
        &dev.dev,
        "--log-path",
        &logs,
        "--allow-device",
        "--duration",
        "1s",
        "--out",
        &out,
        "--progress",
        "quiet",
    ]);
    refused(&run, &dev.dev, "an ext4 filesystem");
    if let Err(e) = run_tool("fsck.ext4", &["-n", "-f", &dev.dev]) {
        panic!("the filesystem on {} was damaged: {e}", dev.dev);
    }
    // --force as well: the device is used, and is ours afterwards.
    let mut forced = prepare_args(&dev.dev, &logs);
    forced.extend(["--force", "--json"]);
    let run = mbx(&forced);
    assert_eq!(run.code, 0, "{}", run.stderr);
    assert_eq!(run.json()["databases"][0]["action"], "create");
    let mut again = prepare_args(&dev.dev, &logs);
    again.push("--json");
    let run = mbx(&again);
    assert_eq!(run.code, 0, "{}", run.stderr);
    assert_eq!(run.json()["databases"][0]["action"], "attach");
    drop(dev);

    // Swap (not active) and a partition table are named too.
    let Some(dev) = attach_loop(false, DEVICE_MIB) else {
        return;
    };
    run_tool("mkswap", &["-q", &dev.dev]).expect("mkswap");
    refused(&mbx(&prepare_args(&dev.dev, &logs)), &dev.dev, "Linux swap");
    drop(dev);
    let Some(dev) = attach_loop(true, DEVICE_MIB) else {
        return;
    };
    refused(
        &mbx(&prepare_args(&dev.dev, &logs)),
        &dev.dev,
        "an MBR partition table",
    );
}
