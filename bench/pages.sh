#!/usr/bin/env bash
# Cost of building and checking one 32 KiB page (issue 11 item 2), in a release build:
# crates/mbx-store/examples/pages.rs. Results: bench/results/pages-<date>[-LABEL].md.
# Usage: bench/pages.sh [LABEL]
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
root=$(dirname "$here")
label=${1:+-$1}
git_state="$(cd "$root" && git rev-parse --short HEAD)$(cd "$root" && git diff --quiet HEAD || echo '+uncommitted changes')"
stamp=$(date -u +%Y-%m-%dT%H%M%SZ)
out=$here/results/pages-$stamp$label.md
cmd="cargo run --release -q -p mbx-store --example pages"
(cd "$root" && cargo build --release -q -p mbx-store --example pages)
table=$(cd "$root" && $cmd)
cpu=$(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2- | sed 's/^ //')
{
  echo "# Page build and check cost ($stamp, $git_state)"
  echo
  echo "$(rustc --version); $(uname -sr); CPU: $cpu, $(nproc) cores; default target features"
  echo "(x86-64 baseline: xxhash-rust uses its SSE2 path). Shared machine: other helpers compile"
  echo "at the same time, so CPU time is the figure to compare; wall is the best of 10 rounds."
  echo "\"before\" is a copy of the page code at cafa14c kept in the example, run in rounds"
  echo "alternating with the current code (\"now\") so that both meet the same load."
  echo
  echo "Command: \`$cmd\` (via bench/pages.sh)"
  echo
  echo "$table"
} >"$out"
cat "$out"
