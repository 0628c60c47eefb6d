#!/usr/bin/env bash
# Alerts (issue 27): the shipped Prometheus rules (docs/alerts/nasprobe.rules.yml).
#  1. `promtool check rules` on it and `promtool test rules` on nasprobe.rules.test.yml (every
#     rule, with its default thresholds, over series as nasprobe exports them);
#  2. a real Prometheus (Debian's, on a loopback port, temp storage, scrape and evaluation every
#     second) scrapes `nasprobe serve --metrics` recording one real agent, with the rules file
#     loaded (NasprobeHostLost's 120 s made 6 s, the only change): all rules healthy, none
#     firing while the agent samples; the agent SIGKILLed → NasprobeHostLost firing for host
#     "nas" in Prometheus's /api/v1/alerts.
#
#   tests/e2e/alerts_prometheus.sh
#   NASPROBE_BIN_DIR=DIR         use nasprobe and nasprobe-agent from DIR, no build
#   NASPROBE_KEEP=1              keep the temp folder
set -euo pipefail
E2E_NAME=alerts_prometheus
# shellcheck source=tests/e2e/lib/base.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib/base.sh"
for c in python3 curl jq; do command -v $c >/dev/null || fail "$c missing (scripts/setup installs it)"; done
for c in prometheus promtool; do
    command -v $c >/dev/null || e2e_skip "$E2E_NAME" "$c missing (scripts/setup installs Debian's prometheus)"
done
RULES="$REPO/docs/alerts/nasprobe.rules.yml"

say "promtool check rules, promtool test rules"
promtool check rules "$RULES" >/dev/null || fail "promtool check rules: $(promtool check rules "$RULES" 2>&1)"
(cd "$REPO/docs/alerts" && promtool test rules nasprobe.rules.test.yml) >/dev/null 2>&1 ||
    fail "promtool test rules: $(cd "$REPO/docs/alerts" && promtool test rules nasprobe.rules.test.yml 2>&1)"

# shellcheck source=tests/e2e/lib/alerts.sh
source "$REPO/tests/e2e/lib/alerts.sh"
dump() { for f in "$TMP"/*.log; do echo "--- $f"; tail -5 "$f"; done >&2; }
PA=$(free_port)
MPORT=$(free_port)
PPORT=$(free_port)
PURL="http://127.0.0.1:$PPORT"

alerts_agent "$PA"
"$NP" --db "$TMP/nasprobe.db" --token-file "$TOK" --hosts-file "$TMP/hosts" serve \
    --metrics "127.0.0.1:$MPORT" --duration 120s "nas=127.0.0.1:$PA" 2>"$TMP/serve.log" &
PIDS+=($!)
wait_http "http://127.0.0.1:$MPORT/metrics" 30 || { dump; fail "serve did not answer"; }

# The shipped file, NasprobeHostLost's threshold made 6 s (a test may not wait 2 min).
python3 - "$RULES" "$TMP/rules.yml" <<'PY' || fail "could not adapt the rules file"
import sys
text = open(sys.argv[1]).read()
old = "expr: time() - nasprobe_last_sample_timestamp_seconds > 120\n"
assert text.count(old) == 1, "NasprobeHostLost's expression changed: adapt this test"
open(sys.argv[2], "w").write(text.replace(old, old.replace("> 120", "> 6")))
PY
cat >"$TMP/prometheus.yml" <<EOF
global:
  scrape_interval: 1s
  scrape_timeout: 1s
  evaluation_interval: 1s
rule_files: ["$TMP/rules.yml"]
scrape_configs:
  - job_name: nasprobe
    static_configs:
      - targets: ["127.0.0.1:$MPORT"]
EOF
prometheus --config.file "$TMP/prometheus.yml" --storage.tsdb.path "$TMP/prom" \
    --web.listen-address "127.0.0.1:$PPORT" >"$TMP/prometheus.log" 2>&1 &
PIDS+=($!)
wait_http "$PURL/-/ready" 60 || { dump; fail "Prometheus not ready"; }

alerts() { curl -fsS --max-time 5 "$PURL/api/v1/alerts" || echo '{}'; }
# wait_for SECONDS JQ-CONDITION (over /api/v1/alerts) WHAT
wait_for() {
    local until=$((SECONDS + $1))
    while ((SECONDS < until)); do
        [[ $(alerts | jq -r "$2" 2>/dev/null) == true ]] && return 0
        sleep 0.5
    done
    alerts >"$TMP/alerts.json"
    dump
    fail "$3 not within $1 s: $(cat "$TMP/alerts.json")"
}
# Prometheus has the host's samples and has evaluated every rule since.
n=0
until_t=$((SECONDS + 30))
while ((SECONDS < until_t)); do
    n=$(curl -fsS "$PURL/api/v1/query" --data-urlencode 'query=count_over_time(nasprobe_last_sample_timestamp_seconds{host="nas"}[1m])' |
        jq -r '.data.result[0].value[1] // 0')
    ((n >= 3)) && break
    sleep 0.5
done
((n >= 3)) || { dump; fail "Prometheus scraped no sample of nas"; }
sleep 2
curl -fsS "$PURL/api/v1/rules" >"$TMP/rules.json"
jq -e '[.data.groups[].rules[]] | length == 7 and all(.health == "ok")' "$TMP/rules.json" >/dev/null ||
    fail "rules not all loaded and healthy: $(jq -c '[.data.groups[].rules[] | {name, health, lastError}]' "$TMP/rules.json")"
[[ $(alerts | jq '[.data.alerts[] | select(.state == "firing")] | length') == 0 ]] ||
    fail "an alert fires while the agent samples: $(alerts)"

say "SIGKILL the agent"
kill -KILL "$AGENT_PID"
killed_at=$SECONDS
wait_for 30 '[.data.alerts[] | select(.labels.alertname == "NasprobeHostLost" and .labels.host == "nas" and .labels.rule == "host_lost" and .state == "firing")] | length == 1' \
    "NasprobeHostLost firing"
fired_s=$((SECONDS - killed_at))
summary=$(alerts | jq -r '.data.alerts[] | select(.labels.alertname == "NasprobeHostLost") | .annotations.summary')
[[ $summary == "nas: no sample from its agent for "* ]] || fail "summary: $summary"
[[ $(alerts | jq '[.data.alerts[] | select(.state == "firing")] | length') == 1 ]] ||
    fail "more than host_lost fires: $(alerts)"
say "FIGURES alerts_prometheus: fired_after_s=$fired_s (threshold 6 s, scrape and evaluation 1 s) took_s=$((SECONDS - START))"
say "PASS: $summary"
