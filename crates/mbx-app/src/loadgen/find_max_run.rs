//! `loadgen find-max` on a real mail system: the probe of [`super::find_max::search`] is a
//! whole `loadgen run` ([`super::day`]) of the first N users, mailboxes filled
//! ([`super::init`], resumable) only for users not filled yet, so the largest count tried is
//! initialized once, never per step; then find-max.json and find-max.html
//! ([`super::find_max_html`]). The search and its types are in `find_max.rs`, which names
//! neither this file nor the page's, so the three depend one way.

use std::path::{Path, PathBuf};
use std::time::Instant;

use super::find_max::{
    closing_line, search, step_line, FindMax, Settings, Step, StepStart, CONFIRM_PASSES,
};
use super::{DayRequest, InitRequest};
use crate::event::{Event, EventSink, LogKind};
use crate::AppError;

/// `loadgen find-max` on a real mail system.
#[derive(Debug, Clone)]
pub struct FindMaxRequest {
    /// The day each step runs (its users: every user given; each step runs the first N).
    pub day: DayRequest,
    /// The search.
    pub settings: Settings,
    /// Fill mailboxes before the steps that need them (None: they are filled already).
    pub init: Option<InitRequest>,
}

/// The search's outcome on a real system.
#[derive(Debug, Clone)]
pub struct Found {
    /// find-max.json's content.
    pub find_max: FindMax,
    /// find-max.json.
    pub path: PathBuf,
    /// find-max.html, when written.
    pub html: Option<PathBuf>,
}

/// One of the search's own lines: shown by the terminal while the search runs (each step's
/// day has its own test.log in its folder).
fn log(sink: &mut dyn EventSink, text: String) {
    sink.event(&Event::Log {
        text,
        kind: LogKind::Tuning,
    });
}

/// Runs `loadgen find-max`: each step a `loadgen run` of the first N users in `step-NN-Nu/`
/// of the results folder, then find-max.json and find-max.html there.
pub fn run(req: &FindMaxRequest, sink: &mut dyn EventSink) -> Result<Found, AppError> {
    run_with(req, sink, &mut |day, sink| super::day(day, sink))
}

/// A step's day: [`super::day`] on the request's servers, or (tests) [`super::day_on`] a model.
pub type DayFn<'a> =
    dyn FnMut(&DayRequest, &mut dyn EventSink) -> Result<super::Ran, AppError> + 'a;

/// [`run`] with each step's day run by `day_of`.
pub fn run_with(
    req: &FindMaxRequest,
    sink: &mut dyn EventSink,
    day_of: &mut DayFn<'_>,
) -> Result<Found, AppError> {
    let c = &req.day.common;
    let dir = crate::results_folder::results_dir(Some(&match &c.out {
        Some(d) => d.clone(),
        None => crate::results_folder::stamped("loadgen-find-max-"),
    }))?;
    fs_err::create_dir_all(&dir).map_err(AppError::File)?;
    let started = Instant::now();
    let s = Settings {
        max_users: (c.users.len() as u64).min(req.settings.max_users.max(1)),
        ..req.settings
    };
    log(
        sink,
        format!(
            "loadgen find-max is starting: from {} users (of {}), steps of {} of a {} day, at most {} steps, to within {:.0}%, {CONFIRM_PASSES} confirmation steps; results in {}.",
            s.start_users.clamp(super::find_max::MIN_USERS, s.max_users.max(super::find_max::MIN_USERS)),
            s.max_users,
            super::duration_words(req.day.run.duration.unwrap_or(req.day.run.day)),
            super::duration_words(req.day.run.day),
            s.max_steps,
            s.resolution_pct,
            dir.display()
        ),
    );
    let mut filled = 0usize;
    let cancel = std::sync::Arc::clone(&c.cancel);
    let mut probe = |st: &StepStart| -> Result<Step, AppError> {
        log(sink, st.line());
        let n = usize::try_from(st.users)
            .unwrap_or(usize::MAX)
            .min(c.users.len());
        if let Some(init) = &req.init {
            if n > filled {
                fill(init, filled, n, &dir, sink)?;
                filled = n;
            }
        }
        let name = format!("step-{:02}-{n}u", st.index);
        let mut day = req.day.clone();
        day.common.users = c.users[..n].to_vec();
        day.common.out = Some(dir.join(&name));
        let t = Instant::now();
        let ran = day_of(&day, sink)?;
        let step = Step::of(
            st.users,
            &ran.result,
            t.elapsed().as_secs_f64(),
            format!("{name}/result.json"),
        );
        log(sink, step_line(&step));
        Ok(step)
    };
    let elapsed = || started.elapsed().as_secs_f64();
    let f = search(s, &cancel, &elapsed, &mut probe)?;
    write(&f, &dir, sink)
}

/// Fills the mailboxes of users `from..to` (a `loadgen init` of them, resumable).
fn fill(
    init: &InitRequest,
    from: usize,
    to: usize,
    dir: &Path,
    sink: &mut dyn EventSink,
) -> Result<(), AppError> {
    let mut r = init.clone();
    r.common.users = init.common.users[from.min(to)..to.min(init.common.users.len())].to_vec();
    r.common.out = Some(dir.join(format!("init-{}-{to}", from + 1)));
    log(
        sink,
        format!(
            "loadgen find-max: filling the mailboxes of users {}..={to} ({} messages each) before the step that first needs them.",
            from + 1,
            init.messages
        ),
    );
    let ran = super::init(&r, sink)?;
    if !ran.result.verdict.pass() && !ran.result.test.interrupted {
        return Err(AppError::usage(format!(
            "loadgen find-max: filling the mailboxes of users {}..={to} failed ({}): see {}",
            from + 1,
            ran.result.stopped.message,
            ran.path.display()
        )));
    }
    Ok(())
}

/// Writes find-max.json and find-max.html in `dir` and says so.
pub fn write(f: &FindMax, dir: &Path, sink: &mut dyn EventSink) -> Result<Found, AppError> {
    let path = dir.join("find-max.json");
    super::write_json(&path, f)?;
    let html_path = dir.join("find-max.html");
    let html = match mbx_config::atomic::write_atomic(
        &html_path,
        super::find_max_html::page(f).as_bytes(),
    ) {
        Ok(()) => Some(html_path),
        Err(e) => {
            log(
                sink,
                format!("could not write {}: {e}", html_path.display()),
            );
            None
        }
    };
    log(sink, closing_line(f));
    log(
        sink,
        format!(
            "loadgen find-max: {} and {} (the curve); each step's result in its step-NN-Nu folder.",
            path.display(),
            html.as_ref()
                .map_or_else(|| "no find-max.html".into(), |h| h.display().to_string())
        ),
    );
    Ok(Found {
        find_max: f.clone(),
        path,
        html,
    })
}
