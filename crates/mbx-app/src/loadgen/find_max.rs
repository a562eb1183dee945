//! `loadgen find-max`: the largest user count a mail system carries with every check of
//! `loadgen run`'s verdict passing. The search is the storage find-max's
//! ([`mbx_engine::search::Search`]: a ramp doubling from `--start-users`, then a bisection to
//! within `--resolution-pct`, a failing bound re-checked once), each step a whole `loadgen run`
//! (baseline, day, grace, verdict) of the first N users on the same profile and client mix;
//! then the answer is confirmed by [`CONFIRM_PASSES`] more steps in a row at it (backing off
//! [`CONFIRM_BACKOFF`] while one fails, at most `--confirmations` times).
//!
//! The search is [`search`] over a probe `users -> step` so it runs without a server (the
//! tests drive it with a model whose latency rises past a known count); `find_max_run.rs` is
//! the probe on a real mail system (mailboxes filled once for the largest count tried) and
//! `find_max_html.rs` the curve. This file names neither: the types and the search are here,
//! the two depend on them one way.

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use mbx_engine::search::{Direction, Search, SearchEnd, SearchSpec, StepOutcome};
use mbx_result::{CheckState, LoadgenResult};
use serde::{Deserialize, Serialize};

use crate::AppError;

/// find-max.json's schema.
pub const SCHEMA: &str = "mbxstress.loadgen-find-max/1";
/// Confirmation steps in a row that must pass at the answer (as the storage find-max).
pub const CONFIRM_PASSES: usize = mbx_engine::findmax::CONFIRM_PASSES;
/// A failed confirmation moves the answer down by this fraction (as the storage find-max).
pub const CONFIRM_BACKOFF: f64 = mbx_engine::findmax::CONFIRM_BACKOFF;
/// The failed check's name of a step in which no check judged anything.
pub const NOTHING_JUDGED: &str = "nothing_judged";
/// The fewest users a step runs: a day needs two (each message goes to other users; one
/// user's sends are refused for want of a recipient).
pub const MIN_USERS: u64 = 2;
/// Default first count.
pub const DEFAULT_START_USERS: u64 = 50;
/// Default most search steps (confirmations and re-checks not counted).
pub const DEFAULT_MAX_STEPS: usize = 12;
/// Default resolution: the search ends when a pass and a fail are within 5% of the answer.
pub const DEFAULT_RESOLUTION_PCT: f64 = 5.0;
/// Default failed confirmations before the answer is reported unconfirmed.
pub const DEFAULT_CONFIRMATIONS: usize = 3;
/// Default step length (`--step`): the first 10 minutes of the day, at its real rate.
pub const DEFAULT_STEP: Duration = Duration::from_secs(600);

/// How the search proceeds.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Settings {
    /// First count (clamped to `1..=max_users`).
    pub start_users: u64,
    /// Largest count: the users given.
    pub max_users: u64,
    /// Bracket width to stop at, percent of the answer.
    pub resolution_pct: f64,
    /// Most search steps.
    pub max_steps: usize,
    /// Failed confirmations allowed (0: no confirmation).
    pub confirmations: usize,
}

/// One step: a `loadgen run` at `users`, as the curve needs it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, Default)]
pub struct Step {
    /// Users in the step.
    pub users: u64,
    /// Every check of the verdict passed.
    pub pass: bool,
    /// A confirmation run of the answer (not a search step).
    pub confirmation: bool,
    /// An interruption ended it: neither a pass nor a failure.
    pub interrupted: bool,
    /// The checks that failed, by name (`task_latency_p95_ms.send`, `task_queue_max`,
    /// `delivery_server_p95_ms`, `messages_lost`, ...).
    pub failed_checks: Vec<String>,
    /// The checks that judged nothing in the step, with why (not failures: see [`Step::of`]).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub not_judged: Vec<String>,
    /// Tasks completed per second of the step's day.
    pub tasks_per_s: f64,
    /// Each task type's 95th-percentile latency from its scheduled time, ms.
    pub task_p95_ms: BTreeMap<String, f64>,
    /// The server's delivery latency, 95th percentile, ms (SMTP acceptance to the copy in the
    /// recipient's mailbox, by the server's own time stamps), when measured.
    pub server_delivery_p95_ms: Option<f64>,
    /// Errors by class (`auth`, `connect`, `timeout`, `rejected`, ...).
    pub errors: BTreeMap<String, u64>,
    /// Wall seconds the step took (baseline, day and grace).
    pub elapsed_s: f64,
    /// The step's result.json, relative to find-max.json's folder.
    pub result: String,
}

impl Step {
    /// The curve's figures of a `loadgen run` result at `users`. The step passes when no check
    /// failed and at least one passed: a check that judged nothing (too few tasks of a type in
    /// a short step, no copy delivered yet) is listed in `not_judged`, never counted as a
    /// failure, so a failing step always names the check that failed. A step in which no
    /// check judged anything fails as `nothing_judged` (it proved nothing).
    pub fn of(users: u64, r: &LoadgenResult, elapsed_s: f64, result: String) -> Step {
        let day_s = r.test.duration_s.max(f64::MIN_POSITIVE);
        let checks = r.verdict.checks();
        let mut failed_checks: Vec<String> = checks
            .iter()
            .filter(|c| c.state() == CheckState::Fail)
            .map(|c| c.name.clone())
            .collect();
        let judged_pass = checks.iter().any(|c| c.state() == CheckState::Pass);
        if failed_checks.is_empty() && !judged_pass && !r.test.interrupted {
            failed_checks.push(NOTHING_JUDGED.into());
        }
        Step {
            users,
            pass: failed_checks.is_empty() && !r.test.interrupted,
            confirmation: false,
            interrupted: r.test.interrupted,
            failed_checks,
            not_judged: checks
                .iter()
                .filter(|c| c.state() == CheckState::NotJudged)
                .map(|c| match c.reason() {
                    Some(why) => format!("{} ({why})", c.name),
                    None => c.name.clone(),
                })
                .collect(),
            tasks_per_s: r.tasks_completed as f64 / day_s,
            task_p95_ms: r
                .tasks
                .iter()
                .filter(|t| t.latency_ms.count > 0)
                .map(|t| (t.task.clone(), t.latency_ms.p95))
                .collect(),
            server_delivery_p95_ms: r
                .delivery
                .as_ref()
                .filter(|d| d.server_latency_ms.count > 0)
                .map(|d| d.server_latency_ms.p95),
            errors: r
                .errors
                .iter()
                .map(|e| (e.class.clone(), e.count))
                .collect(),
            elapsed_s,
            result,
        }
    }
}

/// Whether the answer held its confirmation steps: the storage find-max's type (the same keys in
/// find-max.json), its runs being steps here.
pub use mbx_result::Confirmation;

/// What the search found (find-max.json).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct FindMax {
    /// [`SCHEMA`].
    pub schema: String,
    /// The largest count at which some step passed and every try that ran to its end passed.
    pub users: Option<u64>,
    /// Its confirmation.
    pub confirmation: Option<Confirmation>,
    /// No step above the answer failed: the mail system may carry more (the users given ran
    /// out, or the steps did).
    pub lower_bound: bool,
    /// The checks that failed at the nearest failing count above the answer: what limited
    /// the next count up.
    pub limited_by: Vec<String>,
    /// That count.
    pub limited_at_users: Option<u64>,
    /// `converged`, `bound` (the users given all passed), `steps`, `interrupted`,
    /// `unconfirmed`.
    pub end: String,
    /// Wall seconds of the whole search (server time: every step's baseline, day and grace).
    pub elapsed_s: f64,
    /// The search's settings.
    pub start_users: u64,
    /// Users given (the largest count tried at most).
    pub max_users: u64,
    /// Resolution, percent.
    pub resolution_pct: f64,
    /// Most search steps.
    pub max_steps: usize,
    /// Every step in the order run, confirmations included.
    pub steps: Vec<Step>,
}

/// Progress the search reports before each step.
#[derive(Debug, Clone, PartialEq)]
pub struct StepStart {
    /// 1-based index of the run (confirmations and re-checks included).
    pub index: usize,
    /// Users.
    pub users: u64,
    /// A confirmation step.
    pub confirmation: bool,
    /// Seconds into the search.
    pub elapsed_s: f64,
    /// At most this many seconds left (steps left and confirmations, at the mean step so
    /// far), once a step has run.
    pub eta_s: Option<f64>,
}

impl StepStart {
    /// The progress line.
    pub fn line(&self) -> String {
        let what = if self.confirmation {
            "confirmation"
        } else {
            "step"
        };
        let eta = self
            .eta_s
            .map(|s| format!("; about {s:.0} s left"))
            .unwrap_or_default();
        format!(
            "loadgen find-max: {what} {} ({} users) is starting, {:.0} s into the search{eta}.",
            self.index, self.users, self.elapsed_s
        )
    }
}

/// Runs the search: `probe(start)` runs one step. `cancel` (or a step that reports it was
/// interrupted) ends it with the largest pass so far.
pub fn search(
    s: Settings,
    cancel: &AtomicBool,
    elapsed: &dyn Fn() -> f64,
    probe: &mut dyn FnMut(&StepStart) -> Result<Step, AppError>,
) -> Result<FindMax, AppError> {
    let max = s.max_users.max(MIN_USERS);
    let mut search = Search::new(SearchSpec {
        direction: Direction::LargestPassing,
        start: s.start_users.clamp(MIN_USERS, max),
        min: MIN_USERS,
        max,
        growth: 2.0,
        resolution: s.resolution_pct.max(0.0) / 100.0,
        max_steps: s.max_steps.max(1),
    });
    let mut steps: Vec<Step> = Vec::new();
    let mut end = String::new();
    let eta = |steps: &[Step], left: usize| -> Option<f64> {
        let n = steps.len();
        (n > 0).then(|| {
            let mean = steps.iter().map(|x| x.elapsed_s).sum::<f64>() / n as f64;
            (left + CONFIRM_PASSES) as f64 * mean
        })
    };
    while let Some(users) = search.next() {
        if cancel.load(Ordering::Relaxed) {
            end = "interrupted".into();
            break;
        }
        let left = steps_left(&s, &steps, users).min(s.max_steps.saturating_sub(search.steps()));
        let step = probe(&StepStart {
            index: steps.len() + 1,
            users,
            confirmation: false,
            elapsed_s: elapsed(),
            eta_s: eta(&steps, left),
        })?;
        let (pass, interrupted) = (step.pass, step.interrupted);
        steps.push(step);
        if interrupted || cancel.load(Ordering::Relaxed) {
            end = "interrupted".into();
            break;
        }
        search.record(StepOutcome {
            value: users,
            pass,
            achieved_ratio: None,
        });
    }
    if end.is_empty() {
        end = match search.end() {
            Some(SearchEnd::Converged) | None => "converged",
            Some(SearchEnd::Bound) => "bound",
            Some(SearchEnd::Steps) => "steps",
        }
        .into();
    }
    let mut why = None;
    if end != "interrupted" && s.confirmations > 0 {
        why = confirm(s, cancel, elapsed, probe, &mut steps, &mut end)?;
    } else if s.confirmations == 0 {
        why = Some("no confirmation steps (--confirmations 0)".into());
    } else {
        why = why.or(Some("interrupted before its confirmation".into()));
    }
    Ok(record(s, steps, end, why, elapsed()))
}

/// The search steps still to run, this one (at `next`) included, if every step from here
/// takes the path the bracket so far suggests: the ramp's doublings to the users given while
/// nothing failed, then the bisection's halvings of the bracket to the resolution.
fn steps_left(s: &Settings, steps: &[Step], next: u64) -> usize {
    let done = || steps.iter().filter(|x| !x.interrupted && !x.confirmation);
    let lo = done()
        .filter(|x| x.pass)
        .map(|x| x.users)
        .max()
        .unwrap_or(MIN_USERS);
    let hi = done()
        .filter(|x| !x.pass && x.users > lo)
        .map(|x| x.users)
        .min();
    let res = (s.resolution_pct.max(0.0) / 100.0).max(f64::MIN_POSITIVE);
    let halvings = |width: f64, at: f64| -> usize {
        let target = (res * at).max(1.0);
        if width <= target {
            0
        } else {
            (width / target).log2().ceil() as usize
        }
    };
    match hi {
        // Bracketed: this step and the halvings after it.
        Some(hi) => 1 + halvings(hi.saturating_sub(lo) as f64 / 2.0, lo as f64),
        None => {
            // Ramping: the doublings to the users given, then a bracket as wide as the last
            // doubling, bisected.
            let max = s.max_users.max(next) as f64;
            let next = next.max(1) as f64;
            let ramp = (max / next).log2().ceil().max(0.0) as usize + 1;
            ramp + halvings(next / 2.0, next / 2.0)
        }
    }
}

/// Confirms the answer so far: [`CONFIRM_PASSES`] passes in a row at it, backing off while
/// one fails. Returns why it is not confirmed, when it is not.
fn confirm(
    s: Settings,
    cancel: &AtomicBool,
    elapsed: &dyn Fn() -> f64,
    probe: &mut dyn FnMut(&StepStart) -> Result<Step, AppError>,
    steps: &mut Vec<Step>,
    end: &mut String,
) -> Result<Option<String>, AppError> {
    let mut candidate = largest_passing(steps);
    let (mut passes, mut failures) = (0usize, 0usize);
    while let Some(users) = candidate {
        if failures == s.confirmations {
            *end = "unconfirmed".into();
            return Ok(Some(format!("{failures} confirmation steps failed")));
        }
        let mean = steps.iter().map(|x| x.elapsed_s).sum::<f64>() / steps.len().max(1) as f64;
        let step = probe(&StepStart {
            index: steps.len() + 1,
            users,
            confirmation: true,
            elapsed_s: elapsed(),
            eta_s: Some((CONFIRM_PASSES - passes) as f64 * mean),
        })?;
        let step = Step {
            confirmation: true,
            ..step
        };
        let (pass, interrupted) = (step.pass, step.interrupted);
        steps.push(step);
        if interrupted || cancel.load(Ordering::Relaxed) {
            *end = "interrupted".into();
            return Ok(Some(format!(
                "interrupted during a confirmation at {users}"
            )));
        }
        if pass {
            passes += 1;
            if passes == CONFIRM_PASSES {
                return Ok(None);
            }
            continue;
        }
        failures += 1;
        passes = 0;
        let lower = ((users as f64) * (1.0 - CONFIRM_BACKOFF)).floor() as u64;
        candidate = (lower >= MIN_USERS && lower < users).then_some(lower);
    }
    Ok(Some("no count passed to confirm".into()))
}

/// The largest count at which some step passed and every step that ran to its end passed.
fn largest_passing(steps: &[Step]) -> Option<u64> {
    let tries = || steps.iter().filter(|s| !s.interrupted);
    tries()
        .filter(|s| s.pass)
        .map(|s| s.users)
        .filter(|&m| tries().all(|s| s.users != m || s.pass))
        .max()
}

fn record(
    s: Settings,
    steps: Vec<Step>,
    end: String,
    why: Option<String>,
    elapsed_s: f64,
) -> FindMax {
    let answer = largest_passing(&steps);
    let required = CONFIRM_PASSES as u32;
    let confirmation = answer.map(|m| {
        let passed = steps
            .iter()
            .filter(|x| x.confirmation && x.pass && !x.interrupted && x.users == m)
            .count() as u32;
        let confirmed = s.confirmations > 0 && passed >= required;
        Confirmation {
            passed,
            required,
            confirmed,
            why: (!confirmed).then(|| {
                why.clone()
                    .unwrap_or_else(|| format!("{passed} of {required} confirmation steps passed"))
            }),
        }
    });
    // What limited the next count up: the nearest count above the answer that failed.
    let limit = steps
        .iter()
        .filter(|x| !x.pass && !x.interrupted && answer.is_none_or(|a| x.users > a))
        .min_by_key(|x| x.users);
    FindMax {
        schema: SCHEMA.into(),
        users: answer,
        confirmation,
        lower_bound: limit.is_none(),
        limited_by: limit.map(|x| x.failed_checks.clone()).unwrap_or_default(),
        limited_at_users: limit.map(|x| x.users),
        end,
        elapsed_s,
        start_users: s.start_users,
        max_users: s.max_users,
        resolution_pct: s.resolution_pct,
        max_steps: s.max_steps,
        steps,
    }
}

/// A step's test-log line.
pub fn step_line(s: &Step) -> String {
    let verdict = if s.interrupted {
        "interrupted".to_string()
    } else if s.pass && s.not_judged.is_empty() {
        "pass".to_string()
    } else if s.pass {
        // Said, so a step too short to judge a check is seen as such.
        format!("pass (not judged: {})", s.not_judged.join(", "))
    } else {
        format!("fail ({})", s.failed_checks.join(", "))
    };
    format!(
        "loadgen find-max: {} users: {:.2} tasks/s, slowest task p95 {:.0} ms, server delivery p95 {}: {verdict}.",
        s.users,
        s.tasks_per_s,
        s.task_p95_ms.values().copied().fold(0.0, f64::max),
        s.server_delivery_p95_ms
            .map(|v| format!("{v:.0} ms"))
            .unwrap_or_else(|| "not measured".into()),
    )
}

/// The closing line.
pub fn closing_line(f: &FindMax) -> String {
    match f.users {
        Some(u) => format!(
            "loadgen find-max: {u} users passed, no check failed ({}{}; {}{}), {} steps, {:.0} s.",
            match &f.confirmation {
                Some(c) if c.confirmed => "confirmed".to_string(),
                Some(c) => format!("unconfirmed: {}", c.why.clone().unwrap_or_default()),
                None => "unconfirmed".into(),
            },
            if f.lower_bound { ", a lower bound" } else { "" },
            f.end,
            match f.limited_at_users {
                Some(n) => format!("; {n} users failed {}", f.limited_by.join(", ")),
                None => String::new(),
            },
            f.steps.len(),
            f.elapsed_s
        ),
        None => format!(
            "loadgen find-max: no user count passed ({}, {} steps).",
            f.end,
            f.steps.len()
        ),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn settings(max: u64) -> Settings {
        Settings {
            start_users: 50,
            max_users: max,
            resolution_pct: 5.0,
            max_steps: 12,
            confirmations: 3,
        }
    }

    fn step(users: u64, pass: bool) -> Step {
        Step {
            users,
            pass,
            failed_checks: if pass {
                vec![]
            } else {
                vec!["task_latency_p95_ms.send".into()]
            },
            elapsed_s: 10.0,
            ..Step::default()
        }
    }

    #[test]
    fn the_eta_counts_the_ramp_then_the_bisection_then_the_confirmations() {
        let s = settings(1000);
        // From 50: 50, 100, 200, 400, 800, 1000, then a bracket of 500 halved to 5% of 500.
        assert_eq!(steps_left(&s, &[], 50), 6 + 5);
        // 400 passed, 800 failed: this step (600) and the halvings of 200 to 20.
        let tried = [step(400, true), step(800, false)];
        assert_eq!(steps_left(&s, &tried, 600), 1 + 4);
        let cancel = AtomicBool::new(false);
        let mut etas = Vec::new();
        search(s, &cancel, &|| 0.0, &mut |st| {
            etas.push(st.eta_s);
            Ok(step(st.users, st.users <= 400))
        })
        .expect("searched");
        assert_eq!(etas[0], None, "no step has run: no mean to estimate from");
        // After one 10 s step from 100: 200, 400, 800, 1000 and the halvings, and the
        // confirmations.
        assert_eq!(etas[1], Some(((5 + 5) + CONFIRM_PASSES) as f64 * 10.0));
        assert!(etas.iter().skip(1).all(|e| e.is_some()));
    }

    #[test]
    fn an_interruption_before_any_step_reports_nothing_passed() {
        let cancel = AtomicBool::new(true);
        let f =
            search(settings(1000), &cancel, &|| 0.0, &mut |_| Ok(step(1, true))).expect("searched");
        assert_eq!(f.users, None);
        assert_eq!(f.end, "interrupted");
        assert!(f.steps.is_empty());
    }

    #[test]
    fn every_count_passing_ends_at_the_users_given_as_a_lower_bound() {
        let cancel = AtomicBool::new(false);
        let f = search(settings(300), &cancel, &|| 0.0, &mut |s| {
            Ok(step(s.users, true))
        })
        .expect("searched");
        assert_eq!(f.users, Some(300));
        assert!(f.lower_bound);
        assert_eq!(f.end, "bound");
        assert_eq!(f.confirmation.as_ref().map(|c| c.confirmed), Some(true));
        let tried: Vec<u64> = f.steps.iter().map(|s| s.users).collect();
        assert_eq!(tried, [50, 100, 200, 300, 300, 300]);
    }

    #[test]
    fn a_failed_confirmation_backs_off_and_the_answer_is_what_held() {
        // 400 passes in the search but fails the first confirmation; 380 holds.
        let cancel = AtomicBool::new(false);
        let mut confirmations_at_400 = 0;
        let f = search(settings(10_000), &cancel, &|| 0.0, &mut |s| {
            if s.confirmation && s.users == 400 {
                confirmations_at_400 += 1;
                return Ok(step(400, false));
            }
            Ok(step(s.users, s.users <= 400))
        })
        .expect("searched");
        assert_eq!(confirmations_at_400, 1);
        assert_eq!(f.users, Some(380));
        assert_eq!(f.confirmation.as_ref().map(|c| c.confirmed), Some(true));
        assert_eq!(f.limited_by, ["task_latency_p95_ms.send"]);
    }
}
