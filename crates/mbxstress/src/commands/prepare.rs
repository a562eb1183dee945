//! `mbxstress prepare`: create, resume or attach the database set. The flags are the
//! application layer's layer (`mbx_app::prepare`: sizes, files and paths resolved there); this
//! file creates the databases and renders.

use std::process::ExitCode;
use std::time::Instant;

use anyhow::Context;
use mbx_app::prepare::{PrepareFlags, PrepareRequest};
use mbx_store::{prepare, LockMode, StoreLock};
use serde::Serialize;

use super::engine::engine_and_direct;
use crate::cli::PrepareArgs;
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

pub fn run(args: PrepareArgs) -> anyhow::Result<ExitCode> {
    let (engine, direct) = engine_and_direct(&args.engine);
    let flags = PrepareFlags {
        profile: args.profile.clone(),
        mailboxes: args.mailboxes,
        quota_mb: args.quota_mb,
        databases: args.databases,
        database_size_mb: args.database_size_mb,
        db_path: args.paths.db_path.clone(),
        log_path: args.paths.log_path.clone(),
        jetstress_config: args.jetstress.jetstress_config.clone(),
        map_path: args.jetstress.map_path.clone(),
        compressibility_pct: args.compressibility_pct,
        engine,
        direct,
        queue_depth: args.queue_depth,
        force: args.force,
        allow_device: args.allow_device,
    };
    let PrepareRequest { specs, params } =
        mbx_app::prepare::resolve(&flags).map_err(super::shared::into_anyhow)?;
    let databases = params.databases;
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
