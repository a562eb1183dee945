#!/usr/bin/env bash
# Compares mbxstress with fio on the same file, machine and run (issue 3's acceptance benchmarks):
#   1. 32 KiB random read, QD 32, O_DIRECT, io_uring: IOPS and CPU per I/O
#   2. 1 MiB sequential write, QD 4, O_DIRECT, io_uring, time-based on the same file: bandwidth
#   3. database creation (mbxstress prepare, new file) vs fio 1 MiB sequential write of the same
#      number of bytes to a new file
# Each comparison alternates the two tools for ROUNDS rounds (this machine's disk is noisy) and
# reports the median of each and the ratio of medians. Results go to bench/results/<date>/ with the
# tool versions and the exact commands.
#
# Usage: bench/run.sh [DIR]   DIR: where the test files go (default: bench/scratch, ~5 GiB free)
# Environment: ROUNDS (default 5), RUNTIME seconds per random-read run (default 10),
#              SIZE_GIB file size (default 4).
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
root=$(dirname "$here")
dir=${1:-$here/scratch}
rounds=${ROUNDS:-5}
runtime=${RUNTIME:-10}
size_gib=${SIZE_GIB:-4}

command -v fio >/dev/null || { apt-get update -qq && apt-get install -y -qq fio >/dev/null; }
command -v python3 >/dev/null || { echo "python3 is needed to parse results" >&2; exit 2; }
# Record what is being measured before building (edits made during the run must not show).
git_state="$(cd "$root" && git rev-parse --short HEAD)$(cd "$root" && git diff --quiet HEAD || echo '+uncommitted changes')"
(cd "$root" && cargo build --release -q)
mbx=$root/target/release/mbxstress
mkdir -p "$dir"
stamp=$(date -u +%Y-%m-%dT%H%M%SZ)
out=$here/results/$stamp
mkdir -p "$out"
raw=$out/raw.jsonl
: >"$raw"

log() { echo "$*" | tee -a "$out/commands.txt" >&2; }

rr_file=$dir/randread.dat
sw_file=$dir/create.dat
db_dir=$dir/db

# Lay out the random-read file once with fio (both tools then read the same bytes).
log "layout: fio --name=layout --filename=$rr_file --size=${size_gib}G --rw=write --bs=1M --direct=1 --ioengine=io_uring --iodepth=4"
fio --name=layout --filename="$rr_file" --size="${size_gib}G" --rw=write --bs=1M --direct=1 \
  --ioengine=io_uring --iodepth=4 --output-format=json >/dev/null

for r in $(seq 1 "$rounds"); do
  # 1. random read
  cmd="fio --name=randread --filename=$rr_file --size=${size_gib}G --rw=randread --bs=32k --iodepth=32 --ioengine=io_uring --direct=1 --runtime=$runtime --time_based --output-format=json"
  log "round $r: $cmd"
  fio --name=randread --filename="$rr_file" --size="${size_gib}G" --rw=randread --bs=32k --iodepth=32 \
    --ioengine=io_uring --direct=1 --runtime="$runtime" --time_based --output-format=json \
    | python3 -c 'import json,sys; j=json.load(sys.stdin)["jobs"][0]; rt=j["job_runtime"]/1000; ios=j["read"]["total_ios"]; cpu=(j["usr_cpu"]+j["sys_cpu"])/100*rt; print(json.dumps({"test":"randread","tool":"fio","iops":j["read"]["iops"],"cpu_us_per_io":cpu*1e6/ios,"p99_ms":j["read"]["clat_ns"]["percentile"]["99.000000"]/1e6}))' >>"$raw"
  cmd="$mbx iobench --file $rr_file --size ${size_gib}G --rw randread --bs 32k --iodepth 32 --engine io_uring --direct 1 --runtime ${runtime}s --json"
  log "round $r: $cmd"
  $cmd | python3 -c 'import json,sys; j=json.load(sys.stdin); print(json.dumps({"test":"randread","tool":"mbxstress","iops":j["read"]["iops"],"cpu_us_per_io":j["cpu_us_per_io"],"p99_ms":j["read"]["latency_ms"]["p99"]}))' >>"$raw"

  # 2. sequential write, 1 MiB, time-based on the same laid-out file
  cmd="fio --name=seqwrite --filename=$rr_file --size=${size_gib}G --rw=write --bs=1M --iodepth=4 --ioengine=io_uring --direct=1 --runtime=$runtime --time_based --output-format=json"
  log "round $r: $cmd"
  $cmd | python3 -c 'import json,sys; j=json.load(sys.stdin)["jobs"][0]; print(json.dumps({"test":"seqwrite","tool":"fio","mib_per_s":j["write"]["bw_bytes"]/1048576}))' >>"$raw"
  cmd="$mbx iobench --file $rr_file --size ${size_gib}G --rw write --bs 1M --iodepth 4 --engine io_uring --direct 1 --runtime ${runtime}s --force --json"
  log "round $r: $cmd"
  $cmd | python3 -c 'import json,sys; j=json.load(sys.stdin); print(json.dumps({"test":"seqwrite","tool":"mbxstress","mib_per_s":j["write"]["mib_per_s"]}))' >>"$raw"

  # 3. database creation vs fio sequential write of the same size
  rm -rf "$db_dir"
  cmd="$mbx prepare --databases 1 --database-size-mb $((size_gib*1024)) --db-path $db_dir --log-path $db_dir/logs --json"
  log "round $r: $cmd"
  $cmd | python3 -c 'import json,sys; j=json.load(sys.stdin); print(json.dumps({"test":"create","tool":"mbxstress","mib_per_s":j["mib_per_s"]}))' >>"$raw"
  rm -rf "$db_dir"
  cmd="fio --name=create --filename=$sw_file --size=${size_gib}G --rw=write --bs=1M --iodepth=4 --ioengine=io_uring --direct=1 --output-format=json"
  log "round $r: $cmd"
  $cmd | python3 -c 'import json,sys; j=json.load(sys.stdin)["jobs"][0]; print(json.dumps({"test":"create","tool":"fio","mib_per_s":j["write"]["bw_bytes"]/1048576}))' >>"$raw"
  rm -f "$sw_file"
  rm -rf "$db_dir"
  # 2b. database creation with 2 databases (parallel), same total bytes
  half=$((size_gib*512))
  cmd="$mbx prepare --databases 2 --database-size-mb $half --db-path $db_dir --log-path $db_dir/logs --json"
  log "round $r: $cmd"
  $cmd | python3 -c 'import json,sys; j=json.load(sys.stdin); print(json.dumps({"test":"create2","tool":"mbxstress","mib_per_s":j["mib_per_s"]}))' >>"$raw"
  rm -rf "$db_dir"
done
rm -f "$rr_file"

{
  echo "date: $stamp"
  echo "mbxstress: $($mbx --version) (built from git $git_state)"
  echo "fio: $(fio --version)"
  echo "rustc: $(rustc --version)"
  echo "kernel: $(uname -r)"
  echo "cpu: $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //') x $(nproc)"
  echo "filesystem: $(df -T "$dir" | awk 'NR==2{print $2" on "$1}')"
  echo "rounds: $rounds, random-read runtime: ${runtime}s, file size: ${size_gib} GiB"
} >"$out/versions.txt"

python3 - "$raw" >"$out/summary.md" <<'PY'
import json, statistics, sys
rows = [json.loads(l) for l in open(sys.argv[1]) if l.strip()]
def med(test, tool, key):
    v = [r[key] for r in rows if r["test"] == test and r["tool"] == tool]
    return statistics.median(v) if v else float("nan"), v
print("| comparison | fio (median) | mbxstress (median) | ratio mbxstress/fio | target |")
print("|---|---|---|---|---|")
f, fv = med("randread", "fio", "iops"); m, mv = med("randread", "mbxstress", "iops")
print(f"| 32 KiB randread QD32, IOPS | {f:,.0f} | {m:,.0f} | {m/f:.3f} | >= 0.95 |")
f2, _ = med("randread", "fio", "cpu_us_per_io"); m2, _ = med("randread", "mbxstress", "cpu_us_per_io")
print(f"| same, CPU us per I/O (lower is better) | {f2:.2f} | {m2:.2f} | {m2/f2:.3f} | <= 1.0 |")
f3, _ = med("randread", "fio", "p99_ms"); m3, _ = med("randread", "mbxstress", "p99_ms")
print(f"| same, p99 latency ms | {f3:.3f} | {m3:.3f} | {m3/f3:.3f} | (info) |")
f, _ = med("seqwrite", "fio", "mib_per_s"); m, _ = med("seqwrite", "mbxstress", "mib_per_s")
print(f"| 1 MiB seq write QD4, MiB/s | {f:,.0f} | {m:,.0f} | {m/f:.3f} | (info) |")
f, _ = med("create", "fio", "mib_per_s"); m, _ = med("create", "mbxstress", "mib_per_s")
print(f"| database creation vs fio 1 MiB seq write, MiB/s | {f:,.0f} | {m:,.0f} | {m/f:.3f} | >= 0.9 |")
m, _ = med("create2", "mbxstress", "mib_per_s")
print(f"| database creation, 2 databases in parallel, MiB/s | | {m:,.0f} | {m/f:.3f} | (info) |")
print()
print("Per-round values:")
print()
for t in ["randread", "seqwrite", "create", "create2"]:
    for tool in ["fio", "mbxstress"]:
        key = "iops" if t == "randread" else "mib_per_s"
        _, v = med(t, tool, key)
        if v:
            print(f"- {t} {tool} {key}: " + ", ".join(f"{x:,.0f}" for x in v))
PY
cat "$out/versions.txt" "$out/summary.md"
echo "results in $out"
