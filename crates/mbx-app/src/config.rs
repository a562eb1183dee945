//! A run's configuration from its layers, in increasing priority: the built-in defaults, a
//! `--jetstress-config` file or a `--config` file (one or the other), a `--profile` file, then
//! the flags. Each file is read and parsed once ([`Layers::read`]); afterwards every value knows
//! where it came from ([`Layers::origin`]), so a message names the flag, or the key and its file,
//! without reading anything again.
//!
//! Adding a run setting: a field in `mbx_config::RunConfig` (with its row in `validate_for`), a
//! flag in the binary's `RunArgs`, and its [`Flag`] line in the binary's `sources()`.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

use mbx_config::jetstress::{JetstressError, JetstressImport, PathMap};
use mbx_config::{ConfigError, Profile, RunConfig, TestKind, Thresholds};
use serde::{Deserialize, Serialize};

use crate::AppError;

/// The Stress test's duration when neither a flag nor a file sets one (Jetstress: 24 h).
pub const STRESS_DEFAULT_S: f64 = 86_400.0;

type Setter = Box<dyn Fn(&mut RunConfig) + Send + Sync>;

/// A flag that sets a configuration key: its name, and its value when given.
pub struct Flag {
    key: &'static str,
    name: &'static str,
    set: Option<Setter>,
}

impl Flag {
    /// The flag `name` setting `key` (dotted for tables: `tuning.step_s`) by `apply` when a
    /// value was given.
    pub fn new<T: Clone + Send + Sync + 'static>(
        key: &'static str,
        name: &'static str,
        value: Option<T>,
        apply: fn(&mut RunConfig, T),
    ) -> Flag {
        Flag {
            key,
            name,
            set: value.map(|v| Box::new(move |c: &mut RunConfig| apply(c, v.clone())) as Setter),
        }
    }

    /// A switch (`--buffered`): `apply` when given.
    pub fn switch(
        key: &'static str,
        name: &'static str,
        given: bool,
        apply: fn(&mut RunConfig),
    ) -> Flag {
        Flag {
            key,
            name,
            set: given.then(|| Box::new(move |c: &mut RunConfig| apply(c)) as Setter),
        }
    }

    /// The key it sets.
    pub fn key(&self) -> &'static str {
        self.key
    }

    /// The flag (`--mailboxes`).
    pub fn name(&self) -> &'static str {
        self.name
    }

    /// Whether it was given.
    pub fn given(&self) -> bool {
        self.set.is_some()
    }
}

impl std::fmt::Debug for Flag {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{} ({}, given: {})", self.name, self.key, self.given())
    }
}

/// Where a run's configuration comes from: the files named and every flag of a key (given or
/// not, so that a message can say which flag would set a key).
#[derive(Debug, Default)]
pub struct Sources {
    /// `--config FILE`.
    pub config: Option<PathBuf>,
    /// `--jetstress-config FILE`.
    pub jetstress: Option<PathBuf>,
    /// `--map-path FROM=TO` rules of the Jetstress file.
    pub map_path: Vec<String>,
    /// `--profile FILE`.
    pub profile: Option<PathBuf>,
    /// The flags, in the order they apply.
    pub flags: Vec<Flag>,
}

/// Where one value of the configuration came from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Origin<'a> {
    /// The built-in default.
    Default,
    /// The `--jetstress-config` file (the whole configuration starts from it).
    JetstressConfig(&'a Path),
    /// A key of the `--config` file.
    Config(&'a Path),
    /// A key of the `--profile` file.
    Profile(&'a Path),
    /// A flag on the command line (or, for a run from a request, the flag the coordinator was
    /// given).
    Flag(&'a str),
}

/// Where a value of a resolved configuration came from, carried with it in a request (a
/// `fleet run` host's run tells a flag from a file as the coordinator's would).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case", deny_unknown_fields)]
pub enum Carried {
    /// A flag (its name).
    Flag(String),
    /// A key of a `--profile` file (the coordinator's path).
    Profile(PathBuf),
    /// A key of a `--config` file (the coordinator's path).
    Config(PathBuf),
}

/// A resolved configuration and where each value that is not the default came from.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CarriedConfig {
    /// The configuration, resolved and validated for the test.
    pub config: RunConfig,
    /// The keys set by a flag or a file, and by which.
    pub origins: BTreeMap<String, Carried>,
}

/// The layers of a run's configuration, each file read and parsed once.
#[derive(Debug)]
pub struct Layers {
    config: Option<(PathBuf, RunConfig, BTreeSet<String>)>,
    jetstress: Option<(PathBuf, JetstressImport)>,
    profile: Option<(PathBuf, Profile)>,
    flags: Vec<Flag>,
    /// A configuration resolved elsewhere (a request), in place of the files and flags.
    carried: Option<CarriedConfig>,
}

/// Reads a Jetstress configuration with the `--map-path` rules. A file that is not a usable
/// Jetstress configuration, or a bad rule, is a usage error naming what to fix.
pub fn load_jetstress(path: &Path, map_path: &[String]) -> Result<JetstressImport, AppError> {
    let mut map = PathMap::default();
    for rule in map_path {
        map.add(rule)
            .map_err(|e| AppError::usage(format!("invalid --map-path {e}")))?;
    }
    mbx_config::jetstress::load(path, &map).map_err(|e| match e {
        e @ (JetstressError::Invalid { .. } | JetstressError::Xml { .. }) => {
            AppError::usage(format!("--jetstress-config {e}"))
        }
        e => AppError::usage(format!("--jetstress-config: {e}")),
    })
}

/// Every key a TOML table sets, dotted for tables (`cache.max_mb_per_db`), tables included.
fn keys_of(table: &toml::Table, prefix: &str, out: &mut BTreeSet<String>) {
    for (k, v) in table {
        let key = if prefix.is_empty() {
            k.clone()
        } else {
            format!("{prefix}.{k}")
        };
        if let Some(t) = v.as_table() {
            keys_of(t, &key, out);
        }
        out.insert(key);
    }
}

/// Reads a `--config` file once: the configuration and the keys it sets.
fn read_config(path: &Path) -> Result<(RunConfig, BTreeSet<String>), ConfigError> {
    let text = mbx_config::input::read_bounded(
        path,
        mbx_config::input::CONFIG_LIMIT,
        "a run configuration (TOML)",
    )?;
    let parse_error = |message| ConfigError::Parse {
        path: path.to_path_buf(),
        what: "run configuration",
        message,
    };
    let cfg = RunConfig::from_toml(&text).map_err(parse_error)?;
    let table = text
        .parse::<toml::Table>()
        .map_err(|e| parse_error(e.to_string()))?;
    let mut keys = BTreeSet::new();
    keys_of(&table, "", &mut keys);
    Ok((cfg, keys))
}

impl Layers {
    /// Reads the files `sources` names, each once: the Jetstress configuration first, then
    /// `--config`, then `--profile`.
    pub fn read(sources: Sources) -> Result<Layers, AppError> {
        let jetstress = match &sources.jetstress {
            Some(path) => Some((path.clone(), load_jetstress(path, &sources.map_path)?)),
            None => None,
        };
        let config = match &sources.config {
            Some(path) => {
                let (cfg, keys) = read_config(path).map_err(|source| AppError::Config {
                    context: format!("reading --config {}", path.display()),
                    source,
                })?;
                Some((path.clone(), cfg, keys))
            }
            None => None,
        };
        let profile = match &sources.profile {
            Some(path) => Some((
                path.clone(),
                Profile::load(path).map_err(|source| AppError::Config {
                    context: format!("reading --profile {}", path.display()),
                    source,
                })?,
            )),
            None => None,
        };
        Ok(Layers {
            config,
            jetstress,
            profile,
            flags: sources.flags,
            carried: None,
        })
    }

    /// The layers of a configuration resolved elsewhere ([`Layers::carry`]): the same values,
    /// each with the origin it had there.
    pub fn from_carried(carried: CarriedConfig) -> Layers {
        Layers {
            config: None,
            jetstress: None,
            profile: None,
            flags: Vec::new(),
            carried: Some(carried),
        }
    }

    /// The configuration of a `kind` test ([`Layers::resolve_for`]) with each set value's
    /// origin, to be sent elsewhere. A Jetstress configuration sets every value at once and is
    /// not carried (`fleet run` refuses it).
    pub fn carry(&self, kind: TestKind) -> Result<CarriedConfig, AppError> {
        if self.jetstress.is_some() {
            return Err(AppError::usage(
                "a --jetstress-config run is not sent to other hosts; use --config or --profile",
            ));
        }
        let config = self.resolve_for(kind)?;
        let mut keys: BTreeSet<String> = self
            .flags
            .iter()
            .filter(|f| f.given())
            .map(|f| f.key.to_string())
            .collect();
        if self.profile.is_some() {
            keys.extend(mbx_config::PROFILE_KEYS.iter().map(|k| k.to_string()));
        }
        if let Some((_, _, set)) = &self.config {
            keys.extend(set.iter().cloned());
        }
        if let Some(c) = &self.carried {
            keys.extend(c.origins.keys().cloned());
        }
        let origins = keys
            .into_iter()
            .filter_map(|k| {
                let o = match self.origin(&k) {
                    Origin::Flag(f) => Carried::Flag(f.to_string()),
                    Origin::Profile(p) => Carried::Profile(p.to_path_buf()),
                    Origin::Config(p) => Carried::Config(p.to_path_buf()),
                    Origin::JetstressConfig(_) | Origin::Default => return None,
                };
                Some((k, o))
            })
            .collect();
        Ok(CarriedConfig { config, origins })
    }

    /// The Jetstress configuration, when the run starts from one.
    pub fn jetstress(&self) -> Option<&JetstressImport> {
        self.jetstress.as_ref().map(|(_, j)| j)
    }

    /// Whether a `--profile` file was given.
    pub fn has_profile(&self) -> bool {
        self.profile.is_some()
            || self
                .carried
                .as_ref()
                .is_some_and(|c| c.origins.values().any(|o| matches!(o, Carried::Profile(_))))
    }

    /// Where the value of `key` (dotted for tables) came from.
    pub fn origin(&self, key: &str) -> Origin<'_> {
        if let Some(c) = &self.carried {
            return match c.origins.get(key) {
                Some(Carried::Flag(f)) => Origin::Flag(f),
                Some(Carried::Profile(p)) => Origin::Profile(p),
                Some(Carried::Config(p)) => Origin::Config(p),
                None => Origin::Default,
            };
        }
        if let Some(f) = self.flags.iter().rev().find(|f| f.key == key && f.given()) {
            return Origin::Flag(f.name);
        }
        if let Some((path, _)) = &self.profile {
            if mbx_config::PROFILE_KEYS.contains(&key) {
                return Origin::Profile(path);
            }
        }
        if let Some((path, _, keys)) = &self.config {
            if keys.contains(key) {
                return Origin::Config(path);
            }
        }
        if let Some((path, _)) = &self.jetstress {
            return Origin::JetstressConfig(path);
        }
        Origin::Default
    }

    /// Whether anything but the built-in default set `key`.
    pub fn is_set(&self, key: &str) -> bool {
        self.origin(key) != Origin::Default
    }

    /// Whether a flag set `key`.
    pub fn flag_given(&self, key: &str) -> bool {
        matches!(self.origin(key), Origin::Flag(_))
    }

    /// Whether the `--config` file itself sets `key` (whatever a flag says).
    pub fn config_sets(&self, key: &str) -> bool {
        if let Some(c) = &self.carried {
            return matches!(c.origins.get(key), Some(Carried::Config(_)));
        }
        self.config
            .as_ref()
            .is_some_and(|(_, _, keys)| keys.contains(key))
    }

    /// The flag that sets `key`, if it has one.
    fn flag_for(&self, key: &str) -> Option<&str> {
        if let Some(Carried::Flag(f)) = self.carried.as_ref().and_then(|c| c.origins.get(key)) {
            return Some(f);
        }
        self.flags.iter().find(|f| f.key == key).map(|f| f.name)
    }

    /// The layers applied, then the checks of flags that do not go together; not yet validated.
    fn layered(&self) -> Result<RunConfig, AppError> {
        let mut cfg = match (&self.carried, &self.config, &self.jetstress) {
            (Some(c), _, _) => c.config.clone(),
            (None, Some((_, c, _)), _) => c.clone(),
            (None, None, Some((_, j))) => j.config.clone(),
            (None, None, None) => RunConfig::default(),
        };
        if let Some((_, p)) = &self.profile {
            cfg.apply_profile(p);
        }
        for f in &self.flags {
            if let Some(set) = &f.set {
                set(&mut cfg);
            }
        }
        // The two categories do not mix: a profile flag means nothing to capacity sizing, and
        // the throughput percentage nothing to a profile.
        if cfg.sizing == mbx_config::Sizing::Capacity {
            let profile_flags = ["mailboxes", "mailbox_quota_mb", "iops_per_mailbox"]
                .iter()
                .filter_map(|k| match self.origin(k) {
                    Origin::Flag(f) => Some(f),
                    _ => None,
                });
            let profile = self.profile.as_ref().map(|_| "--profile");
            if let Some(flag) = profile_flags.chain(profile).next() {
                return Err(AppError::usage(format!(
                    "{flag} belongs to the mailbox profile test, and this is the disk subsystem throughput test (sizing = \"capacity\", --capacity-pct): the databases are sized from the free space and the target is a percentage of the maximum found; drop {flag}, or set sizing = \"profile\" in the --config file"
                )));
            }
        } else if self.flag_given("throughput_pct") {
            return Err(AppError::usage(
                "--throughput-pct applies to the disk subsystem throughput test: add --capacity-pct N (the databases' share of the free space), or give the target as --mailboxes x --iops-per-mailbox instead",
            ));
        }
        // The open-loop settings mean nothing to a closed loop: say so rather than ignore them.
        if cfg.pacing == mbx_config::Pacing::Closed {
            for key in ["arrivals", "max_backlog_s"] {
                if let Origin::Flag(flag) = self.origin(key) {
                    return Err(AppError::usage(format!(
                        "{flag} applies to open-loop pacing only; add --pacing open (or set `pacing = \"open\"` in the --config file), or drop {flag}"
                    )));
                }
            }
        }
        Ok(cfg)
    }

    /// The configuration of a `kind` test, validated: the layers, nothing else.
    pub fn resolve(&self, kind: TestKind) -> Result<RunConfig, AppError> {
        let cfg = self.layered()?;
        cfg.validate_for(kind)
            .map_err(|(key, reason)| AppError::usage(self.describe_invalid(key, &reason)))?;
        Ok(cfg)
    }

    /// The configuration of a `kind` test: [`Layers::resolve`], then the defaults that depend
    /// on the test where nothing set the value: for Stress 24 h and the Lenient maximum
    /// latencies; for every test a sample interval that gives a short run's maximum-latency
    /// checks samples enough (Jetstress's 15 s otherwise).
    pub fn resolve_for(&self, kind: TestKind) -> Result<RunConfig, AppError> {
        let mut cfg = self.resolve(kind)?;
        if kind == TestKind::Stress {
            if !self.is_set("duration_s") {
                cfg.duration_s = STRESS_DEFAULT_S;
            }
            let lenient = Thresholds::lenient();
            if !self.is_set("thresholds.db_read_max_ms") {
                cfg.thresholds.db_read_max_ms = lenient.db_read_max_ms;
            }
            if !self.is_set("thresholds.log_write_max_ms") {
                cfg.thresholds.log_write_max_ms = lenient.log_write_max_ms;
            }
        }
        if !self.is_set("sample_interval_s") {
            cfg.sample_interval_s =
                mbx_config::sample_interval_for(cfg.duration_s, cfg.thresholds.max_latency_errors);
        }
        // The test's defaults keep a validated configuration valid.
        debug_assert!(
            cfg.validate_for(kind).is_ok(),
            "{:?}",
            cfg.validate_for(kind)
        );
        Ok(cfg)
    }

    /// The message for an invalid `key`, naming where its value came from (the flag, the
    /// `--profile`, `--config` or `--jetstress-config` file, or the built-in default) and how
    /// to change it.
    pub fn describe_invalid(&self, key: &str, reason: &str) -> String {
        let flag = self.flag_for(key);
        let (source, how) = match self.origin(key) {
            Origin::Flag(f) => return format!("invalid {f}: {reason}"),
            // The profile overrides the config file: fix the profile, or override it with the
            // flag.
            Origin::Profile(profile) => (
                format!("`{key}` in --profile {}", profile.display()),
                flag.map(|f| format!("; correct the profile or override it with {f}"))
                    .unwrap_or_default(),
            ),
            Origin::Config(path) => (
                format!("`{key}` in --config {}", path.display()),
                flag.map(|f| format!("; correct it there or override it with {f}"))
                    .unwrap_or_default(),
            ),
            Origin::JetstressConfig(path) => (
                format!("`{key}` from --jetstress-config {}", path.display()),
                flag.map(|f| format!("; correct the file or override it with {f}"))
                    .unwrap_or_default(),
            ),
            Origin::Default => (
                format!("`{key}` (the built-in default)"),
                match (flag, &self.config) {
                    (Some(f), Some((path, ..))) => {
                        format!("; set it with {f} or as `{key}` in {}", path.display())
                    }
                    (None, Some((path, ..))) => format!("; set `{key}` in {}", path.display()),
                    (Some(f), None) => {
                        format!("; set it with {f} or as `{key}` in a --config FILE")
                    }
                    (None, None) => format!("; set `{key}` in a --config FILE"),
                },
            ),
        };
        format!("invalid {source}: {reason}{how}")
    }
}
