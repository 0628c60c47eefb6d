#!/usr/bin/env bash
# Reliability (issue 10): the collector SIGKILLed every few seconds for a minute while three
# agents stream at 10 Hz (--interval 100). Afterwards `nasprobe check` passes (every seq of every
# instance stored exactly once), no gap exists at all (the agents' rings covered every outage),
# and no record was rejected.
#
#   tests/e2e/reliability_collector_kill.sh
#   NASPROBE_KILL_SECONDS=60     how long the kill loop runs
#   NASPROBE_BIN_DIR=DIR         use nasprobe and nasprobe-agent from DIR, no build
#   NASPROBE_KEEP=1              keep the temp folder
set -euo pipefail
E2E_NAME=reliability_collector_kill
T=$E2E_NAME
# shellcheck source=tests/e2e/lib/base.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib/base.sh"
command -v sqlite3 >/dev/null || fail "sqlite3 missing (apt-get install sqlite3)"
e2e_build release nasprobe nasprobe-agent
e2e_bins nasprobe nasprobe-agent
NP="$BIN/nasprobe"
AGENT="$BIN/nasprobe-agent"
KILL_SECONDS=${NASPROBE_KILL_SECONDS:-60}
TMP="$(mktemp -d /tmp/nasprobe-kill.XXXXXX)"
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
start=$SECONDS
for i in 1 2 3; do
    "$AGENT" --listen "127.0.0.1:$((BASE + i))" --token-file "$TOK" --interval 100 \
        --name "nas$i" --log-file "$TMP/agent$i.log" &
    PIDS+=($!)
    [[ $i == 1 ]] && sleep 0.5 # the first agent creates the token file
done
sleep 0.5
HOSTS=(a1=127.0.0.1:$((BASE + 1)) a2=127.0.0.1:$((BASE + 2)) a3=127.0.0.1:$((BASE + 3)))
NPX=("$NP" --db "$DB" --token-file "$TOK")

kills=0
t_end=$((SECONDS + KILL_SECONDS))
while ((SECONDS < t_end)); do
    "${NPX[@]}" record "${HOSTS[@]}" 2>>"$TMP/record.log" &
    REC=$!
    PIDS+=($REC)
    # 2.0 .. 4.9 s of recording, then SIGKILL (mid-batch, mid-transaction, mid-handshake).
    sleep "$((2 + RANDOM % 3)).$((RANDOM % 10))"
    kill -9 $REC
    wait $REC 2>/dev/null || true
    kills=$((kills + 1))
done
say "$kills SIGKILLs in ${KILL_SECONDS} s; a last clean run to catch up"
"${NPX[@]}" record --duration 4s "${HOSTS[@]}" 2>>"$TMP/record.log" ||
    fail "record: $(tail "$TMP/record.log")"

"${NPX[@]}" check >"$TMP/check.txt" || fail "check failed: $(cat "$TMP/check.txt")"
cat "$TMP/check.txt"
grep -q '^integrity ok$' "$TMP/check.txt" || fail "integrity"
checked=0
for h in a1 a2 a3; do
    line=$(grep "^host $h " "$TMP/check.txt") || fail "$h not stored"
    [[ $(grep -c "^host $h " "$TMP/check.txt") == 1 ]] || fail "$h: more than one instance"
    read -r _ _ _ _ _ range _ stored _ gone _ dup _ holes <<<"$line"
    last=${range#*..}
    first=${range%..*}
    [[ $first == 1 && $stored == "$last" && $gone == 0 && $dup == 0 && $holes == none ]] ||
        fail "$h: $line"
    # 10 Hz for the whole run: at least 7 records a second.
    ((stored >= KILL_SECONDS * 7)) || fail "$h: only $stored records"
    checked=$((checked + stored))
done
gaps=$(sqlite3 "$DB" 'SELECT count(*) FROM gaps')
[[ $gaps == 0 ]] || fail "$gaps gaps: $(sqlite3 "$DB" 'SELECT * FROM gaps')"
"${NPX[@]}" report --json >"$TMP/report.json"
grep -Eq '"gaps": *\[\]' "$TMP/report.json" || fail "report lists gaps"
! grep -q 'rejected' "$TMP/record.log" || fail "records rejected: $(grep rejected "$TMP/record.log" | head)"
samples=$(sqlite3 "$DB" 'SELECT (SELECT count(*) FROM samples) + (SELECT coalesce(sum(n), 0) FROM sample_chunks)')
took=$((SECONDS - start))
say "FIGURES collector_kill: agents=3 interval_ms=100 sigkills=$kills seconds=$KILL_SECONDS records_checked=$checked samples=$samples gaps=0 duplicates=0 lost=0 took_s=$took"
echo "$T: 1 passed, 0 failed"
