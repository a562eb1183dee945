//! `mbxstress doctor` against situations with known answers: an ext4 folder on this machine, a
//! small tmpfs (memory, too small), and a loop device whose write cache and queue depth the test
//! sets through sysfs.
//!
//! The tmpfs and loop tests need root, `mount`, `losetup` and `mkfs.ext4`: without them they
//! FAIL with the reason (they are never skipped). Their guards unmount and detach on drop, also
//! when an assertion fails.

use std::path::{Path, PathBuf};
use std::process::Command;

use serde_json::Value;

use crate::common::{mbx, scratch, Run};

/// Every check doctor performs (one of each per location or for the host).
const CHECKS: [&str; 14] = [
    "filesystem",
    "write_cache",
    "write_through_probe",
    "direct_io",
    "queue_depth",
    "alignment",
    "discard",
    "layout",
    "capacity",
    "data_reduction",
    "virtualization",
    "cpu",
    "clock",
    "memory",
];

fn tool(program: &str, args: &[&str]) -> String {
    let out = Command::new(program)
        .args(args)
        .output()
        .unwrap_or_else(|e| panic!("this test needs `{program}` (and root): {e}"));
    assert!(
        out.status.success(),
        "this test needs root and {program}: `{program} {}` failed: {}",
        args.join(" "),
        String::from_utf8_lossy(&out.stderr).trim()
    );
    String::from_utf8_lossy(&out.stdout).trim().to_string()
}

/// A tmpfs mounted for one test; unmounted on drop.
struct Tmpfs {
    mnt: PathBuf,
    _dir: tempfile::TempDir,
}

impl Tmpfs {
    fn mount(size: &str) -> Tmpfs {
        let dir = tempfile::tempdir().expect("temporary directory");
        let mnt = dir.path().join("mnt");
        std::fs::create_dir(&mnt).expect("mount point");
        let opt = format!("size={size}");
        tool(
            "mount",
            &["-t", "tmpfs", "-o", &opt, "tmpfs", &mnt.to_string_lossy()],
        );
        Tmpfs { mnt, _dir: dir }
    }
}

impl Drop for Tmpfs {
    fn drop(&mut self) {
        let _ = Command::new("umount").arg(&self.mnt).status();
    }
}

/// ext4 on a loop device over a file; unmounted and detached on drop.
struct LoopExt4 {
    dev: String,
    mnt: PathBuf,
    mounted: bool,
    _dir: tempfile::TempDir,
}

impl LoopExt4 {
    fn new(mib: u64) -> LoopExt4 {
        let dir = tempfile::tempdir_in(env!("CARGO_TARGET_TMPDIR")).expect("temporary directory");
        let img = dir.path().join("device.img");
        std::fs::File::create(&img)
            .and_then(|f| f.set_len(mib << 20))
            .expect("backing file");
        let dev = tool("losetup", &["-f", "--show", &img.to_string_lossy()]);
        assert!(!dev.is_empty(), "losetup printed no device");
        let mnt = dir.path().join("mnt");
        std::fs::create_dir(&mnt).expect("mount point");
        let mut me = LoopExt4 {
            dev,
            mnt,
            mounted: false,
            _dir: dir,
        };
        tool("mkfs.ext4", &["-q", "-F", &me.dev]);
        tool("mount", &[&me.dev, &me.mnt.to_string_lossy()]);
        me.mounted = true;
        me
    }

    /// Writes a queue attribute of the loop device in sysfs.
    fn set_queue(&self, attr: &str, value: &str) {
        let name = Path::new(&self.dev)
            .file_name()
            .expect("device name")
            .to_string_lossy()
            .into_owned();
        let path = format!("/sys/block/{name}/queue/{attr}");
        std::fs::write(&path, value)
            .unwrap_or_else(|e| panic!("this test needs root to write {path}: {e}"));
    }
}

impl Drop for LoopExt4 {
    fn drop(&mut self) {
        if self.mounted {
            let _ = Command::new("umount").arg(&self.mnt).status();
        }
        let _ = Command::new("losetup").args(["-d", &self.dev]).status();
    }
}

fn doctor(dir: &Path, extra: &[&str]) -> Run {
    let db = dir.join("db").to_string_lossy().into_owned();
    let log = dir.join("log").to_string_lossy().into_owned();
    let mut args = vec!["doctor", "--json", "--db-path", &db, "--log-path", &log];
    args.extend_from_slice(extra);
    mbx(&args)
}

/// The one check called `name` (the first, when there are several).
fn check<'a>(v: &'a Value, name: &str) -> &'a Value {
    v["checks"]
        .as_array()
        .expect("checks")
        .iter()
        .find(|c| c["name"] == name)
        .unwrap_or_else(|| panic!("no {name} check in {v:#}"))
}

fn status<'a>(v: &'a Value, name: &str) -> &'a str {
    check(v, name)["status"].as_str().expect("status")
}

fn fact<'a>(v: &'a Value, name: &str) -> &'a str {
    check(v, name)["fact"].as_str().expect("fact")
}

/// An ext4 (disk) folder on this machine: the checks that apply pass, the JSON lists every
/// check with a status and a fact, and doctor leaves nothing behind.
#[test]
fn disk_folder_passes_what_applies_and_json_lists_every_check() {
    let dir = scratch("doctor-disk");
    let run = doctor(
        &dir,
        &["--mailboxes", "20", "--quota-mb", "10", "--databases", "2"],
    );
    assert_eq!(
        run.code, 0,
        "stdout:\n{}\nstderr:\n{}",
        run.stdout, run.stderr
    );
    let v = run.json();
    assert_eq!(v["schema"], "mbxstress.doctor/1");
    assert_eq!(v["fast"], false);
    for c in v["checks"].as_array().expect("checks") {
        for key in ["name", "subject", "status", "fact", "why", "fix"] {
            assert!(c[key].is_string(), "{key} missing in {c}");
        }
        assert!(!c["fact"].as_str().unwrap_or("").is_empty(), "no fact: {c}");
        assert!(
            ["ok", "warn", "fail", "unknown"].contains(&c["status"].as_str().unwrap_or("")),
            "{c}"
        );
    }
    for name in CHECKS {
        check(&v, name);
    }
    // Every "why" cites what a user has: public papers or the project's docs, never the
    // maintainers' working files (issue 25, case 17).
    for c in v["checks"].as_array().expect("checks") {
        let why = c["why"].as_str().unwrap_or("");
        for private in PRIVATE_CITATIONS {
            assert!(!why.contains(private), "{private} in {c}");
        }
    }
    for name in [
        "filesystem",
        "write_through_probe",
        "direct_io",
        "queue_depth",
        "alignment",
        "capacity",
        "data_reduction",
    ] {
        assert_eq!(status(&v, name), "ok", "{name}: {}", check(&v, name));
    }
    // This machine's virtual disk reports a volatile cache: a warning exactly when sysfs says so.
    let wc = check(&v, "write_cache");
    assert_eq!(
        wc["status"] == "warn",
        fact(&v, "write_cache").contains("'write back'"),
        "{wc}"
    );
    // Nothing created, nothing left: no database or log folder, no probe file.
    assert!(!dir.join("db").exists() && !dir.join("log").exists());
    let left: Vec<_> = std::fs::read_dir(&*dir)
        .expect("read scratch")
        .filter_map(|e| e.ok())
        .map(|e| e.file_name())
        .collect();
    assert!(left.is_empty(), "doctor left {left:?}");
}

/// tmpfs: the write-through probe measures memory (warn), O_DIRECT is accepted but meaningless
/// (warn), and a test larger than the 4 MiB filesystem fails the capacity check: exit 1.
#[test]
fn tmpfs_warns_that_it_measures_memory_and_fails_on_space() {
    let fs = Tmpfs::mount("4m");
    let run = doctor(
        &fs.mnt,
        &["--mailboxes", "20", "--quota-mb", "10", "--databases", "1"],
    );
    assert_eq!(
        run.code, 1,
        "stdout:\n{}\nstderr:\n{}",
        run.stdout, run.stderr
    );
    let v = run.json();
    assert_eq!(status(&v, "write_through_probe"), "warn");
    assert!(fact(&v, "write_through_probe").contains("measures memory"));
    assert_eq!(status(&v, "direct_io"), "warn");
    assert_eq!(status(&v, "filesystem"), "warn");
    assert!(fact(&v, "filesystem").starts_with("tmpfs"));
    assert_eq!(status(&v, "capacity"), "fail", "{}", check(&v, "capacity"));
    // The human table says the same and names the fix.
    let db = fs.mnt.join("db").to_string_lossy().into_owned();
    let log = fs.mnt.join("log").to_string_lossy().into_owned();
    let human = mbx(&[
        "doctor",
        "--db-path",
        &db,
        "--log-path",
        &log,
        "--mailboxes",
        "20",
        "--quota-mb",
        "10",
        "--databases",
        "1",
    ]);
    assert_eq!(human.code, 1);
    assert!(
        human.stdout.contains("fail    capacity"),
        "{}",
        human.stdout
    );
    assert!(human.stdout.contains("fix: free space"), "{}", human.stdout);
}

/// A loop device: 'write back' in queue/write_cache warns and 'write through' does not; an
/// nr_requests of 4 caps a 2,000 IOPS test (about 40 outstanding at 20 ms) and 128 does not.
#[test]
fn loop_device_write_back_and_small_queue_warn() {
    let lo = LoopExt4::new(64);
    let high_iops = [
        "--mailboxes",
        "20",
        "--iops-per-mailbox",
        "100",
        "--quota-mb",
        "1",
        "--databases",
        "1",
    ];
    lo.set_queue("write_cache", "write back");
    lo.set_queue("nr_requests", "4");
    let run = doctor(&lo.mnt, &high_iops);
    assert_eq!(
        run.code, 0,
        "stdout:\n{}\nstderr:\n{}",
        run.stdout, run.stderr
    );
    let v = run.json();
    assert_eq!(
        status(&v, "write_cache"),
        "warn",
        "{}",
        check(&v, "write_cache")
    );
    assert!(fact(&v, "write_cache").contains("'write back'"));
    assert_eq!(
        status(&v, "queue_depth"),
        "warn",
        "{}",
        check(&v, "queue_depth")
    );
    assert!(
        fact(&v, "queue_depth").contains("caps it at 4"),
        "{}",
        fact(&v, "queue_depth")
    );
    assert!(check(&v, "queue_depth")["why"]
        .as_str()
        .unwrap_or("")
        .contains("Pure"));
    assert_eq!(status(&v, "capacity"), "ok", "{}", check(&v, "capacity"));

    lo.set_queue("write_cache", "write through");
    lo.set_queue("nr_requests", "128");
    let v = doctor(&lo.mnt, &high_iops).json();
    assert_eq!(
        status(&v, "write_cache"),
        "ok",
        "{}",
        check(&v, "write_cache")
    );
    assert_eq!(
        status(&v, "queue_depth"),
        "ok",
        "{}",
        check(&v, "queue_depth")
    );

    // Insufficient space on the same 64 MiB filesystem: 20 x 100 MB fails.
    let big = doctor(
        &lo.mnt,
        &["--mailboxes", "20", "--quota-mb", "100", "--databases", "1"],
    );
    assert_eq!(big.code, 1, "{}", big.stdout);
    assert_eq!(status(&big.json(), "capacity"), "fail");
}

/// `run` performs the fast subset and records it in result.json and the report.
#[test]
fn run_records_the_fast_subset() {
    let dir = scratch("doctor-run");
    let db = dir.join("db").to_string_lossy().into_owned();
    let log = dir.join("log").to_string_lossy().into_owned();
    let out = dir.join("out").to_string_lossy().into_owned();
    let fast = dir.join("fast.toml");
    std::fs::write(&fast, crate::common::FAST).expect("config");
    let fast = fast.to_string_lossy().into_owned();
    let run = mbx(&[
        "run",
        "--config",
        &fast,
        "--mailboxes",
        "8",
        "--quota-mb",
        "1",
        "--databases",
        "1",
        "--threads",
        "2",
        "--duration",
        "1s",
        "--db-path",
        &db,
        "--log-path",
        &log,
        "--out",
        &out,
        "--progress",
        "quiet",
    ]);
    assert!(
        run.code == 0 || run.code == 1,
        "stdout:\n{}\nstderr:\n{}",
        run.stdout,
        run.stderr
    );
    let text = std::fs::read_to_string(dir.join("out/result.json")).expect("result.json");
    let v: Value = serde_json::from_str(&text).expect("JSON");
    let d = &v["doctor"];
    assert_eq!(d["schema"], "mbxstress.doctor/1");
    assert_eq!(d["fast"], true);
    for name in CHECKS {
        check(d, name);
    }
    let html = std::fs::read_to_string(dir.join("out/report.html")).expect("report.html");
    assert!(html.contains("Preflight Checks"));
    // A write-through warning is next to the verdict in the summary and the report.
    let warned = status(d, "write_cache") == "warn";
    assert_eq!(
        run.stdout.contains("write-through warn"),
        warned,
        "{}",
        run.stdout
    );
    assert_eq!(html.contains("write-through-finding"), warned);
}

/// Paths of the maintainers' working files, which users do not have.
const PRIVATE_CITATIONS: [&str; 5] = [
    "seeds/",
    "shared/",
    "spec/",
    "jetstress-model.md",
    "result-contract.md",
];

/// Issue 25, case 17: the text users read (README, docs, every string and comment of the
/// sources, the bench scripts) cites public papers or the project's own docs, never files only
/// the maintainers have. Recorded outputs under bench/results and bench/fidelity/<date> are
/// records of what older versions printed and are left as they were.
#[test]
fn user_visible_text_cites_nothing_users_do_not_have() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
    let mut files = vec![root.join("README.md")];
    let mut dirs = vec![root.join("docs"), root.join("crates"), root.join("scripts")];
    dirs.extend(
        std::fs::read_dir(root.join("bench"))
            .expect("bench")
            .filter_map(|e| e.ok().map(|e| e.path()))
            .filter(|p| p.is_file()),
    );
    while let Some(d) = dirs.pop() {
        if d.is_file() {
            files.push(d);
            continue;
        }
        for e in std::fs::read_dir(&d).unwrap_or_else(|e| panic!("{}: {e}", d.display())) {
            let p = e.expect("entry").path();
            let name = p.file_name().and_then(|n| n.to_str()).unwrap_or("");
            if p.is_dir() {
                if name != "target" && name != "fixtures" {
                    dirs.push(p);
                }
            } else if [".rs", ".md", ".sh", ".py", ".toml"]
                .iter()
                .any(|x| name.ends_with(x))
            {
                files.push(p);
            }
        }
    }
    assert!(files.len() > 50, "{} files", files.len());
    let this = Path::new(file!()).file_name().expect("name");
    let mut found = Vec::new();
    for f in &files {
        if f.file_name() == Some(this) {
            continue;
        }
        let text = std::fs::read_to_string(f).unwrap_or_default();
        for (n, line) in text.lines().enumerate() {
            if PRIVATE_CITATIONS.iter().any(|p| line.contains(p)) {
                found.push(format!("{}:{}: {line}", f.display(), n + 1));
            }
        }
    }
    assert!(found.is_empty(), "{}", found.join("\n"));
}
