#!/usr/bin/env python3
"""Module circles inside each crate: which top-level modules depend on each other in a circle.

Usage: scripts/modcycles.py [crates/NAME ...]    (default: every crate under crates/)
Exit status 1 when a crate has a circle, 0 otherwise.

How it decides (an approximation of `cargo modules dependencies --acyclic`, without building):
- A node is a top-level module of a crate (src/x.rs or src/x/**), plus the crate root
  (lib.rs or main.rs) as "<root>".
- An edge a -> b is a path that names b from a's code: `crate::b::...`, `crate::{b::..}`,
  `super::...` resolved from the file's place, and in the root a bare `b::...`.
- `crate::Item` where Item is re-exported by the root (`pub use b::Item` / `pub use b::{Item}`)
  counts as an edge to b; an item the root defines itself is an edge to <root>.
- The root's own `pub use`/`use` lines are re-exports, not dependencies; `mod` lines are not edges.
- Test code is left out: files named tests.rs or under tests/ inside src, and everything from a
  `#[cfg(test)]` line followed by `mod tests` to the end of the file.
- Comments (// ...) are left out.
Circles are the strongly connected components of more than one node.
"""

import os
import re
import sys

IDENT = r"[A-Za-z_][A-Za-z0-9_]*"


def strip(text):
    lines = text.split("\n")
    out = []
    for i, line in enumerate(lines):
        s = line.strip()
        if s.startswith("#[cfg(test)]"):
            nxt = lines[i + 1].strip() if i + 1 < len(lines) else ""
            if re.match(r"(pub(\(crate\))? )?mod tests\b", nxt):
                break
        out.append(re.sub(r"//.*", "", line))
    return "\n".join(out)


def group_heads(text, start):
    """The first path segment of each entry of the brace group opening at text[start] == '{'."""
    depth, i, heads, tok = 0, start, [], ""
    expect = True
    while i < len(text):
        c = text[i]
        if c == "{":
            depth += 1
            if depth == 1:
                expect = True
            i += 1
            continue
        if c == "}":
            depth -= 1
            if depth == 0:
                break
        elif c == "," and depth == 1:
            expect = True
        elif expect and depth == 1 and (c.isalnum() or c == "_"):
            m = re.match(IDENT, text[i:])
            heads.append(m.group(0))
            i += len(m.group(0))
            expect = False
            continue
        i += 1
    return heads


def root_reexports(root_text):
    """item name -> module it comes from, from the root's `pub use m::...` lines."""
    reexp = {}
    for m in re.finditer(r"\bpub use (" + IDENT + r")::([^;]*);", root_text, re.S):
        module, rest = m.group(1), m.group(2).strip()
        names = re.findall(r"(?:\bas\s+)?(" + IDENT + r")\s*(?=[,}]|$)", rest)
        for n in names:
            reexp[n] = module
    return reexp


def analyse(crate_dir):
    src = os.path.join(crate_dir, "src")
    root_file = "lib.rs" if os.path.exists(os.path.join(src, "lib.rs")) else "main.rs"
    files = []
    for dirpath, _, names in os.walk(src):
        for n in names:
            if n.endswith(".rs"):
                files.append(os.path.relpath(os.path.join(dirpath, n), src))
    modules = set()
    for f in files:
        if f == root_file:
            continue
        head = f.split(os.sep)[0]
        modules.add(head[:-3] if head.endswith(".rs") else head)
    root_text = strip(open(os.path.join(src, root_file), encoding="utf-8").read())
    reexp = root_reexports(root_text)

    def target(head):
        if head in modules:
            return head
        if head in reexp and reexp[head] in modules:
            return reexp[head]
        if head in ("self", "super", "crate"):
            return None
        return "<root>"

    edges = {m: set() for m in modules | {"<root>"}}
    for f in files:
        parts = f.split(os.sep)
        if parts[-1] == "tests.rs" or "tests" in parts[:-1]:
            continue
        text = strip(open(os.path.join(src, f), encoding="utf-8").read())
        if f == root_file:
            node = "<root>"
            modpath = []
            # Re-exports and imports of the root are not its dependencies.
            text = re.sub(r"\b(pub(\([a-z]+\))? )?use [^;]*;", "", text, flags=re.S)
        else:
            node = parts[0][:-3] if parts[0].endswith(".rs") else parts[0]
            modpath = [p[:-3] if p.endswith(".rs") else p for p in parts]
            if modpath[-1] == "mod":
                modpath = modpath[:-1]
        heads = []
        for m in re.finditer(r"\bcrate::", text):
            rest = text[m.end():]
            if rest.startswith("{"):
                heads += group_heads(text, m.end())
            else:
                im = re.match(IDENT, rest)
                if im:
                    heads.append(im.group(0))
        for m in re.finditer(r"\b((?:super::)+)", text):
            ups = m.group(1).count("super::")
            base = modpath[: len(modpath) - 1 - (ups - 1)] if len(modpath) >= ups else []
            rest = text[m.end():]
            if base:
                heads.append(base[0])
            elif rest.startswith("{"):
                heads += group_heads(text, m.end())
            else:
                im = re.match(IDENT, rest)
                if im:
                    heads.append(im.group(0))
        if node == "<root>":
            for mod in modules:
                if re.search(r"(?<![:\w])" + mod + r"::", text):
                    heads.append(mod)
        for h in heads:
            t = target(h)
            if t and t != node:
                edges[node].add(t)
    return edges


def sccs(edges):
    index, low, stack, on, out, counter = {}, {}, [], set(), [], [0]

    def visit(v):
        index[v] = low[v] = counter[0]
        counter[0] += 1
        stack.append(v)
        on.add(v)
        for w in sorted(edges[v]):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on.discard(w)
                comp.append(w)
                if w == v:
                    break
            out.append(sorted(comp))

    sys.setrecursionlimit(10000)
    for v in sorted(edges):
        if v not in index:
            visit(v)
    return [c for c in out if len(c) > 1]


def main():
    here = os.path.dirname(os.path.abspath(__file__))
    top = os.path.dirname(here)
    crates = sys.argv[1:] or sorted(
        os.path.join(top, "crates", c) for c in os.listdir(os.path.join(top, "crates"))
    )
    bad = False
    for c in crates:
        edges = analyse(c)
        circles = sccs(edges)
        name = os.path.basename(os.path.normpath(c))
        if not circles:
            print(f"{name}: no module circle")
        for comp in circles:
            bad = True
            print(f"{name}: circle {{{', '.join(comp)}}}")
            for a in comp:
                inside = sorted(b for b in edges[a] if b in comp)
                print(f"    {a} -> {', '.join(inside)}")
    sys.exit(1 if bad else 0)


if __name__ == "__main__":
    main()
