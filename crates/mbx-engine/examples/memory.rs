//! Peak resident memory of the engine on databases of any size, without writing them first:
//! sparse files (holes read as zeros, which verification counts as bad pages; that is fine here)
//! driven by the real I/O backend. Used by bench/memory.sh.
//!
//! Usage: memory DIR DATABASES SIZE_GIB DURATION_S TARGET_IOPS

use std::path::PathBuf;
use std::sync::atomic::AtomicBool;

use mbx_config::RunConfig;
use mbx_engine::{run_plan, InstanceSpec, LogStart, Observer, Plan, RunEvent};
use mbx_io::{open_queue, Files};

struct Quiet;
impl Observer for Quiet {
    fn on_event(&mut self, e: RunEvent<'_>) {
        if let RunEvent::Log(l) = e {
            if l.starts_with("Engine bookkeeping") {
                println!("{l}");
            }
        }
    }
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let args: Vec<String> = std::env::args().collect();
    if args.len() != 6 {
        return Err("usage: memory DIR DATABASES SIZE_GIB DURATION_S TARGET_IOPS".into());
    }
    let dir = PathBuf::from(&args[1]);
    let n: u32 = args[2].parse()?;
    let gib: u64 = args[3].parse()?;
    let duration: f64 = args[4].parse()?;
    let target: f64 = args[5].parse()?;
    let page = mbx_store::page::PAGE_SIZE as u64;
    let data_pages = gib * (1 << 30) / page;
    let mut cfg = RunConfig::default();
    cfg.profile.databases = n;
    cfg.profile.mailboxes = 1000 * u64::from(n);
    cfg.profile.iops_per_mailbox = target / cfg.profile.mailboxes as f64;
    cfg.duration_s = duration;
    cfg.cache.max_dirty_age_s = 5.0;
    let mut specs = Vec::new();
    for i in 0..n {
        let db_path = dir.join(format!("sparse{i}.edb"));
        let f = std::fs::File::create(&db_path)?;
        f.set_len((mbx_store::header::HEADER_PAGES + data_pages) * page)?;
        let log_dir = dir.join(format!("logs{i}"));
        std::fs::create_dir_all(&log_dir)?;
        specs.push(InstanceSpec {
            name: format!("Instance.{}", i + 1),
            db_path,
            log_dir,
            database_id: 1000 + u64::from(i),
            data_pages,
            log: LogStart {
                next_generation: 1,
                ..LogStart::default()
            },
        });
    }
    let q = open_queue(
        mbx_engine::engine_kind(cfg.engine),
        Files::new(Vec::new()),
        mbx_engine::queue_depth(&cfg, specs.len()),
    )?;
    let r = run_plan(
        &cfg,
        &Plan::performance(&cfg),
        specs,
        q,
        &mut Quiet,
        &AtomicBool::new(false),
    )?;
    println!(
        "databases {n} x {gib} GiB ({} data pages each), measured {:.0} s at {:.0} IOPS: peak RSS {:.1} MiB",
        data_pages, r.test.duration_s, r.achieved_iops, r.host.process_peak_rss_mb
    );
    Ok(())
}
