//! One client connection: TCP, optionally TLS (from the start or after STARTTLS), with bounded
//! line and literal reads and a timeout on every wait. The protocol clients sit on top.
//!
//! Memory: an idle plain connection holds its socket and a read buffer of 4 KiB
//! ([`READ_CHUNK`]); a TLS one adds rustls's state (its buffers grow to a record, 16 KiB, while
//! one is in flight). A buffer grown by a long answer shrinks back once it is consumed.

use std::future::Future;
use std::io;
use std::pin::Pin;
use std::sync::Arc;
use std::time::Duration;

use crate::clock;
use crate::error::{Error, ErrorClass, Result};
use rustls::pki_types::ServerName;
use rustls::ClientConfig;
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt};
use tokio::net::TcpStream;
use tokio_rustls::client::TlsStream;
use tokio_rustls::TlsConnector;

/// The read buffer's size while idle, and the size of each read.
pub const READ_CHUNK: usize = 4096;

/// How a connection is secured.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Security {
    /// No TLS.
    Plain,
    /// TLS after the protocol's STARTTLS (SMTP, IMAP) or STLS (POP3) command: required, so a
    /// server that does not offer it is an error, never a silent plaintext session.
    #[default]
    StartTls,
    /// TLS from the first byte (SMTP 465 "submissions", IMAPS 993, POP3S 995).
    Implicit,
}

/// Waits, each bounded: a wait that runs out is a `timeout` error naming the command.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Timeouts {
    /// TCP connect plus the TLS handshake.
    pub connect: Duration,
    /// One command's complete answer (a DATA or APPEND transfer included).
    pub command: Duration,
}

impl Default for Timeouts {
    fn default() -> Self {
        Timeouts {
            connect: Duration::from_secs(10),
            command: Duration::from_secs(60),
        }
    }
}

/// Sizes a server's answer may not exceed (network input is hostile: nothing is read unbounded).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Limits {
    /// One response line, CRLF included (SMTP's limit is 512 octets, RFC 5321 4.5.3.1.5; IMAP
    /// FETCH lines with many flags are longer): 64 KiB.
    pub line: usize,
    /// One IMAP literal or one POP3 RETR answer: 64 MiB (larger than Postfix's default
    /// message_size_limit, 10 MB, and Exchange's 35 MB submission limit).
    pub message: usize,
    /// Lines of one multi-line answer (an SMTP EHLO, a POP3 UIDL or an IMAP SEARCH's untagged
    /// responses): 1,000,000.
    pub lines: usize,
}

impl Default for Limits {
    fn default() -> Self {
        Limits {
            line: 64 * 1024,
            message: 64 * 1024 * 1024,
            lines: 1_000_000,
        }
    }
}

/// A byte stream to a server: a TCP socket, or (a simulated day) one end of an in-memory pipe.
pub trait Stream: AsyncRead + AsyncWrite + Unpin + Send {}

impl<T: AsyncRead + AsyncWrite + Unpin + Send> Stream for T {}

/// What a [`Connect`] gives: a stream, or the OS's (or the model's) error.
pub type Connecting<'a> = Pin<Box<dyn Future<Output = io::Result<Box<dyn Stream>>> + Send + 'a>>;

/// How connections are made: the clients ask it for a stream to `host:port`.
pub trait Connect: Send + Sync {
    /// A stream to `host:port` (the connect timeout is the caller's).
    fn connect<'a>(&'a self, host: &'a str, port: u16) -> Connecting<'a>;
}

/// A connector shared by every connection of an endpoint (None on an [`Endpoint`]: TCP).
#[derive(Clone)]
pub struct Connector(pub Arc<dyn Connect>);

impl std::fmt::Debug for Connector {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Connector(..)")
    }
}

/// Where to connect and how.
#[derive(Debug, Clone)]
pub struct Endpoint {
    /// Host name or address.
    pub host: String,
    /// TCP port.
    pub port: u16,
    /// Plain, STARTTLS or implicit TLS.
    pub security: Security,
    /// The TLS configuration (from [`crate::tls::client_config`]); required unless `Plain`.
    pub tls: Option<Arc<ClientConfig>>,
    /// The name the certificate must carry; the host by default.
    pub tls_name: Option<String>,
    /// Timeouts of every wait.
    pub timeouts: Timeouts,
    /// Bounds of every read.
    pub limits: Limits,
    /// How connections are made: None is TCP (production); a simulated day gives in-memory
    /// streams to a model server.
    pub connector: Option<Connector>,
}

impl Endpoint {
    /// `scheme://host:port` as errors name the server: the scheme takes an `s` with implicit
    /// TLS (`imaps`, `pop3s`, `smtps`), so a message names the URL the user gave.
    pub fn url(&self, scheme: &str) -> String {
        let s = if self.security == Security::Implicit {
            "s"
        } else {
            ""
        };
        format!("{scheme}{s}://{}:{}", self.host, self.port)
    }

    /// An endpoint with default timeouts and limits.
    pub fn new(host: &str, port: u16, security: Security, tls: Option<Arc<ClientConfig>>) -> Self {
        Endpoint {
            host: host.to_owned(),
            port,
            security,
            tls,
            tls_name: None,
            timeouts: Timeouts::default(),
            limits: Limits::default(),
            connector: None,
        }
    }
}

enum Inner {
    Plain(Box<dyn Stream>),
    Tls(Box<TlsStream<Box<dyn Stream>>>),
    Gone,
}

/// A TCP connection to `host:port`, without Nagle's delay (commands are small and their
/// latency is measured).
async fn tcp(host: &str, port: u16) -> io::Result<Box<dyn Stream>> {
    let tcp = TcpStream::connect((host, port)).await?;
    let _ = tcp.set_nodelay(true);
    Ok(Box::new(tcp))
}

/// A connection with a bounded read buffer. Errors carry its server and user.
pub(crate) struct Conn {
    inner: Inner,
    buf: Vec<u8>,
    pos: usize,
    pub(crate) server: String,
    pub(crate) user: Option<String>,
    pub(crate) timeouts: Timeouts,
    pub(crate) limits: Limits,
    tls: Option<Arc<ClientConfig>>,
    tls_name: String,
    /// Set by a timeout: the late answer would be read as the next command's, so the
    /// connection is not used again.
    abandoned: bool,
    /// The forms of the credential this connection sent ([`crate::secret::forms`]): redacted
    /// from every error's text.
    secrets: Vec<String>,
}

fn io_class(e: &io::Error) -> ErrorClass {
    match e.kind() {
        io::ErrorKind::TimedOut => ErrorClass::Timeout,
        io::ErrorKind::InvalidData => ErrorClass::Tls,
        _ => ErrorClass::Disconnect,
    }
}

impl Conn {
    /// Connects (and for implicit TLS, handshakes). `scheme` names the protocol in errors.
    pub(crate) async fn connect(ep: &Endpoint, scheme: &str, user: Option<&str>) -> Result<Conn> {
        let server = ep.url(scheme);
        let err = |class, cmd: &str, d: String| Error::new(class, user, &server, cmd, d);
        let connecting = match &ep.connector {
            Some(c) => c.0.connect(&ep.host, ep.port),
            None => Box::pin(tcp(&ep.host, ep.port)),
        };
        let stream = match clock::timeout(ep.timeouts.connect, connecting).await {
            Err(_) => {
                return Err(err(
                    ErrorClass::Timeout,
                    "connect",
                    format!("no connection within {:?}", ep.timeouts.connect),
                ))
            }
            Ok(Err(e)) => return Err(err(ErrorClass::Connect, "connect", e.to_string())),
            Ok(Ok(t)) => t,
        };
        if ep.security != Security::Plain && ep.tls.is_none() {
            return Err(err(
                ErrorClass::Tls,
                "connect",
                "TLS asked for but no TLS configuration given".into(),
            ));
        }
        let mut conn = Conn {
            inner: Inner::Plain(stream),
            buf: Vec::with_capacity(READ_CHUNK),
            pos: 0,
            server,
            user: user.map(str::to_owned),
            timeouts: ep.timeouts,
            limits: ep.limits,
            tls: ep.tls.clone(),
            tls_name: ep.tls_name.clone().unwrap_or_else(|| ep.host.clone()),
            abandoned: false,
            secrets: Vec::new(),
        };
        if ep.security == Security::Implicit {
            conn.start_tls("TLS handshake").await?;
        }
        Ok(conn)
    }

    /// An error on this connection.
    pub(crate) fn error(
        &self,
        class: ErrorClass,
        command: &str,
        detail: impl Into<String>,
    ) -> Error {
        let detail = detail.into();
        let detail = if self.secrets.is_empty() {
            detail
        } else {
            mbx_config::text::redact(&detail, &self.secrets)
        };
        Error::new(class, self.user.as_deref(), &self.server, command, detail)
    }

    /// Sets the user this connection logs in as and remembers the password's forms, so that
    /// no error on it repeats the password (before the login is sent).
    pub(crate) fn set_login(&mut self, user: &str, password: &str) {
        self.user = Some(user.to_owned());
        self.secrets = crate::secret::forms(user, password);
    }

    /// A `timeout` error for `command`; the connection is abandoned (any later command fails at
    /// once with a `timeout` error saying so).
    pub(crate) fn timed_out(&mut self, command: &str, detail: impl Into<String>) -> Error {
        self.abandoned = true;
        self.error(ErrorClass::Timeout, command, detail)
    }

    fn check_usable(&self, command: &str) -> Result<()> {
        if self.abandoned {
            return Err(self.error(
                ErrorClass::Timeout,
                command,
                "the connection was abandoned after an earlier command timed out; open a new one",
            ));
        }
        Ok(())
    }

    /// Whether the connection runs TLS.
    pub(crate) fn is_tls(&self) -> bool {
        matches!(self.inner, Inner::Tls(_))
    }

    /// Upgrades to TLS (after the server accepted STARTTLS, or at once for implicit TLS).
    pub(crate) async fn start_tls(&mut self, command: &str) -> Result<()> {
        if self.pos < self.buf.len() {
            // Bytes the server sent before the handshake would be read as if protected
            // (the STARTTLS command injection, CVE-2011-0411).
            return Err(self.error(
                ErrorClass::Tls,
                command,
                "the server sent data before the TLS handshake",
            ));
        }
        let Some(config) = self.tls.clone() else {
            return Err(self.error(ErrorClass::Tls, command, "no TLS configuration"));
        };
        let name = ServerName::try_from(self.tls_name.clone()).map_err(|e| {
            self.error(
                ErrorClass::Tls,
                command,
                format!("server name {}: {e}", self.tls_name),
            )
        })?;
        let tcp = match std::mem::replace(&mut self.inner, Inner::Gone) {
            Inner::Plain(t) => t,
            other => {
                self.inner = other;
                return Err(self.error(ErrorClass::Protocol, command, "TLS is already on"));
            }
        };
        let connector = TlsConnector::from(config);
        match clock::timeout(self.timeouts.connect, connector.connect(name, tcp)).await {
            Err(_) => Err(self.error(
                ErrorClass::Timeout,
                command,
                "TLS handshake did not finish in time",
            )),
            Ok(Err(e)) => {
                let text = e.to_string();
                // A plaintext service answers a ClientHello with its greeting ("* OK",
                // "220 ..."): not a certificate matter.
                if text.contains("InvalidContentType") || text.contains("corrupt message") {
                    Err(self.error(
                        ErrorClass::Protocol,
                        command,
                        format!(
                            "the server's answer is not TLS ({text}): this port speaks plaintext; use the scheme without TLS (imap://, pop3://, smtp://) or its +starttls form for it, or the TLS port"
                        ),
                    ))
                } else {
                    Err(self.error(ErrorClass::Tls, command, text))
                }
            }
            Ok(Ok(s)) => {
                self.inner = Inner::Tls(Box::new(s));
                Ok(())
            }
        }
    }

    /// The read buffer back to [`READ_CHUNK`] (what is unread kept).
    pub(crate) fn shrink(&mut self) {
        if self.pos > 0 {
            self.buf.drain(..self.pos);
            self.pos = 0;
        }
        self.buf.shrink_to(READ_CHUNK);
    }

    /// Reads what is available into the buffer. Cancel-safe (`read_buf` commits only bytes
    /// read), so a wait that times out (IDLE) loses nothing.
    async fn read_more(&mut self) -> io::Result<usize> {
        if self.pos == self.buf.len() {
            self.buf.clear();
            self.pos = 0;
            if self.buf.capacity() > 16 * READ_CHUNK {
                self.buf.shrink_to(READ_CHUNK);
            }
        }
        self.buf.reserve(READ_CHUNK);
        match &mut self.inner {
            Inner::Plain(s) => s.read_buf(&mut self.buf).await,
            Inner::Tls(s) => s.read_buf(&mut self.buf).await,
            Inner::Gone => Err(io::Error::new(io::ErrorKind::NotConnected, "closed")),
        }
    }

    async fn fill(&mut self, command: &str) -> Result<()> {
        self.check_usable(command)?;
        match self.read_more().await {
            Ok(0) => Err(self.error(
                ErrorClass::Disconnect,
                command,
                "the server closed the connection",
            )),
            Ok(_) => Ok(()),
            Err(e) => Err(self.error(io_class(&e), command, e.to_string())),
        }
    }

    /// One line without its line ending (CRLF, or a bare LF), at most `limits.line` long. No
    /// timeout of its own: callers bound the whole answer ([`Conn::timed`]).
    pub(crate) async fn read_line(&mut self, command: &str) -> Result<Vec<u8>> {
        let mut scanned = self.pos;
        loop {
            if let Some(i) = self.buf[scanned..].iter().position(|&b| b == b'\n') {
                let end = scanned + i;
                let mut line_end = end;
                if line_end > self.pos && self.buf[line_end - 1] == b'\r' {
                    line_end -= 1;
                }
                // The bound holds for a line that came whole in one read, too.
                if line_end - self.pos > self.limits.line {
                    let limit = self.limits.line;
                    self.pos = end + 1;
                    return Err(self.error(
                        ErrorClass::Protocol,
                        command,
                        format!("a response line longer than {limit} bytes"),
                    ));
                }
                let line = self.buf[self.pos..line_end].to_vec();
                self.pos = end + 1;
                assert!(self.pos <= self.buf.len(), "read position past the buffer");
                return Ok(line);
            }
            scanned = self.buf.len();
            if self.buf.len() - self.pos > self.limits.line {
                let limit = self.limits.line;
                return Err(self.error(
                    ErrorClass::Protocol,
                    command,
                    format!("a response line longer than {limit} bytes"),
                ));
            }
            // Keep the unread part at the start, so the buffer does not grow with consumed bytes.
            if self.pos > 0 {
                self.buf.drain(..self.pos);
                scanned -= self.pos;
                self.pos = 0;
            }
            self.fill(command).await?;
        }
    }

    /// Exactly `n` bytes (an IMAP literal); `n` was checked against the limit by the caller.
    pub(crate) async fn read_exact(&mut self, n: usize, command: &str) -> Result<Vec<u8>> {
        let mut out = Vec::with_capacity(n);
        while out.len() < n {
            if self.pos == self.buf.len() {
                self.fill(command).await?;
            }
            let take = (n - out.len()).min(self.buf.len() - self.pos);
            out.extend_from_slice(&self.buf[self.pos..self.pos + take]);
            self.pos += take;
        }
        assert!(
            out.len() == n && self.pos <= self.buf.len(),
            "a literal read past its length or the buffer"
        );
        Ok(out)
    }

    /// Writes all of `data` and flushes.
    pub(crate) async fn write_all(&mut self, data: &[u8], command: &str) -> Result<()> {
        self.check_usable(command)?;
        let r = match &mut self.inner {
            Inner::Plain(s) => match s.write_all(data).await {
                Ok(()) => s.flush().await,
                Err(e) => Err(e),
            },
            Inner::Tls(s) => match s.write_all(data).await {
                Ok(()) => s.flush().await,
                Err(e) => Err(e),
            },
            Inner::Gone => Err(io::Error::new(io::ErrorKind::NotConnected, "closed")),
        };
        r.map_err(|e| self.error(io_class(&e), command, e.to_string()))
    }

    /// Writes all of `a` then all of `b` and flushes: one vectored write where the stream takes
    /// it (a message and the end of its data without copying them together).
    pub(crate) async fn write_all_parts(
        &mut self,
        a: &[u8],
        b: &[u8],
        command: &str,
    ) -> Result<()> {
        if b.is_empty() {
            return self.write_all(a, command).await;
        }
        self.check_usable(command)?;
        let r = match &mut self.inner {
            Inner::Plain(s) => write_all_vectored(s, a, b).await,
            Inner::Tls(s) => write_all_vectored(s, a, b).await,
            Inner::Gone => Err(io::Error::new(io::ErrorKind::NotConnected, "closed")),
        };
        r.map_err(|e| self.error(io_class(&e), command, e.to_string()))
    }

    /// Closes the connection (TLS close_notify first); errors are ignored.
    pub(crate) async fn shutdown(&mut self) {
        let limit = Duration::from_secs(2);
        match &mut self.inner {
            Inner::Plain(s) => {
                let _ = clock::timeout(limit, s.shutdown()).await;
            }
            Inner::Tls(s) => {
                let _ = clock::timeout(limit, s.shutdown()).await;
            }
            Inner::Gone => {}
        }
        self.inner = Inner::Gone;
    }
}

/// Writes all of `a` then all of `b` to `s` with vectored writes (`write_vectored` may take
/// part of either; the rest is written on), then flushes. Hand-written because tokio has no
/// `write_all_vectored`.
async fn write_all_vectored<S: AsyncWrite + Unpin + ?Sized>(
    s: &mut S,
    a: &[u8],
    b: &[u8],
) -> io::Result<()> {
    let mut bufs = [io::IoSlice::new(a), io::IoSlice::new(b)];
    let mut rest: &mut [io::IoSlice<'_>] = &mut bufs;
    while !rest.is_empty() {
        let n = s.write_vectored(rest).await?;
        if n == 0 {
            return Err(io::Error::new(
                io::ErrorKind::WriteZero,
                "the peer took no more bytes",
            ));
        }
        io::IoSlice::advance_slices(&mut rest, n);
    }
    s.flush().await
}
