//! The WBXML codec against libwbxml (Debian's libwbxml2-utils): for every MS-ASCMD example in
//! tests/eas/fixtures, our encoding of the XML equals `xml2wbxml`'s bytes, `wbxml2xml` reads
//! ours back to the same tree, and our decoder reads ours back too. Then properties: any tree
//! round-trips, and random bytes never panic the decoder nor get past its bounds.
//!
//! The libwbxml test fails, naming the package, when its tools are missing; only
//! MBX_ALLOW_NO_LIBWBXML=1 (which CI does not set: .ci/run installs the package) turns that into
//! a note on stderr.

use std::path::{Path, PathBuf};
use std::process::Command;

use base64::engine::general_purpose::STANDARD as B64;
use base64::Engine as _;
use mbx_loadgen::eas::{decode, encode, Element, Limits, Node, Tag, WbxmlError};
use proptest::prelude::*;
use quick_xml::events::Event;
use quick_xml::name::ResolveResult;
use quick_xml::NsReader;

fn fixtures() -> Vec<PathBuf> {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/eas/fixtures");
    let mut v: Vec<PathBuf> = std::fs::read_dir(&dir)
        .expect("tests/eas/fixtures")
        .map(|e| e.expect("entry").path())
        .filter(|p| p.extension().is_some_and(|e| e == "xml"))
        .collect();
    v.sort();
    v
}

/// An XML document (as libwbxml reads it: namespaces name the code pages, whitespace-only
/// text ignored, the text of opaque elements is their bytes in base64) as our tree.
fn xml_tree(xml: &str) -> Element {
    let mut r = NsReader::from_str(xml);
    r.config_mut().trim_text(true);
    let mut stack: Vec<Element> = Vec::new();
    loop {
        let (ns, ev) = r.read_resolved_event().expect("well-formed XML");
        let tag_of = |ns: &ResolveResult, local: &[u8]| {
            let ResolveResult::Bound(n) = ns else {
                panic!(
                    "element {} has no namespace",
                    String::from_utf8_lossy(local)
                )
            };
            let ns = std::str::from_utf8(n.as_ref()).expect("UTF-8 namespace");
            let name = std::str::from_utf8(local).expect("UTF-8 name");
            Tag::by_name(ns, name).unwrap_or_else(|| panic!("unknown tag {ns}{name}"))
        };
        match ev {
            Event::Start(s) => stack.push(Element::new(tag_of(&ns, s.local_name().as_ref()))),
            Event::Empty(s) => {
                let e = Element::new(tag_of(&ns, s.local_name().as_ref()));
                match stack.last_mut() {
                    Some(p) => p.children.push(Node::Element(e)),
                    None => return e,
                }
            }
            Event::End(_) => {
                let e = stack.pop().expect("balanced");
                match stack.last_mut() {
                    Some(p) => p.children.push(Node::Element(e)),
                    None => return e,
                }
            }
            Event::Text(t) => {
                let text = t.unescape().expect("text").into_owned();
                let p = stack.last_mut().expect("text inside the root");
                if p.tag.is_opaque() {
                    let bytes = B64
                        .decode(text.trim())
                        .expect("base64 in an opaque element");
                    p.children.push(Node::Opaque(bytes));
                } else {
                    p.children.push(Node::Text(text));
                }
            }
            Event::Eof => panic!("no root element"),
            _ => {}
        }
    }
}

fn tool(name: &str) -> Option<PathBuf> {
    std::env::var_os("PATH").and_then(|paths| {
        std::env::split_paths(&paths)
            .map(|p| p.join(name))
            .find(|p| p.is_file())
    })
}

fn hex(b: &[u8]) -> String {
    b.iter()
        .map(|x| format!("{x:02x}"))
        .collect::<Vec<_>>()
        .join(" ")
}

#[test]
fn fixtures_round_trip_and_match_libwbxml() {
    let (Some(x2w), Some(w2x)) = (tool("xml2wbxml"), tool("wbxml2xml")) else {
        let allowed = std::env::var_os("MBX_ALLOW_NO_LIBWBXML").is_some_and(|v| v == "1");
        assert!(
            allowed,
            "xml2wbxml and wbxml2xml are missing: install the Debian package libwbxml2-utils \
             (apt-get install libwbxml2-utils), or set MBX_ALLOW_NO_LIBWBXML=1 to run without \
             the comparison"
        );
        eprintln!("NOT COMPARED with libwbxml (MBX_ALLOW_NO_LIBWBXML=1): libwbxml2-utils is not installed");
        for f in fixtures() {
            let tree = xml_tree(&std::fs::read_to_string(&f).expect("fixture"));
            let ours = encode(&tree, 64).expect("encodes");
            assert_eq!(decode(&ours, &Limits::default()).as_ref(), Ok(&tree));
        }
        return;
    };
    let scratch = tempfile::tempdir().expect("scratch folder");
    let files = fixtures();
    assert!(files.len() >= 10, "the MS-ASCMD examples are there");
    for f in files {
        let name = f.file_stem().expect("name").to_string_lossy().into_owned();
        let tree = xml_tree(&std::fs::read_to_string(&f).expect("fixture"));
        let ours = encode(&tree, 64).expect("encodes");
        assert_eq!(
            decode(&ours, &Limits::default()).as_ref(),
            Ok(&tree),
            "{name}: our decoder reads our encoding back"
        );
        // libwbxml's encoding: ActiveSync header (-a: no public id string, so 03 01 6A),
        // no string table (-n), WBXML 1.3.
        let theirs_path = scratch.path().join(format!("{name}.libwbxml"));
        let out = Command::new(&x2w)
            .args(["-a", "-n", "-v", "1.3", "-o"])
            .arg(&theirs_path)
            .arg(&f)
            .output()
            .expect("runs xml2wbxml");
        assert!(
            out.status.success(),
            "{name}: xml2wbxml failed: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        let theirs = std::fs::read(&theirs_path).expect("xml2wbxml's output");
        assert_eq!(
            hex(&ours),
            hex(&theirs),
            "{name}: our bytes (left) and libwbxml's (right)"
        );
        // libwbxml decodes ours to the same tree.
        let ours_path = scratch.path().join(format!("{name}.ours"));
        std::fs::write(&ours_path, &ours).expect("writes");
        let xml_path = scratch.path().join(format!("{name}.xml"));
        let out = Command::new(&w2x)
            .args(["-l", "ACTIVESYNC", "-m", "0", "-o"])
            .arg(&xml_path)
            .arg(&ours_path)
            .output()
            .expect("runs wbxml2xml");
        assert!(
            out.status.success(),
            "{name}: wbxml2xml failed: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        let back = std::fs::read_to_string(&xml_path).expect("wbxml2xml's output");
        assert_eq!(
            xml_tree(&back),
            tree,
            "{name}: wbxml2xml read our bytes as\n{back}"
        );
    }
}

/// Trees of known tags, text without NUL, opaque runs, at most 6 deep.
fn tree() -> impl Strategy<Value = Element> {
    let tag = (0u8..26, 0x05u8..0x40).prop_map(|(p, t)| Tag::new(p, t));
    let leaf = prop_oneof![
        tag.clone().prop_map(Element::new),
        (tag.clone(), "[^\u{0}]{1,20}").prop_map(|(t, s)| Element::text(t, s)),
        (tag.clone(), proptest::collection::vec(any::<u8>(), 0..40))
            .prop_map(|(t, b)| Element::opaque(t, b)),
    ];
    leaf.prop_recursive(6, 64, 6, move |inner| {
        (tag.clone(), proptest::collection::vec(inner, 1..6)).prop_map(|(t, children)| Element {
            tag: t,
            children: children.into_iter().map(Node::Element).collect(),
        })
    })
}

fn depth(e: &Element) -> usize {
    1 + e.elements().map(depth).max().unwrap_or(0)
}

fn nodes(e: &Element) -> usize {
    e.children
        .iter()
        .map(|n| match n {
            Node::Element(c) => nodes(c),
            _ => 1,
        })
        .sum::<usize>()
        + 1
}

fn longest(e: &Element) -> usize {
    e.children
        .iter()
        .map(|n| match n {
            Node::Element(c) => longest(c),
            Node::Text(s) => s.len(),
            Node::Opaque(b) => b.len(),
        })
        .max()
        .unwrap_or(0)
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(512))]

    #[test]
    fn any_tree_round_trips(t in tree()) {
        let bytes = encode(&t, 64).expect("encodes");
        prop_assert_eq!(decode(&bytes, &Limits::default()), Ok(t));
    }

    #[test]
    fn random_bytes_never_panic_and_stay_in_bounds(
        body in proptest::collection::vec(any::<u8>(), 0..400),
        header in any::<bool>(),
    ) {
        let limits = Limits { input: 300, depth: 5, string: 16, nodes: 40 };
        // Half the cases behind a valid header, so the body parser is reached.
        let mut input = if header { vec![0x03, 0x01, 0x6A, 0x00] } else { Vec::new() };
        input.extend_from_slice(&body);
        match decode(&input, &limits) {
            Ok(root) => {
                prop_assert!(input.len() <= limits.input);
                prop_assert!(depth(&root) <= limits.depth, "depth {}", depth(&root));
                prop_assert!(nodes(&root) <= limits.nodes, "nodes {}", nodes(&root));
                prop_assert!(longest(&root) <= limits.string);
            }
            Err(WbxmlError::InputTooLarge { len, .. }) => prop_assert!(len > limits.input),
            Err(e) => {
                // Every error names where it was found, inside the input.
                let _ = e.to_string();
            }
        }
    }
}

#[test]
fn mutated_fixtures_never_panic() {
    // Every fixture's encoding with each byte replaced by a few values, and every truncation.
    let limits = Limits::default();
    for f in fixtures() {
        let tree = xml_tree(&std::fs::read_to_string(&f).expect("fixture"));
        let bytes = encode(&tree, 64).expect("encodes");
        for i in 0..bytes.len() {
            let _ = decode(&bytes[..i], &limits);
            for v in [0x00, 0x01, 0x03, 0x45, 0x83, 0xC3, 0xFF] {
                let mut m = bytes.clone();
                m[i] = v;
                let _ = decode(&m, &limits);
            }
        }
        assert!(decode(&bytes[..bytes.len() - 1], &limits).is_err());
    }
}
