#!/usr/bin/env bash
# SMTP submission throughput of the client (issue 28's acceptance benchmark): `mbxstress loadgen
# submit` against Postfix's `smtp-sink` on loopback (it accepts and discards: no disk, no queue),
# beside the two open tools, `smtp-source` (Postfix) and `postal` (Debian package postal), at
# equal connection counts and the same message size, in alternating rounds.
#
# For each round and each connection count C the four runs go in an order that turns each
# round (A B C D, B C D A, ...), each against a fresh smtp-sink (`-c`, its counter of messages
# received is the count of record), plain SMTP (postal's TLS is a share of connections, smtp-source
# has none: TLS cannot be done alike by all three):
# - mbxstress: `loadgen submit --smtp smtp://127.0.0.1:PORT --connections C --messages M
#   --message-kb KB+0.4` (EHLO once per session, MAIL/RCPT/DATA per message; the 0.4 KB makes its
#   messages, headers included, at least as large as the peers', whose size flags count the body
#   only).
# - mbxstress-nopipe: the same with --no-pipelining: one command at a time, as the peers (by
#   default mbxstress sends MAIL, RCPT and DATA in one write when the server offers PIPELINING,
#   RFC 2920, as Postfix's own client does; smtp-source lists its lack as a bug, postal has none).
# - smtp-source: `smtp-source -d -s C -m M -l KB*1024` (-d: a session is kept for the next
#   message, as the others do).
# - postal: `postal -m KB -M KB -t min(C,400) -c 100000 -r 10000000 -p PORT 127.0.0.1 USERS` (bodies of KB
#   KB; up to 100,000 messages per connection; no rate limit). postal sends until stopped: it runs
#   --postal-seconds (SIGTERM), and its count is what the sink received. postal refuses more than
#   400 threads: at 1,000 connections it runs 400 (raw.jsonl: connections_used).
# Messages/s = messages the sink received / the tool's wall time; CPU per message = the tool's user
# + system time (GNU time: the process and its threads; postal's through timeout) / messages.
#
# Reported (summary.md): per connection count and tool the median messages/s and CPU per message
# over the rounds, and the ratios mbxstress/peer of the medians (messages/s: above 1 is
# mbxstress faster; CPU per message: below 1 is mbxstress cheaper). Raw figures in raw.jsonl,
# mbxstress's result.json of each run, tool versions in versions.txt, every command in
# commands.txt (the bench's own command line first).
#
# Usage: bench/loadgen-smtp.sh [--connections "10 100 1000"] [--messages M] [--message-kb KB]
#                              [--rounds R] [--postal-seconds S] [--port P] [DIR]
#   M messages per run of mbxstress and smtp-source (default 20000), KB the body size (default
#   10), R rounds (default 3), S seconds of each postal run (default 10), P the sink's port
#   (default 2525). DIR: scratch folder (default bench/scratch). Needs smtp-sink and smtp-source
#   (apt-get install postfix), postal (apt-get install postal), /usr/bin/time (apt-get install
#   time) and python3; root is not needed (as root the sink runs as nobody). Open files are raised
#   to the hard limit (2 x the largest count + 100 needed). A default run takes about 6 minutes.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
root=$(dirname "$here")
cmdline="bench/loadgen-smtp.sh${*:+ $*}"
counts="10 100 1000"
messages=20000
kb=10
rounds=3
postal_s=10
port=2525
scratch=$here/scratch
usage() {
  sed -n '2,/^set -euo/p' "$0" | sed '$d' | sed 's/^# \{0,1\}//' >&2
  exit 2
}
num() { case $2 in '' | *[!0-9]* | 0) echo "loadgen-smtp.sh: $1 needs a positive number, not '$2'" >&2; exit 2 ;; esac; }
while [ $# -gt 0 ]; do
  case $1 in
  --connections) counts=${2:-}; for c in $counts; do num "$1" "$c"; done; shift 2 ;;
  --messages) num "$1" "${2:-}"; messages=$2; shift 2 ;;
  --message-kb) num "$1" "${2:-}"; kb=$2; shift 2 ;;
  --rounds) num "$1" "${2:-}"; rounds=$2; shift 2 ;;
  --postal-seconds) num "$1" "${2:-}"; postal_s=$2; shift 2 ;;
  --port) num "$1" "${2:-}"; port=$2; shift 2 ;;
  -h | --help) usage ;;
  -*) usage ;;
  *) scratch=$1; shift ;;
  esac
done
sink_bin=/usr/sbin/smtp-sink
source_bin=/usr/sbin/smtp-source
missing=""
[ -x "$sink_bin" ] || missing="$missing smtp-sink (apt-get install postfix)"
[ -x "$source_bin" ] || missing="$missing smtp-source (apt-get install postfix)"
command -v postal >/dev/null || missing="$missing postal (apt-get install postal)"
[ -x /usr/bin/time ] || missing="$missing /usr/bin/time (apt-get install time)"
command -v python3 >/dev/null || missing="$missing python3"
if [ -n "$missing" ]; then
  echo "loadgen-smtp.sh: missing:$missing" >&2
  exit 2
fi
max=0
for c in $counts; do [ "$c" -gt "$max" ] && max=$c; done
need=$((2 * max + 100))
ulimit -n "$(ulimit -Hn)" 2>/dev/null || true
if [ "$(ulimit -n)" != unlimited ] && [ "$(ulimit -n)" -lt "$need" ]; then
  echo "loadgen-smtp.sh: $max connections need $need open files; the hard limit is $(ulimit -Hn) (raise it: ulimit -Hn, or LimitNOFILE)" >&2
  exit 2
fi
sink_user=()
[ "$(id -u)" = 0 ] && sink_user=(-u nobody)

git_state="$(cd "$root" && git rev-parse --short HEAD)$(cd "$root" && git diff --quiet HEAD || echo '+uncommitted changes')"
(cd "$root" && cargo build --release -q -p mbxstress)
mkdir -p "$scratch"
work=$(realpath "$scratch")/lgs
rm -rf "$work"
mkdir -p "$work"
sink_pid=""
stop_sink() {
  if [ -n "$sink_pid" ]; then
    kill "$sink_pid" 2>/dev/null || true
    wait "$sink_pid" 2>/dev/null || true
    sink_pid=""
  fi
}
cleanup() {
  stop_sink
  rm -rf "$work"
}
trap cleanup EXIT
trap 'exit 130' INT TERM
# A copy: a rebuild while this runs must not change what is measured.
mbx=$work/mbxstress
cp "$root/target/release/mbxstress" "$mbx"
echo "loadgen@example.com" >"$work/users.txt"

stamp=$(date -u +%Y-%m-%dT%H%M%SZ)
out=$here/results/loadgen-smtp-$stamp
mkdir -p "$out"
raw=$out/raw.jsonl
: >"$raw"
log() { echo "$*" | tee -a "$out/commands.txt" >&2; }
log "$cmdline"
{
  echo "date: $stamp"
  echo "mbxstress: $("$mbx" --version) (built from git $git_state)"
  echo "postfix (smtp-sink, smtp-source): $(dpkg-query -W -f='${Version}' postfix 2>/dev/null || echo unknown)"
  echo "postal: $(dpkg-query -W -f='${Version}' postal 2>/dev/null || echo unknown) ($(postal 2>&1 | grep -m1 'Postal Version' || true))"
  echo "rustc: $(rustc --version)"
  echo "kernel: $(uname -r); cpu: $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //') x $(nproc)"
  echo "open files: $(ulimit -n); somaxconn: $(cat /proc/sys/net/core/somaxconn)"
  echo "load average at start: $(cut -d' ' -f1-3 /proc/loadavg)"
  echo "connections: $counts; messages per run: $messages; body KB: $kb; rounds: $rounds; postal seconds: $postal_s"
} >"$out/versions.txt"

start_sink() {
  : >"$work/sink.out"
  "$sink_bin" -c "${sink_user[@]}" "127.0.0.1:$port" 4096 >"$work/sink.out" 2>&1 &
  sink_pid=$!
  for _ in $(seq 50); do
    if (exec 3<>"/dev/tcp/127.0.0.1/$port") 2>/dev/null; then return 0; fi
    sleep 0.1
  done
  echo "loadgen-smtp.sh: smtp-sink did not listen on 127.0.0.1:$port: $(cat "$work/sink.out")" >&2
  exit 1
}
# The sink's message counter (its -c output: "sess=N quit=N mesg=N", rewritten with CR).
sink_count() {
  sleep 0.3
  tr '\r' '\n' <"$work/sink.out" | grep -o 'mesg=[0-9]*' | tail -1 | cut -d= -f2
}

run_one() { # tool round connections
  local tool=$1 round=$2 c=$3 t=$work/time.txt
  start_sink
  # The connection test above is one session: the counts below are of messages only.
  case $tool in
  mbxstress | mbxstress-nopipe)
    local dir=$work/$tool-$round-$c
    local mkb flag=()
    mkb=$(python3 -c "print($kb + 0.4)")
    [ "$tool" = mbxstress-nopipe ] && flag=(--no-pipelining)
    log "$mbx loadgen submit --smtp smtp://127.0.0.1:$port --connections $c --messages $messages --message-kb $mkb --from loadgen@example.com --to loadgen@example.com ${flag[*]} --out DIR --progress quiet"
    /usr/bin/time -o "$t" -f '%e %U %S' "$mbx" loadgen submit --smtp "smtp://127.0.0.1:$port" \
      --connections "$c" --messages "$messages" --message-kb "$mkb" \
      --from loadgen@example.com --to loadgen@example.com "${flag[@]}" --out "$dir" --progress quiet >/dev/null
    cp "$dir/result.json" "$out/$tool-round$round-c$c-result.json"
    ;;
  smtp-source)
    log "$source_bin -d -s $c -m $messages -l $((kb * 1024)) -f loadgen@example.com -t loadgen@example.com 127.0.0.1:$port"
    /usr/bin/time -o "$t" -f '%e %U %S' "$source_bin" -d -s "$c" -m "$messages" -l $((kb * 1024)) \
      -f loadgen@example.com -t loadgen@example.com "127.0.0.1:$port"
    ;;
  postal)
    # postal refuses more than 400 threads (-t): above, it runs its maximum.
    local pt=$((c > 400 ? 400 : c))
    log "timeout -k 5 -s TERM $postal_s postal -m $kb -M $kb -t $pt -c 100000 -r 10000000 -p $port 127.0.0.1 USERS"
    # In the scratch folder: postal writes postal.log into its working directory.
    (cd "$work" && /usr/bin/time -o "$t" -f '%e %U %S' timeout -k 5 -s TERM "$postal_s" postal -m "$kb" -M "$kb" \
      -t "$pt" -c 100000 -r 10000000 -p "$port" 127.0.0.1 "$work/users.txt" >"$work/postal.out" 2>&1) || true
    ;;
  esac
  local got
  got=$(sink_count)
  stop_sink
  # GNU time prints "Command exited with non-zero status" first when the command failed.
  read -r wall user sys < <(grep -E '^[0-9.]+ [0-9.]+ [0-9.]+$' "$t")
  python3 - "$tool" "$round" "$c" "${got:-0}" "$wall" "$user" "$sys" "$messages" >>"$raw" <<'PY'
import json, sys
tool, rnd, c, got, wall, user, sys_, asked = sys.argv[1:]
got, wall, cpu = int(got), float(wall), float(user) + float(sys_)
# The sink's count includes the readiness probe's session, which sends no message.
wall = max(wall, 0.01)
used = min(int(c), 400) if tool == "postal" else int(c)
print(json.dumps({"tool": tool, "round": int(rnd), "connections": int(c), "connections_used": used, "messages": got,
                  "asked": int(asked) if tool != "postal" else None, "wall_s": wall,
                  "user_s": float(user), "sys_s": float(sys_), "messages_per_s": got / wall,
                  "cpu_us_per_message": cpu * 1e6 / got if got else None}))
PY
  tail -1 "$raw" >&2
}

tools=(mbxstress smtp-source mbxstress-nopipe postal)
for round in $(seq "$rounds"); do
  for c in $counts; do
    for k in 0 1 2 3; do
      run_one "${tools[$(((round - 1 + k) % 4))]}" "$round" "$c"
    done
  done
done
echo "load average at end: $(cut -d' ' -f1-3 /proc/loadavg)" >>"$out/versions.txt"

python3 - "$raw" "$out/summary.md" "$messages" <<'PY'
import json, statistics, sys
rows = [json.loads(l) for l in open(sys.argv[1])]
asked = int(sys.argv[3])
out = []
bad = [r for r in rows if r["tool"] != "postal" and r["messages"] != asked]
counts = sorted({r["connections"] for r in rows})
tools = ["mbxstress", "mbxstress-nopipe", "smtp-source", "postal"]
med = {}
for c in counts:
    for t in tools:
        rs = [r for r in rows if r["connections"] == c and r["tool"] == t]
        if rs:
            med[(c, t)] = (statistics.median(r["messages_per_s"] for r in rs),
                           statistics.median(r["cpu_us_per_message"] or 0 for r in rs),
                           len(rs))
out.append("# SMTP submission against smtp-sink: medians of alternating rounds\n")
out.append("| connections | tool | messages/s | CPU us/message | rounds |")
out.append("|---:|---|---:|---:|---:|")
for c in counts:
    for t in tools:
        if (c, t) in med:
            m = med[(c, t)]
            out.append(f"| {c} | {t} | {m[0]:,.0f} | {m[1]:.1f} | {m[2]} |")
out.append("\n## Ratios mbxstress / peer (of the medians)\n")
out.append("| connections | mbxstress / peer | messages/s ratio (>= 1: mbxstress as fast or faster) | CPU/message ratio (<= 1: mbxstress as cheap or cheaper) |")
out.append("|---:|---|---:|---:|")
ok = {"mbxstress": True, "mbxstress-nopipe": True}
for mine in ok:
    for c in counts:
        for p in tools[2:]:
            if (c, mine) in med and (c, p) in med:
                a, b = med[(c, mine)], med[(c, p)]
                rr, rc = a[0] / b[0], a[1] / b[1] if b[1] else float("nan")
                ok[mine] = ok[mine] and rr >= 1 and rc <= 1
                out.append(f"| {c} | {mine} / {p} | {rr:.2f} | {rc:.2f} |")
out.append("")
for mine, met in ok.items():
    out.append(f"Acceptance for {mine} (>= each peer's messages/s at every count, at no more CPU per message): "
               + ("met" if met else "NOT met"))
if bad:
    out.append(f"\nRuns whose sink count differs from the messages asked: {len(bad)}: " + json.dumps(bad))
open(sys.argv[2], "w").write("\n".join(out) + "\n")
print("\n".join(out))
PY
echo "results: $out" >&2
