//! The class of an `errors[]` entry of a run's result.json ([`ErrorClass`]).

use serde::{Deserialize, Serialize};

/// What kind of error an [`crate::ErrorEntry`] counts. One name table behind serde,
/// [`ErrorClass::as_str`] and `Display`, so code tells classes apart by variant, never by
/// comparing text; a name this version does not know (a result written by a later one) is kept
/// as it is ([`ErrorClass::Other`]).
///
/// Equality, hashing and order are those of the name, so a map keyed by class keeps the order
/// it had when classes were strings (result.json lists errors in that order), and an `Other`
/// holding a known name equals its variant (reading a name yields the known variant anyway).
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
#[serde(from = "String", into = "String")]
pub enum ErrorClass {
    /// `io_error`: the OS failed a read or write (or it was short).
    IoError,
    /// `no_space`: a write failed for want of space (ENOSPC, EDQUOT).
    NoSpace,
    /// `hung_io`: an I/O outstanding past the hung-I/O threshold.
    HungIo,
    /// `bad_page`: a checksum mismatch beyond one bit (torn, overwritten or garbage).
    BadPage,
    /// `correctable_page`: a checksum mismatch of exactly one bit.
    CorrectablePage,
    /// `unwritten_page`: a page of all zeros where one was written.
    UnwrittenPage,
    /// `wrong_page_number`: a valid page of this database at another place (misdirected write).
    WrongPageNumber,
    /// `wrong_database_page`: a valid page of another database.
    WrongDatabasePage,
    /// `stale_page`: a valid page older than the one last written (a lost write).
    StalePage,
    /// `patched_page`: a damaged page rewritten from its known content (page patching); not a
    /// failure.
    PatchedPage,
    /// `bad_header`: a database header page that is not a valid header copy of its database.
    BadHeader,
    /// `header_copy_damaged`: one of the two header copies damaged at open.
    HeaderCopyDamaged,
    /// `log_damaged`: log bytes that are not a valid record (and not zeros).
    LogDamaged,
    /// `log_missing`: a log file the checkpoint needs is absent.
    LogMissing,
    /// `checkpoint_damaged`: the checkpoint file is missing, damaged or ahead of the log.
    CheckpointDamaged,
    /// `lost_log_write`: a log write that reads back as zeros, in whole or in part.
    LostLogWrite,
    /// `error`: any other error that stopped the test.
    #[default]
    Error,
    /// A name this version does not know.
    Other(String),
}

impl ErrorClass {
    /// Every class this version knows, in the name table's order.
    pub const KNOWN: [ErrorClass; 17] = [
        ErrorClass::IoError,
        ErrorClass::NoSpace,
        ErrorClass::HungIo,
        ErrorClass::BadPage,
        ErrorClass::CorrectablePage,
        ErrorClass::UnwrittenPage,
        ErrorClass::WrongPageNumber,
        ErrorClass::WrongDatabasePage,
        ErrorClass::StalePage,
        ErrorClass::PatchedPage,
        ErrorClass::BadHeader,
        ErrorClass::HeaderCopyDamaged,
        ErrorClass::LogDamaged,
        ErrorClass::LogMissing,
        ErrorClass::CheckpointDamaged,
        ErrorClass::LostLogWrite,
        ErrorClass::Error,
    ];

    /// The name in result.json (`io_error`, `bad_page`, ...).
    pub fn as_str(&self) -> &str {
        match self {
            ErrorClass::IoError => "io_error",
            ErrorClass::NoSpace => "no_space",
            ErrorClass::HungIo => "hung_io",
            ErrorClass::BadPage => "bad_page",
            ErrorClass::CorrectablePage => "correctable_page",
            ErrorClass::UnwrittenPage => "unwritten_page",
            ErrorClass::WrongPageNumber => "wrong_page_number",
            ErrorClass::WrongDatabasePage => "wrong_database_page",
            ErrorClass::StalePage => "stale_page",
            ErrorClass::PatchedPage => "patched_page",
            ErrorClass::BadHeader => "bad_header",
            ErrorClass::HeaderCopyDamaged => "header_copy_damaged",
            ErrorClass::LogDamaged => "log_damaged",
            ErrorClass::LogMissing => "log_missing",
            ErrorClass::CheckpointDamaged => "checkpoint_damaged",
            ErrorClass::LostLogWrite => "lost_log_write",
            ErrorClass::Error => "error",
            ErrorClass::Other(name) => name,
        }
    }

    /// Whether the class is an I/O failure of the OS (`io_error`, `no_space`), as opposed to
    /// what verification found or the engine saw.
    pub fn is_os_io(&self) -> bool {
        matches!(self, ErrorClass::IoError | ErrorClass::NoSpace)
    }
}

name_conversions!(ErrorClass);

impl PartialEq for ErrorClass {
    fn eq(&self, other: &ErrorClass) -> bool {
        self.as_str() == other.as_str()
    }
}

impl Eq for ErrorClass {}

impl std::hash::Hash for ErrorClass {
    fn hash<H: std::hash::Hasher>(&self, state: &mut H) {
        self.as_str().hash(state);
    }
}

impl PartialOrd for ErrorClass {
    fn partial_cmp(&self, other: &ErrorClass) -> Option<std::cmp::Ordering> {
        Some(self.cmp(other))
    }
}

impl Ord for ErrorClass {
    fn cmp(&self, other: &ErrorClass) -> std::cmp::Ordering {
        self.as_str().cmp(other.as_str())
    }
}

/// A class against its result.json name, as tests and readers of older files check it.
impl PartialEq<str> for ErrorClass {
    fn eq(&self, other: &str) -> bool {
        self.as_str() == other
    }
}

impl PartialEq<&str> for ErrorClass {
    fn eq(&self, other: &&str) -> bool {
        self.as_str() == *other
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_known_class_round_trips_through_its_name() {
        let mut names = std::collections::BTreeSet::new();
        for c in &ErrorClass::KNOWN {
            assert!(names.insert(c.as_str()), "{c} named twice");
            let json = serde_json::to_string(&c).expect("a class serializes");
            assert_eq!(json, format!("\"{}\"", c.as_str()));
            let back: ErrorClass = serde_json::from_str(&json).expect("a class name reads back");
            assert_eq!(&back, c);
            assert!(
                !matches!(back, ErrorClass::Other(_)),
                "{c} read back as Other"
            );
        }
    }

    #[test]
    fn an_unknown_name_is_kept_and_orders_by_name() {
        let c: ErrorClass = serde_json::from_str("\"torn_sector\"").expect("any string reads");
        assert_eq!(c, ErrorClass::Other("torn_sector".into()));
        assert_eq!(
            serde_json::to_string(&c).expect("serializes"),
            "\"torn_sector\""
        );
        // The order of names, not of variants: "bad_page" < "hung_io" < "io_error".
        let mut v = vec![ErrorClass::IoError, ErrorClass::HungIo, ErrorClass::BadPage];
        v.sort();
        assert_eq!(v, ["bad_page", "hung_io", "io_error"]);
        assert_eq!(format!("{:<10}|", ErrorClass::Error), "error     |");
    }
}
