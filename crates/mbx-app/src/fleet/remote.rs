//! The remote protocol: the command lines the coordinator runs on a host (the run inside its
//! wrapper, doctor, the pid-file probe) on the host's request file, and the wrapper's report of
//! the run's exit status. The run's own output is the event stream ([`crate::Line`]).

/// Quotes a word for the remote POSIX shell (ssh joins its arguments into one command line).
pub fn sh(word: &str) -> String {
    format!("'{}'", word.replace('\'', "'\\''"))
}

/// folder (a home shared over NFS, two aliases of one server) never share files.
pub fn remote_run_dir(work_dir: &str, run_id: &str, name: &str) -> String {
    format!("{work_dir}/fleet/{run_id}/{name}")
}

/// The host's request in its run folder ([`crate::request::HostRequest`], mode 0600).
pub const REQUEST_FILE: &str = "request.json";

/// The template users' password in a loadgen client's run folder (mode 0600): the request
/// never holds it, and no command line does (`ps` shows them), only this file's name.
pub const PASSWORD_FILE: &str = "password-file";

/// What a host runs, from its request: a storage test (`run`) or its slice of the simulated
/// mail users (`loadgen run`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RemoteJob {
    /// `mbxstress run --request FILE`.
    Run,
    /// `mbxstress loadgen run --request FILE`, with `--password-file` when the users take the
    /// template's password.
    Loadgen {
        /// The password file was uploaded.
        password: bool,
    },
}

/// `bin sub --request D/request.json`: a host's command on its request (`run`, `doctor`,
/// `loadgen run`).
pub fn request_words(bin: &str, sub: &[&str], run_dir: &str) -> Vec<String> {
    let mut words = vec![bin.to_string()];
    words.extend(sub.iter().map(|s| s.to_string()));
    words.extend(["--request".into(), format!("{run_dir}/{REQUEST_FILE}")]);
    words
}

/// The remote command line of one host's run.
pub fn remote_command(bin: &str, run_dir: &str) -> String {
    remote_command_for(RemoteJob::Run, bin, run_dir)
}

/// The remote command line of one host's `job`. Besides the request, only the transport is on
/// it: the results folder (the request's too: the run is found by it, in `ps` and by
/// [`on_live_run`]), the event stream and the start gate.
pub fn remote_command_for(job: RemoteJob, bin: &str, run_dir: &str) -> String {
    let mut words = match job {
        RemoteJob::Run => request_words(bin, &["run"], run_dir),
        RemoteJob::Loadgen { password } => {
            let mut w = request_words(bin, &["loadgen", "run"], run_dir);
            if password {
                w.extend([
                    "--password-file".into(),
                    format!("{run_dir}/{PASSWORD_FILE}"),
                ]);
            }
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

    /// The audit's `fleet loadgen --password X`: the password never reaches a host's command
    /// line (visible in `ps` there and here); the host reads the uploaded 0600 file.
    #[test]
    fn a_host_runs_its_request_and_reads_the_password_from_a_file() {
        let cmd = remote_command_for(RemoteJob::Loadgen { password: true }, "mbxstress", "D");
        assert!(
            cmd.contains("'mbxstress' 'loadgen' 'run' '--request' 'D/request.json' '--password-file' 'D/password-file' '--out' 'D/result'"),
            "{cmd}"
        );
        let cmd = remote_command_for(RemoteJob::Loadgen { password: false }, "mbxstress", "D");
        assert!(!cmd.contains("password"), "{cmd}");
    }

    #[test]
    fn the_wrapper_reports_the_run_status_and_signals_are_named() {
        assert!(remote_command_tail().contains("\"remote_exit\""));
        assert_eq!(signal_text(137), "signal 9 (SIGKILL)");
        assert_eq!(signal_text(143), "signal 15 (SIGTERM)");
        assert_eq!(signal_text(128 + 40), "signal 40");
    }

    fn remote_command_tail() -> String {
        let cmd = remote_command("mbxstress", "w/fleet/r/h");
        assert!(cmd.contains("'mbxstress' 'run' '--request' "), "{cmd}");
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
        let cmd = remote_command(&stand_in.display().to_string(), &run.display().to_string());
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
