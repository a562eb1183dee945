#!/usr/bin/env bash
# Where the CPU per I/O goes (issue 36, item 1): the Performance engine and fio on the Exchange
# mix at S sessions (default 32), each sampled by `perf record` (the kernel's cpu-clock timer:
# this VM has no hardware counters), and the engine's user-space instructions per I/O counted by
# callgrind (repeatable whatever else the machine runs: the shared 2 cores make CPU time noisy).
#
# - mbxstress: `run` as bench/mix.sh runs it (two databases, a target it cannot reach, S
#   sessions). perf attaches at the measured phase's start (the JSON-lines phase event) and stops
#   at its end, so preparation, cache warm-up and shutdown are not in the profile. Its process
#   CPU over the same span comes from /proc.
# - fio: the mix of bench/mix.sh with the engine's read share and log rate of the same round, at
#   iodepth sessions / 2 x FIO_DEPTH_X per database (default 2: the engine's I/Os in flight),
#   every process of it sampled for the whole run.
# - callgrind (CALLGRIND=1, the default): the same engine run, shorter (RUNTIME_CG, default 20 s
#   of the measured phase, at the speed valgrind allows), collecting only during the measured
#   phase (callgrind_control -i on / off at the phase events); instructions per transactional
#   I/O, by the same categories (inclusive of nothing: each function's own instructions).
# Each sample (or instruction) is put in one category by its symbol (the rules below, first
# match wins), and each category's share of the tool's CPU is turned into µs per transactional
# I/O (database reads + writes, not log or BDM). Results: bench/results/profile-<date>[-LABEL]/.
#
# Usage: bench/profile.sh [LABEL] [DIR]   DIR: scratch folder (default bench/scratch)
# Environment: SESSIONS (default 32), RUNTIME measured seconds (default 20), DB_MIB per database
#              (default 1024), FIO_DEPTH_X (default 2), FREQ perf samples/s (default 1999),
#              MBX_ARGS (more flags for mbxstress run), CALLGRIND (1/0), RUNTIME_CG (default 20),
#              MBX_BIN (profile this mbxstress binary instead of building the tree's; its
#              version line is recorded, e.g. a copy of the build before a change).
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
root=$(dirname "$here")
label=${1:+-$1}
dir=${2:-$here/scratch}/profile
s=${SESSIONS:-32}
runtime=${RUNTIME:-20}
runtime_cg=${RUNTIME_CG:-20}
db_mib=${DB_MIB:-1024}
freq=${FREQ:-1999}
depth=$((s * ${FIO_DEPTH_X:-2} / 2))
read -r -a mbx_extra <<<"${MBX_ARGS:-}"
command -v perf >/dev/null || { apt-get update -qq && apt-get install -y -qq linux-perf >/dev/null; }
command -v fio >/dev/null || { apt-get update -qq && apt-get install -y -qq fio >/dev/null; }
if [ "${CALLGRIND:-1}" = 1 ] && ! command -v valgrind >/dev/null; then
  apt-get update -qq && apt-get install -y -qq valgrind >/dev/null
fi
git_state="$(cd "$root" && git rev-parse --short HEAD)$(cd "$root" && git diff --quiet HEAD || echo '+uncommitted changes')"
if [ -n "${MBX_BIN:-}" ]; then
  git_state="binary $MBX_BIN"
else
  (cd "$root" && cargo build --release -q -p mbxstress)
fi
rm -rf "$dir"
mkdir -p "$dir"
mbx=$dir/mbxstress
cp "${MBX_BIN:-$root/target/release/mbxstress}" "$mbx"
stamp=$(date -u +%Y-%m-%dT%H%M%SZ)
out=$here/results/profile-$stamp$label
mkdir -p "$out"
log() { echo "$*" | tee -a "$out/commands.txt" >&2; }
{
  echo "date: $stamp"
  echo "mbxstress: $("$mbx" --version) (built from git $git_state)"
  echo "fio: $(fio --version); perf: $(perf --version); $(valgrind --version 2>/dev/null || echo no valgrind)"
  echo "kernel: $(uname -r); cpu: $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //') x $(nproc)"
  echo "2 databases x $db_mib MiB, sessions: $s, fio iodepth per database: $depth, runtime: ${runtime}s"
  echo "extra mbxstress run flags: ${MBX_ARGS:-none}"
  echo "load average at start: $(cut -d' ' -f1-3 /proc/loadavg)"
} >"$out/versions.txt"
cd "$dir"
sizing=(--mailboxes $((db_mib * 2)) --quota-mb 1 --databases 2)
log "$mbx prepare ${sizing[*]}"
"$mbx" prepare "${sizing[@]}" >/dev/null
for d in 1 2; do
  fio --name=layout --filename="fio-db$d" --size="${db_mib}M" --rw=write --bs=1M --direct=1 \
    --ioengine=io_uring --iodepth=4 >/dev/null
  fio --name=layout --filename="fio-log$d" --size=256M --rw=write --bs=1M --direct=1 \
    --ioengine=io_uring --iodepth=4 >/dev/null
done
drop() { sync; echo 3 >/proc/sys/vm/drop_caches; }

# mbxstress under a tool started at the measured phase and stopped at its end.
# $1: perf | callgrind; $2: measured seconds. Prints one JSON object (I/Os, CPU, mix, log rate).
mbx_run() {
  rm -rf "$dir/out"
  local args=(run "${sizing[@]}" --iops-per-mailbox 100 --threads "$s" --duration "$2s"
    --sample-interval 5s --out "$dir/out" --progress jsonl "${mbx_extra[@]}")
  local cmd=("$mbx")
  if [ "$1" = callgrind ]; then
    cmd=(valgrind --tool=callgrind --instr-atstart=no --callgrind-out-file="$dir/callgrind.out"
      "$mbx")
  fi
  log "${cmd[*]} ${args[*]}   # $1: perf record -e cpu-clock -F $freq -p PID during the measured phase"
  python3 - "$1" "$dir" "$freq" "$dir/out/result.json" "${cmd[@]}" "${args[@]}" <<'PY'
import json, os, signal, subprocess, sys, time
tool, d, freq, result, cmd = sys.argv[1], sys.argv[2], sys.argv[3], sys.argv[4], sys.argv[5:]
p = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
tick = os.sysconf("SC_CLK_TCK")
def cpu():
    f = open(f"/proc/{p.pid}/stat").read().rsplit(")", 1)[1].split()
    return (int(f[11]) + int(f[12])) / tick
marks, rec = {}, None
for line in p.stdout:
    try:
        e = json.loads(line)
    except ValueError:
        continue
    if e.get("event") == "phase" and e.get("phase") in ("measure", "shutdown"):
        if e["phase"] == "measure":
            if tool == "perf":
                rec = subprocess.Popen(["perf", "record", "-q", "-e", "cpu-clock", "-F", freq,
                                        "-p", str(p.pid), "-o", f"{d}/mbx.perf"],
                                       stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
            else:
                subprocess.run(["callgrind_control", "-i", "on", str(p.pid)],
                               stdout=subprocess.DEVNULL, check=True)
        else:
            if tool == "perf":
                rec.send_signal(signal.SIGINT)
                rec.wait()
            else:
                subprocess.run(["callgrind_control", "-i", "off", str(p.pid)],
                               stdout=subprocess.DEVNULL, check=True)
        marks[e["phase"]] = (time.monotonic(), cpu())
p.wait()
r = json.load(open(result))
(t0, c0), (t1, c1) = marks["measure"], marks["shutdown"]
reads = sum(i["transactional"]["db_reads_per_s"] for i in r["instances"])
writes = sum(i["transactional"]["db_writes_per_s"] for i in r["instances"])
pv = sum(i.get("integrity", {}).get("pages_verified", 0) for i in r["instances"])
pc = sum(i.get("integrity", {}).get("pages_checksummed", 0) for i in r["instances"])
print(json.dumps({
    "ios": (reads + writes) * (t1 - t0), "iops": reads + writes,
    "read_share": reads / max(reads + writes, 1e-9), "cpu_s": c1 - c0,
    "cpu_us_per_io": (c1 - c0) / max((reads + writes) * (t1 - t0), 1) * 1e6,
    "log_writes_per_s": sum(i["total"]["log_writes_per_s"] for i in r["instances"]) / len(r["instances"]),
    "log_write_bytes": sum(i["total"]["log_write_avg_bytes"] for i in r["instances"]) / len(r["instances"]),
    "pages_verified": pv, "pages_checksummed": pc,
    # Pages the measured phase read (transactional and BDM), for pages verified per page read.
    "pages_read_per_s": sum(i["total"]["db_reads_per_s"] * i["total"]["db_read_avg_bytes"] / 32768
                            for i in r["instances"]),
}))
PY
}

drop
m=$(mbx_run perf "$runtime")
echo "$m" >"$out/mbx.json"
log "mbxstress: $m"

read -r mixread lograte logbs < <(python3 -c '
import json, sys
m = json.loads(sys.argv[1])
bs = max(4096, int(-(-m["log_write_bytes"] // 4096) * 4096))
print(round(m["read_share"] * 100), max(1, round(m["log_writes_per_s"])), bs)' "$m")
args=(--output-format=json --ioengine=io_uring --direct=1 --time_based --runtime="$runtime"
  --group_reporting=0)
for d in 1 2; do
  args+=(--name="db$d" --filename="fio-db$d" --rw=randrw --rwmixread="$mixread" --bs=32k
    --iodepth="$depth"
    --name="log$d" --filename="fio-log$d" --rw=write --bs="$logbs" --sync=dsync --iodepth=1
    --rate_iops="$lograte"
    --name="bdm$d" --filename="fio-db$d" --rw=read --bs=256k --iodepth=1 --rate_iops=9)
done
drop
log "perf record -e cpu-clock -F $freq -o fio.perf -- /usr/bin/time -f '%U %S' fio ${args[*]}"
perf record -q -e cpu-clock -F "$freq" -o "$dir/fio.perf" -- \
  /usr/bin/time -f '%U %S' -o "$dir/fio.time" fio "${args[@]}" >"$dir/fio.json"
python3 - "$dir/fio.json" "$dir/fio.time" <<'PY' >"$out/fio.json"
import json, sys
j = json.load(open(sys.argv[1]))
u, s = map(float, open(sys.argv[2]).read().split()[-2:])
db = [x for x in j["jobs"] if x["jobname"].startswith("db")]
rt = max(x["job_runtime"] for x in db) / 1000
ios = sum(x["read"]["total_ios"] + x["write"]["total_ios"] for x in db)
print(json.dumps({"ios": ios, "iops": ios / rt, "cpu_s": u + s,
                  "cpu_us_per_io": (u + s) / max(ios, 1) * 1e6}))
PY
log "fio: $(cat "$out/fio.json")"

for t in mbx fio; do
  perf report -i "$dir/$t.perf" --stdio --no-children --sort dso,sym -g none --percent-limit 0 \
    2>/dev/null | grep -v '^#' | grep -v '^$' >"$out/$t-perf.txt" || true
done
if [ "${CALLGRIND:-1}" = 1 ]; then
  drop
  cg=$(mbx_run callgrind "$runtime_cg")
  echo "$cg" >"$out/mbx-callgrind.json"
  callgrind_annotate --auto=no --threshold=100 "$dir/callgrind.out" 2>/dev/null >"$out/mbx-callgrind.txt" || true
fi

python3 "$here/profile_table.py" "$out" | tee "$out/summary.md"
echo "load average at end: $(cut -d' ' -f1-3 /proc/loadavg)" >>"$out/versions.txt"
cd /
rm -rf "$dir"
echo "results: $out" >&2
