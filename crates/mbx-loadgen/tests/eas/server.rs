//! The ActiveSync client against a real server: scripts/easserver.sh's SOGo (with Postfix and
//! Dovecot) on loopback. A device negotiates its version, provisions when asked, finds Inbox,
//! Calendar and Contacts by FolderSync, and sees a message delivered by SMTP in its Inbox's Sync
//! with the Message-ID and body intact.
//!
//! One server for this binary (startup takes seconds), stopped when the test ends (and by the
//! script's watcher if the binary dies). Without root or the packages the test says so on stderr
//! and returns, unless MBX_REQUIRE_MAIL_SERVER is set (.ci/run sets it as root): then it fails.

#![cfg(target_os = "linux")]

use std::collections::HashMap;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;

use mbx_loadgen::eas::client::{folder_type, item_mime, Config, EasClient};
use mbx_loadgen::eas::codepages::airsyncbase;
use mbx_loadgen::tls::{client_config, Trust};
use mbx_loadgen::{AuthMechanism, Endpoint, Recorder, Security, SmtpClient};

pub struct EasServer {
    dir: PathBuf,
    env: HashMap<String, String>,
}

fn script() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../scripts/easserver.sh")
}

/// Where the server's folder goes: tmpfs when there is room (its PostgreSQL cluster is some
/// 40 MB of throwaway files that need not reach a disk: the suite's writes are budgeted), else
/// /tmp or /var/tmp, whichever other users can traverse (bench/test-footprint.sh makes /tmp a
/// private 0700 folder; sogod, postgres and Dovecot must reach the folder).
fn base() -> &'static str {
    let traversable = |b: &str| {
        std::fs::metadata(b).is_ok_and(|m| m.is_dir() && m.permissions().mode() & 0o001 != 0)
    };
    let shm_room = Command::new("df")
        .args(["--output=avail", "-k", "/dev/shm"])
        .output()
        .ok()
        .and_then(|o| {
            String::from_utf8_lossy(&o.stdout)
                .lines()
                .nth(1)
                .and_then(|l| l.trim().parse::<u64>().ok())
        })
        .is_some_and(|kib| kib > 512 * 1024);
    if shm_room && traversable("/dev/shm") {
        return "/dev/shm";
    }
    ["/tmp", "/var/tmp"]
        .into_iter()
        .find(|b| traversable(b))
        .unwrap_or("/tmp")
}

fn required() -> bool {
    std::env::var_os("MBX_REQUIRE_MAIL_SERVER").is_some_and(|v| !v.is_empty() && v != "0")
}

impl EasServer {
    /// Starts a server with `users` users in a folder of its own (`tag` tells the servers of
    /// one test binary apart); None when it cannot start and MBX_REQUIRE_MAIL_SERVER is unset.
    pub fn start(users: u32, tag: &str) -> Option<EasServer> {
        EasServer::start_with(users, tag, 8)
    }

    /// [`EasServer::start`] with `workers` sogod workers (each parked Ping holds one).
    pub fn start_with(users: u32, tag: &str, workers: u32) -> Option<EasServer> {
        let dir = PathBuf::from(format!("{}/mbxeas-{}-{tag}", base(), std::process::id()));
        let mut out = None;
        // A port block taken between the scripts' check and the daemons' bind (other tests on
        // the machine start servers too): try again.
        for _ in 0..3 {
            let o = Command::new("bash")
                .arg(script())
                .arg("start")
                .arg(&dir)
                .args([
                    "--users",
                    &users.to_string(),
                    "--workers",
                    &workers.to_string(),
                ])
                .args(["--watch", &std::process::id().to_string()])
                .output()
                .expect("runs bash");
            let err = String::from_utf8_lossy(&o.stderr);
            let retry = !o.status.success() && (err.contains("in use") || err.contains("listen"));
            out = Some(o);
            if !retry {
                break;
            }
        }
        let out = out.expect("one attempt");
        if !out.status.success() {
            let why = String::from_utf8_lossy(&out.stderr).into_owned();
            assert!(
                !required(),
                "MBX_REQUIRE_MAIL_SERVER is set but scripts/easserver.sh did not start: {why}"
            );
            eprintln!("SKIPPED: no ActiveSync server ({why}); set MBX_REQUIRE_MAIL_SERVER=1 to make this a failure");
            return None;
        }
        let env = String::from_utf8_lossy(&out.stdout)
            .lines()
            .filter_map(|l| l.split_once('=').map(|(k, v)| (k.to_owned(), v.to_owned())))
            .collect();
        Some(EasServer { dir, env })
    }

    pub fn get(&self, k: &str) -> &str {
        self.env
            .get(k)
            .unwrap_or_else(|| panic!("easserver.sh printed no {k}"))
    }
}

impl Drop for EasServer {
    fn drop(&mut self) {
        let _ = Command::new("bash")
            .arg(script())
            .arg("stop")
            .arg(&self.dir)
            .status();
    }
}

#[tokio::test]
async fn a_device_finds_its_folders_and_syncs_delivered_mail_intact() {
    let Some(s) = EasServer::start(3, "mail") else {
        return;
    };
    let url = s.get("MBX_EAS_URL").to_owned();
    let password = s.get("MBX_EAS_PASSWORD").to_owned();
    let domain = s.get("MBX_EAS_DOMAIN").to_owned();

    // A wrong password is an auth error, not a protocol one.
    let mut bad = EasClient::new(Config::new(&url, "loadgen1", "wrong", "mbxbad1")).expect("URL");
    let e = bad.options().await.expect_err("401");
    assert_eq!(e.class.name(), "auth", "{e}");

    let mut dev =
        EasClient::new(Config::new(&url, "loadgen1", &password, "mbxtest1")).expect("URL");
    let offered = dev.options().await.expect("OPTIONS");
    assert!(offered.iter().any(|v| v == "14.1"), "{offered:?}");
    assert_eq!(dev.version(), Some("14.1"), "the best version both speak");
    dev.provision().await.expect("Provision");
    let fs = dev.folder_sync().await.expect("FolderSync");
    assert!(fs.elapsed > Duration::ZERO);
    for (kind, what) in [
        (folder_type::INBOX, "Inbox"),
        (folder_type::CALENDAR, "Calendar"),
        (folder_type::CONTACTS, "Contacts"),
    ] {
        assert!(
            dev.folder(kind).is_some(),
            "FolderSync found no {what}: {:?}",
            dev.folders()
        );
    }
    let inbox = dev
        .folder(folder_type::INBOX)
        .map(|f| f.server_id.clone())
        .expect("Inbox");
    let calendar = dev
        .folder(folder_type::CALENDAR)
        .map(|f| f.server_id.clone())
        .expect("Calendar");
    let contacts = dev
        .folder(folder_type::CONTACTS)
        .map(|f| f.server_id.clone())
        .expect("Contacts");
    let empty = dev.sync(&inbox, 50, true).await.expect("first Inbox Sync");
    assert!(empty.added.is_empty(), "a new mailbox is empty");
    dev.sync(&calendar, 50, false).await.expect("Calendar Sync");
    dev.sync(&contacts, 50, false).await.expect("Contacts Sync");

    // A message from loadgen2 by SMTP submission (STARTTLS, AUTH) to loadgen1.
    let tls = client_config(&Trust::CaFile(PathBuf::from(s.get("MBX_MAIL_CA_FILE"))))
        .expect("the CA loads");
    let port: u16 = s.get("MBX_MAIL_SUBMISSION_PORT").parse().expect("port");
    let ep = Endpoint::new("127.0.0.1", port, Security::StartTls, Some(tls));
    let mut smtp = SmtpClient::connect(&ep, "client.loadgen.test", Recorder::new())
        .await
        .expect("SMTP");
    smtp.auth("loadgen2", &password, AuthMechanism::Plain)
        .await
        .expect("AUTH");
    let (from, to) = (format!("loadgen2@{domain}"), format!("loadgen1@{domain}"));
    let msgid = format!("<eas-{}@mbxstress.test>", std::process::id());
    let body = "A line of the body that must arrive as it was sent.\r\n";
    let message = format!(
        "From: {from}\r\nTo: {to}\r\nSubject: EAS delivery\r\nMessage-ID: {msgid}\r\nDate: Wed, 02 Dec 2026 05:00:00 +0000\r\nMIME-Version: 1.0\r\nContent-Type: text/plain; charset=us-ascii\r\n\r\n{body}"
    );
    smtp.send(&from, &[&to], message.as_bytes())
        .await
        .expect("accepted");
    smtp.quit().await.expect("QUIT");

    // The device's Sync sees it within seconds (delivery, then SOGo's IMAP view).
    let mut found = Vec::new();
    let mut syncs = Vec::new();
    for _ in 0..40 {
        let batch = dev.sync(&inbox, 50, true).await.expect("Inbox Sync");
        syncs.push(batch.elapsed);
        found.extend(batch.added);
        if !found.is_empty() {
            break;
        }
        tokio::time::sleep(Duration::from_millis(250)).await;
    }
    let ours: Vec<_> = found
        .iter()
        .filter(|i| {
            item_mime(i).is_some_and(|m| {
                String::from_utf8_lossy(m).contains(&format!("Message-ID: {msgid}"))
            })
        })
        .collect();
    assert_eq!(
        ours.len(),
        1,
        "the message is synced once with its Message-ID: {found:?}"
    );
    // The body as sent, line ends aside: a server that passes MIME through XML (SOGo builds its
    // answers as XML for libwbxml, whose parser turns CRLF into LF) may change them.
    let mime = String::from_utf8_lossy(item_mime(ours[0]).expect("MIME")).replace("\r\n", "\n");
    assert!(
        mime.contains(&body.replace("\r\n", "\n")),
        "the body arrives intact: {mime}"
    );
    // Nothing more: the next Sync has no change.
    let again = dev.sync(&inbox, 50, true).await.expect("Inbox Sync");
    assert!(again.added.is_empty(), "{:?}", again.added);
    // ItemOperations Fetch gives the same message as full MIME.
    let props = dev
        .fetch_mime(&inbox, &ours[0].server_id)
        .await
        .expect("ItemOperations Fetch");
    let fetched = props
        .path(&[airsyncbase::Body, airsyncbase::Data])
        .and_then(|d| d.bytes_content())
        .map(|b| String::from_utf8_lossy(b).into_owned())
        .unwrap_or_default();
    assert!(
        fetched.contains(&format!("Message-ID: {msgid}")),
        "Fetch: {fetched}"
    );

    // A second user's device parks a Ping on its Inbox; the first device's SendMail reaches it:
    // the Ping reports the Inbox, and its Sync has the message once.
    let mut dev2 =
        EasClient::new(Config::new(&url, "loadgen2", &password, "mbxtest2")).expect("URL");
    dev2.folder_sync().await.expect("FolderSync");
    let inbox2 = dev2
        .folder(folder_type::INBOX)
        .map(|f| f.server_id.clone())
        .expect("Inbox");
    assert!(dev2
        .sync(&inbox2, 50, true)
        .await
        .expect("Sync")
        .added
        .is_empty());
    let watched = inbox2.clone();
    let parked = tokio::spawn(async move {
        let r = dev2
            .ping(Duration::from_secs(30), &[(&watched, "Email")])
            .await;
        (dev2, r)
    });
    tokio::time::sleep(Duration::from_millis(500)).await;
    let msgid2 = format!("<eas-sendmail-{}@mbxstress.test>", std::process::id());
    let mime2 = format!(
        "From: {to}\r\nTo: {from}\r\nSubject: EAS SendMail\r\nMessage-ID: {msgid2}\r\nDate: Wed, 02 Dec 2026 05:00:01 +0000\r\nMIME-Version: 1.0\r\nContent-Type: text/plain; charset=us-ascii\r\n\r\n{body}"
    );
    let sent = dev.send_mail(mime2.as_bytes()).await.expect("SendMail");
    let (mut dev2, pinged) = parked.await.expect("the Ping task");
    let pinged = pinged.expect("Ping");
    assert_eq!(pinged.status, 2, "the Ping reports a change: {pinged:?}");
    assert_eq!(pinged.changed, std::slice::from_ref(&inbox2));
    let mut found2 = Vec::new();
    for _ in 0..20 {
        found2.extend(dev2.sync(&inbox2, 50, true).await.expect("Sync").added);
        if !found2.is_empty() {
            break;
        }
        tokio::time::sleep(Duration::from_millis(250)).await;
    }
    let ours2 = found2
        .iter()
        .filter(|i| {
            item_mime(i).is_some_and(|m| {
                String::from_utf8_lossy(m).contains(&format!("Message-ID: {msgid2}"))
            })
        })
        .count();
    assert_eq!(ours2, 1, "the SendMail copy is synced once: {found2:?}");

    // SmartReply and SmartForward of that copy (ReplaceMime absent: the server composes),
    // then Sync's Change (flag) and Delete by the first device.
    let original = found2
        .iter()
        .find(|i| {
            item_mime(i).is_some_and(|m| {
                String::from_utf8_lossy(m).contains(&format!("Message-ID: {msgid2}"))
            })
        })
        .map(|i| i.server_id.clone())
        .expect("the SendMail copy");
    let mut smart_ids = Vec::new();
    for (what, forward) in [("reply", false), ("forward", true)] {
        let id = format!("<eas-smart{what}-{}@mbxstress.test>", std::process::id());
        let text = format!("The {what} the user wrote, as it was written.\r\n");
        let mime = format!(
            "From: {from}\r\nTo: {to}\r\nSubject: EAS smart {what}\r\nMessage-ID: {id}\r\nDate: Wed, 02 Dec 2026 05:00:02 +0000\r\nMIME-Version: 1.0\r\nContent-Type: text/plain; charset=us-ascii\r\n\r\n{text}"
        );
        let r = if forward {
            dev2.smart_forward(&inbox2, &original, mime.as_bytes())
                .await
        } else {
            dev2.smart_reply(&inbox2, &original, mime.as_bytes()).await
        };
        r.unwrap_or_else(|e| panic!("Smart{what}: {e}"));
        smart_ids.push((id, text));
    }
    let mut found3 = Vec::new();
    for _ in 0..40 {
        found3.extend(dev.sync(&inbox, 50, true).await.expect("Sync").added);
        let all = smart_ids.iter().all(|(id, _)| {
            found3.iter().any(|i| {
                item_mime(i).is_some_and(|m| {
                    String::from_utf8_lossy(m).contains(&format!("Message-ID: {id}"))
                })
            })
        });
        if all {
            break;
        }
        tokio::time::sleep(Duration::from_millis(250)).await;
    }
    let mut smart_items = Vec::new();
    for (id, text) in &smart_ids {
        let copies: Vec<_> = found3
            .iter()
            .filter(|i| {
                item_mime(i).is_some_and(|m| {
                    String::from_utf8_lossy(m).contains(&format!("Message-ID: {id}"))
                })
            })
            .collect();
        assert_eq!(copies.len(), 1, "{id} arrives once: {found3:?}");
        // SOGo composes the message anew (multipart, the text as quoted-printable HTML with
        // the original's text after it): the words survive, not the bytes.
        let m = String::from_utf8_lossy(item_mime(copies[0]).expect("MIME")).into_owned();
        let words = text.trim_end().trim_end_matches('.');
        let words = &words[..words.len().min(40)];
        assert!(
            m.contains(words),
            "the text the user wrote survives the server's composition: {m}"
        );
        smart_items.push(copies[0].server_id.clone());
    }
    let flagged = dev
        .sync_flag(&inbox, &smart_items[0], 50)
        .await
        .expect("Sync Change (flag)");
    assert!(flagged.added.is_empty(), "{:?}", flagged.added);
    dev.sync_delete(&inbox, &smart_items[1], 50)
        .await
        .expect("Sync Delete");
    // A second device of the same user syncs the Inbox from nothing: the flagged item is
    // there, the deleted one is not.
    let mut dev1b =
        EasClient::new(Config::new(&url, "loadgen1", &password, "mbxtest1b")).expect("URL");
    dev1b.folder_sync().await.expect("FolderSync");
    let mut all = Vec::new();
    loop {
        let b = dev1b.sync(&inbox, 100, false).await.expect("Sync");
        all.extend(b.added.into_iter().map(|i| i.server_id));
        if !b.more_available {
            break;
        }
    }
    assert!(
        all.contains(&smart_items[0]),
        "the flagged item stays: {all:?}"
    );
    assert!(
        !all.contains(&smart_items[1]),
        "the deleted item is gone: {all:?}"
    );
    eprintln!(
        "EAS against SOGo: FolderSync {:?}, Inbox Syncs {syncs:?} (the last with the message), Sync without changes {:?}, SendMail {:?}, Ping parked {:?} until the new mail",
        fs.elapsed, again.elapsed, sent.elapsed, pinged.elapsed
    );
}

/// One day of `users` (loadgen`first`.. with `clients`) against the EAS server's stack:
/// SOGo for the `eas` users, its Postfix and Dovecot for the others (submission with STARTTLS,
/// IMAPS, POP3S). The report and the recorder's figures, printed.
async fn day_on(
    s: &EasServer,
    first: u32,
    clients: &[mbx_loadgen::sched::ClientType],
    run: &str,
) -> (mbx_loadgen::day::DayReport, mbx_loadgen::Stats) {
    let plan = mbx_loadgen::day::DayPlan {
        seed: 38,
        messages_per_day: 50,
        day: Duration::from_secs(60),
        duration: Some(Duration::from_secs(15)),
        overload_per_user: 100.0,
        grace: Duration::from_secs(30),
        ..Default::default()
    };
    day_with(s, first, clients, run, plan).await
}

/// [`day_on`] with its own plan.
async fn day_with(
    s: &EasServer,
    first: u32,
    clients: &[mbx_loadgen::sched::ClientType],
    run: &str,
    plan: mbx_loadgen::day::DayPlan,
) -> (mbx_loadgen::day::DayReport, mbx_loadgen::Stats) {
    use mbx_loadgen::day::{run_days, Servers};
    use mbx_loadgen::eas::device::Target;
    use mbx_loadgen::message::Generator;
    use mbx_loadgen::Protocol;
    let password = s.get("MBX_EAS_PASSWORD").to_owned();
    let domain = s.get("MBX_EAS_DOMAIN").to_owned();
    let tls = client_config(&Trust::CaFile(PathBuf::from(s.get("MBX_MAIL_CA_FILE"))))
        .expect("the CA loads");
    let port = |k: &str| -> u16 { s.get(k).parse().expect("port") };
    let ep = |p: u16, sec: Security| Endpoint::new("127.0.0.1", p, sec, Some(tls.clone()));
    let servers = Servers {
        smtp: ep(port("MBX_MAIL_SUBMISSION_PORT"), Security::StartTls),
        imap: ep(port("MBX_MAIL_IMAPS_PORT"), Security::Implicit),
        pop3: ep(port("MBX_MAIL_POP3S_PORT"), Security::Implicit),
        helo: "client.loadgen.test".into(),
        auth: AuthMechanism::Plain,
        eas: Some(Target {
            url: s.get("MBX_EAS_URL").to_owned(),
            tls: None,
            timeout: Duration::from_secs(30),
        }),
    };
    let users: Vec<mbx_loadgen::users::User> = (first..first + clients.len() as u32)
        .map(|i| mbx_loadgen::users::User {
            login: format!("loadgen{i}"),
            password: password.clone(),
            address: format!("loadgen{i}@{domain}"),
        })
        .collect();
    let gen = Generator::new(
        &format!("{run}{}", std::process::id()),
        38,
        4 * 1024,
        1_800_000_000,
    );
    let rec = Recorder::new();
    let r = run_days(&servers, &users, clients, &gen, &plan, rec.clone()).await;
    let stats = rec.snapshot();
    for (k, t) in &r.tasks {
        eprintln!(
            "{run}: {:<12} dispatched {:3} completed {:3} skipped {:2} failed {:?}",
            k.name(),
            t.dispatched,
            t.completed,
            t.skipped,
            t.failed
        );
    }
    for ((p, c), st) in &stats.commands {
        eprintln!(
            "{run}: {} {c:<15} ok {:4} failed {:?} p50 {:.1} ms",
            p.name(),
            st.ok(),
            st.errors,
            st.latency_us.value_at_quantile(0.5) as f64 / 1000.0
        );
    }
    let d = &r.delivery;
    eprintln!(
        "{run}: statuses {:?}; copies expected {} delivered {} (composed by the server {}) duplicated {} corrupted {:?}; delivery p50 {:.0} ms",
        stats.status_classes(Protocol::Eas),
        d.expected,
        d.delivered,
        r.composed,
        d.duplicated,
        d.corrupted,
        d.latency_us.value_at_quantile(0.5) as f64 / 1000.0
    );
    (r, stats)
}

/// What every day must show: no error, every task dispatched and finished without failing,
/// every copy found once and intact (or as the server composed it).
fn assert_day_passes(r: &mbx_loadgen::day::DayReport) {
    assert!(r.first_errors.is_empty(), "{:?}", r.first_errors);
    assert!(!r.overloaded && !r.interrupted && r.deadline.is_none());
    assert_eq!(
        r.dispatched, r.planned,
        "every task of the test's length dispatched"
    );
    for (k, t) in &r.tasks {
        assert!(t.failed.is_empty(), "{}: {:?}", k.name(), t.failed);
        assert_eq!(t.completed + t.skipped, t.dispatched, "{}", k.name());
    }
    let d = &r.delivery;
    assert!(d.expected > 0, "copies were sent: {d:?}");
    assert_eq!(d.delivered, d.expected, "every copy found: {d:?}");
    assert!(d.duplicated == 0 && d.corrupted.is_empty(), "{d:?}");
}

/// The `eas` client type's day against SOGo: devices log on, check, read, send, reply,
/// forward, move, delete and flag at their times; every task is counted per command, and every
/// copy sent (by SendMail, SmartReply, SmartForward) is found once in its recipient's Inbox by
/// Sync, intact or as the server composed it (the identity and the sender's text kept). Then a
/// mixed day on the same stack (desktop IMAP, webmail, POP3 and EAS users mailing each other):
/// one report, every copy found once whatever protocol sent and read it.
#[tokio::test]
async fn an_eas_day_and_a_mixed_day_do_every_task_and_find_every_copy_once() {
    use mbx_loadgen::sched::{ClientType, TaskKind};
    use mbx_loadgen::Protocol;
    let Some(s) = EasServer::start(14, "day") else {
        return;
    };
    let (r, stats) = day_on(&s, 1, &[ClientType::Eas; 6], "easday").await;
    assert_day_passes(&r);
    for k in [
        TaskKind::Logon,
        TaskKind::CheckInbox,
        TaskKind::SendNew,
        TaskKind::Read,
    ] {
        assert!(
            r.tasks.get(&k).is_some_and(|t| t.completed > 0),
            "{} completed",
            k.name()
        );
    }
    // Every command the tasks sent, each in its own histogram.
    for c in [
        "OPTIONS",
        "Provision",
        "FolderSync",
        "Sync",
        "SendMail",
        "ItemOperations",
    ] {
        let st = stats.get(Protocol::Eas, c);
        assert!(st.is_some_and(|st| st.ok() > 0), "{c}: {st:?}");
    }
    let smart = ["SmartReply", "SmartForward"]
        .iter()
        .filter_map(|c| stats.get(Protocol::Eas, c))
        .map(|st| st.ok())
        .sum::<u64>();
    let replies = [TaskKind::Reply, TaskKind::Forward]
        .iter()
        .filter_map(|k| r.tasks.get(k))
        .map(|t| t.completed)
        .sum::<u64>();
    assert!(
        replies == 0 || smart > 0,
        "replies went by SmartReply/SmartForward"
    );
    let classes = stats.status_classes(Protocol::Eas);
    assert!(
        classes.get("http_2xx").is_some_and(|n| *n > 0),
        "{classes:?}"
    );
    assert!(!classes.contains_key("http_5xx"), "{classes:?}");

    let mixed = [
        ClientType::DesktopImap,
        ClientType::Webmail,
        ClientType::Pop3,
        ClientType::Eas,
        ClientType::DesktopImap,
        ClientType::Webmail,
        ClientType::Pop3,
        ClientType::Eas,
    ];
    let (r, stats) = day_on(&s, 7, &mixed, "mixedday").await;
    assert_day_passes(&r);
    for p in [
        Protocol::Smtp,
        Protocol::Imap,
        Protocol::Pop3,
        Protocol::Eas,
    ] {
        assert!(
            stats.commands.keys().any(|(q, _)| *q == p),
            "{} commands in the mixed day",
            p.name()
        );
    }
}

/// Push: `eas` devices hold a parked Ping on their Inbox between tasks (DayPlan::eas_ping); new
/// mail a Ping reports is checked at once and its copies counted as seen by push; every copy
/// still found once.
#[tokio::test]
async fn eas_devices_parked_on_ping_see_new_mail_by_push() {
    use mbx_loadgen::sched::ClientType;
    use mbx_loadgen::Protocol;
    let Some(s) = EasServer::start_with(4, "push", 16) else {
        return;
    };
    let plan = mbx_loadgen::day::DayPlan {
        seed: 39,
        messages_per_day: 100,
        day: Duration::from_secs(240),
        duration: Some(Duration::from_secs(30)),
        overload_per_user: 100.0,
        grace: Duration::from_secs(30),
        eas_ping: Some(Duration::from_secs(6)),
        ..Default::default()
    };
    let (r, stats) = day_with(&s, 1, &[ClientType::Eas; 4], "pushday", plan).await;
    assert_day_passes(&r);
    let ping = stats.get(Protocol::Eas, "Ping");
    assert!(ping.is_some_and(|p| p.ok() > 0), "Pings answered: {ping:?}");
    assert!(
        r.delivery.seen_by_idle > 0,
        "copies seen by push: {} by push, {} by checks",
        r.delivery.seen_by_idle,
        r.delivery.seen_by_poll
    );
}
