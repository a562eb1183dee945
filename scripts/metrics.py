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
- circles: file circles (scripts/modcycles.py's file check: files of one crate that name each
  other through any chain).
- dup pairs: pairs of places in production code sharing six or more lines, as the `duplicates`
  tool finds them when run over a copy of the production code alone (test code blanked, line
  numbers kept). A crate's figure counts the pairs with at least one side in it; the total counts
  each pair once; `cross-file` counts only the pairs whose two places are in different files.
  `boilerplate` rows (most of what they share is punctuation or a folder-wide shape) are counted
  too and also reported apart.
"""

import io
import json
import os
import re
import shutil
import subprocess
import sys
import tarfile
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from rustsrc import Source, production_files  # noqa: E402
import modcycles  # noqa: E402


def measure_crate(crate_dir, blank_dir=None, long_n=70):
    """Figures for one crate; when blank_dir is given, writes there a copy of each production
    file with its test lines blanked (for the duplicates run)."""
    name = os.path.basename(os.path.normpath(crate_dir))
    lines = 0
    raw = 0
    asserts = 0
    fns = []
    for rel in production_files(crate_dir):
        with open(os.path.join(crate_dir, rel), encoding="utf-8") as fh:
            text = fh.read()
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
    fedges = modcycles.file_edges(crate_dir)
    circles = modcycles.sccs({a: set(b) for a, b in fedges.items()})
    return {
        "crate": name,
        "file_circles": [[os.path.join("crates", name, f) for f in c] for c in circles],
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
        "file_circles": sum(len(c["file_circles"]) for c in per),
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
    cols = ["crate", "lines", "raw", "fns>70", "fns>150", "asserts", "per 1k", "circles", "dup pairs", "cross-file"]
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
                str(c["file_circles"] if isinstance(c["file_circles"], int) else len(c["file_circles"])),
                str(c.get("dup_pairs", "-")),
                str(c.get("dup_pairs_cross_file", "-")),
            ]
        )
    w = [max(len(cols[k]), *(len(r[k]) for r in rows)) for k in range(len(cols))]
    fmt = lambda r: "  ".join(r[0].ljust(w[0]) if k == 0 else r[k].rjust(w[k]) for k in range(len(r)) for _ in [0])
    out = [fmt(cols), fmt(["-" * x for x in w])]
    out += [fmt(r) for r in rows[:-1]]
    out += [fmt(["-" * x for x in w]), fmt(rows[-1]), ""]
    for c in report["crates"]:
        for circle in c["file_circles"]:
            out.append("file circle: " + ", ".join(circle))
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
