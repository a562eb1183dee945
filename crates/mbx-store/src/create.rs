//! Creating, attaching and resuming a database set.
//!
//! 1. [`plan_paths`] maps `--db-path` / `--log-path` to one file and one log directory per
//!    database.
//! 2. [`prepare`] inspects every path first and writes nothing until all pass. A file or
//!    device that is not ours is refused without `force`, and a block device without
//!    `allow_device`; with `allow_device` alone, a device that is not blank (a filesystem, LVM,
//!    RAID, swap, a partition table, any data: [`crate::signature`]) is refused too. An existing database with other parameters is refused, and free space is
//!    checked per filesystem.
//! 3. All databases are then written in parallel, one thread and one I/O queue each, with large
//!    sequential writes (a [`mbx_io::seq`] pass). Every page is unique, built by
//!    [`crate::page::build_data_page`].
//! 4. The header records progress: state `Creating` and a durable watermark, updated after an
//!    fdatasync every [`SYNC_EVERY_BYTES`] of contiguous completed pages (the pass's watermark:
//!    a page counts only once every page before it completed). An interrupted creation (Ctrl-C,
//!    crash, I/O error) therefore resumes from the watermark. A database becomes `Clean`, and
//!    attachable, only when every page is durable.

use std::path::{Path, PathBuf};
use std::sync::atomic::AtomicBool;
use std::sync::Arc;

use mbx_core::path::existing_ancestor;
use mbx_io::seq::{run_pass, ChunkData, PassEnd, SeqOp, SeqPass};
use mbx_io::{open_queue, platform, AlignedBuf, EngineKind, IoFile, IoQueue, OpenMode};

use crate::checkpoint::{Checkpoint, CHECKPOINT_FILE, SLOT};
use crate::header::{DbHeader, DbState, FORMAT_VERSION, HEADER_PAGES};
use crate::log::{decode_log_header, encode_log_header, log_file_name, LOG_FILE_SIZE, LOG_SECTOR};
use crate::log_dir::{describe_log_dir, list_log_generations, LogDirState};
use crate::lsn::Lsn;
use crate::page::{build_data_page, PageHeader, KIND_DATA, MAX_COMPRESSIBILITY_PCT, PAGE_SIZE};
use crate::StoreError;

/// Write size during creation: 32 pages.
pub const CHUNK_BYTES: usize = 1 << 20;
/// Durable-progress interval: fdatasync and header update every this many bytes.
pub const SYNC_EVERY_BYTES: u64 = 1 << 30;

/// Where one database lives.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DatabaseSpec {
    /// Index in the set (0-based).
    pub index: u32,
    /// The database file (or block device).
    pub path: PathBuf,
    /// Its log directory.
    pub log_dir: PathBuf,
}

/// Maps the user's paths to databases. `db_paths`: one path per database, or one directory for
/// all; a block device must be given once per database. `log_paths`: likewise (directories).
pub fn plan_paths(
    db_paths: &[PathBuf],
    log_paths: &[PathBuf],
    databases: u32,
) -> Result<Vec<DatabaseSpec>, StoreError> {
    let n = databases as usize;
    if n == 0 {
        return Err(StoreError::Invalid(
            "at least one database is needed".into(),
        ));
    }
    let pick = |paths: &[PathBuf], flag: &str| -> Result<Vec<(PathBuf, bool)>, StoreError> {
        match paths.len() {
            1 if n > 1 => Ok((0..n).map(|_| (paths[0].clone(), true)).collect()),
            len if len == n => Ok(paths.iter().map(|p| (p.clone(), false)).collect()),
            0 => Err(StoreError::Invalid(format!("{flag} is required"))),
            len => Err(StoreError::Invalid(format!(
                "{len} {flag} values for {n} databases: give one per database, or a single directory for all"
            ))),
        }
    };
    let dbs = pick(db_paths, "--db-path")?;
    let logs = pick(log_paths, "--log-path")?;
    let mut specs = Vec::with_capacity(n);
    for (i, ((db, shared_db), (log, shared_log))) in dbs.into_iter().zip(logs).enumerate() {
        let is_device = platform::is_block_device(&db).unwrap_or(false);
        if is_device && shared_db {
            return Err(StoreError::Invalid(format!(
                "{} is a block device: it can hold one database; give one --db-path per database",
                db.display()
            )));
        }
        let path = if is_device || db.extension().is_some_and(|e| e == "edb") {
            db
        } else {
            db.join(database_file_name(i as u32))
        };
        let log_dir = if shared_log {
            log.join(format!("db{:03}", i + 1))
        } else {
            log
        };
        specs.push(DatabaseSpec {
            index: i as u32,
            path,
            log_dir,
        });
    }
    check_distinct(&specs)?;
    Ok(specs)
}

/// `p` made absolute with symlinks and `..` resolved, also for paths that do not exist yet: the
/// longest existing prefix is canonicalized and the rest appended lexically.
pub fn resolve_path(p: &Path) -> PathBuf {
    let abs = if p.is_absolute() {
        p.to_path_buf()
    } else {
        std::env::current_dir().unwrap_or_default().join(p)
    };
    // Walk the components: each prefix that exists is canonical (no symlinks, no `..`), so a
    // `..` after it is its parent; past the existing part, `..` is lexical.
    let mut out = PathBuf::new();
    for c in abs.components() {
        match c {
            std::path::Component::ParentDir => {
                out.pop();
            }
            std::path::Component::CurDir => {}
            std::path::Component::Normal(name) => {
                let next = out.join(name);
                out = next.canonicalize().unwrap_or(next);
            }
            other => out.push(other),
        }
    }
    out
}

/// Every database file and every log directory must be distinct (after resolving symlinks and
/// `..`), and a log location must be a directory:
/// otherwise two databases would share one file, or two log streams one folder. Checked before
/// anything is written.
fn check_distinct(specs: &[DatabaseSpec]) -> Result<(), StoreError> {
    let dbs: Vec<PathBuf> = specs.iter().map(|s| resolve_path(&s.path)).collect();
    let logs: Vec<PathBuf> = specs.iter().map(|s| resolve_path(&s.log_dir)).collect();
    for (i, spec) in specs.iter().enumerate() {
        for j in 0..i {
            if dbs[i] == dbs[j] {
                return Err(StoreError::Invalid(format!(
                    "--db-path: databases {} and {} would both be {}; give each database its own file",
                    j + 1,
                    i + 1,
                    spec.path.display()
                )));
            }
            if logs[i] == logs[j] {
                return Err(StoreError::Invalid(format!(
                    "--log-path: databases {} and {} would both write their logs to {}; give each database its own log folder, or one parent folder for all",
                    j + 1,
                    i + 1,
                    spec.log_dir.display()
                )));
            }
        }
        // The log location, or the nearest part of it that exists, must be a directory.
        let anchor = existing_ancestor(&spec.log_dir);
        if !anchor.is_dir() {
            return Err(StoreError::Invalid(format!(
                "--log-path {}: {} is not a directory; logs need a folder",
                spec.log_dir.display(),
                anchor.display()
            )));
        }
        let db_anchor = existing_ancestor(spec.path.parent().unwrap_or(Path::new(".")));
        if spec.path.exists() && spec.path.is_dir() {
            return Err(StoreError::Invalid(format!(
                "--db-path {} is a directory; a database file was expected there",
                spec.path.display()
            )));
        }
        if !spec.path.exists() && !db_anchor.is_dir() {
            return Err(StoreError::Invalid(format!(
                "--db-path {}: {} is not a directory",
                spec.path.display(),
                db_anchor.display()
            )));
        }
    }
    Ok(())
}

/// File name of database `index` inside a directory.
pub fn database_file_name(index: u32) -> String {
    format!("mbxstress{:03}.edb", index + 1)
}

/// What to create.
#[derive(Debug, Clone)]
pub struct CreateParams {
    /// Data pages per database (the file has two more, for the headers).
    pub data_pages: u64,
    /// Mailboxes of the profile (recorded, and checked on attach).
    pub mailboxes: u64,
    /// Mailbox quota, MB (recorded, and checked on attach).
    pub quota_mb: u64,
    /// Databases in the set.
    pub databases: u32,
    /// Payload compressibility in percent (0 = incompressible).
    pub compressibility_pct: u8,
    /// I/O backend.
    pub engine: EngineKind,
    /// O_DIRECT (default true).
    pub direct: bool,
    /// Overwrite files and databases that are not ours or do not match.
    pub force: bool,
    /// Accept block devices.
    pub allow_device: bool,
    /// Writes in flight per database.
    pub queue_depth: usize,
    /// Tool version recorded in headers.
    pub tool_version: String,
}

/// Largest database mbxstress creates: 64 TiB (ESE's own limit is 16 TB; Exchange recommends
/// at most 2 TB). Keeps every size computation far from overflow.
pub const MAX_DATABASE_BYTES: u64 = 64 << 40;

impl CreateParams {
    /// Data pages per database for a profile: mailboxes x quota (MiB) split evenly, at least
    /// one; `None` if a database would exceed [`MAX_DATABASE_BYTES`] (or the numbers overflow).
    pub fn data_pages_for(mailboxes: u64, quota_mb: u64, databases: u32) -> Option<u64> {
        let bytes = u128::from(mailboxes)
            .checked_mul(u128::from(quota_mb))?
            .checked_mul(1 << 20)?
            / u128::from(databases.max(1));
        if bytes > u128::from(MAX_DATABASE_BYTES) {
            return None;
        }
        u64::try_from(bytes.div_ceil(PAGE_SIZE as u128))
            .ok()
            .map(|p| p.max(1))
    }

    /// Bytes of each database file.
    pub fn file_bytes(&self) -> u64 {
        self.data_pages
            .saturating_add(HEADER_PAGES)
            .saturating_mul(PAGE_SIZE as u64)
    }
}

/// Progress of the creation, for the CLI to render. The library never prints.
#[derive(Debug, Clone, PartialEq)]
pub enum CreateEvent {
    /// The plan: what happens to each database.
    Planned {
        /// Database index.
        index: u32,
        /// File.
        path: PathBuf,
        /// "create", "resume" or "attach".
        action: &'static str,
        /// Bytes to write.
        bytes_to_write: u64,
    },
    /// Bytes written so far for one database.
    Progress {
        /// Database index.
        index: u32,
        /// Bytes written since the start of this run.
        bytes_done: u64,
    },
    /// One database is complete and durable.
    Finished {
        /// Database index.
        index: u32,
    },
}

/// A database ready for use.
#[derive(Debug, Clone)]
pub struct PreparedDatabase {
    /// Where it lives.
    pub spec: DatabaseSpec,
    /// Its header.
    pub header: DbHeader,
    /// True if it existed and was attached without writing.
    pub attached: bool,
}

#[derive(Debug)]
enum Action {
    Create,
    Resume(DbHeader),
    Attach(DbHeader),
}

impl Action {
    fn name(&self) -> &'static str {
        match self {
            Action::Create => "create",
            Action::Resume(_) => "resume",
            Action::Attach(_) => "attach",
        }
    }
}

/// Hook to wrap each database's I/O queue (tests inject faults with it).
pub type QueueWrapper = dyn Fn(u32, Box<dyn IoQueue>) -> Box<dyn IoQueue> + Sync;

/// Creates, resumes or attaches every database of the set. See the module documentation.
pub fn prepare(
    specs: &[DatabaseSpec],
    params: &CreateParams,
    on_event: &(dyn Fn(CreateEvent) + Sync),
    cancel: &AtomicBool,
    wrap: Option<&QueueWrapper>,
) -> Result<Vec<PreparedDatabase>, StoreError> {
    if params.compressibility_pct > MAX_COMPRESSIBILITY_PCT {
        return Err(StoreError::Invalid(format!(
            "--compressibility-pct must be 0..={MAX_COMPRESSIBILITY_PCT}, got {}",
            params.compressibility_pct
        )));
    }
    if params.data_pages == 0 || params.file_bytes() > MAX_DATABASE_BYTES {
        return Err(StoreError::Invalid(format!(
            "a database of {} data pages is outside 1 page ..= {} TiB",
            params.data_pages,
            MAX_DATABASE_BYTES >> 40
        )));
    }
    // Inspect everything before writing anything.
    let mut actions = Vec::with_capacity(specs.len());
    for spec in specs {
        actions.push(inspect(spec, params)?);
        check_logs(spec, params)?;
    }
    check_space(specs, &actions, params)?;
    for (spec, action) in specs.iter().zip(&actions) {
        on_event(CreateEvent::Planned {
            index: spec.index,
            path: spec.path.clone(),
            action: action.name(),
            bytes_to_write: bytes_to_write(action, params),
        });
    }

    let results: Vec<Result<PreparedDatabase, StoreError>> = std::thread::scope(|s| {
        let handles: Vec<_> = specs
            .iter()
            .zip(actions)
            .map(|(spec, action)| {
                s.spawn(move || create_one(spec, action, params, on_event, cancel, wrap))
            })
            .collect();
        handles
            .into_iter()
            .map(|h| {
                h.join().unwrap_or_else(|_| {
                    Err(StoreError::Invalid(
                        "a database creation thread panicked".into(),
                    ))
                })
            })
            .collect()
    });
    // Report an interruption as such even if other databases finished; otherwise the first error.
    let mut prepared = Vec::with_capacity(results.len());
    let mut first_err = None;
    let (mut done, mut total) = (0u64, 0u64);
    let mut interrupted = false;
    for r in results {
        match r {
            Ok(p) => {
                done += params.file_bytes();
                total += params.file_bytes();
                prepared.push(p);
            }
            Err(StoreError::Interrupted {
                done_bytes,
                total_bytes,
            }) => {
                interrupted = true;
                done += done_bytes;
                total += total_bytes;
            }
            Err(e) => {
                if first_err.is_none() {
                    first_err = Some(e);
                }
            }
        }
    }
    if let Some(e) = first_err {
        return Err(e);
    }
    if interrupted {
        return Err(StoreError::Interrupted {
            done_bytes: done,
            total_bytes: total,
        });
    }
    Ok(prepared)
}

fn bytes_to_write(action: &Action, params: &CreateParams) -> u64 {
    match action {
        Action::Create => params.file_bytes(),
        Action::Resume(h) => {
            (params.data_pages - h.created_pages.min(params.data_pages)) * PAGE_SIZE as u64
        }
        Action::Attach(_) => 0,
    }
}

/// The header of an existing file, or `None` if it is not an mbxstress database.
fn read_header(path: &Path) -> Result<Option<DbHeader>, StoreError> {
    match crate::verify::read_database_header(path) {
        Ok(h) => Ok(Some(h)),
        Err(StoreError::NotADatabase { .. }) => Ok(None),
        Err(e) => Err(e),
    }
}

fn inspect(spec: &DatabaseSpec, params: &CreateParams) -> Result<Action, StoreError> {
    let path = &spec.path;
    let meta = match std::fs::metadata(path) {
        Ok(m) => m,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Action::Create),
        Err(e) => return Err(mbx_io::IoError::new("inspect", path, e).into()),
    };
    if meta.is_dir() {
        return Err(StoreError::Invalid(format!(
            "{} is a directory; a database file was expected there",
            path.display()
        )));
    }
    let device = platform::is_block_device(path).unwrap_or(false);
    if device && !params.allow_device {
        return Err(StoreError::Device { path: path.clone() });
    }
    if !device && meta.is_file() && meta.len() == 0 {
        // An empty file holds nothing to lose (the lock creates one for a new database).
        return Ok(Action::Create);
    }
    if device {
        // Refuse a mounted or otherwise used device, and claim it exclusively for the rest of
        // the command, so that it cannot be mounted while we write it.
        match platform::claim_device(path).map_err(|e| mbx_io::IoError::new("inspect", path, e))? {
            platform::DeviceStatus::InUse(u) => {
                return Err(StoreError::DeviceInUse {
                    path: path.clone(),
                    reason: u.to_string(),
                })
            }
            platform::DeviceStatus::Unused(claim) => claim.hold_for_process(),
            platform::DeviceStatus::NotADevice => {}
        }
    }
    let header = read_header(path)?;
    let Some(h) = header else {
        if params.force {
            return Ok(Action::Create);
        }
        if device && params.allow_device {
            // Not ours: only a blank device may be written without --force (an unmounted device
            // may hold a filesystem mounted elsewhere, a SAN LUN on another server).
            return match crate::signature::inspect_device(path)? {
                crate::signature::Contents::Blank => Ok(Action::Create),
                contents => Err(StoreError::DeviceNotBlank {
                    path: path.clone(),
                    contents,
                }),
            };
        }
        return Err(StoreError::NotOurs {
            path: path.clone(),
            what: "an mbxstress database",
        });
    };
    let mismatch =
        |field: &'static str, existing: String, requested: String| StoreError::ParamsMismatch {
            path: path.clone(),
            field,
            existing,
            requested,
        };
    let checks = [
        (
            "data pages",
            h.data_pages().to_string(),
            params.data_pages.to_string(),
        ),
        (
            "compressibility_pct",
            h.compressibility_pct.to_string(),
            params.compressibility_pct.to_string(),
        ),
        (
            "format version",
            h.format_version.to_string(),
            FORMAT_VERSION.to_string(),
        ),
        (
            "database index",
            (h.database_index + 1).to_string(),
            (spec.index + 1).to_string(),
        ),
    ];
    for (field, existing, requested) in checks {
        if existing != requested {
            if params.force {
                return Ok(Action::Create);
            }
            return Err(mismatch(field, existing, requested));
        }
    }
    if !device && meta.len() != h.file_bytes() && h.state != DbState::Creating {
        return Err(StoreError::Damaged {
            path: path.clone(),
            reason: format!(
                "the header says {} bytes but the file has {}",
                h.file_bytes(),
                meta.len()
            ),
        });
    }
    Ok(match h.state {
        DbState::Creating => Action::Resume(h),
        DbState::Clean | DbState::Dirty => Action::Attach(h),
    })
}

/// Existing log files must be ours (or `force`): `prepare` may delete them to start a new log.
fn check_logs(spec: &DatabaseSpec, params: &CreateParams) -> Result<(), StoreError> {
    if params.force {
        return Ok(());
    }
    for generation in list_log_generations(&spec.log_dir)? {
        let log = spec.log_dir.join(log_file_name(generation));
        // An empty file holds nothing to lose: a run that stopped (disk full, crash) after
        // creating a log file and before its header was written leaves one.
        if std::fs::metadata(&log).is_ok_and(|m| m.is_file() && m.len() == 0) {
            continue;
        }
        let mut head = vec![0u8; LOG_SECTOR];
        let ok = std::fs::File::open(&log)
            .and_then(|f| platform::read_exact_at(&f, &mut head, 0))
            .map(|_| decode_log_header(&head).is_some())
            .unwrap_or(false);
        if !ok {
            return Err(StoreError::NotOurs {
                path: log,
                what: "an mbxstress log file",
            });
        }
    }
    Ok(())
}

/// Bytes that [`prepare`] would still write, per filesystem: (a path on it, bytes). What partial
/// files already occupy is not counted again.
pub fn space_needed(
    specs: &[DatabaseSpec],
    params: &CreateParams,
) -> Result<Vec<(PathBuf, u64)>, StoreError> {
    let actions = specs
        .iter()
        .map(|s| inspect(s, params))
        .collect::<Result<Vec<_>, _>>()?;
    Ok(space_needs(specs, &actions, params)?
        .into_iter()
        .map(|(_, anchor, bytes)| (anchor, bytes))
        .collect())
}

fn check_space(
    specs: &[DatabaseSpec],
    actions: &[Action],
    params: &CreateParams,
) -> Result<(), StoreError> {
    for (_, anchor, needed) in space_needs(specs, actions, params)? {
        let available = platform::free_space(&anchor)
            .map_err(|e| mbx_io::IoError::new("query free space of", &anchor, e))?;
        if needed > available {
            return Err(StoreError::InsufficientSpace {
                path: anchor,
                needed,
                available,
            });
        }
    }
    Ok(())
}

/// (filesystem id, a path on it, bytes to write there).
fn space_needs(
    specs: &[DatabaseSpec],
    actions: &[Action],
    params: &CreateParams,
) -> Result<Vec<(u64, PathBuf, u64)>, StoreError> {
    let log_bytes = (LOG_FILE_SIZE + 2 * SLOT) as u64;
    // (filesystem id, a path on it, bytes needed)
    let mut needs: Vec<(u64, PathBuf, u64)> = Vec::new();
    let mut add = |path: &Path, bytes: u64| -> Result<(), StoreError> {
        if bytes == 0 {
            return Ok(());
        }
        let anchor = existing_ancestor(path);
        let fs = platform::filesystem_id(&anchor)
            .map_err(|e| mbx_io::IoError::new("inspect", &anchor, e))?;
        match needs.iter_mut().find(|(id, _, _)| *id == fs) {
            Some(entry) => entry.2 = entry.2.saturating_add(bytes),
            None => needs.push((fs, anchor, bytes)),
        }
        Ok(())
    };
    for (spec, action) in specs.iter().zip(actions) {
        let device = platform::is_block_device(&spec.path).unwrap_or(false);
        if device {
            // Checked (and claimed) in `inspect`; again here, as this is the last look before
            // writing: a device held by this process is still checked for mounts.
            if let Some(u) = platform::device_in_use(&spec.path)
                .map_err(|e| mbx_io::IoError::new("inspect", &spec.path, e))?
            {
                return Err(StoreError::DeviceInUse {
                    path: spec.path.clone(),
                    reason: u.to_string(),
                });
            }
            let f = IoFile::open(&spec.path, OpenMode::read_direct())?;
            let size = f.len()?;
            if size < params.file_bytes() {
                return Err(StoreError::Invalid(format!(
                    "device {} holds {} MiB but the database needs {} MiB; use a larger device or smaller databases",
                    spec.path.display(),
                    size >> 20,
                    params.file_bytes().div_ceil(1 << 20)
                )));
            }
        } else {
            // What the file already occupies on disk is reused: a resumed creation (after
            // kill -9 or a full disk) needs only the rest, however far its durable watermark
            // lags, and a recreated file is overwritten in place.
            let allocated = platform::allocated_bytes(&spec.path).unwrap_or(0);
            let bytes = match action {
                Action::Attach(_) => 0,
                _ => params.file_bytes().saturating_sub(allocated),
            };
            // Name the folder (the file may exist empty, made by the lock).
            add(spec.path.parent().unwrap_or(&spec.path), bytes)?;
        }
        if list_log_generations(&spec.log_dir)?.is_empty() {
            add(&spec.log_dir, log_bytes)?;
        }
    }
    Ok(needs)
}

fn now_unix() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_secs())
        .unwrap_or(0)
}

fn new_database_id(spec: &DatabaseSpec) -> u64 {
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_nanos())
        .unwrap_or(0);
    let seed = format!(
        "{nanos}/{}/{}/{}",
        std::process::id(),
        spec.index,
        spec.path.display()
    );
    xxhash_rust::xxh3::xxh3_64(seed.as_bytes()) | 1
}

/// Writes both header copies (each followed by a sync), bumping the generation.
fn write_headers(file: &IoFile, h: &mut DbHeader) -> Result<(), StoreError> {
    let mut buf = AlignedBuf::zeroed(PAGE_SIZE);
    for copy in 0..HEADER_PAGES {
        h.generation += 1;
        h.encode(buf.as_mut_slice(), copy);
        file.write_all_at(buf.as_slice(), copy * PAGE_SIZE as u64)?;
        file.sync_data()?;
    }
    Ok(())
}

fn open_db_file(path: &Path, params: &CreateParams) -> Result<IoFile, StoreError> {
    if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
        std::fs::create_dir_all(dir)
            .map_err(|e| mbx_io::IoError::new("create directory", dir, e))?;
    }
    let mode = OpenMode {
        direct: params.direct,
        write_through: false,
        write: true,
        create: true,
    };
    Ok(IoFile::open(path, mode)?)
}

fn create_one(
    spec: &DatabaseSpec,
    action: Action,
    params: &CreateParams,
    on_event: &(dyn Fn(CreateEvent) + Sync),
    cancel: &AtomicBool,
    wrap: Option<&QueueWrapper>,
) -> Result<PreparedDatabase, StoreError> {
    let (mut header, start_page) = match action {
        Action::Attach(h) => {
            // A database of an earlier version gets an empty journal (it knows nothing yet).
            crate::journal::ensure_journal(&spec.path, h.database_id, h.data_pages())?;
            create_logs(spec, h.database_id, params)?;
            on_event(CreateEvent::Finished { index: spec.index });
            return Ok(PreparedDatabase {
                spec: spec.clone(),
                header: h,
                attached: true,
            });
        }
        Action::Resume(h) => {
            let start = h.created_pages.min(params.data_pages);
            (h, start)
        }
        Action::Create => (
            DbHeader {
                database_id: new_database_id(spec),
                generation: 0,
                format_version: FORMAT_VERSION,
                page_size: PAGE_SIZE as u32,
                page_count: params.data_pages + HEADER_PAGES,
                state: DbState::Creating,
                database_index: spec.index,
                created_pages: 0,
                mailboxes: params.mailboxes,
                quota_mb: params.quota_mb,
                databases: params.databases,
                compressibility_pct: params.compressibility_pct,
                created_unix_s: now_unix(),
                tool_version: params.tool_version.clone(),
            },
            0,
        ),
    };
    let file = open_db_file(&spec.path, params)?;
    write_headers(&file, &mut header)?;
    // Every page is written at generation 0, which an empty journal says: a new database's
    // journal replaces any other (a recreated database has a new id); a resumed one keeps its.
    if start_page == 0 {
        crate::journal::create_journal(&spec.path, header.database_id, params.data_pages)?;
    } else {
        crate::journal::ensure_journal(&spec.path, header.database_id, params.data_pages)?;
    }
    let is_file = !platform::is_block_device(&spec.path).unwrap_or(false);
    if is_file && file.len()? != params.file_bytes() {
        file.set_len(params.file_bytes())?;
    }
    let files = mbx_io::Files::new(vec![file]);
    let mut queue = open_queue(params.engine, Arc::clone(&files), params.queue_depth.max(1))?;
    if let Some(w) = wrap {
        queue = w(spec.index, queue);
    }
    let total_bytes = params.data_pages * PAGE_SIZE as u64;
    let result = write_pages(
        spec,
        &mut *queue,
        &files,
        &mut header,
        start_page,
        params,
        on_event,
        cancel,
    );
    drop(queue);
    let file = &*files.file(0)?;
    match result {
        Ok(()) => {}
        Err(StoreError::Interrupted { .. }) => {
            return Err(StoreError::Interrupted {
                done_bytes: header.created_pages * PAGE_SIZE as u64,
                total_bytes,
            })
        }
        Err(e) => return Err(e),
    }
    file.sync_data()?;
    header.created_pages = params.data_pages;
    header.state = DbState::Clean;
    write_headers(file, &mut header)?;
    file.sync_all()?;
    create_logs(spec, header.database_id, params)?;
    on_event(CreateEvent::Finished { index: spec.index });
    Ok(PreparedDatabase {
        spec: spec.clone(),
        header,
        attached: false,
    })
}

/// Builds into `buf` the prepared pages (generation 0) written at byte `offset` of database
/// `database_id`.
fn fill_pages(offset: u64, buf: &mut [u8], database_id: u64, compressibility_pct: u8) {
    // Whole pages at page boundaries: the pass's range and chunk are multiples of a page.
    assert!(
        offset.is_multiple_of(PAGE_SIZE as u64) && buf.len().is_multiple_of(PAGE_SIZE),
        "prepare: a write of {} bytes at offset {offset} is not whole pages",
        buf.len()
    );
    let first = offset / PAGE_SIZE as u64;
    for (i, p) in buf.chunks_exact_mut(PAGE_SIZE).enumerate() {
        build_data_page(
            p,
            &PageHeader {
                page_number: first + i as u64,
                database_id,
                generation: 0,
                kind: KIND_DATA,
                compressibility_pct,
            },
        );
    }
}

/// Writes the data pages from `start_page` on through `queue`, [`CHUNK_BYTES`] per write. Every
/// [`SYNC_EVERY_BYTES`] of contiguous completed pages the file is synced and the header's
/// watermark advanced (writes continue meanwhile: a sync covers what completed before it). On
/// cancel, what was submitted completes and the watermark is made durable; on an error the
/// header keeps its last durable watermark.
#[allow(clippy::too_many_arguments)]
fn write_pages(
    spec: &DatabaseSpec,
    queue: &mut dyn IoQueue,
    files: &mbx_io::FileTable,
    header: &mut DbHeader,
    start_page: u64,
    params: &CreateParams,
    on_event: &(dyn Fn(CreateEvent) + Sync),
    cancel: &AtomicBool,
) -> Result<(), StoreError> {
    let page = PAGE_SIZE as u64;
    let base = HEADER_PAGES * page;
    let end = params.file_bytes();
    let mut pass = SeqPass::new(
        base..end,
        CHUNK_BYTES,
        params.queue_depth.max(1),
        SeqOp::Write,
    )
    .and_then(|p| p.resume_from(base + start_page * page))
    .map_err(|e| StoreError::Invalid(e.to_string()))?;
    let (database_id, compressibility_pct) = (header.database_id, params.compressibility_pct);
    let mut fill = |offset: u64, buf: &mut [u8]| -> Result<(), StoreError> {
        fill_pages(offset, buf, database_id, compressibility_pct);
        Ok(())
    };
    // The watermark in pages: only contiguous completed pages count.
    let durable_pages = |pass: &SeqPass| pass.watermark().saturating_sub(base) / page;
    let durable_point = |pass: &SeqPass, header: &mut DbHeader| -> Result<(), StoreError> {
        let pages = durable_pages(pass);
        if pages > header.created_pages {
            let f = files.file(0)?;
            f.sync_data()?;
            header.created_pages = pages;
            write_headers(&f, header)?;
        }
        Ok(())
    };
    let sync_every_pages = SYNC_EVERY_BYTES / page;
    let ended = run_pass(
        queue,
        0,
        &mut pass,
        ChunkData::Fill(&mut fill),
        &mut |pass: &SeqPass| {
            on_event(CreateEvent::Progress {
                index: spec.index,
                bytes_done: pass.done_bytes(),
            });
            if durable_pages(pass) >= header.created_pages.saturating_add(sync_every_pages) {
                durable_point(pass, header)?;
            }
            Ok(())
        },
        cancel,
    )?;
    match ended {
        PassEnd::Complete => Ok(()),
        PassEnd::Cancelled => {
            // Everything submitted has completed: make it durable, so a rerun resumes there.
            durable_point(&pass, header)?;
            Err(StoreError::Interrupted {
                done_bytes: header.created_pages * page,
                total_bytes: params.data_pages * page,
            })
        }
    }
}

/// Sets a database's state (`Dirty` while a run writes to it, `Clean` after a clean shutdown),
/// writing both header copies. Returns the updated header.
pub fn set_database_state(path: &Path, state: DbState) -> Result<DbHeader, StoreError> {
    let mut h = crate::verify::read_database_header(path)?;
    let f = IoFile::open(path, OpenMode::buffered(true, false))?;
    h.state = state;
    write_headers(&f, &mut h)?;
    Ok(h)
}

/// Leaves the log directory ready for a run of database `database_id`. A usable log of this
/// database ([`log_is_usable`]) is kept: the run adopts it and continues after its newest
/// generation. Otherwise (or with `force`) a new log starts: the old log files are deleted
/// (`check_logs` made sure they are ours), generation 1 is written, then a checkpoint at its first
/// record whose sequence continues the directory's, so it wins over any earlier slot.
fn create_logs(
    spec: &DatabaseSpec,
    database_id: u64,
    params: &CreateParams,
) -> Result<(), StoreError> {
    let dir = &spec.log_dir;
    std::fs::create_dir_all(dir).map_err(|e| mbx_io::IoError::new("create directory", dir, e))?;
    drop_empty_newest_logs(dir)?;
    let state = describe_log_dir(dir, database_id)?;
    if !params.force && log_is_usable(&state) {
        return Ok(());
    }
    for &generation in &state.generations {
        let path = dir.join(log_file_name(generation));
        std::fs::remove_file(&path).map_err(|e| mbx_io::IoError::new("delete", &path, e))?;
    }
    let mode = OpenMode::buffered(true, true);
    let f = IoFile::open(&dir.join(log_file_name(1)), mode)?;
    let mut image = vec![0u8; LOG_FILE_SIZE];
    encode_log_header(&mut image, 1, database_id, now_unix());
    f.write_all_at(&image, 0)?;
    f.set_len(LOG_FILE_SIZE as u64)?;
    f.sync_all()?;
    let f = IoFile::open(&dir.join(CHECKPOINT_FILE), mode)?;
    let c = Checkpoint {
        sequence: state.next_checkpoint_sequence,
        database_id,
        lsn: Lsn::new(1, LOG_SECTOR as u64),
    };
    let mut image = vec![0u8; 2 * SLOT];
    let off = c.slot_offset() as usize;
    c.encode(&mut image[off..off + SLOT]);
    f.write_all_at(&image, 0)?;
    f.sync_all()?;
    Ok(())
}

/// Deletes the newest log files while they are empty: a run that stopped after creating the
/// next generation's file and before writing its header (the disk filled, or a crash) leaves
/// one. It holds no record, so the log ends before it and the next run creates it again.
fn drop_empty_newest_logs(dir: &Path) -> Result<(), StoreError> {
    for generation in list_log_generations(dir)?.into_iter().rev() {
        let path = dir.join(log_file_name(generation));
        let meta = std::fs::metadata(&path).map_err(|e| mbx_io::IoError::new("stat", &path, e))?;
        if !meta.is_file() || meta.len() != 0 {
            break;
        }
        std::fs::remove_file(&path).map_err(|e| mbx_io::IoError::new("delete", &path, e))?;
    }
    Ok(())
}

/// A log a run can continue: a checkpoint of this database at or before the end of the log, and
/// every generation from the checkpoint's to the newest present, the newest with a valid header.
fn log_is_usable(state: &LogDirState) -> bool {
    let (Some(checkpoint), Some(end), Some(newest)) = (state.checkpoint, state.end, state.newest())
    else {
        return false;
    };
    let needed = checkpoint.lsn.generation().max(1);
    let present = state.generations.iter().filter(|&&g| g >= needed).count();
    checkpoint.lsn <= end
        && u64::try_from(present)
            .is_ok_and(|n| n == newest.saturating_add(1).saturating_sub(needed))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn plan_one_directory_for_all() {
        let specs = plan_paths(&["/d".into()], &["/l".into()], 3).expect("plan");
        assert_eq!(specs.len(), 3);
        assert_eq!(specs[0].path, PathBuf::from("/d/mbxstress001.edb"));
        assert_eq!(specs[2].path, PathBuf::from("/d/mbxstress003.edb"));
        assert_eq!(specs[1].log_dir, PathBuf::from("/l/db002"));
    }

    #[test]
    fn plan_one_path_per_database() {
        let specs = plan_paths(
            &["/a".into(), "/b".into()],
            &["/la".into(), "/lb".into()],
            2,
        )
        .expect("plan");
        assert_eq!(specs[1].path, PathBuf::from("/b/mbxstress002.edb"));
        assert_eq!(specs[1].log_dir, PathBuf::from("/lb"));
        let err = plan_paths(&["/a".into(), "/b".into()], &["/l".into()], 3).expect_err("mismatch");
        assert!(err.to_string().contains("--db-path"), "{err}");
    }

    #[test]
    fn same_file_or_log_folder_twice_is_refused_after_resolving() {
        let dir = tempfile::tempdir().expect("tempdir");
        let d = dir.path();
        std::fs::create_dir_all(d.join("real")).expect("mkdir");
        let a = d.join("real/x.edb");
        // Symbolic links need a privilege on Windows: the link case is checked on Unix.
        #[cfg(unix)]
        {
            std::os::unix::fs::symlink(d.join("real"), d.join("link")).expect("symlink");
            let b = d.join("link/../link/x.edb");
            let err = plan_paths(&[a.clone(), b], &[d.join("l1"), d.join("l2")], 2)
                .expect_err("same database twice");
            assert!(err.to_string().contains("--db-path"), "{err}");
        }
        let err = plan_paths(
            &[a.clone(), d.join("y.edb")],
            &[d.join("l"), d.join("real/../l")],
            2,
        )
        .expect_err("same log folder twice");
        assert!(err.to_string().contains("--log-path"), "{err}");
        // A log location that is a file is refused before anything is written.
        std::fs::write(d.join("file"), b"x").expect("write");
        let err = plan_paths(std::slice::from_ref(&a), &[d.join("file/sub")], 1).expect_err("file");
        assert!(err.to_string().contains("not a directory"), "{err}");
        // Distinct paths pass.
        plan_paths(&[a, d.join("y.edb")], &[d.join("l1"), d.join("l2")], 2).expect("ok");
        assert_eq!(
            resolve_path(&d.join("nope/../real/./z")),
            d.canonicalize().expect("canon").join("real/z")
        );
    }

    #[test]
    fn sizes_follow_jetstress_rule() {
        // 4 mailboxes x 16 MiB / 2 databases = 32 MiB = 1024 pages each.
        assert_eq!(CreateParams::data_pages_for(4, 16, 2), Some(1024));
        // D2: 5,000 x 2,048 MiB / 6 = 1.628 TiB per database.
        let pages = CreateParams::data_pages_for(5000, 2048, 6).expect("fits");
        let tib = pages as f64 * PAGE_SIZE as f64 / (1u64 << 40) as f64;
        assert!((tib - 1.628).abs() < 0.001, "{tib}");
        // Issue 8.1: sizes that used to wrap around to "0.1 MiB" are refused.
        assert_eq!(CreateParams::data_pages_for(1, 17_592_186_044_416, 1), None);
        assert_eq!(CreateParams::data_pages_for(8_796_093_022_208, 2, 1), None);
        assert_eq!(CreateParams::data_pages_for(u64::MAX, u64::MAX, 1), None);
        assert_eq!(
            CreateParams::data_pages_for(1, MAX_DATABASE_BYTES >> 20, 1),
            Some(MAX_DATABASE_BYTES / PAGE_SIZE as u64)
        );
    }
}
