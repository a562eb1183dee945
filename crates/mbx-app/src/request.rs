//! The resolved request a `fleet` coordinator sends each host (`request.json` in the host's run
//! folder, mode 0600, copied over ssh's input) and the host's `mbxstress run --request FILE` or
//! `loadgen run --request FILE` reads back: every value already resolved and validated on the
//! coordinator, with what differs per host (its paths, profile, slice of the users, results
//! folder) set there. The template users' password never enters it: it travels as its own
//! 0600 file (`--password-file`).
//!
//! A request names the version that made it; a host of another version refuses it, naming
//! both.

use std::path::{Path, PathBuf};

use mbx_config::TestKind;
use serde::{Deserialize, Serialize};

use crate::config::CarriedConfig;
use crate::loadgen::request::DaySpec;
use crate::AppError;

/// This build's version: a request says which made it.
pub const VERSION: &str = env!("CARGO_PKG_VERSION");

/// The largest request read (a request is a few KB: users are a file or a template).
const REQUEST_LIMIT: u64 = 16 * 1024 * 1024;

/// What one host is asked to run.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct HostRequest {
    /// The mbxstress version of the coordinator that made it.
    pub mbxstress: String,
    /// The job.
    pub job: HostJob,
}

/// A host's job.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case", deny_unknown_fields)]
pub enum HostJob {
    /// `fleet run`: one storage test.
    Run(RunSpec),
    /// `fleet loadgen`: this client's slice of the simulated users' day.
    Loadgen(DaySpec),
}

/// One storage test, resolved (`fleet run`'s host).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RunSpec {
    /// The test type.
    pub kind: TestKind,
    /// The configuration with the host's paths and profile, each value's origin with it.
    pub config: CarriedConfig,
    /// The results folder on the host.
    pub out: PathBuf,
    /// `--force`.
    pub force: bool,
    /// `--allow-device`.
    pub allow_device: bool,
}

impl HostRequest {
    /// A request of this version.
    pub fn new(job: HostJob) -> HostRequest {
        HostRequest {
            mbxstress: VERSION.to_string(),
            job,
        }
    }

    /// The request file's bytes (JSON).
    pub fn to_bytes(&self) -> Result<Vec<u8>, AppError> {
        let mut b = serde_json::to_vec_pretty(self)
            .map_err(|e| AppError::Failed(format!("serializing the host's request: {e}")))?;
        b.push(b'\n');
        Ok(b)
    }

    /// The request in `bytes` (read from `path`): one of this version, or a usage error naming
    /// both versions.
    pub fn parse(bytes: &[u8], path: &Path) -> Result<HostRequest, AppError> {
        /// The version alone, read first: a request of another version may not parse.
        #[derive(Deserialize)]
        struct Head {
            mbxstress: Option<String>,
        }
        let head: Head = serde_json::from_slice(bytes).map_err(|e| {
            AppError::usage(format!(
                "--request {}: not a request of fleet's coordinator ({e})",
                path.display()
            ))
        })?;
        let theirs = head
            .mbxstress
            .unwrap_or_else(|| "an unknown version".into());
        if theirs != VERSION {
            return Err(AppError::usage(format!(
                "--request {}: the request was made by mbxstress {theirs}, and this is mbxstress {VERSION}: run the same version on the coordinator and every host (fleet --push copies the coordinator's build)",
                path.display()
            )));
        }
        serde_json::from_slice(bytes).map_err(|e| {
            AppError::usage(format!(
                "--request {}: not a request of mbxstress {VERSION} ({e})",
                path.display()
            ))
        })
    }

    /// Reads the request file `path` (bounded): [`HostRequest::parse`].
    pub fn read(path: &Path) -> Result<HostRequest, AppError> {
        let text = mbx_config::input::read_bounded(path, REQUEST_LIMIT, "a fleet host's request")
            .map_err(|e| AppError::usage(format!("--request: {e}")))?;
        HostRequest::parse(text.as_bytes(), path)
    }
}

/// The results folder a request names, against the command line's `--out` (fleet's remote
/// command line says it too, so the host's run is found by its folder): they must agree.
pub fn out_agrees(flag: Option<&Path>, request: &Path) -> Result<(), AppError> {
    match flag {
        Some(f) if f != request => Err(AppError::usage(format!(
            "--out {} differs from the request's results folder {}",
            f.display(),
            request.display()
        ))),
        _ => Ok(()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_request_of_another_version_is_refused_naming_both() {
        let mut r = HostRequest::new(HostJob::Run(RunSpec {
            kind: TestKind::Performance,
            config: CarriedConfig {
                config: mbx_config::RunConfig::default(),
                origins: Default::default(),
            },
            out: "o".into(),
            force: false,
            allow_device: false,
        }));
        let bytes = r.to_bytes().expect("bytes");
        assert_eq!(
            HostRequest::parse(&bytes, Path::new("r.json")).expect("same version"),
            r
        );
        r.mbxstress = "0.0.1-other".into();
        let e = HostRequest::parse(&r.to_bytes().expect("bytes"), Path::new("r.json"))
            .expect_err("another version")
            .to_string();
        assert!(
            e.contains("mbxstress 0.0.1-other") && e.contains(&format!("mbxstress {VERSION}")),
            "{e}"
        );
    }
}
