#!/usr/bin/env bash
# `nasprobe watch` in a real terminal (tmux) and its non-terminal fallback:
#  - two real agents on loopback plus `--local`; tmux runs watch at 200x50; the captured pane
#    must show every host's label and name, per-core CPU figures, the disk and memory lines,
#    and "connected"; `?` opens the help, `q` quits (the pane's command then ends);
#  - stdout to a pipe: one plain line per host per second with the same figures;
#  - `watch --local --plain`: no item of nasprobe's own (its store, WAL, the agent's log);
#  - NO_COLOR=1: the terminal view has no colour codes (it has some without).
#
#   tests/e2e/collector_watch.sh      build (release) and run
#   NASPROBE_BIN_DIR=DIR ...          use binaries from DIR
set -euo pipefail
E2E_NAME=collector_watch
# shellcheck source=tests/e2e/lib/base.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib/base.sh"
fail() {
    echo "$E2E_NAME: FAIL: $*" >&2
    [[ -f ${TMP:-/nonexistent}/pane.txt ]] && cat "$TMP/pane.txt" >&2
    exit 1
}
command -v tmux >/dev/null || fail "tmux is missing (apt-get install tmux)"
e2e_build release nasprobe nasprobe-agent
TMP="$(mktemp -d /tmp/nasprobe-watch.XXXXXX)"
SESSION="nasprobe-watch-$$"
PIDS=()
cleanup() {
    tmux kill-session -t "$SESSION" 2>/dev/null || true
    tmux kill-session -t "$SESSION-nc" 2>/dev/null || true
    for p in "${PIDS[@]}"; do kill "$p" 2>/dev/null || true; done
    wait 2>/dev/null || true
    rm -rf "$TMP"
}
trap cleanup EXIT
TOK="$TMP/token"
BASE=$((20000 + RANDOM % 30000))
for i in 1 2; do
    "$BIN/nasprobe-agent" --listen "127.0.0.1:$((BASE + i))" --token-file "$TOK" --interval 200 \
        --name "box$i" --log-file "$TMP/agent$i.log" &
    PIDS+=($!)
    sleep 0.5
done
HOSTS=(src=127.0.0.1:$((BASE + 1)) dst=127.0.0.1:$((BASE + 2)))
# Nothing of the user's configuration (a host list adds hosts to `watch --local`).
export XDG_CONFIG_HOME="$TMP/config"

# --- terminal -----------------------------------------------------------------------------------
tmux new-session -d -s "$SESSION" -x 200 -y 50 \
    "NASPROBE_AGENT=$BIN/nasprobe-agent $BIN/nasprobe --db $TMP/w.db --token-file $TOK watch --local ${HOSTS[*]}; echo WATCH-EXIT=\$?; sleep 30"
ok=""
for _ in $(seq 1 80); do
    sleep 0.25
    tmux capture-pane -p -t "$SESSION" >"$TMP/pane.txt"
    if grep -q 'src — box1' "$TMP/pane.txt" && grep -q 'dst — box2' "$TMP/pane.txt" &&
        grep -q 'local — ' "$TMP/pane.txt" && [[ $(grep -c 'cpu0 ' "$TMP/pane.txt") -ge 1 ]] &&
        grep -q 'disks' "$TMP/pane.txt" && grep -Eq 'mem [0-9]+/[0-9]+ MiB' "$TMP/pane.txt" &&
        [[ $(grep -o 'connected' "$TMP/pane.txt" | wc -l) -ge 3 ]]; then
        ok=1
        break
    fi
done
[[ -n $ok ]] || fail "the panels did not show host names and figures"
[[ $(grep -o 'connected' "$TMP/pane.txt" | wc -l) -ge 3 ]] || fail "not every host is connected"
grep -Eq 'cpu0 +.*[0-9]+%' "$TMP/pane.txt" || fail "no per-core figure"
grep -q 'hot ' "$TMP/pane.txt" || say "note: no hottest thread shown (idle machine)"
# Colours, unless NO_COLOR (below): SGR parameters 30-37/40-47/90-107 (not 39/49, the defaults).
colours() { grep -oP '\e\[[0-9;]*m' "$1" | tr -d 'm\033[' | tr ';' '\n' |
    grep -cE '^(3[0-8]|4[0-8]|9[0-7]|10[0-7])$' || true; }
tmux capture-pane -e -p -t "$SESSION" >"$TMP/pane-e.txt"
[[ $(colours "$TMP/pane-e.txt") -gt 0 ]] || fail "the terminal view shows no colour"
tmux send-keys -t "$SESSION" '?'
sleep 0.6
tmux capture-pane -p -t "$SESSION" >"$TMP/pane.txt"
grep -q 'q quit   ? close this help' "$TMP/pane.txt" || fail "? did not open the help"
tmux send-keys -t "$SESSION" '?'
tmux send-keys -t "$SESSION" q
for _ in $(seq 1 40); do
    sleep 0.25
    tmux capture-pane -p -t "$SESSION" >"$TMP/pane.txt"
    grep -q 'WATCH-EXIT=' "$TMP/pane.txt" && break
done
grep -q 'WATCH-EXIT=0' "$TMP/pane.txt" || fail "q did not quit cleanly"
say "terminal view ok"

# --- NO_COLOR: the same view in the terminal's own colours -----------------------------------
tmux new-session -d -s "$SESSION-nc" -x 200 -y 50 \
    "NO_COLOR=1 NASPROBE_AGENT=$BIN/nasprobe-agent $BIN/nasprobe --db $TMP/nc.db --token-file $TOK watch --local --duration 4s ${HOSTS[*]}; sleep 30"
ok=""
for _ in $(seq 1 40); do
    sleep 0.25
    tmux capture-pane -e -p -t "$SESSION-nc" >"$TMP/pane-e.txt"
    if grep -q 'src — box1' "$TMP/pane-e.txt" && grep -q 'connected' "$TMP/pane-e.txt"; then
        ok=1
        break
    fi
done
tmux kill-session -t "$SESSION-nc" 2>/dev/null || true
[[ -n $ok ]] || fail "NO_COLOR: the panels did not show"
n=$(colours "$TMP/pane-e.txt")
[[ $n -eq 0 ]] || fail "NO_COLOR=1: $n colour codes in the terminal view"
say "NO_COLOR ok"

# --- not a terminal -----------------------------------------------------------------------------
"$BIN/nasprobe" --db "$TMP/w.db" --token-file "$TOK" watch --duration 4s "${HOSTS[@]}" | cat >"$TMP/plain.txt"
cat "$TMP/plain.txt"
for h in src dst; do
    n=$(grep -c "^$h \[connected\] seq [0-9]* cpu [0-9]*% cores \[" "$TMP/plain.txt" || true)
    [[ $n -ge 2 ]] || fail "plain output: $n lines for $h, want >= 2"
done
grep -q 'mem [0-9]*/[0-9]*MiB' "$TMP/plain.txt" || fail "plain output lacks memory"
# --local: nasprobe's own process and files are not the item (the store and its WAL are written
# every second right beside the agent)
NASPROBE_AGENT="$BIN/nasprobe-agent" "$BIN/nasprobe" --db "$TMP/w.db" --token-file "$TOK" \
    watch --local --plain --duration 6s | cat >"$TMP/local.txt"
grep -q '^local \[connected\]' "$TMP/local.txt" || fail "watch --local --plain: no connected line"
if grep -E 'item nasprobe|w\.db|agent\.log' "$TMP/local.txt"; then
    fail "watch --local shows nasprobe's own process or files as the item"
fi
# watch stored what it showed
"$BIN/nasprobe" --db "$TMP/w.db" check >/dev/null || fail "store check after watch"
say "plain fallback ok"
echo "collector_watch: 4 passed, 0 failed"
