//! The workload model: how a transaction turns into page accesses and log bytes.
//!
//! Derivation of the constants (docs/method.md has the long form). With uniform page access and
//! a cache of 1/8 of the database, about 88% of page accesses miss. Per operation:
//! - read (35%): 3 pages read; in 5% of reads the first two are adjacent and fetched as one 64 KiB
//!   I/O (Jetstress reads average 32.8-33.4 KB, "mostly 32 KiB, a few larger").
//! - insert (40%): 1 page read and modified; in 12% of inserts a new adjacent page is also
//!   written (no read), so flushes coalesce into 64 KiB writes (averages 34.9-36.7 KB).
//! - delete (20%): 1 page read and modified.
//! - replace (5%): 2 pages read, the first modified.
//!
//! That is 1.75 page reads and 0.65 modified pages per operation: about 1.54 read I/Os to 0.65
//! write I/Os, a 70% read share (Jetstress reports: 67.9-70.7%).
//!
//! A transaction batches one or two operations (two with probability [`TWO_OPS_P`]) and commits
//! once: lazily for 70% of transactions, durably (waiting for the log) for 30%. Only a durable
//! commit of a transaction that changed pages makes the log writer write (as in ESE), so log
//! writes per database write = 0.3 x (share of transactions that change pages) / (page writes
//! per transaction), plus the few records written because half the log buffer filled and the
//! log file headers. Every other input of that ratio is fixed by the seed reports (the durable
//! share, the operation mix, the read share and the sizes); how many operations a Jetstress
//! transaction batches is not published. One operation per transaction would give 0.32, two
//! 0.21; 1.55 on average gives 0.25, the ratio of the one report where group commit could not
//! merge commits (T: 0.248, with half a session per database; docs/method.md, "Log writes per
//! database write").

use mbx_config::OpMix;

/// Most operations batched in one transaction.
pub const MAX_OPS_PER_TXN: usize = 2;
/// Probability that a transaction batches two operations rather than one (1.55 on average):
/// the one constant fitted to the log writes per database write of the seed reports.
pub const TWO_OPS_P: f64 = 0.55;

/// How many operations the next transaction batches: 1 or 2 ([`TWO_OPS_P`]).
pub fn ops_in_txn(rng: &mut Rng) -> usize {
    if rng.chance(TWO_OPS_P) {
        2
    } else {
        1
    }
}

/// Most pages one operation reads (a read operation: 3); bounds the I/O queue depth.
pub const MAX_READS_PER_OP: usize = 3;
/// Probability that a read operation's first two pages are adjacent (one 64 KiB read).
pub const ADJACENT_READ_P: f64 = 0.05;
/// Probability that an insert also writes a new adjacent page.
pub const INSERT_NEW_PAGE_P: f64 = 0.12;
/// Log bytes per operation kind.
pub const LOG_BYTES_INSERT: u32 = 3072;
/// Extra log bytes when an insert allocates a new page.
pub const LOG_BYTES_NEW_PAGE: u32 = 1024;
/// Log bytes of a delete.
pub const LOG_BYTES_DELETE: u32 = 1536;
/// Log bytes of a replace.
pub const LOG_BYTES_REPLACE: u32 = 2560;
/// Log bytes of a read (none: reads change nothing).
pub const LOG_BYTES_READ: u32 = 0;

/// An operation kind.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Op {
    /// Insert a message.
    Insert,
    /// Delete one.
    Delete,
    /// Replace (update) one.
    Replace,
    /// Read one.
    Read,
}

/// One page access of a transaction.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Access {
    /// Page number.
    pub page: u64,
    /// The page is modified.
    pub modify: bool,
    /// A newly allocated page: modified without being read first.
    pub new_page: bool,
    /// Read together with the next access (adjacent page) in one I/O if both miss.
    pub join_next: bool,
}

/// Small, fast, deterministic generator for workload choices (xorshift64*).
#[derive(Debug, Clone)]
pub struct Rng(u64);

impl Rng {
    /// Seeded generator (any seed; 0 is remapped).
    pub fn new(seed: u64) -> Self {
        Rng(seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1)
    }
    /// Next 64 random bits.
    pub fn next_u64(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_F491_4F6C_DD1D)
    }
    /// Uniform in 0..n (n > 0).
    pub fn below(&mut self, n: u64) -> u64 {
        ((self.next_u64() as u128 * n.max(1) as u128) >> 64) as u64
    }
    /// True with probability p.
    pub fn chance(&mut self, p: f64) -> bool {
        ((self.next_u64() >> 11) as f64 / ((1u64 << 53) as f64)) < p
    }
}

/// Picks an operation by the mix.
pub fn pick_op(mix: &OpMix, rng: &mut Rng) -> Op {
    let r = rng.below(100) as u32;
    if r < mix.insert_pct {
        Op::Insert
    } else if r < mix.insert_pct + mix.delete_pct {
        Op::Delete
    } else if r < mix.insert_pct + mix.delete_pct + mix.replace_pct {
        Op::Replace
    } else {
        Op::Read
    }
}

/// Where a mailbox's pages live in its database: `first` page and `count` pages.
#[derive(Debug, Clone, Copy)]
pub struct Region {
    /// First page of the mailbox's region.
    pub first: u64,
    /// Pages in it (at least 1).
    pub count: u64,
}

/// The region of mailbox `local` (0-based within its database) when a database of `data_pages`
/// pages (starting at `first_data_page`) holds `mailboxes` mailboxes: equal contiguous slices.
pub fn region(first_data_page: u64, data_pages: u64, mailboxes: u64, local: u64) -> Region {
    let per = (data_pages / mailboxes.max(1)).max(1);
    let start = (local * per) % data_pages.max(1);
    Region {
        first: first_data_page + start,
        count: per.min(data_pages - start).max(1),
    }
}

/// Appends the page accesses of one operation on a mailbox region; returns its log bytes.
pub fn accesses(op: Op, r: Region, last_page: u64, rng: &mut Rng, out: &mut Vec<Access>) -> u32 {
    let pick = |rng: &mut Rng| r.first + rng.below(r.count);
    let read = |page| Access {
        page,
        modify: false,
        new_page: false,
        join_next: false,
    };
    match op {
        Op::Read => {
            let a = pick(rng);
            if rng.chance(ADJACENT_READ_P) && a < last_page {
                out.push(Access {
                    join_next: true,
                    ..read(a)
                });
                out.push(read(a + 1));
            } else {
                out.push(read(a));
                out.push(read(pick(rng)));
            }
            out.push(read(pick(rng)));
            LOG_BYTES_READ
        }
        Op::Insert => {
            let a = pick(rng);
            out.push(Access {
                modify: true,
                ..read(a)
            });
            if rng.chance(INSERT_NEW_PAGE_P) && a < last_page {
                out.push(Access {
                    page: a + 1,
                    modify: true,
                    new_page: true,
                    join_next: false,
                });
                LOG_BYTES_INSERT + LOG_BYTES_NEW_PAGE
            } else {
                LOG_BYTES_INSERT
            }
        }
        Op::Delete => {
            out.push(Access {
                modify: true,
                ..read(pick(rng))
            });
            LOG_BYTES_DELETE
        }
        Op::Replace => {
            out.push(Access {
                modify: true,
                ..read(pick(rng))
            });
            out.push(read(pick(rng)));
            LOG_BYTES_REPLACE
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn mix_and_page_counts_match_the_derivation() {
        let mix = OpMix::default();
        let mut rng = Rng::new(7);
        let n = 200_000;
        let (mut reads, mut modified, mut log) = (0u64, 0u64, 0u64);
        let mut counts = [0u64; 4];
        let mut v = Vec::new();
        let r = Region {
            first: 2,
            count: 1000,
        };
        for _ in 0..n {
            let op = pick_op(&mix, &mut rng);
            counts[op as usize] += 1;
            v.clear();
            log += accesses(op, r, 10_000, &mut rng, &mut v) as u64;
            reads += v.iter().filter(|a| !a.new_page).count() as u64;
            modified += v.iter().filter(|a| a.modify && !a.new_page).count() as u64;
        }
        let share = |c: u64| c as f64 / n as f64;
        assert!((share(counts[Op::Insert as usize]) - 0.40).abs() < 0.01);
        assert!((share(counts[Op::Read as usize]) - 0.35).abs() < 0.01);
        assert!((reads as f64 / n as f64 - 1.75).abs() < 0.02, "{reads}");
        assert!(
            (modified as f64 / n as f64 - 0.65).abs() < 0.01,
            "{modified}"
        );
        assert!((log as f64 / n as f64 - 1700.0).abs() < 60.0, "{log}");
    }

    #[test]
    fn transactions_batch_one_or_two_operations_as_derived() {
        let mix = OpMix::default();
        let mut rng = Rng::new(11);
        let n = 200_000;
        let (mut ops, mut changing, mut changes) = (0u64, 0u64, 0u64);
        let r = Region {
            first: 2,
            count: 1000,
        };
        let mut v = Vec::new();
        for _ in 0..n {
            let k = ops_in_txn(&mut rng);
            assert!((1..=MAX_OPS_PER_TXN).contains(&k));
            ops += k as u64;
            v.clear();
            for _ in 0..k {
                let op = pick_op(&mix, &mut rng);
                accesses(op, r, 10_000, &mut rng, &mut v);
            }
            let modified = v.iter().filter(|a| a.modify).count() as u64;
            changes += modified;
            changing += u64::from(modified > 0);
        }
        let per_txn = |c: u64| c as f64 / n as f64;
        // 1.55 operations; 0.45 x 0.65 + 0.55 x (1 - 0.35 x 0.35) = 0.775 of transactions
        // change pages (a read changes none); 1.55 x 0.698 = 1.08 page changes each.
        assert!((per_txn(ops) - 1.55).abs() < 0.01, "{ops}");
        assert!((per_txn(changing) - 0.775).abs() < 0.005, "{changing}");
        assert!((per_txn(changes) - 1.082).abs() < 0.01, "{changes}");
        // The ratio's derivation (docs/method.md): durable commits of changing transactions
        // (0.3 x 0.775 = 0.233 per transaction; 4.5% more log writes with the records written at
        // half the log buffer and the file headers) over page writes (1.08 changes in writes of
        // 1.09 pages, 2% of them to pages already dirty: about 0.98): about 0.25.
        let ratio = 0.3 * per_txn(changing) * 1.045 / (per_txn(changes) / 1.09 * 0.98);
        assert!((0.243..0.255).contains(&ratio), "{ratio}");
    }

    #[test]
    fn no_operation_reads_more_than_the_bound() {
        let mut rng = Rng::new(3);
        let r = Region {
            first: 2,
            count: 50,
        };
        let mut v = Vec::new();
        for op in [Op::Insert, Op::Delete, Op::Replace, Op::Read] {
            for _ in 0..2000 {
                v.clear();
                accesses(op, r, 100, &mut rng, &mut v);
                let reads = v.iter().filter(|a| !a.new_page).count();
                assert!(reads <= MAX_READS_PER_OP, "{op:?} read {reads} pages");
            }
        }
    }

    #[test]
    fn regions_partition_the_database() {
        let r0 = region(2, 1000, 10, 0);
        let r9 = region(2, 1000, 10, 9);
        assert_eq!((r0.first, r0.count), (2, 100));
        assert_eq!((r9.first, r9.count), (902, 100));
        // More mailboxes than pages: regions of one page, wrapping.
        let r = region(2, 5, 10, 7);
        assert_eq!((r.first, r.count), (4, 1));
    }
}
