#!/usr/bin/env python3
"""Module and file circles inside each crate: which top-level modules, and which files, depend on
each other in a circle.

Usage: scripts/modcycles.py [crates/NAME ...]    (default: every crate under crates/)
Exit status 1 when a crate has a circle of either kind, 0 otherwise. CI runs it (.ci/run), and
scripts/test_modcycles.py tests it.

Module circles: how it decides (an approximation of `cargo modules dependencies --acyclic`, without building):
- A node is a top-level module of a crate (src/x.rs or src/x/**), plus the crate root
  (lib.rs or main.rs) as "<root>".
- An edge a -> b is a path that names b from a's code: `crate::b::...`, `crate::{b::..}`,
  `super::...` resolved from the file's place, and in the root a bare `b::...`.
- `crate::Item` where Item is re-exported by the root (`pub use b::Item` / `pub use b::{Item}`)
  counts as an edge to b; an item the root defines itself is an edge to <root>.
- The root's own `pub use`/`use` lines are re-exports, not dependencies; `mod` lines are not edges.
- Test code is left out: files named tests.rs or under tests/ inside src, and every item under
  `#[cfg(test)]` (a `mod tests { ... }`, a test-only fn).
- Comments and the contents of strings are left out.
Circles are the strongly connected components of more than one node.

File circles: the same question between the files of a crate (src/db/journal.rs naming
`super::verify::Finding` and src/db/verify.rs naming `super::journal::Journal`).
- A node is a production file (scripts/rustsrc.py: reached from the crate root by `mod` lines that
  are not under `#[cfg(test)]`); code under `#[cfg(test)]`, comments and strings are left out.
- An edge a -> b is a path in a's code naming an item of b: from `crate::`, `super::`, `self::`,
  a child module's name, or a name a `use` line brought in; a path is followed down the modules
  as far as they are files, then through `pub use` re-exports (globs too) to the file that defines
  the item.
- `pub use` lines (re-exports) and `mod` lines are not edges; nor is an edge between a file and the
  file of a module enclosing it (a child's `super::X`, a mod.rs calling its children, anything
  with the crate root): a module and its children are one tree, their circles are the module
  check's business.
"""

import os
import re
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from rustsrc import Source, line_of, match_brace, production_files  # noqa: E402

IDENT = r"[A-Za-z_][A-Za-z0-9_]*"


def strip(text):
    """The code of a file: comments, the contents of strings and every item under `#[cfg(test)]`
    blanked (scripts/rustsrc.py)."""
    src = Source(text)
    lines = src.sk.split("\n")
    for k in src.test_lines:
        if k - 1 < len(lines):
            lines[k - 1] = ""
    return "\n".join(lines)


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
    with open(os.path.join(src, root_file), encoding="utf-8") as fh:
        root_text = strip(fh.read())
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
        with open(os.path.join(src, f), encoding="utf-8") as fh:
            text = strip(fh.read())
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


# ---------------------------------------------------------------------------------------------
# File circles: the same question one level down, between the files of a crate.
# ---------------------------------------------------------------------------------------------

ITEM_RE = re.compile(
    r"(?<![A-Za-z0-9_])(?:struct|enum|fn|trait|type|const|static|union|macro_rules!)\s+(" + IDENT + ")"
)
PATH_RE = re.compile(r"(?<![A-Za-z0-9_:])((?:" + IDENT + r"\s*::\s*)+" + IDENT + ")")
USE_RE = re.compile(r"(?<![A-Za-z0-9_])use\s+")
VIS_BEFORE_RE = re.compile(r"pub(?:\s*\([^)]*\))?\s*$")
INLINE_MOD_RE = re.compile(r"(?<![A-Za-z0-9_])mod\s+(" + IDENT + r")\s*\{")


def module_path(rel):
    """The module path of a crate file given from the crate folder: src/db/journal.rs -> (db, journal)."""
    parts = rel.split(os.sep)[1:]
    if parts in (["lib.rs"], ["main.rs"]):
        return ()
    last = parts[-1][:-3]
    if last == "mod":
        return tuple(parts[:-1])
    return tuple(parts[:-1]) + (last,)


def use_paths(tree):
    """The paths of a use tree (`a::{b::C, d as e, self}`), each as (segments, alias or None);
    a glob ends with the segment "*"."""
    tree = re.sub(r"\s+", " ", tree).strip()
    out = []

    def parse(s, prefix):
        s = s.strip()
        if not s:
            return
        depth = 0
        for k, ch in enumerate(s):
            if ch == "{":
                if depth == 0:
                    head = [x for x in s[:k].replace(" ", "").split("::") if x]
                    inner = s[k + 1 : s.rindex("}")]
                    for part in split_top(inner):
                        parse(part, prefix + head)
                    return
                depth += 1
        m = re.match(r"(.*?)(?:\s+as\s+(" + IDENT + r"))?$", s)
        segs = [x for x in m.group(1).replace(" ", "").split("::") if x]
        alias = m.group(2)
        if segs == ["self"]:
            segs = []
        elif segs and segs[-1] == "self":
            segs = segs[:-1]
        out.append((prefix + segs, alias))

    parse(tree, [])
    return out


def split_top(s):
    parts, depth, cur = [], 0, ""
    for ch in s:
        if ch == "{":
            depth += 1
        elif ch == "}":
            depth -= 1
        if ch == "," and depth == 0:
            parts.append(cur)
            cur = ""
        else:
            cur += ch
    parts.append(cur)
    return [p for p in parts if p.strip()]


class FileInfo:
    def __init__(self, rel, text):
        self.rel = rel
        self.mod = module_path(rel)
        src = Source(text)
        lines = src.sk.split("\n")
        for k in src.test_lines:
            if k - 1 < len(lines):
                lines[k - 1] = " " * len(lines[k - 1])
        self.code = "\n".join(lines)
        self.starts = src.starts
        self.children = {name for name, _ in src.prod_mods()}
        self.items = set(ITEM_RE.findall(self.code))
        # inline modules: (start, end, name)
        self.inline = []
        for m in INLINE_MOD_RE.finditer(self.code):
            end = match_brace(self.code, m.end() - 1)
            self.inline.append((m.start(), end, m.group(1)))
        # use statements: (offset, public, [(segments, alias)])
        self.uses = []
        blanked = list(self.code)
        for m in USE_RE.finditer(self.code):
            end = self.code.find(";", m.end())
            if end < 0:
                continue
            public = bool(VIS_BEFORE_RE.search(self.code[max(0, m.start() - 40) : m.start()]))
            self.uses.append((m.start(), public, use_paths(self.code[m.end() : end])))
            for k in range(m.start(), end + 1):
                if blanked[k] != "\n":
                    blanked[k] = " "
        rest = "".join(blanked)
        self.paths = [
            (m.start(), [x.strip() for x in m.group(1).split("::")]) for m in PATH_RE.finditer(rest)
        ]

    def scope_at(self, pos):
        """The module path at an offset (inline modules included)."""
        inner = [name for a, b, name in sorted(self.inline) if a <= pos <= b]
        return self.mod + tuple(inner)

    def line(self, pos):
        return line_of(self.code, pos, self.starts)


def file_edges(crate_dir):
    """file -> {file: (line, path)} for the production files of a crate: an edge a -> b when a's
    code names an item of b, through any path (`crate::`, `super::`, `self::`, a child module, a
    `use`d module), items re-exported by a module's `pub use` followed to where they are defined.
    `pub use` lines themselves (re-exports) and `mod` lines are not edges; test code is left out."""
    files = {}
    for rel in production_files(crate_dir):
        if rel == "build.rs" or rel.startswith(os.path.join("src", "bin")):
            continue
        with open(os.path.join(crate_dir, rel), encoding="utf-8") as fh:
            files[rel] = FileInfo(rel, fh.read())
    owner = {}  # module path -> file, inline modules included
    for f in files.values():
        owner.setdefault(f.mod, f.rel)
        for a, _, _ in f.inline:
            owner.setdefault(f.scope_at(a + 1), f.rel)
    items = {}
    reexports = {}  # module -> {name: (scope, segments)}
    globs = {}  # module -> [(scope, segments)]
    for f in files.values():
        for a, b, name in f.inline:
            items.setdefault(f.scope_at(a + 1), set())
        items.setdefault(f.mod, set()).update(f.items)
        for pos, public, paths in f.uses:
            if not public:
                continue
            scope = f.scope_at(pos)
            for segs, alias in paths:
                if segs and segs[-1] == "*":
                    globs.setdefault(scope, []).append((scope, f, segs[:-1]))
                elif segs:
                    reexports.setdefault(scope, {})[alias or segs[-1]] = (scope, f, segs)

    def aliases(f, scope):
        al = {c: f.mod + (c,) for c in f.children}
        for pos, public, paths in f.uses:
            for segs, alias in paths:
                if not segs or segs[-1] == "*":
                    continue
                m, rest = walk(f, f.scope_at(pos), segs, {}, 0)
                if m is not None and not rest:
                    al[alias or segs[-1]] = m
        return al

    def walk(f, scope, segs, al, depth):
        """(module, remaining segments) a path names, or (None, _) for an outside crate."""
        head, rest = segs[0], list(segs[1:])
        if head == "crate":
            m = ()
        elif head == "self":
            m = scope
        elif head == "super":
            m = scope[:-1]
            while rest and rest[0] == "super":
                m = m[:-1]
                rest.pop(0)
        elif head in al:
            m = al[head]
        else:
            return None, rest
        while rest and m + (rest[0],) in owner:
            m = m + (rest[0],)
            rest.pop(0)
        return m, rest

    def defined_in(m, name, depth=0):
        """The module that defines `name` as seen from module m (re-exports followed)."""
        if depth > 16:
            return m
        if name in reexports.get(m, {}):
            scope, f, segs = reexports[m][name]
            t, rest = walk(f, scope, segs, child_aliases(f), 0)
            if t is not None:
                if rest and t != m:
                    return defined_in(t, rest[0], depth + 1)
                return t
        if name in items.get(m, set()):
            return m
        for scope, f, segs in globs.get(m, []):
            t, _ = walk(f, scope, segs, child_aliases(f), 0)
            if t is not None and t != m:
                d = defined_in(t, name, depth + 1)
                if d != t or name in items.get(t, set()):
                    return d
        return m

    def child_aliases(f):
        return {c: f.mod + (c,) for c in f.children}

    def file_of(m):
        while m not in owner and m:
            m = m[:-1]
        return owner.get(m)

    edges = {rel: {} for rel in files}
    for f in files.values():
        al = aliases(f, f.mod)
        refs = []
        for pos, public, paths in f.uses:
            if public:
                continue
            for segs, _ in paths:
                if segs and segs[-1] == "*":
                    segs = segs[:-1]
                if segs:
                    refs.append((pos, segs))
        refs += f.paths
        for pos, segs in refs:
            m, rest = walk(f, f.scope_at(pos), segs, al, 0)
            if m is None:
                continue
            if rest:
                m = defined_in(m, rest[0])
            t = file_of(m)
            if t is None or t == f.rel or t in edges[f.rel]:
                continue
            # A file and the files of its enclosing modules (a child's `super::X`, a mod.rs
            # calling its children) are one module tree, not a circle: left out.
            tm = files[t].mod
            if f.mod[: len(tm)] == tm or tm[: len(f.mod)] == f.mod:
                continue
            edges[f.rel][t] = (f.line(pos), "::".join(segs))
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
        os.path.join(top, "crates", c)
        for c in os.listdir(os.path.join(top, "crates"))
        if os.path.isfile(os.path.join(top, "crates", c, "Cargo.toml"))
    )
    bad = False
    for c in crates:
        name = os.path.basename(os.path.normpath(c))
        edges = analyse(c)
        circles = sccs(edges)
        if not circles:
            print(f"{name}: no module circle")
        for comp in circles:
            bad = True
            print(f"{name}: circle {{{', '.join(comp)}}}")
            for a in comp:
                inside = sorted(b for b in edges[a] if b in comp)
                print(f"    {a} -> {', '.join(inside)}")
        fedges = file_edges(c)
        fcircles = sccs({a: set(bs) for a, bs in fedges.items()})
        if not fcircles:
            print(f"{name}: no file circle")
        for comp in fcircles:
            bad = True
            print(f"{name}: file circle {{{', '.join(comp)}}}")
            for a in comp:
                for b in sorted(fedges[a]):
                    if b in comp:
                        line, path = fedges[a][b]
                        print(f"    {a} -> {b} (line {line}: {path})")
    sys.exit(1 if bad else 0)


if __name__ == "__main__":
    main()
