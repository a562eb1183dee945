//! `fleet loadgen`'s own steps around the coordinator: the mail servers watched during the run
//! ([`super::watch`]) and, once every client is collected, the merged result
//! (`--out/result.json` and report.html: [`crate::loadgen::merge`]).

use std::path::{Path, PathBuf};
use std::time::Duration;

use mbx_result::{ClientPart, LoadgenResult, ServerWatch};

use super::error::{failed, Result};
use super::hosts::ServerHost;
use super::ssh::Ssh;
use super::summary::FleetSummary;
use super::watch::Watcher;
use crate::loadgen::merge::{merge, MergePart};

/// The most samples a server watch takes (its samples go to a file as they come; this bounds a
/// watch whose run never ends: 100,000 x 5 s is about 6 days).
const MAX_SAMPLES: u64 = 100_000;

/// A server being watched, or why it could not be.
pub(crate) enum Watch {
    /// Sampling.
    On(Box<Watcher>),
    /// The watch did not start: the server's summary says why.
    Failed(Box<ServerWatch>),
}

/// Starts watching every server: samples to `out/servers/<name>.jsonl`.
pub(crate) fn start(ssh: &Ssh, servers: &[ServerHost], every: Duration, out: &Path) -> Vec<Watch> {
    let dir = out.join("servers");
    if !servers.is_empty() {
        if let Err(e) = fs_err::create_dir_all(&dir) {
            return servers
                .iter()
                .map(|s| {
                    Watch::Failed(Box::new(not_watched(
                        s,
                        format!("making {}: {e}", dir.display()),
                    )))
                })
                .collect();
        }
    }
    servers
        .iter()
        .map(|s| {
            let path = dir.join(format!("{}.jsonl", s.name));
            match Watcher::start(ssh, &s.name, &s.ssh, every, MAX_SAMPLES, &path) {
                Ok(w) => Watch::On(Box::new(w)),
                Err(e) => Watch::Failed(Box::new(not_watched(s, e.to_string()))),
            }
        })
        .collect()
}

fn not_watched(s: &ServerHost, why: String) -> ServerWatch {
    ServerWatch {
        name: s.name.clone(),
        ssh: s.ssh.clone(),
        source: "not read".into(),
        samples_file: format!("servers/{}.jsonl", s.name),
        error: Some(why),
        ..ServerWatch::default()
    }
}

/// Ends every watch; their summaries.
pub(crate) fn stop(watches: Vec<Watch>) -> Vec<ServerWatch> {
    watches
        .into_iter()
        .map(|w| match w {
            Watch::On(w) => w.stop(),
            Watch::Failed(s) => *s,
        })
        .collect()
}

/// The merged result of the clients that fleet.json counts (they reached the synchronized start
/// and their day began), with a section per client and the servers' summaries; written to
/// `out/result.json` with its report.html. `results` are the clients' results as fleet.json's
/// summary read them (once: [`super::summary::summarize`]), in its hosts' order. Returns
/// the result and its path.
pub(crate) fn write_merged(
    out: &Path,
    summary: &FleetSummary,
    results: Vec<Option<LoadgenResult>>,
    servers: Vec<ServerWatch>,
) -> Result<(
    LoadgenResult,
    PathBuf,
    std::result::Result<Option<PathBuf>, String>,
)> {
    let n = summary.hosts.len();
    let mut results = results.into_iter();
    let parts: Vec<MergePart> = summary
        .hosts
        .iter()
        .enumerate()
        .map(|(i, h)| {
            let result = results.next().flatten().filter(|_| h.result.is_some());
            MergePart {
                client: ClientPart {
                    name: h.name.clone(),
                    ssh: h.ssh.clone(),
                    state: h.state.to_string(),
                    message: h.message.clone(),
                    partition: format!("{}/{n}", i + 1),
                    result: h.result.clone(),
                    start_error_ms: h.start_error_ms,
                    ..ClientPart::default()
                },
                // A client that never got the start, or whose day never began, is reported
                // but not merged (fleet.json says why).
                result: result.filter(|_| h.aggregated),
            }
        })
        .collect();
    let mut merged = merge(&summary.run_id, parts);
    // fleet's reason for leaving a client out is the one to read.
    for (c, h) in merged.clients.iter_mut().zip(&summary.hosts) {
        if !c.merged {
            if let Some(why) = &h.excluded {
                c.excluded = Some(why.clone());
            }
        }
    }
    // The first client's words for its users name its slice: the merged run had them all.
    let src = &merged.config.users_source;
    let all = src.split(", users ").next().unwrap_or(src).to_string();
    let slices = merged.clients.iter().filter(|c| c.merged).count();
    merged.config.users_source = format!(
        "{all}, {} users in {slices} slice(s), one per client machine",
        merged.config.users
    );
    merged.servers = servers;
    // The merged folder has no samples or log of its own: each client's folder has them.
    merged.samples_file = String::new();
    merged.log_file = String::new();
    let path = out.join("result.json");
    let mut bytes = serde_json::to_vec_pretty(&merged)
        .map_err(|e| failed(format!("writing {}: {e}", path.display())))?;
    bytes.push(b'\n');
    mbx_config::atomic::write_atomic(&path, &bytes)
        .map_err(|e| failed(format!("writing {}: {e}", path.display())))?;
    // The result is written: a report that cannot be is a warning, never the run's end.
    let report = mbx_report::write_report(out, None)
        .map(|w| w.into_iter().next())
        .map_err(|e| {
            format!(
                "the merged report.html was not written in {}: {e}",
                out.display()
            )
        });
    Ok((merged, path, report))
}
