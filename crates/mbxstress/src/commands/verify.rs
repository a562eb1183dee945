//! `mbxstress verify`: the verification primitive over every database found.

use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::atomic::{AtomicU64, Ordering};

use anyhow::Context;
use mbx_store::{verify_database, LockMode, StoreLock, VerifyOptions};

/// Largest --read-size.
const MAX_READ_SIZE: u64 = 64 << 20;

use super::engine::{engine_and_direct, or_default, DEFAULT_DB_DIR};
use crate::cli::VerifyArgs;
use crate::exit::usage;
use crate::render::num;

/// Database files named by the paths: files as given, directories searched for *.edb.
fn database_files(paths: &[PathBuf]) -> anyhow::Result<Vec<PathBuf>> {
    let mut out = Vec::new();
    for p in paths {
        let meta = std::fs::metadata(p).map_err(|e| {
            usage(format!(
                "cannot read --db-path {}: {}",
                p.display(),
                if e.kind() == std::io::ErrorKind::NotFound {
                    "no such file or directory (create databases with `mbxstress prepare`)".into()
                } else {
                    e.to_string()
                }
            ))
        })?;
        if meta.is_dir() {
            let mut found: Vec<PathBuf> = fs_err::read_dir(p)?
                .filter_map(|e| e.ok().map(|e| e.path()))
                .filter(|f| f.extension().is_some_and(|x| x == "edb"))
                .collect();
            found.sort();
            if found.is_empty() {
                return Err(usage(format!(
                    "no database files (*.edb) in {}; give the files with --db-path",
                    p.display()
                )));
            }
            out.extend(found);
        } else {
            out.push(p.clone());
        }
    }
    Ok(out)
}

pub fn run(args: VerifyArgs) -> anyhow::Result<ExitCode> {
    let files = database_files(&or_default(&args.db_path, DEFAULT_DB_DIR))?;
    let (engine, direct) = engine_and_direct(&args.engine);
    let read_bytes = args.read_size.unwrap_or(1 << 20);
    // Buffers are read_size x queue depth (4): 64 MiB keeps them at 256 MiB.
    if read_bytes == 0 || !read_bytes.is_multiple_of(32768) || read_bytes > MAX_READ_SIZE {
        return Err(usage(format!(
            "invalid --read-size: must be a multiple of 32k from 32k to 64M, got {read_bytes} bytes"
        )));
    }
    // Readers share the databases with each other, never with a command that writes them.
    let _lock = StoreLock::acquire_files(&files, LockMode::Shared)?;
    let opts = VerifyOptions {
        engine,
        direct,
        read_bytes: read_bytes as usize,
        queue_depth: 4,
    };
    let cancel = crate::interrupt::install();
    let total: u64 = files
        .iter()
        .map(|f| std::fs::metadata(f).map(|m| m.len()).unwrap_or(0))
        .sum();
    let bar = crate::progress::bytes_bar(total, "verifying", args.json);
    let base = AtomicU64::new(0);
    let mut reports = Vec::new();
    for f in &files {
        let r = verify_database(f, &opts, &cancel, &|b| {
            bar.set_position(base.load(Ordering::Relaxed) + b)
        })
        .with_context(|| format!("verifying {}", f.display()))?;
        base.fetch_add(r.bytes, Ordering::Relaxed);
        reports.push(r);
        if cancel.load(Ordering::Relaxed) {
            break;
        }
    }
    bar.finish_and_clear();
    let interrupted = cancel.load(Ordering::Relaxed);
    if args.json {
        let mut out = std::io::stdout().lock();
        serde_json::to_writer_pretty(
            &mut out,
            &serde_json::json!({ "checksum": reports, "interrupted": interrupted }),
        )
        .context("writing JSON to stdout")?;
        use std::io::Write;
        writeln!(out).context("writing to stdout")?;
    } else {
        outln!(
            "{:<50} {:>10} {:>6} {:>12} {:>12} {:>6} {:>9} {:>8}",
            "database",
            "seen",
            "bad",
            "correctable",
            "wrong page#",
            "stale",
            "MiB/s",
            "seconds"
        )?;
        for r in &reports {
            outln!(
                "{:<50} {:>10} {:>6} {:>12} {:>12} {:>6} {:>9} {:>8.1}",
                r.database_path.display(),
                num(r.seen_pages as f64, 0),
                r.bad_pages,
                r.correctable_pages,
                r.wrong_page_number_pages,
                if r.stale_check == "journal" {
                    r.stale_pages.to_string()
                } else {
                    "-".into()
                },
                num(r.bytes as f64 / (1 << 20) as f64 / r.elapsed_s.max(1e-9), 0),
                r.elapsed_s
            )?;
            if r.trailing_bytes > 0 {
                outln!(
                    "    {} bytes follow the database's last page (appended by something else)",
                    num(r.trailing_bytes as f64, 0)
                )?;
            }
            if r.stale_check != "journal" {
                outln!("    stale pages across runs not checked: {}", r.stale_check)?;
            }
            for p in &r.problems {
                outln!(
                    "    page {} (offset {}): {}: {}",
                    p.page,
                    p.offset,
                    p.kind,
                    p.reason
                )?;
            }
        }
    }
    if interrupted {
        errln!(
            "interrupted: {} of {} databases verified",
            reports.len(),
            files.len()
        );
        return Ok(ExitCode::from(crate::interrupt::INTERRUPTED));
    }
    let clean = reports.iter().all(|r| r.is_clean());
    if !clean && !args.json {
        errln!("verification FAILED: some pages are not good (see above)");
    }
    Ok(if clean {
        ExitCode::SUCCESS
    } else {
        ExitCode::from(1)
    })
}
