//! A real mail server for the tests: scripts/mailserver.sh's Postfix + Dovecot on loopback, one
//! per test binary (starting one takes ~1 s, stopping Dovecot 1-3 s), shared by its tests; each
//! test uses its own users. The shared server is stopped as the test binary exits (an atexit
//! handler: statics are never dropped, and the suite's footprint check lists /tmp right after
//! `cargo test` returns); if the binary is killed instead, the script's watcher (`--watch`) stops
//! it within a second. An owned [`MailServer`] (a test that needs a server of its own) is
//! stopped when dropped.
//!
//! Without root, Postfix or Dovecot the tests say so on stderr and return, unless
//! MBX_REQUIRE_MAIL_SERVER is set (.ci/run sets it): then they fail.

#![allow(dead_code)]

use std::collections::HashMap;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::OnceLock;

use mbx_loadgen::conn::Endpoint;
use mbx_loadgen::tls::{client_config, Trust};
use mbx_loadgen::Security;

/// A running server's endpoints.
#[derive(Debug)]
pub struct MailServer {
    pub dir: PathBuf,
    pub host: String,
    pub domain: String,
    pub password: String,
    pub users: u32,
    pub submission: u16,
    pub submissions: u16,
    pub imap: u16,
    pub imaps: u16,
    pub pop3: u16,
    pub pop3s: u16,
    pub ca_file: PathBuf,
    owned: bool,
}

fn script() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../scripts/mailserver.sh")
}

pub fn required() -> bool {
    std::env::var_os("MBX_REQUIRE_MAIL_SERVER").is_some_and(|v| !v.is_empty() && v != "0")
}

static NEXT: AtomicUsize = AtomicUsize::new(0);

impl MailServer {
    /// Starts a server with `users` users; Err says why it cannot.
    pub fn start(users: u32) -> Result<MailServer, String> {
        MailServer::start_with(users, &[])
    }

    /// [`MailServer::start`] with more options of the script (`--layout inbox-dot`).
    pub fn start_with(users: u32, options: &[&str]) -> Result<MailServer, String> {
        // A short path (Unix socket paths are limited) whose parents the daemons' users can
        // traverse: /tmp, unless it is private (bench/test-footprint.sh binds a 0700 folder over
        // it), then /var/tmp or /dev/shm.
        let base = ["/tmp", "/var/tmp", "/dev/shm"]
            .into_iter()
            .find(|b| std::fs::metadata(b).is_ok_and(|m| m.permissions().mode() & 0o001 != 0))
            .ok_or("none of /tmp, /var/tmp, /dev/shm is traversable by other users")?;
        let dir = PathBuf::from(format!(
            "{base}/mbxlg-{}-{}",
            std::process::id(),
            NEXT.fetch_add(1, Ordering::Relaxed)
        ));
        let mut last = String::new();
        // A port block taken between the script's check and the daemons' bind: try again.
        for _ in 0..3 {
            let out = Command::new("bash")
                .arg(script())
                .args([
                    "start",
                    dir.to_str().ok_or("non-UTF-8 path")?,
                    "--users",
                    &users.to_string(),
                ])
                .args(["--watch", &std::process::id().to_string()])
                .args(options)
                .output()
                .map_err(|e| format!("cannot run {}: {e}", script().display()))?;
            if out.status.success() {
                let env: HashMap<String, String> = String::from_utf8_lossy(&out.stdout)
                    .lines()
                    .filter_map(|l| l.split_once('=').map(|(k, v)| (k.to_owned(), v.to_owned())))
                    .collect();
                let get = |k: &str| {
                    env.get(k)
                        .cloned()
                        .ok_or_else(|| format!("mailserver.sh printed no {k}"))
                };
                let port = |k: &str| {
                    get(k).and_then(|v| v.parse::<u16>().map_err(|e| format!("{k}: {e}")))
                };
                return Ok(MailServer {
                    dir: dir.clone(),
                    host: get("MBX_MAIL_HOST")?,
                    domain: get("MBX_MAIL_DOMAIN")?,
                    password: get("MBX_MAIL_PASSWORD")?,
                    users,
                    submission: port("MBX_MAIL_SUBMISSION_PORT")?,
                    submissions: port("MBX_MAIL_SUBMISSIONS_PORT")?,
                    imap: port("MBX_MAIL_IMAP_PORT")?,
                    imaps: port("MBX_MAIL_IMAPS_PORT")?,
                    pop3: port("MBX_MAIL_POP3_PORT")?,
                    pop3s: port("MBX_MAIL_POP3S_PORT")?,
                    ca_file: PathBuf::from(get("MBX_MAIL_CA_FILE")?),
                    owned: true,
                });
            }
            last = String::from_utf8_lossy(&out.stderr).into_owned();
            if !last.contains("in use") && !last.contains("nothing listens") {
                break;
            }
        }
        Err(format!("scripts/mailserver.sh start failed:\n{last}"))
    }

    /// The server shared by this test binary's tests, or None (after saying why on stderr) when
    /// one cannot start and MBX_REQUIRE_MAIL_SERVER is not set.
    pub fn shared() -> Option<&'static MailServer> {
        static SHARED: OnceLock<Result<MailServer, String>> = OnceLock::new();
        let r = SHARED.get_or_init(|| {
            MailServer::start(80).map(|mut s| {
                s.owned = false;
                stop_at_exit(&s.dir);
                s
            })
        });
        match r {
            Ok(s) => Some(s),
            Err(why) => {
                assert!(
                    !required(),
                    "MBX_REQUIRE_MAIL_SERVER is set but the mail server did not start: {why}"
                );
                eprintln!("SKIPPED: no mail server ({why}); set MBX_REQUIRE_MAIL_SERVER=1 to make this a failure");
                None
            }
        }
    }

    /// `loadgen<i>`.
    pub fn user(&self, i: u32) -> String {
        format!("loadgen{i}")
    }

    /// `loadgen<i>@domain`.
    pub fn address(&self, i: u32) -> String {
        format!("loadgen{i}@{}", self.domain)
    }

    /// An endpoint trusting the server's CA.
    pub fn endpoint(&self, port: u16, security: Security) -> Endpoint {
        let tls = client_config(&Trust::CaFile(self.ca_file.clone()))
            .expect("the server's CA file loads");
        Endpoint::new(&self.host, port, security, Some(tls))
    }

    /// The maildir of user `i`.
    pub fn maildir(&self, i: u32) -> PathBuf {
        self.dir.join(format!("mail/loadgen{i}/Maildir"))
    }

    /// Kills this instance's Dovecot as a crash would (SIGKILL to its master and the master's
    /// children, by process id); Postfix keeps running. A clean stop would keep logged-in
    /// sessions served for 30 s ("Server shutting down" comes late).
    pub fn crash_dovecot(&self) {
        let pid = std::fs::read_to_string(self.dir.join("run/master.pid")).unwrap_or_default();
        let master = pid.trim().to_owned();
        let mut pids = vec![master.clone()];
        for entry in std::fs::read_dir("/proc").into_iter().flatten().flatten() {
            let stat = std::fs::read_to_string(entry.path().join("stat")).unwrap_or_default();
            // pid (comm) state ppid ...: the fields after the last ')'.
            let ppid = stat
                .rsplit_once(')')
                .and_then(|(_, rest)| rest.split_whitespace().nth(1));
            if ppid == Some(master.as_str()) {
                pids.push(entry.file_name().to_string_lossy().into_owned());
            }
        }
        let _ = Command::new("kill").arg("-KILL").args(&pids).status();
    }
}

static AT_EXIT: OnceLock<PathBuf> = OnceLock::new();

extern "C" fn stop_shared() {
    if let Some(dir) = AT_EXIT.get() {
        let _ = Command::new("bash")
            .arg(script())
            .arg("stop")
            .arg(dir)
            .status();
    }
}

/// Stops the shared server in `dir` when the process exits (normally or by `process::exit`).
fn stop_at_exit(dir: &Path) {
    if AT_EXIT.set(dir.to_path_buf()).is_ok() {
        // SAFETY: registers a plain function; it only reads a set-once static and runs a command.
        #[allow(unsafe_code)]
        let rc = unsafe { libc::atexit(stop_shared) };
        assert_eq!(rc, 0, "atexit failed");
    }
}

impl Drop for MailServer {
    fn drop(&mut self) {
        if self.owned {
            let _ = Command::new("bash")
                .arg(script())
                .arg("stop")
                .arg(&self.dir)
                .status();
        }
    }
}
