#!/usr/bin/env bash
# The Performance engine against fio on the Exchange mix (issue 11's acceptance benchmark).
#
# For each session count (SESSIONS, default "8 32") and ROUNDS rounds, in alternating order:
# - mbxstress: `run` with --threads S on two databases and a target it cannot reach (pacing never
#   holds a session back: the engine runs flat out at S sessions). Its process CPU time is read
#   from /proc at the start and the end of the measured phase (the JSON-lines phase events), so
#   preparation, cache warm-up and shutdown are not counted.
# - fio: per database, one job of 32 KiB random reads and writes at rwmixread = the engine's read
#   share (about 70%), iodepth = sessions per database, O_DIRECT, io_uring; one write-through
#   (O_DIRECT + O_DSYNC) sequential log writer at the engine's log write rate and average size of
#   the same round (the previous mbxstress run); one 256 KiB sequential reader at 9 reads/s (BDM).
#   fio writes random data, so it runs on files of the databases' size laid out by fio beside them
#   on the same filesystem (the engine verifies every page it reads: fio must not write into the
#   databases). fio's CPU is its process's user + system time over the run (/usr/bin/time).
# Mean I/Os in flight of each side by Little's law (rate x mean latency over every stream, and
# over the database reads and writes alone): equal sessions is not equal depth, since the
# engine's flusher writes come on top of its sessions' reads.
# Reported: transactional IOPS (database reads + writes, not log or BDM) of each, the ratio, and
# CPU per transactional I/O (each tool's whole CPU, including its log and BDM work, divided by
# its transactional I/Os). Medians over the rounds and each round's ratio, and the engine's page
# fault stalls per second in each round (issue 11: at 128 and 512 sessions, stalls only where the
# device's latency, seen by fio at the same depth, explains them: SESSIONS="128 512").
#
# Usage: bench/mix.sh [DIR]   DIR: scratch folder (default bench/scratch; needs 4 x DB_MIB MiB)
# Environment: ROUNDS (default 5), RUNTIME measured seconds per run (default 20), DB_MIB per
#              database (default 2048), SESSIONS (default "8 32"), MBX_ARGS (more flags for
#              mbxstress run, e.g. "--reactors 1"; recorded in versions.txt), FIO_DEPTH_X (fio's
#              iodepth per database is sessions / 2 times this, default 1: 2 brings fio's I/Os in
#              flight near the engine's, whose flusher writes come on top of its sessions' reads).
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
root=$(dirname "$here")
dir=${1:-$here/scratch}/mix
rounds=${ROUNDS:-5}
runtime=${RUNTIME:-20}
db_mib=${DB_MIB:-2048}
sessions=${SESSIONS:-8 32}
read -r -a mbx_extra <<<"${MBX_ARGS:-}"
command -v fio >/dev/null || { apt-get update -qq && apt-get install -y -qq fio >/dev/null; }
command -v python3 >/dev/null || { echo "python3 is needed to parse results" >&2; exit 2; }
[ -x /usr/bin/time ] || { apt-get update -qq && apt-get install -y -qq time >/dev/null; }
git_state="$(cd "$root" && git rev-parse --short HEAD)$(cd "$root" && git diff --quiet HEAD || echo '+uncommitted changes')"
(cd "$root" && cargo build --release -q)
rm -rf "$dir"
mkdir -p "$dir"
mbx=$dir/mbxstress
cp "$root/target/release/mbxstress" "$mbx"
stamp=$(date -u +%Y-%m-%dT%H%M%SZ)
out=$here/results/mix-$stamp
mkdir -p "$out"
raw=$out/raw.jsonl
: >"$raw"
{
  echo "date: $stamp"
  echo "mbxstress: $("$mbx" --version) (built from git $git_state)"
  echo "fio: $(fio --version)"
  echo "rustc: $(rustc --version)"
  echo "kernel: $(uname -r); cpu: $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //') x $(nproc)"
  echo "filesystem: $(df -T "$dir" | awk 'NR==2{print $2" on "$1}')"
  echo "load average at start: $(cut -d' ' -f1-3 /proc/loadavg)"
  echo "2 databases x $db_mib MiB, sessions: $sessions, rounds: $rounds, runtime: ${runtime}s"
  echo "extra mbxstress run flags: ${MBX_ARGS:-none}; fio depth factor: ${FIO_DEPTH_X:-1}"
} >"$out/versions.txt"
log() { echo "$*" | tee -a "$out/commands.txt" >&2; }
cd "$dir"
# 2 x DB_MIB mailboxes of 1 MB on 2 databases; 100 IOPS each: a target of 204,800 IOPS with the
# default size, far beyond this disk, so pacing never waits.
sizing=(--mailboxes $((db_mib * 2)) --quota-mb 1 --databases 2)
log "$mbx prepare ${sizing[*]}"
"$mbx" prepare "${sizing[@]}" >/dev/null
# fio's own files, the databases' size, laid out once.
for d in 1 2; do
  fio --name=layout --filename="fio-db$d" --size="${db_mib}M" --rw=write --bs=1M --direct=1 \
    --ioengine=io_uring --iodepth=4 >/dev/null
  fio --name=layout --filename="fio-log$d" --size=256M --rw=write --bs=1M --direct=1 \
    --ioengine=io_uring --iodepth=4 >/dev/null
done
drop() { sync; echo 3 >/proc/sys/vm/drop_caches; }

# mbxstress at S sessions -> one JSON object (IOPS, CPU, mix, log rate and size per database).
mbx_run() {
  rm -rf "$dir/out"
  local args=(run "${sizing[@]}" --iops-per-mailbox 100 --threads "$1" --duration "${runtime}s"
    --sample-interval 5s --out "$dir/out" --progress jsonl "${mbx_extra[@]}")
  log "$mbx ${args[*]}"
  python3 - "$mbx" "$dir/out/result.json" "${args[@]}" <<'PY'
import json, os, subprocess, sys, time
mbx, result, args = sys.argv[1], sys.argv[2], sys.argv[3:]
p = subprocess.Popen([mbx] + args, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
tick = os.sysconf("SC_CLK_TCK")
def cpu():
    f = open(f"/proc/{p.pid}/stat").read().rsplit(")", 1)[1].split()
    return (int(f[11]) + int(f[12])) / tick  # utime, stime (fields 14, 15)
marks = {}
for line in p.stdout:
    e = json.loads(line)
    if e.get("event") == "phase" and e.get("phase") in ("measure", "shutdown"):
        marks[e["phase"]] = (time.monotonic(), cpu())
p.wait()
r = json.load(open(result))
(t0, c0), (t1, c1) = marks["measure"], marks["shutdown"]
reads = sum(i["transactional"]["db_reads_per_s"] for i in r["instances"])
writes = sum(i["transactional"]["db_writes_per_s"] for i in r["instances"])
logs = [i["total"]["log_writes_per_s"] for i in r["instances"]]
log_bytes = [i["total"]["log_write_avg_bytes"] for i in r["instances"]]
ios = (reads + writes) * (t1 - t0)
# Mean I/Os in flight by Little's law (rate x mean latency, every stream: database reads and
# writes, BDM, log writes and replication reads), and the database's alone.
def inflight(streams):
    return sum(i["total"][f"{s}s_per_s"] * i["total"][f"{s}_avg_latency_ms"] / 1000
               for i in r["instances"] for s in streams)
print(json.dumps({
    "inflight": inflight(("db_read", "db_write", "log_read", "log_write")),
    "db_inflight": inflight(("db_read", "db_write")),
    "iops": reads + writes, "read_share": reads / max(reads + writes, 1e-9),
    "cpu_s": c1 - c0, "cpu_us_per_io": (c1 - c0) / max(ios, 1) * 1e6,
    "read_ms": sum(i["transactional"]["db_read_avg_latency_ms"] for i in r["instances"]) / len(r["instances"]),
    "log_writes_per_s": sum(logs) / len(logs), "log_write_bytes": sum(log_bytes) / len(log_bytes),
    "stalls_per_s": r["host"]["page_fault_stalls_per_s"]["avg"],
}))
PY
}

# fio at S sessions with the mix and log figures of an mbxstress run -> one JSON object.
fio_run() {
  local s=$1 mix=$2 depth=$(($1 * ${FIO_DEPTH_X:-1} / 2))
  read -r mixread lograte logbs < <(python3 -c '
import json, sys
m = json.loads(sys.argv[1])
bs = max(4096, int(-(-m["log_write_bytes"] // 4096) * 4096))
print(round(m["read_share"] * 100), max(1, round(m["log_writes_per_s"])), bs)' "$mix")
  local args=(--output-format=json --ioengine=io_uring --direct=1 --time_based --runtime="$runtime"
    --group_reporting=0)
  for d in 1 2; do
    args+=(--name="db$d" --filename="fio-db$d" --rw=randrw --rwmixread="$mixread" --bs=32k
      --iodepth="$depth"
      --name="log$d" --filename="fio-log$d" --rw=write --bs="$logbs" --sync=dsync --iodepth=1
      --rate_iops="$lograte"
      --name="bdm$d" --filename="fio-db$d" --rw=read --bs=256k --iodepth=1 --rate_iops=9)
  done
  log "fio ${args[*]}"
  /usr/bin/time -f '%U %S' -o "$dir/fio.time" fio "${args[@]}" >"$dir/fio.json"
  python3 - "$dir/fio.json" "$dir/fio.time" <<'PY'
import json, sys
j = json.load(open(sys.argv[1]))
u, s = map(float, open(sys.argv[2]).read().split()[-2:])
db = [x for x in j["jobs"] if x["jobname"].startswith("db")]
rt = max(x["job_runtime"] for x in db) / 1000
ios = sum(x["read"]["total_ios"] + x["write"]["total_ios"] for x in db)
reads = sum(x["read"]["total_ios"] for x in db)
# Mean I/Os in flight by Little's law, as for mbxstress: every job's rate x mean latency.
def inflight(jobs):
    return sum(x[d]["total_ios"] / (x["job_runtime"] / 1000) * x[d]["lat_ns"]["mean"] / 1e9
               for x in jobs for d in ("read", "write") if x[d]["total_ios"] and x["job_runtime"])
print(json.dumps({
    "inflight": inflight(j["jobs"]), "db_inflight": inflight(db),
    "iops": ios / rt, "read_share": reads / max(ios, 1), "cpu_s": u + s,
    "cpu_us_per_io": (u + s) / max(ios, 1) * 1e6,
    "read_ms": sum(x["read"]["clat_ns"]["mean"] for x in db) / len(db) / 1e6,
}))
PY
}

for s in $sessions; do
  last=""
  for r in $(seq "$rounds"); do
    # fio needs the engine's log figures: the first round runs mbxstress first; later rounds
    # alternate, fio taking the previous mbxstress run's figures.
    order="mbx fio"
    if [ -n "$last" ] && [ $((r % 2)) -eq 0 ]; then order="fio mbx"; fi
    for t in $order; do
      drop
      if [ "$t" = mbx ]; then v=$(mbx_run "$s"); last=$v; else v=$(fio_run "$s" "$last"); fi
      echo "{\"sessions\": $s, \"round\": $r, \"tool\": \"$t\", \"m\": $v}" >>"$raw"
      echo "sessions $s round $r $t: $v" >&2
    done
  done
done
python3 - "$raw" <<'PY' | tee "$out/summary.md"
import json, statistics, sys
rows = [json.loads(l) for l in open(sys.argv[1])]
print("| sessions | tool | median transactional IOPS | median CPU µs per transactional I/O | median read ms | median I/Os in flight: all (database) | page fault stalls/s (each round) |")
print("|---|---|---|---|---|---|---|")
for s in sorted({x["sessions"] for x in rows}):
    for t in ("mbx", "fio"):
        m = [x["m"] for x in rows if x["sessions"] == s and x["tool"] == t]
        stalls = ", ".join(f"{x['stalls_per_s']:.1f}" for x in m) if t == "mbx" else "n/a"
        print(f"| {s} | {t} | {statistics.median(x['iops'] for x in m):.0f} | "
              f"{statistics.median(x['cpu_us_per_io'] for x in m):.1f} | "
              f"{statistics.median(x['read_ms'] for x in m):.2f} | "
              f"{statistics.median(x.get('inflight', 0) for x in m):.1f} "
              f"({statistics.median(x.get('db_inflight', 0) for x in m):.1f}) | {stalls} |")
print()
for s in sorted({x["sessions"] for x in rows}):
    by = {(x["round"], x["tool"]): x["m"] for x in rows if x["sessions"] == s}
    rs = sorted({r for r, _ in by})
    iops = [by[(r, "mbx")]["iops"] / by[(r, "fio")]["iops"] for r in rs]
    cpu = [by[(r, "mbx")]["cpu_us_per_io"] / by[(r, "fio")]["cpu_us_per_io"] for r in rs]
    print(f"- {s} sessions: IOPS mbx/fio per round {', '.join(f'{x:.2f}' for x in iops)} "
          f"(median {statistics.median(iops):.2f}); CPU per I/O mbx/fio "
          f"{', '.join(f'{x:.2f}' for x in cpu)} (median {statistics.median(cpu):.2f})")
PY
echo "load average at end: $(cut -d' ' -f1-3 /proc/loadavg)" >>"$out/versions.txt"
cd /
rm -rf "$dir"
echo "results: $out" >&2
