//! The remote protocol: the command lines the coordinator runs on a host (the run inside its
//! wrapper, doctor, the pid-file probe), the flags it passes on, and the wrapper's report of the
//! run's exit status. The run's own output is the event stream ([`crate::Line`]).

use super::hosts::{Host, Paths};

/// Quotes a word for the remote POSIX shell (ssh joins its arguments into one command line).
pub fn sh(word: &str) -> String {
    format!("'{}'", word.replace('\'', "'\\''"))
}

/// folder (a home shared over NFS, two aliases of one server) never share files.
pub fn remote_run_dir(work_dir: &str, run_id: &str, name: &str) -> String {
    format!("{work_dir}/fleet/{run_id}/{name}")
}

/// Flags of `fleet run` that the coordinator consumes: (flag, takes a value).
pub const OWN_FLAGS: [(&str, bool); 11] = [
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
    ("--server-interval", true),
];

/// Flags naming a local file that is copied into the host's run folder (under the flag's name,
/// `--users-file` as `users-file`, mode 0600) and passed on pointing at the copy.
pub const UPLOADED_FLAGS: [&str; 6] = [
    "--config",
    "--profile",
    "--users-file",
    "--ca-file",
    "--server-env",
    "--password-file",
];

/// A secret given on the coordinator's command line that never goes on a host's: `--password`
/// reaches the host as the file `password-file` (uploaded over ssh's stdin, mode 0600) and the
/// host's run reads it with `--password-file`.
pub const SECRET_FLAG: (&str, &str) = ("--password", "--password-file");

/// The run flags to pass on: the command line after `fleet run`, less the coordinator's own
/// flags; `--config` and `--profile` point at the copies in the remote run folder.
pub fn forwarded_flags(argv: &[String], run_dir: &str) -> Vec<String> {
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
        if flag == SECRET_FLAG.0 {
            if inline.is_none() {
                it.next();
            }
            out.push(SECRET_FLAG.1.to_string());
            out.push(format!("{run_dir}/{}", &SECRET_FLAG.1[2..]));
            continue;
        }
        if UPLOADED_FLAGS.contains(&flag) {
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
pub fn host_words(h: &Host, bin: &str, sub: &str, run_dir: &str, flags: &[String]) -> Vec<String> {
    let mut words = vec![bin.to_string(), sub.into()];
    words.extend(flags.iter().cloned());
    if h.entry.profile.is_some() {
        words.extend(["--profile".into(), format!("{run_dir}/host-profile")]);
    }
    for p in h.entry.db_path.iter().flat_map(Paths::list) {
        words.extend(["--db-path".into(), p]);
    }
    for p in h.entry.log_path.iter().flat_map(Paths::list) {
        words.extend(["--log-path".into(), p]);
    }
    words
}

/// What a host runs: a storage test (`run`) or slice `part` of `parts` of the simulated mail
/// users (`loadgen run --partition part/parts`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RemoteJob {
    /// `mbxstress run`.
    Run,
    /// `mbxstress loadgen run --partition PART/PARTS`.
    Loadgen {
        /// This host's slice, 1-based.
        part: usize,
        /// Slices in all (the client hosts).
        parts: usize,
    },
}

/// The remote command line of one host's run.
pub fn remote_command(h: &Host, bin: &str, run_dir: &str, flags: &[String]) -> String {
    remote_command_for(RemoteJob::Run, h, bin, run_dir, flags)
}

/// The remote command line of one host's `job`.
pub fn remote_command_for(
    job: RemoteJob,
    h: &Host,
    bin: &str,
    run_dir: &str,
    flags: &[String],
) -> String {
    let mut words = match job {
        RemoteJob::Run => host_words(h, bin, "run", run_dir, flags),
        RemoteJob::Loadgen { part, parts } => {
            let mut w = vec![bin.to_string(), "loadgen".into(), "run".into()];
            w.extend(flags.iter().cloned());
            w.extend(["--partition".into(), format!("{part}/{parts}")]);
            w
        }
    };
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
pub const REMOTE_EXIT: &str = "remote_exit";

/// The name of Linux signal `n` (the numbers of x86_64 Linux, the hosts `fleet run` drives).
pub fn signal_name(n: i64) -> Option<&'static str> {
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
pub fn signal_text(status: i64) -> String {
    let n = status.saturating_sub(128);
    match signal_name(n) {
        Some(name) => format!("signal {n} ({name})"),
        None => format!("signal {n}"),
    }
}

/// The remote run's pid file, in its run folder (written by the remote shell before `exec`).
pub const PID_FILE: &str = "run.pid";

/// A remote shell command acting on the host's run when it is still alive: its pid from the
/// pid file, kept only if that process still has the run folder on its command line (a pid
/// reused by another process is never signalled). `then` runs with `$p` set; prints
/// `running <pid>` or `ended`.
pub fn on_live_run(run_dir: &str, then: &str) -> String {
    format!(
        "p=$(cat {pf} 2>/dev/null); case \"$p\" in ''|*[!0-9]*) p= ;; esac; \
         if [ -n \"$p\" ] && grep -qF -- {out} /proc/\"$p\"/cmdline 2>/dev/null; then {then} echo running \"$p\"; else echo ended; fi",
        pf = sh(&format!("{run_dir}/{PID_FILE}")),
        out = sh(&format!("{run_dir}/result")),
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::fleet::hosts::{HostEntry, Paths};

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

    /// The audit's `fleet loadgen --password X`: the password never reaches a host's command
    /// line (visible in `ps` there and here); the host reads the uploaded 0600 file.
    #[test]
    fn a_password_goes_to_hosts_as_a_file_never_on_a_command_line() {
        for given in [
            vec!["--password", "S3cret"],
            vec!["--password=S3cret"],
            vec!["--password-file", "/home/me/pw"],
        ] {
            let argv: Vec<String> = ["mbxstress", "fleet", "loadgen", "--users", "10"]
                .into_iter()
                .chain(given.iter().copied())
                .chain(["--day", "8h"])
                .map(str::to_string)
                .collect();
            let flags = forwarded_flags(&argv, "D");
            assert_eq!(
                flags,
                [
                    "--users",
                    "10",
                    "--password-file",
                    "D/password-file",
                    "--day",
                    "8h"
                ],
                "{given:?}"
            );
            let cmd = remote_command_for(
                RemoteJob::Loadgen { part: 1, parts: 2 },
                &test_host(),
                "mbxstress",
                "D",
                &flags,
            );
            assert!(
                !cmd.contains("S3cret") && !cmd.contains("/home/me"),
                "{cmd}"
            );
        }
    }

    #[test]
    fn the_wrapper_reports_the_run_status_and_signals_are_named() {
        assert!(remote_command_tail().contains("\"remote_exit\""));
        assert_eq!(signal_text(137), "signal 9 (SIGKILL)");
        assert_eq!(signal_text(143), "signal 15 (SIGTERM)");
        assert_eq!(signal_text(128 + 40), "signal 40");
    }

    /// A host `h` with work_dir `w`, as a hosts file would give it.
    fn test_host() -> Host {
        Host {
            name: "h".into(),
            entry: HostEntry {
                ssh: "h".into(),
                name: None,
                db_path: Some(Paths::One("/d".into())),
                log_path: Some(Paths::One("/l".into())),
                profile: None,
                mbxstress: None,
                work_dir: None,
            },
            work_dir: "w".into(),
        }
    }

    fn remote_command_tail() -> String {
        let h = test_host();
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
        let h = test_host();
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
    fn words_are_quoted_for_the_remote_shell() {
        assert_eq!(sh("a b"), "'a b'");
        assert_eq!(sh("it's"), "'it'\\''s'");
    }
}
