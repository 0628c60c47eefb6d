#!/usr/bin/env bash
# Reliability (issue 10): agent restarts under a running collector. One `nasprobe record` runs
# throughout while its agent is stopped with SIGTERM and restarted, then killed with SIGKILL
# (stale pidfile left behind) and restarted on the same port. The collector must reconnect by
# itself each time, record a new instance per start (3 in all) with an honest "agent restarted"
# gap for each restart, and `check` must find every stored instance complete.
#
#   tests/e2e/reliability_agent_restart.sh
#   NASPROBE_BIN_DIR=DIR         use nasprobe and nasprobe-agent from DIR, no build
#   NASPROBE_KEEP=1              keep the temp folder
set -euo pipefail
E2E_NAME=reliability_agent_restart
T=$E2E_NAME
# shellcheck source=tests/e2e/lib/base.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib/base.sh"
fail() {
    echo "$E2E_NAME: FAIL: $*" >&2
    [[ -f ${TMP:-/nonexistent}/record.log ]] && tail -20 "$TMP/record.log" >&2
    exit 1
}
command -v sqlite3 >/dev/null || fail "sqlite3 missing (apt-get install sqlite3)"
e2e_build release nasprobe nasprobe-agent
e2e_bins nasprobe nasprobe-agent
NP="$BIN/nasprobe"
AGENT="$BIN/nasprobe-agent"
TMP="$(mktemp -d /tmp/nasprobe-restart.XXXXXX)"
PIDS=()
cleanup() {
    for p in "${PIDS[@]}"; do kill -9 "$p" 2>/dev/null || true; done
    wait 2>/dev/null || true
    if [[ -n ${NASPROBE_KEEP:-} ]]; then say "kept $TMP"; else rm -rf "$TMP"; fi
}
trap cleanup EXIT
TOK="$TMP/token"
DB="$TMP/nasprobe.db"
PORT=$((20000 + RANDOM % 30000))
start=$SECONDS
# The agent, started again on the same port, log and pidfile after each stop.
start_agent() { e2e_agent "$TMP/agent.log" --interval 100 --name nas --pidfile "$TMP/agent.pid"; }
instances() { sqlite3 "$DB" "SELECT count(*) FROM instances" 2>/dev/null || echo 0; }
wait_instances() { # N: until the store has N instances and the newest has records
    for _ in $(seq 150); do
        if [[ $(instances) -ge $1 ]] &&
            [[ $(sqlite3 "$DB" "SELECT last_seq FROM instances ORDER BY id DESC LIMIT 1") -ge 20 ]]; then
            return 0
        fi
        sleep 0.1
    done
    fail "the collector did not record instance $1 by itself"
}

start_agent
"$NP" --db "$DB" --token-file "$TOK" record nas=127.0.0.1:$PORT 2>"$TMP/record.log" &
REC=$!
PIDS+=($REC)
wait_instances 1

say "SIGTERM the agent, restart it 1 s later"
kill -TERM "$AGENT_PID"
wait "$AGENT_PID" || fail "agent exited non-zero on SIGTERM"
[[ ! -e $TMP/agent.pid ]] || fail "pidfile left after SIGTERM"
sleep 1
start_agent
wait_instances 2

say "SIGKILL the agent (stale pidfile stays), restart it 1 s later"
kill -KILL "$AGENT_PID"
wait "$AGENT_PID" 2>/dev/null || true
[[ -e $TMP/agent.pid ]] || fail "no stale pidfile after SIGKILL?"
sleep 1
start_agent
wait_instances 3
sleep 2
kill -0 $REC || fail "the collector died"
kill -INT $REC
wait $REC || fail "record exited non-zero"

"$NP" --db "$DB" check >"$TMP/check.txt" || fail "check: $(cat "$TMP/check.txt")"
cat "$TMP/check.txt"
[[ $(grep -c '^host nas ' "$TMP/check.txt") == 3 ]] || fail "want 3 instances"
records=0
while read -r _ _ _ _ _ range _ stored _ gone _ dup _ holes; do
    [[ ${range%..*} == 1 && $stored == "${range#*..}" && $dup == 0 && $holes == none ]] ||
        fail "instance incomplete: $range stored $stored"
    records=$((records + stored))
done < <(grep '^host nas ' "$TMP/check.txt")
restarts=$(sqlite3 "$DB" "SELECT count(*) FROM gaps WHERE reason = 'agent restarted'")
others=$(sqlite3 "$DB" "SELECT count(*) FROM gaps WHERE reason != 'agent restarted'")
[[ $restarts == 2 && $others == 0 ]] || fail "gaps: $(sqlite3 "$DB" 'SELECT * FROM gaps')"
"$NP" --db "$DB" report --json >"$TMP/report.json"
[[ $(grep -c '"reason": "agent restarted"' "$TMP/report.json") == 2 ]] || fail "report gaps"
"$NP" --db "$DB" events --json >"$TMP/events.json"
[[ $(grep -c '"kind": "agent_start"' "$TMP/events.json") -ge 3 ]] || fail "3 agent_start events"
reconnects=$(grep -c "retrying in" "$TMP/record.log" || true)
say "FIGURES agent_restart: restarts=2 (SIGTERM, SIGKILL) instances=3 records_checked=$records restart_gaps=2 other_gaps=0 lost=0 (beyond the downtime, recorded as gaps) collector_retries=$reconnects took_s=$((SECONDS - start))"
echo "$T: 1 passed, 0 failed"
