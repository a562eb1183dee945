#!/usr/bin/env bash
# Before/after A/B of mbxstress against itself and fio, interleaved within each round: database
# creation (`prepare`, one new 4 GiB database) against fio's 1 MiB sequential write of a new file
# of the same size, and 32 KiB random reads at QD 32 (`iobench`) against fio on one laid-out
# file. Two separate bench/run.sh runs on this VM's disk differ more between themselves (fio's
# own medians moved 20% between two quiet runs) than a code change is likely to; here every
# round runs all three tools back to back, in a rotating order, so each sees the same disk.
# Reports the median of each tool and the ratios of medians (after/before, each/fio).
#
# Usage: bench/ab.sh BEFORE_REV [DIR]   BEFORE_REV: the git revision to compare with the working
#        tree (built from `git archive` in DIR); DIR: scratch folder (default bench/scratch,
#        ~9 GiB free)
# Environment: ROUNDS (default 9), RUNTIME seconds per random-read run (default 10), SIZE_GIB
#              (default 4).
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
root=$(dirname "$here")
before_rev=$(cd "$root" && git rev-parse --short "${1:?usage: bench/ab.sh BEFORE_REV [DIR]}")
dir=${2:-$here/scratch}
rounds=${ROUNDS:-9}
runtime=${RUNTIME:-10}
size_gib=${SIZE_GIB:-4}
command -v fio >/dev/null || { apt-get update -qq && apt-get install -y -qq fio >/dev/null; }
command -v python3 >/dev/null || { echo "python3 is needed to parse results" >&2; exit 2; }
git_state="$(cd "$root" && git rev-parse --short HEAD)$(cd "$root" && git diff --quiet HEAD || echo '+uncommitted changes')"
(cd "$root" && cargo build --release -q)
mkdir -p "$dir"
src=$dir/ab-before-src
rm -rf "$src"
mkdir -p "$src"
(cd "$root" && git archive "$before_rev") | tar -x -C "$src"
(cd "$src" && cargo build --release -q)
# Copies: a rebuild while this runs must not change what is measured.
cp "$src/target/release/mbxstress" "$dir/mbx-before"
cp "$root/target/release/mbxstress" "$dir/mbx-after"
rm -rf "$src"
stamp=$(date -u +%Y-%m-%dT%H%M%SZ)
out=$here/results/ab-$stamp
mkdir -p "$out"
raw=$out/raw.jsonl
: >"$raw"
{
  echo "date: $stamp"
  echo "before: $("$dir/mbx-before" --version) (built from git $before_rev)"
  echo "after: $("$dir/mbx-after" --version) (built from git $git_state)"
  echo "fio: $(fio --version)"
  echo "rustc: $(rustc --version)"
  echo "kernel: $(uname -r); cpu: $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //') x $(nproc)"
  echo "filesystem: $(df -T "$dir" | awk 'NR==2{print $2" on "$1}')"
  echo "load average at start: $(cut -d' ' -f1-3 /proc/loadavg)"
  echo "rounds: $rounds, random-read runtime: ${runtime}s, size: $size_gib GiB"
} >"$out/versions.txt"

rr=$dir/ab-randread.dat
cf=$dir/ab-create.dat
db=$dir/ab-db
log() { echo "$*" | tee -a "$out/commands.txt" >&2; }
fio --name=layout --filename="$rr" --size="${size_gib}G" --rw=write --bs=1M --direct=1 \
  --ioengine=io_uring --iodepth=4 --output-format=json >/dev/null

create() { # TOOL ROUND
  rm -rf "$db" "$cf"
  if [ "$1" = fio ]; then
    cmd="fio --name=create --filename=$cf --size=${size_gib}G --rw=write --bs=1M --iodepth=4 --ioengine=io_uring --direct=1 --output-format=json"
    log "round $2: $cmd"
    $cmd | python3 -c 'import json,sys; j=json.load(sys.stdin)["jobs"][0]; print(json.dumps({"test":"create","tool":"fio","mib_per_s":j["write"]["bw_bytes"]/1048576}))' >>"$raw"
  else
    cmd="$dir/mbx-$1 prepare --databases 1 --database-size-mb $((size_gib * 1024)) --db-path $db --log-path $db/logs --json"
    log "round $2: $cmd"
    $cmd | python3 -c 'import json,sys; j=json.load(sys.stdin); print(json.dumps({"test":"create","tool":sys.argv[1],"mib_per_s":j["mib_per_s"]}))' "$1" >>"$raw"
  fi
  rm -rf "$db" "$cf"
}

randread() { # TOOL ROUND
  if [ "$1" = fio ]; then
    cmd="fio --name=randread --filename=$rr --size=${size_gib}G --rw=randread --bs=32k --iodepth=32 --ioengine=io_uring --direct=1 --runtime=$runtime --time_based --output-format=json"
    log "round $2: $cmd"
    $cmd | python3 -c 'import json,sys; j=json.load(sys.stdin)["jobs"][0]; rt=j["job_runtime"]/1000; ios=j["read"]["total_ios"]; cpu=(j["usr_cpu"]+j["sys_cpu"])/100*rt; print(json.dumps({"test":"randread","tool":"fio","iops":j["read"]["iops"],"cpu_us_per_io":cpu*1e6/ios}))' >>"$raw"
  else
    cmd="$dir/mbx-$1 iobench --file $rr --size ${size_gib}G --rw randread --bs 32k --iodepth 32 --engine io_uring --direct 1 --runtime ${runtime}s --json"
    log "round $2: $cmd"
    $cmd | python3 -c 'import json,sys; j=json.load(sys.stdin); print(json.dumps({"test":"randread","tool":sys.argv[1],"iops":j["read"]["iops"],"cpu_us_per_io":j["cpu_us_per_io"]}))' "$1" >>"$raw"
  fi
}

orders=("fio before after" "before after fio" "after fio before")
for r in $(seq 1 "$rounds"); do
  order=${orders[$(((r - 1) % 3))]}
  for t in $order; do create "$t" "$r"; done
  for t in $order; do randread "$t" "$r"; done
done
rm -f "$rr" "$dir/mbx-before" "$dir/mbx-after"
echo "load average at end: $(cut -d' ' -f1-3 /proc/loadavg)" >>"$out/versions.txt"

python3 - "$raw" >"$out/summary.md" <<'PY'
import json, statistics, sys
rows = [json.loads(l) for l in open(sys.argv[1]) if l.strip()]
def vals(test, tool, key):
    return [r[key] for r in rows if r["test"] == test and r["tool"] == tool]
def med(test, tool, key):
    v = vals(test, tool, key)
    return statistics.median(v) if v else float("nan")
print("| figure | fio | before | after | after/before | before/fio | after/fio |")
print("|---|---|---|---|---|---|---|")
for test, key, label in [("create", "mib_per_s", "database creation, MiB/s"),
                         ("randread", "iops", "32 KiB randread QD32, IOPS"),
                         ("randread", "cpu_us_per_io", "same, CPU us per I/O")]:
    f, b, a = (med(test, t, key) for t in ("fio", "before", "after"))
    print(f"| {label} | {f:,.2f} | {b:,.2f} | {a:,.2f} | {a / b:.3f} | {b / f:.3f} | {a / f:.3f} |")
print("\nPer-round values (in run order within each round: the order rotates):\n")
for test, key in [("create", "mib_per_s"), ("randread", "iops"), ("randread", "cpu_us_per_io")]:
    for tool in ("fio", "before", "after"):
        print(f"- {test} {tool} {key}: " + ", ".join(f"{v:,.1f}" for v in vals(test, tool, key)))
PY
cat "$out/versions.txt" "$out/summary.md"
echo "results in $out"
