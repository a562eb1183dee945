#!/usr/bin/env bash
# Measures what the test suite writes to disk and what it leaves behind (issue 8, item 12):
#   - bytes written by `cargo test --workspace` and every process it waits for (test binaries,
#     the mbxstress processes they start, dd/losetup/...): GNU time's %O, i.e. getrusage's
#     ru_oublock of the waited-for children, in 512-byte blocks. Linux charges a write when the
#     page is dirtied (buffered I/O, counted even if the file is deleted before writeback) or when
#     the bio is submitted (O_DIRECT, including io_uring and its io-wq worker threads). Writes to
#     tmpfs are not counted, so /tmp must be on a disk (it is on ext4 here; the script checks).
#     Compilation is excluded: the tests are built first with `cargo test --workspace --no-run`,
#     and so is the static build the fleet --push tests make for themselves
#     (tests/cli/common.rs, static_build: a no-op for them once it is fresh).
#   - files and folders left behind: in target/tmp (CARGO_TARGET_TMPDIR, emptied first), in /tmp
#     (as root, /tmp is a fresh private folder bind-mounted in a private mount namespace, so other
#     processes on the machine cannot blur the comparison; otherwise a before/after listing), and
#     in the work tree (`git status --porcelain` and a before/after listing outside target/).
#
# Usage: bench/test-footprint.sh [extra args for cargo test, e.g. -p mbx-store]
# Environment: LIMIT_BYTES (default 1250000000): the run fails if the tests write more. 1 GB until
#              2026-11-27; 1.1 GB for issue 24's real-file tests; 1.2 GB for issue 25's and 26's
#              real-component cases (fleet cases on real sshd, loop-device signatures, Postfix and
#              Dovecot for mbx-loadgen), after moving the engine's log-continuity and shape runs to
#              the simulated device (-89 MB) and shrinking the fleet, safety and store tests (-110 MB):
#              the suite measured 1.03-1.08 GB, too close to 1.1 GB for its run-to-run spread
#              (bench/results/test-footprint-2026-11-27.md). Next to move or shrink: cli
#              store::ctrl_c_keeps_progress (35 MB), run::passing_run and soft_recovery (23 MB
#              each), engine held.rs (46 MB), mbx-store's tests (about 90 MB). 1.25 GB since
#              2026-12-02 (issues 33-36: real-server days of every task's own logon, the INBOX.
#              layout's day, find-max and verdict runs): 1,145 MB measured once the fleet tests
#              stopped rebuilding the static binary mid-suite (1,266 MB with it).
#              FOOTPRINT_OUT: also append the summary (markdown) to this file.
# The test output is shown as it runs (and kept for the summary); .ci/run runs the suite this way.
# Exit status: 0 within the limit with nothing left behind; 1 otherwise (or if a test failed).
set -euo pipefail
export LC_ALL=C # one collation for sort and comm
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"
limit=${LIMIT_BYTES:-1250000000}

if [ ! -x /usr/bin/time ]; then
  if [ "$(id -u)" = 0 ]; then
    apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq time >/dev/null
  else
    sudo apt-get update -qq && sudo DEBIAN_FRONTEND=noninteractive apt-get install -y -qq time >/dev/null
  fi
fi
if [ "$(stat -f -c %T /tmp)" = tmpfs ]; then
  echo "warning: /tmp is tmpfs; writes there are not counted by ru_oublock" >&2
fi

echo "== build (not measured): cargo test --workspace --no-run $*" >&2
cargo test --workspace --no-run "$@" >/dev/null 2>&1 || cargo test --workspace --no-run "$@"
cargo build --quiet --profile static --target x86_64-unknown-linux-musl -p mbxstress

# Outside /tmp: the measured command gets a private /tmp.
work=$(mktemp -d "$root/target/test-footprint.XXXXXX")
trap 'rm -rf "$work"' EXIT
tree_listing() {
  find . -path ./target -prune -o -path ./.git -prune -o -print | LC_ALL=C sort
}
tmp_listing() {
  find /tmp -mindepth 1 -maxdepth 1 2>/dev/null | LC_ALL=C sort
}

# target/tmp is cargo's scratch folder for integration tests: empty it so that whatever is in it
# afterwards was left by this run.
mkdir -p target/tmp
find target/tmp -mindepth 1 -maxdepth 1 -exec rm -rf {} +
tree_listing >"$work/tree.before"
git status --porcelain >"$work/git.before"

cmd=(cargo test --workspace "$@")
timefmt='%O %e'
isolated=no
# Isolation needs the checkout outside /tmp (a bind mount over /tmp would hide it).
case "$root/" in
  /tmp/*) can_isolate=no ;;
  *) can_isolate=yes ;;
esac
if [ "$(id -u)" = 0 ] && [ "$can_isolate" = yes ] && command -v unshare >/dev/null; then
  # A private /tmp on the same disk: a fresh folder bind-mounted over /tmp in a private mount
  # namespace, so what is in it afterwards is exactly what the tests left in /tmp.
  private=$(mktemp -d /tmp/test-footprint-tmp.XXXXXX)
  # mktemp makes it 0700; as /tmp it must be what /tmp is (1777): the servers the tests start
  # drop root (SOGo composing a SmartReply writes its temporary files there).
  chmod 1777 "$private"
  isolated=yes
  set +e
  unshare -m --propagation private sh -c \
    'mount --bind "$1" /tmp && shift && exec "$@"' sh "$private" \
    /usr/bin/time -f "$timefmt" -o "$work/time" "${cmd[@]}" 2>&1 | tee "$work/test.log"
  status=${PIPESTATUS[0]}
  set -e
  (cd "$private" && find . -mindepth 1 | LC_ALL=C sort) >"$work/tmp.left"
  rm -rf "$private"
else
  tmp_listing >"$work/tmp.before"
  set +e
  /usr/bin/time -f "$timefmt" -o "$work/time" "${cmd[@]}" 2>&1 | tee "$work/test.log"
  status=${PIPESTATUS[0]}
  set -e
  tmp_listing >"$work/tmp.after"
  # Only new entries; other processes on the machine may add some too (run as root to isolate).
  comm -13 "$work/tmp.before" "$work/tmp.after" >"$work/tmp.left"
fi

# GNU time puts "Command exited with non-zero status N" before the figures when a test fails.
read -r blocks seconds < <(tail -n 1 "$work/time") || { cat "$work/time" "$work/test.log" >&2; exit 1; }
bytes=$((blocks * 512))
(cd target/tmp && find . -mindepth 1 | LC_ALL=C sort) >"$work/target-tmp.left"
tree_listing >"$work/tree.after"
comm -13 "$work/tree.before" "$work/tree.after" >"$work/tree.left"
git status --porcelain >"$work/git.after"
comm -13 <(LC_ALL=C sort "$work/git.before") <(LC_ALL=C sort "$work/git.after") >"$work/git.new"

passed=$(grep -Eo '^test result: [a-zA-Z]+\. [0-9]+ passed' "$work/test.log" | awk '{s += $4} END {print s + 0}')
failed=$(grep -Eo '[0-9]+ failed' "$work/test.log" | awk '{s += $1} END {print s + 0}')
# Tests that could not run here print one `SKIPPED <test>: <why>` line each (docs/testing.md).
skipped=$(grep -c '^SKIPPED ' "$work/test.log" || true)
count() { grep -c . "$1" || true; }
left_target=$(count "$work/target-tmp.left")
left_tmp=$(count "$work/tmp.left")
left_tree=$(count "$work/tree.left")

summary=$(
  echo "| measure | value |"
  echo "|---|---|"
  echo "| commit | $(git rev-parse --short HEAD)$(git diff --quiet HEAD || echo ' + uncommitted changes') |"
  echo "| command | \`${cmd[*]}\` (built first with \`--no-run\`) |"
  echo "| exit status | $status ($passed tests passed, $failed failed) |"
  echo "| wall time | ${seconds} s |"
  echo "| bytes written (ru_oublock x 512) | $bytes ($(awk -v b="$bytes" 'BEGIN {printf "%.1f MiB", b / 1048576}')) |"
  echo "| limit | $limit |"
  echo "| entries left in target/tmp | $left_target |"
  echo "| entries left in /tmp | $left_tmp (private /tmp: $isolated) |"
  echo "| new entries in the work tree | $left_tree |"
  echo "| versions | $(cargo --version), $(rustc --version), GNU time $(dpkg-query -W -f '${Version}' time 2>/dev/null || echo '?'), Linux $(uname -r) |"
  echo "| filesystems | target: $(stat -f -c %T target), /tmp: $(stat -f -c %T /tmp) |"
  echo "| MBX_REQUIRE_BROWSER / MBX_REQUIRE_DEVICE_TESTS | ${MBX_REQUIRE_BROWSER:-unset} / ${MBX_REQUIRE_DEVICE_TESTS:-unset} |"
  echo "| skipped (SKIPPED lines: what this machine lacks) | $skipped |"
  echo "| \`git status --porcelain\` lines after | $(count "$work/git.after") (new: $(count "$work/git.new"); before: $(count "$work/git.before")) |"
)
details=$(
  for f in target-tmp tmp tree; do
    if [ -s "$work/$f.left" ]; then
      echo
      echo "Left in $f (first 40):"
      echo '```'
      head -40 "$work/$f.left"
      echo '```'
    fi
  done
  if [ -s "$work/git.after" ]; then
    echo
    echo '`git status --porcelain` after:'
    echo '```'
    cat "$work/git.after"
    echo '```'
  fi
)
echo "$summary"
echo "$details"
if [ -n "${FOOTPRINT_OUT:-}" ]; then
  { echo "$summary"; echo "$details"; echo; } >>"$FOOTPRINT_OUT"
fi
if [ "$status" != 0 ]; then
  echo "cargo test failed; tail of its output:" >&2
  tail -40 "$work/test.log" >&2
  exit 1
fi
if [ "$bytes" -ge "$limit" ] || [ "$left_target" != 0 ] || [ "$left_tmp" != 0 ] \
  || [ "$left_tree" != 0 ] || [ -s "$work/git.new" ]; then
  exit 1
fi
