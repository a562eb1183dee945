//! `fleet run`'s error: the user's to fix, or a failure while working.

/// Why `fleet run` could not do what it was asked.
#[derive(Debug, thiserror::Error)]
pub enum FleetError {
    /// The user's to fix (the hosts file, a flag, a host's setup): the binary exits 2.
    #[error("{0}")]
    Usage(String),
    /// Something failed while working (ssh, a file here): the binary exits 3. The message
    /// names the operation and the host or file.
    #[error("{0}")]
    Failed(String),
}

impl FleetError {
    /// The user's to fix.
    pub fn is_usage(&self) -> bool {
        matches!(self, FleetError::Usage(_))
    }
}

/// `Result` with a [`FleetError`].
pub type Result<T, E = FleetError> = std::result::Result<T, E>;

pub(crate) fn usage(msg: impl Into<String>) -> FleetError {
    FleetError::Usage(msg.into())
}

/// `fail!("...", args)`: a [`FleetError::Failed`] with the formatted message.
macro_rules! fail {
    ($($t:tt)*) => {
        $crate::fleet::error::failed(format!($($t)*))
    };
}
pub(crate) use fail;

pub(crate) fn failed(msg: impl Into<String>) -> FleetError {
    FleetError::Failed(msg.into())
}

/// An error and its sources, outermost first ("open x: permission denied").
pub(crate) fn chain(e: &dyn std::error::Error) -> String {
    let mut s = e.to_string();
    let mut at = e.source();
    while let Some(c) = at {
        let more = c.to_string();
        if !s.contains(&more) {
            s.push_str(": ");
            s.push_str(&more);
        }
        at = c.source();
    }
    s
}

/// `.ctx(|| "what was being done")` on any error: a [`FleetError::Failed`] naming it.
pub(crate) trait Ctx<T> {
    fn ctx(self, what: impl FnOnce() -> String) -> Result<T>;
}

impl<T, E: std::error::Error> Ctx<T> for std::result::Result<T, E> {
    fn ctx(self, what: impl FnOnce() -> String) -> Result<T> {
        self.map_err(|e| failed(format!("{}: {}", what(), chain(&e))))
    }
}
