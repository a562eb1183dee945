//! Tests that need what a machine may lack say so when they cannot run: never a silent pass.
//!
//! A test that needs root and loop devices (or `mount`), or Chromium, calls [`skip`] when the
//! machine lacks it. With the need's `MBX_REQUIRE_*` variable set (.ci/run sets them where the
//! machine has what they need) that is a failure naming what is missing; otherwise the test
//! returns after printing one `SKIPPED <test>: <why>` line straight to the process's stderr,
//! which the test harness does not capture (it captures `eprintln!` of passing tests), so the
//! line is in the output of `cargo test`, and bench/test-footprint.sh counts them.
//! docs/testing.md lists the variables.

use std::io::Write as _;
use std::sync::atomic::{AtomicUsize, Ordering};

/// What a test needs that a machine may lack.
#[derive(Debug, Clone, Copy)]
pub enum Need {
    /// Root, loop devices and the tools around them (losetup, mkfs.ext4, mount).
    Devices,
    /// Headless Chromium.
    Browser,
    /// Root, Postfix and Dovecot (scripts/mailserver.sh; Linux only).
    #[cfg_attr(not(target_os = "linux"), allow(dead_code))]
    MailServer,
}

impl Need {
    /// The variable that turns a skip into a failure.
    pub fn variable(self) -> &'static str {
        match self {
            Need::Devices => "MBX_REQUIRE_DEVICE_TESTS",
            Need::Browser => "MBX_REQUIRE_BROWSER",
            Need::MailServer => "MBX_REQUIRE_MAIL_SERVER",
        }
    }
}

static SKIPPED: AtomicUsize = AtomicUsize::new(0);

/// The running test cannot run here, for `why`: fails if `need`'s variable is set, otherwise
/// prints the skip where it is seen. The caller returns afterwards.
pub fn skip(need: Need, why: &str) {
    let thread = std::thread::current();
    let test = thread.name().unwrap_or("?");
    let var = need.variable();
    assert!(
        std::env::var_os(var).is_none(),
        "{var} is set but {test} cannot run: {why}"
    );
    let n = SKIPPED.fetch_add(1, Ordering::Relaxed) + 1;
    let _ = writeln!(
        std::io::stderr().lock(),
        "SKIPPED {test}: {why} (skip {n} of this test binary; {var}=1 makes it a failure)"
    );
}

/// A test that cannot run here is reported past the harness's capture, and fails when its
/// variable requires it: `store::block_devices_need_allow_device` run in a child process with
/// no `losetup` on its PATH.
#[test]
fn a_skip_is_printed_and_fails_when_required() {
    let exe = std::env::current_exe().expect("test binary");
    let empty = crate::common::scratch("skip-no-tools");
    let child = |require: bool| {
        let mut c = std::process::Command::new(&exe);
        c.args(["--exact", "store::block_devices_need_allow_device"])
            .env("PATH", &*empty)
            .env_remove(Need::Devices.variable());
        if require {
            c.env(Need::Devices.variable(), "1");
        }
        c.output().expect("run the test binary")
    };
    let out = child(false);
    let stderr = String::from_utf8_lossy(&out.stderr);
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "{stdout}\n{stderr}");
    assert!(stdout.contains("1 passed"), "{stdout}");
    assert!(
        stderr.contains("SKIPPED store::block_devices_need_allow_device: ")
            && stderr.contains("MBX_REQUIRE_DEVICE_TESTS=1 makes it a failure"),
        "the skip is not in the output:\n{stdout}\n{stderr}"
    );
    let out = child(true);
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(!out.status.success(), "{stdout}");
    assert!(
        stdout.contains("MBX_REQUIRE_DEVICE_TESTS is set but"),
        "{stdout}"
    );
}
