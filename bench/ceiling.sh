#!/usr/bin/env bash
# The engine's own ceiling (issue 11): transactional IOPS per core of one reactor on the
# simulated device (every I/O a fixed 100 us, a target out of reach, 64 sessions on two
# databases, by default), from tests/ceiling.rs in a release build, with the simulator's CPU and
# without it. Results: bench/results/ceiling-<date>/ceiling.md.
# Usage: bench/ceiling.sh [sessions...]   (default: 8 64 256)
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
root=$(dirname "$here")
git_state="$(cd "$root" && git rev-parse --short HEAD)$(cd "$root" && git diff --quiet HEAD || echo '+uncommitted changes')"
stamp=$(date -u +%Y-%m-%dT%H%M%SZ)
out=$here/results/ceiling-$stamp
mkdir -p "$out"
sessions=("$@")
[ ${#sessions[@]} -gt 0 ] || sessions=(8 64 256)
(cd "$root" && cargo test --release -q -p mbx-engine --test ceiling --no-run)
{
  echo "# The engine's ceiling on the simulated device ($stamp, $git_state)"
  echo
  echo "$(rustc --version); $(uname -sr); $(nproc) cores; shared machine (other work may run):"
  echo "CPU time of the test's thread, not wall time."
  echo
  for s in "${sessions[@]}"; do
    cmd="MBX_CEILING_SESSIONS=$s cargo test --release -q -p mbx-engine --test ceiling -- --ignored --nocapture"
    line=$(cd "$root" && MBX_CEILING_SESSIONS=$s cargo test --release -q -p mbx-engine --test ceiling -- --ignored --nocapture 2>&1 | grep "^ceiling:")
    echo "- \`$cmd\`"
    echo "  $line"
  done
} >"$out/ceiling.md"
cat "$out/ceiling.md"
