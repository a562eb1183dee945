#!/usr/bin/env python3
"""Size and shape of the workspace's production code, per crate.

Usage: scripts/metrics.py [--json] [--rev REV] [--long N] [--no-duplicates] [crates/NAME ...]
  --json           one JSON document instead of the table
  --rev REV        measure the commit REV (read with `git archive`, the work tree is not touched)
                   instead of the work tree
  --long N         also list the production functions over N lines (table mode)
  --no-duplicates  skip the `duplicates` run (it needs the `duplicates` tool on PATH)

What counts as production code (read as text, no build):
- The files a crate compiles outside tests: from src/lib.rs, src/main.rs, src/bin/*.rs and build.rs,
  following `mod x;` declarations (and `#[path = ...]`), except those declared under `#[cfg(test)]`
  (or `#[cfg(all(test, ...))]`). tests/, benches/ and examples/ are never read; a file under src/
  that no production `mod` reaches is not counted either.
- Inside those files, every item under a `#[cfg(test)]` attribute (a `mod tests { ... }`, a
  test-only fn or impl) is test code and left out.
- A production line is a line of what remains that is neither blank nor only comment (`//`, `///`,
  `//!`, `/* ... */`).

What is measured, per crate and in total:
- lines: production lines, as above.
- raw: every line of the production files but their test spans, blank and comment lines included
  (the way issue 37 counted "production lines": the binary's 6,509 at 24a98ab).
- fns>70, fns>150: production functions (`fn name ... { ... }`, methods and nested fns included)
  whose extent, from the line holding `fn` to the line of its closing brace, is over 70 (150)
  lines. Every line counts here, blank and comment lines inside the body too.
- asserts, per_kloc: `assert!`, `assert_eq!`, `assert_ne!`, `debug_assert!`, `debug_assert_eq!`
  and `debug_assert_ne!` in production code (not in comments or strings), and that count per
  1,000 production lines.
- dup pairs: pairs of places in production code sharing six or more lines, as the `duplicates`
  tool finds them when run over a copy of the production code alone (test code blanked, line
  numbers kept). A crate's figure counts the pairs with at least one side in it; the total counts
  each pair once. `cross-file` counts only the pairs whose two places are in different files. `boilerplate` rows (most of what they share is punctuation or a folder-wide
  shape) are counted too and also reported apart.
"""

import json
import os
import re
import shutil
import subprocess
import sys
import tarfile
import tempfile
import io

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
        s = Source(open(full, encoding="utf-8").read())
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


def measure_crate(crate_dir, blank_dir=None, long_n=70):
    """Figures for one crate; when blank_dir is given, writes there a copy of each production
    file with its test lines blanked (for the duplicates run)."""
    name = os.path.basename(os.path.normpath(crate_dir))
    lines = 0
    raw = 0
    asserts = 0
    fns = []
    for rel in production_files(crate_dir):
        text = open(os.path.join(crate_dir, rel), encoding="utf-8").read()
        s = Source(text)
        lines += len(s.prod_line_numbers())
        raw += s.nlines - len([k for k in s.test_lines if k <= s.nlines])
        asserts += s.asserts()
        for fname, a, b in s.functions():
            fns.append({"file": os.path.join("crates", name, rel), "fn": fname, "line": a, "lines": b - a + 1})
        if blank_dir is not None:
            out = os.path.join(blank_dir, "crates", name, rel)
            os.makedirs(os.path.dirname(out), exist_ok=True)
            kept = text.split("\n")
            for k in s.test_lines:
                if k - 1 < len(kept):
                    kept[k - 1] = ""
            with open(out, "w", encoding="utf-8") as f:
                f.write("\n".join(kept))
    fns.sort(key=lambda f: -f["lines"])
    return {
        "crate": name,
        "lines": lines,
        "raw_lines": raw,
        "fns_over_70": sum(1 for f in fns if f["lines"] > 70),
        "fns_over_150": sum(1 for f in fns if f["lines"] > 150),
        "asserts": asserts,
        "asserts_per_kloc": round(asserts * 1000.0 / lines, 2) if lines else 0.0,
        "long_functions": [f for f in fns if f["lines"] > min(70, long_n)],
    }


ROW_RE = re.compile(r"^D\d+ (\S+):(\d+)-(\d+) ~ (\S+):(\d+)-(\d+)(.*)$")


def run_duplicates(tree):
    """(pair count, rows) from `duplicates` over tree; rows hold at most 200 pairs (its limit)."""
    exe = shutil.which("duplicates")
    if exe is None:
        raise SystemExit("metrics.py: the `duplicates` tool is not on PATH (or pass --no-duplicates)")
    out = subprocess.run(
        [exe, "--repo", tree, "--most", "200", "--seconds", "300"],
        capture_output=True,
        text=True,
        check=False,
    ).stdout
    lines = out.splitlines()
    total = 0
    if lines:
        m = re.match(r"(\d+) pairs? of places", lines[0])
        if m:
            total = int(m.group(1))
        elif not lines[0].startswith("no duplicates"):
            raise SystemExit("metrics.py: unexpected duplicates output: " + lines[0])
    incomplete = [l for l in lines if l.startswith("incomplete:")]
    if incomplete:
        raise SystemExit("metrics.py: duplicates did not finish: " + incomplete[0])
    rows = []
    for l in lines[1:]:
        m = ROW_RE.match(l)
        if m:
            tail = m.group(7)
            rows.append(
                {
                    "a": f"{m.group(1)}:{m.group(2)}-{m.group(3)}",
                    "b": f"{m.group(4)}:{m.group(5)}-{m.group(6)}",
                    "shape": " shape" in tail,
                    "boilerplate": "boilerplate" in tail,
                    "cross_file": m.group(1) != m.group(4),
                }
            )
    return total, rows


def crate_of(path):
    parts = path.split("/")
    return parts[1] if len(parts) > 1 and parts[0] == "crates" else parts[0]


def measure(top, crate_args, with_dups, long_n=70):
    crates_dir = os.path.join(top, "crates")
    if crate_args:
        crates = [os.path.join(top, c) if not os.path.isabs(c) else c for c in crate_args]
    else:
        crates = sorted(
            os.path.join(crates_dir, c)
            for c in os.listdir(crates_dir)
            if os.path.isfile(os.path.join(crates_dir, c, "Cargo.toml"))
        )
    blank = tempfile.mkdtemp(prefix="mbx-metrics-") if with_dups else None
    try:
        per = [measure_crate(c, blank, long_n) for c in crates]
        dups = None
        if with_dups:
            total, rows = run_duplicates(blank)
            dups = {
                "pairs": total,
                "cross_file": sum(1 for r in rows if r["cross_file"]),
                "boilerplate": sum(1 for r in rows if r["boilerplate"]),
                "rows": rows,
            }
            for c in per:
                mine = [r for r in rows if c["crate"] in (crate_of(r["a"]), crate_of(r["b"]))]
                c["dup_pairs"] = len(mine)
                c["dup_pairs_cross_file"] = sum(1 for r in mine if r["cross_file"])
            if total > len(rows):
                dups["note"] = f"duplicates lists 200 rows at the most: per-crate counts cover {len(rows)} of {total}"
    finally:
        if blank:
            shutil.rmtree(blank, ignore_errors=True)
    lines = sum(c["lines"] for c in per)
    asserts = sum(c["asserts"] for c in per)
    total = {
        "lines": lines,
        "raw_lines": sum(c["raw_lines"] for c in per),
        "fns_over_70": sum(c["fns_over_70"] for c in per),
        "fns_over_150": sum(c["fns_over_150"] for c in per),
        "asserts": asserts,
        "asserts_per_kloc": round(asserts * 1000.0 / lines, 2) if lines else 0.0,
    }
    if dups is not None:
        total["dup_pairs"] = dups["pairs"]
        total["dup_pairs_cross_file"] = dups["cross_file"]
    return {"crates": per, "total": total, "duplicates": dups}


def checkout(rev, top):
    """The crates/ tree of rev, extracted to a temporary folder (git archive: read only)."""
    tmp = tempfile.mkdtemp(prefix="mbx-metrics-rev-")
    data = subprocess.run(["git", "-C", top, "archive", rev, "crates"], capture_output=True, check=True).stdout
    with tarfile.open(fileobj=io.BytesIO(data)) as t:
        t.extractall(tmp)
    return tmp


def table(report, long_n):
    cols = ["crate", "lines", "raw", "fns>70", "fns>150", "asserts", "per 1k", "dup pairs", "cross-file"]
    rows = []
    for c in report["crates"] + [dict(report["total"], crate="total")]:
        rows.append(
            [
                c["crate"],
                str(c["lines"]),
                str(c["raw_lines"]),
                str(c["fns_over_70"]),
                str(c["fns_over_150"]),
                str(c["asserts"]),
                f"{c['asserts_per_kloc']:.2f}",
                str(c.get("dup_pairs", "-")),
                str(c.get("dup_pairs_cross_file", "-")),
            ]
        )
    w = [max(len(cols[k]), *(len(r[k]) for r in rows)) for k in range(len(cols))]
    fmt = lambda r: "  ".join(r[0].ljust(w[0]) if k == 0 else r[k].rjust(w[k]) for k in range(len(r)) for _ in [0])
    out = [fmt(cols), fmt(["-" * x for x in w])]
    out += [fmt(r) for r in rows[:-1]]
    out += [fmt(["-" * x for x in w]), fmt(rows[-1])]
    d = report["duplicates"]
    if d is not None:
        out.append("")
        out.append(
            f"duplicate pairs in production code: {d['pairs']}, {d['cross_file']} of them between two files"
            f" ({d['boilerplate']} of all marked boilerplate)"
        )
        if "note" in d:
            out.append("note: " + d["note"])
    if long_n is not None:
        out.append("")
        out.append(f"production functions over {long_n} lines:")
        fns = [f for c in report["crates"] for f in c["long_functions"] if f["lines"] > long_n]
        fns.sort(key=lambda f: -f["lines"])
        for f in fns:
            out.append(f"  {f['lines']:5}  {f['file']}:{f['line']}  {f['fn']}")
    return "\n".join(out)


def main(argv):
    as_json = False
    rev = None
    long_n = None
    with_dups = True
    crates = []
    it = iter(argv)
    for a in it:
        if a == "--json":
            as_json = True
        elif a == "--rev":
            rev = next(it, None)
        elif a == "--long":
            long_n = int(next(it, "70"))
        elif a == "--no-duplicates":
            with_dups = False
        elif a in ("-h", "--help"):
            print(__doc__)
            return 0
        elif a.startswith("-"):
            print(f"metrics.py: unknown option {a}", file=sys.stderr)
            return 2
        else:
            crates.append(a)
    here = os.path.dirname(os.path.abspath(__file__))
    top = os.path.dirname(here)
    tmp = None
    try:
        if rev is not None:
            tmp = checkout(rev, top)
            top = tmp
        report = measure(top, crates, with_dups, 70 if long_n is None else long_n)
        if rev is not None:
            report["rev"] = rev
    finally:
        if tmp:
            shutil.rmtree(tmp, ignore_errors=True)
    if as_json:
        print(json.dumps(report, indent=2))
    else:
        print(table(report, long_n))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
