#!/usr/bin/env bash
# The user-day scheduler alone (issue 28's headroom figure): a day of U users at M messages a day
# scheduled on a simulated clock by the release build of crates/mbx-loadgen/examples/sched_bench.rs
# (sched.rs's Scheduler + SimClock). Every task is dispatched as the day engine does it: taken
# when due in time order (the clock jumps to the next task, at most --tick-ms at a time, as the
# engine's dispatcher sleeps at most 100 ms), recipients chosen for the tasks that send, counted
# per kind, sent on the user's channel and taken off it. No network, one thread.
#
# Reported (summary.md): tasks dispatched, CPU seconds of the whole day (setup included), tasks
# per CPU second on one core, and the share of one core a real-time day of the same users needs
# (CPU seconds / the day's length; goal: under 10%); peak memory. R runs, the median. Tool
# versions in versions.txt, the commands in commands.txt, each run's output in run-N.txt.
#
# Usage: bench/loadgen-sched.sh [--users U] [--messages-per-day M] [--day-hours H] [--runs R]
#   Defaults: 100,000 users, 150 messages a day, an 8 h day, 3 runs. A run takes 35-40 s
#   on a 2-core VM (plus the release build of the example).
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
root=$(dirname "$here")
cmdline="bench/loadgen-sched.sh${*:+ $*}"
users=100000
mpd=150
hours=8
runs=3
usage() {
  sed -n '2,/^set -euo/p' "$0" | sed '$d' | sed 's/^# \{0,1\}//' >&2
  exit 2
}
num() { case $2 in '' | *[!0-9]* | 0) echo "loadgen-sched.sh: $1 needs a positive number, not '$2'" >&2; exit 2 ;; esac; }
while [ $# -gt 0 ]; do
  case $1 in
  --users) num "$1" "${2:-}"; users=$2; shift 2 ;;
  --messages-per-day) num "$1" "${2:-}"; mpd=$2; shift 2 ;;
  --day-hours) num "$1" "${2:-}"; hours=$2; shift 2 ;;
  --runs) num "$1" "${2:-}"; runs=$2; shift 2 ;;
  *) usage ;;
  esac
done
git_state="$(cd "$root" && git rev-parse --short HEAD)$(cd "$root" && git diff --quiet HEAD || echo '+uncommitted changes')"
(cd "$root" && cargo build --release -q -p mbx-loadgen --example sched_bench)
bin=$root/target/release/examples/sched_bench
stamp=$(date -u +%Y-%m-%dT%H%M%SZ)
out=$here/results/loadgen-sched-$stamp
mkdir -p "$out"
echo "$cmdline" >"$out/commands.txt"
{
  echo "date: $stamp"
  echo "sched_bench: crates/mbx-loadgen/examples/sched_bench.rs, release, git $git_state"
  echo "rustc: $(rustc --version)"
  echo "kernel: $(uname -r); cpu: $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //') x $(nproc)"
  echo "load average at start: $(cut -d' ' -f1-3 /proc/loadavg)"
} >"$out/versions.txt"
for r in $(seq 1 "$runs"); do
  args=(--users "$users" --messages-per-day "$mpd" --day-hours "$hours")
  echo "target/release/examples/sched_bench ${args[*]}" >>"$out/commands.txt"
  "$bin" "${args[@]}" >"$out/run-$r.txt"
done
echo "load average at end: $(cut -d' ' -f1-3 /proc/loadavg)" >>"$out/versions.txt"
python3 - "$out" "$runs" <<'PY' >"$out/summary.md"
import statistics, sys
out, runs = sys.argv[1], int(sys.argv[2])
rows = []
for r in range(1, runs + 1):
    kv = dict(l.split("=", 1) for l in open(f"{out}/run-{r}.txt").read().splitlines() if "=" in l)
    rows.append(kv)
f = lambda k: [float(x[k]) for x in rows]
med = lambda k: statistics.median(f(k))
k0 = rows[0]
print(f"# The scheduler alone: {int(k0['users']):,} users x {k0['messages_per_day']} messages/day, "
      f"a day of {float(k0['day_s'])/3600:g} h, simulated clock\n")
print(f"Mix: {k0['mix']}; tasks planned {int(k0['tasks_planned']):,}, dispatched {int(k0['tasks_dispatched']):,} "
      f"(copies addressed {int(k0['copies_addressed']):,}); a real-time day dispatches "
      f"{float(k0['real_time_rate_tasks_per_s']):,.0f} tasks/s.\n")
print("| run | setup s | dispatch CPU s | total CPU s | tasks per CPU s | ns per task | share of one core, real-time day | peak RSS MiB |")
print("|---|---|---|---|---|---|---|---|")
for i, x in enumerate(rows, 1):
    print(f"| {i} | {float(x['setup_s']):.2f} | {float(x['dispatch_cpu_s']):.2f} | {float(x['total_cpu_s']):.2f} | "
          f"{float(x['tasks_per_cpu_s']):,.0f} | {float(x['ns_per_task']):.0f} | "
          f"{float(x['core_share_of_real_time_day_pct']):.3f}% | {int(x['rss_peak_kib'])/1024:.0f} |")
print(f"| **median** | {med('setup_s'):.2f} | {med('dispatch_cpu_s'):.2f} | {med('total_cpu_s'):.2f} | "
      f"**{med('tasks_per_cpu_s'):,.0f}** | {med('ns_per_task'):.0f} | **{med('core_share_of_real_time_day_pct'):.3f}%** | "
      f"{statistics.median(int(x['rss_peak_kib']) for x in rows)/1024:.0f} |")
share = med('core_share_of_real_time_day_pct')
print(f"\nGoal (issue 28): under 10% of one core for the real-time day: "
      f"{'met' if share < 10 else 'NOT met'} ({share:.3f}%).")
PY
cat "$out/summary.md"
echo "results: $out" >&2
