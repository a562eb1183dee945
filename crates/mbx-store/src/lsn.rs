//! One log sequence number space for records and checkpoints.
//!
//! An [`Lsn`] is a position in a database's log stream: `generation x LOG_FILE_SIZE + offset`,
//! where `offset` is the byte offset in the log file of that generation. A record's Lsn is where
//! the record starts, so Lsns order records across files, and a checkpoint's Lsn names a position
//! in that same space ("every change logged before this Lsn is in the database file").
//!
//! Generation 0 is never written (log files start at generation 1), so [`Lsn::ZERO`] is before
//! every record.

use std::fmt;

/// Size of a log file.
pub const LOG_FILE_SIZE: usize = 1 << 20;

/// Log file size as the Lsn arithmetic uses it.
const FILE: u64 = LOG_FILE_SIZE as u64;

/// A position in the log stream: `generation x LOG_FILE_SIZE + offset` (see the module docs).
///
/// Displayed as `gen 0x1A offset 0x2000` (hexadecimal, as log file names show generations).
/// Serialized as the raw `u64`.
#[derive(
    Debug,
    Clone,
    Copy,
    PartialEq,
    Eq,
    PartialOrd,
    Ord,
    Hash,
    Default,
    serde::Serialize,
    serde::Deserialize,
)]
#[serde(transparent)]
pub struct Lsn(u64);

impl Lsn {
    /// Before every record (generation 0, offset 0).
    pub const ZERO: Lsn = Lsn(0);

    /// The Lsn of byte `offset` of log generation `generation`.
    ///
    /// # Panics
    /// If `offset >= LOG_FILE_SIZE` or the product overflows (generation >= 2^44, i.e. 16 EiB of
    /// log): both are caller bugs. Use [`Lsn::checked_new`] for values read from disk.
    pub fn new(generation: u64, offset: u64) -> Lsn {
        match Lsn::checked_new(generation, offset) {
            Some(lsn) => lsn,
            None => panic!("invalid Lsn: generation {generation}, offset {offset}"),
        }
    }

    /// The Lsn of byte `offset` of log generation `generation`, or `None` if `offset` is not
    /// inside a log file or the position does not fit in 64 bits.
    pub fn checked_new(generation: u64, offset: u64) -> Option<Lsn> {
        if offset >= FILE {
            return None;
        }
        generation.checked_mul(FILE)?.checked_add(offset).map(Lsn)
    }

    /// The Lsn with this raw value (every `u64` is a valid position).
    pub const fn from_raw(raw: u64) -> Lsn {
        Lsn(raw)
    }

    /// The raw value, as stored on disk.
    pub const fn raw(self) -> u64 {
        self.0
    }

    /// The log generation (file) this position is in.
    pub const fn generation(self) -> u64 {
        self.0 / FILE
    }

    /// The byte offset in that generation's file.
    pub const fn offset(self) -> u64 {
        self.0 % FILE
    }

    /// The position `bytes` further on (may cross into the next generation), or `None` on
    /// overflow.
    pub fn checked_add(self, bytes: u64) -> Option<Lsn> {
        self.0.checked_add(bytes).map(Lsn)
    }
}

impl fmt::Display for Lsn {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "gen {:#X} offset {:#X}",
            self.generation(),
            self.offset()
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn parts_order_and_display() {
        let a = Lsn::new(0x1A, 0x2000);
        assert_eq!(a.generation(), 0x1A);
        assert_eq!(a.offset(), 0x2000);
        assert_eq!(a.raw(), 0x1A * (1 << 20) + 0x2000);
        assert_eq!(a.to_string(), "gen 0x1A offset 0x2000");
        // The end of one file orders before the start of the next.
        assert!(Lsn::new(1, FILE - 1) < Lsn::new(2, 0));
        assert_eq!(
            Lsn::new(1, FILE - 4096).checked_add(4096),
            Some(Lsn::new(2, 0))
        );
        assert_eq!(Lsn::checked_new(1, FILE), None);
        assert_eq!(Lsn::checked_new(u64::MAX / FILE + 1, 0), None);
        assert_eq!(Lsn::ZERO.checked_add(1), Some(Lsn::from_raw(1)));
        assert_eq!(Lsn::from_raw(u64::MAX).checked_add(1), None);
        assert_eq!(serde_json::to_string(&a).ok(), Some(a.raw().to_string()));
    }

    #[test]
    #[should_panic(expected = "invalid Lsn")]
    fn an_offset_outside_the_file_is_a_bug() {
        let _ = Lsn::new(1, FILE);
    }

    proptest! {
        #[test]
        fn parts_round_trip(generation in 0u64..(1 << 40), offset in 0..FILE) {
            let lsn = Lsn::new(generation, offset);
            prop_assert_eq!((lsn.generation(), lsn.offset()), (generation, offset));
            prop_assert_eq!(Lsn::from_raw(lsn.raw()), lsn);
        }

        #[test]
        fn order_is_generation_then_offset(a in (0u64..1000, 0..FILE), b in (0u64..1000, 0..FILE)) {
            prop_assert_eq!(Lsn::new(a.0, a.1).cmp(&Lsn::new(b.0, b.1)), a.cmp(&b));
        }
    }
}
