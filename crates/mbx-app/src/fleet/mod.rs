//! `fleet run` and `fleet loadgen`: the test on several servers, or simulated mail clients on
//! several client machines, at once over SSH, as a library.
//!
//! The coordinator only drives the system `ssh` client (`std::process::Command`, BatchMode=yes:
//! keys or an agent, never a password): checks every host in parallel (reachable, version or
//! `--push`, clock offset, doctor), copies each its resolved request ([`crate::request`]),
//! starts `mbxstress run --request FILE --progress jsonl --start-gate stdin` on each, reads
//! their event streams (as [`crate::Line`]), sends every host the same start time once all are
//! ready, and copies each result folder back as its run ends (`tar` over ssh, regular files
//! only). The aggregate is the `esrp` summary of the per-host result.json files; for `fleet
//! loadgen` (`loadgen run --request FILE` on each client, its slice K/N of the users), the
//! clients' results merged into one (histograms merged) beside the mail servers' samples.
//!
//! The parts:
//! - [`hosts`]: the hosts file (strict keys, safe unique names, checked profiles);
//! - [`plan`]: each host's resolved request (its paths, profile, slice of the users) and files;
//! - [`remote`]: the remote protocol: command lines, the wrapper around the run, quoting;
//! - [`coordinator`]: the host state machine, pure: `on(Message) -> Vec<Action>`, time an input;
//! - [`ssh`]: the processes: checks, `--push`, the runs' ssh sessions, collection, copy-back;
//! - [`driver`]: the thin I/O loop that feeds the state machine and carries out its actions;
//! - [`summary`]: fleet.json's schema and contents; [`html`]: fleet.html (maud);
//! - `loadgen`: fleet loadgen's server watches and merged result;
//! - [`watch`]: a mail server's CPU, memory and disks read from its /proc over ssh during a run;
//! - [`error`]: [`FleetError`], usage (exit 2) or failure (exit 3).
//!
//! The binary keeps the flags, the rendering (a [`FleetView`]) and the exit codes.

pub mod coordinator;
pub mod driver;
pub mod error;
pub mod hosts;
pub mod html;
mod loadgen;
pub mod plan;
pub mod remote;
pub mod ssh;
pub mod summary;
pub mod watch;

pub use coordinator::{
    Action, Checked, Collect, Config, Coordinator, HostRun, Message, Notice, Now, State,
};
pub use driver::{run, FleetJob, FleetRequest, FleetView, Merged, Ran};
pub use error::{FleetError, Result};
pub use hosts::{Host, HostEntry};
pub use ssh::{find_push_binary, Push, Upload};
pub use summary::{FleetSummary, HostSummary};
