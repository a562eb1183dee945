//! Exchange ActiveSync (MS-ASHTTP, MS-ASCMD): the protocol of every phone and tablet mail app,
//! and the one Exchange client protocol with a public specification.
//!
//! - [`wbxml`]: the WBXML codec (MS-ASWBXML), a tree of elements, text and opaque bytes to and
//!   from bytes, bounded and with typed errors;
//! - [`codepages`]: its code pages as one table, and a [`codepages::Tag`] constant per element;
//! - [`client`]: the HTTP/1.1 client of one device (OPTIONS, Provision, FolderSync, Sync,
//!   SendMail, SmartReply, SmartForward, MoveItems, ItemOperations, Ping; Sync of calendar and
//!   contacts and Sync `Add`);
//! - [`calendar`], [`contacts`]: MS-ASCAL appointments and MS-ASCNTC contacts as Sync
//!   `ApplicationData`, both ways;
//! - [`ical`]: meeting requests, iCalendar `METHOD:REQUEST` in an iMIP message;
//! - [`device`]: a simulated device of the user day's `eas` client type (`day` drives it; its
//!   calendar and contacts tasks are not in the day yet).

pub mod calendar;
pub mod client;
pub mod codepages;
pub mod contacts;
pub mod device;
pub mod ical;
pub mod wbxml;

pub use codepages::Tag;
pub use wbxml::{decode, encode, Element, Limits, Node, WbxmlError};
