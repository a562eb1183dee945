//! Per-database rows of the Database Backup, Soft Recovery and Checksum tests, as result.json
//! carries them and as the Jetstress importer produces them, with the ESRP summaries over them
//! (docs/results.md, "`esrp` and `compare` output"). One definition, so `esrp` cannot treat an mbxstress
//! result and a Jetstress report differently.

use serde::{Deserialize, Serialize};

/// One database of a Database Backup test (`backup[]` in result.json; a row of Jetstress's
/// "Database Backup Statistics").
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct BackupRow {
    /// Instance (Jetstress: the database instance name).
    pub instance: String,
    /// Database size, MB.
    pub database_size_mb: f64,
    /// Seconds the backup of this database took.
    pub elapsed_s: f64,
    /// MB per second.
    pub mb_per_s: f64,
}

impl BackupRow {
    /// MB/s per database (the Avg row) and per server (the Sum row) over `rows`; `None` if there
    /// are none.
    pub fn avg_and_sum(rows: &[BackupRow]) -> Option<(f64, f64)> {
        if rows.is_empty() {
            return None;
        }
        let sum: f64 = rows.iter().map(|b| b.mb_per_s).sum();
        Some((sum / rows.len() as f64, sum))
    }
}

/// One database of a Soft Recovery test (`soft_recovery[]` in result.json; a row of Jetstress's
/// "Soft-Recovery Statistics").
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SoftRecoveryRow {
    /// Instance.
    pub instance: String,
    /// Transaction log files replayed.
    pub log_files_replayed: u64,
    /// Seconds the replay took.
    pub elapsed_s: f64,
}

impl SoftRecoveryRow {
    /// Average log files replayed and average elapsed seconds (the Avg row); `None` if there are
    /// no rows.
    pub fn averages(rows: &[SoftRecoveryRow]) -> Option<(f64, f64)> {
        if rows.is_empty() {
            return None;
        }
        let n = rows.len() as f64;
        let logs: f64 = rows.iter().map(|r| r.log_files_replayed as f64).sum();
        let secs: f64 = rows.iter().map(|r| r.elapsed_s).sum();
        Some((logs / n, secs / n))
    }

    /// Seconds per log as ESRP quotes it: average elapsed / average logs replayed (0 when no log
    /// was replayed).
    pub fn seconds_per_log(avg_logs: f64, avg_secs: f64) -> f64 {
        if avg_logs > 0.0 {
            avg_secs / avg_logs
        } else {
            0.0
        }
    }
}

/// One database file of a checksum pass (`checksum[]` in result.json, and in `verify --json`):
/// Jetstress's seen, bad, correctable and wrong page-number pages, with the bytes read and the
/// time taken.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ChecksumRow {
    /// The database file.
    pub database_path: String,
    /// Pages read (file size / 32 KiB).
    pub seen_pages: u64,
    /// Pages that failed verification (beyond one bit, zeroed, another database's).
    pub bad_pages: u64,
    /// Pages with exactly one flipped bit.
    pub correctable_pages: u64,
    /// Valid pages at the wrong place.
    pub wrong_page_number_pages: u64,
    /// Bytes read.
    pub bytes: u64,
    /// Seconds taken.
    pub elapsed_s: f64,
}

impl ChecksumRow {
    /// MB (10^6 bytes, as Jetstress's MB/s) read per second; 0 when no time was measured.
    pub fn mb_per_s(&self) -> f64 {
        if self.elapsed_s > 0.0 {
            self.bytes as f64 / 1e6 / self.elapsed_s
        } else {
            0.0
        }
    }

    /// Pages that are not good: bad + correctable + wrong page number (saturating).
    pub fn errors(&self) -> u64 {
        self.bad_pages
            .saturating_add(self.correctable_pages)
            .saturating_add(self.wrong_page_number_pages)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn backup(mb_per_s: f64) -> BackupRow {
        BackupRow {
            instance: "i".into(),
            database_size_mb: 1.0,
            elapsed_s: 1.0,
            mb_per_s,
        }
    }

    #[test]
    fn esrp_summaries() {
        assert_eq!(BackupRow::avg_and_sum(&[]), None);
        assert_eq!(
            BackupRow::avg_and_sum(&[backup(90.0), backup(100.0)]),
            Some((95.0, 190.0))
        );
        let sr = |logs, secs| SoftRecoveryRow {
            instance: "i".into(),
            log_files_replayed: logs,
            elapsed_s: secs,
        };
        let (logs, secs) =
            SoftRecoveryRow::averages(&[sr(500, 1000.0), sr(502, 1024.0)]).expect("two rows");
        assert_eq!((logs, secs), (501.0, 1012.0));
        assert!((SoftRecoveryRow::seconds_per_log(logs, secs) - 2.01996).abs() < 1e-5);
        assert_eq!(SoftRecoveryRow::seconds_per_log(0.0, 5.0), 0.0);
        let c = ChecksumRow {
            database_path: "db".into(),
            seen_pages: 10,
            bad_pages: 1,
            correctable_pages: u64::MAX,
            wrong_page_number_pages: 1,
            bytes: 2_000_000,
            elapsed_s: 2.0,
        };
        assert_eq!(c.errors(), u64::MAX);
        assert_eq!(c.mb_per_s(), 1.0);
    }
}
