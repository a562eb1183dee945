//! Reports from results: import of Jetstress reports given as text ([`import`]) and the ESRP
//! summary across servers ([`esrp`]). HTML and CSV rendering and `compare` are still to come.

pub mod esrp;
pub mod import;

pub use esrp::{load, summarize, EsrpSummary};
pub use import::{import_file, ImportError, ImportedReport};
