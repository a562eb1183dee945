//! The requests a completion-based backend (io_uring, IOCP) has given the kernel, by slot: the
//! tag the kernel hands back with a completion is the request's slot index. A slot is free, or
//! reserved for a request being submitted, or holds that request (and so its buffer) until its
//! completion is reaped: a buffer the kernel may still write is never dropped or reused.

/// `depth` slots and the free list over them.
pub(crate) struct Slots<T> {
    held: Vec<Option<T>>,
    free: Vec<usize>,
}

impl<T> Slots<T> {
    /// `depth` free slots (handed out lowest index first).
    pub(crate) fn new(depth: usize) -> Self {
        Slots {
            held: (0..depth).map(|_| None).collect(),
            free: (0..depth).rev().collect(),
        }
    }

    /// Reserves a free slot for a request; `None` when every slot is in use.
    pub(crate) fn reserve(&mut self) -> Option<usize> {
        self.free.pop()
    }

    /// Gives a reserved slot back, dropping what it holds: the request never reached the kernel.
    pub(crate) fn release(&mut self, idx: usize) {
        self.held[idx] = None;
        self.free.push(idx);
    }

    /// Puts the request in its reserved slot, where it stays until [`Slots::complete`].
    ///
    /// # Panics
    /// If the slot still holds a request: its buffer may still be in the kernel's hands.
    pub(crate) fn fill(&mut self, idx: usize, item: T) -> &mut T {
        assert!(
            self.held[idx].is_none(),
            "slot {idx} reused while its request is in flight"
        );
        self.held[idx].insert(item)
    }

    /// The request in slot `idx`, if it holds one.
    #[cfg(windows)]
    pub(crate) fn get(&self, idx: usize) -> Option<&T> {
        self.held.get(idx).and_then(Option::as_ref)
    }

    /// Takes the request of a completion out of its slot, freeing the slot; `None` when the slot
    /// holds none (a tag that is not ours).
    pub(crate) fn complete(&mut self, idx: usize) -> Option<T> {
        let item = self.held.get_mut(idx).and_then(Option::take)?;
        self.free.push(idx);
        Some(item)
    }

    /// Free slots.
    #[cfg(target_os = "linux")]
    pub(crate) fn free_len(&self) -> usize {
        self.free.len()
    }

    /// The requests held, with their slots.
    #[cfg(windows)]
    pub(crate) fn held(&self) -> impl Iterator<Item = (usize, &T)> {
        self.held
            .iter()
            .enumerate()
            .filter_map(|(i, s)| s.as_ref().map(|s| (i, s)))
    }

    /// Forgets every request held without dropping it (their buffers leak): for a queue that
    /// cannot wait for its completions any more, rather than free memory the kernel may write.
    pub(crate) fn leak(&mut self) {
        std::mem::forget(std::mem::take(&mut self.held));
    }
}
