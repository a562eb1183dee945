//! The checkpoint file: two 4 KiB slots written alternately, each checksummed; the valid slot with
//! the highest sequence wins, so a torn write never loses the checkpoint.
//!
//! Slot layout: 0 magic `MBXCKPT1` (8), 8 checksum (8, XXH3-64 of the rest of the slot),
//! 16 sequence (8), 24 database id (8), 32 checkpoint log generation (8), 40 checkpoint LSN (8).

use crate::page::block_checksum;

/// Bytes of one slot; the file holds two.
pub const SLOT: usize = 4096;
/// Slot magic.
pub const CHECKPOINT_MAGIC: &[u8; 8] = b"MBXCKPT1";
/// Checkpoint file name inside a database's log directory.
pub const CHECKPOINT_FILE: &str = "checkpoint.chk";

/// A checkpoint: every change before `lsn` is in the database file.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Checkpoint {
    /// Incremented on every write; selects the slot (`sequence % 2`).
    pub sequence: u64,
    /// Database the logs belong to.
    pub database_id: u64,
    /// Oldest log generation still needed for recovery.
    pub log_generation: u64,
    /// LSN up to which the database is up to date.
    pub lsn: u64,
}

impl Checkpoint {
    /// Encodes into one slot buffer; write it at `slot_offset()`.
    pub fn encode(&self, slot: &mut [u8]) {
        let s = &mut slot[..SLOT];
        s.fill(0);
        s[..8].copy_from_slice(CHECKPOINT_MAGIC);
        s[16..24].copy_from_slice(&self.sequence.to_le_bytes());
        s[24..32].copy_from_slice(&self.database_id.to_le_bytes());
        s[32..40].copy_from_slice(&self.log_generation.to_le_bytes());
        s[40..48].copy_from_slice(&self.lsn.to_le_bytes());
        let sum = block_checksum(s);
        s[8..16].copy_from_slice(&sum.to_le_bytes());
    }

    /// Byte offset of this checkpoint's slot in the file.
    pub fn slot_offset(&self) -> u64 {
        (self.sequence % 2) * SLOT as u64
    }

    fn decode(s: &[u8]) -> Option<Checkpoint> {
        let s = s.get(..SLOT)?;
        let u = |o: usize| s[o..o + 8].try_into().ok().map(u64::from_le_bytes);
        if &s[..8] != CHECKPOINT_MAGIC || u(8)? != block_checksum(s) {
            return None;
        }
        Some(Checkpoint {
            sequence: u(16)?,
            database_id: u(24)?,
            log_generation: u(32)?,
            lsn: u(40)?,
        })
    }

    /// Reads the newest valid checkpoint from the file image (two slots).
    pub fn from_file(image: &[u8]) -> Option<Checkpoint> {
        let a = image.get(..SLOT).and_then(Checkpoint::decode);
        let b = image.get(SLOT..2 * SLOT).and_then(Checkpoint::decode);
        match (a, b) {
            (Some(a), Some(b)) => Some(if b.sequence > a.sequence { b } else { a }),
            (a, b) => a.or(b),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn alternating_slots_survive_a_torn_write() {
        let mut image = vec![0u8; 2 * SLOT];
        let c1 = Checkpoint {
            sequence: 1,
            database_id: 9,
            log_generation: 4,
            lsn: 4 << 20,
        };
        let c2 = Checkpoint {
            sequence: 2,
            log_generation: 5,
            lsn: 5 << 20,
            ..c1
        };
        for c in [c1, c2] {
            let off = c.slot_offset() as usize;
            c.encode(&mut image[off..off + SLOT]);
        }
        assert_eq!(Checkpoint::from_file(&image), Some(c2));
        image[100] ^= 1; // tear slot 0 (sequence 2)
        assert_eq!(Checkpoint::from_file(&image), Some(c1));
    }
}
