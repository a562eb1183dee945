//! Meeting requests: the iCalendar text (RFC 5545, iTIP `METHOD:REQUEST`, RFC 5546) of an
//! invitation and the MIME message (iMIP, RFC 6047) that carries it to the invitees, sent by
//! the organizer's device with SendMail like any other message.
//!
//! The text is what RFC 5545 asks of a writer: CRLF line ends, content lines folded at 75
//! octets (never inside a UTF-8 character), `UID`, `DTSTAMP`, values escaped (`\\`, `;`, `,`,
//! newlines). The MIME is `multipart/alternative`: a plain-text part and the `text/calendar;
//! method=REQUEST` part, both 7-bit when the text is ASCII, 8-bit otherwise.
//!
//! **What a server keeps**: SOGo's SendMail rewrites `From` (to the account's identity) and
//! `Subject` of what a device sends, so the proof of delivery must not rest on them; it rests
//! on the `Message-ID` header and on [`calendar_hash`], the hash of the calendar part's text
//! (with line ends made LF: a server that passes MIME through XML turns CRLF into LF).

use xxhash_rust::xxh3::xxh3_128;

use super::calendar::compact_utc;

/// An invitation to a meeting.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Invitation {
    /// The event's UID (the same in every invitee's copy).
    pub uid: String,
    /// The organizer's address.
    pub organizer: String,
    /// The invitees' addresses.
    pub attendees: Vec<String>,
    /// The subject (`SUMMARY`).
    pub summary: String,
    /// Where (`LOCATION`; empty: none).
    pub location: String,
    /// A description (empty: none).
    pub description: String,
    /// Start and end, Unix seconds (UTC).
    pub start: u64,
    /// End, after `start`.
    pub end: u64,
    /// When the invitation was made, Unix seconds (`DTSTAMP`).
    pub dtstamp: u64,
    /// iTIP `SEQUENCE` (0 for a new meeting).
    pub sequence: u32,
}

/// RFC 5545 3.3.11: TEXT values escape backslash, semicolon, comma and newline.
fn escape_text(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for c in s.chars() {
        match c {
            '\\' => out.push_str("\\\\"),
            ';' => out.push_str("\\;"),
            ',' => out.push_str("\\,"),
            '\n' => out.push_str("\\n"),
            '\r' => {}
            c => out.push(c),
        }
    }
    out
}

/// Appends one content line, folded (RFC 5545 3.1): no line over 75 octets before its CRLF,
/// each continuation starting with one space, no UTF-8 character split.
fn push_line(out: &mut String, line: &str) {
    let mut budget = 75;
    let mut used = 0;
    for c in line.chars() {
        let n = c.len_utf8();
        if used + n > budget {
            out.push_str("\r\n ");
            // The leading space counts.
            used = 1;
            budget = 75;
        }
        out.push(c);
        used += n;
    }
    out.push_str("\r\n");
}

impl Invitation {
    /// The iCalendar object (`METHOD:REQUEST`, one `VEVENT`).
    pub fn to_ics(&self) -> String {
        let mut out = String::new();
        let mut line = |l: String| push_line(&mut out, &l);
        line("BEGIN:VCALENDAR".into());
        line("PRODID:-//mbxstress//loadgen//EN".into());
        line("VERSION:2.0".into());
        line("METHOD:REQUEST".into());
        line("BEGIN:VEVENT".into());
        line(format!("UID:{}", self.uid));
        line(format!("DTSTAMP:{}", compact_utc(self.dtstamp)));
        line(format!("DTSTART:{}", compact_utc(self.start)));
        line(format!("DTEND:{}", compact_utc(self.end)));
        line(format!("SEQUENCE:{}", self.sequence));
        line(format!("SUMMARY:{}", escape_text(&self.summary)));
        if !self.location.is_empty() {
            line(format!("LOCATION:{}", escape_text(&self.location)));
        }
        if !self.description.is_empty() {
            line(format!("DESCRIPTION:{}", escape_text(&self.description)));
        }
        line(format!("ORGANIZER:mailto:{}", self.organizer));
        for a in &self.attendees {
            line(format!(
                "ATTENDEE;ROLE=REQ-PARTICIPANT;PARTSTAT=NEEDS-ACTION;RSVP=TRUE:mailto:{a}"
            ));
        }
        line("STATUS:CONFIRMED".into());
        line("TRANSP:OPAQUE".into());
        line("END:VEVENT".into());
        line("END:VCALENDAR".into());
        out
    }

    /// The iMIP message: headers (`From` the organizer, `To` the attendees, `message_id` with
    /// its angle brackets, `date` as RFC 5322 text), a plain-text part and the calendar part.
    pub fn to_mime(&self, message_id: &str, date: &str) -> Vec<u8> {
        let ics = self.to_ics();
        let text = format!(
            "You are invited: {}\r\nWhen: {} to {} (UTC)\r\n",
            self.summary,
            compact_utc(self.start),
            compact_utc(self.end)
        );
        let cte = |s: &str| if s.is_ascii() { "7bit" } else { "8bit" };
        let boundary = format!("=_mbx_{:032x}", xxh3_128(self.uid.as_bytes()));
        let subject: String = self.summary.chars().filter(|c| !c.is_control()).collect();
        let mut m = String::new();
        m.push_str(&format!("From: {}\r\n", self.organizer));
        m.push_str(&format!("To: {}\r\n", self.attendees.join(", ")));
        m.push_str(&format!("Subject: Invitation: {subject}\r\n"));
        m.push_str(&format!("Message-ID: {message_id}\r\n"));
        m.push_str(&format!("Date: {date}\r\n"));
        m.push_str("MIME-Version: 1.0\r\n");
        m.push_str(&format!(
            "Content-Type: multipart/alternative; boundary=\"{boundary}\"\r\n\r\n"
        ));
        m.push_str(&format!("--{boundary}\r\n"));
        m.push_str("Content-Type: text/plain; charset=utf-8\r\n");
        m.push_str(&format!(
            "Content-Transfer-Encoding: {}\r\n\r\n",
            cte(&text)
        ));
        m.push_str(&text);
        m.push_str(&format!("--{boundary}\r\n"));
        m.push_str("Content-Type: text/calendar; charset=utf-8; method=REQUEST\r\n");
        m.push_str(&format!("Content-Transfer-Encoding: {}\r\n\r\n", cte(&ics)));
        m.push_str(&ics);
        m.push_str(&format!("--{boundary}--\r\n"));
        m.into_bytes()
    }
}

/// The calendar part of a MIME message: the content of the first body part whose
/// `Content-Type` is `text/calendar`, found between the lines of the message's first
/// multipart boundary (CRLF or LF line ends). Transfer encodings other than 7bit and 8bit are
/// not decoded (None then).
pub fn calendar_part(mime: &[u8]) -> Option<String> {
    let text = String::from_utf8_lossy(mime).replace("\r\n", "\n");
    let lower = text.to_ascii_lowercase();
    let at = lower.find("boundary=")? + "boundary=".len();
    let rest = &text[at..];
    let boundary = match rest.strip_prefix('"') {
        Some(q) => &q[..q.find('"')?],
        None => rest.split(|c: char| c == ';' || c.is_whitespace()).next()?,
    };
    let delimiter = format!("\n--{boundary}");
    for part in text.split(&delimiter).skip(1) {
        if part.starts_with("--") {
            break;
        }
        let part = part.strip_prefix('\n').unwrap_or(part);
        let (head, body) = part.split_once("\n\n")?;
        let head = head
            .to_ascii_lowercase()
            .replace("\n ", " ")
            .replace("\n\t", " ");
        let is_calendar = head.lines().any(|l| {
            l.strip_prefix("content-type:")
                .is_some_and(|v| v.trim_start().starts_with("text/calendar"))
        });
        if !is_calendar {
            continue;
        }
        let encoded = head.lines().any(|l| {
            l.strip_prefix("content-transfer-encoding:")
                .is_some_and(|v| !matches!(v.trim(), "7bit" | "8bit"))
        });
        return (!encoded).then(|| body.to_owned());
    }
    None
}

/// The hash of an invitation's calendar text as delivery checks compare it: xxh3-128 of the
/// text with line ends made LF and trailing line ends dropped (hex, 32 digits).
pub fn calendar_hash(ics: &str) -> String {
    let t = ics.replace("\r\n", "\n");
    format!("{:032x}", xxh3_128(t.trim_end_matches('\n').as_bytes()))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn invitation() -> Invitation {
        Invitation {
            uid: "mbx-meeting-1-loadgen1-3".into(),
            organizer: "loadgen1@loadgen.test".into(),
            attendees: vec![
                "loadgen2@loadgen.test".into(),
                "loadgen3@loadgen.test".into(),
            ],
            summary: "Quarterly planning, all teams; bring numbers \\ plans — ünïcödé déjà vu \
                      and a summary long enough to be folded twice over the 75 octet limit"
                .into(),
            location: "Room 1".into(),
            description: "Line one\nLine two".into(),
            start: 1_796_216_400,
            end: 1_796_220_000,
            dtstamp: 1_796_200_000,
            sequence: 0,
        }
    }

    #[test]
    fn ics_is_well_formed() {
        let ics = invitation().to_ics();
        assert!(ics.ends_with("END:VCALENDAR\r\n"));
        // CRLF only: no bare LF, no bare CR.
        let bytes = ics.as_bytes();
        for (i, b) in bytes.iter().enumerate() {
            if *b == b'\n' {
                assert_eq!(bytes.get(i.wrapping_sub(1)), Some(&b'\r'), "bare LF at {i}");
            }
            if *b == b'\r' {
                assert_eq!(bytes.get(i + 1), Some(&b'\n'), "bare CR at {i}");
            }
        }
        let lines: Vec<&str> = ics.split("\r\n").filter(|l| !l.is_empty()).collect();
        for l in &lines {
            assert!(l.len() <= 75, "{} octets: {l:?}", l.len());
        }
        assert!(
            lines.iter().filter(|l| l.starts_with(' ')).count() >= 2,
            "{ics}"
        );
        // Unfolded, the properties are there once each.
        let unfolded = ics.replace("\r\n ", "");
        for p in [
            "METHOD:REQUEST\r\n",
            "UID:mbx-meeting-1-loadgen1-3\r\n",
            "DTSTAMP:20261202T082640Z\r\n",
            "DTSTART:20261202T130000Z\r\n",
            "DTEND:20261202T140000Z\r\n",
            "ORGANIZER:mailto:loadgen1@loadgen.test\r\n",
            "DESCRIPTION:Line one\\nLine two\r\n",
        ] {
            assert_eq!(unfolded.matches(p).count(), 1, "{p:?} in {unfolded}");
        }
        assert!(unfolded
            .contains("SUMMARY:Quarterly planning\\, all teams\\; bring numbers \\\\ plans"));
        assert_eq!(unfolded.matches("ATTENDEE;").count(), 2);
        let starting = |p: &str| unfolded.split("\r\n").filter(|l| l.starts_with(p)).count();
        assert_eq!((starting("BEGIN:"), starting("END:")), (2, 2));
    }

    #[test]
    fn folding_never_splits_a_character() {
        let mut out = String::new();
        let line = format!("SUMMARY:{}", "é".repeat(100));
        push_line(&mut out, &line);
        // `out` is a String: a split character would not have compiled in; check the octets.
        for l in out.split("\r\n").filter(|l| !l.is_empty()) {
            assert!(l.len() <= 75);
        }
        assert_eq!(out.replace("\r\n ", ""), format!("{line}\r\n"));
    }

    #[test]
    fn the_calendar_part_is_found_again_with_either_line_end() {
        let inv = invitation();
        let mime = inv.to_mime("<m1@mbxstress.test>", "Wed, 2 Dec 2026 13:00:00 +0000");
        let text = String::from_utf8(mime.clone()).expect("UTF-8");
        assert!(text.contains("Content-Type: text/calendar; charset=utf-8; method=REQUEST\r\n"));
        assert!(text.contains("Content-Transfer-Encoding: 8bit\r\n"));
        let part = calendar_part(&mime).expect("a calendar part");
        assert_eq!(calendar_hash(&part), calendar_hash(&inv.to_ics()));
        let lf = text.replace("\r\n", "\n");
        let part = calendar_part(lf.as_bytes()).expect("a calendar part");
        assert_eq!(calendar_hash(&part), calendar_hash(&inv.to_ics()));
        // A different invitation hashes differently.
        let mut other = inv.clone();
        other.start += 60;
        assert_ne!(calendar_hash(&other.to_ics()), calendar_hash(&inv.to_ics()));
        assert_eq!(calendar_part(b"Subject: x\r\n\r\nno parts\r\n"), None);
    }
}
