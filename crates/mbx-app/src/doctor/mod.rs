//! `mbxstress doctor` as a library: preflight checks of the storage stack and the host for a
//! planned test, in seconds, before a 2-hour test finds the same problem. A run performs the
//! fast subset first ([`ProbePlan::FAST`]) and records it in result.json (`doctor`); a finding
//! never changes a verdict.
//!
//! Facts come from `mbx_io::probe` (sysfs, mountinfo, a write-through probe; "unknown" off
//! Linux); the judgements ([`checks`]) are pure functions of those facts, unit-tested with
//! made-up facts. The report type is `mbx_result`'s (result.json embeds it), re-exported here.

use std::path::{Path, PathBuf};
use std::time::Duration;

use mbx_config::RunConfig;
use mbx_io::probe::{self, DeviceFacts, DeviceKind, FsFacts};
use mbx_store::{CreateParams, DatabaseSpec};

pub use mbx_result::{CheckName, DoctorCheck, DoctorReport, DoctorStatus, DOCTOR_SCHEMA};

use crate::event::{Event, EventSink};

pub mod checks;

use checks::{
    alignment_check, capacity_check, check, clock_check, cpu_check, data_reduction_check,
    direct_io_check, discard_check, filesystem_check, memory_check, probe_check, queue_depth_check,
    virtualization_check, write_cache_check,
};
pub use checks::{QueueNeed, EARLY_ACK_US};

/// How long and how much the write-through probe writes.
#[derive(Debug, Clone, Copy)]
pub struct ProbePlan {
    /// Writes at most.
    pub writes: u32,
    /// Time budget.
    pub budget: Duration,
    /// True for the subset `run` performs.
    pub fast: bool,
}

impl ProbePlan {
    /// What `run` does first: at most about a second of probe writes, 64 of them (a median
    /// from 64 tells early acknowledgement, tens of microseconds, from media writes; `doctor`'s
    /// default of 200 gives a steadier p99). Every run pays for it in time and bytes written.
    pub const FAST: ProbePlan = ProbePlan {
        writes: 64,
        budget: Duration::from_secs(1),
        fast: true,
    };
}

/// What `doctor` inspects: the planned test and how long the write-through probe may take.
#[derive(Debug, Clone)]
pub struct DoctorRequest {
    /// The resolved run configuration (paths, sizes, load).
    pub config: RunConfig,
    /// How the databases would be created (their size decides capacity and memory).
    pub create: CreateParams,
    /// The write-through probe's budget.
    pub probe: ProbePlan,
}

impl ProbePlan {
    /// `mbxstress doctor`'s probe: `writes` writes at most, within ten seconds.
    pub fn full(writes: u32) -> ProbePlan {
        ProbePlan {
            writes,
            budget: Duration::from_secs(10),
            fast: false,
        }
    }
}

/// Errors before any check could run.
#[derive(Debug, thiserror::Error)]
pub enum DoctorError {
    /// The database and log paths do not give a place for every database.
    #[error(transparent)]
    Plan(#[from] mbx_store::StoreError),
}

/// `mbxstress doctor`: every check for the test `req` describes, reported as one
/// [`Event::Doctor`] and returned.
pub fn run(req: DoctorRequest, sink: &mut dyn EventSink) -> Result<DoctorReport, DoctorError> {
    let specs = mbx_store::plan_paths(
        &req.config.db_paths,
        &req.config.log_paths,
        req.config.profile.databases,
    )?;
    let report = inspect(&req.config, &specs, &req.create, req.probe);
    sink.event(&Event::Doctor {
        doctor: report.clone(),
    });
    Ok(report)
}

/// One location doctor inspects: a device (or filesystem) holding databases and/or logs.
struct Location {
    /// A path on it (existing: the nearest existing ancestor of the planned path).
    path: PathBuf,
    /// Its `major:minor`, or the path when the device cannot be read.
    key: String,
    device: Option<DeviceFacts>,
    fs: Option<FsFacts>,
    /// Databases on it.
    databases: usize,
    /// Log folders on it.
    logs: usize,
    /// A folder on it where the probe may write its temporary file (None: only block devices).
    probe_dir: Option<PathBuf>,
}

impl Location {
    fn subject(&self) -> String {
        let dev = self.device.as_ref().and_then(|d| d.name.clone());
        match dev {
            Some(d) => format!("{} ({d})", self.path.display()),
            None => self.path.display().to_string(),
        }
    }

    /// tmpfs, ramfs or a RAM disk: whatever is measured here is memory.
    fn is_ram(&self) -> bool {
        let fs_ram = self
            .fs
            .as_ref()
            .and_then(|f| f.fs_type.as_deref())
            .is_some_and(|t| matches!(t, "tmpfs" | "ramfs"));
        fs_ram
            || self
                .device
                .as_ref()
                .is_some_and(|d| d.kind == DeviceKind::Ram)
    }
}

fn locations(specs: &[DatabaseSpec]) -> Vec<Location> {
    let mut out: Vec<Location> = Vec::new();
    let mut add = |planned: &Path, is_db: bool| {
        let is_dev = mbx_io::platform::is_block_device(planned).unwrap_or(false);
        let anchor = if is_dev {
            planned.to_path_buf()
        } else if is_db {
            probe::existing_ancestor(planned.parent().unwrap_or(planned))
        } else {
            probe::existing_ancestor(planned)
        };
        let device = probe::device_facts(&anchor).ok();
        let key = device
            .as_ref()
            .map(|d| d.dev.clone())
            .filter(|d| !d.is_empty())
            .unwrap_or_else(|| anchor.display().to_string());
        let loc = match out.iter_mut().position(|l| l.key == key) {
            Some(i) => &mut out[i],
            None => {
                out.push(Location {
                    fs: if is_dev {
                        None
                    } else {
                        probe::fs_facts(&anchor).ok()
                    },
                    path: anchor.clone(),
                    key,
                    device,
                    databases: 0,
                    logs: 0,
                    probe_dir: None,
                });
                let last = out.len() - 1;
                &mut out[last]
            }
        };
        if is_db {
            loc.databases += 1;
        } else {
            loc.logs += 1;
        }
        // Logs first: the probe measures log-sized writes where the logs will be.
        if !is_dev && (loc.probe_dir.is_none() || (!is_db && loc.logs == 1)) {
            loc.probe_dir = Some(if anchor.is_dir() {
                anchor.clone()
            } else {
                anchor
                    .parent()
                    .map(Path::to_path_buf)
                    .unwrap_or(anchor.clone())
            });
        }
    };
    for s in specs {
        add(&s.log_dir, false);
    }
    for s in specs {
        add(&s.path, true);
    }
    // Every database and every log folder is on exactly one location.
    debug_assert_eq!(out.iter().map(|l| l.databases).sum::<usize>(), specs.len());
    debug_assert_eq!(out.iter().map(|l| l.logs).sum::<usize>(), specs.len());
    out
}

/// Every check for the test `cfg` on `specs`.
pub fn inspect(
    cfg: &RunConfig,
    specs: &[DatabaseSpec],
    create: &CreateParams,
    plan: ProbePlan,
) -> DoctorReport {
    let locs = locations(specs);
    let host = probe::host_facts();
    let mut checks = Vec::new();
    let dbs = specs.len().max(1);
    let need = QueueNeed::of(cfg, dbs);
    for loc in &locs {
        let subject = loc.subject();
        checks.push(filesystem_check(
            &subject,
            loc.fs.as_ref(),
            loc.device.as_ref(),
        ));
        checks.push(write_cache_check(
            &subject,
            loc.device.as_ref(),
            loc.is_ram(),
        ));
        let probed = loc
            .probe_dir
            .as_ref()
            .map(|d| probe::write_through_probe(d, plan.writes, plan.budget));
        checks.push(probe_check(&subject, probed.as_ref(), loc.is_ram()));
        checks.push(direct_io_check(
            &subject,
            probed.as_ref().and_then(|r| r.as_ref().ok()),
            loc.is_ram(),
            cfg.direct,
        ));
        checks.push(queue_depth_check(
            &subject,
            loc.device.as_ref(),
            &need.share(loc.databases, dbs),
            loc.logs,
        ));
        checks.push(alignment_check(&subject, loc.device.as_ref()));
        checks.push(discard_check(
            &subject,
            loc.device.as_ref(),
            loc.fs.as_ref(),
        ));
    }
    // Seven checks for each location, in the same order for each.
    debug_assert_eq!(checks.len(), 7 * locs.len());
    checks.push(layout_check(specs, cfg.profile.copies_per_database));
    checks.extend(capacity_checks(specs, create));
    checks.push(data_reduction_check(cfg.compressibility_pct));
    let drivers: Vec<(String, Vec<String>)> = locs
        .iter()
        .filter_map(|l| {
            let d = l.device.as_ref()?;
            Some((d.disk.clone()?, d.drivers.clone()))
        })
        .collect();
    checks.push(virtualization_check(&host, &drivers));
    checks.push(cpu_check(&host, cfg, dbs));
    checks.push(clock_check(&host));
    checks.push(memory_check(&host, cfg, create, dbs));
    DoctorReport {
        schema: DOCTOR_SCHEMA.to_string(),
        fast: plan.fast,
        checks,
    }
}

fn layout_check(specs: &[DatabaseSpec], copies: u32) -> DoctorCheck {
    let why = "Exchange guidance separated databases and logs so that losing one volume does not lose both; with database copies (DAG) placing them together is supported (Dell's published EqualLogic PS6110E Exchange 2013 sizing paper)";
    let dev = |p: &Path| {
        let a = probe::existing_ancestor(p);
        probe::device_facts(&a)
            .ok()
            .map(|d| d.dev)
            .filter(|d| !d.is_empty())
    };
    let shared: Vec<String> = specs
        .iter()
        .filter(|s| {
            let d = dev(s.path.parent().unwrap_or(&s.path));
            d.is_some() && d == dev(&s.log_dir)
        })
        .map(|s| format!("#{}", s.index + 1))
        .collect();
    if shared.is_empty() {
        return check(
            CheckName::Layout,
            "databases and logs",
            DoctorStatus::Ok,
            "databases and logs on separate devices".into(),
            why,
            "",
        );
    }
    let fact = format!(
        "database and log on the same device for {} of {} database(s) ({})",
        shared.len(),
        specs.len(),
        shared.join(", ")
    );
    if copies > 1 {
        check(
            CheckName::Layout,
            "databases and logs",
            DoctorStatus::Ok,
            format!("{fact}; {copies} copies"),
            why,
            "",
        )
    } else {
        check(
            CheckName::Layout,
            "databases and logs",
            DoctorStatus::Warn,
            format!("{fact}; 1 copy"),
            why,
            "put the logs on another volume (--log-path), or test with the copies the deployment will have (--copies)",
        )
    }
}

/// Free space against what the test will write, plus the growth reserve, per filesystem.
fn capacity_checks(specs: &[DatabaseSpec], create: &CreateParams) -> Vec<DoctorCheck> {
    let why = "the databases and logs must fit, with 25% of the database size reserved for growth as Jetstress reserves it (its DatabaseSpaceReserved; docs/guide.md, 'Disk subsystem throughput')";
    let needs = match mbx_store::create::space_needed(specs, create) {
        Ok(n) => n,
        Err(e) => {
            return vec![check(
                CheckName::Capacity,
                "databases and logs",
                DoctorStatus::Unknown,
                format!("{e}"),
                why,
                "",
            )];
        }
    };
    // Planned database bytes per filesystem (for the reserve), keyed by a path on it.
    let mut planned: Vec<(u64, PathBuf, u64)> = Vec::new();
    for s in specs {
        if mbx_io::platform::is_block_device(&s.path).unwrap_or(false) {
            continue;
        }
        let anchor = probe::existing_ancestor(s.path.parent().unwrap_or(&s.path));
        let Ok(id) = mbx_io::platform::filesystem_id(&anchor) else {
            continue;
        };
        match planned.iter_mut().find(|(i, _, _)| *i == id) {
            Some(e) => e.2 = e.2.saturating_add(create.file_bytes()),
            None => planned.push((id, anchor, create.file_bytes())),
        }
    }
    for (anchor, _) in &needs {
        if let Ok(id) = mbx_io::platform::filesystem_id(anchor) {
            if !planned.iter().any(|(i, _, _)| *i == id) {
                planned.push((id, anchor.clone(), 0));
            }
        }
    }
    planned
        .into_iter()
        .map(|(id, anchor, db_bytes)| {
            let to_write = needs
                .iter()
                .filter(|(a, _)| mbx_io::platform::filesystem_id(a).ok() == Some(id))
                .map(|(_, b)| *b)
                .sum::<u64>();
            let free = mbx_io::platform::free_space(&anchor).ok();
            capacity_check(&anchor.display().to_string(), to_write, db_bytes, free, why)
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::event::Line;

    /// `doctor` as a library: the report comes back and as one typed `doctor` event, which
    /// reads back from its line as the same report (and as the line `run --progress jsonl`
    /// wrote before the event was typed).
    #[test]
    fn run_reports_through_one_typed_doctor_event() {
        let dir = tempfile::tempdir().expect("tempdir");
        let config = RunConfig {
            db_paths: vec![dir.path().join("db")],
            log_paths: vec![dir.path().join("log")],
            ..RunConfig::default()
        };
        let p = &config.profile;
        let create = CreateParams {
            data_pages: 256,
            mailboxes: p.mailboxes,
            quota_mb: p.mailbox_quota_mb,
            databases: p.databases,
            compressibility_pct: config.compressibility_pct,
            engine: mbx_engine::engine_kind(config.engine),
            direct: config.direct,
            force: false,
            allow_device: false,
            queue_depth: 4,
            tool_version: "test".into(),
        };
        let mut events: Vec<Event> = Vec::new();
        let report = run(
            DoctorRequest {
                config,
                create,
                probe: ProbePlan {
                    writes: 4,
                    budget: Duration::from_secs(1),
                    fast: true,
                },
            },
            &mut events,
        )
        .expect("doctor");
        assert_eq!(report.schema, DOCTOR_SCHEMA);
        assert!(report.fast);
        for name in [
            "filesystem",
            "write_through_probe",
            "capacity",
            "cpu",
            "memory",
        ] {
            assert!(
                report.checks.iter().any(|c| c.name.as_str() == name),
                "no {name} check in {report:?}"
            );
        }
        assert_eq!(
            events,
            vec![Event::Doctor {
                doctor: report.clone()
            }]
        );
        let line = Line::from(events[0].clone()).to_json();
        assert_eq!(Line::parse(&line).expect("line").event, events[0]);
        let before = serde_json::json!({ "event": "doctor", "doctor": report }).to_string();
        assert_eq!(Line::parse(&before).expect("old line").event, events[0]);
        assert_eq!(
            serde_json::from_str::<serde_json::Value>(&line).expect("json"),
            serde_json::from_str::<serde_json::Value>(&before).expect("json"),
            "the wire format changed"
        );
        // The probe's file is gone; doctor writes nothing else.
        let left: Vec<_> = std::fs::read_dir(dir.path()).expect("dir").collect();
        assert!(left.is_empty(), "doctor left {left:?}");
    }
}
