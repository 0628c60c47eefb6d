#!/usr/bin/env bash
# `nasprobe watch` against a hostile agent that puts terminal escapes into every name (issue 19,
# finding 1): ESC[2J (clear screen), OSC 0 (window/pane title), OSC 52 (clipboard write), C1
# controls, DEL and a bidi override, in the Hello's host, disk, NIC and mount names and in
# process names, command lines and the path of the file a copy is on (watch's item). In a real
# terminal (tmux with set-clipboard on, so an OSC 52 that got through would become a paste
# buffer):
#  - the pane title stays what the test set, no paste buffer is written;
#  - the panel shows the host with visible stand-ins (`␛`);
#  - the plain fallback (stdout a pipe) has no control byte at all.
#
#   tests/e2e/hostile_watch.sh      build (debug) and run
#   NASPROBE_BIN_DIR=DIR ...        use nasprobe and the hostile_agent example from DIR
set -euo pipefail
E2E_NAME=hostile_watch
# shellcheck source=tests/e2e/lib/base.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib/base.sh"
fail() {
    echo "$E2E_NAME: FAIL: $*" >&2
    [[ -f ${TMP:-/nonexistent}/pane.txt ]] && cat -v "$TMP/pane.txt" >&2
    exit 1
}
command -v tmux >/dev/null || e2e_skip "$E2E_NAME" "tmux is missing (apt-get install tmux)"
if [[ -z ${NASPROBE_BIN_DIR:-} ]]; then
    say "building nasprobe and the hostile_agent example"
    cargo build -q -p nasprobe --bin nasprobe --example hostile_agent
    BIN="$TARGET_DIR/debug"
    HOSTILE="$TARGET_DIR/debug/examples/hostile_agent"
else
    BIN="$NASPROBE_BIN_DIR"
    HOSTILE="$NASPROBE_BIN_DIR/hostile_agent"
fi
[[ -x $BIN/nasprobe && -x $HOSTILE ]] || fail "missing $BIN/nasprobe or $HOSTILE"
TMP="$(mktemp -d /tmp/nasprobe-hostile-watch.XXXXXX)"
SESSION="nasprobe-hostile-$$"
SOCK="$TMP/tmux.sock"
T() { tmux -S "$SOCK" "$@"; }
PIDS=()
cleanup() {
    T kill-server 2>/dev/null || true
    for p in "${PIDS[@]}"; do kill "$p" 2>/dev/null || true; done
    wait 2>/dev/null || true
    rm -rf "$TMP"
}
trap cleanup EXIT
TOK="$TMP/token"
(umask 077 && od -An -tx1 -N32 /dev/urandom | tr -d ' \n' >"$TOK" && echo >>"$TOK")
"$HOSTILE" names "$TOK" >"$TMP/hostile.out" 2>"$TMP/hostile.err" &
PIDS+=($!)
for _ in $(seq 1 50); do
    grep -q '^listening ' "$TMP/hostile.out" 2>/dev/null && break
    sleep 0.1
done
ADDR="$(sed -n 's/^listening //p' "$TMP/hostile.out")"
[[ -n $ADDR ]] || fail "the hostile agent did not start: $(cat "$TMP/hostile.err")"

# --- terminal -----------------------------------------------------------------------------------
# A private tmux server: an OSC 52 that reached it would become a paste buffer, an OSC 0/2 the
# pane title.
T -f /dev/null new-session -d -s "$SESSION" -x 200 -y 50 "sleep 600"
T set -g set-clipboard on
T set -g allow-rename on
T set -g allow-set-title on 2>/dev/null || true
T select-pane -t "$SESSION" -T "nasprobe-e2e-title"
T respawn-pane -k -t "$SESSION" \
    "$BIN/nasprobe --db $TMP/w.db --token-file $TOK watch evil=$ADDR; echo WATCH-EXIT=\$?; sleep 60"
ok=""
for _ in $(seq 1 40); do
    sleep 0.25
    T capture-pane -p -t "$SESSION" >"$TMP/pane.txt"
    if grep -q 'evil' "$TMP/pane.txt" && grep -q '␛' "$TMP/pane.txt"; then
        ok=1
        break
    fi
done
[[ -n $ok ]] || fail "the panel did not show the host with visible stand-ins"
sleep 2 # let several frames draw
T capture-pane -p -t "$SESSION" >"$TMP/pane.txt"
title="$(T display-message -p -t "$SESSION" '#{pane_title}')"
[[ $title == nasprobe-e2e-title ]] || fail "the pane title changed to: $(printf %q "$title")"
buffers="$(T list-buffers 2>/dev/null || true)"
[[ -z $buffers ]] || fail "a paste buffer was written (OSC 52 got through): $buffers"
T send-keys -t "$SESSION" q
for _ in $(seq 1 40); do
    sleep 0.25
    T capture-pane -p -t "$SESSION" >"$TMP/pane2.txt"
    grep -q 'WATCH-EXIT=' "$TMP/pane2.txt" && break
done
grep -q 'WATCH-EXIT=0' "$TMP/pane2.txt" || fail "q did not quit cleanly"
say "terminal: pane title unchanged, no paste buffer, stand-ins shown"

# --- not a terminal -----------------------------------------------------------------------------
"$BIN/nasprobe" --db "$TMP/w2.db" --token-file "$TOK" watch --duration 3s "evil=$ADDR" >"$TMP/plain.txt"
grep -q '^evil \[' "$TMP/plain.txt" || fail "no plain line for the host: $(cat -v "$TMP/plain.txt")"
grep -q '| item .* reading /share/␛]0;pwned␇' "$TMP/plain.txt" ||
    fail "no item (the file a copy is on) with stand-ins in: $(cat -v "$TMP/plain.txt")"
if LC_ALL=C grep -nP '[\x00-\x08\x0b-\x1f\x7f]|\xc2[\x80-\x9f]|\xe2\x80[\x8e\x8f\xa8-\xae]|\xe2\x81[\xa6-\xa9]' "$TMP/plain.txt"; then
    fail "a control byte in the plain output"
fi
for cmd in report events; do
    "$BIN/nasprobe" --db "$TMP/w2.db" "$cmd" >"$TMP/$cmd.txt" 2>"$TMP/$cmd.err" || fail "$cmd failed: $(cat "$TMP/$cmd.err")"
    if LC_ALL=C grep -nP '[\x00-\x08\x0b-\x1f\x7f]|\xc2[\x80-\x9f]|\xe2\x80[\x8e\x8f\xa8-\xae]|\xe2\x81[\xa6-\xa9]' "$TMP/$cmd.txt" "$TMP/$cmd.err"; then
        fail "a control byte in $cmd's output"
    fi
done
say "plain, report, events: no control byte"
echo "hostile_watch: 2 passed, 0 failed"
