//! The latency histograms of a loadgen result as text (result.json's `histograms`): base64 of
//! the HdrHistogram V2 serialization (not the deflate one), microseconds. A fleet merges its
//! clients' results from them exactly ([`super::merge`]): a percentile of the merged histogram,
//! never an average of percentiles.
//!
//! Decoding reads text from disk: every failure is a [`HistError`] naming the histogram, never
//! a panic (the header is checked before hdrhistogram sees it, so a forged length cannot make it
//! allocate gigabytes, and a forged count cannot overflow its decoder).

use std::collections::BTreeMap;

use base64::engine::general_purpose::STANDARD;
use base64::Engine as _;
use hdrhistogram::serialization::{Deserializer, Serializer, V2Serializer};
use hdrhistogram::Histogram;
use mbx_loadgen::day::DayReport;
use mbx_loadgen::Stats;

/// The V2 cookie (uncompressed) hdrhistogram writes first, big-endian.
const V2_COOKIE: u32 = 0x1c84_9303 | 0x10;

/// Bytes of the V2 header: cookie, payload length, normalizing offset, digits, lowest,
/// highest, integer-to-double ratio.
const V2_HEADER: usize = 40;

/// A histogram that could not be written or read.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum HistError {
    /// Serializing failed (a count too large for the format).
    #[error("histogram {name}: could not be serialized: {message}")]
    Encode {
        /// The histogram's name.
        name: String,
        /// hdrhistogram's message.
        message: String,
    },
    /// The text is not base64.
    #[error("histogram {name}: not base64: {message}")]
    Base64 {
        /// The histogram's name.
        name: String,
        /// The decoder's message.
        message: String,
    },
    /// Fewer bytes than the header says (a truncated string).
    #[error("histogram {name}: truncated: {have} bytes, the header says {need}")]
    Truncated {
        /// The histogram's name.
        name: String,
        /// Bytes decoded.
        have: usize,
        /// Bytes the header announces.
        need: usize,
    },
    /// Not an uncompressed HdrHistogram V2 serialization, or one hdrhistogram rejects.
    #[error("histogram {name}: not a valid HdrHistogram V2 serialization: {message}")]
    Invalid {
        /// The histogram's name.
        name: String,
        /// What is wrong.
        message: String,
    },
}

/// `h` as result.json holds it: base64 of its V2 serialization. `name` is for the error.
pub fn encode(name: &str, h: &Histogram<u64>) -> Result<String, HistError> {
    let mut bytes = Vec::new();
    V2Serializer::new()
        .serialize(h, &mut bytes)
        .map_err(|e| HistError::Encode {
            name: name.to_string(),
            message: e.to_string(),
        })?;
    Ok(STANDARD.encode(bytes))
}

/// The histogram named `name` from its text in result.json.
pub fn decode(name: &str, text: &str) -> Result<Histogram<u64>, HistError> {
    let invalid = |message: String| HistError::Invalid {
        name: name.to_string(),
        message,
    };
    let bytes = STANDARD
        .decode(text.trim())
        .map_err(|e| HistError::Base64 {
            name: name.to_string(),
            message: e.to_string(),
        })?;
    let be32 = |at: usize| -> Option<u32> {
        let b: [u8; 4] = bytes.get(at..at + 4)?.try_into().ok()?;
        Some(u32::from_be_bytes(b))
    };
    let cookie = be32(0).ok_or_else(|| HistError::Truncated {
        name: name.to_string(),
        have: bytes.len(),
        need: V2_HEADER,
    })?;
    if cookie != V2_COOKIE {
        return Err(invalid(format!(
            "cookie {cookie:#010x}, not the V2 one {V2_COOKIE:#010x} (a compressed or older format)"
        )));
    }
    let payload = be32(4).map_or(0, |n| n as usize);
    let need = V2_HEADER.saturating_add(payload);
    if bytes.len() < need {
        return Err(HistError::Truncated {
            name: name.to_string(),
            have: bytes.len(),
            need,
        });
    }
    if bytes.len() > need {
        return Err(invalid(format!(
            "{} bytes after the {need} the header announces",
            bytes.len() - need
        )));
    }
    // hdrhistogram negates a run of zeros' length: the one varint that decodes to i64::MIN
    // would overflow (a panic in a debug build). A valid histogram never holds it.
    if holds_min_varint(&bytes[V2_HEADER..]) {
        return Err(invalid("a count out of range".to_string()));
    }
    Deserializer::new()
        .deserialize(&mut bytes.as_slice())
        .map_err(|e| invalid(e.to_string()))
}

/// Whether the V2 counts (LEB128, 9 bytes at most, the 9th taken whole) hold the varint
/// u64::MAX (zigzag i64::MIN).
fn holds_min_varint(mut counts: &[u8]) -> bool {
    while !counts.is_empty() {
        let mut value: u64 = 0;
        let mut used = 0;
        for (i, b) in counts.iter().take(9).enumerate() {
            used = i + 1;
            if i == 8 {
                value |= u64::from(*b) << 56;
                break;
            }
            value |= u64::from(b & 0x7f) << (7 * i);
            if b & 0x80 == 0 {
                break;
            }
        }
        if value == u64::MAX {
            return true;
        }
        counts = &counts[used..];
    }
    false
}

/// Every histogram of `map` decoded, or the first that is not (named).
pub fn decode_all(
    map: &BTreeMap<String, String>,
) -> Result<BTreeMap<String, Histogram<u64>>, HistError> {
    map.iter()
        .map(|(name, text)| decode(name, text).map(|h| (name.clone(), h)))
        .collect()
}

/// The name of a task's histogram from its scheduled time (`task.<task>`).
pub fn task_name(task: &str) -> String {
    format!("task.{task}")
}

/// The name of a task's service-time histogram (`service.<task>`).
pub fn service_name(task: &str) -> String {
    format!("service.{task}")
}

/// The name of a protocol command's histogram (`command.<protocol>.<command>`).
pub fn command_name(protocol: &str, command: &str) -> String {
    format!("command.{protocol}.{command}")
}

/// The name of the delivery latency histogram (user-seen: when the users' own clients saw
/// the copy).
pub const DELIVERY: &str = "delivery";

/// The name of the server delivery latency histogram (the watcher's: `delivery.server_latency_ms`).
pub const SERVER_DELIVERY: &str = "delivery.server";

/// The name of the IDLE probes' lag histogram (`delivery.idle_probe.lag_ms`), present when
/// probes ran.
pub const IDLE_LAG: &str = "idle_probe.lag";

/// Every histogram a day's tables come from (tasks, service times, commands, delivery, the
/// watcher's server delivery latency, the IDLE probes' lag), as result.json holds them.
pub fn of_day(day: &DayReport, stats: &Stats) -> Result<BTreeMap<String, String>, HistError> {
    let mut out = BTreeMap::new();
    for (kind, s) in &day.tasks {
        let task = task_name(kind.name());
        out.insert(task.clone(), encode(&task, &s.from_schedule_us)?);
        let service = service_name(kind.name());
        out.insert(service.clone(), encode(&service, &s.service_us)?);
    }
    for ((proto, command), s) in &stats.commands {
        let name = command_name(proto.name(), command);
        out.insert(name.clone(), encode(&name, &s.latency_us)?);
    }
    out.insert(
        DELIVERY.to_string(),
        encode(DELIVERY, &day.delivery.latency_us)?,
    );
    out.insert(
        SERVER_DELIVERY.to_string(),
        encode(SERVER_DELIVERY, &day.delivery.server_latency_us)?,
    );
    if let Some(i) = day.watch.as_ref().and_then(|w| w.idle.as_ref()) {
        out.insert(IDLE_LAG.to_string(), encode(IDLE_LAG, &i.lag_us)?);
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn hist(values: &[u64]) -> Histogram<u64> {
        let mut h = Histogram::new_with_bounds(1, 3_600_000_000, 3).expect("bounds");
        for v in values {
            h.record(*v).expect("in range");
        }
        h
    }

    #[test]
    fn a_histogram_round_trips_through_its_text() {
        let h = hist(&[1, 250, 250, 9_999, 1_234_567, 3_600_000_000]);
        let text = encode("task.read", &h).expect("encodes");
        let back = decode("task.read", &text).expect("decodes");
        assert_eq!(back, h);
        assert_eq!(back.len(), 6);
        assert_eq!(back.value_at_quantile(0.5), h.value_at_quantile(0.5));
        assert_eq!(back.max(), h.max());
        // An empty one too (a task type that never completed).
        let empty = hist(&[]);
        let back =
            decode("delivery", &encode("delivery", &empty).expect("encodes")).expect("decodes");
        assert!(back.is_empty());
    }

    #[test]
    fn bad_text_is_an_error_naming_the_histogram() {
        let text = encode("task.read", &hist(&[10, 20, 30_000])).expect("encodes");
        // Not base64.
        let e = decode("task.read", "!!not base64!!").expect_err("not base64");
        assert!(matches!(e, HistError::Base64 { .. }), "{e}");
        assert!(e.to_string().contains("task.read"), "{e}");
        // Truncated: the header says more than there is.
        let bytes = STANDARD.decode(&text).expect("base64");
        for cut in [0, 3, 20, V2_HEADER, bytes.len() - 1] {
            let short = STANDARD.encode(&bytes[..cut]);
            let e = decode("command.imap.LOGIN", &short).expect_err("truncated");
            assert!(matches!(e, HistError::Truncated { .. }), "cut {cut}: {e}");
            assert!(e.to_string().contains("command.imap.LOGIN"), "{e}");
        }
        // The deflate format, or anything else: refused by its cookie.
        let mut deflate = bytes.clone();
        deflate[0..4].copy_from_slice(&(0x1c84_9304u32 | 0x10).to_be_bytes());
        let e = decode("delivery", &STANDARD.encode(&deflate)).expect_err("compressed");
        assert!(matches!(e, HistError::Invalid { .. }), "{e}");
        // A forged payload length is refused before anything is allocated for it.
        let mut forged = bytes.clone();
        forged[4..8].copy_from_slice(&u32::MAX.to_be_bytes());
        let e = decode("delivery", &STANDARD.encode(&forged)).expect_err("forged length");
        assert!(matches!(e, HistError::Truncated { .. }), "{e}");
        // The varint hdrhistogram would overflow on, and nonsense bounds.
        let mut min = bytes[..V2_HEADER].to_vec();
        min.extend_from_slice(&[0xff; 9]);
        let len = (min.len() - V2_HEADER) as u32;
        min[4..8].copy_from_slice(&len.to_be_bytes());
        let e = decode("delivery", &STANDARD.encode(&min)).expect_err("i64::MIN");
        assert!(matches!(e, HistError::Invalid { .. }), "{e}");
        let mut bounds = bytes.clone();
        bounds[12..16].copy_from_slice(&9u32.to_be_bytes());
        let e = decode("delivery", &STANDARD.encode(&bounds)).expect_err("9 digits");
        assert!(matches!(e, HistError::Invalid { .. }), "{e}");
        // Counts past the histogram's range.
        let mut long = bytes[..V2_HEADER].to_vec();
        long.extend_from_slice(&[0x81, 0x80, 0x80, 0x80, 0x10, 0x02]);
        let len = (long.len() - V2_HEADER) as u32;
        long[4..8].copy_from_slice(&len.to_be_bytes());
        assert!(decode("delivery", &STANDARD.encode(&long)).is_err());
        // One bad histogram among good ones: decode_all names it.
        let map: BTreeMap<String, String> = [
            ("task.read".to_string(), text.clone()),
            ("task.send_new".to_string(), "AAAA".to_string()),
        ]
        .into();
        let e = decode_all(&map).expect_err("one is bad");
        assert!(e.to_string().contains("task.send_new"), "{e}");
    }

    /// What `loadgen run` writes: one histogram per table row, under the names the merge
    /// reads, each giving back the row's figures.
    #[test]
    fn a_day_writes_the_histogram_of_every_row() {
        use mbx_loadgen::day::TaskStats;
        use mbx_loadgen::ledger::DeliverySummary;
        use mbx_loadgen::sched::TaskKind;
        use mbx_loadgen::{Protocol, Recorder};
        use std::time::Duration;

        let read = TaskStats {
            dispatched: 3,
            completed: 3,
            skipped: 0,
            failed: BTreeMap::new(),
            from_schedule_us: hist(&[1_000, 2_000, 900_000]),
            service_us: hist(&[900, 1_900, 4_000]),
        };
        let day = DayReport {
            planned: 3,
            dispatched: 3,
            tasks: [(TaskKind::Read, read)].into(),
            max_unfinished: 1,
            overloaded: false,
            interrupted: false,
            deadline: None,
            delivery: DeliverySummary {
                expected: 2,
                delivered: 2,
                missing: 0,
                duplicated: 0,
                corrupted: Vec::new(),
                unexpected: 0,
                latency_us: hist(&[50_000, 70_000]),
                seen_by_idle: 2,
                seen_by_poll: 0,
                missing_copies: Vec::new(),
                server_latency_us: hist(&[80_000, 30_000, 40_000]),
                server_watched: 0,
                server_unseen: 0,
            },
            first_errors: Vec::new(),
            elapsed: Duration::from_secs(1),
            baseline: Duration::ZERO,
            start_unix_s: 0.0,
            folders: None,
            folder_refused: None,
            watch: None,
            unreadable: BTreeMap::new(),
            missing_not_looked: 0,
            composed: 0,
            baseline_failed: BTreeMap::new(),
            check_fetched: 0,
            check_fetched_bytes: 0,
        };
        let rec = Recorder::new();
        rec.record(
            Protocol::Imap,
            "UID FETCH",
            Duration::from_millis(7),
            Ok(()),
        );
        rec.record(
            Protocol::Imap,
            "UID FETCH",
            Duration::from_millis(9),
            Ok(()),
        );
        let stats = rec.snapshot();
        let map = of_day(&day, &stats).expect("encodes");
        let names: Vec<&str> = map.keys().map(String::as_str).collect();
        assert_eq!(
            names,
            [
                "command.imap.UID FETCH",
                "delivery",
                "delivery.server",
                "service.read",
                "task.read"
            ]
        );
        let all = decode_all(&map).expect("decodes");
        let lat = |n: &str| super::super::assemble::latency_ms(&all[n]);
        let rows = super::super::assemble::tasks(&day);
        assert_eq!(lat("task.read"), rows[0].latency_ms);
        assert_eq!(lat("service.read"), rows[0].service_ms);
        let cmds = super::super::assemble::commands(&stats);
        assert_eq!(lat("command.imap.UID FETCH"), cmds[0].latency_ms);
        assert_eq!(lat("delivery").count, 2);
        assert!(
            (lat("delivery").max - 70.0).abs() < 0.1,
            "{:?}",
            lat("delivery")
        );
        // The watcher's server latency, beside the user-seen one.
        assert_eq!(lat("delivery.server").count, 3);
        assert!((lat("delivery.server").max - 80.0).abs() < 0.1);
    }
}
