//! A page rolled back to an older copy between runs, on real files: `verify`, the Checksum test
//! and the next run find it against the database's generation journal and name it. Before the
//! journal the page, a valid page of the right database at the right place, passed all three.

use std::path::Path;

use crate::common::{mbx_in, scratch, FAST};

const PAGE: usize = 32768;

/// A short Performance test (or `test`) of one 4 MiB database, results in `out`.
fn run(dir: &Path, test: &str, out: &str) -> crate::common::Run {
    mbx_in(
        Some(dir),
        &[
            "run",
            "--test",
            test,
            "--threads",
            "4",
            "--config",
            "fast.toml",
            "--mailboxes",
            "4",
            "--iops-per-mailbox",
            "5",
            "--quota-mb",
            "1",
            "--databases",
            "1",
            "--duration",
            "3s",
            "--sample-interval",
            "1s",
            "--out",
            out,
            "--progress",
            "quiet",
        ],
    )
}

fn result(dir: &Path, out: &str) -> serde_json::Value {
    serde_json::from_str(
        &std::fs::read_to_string(dir.join(out).join("result.json")).expect("result"),
    )
    .expect("json")
}

/// The generation a page carries (its header's field).
fn generation(img: &[u8], n: usize) -> u64 {
    let at = n * PAGE + 32;
    u64::from_le_bytes(img[at..at + 8].try_into().expect("8 bytes"))
}

/// The pages named by `class` entries of a result's `errors[]`.
fn named(r: &serde_json::Value, class: &str) -> Vec<u64> {
    let mut pages: Vec<u64> = r["errors"]
        .as_array()
        .expect("errors")
        .iter()
        .filter(|e| e["class"] == class)
        .filter_map(|e| e["page"].as_u64())
        .collect();
    pages.sort_unstable();
    pages.dedup();
    pages
}

#[test]
fn a_page_rolled_back_between_runs_is_found_by_verify_checksum_and_the_next_run() {
    let dir = scratch("stale");
    // A 1 MiB cache for the 4 MiB database (4 mailboxes of 1 MiB): reads reach the file, so the
    // latency checks judge (a database held whole in its cache measures no read: NOT JUDGED,
    // exit 1). With 2 mailboxes of 1 MiB, runs measured no read at all now and then.
    let config = FAST.replace(
        "[cache]\n",
        "[cache]\nmin_mb_per_db = 1\nmax_mb_per_db = 1\n",
    );
    assert_ne!(config, FAST, "FAST has a [cache] table");
    std::fs::write(dir.join("fast.toml"), config).expect("config");
    let first = run(&dir, "performance", "r1");
    assert_eq!(first.code, 0, "{}\n{}", first.stdout, first.stderr);
    let db = dir.join("mbxstress-data/databases/mbxstress001.edb");
    assert!(
        dir.join("mbxstress-data/databases/mbxstress001.edb.gens")
            .is_file(),
        "the journal beside the database"
    );
    let snapshot = std::fs::read(&db).expect("snapshot");
    let second = run(&dir, "performance", "r2");
    assert_eq!(second.code, 0, "{}\n{}", second.stdout, second.stderr);
    // Clean so far.
    let v = mbx_in(Some(&dir), &["verify", "--json"]);
    assert_eq!(v.code, 0, "{}\n{}", v.stdout, v.stderr);
    assert_eq!(v.json()["checksum"][0]["stale_check"], "journal");
    let now = std::fs::read(&db).expect("database");
    let pages = now.len() / PAGE;
    let rewritten: Vec<usize> = (2..pages)
        .filter(|&n| generation(&now, n) > generation(&snapshot, n))
        .collect();
    assert!(!rewritten.is_empty(), "the second run rewrote pages");
    let rolled: Vec<usize> = rewritten.iter().copied().take(2).collect();
    let mut img = now.clone();
    for &n in &rolled {
        img[n * PAGE..(n + 1) * PAGE].copy_from_slice(&snapshot[n * PAGE..(n + 1) * PAGE]);
    }
    std::fs::write(&db, &img).expect("roll back");
    let want: Vec<u64> = rolled.iter().map(|&n| n as u64).collect();

    // verify: exit 1, the pages named as stale.
    let v = mbx_in(Some(&dir), &["verify", "--json"]);
    assert_eq!(v.code, 1, "{}\n{}", v.stdout, v.stderr);
    let report = &v.json()["checksum"][0];
    assert_eq!(report["stale_pages"], rolled.len(), "{report}");
    assert_eq!(report["bad_pages"], 0, "{report}");
    let mut stale: Vec<u64> = report["problems"]
        .as_array()
        .expect("problems")
        .iter()
        .filter(|p| p["kind"] == "stale")
        .filter_map(|p| p["page"].as_u64())
        .collect();
    stale.sort_unstable();
    assert_eq!(stale, want, "{report}");
    let text = mbx_in(Some(&dir), &["verify"]);
    assert_eq!(text.code, 1);
    assert!(
        text.stdout.contains(&format!(
            "page {} (offset {}): stale: carries generation",
            rolled[0],
            rolled[0] * PAGE
        )),
        "{}",
        text.stdout
    );

    // The Checksum test: fails, errors[] names them.
    let c = run(&dir, "checksum", "c");
    assert_eq!(c.code, 1, "{}\n{}", c.stdout, c.stderr);
    let r = result(&dir, "c");
    assert_eq!(named(&r, "stale_page"), want, "{}", r["errors"]);
    assert_eq!(r["integrity"]["stale_pages"], rolled.len());

    // The next run: the first read of one stops it (no --continue-on-errors), naming it.
    let third = run(&dir, "performance", "r3");
    assert_ne!(third.code, 0, "{}\n{}", third.stdout, third.stderr);
    let r = result(&dir, "r3");
    assert_eq!(
        r["stopped"]["reason"], "integrity_error",
        "{}",
        r["stopped"]
    );
    let found = named(&r, "stale_page");
    assert!(!found.is_empty(), "{}", r["errors"]);
    assert!(
        found.iter().all(|p| want.contains(p)),
        "{found:?} of {want:?}"
    );
}
