//! The store's log format as the engine uses it: positions ([`Lsn`]), records with redo entries,
//! checkpoint slots.

pub(crate) use mbx_store::checkpoint::{Checkpoint, CHECKPOINT_FILE, SLOT};
pub(crate) use mbx_store::log::{
    encode_log_header, encode_record, log_file_name, record_size, RedoEntry, LOG_FILE_SIZE,
    LOG_SECTOR,
};
pub(crate) use mbx_store::Lsn;

/// Payload bytes a transaction's record part takes: what the workload logs, or more when its
/// redo entries need more (the store's layout: an 8-byte count and 16 bytes per entry).
pub(crate) fn txn_payload(log_bytes: u32, entries: usize) -> u64 {
    u64::from(log_bytes).max(8 + 16 * entries as u64)
}

/// Encodes checkpoint `sequence` at `lsn` into `slot`; returns the slot's offset in the file.
pub(crate) fn encode_checkpoint(slot: &mut [u8], sequence: u64, database_id: u64, lsn: Lsn) -> u64 {
    let c = Checkpoint {
        sequence,
        database_id,
        lsn,
    };
    c.encode(slot);
    c.slot_offset()
}
