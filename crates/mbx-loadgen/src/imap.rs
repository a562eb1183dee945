//! IMAP4rev1 client (RFC 3501): STARTTLS or implicit TLS, LOGIN, SELECT, FETCH and UID FETCH,
//! UID STORE/COPY/MOVE (RFC 6851), EXPUNGE, SEARCH, APPEND with a synchronizing literal,
//! IDLE/DONE (RFC 2177), LOGOUT.
//!
//! Responses are read with bounded lines and literals (see [`crate::conn::Limits`]); each
//! command's latency runs from writing it to its tagged answer.

use std::time::Duration;

use crate::clock::{self, Instant};
use crate::conn::{Conn, Endpoint, Security};
use crate::error::{text_rejection, ErrorClass, Result};
use crate::metrics::{Protocol, Recorder};

/// How often an idling session re-issues IDLE (RFC 2177: servers may log a client off after
/// 30 minutes of inactivity, so clients re-issue IDLE at least every 29 minutes).
pub const IDLE_REISSUE: Duration = Duration::from_secs(29 * 60);

/// One untagged response (`* ...`): its text with each literal replaced by `{n}` and the
/// literals' bytes in order.
#[derive(Debug, Clone, Default)]
pub struct Untagged {
    /// The response text after `* `.
    pub text: Vec<u8>,
    /// Literal contents, in order of appearance.
    pub literals: Vec<Vec<u8>>,
}

/// The selected mailbox's state after SELECT.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Selected {
    /// Messages in the mailbox.
    pub exists: u32,
    /// The UIDVALIDITY.
    pub uid_validity: u32,
    /// The next UID the server will assign.
    pub uid_next: u32,
}

/// One message's FETCH data.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Fetched {
    /// Its sequence number.
    pub seq: u32,
    /// UID, when asked for (always with UID FETCH).
    pub uid: Option<u32>,
    /// Flags, when asked for.
    pub flags: Vec<String>,
    /// RFC822.SIZE, when asked for.
    pub size: Option<u64>,
    /// The first `BODY[...]`/`RFC822` section's bytes, when asked for.
    pub body: Option<Vec<u8>>,
}

/// The personal namespace a server announced (RFC 2342): the prefix of the user's folders
/// (`""` or `INBOX.`) and their hierarchy delimiter.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Namespace {
    /// Prefix every personal folder's name starts with.
    pub prefix: String,
    /// The hierarchy delimiter (None: a flat namespace).
    pub delimiter: Option<char>,
}

/// One folder of a LIST answer.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Listed {
    /// Its name, as the server spells it (modified UTF-7 kept as is: given back unchanged).
    pub name: String,
    /// The hierarchy delimiter.
    pub delimiter: Option<char>,
    /// Its attributes (`\HasNoChildren`, RFC 6154's `\Archive`, `\Trash`, `\Sent`,
    /// `\Drafts`, ...).
    pub attributes: Vec<String>,
}

impl Listed {
    /// Whether it carries attribute `a` (`\Archive`), case-insensitively.
    pub fn has(&self, a: &str) -> bool {
        self.attributes.iter().any(|x| x.eq_ignore_ascii_case(a))
    }
}

/// What IDLE reported.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum IdleEvent {
    /// Untagged responses (`5 EXISTS`, `3 EXPUNGE`, ...), at the instant the first arrived.
    Changed(Instant, Vec<String>),
    /// Nothing within the wait.
    Quiet,
}

/// An IMAP session.
pub struct ImapClient {
    conn: Conn,
    rec: Recorder,
    tag: u32,
    capabilities: Vec<String>,
    idling: Option<Vec<u8>>,
    /// Untagged news that came with a command's answer while no one was idling (the server
    /// announces what changed before IDLE's `+`): handed out by the next `idle_wait`.
    pending: Vec<String>,
    pending_at: Option<Instant>,
}

/// The most untagged responses one command's answer may hold: 100,000 (what the clients ask
/// for answers with far fewer: SEARCH in one line, a check's FETCH of the new messages only, a
/// baseline in windows), so a server sending untagged lines without end costs a session about
/// 10 MB, not the 1,000,000 lines of [`crate::conn::Limits::lines`].
pub const MAX_UNTAGGED: usize = 100_000;

fn quote(s: &str) -> Option<String> {
    if s.bytes().any(|b| b == b'\r' || b == b'\n' || b == 0) {
        return None;
    }
    Some(format!(
        "\"{}\"",
        s.replace('\\', "\\\\").replace('"', "\\\"")
    ))
}

impl ImapClient {
    /// Connects, reads the greeting and the capabilities, and with [`Security::StartTls`]
    /// upgrades (asking the capabilities again).
    pub async fn connect(ep: &Endpoint, rec: Recorder) -> Result<ImapClient> {
        let t0 = clock::now();
        let conn = match Conn::connect(ep, "imap", None).await {
            Ok(c) => c,
            Err(e) => {
                rec.record(Protocol::Imap, "connect", t0.elapsed(), Err(e.class));
                return Err(e);
            }
        };
        let mut c = ImapClient {
            conn,
            rec,
            tag: 0,
            capabilities: Vec::new(),
            idling: None,
            pending: Vec::new(),
            pending_at: None,
        };
        let limit = c.conn.timeouts.command;
        let greeting = match clock::timeout(limit, c.conn.read_line("connect")).await {
            Ok(r) => r,
            Err(_) => Err(c.conn.timed_out("connect", "no greeting")),
        };
        let greeting = match greeting {
            Ok(g) if g.starts_with(b"* OK") || g.starts_with(b"* PREAUTH") => Ok(g),
            Ok(g) => {
                let class = if g.starts_with(b"* BYE") {
                    ErrorClass::Rejected(crate::error::Rejection::Rate)
                } else {
                    ErrorClass::Protocol
                };
                Err(c
                    .conn
                    .error(class, "connect", String::from_utf8_lossy(&g).into_owned()))
            }
            Err(e) => Err(e),
        };
        c.rec.record(
            Protocol::Imap,
            "connect",
            t0.elapsed(),
            greeting.as_ref().map(|_| ()).map_err(|e| e.class),
        );
        greeting?;
        c.capability().await?;
        if ep.security == Security::StartTls {
            if !c.has_capability("STARTTLS") {
                let e = c.conn.error(
                    ErrorClass::Tls,
                    "STARTTLS",
                    "the server does not offer STARTTLS",
                );
                c.rec
                    .record(Protocol::Imap, "STARTTLS", Duration::ZERO, Err(e.class));
                return Err(e);
            }
            let t = clock::now();
            c.run("STARTTLS", b"STARTTLS", t, false).await?;
            if let Err(e) = c.conn.start_tls("STARTTLS").await {
                c.rec
                    .record(Protocol::Imap, "STARTTLS", t.elapsed(), Err(e.class));
                return Err(e);
            }
            c.capability().await?;
        }
        Ok(c)
    }

    /// The server's capabilities (upper case).
    pub fn capabilities(&self) -> &[String] {
        &self.capabilities
    }

    /// Whether the server has capability `name`.
    pub fn has_capability(&self, name: &str) -> bool {
        self.capabilities
            .iter()
            .any(|c| c.eq_ignore_ascii_case(name))
    }

    /// Gives back memory a long-lived idle session does not need: the read buffer back to its
    /// idle size (4 KiB) and the capability list to its length.
    pub fn shrink(&mut self) {
        self.conn.shrink();
        self.capabilities.shrink_to_fit();
        self.pending.shrink_to_fit();
    }

    /// Whether the session runs over TLS.
    pub fn is_tls(&self) -> bool {
        self.conn.is_tls()
    }

    async fn capability(&mut self) -> Result<()> {
        let untagged = self
            .run("CAPABILITY", b"CAPABILITY", clock::now(), true)
            .await?;
        self.capabilities.clear();
        for u in untagged {
            if let Some(rest) = u.text.strip_prefix(b"CAPABILITY ") {
                self.capabilities.extend(
                    String::from_utf8_lossy(rest)
                        .split_whitespace()
                        .map(str::to_ascii_uppercase),
                );
            }
        }
        Ok(())
    }

    /// LOGIN with quoted strings, or AUTHENTICATE PLAIN when the server disables LOGIN. `NO`
    /// is an `auth` error.
    pub async fn login(&mut self, user: &str, password: &str) -> Result<()> {
        self.conn.set_login(user, password);
        let (Some(u), Some(p)) = (quote(user), quote(password)) else {
            return Err(self.conn.error(
                ErrorClass::Auth,
                "LOGIN",
                "a user name or password with CR, LF or NUL",
            ));
        };
        // A server that refuses LOGIN (LOGINDISABLED, RFC 3501 6.2.3) is asked with
        // AUTHENTICATE PLAIN and the initial response on the same line (SASL-IR, RFC 4959).
        let (name, cmd) = if self.has_capability("LOGINDISABLED") {
            if !(self.has_capability("AUTH=PLAIN") && self.has_capability("SASL-IR")) {
                return Err(self.conn.error(
                    ErrorClass::Auth,
                    "LOGIN",
                    "the server disables LOGIN and offers no AUTHENTICATE PLAIN with SASL-IR (is the connection encrypted? use imaps:// or imap+starttls://)",
                ));
            }
            let token = {
                use base64::Engine as _;
                base64::engine::general_purpose::STANDARD.encode(format!("\0{user}\0{password}"))
            };
            ("AUTHENTICATE", format!("AUTHENTICATE PLAIN {token}"))
        } else {
            ("LOGIN", format!("LOGIN {u} {p}"))
        };
        match self.run(name, cmd.as_bytes(), clock::now(), true).await {
            Ok(_) => {
                // Servers may send new capabilities after login; ask once more.
                self.capability().await
            }
            Err(mut e) => {
                if matches!(e.class, ErrorClass::Rejected(_)) {
                    e.class = ErrorClass::Auth;
                }
                Err(e)
            }
        }
    }

    /// SELECT a mailbox (`INBOX`).
    pub async fn select(&mut self, mailbox: &str) -> Result<Selected> {
        self.open_mailbox("SELECT", mailbox).await
    }

    /// EXAMINE a mailbox: SELECT read-only (RFC 3501 6.3.2): nothing of it changes, `\Recent`
    /// included (a watcher's session takes nothing from the user's).
    pub async fn examine(&mut self, mailbox: &str) -> Result<Selected> {
        self.open_mailbox("EXAMINE", mailbox).await
    }

    async fn open_mailbox(&mut self, verb: &'static str, mailbox: &str) -> Result<Selected> {
        let Some(m) = quote(mailbox) else {
            return Err(self.conn.error(
                ErrorClass::Protocol,
                verb,
                "a mailbox name with CR or LF",
            ));
        };
        let untagged = self
            .run(verb, format!("{verb} {m}").as_bytes(), clock::now(), true)
            .await?;
        let mut s = Selected::default();
        for u in &untagged {
            let t = String::from_utf8_lossy(&u.text);
            let mut w = t.split_whitespace();
            match (w.next(), w.next()) {
                (Some(n), Some(k)) if k.eq_ignore_ascii_case("EXISTS") => {
                    s.exists = n.parse().unwrap_or(0)
                }
                (Some("OK"), Some(code)) if code.eq_ignore_ascii_case("[UIDVALIDITY") => {
                    s.uid_validity = w
                        .next()
                        .and_then(|v| v.trim_end_matches(']').parse().ok())
                        .unwrap_or(0)
                }
                (Some("OK"), Some(code)) if code.eq_ignore_ascii_case("[UIDNEXT") => {
                    s.uid_next = w
                        .next()
                        .and_then(|v| v.trim_end_matches(']').parse().ok())
                        .unwrap_or(0)
                }
                _ => {}
            }
        }
        Ok(s)
    }

    /// `CREATE mailbox`; a mailbox that exists already is not an error (`[ALREADYEXISTS]`).
    pub async fn create(&mut self, mailbox: &str) -> Result<()> {
        let Some(m) = quote(mailbox) else {
            return Err(self.conn.error(
                ErrorClass::Protocol,
                "CREATE",
                "a mailbox name with CR or LF",
            ));
        };
        match self
            .run(
                "CREATE",
                format!("CREATE {m}").as_bytes(),
                clock::now(),
                true,
            )
            .await
        {
            Err(e) if e.detail.to_ascii_uppercase().contains("[ALREADYEXISTS]") => Ok(()),
            r => r.map(|_| ()),
        }
    }

    /// `NAMESPACE` (RFC 2342): the first personal namespace, or None when the server does not
    /// announce the capability or names no personal namespace.
    pub async fn namespace(&mut self) -> Result<Option<Namespace>> {
        if !self.has_capability("NAMESPACE") {
            return Ok(None);
        }
        let untagged = self
            .run("NAMESPACE", b"NAMESPACE", clock::now(), true)
            .await?;
        Ok(untagged.iter().find_map(parse_namespace))
    }

    /// The folders whose special use (RFC 6154) the server says: with `SPECIAL-USE` and
    /// `LIST-EXTENDED`, `LIST (SPECIAL-USE) "" "*"` (only those: the answer stays small
    /// whatever the folder tree); with `SPECIAL-USE` alone, `LIST "" "*" RETURN
    /// (SPECIAL-USE)`; else a plain `LIST "" "prefix%"` (one level under the personal prefix),
    /// whose attributes some servers fill anyway. A mailbox name of `prefix` that cannot be
    /// quoted lists nothing.
    pub async fn list_special_use(&mut self, prefix: &str) -> Result<Vec<Listed>> {
        let command = if self.has_capability("SPECIAL-USE") {
            if self.has_capability("LIST-EXTENDED") {
                "LIST (SPECIAL-USE) \"\" \"*\"".to_owned()
            } else {
                "LIST \"\" \"*\" RETURN (SPECIAL-USE)".to_owned()
            }
        } else {
            let Some(pattern) = quote(&format!("{prefix}%")) else {
                return Ok(Vec::new());
            };
            format!("LIST \"\" {pattern}")
        };
        let untagged = self
            .run("LIST", command.as_bytes(), clock::now(), true)
            .await?;
        Ok(untagged.iter().filter_map(parse_list).collect())
    }

    /// `NOOP`: lets the server report what changed (untagged EXISTS/EXPUNGE are returned).
    pub async fn noop(&mut self) -> Result<Vec<String>> {
        let untagged = self.run("NOOP", b"NOOP", clock::now(), true).await?;
        Ok(untagged
            .into_iter()
            .map(|u| String::from_utf8_lossy(&u.text).into_owned())
            .collect())
    }

    /// `FETCH set items` (sequence numbers), e.g. `fetch("1:*", "(UID FLAGS BODY.PEEK[])")`.
    pub async fn fetch(&mut self, set: &str, items: &str) -> Result<Vec<Fetched>> {
        let untagged = self
            .run(
                "FETCH",
                format!("FETCH {set} {items}").as_bytes(),
                clock::now(),
                true,
            )
            .await?;
        Ok(parse_fetches(&untagged))
    }

    /// `UID FETCH set items`.
    pub async fn uid_fetch(&mut self, set: &str, items: &str) -> Result<Vec<Fetched>> {
        let untagged = self
            .run(
                "UID FETCH",
                format!("UID FETCH {set} {items}").as_bytes(),
                clock::now(),
                true,
            )
            .await?;
        Ok(parse_fetches(&untagged))
    }

    /// `UID STORE set action (flags)`, e.g. `uid_store("4", "+FLAGS.SILENT", "\\Seen")`.
    pub async fn uid_store(&mut self, set: &str, action: &str, flags: &str) -> Result<()> {
        self.run(
            "UID STORE",
            format!("UID STORE {set} {action} ({flags})").as_bytes(),
            clock::now(),
            true,
        )
        .await
        .map(|_| ())
    }

    /// `UID COPY set mailbox`.
    pub async fn uid_copy(&mut self, set: &str, mailbox: &str) -> Result<()> {
        let m = quote(mailbox).unwrap_or_default();
        self.run(
            "UID COPY",
            format!("UID COPY {set} {m}").as_bytes(),
            clock::now(),
            true,
        )
        .await
        .map(|_| ())
    }

    /// `UID MOVE set mailbox` (RFC 6851; the server must list MOVE).
    pub async fn uid_move(&mut self, set: &str, mailbox: &str) -> Result<()> {
        let m = quote(mailbox).unwrap_or_default();
        self.run(
            "UID MOVE",
            format!("UID MOVE {set} {m}").as_bytes(),
            clock::now(),
            true,
        )
        .await
        .map(|_| ())
    }

    /// `EXPUNGE`: the sequence numbers removed.
    pub async fn expunge(&mut self) -> Result<Vec<u32>> {
        let untagged = self.run("EXPUNGE", b"EXPUNGE", clock::now(), true).await?;
        Ok(numbers_before(&untagged, "EXPUNGE"))
    }

    /// Messages whose UIDs one SEARCH answer can list within the response line bound
    /// ([`crate::conn::Limits::line`]: a UID is at most 10 digits and a space): 5,952 at the
    /// default 64 KiB.
    pub fn search_window(&self) -> u32 {
        u32::try_from((self.conn.limits.line.saturating_sub(64) / 11).max(1)).unwrap_or(u32::MAX)
    }

    /// `UID SEARCH lo:hi criteria` over the messages `first..=last` (sequence numbers) in
    /// windows of [`ImapClient::search_window`], so no answer outgrows the line bound however
    /// large the mailbox: the UIDs found, in order. Empty `criteria` lists every UID.
    pub async fn uid_search_windows(
        &mut self,
        first: u32,
        last: u32,
        criteria: &str,
    ) -> Result<Vec<u32>> {
        let window = self.search_window();
        let mut out = Vec::new();
        let mut lo = first.max(1);
        while lo <= last {
            let hi = last.min(lo.saturating_add(window - 1));
            let c = if criteria.is_empty() {
                format!("{lo}:{hi}")
            } else {
                format!("{lo}:{hi} {criteria}")
            };
            out.extend(self.search(&c, true).await?);
            match hi.checked_add(1) {
                Some(n) => lo = n,
                None => break,
            }
        }
        Ok(out)
    }

    /// `UID EXPUNGE set` (UIDPLUS, RFC 4315; see [`ImapClient::has_capability`]): removes
    /// only the messages of `set` marked \Deleted, not every \Deleted message of the mailbox
    /// as EXPUNGE does. The sequence numbers removed.
    pub async fn uid_expunge(&mut self, set: &str) -> Result<Vec<u32>> {
        let untagged = self
            .run(
                "UID EXPUNGE",
                format!("UID EXPUNGE {set}").as_bytes(),
                clock::now(),
                true,
            )
            .await?;
        Ok(numbers_before(&untagged, "EXPUNGE"))
    }

    /// `SEARCH criteria` (or `UID SEARCH` when `uid`): the numbers found.
    pub async fn search(&mut self, criteria: &str, uid: bool) -> Result<Vec<u32>> {
        let (name, cmd) = if uid {
            ("UID SEARCH", format!("UID SEARCH {criteria}"))
        } else {
            ("SEARCH", format!("SEARCH {criteria}"))
        };
        let untagged = self.run(name, cmd.as_bytes(), clock::now(), true).await?;
        let mut out = Vec::new();
        for u in &untagged {
            if let Some(rest) = u.text.strip_prefix(b"SEARCH") {
                out.extend(
                    String::from_utf8_lossy(rest)
                        .split_whitespace()
                        .filter_map(|n| n.parse::<u32>().ok()),
                );
            }
        }
        Ok(out)
    }

    /// `APPEND mailbox (flags) {n}` with a synchronizing literal: the server's `+` comes before
    /// the message is sent. Returns the APPENDUID's UID when the server gives one (RFC 4315).
    pub async fn append(
        &mut self,
        mailbox: &str,
        flags: &str,
        message: &[u8],
    ) -> Result<Option<u32>> {
        let t = clock::now();
        let m = quote(mailbox).unwrap_or_default();
        let tag = self.next_tag();
        let head = format!(
            "{} APPEND {m} ({flags}) {{{}}}\r\n",
            String::from_utf8_lossy(&tag),
            message.len()
        );
        let limit = self.conn.timeouts.command;
        let r = clock::timeout(limit, async {
            self.conn.write_all(head.as_bytes(), "APPEND").await?;
            loop {
                let line = self.conn.read_line("APPEND").await?;
                if line.starts_with(b"+") {
                    break;
                }
                if line.starts_with(&tag) {
                    return Err(tagged_error(&self.conn, "APPEND", &line[tag.len()..]));
                }
                // Untagged data before the continuation: ignored.
            }
            self.conn.write_all(message, "APPEND").await?;
            self.conn.write_all(b"\r\n", "APPEND").await?;
            read_tagged(&mut self.conn, "APPEND", &tag).await
        })
        .await;
        let r = match r {
            Ok(r) => r,
            Err(_) => Err(self
                .conn
                .timed_out("APPEND", format!("no answer within {limit:?}"))),
        };
        self.rec.record(
            Protocol::Imap,
            "APPEND",
            t.elapsed(),
            r.as_ref().map(|_| ()).map_err(|e| e.class),
        );
        let (_, ok) = r?;
        // "OK [APPENDUID <validity> <uid>] ..."
        let text = String::from_utf8_lossy(&ok).to_ascii_uppercase();
        Ok(text
            .split("[APPENDUID ")
            .nth(1)
            .and_then(|rest| rest.split([' ', ']']).nth(1))
            .and_then(|u| u.parse().ok()))
    }

    /// Whether [`ImapClient::multiappend`] can be used: MULTIAPPEND (RFC 3502) and LITERAL+
    /// (RFC 7888) both advertised.
    pub fn can_multiappend(&self) -> bool {
        self.has_capability("MULTIAPPEND") && self.has_capability("LITERAL+")
    }

    /// Appends `messages` in one MULTIAPPEND command with non-synchronizing literals: one round
    /// trip for the batch, recorded as `MULTIAPPEND`. The server stores all or none.
    pub async fn multiappend(
        &mut self,
        mailbox: &str,
        flags: &str,
        messages: &[&[u8]],
    ) -> Result<()> {
        if !self.can_multiappend() {
            return Err(self.conn.error(
                ErrorClass::Protocol,
                "MULTIAPPEND",
                "the server does not advertise MULTIAPPEND and LITERAL+",
            ));
        }
        if messages.is_empty() {
            return Ok(());
        }
        let t = clock::now();
        let m = quote(mailbox).unwrap_or_default();
        let tag = self.next_tag();
        let limit = self.conn.timeouts.command;
        let r = clock::timeout(limit, async {
            let mut head = format!("{} APPEND {m}", String::from_utf8_lossy(&tag));
            for msg in messages {
                head.push_str(&format!(" ({flags}) {{{}+}}\r\n", msg.len()));
                self.conn.write_all(head.as_bytes(), "MULTIAPPEND").await?;
                self.conn.write_all(msg, "MULTIAPPEND").await?;
                head.clear();
            }
            self.conn.write_all(b"\r\n", "MULTIAPPEND").await?;
            read_tagged(&mut self.conn, "MULTIAPPEND", &tag).await
        })
        .await;
        let r = match r {
            Ok(r) => r,
            Err(_) => Err(self
                .conn
                .timed_out("MULTIAPPEND", format!("no answer within {limit:?}"))),
        };
        self.rec.record(
            Protocol::Imap,
            "MULTIAPPEND",
            t.elapsed(),
            r.as_ref().map(|_| ()).map_err(|e| e.class),
        );
        r.map(|_| ())
    }

    /// Starts IDLE (the server's `+` read). Then [`ImapClient::idle_wait`], then
    /// [`ImapClient::done`].
    pub async fn idle(&mut self) -> Result<()> {
        let t = clock::now();
        let tag = self.next_tag();
        let line = [tag.as_slice(), b" IDLE\r\n"].concat();
        let limit = self.conn.timeouts.command;
        let mut news = Vec::new();
        let mut news_at = None;
        let r = clock::timeout(limit, async {
            self.conn.write_all(&line, "IDLE").await?;
            loop {
                let l = self.conn.read_line("IDLE").await?;
                if l.starts_with(b"+") {
                    return Ok(());
                }
                if l.starts_with(&tag) {
                    return Err(tagged_error(&self.conn, "IDLE", &l[tag.len()..]));
                }
                // News before the go-ahead (messages that arrived since the last command) is
                // news all the same: kept for idle_wait.
                if let Some(n) = l.strip_prefix(b"* ") {
                    news_at.get_or_insert_with(clock::now);
                    if news.len() < 10_000 {
                        news.push(String::from_utf8_lossy(n).into_owned());
                    }
                }
            }
        })
        .await;
        if !news.is_empty() {
            self.pending.extend(news);
            self.pending_at = self.pending_at.or(news_at);
        }
        let r = match r {
            Ok(r) => r,
            Err(_) => Err(self
                .conn
                .timed_out("IDLE", format!("no answer within {limit:?}"))),
        };
        self.rec.record(
            Protocol::Imap,
            "IDLE",
            t.elapsed(),
            r.as_ref().map(|_| ()).map_err(|e| e.class),
        );
        r?;
        self.idling = Some(tag);
        Ok(())
    }

    /// While idling: waits up to `wait` for the server's untagged news (not a timeout error:
    /// quiet is an answer). The news are returned when the first line arrives, with any lines
    /// already buffered behind it. News that came earlier (in IDLE's go-ahead, DONE's or
    /// another command's answer: EXISTS, EXPUNGE, RECENT) are returned at once, with the
    /// instant they were read.
    pub async fn idle_wait(&mut self, wait: Duration) -> Result<IdleEvent> {
        if self.idling.is_none() {
            return Err(self
                .conn
                .error(ErrorClass::Protocol, "IDLE", "idle_wait without IDLE"));
        }
        if let Some(at) = self.pending_at.take() {
            return Ok(IdleEvent::Changed(at, std::mem::take(&mut self.pending)));
        }
        match clock::timeout(wait, self.conn.read_line("IDLE")).await {
            Err(_) => Ok(IdleEvent::Quiet),
            Ok(Err(e)) => Err(e),
            Ok(Ok(line)) => {
                // Kept in `pending` as they are read, so a wait cancelled here (a task came)
                // loses nothing: the next wait hands them out with this instant.
                let at = clock::now();
                self.pending_at = Some(at);
                self.pending.push(
                    String::from_utf8_lossy(line.strip_prefix(b"* ").unwrap_or(&line)).into_owned(),
                );
                // Lines already sent together with the first (e.g. EXISTS then RECENT).
                while let Ok(Ok(l)) =
                    clock::timeout(Duration::from_millis(1), self.conn.read_line("IDLE")).await
                {
                    if self.pending.len() >= 10_000 {
                        break;
                    }
                    self.pending.push(
                        String::from_utf8_lossy(l.strip_prefix(b"* ").unwrap_or(&l)).into_owned(),
                    );
                }
                self.pending_at = None;
                Ok(IdleEvent::Changed(at, std::mem::take(&mut self.pending)))
            }
        }
    }

    /// Forgets the news kept for the next [`ImapClient::idle_wait`] (EXISTS, EXPUNGE, RECENT
    /// seen in commands' answers) and returns them: a caller that has just listed the mailbox
    /// knows what they announced.
    pub fn take_news(&mut self) -> Vec<String> {
        self.pending_at = None;
        std::mem::take(&mut self.pending)
    }

    /// Whether IDLE is running (between [`ImapClient::idle`] and [`ImapClient::done`]).
    pub fn is_idling(&self) -> bool {
        self.idling.is_some()
    }

    /// Ends IDLE (`DONE`) and reads its tagged answer; untagged news on the way are returned.
    pub async fn done(&mut self) -> Result<Vec<String>> {
        let Some(tag) = self.idling.take() else {
            return Err(self
                .conn
                .error(ErrorClass::Protocol, "DONE", "DONE without IDLE"));
        };
        let t = clock::now();
        let limit = self.conn.timeouts.command;
        let r = clock::timeout(limit, async {
            self.conn.write_all(b"DONE\r\n", "DONE").await?;
            read_tagged(&mut self.conn, "DONE", &tag).await
        })
        .await;
        let r = match r {
            Ok(r) => r,
            Err(_) => Err(self
                .conn
                .timed_out("DONE", format!("no answer within {limit:?}"))),
        };
        self.rec.record(
            Protocol::Imap,
            "DONE",
            t.elapsed(),
            r.as_ref().map(|_| ()).map_err(|e| e.class),
        );
        let (untagged, _) = r?;
        self.note_news(untagged.iter().map(|u| u.text.as_slice()));
        Ok(untagged
            .into_iter()
            .map(|u| String::from_utf8_lossy(&u.text).into_owned())
            .collect())
    }

    /// LOGOUT and close.
    pub async fn logout(mut self) -> Result<()> {
        let r = self.run("LOGOUT", b"LOGOUT", clock::now(), true).await;
        self.conn.shutdown().await;
        r.map(|_| ())
    }

    fn next_tag(&mut self) -> Vec<u8> {
        self.tag += 1;
        format!("A{}", self.tag).into_bytes()
    }

    /// Writes `tag command`, reads to the tagged answer within the command timeout, records
    /// the latency (when `record`) and maps NO/BAD to errors.
    async fn run(
        &mut self,
        name: &'static str,
        command: &[u8],
        t: Instant,
        record: bool,
    ) -> Result<Vec<Untagged>> {
        if self.idling.is_some() {
            return Err(self.conn.error(
                ErrorClass::Protocol,
                name,
                "a command while idling (call done first)",
            ));
        }
        let tag = self.next_tag();
        let line = [tag.as_slice(), b" ", command, b"\r\n"].concat();
        let limit = self.conn.timeouts.command;
        let r = clock::timeout(limit, async {
            self.conn.write_all(&line, name).await?;
            read_tagged(&mut self.conn, name, &tag).await
        })
        .await;
        let r = match r {
            Ok(r) => r.map(|(u, _)| u),
            Err(_) => Err(self
                .conn
                .timed_out(name, format!("no answer within {limit:?}"))),
        };
        if record || r.is_err() {
            self.rec.record(
                Protocol::Imap,
                name,
                t.elapsed(),
                r.as_ref().map(|_| ()).map_err(|e| e.class),
            );
        }
        if let Ok(untagged) = &r {
            // SELECT's EXISTS describes the mailbox opened, not a change, and news of the
            // mailbox before it is moot.
            if name == "SELECT" || name == "EXAMINE" {
                self.pending.clear();
                self.pending_at = None;
            } else {
                self.note_news(untagged.iter().map(|u| u.text.as_slice()));
            }
        }
        r
    }

    /// Keeps EXISTS/EXPUNGE/RECENT reported in a command's answer as news for the next
    /// [`ImapClient::idle_wait`]: the server reports each change once, so a change announced
    /// during a FETCH would otherwise never wake an IDLE.
    fn note_news<'a>(&mut self, texts: impl Iterator<Item = &'a [u8]>) {
        for t in texts {
            let text = String::from_utf8_lossy(t);
            let mut w = text.split_whitespace();
            let is_news = w.next().is_some_and(|n| n.parse::<u32>().is_ok())
                && w.next().is_some_and(|k| {
                    ["EXISTS", "EXPUNGE", "RECENT"]
                        .iter()
                        .any(|x| k.eq_ignore_ascii_case(x))
                });
            if is_news && self.pending.len() < 10_000 {
                self.pending_at.get_or_insert_with(clock::now);
                self.pending.push(text.into_owned());
            }
        }
    }
}

fn tagged_error(conn: &Conn, name: &str, rest: &[u8]) -> crate::error::Error {
    let text = String::from_utf8_lossy(rest).trim().to_owned();
    let class = if text.starts_with("NO") {
        text_rejection(&text)
    } else {
        ErrorClass::Protocol
    };
    conn.error(class, name, text)
}

/// Reads untagged responses (with their literals) up to the line tagged `tag`; returns them
/// and the tagged line's text after the tag. `NO`/`BAD` are errors; `* BYE` then a closed
/// connection is a `disconnect`.
async fn read_tagged(conn: &mut Conn, name: &str, tag: &[u8]) -> Result<(Vec<Untagged>, Vec<u8>)> {
    let mut untagged: Vec<Untagged> = Vec::new();
    let mut total = 0usize;
    loop {
        let line = match conn.read_line(name).await {
            Ok(l) => l,
            Err(mut e) => {
                if e.class == ErrorClass::Disconnect {
                    if let Some(bye) = untagged.iter().find(|u| u.text.starts_with(b"BYE")) {
                        // Through the connection's error: the server's words are redacted and
                        // escaped like any other.
                        e = conn.error(
                            e.class,
                            name,
                            format!(
                                "{} (the server said: {})",
                                e.detail,
                                String::from_utf8_lossy(&bye.text)
                            ),
                        );
                    }
                }
                return Err(e);
            }
        };
        if let Some(rest) = line.strip_prefix(tag).filter(|r| r.first() == Some(&b' ')) {
            let rest = &rest[1..];
            if rest.starts_with(b"OK") {
                return Ok((untagged, rest.to_vec()));
            }
            return Err(tagged_error(conn, name, rest));
        }
        if let Some(text) = line.strip_prefix(b"* ") {
            // The answer's lines count with its literals: a server sending untagged lines
            // without end is cut at the answer's bound, not after a million lines of 64 KiB.
            total = total.saturating_add(line.len());
            if total > conn.limits.message.saturating_mul(16) {
                let limit = conn.limits.message.saturating_mul(16);
                return Err(conn.error(
                    ErrorClass::Protocol,
                    name,
                    format!("an answer over {limit} bytes"),
                ));
            }
            let mut u = Untagged {
                text: text.to_vec(),
                literals: Vec::new(),
            };
            // A line ending in {n} (or {n+}) continues after n bytes of literal.
            while let Some(n) = literal_len(&u.text) {
                if n > conn.limits.message || total + n > conn.limits.message.saturating_mul(16) {
                    let limit = conn.limits.message;
                    return Err(conn.error(
                        ErrorClass::Protocol,
                        name,
                        format!("a literal of {n} bytes (limit {limit})"),
                    ));
                }
                total += n;
                let lit = conn.read_exact(n, name).await?;
                u.literals.push(lit);
                let more = conn.read_line(name).await?;
                u.text.extend_from_slice(&more);
            }
            untagged.push(u);
            if untagged.len() > conn.limits.lines.min(MAX_UNTAGGED) {
                return Err(conn.error(ErrorClass::Protocol, name, "too many untagged responses"));
            }
            continue;
        }
        if line.starts_with(b"+") {
            return Err(conn.error(
                ErrorClass::Protocol,
                name,
                "an unexpected continuation request",
            ));
        }
        return Err(conn.error(
            ErrorClass::Protocol,
            name,
            format!("not an IMAP response: {:?}", String::from_utf8_lossy(&line)),
        ));
    }
}

/// The length of the literal that `text` ends with (`... {123}` or `{123+}`).
fn literal_len(text: &[u8]) -> Option<usize> {
    let body = text.strip_suffix(b"}")?;
    let open = body.iter().rposition(|&b| b == b'{')?;
    let digits = &body[open + 1..];
    let digits = digits.strip_suffix(b"+").unwrap_or(digits);
    if digits.is_empty() || digits.len() > 12 || !digits.iter().all(u8::is_ascii_digit) {
        return None;
    }
    std::str::from_utf8(digits).ok()?.parse().ok()
}

fn numbers_before(untagged: &[Untagged], keyword: &str) -> Vec<u32> {
    untagged
        .iter()
        .filter_map(|u| {
            let t = String::from_utf8_lossy(&u.text);
            let mut w = t.split_whitespace();
            let n = w.next()?.parse().ok()?;
            w.next()
                .filter(|k| k.eq_ignore_ascii_case(keyword))
                .map(|_| n)
        })
        .collect()
}

/// A token of FETCH data.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Tok {
    Atom(String),
    List(Vec<Tok>),
    Str(Vec<u8>),
    Nil,
}

/// Tokenizes `text` from `*pos`: atoms (with `[...]` sections kept whole), quoted strings,
/// literals (`{n}` followed by the literal's index in `lits`) and parenthesized lists.
fn tokens(
    text: &[u8],
    pos: &mut usize,
    lits: &[Vec<u8>],
    next_lit: &mut usize,
    depth: usize,
) -> Vec<Tok> {
    let mut out = Vec::new();
    while *pos < text.len() {
        match text[*pos] {
            b' ' => *pos += 1,
            b'(' => {
                *pos += 1;
                if depth > 32 {
                    return out;
                }
                out.push(Tok::List(tokens(text, pos, lits, next_lit, depth + 1)));
            }
            b')' => {
                *pos += 1;
                return out;
            }
            b'"' => {
                *pos += 1;
                let mut s = Vec::new();
                while *pos < text.len() && text[*pos] != b'"' {
                    if text[*pos] == b'\\' && *pos + 1 < text.len() {
                        *pos += 1;
                    }
                    s.push(text[*pos]);
                    *pos += 1;
                }
                *pos += 1;
                out.push(Tok::Str(s));
            }
            b'{' => {
                while *pos < text.len() && text[*pos] != b'}' {
                    *pos += 1;
                }
                *pos += 1;
                out.push(Tok::Str(lits.get(*next_lit).cloned().unwrap_or_default()));
                *next_lit += 1;
            }
            _ => {
                let start = *pos;
                let mut bracket = 0usize;
                while *pos < text.len() {
                    let b = text[*pos];
                    if b == b'[' {
                        bracket += 1;
                    } else if b == b']' {
                        bracket = bracket.saturating_sub(1);
                    } else if bracket == 0 && (b == b' ' || b == b'(' || b == b')') {
                        break;
                    }
                    *pos += 1;
                }
                let atom = String::from_utf8_lossy(&text[start..*pos]).into_owned();
                out.push(if atom.eq_ignore_ascii_case("NIL") {
                    Tok::Nil
                } else {
                    Tok::Atom(atom)
                });
            }
        }
    }
    out
}

/// A token's text (an atom or a string), None for NIL or a list.
fn tok_text(t: &Tok) -> Option<String> {
    match t {
        Tok::Atom(a) => Some(a.clone()),
        Tok::Str(b) => Some(String::from_utf8_lossy(b).into_owned()),
        Tok::Nil | Tok::List(_) => None,
    }
}

/// A one-character delimiter (`"."`, `"/"`), None for NIL or anything else.
fn tok_delimiter(t: &Tok) -> Option<char> {
    let d = tok_text(t)?;
    let mut c = d.chars();
    let first = c.next()?;
    c.next().is_none().then_some(first)
}

/// `NAMESPACE (("INBOX." ".")) NIL NIL`: the first personal namespace.
fn parse_namespace(u: &Untagged) -> Option<Namespace> {
    let (mut pos, mut lit) = (0, 0);
    let toks = tokens(&u.text, &mut pos, &u.literals, &mut lit, 0);
    match (toks.first(), toks.get(1)) {
        (Some(Tok::Atom(k)), Some(Tok::List(personal))) if k.eq_ignore_ascii_case("NAMESPACE") => {
            let Some(Tok::List(first)) = personal.first() else {
                return None;
            };
            Some(Namespace {
                prefix: tok_text(first.first()?)?,
                delimiter: first.get(1).and_then(tok_delimiter),
            })
        }
        _ => None,
    }
}

/// `LIST (\HasNoChildren \Sent) "." INBOX.Sent` (the name an atom, a quoted string or a
/// literal).
fn parse_list(u: &Untagged) -> Option<Listed> {
    let (mut pos, mut lit) = (0, 0);
    let toks = tokens(&u.text, &mut pos, &u.literals, &mut lit, 0);
    match (toks.first(), toks.get(1), toks.get(2), toks.get(3)) {
        (Some(Tok::Atom(k)), Some(Tok::List(attrs)), Some(d), Some(name))
            if k.eq_ignore_ascii_case("LIST") =>
        {
            Some(Listed {
                name: tok_text(name)?,
                delimiter: tok_delimiter(d),
                attributes: attrs.iter().filter_map(tok_text).collect(),
            })
        }
        _ => None,
    }
}

fn parse_fetches(untagged: &[Untagged]) -> Vec<Fetched> {
    let mut out = Vec::new();
    for u in untagged {
        let mut pos = 0;
        let mut lit = 0;
        let toks = tokens(&u.text, &mut pos, &u.literals, &mut lit, 0);
        let (Some(Tok::Atom(n)), Some(Tok::Atom(k)), Some(Tok::List(items))) =
            (toks.first(), toks.get(1), toks.get(2))
        else {
            continue;
        };
        if !k.eq_ignore_ascii_case("FETCH") {
            continue;
        }
        let Ok(seq) = n.parse() else { continue };
        let mut f = Fetched {
            seq,
            ..Fetched::default()
        };
        for pair in items.chunks(2) {
            let (Some(Tok::Atom(key)), Some(val)) = (pair.first(), pair.get(1)) else {
                continue;
            };
            let key = key.to_ascii_uppercase();
            match (key.as_str(), val) {
                ("UID", Tok::Atom(v)) => f.uid = v.parse().ok(),
                ("RFC822.SIZE", Tok::Atom(v)) => f.size = v.parse().ok(),
                ("FLAGS", Tok::List(l)) => {
                    f.flags = l
                        .iter()
                        .filter_map(|t| {
                            if let Tok::Atom(a) = t {
                                Some(a.clone())
                            } else {
                                None
                            }
                        })
                        .collect()
                }
                (k, Tok::Str(b))
                    if f.body.is_none()
                        && (k.starts_with("BODY[")
                            || k == "RFC822"
                            || k.starts_with("BINARY[")) =>
                {
                    f.body = Some(b.clone())
                }
                _ => {}
            }
        }
        out.push(f);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn untagged(text: &str, literals: &[&str]) -> Untagged {
        Untagged {
            text: text.as_bytes().to_vec(),
            literals: literals.iter().map(|l| l.as_bytes().to_vec()).collect(),
        }
    }

    #[test]
    fn namespace_and_special_use_list_answers_parse() {
        assert_eq!(
            parse_namespace(&untagged(r#"NAMESPACE (("INBOX." ".")) NIL NIL"#, &[])),
            Some(Namespace {
                prefix: "INBOX.".into(),
                delimiter: Some('.')
            })
        );
        assert_eq!(
            parse_namespace(&untagged(
                r##"NAMESPACE (("" "/")("#mh/" "/")) (("~" "/")) NIL"##,
                &[]
            )),
            Some(Namespace {
                prefix: String::new(),
                delimiter: Some('/')
            })
        );
        assert_eq!(
            parse_namespace(&untagged("NAMESPACE NIL NIL NIL", &[])),
            None
        );
        let l = parse_list(&untagged(
            r#"LIST (\HasNoChildren \Sent) "." INBOX.Sent"#,
            &[],
        ))
        .expect("parsed");
        assert_eq!((l.name.as_str(), l.delimiter), ("INBOX.Sent", Some('.')));
        assert!(l.has("\\sent") && !l.has("\\Archive"));
        let l = parse_list(&untagged(r#"LIST (\Archive) "/" "[Gmail]/All Mail""#, &[]))
            .expect("parsed");
        assert_eq!(l.name, "[Gmail]/All Mail");
        assert!(l.has("\\Archive"));
        let l = parse_list(&untagged("LIST (\\Trash) NIL {5}", &["Trash"])).expect("parsed");
        assert_eq!((l.name.as_str(), l.delimiter), ("Trash", None));
        assert_eq!(parse_list(&untagged("LSUB () \".\" x", &[])), None);
    }

    #[test]
    fn literal_lengths_are_read_from_line_ends() {
        assert_eq!(literal_len(b"1 FETCH (BODY[] {123}"), Some(123));
        assert_eq!(literal_len(b"1 FETCH (BODY[] {12+}"), Some(12));
        assert_eq!(literal_len(b"1 FETCH (FLAGS (\\Seen))"), None);
        assert_eq!(literal_len(b"x {}"), None);
        assert_eq!(literal_len(b"x {99999999999999999}"), None);
    }

    #[test]
    fn fetch_responses_parse_with_sections_and_literals() {
        let u = Untagged {
            text: b"3 FETCH (UID 17 FLAGS (\\Seen $Forwarded) RFC822.SIZE 42 BODY[HEADER.FIELDS (X-MBX-ID)] {5} BODY[] {4})".to_vec(),
            literals: vec![b"hdr\r\n".to_vec(), b"body".to_vec()],
        };
        let f = parse_fetches(&[u]);
        assert_eq!(
            f,
            vec![Fetched {
                seq: 3,
                uid: Some(17),
                flags: vec!["\\Seen".into(), "$Forwarded".into()],
                size: Some(42),
                body: Some(b"hdr\r\n".to_vec()),
            }]
        );
    }

    #[test]
    fn quoting_escapes_and_refuses_line_breaks() {
        assert_eq!(quote("a\"b\\c").as_deref(), Some("\"a\\\"b\\\\c\""));
        assert_eq!(quote("a\r\nb"), None);
    }
}
