#!/usr/bin/env bash
# End-to-end test of `nasprobe serve --metrics` with a real Prometheus (issue 8):
#
#  1. `nasprobe-scenario` runs synology-replication with one real `nasprobe-agent` per host;
#     `nasprobe serve --metrics 127.0.0.1:PORT HOSTS...` records them and serves the newest rates;
#  2. the body passes `promtool check metrics` (exposition format, TYPE/HELP, naming lints);
#  3. a real Prometheus (scrape_interval 1s) scrapes it; after five scrapes its HTTP API gives
#     up == 1, TYPE gauge and the HELP text in its metadata, the hot thread of dst
#     (synoreplicad, 96% of a core in the scenario) and dst eth0 receiving ~97 MB/s (medians of
#     the last 6 s: one sample may span one or three of the scenario's 100 ms ticks);
#     and the verdict (cpu_thread on dst, synoreplicad);
#  4. the agents stop (the newest rates freeze): after two more scrapes Prometheus's values are
#     exactly the ones `/metrics` serves.
#
# Installs the Debian package prometheus if missing; starts it by hand on a loopback port with a
# temp data dir.
#
#   tests/e2e/export_prometheus.sh       build (debug) and run
#   NASPROBE_BIN_DIR=DIR ...             use nasprobe, nasprobe-agent, nasprobe-scenario from DIR
#   NASPROBE_KEEP=1 ...                  keep the temp folder
set -euo pipefail
E2E_NAME=export_prometheus
# shellcheck source=tests/e2e/lib/common.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib/common.sh"
for t in python3 curl; do command -v $t >/dev/null || fail "$t missing"; done

# shellcheck source=tests/e2e/export_lib.sh
source "$REPO/tests/e2e/export_lib.sh"
export_begin export-prom

export_start_scenario synology-replication
DB="$TMP/nasprobe.db"
MPORT=$(free_port)
MURL="http://127.0.0.1:$MPORT/metrics"
"$NP" --db "$DB" --token-file "$TOK" --hosts-file "$TMP/hosts" serve --metrics "127.0.0.1:$MPORT" \
    --duration 300s "${HOSTS[@]}" 2>"$TMP/serve.log" &
SERVE=$!
PIDS+=($SERVE)
wait_http "$MURL" 30 || fail "serve did not answer: $(cat "$TMP/serve.log")"
for _ in $(seq 1 50); do
    curl -fsS "$MURL" | grep -q '^nasprobe_thread_cpu_ratio{host="dst"' && break
    sleep 0.2
done
curl -fsS "$MURL" >"$TMP/metrics.txt"
grep -q '^nasprobe_thread_cpu_ratio{host="dst"' "$TMP/metrics.txt" ||
    fail "no dst thread in /metrics: $(head -30 "$TMP/metrics.txt")"
say "serving $(grep -vc '^#' "$TMP/metrics.txt") series on $MURL"

# --- the format ------------------------------------------------------------------------------
promtool check metrics <"$TMP/metrics.txt" >"$TMP/promtool.out" 2>&1 ||
    fail "promtool check metrics: $(cat "$TMP/promtool.out")"
say "promtool check metrics: ok"
ctype=$(curl -fsS -o /dev/null -w '%{content_type}' "$MURL")
[[ $ctype == "text/plain; version=0.0.4; charset=utf-8" ]] || fail "content type $ctype"
code=$(curl -s -o /dev/null -w '%{http_code}' "http://127.0.0.1:$MPORT/nope")
[[ $code == 404 ]] || fail "GET /nope: $code"
code=$(curl -s -o /dev/null -w '%{http_code}' -X POST "$MURL")
[[ $code == 405 ]] || fail "POST /metrics: $code"
code=$(curl -s -o /dev/null -w '%{http_code}' -H "X-Big: $(head -c 20000 /dev/zero | tr '\0' a)" "$MURL")
[[ $code == 431 ]] || fail "20 KB header: $code"

# --- Prometheus ------------------------------------------------------------------------------
PPORT=$(free_port)
PURL="http://127.0.0.1:$PPORT"
cat >"$TMP/prometheus.yml" <<EOF
global:
  scrape_interval: 1s
  scrape_timeout: 1s
scrape_configs:
  - job_name: nasprobe
    static_configs:
      - targets: ["127.0.0.1:$MPORT"]
EOF
prom_start "$TMP/prom" "$PPORT" "$TMP/prometheus.yml"

# query PROMQL: the JSON answer of /api/v1/query.
query() { curl -fsS --max-time 10 "$PURL/api/v1/query" --data-urlencode "query=$1"; }
# scalar PROMQL: the first value of an instant vector ("" when empty).
scalar() {
    query "$1" | python3 -c 'import json,sys; r=json.load(sys.stdin)["data"]["result"]; print(r[0]["value"][1] if r else "")'
}
scrapes() { scalar 'count_over_time(up{job="nasprobe"}[10m])'; }
# wait_scrapes N: until Prometheus has N more scrapes than now (at most 30 s).
wait_scrapes() {
    local base n t=0
    base=$(scrapes)
    base=${base:-0}
    while :; do
        n=$(scrapes)
        n=${n:-0}
        ((n >= base + $1)) && return 0
        t=$((t + 1))
        ((t > 60)) && fail "Prometheus scraped $n times, wanted $((base + $1)) ($(tail -3 "$TMP/prom.log"))"
        sleep 0.5
    done
}
wait_scrapes 2
[[ $(scalar 'up{job="nasprobe"}') == 1 ]] || fail "up != 1: $(query 'up')"
curl -fsS "$PURL/api/v1/metadata?metric=nasprobe_thread_cpu_ratio" >"$TMP/meta.json"
python3 - "$TMP/meta.json" <<'PY' || fail "metadata: $(cat "$TMP/meta.json")"
import json, sys
m = json.load(open(sys.argv[1]))["data"]["nasprobe_thread_cpu_ratio"][0]
assert m["type"] == "gauge", m
assert "hottest thread" in m["help"], m
PY
# The median of the last scrapes: the scenario writes its tree every 100 ms of real time and the
# agent samples every 200 ms, so one sample of a loaded machine can span one or three of the
# scenario's ticks (0.5x or 1.5x the rate); the median of five is the scenario's rate.
wait_scrapes 3
med() { scalar "quantile_over_time(0.5, $1[6s])"; }
th=$(med 'nasprobe_thread_cpu_ratio{host="dst",process="synoreplicad"}')
rx=$(med 'nasprobe_network_receive_bytes_per_second{host="dst",device="eth0"}')
python3 -c "import sys; th, rx = float('${th:-nan}'), float('${rx:-nan}'); sys.exit(0 if 0.85 <= th <= 1.05 and 85e6 <= rx <= 110e6 else 1)" ||
    fail "Prometheus: dst synoreplicad thread $th (scenario 0.96), eth0 rx $rx B/s (scenario 97e6), medians of the last 6 s"
say "Prometheus after five scrapes, medians: dst synoreplicad thread $th of a core, dst eth0 rx $rx B/s"
v=$(scalar 'nasprobe_verdict_utilization_ratio{resource="cpu_thread",host="dst",process="synoreplicad"}')
[[ -n $v ]] || fail "verdict: $(query 'nasprobe_verdict_utilization_ratio')"
say "verdict: cpu_thread on dst, synoreplicad, at $v of a core"

# --- frozen rates: Prometheus holds exactly what /metrics serves --------------------------------
for p in "${AGENT_PIDS[@]}"; do kill "$p" 2>/dev/null || true; done
sleep 1.5 # the last samples reach the store
wait_scrapes 2
curl -fsS "$MURL" >"$TMP/metrics_frozen.txt"
curl -fsS "$PURL/api/v1/query" --data-urlencode 'query={job="nasprobe",__name__=~"nasprobe_.+"}' \
    >"$TMP/prom_frozen.json"
out=$(python3 - "$TMP/metrics_frozen.txt" "$TMP/prom_frozen.json" <<'PY'
import json, re, sys

served = {}
for line in open(sys.argv[1]):
    if line.startswith("#") or not line.strip():
        continue
    m = re.match(r'^([a-zA-Z_:][a-zA-Z0-9_:]*)(\{(.*)\})? (\S+)$', line.strip())
    name, labels, value = m.group(1), m.group(3) or "", float(m.group(4))
    lab = dict(re.findall(r'([a-zA-Z_][a-zA-Z0-9_]*)="((?:[^"\\]|\\.)*)"', labels))
    served[(name, tuple(sorted(lab.items())))] = value
prom = {}
for r in json.load(open(sys.argv[2]))["data"]["result"]:
    lab = dict(r["metric"])
    name = lab.pop("__name__")
    lab.pop("job")
    lab.pop("instance")
    prom[(name, tuple(sorted(lab.items())))] = float(r["value"][1])
errors = []
if set(served) != set(prom):
    errors.append(f"series only served: {sorted(set(served) - set(prom))[:5]}, "
                  f"only in Prometheus: {sorted(set(prom) - set(served))[:5]}")
for k in set(served) & set(prom):
    if served[k] != prom[k]:
        errors.append(f"{k}: served {served[k]}, Prometheus {prom[k]}")
if errors:
    print("; ".join(errors[:8]))
    sys.exit(1)
print(f"{len(served)} series, every value equal")
PY
) || fail "frozen: $out"
say "frozen rates: $out"
kill "$SERVE" 2>/dev/null || true
say "PASS in $((SECONDS - START))s"
