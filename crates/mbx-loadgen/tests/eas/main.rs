//! Exchange ActiveSync: the WBXML codec against libwbxml (`wbxml`), the client against a
//! scripted server (`client`) and against SOGo (`server`; calendar, contacts and meeting requests
//! in `pim`). One test binary rather than four:
//! each is some 24 MB written, and the suite's disk writes are budgeted (bench/test-footprint.sh).

mod client;
mod pim;
mod server;
mod wbxml;
