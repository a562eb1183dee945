#!/usr/bin/env bash
# Idle connections held by one mbxstress process (issue 28's acceptance): `mbxstress loadgen idle`
# opens N IMAPS sessions to a private Dovecot on loopback (scripts/mailserver.sh), logs in (users
# cycled), selects INBOX, starts IDLE and holds them for --hold; its result.json gives connections
# established and failed, the time to establish them, the process's resident memory per connection
# ((VmRSS at the hold's end - VmRSS before the first connection) / connections open) and its CPU
# over the hold (utime + stime, percent of one core). Goals: under 64 KiB per connection with TLS,
# under 5% of one core while idle.
#
# One server serves every run: --connections above the largest count, its imap processes serving
# --imap-client-limit sessions each (a process per session would be 10,000 processes), the
# open-files limits raised (the script's and this shell's, as root). The counts run in the order
# given, IMAPS (implicit TLS); with --plain the largest count is held once more over plain IMAP
# (no TLS), which shows TLS's share of the memory. Server-side figures at the hold's middle: the
# Dovecot processes' count and summed RSS (shared pages counted in each, so an upper bound).
#
# Reported (summary.md): per run the figures above, each run's result.json and samples.jsonl,
# versions.txt (tools, machine, load average before and after), commands.txt (every command).
#
# Usage: bench/loadgen-idle.sh [--counts "1000 10000"] [--hold SECONDS] [--users U]
#                              [--concurrency C] [--plain] [DIR]
#   Defaults: 1,000 then 10,000 connections, held 60 s, over 100 users, 100 established at once.
#   DIR: scratch folder (default bench/scratch; short: Unix socket paths <= 108 bytes). Needs root
#   (Postfix's master; raising the open-files limits), Postfix and Dovecot (scripts/mailserver.sh)
#   and python3. Memory: about 0.5 GB for Dovecot at 10,000 sessions. A default run takes about
#   3 minutes.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
root=$(dirname "$here")
cmdline="bench/loadgen-idle.sh${*:+ $*}"
counts="1000 10000"
hold=60
users=100
concurrency=100
plain=0
scratch=$here/scratch
usage() {
  sed -n '2,/^set -euo/p' "$0" | sed '$d' | sed 's/^# \{0,1\}//' >&2
  exit 2
}
num() { case $2 in '' | *[!0-9]* | 0) echo "loadgen-idle.sh: $1 needs a positive number, not '$2'" >&2; exit 2 ;; esac; }
while [ $# -gt 0 ]; do
  case $1 in
  --counts) counts=${2:-}; for c in $counts; do num "$1" "$c"; done; shift 2 ;;
  --hold) num "$1" "${2:-}"; hold=$2; shift 2 ;;
  --users) num "$1" "${2:-}"; users=$2; shift 2 ;;
  --concurrency) num "$1" "${2:-}"; concurrency=$2; shift 2 ;;
  --plain) plain=1; shift ;;
  -h | --help) usage ;;
  -*) usage ;;
  *) scratch=$1; shift ;;
  esac
done
[ -n "$counts" ] || usage
[ "$(id -u)" = 0 ] || { echo "loadgen-idle.sh: must run as root (Postfix's master; open-files limits)" >&2; exit 2; }
command -v python3 >/dev/null || { echo "loadgen-idle.sh: python3 is needed to parse results" >&2; exit 2; }
max=0
for c in $counts; do [ "$c" -le "$max" ] || max=$c; done

git_state="$(cd "$root" && git rev-parse --short HEAD)$(cd "$root" && git diff --quiet HEAD || echo '+uncommitted changes')"
(cd "$root" && cargo build --release -q -p mbxstress)
mkdir -p "$scratch"
work=$(realpath "$scratch")/lgidle
srv=$work/srv
[ ! -f "$srv/server.env" ] || "$root/scripts/mailserver.sh" stop "$srv" || true
rm -rf "$work"
mkdir -p "$work"
chmod 0755 "$work"
cleanup() {
  "$root/scripts/mailserver.sh" stop "$srv" >/dev/null 2>&1 || true
  rm -rf "$work"
}
trap cleanup EXIT
trap 'exit 130' INT TERM
mbx=$work/mbxstress
cp "$root/target/release/mbxstress" "$mbx"

# The client's open files: a socket per connection, and some.
want=$((max * 2 + 1024))
nr_open=$(cat /proc/sys/fs/nr_open)
[ "$want" -le "$nr_open" ] || want=$nr_open
hard=$(ulimit -Hn)
if [ "$hard" != unlimited ] && [ "$hard" -lt "$want" ] && ! ulimit -Hn "$want" 2>/dev/null; then
  # A container without CAP_SYS_RESOURCE: its hard limit stays.
  echo "loadgen-idle.sh: warning: open files limited to $hard (wanted $want)" >&2
  want=$hard
fi
ulimit -Sn "$want"

stamp=$(date -u +%Y-%m-%dT%H%M%SZ)
out=$here/results/loadgen-idle-$stamp
mkdir -p "$out"
log() { echo "$*" | tee -a "$out/commands.txt" >&2; }
log "$cmdline"
per_process=100
log "scripts/mailserver.sh start $srv --users $users --connections $((max + 100)) --imap-client-limit $per_process"
"$root/scripts/mailserver.sh" start "$srv" --users "$users" --connections "$((max + 100))" \
  --imap-client-limit "$per_process" >/dev/null
env_file=$srv/server.env
imap_port=$(sed -n 's/^MBX_MAIL_IMAP_PORT=//p' "$env_file")
{
  echo "date: $stamp"
  echo "mbxstress: $("$mbx" --version) (built from git $git_state)"
  echo "dovecot: $(dovecot --version)"
  echo "rustc: $(rustc --version)"
  echo "kernel: $(uname -r); cpu: $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //') x $(nproc); memory: $(free -m | awk '/^Mem:/{print $2}') MiB"
  echo "open files: client $(ulimit -Sn), server's script raised its own"
  echo "load average at start: $(cut -d' ' -f1-3 /proc/loadavg)"
  echo "counts: $counts; hold: ${hold}s; users: $users; concurrency: $concurrency; imap sessions per Dovecot imap process: $per_process"
} >"$out/versions.txt"

# Dovecot's processes (the master's tree): count and summed VmRSS in KiB.
dovecot_rss() {
  python3 - "$(cat "$srv/run/master.pid")" <<'PY'
import os, sys
procs = {}
for p in os.listdir("/proc"):
    if not p.isdigit():
        continue
    try:
        ppid = int(open(f"/proc/{p}/stat").read().rsplit(")", 1)[1].split()[1])
        rss = next((int(l.split()[1]) for l in open(f"/proc/{p}/status") if l.startswith("VmRSS:")), 0)
    except (OSError, StopIteration, ValueError):
        continue
    procs[int(p)] = (ppid, rss)
kids = {}
for pid, (ppid, _) in procs.items():
    kids.setdefault(ppid, []).append(pid)
todo, n, total = [int(sys.argv[1])], 0, 0
while todo:
    pid = todo.pop()
    if pid in procs:
        n += 1
        total += procs[pid][1]
        todo.extend(kids.get(pid, []))
print(n, total)
PY
}

runs=()
for c in $counts; do runs+=("imaps:$c"); done
[ "$plain" = 0 ] || runs+=("imap:$max")
for run in "${runs[@]}"; do
  proto=${run%%:*}
  n=${run#*:}
  o=$work/$proto-$n
  args=(loadgen idle --server-env "$env_file" --connections "$n" --hold "${hold}s"
    --concurrency "$concurrency" --out "$o" --progress quiet)
  [ "$proto" = imaps ] || args+=(--imap "imap://127.0.0.1:$imap_port")
  log "$mbx ${args[*]}"
  rc=0
  "$mbx" "${args[@]}" >"$work/run.out" 2>&1 &
  pid=$!
  # Server side at the hold's middle: once every connection is open, half the hold later.
  (
    for _ in $(seq 1 600); do
      if [ -f "$o/samples.jsonl" ] && tail -n 1 "$o/samples.jsonl" | grep -q "\"connections_open\":$n[,}]"; then
        sleep $((hold / 2))
        dovecot_rss >"$work/$proto-$n.server"
        exit 0
      fi
      sleep 1
    done
  ) &
  side=$!
  wait "$pid" || rc=$?
  wait "$side" || true
  cat "$work/run.out" >"$out/$proto-$n-output.txt"
  if [ "$rc" != 0 ]; then
    echo "loadgen-idle.sh: mbxstress loadgen idle ($proto, $n) exited with $rc:" >&2
    tail -n 20 "$work/run.out" >&2
  fi
  cp "$o/result.json" "$out/$proto-$n-result.json"
  cp "$o/samples.jsonl" "$out/$proto-$n-samples.jsonl"
  [ ! -f "$work/$proto-$n.server" ] || cp "$work/$proto-$n.server" "$out/$proto-$n-server.txt"
  # Let Dovecot end the sessions before the next count.
  sleep 5
done
echo "load average at end: $(cut -d' ' -f1-3 /proc/loadavg)" >>"$out/versions.txt"

python3 - "$out" "${runs[@]}" <<'PY' >"$out/summary.md"
import json, os, sys
out, runs = sys.argv[1], sys.argv[2:]
print("# Idle IMAP connections held by one mbxstress process\n")
print("| run | connections | established | failed | dropped | establish s | established/s | held s | RSS baseline MiB | RSS held MiB | **RSS per connection KiB** | **CPU while idle, % of one core** | Dovecot processes / summed RSS MiB (mid-hold) |")
print("|---|---|---|---|---|---|---|---|---|---|---|---|---|")
verdicts = []
for run in runs:
    proto, n = run.split(":")
    r = json.load(open(f"{out}/{proto}-{n}-result.json"))
    i = r.get("idle") or {}
    srv = f"{out}/{proto}-{n}-server.txt"
    s = open(srv).read().split() if os.path.exists(srv) else None
    per = i.get("rss_per_connection_bytes")
    cpu = i.get("cpu_idle_pct")
    mib = lambda b: f"{b/1048576:.1f}" if b is not None else "n/a"
    per_s = f"**{per/1024:.1f}**" if per is not None else "n/a"
    cpu_s = f"**{cpu:.2f}%**" if cpu is not None else "n/a"
    srv_s = f"{s[0]} / {int(s[1])/1024:,.0f}" if s else "n/a"
    print(f"| {proto} | {int(n):,} | {i.get('established', 0):,} | {i.get('failed', 0):,} | {i.get('dropped', 0):,} | "
          f"{i.get('establish_s', 0):.1f} | {i.get('established_per_s', 0):,.0f} | {i.get('hold_s', 0):.1f} | "
          f"{mib(i.get('rss_baseline_bytes'))} | {mib(i.get('rss_held_bytes'))} | {per_s} | {cpu_s} | {srv_s} |")
    if proto == "imaps" and per is not None and cpu is not None:
        verdicts.append((n, per / 1024 < 64, cpu < 5, i.get("established") == int(n)))
print()
for n, mem, cpu, est in verdicts:
    print(f"- {int(n):,} IMAPS: all established {'yes' if est else 'NO'}; under 64 KiB per connection "
          f"{'yes' if mem else 'NO'}; under 5% of a core idle {'yes' if cpu else 'NO'}")
PY
cat "$out/summary.md"
echo "results: $out" >&2
