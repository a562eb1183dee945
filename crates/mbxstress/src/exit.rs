//! Exit codes and the classification of errors into usage errors (2) and runtime errors (3).

use std::process::ExitCode;

// 0 is success and 1 a failed test verdict (storage tests arrive with `run`).
/// Bad flags, input files or configuration: the user can fix it.
pub const USAGE: u8 = 2;
/// Something failed while working (I/O error, device fault).
pub const RUNTIME: u8 = 3;

/// Marks an error as the user's to fix (exit code 2). The message is shown as is.
#[derive(Debug, thiserror::Error)]
#[error("{0}")]
pub struct UsageError(pub String);

/// Wraps any message as a usage error.
pub fn usage(msg: impl Into<String>) -> anyhow::Error {
    anyhow::Error::new(UsageError(msg.into()))
}

/// Exit code for an error: usage errors and invalid configuration give 2, an interruption 130,
/// anything else 3.
pub fn code_for(err: &anyhow::Error) -> ExitCode {
    let interrupted = err.chain().any(|e| {
        matches!(
            e.downcast_ref::<mbx_store::StoreError>(),
            Some(mbx_store::StoreError::Interrupted { .. })
        )
    });
    if interrupted {
        return ExitCode::from(crate::interrupt::INTERRUPTED);
    }
    let is_usage = err.chain().any(|e| {
        e.is::<UsageError>()
            || e.is::<mbx_sizing::InputError>()
            || e.is::<mbx_config::ConfigError>()
            || e.downcast_ref::<mbx_store::StoreError>()
                .is_some_and(|s| s.is_user_error())
            || matches!(
                e.downcast_ref::<mbx_io::bench::BenchError>(),
                Some(mbx_io::bench::BenchError::Invalid(_))
            )
            || e.is::<mbx_report::ImportError>()
            || e.is::<mbx_report::InputError>()
            || e.downcast_ref::<mbx_report::ReportError>()
                .is_some_and(|r| r.is_user_error())
    });
    ExitCode::from(if is_usage { USAGE } else { RUNTIME })
}

/// Writing to a closed pipe (`mbxstress size --json | head`) is not an error.
pub fn is_broken_pipe(err: &anyhow::Error) -> bool {
    err.chain().any(|e| {
        e.downcast_ref::<std::io::Error>()
            .is_some_and(|io| io.kind() == std::io::ErrorKind::BrokenPipe)
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn classification() {
        let e = usage("bad flag").context("while sizing");
        assert_eq!(code_for(&e), ExitCode::from(USAGE));
        let e = anyhow::Error::new(std::io::Error::other("disk on fire"));
        assert_eq!(code_for(&e), ExitCode::from(RUNTIME));
        let e = anyhow::Error::new(std::io::Error::from(std::io::ErrorKind::BrokenPipe));
        assert!(is_broken_pipe(&e));
    }
}
