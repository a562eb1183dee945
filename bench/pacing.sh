#!/usr/bin/env bash
# Pacing accuracy of the Performance test (issue 9, item 9): runs `mbxstress run` on two small
# databases (2 x 1 GiB) at 200, 1,000 and 5,000 target IOPS, each with 5 s, 15 s and 1 s samples,
# and reports, per run, achieved IOPS / target and the variation of the IOPS per second and per
# sample. Results go to bench/results/pacing-<date>/ with the exact commands and versions.
#
# Figures (summary.md):
# - achieved/target: result.json's achieved_iops over target_iops (the whole measured phase).
# - per-second CV: coefficient of variation (population standard deviation / mean) of the
#   per-second transactional IOPS of the measured phase. Taken from the engine's once-per-second
#   progress events (`--progress jsonl`); with 1 s samples also from the samples themselves.
#   Before the pacing fix, the progress figure shared the controller's bug (a sample reset its
#   counters mid-second), so only the 1 s-sample column is a true per-second figure there.
# - seconds within 5%: the share of those per-second figures within 5% of the target (robust to
#   the odd device stall, which a CV is not).
# - per-sample CV and worst sample: the same over the samples.jsonl lines (the last, partial
#   sample excluded), and the sample furthest from the target.
# - DB read / log write ms: the worst instance's average latency: how the (shared) device was
#   doing. With 8 sessions the closed loop cannot reach the target once latencies reach tens of
#   milliseconds, whatever the pacing.
#
# With BASELINE=<git revision>, that revision is built too (from `git archive`, in DIR) and each
# run is done with it first and then with the working tree, alternating, so both see the same
# machine (this one is shared and noisy): the before and after figures side by side.
#
# Usage: bench/pacing.sh [DIR]   DIR: scratch folder for the databases (default bench/scratch)
#        bench/pacing.sh --summarize RESULTS   recompute raw.jsonl and summary.md of a results
#                                              folder from its run folders
# Environment: DURATION (default 60s), TARGETS (default "200 1000 5000"),
#              INTERVALS (default "5s 15s 1s"), BASELINE (default: none).
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
root=$(dirname "$here")
command -v python3 >/dev/null || { echo "python3 is needed to parse results" >&2; exit 2; }

# One run's figures as a JSON line: analyze OUT NAME TARGET INTERVAL BUILD
analyze() {
  python3 - "$@" <<'PY'
import json, os, statistics, sys
out, name, target, interval, build = sys.argv[1], sys.argv[2], float(sys.argv[3]), sys.argv[4], sys.argv[5]
nominal = float(interval.rstrip("s"))
row = {"run": name, "build": build, "target_iops": target, "sample_interval_s": nominal}
def cv(xs):
    return statistics.pstdev(xs) / statistics.mean(xs) if len(xs) > 1 and statistics.mean(xs) > 0 else None
def within(xs, tol=0.05):
    return sum(abs(x / target - 1) <= tol for x in xs) / len(xs) if xs else None
res_path = os.path.join(out, name, "result.json")
if os.path.exists(res_path):
    res = json.load(open(res_path))
    row["achieved_iops"] = res["achieved_iops"]
    row["achieved_over_target"] = res["achieved_iops"] / res["target_iops"]
    row["measured_s"] = res["test"]["duration_s"]
    row["verdict_pass"] = res["verdict"]["pass"]
    row["db_read_avg_ms"] = max(i["transactional"]["db_read_avg_latency_ms"] for i in res["instances"])
    row["log_write_avg_ms"] = max(i["transactional"]["log_write_avg_latency_ms"] for i in res["instances"])
# Per-second IOPS from progress events of the measured phase.
per_second = []
ev = os.path.join(out, name + ".events.jsonl")
for line in open(ev) if os.path.exists(ev) else []:
    try:
        e = json.loads(line)
    except ValueError:
        continue
    if e.get("event") == "progress" and e["progress"]["phase"] == "measure":
        per_second.append((e["progress"]["iops"], e["progress"].get("db_read_avg_ms")))
row["progress_iops"] = [x for x, _ in per_second]
row["progress_cv"] = cv(row["progress_iops"])
row["progress_within_5pct"] = within(row["progress_iops"])
# Seconds where the device kept up: the progress event's DB read average (since the last
# sample) at most 0.5 ms, about this disk's unloaded latency. A stall raises it 3-30x.
steady = [x for x, ms in per_second if ms is not None and ms <= 0.5]
row["steady_seconds"] = len(steady)
row["steady_cv"] = cv(steady)
# Per-sample IOPS: DB reads + writes per second summed over the instances.
samples = []
sp = os.path.join(out, name, "samples.jsonl")
if os.path.exists(sp):
    for line in open(sp):
        s = json.loads(line)
        if abs(s["interval_s"] - nominal) > 0.1 * nominal:
            continue  # the last, partial sample
        samples.append(sum(i["db_reads_per_s"] + i["db_writes_per_s"] for i in s["instances"]))
row["sample_iops"] = samples
row["sample_cv"] = cv(samples)
row["sample_within_5pct"] = within(samples)
row["worst_sample_over_target"] = max(samples, key=lambda x: abs(x - target)) / target if samples else None
print(json.dumps(row))
PY
}

# summary.md from raw.jsonl: summarize OUT
summarize() {
  python3 - "$1/raw.jsonl" >"$1/summary.md" <<'PY'
import json, sys
rows = [json.loads(l) for l in open(sys.argv[1]) if l.strip()]
f = lambda v, fmt: "-" if v is None else format(v, fmt)
print("Targets: achieved/target within 1% (0.990-1.010) over the measured phase; per-second CV under 5% where the device keeps up.")
print("'Steady seconds': seconds whose progress event reports a DB read average (since the last sample) of at most 0.5 ms, this disk's unloaded latency; a device stall raises it 3-30x.\n")
print("| build | target IOPS | samples | achieved IOPS | achieved/target | per-second CV (progress) | seconds within 5% | per-second CV, steady seconds (count) | per-second CV (1 s samples) | per-sample CV | worst sample/target | DB read ms | log write ms | verdict |")
print("|---|---|---|---|---|---|---|---|---|---|---|---|---|---|")
for r in rows:
    one = r["sample_cv"] if r["sample_interval_s"] == 1 else None
    print(f"| {r.get('build', 'current')} | {r['target_iops']:,.0f} | {r['sample_interval_s']:.0f} s | {f(r.get('achieved_iops'), ',.1f')} | "
          f"{f(r.get('achieved_over_target'), '.4f')} | {f(r['progress_cv'], '.1%')} | {f(r.get('progress_within_5pct'), '.0%')} | "
          f"{f(r.get('steady_cv'), '.1%')} ({r.get('steady_seconds', '-')}) | "
          f"{f(one, '.1%')} | {f(r['sample_cv'], '.1%')} | {f(r['worst_sample_over_target'], '.3f')} | "
          f"{f(r.get('db_read_avg_ms'), '.1f')} | {f(r.get('log_write_avg_ms'), '.1f')} | "
          f"{'-' if 'verdict_pass' not in r else ('pass' if r['verdict_pass'] else 'FAIL')} |")
PY
}

if [ "${1:-}" = "--summarize" ]; then
  out=${2:?usage: bench/pacing.sh --summarize RESULTS}
  : >"$out/raw.jsonl.new"
  # In the order the runs were made (commands.txt), baseline and current alternating.
  grep -o -- '--out [^ ]*' "$out/commands.txt" | while read -r _ path; do
    name=$(basename "$path")
    build=current
    case $name in base-*) build=baseline ;; esac
    spec=${name#base-}
    target=${spec%%-s*}
    target=${target#t}
    interval=${spec##*-s}
    analyze "$out" "$name" "$target" "$interval" "$build" >>"$out/raw.jsonl.new"
  done
  mv "$out/raw.jsonl.new" "$out/raw.jsonl"
  summarize "$out"
  cat "$out/summary.md"
  exit 0
fi

dir=${1:-$here/scratch}
duration=${DURATION:-60s}
targets=${TARGETS:-200 1000 5000}
intervals=${INTERVALS:-5s 15s 1s}
mailboxes=2048
# Record what is being measured before building (edits made during the run must not show).
git_state="$(cd "$root" && git rev-parse --short HEAD)$(cd "$root" && git diff --quiet HEAD || echo '+uncommitted changes')"
(cd "$root" && cargo build --release -q)
mbx=$root/target/release/mbxstress
builds="current"
if [ -n "${BASELINE:-}" ]; then
  base_rev=$(cd "$root" && git rev-parse --short "$BASELINE")
  base_src=$dir/pacing-baseline-src
  rm -rf "$base_src"
  mkdir -p "$base_src"
  (cd "$root" && git archive "$base_rev") | tar -x -C "$base_src"
  (cd "$base_src" && cargo build --release -q)
  builds="baseline current"
fi
stamp=$(date -u +%Y-%m-%dT%H%M%SZ)
out=$here/results/pacing-$stamp
mkdir -p "$out" "$dir"
rm -rf "$dir"/pace-*db "$dir"/pace-*logs
: >"$out/raw.jsonl"

{
  echo "date: $stamp"
  echo "mbxstress: $($mbx --version) (built from git $git_state)"
  if [ -n "${BASELINE:-}" ]; then
    echo "baseline: $("$base_src/target/release/mbxstress" --version) (built from git $base_rev)"
  fi
  echo "rustc: $(rustc --version)"
  echo "kernel: $(uname -r); cpu: $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //') x $(nproc)"
  echo "filesystem: $(df -T "$dir" | awk 'NR==2{print $2" on "$1}')"
  echo "load average at start: $(cut -d' ' -f1-3 /proc/loadavg)"
  echo "runs: targets $targets IOPS x sample intervals $intervals, $duration measured each"
} >"$out/versions.txt"

for target in $targets; do
  # mailboxes x IOPS per mailbox = target (2048 is a power of two: the quotient is exact).
  ipm=$(python3 -c "print(repr($target / $mailboxes))")
  for interval in $intervals; do
    for build in $builds; do
      if [ "$build" = baseline ]; then
        bin=$base_src/target/release/mbxstress name=base-t${target}-s${interval} db=pace-base
      else
        bin=$mbx name=t${target}-s${interval} db=pace
      fi
      # Each build has its own databases (formats may differ); later runs attach them.
      cmd="$bin run --mailboxes $mailboxes --quota-mb 1 --iops-per-mailbox $ipm --databases 2 --db-path $dir/$db-db --log-path $dir/$db-logs --bdm on --duration $duration --sample-interval $interval --out $out/$name --progress jsonl"
      echo "$cmd" >>"$out/commands.txt"
      echo "running $name: $cmd" >&2
      $cmd >"$out/$name.events.jsonl" 2>"$out/$name.stderr" || true
      # Keep the measured phase's progress and the log and phase events (samples are in the
      # run's samples.jsonl already).
      python3 -c 'import json,sys; [print(l, end="") for l in open(sys.argv[1]) if (lambda e: e.get("event") in ("log", "phase") or (e.get("event") == "progress" and e["progress"]["phase"] == "measure"))(json.loads(l))]' \
        "$out/$name.events.jsonl" >"$out/$name.events.tmp" && mv "$out/$name.events.tmp" "$out/$name.events.jsonl"
      analyze "$out" "$name" "$target" "$interval" "$build" >>"$out/raw.jsonl"
      # The summary needs result.json, samples.jsonl and the events; the HTML and CSVs are
      # regenerated from them (`mbxstress report`).
      rm -f "$out/$name/report.html" "$out/$name"/*.csv
    done
  done
done
rm -rf "$dir"/pace-*db "$dir"/pace-*logs "${base_src:-$dir/pacing-baseline-src}"
echo "load average at end: $(cut -d' ' -f1-3 /proc/loadavg)" >>"$out/versions.txt"
summarize "$out"
cat "$out/versions.txt" "$out/summary.md"
