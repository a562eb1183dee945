//! Delivery accounting: every message sent is expected once in each recipient's mailbox. The
//! ledger matches what recipients find against what was sent and counts delivered, lost,
//! duplicated, corrupted and unexpected copies, with the delivery latency (SMTP acceptance to
//! the copy being seen) in an HDR histogram.
//!
//! Memory is bounded by the users, not the test's length: a copy is kept on its own only while
//! it is open (accepted and not yet seen, or seen before its acceptance was recorded). Once
//! delivered it is folded into its (sender, recipient) pair's watermark, the highest sequence
//! number delivered: every copy of the pair at or below it is delivered unless still open, so a
//! copy seen again there is a duplicate. Cost: 20 to 40 bytes (a hash table's entry and its
//! spare room) per (sender, recipient) pair that exchanged mail, at most users x (users - 1) (a
//! day of 16,000 users at 150 messages, 4 recipients a message, makes about 1.9 million pairs,
//! 40 to 75 MB; later days add pairs ever more slowly), plus 50 to 100 bytes per open copy (in
//! flight, or lost) and each sender's address once; no longer one entry per copy sent
//! (measured in docs/loadgen.md: 77 MB after a day of 16,000 users, where one entry per copy
//! held 566 MB). The watermark needs each
//! sender's acceptances recorded in its sequence order (the day engine's users send one
//! message at a time); a copy of this run found where it was never sent but below the pair's
//! watermark counts as duplicated rather than unexpected (both fail the verdict).

use std::collections::{HashMap, HashSet};
use std::time::Duration;

use hdrhistogram::Histogram;

use crate::clock::Instant;
use crate::message::{MessageId, Verdict};

/// A copy tracked on its own until it is delivered.
#[derive(Debug, Clone, Copy)]
enum Open {
    /// Accepted by SMTP, not seen yet.
    Pending(Instant),
    /// Seen (`copies` times) before its acceptance was recorded.
    Early {
        seen: Instant,
        by_idle: bool,
        copies: u32,
    },
}
/// How a client came to see a copy.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Via {
    /// An IMAP session's unsolicited notice (IDLE's `EXISTS`): the time is the notice's.
    Idle,
    /// A check of the mailbox (a poll: NOOP and FETCH, a POP3 session).
    Poll,
}

/// Lost copies named in a [`DeliverySummary`], at most.
pub const LOST_NAMED: usize = 100;

/// What one copy found in a mailbox is.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Seen {
    /// The first intact copy of a message expected in this mailbox; its delivery latency if
    /// the acceptance is known yet.
    Delivered(Option<Duration>),
    /// Another copy of a message already seen in this mailbox.
    Duplicate,
    /// A message of this run not sent to this recipient.
    Unexpected,
    /// A message of this run, changed.
    Corrupted(String),
    /// Not this run's (left alone).
    NotOurs,
}

/// Totals at a point in time.
#[derive(Debug, Clone)]
pub struct DeliverySummary {
    /// Copies expected (messages x recipients).
    pub expected: u64,
    /// Copies seen intact at least once.
    pub delivered: u64,
    /// Copies not seen yet (lost if the run is over and the grace time has passed).
    pub missing: u64,
    /// Extra copies seen.
    pub duplicated: u64,
    /// Corrupted copies seen, with what changed (at most 100 kept).
    pub corrupted: Vec<(MessageId, u32, String)>,
    /// Copies of this run's messages found where they were not sent.
    pub unexpected: u64,
    /// Delivery latency of delivered copies, microseconds.
    pub latency_us: Histogram<u64>,
    /// Delivered copies first seen through an IMAP IDLE notice.
    pub seen_by_idle: u64,
    /// Delivered copies first seen by a poll (a check, a POP3 session, the grace sweep).
    pub seen_by_poll: u64,
    /// Missing copies, named: (message, recipient), at most [`LOST_NAMED`].
    pub missing_copies: Vec<(MessageId, u32)>,
    /// Server delivery latency, microseconds: SMTP acceptance to the copy first listed in its
    /// recipient's mailbox by the run's watcher (see [`crate::watch`]), copies to watched
    /// recipients only, whatever the users' schedule. `latency_us` is the user-seen one.
    pub server_latency_us: Histogram<u64>,
    /// Recipients the watcher watched (0: no server delivery figure).
    pub server_watched: u64,
    /// Copies to watched recipients the watcher had not listed at the end.
    pub server_unseen: u64,
}

impl DeliverySummary {
    /// Delivered copies whose delivery latency exceeded `limit` (from the histogram: within
    /// its 3 significant digits).
    pub fn late(&self, limit: Duration) -> u64 {
        let limit_us = limit.as_micros().min(u128::from(u64::MAX)) as u64;
        self.latency_us
            .iter_recorded()
            .filter(|v| v.value_iterated_to() > limit_us)
            .map(|v| v.count_at_value())
            .sum()
    }

    /// How the delivered copies were seen: `idle`, `poll`, `idle+poll`, or `none`.
    pub fn measured_by(&self) -> &'static str {
        match (self.seen_by_idle > 0, self.seen_by_poll > 0) {
            (true, true) => "idle+poll",
            (true, false) => "idle",
            (false, true) => "poll",
            (false, false) => "none",
        }
    }
}

/// The run's ledger.
#[derive(Debug, Clone)]
pub struct Ledger {
    /// Senders by run and address: their index in `names`.
    senders: HashMap<String, HashMap<String, u32>>,
    /// (run, sender address) by index.
    names: Vec<(String, String)>,
    /// (sender, recipient) -> the highest sequence number delivered.
    delivered_upto: HashMap<(u32, u32), u64>,
    /// Copies not delivered yet: (sender, recipient, seq).
    open: HashMap<(u32, u32, u64), Open>,
    /// Open copies seen before their acceptance (unexpected unless it comes).
    early: u64,
    duplicated: u64,
    corrupted: Vec<(MessageId, u32, String)>,
    corrupted_count: u64,
    latency_us: Histogram<u64>,
    /// Copies expected (acceptance recorded), kept as a count so samples cost O(1).
    expected: u64,
    /// Copies expected and seen.
    delivered: u64,
    seen_by_idle: u64,
    /// Since the last [`Ledger::take_interval`].
    interval: DeliveryInterval,
    /// The watcher's side: recipients watched, copies to them accepted and not yet listed
    /// (or listed before their acceptance was recorded), and the server latency.
    watched: HashSet<u32>,
    server_pending: HashMap<(u32, u32, u64), Instant>,
    server_early: HashMap<(u32, u32, u64), Instant>,
    server_latency_us: Histogram<u64>,
}

/// What changed since the last [`Ledger::take_interval`]: the ledger's part of a sample.
#[derive(Debug, Clone)]
pub struct DeliveryInterval {
    /// Copies whose acceptance was recorded (messages accepted x their recipients).
    pub sent: u64,
    /// Copies that became delivered (acceptance recorded and seen intact).
    pub delivered: u64,
    /// Their delivery latency, microseconds.
    pub latency_us: Histogram<u64>,
}

fn latency_histogram() -> Histogram<u64> {
    Histogram::new_with_bounds(1, 3_600_000_000, 3)
        .expect("constant bounds within hdrhistogram's limits")
}

impl DeliveryInterval {
    fn new() -> DeliveryInterval {
        DeliveryInterval {
            sent: 0,
            delivered: 0,
            latency_us: latency_histogram(),
        }
    }
}

impl Default for Ledger {
    fn default() -> Self {
        Ledger::new()
    }
}

impl Ledger {
    /// An empty ledger.
    pub fn new() -> Ledger {
        Ledger {
            senders: HashMap::new(),
            names: Vec::new(),
            delivered_upto: HashMap::new(),
            open: HashMap::new(),
            early: 0,
            seen_by_idle: 0,
            duplicated: 0,
            corrupted: Vec::new(),
            corrupted_count: 0,
            latency_us: latency_histogram(),
            expected: 0,
            delivered: 0,
            interval: DeliveryInterval::new(),
            watched: HashSet::new(),
            server_pending: HashMap::new(),
            server_early: HashMap::new(),
            server_latency_us: latency_histogram(),
        }
    }

    /// The watcher watches recipient `r`'s mailbox from now: its copies accepted later get a
    /// server delivery latency.
    pub fn watch(&mut self, r: u32) {
        self.watched.insert(r);
    }

    /// The watcher listed message `id` in `recipient`'s mailbox at `at`.
    pub fn server_seen(&mut self, recipient: u32, id: &MessageId, at: Instant) {
        let key = (self.sender(id), recipient, id.seq);
        match self.server_pending.remove(&key) {
            Some(accepted) => {
                let us = (at.saturating_duration_since(accepted).as_micros() as u64)
                    .clamp(1, 3_600_000_000);
                self.server_latency_us.saturating_record(us);
            }
            // Bounded by the copies in flight: an acceptance not recorded yet, or a copy never
            // sent (the user-seen side counts it unexpected).
            None if self.server_early.len() < 100_000 => {
                self.server_early.entry(key).or_insert(at);
            }
            None => {}
        }
    }

    /// Server side of [`Ledger::sent`] for one recipient.
    fn server_sent(&mut self, key: (u32, u32, u64), accepted: Instant) {
        if !self.watched.contains(&key.1) {
            return;
        }
        match self.server_early.remove(&key) {
            Some(at) => {
                let us = (at.saturating_duration_since(accepted).as_micros() as u64).max(1);
                self.server_latency_us.saturating_record(us);
            }
            None => {
                self.server_pending.insert(key, accepted);
            }
        }
    }

    /// The sender's index (interned: each sender's strings kept once).
    fn sender(&mut self, id: &MessageId) -> u32 {
        if let Some(&i) = self.senders.get(&id.run).and_then(|m| m.get(&id.sender)) {
            return i;
        }
        let i = self.names.len() as u32;
        self.names.push((id.run.clone(), id.sender.clone()));
        self.senders
            .entry(id.run.clone())
            .or_default()
            .insert(id.sender.clone(), i);
        i
    }

    /// Copy (sender, recipient, seq) became delivered `d` after its acceptance, seen by `via`.
    fn deliver(&mut self, key: (u32, u32, u64), d: Duration, via: Via) {
        let w = self.delivered_upto.entry((key.0, key.1)).or_insert(0);
        *w = (*w).max(key.2);
        if via == Via::Idle {
            self.seen_by_idle += 1;
        }
        self.delivered_after(d);
    }

    /// A copy became delivered `d` after its acceptance.
    fn delivered_after(&mut self, d: Duration) {
        let us = (d.as_micros() as u64).clamp(1, 3_600_000_000);
        self.latency_us.saturating_record(us);
        self.interval.latency_us.saturating_record(us);
        self.delivered += 1;
        self.interval.delivered += 1;
        // Exactly once: a copy is delivered only once it is expected, and only once.
        assert!(
            self.delivered <= self.expected,
            "{} copies delivered of {} expected",
            self.delivered,
            self.expected
        );
        assert_eq!(
            self.latency_us.len(),
            self.delivered,
            "one delivery latency per copy delivered"
        );
    }

    /// Copies expected and delivered so far (O(1), unlike [`Ledger::summary`]).
    pub fn totals(&self) -> (u64, u64) {
        (self.expected, self.delivered)
    }

    /// What changed since the last call (copies sent and delivered, their delivery latency);
    /// starts a new interval.
    pub fn take_interval(&mut self) -> DeliveryInterval {
        let fresh = DeliveryInterval {
            sent: 0,
            delivered: 0,
            latency_us: {
                let mut h = self.interval.latency_us.clone();
                h.reset();
                h
            },
        };
        std::mem::replace(&mut self.interval, fresh)
    }

    /// Message `id` was accepted for `recipients` (user indexes) at `accepted`. A sender's
    /// messages must be recorded in its sequence order (see the module's note).
    pub fn sent(&mut self, id: &MessageId, recipients: &[u32], accepted: Instant) {
        let sender = self.sender(id);
        for &r in recipients {
            let key = (sender, r, id.seq);
            if !self.server_pending.contains_key(&key) {
                self.server_sent(key, accepted);
            }
            match self.open.get(&key).copied() {
                // The same message recorded twice for this recipient: one copy expected.
                Some(Open::Pending(_)) => continue,
                // Seen before the sender recorded the acceptance (the recipient was quicker).
                Some(Open::Early {
                    seen,
                    by_idle,
                    copies: _,
                }) => {
                    self.open.remove(&key);
                    assert!(self.early > 0, "an early copy not counted early");
                    self.early -= 1;
                    self.expected += 1;
                    self.interval.sent += 1;
                    let via = if by_idle { Via::Idle } else { Via::Poll };
                    self.deliver(key, seen.saturating_duration_since(accepted), via);
                }
                None => {
                    if self
                        .delivered_upto
                        .get(&(sender, r))
                        .is_some_and(|&w| id.seq <= w)
                    {
                        // Delivered already: recorded twice.
                        continue;
                    }
                    self.open.insert(key, Open::Pending(accepted));
                    self.expected += 1;
                    self.interval.sent += 1;
                }
            }
        }
    }

    /// Recipient `recipient` found a message (the verifier's verdict) at `at`, by a poll.
    pub fn seen(&mut self, recipient: u32, verdict: &Verdict, at: Instant) -> Seen {
        self.seen_via(recipient, verdict, at, Via::Poll)
    }

    /// Recipient `recipient` found a message (the verifier's verdict) at `at`, by `via`.
    pub fn seen_via(&mut self, recipient: u32, verdict: &Verdict, at: Instant, via: Via) -> Seen {
        let id = match verdict {
            Verdict::NotOurs(_) => return Seen::NotOurs,
            Verdict::Corrupted { id, what } => {
                self.corrupted_count += 1;
                if self.corrupted.len() < 100 {
                    self.corrupted.push((id.clone(), recipient, what.clone()));
                }
                return Seen::Corrupted(what.clone());
            }
            Verdict::Intact(id) => id,
        };
        let key = (self.sender(id), recipient, id.seq);
        // A watched copy the user saw before the watcher's next poll (and may take away: POP3
        // deletes what it retrieves): it was in the mailbox by then, within the watcher's
        // resolution.
        if let Some(accepted) = self.server_pending.remove(&key) {
            let us =
                (at.saturating_duration_since(accepted).as_micros() as u64).clamp(1, 3_600_000_000);
            self.server_latency_us.saturating_record(us);
        }
        match self.open.get_mut(&key) {
            Some(Open::Pending(accepted)) => {
                let latency = at.saturating_duration_since(*accepted);
                self.open.remove(&key);
                assert!(
                    self.delivered_upto
                        .get(&(key.0, key.1))
                        .is_none_or(|&w| w != key.2),
                    "a copy found twice: open while its pair's watermark names it"
                );
                self.deliver(key, latency, via);
                Seen::Delivered(Some(latency))
            }
            Some(Open::Early { copies, .. }) => {
                *copies += 1;
                self.duplicated += 1;
                Seen::Duplicate
            }
            None => {
                if self
                    .delivered_upto
                    .get(&(key.0, key.1))
                    .is_some_and(|&w| key.2 <= w)
                {
                    self.duplicated += 1;
                    return Seen::Duplicate;
                }
                // Not (yet) known as sent: either the acceptance is still being recorded, or it
                // was never sent here. Kept as seen; `sent` resolves it, else it counts as
                // unexpected in the summary.
                self.open.insert(
                    key,
                    Open::Early {
                        seen: at,
                        by_idle: via == Via::Idle,
                        copies: 1,
                    },
                );
                self.early += 1;
                assert!(
                    self.early <= self.open.len() as u64,
                    "early copies are open copies"
                );
                Seen::Delivered(None)
            }
        }
    }

    /// Copies not seen yet whose recipient is a key of `recipients` (walks the open copies).
    pub fn missing_for<V>(&self, recipients: &std::collections::BTreeMap<u32, V>) -> u64 {
        self.open
            .iter()
            .filter(|((_, r, _), o)| matches!(o, Open::Pending(_)) && recipients.contains_key(r))
            .count() as u64
    }

    /// Whether every expected copy has been seen (O(1)).
    pub fn complete(&self) -> bool {
        self.delivered == self.expected
    }

    /// Copies kept on their own now (open: accepted and not seen, or seen before their
    /// acceptance) and (sender, recipient) pairs with a watermark: the ledger's memory is
    /// about 60 and 20 bytes each.
    pub fn footprint(&self) -> (usize, usize) {
        (self.open.len(), self.delivered_upto.len())
    }

    /// The totals now. Walks the open copies only (to name up to [`LOST_NAMED`] missing ones).
    pub fn summary(&self) -> DeliverySummary {
        let mut missing_copies: Vec<(MessageId, u32)> = Vec::new();
        for (&(sender, r, seq), o) in &self.open {
            if missing_copies.len() >= LOST_NAMED {
                break;
            }
            if let (Open::Pending(_), Some((run, address))) = (o, self.names.get(sender as usize)) {
                missing_copies.push((
                    MessageId {
                        run: run.clone(),
                        sender: address.clone(),
                        seq,
                    },
                    r,
                ));
            }
        }
        missing_copies
            .sort_by(|a, b| (&a.0.sender, a.0.seq, a.1).cmp(&(&b.0.sender, b.0.seq, b.1)));
        assert!(
            self.seen_by_idle <= self.delivered && self.delivered <= self.expected,
            "the delivery counts do not add up"
        );
        DeliverySummary {
            expected: self.expected,
            delivered: self.delivered,
            missing: self.expected - self.delivered,
            duplicated: self.duplicated,
            corrupted: self.corrupted.clone(),
            unexpected: self.early,
            latency_us: self.latency_us.clone(),
            seen_by_idle: self.seen_by_idle,
            seen_by_poll: self.delivered - self.seen_by_idle,
            missing_copies,
            server_latency_us: self.server_latency_us.clone(),
            server_watched: self.watched.len() as u64,
            server_unseen: self.server_pending.len() as u64,
        }
    }

    /// Corrupted copies seen (all of them, not only the 100 named).
    pub fn corrupted_count(&self) -> u64 {
        self.corrupted_count
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn id(seq: u64) -> MessageId {
        MessageId {
            run: "r".into(),
            sender: "a@d".into(),
            seq,
        }
    }

    #[test]
    fn the_watcher_s_listing_gives_the_server_latency_of_watched_recipients_only() {
        let mut l = Ledger::new();
        let t0 = Instant::now();
        l.watch(1);
        l.sent(&id(1), &[1, 2], t0);
        l.sent(&id(1), &[1], t0);
        l.server_seen(1, &id(1), t0 + Duration::from_millis(300));
        // The user saw it 20 s later (its next check): the user-seen figure, not the server's.
        l.seen(1, &Verdict::Intact(id(1)), t0 + Duration::from_secs(20));
        // Listed before the acceptance was recorded.
        l.server_seen(1, &id(2), t0 + Duration::from_millis(500));
        l.sent(&id(2), &[1], t0 + Duration::from_millis(100));
        l.sent(&id(3), &[1], t0);
        let s = l.summary();
        assert_eq!((s.server_watched, s.server_unseen), (1, 1));
        assert_eq!(s.server_latency_us.len(), 2);
        // Seen by its user before any poll listed it (then deleted by POP3): timed at that.
        l.seen(1, &Verdict::Intact(id(3)), t0 + Duration::from_millis(200));
        l.server_seen(1, &id(3), t0 + Duration::from_secs(9));
        let s = l.summary();
        assert_eq!((s.server_unseen, s.server_latency_us.len()), (0, 3));
        assert!((199_000..=201_000).contains(&s.server_latency_us.min()));
        assert!((399_000..=401_000).contains(&s.server_latency_us.max()));
        assert!(s.latency_us.max() >= 19_000_000);
    }

    #[test]
    fn counts_delivered_missing_duplicated_unexpected_and_latency() {
        let mut l = Ledger::new();
        let t0 = Instant::now();
        l.sent(&id(1), &[1, 2], t0);
        l.sent(&id(2), &[1], t0);
        assert_eq!(
            l.seen(1, &Verdict::Intact(id(1)), t0 + Duration::from_millis(10)),
            Seen::Delivered(Some(Duration::from_millis(10)))
        );
        assert_eq!(
            l.seen(1, &Verdict::Intact(id(1)), t0 + Duration::from_millis(20)),
            Seen::Duplicate
        );
        // Seen before the acceptance was recorded: resolved by `sent`.
        assert_eq!(
            l.seen(3, &Verdict::Intact(id(3)), t0 + Duration::from_millis(5)),
            Seen::Delivered(None)
        );
        assert!(!l.complete());
        l.sent(&id(3), &[3], t0);
        // Sent elsewhere, found here.
        l.seen(4, &Verdict::Intact(id(2)), t0);
        let s = l.summary();
        assert_eq!(
            (
                s.expected,
                s.delivered,
                s.missing,
                s.duplicated,
                s.unexpected
            ),
            (4, 2, 2, 1, 1)
        );
        assert_eq!(s.latency_us.len(), 2);
        assert!(matches!(
            l.seen(
                1,
                &Verdict::Corrupted {
                    id: id(2),
                    what: "x".into()
                },
                t0
            ),
            Seen::Corrupted(_)
        ));
        assert_eq!(l.corrupted_count(), 1);
    }

    #[test]
    fn intervals_add_up_to_the_totals_and_other_runs_mail_counts_nowhere() {
        let mut l = Ledger::new();
        let t0 = Instant::now();
        l.sent(&id(1), &[1, 2], t0);
        l.seen(1, &Verdict::Intact(id(1)), t0 + Duration::from_millis(10));
        // Another run's message, or none of ours: not counted, not unexpected.
        assert_eq!(
            l.seen(1, &Verdict::NotOurs("another run".into()), t0),
            Seen::NotOurs
        );
        let a = l.take_interval();
        assert_eq!((a.sent, a.delivered, a.latency_us.len()), (2, 1, 1));
        // Seen before its acceptance was recorded: delivered when `sent` comes.
        l.seen(3, &Verdict::Intact(id(2)), t0 + Duration::from_millis(30));
        l.sent(&id(2), &[3], t0);
        l.sent(&id(2), &[3], t0);
        l.seen(2, &Verdict::Intact(id(1)), t0 + Duration::from_millis(20));
        let b = l.take_interval();
        assert_eq!((b.sent, b.delivered, b.latency_us.len()), (1, 2, 2));
        let c = l.take_interval();
        assert_eq!((c.sent, c.delivered, c.latency_us.len()), (0, 0, 0));
        let s = l.summary();
        assert_eq!(l.totals(), (s.expected, s.delivered));
        assert_eq!(
            (s.expected, s.delivered, s.unexpected, s.missing),
            (3, 3, 0, 0)
        );
    }

    #[test]
    fn names_missing_copies_counts_idle_and_poll_and_late_copies() {
        let mut l = Ledger::new();
        let t0 = Instant::now();
        l.sent(&id(1), &[1, 2, 3], t0);
        l.sent(&id(2), &[1], t0);
        l.seen_via(
            1,
            &Verdict::Intact(id(1)),
            t0 + Duration::from_millis(600),
            Via::Idle,
        );
        l.seen(2, &Verdict::Intact(id(1)), t0 + Duration::from_secs(90));
        let s = l.summary();
        assert_eq!((s.seen_by_idle, s.seen_by_poll), (1, 1));
        assert_eq!(s.measured_by(), "idle+poll");
        assert_eq!(s.missing_copies, vec![(id(1), 3), (id(2), 1)]);
        assert_eq!(s.late(Duration::from_secs(60)), 1);
        assert_eq!(s.late(Duration::from_millis(100)), 2);
        assert_eq!(Ledger::new().summary().measured_by(), "none");
    }

    #[test]
    fn delivered_copies_are_folded_into_watermarks_and_duplicates_still_found() {
        let mut l = Ledger::new();
        let t0 = Instant::now();
        let ms = Duration::from_millis;
        // 3 senders x 1,000 messages to 2 of 4 recipients each, delivered (some out of order):
        // memory ends at one watermark per pair, no copy kept.
        let ids = |s: u32, seq: u64| MessageId {
            run: "r".into(),
            sender: format!("u{s}@d"),
            seq,
        };
        for seq in 0..1000u64 {
            for s in 0..3u32 {
                let to = [(s + 1) % 4, (s + 1 + (seq % 3) as u32) % 4];
                let to: Vec<u32> = if to[0] == to[1] {
                    vec![to[0]]
                } else {
                    to.to_vec()
                };
                l.sent(&ids(s, seq), &to, t0);
                // Recipients see every second message only after the next one.
                if seq % 2 == 1 {
                    for &r in &to {
                        l.seen(r, &Verdict::Intact(ids(s, seq)), t0 + ms(5));
                    }
                    let prev = seq - 1;
                    let to_prev = [(s + 1) % 4, (s + 1 + (prev % 3) as u32) % 4];
                    let mut tp = to_prev.to_vec();
                    tp.dedup();
                    for &r in &tp {
                        l.seen(r, &Verdict::Intact(ids(s, prev)), t0 + ms(9));
                    }
                }
            }
        }
        assert!(l.complete());
        let (open, pairs) = l.footprint();
        assert_eq!(open, 0, "no copy kept once delivered");
        assert!(pairs <= 3 * 4, "{pairs} pairs");
        let s = l.summary();
        assert_eq!(s.expected, s.delivered);
        assert_eq!((s.missing, s.duplicated, s.unexpected), (0, 0, 0));
        // A copy seen again, long after it was folded: a duplicate, not unexpected.
        assert_eq!(
            l.seen(1, &Verdict::Intact(ids(0, 3)), t0 + ms(20)),
            Seen::Duplicate
        );
        // A message recorded twice after its delivery: still one copy expected.
        l.sent(&ids(0, 3), &[1], t0);
        let s = l.summary();
        assert_eq!((s.duplicated, s.expected - s.delivered), (1, 0));
        // A later message, lost: kept on its own and named.
        l.sent(&ids(2, 5000), &[3], t0);
        assert_eq!(l.footprint().0, 1);
        assert_eq!(l.summary().missing_copies, vec![(ids(2, 5000), 3)]);
    }
}
