//! `mbxstress loadgen init|run|idle|submit`: the flags as the application layer's layers
//! (`mbx_app::loadgen::request`, `resolve`: resolution and every check are there), the
//! terminal's rendering, exit codes.

use std::process::ExitCode;
use std::sync::Arc;

use mbx_app::loadgen::request::{self, ConnFlags, DayFlags};
use mbx_app::loadgen::resolve::{self, IdleFlags, InitFlags, SubmitFlags};
use mbx_app::request::{out_agrees, HostJob, HostRequest};

use crate::cli::{
    LoadgenConnArgs, LoadgenIdleArgs, LoadgenInitArgs, LoadgenRunArgs, LoadgenSubmitArgs,
};
use crate::exit::usage;

/// The loadgen flags in common, as the application layer's layer of flags.
fn conn_flags(a: &LoadgenConnArgs) -> ConnFlags {
    ConnFlags {
        server: a.server.clone(),
        smtp: a.smtp.clone(),
        imap: a.imap.clone(),
        pop3: a.pop3.clone(),
        server_env: a.server_env.clone(),
        ca_file: a.ca_file.clone(),
        insecure_tls: a.insecure_tls,
        smtp_auth: a.smtp_auth.clone(),
        helo: a.helo.clone(),
        users: a.users,
        user_template: a.user_template.clone(),
        first_user: a.first_user,
        password: a.password.clone(),
        password_file: a.password_file.clone(),
        users_file: a.users_file.clone(),
        domain: a.domain.clone(),
        profile: a.profile.clone(),
        message_kb: a.message_kb,
        seed: a.seed,
        partition: a.partition.clone(),
        out: a.out.clone(),
    }
}

/// `loadgen run`'s flags, as the application layer's layer of flags.
pub(crate) fn day_flags(a: &LoadgenRunArgs) -> DayFlags {
    DayFlags {
        conn: conn_flags(&a.conn),
        messages_per_day: a.messages_per_day,
        day: a.day,
        days: a.days,
        clients: a.clients.clone(),
        overload: a.overload,
        grace: a.grace,
        tasks_achieved_pct: a.tasks_achieved_pct,
        task_p95_ms: a.task_p95_ms,
        delivery_p95_ms: a.delivery_p95_ms,
        sample_interval: a.sample_interval,
        duration: a.duration,
        stress: a.stress,
        eas: a.eas.clone(),
        eas_ping: a.eas_ping,
    }
}

fn finish(
    ran: Result<mbx_app::loadgen::Ran, mbx_app::AppError>,
    term: &mut crate::terminal::Terminal,
) -> anyhow::Result<ExitCode> {
    let ran = ran.map_err(super::shared::into_anyhow)?;
    term.finish()?;
    Ok(super::shared::code_for(ran.result.stopped.reason))
}

/// `loadgen init`.
pub fn init(args: LoadgenInitArgs) -> anyhow::Result<ExitCode> {
    let flags = InitFlags {
        conn: conn_flags(&args.conn),
        messages: args.messages,
        mailbox_mb: args.mailbox_mb,
        concurrency: args.concurrency,
        batch: args.batch,
    };
    let req = resolve::init_request(&flags, crate::interrupt::install())
        .map_err(super::shared::into_anyhow)?;
    let mut term = crate::terminal::Terminal::new(args.conn.progress);
    finish(mbx_app::loadgen::init(&req, &mut term), &mut term)
}

/// `loadgen run`: the flags resolved here, or (a `fleet loadgen` client) the coordinator's
/// request with the password file beside it.
pub fn run(args: LoadgenRunArgs) -> anyhow::Result<ExitCode> {
    let resolved = match &args.request {
        Some(path) => {
            let req = HostRequest::read(path).map_err(super::shared::into_anyhow)?;
            let HostJob::Loadgen(spec) = req.job else {
                return Err(usage(format!(
                    "--request {}: not a loadgen client's request (a storage test's runs with `run --request`)",
                    path.display()
                )));
            };
            let out = spec.common.out.clone().unwrap_or_default();
            out_agrees(args.conn.out.as_deref(), &out).map_err(super::shared::into_anyhow)?;
            let password = args
                .conn
                .password_file
                .as_deref()
                .map(request::read_password_file)
                .transpose()
                .map_err(super::shared::into_anyhow)?;
            spec.load(password).map_err(super::shared::into_anyhow)?
        }
        None => request::resolve_day(&day_flags(&args)).map_err(super::shared::into_anyhow)?,
    };
    let cancel = crate::interrupt::install();
    let gate = args
        .start_gate
        .as_ref()
        .map(|_| super::shared::start_gate_from_stdin(Arc::clone(&cancel)));
    let req = resolved
        .request(cancel, gate)
        .map_err(super::shared::into_anyhow)?;
    let mut term = crate::terminal::Terminal::new(args.conn.progress);
    finish(mbx_app::loadgen::day(&req, &mut term), &mut term)
}

/// `loadgen idle`.
pub fn idle(args: LoadgenIdleArgs) -> anyhow::Result<ExitCode> {
    let flags = IdleFlags {
        conn: conn_flags(&args.conn),
        connections: args.connections,
        hold: args.hold,
        concurrency: args.concurrency,
        sample_interval: args.sample_interval,
    };
    let req = resolve::idle_request(&flags, crate::interrupt::install())
        .map_err(super::shared::into_anyhow)?;
    let mut term = crate::terminal::Terminal::new(args.conn.progress);
    finish(mbx_app::loadgen::idle::idle(&req, &mut term), &mut term)
}

/// `loadgen submit`.
pub fn submit(args: LoadgenSubmitArgs) -> anyhow::Result<ExitCode> {
    let flags = SubmitFlags {
        smtp: args.smtp.clone(),
        connections: args.connections,
        messages: args.messages,
        message_kb: args.message_kb,
        no_pipelining: args.no_pipelining,
        mixed_sizes: args.mixed_sizes,
        from: args.from.clone(),
        to: args.to.clone(),
        auth_user: args.auth_user.clone(),
        password: args.password.clone(),
        smtp_auth: args.smtp_auth.clone(),
        ca_file: args.ca_file.clone(),
        insecure_tls: args.insecure_tls,
        helo: args.helo.clone(),
        threads: args.threads,
        seed: args.seed,
        out: args.out.clone(),
    };
    let req = resolve::submit_request(&flags, crate::interrupt::install())
        .map_err(super::shared::into_anyhow)?;
    let mut term = crate::terminal::Terminal::new(args.progress);
    finish(mbx_app::loadgen::submit::submit(&req, &mut term), &mut term)
}

#[cfg(test)]
mod tests {
    use super::*;
    use mbx_app::loadgen::MailProfile;

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
            &request::parse_clients(&args.clients).expect("clients"),
        );
        let (guard_s, rate) = mbx_app::loadgen::guard_seconds(
            args.conn.seed,
            request::DEFAULT_MESSAGES_PER_DAY,
            args.day,
            &kinds,
            args.overload,
        );
        assert!(
            guard_s >= mbx_app::loadgen::GUARD_WARN_S,
            "{run}: the guard holds {guard_s:.1} s at {rate:.0} tasks/s"
        );
    }
}
