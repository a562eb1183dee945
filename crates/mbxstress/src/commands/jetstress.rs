//! `--jetstress-config FILE [--map-path FROM=TO ...]` on `run` and `prepare`: a Jetstress 2013
//! configuration read by `mbx_config::jetstress`, as the base the flags override.

use mbx_config::jetstress::{load as load_file, JetstressError, JetstressImport, PathMap};

use crate::cli::JetstressArgs;
use crate::exit::usage;

/// The configuration the flags name, if any. A file that is not a usable Jetstress
/// configuration, or a bad --map-path rule, is a usage error (exit 2) naming what to fix.
pub fn load(args: &JetstressArgs) -> anyhow::Result<Option<JetstressImport>> {
    let Some(path) = &args.jetstress_config else {
        return Ok(None);
    };
    let mut map = PathMap::default();
    for rule in &args.map_path {
        map.add(rule)
            .map_err(|e| usage(format!("invalid --map-path {e}")))?;
    }
    match load_file(path, &map) {
        Ok(j) => Ok(Some(j)),
        Err(e @ (JetstressError::Invalid { .. } | JetstressError::Xml { .. })) => {
            Err(usage(format!("--jetstress-config {e}")))
        }
        Err(e) => Err(usage(format!("--jetstress-config: {e}"))),
    }
}

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
