//! The crate's modules form no circle (issue 26): each module's uses of `crate::<module>` (in
//! code, not comments) are its edges, and following them never leads back. A circle means two
//! modules are one in all but name; the fix is to move what both need into a module of its own
//! (as `folder` holds what `report` reads and `export` writes).

use std::collections::BTreeMap;
use std::path::Path;

/// Module (the first path component under src/) -> the modules it names.
fn edges(src: &Path) -> BTreeMap<String, Vec<String>> {
    let mut files = Vec::new();
    let mut dirs = vec![src.to_path_buf()];
    while let Some(d) = dirs.pop() {
        for e in std::fs::read_dir(&d).unwrap_or_else(|e| panic!("{}: {e}", d.display())) {
            let p = e.expect("entry").path();
            if p.is_dir() {
                dirs.push(p);
            } else if p.extension().is_some_and(|x| x == "rs") {
                files.push(p);
            }
        }
    }
    let module = |p: &Path| -> String {
        let rel = p.strip_prefix(src).expect("under src");
        let first = rel.components().next().expect("a file");
        first
            .as_os_str()
            .to_string_lossy()
            .trim_end_matches(".rs")
            .to_string()
    };
    let mut graph: BTreeMap<String, Vec<String>> = BTreeMap::new();
    for f in &files {
        let m = module(f);
        if m == "lib" || m == "main" {
            continue;
        }
        graph.entry(m).or_default();
    }
    for f in &files {
        let m = module(f);
        if !graph.contains_key(&m) {
            continue;
        }
        let text = std::fs::read_to_string(f).expect("source");
        for line in text.lines() {
            let code = line.split("//").next().unwrap_or("");
            for (i, _) in code.match_indices("crate::") {
                let name: String = code[i + "crate::".len()..]
                    .chars()
                    .take_while(|c| c.is_alphanumeric() || *c == '_')
                    .collect();
                if name != m && graph.contains_key(&name) {
                    let to = graph.get_mut(&m).expect("module");
                    if !to.contains(&name) {
                        to.push(name);
                    }
                }
            }
        }
    }
    graph
}

/// A circle of modules, if there is one.
fn circle(graph: &BTreeMap<String, Vec<String>>) -> Option<Vec<String>> {
    fn visit(
        m: &str,
        graph: &BTreeMap<String, Vec<String>>,
        path: &mut Vec<String>,
        done: &mut Vec<String>,
    ) -> Option<Vec<String>> {
        if let Some(at) = path.iter().position(|p| p == m) {
            let mut c = path[at..].to_vec();
            c.push(m.to_string());
            return Some(c);
        }
        if done.iter().any(|d| d == m) {
            return None;
        }
        path.push(m.to_string());
        for n in graph.get(m).into_iter().flatten() {
            if let Some(c) = visit(n, graph, path, done) {
                return Some(c);
            }
        }
        path.pop();
        done.push(m.to_string());
        None
    }
    let mut done = Vec::new();
    graph
        .keys()
        .find_map(|m| visit(m, graph, &mut Vec::new(), &mut done))
}

#[test]
fn the_modules_of_mbx_report_form_no_circle() {
    let graph = edges(&Path::new(env!("CARGO_MANIFEST_DIR")).join("src"));
    // The check sees the edges it should: report writes through export, export renders html.
    assert!(graph["report"].contains(&"export".to_string()), "{graph:?}");
    assert!(graph["export"].contains(&"html".to_string()), "{graph:?}");
    if let Some(c) = circle(&graph) {
        panic!("module circle: {}\n{graph:#?}", c.join(" -> "));
    }
}

/// The check finds a circle where there is one.
#[test]
fn a_circle_is_found() {
    let g: BTreeMap<String, Vec<String>> = [
        ("a", vec!["b"]),
        ("b", vec!["c"]),
        ("c", vec!["a"]),
        ("d", vec![]),
    ]
    .into_iter()
    .map(|(k, v)| (k.to_string(), v.into_iter().map(String::from).collect()))
    .collect();
    assert_eq!(
        circle(&g).map(|c| c.join(" -> ")),
        Some("a -> b -> c -> a".to_string())
    );
}
