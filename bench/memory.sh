#!/usr/bin/env bash
# Peak resident memory of the engine (issue 9, item 6): 8 databases of 2 TiB each against 8 of
# 1 GiB, and a short against a longer run, so it shows that memory does not grow with database
# size or test length. The databases are sparse files (holes read as zeros: verification counts
# them as bad pages, which does not matter here), driven by the real io_uring backend through
# crates/mbx-engine/examples/memory.rs. Results: bench/results/<date>/memory.md.
#
# Usage: bench/memory.sh [DIR]   DIR: scratch folder (default bench/scratch; needs ~3 GB free)
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
root=$(dirname "$here")
dir=${1:-$here/scratch}/memory
git_state="$(cd "$root" && git rev-parse --short HEAD)$(cd "$root" && git diff --quiet HEAD || echo '+uncommitted changes')"
(cd "$root" && cargo build --release -q --example memory -p mbx-engine)
bin=$root/target/release/examples/memory
stamp=$(date -u +%Y-%m-%dT%H%M%SZ)
out=$here/results/$stamp
mkdir -p "$out"
report=$out/memory.md
{
  echo "# Engine memory ($stamp, $git_state)"
  echo
  echo "$(rustc --version); $(uname -sr); $(nproc) cores; shared machine (other work may run)."
  echo
  echo "| databases | size each | measured | IOPS | cache metadata | page tracker | journal window | peak RSS |"
  echo "|---|---|---|---|---|---|---|---|"
} >"$report"
run() { # databases, GiB, seconds, target IOPS
  rm -rf "$dir"
  mkdir -p "$dir"
  local cmd="$bin $dir $1 $2 $3 $4"
  echo "$cmd" >>"$out/memory-commands.txt"
  echo "running: $cmd" >&2
  local text
  text=$($cmd)
  rm -rf "$dir"
  local meta tracker journal rss iops
  meta=$(sed -n 's/.*cache metadata \([0-9.]*\) MiB.*/\1/p' <<<"$text")
  tracker=$(sed -n 's/.*page write tracker \([0-9.]*\) MiB.*/\1/p' <<<"$text")
  journal=$(sed -n 's/.*generation journal window \([0-9.]*\) MiB.*/\1/p' <<<"$text")
  rss=$(sed -n 's/.*peak RSS \([0-9.]*\) MiB.*/\1/p' <<<"$text")
  iops=$(sed -n 's/.* at \([0-9.]*\) IOPS.*/\1/p' <<<"$text")
  echo "| $1 | $2 GiB | $3 s | $iops | $meta MiB | $tracker MiB | $journal MiB | $rss MiB |" >>"$report"
}
run 8 1 20 1000
run 8 2048 20 1000
run 8 2048 60 1000
echo >>"$report"
echo "Bound (docs/method.md): cache metadata + journal window + 64 MiB." >>"$report"
cat "$report"
