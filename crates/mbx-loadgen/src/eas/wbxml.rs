//! WBXML 1.3 as Exchange ActiveSync uses it (MS-ASWBXML): a tree of elements, text and opaque
//! bytes, encoded to and decoded from bytes with the code pages of [`super::codepages`].
//!
//! Hand-written: no maintained Rust crate encodes ActiveSync WBXML, and the subset EAS uses is
//! small (no attributes, no string table, UTF-8 only). The encoder writes what Exchange and
//! libwbxml write: header `03 01 6A 00` (version 1.3, unknown public id, UTF-8, empty string
//! table), `SWITCH_PAGE` only when the page changes, `STR_I` strings, `OPAQUE` bytes, a tag
//! without its content flag for an empty element. The decoder also reads what other encoders
//! may send: a string table with `STR_T` references, `ENTITY` characters, a public id given by
//! the string table, versions 1.0-1.2.
//!
//! Network input is hostile: the decoder never recurses (an explicit stack), and bounds the
//! input size, the nesting depth, each string's length and the number of nodes ([`Limits`]);
//! every failure is a [`WbxmlError`] with the byte offset where it was found.

use std::fmt::Write as _;

use super::codepages::Tag;

/// Global tokens (WBXML 1.3, section 7.1).
const SWITCH_PAGE: u8 = 0x00;
const END: u8 = 0x01;
const ENTITY: u8 = 0x02;
const STR_I: u8 = 0x03;
const LITERAL: u8 = 0x04;
const EXT_I_0: u8 = 0x40;
const EXT_I_2: u8 = 0x42;
const PI: u8 = 0x43;
const LITERAL_C: u8 = 0x44;
const EXT_T_0: u8 = 0x80;
const EXT_T_2: u8 = 0x82;
const STR_T: u8 = 0x83;
const LITERAL_A: u8 = 0x84;
const EXT_0: u8 = 0xC0;
const EXT_2: u8 = 0xC2;
const OPAQUE: u8 = 0xC3;
const LITERAL_AC: u8 = 0xC4;
/// The tag byte's flags.
const HAS_CONTENT: u8 = 0x40;
const HAS_ATTRIBUTES: u8 = 0x80;

/// WBXML 1.3, public id 1 (unknown: EAS registers none), charset 106 (UTF-8), no string table.
pub const HEADER: [u8; 4] = [0x03, 0x01, 0x6A, 0x00];
/// IANA MIBenum of UTF-8.
const UTF8: u32 = 106;

/// A node of the tree: an element, text, or opaque bytes (EAS has no attributes).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Node {
    /// An element and its children.
    Element(Element),
    /// Character data (`STR_I`, `STR_T`, `ENTITY`; adjacent pieces are joined).
    Text(String),
    /// Bytes (`OPAQUE`): a MIME message, a conversation id.
    Opaque(Vec<u8>),
}

/// An element: its tag and its children in order.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Element {
    /// Code page and token.
    pub tag: Tag,
    /// Its content.
    pub children: Vec<Node>,
}

impl Element {
    /// An empty element.
    pub fn new(tag: Tag) -> Element {
        Element {
            tag,
            children: Vec::new(),
        }
    }

    /// An element holding one text: `<tag>text</tag>`.
    pub fn text(tag: Tag, text: impl Into<String>) -> Element {
        Element {
            tag,
            children: vec![Node::Text(text.into())],
        }
    }

    /// An element holding opaque bytes.
    pub fn opaque(tag: Tag, bytes: impl Into<Vec<u8>>) -> Element {
        Element {
            tag,
            children: vec![Node::Opaque(bytes.into())],
        }
    }

    /// This element with `child` appended (for building requests).
    pub fn with(mut self, child: impl Into<Node>) -> Element {
        self.children.push(child.into());
        self
    }

    /// The child elements.
    pub fn elements(&self) -> impl Iterator<Item = &Element> {
        self.children.iter().filter_map(|n| match n {
            Node::Element(e) => Some(e),
            _ => None,
        })
    }

    /// The child elements with `tag`.
    pub fn all(&self, tag: Tag) -> impl Iterator<Item = &Element> {
        self.elements().filter(move |e| e.tag == tag)
    }

    /// The first child element with `tag`.
    pub fn child(&self, tag: Tag) -> Option<&Element> {
        self.all(tag).next()
    }

    /// The element at the end of `path` (each step the first child with that tag).
    pub fn path(&self, path: &[Tag]) -> Option<&Element> {
        path.iter().try_fold(self, |e, t| e.child(*t))
    }

    /// This element's text (its first text child).
    pub fn text_content(&self) -> Option<&str> {
        self.children.iter().find_map(|n| match n {
            Node::Text(s) => Some(s.as_str()),
            _ => None,
        })
    }

    /// This element's content as bytes: its opaque child, else its text's bytes.
    pub fn bytes_content(&self) -> Option<&[u8]> {
        self.children.iter().find_map(|n| match n {
            Node::Opaque(b) => Some(b.as_slice()),
            Node::Text(s) => Some(s.as_bytes()),
            Node::Element(_) => None,
        })
    }

    /// The text of the child element with `tag`.
    pub fn child_text(&self, tag: Tag) -> Option<&str> {
        self.child(tag)?.text_content()
    }

    /// Compact XML of the tree (for messages and logs; opaque bytes shown as their length and
    /// their text when it is UTF-8). Namespaces are written as libwbxml writes them: `xmlns` on
    /// the root, and on each element whose page differs from its parent's.
    pub fn to_xml(&self) -> String {
        let mut out = String::new();
        self.write_xml(&mut out, None);
        out
    }

    fn write_xml(&self, out: &mut String, parent_page: Option<u8>) {
        let name = self
            .tag
            .name()
            .map(str::to_owned)
            .unwrap_or_else(|| format!("Tag0x{:02x}", self.tag.token()));
        let _ = write!(out, "<{name}");
        if parent_page != Some(self.tag.page()) {
            match self.tag.namespace() {
                Some(ns) => {
                    let _ = write!(out, " xmlns=\"{ns}:\"");
                }
                None => {
                    let _ = write!(out, " xmlns=\"page{}:\"", self.tag.page());
                }
            }
        }
        if self.children.is_empty() {
            out.push_str("/>");
            return;
        }
        out.push('>');
        for child in &self.children {
            match child {
                Node::Element(e) => e.write_xml(out, Some(self.tag.page())),
                Node::Text(s) => escape(out, s),
                Node::Opaque(b) => match std::str::from_utf8(b) {
                    Ok(s) => escape(out, s),
                    Err(_) => {
                        let _ = write!(out, "[{} opaque bytes]", b.len());
                    }
                },
            }
        }
        let _ = write!(out, "</{name}>");
    }
}

fn escape(out: &mut String, s: &str) {
    for c in s.chars() {
        match c {
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '&' => out.push_str("&amp;"),
            c => out.push(c),
        }
    }
}

impl From<Element> for Node {
    fn from(e: Element) -> Node {
        Node::Element(e)
    }
}

/// Bounds of what the decoder accepts (and the encoder writes: depth only).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Limits {
    /// The whole document, in bytes.
    pub input: usize,
    /// Elements open at once (EAS documents nest about 10 deep: Sync, Collections,
    /// Collection, Commands, Add, ApplicationData, Body, ...).
    pub depth: usize,
    /// One string or opaque run, in bytes (a message's MIME in SendMail or ItemOperations).
    pub string: usize,
    /// Elements, texts and opaque runs in all.
    pub nodes: usize,
}

impl Default for Limits {
    /// 64 MiB of input (as the other clients' message limit), depth 64, strings of 64 MiB,
    /// 1,000,000 nodes.
    fn default() -> Self {
        Limits {
            input: 64 * 1024 * 1024,
            depth: 64,
            string: 64 * 1024 * 1024,
            nodes: 1_000_000,
        }
    }
}

/// Why bytes are not a WBXML document we accept, or a tree cannot be encoded. `at` is the byte
/// offset in the input.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum WbxmlError {
    /// The input is larger than [`Limits::input`].
    #[error("WBXML document of {len} bytes is over the limit of {limit}")]
    InputTooLarge {
        /// Its size.
        len: usize,
        /// The limit.
        limit: usize,
    },
    /// The input ends inside the header, a token or the document.
    #[error("WBXML ends early at byte {at}: {what}")]
    Truncated {
        /// Where.
        at: usize,
        /// What was being read.
        what: &'static str,
    },
    /// The version byte is not 1.0-1.3.
    #[error("WBXML version byte 0x{version:02x} is not 1.0 to 1.3")]
    Version {
        /// The byte.
        version: u8,
    },
    /// The document's charset is not UTF-8 (MIBenum 106; EAS uses only UTF-8).
    #[error("WBXML charset {charset} is not UTF-8 (106)")]
    Charset {
        /// Its MIBenum.
        charset: u32,
    },
    /// A multi-byte integer longer than 32 bits.
    #[error("WBXML integer at byte {at} is longer than 32 bits")]
    Integer {
        /// Where.
        at: usize,
    },
    /// A token EAS does not use (attributes, literals, extensions, processing instructions).
    #[error("WBXML token 0x{token:02x} at byte {at}: {why}")]
    Unsupported {
        /// Where.
        at: usize,
        /// The byte.
        token: u8,
        /// Why it is refused.
        why: &'static str,
    },
    /// More elements open at once than [`Limits::depth`].
    #[error("WBXML nests deeper than {limit} elements at byte {at}")]
    TooDeep {
        /// Where.
        at: usize,
        /// The limit.
        limit: usize,
    },
    /// A string or opaque run longer than [`Limits::string`].
    #[error("WBXML string of {len} bytes at byte {at} is over the limit of {limit}")]
    StringTooLong {
        /// Where.
        at: usize,
        /// Its length (so far).
        len: usize,
        /// The limit.
        limit: usize,
    },
    /// More nodes than [`Limits::nodes`].
    #[error("WBXML has more than {limit} nodes (at byte {at})")]
    TooManyNodes {
        /// Where.
        at: usize,
        /// The limit.
        limit: usize,
    },
    /// A string that is not UTF-8, or an entity that is not a character.
    #[error("WBXML text at byte {at} is not UTF-8")]
    Utf8 {
        /// Where.
        at: usize,
    },
    /// A string table reference outside the table, or to a string without its NUL.
    #[error("WBXML string table reference {offset} at byte {at} is outside the table")]
    StringTable {
        /// Where.
        at: usize,
        /// The reference.
        offset: u32,
    },
    /// The document's structure is wrong: END with nothing open, content outside the root,
    /// bytes after it, no root at all.
    #[error("WBXML structure at byte {at}: {why}")]
    Structure {
        /// Where.
        at: usize,
        /// What is wrong.
        why: &'static str,
    },
    /// A tree to encode nests deeper than [`Limits::depth`].
    #[error("the tree to encode nests deeper than {limit} elements")]
    EncodeTooDeep {
        /// The limit.
        limit: usize,
    },
    /// A tree to encode holds a text with a NUL character (STR_I ends at NUL).
    #[error("the text of {tag:?} holds a NUL character, which WBXML strings cannot carry")]
    NulInText {
        /// The element.
        tag: Tag,
    },
    /// A tree to encode has a token outside 0x05..=0x3F.
    #[error("tag {tag:?} has a token outside 0x05..=0x3F")]
    BadToken {
        /// The tag.
        tag: Tag,
    },
}

/// Encodes `root` as an ActiveSync WBXML document, nesting at most `depth` elements.
pub fn encode(root: &Element, depth: usize) -> Result<Vec<u8>, WbxmlError> {
    let mut out = HEADER.to_vec();
    let mut page = 0u8;
    encode_element(root, &mut out, &mut page, 1, depth)?;
    Ok(out)
}

fn encode_element(
    e: &Element,
    out: &mut Vec<u8>,
    page: &mut u8,
    level: usize,
    limit: usize,
) -> Result<(), WbxmlError> {
    if level > limit {
        return Err(WbxmlError::EncodeTooDeep { limit });
    }
    if !(0x05..=0x3F).contains(&e.tag.token()) {
        return Err(WbxmlError::BadToken { tag: e.tag });
    }
    if e.tag.page() != *page {
        out.push(SWITCH_PAGE);
        out.push(e.tag.page());
        *page = e.tag.page();
    }
    if e.children.is_empty() {
        out.push(e.tag.token());
        return Ok(());
    }
    out.push(e.tag.token() | HAS_CONTENT);
    for child in &e.children {
        match child {
            Node::Element(c) => encode_element(c, out, page, level + 1, limit)?,
            Node::Text(s) => {
                if s.as_bytes().contains(&0) {
                    return Err(WbxmlError::NulInText { tag: e.tag });
                }
                out.push(STR_I);
                out.extend_from_slice(s.as_bytes());
                out.push(0);
            }
            Node::Opaque(b) => {
                out.push(OPAQUE);
                // An opaque run longer than u32 cannot be encoded; a Vec that large is not
                // something a client builds (the WBXML length is an mb_u_int32).
                let len = u32::try_from(b.len()).map_err(|_| WbxmlError::StringTooLong {
                    at: out.len(),
                    len: b.len(),
                    limit: u32::MAX as usize,
                })?;
                put_mb_u32(out, len);
                out.extend_from_slice(b);
            }
        }
    }
    out.push(END);
    Ok(())
}

/// Appends `v` as a WBXML multi-byte integer (7 bits a byte, most significant first, the high
/// bit set on all but the last).
fn put_mb_u32(out: &mut Vec<u8>, v: u32) {
    let mut buf = [0u8; 5];
    let mut i = buf.len();
    let mut v = v;
    loop {
        i -= 1;
        buf[i] = (v & 0x7F) as u8 | if i == buf.len() - 1 { 0 } else { 0x80 };
        v >>= 7;
        if v == 0 {
            break;
        }
    }
    out.extend_from_slice(&buf[i..]);
}

/// A cursor over the input.
struct Reader<'a> {
    bytes: &'a [u8],
    pos: usize,
}

impl<'a> Reader<'a> {
    fn byte(&mut self, what: &'static str) -> Result<u8, WbxmlError> {
        let b = *self
            .bytes
            .get(self.pos)
            .ok_or(WbxmlError::Truncated { at: self.pos, what })?;
        self.pos += 1;
        Ok(b)
    }

    fn mb_u32(&mut self, what: &'static str) -> Result<u32, WbxmlError> {
        let at = self.pos;
        let mut v: u32 = 0;
        for _ in 0..5 {
            let b = self.byte(what)?;
            if v > (u32::MAX >> 7) {
                return Err(WbxmlError::Integer { at });
            }
            v = (v << 7) | u32::from(b & 0x7F);
            if b & 0x80 == 0 {
                return Ok(v);
            }
        }
        Err(WbxmlError::Integer { at })
    }

    /// `len` bytes, refused beyond `limit` or the end of the input.
    fn take(&mut self, len: u32, limit: usize, what: &'static str) -> Result<&'a [u8], WbxmlError> {
        let at = self.pos;
        let len = usize::try_from(len).unwrap_or(usize::MAX);
        if len > limit {
            return Err(WbxmlError::StringTooLong { at, len, limit });
        }
        let end = at
            .checked_add(len)
            .filter(|e| *e <= self.bytes.len())
            .ok_or(WbxmlError::Truncated { at, what })?;
        self.pos = end;
        Ok(&self.bytes[at..end])
    }

    /// An inline string up to its NUL, at most `limit` bytes.
    fn cstr(&mut self, limit: usize) -> Result<&'a [u8], WbxmlError> {
        let at = self.pos;
        let rest = self.bytes.get(at..).unwrap_or_default();
        match rest.iter().position(|b| *b == 0) {
            Some(n) if n > limit => Err(WbxmlError::StringTooLong { at, len: n, limit }),
            Some(n) => {
                self.pos = at + n + 1;
                Ok(&rest[..n])
            }
            None if rest.len() > limit => Err(WbxmlError::StringTooLong {
                at,
                len: rest.len(),
                limit,
            }),
            None => Err(WbxmlError::Truncated {
                at: self.bytes.len(),
                what: "an inline string without its NUL",
            }),
        }
    }
}

/// Decodes an ActiveSync WBXML document to its root element, within `limits`.
pub fn decode(bytes: &[u8], limits: &Limits) -> Result<Element, WbxmlError> {
    if bytes.len() > limits.input {
        return Err(WbxmlError::InputTooLarge {
            len: bytes.len(),
            limit: limits.input,
        });
    }
    let mut r = Reader { bytes, pos: 0 };
    let table = read_header(&mut r, limits)?;
    let mut tree = Tree {
        limits,
        page: 0,
        stack: Vec::new(),
        root: None,
        nodes: 0,
    };
    while r.pos < bytes.len() {
        let at = r.pos;
        if tree.root.is_some() {
            return Err(WbxmlError::Structure {
                at,
                why: "bytes after the root element",
            });
        }
        let token = r.byte("a token")?;
        match token {
            SWITCH_PAGE => tree.page = r.byte("a code page")?,
            END => tree.end(at)?,
            STR_I | STR_T | ENTITY => {
                let text = read_text(&mut r, token, table, limits, at)?;
                tree.text(at, text)?;
            }
            OPAQUE => {
                let len = r.mb_u32("an opaque length")?;
                let data = r.take(len, limits.string, "opaque data")?;
                tree.opaque(at, data)?;
            }
            _ => {
                if let Some(why) = unsupported(token) {
                    return Err(WbxmlError::Unsupported { at, token, why });
                }
                tree.tag(at, token)?;
            }
        }
    }
    tree.finish(r.pos)
}

/// The header: version, public id, charset, string table (returned).
fn read_header<'a>(r: &mut Reader<'a>, limits: &Limits) -> Result<&'a [u8], WbxmlError> {
    let version = r.byte("the version")?;
    if version > 0x03 {
        return Err(WbxmlError::Version { version });
    }
    let public_id = r.mb_u32("the public id")?;
    if public_id == 0 {
        // The public id is a string in the string table (libwbxml writes ActiveSync's so
        // unless told -a): its index, which is not needed.
        r.mb_u32("the public id's string index")?;
    }
    let charset = r.mb_u32("the charset")?;
    // 0: unknown (the protocol's default, UTF-8 for EAS).
    if charset != UTF8 && charset != 0 {
        return Err(WbxmlError::Charset { charset });
    }
    let table_len = r.mb_u32("the string table's length")?;
    r.take(table_len, limits.input, "the string table")
}

/// The text of a `STR_I`, `STR_T` (from `table`) or `ENTITY` token (its byte read at `at`).
fn read_text<'a>(
    r: &mut Reader<'a>,
    token: u8,
    table: &'a [u8],
    limits: &Limits,
    at: usize,
) -> Result<std::borrow::Cow<'a, str>, WbxmlError> {
    let utf8 = |s: &'a [u8]| std::str::from_utf8(s).map_err(|_| WbxmlError::Utf8 { at });
    match token {
        STR_I => Ok(utf8(r.cstr(limits.string)?)?.into()),
        STR_T => {
            let offset = r.mb_u32("a string table reference")?;
            let s = usize::try_from(offset)
                .ok()
                .and_then(|o| table.get(o..))
                .and_then(|rest| rest.iter().position(|b| *b == 0).map(|n| &rest[..n]))
                .ok_or(WbxmlError::StringTable { at, offset })?;
            Ok(utf8(s)?.into())
        }
        _ => {
            let code = r.mb_u32("an entity")?;
            Ok(char::from_u32(code)
                .ok_or(WbxmlError::Utf8 { at })?
                .to_string()
                .into())
        }
    }
}

/// Why a global token EAS does not use is refused (None: a tag token).
fn unsupported(token: u8) -> Option<&'static str> {
    match token {
        LITERAL | LITERAL_A | LITERAL_C | LITERAL_AC => {
            Some("a literal tag name (ActiveSync defines every tag in its code pages)")
        }
        EXT_I_0..=EXT_I_2 | EXT_T_0..=EXT_T_2 | EXT_0..=EXT_2 => {
            Some("an extension token (ActiveSync uses none)")
        }
        PI => Some("a processing instruction (ActiveSync uses none)"),
        _ if token & HAS_ATTRIBUTES != 0 => Some("a tag with attributes (ActiveSync uses none)"),
        _ => None,
    }
}

/// The tree being built: the open elements, the finished root, the bounds.
struct Tree<'l> {
    limits: &'l Limits,
    page: u8,
    stack: Vec<Element>,
    root: Option<Element>,
    nodes: usize,
}

impl Tree<'_> {
    /// Counts one more node, refused beyond [`Limits::nodes`].
    fn count(&mut self, at: usize) -> Result<(), WbxmlError> {
        self.nodes += 1;
        if self.nodes > self.limits.nodes {
            Err(WbxmlError::TooManyNodes {
                at,
                limit: self.limits.nodes,
            })
        } else {
            Ok(())
        }
    }

    /// Adds a finished element to the open one, or makes it the root.
    fn attach(&mut self, element: Element) {
        match self.stack.last_mut() {
            Some(parent) => parent.children.push(Node::Element(element)),
            None => self.root = Some(element),
        }
    }

    fn end(&mut self, at: usize) -> Result<(), WbxmlError> {
        let done = self.stack.pop().ok_or(WbxmlError::Structure {
            at,
            why: "END with no element open",
        })?;
        self.attach(done);
        Ok(())
    }

    fn text(&mut self, at: usize, text: std::borrow::Cow<'_, str>) -> Result<(), WbxmlError> {
        let limit = self.limits.string;
        if self.stack.is_empty() {
            return Err(WbxmlError::Structure {
                at,
                why: "text outside the root element",
            });
        }
        // Adjacent pieces (a string, then an entity, then a string) are one text.
        let joins = matches!(
            self.stack.last().and_then(|p| p.children.last()),
            Some(Node::Text(_))
        );
        if !joins {
            self.count(at)?;
        }
        let parent = self.stack.last_mut().ok_or(WbxmlError::Structure {
            at,
            why: "text outside the root element",
        })?;
        match parent.children.last_mut() {
            Some(Node::Text(prev)) if joins => {
                let len = prev.len().saturating_add(text.len());
                if len > limit {
                    return Err(WbxmlError::StringTooLong { at, len, limit });
                }
                prev.push_str(&text);
            }
            _ => parent.children.push(Node::Text(text.into_owned())),
        }
        Ok(())
    }

    fn opaque(&mut self, at: usize, data: &[u8]) -> Result<(), WbxmlError> {
        self.count(at)?;
        let parent = self.stack.last_mut().ok_or(WbxmlError::Structure {
            at,
            why: "opaque data outside the root element",
        })?;
        parent.children.push(Node::Opaque(data.to_vec()));
        Ok(())
    }

    fn tag(&mut self, at: usize, token: u8) -> Result<(), WbxmlError> {
        self.count(at)?;
        let element = Element::new(Tag::new(self.page, token & 0x3F));
        if token & HAS_CONTENT != 0 {
            if self.stack.len() >= self.limits.depth {
                return Err(WbxmlError::TooDeep {
                    at,
                    limit: self.limits.depth,
                });
            }
            self.stack.push(element);
        } else {
            self.attach(element);
        }
        Ok(())
    }

    fn finish(self, at: usize) -> Result<Element, WbxmlError> {
        match self.root {
            Some(root) => Ok(root),
            None if self.stack.is_empty() => Err(WbxmlError::Structure {
                at,
                why: "no root element",
            }),
            None => Err(WbxmlError::Truncated {
                at,
                what: "the document (elements still open)",
            }),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::super::codepages::{airsync, airsyncbase, composemail, folderhierarchy};
    use super::*;

    #[test]
    fn folder_sync_encodes_as_exchange_does() {
        let fs = Element::new(folderhierarchy::FolderSync)
            .with(Element::text(folderhierarchy::SyncKey, "0"));
        let bytes = encode(&fs, 64).expect("encodes");
        assert_eq!(
            bytes,
            [0x03, 0x01, 0x6A, 0x00, 0x00, 0x07, 0x56, 0x52, 0x03, b'0', 0x00, 0x01, 0x01]
        );
        assert_eq!(decode(&bytes, &Limits::default()), Ok(fs));
    }

    #[test]
    fn pages_switch_only_when_they_change() {
        let sync = Element::new(airsync::Sync).with(
            Element::new(airsync::Options)
                .with(
                    Element::new(airsyncbase::BodyPreference)
                        .with(Element::text(airsyncbase::Type, "2")),
                )
                .with(Element::new(airsync::MIMESupport)),
        );
        let bytes = encode(&sync, 64).expect("encodes");
        assert_eq!(
            &bytes[4..],
            [
                0x45, 0x57, 0x00, 0x11, 0x45, 0x46, 0x03, b'2', 0x00, 0x01, 0x01, 0x00, 0x00, 0x22,
                0x01, 0x01
            ]
        );
        assert_eq!(decode(&bytes, &Limits::default()), Ok(sync));
    }

    #[test]
    fn opaque_and_integers() {
        let body = vec![b'x'; 300];
        let mail = Element::opaque(composemail::MIME, body.clone());
        let bytes = encode(&mail, 64).expect("encodes");
        // 300 = 0b10_0101100: 0x82 0x2C.
        assert_eq!(&bytes[4..10], [0x00, 0x15, 0x50, 0xC3, 0x82, 0x2C]);
        assert_eq!(decode(&bytes, &Limits::default()), Ok(mail));
        let mut v = Vec::new();
        put_mb_u32(&mut v, u32::MAX);
        assert_eq!(v, [0x8F, 0xFF, 0xFF, 0xFF, 0x7F]);
        let mut r = Reader { bytes: &v, pos: 0 };
        assert_eq!(r.mb_u32("x"), Ok(u32::MAX));
        let mut r = Reader {
            bytes: &[0x90, 0x80, 0x80, 0x80, 0x00],
            pos: 0,
        };
        assert_eq!(r.mb_u32("x"), Err(WbxmlError::Integer { at: 0 }));
    }

    #[test]
    fn string_tables_entities_and_pieces_join() {
        // Header with a 4-byte string table "ab\0\0"; <SyncKey> STR_T 0, ENTITY 'c', STR_I "d".
        let doc = [
            0x03, 0x01, 0x6A, 0x04, b'a', b'b', 0, 0, 0x00, 0x07, 0x52, 0x83, 0x00, 0x02, 0x63,
            0x03, b'd', 0x00, 0x01,
        ];
        let e = decode(&doc, &Limits::default()).expect("decodes");
        assert_eq!(e, Element::text(folderhierarchy::SyncKey, "abcd"));
        let bad = [0x03, 0x01, 0x6A, 0x00, 0x52, 0x83, 0x09, 0x01];
        assert!(matches!(
            decode(&bad, &Limits::default()),
            Err(WbxmlError::StringTable { offset: 9, .. })
        ));
    }

    #[test]
    fn bounds_and_structure_are_enforced() {
        let l = Limits {
            input: 1000,
            depth: 2,
            string: 4,
            nodes: 3,
        };
        let deep = [0x03, 0x01, 0x6A, 0x00, 0x45, 0x45, 0x45, 0x01, 0x01, 0x01];
        assert_eq!(
            decode(&deep, &l),
            Err(WbxmlError::TooDeep { at: 6, limit: 2 })
        );
        let long = [
            0x03, 0x01, 0x6A, 0x00, 0x45, 0x03, b'a', b'b', b'c', b'd', b'e', 0, 0x01,
        ];
        assert!(matches!(
            decode(&long, &l),
            Err(WbxmlError::StringTooLong { len: 5, .. })
        ));
        let many = [0x03, 0x01, 0x6A, 0x00, 0x45, 0x05, 0x05, 0x05, 0x01];
        assert!(matches!(
            decode(&many, &l),
            Err(WbxmlError::TooManyNodes { limit: 3, .. })
        ));
        let big = vec![0u8; 1001];
        assert!(matches!(
            decode(&big, &l),
            Err(WbxmlError::InputTooLarge { .. })
        ));
        let open = [0x03, 0x01, 0x6A, 0x00, 0x45, 0x45, 0x01];
        assert!(matches!(
            decode(&open, &l),
            Err(WbxmlError::Truncated { .. })
        ));
        let two_roots = [0x03, 0x01, 0x6A, 0x00, 0x05, 0x05];
        assert!(matches!(
            decode(&two_roots, &l),
            Err(WbxmlError::Structure { at: 5, .. })
        ));
        let attrs = [0x03, 0x01, 0x6A, 0x00, 0xC5, 0x01];
        assert!(matches!(
            decode(&attrs, &l),
            Err(WbxmlError::Unsupported { token: 0xC5, .. })
        ));
        assert!(matches!(
            decode(&[0x03, 0x01, 0x6A, 0x00], &l),
            Err(WbxmlError::Structure { .. })
        ));
        assert!(matches!(
            decode(&[0x03, 0x01, 0x04, 0x00, 0x05], &l),
            Err(WbxmlError::Charset { charset: 4 })
        ));
        let nul = Element::text(airsync::SyncKey, "a\0b");
        assert!(matches!(encode(&nul, 4), Err(WbxmlError::NulInText { .. })));
        let nested = Element::new(airsync::Sync)
            .with(Element::new(airsync::Collections).with(Element::new(airsync::Collection)));
        assert_eq!(
            encode(&nested, 2),
            Err(WbxmlError::EncodeTooDeep { limit: 2 })
        );
    }

    #[test]
    fn xml_view() {
        let sync = Element::new(airsync::Sync).with(
            Element::new(airsyncbase::BodyPreference).with(Element::text(airsyncbase::Type, "a<b")),
        );
        assert_eq!(
            sync.to_xml(),
            "<Sync xmlns=\"AirSync:\"><BodyPreference xmlns=\"AirSyncBase:\"><Type>a&lt;b</Type></BodyPreference></Sync>"
        );
    }
}
