//! A simulated database as `prepare` leaves it, shared by the engine's simulated-device tests.

use std::path::PathBuf;

use mbx_engine::{InstanceSpec, LogStart};
use mbx_io::sim::SimDevice;
use mbx_store::header::HEADER_PAGES;
use mbx_store::page::{build_data_page, PageHeader, KIND_DATA, PAGE_SIZE};

/// Creates `db_path` on `dev` with `pages` data pages at generation 1 (as `prepare` writes
/// them) for database `database_id`, and returns the spec of a run on it named `name`, its log
/// starting fresh in `log_dir`.
pub fn database(
    dev: &SimDevice,
    db_path: &str,
    database_id: u64,
    pages: u64,
    name: &str,
    log_dir: &str,
) -> InstanceSpec {
    let db_path = PathBuf::from(db_path);
    dev.create(&db_path, (HEADER_PAGES + pages) * PAGE_SIZE as u64);
    let mut page = vec![0u8; PAGE_SIZE];
    for n in HEADER_PAGES..HEADER_PAGES + pages {
        let h = PageHeader {
            page_number: n,
            database_id,
            generation: 1,
            kind: KIND_DATA,
            compressibility_pct: 0,
        };
        build_data_page(&mut page, &h);
        dev.write_at(&db_path, n * PAGE_SIZE as u64, &page)
            .expect("write page");
    }
    InstanceSpec {
        name: name.into(),
        db_path,
        log_dir: PathBuf::from(log_dir),
        database_id,
        data_pages: pages,
        log: LogStart {
            next_generation: 1,
            ..LogStart::default()
        },
    }
}
