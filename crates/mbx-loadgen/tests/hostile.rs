//! Network input is hostile: a server that sends too much, too little, nothing, or nonsense gets
//! a classed error within the bounds and timeouts, never a hang or unbounded memory. The
//! "servers" here are scripted TCP listeners on loopback (the protocol tests use real Postfix
//! and Dovecot: tests/server.rs).

use std::time::{Duration, Instant};

use mbx_loadgen::conn::{Limits, Timeouts};
use mbx_loadgen::{Endpoint, ErrorClass, ImapClient, Pop3Client, Recorder, Security, SmtpClient};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpListener;

/// A server that writes `script` after accepting (reading whatever comes), then stays open for
/// `hold` or closes.
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

fn ep(port: u16) -> Endpoint {
    let mut e = Endpoint::new("127.0.0.1", port, Security::Plain, None);
    e.timeouts = Timeouts {
        connect: Duration::from_secs(2),
        command: Duration::from_millis(500),
    };
    e.limits = Limits {
        line: 1024,
        message: 4096,
        lines: 100,
    };
    e
}

#[tokio::test]
async fn an_overlong_line_is_a_protocol_error_not_a_buffer_that_grows() {
    let mut script = b"220 ".to_vec();
    script.extend(std::iter::repeat_n(b'x', 100_000));
    let port = scripted(script, Duration::from_secs(5)).await;
    let e = SmtpClient::connect(&ep(port), "c", Recorder::new())
        .await
        .err()
        .expect("refused");
    assert_eq!(e.class, ErrorClass::Protocol, "{e}");
    assert!(e.detail.contains("longer than 1024"), "{e}");
}

#[tokio::test]
async fn an_oversized_literal_is_refused_before_it_is_read() {
    let script = b"* OK ready\r\n* CAPABILITY IMAP4rev1 {999999999}\r\n".to_vec();
    let port = scripted(script, Duration::from_secs(5)).await;
    let e = ImapClient::connect(&ep(port), Recorder::new())
        .await
        .err()
        .expect("refused");
    assert_eq!(
        (e.class, e.command.as_str()),
        (ErrorClass::Protocol, "CAPABILITY"),
        "{e}"
    );
    assert!(e.detail.contains("literal of 999999999 bytes"), "{e}");
}

#[tokio::test]
async fn a_silent_server_is_a_timeout_within_the_command_timeout() {
    let port = scripted(Vec::new(), Duration::from_secs(5)).await;
    let t = Instant::now();
    let e = Pop3Client::connect(&ep(port), Recorder::new())
        .await
        .err()
        .expect("times out");
    assert_eq!(
        (e.class, e.command.as_str()),
        (ErrorClass::Timeout, "connect"),
        "{e}"
    );
    assert!(t.elapsed() < Duration::from_secs(2), "{:?}", t.elapsed());
}

#[tokio::test]
async fn a_server_that_closes_mid_answer_is_a_disconnect() {
    let port = scripted(b"220 hi\r\n250-mail\r\n250-PIPE".to_vec(), Duration::ZERO).await;
    let e = SmtpClient::connect(&ep(port), "c", Recorder::new())
        .await
        .err()
        .expect("closed");
    assert_eq!(
        (e.class, e.command.as_str()),
        (ErrorClass::Disconnect, "EHLO"),
        "{e}"
    );
}

#[tokio::test]
async fn nonsense_is_a_protocol_error_and_a_pop3_answer_too_long_is_cut() {
    let port = scripted(
        b"HTTP/1.1 400 Bad Request\r\n\r\n".to_vec(),
        Duration::from_secs(5),
    )
    .await;
    let e = SmtpClient::connect(&ep(port), "c", Recorder::new())
        .await
        .err()
        .expect("nonsense");
    assert_eq!(e.class, ErrorClass::Protocol, "{e}");

    let mut script = b"+OK ready\r\n+OK\r\n+OK\r\n+OK\r\n".to_vec();
    for _ in 0..200 {
        script.extend_from_slice(b"line of a message that never ends\r\n");
    }
    let port = scripted(script, Duration::from_secs(5)).await;
    let mut pop = Pop3Client::connect(&ep(port), Recorder::new())
        .await
        .expect("greeting");
    pop.login("u", "p").await.expect("USER/PASS");
    let e = pop.retr(1).await.expect_err("bounded");
    assert_eq!(
        (e.class, e.command.as_str()),
        (ErrorClass::Protocol, "RETR"),
        "{e}"
    );
}

#[tokio::test]
async fn starttls_refused_or_not_offered_never_falls_back_to_plaintext() {
    let tls = mbx_loadgen::tls::client_config(&mbx_loadgen::Trust::Insecure).expect("config");
    // Not offered.
    let port = scripted(b"220 hi\r\n250 mail\r\n".to_vec(), Duration::from_secs(5)).await;
    let mut e1 = ep(port);
    e1.security = Security::StartTls;
    e1.tls = Some(tls.clone());
    let e = SmtpClient::connect(&e1, "c", Recorder::new())
        .await
        .err()
        .expect("no STARTTLS");
    assert_eq!(
        (e.class, e.command.as_str()),
        (ErrorClass::Tls, "STARTTLS"),
        "{e}"
    );
    // Accepted, but with plaintext injected after the go-ahead (CVE-2011-0411).
    let port = scripted(
        b"220 hi\r\n250-mail\r\n250 STARTTLS\r\n220 go ahead\r\n250 injected\r\n".to_vec(),
        Duration::from_secs(5),
    )
    .await;
    let mut e2 = ep(port);
    e2.security = Security::StartTls;
    e2.tls = Some(tls);
    let e = SmtpClient::connect(&e2, "c", Recorder::new())
        .await
        .err()
        .expect("injection refused");
    assert_eq!(e.class, ErrorClass::Tls, "{e}");
    assert!(e.detail.contains("before the TLS handshake"), "{e}");
}

#[tokio::test]
async fn after_a_timeout_the_connection_is_abandoned_not_reused() {
    // Greets, answers USER, then says nothing (to PASS) until late.
    let port = scripted(b"+OK ready\r\n+OK\r\n".to_vec(), Duration::from_secs(5)).await;
    let mut pop = Pop3Client::connect(&ep(port), Recorder::new())
        .await
        .expect("greeting");
    let e = pop.login("u", "p").await.expect_err("PASS times out");
    assert_eq!(
        (e.class, e.command.as_str()),
        (ErrorClass::Timeout, "PASS"),
        "{e}"
    );
    let t = Instant::now();
    let e = pop.stat().await.expect_err("abandoned");
    assert_eq!(e.class, ErrorClass::Timeout, "{e}");
    assert!(e.detail.contains("abandoned"), "{e}");
    assert!(t.elapsed() < Duration::from_millis(100), "fails at once");
}

#[tokio::test]
async fn news_sent_before_idles_go_ahead_is_not_lost() {
    // A1 = CAPABILITY, A2 = IDLE: the server announces a new message before its "+".
    let script =
        b"* OK ready\r\n* CAPABILITY IMAP4rev1 IDLE\r\nA1 OK done\r\n* 5 EXISTS\r\n+ idling\r\n"
            .to_vec();
    let port = scripted(script, Duration::from_secs(5)).await;
    let mut imap = ImapClient::connect(&ep(port), Recorder::new())
        .await
        .expect("greeting");
    imap.idle().await.expect("IDLE");
    let t = Instant::now();
    match imap.idle_wait(Duration::from_secs(2)).await.expect("news") {
        mbx_loadgen::imap::IdleEvent::Changed(_, news) => {
            assert_eq!(news, vec!["5 EXISTS".to_owned()])
        }
        other => panic!("{other:?}"),
    }
    assert!(t.elapsed() < Duration::from_millis(100), "at once");
}

#[tokio::test]
async fn a_server_that_never_answers_trips_loadgens_overload_guard() {
    use mbx_loadgen::day::{run_days, DayPlan, Servers};
    use mbx_loadgen::message::Generator;
    use mbx_loadgen::sched::ClientType;
    use mbx_loadgen::users::from_template;
    // Accepts every connection and says nothing.
    let l = TcpListener::bind("127.0.0.1:0").await.expect("bind");
    let port = l.local_addr().expect("addr").port();
    tokio::spawn(async move {
        let mut held = Vec::new();
        while let Ok((s, _)) = l.accept().await {
            held.push(s);
        }
    });
    let mut e = ep(port);
    e.timeouts = Timeouts {
        connect: Duration::from_secs(2),
        command: Duration::from_secs(30),
    };
    let servers = Servers {
        smtp: e.clone(),
        imap: e.clone(),
        pop3: e,
        helo: "c".into(),
        auth: mbx_loadgen::AuthMechanism::Plain,
        eas: None,
    };
    let users = from_template("u%d", 1, 4, "pw", "d.test").expect("users");
    let plan = DayPlan {
        seed: 1,
        messages_per_day: 150,
        day: Duration::from_secs(2),
        days: 1,
        overload_per_user: 1.5,
        grace: Duration::ZERO,
        // Its baseline would wait for the silent server's greeting (30 s); the stop test covers
        // a baseline against it.
        baseline: false,
        ..DayPlan::default()
    };
    let t = Instant::now();
    let r = run_days(
        &servers,
        &users,
        &[ClientType::DesktopImap; 4],
        &Generator::new("ov", 1, 10_000, 0),
        &plan,
        Recorder::new(),
    )
    .await;
    assert!(
        r.overloaded,
        "unfinished tasks over 1.5 x users stop the run"
    );
    assert!(
        r.max_unfinished > 6 && r.dispatched < r.planned,
        "{} of {}",
        r.dispatched,
        r.planned
    );
    assert!(t.elapsed() < Duration::from_secs(35), "{:?}", t.elapsed());
}

#[tokio::test]
async fn news_in_another_commands_answer_wakes_the_next_idle() {
    // A1 = CAPABILITY, A2 = NOOP (the server reports a new message there), A3 = IDLE.
    let script = b"* OK ready\r\n* CAPABILITY IMAP4rev1 IDLE\r\nA1 OK done\r\n* 7 EXISTS\r\nA2 OK done\r\n+ idling\r\n".to_vec();
    let port = scripted(script, Duration::from_secs(5)).await;
    let mut imap = ImapClient::connect(&ep(port), Recorder::new())
        .await
        .expect("greeting");
    imap.noop().await.expect("NOOP");
    imap.idle().await.expect("IDLE");
    let t = Instant::now();
    match imap.idle_wait(Duration::from_secs(2)).await.expect("news") {
        mbx_loadgen::imap::IdleEvent::Changed(_, news) => {
            assert_eq!(news, vec!["7 EXISTS".to_owned()])
        }
        other => panic!("{other:?}"),
    }
    assert!(t.elapsed() < Duration::from_millis(100), "at once");
}

#[tokio::test]
async fn a_stop_request_ends_the_run_promptly_with_what_it_did() {
    use mbx_loadgen::day::{run_days, DayPlan, Servers, STOP_WAIT};
    use mbx_loadgen::message::Generator;
    use mbx_loadgen::sched::ClientType;
    use mbx_loadgen::users::from_template;
    use std::sync::atomic::{AtomicBool, Ordering};
    use std::sync::Arc;
    let l = TcpListener::bind("127.0.0.1:0").await.expect("bind");
    let port = l.local_addr().expect("addr").port();
    tokio::spawn(async move {
        let mut held = Vec::new();
        while let Ok((s, _)) = l.accept().await {
            held.push(s);
        }
    });
    let mut e = ep(port);
    e.timeouts = Timeouts {
        connect: Duration::from_secs(2),
        command: Duration::from_secs(60),
    };
    let servers = Servers {
        smtp: e.clone(),
        imap: e.clone(),
        pop3: e,
        helo: "c".into(),
        auth: mbx_loadgen::AuthMechanism::Plain,
        eas: None,
    };
    let users = from_template("u%d", 1, 4, "pw", "d.test").expect("users");
    // Stopped during the day (no baseline), then during the baseline (every user waiting for a
    // greeting that never comes): both end within STOP_WAIT of the request.
    for baseline in [false, true] {
        let stop = Arc::new(AtomicBool::new(false));
        let (tx, mut rx) = tokio::sync::mpsc::unbounded_channel();
        let plan = DayPlan {
            seed: 1,
            messages_per_day: 50,
            // 4 x 105.5 tasks in 60 s: a few dispatched (and stuck on the silent server) by the
            // stop.
            day: Duration::from_secs(60),
            days: 1,
            overload_per_user: 1e9,
            grace: Duration::from_secs(60),
            stop: stop.clone(),
            sample_interval: Duration::from_millis(200),
            samples: Some(tx),
            baseline,
            ..DayPlan::default()
        };
        let s2 = stop.clone();
        tokio::spawn(async move {
            tokio::time::sleep(Duration::from_millis(500)).await;
            s2.store(true, Ordering::Relaxed);
        });
        let t = Instant::now();
        let r = run_days(
            &servers,
            &users,
            &[ClientType::Webmail; 4],
            &Generator::new("st", 1, 10_000, 0),
            &plan,
            Recorder::new(),
        )
        .await;
        let took = t.elapsed();
        eprintln!(
            "baseline {baseline}: stopped after {took:?}, {} of {} dispatched, baseline {:?} {:?}",
            r.dispatched, r.planned, r.baseline, r.baseline_failed
        );
        assert!(r.interrupted && !r.overloaded);
        assert!(r.dispatched < r.planned);
        assert!(
            took < Duration::from_millis(500) + STOP_WAIT + Duration::from_secs(1),
            "{took:?}"
        );
        if baseline {
            assert_eq!(r.dispatched, 0, "no task before the baseline ends");
            assert!(r.baseline >= Duration::from_millis(500), "{:?}", r.baseline);
        }
        // The final sample comes whatever stopped the run, and closes the series.
        let mut samples = Vec::new();
        while let Ok(s) = rx.try_recv() {
            samples.push(s);
        }
        let last = samples.last().expect("a final sample");
        assert!(last.last);
        assert_eq!(samples.iter().filter(|s| s.last).count(), 1);
        assert_eq!(last.cumulative.dispatched, r.dispatched);
    }
}

/// A server that disables LOGIN (LOGINDISABLED) is asked with AUTHENTICATE PLAIN and the
/// initial response (SASL-IR); one that offers neither is an `auth` error saying why, before
/// any credentials are sent.
#[tokio::test]
async fn logindisabled_takes_authenticate_plain_and_never_sends_login() {
    async fn server(caps: &'static str) -> (u16, tokio::task::JoinHandle<Vec<String>>) {
        let l = TcpListener::bind("127.0.0.1:0").await.expect("bind");
        let port = l.local_addr().expect("addr").port();
        let h = tokio::spawn(async move {
            let mut seen = Vec::new();
            let Ok((s, _)) = l.accept().await else {
                return seen;
            };
            let (r, mut w) = s.into_split();
            let mut lines = tokio::io::BufReader::new(r);
            let _ = w.write_all(b"* OK ready\r\n").await;
            let mut line = String::new();
            while tokio::io::AsyncBufReadExt::read_line(&mut lines, &mut line)
                .await
                .is_ok_and(|n| n > 0)
            {
                let l = line.trim_end().to_string();
                line.clear();
                let (tag, cmd) = l.split_once(' ').unwrap_or((&l, ""));
                let reply = if cmd.starts_with("CAPABILITY") {
                    format!("* CAPABILITY {caps}\r\n{tag} OK done\r\n")
                } else if cmd.starts_with("LOGOUT") {
                    format!("* BYE\r\n{tag} OK bye\r\n")
                } else {
                    format!("{tag} OK done\r\n")
                };
                seen.push(cmd.to_string());
                let _ = w.write_all(reply.as_bytes()).await;
            }
            seen
        });
        (port, h)
    }
    let (port, h) = server("IMAP4rev1 LOGINDISABLED AUTH=PLAIN SASL-IR").await;
    let mut c = ImapClient::connect(&ep(port), Recorder::new())
        .await
        .expect("connect");
    c.login("alice", "pw").await.expect("authenticated");
    c.logout().await.expect("logout");
    let seen = h.await.expect("server");
    // base64("\0alice\0pw")
    assert!(
        seen.iter().any(|c| c == "AUTHENTICATE PLAIN AGFsaWNlAHB3"),
        "{seen:?}"
    );
    assert!(!seen.iter().any(|c| c.starts_with("LOGIN")), "{seen:?}");

    let (port, h) = server("IMAP4rev1 LOGINDISABLED").await;
    let mut c = ImapClient::connect(&ep(port), Recorder::new())
        .await
        .expect("connect");
    let e = c.login("alice", "pw").await.expect_err("no way to log in");
    assert_eq!(e.class, ErrorClass::Auth, "{e}");
    assert!(e.detail.contains("LOGIN"), "{e}");
    drop(c);
    let seen = h.await.expect("server");
    assert!(
        !seen
            .iter()
            .any(|c| c.starts_with("LOGIN") || c.starts_with("AUTH")),
        "{seen:?}"
    );
}

/// A fake server that greets with `greeting`, then answers each line the client sends with
/// `answer(line)` (None: close). Returns its port and, when it ends, the lines it received.
async fn answering(
    greeting: &'static [u8],
    answer: impl Fn(&str) -> Option<Vec<u8>> + Send + 'static,
) -> (u16, tokio::task::JoinHandle<Vec<String>>) {
    let l = TcpListener::bind("127.0.0.1:0").await.expect("bind");
    let port = l.local_addr().expect("addr").port();
    let h = tokio::spawn(async move {
        let mut seen = Vec::new();
        let Ok((s, _)) = l.accept().await else {
            return seen;
        };
        let (r, mut w) = s.into_split();
        let mut lines = tokio::io::BufReader::new(r);
        let _ = w.write_all(greeting).await;
        let mut line = String::new();
        while tokio::io::AsyncBufReadExt::read_line(&mut lines, &mut line)
            .await
            .is_ok_and(|n| n > 0)
        {
            let l = line.trim_end().to_string();
            line.clear();
            let reply = answer(&l);
            seen.push(l);
            match reply {
                Some(r) => {
                    let _ = w.write_all(&r).await;
                }
                None => break,
            }
        }
        seen
    });
    (port, h)
}

/// Whether `s` holds a character a terminal would obey (an escape, a carriage return, a bell).
fn has_control(s: &str) -> bool {
    s.chars()
        .any(|c| c.is_control() || ('\u{2066}'..='\u{2069}').contains(&c))
}

/// The audit's escape injection: a server's reply clears the screen and prints a fake green PASS
/// line. The error's text shows the escapes (`\x1b`) instead of holding them, in every field and
/// in its message, for SMTP, IMAP (tagged and untagged) and POP3.
#[tokio::test]
async fn escapes_in_server_replies_are_shown_not_obeyed() {
    const FAKE: &str = "\x1b[2J\x1b[H\x1b[32mPASS | all checks passed\x1b[0m\r\x07\x08\0";
    // SMTP: a greeting that is not 220.
    let script = format!("554 {FAKE}\r\n").into_bytes();
    let port = scripted(script, Duration::from_secs(5)).await;
    let e = SmtpClient::connect(&ep(port), "c", Recorder::new())
        .await
        .err()
        .expect("refused");
    // IMAP: a tagged NO to CAPABILITY, and BYE before closing.
    let script = format!("* OK ready\r\nA1 NO {FAKE}\r\n").into_bytes();
    let port = scripted(script, Duration::from_secs(5)).await;
    let e2 = ImapClient::connect(&ep(port), Recorder::new())
        .await
        .err()
        .expect("refused");
    let script = format!("* OK ready\r\n* BYE {FAKE}\r\n").into_bytes();
    let port = scripted(script, Duration::ZERO).await;
    let e3 = ImapClient::connect(&ep(port), Recorder::new())
        .await
        .err()
        .expect("closed");
    // POP3: -ERR greeting; and garbage with NUL, BEL and BS.
    let script = format!("-ERR {FAKE}\r\n").into_bytes();
    let port = scripted(script, Duration::from_secs(5)).await;
    let e4 = Pop3Client::connect(&ep(port), Recorder::new())
        .await
        .err()
        .expect("refused");
    let port = scripted(
        b"\x00\x07\x08\x1b]0;owned\x07\xff\xfe\r\n".to_vec(),
        Duration::from_secs(5),
    )
    .await;
    let e5 = Pop3Client::connect(&ep(port), Recorder::new())
        .await
        .err()
        .expect("garbage");
    for e in [e, e2, e3, e4, e5] {
        let text = e.to_string();
        assert!(!has_control(&text), "{text:?}");
        assert!(!has_control(&e.detail), "{:?}", e.detail);
        assert!(
            e.detail.contains("\\x1b") || e.detail.contains("\\u{1b}"),
            "{:?}",
            e.detail
        );
    }
}

/// The audit's echoed credentials: a server that repeats the AUTH PLAIN token (SMTP 535), the
/// LOGIN line (IMAP NO) or PASS (POP3 -ERR) in its refusal has the password and its base64 forms
/// redacted from the error before anything stores or shows it.
#[tokio::test]
async fn a_server_echoing_credentials_never_gets_them_shown() {
    use base64::Engine as _;
    let b64 = |s: &str| base64::engine::general_purpose::STANDARD.encode(s);
    let secret = "S3cr3t-pw";
    // SMTP AUTH PLAIN.
    let (port, _h) = answering(b"220 hi\r\n", |l| {
        Some(if l.starts_with("EHLO") {
            b"250 AUTH PLAIN LOGIN\r\n".to_vec()
        } else {
            format!("535 5.7.8 bad credentials: {l}\r\n").into_bytes()
        })
    })
    .await;
    let mut s = SmtpClient::connect(&ep(port), "c", Recorder::new())
        .await
        .expect("connect");
    let e = s
        .auth("alice", secret, mbx_loadgen::AuthMechanism::Plain)
        .await
        .expect_err("refused");
    assert_eq!(e.class, ErrorClass::Auth, "{e}");
    let smtp_plain = e.to_string();
    // SMTP AUTH LOGIN: the password's base64 echoed.
    let (port, _h) = answering(b"220 hi\r\n", |l| {
        Some(if l.starts_with("EHLO") {
            b"250 AUTH PLAIN LOGIN\r\n".to_vec()
        } else if l.starts_with("AUTH LOGIN") || l == "YWxpY2U=" {
            b"334 VXNlcm5hbWU6\r\n".to_vec()
        } else {
            format!("535 5.7.8 {l} is wrong\r\n").into_bytes()
        })
    })
    .await;
    let mut s = SmtpClient::connect(&ep(port), "c", Recorder::new())
        .await
        .expect("connect");
    let e = s
        .auth("alice", secret, mbx_loadgen::AuthMechanism::Login)
        .await
        .expect_err("refused");
    let smtp_login = e.to_string();
    // IMAP LOGIN echoed in NO.
    let (port, _h) = answering(b"* OK ready\r\n", |l| {
        let (tag, cmd) = l.split_once(' ').unwrap_or((l, ""));
        Some(if cmd.starts_with("CAPABILITY") {
            format!("* CAPABILITY IMAP4rev1\r\n{tag} OK done\r\n").into_bytes()
        } else {
            format!("{tag} NO [AUTHENTICATIONFAILED] you said {cmd}\r\n").into_bytes()
        })
    })
    .await;
    let mut c = ImapClient::connect(&ep(port), Recorder::new())
        .await
        .expect("connect");
    let e = c.login("alice", secret).await.expect_err("refused");
    assert_eq!(e.class, ErrorClass::Auth, "{e}");
    let imap = e.to_string();
    // POP3 PASS echoed in -ERR.
    let (port, _h) = answering(b"+OK ready\r\n", |l| {
        Some(if l.starts_with("USER") {
            b"+OK\r\n".to_vec()
        } else {
            format!("-ERR [AUTH] {l} refused\r\n").into_bytes()
        })
    })
    .await;
    let mut p = Pop3Client::connect(&ep(port), Recorder::new())
        .await
        .expect("connect");
    let e = p.login("alice", secret).await.expect_err("refused");
    assert_eq!(e.class, ErrorClass::Auth, "{e}");
    let pop3 = e.to_string();
    for text in [smtp_plain, smtp_login, imap, pop3] {
        for form in [
            secret.to_string(),
            b64(secret),
            b64(&format!("\0alice\0{secret}")),
        ] {
            assert!(!text.contains(&form), "{form} in {text}");
        }
        assert!(text.contains("[redacted]"), "{text}");
    }
}

/// A listener that accepts every connection and never says a word (a frozen server).
async fn frozen() -> u16 {
    let l = TcpListener::bind("127.0.0.1:0").await.expect("bind");
    let port = l.local_addr().expect("addr").port();
    tokio::spawn(async move {
        let mut held = Vec::new();
        while let Ok((s, _)) = l.accept().await {
            held.push(s);
        }
    });
    port
}

fn frozen_servers(port: u16, command: Duration) -> mbx_loadgen::day::Servers {
    let mut e = ep(port);
    e.timeouts = Timeouts {
        connect: Duration::from_secs(2),
        command,
    };
    mbx_loadgen::day::Servers {
        smtp: e.clone(),
        imap: e.clone(),
        pop3: e,
        helo: "c".into(),
        auth: mbx_loadgen::AuthMechanism::Plain,
        eas: None,
    }
}

/// The audit's baseline against a server that never greets: 256 users took 4 x 60 s before a
/// 10 s day. The baseline's deadline follows the test's length (at least 10 s): the run ends
/// there, the report naming the phase and the server; the day never starts.
#[tokio::test]
async fn a_baseline_against_a_frozen_server_ends_at_its_deadline() {
    use mbx_loadgen::day::{run_days, DayPlan};
    use mbx_loadgen::message::Generator;
    use mbx_loadgen::sched::ClientType;
    use mbx_loadgen::users::from_template;
    let port = frozen().await;
    let servers = frozen_servers(port, Duration::from_secs(60));
    let users = from_template("u%d", 1, 80, "pw", "d.test").expect("users");
    let plan = DayPlan {
        seed: 1,
        messages_per_day: 50,
        day: Duration::from_secs(2),
        days: 1,
        overload_per_user: 1e9,
        grace: Duration::from_secs(5),
        ..DayPlan::default()
    };
    let t = Instant::now();
    let r = run_days(
        &servers,
        &users,
        &[ClientType::DesktopImap; 80],
        &Generator::new("bd", 1, 10_000, 0),
        &plan,
        Recorder::new(),
    )
    .await;
    let took = t.elapsed();
    let d = r.deadline.expect("the baseline's deadline ended the run");
    assert!(
        d.starts_with("the baseline did not finish by its deadline (10 s)"),
        "{d}"
    );
    assert!(d.contains(&format!("imap://127.0.0.1:{port}")), "{d}");
    assert!(!r.interrupted && r.dispatched == 0, "{}", r.dispatched);
    assert!(
        took >= Duration::from_secs(10) && took < Duration::from_secs(13),
        "{took:?}"
    );
}

/// The audit's frozen IMAP server mid-day (`--overload 1000`, grace 5 s: 10 min 05 s): the
/// tasks still running when the schedule ends get 2 x the command timeout + grace, then the run
/// ends, naming the day and the servers.
#[tokio::test]
async fn a_server_frozen_during_the_day_ends_the_run_at_the_days_deadline() {
    use mbx_loadgen::day::{run_days, DayPlan};
    use mbx_loadgen::message::Generator;
    use mbx_loadgen::sched::ClientType;
    use mbx_loadgen::users::from_template;
    let port = frozen().await;
    let servers = frozen_servers(port, Duration::from_secs(2));
    let users = from_template("u%d", 1, 8, "pw", "d.test").expect("users");
    let plan = DayPlan {
        seed: 1,
        messages_per_day: 500,
        day: Duration::from_secs(3),
        days: 1,
        overload_per_user: 1e9,
        grace: Duration::from_secs(1),
        baseline: false,
        ..DayPlan::default()
    };
    let t = Instant::now();
    let r = run_days(
        &servers,
        &users,
        &[ClientType::Webmail; 8],
        &Generator::new("dd", 1, 10_000, 0),
        &plan,
        Recorder::new(),
    )
    .await;
    let took = t.elapsed();
    let d = r.deadline.expect("the day's deadline ended the run");
    assert!(
        d.starts_with("the day did not finish by its deadline (8 s)"),
        "{d}"
    );
    assert!(
        d.contains(&format!("smtp://127.0.0.1:{port}"))
            && d.contains(&format!("imap://127.0.0.1:{port}")),
        "{d}"
    );
    // The watchers' sessions get OPEN_WAIT to open before the day (the frozen server opens
    // none), then day 3 s + drain 5 s, the logouts skipped; each user's queue held dozens of
    // tasks of 2 s.
    assert!(
        took < mbx_loadgen::watch::OPEN_WAIT + Duration::from_secs(10),
        "{took:?}"
    );
    assert!(r.dispatched > 8 * 10, "{}", r.dispatched);
}

/// The audit's endless multi-line answers (a POP3 UIDL cost 46 MB per session, 2.95 GB for 64
/// users): with the default line count (1,000,000) a UIDL answer stops at 100,000 lines and an
/// IMAP answer at 100,000 untagged responses, each about 10 MB at most.
#[tokio::test]
async fn endless_listings_stop_at_what_a_task_needs() {
    let e = |port| {
        let mut e = ep(port);
        e.limits.lines = Limits::default().lines;
        e.limits.message = Limits::default().message;
        e
    };
    let mut script = b"+OK ready\r\n+OK\r\n+OK\r\n+OK listing\r\n".to_vec();
    for i in 0..100_010u32 {
        script.extend_from_slice(format!("{i} uid-{i}\r\n").as_bytes());
    }
    let port = scripted(script, Duration::from_secs(5)).await;
    let mut pop = Pop3Client::connect(&e(port), Recorder::new())
        .await
        .expect("greeting");
    pop.login("u", "p").await.expect("USER/PASS");
    let err = pop.uidl().await.expect_err("bounded");
    assert_eq!(
        (err.class, err.command.as_str()),
        (ErrorClass::Protocol, "UIDL"),
        "{err}"
    );
    assert!(err.detail.contains("100000 lines"), "{err}");

    let mut script = b"* OK ready\r\n* CAPABILITY IMAP4rev1\r\nA1 OK done\r\n".to_vec();
    for _ in 0..100_010u32 {
        script.extend_from_slice(b"* 1 EXISTS\r\n");
    }
    let port = scripted(script, Duration::from_secs(5)).await;
    let mut imap = ImapClient::connect(&e(port), Recorder::new())
        .await
        .expect("greeting");
    let err = imap.noop().await.expect_err("bounded");
    assert_eq!(err.class, ErrorClass::Protocol, "{err}");
    assert!(err.detail.contains("too many untagged"), "{err}");
}
