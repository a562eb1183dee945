#!/usr/bin/env python3
"""Tests of scripts/modcycles.py on tiny crates written to a temporary folder (CI runs this file:
.ci/run). Each asserts what the check reports, so a check that finds nothing fails here.

Usage: python3 scripts/test_modcycles.py
"""

import os
import subprocess
import sys
import tempfile
import textwrap
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import modcycles  # noqa: E402


def write_crate(top, files):
    """A crate under top/crates/fix with the given {path under src: text}."""
    crate = os.path.join(top, "crates", "fix")
    os.makedirs(os.path.join(crate, "src"))
    with open(os.path.join(crate, "Cargo.toml"), "w", encoding="utf-8") as f:
        f.write('[package]\nname = "fix"\n')
    for rel, text in files.items():
        path = os.path.join(crate, "src", rel)
        os.makedirs(os.path.dirname(path), exist_ok=True)
        with open(path, "w", encoding="utf-8") as f:
            f.write(textwrap.dedent(text))
    return crate


def file_circles(crate):
    edges = modcycles.file_edges(crate)
    return modcycles.sccs({a: set(b) for a, b in edges.items()})


class FileCircles(unittest.TestCase):
    def setUp(self):
        self.tmp = tempfile.TemporaryDirectory()
        self.top = self.tmp.name

    def tearDown(self):
        self.tmp.cleanup()

    def test_two_sibling_files_naming_each_other_are_a_circle(self):
        # the shape of mbx-engine's db/journal.rs <-> db/verify.rs: one top-level module, so the
        # module check sees nothing; the file check does.
        crate = write_crate(
            self.top,
            {
                "lib.rs": "mod db;\nmod other;\n",
                "other.rs": "pub struct O;\n",
                "db/mod.rs": "mod journal;\nmod verify;\npub struct Db;\n",
                "db/journal.rs": "use super::verify::Finding;\npub struct Journal(Finding);\n",
                "db/verify.rs": "pub struct Finding;\npub fn check(j: &super::journal::Journal) {}\n",
            },
        )
        self.assertEqual(modcycles.sccs(modcycles.analyse(crate)), [])
        self.assertEqual(file_circles(crate), [["src/db/journal.rs", "src/db/verify.rs"]])
        run = subprocess.run(
            [sys.executable, os.path.join(HERE, "modcycles.py"), crate], capture_output=True, text=True
        )
        self.assertEqual(run.returncode, 1, run.stdout)
        self.assertIn("fix: file circle {src/db/journal.rs, src/db/verify.rs}", run.stdout)
        self.assertIn("src/db/journal.rs -> src/db/verify.rs (line 1: super::verify::Finding)", run.stdout)

    def test_a_chain_through_a_re_export_is_a_circle(self):
        # a -> b (crate::B, re-exported by the root from b), b -> c, c -> a: the three in one
        # circle, found through the root's `pub use` and a `use`d module's name.
        crate = write_crate(
            self.top,
            {
                "lib.rs": "mod a;\nmod b;\nmod c;\npub use b::B;\n",
                "a.rs": "pub struct A;\npub fn f() -> crate::B { crate::B }\n",
                "b.rs": "use crate::c;\npub struct B;\nfn g() { c::h(); }\n",
                "c.rs": "use crate::{a::A};\npub fn h() -> Option<A> { None }\n",
            },
        )
        self.assertEqual(file_circles(crate), [["src/a.rs", "src/b.rs", "src/c.rs"]])

    def test_test_code_comments_strings_and_the_module_tree_are_no_circle(self):
        crate = write_crate(
            self.top,
            {
                "lib.rs": "mod a;\nmod b;\nmod p;\n",
                "a.rs": "use crate::b::B;\npub struct A(B);\n",
                # b names a only from a comment, a string, a test-only item and a test module
                "b.rs": textwrap.dedent(
                    """\
                    pub struct B;
                    // crate::a::A
                    const S: &str = "crate::a::A";
                    #[cfg(test)]
                    fn helper() -> crate::a::A { crate::a::A(B) }
                    #[cfg(test)]
                    mod tests {
                        use crate::a::A;
                    }
                    """
                ),
                # a parent and its child naming each other: one module tree
                "p/mod.rs": "mod q;\npub struct P;\npub fn run() { q::go() }\n",
                "p/q.rs": "pub fn go() { let _ = super::P; }\n",
            },
        )
        self.assertEqual(file_circles(crate), [])
        run = subprocess.run(
            [sys.executable, os.path.join(HERE, "modcycles.py"), crate], capture_output=True, text=True
        )
        self.assertEqual(run.returncode, 0, run.stdout)
        self.assertEqual(run.stdout, "fix: no module circle\nfix: no file circle\n")

    def test_a_module_circle_is_still_found(self):
        crate = write_crate(
            self.top,
            {
                "lib.rs": "mod a;\nmod b;\n",
                "a/mod.rs": "mod x;\n",
                "a/x.rs": "pub struct X(crate::b::y::Y);\n",
                "b/mod.rs": "pub mod y;\n",
                "b/y.rs": "pub struct Y;\nfn f(_: crate::a::Z) {}\n",
            },
        )
        self.assertEqual(modcycles.sccs(modcycles.analyse(crate)), [["a", "b"]])


if __name__ == "__main__":
    unittest.main()
