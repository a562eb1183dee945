//! `mbxstress iobench`: numbers out of range are usage errors (no panic, no abort, nothing
//! written), Ctrl-C while the file is laid out stops at once, and foreign files are kept.

use std::path::Path;
use std::time::{Duration, Instant};

use crate::common::{interrupt_when, mbx, spawn_in};

/// Each of these panicked, aborted on allocation or exited 0 having measured nothing; now each
/// exits 2 at once, naming the flag and its range, and creates no file.
#[test]
fn out_of_range_numbers_exit_2_naming_the_flag() {
    let dir = tempfile::tempdir().expect("temporary directory");
    let file = dir.path().join("sub").join("bench.dat");
    let file = file.to_str().expect("utf-8 path");
    let cases: &[(&[&str], &str)] = &[
        (
            &["--bs", "4611686018427387904", "--numjobs", "4"],
            "--bs must be a multiple of 4k from 4k to 64M",
        ),
        (
            &["--bs", "64M", "--iodepth", "4096"],
            "--bs x --iodepth x --numjobs",
        ),
        (
            &["--bs", "1M", "--iodepth", "1024", "--numjobs", "2"],
            "budget of",
        ),
        (&["--runtime", "0"], "--runtime must be from 1s to 30 days"),
        (
            &["--runtime", "0.5s"],
            "--runtime must be from 1s to 30 days",
        ),
        (
            // Refused while parsing the duration (every duration flag is capped at 30 days).
            &["--runtime", "31d"],
            "longer than 30 days",
        ),
        (&["--bs", "6k"], "--bs must be a multiple of 4k"),
        (
            &["--bs", "128M"],
            "--bs must be a multiple of 4k from 4k to 64M",
        ),
        (&["--bs", "18446744073709551615"], "--bs"),
        (
            &["--size", "4k"],
            "--size must be at least --bs x --numjobs",
        ),
        (
            &["--size", "64k", "--numjobs", "4"],
            "--size must be at least --bs x --numjobs (131072 bytes)",
        ),
        (&["--size", "16777216T"], "too large"),
    ];
    for (extra, expected) in cases {
        let mut args = vec!["iobench", "--file", file];
        args.extend_from_slice(extra);
        let started = Instant::now();
        let run = mbx(&args);
        assert_eq!(run.code, 2, "{args:?}: {}", run.stderr);
        assert!(run.stderr.contains(expected), "{args:?}: {}", run.stderr);
        assert!(
            started.elapsed() < Duration::from_secs(5),
            "{args:?} took {:?}",
            started.elapsed()
        );
        assert!(!Path::new(file).exists(), "{args:?} wrote the file");
    }
    // The ranges are in the help.
    let help = mbx(&["iobench", "--help"]);
    assert_eq!(help.code, 0);
    for range in [
        "from 4k to 64M",
        "1 to 4096",
        "1 to 256",
        "1s to 30 days",
        "1 GiB",
    ] {
        assert!(
            help.stdout.contains(range),
            "help lacks {range}:\n{}",
            help.stdout
        );
    }
}

/// A file iobench did not create is neither overwritten nor extended without --force.
#[test]
fn foreign_file_is_kept_without_force() {
    let dir = tempfile::tempdir().expect("temporary directory");
    let file = dir.path().join("data.bin");
    std::fs::write(&file, vec![7u8; 1 << 20]).expect("write");
    let f = file.to_str().expect("utf-8 path");
    let base = [
        "iobench",
        "--file",
        f,
        "--runtime",
        "1s",
        "--engine",
        "sync",
    ];
    let write = [&base[..], &["--size", "1M", "--rw", "randwrite"]].concat();
    let run = mbx(&write);
    assert_eq!(run.code, 2, "{}", run.stderr);
    assert!(run.stderr.contains("--force"), "{}", run.stderr);
    let extend = [&base[..], &["--size", "2M"]].concat();
    let run = mbx(&extend);
    assert_eq!(run.code, 2, "{}", run.stderr);
    assert!(run.stderr.contains("--force"), "{}", run.stderr);
    let content = std::fs::read(&file).expect("read");
    assert!(content.len() == 1 << 20 && content.iter().all(|b| *b == 7));
}

/// Ctrl-C while iobench lays out its file: it stops within moments, exits 130 and removes the
/// partial file it created. The old code installed its handler only after the fill, so SIGINT
/// killed it and left the partial file, to be taken later for a laid-out one.
#[test]
fn ctrl_c_while_filling_exits_130_and_removes_the_file() {
    // In the target directory: it is on disk (O_DIRECT), where /tmp may be tmpfs.
    let dir = tempfile::Builder::new()
        .prefix("iobench-ctrl-c")
        .tempdir_in(env!("CARGO_TARGET_TMPDIR"))
        .expect("temporary directory");
    let file = dir.path().join("bench.dat");
    let child = spawn_in(
        dir.path(),
        &[
            "iobench",
            "--file",
            "bench.dat",
            "--size",
            "2G",
            "--direct",
            "1",
            "--runtime",
            "1s",
        ],
    );
    let started = Instant::now();
    while !std::fs::metadata(&file).is_ok_and(|m| m.len() >= 8 << 20) {
        assert!(
            started.elapsed() < Duration::from_secs(30),
            "the file did not grow"
        );
        std::thread::sleep(Duration::from_millis(10));
    }
    let interrupted_at = Instant::now();
    let out = interrupt_when(child, Duration::ZERO, || true);
    let stopped_after = interrupted_at.elapsed();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(130), "{stderr}");
    assert!(
        stopped_after < Duration::from_secs(5),
        "stopped {stopped_after:?} after Ctrl-C"
    );
    assert!(
        stderr.contains("interrupted while laying out")
            && stderr.contains("removed the partial file"),
        "{stderr}"
    );
    assert!(!file.exists(), "the partial file was removed");
}
