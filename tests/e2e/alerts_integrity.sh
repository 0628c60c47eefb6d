#!/usr/bin/env bash
# Alerts (issue 27): integrity. A man-in-the-middle relay on loopback
# (tests/e2e/lib/mitm_relay.py) between a real agent and `nasprobe record --alert
# integrity.quiet=6s --notify webhook=...` flips one bit in a Record of its first connection,
# then passes everything through:
#  - the collector refuses the frame (a wrong MAC) and reconnects; one `integrity` alert fires
#    at the real HTTP receiver (tests/e2e/lib/alert_receiver.py) naming the host and the wrong
#    MAC, and is resolved once, after the quiet;
#  - after the run, `report` (text and --json) shows the stored refusal and the alert.
#
#   tests/e2e/alerts_integrity.sh
#   NASPROBE_BIN_DIR=DIR         use nasprobe and nasprobe-agent from DIR, no build
#   NASPROBE_KEEP=1              keep the temp folder
set -euo pipefail
E2E_NAME=alerts_integrity
T=$E2E_NAME
# shellcheck source=tests/e2e/lib/base.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib/base.sh"
fail() {
    echo "$T: FAIL: $*" >&2
    for f in record.log relay.log hook.jsonl report.txt; do
        [[ -f ${TMP:-/nonexistent}/$f ]] && { echo "--- $f" >&2; tail -20 "$TMP/$f" >&2; }
    done
    exit 1
}
for c in python3 jq; do command -v $c >/dev/null || fail "$c missing (scripts/setup installs it)"; done
# shellcheck source=tests/e2e/lib/alerts.sh
source "$REPO/tests/e2e/lib/alerts.sh"
PA=$(free_port)
PR=$(free_port)
HPORT=$(free_port)
DB="$TMP/nasprobe.db"
HOOK="$TMP/hook.jsonl"

alerts_agent "$PA"
python3 "$REPO/tests/e2e/lib/mitm_relay.py" "$PR" "$PA" "$TMP/relay.log" flip &
PIDS+=($!)
python3 "$REPO/tests/e2e/lib/alert_receiver.py" "$HPORT" "$HOOK" &
PIDS+=($!)
for _ in $(seq 50); do grep -q listening "$TMP/relay.log" 2>/dev/null && break; sleep 0.1; done

say "recording 20 s through a relay that flips one bit"
"$NP" --db "$DB" --token-file "$TOK" --hosts-file "$TMP/hosts" record --duration 20s \
    --alert integrity.quiet=6s --no-alert stall --no-alert death \
    --notify "webhook=http://127.0.0.1:$HPORT/hook" "nas=127.0.0.1:$PR" 2>"$TMP/record.log" ||
    fail "record exited non-zero"
grep -q "^flip at sealed frame" "$TMP/relay.log" || fail "the relay never flipped a bit"
grep -q "nas: authentication failed: frame .* has a wrong MAC" "$TMP/record.log" ||
    fail "the collector did not detect the flipped bit"

say "checks"
[[ -f $HOOK ]] || fail "nothing delivered"
[[ $(jq -r '.rule + " " + .state' "$HOOK" | paste -sd,) == "integrity firing,integrity resolved" ]] ||
    fail "deliveries: $(cat "$HOOK")"
jq -e -s '.[0] | .schema == 1 and .host == "nas" and .key == "nas" and .count == 1
    and (.summary | contains("1 connection(s) with a wrong MAC"))
    and (.evidence | any(contains("failed authentication")))' "$HOOK" >/dev/null ||
    fail "the firing alert's fields: $(head -1 "$HOOK")"
jq -e -s '.[1] | (.ended_at | length > 0) and (.summary | contains("no refusal for 6 s"))' "$HOOK" \
    >/dev/null || fail "the resolved alert's fields: $(tail -1 "$HOOK")"

"$NP" --db "$DB" report >"$TMP/report.txt" 2>"$TMP/report.err" || fail "report: $(cat "$TMP/report.err")"
grep -A3 "^Refused by the collector" "$TMP/report.txt" | grep -q "nas .*failed authentication" ||
    fail "report shows no stored refusal"
grep -q "resolved integrity .*count 1  nas: no refusal" "$TMP/report.txt" ||
    fail "report lists no integrity alert"
"$NP" --db "$DB" report --json >"$TMP/report.json" 2>"$TMP/report.err" || fail "report --json"
jq -e '([.refusals[] | select(.host == "nas" and (.reason | contains("failed authentication")))] | length == 1)
    and ([.alerts[] | select(.rule == "integrity" and .state == "resolved" and .host == "nas")] | length == 1)' \
    "$TMP/report.json" >/dev/null ||
    fail "report --json: refusals $(jq -c .refusals "$TMP/report.json") alerts $(jq -c .alerts "$TMP/report.json")"
fired_ms=$(jq -s -r '(.[0].started_at | fromdateiso8601) as $a | (.[1].ended_at | fromdateiso8601) - $a' "$HOOK")
say "FIGURES alerts_integrity: tamperings=1 alerts=1 deliveries=2 outage_s=$fired_ms (integrity.quiet=6s) took_s=$((SECONDS - START))"
echo "$T: 1 passed, 0 failed"
