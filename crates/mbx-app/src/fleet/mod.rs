//! `fleet run`: the test on several servers at once over SSH, as a library.
//!
//! The coordinator only drives the system `ssh` client (`std::process::Command`, BatchMode=yes:
//! keys or an agent, never a password): checks every host in parallel (reachable, version or
//! `--push`, clock offset, doctor), starts `mbxstress run --progress jsonl --start-gate stdin`
//! on each, reads their event streams (as [`crate::Line`]), sends every host the same start time
//! once all are ready, and copies each result folder back as its run ends (`tar` over ssh,
//! regular files only). The aggregate is the `esrp` summary of the per-host result.json files.
//!
//! The parts:
//! - [`hosts`]: the hosts file (strict keys, safe unique names, checked profiles);
//! - [`remote`]: the remote protocol: command lines, the wrapper around the run, quoting;
//! - [`coordinator`]: the host state machine, pure: `on(Message) -> Vec<Action>`, time an input;
//! - [`ssh`]: the processes: checks, `--push`, the runs' ssh sessions, collection, copy-back;
//! - [`driver`]: the thin I/O loop that feeds the state machine and carries out its actions;
//! - [`summary`]: fleet.json's schema and writer; [`html`]: fleet.html (maud).
//!
//! The binary keeps the flags, the rendering (a [`FleetView`]) and the exit codes.

pub mod coordinator;
pub mod driver;
pub mod hosts;
pub mod html;
pub mod remote;
pub mod ssh;
pub mod summary;

pub use coordinator::{Action, Collect, Config, Coordinator, HostRun, Message, Notice, Now, State};
pub use driver::{run, FleetRequest, FleetView, Ran};
pub use hosts::{Host, HostEntry};
pub use ssh::{find_push_binary, Checked, Push};
pub use summary::{FleetSummary, HostSummary};

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
        $crate::fleet::failed(format!($($t)*))
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
