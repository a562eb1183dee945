//! A queue that lets its owner watch the requests and completions of another queue: every
//! call goes to the inner queue unchanged. Tests use it to record what an engine submitted or
//! count what came back, without writing the whole [`IoQueue`] delegation each time.

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use crate::{Clock, FileTable, IoCompletion, IoError, IoQueue, IoRequest, OpenMode};

/// Called with each request (and its file's path) before it is submitted.
pub type OnSubmit = Box<dyn FnMut(&Path, &IoRequest) + Send>;
/// Called with each completion as it is reaped.
pub type OnComplete = Box<dyn FnMut(&IoCompletion) + Send>;

/// Forwards everything to `inner`, showing requests to `on_submit` and completions to
/// `on_complete` on the way.
pub struct Tap {
    inner: Box<dyn IoQueue>,
    on_submit: OnSubmit,
    on_complete: OnComplete,
}

impl Tap {
    /// Wraps `inner`.
    pub fn new(inner: Box<dyn IoQueue>, on_submit: OnSubmit, on_complete: OnComplete) -> Tap {
        Tap {
            inner,
            on_submit,
            on_complete,
        }
    }

    fn seen(&mut self, out: &[IoCompletion], from: usize) {
        for c in out.get(from..).unwrap_or_default() {
            (self.on_complete)(c);
        }
    }
}

impl IoQueue for Tap {
    fn submit(&mut self, req: IoRequest) -> Result<(), IoError> {
        let path = self.inner.file_path(req.file);
        (self.on_submit)(&path, &req);
        self.inner.submit(req)
    }
    fn reap(&mut self, min: usize, out: &mut Vec<IoCompletion>) -> Result<(), IoError> {
        let from = out.len();
        self.inner.reap(min, out)?;
        self.seen(out, from);
        Ok(())
    }
    fn reap_timeout(
        &mut self,
        min: usize,
        timeout: Duration,
        out: &mut Vec<IoCompletion>,
    ) -> Result<(), IoError> {
        let from = out.len();
        self.inner.reap_timeout(min, timeout, out)?;
        self.seen(out, from);
        Ok(())
    }
    fn in_flight(&self) -> usize {
        self.inner.in_flight()
    }
    fn depth(&self) -> usize {
        self.inner.depth()
    }
    fn files(&self) -> &FileTable {
        self.inner.files()
    }
    fn engine_name(&self) -> &'static str {
        self.inner.engine_name()
    }
    fn open_file(&mut self, path: &Path, mode: OpenMode) -> Result<usize, IoError> {
        self.inner.open_file(path, mode)
    }
    fn close_file(&mut self, index: usize) {
        self.inner.close_file(index)
    }
    fn remove_file(&mut self, path: &Path) -> Result<(), IoError> {
        self.inner.remove_file(path)
    }
    fn wait_removals(&mut self) -> Result<(), IoError> {
        self.inner.wait_removals()
    }
    fn file_len(&self, index: usize) -> Result<u64, IoError> {
        self.inner.file_len(index)
    }
    fn file_path(&self, index: usize) -> PathBuf {
        self.inner.file_path(index)
    }
    fn clock(&self) -> Arc<dyn Clock> {
        self.inner.clock()
    }

    fn machine(&self) -> Arc<dyn crate::Machine> {
        self.inner.machine()
    }
}
