//! The hosts file (`--hosts`): `[[host]]` tables with strict keys, each host a safe, unique
//! name (its results folder) and, optionally, a mailbox profile checked here before it is
//! copied anywhere. Every message names the hosts file's line.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

use serde::Deserialize;

use super::error::{usage, Result};

/// A database or log location in the hosts file: one path or a list.
#[derive(Debug, Clone, Deserialize)]
#[serde(untagged)]
pub enum Paths {
    /// One path.
    One(String),
    /// Several.
    Many(Vec<String>),
}

impl Paths {
    /// The paths.
    pub fn list(&self) -> Vec<String> {
        match self {
            Paths::One(p) => vec![p.clone()],
            Paths::Many(v) => v.clone(),
        }
    }
}

/// One `[[host]]` table.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct HostEntry {
    /// The ssh destination (`user@server` or a name in the ssh config).
    pub ssh: String,
    /// The results folder's name; by default the host part of `ssh`.
    pub name: Option<String>,
    /// The host's database location(s) (`fleet run`; a loadgen client has none).
    pub db_path: Option<Paths>,
    /// The host's log location(s).
    pub log_path: Option<Paths>,
    /// A local mailbox profile, checked here and copied to the host.
    pub profile: Option<PathBuf>,
    /// The remote binary (default `mbxstress` on the PATH).
    pub mbxstress: Option<String>,
    /// The remote working folder (default `.mbxstress`).
    pub work_dir: Option<String>,
}

/// One `[[server]]` table (`fleet loadgen`): a mail server watched over ssh during the run.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ServerEntry {
    /// The ssh destination.
    pub ssh: String,
    /// Its name in the report and its samples file; by default the host part of `ssh`.
    pub name: Option<String>,
}

/// A mail server to watch, checked: its entry and its name.
#[derive(Debug, Clone)]
pub struct ServerHost {
    /// Its name (`servers/<name>.jsonl`).
    pub name: String,
    /// Its ssh destination.
    pub ssh: String,
}

/// The hosts file.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct HostsFile {
    host: Vec<HostEntry>,
    #[serde(default)]
    server: Vec<ServerEntry>,
}

/// What the hosts drive: storage tests (`fleet run`: every host has `db_path` and `log_path`)
/// or simulated mail clients (`fleet loadgen`: client hosts without paths, and optionally
/// `[[server]]` tables for the mail servers to watch).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum HostsFor {
    /// `fleet run`.
    Run,
    /// `fleet loadgen`.
    Loadgen,
}

/// A host ready to be driven: its entry, checked, with the folder name its results go to.
#[derive(Debug, Clone)]
pub struct Host {
    /// Its name: its results folder in `--out` and on the host.
    pub name: String,
    /// Its table.
    pub entry: HostEntry,
    /// Its working folder.
    pub work_dir: String,
}

impl Host {
    /// A host with the default name, work folder and no profile (tests, replays).
    pub fn new(ssh: &str, db_path: &str, log_path: &str) -> Host {
        Host {
            name: default_name(ssh),
            entry: HostEntry {
                ssh: ssh.into(),
                name: None,
                db_path: Some(Paths::One(db_path.into())),
                log_path: Some(Paths::One(log_path.into())),
                profile: None,
                mbxstress: None,
                work_dir: None,
            },
            work_dir: ".mbxstress".into(),
        }
    }
}

fn default_name(ssh: &str) -> String {
    let host = ssh.rsplit('@').next().unwrap_or(ssh);
    host.chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || matches!(c, '.' | '-' | '_') {
                c
            } else {
                '_'
            }
        })
        .collect()
}

/// Names a host may not have: what the coordinator writes beside the host folders in `--out`
/// (fleet.json, fleet.html, `earlier/` for a resumed run's predecessor) and the files of a result
/// folder (`result_files` of [`load`]: `--out` is refused for holding one). Compared without case
/// (a case-insensitive filesystem, as on macOS and Windows, makes `Fleet.json` the same file).
pub const RESERVED_NAMES: [&str; 3] = ["fleet.json", "fleet.html", "earlier"];

/// Longest host name: one path component on every filesystem, with room for the paths below it.
const MAX_NAME_LEN: usize = 100;

/// Why `name` cannot name a host's results folder (a single, portable path component that the
/// coordinator does not use itself), or `None`.
fn bad_name(name: &str, result_files: &[&str]) -> Option<String> {
    if name.is_empty()
        || name.starts_with('.')
        || !name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '.' | '-' | '_'))
    {
        return Some(
            "must be letters, digits, '.', '-' or '_', not starting with '.' (it names the results folder)"
                .into(),
        );
    }
    if name.len() > MAX_NAME_LEN {
        return Some(format!(
            "is {} characters long, over {MAX_NAME_LEN} (it names the results folder)",
            name.len()
        ));
    }
    let lower = name.to_ascii_lowercase();
    if RESERVED_NAMES
        .iter()
        .chain(result_files.iter())
        .any(|r| *r == lower)
    {
        return Some(format!(
            "is reserved: `--out` holds fleet.json, fleet.html and earlier/ beside the host folders, and no result file ({}); choose another name",
            result_files.join(", ")
        ));
    }
    // Windows reserves these device names, with any extension, in every folder.
    let stem = lower.split('.').next().unwrap_or("");
    let device = matches!(stem, "con" | "prn" | "aux" | "nul")
        || (stem.len() == 4
            && (stem.starts_with("com") || stem.starts_with("lpt"))
            && stem.ends_with(|c: char| ('1'..='9').contains(&c)));
    if device || name.ends_with('.') {
        return Some(
            "is not a valid folder name on Windows (a device name such as CON or NUL, or a trailing '.'); choose another name"
                .into(),
        );
    }
    None
}

/// Longest host profile file read: a profile is five `key = number` lines, about 150 bytes.
const PROFILE_LIMIT: u64 = 64 * 1024;

/// The 1-based line of byte `offset` in `text`.
pub(crate) fn line_of(text: &str, offset: usize) -> usize {
    let end = offset.min(text.len());
    text.as_bytes()
        .get(..end)
        .map_or(0, |b| b.iter().filter(|c| **c == b'\n').count())
        .saturating_add(1)
}

/// Checks a host's `profile` file here before it is copied anywhere: a regular file of at most
/// [`PROFILE_LIMIT`] bytes (bounded read: no device, FIFO or huge file), TOML with exactly the
/// profile keys, values in range. The message names lines and keys of the profile format, never
/// the file's contents (it may be any file, such as /etc/shadow).
fn check_profile(path: &Path) -> Result<(), String> {
    let what = "a mailbox profile (TOML)";
    let text =
        mbx_config::input::read_bounded(path, PROFILE_LIMIT, what).map_err(|e| e.to_string())?;
    let keys: std::collections::BTreeMap<String, toml::Spanned<toml::Value>> =
        toml::from_str(&text).map_err(|e| {
            let at = e.span().map_or(0, |s| s.start);
            format!(
                "{} is not a mailbox profile: not valid TOML at line {} (a profile is `key = number` lines: {})",
                path.display(),
                line_of(&text, at),
                mbx_config::PROFILE_KEYS.join(", ")
            )
        })?;
    if let Some((_, v)) = keys
        .iter()
        .find(|(k, _)| !mbx_config::PROFILE_KEYS.contains(&k.as_str()))
    {
        return Err(format!(
            "{} is not a mailbox profile: line {} has a key that is not one of {}",
            path.display(),
            line_of(&text, v.span().start),
            mbx_config::PROFILE_KEYS.join(", ")
        ));
    }
    if let Some(k) = mbx_config::PROFILE_KEYS
        .iter()
        .find(|k| !keys.contains_key(**k))
    {
        return Err(format!(
            "{} is not a complete mailbox profile: key `{k}` is missing",
            path.display()
        ));
    }
    let profile: mbx_config::Profile = toml::from_str(&text).map_err(|e| {
        let at = e.span().map_or(0, |s| s.start);
        format!(
            "{}: line {}: the value has the wrong type (profile values are numbers)",
            path.display(),
            line_of(&text, at)
        )
    })?;
    profile.validate(path).map_err(|e| e.to_string())
}

/// The lines of a host's keys in the hosts file (parsed a second time, for messages only).
#[derive(Debug, Default, Deserialize)]
struct HostLine {
    ssh: Option<toml::Spanned<toml::Value>>,
    name: Option<toml::Spanned<toml::Value>>,
    profile: Option<toml::Spanned<toml::Value>>,
}

#[derive(Debug, Deserialize)]
struct HostLines {
    host: Vec<HostLine>,
}

/// Reads and checks the hosts file: strict keys, non-empty `ssh` and paths, unique safe names
/// that are not reserved (neither the coordinator's files nor `result_files`, the files of a
/// run's results folder), a valid `profile`. Every message names the hosts file's line.
pub fn load(path: &Path, result_files: &[&str]) -> Result<Vec<Host>> {
    load_for(path, result_files, HostsFor::Run).map(|(hosts, _)| hosts)
}

/// [`load`] for `for_`: `fleet loadgen`'s client hosts have no paths (a `db_path` or `log_path`
/// is refused: it would be ignored), and its `[[server]]` tables are returned, checked (unique
/// safe names, not those of a client host).
pub fn load_for(
    path: &Path,
    result_files: &[&str],
    for_: HostsFor,
) -> Result<(Vec<Host>, Vec<ServerHost>)> {
    let text = mbx_config::input::read_bounded(
        path,
        mbx_config::input::HOSTS_LIMIT,
        "a hosts file ([[host]] tables)",
    )
    .map_err(|e| usage(format!("--hosts: {e}")))?;
    let file: HostsFile = toml::from_str(&text).map_err(|e| {
        usage(format!(
            "--hosts {}: {e}\nexpected [[host]] tables with ssh, db_path, log_path (not for fleet loadgen) and optionally name, profile, mbxstress, work_dir; and for fleet loadgen optionally [[server]] tables with ssh and name",
            path.display()
        ))
    })?;
    if file.host.is_empty() {
        return Err(usage(format!(
            "--hosts {}: no [[host]] table",
            path.display()
        )));
    }
    let lines = toml::from_str::<HostLines>(&text)
        .map(|l| l.host)
        .unwrap_or_default();
    let line =
        |s: &Option<toml::Spanned<toml::Value>>| s.as_ref().map(|v| line_of(&text, v.span().start));
    let mut names = BTreeSet::new();
    let mut hosts = Vec::new();
    for (i, e) in file.host.into_iter().enumerate() {
        let at = lines.get(i);
        let ssh_line = at.and_then(|l| line(&l.ssh));
        let which = |key_line: Option<usize>| match key_line.or(ssh_line) {
            Some(n) => format!(
                "--hosts {} line {n}: host {} ({:?})",
                path.display(),
                i + 1,
                e.ssh
            ),
            None => format!("--hosts {}: host {} ({:?})", path.display(), i + 1, e.ssh),
        };
        if e.ssh.trim().is_empty() || e.ssh.starts_with('-') {
            return Err(usage(format!(
                "{}: key `ssh` must be a destination such as user@server",
                which(None)
            )));
        }
        let name = e.name.clone().unwrap_or_else(|| default_name(&e.ssh));
        let name_line = at.and_then(|l| line(&l.name));
        if let Some(why) = bad_name(&name, result_files) {
            let key = if e.name.is_some() {
                "key `name`"
            } else {
                "the name taken from `ssh` (set `name`)"
            };
            return Err(usage(format!("{}: {key} {name:?} {why}", which(name_line))));
        }
        if !names.insert(name.to_ascii_lowercase()) {
            return Err(usage(format!(
                "{}: key `name` {name:?} is used by another host (names are compared without case): give each host its own name",
                which(name_line)
            )));
        }
        for (key, p) in [("db_path", &e.db_path), ("log_path", &e.log_path)] {
            match (for_, p) {
                (HostsFor::Run, None) => {
                    return Err(usage(format!(
                        "{}: key `{key}` is missing (where the host's databases and logs go)",
                        which(None)
                    )))
                }
                (HostsFor::Loadgen, Some(_)) => {
                    return Err(usage(format!(
                        "{}: key `{key}` is for `fleet run` (a loadgen client writes no database): remove it",
                        which(None)
                    )))
                }
                (_, Some(p))
                    if p.list().is_empty() || p.list().iter().any(|s| s.trim().is_empty()) =>
                {
                    return Err(usage(format!(
                        "{}: key `{key}` has an empty path",
                        which(None)
                    )));
                }
                _ => {}
            }
        }
        if let Some(p) = &e.profile {
            if let Err(why) = check_profile(p) {
                return Err(usage(format!(
                    "{}: key `profile` (a local file, checked here and copied to the host): {why}",
                    which(at.and_then(|l| line(&l.profile)))
                )));
            }
        }
        let work_dir = e.work_dir.clone().unwrap_or_else(|| ".mbxstress".into());
        hosts.push(Host {
            name,
            entry: e,
            work_dir,
        });
    }
    if for_ == HostsFor::Run && !file.server.is_empty() {
        return Err(usage(format!(
            "--hosts {}: [[server]] tables name mail servers to watch during `fleet loadgen`; `fleet run` drives [[host]] tables only",
            path.display()
        )));
    }
    let mut servers = Vec::new();
    for (i, e) in file.server.into_iter().enumerate() {
        let which = format!("--hosts {}: server {} ({:?})", path.display(), i + 1, e.ssh);
        if e.ssh.trim().is_empty() || e.ssh.starts_with('-') {
            return Err(usage(format!(
                "{which}: key `ssh` must be a destination such as root@mail1"
            )));
        }
        let name = e.name.clone().unwrap_or_else(|| default_name(&e.ssh));
        if let Some(why) = bad_name(&name, result_files) {
            return Err(usage(format!("{which}: name {name:?} {why}")));
        }
        if !names.insert(name.to_ascii_lowercase()) {
            return Err(usage(format!(
                "{which}: name {name:?} is used by another host or server (set `name`)"
            )));
        }
        servers.push(ServerHost { name, ssh: e.ssh });
    }
    Ok((hosts, servers))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A run's result files (the binary passes its list).
    const RF: [&str; 2] = ["result.json", "test.log"];

    #[test]
    fn host_names_are_single_portable_components_the_coordinator_does_not_use() {
        for bad in [
            "",
            ".x",
            "a/b",
            "..",
            "fleet.json",
            "FLEET.HTML",
            "Earlier",
            "test.log",
            "con",
            "LPT1.txt",
            "x.",
            &"n".repeat(101),
        ] {
            assert!(bad_name(bad, &RF).is_some(), "{bad:?} accepted");
        }
        for good in [
            "mbx1",
            "db-01.example.com",
            "earlier2",
            "console",
            "com0",
            "a_b",
        ] {
            assert_eq!(bad_name(good, &RF), None, "{good:?}");
        }
    }

    #[test]
    fn the_hosts_file_is_strict_and_names_the_host() {
        let dir = tempfile::tempdir().expect("tempdir");
        let p = dir.path().join("h.toml");
        let write = |t: &str| fs_err::write(&p, t).expect("write");
        write("[[host]]\nssh = \"a\"\ndb_path = \"/d\"\nlog_path = [\"/l\"]\n[[host]]\nssh = \"u@b\"\ndb_path = \"/d\"\nlog_path = \"/l\"\n");
        let h = load(&p, &RF).expect("valid");
        assert_eq!((h[0].name.as_str(), h[1].name.as_str()), ("a", "b"));
        write("[[host]]\nssh = \"a\"\ndb_pth = \"/d\"\nlog_path = \"/l\"\n");
        let e = format!("{:#}", load(&p, &RF).expect_err("unknown key"));
        assert!(e.contains("db_pth"), "{e}");
        write("[[host]]\nssh = \"a\"\ndb_path = \"/d\"\nlog_path = \"/l\"\n[[host]]\nssh = \"x@a\"\ndb_path = \"/d\"\nlog_path = \"/l\"\n");
        let e = format!("{:#}", load(&p, &RF).expect_err("duplicate"));
        assert!(e.contains("host 2") && e.contains("`name`"), "{e}");
        write("[[host]]\nssh = \"a\"\nlog_path = \"/l\"\n");
        let e = format!("{:#}", load(&p, &RF).expect_err("no db_path"));
        assert!(e.contains("`db_path` is missing"), "{e}");
    }

    /// `fleet loadgen`: clients without paths, `[[server]]` tables named and checked; `fleet
    /// run` refuses servers and a client's paths are refused.
    #[test]
    fn loadgen_hosts_have_no_paths_and_servers_are_checked() {
        let dir = tempfile::tempdir().expect("tempdir");
        let p = dir.path().join("h.toml");
        let write = |t: &str| fs_err::write(&p, t).expect("write");
        write(
            "[[host]]\nssh = \"c1\"\n[[host]]\nssh = \"u@c2\"\n[[server]]\nssh = \"root@mail1\"\n",
        );
        let (h, s) = load_for(&p, &RF, HostsFor::Loadgen).expect("valid");
        assert_eq!((h.len(), s.len(), s[0].name.as_str()), (2, 1, "mail1"));
        let e = format!("{:#}", load(&p, &RF).expect_err("run: no paths"));
        assert!(e.contains("`db_path` is missing"), "{e}");
        write("[[host]]\nssh = \"c1\"\ndb_path = \"/d\"\n");
        let e = format!(
            "{:#}",
            load_for(&p, &RF, HostsFor::Loadgen).expect_err("paths")
        );
        assert!(e.contains("key `db_path` is for `fleet run`"), "{e}");
        write("[[host]]\nssh = \"c1\"\n[[server]]\nssh = \"x@c1\"\n");
        let e = format!(
            "{:#}",
            load_for(&p, &RF, HostsFor::Loadgen).expect_err("same name")
        );
        assert!(
            e.contains("server 1") && e.contains("used by another"),
            "{e}"
        );
        write("[[host]]\nssh = \"c1\"\ndb_path = \"/d\"\nlog_path = \"/l\"\n[[server]]\nssh = \"m\"\n");
        let e = format!("{:#}", load(&p, &RF).expect_err("run with servers"));
        assert!(e.contains("[[server]]"), "{e}");
    }
}
