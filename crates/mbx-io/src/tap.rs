//! A queue that lets its owner watch the requests and completions of another queue: every
//! call goes to the inner queue unchanged. Tests use it to record what an engine submitted or
//! count what came back, without writing the whole [`IoQueue`] delegation each time.

use std::path::Path;

use crate::{IoCompletion, IoError, IoQueue, IoRequest, Reap};

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

    fn reap_for(&mut self, want: Reap, out: &mut Vec<IoCompletion>) -> Result<(), IoError> {
        let from = out.len();
        self.inner.reap_for(want, out)?;
        self.seen(out, from);
        Ok(())
    }

    fn in_flight(&self) -> usize {
        self.inner.in_flight()
    }

    crate::queue::forward_to_inner!(inner);
}
