//! `prepare`, `verify` and `iobench` end to end: small databases (MiBs), short runs.

use std::process::Command;
#[cfg(unix)]
use std::time::Duration;

use crate::common::{mbx_in, scratch};

fn prepare_small(dir: &std::path::Path, extra: &[&str]) -> crate::common::Run {
    let mut args = vec![
        "prepare",
        "--mailboxes",
        "4",
        "--quota-mb",
        "2",
        "--databases",
        "2",
    ];
    args.extend_from_slice(extra);
    mbx_in(Some(dir), &args)
}

#[test]
fn prepare_then_attach_then_verify() {
    let dir = scratch("prepare-attach");
    let run = prepare_small(&dir, &["--json"]);
    assert_eq!(run.code, 0, "{}", run.stderr);
    let v = run.json();
    assert_eq!(v["databases"].as_array().map(Vec::len), Some(2));
    assert_eq!(v["databases"][0]["action"], "create");
    // 4 mailboxes x 2 MiB / 2 databases = 4 MiB of data pages + 2 header pages each.
    assert_eq!(v["databases"][0]["size_bytes"], 4 * 1048576 + 2 * 32768);
    assert!(dir
        .join("mbxstress-data/databases/mbxstress001.edb")
        .exists());
    assert!(dir
        .join("mbxstress-data/logs/db002/E0000000001.log")
        .exists());

    let run = prepare_small(&dir, &["--json"]);
    assert_eq!(run.code, 0, "{}", run.stderr);
    assert_eq!(run.json()["databases"][1]["action"], "attach");
    assert_eq!(run.json()["bytes_written"], 0);

    let run = mbx_in(Some(&dir), &["verify", "--json", "--read-size", "64k"]);
    assert_eq!(run.code, 0, "{}", run.stderr);
    let v = run.json();
    assert_eq!(v["checksum"][0]["seen_pages"], 130);
    assert_eq!(v["checksum"][0]["bad_pages"], 0);
    assert_eq!(v["checksum"][1]["correctable_pages"], 0);
}

#[test]
fn verify_reports_damage_with_exit_1() {
    use mbx_io::platform::{read_exact_at, write_all_at};
    let dir = scratch("verify-damage");
    assert_eq!(prepare_small(&dir, &[]).code, 0);
    let db = dir.join("mbxstress-data/databases/mbxstress002.edb");
    let f = std::fs::OpenOptions::new()
        .read(true)
        .write(true)
        .open(&db)
        .expect("open");
    let mut b = [0u8; 1];
    read_exact_at(&f, &mut b, 10 * 32768 + 5000).expect("read");
    write_all_at(&f, &[b[0] ^ 0x40], 10 * 32768 + 5000).expect("flip a bit");
    write_all_at(&f, &[0xAA; 32], 20 * 32768 + 100).expect("smash a page");
    let run = mbx_in(Some(&dir), &["verify"]);
    assert_eq!(run.code, 1, "{}\n{}", run.stdout, run.stderr);
    // Each page with its byte offset and what is wrong, as the Checksum test says it (issue 25,
    // case 17).
    assert!(
        run.stdout.contains(
            "page 10 (offset 327680): correctable: has exactly one flipped bit (correctable)"
        ),
        "{}",
        run.stdout
    );
    assert!(
        run.stdout.contains(
            "page 20 (offset 655360): bad: fails its checksum beyond one bit (torn, overwritten or garbage)"
        ),
        "{}",
        run.stdout
    );
    assert!(run.stderr.contains("FAILED"), "{}", run.stderr);
    let run = mbx_in(Some(&dir), &["verify", "--json"]);
    assert_eq!(run.code, 1, "{}", run.stderr);
    let v = run.json();
    let p = &v["checksum"][1]["problems"][1];
    assert_eq!(p["page"], 20, "{v}");
    assert_eq!(p["kind"], "bad", "{v}");
    assert_eq!(p["offset"], 20 * 32768, "{v}");
    assert_eq!(
        p["reason"], "fails its checksum beyond one bit (torn, overwritten or garbage)",
        "{v}"
    );
}

#[test]
fn unsafe_or_impossible_requests_exit_2() {
    let dir = scratch("prepare-refusals");
    std::fs::create_dir_all(dir.join("mbxstress-data/databases")).expect("mkdir");
    let foreign = dir.join("mbxstress-data/databases/mbxstress001.edb");
    std::fs::write(&foreign, "precious").expect("write");
    let run = prepare_small(&dir, &[]);
    assert_eq!(run.code, 2, "{}", run.stderr);
    assert!(
        run.stderr.contains("mbxstress001.edb") && run.stderr.contains("--force"),
        "{}",
        run.stderr
    );
    assert_eq!(std::fs::read_to_string(&foreign).expect("read"), "precious");

    let run = mbx_in(
        Some(&dir),
        &["verify", "--db-path", foreign.to_str().expect("utf8")],
    );
    assert_eq!(run.code, 2, "{}", run.stderr);
    assert!(
        run.stderr.contains("not an mbxstress database"),
        "{}",
        run.stderr
    );

    let run = mbx_in(
        Some(&dir),
        &[
            "prepare",
            "--mailboxes",
            "1000",
            "--quota-mb",
            "102400",
            "--databases",
            "2",
            "--db-path",
            "huge",
        ],
    );
    assert_eq!(run.code, 2, "{}", run.stderr);
    assert!(
        run.stderr.contains("not enough free space"),
        "{}",
        run.stderr
    );
    assert!(!dir.join("huge/mbxstress001.edb").exists());

    for (args, needle) in [
        (
            vec!["prepare", "--databases", "0", "--database-size-mb", "1"],
            "--databases",
        ),
        (
            vec![
                "prepare",
                "--mailboxes",
                "0",
                "--quota-mb",
                "1",
                "--databases",
                "1",
            ],
            "--mailboxes",
        ),
        (
            vec!["prepare", "--mailboxes", "5", "--quota-mb", "1"],
            "--databases",
        ),
        (
            vec![
                "prepare",
                "--databases",
                "2",
                "--database-size-mb",
                "1",
                "--db-path",
                "a",
                "--db-path",
                "b",
                "--db-path",
                "c",
            ],
            "--db-path",
        ),
        (vec!["verify", "--db-path", "nowhere"], "nowhere"),
        (vec!["verify", "--read-size", "1000"], "--read-size"),
    ] {
        let run = mbx_in(Some(&dir), &args);
        assert_eq!(run.code, 2, "{args:?}: {}", run.stderr);
        assert!(
            run.stderr.contains(needle),
            "{args:?} should name {needle}: {}",
            run.stderr
        );
    }
}

/// The timed random read/write goes through the page cache: with O_DIRECT it would write for a
/// whole second at the device's speed (64 to 180 MiB here, gigabytes on a fast NVMe drive);
/// through the cache the disk sees at most the 8 MiB file. O_DIRECT, the default, is checked on
/// the read-only run.
#[test]
fn iobench_reports_iops_latency_and_cpu() {
    let dir = scratch("iobench");
    let run = mbx_in(
        Some(&dir),
        &[
            "iobench",
            "--file",
            "b.dat",
            "--size",
            "2M",
            "--rw",
            "randrw",
            "--rwmixread",
            "70",
            "--bs",
            "32k",
            "--iodepth",
            "8",
            "--runtime",
            "1s",
            "--direct",
            "0",
            "--json",
        ],
    );
    assert_eq!(run.code, 0, "{}", run.stderr);
    let v = run.json();
    assert!(v["read"]["iops"].as_f64().expect("iops") > 0.0, "{v}");
    assert!(v["write"]["ios"].as_u64().expect("ios") > 0, "{v}");
    assert!(v["read"]["latency_ms"]["p99"].as_f64().expect("p99") > 0.0);
    assert!(v["cpu_user_s"].is_number() && v["cpu_system_s"].is_number());
    assert_eq!(v["spec"]["direct"], false);
    assert_eq!(
        std::fs::metadata(dir.join("b.dat")).expect("stat").len(),
        2 << 20
    );
    // Writing into an existing file needs --force; reading it does not.
    let run = mbx_in(
        Some(&dir),
        &[
            "iobench",
            "--file",
            "b.dat",
            "--size",
            "2M",
            "--rw",
            "write",
            "--runtime",
            "1s",
        ],
    );
    assert_eq!(run.code, 2, "{}", run.stderr);
    assert!(run.stderr.contains("--force"), "{}", run.stderr);
    let run = mbx_in(
        Some(&dir),
        &[
            "iobench",
            "--file",
            "b.dat",
            "--size",
            "2M",
            "--rw",
            "read",
            "--runtime",
            "1s",
            "--engine",
            "sync",
            "--json",
        ],
    );
    assert_eq!(run.code, 0, "{}", run.stderr);
    assert_eq!(run.json()["engine"], "sync");
    assert_eq!(run.json()["spec"]["direct"], true, "O_DIRECT by default");
    let run = mbx_in(
        Some(&dir),
        &["iobench", "--file", "c.dat", "--bs", "1000", "--size", "1M"],
    );
    assert_eq!(run.code, 2, "{}", run.stderr);
}

/// Ctrl-C stops creation cleanly (exit 130, progress kept) and the next run resumes.
///
/// Creation is fast (about 1 GB/s here): a small database is written in tens of milliseconds,
/// too short to interrupt reliably by polling (a 512 MiB one used to finish first on a loaded
/// machine). So the test freezes the process (SIGSTOP) as soon as data is on disk, checks that
/// creation is unfinished, queues the Ctrl-C (SIGINT) and lets the process continue (SIGCONT): the
/// interrupt lands mid-creation whatever the load, with most of the 64 MiB still to write.
#[test]
#[cfg(unix)]
fn ctrl_c_keeps_progress_and_the_next_run_resumes() {
    use std::os::unix::fs::MetadataExt;
    let dir = scratch("ctrl-c");
    let args = [
        "prepare",
        "--databases",
        "1",
        "--database-size-mb",
        "32",
        // Direct I/O: a block allocated is a write done. Buffered, all 32 MiB could sit in the
        // page cache before the freeze (allocation lags), and the Ctrl-C then found creation
        // finished (CI: exit 0).
        "--json",
    ];
    let child = crate::common::spawn_in(&dir, &args);
    // The file is created sparse at full length, so its length says nothing; allocated blocks do.
    // Wait for more than the first 1 MiB write (creation writes 1 MiB chunks, 4 in flight).
    let db = dir.join("mbxstress-data/databases/mbxstress001.edb");
    let on_disk = || {
        std::fs::metadata(&db)
            .map(|m| (m.blocks() * 512, m.len()))
            .unwrap_or((0, 0))
    };
    let start = std::time::Instant::now();
    while on_disk().0 <= 2 << 20 && start.elapsed() < Duration::from_secs(30) {
        std::thread::sleep(Duration::from_millis(1));
    }
    crate::common::signal(&child, "STOP");
    let (allocated, len) = on_disk();
    // Continue it before asserting anything: a failed test must not leave a stopped process.
    crate::common::signal(&child, "INT");
    crate::common::signal(&child, "CONT");
    let out = child.wait_with_output().expect("wait");
    assert!(
        allocated > 0 && allocated < len,
        "not mid-creation when frozen: {allocated} of {len} bytes on disk"
    );
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(130), "{stderr}");
    assert!(
        stderr.contains("interrupted") && stderr.contains("resume"),
        "{stderr}"
    );
    // The same parameters resume: only the rest is written.
    let run = mbx_in(Some(&dir), &args);
    assert_eq!(run.code, 0, "{}", run.stderr);
    let v = run.json();
    assert_eq!(v["databases"][0]["action"], "resume");
    let written = v["bytes_written"].as_u64().expect("bytes");
    assert!(
        written < 32 << 20,
        "resumed, not restarted: wrote {written}"
    );
    let run = mbx_in(Some(&dir), &["verify", "--json", "--buffered"]);
    assert_eq!(run.code, 0, "{}", run.stderr);
}

/// A loop device over a scratch file, detached when dropped.
struct LoopDevice(String);

impl Drop for LoopDevice {
    fn drop(&mut self) {
        let _ = Command::new("losetup").args(["-d", &self.0]).status();
    }
}

/// Block devices are refused without --allow-device, used with it (create, attach, verify), and a
/// device too small is refused. Needs root and loop devices; .ci/run requires it where those exist.
#[test]
fn block_devices_need_allow_device() {
    let dir = scratch("block-device");
    let backing = dir.join("device.img");
    // Sparse: a device reads zeros where nothing was written, and nothing is written up front.
    std::fs::File::create(&backing)
        .and_then(|f| f.set_len(16 << 20))
        .expect("backing file");
    let attached = Command::new("losetup")
        .args(["-f", "--show"])
        .arg(&backing)
        .output()
        .ok()
        .filter(|o| o.status.success())
        .map(|o| String::from_utf8_lossy(&o.stdout).trim().to_string());
    let Some(dev) = attached else {
        crate::skip::skip(
            crate::skip::Need::Devices,
            "losetup failed: no loop device (needs root and /dev/loop-control)",
        );
        return;
    };
    let _guard = LoopDevice(dev.clone());
    let args = |extra: &[&str]| {
        let mut v = vec![
            "prepare",
            "--databases",
            "1",
            "--database-size-mb",
            "8",
            "--db-path",
            &dev,
            "--log-path",
            "logs",
            "--json",
        ];
        v.extend_from_slice(extra);
        v.into_iter().map(String::from).collect::<Vec<_>>()
    };
    let run_args = |a: Vec<String>| {
        let refs: Vec<&str> = a.iter().map(String::as_str).collect();
        mbx_in(Some(&dir), &refs)
    };
    let run = run_args(args(&[]));
    assert_eq!(run.code, 2, "{}", run.stderr);
    assert!(run.stderr.contains("--allow-device"), "{}", run.stderr);
    let run = run_args(args(&["--allow-device"]));
    assert_eq!(run.code, 0, "{}", run.stderr);
    assert_eq!(run.json()["databases"][0]["action"], "create");
    let run = run_args(args(&["--allow-device"]));
    assert_eq!(run.code, 0, "{}", run.stderr);
    assert_eq!(run.json()["databases"][0]["action"], "attach");
    let run = mbx_in(Some(&dir), &["verify", "--db-path", &dev, "--json"]);
    assert_eq!(run.code, 0, "{}", run.stderr);
    assert_eq!(run.json()["checksum"][0]["seen_pages"], 8 * 32 + 2);
    let run = mbx_in(
        Some(&dir),
        &[
            "prepare",
            "--databases",
            "1",
            "--database-size-mb",
            "100",
            "--db-path",
            &dev,
            "--log-path",
            "logs2",
            "--allow-device",
            "--force",
        ],
    );
    assert_eq!(run.code, 2, "{}", run.stderr);
    assert!(run.stderr.contains("holds 16 MiB"), "{}", run.stderr);
}
