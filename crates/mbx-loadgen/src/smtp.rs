//! SMTP submission client (RFC 5321, 6409): EHLO, STARTTLS (RFC 3207) or implicit TLS
//! (RFC 8314), AUTH PLAIN and LOGIN (RFC 4954), MAIL/RCPT/DATA with dot-stuffing, QUIT.
//!
//! One command at a time, so each command's latency is its own round trip; submission at full
//! speed may pipeline MAIL, RCPT and DATA ([`SmtpClient::send_pipelined`], RFC 2920).

use std::time::Duration;

use base64::engine::general_purpose::STANDARD as B64;
use base64::Engine as _;

use crate::clock::{self, Instant};
use crate::conn::{Conn, Endpoint, Security};
use crate::error::{smtp_rejection, ErrorClass, Result};
use crate::metrics::{Protocol, Recorder};

/// A reply: its code and text lines (without the code).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Reply {
    /// The three-digit code.
    pub code: u16,
    /// Each line's text after the code and separator.
    pub lines: Vec<String>,
}

impl Reply {
    fn text(&self) -> String {
        format!("{} {}", self.code, self.lines.join(" / "))
    }
}

/// SASL mechanism for AUTH.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum AuthMechanism {
    /// AUTH PLAIN with the initial response (one round trip).
    #[default]
    Plain,
    /// AUTH LOGIN (three round trips).
    Login,
}

/// What the server said when it accepted a message.
#[derive(Debug, Clone)]
pub struct Accepted {
    /// When the final 250 after the message's end arrived (delivery latency starts here).
    pub at: Instant,
    /// The reply text (Postfix: `2.0.0 Ok: queued as 4Xk...`).
    pub reply: String,
}

/// A submission session.
pub struct SmtpClient {
    conn: Conn,
    rec: Recorder,
    extensions: Vec<String>,
    helo: String,
    /// The MAIL and RCPT lines are built here (kept between commands: no allocation each).
    line: Vec<u8>,
}

impl SmtpClient {
    /// Connects, reads the greeting, says EHLO, and with [`Security::StartTls`] upgrades and
    /// says EHLO again. `helo` is the client's name in EHLO.
    pub async fn connect(ep: &Endpoint, helo: &str, rec: Recorder) -> Result<SmtpClient> {
        let t0 = clock::now();
        let conn = match Conn::connect(ep, "smtp", None).await {
            Ok(c) => c,
            Err(e) => {
                rec.record(Protocol::Smtp, "connect", t0.elapsed(), Err(e.class));
                return Err(e);
            }
        };
        let mut c = SmtpClient {
            conn,
            rec,
            extensions: Vec::new(),
            helo: helo.to_owned(),
            line: Vec::with_capacity(128),
        };
        c.command("connect", None, 220, t0).await?;
        c.ehlo().await?;
        if ep.security == Security::StartTls {
            if !c.has_extension("STARTTLS") {
                let e = c.conn.error(
                    ErrorClass::Tls,
                    "STARTTLS",
                    "the server does not offer STARTTLS",
                );
                c.rec
                    .record(Protocol::Smtp, "STARTTLS", Duration::ZERO, Err(e.class));
                return Err(e);
            }
            let t = clock::now();
            c.command("STARTTLS", Some(b"STARTTLS\r\n"), 220, t).await?;
            if let Err(e) = c.conn.start_tls("STARTTLS").await {
                c.rec
                    .record(Protocol::Smtp, "STARTTLS", t.elapsed(), Err(e.class));
                return Err(e);
            }
            c.ehlo().await?;
        }
        Ok(c)
    }

    /// The extensions of the last EHLO answer (upper case keywords with their parameters).
    pub fn extensions(&self) -> &[String] {
        &self.extensions
    }

    /// Whether the session runs over TLS.
    pub fn is_tls(&self) -> bool {
        self.conn.is_tls()
    }

    fn has_extension(&self, name: &str) -> bool {
        self.extensions
            .iter()
            .any(|e| e.split_whitespace().next() == Some(name))
    }

    async fn ehlo(&mut self) -> Result<()> {
        let cmd = format!("EHLO {}\r\n", self.helo);
        let reply = self
            .command("EHLO", Some(cmd.as_bytes()), 250, clock::now())
            .await?;
        self.extensions = reply
            .lines
            .iter()
            .skip(1)
            .map(|l| l.to_ascii_uppercase())
            .collect();
        Ok(())
    }

    /// Logs in. A refusal is an `auth` error.
    pub async fn auth(
        &mut self,
        user: &str,
        password: &str,
        mechanism: AuthMechanism,
    ) -> Result<()> {
        self.conn.set_login(user, password);
        let t = clock::now();
        match mechanism {
            AuthMechanism::Plain => {
                let token = B64.encode(format!("\0{user}\0{password}"));
                self.command(
                    "AUTH",
                    Some(format!("AUTH PLAIN {token}\r\n").as_bytes()),
                    235,
                    t,
                )
                .await?;
            }
            AuthMechanism::Login => {
                let r = self.exchange("AUTH", b"AUTH LOGIN\r\n").await;
                self.expect_step(r, 334, t).await?;
                let r = self
                    .exchange("AUTH", format!("{}\r\n", B64.encode(user)).as_bytes())
                    .await;
                self.expect_step(r, 334, t).await?;
                let r = self
                    .exchange("AUTH", format!("{}\r\n", B64.encode(password)).as_bytes())
                    .await;
                self.expect_step(r, 235, t).await?;
                self.rec.record(Protocol::Smtp, "AUTH", t.elapsed(), Ok(()));
            }
        }
        Ok(())
    }

    async fn expect_step(&mut self, r: Result<Reply>, want: u16, t: Instant) -> Result<()> {
        let e = match r {
            Ok(reply) if reply.code == want => return Ok(()),
            Ok(reply) => {
                let class = if reply.code >= 500 || reply.code == 454 {
                    ErrorClass::Auth
                } else {
                    ErrorClass::Protocol
                };
                self.conn.error(class, "AUTH", reply.text())
            }
            Err(e) => e,
        };
        self.rec
            .record(Protocol::Smtp, "AUTH", t.elapsed(), Err(e.class));
        Err(e)
    }

    /// Submits one message: MAIL FROM, RCPT TO for each recipient, DATA, the message
    /// dot-stuffed (a bare LF becomes CRLF). Any recipient refused fails the submission
    /// (after RSET, so the session stays usable).
    pub async fn send(
        &mut self,
        from: &str,
        recipients: &[&str],
        message: &[u8],
    ) -> Result<Accepted> {
        let t = clock::now();
        self.path_command("MAIL", "MAIL FROM:<", from, t).await?;
        for r in recipients {
            let t = clock::now();
            if let Err(e) = self.path_command("RCPT", "RCPT TO:<", r, t).await {
                self.rset().await;
                return Err(e);
            }
        }
        let t = clock::now();
        self.command("DATA", Some(b"DATA\r\n"), 354, t).await?;
        self.end_data(message).await
    }

    /// Sends `verb` `path` `>` CRLF (MAIL FROM or RCPT TO), built in the session's line buffer,
    /// and expects 250.
    async fn path_command(
        &mut self,
        name: &'static str,
        verb: &str,
        path: &str,
        t: Instant,
    ) -> Result<Reply> {
        let mut line = std::mem::take(&mut self.line);
        line.clear();
        line.extend_from_slice(verb.as_bytes());
        line.extend_from_slice(path.as_bytes());
        line.extend_from_slice(b">\r\n");
        let r = self.command(name, Some(&line), 250, t).await;
        self.line = line;
        r
    }

    /// Sends the message and the end of its data (after DATA's 354) and expects 250. A message
    /// that needs no dot-stuffing (CRLF throughout, no line starting with a dot: every generated
    /// one) goes out as it is with the terminator in the same write (vectored), not copied.
    async fn end_data(&mut self, message: &[u8]) -> Result<Accepted> {
        let t = clock::now();
        let reply = match data_tail(message) {
            Some(tail) => {
                self.command_parts("DATA end", Some((message, tail)), 250, t)
                    .await?
            }
            None => {
                let payload = dot_stuff(message);
                self.command("DATA end", Some(&payload), 250, t).await?
            }
        };
        Ok(Accepted {
            at: clock::now(),
            reply: reply.text(),
        })
    }

    /// Whether the server offers PIPELINING (RFC 2920).
    pub fn can_pipeline(&self) -> bool {
        self.has_extension("PIPELINING")
    }

    /// Submits one message as [`SmtpClient::send`] does, with MAIL, RCPT and DATA in one write
    /// (RFC 2920 PIPELINING; the caller checks [`SmtpClient::can_pipeline`]), then the message:
    /// two round trips instead of three plus one per recipient. Each command is still timed on
    /// its own, from the batch's write to its reply. A refused command fails the submission;
    /// if the server still answered DATA with 354, an empty message is ended and the
    /// transaction reset (RSET), so the session stays usable.
    pub async fn send_pipelined(
        &mut self,
        from: &str,
        recipients: &[&str],
        message: &[u8],
    ) -> Result<Accepted> {
        let mut batch = Vec::with_capacity(64 + recipients.len() * 64);
        batch.extend_from_slice(b"MAIL FROM:<");
        batch.extend_from_slice(from.as_bytes());
        batch.extend_from_slice(b">\r\n");
        for r in recipients {
            batch.extend_from_slice(b"RCPT TO:<");
            batch.extend_from_slice(r.as_bytes());
            batch.extend_from_slice(b">\r\n");
        }
        batch.extend_from_slice(b"DATA\r\n");
        let t = clock::now();
        let limit = self.conn.timeouts.command;
        let written = match clock::timeout(limit, self.conn.write_all(&batch, "MAIL")).await {
            Ok(r) => r,
            Err(_) => Err(self
                .conn
                .timed_out("MAIL", format!("could not write within {limit:?}"))),
        };
        if let Err(e) = written {
            self.rec
                .record(Protocol::Smtp, "MAIL", t.elapsed(), Err(e.class));
            return Err(e);
        }
        // Every reply is read, in order, whatever the earlier ones said.
        let mut failed: Option<crate::error::Error> = None;
        let steps = std::iter::once(("MAIL", 250))
            .chain(recipients.iter().map(|_| ("RCPT", 250)))
            .chain(std::iter::once(("DATA", 354)));
        let mut data_open = false;
        for (name, want) in steps {
            match self.command(name, None, want, t).await {
                Ok(_) => data_open = name == "DATA",
                Err(e)
                    if e.class == ErrorClass::Timeout
                        || e.class == ErrorClass::Disconnect
                        || e.class == ErrorClass::Protocol =>
                {
                    return Err(e)
                }
                Err(e) => {
                    failed.get_or_insert(e);
                }
            }
        }
        if let Some(e) = failed {
            if data_open {
                let _ = self
                    .command("DATA end", Some(b".\r\n"), 250, clock::now())
                    .await;
            }
            self.rset().await;
            return Err(e);
        }
        self.end_data(message).await
    }

    async fn rset(&mut self) {
        let _ = self
            .command("RSET", Some(b"RSET\r\n"), 250, clock::now())
            .await;
    }

    /// Says QUIT and closes.
    pub async fn quit(mut self) -> Result<()> {
        let r = self
            .command("QUIT", Some(b"QUIT\r\n"), 221, clock::now())
            .await;
        self.conn.shutdown().await;
        r.map(|_| ())
    }

    /// Sends `line` (if any), reads the reply within the command timeout, records the latency
    /// from `t` under `name`, and fails unless the code is `want`.
    async fn command(
        &mut self,
        name: &'static str,
        line: Option<&[u8]>,
        want: u16,
        t: Instant,
    ) -> Result<Reply> {
        self.command_parts(name, line.map(|l| (l, &b""[..])), want, t)
            .await
    }

    /// [`SmtpClient::command`] with what is sent in two parts (written together).
    async fn command_parts(
        &mut self,
        name: &'static str,
        parts: Option<(&[u8], &[u8])>,
        want: u16,
        t: Instant,
    ) -> Result<Reply> {
        let r = match parts {
            Some((a, b)) => self.exchange_parts(name, a, b).await,
            None => self.read_reply_timed(name).await,
        };
        let r = match r {
            Ok(reply) if reply.code == want => Ok(reply),
            Ok(reply) => {
                let class = if reply.code < 400 {
                    ErrorClass::Protocol
                } else {
                    smtp_rejection(reply.code, &reply.text())
                };
                Err(self.conn.error(class, name, reply.text()))
            }
            Err(e) => Err(e),
        };
        self.rec.record(
            Protocol::Smtp,
            name,
            t.elapsed(),
            r.as_ref().map(|_| ()).map_err(|e| e.class),
        );
        r
    }

    async fn exchange(&mut self, name: &str, line: &[u8]) -> Result<Reply> {
        self.exchange_parts(name, line, b"").await
    }

    /// Sends `a` then `b` (one write where the stream takes it) and reads the reply, within the
    /// command timeout.
    async fn exchange_parts(&mut self, name: &str, a: &[u8], b: &[u8]) -> Result<Reply> {
        let limit = self.conn.timeouts.command;
        match clock::timeout(limit, async {
            self.conn.write_all_parts(a, b, name).await?;
            read_reply(&mut self.conn, name).await
        })
        .await
        {
            Ok(r) => r,
            Err(_) => Err(self
                .conn
                .timed_out(name, format!("no reply within {limit:?}"))),
        }
    }

    async fn read_reply_timed(&mut self, name: &str) -> Result<Reply> {
        let limit = self.conn.timeouts.command;
        match clock::timeout(limit, read_reply(&mut self.conn, name)).await {
            Ok(r) => r,
            Err(_) => Err(self
                .conn
                .timed_out(name, format!("no reply within {limit:?}"))),
        }
    }
}

/// Reads one (possibly multi-line) reply: `250-...` lines then `250 ...`.
async fn read_reply(conn: &mut Conn, name: &str) -> Result<Reply> {
    let mut lines = Vec::new();
    let mut code = None;
    loop {
        let line = conn.read_line(name).await?;
        if line.len() < 3
            || !line[..3].iter().all(u8::is_ascii_digit)
            || line.len() > 3 && line[3] != b' ' && line[3] != b'-'
        {
            return Err(conn.error(
                ErrorClass::Protocol,
                name,
                format!("not an SMTP reply: {:?}", String::from_utf8_lossy(&line)),
            ));
        }
        let c = u16::from(line[0] - b'0') * 100
            + u16::from(line[1] - b'0') * 10
            + u16::from(line[2] - b'0');
        if code.is_some_and(|k| k != c) {
            return Err(conn.error(
                ErrorClass::Protocol,
                name,
                "a multi-line reply changed its code",
            ));
        }
        code = Some(c);
        let text = if line.len() > 4 {
            String::from_utf8_lossy(&line[4..]).into_owned()
        } else {
            String::new()
        };
        lines.push(text);
        if lines.len() > 1000 {
            return Err(conn.error(ErrorClass::Protocol, name, "a reply of over 1,000 lines"));
        }
        if line.len() == 3 || line[3] == b' ' {
            return Ok(Reply { code: c, lines });
        }
    }
}

/// What follows `message` to end the data when it can be sent as it is (CRLF line endings
/// throughout and no line starting with a dot): `.CRLF` after a last CRLF, `CRLF.CRLF`
/// otherwise, `.CRLF` alone for an empty message. `None` when it must be dot-stuffed
/// ([`dot_stuff`]). The message followed by the tail is what `dot_stuff` makes of it.
fn data_tail(message: &[u8]) -> Option<&'static [u8]> {
    if needs_stuffing(message) {
        return None;
    }
    Some(if message.is_empty() || message.ends_with(b"\r\n") {
        b".\r\n"
    } else {
        b"\r\n.\r\n"
    })
}

/// The DATA payload: CRLF line endings, every line starting with `.` doubled (RFC 5321
/// 4.5.2), ended by `CRLF.CRLF`.
pub fn dot_stuff(message: &[u8]) -> Vec<u8> {
    let mut out = Vec::with_capacity(message.len() + message.len() / 64 + 5);
    if !needs_stuffing(message) {
        // CRLF throughout and no line starting with a dot (generated messages): one copy.
        out.extend_from_slice(message);
        if !out.is_empty() && !out.ends_with(b"\r\n") {
            out.extend_from_slice(b"\r\n");
        }
        out.extend_from_slice(b".\r\n");
        return out;
    }
    let mut start = 0;
    // Line by line (memchr finds the line ends), copying whole lines.
    for nl in memchr::memchr_iter(b'\n', message) {
        let line = &message[start..nl];
        if line.first() == Some(&b'.') {
            out.push(b'.');
        }
        out.extend_from_slice(line);
        if nl == 0 || message[nl - 1] != b'\r' {
            out.push(b'\r');
        }
        out.push(b'\n');
        start = nl + 1;
    }
    let tail = &message[start..];
    if tail.first() == Some(&b'.') {
        out.push(b'.');
    }
    out.extend_from_slice(tail);
    if !out.is_empty() && !out.ends_with(b"\r\n") {
        out.extend_from_slice(b"\r\n");
    }
    out.extend_from_slice(b".\r\n");
    // The data ends with its terminator and nothing before it can end the data early.
    assert!(
        out.ends_with(b".\r\n")
            && (out.len() == 3 || !out.starts_with(b".\r\n"))
            && memchr::memmem::find(&out[..out.len() - 3], b"\n.\r\n").is_none(),
        "dot-stuffed data that ends early"
    );
    out
}

/// Whether a line of `message` starts with a dot or ends with a bare LF. One pass without
/// early exit (the compiler vectorizes it): a 10 KB message is checked in about a microsecond.
fn needs_stuffing(message: &[u8]) -> bool {
    let (Some(&first), Some(_)) = (message.first(), message.get(1)) else {
        return !message.is_empty();
    };
    if first == b'.' || first == b'\n' {
        return true;
    }
    // An OR over bytes (no widening, no early exit) vectorizes.
    let hits = message[..message.len() - 1]
        .iter()
        .zip(&message[1..])
        .fold(0u8, |acc, (&a, &b)| {
            acc | u8::from((b == b'\n') & (a != b'\r')) | u8::from((a == b'\n') & (b == b'.'))
        });
    hits != 0
}

#[cfg(test)]
mod tests {
    use super::{data_tail, dot_stuff};

    #[test]
    fn a_message_sent_as_it_is_ends_as_dot_stuffing_would_end_it() {
        let cases: [&[u8]; 10] = [
            b"",
            b"a\r\nb\r\n",
            b"a\r\nb",
            b"a\r\n.b\r\n",
            b".\r\n",
            b"a\nb\r\n",
            b"Subject: x\r\n\r\nbody line\r\n",
            b"x\r\n\r\n",
            b"a.\r\nb.c\r\n",
            b"a\r",
        ];
        let mut sent_as_is = 0;
        for m in cases {
            match data_tail(m) {
                Some(tail) => {
                    sent_as_is += 1;
                    assert_eq!([m, tail].concat(), dot_stuff(m), "{m:?}");
                }
                // Only a message that dot-stuffing changes is copied.
                None => assert!(!dot_stuff(m).starts_with(m), "{m:?}"),
            }
        }
        assert_eq!(sent_as_is, 7);
    }

    #[test]
    fn dot_stuffing_doubles_leading_dots_and_ends_the_data() {
        assert_eq!(
            dot_stuff(b"a\r\n.b\r\n..c\r\n"),
            b"a\r\n..b\r\n...c\r\n.\r\n"
        );
        assert_eq!(dot_stuff(b".\r\nx"), b"..\r\nx\r\n.\r\n");
        assert_eq!(dot_stuff(b"a\n.b\n"), b"a\r\n..b\r\n.\r\n");
        assert_eq!(dot_stuff(b""), b".\r\n");
        assert_eq!(dot_stuff(b"."), b"..\r\n.\r\n");
        assert_eq!(dot_stuff(b"\n"), b"\r\n.\r\n");
        assert_eq!(dot_stuff(b"a\r\nb\r\n"), b"a\r\nb\r\n.\r\n");
        assert_eq!(dot_stuff(b"a\r\nb"), b"a\r\nb\r\n.\r\n");
        assert_eq!(dot_stuff(b"a\r\n\r\n.\r\n"), b"a\r\n\r\n..\r\n.\r\n");
    }
}
