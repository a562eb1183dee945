//! Shared handling of `--engine` / `--buffered` and default store paths.

use std::path::PathBuf;

use mbx_io::EngineKind;

use crate::cli::EngineArgs;

pub use mbx_app::prepare::DEFAULT_DB_DIR;

/// (engine, direct) from the flags: the engine asked for, or the platform default.
pub fn engine_and_direct(args: &EngineArgs) -> (EngineKind, bool) {
    (
        mbx_engine::engine_kind(args.engine.unwrap_or_default()),
        !args.buffered,
    )
}

/// `paths`, or the default when empty.
pub fn or_default(paths: &[PathBuf], default: &str) -> Vec<PathBuf> {
    if paths.is_empty() {
        vec![PathBuf::from(default)]
    } else {
        paths.to_vec()
    }
}
