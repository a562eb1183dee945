//! Temporary adapter to the store's log format (replaced by mbx_store::log once it carries Lsn
//! and redo entries).
#![allow(dead_code)]

pub(crate) use mbx_store::log::{encode_log_header, log_file_name, LOG_FILE_SIZE, LOG_SECTOR};

#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Default)]
pub(crate) struct Lsn(pub u64);
impl Lsn {
    pub fn new(gen: u64, offset: u64) -> Lsn {
        Lsn(gen * LOG_FILE_SIZE as u64 + offset)
    }
    pub fn generation(self) -> u64 {
        self.0 / LOG_FILE_SIZE as u64
    }
}
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct RedoEntry {
    pub page: u64,
    pub generation: u64,
}
pub(crate) fn record_size(payload: usize) -> usize {
    mbx_store::log::record_size(payload)
}
pub(crate) fn encode_record(out: &mut [u8], gen: u64, lsn: Lsn, payload: usize, ops: u32, _e: &[RedoEntry]) {
    mbx_store::log::encode_record(out, gen, lsn.0, payload, ops)
}
pub(crate) use mbx_store::checkpoint::{CHECKPOINT_FILE, SLOT};
pub(crate) fn encode_checkpoint(slot: &mut [u8], sequence: u64, database_id: u64, lsn: Lsn) -> u64 {
    let c = mbx_store::checkpoint::Checkpoint {
        sequence,
        database_id,
        log_generation: lsn.generation(),
        lsn: lsn.0,
    };
    c.encode(slot);
    c.slot_offset()
}
