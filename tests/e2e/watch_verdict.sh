#!/usr/bin/env bash
# The live verdict of `nasprobe watch` in a real terminal (tmux), over the built-in scenarios run
# by real agents: the banner must name the host, resource and process `report` names —
#   synology-replication  the wall on dst, one thread of `synoreplicad`; bond0's slaves listed,
#                         the flow riding one of them
#   wd-ssh                a thread of ssh/sshd
#   md-disk-bound         a member disk on dst
#   link-100mbit          a NIC on dst
#   idle-pair             no wall, what was ruled out
# plus: an idle NIC of the inventory is listed; 80x24 (panels stack) and 200x50 show the whole
# verdict sentence; `v` opens the evidence, `1` focuses one host, `q` quits with 0 and leaves the
# alternate screen. The plain output carries the verdict line too.
#
#   tests/e2e/watch_verdict.sh [SCENARIO...]   build (debug) and run
#   NASPROBE_BIN_DIR=DIR ...                   use binaries from DIR
set -euo pipefail
E2E_NAME=watch_verdict
# shellcheck source=tests/e2e/lib/common.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib/common.sh"
command -v tmux >/dev/null || fail "tmux is missing (scripts/setup installs it)"
command -v python3 >/dev/null || fail "python3 missing"
# shellcheck source=tests/e2e/verdict_lib.sh
source "$REPO/tests/e2e/verdict_lib.sh"

TMP="$(e2e_tmpdir watchv)"
SESSION="nasprobe-wv-$$"
cleanup() {
    tmux kill-session -t "$SESSION" 2>/dev/null || true
    local d
    for d in "$TMP"/*/; do vr_stop "$d"; done
    wait 2>/dev/null || true
    rm -rf "$TMP"
}
trap cleanup EXIT
showpane() { [[ -f $TMP/pane.txt ]] && cat "$TMP/pane.txt" >&2; }

# The banner's text: the rows inside the box titled "verdict", borders off, joined by spaces.
banner() {
    python3 - "$TMP/pane.txt" <<'PY'
import sys
rows = open(sys.argv[1], encoding="utf-8").read().split("\n")
out, inside = [], False
for r in rows:
    if "verdict, last 60 s" in r:
        inside = True
        continue
    if inside:
        if r.lstrip().startswith("└"):
            break
        out.append(r.strip().strip("│").strip())
print(" ".join(x for x in out if x))
PY
}

# start_watch DIR COLS ROWS: watch over the scenario's agents in a new tmux session.
start_watch() {
    local dir=$1 hosts
    read -r -a hosts <"$dir/hosts.args"
    tmux kill-session -t "$SESSION" 2>/dev/null || true
    tmux new-session -d -s "$SESSION" -x "$2" -y "$3" \
        "$NP --db $dir/w.db --token-file $dir/token watch ${hosts[*]}; echo WATCH-EXIT=\$?; sleep 60"
}

# wait_banner PATTERN: until the banner matches PATTERN (extended regex), at most 40 s.
wait_banner() {
    local i
    for i in $(seq 1 80); do
        sleep 0.5
        tmux capture-pane -p -t "$SESSION" >"$TMP/pane.txt"
        if [[ $(banner) =~ $1 ]]; then
            return 0
        fi
    done
    return 1
}

quit_watch() {
    tmux send-keys -t "$SESSION" q
    local i
    for i in $(seq 1 40); do
        sleep 0.25
        tmux capture-pane -p -t "$SESSION" >"$TMP/pane.txt"
        grep -q 'WATCH-EXIT=' "$TMP/pane.txt" && break
    done
    grep -q 'WATCH-EXIT=0' "$TMP/pane.txt" || { showpane; fail "q did not quit with 0"; }
    ! grep -q 'verdict, last 60 s' "$TMP/pane.txt" || { showpane; fail "the screen was not restored after q"; }
}

declare -A WANT=(
    [synology-replication]='the wall is on dst: (thread `[^`]+` of|one thread of) `synoreplicad` at [0-9]+% of a core\.'
    [wd-ssh]='the wall is on [a-z0-9]+: (thread `[^`]+` of|one thread of) `(ssh|sshd)` at [0-9]+% of a core\.'
    [md-disk-bound]='the wall is on dst: disk sd[a-z]+ at [0-9]+% util\.'
    [link-100mbit]='the wall is on dst: NIC [a-z0-9]+ at [0-9]+% of its link\.'
    [idle-pair]='Verdict: no wall found on the observed hosts\..*ruled out: '
)
if [[ $# -gt 0 ]]; then SCENARIOS=("$@"); else
    SCENARIOS=(synology-replication wd-ssh md-disk-bound link-100mbit idle-pair)
fi

for sc in "${SCENARIOS[@]}"; do
    dir="$TMP/$sc"
    VR_INTERVAL=500 vr_start "$sc" "$dir" || fail "$sc: $(cat "$dir/result")"
    start_watch "$dir" 200 50
    wait_banner "${WANT[$sc]}" || { showpane; fail "$sc: the banner is '$(banner)', want /${WANT[$sc]}/"; }
    say "$sc (200x50): $(banner | cut -c1-150)"
    case "$sc" in
        synology-replication)
            grep -Eq 'bond0 .*2 slaves; the flow rides eth[0-9]: [0-9]+% of its link' "$TMP/pane.txt" ||
                { showpane; fail "bond0 does not name the slave that carries the flow"; }
            grep -Eq '↳ eth[0-9] .*← the flow' "$TMP/pane.txt" ||
                { showpane; fail "no slave line marked as carrying the flow"; }
            grep -q '39% of 2000' "$TMP/pane.txt" && { showpane; fail "bond judged against the sum of its slaves"; }
            grep -Eq 'flow +[▁▂▃▄▅▆▇█ ]+ [0-9.]+ MB/s' "$TMP/pane.txt" || { showpane; fail "no flow sparkline"; }
            grep -Eq 'hot +[▁▂▃▄▅▆▇█ ]+ [0-9]+% core' "$TMP/pane.txt" || { showpane; fail "no hot-thread sparkline"; }
            grep -Eq 'hot synoreplicad(/[^ ]+)? \[[0-9]+\] [0-9]+% of a core' "$TMP/pane.txt" ||
                { showpane; fail "the hot thread does not read process[/thread] [tid] N% of a core"; }
            grep -Eq 'btrfs/btrfs' "$TMP/pane.txt" && { showpane; fail "the thread name repeats the process name"; }
            grep -q 'THE WALL' "$TMP/pane.txt" || { showpane; fail "the wall's panel is not marked"; }
            # dst's eth1 carries nothing: the agent leaves it out of its samples, the inventory
            # (Hello) still lists it.
            grep -Eq '(↳ )?eth1 +0\.0/0\.0 +idle' "$TMP/pane.txt" || { showpane; fail "the idle NIC eth1 is not listed"; }
            # v: the evidence.
            tmux send-keys -t "$SESSION" v
            sleep 1
            tmux capture-pane -p -t "$SESSION" >"$TMP/pane.txt"
            grep -q 'verdict: the evidence' "$TMP/pane.txt" && grep -q 'would not help' "$TMP/pane.txt" ||
                { showpane; fail "v did not show the evidence"; }
            tmux send-keys -t "$SESSION" v
            # 2: dst alone, full width.
            tmux send-keys -t "$SESSION" 2
            sleep 1
            tmux capture-pane -p -t "$SESSION" >"$TMP/pane.txt"
            grep -q ' dst — ' "$TMP/pane.txt" && ! grep -q ' src — ' "$TMP/pane.txt" ||
                { showpane; fail "2 did not focus dst"; }
            tmux send-keys -t "$SESSION" 2
            cp "$TMP/pane.txt" "$TMP/pane-200x50.txt"
            quit_watch
            # The same at 80x24: panels stack, the banner stays whole.
            start_watch "$dir" 80 24
            wait_banner "${WANT[$sc]}" || { showpane; fail "80x24: the banner is '$(banner)'"; }
            say "$sc (80x24): $(banner | cut -c1-150)"
            [[ $(grep -c ' src — \| dst — ' "$TMP/pane.txt") -ge 2 ]] || { showpane; fail "80x24: not both panels"; }
            [[ -z ${NASPROBE_WATCH_SCREEN:-} ]] || cp "$TMP/pane.txt" "$NASPROBE_WATCH_SCREEN"
            quit_watch
            # Plain: the verdict line every 10 s.
            read -r -a hosts <"$dir/hosts.args"
            "$NP" --db "$dir/p.db" --token-file "$dir/token" watch --plain --duration 21s "${hosts[@]}" \
                >"$TMP/plain.txt" 2>"$TMP/plain.err" || fail "plain watch failed: $(cat "$TMP/plain.err")"
            grep -Eq "${WANT[$sc]}" "$TMP/plain.txt" || { cat "$TMP/plain.txt" >&2; fail "plain output has no verdict line"; }
            ;;
        *) quit_watch ;;
    esac
    vr_stop "$dir"
done
say "PASS in $((SECONDS - START)) s"
