//! `loadgen init`, `idle`, `submit` and `find-max`: their flags ([`InitFlags`], [`IdleFlags`],
//! [`SubmitFlags`], [`FindMaxFlags`]: the binary copies its clap arguments into them) to their
//! validated requests, on the same resolution path as `loadgen run` ([`super::request`]).

use std::path::PathBuf;
use std::sync::atomic::AtomicBool;
use std::sync::Arc;
use std::time::Duration;

use mbx_loadgen::{validate, AuthMechanism, Trust};

use super::find_max::Settings;
use super::find_max_run::FindMaxRequest;
use super::idle::IdleRequest;
use super::request::{resolve_common, resolve_day, ConnFlags, DayFlags};
use super::servers::{self, Proto};
use super::submit::SubmitRequest;
use super::InitRequest;
use crate::AppError;

/// The most messages `loadgen init` puts in one mailbox (75 GB at the calculator's 75 KB).
const MAX_INIT_MESSAGES: u32 = 1_000_000;
/// Initialization's default messages per mailbox.
const DEFAULT_INIT_MESSAGES: u32 = 100;

/// `loadgen init`'s flags.
#[derive(Debug, Clone, Default)]
pub struct InitFlags {
    /// The flags in common.
    pub conn: ConnFlags,
    /// `--messages N`.
    pub messages: Option<u32>,
    /// `--mailbox-mb MB`.
    pub mailbox_mb: Option<f64>,
    /// `--concurrency N`.
    pub concurrency: u32,
    /// `--batch N`.
    pub batch: u32,
}

/// `loadgen init`'s request: initialization speaks IMAP only (APPEND): an --imap URL is enough,
/// as for `idle`.
pub fn init_request(a: &InitFlags, cancel: Arc<AtomicBool>) -> Result<InitRequest, AppError> {
    let common = resolve_common(&a.conn, true)?.common(cancel)?;
    let messages = match (a.messages, a.mailbox_mb) {
        (Some(n), _) if n > MAX_INIT_MESSAGES => {
            return Err(AppError::usage(format!(
                "--messages {n}: at most {MAX_INIT_MESSAGES} messages per mailbox"
            )))
        }
        (Some(n), _) => n,
        (None, Some(mb)) => {
            if !(mb.is_finite() && mb > 0.0 && mb <= 1_048_576.0) {
                return Err(AppError::usage(format!(
                    "--mailbox-mb {mb}: must be above 0, at most 1048576"
                )));
            }
            let n = (mb * 1024.0 / common.profile.message_kb).round();
            if n > f64::from(u32::MAX) {
                return Err(AppError::usage(format!(
                    "--mailbox-mb {mb}: too many messages"
                )));
            }
            if n > f64::from(MAX_INIT_MESSAGES) {
                return Err(AppError::usage(format!(
                    "--mailbox-mb {mb}: {n} messages of {} KB, over the {MAX_INIT_MESSAGES} per mailbox `loadgen init` fills",
                    common.profile.message_kb
                )));
            }
            // In range: checked against MAX_INIT_MESSAGES just above.
            (n as u32).max(1)
        }
        (None, None) => DEFAULT_INIT_MESSAGES,
    };
    if a.concurrency == 0 || a.concurrency > 10_000 {
        return Err(AppError::usage("--concurrency must be 1..=10000"));
    }
    if a.batch == 0 || a.batch > 1000 {
        return Err(AppError::usage("--batch must be 1..=1000"));
    }
    Ok(InitRequest {
        common,
        messages,
        concurrency: a.concurrency as usize,
        batch: a.batch as usize,
    })
}

/// `loadgen find-max`'s flags: `loadgen run`'s (each step is one) and the search's.
#[derive(Debug, Clone)]
pub struct FindMaxFlags {
    /// The day of every step (its `duration` must be None: the step is `step`).
    pub day: DayFlags,
    /// `--start-users N`.
    pub start_users: u64,
    /// `--step`: each step runs the first this long of the day, at the day's rate.
    pub step: Duration,
    /// `--max-steps N`.
    pub max_steps: u32,
    /// `--resolution-pct`.
    pub resolution_pct: f64,
    /// `--confirmations N` (0: none).
    pub confirmations: u32,
    /// `--init-messages N`: messages each mailbox gets before the first step that runs it
    /// (0: the mailboxes are filled already, nothing is appended).
    pub init_messages: u32,
    /// `--init-concurrency N`.
    pub init_concurrency: u32,
}

/// `loadgen find-max`'s request: the day resolved as `loadgen run`'s ([`resolve_day`], with
/// `--step` as its `--duration`), the search's flags checked, and the fill of the mailboxes
/// on the same servers and users.
pub fn find_max_request(
    a: &FindMaxFlags,
    cancel: Arc<AtomicBool>,
) -> Result<FindMaxRequest, AppError> {
    if a.day.duration.is_some() {
        return Err(AppError::usage(
            "loadgen find-max: each step's length is --step, not --duration",
        ));
    }
    if a.day.stress {
        return Err(AppError::usage(
            "loadgen find-max does not take --stress: its steps judge the scheduled day",
        ));
    }
    if a.day.conn.partition.is_some() {
        return Err(AppError::usage(
            "loadgen find-max does not take --partition: it runs every step from this client",
        ));
    }
    let min = super::find_max::MIN_USERS;
    if a.start_users < min {
        return Err(AppError::usage(format!(
            "--start-users {}: at least {min} (a day needs two users)",
            a.start_users
        )));
    }
    if a.max_steps == 0 || a.max_steps > 100 {
        return Err(AppError::usage("--max-steps must be 1..=100"));
    }
    if !(a.resolution_pct.is_finite() && a.resolution_pct > 0.0 && a.resolution_pct <= 50.0) {
        return Err(AppError::usage(
            "--resolution-pct must be above 0, at most 50",
        ));
    }
    if a.confirmations > 20 {
        return Err(AppError::usage("--confirmations must be 0..=20"));
    }
    if a.init_messages > MAX_INIT_MESSAGES {
        return Err(AppError::usage(format!(
            "--init-messages {}: at most {MAX_INIT_MESSAGES} messages per mailbox",
            a.init_messages
        )));
    }
    if a.init_concurrency == 0 || a.init_concurrency > 10_000 {
        return Err(AppError::usage("--init-concurrency must be 1..=10000"));
    }
    let mut day = a.day.clone();
    // The step is the day's --duration, so resolve_day's check of it (at least 1s, at most
    // --day x --days) is the step's.
    day.duration = Some(a.step);
    let day = resolve_day(&day)
        .map_err(|e| match e {
            AppError::Usage(m) => AppError::usage(m.replace("--duration", "--step")),
            e => e,
        })?
        .request(cancel, None)?;
    let users = day.common.users.len() as u64;
    let init = (a.init_messages > 0).then(|| InitRequest {
        common: day.common.clone(),
        messages: a.init_messages,
        concurrency: a.init_concurrency as usize,
        batch: 16,
    });
    Ok(FindMaxRequest {
        settings: Settings {
            start_users: a.start_users.min(users),
            max_users: users,
            resolution_pct: a.resolution_pct,
            max_steps: a.max_steps as usize,
            confirmations: a.confirmations as usize,
        },
        day,
        init,
    })
}

/// `loadgen idle`'s flags.
#[derive(Debug, Clone, Default)]
pub struct IdleFlags {
    /// The flags in common.
    pub conn: ConnFlags,
    /// `--connections N`.
    pub connections: u32,
    /// `--hold`.
    pub hold: Duration,
    /// `--concurrency N`.
    pub concurrency: u32,
    /// `--sample-interval`.
    pub sample_interval: Duration,
}

/// `loadgen idle`'s request.
pub fn idle_request(a: &IdleFlags, cancel: Arc<AtomicBool>) -> Result<IdleRequest, AppError> {
    let common = resolve_common(&a.conn, true)?.common(cancel)?;
    if a.connections == 0 || a.connections > 1_000_000 {
        return Err(AppError::usage("--connections must be 1..=1000000"));
    }
    if a.concurrency == 0 || a.concurrency > 100_000 {
        return Err(AppError::usage("--concurrency must be 1..=100000"));
    }
    if a.hold > Duration::from_secs(7 * 86_400) {
        return Err(AppError::usage("--hold must be at most 7d"));
    }
    if a.sample_interval < Duration::from_millis(100) {
        return Err(AppError::usage("--sample-interval must be at least 100ms"));
    }
    Ok(IdleRequest {
        common,
        connections: a.connections,
        hold: a.hold,
        concurrency: a.concurrency as usize,
        sample_interval: a.sample_interval,
    })
}

/// `loadgen submit`'s flags.
#[derive(Debug, Clone, Default)]
pub struct SubmitFlags {
    /// `--smtp URL`.
    pub smtp: String,
    /// `--connections N`.
    pub connections: u32,
    /// `--messages N`.
    pub messages: u32,
    /// `--message-kb KB`.
    pub message_kb: f64,
    /// `--no-pipelining`.
    pub no_pipelining: bool,
    /// `--mixed-sizes`.
    pub mixed_sizes: bool,
    /// `--from ADDRESS`.
    pub from: Option<String>,
    /// `--to ADDRESS`, repeated.
    pub to: Vec<String>,
    /// `--auth-user USER`.
    pub auth_user: Option<String>,
    /// `--password P`.
    pub password: Option<String>,
    /// `--smtp-auth plain|login`.
    pub smtp_auth: String,
    /// `--ca-file FILE`.
    pub ca_file: Option<PathBuf>,
    /// `--insecure-tls`.
    pub insecure_tls: bool,
    /// `--helo NAME`.
    pub helo: Option<String>,
    /// `--threads N`.
    pub threads: u32,
    /// `--seed N`.
    pub seed: u64,
    /// `--out DIR`.
    pub out: Option<PathBuf>,
}

/// `loadgen submit`'s request: every name checked as every other subcommand's
/// (mbx_loadgen::validate).
pub fn submit_request(a: &SubmitFlags, cancel: Arc<AtomicBool>) -> Result<SubmitRequest, AppError> {
    let smtp = servers::parse_url(Proto::Smtp, &a.smtp)?;
    let kb = a.message_kb;
    if !(kb.is_finite() && (1.0..=10_240.0).contains(&kb)) {
        return Err(AppError::usage(format!(
            "--message-kb {kb}: must be 1..=10240"
        )));
    }
    if a.connections == 0 || a.connections > 100_000 {
        return Err(AppError::usage("--connections must be 1..=100000"));
    }
    if a.messages == 0 {
        return Err(AppError::usage("--messages must be at least 1"));
    }
    if a.threads > 1024 {
        return Err(AppError::usage("--threads must be 0..=1024"));
    }
    let helo = a.helo.clone().unwrap_or_else(mbx_engine::hostname);
    let from = a
        .from
        .clone()
        .unwrap_or_else(|| format!("mbxstress@{helo}"));
    let to = if a.to.is_empty() {
        vec![from.clone()]
    } else {
        a.to.clone()
    };
    if let Some(h) = &a.helo {
        validate::domain(h).map_err(|e| AppError::usage(format!("--helo: {e}")))?;
    }
    for addr in std::iter::once(&from).chain(&to) {
        validate::address(addr).map_err(|e| AppError::usage(e.to_string()))?;
    }
    if let (Some(u), Some(p)) = (&a.auth_user, &a.password) {
        validate::login(u).map_err(|e| AppError::usage(format!("--auth-user: {e}")))?;
        validate::password(u, p).map_err(|e| AppError::usage(format!("--password: {e}")))?;
    }
    let trust = if a.insecure_tls {
        Trust::Insecure
    } else if let Some(ca) = &a.ca_file {
        Trust::CaFile(ca.clone())
    } else {
        Trust::System
    };
    let mechanism = if a.smtp_auth == "login" {
        AuthMechanism::Login
    } else {
        AuthMechanism::Plain
    };
    let login = a
        .auth_user
        .clone()
        .zip(a.password.clone())
        .map(|(u, p)| (u, p, mechanism));
    Ok(SubmitRequest {
        smtp,
        trust,
        login,
        helo,
        connections: a.connections as usize,
        messages: u64::from(a.messages),
        message_kb: kb,
        mixed_sizes: a.mixed_sizes,
        pipelining: !a.no_pipelining,
        from,
        to,
        seed: a.seed,
        threads: a.threads as usize,
        out: a.out.clone(),
        cancel,
    })
}
