//! The processes `fleet run` drives: the checks of each host (reachable, version or `--push`,
//! clock offset, doctor), the runs' ssh sessions, and the collection of a host whose session
//! ended (waiting for or stopping its remote run over a fresh connection, copying its results
//! back). Every remote command is bounded in time; a child another thread must end is
//! [`Watched`].

use std::io::{BufRead, BufReader, Write};
use std::path::{Path, PathBuf};
use std::process::{Child, ChildStdin, Command, ExitStatus, Stdio};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{mpsc, Arc, Mutex};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use mbx_result::{CheckName, DoctorReport, DoctorStatus, DOCTOR_SCHEMA};

use super::coordinator::{Checked, Collect, Message};
use super::error::{fail, failed, usage, Ctx, Result};
use super::hosts::Host;
use super::remote::{on_live_run, request_words, sh, PID_FILE};

/// What is copied into a host's run folder: a local file, or bytes made here (its request, a
/// password given on the command line: never written to a local file).
#[derive(Clone)]
pub enum Upload {
    /// A local file (a users file, a CA file).
    File(PathBuf),
    /// Bytes.
    Bytes(Vec<u8>),
}

impl Upload {
    /// The upload in words, for a message (never its bytes: they may be a secret).
    fn describe(&self, name: &str) -> String {
        match self {
            Upload::File(p) => p.display().to_string(),
            Upload::Bytes(_) => name.to_string(),
        }
    }
}

impl std::fmt::Debug for Upload {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Upload::File(p) => write!(f, "File({})", p.display()),
            Upload::Bytes(b) => write!(f, "Bytes({} bytes)", b.len()),
        }
    }
}

/// Builds ssh and tar commands with the user's options.
#[derive(Debug, Clone)]
pub struct Ssh {
    /// `ssh -F FILE` (`--ssh-config`).
    pub config: Option<PathBuf>,
}

impl Ssh {
    /// `ssh [options] -- dest remote`, in a process group of its own.
    pub fn cmd(&self, dest: &str, remote: &str) -> Command {
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
    pub fn output(&self, dest: &str, remote: &str, input: Option<&Path>) -> Result<String> {
        self.output_from(
            dest,
            remote,
            input.map(|p| Upload::File(p.to_path_buf())).as_ref(),
        )
    }

    /// Runs `remote` on `dest` with a file's or some bytes on its stdin; its stdout, or an error
    /// with its stderr.
    pub(crate) fn output_from(
        &self,
        dest: &str,
        remote: &str,
        input: Option<&Upload>,
    ) -> Result<String> {
        let mut c = self.cmd(dest, remote);
        c.stdout(Stdio::piped()).stderr(Stdio::piped());
        let mut bytes = None;
        match input {
            Some(Upload::File(p)) => c.stdin(
                fs_err::File::open(p)
                    .ctx(|| "opening a file to copy".into())?
                    .into_parts()
                    .0,
            ),
            Some(Upload::Bytes(b)) => {
                bytes = Some(b.clone());
                c.stdin(Stdio::piped())
            }
            None => c.stdin(Stdio::null()),
        };
        let out = output_bounded_with(&mut c, CHECK_LIMIT, bytes)?;
        if !out.status.success() {
            return Err(fail!(
                "`ssh {dest} {remote}` failed ({}): {}",
                out.status,
                host_text(&String::from_utf8_lossy(&out.stderr))
            ));
        }
        Ok(String::from_utf8_lossy(&out.stdout).into_owned())
    }
}

/// The wall clock, Unix seconds.
pub fn unix_now() -> f64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0.0, |d| d.as_secs_f64())
}

/// The remote clock against ours, in one connection: the remote prints its time for each line we
/// send; the offset is taken from the round trip with the smallest time, at its midpoint.
fn clock_offset(ssh: &Ssh, dest: &str) -> Result<(f64, f64)> {
    let mut child = ssh
        .cmd(dest, "echo ok; while read x; do date +%s.%N; done")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .ctx(|| "starting ssh (is the OpenSSH client installed?)".into())?;
    let result = (|| -> std::result::Result<(f64, f64), String> {
        let io = |e: std::io::Error| e.to_string();
        let mut stdin = child.stdin.take().ok_or("ssh stdin")?;
        let mut out = BufReader::new(child.stdout.take().ok_or("ssh stdout")?);
        let mut line = String::new();
        out.read_line(&mut line).map_err(io)?;
        if line.trim() != "ok" {
            return Err("no answer".into());
        }
        let mut best: Option<(f64, f64)> = None;
        for _ in 0..5 {
            let t0 = unix_now();
            stdin.write_all(b"x\n").map_err(io)?;
            stdin.flush().map_err(io)?;
            line.clear();
            out.read_line(&mut line).map_err(io)?;
            let t1 = unix_now();
            let remote: f64 = line.trim().parse().map_err(|_| {
                format!(
                    "`date +%s.%N` printed {:?}: GNU date is needed",
                    line.trim()
                )
            })?;
            let rtt = t1 - t0;
            // The best reading is the one with the smallest round trip.
            if best.is_none_or(|(_, r)| rtt < r) {
                best = Some((remote - (t0 + t1) / 2.0, rtt));
            }
        }
        best.ok_or_else(|| "no clock reading".to_string())
    })();
    let _ = child.kill();
    let status = child.wait();
    result.map_err(|e| {
        let mut err = String::new();
        if let Some(mut s) = child.stderr.take() {
            let _ = std::io::Read::read_to_string(&mut s, &mut err);
        }
        failed(format!(
            "unreachable over ssh ({e}; {}): {}",
            status.map_or_else(|e| e.to_string(), |s| s.to_string()),
            host_text(&err)
        ))
    })
}

fn sha256_local(path: &Path) -> Result<String> {
    let out = Command::new("sha256sum")
        .arg(path)
        .output()
        .ctx(|| "running sha256sum (coreutils) on the local binary".into())?;
    String::from_utf8_lossy(&out.stdout)
        .split_whitespace()
        .next()
        .map(str::to_string)
        .ok_or_else(|| failed(format!("sha256sum printed nothing for {}", path.display())))
}

/// Writes of doctor's write-through probe per location in fleet's check (doctor's default is 200):
/// enough to see an early-acknowledging cache, short enough not to slow the start.
const FLEET_PROBE_WRITES: &str = "64";

/// Runs `mbxstress doctor --request FILE --json` on the host: its request holds the run's
/// configuration with the host's paths and profile (doctor creates nothing). Its exit status 1 (a check failed) is a report like 0; a
/// capacity failure is a usage error naming the host, the fact and the fix: the databases
/// would not fit, so nothing may start anywhere.
pub(crate) fn doctor_host(ssh: &Ssh, h: &Host, bin: &str, run_dir: &str) -> Result<DoctorReport> {
    let mut words = request_words(bin, &["doctor"], run_dir);
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
    .ctx(|| format!("host {}: `{bin} doctor`", h.name))?;
    let text = String::from_utf8_lossy(&out.stdout);
    let report: DoctorReport = match serde_json::from_str(&text) {
        Ok(r) => r,
        Err(e) => {
            let why = format!(
                "host {}: `{bin} doctor --json` ({}) gave no report ({e}): {}",
                h.name,
                out.status,
                host_text(&String::from_utf8_lossy(&out.stderr))
            );
            // Exit 2: doctor refused the flags, so would the run.
            return Err(if out.status.code() == Some(2) {
                usage(why)
            } else {
                failed(why)
            });
        }
    };
    if report.schema != DOCTOR_SCHEMA {
        return Err(fail!(
            "host {}: doctor's report has schema {:?}, not {DOCTOR_SCHEMA:?}",
            h.name,
            report.schema
        ));
    }
    if let Some(c) = report
        .checks
        .iter()
        .find(|c| c.name == CheckName::Capacity && c.status == DoctorStatus::Fail)
    {
        return Err(usage(format!(
            "host {}: not enough free space for the test at {}: {}; fix: {}",
            h.name, c.subject, c.fact, c.fix
        )));
    }
    Ok(report)
}

/// The remote folder of one host's run: unique per run and host, so hosts whose `work_dir` is one
/// The Rust target of the binary `--push` copies: statically linked (musl), it runs on any x86_64
/// Linux whatever its C library, where a glibc build needs a glibc at least as new as the build
/// machine's. Always this build, not only for hosts with an older libc: one binary, verified the
/// same way everywhere, and no probing of remote libc versions.
pub const STATIC_TARGET: &str = "x86_64-unknown-linux-musl";

/// The command that builds it (the `static` profile of Cargo.toml: release code without debug
/// info, a fifth of the size to copy to every host).
pub const STATIC_BUILD: &str =
    "cargo build --profile static --target x86_64-unknown-linux-musl -p mbxstress";

/// The binary `--push` copies, found and checked here once before any host is touched.
#[derive(Debug, Clone)]
pub struct Push {
    path: PathBuf,
    sha256: String,
}

/// True if `bytes` are a 64-bit little-endian x86_64 ELF executable without a program
/// interpreter (PT_INTERP): statically linked, so it needs no C library on the host.
pub(crate) fn is_static_x86_64_elf(bytes: &[u8]) -> bool {
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
pub fn find_push_binary(explicit: Option<&Path>) -> Result<Push> {
    let build = format!("rustup target add {STATIC_TARGET} && {STATIC_BUILD}");
    let exe = std::env::current_exe().ctx(|| "finding this binary for --push".into())?;
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
    let bytes = mbx_config::input::read_head(path, 4096, what)
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
fn push_to(ssh: &Ssh, h: &Host, push: &Push, run_dir: &str) -> Result<(String, bool)> {
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
        return Err(fail!(
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
pub(crate) fn check_host(
    ssh: &Ssh,
    h: &Host,
    push: Option<&Push>,
    run_dir: &str,
    uploads: &[(Upload, String)],
    doctor: bool,
) -> Result<Checked> {
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
        ssh.output_from(
            dest,
            // Readable by the run's user only: a request, users file or password file holds
            // secrets.
            &format!("umask 077; cat > {}", sh(&format!("{run_dir}/{name}"))),
            Some(local),
        )
        .ctx(|| format!("copying {} to host {}", local.describe(name), h.name))?;
    }
    let t0 = Instant::now();
    // A loadgen client writes no database: doctor (storage checks) has nothing to judge there.
    let doctor = if doctor {
        Some(doctor_host(ssh, h, &bin, run_dir)?)
    } else {
        None
    };
    Ok(Checked {
        bin,
        offset_s,
        rtt_s,
        pushed,
        push_reused,
        doctor,
        doctor_s: t0.elapsed().as_secs_f64(),
    })
}

/// `f` over `items` on at most `workers` threads at once (the fan-out bound of the checks: each
/// opens and closes ssh connections), results in the items' order; `None` where `f` panicked.
pub(crate) fn bounded_map<T: Sync, R: Send>(
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

/// Starts one host's run: `remote` over ssh, its stderr to `stderr_path`. A thread reads its
/// event stream, sending every line then the exit ([`Message::Line`], [`Message::Exit`], the
/// latter with the last line of its stderr): the result line arrives before the end. Returns
/// its input (the start gate) and its ssh client, for the watchdog to end.
pub(crate) fn spawn_run(
    ssh: &Ssh,
    idx: usize,
    dest: &str,
    remote: &str,
    stderr_path: &Path,
    tx: mpsc::Sender<Message>,
) -> Result<(Option<ChildStdin>, Watched)> {
    let err = fs_err::File::create(stderr_path)
        .ctx(|| "making the host's ssh-stderr.log".into())?
        .into_parts()
        .0;
    let mut child = ssh
        .cmd(dest, remote)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::from(err))
        .spawn()
        .ctx(|| "starting ssh".into())?;
    let stdin = child.stdin.take();
    let out = child.stdout.take().ok_or_else(|| failed("ssh stdout"))?;
    let watched = Watched::new(child, None);
    let w = watched.clone();
    let stderr_path = stderr_path.to_path_buf();
    std::thread::spawn(move || {
        for line in BufReader::new(out).lines() {
            let Ok(text) = line else { break };
            if tx.send(Message::Line { host: idx, text }).is_err() {
                break;
            }
        }
        let code = w.wait().ok().and_then(|s| s.code());
        let _ = tx.send(Message::Exit {
            host: idx,
            code,
            stderr_last: last_line(&stderr_path),
        });
    });
    Ok((stdin, watched))
}

/// The last non-empty line of a file (a host's ssh-stderr.log), trimmed.
fn last_line(path: &Path) -> String {
    // The log's tail only (bounded whatever ssh wrote), shown escaped like any host's text.
    let bytes = mbx_config::input::read_tail(path, 64 << 10).unwrap_or_default();
    let text = String::from_utf8_lossy(&bytes);
    host_text(
        text.lines()
            .rev()
            .find(|l| !l.trim().is_empty())
            .unwrap_or(""),
    )
}

/// The most characters of a host's text (its stderr, ssh's) kept in a message.
pub(crate) const HOST_TEXT_MAX: usize = 1000;

/// Text a host (or ssh) wrote, safe to show: trimmed, control characters escaped visibly
/// (`\x1b`), at most [`HOST_TEXT_MAX`] characters.
pub(crate) fn host_text(s: &str) -> String {
    mbx_config::text::visible(s.trim(), HOST_TEXT_MAX)
}

/// Copies `run_dir/result` of a host into `dest` (tar over ssh). Only regular files and folders
/// come home: a symbolic or hard link, a device or a FIFO in the remote folder (a test.log
/// pointing at /etc/shadow) is left out with a warning naming it, and nothing is written
/// outside `dest`. Bounded: a host that stops answering mid-copy is cut off after
/// [`COPY_LIMIT`]. Returns the warnings about what was left out.
fn copy_back(ssh: &Ssh, h: &Host, run_dir: &str, dest: &Path) -> Result<Vec<String>> {
    fs_err::create_dir_all(dest).ctx(|| "making the host's results folder".into())?;
    let mut child = ssh
        .cmd(
            &h.entry.ssh,
            &format!("tar -C {} -cf - .", sh(&format!("{run_dir}/result"))),
        )
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .ctx(|| "starting ssh".into())?;
    let pipe = child.stdout.take().ok_or_else(|| failed("ssh stdout"))?;
    let stderr = read_in_background(child.stderr.take());
    let watched = Watched::new(child, Some(COPY_LIMIT));
    let extracted = extract_regular_files(pipe, dest);
    let status = watched.wait();
    let err = stderr
        .recv_timeout(Duration::from_secs(2))
        .unwrap_or_default();
    if watched.fired() {
        return Err(fail!(
            "copying the results of host {} back took longer than {} s: given up",
            h.name,
            COPY_LIMIT.as_secs()
        ));
    }
    let dropped = match extracted {
        Ok(d) => d,
        Err(e) => {
            return Err(fail!(
                "copying the results of host {} back failed: {e} {}",
                h.name,
                host_text(&err)
            ))
        }
    };
    if !status.as_ref().is_ok_and(ExitStatus::success) {
        return Err(fail!(
            "copying the results of host {} back failed ({}): {}",
            h.name,
            status.map_or_else(|e| e.to_string(), |s| s.to_string()),
            host_text(&err)
        ));
    }
    Ok(dropped
        .iter()
        .map(|d| {
            format!(
                "host {}: {d} in its results folder was not copied back (only regular files are)",
                h.name
            )
        })
        .collect())
}

/// How long copying one host's results back may take.
const COPY_LIMIT: Duration = Duration::from_secs(300);

/// Unpacks the regular files and folders of a tar stream into `dest`; returns what was left
/// out (links, devices, FIFOs, paths that leave `dest`), each named with its kind. Files are
/// created afresh (an existing link at a file's place is removed first, never followed).
fn extract_regular_files(stream: impl std::io::Read, dest: &Path) -> Result<Vec<String>> {
    use std::path::Component;
    let mut dropped = Vec::new();
    let mut archive = tar::Archive::new(stream);
    for entry in archive.entries().ctx(|| "reading the tar stream".into())? {
        let mut entry = entry.ctx(|| "reading the tar stream".into())?;
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
                Err(_) => fs_err::create_dir(&target).ctx(|| "unpacking a folder".into())?,
            }
        } else if kind.is_file() || kind == tar::EntryType::Continuous {
            if std::fs::symlink_metadata(&target).is_ok_and(|m| !m.is_file()) {
                let _ = std::fs::remove_file(&target);
            }
            let mut f = fs_err::File::create(&target).ctx(|| "unpacking a file".into())?;
            std::io::copy(&mut entry, &mut f).ctx(|| format!("writing {}", target.display()))?;
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
fn output_bounded(c: &mut Command, limit: Duration) -> Result<std::process::Output> {
    output_bounded_with(c, limit, None)
}

/// [`output_bounded`] with `input` written to the child's stdin (piped) by a thread of its own,
/// then closed.
fn output_bounded_with(
    c: &mut Command,
    limit: Duration,
    input: Option<Vec<u8>>,
) -> Result<std::process::Output> {
    let mut child = c
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .ctx(|| "starting ssh (is the OpenSSH client installed?)".into())?;
    if let (Some(bytes), Some(mut stdin)) = (input, child.stdin.take()) {
        // A write the remote never reads fails when ssh ends (the watchdog below bounds that).
        std::thread::spawn(move || {
            let _ = stdin.write_all(&bytes);
        });
    }
    let out = read_bytes_in_background(child.stdout.take(), 64 << 20);
    let err = read_bytes_in_background(child.stderr.take(), 1 << 20);
    let w = Watched::new(child, Some(limit));
    let status = w.wait().ctx(|| "waiting for ssh".into())?;
    if w.fired() {
        return Err(fail!(
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
pub(crate) struct Watched {
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
    pub(crate) fn kill(&self) {
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
fn ssh_bounded(ssh: &Ssh, dest: &str, remote: &str, limit: Duration) -> Result<String> {
    let mut child = ssh
        .cmd(dest, remote)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .ctx(|| "starting ssh (is the OpenSSH client installed?)".into())?;
    let out = read_in_background(child.stdout.take());
    let err = read_in_background(child.stderr.take());
    let w = Watched::new(child, Some(limit));
    let status = w.wait().ctx(|| "waiting for ssh".into())?;
    let out = out.recv_timeout(Duration::from_secs(2)).unwrap_or_default();
    let err = err.recv_timeout(Duration::from_secs(2)).unwrap_or_default();
    if w.fired() {
        return Err(fail!("no answer within {} s", limit.as_secs()));
    }
    if !status.success() {
        return Err(fail!("ssh: {status}: {}", host_text(&err)));
    }
    Ok(out)
}

/// One ssh call of the collection may take this long.
const CALL_LIMIT: Duration = Duration::from_secs(30);

/// After SIGTERM, the time a remote run gets to stop cleanly before SIGKILL.
const TERM_WAIT: Duration = Duration::from_secs(20);

/// A host that dropped its connection is tried again for this long while unreachable.
const RECONNECT_FOR: Duration = Duration::from_secs(15);

/// The watchdog's allowance during a host's setup (before its engine's first event): database
/// when the host cannot be asked (the error).
fn remote_alive(ssh: &Ssh, h: &Host, run_dir: &str, then: &str) -> Result<bool, String> {
    ssh_bounded(ssh, &h.entry.ssh, &on_live_run(run_dir, then), CALL_LIMIT)
        .map(|out| out.trim_start().starts_with("running"))
        .map_err(|e| e.to_string())
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
pub(crate) struct CollectJob {
    pub idx: usize,
    pub host: Host,
    pub run_dir: String,
    pub dest: PathBuf,
    pub how: Collect,
}

/// Collects one host in a thread of its own: waits for or stops its remote run as `how` says,
/// then copies its results back; reports [`Message::Collected`].
pub(crate) fn spawn_collect(
    ssh: &Ssh,
    job: CollectJob,
    quit: Arc<AtomicBool>,
    tx: mpsc::Sender<Message>,
) {
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
        let mut warnings = Vec::new();
        let copied = if reachable {
            copy_back(&ssh, &h, &run_dir, &dest)
                .map(|w| warnings = w)
                .map_err(|e| e.to_string())
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
        let _ = tx.send(Message::Collected {
            host: idx,
            note,
            error: copied.err(),
            warnings,
        });
    });
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_a_static_x86_64_elf_is_pushed() {
        let exe = std::env::current_exe().expect("exe");
        let head = mbx_config::input::read_head(&exe, 4096, "test").expect("head");
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
}
