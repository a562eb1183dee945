//! `mbxstress fleet run`: the test on several servers at once over SSH (issue 14).
//!
//! The coordinator only drives the system `ssh` client (`std::process::Command`, BatchMode=yes:
//! keys or an agent, never a password): checks every host in parallel (reachable, version or
//! `--push`, clock offset), starts `mbxstress run --progress jsonl --start-gate stdin` on each,
//! reads their event streams, sends every host the same start time once all are ready, and
//! copies each result folder back as its run ends (`tar` over ssh, regular files only). The
//! aggregate is the `esrp` summary of the per-host result.json files. Stopping: `stop` on a
//! run's stdin, or the end of it (the coordinator or its connection gone), interrupts that run
//! cleanly. A host silent for `--host-timeout` is given up (the watchdog); a host whose
//! connection drops is reached again through its run's pid file, waited for, stopped if need
//! be, and collected, so no remote run outlives the coordinator and no result written is lost.

use std::collections::BTreeSet;
use std::io::{BufRead, BufReader, Write};
use std::path::{Path, PathBuf};
use std::process::{Child, ChildStdin, Command, ExitCode, ExitStatus, Stdio};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{mpsc, Arc, Mutex};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use anyhow::{anyhow, Context};
use serde::Deserialize;

use mbx_engine::result::{DoctorReport, DoctorStatus, DOCTOR_SCHEMA};

use crate::cli::{FleetRunArgs, RunTest};
use crate::exit::usage;

/// A database or log location in the hosts file: one path or a list.
#[derive(Debug, Clone, Deserialize)]
#[serde(untagged)]
enum Paths {
    One(String),
    Many(Vec<String>),
}

impl Paths {
    fn list(&self) -> Vec<String> {
        match self {
            Paths::One(p) => vec![p.clone()],
            Paths::Many(v) => v.clone(),
        }
    }
}

/// One `[[host]]` table.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
struct HostEntry {
    ssh: String,
    name: Option<String>,
    db_path: Paths,
    log_path: Paths,
    profile: Option<PathBuf>,
    mbxstress: Option<String>,
    work_dir: Option<String>,
}

/// The hosts file.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct HostsFile {
    host: Vec<HostEntry>,
}

/// A host ready to be driven: its entry, checked, with the folder name its results go to.
#[derive(Debug, Clone)]
struct Host {
    name: String,
    entry: HostEntry,
    work_dir: String,
}

fn default_name(ssh: &str) -> String {
    let host = ssh.rsplit('@').next().unwrap_or(ssh);
    host.chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || matches!(c, '.' | '-' | '_') {
                c
            } else {
                '_'
            }
        })
        .collect()
}

/// Names a host may not have: what the coordinator writes beside the host folders in `--out`
/// (fleet.json, fleet.html, `earlier/` for a resumed run's predecessor) and the files of a result
/// folder, which `--out` is refused for holding (see `run::RESULT_FILES`). Compared without case
/// (a case-insensitive filesystem, as on macOS and Windows, makes `Fleet.json` the same file).
const RESERVED_NAMES: [&str; 3] = ["fleet.json", "fleet.html", "earlier"];

/// Longest host name: one path component on every filesystem, with room for the paths below it.
const MAX_NAME_LEN: usize = 100;

/// Why `name` cannot name a host's results folder (a single, portable path component that the
/// coordinator does not use itself), or `None`.
fn bad_name(name: &str) -> Option<String> {
    if name.is_empty()
        || name.starts_with('.')
        || !name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '.' | '-' | '_'))
    {
        return Some(
            "must be letters, digits, '.', '-' or '_', not starting with '.' (it names the results folder)"
                .into(),
        );
    }
    if name.len() > MAX_NAME_LEN {
        return Some(format!(
            "is {} characters long, over {MAX_NAME_LEN} (it names the results folder)",
            name.len()
        ));
    }
    let lower = name.to_ascii_lowercase();
    if RESERVED_NAMES
        .iter()
        .chain(super::run::RESULT_FILES.iter())
        .any(|r| *r == lower)
    {
        return Some(format!(
            "is reserved: `--out` holds fleet.json, fleet.html and earlier/ beside the host folders, and no result file ({}); choose another name",
            super::run::RESULT_FILES.join(", ")
        ));
    }
    // Windows reserves these device names, with any extension, in every folder.
    let stem = lower.split('.').next().unwrap_or("");
    let device = matches!(stem, "con" | "prn" | "aux" | "nul")
        || (stem.len() == 4
            && (stem.starts_with("com") || stem.starts_with("lpt"))
            && stem.ends_with(|c: char| ('1'..='9').contains(&c)));
    if device || name.ends_with('.') {
        return Some(
            "is not a valid folder name on Windows (a device name such as CON or NUL, or a trailing '.'); choose another name"
                .into(),
        );
    }
    None
}

/// Longest host profile file read: a profile is five `key = number` lines, about 150 bytes.
const PROFILE_LIMIT: u64 = 64 * 1024;

/// The 1-based line of byte `offset` in `text`.
fn line_of(text: &str, offset: usize) -> usize {
    let end = offset.min(text.len());
    text.as_bytes()
        .get(..end)
        .map_or(0, |b| b.iter().filter(|c| **c == b'\n').count())
        .saturating_add(1)
}

/// Checks a host's `profile` file here before it is copied anywhere: a regular file of at most
/// [`PROFILE_LIMIT`] bytes (bounded read: no device, FIFO or huge file), TOML with exactly the
/// profile keys, values in range. The message names lines and keys of the profile format, never
/// the file's contents (it may be any file, such as /etc/shadow).
fn check_profile(path: &Path) -> Result<(), String> {
    let what = "a mailbox profile (TOML)";
    let text =
        mbx_report::input::read_bounded(path, PROFILE_LIMIT, what).map_err(|e| e.to_string())?;
    let keys: std::collections::BTreeMap<String, toml::Spanned<toml::Value>> =
        toml::from_str(&text).map_err(|e| {
            let at = e.span().map_or(0, |s| s.start);
            format!(
                "{} is not a mailbox profile: not valid TOML at line {} (a profile is `key = number` lines: {})",
                path.display(),
                line_of(&text, at),
                mbx_config::PROFILE_KEYS.join(", ")
            )
        })?;
    if let Some((_, v)) = keys
        .iter()
        .find(|(k, _)| !mbx_config::PROFILE_KEYS.contains(&k.as_str()))
    {
        return Err(format!(
            "{} is not a mailbox profile: line {} has a key that is not one of {}",
            path.display(),
            line_of(&text, v.span().start),
            mbx_config::PROFILE_KEYS.join(", ")
        ));
    }
    if let Some(k) = mbx_config::PROFILE_KEYS
        .iter()
        .find(|k| !keys.contains_key(**k))
    {
        return Err(format!(
            "{} is not a complete mailbox profile: key `{k}` is missing",
            path.display()
        ));
    }
    let profile: mbx_config::Profile = toml::from_str(&text).map_err(|e| {
        let at = e.span().map_or(0, |s| s.start);
        format!(
            "{}: line {}: the value has the wrong type (profile values are numbers)",
            path.display(),
            line_of(&text, at)
        )
    })?;
    profile.validate(path).map_err(|e| e.to_string())
}

/// The lines of a host's keys in the hosts file (parsed a second time, for messages only).
#[derive(Debug, Default, Deserialize)]
struct HostLine {
    ssh: Option<toml::Spanned<toml::Value>>,
    name: Option<toml::Spanned<toml::Value>>,
    profile: Option<toml::Spanned<toml::Value>>,
}

#[derive(Debug, Deserialize)]
struct HostLines {
    host: Vec<HostLine>,
}

/// Reads and checks the hosts file: strict keys, non-empty `ssh` and paths, unique safe names
/// that are not reserved, a valid `profile`. Every message names the hosts file's line.
fn load_hosts(path: &Path) -> anyhow::Result<Vec<Host>> {
    let text = mbx_config::input::read_bounded(
        path,
        mbx_config::input::HOSTS_LIMIT,
        "a hosts file ([[host]] tables)",
    )
    .map_err(|e| usage(format!("--hosts: {e}")))?;
    let file: HostsFile = toml::from_str(&text).map_err(|e| {
        usage(format!(
            "--hosts {}: {e}\nexpected [[host]] tables with ssh, db_path, log_path and optionally name, profile, mbxstress, work_dir",
            path.display()
        ))
    })?;
    if file.host.is_empty() {
        return Err(usage(format!(
            "--hosts {}: no [[host]] table",
            path.display()
        )));
    }
    let lines = toml::from_str::<HostLines>(&text)
        .map(|l| l.host)
        .unwrap_or_default();
    let line =
        |s: &Option<toml::Spanned<toml::Value>>| s.as_ref().map(|v| line_of(&text, v.span().start));
    let mut names = BTreeSet::new();
    let mut hosts = Vec::new();
    for (i, e) in file.host.into_iter().enumerate() {
        let at = lines.get(i);
        let ssh_line = at.and_then(|l| line(&l.ssh));
        let which = |key_line: Option<usize>| match key_line.or(ssh_line) {
            Some(n) => format!(
                "--hosts {} line {n}: host {} ({:?})",
                path.display(),
                i + 1,
                e.ssh
            ),
            None => format!("--hosts {}: host {} ({:?})", path.display(), i + 1, e.ssh),
        };
        if e.ssh.trim().is_empty() || e.ssh.starts_with('-') {
            return Err(usage(format!(
                "{}: key `ssh` must be a destination such as user@server",
                which(None)
            )));
        }
        let name = e.name.clone().unwrap_or_else(|| default_name(&e.ssh));
        let name_line = at.and_then(|l| line(&l.name));
        if let Some(why) = bad_name(&name) {
            let key = if e.name.is_some() {
                "key `name`"
            } else {
                "the name taken from `ssh` (set `name`)"
            };
            return Err(usage(format!("{}: {key} {name:?} {why}", which(name_line))));
        }
        if !names.insert(name.to_ascii_lowercase()) {
            return Err(usage(format!(
                "{}: key `name` {name:?} is used by another host (names are compared without case): give each host its own name",
                which(name_line)
            )));
        }
        for (key, p) in [("db_path", &e.db_path), ("log_path", &e.log_path)] {
            if p.list().is_empty() || p.list().iter().any(|s| s.trim().is_empty()) {
                return Err(usage(format!(
                    "{}: key `{key}` has an empty path",
                    which(None)
                )));
            }
        }
        if let Some(p) = &e.profile {
            if let Err(why) = check_profile(p) {
                return Err(usage(format!(
                    "{}: key `profile` (a local file, checked here and copied to the host): {why}",
                    which(at.and_then(|l| line(&l.profile)))
                )));
            }
        }
        let work_dir = e.work_dir.clone().unwrap_or_else(|| ".mbxstress".into());
        hosts.push(Host {
            name,
            entry: e,
            work_dir,
        });
    }
    Ok(hosts)
}

/// Quotes a word for the remote POSIX shell (ssh joins its arguments into one command line).
fn sh(word: &str) -> String {
    format!("'{}'", word.replace('\'', "'\\''"))
}

/// Builds ssh and tar commands with the user's options.
#[derive(Debug, Clone)]
struct Ssh {
    config: Option<PathBuf>,
}

impl Ssh {
    fn cmd(&self, dest: &str, remote: &str) -> Command {
        let mut c = Command::new("ssh");
        if let Some(f) = &self.config {
            c.arg("-F").arg(f);
        }
        c.args([
            "-o",
            "BatchMode=yes",
            "-o",
            "ConnectTimeout=15",
            "-o",
            "ServerAliveInterval=5",
            "-o",
            "ServerAliveCountMax=3",
            "-T",
        ]);
        c.arg("--").arg(dest).arg(remote);
        // Its own process group: Ctrl-C at the terminal reaches the coordinator only, which then
        // stops the remote runs cleanly instead of having their connections cut.
        #[cfg(unix)]
        std::os::unix::process::CommandExt::process_group(&mut c, 0);
        // Windows: a new console process group (CREATE_NEW_PROCESS_GROUP), the same effect.
        #[cfg(windows)]
        std::os::windows::process::CommandExt::creation_flags(&mut c, 0x0000_0200);
        c
    }

    /// Runs `remote` on `dest` with `input` on its stdin; its stdout, or an error with its
    /// stderr.
    fn output(&self, dest: &str, remote: &str, input: Option<&Path>) -> anyhow::Result<String> {
        let mut c = self.cmd(dest, remote);
        c.stdout(Stdio::piped()).stderr(Stdio::piped());
        match input {
            Some(p) => c.stdin(fs_err::File::open(p)?.into_parts().0),
            None => c.stdin(Stdio::null()),
        };
        let out = output_bounded(&mut c, CHECK_LIMIT)?;
        if !out.status.success() {
            return Err(anyhow!(
                "`ssh {dest} {remote}` failed ({}): {}",
                out.status,
                String::from_utf8_lossy(&out.stderr).trim()
            ));
        }
        Ok(String::from_utf8_lossy(&out.stdout).into_owned())
    }
}

/// What the checks found on one host.
#[derive(Debug, Clone, Default)]
struct Checked {
    /// The remote binary to run.
    bin: String,
    /// Remote clock minus local clock, seconds.
    offset_s: f64,
    /// The round trip of the best clock reading, seconds.
    rtt_s: f64,
    /// It runs the static build --push copies (uploaded now, or already there: `push_reused`).
    pushed: bool,
    /// The static build was there already, verified by SHA-256: nothing was uploaded.
    push_reused: bool,
    /// `mbxstress doctor --json` on the host, for the host's paths and the run's flags.
    doctor: Option<DoctorReport>,
    /// How long that doctor took, seconds (ssh round trip included).
    doctor_s: f64,
}

fn unix_now() -> f64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0.0, |d| d.as_secs_f64())
}

/// The remote clock against ours, in one connection: the remote prints its time for each line we
/// send; the offset is taken from the round trip with the smallest time, at its midpoint.
fn clock_offset(ssh: &Ssh, dest: &str) -> anyhow::Result<(f64, f64)> {
    let mut child = ssh
        .cmd(dest, "echo ok; while read x; do date +%s.%N; done")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .context("starting ssh (is the OpenSSH client installed?)")?;
    let result = (|| -> anyhow::Result<(f64, f64)> {
        let mut stdin = child.stdin.take().context("ssh stdin")?;
        let mut out = BufReader::new(child.stdout.take().context("ssh stdout")?);
        let mut line = String::new();
        out.read_line(&mut line)?;
        if line.trim() != "ok" {
            return Err(anyhow!("no answer"));
        }
        let mut best: Option<(f64, f64)> = None;
        for _ in 0..5 {
            let t0 = unix_now();
            stdin.write_all(b"x\n")?;
            stdin.flush()?;
            line.clear();
            out.read_line(&mut line)?;
            let t1 = unix_now();
            let remote: f64 = line.trim().parse().map_err(|_| {
                anyhow!(
                    "`date +%s.%N` printed {:?}: GNU date is needed",
                    line.trim()
                )
            })?;
            let rtt = t1 - t0;
            if best.is_none_or(|(_, r)| rtt < r) {
                best = Some((remote - (t0 + t1) / 2.0, rtt));
            }
        }
        best.ok_or_else(|| anyhow!("no clock reading"))
    })();
    let _ = child.kill();
    let status = child.wait();
    result.map_err(|e| {
        let mut err = String::new();
        if let Some(mut s) = child.stderr.take() {
            let _ = std::io::Read::read_to_string(&mut s, &mut err);
        }
        anyhow!(
            "unreachable over ssh ({e}; {}): {}",
            status.map_or_else(|e| e.to_string(), |s| s.to_string()),
            err.trim()
        )
    })
}

fn sha256_local(path: &Path) -> anyhow::Result<String> {
    let out = Command::new("sha256sum")
        .arg(path)
        .output()
        .context("running sha256sum (coreutils) on the local binary")?;
    String::from_utf8_lossy(&out.stdout)
        .split_whitespace()
        .next()
        .map(str::to_string)
        .ok_or_else(|| anyhow!("sha256sum printed nothing for {}", path.display()))
}

/// Writes of doctor's write-through probe per location in fleet's check (doctor's default is 200):
/// enough to see an early-acknowledging cache, short enough not to slow the start.
const FLEET_PROBE_WRITES: &str = "64";

/// Runs `mbxstress doctor --json` on the host with the run's flags and the host's paths and
/// profile (doctor creates nothing). Its exit status 1 (a check failed) is a report like 0; a
/// capacity failure is a usage error naming the host, the fact and the fix: the databases
/// would not fit, so nothing may start anywhere.
fn doctor_host(
    ssh: &Ssh,
    h: &Host,
    bin: &str,
    run_dir: &str,
    flags: &[String],
) -> anyhow::Result<DoctorReport> {
    let mut words = host_words(h, bin, "doctor", run_dir, flags);
    words.extend([
        "--json".into(),
        "--probe-writes".into(),
        FLEET_PROBE_WRITES.into(),
    ]);
    let line: Vec<String> = words.iter().map(|w| sh(w)).collect();
    let out = output_bounded(
        ssh.cmd(&h.entry.ssh, &line.join(" ")).stdin(Stdio::null()),
        CHECK_LIMIT,
    )
    .with_context(|| format!("host {}: `{bin} doctor`", h.name))?;
    let text = String::from_utf8_lossy(&out.stdout);
    let report: DoctorReport = match serde_json::from_str(&text) {
        Ok(r) => r,
        Err(e) => {
            let why = format!(
                "host {}: `{bin} doctor --json` ({}) gave no report ({e}): {}",
                h.name,
                out.status,
                String::from_utf8_lossy(&out.stderr).trim()
            );
            // Exit 2: doctor refused the flags, so would the run.
            return Err(if out.status.code() == Some(2) {
                usage(why)
            } else {
                anyhow!(why)
            });
        }
    };
    if report.schema != DOCTOR_SCHEMA {
        return Err(anyhow!(
            "host {}: doctor's report has schema {:?}, not {DOCTOR_SCHEMA:?}",
            h.name,
            report.schema
        ));
    }
    if let Some(c) = report
        .checks
        .iter()
        .find(|c| c.name == "capacity" && c.status == DoctorStatus::Fail)
    {
        return Err(usage(format!(
            "host {}: not enough free space for the test at {}: {}; fix: {}",
            h.name, c.subject, c.fact, c.fix
        )));
    }
    Ok(report)
}

/// The remote folder of one host's run: unique per run and host, so hosts whose `work_dir` is one
/// folder (a home shared over NFS, two aliases of one server) never share files.
fn remote_run_dir(work_dir: &str, run_id: &str, name: &str) -> String {
    format!("{work_dir}/fleet/{run_id}/{name}")
}

/// The Rust target of the binary `--push` copies: statically linked (musl), it runs on any x86_64
/// Linux whatever its C library, where a glibc build needs a glibc at least as new as the build
/// machine's. Always this build, not only for hosts with an older libc: one binary, verified the
/// same way everywhere, and no probing of remote libc versions.
pub(crate) const STATIC_TARGET: &str = "x86_64-unknown-linux-musl";

/// The command that builds it (the `static` profile of Cargo.toml: release code without debug
/// info, a fifth of the size to copy to every host).
pub(crate) const STATIC_BUILD: &str =
    "cargo build --profile static --target x86_64-unknown-linux-musl -p mbxstress";

/// The binary `--push` copies, found and checked here once before any host is touched.
#[derive(Debug, Clone)]
struct Push {
    path: PathBuf,
    sha256: String,
}

/// True if `bytes` are a 64-bit little-endian x86_64 ELF executable without a program
/// interpreter (PT_INTERP): statically linked, so it needs no C library on the host.
fn is_static_x86_64_elf(bytes: &[u8]) -> bool {
    let u16_at = |at: usize| {
        bytes
            .get(at..at.saturating_add(2))
            .map(|b| u16::from_le_bytes([b[0], b[1]]))
    };
    let u32_at = |at: usize| {
        bytes
            .get(at..at.saturating_add(4))
            .and_then(|b| <[u8; 4]>::try_from(b).ok())
            .map(u32::from_le_bytes)
    };
    let u64_at = |at: usize| {
        bytes
            .get(at..at.saturating_add(8))
            .and_then(|b| <[u8; 8]>::try_from(b).ok())
            .map(u64::from_le_bytes)
    };
    // ELF magic, 64-bit, little-endian, x86_64 (EM_X86_64 = 62).
    if bytes.get(..6) != Some(&[0x7f, b'E', b'L', b'F', 2, 1][..]) || u16_at(18) != Some(62) {
        return false;
    }
    let (Some(phoff), Some(phentsize), Some(phnum)) = (u64_at(0x20), u16_at(0x36), u16_at(0x38))
    else {
        return false;
    };
    let Ok(phoff) = usize::try_from(phoff) else {
        return false;
    };
    (0..usize::from(phnum)).all(|i| {
        let at = phoff.saturating_add(i.saturating_mul(usize::from(phentsize)));
        // PT_INTERP = 3; a header that does not fit the file is not a valid executable.
        u32_at(at).is_some_and(|t| t != 3)
    })
}

/// Finds the static build `--push` copies: `--push-binary`, else this binary if it is that build,
/// else `target/x86_64-unknown-linux-musl/{static,this profile,release}/mbxstress` beside this
/// build (`static` is the profile of [`STATIC_BUILD`]). It must be a static x86_64 ELF that says
/// this version. A usage error names the build command.
fn find_push_binary(explicit: Option<&Path>) -> anyhow::Result<Push> {
    let build = format!("rustup target add {STATIC_TARGET} && {STATIC_BUILD}");
    let exe = std::env::current_exe().context("finding this binary for --push")?;
    let candidates: Vec<PathBuf> = match explicit {
        Some(p) => vec![p.to_path_buf()],
        None if cfg!(all(target_os = "linux", target_env = "musl")) => vec![exe.clone()],
        None => {
            // target/<profile>/mbxstress or target/<triple>/<profile>/mbxstress.
            let profile = exe.parent().and_then(Path::file_name);
            let mut v = Vec::new();
            for root in exe.ancestors().skip(2).take(2) {
                let profiles = [
                    Some(std::ffi::OsStr::new("static")),
                    profile,
                    Some(std::ffi::OsStr::new("release")),
                ];
                for p in profiles.into_iter().flatten() {
                    let c = root.join(STATIC_TARGET).join(p).join("mbxstress");
                    if !v.contains(&c) {
                        v.push(c);
                    }
                }
            }
            v
        }
    };
    let Some(path) = candidates.iter().find(|p| p.is_file()) else {
        let looked: Vec<String> = candidates.iter().map(|p| p.display().to_string()).collect();
        return Err(usage(format!(
            "--push copies the static Linux build ({STATIC_TARGET}), which runs whatever the host's C library; it is not at {}: build it with `{build}`, or name it with --push-binary FILE",
            looked.join(" or ")
        )));
    };
    let what = "the static mbxstress build for --push";
    let bytes = mbx_report::input::read_head(path, 4096, what)
        .map_err(|e| usage(format!("--push: {e}")))?;
    if !is_static_x86_64_elf(&bytes) {
        return Err(usage(format!(
            "--push: {} is not a statically linked x86_64 Linux executable: build the static one with `{build}`",
            path.display()
        )));
    }
    let version = format!("mbxstress {}", env!("CARGO_PKG_VERSION"));
    // Its version, asked where it can run (a coordinator on another system pushes it unasked;
    // the hosts' own checks then run it).
    if cfg!(all(target_os = "linux", target_arch = "x86_64")) {
        let said = Command::new(path)
            .arg("--version")
            .stdin(Stdio::null())
            .output()
            .map(|o| String::from_utf8_lossy(&o.stdout).trim().to_string())
            .unwrap_or_default();
        if said != version {
            return Err(usage(format!(
                "--push: {} says {said:?}, not {version:?}: rebuild it with `{build}`",
                path.display()
            )));
        }
    }
    Ok(Push {
        sha256: sha256_local(path)?,
        path: path.clone(),
    })
}

/// Copies the static build to `WORK_DIR/bin/mbxstress-<version>` on the host; returns its path
/// and whether a verified copy was there already.
/// A copy already there with the same SHA-256 is used as it is. Otherwise the upload goes to a
/// temporary name unique to this run and host, is verified, then renamed over the target (an
/// atomic rename): hosts sharing a home can upload at once, each renaming a complete, verified
/// copy, and a run never executes a half-written file.
fn push_to(ssh: &Ssh, h: &Host, push: &Push, run_dir: &str) -> anyhow::Result<(String, bool)> {
    let dest = &h.entry.ssh;
    let dir = format!("{}/bin", h.work_dir);
    let target = format!("{dir}/mbxstress-{}", env!("CARGO_PKG_VERSION"));
    let probe = ssh.output(
        dest,
        &format!("uname -m; sha256sum {} 2>/dev/null || true", sh(&target)),
        None,
    )?;
    let mut lines = probe.lines();
    let arch = lines.next().unwrap_or("").trim();
    if arch != "x86_64" {
        return Err(usage(format!(
            "host {}: --push has an x86_64 build, but the host's `uname -m` says {arch:?}: install mbxstress {} there and set `mbxstress = \"/path\"`",
            h.name,
            env!("CARGO_PKG_VERSION")
        )));
    }
    if lines.next().and_then(|l| l.split_whitespace().next()) == Some(push.sha256.as_str()) {
        return Ok((target, true));
    }
    // The run folder's name is unique to this run and host: so is the temporary name.
    let unique = run_dir.rsplit('/').take(2).collect::<Vec<_>>().join(".");
    let part = format!("{target}.{unique}.part");
    let remote_sum = ssh.output(
        dest,
        &format!(
            "mkdir -p {d} && cat > {p} && chmod 755 {p} && sha256sum {p}",
            d = sh(&dir),
            p = sh(&part)
        ),
        Some(&push.path),
    )?;
    if remote_sum.split_whitespace().next() != Some(push.sha256.as_str()) {
        let _ = ssh.output(dest, &format!("rm -f {}", sh(&part)), None);
        return Err(anyhow!(
            "host {}: --push: the copy's SHA-256 is {:?}, the local binary's {}: the transfer was damaged, run again",
            h.name,
            remote_sum.trim(),
            push.sha256
        ));
    }
    ssh.output(dest, &format!("mv -f {} {}", sh(&part), sh(&target)), None)?;
    Ok((target, false))
}

/// Reachable, version (or push), clock offset, the run folder with its input files, then
/// doctor's checks of the host's locations.
fn check_host(
    ssh: &Ssh,
    h: &Host,
    push: Option<&Push>,
    run_dir: &str,
    uploads: &[(PathBuf, String)],
    flags: &[String],
) -> anyhow::Result<Checked> {
    let dest = &h.entry.ssh;
    let (offset_s, rtt_s) = clock_offset(ssh, dest)?;
    let version = format!("mbxstress {}", env!("CARGO_PKG_VERSION"));
    let mut bin = h
        .entry
        .mbxstress
        .clone()
        .unwrap_or_else(|| "mbxstress".into());
    let found = ssh
        .output(dest, &format!("{} --version 2>&1 || true", sh(&bin)), None)
        .unwrap_or_default();
    let mut pushed = false;
    let mut push_reused = false;
    if found.trim() != version {
        let Some(push) = push else {
            return Err(usage(format!(
                "host {}: `{bin} --version` says {:?}, not {version:?}: install the same version there, set `mbxstress = \"/path\"` for the host, or add --push to copy the static build",
                h.name,
                found.trim()
            )));
        };
        (bin, push_reused) = push_to(ssh, h, push, run_dir)?;
        pushed = true;
    }
    ssh.output(dest, &format!("mkdir -p {}", sh(run_dir)), None)?;
    for (local, name) in uploads {
        ssh.output(
            dest,
            &format!("cat > {}", sh(&format!("{run_dir}/{name}"))),
            Some(local),
        )
        .with_context(|| format!("copying {} to host {}", local.display(), h.name))?;
    }
    let t0 = Instant::now();
    let doctor = doctor_host(ssh, h, &bin, run_dir, flags)?;
    Ok(Checked {
        bin,
        offset_s,
        rtt_s,
        pushed,
        push_reused,
        doctor: Some(doctor),
        doctor_s: t0.elapsed().as_secs_f64(),
    })
}

/// `f` over `items` on at most `workers` threads at once (the fan-out bound of the checks: each
/// opens and closes ssh connections), results in the items' order; `None` where `f` panicked.
fn bounded_map<T: Sync, R: Send>(
    items: &[T],
    workers: usize,
    f: impl Fn(&T) -> R + Sync,
) -> Vec<Option<R>> {
    let next = std::sync::atomic::AtomicUsize::new(0);
    let results: Vec<std::sync::Mutex<Option<R>>> =
        items.iter().map(|_| std::sync::Mutex::new(None)).collect();
    std::thread::scope(|s| {
        for _ in 0..workers.clamp(1, items.len().max(1)) {
            s.spawn(|| loop {
                let i = next.fetch_add(1, Ordering::SeqCst);
                let Some(item) = items.get(i) else { break };
                // A panic is that item's `None`, not the end of the scope (and the process).
                let r = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| f(item))).ok();
                if let (Some(slot), Some(r)) = (results.get(i), r) {
                    if let Ok(mut g) = slot.lock() {
                        *g = Some(r);
                    }
                }
            });
        }
    });
    results
        .into_iter()
        .map(|m| m.into_inner().ok().flatten())
        .collect()
}

/// Flags of `fleet run` that the coordinator consumes: (flag, takes a value).
const OWN_FLAGS: [(&str, bool); 10] = [
    ("--hosts", true),
    ("--host-timeout", true),
    ("--ssh-config", true),
    ("--push", false),
    ("--push-binary", true),
    ("--fanout", true),
    ("--start-margin", true),
    ("--abort-on-host-failure", false),
    ("--out", true),
    ("--progress", true),
];

/// The run flags to pass on: the command line after `fleet run`, less the coordinator's own
/// flags; `--config` and `--profile` point at the copies in the remote run folder.
fn forwarded_flags(argv: &[String], run_dir: &str) -> Vec<String> {
    let start = argv
        .iter()
        .position(|a| a == "fleet")
        .map_or(argv.len(), |i| i + 2);
    let mut out = Vec::new();
    let mut it = argv.iter().skip(start);
    while let Some(a) = it.next() {
        let (flag, inline) = match a.split_once('=') {
            Some((f, v)) if a.starts_with("--") => (f, Some(v)),
            _ => (a.as_str(), None),
        };
        if let Some((_, takes)) = OWN_FLAGS.iter().find(|(f, _)| *f == flag) {
            if *takes && inline.is_none() {
                it.next();
            }
            continue;
        }
        if flag == "--config" || flag == "--profile" {
            if inline.is_none() {
                it.next();
            }
            out.push(flag.to_string());
            out.push(format!("{run_dir}/{}", &flag[2..]));
            continue;
        }
        out.push(a.clone());
    }
    out
}

/// `bin sub` with the run flags and the host's profile and paths (for `run` and `doctor`).
fn host_words(h: &Host, bin: &str, sub: &str, run_dir: &str, flags: &[String]) -> Vec<String> {
    let mut words = vec![bin.to_string(), sub.into()];
    words.extend(flags.iter().cloned());
    if h.entry.profile.is_some() {
        words.extend(["--profile".into(), format!("{run_dir}/host-profile")]);
    }
    for p in h.entry.db_path.list() {
        words.extend(["--db-path".into(), p]);
    }
    for p in h.entry.log_path.list() {
        words.extend(["--log-path".into(), p]);
    }
    words
}

/// The remote command line of one host's run.
fn remote_command(h: &Host, bin: &str, run_dir: &str, flags: &[String]) -> String {
    let mut words = host_words(h, bin, "run", run_dir, flags);
    words.extend([
        "--out".into(),
        format!("{run_dir}/result"),
        "--progress".into(),
        "jsonl".into(),
        "--start-gate".into(),
        "stdin".into(),
    ]);
    let line: Vec<String> = words.iter().map(|w| sh(w)).collect();
    // The run goes in the background so that its pid (`$!`) is the one in the pid file: the
    // coordinator finds the run again over a fresh connection (to wait for it or stop it) if this
    // one drops. fd 3 carries the connection's input to it (a background command's input is
    // /dev/null otherwise): the run stops by itself when that input ends. Not `exec`: the shell
    // then reports the run's own exit status on the event stream, so a run killed by a signal is
    // told apart from ssh's own exit 255 (a connection that failed).
    format!(
        "exec 3<&0; {} <&3 3<&- & echo $! > {}; wait $!; s=$?; printf '{{\"event\":\"{REMOTE_EXIT}\",\"status\":%d}}\\n' \"$s\"; exit \"$s\"",
        line.join(" "),
        sh(&format!("{run_dir}/{PID_FILE}")),
    )
}

/// The event the remote wrapper adds after the run exits: `{"event":"remote_exit","status":N}`
/// (the shell's `$?`: 128 + the signal's number for a run killed by a signal).
const REMOTE_EXIT: &str = "remote_exit";

/// The name of Linux signal `n` (the numbers of x86_64 Linux, the hosts `fleet run` drives).
fn signal_name(n: i64) -> Option<&'static str> {
    Some(match n {
        1 => "SIGHUP",
        2 => "SIGINT",
        3 => "SIGQUIT",
        4 => "SIGILL",
        5 => "SIGTRAP",
        6 => "SIGABRT",
        7 => "SIGBUS",
        8 => "SIGFPE",
        9 => "SIGKILL",
        10 => "SIGUSR1",
        11 => "SIGSEGV",
        12 => "SIGUSR2",
        13 => "SIGPIPE",
        14 => "SIGALRM",
        15 => "SIGTERM",
        24 => "SIGXCPU",
        25 => "SIGXFSZ",
        _ => return None,
    })
}

/// "signal 9 (SIGKILL)" for a shell status of 128 + 9.
fn signal_text(status: i64) -> String {
    let n = status.saturating_sub(128);
    match signal_name(n) {
        Some(name) => format!("signal {n} ({name})"),
        None => format!("signal {n}"),
    }
}

/// How a host's run ended, from ssh's exit status (`code`, `None` if ssh itself was killed) and
/// the remote wrapper's report of the run's own status. ssh exits 255 both when the connection
/// fails and when the remote command is killed by a signal; the wrapper's line tells them apart:
/// without it, the connection ended before the run did.
fn ended_state(l: &Live, code: Option<i32>) -> State {
    let last = last_line(&l.stderr_path);
    match (l.remote_exit, code) {
        // 130 is the run's own exit after a clean stop (SIGINT or SIGTERM), with its result.
        (Some(st), _) if st > 128 && !l.result_seen => State::Failed(format!(
            "the remote run was killed by {} in phase {:?}: {last}",
            signal_text(st),
            l.phase
        )),
        (Some(st), _) if !l.result_seen => State::Failed(format!(
            "the remote run exited with {st} before writing its result: {last}"
        )),
        (Some(st), _) => State::Exited(i32::try_from(st).unwrap_or(i32::MAX)),
        (None, Some(255) | None) => State::Failed(format!(
            "the ssh connection ended ({}) in phase {:?}: {last}",
            code.map_or("killed".into(), |c| format!("exit {c}")),
            l.phase
        )),
        (None, Some(c)) if !l.result_seen => State::Failed(format!(
            "the remote run exited with {c} before writing its result: {last}"
        )),
        (None, Some(c)) => State::Exited(c),
    }
}

/// How a host's run ended.
#[derive(Debug, Clone, PartialEq)]
enum State {
    Checking,
    Running,
    /// The remote run exited (its exit code).
    Exited(i32),
    /// ssh or the check failed: why.
    Failed(String),
}

/// A host during the run.
struct Live {
    host: Host,
    checked: Checked,
    state: State,
    stdin: Option<ChildStdin>,
    ready: bool,
    phase: String,
    iops: f64,
    target: f64,
    read_ms: f64,
    /// Seconds left in the current phase, when its length is known.
    eta_s: Option<f64>,
    result_seen: bool,
    /// The run's own exit status, reported by the remote wrapper (`remote_exit`).
    remote_exit: Option<i64>,
    /// Its ssh was started (there is a remote folder to copy back).
    started: bool,
    stderr_path: PathBuf,
    /// When the host last sent a line (the watchdog's clock).
    last_seen: Instant,
    /// Its engine has sent a `progress` event (one a second from then on): the watchdog's
    /// setup allowance is over.
    heard: bool,
    /// Its ssh client, ended when the host is given up.
    ssh_child: Option<Watched>,
    /// Its collection (waiting for its remote run, copying its results back, in a thread of
    /// its own) is over.
    collected: bool,
}

enum Msg {
    Line(usize, String),
    Exit(usize, Option<i32>),
    /// A collector thread's findings: a note for the host's message, and an error if its
    /// results could not be copied back.
    Collected(usize, Option<String>, Option<String>),
}

fn spawn_run(
    ssh: &Ssh,
    idx: usize,
    live: &mut Live,
    remote: &str,
    tx: mpsc::Sender<Msg>,
) -> anyhow::Result<()> {
    let err = fs_err::File::create(&live.stderr_path)?.into_parts().0;
    let mut child = ssh
        .cmd(&live.host.entry.ssh, remote)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::from(err))
        .spawn()
        .context("starting ssh")?;
    live.stdin = child.stdin.take();
    let out = child.stdout.take().context("ssh stdout")?;
    let watched = Watched::new(child, None);
    live.ssh_child = Some(watched.clone());
    // Every line first, then the exit: the result line must arrive before the end.
    std::thread::spawn(move || {
        for line in BufReader::new(out).lines() {
            let Ok(line) = line else { break };
            if tx.send(Msg::Line(idx, line)).is_err() {
                break;
            }
        }
        let code = watched.wait().ok().and_then(|s| s.code());
        let _ = tx.send(Msg::Exit(idx, code));
    });
    Ok(())
}

fn last_line(path: &Path) -> String {
    fs_err::read_to_string(path)
        .unwrap_or_default()
        .lines()
        .rev()
        .find(|l| !l.trim().is_empty())
        .unwrap_or("")
        .trim()
        .to_string()
}

/// Copies `run_dir/result` of a host into `dest` (tar over ssh). Only regular files and folders
/// come home: a symbolic or hard link, a device or a FIFO in the remote folder (a test.log
/// pointing at /etc/shadow) is left out with a warning naming it, and nothing is written
/// outside `dest`. Bounded: a host that stops answering mid-copy is cut off after
/// [`COPY_LIMIT`].
fn copy_back(ssh: &Ssh, h: &Host, run_dir: &str, dest: &Path) -> anyhow::Result<()> {
    fs_err::create_dir_all(dest)?;
    let mut child = ssh
        .cmd(
            &h.entry.ssh,
            &format!("tar -C {} -cf - .", sh(&format!("{run_dir}/result"))),
        )
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .context("starting ssh")?;
    let pipe = child.stdout.take().context("ssh stdout")?;
    let stderr = read_in_background(child.stderr.take());
    let watched = Watched::new(child, Some(COPY_LIMIT));
    let extracted = extract_regular_files(pipe, dest);
    let status = watched.wait();
    let err = stderr
        .recv_timeout(Duration::from_secs(2))
        .unwrap_or_default();
    if watched.fired() {
        return Err(anyhow!(
            "copying the results of host {} back took longer than {} s: given up",
            h.name,
            COPY_LIMIT.as_secs()
        ));
    }
    let dropped = match extracted {
        Ok(d) => d,
        Err(e) => {
            return Err(anyhow!(
                "copying the results of host {} back failed: {e:#} {}",
                h.name,
                err.trim()
            ))
        }
    };
    if !status.as_ref().is_ok_and(ExitStatus::success) {
        return Err(anyhow!(
            "copying the results of host {} back failed ({}): {}",
            h.name,
            status.map_or_else(|e| e.to_string(), |s| s.to_string()),
            err.trim()
        ));
    }
    for d in &dropped {
        errln!(
            "warning: host {}: {d} in its results folder was not copied back (only regular files are)",
            h.name
        );
    }
    Ok(())
}

/// How long copying one host's results back may take.
const COPY_LIMIT: Duration = Duration::from_secs(300);

/// Unpacks the regular files and folders of a tar stream into `dest`; returns what was left
/// out (links, devices, FIFOs, paths that leave `dest`), each named with its kind. Files are
/// created afresh (an existing link at a file's place is removed first, never followed).
fn extract_regular_files(stream: impl std::io::Read, dest: &Path) -> anyhow::Result<Vec<String>> {
    use std::path::Component;
    let mut dropped = Vec::new();
    let mut archive = tar::Archive::new(stream);
    for entry in archive.entries().context("reading the tar stream")? {
        let mut entry = entry.context("reading the tar stream")?;
        let name = entry
            .path()
            .map(|p| p.display().to_string())
            .unwrap_or_else(|_| "(a name that is not valid)".into());
        let mut rel = PathBuf::new();
        let mut inside = true;
        for c in Path::new(&name).components() {
            match c {
                Component::Normal(p) => rel.push(p),
                Component::CurDir => {}
                _ => inside = false,
            }
        }
        if !inside || entry.path().is_err() {
            dropped.push(format!("{name:?} (a path outside the folder)"));
            continue;
        }
        if rel.as_os_str().is_empty() {
            continue;
        }
        let kind = entry.header().entry_type();
        let target = dest.join(&rel);
        // Every folder on the way is a real folder made here (never a link).
        let parents_ok = rel
            .parent()
            .map(|p| {
                let mut at = dest.to_path_buf();
                p.components().all(|c| {
                    at.push(c);
                    match std::fs::symlink_metadata(&at) {
                        Ok(m) => m.is_dir(),
                        Err(_) => std::fs::create_dir(&at).is_ok(),
                    }
                })
            })
            .unwrap_or(true);
        if !parents_ok {
            dropped.push(format!("{name:?} (its folder is not a folder here)"));
            continue;
        }
        if kind.is_dir() {
            match std::fs::symlink_metadata(&target) {
                Ok(m) if m.is_dir() => {}
                Ok(_) => dropped.push(format!("{name:?} (a folder where a file is)")),
                Err(_) => fs_err::create_dir(&target)?,
            }
        } else if kind.is_file() || kind == tar::EntryType::Continuous {
            if std::fs::symlink_metadata(&target).is_ok_and(|m| !m.is_file()) {
                let _ = std::fs::remove_file(&target);
            }
            let mut f = fs_err::File::create(&target)?;
            std::io::copy(&mut entry, &mut f)
                .with_context(|| format!("writing {}", target.display()))?;
        } else {
            let what = if kind.is_symlink() {
                let to = entry
                    .link_name()
                    .ok()
                    .flatten()
                    .map(|l| format!(" to {}", l.display()))
                    .unwrap_or_default();
                format!("a symbolic link{to}")
            } else if kind.is_hard_link() {
                "a hard link".into()
            } else if kind.is_fifo() {
                "a FIFO".into()
            } else if kind.is_character_special() || kind.is_block_special() {
                "a device".into()
            } else {
                format!("a tar entry of type {:?}", kind.as_byte() as char)
            };
            dropped.push(format!("{name:?} ({what})"));
        }
    }
    Ok(dropped)
}

/// Reads a child's pipe to the end on its own thread (at most 64 KiB kept).
fn read_in_background(pipe: Option<impl std::io::Read + Send + 'static>) -> mpsc::Receiver<String> {
    let (tx, rx) = mpsc::channel();
    let bytes = read_bytes_in_background(pipe, 64 << 10);
    std::thread::spawn(move || {
        let b = bytes.recv().unwrap_or_default();
        let _ = tx.send(String::from_utf8_lossy(&b).into_owned());
    });
    rx
}

/// Reads a child's pipe to the end on its own thread, keeping at most `cap` bytes (the rest is
/// read and dropped, so the child never blocks on a full pipe).
fn read_bytes_in_background(
    pipe: Option<impl std::io::Read + Send + 'static>,
    cap: u64,
) -> mpsc::Receiver<Vec<u8>> {
    let (tx, rx) = mpsc::channel();
    std::thread::spawn(move || {
        let mut buf = Vec::new();
        if let Some(mut p) = pipe {
            let _ = std::io::Read::read_to_end(&mut std::io::Read::take(&mut p, cap), &mut buf);
            let _ = std::io::copy(&mut p, &mut std::io::sink());
        }
        let _ = tx.send(buf);
    });
    rx
}

/// How long one ssh command of the checks may take (a host whose `mkdir` or doctor hangs on a
/// dead mount must not hang the coordinator); generous, for an upload with --push.
const CHECK_LIMIT: Duration = Duration::from_secs(600);

/// `Command::output` bounded by `limit`: the child is killed when it passes it (an error).
fn output_bounded(c: &mut Command, limit: Duration) -> anyhow::Result<std::process::Output> {
    let mut child = c
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .context("starting ssh (is the OpenSSH client installed?)")?;
    let out = read_bytes_in_background(child.stdout.take(), 64 << 20);
    let err = read_bytes_in_background(child.stderr.take(), 1 << 20);
    let w = Watched::new(child, Some(limit));
    let status = w.wait()?;
    if w.fired() {
        return Err(anyhow!(
            "no answer within {} s: a command stuck on the host (a dead mount?)",
            limit.as_secs()
        ));
    }
    Ok(std::process::Output {
        status,
        stdout: out.recv_timeout(Duration::from_secs(5)).unwrap_or_default(),
        stderr: err.recv_timeout(Duration::from_secs(5)).unwrap_or_default(),
    })
}

/// A child process that another thread can end: the ssh of a host the watchdog gives up, or a
/// collection command that outlives its limit (a thread kills it then).
#[derive(Clone)]
struct Watched {
    child: Arc<Mutex<Child>>,
    fired: Arc<AtomicBool>,
    done: Arc<AtomicBool>,
}

impl Watched {
    fn new(child: Child, limit: Option<Duration>) -> Self {
        let w = Watched {
            child: Arc::new(Mutex::new(child)),
            fired: Arc::new(AtomicBool::new(false)),
            done: Arc::new(AtomicBool::new(false)),
        };
        if let Some(limit) = limit {
            let t = w.clone();
            std::thread::spawn(move || {
                let start = Instant::now();
                while !t.done.load(Ordering::SeqCst) {
                    if start.elapsed() >= limit {
                        t.fired.store(true, Ordering::SeqCst);
                        t.kill();
                        break;
                    }
                    std::thread::sleep(Duration::from_millis(50));
                }
            });
        }
        w
    }

    /// Ends the process (SIGKILL); it is reaped by [`Watched::wait`].
    fn kill(&self) {
        if let Ok(mut c) = self.child.lock() {
            let _ = c.kill();
        }
    }

    /// Waits for the end (the lock is held only for moments, so `kill` always gets through).
    fn wait(&self) -> std::io::Result<ExitStatus> {
        loop {
            let polled = match self.child.lock() {
                Ok(mut c) => c.try_wait(),
                Err(_) => Err(std::io::Error::other("a thread panicked")),
            };
            match polled {
                Ok(Some(s)) => {
                    self.done.store(true, Ordering::SeqCst);
                    return Ok(s);
                }
                Ok(None) => std::thread::sleep(Duration::from_millis(20)),
                Err(e) => {
                    self.done.store(true, Ordering::SeqCst);
                    return Err(e);
                }
            }
        }
    }

    /// The limit passed and the process was killed.
    fn fired(&self) -> bool {
        self.fired.load(Ordering::SeqCst)
    }
}

/// Runs a short remote command, bounded by `limit`: its stdout, or an error if ssh could not
/// start, failed, or the limit passed.
fn ssh_bounded(ssh: &Ssh, dest: &str, remote: &str, limit: Duration) -> anyhow::Result<String> {
    let mut child = ssh
        .cmd(dest, remote)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .context("starting ssh (is the OpenSSH client installed?)")?;
    let out = read_in_background(child.stdout.take());
    let err = read_in_background(child.stderr.take());
    let w = Watched::new(child, Some(limit));
    let status = w.wait()?;
    let out = out.recv_timeout(Duration::from_secs(2)).unwrap_or_default();
    let err = err.recv_timeout(Duration::from_secs(2)).unwrap_or_default();
    if w.fired() {
        return Err(anyhow!("no answer within {} s", limit.as_secs()));
    }
    if !status.success() {
        return Err(anyhow!("ssh: {status}: {}", err.trim()));
    }
    Ok(out)
}

/// The remote run's pid file, in its run folder (written by the remote shell before `exec`).
const PID_FILE: &str = "run.pid";

/// One ssh call of the collection may take this long.
const CALL_LIMIT: Duration = Duration::from_secs(30);

/// After SIGTERM, the time a remote run gets to stop cleanly before SIGKILL.
const TERM_WAIT: Duration = Duration::from_secs(20);

/// A host that dropped its connection is tried again for this long while unreachable.
const RECONNECT_FOR: Duration = Duration::from_secs(15);

/// The watchdog's allowance during a host's setup (before its engine's first event): database
/// creation sends an event a second, other steps (attaching, checking) are silent.
const SETUP_SILENCE: Duration = Duration::from_secs(600);

/// A remote shell command acting on the host's run when it is still alive: its pid from the
/// pid file, kept only if that process still has the run folder on its command line (a pid
/// reused by another process is never signalled). `then` runs with `$p` set; prints
/// `running <pid>` or `ended`.
fn on_live_run(run_dir: &str, then: &str) -> String {
    format!(
        "p=$(cat {pf} 2>/dev/null); case \"$p\" in ''|*[!0-9]*) p= ;; esac; \
         if [ -n \"$p\" ] && grep -qF -- {out} /proc/\"$p\"/cmdline 2>/dev/null; then {then} echo running \"$p\"; else echo ended; fi",
        pf = sh(&format!("{run_dir}/{PID_FILE}")),
        out = sh(&format!("{run_dir}/result")),
    )
}

/// Whether the host's remote run is still alive: Some(true) running, Some(false) ended, None
/// when the host cannot be asked (the error).
fn remote_alive(ssh: &Ssh, h: &Host, run_dir: &str, then: &str) -> Result<bool, String> {
    ssh_bounded(ssh, &h.entry.ssh, &on_live_run(run_dir, then), CALL_LIMIT)
        .map(|out| out.trim_start().starts_with("running"))
        .map_err(|e| format!("{e:#}"))
}

/// How a host's remote run is to be collected once its ssh session has ended.
#[derive(Debug, Clone, Copy, PartialEq)]
enum Collect {
    /// It ended and wrote its result: copy it back.
    Finished,
    /// The connection dropped while it ran: reach it again, give it `wait` to finish (it stops
    /// by itself once its input ends), then stop it; copy back what it wrote.
    Lost { wait: Duration },
    /// Given up (the watchdog, or no answer to the stop): stop it now, copy back what exists.
    Stop,
}

/// Waits until the host's remote run has ended, at most `wait` (less if `quit` is set);
/// returns what happened, for the host's message, and whether the host could be reached.
fn wait_remote_end(
    ssh: &Ssh,
    h: &Host,
    run_dir: &str,
    wait: Duration,
    quit: &AtomicBool,
) -> (String, bool) {
    let start = Instant::now();
    let mut unreachable_since: Option<Instant> = None;
    let mut was_running = false;
    loop {
        match remote_alive(ssh, h, run_dir, "") {
            Ok(false) => {
                return (
                    if was_running {
                        format!(
                            "the host was reached again and its run ended {:.1} s later",
                            start.elapsed().as_secs_f64()
                        )
                    } else {
                        "the host was reached again; its run had ended".into()
                    },
                    true,
                )
            }
            Ok(true) => {
                was_running = true;
                unreachable_since = None;
            }
            Err(e) => {
                let since = *unreachable_since.get_or_insert_with(Instant::now);
                if since.elapsed() >= RECONNECT_FOR || quit.load(Ordering::SeqCst) {
                    return (format!("the host could not be reached again ({e})"), false);
                }
            }
        }
        if start.elapsed() >= wait || quit.load(Ordering::SeqCst) {
            return (
                format!(
                    "the host was reached again; its run was still going after {:.0} s",
                    start.elapsed().as_secs_f64()
                ),
                true,
            );
        }
        std::thread::sleep(Duration::from_secs(1));
    }
}

/// Stops the host's remote run if it is alive: SIGTERM (and SIGCONT, for a stopped process)
/// for a clean stop with its result, then SIGKILL after [`TERM_WAIT`] (not waited for once
/// `quit` is set). Returns what happened.
fn stop_remote(ssh: &Ssh, h: &Host, run_dir: &str, quit: &AtomicBool) -> String {
    match remote_alive(ssh, h, run_dir, "kill -TERM \"$p\"; kill -CONT \"$p\";") {
        Ok(false) => return "its run had ended".into(),
        Ok(true) => {}
        Err(e) => return format!("it could not be reached to stop its run ({e})"),
    }
    let start = Instant::now();
    while start.elapsed() < TERM_WAIT {
        if quit.load(Ordering::SeqCst) {
            return "its run was asked to stop (SIGTERM), not waited for".into();
        }
        std::thread::sleep(Duration::from_secs(1));
        if remote_alive(ssh, h, run_dir, "") == Ok(false) {
            return format!(
                "its run was stopped (SIGTERM) and ended {:.1} s later",
                start.elapsed().as_secs_f64()
            );
        }
    }
    let _ = remote_alive(ssh, h, run_dir, "kill -KILL \"$p\";");
    std::thread::sleep(Duration::from_secs(2));
    match remote_alive(ssh, h, run_dir, "") {
        Ok(false) => format!(
            "its run did not stop within {} s of SIGTERM and was killed (SIGKILL)",
            TERM_WAIT.as_secs()
        ),
        _ => format!(
            "its run (pid file {run_dir}/{PID_FILE}) did not end even after SIGKILL (stuck in the kernel?): stop it on the host"
        ),
    }
}

/// One host to collect: its index, the host, its remote run folder, its local folder, how.
struct CollectJob {
    idx: usize,
    host: Host,
    run_dir: String,
    dest: PathBuf,
    how: Collect,
}

/// Collects one host in a thread of its own: waits for or stops its remote run as `how` says,
/// then copies its results back; reports [`Msg::Collected`].
fn spawn_collect(ssh: &Ssh, job: CollectJob, quit: Arc<AtomicBool>, tx: mpsc::Sender<Msg>) {
    let ssh = ssh.clone();
    let CollectJob {
        idx,
        host: h,
        run_dir,
        dest,
        how,
    } = job;
    std::thread::spawn(move || {
        let mut notes = Vec::new();
        let mut reachable = true;
        if let Collect::Lost { wait } = how {
            let (note, ok) = wait_remote_end(&ssh, &h, &run_dir, wait, &quit);
            notes.push(note);
            reachable = ok;
        }
        if reachable && how != Collect::Finished {
            let note = stop_remote(&ssh, &h, &run_dir, &quit);
            if note != "its run had ended" || how == Collect::Stop {
                notes.push(note);
            }
        }
        let copied = if reachable {
            copy_back(&ssh, &h, &run_dir, &dest).map_err(|e| format!("{e:#}"))
        } else {
            Err("its results there were not copied back".into())
        };
        if how != Collect::Finished && copied.is_ok() {
            notes.push(if dest.join("result.json").exists() {
                "its result was copied back".into()
            } else {
                "its folder was copied back (it holds no result)".into()
            });
        }
        let note = (!notes.is_empty()).then(|| notes.join("; "));
        let _ = tx.send(Msg::Collected(idx, note, copied.err()));
    });
}

/// Makes `out` ready for this run's files. A folder without our files is used as it is. One
/// that holds an unfinished fleet run (its fleet.json says `partial`: interrupted, or a host
/// failed) is the same command run again, the hosts resuming their preparation: that run's files
/// (fleet.json, fleet.html, the host folders) move to `out/earlier/<its run id>/`, so nothing
/// is replaced; returns that folder. A finished run, or host folders without a fleet.json of
/// ours, are refused.
fn set_aside_unfinished(out: &Path, hosts: &[Host]) -> anyhow::Result<Option<PathBuf>> {
    let fleet = out.join("fleet.json");
    let ours: Vec<PathBuf> = ["fleet.json", "fleet.html"]
        .iter()
        .map(|n| out.join(n))
        .chain(hosts.iter().map(|h| out.join(&h.name)))
        .filter(|p| p.exists())
        .collect();
    if ours.is_empty() {
        return Ok(None);
    }
    let refuse = |why: &str| {
        usage(format!(
            "--out {}: {why}; choose a new or empty folder",
            out.display()
        ))
    };
    let earlier: Option<serde_json::Value> = fs_err::read_to_string(&fleet)
        .ok()
        .and_then(|t| serde_json::from_str(&t).ok())
        .filter(|v: &serde_json::Value| v["schema"] == "mbxstress-fleet/1");
    let Some(earlier) = earlier else {
        let first = ours.first().map_or_else(String::new, |p| {
            p.file_name()
                .map_or_else(String::new, |n| n.to_string_lossy().into_owned())
        });
        return Err(refuse(&format!(
            "{first} exists already and there is no fleet.json of an unfinished fleet run to resume"
        )));
    };
    if earlier["partial"] != true {
        return Err(refuse(
            "it holds a finished fleet run (fleet.json); its results are kept",
        ));
    }
    let id = earlier["run_id"].as_str().unwrap_or("");
    if id.is_empty()
        || id.starts_with('.')
        || !id
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '.' | '-' | '_'))
    {
        return Err(refuse("its fleet.json has no valid run_id"));
    }
    let dest = out.join("earlier").join(id);
    if dest.exists() {
        return Err(refuse(&format!("{} exists already", dest.display())));
    }
    fs_err::create_dir_all(&dest).context("making the folder for the earlier run's results")?;
    for p in &ours {
        if let Some(name) = p.file_name() {
            fs_err::rename(p, dest.join(name)).context("moving the earlier run's results aside")?;
        }
    }
    Ok(Some(dest))
}

fn jsonl(v: serde_json::Value) {
    let _ = outln!("{v}");
}

/// `mbxstress fleet run`.
pub fn run(args: FleetRunArgs) -> anyhow::Result<ExitCode> {
    let r = &args.run;
    if !r.paths.db_path.is_empty() || !r.paths.log_path.is_empty() {
        return Err(usage(
            "fleet run: --db-path and --log-path differ per host: set db_path and log_path for each [[host]] in the --hosts file",
        ));
    }
    if r.jetstress.jetstress_config.is_some() {
        return Err(usage(
            "fleet run: --jetstress-config is not passed to hosts; use --config or --profile (copied to each host)",
        ));
    }
    if r.start_gate.is_some() {
        return Err(usage(
            "--start-gate is set by fleet run itself for every host; leave it out",
        ));
    }
    let kind = match r.test {
        Some(RunTest::Suite) => {
            return Err(usage(
                "fleet run runs one test type with a synchronized measured phase: --test performance, stress or soft-recovery (run the suite's tests one by one)",
            ))
        }
        Some(RunTest::Kind(k)) => k,
        None => mbx_config::TestKind::Performance,
    };
    if !(0.1..=600.0).contains(&args.start_margin.as_secs_f64()) {
        return Err(usage("--start-margin must be within 0.1s..=10m"));
    }
    // The run flags must make sense before any host is touched.
    let cfg = super::run::resolve_for(r, kind)?;
    let silence = host_timeout(args.host_timeout, cfg.sample_interval_s)?;
    let hosts = load_hosts(&args.hosts)?;
    // The binary --push copies, found and verified before any host or --out is touched.
    let push = if args.push || args.push_binary.is_some() {
        Some(find_push_binary(args.push_binary.as_deref())?)
    } else {
        None
    };
    let out = super::run::results_dir(r.out.as_deref())?;
    fs_err::create_dir_all(&out).context("creating the results folder")?;
    let human = r.progress == "human";
    if let Some(moved) = set_aside_unfinished(&out, &hosts)? {
        if human {
            errln!(
                "--out {}: the earlier, unfinished fleet run's results were moved to {}",
                out.display(),
                moved.display()
            );
        }
    }
    let json_out = r.progress == "jsonl";
    let ssh = Ssh {
        config: args.ssh_config.clone(),
    };
    let run_id = format!(
        "fleet-{}-{}",
        mbx_engine::rfc3339_now().replace(':', ""),
        std::process::id()
    );
    let argv: Vec<String> = std::env::args_os()
        .map(|a| {
            a.into_string()
                .map_err(|a| usage(format!("a flag is not valid UTF-8: {a:?}")))
        })
        .collect::<anyhow::Result<_>>()?;
    let mut uploads: Vec<(PathBuf, String)> = Vec::new();
    if let Some(c) = &r.config {
        uploads.push((c.clone(), "config".into()));
    }
    if let Some(p) = &r.profile {
        uploads.push((p.clone(), "profile".into()));
    }
    // Ctrl-C, SIGTERM: the first stops every host cleanly, the second stops waiting for them.
    let runs_started = Arc::new(AtomicBool::new(false));
    let presses = crate::interrupt::install_counting(Arc::clone(&runs_started));
    let cancel = || presses.load(Ordering::SeqCst) >= 1;

    // 1. Checks, at most --fanout hosts at once.
    if human {
        errln!(
            "Checking {} host(s) ({} at once): reachable, version, clock, doctor ...",
            hosts.len(),
            args.fanout
                .min(u32::try_from(hosts.len()).unwrap_or(u32::MAX))
        );
    }
    let fanout = usize::try_from(args.fanout).unwrap_or(1);
    let checks: Vec<anyhow::Result<Checked>> = bounded_map(&hosts, fanout, |h| {
        let run_dir = remote_run_dir(&h.work_dir, &run_id, &h.name);
        let mut up = uploads.clone();
        if let Some(p) = &h.entry.profile {
            up.push((p.clone(), "host-profile".into()));
        }
        let flags = forwarded_flags(&argv, &run_dir);
        check_host(&ssh, h, push.as_ref(), &run_dir, &up, &flags)
    })
    .into_iter()
    .map(|c| c.unwrap_or_else(|| Err(anyhow!("the check thread panicked"))))
    .collect();
    let mut lives: Vec<Live> = Vec::new();
    let mut usage_error = false;
    for (h, c) in hosts.iter().zip(checks) {
        let dir = out.join(&h.name);
        fs_err::create_dir_all(&dir)?;
        let (state, checked) = match c {
            Ok(c) => {
                if human {
                    errln!(
                        "  {:<16} ok: clock offset {:+.1} ms (round trip {:.1} ms), doctor {:.1} s{}",
                        h.name,
                        c.offset_s * 1e3,
                        c.rtt_s * 1e3,
                        c.doctor_s,
                        match (c.pushed, c.push_reused) {
                            (true, false) => ", binary pushed and verified",
                            (true, true) => ", pushed binary already there (verified)",
                            _ => "",
                        }
                    );
                }
                // A finding never stops the run (only a capacity failure did, above).
                for f in c.doctor.iter().flat_map(|d| &d.checks) {
                    if matches!(f.status, DoctorStatus::Warn | DoctorStatus::Fail) {
                        errln!(
                            "host {}: doctor: {} {} {}: {}",
                            h.name,
                            f.status.name(),
                            f.name,
                            f.subject,
                            f.fact
                        );
                    }
                }
                (State::Checking, c)
            }
            Err(e) => {
                if e.chain().any(|c| c.is::<crate::exit::UsageError>()) {
                    usage_error = true;
                }
                errln!("  {:<16} FAILED: {e:#}", h.name);
                (State::Failed(format!("{e:#}")), Checked::default())
            }
        };
        lives.push(Live {
            host: h.clone(),
            checked,
            state,
            stdin: None,
            ready: false,
            phase: String::new(),
            iops: 0.0,
            target: 0.0,
            read_ms: 0.0,
            eta_s: None,
            result_seen: false,
            remote_exit: None,
            started: false,
            stderr_path: dir.join("ssh-stderr.log"),
            last_seen: Instant::now(),
            heard: false,
            ssh_child: None,
            collected: false,
        });
    }
    // A host that fails its checks is a setup to fix: nothing runs anywhere.
    let failed = lives
        .iter()
        .filter(|l| matches!(l.state, State::Failed(_)))
        .count();
    // Nothing started: the host folders made above are empty; removed, so the same command can
    // be run again into the same --out once the setup is fixed.
    let nothing_started = |lives: &[Live]| {
        for l in lives {
            let _ = std::fs::remove_dir(out.join(&l.host.name));
        }
    };
    if failed > 0 {
        nothing_started(&lives);
        let msg = format!(
            "fleet run: {failed} of {} host(s) failed the checks (see above); nothing was started",
            lives.len()
        );
        return Err(if usage_error {
            usage(msg)
        } else {
            anyhow!(msg)
        });
    }

    if cancel() {
        nothing_started(&lives);
        errln!("interrupted during the checks: nothing was started");
        return Ok(ExitCode::from(crate::interrupt::INTERRUPTED));
    }

    runs_started.store(true, Ordering::SeqCst);
    // 2. The runs. Each host's results are collected (copied back) as soon as its run ends,
    // and fleet.json is kept up to date from here on (partial until the end), so whatever stops
    // the coordinator, the finished hosts' results and a fleet.json are there.
    let (tx, rx) = mpsc::channel();
    for (i, l) in lives.iter_mut().enumerate() {
        if l.state != State::Checking {
            continue;
        }
        let run_dir = remote_run_dir(&l.host.work_dir, &run_id, &l.host.name);
        let flags = forwarded_flags(&argv, &run_dir);
        let cmd = remote_command(&l.host, &l.checked.bin, &run_dir, &flags);
        l.last_seen = Instant::now();
        l.state = match spawn_run(&ssh, i, l, &cmd, tx.clone()) {
            Ok(()) => {
                l.started = true;
                State::Running
            }
            Err(e) => State::Failed(format!("{e:#}")),
        };
    }
    if let Err(e) = write_fleet(&out, &run_id, &lives, None, true, false) {
        errln!("warning: writing fleet.json: {e:#}");
    }
    // Set at the second interrupt: stop waiting for hosts.
    let quit = Arc::new(AtomicBool::new(false));
    let mut start_at: Option<f64> = None;
    let mut stopping = false;
    let mut last_draw = Instant::now();
    let mut drawn = 0usize;
    loop {
        if lives.iter().all(|l| !l.started || l.collected) {
            break;
        }
        if !stopping
            && (cancel()
                || args.abort_on_host_failure
                    && lives.iter().any(|l| matches!(l.state, State::Failed(_))))
        {
            stopping = true;
            for l in &mut lives {
                if let Some(s) = l.stdin.as_mut() {
                    let _ = s.write_all(b"stop\n").and_then(|_| s.flush());
                }
            }
            if human {
                errln!("stopping every host's run (partial results are kept) ...");
            }
        }
        if presses.load(Ordering::SeqCst) >= 2 && !quit.swap(true, Ordering::SeqCst) {
            for l in lives.iter_mut().filter(|l| l.state == State::Running) {
                give_up(
                    l,
                    format!(
                        "not waited for: the coordinator was interrupted a second time (last phase {:?})",
                        l.phase
                    ),
                );
            }
        }
        // The watchdog: a run sends an event a second; one silent for longer than the
        // host timeout (its setup allowance before its first) has stopped answering.
        for l in lives.iter_mut().filter(|l| l.state == State::Running) {
            let allowance = if l.heard {
                silence
            } else {
                silence.max(SETUP_SILENCE)
            };
            let quiet = l.last_seen.elapsed();
            if quiet >= allowance {
                give_up(
                    l,
                    format!(
                        "the watchdog gave up on it: no event for {:.0} s (--host-timeout {:.0}s{}) in phase {:?}",
                        quiet.as_secs_f64(),
                        silence.as_secs_f64(),
                        if l.heard { "" } else { ", at least 10 min during the setup" },
                        l.phase
                    ),
                );
            }
        }
        // Every host still running is ready: one start time for all, in each host's clock.
        let running = lives.iter().filter(|l| l.state == State::Running).count();
        if start_at.is_none()
            && !stopping
            && running > 0
            && lives
                .iter()
                .filter(|l| l.state == State::Running)
                .all(|l| l.ready)
        {
            let t = unix_now() + args.start_margin.as_secs_f64();
            start_at = Some(t);
            for l in &mut lives {
                if let Some(s) = l.stdin.as_mut() {
                    let line = format!("start {:.6}\n", t + l.checked.offset_s);
                    let _ = s.write_all(line.as_bytes()).and_then(|_| s.flush());
                }
            }
            if json_out {
                jsonl(serde_json::json!({"event": "fleet_start", "start_at_unix_s": t}));
            } else if human {
                clear(&mut drawn);
                errln!(
                    "All {} host(s) ready: measuring starts in {:.1} s",
                    running,
                    args.start_margin.as_secs_f64()
                );
            }
        }
        match rx.recv_timeout(Duration::from_millis(200)) {
            Ok(Msg::Line(i, line)) => {
                if let Some(l) = lives.get_mut(i) {
                    l.last_seen = Instant::now();
                    on_line(l, &line, json_out);
                }
            }
            Ok(Msg::Exit(i, code)) => {
                if let Some(l) = lives.get_mut(i) {
                    l.stdin = None;
                    let how = if matches!(l.state, State::Failed(_)) {
                        // Given up (the watchdog, a second interrupt): its run is stopped.
                        Collect::Stop
                    } else {
                        l.state = ended_state(l, code);
                        if l.remote_exit.is_none() && matches!(code, Some(255) | None) {
                            // The connection ended before the run reported its end: the remote
                            // run may still be going (it stops by itself once its input ends)
                            // and write its result later: wait for it.
                            Collect::Lost { wait: silence }
                        } else {
                            Collect::Finished
                        }
                    };
                    if json_out {
                        jsonl(
                            serde_json::json!({"event": "host_end", "host": l.host.name, "state": state_name(&l.state), "message": state_message(&l.state)}),
                        );
                    } else if human {
                        clear(&mut drawn);
                        errln!("{}: {}", l.host.name, describe(&l.state));
                    }
                    let job = CollectJob {
                        idx: i,
                        host: l.host.clone(),
                        run_dir: remote_run_dir(&l.host.work_dir, &run_id, &l.host.name),
                        dest: out.join(&l.host.name),
                        how,
                    };
                    spawn_collect(&ssh, job, Arc::clone(&quit), tx.clone());
                }
            }
            Ok(Msg::Collected(i, note, err)) => {
                if let Some(l) = lives.get_mut(i) {
                    l.collected = true;
                    if let Some(n) = &note {
                        if let State::Failed(m) = &mut l.state {
                            m.push_str("; ");
                            m.push_str(n);
                        }
                    }
                    if let Some(e) = err {
                        errln!("{}: {e}", l.host.name);
                        match &mut l.state {
                            State::Failed(m) => {
                                if !m.contains(&e) {
                                    m.push_str("; ");
                                    m.push_str(&e);
                                }
                            }
                            s => *s = State::Failed(e),
                        }
                    }
                    if human && note.is_some() {
                        clear(&mut drawn);
                        errln!("{}: {}", l.host.name, describe(&l.state));
                    }
                }
                if let Err(e) = write_fleet(&out, &run_id, &lives, start_at, true, cancel()) {
                    errln!("warning: writing fleet.json: {e:#}");
                }
            }
            Err(mpsc::RecvTimeoutError::Timeout) => {}
            Err(mpsc::RecvTimeoutError::Disconnected) => break,
        }
        // On a terminal redrawn every second; in a log every 15 s.
        let every = if std::io::IsTerminal::is_terminal(&std::io::stderr()) {
            1
        } else {
            15
        };
        if human && last_draw.elapsed() >= Duration::from_secs(every) {
            last_draw = Instant::now();
            draw(&lives, &mut drawn);
        }
    }
    drop(tx);
    if human {
        clear(&mut drawn);
    }

    // 3. The aggregate.
    let interrupted = cancel();
    let partial = interrupted
        || lives.iter().any(|l| {
            !matches!(l.state, State::Exited(0 | 1))
                || !out.join(&l.host.name).join("result.json").exists()
        });
    let summary = write_fleet(&out, &run_id, &lives, start_at, partial, interrupted)?;
    if json_out {
        jsonl(
            serde_json::json!({"event": "fleet_result", "path": out.join("fleet.json"), "partial": partial, "skew_ms": summary.skew_ms}),
        );
    } else {
        let mut text = String::new();
        text.push_str(&super::esrp::text(&summary.esrp));
        for h in &summary.hosts {
            text.push_str(&format!(
                "{:<16} {}{}{}\n",
                h.name,
                h.state,
                h.message
                    .as_deref()
                    .map(|m| format!(": {m}"))
                    .unwrap_or_default(),
                h.excluded
                    .as_deref()
                    .map(|m| format!(" ({m})"))
                    .unwrap_or_default()
            ));
        }
        if let Some(s) = summary.skew_ms {
            text.push_str(&format!(
                "start skew across hosts: {s:.1} ms (measured windows, clock offsets corrected)\n"
            ));
        }
        text.push_str(&format!(
            "{}Fleet report: {}\n",
            if partial {
                "PARTIAL (a host failed or the run was interrupted). "
            } else {
                ""
            },
            out.join("fleet.html").display()
        ));
        outln!("{text}").context("writing the summary to stdout")?;
    }
    // As documented: interrupted 130; partial (a host failed, was stopped or interrupted on its
    // side, or has no result) 3; every host passed 0; else a verdict failed, 1.
    let code = if interrupted {
        ExitCode::from(crate::interrupt::INTERRUPTED)
    } else if partial {
        ExitCode::from(crate::exit::RUNTIME)
    } else if lives.iter().all(|l| l.state == State::Exited(0)) {
        ExitCode::SUCCESS
    } else {
        ExitCode::from(1)
    };
    Ok(code)
}

/// The watchdog's bound: `--host-timeout`, else 10 sample intervals and at least 60 s.
fn host_timeout(flag: Option<Duration>, sample_interval_s: f64) -> anyhow::Result<Duration> {
    match flag {
        Some(d) if d < Duration::from_secs(5) => Err(usage(
            "--host-timeout must be at least 5s (a run sends an event a second)",
        )),
        Some(d) => Ok(d),
        None => Ok(Duration::from_secs_f64(
            (sample_interval_s * 10.0).clamp(60.0, 86_400.0),
        )),
    }
}

/// Gives up on a running host: marks it failed (`why`) and ends its ssh; its remote run is
/// then stopped over a fresh connection and its folder copied back ([`Collect::Stop`]).
fn give_up(l: &mut Live, why: String) {
    l.state = State::Failed(why);
    l.stdin = None;
    if let Some(c) = &l.ssh_child {
        c.kill();
    }
}

fn on_line(l: &mut Live, line: &str, json_out: bool) {
    let Ok(mut v) = serde_json::from_str::<serde_json::Value>(line) else {
        return;
    };
    match v["event"].as_str() {
        Some("ready") => l.ready = true,
        Some("phase") => l.phase = v["phase"].as_str().unwrap_or("").to_string(),
        Some("progress") => {
            // The engine runs: from here on an event a second, the watchdog's full bound.
            l.heard = true;
            let p = &v["progress"];
            l.phase = p["phase"].as_str().unwrap_or("").to_string();
            l.iops = p["iops"].as_f64().unwrap_or(0.0);
            l.target = p["target_iops"].as_f64().unwrap_or(0.0);
            l.read_ms = p["db_read_avg_ms"].as_f64().unwrap_or(0.0);
            l.eta_s = p["phase_total_s"]
                .as_f64()
                .zip(p["phase_elapsed_s"].as_f64())
                .map(|(t, e)| (t - e).max(0.0));
        }
        Some("result") => l.result_seen = true,
        // The wrapper's, not the run's: kept out of the --progress jsonl stream.
        Some(REMOTE_EXIT) => {
            l.remote_exit = v["status"].as_i64();
            return;
        }
        _ => {}
    }
    if json_out {
        if let Some(o) = v.as_object_mut() {
            o.insert("host".into(), l.host.name.clone().into());
        }
        jsonl(v);
    }
}

fn clear(drawn: &mut usize) {
    if *drawn > 0 {
        errp!("\x1b[{}A\x1b[J", *drawn);
        *drawn = 0;
    }
}

/// One line per host and the total (on a terminal redrawn in place, else every line printed).
fn draw(lives: &[Live], drawn: &mut usize) {
    use std::io::IsTerminal;
    let tty = std::io::stderr().is_terminal();
    if tty {
        clear(drawn);
    }
    let mut lines = Vec::new();
    let (mut iops, mut target, mut read, mut n) = (0.0, 0.0, 0.0, 0usize);
    for l in lives {
        let what = match &l.state {
            State::Running => format!(
                "[{}{}] IOPS {:.0} (target {:.0}) | DB read {:.2} ms",
                if l.phase.is_empty() {
                    "starting"
                } else {
                    &l.phase
                },
                l.eta_s
                    .map(|e| format!(", ETA {}", super::run::fmt_secs(e)))
                    .unwrap_or_default(),
                l.iops,
                l.target,
                l.read_ms
            ),
            s => describe(s),
        };
        if l.state == State::Running {
            iops += l.iops;
            target += l.target;
            read += l.read_ms;
            n += 1;
        }
        lines.push(format!("{:<16} {what}", l.host.name));
    }
    lines.push(format!(
        "{:<16} IOPS {iops:.0} (target {target:.0}) | DB read {:.2} ms (mean of hosts)",
        "total",
        if n > 0 { read / n as f64 } else { 0.0 }
    ));
    for line in &lines {
        errln!("{line}");
    }
    if tty {
        *drawn = lines.len();
    }
}

fn state_name(s: &State) -> &'static str {
    match s {
        State::Checking => "not started",
        State::Running => "running",
        State::Exited(0) => "passed",
        State::Exited(1) => "failed_verdict",
        State::Exited(130) => "interrupted",
        State::Exited(_) => "stopped",
        State::Failed(_) => "failed",
    }
}

fn state_message(s: &State) -> Option<String> {
    match s {
        State::Failed(m) => Some(m.clone()),
        State::Exited(c) if *c > 128 && *c != 130 => Some(format!(
            "the remote run was killed by {} after writing its result",
            signal_text(i64::from(*c))
        )),
        State::Exited(c) if !matches!(c, 0 | 1 | 130) => {
            Some(format!("the remote run exited with {c}"))
        }
        _ => None,
    }
}

fn describe(s: &State) -> String {
    match state_message(s) {
        Some(m) => format!("{}: {m}", state_name(s)),
        None => state_name(s).to_string(),
    }
}

/// One host in fleet.json.
#[derive(Debug, serde::Serialize)]
struct HostSummary {
    name: String,
    ssh: String,
    state: &'static str,
    message: Option<String>,
    clock_offset_ms: f64,
    clock_rtt_ms: f64,
    pushed: bool,
    /// The pushed build was on the host already (same SHA-256): nothing was uploaded.
    push_reused: bool,
    last_phase: String,
    /// The measured phase's start in the coordinator's clock (offset corrected).
    collection_start_unix_s: Option<f64>,
    /// Its distance from the start time sent, ms.
    start_error_ms: Option<f64>,
    result: Option<String>,
    /// Its result is one of the servers of `esrp` (it reached the synchronized start and
    /// measured).
    aggregated: bool,
    /// Why it is not, when the run started there.
    excluded: Option<String>,
    /// `mbxstress doctor --json` on the host before the run (schema mbxstress.doctor/1).
    doctor: Option<DoctorReport>,
    /// How long that doctor took, seconds (ssh round trip included).
    doctor_elapsed_s: Option<f64>,
}

/// fleet.json.
#[derive(Debug, serde::Serialize)]
struct FleetSummary {
    schema: &'static str,
    run_id: String,
    partial: bool,
    interrupted: bool,
    start_at_unix_s: Option<f64>,
    /// Latest minus earliest measured-phase start across hosts with a result, ms.
    skew_ms: Option<f64>,
    hosts: Vec<HostSummary>,
    esrp: mbx_report::EsrpSummary,
}

/// Why a host's result is left out of the aggregate, if it is: it must have become ready (so
/// it got the synchronized start) and measured (`collection_start_unix_s` in its result).
fn aggregate_exclusion(ready: bool, measured: bool) -> Option<String> {
    if !ready {
        Some("not in the aggregate: the host never became ready (its run stopped before the synchronized start)".into())
    } else if !measured {
        Some("not in the aggregate: its run stopped before the measured phase".into())
    } else {
        None
    }
}

fn write_fleet(
    out: &Path,
    run_id: &str,
    lives: &[Live],
    start_at: Option<f64>,
    partial: bool,
    interrupted: bool,
) -> anyhow::Result<FleetSummary> {
    let mut inputs = Vec::new();
    let mut hosts = Vec::new();
    for l in lives {
        let path = out.join(&l.host.name).join("result.json");
        let mut start = None;
        let mut rel = None;
        let mut excluded = None;
        if path.exists() {
            start = fs_err::read_to_string(&path)
                .ok()
                .and_then(|t| serde_json::from_str::<serde_json::Value>(&t).ok())
                .and_then(|v| v["test"]["collection_start_unix_s"].as_f64())
                .map(|s| s - l.checked.offset_s);
            match mbx_report::load(&path) {
                Ok(mut imported) => {
                    rel = Some(format!("{}/result.json", l.host.name));
                    // Only a run that reached the synchronized start and measured is a server of
                    // the aggregate; any other result is its own, kept, but not summed.
                    excluded = aggregate_exclusion(l.ready, start.is_some());
                    if excluded.is_none() {
                        imported.machine = Some(l.host.name.clone());
                        inputs.push(imported);
                    }
                }
                Err(e) => {
                    errln!("warning: {}: {e}", path.display());
                    excluded = Some(format!(
                        "not in the aggregate: its result.json does not load: {e}"
                    ));
                }
            }
        } else if l.started {
            excluded = Some("not in the aggregate: no result came back".into());
        }
        hosts.push(HostSummary {
            name: l.host.name.clone(),
            ssh: l.host.entry.ssh.clone(),
            state: state_name(&l.state),
            message: state_message(&l.state),
            clock_offset_ms: l.checked.offset_s * 1e3,
            clock_rtt_ms: l.checked.rtt_s * 1e3,
            pushed: l.checked.pushed,
            push_reused: l.checked.push_reused,
            last_phase: l.phase.clone(),
            collection_start_unix_s: start,
            start_error_ms: start.zip(start_at).map(|(s, t)| (s - t) * 1e3),
            result: rel,
            aggregated: excluded.is_none() && path.exists(),
            excluded,
            doctor: l.checked.doctor.clone(),
            doctor_elapsed_s: l.checked.doctor.as_ref().map(|_| l.checked.doctor_s),
        });
    }
    let starts: Vec<f64> = hosts
        .iter()
        .filter_map(|h| h.collection_start_unix_s)
        .collect();
    let skew_ms = if starts.len() >= 2 {
        let max = starts.iter().copied().fold(f64::MIN, f64::max);
        let min = starts.iter().copied().fold(f64::MAX, f64::min);
        Some((max - min) * 1e3)
    } else {
        None
    };
    let summary = FleetSummary {
        schema: "mbxstress-fleet/1",
        run_id: run_id.to_string(),
        partial,
        interrupted,
        start_at_unix_s: start_at,
        skew_ms,
        hosts,
        esrp: mbx_report::summarize(&inputs),
    };
    let json = serde_json::to_string_pretty(&summary)?;
    fs_err::write(out.join("fleet.json"), json + "\n")?;
    fs_err::write(out.join("fleet.html"), html(&summary))?;
    Ok(summary)
}

fn esc(s: &str) -> String {
    s.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
        .replace('"', "&quot;")
}

/// fleet.html: the aggregate first, then a section per host with a link to its report.
fn html(s: &FleetSummary) -> String {
    let mut h = String::from(
        "<!doctype html><html><head><meta charset=\"utf-8\"><title>mbxstress fleet run</title>\
         <style>body{font-family:sans-serif;margin:2em}table{border-collapse:collapse}\
         td,th{border:1px solid #999;padding:4px 8px;text-align:left;vertical-align:top}th{background:#eee}\
         .n{text-align:right;font-variant-numeric:tabular-nums}.bad{color:#b00;font-weight:bold}</style></head><body>",
    );
    h.push_str(&format!("<h1>Fleet run {}</h1>", esc(&s.run_id)));
    if s.partial {
        h.push_str("<p class=\"bad\">Partial: a host failed or the run was interrupted; the aggregate covers the results that exist.</p>");
    }
    if let Some(k) = s.skew_ms {
        h.push_str(&format!(
            "<p>Measured phases started within {k:.1} ms of each other (clock offsets corrected).</p>"
        ));
    }
    h.push_str("<h2>Aggregate (ESRP: sums of sums, means of means)</h2><table><tr><th>server</th><th class=\"n\">transfers/s</th><th class=\"n\">reads/s</th><th class=\"n\">writes/s</th><th class=\"n\">read ms</th><th class=\"n\">write ms</th><th class=\"n\">log writes/s</th><th class=\"n\">log write ms</th><th>flags</th></tr>");
    for f in s.esrp.aggregate.iter().chain(s.esrp.servers.iter()) {
        h.push_str(&format!(
            "<tr><td>{}</td><td class=\"n\">{:.2}</td><td class=\"n\">{:.2}</td><td class=\"n\">{:.2}</td><td class=\"n\">{:.2}</td><td class=\"n\">{:.2}</td><td class=\"n\">{:.2}</td><td class=\"n\">{:.4}</td><td>{}</td></tr>",
            esc(&f.machine),
            f.db_transfers_per_s,
            f.db_reads_per_s,
            f.db_writes_per_s,
            f.db_read_avg_latency_ms,
            f.db_write_avg_latency_ms,
            f.log_writes_per_s,
            f.log_write_avg_latency_ms,
            esc(&f.flags.join(", "))
        ));
    }
    h.push_str("</table>");
    for w in &s.esrp.warnings {
        h.push_str(&format!(
            "<p>warning: {}: {}</p>",
            esc(&w.source),
            esc(&w.message)
        ));
    }
    for host in &s.hosts {
        h.push_str(&format!(
            "<h2 id=\"{n}\">{n}</h2><p>ssh {ssh}: <span class=\"{cls}\">{st}</span>{msg}</p>\
             <p>clock offset {off:+.1} ms (round trip {rtt:.1} ms){start}</p>{excl}",
            n = esc(&host.name),
            ssh = esc(&host.ssh),
            cls = if host.state == "failed" { "bad" } else { "" },
            st = host.state,
            msg = host
                .message
                .as_deref()
                .map(|m| format!(": {}", esc(m)))
                .unwrap_or_default(),
            excl = host
                .excluded
                .as_deref()
                .map(|m| format!("<p class=\"bad\">{}</p>", esc(m)))
                .unwrap_or_default(),
            off = host.clock_offset_ms,
            rtt = host.clock_rtt_ms,
            start = host
                .start_error_ms
                .map(|e| format!("; measured from {e:+.1} ms of the agreed start"))
                .unwrap_or_default(),
        ));
        if let Some(d) = &host.doctor {
            h.push_str("<h3>Preflight checks (mbxstress doctor)</h3><table><tr><th>status</th><th>check</th><th>subject</th><th>fact</th><th>fix</th></tr>");
            for c in &d.checks {
                h.push_str(&format!(
                    "<tr><td class=\"{cls}\">{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td></tr>",
                    c.status.name(),
                    esc(&c.name),
                    esc(&c.subject),
                    esc(&c.fact),
                    esc(&c.fix),
                    cls = if matches!(c.status, DoctorStatus::Warn | DoctorStatus::Fail) {
                        "bad"
                    } else {
                        ""
                    },
                ));
            }
            h.push_str("</table>");
        }
        if host.result.is_some() {
            h.push_str(&format!(
                "<p><a href=\"{n}/report.html\">report</a> · <a href=\"{n}/result.json\">result.json</a> · <a href=\"{n}/test.log\">test.log</a></p>",
                n = esc(&host.name)
            ));
        } else {
            h.push_str("<p>No result (last phase: ");
            h.push_str(&esc(&host.last_phase));
            h.push_str(")</p>");
        }
    }
    h.push_str("</body></html>\n");
    h
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn own_flags_are_dropped_and_files_point_at_the_copies() {
        let argv: Vec<String> = [
            "mbxstress",
            "fleet",
            "run",
            "--hosts",
            "h.toml",
            "--push",
            "--threads",
            "4",
            "--out=x",
            "--config",
            "c.toml",
            "--progress",
            "jsonl",
            "--duration",
            "3s",
            "--profile=p.toml",
            "--ssh-config",
            "cfg",
        ]
        .iter()
        .map(|s| s.to_string())
        .collect();
        assert_eq!(
            forwarded_flags(&argv, "D"),
            [
                "--threads",
                "4",
                "--config",
                "D/config",
                "--duration",
                "3s",
                "--profile",
                "D/profile"
            ]
        );
    }

    #[test]
    fn an_unfinished_run_in_out_is_moved_aside_and_a_finished_one_refused() {
        let dir = tempfile::tempdir().expect("tempdir");
        let hosts_file = dir.path().join("h.toml");
        fs_err::write(
            &hosts_file,
            "[[host]]\nssh = \"h1\"\ndb_path = \"/d\"\nlog_path = \"/l\"\n",
        )
        .expect("hosts");
        let hosts = load_hosts(&hosts_file).expect("hosts");
        let out = dir.path().join("out");
        fs_err::create_dir_all(out.join("h1")).expect("mkdir");
        fs_err::write(out.join("h1/result.json"), "{}").expect("write");
        let fleet = |partial: bool| {
            fs_err::write(
                out.join("fleet.json"),
                format!(
                    r#"{{"schema":"mbxstress-fleet/1","run_id":"fleet-1","partial":{partial}}}"#
                ),
            )
            .expect("write")
        };
        let err = |r: anyhow::Result<Option<PathBuf>>| format!("{:#}", r.expect_err("refused"));
        // Host folders without a fleet.json of ours: nothing to resume, refused.
        assert!(err(set_aside_unfinished(&out, &hosts)).contains("h1 exists already"));
        // A finished run is kept: refused.
        fleet(false);
        assert!(err(set_aside_unfinished(&out, &hosts)).contains("finished fleet run"));
        // An unfinished one moves to earlier/<run id>/, nothing replaced.
        fleet(true);
        let moved = set_aside_unfinished(&out, &hosts).expect("moved");
        assert_eq!(moved, Some(out.join("earlier/fleet-1")));
        assert!(out.join("earlier/fleet-1/h1/result.json").exists());
        assert!(out.join("earlier/fleet-1/fleet.json").exists());
        assert!(!out.join("h1").exists() && !out.join("fleet.json").exists());
        assert_eq!(set_aside_unfinished(&out, &hosts).expect("empty"), None);
        // The same run id twice: the earlier copy is never replaced.
        fs_err::create_dir_all(out.join("h1")).expect("mkdir");
        fleet(true);
        assert!(err(set_aside_unfinished(&out, &hosts)).contains("exists already"));
        assert!(out.join("h1").exists());
    }

    /// Issue 25 case 1: a result in a host's folder counts in the aggregate only if the host
    /// became ready and measured; any other is kept but named as left out, with the reason.
    #[test]
    fn only_hosts_that_became_ready_and_measured_are_aggregated() {
        let dir = tempfile::tempdir().expect("tempdir");
        let fixture = include_str!("../../../mbx-report/tests/fixtures/mbxstress-result.json");
        let mut v: serde_json::Value = serde_json::from_str(fixture).expect("fixture");
        v["test"]["collection_start_unix_s"] = 1.0e9.into();
        let measured = serde_json::to_string(&v).expect("json");
        let live = |name: &str, ready: bool, result: Option<&str>| {
            let folder = dir.path().join(name);
            fs_err::create_dir_all(&folder).expect("mkdir");
            if let Some(r) = result {
                fs_err::write(folder.join("result.json"), r).expect("write");
            }
            Live {
                host: Host {
                    name: name.into(),
                    entry: HostEntry {
                        ssh: name.into(),
                        name: None,
                        db_path: Paths::One("/d".into()),
                        log_path: Paths::One("/l".into()),
                        profile: None,
                        mbxstress: None,
                        work_dir: None,
                    },
                    work_dir: ".mbxstress".into(),
                },
                checked: Checked::default(),
                state: State::Exited(0),
                stdin: None,
                ready,
                phase: String::new(),
                iops: 0.0,
                target: 0.0,
                read_ms: 0.0,
                eta_s: None,
                result_seen: true,
                remote_exit: None,
                started: true,
                stderr_path: folder.join("ssh-stderr.log"),
                last_seen: Instant::now(),
                heard: true,
                ssh_child: None,
                collected: true,
            }
        };
        let lives = [
            live("a", true, Some(&measured)),
            live("b", false, Some(&measured)),
            live("c", true, Some(fixture)),
            live("d", true, None),
        ];
        let s =
            write_fleet(dir.path(), "fleet-1", &lives, Some(1.0e9), true, false).expect("fleet");
        let machines: Vec<&str> = s.esrp.servers.iter().map(|f| f.machine.as_str()).collect();
        assert_eq!(machines, ["a"]);
        let why: Vec<Option<&str>> = s.hosts.iter().map(|h| h.excluded.as_deref()).collect();
        assert_eq!(why[0], None);
        assert!(
            why[1].is_some_and(|w| w.contains("never became ready")),
            "{why:?}"
        );
        assert!(
            why[2].is_some_and(|w| w.contains("before the measured phase")),
            "{why:?}"
        );
        assert!(why[3].is_some_and(|w| w.contains("no result")), "{why:?}");
        assert_eq!(
            s.hosts.iter().map(|h| h.aggregated).collect::<Vec<_>>(),
            [true, false, false, false]
        );
        // fleet.html: text left-aligned (the default), the aggregate's figures right-aligned.
        let page = html(&s);
        assert!(page.contains("text-align:left") && page.contains(".n{text-align:right"));
        assert!(page.contains("<th class=\"n\">transfers/s</th>"), "{page}");
        assert!(page.contains("<tr><td>a</td><td class=\"n\">"), "{page}");
    }

    #[test]
    fn host_names_are_single_portable_components_the_coordinator_does_not_use() {
        for bad in [
            "",
            ".x",
            "a/b",
            "..",
            "fleet.json",
            "FLEET.HTML",
            "Earlier",
            "test.log",
            "con",
            "LPT1.txt",
            "x.",
            &"n".repeat(101),
        ] {
            assert!(bad_name(bad).is_some(), "{bad:?} accepted");
        }
        for good in [
            "mbx1",
            "db-01.example.com",
            "earlier2",
            "console",
            "com0",
            "a_b",
        ] {
            assert_eq!(bad_name(good), None, "{good:?}");
        }
    }

    #[test]
    fn only_a_static_x86_64_elf_is_pushed() {
        let exe = std::env::current_exe().expect("exe");
        let head = mbx_report::input::read_head(&exe, 4096, "test").expect("head");
        // This test binary is linked against the C library like the build it belongs to.
        assert_eq!(is_static_x86_64_elf(&head), cfg!(target_env = "musl"));
        assert!(!is_static_x86_64_elf(b"#!/bin/sh\n"));
        assert!(!is_static_x86_64_elf(&head[..20.min(head.len())]));
        // A header claiming program headers past the end of the file is not an executable.
        let mut fake = head.get(..64).expect("ELF header").to_vec();
        fake[0x38] = 1;
        fake[0x20..0x28].copy_from_slice(&4096u64.to_le_bytes());
        assert!(!is_static_x86_64_elf(&fake));
    }

    #[test]
    fn the_wrapper_reports_the_run_status_and_signals_are_named() {
        assert!(remote_command_tail().contains("\"remote_exit\""));
        assert_eq!(signal_text(137), "signal 9 (SIGKILL)");
        assert_eq!(signal_text(143), "signal 15 (SIGTERM)");
        assert_eq!(signal_text(128 + 40), "signal 40");
    }

    fn remote_command_tail() -> String {
        let h = Host {
            name: "h".into(),
            entry: HostEntry {
                ssh: "h".into(),
                name: None,
                db_path: Paths::One("/d".into()),
                log_path: Paths::One("/l".into()),
                profile: None,
                mbxstress: None,
                work_dir: None,
            },
            work_dir: "w".into(),
        };
        let cmd = remote_command(&h, "mbxstress", "w/fleet/r/h", &[]);
        assert!(cmd.contains("'mbxstress' 'run' "), "{cmd}");
        cmd
    }

    /// The remote wrapper, run by a real shell around a stand-in run: the run reads the
    /// connection's input (the start gate), its own pid (not the shell's) is in the pid file, and
    /// its status (here killed by SIGKILL) is reported on the stream after it.
    #[test]
    #[cfg(unix)]
    fn the_wrapper_gives_the_run_its_input_and_records_its_pid_and_status() {
        use std::io::Write as _;
        use std::os::unix::fs::PermissionsExt;
        let dir = tempfile::tempdir().expect("tempdir");
        let run = dir.path().join("run");
        fs_err::create_dir_all(&run).expect("mkdir");
        let stand_in = dir.path().join("stand-in");
        fs_err::write(
            &stand_in,
            format!(
                "#!/bin/sh\necho $$ > '{}/self.pid'\nread line\necho \"got:$line\"\nkill -9 $$\n",
                run.display()
            ),
        )
        .expect("stand-in");
        fs_err::set_permissions(&stand_in, std::fs::Permissions::from_mode(0o755)).expect("chmod");
        let h = Host {
            name: "h".into(),
            entry: HostEntry {
                ssh: "h".into(),
                name: None,
                db_path: Paths::One("/d".into()),
                log_path: Paths::One("/l".into()),
                profile: None,
                mbxstress: None,
                work_dir: None,
            },
            work_dir: "w".into(),
        };
        let cmd = remote_command(
            &h,
            &stand_in.display().to_string(),
            &run.display().to_string(),
            &[],
        );
        let mut child = std::process::Command::new("sh")
            .args(["-c", &cmd])
            .stdin(std::process::Stdio::piped())
            .stdout(std::process::Stdio::piped())
            .spawn()
            .expect("sh");
        child
            .stdin
            .take()
            .expect("stdin")
            .write_all(b"start\n")
            .expect("write");
        let out = child.wait_with_output().expect("wait");
        let text = String::from_utf8_lossy(&out.stdout);
        assert!(text.contains("got:start"), "{text}");
        assert!(
            text.contains("{\"event\":\"remote_exit\",\"status\":137}"),
            "{text}"
        );
        assert_eq!(out.status.code(), Some(137));
        let pid = |f: &str| {
            fs_err::read_to_string(run.join(f))
                .expect("pid")
                .trim()
                .to_string()
        };
        assert_eq!(pid(PID_FILE), pid("self.pid"));
    }

    #[test]
    fn only_regular_files_inside_the_folder_are_unpacked() {
        let dir = tempfile::tempdir().expect("tempdir");
        let mut b = tar::Builder::new(Vec::new());
        let add = |b: &mut tar::Builder<Vec<u8>>, name: &[u8], kind, data: &[u8], link: &str| {
            let mut h = tar::Header::new_gnu();
            // Names written raw: the builder itself refuses `..` and absolute ones.
            h.as_old_mut().name[..name.len()].copy_from_slice(name);
            h.set_entry_type(kind);
            h.set_size(data.len() as u64);
            h.set_mode(0o644);
            if !link.is_empty() {
                h.set_link_name(link).expect("link name");
            }
            h.set_cksum();
            b.append(&h, data).expect("append");
        };
        add(&mut b, b"./", tar::EntryType::Directory, b"", "");
        add(&mut b, b"./result.json", tar::EntryType::Regular, b"{}", "");
        add(&mut b, b"./sub/", tar::EntryType::Directory, b"", "");
        add(&mut b, b"./sub/a.csv", tar::EntryType::Regular, b"1", "");
        add(
            &mut b,
            b"./test.log",
            tar::EntryType::Symlink,
            b"",
            "/etc/shadow",
        );
        add(&mut b, b"./etc", tar::EntryType::Symlink, b"", "/etc");
        add(&mut b, b"./etc/passwd", tar::EntryType::Regular, b"x", "");
        add(&mut b, b"./hard", tar::EntryType::Link, b"", "result.json");
        add(&mut b, b"./fifo", tar::EntryType::Fifo, b"", "");
        add(&mut b, b"../escape", tar::EntryType::Regular, b"x", "");
        add(&mut b, b"/abs", tar::EntryType::Regular, b"x", "");
        let bytes = b.into_inner().expect("tar");
        let dest = dir.path().join("h1");
        fs_err::create_dir(&dest).expect("mkdir");
        let dropped = extract_regular_files(&bytes[..], &dest).expect("extract");
        let files: Vec<String> = walk(&dest);
        // ./etc/passwd comes after the link ./etc, which was not made: it lands in a plain
        // folder here, never written through the link.
        assert_eq!(
            files,
            ["etc", "etc/passwd", "result.json", "sub", "sub/a.csv"],
            "{dropped:?}"
        );
        assert_eq!(fs_err::read(dest.join("etc/passwd")).expect("file"), b"x");
        assert!(!dir.path().join("escape").exists());
        let text = dropped.join("\n");
        for what in [
            "\"./test.log\" (a symbolic link to /etc/shadow)",
            "\"./etc\" (a symbolic link to /etc)",
            "\"./hard\" (a hard link)",
            "\"./fifo\" (a FIFO)",
            "\"../escape\" (a path outside the folder)",
            "\"/abs\" (a path outside the folder)",
        ] {
            assert!(text.contains(what), "{what} not in {text}");
        }
    }

    /// Every path under `dir`, relative, sorted; fails on a symbolic link.
    fn walk(dir: &Path) -> Vec<String> {
        let mut out = Vec::new();
        let mut todo = vec![dir.to_path_buf()];
        while let Some(d) = todo.pop() {
            for e in std::fs::read_dir(&d).expect("read_dir").flatten() {
                let m = std::fs::symlink_metadata(e.path()).expect("metadata");
                assert!(!m.file_type().is_symlink(), "{}", e.path().display());
                if m.is_dir() {
                    todo.push(e.path());
                }
                let rel = e.path().strip_prefix(dir).expect("inside").to_path_buf();
                out.push(rel.display().to_string());
            }
        }
        out.sort();
        out
    }

    #[test]
    fn words_are_quoted_for_the_remote_shell() {
        assert_eq!(sh("a b"), "'a b'");
        assert_eq!(sh("it's"), "'it'\\''s'");
    }

    #[test]
    fn the_hosts_file_is_strict_and_names_the_host() {
        let dir = tempfile::tempdir().expect("tempdir");
        let p = dir.path().join("h.toml");
        let write = |t: &str| fs_err::write(&p, t).expect("write");
        write("[[host]]\nssh = \"a\"\ndb_path = \"/d\"\nlog_path = [\"/l\"]\n[[host]]\nssh = \"u@b\"\ndb_path = \"/d\"\nlog_path = \"/l\"\n");
        let h = load_hosts(&p).expect("valid");
        assert_eq!((h[0].name.as_str(), h[1].name.as_str()), ("a", "b"));
        write("[[host]]\nssh = \"a\"\ndb_pth = \"/d\"\nlog_path = \"/l\"\n");
        let e = format!("{:#}", load_hosts(&p).expect_err("unknown key"));
        assert!(e.contains("db_pth"), "{e}");
        write("[[host]]\nssh = \"a\"\ndb_path = \"/d\"\nlog_path = \"/l\"\n[[host]]\nssh = \"x@a\"\ndb_path = \"/d\"\nlog_path = \"/l\"\n");
        let e = format!("{:#}", load_hosts(&p).expect_err("duplicate"));
        assert!(e.contains("host 2") && e.contains("`name`"), "{e}");
    }
}
