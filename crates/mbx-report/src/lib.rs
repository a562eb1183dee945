//! Reports from results, over the typed result model of `mbx-result` (the only result types
//! this crate knows):
//! - [`report::write_report`]: reads a run's result.json, samples.jsonl and test.log
//!   ([`report::load_run`]) and writes it through the [`export`]ers: the HTML report ([`html`],
//!   charts from [`svg`]), the CSV files, result.json;
//! - [`loadgen`]: the report of a `mbxstress loadgen` result (`kind` `loadgen`), which
//!   [`report::write_report_as`] renders for a loadgen results folder, with the mail servers
//!   watched by `fleet loadgen` from [`loadgen_servers`];
//! - [`import`]: Jetstress reports given as text, into the same model;
//! - [`esrp`]: the ESRP summary across servers;
//! - [`compare`]: key figures of two results side by side;
//! - [`input`]: the bounded reader every input file goes through (re-exported from `mbx-config`);
//! - [`flags`]: why a result is not a complete, passing measurement (flagged wherever used).

mod columns;
pub mod compare;
pub mod esrp;
pub mod export;
pub mod flags;
mod folder;
mod header;
pub mod html;
mod html_input;
pub mod import;
/// The loadgen result's report (report.html, tasks.csv, commands.csv, samples.csv).
pub mod loadgen;
pub mod loadgen_servers;
mod markup_check;
/// The bounded reader, now in `mbx-config` (every crate reads its inputs through it); kept here
/// so `mbx_report::input::...` paths keep working.
pub use mbx_config::input;
pub mod report;
pub mod steps;
/// suite.html: the document of `run --test suite`.
pub mod suite;
pub mod svg;

pub use esrp::{load, summarize, EsrpSummary, Exclusion, Warning};
pub use export::{Exporter, Format};
pub use flags::Flag;
pub use import::{import_file, ImportError, ImportedReport};
pub use input::InputError;
pub use report::{write_report, ReportError, RunFolder};
