//! Arbitrary bytes as a server's replies, to each protocol client (issue 34): whatever a server
//! sends, a session ends by its deadline (every wait timed out), never panics, and allocates no
//! more than its bounds allow (lines, literals, multi-line answers), measured by a counting
//! allocator. One test per protocol in this binary of its own, run one after the other (the
//! allocator's peak is process-wide).

#![allow(unsafe_code)] // The counting allocator below: GlobalAlloc is an unsafe trait.

use std::alloc::{GlobalAlloc, Layout, System};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Mutex;
use std::time::{Duration, Instant};

use mbx_loadgen::conn::{Limits, Timeouts};
use mbx_loadgen::{
    AuthMechanism, Endpoint, ImapClient, Pop3Client, Recorder, Security, SmtpClient,
};
use proptest::prelude::*;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpListener;

/// The system allocator, counting the bytes live and their peak.
struct Counting;

static LIVE: AtomicUsize = AtomicUsize::new(0);
static PEAK: AtomicUsize = AtomicUsize::new(0);

// SAFETY: every call is passed to the system allocator unchanged; only counters are added.
unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        // SAFETY: the caller's contract is the system allocator's.
        let p = unsafe { System.alloc(layout) };
        if !p.is_null() {
            let now = LIVE.fetch_add(layout.size(), Ordering::Relaxed) + layout.size();
            PEAK.fetch_max(now, Ordering::Relaxed);
        }
        p
    }

    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        LIVE.fetch_sub(layout.size(), Ordering::Relaxed);
        // SAFETY: as above.
        unsafe { System.dealloc(ptr, layout) }
    }
}

#[global_allocator]
static ALLOC: Counting = Counting;

/// One test at a time (the peak is process-wide).
static SERIAL: Mutex<()> = Mutex::new(());

/// The command timeout of every session here.
const COMMAND: Duration = Duration::from_millis(200);

/// The most a session may allocate above what was live when it started: its read buffer (a
/// line of at most `limits.line`), one answer of at most `limits.message` (IMAP: 16 of them),
/// the lines of a multi-line answer, and the runtime's and the listener's own small change.
const ALLOCATION_BOUND: usize = 1 << 20;

fn ep(port: u16) -> Endpoint {
    let mut e = Endpoint::new("127.0.0.1", port, Security::Plain, None);
    e.timeouts = Timeouts {
        connect: Duration::from_secs(2),
        command: COMMAND,
    };
    e.limits = Limits {
        line: 1024,
        message: 16 * 1024,
        lines: 100,
    };
    e
}

/// A server that writes `script` after accepting, reads whatever comes, and closes at once or
/// after `hold`.
async fn scripted(script: Vec<u8>, hold: Duration) -> u16 {
    let l = TcpListener::bind("127.0.0.1:0").await.expect("bind");
    let port = l.local_addr().expect("addr").port();
    tokio::spawn(async move {
        if let Ok((mut s, _)) = l.accept().await {
            let _ = s.write_all(&script).await;
            let deadline = tokio::time::sleep(hold);
            tokio::pin!(deadline);
            let mut buf = [0u8; 4096];
            loop {
                tokio::select! {
                    _ = &mut deadline => break,
                    r = s.read(&mut buf) => if matches!(r, Ok(0) | Err(_)) { break },
                }
            }
        }
    });
    port
}

/// Runs `session` against a server saying `script`: it must end within `steps` command
/// timeouts (plus a second of slack) and allocate at most [`ALLOCATION_BOUND`] more than was
/// live at its start.
fn check<F, Fut>(rt: &tokio::runtime::Runtime, script: Vec<u8>, hold: bool, steps: u32, session: F)
where
    F: FnOnce(u16) -> Fut,
    Fut: std::future::Future<Output = ()>,
{
    rt.block_on(async {
        let hold = if hold {
            Duration::from_secs(3)
        } else {
            Duration::ZERO
        };
        let port = scripted(script, hold).await;
        let base = LIVE.load(Ordering::Relaxed);
        PEAK.store(base, Ordering::Relaxed);
        let t = Instant::now();
        let limit = COMMAND * steps + Duration::from_secs(1);
        let ended = tokio::time::timeout(limit + Duration::from_secs(2), session(port)).await;
        assert!(ended.is_ok(), "the session did not end");
        assert!(
            t.elapsed() <= limit,
            "took {:?}, deadline {limit:?}",
            t.elapsed()
        );
        let grew = PEAK.load(Ordering::Relaxed).saturating_sub(base);
        assert!(
            grew <= ALLOCATION_BOUND,
            "allocated {grew} bytes past the start"
        );
    });
}

fn runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("runtime")
}

/// Replies: arbitrary bytes, or a valid opening of the protocol then arbitrary bytes (to reach
/// the later commands), some with protocol-looking pieces (literals, continuation lines).
fn replies(opening: &'static [u8]) -> impl Strategy<Value = (Vec<u8>, bool)> {
    let noise = prop_oneof![
        proptest::collection::vec(any::<u8>(), 0..4096),
        proptest::collection::vec(
            prop_oneof![
                Just(b"\r\n".to_vec()),
                Just(b"{99999999}\r\n".to_vec()),
                Just(b"{10}\r\n".to_vec()),
                Just(b"* 1 FETCH (UID 1 BODY[] {5}\r\n".to_vec()),
                Just(b"250-".to_vec()),
                Just(b"+OK ".to_vec()),
                Just(b".\r\n".to_vec()),
                Just(b"A2 OK\r\n".to_vec()),
                Just(b"* BYE\r\n".to_vec()),
                Just(vec![0x1b, b'[', b'2', b'J']),
                proptest::collection::vec(any::<u8>(), 0..64),
            ],
            0..200
        )
        .prop_map(|parts| parts.concat()),
    ];
    (any::<bool>(), noise, any::<bool>()).prop_map(move |(open, noise, hold)| {
        let mut s = if open { opening.to_vec() } else { Vec::new() };
        s.extend(noise);
        (s, hold)
    })
}

fn config() -> ProptestConfig {
    ProptestConfig {
        cases: 40,
        failure_persistence: None,
        ..ProptestConfig::default()
    }
}

#[test]
fn smtp_survives_arbitrary_replies() {
    let _one = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let rt = runtime();
    proptest!(config(), |((script, hold) in replies(b"220 hi\r\n250-x\r\n250 AUTH PLAIN\r\n"))| {
        // connect (greeting, EHLO), AUTH, MAIL, RCPT, DATA, the message, QUIT.
        check(&rt, script, hold, 8, |port| async move {
            let Ok(mut c) = SmtpClient::connect(&ep(port), "c", Recorder::new()).await else {
                return;
            };
            if c.auth("u", "pw", AuthMechanism::Plain).await.is_err() {
                return;
            }
            if c.send("a@d.test", &["b@d.test"], b"Subject: x\r\n\r\nhi\r\n").await.is_err() {
                return;
            }
            let _ = c.quit().await;
        });
    });
}

#[test]
fn imap_survives_arbitrary_replies() {
    let _one = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let rt = runtime();
    proptest!(config(), |((script, hold) in replies(b"* OK hi\r\n* CAPABILITY IMAP4rev1 IDLE\r\nA1 OK\r\n"))| {
        // connect (greeting, CAPABILITY), LOGIN (and CAPABILITY), SELECT, UID FETCH, IDLE, the
        // wait, DONE, LOGOUT.
        check(&rt, script, hold, 10, |port| async move {
            let Ok(mut c) = ImapClient::connect(&ep(port), Recorder::new()).await else {
                return;
            };
            if c.login("u", "pw").await.is_err() || c.select("INBOX").await.is_err() {
                return;
            }
            if c.uid_fetch("1:*", "(UID FLAGS BODY.PEEK[])").await.is_err() {
                return;
            }
            if c.idle().await.is_ok() {
                let _ = c.idle_wait(COMMAND).await;
                let _ = c.done().await;
            }
            let _ = c.logout().await;
        });
    });
}

#[test]
fn pop3_survives_arbitrary_replies() {
    let _one = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let rt = runtime();
    proptest!(config(), |((script, hold) in replies(b"+OK hi\r\n+OK\r\n+OK\r\n"))| {
        // connect, USER, PASS, STAT, UIDL, LIST, RETR, QUIT.
        check(&rt, script, hold, 9, |port| async move {
            let Ok(mut c) = Pop3Client::connect(&ep(port), Recorder::new()).await else {
                return;
            };
            if c.login("u", "pw").await.is_err() || c.stat().await.is_err() {
                return;
            }
            if c.uidl().await.is_err() || c.list().await.is_err() || c.retr(1).await.is_err() {
                return;
            }
            let _ = c.quit().await;
        });
    });
}
