//! One result of a `fleet loadgen` run from its clients' results: every latency figure from
//! the clients' histograms merged (never an average of percentiles), the watchers' server
//! delivery latency too (what the merged verdict judges, as one client's does), counts summed,
//! and a section per client (`clients[]`) with its own figures and whether it is in the merged
//! ones.
//!
//! A client is merged when its result is a day's with histograms that all decode; any other
//! is excluded with the reason, and a run that lost a client does not pass (`clients_merged`).

use std::collections::BTreeMap;

use hdrhistogram::Histogram;
use mbx_result::{
    Check, CheckState, ClientPart, ClientShare, CommandRow, Delivery, IdleProbeFigures, LatencyMs,
    LoadgenConfig, LoadgenError, LoadgenInfo, LoadgenResult, StopReason, Stopped, TaskRow, Verdict,
    LOADGEN_KIND, LOADGEN_SCHEMA,
};

use super::assemble::{self, latency_ms, DayFigures};
use super::hist;

/// Corrupted or lost copies named in the merged delivery, at most (as in one client's).
const NAMED_COPIES: usize = 100;

/// One client machine's part of a fleet run.
#[derive(Debug, Clone)]
pub struct MergePart {
    /// The client as the fleet knows it: name, ssh, state, message, partition, result (its
    /// result.json relative to the merged one) and start_error_ms filled by the caller; its own
    /// figures, `merged` and `excluded` are filled by [`merge`].
    pub client: ClientPart,
    /// Its result.json, when one came back and could be read.
    pub result: Option<LoadgenResult>,
}

/// A part accepted into the merged figures, its histograms decoded.
struct Merged {
    /// The client's name (for the notes).
    name: String,
    result: LoadgenResult,
    histograms: BTreeMap<String, Histogram<u64>>,
}

/// The merged result of a fleet run `run_id` over `parts` (in the hosts file's order): see
/// the module's description. Never panics, whatever the parts hold; with no part merged, a
/// result with zero figures whose verdict is not judged.
pub fn merge(run_id: &str, parts: Vec<MergePart>) -> LoadgenResult {
    let total = parts.len();
    let mut clients = Vec::with_capacity(total);
    let mut merged: Vec<Merged> = Vec::new();
    for MergePart { mut client, result } in parts {
        if let Some(r) = &result {
            own_figures(&mut client, r);
        }
        match result.ok_or_else(|| "no result came back".to_string()) {
            Err(why) => exclude(&mut client, why),
            Ok(r) => match accept(&r) {
                Ok(histograms) => {
                    client.merged = true;
                    client.excluded = None;
                    merged.push(Merged {
                        name: client.name.clone(),
                        result: r,
                        histograms,
                    });
                }
                Err(why) => exclude(&mut client, why),
            },
        }
        clients.push(client);
    }
    let names = |m: bool| -> String {
        let v: Vec<&str> = clients
            .iter()
            .filter(|c| c.merged == m)
            .map(|c| c.name.as_str())
            .collect();
        if v.is_empty() {
            "none".into()
        } else {
            v.join(", ")
        }
    };
    let line = format!(
        "merged from {} of {total} client machines: {}; excluded: {}",
        merged.len(),
        names(true),
        names(false)
    );
    let mut out = if merged.is_empty() {
        nothing_merged(run_id, total)
    } else {
        figures(run_id, total, &merged)
    };
    out.notes.insert(0, line);
    out.clients = clients;
    out
}

fn exclude(client: &mut ClientPart, why: String) {
    client.merged = false;
    client.excluded = Some(why);
}

/// `PASS`, `FAIL` or `NOT JUDGED`.
fn verdict_word(v: &Verdict) -> &'static str {
    match v.state() {
        CheckState::Pass => "PASS",
        CheckState::Fail => "FAIL",
        CheckState::NotJudged => "NOT JUDGED",
    }
}

/// A client's own figures from its result.
fn own_figures(c: &mut ClientPart, r: &LoadgenResult) {
    c.users = r.config.users;
    c.tasks_planned = r.tasks_planned;
    c.tasks_completed = r.tasks_completed;
    c.tasks_failed = r.tasks_failed;
    c.delivered = r.delivery.as_ref().map_or(0, |d| d.delivered);
    c.lost = r.delivery.as_ref().map_or(0, |d| d.lost);
    c.task_p95_ms_worst = r
        .tasks
        .iter()
        .filter(|t| t.latency_ms.count > 0)
        .map(|t| t.latency_ms.p95)
        .fold(None, |w: Option<f64>, p| Some(w.map_or(p, |w| w.max(p))));
    c.verdict = Some(verdict_word(&r.verdict).to_string());
}

/// The histograms of a result fit to merge, or why it is not.
fn accept(r: &LoadgenResult) -> Result<BTreeMap<String, Histogram<u64>>, String> {
    if r.kind != LOADGEN_KIND {
        return Err(format!("not a loadgen result (kind {:?})", r.kind));
    }
    if r.test.phase != "day" {
        return Err(format!("not a day result (phase {:?})", r.test.phase));
    }
    if r.stopped.reason == StopReason::Running {
        return Err("its result says the run never ended (the process died)".into());
    }
    if r.histograms.is_empty() {
        return Err(format!(
            "its result has no histograms (mbxstress older than the fleet merge, version {}, or they could not be written: see its notes)",
            r.test.tool_version
        ));
    }
    let h = hist::decode_all(&r.histograms).map_err(|e| format!("its result's {e}"))?;
    // Every figure with values needs its histogram, or the merged one would miss them.
    let mut need: Vec<String> = Vec::new();
    for t in &r.tasks {
        if t.latency_ms.count > 0 {
            need.push(hist::task_name(&t.task));
        }
        if t.service_ms.count > 0 {
            need.push(hist::service_name(&t.task));
        }
    }
    for c in r.commands.iter().filter(|c| c.latency_ms.count > 0) {
        need.push(hist::command_name(&c.protocol, &c.command));
    }
    if r.delivery.as_ref().is_some_and(|d| d.latency_ms.count > 0) {
        need.push(hist::DELIVERY.to_string());
    }
    if let Some(missing) = need.iter().find(|n| !h.contains_key(*n)) {
        return Err(format!("its result has no histogram {missing}"));
    }
    Ok(h)
}

/// The histograms of `name` merged over the parts (None when no part has it).
fn merged_hist(parts: &[Merged], name: &str) -> Result<Option<Histogram<u64>>, String> {
    let mut acc: Option<Histogram<u64>> = None;
    for h in parts.iter().filter_map(|p| p.histograms.get(name)) {
        match &mut acc {
            None => {
                let mut first = h.clone();
                // A part recorded with other bounds still adds (its values re-recorded).
                first.auto(true);
                acc = Some(first);
            }
            Some(a) => a
                .add(h)
                .map_err(|e| format!("histogram {name}: could not be merged: {e:?}"))?,
        }
    }
    Ok(acc)
}

/// A result with nothing measured: no client's result came back.
fn nothing_merged(run_id: &str, total: usize) -> LoadgenResult {
    let verdict = Verdict::of(vec![Check::not_judged(
        "clients_merged",
        total as f64,
        "no client's result came back",
    )]);
    LoadgenResult::empty(
        LoadgenInfo {
            phase: "day".into(),
            run_id: run_id.to_string(),
            machine: machines(total),
            ..LoadgenInfo::default()
        },
        LoadgenConfig::default(),
        verdict,
        Stopped::new(
            StopReason::VerdictFailed,
            "no client's result came back: nothing was merged",
        ),
    )
}

fn machines(n: usize) -> String {
    if n == 1 {
        "1 client machine".into()
    } else {
        format!("{n} client machines")
    }
}

/// Seconds since the epoch of `YYYY-MM-DDTHH:MM:SSZ` (what results hold), None otherwise.
fn unix_of(s: &str) -> Option<i64> {
    let b = s.as_bytes();
    if b.len() != 20 || b[4] != b'-' || b[7] != b'-' || b[10] != b'T' || b[19] != b'Z' {
        return None;
    }
    let n = |r: std::ops::Range<usize>| s.get(r)?.parse::<i64>().ok();
    let (y, m, d) = (n(0..4)?, n(5..7)?, n(8..10)?);
    let (hh, mm, ss) = (n(11..13)?, n(14..16)?, n(17..19)?);
    if !(1..=12).contains(&m) || !(1..=31).contains(&d) || hh > 23 || mm > 59 || ss > 60 {
        return None;
    }
    // Days from civil (Howard Hinnant's algorithm), the inverse of mbx_engine::rfc3339.
    let y = if m <= 2 { y - 1 } else { y };
    let era = y.div_euclid(400);
    let yoe = y - era * 400;
    let mp = (m + 9) % 12;
    let doy = (153 * mp + 2) / 5 + d - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    let days = era * 146_097 + doe - 719_468;
    Some(days * 86_400 + hh * 3600 + mm * 60 + ss)
}

/// The merged test block.
fn test_info(run_id: &str, total: usize, parts: &[Merged]) -> LoadgenInfo {
    let key = |s: &str| (unix_of(s).unwrap_or(i64::MAX), s.to_string());
    let tests = || parts.iter().map(|p| &p.result.test);
    let start = tests()
        .map(|t| t.start.as_str())
        .min_by_key(|s| key(s))
        .unwrap_or_default()
        .to_string();
    let end = tests()
        .map(|t| t.end.as_str())
        .max_by_key(|s| (unix_of(s).unwrap_or(i64::MIN), s.to_string()))
        .unwrap_or_default()
        .to_string();
    let longest = tests().map(|t| t.duration_s).fold(0.0, f64::max);
    let duration_s = match (unix_of(&start), unix_of(&end)) {
        (Some(a), Some(b)) if b >= a => ((b - a) as f64).max(longest),
        _ => longest,
    };
    let distinct = |f: &dyn Fn(&LoadgenInfo) -> &str| -> String {
        let mut v: Vec<&str> = Vec::new();
        for t in tests() {
            if !v.contains(&f(t)) {
                v.push(f(t));
            }
        }
        v.join(", ")
    };
    LoadgenInfo {
        phase: "day".into(),
        run_id: run_id.to_string(),
        start,
        end,
        duration_s,
        machine: machines(total),
        os: distinct(&|t| t.os.as_str()),
        tool_version: distinct(&|t| t.tool_version.as_str()),
        interrupted: tests().any(|t| t.interrupted),
        start_unix_s: tests()
            .filter_map(|t| t.start_unix_s)
            .fold(None, |a: Option<f64>, s| Some(a.map_or(s, |a| a.min(s)))),
        partition: None,
    }
}

/// The merged config: the first part's, its users and client types' users summed.
fn config(parts: &[Merged]) -> LoadgenConfig {
    let mut cfg = parts[0].result.config.clone();
    cfg.users = parts.iter().map(|p| p.result.config.users).sum();
    let mut shares: Vec<ClientShare> = Vec::new();
    for s in parts.iter().flat_map(|p| &p.result.config.clients) {
        match shares.iter_mut().find(|m| m.client == s.client) {
            Some(m) => m.users += s.users,
            None => shares.push(s.clone()),
        }
    }
    cfg.clients = shares;
    cfg
}

fn add_classes(into: &mut BTreeMap<String, u64>, from: &BTreeMap<String, u64>) {
    for (k, n) in from {
        let e = into.entry(k.clone()).or_insert(0);
        *e = e.saturating_add(*n);
    }
}

/// The merged server delivery latency (the watchers'): from the clients' `delivery.server`
/// histograms merged, watched mailboxes and late copies summed. When a client's result has no
/// such histogram (an older client), the merged figure would not be the server's: it is left
/// empty, which the verdict judges as one client's result without a watcher (the user-seen
/// latency), and a note says so.
fn server_figure(
    d: &mut Delivery,
    parts: &[Merged],
    hist_of: &mut dyn FnMut(String, &mut Vec<String>) -> LatencyMs,
    notes: &mut Vec<String>,
) {
    let with_delivery = || parts.iter().filter(|p| p.result.delivery.is_some());
    let lacking: Vec<&Merged> = with_delivery()
        .filter(|p| !p.histograms.contains_key(hist::SERVER_DELIVERY))
        .collect();
    if !lacking.is_empty() {
        let who: Vec<String> = lacking
            .iter()
            .map(|p| format!("{} (mbxstress {})", p.name, p.result.test.tool_version))
            .collect();
        notes.push(format!(
            "server delivery latency not merged: the result of {} has no histogram {} (an mbxstress older than the merged server figure), so the merged figure would not be the server's; delivery_latency_p95_ms judges the user-seen latency, as a result without a watcher is judged",
            who.join(", "),
            hist::SERVER_DELIVERY
        ));
        return;
    }
    d.server_latency_ms = hist_of(hist::SERVER_DELIVERY.to_string(), notes);
    let mut by: Vec<String> = Vec::new();
    let mut unwatched: Vec<&str> = Vec::new();
    let mut resolutions: Vec<f64> = Vec::new();
    for p in with_delivery() {
        let Some(x) = p.result.delivery.as_ref() else {
            continue;
        };
        d.server_watched = d.server_watched.saturating_add(x.server_watched);
        d.server_late = d.server_late.saturating_add(x.server_late);
        if x.server_measured_by.is_empty() {
            unwatched.push(p.name.as_str());
            continue;
        }
        by.push(format!("{}: {}", p.name, x.server_measured_by));
        resolutions.push(x.server_resolution_ms);
    }
    d.server_measured_by = match (parts.len(), by.len()) {
        (_, 0) => String::new(),
        (1, _) => parts[0]
            .result
            .delivery
            .as_ref()
            .map_or_else(String::new, |x| x.server_measured_by.clone()),
        _ => format!("per client: {}", by.join("; ")),
    };
    // The coarsest client's resolution bounds the merged figure's.
    d.server_resolution_ms = resolutions.iter().copied().fold(0.0, f64::max);
    if resolutions.iter().any(|r| *r != d.server_resolution_ms) {
        notes.push(format!(
            "the clients' watchers polled at different intervals: the merged server delivery latency's resolution is the coarsest, {:.0} ms",
            d.server_resolution_ms
        ));
    }
    if !unwatched.is_empty() && !by.is_empty() {
        notes.push(format!(
            "no watcher ran on {}: the server delivery latency is the other clients' watched copies",
            unwatched.join(", ")
        ));
    }
}

/// The merged IDLE probes' finding: counts summed, slow when any client found IDLE slow, the
/// lag from the clients' `idle_probe.lag` histograms merged (when one lacks it, the worst
/// client's lag, said in a note).
fn idle_probe(
    parts: &[Merged],
    hist_of: &mut dyn FnMut(String, &mut Vec<String>) -> LatencyMs,
    notes: &mut Vec<String>,
) -> Option<IdleProbeFigures> {
    let probed: Vec<(&Merged, &IdleProbeFigures)> = parts
        .iter()
        .filter_map(|p| {
            p.result
                .delivery
                .as_ref()
                .and_then(|d| d.idle_probe.as_ref())
                .map(|i| (p, i))
        })
        .collect();
    if probed.is_empty() {
        return None;
    }
    let mut out = IdleProbeFigures::default();
    for (_, i) in &probed {
        out.probes = out.probes.saturating_add(i.probes);
        out.copies = out.copies.saturating_add(i.copies);
        out.prompt = out.prompt.saturating_add(i.prompt);
        out.slow_after_s = out.slow_after_s.max(i.slow_after_s);
        out.slow |= i.slow;
    }
    if probed
        .iter()
        .all(|(p, _)| p.histograms.contains_key(hist::IDLE_LAG))
    {
        out.lag_ms = hist_of(hist::IDLE_LAG.to_string(), notes);
    } else {
        out.lag_ms = probed
            .iter()
            .map(|(_, i)| i.lag_ms)
            .max_by(|a, b| a.max.total_cmp(&b.max))
            .unwrap_or_default();
        notes.push(format!(
            "the IDLE probes' lag is the worst client's, not the merged one: a client's result has no histogram {}",
            hist::IDLE_LAG
        ));
    }
    let slow: Vec<&str> = probed
        .iter()
        .filter(|(_, i)| i.slow)
        .map(|(p, _)| p.name.as_str())
        .collect();
    out.note = if let Some((p, i)) = probed.iter().find(|(_, i)| i.slow) {
        format!(
            "IDLE slow as seen from {} of {} probing clients ({}); {}: {}",
            slow.len(),
            probed.len(),
            slow.join(", "),
            p.name,
            i.note
        )
    } else if out.copies == 0 {
        "IDLE not judged: no copy came to a probed mailbox while it idled".into()
    } else {
        format!(
            "IDLE notifies promptly: {} of {} copies announced within {:.0} s (p95 {:.1} s after the watcher), over {} probing clients",
            out.prompt,
            out.copies,
            out.slow_after_s,
            out.lag_ms.p95 / 1000.0,
            probed.len()
        )
    };
    Some(out)
}

/// The merged figures of the parts (at least one).
fn figures(run_id: &str, total: usize, parts: &[Merged]) -> LoadgenResult {
    let mut notes = Vec::new();
    let mut histograms: BTreeMap<String, Histogram<u64>> = BTreeMap::new();
    let mut hist_of = |name: String, notes: &mut Vec<String>| match merged_hist(parts, &name) {
        Ok(Some(h)) => {
            let l = latency_ms(&h);
            histograms.insert(name, h);
            l
        }
        Ok(None) => Default::default(),
        Err(e) => {
            notes.push(e);
            Default::default()
        }
    };
    let results = || parts.iter().map(|p| &p.result);
    let sum = |f: &dyn Fn(&LoadgenResult) -> u64| results().map(f).fold(0u64, u64::saturating_add);

    let mut tasks = merged_tasks(parts);
    for t in &mut tasks {
        t.latency_ms = hist_of(hist::task_name(&t.task), &mut notes);
        t.service_ms = hist_of(hist::service_name(&t.task), &mut notes);
    }

    let mut commands = merged_commands(parts);
    for c in &mut commands {
        c.latency_ms = hist_of(hist::command_name(&c.protocol, &c.command), &mut notes);
    }

    let delivery = if results().any(|r| r.delivery.is_some()) {
        let mut d = summed_delivery(parts);
        d.latency_ms = hist_of(hist::DELIVERY.to_string(), &mut notes);
        server_figure(&mut d, parts, &mut hist_of, &mut notes);
        d.idle_probe = idle_probe(parts, &mut hist_of, &mut notes);
        d.measured_by = match (d.seen_by_idle > 0, d.seen_by_poll > 0) {
            (true, true) => "idle+poll",
            (true, false) => "idle",
            (false, true) => "poll",
            (false, false) => "none",
        }
        .to_string();
        Some(d)
    } else {
        None
    };

    let errors = merged_errors(parts);

    let config = config(parts);
    let test = test_info(run_id, total, parts);
    let overloaded = results().any(|r| r.overloaded);
    let fig = DayFigures {
        planned: sum(&|r| r.tasks_planned),
        dispatched: sum(&|r| r.tasks_dispatched),
        stress: config.stress,
        completed: sum(&|r| r.tasks_completed),
        max_unfinished: sum(&|r| r.max_unfinished),
        overload_limit: sum(&|r| r.overload_limit),
        overloaded,
        ended_early: overloaded || test.interrupted,
    };
    let mut verdict = assemble::day_verdict(
        fig,
        &tasks,
        delivery.as_ref().unwrap_or(&Delivery::default()),
        &config.thresholds,
    );
    if parts.len() < total {
        verdict.set(Check::new(
            "clients_merged",
            parts.len() as f64,
            total as f64,
            false,
        ));
    }
    notes.push(
        "the task queue maximum is the sum of each client's maximum (they need not have been at the same moment): an upper bound; the overload limit is the sum of the clients' limits"
            .to_string(),
    );
    let mut encoded = BTreeMap::new();
    for (name, h) in &histograms {
        match hist::encode(name, h) {
            Ok(t) => {
                encoded.insert(name.clone(), t);
            }
            Err(e) => notes.push(e.to_string()),
        }
    }
    LoadgenResult {
        schema: LOADGEN_SCHEMA.into(),
        kind: LOADGEN_KIND.into(),
        stopped: super::stopped_of(test.interrupted, overloaded, &verdict, "day"),
        test,
        config,
        tasks_planned: fig.planned,
        tasks_dispatched: fig.dispatched,
        tasks_completed: fig.completed,
        tasks_failed: sum(&|r| r.tasks_failed),
        max_unfinished: fig.max_unfinished,
        overload_limit: fig.overload_limit,
        overloaded,
        tasks,
        commands,
        delivery,
        init: None,
        idle: None,
        submit: None,
        verdict,
        errors,
        samples_file: "samples.jsonl".into(),
        log_file: "test.log".into(),
        notes,
        histograms: encoded,
        clients: Vec::new(),
        servers: Vec::new(),
    }
}

/// The parts' task rows summed by task (their latencies come from the merged histograms).
fn merged_tasks(parts: &[Merged]) -> Vec<TaskRow> {
    let mut tasks: Vec<TaskRow> = Vec::new();
    for t in parts.iter().map(|p| &p.result).flat_map(|r| &r.tasks) {
        match tasks.iter_mut().find(|m| m.task == t.task) {
            Some(m) => {
                m.dispatched = m.dispatched.saturating_add(t.dispatched);
                m.completed = m.completed.saturating_add(t.completed);
                m.skipped = m.skipped.saturating_add(t.skipped);
                add_classes(&mut m.failed, &t.failed);
            }
            None => tasks.push(TaskRow {
                latency_ms: Default::default(),
                service_ms: Default::default(),
                ..t.clone()
            }),
        }
    }
    tasks
}

/// The parts' command rows summed by protocol and command (latencies from the histograms).
fn merged_commands(parts: &[Merged]) -> Vec<CommandRow> {
    let mut commands: Vec<CommandRow> = Vec::new();
    for c in parts.iter().map(|p| &p.result).flat_map(|r| &r.commands) {
        match commands
            .iter_mut()
            .find(|m| m.protocol == c.protocol && m.command == c.command)
        {
            Some(m) => {
                m.ok = m.ok.saturating_add(c.ok);
                add_classes(&mut m.errors, &c.errors);
                add_classes(&mut m.statuses, &c.statuses);
            }
            None => commands.push(CommandRow {
                latency_ms: Default::default(),
                ..c.clone()
            }),
        }
    }
    commands
}

/// The parts' delivery counts summed, and the first copies named (at most [`NAMED_COPIES`]).
fn summed_delivery(parts: &[Merged]) -> Delivery {
    let mut d = Delivery::default();
    for x in parts
        .iter()
        .map(|p| &p.result)
        .filter_map(|r| r.delivery.as_ref())
    {
        for (into, n) in [
            (&mut d.messages_sent, x.messages_sent),
            (&mut d.expected, x.expected),
            (&mut d.delivered, x.delivered),
            (&mut d.lost, x.lost),
            (&mut d.duplicated, x.duplicated),
            (&mut d.corrupted, x.corrupted),
            (&mut d.unexpected, x.unexpected),
            (&mut d.seen_by_idle, x.seen_by_idle),
            (&mut d.seen_by_poll, x.seen_by_poll),
            (&mut d.late, x.late),
            (&mut d.not_looked, x.not_looked),
            (&mut d.unreadable_mailboxes, x.unreadable_mailboxes),
        ] {
            *into = into.saturating_add(n);
        }
        let room = NAMED_COPIES.saturating_sub(d.corrupted_copies.len());
        d.corrupted_copies
            .extend(x.corrupted_copies.iter().take(room).cloned());
        let room = NAMED_COPIES.saturating_sub(d.lost_copies.len());
        d.lost_copies
            .extend(x.lost_copies.iter().take(room).cloned());
    }
    d
}

/// The parts' errors summed by class (the first message kept).
fn merged_errors(parts: &[Merged]) -> Vec<LoadgenError> {
    let mut errors: Vec<LoadgenError> = Vec::new();
    for e in parts.iter().map(|p| &p.result).flat_map(|r| &r.errors) {
        match errors.iter_mut().find(|m| m.class == e.class) {
            Some(m) => {
                m.count = m.count.saturating_add(e.count);
                if m.message.is_empty() {
                    m.message.clone_from(&e.message);
                }
            }
            None => errors.push(e.clone()),
        }
    }
    errors
}

#[cfg(test)]
mod tests {
    use super::*;
    use mbx_result::{ClientShare, CorruptedCopy, LoadgenThresholds};

    const MS: u64 = 1000;

    fn hist(values: &[(u64, u64)]) -> Histogram<u64> {
        let mut h = Histogram::new_with_bounds(1, 3_600_000_000, 3).expect("bounds");
        for (v, n) in values {
            h.record_n(*v, *n).expect("in range");
        }
        h
    }

    /// A client's day result as `loadgen run` writes it: tables from real histograms, the
    /// histograms encoded beside them. `read` and `delivery` are (microseconds, count).
    fn day(
        users: u64,
        read: &[(u64, u64)],
        delivery: &[(u64, u64)],
        idle: bool,
        start: &str,
        end: &str,
    ) -> LoadgenResult {
        let read_h = hist(read);
        let service_h = hist(&[(2 * MS, read_h.len())]);
        let fetch_h = hist(&[(3 * MS, read_h.len()), (40 * MS, 1)]);
        let delivery_h = hist(delivery);
        let mut r = nothing_merged("day-x", 1);
        r.test = LoadgenInfo {
            phase: "day".into(),
            run_id: "day-x".into(),
            start: start.into(),
            end: end.into(),
            duration_s: 60.0,
            machine: format!("client-{users}"),
            os: "linux 6.1".into(),
            tool_version: "0.1.0".into(),
            interrupted: false,
            start_unix_s: Some(1_800_000_000.0 + users as f64),
            partition: Some("1/2".into()),
        };
        r.config = LoadgenConfig {
            users,
            clients: vec![ClientShare {
                client: "desktop_imap".into(),
                share_pct: 100.0,
                users,
                tasks_per_user_day: 10.0,
            }],
            thresholds: LoadgenThresholds {
                tasks_achieved_pct: 99.0,
                task_p95_ms: 1000.0,
                delivery_p95_ms: 60_000.0,
            },
            ..LoadgenConfig::default()
        };
        r.tasks_planned = read_h.len() + 1;
        r.tasks_dispatched = read_h.len() + 1;
        r.tasks_completed = read_h.len();
        r.tasks_failed = 1;
        r.max_unfinished = users / 10;
        r.overload_limit = users * 2;
        r.tasks = vec![TaskRow {
            task: "read".into(),
            dispatched: read_h.len() + 1,
            completed: read_h.len(),
            skipped: 0,
            failed: [("timeout".to_string(), 1)].into(),
            latency_ms: latency_ms(&read_h),
            service_ms: latency_ms(&service_h),
        }];
        r.commands = vec![CommandRow {
            protocol: "imap".into(),
            command: "UID FETCH".into(),
            ok: fetch_h.len(),
            errors: BTreeMap::new(),
            latency_ms: latency_ms(&fetch_h),
            statuses: BTreeMap::new(),
        }];
        r.delivery = Some(Delivery {
            messages_sent: delivery_h.len(),
            expected: delivery_h.len(),
            delivered: delivery_h.len(),
            corrupted: 1,
            corrupted_copies: vec![CorruptedCopy {
                id: format!("day-x/{users}/1"),
                recipient: "u@example.com".into(),
                what: "body changed".into(),
            }],
            latency_ms: latency_ms(&delivery_h),
            measured_by: if idle { "idle" } else { "poll" }.into(),
            seen_by_idle: if idle { delivery_h.len() } else { 0 },
            seen_by_poll: if idle { 0 } else { delivery_h.len() },
            late: 0,
            ..Delivery::default()
        });
        r.errors = vec![LoadgenError {
            class: "timeout".into(),
            count: 1,
            message: format!("timeout on client-{users}"),
        }];
        r.stopped = Stopped::new(StopReason::VerdictFailed, "ran to its end");
        for (name, h) in [
            ("task.read", &read_h),
            ("service.read", &service_h),
            ("command.imap.UID FETCH", &fetch_h),
            ("delivery", &delivery_h),
            // No watcher ran: its histogram is there, empty (as `loadgen run` writes it).
            ("delivery.server", &hist(&[])),
        ] {
            r.histograms
                .insert(name.into(), hist::encode(name, h).expect("encodes"));
        }
        r
    }

    fn client(name: &str) -> ClientPart {
        ClientPart {
            name: name.into(),
            ssh: format!("root@{name}"),
            state: "passed".into(),
            partition: "1/2".into(),
            result: Some(format!("{name}/result.json")),
            start_error_ms: Some(1.5),
            ..ClientPart::default()
        }
    }

    fn part(name: &str, result: Option<LoadgenResult>) -> MergePart {
        MergePart {
            client: client(name),
            result,
        }
    }

    /// Client a: 95 reads at 10 ms and 5 at 2 s (p95 10 ms); client b: 100 at 100 ms (p95
    /// 100 ms). The union's p95 is 100 ms, not the 55 ms an average of the p95s would say.
    fn two() -> (LoadgenResult, LoadgenResult) {
        let a = day(
            100,
            &[(10 * MS, 95), (2000 * MS, 5)],
            &[(500 * MS, 40)],
            true,
            "2026-11-27T10:00:00Z",
            "2026-11-27T10:01:00Z",
        );
        let b = day(
            300,
            &[(100 * MS, 100)],
            &[(5000 * MS, 10)],
            false,
            "2026-11-27T09:59:58Z",
            "2026-11-27T10:01:05Z",
        );
        (a, b)
    }

    #[test]
    fn two_clients_merge_counts_summed_and_percentiles_of_the_union() {
        let (a, b) = two();
        let m = merge(
            "fleet-1",
            vec![part("a", Some(a.clone())), part("b", Some(b.clone()))],
        );
        // Counts are the sums.
        assert_eq!(m.config.users, 400);
        assert_eq!(m.config.clients[0].users, 400);
        assert_eq!(m.tasks_planned, a.tasks_planned + b.tasks_planned);
        assert_eq!(m.tasks_completed, 200);
        assert_eq!(m.tasks_failed, 2);
        assert_eq!(m.max_unfinished, 10 + 30);
        assert_eq!(m.overload_limit, 200 + 600);
        assert_eq!(m.tasks.len(), 1);
        assert_eq!(m.tasks[0].dispatched, 202);
        assert_eq!(m.tasks[0].failed["timeout"], 2);
        assert_eq!(m.commands[0].ok, 202);
        assert_eq!(m.commands[0].latency_ms.count, 202);
        assert_eq!(m.errors.len(), 1);
        assert_eq!(m.errors[0].count, 2);
        assert_eq!(m.errors[0].message, "timeout on client-100");
        let d = m.delivery.as_ref().expect("delivery");
        assert_eq!((d.delivered, d.expected, d.corrupted), (50, 50, 2));
        assert_eq!(d.corrupted_copies.len(), 2);
        assert_eq!(d.measured_by, "idle+poll");
        assert_eq!((d.seen_by_idle, d.seen_by_poll), (40, 10));

        // The p95 is the union's, not the average of the two.
        let union = hist(&[(10 * MS, 95), (2000 * MS, 5), (100 * MS, 100)]);
        let p95 = m.tasks[0].latency_ms.p95;
        assert_eq!(m.tasks[0].latency_ms, latency_ms(&union));
        assert!((p95 - 100.0).abs() < 0.1, "{p95}");
        let avg = (a.tasks[0].latency_ms.p95 + b.tasks[0].latency_ms.p95) / 2.0;
        assert!(
            (avg - 55.0).abs() < 0.1 && (p95 - avg).abs() > 40.0,
            "{avg}"
        );
        // Delivery: 40 copies at 0.5 s, 10 at 5 s: p95 of the union is 5 s.
        assert!(
            (d.latency_ms.p95 - 5000.0).abs() < 5.0,
            "{:?}",
            d.latency_ms
        );
        assert_eq!(d.latency_ms.count, 50);
        // The merged histograms are in the result and give the same figures again.
        let back = hist::decode_all(&m.histograms).expect("decodes");
        assert_eq!(back["task.read"], union);
        assert_eq!(back.len(), 5);

        // The test block: earliest start, latest end, the span between.
        assert_eq!(m.test.run_id, "fleet-1");
        assert_eq!(m.test.phase, "day");
        assert_eq!(m.test.start, "2026-11-27T09:59:58Z");
        assert_eq!(m.test.end, "2026-11-27T10:01:05Z");
        assert_eq!(m.test.duration_s, 67.0);
        assert_eq!(m.test.machine, "2 client machines");
        assert_eq!(m.test.start_unix_s, Some(1_800_000_100.0));
        assert_eq!(m.test.partition, None);

        // Verdict: day_verdict's checks on the merged figures; no client lost.
        assert!(m.verdict.check("clients_merged").is_none());
        let achieved = m.verdict.check("tasks_achieved_pct").expect("check");
        assert!((achieved.value - 200.0 * 100.0 / 202.0).abs() < 1e-9);
        assert_eq!(
            m.verdict
                .check("task_latency_p95_ms.read")
                .expect("check")
                .value,
            p95
        );
        assert_eq!(m.stopped.reason, StopReason::VerdictFailed);
        assert!(m.notes[0].contains("2 of 2") && m.notes[0].contains("a, b"));
        assert!(m.notes.iter().any(|n| n.contains("upper bound")));

        // Each client's own figures.
        let ca = &m.clients[0];
        assert!(ca.merged && ca.excluded.is_none());
        assert_eq!((ca.users, ca.tasks_completed, ca.delivered), (100, 100, 40));
        assert_eq!(ca.task_p95_ms_worst, Some(a.tasks[0].latency_ms.p95));
        assert_eq!(ca.verdict.as_deref(), Some("NOT JUDGED"));
        assert_eq!(ca.start_error_ms, Some(1.5));
        assert_eq!(ca.ssh, "root@a");
    }

    /// `r` as a client whose watcher listed `server` (microseconds, count) in `watched`
    /// mailboxes polled every 500 ms, its histogram beside the others.
    fn watched(mut r: LoadgenResult, server: &[(u64, u64)], watched: u64) -> LoadgenResult {
        let h = hist(server);
        let d = r.delivery.as_mut().expect("delivery");
        d.server_latency_ms = latency_ms(&h);
        d.server_measured_by = format!(
            "watcher: {watched} mailboxes polled every 500 ms (NOOP, then the new messages' X-Mbx-Id), {} connections",
            watched + 2
        );
        d.server_resolution_ms = 500.0;
        d.server_watched = watched;
        d.server_late = server
            .iter()
            .filter(|(v, _)| *v > 60_000 * MS)
            .map(|(_, n)| n)
            .sum();
        r.histograms.insert(
            hist::SERVER_DELIVERY.into(),
            hist::encode(hist::SERVER_DELIVERY, &h).expect("encodes"),
        );
        r
    }

    /// Client a's watcher: 38 copies at 0.3 s and 2 at 90 s (p95 0.3 s); b's: 10 at 70 s (p95
    /// 70 s). The union's p95 is 70 s, over the 60 s limit; the mean of the p95s (35 s) would
    /// pass. The user-seen latency (p95 5 s) passes: the verdict fails on the server's figure.
    #[test]
    fn the_merged_server_latency_is_the_union_s_and_the_verdict_judges_it() {
        let (a, b) = two();
        let a = watched(a, &[(300 * MS, 38), (90_000 * MS, 2)], 8);
        let b = watched(b, &[(70_000 * MS, 10)], 4);
        let m = merge(
            "fleet-6",
            vec![part("a", Some(a.clone())), part("b", Some(b.clone()))],
        );
        let d = m.delivery.as_ref().expect("delivery");
        let union = hist(&[(300 * MS, 38), (90_000 * MS, 2), (70_000 * MS, 10)]);
        assert_eq!(d.server_latency_ms, latency_ms(&union));
        let p95 = d.server_latency_ms.p95;
        assert!((p95 - 70_000.0).abs() < 70.0, "{p95}");
        let (pa, pb) = (
            a.delivery.as_ref().expect("a").server_latency_ms.p95,
            b.delivery.as_ref().expect("b").server_latency_ms.p95,
        );
        let mean = (pa + pb) / 2.0;
        assert!((mean - 35_150.0).abs() < 100.0, "{mean}");
        assert_eq!(d.server_latency_ms.count, 50);
        assert_eq!((d.server_watched, d.server_late), (12, 12));
        assert_eq!(d.server_resolution_ms, 500.0);
        assert!(
            d.server_measured_by
                .starts_with("per client: a: watcher: 8 mailboxes")
                && d.server_measured_by.contains("; b: watcher: 4 mailboxes"),
            "{}",
            d.server_measured_by
        );
        assert!(hist::decode_all(&m.histograms).expect("decodes")["delivery.server"] == union);
        // The verdict judges the server's figure, not the user-seen one (which passes).
        assert!(d.latency_ms.p95 <= m.config.thresholds.delivery_p95_ms);
        let c = m.verdict.check("delivery_latency_p95_ms").expect("check");
        assert_eq!((c.value, c.state()), (p95, CheckState::Fail));
        assert!(
            !m.notes.iter().any(|n| n.contains("not merged")),
            "{:?}",
            m.notes
        );
        // Exactly as one client's result is judged: b alone fails on its own server p95.
        let one = merge("fleet-7", vec![part("b", Some(b.clone()))]);
        let c = one.verdict.check("delivery_latency_p95_ms").expect("check");
        assert_eq!((c.value, c.state()), (pb, CheckState::Fail));
        let own = assemble::day_verdict(
            DayFigures {
                planned: b.tasks_planned,
                dispatched: b.tasks_dispatched,
                stress: false,
                completed: b.tasks_completed,
                max_unfinished: b.max_unfinished,
                overload_limit: b.overload_limit,
                overloaded: false,
                ended_early: false,
            },
            &b.tasks,
            b.delivery.as_ref().expect("delivery"),
            &b.config.thresholds,
        );
        assert_eq!(
            one.verdict.check("delivery_latency_p95_ms"),
            own.check("delivery_latency_p95_ms")
        );
        assert_eq!(
            one.delivery.as_ref().expect("delivery").server_measured_by,
            b.delivery.as_ref().expect("b").server_measured_by
        );
    }

    /// A client whose result has no server histogram (an older mbxstress): the merged figure
    /// is not the server's, the notes say so naming it, and the verdict judges the user-seen
    /// latency as a result without a watcher is judged.
    #[test]
    fn a_client_without_the_server_histogram_is_said_and_the_user_seen_latency_judged() {
        let (a, b) = two();
        let a = watched(a, &[(300 * MS, 38), (90_000 * MS, 2)], 8);
        let mut old = watched(b, &[(70_000 * MS, 10)], 4);
        old.histograms.remove(hist::SERVER_DELIVERY);
        old.test.tool_version = "0.0.9".into();
        let m = merge("fleet-8", vec![part("a", Some(a)), part("old", Some(old))]);
        assert!(m.clients.iter().all(|c| c.merged), "{:?}", m.clients);
        let d = m.delivery.as_ref().expect("delivery");
        assert_eq!(d.server_latency_ms.count, 0);
        assert_eq!((d.server_measured_by.as_str(), d.server_watched), ("", 0));
        assert!(!m.histograms.contains_key(hist::SERVER_DELIVERY));
        let note = m
            .notes
            .iter()
            .find(|n| n.contains("server delivery latency not merged"))
            .expect("a note says the figure is not the server's");
        assert!(
            note.contains("old (mbxstress 0.0.9)") && !note.contains("a ("),
            "{note}"
        );
        let c = m.verdict.check("delivery_latency_p95_ms").expect("check");
        assert_eq!((c.value, c.state()), (d.latency_ms.p95, CheckState::Pass));
        assert!((c.value - 5000.0).abs() < 5.0, "{}", c.value);
    }

    /// The IDLE probes: counts summed, slow when one client found it slow (and named), the lag
    /// from the merged histograms.
    #[test]
    fn idle_probes_merge_slow_when_any_client_found_it_slow() {
        let (mut a, mut b) = two();
        let probe = |r: &mut LoadgenResult, copies, prompt, slow, lag: &[(u64, u64)]| {
            let h = hist(lag);
            r.delivery.as_mut().expect("delivery").idle_probe = Some(IdleProbeFigures {
                probes: 2,
                copies,
                prompt,
                slow_after_s: 5.0,
                lag_ms: latency_ms(&h),
                slow,
                note: format!("slow {slow}"),
            });
            r.histograms.insert(
                hist::IDLE_LAG.into(),
                hist::encode(hist::IDLE_LAG, &h).expect("encodes"),
            );
        };
        probe(&mut a, 10, 10, false, &[(100 * MS, 10)]);
        probe(&mut b, 5, 0, true, &[(60_000 * MS, 5)]);
        let m = merge("fleet-9", vec![part("a", Some(a)), part("b", Some(b))]);
        let i = m
            .delivery
            .as_ref()
            .and_then(|d| d.idle_probe.clone())
            .expect("idle probe");
        assert_eq!((i.probes, i.copies, i.prompt, i.slow), (4, 15, 10, true));
        assert_eq!(i.lag_ms.count, 15);
        assert!((i.lag_ms.max - 60_000.0).abs() < 60.0, "{:?}", i.lag_ms);
        assert!(
            i.note.contains("1 of 2 probing clients (b)") && i.note.contains("slow true"),
            "{}",
            i.note
        );
    }

    #[test]
    fn clients_without_a_usable_result_are_excluded_and_fail_the_verdict() {
        let (a, _) = two();
        let mut old = a.clone();
        old.histograms.clear();
        let mut init = a.clone();
        init.test.phase = "init".into();
        let mut corrupt = a.clone();
        corrupt.histograms.insert("task.read".into(), "!!".into());
        let mut missing = a.clone();
        missing.histograms.remove("delivery");
        let mut lost = client("lost");
        lost.state = "failed".into();
        lost.result = None;
        lost.users = 7;
        let m = merge(
            "fleet-2",
            vec![
                part("a", Some(a.clone())),
                MergePart {
                    client: lost,
                    result: None,
                },
                part("old", Some(old)),
                part("init", Some(init)),
                part("corrupt", Some(corrupt)),
                part("missing", Some(missing)),
            ],
        );
        let why: Vec<(&str, Option<&str>)> = m
            .clients
            .iter()
            .map(|c| (c.name.as_str(), c.excluded.as_deref()))
            .collect();
        assert_eq!(why[0], ("a", None));
        assert_eq!(why[1], ("lost", Some("no result came back")));
        assert!(
            why[2].1.expect("old").contains("has no histograms"),
            "{why:?}"
        );
        assert!(
            why[3].1.expect("init").contains("not a day result"),
            "{why:?}"
        );
        let bad = why[4].1.expect("corrupt");
        assert!(bad.contains("task.read") && bad.contains("base64"), "{bad}");
        assert!(why[5].1.expect("missing").contains("no histogram delivery"));
        assert_eq!(m.clients.iter().filter(|c| c.merged).count(), 1);
        // The excluded keep their own figures; the one without a result, what the fleet said.
        assert_eq!(m.clients[2].tasks_completed, 100);
        assert_eq!(m.clients[1].users, 7);
        assert_eq!(m.clients[1].verdict, None);

        // The merged figures are a's alone.
        assert_eq!(m.tasks_completed, a.tasks_completed);
        assert_eq!(m.tasks[0].latency_ms, a.tasks[0].latency_ms);
        assert_eq!(m.config.users, 100);
        // A run that lost clients is not a pass.
        let c = m.verdict.check("clients_merged").expect("check");
        assert_eq!((c.value, c.limit, c.state()), (1.0, 6.0, CheckState::Fail));
        assert!(!m.verdict.pass());
        assert_eq!(m.stopped.reason, StopReason::VerdictFailed);
        assert!(m.notes[0].contains("1 of 6"), "{}", m.notes[0]);
        assert!(m.notes[0].contains("excluded: lost, old, init, corrupt, missing"));
    }

    #[test]
    fn no_result_at_all_is_a_result_not_judged() {
        let m = merge("fleet-3", vec![part("a", None), part("b", None)]);
        assert_eq!(m.verdict.state(), CheckState::NotJudged);
        assert_eq!(
            m.verdict.checks()[0].reason(),
            Some("no client's result came back")
        );
        assert!(m.clients.iter().all(|c| !c.merged && c.excluded.is_some()));
        assert_eq!((m.tasks_planned, m.tasks_completed), (0, 0));
        assert!(m.histograms.is_empty() && m.tasks.is_empty());
        assert_eq!(m.test.run_id, "fleet-3");
        assert_eq!(m.kind, LOADGEN_KIND);
        // And with no client at all.
        let m = merge("fleet-4", Vec::new());
        assert_eq!(m.verdict.state(), CheckState::NotJudged);
    }

    #[test]
    fn an_interrupted_client_makes_the_merged_run_interrupted() {
        let (a, mut b) = two();
        b.test.interrupted = true;
        let m = merge("fleet-5", vec![part("a", Some(a)), part("b", Some(b))]);
        assert!(m.test.interrupted);
        assert_eq!(m.stopped.reason, StopReason::Interrupted);
        // Stopped early: copies not seen yet are not judged lost.
        assert_eq!(
            m.verdict.check("messages_lost").map(|c| c.state()),
            Some(CheckState::NotJudged)
        );
    }

    #[test]
    fn timestamps_read_back_as_mbx_engine_writes_them() {
        for t in [0u64, 951_782_400, 1_800_000_000, 4_102_444_799] {
            let s = mbx_engine::rfc3339(std::time::UNIX_EPOCH + std::time::Duration::from_secs(t));
            assert_eq!(unix_of(&s), Some(t as i64), "{s}");
        }
        assert_eq!(unix_of("2026-11-27 10:00:00"), None);
        assert_eq!(unix_of("2026-13-27T10:00:00Z"), None);
    }
}
