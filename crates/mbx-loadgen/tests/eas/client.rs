//! The ActiveSync client against a scripted server in this process (SOGo never asks for
//! Provision, Exchange does): version negotiation, HTTP 449 and status 144 answered by the
//! two-step Provision, the policy key sent afterwards, and the bounds (answer size, the one
//! timeout per request, a 401); calendar Sync `Add` and Sync starting over after status 3 as
//! SOGo needs (the keys sent, in order).

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use mbx_loadgen::eas::client::{folder_type, Config, EasClient};
use mbx_loadgen::eas::codepages::{airsync, folderhierarchy, moveitems, provision, settings};
use mbx_loadgen::eas::{decode, encode, Element, Limits};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};

/// One request as the server saw it.
#[derive(Debug, Clone)]
struct Seen {
    method: String,
    target: String,
    headers: Vec<(String, String)>,
    body: Option<Element>,
    raw: Vec<u8>,
}

impl Seen {
    fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(k, _)| k.eq_ignore_ascii_case(name))
            .map(|(_, v)| v.as_str())
    }
}

/// What the scripted server answers: status, extra headers, body.
type Reply = (u16, Vec<(&'static str, String)>, Vec<u8>);

async fn read_request(s: &mut TcpStream) -> Option<Seen> {
    let mut buf = Vec::new();
    let mut chunk = [0u8; 4096];
    let head_end = loop {
        if let Some(p) = buf.windows(4).position(|w| w == b"\r\n\r\n") {
            break p + 4;
        }
        let n = s.read(&mut chunk).await.ok()?;
        if n == 0 {
            return None;
        }
        buf.extend_from_slice(&chunk[..n]);
    };
    let head = String::from_utf8_lossy(&buf[..head_end]).into_owned();
    let mut lines = head.split("\r\n");
    let mut first = lines.next()?.split(' ');
    let (method, target) = (first.next()?.to_owned(), first.next()?.to_owned());
    let headers: Vec<(String, String)> = lines
        .filter_map(|l| l.split_once(':'))
        .map(|(k, v)| (k.trim().to_owned(), v.trim().to_owned()))
        .collect();
    let len: usize = headers
        .iter()
        .find(|(k, _)| k.eq_ignore_ascii_case("content-length"))
        .and_then(|(_, v)| v.parse().ok())
        .unwrap_or(0);
    let mut body = buf[head_end..].to_vec();
    while body.len() < len {
        let n = s.read(&mut chunk).await.ok()?;
        if n == 0 {
            return None;
        }
        body.extend_from_slice(&chunk[..n]);
    }
    let wbxml = headers
        .iter()
        .any(|(k, v)| k.eq_ignore_ascii_case("content-type") && v.contains("wbxml"));
    let tree =
        (wbxml && !body.is_empty()).then(|| decode(&body, &Limits::default()).expect("WBXML"));
    Some(Seen {
        method,
        target,
        headers,
        body: tree,
        raw: body,
    })
}

/// A server on 127.0.0.1 answering each request with `reply(index, request)`, keeping
/// connections open; every request is recorded.
async fn server(
    reply: impl Fn(usize, &Seen) -> Option<Reply> + Send + Sync + 'static,
) -> (String, Arc<Mutex<Vec<Seen>>>) {
    let listener = TcpListener::bind("127.0.0.1:0").await.expect("bind");
    let url = format!(
        "http://{}/Microsoft-Server-ActiveSync",
        listener.local_addr().expect("addr")
    );
    let seen = Arc::new(Mutex::new(Vec::new()));
    let reply = Arc::new(reply);
    let log = seen.clone();
    tokio::spawn(async move {
        loop {
            let Ok((mut s, _)) = listener.accept().await else {
                return;
            };
            let (log, reply) = (log.clone(), reply.clone());
            tokio::spawn(async move {
                while let Some(req) = read_request(&mut s).await {
                    let i = {
                        let mut l = log.lock().expect("lock");
                        l.push(req.clone());
                        l.len() - 1
                    };
                    // None: never answer (a hung server).
                    let Some((status, headers, body)) = reply(i, &req) else {
                        tokio::time::sleep(Duration::from_secs(30)).await;
                        return;
                    };
                    let mut out =
                        format!("HTTP/1.1 {status} X\r\nContent-Length: {}\r\n", body.len());
                    for (k, v) in headers {
                        out.push_str(&format!("{k}: {v}\r\n"));
                    }
                    out.push_str("\r\n");
                    let mut bytes = out.into_bytes();
                    bytes.extend_from_slice(&body);
                    if s.write_all(&bytes).await.is_err() {
                        return;
                    }
                }
            });
        }
    });
    (url, seen)
}

fn wbxml(e: &Element) -> Vec<u8> {
    encode(e, 64).expect("encodes")
}

fn options_reply() -> Reply {
    (
        200,
        vec![("MS-ASProtocolVersions", "2.5,12.0,12.1,14.0,14.1".into())],
        Vec::new(),
    )
}

fn provision_reply(key: &str) -> Reply {
    let body = Element::new(provision::Provision)
        .with(Element::text(provision::Status, "1"))
        .with(
            Element::new(provision::Policies).with(
                Element::new(provision::Policy)
                    .with(Element::text(
                        provision::PolicyType,
                        "MS-EAS-Provisioning-WBXML",
                    ))
                    .with(Element::text(provision::Status, "1"))
                    .with(Element::text(provision::PolicyKey, key)),
            ),
        );
    (200, Vec::new(), wbxml(&body))
}

fn folder_sync_reply() -> Reply {
    let add = |id: &str, name: &str, kind: u32| {
        Element::new(folderhierarchy::Add)
            .with(Element::text(folderhierarchy::ServerId, id))
            .with(Element::text(folderhierarchy::ParentId, "0"))
            .with(Element::text(folderhierarchy::DisplayName, name))
            .with(Element::text(folderhierarchy::Type, kind.to_string()))
    };
    let body = Element::new(folderhierarchy::FolderSync)
        .with(Element::text(folderhierarchy::Status, "1"))
        .with(Element::text(folderhierarchy::SyncKey, "1"))
        .with(
            Element::new(folderhierarchy::Changes)
                .with(Element::text(folderhierarchy::Count, "3"))
                .with(add("mail%2Finbox", "Inbox", 2))
                .with(add("vevent%2Fpersonal", "Calendar", 8))
                .with(add("vcard%2Fpersonal", "Contacts", 9)),
        );
    (200, Vec::new(), wbxml(&body))
}

fn cmd(s: &Seen) -> &str {
    s.target
        .split(['?', '&'])
        .find_map(|p| p.strip_prefix("Cmd="))
        .unwrap_or("")
}

#[tokio::test]
async fn a_server_that_requires_provision_gets_the_two_step_policy_key() {
    // Set once the server has asked for a policy refresh (status 144).
    let refreshed = Arc::new(AtomicBool::new(false));
    let (url, seen) = server(move |_, req| {
        let key = req.header("X-MS-PolicyKey").map(str::to_owned);
        Some(match (req.method.as_str(), cmd(req), key.as_deref()) {
            ("OPTIONS", _, _) => options_reply(),
            // Not provisioned: HTTP 449 to every command but Provision.
            ("POST", "FolderSync", None | Some("1111")) => (449, Vec::new(), Vec::new()),
            ("POST", "Provision", None) if refreshed.load(Ordering::SeqCst) => {
                provision_reply("3333")
            }
            ("POST", "Provision", None) => provision_reply("1111"),
            ("POST", "Provision", Some("1111")) => provision_reply("2222"),
            ("POST", "FolderSync", Some("2222")) => folder_sync_reply(),
            // A policy refresh (status 144 in the answer) once the key is 2222.
            ("POST", "Sync", Some("2222")) => {
                refreshed.store(true, Ordering::SeqCst);
                let body = Element::new(airsync::Sync).with(Element::text(airsync::Status, "144"));
                (200, Vec::new(), wbxml(&body))
            }
            ("POST", "Provision", Some("3333")) => provision_reply("4444"),
            // No changes: HTTP 200, empty body.
            ("POST", "Sync", Some("4444")) => (200, Vec::new(), Vec::new()),
            _ => (500, Vec::new(), Vec::new()),
        })
    })
    .await;
    let mut dev =
        EasClient::new(Config::new(&url, "user1", "secret", "DEV0001")).expect("valid URL");
    let offered = dev.options().await.expect("OPTIONS");
    assert_eq!(offered.len(), 5);
    assert_eq!(dev.version(), Some("14.1"));
    dev.folder_sync().await.expect("FolderSync after Provision");
    assert_eq!(dev.policy_key(), Some("2222"));
    assert_eq!(
        dev.folder(folder_type::CALENDAR)
            .map(|f| f.server_id.as_str()),
        Some("vevent%2Fpersonal"),
        "ids are kept exactly as sent"
    );
    let batch = dev.sync("mail%2Finbox", 25, false).await.expect("Sync");
    assert!(batch.added.is_empty());
    assert_eq!(dev.policy_key(), Some("4444"));

    let seen = seen.lock().expect("lock").clone();
    let trail: Vec<String> = seen
        .iter()
        .map(|s| format!("{} {}", cmd(s), s.header("X-MS-PolicyKey").unwrap_or("-")))
        .collect();
    assert_eq!(
        trail,
        [
            " -",
            "FolderSync -",
            "Provision -",
            "Provision 1111",
            "FolderSync 2222",
            "Sync 2222",
            "Provision -",
            "Provision 3333",
            "Sync 4444",
            "Sync 4444",
        ],
        "OPTIONS; 449; the two steps; the command again; 144; the two steps; the Sync again; the Sync with the window"
    );
    for s in &seen {
        assert_eq!(s.header("Authorization"), Some("Basic dXNlcjE6c2VjcmV0"));
        if s.method == "POST" {
            assert_eq!(s.header("MS-ASProtocolVersion"), Some("14.1"));
            assert_eq!(
                s.header("Content-Type"),
                Some("application/vnd.ms-sync.wbxml")
            );
            assert!(
                s.target
                    .contains("&User=user1&DeviceId=DEV0001&DeviceType="),
                "{}",
                s.target
            );
        }
    }
    // The first Provision carries the device's information (14.1) and the policy type; the
    // acknowledgement the temporary key with status 1.
    let first = seen[2].body.as_ref().expect("a body");
    assert!(first.child(settings::DeviceInformation).is_some());
    let ack = seen[3].body.as_ref().expect("a body");
    let policy = ack
        .path(&[provision::Policies, provision::Policy])
        .expect("a policy");
    assert_eq!(policy.child_text(provision::PolicyKey), Some("1111"));
    assert_eq!(policy.child_text(provision::Status), Some("1"));
    assert_eq!(
        policy.child_text(provision::PolicyType),
        Some("MS-EAS-Provisioning-WBXML")
    );
}

#[tokio::test]
async fn bounds_timeouts_and_auth_are_errors_by_class() {
    let (url, _) = server(|_, req| match (req.method.as_str(), cmd(req)) {
        ("OPTIONS", _) if req.header("Authorization") != Some("Basic dXNlcjE6c2VjcmV0") => {
            Some((401, Vec::new(), Vec::new()))
        }
        ("OPTIONS", _) => Some(options_reply()),
        ("POST", "FolderSync") => Some((200, Vec::new(), vec![0u8; 2000])),
        // Ping: never answered.
        _ => None,
    })
    .await;
    let mut bad = EasClient::new(Config::new(&url, "user1", "wrong", "D1")).expect("URL");
    assert_eq!(bad.options().await.expect_err("401").class.name(), "auth");

    let mut cfg = Config::new(&url, "user1", "secret", "D2");
    cfg.max_response = 1000;
    cfg.timeout = Duration::from_millis(300);
    let mut dev = EasClient::new(cfg).expect("URL");
    let e = dev
        .folder_sync()
        .await
        .expect_err("an answer over the limit");
    assert_eq!(e.class.name(), "protocol", "{e}");
    assert!(e.detail.contains("limit"), "{e}");
    let started = tokio::time::Instant::now();
    let e = dev
        .command(
            "Ping",
            &Element::new(mbx_loadgen::eas::codepages::ping::Ping),
        )
        .await
        .expect_err("no answer");
    assert_eq!(e.class.name(), "timeout", "{e}");
    assert!(started.elapsed() < Duration::from_secs(5));
}

#[tokio::test]
async fn a_version_the_client_does_not_speak_is_refused() {
    let (url, _) = server(|_, _| {
        Some((
            200,
            vec![("MS-ASProtocolVersions", "2.5,12.0".into())],
            Vec::new(),
        ))
    })
    .await;
    let mut dev = EasClient::new(Config::new(&url, "u", "p", "D3")).expect("URL");
    let e = dev.options().await.expect_err("no common version");
    assert_eq!(e.class.name(), "protocol", "{e}");
    assert!(e.detail.contains("2.5,12.0"), "{e}");
}

#[tokio::test]
async fn send_mail_at_12_1_is_raw_mime_and_move_items_returns_the_new_id() {
    let (url, seen) = server(|_, req| {
        Some(match (req.method.as_str(), cmd(req)) {
            ("OPTIONS", _) => (
                200,
                vec![("MS-ASProtocolVersions", "2.5,12.0,12.1".into())],
                Vec::new(),
            ),
            ("POST", "SendMail") => (200, Vec::new(), Vec::new()),
            ("POST", "MoveItems") => {
                let body = Element::new(moveitems::MoveItems).with(
                    Element::new(moveitems::Response)
                        .with(Element::text(moveitems::SrcMsgId, "5:1"))
                        .with(Element::text(moveitems::Status, "3"))
                        .with(Element::text(moveitems::DstMsgId, "9:1")),
                );
                (200, Vec::new(), wbxml(&body))
            }
            _ => (500, Vec::new(), Vec::new()),
        })
    })
    .await;
    let mut dev = EasClient::new(Config::new(&url, "user1", "secret", "DEV12")).expect("URL");
    let mime = b"From: a@example.com\r\nTo: b@example.com\r\nSubject: x\r\n\r\nbody\r\n";
    dev.send_mail(mime).await.expect("SendMail");
    assert_eq!(dev.version(), Some("12.1"));
    assert_eq!(
        dev.move_item("5:1", "5", "9").await.expect("MoveItems"),
        "9:1"
    );
    let seen = seen.lock().expect("lock").clone();
    let send = &seen[1];
    assert_eq!(send.header("Content-Type"), Some("message/rfc822"));
    assert!(send.target.contains("Cmd=SendMail") && send.target.ends_with("&SaveInSent=T"));
    assert_eq!(send.raw, mime);
    let mv = seen[2].body.as_ref().expect("WBXML");
    let m = mv.child(moveitems::Move).expect("Move");
    assert_eq!(
        (
            m.child_text(moveitems::SrcMsgId),
            m.child_text(moveitems::SrcFldId),
            m.child_text(moveitems::DstFldId)
        ),
        (Some("5:1"), Some("5"), Some("9"))
    );
}

/// A Sync answer for the calendar: `key`, `status`, and `inner` (Responses or Commands).
fn calendar_sync_reply(key: &str, status: &str, inner: Option<Element>) -> Reply {
    let mut c = Element::new(airsync::Collection)
        .with(Element::text(airsync::Class, "Calendar"))
        .with(Element::text(airsync::SyncKey, key))
        .with(Element::text(airsync::CollectionId, "vevent%2Fpersonal"))
        .with(Element::text(airsync::Status, status));
    if let Some(i) = inner {
        c = c.with(i);
    }
    let body = Element::new(airsync::Sync).with(Element::new(airsync::Collections).with(c));
    (200, Vec::new(), wbxml(&body))
}

#[tokio::test]
async fn calendar_adds_and_syncs_start_over_after_status_3_as_sogo_needs() {
    use mbx_loadgen::eas::calendar::{busy, Appointment};
    use mbx_loadgen::eas::codepages::calendar;
    // SOGo 5.8 as measured: key 0 primes to -1; an Add with -1 answers K1; any Sync with K1
    // is refused with status 3; a Sync with -1 and no commands gives the items and K2; an Add
    // whose subject is "refused" gets Add status 6.
    let (url, seen) = server(|_, req| {
        if req.method == "OPTIONS" {
            return Some(options_reply());
        }
        let c = req
            .body
            .as_ref()
            .and_then(|b| b.path(&[airsync::Collections, airsync::Collection]))?;
        let key = c.child_text(airsync::SyncKey).unwrap_or_default();
        let adds: Vec<&Element> = c
            .child(airsync::Commands)
            .map(|cmds| cmds.all(airsync::Add).collect())
            .unwrap_or_default();
        Some(match key {
            "0" => calendar_sync_reply("-1", "1", None),
            "K1" => calendar_sync_reply("0", "3", None),
            "-1" | "K2" if !adds.is_empty() => {
                let mut r = Element::new(airsync::Responses);
                for (n, a) in adds.iter().enumerate() {
                    let refused = a
                        .path(&[airsync::ApplicationData, calendar::Subject])
                        .and_then(|s| s.text_content())
                        == Some("refused");
                    r = r.with(
                        Element::new(airsync::Add)
                            .with(Element::text(
                                airsync::ClientId,
                                a.child_text(airsync::ClientId).unwrap_or_default(),
                            ))
                            .with(Element::text(airsync::ServerId, format!("ev-{n}")))
                            .with(Element::text(
                                airsync::Status,
                                if refused { "6" } else { "1" },
                            )),
                    );
                }
                calendar_sync_reply("K1", "1", Some(r))
            }
            "-1" => {
                let add = |id: &str| {
                    Element::new(airsync::Add)
                        .with(Element::text(airsync::ServerId, id))
                        .with(Element::new(airsync::ApplicationData))
                };
                calendar_sync_reply(
                    "K2",
                    "1",
                    Some(
                        Element::new(airsync::Commands)
                            .with(add("ev-0"))
                            .with(add("ev-1")),
                    ),
                )
            }
            _ => (500, Vec::new(), Vec::new()),
        })
    })
    .await;
    let cal = "vevent%2Fpersonal";
    let item = |subject: &str| {
        Appointment {
            uid: "u1".into(),
            subject: subject.into(),
            location: String::new(),
            start: 1_796_216_400,
            end: 1_796_220_000,
            body: String::new(),
            busy_status: busy::BUSY,
            reminder: None,
            dtstamp: 1_796_216_400,
        }
        .to_application_data()
    };
    let mut dev = EasClient::new(Config::new(&url, "user1", "secret", "DEVCAL")).expect("URL");
    let (first, _) = dev.sync_add(cal, &[item("one")]).await.expect("first Add");
    assert_eq!(first[0].server_id, "ev-0");
    assert_eq!(first[0].client_id, "DEVCAL-1");
    // The second Add's key is refused: the device starts over and adds again, once.
    let (second, _) = dev
        .sync_add(cal, &[item("two"), item("three")])
        .await
        .expect("second Add");
    assert_eq!(
        second
            .iter()
            .map(|a| a.server_id.as_str())
            .collect::<Vec<_>>(),
        ["ev-0", "ev-1"]
    );
    // So is the browse after it: started over, it gets every item.
    let batch = dev
        .sync_filtered(cal, 50, None)
        .await
        .expect("Sync after status 3");
    assert_eq!(batch.added.len(), 2);
    // An item the server refuses fails the call, naming it.
    let e = dev
        .sync_add(cal, &[item("refused")])
        .await
        .expect_err("Add status 6");
    assert!(e.detail.contains("status 6"), "{e}");

    let keys: Vec<(String, bool)> = seen
        .lock()
        .expect("lock")
        .iter()
        .filter_map(|s| {
            let c = s
                .body
                .as_ref()?
                .path(&[airsync::Collections, airsync::Collection])?;
            Some((
                c.child_text(airsync::SyncKey)?.to_owned(),
                c.child(airsync::Commands).is_some(),
            ))
        })
        .collect();
    let want: Vec<(String, bool)> = [
        ("0", false),
        ("-1", true),
        ("K1", true),
        ("0", false),
        ("-1", true),
        ("K1", false),
        ("0", false),
        ("-1", false),
        ("K2", true),
    ]
    .iter()
    .map(|(k, c)| (k.to_string(), *c))
    .collect();
    assert_eq!(keys, want);
}
