//! End-to-end tests of the `mbxstress` binary, one module per area.

mod common;
mod devices;
mod iobench;
mod report;
mod run;
mod size;
mod store;
