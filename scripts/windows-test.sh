#!/usr/bin/env bash
# The Windows build, cross-compiled on Linux and tested under Wine (issue 15; docs/windows.md).
#
#   scripts/windows-test.sh          # what .ci/run does: install what is missing, test, demo
#
# 1. Installs what is missing: the rustup target x86_64-pc-windows-gnu, the distribution's
#    MinGW-w64 linker (gcc-mingw-w64-x86-64) and Wine (wine64), with apt-get (Debian/Ubuntu).
# 2. Runs the mbx-io, mbx-store and mbx-config unit tests as Windows .exe files under Wine
#    (`cargo test --target`; .cargo/config.toml makes scripts/windows/wine-run.sh the runner,
#    which puts the bcryptprimitives.dll stand-in next to each .exe: Wine 8 lacks that DLL).
# 3. Builds the release mbxstress.exe once and, under Wine: prepare + verify of two small
#    databases at a Windows path (Z:\...\db, no --map-path), a short run writing result.json and
#    report.html, then report, compare, esrp and size, the safety checks (a foreign file refused,
#    the free-space check), every other test type (Stress, Backup, Checksum, Soft Recovery),
#    import of a Jetstress report, a Jetstress XML with drive paths used as written, and iobench.
#    Wine emulates Windows on Linux: its figures measure Wine, not Windows.
set -euo pipefail
cd "$(dirname "$0")/.."
root=$PWD
target=x86_64-pc-windows-gnu
start=$SECONDS

echo "== Windows: toolchain (rustup target, MinGW-w64 linker, Wine)"
rustup target list --installed | grep -qx "$target" || rustup target add "$target"
need=()
command -v x86_64-w64-mingw32-gcc >/dev/null 2>&1 || need+=(gcc-mingw-w64-x86-64)
{ command -v wine64 || command -v wine || [ -x /usr/lib/wine/wine64 ]; } >/dev/null 2>&1 || need+=(wine64 wine)
if [ "${#need[@]}" -gt 0 ]; then
  sudo_=""
  [ "$(id -u)" = 0 ] || sudo_=sudo
  $sudo_ apt-get update -qq
  $sudo_ env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${need[@]}" >/dev/null
fi
x86_64-w64-mingw32-gcc --version | head -1
export WINEDEBUG=${WINEDEBUG:--all}
export WINEPREFIX=${WINEPREFIX:-$HOME/.wine-mbxstress}

echo "== Windows: mbx-io, mbx-store and mbx-config unit tests under Wine"
log=$(mktemp)
unit_tests() { cargo test --quiet --target "$target" -p mbx-core -p mbx-io -p mbx-store -p mbx-config >"$log" 2>&1; }
if ! unit_tests; then
  # Wine's server exits a few seconds after its last client; a test binary that starts just then
  # loses its connection ("wine client error:0: recvmsg: Connection reset by peer", seen once in a
  # fresh-clone .ci/run, between two test binaries). That is Wine's race, not a test failure: say so and run the
  # tests once more. Any other failure, or this one twice, fails the script.
  passed=0
  if grep -q "wine client error" "$log"; then
    cat "$log" >&2
    echo "Windows unit tests: Wine's server dropped a client (a Wine race, not a test result); running them again" >&2
    unit_tests && passed=1
  fi
  if [ "$passed" = 0 ]; then
    cat "$log" >&2
    echo "Windows unit tests failed: cargo test --target $target -p mbx-core -p mbx-io -p mbx-store -p mbx-config" >&2
    exit 1
  fi
fi
grep "^test result" "$log"
rm -f "$log"

echo "== Windows: cargo clippy --workspace --all-targets --target $target -- -D warnings"
# Every crate and test target compiles for Windows, warning-free (not only those run below).
cargo clippy --quiet --workspace --all-targets --target "$target" -- -D warnings

echo "== Windows: release build (cargo build --release --target $target -p mbxstress)"
cargo build --quiet --release --target "$target" -p mbxstress
exe=$root/target/$target/release/mbxstress.exe
ls -l "$exe"

scratch=$(mktemp -d)
trap 'rm -rf "$scratch"' EXIT
cd "$scratch"
# The scratch folder as Windows sees it under Wine (Z: is the Linux root).
win="Z:${scratch//\//\\}"
mbx() { "$root/scripts/windows/wine-run.sh" "$exe" "$@"; }
# expect CODES TEXT -- ARGS...: mbxstress.exe exits with one of CODES ("0" or "0 1") and prints
# TEXT (stdout or stderr).
expect() {
  local code=$1 text=$2
  shift 3
  local out rc=0
  out=$(mbx "$@" 2>&1) || rc=$?
  if [[ " $code " != *" $rc "* ]] || ! grep -qiF -- "$text" <<<"$out"; then
    echo "FAILED: mbxstress.exe $* exited $rc (wanted $code) and printed:" >&2
    echo "$out" >&2
    exit 1
  fi
  echo "ok: mbxstress.exe $* -> exit $rc, '$text'"
}

echo "== Windows: mbxstress.exe under Wine (Wine's figures measure Wine, not Windows)"
paths=(--db-path "$win\\db" --log-path "$win\\logs")
expect 0 "iocp" -- prepare --mailboxes 8 --quota-mb 1 --databases 2 "${paths[@]}" --json
expect 0 "mbxstress002.edb" -- verify --db-path "$win\\db"
# A run this short may miss its IOPS target by a transaction (exit 1, as on Linux): what is
# checked is that it runs on the IOCP engine and writes its result and report.
expect "0 1" "result.json" -- run --mailboxes 8 --iops-per-mailbox 1 --quota-mb 1 --databases 2 \
  "${paths[@]}" --duration 3s --threads 2 --out "$win\\out" --progress quiet
test -s out/result.json && test -s out/report.html
grep -q '"engine": *"iocp"' out/result.json || { echo "result.json does not say engine iocp" >&2; exit 1; }
echo "ok: out/result.json and out/report.html written, engine iocp"
# The other commands on that result: report (HTML and CSV again), compare, esrp; and size.
mbx report "$win\\out" --out "$win\\rep" >/dev/null
test -s rep/report.html && test -s rep/instances.csv
expect 0 "iops" -- compare "$win\\out\\result.json" "$win\\out\\result.json"
expect 0 "transfers/s" -- esrp "$win\\out\\result.json"
expect 0 "16,000 mailboxes" -- size --example tintri
# Every other test type on the same databases (tiny, so the Wine run stays short): Stress (its
# workload, then the checksum pass), Database Backup, Checksum, Soft Recovery (one log file
# generated, the database stopped dirty, replayed).
types=(--mailboxes 8 --iops-per-mailbox 1 --quota-mb 1 --databases 2 "${paths[@]}" --threads 2
  --progress quiet)
expect "0 1" "result.json" -- run --test stress --duration 2s "${types[@]}" --out "$win\\stress"
grep -q '"checksum"' stress/result.json || { echo "stress: no checksum pass in result.json" >&2; exit 1; }
expect 0 "result.json" -- run --test backup "${types[@]}" --out "$win\\backup"
expect 0 "result.json" -- run --test checksum "${types[@]}" --out "$win\\checksum"
expect 0 "seconds per log" -- run --test soft-recovery --log-files-to-replay 1 "${types[@]}" \
  --out "$win\\soft"
for t in stress backup checksum soft; do test -s "$t/report.html"; done
echo "ok: Stress, Database Backup, Checksum and Soft Recovery ran and wrote their reports"
# A Jetstress report read in.
cp "$root/crates/mbx-report/tests/fixtures/tintri-t880-performance.txt" tintri.txt
expect 0 "Instance11824.1" -- import "$win\\tintri.txt" --json
# Safety: a file that is not ours is refused without --force, and left as it was.
mkdir foreign && printf 'user data' >foreign/mbxstress001.edb
expect 2 "--force" -- prepare --mailboxes 8 --quota-mb 1 --databases 1 \
  --db-path "$win\\foreign\\mbxstress001.edb" --log-path "$win\\flogs"
[ "$(cat foreign/mbxstress001.edb)" = "user data" ] || { echo "the foreign file was changed" >&2; exit 1; }
# Safety: more than the volume holds is refused before anything is written.
expect 2 "free" -- prepare --databases 1 --database-size-mb 50000000 \
  --db-path "$win\\huge" --log-path "$win\\hlogs"
[ ! -e huge/mbxstress001.edb ] || { echo "the refused prepare wrote a database" >&2; exit 1; }
# A Jetstress XML configuration with drive paths, used as written (no --map-path): its E:\ is
# made the scratch folder's e\ (Wine has no E: drive).
sed "s|E:\\\\|${win//\\/\\\\}\\\\e\\\\|g" \
  "$root/crates/mbx-config/tests/fixtures/jetstress-config/jettest-performance-4db.xml" >jet.xml
grep -qF "$win" jet.xml || { echo "jet.xml: the paths were not rewritten" >&2; exit 1; }
expect 0 "mbxstress004.edb" -- prepare --jetstress-config "$win\\jet.xml" --mailboxes 8 --quota-mb 1
# --threads 4 (the file's ThreadCount): this checks the file's drive paths, not tuning, which
# at this tiny target lengthens its steps to minutes (1/margin^2 transactions each).
expect "0 1" "result.json" -- run --jetstress-config "$win\\jet.xml" --mailboxes 8 --quota-mb 1 \
  --threads 4 --duration 2s --out "$win\\jout" --progress quiet
ls e/db1/db/*.edb e/db4/log >/dev/null
echo "ok: the Jetstress configuration's drive paths were used as written"
expect 0 "iops" -- iobench --file "$win\\bench.dat" --size 64M --rw randrw --rwmixread 70 \
  --bs 32k --iodepth 8 --runtime 3s
# Client load: the async clients (tokio over IOCP) send through Wine to Postfix's smtp-sink on
# the Linux side of loopback; the sink's own count must match what mbxstress says it sent.
if [ -x /usr/sbin/smtp-sink ]; then
  port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
  /usr/sbin/smtp-sink -c -u nobody "127.0.0.1:$port" 64 >"$scratch/sink.out" 2>&1 &
  sink=$!
  trap 'kill "$sink" 2>/dev/null; rm -rf "$scratch"' EXIT
  for _ in $(seq 50); do (exec 3<>"/dev/tcp/127.0.0.1/$port") 2>/dev/null && break; sleep 0.1; done
  expect 0 "messages accepted 40 of 40" -- loadgen submit --smtp "smtp://127.0.0.1:$port" \
    --connections 4 --messages 40 --message-kb 2 --out "$win\\submit" --progress quiet
  ls submit/result.json >/dev/null
elif [ -n "${MBX_REQUIRE_MAIL_SERVER:-}" ]; then
  echo "FAILED: MBX_REQUIRE_MAIL_SERVER is set but /usr/sbin/smtp-sink (postfix) is missing" >&2
  exit 1
else
  echo "SKIPPED: loadgen under Wine: no /usr/sbin/smtp-sink (apt-get install postfix)"
fi
cd "$root"
echo "Windows checks passed in $((SECONDS - start)) s."
