//! Automatic tuning (Jetstress's default, `threads` 0): short steps at different session
//! counts, each a [`Plan::search_step`] on the same databases, find the smallest count whose
//! transactional IOPS meet the target with every threshold met ([`crate::search`] chooses the
//! counts). Running a step is the caller's: the CLI runs it on the prepared databases, a test on
//! the simulated device.
//!
//! The log says what Jetstress's says ("Automatic tuning is starting.", "N sessions have actual
//! X IOPS (target IOPS: T)"), plus why a step failed; the steps go into result.json (`tuning`).

use std::sync::atomic::{AtomicBool, Ordering};

use mbx_config::{RunConfig, MAX_THREADS};

use crate::plan::Plan;
use crate::result::{RunResult, SearchStep, StopReason, Tuning};
use crate::search::{Direction, Search, SearchEnd, SearchSpec, StepOutcome};
use crate::{EngineError, Observer, RunEvent};

/// The line a stability check logs (and notes) when latency did not settle: a step whose
/// result carries it measured unstable latency.
pub(crate) const UNSTABLE: &str = "Read latency did not settle";

/// What tuning found: the record, and the session count to run the test with (none when no
/// count passed or tuning was stopped).
#[derive(Debug)]
pub struct Tuned {
    /// The record for result.json.
    pub tuning: Tuning,
    /// The last step's result (what a test that cannot go on reports).
    pub last: Option<RunResult>,
}

/// Passes a step's events on: its log lines prefixed with the step and its progress; its phases
/// and samples are the step's own, not the test's, and are dropped.
pub(crate) struct StepObserver<'a> {
    pub inner: &'a mut dyn Observer,
    pub prefix: String,
}

impl Observer for StepObserver<'_> {
    fn on_event(&mut self, e: RunEvent<'_>) {
        match e {
            RunEvent::Log(line) => {
                let line = format!("{}{line}", self.prefix);
                self.inner.on_event(RunEvent::Log(&line));
            }
            // The step's own phases and samples are not the test's: progress says where it is.
            RunEvent::Sample(_) | RunEvent::Phase(_) => {}
            other => self.inner.on_event(other),
        }
    }

    fn on_search_line(&mut self, line: &str) {
        self.inner.on_search_line(&format!("{}{line}", self.prefix));
    }
}

/// Transactional I/Os per transaction assumed before a step has counted any: the Jetstress mix
/// at the cache sizes mbxstress runs comes to about 3 (measured: 3.3 in runs of 36 and 100 IOPS
/// on this project's machine, 2.9 to 3.1 on the simulated device). With fewer reads per
/// transaction (a database the cache holds) more transactions are counted: an assumption on the
/// safe side for deciding whether a step is long enough.
pub const IOS_PER_TXN: f64 = 3.0;

/// The longest step automatic tuning lengthens its steps to (the top of the automatic range).
pub const MAX_AUTO_STEP_S: f64 = 60.0;

/// The longest `--tuning-step` (`tuning.step_s`) a configuration takes.
const MAX_STEP_S: f64 = 3600.0;

/// How long tuning's steps measure, and whether that is long enough to decide.
///
/// A step decides whether a session count meets the target when one standard error of its
/// count is within the IOPS margin: a Poisson count of M transactions has a relative error of
/// 1 / sqrt(M), so M must be at least 1 / margin^2 (400 at the 5% margin). Below that, a count
/// that falls short by more than the margin cannot be told from noise, and a step that met the
/// target can miss the margin by chance.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct StepLength {
    /// Seconds each step measures.
    pub step_s: f64,
    /// What the configuration asked for (`tuning.step_s`, or the automatic `duration / 120`).
    pub asked_s: f64,
    /// The configuration set the length (`--tuning-step`): it is never lengthened.
    pub explicit: bool,
    /// Transactions a step of `step_s` is expected to count at the target ([`IOS_PER_TXN`]).
    pub expected_txns: f64,
    /// Transactions a step must count to decide: 1 / margin^2.
    pub needed_txns: f64,
    /// Seconds a step must measure to count them (whole seconds, rounded up).
    pub needed_s: f64,
}

impl StepLength {
    /// Whether steps of this length decide (see the type).
    pub fn decides(&self) -> bool {
        self.step_s >= self.needed_s
    }

    /// Whether the steps are longer than the configuration asked for.
    pub fn lengthened(&self) -> bool {
        self.step_s > self.asked_s
    }

    /// One standard error of a step's count, relative to the target.
    pub fn error_pct(txns: f64) -> f64 {
        100.0 / txns.max(1.0).sqrt()
    }

    /// What tuning says about the step length before it starts, when it has something to say:
    /// that steps were lengthened, or that they cannot decide and what would.
    pub fn note(&self, target_iops: f64, margin: f64) -> Option<String> {
        if !self.lengthened() && self.decides() {
            return None;
        }
        let asked_txns = self.expected_txns * self.asked_s / self.step_s.max(1e-9);
        let what = if self.explicit {
            " (--tuning-step)"
        } else {
            ""
        };
        let mut line = format!(
            "Automatic tuning: at {target_iops:.1} IOPS a step of {}{what} counts about {:.0} transactions, so one standard error of its count ({:.0}%) is wider than the {:.0}% IOPS margin: too few to tell whether a session count meets the target.",
            crate::step_secs(self.asked_s),
            asked_txns,
            Self::error_pct(asked_txns),
            margin * 100.0
        );
        // The step tuning runs instead, and what it counts.
        let step = format!(
            "{} (about {:.0} transactions, {:.0}%)",
            crate::step_secs(self.step_s),
            self.expected_txns,
            Self::error_pct(self.expected_txns)
        );
        if self.decides() {
            line.push_str(&format!(" Steps are lengthened to {step}."));
            return Some(line);
        }
        if self.lengthened() {
            line.push_str(&format!(
                " Steps are lengthened to the longest automatic step, {step}, still too short: steps that miss the target are judged by that error."
            ));
        }
        if self.needed_s <= MAX_STEP_S {
            line.push_str(&format!(
                " Steps of --tuning-step {} or longer decide; or set the session count with --threads N.",
                flag_duration(self.needed_s)
            ));
        } else {
            line.push_str(&format!(
                " No step --tuning-step allows (at most {}) decides at this target ({} would): set the session count with --threads N.",
                flag_duration(MAX_STEP_S),
                flag_duration(self.needed_s)
            ));
        }
        Some(line)
    }
}

/// A duration as `--tuning-step` takes it, rounded up ("34s", "13m", "2h").
fn flag_duration(s: f64) -> String {
    let s = s.max(1.0).ceil();
    if s < 60.0 {
        format!("{s:.0}s")
    } else if s < 3600.0 {
        format!("{:.0}m", (s / 60.0).ceil())
    } else {
        format!("{:.0}h", (s / 3600.0).ceil())
    }
}

/// The length of tuning's steps for `cfg`: what it asks for, lengthened (when automatic, up to
/// [`MAX_AUTO_STEP_S`]) until a step decides (see [`StepLength`]).
pub fn step_length(cfg: &RunConfig) -> StepLength {
    let asked_s = cfg.tuning.step_for(cfg.duration_s);
    let explicit = cfg.tuning.step_s > 0.0;
    let target = cfg.target_iops();
    let txns_per_s = if target.is_finite() && target > 0.0 {
        target / IOS_PER_TXN
    } else {
        0.0
    };
    // A margin of 0 tolerates no shortfall: no length decides then (a tiny floor keeps the
    // figures finite).
    let margin = cfg.thresholds.iops_margin.clamp(1e-3, 1.0);
    let needed_txns = (1.0 / (margin * margin)).ceil();
    let needed_s = if txns_per_s > 0.0 {
        (needed_txns / txns_per_s).ceil()
    } else {
        f64::INFINITY
    };
    let step_s = if explicit || asked_s >= needed_s {
        asked_s
    } else {
        needed_s.min(MAX_AUTO_STEP_S).max(asked_s)
    };
    StepLength {
        step_s,
        asked_s,
        explicit,
        expected_txns: txns_per_s * step_s,
        needed_txns,
        needed_s,
    }
}

/// The headroom tuning keeps: the test runs this many times the smallest session count that
/// passed (docs/method.md, "Automatic tuning and find-max"). A paced test's extra sessions do
/// not raise its rate (the pacer holds the target); they are idle sessions ready when the
/// storage stalls, so the transactions that fell due during a stall start at once after it
/// instead of being dropped. One session chosen on a quiet step dropped 700 transactions in a
/// single 660 ms stall (issue 35). Twice, as find-max sizes its steps ([`crate::findmax::
/// SESSION_HEADROOM`]): Little's law with the latency doubled.
pub const HEADROOM: f64 = 2.0;

/// The sessions a test runs when `smallest` passed: [`HEADROOM`] times it, at most
/// [`MAX_THREADS`].
pub fn with_headroom(smallest: u32) -> u32 {
    let want = (f64::from(smallest) * HEADROOM).ceil();
    if want.is_finite() && want >= 1.0 {
        (want.min(f64::from(MAX_THREADS)) as u32).max(smallest)
    } else {
        smallest
    }
}

/// The configuration of a step at `sessions` sessions: the test's, measured for the step's
/// length.
pub fn step_config(cfg: &RunConfig, sessions: u32) -> RunConfig {
    let mut c = cfg.clone();
    c.threads = sessions.max(1);
    c.duration_s = cfg.tuning.step_for(cfg.duration_s);
    c
}

/// Runs one step: its configuration and plan, the observer its events go to; gives its result.
pub type StepRunner<'a> =
    dyn FnMut(&RunConfig, &Plan, &mut dyn Observer) -> Result<RunResult, EngineError> + 'a;

/// The step a step run's result describes (stable unless its stability check said otherwise).
pub(crate) fn step_of(r: &RunResult, sessions: u32) -> SearchStep {
    let stable = !r.notes.iter().any(|n| n.contains(UNSTABLE));
    SearchStep::of_result(r, sessions, stable)
}

/// "meets every threshold" or "fails" and the checks that failed.
pub(crate) fn outcome(s: &SearchStep) -> String {
    if s.kept_up {
        format!(
            "short of the target by {:.1} IOPS, within one standard error of its count ({:.1} IOPS over {} transactions), and every due transaction found a session: enough sessions",
            s.target_iops - s.achieved_iops,
            s.counting_error_iops().unwrap_or(0.0),
            s.transactions
        )
    } else if s.pass {
        if s.recheck {
            "meets every threshold on a re-check (the failure before it was not repeated)"
                .to_string()
        } else {
            "meets every threshold".to_string()
        }
    } else if s.recheck {
        format!(
            "fails {} again on a re-check: the upper bound",
            s.failed_checks.join(", ")
        )
    } else {
        format!("fails {}", s.failed_checks.join(", "))
    }
}

/// The configuration of a search step at a value and its sessions, given the steps run so far.
pub(crate) type StepConfig<'a> = dyn Fn(u64, &[SearchStep]) -> (RunConfig, u32) + 'a;

/// The line a search logs as a step starts: (step number from 1, value, seconds the search
/// has run, the last step's length when one ran).
pub(crate) type Announce<'a> = dyn Fn(usize, u64, f64, Option<f64>) -> String + 'a;

/// How [`drive`] sets up and logs the steps of a search.
pub(crate) struct Driver<'a> {
    /// The strategy.
    pub search: &'a mut Search,
    /// Time budget, seconds on the steps' clock.
    pub max_s: f64,
    /// The configuration of the step at a value, and its sessions, given the steps run so far
    /// (find-max sizes its sessions from the read latency they measured).
    pub config: &'a StepConfig<'a>,
    /// The prefix of a step's own log lines (step number from 1, value).
    pub prefix: &'a dyn Fn(usize, u64) -> String,
    /// The line logged after a step.
    pub line: &'a dyn Fn(&SearchStep) -> String,
    /// A step that misses only the IOPS target while its sessions kept up with every due
    /// transaction passes ([`SearchStep::kept_up`]): tuning asks whether the session count is
    /// enough, which more sessions cannot improve then; find-max asks whether the storage
    /// carries the target, so its steps keep the full verdict.
    pub kept_up_passes: bool,
    /// A step that met an error ends the search with what it found ("error", the message
    /// kept) instead of returning the error: find-max's answer so far is never lost.
    pub errors_end_search: bool,
    /// A line logged as each step starts (step number from 1, value, seconds the search has
    /// run, the last step's length when one ran): find-max's progress and ETA between steps.
    pub announce: Option<&'a Announce<'a>>,
}

/// What [`drive`] ran and found.
pub(crate) struct Driven {
    pub steps: Vec<SearchStep>,
    /// The last step's result.
    pub last: Option<RunResult>,
    /// "converged", "bound", "steps", "time", "interrupted" or "error".
    pub end: &'static str,
    /// The best passing value (none after an interruption or an error).
    pub answer: Option<u64>,
    pub elapsed_s: f64,
    /// What ended the search when it was not the search: the limit of the run a step could not
    /// be built within ("limit"), or a step's error ("error", with `errors_end_search`).
    pub stop_message: Option<String>,
}

/// Runs a search's steps ([`Plan::search_step`] at each value the search proposes) until it
/// ends, the time budget would be passed, the user interrupts or a step meets an error.
pub(crate) fn drive(
    d: Driver<'_>,
    observer: &mut dyn Observer,
    cancel: &AtomicBool,
    clock: &dyn mbx_io::Clock,
    run_step: &mut StepRunner<'_>,
) -> Result<Driven, EngineError> {
    let started = clock.now();
    let mut steps = Vec::new();
    let mut last = None;
    let mut end = None;
    let mut last_step = std::time::Duration::ZERO;
    let mut stop_message = None;
    while let Some(n) = d.search.next() {
        // The time budget: a step that would end past it by the last one's length is not run.
        let elapsed = clock.now().saturating_duration_since(started);
        if !last_step.is_zero() && (elapsed + last_step).as_secs_f64() > d.max_s {
            end = Some("time");
            break;
        }
        let step_started = clock.now();
        let recheck = d.search.is_recheck();
        let (step_cfg, sessions) = (d.config)(n, &steps);
        // A step the run's limits do not allow (a target above the most IOPS per mailbox or
        // transactional IOPS it takes) ends the search with what it found, naming the limit.
        if let Err((key, why)) = step_cfg.validate() {
            let line = format!(
                "The search stops before step {} ({n}): its configuration is outside the run's limits ({key}: {why}).",
                d.search.steps() + 1
            );
            observer.on_event(RunEvent::Log(&line));
            stop_message = Some(format!("step {n} is outside the run's limits: {key} {why}"));
            end = Some("limit");
            break;
        }
        if let Some(announce) = d.announce {
            let line = announce(
                d.search.steps() + 1,
                n,
                elapsed.as_secs_f64(),
                (!last_step.is_zero()).then_some(last_step.as_secs_f64()),
            );
            observer.on_search_line(&line);
        }
        let plan = Plan::search_step(&step_cfg);
        let mut obs = StepObserver {
            inner: observer,
            prefix: (d.prefix)(d.search.steps() + 1, n),
        };
        let r = match run_step(&step_cfg, &plan, &mut obs) {
            Ok(r) => r,
            Err(e) if d.errors_end_search => {
                let line = format!("The search stops: step {n} met an error: {e}.");
                observer.on_event(RunEvent::Log(&line));
                stop_message = Some(format!("step {n} met an error: {e}"));
                end = Some("error");
                break;
            }
            Err(e) => return Err(e),
        };
        let mut step = step_of(&r, sessions);
        step.mailboxes = step_cfg.profile.mailboxes;
        step.recheck = recheck;
        if d.kept_up_passes
            && !step.pass
            && step.failed_checks == ["achieved_transactional_iops"]
            && step.within_counting_error()
            && SearchStep::sessions_kept_up(&r)
        {
            step.pass = true;
            step.kept_up = true;
            step.failed_checks.clear();
        }
        observer.on_search_line(&(d.line)(&step));
        let interrupted =
            r.stopped.reason == StopReason::Interrupted || cancel.load(Ordering::Relaxed);
        let broken = matches!(
            r.stopped.reason,
            StopReason::IoError | StopReason::IntegrityError | StopReason::Error
        );
        d.search.record(StepOutcome {
            value: n,
            pass: step.pass,
            achieved_ratio: (step.target_iops > 0.0).then(|| step.achieved_iops / step.target_iops),
        });
        steps.push(step);
        last = Some(r);
        last_step = clock.now().saturating_duration_since(step_started);
        if interrupted {
            end = Some("interrupted");
            break;
        }
        if broken {
            end = Some("error");
            break;
        }
    }
    let answer = match end {
        None | Some("time") | Some("limit") => d.search.answer(),
        _ => None,
    };
    Ok(Driven {
        steps,
        last,
        end: end.unwrap_or(match d.search.end() {
            Some(SearchEnd::Converged) | None => "converged",
            Some(SearchEnd::Bound) => "bound",
            Some(SearchEnd::Steps) => "steps",
        }),
        answer,
        elapsed_s: clock.now().saturating_duration_since(started).as_secs_f64(),
        stop_message,
    })
}

/// Runs automatic tuning for `cfg` (whose `threads` is 0). `run_step` runs one step's plan
/// with its configuration and returns its result (an error ends tuning with it); `clock` is the
/// steps' clock (the time budget `tuning.max_s` is counted on it).
pub fn tune(
    cfg: &RunConfig,
    observer: &mut dyn Observer,
    cancel: &AtomicBool,
    clock: &dyn mbx_io::Clock,
    run_step: &mut StepRunner<'_>,
) -> Result<Tuned, EngineError> {
    let t = &cfg.tuning;
    let start = if t.start > 0 {
        t.start
    } else {
        cfg.profile.databases.saturating_mul(4).min(256)
    };
    let mut search = Search::new(SearchSpec {
        direction: Direction::SmallestPassing,
        start: u64::from(start),
        min: 1,
        max: u64::from(MAX_THREADS),
        growth: 4.0,
        resolution: 0.0,
        max_steps: t.max_steps as usize,
    });
    // Steps long enough to decide, or a word on why they cannot: before the first step.
    let length = step_length(cfg);
    if let Some(note) = length.note(cfg.target_iops(), cfg.thresholds.iops_margin) {
        observer.on_search_line(&note);
    }
    let mut stepped = cfg.clone();
    stepped.tuning.step_s = length.step_s;
    let cfg_steps = &stepped;
    let step_s = length.step_s;
    observer.on_search_line(&format!(
        "Automatic tuning is starting: steps of {} measured after read latency is stable, at most {} steps, for the smallest session count that meets {:.1} IOPS within every threshold.",
        crate::step_secs(step_s),
        t.max_steps,
        cfg.target_iops()
    ));
    let driven = drive(
        Driver {
            search: &mut search,
            max_s: t.max_s,
            config: &|n, _| {
                let sessions = u32::try_from(n).unwrap_or(MAX_THREADS);
                (step_config(cfg_steps, sessions), sessions)
            },
            prefix: &|i, n| format!("Tuning step {i} ({n} sessions): "),
            line: &|s| {
                format!(
                    "{} sessions have actual {:.1} IOPS (target IOPS: {:.1}): {}.",
                    s.sessions,
                    s.achieved_iops,
                    s.target_iops,
                    outcome(s)
                )
            },
            kept_up_passes: true,
            errors_end_search: false,
            announce: None,
        },
        observer,
        cancel,
        clock,
        run_step,
    )?;
    let smallest = driven
        .answer
        .map(|a| u32::try_from(a).unwrap_or(MAX_THREADS));
    let tuning = Tuning {
        steps: driven.steps,
        sessions: smallest.map(with_headroom),
        smallest_passing: smallest,
        headroom_pct: (HEADROOM - 1.0) * 100.0,
        end: driven.end.to_string(),
        elapsed_s: driven.elapsed_s,
    };
    let last = driven.last;
    let kept = |s: u32| {
        let run = with_headroom(s);
        format!(
            "the test runs {run} sessions, {:.0}% over it (headroom to catch up after a stall)",
            (f64::from(run) / f64::from(s.max(1)) - 1.0) * 100.0
        )
    };
    let line = match (smallest, tuning.end.as_str()) {
        (Some(s), "steps") => format!(
            "Automatic tuning used its {} steps: {s} sessions is the smallest count that passed (a smaller one may too); {}.",
            t.max_steps,
            kept(s)
        ),
        (Some(s), "time") => format!(
            "Automatic tuning used its {:.0} s: {s} sessions is the smallest count that passed (a smaller one may too); {}.",
            t.max_s,
            kept(s)
        ),
        (Some(s), _) => format!(
            "Automatic tuning found {s} sessions the smallest count that meets the target within every threshold, in {:.0} s; {}.",
            tuning.elapsed_s,
            kept(s)
        ),
        (None, "interrupted") => "Automatic tuning was interrupted.".to_string(),
        (None, "error") => "Automatic tuning stopped: a step met an error.".to_string(),
        (None, _) => format!(
            "Automatic tuning failed: no session count tried (up to {}) meets {:.1} IOPS within every threshold.",
            tuning.steps.iter().map(|s| s.sessions).max().unwrap_or(0),
            cfg.target_iops()
        ),
    };
    observer.on_search_line(&line);
    Ok(Tuned { tuning, last })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn cfg(target: f64, duration_s: f64, step_s: f64) -> RunConfig {
        let mut c = RunConfig::default();
        c.profile.mailboxes = 1000;
        c.profile.iops_per_mailbox = target / 1000.0;
        c.duration_s = duration_s;
        c.tuning.step_s = step_s;
        c
    }

    #[test]
    fn steps_long_enough_to_decide_are_left_alone() {
        // 3,000 IOPS: a 5 s step counts about 5,000 transactions (1.4%).
        let l = step_length(&cfg(3000.0, 60.0, 0.0));
        assert_eq!(l.step_s, 5.0);
        assert!(l.decides() && !l.lengthened());
        assert_eq!(l.note(3000.0, 0.05), None);
    }

    #[test]
    fn automatic_steps_too_short_to_decide_are_lengthened() {
        // 36 IOPS (issue 24): a 5 s step counts about 60 transactions, an error of 13%; 400
        // transactions (5%) take 34 s at about 12 a second.
        let l = step_length(&cfg(36.0, 60.0, 0.0));
        assert_eq!(l.asked_s, 5.0);
        assert_eq!(l.needed_txns, 400.0);
        assert_eq!(l.step_s, 34.0);
        assert!(l.decides() && l.lengthened());
        let note = l.note(36.0, 0.05).expect("a note");
        assert!(note.starts_with("Automatic tuning"), "{note}");
        assert!(note.contains("about 60 transactions"), "{note}");
        assert!(note.contains("(13%)"), "{note}");
        assert!(note.contains("lengthened to 34 s"), "{note}");
    }

    #[test]
    fn a_target_too_small_for_any_automatic_step_names_the_flags() {
        // 1.6 IOPS (8 mailboxes at 0.2): 400 transactions take 750 s; automatic steps stop at
        // 60 s.
        let l = step_length(&cfg(1.6, 60.0, 0.0));
        assert_eq!(l.step_s, MAX_AUTO_STEP_S);
        assert!(!l.decides() && l.lengthened());
        let note = l.note(1.6, 0.05).expect("a note");
        assert!(note.contains("longest automatic step, 60 s"), "{note}");
        assert!(note.contains("--tuning-step 13m or longer"), "{note}");
        assert!(note.contains("--threads N"), "{note}");
        // Far below: no step the flag allows decides.
        let l = step_length(&cfg(0.05, 60.0, 0.0));
        let note = l.note(0.05, 0.05).expect("a note");
        assert!(note.contains("No step --tuning-step allows"), "{note}");
        assert!(note.contains("--threads N"), "{note}");
    }

    #[test]
    fn a_step_length_set_by_the_user_is_kept_and_named() {
        let l = step_length(&cfg(36.0, 60.0, 2.0));
        assert_eq!(l.step_s, 2.0);
        assert!(l.explicit && !l.lengthened() && !l.decides());
        let note = l.note(36.0, 0.05).expect("a note");
        assert!(note.contains("(--tuning-step)"), "{note}");
        assert!(note.contains("--tuning-step 34s or longer"), "{note}");
    }

    #[test]
    fn a_zero_margin_never_decides() {
        let mut c = cfg(3000.0, 60.0, 0.0);
        c.thresholds.iops_margin = 0.0;
        let l = step_length(&c);
        assert!(!l.decides());
        assert!(l.step_s <= MAX_AUTO_STEP_S);
    }
}
