//! Sector-aligned I/O buffers without unsafe code.
//!
//! O_DIRECT needs the buffer address, the length and the file offset aligned to the device's
//! logical block size. We over-allocate a `Vec<u8>` by one alignment unit and expose the aligned
//! window inside it; the heap allocation never moves while the buffer lives, so the address stays
//! valid for the kernel even when the `AlignedBuf` value itself is moved around.

/// Alignment of every buffer: 4 KiB covers 512-byte and 4Kn devices and the page cache.
pub const ALIGN: usize = 4096;

/// A heap buffer whose contents start at an [`ALIGN`]-aligned address.
#[derive(Debug)]
pub struct AlignedBuf {
    storage: Vec<u8>,
    start: usize,
    len: usize,
}

impl AlignedBuf {
    /// A zeroed buffer of `len` bytes (`len` should be a multiple of [`ALIGN`] for O_DIRECT).
    pub fn zeroed(len: usize) -> Self {
        let storage = vec![0u8; len + ALIGN];
        let addr = storage.as_ptr() as usize;
        let start = (ALIGN - addr % ALIGN) % ALIGN;
        AlignedBuf {
            storage,
            start,
            len,
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
        &self.storage[self.start..self.start + self.len]
    }

    /// The contents, mutable.
    pub fn as_mut_slice(&mut self) -> &mut [u8] {
        &mut self.storage[self.start..self.start + self.len]
    }

    /// Address of the first byte (for the kernel).
    pub fn as_ptr(&self) -> *const u8 {
        self.as_slice().as_ptr()
    }

    /// Mutable address of the first byte (for the kernel).
    pub fn as_mut_ptr(&mut self) -> *mut u8 {
        self.as_mut_slice().as_mut_ptr()
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

    #[test]
    fn aligned_and_sized() {
        for len in [0, 512, 4096, 32768, 1 << 20] {
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
}
