#!/usr/bin/env bash
# The collector for Windows (x86_64-pc-windows-gnu, cross-built with Debian's mingw-w64, bundled
# SQLite included) run under Debian's wine: `nasprobe.exe --version`, then `report --json` over a
# store recorded on Linux from a real agent. The store file is portable: the Windows report must be
# byte-identical to the Linux one. Wine 8.0 (Debian 12) lacks bcryptprimitives.dll, which Windows
# 10+ has and Rust's std imports: tests/wine/bcryptprimitives.c stands in for it, beside the exe
# in the test's folder only.
#
#   tests/e2e/windows_wine.sh
set -euo pipefail
REPO="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
cd "$REPO"
E2E_NAME=windows_wine
# shellcheck source=tests/e2e/lib/common.sh
source "$REPO/tests/e2e/lib/common.sh"
for c in wine x86_64-w64-mingw32-gcc; do
    command -v "$c" >/dev/null || fail "$c is missing (scripts/setup installs it)"
done
WIN=x86_64-pc-windows-gnu
say "building nasprobe.exe ($WIN, release)"
cargo build -q --release --locked -p nasprobe --target "$WIN"
EXE="$TARGET_DIR/$WIN/release/nasprobe.exe"
[[ -f $EXE ]] || fail "no $EXE"

TMP="$(mktemp -d /tmp/nasprobe-wine.XXXXXX)"
AGENT_PID=""
cleanup() {
    [[ -z $AGENT_PID ]] || kill "$AGENT_PID" 2>/dev/null || true
    wineserver -k 2>/dev/null || true
    rm -rf "$TMP"
}
trap cleanup EXIT
export WINEPREFIX="$TMP/wine" WINEDEBUG=-all
mkdir -p "$TMP/win"
cp "$EXE" "$TMP/win/"
x86_64-w64-mingw32-gcc -O2 -shared -o "$TMP/win/bcryptprimitives.dll" \
    tests/wine/bcryptprimitives.c tests/wine/bcryptprimitives.def -ladvapi32

# --- --version ------------------------------------------------------------------------------------
out=$(timeout 300 wine "$TMP/win/nasprobe.exe" --version 2>"$TMP/wine.err") ||
    fail "nasprobe.exe --version failed: $(tail -5 "$TMP/wine.err")"
out=${out//$'\r'/}
want="nasprobe $(sed -n 's/^version = "\(.*\)"/\1/p' Cargo.toml | head -n 1)"
[[ $out == "$want" ]] || fail "nasprobe.exe --version said '$out', want '$want'"
say "under wine: $out"

# --- a store recorded on Linux, reported on Windows ------------------------------------------------
PORT=$((20000 + RANDOM % 30000))
"$AGENT" --listen "127.0.0.1:$PORT" --token-file "$TMP/token" --interval 500 --name winbox \
    --log-file "$TMP/agent.log" &
AGENT_PID=$!
sleep 0.5
"$NP" --db "$TMP/store.db" --token-file "$TMP/token" record --duration 5s "box=127.0.0.1:$PORT" \
    >"$TMP/record.txt" 2>&1 || fail "record failed: $(cat "$TMP/record.txt")"
kill "$AGENT_PID"
AGENT_PID=""
"$NP" --db "$TMP/store.db" report --json >"$TMP/linux.json" || fail "report on Linux failed"
# Wine's file system has the Unix root as drive Z:.
windb="Z:${TMP//\//\\}\\store.db"
timeout 300 wine "$TMP/win/nasprobe.exe" --db "$windb" report --json >"$TMP/windows.json" \
    2>"$TMP/wine.err" || fail "report --json under wine failed: $(tail -5 "$TMP/wine.err")"
sed -i 's/\r$//' "$TMP/windows.json"
samples=$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["hosts"][0]["samples"])' \
    "$TMP/windows.json") || fail "the Windows report is not the report JSON: $(head -c 300 "$TMP/windows.json")"
((samples >= 5)) || fail "the Windows report counts $samples samples of box (want >= 5)"
cmp -s "$TMP/linux.json" "$TMP/windows.json" ||
    fail "the Windows report differs from the Linux one: $(diff "$TMP/linux.json" "$TMP/windows.json" | head -20)"
say "report --json under wine over a Linux store: $samples samples of box, identical to Linux"
say "PASS in $((SECONDS - START)) s"
