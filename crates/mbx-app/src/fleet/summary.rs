//! fleet.json (schema `mbxstress-fleet/1`): every host's state, checks and result, and the
//! `esrp` aggregate of the results of the hosts that reached the synchronized start and
//! measured. Rewritten (with fleet.html) after every collection, partial until the end. Also
//! the `--out` folder's preparation: an unfinished earlier run is moved aside, never replaced.

use std::path::{Path, PathBuf};

use mbx_report::flags::ResultSummary;
use mbx_result::{DoctorReport, LoadgenResult};

use super::coordinator::HostRun;
use super::error::{usage, Ctx, Result};
use super::hosts::Host;

/// fleet.json's schema.
pub const FLEET_SCHEMA: &str = "mbxstress-fleet/1";

/// One host in fleet.json.
#[derive(Debug, serde::Serialize)]
pub struct HostSummary {
    /// Its name (its results folder).
    pub name: String,
    /// Its ssh destination.
    pub ssh: String,
    /// Its state ([`super::State::name`]).
    pub state: &'static str,
    /// Why, for a host that did not pass or fail its verdict.
    pub message: Option<String>,
    /// Its clock minus the coordinator's, ms.
    pub clock_offset_ms: f64,
    /// The round trip of that reading, ms.
    pub clock_rtt_ms: f64,
    /// It runs the static build `--push` copies.
    pub pushed: bool,
    /// The pushed build was on the host already (same SHA-256): nothing was uploaded.
    pub push_reused: bool,
    /// The phase it last reported.
    pub last_phase: String,
    /// The measured phase's start in the coordinator's clock (offset corrected).
    pub collection_start_unix_s: Option<f64>,
    /// Its distance from the start time sent, ms.
    pub start_error_ms: Option<f64>,
    /// Its result.json, relative to fleet.json, when one came back.
    pub result: Option<String>,
    /// Its result is one of the servers of `esrp` (it reached the synchronized start and
    /// measured).
    pub aggregated: bool,
    /// Why it is not, when the run started there.
    pub excluded: Option<String>,
    /// `mbxstress doctor --json` on the host before the run (schema mbxstress.doctor/1).
    pub doctor: Option<DoctorReport>,
    /// How long that doctor took, seconds (ssh round trip included).
    pub doctor_elapsed_s: Option<f64>,
}

/// fleet.json.
#[derive(Debug, serde::Serialize)]
pub struct FleetSummary {
    /// [`FLEET_SCHEMA`].
    pub schema: &'static str,
    /// The run's id.
    pub run_id: String,
    /// A host failed, had no result, or the run was interrupted (or it is not over).
    pub partial: bool,
    /// The run was interrupted.
    pub interrupted: bool,
    /// The synchronized start, in the coordinator's clock (Unix seconds).
    pub start_at_unix_s: Option<f64>,
    /// Latest minus earliest measured-phase start across hosts with a result, ms.
    pub skew_ms: Option<f64>,
    /// The hosts, in the hosts file's order.
    pub hosts: Vec<HostSummary>,
    /// The aggregate of the measured results.
    pub esrp: mbx_report::EsrpSummary,
}

/// Why a host's result is left out of the aggregate, if it is: it must have become ready (so
/// it got the synchronized start) and measured (`collection_start_unix_s` in its result).
pub(crate) fn aggregate_exclusion(ready: bool, measured: bool) -> Option<String> {
    if !ready {
        Some("not in the aggregate: the host never became ready (its run stopped before the synchronized start)".into())
    } else if !measured {
        Some("not in the aggregate: its run stopped before the measured phase".into())
    } else {
        None
    }
}

/// Largest result.json read back (a storage result is tens of KB; a loadgen result's
/// histograms a few MB).
const RESULT_LIMIT: u64 = 64 * 1024 * 1024;

/// A host's result.json, read once (bounded): its text and its lenient typed summary; or why it
/// could not be read.
fn read_result(path: &Path) -> std::result::Result<(String, ResultSummary), String> {
    let text = mbx_config::input::read_bounded(path, RESULT_LIMIT, "a host's result.json")
        .map_err(|e| e.to_string())?;
    let summary = ResultSummary::parse(&text).unwrap_or_default();
    Ok((text, summary))
}

/// fleet.json's contents from the hosts' states and the result.json files copied back into
/// `out`; with warnings (a result that does not load) and each loadgen client's result as read
/// (once, typed: the merge takes them from here).
#[allow(clippy::too_many_arguments)]
pub fn summarize(
    out: &Path,
    run_id: &str,
    lives: &[HostRun],
    start_at: Option<f64>,
    partial: bool,
    interrupted: bool,
    loadgen: bool,
) -> (FleetSummary, Vec<String>, Vec<Option<LoadgenResult>>) {
    let mut warnings = Vec::new();
    let mut inputs = Vec::new();
    let mut hosts = Vec::new();
    let mut clients = Vec::new();
    for l in lives {
        let path = out.join(&l.name).join("result.json");
        let mut start = None;
        let mut rel = None;
        let mut excluded = None;
        let mut client = None;
        let read = path.exists().then(|| read_result(&path));
        // Whether a result was there when read (not asked again: another host's copy may be
        // landing meanwhile).
        let found = read.is_some();
        match read {
            Some(Ok((text, v))) if loadgen => {
                // A loadgen client's day start; its result is merged into --out/result.json (not
                // an ESRP server).
                start = v.test().start_unix_s.get().map(|s| s - l.checked.offset_s);
                rel = Some(format!("{}/result.json", l.name));
                excluded = if v.stopped().reason.get().map(String::as_str) == Some("running") {
                    Some("not in the aggregate: its result was never finished (the run was killed or lost)".into())
                } else if !l.ready {
                    aggregate_exclusion(false, false)
                } else if start.is_none() {
                    Some("not in the aggregate: its run stopped before the day started".into())
                } else {
                    None
                };
                client = serde_json::from_str::<LoadgenResult>(&text).ok();
            }
            Some(Ok((text, v))) => {
                start = v
                    .test()
                    .collection_start_unix_s
                    .get()
                    .map(|s| s - l.checked.offset_s);
                // Figures no measurement can have are refused here too, as `esrp` does.
                let imported = mbx_report::esrp::from_result_json(&text, &path).and_then(|r| {
                    mbx_report::import::check_figures(&r, &path)?;
                    Ok(r)
                });
                match imported {
                    Ok(mut imported) => {
                        rel = Some(format!("{}/result.json", l.name));
                        // Only a run that reached the synchronized start and measured is a
                        // server of the aggregate; any other result is its own, kept, but not
                        // summed.
                        excluded = aggregate_exclusion(l.ready, start.is_some());
                        if excluded.is_none() {
                            imported.machine = Some(l.name.clone());
                            inputs.push(imported);
                        }
                    }
                    Err(e) => {
                        warnings.push(format!("{}: {e}", path.display()));
                        excluded = Some(format!(
                            "not in the aggregate: its result.json does not load: {e}"
                        ));
                    }
                }
            }
            Some(Err(e)) => {
                if !loadgen {
                    warnings.push(format!("{}: {e}", path.display()));
                } else {
                    rel = Some(format!("{}/result.json", l.name));
                }
                excluded = Some(format!(
                    "not in the aggregate: its result.json does not load: {e}"
                ));
            }
            None if l.started => {
                excluded = Some("not in the aggregate: no result came back".into());
            }
            None => {}
        }
        clients.push(client);
        hosts.push(HostSummary {
            name: l.name.clone(),
            ssh: l.ssh.clone(),
            state: l.state.name(),
            message: l.state.message(),
            clock_offset_ms: l.checked.offset_s * 1e3,
            clock_rtt_ms: l.checked.rtt_s * 1e3,
            pushed: l.checked.pushed,
            push_reused: l.checked.push_reused,
            last_phase: l.phase.clone(),
            collection_start_unix_s: start,
            start_error_ms: start.zip(start_at).map(|(s, t)| (s - t) * 1e3),
            result: rel,
            aggregated: excluded.is_none() && found,
            excluded,
            doctor: l.checked.doctor.clone(),
            doctor_elapsed_s: l.checked.doctor.as_ref().map(|_| l.checked.doctor_s),
        });
    }
    let starts: Vec<f64> = hosts
        .iter()
        .filter_map(|h| h.collection_start_unix_s)
        .collect();
    let skew_ms = if starts.len() >= 2 {
        let max = starts.iter().copied().fold(f64::MIN, f64::max);
        let min = starts.iter().copied().fold(f64::MAX, f64::min);
        debug_assert!(min <= max || starts.iter().any(|s| s.is_nan()));
        Some((max - min) * 1e3)
    } else {
        None
    };
    // One row per host, in order, and each loadgen client's result beside its row (the merge
    // pairs them by index).
    debug_assert_eq!(hosts.len(), lives.len());
    debug_assert_eq!(clients.len(), lives.len());
    // The aggregate sums exactly the hosts marked aggregated, each with its result named.
    debug_assert!(hosts.iter().all(|h| !h.aggregated || h.result.is_some()));
    debug_assert!(hosts.iter().all(|h| !h.aggregated || h.excluded.is_none()));
    debug_assert!(
        loadgen || inputs.len() == hosts.iter().filter(|h| h.aggregated).count(),
        "{} results aggregated, {} hosts marked so",
        inputs.len(),
        hosts.iter().filter(|h| h.aggregated).count()
    );
    let summary = FleetSummary {
        schema: FLEET_SCHEMA,
        run_id: run_id.to_string(),
        partial,
        interrupted,
        start_at_unix_s: start_at,
        skew_ms,
        hosts,
        esrp: mbx_report::summarize(&inputs),
    };
    (summary, warnings, clients)
}

/// Makes `out` ready for this run's files. A folder without our files is used as it is. One
/// that holds an unfinished fleet run (its fleet.json says `partial`: interrupted, or a host
/// failed) is the same command run again, the hosts resuming their preparation: that run's files
/// (fleet.json, fleet.html, the host folders) move to `out/earlier/<its run id>/`, so nothing
/// is replaced; returns that folder. A finished run, or host folders without a fleet.json of
/// ours, are refused.
pub fn set_aside_unfinished(out: &Path, hosts: &[Host]) -> Result<Option<PathBuf>> {
    let fleet = out.join("fleet.json");
    // fleet loadgen's merged result, its report and the servers' samples are the run's too.
    let ours: Vec<PathBuf> = ["fleet.json", "fleet.html", "servers"]
        .iter()
        .map(|n| out.join(n))
        .chain(hosts.iter().map(|h| out.join(&h.name)))
        .filter(|p| p.exists())
        .collect();
    if ours.is_empty() {
        return Ok(None);
    }
    let refuse = |why: &str| {
        usage(format!(
            "--out {}: {why}; choose a new or empty folder",
            out.display()
        ))
    };
    let earlier: Option<serde_json::Value> = fs_err::read_to_string(&fleet)
        .ok()
        .and_then(|t| serde_json::from_str(&t).ok())
        .filter(|v: &serde_json::Value| v["schema"] == FLEET_SCHEMA);
    let Some(earlier) = earlier else {
        let first = ours.first().map_or_else(String::new, |p| {
            p.file_name()
                .map_or_else(String::new, |n| n.to_string_lossy().into_owned())
        });
        return Err(refuse(&format!(
            "{first} exists already and there is no fleet.json of an unfinished fleet run to resume"
        )));
    };
    if earlier["partial"] != true {
        return Err(refuse(
            "it holds a finished fleet run (fleet.json); its results are kept",
        ));
    }
    let id = earlier["run_id"].as_str().unwrap_or("");
    if id.is_empty()
        || id.starts_with('.')
        || !id
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '.' | '-' | '_'))
    {
        return Err(refuse("its fleet.json has no valid run_id"));
    }
    let dest = out.join("earlier").join(id);
    if dest.exists() {
        return Err(refuse(&format!("{} exists already", dest.display())));
    }
    fs_err::create_dir_all(&dest)
        .ctx(|| "making the folder for the earlier run's results".into())?;
    let merged = ["result.json", "report.html"]
        .iter()
        .map(|n| out.join(n))
        .filter(|p| p.exists());
    let ours: Vec<PathBuf> = ours.into_iter().chain(merged).collect();
    for p in &ours {
        if let Some(name) = p.file_name() {
            fs_err::rename(p, dest.join(name))
                .ctx(|| "moving the earlier run's results aside".into())?;
        }
    }
    Ok(Some(dest))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::fleet::coordinator::Checked;
    use crate::fleet::coordinator::State;

    #[test]
    fn an_unfinished_run_in_out_is_moved_aside_and_a_finished_one_refused() {
        let dir = tempfile::tempdir().expect("tempdir");
        let hosts_file = dir.path().join("h.toml");
        fs_err::write(
            &hosts_file,
            "[[host]]\nssh = \"h1\"\ndb_path = \"/d\"\nlog_path = \"/l\"\n",
        )
        .expect("hosts");
        let hosts = crate::fleet::hosts::load(&hosts_file, &[]).expect("hosts");
        let out = dir.path().join("out");
        fs_err::create_dir_all(out.join("h1")).expect("mkdir");
        fs_err::write(out.join("h1/result.json"), "{}").expect("write");
        let fleet = |partial: bool| {
            fs_err::write(
                out.join("fleet.json"),
                format!(
                    r#"{{"schema":"mbxstress-fleet/1","run_id":"fleet-1","partial":{partial}}}"#
                ),
            )
            .expect("write")
        };
        let err = |r: Result<Option<PathBuf>>| r.expect_err("refused").to_string();
        // Host folders without a fleet.json of ours: nothing to resume, refused.
        assert!(err(set_aside_unfinished(&out, &hosts)).contains("h1 exists already"));
        // A finished run is kept: refused.
        fleet(false);
        assert!(err(set_aside_unfinished(&out, &hosts)).contains("finished fleet run"));
        // An unfinished one moves to earlier/<run id>/, nothing replaced.
        fleet(true);
        let moved = set_aside_unfinished(&out, &hosts).expect("moved");
        assert_eq!(moved, Some(out.join("earlier/fleet-1")));
        assert!(out.join("earlier/fleet-1/h1/result.json").exists());
        assert!(out.join("earlier/fleet-1/fleet.json").exists());
        assert!(!out.join("h1").exists() && !out.join("fleet.json").exists());
        assert_eq!(set_aside_unfinished(&out, &hosts).expect("empty"), None);
        // The same run id twice: the earlier copy is never replaced.
        fs_err::create_dir_all(out.join("h1")).expect("mkdir");
        fleet(true);
        assert!(err(set_aside_unfinished(&out, &hosts)).contains("exists already"));
        assert!(out.join("h1").exists());
    }

    /// Issue 25 case 1: a result in a host's folder counts in the aggregate only if the host
    /// became ready and measured; any other is kept but named as left out, with the reason.
    #[test]
    fn only_hosts_that_became_ready_and_measured_are_aggregated() {
        let dir = tempfile::tempdir().expect("tempdir");
        let fixture = include_str!("../../../mbx-report/tests/fixtures/mbxstress-result.json");
        let mut v: serde_json::Value = serde_json::from_str(fixture).expect("fixture");
        v["test"]["collection_start_unix_s"] = 1.0e9.into();
        let measured = serde_json::to_string(&v).expect("json");
        let live = |name: &str, ready: bool, result: Option<&str>| {
            let folder = dir.path().join(name);
            fs_err::create_dir_all(&folder).expect("mkdir");
            if let Some(r) = result {
                fs_err::write(folder.join("result.json"), r).expect("write");
            }
            let mut h = HostRun::new(name, name, Checked::default());
            h.state = State::Exited(0);
            h.ready = ready;
            h.result_seen = true;
            h.started = true;
            h.heard = true;
            h.collected = true;
            h
        };
        let lives = [
            live("a", true, Some(&measured)),
            live("b", false, Some(&measured)),
            live("c", true, Some(fixture)),
            live("d", true, None),
        ];
        let (s, warnings, _) = summarize(
            dir.path(),
            "fleet-1",
            &lives,
            Some(1.0e9),
            true,
            false,
            false,
        );
        assert!(warnings.is_empty(), "{warnings:?}");
        let machines: Vec<&str> = s.esrp.servers.iter().map(|f| f.machine.as_str()).collect();
        assert_eq!(machines, ["a"]);
        let why: Vec<Option<&str>> = s.hosts.iter().map(|h| h.excluded.as_deref()).collect();
        assert_eq!(why[0], None);
        assert!(
            why[1].is_some_and(|w| w.contains("never became ready")),
            "{why:?}"
        );
        assert!(
            why[2].is_some_and(|w| w.contains("before the measured phase")),
            "{why:?}"
        );
        assert!(why[3].is_some_and(|w| w.contains("no result")), "{why:?}");
        assert_eq!(
            s.hosts.iter().map(|h| h.aggregated).collect::<Vec<_>>(),
            [true, false, false, false]
        );
    }
}
