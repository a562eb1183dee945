//! What a block device holds before `--allow-device` lets `prepare` overwrite it: blank, a known
//! signature (a filesystem, a volume manager's or RAID's metadata, swap, a partition table), or
//! data nobody recognizes.
//!
//! Only a blank device (its first [`HEAD_BYTES`], last [`TAIL_BYTES`] and samples between all zero) or one holding
//! an mbxstress database (checked by the caller, from our header) may be written with
//! `--allow-device` alone; anything else needs `--force`, and the message names what was found.
//! An unmounted device can still hold a filesystem in use elsewhere: a SAN LUN mounted on another
//! server looks exactly like an unused device from here.
//!
//! The signatures are the magic numbers at the offsets their formats document (the same ones
//! `blkid` and `wipefs` look for). They are checked here rather than through libblkid, which is
//! a C library (a build and run-time dependency the static build and Windows do not have); the
//! check is a pure function over two byte ranges, unit-tested on images of each format.
//!
//! The blank check covers the whole area signatures can occupy, as blkid probes it: the first
//! [`HEAD_BYTES`] (every superblock offset above, VMFS's 2 MiB among them, with room for a
//! partition's start at the usual 1 MiB alignment and the next) and the last [`TAIL_BYTES`] (md
//! RAID, GPT's backup header, ZFS's last two labels), and beyond them [`SAMPLES`] evenly spaced
//! reads of [`SAMPLE_BYTES`] across the device: a device blank at both ends but holding data in
//! between (a filesystem whose first MiBs were wiped, a database written further in) is data, not
//! blank. Reading is bounded (about 36 MiB) and read-only.

use std::path::Path;

use mbx_io::{IoError, IoFile, OpenMode};

const KIB: u64 = 1024;
const MIB: u64 = 1024 * KIB;

/// Bytes read from the start of the device: every signature below lies in them (VMFS's is at
/// 2 MiB), and the blank check covers them.
pub const HEAD_BYTES: u64 = 16 * MIB;
/// Bytes read from the end: md RAID 0.90 and 1.0 superblocks, GPT's backup header and ZFS's
/// labels 2 and 3 (the last 512 KiB) live there.
pub const TAIL_BYTES: u64 = 16 * MIB;
/// Reads spread evenly between the head and the tail for the blank check.
pub const SAMPLES: u64 = 64;
/// The size of each of those reads.
pub const SAMPLE_BYTES: u64 = 64 * KIB;

/// What a device holds.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Contents {
    /// Its first and last bytes (as read) are all zero.
    Blank,
    /// A known format, named ("an ext4 filesystem"), and the offset of its magic number.
    Signature {
        /// What it is, with an article, for messages.
        name: &'static str,
        /// Where its magic number is.
        offset: u64,
    },
    /// No signature, but not blank either: the first non-zero byte's offset.
    Data {
        /// Offset of the first non-zero byte found.
        offset: u64,
    },
}

impl std::fmt::Display for Contents {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Contents::Blank => write!(f, "nothing (its first and last MiBs are zero)"),
            Contents::Signature { name, offset } => {
                write!(f, "{name} (signature at byte {offset})")
            }
            Contents::Data { offset } => write!(
                f,
                "data in no format mbxstress recognizes (the first non-zero byte is at offset {offset})"
            ),
        }
    }
}

/// The bytes of a device as read: its start, its end, and its size.
struct Image<'a> {
    head: &'a [u8],
    tail: &'a [u8],
    size: u64,
}

impl<'a> Image<'a> {
    /// `len` bytes at `offset`, from whichever range holds them whole, or `None`.
    fn at(&self, offset: u64, len: usize) -> Option<&'a [u8]> {
        let within = |buf: &'a [u8], start: u64| -> Option<&'a [u8]> {
            let from = usize::try_from(offset.checked_sub(start)?).ok()?;
            buf.get(from..from.checked_add(len)?)
        };
        let tail_start = self
            .size
            .saturating_sub(u64::try_from(self.tail.len()).unwrap_or(u64::MAX));
        within(self.head, 0).or_else(|| within(self.tail, tail_start))
    }

    fn is(&self, offset: u64, magic: &[u8]) -> bool {
        self.at(offset, magic.len()) == Some(magic)
    }

    fn u32_le(&self, offset: u64) -> Option<u32> {
        let b = self.at(offset, 4)?;
        Some(u32::from_le_bytes([b[0], b[1], b[2], b[3]]))
    }
}

/// The format of the device whose first bytes are `head`, last bytes `tail` and size `size`
/// (`head` starts at offset 0, `tail` ends at `size`; they may overlap on a small device).
pub fn identify(head: &[u8], tail: &[u8], size: u64) -> Contents {
    let img = Image { head, tail, size };
    if let Some((name, offset)) = signature(&img) {
        return Contents::Signature { name, offset };
    }
    let tail_start = size.saturating_sub(u64::try_from(tail.len()).unwrap_or(u64::MAX));
    let first_nonzero = |buf: &[u8], start: u64| {
        buf.iter()
            .position(|b| *b != 0)
            .and_then(|i| u64::try_from(i).ok())
            .map(|i| start.saturating_add(i))
    };
    match first_nonzero(head, 0).or_else(|| first_nonzero(tail, tail_start)) {
        Some(offset) => Contents::Data { offset },
        None => Contents::Blank,
    }
}

/// The first known signature, in the order that tells them apart (a FAT or NTFS boot sector also
/// ends in 0x55AA, a GPT disk also has a protective MBR).
fn signature(img: &Image<'_>) -> Option<(&'static str, u64)> {
    // ext2/3/4: the superblock at 1024, s_magic 0xEF53 at +56; the feature flags tell them apart
    // (s_feature_compat at +0x5C: has_journal 0x4; s_feature_incompat at +0x60: extents 0x40,
    // 64bit 0x80, flex_bg 0x200 are ext4's).
    if img.is(1024 + 56, &[0x53, 0xEF]) {
        let compat = img.u32_le(1024 + 0x5C).unwrap_or(0);
        let incompat = img.u32_le(1024 + 0x60).unwrap_or(0);
        let name = if incompat & (0x40 | 0x80 | 0x200) != 0 {
            "an ext4 filesystem"
        } else if compat & 0x4 != 0 {
            "an ext3 filesystem"
        } else {
            "an ext2 filesystem"
        };
        return Some((name, 1024 + 56));
    }
    let fixed: [(u64, &[u8], &'static str); 10] = [
        (0, b"XFSB", "an XFS filesystem"),
        // btrfs: the superblock at 64 KiB, magic at +0x40.
        (0x1_0040, b"_BHRfS_M", "a btrfs filesystem"),
        (0, b"LUKS\xba\xbe", "a LUKS encrypted volume"),
        (3, b"NTFS    ", "an NTFS filesystem"),
        (3, b"EXFAT   ", "an exFAT filesystem"),
        (3, b"ReFS\0", "a ReFS filesystem"),
        (32, b"ORCLDISK", "an Oracle ASM disk"),
        (32769, b"CD001", "an ISO 9660 filesystem"),
        // VMware VMFS: the volume (LVM) header at 1 MiB, the filesystem's at 2 MiB.
        (MIB, &[0x0d, 0xd0, 0x01, 0xc0], "a VMware VMFS volume"),
        (
            2 * MIB,
            &[0x5e, 0xf1, 0xab, 0x2f],
            "a VMware VMFS filesystem",
        ),
    ];
    if let Some((offset, _, name)) = fixed.iter().find(|(o, m, _)| img.is(*o, m)) {
        return Some((name, *offset));
    }
    // LVM2 physical volume: "LABELONE" in one of the first four sectors, "LVM2 001" at +24.
    for sector in 0..4u64 {
        let at = sector * 512;
        if img.is(at, b"LABELONE") && img.is(at + 24, b"LVM2 001") {
            return Some(("an LVM2 physical volume", at));
        }
    }
    // Linux md RAID: magic 0xa92b4efc at the superblock's start. Versions 1.1 and 1.2 at 0 and
    // 4 KiB; 1.0 at 8 KiB from the end (rounded down to 4 KiB); 0.90 in the last 64 KiB-aligned
    // 64 KiB block but one (in the host's byte order: both are tried).
    let md_le = 0xa92b_4efc_u32.to_le_bytes();
    let md_be = 0xa92b_4efc_u32.to_be_bytes();
    let sectors = img.size / 512;
    let v10 = sectors.checked_sub(16).map(|s| (s & !7) * 512);
    let v090 = (img.size & !(64 * KIB - 1)).checked_sub(64 * KIB);
    for at in [Some(0), Some(4 * KIB), v10, v090].into_iter().flatten() {
        if img.is(at, &md_le) || (Some(at) == v090 && img.is(at, &md_be)) {
            return Some(("a Linux md RAID member", at));
        }
    }
    // Swap: "SWAPSPACE2" (or the old "SWAP-SPACE") in the last 10 bytes of the first page.
    for page in [4 * KIB, 8 * KIB, 16 * KIB, 64 * KIB] {
        let at = page - 10;
        if img.is(at, b"SWAPSPACE2") || img.is(at, b"SWAP-SPACE") {
            return Some(("Linux swap", at));
        }
    }
    // ZFS: uberblocks (magic 0x00bab10c, either byte order) in the 128 KiB ring at 128 KiB of
    // the first label, one per KiB at least.
    let zfs_le = 0x00ba_b10c_u64.to_le_bytes();
    let zfs_be = 0x00ba_b10c_u64.to_be_bytes();
    // Labels 0 and 1 at 0 and 256 KiB; 2 and 3 in the last 512 KiB (of the size rounded down
    // to 256 KiB), as blkid probes them.
    let end = img.size & !(256 * KIB - 1);
    let labels = [
        Some(0),
        Some(256 * KIB),
        end.checked_sub(512 * KIB),
        end.checked_sub(256 * KIB),
    ];
    for label in labels.into_iter().flatten() {
        for k in 0..128u64 {
            let at = label + 128 * KIB + k * KIB;
            if img.is(at, &zfs_le) || img.is(at, &zfs_be) {
                return Some(("a ZFS pool member", at));
            }
        }
    }
    // FAT: the boot sector's file system type at 54 (FAT12/16) or 82 (FAT32), with 0x55AA.
    let boot = img.is(510, &[0x55, 0xAA]);
    if boot && (img.is(54, b"FAT12   ") || img.is(54, b"FAT16   ") || img.is(54, b"FAT     ")) {
        return Some(("a FAT filesystem", 54));
    }
    if boot && img.is(82, b"FAT32   ") {
        return Some(("a FAT32 filesystem", 82));
    }
    // GPT: "EFI PART" in the header at LBA 1 (512- or 4096-byte sectors), or in the backup
    // header in the last sector.
    for at in [512, 4 * KIB] {
        if img.is(at, b"EFI PART") {
            return Some(("a GPT partition table", at));
        }
    }
    for sector in [512, 4 * KIB] {
        if let Some(at) = img.size.checked_sub(sector) {
            if img.is(at, b"EFI PART") {
                return Some(("a GPT partition table (its backup header)", at));
            }
        }
    }
    // MBR: 0x55AA at 510 and a partition entry in use (type non-zero, status 0x00 or 0x80).
    if boot {
        let used = (0..4u64).any(|i| {
            let e = 446 + i * 16;
            matches!(img.at(e, 1), Some([0x00 | 0x80]))
                && img.at(e + 4, 1).is_some_and(|t| t[0] != 0)
        });
        return Some(if used {
            ("an MBR partition table", 510)
        } else {
            ("a boot sector (0x55AA at byte 510)", 510)
        });
    }
    None
}

/// Reads the start and end of the device at `path` (read-only, about [`HEAD_BYTES`] +
/// [`TAIL_BYTES`]) and tells what it holds.
pub fn inspect_device(path: &Path) -> Result<Contents, IoError> {
    let f = IoFile::open(path, OpenMode::read_buffered())?;
    let size = f.len()?;
    let len = |n: u64| usize::try_from(n.min(size)).unwrap_or(0);
    let mut head = vec![0u8; len(HEAD_BYTES)];
    f.read_exact_at(&mut head, 0)?;
    let mut tail = vec![0u8; len(TAIL_BYTES)];
    let tail_start = size.saturating_sub(u64::try_from(tail.len()).unwrap_or(u64::MAX));
    f.read_exact_at(&mut tail, tail_start)?;
    let found = identify(&head, &tail, size);
    if found != Contents::Blank {
        return Ok(found);
    }
    // Blank at both ends: also between them.
    let (from, to) = (HEAD_BYTES.min(size), tail_start);
    if to > from {
        let mut buf = vec![0u8; len(SAMPLE_BYTES)];
        let step = (to - from) / SAMPLES;
        for i in 0..SAMPLES {
            let at = from.saturating_add(step.saturating_mul(i));
            let n = usize::try_from(SAMPLE_BYTES.min(to.saturating_sub(at))).unwrap_or(0);
            let Some(chunk) = buf.get_mut(..n) else {
                continue;
            };
            f.read_exact_at(chunk, at)?;
            if let Some(i) = chunk.iter().position(|b| *b != 0) {
                return Ok(Contents::Data {
                    offset: at.saturating_add(u64::try_from(i).unwrap_or(0)),
                });
            }
        }
    }
    Ok(Contents::Blank)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A device image of `size` bytes (zero), with `bytes` written at `offset`.
    struct Dev {
        data: Vec<u8>,
    }

    impl Dev {
        fn new(size: usize) -> Dev {
            Dev {
                data: vec![0; size],
            }
        }
        fn put(mut self, offset: u64, bytes: &[u8]) -> Dev {
            let at = usize::try_from(offset).expect("small offset");
            self.data[at..at + bytes.len()].copy_from_slice(bytes);
            self
        }
        /// What identify says from the head and tail as inspect_device would read them.
        fn contents(&self) -> Contents {
            let size = self.data.len() as u64;
            let head = &self.data[..self.data.len().min(HEAD_BYTES as usize)];
            let tail_len = self.data.len().min(TAIL_BYTES as usize);
            let tail = &self.data[self.data.len() - tail_len..];
            identify(head, tail, size)
        }
        fn name(&self) -> &'static str {
            match self.contents() {
                Contents::Signature { name, .. } => name,
                other => panic!("no signature found: {other:?}"),
            }
        }
    }

    const SIZE: usize = 8 << 20;

    /// Issue 34: a device blank in its first and last MiBs but holding data further in is not
    /// blank (the audit's device: 4 MiB of zeros, then data).
    #[test]
    fn data_past_the_head_and_before_the_tail_is_found() {
        let dir = tempfile::tempdir().expect("dir");
        let path = dir.path().join("dev.img");
        let f = std::fs::File::create(&path).expect("image");
        f.set_len(64 * MIB).expect("size");
        assert_eq!(inspect_device(&path).expect("read"), Contents::Blank);
        let at = 30 * MIB + 100;
        mbx_io::platform::write_all_at(&f, b"data", at).expect("write");
        assert_eq!(
            inspect_device(&path).expect("read"),
            Contents::Data { offset: at }
        );
        // In the head, past the 2 MiB the check once stopped at.
        let f2 = std::fs::File::create(&path).expect("image");
        f2.set_len(64 * MIB).expect("size");
        mbx_io::platform::write_all_at(&f2, b"data", 5 * MIB).expect("write");
        assert_eq!(
            inspect_device(&path).expect("read"),
            Contents::Data { offset: 5 * MIB }
        );
    }

    #[test]
    fn blank_and_unrecognized_data() {
        assert_eq!(Dev::new(SIZE).contents(), Contents::Blank);
        assert_eq!(
            Dev::new(SIZE).put(5000, &[1]).contents(),
            Contents::Data { offset: 5000 }
        );
        let end = SIZE as u64 - 3;
        assert_eq!(
            Dev::new(SIZE).put(end, &[9]).contents(),
            Contents::Data { offset: end }
        );
        // Smaller than head and tail together: the ranges overlap, nothing is out of bounds.
        assert_eq!(Dev::new(4096).contents(), Contents::Blank);
        assert_eq!(Dev::new(0).contents(), Contents::Blank);
    }

    #[test]
    fn ext_filesystems_are_told_apart_by_their_features() {
        let ext = |compat: u32, incompat: u32| {
            Dev::new(SIZE)
                .put(1024 + 56, &[0x53, 0xEF])
                .put(1024 + 0x5C, &compat.to_le_bytes())
                .put(1024 + 0x60, &incompat.to_le_bytes())
                .name()
        };
        assert_eq!(ext(0, 0), "an ext2 filesystem");
        assert_eq!(ext(0x4, 0x2), "an ext3 filesystem");
        assert_eq!(ext(0x4, 0x2c2), "an ext4 filesystem");
    }

    #[test]
    fn each_signature_at_its_documented_offset() {
        let cases: Vec<(Dev, &str)> = vec![
            (Dev::new(SIZE).put(0, b"XFSB"), "an XFS filesystem"),
            (
                Dev::new(SIZE).put(0x10040, b"_BHRfS_M"),
                "a btrfs filesystem",
            ),
            (
                Dev::new(SIZE).put(0, b"LUKS\xba\xbe"),
                "a LUKS encrypted volume",
            ),
            (
                Dev::new(SIZE).put(3, b"NTFS    ").put(510, &[0x55, 0xAA]),
                "an NTFS filesystem",
            ),
            (Dev::new(SIZE).put(3, b"EXFAT   "), "an exFAT filesystem"),
            (Dev::new(SIZE).put(3, b"ReFS\0"), "a ReFS filesystem"),
            (Dev::new(SIZE).put(32, b"ORCLDISK"), "an Oracle ASM disk"),
            (
                Dev::new(SIZE).put(32769, b"CD001"),
                "an ISO 9660 filesystem",
            ),
            (
                Dev::new(SIZE).put(1 << 20, &[0x0d, 0xd0, 0x01, 0xc0]),
                "a VMware VMFS volume",
            ),
            (
                Dev::new(SIZE)
                    .put(512, b"LABELONE")
                    .put(512 + 24, b"LVM2 001"),
                "an LVM2 physical volume",
            ),
            (
                Dev::new(SIZE).put(4096, &0xa92b_4efc_u32.to_le_bytes()),
                "a Linux md RAID member",
            ),
            // md 1.0: 8 KiB from the end; 0.90: the last 64 KiB block but one.
            (
                Dev::new(SIZE).put(SIZE as u64 - 8192, &0xa92b_4efc_u32.to_le_bytes()),
                "a Linux md RAID member",
            ),
            (
                Dev::new(SIZE).put(SIZE as u64 - 65536, &0xa92b_4efc_u32.to_be_bytes()),
                "a Linux md RAID member",
            ),
            (Dev::new(SIZE).put(4086, b"SWAPSPACE2"), "Linux swap"),
            (Dev::new(SIZE).put(65526, b"SWAP-SPACE"), "Linux swap"),
            (
                Dev::new(SIZE).put(128 * 1024 + 5 * 1024, &0x00ba_b10c_u64.to_le_bytes()),
                "a ZFS pool member",
            ),
            (
                Dev::new(SIZE).put(54, b"FAT16   ").put(510, &[0x55, 0xAA]),
                "a FAT filesystem",
            ),
            (
                Dev::new(SIZE).put(82, b"FAT32   ").put(510, &[0x55, 0xAA]),
                "a FAT32 filesystem",
            ),
            (
                // A protective MBR and the GPT header.
                Dev::new(SIZE)
                    .put(446 + 4, &[0xEE])
                    .put(510, &[0x55, 0xAA])
                    .put(512, b"EFI PART"),
                "a GPT partition table",
            ),
            (
                Dev::new(SIZE).put(SIZE as u64 - 512, b"EFI PART"),
                "a GPT partition table (its backup header)",
            ),
            (
                Dev::new(SIZE).put(446 + 4, &[0x83]).put(510, &[0x55, 0xAA]),
                "an MBR partition table",
            ),
            (
                Dev::new(SIZE).put(510, &[0x55, 0xAA]),
                "a boot sector (0x55AA at byte 510)",
            ),
        ];
        for (dev, expected) in cases {
            assert_eq!(dev.name(), expected);
        }
    }

    #[test]
    fn the_message_names_the_signature_and_its_offset() {
        let c = Dev::new(SIZE).put(0, b"XFSB").contents();
        assert_eq!(c.to_string(), "an XFS filesystem (signature at byte 0)");
    }
}
