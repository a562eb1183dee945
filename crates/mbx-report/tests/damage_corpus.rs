//! The corpus of damage a real report meets on its way from a PDF or a saved page (issue 35,
//! item 6), each class derived here from the seed reports under tests/fixtures/ (the Dell ESRP
//! paper's four reports as text and as Jetstress's HTML, the Tintri paper's markdown tables):
//! cut cells, cut headings ("Background Database Maintenance I/O P"), joined rows, and page
//! headers inside tables. Damage in a section no summary needs is a warning naming the line and
//! the section, and every figure of the whole sections is the undamaged report's; damage in a
//! needed section is an error naming the section.

use std::path::{Path, PathBuf};

use mbx_report::esrp::summarize;
use mbx_report::import::{import_text, ImportError, ImportedReport};

fn fixture(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures")
        .join(name)
}

fn read(name: &str) -> String {
    std::fs::read_to_string(fixture(name)).expect("read fixture")
}

const DELL: &str = "dell-ps6210e-esrp-performance.txt";
const DELL_HTML: &str = "html/dell-ps6210e-esrp-performance.html";
const TINTRI: &str = "tintri-t880-performance.txt";

fn import(t: &str) -> ImportedReport {
    import_text(t, Path::new("damaged.txt")).unwrap_or_else(|e| panic!("{e}"))
}

fn refused(t: &str) -> String {
    match import_text(t, Path::new("damaged.txt")) {
        Err(e @ ImportError::Malformed { .. }) => e.to_string(),
        Err(e) => panic!("refused, but not naming a table: {e}"),
        Ok(r) => panic!("imported: {:?}", r.warnings),
    }
}

/// Replaces the first occurrence, which the seed must have.
fn damage(t: &str, from: &str, to: &str) -> String {
    assert!(t.contains(from), "'{from}' in the seed");
    t.replacen(from, to, 1)
}

fn warned(r: &ImportedReport, what: &[&str]) {
    assert!(
        r.warnings
            .iter()
            .any(|w| what.iter().all(|x| w.contains(x))),
        "a warning with {what:?}: {:#?}",
        r.warnings
    );
}

/// The figures every summary reads: the transactional rows, the machine, the result, the typed
/// IOPS; and the figures of the other sections that are whole.
fn needed(r: &ImportedReport) -> (String, String, Option<f64>, String) {
    (
        r.machine.clone().unwrap_or_default(),
        r.overall_result.clone().unwrap_or_default(),
        r.achieved_iops_typed,
        format!("{:?}", r.transactional),
    )
}

fn esrp_transfers(r: &ImportedReport) -> f64 {
    let s = summarize(std::slice::from_ref(r));
    assert!(s.discrepancies.is_empty(), "{:?}", s.discrepancies);
    s.servers[0].db_transfers_per_s
}

/// The last Transactional row of the Dell performance report and what follows it.
const DELL_LAST: &str = "Instance5004.6\t16.963\t2.318\t123.490\t52.311\t32823.487\t35996.869\t0.000\t0.440\t0.000\t12.484\t0.000\t20327.961";
const BDM_TITLE: &str = "Background Database Maintenance I/O Performance";

#[test]
fn a_cut_heading_of_an_unneeded_section_is_read_or_skipped_with_a_warning() {
    for (seed, title_line) in [
        (DELL, format!("\n{BDM_TITLE}\n")),
        (TINTRI, format!("\n### {BDM_TITLE}\n")),
    ] {
        let t = read(seed);
        let clean = import(&t);
        assert_eq!(clean.bdm.len(), if seed == DELL { 6 } else { 4 });
        // The heading cut short (the case), alone on its line, as a one-cell row, as a
        // tab-ended cell: read as the title it starts.
        for cut in [
            "Background Database Maintenance I/O P",
            "| Background Database Maintenance I/O P |",
            "Background Database Maintenance I/O P\t",
            "Background Database Maintenance I/O",
        ] {
            let r = import(&damage(&t, &title_line, &format!("\n{cut}\n")));
            warned(
                &r,
                &["read as \"Background Database Maintenance I/O Performance\""],
            );
            assert_eq!(needed(&r), needed(&clean), "{seed}: {cut}");
            assert_eq!(r.bdm, clean.bdm, "{seed}: {cut}");
            assert_eq!(r.total, clean.total, "{seed}: {cut}");
            assert_eq!(r.log_replication, clean.log_replication, "{seed}: {cut}");
        }
        // Cut beyond reading ("Backgro" could start any word; "Background Database" is under
        // 60% of the title): the section is skipped, named, and the others are whole.
        let r = import(&damage(&t, &title_line, "\nBackgro\n"));
        warned(
            &r,
            &["header with no readable section title", "\"Backgro\""],
        );
        assert!(r.bdm.is_empty());
        assert_eq!(needed(&r), needed(&clean), "{seed}");
        assert_eq!(r.total, clean.total, "{seed}");
        assert_eq!(r.log_replication, clean.log_replication, "{seed}");
        assert!((esrp_transfers(&r) - esrp_transfers(&clean)).abs() < 1e-9);
    }
}

#[test]
fn a_cut_heading_of_a_needed_section_is_an_error_naming_it() {
    let t = read(DELL);
    // Cut but readable: read.
    let r = import(&damage(
        &t,
        "\nTransactional I/O Performance\n",
        "\nTransactional I/O Perfo\n",
    ));
    warned(&r, &["read as \"Transactional I/O Performance\""]);
    assert_eq!(needed(&r), needed(&import(&t)));
    // Cut beyond reading: the report has no Transactional table; an error names it.
    let msg = refused(&damage(
        &t,
        "\nTransactional I/O Performance\n",
        "\nTransac\n",
    ));
    assert!(
        msg.contains("damaged.txt")
            && msg.contains("table \"Transactional I/O Performance\"")
            && msg.contains("not found in this Performance report")
            && msg.contains("\"Transac\""),
        "{msg}"
    );
}

#[test]
fn a_row_and_a_cut_heading_joined_on_one_line_are_split() {
    let t = read(DELL);
    let r = import(&damage(
        &t,
        &format!("{DELL_LAST}\n\n{BDM_TITLE}\n"),
        &format!("{DELL_LAST} Background Database Maintenance I/O P\n"),
    ));
    warned(&r, &["line 100", "split before the title"]);
    warned(
        &r,
        &["read as \"Background Database Maintenance I/O Performance\""],
    );
    let clean = import(&t);
    assert_eq!(needed(&r), needed(&clean));
    assert_eq!(r.bdm, clean.bdm);
}

#[test]
fn joined_rows_are_split_into_their_rows() {
    let t = read(DELL);
    let clean = import(&t);
    let second = "Instance5004.2\t16.974\t1.128\t123.808\t52.528\t32824.874\t35947.329\t0.000\t0.364\t0.000\t12.535\t0.000\t20266.775";
    // Joined by a tab and by a space; in the needed table and in an unneeded one.
    for sep in ["\t", " "] {
        let r = import(&damage(
            &t,
            &format!("20225.485\n{second}\n"),
            &format!("20225.485{sep}{second}\n"),
        ));
        warned(
            &r,
            &["2 rows of Transactional I/O Performance were on one line"],
        );
        assert_eq!(needed(&r), needed(&clean), "{sep:?}");
        assert_eq!(r.total, clean.total);
        let r = import(&damage(
            &t,
            "Instance5004.1\t8.605\t261903.102\n",
            &format!("Instance5004.1\t8.605\t261903.102{sep}"),
        ));
        warned(&r, &["2 rows of Background Database Maintenance"]);
        assert_eq!(r.bdm, clean.bdm, "{sep:?}");
    }
    // Joined so that the cells do not add up to rows: in an unneeded table a warning, the
    // other tables whole; in the needed one an error naming it.
    let r = import(&damage(
        &t,
        "Instance5004.1\t8.605\t261903.102\nInstance5004.2\t8.601",
        "Instance5004.1\t8.605\t261903.102\t8.601",
    ));
    warned(
        &r,
        &["Background Database Maintenance I/O Performance", "skipped"],
    );
    assert_eq!(needed(&r), needed(&clean));
    assert_eq!(r.log_replication, clean.log_replication);
    let msg = refused(&damage(
        &t,
        &format!("20225.485\n{second}\n"),
        &format!(
            "20225.485\t{}\n",
            second.replacen("Instance5004.2\t", "", 1)
        ),
    ));
    assert!(
        msg.contains("Transactional I/O Performance") && msg.contains("Instance5004.1"),
        "{msg}"
    );
}

#[test]
fn cut_cells_fail_only_a_needed_section() {
    let t = read(DELL);
    let clean = import(&t);
    // The BDM row's last cell lost: a warning naming the section and the row; the rest whole.
    let r = import(&damage(
        &t,
        "Instance5004.3\t8.612\t261893.915\n",
        "Instance5004.3\t8.612\n",
    ));
    warned(
        &r,
        &[
            "Background Database Maintenance I/O Performance",
            "Instance5004.3",
        ],
    );
    assert_eq!(r.bdm.len(), 5);
    assert_eq!(needed(&r), needed(&clean));
    assert_eq!(r.total, clean.total);
    // A cell cut in half (its digits lost) in the log replication table: read as written is
    // impossible to detect, so the cell that is no number is the case: a warning.
    let r = import(&damage(
        &t,
        "Instance5004.2\t1.088\t232576.198",
        "Instance5004.2\t1.0\t232",
    ));
    assert_eq!(
        r.log_replication.len(),
        6,
        "a shorter number is still a number"
    );
    let r = import(&damage(
        &t,
        "Instance5004.2\t1.088\t232576.198",
        "Instance5004.2\t1.0 8\t232576.198",
    ));
    warned(&r, &["Log Replication I/O Performance", "skipped"]);
    assert_eq!(needed(&r), needed(&clean));
    // The same cut in the Transactional table: an error naming table and row.
    let msg = refused(&damage(
        &t,
        "\t20216.649\nInstance5004.4",
        "\nInstance5004.4",
    ));
    assert!(
        msg.contains("table \"Transactional I/O Performance\"") && msg.contains("Instance5004.3"),
        "{msg}"
    );
}

#[test]
fn a_page_header_inside_a_table_is_skipped_and_the_table_goes_on() {
    let t = read(DELL);
    let clean = import(&t);
    let row3 = "Instance5004.3\t16.948\t1.427\t123.854\t52.833\t32822.402\t35948.278\t0.000\t0.363\t0.000\t12.630\t0.000\t20216.649\n";
    for header in [
        "\nDell EqualLogic PS6210E Storage Solution for Exchange Server 2013   Page 21\n\n",
        "21\n",
        "Page 21\tDell Inc.\n",
        "\n\nPerformance Test Result Report\n\n",
    ] {
        let r = import(&damage(&t, row3, &format!("{row3}{header}")));
        assert_eq!(needed(&r), needed(&clean), "{header:?}");
        assert_eq!(r.total, clean.total, "{header:?}");
        assert_eq!(r.bdm, clean.bdm, "{header:?}");
        assert!((esrp_transfers(&r) - 1056.711).abs() < 0.005, "{header:?}");
        if !header.contains("Report") {
            warned(
                &r,
                &[
                    "inside Transactional I/O Performance skipped",
                    "page header",
                ],
            );
        }
    }
    // In an unneeded table too.
    let r = import(&damage(
        &t,
        "Instance5004.3\t1.093\t232546.519\n",
        "Instance5004.3\t1.093\t232546.519\n22\n",
    ));
    assert_eq!(r.log_replication, clean.log_replication);
    warned(&r, &["inside Log Replication I/O Performance skipped"]);
}

#[test]
fn a_prose_title_is_no_split() {
    // The Tintri paper's prose names sections ("... about the Database Configuration:"): no
    // damage to report.
    let t = read(TINTRI);
    let r = import(&format!(
        "The next part of Jetstress is about the Database Configuration:\n{t}"
    ));
    assert!(
        !r.warnings.iter().any(|w| w.contains("run together")),
        "{:?}",
        r.warnings
    );
}

/// The same damage in Jetstress's HTML page: a cut legend, a cut cell, a page header row, a
/// lost legend.
#[test]
fn damaged_html_reads_its_needed_sections() {
    let h = read(DELL_HTML);
    let clean = import(&h);
    assert_eq!(clean.bdm.len(), 6);
    let r = import(&damage(
        &h,
        &format!("<legend>{BDM_TITLE}</legend>"),
        "<legend>Background Database Maintenance I/O P</legend>",
    ));
    warned(
        &r,
        &["read as \"Background Database Maintenance I/O Performance\""],
    );
    assert_eq!(r.bdm, clean.bdm);
    assert_eq!(needed(&r), needed(&clean));
    // A cut cell in BDM: a warning; in Transactional an error.
    let r = import(&damage(
        &h,
        "<tr><td>Instance5004.3</td><td>8.612</td><td>261893.915</td></tr>",
        "<tr><td>Instance5004.3</td><td>8.612</td></tr>",
    ));
    warned(
        &r,
        &[
            "Background Database Maintenance I/O Performance",
            "Instance5004.3",
        ],
    );
    assert_eq!(r.bdm.len(), 5);
    assert_eq!(needed(&r), needed(&clean));
    let msg = refused(&damage(&h, "<td>20216.649</td></tr>", "</tr>"));
    assert!(
        msg.contains("Transactional I/O Performance") && msg.contains("Instance5004.3"),
        "{msg}"
    );
    // A page header set as a row inside the Transactional table.
    let r = import(&damage(
        &h,
        "<tr><td>Instance5004.3</td><td>16.948</td>",
        "<tr><td colspan=13>Dell EqualLogic PS6210E   Page 21</td></tr><tr><td>Instance5004.3</td><td>16.948</td>",
    ));
    warned(&r, &["inside Transactional I/O Performance skipped"]);
    assert_eq!(needed(&r), needed(&clean));
    // Two rows run together (a row's end tag and the next's start lost).
    let r = import(&damage(
        &h,
        "<td>20225.485</td></tr>\n<tr><td>Instance5004.2</td>",
        "<td>20225.485</td><td>Instance5004.2</td>",
    ));
    warned(
        &r,
        &["2 rows of Transactional I/O Performance were on one line"],
    );
    assert_eq!(needed(&r), needed(&clean));
    // The BDM legend lost: that fieldset takes its position's title, as Jetstress orders them.
    let r = import(&damage(&h, &format!("<legend>{BDM_TITLE}</legend>"), ""));
    assert_eq!(r.bdm, clean.bdm);
}

/// What only looks like a cut title is text: a title's start under 60% of it ("Database
/// Backup" in a sentence cut by a PDF line), and a cut title of a table given already (a running
/// header), never a second report or a lost table.
#[test]
fn what_only_looks_like_a_cut_title_is_text() {
    let t = read(DELL);
    let clean = import(&t);
    let r = import(&damage(&t, "Test Log\n", "Test Log\n\nDatabase Backup\n"));
    assert_eq!(needed(&r), needed(&clean));
    assert!(r.backup.is_empty());
    let row = "Instance5004.2\t1.088\t232576.198\n";
    let r = import(&damage(
        &t,
        row,
        &format!("{row}Log Replication I/O Perf\n"),
    ));
    warned(
        &r,
        &[
            "reads like the title of Log Replication I/O Performance",
            "read as text",
        ],
    );
    assert_eq!(r.log_replication, clean.log_replication);
    assert_eq!(needed(&r), needed(&clean));
}
