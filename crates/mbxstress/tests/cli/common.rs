//! Helpers: run the binary, capture its output, make scratch directories.

use std::path::PathBuf;
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
pub fn mbx_in(dir: Option<&PathBuf>, args: &[&str]) -> Run {
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

/// A fresh scratch directory under the target directory, unique per test.
pub fn scratch(name: &str) -> PathBuf {
    let dir = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join(format!("cli-{name}"));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).expect("create scratch dir");
    dir
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
    let status = Command::new("kill")
        .args(["-INT", &child.id().to_string()])
        .status()
        .expect("kill");
    assert!(status.success());
    child.wait_with_output().expect("wait")
}

/// Starts `mbxstress` with `args` in `dir`, output captured (for tests that signal it).
pub fn spawn_in(dir: &PathBuf, args: &[&str]) -> std::process::Child {
    Command::new(env!("CARGO_BIN_EXE_mbxstress"))
        .args(args)
        .current_dir(dir)
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .expect("spawn mbxstress")
}
