//! The header row of a 12-column Jetstress table as a PDF copy leaves it: cells reduced to a
//! fragment of their words or to nothing, words split by stray spaces, or by stray tabs into
//! several cells, cells dropped. The data rows keep their 13 cells, so the columns are always
//! read in Jetstress's order; the header is what shows the table *is* Jetstress's 12 columns in
//! that order. It is accepted when its cells align with the columns in one way only (each cell a
//! piece of its column's name, in order), and every repaired header is named; it is refused when
//! no alignment exists, or several do.
//!
//! The readings, the first that has any alignment deciding:
//! 1. position: the cells after the first are the 12 columns, one each (the data rows' shape);
//! 2. an empty cell is a column reduced to nothing (it takes a column of its own);
//! 3. empty cells are stray (a tab doubled): they take no column.
//!
//! In 2 and 3, consecutive cells may together be one column's name (a split), and columns may
//! have no cell (dropped).

use crate::columns::IO12_COLUMNS;

/// Whitespace, emphasis marks and case removed: what survives a PDF copy's stray spaces, tabs
/// and line breaks inside a word.
pub(crate) fn squash(s: &str) -> String {
    s.chars()
        .filter(|c| !c.is_whitespace() && !matches!(c, '*' | '#'))
        .flat_map(char::to_lowercase)
        .collect()
}

/// The name of a 12-column table's first column (the instances).
const INSTANCES: &str = "MSExchange Database ==> Instances";

/// At most this many cells in a header row (12 columns split a few times each).
const MAX_CELLS: usize = 64;

/// A header read: for each of the 12 columns, the cells read as its name (none: lost).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Aligned {
    /// The cells of each column, in order (index 0 is the first of the 12).
    pub columns: Vec<Vec<String>>,
}

impl Aligned {
    /// The damage repaired, one line per column (the table column: 2 to 13), and the names of
    /// the columns whose header is lost.
    pub fn repairs(&self) -> (Vec<String>, Vec<&'static str>) {
        let mut repaired = Vec::new();
        let mut lost = Vec::new();
        for (k, (cells, name)) in self.columns.iter().zip(IO12_COLUMNS).enumerate() {
            let joined = cells
                .iter()
                .map(|c| c.split_whitespace().collect::<Vec<_>>().join(" "))
                .filter(|c| !c.is_empty())
                .collect::<Vec<_>>();
            if joined.is_empty() {
                lost.push(name);
            } else if joined.len() > 1 || joined.join(" ") != name {
                repaired.push(format!(
                    "column {} header \"{}\" read as \"{name}\"",
                    k + 2,
                    joined.join("\" + \"")
                ));
            }
        }
        (repaired, lost)
    }
}

/// Why a header row is not Jetstress's 12 columns.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Refused {
    /// No alignment: the first cell (table column, 1-based) that is none of the columns, as
    /// far as a reading in order gets, and the column expected there.
    Mismatch {
        /// The table column (1-based, the instances being 1).
        column: usize,
        /// The cell.
        got: String,
        /// The column expected there.
        want: &'static str,
    },
    /// Two alignments (or more): the first cell they read differently, and both readings.
    Ambiguous {
        /// The cell's position in the row (1-based).
        cell: usize,
        /// The cell.
        got: String,
        /// One reading and another.
        either: &'static str,
        /// The other.
        or: &'static str,
    },
}

impl std::fmt::Display for Refused {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Refused::Mismatch { column, got, want } => {
                write!(f, "column {column} is \"{got}\", expected \"{want}\"")
            }
            Refused::Ambiguous {
                cell,
                got,
                either,
                or,
            } => write!(
                f,
                "the header is ambiguous: cell {cell} \"{got}\" may be \"{either}\" or \"{or}\" (the header cells align with Jetstress's columns in more than one way); restore the header row"
            ),
        }
    }
}

/// The name of column `k` (0: the instances, 1..=12 Jetstress's).
fn name(k: usize) -> &'static str {
    match k {
        0 => INSTANCES,
        _ => IO12_COLUMNS.get(k - 1).copied().unwrap_or(""),
    }
}

/// Aligns a header row (all its cells, the instances' first) with the 13 columns.
pub fn align(row: &[String]) -> Result<Aligned, Refused> {
    let names: Vec<String> = (0..=12).map(|k| squash(name(k))).collect();
    // 1. Position.
    if (2..=13).contains(&row.len()) {
        let figures = &row[1..];
        let fits = figures.iter().enumerate().all(|(j, c)| {
            let g = squash(c);
            g.is_empty() || names[j + 1].contains(&g)
        });
        if fits {
            let mut columns = vec![Vec::new(); 12];
            for (j, c) in figures.iter().enumerate() {
                columns[j].push(c.clone());
            }
            return Ok(Aligned { columns });
        }
    }
    if row.len() > MAX_CELLS {
        return Err(mismatch(row, &names));
    }
    // 2 and 3.
    for empties_take_a_column in [true, false] {
        let items: Vec<Item> = row
            .iter()
            .enumerate()
            .map(|(at, c)| Item {
                at,
                text: c.clone(),
                squashed: squash(c),
            })
            .filter(|i| empties_take_a_column || !i.squashed.is_empty())
            .collect();
        let mut dp = Dp::new(&items, &names);
        match dp.count(0, 0) {
            0 => continue,
            1 => {
                let found = dp.alignments(2);
                let Some(one) = found.first() else { continue };
                // An alignment gives every cell a column (0: the instances' column), in the
                // columns' order: no cell is dropped or moved.
                assert_eq!(one.len(), items.len(), "an alignment of every cell");
                debug_assert!(one.windows(2).all(|w| w[0] <= w[1]) && one.iter().all(|k| *k <= 12));
                let mut columns = vec![Vec::new(); 12];
                for (item, k) in items.iter().zip(one) {
                    if *k >= 1 {
                        columns[k - 1].push(item.text.clone());
                    }
                }
                return Ok(Aligned { columns });
            }
            _ => {
                let found = dp.alignments(2);
                if let [a, b] = found.as_slice() {
                    if let Some(i) = (0..items.len()).find(|&i| a[i] != b[i]) {
                        return Err(Refused::Ambiguous {
                            cell: items[i].at + 1,
                            got: items[i].text.clone(),
                            either: name(a[i]),
                            or: name(b[i]),
                        });
                    }
                }
                continue;
            }
        }
    }
    Err(mismatch(row, &names))
}

/// The first cell a reading in order cannot place (the message of a header that is no
/// Jetstress header): its table column and the column expected there.
fn mismatch(row: &[String], names: &[String]) -> Refused {
    // The first cell may be the instances' header, or dropped.
    let skip = usize::from(!row.first().is_some_and(|c| squash(c).starts_with("i/o")));
    let mut k = 1;
    for (j, c) in row.iter().enumerate().skip(skip) {
        let g = squash(c);
        if g.is_empty() {
            continue;
        }
        match (k..=12).find(|&w| names[w].contains(&g)) {
            Some(w) => k = w + 1,
            None => {
                let column = j + 1 - skip + 1;
                return Refused::Mismatch {
                    column,
                    got: c.clone(),
                    want: name((column - 1).clamp(1, 12)),
                };
            }
        }
    }
    Refused::Mismatch {
        column: row.len(),
        got: row.last().cloned().unwrap_or_default(),
        want: name(12),
    }
}

struct Item {
    /// Its position in the row.
    at: usize,
    text: String,
    squashed: String,
}

/// Alignments of items with the 13 columns: each item a column, in order (non-decreasing), the
/// items of one column consecutive and together a piece of its name; an empty item a column of
/// its own; the first item the instances' column also when it is no piece of any other.
struct Dp<'a> {
    items: &'a [Item],
    names: &'a [String],
    /// count[i][k]: the alignments of items i.. whose first column is at least k (at most 2).
    memo: Vec<Vec<Option<u8>>>,
}

impl<'a> Dp<'a> {
    fn new(items: &'a [Item], names: &'a [String]) -> Self {
        Dp {
            items,
            names,
            memo: vec![vec![None; 14]; items.len() + 1],
        }
    }

    /// Whether items i..e may together be column k.
    fn fits(&self, i: usize, e: usize, k: usize) -> bool {
        let group = &self.items[i..e];
        if group.iter().any(|x| x.squashed.is_empty()) {
            return group.len() == 1;
        }
        let joined: String = group.iter().map(|x| x.squashed.as_str()).collect();
        if self.names[k].contains(&joined) {
            return true;
        }
        // The instances' header as the report words it, if it is no piece of another column.
        k == 0 && e == 1 && group[0].at == 0 && !self.names[1..].iter().any(|n| n.contains(&joined))
    }

    fn count(&mut self, i: usize, kmin: usize) -> u8 {
        if i == self.items.len() {
            return 1;
        }
        if kmin > 12 {
            return 0;
        }
        if let Some(c) = self.memo[i][kmin] {
            return c;
        }
        let mut total = 0u8;
        'all: for k in kmin..=12 {
            for e in i + 1..=self.items.len() {
                if self.fits(i, e, k) {
                    total = total.saturating_add(self.count(e, k + 1)).min(2);
                    if total >= 2 {
                        break 'all;
                    }
                }
            }
        }
        self.memo[i][kmin] = Some(total);
        total
    }

    /// Up to `max` alignments: the column of each item.
    fn alignments(&mut self, max: usize) -> Vec<Vec<usize>> {
        let mut out = Vec::new();
        let mut path = Vec::new();
        self.walk(0, 0, &mut path, &mut out, max);
        out
    }

    fn walk(
        &mut self,
        i: usize,
        kmin: usize,
        path: &mut Vec<usize>,
        out: &mut Vec<Vec<usize>>,
        max: usize,
    ) {
        if i == self.items.len() {
            out.push(path.clone());
            return;
        }
        for k in kmin..=12 {
            for e in i + 1..=self.items.len() {
                if out.len() >= max {
                    return;
                }
                if self.fits(i, e, k) && self.count(e, k + 1) > 0 {
                    let len = path.len();
                    path.extend(std::iter::repeat_n(k, e - i));
                    self.walk(e, k + 1, path, out, max);
                    path.truncate(len);
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn row(cells: &[&str]) -> Vec<String> {
        cells.iter().map(|c| c.to_string()).collect()
    }

    fn full() -> Vec<String> {
        let mut r = vec![INSTANCES.to_string()];
        r.extend(IO12_COLUMNS.iter().map(|c| c.to_string()));
        r
    }

    #[test]
    fn a_clean_header_needs_no_repair() {
        let a = align(&full()).expect("clean");
        assert_eq!(a.repairs(), (vec![], vec![]));
    }

    #[test]
    fn a_split_cell_is_read_as_one_column() {
        let mut r = full();
        r.splice(3..4, row(&["I/O Database", "Reads/sec"]));
        let a = align(&r).expect("split");
        assert_eq!(a.columns[2], row(&["I/O Database", "Reads/sec"]));
        let (repaired, lost) = a.repairs();
        assert_eq!(
            repaired,
            ["column 4 header \"I/O Database\" + \"Reads/sec\" read as \"I/O Database Reads/sec\""]
        );
        assert!(lost.is_empty());
    }

    #[test]
    fn swapped_columns_are_refused() {
        let mut r = full();
        r.swap(3, 4);
        assert!(
            matches!(align(&r), Err(Refused::Mismatch { .. })),
            "{:?}",
            align(&r)
        );
    }

    #[test]
    fn fragments_that_fit_several_columns_are_refused() {
        // Two cells only, each a piece of several columns, nothing to place them.
        let r = row(&["", "Reads/sec", "Average Bytes", "Writes/sec"]);
        let e = align(&r);
        assert!(matches!(e, Err(Refused::Ambiguous { .. })), "{e:?}");
    }
}
