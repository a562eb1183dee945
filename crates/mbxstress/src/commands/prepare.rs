//! `mbxstress prepare`: create, resume or attach the database set.

use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Instant;

use anyhow::Context;
use mbx_store::{plan_paths, prepare, CreateParams, LockMode, StoreLock};
use serde::Serialize;

use super::engine::{engine_and_direct, or_default, DEFAULT_DB_DIR, DEFAULT_LOG_DIR};
use crate::cli::PrepareArgs;
use crate::exit::usage;
use crate::render::num;

#[derive(Serialize)]
struct DbSummary {
    index: u32,
    path: String,
    log_dir: String,
    action: &'static str,
    database_id: String,
    size_bytes: u64,
}

#[derive(Serialize)]
struct Summary {
    databases: Vec<DbSummary>,
    bytes_written: u64,
    elapsed_s: f64,
    mib_per_s: f64,
    engine: &'static str,
    direct: bool,
    compressibility_pct: u8,
}

/// (mailboxes, quota_mb, databases, data pages) from the flags or the profile.
fn sizing(args: &PrepareArgs) -> anyhow::Result<(u64, u64, u32, u64)> {
    if let Some(j) = super::jetstress::load(&args.jetstress)? {
        if j.config.sizing == mbx_config::Sizing::Capacity {
            return Err(usage(
                "the --jetstress-config file sizes the databases by capacity (DatabaseSizing Capacity): `mbxstress run --jetstress-config` measures the free space and creates them; to prepare databases of a chosen size give --database-size-mb without the file",
            ));
        }
        // The file's profile; --mailboxes, --quota-mb and --databases override it.
        let p = &j.config.profile;
        let dbs = args.databases.unwrap_or(p.databases);
        let mailboxes = args.mailboxes.unwrap_or(p.mailboxes);
        let quota = args.quota_mb.unwrap_or(p.mailbox_quota_mb);
        let pages = pages_or_error(mailboxes, quota, dbs, "--jetstress-config")?;
        return Ok((mailboxes, quota, dbs, pages));
    }
    if let Some(path) = &args.profile {
        let p = mbx_config::Profile::load(path)
            .with_context(|| format!("reading --profile {}", path.display()))?;
        let dbs = args.databases.unwrap_or(p.databases);
        let pages = pages_or_error(
            p.mailboxes,
            p.mailbox_quota_mb,
            dbs,
            &format!("--profile {}", path.display()),
        )?;
        return Ok((p.mailboxes, p.mailbox_quota_mb, dbs, pages));
    }
    let databases = args.databases.ok_or_else(|| {
        usage(
            "--databases is required (or give --profile FILE from `mbxstress size --profile-out`)",
        )
    })?;
    if databases == 0 || databases > 100 {
        return Err(usage(format!(
            "invalid --databases: must be 1..=100, got {databases}"
        )));
    }
    if let Some(mb) = args.database_size_mb {
        if mb == 0 {
            return Err(usage("invalid --database-size-mb: must be at least 1"));
        }
        let pages = pages_or_error(1, mb, 1, "--database-size-mb")?;
        return Ok((0, 0, databases, pages));
    }
    let mailboxes = args.mailboxes.ok_or_else(|| {
        usage("give --mailboxes and --quota-mb, or --database-size-mb, or --profile FILE")
    })?;
    let quota = args
        .quota_mb
        .ok_or_else(|| usage("--quota-mb is required with --mailboxes"))?;
    if mailboxes == 0 {
        return Err(usage("invalid --mailboxes: must be at least 1"));
    }
    if quota == 0 || quota > mbx_sizing::MAX_QUOTA_MB {
        return Err(usage(format!(
            "invalid --quota-mb: must be 1..={}, got {quota}",
            mbx_sizing::MAX_QUOTA_MB
        )));
    }
    let pages = pages_or_error(mailboxes, quota, databases, "--mailboxes x --quota-mb")?;
    Ok((mailboxes, quota, databases, pages))
}

/// Data pages per database, or a usage error naming what made the database too large.
fn pages_or_error(
    mailboxes: u64,
    quota_mb: u64,
    databases: u32,
    what: &str,
) -> anyhow::Result<u64> {
    CreateParams::data_pages_for(mailboxes, quota_mb, databases).ok_or_else(|| {
        usage(format!(
            "invalid {what}: each database would be larger than {} TiB (the most mbxstress creates); use fewer mailboxes, a smaller quota or more databases",
            mbx_store::create::MAX_DATABASE_BYTES >> 40
        ))
    })
}

pub fn run(args: PrepareArgs) -> anyhow::Result<ExitCode> {
    if !args.jetstress.map_path.is_empty() && args.jetstress.jetstress_config.is_none() {
        return Err(usage(
            "--map-path maps the paths of a --jetstress-config file: give the file too",
        ));
    }
    let (mailboxes, quota_mb, databases, data_pages) = sizing(&args)?;
    let (engine, direct) = engine_and_direct(&args.engine);
    // Paths: the flags, else the --jetstress-config file's instances, else the defaults.
    let from_file = super::jetstress::load(&args.jetstress)?.map(|j| j.config);
    let pick = |flag: &[PathBuf], file: Option<&Vec<PathBuf>>, default: &str| match file {
        Some(f) if flag.is_empty() => f.clone(),
        _ => or_default(flag, default),
    };
    let db_paths = pick(
        &args.paths.db_path,
        from_file.as_ref().map(|c| &c.db_paths),
        DEFAULT_DB_DIR,
    );
    let log_paths = pick(
        &args.paths.log_path,
        from_file.as_ref().map(|c| &c.log_paths),
        DEFAULT_LOG_DIR,
    );
    let specs = plan_paths(&db_paths, &log_paths, databases)?;
    let params = CreateParams {
        data_pages,
        mailboxes,
        quota_mb,
        databases,
        compressibility_pct: args.compressibility_pct.unwrap_or(0),
        engine,
        direct,
        force: args.force,
        allow_device: args.allow_device,
        queue_depth: args.queue_depth as usize,
        tool_version: env!("CARGO_PKG_VERSION").to_string(),
    };
    let cancel = crate::interrupt::install();
    let _lock = StoreLock::acquire(&specs, LockMode::Exclusive)?;
    let quiet = args.json;
    if !quiet {
        errln!(
            "Preparing {databases} database(s) of {} MiB each ({}, {}, compressibility {}%)",
            num(params.file_bytes() as f64 / (1 << 20) as f64, 1),
            engine.name(),
            if direct {
                mbx_io::platform::DIRECT_IO_NAME
            } else {
                "buffered"
            },
            params.compressibility_pct
        );
    }
    let started = Instant::now();
    let progress = crate::progress::CreateProgress::new(specs.len(), quiet, true);
    let result = prepare(&specs, &params, &|e| progress.on_event(e), &cancel, None);
    progress.finish();
    let prepared = result?;
    let elapsed = started.elapsed().as_secs_f64();
    let written = progress.planned_bytes();
    let actions: Vec<&'static str> = {
        let mut a = vec![""; specs.len()];
        for (index, action, _) in progress.actions() {
            if let Some(slot) = a.get_mut(index as usize) {
                *slot = action;
            }
        }
        a
    };
    let summary = Summary {
        databases: prepared
            .iter()
            .map(|p| DbSummary {
                index: p.spec.index + 1,
                path: p.spec.path.display().to_string(),
                log_dir: p.spec.log_dir.display().to_string(),
                action: actions.get(p.spec.index as usize).copied().unwrap_or(""),
                database_id: format!("{:016x}", p.header.database_id),
                size_bytes: p.header.file_bytes(),
            })
            .collect(),
        bytes_written: written,
        elapsed_s: elapsed,
        mib_per_s: if elapsed > 0.0 {
            written as f64 / elapsed / (1 << 20) as f64
        } else {
            0.0
        },
        engine: engine.name(),
        direct,
        compressibility_pct: params.compressibility_pct,
    };
    if args.json {
        let mut out = std::io::stdout().lock();
        serde_json::to_writer_pretty(&mut out, &summary).context("writing JSON to stdout")?;
        use std::io::Write;
        writeln!(out).context("writing to stdout")?;
    } else {
        outln!(
            "Ready: {} database(s), {} MiB written in {:.1} s ({} MiB/s).",
            summary.databases.len(),
            num(written as f64 / (1 << 20) as f64, 0),
            elapsed,
            num(summary.mib_per_s, 0)
        )?;
        for d in &summary.databases {
            outln!("  {} ({}; logs in {})", d.path, d.action, d.log_dir)?;
        }
    }
    Ok(ExitCode::SUCCESS)
}
