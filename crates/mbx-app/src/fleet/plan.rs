//! What each host of a fleet is sent: its job resolved here, once, from the coordinator's flags
//! and files ([`HostJob`]), with what differs per host (its paths and profile, its slice of the
//! users, its run folder) set here too, and the files it needs beside it. The host runs the
//! request as it is ([`crate::request`]); no flag of the coordinator's command line is passed on.

use std::path::{Path, PathBuf};
use std::time::Duration;

use mbx_config::TestKind;

use super::error::{failed, usage, Result};
use super::hosts::{Host, Paths};
use super::remote::{PASSWORD_FILE, REQUEST_FILE};
use super::ssh::Upload;
use crate::config::{Flag, Layers, Sources};
use crate::loadgen::request::{DaySpec, Resolved, Slice, UsersFrom};
use crate::request::{HostJob, HostRequest, RunSpec};
use crate::AppError;

/// Files copied into every host's run folder beside its request: (what, its name there).
pub type Uploads = Vec<(Upload, String)>;

/// Where a users file is copied in a client's run folder.
pub const USERS_FILE: &str = "users-file";
/// Where a CA file is copied in a client's run folder.
pub const CA_FILE: &str = "ca-file";

/// An application error about host `host` as fleet's (a usage error stays one).
fn for_host(host: &str, e: AppError) -> super::FleetError {
    match e {
        AppError::Usage(m) => usage(format!("host {host}: {m}")),
        e => failed(format!("host {host}: {e}")),
    }
}

/// `fleet run`'s job for every host: the configuration `sources` gives (the coordinator's flags
/// and files), with the host's own profile (in place of `--profile`) and its database and log
/// paths, resolved and validated for a `kind` test.
pub fn run_jobs(
    hosts: &[Host],
    kind: TestKind,
    force: bool,
    allow_device: bool,
    sources: &dyn Fn() -> Sources,
) -> Result<Vec<HostJob>> {
    hosts
        .iter()
        .map(|h| {
            let mut s = sources();
            if let Some(p) = &h.entry.profile {
                s.profile = Some(p.clone());
            }
            let paths = |p: &Option<Paths>| -> Option<Vec<PathBuf>> {
                p.as_ref()
                    .map(|p| p.list().into_iter().map(PathBuf::from).collect())
            };
            s.flags.push(Flag::new(
                "db_paths",
                "db_path (the --hosts file)",
                paths(&h.entry.db_path),
                |c, v| c.db_paths = v,
            ));
            s.flags.push(Flag::new(
                "log_paths",
                "log_path (the --hosts file)",
                paths(&h.entry.log_path),
                |c, v| c.log_paths = v,
            ));
            let config = Layers::read(s)
                .and_then(|l| l.carry(kind))
                .map_err(|e| for_host(&h.name, e))?;
            Ok(HostJob::Run(RunSpec {
                kind,
                config,
                out: PathBuf::new(),
                force,
                allow_device,
            }))
        })
        .collect()
}

/// A fleet command, for the flags it refuses ([`refuse_flags`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FleetCommand {
    /// `fleet run`.
    Run,
    /// `fleet loadgen`.
    Loadgen,
}

/// Which of the flags a fleet command sets itself, or that no host's run could take, were
/// given on its command line (the binary says; [`refuse_flags`] judges). A flag the command
/// does not have is `false`.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct GivenFlags {
    /// `--db-path` or `--log-path` (`fleet run`).
    pub paths: bool,
    /// `--jetstress-config` (`fleet run`).
    pub jetstress_config: bool,
    /// `--partition` (`fleet loadgen`).
    pub partition: bool,
    /// `--start-gate`.
    pub start_gate: bool,
    /// `--request`.
    pub request: bool,
    /// `--map-path` (`fleet run`).
    pub map_path: bool,
    /// `--stress-duration` (`fleet run`).
    pub stress_duration: bool,
    /// `--test suite` (`fleet run`).
    pub suite: bool,
}

/// A fleet command's refusals of flags that differ per host, that it sets itself, or that a
/// host's run would refuse: the first given, refused before any host is touched.
pub fn refuse_flags(command: FleetCommand, given: GivenFlags) -> Result<()> {
    let (name, each) = match command {
        FleetCommand::Run => ("fleet run", "host"),
        FleetCommand::Loadgen => ("fleet loadgen", "client"),
    };
    let refusals = [
        (given.paths, "fleet run: --db-path and --log-path differ per host: set db_path and log_path for each [[host]] in the --hosts file".to_string()),
        (given.jetstress_config, "fleet run: --jetstress-config is not passed to hosts; use --config or --profile (copied to each host)".to_string()),
        (given.partition, "--partition is set by fleet loadgen itself (client K of N takes slice K/N of the users); leave it out".to_string()),
        (given.start_gate, format!("--start-gate is set by {name} itself for every {each}; leave it out")),
        (given.request, format!("--request is written by {name} itself for every {each}; leave it out")),
        // What each host's run would refuse, refused here (hosts run the resolved request only).
        (given.map_path, "--map-path maps the paths of a --jetstress-config file: give the file too".to_string()),
        (given.stress_duration, "--stress-duration is the Stress duration of --test suite; for --test stress use --duration".to_string()),
        (given.suite, "fleet run runs one test type with a synchronized measured phase: --test performance, stress or soft-recovery (run the suite's tests one by one)".to_string()),
    ];
    match refusals.into_iter().find(|(given, _)| *given) {
        Some((_, why)) => Err(usage(why)),
        None => Ok(()),
    }
}

/// The watchdog's bound: `--host-timeout`, else 10 sample intervals and at least 60 s.
pub fn host_timeout(flag: Option<Duration>, sample_interval_s: f64) -> Result<Duration> {
    let bound = match flag {
        Some(d) if d < Duration::from_secs(5) => Err(usage(
            "--host-timeout must be at least 5s (a run sends an event a second)",
        )),
        Some(d) => Ok(d),
        None => Ok(Duration::from_secs_f64(
            (sample_interval_s * 10.0).clamp(60.0, 86_400.0),
        )),
    };
    // The watchdog never gives up a host between two of its events (one a second).
    debug_assert!(!matches!(&bound, Ok(d) if *d < Duration::from_secs(5)));
    bound
}

/// `--start-margin`, checked: 0.1 s..=10 min.
pub fn start_margin(d: Duration) -> Result<Duration> {
    if !(0.1..=600.0).contains(&d.as_secs_f64()) {
        return Err(usage("--start-margin must be within 0.1s..=10m"));
    }
    Ok(d)
}

/// fleet loadgen's `--server-interval`, checked: 1 s..=1 h.
pub fn server_interval(d: Duration) -> Result<Duration> {
    if d < Duration::from_secs(1) || d > Duration::from_secs(3600) {
        return Err(usage("--server-interval must be within 1s..=1h"));
    }
    Ok(d)
}

/// A regular file to copy to every host, checked before ssh is given it as input (a FIFO would
/// block the copy forever, /dev/zero would never end).
fn upload_file(path: &Path, flag: &str) -> Result<Upload> {
    mbx_config::input::read_head(path, 0, "an input file copied to every client host")
        .map_err(|e| usage(format!("--{flag}: {e}")))?;
    Ok(Upload::File(path.to_path_buf()))
}

/// `fleet loadgen`'s job for each of `clients` client hosts (client K takes slice K of the
/// users), and the files they need: a users file, a CA file, and the template users' password
/// (as a file of its own, mode 0600, never in the request nor on a command line).
pub fn loadgen_jobs(day: &Resolved<DaySpec>, clients: usize) -> Result<(Vec<HostJob>, Uploads)> {
    let users = day.users.len();
    if users < clients.saturating_mul(2) {
        return Err(usage(format!(
            "{users} users for {clients} client hosts: each client's slice needs at least 2 users (its users send to each other); give more users or fewer [[host]] tables"
        )));
    }
    let mut uploads = Vec::new();
    if let UsersFrom::File { path } = &day.spec.common.users.from {
        uploads.push((upload_file(path, USERS_FILE)?, USERS_FILE.to_string()));
    }
    if let mbx_loadgen::Trust::CaFile(path) = &day.spec.common.trust {
        uploads.push((upload_file(path, CA_FILE)?, CA_FILE.to_string()));
    }
    if let Some(p) = &day.password {
        uploads.push((
            Upload::Bytes(format!("{p}\n").into_bytes()),
            PASSWORD_FILE.to_string(),
        ));
    }
    let jobs: Vec<HostJob> = (1..=clients)
        .map(|k| {
            let mut spec = day.spec.clone();
            spec.common.users.slice = Some(Slice { k, n: clients });
            HostJob::Loadgen(spec)
        })
        .collect();
    // One job per client, client K taking slice K of N: the slices cover the users once.
    debug_assert_eq!(jobs.len(), clients);
    debug_assert!(jobs.iter().enumerate().all(|(i, j)| matches!(
        j,
        HostJob::Loadgen(d) if d.common.users.slice == Some(Slice { k: i + 1, n: clients })
    )));
    Ok((jobs, uploads))
}

/// The request host `job` is sent, for its run folder `run_dir`: its results folder there, and
/// the files it reads at their copies' paths.
pub fn host_request(job: &HostJob, run_dir: &str) -> HostRequest {
    let at = |name: &str| PathBuf::from(format!("{run_dir}/{name}"));
    let mut job = job.clone();
    match &mut job {
        HostJob::Run(r) => r.out = at("result"),
        HostJob::Loadgen(d) => {
            d.common.out = Some(at("result"));
            if let UsersFrom::File { path } = &mut d.common.users.from {
                *path = at(USERS_FILE);
            }
            if let mbx_loadgen::Trust::CaFile(path) = &mut d.common.trust {
                *path = at(CA_FILE);
            }
        }
    }
    HostRequest::new(job)
}

/// The uploads of one host: the common files and its request.
pub(crate) fn host_uploads(common: &[(Upload, String)], request: &HostRequest) -> Result<Uploads> {
    let mut up = common.to_vec();
    let bytes = request.to_bytes().map_err(|e| failed(e.to_string()))?;
    up.push((Upload::Bytes(bytes), REQUEST_FILE.to_string()));
    Ok(up)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn flags_a_fleet_sets_itself_are_refused_in_the_order_given() {
        use FleetCommand::{Loadgen, Run};
        assert!(refuse_flags(Run, GivenFlags::default()).is_ok());
        assert!(refuse_flags(Loadgen, GivenFlags::default()).is_ok());
        let msg = |c, g| {
            let e = refuse_flags(c, g).expect_err("refused");
            assert!(e.is_usage(), "{e}");
            e.to_string()
        };
        let both = GivenFlags {
            start_gate: true,
            suite: true,
            ..GivenFlags::default()
        };
        assert_eq!(
            msg(Run, both),
            "--start-gate is set by fleet run itself for every host; leave it out"
        );
        let paths = GivenFlags {
            paths: true,
            ..both
        };
        assert!(msg(Run, paths).contains("set db_path and log_path for each [[host]]"));
        let suite = GivenFlags {
            suite: true,
            ..GivenFlags::default()
        };
        assert!(msg(Run, suite).contains("run the suite's tests one by one"));
        let request = GivenFlags {
            request: true,
            ..GivenFlags::default()
        };
        assert_eq!(
            msg(Loadgen, request),
            "--request is written by fleet loadgen itself for every client; leave it out"
        );
        let partition = GivenFlags {
            partition: true,
            ..request
        };
        assert!(msg(Loadgen, partition).starts_with("--partition is set by fleet loadgen"));
    }
    use crate::fleet::hosts::HostEntry;
    use crate::loadgen::request::{resolve_day, DayFlags};

    fn host(name: &str, profile: Option<PathBuf>) -> Host {
        Host {
            name: name.into(),
            entry: HostEntry {
                ssh: name.into(),
                name: None,
                db_path: Some(Paths::One(format!("/d/{name}"))),
                log_path: Some(Paths::Many(vec![format!("/l/{name}")])),
                profile,
                mbxstress: None,
                work_dir: None,
            },
            work_dir: "w".into(),
        }
    }

    /// What a host reads from its request file.
    fn received(req: &HostRequest) -> HostRequest {
        let up = host_uploads(&[], req).expect("uploads");
        let Some((Upload::Bytes(b), name)) = up.last() else {
            panic!("no request upload");
        };
        assert_eq!(name, REQUEST_FILE);
        HostRequest::parse(b, Path::new(REQUEST_FILE)).expect("the host reads it")
    }

    /// fleet run: each host's request, read back there, is the coordinator's resolved request
    /// for that host (its own paths and profile), and the host's run resolves it to the same
    /// configuration, each value with the origin it had on the coordinator.
    #[test]
    fn a_run_host_receives_the_coordinators_resolved_request() {
        let dir = tempfile::tempdir().expect("tempdir");
        let profile = dir.path().join("h2.toml");
        fs_err::write(
            &profile,
            "mailboxes = 200\nmailbox_quota_mb = 100\niops_per_mailbox = 0.2\ndatabases = 2\ncopies_per_database = 1\n",
        )
        .expect("profile");
        let hosts = [host("h1", None), host("h2", Some(profile.clone()))];
        let sources = || Sources {
            flags: vec![
                Flag::new("duration_s", "--duration", Some(3.0), |c, v| {
                    c.duration_s = v
                }),
                Flag::new("threads", "--threads", Some(2u32), |c, v| c.threads = v),
            ],
            ..Sources::default()
        };
        let jobs = run_jobs(&hosts, TestKind::Performance, false, false, &sources).expect("jobs");
        for (h, job) in hosts.iter().zip(&jobs) {
            let run_dir = format!("w/fleet/r/{}", h.name);
            let sent = host_request(job, &run_dir);
            let got = received(&sent);
            assert_eq!(got, sent, "{}", h.name);
            let HostJob::Run(spec) = got.job else {
                panic!("not a run");
            };
            assert_eq!(spec.out, PathBuf::from(format!("{run_dir}/result")));
            let cfg = &spec.config.config;
            assert_eq!(cfg.db_paths, [PathBuf::from(format!("/d/{}", h.name))]);
            assert_eq!(cfg.duration_s, 3.0);
            let host_layers = Layers::from_carried(spec.config.clone());
            assert_eq!(
                host_layers
                    .resolve_for(TestKind::Performance)
                    .expect("valid"),
                *cfg
            );
            assert_eq!(
                host_layers.origin("duration_s"),
                crate::config::Origin::Flag("--duration")
            );
            if h.entry.profile.is_some() {
                assert_eq!(cfg.profile.mailboxes, 200);
                assert_eq!(
                    host_layers.origin("mailboxes"),
                    crate::config::Origin::Profile(&profile)
                );
            } else {
                assert_eq!(
                    host_layers.origin("mailboxes"),
                    crate::config::Origin::Default
                );
            }
        }
    }

    fn day_flags(users_file: Option<PathBuf>) -> DayFlags {
        DayFlags {
            conn: crate::loadgen::request::ConnFlags {
                server: Some("mail.example.com".into()),
                smtp_auth: "plain".into(),
                users: Some(7),
                first_user: 1,
                password: Some("S3cret".into()),
                users_file,
                domain: Some("example.com".into()),
                seed: 5,
                ..Default::default()
            },
            day: std::time::Duration::from_secs(60),
            days: 1,
            clients: "desktop_imap=70,webmail=20,pop3=10".into(),
            overload: 1.5,
            grace: std::time::Duration::from_secs(10),
            tasks_achieved_pct: 95.0,
            task_p95_ms: 1000.0,
            delivery_p95_ms: 1000.0,
            sample_interval: std::time::Duration::from_secs(5),
            ..Default::default()
        }
    }

    /// fleet loadgen: each client's request, read back there, is the coordinator's for that
    /// client (its slice); the users the client makes from it are the coordinator's slice; the
    /// password is in no request.
    #[test]
    fn a_loadgen_client_receives_the_coordinators_request_and_its_slice() {
        let day = resolve_day(&day_flags(None)).expect("resolved");
        let (jobs, uploads) = loadgen_jobs(&day, 3).expect("jobs");
        assert_eq!(jobs.len(), 3);
        assert!(uploads.iter().any(|(_, n)| n == PASSWORD_FILE));
        let mut seen = Vec::new();
        for (i, job) in jobs.iter().enumerate() {
            let sent = host_request(job, &format!("w/fleet/r/h{i}"));
            let got = received(&sent);
            assert_eq!(got, sent);
            let bytes = sent.to_bytes().expect("bytes");
            assert!(!String::from_utf8_lossy(&bytes).contains("S3cret"));
            let HostJob::Loadgen(spec) = got.job else {
                panic!("not loadgen");
            };
            let here = spec
                .load(Some("S3cret".into()))
                .expect("loads")
                .request(Default::default(), None)
                .expect("request");
            let range = crate::loadgen::request::partition_range(7, i + 1, 3);
            assert_eq!(here.common.users, day.users[range]);
            assert_eq!(
                here.partition.as_deref(),
                Some(format!("{}/3", i + 1).as_str())
            );
            seen.extend(here.common.users.iter().map(|u| u.login.clone()));
        }
        let all: Vec<String> = day.users.iter().map(|u| u.login.clone()).collect();
        assert_eq!(seen, all, "every user in exactly one slice");
        assert!(
            loadgen_jobs(&day, 4).is_err(),
            "7 users cannot feed 4 clients 2 each"
        );
    }

    /// A users file reaches the client as its copy: the request names the copy, the users read
    /// there are the coordinator's, and a copy that differs is refused.
    #[test]
    fn a_users_file_is_read_from_its_copy_and_a_changed_copy_refused() {
        let dir = tempfile::tempdir().expect("tempdir");
        let file = dir.path().join("users.csv");
        let text: String = (1..=4).map(|i| format!("u{i},p{i}\n")).collect();
        fs_err::write(&file, &text).expect("users");
        let day = resolve_day(&day_flags(Some(file))).expect("resolved");
        let (jobs, uploads) = loadgen_jobs(&day, 2).expect("jobs");
        assert!(uploads.iter().any(|(_, n)| n == USERS_FILE));
        assert!(!uploads.iter().any(|(_, n)| n == PASSWORD_FILE));
        let run_dir = dir.path().join("h1").display().to_string();
        fs_err::create_dir_all(&run_dir).expect("run dir");
        fs_err::write(format!("{run_dir}/{USERS_FILE}"), &text).expect("copy");
        let HostJob::Loadgen(spec) = received(&host_request(&jobs[0], &run_dir)).job else {
            panic!("not loadgen");
        };
        let here = spec.clone().load(None).expect("loads");
        assert_eq!(here.users, day.users);
        fs_err::write(format!("{run_dir}/{USERS_FILE}"), "u1,p1\n").expect("changed copy");
        let e = spec.load(None).expect_err("a changed copy").to_string();
        assert!(e.contains("changed"), "{e}");
    }
}
