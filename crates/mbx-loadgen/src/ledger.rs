//! Delivery accounting: every message sent is expected once in each recipient's mailbox. The
//! ledger matches what recipients find against what was sent and counts delivered, lost,
//! duplicated, corrupted and unexpected copies, with the delivery latency (SMTP acceptance to
//! the copy being seen) in an HDR histogram.
//!
//! Memory: one entry per (message, recipient) sent in the run, about 100 bytes; a run of 16,000
//! users at 150 messages a day keeps about 2 million entries a day (~200 MB). Compacting
//! delivered entries to per-sender watermarks is left to the loadgen command (issue 28 asks for
//! memory bounded by users, not test length).

use std::collections::HashMap;
use std::time::{Duration, Instant};

use hdrhistogram::Histogram;

use crate::message::{MessageId, Verdict};

#[derive(Debug, Clone)]
struct Entry {
    accepted: Option<Instant>,
    first_seen: Option<Instant>,
    copies: u32,
}

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
}

/// The run's ledger.
#[derive(Debug, Clone)]
pub struct Ledger {
    entries: HashMap<(MessageId, u32), Entry>,
    duplicated: u64,
    corrupted: Vec<(MessageId, u32, String)>,
    corrupted_count: u64,
    latency_us: Histogram<u64>,
    /// Copies expected (acceptance recorded), kept as a count so samples cost O(1).
    expected: u64,
    /// Copies expected and seen.
    delivered: u64,
    /// Since the last [`Ledger::take_interval`].
    interval: DeliveryInterval,
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
            entries: HashMap::new(),
            duplicated: 0,
            corrupted: Vec::new(),
            corrupted_count: 0,
            latency_us: latency_histogram(),
            expected: 0,
            delivered: 0,
            interval: DeliveryInterval::new(),
        }
    }

    /// A copy became delivered `d` after its acceptance.
    fn delivered_after(&mut self, d: Duration) {
        let us = (d.as_micros() as u64).clamp(1, 3_600_000_000);
        self.latency_us.saturating_record(us);
        self.interval.latency_us.saturating_record(us);
        self.delivered += 1;
        self.interval.delivered += 1;
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

    /// Message `id` was accepted for `recipients` (user indexes) at `accepted`.
    pub fn sent(&mut self, id: &MessageId, recipients: &[u32], accepted: Instant) {
        for &r in recipients {
            let e = self.entries.entry((id.clone(), r)).or_insert(Entry {
                accepted: None,
                first_seen: None,
                copies: 0,
            });
            if e.accepted.is_some() {
                // The same message recorded twice for this recipient: one copy expected.
                continue;
            }
            e.accepted = Some(accepted);
            let seen_first = if e.copies > 0 { e.first_seen } else { None };
            self.expected += 1;
            self.interval.sent += 1;
            // Seen before the sender recorded the acceptance (the recipient was quicker).
            if let Some(seen) = seen_first {
                self.delivered_after(seen.saturating_duration_since(accepted));
            }
        }
    }

    /// Recipient `recipient` found a message (the verifier's verdict) at `at`.
    pub fn seen(&mut self, recipient: u32, verdict: &Verdict, at: Instant) -> Seen {
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
        match self.entries.get_mut(&(id.clone(), recipient)) {
            None => {
                // Not (yet) known as sent: either the acceptance is still being recorded, or it
                // was never sent here. Kept as seen; `sent` resolves it, else it counts as
                // unexpected in the summary.
                self.entries.insert(
                    (id.clone(), recipient),
                    Entry {
                        accepted: None,
                        first_seen: Some(at),
                        copies: 1,
                    },
                );
                Seen::Delivered(None)
            }
            Some(e) if e.copies > 0 => {
                e.copies += 1;
                self.duplicated += 1;
                Seen::Duplicate
            }
            Some(e) => {
                e.copies = 1;
                e.first_seen = Some(at);
                let latency = e.accepted.map(|a| at.saturating_duration_since(a));
                if let Some(d) = latency {
                    self.delivered_after(d);
                }
                Seen::Delivered(latency)
            }
        }
    }

    /// Whether every expected copy has been seen.
    pub fn complete(&self) -> bool {
        self.entries
            .values()
            .all(|e| e.accepted.is_none() || e.copies > 0)
    }

    /// The totals now.
    pub fn summary(&self) -> DeliverySummary {
        let mut s = DeliverySummary {
            expected: 0,
            delivered: 0,
            missing: 0,
            duplicated: self.duplicated,
            corrupted: self.corrupted.clone(),
            unexpected: 0,
            latency_us: self.latency_us.clone(),
        };
        for e in self.entries.values() {
            match (e.accepted.is_some(), e.copies > 0) {
                (true, true) => {
                    s.expected += 1;
                    s.delivered += 1;
                }
                (true, false) => {
                    s.expected += 1;
                    s.missing += 1;
                }
                (false, true) => s.unexpected += 1,
                (false, false) => {}
            }
        }
        s
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
}
