//! End-to-end tests of the `mbxstress` binary, one module per area.

mod common;
mod inputs;
mod numbers;
mod report;
mod run;
mod safety;
mod size;
mod store;
