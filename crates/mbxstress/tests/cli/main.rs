//! End-to-end tests of the `mbxstress` binary, one module per area.

mod common;
mod numbers;
mod report;
mod run;
mod size;
mod store;
