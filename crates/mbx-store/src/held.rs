//! The database files of a run, held open from its start to its end: each header is read once,
//! when the run begins, and the state changes (`Dirty` as the run starts writing, `Clean` after
//! its clean shutdown) are written through the same descriptors, from the header in memory. The
//! end of a run never reopens a database by path or re-reads its header, so a file deleted or
//! replaced meanwhile, or a transient read error there, cannot lose a complete measurement.
//!
//! Every access goes through one [`IoQueue`] (a caller may wrap it: tests inject faults), one
//! request at a time. Errors keep their class: a read or write that fails is
//! [`StoreError::Io`] with the path, offset and OS error; only a readable header that is not
//! ours is [`StoreError::NotADatabase`].

use std::path::{Path, PathBuf};

use mbx_io::{AlignedBuf, EngineKind, IoError, IoOp, IoQueue, IoRequest, OpenMode};

use crate::header::{DbHeader, DbState, HEADER_PAGES};
use crate::page::PAGE_SIZE;
use crate::StoreError;

/// Wraps the queue [`HeldDatabases`] uses (tests inject faults with it).
pub type HeldQueueWrapper = dyn Fn(Box<dyn IoQueue>) -> Box<dyn IoQueue> + Sync;

/// One database file held open.
#[derive(Debug)]
struct Held {
    path: PathBuf,
    file: usize,
    header: DbHeader,
    damaged: Vec<u64>,
    device: bool,
}

/// The database files of a run, held open (see the module documentation).
pub struct HeldDatabases {
    queue: Box<dyn IoQueue>,
    dbs: Vec<Held>,
}

impl std::fmt::Debug for HeldDatabases {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("HeldDatabases")
            .field("dbs", &self.dbs)
            .finish_non_exhaustive()
    }
}

impl HeldDatabases {
    /// Opens every database file of `paths` (for writing when `write`) through one queue of the
    /// portable backend, `wrap`ped if given, and reads each header. Buffered, as creation writes
    /// headers: the header pages are written only through here, and each write is synced.
    pub fn open(
        paths: &[&Path],
        write: bool,
        wrap: Option<&HeldQueueWrapper>,
    ) -> Result<HeldDatabases, StoreError> {
        let queue = mbx_io::open_queue(EngineKind::Sync, mbx_io::Files::new(Vec::new()), 1)?;
        let queue = match wrap {
            Some(w) => w(queue),
            None => queue,
        };
        let mut held = HeldDatabases {
            queue,
            dbs: Vec::with_capacity(paths.len()),
        };
        let mode = OpenMode::buffered(write, false);
        for path in paths {
            let file = held.queue.open_file(path, mode)?;
            let two = held.read_header_pages(path, file)?;
            let header =
                DbHeader::from_first_pages(&two).ok_or_else(|| StoreError::NotADatabase {
                    path: path.to_path_buf(),
                })?;
            let damaged = header.damaged_copies(&two);
            held.dbs.push(Held {
                path: path.to_path_buf(),
                file,
                header,
                damaged,
                device: mbx_io::platform::is_block_device(path).unwrap_or(false),
            });
        }
        Ok(held)
    }

    /// How many databases are held.
    pub fn len(&self) -> usize {
        self.dbs.len()
    }

    /// True when none is.
    pub fn is_empty(&self) -> bool {
        self.dbs.is_empty()
    }

    /// The header of database `i` as this run last wrote it (or read it at the start).
    pub fn header(&self, i: usize) -> Option<&DbHeader> {
        self.dbs.get(i).map(|d| &d.header)
    }

    /// The path database `i` was opened from.
    pub fn path(&self, i: usize) -> Option<&Path> {
        self.dbs.get(i).map(|d| d.path.as_path())
    }

    /// Which header copies (0, 1) of database `i` were undecodable or of another database when
    /// it was opened (empty when both were intact). Writing a state rewrites both.
    pub fn damaged_copies(&self, i: usize) -> &[u64] {
        self.dbs.get(i).map_or(&[], |d| d.damaged.as_slice())
    }

    /// Sets the state of database `i`, writing both header copies (each made durable before the
    /// next, as creation does) through the descriptor held since the start.
    pub fn set_state(&mut self, i: usize, state: DbState) -> Result<&DbHeader, StoreError> {
        let Some(d) = self.dbs.get(i) else {
            return Err(StoreError::Invalid(format!("no held database {i}")));
        };
        let (file, mut h) = (d.file, d.header.clone());
        h.state = state;
        for copy in 0..HEADER_PAGES {
            h.generation += 1;
            let mut buf = AlignedBuf::zeroed(PAGE_SIZE);
            h.encode(buf.as_mut_slice(), copy);
            self.io(IoOp::Write, file, copy * PAGE_SIZE as u64, buf)?;
            self.io(IoOp::Sync, file, 0, AlignedBuf::zeroed(0))?;
        }
        let d = &mut self.dbs[i];
        d.header = h;
        Ok(&d.header)
    }

    /// The size of database `i` now, through the held descriptor: the file's length (a block
    /// device: the database's size, as its header gives it).
    pub fn size_bytes(&self, i: usize) -> Result<u64, StoreError> {
        let Some(d) = self.dbs.get(i) else {
            return Err(StoreError::Invalid(format!("no held database {i}")));
        };
        if d.device {
            return Ok(d.header.file_bytes());
        }
        Ok(self.queue.file_len(d.file)?)
    }

    /// False when database `i`'s path no longer names the file held (it was deleted, or another
    /// file put in its place, while the run held it). Where the platform cannot tell, true.
    pub fn still_at_path(&self, i: usize) -> bool {
        let Some(d) = self.dbs.get(i) else {
            return false;
        };
        let Some(held) = self.queue.files().get(d.file) else {
            return true;
        };
        same_file(held.file(), &d.path)
    }

    /// The two header pages of the held `file`: `NotADatabase` if the file ends before them, an
    /// I/O error naming the file, offset and OS error if the read fails.
    fn read_header_pages(&mut self, path: &Path, file: usize) -> Result<Vec<u8>, StoreError> {
        let two = AlignedBuf::zeroed(2 * PAGE_SIZE);
        match self.io(IoOp::Read, file, 0, two) {
            Ok(buf) => Ok(buf.as_slice().to_vec()),
            Err(StoreError::Io(IoError::Short { .. }))
                if self.queue.file_len(file)? < 2 * PAGE_SIZE as u64 =>
            {
                Err(StoreError::NotADatabase {
                    path: path.to_path_buf(),
                })
            }
            Err(e) => Err(e),
        }
    }

    /// Submits one request and waits for it; returns its buffer.
    fn io(
        &mut self,
        op: IoOp,
        file: usize,
        offset: u64,
        buf: AlignedBuf,
    ) -> Result<AlignedBuf, StoreError> {
        let len = buf.len();
        self.queue.submit(IoRequest {
            op,
            file,
            offset,
            len,
            buf,
            tag: 0,
        })?;
        let mut done = Vec::with_capacity(1);
        while done.is_empty() {
            self.queue.reap(1, &mut done)?;
        }
        let c = done.swap_remove(0);
        c.check_in(self.queue.as_ref())?;
        Ok(c.req.buf)
    }
}

#[cfg(unix)]
fn same_file(held: &std::fs::File, path: &Path) -> bool {
    use std::os::unix::fs::MetadataExt;
    match (held.metadata(), std::fs::metadata(path)) {
        (Ok(a), Ok(b)) => a.dev() == b.dev() && a.ino() == b.ino(),
        (Ok(_), Err(e)) => e.kind() != std::io::ErrorKind::NotFound,
        (Err(_), _) => true,
    }
}

#[cfg(not(unix))]
fn same_file(_held: &std::fs::File, path: &Path) -> bool {
    path.exists()
}
