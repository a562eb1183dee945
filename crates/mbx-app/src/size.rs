//! `mbxstress size`'s one resolution path: the flags ([`SizeFlags`]), an `--input` file or a
//! built-in `--example` (the base the flags override) and the defaults become one validated
//! [`SizeRequest`]; each value's origin stays known ([`describe_field`]), so a message names the
//! flag, the key and its file, or the example that set it.

use std::path::PathBuf;

use mbx_sizing::storage::{DiskClass, Raid};
use mbx_sizing::{examples, DatabaseLayout, Method, SizingInput, SizingReport};
use serde::{Deserialize, Serialize};

use crate::AppError;

/// A deployment's description: `size`'s flags and the `--input` file's keys (the same names,
/// snake_case in the file). Every value optional: defaults apply after the flags and the file
/// are merged, so whether the user gave a value is always known. (The binary's flags convert to
/// it by these names.)
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SizeInputs {
    /// `method`.
    pub method: Option<String>,
    /// `mailboxes`.
    pub mailboxes: Option<u64>,
    /// `messages_per_day`.
    pub messages_per_day: Option<f64>,
    /// `message_size_kb`.
    pub message_size_kb: Option<f64>,
    /// `quota_mb`.
    pub quota_mb: Option<u64>,
    /// `copies`.
    pub copies: Option<u32>,
    /// `servers`.
    pub servers: Option<u32>,
    /// `databases_per_server`.
    pub databases_per_server: Option<u32>,
    /// `mailboxes_per_database`.
    pub mailboxes_per_database: Option<u64>,
    /// `headroom_pct`.
    pub headroom_pct: Option<f64>,
    /// `iops_per_mailbox`.
    pub iops_per_mailbox: Option<f64>,
    /// `specint_rate`.
    pub specint_rate: Option<f64>,
    /// `specint_cores`.
    pub specint_cores: Option<u32>,
    /// `cores_per_server`.
    pub cores_per_server: Option<u32>,
    /// `cpu_mhz`.
    pub cpu_mhz: Option<f64>,
    /// `peak_cpu_pct`.
    pub peak_cpu_pct: Option<f64>,
    /// `client_access_cores`.
    pub client_access_cores: Option<u32>,
    /// `log_retention_days`.
    pub log_retention_days: Option<u32>,
    /// `deleted_item_retention_days`.
    pub deleted_item_retention_days: Option<u32>,
    /// `data_overhead_pct`.
    pub data_overhead_pct: Option<f64>,
    /// `disk_class`.
    pub disk_class: Option<String>,
    /// `disk_capacity_gb`.
    pub disk_capacity_gb: Option<f64>,
    /// `disk_iops`.
    pub disk_iops: Option<f64>,
    /// `db_raid`.
    pub db_raid: Option<String>,
    /// `log_raid`.
    pub log_raid: Option<String>,
    /// `peak_hour_log_pct`.
    pub peak_hour_log_pct: Option<f64>,
    /// `sites`.
    pub sites: Option<u32>,
    /// `lagged_copies`.
    pub lagged_copies: Option<u32>,
    /// `lag_days`.
    pub lag_days: Option<f64>,
    /// `archive_quota_mb`.
    pub archive_quota_mb: Option<u64>,
    /// `virtualized` (the file's; the flag is a switch).
    pub virtualized: Option<bool>,
    /// `multi_role` (the file's; the flag is a switch).
    pub multi_role: Option<bool>,
}

/// `size`'s flags.
#[derive(Debug, Clone, Default)]
pub struct SizeFlags {
    /// The deployment's flags.
    pub inputs: SizeInputs,
    /// `--virtualized`.
    pub virtualized: bool,
    /// `--multi-role`.
    pub multi_role: bool,
    /// `--input FILE`.
    pub input: Option<PathBuf>,
    /// `--example NAME`.
    pub example: Option<String>,
}

/// Where the values not given as flags came from.
#[derive(Debug, Clone, PartialEq)]
pub enum Base {
    /// Nothing: every required value must be a flag.
    None,
    /// `--input FILE`.
    File(PathBuf),
    /// A built-in example, named explicitly or chosen because nothing was given.
    Example {
        /// Its name.
        name: &'static str,
        /// Where its numbers come from.
        source: &'static str,
        /// Chosen because nothing was given (the binary says so).
        implicit: bool,
    },
}

/// `size`'s request: the sizing question and where its values came from.
#[derive(Debug, Clone)]
pub struct SizeRequest {
    /// The sizing question, validated as `mbx_sizing::size` takes it.
    pub input: SizingInput,
    /// The base the flags override.
    pub base: Base,
}

/// `size`'s request from its flags, the `--input` file or the example: merged, then checked.
pub fn resolve(args: &SizeFlags) -> Result<SizeRequest, AppError> {
    let (base, base_inputs) = load_base(args)?;
    let merged = merge(args, base_inputs);
    let input = to_sizing_input(&merged, args, &base)?;
    Ok(SizeRequest { input, base })
}

/// Sizes the request: `mbx_sizing::size`, an invalid value named where it came from.
pub fn size(args: &SizeFlags, req: &SizeRequest) -> Result<SizingReport, AppError> {
    mbx_sizing::size(&req.input).map_err(|e| {
        AppError::usage(format!(
            "invalid {}: {}",
            describe_field(e.field, args, &req.base),
            e.reason
        ))
    })
}

fn load_base(args: &SizeFlags) -> Result<(Base, SizeInputs), AppError> {
    if let Some(path) = &args.input {
        let text = mbx_config::input::read_bounded(
            path,
            mbx_config::input::CONFIG_LIMIT,
            "a sizing input file (TOML)",
        )
        .map_err(|e| AppError::usage(format!("--input: {e}")))?;
        let inputs: SizeInputs = toml::from_str(&text).map_err(|e| {
            AppError::usage(format!(
                "--input {} is not a valid sizing input file: {e}\nKeys are the flags' names in snake_case (see `mbxstress size --help`).",
                path.display()
            ))
        })?;
        if inputs.databases_per_server.is_some() && inputs.mailboxes_per_database.is_some() {
            return Err(AppError::usage(format!(
                "{}: give either `databases_per_server` or `mailboxes_per_database`, not both",
                path.display()
            )));
        }
        return Ok((Base::File(path.clone()), inputs));
    }
    let explicit = args.example.as_deref();
    let deployment_given = args.inputs.mailboxes.is_some()
        || args.inputs.messages_per_day.is_some()
        || args.inputs.servers.is_some();
    let name = match explicit {
        Some(name) => name,
        None if !deployment_given => "tintri",
        None => return Ok((Base::None, SizeInputs::default())),
    };
    let example = examples::by_name(name)
        .ok_or_else(|| AppError::usage(format!("unknown --example {name}")))?;
    Ok((
        Base::Example {
            name: example.name,
            source: example.source,
            implicit: explicit.is_none(),
        },
        from_sizing_input(&example.input),
    ))
}

/// Flags override the base; a layout flag replaces the base's layout entirely.
fn merge(args: &SizeFlags, mut base: SizeInputs) -> SizeInputs {
    let cli = &args.inputs;
    if cli.databases_per_server.is_some() || cli.mailboxes_per_database.is_some() {
        base.databases_per_server = None;
        base.mailboxes_per_database = None;
    }
    SizeInputs {
        method: cli.method.clone().or(base.method),
        mailboxes: cli.mailboxes.or(base.mailboxes),
        messages_per_day: cli.messages_per_day.or(base.messages_per_day),
        message_size_kb: cli.message_size_kb.or(base.message_size_kb),
        quota_mb: cli.quota_mb.or(base.quota_mb),
        copies: cli.copies.or(base.copies),
        servers: cli.servers.or(base.servers),
        databases_per_server: cli.databases_per_server.or(base.databases_per_server),
        mailboxes_per_database: cli.mailboxes_per_database.or(base.mailboxes_per_database),
        headroom_pct: cli.headroom_pct.or(base.headroom_pct),
        iops_per_mailbox: cli.iops_per_mailbox.or(base.iops_per_mailbox),
        specint_rate: cli.specint_rate.or(base.specint_rate),
        specint_cores: cli.specint_cores.or(base.specint_cores),
        cores_per_server: cli.cores_per_server.or(base.cores_per_server),
        cpu_mhz: cli.cpu_mhz.or(base.cpu_mhz),
        peak_cpu_pct: cli.peak_cpu_pct.or(base.peak_cpu_pct),
        client_access_cores: cli.client_access_cores.or(base.client_access_cores),
        log_retention_days: cli.log_retention_days.or(base.log_retention_days),
        deleted_item_retention_days: cli
            .deleted_item_retention_days
            .or(base.deleted_item_retention_days),
        data_overhead_pct: cli.data_overhead_pct.or(base.data_overhead_pct),
        disk_class: cli.disk_class.clone().or(base.disk_class),
        disk_capacity_gb: cli.disk_capacity_gb.or(base.disk_capacity_gb),
        disk_iops: cli.disk_iops.or(base.disk_iops),
        db_raid: cli.db_raid.clone().or(base.db_raid),
        log_raid: cli.log_raid.clone().or(base.log_raid),
        peak_hour_log_pct: cli.peak_hour_log_pct.or(base.peak_hour_log_pct),
        sites: cli.sites.or(base.sites),
        lagged_copies: cli.lagged_copies.or(base.lagged_copies),
        lag_days: cli.lag_days.or(base.lag_days),
        archive_quota_mb: cli.archive_quota_mb.or(base.archive_quota_mb),
        virtualized: Some(args.virtualized || base.virtualized.unwrap_or(false)),
        multi_role: Some(args.multi_role || base.multi_role.unwrap_or(false)),
    }
}

fn to_sizing_input(m: &SizeInputs, args: &SizeFlags, base: &Base) -> Result<SizingInput, AppError> {
    let method = match &m.method {
        None => Method::default(),
        Some(name) => Method::parse(name).ok_or_else(|| {
            let names: Vec<_> = Method::ALL.iter().map(|m| m.cli_name()).collect();
            AppError::usage(format!(
                "invalid {}: unknown method '{name}'; expected one of {}",
                describe_field("method", args, base),
                names.join(", ")
            ))
        })?,
    };
    let required = |field: &'static str, present: bool| -> Result<(), AppError> {
        if present {
            Ok(())
        } else {
            let flag = format!("--{}", field.replace('_', "-"));
            Err(AppError::usage(match base {
                Base::File(path) => format!(
                    "{flag} is required: give it as a flag or as `{field}` in {}",
                    path.display()
                ),
                _ => format!(
                    "{flag} is required (or start from a file with --input FILE or a built-in --example NAME)"
                ),
            }))
        }
    };
    required("mailboxes", m.mailboxes.is_some())?;
    required("messages_per_day", m.messages_per_day.is_some())?;
    required("servers", m.servers.is_some())?;
    let mut input = SizingInput::new(
        method,
        m.mailboxes.unwrap_or_default(),
        m.messages_per_day.unwrap_or_default(),
        m.servers.unwrap_or_default(),
    );
    if let Some(v) = m.message_size_kb {
        input.message_size_kb = v;
    }
    if let Some(v) = m.quota_mb {
        input.quota_mb = v;
    }
    if let Some(v) = m.copies {
        input.copies = v;
    }
    input.layout = match (m.databases_per_server, m.mailboxes_per_database) {
        (Some(d), _) => DatabaseLayout::PerServer(d),
        (None, Some(n)) => DatabaseLayout::MailboxesPerDatabase(n),
        (None, None) => DatabaseLayout::Auto,
    };
    if let Some(v) = m.headroom_pct {
        input.headroom_pct = v;
    }
    input.iops_per_mailbox = m.iops_per_mailbox;
    input.cpu.specint_rate = m.specint_rate;
    input.cpu.specint_cores = m.specint_cores;
    input.cpu.cores_per_server = m.cores_per_server;
    input.cpu.cpu_mhz = m.cpu_mhz;
    if let Some(v) = m.peak_cpu_pct {
        input.cpu.peak_cpu_pct = v;
    }
    if let Some(v) = m.client_access_cores {
        input.cpu.client_access_cores = v;
    }
    if let Some(v) = m.log_retention_days {
        input.log_retention_days = v;
    }
    if let Some(v) = m.deleted_item_retention_days {
        input.deleted_item_retention_days = v;
    }
    if let Some(v) = m.data_overhead_pct {
        input.data_overhead_pct = v;
    }
    input.virtualized = m.virtualized.unwrap_or(false);
    input.multi_role = m.multi_role.unwrap_or(false);
    if let Some(name) = &m.disk_class {
        input.storage.disk_class = DiskClass::parse(name).ok_or_else(|| {
            let names: Vec<_> = DiskClass::ALL.iter().map(|d| d.cli_name()).collect();
            AppError::usage(format!(
                "invalid {}: unknown disk class '{name}'; expected one of {}",
                describe_field("disk_class", args, base),
                names.join(", ")
            ))
        })?;
    }
    input.storage.disk_capacity_gb = m.disk_capacity_gb;
    input.storage.disk_iops = m.disk_iops;
    for (field, value, slot) in [
        ("db_raid", &m.db_raid, &mut input.storage.db_raid),
        ("log_raid", &m.log_raid, &mut input.storage.log_raid),
    ] {
        if let Some(name) = value {
            *slot = Raid::parse(name).ok_or_else(|| {
                AppError::usage(format!(
                    "invalid {}: unknown RAID level '{name}'; expected one of raid1, raid10, raid5, raid6, jbod",
                    describe_field(field, args, base)
                ))
            })?;
        }
    }
    if let Some(v) = m.peak_hour_log_pct {
        input.peak_hour_log_pct = v;
    }
    if let Some(v) = m.sites {
        input.sites = v;
    }
    if let Some(v) = m.lagged_copies {
        input.lagged_copies = v;
    }
    if let Some(v) = m.lag_days {
        input.lag_days = v;
    }
    if let Some(v) = m.archive_quota_mb {
        input.archive_quota_mb = v;
    }
    Ok(input)
}

fn from_sizing_input(i: &SizingInput) -> SizeInputs {
    let (dbs, mpd) = match i.layout {
        DatabaseLayout::Auto => (None, None),
        DatabaseLayout::PerServer(d) => (Some(d), None),
        DatabaseLayout::MailboxesPerDatabase(n) => (None, Some(n)),
    };
    SizeInputs {
        method: Some(i.method.cli_name().to_string()),
        mailboxes: Some(i.mailboxes),
        messages_per_day: Some(i.messages_per_day),
        message_size_kb: Some(i.message_size_kb),
        quota_mb: Some(i.quota_mb),
        copies: Some(i.copies),
        servers: Some(i.servers),
        databases_per_server: dbs,
        mailboxes_per_database: mpd,
        headroom_pct: Some(i.headroom_pct),
        iops_per_mailbox: i.iops_per_mailbox,
        specint_rate: i.cpu.specint_rate,
        specint_cores: i.cpu.specint_cores,
        cores_per_server: i.cpu.cores_per_server,
        cpu_mhz: i.cpu.cpu_mhz,
        peak_cpu_pct: Some(i.cpu.peak_cpu_pct),
        client_access_cores: Some(i.cpu.client_access_cores),
        log_retention_days: Some(i.log_retention_days),
        deleted_item_retention_days: Some(i.deleted_item_retention_days),
        data_overhead_pct: Some(i.data_overhead_pct),
        disk_class: Some(i.storage.disk_class.cli_name().to_string()),
        disk_capacity_gb: i.storage.disk_capacity_gb,
        disk_iops: i.storage.disk_iops,
        db_raid: Some(i.storage.db_raid.cli_name().to_string()),
        log_raid: Some(i.storage.log_raid.cli_name().to_string()),
        peak_hour_log_pct: Some(i.peak_hour_log_pct),
        sites: Some(i.sites),
        lagged_copies: Some(i.lagged_copies),
        lag_days: Some(i.lag_days),
        archive_quota_mb: Some(i.archive_quota_mb),
        virtualized: Some(i.virtualized),
        multi_role: Some(i.multi_role),
    }
}

/// Names a field the way the user gave it: the flag if it was a flag (or a default), the key and
/// file if it came from `--input`, the flag and example otherwise.
pub fn describe_field(field: &str, args: &SizeFlags, base: &Base) -> String {
    let flag = format!("--{}", field.replace('_', "-"));
    let given_as_flag = match field {
        "virtualized" => args.virtualized,
        "multi_role" => args.multi_role,
        _ => serde_json::to_value(&args.inputs)
            .ok()
            .and_then(|v| v.get(field).map(|x| !x.is_null()))
            .unwrap_or(false),
    };
    if given_as_flag {
        return flag;
    }
    match base {
        Base::File(path) => format!("`{field}` in {}", path.display()),
        Base::Example { name, .. } => format!("{flag} (set by example '{name}')"),
        Base::None => flag,
    }
}

/// Where the inputs came from, in words (the report's first line).
pub fn describe_base(base: &Base) -> String {
    match base {
        Base::None => "command-line flags".into(),
        Base::File(path) => format!("input file {} (flags override it)", path.display()),
        Base::Example { name, source, .. } => format!("built-in example '{name}': {source}"),
    }
}

/// The comments of the profile `--profile-out` writes: who wrote it, from what, for what.
pub fn profile_comments(report: &SizingReport, base: &Base) -> Vec<String> {
    let mut c = vec![
        format!(
            "written by mbxstress {} `size` with the {} ({})",
            env!("CARGO_PKG_VERSION"),
            report.method_label,
            report.method.id()
        ),
        format!("from {}", describe_base(base)),
        format!(
            "one server of {}: {} mailboxes, {} messages/day, target {:.1} IOPS ({:.4} IOPS/mailbox + {}% headroom, ESRP-rounded)",
            report.servers,
            report.mailboxes_total,
            report.input.messages_per_day,
            report.target_iops_per_server,
            report.iops_per_mailbox,
            report.headroom_pct
        ),
    ];
    let p = &report.profile;
    c.push(format!(
        "the storage test creates {} database(s) totalling {:.1} GiB",
        p.databases,
        p.mailboxes as f64 * p.mailbox_quota_mb as f64 / 1024.0
    ));
    c
}
