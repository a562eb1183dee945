//! The database header: pages 0 and 1 of every database file (header and shadow header, as ESE
//! keeps). Both are full pages of kind [`KIND_HEADER`] with the standard page header; the fields
//! below start at byte 64. The copy with the valid checksum and the highest generation wins, so a
//! torn header write never loses the database.
//!
//! | offset | size | field |
//! |---|---|---|
//! | 64 | 8 | format magic `MBXSTDB1` |
//! | 72 | 4 | format version (1) |
//! | 76 | 4 | page size (32768) |
//! | 80 | 8 | page count of the file, header pages included |
//! | 88 | 4 | state: 1 creating, 2 clean, 3 dirty (a run is using it) |
//! | 92 | 4 | database index (0-based) |
//! | 96 | 8 | created pages: data pages known durable (the resume point while creating) |
//! | 104 | 8 | mailboxes (creation parameter) |
//! | 112 | 8 | mailbox quota, MB |
//! | 120 | 4 | databases in the set |
//! | 124 | 1 | compressibility percent |
//! | 128 | 8 | creation time, Unix seconds |
//! | 136 | 32 | tool version, UTF-8, zero padded |
//! | 256 | 32512 | filler unique to the database and copy (xorshift from the id) |

use crate::page::{seal, PageHeader, KIND_HEADER, PAGE_HEADER, PAGE_MAGIC, PAGE_SIZE};

/// Format magic inside the header page.
pub const DB_MAGIC: &[u8; 8] = b"MBXSTDB1";
/// Current format version.
pub const FORMAT_VERSION: u32 = 1;
/// First byte of the header page's filler (after the fields).
const FILLER_START: usize = 256;
/// Pages used by the header and its shadow; data pages start here.
pub const HEADER_PAGES: u64 = 2;

/// Lifecycle of a database file.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "snake_case")]
pub enum DbState {
    /// Being created; pages beyond `created_pages` are not trustworthy.
    Creating,
    /// Complete and not in use.
    Clean,
    /// A run has been writing to it and did not shut down cleanly.
    Dirty,
}

impl DbState {
    fn code(self) -> u32 {
        match self {
            DbState::Creating => 1,
            DbState::Clean => 2,
            DbState::Dirty => 3,
        }
    }
    fn from_code(c: u32) -> Option<Self> {
        match c {
            1 => Some(DbState::Creating),
            2 => Some(DbState::Clean),
            3 => Some(DbState::Dirty),
            _ => None,
        }
    }
}

/// The decoded header.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct DbHeader {
    /// Random id, carried by every page.
    pub database_id: u64,
    /// Incremented on every header write; the higher valid copy wins.
    pub generation: u64,
    /// Format version.
    pub format_version: u32,
    /// Page size.
    pub page_size: u32,
    /// Pages in the file including the two header pages.
    pub page_count: u64,
    /// Lifecycle state.
    pub state: DbState,
    /// Index in the database set.
    pub database_index: u32,
    /// Data pages written and made durable (equals `page_count - 2` once created).
    pub created_pages: u64,
    /// Mailboxes of the profile the set was created for.
    pub mailboxes: u64,
    /// Mailbox quota, MB.
    pub quota_mb: u64,
    /// Databases in the set.
    pub databases: u32,
    /// Compressibility of the payload.
    pub compressibility_pct: u8,
    /// Creation time, Unix seconds.
    pub created_unix_s: u64,
    /// Version of the tool that created it.
    pub tool_version: String,
}

impl DbHeader {
    /// Data pages of the file.
    pub fn data_pages(&self) -> u64 {
        self.page_count.saturating_sub(HEADER_PAGES)
    }

    /// File size in bytes.
    pub fn file_bytes(&self) -> u64 {
        self.page_count * PAGE_SIZE as u64
    }

    /// Encodes the header into a page-sized buffer, as page `copy` (0 or 1).
    pub fn encode(&self, p: &mut [u8], copy: u64) {
        // A header copy is one whole page, at page 0 or 1 of the file.
        assert!(
            p.len() == PAGE_SIZE && copy < HEADER_PAGES,
            "database header: copy {copy} encoded into {} bytes",
            p.len()
        );
        p.fill(0);
        p[..8].copy_from_slice(PAGE_MAGIC);
        let ph = PageHeader {
            page_number: copy,
            database_id: self.database_id,
            generation: self.generation,
            kind: KIND_HEADER,
            compressibility_pct: self.compressibility_pct,
        };
        p[16..24].copy_from_slice(&ph.page_number.to_le_bytes());
        p[24..32].copy_from_slice(&ph.database_id.to_le_bytes());
        p[32..40].copy_from_slice(&ph.generation.to_le_bytes());
        p[40..44].copy_from_slice(&ph.kind.to_le_bytes());
        p[44] = ph.compressibility_pct;
        let b = PAGE_HEADER;
        p[b..b + 8].copy_from_slice(DB_MAGIC);
        p[b + 8..b + 12].copy_from_slice(&self.format_version.to_le_bytes());
        p[b + 12..b + 16].copy_from_slice(&self.page_size.to_le_bytes());
        p[b + 16..b + 24].copy_from_slice(&self.page_count.to_le_bytes());
        p[b + 24..b + 28].copy_from_slice(&self.state.code().to_le_bytes());
        p[b + 28..b + 32].copy_from_slice(&self.database_index.to_le_bytes());
        p[b + 32..b + 40].copy_from_slice(&self.created_pages.to_le_bytes());
        p[b + 40..b + 48].copy_from_slice(&self.mailboxes.to_le_bytes());
        p[b + 48..b + 56].copy_from_slice(&self.quota_mb.to_le_bytes());
        p[b + 56..b + 60].copy_from_slice(&self.databases.to_le_bytes());
        p[b + 60] = self.compressibility_pct;
        p[b + 64..b + 72].copy_from_slice(&self.created_unix_s.to_le_bytes());
        let v = self.tool_version.as_bytes();
        let n = v.len().min(32);
        p[b + 72..b + 72 + n].copy_from_slice(&v[..n]);
        // Unused space gets filler unique to this database and copy, so header pages share no
        // 4 KiB block with any other database (no deduplication anywhere in the file).
        let mut x = xxhash_rust::xxh3::xxh3_64(
            &[self.database_id.to_le_bytes(), copy.to_le_bytes()].concat(),
        ) | 1;
        for chunk in p[FILLER_START..].chunks_mut(8) {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            chunk.copy_from_slice(&x.to_le_bytes()[..chunk.len()]);
        }
        seal(p);
    }

    /// Decodes one header copy; `None` if it is not a valid mbxstress header page.
    pub fn decode(p: &[u8]) -> Option<DbHeader> {
        if p.len() < PAGE_SIZE || !crate::page::checksum_ok(&p[..PAGE_SIZE]) {
            return None;
        }
        let ph = PageHeader::read(p);
        let b = PAGE_HEADER;
        if ph.kind != KIND_HEADER || &p[b..b + 8] != DB_MAGIC {
            return None;
        }
        let u32_at = |o: usize| u32::from_le_bytes(p[o..o + 4].try_into().unwrap_or([0; 4]));
        let u64_at = |o: usize| u64::from_le_bytes(p[o..o + 8].try_into().unwrap_or([0; 8]));
        let version = &p[b + 72..b + 104];
        let end = version
            .iter()
            .position(|&c| c == 0)
            .unwrap_or(version.len());
        Some(DbHeader {
            database_id: ph.database_id,
            generation: ph.generation,
            format_version: u32_at(b + 8),
            page_size: u32_at(b + 12),
            page_count: u64_at(b + 16),
            state: DbState::from_code(u32_at(b + 24))?,
            database_index: u32_at(b + 28),
            created_pages: u64_at(b + 32),
            mailboxes: u64_at(b + 40),
            quota_mb: u64_at(b + 48),
            databases: u32_at(b + 56),
            compressibility_pct: p[b + 60],
            created_unix_s: u64_at(b + 64),
            tool_version: String::from_utf8_lossy(&version[..end]).into_owned(),
        })
    }

    /// Picks the header from the first two pages of a file: the valid copy with the highest
    /// generation. `None` if neither copy is valid (not an mbxstress database).
    pub fn from_first_pages(two_pages: &[u8]) -> Option<DbHeader> {
        let a = two_pages.get(..PAGE_SIZE).and_then(DbHeader::decode);
        let b = two_pages
            .get(PAGE_SIZE..2 * PAGE_SIZE)
            .and_then(DbHeader::decode);
        match (a, b) {
            (Some(a), Some(b)) => Some(if b.generation > a.generation { b } else { a }),
            (a, b) => a.or(b),
        }
    }

    /// Which of the header copies (0, 1) in `two_pages` cannot be decoded or belong to another
    /// database than this header's. Empty when both are intact.
    pub fn damaged_copies(&self, two_pages: &[u8]) -> Vec<u64> {
        (0..HEADER_PAGES)
            .filter(|&copy| {
                let start = copy as usize * PAGE_SIZE;
                two_pages
                    .get(start..start + PAGE_SIZE)
                    .and_then(DbHeader::decode)
                    .map(|h| h.database_id)
                    != Some(self.database_id)
            })
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    #[should_panic(expected = "database header: copy 2")]
    fn a_header_copy_is_page_0_or_1() {
        let mut p = vec![0u8; PAGE_SIZE];
        sample().encode(&mut p, 2);
    }

    fn sample() -> DbHeader {
        DbHeader {
            database_id: 0xDEAD_BEEF,
            generation: 5,
            format_version: FORMAT_VERSION,
            page_size: PAGE_SIZE as u32,
            page_count: 1026,
            state: DbState::Creating,
            database_index: 3,
            created_pages: 512,
            mailboxes: 100,
            quota_mb: 16,
            databases: 4,
            compressibility_pct: 30,
            created_unix_s: 1_790_000_000,
            tool_version: "0.1.0".into(),
        }
    }

    #[test]
    fn round_trip() {
        let mut p = vec![0u8; PAGE_SIZE];
        sample().encode(&mut p, 0);
        assert_eq!(DbHeader::decode(&p), Some(sample()));
        assert_eq!(sample().data_pages(), 1024);
    }

    #[test]
    fn shadow_copy_survives_a_torn_header() {
        let mut two = vec![0u8; 2 * PAGE_SIZE];
        let mut newer = sample();
        newer.generation = 6;
        newer.created_pages = 1024;
        sample().encode(&mut two[PAGE_SIZE..], 1);
        newer.encode(&mut two[..PAGE_SIZE], 0);
        assert_eq!(DbHeader::from_first_pages(&two), Some(newer.clone()));
        // Tear the newer copy: the older shadow is used.
        two[20_000..PAGE_SIZE].fill(0xAB);
        assert_eq!(DbHeader::from_first_pages(&two), Some(sample()));
        // Both torn: not a database.
        two[PAGE_SIZE + 100] ^= 1;
        assert_eq!(DbHeader::from_first_pages(&two), None);
        // A data page is not a header.
        let mut data = vec![0u8; 2 * PAGE_SIZE];
        crate::page::build_data_page(
            &mut data[..PAGE_SIZE],
            &PageHeader {
                page_number: 0,
                database_id: 1,
                generation: 0,
                kind: crate::page::KIND_DATA,
                compressibility_pct: 0,
            },
        );
        assert_eq!(DbHeader::from_first_pages(&data), None);
    }
}
