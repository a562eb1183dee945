#!/usr/bin/env bash
# How long a full Performance plan of 2 simulated hours takes (issue 9's acceptance: under a
# second), in a release build: the engine test tests/sim.rs prints its thread's CPU time and wall
# time. Results: bench/results/<date>/sim.md.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
root=$(dirname "$here")
git_state="$(cd "$root" && git rev-parse --short HEAD)$(cd "$root" && git diff --quiet HEAD || echo '+uncommitted changes')"
stamp=$(date -u +%Y-%m-%dT%H%M%SZ)
out=$here/results/$stamp
mkdir -p "$out"
cmd="cargo test --release -q -p mbx-engine --test sim a_two_hour -- --nocapture"
(cd "$root" && cargo test --release -q -p mbx-engine --test sim --no-run)
line=$(cd "$root" && $cmd 2>&1 | grep "2 simulated hours")
{
  echo "# A 2-hour Performance plan on the simulated device ($stamp, $git_state)"
  echo
  echo "$(rustc --version); $(uname -sr); $(nproc) cores; shared machine (other work may run)."
  echo
  echo "Command: \`$cmd\`"
  echo
  echo "Result: $line"
} >"$out/sim.md"
cat "$out/sim.md"
