//! The checkpoint file: two 4 KiB slots written alternately, each checksummed; the valid slot with
//! the highest sequence wins, so a torn write never loses the checkpoint.
//!
//! Slot layout: 0 magic `MBXCKPT2` (8), 8 checksum (8, XXH3-64 of the rest of the slot),
//! 16 sequence (8), 24 database id (8), 32 checkpoint [`Lsn`] (8).
//!
//! The sequence continues across runs: a writer reads the current checkpoint
//! ([`read_checkpoint`]) when it starts and writes sequence = previous + 1
//! ([`Checkpoint::next_sequence`]) and so on, so a new run's checkpoint always wins over an
//! earlier run's.

use std::io::Read;
use std::path::Path;

use crate::lsn::Lsn;
use crate::page::{open_block, seal_block};
use crate::StoreError;

/// Bytes of one slot; the file holds two.
pub const SLOT: usize = 4096;
/// Slot magic (version 2: the position is an [`Lsn`] and names the log generation needed).
pub const CHECKPOINT_MAGIC: &[u8; 8] = b"MBXCKPT2";
/// Checkpoint file name inside a database's log directory.
pub const CHECKPOINT_FILE: &str = "checkpoint.chk";

/// A checkpoint: every change logged before `lsn` is in the database file, so recovery replays
/// the records from `lsn` on and needs log generations `lsn.generation()` and later only.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Checkpoint {
    /// Previous checkpoint's sequence + 1, across runs; selects the slot (`sequence % 2`).
    pub sequence: u64,
    /// Database the logs belong to.
    pub database_id: u64,
    /// Every change logged before this position is in the database file.
    pub lsn: Lsn,
}

impl Checkpoint {
    /// Encodes into one slot buffer; write it at `slot_offset()`.
    ///
    /// # Panics
    /// If `slot` is shorter than [`SLOT`].
    pub fn encode(&self, slot: &mut [u8]) {
        seal_block(slot, SLOT, CHECKPOINT_MAGIC, |s| {
            s[16..24].copy_from_slice(&self.sequence.to_le_bytes());
            s[24..32].copy_from_slice(&self.database_id.to_le_bytes());
            s[32..40].copy_from_slice(&self.lsn.raw().to_le_bytes());
        });
    }

    /// Byte offset of this checkpoint's slot in the file.
    pub fn slot_offset(&self) -> u64 {
        (self.sequence % 2) * SLOT as u64
    }

    /// The sequence the next checkpoint written after this one must carry.
    pub fn next_sequence(&self) -> u64 {
        self.sequence.saturating_add(1)
    }

    /// True if recovery from this checkpoint needs log generation `generation` (it holds records
    /// at or after the checkpoint). Older files can be deleted.
    pub fn needs_generation(&self, generation: u64) -> bool {
        generation >= self.lsn.generation()
    }

    fn decode(s: &[u8]) -> Option<Checkpoint> {
        let s = open_block(s, SLOT, CHECKPOINT_MAGIC)?;
        let u = |o: usize| s[o..o + 8].try_into().ok().map(u64::from_le_bytes);
        Some(Checkpoint {
            sequence: u(16)?,
            database_id: u(24)?,
            lsn: Lsn::from_raw(u(32)?),
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

/// What one slot of a checkpoint file holds ([`slot_states`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SlotState {
    /// All zeros, or past the end of the file: never written (a new file's other slot).
    Empty,
    /// A valid checkpoint (of any database).
    Valid(Checkpoint),
    /// Neither: a torn or overwritten slot.
    Damaged,
}

/// The state of both slots of a checkpoint file image (the file may be shorter than two slots:
/// a slot past its end is empty, one cut by its end is empty if what is there is zeros).
pub fn slot_states(image: &[u8]) -> [SlotState; 2] {
    [0, 1].map(|k| {
        let slot = image
            .get(k * SLOT..)
            .map_or(&[][..], |s| &s[..s.len().min(SLOT)]);
        if slot.iter().all(|&b| b == 0) {
            SlotState::Empty
        } else {
            Checkpoint::decode(slot).map_or(SlotState::Damaged, SlotState::Valid)
        }
    })
}

/// The current checkpoint of a log directory (its [`CHECKPOINT_FILE`]), or `None` if there is no
/// file or no valid slot. The next checkpoint written to the directory must carry
/// [`Checkpoint::next_sequence`] of this one (1 if there is none).
pub fn read_checkpoint(log_dir: &Path) -> Result<Option<Checkpoint>, StoreError> {
    let path = log_dir.join(CHECKPOINT_FILE);
    let file = match std::fs::File::open(&path) {
        Ok(f) => f,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(e) => return Err(mbx_io::IoError::new("open", &path, e).into()),
    };
    let mut image = Vec::with_capacity(2 * SLOT);
    file.take(2 * SLOT as u64)
        .read_to_end(&mut image)
        .map_err(|e| mbx_io::IoError::new("read", &path, e))?;
    Ok(Checkpoint::from_file(&image))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn write(image: &mut [u8], c: Checkpoint) {
        let off = c.slot_offset() as usize;
        c.encode(&mut image[off..off + SLOT]);
    }

    #[test]
    fn alternating_slots_survive_a_torn_write() {
        let mut image = vec![0u8; 2 * SLOT];
        let c1 = Checkpoint {
            sequence: 1,
            database_id: 9,
            lsn: Lsn::new(4, 0x3000),
        };
        let c2 = Checkpoint {
            sequence: c1.next_sequence(),
            lsn: Lsn::new(5, 0x1000),
            ..c1
        };
        for c in [c1, c2] {
            write(&mut image, c);
        }
        assert_eq!(Checkpoint::from_file(&image), Some(c2));
        image[100] ^= 1; // tear slot 0 (sequence 2)
        assert_eq!(Checkpoint::from_file(&image), Some(c1));
        assert!(!c2.needs_generation(4) && c2.needs_generation(5) && c2.needs_generation(6));
    }

    /// A run that restarts its sequence at 1 loses to a stale higher sequence of an earlier run;
    /// continuing from the directory's checkpoint makes the newest checkpoint win.
    #[test]
    fn a_second_runs_checkpoint_wins_over_the_first_runs() -> Result<(), StoreError> {
        let dir = tempfile::tempdir().map_err(|e| mbx_io::IoError::new("create", "tmp", e))?;
        assert_eq!(read_checkpoint(dir.path())?, None);
        let path = dir.path().join(CHECKPOINT_FILE);
        let run = |first_lsn: Lsn, count: u64| -> Result<Checkpoint, StoreError> {
            let mut image = std::fs::read(&path).unwrap_or_else(|_| vec![0; 2 * SLOT]);
            let mut sequence = read_checkpoint(dir.path())?.map_or(1, |c| c.next_sequence());
            let mut last = None;
            for i in 0..count {
                let c = Checkpoint {
                    sequence,
                    database_id: 9,
                    lsn: first_lsn.checked_add(i * 0x1000).unwrap_or(first_lsn),
                };
                write(&mut image, c);
                std::fs::write(&path, &image)
                    .map_err(|e| mbx_io::IoError::new("write", &path, e))?;
                sequence = c.next_sequence();
                last = Some(c);
            }
            last.ok_or_else(|| StoreError::Invalid("no checkpoint written".into()))
        };
        // The first run writes 5 checkpoints (sequences 1..5), the second only 2.
        let first = run(Lsn::new(1, 0x1000), 5)?;
        assert_eq!(first.sequence, 5);
        let second = run(Lsn::new(7, 0x1000), 2)?;
        assert_eq!(second.sequence, 7);
        assert_eq!(read_checkpoint(dir.path())?, Some(second));
        Ok(())
    }

    #[test]
    fn slots_are_empty_valid_or_damaged() {
        let c = Checkpoint {
            sequence: 3,
            database_id: 9,
            lsn: Lsn::new(2, 0x1000),
        };
        let mut image = vec![0u8; 2 * SLOT];
        write(&mut image, c);
        assert_eq!(slot_states(&image), [SlotState::Empty, SlotState::Valid(c)]);
        // A file of one slot (the first checkpoint went to slot 0): the other is empty.
        let c0 = Checkpoint { sequence: 4, ..c };
        let mut one = vec![0u8; SLOT];
        write(&mut one, c0);
        assert_eq!(slot_states(&one), [SlotState::Valid(c0), SlotState::Empty]);
        assert_eq!(slot_states(&[]), [SlotState::Empty, SlotState::Empty]);
        image[SLOT + 100] ^= 1;
        assert_eq!(slot_states(&image), [SlotState::Empty, SlotState::Damaged]);
        // Garbage cut short by the end of the file.
        assert_eq!(slot_states(&image[..SLOT + 200])[1], SlotState::Damaged);
    }

    #[test]
    fn a_damaged_or_foreign_file_has_no_checkpoint() -> Result<(), StoreError> {
        let dir = tempfile::tempdir().map_err(|e| mbx_io::IoError::new("create", "tmp", e))?;
        let path = dir.path().join(CHECKPOINT_FILE);
        std::fs::write(&path, b"not a checkpoint")
            .map_err(|e| mbx_io::IoError::new("write", &path, e))?;
        assert_eq!(read_checkpoint(dir.path())?, None);
        // A directory in its place is an error naming the path, not "no checkpoint".
        std::fs::remove_file(&path).map_err(|e| mbx_io::IoError::new("remove", &path, e))?;
        std::fs::create_dir(&path).map_err(|e| mbx_io::IoError::new("mkdir", &path, e))?;
        let err = read_checkpoint(dir.path()).err().map(|e| e.to_string());
        assert!(err.is_some_and(|e| e.contains("checkpoint.chk")));
        Ok(())
    }
}
