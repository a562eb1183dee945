//! Every phase of a loadgen run has a wall deadline, derived from the run's own lengths, so a
//! server that stops answering ends the run at a known time with a verdict that names the server
//! and the phase, rather than keeping it going one command timeout after another (the audit's
//! IMAP server that froze 12 s into a 40 s day kept the run going 10 minutes; a server that never
//! greets made a 256-user baseline take 4 x 60 s before a 10 s day).
//!
//! The deadlines (`length` is the test's: `--duration`, else `--day` x `--days`; `command` the
//! longest command timeout of the three servers):
//! - **baseline**: `length`, at least [`MIN_BASELINE`] and at most [`MAX_BASELINE`];
//! - **day**: the schedule ends at `length`; the tasks still running then get `2 x command +
//!   grace` to finish ([`drain`]), then are cancelled;
//! - **grace** (the sweep for copies still on their way): `grace`, then the sweeps still running
//!   are cancelled;
//! - **close** (the logouts): [`CLOSE_WAIT`].
//!
//! A stop request (Ctrl-C, SIGTERM) ends whichever phase runs within the day engine's
//! `STOP_WAIT` (1 s).

use std::time::Duration;

use crate::conn::Endpoint;
use crate::sched::ClientType;

/// The shortest baseline deadline: a baseline lists each user's mailbox once (tens of users
/// take well under a second against a real server).
pub const MIN_BASELINE: Duration = Duration::from_secs(10);
/// The longest baseline deadline (a million users at 64 sessions at once, 0.2 s each, take 52
/// minutes).
pub const MAX_BASELINE: Duration = Duration::from_secs(3600);
/// How long the logouts at the end may take, all of them.
pub const CLOSE_WAIT: Duration = Duration::from_secs(5);

/// The baseline's deadline for a test of `length`.
pub fn baseline(length: Duration) -> Duration {
    length.clamp(MIN_BASELINE, MAX_BASELINE)
}

/// How long the tasks still running when the schedule ends get to finish.
pub fn drain(command: Duration, grace: Duration) -> Duration {
    command.saturating_mul(2).saturating_add(grace)
}

/// The longest command timeout of the servers (SMTP, IMAP, POP3).
pub fn command_timeout(servers: [&Endpoint; 3]) -> Duration {
    servers
        .iter()
        .map(|e| e.timeouts.command)
        .max()
        .unwrap_or_default()
}

fn url(scheme: &str, e: &Endpoint) -> String {
    format!("{scheme}://{}:{}", e.host, e.port)
}

/// The servers (SMTP, IMAP, POP3) the users of `kinds` were waiting on in `phase`: the mailbox server (IMAP or
/// POP3) in the baseline and the sweep, submission too in the day.
pub fn servers_of(
    [smtp, imap_ep, pop3_ep]: [&Endpoint; 3],
    kinds: impl IntoIterator<Item = ClientType>,
    phase: &str,
) -> String {
    let (mut imap, mut pop3, mut eas) = (false, false, false);
    for k in kinds {
        match k {
            ClientType::Pop3 => pop3 = true,
            ClientType::Eas => eas = true,
            _ => imap = true,
        }
    }
    let mut out = Vec::new();
    if phase == "day" && (imap || pop3) {
        out.push(url("smtp", smtp));
    }
    if eas {
        out.push("the ActiveSync endpoint (--eas)".to_owned());
    }
    if imap {
        out.push(url("imap", imap_ep));
    }
    if pop3 {
        out.push(url("pop3", pop3_ep));
    }
    out.join(" and ")
}

/// The message of a deadline that cut `n` sessions in `phase`.
pub fn message(phase: &str, limit: Duration, n: usize, servers: &str) -> String {
    format!(
        "the {phase} did not finish by its deadline ({:.0} s): {n} session(s) still waiting on {servers} were cancelled; the server stopped answering or is far too slow",
        limit.as_secs_f64()
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn deadlines_follow_the_runs_lengths() {
        assert_eq!(baseline(Duration::from_secs(10)), MIN_BASELINE);
        assert_eq!(baseline(Duration::from_secs(600)), Duration::from_secs(600));
        assert_eq!(baseline(Duration::from_secs(8 * 3600)), MAX_BASELINE);
        assert_eq!(
            drain(Duration::from_secs(60), Duration::from_secs(5)),
            Duration::from_secs(125)
        );
    }
}
