//! Reports from results:
//! - [`report::write_report`]: the HTML report ([`html`], charts from [`svg`]) and CSV files of a
//!   run, from its result.json, samples.jsonl and test.log;
//! - [`import`]: Jetstress reports given as text, into the same model;
//! - [`esrp`]: the ESRP summary across servers;
//! - [`compare`]: key figures of two results side by side;
//! - [`input`]: the bounded reader every input file goes through;
//! - [`flags`]: why a result is not a complete, passing measurement (flagged wherever used).

pub mod compare;
pub mod esrp;
pub mod flags;
pub mod html;
pub mod import;
pub mod input;
pub mod report;
pub mod svg;

pub use esrp::{load, summarize, EsrpSummary, Warning};
pub use flags::Flag;
pub use import::{import_file, ImportError, ImportedReport};
pub use input::InputError;
pub use report::{write_report, ReportError};
