//! `mbxstress loadgen init|run`: flags to the application layer's loadgen requests, the
//! terminal's rendering, exit codes.

use std::process::ExitCode;
use std::sync::Arc;

use anyhow::Context;

use mbx_app::loadgen::servers::{self, Proto, ServersSpec};
use mbx_app::loadgen::{client_of, Common, DayRequest, InitRequest, MailProfile};
use mbx_loadgen::{validate, AuthMechanism, Trust};
use mbx_result::LoadgenThresholds;

use crate::cli::{
    LoadgenConnArgs, LoadgenIdleArgs, LoadgenInitArgs, LoadgenRunArgs, LoadgenSubmitArgs,
};
use crate::exit::usage;

/// The Exchange calculator's average message size, KB.
const DEFAULT_MESSAGE_KB: f64 = 75.0;
/// The profile most published tests use (Tintri's, LoadGen "heavy"), messages per day.
const DEFAULT_MESSAGES_PER_DAY: u32 = 150;
/// The range of messages per day a loadgen day takes: the Exchange calculator's profiles.
const MESSAGES_PER_DAY_MIN: u32 = 50;
/// See [`MESSAGES_PER_DAY_MIN`].
const MESSAGES_PER_DAY_MAX: u32 = 500;
/// The most messages `loadgen init` puts in one mailbox (75 GB at the calculator's 75 KB).
const MAX_INIT_MESSAGES: u32 = 1_000_000;
/// Initialization's default messages per mailbox.
const DEFAULT_INIT_MESSAGES: u32 = 100;

/// The loadgen flags in common. `imap_only` (`loadgen idle`): --imap alone names the servers
/// (submission and POP3 default to its host's standard ports, unused), and users from a template
/// need no --domain (no mail is addressed).
fn common(a: &LoadgenConnArgs, imap_only: bool) -> anyhow::Result<Common> {
    common_with(a, imap_only, None)
}

/// [`common`], stopped by `cancel` when given (none: Ctrl-C's handler is installed).
fn common_with(
    a: &LoadgenConnArgs,
    imap_only: bool,
    cancel: Option<Arc<std::sync::atomic::AtomicBool>>,
) -> anyhow::Result<Common> {
    let env = match &a.server_env {
        Some(p) => Some(servers::read_server_env(p).map_err(super::run::into_anyhow)?),
        None => None,
    };
    let mut spec: Option<ServersSpec> = env.as_ref().map(|e| e.servers.clone());
    if let Some(host) = &a.server {
        spec = Some(servers::standard(host).map_err(super::run::into_anyhow)?);
    }
    let url = |p: Proto, v: &Option<String>| -> anyhow::Result<Option<servers::ServerSpec>> {
        v.as_deref()
            .map(|u| servers::parse_url(p, u))
            .transpose()
            .map_err(super::run::into_anyhow)
    };
    let (smtp, imap, pop3) = (
        url(Proto::Smtp, &a.smtp)?,
        url(Proto::Imap, &a.imap)?,
        url(Proto::Pop3, &a.pop3)?,
    );
    let spec = match (spec, smtp, imap, pop3) {
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
            let mut s = servers::standard(&imap.host).map_err(super::run::into_anyhow)?;
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
            return Err(usage(
                "no IMAP server given: --imap URL (imaps://HOST:993, imap+starttls://HOST:143, imap://HOST:143), --server HOST (IMAPS 993) or --server-env DIR/server.env",
            ))
        }
        _ => {
            return Err(usage(
                "no mail server given: --server HOST (submission 587, IMAPS 993, POP3S 995), --server-env DIR/server.env (scripts/mailserver.sh), or all of --smtp, --imap and --pop3 URLs",
            ))
        }
    };
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
    let (users, users_source) = if let Some(path) = &a.users_file {
        let users =
            mbx_loadgen::users::read_file(path, domain.as_deref().unwrap_or("")).map_err(|e| {
                // The file's own text (a user name) is in the message: shown, not obeyed.
                usage(format!(
                    "--users-file: {}",
                    mbx_config::text::visible(&e.to_string(), 1000)
                ))
            })?;
        if domain.is_none() {
            // Only a user whose address is incomplete needs it (the file's address column,
            // or a login that is an address, is enough).
            if let Some(u) = users.iter().find(|u| u.address.ends_with('@')) {
                return Err(usage(format!(
                    "--users-file {}: user {} has no domain: give --domain (the mail domain of users listed without one)",
                    path.display(),
                    mbx_config::text::visible(&u.login, 200)
                )));
            }
        }
        (users, format!("file {}", path.display()))
    } else {
        let count = a
            .users
            .or_else(|| env.as_ref().and_then(|e| e.users))
            .ok_or_else(|| {
                usage("no users given: --users N (with --password), or --users-file FILE")
            })?;
        let template = a
            .user_template
            .clone()
            .or_else(|| env.as_ref().and_then(|e| e.user_template.clone()))
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
            .or_else(|| env.as_ref().and_then(|e| e.password.clone()))
            .ok_or_else(|| usage("--users needs --password (the template users' password)"))?;
        let domain = domain.as_deref().ok_or_else(|| {
            usage("--users needs --domain (the mail domain: user loadgen1 is loadgen1@DOMAIN)")
        })?;
        if count > validate::MAX_USERS {
            return Err(usage(format!(
                "--users {count}: at most {} users in one run (about 1 KB of memory each); split a larger population with fleet loadgen",
                validate::MAX_USERS
            )));
        }
        validate::template(&template).map_err(|e| usage(format!("--user-template: {e}")))?;
        validate::domain(domain).map_err(|e| usage(format!("--domain: {e}")))?;
        let users =
            mbx_loadgen::users::from_template(&template, a.first_user, count, &password, domain)
                .map_err(|e| usage(format!("--users / --user-template: {e}")))?;
        let source = format!("template {template} from {}", a.first_user);
        (users, source)
    };
    // Every name that enters a protocol line, checked in one place (mbx_loadgen::validate):
    // no CR, LF or NUL can become a second command, whatever flag or file gave it.
    if let Some(d) = domain.as_deref() {
        validate::domain(d).map_err(|e| usage(format!("--domain: {e}")))?;
    }
    validate::users(&users).map_err(|e| usage(format!("users ({users_source}): {e}")))?;
    if let Some(h) = &a.helo {
        validate::domain(h).map_err(|e| usage(format!("--helo: {e}")))?;
    }
    let (users, users_source) = match &a.partition {
        Some(p) => {
            let (k, n) = parse_partition(p)?;
            let total = users.len();
            let range = partition_range(total, k, n);
            if range.is_empty() {
                return Err(usage(format!(
                    "--partition {p}: slice {k} of {n} of {total} users is empty: use fewer client machines than users"
                )));
            }
            let source = format!(
                "{users_source}, users {}..={} of {total} (partition {k}/{n})",
                range.start + 1,
                range.end
            );
            (users[range].to_vec(), source)
        }
        None => (users, users_source),
    };
    let file_profile = match &a.profile {
        Some(p) => Some(
            mbx_config::Profile::load(p)
                .with_context(|| format!("reading --profile {}", p.display()))?,
        ),
        None => None,
    };
    let message_kb = match a.message_kb {
        Some(kb) if !(kb.is_finite() && kb > 0.0 && kb <= 10_240.0) => {
            return Err(usage(format!(
                "--message-kb {kb}: must be above 0, at most 10240"
            )))
        }
        Some(kb) => kb,
        None => file_profile
            .as_ref()
            .and_then(|p| p.message_size_kb)
            .unwrap_or(DEFAULT_MESSAGE_KB),
    };
    let profile = MailProfile {
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
    };
    Ok(Common {
        servers: spec,
        trust,
        smtp_auth: if a.smtp_auth == "login" {
            AuthMechanism::Login
        } else {
            AuthMechanism::Plain
        },
        helo: a.helo.clone().unwrap_or_else(mbx_engine::hostname),
        domain: domain.unwrap_or_default(),
        users,
        users_source,
        profile,
        seed: a.seed,
        out: a.out.clone(),
        cancel: cancel.unwrap_or_else(crate::interrupt::install),
    })
}

/// The most bytes of a `--password-file` read (a password is a line, not a file's worth).
const PASSWORD_FILE_LIMIT: u64 = 4096;

/// The password in `--password-file`: its first line (a regular file of at most 4 KiB; a FIFO,
/// device or larger file is refused before it is read).
fn read_password_file(path: &std::path::Path) -> anyhow::Result<String> {
    let text = mbx_config::input::read_bounded(
        path,
        PASSWORD_FILE_LIMIT,
        "the --password-file (the users' password on its first line)",
    )
    .map_err(|e| usage(format!("--password-file: {e}")))?;
    let line = text.lines().next().unwrap_or("").trim_end_matches('\r');
    if line.is_empty() {
        return Err(usage(format!(
            "--password-file {}: the first line is empty: write the password on it",
            path.display()
        )));
    }
    Ok(line.to_string())
}

/// `K/N` of `--partition`: 1 <= K <= N <= 10,000.
fn parse_partition(p: &str) -> anyhow::Result<(usize, usize)> {
    let bad = || {
        usage(format!(
            "--partition {p:?}: expected K/N with 1 <= K <= N <= 10000 (slice K of N of the users)"
        ))
    };
    let (k, n) = p.split_once('/').ok_or_else(bad)?;
    let k: usize = k.trim().parse().map_err(|_| bad())?;
    let n: usize = n.trim().parse().map_err(|_| bad())?;
    if k == 0 || k > n || n > 10_000 {
        return Err(bad());
    }
    Ok((k, n))
}

/// The users of slice `k` (1-based) of `n`: contiguous, sizes differing by at most one, every
/// user in exactly one slice.
fn partition_range(total: usize, k: usize, n: usize) -> std::ops::Range<usize> {
    let at = |i: usize| {
        // total x i / n without overflow: total <= u32::MAX users, n <= 10,000.
        ((total as u128 * i as u128) / n.max(1) as u128) as usize
    };
    at(k.saturating_sub(1))..at(k)
}

fn finish(
    ran: Result<mbx_app::loadgen::Ran, mbx_app::AppError>,
    term: &mut crate::terminal::Terminal,
) -> anyhow::Result<ExitCode> {
    let ran = ran.map_err(super::run::into_anyhow)?;
    term.finish()?;
    Ok(super::run::code_for(ran.result.stopped.reason))
}

/// `loadgen init`.
pub fn init(args: LoadgenInitArgs) -> anyhow::Result<ExitCode> {
    // Initialization speaks IMAP only (APPEND): an --imap URL is enough, as for `idle`.
    let common = common(&args.conn, true)?;
    let messages = match (args.messages, args.mailbox_mb) {
        (Some(n), _) if n > MAX_INIT_MESSAGES => {
            return Err(usage(format!(
                "--messages {n}: at most {MAX_INIT_MESSAGES} messages per mailbox"
            )))
        }
        (Some(n), _) => n,
        (None, Some(mb)) => {
            if !(mb.is_finite() && mb > 0.0 && mb <= 1_048_576.0) {
                return Err(usage(format!(
                    "--mailbox-mb {mb}: must be above 0, at most 1048576"
                )));
            }
            let n = (mb * 1024.0 / common.profile.message_kb).round();
            if n > f64::from(u32::MAX) {
                return Err(usage(format!("--mailbox-mb {mb}: too many messages")));
            }
            if n > f64::from(MAX_INIT_MESSAGES) {
                return Err(usage(format!(
                    "--mailbox-mb {mb}: {n} messages of {} KB, over the {MAX_INIT_MESSAGES} per mailbox `loadgen init` fills",
                    common.profile.message_kb
                )));
            }
            (n as u32).max(1)
        }
        (None, None) => DEFAULT_INIT_MESSAGES,
    };
    if args.concurrency == 0 || args.concurrency > 10_000 {
        return Err(usage("--concurrency must be 1..=10000"));
    }
    if args.batch == 0 || args.batch > 1000 {
        return Err(usage("--batch must be 1..=1000"));
    }
    let mut term = crate::terminal::Terminal::new(args.conn.progress);
    let req = InitRequest {
        common,
        messages,
        concurrency: args.concurrency as usize,
        batch: args.batch as usize,
    };
    finish(mbx_app::loadgen::init(&req, &mut term), &mut term)
}

/// `--clients desktop_imap=70,webmail=20,pop3=10`.
fn parse_clients(s: &str) -> anyhow::Result<Vec<(mbx_loadgen::sched::ClientType, f64)>> {
    let mut out: Vec<(mbx_loadgen::sched::ClientType, f64)> = Vec::new();
    for part in s.split(',').map(str::trim).filter(|p| !p.is_empty()) {
        let (name, pct) = part.split_once('=').unwrap_or((part, "100"));
        let t = client_of(name).ok_or_else(|| {
            usage(format!(
                "--clients {s}: {name:?} is not a client type (desktop_imap, webmail, pop3)"
            ))
        })?;
        let pct: f64 = pct
            .trim()
            .trim_end_matches('%')
            .parse()
            .ok()
            .filter(|v: &f64| v.is_finite() && *v >= 0.0 && *v <= 100.0)
            .ok_or_else(|| {
                usage(format!(
                    "--clients {s}: the share of {name} must be 0..=100 percent"
                ))
            })?;
        if out.iter().any(|(o, _)| *o == t) {
            return Err(usage(format!("--clients {s}: {name} is given twice")));
        }
        out.push((t, pct));
    }
    let total: f64 = out.iter().map(|c| c.1).sum();
    if out.is_empty() || total <= 0.0 {
        return Err(usage(format!(
            "--clients {s}: give at least one type with a share above 0, e.g. desktop_imap=70,webmail=20,pop3=10"
        )));
    }
    if (total - 100.0).abs() > 0.01 {
        return Err(usage(format!(
            "--clients {s}: the shares sum to {total}, not 100"
        )));
    }
    Ok(out)
}

/// `loadgen run`.
pub fn run(args: LoadgenRunArgs) -> anyhow::Result<ExitCode> {
    let req = day_request(&args, None)?;
    let mut term = crate::terminal::Terminal::new(args.conn.progress);
    finish(mbx_app::loadgen::day(&req, &mut term), &mut term)
}

/// The day `args` ask for, every flag checked (`fleet loadgen` checks its clients' flags here,
/// with its own `cancel`, before any host is touched).
pub(crate) fn day_request(
    args: &LoadgenRunArgs,
    cancel: Option<Arc<std::sync::atomic::AtomicBool>>,
) -> anyhow::Result<DayRequest> {
    let mut common = common_with(&args.conn, false, cancel)?;
    if let Some(m) = args.messages_per_day {
        common.profile.messages_per_day = m;
    }
    let m = common.profile.messages_per_day;
    if !(MESSAGES_PER_DAY_MIN..=MESSAGES_PER_DAY_MAX).contains(&m) {
        let from = if args.messages_per_day.is_some() {
            "--messages-per-day".to_string()
        } else {
            format!("messages_per_day of --profile {}", common.profile.source)
        };
        return Err(usage(format!(
            "{from} {m}: must be {MESSAGES_PER_DAY_MIN}..={MESSAGES_PER_DAY_MAX} (the Exchange calculator's and LoadGen's profiles)"
        )));
    }
    if common.users.len() < 2 {
        return Err(usage(
            "a day needs at least 2 users (each message goes to other users)",
        ));
    }
    let clients = parse_clients(&args.clients)?;
    let check = |ok: bool, what: &str| {
        if ok {
            Ok(())
        } else {
            Err(usage(what.to_string()))
        }
    };
    check(
        args.day >= std::time::Duration::from_secs(1)
            && args.day <= std::time::Duration::from_secs(7 * 86_400),
        "--day must be 1s..=7d",
    )?;
    check(args.days >= 1 && args.days <= 365, "--days must be 1..=365")?;
    check(
        args.overload.is_finite() && args.overload > 0.0 && args.overload <= 1000.0,
        "--overload must be above 0, at most 1000 (LoadGen: 1.5)",
    )?;
    check(
        args.grace <= std::time::Duration::from_secs(86_400),
        "--grace must be at most 24h",
    )?;
    check(
        (0.0..=100.0).contains(&args.tasks_achieved_pct),
        "--tasks-achieved-pct must be 0..=100",
    )?;
    check(
        args.task_p95_ms.is_finite() && args.task_p95_ms > 0.0,
        "--task-p95-ms must be above 0",
    )?;
    check(
        args.delivery_p95_ms.is_finite() && args.delivery_p95_ms > 0.0,
        "--delivery-p95-ms must be above 0",
    )?;
    check(
        args.sample_interval >= std::time::Duration::from_secs(1),
        "--sample-interval must be at least 1s",
    )?;
    if let Some(d) = args.duration {
        let most = if args.stress {
            std::time::Duration::from_secs(366 * 86_400)
        } else {
            args.day.saturating_mul(args.days)
        };
        check(
            d >= std::time::Duration::from_secs(1) && d <= most,
            "--duration must be at least 1s, at most --day x --days (366d with --stress)",
        )?;
    }
    let common_cancel = Arc::clone(&common.cancel);
    Ok(DayRequest {
        common,
        day: args.day,
        days: args.days,
        clients,
        overload_per_user: args.overload,
        grace: args.grace,
        sample_interval: args.sample_interval,
        duration: args.duration,
        stress: args.stress,
        thresholds: LoadgenThresholds {
            tasks_achieved_pct: args.tasks_achieved_pct,
            task_p95_ms: args.task_p95_ms,
            delivery_p95_ms: args.delivery_p95_ms,
        },
        gate: args
            .start_gate
            .as_ref()
            .map(|_| super::run::start_gate_from_stdin(Arc::clone(&common_cancel))),
        partition: args.conn.partition.clone(),
    })
}

/// `loadgen idle`.
pub fn idle(args: LoadgenIdleArgs) -> anyhow::Result<ExitCode> {
    let common = common(&args.conn, true)?;
    if args.connections == 0 || args.connections > 1_000_000 {
        return Err(usage("--connections must be 1..=1000000"));
    }
    if args.concurrency == 0 || args.concurrency > 100_000 {
        return Err(usage("--concurrency must be 1..=100000"));
    }
    if args.hold > std::time::Duration::from_secs(7 * 86_400) {
        return Err(usage("--hold must be at most 7d"));
    }
    if args.sample_interval < std::time::Duration::from_millis(100) {
        return Err(usage("--sample-interval must be at least 100ms"));
    }
    let mut term = crate::terminal::Terminal::new(args.conn.progress);
    let req = mbx_app::loadgen::idle::IdleRequest {
        common,
        connections: args.connections,
        hold: args.hold,
        concurrency: args.concurrency as usize,
        sample_interval: args.sample_interval,
    };
    finish(mbx_app::loadgen::idle::idle(&req, &mut term), &mut term)
}

/// `loadgen submit`.
pub fn submit(args: LoadgenSubmitArgs) -> anyhow::Result<ExitCode> {
    let smtp = servers::parse_url(Proto::Smtp, &args.smtp).map_err(super::run::into_anyhow)?;
    let kb = args.message_kb;
    if !(kb.is_finite() && (1.0..=10_240.0).contains(&kb)) {
        return Err(usage(format!("--message-kb {kb}: must be 1..=10240")));
    }
    if args.connections == 0 || args.connections > 100_000 {
        return Err(usage("--connections must be 1..=100000"));
    }
    if args.messages == 0 {
        return Err(usage("--messages must be at least 1"));
    }
    if args.threads > 1024 {
        return Err(usage("--threads must be 0..=1024"));
    }
    let helo = args.helo.clone().unwrap_or_else(mbx_engine::hostname);
    let from = args
        .from
        .clone()
        .unwrap_or_else(|| format!("mbxstress@{helo}"));
    let to = if args.to.is_empty() {
        vec![from.clone()]
    } else {
        args.to.clone()
    };
    // The same checks as every other subcommand's (mbx_loadgen::validate).
    if let Some(h) = &args.helo {
        validate::domain(h).map_err(|e| usage(format!("--helo: {e}")))?;
    }
    for a in std::iter::once(&from).chain(&to) {
        validate::address(a).map_err(|e| usage(e.to_string()))?;
    }
    if let (Some(u), Some(p)) = (&args.auth_user, &args.password) {
        validate::login(u).map_err(|e| usage(format!("--auth-user: {e}")))?;
        validate::password(u, p).map_err(|e| usage(format!("--password: {e}")))?;
    }
    let trust = if args.insecure_tls {
        Trust::Insecure
    } else if let Some(ca) = &args.ca_file {
        Trust::CaFile(ca.clone())
    } else {
        Trust::System
    };
    let mechanism = if args.smtp_auth == "login" {
        AuthMechanism::Login
    } else {
        AuthMechanism::Plain
    };
    let login = args
        .auth_user
        .clone()
        .zip(args.password.clone())
        .map(|(u, p)| (u, p, mechanism));
    let mut term = crate::terminal::Terminal::new(args.progress);
    let req = mbx_app::loadgen::submit::SubmitRequest {
        smtp,
        trust,
        login,
        helo,
        connections: args.connections as usize,
        messages: u64::from(args.messages),
        message_kb: kb,
        mixed_sizes: args.mixed_sizes,
        pipelining: !args.no_pipelining,
        from,
        to,
        seed: args.seed,
        threads: args.threads as usize,
        out: args.out.clone(),
        cancel: crate::interrupt::install(),
    };
    finish(mbx_app::loadgen::submit::submit(&req, &mut term), &mut term)
}

#[cfg(test)]
mod tests {
    use super::*;
    use mbx_loadgen::sched::ClientType;

    #[test]
    fn a_profile_of_other_mailboxes_than_users_is_said_not_silently_replaced() {
        let p = MailProfile {
            messages_per_day: 150,
            message_kb: 75.0,
            source: "big.toml".into(),
            mailboxes: Some(5000),
        };
        let n =
            mbx_app::loadgen::profile_users_note(&p, 30, "file /tmp/m/server.env").expect("said");
        assert!(
            n.contains("5000 mailboxes") && n.contains("30 users"),
            "{n}"
        );
        assert_eq!(mbx_app::loadgen::profile_users_note(&p, 5000, "x"), None);
        let flags = MailProfile {
            mailboxes: None,
            ..p.clone()
        };
        assert_eq!(mbx_app::loadgen::profile_users_note(&flags, 30, "x"), None);
    }

    /// The README's loadgen example (its server's users, its flags, the other defaults) runs
    /// without the overload-guard warning that tells the user to raise --overload.
    #[test]
    fn the_readme_loadgen_example_holds_a_guard_worth_no_warning() {
        let readme =
            std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/../../README.md"))
                .expect("README.md");
        let flag = |line: &str, name: &str| -> Option<String> {
            let mut w = line.split_whitespace();
            w.position(|x| x == name)?;
            w.next().map(str::to_owned)
        };
        let users: usize = readme
            .lines()
            .find(|l| l.contains("scripts/mailserver.sh start"))
            .and_then(|l| flag(l, "--users"))
            .and_then(|n| n.parse().ok())
            .expect("the example's server users");
        let run = readme
            .lines()
            .find(|l| l.starts_with("mbxstress loadgen run --server-env"))
            .expect("the example's run line");
        use clap::Parser;
        let cli = crate::cli::Cli::try_parse_from(run.split_whitespace()).expect("parses");
        let crate::cli::Command::Loadgen(crate::cli::LoadgenCommand::Run(args)) = cli.command
        else {
            panic!("not loadgen run: {run}");
        };
        let kinds = mbx_app::loadgen::assign_clients(
            users,
            &parse_clients(&args.clients).expect("clients"),
        );
        let (guard_s, rate) = mbx_app::loadgen::guard_seconds(
            args.conn.seed,
            DEFAULT_MESSAGES_PER_DAY,
            args.day,
            &kinds,
            args.overload,
        );
        assert!(
            guard_s >= mbx_app::loadgen::GUARD_WARN_S,
            "{run}: the guard holds {guard_s:.1} s at {rate:.0} tasks/s"
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
        assert_eq!(parse_partition("2/4").expect("ok"), (2, 4));
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
