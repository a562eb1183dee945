//! End-to-end tests of the `mbxstress` binary, one module per area.

mod common;
#[cfg(target_os = "linux")]
mod devices;
mod docs;
mod doctor;
mod esrp;
mod findmax;
mod fleet;
#[cfg(target_os = "linux")]
mod hostile;
mod inputs;
mod iobench;
mod jetstress;
#[cfg(target_os = "linux")]
mod loadgen;
#[cfg(target_os = "linux")]
mod loadgen_findmax;
#[cfg(target_os = "linux")]
mod loadgen_idle;
/// The loadgen library's test server harness (scripts/mailserver.sh), shared, not copied.
#[cfg(target_os = "linux")]
#[path = "../../../mbx-loadgen/tests/support/mod.rs"]
mod mailserver;
mod numbers;
mod passes;
mod report;
#[cfg(target_os = "linux")]
mod result_file;
mod run;
mod safety;
mod size;
mod skip;
mod stale;
mod store;
#[cfg(target_os = "linux")]
mod submit;
mod suite;
mod throughput;
