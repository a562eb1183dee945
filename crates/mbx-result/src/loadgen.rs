//! `result.json` of `mbxstress loadgen` (schema [`LOADGEN_SCHEMA`], `kind` `loadgen`): what a
//! client-load test planned and did, per task and protocol command, the delivery of every copy
//! sent, and the verdict. docs/results.md lists the keys.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use crate::{Stopped, Verdict};

/// The schema of a loadgen result.json (and of `loadgen init`'s).
pub const LOADGEN_SCHEMA: &str = "mbxstress.loadgen/1";

/// The `kind` a loadgen result.json carries (a storage result has none).
pub const LOADGEN_KIND: &str = "loadgen";

/// Latency percentiles in milliseconds, with the count they describe. p95 is here because
/// LoadSim scored the 95th percentile of task response time.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize, Default)]
pub struct LatencyMs {
    /// Values recorded.
    pub count: u64,
    /// Mean.
    pub avg: f64,
    /// Median.
    pub p50: f64,
    /// 90th percentile.
    pub p90: f64,
    /// 95th percentile.
    pub p95: f64,
    /// 99th percentile.
    pub p99: f64,
    /// Largest value.
    pub max: f64,
}

/// `loadgen.test`: identification and timing.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, Default)]
pub struct LoadgenInfo {
    /// `init` (mailboxes filled), `day` (the simulated day) or `idle` (connections held).
    pub phase: String,
    /// The run's id: it is in every message the run sent (`X-Mbx-Id: <run>/<sender>/<seq>`).
    pub run_id: String,
    /// Start, RFC 3339.
    pub start: String,
    /// End, RFC 3339.
    pub end: String,
    /// Seconds from the start to the end.
    pub duration_s: f64,
    /// Host name of the client machine.
    pub machine: String,
    /// Operating system of the client machine.
    pub os: String,
    /// mbxstress version.
    pub tool_version: String,
    /// Stopped early by the user (Ctrl-C, SIGTERM).
    pub interrupted: bool,
    /// When the measured work (the day, the hold, the submission) began, Unix seconds in this
    /// machine's clock: a fleet compares its clients' starts with it (`loadgen run` only).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub start_unix_s: Option<f64>,
    /// The slice of the users this client drove, `K/N` (`--partition`; absent: all of them).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub partition: Option<String>,
}

/// One server the clients spoke to.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, Default)]
pub struct ServerUrl {
    /// `smtp`, `imap`, `pop3` or `eas` (a day with `eas` users).
    pub protocol: String,
    /// `smtp+starttls://mail.example.com:587`, `imaps://...:993`, ...; `eas`: the ActiveSync
    /// endpoint, `https://mail.example.com/Microsoft-Server-ActiveSync`.
    pub url: String,
}

/// A client type's share of the users.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, Default)]
pub struct ClientShare {
    /// `desktop_imap`, `webmail` or `pop3`.
    #[serde(rename = "type")]
    pub client: String,
    /// Share asked, percent.
    pub share_pct: f64,
    /// Users given this type.
    pub users: u64,
    /// Tasks per user per simulated day (the action table).
    pub tasks_per_user_day: f64,
}

/// `config`: what the test was asked to do, every default filled in.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, Default)]
pub struct LoadgenConfig {
    /// The servers.
    pub servers: Vec<ServerUrl>,
    /// How the server's certificate is trusted: `system`, `ca_file:<path>` or `insecure`.
    pub tls_trust: String,
    /// SASL mechanism of submission (`plain` or `login`).
    pub smtp_auth: String,
    /// The users' source: `template loadgen%d from 1` or `file <path>`.
    pub users_source: String,
    /// Users simulated.
    pub users: u64,
    /// The mail domain.
    pub domain: String,
    /// Messages sent + received per mailbox per day.
    pub messages_per_day: u32,
    /// Average message size, KB (1,000 bytes x 1.024 = KiB as the calculator's "KB").
    pub message_kb: f64,
    /// Client types and their shares.
    pub clients: Vec<ClientShare>,
    /// Simulated day, seconds.
    pub day_s: f64,
    /// Simulated days run.
    pub days: u32,
    /// The schedule's seed.
    pub seed: u64,
    /// LoadGen's guard: the run stops when unfinished tasks exceed this many per user.
    pub overload_per_user: f64,
    /// After the last task, how long copies not yet seen were looked for, seconds.
    pub grace_s: f64,
    /// The test's length, seconds: tasks scheduled after it were not planned or run (`day_s`
    /// x `days` unless `--duration` was given).
    #[serde(default)]
    pub duration_s: f64,
    /// Stress mode: each user's tasks back to back (closed loop), not at their times; task
    /// latency is then service time.
    #[serde(default)]
    pub stress: bool,
    /// Initialization: messages per mailbox asked.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub init_messages: Option<u64>,
    /// Where the profile came from (`flags`, or the profile file's path).
    pub profile_source: String,
    /// The thresholds the verdict judges.
    pub thresholds: LoadgenThresholds,
}

/// The verdict's limits.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, Default)]
pub struct LoadgenThresholds {
    /// Tasks completed without error, percent of tasks planned, at least.
    pub tasks_achieved_pct: f64,
    /// Each task type's 95th percentile latency from its scheduled time, ms, at most.
    pub task_p95_ms: f64,
    /// Delivery latency's 95th percentile, ms, at most.
    pub delivery_p95_ms: f64,
}

/// One task type's figures (`tasks[]`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, Default)]
pub struct TaskRow {
    /// `send_new`, `reply`, `forward`, `check_inbox`, `read`, `move`, `delete`, `flag`,
    /// `search`, `logon`, `logoff`.
    pub task: String,
    /// Dispatched at their time.
    pub dispatched: u64,
    /// Finished without error, having done the work the task names (every one sent protocol
    /// commands).
    pub completed: u64,
    /// Ran their session but had nothing to act on (a move, delete or flag when the user held
    /// no message of the run even after checking; a log off with no session): not completed,
    /// and not counted against the server by `tasks_achieved_pct`.
    #[serde(default)]
    pub skipped: u64,
    /// Failed, by error class.
    pub failed: BTreeMap<String, u64>,
    /// Latency from the scheduled time to the end (counts a wait behind the user's earlier
    /// tasks: no coordinated omission).
    pub latency_ms: LatencyMs,
    /// Latency from the task's own start to its end.
    pub service_ms: LatencyMs,
}

/// One protocol command's figures (`commands[]`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, Default)]
pub struct CommandRow {
    /// `smtp`, `imap` or `pop3`.
    pub protocol: String,
    /// `connect`, `EHLO`, `AUTH`, `DATA end`, `LOGIN`, `UID FETCH`, `RETR`, ...
    pub command: String,
    /// Commands that succeeded.
    pub ok: u64,
    /// Failed, by error class.
    pub errors: BTreeMap<String, u64>,
    /// Latency of the commands that succeeded.
    pub latency_ms: LatencyMs,
    /// Statuses answered (`eas` commands): HTTP statuses as `http_<code>` and EAS `Status`
    /// codes as `eas_<code>`, each counted (absent for protocols without them).
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub statuses: BTreeMap<String, u64>,
}

/// A corrupted copy, named.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, Default)]
pub struct CorruptedCopy {
    /// The message's id (`<run>/<sender>/<seq>`).
    pub id: String,
    /// The mailbox it was found in.
    pub recipient: String,
    /// What differs (`body changed: ... byte N of the body`).
    pub what: String,
}

/// `delivery`: every copy sent accounted for.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, Default)]
pub struct Delivery {
    /// Messages accepted by SMTP.
    pub messages_sent: u64,
    /// Copies expected (messages x recipients).
    pub expected: u64,
    /// Copies found intact at least once.
    pub delivered: u64,
    /// Copies never found (after the grace time: lost).
    pub lost: u64,
    /// Extra copies found.
    pub duplicated: u64,
    /// Copies found changed.
    pub corrupted: u64,
    /// Copies of this run's messages found where they were not sent.
    pub unexpected: u64,
    /// The corrupted copies (at most 100), named.
    #[serde(default)]
    pub corrupted_copies: Vec<CorruptedCopy>,
    /// Lost copies (at most 100): message id and recipient.
    #[serde(default)]
    pub lost_copies: Vec<CorruptedCopy>,
    /// SMTP acceptance to the copy being seen in the recipient's mailbox.
    pub latency_ms: LatencyMs,
    /// How copies were seen: `poll` (a check: includes up to a check interval), `idle` (an IMAP
    /// IDLE notice: includes the server's notification delay), `idle+poll` (some each, counted
    /// in `seen_by_idle` and `seen_by_poll`), or `none` (no copy delivered).
    pub measured_by: String,
    /// Delivered copies first seen through an IMAP IDLE notice (desktop IMAP users idle between
    /// tasks).
    #[serde(default)]
    pub seen_by_idle: u64,
    /// Delivered copies first seen by a poll (a check of the inbox, a POP3 session, the grace
    /// sweep).
    #[serde(default)]
    pub seen_by_poll: u64,
    /// Delivered copies whose delivery latency exceeded `thresholds.delivery_p95_ms` (late).
    #[serde(default)]
    pub late: u64,
    /// Server delivery latency: SMTP acceptance to the copy being listed in its recipient's
    /// mailbox by the run's own watcher (read-only sessions polling at a known interval,
    /// independent of the users' schedule), copies to watched recipients only. What
    /// `delivery_latency_p95_ms` judges when it has copies (`latency_ms` is the user-seen one).
    #[serde(default)]
    pub server_latency_ms: LatencyMs,
    /// How the server latency was measured (`watcher: 32 mailboxes polled every 500 ms, 34
    /// connections`), empty when no watcher ran.
    #[serde(default)]
    pub server_measured_by: String,
    /// The server latency's resolution, ms: the watcher's poll interval.
    #[serde(default)]
    pub server_resolution_ms: f64,
    /// Recipients whose mailbox was watched.
    #[serde(default)]
    pub server_watched: u64,
    /// Copies of the server latency over `thresholds.delivery_p95_ms`.
    #[serde(default)]
    pub server_late: u64,
    /// Lost copies whose recipient's mailbox could not be read at the grace sweep's last look
    /// (part of `lost`: not looked for, rather than not found; `messages_lost` judges the rest).
    #[serde(default)]
    pub not_looked: u64,
    /// Recipients whose mailbox could not be read at the grace sweep's last look (the check
    /// `mailboxes_unreadable` fails on them).
    #[serde(default)]
    pub unreadable_mailboxes: u64,
    /// The IDLE probes' finding: how promptly the server's IDLE announces new mail.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub idle_probe: Option<IdleProbeFigures>,
}

/// `delivery.idle_probe`: sessions that only idle on watched mailboxes, their notices compared
/// with the watcher's listing of the same messages.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, Default)]
pub struct IdleProbeFigures {
    /// Probe sessions.
    pub probes: u64,
    /// Copies the watcher listed while a probe idled on their mailbox.
    pub copies: u64,
    /// Of those, announced by IDLE within `slow_after_s`.
    pub prompt: u64,
    /// The limit, seconds.
    pub slow_after_s: f64,
    /// IDLE's delay after the watcher's listing, of the copies it announced.
    pub lag_ms: LatencyMs,
    /// Fewer than 9 in 10 copies announced within `slow_after_s`.
    pub slow: bool,
    /// The finding in a sentence.
    pub note: String,
}

/// `init`: mailboxes filled before the day.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, Default)]
pub struct InitFigures {
    /// Users whose mailbox holds its target now.
    pub users_done: u64,
    /// Users whose fill failed.
    pub users_failed: u64,
    /// Messages per mailbox asked.
    pub target_per_user: u64,
    /// Initialization messages already there.
    pub messages_found: u64,
    /// Messages appended by this run.
    pub messages_appended: u64,
    /// Bytes appended by this run.
    pub bytes_appended: u64,
    /// Seconds spent.
    pub duration_s: f64,
    /// Messages appended per second.
    pub messages_per_s: f64,
    /// MB (10^6 bytes) appended per second.
    pub mb_per_s: f64,
}

/// `idle`: connections held open in IMAP IDLE (`loadgen idle`), and what they cost the
/// client process.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, Default)]
pub struct IdleFigures {
    /// Connections asked.
    pub connections: u64,
    /// Connections established (logged in, INBOX selected, in IDLE).
    pub established: u64,
    /// Connections that could not be established.
    pub failed: u64,
    /// Established connections lost while held.
    pub dropped: u64,
    /// Connections open at the hold's end.
    pub open_at_end: u64,
    /// `imaps` (implicit TLS), `imap+starttls` or `imap` (plain).
    pub security: String,
    /// Connections being established at once.
    pub concurrency: u64,
    /// Seconds from the first connect to the last connection established or failed.
    pub establish_s: f64,
    /// Connections established per second over that time.
    pub established_per_s: f64,
    /// Seconds held (every connection tried, then this long in IDLE).
    pub hold_s: f64,
    /// Untagged responses received while idle (`* OK Still here`, EXISTS, ...).
    pub notices: u64,
    /// The client process's resident memory before any connection, bytes (absent where it
    /// cannot be read: see `measured_by`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rss_baseline_bytes: Option<u64>,
    /// Its resident memory at the hold's end, every connection still open, bytes.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rss_held_bytes: Option<u64>,
    /// (rss_held_bytes - rss_baseline_bytes) / open_at_end: memory per connection held.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rss_per_connection_bytes: Option<f64>,
    /// CPU time (user + system) of the client process over the hold, seconds.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cpu_idle_s: Option<f64>,
    /// That CPU time as percent of one core over the hold.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cpu_idle_pct: Option<f64>,
    /// Where memory and CPU came from: `linux /proc/self (VmRSS; utime + stime)`, or why they
    /// are absent.
    pub measured_by: String,
}

/// `submit`: messages submitted as fast as the server accepts them (`loadgen submit`, as
/// smtp-source and postal do).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, Default)]
pub struct SubmitFigures {
    /// Connections (SMTP sessions) at once.
    pub connections: u64,
    /// Messages asked.
    pub messages: u64,
    /// Messages the server accepted (250 after the data).
    pub accepted: u64,
    /// Messages that failed (refused, or their session broke).
    pub failed: u64,
    /// Messages never tried (every connection stopped, or the run was interrupted).
    pub unsent: u64,
    /// Bytes of the accepted messages, as generated (before dot-stuffing).
    pub bytes: u64,
    /// Recipients of each message.
    pub recipients: u64,
    /// Seconds from the first connection to the last session's end.
    pub duration_s: f64,
    /// Messages accepted per second.
    pub messages_per_s: f64,
    /// MB (10^6 bytes) accepted per second.
    pub mb_per_s: f64,
    /// Sessions opened (EHLO, STARTTLS and AUTH done).
    pub sessions: u64,
    /// Sessions that could not be opened.
    pub sessions_failed: u64,
    /// Messages sent with MAIL, RCPT and DATA in one write (PIPELINING offered and not turned
    /// off).
    #[serde(default)]
    pub pipelined: u64,
    /// This process's CPU seconds (user + system) over the submission.
    pub client_cpu_s: f64,
    /// Client CPU per accepted message, microseconds.
    pub client_cpu_us_per_message: f64,
}

/// One error class met (`errors[]`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, Default)]
pub struct LoadgenError {
    /// `auth`, `connect`, `tls`, `protocol`, `timeout`, `rejected_quota`, `rejected_rate`,
    /// `rejected`, `disconnect`.
    pub class: String,
    /// How many tasks, commands or fills failed with it.
    pub count: u64,
    /// The first such error's message (names the user, server, command and the fix).
    pub message: String,
}

/// A loadgen `result.json`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct LoadgenResult {
    /// [`LOADGEN_SCHEMA`].
    pub schema: String,
    /// [`LOADGEN_KIND`].
    pub kind: String,
    /// Identification and timing.
    pub test: LoadgenInfo,
    /// What was asked.
    pub config: LoadgenConfig,
    /// Tasks the schedule held for the days run.
    pub tasks_planned: u64,
    /// Tasks dispatched.
    pub tasks_dispatched: u64,
    /// Tasks finished without error.
    pub tasks_completed: u64,
    /// Tasks failed.
    pub tasks_failed: u64,
    /// The most tasks unfinished (queued or running) at once.
    pub max_unfinished: u64,
    /// The overload guard's limit (users x `overload_per_user`).
    pub overload_limit: u64,
    /// The guard stopped the run.
    pub overloaded: bool,
    /// Per task type.
    pub tasks: Vec<TaskRow>,
    /// Per protocol command.
    pub commands: Vec<CommandRow>,
    /// Delivery of every copy sent (absent from `loadgen init`'s result).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub delivery: Option<Delivery>,
    /// Initialization (absent when the run did not initialize).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub init: Option<InitFigures>,
    /// Idle connections held (`loadgen idle` only).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub idle: Option<IdleFigures>,
    /// `submit` only.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub submit: Option<SubmitFigures>,
    /// Pass/fail: every check passed.
    pub verdict: Verdict,
    /// How the test ended.
    pub stopped: Stopped,
    /// Errors by class, with the first message of each.
    pub errors: Vec<LoadgenError>,
    /// Samples file (in the same folder).
    pub samples_file: String,
    /// Log file (in the same folder).
    pub log_file: String,
    /// What the user must know about the run.
    #[serde(default)]
    pub notes: Vec<String>,
    /// The latency histograms the tables were computed from, so results of several client
    /// machines merge exactly (never averaged): name -> base64 of the HdrHistogram V2
    /// serialization, microseconds. Names: `task.<task>`, `service.<task>`,
    /// `command.<protocol>.<command>`, `delivery` (`loadgen run` only).
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub histograms: BTreeMap<String, String>,
    /// A run over several client machines (`fleet loadgen`): each client, in the hosts file's
    /// order. Empty for a run on one machine.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub clients: Vec<ClientPart>,
    /// The mail servers watched during the run (`[[server]]` in the hosts file of
    /// `fleet loadgen`).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub servers: Vec<ServerWatch>,
}

impl LoadgenResult {
    /// A result of `test` and `config` with nothing measured yet: every count zero, every
    /// table empty, samples.jsonl and test.log named; callers fill in what they measured.
    pub fn empty(
        test: LoadgenInfo,
        config: LoadgenConfig,
        verdict: Verdict,
        stopped: Stopped,
    ) -> LoadgenResult {
        LoadgenResult {
            schema: LOADGEN_SCHEMA.into(),
            kind: LOADGEN_KIND.into(),
            test,
            config,
            tasks_planned: 0,
            tasks_dispatched: 0,
            tasks_completed: 0,
            tasks_failed: 0,
            max_unfinished: 0,
            overload_limit: 0,
            overloaded: false,
            tasks: Vec::new(),
            commands: Vec::new(),
            delivery: None,
            init: None,
            idle: None,
            submit: None,
            verdict,
            stopped,
            errors: Vec::new(),
            samples_file: "samples.jsonl".into(),
            log_file: "test.log".into(),
            notes: Vec::new(),
            histograms: BTreeMap::new(),
            clients: Vec::new(),
            servers: Vec::new(),
        }
    }
}

/// One client machine of a `fleet loadgen` run, in the merged result.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, Default)]
pub struct ClientPart {
    /// Its name (its results folder beside the merged result).
    pub name: String,
    /// Its ssh destination.
    pub ssh: String,
    /// Its state in the fleet (`passed`, `failed`, `interrupted`, ...).
    pub state: String,
    /// Why, when it did not pass or fail its verdict.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub message: Option<String>,
    /// Its slice of the users, `K/N`.
    pub partition: String,
    /// Users it drove.
    pub users: u64,
    /// Its result.json, relative to the merged one, when one came back.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub result: Option<String>,
    /// Its result is part of the merged figures.
    pub merged: bool,
    /// Why not, when it is not.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub excluded: Option<String>,
    /// Its start minus the synchronized start sent, ms (clock offset corrected).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub start_error_ms: Option<f64>,
    /// Its own figures (from its result): tasks planned, completed, failed.
    pub tasks_planned: u64,
    /// Completed.
    pub tasks_completed: u64,
    /// Failed.
    pub tasks_failed: u64,
    /// Copies delivered and lost.
    pub delivered: u64,
    /// Lost.
    pub lost: u64,
    /// The worst task type's p95 latency from its scheduled time, ms.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub task_p95_ms_worst: Option<f64>,
    /// Its own verdict (`PASS`, `FAIL`, `NOT JUDGED`), when it has a result.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub verdict: Option<String>,
}

/// One mail server watched over SSH during a run: its samples' summary and file.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, Default)]
pub struct ServerWatch {
    /// Its name (from the hosts file).
    pub name: String,
    /// Its ssh destination.
    pub ssh: String,
    /// What was read (`linux /proc`), or why nothing could be.
    pub source: String,
    /// Samples taken.
    pub samples: u64,
    /// The samples file, relative to the result (`servers/<name>.jsonl`).
    pub samples_file: String,
    /// CPU busy, percent of all cores: average and maximum over the samples.
    pub cpu_pct_avg: f64,
    /// Maximum.
    pub cpu_pct_max: f64,
    /// Memory in use (total less available), bytes: the largest sample.
    pub mem_used_bytes_max: u64,
    /// Memory in all, bytes.
    pub mem_total_bytes: u64,
    /// Disk reads and writes per second over all disks, averages.
    pub disk_read_iops_avg: f64,
    /// Writes per second.
    pub disk_write_iops_avg: f64,
    /// Disk throughput, MB/s, read and written, averages.
    pub disk_read_mb_s_avg: f64,
    /// Written.
    pub disk_write_mb_s_avg: f64,
    /// Average disk read and write latency over the run (time spent / I/Os), ms.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub disk_read_ms_avg: Option<f64>,
    /// Write.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub disk_write_ms_avg: Option<f64>,
    /// What went wrong watching it (the connection dropped, no /proc), if anything.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
}

/// One line of a server's samples file (`servers/<name>.jsonl`): an interval's figures.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, Default)]
pub struct ServerSample {
    /// Unix seconds in the coordinator's clock at the interval's end.
    pub t_unix_s: f64,
    /// The interval's length, seconds.
    pub interval_s: f64,
    /// CPU busy, percent of all cores.
    pub cpu_pct: f64,
    /// CPU in I/O wait, percent of all cores.
    pub iowait_pct: f64,
    /// Memory in use (MemTotal - MemAvailable), bytes.
    pub mem_used_bytes: u64,
    /// Memory in all, bytes.
    pub mem_total_bytes: u64,
    /// Disk reads per second (whole disks, not partitions).
    pub disk_read_iops: f64,
    /// Writes per second.
    pub disk_write_iops: f64,
    /// MB/s read.
    pub disk_read_mb_s: f64,
    /// MB/s written.
    pub disk_write_mb_s: f64,
    /// Average read latency in the interval, ms (absent with no read).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub disk_read_ms: Option<f64>,
    /// Average write latency, ms.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub disk_write_ms: Option<f64>,
}

/// One line of a loadgen samples.jsonl: an interval's figures.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, Default)]
pub struct LoadgenSample {
    /// Seconds since the phase began, at the interval's end.
    pub t_s: f64,
    /// The interval's length, seconds.
    pub interval_s: f64,
    /// Tasks dispatched in the interval.
    pub dispatched: u64,
    /// Tasks completed in the interval.
    pub completed: u64,
    /// Tasks failed in the interval.
    pub failed: u64,
    /// Tasks unfinished (queued or running) at the interval's end.
    pub unfinished: u64,
    /// Tasks completed so far.
    pub completed_total: u64,
    /// Tasks planned in all.
    pub planned_total: u64,
    /// Copies delivered in the interval.
    pub delivered: u64,
    /// Task latency from the scheduled time, the interval's p50 / p95 / max, ms (absent when
    /// no task ended).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub task_p50_ms: Option<f64>,
    /// p95.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub task_p95_ms: Option<f64>,
    /// max.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub task_max_ms: Option<f64>,
    /// Delivery latency's p95 in the interval, ms.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub delivery_p95_ms: Option<f64>,
    /// Initialization: messages appended in the interval (`init` phase only).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub appended: Option<u64>,
    /// Initialization: bytes appended in the interval.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub appended_bytes: Option<u64>,
    /// Idle hold: connections open (in IDLE) at the interval's end (`idle` phase only).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub connections_open: Option<u64>,
    /// Idle hold: connections that failed so far.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub connections_failed: Option<u64>,
    /// The client process's resident memory at the interval's end, bytes.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rss_bytes: Option<u64>,
    /// The client process's CPU over the interval, percent of one core.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cpu_pct: Option<f64>,
    /// Submission: bytes of the messages accepted in the interval (`submit` phase only).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub bytes: Option<u64>,
}

/// True when a result.json's text is a loadgen result (its `kind`), without parsing it all.
pub fn is_loadgen(v: &serde_json::Value) -> bool {
    v.get("kind").and_then(serde_json::Value::as_str) == Some(LOADGEN_KIND)
}
