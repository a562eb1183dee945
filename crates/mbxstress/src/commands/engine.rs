//! Shared handling of `--engine` / `--buffered` and default store paths.

use std::path::PathBuf;

use mbx_io::EngineKind;

use crate::cli::EngineArgs;

/// Default directory of the databases.
pub const DEFAULT_DB_DIR: &str = "mbxstress-data/databases";
/// Default directory of the logs.
pub const DEFAULT_LOG_DIR: &str = "mbxstress-data/logs";

/// The engine asked for, or the platform default.
pub fn engine_kind(name: Option<&str>) -> EngineKind {
    name.and_then(EngineKind::parse).unwrap_or_default()
}

/// (engine, direct) from the flags.
pub fn engine_and_direct(args: &EngineArgs) -> (EngineKind, bool) {
    (engine_kind(args.engine.as_deref()), !args.buffered)
}

/// `paths`, or the default when empty.
pub fn or_default(paths: &[PathBuf], default: &str) -> Vec<PathBuf> {
    if paths.is_empty() {
        vec![PathBuf::from(default)]
    } else {
        paths.to_vec()
    }
}
