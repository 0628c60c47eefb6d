#!/usr/bin/env bash
# Alerts (issue 27): host_lost, delivery to a webhook that is down then answers 500 then works,
# and `record` killed with SIGKILL and restarted. One agent on loopback; `nasprobe record
# --alert host_lost.for=5s --notify webhook=https://localhost:PORT/hook --ca-file CA` with a
# real HTTPS receiver (tests/e2e/lib/alert_receiver.py, a certificate of a CA made by openssl:
# tests/e2e/lib/tls.sh):
#  - the agent SIGKILLed → one host_lost firing within its 5 s (+ a few), while the receiver is
#    down (kept as undelivered: `nasprobe alerts` lists it);
#  - record SIGKILLed and restarted while the agent is still down → no second firing;
#  - the agent restarted → one resolved, saying what the ring backfilled;
#  - the receiver up (its first answer a 500) → both delivered, each exactly once.
#
#   tests/e2e/alerts_host_lost.sh
#   NASPROBE_BIN_DIR=DIR         use nasprobe and nasprobe-agent from DIR, no build
#   NASPROBE_KEEP=1              keep the temp folder
set -euo pipefail
E2E_NAME=alerts_host_lost
T=$E2E_NAME
# shellcheck source=tests/e2e/lib/base.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib/base.sh"
# shellcheck source=tests/e2e/lib/tls.sh
source "$REPO/tests/e2e/lib/tls.sh"
fail() {
    echo "$T: FAIL: $*" >&2
    for f in record.log record2.log hook.jsonl hook.jsonl.attempts alerts.txt; do
        [[ -f ${TMP:-/nonexistent}/$f ]] && { echo "--- $f" >&2; tail -20 "$TMP/$f" >&2; }
    done
    exit 1
}
for c in sqlite3 python3 jq; do command -v $c >/dev/null || fail "$c missing (scripts/setup installs it)"; done
e2e_build release nasprobe nasprobe-agent
e2e_bins nasprobe nasprobe-agent
NP="$BIN/nasprobe"
AGENT="$BIN/nasprobe-agent"
TMP="$(mktemp -d /tmp/nasprobe-alerts.XXXXXX)"
PIDS=()
cleanup() {
    for p in "${PIDS[@]}"; do kill -9 "$p" 2>/dev/null || true; done
    wait 2>/dev/null || true
    if [[ -n ${NASPROBE_KEEP:-} ]]; then say "kept $TMP"; else rm -rf "$TMP"; fi
}
trap cleanup EXIT
tls_make "$TMP/tls"
TOK="$TMP/token"
DB="$TMP/nasprobe.db"
PORT=$((20000 + RANDOM % 20000))
HPORT=$((PORT + 1))
HOOK="$TMP/hook.jsonl"
start=$SECONDS
REC=""
start_record() { # LOG
    "$NP" --db "$DB" --token-file "$TOK" --hosts-file "$TMP/hosts" --ca-file "$TMP/tls/ca.pem" \
        record --alert host_lost.for=5s --no-alert stall --no-alert death \
        --notify "webhook=https://localhost:$HPORT/hook" nas=127.0.0.1:$PORT 2>"$TMP/$1" &
    REC=$!
    PIDS+=($REC)
}
alerts_json() { "$NP" --db "$DB" alerts --json 2>/dev/null || echo '{}'; }
wait_for() { # SECONDS JQ-CONDITION WHAT
    local until=$((SECONDS + $1))
    while ((SECONDS < until)); do
        [[ $(alerts_json | jq -r "$2" 2>/dev/null) == true ]] && return 0
        sleep 0.5
    done
    alerts_json >"$TMP/alerts.txt"
    fail "$3 not within $1 s"
}

# The file next to the host list is read too: it sets the repeat interval.
echo "alert repeat=1h" >"$TMP/alerts.conf"
"$NP" --hosts-file "$TMP/hosts" alerts --list --alert host_lost.for=5s >"$TMP/list.txt"
grep -q "host_lost.for = 5s (default 2m)" "$TMP/list.txt" || fail "alerts --list: $(cat "$TMP/list.txt")"
grep -q "config file: $TMP/alerts.conf (read)" "$TMP/list.txt" || fail "alerts --list: no config file"

e2e_agent "$TMP/agent.log" --interval 200 --name nas
start_record record.log
for _ in $(seq 100); do
    [[ $(sqlite3 "$DB" "SELECT COALESCE(MAX(last_seq),0) FROM instances" 2>/dev/null || echo 0) -ge 20 ]] && break
    sleep 0.1
done
say "SIGKILL the agent; the receiver is down"
kill -KILL "$AGENT_PID"
wait "$AGENT_PID" 2>/dev/null || true
killed_at=$SECONDS
wait_for 15 '[.alerts[] | select(.rule == "host_lost" and .state == "firing")] | length == 1' "host_lost firing"
fired_s=$((SECONDS - killed_at))
"$NP" --db "$DB" alerts >"$TMP/alerts.txt"
grep -q "^firing   host_lost" "$TMP/alerts.txt" || fail "alerts: $(cat "$TMP/alerts.txt")"
grep -q "not delivered (1)" "$TMP/alerts.txt" || fail "the undelivered one is not listed: $(cat "$TMP/alerts.txt")"

say "SIGKILL record, restart it (the agent still down)"
kill -KILL "$REC"
wait "$REC" 2>/dev/null || true
start_record record2.log
sleep 9 # past host_lost.for on the new run
[[ $(sqlite3 "$DB" "SELECT count(*) FROM alerts") == 1 ]] || fail "a second alert: $(sqlite3 "$DB" 'SELECT * FROM alerts')"
[[ $(sqlite3 "$DB" "SELECT count(*) FROM alert_outbox") == 1 ]] || fail "queued again after the restart"

say "restart the agent"
e2e_agent "$TMP/agent.log" --interval 200 --name nas
wait_for 20 '[.alerts[] | select(.rule == "host_lost" and .state == "resolved")] | length == 1' "host_lost resolved"
resolved=$(alerts_json | jq -r '.alerts[0].summary')
[[ $resolved == *"backfilled"* ]] || fail "resolved summary: $resolved"

say "the receiver up, over https (its first answer: 500)"
python3 "$REPO/tests/e2e/lib/alert_receiver.py" "$HPORT" "$HOOK" 1 "$TMP/tls/server.pem" \
    "$TMP/tls/server.key" &
PIDS+=($!)
until_t=$((SECONDS + 100))
while ((SECONDS < until_t)); do
    [[ -f $HOOK && $(wc -l <"$HOOK") -ge 2 ]] && break
    sleep 1
done
sleep 4 # a duplicate would come now
[[ -f $HOOK && $(wc -l <"$HOOK") == 2 ]] || fail "want 2 deliveries, got $(wc -l <"$HOOK")"
[[ $(jq -r '.rule + " " + .state' "$HOOK" | paste -sd,) == "host_lost firing,host_lost resolved" ]] ||
    fail "deliveries: $(cat "$HOOK")"
jq -e -s 'map(select(.state == "resolved")) | length == 1 and (.[0] | .schema == 1 and .host == "nas" and .count == 1 and (.ended_at | length > 0) and (.report | startswith("nasprobe --db")))' "$HOOK" >/dev/null ||
    fail "webhook fields: $(cat "$HOOK")"
attempts=$(wc -l <"$HOOK.attempts")
((attempts >= 3)) || fail "the 500 was not retried ($attempts attempts)"
[[ $(alerts_json | jq '.undelivered | length') == 0 ]] || fail "still undelivered"
kill -INT "$REC"
wait "$REC" || fail "record exited non-zero"
"$NP" --db "$DB" check >/dev/null || fail "check"

say "watch shows a firing alert in its banner (the agent stopped again)"
kill -KILL "$AGENT_PID"
wait "$AGENT_PID" 2>/dev/null || true
# The host never delivers during this run: watch exits 1 naming it (as record does).
rc=0
"$NP" --db "$DB" --token-file "$TOK" --hosts-file "$TMP/hosts" watch --plain --duration 12s \
    --alert host_lost.for=3s nas=127.0.0.1:$PORT >"$TMP/watch.out" 2>"$TMP/watch.err" || rc=$?
[[ $rc == 1 ]] || fail "watch against a stopped agent: exit $rc, want 1: $(tail -3 "$TMP/watch.err")"
grep -q "^nasprobe: nas: never reached in " "$TMP/watch.err" ||
    fail "watch: no line naming the host never reached: $(tail -3 "$TMP/watch.err")"
grep -q "^alert firing: nas: no record from its agent" "$TMP/watch.out" ||
    fail "watch: no firing alert shown: $(grep -v '^nas ' "$TMP/watch.out" | tail -5)"
say "FIGURES alerts_host_lost: fired_after_s=$fired_s (host_lost.for=5s) alerts=1 deliveries=2 receiver_attempts=$attempts took_s=$((SECONDS - start))"
echo "$T: 1 passed, 0 failed"
