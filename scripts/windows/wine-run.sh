#!/usr/bin/env bash
# Cargo's runner for the x86_64-pc-windows-gnu target (.cargo/config.toml): runs a Windows .exe
# under Wine, with the bcryptprimitives.dll stand-in (bcryptprimitives.c; Wine 8 lacks the DLL
# that Rust's std needs) next to it. The stub is built by scripts/windows-test.sh, or here if
# missing. Wine's own messages are silenced (WINEDEBUG=-all) unless WINEDEBUG is set.
set -euo pipefail
exe=$1
shift
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
stub="$(dirname "$exe")/bcryptprimitives.dll"
if [ ! -e "$stub" ]; then
  x86_64-w64-mingw32-gcc -shared -O2 -o "$stub" "$here/bcryptprimitives.c" -ladvapi32
fi
wine=$(command -v wine64 || true)
[ -n "$wine" ] || { [ -x /usr/lib/wine/wine64 ] && wine=/usr/lib/wine/wine64; } || wine=wine
export WINEDEBUG=${WINEDEBUG:--all}
export WINEPREFIX=${WINEPREFIX:-$HOME/.wine-mbxstress}
exec "$wine" "$exe" "$@"
