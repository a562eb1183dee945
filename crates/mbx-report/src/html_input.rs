//! The HTML parse of an imported report, with its nesting depth capped.
//!
//! html5ever's tree builder scans its stack of open elements on most tags (the "has an element in
//! scope" checks of the HTML standard), so the work of a parse grows with the nesting depth times
//! the number of tags: 200,000 nested `<div>`s (2.2 MB) took over 30 s, a file near the input
//! bound would take hours. A Jetstress report nests about ten elements deep; the parse here stops
//! as soon as an element would sit deeper than [`MAX_DEPTH`], which bounds the work per tag and
//! makes the parse linear in the input.
//!
//! Depth alone does not bound the tree: unclosed formatting elements (`<p><b><i><span>` two
//! million times, 30 MB) stay shallow, since each `<p>` closes the last, but the tree builder
//! re-opens the formatting elements inside every new paragraph, so the tree grows to millions of
//! nodes (42 s and 4.2 GB in the audit). The parse also stops at [`MAX_NODES`] nodes (elements,
//! comments, processing instructions): a Jetstress report has a few thousand, and the tree of
//! 100,000 is some tens of MB, so time and memory are bounded whatever the nesting.

use std::borrow::Cow;
use std::collections::HashMap;

use ego_tree::NodeId;
use html5ever::tendril::{StrTendril, TendrilSink};
use html5ever::tree_builder::{ElementFlags, NodeOrText, QuirksMode, TreeSink};
use html5ever::{Attribute, ExpandedName, QualName};
use scraper::Html;

/// The deepest an element may be nested (the document's root element is at depth 1). Browsers'
/// parsers cap the tree too (Blink at 512); a Jetstress report needs about 10.
pub const MAX_DEPTH: u32 = 256;

/// The most nodes (elements, comments, processing instructions) the parse makes. A Jetstress
/// report has a few thousand (its largest table has a row per database, at most 100).
pub const MAX_NODES: u64 = 100_000;

/// How much input the parser gets between two looks at the depth: what the parse may still do
/// past the cap is bounded by this.
const CHUNK: usize = 16 * 1024;

/// The parse stopped: an element at `line` would be nested deeper than [`MAX_DEPTH`], or the
/// document would have more than [`MAX_NODES`] nodes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TooDeep {
    /// The input line the tree builder was at (1-based).
    pub line: u64,
    /// Which bound: true for the node count, false for the depth.
    pub too_many: bool,
}

impl std::fmt::Display for TooDeep {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        if self.too_many {
            write!(
                f,
                "more than {MAX_NODES} elements (a Jetstress report has a few thousand): not a report this importer reads"
            )
        } else {
            write!(
                f,
                "elements are nested more than {MAX_DEPTH} deep (a Jetstress report nests about 10): not a report this importer reads"
            )
        }
    }
}

/// Parses `html` as a document, or stops at the first element nested deeper than [`MAX_DEPTH`].
pub fn parse_document(html: &str) -> Result<Html, TooDeep> {
    let mut parser = html5ever::driver::parse_document(
        Capped {
            html: Html::new_document(),
            depth: HashMap::new(),
            line: 1,
            nodes: 0,
            too_deep: None,
        },
        Default::default(),
    );
    let mut rest = html;
    while !rest.is_empty() {
        let mut end = rest.len().min(CHUNK);
        while !rest.is_char_boundary(end) {
            end += 1;
        }
        let (chunk, tail) = rest.split_at(end);
        parser.process(StrTendril::from_slice(chunk));
        if let Some(t) = parser.tokenizer.sink.sink.too_deep {
            return Err(t);
        }
        rest = tail;
    }
    let doc = parser.finish();
    Ok(doc)
}

/// scraper's tree sink, plus the depth of every node appended and the deepest seen.
struct Capped {
    html: Html,
    /// The depth of each node in the tree (the document is 0); nodes not yet appended are absent.
    depth: HashMap<NodeId, u32>,
    line: u64,
    /// Nodes made so far.
    nodes: u64,
    too_deep: Option<TooDeep>,
}

impl Capped {
    fn depth_of(&self, node: &NodeId) -> u32 {
        self.depth.get(node).copied().unwrap_or(0)
    }

    fn place(&mut self, child: &NodeOrText<NodeId>, depth: u32) {
        if let NodeOrText::AppendNode(id) = child {
            self.depth.insert(*id, depth);
            if depth > MAX_DEPTH && self.too_deep.is_none() {
                self.too_deep = Some(TooDeep {
                    line: self.line,
                    too_many: false,
                });
            }
        }
    }

    /// Counts a node made; past [`MAX_NODES`] the parse is stopped (at the end of its chunk).
    fn count(&mut self) {
        self.nodes = self.nodes.saturating_add(1);
        if self.nodes > MAX_NODES && self.too_deep.is_none() {
            self.too_deep = Some(TooDeep {
                line: self.line,
                too_many: true,
            });
        }
    }
}

impl TreeSink for Capped {
    type Output = Html;
    type Handle = NodeId;

    fn finish(self) -> Html {
        self.html
    }

    fn parse_error(&mut self, msg: Cow<'static, str>) {
        self.html.parse_error(msg)
    }

    fn get_document(&mut self) -> NodeId {
        self.html.get_document()
    }

    fn elem_name<'a>(&'a self, target: &'a NodeId) -> ExpandedName<'a> {
        self.html.elem_name(target)
    }

    fn create_element(
        &mut self,
        name: QualName,
        attrs: Vec<Attribute>,
        flags: ElementFlags,
    ) -> NodeId {
        self.count();
        self.html.create_element(name, attrs, flags)
    }

    fn create_comment(&mut self, text: StrTendril) -> NodeId {
        self.count();
        self.html.create_comment(text)
    }

    fn create_pi(&mut self, target: StrTendril, data: StrTendril) -> NodeId {
        self.count();
        self.html.create_pi(target, data)
    }

    fn append(&mut self, parent: &NodeId, child: NodeOrText<NodeId>) {
        let depth = self.depth_of(parent).saturating_add(1);
        self.place(&child, depth);
        self.html.append(parent, child)
    }

    fn append_based_on_parent_node(
        &mut self,
        element: &NodeId,
        prev_element: &NodeId,
        child: NodeOrText<NodeId>,
    ) {
        // Either beside `element` or inside `prev_element`: the deeper of the two.
        let depth = self
            .depth_of(element)
            .max(self.depth_of(prev_element).saturating_add(1));
        self.place(&child, depth);
        self.html
            .append_based_on_parent_node(element, prev_element, child)
    }

    fn append_doctype_to_document(
        &mut self,
        name: StrTendril,
        public_id: StrTendril,
        system_id: StrTendril,
    ) {
        self.html
            .append_doctype_to_document(name, public_id, system_id)
    }

    fn get_template_contents(&mut self, target: &NodeId) -> NodeId {
        self.html.get_template_contents(target)
    }

    fn same_node(&self, x: &NodeId, y: &NodeId) -> bool {
        self.html.same_node(x, y)
    }

    fn set_quirks_mode(&mut self, mode: QuirksMode) {
        self.html.set_quirks_mode(mode)
    }

    fn append_before_sibling(&mut self, sibling: &NodeId, new_node: NodeOrText<NodeId>) {
        let depth = self.depth_of(sibling);
        self.place(&new_node, depth);
        self.html.append_before_sibling(sibling, new_node)
    }

    fn add_attrs_if_missing(&mut self, target: &NodeId, attrs: Vec<Attribute>) {
        self.html.add_attrs_if_missing(target, attrs)
    }

    fn remove_from_parent(&mut self, target: &NodeId) {
        self.html.remove_from_parent(target)
    }

    fn reparent_children(&mut self, node: &NodeId, new_parent: &NodeId) {
        // The children move one level under `new_parent`; their own subtrees keep the depths
        // recorded (the adoption agency moves a few levels at most).
        self.html.reparent_children(node, new_parent)
    }

    fn set_current_line(&mut self, line: u64) {
        self.line = line;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn nested(n: usize) -> String {
        format!(
            "<html><body>{}x{}</body></html>",
            "<div>".repeat(n),
            "</div>".repeat(n)
        )
    }

    #[test]
    fn the_cap_is_the_depth_of_elements() {
        // html (1) and body (2), then the divs.
        assert!(parse_document(&nested(MAX_DEPTH as usize - 2)).is_ok());
        let e = parse_document(&nested(MAX_DEPTH as usize - 1)).expect_err("one too deep");
        assert_eq!(e.line, 1);
    }

    /// Issue 34: two million unclosed `<p><b><i><span>` (30 MB) stay shallow but made millions
    /// of nodes (42 s, 4.2 GB): the node bound stops the parse within its first MB.
    #[test]
    fn unclosed_formatting_elements_are_bounded_by_the_node_count() {
        let html = format!(
            "<html><body>{}</body></html>",
            "<p><b><i><span>x".repeat(2_000_000)
        );
        let t = std::time::Instant::now();
        let e = parse_document(&html).expect_err("too many nodes");
        assert!(e.too_many, "{e}");
        assert!(e.to_string().contains("more than 100000 elements"), "{e}");
        eprintln!("stopped at line {} after {:?}", e.line, t.elapsed());
        // Comments count too.
        let html = format!("<html><body>{}</body></html>", "<!---->".repeat(200_000));
        assert!(parse_document(&html).expect_err("comments").too_many);
    }

    #[test]
    fn the_document_is_parsed_as_scraper_parses_it() {
        let html = "<html><body><table><tr><td>a&#160;b<td>c</table><p>x</body></html>";
        let ours = parse_document(html).expect("shallow");
        assert_eq!(ours.html(), Html::parse_document(html).html());
    }
}
