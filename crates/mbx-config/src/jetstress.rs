//! Jetstress 2013 XML configurations (`JetstressConfig.xml`), read into a [`RunConfig`].
//!
//! The file is parsed by a real XML reader (quick-xml) into a small element tree, then every
//! element Jetstress writes is either mapped to our configuration or listed as accepted but
//! ignored, with the reason ([`JetstressImport::ignored`]). Values that are empty or junk are
//! errors naming the element; every such problem in the file is reported at once.
//!
//! Windows paths (`E:\db1\db`) are mapped with [`PathMap`] rules (`E:\=/mnt/e/`); a Windows path
//! no rule maps is an error naming it (on Windows itself a path is taken as written).

use std::path::{Path, PathBuf};

use quick_xml::events::Event;

use crate::{RunConfig, TestKind, Thresholds};

/// Errors reading a Jetstress configuration: each names the file, and the element when one is
/// at fault.
#[derive(Debug, thiserror::Error)]
pub enum JetstressError {
    /// The file could not be read.
    #[error("cannot read {}: {error}", path.display())]
    Read {
        /// The file.
        path: PathBuf,
        /// The OS error (part of the message).
        error: std::io::Error,
    },
    /// Not a regular file within [`crate::input::CONFIG_LIMIT`], or not UTF-8.
    #[error(transparent)]
    Input(#[from] crate::input::InputError),
    /// Not well-formed XML.
    #[error("{}: not a readable XML file: {reason}", path.display())]
    Xml {
        /// The file.
        path: PathBuf,
        /// What the XML reader reported, with its position.
        reason: String,
    },
    /// Elements with values mbxstress cannot use.
    #[error("{}: {}", path.display(), problems.join("; "))]
    Invalid {
        /// The file.
        path: PathBuf,
        /// One line per problem, each naming its element and the fix.
        problems: Vec<String>,
    },
}

/// An element of the file that mbxstress reads but does not act on, and why.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Ignored {
    /// The element (or `Element@Attribute`).
    pub element: String,
    /// Why it makes no difference to mbxstress (or what does the same job).
    pub reason: String,
}

/// An ESE instance of the file: its database folders and log folder (mapped), and its IOPS bias.
#[derive(Debug, Clone, PartialEq)]
pub struct Instance {
    /// `DatabasePaths/Path`, mapped.
    pub db_paths: Vec<PathBuf>,
    /// `LogPath`, mapped.
    pub log_path: PathBuf,
    /// `IopsBias`.
    pub iops_bias: f64,
}

/// What a Jetstress configuration asks for.
#[derive(Debug, Clone, PartialEq)]
pub struct JetstressImport {
    /// The configuration: the defaults with every mapped element applied.
    pub config: RunConfig,
    /// `Type`.
    pub test: TestKind,
    /// `SuppressTuning` false: the thread count is tuned (the configuration's `threads` is 0).
    pub tuning: bool,
    /// `DatabaseSource` Open: the databases must exist (attach), not be created.
    pub attach_existing: bool,
    /// `EseInstances`.
    pub instances: Vec<Instance>,
    /// Elements read but not acted on.
    pub ignored: Vec<Ignored>,
}

/// Windows path prefixes mapped to local ones (`--map-path 'E:\=/mnt/e/'`).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct PathMap {
    rules: Vec<(String, String)>,
}

impl PathMap {
    /// Adds a rule `FROM=TO` (FROM a Windows prefix such as `E:\` or `\\server\share\`).
    pub fn add(&mut self, rule: &str) -> Result<(), String> {
        let Some((from, to)) = rule.split_once('=') else {
            return Err(format!("'{rule}' is not FROM=TO (e.g. 'E:\\=/mnt/e/')"));
        };
        if from.is_empty() || to.is_empty() {
            return Err(format!(
                "'{rule}': FROM and TO must both be given (e.g. 'E:\\=/mnt/e/')"
            ));
        }
        self.rules.push((from.replace('/', "\\"), to.to_string()));
        Ok(())
    }

    /// A path of the file as a local path: the longest matching rule's TO plus the rest with
    /// `/` separators; a path that is not a Windows path is taken as written. `None`: a Windows
    /// path no rule maps (on Windows, taken as written).
    pub fn map(&self, path: &str) -> Option<PathBuf> {
        let windows = is_windows_path(path);
        if windows {
            let best = self
                .rules
                .iter()
                .filter(|(from, _)| starts_with_ignore_case(path, from))
                .max_by_key(|(from, _)| from.len());
            if let Some((from, to)) = best {
                let rest = path[from.len()..]
                    .trim_start_matches('\\')
                    .replace('\\', "/");
                return Some(Path::new(to).join(rest));
            }
            return cfg!(windows).then(|| PathBuf::from(path));
        }
        Some(PathBuf::from(path))
    }
}

impl PathMap {
    /// A local path as the Windows path a rule maps to it (the longest matching TO), for
    /// `export jetstress-config`; `None` when no rule covers it.
    pub fn unmap(&self, path: &Path) -> Option<String> {
        let local = path.to_string_lossy().replace('\\', "/");
        let (from, to) = self
            .rules
            .iter()
            .filter(|(_, to)| {
                let to = to.trim_end_matches('/');
                local == to || local.starts_with(&format!("{to}/"))
            })
            .max_by_key(|(_, to)| to.len())?;
        let rest = local[to.trim_end_matches('/').len()..].trim_start_matches('/');
        let mut out = from.clone();
        if !out.ends_with('\\') && !rest.is_empty() {
            out.push('\\');
        }
        out.push_str(&rest.replace('/', "\\"));
        Some(out)
    }
}

fn starts_with_ignore_case(s: &str, prefix: &str) -> bool {
    s.len() >= prefix.len()
        && s.is_char_boundary(prefix.len())
        && s[..prefix.len()].eq_ignore_ascii_case(prefix)
}

/// `E:\...`, `E:/...` or `\\server\share\...`.
fn is_windows_path(p: &str) -> bool {
    let b = p.as_bytes();
    (b.len() >= 2 && b[0].is_ascii_alphabetic() && b[1] == b':') || p.starts_with("\\\\")
}

/// An element of the file: name, attributes, text and children, in order.
#[derive(Debug, Default)]
struct Element {
    name: String,
    attrs: Vec<(String, String)>,
    text: String,
    children: Vec<Element>,
}

impl Element {
    fn child(&self, name: &str) -> Option<&Element> {
        self.children.iter().find(|c| c.name == name)
    }
    fn attr(&self, name: &str) -> Option<&str> {
        self.attrs
            .iter()
            .find(|(k, _)| k == name)
            .map(|(_, v)| v.as_str())
    }
}

/// Reads the document into an element tree (the root element).
fn parse(text: &str) -> Result<Element, String> {
    let mut reader = quick_xml::Reader::from_str(text);
    let mut stack: Vec<Element> = vec![Element::default()];
    let open = |e: &quick_xml::events::BytesStart<'_>| -> Result<Element, String> {
        let mut el = Element {
            name: String::from_utf8_lossy(e.local_name().as_ref()).into_owned(),
            ..Element::default()
        };
        for a in e.attributes() {
            let a = a.map_err(|x| x.to_string())?;
            let value = a.unescape_value().map_err(|x| x.to_string())?;
            el.attrs.push((
                String::from_utf8_lossy(a.key.local_name().as_ref()).into_owned(),
                value.into_owned(),
            ));
        }
        Ok(el)
    };
    loop {
        let at = reader.buffer_position();
        let event = reader
            .read_event()
            .map_err(|e| format!("{e} (at byte {at})"))?;
        match event {
            Event::Start(e) => stack.push(open(&e)?),
            Event::Empty(e) => {
                let el = open(&e)?;
                if let Some(top) = stack.last_mut() {
                    top.children.push(el);
                }
            }
            Event::End(_) => {
                let Some(el) = stack.pop() else {
                    return Err(format!("unbalanced end tag at byte {at}"));
                };
                match stack.last_mut() {
                    Some(top) => top.children.push(el),
                    None => return Err(format!("unbalanced end tag at byte {at}")),
                }
            }
            Event::Text(t) => {
                let t = t.unescape().map_err(|e| format!("{e} (at byte {at})"))?;
                if let Some(top) = stack.last_mut() {
                    top.text.push_str(&t);
                }
            }
            Event::CData(t) => {
                if let Some(top) = stack.last_mut() {
                    top.text.push_str(&String::from_utf8_lossy(&t));
                }
            }
            Event::Eof => break,
            _ => {}
        }
    }
    if stack.len() != 1 {
        return Err("the document ends inside an element".into());
    }
    let doc = stack.pop().unwrap_or_default();
    doc.children
        .into_iter()
        .next()
        .ok_or_else(|| "no root element".to_string())
}

/// An ISO 8601 duration as Jetstress writes it (`P0Y0M0DT2H0M0S`), in seconds. Years and months
/// are refused unless zero (their length is not fixed).
pub fn parse_iso_duration(s: &str) -> Option<f64> {
    let s = s.trim();
    let rest = s.strip_prefix('P')?;
    let (date, time) = match rest.split_once('T') {
        Some((d, t)) => (d, Some(t)),
        None => (rest, None),
    };
    let mut total = 0.0;
    let mut any = false;
    let mut take = |part: &str, units: &[(char, f64)]| -> Option<()> {
        let mut num = String::new();
        let mut allowed = units.iter();
        for c in part.chars() {
            if c.is_ascii_digit() || c == '.' {
                num.push(c);
                continue;
            }
            // Units in order, each at most once.
            let (_, secs) = allowed.find(|(u, _)| *u == c)?;
            let v: f64 = num.parse().ok()?;
            if !v.is_finite() || v < 0.0 {
                return None;
            }
            if secs.is_nan() {
                if v != 0.0 {
                    return None;
                }
            } else {
                total += v * secs;
            }
            any = true;
            num.clear();
        }
        num.is_empty().then_some(())
    };
    take(
        date,
        &[
            ('Y', f64::NAN),
            ('M', f64::NAN),
            ('W', 604_800.0),
            ('D', 86_400.0),
        ],
    )?;
    if let Some(t) = time {
        if t.is_empty() {
            return None;
        }
        take(t, &[('H', 3600.0), ('M', 60.0), ('S', 1.0)])?;
    }
    (any && total.is_finite()).then_some(total)
}

/// Reads a Jetstress configuration file (the bounded reader: a regular file of at most
/// [`crate::input::CONFIG_LIMIT`], UTF-8) with `map` for its Windows paths.
pub fn load(path: &Path, map: &PathMap) -> Result<JetstressImport, JetstressError> {
    let text = crate::input::read_bounded(
        path,
        crate::input::CONFIG_LIMIT,
        "a Jetstress configuration (JetstressConfig.xml)",
    )?;
    from_str(&text, path, map)
}

/// [`load`] on the file's text; `path` names it in errors.
pub fn from_str(text: &str, path: &Path, map: &PathMap) -> Result<JetstressImport, JetstressError> {
    let root = parse(text).map_err(|reason| JetstressError::Xml {
        path: path.to_path_buf(),
        reason,
    })?;
    let mut b = Builder {
        problems: Vec::new(),
        ignored: Vec::new(),
    };
    let imported = b.build(&root, map);
    if !b.problems.is_empty() {
        return Err(JetstressError::Invalid {
            path: path.to_path_buf(),
            problems: b.problems,
        });
    }
    let mut imported = imported;
    imported.ignored = b.ignored;
    Ok(imported)
}

struct Builder {
    problems: Vec<String>,
    ignored: Vec<Ignored>,
}

const RECORD_LEVEL: &str =
    "ESE record-level detail: mbxstress models the engine's I/O at the page level";

impl Builder {
    fn ignore(&mut self, element: &str, reason: &str) {
        self.ignored.push(Ignored {
            element: element.to_string(),
            reason: reason.to_string(),
        });
    }

    fn problem(&mut self, element: &str, what: String) {
        self.problems.push(format!("<{element}> {what}"));
    }

    /// Each child of `parent` that is not one of `many` must appear once: a second one (which
    /// one would count?) is a problem naming it and where (`within`, e.g. "<TestDesignInfo>").
    fn once(&mut self, parent: &Element, within: &str, many: &[&str]) {
        let mut seen: Vec<(&str, usize)> = Vec::new();
        for c in &parent.children {
            match seen.iter_mut().find(|(n, _)| *n == c.name) {
                Some((_, k)) => *k += 1,
                None => seen.push((&c.name, 1)),
            }
        }
        for (name, k) in seen {
            if k > 1 && !many.contains(&name) {
                self.problem(
                    name,
                    format!("appears {k} times in {within}; Jetstress writes it once: keep one"),
                );
            }
        }
    }

    fn text<'a>(&mut self, e: &'a Element) -> Option<&'a str> {
        let t = e.text.trim();
        if t.is_empty() {
            self.problem(&e.name, "is empty; give a value".into());
            return None;
        }
        Some(t)
    }

    fn number(&mut self, e: &Element, lo: f64, hi: f64) -> Option<f64> {
        let t = self.text(e)?;
        match t.parse::<f64>() {
            Ok(v) if v.is_finite() && (lo..=hi).contains(&v) => Some(v),
            _ => {
                self.problem(
                    &e.name,
                    format!("is '{t}'; expected a number from {lo} to {hi}"),
                );
                None
            }
        }
    }

    fn count(&mut self, e: &Element, lo: u64, hi: u64) -> Option<u64> {
        let t = self.text(e)?;
        match t.parse::<u64>() {
            Ok(v) if (lo..=hi).contains(&v) => Some(v),
            _ => {
                self.problem(
                    &e.name,
                    format!("is '{t}'; expected a whole number from {lo} to {hi}"),
                );
                None
            }
        }
    }

    fn flag(&mut self, e: &Element) -> Option<bool> {
        let t = self.text(e)?;
        match t.to_ascii_lowercase().as_str() {
            "true" | "1" => Some(true),
            "false" | "0" => Some(false),
            _ => {
                self.problem(&e.name, format!("is '{t}'; expected true or false"));
                None
            }
        }
    }

    fn build(&mut self, root: &Element, map: &PathMap) -> JetstressImport {
        let mut d = Draft::new();
        if root.name != "configuration" {
            self.problems.push(format!(
                "the root element is <{}>, not <configuration>: not a Jetstress configuration",
                root.name
            ));
            return d.import();
        }
        self.check_structure(root);
        for section in &root.children {
            match section.name.as_str() {
                "JetstressVersionGenerated" | "EseVersionGenerated" => {
                    self.ignore(&section.name, "the versions that wrote the file")
                }
                "TestDesignInfo" => {
                    for e in &section.children {
                        self.test_design(e, &mut d);
                    }
                }
                "ExchangeProfile" => self.exchange_profile(section, map, &mut d),
                "JetSystemParams" => {
                    for e in &section.children {
                        self.jet_system_param(e, &mut d);
                    }
                }
                _ => self.ignore(
                    &section.name,
                    "not a Jetstress 2013 element mbxstress knows",
                ),
            }
        }
        self.settle(d)
    }

    /// The sections Jetstress writes once, and one threshold set per kind of test.
    fn check_structure(&mut self, root: &Element) {
        self.once(root, "<configuration>", &[]);
        for section in &root.children {
            let within = format!("<{}>", section.name);
            match section.name.as_str() {
                "TestDesignInfo" => {
                    self.once(section, &within, &["Thresholds"]);
                    // One threshold set for Stress tests and one for the others.
                    let sets: Vec<&Element> = section
                        .children
                        .iter()
                        .filter(|c| c.name == "Thresholds")
                        .collect();
                    for (want_stress, tests) in [(true, "Stress"), (false, "Performance")] {
                        let k = sets.iter().filter(|t| for_stress(t) == want_stress).count();
                        if k > 1 {
                            self.problems.push(format!(
                                "<Thresholds> for {tests} tests appears {k} times in <TestDesignInfo>; Jetstress writes one set: keep one"
                            ));
                        }
                    }
                }
                "ExchangeProfile" | "JetSystemParams" => self.once(section, &within, &[]),
                _ => {}
            }
        }
    }

    /// One element of `<TestDesignInfo>`.
    fn test_design(&mut self, e: &Element, d: &mut Draft) {
        match e.name.as_str() {
                            "Type" => {
                                if let Some(t) = self.text(e) {
                                    match jetstress_type(t) {
                                        Some(k) => d.test = k,
                                        None => self.problem(
                                            "Type",
                                            format!("is '{t}'; expected Performance, Stress, DatabaseBackup or SoftRecovery"),
                                        ),
                                    }
                                }
                            }
                            "Duration" => {
                                if let Some(t) = self.text(e) {
                                    match parse_iso_duration(t) {
                                        Some(s) if s >= 1.0 => d.cfg.duration_s = s,
                                        _ => self.problem(
                                            "Duration",
                                            format!("is '{t}'; expected an ISO 8601 duration of at least 1 s such as P0Y0M0DT2H0M0S"),
                                        ),
                                    }
                                }
                            }
                            "LogInterval" => {
                                if let Some(ms) = self.number(e, 1000.0, 3_600_000.0) {
                                    d.cfg.sample_interval_s = ms / 1000.0;
                                }
                            }
                            "RunDatabaseMaintenancePerformance" => {
                                set(&mut d.cfg.bdm, self.flag(e));
                            }
                            "ContinueOnErrors" => {
                                set(&mut d.cfg.continue_on_errors, self.flag(e));
                            }
                            "SuppressTuning" => {
                                if let Some(v) = self.flag(e) {
                                    d.tuning = !v;
                                }
                            }
                            "LogFilesToReplay" => {
                                set(&mut d.cfg.log_files_to_replay, self.count(e, 1, 100_000));
                            }
                            "PreloadJetCache" => {
                                if let Some(v) = self.number(e, 0.0, 1.0) {
                                    if (v - 0.9).abs() > 1e-9 {
                                        self.ignore("PreloadJetCache", "the cache prerequisite is fixed at 90% full (Jetstress's default)");
                                    }
                                }
                            }
                            // Jetstress (ESE) checksums every page it reads when this is on: 100.
                            // Off: mbxstress still checks every read's header and block stamps.
                            "VerifyChecksum" => {
                                if let Some(v) = self.flag(e) {
                                    d.cfg.checksum_reads_pct = if v { 100 } else { 0 };
                                }
                            }
                            "OperationMix" => self.op_mix(e, &mut d.cfg),
                            "Thresholds" => {
                                let t = self.thresholds(e);
                                if for_stress(e) {
                                    d.lenient = t;
                                } else {
                                    d.strict = t;
                                }
                            }
                            "MultiHostBreak" => self.ignore(&e.name, "runs on several servers are `mbxstress fleet`"),
                            "Description" | "OutputPath" | "RestoreBackupPath" => {
                                self.ignore(&e.name, "results go to --out")
                            }
                            "BinaryPerfLog" | "UseEseCounters" => self.ignore(
                                &e.name,
                                "mbxstress records its own samples (samples.jsonl, CSV) and has no ESE counters",
                            ),
                            "RunDatabaseMaintenanceSoftRecovery" => self.ignore(&e.name, "Soft Recovery replays with maintenance off"),
                            "BackupToDisk" => self.ignore(&e.name, "the Backup test reads the databases; where a backup would be written is not simulated"),
                            "LogFilesToChecksum" => self.ignore(&e.name, "the Checksum test verifies every log file kept"),
                            "LogInterval2" => self.ignore(&e.name, "the tuning sample interval: mbxstress's tuning measures each step whole, after read latency is stable (--tuning-step sets the step length)"),
                            "MaximumChecksumBuffers" | "MaximumChecksumThreads" => self.ignore(&e.name, "the checksum pass has a fixed queue depth per file"),
                            "MaximumLatencyErrors" => {
                                if let Some(n) = self.count(e, 0, u64::from(crate::MAX_LATENCY_ERRORS)) {
                                    d.max_latency_errors = Some(n as u32);
                                }
                            }
                            "SluggishSessions" => self.ignore(&e.name, "no equivalent: thresholds are judged on the samples"),
                            "RetrieveLVOnRead" | "RetrieveLVOnScan" | "PrereadOnRead" | "PrereadOnScan"
                            | "UpdateLV" | "ScanPercentage" | "BatchRecords" | "BatchUpdates"
                            | "Bulky1Percentage" => self.ignore(&e.name, RECORD_LEVEL),
                            _ => self.ignore(&e.name, "not a Jetstress 2013 element mbxstress knows"),
                        }
    }

    /// `<ExchangeProfile>`: the mailbox profile, the sizing and the instances.
    fn exchange_profile(&mut self, section: &Element, map: &PathMap, d: &mut Draft) {
        // Capacity sizing has no mailbox profile: its elements may be left empty.
        let capacity = section
            .child("DatabaseSizing")
            .is_some_and(|d| is_capacity_sizing(d.text.trim()));
        for e in &section.children {
            if capacity
                && matches!(
                    e.name.as_str(),
                    "MailboxCount" | "MailboxQuota" | "MailboxIops"
                )
                && e.text.trim().is_empty()
            {
                self.ignore(&e.name, "empty, and capacity sizing has no mailbox profile");
                continue;
            }
            match e.name.as_str() {
                "ThreadCount" => {
                    d.thread_count_element = true;
                    d.thread_count = self.count(e, 1, 1024);
                }
                "MailboxCount" => set(&mut d.cfg.profile.mailboxes, self.count(e, 1, 10_000_000)),
                "MailboxQuota" => set(
                    &mut d.cfg.profile.mailbox_quota_mb,
                    self.count(e, 1, 1_000_000),
                ),
                "MailboxIops" => set(
                    &mut d.cfg.profile.iops_per_mailbox,
                    self.number(e, 0.0001, 100.0),
                ),
                "MarginIops" => set(&mut d.cfg.thresholds.iops_margin, self.number(e, 0.0, 1.0)),
                "DatabaseCopyCount" => set(
                    &mut d.cfg.profile.copies_per_database,
                    self.count(e, 1, 16).map(|n| n as u32),
                ),
                "DatabaseSource" => {
                    if let Some(t) = self.text(e) {
                        match t.to_ascii_lowercase().as_str() {
                                        "new" => d.attach_existing = false,
                                        "open" => d.attach_existing = true,
                                        _ => self.problem("DatabaseSource", format!("is '{t}'; mbxstress can create (New) or attach existing (Open) databases")),
                                    }
                    }
                }
                "DatabaseSizing" => {
                    if let Some(t) = self.text(e) {
                        if t.eq_ignore_ascii_case("profile") {
                            d.cfg.sizing = crate::Sizing::Profile;
                        } else if is_capacity_sizing(t) {
                            d.cfg.sizing = crate::Sizing::Capacity;
                        } else {
                            self.problem("DatabaseSizing", format!("is '{t}'; mbxstress reads Profile (databases sized from mailboxes x quota) or Capacity (the disk subsystem throughput test: sized from CapacityPercentage of the free space, held at ThroughputPercentage of the maximum IOPS)"));
                        }
                    }
                }
                "EseInstances" => {
                    self.once(e, "<EseInstances>", &["EseInstance"]);
                    for (i, inst) in e
                        .children
                        .iter()
                        .filter(|c| c.name == "EseInstance")
                        .enumerate()
                    {
                        if let Some(x) = self.instance(i, inst, map) {
                            d.instances.push(x);
                        }
                    }
                }
                "TransPerSec" => self.ignore(&e.name, "the target is mailboxes x IOPS per mailbox"),
                "ThroughputPercentage" => {
                    set(&mut d.cfg.throughput_pct, self.number(e, 1.0, 100.0))
                }
                "CapacityPercentage" => {
                    if let Some(v) = self.number(e, 0.0, 100.0) {
                        if v > 0.0 {
                            d.cfg.capacity_pct = v;
                        } else {
                            self.problem(
                                &e.name,
                                "is 0; give a percentage of the free space above 0".into(),
                            );
                        }
                    }
                }
                "DatabaseSpaceReserved" => {
                    if let Some(v) = self.number(e, 0.0, 100.0) {
                        if v != crate::CAPACITY_RESERVE * 100.0 {
                            self.problem(&e.name, format!("is {v}; mbxstress reserves 25% of capacity-sized databases for growth, as Jetstress does by default: set it to 25"));
                        }
                    }
                }
                "LongPadLength" | "ShortPadLength" => self.ignore(&e.name, RECORD_LEVEL),
                _ => self.ignore(&e.name, "not a Jetstress 2013 element mbxstress knows"),
            }
        }
    }

    /// One element of `<JetSystemParams>`.
    fn jet_system_param(&mut self, e: &Element, d: &mut Draft) {
        match e.name.as_str() {
            "DatabasePageSize" => {
                if let Some(v) = self.count(e, 1, 1 << 20) {
                    if v != 32_768 {
                        self.problem("DatabasePageSize", format!("is {v}; Exchange 2013 and later use 32768-byte pages, as mbxstress does"));
                    }
                }
            }
            "CircularLog" => {
                if let Some(v) = self.flag(e) {
                    d.cfg.circular_logging = v;
                }
            }
            "LogFileSize" => {
                if let Some(v) = self.count(e, 1, 1 << 30) {
                    if v != 1024 {
                        self.ignore(
                            "LogFileSize",
                            "log files are 1 MiB (1024 KiB), as in Exchange 2013 and later",
                        );
                    }
                }
            }
            "MaxVerPages" | "DBMThrottling" => {
                self.ignore(&e.name, "ESE tuning with no effect on the simulated I/O")
            }
            _ => self.ignore(&e.name, "not a Jetstress 2013 element mbxstress knows"),
        }
    }

    /// What follows from the sections together: the thresholds of the test's type, the thread
    /// count (tuned or given) and the databases of the instances.
    fn settle(&mut self, mut d: Draft) -> JetstressImport {
        d.cfg.thresholds = match (d.test, d.strict.take(), d.lenient.take()) {
            (TestKind::Stress, _, Some(l)) => Thresholds {
                iops_margin: d.cfg.thresholds.iops_margin,
                ..l
            },
            (_, Some(s), _) => Thresholds {
                iops_margin: d.cfg.thresholds.iops_margin,
                ..s
            },
            (TestKind::Stress, _, None) => Thresholds {
                iops_margin: d.cfg.thresholds.iops_margin,
                ..Thresholds::lenient()
            },
            _ => d.cfg.thresholds,
        };
        if let Some(n) = d.max_latency_errors {
            d.cfg.thresholds.max_latency_errors = n;
        }
        // With tuning on, Jetstress tunes the thread count (ThreadCount is its answer from the
        // last run, not an input): so does mbxstress (threads 0).
        match d.thread_count {
            _ if d.tuning => d.cfg.threads = 0,
            Some(n) => d.cfg.threads = n as u32,
            None if !d.thread_count_element => self.problems.push(
                "<ThreadCount> is missing and tuning is suppressed; give a thread count".into(),
            ),
            None => {}
        }
        if !d.instances.is_empty() {
            let dbs: usize = d
                .instances
                .iter()
                .map(|i: &Instance| i.db_paths.len())
                .sum();
            d.cfg.profile.databases = u32::try_from(dbs).unwrap_or(u32::MAX);
            d.cfg.db_paths = d
                .instances
                .iter()
                .flat_map(|i| i.db_paths.clone())
                .collect();
            d.cfg.log_paths = d.instances.iter().map(|i| i.log_path.clone()).collect();
            // Every instance's databases, and one log folder per instance.
            debug_assert_eq!(d.cfg.db_paths.len(), dbs);
            debug_assert_eq!(d.cfg.log_paths.len(), d.instances.len());
            let first = d.instances[0].iops_bias;
            if d.instances
                .iter()
                .any(|i| (i.iops_bias - first).abs() > 1e-9)
            {
                self.ignore(
                    "EseInstance@IopsBias",
                    "every database gets the same share of the target IOPS",
                );
            }
        }
        // Jetstress tunes the threads when tuning is on: the import asks for tuning (0) then.
        debug_assert!(!d.tuning || d.cfg.threads == 0);
        d.import()
    }

    fn op_mix(&mut self, e: &Element, cfg: &mut RunConfig) {
        let mut pct = |name: &str| -> Option<u32> {
            let Some(v) = e.attr(name) else {
                self.problem(&format!("OperationMix {name}"), "is missing".into());
                return None;
            };
            match v.trim().parse::<u32>() {
                Ok(n) if n <= 100 => Some(n),
                _ => {
                    self.problem(
                        &format!("OperationMix {name}"),
                        format!("is '{v}'; expected a percentage 0..=100"),
                    );
                    None
                }
            }
        };
        let (ins, del, rep, lazy) = (
            pct("InsertOps"),
            pct("DeleteOps"),
            pct("ReplaceOps"),
            pct("LazyCommits"),
        );
        if let (Some(ins), Some(del), Some(rep), Some(lazy)) = (ins, del, rep, lazy) {
            match 100u32.checked_sub(ins + del + rep) {
                Some(read) => {
                    cfg.op_mix.insert_pct = ins;
                    cfg.op_mix.delete_pct = del;
                    cfg.op_mix.replace_pct = rep;
                    cfg.op_mix.read_pct = read;
                    cfg.op_mix.lazy_commit_pct = lazy;
                }
                None => self.problem(
                    "OperationMix",
                    format!(
                        "InsertOps + DeleteOps + ReplaceOps is {}%, above 100%",
                        ins + del + rep
                    ),
                ),
            }
        }
        if e.attr("LockOps").is_some() {
            self.ignore("OperationMix@LockOps", RECORD_LEVEL);
        }
    }

    fn thresholds(&mut self, e: &Element) -> Option<Thresholds> {
        let mut t = Thresholds::default();
        let before = self.problems.len();
        self.once(e, "<Thresholds>", &[]);
        for c in &e.children {
            let slot = match c.name.as_str() {
                "AverageDatabaseReadLatency" => &mut t.db_read_avg_ms,
                "MaximumDatabaseReadLatency" => &mut t.db_read_max_ms,
                "AverageLogWriteLatency" => &mut t.log_write_avg_ms,
                "MaximumLogWriteLatency" => &mut t.log_write_max_ms,
                _ => {
                    self.ignore(
                        &format!("Thresholds/{}", c.name),
                        "not a threshold mbxstress knows",
                    );
                    continue;
                }
            };
            if let Some(v) = self.number(c, 0.001, 1_000_000.0) {
                *slot = v;
            }
        }
        (self.problems.len() == before).then_some(t)
    }

    fn instance(&mut self, i: usize, e: &Element, map: &PathMap) -> Option<Instance> {
        let n = i + 1;
        self.once(e, &format!("<EseInstance {n}>"), &[]);
        if let Some(d) = e.child("DatabasePaths") {
            self.once(d, &format!("<EseInstance {n}><DatabasePaths>"), &["Path"]);
        }
        let mut mapped = |p: &str, what: &str| -> Option<PathBuf> {
            match map.map(p) {
                Some(x) => Some(x),
                None => {
                    // One problem per unmapped prefix, naming its first path.
                    let prefix = windows_prefix(p);
                    let hint = format!("--map-path '{prefix}=/local/folder/'");
                    if !self.problems.iter().any(|x| x.contains(&hint)) {
                        self.problems.push(format!(
                            "EseInstance {n} {what} '{p}' is a Windows path (as are any others on {prefix}): map it with {hint}"
                        ));
                    }
                    None
                }
            }
        };
        let dbs: Vec<Option<PathBuf>> = e
            .child("DatabasePaths")
            .map(|d| {
                d.children
                    .iter()
                    .filter(|c| c.name == "Path")
                    .map(|c| mapped(c.text.trim(), "database path"))
                    .collect()
            })
            .unwrap_or_default();
        let log = e
            .child("LogPath")
            .map(|l| l.text.trim().to_string())
            .filter(|t| !t.is_empty());
        let log = match log {
            Some(l) => mapped(&l, "log path"),
            None => {
                self.problems
                    .push(format!("EseInstance {n} has no <LogPath>"));
                None
            }
        };
        if dbs.is_empty() {
            self.problems
                .push(format!("EseInstance {n} has no <DatabasePaths><Path>"));
        }
        let bias = match e.attr("IopsBias") {
            None => 1.0,
            Some(v) => match v.trim().parse::<f64>() {
                Ok(b) if b.is_finite() && b > 0.0 => b,
                _ => {
                    self.problems.push(format!(
                        "EseInstance {n} IopsBias is '{v}'; expected a positive number"
                    ));
                    1.0
                }
            },
        };
        let db_paths: Option<Vec<PathBuf>> = dbs.into_iter().collect();
        Some(Instance {
            db_paths: db_paths.filter(|d| !d.is_empty())?,
            log_path: log?,
            iops_bias: bias,
        })
    }
}

/// The drive or share prefix of a Windows path, for the --map-path hint.
/// What [`Builder::build`] gathers from the sections before settling what they decide together.
struct Draft {
    cfg: RunConfig,
    test: TestKind,
    tuning: bool,
    attach_existing: bool,
    instances: Vec<Instance>,
    strict: Option<Thresholds>,
    lenient: Option<Thresholds>,
    max_latency_errors: Option<u32>,
    thread_count: Option<u64>,
    thread_count_element: bool,
}

impl Draft {
    fn new() -> Draft {
        Draft {
            cfg: RunConfig::default(),
            test: TestKind::Performance,
            tuning: false,
            attach_existing: false,
            instances: Vec::new(),
            strict: None,
            lenient: None,
            max_latency_errors: None,
            thread_count: None,
            thread_count_element: false,
        }
    }

    fn import(self) -> JetstressImport {
        JetstressImport {
            config: self.cfg,
            test: self.test,
            tuning: self.tuning,
            attach_existing: self.attach_existing,
            instances: self.instances,
            ignored: Vec::new(),
        }
    }
}

/// Whether a `<Thresholds>` set is the one for Stress tests (its `TestRunTypes` names Stress).
fn for_stress(e: &Element) -> bool {
    e.attr("TestRunTypes").is_some_and(|v| {
        v.split(',')
            .any(|x| x.trim().eq_ignore_ascii_case("stress"))
    })
}

fn windows_prefix(p: &str) -> String {
    if let Some(rest) = p.strip_prefix("\\\\") {
        let parts: Vec<&str> = rest.splitn(3, '\\').collect();
        if parts.len() >= 2 {
            return format!("\\\\{}\\{}\\", parts[0], parts[1]);
        }
    }
    p.get(..2).map_or_else(String::new, |d| format!("{d}\\"))
}

/// Jetstress's `Type` values.
fn jetstress_type(t: &str) -> Option<TestKind> {
    match t.to_ascii_lowercase().replace([' ', '-', '_'], "").as_str() {
        "performance" => Some(TestKind::Performance),
        "stress" => Some(TestKind::Stress),
        "databasebackup" | "backup" => Some(TestKind::Backup),
        "softrecovery" => Some(TestKind::SoftRecovery),
        _ => None,
    }
}

/// Sets `slot` to a value read from the file, when there is one (a problem with it was noted
/// where it was read, and the default stays).
fn set<T>(slot: &mut T, value: Option<T>) {
    if let Some(v) = value {
        *slot = v;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn iso_durations_as_jetstress_writes_them() {
        assert_eq!(parse_iso_duration("P0Y0M0DT2H0M0S"), Some(7200.0));
        assert_eq!(parse_iso_duration("P0Y0M0DT0H15M0S"), Some(900.0));
        assert_eq!(parse_iso_duration("P1D"), Some(86_400.0));
        assert_eq!(parse_iso_duration("PT1.5S"), Some(1.5));
        for bad in [
            "", "P", "PT", "2H", "P1Y", "P0Y1M", "PT1H1H", "PTxS", "PT-1S", "P0DT1S2",
        ] {
            assert_eq!(parse_iso_duration(bad), None, "{bad}");
        }
    }

    #[test]
    fn windows_paths_map_by_the_longest_rule() {
        let mut m = PathMap::default();
        m.add("E:\\=/mnt/e/").expect("rule");
        m.add("e:\\db1\\=/fast/").expect("rule");
        m.add("\\\\srv\\share\\=/net/").expect("rule");
        assert_eq!(m.map("E:\\db2\\db"), Some(PathBuf::from("/mnt/e/db2/db")));
        assert_eq!(m.map("E:\\DB1\\log"), Some(PathBuf::from("/fast/log")));
        assert_eq!(m.map("\\\\srv\\share\\x"), Some(PathBuf::from("/net/x")));
        assert_eq!(
            m.map("/already/local"),
            Some(PathBuf::from("/already/local"))
        );
        if !cfg!(windows) {
            assert_eq!(m.map("F:\\db"), None);
        }
        assert!(m.add("E:\\").is_err());
        assert!(m.add("=/x").is_err());
        assert_eq!(windows_prefix("F:\\db\\x"), "F:\\");
        assert_eq!(windows_prefix("\\\\s\\sh\\x"), "\\\\s\\sh\\");
    }
}

/// What `export jetstress-config` writes.
#[derive(Debug, Clone)]
pub struct ExportSpec<'a> {
    /// The configuration.
    pub config: &'a RunConfig,
    /// `Type`.
    pub test: TestKind,
    /// `DatabaseSource` Open (the databases exist) rather than New.
    pub attach_existing: bool,
    /// Rules mapping local paths back to Windows ones (the `--map-path` rules, read backwards).
    pub map: &'a PathMap,
}

/// The paths [`to_xml`] writes as they are, though they are not Windows paths (no `--map-path`
/// rule covers them), in the order written, each once: Jetstress runs on Windows and cannot use
/// them. Empty when every path is mapped or already a Windows path.
pub fn unmapped_paths(spec: &ExportSpec<'_>) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    for (db, log) in instance_folders(spec.config) {
        for path in [db, log] {
            if spec.map.unmap(&path).is_some() {
                continue;
            }
            let shown = path.display().to_string();
            if !is_windows_path(&shown) && !out.contains(&shown) {
                out.push(shown);
            }
        }
    }
    out
}

/// The database and log folder of each database, as `plan_paths` lays them out: one path per
/// database, or a single folder shared (databases side by side, logs in `dbNNN` subfolders).
fn instance_folders(cfg: &RunConfig) -> Vec<(PathBuf, PathBuf)> {
    let n = cfg.profile.databases as usize;
    (0..n)
        .map(|i| {
            let db = match cfg.db_paths.len() {
                len if len == n => cfg.db_paths[i].clone(),
                _ => cfg.db_paths.first().cloned().unwrap_or_default(),
            };
            let log = match cfg.log_paths.len() {
                len if len == n => cfg.log_paths[i].clone(),
                _ => cfg
                    .log_paths
                    .first()
                    .cloned()
                    .unwrap_or_default()
                    .join(format!("db{:03}", i + 1)),
            };
            (db, log)
        })
        .collect()
}

/// An ISO 8601 duration as Jetstress writes it (`P0Y0M0DT2H0M0S`; fractions of a second kept).
pub fn iso_duration(secs: f64) -> String {
    let whole = secs.max(0.0).floor();
    let frac = secs.max(0.0) - whole;
    let total = whole as u64;
    let (d, h, m, s) = (
        total / 86_400,
        total % 86_400 / 3600,
        total % 3600 / 60,
        total % 60,
    );
    let secs = if frac > 0.0 {
        format!("{}", s as f64 + frac)
    } else {
        s.to_string()
    };
    format!("P0Y0M{d}DT{h}H{m}M{secs}S")
}

/// The Jetstress 2013 configuration equivalent to `spec`, with the elements (and only those) a
/// file written by Jetstress 2013 has; values mbxstress has no counterpart for keep Jetstress's
/// defaults. Paths no `--map-path` rule covers are written as they are (Jetstress needs Windows
/// paths: map them). Reading the result with [`from_str`] and the same rules gives `spec`'s
/// configuration back.
pub fn to_xml(spec: &ExportSpec<'_>) -> String {
    let mut x = XmlLines::default();
    x.line(0, "<?xml version=\"1.0\"?>");
    x.line(0, "<configuration xmlns:xsd=\"http://www.w3.org/2001/XMLSchema\" xmlns:xsi=\"http://www.w3.org/2001/XMLSchema-instance\">");
    x.line(
        1,
        "<JetstressVersionGenerated>15.0.995.0</JetstressVersionGenerated>",
    );
    x.line(1, "<EseVersionGenerated>15.0.847.30</EseVersionGenerated>");
    test_design_info(&mut x, spec);
    exchange_profile(&mut x, spec);
    jet_system_params(&mut x, spec.config);
    x.line(0, "</configuration>");
    x.finish()
}

/// The lines of an XML document, one element per line, indented two spaces per depth. Each
/// line's depth is the number of elements open around it (checked, with each close matching its
/// open): the writer's callers give both, and a slip would write a file Jetstress refuses.
#[derive(Default)]
struct XmlLines {
    out: String,
    open: Vec<String>,
}

impl XmlLines {
    fn line(&mut self, depth: usize, s: &str) {
        use std::fmt::Write as _;
        let name = |t: &str| {
            t.split(|c: char| c.is_whitespace() || c == '>' || c == '/')
                .next()
                .unwrap_or("")
                .to_string()
        };
        if let Some(closing) = s.strip_prefix("</") {
            let opened = self.open.pop();
            assert_eq!(
                opened.as_deref(),
                Some(name(closing).as_str()),
                "XML close without its open: {s}"
            );
            assert_eq!(self.open.len(), depth, "XML close at the wrong depth: {s}");
        } else {
            assert_eq!(self.open.len(), depth, "XML line at the wrong depth: {s}");
            let leaf = s.starts_with("<?") || s.ends_with("/>") || s.contains("</");
            if let (false, Some(opening)) = (leaf, s.strip_prefix('<')) {
                self.open.push(name(opening));
            }
        }
        let _ = writeln!(self.out, "{}{s}", "  ".repeat(depth));
    }

    /// `<k>v</k>` at `depth`.
    fn leaf(&mut self, depth: usize, k: &str, v: impl std::fmt::Display) {
        self.line(depth, &format!("<{k}>{v}</{k}>"));
    }

    fn finish(self) -> String {
        assert!(
            self.open.is_empty(),
            "XML elements left open: {:?}",
            self.open
        );
        self.out
    }
}

/// `<TestDesignInfo>`: the test's type, length and options, the operation mix and thresholds.
fn test_design_info(x: &mut XmlLines, spec: &ExportSpec<'_>) {
    let c = spec.config;
    let b = |v: bool| if v { "true" } else { "false" };
    let jet_type = match spec.test {
        TestKind::Performance | TestKind::Checksum => "Performance",
        TestKind::Stress => "Stress",
        TestKind::Backup => "DatabaseBackup",
        TestKind::SoftRecovery => "SoftRecovery",
    };
    let (strict, lenient) = if spec.test == TestKind::Stress {
        (Thresholds::default(), c.thresholds.clone())
    } else {
        (c.thresholds.clone(), Thresholds::lenient())
    };
    x.line(1, "<TestDesignInfo>");
    for (k, v) in [
        ("Type", jet_type.to_string()),
        ("MultiHostBreak", "false".into()),
    ] {
        x.leaf(2, k, v);
    }
    x.line(2, "<Description />");
    for (k, v) in [
        ("Duration", iso_duration(c.duration_s)),
        ("BinaryPerfLog", "true".into()),
        ("VerifyChecksum", b(c.checksum_reads_pct > 0).into()),
        ("RunDatabaseMaintenancePerformance", b(c.bdm).into()),
        ("RunDatabaseMaintenanceSoftRecovery", "false".into()),
        ("ContinueOnErrors", b(c.continue_on_errors).into()),
        ("SuppressTuning", b(c.threads != 0).into()),
        ("UseEseCounters", "true".into()),
        ("PreloadJetCache", "0.9".into()),
        ("BackupToDisk", "false".into()),
        ("LogFilesToReplay", c.log_files_to_replay.to_string()),
        ("LogFilesToChecksum", "500".into()),
        (
            "LogInterval",
            format!("{}", (c.sample_interval_s * 1000.0).round()),
        ),
        ("LogInterval2", "5000".into()),
    ] {
        x.leaf(2, k, v);
    }
    let m = &c.op_mix;
    x.line(2, &format!(
        "<OperationMix LockOps=\"true\" InsertOps=\"{}\" DeleteOps=\"{}\" ReplaceOps=\"{}\" LazyCommits=\"{}\" />",
        m.insert_pct, m.delete_pct, m.replace_pct, m.lazy_commit_pct
    ));
    for (k, v) in [
        ("RetrieveLVOnRead", "false"),
        ("RetrieveLVOnScan", "false"),
        ("PrereadOnRead", "false"),
        ("PrereadOnScan", "true"),
        ("UpdateLV", "true"),
        ("ScanPercentage", "0"),
    ] {
        x.leaf(2, k, v);
    }
    x.line(2, "<RestoreBackupPath />");
    let max_latency_errors = c.thresholds.max_latency_errors.to_string();
    for (k, v) in [
        ("OutputPath", "."),
        ("MaximumChecksumBuffers", "20971520"),
        ("MaximumChecksumThreads", "400"),
        ("MaximumLatencyErrors", &max_latency_errors),
        ("SluggishSessions", "1"),
        ("BatchRecords", "1"),
        ("BatchUpdates", "16"),
        ("Bulky1Percentage", "100"),
    ] {
        x.leaf(2, k, v);
    }
    for (name, attrs, t) in [
        ("Strict", "", &strict),
        ("Lenient", " TestRunTypes=\"Stress\"", &lenient),
    ] {
        x.line(2, &format!("<Thresholds Name=\"{name}\"{attrs}>"));
        for (k, v) in [
            ("AverageDatabaseReadLatency", t.db_read_avg_ms),
            ("MaximumDatabaseReadLatency", t.db_read_max_ms),
            ("AverageLogWriteLatency", t.log_write_avg_ms),
            ("MaximumLogWriteLatency", t.log_write_max_ms),
        ] {
            x.leaf(3, k, v);
        }
        x.line(2, "</Thresholds>");
    }
    x.line(1, "</TestDesignInfo>");
}

/// `<ExchangeProfile>`: the sizing, the mailbox profile and the instances' paths.
fn exchange_profile(x: &mut XmlLines, spec: &ExportSpec<'_>) {
    let c = spec.config;
    let esc = |s: &str| {
        s.replace('&', "&amp;")
            .replace('<', "&lt;")
            .replace('>', "&gt;")
            .replace('"', "&quot;")
    };
    x.line(1, "<ExchangeProfile>");
    let p = &c.profile;
    for (k, v) in [
        ("ThreadCount", c.sessions().to_string()),
        ("TransPerSec", "0".into()),
        ("ThroughputPercentage", format!("{}", c.throughput_pct)),
        (
            "DatabaseSource",
            if spec.attach_existing { "Open" } else { "New" }.into(),
        ),
        (
            "DatabaseSizing",
            match c.sizing {
                crate::Sizing::Profile => "Profile",
                crate::Sizing::Capacity => "Capacity",
            }
            .into(),
        ),
        ("CapacityPercentage", format!("{}", c.capacity_pct)),
        ("MailboxCount", p.mailboxes.to_string()),
        ("MailboxQuota", p.mailbox_quota_mb.to_string()),
        ("MailboxIops", format!("{}", p.iops_per_mailbox)),
        ("MarginIops", format!("{}", c.thresholds.iops_margin)),
        ("LongPadLength", "2000".into()),
        ("ShortPadLength", "200".into()),
        ("DatabaseSpaceReserved", "25".into()),
        ("DatabaseCopyCount", p.copies_per_database.to_string()),
    ] {
        x.leaf(2, k, v);
    }
    x.line(2, "<EseInstances>");
    let win = |path: &Path| {
        spec.map
            .unmap(path)
            .unwrap_or_else(|| path.display().to_string())
    };
    for (db, log) in instance_folders(c) {
        x.line(3, "<EseInstance IopsBias=\"1\">");
        x.line(4, "<DatabasePaths>");
        x.line(5, &format!("<Path>{}</Path>", esc(&win(&db))));
        x.line(4, "</DatabasePaths>");
        x.line(4, &format!("<LogPath>{}</LogPath>", esc(&win(&log))));
        x.line(3, "</EseInstance>");
    }
    x.line(2, "</EseInstances>");
    x.line(1, "</ExchangeProfile>");
}

/// `<JetSystemParams>`: ESE's parameters, at the values mbxstress simulates.
fn jet_system_params(x: &mut XmlLines, c: &RunConfig) {
    x.line(1, "<JetSystemParams>");
    for (k, v) in [
        ("DatabasePageSize", "32768"),
        ("CircularLog", if c.circular_logging { "1" } else { "0" }),
        ("LogFileSize", "1024"),
        ("MaxVerPages", "8192"),
        ("DBMThrottling", "100"),
    ] {
        x.leaf(2, k, v);
    }
    x.line(1, "</JetSystemParams>");
}

/// Whether a `DatabaseSizing` value is the disk subsystem throughput category. The real files
/// we have carry only `Profile`; `Capacity` (what `export jetstress-config` writes) and
/// `Throughput` are read as it.
fn is_capacity_sizing(t: &str) -> bool {
    t.eq_ignore_ascii_case("capacity") || t.eq_ignore_ascii_case("throughput")
}
