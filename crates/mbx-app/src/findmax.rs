//! `find-max`: the largest mailbox count (at the profile's IOPS per mailbox) this storage
//! carries within every threshold, by a ramp and a bisection of short measured steps on the
//! same databases. Writes find-max.json, find-max.html and test.log.

use std::path::PathBuf;
use std::sync::atomic::AtomicBool;

use mbx_config::TestKind;
use mbx_engine::findmax::FindMaxSpec;
use mbx_store::{plan_paths, LockMode, StoreLock};

use crate::config::Layers;
use crate::error::IoContext;
use crate::event::{Event, EventSink, FindMaxStart, Notice};
use crate::results_folder::results_dir;
use crate::run::{create_params, RunObserver};
use crate::AppError;

/// What to search.
pub struct FindMaxRequest<'a> {
    /// The configuration's layers, read (the profile is where the ramp starts).
    pub layers: &'a Layers,
    /// Most steps.
    pub max_steps: u32,
    /// Stop when a passing and a failing count are within this percent of each other.
    pub resolution_pct: f64,
    /// The results folder (new or empty); `None`: a time-stamped one.
    pub out: Option<PathBuf>,
    /// Overwrite files that are not mbxstress databases.
    pub force: bool,
    /// Allow unused block devices as database paths.
    pub allow_device: bool,
    /// Set to stop the search.
    pub cancel: &'a AtomicBool,
}

/// The search's outcome.
#[derive(Debug, Clone)]
pub struct Found {
    /// The search (find-max.json).
    pub find_max: mbx_result::FindMax,
    /// find-max.json.
    pub path: PathBuf,
}

/// Runs find-max (see the module documentation).
pub fn run(req: &FindMaxRequest<'_>, sink: &mut dyn EventSink) -> Result<Found, AppError> {
    let cfg = req.layers.resolve_for(TestKind::Performance)?;
    if cfg.sizing == mbx_config::Sizing::Capacity {
        return Err(AppError::usage(
            "find-max answers in mailboxes of a profile; the disk subsystem throughput test (--capacity-pct, sizing = \"capacity\") finds the maximum IOPS itself: use `mbxstress run --capacity-pct N --throughput-pct P`",
        ));
    }
    let spec = FindMaxSpec {
        max_steps: req.max_steps as usize,
        resolution: req.resolution_pct / 100.0,
        ..FindMaxSpec::default()
    };
    let p = &cfg.profile;
    let data_pages = mbx_store::create::CreateParams::data_pages_for(
        p.mailboxes,
        p.mailbox_quota_mb,
        p.databases,
    )
    .ok_or_else(|| {
        AppError::usage(
            "invalid --mailboxes x --quota-mb / --databases: the databases would be too large",
        )
    })?;
    let specs = plan_paths(&cfg.db_paths, &cfg.log_paths, p.databases)?;
    let dir = results_dir(req.out.as_deref())?;
    let lock = StoreLock::acquire(&specs, LockMode::Exclusive)?;
    fs_err::create_dir_all(&dir).io_context("creating the results folder")?;
    sink.notice(&Notice::FindMaxStart(&FindMaxStart {
        config: cfg.clone(),
        data_pages,
        max_steps: req.max_steps,
        resolution_pct: req.resolution_pct,
        dir: dir.clone(),
    }))
    .map_err(AppError::Output)?;
    let mut observer = RunObserver::new(&dir, sink)?;
    let create = create_params(&cfg, data_pages, req.force, req.allow_device);
    let found =
        mbx_engine::execute_find_max(&cfg, spec, &specs, &create, &mut observer, req.cancel);
    observer.notice(&Notice::EngineDone);
    let errors = std::mem::take(&mut observer.errors);
    drop(observer);
    drop(lock);
    for e in errors {
        let _ = sink.notice(&Notice::Warning(e));
    }
    let found = found?;
    let f = found.find_max;
    // Through the exporters: each file written atomically, and a find-max.html that mbxstress
    // did not write is never replaced.
    let found_as = |e: Box<dyn mbx_report::Exporter<mbx_result::FindMax>>| {
        mbx_report::export::export(&f, &dir, &[e])
    };
    let json = dir.join("find-max.json");
    found_as(Box::new(mbx_report::export::FindMaxJsonExporter)).map_err(|source| {
        AppError::Report {
            context: "writing find-max.json".into(),
            source,
        }
    })?;
    let html = dir.join("find-max.html");
    if let Err(e) = found_as(Box::new(mbx_report::export::FindMaxHtmlExporter)) {
        let _ = sink.notice(&Notice::Warning(format!(
            "could not write the HTML report: {e}"
        )));
    }
    sink.event(&Event::FindMax {
        path: json.clone(),
        mailboxes: f.mailboxes,
        iops: f.iops,
        end: f.end.clone(),
    });
    sink.notice(&Notice::FindMaxEnd {
        find_max: &f,
        json: &json,
        html: &html,
    })
    .map_err(AppError::Output)?;
    Ok(Found {
        find_max: f,
        path: json,
    })
}
