#!/usr/bin/env bash
# `nasprobe watch --local` as an installed user runs it: the two binaries copied into an empty
# folder, PATH without cargo or the source tree, HOME elsewhere. In tmux the local panel must show
# this machine's figures and `q` must quit with 0; with the agent missing, one line says how to get
# it and the exit status is 1.
#
#   tests/e2e/watch_local_installed.sh      build (debug) and run
#   NASPROBE_BIN_DIR=DIR ...                use binaries from DIR
set -euo pipefail
E2E_NAME=watch_local_installed
# shellcheck source=tests/e2e/lib/common.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib/common.sh"
command -v tmux >/dev/null || fail "tmux is missing (apt-get install tmux)"
TMP="$(mktemp -d /tmp/nasprobe-installed.XXXXXX)"
SESSION="nasprobe-installed-$$"
cleanup() {
    tmux kill-session -t "$SESSION" 2>/dev/null || true
    rm -rf "$TMP"
}
trap cleanup EXIT
# fail, with the last captured screen.
pane_fail() {
    [[ -f $TMP/pane.txt ]] && cat "$TMP/pane.txt" >&2
    fail "$@"
}

mkdir -p "$TMP/bin" "$TMP/home"
cp "$NP" "$AGENT" "$TMP/bin/"
# Only the system's own folders: no ~/.cargo/bin, no target dir.
CLEAN_PATH=/usr/sbin:/usr/bin:/sbin:/bin
if env PATH=$CLEAN_PATH bash -c 'command -v cargo' >/dev/null; then
    fail "cargo is on $CLEAN_PATH: the test would not prove anything"
fi
RUN=(env -i "PATH=$CLEAN_PATH" "HOME=$TMP/home" "TERM=xterm-256color")

# --- the agent beside the collector -------------------------------------------------------------
tmux new-session -d -s "$SESSION" -x 160 -y 45 -c "$TMP" \
    "${RUN[*]} $TMP/bin/nasprobe watch --local; echo WATCH-EXIT=\$?; sleep 30"
ok=""
for _ in $(seq 1 60); do
    sleep 0.25
    tmux capture-pane -p -t "$SESSION" >"$TMP/pane.txt"
    if grep -q 'local — ' "$TMP/pane.txt" && grep -q 'connected' "$TMP/pane.txt" &&
        grep -Eq 'cpu0 +.*[0-9]+%' "$TMP/pane.txt" && grep -Eq 'mem [0-9]+/[0-9]+ MiB' "$TMP/pane.txt"; then
        ok=1
        break
    fi
done
[[ -n $ok ]] || pane_fail "the local panel did not show this machine's figures"
tmux send-keys -t "$SESSION" q
for _ in $(seq 1 40); do
    sleep 0.25
    tmux capture-pane -p -t "$SESSION" >"$TMP/pane.txt"
    grep -q 'WATCH-EXIT=' "$TMP/pane.txt" && break
done
grep -q 'WATCH-EXIT=0' "$TMP/pane.txt" || pane_fail "q did not quit cleanly"
tmux kill-session -t "$SESSION" 2>/dev/null || true
pgrep -f "$TMP/bin/nasprobe-agent" >/dev/null && fail "the local agent outlived watch"
say "watch --local from a copy of the two binaries: ok"

# --- without the agent ----------------------------------------------------------------------------
rm "$TMP/bin/nasprobe-agent"
rc=0
"${RUN[@]}" "$TMP/bin/nasprobe" watch --local --plain --duration 2s >"$TMP/out.txt" 2>"$TMP/err.txt" ||
    rc=$?
[[ $rc == 1 ]] || fail "without the agent: exit $rc (want 1): $(cat "$TMP/err.txt")"
grep -q 'nasprobe-agent not found' "$TMP/err.txt" || fail "no 'not found' line: $(cat "$TMP/err.txt")"
grep -q 'cargo build --release -p nasprobe-agent' "$TMP/err.txt" ||
    fail "the error does not say how to get the agent: $(cat "$TMP/err.txt")"
[[ $(wc -l <"$TMP/err.txt") -le 2 ]] || fail "more than one line of error: $(cat "$TMP/err.txt")"
say "without the agent: $(head -1 "$TMP/err.txt")"
say "PASS in $((SECONDS - START)) s"
