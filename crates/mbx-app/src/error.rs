//! The application layer's one error type. Each variant keeps the library error it wraps as
//! itself (so a caller can classify it: the binary's exit codes look for a usage error, a
//! configuration error or the store's user errors in the chain) and adds the context the
//! command gave it.

use std::error::Error as StdError;

/// What stopped a command of the application layer.
#[derive(Debug, thiserror::Error)]
pub enum AppError {
    /// The user's to fix with other flags, files or paths (the binary's exit code 2). The
    /// message is complete and names the flag, key or file.
    #[error("{0}")]
    Usage(String),
    /// A configuration file (`--config`, `--profile`) that could not be read or is not valid.
    #[error("{context}")]
    Config {
        /// What was being read ("reading --config FILE").
        context: String,
        /// The configuration library's error, naming the file and the key.
        #[source]
        source: mbx_config::ConfigError,
    },
    /// The store's error (a database, its lock, the free space).
    #[error(transparent)]
    Store(#[from] mbx_store::StoreError),
    /// The engine's error that stopped a test.
    #[error(transparent)]
    Engine(#[from] mbx_engine::EngineError),
    /// Writing the result, its report or find-max's files.
    #[error("{context}")]
    Report {
        /// What was being written.
        context: String,
        /// The report library's error, naming the file.
        #[source]
        source: mbx_report::ReportError,
    },
    /// A file or folder operation (the results folder, test.log, find-max.json).
    #[error("{context}")]
    Io {
        /// What was being done.
        context: String,
        /// The OS error (from `fs_err`, so it names the path).
        #[source]
        source: std::io::Error,
    },
    /// Something failed while working (exit code 3); the message is complete.
    #[error("{0}")]
    Failed(String),
    /// A result file or folder that is not what it should be.
    #[error(transparent)]
    Input(#[from] mbx_report::InputError),
    /// A result that could not be read (ESRP's inputs).
    #[error(transparent)]
    Import(#[from] mbx_report::ImportError),
    /// A file operation's error as `fs_err` words it (it names the path and the operation).
    #[error(transparent)]
    File(std::io::Error),
    /// Another error with what the command was doing when it happened (e.g. "suite test
    /// 2-stress").
    #[error("{context}")]
    Context {
        /// What was being done.
        context: String,
        /// The error.
        #[source]
        source: Box<AppError>,
    },
    /// Writing to the terminal or stdout failed (a closed pipe is not a crash: the binary
    /// treats it as the end of its output).
    #[error("writing the summary to stdout")]
    Output(#[source] std::io::Error),
}

impl AppError {
    /// A usage error with this message.
    pub fn usage(msg: impl Into<String>) -> AppError {
        AppError::Usage(msg.into())
    }

    /// This error with what was being done.
    pub fn context(self, context: impl Into<String>) -> AppError {
        AppError::Context {
            context: context.into(),
            source: Box::new(self),
        }
    }

    /// True when the user can fix it with other flags, files or paths (the binary's exit
    /// code 2): a usage error, a configuration file's error or the store's user errors.
    pub fn is_usage(&self) -> bool {
        match self {
            AppError::Usage(_)
            | AppError::Config { .. }
            | AppError::Input(_)
            | AppError::Import(_) => true,
            AppError::Store(s) => s.is_user_error(),
            AppError::Report { source, .. } => source.is_user_error(),
            AppError::Context { source, .. } => source.is_usage(),
            AppError::Engine(_)
            | AppError::Io { .. }
            | AppError::File(_)
            | AppError::Failed(_)
            | AppError::Output(_) => false,
        }
    }

    /// The whole chain in one line, outermost first (`a: b: c`, as `anyhow`'s `{:#}` shows it).
    pub fn chain_text(&self) -> String {
        let mut text = self.to_string();
        let mut next = self.source();
        while let Some(e) = next {
            text.push_str(": ");
            text.push_str(&e.to_string());
            next = e.source();
        }
        text
    }

    /// The innermost OS-level error of the mbx-io layer in the chain (a store's or the
    /// engine's), if any: its path and errno go into result.json's `errors[]`.
    pub fn io_error(&self) -> Option<&mbx_io::IoError> {
        let mut next: Option<&(dyn StdError + 'static)> = Some(self);
        while let Some(e) = next {
            if let Some(mbx_store::StoreError::Io(io)) = e.downcast_ref::<mbx_store::StoreError>() {
                return Some(io);
            }
            if let Some(io) = e.downcast_ref::<mbx_io::IoError>() {
                return Some(io);
            }
            match e.downcast_ref::<AppError>() {
                Some(AppError::Store(mbx_store::StoreError::Io(io))) => return Some(io),
                Some(AppError::Engine(mbx_engine::EngineError::Io(io))) => return Some(io),
                Some(AppError::Engine(mbx_engine::EngineError::Store(
                    mbx_store::StoreError::Io(io),
                ))) => return Some(io),
                _ => {}
            }
            next = e.source();
        }
        None
    }
}

/// A `fs_err` result with what was being done.
pub(crate) trait IoContext<T> {
    /// The error as [`AppError::Io`] with `context`.
    fn io_context(self, context: &str) -> Result<T, AppError>;
}

impl<T> IoContext<T> for std::io::Result<T> {
    fn io_context(self, context: &str) -> Result<T, AppError> {
        self.map_err(|source| AppError::Io {
            context: context.to_string(),
            source,
        })
    }
}
