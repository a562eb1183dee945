//! Initialization: fill a mailbox to a target count of generated messages over IMAP, resumable
//! and never touching a message it did not make.
//!
//! A mailbox's initialization messages are the run's messages of sender = the mailbox's own
//! address with sequence numbers [`INIT_SEQ_BASE`] + 0 .. target, so they are told apart from
//! mail sent during the day and can be counted again: a second fill first finds which of them
//! the mailbox holds (SEARCH on `X-Mbx-Id`, then each one's id) and appends only the missing
//! ones. Other messages, of other runs or not generated at all, are never changed or deleted.
//! Batches go in one MULTIAPPEND with non-synchronizing literals when the server offers both
//! (Dovecot does), else one APPEND at a time.
//!
//! Calendars and contacts of ActiveSync users ([`fill_pim`]) are filled the same way: to a
//! target count of this fill's items, found again by their identity (an appointment's UID, a
//! contact's e-mail address), the missing ones added by Sync `Add` in batches; other items are
//! never changed. The sizes ([`PimFill::default`]): 100 appointments and 50 contacts a user.

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;

use tokio::task::JoinSet;

use crate::clock;
use crate::conn::Endpoint;
use crate::error::{Error, Result};
use crate::imap::ImapClient;
use crate::message::Generator;
use crate::metrics::Recorder;
use crate::users::User;

/// The first sequence number of initialization messages (2^40: a user's day never sends that
/// many).
pub const INIT_SEQ_BASE: u64 = 1 << 40;

/// What to fill.
#[derive(Debug, Clone)]
pub struct Fill {
    /// Messages of this run the mailbox should hold.
    pub target: u32,
    /// Messages per MULTIAPPEND (1 for single APPENDs).
    pub batch: usize,
    /// The mailbox (`INBOX`).
    pub mailbox: String,
    /// Flags of the appended messages (`\Seen` for old mail).
    pub flags: String,
}

impl Default for Fill {
    fn default() -> Self {
        Fill {
            target: 0,
            batch: 16,
            mailbox: "INBOX".into(),
            flags: "\\Seen".into(),
        }
    }
}

/// What a fill did.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Filled {
    /// Initialization messages of this run already there.
    pub found: u32,
    /// Messages appended now.
    pub appended: u32,
    /// Bytes appended now.
    pub bytes: u64,
}

/// `1:5,7,9:12` for sorted, distinct numbers.
pub fn uid_set(uids: &[u32]) -> String {
    let mut out = String::new();
    let mut i = 0;
    while i < uids.len() {
        let start = uids[i];
        let mut end = start;
        while i + 1 < uids.len() && uids[i + 1] == end + 1 {
            i += 1;
            end = uids[i];
        }
        if !out.is_empty() {
            out.push(',');
        }
        if start == end {
            out.push_str(&start.to_string());
        } else {
            out.push_str(&format!("{start}:{end}"));
        }
        i += 1;
    }
    out
}

/// Fills the mailbox of `owner` (its address; the client is logged in as its user) to
/// `fill.target` initialization messages of `gen`'s run.
pub async fn fill_mailbox(
    imap: &mut ImapClient,
    gen: &Generator,
    owner: &str,
    fill: &Fill,
) -> Result<Filled> {
    fill_counted(imap, gen, owner, fill, None).await
}

/// Running totals of many fills, read by the progress reports.
#[derive(Debug, Default)]
struct Counters {
    found: AtomicU64,
    appended: AtomicU64,
    bytes: AtomicU64,
    /// Set: no new batch is started.
    stop: AtomicBool,
}

async fn fill_counted(
    imap: &mut ImapClient,
    gen: &Generator,
    owner: &str,
    fill: &Fill,
    counters: Option<&Counters>,
) -> Result<Filled> {
    let selected = imap.select(&fill.mailbox).await?;
    let prefix = format!("{}/{owner}/", gen.run());
    // In windows of messages: one SEARCH of a mailbox of 30,000 would answer with a line over
    // the 64 KiB bound.
    let mut uids = imap
        .uid_search_windows(1, selected.exists, &format!("HEADER X-Mbx-Id \"{prefix}\""))
        .await?;
    uids.sort_unstable();
    uids.dedup();
    // Which initialization messages are there (a bit per target message).
    let mut have = vec![false; fill.target as usize];
    let mut found = 0;
    for chunk in uids.chunks(500) {
        let fetched = imap
            .uid_fetch(&uid_set(chunk), "(UID BODY.PEEK[HEADER.FIELDS (X-Mbx-Id)])")
            .await?;
        for f in fetched {
            let header =
                String::from_utf8_lossy(f.body.as_deref().unwrap_or_default()).into_owned();
            let seq = header
                .lines()
                .find_map(|l| l.strip_prefix("X-Mbx-Id: "))
                .and_then(|v| v.trim().strip_prefix(&prefix))
                .and_then(|s| s.parse::<u64>().ok());
            if let Some(i) = seq.and_then(|s| s.checked_sub(INIT_SEQ_BASE)) {
                if let Some(slot) = have.get_mut(i as usize) {
                    if !*slot {
                        *slot = true;
                        found += 1;
                    }
                }
            }
        }
    }
    let missing: Vec<u64> = (0..u64::from(fill.target))
        .filter(|&i| !have[i as usize])
        .map(|i| INIT_SEQ_BASE + i)
        .collect();
    let mut out = Filled {
        found,
        appended: 0,
        bytes: 0,
    };
    if let Some(c) = counters {
        c.found.fetch_add(u64::from(found), Ordering::Relaxed);
    }
    let batch = fill.batch.max(1);
    for seqs in missing.chunks(batch) {
        if counters.is_some_and(|c| c.stop.load(Ordering::Relaxed)) {
            break;
        }
        let messages: Vec<Vec<u8>> = seqs
            .iter()
            .map(|&s| gen.message(owner, s, &[owner]))
            .collect();
        if batch > 1 && imap.can_multiappend() {
            let refs: Vec<&[u8]> = messages.iter().map(Vec::as_slice).collect();
            imap.multiappend(&fill.mailbox, &fill.flags, &refs).await?;
        } else {
            for m in &messages {
                imap.append(&fill.mailbox, &fill.flags, m).await?;
            }
        }
        let bytes = messages.iter().map(|m| m.len() as u64).sum::<u64>();
        out.appended += messages.len() as u32;
        out.bytes += bytes;
        if let Some(c) = counters {
            c.appended
                .fetch_add(messages.len() as u64, Ordering::Relaxed);
            c.bytes.fetch_add(bytes, Ordering::Relaxed);
        }
    }
    Ok(out)
}

/// The message count that fills a mailbox to about `mailbox_bytes` with `gen`'s messages:
/// the bytes over the generator's mean message size, rounded up. The sizes vary around the
/// mean (docs/loadgen.md), so the bytes reached are near the target over many messages, not
/// exact for one mailbox.
pub fn messages_for_bytes(gen: &Generator, mailbox_bytes: u64) -> u32 {
    let mean = gen.mean_size().max(1);
    u32::try_from(mailbox_bytes.div_ceil(mean)).unwrap_or(u32::MAX)
}

/// How many users an initialization has filled so far: handed to the progress function.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct InitProgress {
    /// Users to fill.
    pub users_total: u64,
    /// Users whose fill ended (filled, failed or stopped).
    pub users_done: u64,
    /// Of those, users whose fill failed.
    pub users_failed: u64,
    /// Of those, users whose fill was stopped (Ctrl-C) before the target: not filled.
    pub users_stopped: u64,
    /// Initialization messages found already there (fills that have looked).
    pub messages_found: u64,
    /// Messages appended so far.
    pub messages_appended: u64,
    /// Messages the mailboxes should hold in all (users x target): with found and appended
    /// the caller computes what is left, the rate and the ETA.
    pub messages_total_target: u64,
    /// Bytes appended so far.
    pub bytes_appended: u64,
    /// Since the initialization started.
    pub elapsed: Duration,
}

/// What an initialization of many users did.
#[derive(Debug, Clone, Default)]
pub struct InitReport {
    /// The final counts.
    pub progress: InitProgress,
    /// Whether the stop flag was set before the end: users not started, fills cut after a
    /// batch (a later call resumes them).
    pub stopped: bool,
    /// Users never started (stopped first).
    pub users_not_started: u64,
    /// Failed users by error class.
    pub failed_by_class: BTreeMap<&'static str, u64>,
    /// The failures (at most 100), each naming its user, server and command.
    pub errors: Vec<Error>,
}

/// Progress reports come at most this often (and once at the end).
pub const PROGRESS_EVERY: Duration = Duration::from_millis(500);

/// Fills the mailboxes of `users` to `fill.target` initialization messages each (see
/// [`fill_mailbox`]), `concurrency` users at a time (each its own IMAP session: connect,
/// LOGIN, fill, LOGOUT). `progress` gets the totals at most every [`PROGRESS_EVERY`] and once
/// at the end. A user whose fill fails is reported and the others go on. Once `stop` is set
/// no user is started and running fills stop after their current batch: a later call resumes
/// (a fill counts what the mailbox holds).
#[allow(clippy::too_many_arguments)]
pub async fn fill_users(
    imap: &Endpoint,
    users: &[User],
    gen: &Generator,
    fill: &Fill,
    concurrency: usize,
    stop: &AtomicBool,
    rec: Recorder,
    mut progress: impl FnMut(&InitProgress),
) -> InitReport {
    let started = clock::now();
    let counters = Arc::new(Counters::default());
    let total = users.len() as u64;
    let stopped = std::cell::Cell::new(0u64);
    let snapshot = |done: u64, failed: u64| InitProgress {
        users_total: total,
        users_done: done,
        users_failed: failed,
        users_stopped: stopped.get(),
        messages_found: counters.found.load(Ordering::Relaxed),
        messages_appended: counters.appended.load(Ordering::Relaxed),
        messages_total_target: total * u64::from(fill.target),
        bytes_appended: counters.bytes.load(Ordering::Relaxed),
        elapsed: started.elapsed(),
    };
    let mut report = InitReport::default();
    let (mut done, mut failed) = (0u64, 0u64);
    let mut pending = users.iter();
    let mut running = JoinSet::new();
    let mut last_report = clock::now();
    loop {
        if stop.load(Ordering::Relaxed) {
            counters.stop.store(true, Ordering::Relaxed);
        }
        let stopping = counters.stop.load(Ordering::Relaxed);
        while !stopping && running.len() < concurrency.max(1) {
            let Some(u) = pending.next() else { break };
            let (ep, u, gen, fill, rec, c) = (
                imap.clone(),
                u.clone(),
                gen.clone(),
                fill.clone(),
                rec.clone(),
                counters.clone(),
            );
            running.spawn(async move {
                let r: Result<bool> = async {
                    let mut s = ImapClient::connect(&ep, rec).await?;
                    s.login(&u.login, &u.password).await?;
                    let f = fill_counted(&mut s, &gen, &u.address, &fill, Some(&c)).await?;
                    s.logout().await?;
                    // Short of the target only when the stop cut it.
                    Ok(f.found.saturating_add(f.appended) >= fill.target)
                }
                .await;
                r.map_err(|mut e| {
                    e.user.get_or_insert(u.login);
                    e
                })
            });
        }
        if running.is_empty() {
            break;
        }
        tokio::select! {
            r = running.join_next() => {
                match r {
                    Some(Ok(Ok(true))) => done += 1,
                    Some(Ok(Ok(false))) => {
                        done += 1;
                        stopped.set(stopped.get() + 1);
                    }
                    Some(Ok(Err(e))) => {
                        done += 1;
                        failed += 1;
                        *report.failed_by_class.entry(e.class.name()).or_insert(0) += 1;
                        if report.errors.len() < 100 {
                            report.errors.push(e);
                        }
                    }
                    // A fill that panicked: counted as failed, without an error to show.
                    Some(Err(_)) => {
                        done += 1;
                        failed += 1;
                    }
                    None => {}
                }
            }
            _ = clock::sleep(Duration::from_millis(100)) => {}
        }
        if last_report.elapsed() >= PROGRESS_EVERY {
            last_report = clock::now();
            progress(&snapshot(done, failed));
        }
    }
    report.progress = snapshot(done, failed);
    report.stopped = counters.stop.load(Ordering::Relaxed);
    report.users_not_started = total - done;
    progress(&report.progress);
    report
}

#[cfg(test)]
mod tests {
    use super::uid_set;

    #[test]
    fn pim_items_are_distinct_and_spread_over_working_hours() {
        // 2026-12-02, a Wednesday, 13:26 UTC.
        let fill = super::PimFill {
            anchor: 1_796_217_960,
            ..super::PimFill::default()
        };
        let day0 = fill.anchor / 86_400;
        let apps: Vec<_> = (0..fill.appointments)
            .map(|n| super::pim_appointment(&fill, "user 1@x", n))
            .collect();
        let mut uids: Vec<&str> = apps.iter().map(|a| a.uid.as_str()).collect();
        uids.sort_unstable();
        uids.dedup();
        assert_eq!(uids.len(), 100);
        assert_eq!(apps[7].uid, "mbxinit-user_1_x-7");
        for a in &apps {
            let day = a.start / 86_400;
            // Monday 0 .. Sunday 6 (1970-01-01 was a Thursday).
            assert!((day + 3) % 7 < 5, "a weekend day: {a:?}");
            assert!(day + 28 >= day0 && day <= day0 + 28 + 2, "{a:?}");
            let hour = a.start % 86_400 / 3600;
            assert!((8..=16).contains(&hour), "{a:?}");
            assert!(matches!(a.end - a.start, 1800 | 3600), "{a:?}");
        }
        // Both halves of the span are used.
        assert!(apps.iter().any(|a| a.start / 86_400 < day0 - 14));
        assert!(apps.iter().any(|a| a.start / 86_400 > day0 + 14));
        let mut emails: Vec<String> = (0..fill.contacts)
            .map(|n| super::pim_contact(&fill, "u", n).email)
            .collect();
        emails.sort_unstable();
        emails.dedup();
        assert_eq!(emails.len(), 50);
        assert_eq!(
            super::pim_contact(&fill, "u", 3).email,
            "mbxinit-3.u@contacts.invalid"
        );
    }

    #[test]
    fn a_mailbox_size_is_a_count_of_mean_sized_messages_rounded_up() {
        let g = crate::message::Generator::new("r", 1, 75 * 1024, 0);
        assert_eq!(super::messages_for_bytes(&g, 0), 0);
        assert_eq!(super::messages_for_bytes(&g, 75 * 1024), 1);
        assert_eq!(super::messages_for_bytes(&g, 75 * 1024 + 1), 2);
        // 2 GB at 75 KB: 27,963 messages.
        assert_eq!(super::messages_for_bytes(&g, 2 << 30), 27_963);
    }

    #[test]
    fn uid_sets_compress_runs() {
        assert_eq!(uid_set(&[1, 2, 3, 5, 7, 8]), "1:3,5,7:8");
        assert_eq!(uid_set(&[4]), "4");
        assert_eq!(uid_set(&[]), "");
    }
}

/// What [`fill_pim`] puts in each ActiveSync user's Calendar and Contacts.
#[derive(Debug, Clone)]
pub struct PimFill {
    /// Appointments the Calendar should hold (100: some two months of a working calendar at
    /// 2.5 a working day, LoadSim's MMB profile keeping a calendar of a few appointments a day).
    pub appointments: u32,
    /// Contacts the Contacts folder should hold (50: a personal address book next to the
    /// directory; Exchange's LoadGen leaves contacts to the directory, a phone has its own).
    pub contacts: u32,
    /// Items per Sync `Add` (25).
    pub batch: usize,
    /// The identity of this fill's items (`mbxinit`): UIDs `<tag>-<user>-<n>`, addresses
    /// `<tag>-<n>.<user>@contacts.invalid`. Another tag is another set of items.
    pub tag: String,
    /// The day the appointments centre on, Unix seconds (its midnight UTC is used): they are
    /// spread over the [`PimFill::days`] days before it and the as many after it, one or two a
    /// working day, between 08:00 and 17:00 UTC, 30 or 60 minutes long.
    pub anchor: u64,
    /// Days before (and after) the anchor the appointments cover (28).
    pub days: u32,
}

impl Default for PimFill {
    fn default() -> Self {
        PimFill {
            appointments: 100,
            contacts: 50,
            batch: 25,
            tag: "mbxinit".into(),
            anchor: 0,
            days: 28,
        }
    }
}

/// What [`fill_pim`] did for one user.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct PimFilled {
    /// This fill's appointments already there.
    pub appointments_found: u32,
    /// Appointments added now.
    pub appointments_added: u32,
    /// This fill's contacts already there.
    pub contacts_found: u32,
    /// Contacts added now.
    pub contacts_added: u32,
}

/// The login as it goes into UIDs and addresses: letters, digits, `-` and `.` (others `_`).
fn pim_name(user: &str) -> String {
    user.chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '-' || c == '.' {
                c
            } else {
                '_'
            }
        })
        .collect()
}

/// Appointment `n` of `user`'s fill.
pub fn pim_appointment(fill: &PimFill, user: &str, n: u32) -> crate::eas::calendar::Appointment {
    use crate::eas::calendar::{busy, Appointment};
    let day0 = fill.anchor / 86_400 * 86_400;
    let span = u64::from(fill.days.max(1)) * 2;
    let target = u64::from(fill.appointments.max(1));
    // Spread evenly over the span (a day of the week 5 or 6 moves to the Monday after:
    // 1970-01-01 was a Thursday, so weekday = (days + 3) % 7 with Monday 0).
    let mut day =
        (day0 / 86_400 + u64::from(n) * span / target).saturating_sub(u64::from(fill.days));
    match (day + 3) % 7 {
        5 => day += 2,
        6 => day += 1,
        _ => {}
    }
    let hour = 8 + u64::from(n.wrapping_mul(7) % 9);
    let start = day * 86_400 + hour * 3600;
    let minutes = if n.is_multiple_of(3) { 30 } else { 60 };
    const SUBJECTS: [&str; 6] = [
        "Project status",
        "One-to-one",
        "Customer call",
        "Design review",
        "Team meeting",
        "Budget planning",
    ];
    Appointment {
        uid: format!("{}-{}-{n}", fill.tag, pim_name(user)),
        subject: format!("{} {n}", SUBJECTS[n as usize % SUBJECTS.len()]),
        location: format!("Room {}", 1 + n % 12),
        start,
        end: start + minutes * 60,
        body: format!("Initialization appointment {n} of {user}."),
        busy_status: busy::BUSY,
        reminder: Some(15),
        dtstamp: fill.anchor,
    }
}

/// Contact `n` of `user`'s fill.
pub fn pim_contact(fill: &PimFill, user: &str, n: u32) -> crate::eas::contacts::Contact {
    const FIRST: [&str; 8] = [
        "Ada", "Alan", "Grace", "Edsger", "Barbara", "Donald", "Frances", "Ken",
    ];
    const LAST: [&str; 8] = [
        "Lovelace", "Turing", "Hopper", "Dijkstra", "Liskov", "Knuth", "Allen", "Thompson",
    ];
    crate::eas::contacts::Contact {
        first_name: FIRST[n as usize % FIRST.len()].into(),
        last_name: format!("{}{}", LAST[(n as usize / FIRST.len()) % LAST.len()], n),
        email: format!("{}-{n}.{}@contacts.invalid", fill.tag, pim_name(user)),
        company: format!("Company {}", n % 17),
        job_title: "Engineer".into(),
        business_phone: format!("+1 555 01{:02}", n % 100),
        mobile_phone: format!("+1 555 02{:02}", n % 100),
        body: String::new(),
    }
}

/// Which `n` of `ids` (identities of items found) are this fill's: `make(n)` gives item n's.
fn found_numbers(ids: &[String], target: u32, make: impl Fn(u32) -> String) -> Vec<bool> {
    let have: std::collections::HashSet<&str> = ids.iter().map(String::as_str).collect();
    (0..target)
        .map(|n| have.contains(make(n).as_str()))
        .collect()
}

/// Every item of `collection` (Sync window after window).
async fn pim_items(
    dev: &mut crate::eas::client::EasClient,
    collection: &str,
    filter: Option<u32>,
) -> Result<Vec<crate::eas::client::Item>> {
    let mut items = Vec::new();
    // A bound on the windows: 100 items each, a million items at most.
    for _ in 0..10_000 {
        let batch = dev.sync_filtered(collection, 100, filter).await?;
        items.extend(batch.added);
        if !batch.more_available {
            return Ok(items);
        }
    }
    Err(Error::new(
        crate::error::ErrorClass::Protocol,
        Some(dev.user()),
        dev.server(),
        "Sync",
        format!("{collection}: more items than 10,000 windows of 100"),
    ))
}

/// Fills the Calendar and Contacts of the device's user to `fill`'s targets (FolderSync first
/// when the device has none). Resumable: the items of this fill already there are counted (a
/// Sync of everything, FilterType 0) and only the missing ones added.
pub async fn fill_pim(
    dev: &mut crate::eas::client::EasClient,
    fill: &PimFill,
) -> Result<PimFilled> {
    use crate::eas::calendar::Appointment;
    use crate::eas::client::{filter_type, folder_type};
    use crate::eas::contacts::Contact;
    if dev.folders().is_empty() {
        dev.folder_sync().await?;
    }
    let folder = |dev: &crate::eas::client::EasClient, kind: u32, what: &str| {
        dev.folder(kind)
            .map(|f| f.server_id.clone())
            .ok_or_else(|| {
                Error::new(
                    crate::error::ErrorClass::Protocol,
                    Some(dev.user()),
                    dev.server(),
                    "FolderSync",
                    format!("no {what} folder"),
                )
            })
    };
    let calendar = folder(dev, folder_type::CALENDAR, "Calendar")?;
    let contacts = folder(dev, folder_type::CONTACTS, "Contacts")?;
    let user = dev.user().to_owned();
    let batch = fill.batch.max(1);
    let mut done = PimFilled::default();

    let uids: Vec<String> = pim_items(dev, &calendar, Some(filter_type::ALL))
        .await?
        .iter()
        .filter_map(|i| Appointment::from_application_data(&i.data).ok())
        .map(|a| a.uid)
        .collect();
    let have = found_numbers(&uids, fill.appointments, |n| {
        pim_appointment(fill, &user, n).uid
    });
    done.appointments_found = have.iter().filter(|h| **h).count() as u32;
    let missing: Vec<u32> = (0..fill.appointments)
        .filter(|n| !have[*n as usize])
        .collect();
    for chunk in missing.chunks(batch) {
        let items: Vec<_> = chunk
            .iter()
            .map(|n| pim_appointment(fill, &user, *n).to_application_data())
            .collect();
        let (added, _) = dev.sync_add(&calendar, &items).await?;
        done.appointments_added += added.len() as u32;
    }

    let emails: Vec<String> = pim_items(dev, &contacts, None)
        .await?
        .iter()
        .filter_map(|i| Contact::from_application_data(&i.data).ok())
        .map(|c| c.email)
        .collect();
    let have = found_numbers(&emails, fill.contacts, |n| {
        pim_contact(fill, &user, n).email
    });
    done.contacts_found = have.iter().filter(|h| **h).count() as u32;
    let missing: Vec<u32> = (0..fill.contacts).filter(|n| !have[*n as usize]).collect();
    for chunk in missing.chunks(batch) {
        let items: Vec<_> = chunk
            .iter()
            .map(|n| pim_contact(fill, &user, *n).to_application_data())
            .collect();
        let (added, _) = dev.sync_add(&contacts, &items).await?;
        done.contacts_added += added.len() as u32;
    }
    Ok(done)
}

/// [`fill_pim`] for many users: one device each (from `devices`, FolderSync first),
/// `concurrency` users at a time. Each user's outcome, in the order of `devices`: a user whose
/// fill fails does not stop the others, and a later call resumes it.
pub async fn fill_pim_users(
    devices: Vec<crate::eas::client::Config>,
    fill: &PimFill,
    concurrency: usize,
) -> Vec<Result<PimFilled>> {
    let mut out: Vec<Option<Result<PimFilled>>> = (0..devices.len()).map(|_| None).collect();
    let mut pending = devices.into_iter().enumerate();
    let mut running = JoinSet::new();
    loop {
        while running.len() < concurrency.max(1) {
            let Some((i, cfg)) = pending.next() else {
                break;
            };
            let fill = fill.clone();
            running.spawn(async move {
                let r = async {
                    let mut dev = crate::eas::client::EasClient::new(cfg)?;
                    fill_pim(&mut dev, &fill).await
                }
                .await;
                (i, r)
            });
        }
        let Some(joined) = running.join_next().await else {
            break;
        };
        // A fill task that panicked leaves its slot empty: reported below.
        if let Ok((i, r)) = joined {
            if let Some(slot) = out.get_mut(i) {
                *slot = Some(r);
            }
        }
    }
    out.into_iter()
        .map(|r| {
            r.unwrap_or_else(|| {
                Err(Error::new(
                    crate::error::ErrorClass::Protocol,
                    None,
                    "",
                    "fill_pim",
                    "the fill task ended without a result",
                ))
            })
        })
        .collect()
}
