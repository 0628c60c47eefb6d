#!/usr/bin/env bash
# Alerts (issue 27): Prometheus Alertmanager (Debian's prometheus-alertmanager, run here on
# loopback with a config of its own) and the ntfy publish format. One agent on loopback,
# `nasprobe record --alert host_lost.for=3s --notify alertmanager=URL --notify ntfy=URL`:
#  - the agent SIGKILLed → GET /api/v2/alerts has nasprobe_host_lost, active, with the labels
#    rule, host and source, its summary annotation, its startsAt;
#  - the agent restarted → resolved there (endsAt reached: no longer active);
#  - the ntfy topic (no ntfy server is packaged here: a real HTTP receiver on loopback,
#    tests/e2e/lib/alert_receiver.py) got the summary as its body with Title, Priority and
#    Tags headers, once firing and once resolved.
#
#   tests/e2e/alerts_alertmanager.sh
#   NASPROBE_BIN_DIR=DIR         use nasprobe and nasprobe-agent from DIR, no build
#   NASPROBE_KEEP=1              keep the temp folder
set -euo pipefail
E2E_NAME=alerts_alertmanager
T=$E2E_NAME
# shellcheck source=tests/e2e/lib/base.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib/base.sh"
command -v prometheus-alertmanager >/dev/null ||
    e2e_skip $T "prometheus-alertmanager missing (scripts/setup installs it)"
fail() {
    echo "$T: FAIL: $*" >&2
    for f in record.log am.log ntfy.jsonl am.json; do
        [[ -f ${TMP:-/nonexistent}/$f ]] && { echo "--- $f" >&2; tail -20 "$TMP/$f" >&2; }
    done
    exit 1
}
for c in python3 jq curl; do command -v $c >/dev/null || fail "$c missing (scripts/setup installs it)"; done
e2e_build release nasprobe nasprobe-agent
e2e_bins nasprobe nasprobe-agent
NP="$BIN/nasprobe"
AGENT="$BIN/nasprobe-agent"
TMP="$(mktemp -d /tmp/nasprobe-alerts-am.XXXXXX)"
PIDS=()
cleanup() {
    for p in "${PIDS[@]}"; do kill -9 "$p" 2>/dev/null || true; done
    wait 2>/dev/null || true
    if [[ -n ${NASPROBE_KEEP:-} ]]; then say "kept $TMP"; else rm -rf "$TMP"; fi
}
trap cleanup EXIT
TOK="$TMP/token"
DB="$TMP/nasprobe.db"
PORT=$((20000 + RANDOM % 20000))
AMPORT=$((PORT + 1))
NPORT=$((PORT + 2))
start=$SECONDS
cat >"$TMP/am.yml" <<YML
route:
  receiver: none
  group_wait: 1s
receivers:
  - name: none
YML
prometheus-alertmanager --config.file="$TMP/am.yml" --storage.path="$TMP/am" \
    --web.listen-address="127.0.0.1:$AMPORT" --cluster.listen-address="" >"$TMP/am.log" 2>&1 &
PIDS+=($!)
AM="http://127.0.0.1:$AMPORT"
for _ in $(seq 100); do curl -sf "$AM/-/ready" >/dev/null && break; sleep 0.2; done
curl -sf "$AM/-/ready" >/dev/null || fail "alertmanager not ready"
python3 "$REPO/tests/e2e/lib/alert_receiver.py" "$NPORT" "$TMP/ntfy.jsonl" &
PIDS+=($!)
e2e_agent "$TMP/agent.log" --interval 200 --name nas
"$NP" --db "$DB" --token-file "$TOK" --hosts-file "$TMP/hosts" record \
    --alert host_lost.for=3s --no-alert stall --no-alert death \
    --notify "alertmanager=$AM" --notify "ntfy=http://127.0.0.1:$NPORT/nasprobe" \
    nas=127.0.0.1:$PORT 2>"$TMP/record.log" &
REC=$!
PIDS+=($REC)
sleep 3
say "SIGKILL the agent"
kill -KILL "$AGENT_PID"
wait "$AGENT_PID" 2>/dev/null || true
am_alert() { curl -sf "$AM/api/v2/alerts?active=true" | jq -c '[.[] | select(.labels.alertname == "nasprobe_host_lost")]'; }
until_t=$((SECONDS + 20))
while ((SECONDS < until_t)); do
    [[ $(am_alert | jq length) == 1 ]] && break
    sleep 0.5
done
am_alert >"$TMP/am.json"
jq -e '.[0] | .labels.rule == "host_lost" and .labels.host == "nas" and .labels.source == "nasprobe"
    and .status.state == "active" and (.annotations.summary | test("no record from its agent"))
    and (.startsAt | length > 0)' "$TMP/am.json" >/dev/null || fail "in alertmanager: $(cat "$TMP/am.json")"
say "in alertmanager: $(jq -c '.[0].labels' "$TMP/am.json")"
say "restart the agent"
e2e_agent "$TMP/agent2.log" --interval 200 --name nas
until_t=$((SECONDS + 30))
while ((SECONDS < until_t)); do
    [[ $(am_alert | jq length) == 0 ]] && break
    sleep 0.5
done
[[ $(am_alert | jq length) == 0 ]] || fail "still active in alertmanager: $(am_alert)"
all=$(curl -sf "$AM/api/v2/alerts?active=false&silenced=false&inhibited=false&unprocessed=false" | jq -c '[.[] | select(.labels.alertname == "nasprobe_host_lost")]')
say "resolved in alertmanager (endsAt reached; listed as not active: $all)"
until_t=$((SECONDS + 15))
while ((SECONDS < until_t)); do
    [[ -f $TMP/ntfy.jsonl && $(wc -l <"$TMP/ntfy.jsonl") -ge 2 ]] && break
    sleep 0.5
done
[[ -f $TMP/ntfy.jsonl && $(wc -l <"$TMP/ntfy.jsonl") == 2 ]] || fail "ntfy: want 2 posts"
# (HTTP header names are case-insensitive: ureq sends them in lower case.)
jq -e -s 'map(.headers |= with_entries(.key |= ascii_downcase)) |
    .[0].headers.title == "nasprobe: host_lost on nas" and .[0].headers.priority == "high"
    and (.[0].headers.tags | test("warning")) and (.[0].raw | test("no record from its agent"))
    and .[1].headers.title == "nasprobe: host_lost on nas resolved" and (.[1].headers.tags | test("white_check_mark"))' \
    "$TMP/ntfy.jsonl" >/dev/null || fail "ntfy posts: $(cat "$TMP/ntfy.jsonl")"
kill -INT $REC
wait $REC || fail "record exited non-zero"
say "FIGURES alerts_alertmanager: alertmanager_firing=1 resolved=1 ntfy_posts=2 took_s=$((SECONDS - start))"
echo "$T: 1 passed, 0 failed"
