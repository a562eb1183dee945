#!/usr/bin/env bash
# find-max on this machine (issue 12's acceptance): `mbxstress find-max` answers a mailbox count;
# a verification run at that count must pass and one at +10% must fail. Both verification runs
# use the same databases and the sessions find-max gave the answer (its last passing run there:
# Little's law at the latency its steps measured, with twice the headroom), +10% for +10%,
# measured for VERIFY seconds. Results: bench/results/findmax-<date>/ (NOTE.md, find-max.json, the two
# result.json files, the exact commands and versions).
#
# Usage: bench/findmax.sh [DIR]   DIR: where the databases go (default bench/scratch; removed after)
# Environment: MAILBOXES (ramp start, 2000), IPM (IOPS per mailbox, 1), QUOTA_MB (4: databases
#   of MAILBOXES x QUOTA_MB / DBS), DBS (2), STEP (find-max step, 20s: its confirmation runs
#   last 3 steps, as long as VERIFY), VERIFY (verification
#   runs, 60s).
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
root=$(dirname "$here")
dir=${1:-$here/scratch}/findmax
mailboxes=${MAILBOXES:-2000}
ipm=${IPM:-1}
# 4 MB per mailbox: databases of 4,000 MiB, whose caches reach the 256 MiB per-database maximum
# (1/8 of the database below that). With 1 MB (1,000 MiB databases, 125 MiB caches) the 1,024
# sessions of 30,000+ IOPS left so little cache slack that page fault stalls hovered around the
# 1/s threshold from 29,000 to 32,000 mailboxes, passing and failing by luck
# (bench/results/findmax-2026-11-23T042719Z).
quota=${QUOTA_MB:-4}
dbs=${DBS:-2}
step=${STEP:-20s}
verify=${VERIFY:-60s}
command -v python3 >/dev/null || { echo "python3 is needed to read the results" >&2; exit 2; }
git_state="$(cd "$root" && git rev-parse --short HEAD)$(cd "$root" && git diff --quiet HEAD || echo '+uncommitted changes')"
(cd "$root" && cargo build --release -q -p mbxstress)
mbx=$root/target/release/mbxstress
stamp=$(date -u +%Y-%m-%dT%H%M%SZ)
out=$here/results/findmax-$stamp
mkdir -p "$out"
rm -rf "$dir"
mkdir -p "$dir"
trap 'rm -rf "$dir"' EXIT
common=(--quota-mb "$quota" --databases "$dbs" --db-path "$dir/db" --log-path "$dir/log")
fm=("$mbx" find-max --mailboxes "$mailboxes" --iops-per-mailbox "$ipm" --tuning-step "$step" "${common[@]}" --out "$dir/fm")
echo "${fm[*]}" >"$out/commands.txt"
"${fm[@]}" | tee "$out/find-max.txt"
cp "$dir/fm/find-max.json" "$out/"
answer=$(python3 -c 'import json,sys; f=json.load(open(sys.argv[1])); print(f["mailboxes"] or 0)' "$out/find-max.json")
if [ "$answer" = 0 ]; then
  echo "find-max gave no answer" | tee "$out/NOTE.md"
  exit 1
fi
# The same databases (sized for $mailboxes mailboxes): a load of N mailboxes is the target
# N x IPM, given as IOPS per mailbox over the databases' $mailboxes.
# Sessions: those of find-max's last passing run at the answer (a confirmation, or the step).
answer_sessions=$(python3 -c '
import json, sys
f = json.load(open(sys.argv[1]))
runs = [s for s in f["steps"] if s["mailboxes"] == f["mailboxes"] and s["pass"]]
print(runs[-1]["sessions"])' "$out/find-max.json")
verify_at() {
  local n=$1 label=$2 sessions=$3
  local per
  per=$(python3 -c "print($n * $ipm / $mailboxes)")
  local cmd=("$mbx" run --mailboxes "$mailboxes" --iops-per-mailbox "$per" --threads "$sessions"
    --duration "$verify" "${common[@]}" --out "$dir/$label" --progress quiet)
  echo "${cmd[*]}" >>"$out/commands.txt"
  local code=0
  "${cmd[@]}" >"$out/$label.txt" 2>&1 || code=$?
  cp "$dir/$label/result.json" "$out/$label-result.json"
  python3 - "$out/$label-result.json" "$n" "$label" "$code" <<'EOF'
import json, sys
r = json.load(open(sys.argv[1]))
failed = [c["name"] for c in r["verdict"]["checks"] if not c["pass"]]
print(f"| {sys.argv[3]} | {sys.argv[2]} | {r['target_iops']:.1f} | {r['achieved_iops']:.1f} | "
      f"{'PASS' if r['verdict']['pass'] else 'FAIL'} (exit {sys.argv[4]}) | {', '.join(failed) or '-'} |")
EOF
}
plus=$(python3 -c "print(round($answer * 1.1))")
plus_sessions=$(python3 -c "import math; print(math.ceil($answer_sessions * 1.1))")
{
  echo "# find-max on this machine ($stamp, $git_state)"
  echo
  echo "$(rustc --version); $(uname -sr); $(nproc) cores; $("$mbx" --version)."
  echo "Shared machine: other work may run. Commands: commands.txt."
  echo
  echo "find-max answered **$answer mailboxes** x $ipm IOPS (find-max.txt, find-max.json), with $answer_sessions sessions."
  echo "Verification runs of $verify on the same databases ($answer_sessions sessions at the answer, $plus_sessions at +10%):"
  echo
  echo "| run | mailboxes | target IOPS | achieved IOPS | verdict | failed checks |"
  echo "|---|---|---|---|---|---|"
  verify_at "$answer" at-answer "$answer_sessions"
  verify_at "$plus" plus-10pct "$plus_sessions"
} | tee "$out/NOTE.md"
