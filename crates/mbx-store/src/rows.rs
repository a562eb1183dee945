//! The store's reports as the result model's rows.

use mbx_result::ChecksumRow;

use crate::VerifyReport;

impl VerifyReport {
    /// This verification as a checksum row of the result model (`checksum[]` in result.json).
    /// `verify --json` prints the report itself, whose keys are a superset of the row's.
    pub fn checksum_row(&self) -> ChecksumRow {
        ChecksumRow {
            database_path: self.database_path.display().to_string(),
            seen_pages: self.seen_pages,
            bad_pages: self.bad_pages,
            correctable_pages: self.correctable_pages,
            wrong_page_number_pages: self.wrong_page_number_pages,
            bytes: self.bytes,
            elapsed_s: self.elapsed_s,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `verify --json` keeps the contract's checksum keys: its entries read as checksum rows.
    #[test]
    fn verify_report_json_reads_as_a_checksum_row() {
        let r = VerifyReport {
            database_path: "/data/mbxstress001.edb".into(),
            seen_pages: 130,
            bad_pages: 2,
            correctable_pages: 1,
            wrong_page_number_pages: 3,
            wrong_database_pages: 1,
            unwritten_pages: 1,
            bytes: 130 * 32768,
            elapsed_s: 0.25,
            problems: Vec::new(),
            trailing_bytes: 0,
            stale_pages: 0,
            stale_check: "journal".into(),
        };
        let json = serde_json::to_value(&r).expect("serializes");
        let row: ChecksumRow = serde_json::from_value(json).expect("a checksum row");
        assert_eq!(row, r.checksum_row());
        assert_eq!(row.errors(), 6);
    }
}
