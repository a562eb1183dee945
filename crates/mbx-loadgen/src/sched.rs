//! The user day: each user's tasks for a simulated day, spread over it, dispatched in time order
//! by a [`Clock`] (real or simulated, so a day of 100,000 users can be checked in a test).
//!
//! The action table ([`ActionTable::for_profile`]) and how it was derived are in docs/loadgen.md.
//! Memory is O(users): a user's tasks are never stored, the k-th task of a user's day is computed
//! when due (a per-user permutation of the day's task list), and dispatch is a binary heap of one
//! entry per user, O(log users) per task.

use std::cmp::Reverse;
use std::collections::BinaryHeap;
use std::time::Duration;

/// Time as an input: the scheduler is told how far into the test it is ([`Scheduler::due`]),
/// read from mbx-core's [`Clock`] (a [`SimClock`] in tests and the scheduler's benchmark) or the
/// day's clock ([`crate::clock`]).
pub use mbx_core::clock::{Clock, SimClock};

/// How a user's mail client behaves.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum ClientType {
    /// A desktop IMAP client: logs on once a day, keeps its session open, acts on messages in
    /// it, logs off at the end of the day (idling between tasks, as Thunderbird or Outlook do,
    /// is left to the loadgen command: the day engine polls at each check).
    DesktopImap,
    /// A webmail-like client: every task is a short IMAP session of its own (log on, act, log
    /// off), as OWA requests are.
    Webmail,
    /// A POP3 client: each check downloads new messages and deletes them from the server; sends
    /// over SMTP; no folders, flags or search.
    Pop3,
    /// An Exchange ActiveSync device (a phone or tablet): logs on once a day (OPTIONS,
    /// Provision, FolderSync), checks by an Inbox Sync, reads by ItemOperations Fetch, sends
    /// by SendMail, replies and forwards by SmartReply/SmartForward, moves by MoveItems,
    /// deletes and flags by Sync Delete/Change. No log off (a device stays on) and no search.
    Eas,
}

/// A task of a user's day.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum TaskKind {
    /// Log on (desktop IMAP: open the day's session, SELECT INBOX, IDLE).
    Logon,
    /// Log off (desktop IMAP: LOGOUT at the end of the day).
    Logoff,
    /// Look for new mail (IMAP: NOOP/SELECT or the IDLE news; POP3: a session: STAT, UIDL,
    /// RETR of the new, DELE, QUIT).
    CheckInbox,
    /// Send a new message to [`RECIPIENTS`] other users.
    SendNew,
    /// Reply to a received message (to its sender and [`RECIPIENTS`] - 1 others).
    Reply,
    /// Forward a received message to [`RECIPIENTS`] other users.
    Forward,
    /// Read a message (FETCH BODY[], sets \Seen).
    Read,
    /// Move a message to another folder (UID MOVE).
    Move,
    /// Delete a message (UID STORE \Deleted + EXPUNGE).
    Delete,
    /// Flag a message (UID STORE \Flagged).
    Flag,
    /// Search the mailbox (UID SEARCH on a header or text).
    Search,
}

impl TaskKind {
    /// Every kind, in table order.
    pub const ALL: [TaskKind; 11] = [
        TaskKind::Logon,
        TaskKind::Logoff,
        TaskKind::CheckInbox,
        TaskKind::SendNew,
        TaskKind::Reply,
        TaskKind::Forward,
        TaskKind::Read,
        TaskKind::Move,
        TaskKind::Delete,
        TaskKind::Flag,
        TaskKind::Search,
    ];

    /// A short stable name (`send_new`, `check_inbox`, ...).
    pub fn name(self) -> &'static str {
        match self {
            TaskKind::Logon => "logon",
            TaskKind::Logoff => "logoff",
            TaskKind::CheckInbox => "check_inbox",
            TaskKind::SendNew => "send_new",
            TaskKind::Reply => "reply",
            TaskKind::Forward => "forward",
            TaskKind::Read => "read",
            TaskKind::Move => "move",
            TaskKind::Delete => "delete",
            TaskKind::Flag => "flag",
            TaskKind::Search => "search",
        }
    }

    /// Whether the task submits a message.
    pub fn sends(self) -> bool {
        matches!(
            self,
            TaskKind::SendNew | TaskKind::Reply | TaskKind::Forward
        )
    }
}

/// Recipients of every message sent: with LoadGen's 20/80 profiles (one message sent for four
/// received) a closed population of test users receives four copies of each message sent.
pub const RECIPIENTS: u32 = 4;

/// Tasks per user per simulated day, by kind (fractions are spread over the users, see
/// [`ActionTable::count_for_user`]).
#[derive(Debug, Clone, PartialEq)]
pub struct ActionTable {
    /// (kind, tasks per user per day).
    pub per_user: Vec<(TaskKind, f64)>,
}

impl ActionTable {
    /// The table for a profile of `messages_per_day` (sent + received per mailbox, the Exchange
    /// calculator's profile: 50..500) and a client type. Derivation: docs/loadgen.md.
    pub fn for_profile(messages_per_day: u32, client: ClientType) -> ActionTable {
        let m = f64::from(messages_per_day);
        let sent = m / 5.0;
        let received = m - sent;
        // LoadSim MMB user day: 66.3 received -> 81.3 reads, 16.3 moves, 32.5 deletes.
        let reads = received * 81.3 / 66.3;
        let moves = received * 16.3 / 66.3;
        let deletes = received * 32.5 / 66.3;
        let checks = 12.0;
        let per_user = match client {
            ClientType::DesktopImap | ClientType::Webmail => vec![
                (
                    TaskKind::Logon,
                    if client == ClientType::DesktopImap {
                        1.0
                    } else {
                        0.0
                    },
                ),
                (
                    TaskKind::Logoff,
                    if client == ClientType::DesktopImap {
                        1.0
                    } else {
                        0.0
                    },
                ),
                (TaskKind::CheckInbox, checks),
                (TaskKind::SendNew, sent * 0.4),
                (TaskKind::Reply, sent * 0.4),
                (TaskKind::Forward, sent * 0.2),
                (TaskKind::Read, reads),
                (TaskKind::Move, moves),
                (TaskKind::Delete, deletes),
                (TaskKind::Flag, received * 0.1),
                (TaskKind::Search, (m / 75.0).max(1.0)),
            ],
            // A phone: the desktop's day without log off and search.
            ClientType::Eas => vec![
                (TaskKind::Logon, 1.0),
                (TaskKind::CheckInbox, checks),
                (TaskKind::SendNew, sent * 0.4),
                (TaskKind::Reply, sent * 0.4),
                (TaskKind::Forward, sent * 0.2),
                (TaskKind::Read, reads),
                (TaskKind::Move, moves),
                (TaskKind::Delete, deletes),
                (TaskKind::Flag, received * 0.1),
            ],
            ClientType::Pop3 => vec![
                (TaskKind::CheckInbox, checks),
                (TaskKind::SendNew, sent * 0.4),
                (TaskKind::Reply, sent * 0.4),
                (TaskKind::Forward, sent * 0.2),
            ],
        };
        ActionTable {
            per_user: per_user.into_iter().filter(|(_, n)| *n > 0.0).collect(),
        }
    }

    /// Tasks of `kind` for user number `u` (0-based) on a day: the fractional part spread evenly
    /// over the users (user u gets one more when floor((u+1)f) > floor(uf)), so `users` users
    /// together get users x rate within one task, never a rounding per user.
    pub fn count_for_user(rate: f64, u: u32) -> u32 {
        let whole = rate.floor();
        let f = rate - whole;
        let extra = ((f64::from(u) + 1.0) * f).floor() - (f64::from(u) * f).floor();
        (whole + extra) as u32
    }

    /// Total tasks of every kind per user per day (as a rate).
    pub fn tasks_per_user(&self) -> f64 {
        self.per_user.iter().map(|(_, n)| n).sum()
    }
}

/// One task to run.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Task {
    /// When it is due, from the test's start.
    pub at: Duration,
    /// The user (0-based index into the users list).
    pub user: u32,
    /// The simulated day (0-based).
    pub day: u32,
    /// The task's index within the user's day.
    pub index: u32,
    /// What to do.
    pub kind: TaskKind,
}

#[derive(Debug, Clone)]
struct UserDay {
    client: ClientType,
    /// The user's index among the users of its client type (spreads the table's fractions).
    rank: u32,
    day: u32,
    k: u32,
    n: u32,
    /// Counts per kind today (cumulative ranges pick a kind from a permuted index).
    counts: [u16; 11],
    offset: f64,
    mult: u64,
    add: u64,
}

/// Dispatches every user's tasks in time order.
pub struct Scheduler {
    seed: u64,
    day: Duration,
    days: u32,
    tables: Vec<(ClientType, ActionTable)>,
    users: Vec<UserDay>,
    heap: BinaryHeap<Reverse<(u64, u32)>>,
    /// The test's end: tasks due at or after it are not planned or dispatched.
    end: Option<Duration>,
    /// The last task dispatched in time order: the next is never earlier.
    last_at: Duration,
}

/// One SplitMix64 step from `z` (mbx-core's): the schedule's hash of a user, day and task.
fn mix(z: u64) -> u64 {
    mbx_core::rng::hash(z)
}

fn gcd(a: u64, b: u64) -> u64 {
    if b == 0 {
        a
    } else {
        gcd(b, a % b)
    }
}

impl Scheduler {
    /// A schedule of `days` simulated days of length `day` for users with the given client
    /// types, at `messages_per_day`.
    pub fn new(
        seed: u64,
        messages_per_day: u32,
        day: Duration,
        days: u32,
        clients: &[ClientType],
    ) -> Scheduler {
        let mut tables: Vec<(ClientType, ActionTable)> = Vec::new();
        for c in clients {
            if !tables.iter().any(|(k, _)| k == c) {
                tables.push((*c, ActionTable::for_profile(messages_per_day, *c)));
            }
        }
        let mut s = Scheduler {
            seed,
            day: day.max(Duration::from_millis(1)),
            days,
            tables,
            users: Vec::with_capacity(clients.len()),
            heap: BinaryHeap::with_capacity(clients.len()),
            end: None,
            last_at: Duration::ZERO,
        };
        let mut ranks: Vec<(ClientType, u32)> = Vec::new();
        for (u, c) in clients.iter().enumerate() {
            let rank = match ranks.iter_mut().find(|(k, _)| k == c) {
                Some((_, r)) => {
                    *r += 1;
                    *r - 1
                }
                None => {
                    ranks.push((*c, 1));
                    0
                }
            };
            let mut ud = UserDay {
                client: *c,
                rank,
                day: 0,
                k: 0,
                n: 0,
                counts: [0; 11],
                offset: 0.0,
                mult: 1,
                add: 0,
            };
            if days > 0 && s.plan_day(&mut ud, u as u32, 0) {
                s.heap
                    .push(Reverse((s.time_of(&ud, 0).as_nanos() as u64, u as u32)));
            }
            s.users.push(ud);
        }
        s
    }

    /// Sets up `ud` for day `d`; false if the user has no task that day.
    fn plan_day(&self, ud: &mut UserDay, u: u32, d: u32) -> bool {
        let table = self
            .tables
            .iter()
            .find(|(c, _)| *c == ud.client)
            .map(|(_, t)| t);
        ud.counts = [0; 11];
        if let Some(t) = table {
            for (kind, rate) in &t.per_user {
                let i = TaskKind::ALL.iter().position(|k| k == kind).unwrap_or(0);
                // The spread of fractions turns per day too, so each user gets its share over days.
                let slot = (u64::from(ud.rank) + u64::from(d) * 7919) % (1 << 31);
                ud.counts[i] =
                    ActionTable::count_for_user(*rate, slot as u32).min(u32::from(u16::MAX)) as u16;
            }
        }
        ud.day = d;
        ud.k = 0;
        ud.n = ud.counts.iter().map(|&c| u32::from(c)).sum();
        let h = mix(self.seed ^ mix(u64::from(u) << 32 | u64::from(d)));
        ud.offset = (h >> 11) as f64 / (1u64 << 53) as f64;
        // The permutation of the tasks between log on and log off: j -> (mult j + add) mod inner,
        // a bijection when mult and inner are coprime.
        let inner =
            (u64::from(ud.n) - u64::from(ud.counts[0].min(1)) - u64::from(ud.counts[1].min(1)))
                .max(1);
        let mut a = 1 + mix(h) % inner;
        while gcd(a, inner) != 1 {
            a += 1;
        }
        // A bijection of the day's tasks: each task of the table once, none twice.
        assert_eq!(
            gcd(a % inner, inner),
            1,
            "the task permutation is not a bijection"
        );
        ud.mult = a;
        ud.add = mix(h ^ 0x5555) % inner;
        ud.n > 0
    }

    /// When task `k` of the user's current day is due: the day's tasks evenly spaced, shifted
    /// by the user's offset (so users do not act in lockstep).
    fn time_of(&self, ud: &UserDay, k: u32) -> Duration {
        let slot = self.day.as_secs_f64() / f64::from(ud.n.max(1));
        self.day * ud.day + Duration::from_secs_f64((f64::from(k) + ud.offset) * slot)
    }

    /// The kind of task `k`: desktop clients log on first and off last; the rest in a per-user,
    /// per-day permutation of the day's list.
    fn kind_of(&self, ud: &UserDay, k: u32) -> TaskKind {
        let logon = usize::from(ud.counts[0] > 0);
        let logoff = usize::from(ud.counts[1] > 0);
        if logon == 1 && k == 0 {
            return TaskKind::Logon;
        }
        if logoff == 1 && k + 1 == ud.n {
            return TaskKind::Logoff;
        }
        let inner = u64::from(ud.n) - (logon + logoff) as u64;
        if inner == 0 {
            return TaskKind::CheckInbox;
        }
        let j0 = u64::from(k) - logon as u64;
        let j = (ud.mult % inner * j0 + ud.add) % inner;
        let mut acc = 0u64;
        for (i, &c) in ud.counts.iter().enumerate().skip(2) {
            acc += u64::from(c);
            if j < acc {
                return TaskKind::ALL[i];
            }
        }
        TaskKind::CheckInbox
    }

    /// The test ends at `end` (a test length shorter than the days): tasks due at or after it
    /// are neither planned ([`Scheduler::planned`]) nor dispatched ([`Scheduler::due`],
    /// [`Scheduler::next_due`], [`Scheduler::next_task`]).
    pub fn until(mut self, end: Duration) -> Scheduler {
        self.end = Some(end);
        self
    }

    /// The test's end, if one was set ([`Scheduler::until`]).
    pub fn end(&self) -> Option<Duration> {
        self.end
    }

    /// Tasks the schedule holds over all its days, before its end if it has one (computed, not
    /// stored: O(users x days x log tasks)).
    pub fn planned(&self) -> u64 {
        self.planned_before(self.end)
    }

    /// Tasks over all the days, whatever the end ([`Scheduler::next_for`]'s total).
    pub fn planned_all(&self) -> u64 {
        self.planned_before(None)
    }

    fn planned_before(&self, end: Option<Duration>) -> u64 {
        let mut total = 0;
        for (u, ud) in self.users.iter().enumerate() {
            let mut x = ud.clone();
            for d in 0..self.days {
                self.plan_day(&mut x, u as u32, d);
                total += u64::from(match end {
                    None => x.n,
                    // time_of is increasing in k: the tasks before the end are a prefix.
                    Some(end) => {
                        let (mut lo, mut hi) = (0u32, x.n);
                        while lo < hi {
                            let mid = lo + (hi - lo) / 2;
                            if self.time_of(&x, mid) < end {
                                lo = mid + 1;
                            } else {
                                hi = mid;
                            }
                        }
                        lo
                    }
                });
            }
        }
        total
    }

    /// User `u`'s current task, and its state moved past it (to its next day when its day is
    /// done). None when its days are over.
    fn advance(&mut self, u: u32) -> Option<(Task, Option<Duration>)> {
        let mut ud = self.users.get(u as usize)?.clone();
        if ud.k >= ud.n {
            return None;
        }
        let task = Task {
            at: self.time_of(&ud, ud.k),
            user: u,
            day: ud.day,
            index: ud.k,
            kind: self.kind_of(&ud, ud.k),
        };
        ud.k += 1;
        assert!(ud.k <= ud.n, "a user's task past its day's count");
        let mut more = ud.k < ud.n;
        while !more && ud.day + 1 < self.days {
            let d = ud.day + 1;
            more = self.plan_day(&mut ud, u, d);
        }
        let next = more.then(|| self.time_of(&ud, ud.k));
        self.users[u as usize] = ud;
        Some((task, next))
    }

    /// The next task in time order (whether due or not), or None when the days (or the test,
    /// [`Scheduler::until`]) are over.
    pub fn next_task(&mut self) -> Option<Task> {
        self.next_due()?;
        let Reverse((_, u)) = self.heap.pop()?;
        let (task, next) = self.advance(u)?;
        assert!(
            task.at >= self.last_at,
            "time order: task at {:?} after one at {:?}",
            task.at,
            self.last_at
        );
        self.last_at = task.at;
        if let Some(at) = next {
            assert!(at >= task.at, "a user's next task is not before its last");
            self.heap.push(Reverse((at.as_nanos() as u64, u)));
        }
        Some(task)
    }

    /// Stress mode (closed loop): user `u`'s next task in its day's order, whatever its time
    /// and the end; None when its days are done. Use either this or the time order
    /// ([`Scheduler::due`], [`Scheduler::next_task`]) on one scheduler, not both.
    pub fn next_for(&mut self, u: u32) -> Option<Task> {
        self.advance(u).map(|(task, _)| task)
    }

    /// When the next task is due, if any before the end.
    pub fn next_due(&self) -> Option<Duration> {
        self.heap
            .peek()
            .map(|Reverse((at, _))| Duration::from_nanos(*at))
            .filter(|&at| self.end.is_none_or(|end| at < end))
    }

    /// Every task due by `now` (time since the test started, by the clock), in time order
    /// (open loop: a task is due at its time, whatever happened to the ones before).
    pub fn due(&mut self, now: Duration, out: &mut Vec<Task>) {
        while self.next_due().is_some_and(|t| t <= now) {
            match self.next_task() {
                Some(t) => {
                    // Never early: a task is dispatched at its time or after, never before.
                    assert!(t.at <= now, "task due at {:?} dispatched at {now:?}", t.at);
                    out.push(t);
                }
                None => break,
            }
        }
    }

    /// The recipients (user indexes, distinct, never the sender) of a sending task: uniform
    /// over the other users, so every user receives RECIPIENTS x its share of messages.
    pub fn recipients(&self, task: &Task) -> Vec<u32> {
        let users = self.users.len() as u64;
        let want = u64::from(RECIPIENTS).min(users.saturating_sub(1));
        let mut out: Vec<u32> = Vec::with_capacity(want as usize);
        let mut h = mix(self.seed
            ^ mix(u64::from(task.user) << 40 ^ u64::from(task.day) << 20 ^ u64::from(task.index)));
        while (out.len() as u64) < want {
            h = mix(h);
            let r = ((u128::from(h) * u128::from(users)) >> 64) as u32;
            if r != task.user && !out.contains(&r) {
                out.push(r);
            }
        }
        out
    }

    /// The users' client types' action tables.
    pub fn tables(&self) -> &[(ClientType, ActionTable)] {
        &self.tables
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fractions_are_spread_over_users() {
        // Within one task of users x rate (floating point), never a rounding per user.
        for (rate, want) in [(58.8, 58_800.0), (0.5, 500.0), (147.0588, 147_058.8)] {
            let total: u32 = (0..1000)
                .map(|u| ActionTable::count_for_user(rate, u))
                .sum();
            assert!((f64::from(total) - want).abs() <= 1.0, "{rate}: {total}");
        }
    }

    #[test]
    fn the_150_message_table() {
        let t = ActionTable::for_profile(150, ClientType::DesktopImap);
        let get = |k| {
            t.per_user
                .iter()
                .find(|(x, _)| *x == k)
                .map(|(_, n)| *n)
                .unwrap_or(0.0)
        };
        assert_eq!(
            get(TaskKind::SendNew) + get(TaskKind::Reply) + get(TaskKind::Forward),
            30.0
        );
        assert!((get(TaskKind::Read) - 147.1).abs() < 0.1);
        assert_eq!(get(TaskKind::CheckInbox), 12.0);
    }
}
