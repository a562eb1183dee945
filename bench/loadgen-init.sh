#!/usr/bin/env bash
# Mailbox initialization over the network against the server's own write path (issue 27's
# acceptance benchmark): `mbxstress loadgen init` against Dovecot on loopback, beside `doveadm
# save` of the same messages into the same Dovecot, in the same run, and beside `doveadm import`
# of them (the server's bulk path: one process per user, not per message).
#
# One private server (scripts/mailserver.sh: Postfix + Dovecot, maildir) serves every round; each
# run of each side fills its own fresh users (ranges of loadgen1..N: 3 x ROUNDS x USERS users), so
# no side finds another's mail or tops up a mailbox. The order turns each round (A B C, B C A,
# C A B, ...):
# - A, mbxstress: `loadgen init --server-env ... --first-user F --users U --messages M
#   --concurrency C` (IMAP MULTIAPPEND over TLS, IMAPS on loopback, C users at once).
#   Messages/s and MB/s from its result.json (`init`), and the wall time of the whole command.
#   Its CPU is the process's user + system time (/usr/bin/time).
# - B, doveadm save: `doveadm save -u USER -m INBOX` of the same message bytes, one process per
#   message as the tool works, C users at once (xargs -P C, each worker saving its user's messages
#   in turn). The bytes are the maildir files the latest A round wrote: an IMAP APPEND gets no
#   trace header from Dovecot (no Return-Path, Delivered-To or Received: those come with LMTP
#   delivery), so the files are the appended messages with CRLF stored as LF; their line ends are
#   turned back into CRLF, which gives exactly the bytes mbxstress appended (checked: each file's
#   size then equals the W= size Dovecot wrote in its name, and the sum equals result.json's
#   bytes). Wall time of the whole xargs; CPU of the doveadm processes (and the small bash loops
#   around them) from /usr/bin/time.
# - C, doveadm import: `doveadm -o maildir_copy_with_hardlinks=no import -u USER
#   maildir:SRC:INDEX=MEMORY "" all`, one process per user, C users at once, from a copy of the
#   same A round's maildir files (flags kept: \Seen, as mbxstress appends them). Copies, not hard
#   links (checked: every file's link count is 1). Timed and measured as B.
# B and C check that every user holds M messages whose W= sizes sum to the bytes given.
# Server CPU for all: utime + stime + cutime + cstime summed over the Dovecot and Postfix
# process trees (/proc/<pid>/stat of every descendant of the two masters) before and after each
# measured run. Processes that end during the run (Dovecot's imap process per session) are counted
# through their parent's cutime/cstime once the master has reaped them; the script waits for the
# imap processes to end before the second reading. The machine's busy CPU (/proc/stat) over the
# same interval shows what else ran. `sync` before each measured run, so no side pays for
# another's dirty pages.
#
# Reported (summary.md): per side the median messages/s, MB/s (10^6 B/s) and CPU per message
# (client + server processes); the ratios mbxstress/doveadm-save and mbxstress/doveadm-import of
# the medians and per round (the same round's runs). Raw per-round figures in raw.jsonl, each
# mbxstress round's result.json, tool versions in versions.txt, every command in commands.txt
# (the bench's own command line first), and NOTE.md (what the ratios mean).
#
# Usage: bench/loadgen-init.sh [--users U] [--messages M] [--concurrency C] [--rounds R]
#                              [--message-kb KB] [--batch B] [DIR]
#   U users per round (default 32), M messages per user (default 100, as mbxstress's own), C
#   users at once on every side (default 16), R rounds (default 3), KB the mean message size
#   (mbxstress's default, 75), B messages per MULTIAPPEND (mbxstress's default when not given).
#   DIR: scratch folder (default bench/scratch; the server's folder must be short: Unix socket
#   paths <= 108 bytes). Needs root (Postfix), Postfix and Dovecot (see scripts/mailserver.sh),
#   python3 and /usr/bin/time. Disk: about 3 x R x U x M x KB (the three sides' mail) plus two
#   copies of one round's (about 2.4 GB with the defaults). A run takes about 2 minutes.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
root=$(dirname "$here")
cmdline="bench/loadgen-init.sh${*:+ $*}"
users=32
messages=100
concurrency=16
rounds=3
message_kb=""
batch=""
scratch=$here/scratch
usage() {
  sed -n '2,/^set -euo/p' "$0" | sed '$d' | sed 's/^# \{0,1\}//' >&2
  exit 2
}
num() { case $2 in '' | *[!0-9]* | 0) echo "loadgen-init.sh: $1 needs a positive number, not '$2'" >&2; exit 2 ;; esac; }
while [ $# -gt 0 ]; do
  case $1 in
  --users) num "$1" "${2:-}"; users=$2; shift 2 ;;
  --messages) num "$1" "${2:-}"; messages=$2; shift 2 ;;
  --concurrency) num "$1" "${2:-}"; concurrency=$2; shift 2 ;;
  --rounds) num "$1" "${2:-}"; rounds=$2; shift 2 ;;
  --message-kb) num "$1" "${2:-}"; message_kb=$2; shift 2 ;;
  --batch) num "$1" "${2:-}"; batch=$2; shift 2 ;;
  -h | --help) usage ;;
  -*) usage ;;
  *) scratch=$1; shift ;;
  esac
done
[ "$(id -u)" = 0 ] || { echo "loadgen-init.sh: must run as root (Postfix's master starts only as root)" >&2; exit 2; }
command -v python3 >/dev/null || { echo "loadgen-init.sh: python3 is needed to parse results" >&2; exit 2; }
command -v doveadm >/dev/null || { echo "loadgen-init.sh: doveadm is missing (apt-get install dovecot-core)" >&2; exit 2; }
[ -x /usr/bin/time ] || { apt-get update -qq && apt-get install -y -qq time >/dev/null; }

git_state="$(cd "$root" && git rev-parse --short HEAD)$(cd "$root" && git diff --quiet HEAD || echo '+uncommitted changes')"
(cd "$root" && cargo build --release -q -p mbxstress)
mkdir -p "$scratch"
work=$(realpath "$scratch")/lgi
srv=$work/srv
# A server left by an interrupted run of this script: stop it first.
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
# A copy: a rebuild while this runs must not change what is measured.
mbx=$work/mbxstress
cp "$root/target/release/mbxstress" "$mbx"

stamp=$(date -u +%Y-%m-%dT%H%M%SZ)
out=$here/results/loadgen-init-$stamp
mkdir -p "$out"
raw=$out/raw.jsonl
: >"$raw"
log() { echo "$*" | tee -a "$out/commands.txt" >&2; }
log "$cmdline"

all_users=$((3 * rounds * users))
connections=$((concurrency * 2 > 200 ? concurrency * 2 : 200))
log "scripts/mailserver.sh start $srv --users $all_users --connections $connections"
"$root/scripts/mailserver.sh" start "$srv" --users "$all_users" --connections "$connections" >/dev/null
env_file=$srv/server.env
conf=$srv/dovecot.conf
{
  echo "date: $stamp"
  echo "mbxstress: $("$mbx" --version) (built from git $git_state)"
  echo "dovecot: $(dovecot --version)"
  echo "postfix: $(postconf -c "$srv/postfix" -h mail_version)"
  echo "rustc: $(rustc --version)"
  echo "kernel: $(uname -r); cpu: $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //') x $(nproc)"
  echo "filesystem: $(df -T "$work" | awk 'NR==2{print $2" on "$1}')"
  echo "load average at start: $(cut -d' ' -f1-3 /proc/loadavg)"
  echo "users per round: $users, messages per user: $messages, concurrency: $concurrency, rounds: $rounds," \
    "message KB: ${message_kb:-mbxstress default}, batch: ${batch:-mbxstress default}"
} >"$out/versions.txt"

# CPU seconds (user + system, of the live processes and of the ended ones they reaped) of the
# Dovecot and Postfix process trees.
server_cpu() {
  python3 - "$(cat "$srv/run/master.pid")" "$(tr -d ' ' <"$srv/pq/pid/master.pid")" <<'PY'
import os, sys
tick = os.sysconf("SC_CLK_TCK")
procs = {}
for p in os.listdir("/proc"):
    if not p.isdigit():
        continue
    try:
        f = open(f"/proc/{p}/stat").read().rsplit(")", 1)[1].split()
    except OSError:
        continue
    # After the comm: state ppid ... utime(14) stime(15) cutime(16) cstime(17), 1-based fields.
    procs[int(p)] = (int(f[1]), sum(int(x) for x in f[11:15]))
roots = {int(x) for x in sys.argv[1:]}
children = {}
for pid, (ppid, _) in procs.items():
    children.setdefault(ppid, []).append(pid)
total, todo = 0, [r for r in roots if r in procs]
while todo:
    pid = todo.pop()
    total += procs[pid][1]
    todo.extend(children.get(pid, []))
print(total / tick)
PY
}
# Waits (at most 10 s) until no imap process of this server (a child of its Dovecot master; other
# servers may run on the machine) is left, so the master has reaped them and their CPU is in its
# cutime/cstime.
wait_imap_gone() {
  for _ in $(seq 1 100); do
    pgrep -x imap -P "$(cat "$srv/run/master.pid")" >/dev/null || return 0
    sleep 0.1
  done
  echo "loadgen-init.sh: imap processes still running 10 s after the round; their CPU so far is counted" >&2
}
# Busy CPU seconds of the whole machine (all cores: /proc/stat's total minus idle and iowait):
# what else ran during a round shows as machine - client - server.
machine_cpu() {
  python3 -c 'import os; f=[int(x) for x in open("/proc/stat").readline().split()[1:]]; print((sum(f[:8]) - f[3] - f[4]) / os.sysconf("SC_CLK_TCK"))'
}
now() { date +%s.%N; }

# A: mbxstress loadgen init into users first..first+U-1.
run_a() {
  local r=$1 first=$2
  local o=$work/a$r
  local args=(loadgen init --server-env "$env_file" --first-user "$first" --users "$users"
    --messages "$messages" --concurrency "$concurrency" --out "$o" --progress quiet)
  [ -z "$message_kb" ] || args+=(--message-kb "$message_kb")
  [ -z "$batch" ] || args+=(--batch "$batch")
  log "$mbx ${args[*]}"
  sync
  local s0 s1 m0 m1 t0 t1 rc=0
  s0=$(server_cpu)
  m0=$(machine_cpu)
  t0=$(now)
  /usr/bin/time -f '%e %U %S' -o "$work/a.time" "$mbx" "${args[@]}" >"$work/a.out" 2>&1 || rc=$?
  t1=$(now)
  wait_imap_gone
  s1=$(server_cpu)
  m1=$(machine_cpu)
  if [ "$rc" != 0 ]; then
    echo "loadgen-init.sh: mbxstress loadgen init exited with $rc:" >&2
    tail -n 20 "$work/a.out" >&2
    exit 1
  fi
  python3 - "$o/result.json" "$work/a.time" "$r" "$first" "$t0" "$t1" "$s0" "$s1" "$m0" "$m1" "$users" "$messages" <<'PY' >>"$raw"
import json, sys
res, tf, r, first, t0, t1, s0, s1, m0, m1, users, messages = sys.argv[1:]
i = json.load(open(res))["init"]
# Fresh users: nothing found, every message appended, no user failed.
if i["users_failed"] or i["messages_found"] or i["messages_appended"] != int(users) * int(messages):
    sys.exit(f"mbxstress round {r}: {i}: expected {int(users) * int(messages)} messages appended into fresh users")
u, s = map(float, open(tf).read().split()[-2:])
wall = float(t1) - float(t0)
srv = float(s1) - float(s0)
n = i["messages_appended"]
print(json.dumps({
    "round": int(r), "tool": "mbxstress", "first_user": int(first), "users_done": i["users_done"],
    "users_failed": i["users_failed"], "messages": n, "bytes": i["bytes_appended"],
    "duration_s": i["duration_s"], "wall_s": wall, "messages_per_s": i["messages_per_s"],
    "mb_per_s": i["mb_per_s"], "wall_messages_per_s": n / wall, "wall_mb_per_s": i["bytes_appended"] / wall / 1e6,
    "client_cpu_s": u + s, "server_cpu_s": srv, "machine_cpu_s": float(m1) - float(m0),
    "cpu_ms_per_message": (u + s + srv) / max(n, 1) * 1e3,
}))
PY
  tail -n 1 "$raw" >&2
}

# The messages of A's users first..first+U-1, one folder per user: as CRLF files for doveadm save
# ($work/src/<k>/*.eml) and as a copy of the maildir for doveadm import ($work/isrc/<k>: the
# files as Dovecot stored them, names and flags kept, owned by the mail uid; copies, not links).
stage() {
  local first=$1 res=$2
  rm -rf "$work/src" "$work/isrc"
  python3 - "$srv/mail" "$first" "$users" "$messages" "$work/src" "$res" "$work/isrc" <<'PY'
import json, os, re, sys
mail, first, users, messages, dst, res, idst = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4]), sys.argv[5], sys.argv[6], sys.argv[7]
total = 0
vmail = os.stat(mail).st_uid
for k in range(users):
    md = f"{mail}/loadgen{first + k}/Maildir"
    files = sorted(os.path.join(md, d, f) for d in ("cur", "new") for f in os.listdir(os.path.join(md, d)))
    if len(files) != messages:
        sys.exit(f"stage: {md} holds {len(files)} messages, not {messages}")
    os.makedirs(f"{dst}/{k}")
    for sub in ("", "/cur", "/new", "/tmp"):
        os.makedirs(f"{idst}/{k}{sub}")
        os.chown(f"{idst}/{k}{sub}", vmail, vmail)
    for j, path in enumerate(files):
        data = open(path, "rb").read()
        copy = f"{idst}/{k}/cur/{os.path.basename(path)}"
        open(copy, "wb").write(data)
        os.chown(copy, vmail, vmail)
        if b"\r" in data:
            sys.exit(f"stage: {path} has CR bytes: Dovecot stored CRLF (mail_save_crlf?); cannot rebuild the appended bytes")
        data = data.replace(b"\n", b"\r\n")
        w = re.search(r",W=(\d+)", os.path.basename(path))
        if w and int(w.group(1)) != len(data):
            sys.exit(f"stage: {path}: {len(data)} bytes with CRLF, Dovecot's W= says {w.group(1)}")
        open(f"{dst}/{k}/{j:06d}.eml", "wb").write(data)
        total += len(data)
appended = json.load(open(res))["init"]["bytes_appended"]
if total != appended:
    sys.exit(f"stage: {total} bytes staged, mbxstress appended {appended}")
print(total)
PY
}

# B (doveadm save) or C (doveadm import) of the staged messages into users first..first+U-1, C
# users at once: TOOL is save or import.
run_dove() {
  local tool=$1 r=$2 first=$3 bytes=$4 k src=$work/src
  [ "$tool" = save ] || src=$work/isrc
  : >"$work/pairs"
  for k in $(seq 0 $((users - 1))); do
    echo "$src/$k loadgen$((first + k))" >>"$work/pairs"
  done
  if [ "$tool" = save ]; then
    log "xargs -P $concurrency -n 2 $work/save-user.sh $conf <$work/pairs  # each: doveadm -c $conf save -u USER -m INBOX <FILE, for each of the user's $messages files"
  else
    log "xargs -P $concurrency -n 2 $work/import-user.sh $conf <$work/pairs  # each: doveadm -c $conf -o maildir_copy_with_hardlinks=no import -u USER maildir:SRC:INDEX=MEMORY '' all"
  fi
  sync
  local s0 s1 m0 m1 t0 t1 rc=0
  s0=$(server_cpu)
  m0=$(machine_cpu)
  t0=$(now)
  /usr/bin/time -f '%e %U %S' -o "$work/b.time" \
    xargs -P "$concurrency" -n 2 "$work/$tool-user.sh" "$conf" <"$work/pairs" >"$work/b.out" 2>&1 || rc=$?
  t1=$(now)
  s1=$(server_cpu)
  m1=$(machine_cpu)
  if [ "$rc" != 0 ]; then
    echo "loadgen-init.sh: doveadm $tool failed ($rc):" >&2
    tail -n 20 "$work/b.out" >&2
    exit 1
  fi
  python3 - "$srv/mail" "$first" "$users" "$messages" "$bytes" "$work/b.time" "$r" "$t0" "$t1" "$s0" "$s1" "$m0" "$m1" "$tool" <<'PY' >>"$raw"
import json, os, re, sys
mail, first, users, messages, nbytes, tf, r, t0, t1, s0, s1, m0, m1, tool = sys.argv[1:]
first, users, messages, nbytes = int(first), int(users), int(messages), int(nbytes)
n = w_sum = 0
for k in range(users):
    md = f"{mail}/loadgen{first + k}/Maildir"
    files = [os.path.join(md, d, f) for d in ("cur", "new") for f in os.listdir(os.path.join(md, d))]
    if len(files) != messages:
        sys.exit(f"doveadm {tool}: {md} holds {len(files)} messages, not {messages}")
    if any(os.stat(f).st_nlink != 1 for f in files):
        sys.exit(f"doveadm {tool}: {md} holds hard links, not copies")
    n += len(files)
    w_sum += sum(int(re.search(r",W=(\d+)", f).group(1)) for f in files)
if w_sum != nbytes:
    sys.exit(f"doveadm {tool}: the messages' W= sizes sum to {w_sum}, {nbytes} were given")
u, s = map(float, open(tf).read().split()[-2:])
wall = float(t1) - float(t0)
srv = float(s1) - float(s0)
print(json.dumps({
    "round": int(r), "tool": f"doveadm-{tool}", "first_user": first, "messages": n, "bytes": nbytes,
    "wall_s": wall, "messages_per_s": n / wall, "mb_per_s": nbytes / wall / 1e6,
    "client_cpu_s": u + s, "server_cpu_s": srv, "machine_cpu_s": float(m1) - float(m0),
    "cpu_ms_per_message": (u + s + srv) / max(n, 1) * 1e3,
}))
PY
  tail -n 1 "$raw" >&2
}

cat >"$work/save-user.sh" <<'EOF'
#!/usr/bin/env bash
# save-user.sh DOVECOT_CONF SRC_DIR USER: doveadm save each file of SRC_DIR into USER's INBOX.
set -euo pipefail
for f in "$2"/*.eml; do
  doveadm -c "$1" save -u "$3" -m INBOX <"$f"
done
EOF
cat >"$work/import-user.sh" <<'EOF'
#!/usr/bin/env bash
# import-user.sh DOVECOT_CONF SRC_MAILDIR USER: doveadm import every message of SRC_MAILDIR into
# USER's INBOX, copied (no hard links), the source's index in memory only.
set -euo pipefail
doveadm -c "$1" -o maildir_copy_with_hardlinks=no import -u "$3" "maildir:$2:INDEX=MEMORY" "" all
EOF
chmod 0755 "$work/save-user.sh" "$work/import-user.sh"

# Users: A of round r from (r-1) x U + 1, B from (R + r - 1) x U + 1, C from (2R + r - 1) x U + 1.
# The order turns each round (A B C, B C A, C A B, ...); B and C save the messages of the latest A
# round (round 1's in round 2, whose A comes last).
staged_bytes=""
sides=(a b c)
for r in $(seq 1 "$rounds"); do
  a_first=$(((r - 1) * users + 1))
  b_first=$(((rounds + r - 1) * users + 1))
  c_first=$(((2 * rounds + r - 1) * users + 1))
  for k in 0 1 2; do
    t=${sides[$(((k + r - 1) % 3))]}
    case $t in
    a)
      echo "round $r: mbxstress loadgen init into loadgen$a_first.." >&2
      run_a "$r" "$a_first"
      staged_bytes=$(stage "$a_first" "$work/a$r/result.json")
      cp "$work/a$r/result.json" "$out/mbxstress-round$r-result.json"
      ;;
    b)
      echo "round $r: doveadm save into loadgen$b_first.." >&2
      run_dove save "$r" "$b_first" "$staged_bytes"
      ;;
    c)
      echo "round $r: doveadm import into loadgen$c_first.." >&2
      run_dove import "$r" "$c_first" "$staged_bytes"
      ;;
    esac
  done
done

python3 - "$raw" <<'PY' | tee "$out/summary.md"
import json, statistics, sys
rows = [json.loads(l) for l in open(sys.argv[1])]
by = {(x["tool"], x["round"]): x for x in rows}
rounds = sorted({x["round"] for x in rows})
tools = ("mbxstress", "doveadm-save", "doveadm-import")
med = lambda t, k: statistics.median(by[(t, r)][k] for r in rounds)
print("| tool | messages per round | median messages/s | median MB/s | median wall s | median client CPU s | median server CPU s | median CPU ms per message | median machine busy CPU s |")
print("|---|---|---|---|---|---|---|---|---|")
for t in tools:
    print(f"| {t} | {by[(t, rounds[0])]['messages']} | {med(t, 'messages_per_s'):.1f} | {med(t, 'mb_per_s'):.2f} | "
          f"{med(t, 'wall_s'):.2f} | {med(t, 'client_cpu_s'):.2f} | {med(t, 'server_cpu_s'):.2f} | "
          f"{med(t, 'cpu_ms_per_message'):.2f} | {med(t, 'machine_cpu_s'):.2f} |")
print()
print("mbxstress's messages/s and MB/s are its result.json's (`init`); over the wall time of the whole command: "
      f"{med('mbxstress', 'wall_messages_per_s'):.1f} messages/s, {med('mbxstress', 'wall_mb_per_s'):.2f} MB/s (medians). "
      "doveadm's over the wall time of all its processes (xargs). Client CPU: mbxstress's process, or the doveadm "
      "processes and the bash loops around them; server CPU: the Dovecot and Postfix process trees. CPU per message = "
      "(client + server) / messages. Machine busy CPU: all cores (/proc/stat) over the same interval; what it holds "
      "beyond client + server ran beside the round (the machine is shared).")
for ref in ("doveadm-save", "doveadm-import"):
    print()
    print(f"| ratio mbxstress/{ref} | of medians | per round (the same round's runs) | median of rounds |")
    print("|---|---|---|---|")
    for k, label in (("messages_per_s", "messages/s"), ("mb_per_s", "MB/s"), ("cpu_ms_per_message", "CPU per message")):
        per = [by[("mbxstress", r)][k] / by[(ref, r)][k] for r in rounds]
        print(f"| {label} | {med('mbxstress', k) / med(ref, k):.3f} | {', '.join(f'{p:.3f}' for p in per)} | "
              f"{statistics.median(per):.3f} |")
PY
echo "load average at end: $(cut -d' ' -f1-3 /proc/loadavg)" >>"$out/versions.txt"
cat >"$out/NOTE.md" <<EOF
# Initialization over IMAP against Dovecot's own write path

\`$cmdline\` on git $git_state: $users users x $messages messages per round and side, $concurrency
users at once, $rounds rounds (summary.md; raw.jsonl; each mbxstress round's result.json).

**What the ratios mean.** All three sides put the same messages (the same bytes, checked) into
the same Dovecot's maildirs on the same disk, $concurrency users at once. mbxstress is a network
client: it generates each message (random content, base64, XXH3 hash) and sends it as IMAP
MULTIAPPEND over TLS on loopback to IMAPS, where Dovecot's login process ends TLS and hands the
bytes to the user's imap process, which parses the command and writes the maildir files (one
save transaction per batch: one uidlist and index update). \`doveadm save\` is the server's own
local tool: no network, no TLS, no IMAP parsing, the same storage code writing the file, but one
process per message (start, configuration, userdb lookup, mailbox and index open, a one-message
transaction, exit), as Dovecot ships it. \`doveadm import\` is the same local path without that
per-message cost: one process per user copies all its messages (read from a maildir copy, written
as new files: no hard links). The ratio mbxstress/doveadm of messages/s (and of MB/s: the same
bytes) is how close the network client gets to the server's own write path: 1 means the
protocol, TLS and the client cost nothing the disk and Dovecot's storage do not already; below 1
is what they cost; above 1 means the reference pays a fixed cost per message (or per user) that
IMAP sessions with batches do not, not that the network is free. CPU per message (client +
server processes) says where the time goes: on loopback the client and the server share this
machine's cores, so the client's CPU is taken from the server's.

**Caveats.** Client and server run on the same $(nproc) cores: anything else running on the machine
(load averages at start and end in versions.txt, machine busy CPU per round in summary.md) takes
from both and makes the figures noisy; compare rounds (per-round ratios in summary.md) before
trusting a small difference.
EOF
echo "results: $out" >&2
