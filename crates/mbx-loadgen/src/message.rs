//! Generated messages and their verification.
//!
//! Every message is valid MIME (RFC 5322, 2045-2049), unique, and a pure function of the run's
//! seed, its sender and its sequence number, so it can be made again to check a copy without
//! being stored: memory is bounded by one message, never by how many were sent.
//!
//! **Sizes** follow the message mix of Microsoft's LoadSim MMB benchmark user (by weight: 1 KB
//! 60, 2 KB 16, 4 KB 4, 10 KB attachment 6, 15 KB spreadsheet 4, 16 KB document 4, 43 KB
//! bitmap 2; mean 3.94 KB) scaled so that its mean is the profile's average message size (75 KB
//! for the Exchange 2013 calculator's profiles), each size then varied uniformly by +-10%
//! (which keeps the mean). At 75 KB: 60% text-only messages of about 19 KB, 16% of 38 KB, 4% of
//! 76 KB, and 16% with an attachment of 190-820 KB. See [`SIZE_MIX`].
//!
//! **Content** cannot be compressed or deduplicated away: text is random words over letters and
//! digits (about 5.8 bits of entropy per byte), attachments are random bytes in base64 (6 bits
//! per byte); no two messages share a line. A compressor can remove only the encodings'
//! redundancy (about 25-30%), a deduplicating store nothing.
//!
//! **Identity**: `X-Mbx-Id: <run>/<sender>/<seq>` and `X-Mbx-Hash: xxh3-128=<hex>`, the hash of
//! the message as sent without its own `X-Mbx-Hash` line (the last header). Servers add trace
//! headers above the message (Return-Path, Delivered-To, Received); the verifier skips them.

use base64::engine::general_purpose::STANDARD as B64;
use base64::Engine as _;
use xxhash_rust::xxh3::{xxh3_64, Xxh3};

/// The LoadSim MMB message mix: (weight, size in KB at a 3.94 KB mean, attachment). The weights
/// sum to 96.
pub const SIZE_MIX: [(u32, u32, Option<Attachment>); 7] = [
    (60, 1, None),
    (16, 2, None),
    (4, 4, None),
    (6, 10, Some(Attachment::File)),
    (4, 15, Some(Attachment::Spreadsheet)),
    (4, 16, Some(Attachment::Document)),
    (2, 43, Some(Attachment::Bitmap)),
];

/// The mix's mean size in bytes before scaling: 378 KB / 96.
const MIX_MEAN_BYTES: f64 = 378.0 * 1024.0 / 96.0;

/// The kind of attachment a message carries (its MIME type and file name).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Attachment {
    /// `application/octet-stream`, attachment.bin.
    File,
    /// A spreadsheet (.xlsx type), sheet.xlsx.
    Spreadsheet,
    /// A document (.docx type), document.docx.
    Document,
    /// `image/bmp`, picture.bmp.
    Bitmap,
}

impl Attachment {
    fn mime(self) -> (&'static str, &'static str) {
        match self {
            Attachment::File => ("application/octet-stream", "attachment.bin"),
            Attachment::Spreadsheet => (
                "application/vnd.openxmlformats-officedocument.spreadsheetml.sheet",
                "sheet.xlsx",
            ),
            Attachment::Document => (
                "application/vnd.openxmlformats-officedocument.wordprocessingml.document",
                "document.docx",
            ),
            Attachment::Bitmap => ("image/bmp", "picture.bmp"),
        }
    }
}

/// A message's identity.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct MessageId {
    /// The run that made it.
    pub run: String,
    /// The sender's address.
    pub sender: String,
    /// The sender's sequence number.
    pub seq: u64,
}

impl std::fmt::Display for MessageId {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}/{}/{}", self.run, self.sender, self.seq)
    }
}

/// What a fetched message is.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Verdict {
    /// Ours, every byte as sent.
    Intact(MessageId),
    /// Ours, changed: `what` names the part and offset.
    Corrupted {
        /// Its identity (as its header says).
        id: MessageId,
        /// What differs, e.g. "body: attachment sheet.xlsx, line 12, byte 30 of the body".
        what: String,
    },
    /// Not made by this run: no `X-Mbx-Id`, or another run's.
    NotOurs(String),
}

/// Makes and verifies the messages of one run.
#[derive(Debug, Clone)]
pub struct Generator {
    run: String,
    seed: u64,
    mean_size: u64,
    epoch: u64,
    /// Every message this size, text only (submission benchmarks: the same size as the peers').
    fixed_size: Option<usize>,
}

/// xoshiro256** (Blackman and Vigna): fast, and the same numbers on every platform and version.
struct Rng([u64; 4]);

impl Rng {
    fn new(seed: u64) -> Rng {
        // Seeded by SplitMix64 (mbx-core's), as xoshiro's authors advise.
        let mut sm = mbx_core::SplitMix64::new(seed);
        let mut next = || sm.next_u64();
        Rng([next(), next(), next(), next()])
    }

    fn next(&mut self) -> u64 {
        let s = &mut self.0;
        let result = s[1].wrapping_mul(5).rotate_left(7).wrapping_mul(9);
        let t = s[1] << 17;
        s[2] ^= s[0];
        s[3] ^= s[1];
        s[1] ^= s[2];
        s[0] ^= s[3];
        s[2] ^= t;
        s[3] = s[3].rotate_left(45);
        result
    }

    /// Uniform in 0..n.
    fn below(&mut self, n: u64) -> u64 {
        ((u128::from(self.next()) * u128::from(n)) >> 64) as u64
    }

    /// Uniform in [0, 1).
    fn unit(&mut self) -> f64 {
        (self.next() >> 11) as f64 / (1u64 << 53) as f64
    }

    fn fill(&mut self, out: &mut [u8]) {
        for chunk in out.chunks_mut(8) {
            let v = self.next().to_le_bytes();
            chunk.copy_from_slice(&v[..chunk.len()]);
        }
    }
}

const WORD_CHARS: &[u8; 62] = b"abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789";

fn word(rng: &mut Rng, out: &mut Vec<u8>) {
    let len = 1 + rng.below(10) as usize;
    for _ in 0..len {
        out.push(WORD_CHARS[rng.below(62) as usize]);
    }
}

/// Text characters by random byte: one in six a space (words of 5 characters on average), the
/// rest letters and digits (each 3 or 4 times in 256): about 5.8 bits of entropy per character.
const TEXT_TABLE: [u8; 256] = {
    let mut t = [b' '; 256];
    let (mut i, mut j) = (0, 0);
    while i < 256 {
        if i % 6 != 5 {
            t[i] = WORD_CHARS[j % 62];
            j += 1;
        }
        i += 1;
    }
    t
};

/// Random text lines of 64 to 76 characters (a line ends at the first space after 64), CRLF-ended,
/// until `out` grew by `len` (the last line cut there). Eight characters per draw of the
/// generator, a line built on the stack: 10 KB of text costs a few microseconds (submission at
/// full speed makes one per message).
fn text(rng: &mut Rng, len: usize, out: &mut Vec<u8>) {
    let end = out.len() + len;
    out.reserve(len + 80);
    let mut line = [0u8; 80];
    while out.len() < end {
        let mut n = 0;
        while n < 64 {
            for b in rng.next().to_le_bytes() {
                line[n] = TEXT_TABLE[usize::from(b)];
                n += 1;
            }
        }
        'word: while n < 76 {
            for b in rng.next().to_le_bytes() {
                let c = TEXT_TABLE[usize::from(b)];
                if c == b' ' || n == 76 {
                    break 'word;
                }
                line[n] = c;
                n += 1;
            }
        }
        let mut n = n.min(end - out.len());
        // No trailing space (a server or a client may strip it).
        while n > 1 && line[n - 1] == b' ' {
            n -= 1;
        }
        line[n] = b'\r';
        line[n + 1] = b'\n';
        out.extend_from_slice(&line[..n + 2]);
    }
}

/// `Fri, 27 Nov 2026 07:00:00 +0000` for Unix seconds (RFC 5322 3.3).
fn rfc5322_date(secs: u64) -> String {
    let days = secs / 86_400;
    let rem = secs % 86_400;
    // Days to civil date (H. Hinnant's algorithm).
    let z = days as i64 + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = doy - (153 * mp + 2) / 5 + 1;
    let m = if mp < 10 { mp + 3 } else { mp - 9 };
    let y = yoe + era * 400 + i64::from(m <= 2);
    const WD: [&str; 7] = ["Thu", "Fri", "Sat", "Sun", "Mon", "Tue", "Wed"];
    const MON: [&str; 12] = [
        "Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec",
    ];
    format!(
        "{}, {} {} {} {:02}:{:02}:{:02} +0000",
        WD[(days % 7) as usize],
        d,
        MON[(m - 1) as usize],
        y,
        rem / 3600,
        rem / 60 % 60,
        rem % 60
    )
}

fn hex128(v: u128) -> String {
    format!("{v:032x}")
}

/// Where our message starts in `bytes` (skipping trace headers a server put above it): the
/// offset of the first line that starts with `From: `.
fn our_start(bytes: &[u8], header_end: usize) -> Option<usize> {
    let mut pos = 0;
    while pos < header_end {
        if bytes[pos..].starts_with(b"From: ") {
            return Some(pos);
        }
        pos += bytes[pos..header_end].iter().position(|&b| b == b'\n')? + 1;
    }
    None
}

fn header_end(bytes: &[u8]) -> Option<usize> {
    bytes
        .windows(4)
        .position(|w| w == b"\r\n\r\n")
        .map(|i| i + 2)
}

/// The value of header `name` (first occurrence, unfolded) within `head`, with the line's range.
fn header<'a>(head: &'a [u8], name: &str) -> Option<(&'a [u8], std::ops::Range<usize>)> {
    let mut pos = 0;
    while pos < head.len() {
        let end = head[pos..]
            .iter()
            .position(|&b| b == b'\n')
            .map_or(head.len(), |i| pos + i + 1);
        let line = &head[pos..end];
        if line.len() > name.len() + 1
            && line[..name.len()].eq_ignore_ascii_case(name.as_bytes())
            && line[name.len()] == b':'
        {
            let v = &line[name.len() + 1..];
            let v = v
                .strip_suffix(b"\r\n")
                .or_else(|| v.strip_suffix(b"\n"))
                .unwrap_or(v);
            let v = v.strip_prefix(b" ").unwrap_or(v);
            return Some((v, pos..end));
        }
        pos = end;
    }
    None
}

impl Generator {
    /// A generator for run `run` (letters, digits, `.`, `_`, `-`), messages of `mean_size`
    /// bytes on average, dated from `epoch` (Unix seconds) on.
    pub fn new(run: &str, seed: u64, mean_size: u64, epoch: u64) -> Generator {
        let run: String = run
            .chars()
            .filter(|c| c.is_ascii_alphanumeric() || matches!(c, '.' | '_' | '-'))
            .take(64)
            .collect();
        Generator {
            run,
            seed,
            mean_size: mean_size.max(1024),
            epoch,
            fixed_size: None,
        }
    }

    /// The same generator with every message `bytes` long (at least 1,024; within a line of
    /// 78 bytes), text only: the size mix is not used. For throughput benchmarks against tools
    /// that send one size (smtp-source `-l`, postal `-m`/`-M`).
    pub fn with_fixed_size(mut self, bytes: usize) -> Generator {
        self.fixed_size = Some(bytes.max(1024));
        self
    }

    /// The run id.
    pub fn run(&self) -> &str {
        &self.run
    }

    /// The mean message size in bytes (the one given, at least 1 KiB).
    pub fn mean_size(&self) -> u64 {
        self.mean_size
    }

    fn rng(&self, sender: &str, seq: u64, stream: u8) -> Rng {
        let mut h = Xxh3::new();
        h.update(&self.seed.to_le_bytes());
        h.update(sender.as_bytes());
        h.update(&seq.to_le_bytes());
        h.update(&[stream]);
        Rng::new(h.digest())
    }

    /// The size class and target size in bytes of a message (a function of its identity).
    pub fn plan(&self, sender: &str, seq: u64) -> (Option<Attachment>, usize) {
        if let Some(size) = self.fixed_size {
            return (None, size);
        }
        let mut rng = self.rng(sender, seq, 0);
        let mut pick = rng.below(96) as u32;
        let mut class = SIZE_MIX[0];
        for c in SIZE_MIX {
            if pick < c.0 {
                class = c;
                break;
            }
            pick -= c.0;
        }
        let scale = self.mean_size as f64 / MIX_MEAN_BYTES;
        let jitter = 0.9 + 0.2 * rng.unit();
        let size = (f64::from(class.1) * 1024.0 * scale * jitter).round() as usize;
        (class.2, size.max(1024))
    }

    /// The message `seq` of `sender` to `recipients`, CRLF line endings, about its planned size.
    pub fn message(&self, sender: &str, seq: u64, recipients: &[&str]) -> Vec<u8> {
        let (attachment, size) = self.plan(sender, seq);
        let mut rng = self.rng(sender, seq, 1);
        let boundary = format!("=_mbx_{:016x}{:016x}", rng.next(), rng.next());
        let mut subject = Vec::new();
        for i in 0..3 + rng.below(5) {
            if i > 0 {
                subject.push(b' ');
            }
            word(&mut rng, &mut subject);
        }
        let mut head = Vec::with_capacity(1024);
        head.extend_from_slice(format!("From: <{sender}>\r\n").as_bytes());
        head.extend_from_slice(b"To: ");
        for (i, r) in recipients.iter().enumerate() {
            if i > 0 {
                head.extend_from_slice(b",\r\n ");
            }
            head.extend_from_slice(format!("<{r}>").as_bytes());
        }
        head.extend_from_slice(b"\r\n");
        head.extend_from_slice(
            format!(
                "Subject: [mbx {}/{seq}] {}\r\n",
                self.run,
                String::from_utf8_lossy(&subject)
            )
            .as_bytes(),
        );
        head.extend_from_slice(format!("Date: {}\r\n", rfc5322_date(self.epoch + seq)).as_bytes());
        let local = xxh3_64(sender.as_bytes());
        head.extend_from_slice(
            format!(
                "Message-ID: <{seq}.{local:016x}@{}.mbxstress.invalid>\r\n",
                self.run
            )
            .as_bytes(),
        );
        head.extend_from_slice(format!("X-Mbx-Id: {}/{sender}/{seq}\r\n", self.run).as_bytes());
        head.extend_from_slice(b"MIME-Version: 1.0\r\n");
        let body = self.body(
            sender,
            seq,
            attachment,
            size.saturating_sub(head.len() + 200),
            &boundary,
        );
        match attachment {
            None => head.extend_from_slice(b"Content-Type: text/plain; charset=us-ascii\r\nContent-Transfer-Encoding: 7bit\r\n"),
            Some(_) => head.extend_from_slice(format!("Content-Type: multipart/mixed; boundary=\"{boundary}\"\r\n").as_bytes()),
        }
        let mut h = Xxh3::new();
        h.update(&head);
        h.update(b"\r\n");
        h.update(&body);
        let hash = h.digest128();
        let mut out = head;
        out.extend_from_slice(format!("X-Mbx-Hash: xxh3-128={}\r\n\r\n", hex128(hash)).as_bytes());
        out.extend_from_slice(&body);
        out
    }

    /// The body: a function of (seed, sender, seq) only, so a copy's body can be checked without
    /// its headers.
    fn body(
        &self,
        sender: &str,
        seq: u64,
        attachment: Option<Attachment>,
        len: usize,
        boundary: &str,
    ) -> Vec<u8> {
        let mut rng = self.rng(sender, seq, 2);
        let mut out = Vec::with_capacity(len + 512);
        let Some(kind) = attachment else {
            text(&mut rng, len.max(64), &mut out);
            return out;
        };
        let text_len = (len / 20).clamp(256, 2048);
        out.extend_from_slice(b"This is a multi-part message in MIME format.\r\n\r\n");
        out.extend_from_slice(format!("--{boundary}\r\nContent-Type: text/plain; charset=us-ascii\r\nContent-Transfer-Encoding: 7bit\r\n\r\n").as_bytes());
        text(&mut rng, text_len, &mut out);
        let (mime, name) = kind.mime();
        out.extend_from_slice(
            format!(
                "\r\n--{boundary}\r\nContent-Type: {mime}; name=\"{name}\"\r\nContent-Disposition: attachment; filename=\"{name}\"\r\nContent-Transfer-Encoding: base64\r\n\r\n"
            )
            .as_bytes(),
        );
        // 57 raw bytes make one 76-character line (78 bytes with CRLF).
        let remaining = len.saturating_sub(out.len() + boundary.len() + 8);
        let raw_len = (remaining / 78 * 57).max(57);
        let mut raw = vec![0u8; raw_len];
        rng.fill(&mut raw);
        let encoded = B64.encode(&raw);
        for line in encoded.as_bytes().chunks(76) {
            out.extend_from_slice(line);
            out.extend_from_slice(b"\r\n");
        }
        out.extend_from_slice(format!("\r\n--{boundary}--\r\n").as_bytes());
        out
    }

    /// This run's message id in a header block (a whole message or only its `X-Mbx-Id` field,
    /// as `BODY.PEEK[HEADER.FIELDS (X-Mbx-Id)]` gives it); None for another run's or a damaged
    /// id. Proves nothing of the content (see [`Generator::verify`]).
    pub fn id_of(&self, head: &[u8]) -> Option<MessageId> {
        let hend = header_end(head).unwrap_or(head.len());
        let (idv, _) = header(&head[..hend], "X-Mbx-Id")?;
        let idv = std::str::from_utf8(idv).ok()?.trim();
        let (first, last) = (idv.find('/')?, idv.rfind('/')?);
        if first == last || idv[..first] != self.run {
            return None;
        }
        Some(MessageId {
            run: self.run.clone(),
            sender: idv[first + 1..last].to_owned(),
            seq: idv[last + 1..].parse().ok()?,
        })
    }

    /// Tells what `fetched` is: one of this run's messages intact, one corrupted (and what
    /// changed), or not ours. `fetched` may carry a server's trace headers above the message.
    pub fn verify(&self, fetched: &[u8]) -> Verdict {
        let Some(hend) = header_end(fetched) else {
            return Verdict::NotOurs("no header block".into());
        };
        let Some((idv, _)) = header(&fetched[..hend], "X-Mbx-Id") else {
            return Verdict::NotOurs("no X-Mbx-Id header".into());
        };
        let idv = String::from_utf8_lossy(idv).into_owned();
        let (Some(first), Some(last)) = (idv.find('/'), idv.rfind('/')) else {
            return Verdict::NotOurs(format!("X-Mbx-Id {idv:?} is not run/sender/seq"));
        };
        let run = &idv[..first];
        if run != self.run {
            return Verdict::NotOurs(format!("another run's message ({idv})"));
        }
        let seq = idv[last + 1..].trim().parse::<u64>();
        let id = MessageId {
            run: run.to_owned(),
            sender: idv[first + 1..last.max(first + 1)].to_owned(),
            seq: *seq.as_ref().unwrap_or(&0),
        };
        let corrupted = |what: String| Verdict::Corrupted {
            id: id.clone(),
            what,
        };
        if first == last || seq.is_err() {
            return corrupted(format!("X-Mbx-Id {idv:?} is damaged"));
        }
        let Some(start) = our_start(fetched, hend) else {
            return corrupted("no From: header where the message should start".into());
        };
        let msg = &fetched[start..];
        let mhend = hend - start;
        let Some((hv, hrange)) = header(&msg[..mhend], "X-Mbx-Hash") else {
            return corrupted("no X-Mbx-Hash header".into());
        };
        let want = String::from_utf8_lossy(hv).trim().to_owned();
        let mut h = Xxh3::new();
        h.update(&msg[..hrange.start]);
        h.update(&msg[hrange.end..]);
        let got = format!("xxh3-128={}", hex128(h.digest128()));
        if got == want {
            return Verdict::Intact(id);
        }
        // Say what changed: make the message again (recipients from its To: header) and compare.
        let to: Vec<String> = header_value_unfolded(&msg[..mhend], "To")
            .map(|v| {
                v.split(',')
                    .map(|a| {
                        a.trim()
                            .trim_start_matches('<')
                            .trim_end_matches('>')
                            .to_owned()
                    })
                    .collect()
            })
            .unwrap_or_default();
        let to_refs: Vec<&str> = to.iter().map(String::as_str).collect();
        let expected = self.message(&id.sender, id.seq, &to_refs);
        corrupted(describe_difference(&expected, msg))
    }
}

impl Generator {
    /// Whether `fetched`, one of this run's messages `id` that [`Generator::verify`] found
    /// changed, is the message its sender wrote as a server composed it anew: a server that
    /// takes the MIME of an ActiveSync SendMail, SmartReply or SmartForward may rewrite the
    /// headers (SOGo sets `From` to the account's name and address) and the body (SOGo makes a
    /// smart reply multipart, its text quoted-printable HTML with the original after it). What
    /// must survive: the `X-Mbx-Id` (verify found it), the `Message-ID` as generated, and the
    /// first 48 characters of the text the sender wrote (quoted-printable soft breaks aside).
    pub fn composed_from(&self, id: &MessageId, fetched: &[u8]) -> bool {
        let expected = self.message(&id.sender, id.seq, &[]);
        let (Some(eh), Some(fh)) = (header_end(&expected), header_end(fetched)) else {
            return false;
        };
        let (Some((want_id, _)), Some((got_id, _))) = (
            header(&expected[..eh], "Message-ID"),
            header(&fetched[..fh], "Message-ID"),
        ) else {
            return false;
        };
        if want_id.trim_ascii() != got_id.trim_ascii() {
            return false;
        }
        // The text: the body's first line, or the first text part's (after its 7bit header).
        let body = &expected[eh + 2..];
        let marker: &[u8] = b"Content-Transfer-Encoding: 7bit\r\n\r\n";
        let text = match body.windows(marker.len()).position(|w| w == marker) {
            Some(i) if body.starts_with(b"This is a multi") => &body[i + marker.len()..],
            _ => body,
        };
        let line = text.split(|&b| b == b'\r').next().unwrap_or_default();
        let probe = &line[..line.len().min(48)];
        if probe.is_empty() {
            return false;
        }
        let mut flat = Vec::with_capacity(fetched.len());
        let mut i = fh;
        while i < fetched.len() {
            if fetched[i..].starts_with(b"=\r\n") {
                i += 3;
            } else if fetched[i..].starts_with(b"=\n") {
                i += 2;
            } else {
                flat.push(fetched[i]);
                i += 1;
            }
        }
        flat.windows(probe.len()).any(|w| w == probe)
    }
}

fn header_value_unfolded(head: &[u8], name: &str) -> Option<String> {
    let (_, range) = header(head, name)?;
    let mut end = range.end;
    while end < head.len() && (head[end] == b' ' || head[end] == b'\t') {
        end += head[end..]
            .iter()
            .position(|&b| b == b'\n')
            .map_or(head.len() - end, |i| i + 1);
    }
    let raw = String::from_utf8_lossy(&head[range.start + name.len() + 1..end]).replace("\r\n", "");
    Some(raw.trim().to_owned())
}

/// Names the first difference between the message as made and as fetched.
fn describe_difference(expected: &[u8], got: &[u8]) -> String {
    let Some(ehend) = header_end(expected) else {
        return "the message differs".into();
    };
    let common = expected.iter().zip(got).take_while(|(a, b)| a == b).count();
    if common == expected.len() && got.len() > expected.len() {
        return format!("{} bytes added after the end", got.len() - expected.len());
    }
    if common == got.len() && expected.len() > got.len() {
        return format!("truncated: {} of {} bytes", got.len(), expected.len());
    }
    if common < ehend {
        let line_start = expected[..common]
            .iter()
            .rposition(|&b| b == b'\n')
            .map_or(0, |i| i + 1);
        let line = &expected[line_start..];
        let name_end = line.iter().position(|&b| b == b':').unwrap_or(0);
        let name = String::from_utf8_lossy(&line[..name_end]).into_owned();
        let name = if name.is_empty() || name.starts_with(' ') {
            "a folded header line".to_owned()
        } else {
            format!("header {name}")
        };
        return format!("{name} changed (byte {} of the message)", common);
    }
    let body = &expected[ehend + 2..];
    let at = common - (ehend + 2);
    let line = body[..at].iter().filter(|&&b| b == b'\n').count() + 1;
    // Which MIME part: the last part header before the difference.
    let before = &body[..at];
    let part = before
        .windows(9)
        .rposition(|w| w == b"filename=")
        .filter(|&p| before[..p].windows(2).rposition(|w| w == b"--").is_some())
        .map(|p| {
            let name: Vec<u8> = before[p + 10..]
                .iter()
                .take_while(|&&b| b != b'"')
                .copied()
                .collect();
            format!("attachment {}", String::from_utf8_lossy(&name))
        })
        .unwrap_or_else(|| "text".to_owned());
    format!("body changed: {part}, line {line} of the body (byte {at} of the body)")
}

#[cfg(test)]
mod tests {
    use super::*;
    use xxhash_rust::xxh3::xxh3_128;

    fn gen() -> Generator {
        Generator::new("run1", 42, 75 * 1024, 1_795_000_000)
    }

    #[test]
    fn a_message_is_deterministic_unique_and_verifies() {
        let g = gen();
        let a = g.message(
            "loadgen1@loadgen.test",
            7,
            &["loadgen2@loadgen.test", "loadgen3@loadgen.test"],
        );
        let b = g.message(
            "loadgen1@loadgen.test",
            7,
            &["loadgen2@loadgen.test", "loadgen3@loadgen.test"],
        );
        let c = g.message("loadgen1@loadgen.test", 8, &["loadgen2@loadgen.test"]);
        assert_eq!(a, b);
        assert_ne!(a, c);
        let id = MessageId {
            run: "run1".into(),
            sender: "loadgen1@loadgen.test".into(),
            seq: 7,
        };
        assert_eq!(g.verify(&a), Verdict::Intact(id.clone()));
        // Trace headers above it do not matter.
        let mut traced =
            b"Return-Path: <x@y>\r\nReceived: from a by b; Fri, 27 Nov 2026 07:00:00 +0000\r\n"
                .to_vec();
        traced.extend_from_slice(&a);
        assert_eq!(g.verify(&traced), Verdict::Intact(id));
        assert!(
            a.split(|&b| b == b'\n').all(|l| l.len() <= 998),
            "RFC 5322 line limit"
        );
        assert!(
            a.windows(2)
                .filter(|w| w[1] == b'\n')
                .all(|w| w[0] == b'\r'),
            "CRLF only"
        );
    }

    #[test]
    fn changes_are_named_and_foreign_messages_told_apart() {
        let g = gen();
        // Find a message with an attachment.
        let seq = (0..200)
            .find(|&s| g.plan("u@d", s).0.is_some())
            .expect("16% have attachments");
        let m = g.message("u@d", seq, &["v@d"]);
        let mut body_flip = m.clone();
        let n = body_flip.len() - 300;
        body_flip[n] ^= 0x01;
        match g.verify(&body_flip) {
            Verdict::Corrupted { what, .. } => {
                assert!(what.contains("body changed: attachment"), "{what}")
            }
            v => panic!("{v:?}"),
        }
        let mut subj = m.clone();
        let p = subj
            .windows(8)
            .position(|w| w == b"Subject:")
            .expect("subject")
            + 20;
        subj[p] = b'#';
        match g.verify(&subj) {
            Verdict::Corrupted { what, .. } => {
                assert!(what.starts_with("header Subject changed"), "{what}")
            }
            v => panic!("{v:?}"),
        }
        match g.verify(&m[..m.len() - 100]) {
            Verdict::Corrupted { what, .. } => assert!(what.starts_with("truncated"), "{what}"),
            v => panic!("{v:?}"),
        }
        assert!(matches!(
            g.verify(b"From: a\r\nSubject: hi\r\n\r\nbody\r\n"),
            Verdict::NotOurs(_)
        ));
        let other = Generator::new("run2", 42, 75 * 1024, 0).message("u@d", 1, &["v@d"]);
        assert!(matches!(g.verify(&other), Verdict::NotOurs(w) if w.contains("another run")));
    }

    #[test]
    fn sizes_average_the_profile_and_include_attachments() {
        let g = gen();
        let n = 4000u64;
        let mut total = 0usize;
        let mut with_attachment = 0;
        for s in 0..n {
            let (a, planned) = g.plan("loadgen9@loadgen.test", s);
            if s < 300 {
                let m = g.message("loadgen9@loadgen.test", s, &["loadgen1@loadgen.test"]);
                let err = (m.len() as f64 - planned as f64).abs() / planned as f64;
                assert!(err < 0.05, "seq {s}: planned {planned}, made {}", m.len());
            }
            total += planned;
            with_attachment += usize::from(a.is_some());
        }
        let mean = total as f64 / n as f64;
        assert!((mean / (75.0 * 1024.0) - 1.0).abs() < 0.05, "mean {mean}");
        let share = with_attachment as f64 / n as f64;
        assert!(
            (share - 16.0 / 96.0).abs() < 0.02,
            "attachment share {share}"
        );
    }

    #[test]
    fn content_does_not_repeat() {
        // No 64-byte block of one message appears in another (no deduplication).
        let g = gen();
        let a = g.message("a@d", 1, &["b@d"]);
        let b = g.message("a@d", 2, &["b@d"]);
        let blocks: std::collections::HashSet<&[u8]> = a[600..].chunks_exact(64).collect();
        assert!(b[600..].chunks_exact(64).all(|c| !blocks.contains(c)));
        // xxh3_128 is used for the header; keep the import honest.
        assert_ne!(xxh3_128(&a), xxh3_128(&b));
    }

    #[test]
    fn a_copy_its_server_composed_anew_keeps_its_identity_and_text() {
        let g = gen();
        for seq in 1..40u64 {
            let m = g.message("u@d", seq, &["v@d"]);
            let text = String::from_utf8_lossy(&m).into_owned();
            // SOGo's SendMail: From rewritten, so the hash fails but the copy is the sender's.
            let from = text.replacen("From: <u@d>", "From: \"User U\" <u@d>", 1);
            let Verdict::Corrupted { id, .. } = g.verify(from.as_bytes()) else {
                panic!("a rewritten From is a change");
            };
            assert!(g.composed_from(&id, from.as_bytes()), "seq {seq}");
            // A smart reply: the text re-encoded with soft breaks, in a part of its own.
            let (head, body) = text.split_once("\r\n\r\n").expect("a header block");
            let first = body
                .split("7bit\r\n\r\n")
                .nth(if body.starts_with("This is a multi") {
                    1
                } else {
                    0
                })
                .and_then(|t| t.split("\r\n").next())
                .unwrap_or_default();
            let broken = format!("{}=\r\n{}", &first[..30], &first[30..]);
            let composed = format!(
                "{head}\r\n\r\n--b\r\nContent-Type: text/html\r\n\r\n{broken}<br />\r\n--b--\r\n"
            );
            assert!(g.composed_from(&id, composed.as_bytes()), "seq {seq}");
            // Another text, or another Message-ID: not the sender's.
            let other = composed.replace(&first[..10], "zzzzzzzzzz");
            assert!(!g.composed_from(&id, other.as_bytes()), "seq {seq}");
            let moved = composed.replacen("Message-ID: <", "Message-ID: <x", 1);
            assert!(!g.composed_from(&id, moved.as_bytes()), "seq {seq}");
        }
    }

    #[test]
    fn dates_are_rfc5322() {
        assert_eq!(rfc5322_date(0), "Thu, 1 Jan 1970 00:00:00 +0000");
        assert_eq!(
            rfc5322_date(1_795_737_600),
            "Fri, 27 Nov 2026 00:00:00 +0000"
        );
    }
}
