//! A loadgen phase's text: its status line while it runs, then the verdict, the tasks or the
//! fill, delivery and errors.

use std::fmt::{self, Write as _};
use std::path::Path;

use super::fmt_secs;
use super::run::verdict_checks;
use crate::event::LoadgenProgress;
use crate::num::num;

/// The status line of a loadgen phase: done of total, rates, what is unfinished or failed.
pub(super) fn progress_line(p: &LoadgenProgress) -> String {
    let eta = p
        .eta_s
        .map(|s| format!(" (ETA {})", fmt_secs(s)))
        .unwrap_or_default();
    let pct = if p.total > 0 {
        p.done as f64 * 100.0 / p.total as f64
    } else {
        100.0
    };
    let mut line = format!(
        "[{}] {}{eta} | {} of {} {} ({pct:.0}%)",
        p.phase,
        fmt_secs(p.elapsed_s),
        num(p.done as f64, 0),
        num(p.total as f64, 0),
        p.unit
    );
    if let Some(mb) = p.mb_per_s {
        line.push_str(&format!(
            " | {} msg/s, {} MB/s",
            num(p.per_s, 0),
            num(mb, 1)
        ));
    } else if p.unit == "tasks" {
        line.push_str(&format!(" | {} tasks/s", num(p.per_s, 1)));
    }
    if let Some(u) = p.unfinished {
        line.push_str(&format!(" | {} unfinished", num(u as f64, 0)));
    }
    if let (Some(d), Some(t)) = (p.users_done, p.users_total) {
        line.push_str(&format!(" | users {d}/{t}"));
    }
    if p.failed > 0 {
        line.push_str(&format!(" | {} failed", num(p.failed as f64, 0)));
    }
    line
}

/// The summary of a loadgen phase: the verdict, the tasks or the fill, delivery, errors.
pub(super) fn end(
    o: &mut String,
    r: &mbx_result::LoadgenResult,
    path: &Path,
    report: Option<&Path>,
) -> fmt::Result {
    writeln!(o)?;
    let what = match r.test.phase.as_str() {
        "init" => "loadgen init",
        "idle" => "loadgen idle",
        "submit" => "loadgen submit",
        _ => "loadgen run",
    };
    let who = match &r.submit {
        Some(s) => format!("{} connections", s.connections),
        None => format!("{} users", r.config.users),
    };
    writeln!(
        o,
        "{} | {what} | {who} | {}",
        r.verdict.state().headline(),
        fmt_secs(r.test.duration_s)
    )?;
    if !r.stopped.reason.ran_to_completion() || r.overloaded {
        writeln!(o, "  stopped: {}", r.stopped.message)?;
    }
    verdict_checks(o, &r.verdict, |c| c.strict_max_ms())?;
    if let Some(i) = &r.init {
        writeln!(
            o,
            "  mailboxes filled {} of {} ({} failed); messages there {}, appended {} ({} MB) in {}: {} messages/s, {} MB/s",
            i.users_done,
            r.config.users,
            i.users_failed,
            num(i.messages_found as f64, 0),
            num(i.messages_appended as f64, 0),
            num(i.bytes_appended as f64 / 1e6, 1),
            fmt_secs(i.duration_s),
            num(i.messages_per_s, 0),
            num(i.mb_per_s, 1)
        )?;
    }
    idle(o, r)?;
    if let Some(s) = &r.submit {
        writeln!(
            o,
            "  messages accepted {} of {} ({} failed, {} unsent), {} MB over {} sessions in {}: {} messages/s, {} MB/s; client CPU {} us per message",
            num(s.accepted as f64, 0),
            num(s.messages as f64, 0),
            num(s.failed as f64, 0),
            num(s.unsent as f64, 0),
            num(s.bytes as f64 / 1e6, 1),
            num(s.connections as f64, 0),
            fmt_secs(s.duration_s),
            num(s.messages_per_s, 0),
            num(s.mb_per_s, 1),
            num(s.client_cpu_us_per_message, 0)
        )?;
    }
    tasks(o, r)?;
    delivery(o, r)?;
    for e in &r.errors {
        writeln!(
            o,
            "  errors {}: {} (first: {})",
            e.class, e.count, e.message
        )?;
    }
    writeln!(o, "Result: {}", path.display())?;
    if let Some(p) = report {
        writeln!(o, "Report: {}", p.display())?;
    }
    Ok(())
}

/// Held idle connections: how many, what they cost the server.
fn idle(o: &mut String, r: &mbx_result::LoadgenResult) -> fmt::Result {
    if let Some(i) = &r.idle {
        writeln!(
            o,
            "  connections {}: {} established in {} ({}/s), {} failed, {} dropped, {} open after {} held",
            i.security,
            num(i.established as f64, 0),
            fmt_secs(i.establish_s),
            num(i.established_per_s, 0),
            num(i.failed as f64, 0),
            num(i.dropped as f64, 0),
            num(i.open_at_end as f64, 0),
            fmt_secs(i.hold_s)
        )?;
        match (i.rss_per_connection_bytes, i.cpu_idle_pct) {
            (Some(b), Some(c)) => writeln!(
            o,
                "  memory {} KiB per connection (RSS {} MiB held, {} MiB before); CPU while idle {}% of one core",
                num(b / 1024.0, 1),
                num(i.rss_held_bytes.unwrap_or(0) as f64 / 1_048_576.0, 1),
                num(i.rss_baseline_bytes.unwrap_or(0) as f64 / 1_048_576.0, 1),
                num(c, 2)
            )?,
            _ => writeln!(o, "  memory and CPU: {}", i.measured_by)?,
        }
    }
    Ok(())
}

/// The day's tasks: completed of planned, then one row per task.
fn tasks(o: &mut String, r: &mbx_result::LoadgenResult) -> fmt::Result {
    if !r.tasks.is_empty() {
        writeln!(
            o,
            "  tasks: {} of {} planned completed, {} failed, at most {} unfinished (limit {})",
            num(r.tasks_completed as f64, 0),
            num(r.tasks_planned as f64, 0),
            num(r.tasks_failed as f64, 0),
            num(r.max_unfinished as f64, 0),
            num(r.overload_limit as f64, 0)
        )?;
        writeln!(
            o,
            "  {:<14} {:>10} {:>10} {:>8} {:>8} {:>10} {:>10} {:>10}",
            "task", "dispatched", "completed", "skipped", "failed", "p50 ms", "p95 ms", "max ms"
        )?;
        for t in &r.tasks {
            writeln!(
                o,
                "  {:<14} {:>10} {:>10} {:>8} {:>8} {:>10.1} {:>10.1} {:>10.1}",
                t.task,
                t.dispatched,
                t.completed,
                t.skipped,
                t.failed.values().sum::<u64>(),
                t.latency_ms.p50,
                t.latency_ms.p95,
                t.latency_ms.max
            )?;
        }
    }
    Ok(())
}

/// Delivery: copies delivered, late, lost, corrupted, and how fast.
fn delivery(o: &mut String, r: &mbx_result::LoadgenResult) -> fmt::Result {
    if let Some(d) = &r.delivery {
        writeln!(
            o,
            "  delivery: {} of {} copies delivered ({} late), {}, {} corrupted, {} duplicated, {} unexpected; latency p50 {} ms, p95 {} ms, max {} ms ({})",
            num(d.delivered as f64, 0),
            num(d.expected as f64, 0),
            d.late,
            crate::loadgen::lost_words(
                d.lost,
                r.verdict.not_judged().any(|c| c.name == "messages_lost")
            ),
            d.corrupted,
            d.duplicated,
            d.unexpected,
            num(d.latency_ms.p50, 0),
            num(d.latency_ms.p95, 0),
            num(d.latency_ms.max, 0),
            d.measured_by
        )?;
        if d.server_latency_ms.count > 0 {
            writeln!(
            o,
                "  server delivery latency (judged): p50 {} ms, p95 {} ms, max {} ms, {} late ({}; resolution {} ms); the latency above is user-seen (the users' own clients), not judged",
                num(d.server_latency_ms.p50, 0),
                num(d.server_latency_ms.p95, 0),
                num(d.server_latency_ms.max, 0),
                d.server_late,
                d.server_measured_by,
                num(d.server_resolution_ms, 0)
            )?;
        }
        if let Some(i) = &d.idle_probe {
            writeln!(o, "  IDLE: {}", i.note)?;
        }
        for c in &d.corrupted_copies {
            writeln!(o, "  corrupted: {} in {}: {}", c.id, c.recipient, c.what)?;
        }
        for c in d.lost_copies.iter().take(10) {
            writeln!(o, "  lost: {} in {}: {}", c.id, c.recipient, c.what)?;
        }
    }
    Ok(())
}
