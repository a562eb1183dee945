//! Report text as it really arrives from a PDF: each kind of damage a copy does, applied to a
//! seed table (the Dell ESRP paper's reports under tests/fixtures/), imports to the right numbers
//! with a warning naming the line, or fails naming file, table, row and the fix; never to an
//! invented number.

use std::path::{Path, PathBuf};

use mbx_report::esrp::summarize;
use mbx_report::import::{import_text, ImportedReport};

fn fixture(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures")
        .join(name)
}

fn text(kind: &str) -> String {
    std::fs::read_to_string(fixture(&format!("dell-ps6210e-esrp-{kind}.txt"))).expect("read")
}

fn import(t: &str) -> ImportedReport {
    import_text(t, Path::new("damaged.txt")).unwrap_or_else(|e| panic!("{e}"))
}

/// The figures of a report, without its warnings and source.
fn figures(mut r: ImportedReport) -> ImportedReport {
    r.warnings.clear();
    r.source.clear();
    r
}

/// Replaces the first occurrence (the fixture must have it; the performance report's header
/// rows appear twice, in the Transactional and the Total table: the first is the needed one).
fn damage(t: &str, from: &str, to: &str) -> String {
    assert!(t.contains(from), "'{from}' in the fixture");
    t.replacen(from, to, 1)
}

fn warned(r: &ImportedReport, what: &str) {
    assert!(
        r.warnings.iter().any(|w| w.contains(what)),
        "a warning with '{what}': {:?}",
        r.warnings
    );
}

#[test]
fn a_title_split_by_a_stray_space_or_tab_is_read() {
    let clean = import(&text("performance"));
    assert!(clean.warnings.is_empty(), "{:?}", clean.warnings);
    for broken in [
        "Transactional I/O Perfor mance",
        // The last letters pushed into the next cell.
        "Transactional I/O Performan\tce",
        "Trans actional I/O Performance",
    ] {
        let r = import(&damage(
            &text("performance"),
            "Transactional I/O Performance\n",
            &format!("{broken}\n"),
        ));
        warned(&r, "read as \"Transactional I/O Performance\"");
        assert_eq!(figures(r), figures(clean.clone()), "{broken}");
    }
    // A header word split the same way.
    let r = import(&damage(
        &text("performance"),
        "\tI/O Database Reads/sec\t",
        "\tI/O Database Rea ds/sec\t",
    ));
    assert_eq!(figures(r), figures(clean));
}

#[test]
fn a_row_whose_cells_are_on_separate_lines_is_joined() {
    let t = text("performance");
    let row = "Instance5004.3\t16.948\t1.427\t123.854\t52.833\t32822.402\t35948.278\t0.000\t0.363\t0.000\t12.630\t0.000\t20216.649";
    let split = row.replace('\t', "\n");
    let r = import(&damage(&t, &format!("{row}\n"), &format!("{split}\n")));
    warned(&r, "were on several lines; joined");
    assert_eq!(figures(r), figures(import(&t)));
    // A split row missing a cell cannot be completed: the table is needed, so it fails naming
    // the row.
    let short = split.replacen("\n12.630", "", 1);
    let e = import_text(
        &damage(&t, &format!("{row}\n"), &format!("{short}\n")),
        Path::new("damaged.txt"),
    )
    .expect_err("a cell is missing");
    let msg = e.to_string();
    assert!(
        msg.contains("damaged.txt")
            && msg.contains("Transactional I/O Performance")
            && msg.contains("Instance5004.3")
            && msg.contains("expected 13 cells, found 12"),
        "{msg}"
    );
}

#[test]
fn a_decimal_comma_in_one_cell_is_read_as_a_decimal_point() {
    let t = text("performance");
    let r = import(&damage(
        &t,
        "\t16.948\t1.427\t123.854",
        "\t16,948\t1.427\t123.854",
    ));
    warned(&r, "read with a decimal comma as 16.948");
    assert_eq!(figures(r), figures(import(&t)));
}

#[test]
fn a_garbled_instance_name_is_mended_or_kept_with_a_warning() {
    let t = text("performance");
    let row_start = "Instance5004.3\t16.948\t1.427\t123.854";
    let r = import(&damage(
        &t,
        row_start,
        &row_start.replace("Instance5004.3", "Insta nce5004.3"),
    ));
    warned(&r, "\"Insta nce5004.3\" read as \"Instance5004.3\"");
    assert_eq!(figures(r), figures(import(&t)));
    // Beyond repair: kept as written (the figures are the row's own), with a warning.
    let r = import(&damage(
        &t,
        row_start,
        &row_start.replace("Instance5004.3", "l#stanc€5004.3"),
    ));
    warned(&r, "looks damaged; kept as written");
    assert_eq!(r.transactional[2].instance, "l#stanc€5004.3");
    assert_eq!(r.transactional[2].io.db_reads_per_s, 123.854);
}

#[test]
fn a_mangled_avg_or_sum_label_is_read_or_ignored_never_guessed() {
    let t = text("backup");
    // Stray spaces: still the typed Avg and Sum.
    let r = import(&damage(&damage(&t, "Avg\t", "A vg\t"), "Sum\t", "S um\t"));
    assert_eq!(r.backup_avg_typed, Some(96.19));
    assert_eq!(r.backup_sum_typed, Some(577.17));
    assert_eq!(r.backup.len(), 6);
    // Unreadable: which summary it is cannot be told, so the row is ignored and the summary
    // comes from the databases (96.19 computed from the six rows, 577.15 their sum).
    let r = import(&damage(&t, "Avg\t", "Av9\t"));
    warned(&r, "neither a database nor a readable Avg or Sum row");
    assert_eq!(r.backup_avg_typed, None);
    assert_eq!(r.backup.len(), 6);
    let s = summarize(&[r]);
    assert!((s.backup[0].mb_per_s_per_database - 96.191_666).abs() < 1e-3);
    let t = text("softrecovery");
    let r = import(&damage(&t, "Avg\t", "Avq\t"));
    warned(&r, "neither a database nor a readable Avg or Sum row");
    assert_eq!(r.soft_recovery.len(), 6);
    assert_eq!(r.soft_recovery_avg_typed, None);
}

#[test]
fn dropped_header_cells_leave_the_columns_in_jetstress_order() {
    let t = text("performance");
    let r = import(&damage(
        &damage(&t, "\tI/O Log Reads/sec\tI/O Log Writes/sec", ""),
        "MSExchange Database ==> Instances\t",
        "",
    ));
    warned(&r, "10 of its 12 column names");
    assert_eq!(figures(r), figures(import(&t)));
}

#[test]
fn two_sections_on_one_line_are_split() {
    let t = text("performance");
    let last = "Instance5004.6\t16.963\t2.318\t132.101\t52.311\t47758.535\t35996.869\t6.463\t0.440\t1.086\t12.484\t232571.295\t20327.961";
    // A table's last row and the next section's title.
    let r = import(&damage(
        &t,
        &format!("{last}\n\n\n\nHost System Performance"),
        &format!("{last} Host System Performance"),
    ));
    warned(&r, "two sections run together");
    assert_eq!(figures(r), figures(import(&t)));
    // A title and its header row.
    let r = import(&damage(
        &t,
        "Transactional I/O Performance\n\nMSExchange Database",
        "Transactional I/O Performance\tMSExchange Database",
    ));
    warned(&r, "split after the title");
    assert_eq!(figures(r), figures(import(&t)));
}

/// A damaged row in a table no summary needs (BDM) is a warning naming the line; a needed value
/// that cannot be read fails with file, table, row and the fix.
#[test]
fn damage_fails_only_where_a_needed_figure_is_lost() {
    let t = text("performance");
    let r = import(&damage(
        &t,
        "Instance5004.3\t8.612\t261893.915",
        "Instance5004.3\t8.6l2\t261893.915",
    ));
    warned(&r, "Background Database Maintenance I/O Performance");
    assert_eq!(r.bdm.len(), 5);
    assert_eq!(r.transactional.len(), 6);
    let e = import_text(
        &damage(&t, "\t16.948\t1.427\t123.854", "\t16.948\t1.427\t12E.854"),
        Path::new("damaged.txt"),
    )
    .expect_err("a needed figure");
    let msg = e.to_string();
    assert!(
        msg.contains("damaged.txt")
            && msg.contains("Transactional I/O Performance")
            && msg.contains("Instance5004.3")
            && msg.contains("'12E.854'")
            && msg.contains("fix the cell"),
        "{msg}"
    );
}

/// `esrp` over damaged files still summarizes the per-instance rows, lists the damage as
/// warnings and every typed summary it disagrees with.
#[test]
fn esrp_over_damaged_files_summarizes_and_lists_what_it_met() {
    let perf = import(&damage(
        &damage(
            &text("performance"),
            "Transactional I/O Performance\n",
            "Transactional I/O Perfor mance\n",
        ),
        "Achieved Transactional I/O per Second 1056.711",
        "Achieved Transactional I/O per Second 1065.711",
    ));
    let backup = import(&damage(&text("backup"), "577.17", "5,77"));
    let s = summarize(&[perf, backup]);
    assert!((s.servers[0].db_transfers_per_s - 1056.71).abs() < 0.005);
    assert!(s
        .warnings
        .iter()
        .any(|w| w.code == "damaged_input" && w.message.contains("read as")));
    let listed = s.discrepancies.join("\n");
    assert!(listed.contains("1065.711"), "the achieved IOPS: {listed}");
    assert!(
        listed.contains("backup Sum typed as 5.77"),
        "the backup Sum: {listed}"
    );
}
