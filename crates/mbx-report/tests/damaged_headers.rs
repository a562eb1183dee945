//! A damage corpus for the header rows of Jetstress's 12-column tables (issue 25, case 14).
//!
//! Real reports converted from PDF lose parts of their header cells (a cell reduced to a fragment
//! of its words or to nothing, words split by stray spaces or tabs) while the data rows stay
//! intact; such a report exited 2 ("column 8 is ..., expected ..."). This generator damages the
//! header rows of the seed reports' tables (the Dell ESRP paper's three reports and the Tintri
//! paper's, under tests/fixtures/) deterministically, from fixed seeds, and checks every variant:
//! - damage that keeps each cell in its place (fragments, emptied cells, stray spaces) is read,
//!   to the figures of the undamaged report, with a warning naming each repaired header;
//! - damage that shifts cells (a stray tab splitting a cell in two) is read the same way when the
//!   cells align with Jetstress's columns in one way only, and otherwise refused as ambiguous,
//!   naming the table; never read to other figures;
//! - a header that is no damage of Jetstress's (two columns swapped) is refused.

use std::path::{Path, PathBuf};

use mbx_report::html::IO12_COLUMNS;
use mbx_report::import::{import_text, ImportedReport};

fn fixture(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures")
        .join(name)
}

/// The seed reports (each holds one or two 12-column tables: Transactional I/O Performance,
/// which the summaries need, and Total I/O Performance, which they do not).
const SEEDS: [&str; 4] = [
    "dell-ps6210e-esrp-performance.txt",
    "dell-ps6210e-esrp-backup.txt",
    "dell-ps6210e-esrp-softrecovery.txt",
    "tintri-t880-performance.txt",
];

/// Variants generated per seed report.
const VARIANTS: u64 = 200;

/// splitmix64: a small deterministic generator (the corpus is the same on every run).
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }
    /// A number in 0..n (n > 0).
    fn below(&mut self, n: usize) -> usize {
        (self.next() % n as u64) as usize
    }
}

/// One damage done to one header cell.
#[derive(Debug, Clone, Copy, PartialEq)]
enum Damage {
    /// A run of its words, maybe cut inside the first or last word.
    Fragment,
    /// Nothing left.
    Empty,
    /// A stray space inside a word.
    Space,
    /// A stray tab: in a tab-separated table the cell becomes two (the cells after it shift).
    Tab,
}

/// A cell's damaged text.
fn damage_cell(cell: &str, d: Damage, rng: &mut Rng) -> String {
    let chars: Vec<char> = cell.chars().collect();
    match d {
        Damage::Empty => String::new(),
        Damage::Fragment => {
            let words: Vec<&str> = cell.split(' ').collect();
            let a = rng.below(words.len());
            let b = a + 1 + rng.below(words.len() - a);
            let mut f = words[a..b].join(" ");
            // Sometimes letters are lost too, at either end (never all of them).
            if rng.below(3) == 0 && f.chars().count() > 2 {
                let n = f.chars().count();
                let cut = 1 + rng.below(n / 2);
                f = if rng.below(2) == 0 {
                    f.chars().skip(cut).collect()
                } else {
                    f.chars().take(n - cut).collect()
                };
            }
            f
        }
        Damage::Space | Damage::Tab => {
            if chars.len() < 2 {
                return cell.to_string();
            }
            // Inside a word (a stray space beside a real one would change nothing).
            let inside: Vec<usize> = (1..chars.len())
                .filter(|&i| !chars[i - 1].is_whitespace() && !chars[i].is_whitespace())
                .collect();
            if inside.is_empty() {
                return cell.to_string();
            }
            let at = inside[rng.below(inside.len())];
            let sep = if d == Damage::Space { " " } else { "\t" };
            let (a, b): (String, String) =
                (chars[..at].iter().collect(), chars[at..].iter().collect());
            format!("{a}{sep}{b}")
        }
    }
}

/// A damaged header row and what was done: the 12 columns (0-based) whose header changed, and
/// whether cells shifted.
struct Variant {
    line: String,
    changed: Vec<usize>,
    shifted: bool,
}

/// Damages 1 to 4 cells of a header row (tab-separated or a markdown pipe row).
fn damage_header(line: &str, rng: &mut Rng) -> Variant {
    let pipes = line.trim_start().starts_with('|');
    let mut cells: Vec<String> = if pipes {
        line.trim()
            .trim_matches('|')
            .split('|')
            .map(|c| c.trim().to_string())
            .collect()
    } else {
        line.split('\t').map(str::to_string).collect()
    };
    assert_eq!(cells.len(), 13, "a seed header: {line}");
    let mut changed = Vec::new();
    let mut shifted = false;
    let n = 1 + rng.below(8);
    for _ in 0..n {
        let at = rng.below(13);
        let d = match rng.below(4) {
            0 => Damage::Fragment,
            1 => Damage::Empty,
            2 => Damage::Space,
            _ => Damage::Tab,
        };
        // A stray tab in a pipe row is a stray space: it does not split the cell.
        let d = if pipes && d == Damage::Tab {
            Damage::Space
        } else {
            d
        };
        let before = cells[at].clone();
        // A cell already split stays as it is (a second tab would land in the first half).
        if before.contains('\t') {
            continue;
        }
        cells[at] = damage_cell(&before, d, rng);
        if cells[at] != before && at >= 1 {
            changed.push(at - 1);
        }
        shifted |= d == Damage::Tab && cells[at].contains('\t');
    }
    let line = if pipes {
        format!("| {} |", cells.join(" | "))
    } else {
        cells.join("\t")
    };
    changed.sort_unstable();
    changed.dedup();
    Variant {
        line,
        changed,
        shifted,
    }
}

/// The figures of a report, without its warnings and source.
fn figures(mut r: ImportedReport) -> ImportedReport {
    r.warnings.clear();
    r.source.clear();
    r
}

/// The header rows of the 12-column tables in a text: (line index, table title).
fn headers(text: &str) -> Vec<(usize, &'static str)> {
    let lines: Vec<&str> = text.lines().collect();
    let mut out = Vec::new();
    let mut table = None;
    for (i, l) in lines.iter().enumerate() {
        let plain = l.replace("**", "");
        let plain = plain.trim().trim_start_matches('#').trim();
        if plain.starts_with("Transactional I/O Performance") {
            table = Some("Transactional I/O Performance");
        } else if plain.starts_with("Total I/O Performance") {
            table = Some("Total I/O Performance");
        }
        if l.contains("MSExchange Database ==> Instances") {
            if let Some(t) = table.take() {
                out.push((i, t));
            }
        }
    }
    out
}

#[test]
fn the_corpus_of_damaged_headers_reads_or_refuses_as_it_should() {
    let mut read = 0;
    let mut shifted_read = 0;
    let mut shifted_refused = 0;
    for (s, seed) in SEEDS.iter().enumerate() {
        let text = std::fs::read_to_string(fixture(seed)).expect("seed");
        let clean = import_text(&text, Path::new(seed)).expect("the undamaged report");
        assert!(
            !clean.warnings.iter().any(|w| w.contains("header")),
            "{seed}: {:?}",
            clean.warnings
        );
        let lines: Vec<&str> = text.lines().collect();
        let found = headers(&text);
        assert!(!found.is_empty(), "{seed} has a 12-column table");
        let mut rng = Rng(0x6d62_7873_7472_6573 ^ s as u64);
        for v in 0..VARIANTS {
            let (at, table) = found[rng.below(found.len())];
            let variant = damage_header(lines[at], &mut rng);
            let mut damaged: Vec<String> = lines.iter().map(|l| l.to_string()).collect();
            damaged[at] = variant.line.clone();
            let damaged = damaged.join("\n") + "\n";
            let what = format!("{seed} variant {v}, line {}: {}", at + 1, variant.line);
            let needed = table == "Transactional I/O Performance";
            match import_text(&damaged, Path::new(seed)) {
                Ok(r) => {
                    let warned = |name: &str| {
                        r.warnings
                            .iter()
                            .any(|w| w.contains(table) && w.contains(&format!("\"{name}\"")))
                    };
                    let refused_here = r
                        .warnings
                        .iter()
                        .any(|w| w.contains(table) && w.contains("ambiguous"));
                    if refused_here {
                        // A table no summary needs, skipped with a warning.
                        assert!(!needed && variant.shifted, "{what}: {:?}", r.warnings);
                        shifted_refused += 1;
                        continue;
                    }
                    assert_eq!(figures(r.clone()), figures(clean.clone()), "{what}");
                    // Each repaired header is named, and only those: a column named that was
                    // not damaged would be a misreading of the alignment.
                    for (k, name) in IO12_COLUMNS.iter().enumerate() {
                        assert_eq!(
                            warned(name),
                            variant.changed.contains(&k),
                            "{what}: column {k} in {:?}",
                            r.warnings
                        );
                    }
                    for k in &variant.changed {
                        // A stray space leaves the name as it was once squashed; it is still
                        // named when its cell's text changed.
                        assert!(
                            warned(IO12_COLUMNS[*k]),
                            "{what}: column {k} named in {:?}",
                            r.warnings
                        );
                    }
                    read += 1;
                    shifted_read += usize::from(variant.shifted);
                }
                Err(e) => {
                    let msg = e.to_string();
                    assert!(
                        variant.shifted
                            && msg.contains("ambiguous")
                            && msg.contains(table)
                            && msg.contains(seed),
                        "{what}: {msg}"
                    );
                    eprintln!("REFUSED {what}\n  {msg}");
                    shifted_refused += 1;
                }
            }
        }
    }
    let total = SEEDS.len() * VARIANTS as usize;
    eprintln!("{read} of {total} variants read ({shifted_read} of them shifted), {shifted_refused} refused as ambiguous");
    // Most damage is read; refusals are the shifted variants that really are ambiguous.
    assert_eq!(read + shifted_refused, total);
    assert!(read * 10 >= total * 9, "{read} of {total} read");
    assert!(
        shifted_read > 0 && shifted_refused < shifted_read,
        "{shifted_read} shifted variants read, {shifted_refused} refused"
    );
}

/// The issue's own shape: header cells reduced to fragments and to nothing, the data intact.
#[test]
fn fragments_and_emptied_cells_are_read_naming_each_repaired_header() {
    let text = std::fs::read_to_string(fixture("dell-ps6210e-esrp-performance.txt")).expect("seed");
    let clean = import_text(&text, Path::new("a.txt")).expect("clean");
    let damaged = text.replacen(
        "\tI/O Database Writes/sec\tI/O Database Reads Average Bytes\tI/O Database Writes Average Bytes\tI/O Log Reads Average Latency (msec)\tI/O Log Writes Average Latency (msec)\t",
        "\tWrites/sec\tReads Average\t\tI/O Log Reads Avera\tge Latency (msec)\t",
        1,
    );
    assert_ne!(damaged, text);
    let r = import_text(&damaged, Path::new("a.txt")).expect("read");
    for name in [
        "I/O Database Writes/sec",
        "I/O Database Reads Average Bytes",
        "I/O Database Writes Average Bytes",
        "I/O Log Reads Average Latency (msec)",
        "I/O Log Writes Average Latency (msec)",
    ] {
        assert!(
            r.warnings
                .iter()
                .any(|w| w.contains(&format!("\"{name}\""))),
            "{name} in {:?}",
            r.warnings
        );
    }
    assert_eq!(figures(r), figures(clean));
}

/// Headers that are not a damaged copy of Jetstress's: refused, never "repaired".
#[test]
fn a_header_in_another_order_or_ambiguous_is_refused() {
    let text = std::fs::read_to_string(fixture("dell-ps6210e-esrp-performance.txt")).expect("seed");
    // Two columns swapped.
    let swapped = text.replacen(
        "\tI/O Database Reads/sec\tI/O Database Writes/sec\t",
        "\tI/O Database Writes/sec\tI/O Database Reads/sec\t",
        1,
    );
    let e = import_text(&swapped, Path::new("a.txt")).expect_err("swapped");
    assert!(
        e.to_string().contains("Transactional I/O Performance"),
        "{e}"
    );
    // Fragments each of which fits several columns, shifted by a split cell: which is which
    // cannot be told.
    let header = text
        .lines()
        .find(|l| l.starts_with("MSExchange Database ==> Instances"))
        .expect("header");
    let vague = "MSExchange Database ==> Instances\t\tReads/sec\tAverage\tBytes\tWrites/sec";
    let e = import_text(&text.replacen(header, vague, 1), Path::new("a.txt")).expect_err("vague");
    let msg = e.to_string();
    assert!(
        msg.contains("ambiguous") && msg.contains("Transactional I/O Performance"),
        "{msg}"
    );
}
