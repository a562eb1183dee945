#!/usr/bin/env bash
# The engine's own ceiling (issue 11): transactional IOPS per core of one reactor on the
# simulated device (every I/O a fixed 100 us, a target out of reach, 64 sessions on two
# databases, by default), from tests/ceiling.rs in a release build, with the simulator's CPU and
# without it. Results: bench/results/ceiling-<date>/ceiling.md.
# Then the same engine on 1 and 2 reactors (issue 11, "every core": one thread each, the two
# databases partitioned between them), in transactional IOPS per wall second with the cores busy
# (MBX_CEILING_REACTORS, default "1 2"; MBX_CEILING_ROUNDS alternating rounds, default 3).
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
    cmd="MBX_CEILING_SESSIONS=$s cargo test --release -q -p mbx-engine --test ceiling -- --ignored --nocapture --exact the_engine_ceiling_on_a_fast_simulated_device"
    line=$(cd "$root" && MBX_CEILING_SESSIONS=$s cargo test --release -q -p mbx-engine --test ceiling -- --ignored --nocapture --exact the_engine_ceiling_on_a_fast_simulated_device 2>&1 | grep "^ceiling:")
    echo "- \`$cmd\`"
    echo "  $line"
  done
  echo
  echo "## Reactors (wall time: the machine's load shows in the cores busy; load average before: $(cut -d' ' -f1-3 /proc/loadavg))"
  echo
  cmd="MBX_CEILING_SESSIONS=64 MBX_CEILING_REACTORS='1 2' cargo test --release -q -p mbx-engine --test ceiling -- --ignored --nocapture --exact the_engine_ceiling_with_several_reactors"
  echo "- \`$cmd\`"
  for round in $(seq 1 "${MBX_CEILING_ROUNDS:-3}"); do
    echo "  round $round, load average before: $(cut -d' ' -f1-3 /proc/loadavg)"
    (cd "$root" && MBX_CEILING_SESSIONS=64 MBX_CEILING_REACTORS="${MBX_CEILING_REACTORS:-1 2}" cargo test --release -q -p mbx-engine --test ceiling -- --ignored --nocapture --exact the_engine_ceiling_with_several_reactors 2>&1 | grep "^reactors:" | sed "s/^/  round $round: /")
  done
} >"$out/ceiling.md"
cat "$out/ceiling.md"
