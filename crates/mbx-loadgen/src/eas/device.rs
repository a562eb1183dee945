//! One simulated ActiveSync device of the user day (the `eas` client type): its server, its
//! folders, and its view of the Inbox (what it has seen, what it may act on). The day engine
//! (`day`) decides what a task does and checks every copy with the ledger; this module knows
//! the protocol sequences: log on (OPTIONS, Provision, FolderSync), the Inbox Sync in windows,
//! and the folders moves go to.
//!
//! A device never counts an item twice: the ids it has seen are kept for its life (SOGo's are
//! IMAP UIDs, never reused), so a device that lost its sync state and syncs the Inbox from the
//! start again ([`Device::reset`]) hands only the new items to the ledger.

use std::collections::HashSet;
use std::sync::Arc;
use std::time::Duration;

use rustls::ClientConfig;

use super::client::{folder_type, item_mime, Config, EasClient};
use crate::error::{Error, ErrorClass, Result};
use crate::metrics::Recorder;

/// Where the `eas` users' devices connect.
#[derive(Debug, Clone)]
pub struct Target {
    /// `http(s)://host[:port]/path` of the ActiveSync endpoint (Exchange:
    /// `https://host/Microsoft-Server-ActiveSync`).
    pub url: String,
    /// TLS for `https://` (the run's trust options).
    pub tls: Option<Arc<ClientConfig>>,
    /// One request, connect to the answer's last byte.
    pub timeout: Duration,
}

/// Items one Inbox Sync of the day takes at most (a phone's window; more come in further
/// Syncs of the same check).
pub const WINDOW: u32 = 25;

/// Syncs one check sends at most while the server says more are available (a check of a
/// mailbox with thousands of new items ends; the next check goes on from the key).
pub const MAX_ROUNDS: u32 = 40;

/// Items a device keeps as readable from before the day (as the IMAP users' `OLD_READABLE`).
pub const OLD_READABLE: usize = 1_000;

/// An item a check brought: its id and its MIME (None: the server sent no body).
#[derive(Debug)]
pub struct NewItem {
    /// The item's id in the Inbox.
    pub server_id: String,
    /// Its full MIME (MIMESupport 2), as the server sent it.
    pub mime: Option<Vec<u8>>,
}

/// A user's device.
pub struct Device {
    cfg: Config,
    rec: Recorder,
    client: EasClient,
    /// The Inbox's collection id, once FolderSync found it.
    inbox: Option<String>,
    /// Where moves go (a user mail folder, else Deleted Items).
    move_to: Option<String>,
    /// This run's messages the device has in its Inbox: the only ones it flags, moves,
    /// deletes.
    pub known: Vec<String>,
    /// Others it may read (there before the day, or not this run's), at most
    /// [`OLD_READABLE`].
    pub old: Vec<String>,
    seen: HashSet<String>,
}

impl std::fmt::Debug for Device {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Device")
            .field("cfg", &self.cfg)
            .field("inbox", &self.inbox)
            .field("known", &self.known.len())
            .finish_non_exhaustive()
    }
}

/// A device id of letters and digits (MS-ASHTTP: up to 32) from the user's index and the run.
pub fn device_id(run: &str, user: u32) -> String {
    let tag: String = run
        .chars()
        .filter(char::is_ascii_alphanumeric)
        .take(16)
        .collect();
    format!("mbx{tag}{user}")
        .chars()
        .take(32)
        .collect::<String>()
}

impl Device {
    /// User `login`'s device `device_id` on `target`, its commands recorded in `rec`.
    /// Errors: a URL the client refuses.
    pub fn new(
        target: &Target,
        login: &str,
        password: &str,
        device_id: &str,
        rec: Recorder,
    ) -> Result<Device> {
        let mut cfg = Config::new(&target.url, login, password, device_id);
        cfg.tls = target.tls.clone();
        cfg.timeout = target.timeout;
        cfg.device_type = "MbxStressPhone".to_owned();
        let client = EasClient::new(cfg.clone())?.with_recorder(rec.clone());
        Ok(Device {
            cfg,
            rec,
            client,
            inbox: None,
            move_to: None,
            known: Vec::new(),
            old: Vec::new(),
            seen: HashSet::new(),
        })
    }

    /// The protocol client.
    pub fn client(&mut self) -> &mut EasClient {
        &mut self.client
    }

    /// Whether the device has logged on (its folders are known).
    pub fn logged_on(&self) -> bool {
        self.inbox.is_some()
    }

    /// A new protocol client (sync keys, folder key and version forgotten) after a failure
    /// that may have left them out of step; what the device has seen stays.
    pub fn reset(&mut self) {
        if let Ok(c) = EasClient::new(self.cfg.clone()) {
            self.client = c.with_recorder(self.rec.clone());
        }
        self.inbox = None;
        self.move_to = None;
    }

    fn err(&self, command: &str, detail: impl Into<String>) -> Error {
        Error::new(
            ErrorClass::Protocol,
            Some(&self.cfg.user),
            &self.cfg.url,
            command,
            detail,
        )
    }

    /// Log on: OPTIONS (the version), Provision, FolderSync; the Inbox and the folder moves
    /// go to found. Errors: a failed command, no Inbox in the hierarchy.
    pub async fn logon(&mut self) -> Result<()> {
        self.client.options().await?;
        self.client.provision().await?;
        self.client.folder_sync().await?;
        let inbox = self
            .client
            .folder(folder_type::INBOX)
            .map(|f| f.server_id.clone())
            .ok_or_else(|| self.err("FolderSync", "no Inbox (folder type 2) in the hierarchy"))?;
        // A user mail folder (type 12) if the user has one, else Deleted Items (type 4).
        self.move_to = self
            .client
            .folder(12)
            .or_else(|| self.client.folder(4))
            .map(|f| f.server_id.clone());
        self.inbox = Some(inbox);
        Ok(())
    }

    /// The Inbox's id (logs on first when needed).
    pub async fn inbox(&mut self) -> Result<String> {
        if self.inbox.is_none() {
            self.logon().await?;
        }
        self.inbox
            .clone()
            .ok_or_else(|| self.err("FolderSync", "no Inbox"))
    }

    /// Where moves go. Errors: the hierarchy has neither a user mail folder nor Deleted Items.
    pub async fn move_target(&mut self) -> Result<String> {
        self.inbox().await?;
        self.move_to.clone().ok_or_else(|| {
            self.err(
                "FolderSync",
                "no folder to move to (neither a user mail folder nor Deleted Items)",
            )
        })
    }

    /// Before the day: the Inbox synced to its end without bodies; every item there is
    /// readable, never changed, never counted. Returns how many there were.
    pub async fn baseline(&mut self) -> Result<usize> {
        let inbox = self.inbox().await?;
        let mut n = 0;
        for _ in 0..10_000 {
            let b = self.client.sync(&inbox, 100, false).await?;
            for item in b.added {
                n += 1;
                if self.seen.insert(item.server_id.clone()) && self.old.len() < OLD_READABLE {
                    self.old.push(item.server_id);
                }
            }
            self.forget(&b.deleted);
            if !b.more_available {
                break;
            }
        }
        Ok(n)
    }

    /// A check: the Inbox's changes since the last Sync, [`WINDOW`] at a time, up to
    /// [`MAX_ROUNDS`] Syncs; the items never seen before, with their MIME.
    pub async fn check(&mut self) -> Result<Vec<NewItem>> {
        let inbox = self.inbox().await?;
        let mut out = Vec::new();
        for _ in 0..MAX_ROUNDS {
            let b = self.client.sync(&inbox, WINDOW, true).await?;
            let more = b.more_available;
            self.take(b, &mut out);
            if !more {
                break;
            }
        }
        Ok(out)
    }

    /// What a Sync brought (a check's, or the changes in a Delete's or Change's answer): new
    /// items into `out`, deleted ones forgotten.
    pub fn take(&mut self, b: super::client::SyncBatch, out: &mut Vec<NewItem>) {
        self.forget(&b.deleted);
        for item in b.added {
            if self.seen.insert(item.server_id.clone()) {
                out.push(NewItem {
                    mime: item_mime(&item).map(<[u8]>::to_vec),
                    server_id: item.server_id,
                });
            }
        }
    }

    fn forget(&mut self, ids: &[String]) {
        if ids.is_empty() {
            return;
        }
        self.known.retain(|k| !ids.contains(k));
        self.old.retain(|k| !ids.contains(k));
    }

    /// Keeps `id` as readable only (not this run's), within [`OLD_READABLE`].
    pub fn keep_old(&mut self, id: String) {
        if self.old.len() < OLD_READABLE {
            self.old.push(id);
        }
    }
}

/// `mime` with CRLF line ends: a server that passes MIME through XML (SOGo builds its answers
/// as XML for libwbxml, whose parser turns CRLF into LF) may hand back bare LFs; this run's
/// messages have CRLF only, so a bare LF is always such a rewrite. Unchanged when it has none.
pub fn crlf(mime: &[u8]) -> std::borrow::Cow<'_, [u8]> {
    let bare = mime
        .iter()
        .enumerate()
        .any(|(i, &b)| b == b'\n' && (i == 0 || mime[i - 1] != b'\r'));
    if !bare {
        return std::borrow::Cow::Borrowed(mime);
    }
    let mut out = Vec::with_capacity(mime.len() + mime.len() / 32);
    for (i, &b) in mime.iter().enumerate() {
        if b == b'\n' && (i == 0 || mime[i - 1] != b'\r') {
            out.push(b'\r');
        }
        out.push(b);
    }
    std::borrow::Cow::Owned(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bare_line_ends_become_crlf_and_crlf_stays() {
        assert_eq!(&*crlf(b"a\r\nb\r\n"), b"a\r\nb\r\n");
        assert_eq!(&*crlf(b"a\nb\r\nc\n"), b"a\r\nb\r\nc\r\n");
        assert_eq!(&*crlf(b"\n"), b"\r\n");
        let id = device_id("run-2026.12.02_x", 17);
        assert!(id.chars().all(|c| c.is_ascii_alphanumeric()) && id.len() <= 32);
        assert_ne!(device_id("r", 1), device_id("r", 2));
    }
}
