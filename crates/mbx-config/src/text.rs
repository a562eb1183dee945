//! Text from outside (a server's reply, a file's content, a host's output) made safe to show: the
//! one sanitizer every such text goes through before it reaches the terminal, test.log,
//! report.html or a JSON file.
//!
//! A hostile mail server (or a users file, or a remote host's stderr) can put terminal escapes in
//! what it says: `ESC [2J` clears the screen, `ESC [32m PASS` prints a fake green verdict, a
//! carriage return overwrites the line before it, bidi overrides reorder what follows. So:
//! - every control character (C0, DEL, C1) is shown visibly as an escape: `\x1b`, `\x00`, `\r`,
//!   `\n`, `\t`, `\u{85}` (a backslash itself passes unchanged, so sanitizing is idempotent: text
//!   sanitized where it entered can go through again where it is shown);
//! - the Unicode format characters that change how text around them displays (bidi embeddings,
//!   overrides and isolates, zero-width joiners, the byte-order mark, the line and paragraph
//!   separators) are shown as `\u{202e}` and the like;
//! - bytes that are not UTF-8 are shown as `\xNN` ([`visible_bytes`]);
//! - the result is at most `max` characters of the original, then `...` (the escapes count for
//!   the characters they stand for, so a cap of 300 shows at most 300 of the original's
//!   characters: at most 10 output bytes each, 3 KB).
//!
//! Printable text, in any script, passes unchanged.

/// The default cap of one piece of outside text (an error's detail, a reply): 300 characters.
pub const DEFAULT_MAX_CHARS: usize = 300;

/// Whether `c` changes the display of the text around it (bidi controls, zero-width joiners,
/// separators): shown escaped.
fn is_format(c: char) -> bool {
    matches!(c,
        '\u{00ad}'                  // soft hyphen (invisible)
        | '\u{061c}'                // Arabic letter mark
        | '\u{200b}'..='\u{200f}'   // zero-width space, joiners, LRM, RLM
        | '\u{2028}'..='\u{202e}'   // line/paragraph separators, bidi embeddings and overrides
        | '\u{2060}'..='\u{2064}'   // word joiner, invisible operators
        | '\u{2066}'..='\u{2069}'   // bidi isolates
        | '\u{feff}'                // byte-order mark, zero-width no-break space
        | '\u{fff9}'..='\u{fffb}') // interlinear annotations
}

/// Appends `c` to `out`, escaped if it is not safe to show as itself.
fn push_visible(out: &mut String, c: char) {
    use std::fmt::Write as _;
    match c {
        '\n' => out.push_str("\\n"),
        '\r' => out.push_str("\\r"),
        '\t' => out.push_str("\\t"),
        c if (c as u32) < 0x20 || c as u32 == 0x7f => {
            let _ = write!(out, "\\x{:02x}", c as u32);
        }
        c if ('\u{80}'..='\u{9f}').contains(&c) || is_format(c) => {
            let _ = write!(out, "\\u{{{:x}}}", c as u32);
        }
        c => out.push(c),
    }
}

/// `text` safe to show: control and format characters escaped visibly, at most `max` of its
/// characters (then `...`).
pub fn visible(text: &str, max: usize) -> String {
    let mut out = String::with_capacity(text.len().min(max.saturating_mul(4)) + 3);
    for (n, c) in text.chars().enumerate() {
        if n >= max {
            out.push_str("...");
            break;
        }
        push_visible(&mut out, c);
    }
    out
}

/// Bytes from outside safe to show: [`visible`] over the UTF-8 in them, each byte that is not
/// UTF-8 shown as `\xNN`; at most `max` characters (a byte not UTF-8 counts as one).
pub fn visible_bytes(bytes: &[u8], max: usize) -> String {
    use std::fmt::Write as _;
    let mut out = String::with_capacity(bytes.len().min(max.saturating_mul(4)) + 3);
    let mut shown = 0usize;
    for chunk in bytes.utf8_chunks() {
        for c in chunk.valid().chars() {
            if shown >= max {
                out.push_str("...");
                return out;
            }
            push_visible(&mut out, c);
            shown += 1;
        }
        for b in chunk.invalid() {
            if shown >= max {
                out.push_str("...");
                return out;
            }
            let _ = write!(out, "\\x{b:02x}");
            shown += 1;
        }
    }
    out
}

/// Whether `text` would be shown as it is (no character escaped; length not considered).
pub fn is_visible(text: &str) -> bool {
    text.chars()
        .all(|c| !(c.is_control() || ('\u{80}'..='\u{9f}').contains(&c) || is_format(c)))
}

/// `text` with every occurrence of each of `secrets` replaced by `[redacted]` (longest first, so
/// a secret containing another is redacted whole). Empty secrets are ignored.
pub fn redact(text: &str, secrets: &[String]) -> String {
    let mut sorted: Vec<&String> = secrets.iter().filter(|s| !s.is_empty()).collect();
    sorted.sort_by_key(|s| std::cmp::Reverse(s.len()));
    let mut out = text.to_owned();
    for s in sorted {
        if out.contains(s.as_str()) {
            out = out.replace(s.as_str(), "[redacted]");
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn escapes_are_shown_not_obeyed() {
        let fake = "ok\x1b[2J\x1b[32mPASS | all checks passed\x1b[0m\r\x07\x08\0";
        assert_eq!(
            visible(fake, 300),
            "ok\\x1b[2J\\x1b[32mPASS | all checks passed\\x1b[0m\\r\\x07\\x08\\x00"
        );
        assert_eq!(visible("a\u{202e}b\u{85}c", 300), "a\\u{202e}b\\u{85}c");
        assert_eq!(visible("tab\there\nnext", 300), "tab\\there\\nnext");
        assert_eq!(visible("a\\x1b", 300), "a\\x1b");
        // Idempotent: text sanitized where it entered can be sanitized again where it is shown.
        assert_eq!(visible(&visible(fake, 300), 300), visible(fake, 300));
        assert_eq!(visible("Grüße, 你好", 300), "Grüße, 你好");
        assert_eq!(visible_bytes(b"ok\xff\xfe\x1b", 300), "ok\\xff\\xfe\\x1b");
    }

    #[test]
    fn long_text_is_cut_at_the_cap() {
        assert_eq!(visible(&"x".repeat(1000), 300).len(), 303);
        assert_eq!(visible("abc", 3), "abc");
        assert_eq!(visible("abcd", 3), "abc...");
        assert_eq!(visible_bytes(&[0xff; 10], 2), "\\xff\\xff...");
    }

    #[test]
    fn secrets_are_redacted_longest_first() {
        let s = vec!["pw".to_string(), "AHVAcHc=".to_string(), String::new()];
        assert_eq!(
            redact("535 bad AHVAcHc= pw pw", &s),
            "535 bad [redacted] [redacted] [redacted]"
        );
        assert_eq!(redact("nothing", &s), "nothing");
    }

    proptest! {
        /// Whatever the bytes: no control or format character survives, the output is bounded,
        /// and printable text passes unchanged.
        #[test]
        fn arbitrary_bytes_come_out_visible_and_bounded(
            bytes in proptest::collection::vec(any::<u8>(), 0..2000),
            max in 0usize..400,
        ) {
            let out = visible_bytes(&bytes, max);
            prop_assert!(!out.chars().any(|c| c.is_control()));
            // At most 10 output bytes (`\u{10ffff}`) per character shown, plus `...`.
            prop_assert!(out.len() <= max * 10 + 3, "{} for max {}", out.len(), max);
            let text = String::from_utf8_lossy(&bytes);
            let v = visible(&text, max);
            prop_assert_eq!(visible(&v, usize::MAX), v.clone());
            prop_assert!(!v.chars().any(|c| c.is_control() || is_format(c)));
            prop_assert!(v.len() <= max * 10 + 3);
        }

        #[test]
        fn printable_text_is_unchanged(s in "[a-zA-Z0-9 .,:;!?@<>()\\[\\]{}'\"/=+_äöü你好-]{0,200}") {
            prop_assert_eq!(visible(&s, 1000), s);
        }
    }
}
