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
}

/// Whether a test-log line is one of tuning's or find-max's own (what a terminal shows while
/// they search): the start, a step's outcome and the end.
pub fn is_tuning_line(line: &str) -> bool {
    let counted = |sep: &str| {
        line.split_once(sep)
            .is_some_and(|(n, _)| n.parse::<u64>().is_ok())
    };
    line.starts_with("Automatic tuning")
        || line.starts_with("find-max: ")
        || line.starts_with("find-max is starting")
        || counted(" sessions have actual ")
        || counted(" mailboxes (")
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
            "below the target only by counting noise over {:.0} s (every due transaction found a session): enough sessions",
            s.measured_s
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
        let plan = Plan::search_step(&step_cfg);
        let mut obs = StepObserver {
            inner: observer,
            prefix: (d.prefix)(d.search.steps() + 1, n),
        };
        let r = run_step(&step_cfg, &plan, &mut obs)?;
        let mut step = step_of(&r, sessions);
        step.mailboxes = step_cfg.profile.mailboxes;
        step.recheck = recheck;
        if d.kept_up_passes
            && !step.pass
            && step.failed_checks == ["achieved_transactional_iops"]
            && SearchStep::sessions_kept_up(&r)
        {
            step.pass = true;
            step.kept_up = true;
            step.failed_checks.clear();
        }
        observer.on_event(RunEvent::Log(&(d.line)(&step)));
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
        None | Some("time") => d.search.answer(),
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
    let step_s = t.step_for(cfg.duration_s);
    observer.on_event(RunEvent::Log(&format!(
        "Automatic tuning is starting: steps of {} measured after read latency is stable, at most {} steps, for the smallest session count that meets {:.1} IOPS within every threshold.",
        crate::step_secs(step_s),
        t.max_steps,
        cfg.target_iops()
    )));
    let driven = drive(
        Driver {
            search: &mut search,
            max_s: t.max_s,
            config: &|n, _| {
                let sessions = u32::try_from(n).unwrap_or(MAX_THREADS);
                (step_config(cfg, sessions), sessions)
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
        },
        observer,
        cancel,
        clock,
        run_step,
    )?;
    let tuning = Tuning {
        steps: driven.steps,
        sessions: driven
            .answer
            .map(|a| u32::try_from(a).unwrap_or(MAX_THREADS)),
        end: driven.end.to_string(),
        elapsed_s: driven.elapsed_s,
    };
    let last = driven.last;
    let line = match (tuning.sessions, tuning.end.as_str()) {
        (Some(s), "steps") => format!(
            "Automatic tuning used its {} steps: {s} sessions is the smallest count that passed; a smaller one may too.",
            t.max_steps
        ),
        (Some(s), "time") => format!(
            "Automatic tuning used its {:.0} s: {s} sessions is the smallest count that passed; a smaller one may too.",
            t.max_s
        ),
        (Some(s), _) => format!(
            "Automatic tuning chose {s} sessions (the smallest count that meets the target within every threshold), in {:.0} s.",
            tuning.elapsed_s
        ),
        (None, "interrupted") => "Automatic tuning was interrupted.".to_string(),
        (None, "error") => "Automatic tuning stopped: a step met an error.".to_string(),
        (None, _) => format!(
            "Automatic tuning failed: no session count tried (up to {}) meets {:.1} IOPS within every threshold.",
            tuning.steps.iter().map(|s| s.sessions).max().unwrap_or(0),
            cfg.target_iops()
        ),
    };
    observer.on_event(RunEvent::Log(&line));
    Ok(Tuned { tuning, last })
}
