//! One ActiveSync device: HTTP/1.1 POSTs of WBXML commands (MS-ASHTTP) with Basic auth, over
//! TLS (rustls, the same trust options as the other clients) or plain HTTP for lab servers;
//! the protocol version chosen from the server's OPTIONS answer; Provision when the server asks
//! for it (HTTP 449, or status 142-144 in a command's answer), with the two-step policy key;
//! FolderSync and Sync with their sync keys.
//!
//! HTTP is hyper's (its client connection API, one connection at a time, no pool): requests are
//! never pipelined, so each command's latency is its own. The connection is kept for the next
//! request unless the server closes it; a request that fails on a kept connection before any
//! answer is sent once more on a new one, and the device then opens a new connection for every
//! request: the server closes idle connections without saying so (sogod closes after every
//! response without `Connection: close`, and a request sent as it does fails with a reset).
//! Sending such a request again is safe in EAS: a Sync repeats its SyncKey, a SendMail its
//! ClientId, so the server sees the same request twice at worst, never two different ones.
//!
//! Bounds: one timeout per request (connect, send, answer and body: all of it), the answer's
//! size ([`Config::max_response`]) and the WBXML limits ([`Config::wbxml`]).
//!
//! Time: latencies and timeouts are on the day's clock ([`crate::clock`], as the other
//! clients'): [`Exchange::elapsed`] is the one place a latency is read.
//!
//! Measurement: with a [`Recorder`] ([`EasClient::with_recorder`]) every request is one command
//! of [`Protocol::Eas`] (its latency, or its failure's class), and every HTTP status and EAS
//! `Status` code answered is counted ([`crate::metrics::Stats::statuses`]).

use std::collections::HashMap;
use std::sync::Arc;
use std::time::Duration;

use base64::engine::general_purpose::STANDARD as B64;
use base64::Engine as _;
use bytes::Bytes;
use http_body_util::{BodyExt, Full};
use hyper::client::conn::http1::SendRequest;
use hyper::header::{HeaderValue, AUTHORIZATION, CONTENT_LENGTH, CONTENT_TYPE, HOST, USER_AGENT};
use hyper::{Method, Request, StatusCode, Uri};
use hyper_util::rt::TokioIo;
use rustls::pki_types::ServerName;
use rustls::ClientConfig;
use tokio::net::TcpStream;
use tokio_rustls::TlsConnector;

use super::codepages::{
    airsync, airsyncbase, composemail, folderhierarchy, itemoperations, moveitems, ping, provision,
    settings,
};
use super::wbxml::{self, Element, Limits};
use crate::clock::{self, Instant};
use crate::error::{Error, ErrorClass, Rejection, Result};
use crate::metrics::{Protocol, Recorder, StatusKind};

/// The content type of WBXML bodies.
pub const WBXML_TYPE: &str = "application/vnd.ms-sync.wbxml";
/// The policy type of EAS 12.0 and later (MS-ASPROV).
pub const POLICY_TYPE: &str = "MS-EAS-Provisioning-WBXML";
/// The protocol versions this client speaks, most preferred first.
pub const VERSIONS: [&str; 5] = ["16.1", "16.0", "14.1", "14.0", "12.1"];

/// How to reach the server and who the device is.
#[derive(Clone)]
pub struct Config {
    /// `http://` or `https://`, host, optional port, and the path of the ActiveSync endpoint
    /// (`/Microsoft-Server-ActiveSync` on Exchange, `/SOGo/Microsoft-Server-ActiveSync` on
    /// SOGo without a rewriting web server in front).
    pub url: String,
    /// The login (Basic auth, and the `User` query parameter).
    pub user: String,
    /// Its password.
    pub password: String,
    /// The device's id (MS-ASHTTP: up to 32 letters and digits), one per simulated device.
    pub device_id: String,
    /// The device's type (`iPhone`, `Android`, ...).
    pub device_type: String,
    /// The User-Agent header.
    pub user_agent: String,
    /// TLS for `https://` (from [`crate::tls::client_config`]).
    pub tls: Option<Arc<ClientConfig>>,
    /// One request from connect to the last byte of its answer.
    pub timeout: Duration,
    /// The largest answer body read.
    pub max_response: usize,
    /// Bounds of the WBXML decoder.
    pub wbxml: Limits,
    /// The highest protocol version to use (the server's best one of [`VERSIONS`] up to it).
    pub max_version: &'static str,
}

impl std::fmt::Debug for Config {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Config")
            .field("url", &self.url)
            .field("user", &self.user)
            .field("device_id", &self.device_id)
            .field("device_type", &self.device_type)
            .field("timeout", &self.timeout)
            .finish_non_exhaustive()
    }
}

impl Config {
    /// A device of `user` at `url` with default bounds: 60 s per request, answers up to
    /// 64 MiB, versions up to 16.1.
    pub fn new(url: &str, user: &str, password: &str, device_id: &str) -> Config {
        Config {
            url: url.to_owned(),
            user: user.to_owned(),
            password: password.to_owned(),
            device_id: device_id.to_owned(),
            device_type: "MbxStress".to_owned(),
            user_agent: "mbxstress-loadgen".to_owned(),
            tls: None,
            timeout: Duration::from_secs(60),
            max_response: 64 * 1024 * 1024,
            wbxml: Limits::default(),
            max_version: "16.1",
        }
    }
}

/// A command's answer.
#[derive(Debug)]
pub struct Answer {
    /// The HTTP status.
    pub status: StatusCode,
    /// The decoded body (None when it was empty: "no changes" for Sync and Ping).
    pub body: Option<Element>,
    /// From the request's first byte to the answer's last, reconnect included.
    pub elapsed: Duration,
}

/// A folder of the hierarchy (FolderSync).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Folder {
    /// Its id, sent back exactly as given (SOGo's are percent-encoded strings).
    pub server_id: String,
    /// Its parent's id (`0` at the top).
    pub parent_id: String,
    /// Its name.
    pub display_name: String,
    /// MS-ASCMD folder type: 2 Inbox, 3 Drafts, 4 Deleted Items, 5 Sent Items, 6 Outbox,
    /// 7 Tasks, 8 Calendar, 9 Contacts, 10 Notes, 12 user mail, 13-19 other user folders.
    pub kind: u32,
}

/// Folder types of MS-ASCMD (FolderSync `Type`).
pub mod folder_type {
    /// The Inbox.
    pub const INBOX: u32 = 2;
    /// The default Calendar.
    pub const CALENDAR: u32 = 8;
    /// The default Contacts.
    pub const CONTACTS: u32 = 9;
}

/// An item a Sync added to the device.
#[derive(Debug, Clone)]
pub struct Item {
    /// Its id in the collection (IMAP UIDs on SOGo).
    pub server_id: String,
    /// Its `ApplicationData`.
    pub data: Element,
}

/// What one Sync of a collection returned.
#[derive(Debug, Default)]
pub struct SyncBatch {
    /// Items added.
    pub added: Vec<Item>,
    /// Ids of items changed.
    pub changed: Vec<String>,
    /// Ids of items deleted.
    pub deleted: Vec<String>,
    /// The server has more changes than the window (another Sync gets them).
    pub more_available: bool,
    /// The Sync's latency (of the request with the window; a collection's priming Sync, sync
    /// key 0, is not in it).
    pub elapsed: Duration,
}

/// The HTTP connection (plain or TLS): hyper's request half; its connection task runs on the
/// runtime until the server closes or the sender is dropped.
type Sender = SendRequest<Full<Bytes>>;

/// An ActiveSync device.
pub struct EasClient {
    cfg: Config,
    scheme_https: bool,
    host: String,
    port: u16,
    path: String,
    server: String,
    auth: HeaderValue,
    conn: Option<Sender>,
    /// Whether connections are kept between requests (until one kept fails).
    keep_alive: bool,
    version: Option<&'static str>,
    policy_key: Option<String>,
    folder_key: String,
    folders: Vec<Folder>,
    sync_keys: HashMap<String, String>,
    /// Messages sent (their ClientIds).
    sent: u64,
    /// Where commands and statuses are recorded (None: not measured).
    rec: Option<Recorder>,
}

impl std::fmt::Debug for EasClient {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("EasClient")
            .field("server", &self.server)
            .field("user", &self.cfg.user)
            .field("version", &self.version)
            .finish_non_exhaustive()
    }
}

/// Status codes in a command's answer that ask for Provision (MS-ASCMD 2.2.2: 142 device not
/// provisioned, 143 policy refresh, 144 invalid policy key).
fn wants_provision(status: u32) -> bool {
    (142..=144).contains(&status)
}

impl EasClient {
    /// A device (no connection yet). Errors: a URL that is not `http(s)://host[:port]/path`,
    /// `https` without a TLS configuration.
    pub fn new(cfg: Config) -> Result<EasClient> {
        let bad = |why: &str| {
            Error::new(
                ErrorClass::Connect,
                Some(&cfg.user),
                &cfg.url,
                "ActiveSync URL",
                why.to_owned(),
            )
        };
        let uri: Uri = cfg
            .url
            .parse()
            .map_err(|e| bad(&format!("not a URL: {e}")))?;
        let https = match uri.scheme_str() {
            Some("https") => true,
            Some("http") => false,
            _ => return Err(bad("the scheme must be http or https")),
        };
        let host = uri.host().ok_or_else(|| bad("no host"))?.to_owned();
        let port = uri.port_u16().unwrap_or(if https { 443 } else { 80 });
        let path = match uri.path() {
            "" | "/" => "/Microsoft-Server-ActiveSync".to_owned(),
            p => p.to_owned(),
        };
        if https && cfg.tls.is_none() {
            return Err(bad("https asked for but no TLS configuration given"));
        }
        let auth = HeaderValue::from_str(&format!(
            "Basic {}",
            B64.encode(format!("{}:{}", cfg.user, cfg.password))
        ))
        .map_err(|_| bad("the user or password cannot be sent in a header"))?;
        let scheme = if https { "https" } else { "http" };
        Ok(EasClient {
            server: format!("{scheme}://{host}:{port}{path}"),
            cfg,
            scheme_https: https,
            host,
            port,
            path,
            auth,
            conn: None,
            keep_alive: true,
            version: None,
            policy_key: None,
            folder_key: "0".to_owned(),
            folders: Vec::new(),
            sync_keys: HashMap::new(),
            sent: 0,
            rec: None,
        })
    }

    fn err(&self, class: ErrorClass, command: &str, detail: impl Into<String>) -> Error {
        Error::new(class, Some(&self.cfg.user), &self.server, command, detail)
    }

    /// The protocol version in use (after [`EasClient::options`]).
    pub fn version(&self) -> Option<&'static str> {
        self.version
    }

    /// The policy key in use (None: the server asked for none).
    pub fn policy_key(&self) -> Option<&str> {
        self.policy_key.as_deref()
    }

    /// The folders of the last FolderSync.
    pub fn folders(&self) -> &[Folder] {
        &self.folders
    }

    /// The first folder of MS-ASCMD type `kind`.
    pub fn folder(&self, kind: u32) -> Option<&Folder> {
        self.folders.iter().find(|f| f.kind == kind)
    }

    async fn connect(&self) -> Result<Sender> {
        let cmd = "connect";
        let tcp = TcpStream::connect((self.host.as_str(), self.port))
            .await
            .map_err(|e| self.err(ErrorClass::Connect, cmd, e.to_string()))?;
        let _ = tcp.set_nodelay(true);
        let hs = |e: hyper::Error| self.err(ErrorClass::Protocol, cmd, e.to_string());
        if self.scheme_https {
            let tls = self
                .cfg
                .tls
                .clone()
                .ok_or_else(|| self.err(ErrorClass::Tls, cmd, "no TLS configuration"))?;
            let name = ServerName::try_from(self.host.clone())
                .map_err(|e| self.err(ErrorClass::Tls, cmd, e.to_string()))?;
            let stream = TlsConnector::from(tls)
                .connect(name, tcp)
                .await
                .map_err(|e| self.err(ErrorClass::Tls, "TLS handshake", e.to_string()))?;
            let (sender, conn) = hyper::client::conn::http1::handshake(TokioIo::new(stream))
                .await
                .map_err(hs)?;
            tokio::spawn(conn);
            Ok(sender)
        } else {
            let (sender, conn) = hyper::client::conn::http1::handshake(TokioIo::new(tcp))
                .await
                .map_err(hs)?;
            tokio::spawn(conn);
            Ok(sender)
        }
    }

    /// One HTTP exchange within the request timeout: `method` on `path_and_query` with `body`.
    async fn exchange(
        &mut self,
        command: &str,
        method: Method,
        path_and_query: &str,
        (content_type, body): (&str, Vec<u8>),
        timeout: Duration,
    ) -> Result<(StatusCode, hyper::http::HeaderMap, Vec<u8>, Duration)> {
        let start = clock::now();
        match clock::timeout(
            timeout,
            self.exchange_inner(command, method, path_and_query, content_type, body),
        )
        .await
        {
            Ok(r) => r.map(|(s, h, b)| (s, h, b, Exchange::elapsed(start))),
            Err(_) => {
                // The connection may still carry the late answer: never reuse it.
                self.conn = None;
                Err(self.err(
                    ErrorClass::Timeout,
                    command,
                    format!("no complete answer within {timeout:?}"),
                ))
            }
        }
    }

    async fn exchange_inner(
        &mut self,
        command: &str,
        method: Method,
        path_and_query: &str,
        content_type: &str,
        body: Vec<u8>,
    ) -> Result<(StatusCode, hyper::http::HeaderMap, Vec<u8>)> {
        let body = Bytes::from(body);
        for attempt in 0..2 {
            let reused = self.conn.as_ref().is_some_and(|c| !c.is_closed());
            let mut sender = match self.conn.take() {
                Some(c) if reused => c,
                _ => self.connect().await?,
            };
            if sender.ready().await.is_err() {
                if attempt == 0 && reused {
                    self.keep_alive = false;
                    continue;
                }
                return Err(self.err(ErrorClass::Disconnect, command, "connection closed"));
            }
            let req = self.request(&method, path_and_query, content_type, body.clone())?;
            let resp = match sender.send_request(req).await {
                Ok(r) => r,
                Err(_) if attempt == 0 && reused => {
                    self.keep_alive = false;
                    continue;
                }
                Err(e) => return Err(self.err(ErrorClass::Disconnect, command, e.to_string())),
            };
            let status = resp.status();
            let headers = resp.headers().clone();
            if let Some(len) = headers
                .get(CONTENT_LENGTH)
                .and_then(|v| v.to_str().ok())
                .and_then(|v| v.parse::<u64>().ok())
            {
                if len > self.cfg.max_response as u64 {
                    return Err(self.err(
                        ErrorClass::Protocol,
                        command,
                        format!(
                            "answer of {len} bytes is over the limit of {}",
                            self.cfg.max_response
                        ),
                    ));
                }
            }
            let mut incoming = resp.into_body();
            let mut data = Vec::new();
            while let Some(frame) = incoming.frame().await {
                let frame =
                    frame.map_err(|e| self.err(ErrorClass::Disconnect, command, e.to_string()))?;
                if let Ok(chunk) = frame.into_data() {
                    if data.len().saturating_add(chunk.len()) > self.cfg.max_response {
                        return Err(self.err(
                            ErrorClass::Protocol,
                            command,
                            format!("answer over the limit of {} bytes", self.cfg.max_response),
                        ));
                    }
                    data.extend_from_slice(&chunk);
                }
            }
            let close = headers
                .get(hyper::header::CONNECTION)
                .and_then(|v| v.to_str().ok())
                .is_some_and(|v| v.eq_ignore_ascii_case("close"));
            if self.keep_alive && !close && !sender.is_closed() {
                self.conn = Some(sender);
            }
            return Ok((status, headers, data));
        }
        Err(self.err(ErrorClass::Disconnect, command, "connection closed twice"))
    }

    fn request(
        &self,
        method: &Method,
        path_and_query: &str,
        content_type: &str,
        body: Bytes,
    ) -> Result<Request<Full<Bytes>>> {
        let mut b = Request::builder()
            .method(method.clone())
            .uri(path_and_query)
            .header(HOST, format!("{}:{}", self.host, self.port))
            .header(AUTHORIZATION, self.auth.clone())
            .header(USER_AGENT, self.cfg.user_agent.as_str());
        if let Some(v) = self.version {
            b = b.header("MS-ASProtocolVersion", v);
        }
        if *method == Method::POST {
            b = b.header(CONTENT_TYPE, content_type);
            if let Some(k) = &self.policy_key {
                b = b.header("X-MS-PolicyKey", k.as_str());
            }
        }
        b.body(Full::new(body))
            .map_err(|e| self.err(ErrorClass::Protocol, "request", e.to_string()))
    }

    fn class_of(status: StatusCode) -> Option<ErrorClass> {
        match status.as_u16() {
            200 => None,
            401 => Some(ErrorClass::Auth),
            403 => Some(ErrorClass::Rejected(Rejection::Other)),
            429 | 503 => Some(ErrorClass::Rejected(Rejection::Rate)),
            507 => Some(ErrorClass::Rejected(Rejection::Quota)),
            _ => Some(ErrorClass::Rejected(Rejection::Other)),
        }
    }

    /// OPTIONS: the versions and commands the server offers; chooses the version to use (the
    /// first of [`VERSIONS`] offered, up to [`Config::max_version`]).
    pub async fn options(&mut self) -> Result<Vec<String>> {
        let path = self.path.clone();
        let r = self
            .exchange(
                "OPTIONS",
                Method::OPTIONS,
                &path,
                ("", Vec::new()),
                self.cfg.timeout,
            )
            .await;
        let (status, headers, _, elapsed) = self.measured("OPTIONS", r)?;
        if let Some(class) = Self::class_of(status) {
            self.record("OPTIONS", elapsed, Err(class));
            return Err(self.err(class, "OPTIONS", format!("HTTP {status}")));
        }
        self.record("OPTIONS", elapsed, Ok(()));
        let offered: Vec<String> = headers
            .get("MS-ASProtocolVersions")
            .and_then(|v| v.to_str().ok())
            .unwrap_or_default()
            .split(',')
            .map(|v| v.trim().to_owned())
            .filter(|v| !v.is_empty())
            .collect();
        let max = VERSIONS
            .iter()
            .position(|v| *v == self.cfg.max_version)
            .unwrap_or(0);
        self.version = VERSIONS[max..]
            .iter()
            .find(|v| offered.iter().any(|o| o == *v))
            .copied();
        if self.version.is_none() {
            return Err(self.err(
                ErrorClass::Protocol,
                "OPTIONS",
                format!(
                    "the server offers no version this client speaks (MS-ASProtocolVersions: {:?})",
                    offered.join(",")
                ),
            ));
        }
        Ok(offered)
    }

    /// POSTs command `cmd` with `body`, once more after Provision when the server asks for it.
    pub async fn command(&mut self, cmd: &str, body: &Element) -> Result<Answer> {
        self.command_with_timeout(cmd, body, self.cfg.timeout).await
    }

    /// [`EasClient::command`] with its own timeout (a Ping waits its heartbeat first).
    pub async fn command_with_timeout(
        &mut self,
        cmd: &str,
        body: &Element,
        timeout: Duration,
    ) -> Result<Answer> {
        let answer = self.post(cmd, body, timeout).await?;
        let status = answer.body.as_ref().and_then(top_status).unwrap_or(1);
        if cmd != "Provision" && (answer.status.as_u16() == 449 || wants_provision(status)) {
            self.provision().await?;
            return self.post(cmd, body, timeout).await;
        }
        Ok(answer)
    }

    async fn post(&mut self, cmd: &str, body: &Element, timeout: Duration) -> Result<Answer> {
        let bytes = wbxml::encode(body, self.cfg.wbxml.depth)
            .map_err(|e| self.err(ErrorClass::Protocol, cmd, e.to_string()))?;
        self.post_bytes(cmd, "", (WBXML_TYPE, bytes), timeout).await
    }

    /// POSTs `cmd` with a body of `content_type` (`extra` is appended to the query).
    async fn post_bytes(
        &mut self,
        cmd: &str,
        extra: &str,
        payload: (&str, Vec<u8>),
        timeout: Duration,
    ) -> Result<Answer> {
        if self.version.is_none() {
            self.options().await?;
        }
        let query = format!(
            "{}?Cmd={cmd}&User={}&DeviceId={}&DeviceType={}{extra}",
            self.path,
            query_escape(&self.cfg.user),
            query_escape(&self.cfg.device_id),
            query_escape(&self.cfg.device_type)
        );
        let r = self
            .exchange(cmd, Method::POST, &query, payload, timeout)
            .await;
        let (status, _, data, elapsed) = self.measured(cmd, r)?;
        // 449 (Provision first) is no failure of the command: it is sent again after it.
        if status.as_u16() == 449 {
            return Ok(Answer {
                status,
                body: None,
                elapsed,
            });
        }
        if let Some(class) = Self::class_of(status) {
            self.record(cmd, elapsed, Err(class));
            return Err(self.err(class, cmd, format!("HTTP {status}")));
        }
        let body = if data.is_empty() {
            None
        } else {
            match wbxml::decode(&data, &self.cfg.wbxml) {
                Ok(b) => Some(b),
                Err(e) => {
                    self.record(cmd, elapsed, Err(ErrorClass::Protocol));
                    return Err(self.err(ErrorClass::Protocol, cmd, e.to_string()));
                }
            }
        };
        self.record(cmd, elapsed, Ok(()));
        if let Some(code) = body.as_ref().and_then(top_status) {
            self.note_status(cmd, code);
        }
        Ok(Answer {
            status,
            body,
            elapsed,
        })
    }

    /// Provision (MS-ASPROV): asks for the policy, then acknowledges it with the temporary key
    /// to get the final one. A server with no policy for the device (status 2, as SOGo answers)
    /// leaves the device without a key.
    pub async fn provision(&mut self) -> Result<()> {
        self.policy_key = None;
        let policy = Element::new(provision::Policies).with(
            Element::new(provision::Policy).with(Element::text(provision::PolicyType, POLICY_TYPE)),
        );
        let mut first = Element::new(provision::Provision);
        if matches!(self.version, Some("14.1" | "16.0" | "16.1")) {
            first = first.with(
                Element::new(settings::DeviceInformation).with(
                    Element::new(settings::Set)
                        .with(Element::text(settings::Model, "mbxstress"))
                        .with(Element::text(
                            settings::FriendlyName,
                            self.cfg.device_id.clone(),
                        ))
                        .with(Element::text(settings::OS, "mbxstress loadgen"))
                        .with(Element::text(
                            settings::UserAgent,
                            self.cfg.user_agent.clone(),
                        )),
                ),
            );
        }
        let first = first.with(policy);
        let answer = self.post("Provision", &first, self.cfg.timeout).await?;
        let body = answer
            .body
            .ok_or_else(|| self.err(ErrorClass::Protocol, "Provision", "empty answer"))?;
        let status = top_status(&body).unwrap_or(0);
        if status != 1 {
            return Err(self.err(
                ErrorClass::Rejected(Rejection::Other),
                "Provision",
                format!("Provision status {status}"),
            ));
        }
        let p = body.path(&[provision::Policies, provision::Policy]);
        let policy_status = p
            .and_then(|p| p.child_text(provision::Status))
            .and_then(|s| s.trim().parse::<u32>().ok());
        let temp = p.and_then(|p| p.child_text(provision::PolicyKey));
        let temp = match (policy_status, temp) {
            // No policy for this device: nothing to acknowledge.
            (Some(2), _) | (_, None) => return Ok(()),
            (Some(1), Some(k)) => k.to_owned(),
            (s, _) => {
                return Err(self.err(
                    ErrorClass::Rejected(Rejection::Other),
                    "Provision",
                    format!("policy status {s:?}"),
                ))
            }
        };
        let ack = Element::new(provision::Provision).with(
            Element::new(provision::Policies).with(
                Element::new(provision::Policy)
                    .with(Element::text(provision::PolicyType, POLICY_TYPE))
                    .with(Element::text(provision::PolicyKey, temp.clone()))
                    .with(Element::text(provision::Status, "1")),
            ),
        );
        self.policy_key = Some(temp);
        let answer = self.post("Provision", &ack, self.cfg.timeout).await?;
        let key = answer
            .body
            .as_ref()
            .and_then(|b| b.path(&[provision::Policies, provision::Policy]))
            .and_then(|p| p.child_text(provision::PolicyKey))
            .map(str::to_owned);
        self.policy_key = key;
        Ok(())
    }

    /// FolderSync: the folder hierarchy's changes since the last one (all of it the first
    /// time), applied to [`EasClient::folders`].
    pub async fn folder_sync(&mut self) -> Result<Answer> {
        let req = Element::new(folderhierarchy::FolderSync).with(Element::text(
            folderhierarchy::SyncKey,
            self.folder_key.clone(),
        ));
        let answer = self.command("FolderSync", &req).await?;
        let body = answer
            .body
            .as_ref()
            .ok_or_else(|| self.err(ErrorClass::Protocol, "FolderSync", "empty answer"))?;
        let status = top_status(body).unwrap_or(0);
        if status != 1 {
            return Err(self.err(
                ErrorClass::Rejected(Rejection::Other),
                "FolderSync",
                format!("FolderSync status {status}"),
            ));
        }
        if let Some(k) = body.child_text(folderhierarchy::SyncKey) {
            self.folder_key = k.to_owned();
        }
        if let Some(changes) = body.child(folderhierarchy::Changes) {
            for c in changes.elements() {
                let text = |t| c.child_text(t).unwrap_or_default().to_owned();
                let id = text(folderhierarchy::ServerId);
                if c.tag == folderhierarchy::Delete {
                    self.folders.retain(|f| f.server_id != id);
                } else if c.tag == folderhierarchy::Add || c.tag == folderhierarchy::Update {
                    let folder = Folder {
                        parent_id: text(folderhierarchy::ParentId),
                        display_name: text(folderhierarchy::DisplayName),
                        kind: text(folderhierarchy::Type).trim().parse().unwrap_or(0),
                        server_id: id,
                    };
                    self.folders.retain(|f| f.server_id != folder.server_id);
                    self.folders.push(folder);
                }
            }
        }
        Ok(answer)
    }

    /// Sync of `collection_id`: its changes since the last Sync, at most `window` items, the
    /// body as full MIME (MIMESupport 2, BodyPreference 4) when `mime` is set, else plain text
    /// cut at 5 KB. The first Sync of a collection (sync key 0) primes the key; this sends the
    /// priming Sync too, so a call always returns the collection's changes.
    pub async fn sync(
        &mut self,
        collection_id: &str,
        window: u32,
        mime: bool,
    ) -> Result<SyncBatch> {
        if !self.sync_keys.contains_key(collection_id) {
            let prime = sync_request(collection_id, "0", None);
            let answer = self.command("Sync", &prime).await?;
            let key = self.sync_answer(collection_id, answer.body.as_ref())?.1;
            self.sync_keys.insert(
                collection_id.to_owned(),
                key.unwrap_or_else(|| "0".to_owned()),
            );
        }
        let key = self
            .sync_keys
            .get(collection_id)
            .cloned()
            .unwrap_or_else(|| "0".to_owned());
        let req = sync_request(collection_id, &key, Some((window, mime)));
        let answer = self.command("Sync", &req).await?;
        let (mut batch, key) = self.sync_answer(collection_id, answer.body.as_ref())?;
        batch.elapsed = answer.elapsed;
        if let Some(k) = key {
            self.sync_keys.insert(collection_id.to_owned(), k);
        }
        Ok(batch)
    }

    fn sync_answer(
        &self,
        collection_id: &str,
        body: Option<&Element>,
    ) -> Result<(SyncBatch, Option<String>)> {
        let mut batch = SyncBatch::default();
        // An empty answer: no changes, the key stays.
        let Some(body) = body else {
            return Ok((batch, None));
        };
        if let Some(s) = top_status(body).filter(|s| *s != 1) {
            return Err(self.err(
                ErrorClass::Rejected(Rejection::Other),
                "Sync",
                format!("Sync status {s}"),
            ));
        }
        let collection = body
            .path(&[airsync::Collections])
            .and_then(|c| {
                c.all(airsync::Collection)
                    .find(|c| c.child_text(airsync::CollectionId) == Some(collection_id))
            })
            .ok_or_else(|| {
                self.err(
                    ErrorClass::Protocol,
                    "Sync",
                    format!("no Collection {collection_id} in the answer"),
                )
            })?;
        let status = collection
            .child_text(airsync::Status)
            .and_then(|s| s.trim().parse::<u32>().ok())
            .unwrap_or(1);
        self.note_status("Sync", status);
        if status != 1 {
            return Err(self.err(
                ErrorClass::Rejected(Rejection::Other),
                "Sync",
                format!("Sync status {status} for collection {collection_id}"),
            ));
        }
        batch.more_available = collection.child(airsync::MoreAvailable).is_some();
        if let Some(cmds) = collection.child(airsync::Commands) {
            for c in cmds.elements() {
                let id = c
                    .child_text(airsync::ServerId)
                    .unwrap_or_default()
                    .to_owned();
                if c.tag == airsync::Add {
                    let data = c
                        .child(airsync::ApplicationData)
                        .cloned()
                        .unwrap_or_else(|| Element::new(airsync::ApplicationData));
                    batch.added.push(Item {
                        server_id: id,
                        data,
                    });
                } else if c.tag == airsync::Change {
                    batch.changed.push(id);
                } else if c.tag == airsync::Delete || c.tag == airsync::SoftDelete {
                    batch.deleted.push(id);
                }
            }
        }
        let key = collection.child_text(airsync::SyncKey).map(str::to_owned);
        Ok((batch, key))
    }
}

impl EasClient {
    /// SendMail: submits `mime` (a whole RFC 5322 message), a copy saved in Sent Items. At
    /// 14.0 and later a WBXML request (ClientId, SaveInSentItems, the MIME as opaque bytes); at
    /// 12.1 the raw message (`message/rfc822`, `SaveInSent=T`), as MS-ASCMD defines for each.
    pub async fn send_mail(&mut self, mime: &[u8]) -> Result<Answer> {
        if self.version.is_none() {
            self.options().await?;
        }
        self.sent = self.sent.wrapping_add(1);
        let answer = if self.version.is_some_and(|v| v.starts_with("12.")) {
            let timeout = self.cfg.timeout;
            let mut answer = self
                .post_bytes(
                    "SendMail",
                    "&SaveInSent=T",
                    ("message/rfc822", mime.to_vec()),
                    timeout,
                )
                .await?;
            if answer.status.as_u16() == 449 {
                self.provision().await?;
                answer = self
                    .post_bytes(
                        "SendMail",
                        "&SaveInSent=T",
                        ("message/rfc822", mime.to_vec()),
                        timeout,
                    )
                    .await?;
            }
            answer
        } else {
            let req = Element::new(composemail::SendMail)
                .with(Element::text(
                    composemail::ClientId,
                    format!("{}-{}", self.cfg.device_id, self.sent),
                ))
                .with(Element::new(composemail::SaveInSentItems))
                .with(Element::opaque(composemail::MIME, mime.to_vec()));
            self.command("SendMail", &req).await?
        };
        // Success is an empty answer; a body carries the failure's status.
        if let Some(status) = answer.body.as_ref().and_then(top_status) {
            if status != 1 {
                return Err(self.err(
                    ErrorClass::Rejected(Rejection::Other),
                    "SendMail",
                    format!("SendMail status {status}"),
                ));
            }
        }
        Ok(answer)
    }

    /// Ping: parks until one of `folders` (id and class: `Email`, `Calendar`, `Contacts`) changes
    /// or `heartbeat` passes; the request's timeout is the heartbeat plus [`Config::timeout`].
    pub async fn ping(
        &mut self,
        heartbeat: Duration,
        folders: &[(&str, &str)],
    ) -> Result<PingAnswer> {
        let mut list = Element::new(ping::Folders);
        for (id, class) in folders {
            list = list.with(
                Element::new(ping::Folder)
                    .with(Element::text(ping::Id, *id))
                    .with(Element::text(ping::Class, *class)),
            );
        }
        let req = Element::new(ping::Ping)
            .with(Element::text(
                ping::HeartbeatInterval,
                heartbeat.as_secs().to_string(),
            ))
            .with(list);
        let timeout = heartbeat.saturating_add(self.cfg.timeout);
        let answer = self.command_with_timeout("Ping", &req, timeout).await?;
        let body = answer
            .body
            .as_ref()
            .ok_or_else(|| self.err(ErrorClass::Protocol, "Ping", "empty answer"))?;
        let status = top_status(body).unwrap_or(0);
        // 1: the heartbeat passed without changes; 2: changes in the folders listed.
        if status != 1 && status != 2 {
            return Err(self.err(
                ErrorClass::Rejected(Rejection::Other),
                "Ping",
                format!("Ping status {status}"),
            ));
        }
        let changed = body
            .child(ping::Folders)
            .map(|f| {
                f.all(ping::Folder)
                    .filter_map(|e| e.text_content().map(str::to_owned))
                    .collect()
            })
            .unwrap_or_default();
        Ok(PingAnswer {
            status,
            changed,
            elapsed: answer.elapsed,
        })
    }

    /// ItemOperations Fetch of one item of `collection_id` as full MIME: its `Properties`.
    pub async fn fetch_mime(&mut self, collection_id: &str, server_id: &str) -> Result<Element> {
        let req = Element::new(itemoperations::ItemOperations).with(
            Element::new(itemoperations::Fetch)
                .with(Element::text(itemoperations::Store, "Mailbox"))
                .with(Element::text(airsync::CollectionId, collection_id))
                .with(Element::text(airsync::ServerId, server_id))
                .with(
                    Element::new(itemoperations::Options)
                        .with(Element::text(airsync::MIMESupport, "2"))
                        .with(
                            Element::new(airsyncbase::BodyPreference)
                                .with(Element::text(airsyncbase::Type, "4")),
                        ),
                ),
        );
        let answer = self.command("ItemOperations", &req).await?;
        let fetch = answer
            .body
            .as_ref()
            .and_then(|b| b.path(&[itemoperations::Response, itemoperations::Fetch]));
        let status = fetch
            .and_then(|f| f.child_text(itemoperations::Status))
            .and_then(|s| s.trim().parse::<u32>().ok());
        if let Some(code) = status {
            self.note_status("ItemOperations", code);
        }
        match (
            status,
            fetch.and_then(|f| f.child(itemoperations::Properties)),
        ) {
            (Some(1), Some(p)) => Ok(p.clone()),
            (s, _) => Err(self.err(
                ErrorClass::Rejected(Rejection::Other),
                "ItemOperations",
                format!("Fetch status {s:?}"),
            )),
        }
    }

    /// MoveItems of one item from `src_folder` to `dst_folder`: its id in the destination.
    pub async fn move_item(
        &mut self,
        server_id: &str,
        src_folder: &str,
        dst_folder: &str,
    ) -> Result<String> {
        let req = Element::new(moveitems::MoveItems).with(
            Element::new(moveitems::Move)
                .with(Element::text(moveitems::SrcMsgId, server_id))
                .with(Element::text(moveitems::SrcFldId, src_folder))
                .with(Element::text(moveitems::DstFldId, dst_folder)),
        );
        let answer = self.command("MoveItems", &req).await?;
        let resp = answer
            .body
            .as_ref()
            .and_then(|b| b.child(moveitems::Response));
        let status = resp
            .and_then(|r| r.child_text(moveitems::Status))
            .and_then(|s| s.trim().parse::<u32>().ok());
        if let Some(code) = status {
            self.note_status("MoveItems", code);
        }
        // 3: success (MS-ASCMD MoveItems Status).
        match (status, resp.and_then(|r| r.child_text(moveitems::DstMsgId))) {
            (Some(3), Some(id)) => Ok(id.to_owned()),
            (s, _) => Err(self.err(
                ErrorClass::Rejected(Rejection::Other),
                "MoveItems",
                format!("MoveItems status {s:?}"),
            )),
        }
    }
}

/// What a Ping returned.
#[derive(Debug)]
pub struct PingAnswer {
    /// 1: the heartbeat passed with no change; 2: the folders in `changed` changed.
    pub status: u32,
    /// Ids of the folders with changes.
    pub changed: Vec<String>,
    /// How long the Ping was parked, answer included.
    pub elapsed: Duration,
}

// The user day's commands (issue 38 item 2): measurement, SmartReply/SmartForward, and Sync's
// Delete and Change. Kept in one block of their own.
impl EasClient {
    /// Records every command and status of this device into `rec` ([`Protocol::Eas`]).
    pub fn with_recorder(mut self, rec: Recorder) -> EasClient {
        self.rec = Some(rec);
        self
    }

    /// An exchange's result, its HTTP status counted; a failure recorded with its class.
    fn measured<T>(
        &self,
        cmd: &str,
        r: Result<(StatusCode, hyper::http::HeaderMap, T, Duration)>,
    ) -> Result<(StatusCode, hyper::http::HeaderMap, T, Duration)> {
        match r {
            Ok(v) => {
                if let Some(rec) = &self.rec {
                    rec.status(
                        Protocol::Eas,
                        command_name(cmd),
                        StatusKind::Http,
                        u32::from(v.0.as_u16()),
                    );
                }
                Ok(v)
            }
            Err(e) => {
                self.record(cmd, Duration::ZERO, Err(e.class));
                Err(e)
            }
        }
    }

    fn record(&self, cmd: &str, latency: Duration, outcome: std::result::Result<(), ErrorClass>) {
        if let Some(rec) = &self.rec {
            rec.record(Protocol::Eas, command_name(cmd), latency, outcome);
        }
    }

    /// Counts an EAS `Status` code `cmd` answered.
    fn note_status(&self, cmd: &str, code: u32) {
        if let Some(rec) = &self.rec {
            rec.status(Protocol::Eas, command_name(cmd), StatusKind::Eas, code);
        }
    }

    /// SmartReply (MS-ASCMD 2.2.1.19): `mime` (the reply the user wrote) sent as a reply to
    /// item `item_id` of folder `folder_id`, ReplaceMime absent (the server adds the original
    /// as it chooses), a copy saved in Sent Items. At 12.1 the MIME goes by SendMail.
    pub async fn smart_reply(
        &mut self,
        folder_id: &str,
        item_id: &str,
        mime: &[u8],
    ) -> Result<Answer> {
        self.smart(
            "SmartReply",
            composemail::SmartReply,
            folder_id,
            item_id,
            mime,
        )
        .await
    }

    /// SmartForward (MS-ASCMD 2.2.1.18): as [`EasClient::smart_reply`], a forward of the item
    /// (the server attaches the original).
    pub async fn smart_forward(
        &mut self,
        folder_id: &str,
        item_id: &str,
        mime: &[u8],
    ) -> Result<Answer> {
        self.smart(
            "SmartForward",
            composemail::SmartForward,
            folder_id,
            item_id,
            mime,
        )
        .await
    }

    async fn smart(
        &mut self,
        cmd: &'static str,
        root: super::codepages::Tag,
        folder_id: &str,
        item_id: &str,
        mime: &[u8],
    ) -> Result<Answer> {
        if self.version.is_none() {
            self.options().await?;
        }
        if self.version.is_some_and(|v| v.starts_with("12.")) {
            return self.send_mail(mime).await;
        }
        self.sent = self.sent.wrapping_add(1);
        let req = Element::new(root)
            .with(Element::text(
                composemail::ClientId,
                format!("{}-{}", self.cfg.device_id, self.sent),
            ))
            .with(Element::new(composemail::SaveInSentItems))
            .with(
                Element::new(composemail::Source)
                    .with(Element::text(composemail::FolderId, folder_id))
                    .with(Element::text(composemail::ItemId, item_id)),
            )
            .with(Element::opaque(composemail::MIME, mime.to_vec()));
        let answer = self.command(cmd, &req).await?;
        // Success is an empty answer; a body carries the failure's status.
        if let Some(status) = answer.body.as_ref().and_then(top_status) {
            if status != 1 {
                return Err(self.err(
                    ErrorClass::Rejected(Rejection::Other),
                    cmd,
                    format!("{cmd} status {status}"),
                ));
            }
        }
        Ok(answer)
    }

    /// Sync `Delete` of item `server_id` of `collection_id` (DeletesAsMoves off: gone, as an
    /// IMAP expunge). The answer's changes come back too (the key moves on past them, so they
    /// must not be dropped): see [`EasClient::sync_commands`].
    pub async fn sync_delete(
        &mut self,
        collection_id: &str,
        server_id: &str,
        window: u32,
    ) -> Result<SyncBatch> {
        let cmd = Element::new(airsync::Delete).with(Element::text(airsync::ServerId, server_id));
        self.sync_commands(collection_id, window, cmd).await
    }

    /// Sync `Change` flagging item `server_id` for follow-up (MS-ASEMAIL `Flag`, status 2).
    pub async fn sync_flag(
        &mut self,
        collection_id: &str,
        server_id: &str,
        window: u32,
    ) -> Result<SyncBatch> {
        let cmd = Element::new(airsync::Change)
            .with(Element::text(airsync::ServerId, server_id))
            .with(
                Element::new(airsync::ApplicationData).with(
                    Element::new(super::codepages::email::Flag)
                        .with(Element::text(super::codepages::email::FlagStatus, "2"))
                        .with(Element::text(
                            super::codepages::email::FlagType,
                            "Follow up",
                        )),
                ),
            );
        self.sync_commands(collection_id, window, cmd).await
    }

    /// A Sync of `collection_id` carrying one client command (`Delete`, `Change`): the
    /// server's changes in the same answer (full MIME, up to `window`), as [`EasClient::sync`]
    /// returns them. Errors: no sync key yet for the collection (Sync it first), a collection
    /// status other than 1, or a `Responses` status other than 1 for the command.
    pub async fn sync_commands(
        &mut self,
        collection_id: &str,
        window: u32,
        command: Element,
    ) -> Result<SyncBatch> {
        let key = self.sync_keys.get(collection_id).cloned().ok_or_else(|| {
            self.err(
                ErrorClass::Protocol,
                "Sync",
                format!("no sync key for collection {collection_id}: Sync it first"),
            )
        })?;
        // DeletesAsMoves off (a Delete removes the item); the changes in full MIME; the
        // command after the Options (MS-ASCMD's order of a Collection's children).
        let req = Element::new(airsync::Sync).with(
            Element::new(airsync::Collections).with(
                Element::new(airsync::Collection)
                    .with(Element::text(airsync::SyncKey, key))
                    .with(Element::text(airsync::CollectionId, collection_id))
                    .with(Element::text(airsync::DeletesAsMoves, "0"))
                    .with(Element::new(airsync::GetChanges))
                    .with(Element::text(airsync::WindowSize, window.to_string()))
                    .with(
                        Element::new(airsync::Options)
                            .with(
                                Element::new(airsyncbase::BodyPreference)
                                    .with(Element::text(airsyncbase::Type, "4")),
                            )
                            .with(Element::text(airsync::MIMESupport, "2")),
                    )
                    .with(Element::new(airsync::Commands).with(command)),
            ),
        );
        let answer = self.command("Sync", &req).await?;
        let (mut batch, new_key) = self.sync_answer(collection_id, answer.body.as_ref())?;
        batch.elapsed = answer.elapsed;
        if let Some(k) = new_key {
            self.sync_keys.insert(collection_id.to_owned(), k);
        }
        let responses = answer
            .body
            .as_ref()
            .and_then(|b| b.path(&[airsync::Collections]))
            .and_then(|c| {
                c.all(airsync::Collection)
                    .find(|c| c.child_text(airsync::CollectionId) == Some(collection_id))
            })
            .and_then(|c| c.child(airsync::Responses));
        if let Some(r) = responses {
            for e in r.elements() {
                let code = e
                    .child_text(airsync::Status)
                    .and_then(|s| s.trim().parse::<u32>().ok())
                    .unwrap_or(1);
                if code != 1 {
                    return Err(self.err(
                        ErrorClass::Rejected(Rejection::Other),
                        "Sync",
                        format!("Sync command status {code} in collection {collection_id}"),
                    ));
                }
            }
        }
        Ok(batch)
    }
}

/// A command's name as the recorder keeps it (a fixed set: memory follows the commands used).
fn command_name(cmd: &str) -> &'static str {
    const KNOWN: [&str; 16] = [
        "OPTIONS",
        "Provision",
        "FolderSync",
        "FolderCreate",
        "Sync",
        "SendMail",
        "SmartReply",
        "SmartForward",
        "MoveItems",
        "Ping",
        "ItemOperations",
        "Settings",
        "GetItemEstimate",
        "MeetingResponse",
        "Search",
        "ResolveRecipients",
    ];
    KNOWN
        .iter()
        .find(|k| **k == cmd)
        .copied()
        .unwrap_or("other")
}

/// The one place a latency is read off the clock (mbx-core's `Clock` goes here).
struct Exchange;

impl Exchange {
    fn elapsed(start: Instant) -> Duration {
        start.elapsed()
    }
}

/// A Sync request for one collection: priming (no options) or with a window and body options.
fn sync_request(collection_id: &str, key: &str, options: Option<(u32, bool)>) -> Element {
    let mut c = Element::new(airsync::Collection)
        .with(Element::text(airsync::SyncKey, key))
        .with(Element::text(airsync::CollectionId, collection_id));
    if let Some((window, mime)) = options {
        c = c
            .with(Element::new(airsync::DeletesAsMoves))
            .with(Element::new(airsync::GetChanges))
            .with(Element::text(airsync::WindowSize, window.to_string()));
        let body_pref = if mime {
            Element::new(airsyncbase::BodyPreference).with(Element::text(airsyncbase::Type, "4"))
        } else {
            Element::new(airsyncbase::BodyPreference)
                .with(Element::text(airsyncbase::Type, "1"))
                .with(Element::text(airsyncbase::TruncationSize, "5120"))
        };
        let mut o = Element::new(airsync::Options).with(body_pref);
        if mime {
            o = o.with(Element::text(airsync::MIMESupport, "2"));
        }
        c = c.with(o);
    }
    Element::new(airsync::Sync).with(Element::new(airsync::Collections).with(c))
}

/// The `Status` child of a command's root, as a number.
fn top_status(root: &Element) -> Option<u32> {
    root.elements()
        .find(|e| e.tag.token() == status_token(root.tag.page()) && e.tag.page() == root.tag.page())
        .and_then(|e| e.text_content())
        .and_then(|s| s.trim().parse().ok())
}

/// The token of `Status` on `page` (each command's page has its own).
fn status_token(page: u8) -> u8 {
    super::codepages::Tag::by_name(
        super::codepages::namespace(page).unwrap_or_default(),
        "Status",
    )
    .map(|t| t.token())
    .unwrap_or(0)
}

/// Percent-encodes a query value (RFC 3986 unreserved characters stay).
fn query_escape(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for b in s.bytes() {
        if b.is_ascii_alphanumeric() || matches!(b, b'-' | b'.' | b'_' | b'~') {
            out.push(char::from(b));
        } else {
            out.push_str(&format!("%{b:02X}"));
        }
    }
    out
}

/// The MIME of an item Sync returned with MIMESupport 2 (`airsyncbase:Body` of type 4, its
/// `Data`), as bytes.
pub fn item_mime(item: &Item) -> Option<&[u8]> {
    let body = item.data.child(airsyncbase::Body)?;
    body.child(airsyncbase::Data)?.bytes_content()
}

// Calendar and contacts (issue 38 item 3): the first Sync of a collection, a Sync over a date
// window, and Sync `Add` of new items. One block, apart from the mail commands above.

/// MS-ASCMD Sync `FilterType`: how far back a Sync of the Calendar reaches (0: all items).
pub mod filter_type {
    /// Every item.
    pub const ALL: u32 = 0;
    /// Items of the last 2 weeks (and all later ones).
    pub const TWO_WEEKS: u32 = 4;
    /// The last month.
    pub const ONE_MONTH: u32 = 5;
    /// The last 3 months.
    pub const THREE_MONTHS: u32 = 6;
    /// The last 6 months.
    pub const SIX_MONTHS: u32 = 7;
}

/// What the server made of one item of a Sync `Add`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Added {
    /// The ClientId sent with it.
    pub client_id: String,
    /// Its id in the collection.
    pub server_id: String,
}

impl EasClient {
    /// The first Sync of `collection_id` (SyncKey 0), unless the device has its key already:
    /// afterwards the collection's Syncs return its items. Returns whether a Sync was sent.
    pub async fn prime(&mut self, collection_id: &str) -> Result<bool> {
        if self.sync_keys.contains_key(collection_id) {
            return Ok(false);
        }
        let prime = sync_request(collection_id, "0", None);
        let answer = self.command("Sync", &prime).await?;
        let key = self.sync_answer(collection_id, answer.body.as_ref())?.1;
        let key = key.ok_or_else(|| {
            self.err(
                ErrorClass::Protocol,
                "Sync",
                format!("the first Sync of {collection_id} gave no SyncKey"),
            )
        })?;
        self.sync_keys.insert(collection_id.to_owned(), key);
        Ok(true)
    }

    /// Sync of a calendar or contacts collection: its changes since the last Sync, at most
    /// `window` items, only those of the date window `filter` ([`filter_type`]; None for
    /// Contacts, which have no dates), bodies as plain text cut at 5 KB. Primes the collection
    /// first when needed (that Sync is not in the batch's latency). A Sync refused for its key
    /// (status 3) starts the collection over from SyncKey 0 and is sent once
    /// more: its batch then has all the collection's items, and its latency both Syncs.
    pub async fn sync_filtered(
        &mut self,
        collection_id: &str,
        window: u32,
        filter: Option<u32>,
    ) -> Result<SyncBatch> {
        self.prime(collection_id).await?;
        let mut options = Element::new(airsync::Options);
        if let Some(f) = filter {
            options = options.with(Element::text(airsync::FilterType, f.to_string()));
        }
        let options = options.with(
            Element::new(airsyncbase::BodyPreference)
                .with(Element::text(airsyncbase::Type, "1"))
                .with(Element::text(airsyncbase::TruncationSize, "5120")),
        );
        let mut elapsed = Duration::ZERO;
        for attempt in 0..2 {
            let collection = Element::new(airsync::Collection)
                .with(Element::text(
                    airsync::SyncKey,
                    self.sync_key(collection_id),
                ))
                .with(Element::text(airsync::CollectionId, collection_id))
                .with(Element::new(airsync::DeletesAsMoves))
                .with(Element::new(airsync::GetChanges))
                .with(Element::text(airsync::WindowSize, window.to_string()))
                .with(options.clone());
            let req = Element::new(airsync::Sync)
                .with(Element::new(airsync::Collections).with(collection));
            let answer = self.command("Sync", &req).await?;
            elapsed += answer.elapsed;
            if attempt == 0 && self.start_over(collection_id, answer.body.as_ref()).await? {
                continue;
            }
            let (mut batch, key) = self.sync_answer(collection_id, answer.body.as_ref())?;
            batch.elapsed = elapsed;
            if let Some(k) = key {
                self.sync_keys.insert(collection_id.to_owned(), k);
            }
            return Ok(batch);
        }
        Err(self.err(
            ErrorClass::Protocol,
            "Sync",
            format!("{collection_id}: the Sync after a start over was refused too"),
        ))
    }

    /// After a Sync answer with status 3 (invalid sync key) for `collection_id`: starts the
    /// collection over from SyncKey 0, as MS-ASCMD tells a device to, and says so. SOGo 5.8
    /// answers 3 to a Sync of a calendar or contacts folder with the key a Sync `Add`
    /// returned, unless the Sync before had a FilterType other than 0. After a start over
    /// the collection's next Sync returns all its items again.
    async fn start_over(&mut self, collection_id: &str, body: Option<&Element>) -> Result<bool> {
        if collection_status(body, collection_id) != Some(3) {
            return Ok(false);
        }
        self.sync_keys.remove(collection_id);
        self.prime(collection_id).await?;
        Ok(true)
    }

    /// Sync `Add` of `items` (each an `ApplicationData`) to `collection_id`, in one Sync that
    /// asks for no server changes: the server's id for each, in the order sent, and the
    /// Sync's latency (with the Syncs of a start over, below). Each item's ClientId is the
    /// device's id and a counter. Any item the server refuses (its `Add` status not 1) fails
    /// the call, naming it. A Sync refused for its key (status 3) is sent once more after a
    /// Sync from key 0.
    pub async fn sync_add(
        &mut self,
        collection_id: &str,
        items: &[Element],
    ) -> Result<(Vec<Added>, Duration)> {
        self.prime(collection_id).await?;
        let mut key = self.sync_key(collection_id);
        let mut commands = Element::new(airsync::Commands);
        let mut ids = Vec::with_capacity(items.len());
        for data in items {
            self.sent = self.sent.wrapping_add(1);
            let id = format!("{}-{}", self.cfg.device_id, self.sent);
            commands = commands.with(
                Element::new(airsync::Add)
                    .with(Element::text(airsync::ClientId, id.as_str()))
                    .with(data.clone()),
            );
            ids.push(id);
        }
        let mut elapsed = Duration::ZERO;
        let mut answer = None;
        for attempt in 0..2 {
            let collection = Element::new(airsync::Collection)
                .with(Element::text(airsync::SyncKey, key.clone()))
                .with(Element::text(airsync::CollectionId, collection_id))
                .with(Element::text(airsync::GetChanges, "0"))
                .with(commands.clone());
            let req = Element::new(airsync::Sync)
                .with(Element::new(airsync::Collections).with(collection));
            let a = self.command("Sync", &req).await?;
            elapsed += a.elapsed;
            // Status 3 (see start_over): nothing of the refused Sync was added; add again.
            if attempt == 0 && self.start_over(collection_id, a.body.as_ref()).await? {
                key = self.sync_key(collection_id);
                continue;
            }
            answer = Some(a);
            break;
        }
        let answer =
            answer.ok_or_else(|| self.err(ErrorClass::Protocol, "Sync", "no answer to an Add"))?;
        let body = answer
            .body
            .as_ref()
            .ok_or_else(|| self.err(ErrorClass::Protocol, "Sync", "empty answer to an Add"))?;
        let key = self.sync_answer(collection_id, Some(body))?.1;
        if let Some(k) = key {
            self.sync_keys.insert(collection_id.to_owned(), k);
        }
        let responses = body
            .path(&[airsync::Collections])
            .and_then(|c| {
                c.all(airsync::Collection)
                    .find(|c| c.child_text(airsync::CollectionId) == Some(collection_id))
            })
            .and_then(|c| c.child(airsync::Responses));
        let mut by_client: HashMap<&str, (Option<&str>, u32)> = HashMap::new();
        for a in responses.into_iter().flat_map(|r| r.all(airsync::Add)) {
            let status = a
                .child_text(airsync::Status)
                .and_then(|s| s.trim().parse::<u32>().ok())
                .unwrap_or(0);
            if let Some(cid) = a.child_text(airsync::ClientId) {
                by_client.insert(cid, (a.child_text(airsync::ServerId), status));
            }
        }
        let mut added = Vec::with_capacity(ids.len());
        for id in ids {
            match by_client.get(id.as_str()) {
                Some((Some(sid), 1)) => added.push(Added {
                    server_id: (*sid).to_owned(),
                    client_id: id,
                }),
                Some((_, status)) => {
                    return Err(self.err(
                        ErrorClass::Rejected(Rejection::Other),
                        "Sync",
                        format!("Add {id} to {collection_id}: status {status}"),
                    ))
                }
                None => {
                    return Err(self.err(
                        ErrorClass::Protocol,
                        "Sync",
                        format!("no response to Add {id} in {collection_id}"),
                    ))
                }
            }
        }
        Ok((added, elapsed))
    }

    /// The device's login.
    pub fn user(&self) -> &str {
        &self.cfg.user
    }

    /// The endpoint, `scheme://host:port/path` (for errors and reports).
    pub fn server(&self) -> &str {
        &self.server
    }

    fn sync_key(&self, collection_id: &str) -> String {
        self.sync_keys
            .get(collection_id)
            .cloned()
            .unwrap_or_else(|| "0".to_owned())
    }
}

/// The `Status` of collection `collection_id` in a Sync answer.
fn collection_status(body: Option<&Element>, collection_id: &str) -> Option<u32> {
    body?
        .path(&[airsync::Collections])?
        .all(airsync::Collection)
        .find(|c| c.child_text(airsync::CollectionId) == Some(collection_id))?
        .child_text(airsync::Status)?
        .trim()
        .parse()
        .ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn urls_and_requests() {
        let c = EasClient::new(Config::new(
            "http://127.0.0.1:8080/SOGo/Microsoft-Server-ActiveSync",
            "u",
            "p",
            "dev1",
        ))
        .expect("valid");
        assert_eq!(
            c.server,
            "http://127.0.0.1:8080/SOGo/Microsoft-Server-ActiveSync"
        );
        let c =
            EasClient::new(Config::new("http://mail.example.com", "u", "p", "d")).expect("valid");
        assert_eq!(
            c.server,
            "http://mail.example.com:80/Microsoft-Server-ActiveSync"
        );
        assert!(EasClient::new(Config::new("https://mail.example.com/", "u", "p", "d")).is_err());
        assert!(EasClient::new(Config::new("ftp://x/", "u", "p", "d")).is_err());
        assert_eq!(query_escape("a b@c/d"), "a%20b%40c%2Fd");
        let root = Element::new(folderhierarchy::FolderSync)
            .with(Element::text(folderhierarchy::Status, "142"));
        assert_eq!(top_status(&root), Some(142));
        assert!(wants_provision(142) && wants_provision(144) && !wants_provision(1));
    }
}
