//! Where loadgen's clients connect: `--server HOST` (the standard ports), URLs per protocol
//! (`smtp+starttls://host:587`, `imaps://host:993`, ...) or the test server's `server.env`
//! (scripts/mailserver.sh), and how the server's certificate is trusted.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use mbx_loadgen::{Endpoint, Security, Trust};
use serde::{Deserialize, Serialize};

use crate::AppError;

/// [`Security`] in a serialized request (mbx-loadgen's own type has no serde).
#[derive(Serialize, Deserialize)]
#[serde(remote = "Security", rename_all = "snake_case")]
enum SecurityDef {
    Plain,
    StartTls,
    Implicit,
}

/// One protocol's server, as the user gave it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ServerSpec {
    /// Host name or address.
    pub host: String,
    /// TCP port.
    pub port: u16,
    /// Plain, STARTTLS or implicit TLS.
    #[serde(with = "SecurityDef")]
    pub security: Security,
}

/// The three protocols' servers.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ServersSpec {
    /// SMTP submission.
    pub smtp: ServerSpec,
    /// IMAP.
    pub imap: ServerSpec,
    /// POP3.
    pub pop3: ServerSpec,
}

/// Which protocol a URL is for (its scheme must match the flag it was given to).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Proto {
    /// `--smtp`.
    Smtp,
    /// `--imap`.
    Imap,
    /// `--pop3`.
    Pop3,
}

impl Proto {
    fn flag(self) -> &'static str {
        match self {
            Proto::Smtp => "--smtp",
            Proto::Imap => "--imap",
            Proto::Pop3 => "--pop3",
        }
    }

    fn schemes(self) -> [(&'static str, Security, u16); 3] {
        match self {
            Proto::Smtp => [
                ("smtp", Security::Plain, 25),
                ("smtp+starttls", Security::StartTls, 587),
                ("smtps", Security::Implicit, 465),
            ],
            Proto::Imap => [
                ("imap", Security::Plain, 143),
                ("imap+starttls", Security::StartTls, 143),
                ("imaps", Security::Implicit, 993),
            ],
            Proto::Pop3 => [
                ("pop3", Security::Plain, 110),
                ("pop3+starttls", Security::StartTls, 110),
                ("pop3s", Security::Implicit, 995),
            ],
        }
    }

    fn scheme_of(self, security: Security) -> &'static str {
        self.schemes()
            .iter()
            .find(|s| s.1 == security)
            .map(|s| s.0)
            .unwrap_or("?")
    }
}

impl ServerSpec {
    /// `smtp+starttls://host:587`: the URL form results and messages use.
    pub fn url(&self, proto: Proto) -> String {
        let host = if self.host.contains(':') {
            format!("[{}]", self.host)
        } else {
            self.host.clone()
        };
        format!("{}://{host}:{}", proto.scheme_of(self.security), self.port)
    }
}

/// Parses `scheme://host[:port]` given to `proto`'s flag.
pub fn parse_url(proto: Proto, url: &str) -> Result<ServerSpec, AppError> {
    let bad = |why: String| {
        AppError::usage(format!(
            "{} {url:?}: {why}; e.g. {} {}://mail.example.com:{}",
            proto.flag(),
            proto.flag(),
            proto.schemes()[2].0,
            proto.schemes()[2].2
        ))
    };
    let Some((scheme, rest)) = url.split_once("://") else {
        return Err(bad("not a URL (scheme://host:port)".into()));
    };
    let scheme = scheme.to_ascii_lowercase();
    let Some(&(_, security, default_port)) = proto.schemes().iter().find(|s| s.0 == scheme) else {
        let known: Vec<&str> = proto.schemes().iter().map(|s| s.0).collect();
        return Err(bad(format!(
            "the scheme {scheme:?} is not one of {}",
            known.join(", ")
        )));
    };
    let rest = rest.trim_end_matches('/');
    let (host, port) = if let Some(r) = rest.strip_prefix('[') {
        // [IPv6]:port
        let Some((h, after)) = r.split_once(']') else {
            return Err(bad("an IPv6 address without its closing ]".into()));
        };
        (h.to_string(), after.strip_prefix(':'))
    } else {
        match rest.rsplit_once(':') {
            Some((h, p)) => (h.to_string(), Some(p)),
            None => (rest.to_string(), None),
        }
    };
    if host.is_empty()
        || host.contains(['/', '@', '?', '#', ' '])
        || host.chars().any(char::is_control)
    {
        return Err(bad("no host, or a host with /, @, ?, # or spaces".into()));
    }
    let port = match port {
        None => default_port,
        Some(p) => match p.parse::<u16>() {
            Ok(n) if n > 0 => n,
            _ => return Err(bad(format!("the port {p:?} is not 1..=65535"))),
        },
    };
    Ok(ServerSpec {
        host,
        port,
        security,
    })
}

/// `--server HOST`: submission with STARTTLS on 587, IMAPS on 993, POP3S on 995 (the ports
/// RFC 6409 and RFC 8314 give mail clients).
pub fn standard(host: &str) -> Result<ServersSpec, AppError> {
    if host.is_empty() || host.contains(['/', ':', '@', ' ']) && !host.starts_with('[') {
        return Err(AppError::usage(format!(
            "--server {host:?}: give a host name or address (ports come from --smtp, --imap, --pop3 URLs)"
        )));
    }
    let host = host.trim_start_matches('[').trim_end_matches(']');
    let s = |port, security| ServerSpec {
        host: host.to_string(),
        port,
        security,
    };
    Ok(ServersSpec {
        smtp: s(587, Security::StartTls),
        imap: s(993, Security::Implicit),
        pop3: s(995, Security::Implicit),
    })
}

/// What scripts/mailserver.sh writes to `DIR/server.env`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ServerEnv {
    /// The servers: submission with STARTTLS, IMAPS, POP3S.
    pub servers: ServersSpec,
    /// The instance's CA (clients trust it).
    pub ca_file: Option<PathBuf>,
    /// The mail domain.
    pub domain: Option<String>,
    /// Users made.
    pub users: Option<u32>,
    /// Their login template (`loadgen%d`).
    pub user_template: Option<String>,
    /// Their password.
    pub password: Option<String>,
    /// Where Dovecot keeps a user's maildir (`%u` = the user).
    pub maildir: Option<String>,
}

/// Reads `server.env` (at most 64 KiB of `KEY=VALUE` lines).
pub fn read_server_env(path: &Path) -> Result<ServerEnv, AppError> {
    let text = mbx_config::input::read_bounded(path, 64 * 1024, "--server-env")
        .map_err(|e| AppError::usage(e.to_string()))?;
    let mut kv = BTreeMap::new();
    for line in text.lines() {
        let line = line.trim();
        if line.is_empty() || line.starts_with('#') {
            continue;
        }
        if let Some((k, v)) = line.split_once('=') {
            kv.insert(k.trim().to_string(), v.trim().to_string());
        }
    }
    let get = |k: &str| kv.get(k).cloned().filter(|v| !v.is_empty());
    let need = |k: &str| {
        get(k).ok_or_else(|| {
            AppError::usage(format!(
                "--server-env {}: no {k}=... line (the file scripts/mailserver.sh writes to DIR/server.env)",
                path.display()
            ))
        })
    };
    let host = need("MBX_MAIL_HOST")?;
    let port = |k: &str| -> Result<u16, AppError> {
        let v = need(k)?;
        v.parse::<u16>().ok().filter(|&p| p > 0).ok_or_else(|| {
            AppError::usage(format!(
                "--server-env {}: {k}={v} is not a port",
                path.display()
            ))
        })
    };
    let s = |port, security| ServerSpec {
        host: host.clone(),
        port,
        security,
    };
    Ok(ServerEnv {
        servers: ServersSpec {
            smtp: s(port("MBX_MAIL_SUBMISSION_PORT")?, Security::StartTls),
            imap: s(port("MBX_MAIL_IMAPS_PORT")?, Security::Implicit),
            pop3: s(port("MBX_MAIL_POP3S_PORT")?, Security::Implicit),
        },
        ca_file: get("MBX_MAIL_CA_FILE").map(PathBuf::from),
        domain: get("MBX_MAIL_DOMAIN"),
        users: get("MBX_MAIL_USERS").and_then(|v| v.parse().ok()),
        user_template: get("MBX_MAIL_USER_TEMPLATE"),
        password: get("MBX_MAIL_PASSWORD"),
        maildir: get("MBX_MAIL_MAILDIR"),
    })
}

/// How the server's certificate is trusted, in words for result.json.
pub fn trust_name(t: &Trust) -> String {
    match t {
        Trust::System => "system".into(),
        Trust::CaFile(p) => format!("ca_file:{}", p.display()),
        Trust::Insecure => "insecure".into(),
    }
}

/// The endpoints for the clients, with one TLS configuration.
pub fn endpoints(
    spec: &ServersSpec,
    trust: &Trust,
) -> Result<(Endpoint, Endpoint, Endpoint), AppError> {
    let tls = mbx_loadgen::tls::client_config(trust).map_err(|e| {
        AppError::usage(format!(
            "the TLS trust ({}): {e}; give a PEM file with --ca-file, or --insecure-tls for a lab server with a self-signed certificate",
            trust_name(trust)
        ))
    })?;
    let ep = |s: &ServerSpec| Endpoint::new(&s.host, s.port, s.security, Some(Arc::clone(&tls)));
    Ok((ep(&spec.smtp), ep(&spec.imap), ep(&spec.pop3)))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn urls_give_host_port_and_security_and_refuse_the_wrong_protocol() {
        let s = parse_url(Proto::Smtp, "smtp+starttls://mail.example.com:2525").expect("url");
        assert_eq!(
            (s.host.as_str(), s.port, s.security),
            ("mail.example.com", 2525, Security::StartTls)
        );
        assert_eq!(s.url(Proto::Smtp), "smtp+starttls://mail.example.com:2525");
        let s = parse_url(Proto::Imap, "IMAPS://[::1]").expect("v6");
        assert_eq!((s.host.as_str(), s.port), ("::1", 993));
        assert_eq!(s.url(Proto::Imap), "imaps://[::1]:993");
        let s = parse_url(Proto::Pop3, "pop3://10.0.0.1:1110/").expect("pop3");
        assert_eq!((s.port, s.security), (1110, Security::Plain));
        for (p, bad, says) in [
            (
                Proto::Imap,
                "smtps://h:465",
                "is not one of imap, imap+starttls, imaps",
            ),
            (Proto::Smtp, "mail.example.com", "not a URL"),
            (Proto::Smtp, "smtps://h:0", "not 1..=65535"),
            (Proto::Smtp, "smtps://h:70000", "not 1..=65535"),
            (Proto::Pop3, "pop3s://user@h", "no host"),
            (Proto::Pop3, "pop3s://", "no host"),
        ] {
            let e = parse_url(p, bad).expect_err(bad).to_string();
            assert!(e.contains(says) && e.contains(p.flag()), "{bad}: {e}");
        }
    }

    #[test]
    fn the_test_servers_env_file_reads_back() {
        let dir = tempfile::tempdir().expect("tmp");
        let path = dir.path().join("server.env");
        fs_err::write(
            &path,
            "MBX_MAIL_HOST=127.0.0.1\nMBX_MAIL_DOMAIN=loadgen.test\nMBX_MAIL_USERS=50\nMBX_MAIL_USER_TEMPLATE=loadgen%d\nMBX_MAIL_PASSWORD=pw\nMBX_MAIL_SUBMISSION_PORT=24000\nMBX_MAIL_IMAPS_PORT=24003\nMBX_MAIL_POP3S_PORT=24005\nMBX_MAIL_CA_FILE=/x/ca.pem\n",
        )
        .expect("write");
        let env = read_server_env(&path).expect("env");
        assert_eq!(
            env.servers.smtp.url(Proto::Smtp),
            "smtp+starttls://127.0.0.1:24000"
        );
        assert_eq!(env.servers.imap.url(Proto::Imap), "imaps://127.0.0.1:24003");
        assert_eq!(env.servers.pop3.url(Proto::Pop3), "pop3s://127.0.0.1:24005");
        assert_eq!(env.users, Some(50));
        assert_eq!(env.ca_file, Some(PathBuf::from("/x/ca.pem")));
        fs_err::write(&path, "MBX_MAIL_HOST=127.0.0.1\n").expect("write");
        let e = read_server_env(&path).expect_err("no ports").to_string();
        assert!(
            e.contains("MBX_MAIL_SUBMISSION_PORT") && e.contains("server.env"),
            "{e}"
        );
    }
}
