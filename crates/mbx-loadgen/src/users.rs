//! The test users: from a template (`loadgen%d`, a count, one password) or a file of
//! `user:password` lines or CSV (`user,password[,address]`). Errors name the file and line.

use std::collections::HashMap;
use std::path::Path;

/// One test user.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct User {
    /// The login name (IMAP LOGIN, POP3 USER, SMTP AUTH).
    pub login: String,
    /// The password.
    pub password: String,
    /// The mail address (`login@domain` unless the login or the file gives one).
    pub address: String,
}

/// A users file or template that cannot be used.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum UsersError {
    /// The file could not be read.
    #[error("users file {path}: {why}")]
    Io {
        /// The file.
        path: String,
        /// The system's error.
        why: String,
    },
    /// A line is wrong.
    #[error("{source_name} line {line}: {why}")]
    Line {
        /// The file (or "template").
        source_name: String,
        /// 1-based line number.
        line: usize,
        /// What is wrong and how to write it.
        why: String,
    },
    /// The template or the list is unusable as a whole.
    #[error("{0}")]
    Invalid(String),
}

/// Largest users file read (64 MiB: a million users with long passwords).
pub const MAX_FILE_BYTES: u64 = 64 * 1024 * 1024;

fn address_of(login: &str, domain: &str) -> String {
    if login.contains('@') {
        login.to_owned()
    } else {
        format!("{login}@{domain}")
    }
}

/// `count` users from `template` (one `%d`, replaced by first, first + 1, ...), all with
/// `password`, in `domain`.
pub fn from_template(
    template: &str,
    first: u32,
    count: u32,
    password: &str,
    domain: &str,
) -> Result<Vec<User>, UsersError> {
    if template.matches("%d").count() != 1 {
        return Err(UsersError::Invalid(format!(
            "user template {template:?} must contain %d exactly once (e.g. loadgen%d)"
        )));
    }
    if password.is_empty() || password.contains(['\r', '\n']) {
        return Err(UsersError::Invalid(
            "the users' password must be non-empty, on one line".into(),
        ));
    }
    if count == 0 {
        return Err(UsersError::Invalid(
            "the user count must be at least 1".into(),
        ));
    }
    let last = first
        .checked_add(count - 1)
        .ok_or_else(|| UsersError::Invalid("first + count overflows".into()))?;
    Ok((first..=last)
        .map(|i| {
            let login = template.replacen("%d", &i.to_string(), 1);
            User {
                address: address_of(&login, domain),
                login,
                password: password.to_owned(),
            }
        })
        .collect())
}

/// Parses a users list: blank lines and `#` comments skipped; each other line `user:password`
/// (the first `:` splits, so a password may contain `:`), or CSV `user,password[,address]` (a
/// first line `user,password...` is a header). `source_name` names the input in errors.
pub fn parse(text: &str, domain: &str, source_name: &str) -> Result<Vec<User>, UsersError> {
    let mut users = Vec::new();
    let mut seen: HashMap<String, usize> = HashMap::new();
    let err = |line: usize, why: String| UsersError::Line {
        source_name: source_name.to_owned(),
        line,
        why,
    };
    for (i, raw) in text.lines().enumerate() {
        let n = i + 1;
        let line = raw.trim_end_matches('\r');
        let trimmed = line.trim();
        if trimmed.is_empty() || trimmed.starts_with('#') {
            continue;
        }
        let colon = line.find(':');
        let comma = line.find(',');
        let (login, password, address) = match (colon, comma) {
            (Some(c), k) if k.is_none_or(|k| c < k) => (&line[..c], &line[c + 1..], None),
            (_, Some(_)) => {
                let mut f = line.splitn(3, ',');
                let login = f.next().unwrap_or_default().trim();
                let password = f.next().unwrap_or_default();
                let address = f.next().map(str::trim).filter(|a| !a.is_empty());
                if users.is_empty()
                    && seen.is_empty()
                    && (login.eq_ignore_ascii_case("user") || login.eq_ignore_ascii_case("login"))
                {
                    continue;
                }
                (login, password, address)
            }
            _ => {
                return Err(err(
                    n,
                    "expected user:password or user,password[,address]".into(),
                ))
            }
        };
        let login = login.trim();
        if login.is_empty() || login.contains(char::is_whitespace) {
            return Err(err(
                n,
                format!("user name {login:?} is empty or has spaces"),
            ));
        }
        if password.is_empty() {
            return Err(err(n, format!("user {login} has an empty password")));
        }
        if let Some(a) = address {
            if !a.contains('@') || a.contains(char::is_whitespace) {
                return Err(err(n, format!("address {a:?} is not a mail address")));
            }
        }
        if let Some(prev) = seen.insert(login.to_owned(), n) {
            return Err(err(
                n,
                format!(
                    "user {login} is listed twice (also on line {prev}): no user may run twice"
                ),
            ));
        }
        users.push(User {
            login: login.to_owned(),
            password: password.to_owned(),
            address: address
                .map(str::to_owned)
                .unwrap_or_else(|| address_of(login, domain)),
        });
    }
    if users.is_empty() {
        return Err(UsersError::Invalid(format!("{source_name} lists no user")));
    }
    Ok(users)
}

/// Reads and parses a users file (at most [`MAX_FILE_BYTES`], UTF-8).
pub fn read_file(path: &Path, domain: &str) -> Result<Vec<User>, UsersError> {
    let name = path.display().to_string();
    let io = |why: String| UsersError::Io {
        path: name.clone(),
        why,
    };
    // The one bounded reader: a regular file only (a FIFO, device or /dev/zero is refused before
    // it is opened, never blocking), at most MAX_FILE_BYTES.
    let bytes = mbx_config::input::read_bounded_bytes(
        path,
        MAX_FILE_BYTES,
        "a users file (user:password lines or CSV)",
    )
    .map_err(|e| UsersError::Invalid(e.to_string()))?;
    let text = String::from_utf8(bytes)
        .map_err(|e| io(format!("not UTF-8 (byte {})", e.utf8_error().valid_up_to())))?;
    parse(&text, domain, &name)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn templates_make_numbered_users() {
        let u = from_template("loadgen%d", 1, 3, "pw", "loadgen.test").expect("valid");
        assert_eq!(u.len(), 3);
        assert_eq!(
            u[2],
            User {
                login: "loadgen3".into(),
                password: "pw".into(),
                address: "loadgen3@loadgen.test".into()
            }
        );
        assert!(from_template("loadgen", 1, 3, "pw", "d").is_err());
        assert!(from_template("a%db%d", 1, 3, "pw", "d").is_err());
        assert!(from_template("u%d", 1, 0, "pw", "d").is_err());
    }

    #[test]
    fn files_in_both_formats_with_errors_naming_the_line() {
        let text = "# test users\nalice:se:cret\n\nbob@example.org:pw\n";
        let u = parse(text, "d.test", "users.txt").expect("valid");
        assert_eq!(
            u[0],
            User {
                login: "alice".into(),
                password: "se:cret".into(),
                address: "alice@d.test".into()
            }
        );
        assert_eq!(u[1].address, "bob@example.org");
        let csv = "user,password,address\r\ncarol,pw1,carol@x.org\r\ndave,pw2\r\n";
        let u = parse(csv, "d.test", "users.csv").expect("valid");
        assert_eq!(
            (u[0].address.as_str(), u[1].address.as_str()),
            ("carol@x.org", "dave@d.test")
        );
        let e = parse("a:1\nb:2\na:3\n", "d", "f").expect_err("duplicate");
        assert_eq!(
            e.to_string(),
            "f line 3: user a is listed twice (also on line 1): no user may run twice"
        );
        let e = parse("a:1\nnot a user line\n", "d", "f").expect_err("bad");
        assert!(
            e.to_string()
                .starts_with("f line 2: expected user:password"),
            "{e}"
        );
        assert!(parse("a:\n", "d", "f").is_err());
        assert!(parse("# nothing\n", "d", "f").is_err());
    }
}
