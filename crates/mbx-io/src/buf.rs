//! Sector-aligned I/O buffers, carved from 2 MiB regions the kernel may back with huge pages.
//!
//! O_DIRECT needs the buffer address, the length and the file offset aligned to the device's
//! logical block size: every buffer starts on an [`ALIGN`] boundary.
//!
//! Where a buffer lies in physical memory matters as much. The kernel hands a buffer to the
//! device as one segment per physically contiguous run of pages. A virtio disk without indirect
//! descriptors (the project's test machine) spends one ring slot per segment, so 256 KiB buffers
//! scattered over 4 KiB pages held it to about 1 MiB in flight: the block layer merged the
//! waiting reads into 1 MiB requests and sequential reads ran at 0.6x fio (whose buffers are one
//! fresh region). So buffers of up to 1 MiB are slots of 2 MiB-aligned regions advised as huge
//! pages (`MADV_HUGEPAGE` on Linux; it takes effect where transparent huge pages are `always` or
//! `madvise`, the common defaults), and a slot never crosses a region boundary: when the kernel
//! grants the huge page, every buffer in it is physically contiguous. Larger buffers get a
//! region of their own. Without huge pages the buffers are what they were before: 4 KiB pages.
//!
//! Slots are grouped in power-of-two size classes. A freed slot is kept for reuse; a region goes
//! back to the OS once all its slots are free and its class still holds a region's worth of
//! other free slots, so memory follows the buffers in use, as a pool of them already does.

#![allow(unsafe_code)] // raw regions: each slot belongs to exactly one `AlignedBuf` at a time

use std::collections::BTreeMap;
use std::ptr::NonNull;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

/// Alignment of every buffer: 4 KiB covers 512-byte and 4Kn devices and the page cache.
pub const ALIGN: usize = 4096;

/// Size and alignment of the regions buffers are carved from: one x86-64 huge page.
pub const REGION: usize = 2 << 20;

/// Largest buffer carved from a shared region; larger ones get a region of their own.
const SLAB_MAX: usize = 1 << 20;

/// Zeroed, [`REGION`]-aligned memory from the OS, returned when dropped.
struct Region {
    ptr: NonNull<u8>,
    size: usize,
    /// Slots of this region held by buffers (shared regions only; changed under the slab lock).
    live: AtomicUsize,
}

// SAFETY: a region is plain memory; who may touch which bytes is decided by the slot owners.
unsafe impl Send for Region {}
// SAFETY: as above; `Region` itself hands out no access to its bytes.
unsafe impl Sync for Region {}

impl Region {
    /// `size` bytes (a non-zero multiple of [`ALIGN`]), zeroed, aligned to [`REGION`], advised
    /// as huge pages before anything touches them.
    fn new(size: usize) -> Region {
        let ptr = os::map(size);
        Region {
            ptr,
            size,
            live: AtomicUsize::new(0),
        }
    }

    /// The address `offset` bytes in.
    fn at(&self, offset: usize) -> NonNull<u8> {
        assert!(
            offset < self.size,
            "buffer: offset {offset} outside a region of {} bytes",
            self.size
        );
        // SAFETY: callers pass offsets inside the region.
        unsafe { self.ptr.add(offset) }
    }
}

impl Drop for Region {
    fn drop(&mut self) {
        os::unmap(self.ptr, self.size);
    }
}

#[cfg(unix)]
mod os {
    use std::ptr::NonNull;

    use super::REGION;

    /// A fresh anonymous mapping (zero-filled, untouched) of `size` bytes aligned to `REGION`:
    /// map `size + REGION` and give back the unaligned head and the tail.
    pub(super) fn map(size: usize) -> NonNull<u8> {
        let total = size.checked_add(REGION).unwrap_or_else(|| overflow(size));
        // SAFETY: an anonymous private mapping with no address hint touches no existing memory.
        let raw = unsafe {
            libc::mmap(
                std::ptr::null_mut(),
                total,
                libc::PROT_READ | libc::PROT_WRITE,
                libc::MAP_PRIVATE | libc::MAP_ANONYMOUS,
                -1,
                0,
            )
        };
        if raw == libc::MAP_FAILED {
            overflow(size);
        }
        let addr = raw as usize;
        let head = (REGION - addr % REGION) % REGION;
        let tail = total - head - size;
        // SAFETY: both ranges lie inside the mapping just made and nothing refers to them.
        unsafe {
            if head > 0 {
                libc::munmap(raw, head);
            }
            if tail > 0 {
                libc::munmap(raw.cast::<u8>().add(head + size).cast(), tail);
            }
        }
        // SAFETY: `head < total`, so the result lies inside the mapping.
        let start = unsafe { raw.cast::<u8>().add(head) };
        #[cfg(target_os = "linux")]
        // SAFETY: advice on our own mapping; a refusal (huge pages disabled) changes nothing.
        unsafe {
            libc::madvise(start.cast(), size, libc::MADV_HUGEPAGE);
        }
        NonNull::new(start).unwrap_or_else(|| overflow(size))
    }

    pub(super) fn unmap(ptr: NonNull<u8>, size: usize) {
        // SAFETY: `ptr` and `size` are exactly a mapping made by `map`, no longer referenced.
        unsafe {
            libc::munmap(ptr.as_ptr().cast(), size);
        }
    }

    /// Out of memory or address space: as `Vec` does, abort through the allocation error path.
    fn overflow(size: usize) -> ! {
        std::alloc::handle_alloc_error(
            std::alloc::Layout::from_size_align(size.max(1), super::ALIGN)
                .unwrap_or_else(|_| std::alloc::Layout::new::<u8>()),
        )
    }
}

#[cfg(not(unix))]
mod os {
    use std::alloc::Layout;
    use std::ptr::NonNull;

    use super::REGION;

    fn layout(size: usize) -> Layout {
        Layout::from_size_align(size, REGION)
            .unwrap_or_else(|_| std::alloc::handle_alloc_error(Layout::new::<u8>()))
    }

    pub(super) fn map(size: usize) -> NonNull<u8> {
        let l = layout(size);
        // SAFETY: `size` is non-zero (callers never ask for an empty region).
        let p = unsafe { std::alloc::alloc_zeroed(l) };
        NonNull::new(p).unwrap_or_else(|| std::alloc::handle_alloc_error(l))
    }

    pub(super) fn unmap(ptr: NonNull<u8>, size: usize) {
        // SAFETY: allocated by `map` with the same layout.
        unsafe { std::alloc::dealloc(ptr.as_ptr(), layout(size)) }
    }
}

/// A free slot: its region and offset.
type Slot = (Arc<Region>, usize);

/// The free slots of every size class. One process-wide instance lives behind [`SLABS`]; tests
/// make their own.
#[derive(Default)]
struct Slabs {
    free: BTreeMap<usize, Vec<Slot>>,
}

impl Slabs {
    /// A slot of `class` bytes (a power of two from [`ALIGN`] to [`SLAB_MAX`]), and whether it
    /// is fresh from the OS (already zero).
    fn take(&mut self, class: usize) -> (Slot, bool) {
        let free = self.free.entry(class).or_default();
        if let Some(slot) = free.pop() {
            slot.0.live.fetch_add(1, Ordering::Relaxed);
            return (slot, false);
        }
        let region = Arc::new(Region::new(REGION));
        let per = REGION / class;
        free.reserve(per);
        for i in (1..per).rev() {
            free.push((Arc::clone(&region), i * class));
        }
        region.live.store(1, Ordering::Relaxed);
        ((region, 0), true)
    }

    /// Returns a slot. Gives back the regions to drop (outside the lock) when one became free
    /// and its class keeps a region's worth of other free slots.
    fn give(&mut self, class: usize, slot: Slot) -> Option<Arc<Region>> {
        let free = self.free.entry(class).or_default();
        let region = Arc::clone(&slot.0);
        let live = region.live.fetch_sub(1, Ordering::Relaxed);
        // Each slot belongs to one buffer at a time: a slot given back twice would be handed
        // to two buffers.
        assert!(
            live > 0,
            "buffer: a slot of a region with no live slot given back"
        );
        let left = live - 1;
        free.push(slot);
        let per = REGION / class;
        if left == 0 && free.len() >= 2 * per {
            free.retain(|(r, _)| !Arc::ptr_eq(r, &region));
            return Some(region);
        }
        None
    }

    #[cfg(test)]
    fn regions(&self, class: usize) -> usize {
        let mut seen: Vec<*const Region> = self
            .free
            .get(&class)
            .map(|v| v.iter().map(|(r, _)| Arc::as_ptr(r)).collect())
            .unwrap_or_default();
        seen.sort_unstable();
        seen.dedup();
        seen.len()
    }
}

static SLABS: Mutex<Slabs> = Mutex::new(Slabs {
    free: BTreeMap::new(),
});

fn slabs() -> std::sync::MutexGuard<'static, Slabs> {
    // The slab's state stays consistent between statements: a panic elsewhere cannot break it.
    SLABS
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
}

/// The size class of a buffer of `len` bytes, if it is carved from a shared region.
fn class_of(len: usize) -> Option<usize> {
    (len <= SLAB_MAX).then(|| len.next_power_of_two().max(ALIGN))
}

/// Where a buffer's bytes live.
enum Home {
    /// A zero-length buffer: no memory.
    Empty,
    /// A slot of a shared region.
    Slot {
        region: Arc<Region>,
        offset: usize,
        class: usize,
    },
    /// A region of its own (buffers over [`SLAB_MAX`]), unmapped when the buffer drops.
    Own(#[allow(dead_code)] Region),
}

/// A buffer whose contents start at an [`ALIGN`]-aligned address and, up to 1 MiB, never cross
/// a 2 MiB boundary (see the module documentation).
pub struct AlignedBuf {
    ptr: NonNull<u8>,
    len: usize,
    home: Home,
}

// SAFETY: the buffer owns its bytes exclusively (its slot or region), like a `Vec<u8>`.
unsafe impl Send for AlignedBuf {}
// SAFETY: shared references only read the bytes, like `&Vec<u8>`.
unsafe impl Sync for AlignedBuf {}

impl std::fmt::Debug for AlignedBuf {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("AlignedBuf")
            .field("ptr", &self.ptr)
            .field("len", &self.len)
            .finish()
    }
}

impl AlignedBuf {
    /// A zeroed buffer of `len` bytes (`len` should be a multiple of [`ALIGN`] for O_DIRECT).
    pub fn zeroed(len: usize) -> Self {
        if len == 0 {
            // An aligned address that owns nothing: a zero-length slice needs no memory.
            let ptr = NonNull::new(std::ptr::without_provenance_mut::<u8>(ALIGN))
                .unwrap_or(NonNull::dangling());
            return AlignedBuf {
                ptr,
                len,
                home: Home::Empty,
            };
        }
        match class_of(len) {
            Some(class) => {
                let ((region, offset), fresh) = slabs().take(class);
                let mut b = AlignedBuf {
                    ptr: region.at(offset),
                    len,
                    home: Home::Slot {
                        region,
                        offset,
                        class,
                    },
                };
                if !fresh {
                    b.as_mut_slice().fill(0);
                }
                b
            }
            None => {
                let size = len.div_ceil(ALIGN).saturating_mul(ALIGN);
                let region = Region::new(size);
                AlignedBuf {
                    ptr: region.ptr,
                    len,
                    home: Home::Own(region),
                }
            }
        }
    }

    /// Length in bytes.
    pub fn len(&self) -> usize {
        self.len
    }

    /// True for a zero-length buffer.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// The contents.
    pub fn as_slice(&self) -> &[u8] {
        // SAFETY: `ptr` is valid for `len` bytes while `home` lives (dangling only when `len`
        // is 0), and this buffer is the only owner of those bytes.
        unsafe { std::slice::from_raw_parts(self.ptr.as_ptr(), self.len) }
    }

    /// The contents, mutable.
    pub fn as_mut_slice(&mut self) -> &mut [u8] {
        // SAFETY: as in `as_slice`; `&mut self` makes the access exclusive.
        unsafe { std::slice::from_raw_parts_mut(self.ptr.as_ptr(), self.len) }
    }

    /// Address of the first byte (for the kernel).
    pub fn as_ptr(&self) -> *const u8 {
        self.ptr.as_ptr()
    }

    /// Mutable address of the first byte (for the kernel).
    pub fn as_mut_ptr(&mut self) -> *mut u8 {
        self.ptr.as_ptr()
    }
}

/// The shared region a buffer is a slot of, held: while a handle lives, the region stays mapped
/// at its address (for the io_uring queue, which registers whole regions as fixed buffers and
/// must never meet another region at an address it registered).
#[cfg_attr(not(target_os = "linux"), allow(dead_code))]
pub(crate) struct RegionHandle(Arc<Region>);

#[cfg_attr(not(target_os = "linux"), allow(dead_code))]
impl RegionHandle {
    /// The region's first byte.
    pub(crate) fn base(&self) -> *mut u8 {
        self.0.ptr.as_ptr()
    }

    /// Its length in bytes.
    pub(crate) fn size(&self) -> usize {
        self.0.size
    }

    /// True when this handle is all that keeps the region: no buffer of it lives and the pool
    /// has let it go (its slots are no longer handed out).
    pub(crate) fn unused(&self) -> bool {
        Arc::strong_count(&self.0) == 1
    }
}

#[cfg_attr(not(target_os = "linux"), allow(dead_code))]
impl AlignedBuf {
    /// The address of the shared region this buffer is a slot of (`None` for an empty buffer
    /// or one with a region of its own). A key, not a handle: see [`AlignedBuf::region`].
    #[inline]
    pub(crate) fn region_base(&self) -> Option<usize> {
        match &self.home {
            Home::Slot { region, .. } => Some(region.ptr.as_ptr() as usize),
            _ => None,
        }
    }

    /// A handle keeping this buffer's shared region mapped (see [`RegionHandle`]).
    pub(crate) fn region(&self) -> Option<RegionHandle> {
        match &self.home {
            Home::Slot { region, .. } => Some(RegionHandle(Arc::clone(region))),
            _ => None,
        }
    }
}

impl Drop for AlignedBuf {
    fn drop(&mut self) {
        if let Home::Slot {
            region,
            offset,
            class,
        } = std::mem::replace(&mut self.home, Home::Empty)
        {
            let released = slabs().give(class, (region, offset));
            drop(released);
        }
    }
}

impl Clone for AlignedBuf {
    fn clone(&self) -> Self {
        let mut b = AlignedBuf::zeroed(self.len);
        b.as_mut_slice().copy_from_slice(self.as_slice());
        b
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    #[should_panic(expected = "given back")]
    fn a_slot_given_back_twice_is_refused() {
        let mut slabs = Slabs::default();
        let (slot, _) = slabs.take(ALIGN);
        let again = (Arc::clone(&slot.0), slot.1);
        let _ = slabs.give(ALIGN, slot);
        let _ = slabs.give(ALIGN, again);
    }

    #[test]
    fn aligned_and_sized() {
        for len in [0, 512, 4096, 32768, 1 << 20, (1 << 20) + 4096, 3 << 20] {
            let mut b = AlignedBuf::zeroed(len);
            assert_eq!(b.len(), len);
            assert_eq!(b.as_ptr() as usize % ALIGN, 0);
            assert!(b.as_slice().iter().all(|&x| x == 0));
            if len > 0 {
                b.as_mut_slice()[len - 1] = 7;
                let c = b.clone();
                assert_eq!(c.as_slice()[len - 1], 7);
                assert_eq!(c.as_ptr() as usize % ALIGN, 0);
            }
        }
    }

    #[test]
    fn shared_buffers_never_cross_a_region_boundary_and_own_ones_start_on_one() {
        let mut held = Vec::new();
        for len in [4096usize, 12288, 32768, 40960, 262144, 1 << 20] {
            for _ in 0..(3 * REGION / len.next_power_of_two()) {
                let b = AlignedBuf::zeroed(len);
                let start = b.as_ptr() as usize;
                assert_eq!(start / REGION, (start + len - 1) / REGION, "len {len}");
                held.push(b);
            }
        }
        let big = AlignedBuf::zeroed(5 << 20);
        assert_eq!(big.as_ptr() as usize % REGION, 0);
    }

    #[test]
    fn a_reused_slot_is_zeroed_again() {
        let mut slabs = Slabs::default();
        let ((r, off), fresh) = slabs.take(ALIGN);
        assert!(fresh);
        // SAFETY: the slot was just taken and is ALIGN bytes long.
        unsafe { r.at(off).as_ptr().write_bytes(0xAB, ALIGN) };
        assert!(slabs.give(ALIGN, (r, off)).is_none());
        let (_, fresh) = slabs.take(ALIGN);
        assert!(
            !fresh,
            "the freed slot is reused, so zeroed() must clear it"
        );
        let mut b = AlignedBuf::zeroed(ALIGN);
        b.as_mut_slice().fill(0xCD);
        drop(b);
        assert!(AlignedBuf::zeroed(ALIGN).as_slice().iter().all(|&x| x == 0));
    }

    #[test]
    fn an_empty_region_goes_back_only_when_its_class_keeps_a_spare() {
        let class = 1 << 20; // two slots per region
        let mut slabs = Slabs::default();
        let held: Vec<Slot> = (0..6).map(|_| slabs.take(class).0).collect();
        assert_eq!(slabs.regions(class), 0, "every slot is in use");
        let mut released = 0;
        for s in held {
            released += usize::from(slabs.give(class, s).is_some());
        }
        // Three regions became free one after another; the first stays as the spare.
        assert_eq!(released, 2);
        assert_eq!(slabs.regions(class), 1);
        assert_eq!(slabs.free[&class].len(), 2);
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(64))]
        #[test]
        fn live_buffers_never_overlap(ops in proptest::collection::vec((0usize..6, any::<bool>()), 1..200)) {
            let sizes = [4096, 8192, 32768, 36864, 262144, 1 << 20];
            let mut live: Vec<(AlignedBuf, u8)> = Vec::new();
            for (i, (s, keep)) in ops.into_iter().enumerate() {
                if !keep && !live.is_empty() {
                    live.swap_remove(i % live.len());
                    continue;
                }
                let mut b = AlignedBuf::zeroed(sizes[s]);
                prop_assert!(b.as_slice().iter().all(|&x| x == 0));
                let mark = (i % 255 + 1) as u8;
                b.as_mut_slice().fill(mark);
                live.push((b, mark));
            }
            for (b, mark) in &live {
                prop_assert!(b.as_slice().iter().all(|x| x == mark), "a buffer was overwritten");
            }
            let mut spans: Vec<(usize, usize)> =
                live.iter().map(|(b, _)| (b.as_ptr() as usize, b.len())).collect();
            spans.sort_unstable();
            for w in spans.windows(2) {
                prop_assert!(w[0].0 + w[0].1 <= w[1].0, "{:?} overlaps {:?}", w[0], w[1]);
            }
        }
    }
}
