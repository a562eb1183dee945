//! Initialization: fill a mailbox to a target count of generated messages over IMAP, resumable
//! and never touching a message it did not make.
//!
//! A mailbox's initialization messages are the run's messages of sender = the mailbox's own
//! address with sequence numbers [`INIT_SEQ_BASE`] + 0 .. target, so they are told apart from
//! mail sent during the day and can be counted again: a second fill first finds which of them
//! the mailbox holds (SEARCH on `X-Mbx-Id`, then each one's id) and appends only the missing
//! ones. Other messages, of other runs or not generated at all, are never changed or deleted.
//! Batches go in one MULTIAPPEND with non-synchronizing literals when the server offers both
//! (Dovecot does), else one APPEND at a time.

use crate::error::Result;
use crate::imap::ImapClient;
use crate::message::Generator;

/// The first sequence number of initialization messages (2^40: a user's day never sends that
/// many).
pub const INIT_SEQ_BASE: u64 = 1 << 40;

/// What to fill.
#[derive(Debug, Clone)]
pub struct Fill {
    /// Messages of this run the mailbox should hold.
    pub target: u32,
    /// Messages per MULTIAPPEND (1 for single APPENDs).
    pub batch: usize,
    /// The mailbox (`INBOX`).
    pub mailbox: String,
    /// Flags of the appended messages (`\Seen` for old mail).
    pub flags: String,
}

impl Default for Fill {
    fn default() -> Self {
        Fill {
            target: 0,
            batch: 16,
            mailbox: "INBOX".into(),
            flags: "\\Seen".into(),
        }
    }
}

/// What a fill did.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Filled {
    /// Initialization messages of this run already there.
    pub found: u32,
    /// Messages appended now.
    pub appended: u32,
    /// Bytes appended now.
    pub bytes: u64,
}

/// `1:5,7,9:12` for sorted, distinct numbers.
pub fn uid_set(uids: &[u32]) -> String {
    let mut out = String::new();
    let mut i = 0;
    while i < uids.len() {
        let start = uids[i];
        let mut end = start;
        while i + 1 < uids.len() && uids[i + 1] == end + 1 {
            i += 1;
            end = uids[i];
        }
        if !out.is_empty() {
            out.push(',');
        }
        if start == end {
            out.push_str(&start.to_string());
        } else {
            out.push_str(&format!("{start}:{end}"));
        }
        i += 1;
    }
    out
}

/// Fills the mailbox of `owner` (its address; the client is logged in as its user) to
/// `fill.target` initialization messages of `gen`'s run.
pub async fn fill_mailbox(
    imap: &mut ImapClient,
    gen: &Generator,
    owner: &str,
    fill: &Fill,
) -> Result<Filled> {
    imap.select(&fill.mailbox).await?;
    let prefix = format!("{}/{owner}/", gen.run());
    let mut uids = imap
        .search(&format!("HEADER X-Mbx-Id \"{prefix}\""), true)
        .await?;
    uids.sort_unstable();
    uids.dedup();
    // Which initialization messages are there (a bit per target message).
    let mut have = vec![false; fill.target as usize];
    let mut found = 0;
    for chunk in uids.chunks(500) {
        let fetched = imap
            .uid_fetch(&uid_set(chunk), "(UID BODY.PEEK[HEADER.FIELDS (X-Mbx-Id)])")
            .await?;
        for f in fetched {
            let header =
                String::from_utf8_lossy(f.body.as_deref().unwrap_or_default()).into_owned();
            let seq = header
                .lines()
                .find_map(|l| l.strip_prefix("X-Mbx-Id: "))
                .and_then(|v| v.trim().strip_prefix(&prefix))
                .and_then(|s| s.parse::<u64>().ok());
            if let Some(i) = seq.and_then(|s| s.checked_sub(INIT_SEQ_BASE)) {
                if let Some(slot) = have.get_mut(i as usize) {
                    if !*slot {
                        *slot = true;
                        found += 1;
                    }
                }
            }
        }
    }
    let missing: Vec<u64> = (0..u64::from(fill.target))
        .filter(|&i| !have[i as usize])
        .map(|i| INIT_SEQ_BASE + i)
        .collect();
    let mut out = Filled {
        found,
        appended: 0,
        bytes: 0,
    };
    let batch = fill.batch.max(1);
    for seqs in missing.chunks(batch) {
        let messages: Vec<Vec<u8>> = seqs
            .iter()
            .map(|&s| gen.message(owner, s, &[owner]))
            .collect();
        if batch > 1 && imap.can_multiappend() {
            let refs: Vec<&[u8]> = messages.iter().map(Vec::as_slice).collect();
            imap.multiappend(&fill.mailbox, &fill.flags, &refs).await?;
        } else {
            for m in &messages {
                imap.append(&fill.mailbox, &fill.flags, m).await?;
            }
        }
        out.appended += messages.len() as u32;
        out.bytes += messages.iter().map(|m| m.len() as u64).sum::<u64>();
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::uid_set;

    #[test]
    fn uid_sets_compress_runs() {
        assert_eq!(uid_set(&[1, 2, 3, 5, 7, 8]), "1:3,5,7:8");
        assert_eq!(uid_set(&[4]), "4");
        assert_eq!(uid_set(&[]), "");
    }
}
