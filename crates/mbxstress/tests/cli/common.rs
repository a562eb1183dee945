//! Helpers: run the binary, capture its output, make scratch directories.

use std::path::Path;
use std::process::{Command, Output};

/// The result of one invocation.
pub struct Run {
    pub code: i32,
    pub stdout: String,
    pub stderr: String,
}

impl Run {
    /// Parses stdout as JSON, failing the test with the output if it is not.
    pub fn json(&self) -> serde_json::Value {
        serde_json::from_str(&self.stdout).unwrap_or_else(|e| {
            panic!(
                "stdout is not JSON ({e}):\n{}\nstderr:\n{}",
                self.stdout, self.stderr
            )
        })
    }
}

/// Runs `mbxstress` with `args` in `dir` (or the current directory).
pub fn mbx_in(dir: Option<&Path>, args: &[&str]) -> Run {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_mbxstress"));
    cmd.args(args);
    if let Some(d) = dir {
        cmd.current_dir(d);
    }
    let Output {
        status,
        stdout,
        stderr,
    } = cmd.output().expect("spawn mbxstress");
    Run {
        code: status.code().unwrap_or(-1),
        stdout: String::from_utf8_lossy(&stdout).into_owned(),
        stderr: String::from_utf8_lossy(&stderr).into_owned(),
    }
}

/// Runs `mbxstress` with `args`.
pub fn mbx(args: &[&str]) -> Run {
    mbx_in(None, args)
}

/// A scratch directory for one test, removed with everything in it when dropped (also when the
/// test panics). It derefs to [`Path`], so `dir.join("x")`, `dir.display()`, `Some(&dir)` for
/// [`mbx_in`] and `&dir` for [`spawn_in`] work as with a path; keep it alive (a named binding,
/// not `_`) for as long as the test uses the directory.
///
/// Set `MBX_KEEP_TEST_FILES=1` to keep the directories for inspection; each path is printed.
pub struct Scratch(tempfile::TempDir);

impl std::ops::Deref for Scratch {
    type Target = Path;
    fn deref(&self) -> &Path {
        self.0.path()
    }
}

impl AsRef<Path> for Scratch {
    fn as_ref(&self) -> &Path {
        self.0.path()
    }
}

/// A fresh scratch directory `cli-NAME-XXXXXX` under the target directory (a disk filesystem, so
/// O_DIRECT is exercised; /tmp may be tmpfs), unique per call and removed when the returned guard
/// is dropped.
/// A --config file for short test runs: the settle phase of one second instead of 15 (one
/// dirty-page age), and thresholds that only the IOPS check can fail. The page fault stall
/// limit is raised too: on a machine busy with other tests, a flush slowed down can hold the
/// cache full for a moment, and a 2 s run then averages over Jetstress's 1 stall/s (CI failed
/// the suite's Performance test that way). A run of seconds has a few samples: with no
/// tolerance (`max_latency_errors = 0`) its maximum-latency checks still judge them (with the
/// default 6 they would be "not judged").
pub const FAST: &str = concat!(
    "[cache]\nmax_dirty_age_s = 1\n[thresholds]\niops_margin = 0.9\ndb_read_avg_ms = 10000\n",
    "db_read_max_ms = 10000\nlog_write_avg_ms = 10000\nlog_write_max_ms = 10000\n",
    "page_fault_stalls_per_s = 10000\nmax_latency_errors = 0\n"
);

pub fn scratch(name: &str) -> Scratch {
    let keep = std::env::var_os("MBX_KEEP_TEST_FILES").is_some();
    let dir = tempfile::Builder::new()
        .prefix(&format!("cli-{name}-"))
        .disable_cleanup(keep)
        .tempdir_in(env!("CARGO_TARGET_TMPDIR"))
        .expect("create scratch dir");
    if keep {
        eprintln!("MBX_KEEP_TEST_FILES: keeping {}", dir.path().display());
    }
    Scratch(dir)
}

/// A scratch directory in memory (`/dev/shm`, tmpfs, which takes O_DIRECT on Linux 6.6 and
/// later) for a test that must write what a disk test cannot afford: the demo's 1 GB of
/// databases and Soft Recovery's 1,000 log files. Its writes cost no disk and are outside the
/// suite's measured footprint; it fails, never skips, without a tmpfs there with room.
pub fn scratch_in_memory(name: &str, need_bytes: u64) -> Scratch {
    let shm = Path::new("/dev/shm");
    let free = mbx_io::platform::free_space(shm)
        .unwrap_or_else(|e| panic!("this test needs a tmpfs at /dev/shm: {e}"));
    assert!(
        free >= need_bytes,
        "this test needs {} MiB free at /dev/shm (tmpfs), which has {} MiB",
        need_bytes >> 20,
        free >> 20
    );
    let keep = std::env::var_os("MBX_KEEP_TEST_FILES").is_some();
    let dir = tempfile::Builder::new()
        .prefix(&format!("cli-{name}-"))
        .disable_cleanup(keep)
        .tempdir_in(shm)
        .expect("create scratch dir in /dev/shm");
    Scratch(dir)
}

/// Asserts a float within a tolerance, with a readable message.
pub fn close(v: &serde_json::Value, expected: f64, tol: f64) {
    let actual = v.as_f64().unwrap_or_else(|| panic!("not a number: {v}"));
    assert!(
        (actual - expected).abs() <= tol,
        "expected {expected} +/- {tol}, got {actual}"
    );
}

/// Waits until `ready()` holds (at most `limit`), then sends SIGINT to `child` as Ctrl-C would,
/// and returns its output.
pub fn interrupt_when(
    child: std::process::Child,
    limit: std::time::Duration,
    ready: impl Fn() -> bool,
) -> std::process::Output {
    let start = std::time::Instant::now();
    while !ready() && start.elapsed() < limit {
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    signal(&child, "INT");
    child.wait_with_output().expect("wait")
}

/// Sends signal `name` (`INT`, `STOP`, `CONT`, `TERM`...) to `child`, as `kill -NAME` would.
pub fn signal(child: &std::process::Child, name: &str) {
    let status = Command::new("kill")
        .args([&format!("-{name}"), &child.id().to_string()])
        .status()
        .expect("kill");
    assert!(status.success(), "kill -{name} {}", child.id());
}

/// Starts `mbxstress` with `args` in `dir`, output captured (for tests that signal it).
pub fn spawn_in(dir: &Path, args: &[&str]) -> std::process::Child {
    Command::new(env!("CARGO_BIN_EXE_mbxstress"))
        .args(args)
        .current_dir(dir)
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .expect("spawn mbxstress")
}

/// The static Linux build that `fleet run --push` copies
/// (`target/x86_64-unknown-linux-musl/static/mbxstress` beside the binary under test), made or
/// brought up to date here: `cargo build --profile static --target x86_64-unknown-linux-musl -p
/// mbxstress` into the same target folder, once per test process (a no-op build when it is
/// fresh; cargo's own lock serializes two test processes building at once). A missing musl
/// target is named with the command that adds it, never skipped.
pub fn static_build() -> std::path::PathBuf {
    static BUILT: std::sync::OnceLock<Result<std::path::PathBuf, String>> =
        std::sync::OnceLock::new();
    let built = BUILT.get_or_init(|| {
        const TARGET: &str = "x86_64-unknown-linux-musl";
        let exe = Path::new(env!("CARGO_BIN_EXE_mbxstress"));
        let target_dir = exe
            .parent()
            .and_then(Path::parent)
            .ok_or_else(|| format!("no target folder above {}", exe.display()))?;
        let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
        // The musl standard library comes with rustup's target; without it the build fails
        // with "can't find crate for `core`", so say what to do first.
        if let Ok(out) = Command::new("rustup")
            .args(["target", "list", "--installed"])
            .current_dir(&root)
            .output()
        {
            let installed = String::from_utf8_lossy(&out.stdout);
            if out.status.success() && !installed.lines().any(|l| l.trim() == TARGET) {
                return Err(format!(
                    "the fleet --push tests need the {TARGET} target of the toolchain (the static build they push): run `rustup target add {TARGET}` (README, Quick start)"
                ));
            }
        }
        let cargo = std::env::var_os("CARGO").unwrap_or_else(|| "cargo".into());
        let mut build = Command::new(cargo);
        // What cargo sets for a running test (CARGO_MANIFEST_DIR, CARGO_PKG_*, ...) must not
        // reach the nested build: cargo's fingerprint tracks CARGO_MANIFEST_DIR as the process
        // has it, so the static build made before the tests (bench/test-footprint.sh, a
        // developer's) would be rebuilt here, and the next plain build would rebuild it again.
        for (key, _) in std::env::vars_os() {
            let k = key.to_string_lossy();
            if k.starts_with("CARGO_PKG_")
                || k.starts_with("CARGO_BIN_EXE_")
                || [
                    "CARGO_MANIFEST_DIR",
                    "CARGO_MANIFEST_PATH",
                    "CARGO_CRATE_NAME",
                    "CARGO_BIN_NAME",
                    "CARGO_PRIMARY_PACKAGE",
                    "CARGO_TARGET_TMPDIR",
                    "CARGO_RUSTC_CURRENT_DIR",
                    "OUT_DIR",
                ]
                .contains(&k.as_ref())
            {
                build.env_remove(&key);
            }
        }
        let out = build
            .args(["build", "--quiet", "--profile", "static", "--target", TARGET])
            .args(["-p", "mbxstress", "--target-dir"])
            .arg(target_dir)
            .current_dir(&root)
            .output()
            .map_err(|e| format!("running cargo for the static build: {e}"))?;
        if !out.status.success() {
            return Err(format!(
                "`cargo build --profile static --target {TARGET} -p mbxstress` failed:\n{}",
                String::from_utf8_lossy(&out.stderr)
            ));
        }
        let bin = target_dir.join(TARGET).join("static").join("mbxstress");
        if bin.is_file() {
            Ok(bin)
        } else {
            Err(format!("the static build left no {}", bin.display()))
        }
    });
    match built {
        Ok(p) => p.clone(),
        Err(e) => panic!("{e}"),
    }
}
