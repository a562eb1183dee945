//! mbxstress's application layer: what a command does, as a library. The binary (`mbxstress`)
//! keeps the flags, the rendering to the terminal and the exit codes; everything that decides a
//! test's result, a host's state or a doctor finding lives here and reports through one typed
//! event stream ([`event::Event`]), which `--progress jsonl` writes and `fleet run` reads back.

pub mod event;
pub mod fleet;

pub use event::{Event, EventSink, Line};
