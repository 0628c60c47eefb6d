#!/usr/bin/env bash
# End-to-end test of the collector against real agents on loopback (issue 5, "Done when"):
#
#  1. three `nasprobe-agent`s (--interval 100, token file in a temp dir); the third is the armv7
#     build under qemu-user when it and qemu-arm are there (NASPROBE_E2E_ARMV7=require makes
#     that mandatory);
#  2. `nasprobe record` stores their samples; it is killed with -9 mid-stream and restarted:
#     `nasprobe check` must find every sequence number of every instance exactly once, no hole;
#  3. one agent is restarted: the store shows a second instance for it and an honest gap
#     ("agent restarted") in `report --json`.
#
#   tests/e2e/collector_e2e.sh        build (release) and run
#   NASPROBE_BIN_DIR=DIR ...          use nasprobe and nasprobe-agent from DIR, no build
#   NASPROBE_KEEP=1 ...               keep the temp folder
set -euo pipefail
E2E_NAME=collector_e2e
# shellcheck source=tests/e2e/lib/base.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib/base.sh"
e2e_build release nasprobe nasprobe-agent
e2e_bins nasprobe nasprobe-agent
NP="$BIN/nasprobe"
AGENT="$BIN/nasprobe-agent"

ARM_AGENT="${NASPROBE_DIST:-$PWD/dist}/nasprobe-agent-armv7-unknown-linux-musleabihf"
QEMU="$(command -v qemu-arm-static || command -v qemu-arm || true)"
AGENT3=("$AGENT")
if [[ -x $ARM_AGENT && -n $QEMU ]]; then
    AGENT3=("$QEMU" "$ARM_AGENT")
    say "third agent: armv7 build under $(basename "$QEMU")"
elif [[ ${NASPROBE_E2E_ARMV7:-} == require ]]; then
    fail "armv7 agent ($ARM_AGENT) or qemu-arm missing (scripts/build-targets builds it)"
else
    say "armv7 agent or qemu-arm not found: the third agent is the native build"
fi

TMP="$(mktemp -d /tmp/nasprobe-e2e.XXXXXX)"
PIDS=()
cleanup() {
    for p in "${PIDS[@]}"; do kill -9 "$p" 2>/dev/null || true; done
    wait 2>/dev/null || true
    if [[ -n ${NASPROBE_KEEP:-} ]]; then say "kept $TMP"; else rm -rf "$TMP"; fi
}
trap cleanup EXIT
TOK="$TMP/token"
DB="$TMP/nasprobe.db"
BASE=$((20000 + RANDOM % 30000))
PORTS=($BASE $((BASE + 1)) $((BASE + 2)))
declare -A APID

start_agent() { # index
    local i=$1 cmd=("$AGENT")
    [[ $i == 3 ]] && cmd=("${AGENT3[@]}")
    "${cmd[@]}" --listen "127.0.0.1:${PORTS[$((i - 1))]}" --token-file "$TOK" --interval 100 \
        --name "nas$i" --log-file "$TMP/agent$i.log" &
    APID[$i]=$!
    PIDS+=($!)
}
start_agent 1
sleep 0.5 # the first agent creates the token file
start_agent 2
start_agent 3
sleep 1
HOSTS=(a1=127.0.0.1:${PORTS[0]} a2=127.0.0.1:${PORTS[1]} a3=127.0.0.1:${PORTS[2]})
NPX=("$NP" --db "$DB" --token-file "$TOK")

# --- record, kill -9 mid-stream, restart -------------------------------------------------------
"${NPX[@]}" record "${HOSTS[@]}" 2>"$TMP/record1.log" &
REC=$!
PIDS+=($REC)
sleep 3
kill -9 $REC
wait $REC 2>/dev/null || true
before=$("${NPX[@]}" report --json | python3 -c '
import json, sys
r = json.load(sys.stdin)
print(sum(1 for h in r["hosts"] if h["samples"] > 0))')
[[ $before -ge 3 ]] || fail "nothing stored before the kill: $(cat "$TMP/record1.log")"
say "killed the collector (-9) mid-stream; agents keep sampling for 2 s"
sleep 2
"${NPX[@]}" record "${HOSTS[@]}" 2>"$TMP/record2.log" &
REC=$!
PIDS+=($REC)
sleep 3

# --- restart agent 2 ---------------------------------------------------------------------------
say "restarting agent 2"
kill "${APID[2]}"
wait "${APID[2]}" 2>/dev/null || true
sleep 1
start_agent 2
sleep 4
kill -INT $REC
wait $REC || fail "record exited non-zero: $(cat "$TMP/record2.log")"

# --- checks ------------------------------------------------------------------------------------
"${NPX[@]}" check | tee "$TMP/check.txt" || fail "check failed"
grep -q '^integrity ok$' "$TMP/check.txt" || fail "integrity"
for h in a1 a2 a3; do
    n=$(grep -c "^host $h " "$TMP/check.txt" || true)
    want=1
    [[ $h == a2 ]] && want=2
    [[ $n == "$want" ]] || fail "$h has $n instances, want $want"
done
# Every instance holds a good run of samples (100 ms interval: >40 over the ~8 s).
while read -r _ h _ inst _ range _ stored _; do
    last=${range#*..}
    [[ $stored -ge 20 ]] || fail "$h instance $inst stored only $stored records"
    [[ $stored -le $last ]] || fail "$h instance $inst: $stored rows for seq up to $last"
done < <(grep '^host ' "$TMP/check.txt")
"${NPX[@]}" report --json >"$TMP/report.json"
restarts=$(python3 -c '
import json, sys
r = json.load(open(sys.argv[1]))
print(" ".join(g["host"] for g in r["gaps"] if g["reason"] == "agent restarted"))' "$TMP/report.json")
[[ $restarts == a2 ]] || fail "want exactly one 'agent restarted' gap, on a2; got: '$restarts'"
"${NPX[@]}" report
say "ok: every seq stored exactly once across a kill -9; agent restart recorded as a new instance and a gap"
echo "collector_e2e: 1 passed, 0 failed"
