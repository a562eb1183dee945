//! The mbxstress result model: serde types only, no I/O.
//!
//! Every crate that writes or reads a result names these types: the engine builds a
//! [`RunResult`] and emits [`Sample`]s, the report writer reads them back from result.json and
//! samples.jsonl, the Jetstress importer produces the same [`BackupRow`], [`SoftRecoveryRow`] and
//! [`ChecksumRow`] a backup, soft-recovery or checksum run writes, and `esrp` and `compare` read
//! both through them. The JSON keys are a public interface (docs/results.md;
//! docs/results.md): fields may be added, never renamed or removed without a schema bump.
//!
//! The configuration's types ([`mbx_config::RunConfig`], [`Profile`]) and the test type
//! ([`TestKind`]) are defined in `mbx-config`, the first stage of the pipeline, and re-exported
//! here because a result embeds them.

/// The conversions of a name-table enum (one with `KNOWN`, `as_str` and `Other(String)`): from
/// a name (its known variant, else `Other`), to its name, and `Display` as the name (padded).
macro_rules! name_conversions {
    ($t:ident) => {
        impl From<&str> for $t {
            fn from(name: &str) -> $t {
                $t::KNOWN
                    .into_iter()
                    .find(|c| c.as_str() == name)
                    .unwrap_or_else(|| $t::Other(name.to_string()))
            }
        }

        impl From<String> for $t {
            fn from(name: String) -> $t {
                $t::from(name.as_str())
            }
        }

        impl From<$t> for String {
            fn from(value: $t) -> String {
                value.as_str().to_string()
            }
        }

        impl std::fmt::Display for $t {
            fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.pad(self.as_str())
            }
        }
    };
}

mod doctor;
mod error_class;
mod loadgen;
mod rows;
mod run;
mod sample;
mod search;
mod step;

pub use doctor::{CheckName, DoctorCheck, DoctorReport, DoctorStatus, DOCTOR_SCHEMA};
pub use error_class::ErrorClass;
pub use loadgen::*;
pub use mbx_config::{Arrivals, Pacing, Profile, RunConfig, TestKind};
pub use rows::{BackupRow, ChecksumRow, SoftRecoveryRow};
pub use run::*;
pub use sample::{Sample, SampleHost, SampleInstance, SamplePacing};
pub use search::{Confirmation, FindMax, SearchStep, Throughput, Tuning, FIND_MAX_SCHEMA};
