"""Reading Rust sources as text, without building: shared by scripts/metrics.py and
scripts/modcycles.py.

- lex(): a file as two views of the same length (newlines kept), one with comments blanked, one
  with comments and the contents of string and char literals blanked (the skeleton), so that
  braces, `fn`, `mod` and paths are found only in code.
- Source: one file's test-only spans (every item under `#[cfg(test)]`), its production `mod x;`
  declarations, its functions, its assertions.
- production_files(): the files a crate compiles outside tests, found from its roots by
  following production `mod` declarations.
"""

import os
import re

IDENT = r"[A-Za-z_][A-Za-z0-9_]*"
ASSERT_RE = re.compile(r"(?<![A-Za-z0-9_])(debug_)?assert(_eq|_ne)?!")
CFG_TEST_RE = re.compile(r"#\[cfg\(\s*(?:all\(\s*)?test\b")


# ---------------------------------------------------------------------------------------------
# Lexing: a Rust source file as two same-length views, newlines kept.
#   nocomment: comments blanked (string literals kept)
#   skeleton:  comments and the contents of string and char literals blanked
# ---------------------------------------------------------------------------------------------


def _blank(s):
    return "".join("\n" if c == "\n" else " " for c in s)


def lex(text):
    n = len(text)
    noc = []
    sk = []
    i = 0

    def is_ident(c):
        return c.isalnum() or c == "_"

    while i < n:
        c = text[i]
        nxt = text[i + 1] if i + 1 < n else ""
        # line comment
        if c == "/" and nxt == "/":
            j = text.find("\n", i)
            j = n if j < 0 else j
            b = _blank(text[i:j])
            noc.append(b)
            sk.append(b)
            i = j
            continue
        # block comment (nesting)
        if c == "/" and nxt == "*":
            depth, j = 1, i + 2
            while j < n and depth:
                if text.startswith("/*", j):
                    depth += 1
                    j += 2
                elif text.startswith("*/", j):
                    depth -= 1
                    j += 2
                else:
                    j += 1
            b = _blank(text[i:j])
            noc.append(b)
            sk.append(b)
            i = j
            continue
        prev = text[i - 1] if i else ""
        # raw strings: r"..", r#".."#, br#".."#, cr".."
        if c in "rbc" and not is_ident(prev):
            m = re.match(r"(?:b|c)?r(#*)\"", text[i:])
            if m:
                hashes = m.group(1)
                start = i + m.end()
                close = '"' + hashes
                j = text.find(close, start)
                j = n if j < 0 else j + len(close)
                lit = text[i:j]
                noc.append(lit)
                sk.append(text[i:start] + _blank(text[start : j - len(close)]) + text[j - len(close) : j])
                i = j
                continue
        # strings "..", b"..", c".."
        if c == '"':
            j = i + 1
            while j < n and text[j] != '"':
                j += 2 if text[j] == "\\" else 1
            j = min(j + 1, n)
            noc.append(text[i:j])
            sk.append('"' + _blank(text[i + 1 : j - 1]) + '"' if j - i >= 2 else text[i:j])
            i = j
            continue
        # char literal or lifetime
        if c == "'":
            if nxt == "\\":
                j = text.find("'", i + 2)
                if text.startswith("\\'", i + 1):
                    j = text.find("'", i + 3)
                j = n if j < 0 else j + 1
                noc.append(text[i:j])
                sk.append("'" + _blank(text[i + 1 : j - 1]) + "'")
                i = j
                continue
            if i + 2 < n and text[i + 2] == "'" and nxt != "\n":
                noc.append(text[i : i + 3])
                sk.append("' '")
                i += 3
                continue
        noc.append(c)
        sk.append(c)
        i += 1
    return "".join(noc), "".join(sk)


def line_of(text, pos, starts):
    """1-based line number of pos, with starts the sorted offsets of line starts."""
    lo, hi = 0, len(starts) - 1
    while lo < hi:
        mid = (lo + hi + 1) // 2
        if starts[mid] <= pos:
            lo = mid
        else:
            hi = mid - 1
    return lo + 1


def line_starts(text):
    starts = [0]
    for m in re.finditer("\n", text):
        starts.append(m.end())
    return starts


def match_brace(sk, open_pos):
    """Offset of the brace closing the one at open_pos (or len-1 when unbalanced)."""
    depth = 0
    for j in range(open_pos, len(sk)):
        ch = sk[j]
        if ch == "{":
            depth += 1
        elif ch == "}":
            depth -= 1
            if depth == 0:
                return j
    return len(sk) - 1


def item_end(sk, pos):
    """From pos (just after an item's attributes), the offset where the item ends: its closing
    brace, or the `;` that ends a body-less item. Parentheses and brackets are skipped over so
    that `[u8; 4]` in a signature does not end it."""
    depth = 0
    j = pos
    while j < len(sk):
        ch = sk[j]
        if ch in "([":
            depth += 1
        elif ch in ")]":
            depth -= 1
        elif depth <= 0 and ch == ";":
            return j, False
        elif depth <= 0 and ch == "{":
            return match_brace(sk, j), True
        j += 1
    return len(sk) - 1, False


def skip_attrs(sk, pos):
    """Past any attributes (`#[...]`) and white space from pos."""
    while True:
        m = re.compile(r"\s*").match(sk, pos)
        pos = m.end()
        if sk.startswith("#[", pos):
            depth = 0
            j = pos + 1
            while j < len(sk):
                if sk[j] == "[":
                    depth += 1
                elif sk[j] == "]":
                    depth -= 1
                    if depth == 0:
                        break
                j += 1
            pos = j + 1
            continue
        return pos


class Source:
    """One file: its views, its test-only spans, its production mod declarations."""

    def __init__(self, text):
        self.text = text
        self.noc, self.sk = lex(text)
        self.starts = line_starts(text)
        self.nlines = len(self.starts) if text and not text.endswith("\n") else len(self.starts) - 1
        if not text:
            self.nlines = 0
        self.test_lines = set()
        self.test_mods = set()  # names of `mod x;` declared under cfg(test)
        for m in CFG_TEST_RE.finditer(self.sk):
            # the attribute must stand at the start of its line (an outer attribute of an item)
            ls = self.starts[line_of(self.sk, m.start(), self.starts) - 1]
            if self.sk[ls : m.start()].strip():
                continue
            body = skip_attrs(self.sk, m.start())
            mm = re.compile(r"(?:pub(?:\([^)]*\))?\s+)?mod\s+(" + IDENT + r")\s*;").match(self.sk, body)
            if mm:
                self.test_mods.add(mm.group(1))
            end, _ = item_end(self.sk, body)
            a = line_of(self.sk, m.start(), self.starts)
            b = line_of(self.sk, end, self.starts)
            self.test_lines.update(range(a, b + 1))

    def prod_line_numbers(self):
        lines = self.noc.split("\n")
        return [k + 1 for k, l in enumerate(lines) if l.strip() and (k + 1) not in self.test_lines]

    def prod_mods(self):
        """(name, path attribute or None) of each `mod x;` not under cfg(test) and not in a test span."""
        out = []
        for m in re.finditer(r"(?<![A-Za-z0-9_])mod\s+(" + IDENT + r")\s*;", self.sk):
            ln = line_of(self.sk, m.start(), self.starts)
            if ln in self.test_lines or m.group(1) in self.test_mods:
                continue
            # a #[path = "..."] among the attributes just before it
            line_start = self.starts[ln - 1]
            before = self.noc[max(0, line_start - 400) : m.start()]
            pm = re.search(r"#\[path\s*=\s*\"([^\"]*)\"\]\s*(?:#\[[^\]]*\]\s*)*(?:pub(?:\([^)]*\))?\s+)?$", before)
            out.append((m.group(1), pm.group(1) if pm else None))
        return out

    def functions(self):
        """(name, first line, last line) of each fn with a body, outside test spans."""
        out = []
        for m in re.finditer(r"(?<![A-Za-z0-9_])fn\s+(" + IDENT + r")", self.sk):
            ln = line_of(self.sk, m.start(), self.starts)
            if ln in self.test_lines:
                continue
            end, has_body = item_end(self.sk, m.end())
            if not has_body:
                continue
            out.append((m.group(1), ln, line_of(self.sk, end, self.starts)))
        return out

    def asserts(self):
        n = 0
        for m in ASSERT_RE.finditer(self.sk):
            if line_of(self.sk, m.start(), self.starts) not in self.test_lines:
                n += 1
        return n


def production_files(crate_dir):
    """Relative paths (from crate_dir) of the crate's production source files."""
    roots = []
    src = os.path.join(crate_dir, "src")
    for r in ("src/lib.rs", "src/main.rs", "build.rs"):
        if os.path.isfile(os.path.join(crate_dir, r)):
            roots.append(r)
    bindir = os.path.join(src, "bin")
    if os.path.isdir(bindir):
        for n in sorted(os.listdir(bindir)):
            p = os.path.join(bindir, n)
            if n.endswith(".rs"):
                roots.append(os.path.join("src", "bin", n))
            elif os.path.isfile(os.path.join(p, "main.rs")):
                roots.append(os.path.join("src", "bin", n, "main.rs"))
    seen = []
    todo = list(roots)
    while todo:
        rel = os.path.normpath(todo.pop(0))
        if rel in seen:
            continue
        full = os.path.join(crate_dir, rel)
        if not os.path.isfile(full):
            continue
        seen.append(rel)
        if rel == "build.rs":
            continue
        with open(full, encoding="utf-8") as fh:
            s = Source(fh.read())
        d = os.path.dirname(rel)
        stem = os.path.basename(rel)[:-3]
        is_dir_owner = stem in ("lib", "main", "mod") or rel in roots
        child_dir = d if is_dir_owner else os.path.join(d, stem)
        for name, path_attr in s.prod_mods():
            if path_attr is not None:
                todo.append(os.path.join(d, path_attr))
                continue
            a = os.path.join(child_dir, name + ".rs")
            b = os.path.join(child_dir, name, "mod.rs")
            todo.append(a if os.path.isfile(os.path.join(crate_dir, a)) else b)
    return seen


