//! End-to-end tests of the `mbxstress` binary, one module per area.

mod common;
mod size;
mod store;
