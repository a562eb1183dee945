#!/usr/bin/env bash
# The sequential passes against fio, and the Soft Recovery replay rate.
#
# - Database Backup: `mbxstress run --test backup` reads every database file once in 256 KiB
#   reads, 4 in flight per database, all databases at once, verifying every page; fio reads the
#   same files the same way (one job per file, 256 KiB sequential reads, iodepth 4, O_DIRECT,
#   io_uring).
# - Checksum: `mbxstress run --test checksum` (64 KiB reads, 4 in flight per file, every page
#   verified, plus the few log files) against fio's 64 KiB sequential reads of the same database
#   files at iodepth 4.
# Every round runs the four back to back, in a rotating order, with the page cache dropped before
# each (we are root). This VM's disk is a file on a host that caches it: a read of data another
# tool has just read is much faster (a 1 GiB file read first at ~1,050 MiB/s, then at ~1,500 by
# whichever tool came second), so before each measured run the files are read once at 1 MiB
# (unmeasured, `warm`), and every tool starts from the same state. The summary gives medians and
# the ratios of medians, with each round's ratio.
# - Soft Recovery: one `run --test soft-recovery --log-files-to-replay N` at the end (it writes
#   the databases): log files replayed per second, seconds per log, and the replay I/O shape.
#
# Usage: bench/backup.sh [DIR]   DIR: scratch folder (default bench/scratch; needs
#        DATABASES x DB_MIB MiB plus the logs)
# Environment: DATABASES (default 4), DB_MIB per database (default 1024), ROUNDS (default 7),
#              LOGS log files to replay per database (default 100), MBX_BIN (measure this
#              mbxstress binary instead of building the tree's, e.g. the build of an earlier
#              commit on the same machine; its version line is recorded), LABEL (a suffix of the
#              results folder's name).
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
root=$(dirname "$here")
dir=${1:-$here/scratch}/backup
databases=${DATABASES:-4}
db_mib=${DB_MIB:-1024}
rounds=${ROUNDS:-7}
logs=${LOGS:-100}
command -v fio >/dev/null || { apt-get update -qq && apt-get install -y -qq fio >/dev/null; }
command -v python3 >/dev/null || { echo "python3 is needed to parse results" >&2; exit 2; }
git_state="$(cd "$root" && git rev-parse --short HEAD)$(cd "$root" && git diff --quiet HEAD || echo '+uncommitted changes')"
if [ -n "${MBX_BIN:-}" ]; then
  git_state="binary $MBX_BIN"
else
  (cd "$root" && cargo build --release -q)
fi
rm -rf "$dir"
mkdir -p "$dir"
# A copy: a rebuild while this runs must not change what is measured.
mbx=$dir/mbxstress
cp "${MBX_BIN:-$root/target/release/mbxstress}" "$mbx"
stamp=$(date -u +%Y-%m-%dT%H%M%SZ)
out=$here/results/backup-$stamp${LABEL:+-$LABEL}
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
  echo "databases: $databases x $db_mib MiB, rounds: $rounds, log files to replay: $logs"
} >"$out/versions.txt"
log() { echo "$*" | tee -a "$out/commands.txt" >&2; }
cd "$dir"
# One mailbox of DB_MIB MB per database.
sizing=(--mailboxes "$databases" --quota-mb "$db_mib" --databases "$databases")
log "$mbx prepare ${sizing[*]}"
"$mbx" prepare "${sizing[@]}" >/dev/null
files=(mbxstress-data/databases/*.edb)
drop() { sync; echo 3 >/proc/sys/vm/drop_caches; }
warm() { # read every file once, unmeasured, so the host cache is in the same state for each tool
  local args=(--ioengine=io_uring --direct=1 --rw=read --bs=1M --iodepth=8)
  for f in "${files[@]}"; do args+=(--name="$(basename "$f")" --filename="$f"); done
  fio "${args[@]}" >/dev/null
}
rate() { # result.json -> summed MB/s (10^6 B/s) over the pass
  python3 - "$1" "$2" <<'PY'
import json, sys
r = json.load(open(sys.argv[1]))
if sys.argv[2] == "backup":
    print(r["backup_sum_mb_per_s"])
else:
    rows = r["checksum"]
    print(sum(x["bytes"] for x in rows) / max(x["elapsed_s"] for x in rows) / 1e6)
PY
}
fio_rate() { # bs -> summed MB/s over all files (bytes / longest job runtime)
  local args=(--output-format=json --ioengine=io_uring --direct=1 --rw=read --bs="$1" --iodepth=4)
  for f in "${files[@]}"; do args+=(--name="$(basename "$f")" --filename="$f"); done
  log "fio ${args[*]}"
  fio "${args[@]}" >"$dir/fio.json"
  python3 -c 'import json,sys; j=json.load(open(sys.argv[1])); print(sum(x["read"]["io_bytes"] for x in j["jobs"]) / max(x["job_runtime"] for x in j["jobs"]) / 1e3)' "$dir/fio.json"
}
mbx_rate() { # test -> MB/s
  rm -rf "$dir/out"
  log "$mbx run --test $1 ${sizing[*]} --out $dir/out --progress quiet"
  "$mbx" run --test "$1" "${sizing[@]}" --out "$dir/out" --progress quiet >/dev/null
  rate "$dir/out/result.json" "$1"
}
tools=(backup fio256k checksum fio64k)
for r in $(seq "$rounds"); do
  for k in 0 1 2 3; do
    t=${tools[$(((k + r) % 4))]}
    warm
    drop
    case $t in
      backup | checksum) v=$(mbx_rate "$t") ;;
      fio256k) v=$(fio_rate 256k) ;;
      fio64k) v=$(fio_rate 64k) ;;
    esac
    echo "{\"round\": $r, \"tool\": \"$t\", \"mb_per_s\": $v}" >>"$raw"
    echo "round $r $t: $v MB/s" >&2
  done
done
# Soft Recovery: generates LOGS log files per database, stops dirty, replays them.
drop
rm -rf "$dir/out"
log "$mbx run --test soft-recovery ${sizing[*]} --log-files-to-replay $logs --out $dir/out --progress quiet"
"$mbx" run --test soft-recovery "${sizing[@]}" --log-files-to-replay "$logs" --out "$dir/out" --progress quiet >/dev/null
cp "$dir/out/result.json" "$out/soft-recovery-result.json"
python3 - "$raw" "$out/soft-recovery-result.json" <<'PY' | tee "$out/summary.md"
import json, statistics, sys
rows = [json.loads(l) for l in open(sys.argv[1])]
by = {}
for x in rows:
    by.setdefault(x["tool"], {})[x["round"]] = x["mb_per_s"]
med = {t: statistics.median(v.values()) for t, v in by.items()}
print("| tool | median MB/s | rounds |")
print("|---|---|---|")
for t in ["backup", "fio256k", "checksum", "fio64k"]:
    print(f"| {t} | {med[t]:.1f} | {', '.join(f'{v:.0f}' for _, v in sorted(by[t].items()))} |")
print()
for a, b in [("backup", "fio256k"), ("checksum", "fio64k")]:
    per = [by[a][r] / by[b][r] for r in sorted(by[a]) if r in by[b]]
    print(f"- {a} / {b}: ratio of medians {med[a] / med[b]:.3f}; per round "
          f"{', '.join(f'{p:.3f}' for p in per)} (median {statistics.median(per):.3f})")
r = json.load(open(sys.argv[2]))
sr = r["soft_recovery"]
logs = sum(x["log_files_replayed"] for x in sr)
el = max(x["elapsed_s"] for x in sr)
print()
print(f"- soft recovery: {len(sr)} databases, {logs} log files replayed in {el:.1f} s "
      f"(longest database): {logs / el:.1f} log files/s, seconds per log {r['seconds_per_log']:.3f}; "
      f"verdict {'pass' if r['verdict']['pass'] else 'FAIL'}")
for i in r["instances"]:
    io = i["total"]
    print(f"  - {i['name']}: db reads {io['db_reads_per_s']:.0f}/s of {io['db_read_avg_bytes']:.0f} B, "
          f"db writes {io['db_writes_per_s']:.0f}/s of {io['db_write_avg_bytes']:.0f} B, "
          f"log reads {io['log_reads_per_s']:.1f}/s of {io['log_read_avg_bytes']:.0f} B")
PY
echo "load average at end: $(cut -d' ' -f1-3 /proc/loadavg)" >>"$out/versions.txt"
rm -rf "$dir"
echo "results: $out" >&2
