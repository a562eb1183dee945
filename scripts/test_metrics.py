#!/usr/bin/env python3
"""Tests of scripts/metrics.py's counting on a tiny crate written to a temporary folder (CI runs
this file: .ci/run). Each figure is asserted exactly, so a miscount fails here.

Usage: python3 scripts/test_metrics.py
"""

import os
import sys
import tempfile
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import metrics  # noqa: E402

LIB = """//! The crate.

mod long;
#[cfg(test)]
mod tests;

/// A short function: 3 lines.
pub fn short(x: u32) -> u32 {
    assert!(x < 10, "x is small");
    x + 1
}

/* a block comment
   over two lines */
const TEXT: &str = "assert!(not code) // not a comment";

#[cfg(test)]
fn helper() {
    assert_eq!(1, 1);
}

#[cfg(test)]
mod inline {
    #[test]
    fn t() {
        debug_assert!(true);
    }
}
"""


def long_fn(body_lines):
    lines = ["pub fn long() -> u64 {", "    let mut n = 0;"]
    lines += ["    n += 1; // a comment after code"] * body_lines
    lines += ["    debug_assert_eq!(n, n);", "    n", "}", ""]
    return "\n".join(lines)


class Counts(unittest.TestCase):
    def test_a_tiny_crate(self):
        with tempfile.TemporaryDirectory() as top:
            src = os.path.join(top, "crates", "fix", "src")
            os.makedirs(src)
            with open(os.path.join(top, "crates", "fix", "Cargo.toml"), "w", encoding="utf-8") as f:
                f.write('[package]\nname = "fix"\n')
            with open(os.path.join(src, "lib.rs"), "w", encoding="utf-8") as f:
                f.write(LIB)
            # 2 + 150 + 3 = 155 lines from `fn` to `}`: over 70 and over 150.
            with open(os.path.join(src, "long.rs"), "w", encoding="utf-8") as f:
                f.write(long_fn(150))
            # a test module file: never counted
            with open(os.path.join(src, "tests.rs"), "w", encoding="utf-8") as f:
                f.write("fn x() {\n    assert!(true);\n}\n")
            c = metrics.measure_crate(os.path.join(top, "crates", "fix"))
        # lib.rs: `mod long;`, the 4 lines of `short`, `const TEXT`; long.rs: 155.
        self.assertEqual(c["lines"], 1 + 4 + 1 + 155)
        self.assertEqual(c["fns_over_70"], 1)
        self.assertEqual(c["fns_over_150"], 1)
        self.assertEqual([f["fn"] for f in c["long_functions"]], ["long"])
        self.assertEqual(c["long_functions"][0]["lines"], 155)
        # short's assert! and long's debug_assert_eq!; not the string's, not test code's.
        self.assertEqual(c["asserts"], 2)
        self.assertEqual(c["file_circles"], [])


if __name__ == "__main__":
    unittest.main()
