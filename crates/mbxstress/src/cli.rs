//! The command-line interface: clap definitions only. Behaviour lives in `commands/`.

use std::path::PathBuf;

use clap::{Args, Parser, Subcommand};
use mbx_config::IoBackend;
use mbx_report::Format;
use serde::{Deserialize, Serialize};

const ABOUT: &str =
    "Sizes mailbox servers (Exchange 2013/2016/2019/SE class), validates their storage \
(Jetstress's tests) and loads the installed mail system with simulated users (LoadGen's job).";

/// The long form of the top-level help: the three jobs and their commands.
const LONG_ABOUT: &str = "\
Sizes mailbox servers (Exchange 2013/2016/2019/SE class), validates their storage and loads the
installed mail system with simulated users: the jobs of Microsoft's Role Requirements Calculator,
Jetstress and Exchange Load Generator, in one tool.

  Sizing:              size
  Storage validation:  run (--test performance|stress|backup|checksum|soft-recovery|suite),
                       find-max, doctor, prepare, verify, iobench, fleet run,
                       export jetstress-config; report, import, esrp, compare
  Client load:         loadgen init|run|idle|submit, fleet loadgen";

const EXAMPLES: &str = "\
Examples:
  mbxstress run                                    quick demonstration of the Performance test
  mbxstress size                                   size the built-in example (Tintri, 16,000 users)
  mbxstress prepare --mailboxes 20 --quota-mb 100 --databases 2
  mbxstress verify
  mbxstress iobench --file bench.dat --size 1G --rw randread --bs 32k --iodepth 32 --runtime 10s
  mbxstress size --mailboxes 5000 --messages-per-day 150 --servers 2 --copies 2 \\
                 --databases-per-server 6 --profile-out esrp.toml
  mbxstress size --input deployment.toml --json
  mbxstress report mbxstress-results/<time>       HTML report and CSVs of a run
  mbxstress esrp server1/result.json server2/result.json
  mbxstress loadgen init --server-env /tmp/mbxmail/server.env --messages 20
  mbxstress loadgen run --server-env /tmp/mbxmail/server.env --day 3m --overload 10

Exit codes: 0 success, 1 a verdict that is not a pass (a check failed or was not judged), bad pages\n(verify) or a failed doctor check, 2 usage or configuration error, 3 runtime error (fleet run: partial),\n130 interrupted by Ctrl-C or SIGTERM (work done so far is kept; the same command resumes).";

/// mbxstress: mailbox server sizing, storage validation and client load.
#[derive(Debug, Parser)]
#[command(name = "mbxstress", version, about = ABOUT, long_about = LONG_ABOUT, after_help = EXAMPLES)]
pub struct Cli {
    /// What to do.
    #[command(subcommand)]
    pub command: Command,
    /// Parse the command line, then exit 0 without doing anything (exit 2 naming what does not
    /// parse): the docs' examples are checked with it (tests/cli/docs.rs).
    #[arg(long, global = true, hide = true)]
    pub check_args: bool,
}

/// The subcommands.
#[derive(Debug, Subcommand)]
pub enum Command {
    /// Run the Performance test: simulate the mailbox database engine's I/O and judge it by
    /// Jetstress's thresholds (with no arguments: a quick demonstration, about 2 minutes).
    #[command(after_help = RUN_HELP)]
    Run(RunArgs),
    /// How many mailboxes can this storage carry? The largest mailbox count, at the profile's
    /// IOPS per mailbox, that passes every threshold: a ramp then a bisection of short measured
    /// steps on the same databases (run flags apply; --tuning-step sets a step's length).
    #[command(
        name = "find-max",
        after_help = FIND_MAX_HELP,
        // Run flags find-max refuses (it is the Performance workload in mailboxes of a profile,
        // its own step budget, no fleet gate): accepted only to say so, never listed.
        mut_arg("test", |a: clap::Arg| a.hide(true)),
        mut_arg("capacity_pct", |a: clap::Arg| a.hide(true)),
        mut_arg("throughput_pct", |a: clap::Arg| a.hide(true)),
        mut_arg("stress_duration", |a: clap::Arg| a.hide(true)),
        mut_arg("log_files_to_replay", |a: clap::Arg| a.hide(true)),
        mut_arg("tuning_max_steps", |a: clap::Arg| a.hide(true)),
    )]
    FindMax(FindMaxArgs),
    /// Write another tool's configuration for the same test (today: Jetstress's XML), so the
    /// test can be run there side by side.
    #[command(subcommand)]
    Export(ExportCommand),
    /// Preflight checks of the storage stack and the host for the test the run flags describe
    /// (write-through, queue depth, layout, capacity, virtualization, host), in seconds.
    #[command(after_help = DOCTOR_HELP)]
    Doctor(DoctorArgs),
    /// Size mailbox servers: CPU, memory, storage and IOPS, with a test profile for `run`.
    #[command(after_help = SIZE_HELP)]
    Size(SizeArgs),
    /// Create the test databases and logs (or attach existing ones, or resume an interrupted
    /// creation).
    #[command(after_help = PREPARE_HELP)]
    Prepare(PrepareArgs),
    /// Read databases sequentially and verify every page (checksum, page number, database id).
    #[command(after_help = VERIFY_HELP)]
    Verify(VerifyArgs),
    /// Raw I/O benchmark with fio-like flags: a device baseline, and the yardstick against fio.
    #[command(after_help = IOBENCH_HELP)]
    Iobench(IobenchArgs),
    /// Write the HTML report and CSV files of a run (also done at the end of every run).
    #[command(
        after_help = "Examples:\n  mbxstress report mbxstress-results/2026-11-22T010013Z\n  mbxstress report run1/result.json --out /tmp/report"
    )]
    Report(ReportArgs),
    /// Key figures of two results side by side (mbxstress results or Jetstress reports).
    #[command(
        after_help = "Examples:\n  mbxstress compare before/result.json after/result.json\n  mbxstress compare jetstress-report.txt mbxstress-results/x/result.json --json"
    )]
    Compare(CompareArgs),
    /// Read a Jetstress report (HTML, or its tables as text) into our model.
    #[command(after_help = IMPORT_HELP)]
    Import(ImportArgs),
    /// The ESRP summary across servers from mbxstress results and Jetstress reports, mixed.
    #[command(after_help = ESRP_HELP)]
    Esrp(EsrpArgs),
    /// Several servers at once over SSH: one command runs the test on every host of a hosts
    /// file, starts their measured phases at the same instant and writes one report.
    #[command(subcommand)]
    Fleet(FleetCommand),
    /// Simulated mail users against a real mail system (SMTP, IMAP, POP3), as Exchange Load
    /// Generator does: fill their mailboxes, then run their day and prove every message arrived.
    #[command(subcommand)]
    Loadgen(LoadgenCommand),
}

/// `mbxstress loadgen`.
#[derive(Debug, Subcommand)]
pub enum LoadgenCommand {
    /// Fill every user's mailbox to --messages generated messages over IMAP (resumable: what a
    /// mailbox already holds is counted; nothing is changed or deleted).
    #[command(after_help = LOADGEN_INIT_HELP)]
    Init(LoadgenInitArgs),
    /// Run simulated days of the users' tasks (send, check, read, reply, forward, move, delete,
    /// flag, search) at their scheduled times, then account for every copy sent.
    #[command(after_help = LOADGEN_RUN_HELP)]
    Run(LoadgenRunArgs),
    /// Open --connections IMAP sessions (users cycled), log in, SELECT INBOX, IDLE, and hold
    /// them: connections established and failed, time to establish, this process's memory per
    /// connection and CPU while idle.
    #[command(after_help = LOADGEN_IDLE_HELP)]
    Idle(LoadgenIdleArgs),
    /// SMTP submission at full speed, as smtp-source and postal do: --connections sessions send
    /// --messages generated messages in all as fast as the server accepts them.
    #[command(after_help = LOADGEN_SUBMIT_HELP)]
    Submit(LoadgenSubmitArgs),
    /// The largest user count the mail system carries with every check of `loadgen run`'s
    /// verdict passing: a ramp doubling from --start-users, a bisection of short steps (each a
    /// whole `loadgen run` of the first N users), the answer confirmed by repeated steps.
    #[command(after_help = LOADGEN_FIND_MAX_HELP)]
    FindMax(LoadgenFindMaxArgs),
}

const LOADGEN_FIND_MAX_HELP: &str = "\
Examples:
  sudo scripts/mailserver.sh start /tmp/mbxmail --users 400
  mbxstress loadgen find-max --server-env /tmp/mbxmail/server.env --start-users 50 --step 10m
  mbxstress loadgen find-max --server mail.example.com --users-file users.csv --domain example.com \\
                             --day 8h --step 20m --init-messages 0

Each step runs the first --step of the day (at the day's own rate) for the first N users given,
and passes when no check of its verdict failed (a check that judged nothing, such as a task type
too rare to have completed in the step, is listed, not failed). Mailboxes are filled with
--init-messages messages once, before the first step that runs them (0: they are filled already).
find-max.json and find-max.html (the curve, the knee marked) are written in the results folder;
Ctrl-C stops the step running and reports the largest count that passed so far.";

/// `mbxstress loadgen find-max`: `loadgen run`'s flags (but --duration, --stress, --partition,
/// --start-gate and --request) and the search's.
#[derive(Debug, Args)]
pub struct LoadgenFindMaxArgs {
    /// Every step's day: servers, users (the most tried), profile, client mix, thresholds.
    #[command(flatten)]
    pub run: LoadgenRunArgs,
    /// The first count tried (at least 2).
    #[arg(long, value_name = "N", default_value_t = 50, value_parser = parse_count)]
    pub start_users: u64,
    /// Each step's length: the first this long of the day, at the day's rate (LoadGen's
    /// compression is --day).
    #[arg(long, value_name = "DURATION", default_value = "10m", value_parser = crate::units::parse_duration)]
    pub step: std::time::Duration,
    /// Most search steps (confirmations and re-checks not counted), 1..=100.
    #[arg(long, value_name = "N", default_value_t = 12, value_parser = parse_count32)]
    pub max_steps: u32,
    /// Stop when a passing and a failing count are within this percent of the answer.
    #[arg(long, value_name = "PCT", default_value = "5", value_parser = parse_number)]
    pub resolution_pct: f64,
    /// Failed confirmation steps allowed before the answer is reported unconfirmed (0: no
    /// confirmation).
    #[arg(long, value_name = "N", default_value_t = 3, value_parser = parse_count32)]
    pub confirmations: u32,
    /// Messages each mailbox holds before its first step (`loadgen init`, resumable; 0: the
    /// mailboxes are filled already).
    #[arg(long, value_name = "N", default_value_t = 100, value_parser = parse_count32)]
    pub init_messages: u32,
    /// Mailboxes filled at once.
    #[arg(long, value_name = "N", default_value_t = 16, value_parser = parse_count32)]
    pub init_concurrency: u32,
}

const LOADGEN_IDLE_HELP: &str = "\
Examples:
  sudo scripts/mailserver.sh start /tmp/mbxmail --users 100 --connections 1100 --imap-client-limit 100
  mbxstress loadgen idle --server-env /tmp/mbxmail/server.env --connections 1000 --hold 60s
  mbxstress loadgen idle --imap imaps://mail.example.com --users-file users.csv --connections 5000

Only IMAP is used (--imap alone is enough; --server-env's IMAPS by default). Raise the open-files
limit (ulimit -n) above --connections. Memory per connection is (RSS at the hold's end - RSS
before the first connection) / connections open (Linux: /proc/self); CPU is this process's user
+ system time over the hold. The verdict passes when every connection was established and held.";

const LOADGEN_SUBMIT_HELP: &str = "\
Examples:
  /usr/sbin/smtp-sink -u nobody 127.0.0.1:2525 1024 &        # Postfix's test sink
  mbxstress loadgen submit --smtp smtp://127.0.0.1:2525 --connections 100 --messages 100000
  mbxstress loadgen submit --smtp smtp+starttls://mail.example.com:587 --auth-user u1@example.com \\
                           --password secret --from u1@example.com --to u2@example.com \\
                           --connections 10 --messages 1000 --message-kb 75

Each session says EHLO once (then STARTTLS and AUTH when asked) and sends MAIL, RCPT and DATA
per message, as smtp-source -d does (in one write when the server offers PIPELINING, unless
--no-pipelining); a refused message is counted and the session goes on, a
broken session is opened again. Every command is timed; messages/s, MB/s and this process's CPU
per message are in result.json (submit).";

const LOADGEN_INIT_HELP: &str = "\
Examples:
  sudo scripts/mailserver.sh start /tmp/mbxmail --users 50     # a private Postfix + Dovecot
  mbxstress loadgen init --server-env /tmp/mbxmail/server.env --messages 20
  mbxstress loadgen init --server mail.example.com --users-file users.csv --domain example.com \\
                         --mailbox-mb 250 --ca-file corp-ca.pem";

const LOADGEN_RUN_HELP: &str = "\
Examples:
  mbxstress loadgen run --server-env /tmp/mbxmail/server.env --day 3m --overload 10
  mbxstress loadgen run --server mail.example.com --users-file users.csv --domain example.com \\
                        --profile esrp.toml --day 8h --clients desktop_imap=80,pop3=20

The day: each user's tasks come from the action table of the profile (docs/loadgen.md), spread
over the simulated day and started at their time whatever the server does (open loop). The
verdict passes when tasks achieved >= --tasks-achieved-pct of those planned, unfinished tasks
never exceeded --overload x users (LoadGen's guard), every task type's 95th percentile from its
scheduled time <= --task-p95-ms, every copy sent was found exactly once and intact, and the
delivery latency's 95th percentile <= --delivery-p95-ms.";

/// Where loadgen's clients connect, and the users.
#[derive(Debug, Args)]
pub struct LoadgenConnArgs {
    /// The mail server: submission with STARTTLS on 587, IMAPS on 993, POP3S on 995 (override
    /// each with --smtp, --imap, --pop3).
    #[arg(long, value_name = "HOST")]
    pub server: Option<String>,
    /// SMTP submission as a URL: smtp+starttls://HOST:587, smtps://HOST:465 or smtp://HOST:25.
    #[arg(long, value_name = "URL")]
    pub smtp: Option<String>,
    /// IMAP as a URL: imaps://HOST:993, imap+starttls://HOST:143 or imap://HOST:143.
    #[arg(long, value_name = "URL")]
    pub imap: Option<String>,
    /// POP3 as a URL: pop3s://HOST:995, pop3+starttls://HOST:110 or pop3://HOST:110.
    #[arg(long, value_name = "URL")]
    pub pop3: Option<String>,
    /// The test server's DIR/server.env (scripts/mailserver.sh): its servers, CA, users,
    /// password and domain (flags given override them).
    #[arg(long, value_name = "FILE")]
    pub server_env: Option<PathBuf>,
    /// Trust the servers' certificates signed by this CA (PEM) instead of the system's store.
    #[arg(long, value_name = "PEM")]
    pub ca_file: Option<PathBuf>,
    /// Do not authenticate the servers' certificates (a lab server with a self-signed
    /// certificate): the traffic is encrypted, not authenticated.
    #[arg(long, conflicts_with = "ca_file")]
    pub insecure_tls: bool,
    /// SASL mechanism of SMTP submission.
    #[arg(long, value_name = "MECH", value_parser = ["plain", "login"], default_value = "plain")]
    pub smtp_auth: String,
    /// The name clients give in EHLO [default: this machine's name].
    #[arg(long, value_name = "NAME")]
    pub helo: Option<String>,
    /// Users from a template: this many, named by --user-template.
    #[arg(long, value_name = "N", value_parser = parse_count32, allow_negative_numbers = true)]
    pub users: Option<u32>,
    /// The users' login template, %d numbered from --first-user [default: loadgen%d].
    #[arg(long, value_name = "TEMPLATE")]
    pub user_template: Option<String>,
    /// The first number of the template.
    #[arg(long, value_name = "N", default_value_t = 1, value_parser = parse_count32)]
    pub first_user: u32,
    /// The template users' password (visible to other local users in `ps`: prefer
    /// --password-file; `fleet loadgen` passes it to hosts in a file of mode 0600, never on a
    /// command line).
    #[arg(long, value_name = "PASSWORD")]
    pub password: Option<String>,
    /// The template users' password, the first line of FILE (kept off the command line; make
    /// the file readable only by you, mode 0600).
    #[arg(long, value_name = "FILE", conflicts_with = "password")]
    pub password_file: Option<PathBuf>,
    /// Users from a file: `user:password` lines, or CSV `user,password[,address]`.
    #[arg(long, value_name = "FILE", conflicts_with_all = ["user_template", "password", "password_file"])]
    pub users_file: Option<PathBuf>,
    /// The mail domain of users given without one.
    #[arg(long, value_name = "DOMAIN")]
    pub domain: Option<String>,
    /// A profile file from `mbxstress size --profile-out`: messages per day and message size.
    #[arg(long, value_name = "FILE")]
    pub profile: Option<PathBuf>,
    /// Average message size, KB (x 1,024 bytes) [default: the profile's, else 75 as the
    /// Exchange calculator's].
    #[arg(long, value_name = "KB", value_parser = parse_number, allow_negative_numbers = true)]
    pub message_kb: Option<f64>,
    /// Seed of generated messages and the schedule.
    #[arg(long, value_name = "N", default_value_t = 1)]
    pub seed: u64,
    /// Drive only slice K of N of the users (contiguous, 1-based: `2/4` is the second
    /// quarter); each client machine of a fleet takes its own (`fleet loadgen` sets it).
    #[arg(long, value_name = "K/N")]
    pub partition: Option<String>,
    /// Results folder [default: mbxstress-results/loadgen-<phase>-<time>].
    #[arg(long, value_name = "DIR")]
    pub out: Option<PathBuf>,
    /// Progress display: human (default), jsonl (events as JSON lines on stdout), quiet.
    #[arg(long, value_name = "MODE", value_enum, default_value_t = ProgressMode::Human)]
    pub progress: ProgressMode,
}

/// `mbxstress loadgen init`.
#[derive(Debug, Args)]
pub struct LoadgenInitArgs {
    /// Servers, users, profile, output.
    #[command(flatten)]
    pub conn: LoadgenConnArgs,
    /// Messages each mailbox should hold [default: 100].
    #[arg(long, value_name = "N", value_parser = parse_count32, allow_negative_numbers = true,
          conflicts_with = "mailbox_mb")]
    pub messages: Option<u32>,
    /// Mailbox size to reach instead, MB: messages = size / average message size.
    #[arg(long, value_name = "MB", value_parser = parse_number, allow_negative_numbers = true)]
    pub mailbox_mb: Option<f64>,
    /// Mailboxes filled at once.
    #[arg(long, value_name = "N", default_value_t = 16, value_parser = parse_count32)]
    pub concurrency: u32,
    /// Messages per MULTIAPPEND (1: one APPEND each).
    #[arg(long, value_name = "N", default_value_t = 16, value_parser = parse_count32)]
    pub batch: u32,
}

/// `mbxstress loadgen run`.
#[derive(Debug, Args)]
pub struct LoadgenRunArgs {
    /// Servers, users, profile, output.
    #[command(flatten)]
    pub conn: LoadgenConnArgs,
    /// Messages sent + received per mailbox per day, 50..=500 [default: the profile's, else
    /// 150].
    #[arg(long, value_name = "N", value_parser = parse_count32, allow_negative_numbers = true)]
    pub messages_per_day: Option<u32>,
    /// The simulated day's length (LoadGen's default: 8h; e.g. 3m for a compressed day).
    #[arg(long, value_name = "DURATION", default_value = "8h", value_parser = crate::units::parse_duration)]
    pub day: std::time::Duration,
    /// Simulated days run one after another.
    #[arg(long, value_name = "N", default_value_t = 1, value_parser = parse_count32)]
    pub days: u32,
    /// Client types and their shares: desktop_imap (one session a day), webmail (a short
    /// session per task), pop3 (downloads and deletes), eas (an ActiveSync phone; needs
    /// --eas).
    #[arg(
        long,
        value_name = "TYPE=PCT,...",
        default_value = "desktop_imap=70,webmail=20,pop3=10"
    )]
    pub clients: String,
    /// The eas users' Exchange ActiveSync endpoint, http(s)://HOST[:PORT][/PATH] (the path
    /// /Microsoft-Server-ActiveSync when none: Exchange's; SOGo without a rewriting web server:
    /// /SOGo/Microsoft-Server-ActiveSync). https uses --ca-file / --insecure-tls as the others.
    #[arg(long, value_name = "URL")]
    pub eas: Option<String>,
    /// eas devices hold a parked Ping on their Inbox between tasks, renewed at this heartbeat
    /// (push, as phones wait); new mail it reports is checked at once [default: no Ping, new
    /// mail seen at the checks]. Each parked Ping is an open request the server holds.
    #[arg(long, value_name = "DURATION", value_parser = crate::units::parse_duration)]
    pub eas_ping: Option<std::time::Duration>,
    /// LoadGen's guard: stop when unfinished tasks exceed this many per user.
    #[arg(long, value_name = "X", default_value = "1.5", value_parser = parse_number)]
    pub overload: f64,
    /// After the last task, how long copies not yet seen are looked for.
    #[arg(long, value_name = "DURATION", default_value = "60s", value_parser = crate::units::parse_duration)]
    pub grace: std::time::Duration,
    /// Verdict: tasks completed, percent of tasks planned, at least.
    #[arg(long, value_name = "PCT", default_value = "99", value_parser = parse_number)]
    pub tasks_achieved_pct: f64,
    /// Verdict: every task type's 95th percentile latency from its scheduled time, ms, at most
    /// (LoadSim scored the 95th percentile).
    #[arg(long, value_name = "MS", default_value = "1000", value_parser = parse_number)]
    pub task_p95_ms: f64,
    /// Verdict: delivery latency's 95th percentile (SMTP acceptance to the copy seen in the
    /// recipient's mailbox), ms, at most.
    #[arg(long, value_name = "MS", default_value = "60000", value_parser = parse_number)]
    pub delivery_p95_ms: f64,
    /// samples.jsonl's interval.
    #[arg(long, value_name = "DURATION", default_value = "5s", value_parser = crate::units::parse_duration)]
    pub sample_interval: std::time::Duration,
    /// The test's length: tasks scheduled after it are not run, then the grace sweep
    /// [default: --day x --days; required with --stress].
    #[arg(long, value_name = "DURATION", value_parser = crate::units::parse_duration)]
    pub duration: Option<std::time::Duration>,
    /// Stress mode (LoadGen's): each user's tasks back to back, the next as soon as the
    /// previous ends, until --duration or the days' tasks are done; task latency checks judge
    /// service time.
    #[arg(long, requires = "duration")]
    pub stress: bool,
    /// Used by `fleet loadgen`: after the baseline, say `ready` and wait for a line
    /// `start <unix seconds>` on stdin; the day starts at that wall time. `stop` on stdin, or
    /// its end, stops the run.
    #[arg(long, value_name = "stdin", value_parser = ["stdin"], hide = true)]
    pub start_gate: Option<String>,
    /// Plumbing for `fleet loadgen`: run the resolved request in FILE (written by the
    /// coordinator, this version's) instead of the flags; only --password-file, --out (the
    /// request's), --progress and --start-gate apply beside it.
    #[arg(long, value_name = "FILE", hide = true)]
    pub request: Option<PathBuf>,
}

/// `mbxstress loadgen idle`.
#[derive(Debug, Args)]
pub struct LoadgenIdleArgs {
    /// Servers, users, output.
    #[command(flatten)]
    pub conn: LoadgenConnArgs,
    /// IMAP connections opened and held (users cycled over them), 1..=1000000.
    #[arg(long, value_name = "N", value_parser = parse_count32, allow_negative_numbers = true)]
    pub connections: u32,
    /// How long every connection is held in IDLE once all were tried.
    #[arg(long, value_name = "DURATION", default_value = "60s", value_parser = crate::units::parse_duration)]
    pub hold: std::time::Duration,
    /// Connections being established at once (TCP, TLS, LOGIN, SELECT, IDLE).
    #[arg(long, value_name = "N", default_value_t = 100, value_parser = parse_count32)]
    pub concurrency: u32,
    /// samples.jsonl's interval.
    #[arg(long, value_name = "DURATION", default_value = "1s", value_parser = crate::units::parse_duration)]
    pub sample_interval: std::time::Duration,
}

/// `mbxstress loadgen submit`.
#[derive(Debug, Args)]
pub struct LoadgenSubmitArgs {
    /// The submission server: smtp://HOST:25 (plain), smtp+starttls://HOST:587 or
    /// smtps://HOST:465.
    #[arg(long, value_name = "URL")]
    pub smtp: String,
    /// Sessions at once.
    #[arg(long, value_name = "N", default_value_t = 10, value_parser = parse_count32)]
    pub connections: u32,
    /// Messages in all.
    #[arg(long, value_name = "M", value_parser = parse_count32)]
    pub messages: u32,
    /// Each message's size, KB (x 1,024 bytes, headers included; text only).
    #[arg(long, value_name = "KB", default_value = "10", value_parser = parse_number, allow_negative_numbers = true)]
    pub message_kb: f64,
    /// One command at a time even when the server offers PIPELINING (by default MAIL, RCPT and
    /// DATA go in one write then, as Postfix's own client does: two round trips per message).
    #[arg(long)]
    pub no_pipelining: bool,
    /// Sizes from the LoadSim message mix around --message-kb (attachments included) instead of
    /// every message that size.
    #[arg(long)]
    pub mixed_sizes: bool,
    /// The envelope sender [default: mbxstress@ the EHLO name].
    #[arg(long, value_name = "ADDR")]
    pub from: Option<String>,
    /// An envelope recipient of every message (repeat for more) [default: the sender].
    #[arg(long, value_name = "ADDR")]
    pub to: Vec<String>,
    /// AUTH as this user after EHLO (and STARTTLS) [default: no AUTH].
    #[arg(long, value_name = "USER", requires = "password")]
    pub auth_user: Option<String>,
    /// The AUTH user's password.
    #[arg(long, value_name = "PASSWORD", requires = "auth_user")]
    pub password: Option<String>,
    /// SASL mechanism of AUTH.
    #[arg(long, value_name = "MECH", value_parser = ["plain", "login"], default_value = "plain")]
    pub smtp_auth: String,
    /// Trust the server's certificate signed by this CA (PEM) instead of the system's store.
    #[arg(long, value_name = "PEM")]
    pub ca_file: Option<PathBuf>,
    /// Do not authenticate the server's certificate (a lab server).
    #[arg(long, conflicts_with = "ca_file")]
    pub insecure_tls: bool,
    /// The name given in EHLO [default: this machine's name].
    #[arg(long, value_name = "NAME")]
    pub helo: Option<String>,
    /// Client threads (0: automatic: one for plain SMTP, one per core with TLS).
    #[arg(long, value_name = "N", default_value_t = 0)]
    pub threads: u32,
    /// Seed of the generated messages.
    #[arg(long, value_name = "N", default_value_t = 1)]
    pub seed: u64,
    /// Results folder [default: mbxstress-results/loadgen-submit-<time>].
    #[arg(long, value_name = "DIR")]
    pub out: Option<PathBuf>,
    /// Progress display: human (default), jsonl (events as JSON lines on stdout), quiet.
    #[arg(long, value_name = "MODE", value_enum, default_value_t = ProgressMode::Human)]
    pub progress: ProgressMode,
}

/// `mbxstress fleet`.
#[derive(Debug, Subcommand)]
pub enum FleetCommand {
    /// Run the test on every host of --hosts over SSH (the system `ssh` client, so
    /// ~/.ssh/config, agents, keys and jump hosts apply), with a synchronized measured phase.
    #[command(after_help = FLEET_RUN_HELP)]
    Run(FleetRunArgs),
    /// Run `loadgen run` on every client host of --hosts over SSH, each its own slice of the
    /// users, with one synchronized start; merge their results into one (histograms merged)
    /// and watch the mail servers' CPU, memory and disks.
    #[command(after_help = FLEET_LOADGEN_HELP)]
    Loadgen(FleetLoadgenArgs),
}

const FLEET_LOADGEN_HELP: &str = "\
The hosts file (TOML): one [[host]] table per client machine, and optionally one [[server]]
table per mail server to watch:
  [[host]]
  ssh = \"admin@client1.example.com\" # as ssh takes it
  name = \"client1\"                  # its results folder under --out [default: from ssh]
  mbxstress = \"/opt/mbxstress\"      # optional: the remote binary [default: mbxstress on PATH]
  work_dir = \".mbxstress\"           # optional: remote folder for runs and pushed binaries
  [[server]]
  ssh = \"root@mail1.example.com\"    # sampled over ssh from /proc (Linux) during the run
  name = \"mail1\"

Each client host is checked (reachable, same version or --push, clock offset), then runs
`loadgen run --partition K/N`: client K of N takes the K-th contiguous slice of the users, so no
user is on two clients, and its users send to users of its own slice (each client proves its
own deliveries). After its baseline each client says it is ready; once all are, the coordinator
sends one start time and their days begin together. Results: --out/<name>/ (each client's
folder), --out/result.json and report.html (the merged result: counts summed, latency
histograms merged, never averaged, a section per client and per server), --out/servers/<name>.jsonl
(the servers' samples), --out/fleet.json. A client that fails is reported with its last state,
the others go on, and the merged result fails its `clients_merged` check (exit 3).

Loadgen flags (all but --partition) apply to every client; --profile, --users-file, --ca-file
and --server-env files are copied to each client (a server.env's CA path is used as written).

Example:
  mbxstress fleet loadgen --hosts clients.toml --server mail.example.com --users 16000 \\
      --password secret --domain example.com --day 8h --out loadgen-fleet";

const FLEET_RUN_HELP: &str = "\
The hosts file (TOML), one [[host]] table per server:
  [[host]]
  ssh = \"admin@mbx1.example.com\"   # a destination as ssh takes it (aliases of ~/.ssh/config too)
  name = \"mbx1\"                     # the results folder under --out [default: from ssh]
  db_path = [\"/mnt/db1\", \"/mnt/db2\"] # as --db-path: a folder, or one path per database
  log_path = \"/mnt/log\"             # as --log-path
  profile = \"mbx1-profile.toml\"     # optional: a local profile file, copied to the host
  mbxstress = \"/opt/mbxstress\"      # optional: the remote binary [default: mbxstress on PATH]
  work_dir = \".mbxstress\"           # optional: remote folder for runs and pushed binaries

Before anything runs, every host is checked (at most --fanout at once, default 32): reachable
(ssh with BatchMode=yes: keys or an agent, never a password), the same mbxstress version (or
--push: the static Linux build is copied to WORK_DIR/bin under a temporary name, verified by
SHA-256 and renamed; a verified copy already there is reused), its clock offset measured. Each
host runs in WORK_DIR/fleet/<run id>/<name>/, so hosts sharing a home never share files. Every
host then prepares its databases, meets the cache prerequisite and settles; once all are ready
the coordinator sends each the same start time (now + --start-margin, in each host's clock) and
they measure together. Results: --out/<name>/ (each host's folder, copied back),
--out/fleet.json (hosts, clock offsets, start skew, the ESRP summary across the hosts that
measured) and --out/fleet.html. A host that fails is reported with its last state; the others
complete and the aggregate is marked partial (exit 3). Ctrl-C (or SIGTERM) stops every remote
run cleanly and collects the partial results (exit 130); a host that does not answer within
--host-timeout is given up; a second Ctrl-C stops waiting at once. fleet.json is written from
the start and kept up to date (partial until the end).

Run flags (all but --db-path, --log-path, --jetstress-config and --test suite) apply to every
host; --config and --profile files are copied to each host.

Example:
  mbxstress fleet run --hosts hosts.toml --mailboxes 2000 --iops-per-mailbox 0.1 \\
      --quota-mb 1024 --databases 4 --threads 16 --duration 2h --out fleet-results";

/// `mbxstress fleet run`.
#[derive(Debug, Args)]
pub struct FleetRunArgs {
    /// The hosts, ssh, push, start and watchdog flags.
    #[command(flatten)]
    pub fleet: FleetArgs,
    /// The run flags, applied to every host.
    #[command(flatten)]
    pub run: RunArgs,
}

/// `mbxstress fleet loadgen`.
#[derive(Debug, Args)]
pub struct FleetLoadgenArgs {
    /// The hosts, ssh, push, start and watchdog flags.
    #[command(flatten)]
    pub fleet: FleetArgs,
    /// How often each [[server]] of the hosts file is sampled.
    #[arg(long, value_name = "DURATION", default_value = "5s", value_parser = crate::units::parse_duration)]
    pub server_interval: std::time::Duration,
    /// The loadgen run flags, applied to every client.
    #[command(flatten)]
    pub run: LoadgenRunArgs,
}

/// The flags of every fleet command.
#[derive(Debug, Args)]
pub struct FleetArgs {
    /// The hosts file (TOML, `[[host]]` tables; see below).
    #[arg(long, value_name = "FILE")]
    pub hosts: PathBuf,
    /// An ssh configuration file, passed to every ssh as `-F FILE`.
    #[arg(long, value_name = "FILE")]
    pub ssh_config: Option<PathBuf>,
    /// Copy the static Linux build of this version (x86_64-unknown-linux-musl) to hosts whose
    /// version differs (or that have none); see --push-binary.
    #[arg(long)]
    pub push: bool,
    /// The binary --push copies [default: this binary if it is the static build, else
    /// target/x86_64-unknown-linux-musl/{static,this profile,release}/mbxstress beside this
    /// build, made by `cargo build --profile static --target x86_64-unknown-linux-musl -p
    /// mbxstress`]. Implies --push.
    #[arg(long, value_name = "FILE")]
    pub push_binary: Option<PathBuf>,
    /// At most this many hosts checked at once (ssh connections opened and closed), as pdsh's
    /// fan-out; the run itself keeps one connection per host open.
    #[arg(long, value_name = "N", default_value_t = 32, value_parser = clap::value_parser!(u32).range(1..=4096))]
    pub fanout: u32,
    /// Time between the last host being ready and the synchronized start (0.1s..=10m), enough
    /// for the start line to reach every host.
    #[arg(long, value_name = "DURATION", default_value = "3s", value_parser = crate::units::parse_duration)]
    pub start_margin: std::time::Duration,
    /// Stop every host when one fails (default: the others go on).
    #[arg(long)]
    pub abort_on_host_failure: bool,
    /// The watchdog: a host that sends no event for this long (its run sends one a second) is
    /// failed, its ssh ended and its remote run stopped; the others go on. Also the time a host
    /// whose connection dropped gets to finish its result. During the setup, before its first
    /// event, a host gets at least 10 minutes [default: 10 sample intervals, at least 60s].
    #[arg(long, value_name = "DURATION", value_parser = crate::units::parse_duration)]
    pub host_timeout: Option<std::time::Duration>,
}

const IMPORT_HELP: &str = "\
Reads a Jetstress HTML report, or its tables as text copied out of the page or a PDF
(tab-separated rows or markdown pipe tables). Recognizes the Transactional, Total, Background Database Maintenance and Log Replication I/O
tables, Database Backup Statistics and Soft-Recovery Statistics, and the achieved and target IOPS.
Numbers are kept as the report prints them; typed summaries (achieved IOPS, Avg/Sum rows) that
disagree with the per-instance rows beyond rounding are listed as discrepancies.

Examples:
  mbxstress import Performance_2014_5_6.html
  mbxstress import report-tables.txt --json";

const ESRP_HELP: &str = "\
Per server (from the Transactional I/O table): database transfers/s = sum of reads/s + writes/s,
reads/s and writes/s summed, read and write latency averaged over instances, log writes/s summed,
log write latency averaged. Aggregate: sums of the server sums, means of the server means.
Backup: MB/s per database (Avg row) and per server (Sum row). Soft recovery: average elapsed /
average logs replayed.

Examples:
  mbxstress esrp server1/result.json server2/result.json
  mbxstress esrp perf.txt backup.txt softrecovery.txt --json";

/// `mbxstress report`.
#[derive(Debug, Args)]
pub struct ReportArgs {
    /// A result folder, or its result.json.
    #[arg(value_name = "RESULT_DIR|result.json")]
    pub input: PathBuf,
    /// Where to write the files [default: the result folder].
    #[arg(long, value_name = "DIR")]
    pub out: Option<PathBuf>,
    /// What to write (repeat the flag, or separate with commas): html (report.html), csv
    /// (instances.csv, samples.csv), json (result.json, never over an existing file: use it with
    /// --out) [default: html,csv].
    #[arg(long, value_name = "FORMAT", value_delimiter = ',')]
    pub format: Vec<Format>,
}

/// `mbxstress compare`.
#[derive(Debug, Args)]
pub struct CompareArgs {
    /// The first result: a result folder, its result.json, or a Jetstress report as text.
    #[arg(value_name = "A")]
    pub a: PathBuf,
    /// The second result.
    #[arg(value_name = "B")]
    pub b: PathBuf,
    /// Print JSON.
    #[arg(long)]
    pub json: bool,
}

/// `mbxstress import`.
#[derive(Debug, Args)]
pub struct ImportArgs {
    /// The report file.
    #[arg(value_name = "FILE")]
    pub file: PathBuf,
    /// Print the imported model as JSON.
    #[arg(long)]
    pub json: bool,
}

/// `mbxstress esrp`.
#[derive(Debug, Args)]
pub struct EsrpArgs {
    /// result.json files and/or Jetstress reports as text; a result folder stands for its
    /// result.json, and a `run --test suite` folder for its Performance, Backup and Soft Recovery
    /// results.
    #[arg(value_name = "FILE", required = true)]
    pub files: Vec<PathBuf>,
    /// Print JSON (servers, aggregate, backup, soft_recovery, discrepancies).
    #[arg(long)]
    pub json: bool,
}

const FIND_MAX_HELP: &str = "\
Each step is a short Performance run (attain the cache, wait until every instance's read latency
is stable, measure for --tuning-step) at the target of its mailbox count, with --threads sessions
or Little's law at the latency earlier steps measured (target x 2 x (read average + log write
average / 4); one per 25 IOPS before anything is measured). The databases are prepared once for
--mailboxes x --quota-mb.
Outputs in --out: find-max.json (the answer and every step: IOPS and latency percentiles),
find-max.html (table and charts), test.log. Exit 0 with an answer, 1 when no count passed.

Example: mbxstress find-max --mailboxes 1000 --iops-per-mailbox 0.12 --quota-mb 10 --databases 2";

/// `find-max` flags: the run flags, plus the search's.
#[derive(Debug, clap::Args)]
pub struct FindMaxArgs {
    /// The run flags (profile, paths, thresholds...); --mailboxes is where the ramp starts.
    #[command(flatten)]
    pub run: RunArgs,
    /// Most steps (1..=64).
    #[arg(long, value_name = "N", default_value_t = 12, value_parser = clap::value_parser!(u32).range(1..=64))]
    pub max_steps: u32,
    /// Stop when a passing and a failing count are within this percent of each other (0.1..=50).
    #[arg(long, value_name = "PCT", default_value_t = 2.0, value_parser = parse_resolution)]
    pub resolution_pct: f64,
}

fn parse_resolution(s: &str) -> Result<f64, String> {
    let v = parse_number(s)?;
    if (0.1..=50.0).contains(&v) {
        Ok(v)
    } else {
        Err(format!("{v} is outside 0.1..=50"))
    }
}

const RUN_HELP: &str = "\
Phases: prepare (create or attach the databases) -> attain the cache prerequisite (90% full) ->
settle (one dirty-page age at the target rate) -> measure for --duration -> shut down.

Sessions are paced so that transactional IOPS track the target (mailboxes x IOPS per mailbox).
The verdict uses Jetstress's Performance thresholds: DB read latency avg <= 20 ms and max <= 100 ms,
log write latency avg <= 10 ms and max <= 100 ms, page fault stalls <= 1/s, achieved IOPS >= 95% of
target, plus no data integrity errors. Exit code 1 if it fails, 130 if interrupted (a partial
result is written).

Errors, as in Jetstress 2013: the first I/O error or damaged page stops the test (exit 3; the file,
offset, page and errno are in result.json's errors). --continue-on-errors counts them per instance
and runs on (a full disk still stops it); the verdict fails either way. With --copies above 1 a
damaged page is patched (rewritten from its known content), counted, and the test runs on.

Settings are taken from, in increasing priority: built-in defaults (the quick demonstration),
--config FILE (TOML; keys as in result.json's \"config\"; unknown keys are errors), --profile FILE
(from `mbxstress size --profile-out`), then flags.

--test soft-recovery: generate --log-files-to-replay log files per database with the transaction
mix (circular logging off, checkpoint held), stop without a clean shutdown (dirty pages unwritten),
then replay the logs from the checkpoint into the databases; reports log files replayed and
seconds per database, their Avg and Sum, and seconds per log.

--test stress: the Performance workload on Jetstress's Lenient thresholds (maximum latencies
200 ms; a [thresholds] key in --config wins) for --duration (default 24h), then the checksum pass
over the same databases and their log files; its verdict includes the pass.

--test suite: Performance (--duration, default 2h) -> Stress (--stress-duration, default 24h) ->
Backup -> Soft Recovery -> Checksum on the same databases, one folder each under --out
(1-performance/ ... 5-checksum/), then esrp.txt and esrp.json there, and suite.html (each
test's verdict with a link to its report, and the ESRP summary; rewritten after every test). A
failed verdict goes on to the next test (the suite fails); an error or Ctrl-C ends the suite. Run
the same command again to resume: tests that ran to completion are skipped, an incomplete one's
folder is moved aside (NAME.interrupted-N) and the test run again.

Outputs in --out (default ./mbxstress-results/<time>/): result.json, samples.jsonl (one line per
sample, written as the test runs), test.log.

Examples:
  mbxstress run
  mbxstress run --profile esrp-server.toml --duration 2h --db-path /mnt/db --log-path /mnt/log
  mbxstress run --mailboxes 5000 --iops-per-mailbox 0.12 --quota-mb 2048 --databases 6 --copies 2 \\
      --threads 26 --duration 30m --progress jsonl";

const DOCTOR_HELP: &str = "\
Checks every database and log location of the test the run flags describe (--profile, --db-path,
--log-path, ...): the device's write cache and FUA, a write-through probe (--probe-writes 4 KiB
O_DIRECT|O_DSYNC writes in a temporary file in the log folder, removed after; data files are never
touched), the queue depth along the path against the I/O the test will keep outstanding, the
filesystem, partition alignment, O_DIRECT, discard, databases and logs on one device, free space
with a 25% growth reserve, data reduction, the hypervisor and virtual controller, CPUs, clock
synchronization and memory. Each check: ok, warn, fail or unknown, the measured fact, why it
matters (with the source) and the fix. `run` performs the fast subset first and records it in
result.json (`doctor`); a finding never changes a verdict.

Exit code 0 when nothing fails (warnings included), 1 when a check fails, 2 on a usage error.
--json prints {schema: \"mbxstress.doctor/1\", fast, checks: [{name, subject, status, fact, why,
fix}]}.

Examples:
  mbxstress doctor --db-path /mnt/db --log-path /mnt/log --profile esrp-server.toml
  mbxstress doctor --mailboxes 5000 --iops-per-mailbox 0.5 --quota-mb 2048 --databases 4 --json";

/// `mbxstress doctor`: the run flags, plus doctor's own.
#[derive(Debug, clap::Args)]
pub struct DoctorArgs {
    /// The run flags (profile, paths, thresholds...) of the test to check for.
    #[command(flatten)]
    pub run: RunArgs,
    /// Print the checks as JSON (schema mbxstress.doctor/1) instead of a table.
    #[arg(long)]
    pub json: bool,
    /// Writes of the write-through probe per location (10..=10,000; at most 10 s).
    #[arg(long, value_name = "N", default_value_t = 200, value_parser = clap::value_parser!(u32).range(10..=10_000))]
    pub probe_writes: u32,
}

/// A Jetstress configuration as the starting point (`run`, `prepare`).
#[derive(Debug, Args)]
pub struct JetstressArgs {
    /// Start from a Jetstress 2013 configuration (JetstressConfig.xml): test type, duration,
    /// profile, thread count, thresholds, operation mix, database and log paths. Flags given
    /// as well override it; elements mbxstress does not act on are listed with the reason.
    #[arg(long, value_name = "FILE")]
    pub jetstress_config: Option<PathBuf>,
    /// Map a Windows path prefix of the --jetstress-config file to a local one, e.g.
    /// 'E:\=/mnt/e/' (repeatable; the longest matching prefix wins).
    /// (`export jetstress-config`: the same rules read backwards, local to Windows.)
    #[arg(long, value_name = "FROM=TO")]
    pub map_path: Vec<String>,
}

/// `mbxstress export`.
#[derive(Debug, clap::Subcommand)]
pub enum ExportCommand {
    /// JetstressConfig.xml (Jetstress 2013) for the run the flags describe, or for a result, to
    /// stdout. Paths are written as Windows paths by the --map-path rules read backwards
    /// (--map-path 'E:\=/mnt/e/' writes /mnt/e/db1 as E:\db1).
    #[command(
        after_help = "Examples:\n  mbxstress export jetstress-config --profile esrp.toml --db-path /mnt/e/db --log-path /mnt/e/log --map-path 'E:\\=/mnt/e/' > JetstressConfig.xml\n  mbxstress export jetstress-config --from-result mbxstress-results/x --map-path 'E:\\=/mnt/e/'"
    )]
    JetstressConfig(ExportJetstressArgs),
}

/// `mbxstress export jetstress-config`.
#[derive(Debug, Args)]
pub struct ExportJetstressArgs {
    /// Export the configuration of this result (result.json or its folder) instead of one
    /// described by the run flags.
    #[arg(long, value_name = "PATH")]
    pub from_result: Option<PathBuf>,
    /// `DatabaseSource` Open (attach the existing databases) instead of New.
    #[arg(long)]
    pub attach_existing: bool,
    /// The run, described as for `mbxstress run` (its --out and --progress are not used).
    #[command(flatten)]
    pub run: RunArgs,
}

/// `mbxstress run`.
#[derive(Debug, Args)]
pub struct RunArgs {
    /// Test type: performance (paced transactions), stress (the same for 24 h, lenient
    /// thresholds, then a checksum), backup (read every database sequentially), soft-recovery
    /// (generate logs, stop without a clean shutdown, replay them), checksum (verify every page
    /// of existing databases and their logs) or suite (all five in turn, then the ESRP summary).
    /// [default: performance, or the --jetstress-config file's Type]
    #[arg(long, value_enum, value_name = "TYPE")]
    pub test: Option<RunTest>,
    /// Start from a TOML configuration file (strict).
    #[arg(long, value_name = "FILE", conflicts_with = "jetstress_config")]
    pub config: Option<PathBuf>,
    /// Start from a Jetstress 2013 configuration (JetstressConfig.xml).
    #[command(flatten)]
    pub jetstress: JetstressArgs,
    /// Take mailboxes, IOPS per mailbox, quota, databases and copies from a sizing profile.
    #[arg(long, value_name = "FILE")]
    pub profile: Option<PathBuf>,
    /// Mailboxes on this server (1..=10,000,000).
    #[arg(long, value_name = "N", value_parser = parse_count, allow_negative_numbers = true)]
    pub mailboxes: Option<u64>,
    /// Target transactional IOPS per mailbox, headroom included (above 0, at most 100; the
    /// target, mailboxes x this, must be 1..=1,000,000 IOPS).
    #[arg(long, value_name = "IOPS", value_parser = parse_number, allow_negative_numbers = true)]
    pub iops_per_mailbox: Option<f64>,
    /// Mailbox quota, MB (1..=102,400).
    #[arg(long, value_name = "MB", value_parser = parse_count, allow_negative_numbers = true)]
    pub quota_mb: Option<u64>,
    /// Databases (1..=100).
    #[arg(long, value_name = "N", value_parser = parse_count32, allow_negative_numbers = true)]
    pub databases: Option<u32>,
    /// Copies per database (1-3; more than 1 adds log replication reads).
    #[arg(long, value_name = "N", value_parser = parse_count32, allow_negative_numbers = true)]
    pub copies: Option<u32>,
    /// Sessions ("threads"), global across databases: 1..=1024, or `auto` [default: auto: a
    /// Performance or Stress test first tunes it: the smallest count that meets the target
    /// within every threshold, as Jetstress does, then twice that as headroom for stalls; other
    /// tests use 4 per database]. A number suppresses tuning.
    #[arg(long, value_name = "N|auto", value_parser = parse_threads, allow_negative_numbers = true)]
    pub threads: Option<u32>,
    /// Measured length of each automatic tuning step (1s..=1h) [default: the duration / 120,
    /// within 5s..=1m, lengthened up to 1m at small targets until a step counts 1 / margin^2
    /// transactions]; the step first waits for stable read latency (at most as long again).
    #[arg(long, value_name = "DURATION", value_parser = crate::units::parse_duration)]
    pub tuning_step: Option<std::time::Duration>,
    /// Most automatic tuning steps before it settles for the best count so far, or fails if
    /// none passed (1..=64) [default: 8].
    #[arg(long, value_name = "N", value_parser = parse_count32, allow_negative_numbers = true)]
    pub tuning_max_steps: Option<u32>,
    /// Reactors (event-loop threads) the databases are partitioned among (0..=1024; 1 runs the
    /// whole test on one thread; 0 = one per core, never more than the databases) [default: 0].
    #[arg(long, value_name = "N", value_parser = parse_count32, allow_negative_numbers = true)]
    pub reactors: Option<u32>,
    /// Percent of transactional page reads whose whole 32 KiB page is checksummed (0-100); 100
    /// checksums every read, as ESE does; below it (for CPU-bound hosts) the others are verified
    /// by header and per-4 KiB-block stamps; BDM reads always checksum [default: 100].
    #[arg(long, value_name = "PCT", value_parser = clap::value_parser!(u8).range(0..=100), allow_negative_numbers = true)]
    pub checksum_reads_pct: Option<u8>,
    /// Measured duration, e.g. 90s, 30m, 2h (1s..=30d) [default: 60s for the demonstration].
    #[arg(long, value_name = "DURATION", value_parser = crate::units::parse_duration)]
    pub duration: Option<std::time::Duration>,
    /// --test suite: the Stress test's measured duration (1s..=30d) [default: 24h; --duration
    /// is the Performance test's, default 2h in a suite].
    #[arg(long, value_name = "DURATION", value_parser = crate::units::parse_duration)]
    pub stress_duration: Option<std::time::Duration>,
    /// Sample interval (1s..=1h) [default: 15s, or less in a short run: the duration / (2 x
    /// (--max-latency-errors + 1)) within 1s..15s, so the maximum-latency checks can judge].
    #[arg(long, value_name = "DURATION", value_parser = crate::units::parse_duration)]
    pub sample_interval: Option<std::time::Duration>,
    /// Background database maintenance.
    #[arg(long, value_name = "on|off", value_parser = ["on", "off"])]
    pub bdm: Option<String>,
    /// Database and log locations.
    #[command(flatten)]
    pub paths: StorePaths,
    /// Results folder [default: ./mbxstress-results/<time>].
    #[arg(long, value_name = "DIR")]
    pub out: Option<PathBuf>,
    /// I/O backend.
    #[command(flatten)]
    pub engine: EngineArgs,
    /// Compressibility of newly created database pages, percent.
    #[arg(long, value_name = "PCT", value_parser = clap::value_parser!(u8).range(0..=99))]
    pub compressibility_pct: Option<u8>,
    /// Seed of the workload's random choices.
    #[arg(long, value_name = "N")]
    pub seed: Option<u64>,
    /// Progress display: human (default), jsonl (events as JSON lines on stdout), quiet.
    #[arg(long, value_name = "MODE", value_enum, default_value_t = ProgressMode::Human)]
    pub progress: ProgressMode,
    /// Overwrite files that are not mbxstress databases, or databases with other parameters.
    #[arg(long)]
    pub force: bool,
    /// Allow unused block devices as database paths (a mounted or in-use device is refused; one
    /// holding a filesystem, LVM, RAID, swap, a partition table or other data needs --force too).
    #[arg(long)]
    pub allow_device: bool,
    /// Soft Recovery: log files generated per database, then replayed (Jetstress
    /// LogFilesToReplay; default 500).
    #[arg(long, value_name = "N", value_parser = parse_count, allow_negative_numbers = true)]
    pub log_files_to_replay: Option<u64>,
    /// Keep running after an I/O error (a full disk always stops) or a damaged page, counting
    /// them per instance, instead of stopping at the first one (Jetstress ContinueOnErrors).
    /// The verdict fails either way.
    #[arg(long)]
    pub continue_on_errors: bool,
    /// How transactions start: closed (idle sessions take due start slots, as Jetstress does;
    /// the default) or open (transactions arrive on schedule whatever the storage does, wait in
    /// a backlog when no session is free, and latency is also measured from the arrival).
    #[arg(long, value_enum, value_name = "MODE")]
    pub pacing: Option<mbx_config::Pacing>,
    /// --pacing open: how arrivals are spaced [default: poisson].
    #[arg(long, value_enum, value_name = "KIND")]
    pub arrivals: Option<mbx_config::Arrivals>,
    /// --pacing open: an arrival waiting longer than this for a session is dropped (counted),
    /// e.g. 0.5s, 10s, 2m (0.001s..=1h) [default: 10s].
    #[arg(long, value_name = "DURATION", value_parser = crate::units::parse_duration)]
    pub max_backlog: Option<std::time::Duration>,
    /// Samples per instance whose average latency may exceed a maximum-latency threshold before
    /// that check fails (Jetstress MaximumLatencyErrors; 0 = strict; at most 10,000)
    /// [default: 6].
    #[arg(long, value_name = "N", value_parser = parse_count32, allow_negative_numbers = true)]
    pub max_latency_errors: Option<u32>,
    /// The disk subsystem throughput test (Jetstress's second category): size the databases
    /// from this percent of the free space of their volume(s), 25% of it reserved for growth
    /// (above 0, at most 100; fractions allowed), find the maximum transactional IOPS on them,
    /// then run the test at --throughput-pct of it. Replaces the mailbox profile.
    #[arg(long, value_name = "PCT", value_parser = parse_number, allow_negative_numbers = true,
          conflicts_with_all = ["mailboxes", "quota_mb", "iops_per_mailbox", "profile"])]
    pub capacity_pct: Option<f64>,
    /// The disk subsystem throughput test: percent of the maximum IOPS found that the test
    /// holds (1..=100) [default: 100].
    #[arg(long, value_name = "PCT", value_parser = parse_number, allow_negative_numbers = true,
          conflicts_with_all = ["mailboxes", "quota_mb", "iops_per_mailbox", "profile"])]
    pub throughput_pct: Option<f64>,
    /// Plumbing for `fleet run`: after the settle phase, print a `ready` event and keep the
    /// workload paced but unmeasured until a line `start <unix seconds>` on stdin; the measured
    /// phase begins at that wall time. `stop` on stdin, or its end, interrupts the test.
    #[arg(long, value_name = "stdin", value_parser = ["stdin"], hide = true)]
    pub start_gate: Option<String>,
    /// Plumbing for `fleet run`: run the resolved request in FILE (written by the coordinator,
    /// this version's: the test type, the configuration with this host's paths and profile, the
    /// results folder) instead of the flags; only --out (the request's), --progress and
    /// --start-gate apply beside it.
    #[arg(long, value_name = "FILE", hide = true)]
    pub request: Option<PathBuf>,
}

/// `--progress`: how a command shows its work.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum ProgressMode {
    // No doc comments: `--help` lists the values as before, without descriptions.
    #[allow(missing_docs)]
    Human,
    #[allow(missing_docs)]
    Jsonl,
    #[allow(missing_docs)]
    Quiet,
}

/// What `run --test` runs: one test type, or the whole suite (a sequence of runs, not a test
/// type of its own: each of its results has its own type).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RunTest {
    /// One test type.
    Kind(mbx_config::TestKind),
    /// Performance, Stress, Backup, Soft Recovery and Checksum in turn, one folder each.
    Suite,
}

impl RunTest {
    /// Every choice, in the order `--help` lists them.
    pub const ALL: [RunTest; 6] = [
        RunTest::Kind(mbx_config::TestKind::Performance),
        RunTest::Kind(mbx_config::TestKind::Stress),
        RunTest::Kind(mbx_config::TestKind::Backup),
        RunTest::Kind(mbx_config::TestKind::SoftRecovery),
        RunTest::Kind(mbx_config::TestKind::Checksum),
        RunTest::Suite,
    ];
}

impl clap::ValueEnum for RunTest {
    fn value_variants<'a>() -> &'a [Self] {
        &Self::ALL
    }
    fn to_possible_value(&self) -> Option<clap::builder::PossibleValue> {
        match self {
            RunTest::Kind(k) => clap::ValueEnum::to_possible_value(k),
            RunTest::Suite => Some(
                clap::builder::PossibleValue::new("suite")
                    .help("performance, stress, backup, soft-recovery, checksum in turn"),
            ),
        }
    }
}

const PREPARE_HELP: &str = "\
Database size = mailboxes x quota, split evenly over the databases (the Jetstress rule). Every
32 KiB page is unique (not dedupable); --compressibility-pct makes pages compress by about that much.

Safety: an existing file that is not an mbxstress database is never overwritten without --force;
block devices need --allow-device (and --force too unless blank or ours); free space is checked before anything is written. Databases
that exist with the same parameters are attached; an interrupted creation resumes (Ctrl-C stops
cleanly and keeps what is written).

Examples:
  mbxstress prepare --mailboxes 20 --quota-mb 100 --databases 2
  mbxstress prepare --profile esrp-server.toml --db-path /mnt/db1 --db-path /mnt/db2 \\
      --log-path /mnt/log1 --log-path /mnt/log2
  mbxstress prepare --databases 4 --database-size-mb 1024 --compressibility-pct 50";

const VERIFY_HELP: &str = "\
Counts per database: seen pages (file size / 32 KiB), bad pages (torn, overwritten, zeroed, or
from another database), correctable pages (exactly one flipped bit, which ESE's ECC would fix)
and wrong page-number pages (valid pages at the wrong place). Exit code 1 if any page is not good.

Examples:
  mbxstress verify
  mbxstress verify --db-path /mnt/db1/mbxstress001.edb --read-size 64k --json";

const IOBENCH_HELP: &str = "\
Flags follow fio's names and meanings (sizes in powers of 1024: 32k = 32768). A missing --file is
created and filled with random data; an existing file is written only with --force. Ctrl-C while
the file is being filled stops at once (exit 130) and removes the partial file it created.

Ranges: --bs a multiple of 4k up to 64M; --iodepth 1-4096; --numjobs 1-256; the I/O buffers
(--bs x --iodepth x --numjobs) at most 1 GiB or half the available memory, whichever is less;
--size at least --bs x --numjobs; --runtime 1s to 30 days. Anything else exits 2.

Examples:
  mbxstress iobench --file /mnt/db/bench.dat --size 4G --rw randread --bs 32k --iodepth 32 --runtime 30s
  mbxstress iobench --file bench.dat --size 1G --rw write --bs 1M --iodepth 4 --json";

/// Where the databases and logs live (shared by `prepare` and `verify`).
#[derive(Debug, Clone, Args)]
pub struct StorePaths {
    /// Database location: a directory for all databases, or one path per database (repeat the
    /// flag); a path ending in .edb names the file itself [default: ./mbxstress-data/databases].
    #[arg(long = "db-path", value_name = "PATH")]
    pub db_path: Vec<PathBuf>,
    /// Log location: a directory for all databases' logs, or one per database (repeat the flag)
    /// [default: ./mbxstress-data/logs].
    #[arg(long = "log-path", value_name = "PATH")]
    pub log_path: Vec<PathBuf>,
}

/// I/O backend flags.
#[derive(Debug, Clone, Args)]
pub struct EngineArgs {
    /// I/O engine [default: io_uring on Linux, iocp on Windows, sync elsewhere].
    #[arg(long, value_name = "ENGINE")]
    pub engine: Option<IoBackend>,
    /// Use the page cache instead of O_DIRECT (results then measure memory, not storage).
    #[arg(long)]
    pub buffered: bool,
}

/// `mbxstress prepare`.
#[derive(Debug, Args)]
pub struct PrepareArgs {
    /// Take mailboxes, quota and databases from a profile file (`size --profile-out`).
    #[arg(long, value_name = "FILE", conflicts_with_all = ["mailboxes", "database_size_mb", "jetstress_config"])]
    pub profile: Option<PathBuf>,
    /// Mailboxes (database size = mailboxes x quota, split over the databases).
    #[arg(long, value_name = "N", value_parser = parse_count, allow_negative_numbers = true, requires = "quota_mb")]
    pub mailboxes: Option<u64>,
    /// Mailbox quota in MB.
    #[arg(long, value_name = "MB", value_parser = parse_count, allow_negative_numbers = true)]
    pub quota_mb: Option<u64>,
    /// Number of databases.
    #[arg(long, value_name = "N", value_parser = parse_count32, allow_negative_numbers = true)]
    pub databases: Option<u32>,
    /// Size of each database in MB (instead of mailboxes x quota).
    #[arg(long, value_name = "MB", value_parser = parse_count, allow_negative_numbers = true, conflicts_with = "mailboxes")]
    pub database_size_mb: Option<u64>,
    /// Database and log locations.
    #[command(flatten)]
    pub paths: StorePaths,
    /// Take the databases (mailboxes x quota, count, paths) from a Jetstress configuration.
    #[command(flatten)]
    pub jetstress: JetstressArgs,
    /// Make pages compress by about this many percent (0-99) [default: 0, incompressible].
    #[arg(long, value_name = "PCT", value_parser = clap::value_parser!(u8).range(0..=99))]
    pub compressibility_pct: Option<u8>,
    /// I/O backend.
    #[command(flatten)]
    pub engine: EngineArgs,
    /// Writes in flight per database.
    #[arg(long, value_name = "N", default_value_t = 4, value_parser = clap::value_parser!(u32).range(1..=256))]
    pub queue_depth: u32,
    /// Overwrite files that are not mbxstress databases, or databases with other parameters.
    #[arg(long)]
    pub force: bool,
    /// Allow unused block devices as database paths (their contents are overwritten; a mounted
    /// or in-use device is refused, and one that is not blank nor ours needs --force too).
    #[arg(long)]
    pub allow_device: bool,
    /// Print a JSON summary instead of text.
    #[arg(long)]
    pub json: bool,
}

/// `mbxstress verify`.
#[derive(Debug, Args)]
pub struct VerifyArgs {
    /// Database files, or directories holding them (repeat the flag)
    /// [default: ./mbxstress-data/databases].
    #[arg(long = "db-path", value_name = "PATH")]
    pub db_path: Vec<PathBuf>,
    /// Bytes per read (multiple of 32k, at most 64M; Jetstress's checksum pass uses 64k)
    /// [default: 1M].
    #[arg(long, value_name = "SIZE", value_parser = crate::units::parse_size)]
    pub read_size: Option<u64>,
    /// I/O backend.
    #[command(flatten)]
    pub engine: EngineArgs,
    /// Print JSON (the result contract's `checksum` entries).
    #[arg(long)]
    pub json: bool,
}

/// `mbxstress iobench`.
#[derive(Debug, Args)]
pub struct IobenchArgs {
    /// File (or, with --force, an unused block device) to benchmark.
    #[arg(long, value_name = "PATH")]
    pub file: PathBuf,
    /// Bytes of the file to use: at least --bs x --numjobs, at most 1 EiB.
    #[arg(long, value_name = "SIZE", value_parser = crate::units::parse_size, default_value = "1G")]
    pub size: u64,
    /// Pattern: read, write, randread, randwrite, randrw.
    #[arg(long, value_name = "MODE", value_parser = ["read", "write", "randread", "randwrite", "randrw"], default_value = "randread")]
    pub rw: String,
    /// Percent reads with --rw randrw.
    #[arg(long, value_name = "PCT", default_value_t = 50, value_parser = clap::value_parser!(u8).range(0..=100))]
    pub rwmixread: u8,
    /// Block size: a multiple of 4k from 4k to 64M. The I/O buffers (--bs x --iodepth x
    /// --numjobs) must fit in 1 GiB, or in half the available memory if that is less.
    #[arg(long, value_name = "SIZE", value_parser = crate::units::parse_size, default_value = "32k")]
    pub bs: u64,
    /// Requests in flight per job, 1 to 4096.
    #[arg(long, value_name = "N", default_value_t = 32, value_parser = clap::value_parser!(u32).range(1..=4096))]
    pub iodepth: u32,
    /// Parallel jobs (each with its own queue), 1 to 256.
    #[arg(long, value_name = "N", default_value_t = 1, value_parser = clap::value_parser!(u32).range(1..=256))]
    pub numjobs: u32,
    /// How long to measure, 1s to 30 days (e.g. 30s, 5m).
    #[arg(long, value_name = "DURATION", value_parser = crate::units::parse_duration, default_value = "30s")]
    pub runtime: std::time::Duration,
    /// I/O engine [default: io_uring on Linux, iocp on Windows, sync elsewhere].
    #[arg(long, value_name = "ENGINE")]
    pub engine: Option<IoBackend>,
    /// 1 = O_DIRECT (default), 0 = through the page cache.
    #[arg(long, value_name = "0|1", default_value = "1", value_parser = ["0", "1"])]
    pub direct: String,
    /// Write to an existing file, or extend a short one; benchmark a block device (it is
    /// overwritten; a mounted or otherwise used device is refused all the same).
    #[arg(long)]
    pub force: bool,
    /// Print JSON.
    #[arg(long)]
    pub json: bool,
}

const SIZE_HELP: &str = "\
Without --mailboxes, --messages-per-day, --servers, --input or --example, sizes the built-in
example 'tintri' (any other flags given still apply, e.g. --method exchange2013).

Methods:
  exchange2013         Exchange 2013 Server Role Requirements Calculator (default)
  exchange2016         Exchange 2016 calculator (2013 IOPS and memory inputs, 2016 megacycles)
  exchange2019         Exchange 2019 calculator (2016 inputs, 2019 RAM and core ceilings)
  exchange2010-vmware  Exchange 2010 figures of VMware's design and sizing guide (CPU, memory,
                       IOPS), storage from the 2013 calculator, as the Tintri paper sized it

Input file (--input FILE): TOML with the flags' names in snake_case; unknown keys are errors.
Flags given on the command line override the file. Example:
  method = \"exchange2013\"
  mailboxes = 5000
  messages_per_day = 150
  servers = 2
  copies = 2
  databases_per_server = 6
  virtualized = false

Examples:
  mbxstress size --mailboxes 16000 --messages-per-day 150 --quota-mb 2048 --servers 4 \\
      --databases-per-server 4 --specint-rate 1120 --specint-cores 16 --cores-per-server 4 \\
      --cpu-mhz 2500 --peak-cpu-pct 35 --method exchange2010-vmware
  mbxstress size --example dell-esrp --json
  mbxstress size --example tintri --method exchange2013 --profile-out server.toml";

/// Deployment description shared by `size` flags and `size --input FILE` (same names, snake_case in
/// the file). Every field is optional here; defaults are applied after flags and file are merged,
/// so we always know whether the user gave a value.
#[derive(Debug, Clone, Default, Args, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SizeInputs {
    /// Sizing method: exchange2013 (default), exchange2016, exchange2019, exchange-se (Exchange
    /// Server SE: the 2019 calculator's figures), exchange2010-vmware.
    #[arg(long, value_name = "METHOD", value_parser = ["exchange2013", "exchange2016", "exchange2019", "exchange-se", "exchange2010-vmware"])]
    pub method: Option<String>,
    /// Mailboxes in the whole deployment (1..=10,000,000).
    #[arg(long, value_name = "N", value_parser = parse_count, allow_negative_numbers = true)]
    pub mailboxes: Option<u64>,
    /// Messages sent + received per mailbox per day, e.g. 150 (1..=10,000).
    #[arg(long, value_name = "N", value_parser = parse_number, allow_negative_numbers = true)]
    pub messages_per_day: Option<f64>,
    /// Average message size in KB (1..=100,000) [default: 75].
    #[arg(long, value_name = "KB", value_parser = parse_number, allow_negative_numbers = true)]
    pub message_size_kb: Option<f64>,
    /// Mailbox quota in MB (1..=102,400) [default: 2048].
    #[arg(long, value_name = "MB", value_parser = parse_count, allow_negative_numbers = true)]
    pub quota_mb: Option<u64>,
    /// Copies of each database (DAG copies; 1..=16, at most --servers) [default: 1].
    #[arg(long, value_name = "N", value_parser = parse_count32, allow_negative_numbers = true)]
    pub copies: Option<u32>,
    /// Mailbox servers (1..=10,000).
    #[arg(long, value_name = "N", value_parser = parse_count32, allow_negative_numbers = true)]
    pub servers: Option<u32>,
    /// Database copies on each server (1..=100) [default: fewest within the recommended size].
    #[arg(long, value_name = "N", value_parser = parse_count32, allow_negative_numbers = true, conflicts_with = "mailboxes_per_database")]
    pub databases_per_server: Option<u32>,
    /// Mailboxes in each database, instead of --databases-per-server (1..=10,000,000; must give
    /// at most 100 databases per server).
    #[arg(long, value_name = "N", value_parser = parse_count, allow_negative_numbers = true)]
    pub mailboxes_per_database: Option<u64>,
    /// I/O headroom added to the IOPS per mailbox, percent (0..=1000) [default: 20].
    #[arg(long, value_name = "PCT", value_parser = parse_number, allow_negative_numbers = true)]
    pub headroom_pct: Option<f64>,
    /// IOPS per mailbox before headroom, overriding the method's table (0.0001..=100; with
    /// headroom at most 100).
    #[arg(long, value_name = "IOPS", value_parser = parse_number, allow_negative_numbers = true)]
    pub iops_per_mailbox: Option<f64>,
    /// SPECint_rate2006 result of the server model, with --specint-cores (1..=1,000,000 and at
    /// least 1 per core).
    #[arg(long, value_name = "SCORE", value_parser = parse_number, allow_negative_numbers = true, requires = "specint_cores")]
    pub specint_rate: Option<f64>,
    /// Cores of the system the SPECint_rate2006 result was measured on, with --specint-rate
    /// (1..=16,384).
    #[arg(long, value_name = "N", value_parser = parse_count32, allow_negative_numbers = true, requires = "specint_rate")]
    pub specint_cores: Option<u32>,
    /// Cores in each mailbox server, to compute utilization (1..=16,384).
    #[arg(long, value_name = "N", value_parser = parse_count32, allow_negative_numbers = true)]
    pub cores_per_server: Option<u32>,
    /// Processor clock in MHz, needed by exchange2010-vmware (100..=10,000).
    #[arg(long, value_name = "MHZ", value_parser = parse_number, allow_negative_numbers = true)]
    pub cpu_mhz: Option<f64>,
    /// Target peak CPU utilization, percent (1..=100) [default: 80].
    #[arg(long, value_name = "PCT", value_parser = parse_number, allow_negative_numbers = true)]
    pub peak_cpu_pct: Option<f64>,
    /// Cores of a separate Client Access server, exchange2013 not multi-role (1..=16,384)
    /// [default: 4].
    #[arg(long, value_name = "N", value_parser = parse_count32, allow_negative_numbers = true)]
    pub client_access_cores: Option<u32>,
    /// Days of transaction logs kept (1..=365) [default: 3].
    #[arg(long, value_name = "DAYS", value_parser = parse_count32, allow_negative_numbers = true)]
    pub log_retention_days: Option<u32>,
    /// Deleted item retention window in days (0..=3650) [default: 14].
    #[arg(long, value_name = "DAYS", value_parser = parse_count32, allow_negative_numbers = true)]
    pub deleted_item_retention_days: Option<u32>,
    /// Extra database size for growth, percent (0..=1000) [default: 0; D1 recommends 20].
    #[arg(long, value_name = "PCT", value_parser = parse_number, allow_negative_numbers = true)]
    pub data_overhead_pct: Option<f64>,
    /// Disk class of the storage design: 7.2k (default, 4 TB, 75 IOPS), 10k, 15k, ssd, nvme.
    #[arg(long, value_name = "CLASS", value_parser = ["7.2k", "10k", "15k", "ssd", "nvme"])]
    pub disk_class: Option<String>,
    /// Capacity of one disk in GB as labelled, overriding the class (1..=1,000,000).
    #[arg(long, value_name = "GB", value_parser = parse_number, allow_negative_numbers = true)]
    pub disk_capacity_gb: Option<f64>,
    /// Random IOPS of one disk, overriding the class (1..=10,000,000).
    #[arg(long, value_name = "IOPS", value_parser = parse_number, allow_negative_numbers = true)]
    pub disk_iops: Option<f64>,
    /// RAID level of the database volumes: raid10 (default; raid1 is the same), raid5, raid6, jbod.
    #[arg(long, value_name = "LEVEL", value_parser = ["raid1", "raid10", "raid5", "raid6", "jbod"])]
    pub db_raid: Option<String>,
    /// RAID level of the log volumes: raid10 (default), raid1, raid5, raid6, jbod.
    #[arg(long, value_name = "LEVEL", value_parser = ["raid1", "raid10", "raid5", "raid6", "jbod"])]
    pub log_raid: Option<String>,
    /// Share of a day's logs generated in the busiest hour, percent (4.17..=100) [default: 12].
    #[arg(long, value_name = "PCT", value_parser = parse_number, allow_negative_numbers = true)]
    pub peak_hour_log_pct: Option<f64>,
    /// Datacenters the copies are spread over (1..=--copies) [default: 1].
    #[arg(long, value_name = "N", value_parser = parse_count32, allow_negative_numbers = true)]
    pub sites: Option<u32>,
    /// Lagged copies among --copies (0..=copies-1; never activated by a failover) [default: 0].
    #[arg(long, value_name = "N", value_parser = parse_count32, allow_negative_numbers = true)]
    pub lagged_copies: Option<u32>,
    /// Replay lag of the lagged copies in days (0..=14) [default: 7].
    #[arg(long, value_name = "DAYS", value_parser = parse_number, allow_negative_numbers = true)]
    pub lag_days: Option<f64>,
    /// Archive mailbox quota in MB, archives in the same databases (0..=102,400) [default: 0].
    #[arg(long, value_name = "MB", value_parser = parse_count, allow_negative_numbers = true)]
    pub archive_quota_mb: Option<u64>,
    /// Servers are virtual machines (input file only; the flag is --virtualized).
    #[arg(skip)]
    pub virtualized: Option<bool>,
    /// Client Access on the mailbox servers (input file only; the flag is --multi-role).
    #[arg(skip)]
    pub multi_role: Option<bool>,
}

/// `mbxstress size`.
#[derive(Debug, Args)]
pub struct SizeArgs {
    /// The deployment.
    #[command(flatten)]
    pub inputs: SizeInputs,
    /// Servers are virtual machines (the calculators add 10% to megacycles).
    #[arg(long)]
    pub virtualized: bool,
    /// Client Access runs on the mailbox servers (exchange2013).
    #[arg(long)]
    pub multi_role: bool,
    /// Read the deployment from a TOML file (strict: unknown keys are errors).
    #[arg(long, value_name = "FILE", conflicts_with = "example")]
    pub input: Option<PathBuf>,
    /// Start from a built-in example from the seed papers: tintri, dell-esrp, dell-sizing, pure.
    #[arg(long, value_name = "NAME", value_parser = ["tintri", "dell-esrp", "dell-sizing", "pure"])]
    pub example: Option<String>,
    /// Print JSON (the result contract's keys) instead of the report.
    #[arg(long)]
    pub json: bool,
    /// Write the storage-test profile of one server to FILE (TOML, for `mbxstress run --profile`).
    #[arg(long, value_name = "FILE")]
    pub profile_out: Option<PathBuf>,
}

fn parse_count(s: &str) -> Result<u64, String> {
    let s = s.trim();
    if s.starts_with('-') {
        return Err(format!("must be a positive whole number, got {s}"));
    }
    let cleaned = s.replace(['_', ','], "");
    cleaned
        .parse::<u64>()
        .map_err(|_| format!("'{s}' is not a whole number"))
}

/// `--threads`: `auto` (0 in the configuration) or a count.
fn parse_threads(s: &str) -> Result<u32, String> {
    if s.trim().eq_ignore_ascii_case("auto") {
        return Ok(0);
    }
    match parse_count32(s)? {
        0 => Err("0 sessions cannot run a test: give 1..=1024, or auto to tune".into()),
        n => Ok(n),
    }
}

fn parse_count32(s: &str) -> Result<u32, String> {
    let v = parse_count(s)?;
    u32::try_from(v).map_err(|_| format!("{v} is too large"))
}

fn parse_number(s: &str) -> Result<f64, String> {
    let s = s.trim();
    let v: f64 = s
        .replace(['_', ','], "")
        .parse()
        .map_err(|_| format!("'{s}' is not a number"))?;
    if !v.is_finite() {
        return Err(format!("'{s}' is not a finite number"));
    }
    if v < 0.0 {
        return Err(format!("must not be negative, got {s}"));
    }
    Ok(v)
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::CommandFactory;

    #[test]
    fn cli_definition_is_consistent() {
        Cli::command().debug_assert();
    }

    #[test]
    fn number_parsers() {
        assert_eq!(parse_count("16,000"), Ok(16_000));
        assert!(parse_count("-5")
            .expect_err("negative")
            .contains("positive"));
        assert!(parse_count("abc").is_err());
        assert_eq!(parse_number("0.18"), Ok(0.18));
        assert!(parse_number("nan").is_err());
        assert!(parse_number("-1").is_err());
    }
}
