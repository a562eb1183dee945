//! No module circles in any crate of the workspace (issue 26 item 6): the top-level modules of each
//! crate, with the crate root, depend on each other as a directed acyclic graph. The same rules
//! as `scripts/modcycles.py` (which lists the circles of every crate): an edge a -> b is a path
//! naming b from a's code (`crate::b`, `crate::{b, ..}`, `super::` resolved from the file's
//! place, a bare `b::` in the root, an item the root re-exports from b); the root's `use` lines
//! are re-exports, and test code (tests.rs files, a trailing `#[cfg(test)] mod tests`) is left
//! out.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

const ROOT: &str = "<root>";

fn rust_files(dir: &Path, out: &mut Vec<PathBuf>) {
    for entry in std::fs::read_dir(dir).expect("read_dir") {
        let path = entry.expect("entry").path();
        if path.is_dir() {
            rust_files(&path, out);
        } else if path.extension().is_some_and(|e| e == "rs") {
            out.push(path);
        }
    }
}

/// The code of a file: comments and a trailing test module left out.
fn code(text: &str) -> String {
    let lines: Vec<&str> = text.lines().collect();
    let mut out = String::new();
    for (i, line) in lines.iter().enumerate() {
        let next = lines.get(i + 1).map_or("", |l| l.trim());
        if line.trim() == "#[cfg(test)]" && next.starts_with("mod tests") {
            break;
        }
        out.push_str(line.split("//").next().unwrap_or(""));
        out.push('\n');
    }
    out
}

fn ident(s: &str) -> &str {
    let end = s
        .find(|c: char| !(c.is_alphanumeric() || c == '_'))
        .unwrap_or(s.len());
    &s[..end]
}

/// The first segment of each entry of the brace group `s` starts with.
fn group_heads(s: &str) -> Vec<String> {
    let mut heads = Vec::new();
    let (mut depth, mut expect) = (0, true);
    let mut chars = s.char_indices().peekable();
    while let Some((i, c)) = chars.next() {
        match c {
            '{' => {
                depth += 1;
                expect = depth == 1;
            }
            '}' => {
                depth -= 1;
                if depth == 0 {
                    break;
                }
            }
            ',' if depth == 1 => expect = true,
            c if expect && depth == 1 && (c.is_alphanumeric() || c == '_') => {
                let id = ident(&s[i..]);
                heads.push(id.to_string());
                for _ in 1..id.chars().count() {
                    chars.next();
                }
                expect = false;
            }
            _ => {}
        }
    }
    heads
}

/// The first path segments named after `prefix` (e.g. "crate::") in `text`.
fn heads_after(text: &str, prefix: &str) -> Vec<String> {
    let mut heads = Vec::new();
    for (at, _) in text.match_indices(prefix) {
        let before = text[..at].chars().next_back();
        if before.is_some_and(|c| c.is_alphanumeric() || c == '_' || c == ':') {
            continue;
        }
        let rest = &text[at + prefix.len()..];
        if rest.starts_with('{') {
            heads.extend(group_heads(rest));
        } else if !ident(rest).is_empty() {
            heads.push(ident(rest).to_string());
        }
    }
    heads
}

/// Module dependency edges of the crate whose sources are in `src`.
fn edges(src: &Path) -> BTreeMap<String, BTreeSet<String>> {
    let mut files = Vec::new();
    rust_files(src, &mut files);
    let rel = |p: &Path| -> Vec<String> {
        p.strip_prefix(src)
            .expect("under src")
            .iter()
            .map(|s| s.to_string_lossy().trim_end_matches(".rs").to_string())
            .collect()
    };
    let modules: BTreeSet<String> = files
        .iter()
        .map(|p| rel(p))
        .filter(|r| r[0] != "lib" && r[0] != "main")
        .map(|r| r[0].clone())
        .collect();
    // The crate root: lib.rs, or main.rs for the binary.
    let root_file = if src.join("lib.rs").is_file() {
        src.join("lib.rs")
    } else {
        src.join("main.rs")
    };
    let root_text = code(&std::fs::read_to_string(&root_file).expect("the crate root"));
    // Items the root re-exports: name -> module.
    let mut reexported = BTreeMap::new();
    for part in root_text.split("pub use ").skip(1) {
        let stmt = part.split(';').next().unwrap_or("");
        let module = ident(stmt).to_string();
        if !modules.contains(&module) {
            continue;
        }
        for name in stmt[module.len()..]
            .split(|c: char| !(c.is_alphanumeric() || c == '_'))
            .filter(|s| !s.is_empty() && *s != "as" && *s != "self")
        {
            reexported.insert(name.to_string(), module.clone());
        }
    }
    let target = |head: &str| -> Option<String> {
        if modules.contains(head) {
            Some(head.to_string())
        } else if let Some(m) = reexported.get(head) {
            Some(m.clone())
        } else if ["self", "super", "crate"].contains(&head) {
            None
        } else {
            Some(ROOT.to_string())
        }
    };
    let mut graph: BTreeMap<String, BTreeSet<String>> = modules
        .iter()
        .map(|m| (m.clone(), BTreeSet::new()))
        .collect();
    graph.insert(ROOT.into(), BTreeSet::new());
    for file in &files {
        let r = rel(file);
        if r.last().is_some_and(|l| l == "tests") || r[..r.len() - 1].contains(&"tests".into()) {
            continue;
        }
        let mut text = code(&std::fs::read_to_string(file).expect("read"));
        let (node, path) = if r[0] == "lib" {
            // The root's `use` lines are re-exports, not dependencies.
            let mut kept = String::new();
            let mut rest = text.as_str();
            while let Some(at) = rest.find("use ") {
                let word_start = at == 0 || !rest[..at].ends_with(|c: char| c.is_alphanumeric());
                if !word_start {
                    kept.push_str(&rest[..at + 4]);
                    rest = &rest[at + 4..];
                    continue;
                }
                kept.push_str(&rest[..at]);
                rest = rest[at..].split_once(';').map_or("", |(_, after)| after);
            }
            kept.push_str(rest);
            text = kept;
            (ROOT.to_string(), Vec::new())
        } else {
            let mut path = r.clone();
            if path.last().is_some_and(|l| l == "mod") {
                path.pop();
            }
            (r[0].clone(), path)
        };
        let mut heads = heads_after(&text, "crate::");
        // `super::` from a file at depth d: one level up per `super`.
        for (at, _) in text.match_indices("super::") {
            if text[..at].ends_with("super::") {
                continue;
            }
            let mut ups = 0;
            while text[at + ups * "super::".len()..].starts_with("super::") {
                ups += 1;
            }
            let base_len = path.len().saturating_sub(ups);
            let after = &text[at + ups * "super::".len()..];
            if base_len > 0 {
                heads.push(path[0].clone());
            } else if after.starts_with('{') {
                heads.extend(group_heads(after));
            } else if !ident(after).is_empty() {
                heads.push(ident(after).to_string());
            }
        }
        if node == ROOT {
            // In the root, a module is named without `crate::`.
            for m in &modules {
                if !heads_after(&text, &format!("{m}::")).is_empty() {
                    heads.push(m.clone());
                }
            }
        }
        for h in heads {
            if let Some(t) = target(&h) {
                if t != node {
                    graph.get_mut(&node).expect("node").insert(t);
                }
            }
        }
    }
    graph
}

/// A circle of `graph`, if it has one.
fn circle(graph: &BTreeMap<String, BTreeSet<String>>) -> Option<Vec<String>> {
    fn visit(
        v: &str,
        graph: &BTreeMap<String, BTreeSet<String>>,
        state: &mut BTreeMap<String, u8>,
        stack: &mut Vec<String>,
    ) -> Option<Vec<String>> {
        state.insert(v.to_string(), 1);
        stack.push(v.to_string());
        for w in &graph[v] {
            match state.get(w).copied().unwrap_or(0) {
                1 => {
                    let from = stack.iter().position(|s| s == w).unwrap_or(0);
                    let mut c = stack[from..].to_vec();
                    c.push(w.clone());
                    return Some(c);
                }
                0 => {
                    if let Some(c) = visit(w, graph, state, stack) {
                        return Some(c);
                    }
                }
                _ => {}
            }
        }
        stack.pop();
        state.insert(v.to_string(), 2);
        None
    }
    let mut state = BTreeMap::new();
    for v in graph.keys() {
        if state.get(v).copied().unwrap_or(0) == 0 {
            if let Some(c) = visit(v, graph, &mut state, &mut Vec::new()) {
                return Some(c);
            }
        }
    }
    None
}

#[test]
fn no_crate_has_a_module_circle() {
    let crates = Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
    for name in [
        "mbx-app",
        "mbx-config",
        "mbx-engine",
        "mbx-io",
        "mbx-loadgen",
        "mbx-report",
        "mbx-result",
        "mbx-sizing",
        "mbx-store",
        "mbxstress",
    ] {
        let graph = edges(&crates.join(name).join("src"));
        assert!(graph.len() > 3, "{name}: modules not found: {graph:?}");
        if let Some(c) = circle(&graph) {
            panic!("{name}: module circle {}", c.join(" -> "));
        }
    }
}

#[test]
fn the_check_finds_a_circle() {
    // Not vacuous: two modules naming each other are found.
    let dir = tempfile::tempdir().expect("tempdir");
    let src = dir.path();
    std::fs::write(
        src.join("lib.rs"),
        "mod a;\nmod b;\nmod c;\nmod d;\nmod e;\nmod f;\n",
    )
    .expect("lib");
    std::fs::write(src.join("a.rs"), "use crate::b::B;\npub struct A;\n").expect("a");
    std::fs::write(src.join("b.rs"), "pub struct B(crate::{c::C, a::A});\n").expect("b");
    for m in ["c", "d", "e", "f"] {
        std::fs::write(src.join(format!("{m}.rs")), "pub struct C;\n").expect("m");
    }
    let graph = edges(src);
    let c = circle(&graph).expect("the circle a -> b -> a");
    assert!(
        c.contains(&"a".to_string()) && c.contains(&"b".to_string()),
        "{c:?}"
    );
}
