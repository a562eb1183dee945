#!/usr/bin/env bash
# Database Backup against fio: `mbxstress run --test backup` reads every database file once in
# 256 KiB reads, 4 in flight per database, all databases at once; fio reads the same files the
# same way (one job per file, 256 KiB sequential reads, iodepth 4, O_DIRECT, io_uring). The page
# cache is dropped before each tool when we may (root), so both read the device. Prints MB/s
# (10^6 bytes/s) summed over databases for each tool and the ratio, over ROUNDS rounds (medians).
#
# Usage: bench/backup.sh [DIR]   DIR: scratch folder (default bench/scratch)
# Environment: DATABASES (default 2), DB_MIB per database (default 64), ROUNDS (default 3).
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
root=$(dirname "$here")
dir=${1:-$here/scratch}/backup
databases=${DATABASES:-2}
db_mib=${DB_MIB:-64}
rounds=${ROUNDS:-3}
command -v fio >/dev/null || { echo "fio is needed (apt-get install fio)" >&2; exit 2; }
command -v python3 >/dev/null || { echo "python3 is needed to parse results" >&2; exit 2; }
(cd "$root" && cargo build --release -q)
mbx=$root/target/release/mbxstress
mkdir -p "$dir"
cd "$dir"
# One mailbox of DB_MIB MB per database: databases of DB_MIB MiB of data pages.
"$mbx" prepare --mailboxes "$databases" --quota-mb "$db_mib" --databases "$databases" >/dev/null
drop() { if [ "$(id -u)" = 0 ]; then sync; echo 3 >/proc/sys/vm/drop_caches; fi; }
files=(mbxstress-data/databases/*.edb)
mbx_rates=()
fio_rates=()
for r in $(seq "$rounds"); do
  rm -rf "out-$r"
  drop
  "$mbx" run --test backup --mailboxes "$databases" --quota-mb "$db_mib" --databases "$databases" \
    --out "out-$r" --progress quiet >/dev/null
  mbx_rates+=("$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["backup_sum_mb_per_s"])' "out-$r/result.json")")
  drop
  args=(--output-format=json --ioengine=io_uring --direct=1 --rw=read --bs=256k --iodepth=4)
  for f in "${files[@]}"; do args+=(--name="$(basename "$f")" --filename="$f"); done
  fio "${args[@]}" >"fio-$r.json"
  fio_rates+=("$(python3 -c 'import json,sys; j=json.load(open(sys.argv[1])); print(sum(x["read"]["io_bytes"] for x in j["jobs"]) / max(x["job_runtime"] for x in j["jobs"]) / 1e3)' "fio-$r.json")")
done
python3 - "${mbx_rates[*]}" "${fio_rates[*]}" <<'PY'
import statistics, sys
m = [float(x) for x in sys.argv[1].split()]
f = [float(x) for x in sys.argv[2].split()]
mm, fm = statistics.median(m), statistics.median(f)
print(f"mbxstress backup: {mm:.1f} MB/s (rounds {', '.join(f'{x:.1f}' for x in m)})")
print(f"fio 256k read:    {fm:.1f} MB/s (rounds {', '.join(f'{x:.1f}' for x in f)})")
print(f"ratio mbxstress/fio: {mm / fm:.3f}")
PY
