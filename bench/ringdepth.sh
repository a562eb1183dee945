#!/usr/bin/env bash
# Does a ring deeper than the device's request slots cost anything? (issue 11 item 1, "queue
# depth sized to the device path"). The engine sizes its io_uring ring to what its sessions can
# have in flight (sessions x 6 reads plus the flushers' writes), so at 512 sessions it can hold
# thousands of requests while the device has nr_requests slots (256 on this virtio disk). If the
# kernel blocked or handed requests to io-wq worker threads beyond the slots ("punts"), the ring
# should be capped at the device's depth. This script measures it with `mbxstress iobench`
# (32 KiB random reads, the io_uring backend the engine uses) at depths below and above the
# device's slots, in alternating rounds, counting the kernel's io_uring punts (the
# io_uring_queue_async_work trace event) and the CPU per I/O.
# Needs root (tracefs). Results: bench/results/ringdepth-<date>.md.
# Usage: bench/ringdepth.sh [FILE]   (default bench/scratch/ringdepth.dat, 2 GiB, removed after)
# Environment: ROUNDS (3), RUNTIME (8 s), DEPTHS ("128 256 1024 2048").
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
root=$(dirname "$here")
rounds=${ROUNDS:-3}
runtime=${RUNTIME:-8}
read -r -a depths <<<"${DEPTHS:-128 256 1024 2048}"
file=${1:-$here/scratch/ringdepth.dat}
made_file=0
[ -e "$file" ] || made_file=1
trace=/sys/kernel/tracing
[ -d "$trace/events/io_uring" ] || mount -t tracefs nodev "$trace" 2>/dev/null || true
event=$trace/events/io_uring/io_uring_queue_async_work
if [ ! -w "$event/enable" ]; then
  echo "ringdepth.sh: cannot enable $event/enable (needs root and tracefs)" >&2
  exit 1
fi
cleanup() {
  echo 0 >"$event/enable" 2>/dev/null || true
  [ "$made_file" = 1 ] && rm -f "$file"
}
trap cleanup EXIT
mkdir -p "$(dirname "$file")"
(cd "$root" && cargo build --release -q -p mbxstress)
bin=$root/target/release/mbxstress
git_state="$(cd "$root" && git rev-parse --short HEAD)$(cd "$root" && git diff --quiet HEAD || echo '+uncommitted changes')"
stamp=$(date -u +%Y-%m-%dT%H%M%SZ)
out=$here/results/ringdepth-$stamp.md
dev=$(df --output=source "$(dirname "$file")" | tail -1)
blk=$(basename "$(readlink -f "$dev")")
blk=${blk%%[0-9]*}
slots=$(cat "/sys/block/$blk/queue/nr_requests" 2>/dev/null || echo "?")
echo 65536 >"$trace/buffer_size_kb"
{
  echo "# io_uring depth beyond the device's request slots ($stamp, $git_state)"
  echo
  echo "$(rustc --version); $(uname -sr); $(nproc) cores; device $blk (nr_requests $slots,"
  echo "scheduler $(cat "/sys/block/$blk/queue/scheduler" 2>/dev/null || echo '?')). Shared machine:"
  echo "other work may run, so IOPS are indicative; punts are counts."
  echo
  echo "Per round and depth: \`mbxstress iobench --file $file --size 2G --rw randread --bs 32k"
  echo "--iodepth DEPTH --runtime $runtime\`, with the io_uring_queue_async_work trace event"
  echo "counted. Rounds alternate the depths in order."
  echo
  echo "| round | depth | IOPS | latency avg ms | CPU us per I/O | io_uring punts |"
  echo "|---|---|---|---|---|---|"
} >"$out"
for r in $(seq 1 "$rounds"); do
  for d in "${depths[@]}"; do
    echo >"$trace/trace"
    echo 1 >"$event/enable"
    res=$("$bin" iobench --file "$file" --size 2G --rw randread --bs 32k --iodepth "$d" \
      --runtime "$runtime" 2>&1)
    echo 0 >"$event/enable"
    punts=$(grep -c queue_async_work "$trace/trace" || true)
    iops=$(grep -m1 "read  IOPS" <<<"$res" | awk '{print $3}')
    lat=$(grep -m1 "read  IOPS" <<<"$res" | sed -E 's/.*avg ([0-9.]+).*/\1/')
    cpu=$(grep -m1 "CPU:" <<<"$res" | sed -E 's/.*\(([0-9.]+) us per I\/O\).*/\1/')
    echo "| $r | $d | $iops | $lat | $cpu | $punts |" | tee -a "$out"
  done
done
cat "$out"
