//! Parsing of sizes ("32k", "1G") and durations ("90s", "2h"), fio-style (binary multiples).

use std::time::Duration;

/// Parses a byte size: a number with an optional k/m/g/t suffix (powers of 1024; "b"/"ib"/"iB"
/// allowed after it). "32k" = 32768.
pub fn parse_size(s: &str) -> Result<u64, String> {
    let t = s.trim();
    let lower = t.to_ascii_lowercase();
    let lower = lower
        .strip_suffix("ib")
        .or_else(|| lower.strip_suffix('b'))
        .unwrap_or(&lower);
    let (num, mult) = match lower.chars().last() {
        Some('k') => (&lower[..lower.len() - 1], 1u64 << 10),
        Some('m') => (&lower[..lower.len() - 1], 1 << 20),
        Some('g') => (&lower[..lower.len() - 1], 1 << 30),
        Some('t') => (&lower[..lower.len() - 1], 1 << 40),
        _ => (lower, 1),
    };
    let v: f64 = num
        .trim()
        .parse()
        .map_err(|_| format!("'{t}' is not a size (examples: 4096, 32k, 1M, 10G)"))?;
    if !v.is_finite() || v < 0.0 {
        return Err(format!(
            "'{t}' is not a size (examples: 4096, 32k, 1M, 10G)"
        ));
    }
    let bytes = (v * mult as f64).round();
    // `as` would saturate silently at u64::MAX; 2^64 is exactly representable.
    if bytes >= 18_446_744_073_709_551_616.0 {
        return Err(format!("'{t}' is too large a size"));
    }
    Ok(bytes as u64)
}

/// The longest duration accepted anywhere (30 days): longer runs are not a storage test, and
/// bounding it keeps every deadline computed from it far from overflow.
pub const MAX_DURATION_S: f64 = mbx_config::MAX_DURATION_S;

/// Parses a duration: a number with an optional s/m/h/d suffix (seconds by default), or several
/// ("1h30m"). At most 30 days.
pub fn parse_duration(s: &str) -> Result<Duration, String> {
    let t = s.trim();
    let bad = || format!("'{t}' is not a duration (examples: 90s, 15m, 2h, 1h30m)");
    let mut total = 0f64;
    let mut num = String::new();
    let mut any = false;
    for ch in t.chars() {
        if ch.is_ascii_digit() || ch == '.' {
            num.push(ch);
            continue;
        }
        let unit = match ch {
            's' => 1.0,
            'm' => 60.0,
            'h' => 3600.0,
            'd' => 86400.0,
            _ => return Err(bad()),
        };
        let v: f64 = num.parse().map_err(|_| bad())?;
        total += v * unit;
        num.clear();
        any = true;
    }
    if !num.is_empty() {
        total += num.parse::<f64>().map_err(|_| bad())?;
        any = true;
    }
    if !any || !total.is_finite() {
        return Err(bad());
    }
    if total > MAX_DURATION_S {
        return Err(format!(
            "'{t}' is longer than 30 days ({MAX_DURATION_S} s), the longest duration accepted"
        ));
    }
    let d = Duration::try_from_secs_f64(total).map_err(|_| bad())?;
    // Every duration accepted is within the bound the deadlines computed from it rely on.
    debug_assert!(d.as_secs_f64() <= MAX_DURATION_S, "{t}: {d:?}");
    Ok(d)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sizes() {
        assert_eq!(parse_size("4096"), Ok(4096));
        assert_eq!(parse_size("32k"), Ok(32768));
        assert_eq!(parse_size("32K"), Ok(32768));
        assert_eq!(parse_size("1M"), Ok(1 << 20));
        assert_eq!(parse_size("1MiB"), Ok(1 << 20));
        assert_eq!(parse_size("2g"), Ok(2 << 30));
        assert_eq!(parse_size("1.5k"), Ok(1536));
        assert!(parse_size("lots").is_err());
        assert!(parse_size("-1k").is_err());
        assert!(parse_size("16777216t").is_err());
        assert!(parse_size("1e30").is_err());
    }

    #[test]
    fn durations() {
        assert_eq!(parse_duration("90s"), Ok(Duration::from_secs(90)));
        assert_eq!(parse_duration("2h"), Ok(Duration::from_secs(7200)));
        assert_eq!(parse_duration("1h30m"), Ok(Duration::from_secs(5400)));
        assert_eq!(parse_duration("10"), Ok(Duration::from_secs(10)));
        assert_eq!(parse_duration("0.5s"), Ok(Duration::from_millis(500)));
        assert!(parse_duration("soon").is_err());
        assert!(parse_duration("").is_err());
        assert_eq!(parse_duration("30d"), Ok(Duration::from_secs(2_592_000)));
    }

    /// Issue 8: `--duration 18446744073709551615s` panicked in `Duration::from_secs_f64`.
    #[test]
    fn durations_above_30_days_are_refused() {
        for s in [
            "18446744073709551615s",
            "31d",
            "2592001",
            "1e400",
            "99999999999999999999h",
        ] {
            let e = parse_duration(s).expect_err(s);
            assert!(e.contains(s), "{e}");
        }
        assert!(parse_duration("18446744073709551615s")
            .expect_err("too long")
            .contains("30 days"));
    }
}
