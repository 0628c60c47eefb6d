#!/usr/bin/env bash
# Alerts bounded (issue 39, rows 1 and 12): a real agent (every exit an event:
# --event-min-lifetime 0) watches a machine where a new process name is SIGKILLed every few ms
# (np39_N, `sleep` under a name of its own, four loops at once), under `nasprobe record
# --watch-process np39` with a webhook receiver on loopback (tests/e2e/lib/alert_receiver.py):
#  - the deaths of many names become few alerts: at most DEATH_NAMES_MAX (3) of one name each
#    and one of the host that counts the rest ("N processes of M names died");
#  - the receiver gets at most the budget (20 notifications a minute) whatever the agent sends;
#  - a name carrying chat mention syntax (np39_@everyone) reaches the receiver inert.
# Needs root: the agent reads exit statuses from the kernel's process connector.
#
#   tests/e2e/alerts_flood.sh
#   NASPROBE_BIN_DIR=DIR         use nasprobe and nasprobe-agent from DIR, no build
#   NASPROBE_KEEP=1              keep the temp folder
set -euo pipefail
E2E_NAME=alerts_flood
T=$E2E_NAME
# shellcheck source=tests/e2e/lib/base.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib/base.sh"
[[ $(id -u) == 0 ]] || e2e_skip $T "needs root (the process connector needs CAP_NET_ADMIN)"
fail() {
    echo "$T: FAIL: $*" >&2
    for f in record.log hook.jsonl alerts.json; do
        [[ -f ${TMP:-/nonexistent}/$f ]] && { echo "--- $f" >&2; tail -20 "$TMP/$f" >&2; }
    done
    exit 1
}
for c in python3 jq sqlite3; do command -v $c >/dev/null || fail "$c missing (scripts/setup installs it)"; done
# shellcheck source=tests/e2e/lib/alerts.sh
source "$REPO/tests/e2e/lib/alerts.sh"
# The budget of collector/src/alerts/budget.rs and the names of rules.rs.
BUDGET=20
NAMES_MAX=3
PA=$(free_port)
HP=$(free_port)
DB="$TMP/nasprobe.db"
HOOK="$TMP/hook.jsonl"
start=$SECONDS
"$AGENT" --listen "127.0.0.1:$PA" --token-file "$TOK" --interval 200 --name nas \
    --event-min-lifetime 0 --log-file "$TMP/agent.log" &
PIDS+=($!)
for _ in $(seq 100); do
    [[ -s $TOK ]] && grep -q "listening on" "$TMP/agent.log" 2>/dev/null && break
    sleep 0.1
done
python3 "$REPO/tests/e2e/lib/alert_receiver.py" "$HP" "$HOOK" &
PIDS+=($!)
"$NP" --db "$DB" --token-file "$TOK" record --watch-process np39 --alert death.quiet=20s \
    --no-alert stall --no-alert host_lost --notify "webhook=http://127.0.0.1:$HP/hook" \
    nas=127.0.0.1:$PA 2>"$TMP/record.log" &
REC=$!
PIDS+=($REC)
sleep 2
SLEEP=$(command -v sleep)
ln -s "$SLEEP" "$TMP/np39_@everyone"
FLOOD_S=15
say "a new name SIGKILLed every few ms for ${FLOOD_S} s"
flood() { # LOOP
    local i=0 p
    while ((SECONDS < until_t)); do
        i=$((i + 1))
        ln -s "$SLEEP" "$TMP/np39_$1_$i"
        "$TMP/np39_$1_$i" 5 &
        p=$!
        sleep 0.02
        kill -KILL $p 2>/dev/null || true
        wait $p 2>/dev/null || true
    done
}
until_t=$((SECONDS + FLOOD_S))
"$TMP/np39_@everyone" 5 &
EV=$!
sleep 0.5
kill -KILL $EV
wait $EV 2>/dev/null || true
FLOODS=()
for l in 1 2 3 4; do
    flood $l &
    FLOODS+=($!)
    PIDS+=($!)
done
wait "${FLOODS[@]}"
sleep 5
names=$(find "$TMP" -maxdepth 1 -name 'np39_*' | wc -l)
alerts_json() { "$NP" --db "$DB" alerts --json 2>/dev/null || echo '{}'; }
alerts_json >"$TMP/alerts.json"
deaths=$(sqlite3 "$DB" "SELECT count(*) FROM events WHERE kind = 'process_exit' AND name LIKE 'np39%'")
((deaths >= 50)) || fail "the flood did not reach the store: $deaths deaths of np39 names ($names made)"
n_alerts=$(jq '[.alerts[] | select(.rule == "death" and (.key | startswith("nas/")))] | length' "$TMP/alerts.json")
((n_alerts <= NAMES_MAX + 1)) || fail "$n_alerts death alerts for $deaths deaths (want at most $((NAMES_MAX + 1)))"
folded=$(jq '[.alerts[] | select(.key == "nas/*")][0].count // 0' "$TMP/alerts.json")
((folded >= 25)) || fail "the folded alert counts $folded deaths"
jq -e '[.alerts[] | select(.key == "nas/*")][0].summary | test("^nas: [0-9]+ processes of [0-9]+ names died since")' \
    "$TMP/alerts.json" >/dev/null || fail "folded summary: $(jq -c '[.alerts[] | select(.key == "nas/*")]' "$TMP/alerts.json")"
[[ -f $HOOK ]] || fail "nothing delivered"
got=$(wc -l <"$HOOK")
minutes=$(((SECONDS - start) / 60 + 1))
((got >= 1 && got <= BUDGET * minutes)) || fail "the receiver got $got notifications in $minutes minute(s) (budget $BUDGET a minute)"
outbox=$(sqlite3 "$DB" "SELECT count(*) FROM alert_outbox")
((outbox <= BUDGET * minutes)) || fail "$outbox outbox rows"
if grep -q 'np39_@everyone' "$TMP/alerts.json"; then
    grep -q '@everyone' "$HOOK" && fail "a mention reached the receiver verbatim: $(grep -m1 everyone "$HOOK")"
fi
kill -INT $REC
wait $REC || fail "record exited non-zero"
say "FIGURES alerts_flood: names=$names deaths_stored=$deaths death_alerts=$n_alerts folded_count=$folded delivered=$got outbox=$outbox took_s=$((SECONDS - start))"
echo "$T: 1 passed, 0 failed"
