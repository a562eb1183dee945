//! loadgen's one resolution path: the flags ([`ConnFlags`], [`DayFlags`]: the binary copies
//! its clap arguments into them), the `server.env` file, the `--profile` file, a users file or
//! template and the defaults become one resolved, validated request. Its serializable part
//! ([`CommonSpec`], [`DaySpec`]) is what `fleet loadgen` sends each client host (its slice of
//! the users set per host); the secret (the template users' password) never enters it.
//!
//! Precedence, for each value: a flag, then `server.env`, then the built-in default.

use std::path::{Path, PathBuf};
use std::sync::atomic::AtomicBool;
use std::sync::Arc;
use std::time::Duration;

use mbx_loadgen::sched::ClientType;
use mbx_loadgen::users::User;
use mbx_loadgen::{validate, AuthMechanism, Trust};
use mbx_result::LoadgenThresholds;
use serde::{Deserialize, Serialize};

use super::servers::{self, Proto, ServersSpec};
use super::{client_name, client_of, Common, DayRequest, MailProfile};
use crate::AppError;

/// The Exchange calculator's average message size, KB.
pub const DEFAULT_MESSAGE_KB: f64 = 75.0;
/// The profile most published tests use (Tintri's, LoadGen "heavy"), messages per day.
pub const DEFAULT_MESSAGES_PER_DAY: u32 = 150;
/// The range of messages per day a loadgen day takes: the Exchange calculator's profiles.
pub const MESSAGES_PER_DAY_MIN: u32 = 50;
/// See [`MESSAGES_PER_DAY_MIN`].
pub const MESSAGES_PER_DAY_MAX: u32 = 500;
/// The most bytes of a `--password-file` read (a password is a line, not a file's worth).
const PASSWORD_FILE_LIMIT: u64 = 4096;

/// The flags every loadgen command shares (the command line's layer).
#[derive(Debug, Clone, Default)]
pub struct ConnFlags {
    /// `--server HOST`.
    pub server: Option<String>,
    /// `--smtp URL`.
    pub smtp: Option<String>,
    /// `--imap URL`.
    pub imap: Option<String>,
    /// `--pop3 URL`.
    pub pop3: Option<String>,
    /// `--server-env FILE`.
    pub server_env: Option<PathBuf>,
    /// `--ca-file FILE`.
    pub ca_file: Option<PathBuf>,
    /// `--insecure-tls`.
    pub insecure_tls: bool,
    /// `--smtp-auth plain|login`.
    pub smtp_auth: String,
    /// `--helo NAME`.
    pub helo: Option<String>,
    /// `--users N`.
    pub users: Option<u32>,
    /// `--user-template T`.
    pub user_template: Option<String>,
    /// `--first-user N`.
    pub first_user: u32,
    /// `--password P`.
    pub password: Option<String>,
    /// `--password-file FILE`.
    pub password_file: Option<PathBuf>,
    /// `--users-file FILE`.
    pub users_file: Option<PathBuf>,
    /// `--domain D`.
    pub domain: Option<String>,
    /// `--profile FILE`.
    pub profile: Option<PathBuf>,
    /// `--message-kb KB`.
    pub message_kb: Option<f64>,
    /// `--seed N`.
    pub seed: u64,
    /// `--partition K/N`.
    pub partition: Option<String>,
    /// `--out DIR`.
    pub out: Option<PathBuf>,
}

/// `loadgen run`'s flags.
#[derive(Debug, Clone, Default)]
pub struct DayFlags {
    /// The flags in common.
    pub conn: ConnFlags,
    /// `--messages-per-day N`.
    pub messages_per_day: Option<u32>,
    /// `--day`.
    pub day: Duration,
    /// `--days`.
    pub days: u32,
    /// `--clients desktop_imap=70,...`.
    pub clients: String,
    /// `--overload`.
    pub overload: f64,
    /// `--grace`.
    pub grace: Duration,
    /// `--tasks-achieved-pct`.
    pub tasks_achieved_pct: f64,
    /// `--task-p95-ms`.
    pub task_p95_ms: f64,
    /// `--delivery-p95-ms`.
    pub delivery_p95_ms: f64,
    /// `--sample-interval`.
    pub sample_interval: Duration,
    /// `--duration`.
    pub duration: Option<Duration>,
    /// `--stress`.
    pub stress: bool,
    /// `--eas URL`: the ActiveSync endpoint of the `eas` users.
    pub eas: Option<String>,
    /// `--eas-ping DURATION`: the heartbeat of the `eas` devices' parked Ping between tasks.
    pub eas_ping: Option<Duration>,
}

/// Where the users come from, resolved: a users file or the template's parameters (the users
/// themselves are made from it where the run is, so a request stays small whatever the count).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case", deny_unknown_fields)]
pub enum UsersFrom {
    /// A users file (`--users-file`): its path where the run reads it.
    File {
        /// The file.
        path: PathBuf,
    },
    /// `--users N` from `--user-template` (the password travels apart, never in a request).
    Template {
        /// The login template (`loadgen%d`).
        template: String,
        /// The first user's number.
        first: u32,
        /// Users made.
        count: u32,
    },
}

/// One slice of the users: `k` of `n` (`--partition K/N`, or set per client by fleet loadgen).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Slice {
    /// This slice, 1-based.
    pub k: usize,
    /// Slices in all.
    pub n: usize,
}

/// The users, resolved.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct UsersSpec {
    /// Where from.
    pub from: UsersFrom,
    /// The users in all, before the slice (a host's copy of a users file must hold as many).
    pub total: usize,
    /// Where they came from, in words (the user's own file name, not a host's copy).
    pub source: String,
    /// The slice of them this run takes (None: all).
    pub slice: Option<Slice>,
}

/// [`Trust`] in a serialized request.
#[derive(Serialize, Deserialize)]
#[serde(remote = "Trust", rename_all = "snake_case")]
enum TrustDef {
    System,
    CaFile(PathBuf),
    Insecure,
}

/// [`AuthMechanism`] in a serialized request.
#[derive(Serialize, Deserialize)]
#[serde(remote = "AuthMechanism", rename_all = "snake_case")]
enum AuthDef {
    Plain,
    Login,
}

/// What every loadgen command needs, resolved (the runtime handles apart).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CommonSpec {
    /// The servers.
    pub servers: ServersSpec,
    /// How their certificates are trusted (a CA file: its path where the run reads it).
    #[serde(with = "TrustDef")]
    pub trust: Trust,
    /// Submission's SASL mechanism.
    #[serde(with = "AuthDef")]
    pub smtp_auth: AuthMechanism,
    /// The EHLO name (None: the name of the machine the run is on).
    pub helo: Option<String>,
    /// The mail domain (empty: none given, every user's address is complete).
    pub domain: String,
    /// The users.
    pub users: UsersSpec,
    /// The mail profile.
    pub profile: MailProfile,
    /// The seed of messages and schedule.
    pub seed: u64,
    /// The results folder (None: a time-stamped one under ./mbxstress-results).
    pub out: Option<PathBuf>,
}

/// `loadgen run`, resolved (the runtime handles apart): what fleet loadgen sends each client.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct DaySpec {
    /// Servers, users, profile.
    pub common: CommonSpec,
    /// The day's own values.
    pub run: DayRun,
}

/// The day's own values, resolved: one struct for the serialized request ([`DaySpec`]) and
/// the runtime one ([`DayRequest`]), so a new day setting is added in one place.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct DayRun {
    /// The simulated day's length.
    pub day: Duration,
    /// Days run.
    pub days: u32,
    /// Client types and their shares (percent, summing to 100).
    #[serde(with = "client_shares")]
    pub clients: Vec<(ClientType, f64)>,
    /// LoadGen's guard (1.5).
    pub overload_per_user: f64,
    /// How long copies not yet seen are looked for after the last task.
    pub grace: Duration,
    /// samples.jsonl's interval.
    pub sample_interval: Duration,
    /// The test's length (None: `day` x `days`): tasks scheduled after it are not run.
    pub duration: Option<Duration>,
    /// Stress mode: each user's tasks back to back (closed loop) until `duration` or the days'
    /// tasks are done.
    pub stress: bool,
    /// The verdict's limits.
    pub thresholds: LoadgenThresholds,
    /// The `eas` users' ActiveSync endpoint (`http(s)://host[:port]/path`; the path
    /// `/Microsoft-Server-ActiveSync` when none is given). None: no `eas` users.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub eas: Option<String>,
    /// The heartbeat of the `eas` devices' parked Ping between tasks (None: no Ping, new mail
    /// seen at the checks).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub eas_ping: Option<Duration>,
}

/// The client shares by their names in results (`desktop_imap`, `webmail`, `pop3`).
mod client_shares {
    use mbx_loadgen::sched::ClientType;
    use serde::{Deserialize, Deserializer, Serialize, Serializer};

    pub fn serialize<S: Serializer>(v: &[(ClientType, f64)], s: S) -> Result<S::Ok, S::Error> {
        v.iter()
            .map(|(c, pct)| (super::client_name(*c), *pct))
            .collect::<Vec<_>>()
            .serialize(s)
    }

    pub fn deserialize<'de, D: Deserializer<'de>>(
        d: D,
    ) -> Result<Vec<(ClientType, f64)>, D::Error> {
        Vec::<(String, f64)>::deserialize(d)?
            .into_iter()
            .map(|(name, pct)| {
                super::client_of(&name).map(|c| (c, pct)).ok_or_else(|| {
                    serde::de::Error::custom(format!("{name:?} is not a client type"))
                })
            })
            .collect()
    }
}

/// A resolved request with what is kept out of its serialized part: the template users'
/// password and the users themselves (all of them, before the slice).
#[derive(Debug, Clone)]
pub struct Resolved<T> {
    /// The serializable request.
    pub spec: T,
    /// The template users' password (None: users from a file).
    pub password: Option<String>,
    /// Every user, before the slice.
    pub users: Vec<User>,
}

impl<T> Resolved<T> {
    /// The users of the request's slice, and their words.
    fn sliced(&self, users: &UsersSpec) -> Result<(Vec<User>, String), AppError> {
        match users.slice {
            None => Ok((self.users.clone(), users.source.clone())),
            Some(s) => {
                let total = self.users.len();
                let range = partition_range(total, s.k, s.n);
                if range.is_empty() {
                    return Err(AppError::usage(format!(
                        "--partition {}/{}: slice {} of {} of {total} users is empty: use fewer client machines than users",
                        s.k, s.n, s.k, s.n
                    )));
                }
                let source = format!(
                    "{}, users {}..={} of {total} (partition {}/{})",
                    users.source,
                    range.start + 1,
                    range.end,
                    s.k,
                    s.n
                );
                Ok((self.users[range].to_vec(), source))
            }
        }
    }
}

/// The template users' password in `--password-file`: its first line (a regular file of at most
/// 4 KiB; a FIFO, device or larger file is refused before it is read).
pub fn read_password_file(path: &Path) -> Result<String, AppError> {
    let text = mbx_config::input::read_bounded(
        path,
        PASSWORD_FILE_LIMIT,
        "the --password-file (the users' password on its first line)",
    )
    .map_err(|e| AppError::usage(format!("--password-file: {e}")))?;
    let line = text.lines().next().unwrap_or("").trim_end_matches('\r');
    if line.is_empty() {
        return Err(AppError::usage(format!(
            "--password-file {}: the first line is empty: write the password on it",
            path.display()
        )));
    }
    Ok(line.to_string())
}

/// `K/N` of `--partition`: 1 <= K <= N <= 10,000.
pub fn parse_partition(p: &str) -> Result<Slice, AppError> {
    let bad = || {
        AppError::usage(format!(
            "--partition {p:?}: expected K/N with 1 <= K <= N <= 10000 (slice K of N of the users)"
        ))
    };
    let (k, n) = p.split_once('/').ok_or_else(bad)?;
    let k: usize = k.trim().parse().map_err(|_| bad())?;
    let n: usize = n.trim().parse().map_err(|_| bad())?;
    if k == 0 || k > n || n > 10_000 {
        return Err(bad());
    }
    Ok(Slice { k, n })
}

/// The users of slice `k` (1-based) of `n`: contiguous, sizes differing by at most one, every
/// user in exactly one slice.
pub fn partition_range(total: usize, k: usize, n: usize) -> std::ops::Range<usize> {
    let at = |i: usize| {
        // total x i / n without overflow: total <= u32::MAX users, n <= 10,000.
        ((total as u128 * i as u128) / n.max(1) as u128) as usize
    };
    at(k.saturating_sub(1))..at(k)
}

/// The servers from `--server`, the URLs and `server.env` (`imap_only`: --imap alone is enough).
fn resolve_servers(
    a: &ConnFlags,
    env: Option<&servers::ServerEnv>,
    imap_only: bool,
) -> Result<ServersSpec, AppError> {
    let mut spec: Option<ServersSpec> = env.map(|e| e.servers.clone());
    if let Some(host) = &a.server {
        spec = Some(servers::standard(host)?);
    }
    let url = |p: Proto, v: &Option<String>| -> Result<Option<servers::ServerSpec>, AppError> {
        v.as_deref().map(|u| servers::parse_url(p, u)).transpose()
    };
    let (smtp, imap, pop3) = (
        url(Proto::Smtp, &a.smtp)?,
        url(Proto::Imap, &a.imap)?,
        url(Proto::Pop3, &a.pop3)?,
    );
    Ok(match (spec, smtp, imap, pop3) {
        (Some(mut s), smtp, imap, pop3) => {
            if let Some(x) = smtp {
                s.smtp = x;
            }
            if let Some(x) = imap {
                s.imap = x;
            }
            if let Some(x) = pop3 {
                s.pop3 = x;
            }
            s
        }
        (None, Some(smtp), Some(imap), Some(pop3)) => ServersSpec { smtp, imap, pop3 },
        (None, smtp, Some(imap), pop3) if imap_only => {
            let mut s = servers::standard(&imap.host)?;
            s.imap = imap;
            if let Some(x) = smtp {
                s.smtp = x;
            }
            if let Some(x) = pop3 {
                s.pop3 = x;
            }
            s
        }
        _ if imap_only => {
            return Err(AppError::usage(
                "no IMAP server given: --imap URL (imaps://HOST:993, imap+starttls://HOST:143, imap://HOST:143), --server HOST (IMAPS 993) or --server-env DIR/server.env",
            ))
        }
        _ => {
            return Err(AppError::usage(
                "no mail server given: --server HOST (submission 587, IMAPS 993, POP3S 995), --server-env DIR/server.env (scripts/mailserver.sh), or all of --smtp, --imap and --pop3 URLs",
            ))
        }
    })
}

/// Where the users come from, and the template's password (checked, not yet made).
fn resolve_users_from(
    a: &ConnFlags,
    env: Option<&servers::ServerEnv>,
    domain: Option<&str>,
) -> Result<(UsersFrom, String, Option<String>), AppError> {
    if let Some(path) = &a.users_file {
        return Ok((
            UsersFrom::File { path: path.clone() },
            format!("file {}", path.display()),
            None,
        ));
    }
    let count = a
        .users
        .or_else(|| env.and_then(|e| e.users))
        .ok_or_else(|| {
            AppError::usage("no users given: --users N (with --password), or --users-file FILE")
        })?;
    let template = a
        .user_template
        .clone()
        .or_else(|| env.and_then(|e| e.user_template.clone()))
        .unwrap_or_else(|| "loadgen%d".into());
    let from_file = a
        .password_file
        .as_deref()
        .map(read_password_file)
        .transpose()?;
    let password = a
        .password
        .clone()
        .or(from_file)
        .or_else(|| env.and_then(|e| e.password.clone()))
        .ok_or_else(|| {
            AppError::usage("--users needs --password (the template users' password)")
        })?;
    let domain = domain.ok_or_else(|| {
        AppError::usage(
            "--users needs --domain (the mail domain: user loadgen1 is loadgen1@DOMAIN)",
        )
    })?;
    if count > validate::MAX_USERS {
        return Err(AppError::usage(format!(
            "--users {count}: at most {} users in one run (about 1 KB of memory each); split a larger population with fleet loadgen",
            validate::MAX_USERS
        )));
    }
    validate::template(&template).map_err(|e| AppError::usage(format!("--user-template: {e}")))?;
    validate::domain(domain).map_err(|e| AppError::usage(format!("--domain: {e}")))?;
    let source = format!("template {template} from {}", a.first_user);
    Ok((
        UsersFrom::Template {
            template,
            first: a.first_user,
            count,
        },
        source,
        Some(password),
    ))
}

/// Makes the users `from` describes: reads a users file, or fills the template. Every name that
/// enters a protocol line is checked (mbx_loadgen::validate): no CR, LF or NUL can become a
/// second command, whatever flag or file gave it.
fn make_users(
    from: &UsersFrom,
    source: &str,
    password: Option<&str>,
    domain: &str,
) -> Result<Vec<User>, AppError> {
    let users = match from {
        UsersFrom::File { path } => {
            let users = mbx_loadgen::users::read_file(path, domain).map_err(|e| {
                // The file's own text (a user name) is in the message: shown, not obeyed.
                AppError::usage(format!(
                    "--users-file: {}",
                    mbx_config::text::visible(&e.to_string(), 1000)
                ))
            })?;
            if domain.is_empty() {
                // Only a user whose address is incomplete needs it (the file's address column,
                // or a login that is an address, is enough).
                if let Some(u) = users.iter().find(|u| u.address.ends_with('@')) {
                    return Err(AppError::usage(format!(
                        "--users-file {}: user {} has no domain: give --domain (the mail domain of users listed without one)",
                        path.display(),
                        mbx_config::text::visible(&u.login, 200)
                    )));
                }
            }
            users
        }
        UsersFrom::Template {
            template,
            first,
            count,
        } => {
            let password = password.ok_or_else(|| {
                AppError::usage("--users needs --password (the template users' password)")
            })?;
            mbx_loadgen::users::from_template(template, *first, *count, password, domain)
                .map_err(|e| AppError::usage(format!("--users / --user-template: {e}")))?
        }
    };
    if !domain.is_empty() {
        validate::domain(domain).map_err(|e| AppError::usage(format!("--domain: {e}")))?;
    }
    validate::users(&users).map_err(|e| AppError::usage(format!("users ({source}): {e}")))?;
    Ok(users)
}

/// The mail profile from `--profile` and `--message-kb` (messages per day: the profile's or the
/// default; `loadgen run`'s flag applies after).
fn resolve_profile(a: &ConnFlags) -> Result<MailProfile, AppError> {
    let file_profile = match &a.profile {
        Some(p) => Some(
            mbx_config::Profile::load(p).map_err(|source| AppError::Config {
                context: format!("reading --profile {}", p.display()),
                source,
            })?,
        ),
        None => None,
    };
    let message_kb = match a.message_kb {
        Some(kb) if !(kb.is_finite() && kb > 0.0 && kb <= 10_240.0) => {
            return Err(AppError::usage(format!(
                "--message-kb {kb}: must be above 0, at most 10240"
            )))
        }
        Some(kb) => kb,
        None => file_profile
            .as_ref()
            .and_then(|p| p.message_size_kb)
            .unwrap_or(DEFAULT_MESSAGE_KB),
    };
    Ok(MailProfile {
        messages_per_day: file_profile
            .as_ref()
            .and_then(|p| p.messages_per_day)
            .unwrap_or(DEFAULT_MESSAGES_PER_DAY),
        message_kb,
        source: match &a.profile {
            Some(p) => p.display().to_string(),
            None => "flags".into(),
        },
        mailboxes: file_profile.as_ref().map(|p| p.mailboxes),
    })
}

/// The flags every loadgen command shares, resolved with `server.env` and the defaults, the
/// users made and checked. `imap_only` (`loadgen idle`, `loadgen init`): --imap alone names the
/// servers (submission and POP3 default to its host's standard ports, unused), and users from a
/// template need no --domain (no mail is addressed).
pub fn resolve_common(a: &ConnFlags, imap_only: bool) -> Result<Resolved<CommonSpec>, AppError> {
    let env = match &a.server_env {
        Some(p) => Some(servers::read_server_env(p)?),
        None => None,
    };
    let servers = resolve_servers(a, env.as_ref(), imap_only)?;
    let trust = if a.insecure_tls {
        Trust::Insecure
    } else if let Some(ca) = a
        .ca_file
        .clone()
        .or_else(|| env.as_ref().and_then(|e| e.ca_file.clone()))
    {
        Trust::CaFile(ca)
    } else {
        Trust::System
    };
    let domain = a
        .domain
        .clone()
        .or_else(|| env.as_ref().and_then(|e| e.domain.clone()))
        .or_else(|| imap_only.then(|| "idle.invalid".to_string()));
    let (from, source, password) = resolve_users_from(a, env.as_ref(), domain.as_deref())?;
    let domain = domain.unwrap_or_default();
    let users = make_users(&from, &source, password.as_deref(), &domain)?;
    if let Some(h) = &a.helo {
        validate::domain(h).map_err(|e| AppError::usage(format!("--helo: {e}")))?;
    }
    let slice = a.partition.as_deref().map(parse_partition).transpose()?;
    let spec = CommonSpec {
        servers,
        trust,
        smtp_auth: if a.smtp_auth == "login" {
            AuthMechanism::Login
        } else {
            AuthMechanism::Plain
        },
        helo: a.helo.clone(),
        domain,
        users: UsersSpec {
            from,
            total: users.len(),
            source,
            slice,
        },
        profile: MailProfile {
            messages_per_day: DEFAULT_MESSAGES_PER_DAY,
            message_kb: DEFAULT_MESSAGE_KB,
            source: String::new(),
            mailboxes: None,
        },
        seed: a.seed,
        out: a.out.clone(),
    };
    let resolved = Resolved {
        spec,
        password,
        users,
    };
    // An empty slice is refused here, before the profile is read (as the flags are checked).
    resolved.sliced(&resolved.spec.users)?;
    let profile = resolve_profile(a)?;
    Ok(Resolved {
        spec: CommonSpec {
            profile,
            ..resolved.spec
        },
        ..resolved
    })
}

impl CommonSpec {
    /// The users again from this request where the run is (a host's copy of the users file, the
    /// template with `password`): the host's part of [`resolve_common`]. A copy holding other
    /// users than the coordinator counted is refused.
    pub fn load(self, password: Option<String>) -> Result<Resolved<CommonSpec>, AppError> {
        let users = make_users(
            &self.users.from,
            &self.users.source,
            password.as_deref(),
            &self.domain,
        )?;
        if users.len() != self.users.total {
            return Err(AppError::usage(format!(
                "the request's users ({}) are {} users, and {} were read here: the users file changed since the coordinator read it",
                self.users.source,
                self.users.total,
                users.len()
            )));
        }
        Ok(Resolved {
            spec: self,
            password,
            users,
        })
    }
}

impl Resolved<CommonSpec> {
    /// The runtime request: the slice's users, this machine's name for EHLO when none was
    /// given, stopped by `cancel`.
    pub fn common(&self, cancel: Arc<AtomicBool>) -> Result<Common, AppError> {
        self.common_of(&self.spec, cancel)
    }
}

impl<T> Resolved<T> {
    /// [`Resolved::common`] of the part `s` of this request.
    fn common_of(&self, s: &CommonSpec, cancel: Arc<AtomicBool>) -> Result<Common, AppError> {
        let (users, users_source) = self.sliced(&s.users)?;
        Ok(Common {
            servers: s.servers.clone(),
            trust: s.trust.clone(),
            smtp_auth: s.smtp_auth,
            helo: s.helo.clone().unwrap_or_else(mbx_engine::hostname),
            domain: s.domain.clone(),
            users,
            users_source,
            profile: s.profile.clone(),
            seed: s.seed,
            out: s.out.clone(),
            cancel,
        })
    }
}

/// `--clients desktop_imap=70,webmail=20,pop3=10`.
pub fn parse_clients(s: &str) -> Result<Vec<(ClientType, f64)>, AppError> {
    let mut out: Vec<(ClientType, f64)> = Vec::new();
    for part in s.split(',').map(str::trim).filter(|p| !p.is_empty()) {
        let (name, pct) = part.split_once('=').unwrap_or((part, "100"));
        let t = client_of(name).ok_or_else(|| {
            AppError::usage(format!(
                "--clients {s}: {name:?} is not a client type (desktop_imap, webmail, pop3, eas)"
            ))
        })?;
        let pct: f64 = pct
            .trim()
            .trim_end_matches('%')
            .parse()
            .ok()
            .filter(|v: &f64| v.is_finite() && *v >= 0.0 && *v <= 100.0)
            .ok_or_else(|| {
                AppError::usage(format!(
                    "--clients {s}: the share of {name} must be 0..=100 percent"
                ))
            })?;
        if out.iter().any(|(o, _)| *o == t) {
            return Err(AppError::usage(format!(
                "--clients {s}: {name} is given twice"
            )));
        }
        out.push((t, pct));
    }
    let total: f64 = out.iter().map(|c| c.1).sum();
    if out.is_empty() || total <= 0.0 {
        return Err(AppError::usage(format!(
            "--clients {s}: give at least one type with a share above 0, e.g. desktop_imap=70,webmail=20,pop3=10"
        )));
    }
    if (total - 100.0).abs() > 0.01 {
        return Err(AppError::usage(format!(
            "--clients {s}: the shares sum to {total}, not 100"
        )));
    }
    Ok(out)
}

/// `loadgen run`'s request: [`resolve_common`], then the day's own flags, every one checked.
pub fn resolve_day(a: &DayFlags) -> Result<Resolved<DaySpec>, AppError> {
    let Resolved {
        spec: mut common,
        password,
        users,
    } = resolve_common(&a.conn, false)?;
    if let Some(m) = a.messages_per_day {
        common.profile.messages_per_day = m;
    }
    let m = common.profile.messages_per_day;
    if !(MESSAGES_PER_DAY_MIN..=MESSAGES_PER_DAY_MAX).contains(&m) {
        let from = if a.messages_per_day.is_some() {
            "--messages-per-day".to_string()
        } else {
            format!("messages_per_day of --profile {}", common.profile.source)
        };
        return Err(AppError::usage(format!(
            "{from} {m}: must be {MESSAGES_PER_DAY_MIN}..={MESSAGES_PER_DAY_MAX} (the Exchange calculator's and LoadGen's profiles)"
        )));
    }
    let sliced = match common.users.slice {
        Some(s) => partition_range(users.len(), s.k, s.n).len(),
        None => users.len(),
    };
    if sliced < 2 {
        return Err(AppError::usage(
            "a day needs at least 2 users (each message goes to other users)",
        ));
    }
    let clients = parse_clients(&a.clients)?;
    let eas = resolve_eas(a.eas.as_deref(), &clients)?;
    let check = |ok: bool, what: &str| {
        if ok {
            Ok(())
        } else {
            Err(AppError::usage(what.to_string()))
        }
    };
    check(
        a.day >= Duration::from_secs(1) && a.day <= Duration::from_secs(7 * 86_400),
        "--day must be 1s..=7d",
    )?;
    check(a.days >= 1 && a.days <= 365, "--days must be 1..=365")?;
    check(
        a.overload.is_finite() && a.overload > 0.0 && a.overload <= 1000.0,
        "--overload must be above 0, at most 1000 (LoadGen: 1.5)",
    )?;
    check(
        a.grace <= Duration::from_secs(86_400),
        "--grace must be at most 24h",
    )?;
    check(
        (0.0..=100.0).contains(&a.tasks_achieved_pct),
        "--tasks-achieved-pct must be 0..=100",
    )?;
    check(
        a.task_p95_ms.is_finite() && a.task_p95_ms > 0.0,
        "--task-p95-ms must be above 0",
    )?;
    check(
        a.delivery_p95_ms.is_finite() && a.delivery_p95_ms > 0.0,
        "--delivery-p95-ms must be above 0",
    )?;
    check(
        a.sample_interval >= Duration::from_secs(1),
        "--sample-interval must be at least 1s",
    )?;
    check(
        a.eas_ping.is_none_or(|h| {
            h >= Duration::from_secs(1) && h <= Duration::from_secs(3540) && eas.is_some()
        }),
        "--eas-ping must be 1s..=59m (MS-ASCMD's longest heartbeat), with --eas",
    )?;
    if let Some(d) = a.duration {
        let most = if a.stress {
            Duration::from_secs(366 * 86_400)
        } else {
            a.day.saturating_mul(a.days)
        };
        check(
            d >= Duration::from_secs(1) && d <= most,
            "--duration must be at least 1s, at most --day x --days (366d with --stress)",
        )?;
    }
    Ok(Resolved {
        spec: DaySpec {
            common,
            run: DayRun {
                day: a.day,
                days: a.days,
                clients,
                overload_per_user: a.overload,
                grace: a.grace,
                sample_interval: a.sample_interval,
                duration: a.duration,
                stress: a.stress,
                eas,
                eas_ping: a.eas_ping,
                thresholds: LoadgenThresholds {
                    tasks_achieved_pct: a.tasks_achieved_pct,
                    task_p95_ms: a.task_p95_ms,
                    delivery_p95_ms: a.delivery_p95_ms,
                },
            },
        },
        password,
        users,
    })
}

/// The default path of an ActiveSync endpoint (Exchange's; SOGo's is
/// `/SOGo/Microsoft-Server-ActiveSync` unless a web server in front rewrites it).
pub const EAS_PATH: &str = "/Microsoft-Server-ActiveSync";

/// `--eas URL` checked against the client mix: `http(s)://host[:port][/path]`, the path
/// [`EAS_PATH`] when none is given. Errors: a URL that is not one, `eas` users without it.
pub fn resolve_eas(
    url: Option<&str>,
    clients: &[(ClientType, f64)],
) -> Result<Option<String>, AppError> {
    let wants = clients
        .iter()
        .any(|(c, n)| *c == ClientType::Eas && *n > 0.0);
    let Some(url) = url.map(str::trim).filter(|u| !u.is_empty()) else {
        return match wants {
            true => Err(AppError::usage(format!(
                "--clients gives eas users but no ActiveSync endpoint: add --eas URL (e.g. --eas https://mail.example.com{EAS_PATH})"
            ))),
            false => Ok(None),
        };
    };
    let bad = |why: &str| {
        AppError::usage(format!(
            "--eas {url:?}: {why}; e.g. --eas https://mail.example.com{EAS_PATH}"
        ))
    };
    let (scheme, rest) = url
        .split_once("://")
        .ok_or_else(|| bad("not a URL (http:// or https://)"))?;
    if !scheme.eq_ignore_ascii_case("http") && !scheme.eq_ignore_ascii_case("https") {
        return Err(bad("the scheme must be http or https"));
    }
    let (authority, path) = match rest.find('/') {
        Some(i) => (&rest[..i], &rest[i..]),
        None => (rest, ""),
    };
    if authority.is_empty()
        || authority.starts_with(':')
        || authority.contains('@')
        || path.contains('?')
    {
        return Err(bad("give host[:port] and a path, no user or query"));
    }
    if let Some((_, port)) = authority
        .rsplit_once(':')
        .filter(|_| !authority.ends_with(']'))
    {
        port.parse::<u16>()
            .map_err(|_| bad("the port must be a number 1..=65535"))?;
    }
    let path = match path {
        "" | "/" => EAS_PATH,
        p => p,
    };
    Ok(Some(format!(
        "{}://{authority}{path}",
        scheme.to_ascii_lowercase()
    )))
}

impl DaySpec {
    /// The users again from this request where the run is: see [`CommonSpec::load`].
    pub fn load(self, password: Option<String>) -> Result<Resolved<DaySpec>, AppError> {
        let DaySpec { common, .. } = &self;
        let loaded = common.clone().load(password)?;
        Ok(Resolved {
            spec: self,
            password: loaded.password,
            users: loaded.users,
        })
    }
}

impl Resolved<DaySpec> {
    /// The runtime request: stopped by `cancel`, started by `gate` when given.
    pub fn request(
        &self,
        cancel: Arc<AtomicBool>,
        gate: Option<Arc<mbx_engine::StartGate>>,
    ) -> Result<DayRequest, AppError> {
        let s = &self.spec;
        let common = self.common_of(&s.common, cancel)?;
        Ok(DayRequest {
            common,
            run: s.run.clone(),
            gate,
            partition: s.common.users.slice.map(|p| format!("{}/{}", p.k, p.n)),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_eas_endpoint_is_checked_and_given_its_default_path() {
        let eas = [(ClientType::Eas, 50.0), (ClientType::DesktopImap, 50.0)];
        assert_eq!(
            resolve_eas(Some("https://mail.example.com"), &eas).expect("ok"),
            Some("https://mail.example.com/Microsoft-Server-ActiveSync".into())
        );
        assert_eq!(
            resolve_eas(
                Some("HTTP://127.0.0.1:8080/SOGo/Microsoft-Server-ActiveSync"),
                &eas
            )
            .expect("ok"),
            Some("http://127.0.0.1:8080/SOGo/Microsoft-Server-ActiveSync".into())
        );
        let e = resolve_eas(None, &eas).expect_err("eas users need it");
        assert!(e.to_string().contains("--eas URL"), "{e}");
        assert_eq!(
            resolve_eas(None, &[(ClientType::Pop3, 100.0)]).expect("ok"),
            None
        );
        for bad in [
            "mail.example.com",
            "ftp://x/",
            "https://:1/",
            "https://h:99999/",
        ] {
            assert!(resolve_eas(Some(bad), &eas).is_err(), "{bad}");
        }
        assert_eq!(
            parse_clients("eas=100").expect("eas"),
            vec![(ClientType::Eas, 100.0)]
        );
    }

    #[test]
    fn partitions_cover_every_user_once_and_bad_ones_are_refused() {
        for total in [2usize, 3, 7, 100, 16_000] {
            for n in [1usize, 2, 3, 7] {
                let mut next = 0;
                for k in 1..=n {
                    let r = partition_range(total, k, n);
                    assert_eq!(r.start, next, "{total} {k}/{n}");
                    assert!(r.len().abs_diff(total / n) <= 1, "{total} {k}/{n}: {r:?}");
                    next = r.end;
                }
                assert_eq!(next, total, "{total} /{n}");
            }
        }
        assert_eq!(parse_partition("2/4").expect("ok"), Slice { k: 2, n: 4 });
        for bad in ["0/2", "3/2", "1", "a/b", "1/0", "1/10001", "-1/2", "1/2/3"] {
            assert!(parse_partition(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn client_shares_parse_and_must_sum_to_100() {
        assert_eq!(
            parse_clients("desktop_imap=70, webmail=20,pop3=10%").expect("mix"),
            vec![
                (ClientType::DesktopImap, 70.0),
                (ClientType::Webmail, 20.0),
                (ClientType::Pop3, 10.0)
            ]
        );
        assert_eq!(
            parse_clients("pop3").expect("one"),
            vec![(ClientType::Pop3, 100.0)]
        );
        for (bad, says) in [
            ("desktop_imap=70", "sum to 70"),
            ("mapi=100", "not a client type"),
            ("pop3=50,pop3=50", "twice"),
            ("pop3=-5,webmail=105", "0..=100"),
            ("", "at least one"),
        ] {
            let e = parse_clients(bad).expect_err(bad).to_string();
            assert!(e.contains(says), "{bad}: {e}");
        }
    }
}
