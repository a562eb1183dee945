//! What every page this crate writes must be, checked on the page as written (in debug builds:
//! the report functions `debug_assert!` it): every element closed in order, and every table
//! rectangular (each row has as many cells as the table's first row, a `colspan` counting its
//! columns). Pages are maud's output, so text never holds a `<`; the pieces written as text
//! (`PreEscaped`) are what this catches.

use maud::Markup;

/// `markup` as the page's text, checked well formed in debug builds (`what` names the page in
/// the message).
pub(crate) fn checked(markup: Markup, what: &str) -> String {
    let page = markup.into_string();
    debug_assert!(
        well_formed(&page).is_ok(),
        "{what}: {:?}",
        well_formed(&page)
    );
    page
}

/// Elements without a closing tag.
const VOID: [&str; 6] = ["meta", "link", "br", "hr", "img", "input"];

/// A table being read: the cells of its first row, and of the row being read.
struct OpenTable {
    width: Option<usize>,
    row: usize,
    rows: usize,
}

/// Why `page` is not well formed (the first fault found), or `Ok`.
pub(crate) fn well_formed(page: &str) -> Result<(), String> {
    let mut open: Vec<&str> = Vec::new();
    let mut tables: Vec<OpenTable> = Vec::new();
    let mut rest = page;
    while let Some(at) = rest.find('<') {
        let tail = &rest[at + 1..];
        let end = tail
            .find('>')
            .ok_or_else(|| format!("a tag not ended: {}", head(tail)))?;
        let tag = &tail[..end];
        rest = &tail[end + 1..];
        if tag.starts_with('!') {
            continue;
        }
        if let Some(name) = tag.strip_prefix('/') {
            match open.pop() {
                Some(o) if o == name => {}
                o => return Err(format!("</{name}> closes {o:?}")),
            }
            if name == "tr" {
                let t = tables.last_mut().ok_or("a row outside any table")?;
                match t.width {
                    None => t.width = Some(t.row),
                    Some(w) if w == t.row => {}
                    Some(w) => {
                        return Err(format!(
                            "row {} of a table has {} cells, its first row {w}",
                            t.rows + 1,
                            t.row
                        ))
                    }
                }
                t.rows += 1;
            } else if name == "table" {
                tables.pop();
            }
            continue;
        }
        let name = tag.split([' ', '\n', '\t']).next().unwrap_or("");
        if name.is_empty() {
            return Err(format!("a tag without a name: <{}", head(tag)));
        }
        match name {
            "table" => tables.push(OpenTable {
                width: None,
                row: 0,
                rows: 0,
            }),
            "tr" => {
                if let Some(t) = tables.last_mut() {
                    t.row = 0;
                }
            }
            "td" | "th" => {
                let t = tables.last_mut().ok_or("a cell outside any table")?;
                t.row += colspan(tag);
            }
            _ => {}
        }
        if !VOID.contains(&name) {
            open.push(name);
        }
    }
    match open.last() {
        Some(o) => Err(format!("<{o}> is never closed")),
        None => Ok(()),
    }
}

/// The columns a cell spans (its `colspan`, 1 without one).
fn colspan(tag: &str) -> usize {
    tag.split_once("colspan=\"")
        .and_then(|(_, v)| v.split('"').next())
        .and_then(|v| v.parse().ok())
        .unwrap_or(1)
}

/// The start of `s`, for a message.
fn head(s: &str) -> &str {
    let mut end = s.len().min(40);
    while !s.is_char_boundary(end) {
        end -= 1;
    }
    &s[..end]
}

#[cfg(test)]
mod tests {
    use super::well_formed;

    #[test]
    fn a_balanced_page_with_rectangular_tables_passes() {
        let page = "<!DOCTYPE html><html><head><meta charset=\"utf-8\"></head><body>\
                    <table><tr><th>a</th><th>b</th></tr><tr><td colspan=\"2\">x</td></tr></table>\
                    </body></html>";
        assert_eq!(well_formed(page), Ok(()));
    }

    #[test]
    fn an_unclosed_or_misnested_element_is_named() {
        assert_eq!(
            well_formed("<div><p>x</div>"),
            Err("</div> closes Some(\"p\")".into())
        );
        assert_eq!(well_formed("<div>x"), Err("<div> is never closed".into()));
    }

    #[test]
    fn a_row_short_of_cells_is_named() {
        let page = "<table><tr><th>a</th><th>b</th></tr><tr><td>x</td></tr></table>";
        assert_eq!(
            well_formed(page),
            Err("row 2 of a table has 1 cells, its first row 2".into())
        );
    }
}
