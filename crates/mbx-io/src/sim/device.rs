//! The simulated device: an in-memory file system of sparse files, each with a live image (what
//! reads see) and a durable image (what survives [`SimDevice::crash`]).

use std::collections::btree_map::Entry;
use std::collections::{BTreeMap, HashSet};
use std::io;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};

use crate::{IoError, OpenMode};

/// Bytes per stored block: files are kept as maps of 4 KiB blocks, so only written blocks cost
/// memory (a 1 GiB file with a few written blocks holds a few blocks).
pub(crate) const BLOCK: usize = 4096;
const BLOCK64: u64 = BLOCK as u64;

/// A block's bytes (always `BLOCK` of them), shared between images (and devices after a crash)
/// until one is written: a write changes a block in place only when nothing else holds it.
type Block = Arc<[u8]>;

/// Puts `data` at `within` of block `b`: in place if nothing else holds it, else in a copy.
fn patch(b: &mut Block, within: usize, data: &[u8]) {
    match Arc::get_mut(b) {
        Some(m) => m[within..within + data.len()].copy_from_slice(data),
        None => *b = fresh(Some(b), within, data),
    }
}

/// A new block: `old` (or zeros) with `data` at `within`. A whole-block write copies once.
fn fresh(old: Option<&[u8]>, within: usize, data: &[u8]) -> Block {
    if data.len() == BLOCK {
        return Arc::from(data);
    }
    let mut v = old.map_or_else(|| vec![0; BLOCK], <[u8]>::to_vec);
    v[within..within + data.len()].copy_from_slice(data);
    Arc::from(v)
}

/// Zeroes the bytes of a block from `within` on.
fn zero_tail(b: &mut Block, within: usize) {
    patch(b, within, &[0; BLOCK][within..]);
}

/// One image of a file: its length and its written blocks (absent blocks read as zeros).
#[derive(Debug, Clone, Default)]
struct Image {
    blocks: BTreeMap<u64, Block>,
    len: u64,
}

impl Image {
    /// Reads at `offset` up to the end of the file; returns the bytes read.
    fn read(&self, offset: u64, buf: &mut [u8]) -> usize {
        let Some(left) = self.len.checked_sub(offset) else {
            return 0;
        };
        let n = usize::try_from(left).map_or(buf.len(), |l| l.min(buf.len()));
        let mut done = 0;
        while done < n {
            let pos = offset + done as u64; // < len, cannot overflow
            let within = (pos % BLOCK64) as usize;
            let take = (BLOCK - within).min(n - done);
            let dst = &mut buf[done..done + take];
            match self.blocks.get(&(pos / BLOCK64)) {
                Some(b) => dst.copy_from_slice(&b[within..within + take]),
                None => dst.fill(0),
            }
            done += take;
        }
        n
    }

    /// Writes `data` at `offset` (`offset + data.len()` must not overflow) and extends the
    /// length; returns the first and last block touched (None for an empty write).
    fn write(&mut self, offset: u64, data: &[u8]) -> Option<(u64, u64)> {
        let end = offset + data.len() as u64;
        self.len = self.len.max(end);
        if data.is_empty() {
            return None;
        }
        let mut done = 0;
        while done < data.len() {
            let pos = offset + done as u64;
            let within = (pos % BLOCK64) as usize;
            let take = (BLOCK - within).min(data.len() - done);
            let part = &data[done..done + take];
            match self.blocks.entry(pos / BLOCK64) {
                Entry::Occupied(mut e) => patch(e.get_mut(), within, part),
                Entry::Vacant(e) => {
                    e.insert(fresh(None, within, part));
                }
            }
            done += take;
        }
        Some((offset / BLOCK64, (end - 1) / BLOCK64))
    }

    /// Sets the length; bytes past a shorter length are dropped (they read as zeros if the file
    /// grows again).
    fn set_len(&mut self, len: u64) {
        // Also when the length stays: blocks may hold bytes past it (see `SimDevice::crash`).
        cut_blocks(&mut self.blocks, len, zero_tail);
        self.len = len;
    }
}

/// Drops the parts of a map of blocks past byte `len`: whole blocks, and with `zero_tail` the
/// bytes from `within` on of a last partial one.
fn cut_blocks<V>(blocks: &mut BTreeMap<u64, V>, len: u64, zero_tail: impl Fn(&mut V, usize)) {
    blocks.split_off(&len.div_ceil(BLOCK64));
    let within = (len % BLOCK64) as usize;
    if within > 0 {
        if let Some(v) = blocks.get_mut(&(len / BLOCK64)) {
            zero_tail(v, within);
        }
    }
}

/// A sync submitted and not yet completed.
#[derive(Debug, Clone, Copy)]
struct PendingSync {
    id: u64,
    /// It covers the changes numbered below this (those completed before it was submitted).
    watermark: u64,
    /// The live length when it was submitted.
    len: u64,
}

#[derive(Debug)]
struct SimFile {
    live: Image,
    durable: Image,
    /// Block images written and completed but not yet durable, by block, oldest first, with the
    /// number of the write that produced each. Consecutive versions that no pending sync tells
    /// apart are merged, so a block holds at most one version more than there are syncs in
    /// flight.
    pending: BTreeMap<u64, Vec<(u64, Block)>>,
    /// Writes completed so far (the number the next one gets).
    writes: u64,
    syncs: Vec<PendingSync>,
    /// Open handles plus requests in flight: the data stays while any remains, as on Unix.
    refs: usize,
    /// Still reachable by its path.
    linked: bool,
}

impl SimFile {
    fn new(image: Image) -> Self {
        SimFile {
            live: image.clone(),
            durable: image,
            pending: BTreeMap::new(),
            writes: 0,
            syncs: Vec::new(),
            refs: 0,
            linked: true,
        }
    }

    fn write(&mut self, offset: u64, data: &[u8], durable: bool) {
        let number = self.writes;
        self.writes += 1;
        let end = offset + data.len() as u64;
        let Some((first, last)) = self.live.write(offset, data) else {
            if durable {
                self.durable.len = self.durable.len.max(end);
            }
            return;
        };
        let newest_sync = self.syncs.iter().map(|s| s.watermark).max();
        for k in first..=last {
            let Some(b) = self.live.blocks.get(&k).cloned() else {
                continue;
            };
            if durable {
                // The block as it is now becomes durable: a device writes whole blocks, so this
                // includes earlier writes to the same block that were not yet durable.
                self.durable.blocks.insert(k, b);
                self.pending.remove(&k);
                continue;
            }
            let versions = self.pending.entry(k).or_default();
            match versions.last_mut() {
                // No pending sync covers the previous version without this one: keep only this.
                Some(prev) if newest_sync.is_none_or(|w| w <= prev.0) => *prev = (number, b),
                _ => versions.push((number, b)),
            }
        }
        if durable {
            self.durable.len = self.durable.len.max(end);
        }
    }

    fn finish_sync(&mut self, id: u64) {
        let Some(pos) = self.syncs.iter().position(|s| s.id == id) else {
            return;
        };
        let sync = self.syncs.swap_remove(pos);
        for (k, versions) in self.pending.iter_mut() {
            let covered = versions.partition_point(|(n, _)| *n < sync.watermark);
            if covered > 0 {
                self.durable
                    .blocks
                    .insert(*k, Arc::clone(&versions[covered - 1].1));
                versions.drain(..covered);
            }
        }
        self.pending.retain(|_, v| !v.is_empty());
        self.durable.len = self.durable.len.max(sync.len);
    }

    fn set_len(&mut self, len: u64) {
        self.live.set_len(len);
        self.durable.set_len(len);
        cut_blocks(&mut self.pending, len, |versions, within| {
            for (_, b) in versions.iter_mut() {
                zero_tail(b, within);
            }
        });
    }
}

#[derive(Debug, Default)]
struct State {
    paths: BTreeMap<PathBuf, u64>,
    files: BTreeMap<u64, SimFile>,
    next_id: u64,
    next_sync: u64,
}

impl State {
    fn id(&self, path: &Path) -> Option<u64> {
        self.paths.get(path).copied()
    }

    fn file(&self, id: u64) -> io::Result<&SimFile> {
        self.files.get(&id).ok_or_else(gone)
    }

    fn file_mut(&mut self, id: u64) -> io::Result<&mut SimFile> {
        self.files.get_mut(&id).ok_or_else(gone)
    }

    fn by_path(&self, path: &Path) -> io::Result<&SimFile> {
        self.id(path)
            .and_then(|id| self.files.get(&id))
            .ok_or_else(not_found)
    }

    fn by_path_mut(&mut self, path: &Path) -> io::Result<&mut SimFile> {
        let id = self.id(path).ok_or_else(not_found)?;
        self.files.get_mut(&id).ok_or_else(not_found)
    }

    fn add(&mut self, path: &Path, image: Image) -> u64 {
        self.unlink(path);
        let id = self.next_id;
        self.next_id += 1;
        self.files.insert(id, SimFile::new(image));
        self.paths.insert(path.to_path_buf(), id);
        id
    }

    /// Unlinks `path`; the data goes when nothing refers to it. False if there was no file.
    fn unlink(&mut self, path: &Path) -> bool {
        let Some(id) = self.paths.remove(path) else {
            return false;
        };
        if let Some(f) = self.files.get_mut(&id) {
            f.linked = false;
            if f.refs == 0 {
                self.files.remove(&id);
            }
        }
        true
    }
}

fn not_found() -> io::Error {
    io::Error::new(io::ErrorKind::NotFound, "no such simulated file")
}

fn gone() -> io::Error {
    io::Error::new(io::ErrorKind::NotFound, "simulated file no longer exists")
}

fn overflow() -> io::Error {
    io::Error::new(io::ErrorKind::InvalidInput, "offset + length overflows")
}

/// A simulated storage device: an in-memory file system keyed by path. Cloning gives another
/// handle to the same device.
///
/// Every file has a live image (what reads see) and a durable image (what survives
/// [`SimDevice::crash`]). A write through the queue changes the live image when it completes; it
/// becomes durable at once if the file was opened with `write_through`, otherwise when a sync of
/// that file completes that was submitted after the write completed. Durability is tracked per
/// 4 KiB block: a block made durable is made durable as it then is, with any earlier write to the
/// same block. A length change (a write past the end, an allocation) becomes durable with a
/// sync submitted after it; a write-through write makes the length up to its own end durable.
///
/// There are no directories (a file can be created at any path; [`SimDevice::list`] filters by
/// prefix). Creating and removing files is immediate and durable: a file created and never
/// synced exists after a crash, with its durable contents (empty if nothing was made durable).
/// The helpers below (`create`, `write_at`, `set_len`, `remove`) are for setting up and
/// inspecting a test: they act at once on both images, as if synced.
#[derive(Debug, Clone, Default)]
pub struct SimDevice {
    state: Arc<Mutex<State>>,
}

impl SimDevice {
    /// An empty device.
    pub fn new() -> Self {
        Self::default()
    }

    fn lock(&self) -> MutexGuard<'_, State> {
        // No critical section panics; recover the data if one ever did.
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Creates a file of `len` zero bytes at `path`, replacing any file there (handles open on
    /// the old one keep it). Durable at once.
    pub fn create(&self, path: &Path, len: u64) {
        self.lock().add(
            path,
            Image {
                blocks: BTreeMap::new(),
                len,
            },
        );
    }

    /// Writes `data` at `offset` of the file at `path`, extending it if needed. Durable at once.
    pub fn write_at(&self, path: &Path, offset: u64, data: &[u8]) -> Result<(), IoError> {
        let mut s = self.lock();
        let f = s
            .by_path_mut(path)
            .map_err(|e| IoError::at("write", path, offset, e))?;
        offset
            .checked_add(data.len() as u64)
            .ok_or_else(|| IoError::at("write", path, offset, overflow()))?;
        f.write(offset, data, true);
        Ok(())
    }

    /// Reads the live image of the file at `path` at `offset`; returns the bytes read, fewer
    /// than `buf.len()` at the end of the file.
    pub fn read_at(&self, path: &Path, offset: u64, buf: &mut [u8]) -> Result<usize, IoError> {
        let s = self.lock();
        let f = s
            .by_path(path)
            .map_err(|e| IoError::at("read", path, offset, e))?;
        Ok(f.live.read(offset, buf))
    }

    /// The length of the file at `path` (live image).
    pub fn len(&self, path: &Path) -> Result<u64, IoError> {
        let s = self.lock();
        Ok(s.by_path(path)
            .map_err(|e| IoError::new("stat", path, e))?
            .live
            .len)
    }

    /// Sets the length of the file at `path`. Durable at once.
    pub fn set_len(&self, path: &Path, len: u64) -> Result<(), IoError> {
        let mut s = self.lock();
        s.by_path_mut(path)
            .map_err(|e| IoError::new("set length of", path, e))?
            .set_len(len);
        Ok(())
    }

    /// True if a file exists at `path`.
    pub fn exists(&self, path: &Path) -> bool {
        self.lock().paths.contains_key(path)
    }

    /// The paths of the files under `dir` (at any depth), sorted.
    pub fn list(&self, dir: &Path) -> Vec<PathBuf> {
        self.lock()
            .paths
            .keys()
            .filter(|p| p.starts_with(dir))
            .cloned()
            .collect()
    }

    /// Removes the file at `path` (handles open on it keep it). Durable at once.
    pub fn remove(&self, path: &Path) -> Result<(), IoError> {
        if self.lock().unlink(path) {
            Ok(())
        } else {
            Err(IoError::new("remove", path, not_found()))
        }
    }

    /// A new device holding what survives a power loss now: every file reachable by its path,
    /// with only its durable image (writes not yet durable are gone, and so are requests in
    /// flight). This device is unchanged and may go on.
    pub fn crash(&self) -> SimDevice {
        let s = self.lock();
        let mut after = State {
            paths: s.paths.clone(),
            files: BTreeMap::new(),
            next_id: s.next_id,
            next_sync: 0,
        };
        for id in s.paths.values() {
            if let Some(f) = s.files.get(id) {
                let mut image = f.durable.clone();
                // A block made durable may hold bytes past the durable length: hide them.
                image.set_len(image.len);
                after.files.insert(*id, SimFile::new(image));
            }
        }
        SimDevice {
            state: Arc::new(Mutex::new(after)),
        }
    }

    /// Distinct 4 KiB blocks held in memory across all images (to check that sparse files stay
    /// cheap).
    pub fn stored_blocks(&self) -> usize {
        let s = self.lock();
        let mut seen = HashSet::new();
        for f in s.files.values() {
            let versions = f.pending.values().flatten().map(|(_, b)| b);
            for b in f
                .live
                .blocks
                .values()
                .chain(f.durable.blocks.values())
                .chain(versions)
            {
                seen.insert(Arc::as_ptr(b).cast::<u8>());
            }
        }
        seen.len()
    }

    // The queue's side: files by id, held open by references.

    /// Opens `path` (creating it if `mode` allows); returns its id, holding one reference.
    pub(crate) fn open(&self, path: &Path, mode: OpenMode) -> io::Result<u64> {
        let mut s = self.lock();
        let id = match s.id(path) {
            Some(id) => id,
            None if mode.create && mode.write => s.add(path, Image::default()),
            None => return Err(not_found()),
        };
        s.file_mut(id)?.refs += 1;
        Ok(id)
    }

    /// Takes one more reference to file `id` (a request in flight).
    pub(crate) fn acquire(&self, id: u64) {
        if let Some(f) = self.lock().files.get_mut(&id) {
            f.refs += 1;
        }
    }

    /// Drops a reference; an unlinked file goes with its last one.
    pub(crate) fn release(&self, id: u64) {
        let mut s = self.lock();
        let Some(f) = s.files.get_mut(&id) else {
            return;
        };
        f.refs = f.refs.saturating_sub(1);
        if f.refs == 0 && !f.linked {
            s.files.remove(&id);
        }
    }

    pub(crate) fn file_len(&self, id: u64) -> io::Result<u64> {
        Ok(self.lock().file(id)?.live.len)
    }

    pub(crate) fn read(&self, id: u64, offset: u64, buf: &mut [u8]) -> io::Result<usize> {
        Ok(self.lock().file(id)?.live.read(offset, buf))
    }

    pub(crate) fn write(
        &self,
        id: u64,
        offset: u64,
        data: &[u8],
        write_through: bool,
    ) -> io::Result<usize> {
        offset.checked_add(data.len() as u64).ok_or_else(overflow)?;
        self.lock().file_mut(id)?.write(offset, data, write_through);
        Ok(data.len())
    }

    pub(crate) fn allocate(&self, id: u64, offset: u64, len: u64) -> io::Result<()> {
        let end = offset.checked_add(len).ok_or_else(overflow)?;
        let mut s = self.lock();
        let f = s.file_mut(id)?;
        f.live.len = f.live.len.max(end);
        Ok(())
    }

    /// Records a sync submitted now; returns its id for [`SimDevice::end_sync`].
    pub(crate) fn begin_sync(&self, id: u64) -> io::Result<u64> {
        let mut s = self.lock();
        let sync = s.next_sync;
        s.next_sync += 1;
        let f = s.file_mut(id)?;
        f.syncs.push(PendingSync {
            id: sync,
            watermark: f.writes,
            len: f.live.len,
        });
        Ok(sync)
    }

    /// Completes a sync: makes durable what it covers if `ok`, else only forgets it.
    pub(crate) fn end_sync(&self, id: u64, sync: u64, ok: bool) -> io::Result<()> {
        let mut s = self.lock();
        let f = s.file_mut(id)?;
        if ok {
            f.finish_sync(sync);
        } else {
            f.syncs.retain(|p| p.id != sync);
        }
        Ok(())
    }
}
