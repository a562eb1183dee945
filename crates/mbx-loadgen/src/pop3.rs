//! POP3 client (RFC 1939, 2449, 2595): STLS or implicit TLS, USER/PASS, STAT, LIST, UIDL,
//! RETR (dot-unstuffed, bounded), DELE, QUIT.

use crate::clock::{self, Instant};
use crate::conn::{Conn, Endpoint, Security};
use crate::error::{text_rejection, ErrorClass, Result};
use crate::metrics::{Protocol, Recorder};

/// The most messages a UIDL or LIST answer may list: 100,000 (a POP3 mailbox is an inbox; a
/// larger one is a mailbox POP3 clients do not download).
pub const MAX_LISTED_MESSAGES: usize = 100_000;

/// The most bytes of a UIDL or LIST answer: 100,000 lines of 82 octets, 8 MiB.
pub const MAX_LISTING_BYTES: usize = 8 * 1024 * 1024;

/// A POP3 session.
pub struct Pop3Client {
    conn: Conn,
    rec: Recorder,
}

impl Pop3Client {
    /// Connects, reads the greeting, and with [`Security::StartTls`] upgrades with STLS.
    pub async fn connect(ep: &Endpoint, rec: Recorder) -> Result<Pop3Client> {
        let t0 = clock::now();
        let conn = match Conn::connect(ep, "pop3", None).await {
            Ok(c) => c,
            Err(e) => {
                rec.record(Protocol::Pop3, "connect", t0.elapsed(), Err(e.class));
                return Err(e);
            }
        };
        let mut c = Pop3Client { conn, rec };
        c.command("connect", None, t0).await?;
        if ep.security == Security::StartTls {
            let t = clock::now();
            c.command("STLS", Some(b"STLS\r\n"), t)
                .await
                .map_err(|mut e| {
                    if matches!(e.class, ErrorClass::Rejected(_)) {
                        e.class = ErrorClass::Tls;
                    }
                    e
                })?;
            if let Err(e) = c.conn.start_tls("STLS").await {
                c.rec
                    .record(Protocol::Pop3, "STLS", t.elapsed(), Err(e.class));
                return Err(e);
            }
        }
        Ok(c)
    }

    /// Whether the session runs over TLS.
    pub fn is_tls(&self) -> bool {
        self.conn.is_tls()
    }

    /// USER then PASS. A refusal is an `auth` error.
    pub async fn login(&mut self, user: &str, password: &str) -> Result<()> {
        self.conn.set_login(user, password);
        if user.contains(['\r', '\n']) || password.contains(['\r', '\n']) {
            return Err(self.conn.error(
                ErrorClass::Auth,
                "USER",
                "a user name or password with CR or LF",
            ));
        }
        let auth = |mut e: crate::error::Error| {
            if matches!(
                e.class,
                ErrorClass::Rejected(crate::error::Rejection::Other)
            ) {
                e.class = ErrorClass::Auth;
            }
            e
        };
        self.command(
            "USER",
            Some(format!("USER {user}\r\n").as_bytes()),
            clock::now(),
        )
        .await
        .map_err(auth)?;
        self.command(
            "PASS",
            Some(format!("PASS {password}\r\n").as_bytes()),
            clock::now(),
        )
        .await
        .map_err(auth)?;
        Ok(())
    }

    /// STAT: (messages, octets).
    pub async fn stat(&mut self) -> Result<(u32, u64)> {
        let line = self
            .command("STAT", Some(b"STAT\r\n"), clock::now())
            .await?;
        let mut w = line.split_whitespace();
        match (
            w.next().and_then(|n| n.parse().ok()),
            w.next().and_then(|n| n.parse().ok()),
        ) {
            (Some(n), Some(o)) => Ok((n, o)),
            _ => Err(self.conn.error(
                ErrorClass::Protocol,
                "STAT",
                format!("not a STAT answer: {line}"),
            )),
        }
    }

    /// UIDL: (message number, unique id) of every message.
    pub async fn uidl(&mut self) -> Result<Vec<(u32, String)>> {
        let lines = self.multi("UIDL", b"UIDL\r\n", Self::LISTING).await?;
        Ok(lines
            .iter()
            .filter_map(|l| {
                let t = String::from_utf8_lossy(l);
                let mut w = t.split_whitespace();
                Some((w.next()?.parse().ok()?, w.next()?.to_owned()))
            })
            .collect())
    }

    /// LIST: (message number, octets) of every message.
    pub async fn list(&mut self) -> Result<Vec<(u32, u64)>> {
        let lines = self.multi("LIST", b"LIST\r\n", Self::LISTING).await?;
        Ok(lines
            .iter()
            .filter_map(|l| {
                let t = String::from_utf8_lossy(l);
                let mut w = t.split_whitespace();
                Some((w.next()?.parse().ok()?, w.next()?.parse().ok()?))
            })
            .collect())
    }

    /// RETR n: the message, dot-unstuffed, lines ended by CRLF, at most `limits.message` bytes.
    pub async fn retr(&mut self, n: u32) -> Result<Vec<u8>> {
        let lines = self
            .multi(
                "RETR",
                format!("RETR {n}\r\n").as_bytes(),
                (self.conn.limits.lines, self.conn.limits.message),
            )
            .await?;
        let mut out = Vec::with_capacity(lines.iter().map(|l| l.len() + 2).sum());
        for l in lines {
            out.extend_from_slice(&l);
            out.extend_from_slice(b"\r\n");
        }
        Ok(out)
    }

    /// DELE n (removed at QUIT).
    pub async fn dele(&mut self, n: u32) -> Result<()> {
        self.command(
            "DELE",
            Some(format!("DELE {n}\r\n").as_bytes()),
            clock::now(),
        )
        .await
        .map(|_| ())
    }

    /// QUIT (commits deletions) and close.
    pub async fn quit(mut self) -> Result<()> {
        let r = self.command("QUIT", Some(b"QUIT\r\n"), clock::now()).await;
        self.conn.shutdown().await;
        r.map(|_| ())
    }

    /// A single-line command: the text after `+OK`.
    async fn command(
        &mut self,
        name: &'static str,
        line: Option<&[u8]>,
        t: Instant,
    ) -> Result<String> {
        let limit = self.conn.timeouts.command;
        let r = clock::timeout(limit, async {
            if let Some(l) = line {
                self.conn.write_all(l, name).await?;
            }
            self.status(name).await
        })
        .await;
        let r = match r {
            Ok(r) => r,
            Err(_) => Err(self
                .conn
                .timed_out(name, format!("no answer within {limit:?}"))),
        };
        self.rec.record(
            Protocol::Pop3,
            name,
            t.elapsed(),
            r.as_ref().map(|_| ()).map_err(|e| e.class),
        );
        r
    }

    async fn status(&mut self, name: &str) -> Result<String> {
        let line = self.conn.read_line(name).await?;
        if let Some(rest) = line.strip_prefix(b"+OK") {
            return Ok(String::from_utf8_lossy(rest).trim().to_owned());
        }
        let text = String::from_utf8_lossy(&line).into_owned();
        if let Some(rest) = text.strip_prefix("-ERR") {
            return Err(self.conn.error(text_rejection(rest), name, text.clone()));
        }
        Err(self.conn.error(
            ErrorClass::Protocol,
            name,
            format!("not a POP3 answer: {text:?}"),
        ))
    }

    /// The bound of a UIDL or LIST answer (lines, bytes): what a mailbox of
    /// [`MAX_LISTED_MESSAGES`] messages needs (a UIDL line is at most 82 octets, RFC 1939 7),
    /// however long the server goes on: about 10 MB per session at most, not the 64 MiB of a
    /// message.
    const LISTING: (usize, usize) = (MAX_LISTED_MESSAGES, MAX_LISTING_BYTES);

    /// A multi-line command: its lines, dot-unstuffed, up to the terminating `.`; at most
    /// `bound` = (lines, bytes) (and `limits.lines`).
    async fn multi(
        &mut self,
        name: &'static str,
        line: &[u8],
        bound: (usize, usize),
    ) -> Result<Vec<Vec<u8>>> {
        let (max_lines, max_bytes) = (bound.0.min(self.conn.limits.lines), bound.1);
        let t = clock::now();
        let limit = self.conn.timeouts.command;
        let r = clock::timeout(limit, async {
            self.conn.write_all(line, name).await?;
            self.status(name).await?;
            let mut lines = Vec::new();
            let mut bytes = 0usize;
            loop {
                let mut l = self.conn.read_line(name).await?;
                if l == b"." {
                    return Ok(lines);
                }
                if l.first() == Some(&b'.') {
                    l.remove(0);
                }
                bytes += l.len() + 2;
                if bytes > max_bytes || lines.len() >= max_lines {
                    return Err(self.conn.error(
                        ErrorClass::Protocol,
                        name,
                        format!(
                            "an answer over {max_bytes} bytes or {max_lines} lines (the bound of {name})"
                        ),
                    ));
                }
                lines.push(l);
            }
        })
        .await;
        let r = match r {
            Ok(r) => r,
            Err(_) => Err(self
                .conn
                .timed_out(name, format!("no complete answer within {limit:?}"))),
        };
        self.rec.record(
            Protocol::Pop3,
            name,
            t.elapsed(),
            r.as_ref().map(|_| ()).map_err(|e| e.class),
        );
        r
    }
}
