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

/// The message `main` prints for an error: the whole chain, outermost context first.
///
/// Convention (every error type of the workspace follows it): an error's own message is
/// complete, including the OS or parser error it wraps, and such a wrapped error is *not* also
/// returned by `source()`. Only errors that add context (anyhow's `.context`, and our enums'
/// transparent variants) have a source. So each part of the chain appears exactly once here.
pub fn render(err: &anyhow::Error) -> String {
    format!("error: {err:#}")
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

    /// Issue 8: "the OS error is printed twice". Real errors of each library, nested and wrapped
    /// as the commands do, print the OS message exactly once, and still exit with the right code.
    #[test]
    fn os_errors_are_printed_once_and_classified() {
        use anyhow::Context;
        let dir = tempfile::tempdir().expect("tempdir");
        let missing = dir.path().join("missing");
        let os = std::fs::File::open(&missing)
            .expect_err("missing")
            .to_string();
        assert!(os.contains("os error"), "{os}");
        let check = |err: anyhow::Error, code: u8| {
            let text = render(&err);
            assert_eq!(text.matches(&os).count(), 1, "{text}");
            assert!(text.contains("missing"), "{text}");
            assert_eq!(code_for(&err), ExitCode::from(code), "{text}");
        };

        // mbx-io, through the store's and the engine's transparent variants.
        let mode = mbx_io::OpenMode {
            direct: false,
            write_through: false,
            write: false,
            create: false,
        };
        let io = mbx_io::IoFile::open(&missing, mode).expect_err("missing");
        assert!(io.os_error().is_some());
        check(anyhow::Error::new(io).context("verifying missing"), RUNTIME);
        let io = mbx_io::IoFile::open(&missing, mode).expect_err("missing");
        let store = mbx_store::StoreError::from(io);
        check(anyhow::Error::new(store).context("preparing"), RUNTIME);
        let io = mbx_io::IoFile::open(&missing, mode).expect_err("missing");
        let engine = mbx_engine::EngineError::from(mbx_store::StoreError::from(io));
        check(anyhow::Error::new(engine).context("running"), RUNTIME);
        let io = mbx_io::IoFile::open(&missing, mode).expect_err("missing");
        check(
            anyhow::Error::new(mbx_io::bench::BenchError::from(io)).context("iobench"),
            RUNTIME,
        );

        // mbx-config: a --config and a --profile that cannot be read, a profile that cannot be
        // written.
        let e = mbx_config::RunConfig::load(&missing)
            .with_context(|| format!("reading --config {}", missing.display()));
        check(e.expect_err("missing"), USAGE);
        let e = mbx_config::Profile::load(&missing).context("reading --profile");
        check(e.expect_err("missing"), USAGE);
        let profile = mbx_config::Profile {
            mailboxes: 1,
            iops_per_mailbox: 1.0,
            mailbox_quota_mb: 1,
            databases: 1,
            messages_per_day: None,
            message_size_kb: None,
            copies_per_database: 1,
        };
        let e = profile
            .save(&missing.join("p.toml"), &[])
            .context("writing the test profile");
        check(e.expect_err("missing dir"), USAGE);

        // mbx-report: import, esrp, report.
        let e = mbx_report::import_file(&missing).context("importing");
        check(e.expect_err("missing"), USAGE);
        let e = mbx_report::load(&missing).context("esrp");
        check(e.expect_err("missing"), USAGE);
        let e = mbx_report::write_report(&missing, None).context("writing the report");
        check(e.expect_err("missing"), USAGE);
    }
}
