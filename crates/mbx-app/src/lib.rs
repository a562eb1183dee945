//! mbxstress's application layer: what a command does, as a library. The binary (`mbxstress`)
//! keeps the flags, the rendering to the terminal and the exit codes; everything that decides a
//! test's result, a host's state or a doctor finding lives here and reports through one typed
//! event stream ([`event::Event`]), which `--progress jsonl` writes and `fleet run` reads back.

pub mod config;
pub mod doctor;
pub mod error;
pub mod esrp;
pub mod event;
pub mod findmax;
pub mod fleet;
pub mod loadgen;
pub mod num;
pub mod prepare;
pub mod present;
pub mod request;
pub mod results_folder;
pub mod run;
pub mod size;
pub mod suite;
pub mod suite_plan;

pub use error::AppError;
pub use event::{Event, EventSink, Line};
