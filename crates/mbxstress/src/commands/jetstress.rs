//! `--jetstress-config FILE [--map-path FROM=TO ...]` on `run` and `prepare`: a Jetstress 2013
//! configuration read by `mbx_config::jetstress` (through `mbx_app`), as the base the flags
//! override; here, the notes said before a run about what it does not use.

use mbx_config::jetstress::JetstressImport;

/// What the file asked for that is not used as such, one line each (to stderr before a run).
pub fn notes(j: &JetstressImport) -> Vec<String> {
    let mut out = Vec::new();
    if j.tuning {
        out.push(
            "SuppressTuning is false: the session count is tuned automatically, as Jetstress would (ThreadCount is not used)".into(),
        );
    }
    // One line per reason, naming its elements.
    let mut by_reason: Vec<(&str, Vec<&str>)> = Vec::new();
    for i in &j.ignored {
        match by_reason.iter_mut().find(|(r, _)| *r == i.reason) {
            Some((_, elements)) => elements.push(&i.element),
            None => by_reason.push((&i.reason, vec![&i.element])),
        }
    }
    for (reason, elements) in by_reason {
        out.push(format!("ignored {}: {reason}", elements.join(", ")));
    }
    out
}
