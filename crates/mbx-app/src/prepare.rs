//! `mbxstress prepare`'s one resolution path: the flags ([`PrepareFlags`]: the binary copies
//! its clap arguments into them), a `--profile` or `--jetstress-config` file (each read once)
//! and the defaults become the databases to create ([`PrepareRequest`]), every value checked.
//!
//! Precedence: for the sizes, a flag, then the file, then nothing (required); for the paths,
//! the flags, then the Jetstress file's instances, then the defaults.

use std::path::PathBuf;

use mbx_io::EngineKind;
use mbx_store::{CreateParams, DatabaseSpec};

use crate::AppError;

/// Default directory of the databases.
pub const DEFAULT_DB_DIR: &str = "mbxstress-data/databases";
/// Default directory of the logs.
pub const DEFAULT_LOG_DIR: &str = "mbxstress-data/logs";

/// `prepare`'s flags.
#[derive(Debug, Clone)]
pub struct PrepareFlags {
    /// `--profile FILE`.
    pub profile: Option<PathBuf>,
    /// `--mailboxes N`.
    pub mailboxes: Option<u64>,
    /// `--quota-mb MB`.
    pub quota_mb: Option<u64>,
    /// `--databases N`.
    pub databases: Option<u32>,
    /// `--database-size-mb MB`.
    pub database_size_mb: Option<u64>,
    /// `--db-path`, repeated.
    pub db_path: Vec<PathBuf>,
    /// `--log-path`, repeated.
    pub log_path: Vec<PathBuf>,
    /// `--jetstress-config FILE`.
    pub jetstress_config: Option<PathBuf>,
    /// `--map-path FROM=TO`, repeated.
    pub map_path: Vec<String>,
    /// `--compressibility-pct`.
    pub compressibility_pct: Option<u8>,
    /// The I/O engine (`--engine`, or the platform's).
    pub engine: EngineKind,
    /// O_DIRECT (not `--buffered`).
    pub direct: bool,
    /// `--queue-depth`.
    pub queue_depth: u32,
    /// `--force`.
    pub force: bool,
    /// `--allow-device`.
    pub allow_device: bool,
}

/// The databases to create, resolved.
#[derive(Debug, Clone)]
pub struct PrepareRequest {
    /// Where each database and its logs go.
    pub specs: Vec<DatabaseSpec>,
    /// How they are created.
    pub params: CreateParams,
}

/// Data pages per database, or a usage error naming what made the database too large.
fn pages_or_error(
    mailboxes: u64,
    quota_mb: u64,
    databases: u32,
    what: &str,
) -> Result<u64, AppError> {
    CreateParams::data_pages_for(mailboxes, quota_mb, databases).ok_or_else(|| {
        AppError::usage(format!(
            "invalid {what}: each database would be larger than {} TiB (the most mbxstress creates); use fewer mailboxes, a smaller quota or more databases",
            mbx_store::create::MAX_DATABASE_BYTES >> 40
        ))
    })
}

/// (mailboxes, quota_mb, databases, data pages) from the flags, the Jetstress configuration's
/// profile or the `--profile` file.
fn sizing(
    a: &PrepareFlags,
    jetstress: Option<&mbx_config::RunConfig>,
) -> Result<(u64, u64, u32, u64), AppError> {
    if let Some(j) = jetstress {
        if j.sizing == mbx_config::Sizing::Capacity {
            return Err(AppError::usage(
                "the --jetstress-config file sizes the databases by capacity (DatabaseSizing Capacity): `mbxstress run --jetstress-config` measures the free space and creates them; to prepare databases of a chosen size give --database-size-mb without the file",
            ));
        }
        // The file's profile; --mailboxes, --quota-mb and --databases override it.
        let p = &j.profile;
        let dbs = a.databases.unwrap_or(p.databases);
        let mailboxes = a.mailboxes.unwrap_or(p.mailboxes);
        let quota = a.quota_mb.unwrap_or(p.mailbox_quota_mb);
        let pages = pages_or_error(mailboxes, quota, dbs, "--jetstress-config")?;
        return Ok((mailboxes, quota, dbs, pages));
    }
    if let Some(path) = &a.profile {
        let p = mbx_config::Profile::load(path).map_err(|source| AppError::Config {
            context: format!("reading --profile {}", path.display()),
            source,
        })?;
        let dbs = a.databases.unwrap_or(p.databases);
        let pages = pages_or_error(
            p.mailboxes,
            p.mailbox_quota_mb,
            dbs,
            &format!("--profile {}", path.display()),
        )?;
        return Ok((p.mailboxes, p.mailbox_quota_mb, dbs, pages));
    }
    let databases = a.databases.ok_or_else(|| {
        AppError::usage(
            "--databases is required (or give --profile FILE from `mbxstress size --profile-out`)",
        )
    })?;
    if databases == 0 || databases > 100 {
        return Err(AppError::usage(format!(
            "invalid --databases: must be 1..=100, got {databases}"
        )));
    }
    if let Some(mb) = a.database_size_mb {
        if mb == 0 {
            return Err(AppError::usage(
                "invalid --database-size-mb: must be at least 1",
            ));
        }
        let pages = pages_or_error(1, mb, 1, "--database-size-mb")?;
        return Ok((0, 0, databases, pages));
    }
    let mailboxes = a.mailboxes.ok_or_else(|| {
        AppError::usage("give --mailboxes and --quota-mb, or --database-size-mb, or --profile FILE")
    })?;
    let quota = a
        .quota_mb
        .ok_or_else(|| AppError::usage("--quota-mb is required with --mailboxes"))?;
    if mailboxes == 0 {
        return Err(AppError::usage("invalid --mailboxes: must be at least 1"));
    }
    if quota == 0 || quota > mbx_config::MAX_QUOTA_MB {
        return Err(AppError::usage(format!(
            "invalid --quota-mb: must be 1..={}, got {quota}",
            mbx_config::MAX_QUOTA_MB
        )));
    }
    let pages = pages_or_error(mailboxes, quota, databases, "--mailboxes x --quota-mb")?;
    Ok((mailboxes, quota, databases, pages))
}

/// `prepare`'s request: the sizes, the paths, the creation parameters.
pub fn resolve(a: &PrepareFlags) -> Result<PrepareRequest, AppError> {
    if !a.map_path.is_empty() && a.jetstress_config.is_none() {
        return Err(AppError::usage(
            "--map-path maps the paths of a --jetstress-config file: give the file too",
        ));
    }
    let jetstress = match &a.jetstress_config {
        Some(path) => Some(crate::config::load_jetstress(path, &a.map_path)?.config),
        None => None,
    };
    let (mailboxes, quota_mb, databases, data_pages) = sizing(a, jetstress.as_ref())?;
    // Paths: the flags, else the --jetstress-config file's instances, else the defaults.
    let pick = |flag: &[PathBuf], file: Option<&Vec<PathBuf>>, default: &str| match file {
        Some(f) if flag.is_empty() => f.clone(),
        _ if flag.is_empty() => vec![PathBuf::from(default)],
        _ => flag.to_vec(),
    };
    let db_paths = pick(
        &a.db_path,
        jetstress.as_ref().map(|c| &c.db_paths),
        DEFAULT_DB_DIR,
    );
    let log_paths = pick(
        &a.log_path,
        jetstress.as_ref().map(|c| &c.log_paths),
        DEFAULT_LOG_DIR,
    );
    let specs = mbx_store::plan_paths(&db_paths, &log_paths, databases)?;
    Ok(PrepareRequest {
        specs,
        params: CreateParams {
            data_pages,
            mailboxes,
            quota_mb,
            databases,
            compressibility_pct: a.compressibility_pct.unwrap_or(0),
            engine: a.engine,
            direct: a.direct,
            force: a.force,
            allow_device: a.allow_device,
            queue_depth: a.queue_depth as usize,
            tool_version: env!("CARGO_PKG_VERSION").to_string(),
        },
    })
}
