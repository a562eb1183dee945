//! A small in-process model mail server for simulated days: SMTP submission that delivers into
//! an in-memory store, and the IMAP4rev1 (with IDLE, UIDPLUS, MOVE, NAMESPACE, SPECIAL-USE) and
//! POP3 commands the day's clients use, over in-memory pipes (`tokio::io::duplex`) that a
//! [`Connector`] hands the clients instead of TCP sockets.
//!
//! It is a server, not a mock of the client: messages submitted are stored as sent (one copy
//! per recipient, a `Delivered-To` trace header above it as a real MTA adds), fetched,
//! flagged, moved, expunged and retrieved as a server does, so a day's proof (every copy found
//! once, intact) is the day's own. It answers at once: on a paused clock every command takes
//! zero time, so latencies are the client's and the schedule's, not a server's.
//!
//! [`Model::with_capacity`] makes a server that is slow past a number of mailboxes: every
//! command's reply then waits a fixed time (a server past its knee), so a search for the
//! largest user count it carries (`loadgen find-max`) has a known answer.
//!
//! Simplifications, none of which the clients rely on: no TLS, one folder namespace (`""`, `/`),
//! every session sees the mailbox as it is now (a change by another session is told as the new
//! `EXISTS` count at the next command or during IDLE, not as per-session EXPUNGE replays).

#![allow(dead_code)]

use std::collections::BTreeMap;
use std::io;
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Duration;

use base64::Engine as _;
use mbx_loadgen::conn::{Connect, Connecting, Connector, Stream};
use mbx_loadgen::users::User;
use tokio::io::{AsyncBufReadExt, AsyncReadExt, AsyncWriteExt, BufReader, DuplexStream};
use tokio::sync::Notify;

/// The ports the connector routes: submission, IMAP, POP3.
pub const SMTP_PORT: u16 = 587;
pub const IMAP_PORT: u16 = 143;
pub const POP3_PORT: u16 = 110;

/// Longest command line the model reads (the clients' are far shorter).
const MAX_LINE: usize = 64 * 1024;

#[derive(Debug, Clone)]
struct Msg {
    uid: u32,
    /// The trace header this copy got at delivery.
    trace: Arc<str>,
    body: Arc<[u8]>,
    seen: bool,
    flagged: bool,
    deleted: bool,
}

impl Msg {
    fn bytes(&self) -> Vec<u8> {
        let mut v = Vec::with_capacity(self.trace.len() + self.body.len());
        v.extend_from_slice(self.trace.as_bytes());
        v.extend_from_slice(&self.body);
        v
    }

    fn flags(&self) -> String {
        let mut f = Vec::new();
        if self.seen {
            f.push("\\Seen");
        }
        if self.flagged {
            f.push("\\Flagged");
        }
        if self.deleted {
            f.push("\\Deleted");
        }
        f.join(" ")
    }
}

#[derive(Debug, Default)]
struct Folder {
    uid_next: u32,
    msgs: Vec<Msg>,
}

impl Folder {
    fn new() -> Folder {
        Folder {
            uid_next: 1,
            msgs: Vec::new(),
        }
    }

    fn add(&mut self, trace: Arc<str>, body: Arc<[u8]>) -> u32 {
        let uid = self.uid_next;
        self.uid_next += 1;
        self.msgs.push(Msg {
            uid,
            trace,
            body,
            seen: false,
            flagged: false,
            deleted: false,
        });
        uid
    }

    fn max_uid(&self) -> u32 {
        self.msgs.last().map_or(0, |m| m.uid)
    }
}

#[derive(Debug)]
struct Account {
    password: String,
    address: String,
    folders: BTreeMap<String, Folder>,
}

#[derive(Debug, Default)]
struct Store {
    by_login: BTreeMap<String, usize>,
    by_address: BTreeMap<String, usize>,
    accounts: Vec<Account>,
    /// Messages accepted by submission, and copies delivered.
    accepted: u64,
    delivered: u64,
}

/// The model server: its store and one notifier per account (IDLE's news).
pub struct Model {
    store: Mutex<Store>,
    news: Vec<Notify>,
    /// How long every command waits before its reply is read (zero: at once).
    delay: Duration,
}

/// What the model's store holds at the end.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Totals {
    /// Messages accepted by submission.
    pub accepted: u64,
    /// Copies delivered (one per recipient).
    pub delivered: u64,
    /// Messages in all folders now.
    pub stored: u64,
}

impl Model {
    /// A server with one account per user, each with an empty INBOX.
    pub fn new(users: &[User]) -> Arc<Model> {
        let mut s = Store::default();
        for (i, u) in users.iter().enumerate() {
            s.by_login.insert(u.login.clone(), i);
            s.by_address.insert(u.address.to_ascii_lowercase(), i);
            let mut folders = BTreeMap::new();
            folders.insert("INBOX".to_owned(), Folder::new());
            folders.insert("Sent".to_owned(), Folder::new());
            s.accounts.push(Account {
                password: u.password.clone(),
                address: u.address.clone(),
                folders,
            });
        }
        Arc::new(Model {
            store: Mutex::new(s),
            news: users.iter().map(|_| Notify::new()).collect(),
            delay: Duration::ZERO,
        })
    }

    /// A server of `users` that answers at once while it serves at most `capacity` mailboxes
    /// and takes `slow` over every command past that.
    pub fn with_capacity(users: &[User], capacity: usize, slow: Duration) -> Arc<Model> {
        let m = Model::new(users);
        let delay = if users.len() > capacity {
            slow
        } else {
            Duration::ZERO
        };
        match Arc::try_unwrap(m) {
            Ok(mut m) => {
                m.delay = delay;
                Arc::new(m)
            }
            Err(m) => m,
        }
    }

    fn lock(&self) -> MutexGuard<'_, Store> {
        match self.store.lock() {
            Ok(g) => g,
            Err(p) => p.into_inner(),
        }
    }

    /// A connector whose streams reach this server (by port: [`SMTP_PORT`], [`IMAP_PORT`],
    /// [`POP3_PORT`]).
    pub fn connector(self: &Arc<Model>) -> Connector {
        Connector(Arc::new(ModelConnector(self.clone())))
    }

    /// What was accepted, delivered and is stored now.
    pub fn totals(&self) -> Totals {
        let s = self.lock();
        Totals {
            accepted: s.accepted,
            delivered: s.delivered,
            stored: s
                .accounts
                .iter()
                .flat_map(|a| a.folders.values())
                .map(|f| f.msgs.len() as u64)
                .sum(),
        }
    }

    /// Puts `body` in account `i`'s INBOX (mail there before the day).
    pub fn preload(&self, i: usize, body: &[u8]) {
        let mut s = self.lock();
        if let Some(f) = s
            .accounts
            .get_mut(i)
            .and_then(|a| a.folders.get_mut("INBOX"))
        {
            f.add(Arc::from(""), Arc::from(body));
        }
    }

    fn deliver(&self, from: &str, to: &[usize], body: Arc<[u8]>) {
        let mut s = self.lock();
        s.accepted += 1;
        for &r in to {
            let Some(a) = s.accounts.get_mut(r) else {
                continue;
            };
            let trace: Arc<str> = Arc::from(format!(
                "Return-Path: <{from}>\r\nDelivered-To: {}\r\n",
                a.address
            ));
            if let Some(f) = a.folders.get_mut("INBOX") {
                f.add(trace, body.clone());
            }
            s.delivered += 1;
        }
        drop(s);
        for &r in to {
            if let Some(n) = self.news.get(r) {
                n.notify_waiters();
            }
        }
    }
}

struct ModelConnector(Arc<Model>);

impl Connect for ModelConnector {
    fn connect<'a>(&'a self, _host: &'a str, port: u16) -> Connecting<'a> {
        let model = self.0.clone();
        Box::pin(async move {
            let (client, server) = tokio::io::duplex(256 * 1024);
            match port {
                SMTP_PORT => drop(tokio::spawn(smtp(model, server))),
                IMAP_PORT => drop(tokio::spawn(imap(model, server))),
                POP3_PORT => drop(tokio::spawn(pop3(model, server))),
                _ => {
                    return Err(io::Error::new(
                        io::ErrorKind::ConnectionRefused,
                        "the model listens on 587, 143 and 110",
                    ))
                }
            }
            Ok(Box::new(client) as Box<dyn Stream>)
        })
    }
}

/// One connection's reader and writer.
struct Wire {
    r: BufReader<tokio::io::ReadHalf<DuplexStream>>,
    w: tokio::io::WriteHalf<DuplexStream>,
    /// Waited after each line read, before it is acted on (the model's service time).
    delay: Duration,
}

impl Wire {
    fn new(s: DuplexStream, delay: Duration) -> Wire {
        let (r, w) = tokio::io::split(s);
        Wire {
            r: BufReader::new(r),
            w,
            delay,
        }
    }

    /// A command line without CRLF, after the model's service time; None at the end of the
    /// stream or past [`MAX_LINE`].
    async fn line(&mut self) -> Option<Vec<u8>> {
        let v = self.raw_line().await?;
        if !self.delay.is_zero() {
            tokio::time::sleep(self.delay).await;
        }
        Some(v)
    }

    /// A line without CRLF, at once (a message's line); None at the end of the stream or past
    /// [`MAX_LINE`].
    async fn raw_line(&mut self) -> Option<Vec<u8>> {
        let mut v = Vec::new();
        let n = (&mut self.r)
            .take(MAX_LINE as u64)
            .read_until(b'\n', &mut v)
            .await
            .ok()?;
        if n == 0 || v.last() != Some(&b'\n') {
            return None;
        }
        v.pop();
        if v.last() == Some(&b'\r') {
            v.pop();
        }
        Some(v)
    }

    async fn send(&mut self, data: &[u8]) -> Option<()> {
        self.w.write_all(data).await.ok()?;
        self.w.flush().await.ok()
    }
}

fn text(l: &[u8]) -> String {
    String::from_utf8_lossy(l).into_owned()
}

// ---------------------------------------------------------------------------------------------
// SMTP submission (RFC 5321, 4954)

async fn smtp(model: Arc<Model>, s: DuplexStream) {
    let mut w = Wire::new(s, model.delay);
    if w.send(b"220 model ESMTP\r\n").await.is_none() {
        return;
    }
    let mut authed = false;
    let mut from: Option<String> = None;
    let mut to: Vec<usize> = Vec::new();
    while let Some(line) = w.line().await {
        let l = text(&line);
        let upper = l.to_ascii_uppercase();
        let reply: Vec<u8> = if upper.starts_with("EHLO") {
            b"250-model\r\n250-AUTH PLAIN LOGIN\r\n250-8BITMIME\r\n250 SIZE 104857600\r\n".to_vec()
        } else if let Some(token) = upper.strip_prefix("AUTH PLAIN ").map(|_| &l[11..]) {
            let ok = base64::engine::general_purpose::STANDARD
                .decode(token.trim())
                .ok()
                .and_then(|d| {
                    let mut parts = d.split(|&b| b == 0).skip(1);
                    let user = text(parts.next()?);
                    let pass = text(parts.next()?);
                    let s = model.lock();
                    let i = *s.by_login.get(&user)?;
                    (s.accounts[i].password == pass).then_some(())
                })
                .is_some();
            authed = ok;
            if ok {
                b"235 2.7.0 authenticated\r\n".to_vec()
            } else {
                b"535 5.7.8 authentication failed\r\n".to_vec()
            }
        } else if upper.starts_with("MAIL FROM:") {
            if !authed {
                b"530 5.7.0 authentication required\r\n".to_vec()
            } else {
                from = Some(angle(&l[10..]));
                to.clear();
                b"250 2.1.0 ok\r\n".to_vec()
            }
        } else if upper.starts_with("RCPT TO:") {
            let addr = angle(&l[8..]).to_ascii_lowercase();
            match (from.is_some(), model.lock().by_address.get(&addr).copied()) {
                (false, _) => b"503 5.5.1 MAIL first\r\n".to_vec(),
                (true, Some(i)) => {
                    to.push(i);
                    b"250 2.1.5 ok\r\n".to_vec()
                }
                (true, None) => b"550 5.1.1 no such user\r\n".to_vec(),
            }
        } else if upper == "DATA" {
            if from.is_none() || to.is_empty() {
                b"503 5.5.1 no valid recipients\r\n".to_vec()
            } else {
                if w.send(b"354 go ahead\r\n").await.is_none() {
                    return;
                }
                let Some(body) = data(&mut w).await else {
                    return;
                };
                model.deliver(from.as_deref().unwrap_or(""), &to, Arc::from(body));
                from = None;
                to.clear();
                b"250 2.0.0 queued\r\n".to_vec()
            }
        } else if upper == "RSET" {
            from = None;
            to.clear();
            b"250 2.0.0 ok\r\n".to_vec()
        } else if upper == "QUIT" {
            let _ = w.send(b"221 2.0.0 bye\r\n").await;
            return;
        } else if upper == "NOOP" {
            b"250 2.0.0 ok\r\n".to_vec()
        } else {
            b"502 5.5.2 not implemented\r\n".to_vec()
        };
        if w.send(&reply).await.is_none() {
            return;
        }
    }
}

/// `<addr>` (with any parameters after it) to `addr`.
fn angle(s: &str) -> String {
    let s = s.trim();
    match (s.find('<'), s.find('>')) {
        (Some(a), Some(b)) if a < b => s[a + 1..b].to_owned(),
        _ => s.split_whitespace().next().unwrap_or("").to_owned(),
    }
}

/// The message of DATA, dot-unstuffed, every line ended by CRLF; None if the stream ends first.
async fn data(w: &mut Wire) -> Option<Vec<u8>> {
    let mut out = Vec::new();
    loop {
        let line = w.raw_line().await?;
        if line == b"." {
            return Some(out);
        }
        let l = line.strip_prefix(b".").unwrap_or(&line);
        out.extend_from_slice(l);
        out.extend_from_slice(b"\r\n");
    }
}

// ---------------------------------------------------------------------------------------------
// POP3 (RFC 1939)

async fn pop3(model: Arc<Model>, s: DuplexStream) {
    let mut w = Wire::new(s, model.delay);
    if w.send(b"+OK model POP3 ready\r\n").await.is_none() {
        return;
    }
    let mut user: Option<String> = None;
    let mut me: Option<usize> = None;
    // The maildrop as it was at login (UIDs), and the ones marked for deletion.
    let mut drop_list: Vec<u32> = Vec::new();
    let mut dele: Vec<bool> = Vec::new();
    while let Some(line) = w.line().await {
        let l = text(&line);
        let mut words = l.split_whitespace();
        let verb = words.next().unwrap_or("").to_ascii_uppercase();
        let arg = words.next().unwrap_or("").to_owned();
        let reply: Vec<u8> = match (verb.as_str(), me) {
            ("USER", None) => {
                user = Some(arg);
                b"+OK\r\n".to_vec()
            }
            ("PASS", None) => {
                let s = model.lock();
                let found = user
                    .as_ref()
                    .and_then(|u| s.by_login.get(u).copied())
                    .filter(|&i| s.accounts[i].password == arg);
                match found {
                    Some(i) => {
                        me = Some(i);
                        drop_list = s.accounts[i].folders["INBOX"]
                            .msgs
                            .iter()
                            .map(|m| m.uid)
                            .collect();
                        dele = vec![false; drop_list.len()];
                        b"+OK logged in\r\n".to_vec()
                    }
                    None => b"-ERR [AUTH] invalid login\r\n".to_vec(),
                }
            }
            ("STAT", Some(i)) => {
                let s = model.lock();
                let inbox = &s.accounts[i].folders["INBOX"];
                let (n, octets) = drop_list
                    .iter()
                    .zip(&dele)
                    .filter(|(_, d)| !**d)
                    .filter_map(|(u, _)| inbox.msgs.iter().find(|m| m.uid == *u))
                    .fold((0u64, 0u64), |(n, o), m| {
                        (n + 1, o + (m.trace.len() + m.body.len()) as u64)
                    });
                format!("+OK {n} {octets}\r\n").into_bytes()
            }
            ("UIDL", Some(_)) => {
                let mut r = b"+OK\r\n".to_vec();
                for (k, (u, d)) in drop_list.iter().zip(&dele).enumerate() {
                    if !d {
                        r.extend_from_slice(format!("{} {u}\r\n", k + 1).as_bytes());
                    }
                }
                r.extend_from_slice(b".\r\n");
                r
            }
            ("RETR", Some(i)) => {
                let msg = arg
                    .parse::<usize>()
                    .ok()
                    .filter(|&n| n >= 1 && n <= drop_list.len() && !dele[n - 1])
                    .and_then(|n| {
                        let s = model.lock();
                        s.accounts[i].folders["INBOX"]
                            .msgs
                            .iter()
                            .find(|m| m.uid == drop_list[n - 1])
                            .map(Msg::bytes)
                    });
                match msg {
                    Some(m) => {
                        let mut r = Vec::with_capacity(m.len() + 64);
                        r.extend_from_slice(b"+OK\r\n");
                        for line in m.split_inclusive(|&b| b == b'\n') {
                            if line.first() == Some(&b'.') {
                                r.push(b'.');
                            }
                            r.extend_from_slice(line);
                        }
                        if !r.ends_with(b"\r\n") {
                            r.extend_from_slice(b"\r\n");
                        }
                        r.extend_from_slice(b".\r\n");
                        r
                    }
                    None => b"-ERR no such message\r\n".to_vec(),
                }
            }
            ("DELE", Some(_)) => match arg.parse::<usize>() {
                Ok(n) if n >= 1 && n <= dele.len() && !dele[n - 1] => {
                    dele[n - 1] = true;
                    b"+OK\r\n".to_vec()
                }
                _ => b"-ERR no such message\r\n".to_vec(),
            },
            ("NOOP", Some(_)) => b"+OK\r\n".to_vec(),
            ("QUIT", _) => {
                if let Some(i) = me {
                    let gone: Vec<u32> = drop_list
                        .iter()
                        .zip(&dele)
                        .filter(|(_, d)| **d)
                        .map(|(u, _)| *u)
                        .collect();
                    let mut s = model.lock();
                    if let Some(f) = s.accounts[i].folders.get_mut("INBOX") {
                        f.msgs.retain(|m| gone.binary_search(&m.uid).is_err());
                    }
                }
                let _ = w.send(b"+OK bye\r\n").await;
                return;
            }
            _ => b"-ERR unknown command or state\r\n".to_vec(),
        };
        if w.send(&reply).await.is_none() {
            return;
        }
    }
}

// ---------------------------------------------------------------------------------------------
// IMAP4rev1 (RFC 3501) with IDLE (2177), UIDPLUS (4315), MOVE (6851), NAMESPACE (2342),
// SPECIAL-USE (6154) and LIST-EXTENDED (5258)

const CAPS: &str =
    "IMAP4rev1 IDLE UIDPLUS MOVE NAMESPACE SPECIAL-USE LIST-EXTENDED LITERAL+ AUTH=PLAIN";

struct Session {
    model: Arc<Model>,
    me: Option<usize>,
    selected: Option<String>,
    read_only: bool,
    /// The message count last told to the client.
    told: usize,
}

/// Words of an IMAP command line: atoms, quoted strings (unquoted) and parenthesized lists
/// (kept whole, parentheses included).
fn words(s: &str) -> Vec<String> {
    let mut out = Vec::new();
    let b = s.as_bytes();
    let mut i = 0;
    while i < b.len() {
        match b[i] {
            b' ' => i += 1,
            b'"' => {
                let mut w = String::new();
                i += 1;
                while i < b.len() && b[i] != b'"' {
                    if b[i] == b'\\' && i + 1 < b.len() {
                        i += 1;
                    }
                    w.push(b[i] as char);
                    i += 1;
                }
                i += 1;
                out.push(w);
            }
            b'(' => {
                let start = i;
                let mut depth = 0;
                while i < b.len() {
                    match b[i] {
                        b'(' => depth += 1,
                        b')' => {
                            depth -= 1;
                            if depth == 0 {
                                i += 1;
                                break;
                            }
                        }
                        _ => {}
                    }
                    i += 1;
                }
                out.push(s[start..i].to_owned());
            }
            _ => {
                let start = i;
                let mut depth = 0;
                while i < b.len() && (b[i] != b' ' || depth > 0) {
                    match b[i] {
                        b'[' => depth += 1,
                        b']' => depth -= 1,
                        _ => {}
                    }
                    i += 1;
                }
                out.push(s[start..i].to_owned());
            }
        }
    }
    out
}

/// Whether `n` is in the set (`1:5,7,9:*`), with `star` the value of `*`.
fn in_set(set: &str, n: u32, star: u32) -> bool {
    set.split(',').any(|part| {
        let v = |x: &str| {
            if x == "*" {
                Some(star)
            } else {
                x.parse::<u32>().ok()
            }
        };
        match part.split_once(':') {
            Some((a, b)) => match (v(a), v(b)) {
                (Some(a), Some(b)) => n >= a.min(b) && n <= a.max(b),
                _ => false,
            },
            None => v(part) == Some(n),
        }
    })
}

/// The header block of a message (up to the first empty line).
fn header_of(m: &[u8]) -> &[u8] {
    match m.windows(4).position(|w| w == b"\r\n\r\n") {
        Some(i) => &m[..i + 2],
        None => m,
    }
}

impl Session {
    fn folder<'a>(&self, s: &'a mut Store) -> Option<&'a mut Folder> {
        let me = self.me?;
        let name = self.selected.as_ref()?;
        s.accounts.get_mut(me)?.folders.get_mut(name)
    }

    /// `* n EXISTS` when the selected folder's count changed since last told.
    fn news(&mut self, out: &mut Vec<u8>) {
        let mut s = self.model.lock();
        let Some(n) = self.folder(&mut s).map(|f| f.msgs.len()) else {
            return;
        };
        if n != self.told {
            self.told = n;
            out.extend_from_slice(format!("* {n} EXISTS\r\n").as_bytes());
        }
    }

    /// One command (after its tag); the untagged lines and the tagged status go to `out`.
    /// Returns false when the connection is to close (LOGOUT).
    fn command(&mut self, tag: &str, line: &str, out: &mut Vec<u8>) -> bool {
        let w = words(line);
        let verb = w
            .first()
            .map(|v| v.to_ascii_uppercase())
            .unwrap_or_default();
        let ok = |out: &mut Vec<u8>, t: &str| {
            out.extend_from_slice(format!("{tag} OK {t}\r\n").as_bytes());
        };
        let no = |out: &mut Vec<u8>, t: &str| {
            out.extend_from_slice(format!("{tag} NO {t}\r\n").as_bytes());
        };
        match (verb.as_str(), self.me) {
            ("CAPABILITY", _) => {
                out.extend_from_slice(format!("* CAPABILITY {CAPS}\r\n").as_bytes());
                ok(out, "done");
            }
            ("NOOP", _) => {
                self.news(out);
                ok(out, "done");
            }
            ("LOGOUT", _) => {
                out.extend_from_slice(b"* BYE logging out\r\n");
                ok(out, "done");
                return false;
            }
            ("LOGIN", None) => {
                let (u, p) = (
                    w.get(1).cloned().unwrap_or_default(),
                    w.get(2).cloned().unwrap_or_default(),
                );
                let s = self.model.lock();
                match s.by_login.get(&u).copied() {
                    Some(i) if s.accounts[i].password == p => {
                        drop(s);
                        self.me = Some(i);
                        ok(out, "logged in");
                    }
                    _ => no(out, "[AUTHENTICATIONFAILED] invalid credentials"),
                }
            }
            ("SELECT" | "EXAMINE", Some(me)) => {
                let name = w.get(1).cloned().unwrap_or_default();
                let name = if name.eq_ignore_ascii_case("INBOX") {
                    "INBOX".to_owned()
                } else {
                    name
                };
                let s = self.model.lock();
                match s.accounts[me].folders.get(&name) {
                    Some(f) => {
                        let (n, next) = (f.msgs.len(), f.uid_next);
                        drop(s);
                        out.extend_from_slice(
                            format!(
                                "* FLAGS (\\Seen \\Flagged \\Deleted)\r\n* {n} EXISTS\r\n* 0 RECENT\r\n* OK [UIDVALIDITY 1] ok\r\n* OK [UIDNEXT {next}] ok\r\n"
                            )
                            .as_bytes(),
                        );
                        self.selected = Some(name);
                        self.read_only = verb == "EXAMINE";
                        self.told = n;
                        ok(
                            out,
                            if self.read_only {
                                "[READ-ONLY] done"
                            } else {
                                "[READ-WRITE] done"
                            },
                        );
                    }
                    None => no(out, "[NONEXISTENT] no such mailbox"),
                }
            }
            ("NAMESPACE", Some(_)) => {
                out.extend_from_slice(b"* NAMESPACE ((\"\" \"/\")) NIL NIL\r\n");
                ok(out, "done");
            }
            ("LIST", Some(me)) => {
                let s = self.model.lock();
                for name in s.accounts[me].folders.keys() {
                    let attr = match name.as_str() {
                        "Sent" => " \\Sent",
                        _ => "",
                    };
                    out.extend_from_slice(
                        format!("* LIST (\\HasNoChildren{attr}) \"/\" \"{name}\"\r\n").as_bytes(),
                    );
                }
                ok(out, "done");
            }
            ("CREATE", Some(me)) => {
                let name = w.get(1).cloned().unwrap_or_default();
                let mut s = self.model.lock();
                let folders = &mut s.accounts[me].folders;
                match folders.entry(name) {
                    std::collections::btree_map::Entry::Occupied(_) => {
                        no(out, "[ALREADYEXISTS] mailbox exists")
                    }
                    std::collections::btree_map::Entry::Vacant(v) => {
                        v.insert(Folder::new());
                        ok(out, "created");
                    }
                }
            }
            ("UID", Some(_)) if self.selected.is_some() => {
                let sub = w.get(1).map(|v| v.to_ascii_uppercase()).unwrap_or_default();
                let rest = &w[2.min(w.len())..];
                match sub.as_str() {
                    "FETCH" => self.fetch(rest, true, out),
                    "SEARCH" => self.search(rest, true, out),
                    "STORE" => self.store(rest, out),
                    "MOVE" => {
                        if let Err(t) = self.move_to(rest, out) {
                            no(out, t);
                            return true;
                        }
                    }
                    "EXPUNGE" => self.expunge(rest.first().map(String::as_str), out),
                    _ => {
                        out.extend_from_slice(
                            format!("{tag} BAD unknown UID command\r\n").as_bytes(),
                        );
                        return true;
                    }
                }
                self.news(out);
                ok(out, "done");
            }
            ("FETCH", Some(_)) if self.selected.is_some() => {
                self.fetch(&w[1..], false, out);
                ok(out, "done");
            }
            ("SEARCH", Some(_)) if self.selected.is_some() => {
                self.search(&w[1..], false, out);
                ok(out, "done");
            }
            ("EXPUNGE", Some(_)) if self.selected.is_some() => {
                self.expunge(None, out);
                self.news(out);
                ok(out, "done");
            }
            _ => {
                out.extend_from_slice(format!("{tag} BAD unknown command or state\r\n").as_bytes())
            }
        }
        true
    }

    /// FETCH/UID FETCH `set items`.
    fn fetch(&mut self, args: &[String], uid: bool, out: &mut Vec<u8>) {
        let (set, items) = (
            args.first().map(String::as_str).unwrap_or(""),
            args.get(1)
                .map(|s| s.to_ascii_uppercase())
                .unwrap_or_default(),
        );
        let peek_header = items.contains("HEADER.FIELDS");
        let body = items.contains("BODY[]") || items.contains("BODY.PEEK[]");
        let sets_seen = items.contains("BODY[]") && !items.contains("PEEK");
        let mut s = self.model.lock();
        let Some(f) = self.folder(&mut s) else {
            return;
        };
        let star = if uid {
            f.max_uid()
        } else {
            f.msgs.len() as u32
        };
        let ro = self.read_only;
        for (k, m) in f.msgs.iter_mut().enumerate() {
            let seq = k as u32 + 1;
            if !in_set(set, if uid { m.uid } else { seq }, star) {
                continue;
            }
            let mut head = format!("* {seq} FETCH (UID {}", m.uid);
            if sets_seen && !ro && !m.seen {
                m.seen = true;
                head.push_str(&format!(" FLAGS ({})", m.flags()));
            }
            if peek_header {
                let h = header_of(&m.body);
                let field: Vec<u8> = h
                    .split_inclusive(|&b| b == b'\n')
                    .filter(|l| l.len() >= 9 && l[..9].eq_ignore_ascii_case(b"x-mbx-id:"))
                    .flatten()
                    .copied()
                    .chain(b"\r\n".iter().copied())
                    .collect();
                out.extend_from_slice(
                    format!(
                        "{head} BODY[HEADER.FIELDS (X-MBX-ID)] {{{}}}\r\n",
                        field.len()
                    )
                    .as_bytes(),
                );
                out.extend_from_slice(&field);
                out.extend_from_slice(b")\r\n");
            } else if body {
                let bytes = m.bytes();
                out.extend_from_slice(format!("{head} BODY[] {{{}}}\r\n", bytes.len()).as_bytes());
                out.extend_from_slice(&bytes);
                out.extend_from_slice(b")\r\n");
            } else {
                out.extend_from_slice(head.as_bytes());
                out.extend_from_slice(b")\r\n");
            }
        }
    }

    /// SEARCH/UID SEARCH: an optional set first, then `HEADER name "value"` or nothing (ALL).
    fn search(&mut self, args: &[String], uid: bool, out: &mut Vec<u8>) {
        let mut s = self.model.lock();
        let Some(f) = self.folder(&mut s) else {
            return;
        };
        let mut i = 0;
        let set = args
            .first()
            .filter(|a| a.starts_with(|c: char| c.is_ascii_digit() || c == '*'))
            .cloned();
        if set.is_some() {
            i = 1;
        }
        let header = match args.get(i).map(|a| a.to_ascii_uppercase()) {
            Some(h) if h == "HEADER" => Some((
                args.get(i + 1).cloned().unwrap_or_default(),
                args.get(i + 2).cloned().unwrap_or_default(),
            )),
            _ => None,
        };
        let n = f.msgs.len() as u32;
        let mut found = Vec::new();
        for (k, m) in f.msgs.iter().enumerate() {
            let seq = k as u32 + 1;
            if set.as_deref().is_some_and(|st| !in_set(st, seq, n)) {
                continue;
            }
            if let Some((name, value)) = &header {
                let h = header_of(&m.body);
                let hit = h.split(|&b| b == b'\n').any(|l| {
                    let l = text(l);
                    l.len() > name.len()
                        && l[..name.len()].eq_ignore_ascii_case(name)
                        && l[name.len()..].starts_with(':')
                        && l[name.len() + 1..].contains(value.as_str())
                });
                if !hit {
                    continue;
                }
            }
            found.push(if uid { m.uid } else { seq });
        }
        out.extend_from_slice(b"* SEARCH");
        for u in found {
            out.extend_from_slice(format!(" {u}").as_bytes());
        }
        out.extend_from_slice(b"\r\n");
    }

    /// UID STORE `set +FLAGS.SILENT (flags)`.
    fn store(&mut self, args: &[String], out: &mut Vec<u8>) {
        let set = args.first().cloned().unwrap_or_default();
        let action = args
            .get(1)
            .map(|a| a.to_ascii_uppercase())
            .unwrap_or_default();
        let flags = args
            .get(2)
            .map(|a| a.to_ascii_uppercase())
            .unwrap_or_default();
        let add = !action.starts_with('-');
        let silent = action.ends_with(".SILENT");
        let mut s = self.model.lock();
        let Some(f) = self.folder(&mut s) else {
            return;
        };
        let star = f.max_uid();
        for (k, m) in f.msgs.iter_mut().enumerate() {
            if !in_set(&set, m.uid, star) {
                continue;
            }
            if flags.contains("\\SEEN") {
                m.seen = add;
            }
            if flags.contains("\\FLAGGED") {
                m.flagged = add;
            }
            if flags.contains("\\DELETED") {
                m.deleted = add;
            }
            if !silent {
                out.extend_from_slice(
                    format!(
                        "* {} FETCH (UID {} FLAGS ({}))\r\n",
                        k + 1,
                        m.uid,
                        m.flags()
                    )
                    .as_bytes(),
                );
            }
        }
    }

    /// UID MOVE `set mailbox`: the messages appended there, expunged here.
    fn move_to(&mut self, args: &[String], out: &mut Vec<u8>) -> Result<(), &'static str> {
        let set = args.first().cloned().unwrap_or_default();
        let target = args.get(1).cloned().unwrap_or_default();
        let (Some(me), Some(from)) = (self.me, self.selected.clone()) else {
            return Err("no mailbox selected");
        };
        let mut s = self.model.lock();
        let folders = &mut s.accounts[me].folders;
        if !folders.contains_key(&target) {
            return Err("[TRYCREATE] no such mailbox");
        }
        let Some(src) = folders.get_mut(&from) else {
            return Err("no mailbox selected");
        };
        let star = src.max_uid();
        let mut moved = Vec::new();
        let mut k = 0;
        let told = self.told;
        while k < src.msgs.len() {
            if in_set(&set, src.msgs[k].uid, star) {
                moved.push(src.msgs.remove(k));
                out.extend_from_slice(format!("* {} EXPUNGE\r\n", k + 1).as_bytes());
            } else {
                k += 1;
            }
        }
        let gone = moved.len();
        if let Some(dst) = folders.get_mut(&target) {
            for m in moved {
                dst.add(m.trace, m.body);
            }
        }
        drop(s);
        self.told = told.saturating_sub(gone);
        Ok(())
    }

    /// EXPUNGE (all \Deleted) or UID EXPUNGE `set` (those of the set only).
    fn expunge(&mut self, set: Option<&str>, out: &mut Vec<u8>) {
        let mut s = self.model.lock();
        let Some(f) = self.folder(&mut s) else {
            return;
        };
        let star = f.max_uid();
        let mut k = 0;
        let mut gone = 0;
        while k < f.msgs.len() {
            let m = &f.msgs[k];
            if m.deleted && set.is_none_or(|st| in_set(st, m.uid, star)) {
                f.msgs.remove(k);
                gone += 1;
                out.extend_from_slice(format!("* {} EXPUNGE\r\n", k + 1).as_bytes());
            } else {
                k += 1;
            }
        }
        drop(s);
        self.told = self.told.saturating_sub(gone);
    }
}

async fn imap(model: Arc<Model>, s: DuplexStream) {
    let mut w = Wire::new(s, model.delay);
    let greeting = format!("* OK [CAPABILITY {CAPS}] model IMAP ready\r\n");
    if w.send(greeting.as_bytes()).await.is_none() {
        return;
    }
    let mut sess = Session {
        model,
        me: None,
        selected: None,
        read_only: false,
        told: 0,
    };
    let mut out = Vec::new();
    while let Some(line) = w.line().await {
        let l = text(&line);
        let (tag, rest) = l.split_once(' ').unwrap_or((l.as_str(), ""));
        out.clear();
        if rest.eq_ignore_ascii_case("IDLE") {
            if !idle(&mut sess, &mut w, tag).await {
                return;
            }
            continue;
        }
        let go_on = sess.command(tag, rest, &mut out);
        if w.send(&out).await.is_none() || !go_on {
            return;
        }
    }
}

/// IDLE: `+ idling`, then each new message count as it comes, until `DONE`. False when the
/// connection ended.
async fn idle(sess: &mut Session, w: &mut Wire, tag: &str) -> bool {
    let Some(me) = sess.me.filter(|_| sess.selected.is_some()) else {
        return w
            .send(format!("{tag} BAD IDLE needs a selected mailbox\r\n").as_bytes())
            .await
            .is_some();
    };
    let model = sess.model.clone();
    let mut out = b"+ idling\r\n".to_vec();
    sess.news(&mut out);
    if w.send(&out).await.is_none() {
        return false;
    }
    loop {
        let notified = model.news[me].notified();
        tokio::pin!(notified);
        // Registered before looking: a delivery between the look and the wait still wakes it.
        notified.as_mut().enable();
        let mut out = Vec::new();
        sess.news(&mut out);
        if !out.is_empty() && w.send(&out).await.is_none() {
            return false;
        }
        tokio::select! {
            biased;
            line = w.line() => {
                let Some(line) = line else { return false };
                if !line.eq_ignore_ascii_case(b"DONE") {
                    return w.send(format!("{tag} BAD expected DONE\r\n").as_bytes()).await.is_some();
                }
                let mut out = Vec::new();
                sess.news(&mut out);
                out.extend_from_slice(format!("{tag} OK idle done\r\n").as_bytes());
                return w.send(&out).await.is_some();
            }
            _ = &mut notified => {}
        }
    }
}
