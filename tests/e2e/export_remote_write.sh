#!/usr/bin/env bash
# End-to-end test of Prometheus remote write (issue 30) against Debian's Prometheus (its remote
# write receiver) and VictoriaMetrics' /api/v1/write:
#
#  a. `nasprobe-scenario` runs synology-replication with one real `nasprobe-agent` per host;
#     `nasprobe record --remote-write PROMETHEUS` stores and pushes; then
#     `nasprobe export --remote-write VICTORIAMETRICS` sends the same store. The same PromQL
#     (raw points of the interval, dst's eth0 rate and dst's threads over the last hour) gives
#     the same points on both, and they are, point for point, what `nasprobe export --format
#     json` computes from the store; every series has the collector label.
#  b. Recording goes on with --remote-write; Prometheus is killed (SIGKILL) for 8 s, then
#     started again on the same TSDB: every sample timestamp of every host reaches it (the
#     batches waited in the store and were retried with backoff).
#  c. A receiver that answers 400 (a python stand-in): each batch is sent once (never retried),
#     the receiver's message is said once, `nasprobe hosts list` counts what was refused, a
#     second push sends nothing; the bearer token of --remote-write-auth and the tenant header
#     of --remote-write-header are sent.
#  d. Two collectors (--collector-name a / b) record the same agents into one Prometheus: two
#     collector series per metric, no sample refused, Prometheus counts no out-of-order sample.
#  e. https: a second Prometheus (--web.config.file with tls_server_config) and a VictoriaMetrics
#     (-tls) serve a certificate of a CA made by openssl (tests/e2e/lib/tls.sh). Without
#     --ca-file, and with another CA's file, `export --remote-write` fails at once naming the
#     certificate and what it was checked against, and sends nothing; with --ca-file every
#     stored sample reaches both (remote write, and the VictoriaMetrics push with its /metrics
#     and export reads).
#
#   tests/e2e/export_remote_write.sh     build (debug) and run
#   NASPROBE_BIN_DIR=DIR ...             use nasprobe, nasprobe-agent, nasprobe-scenario from DIR
#   NASPROBE_KEEP=1 ...                  keep the temp folder
set -euo pipefail
E2E_NAME=export_remote_write
# shellcheck source=tests/e2e/lib/common.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib/common.sh"
for t in python3 curl jq openssl; do command -v $t >/dev/null || e2e_skip "$E2E_NAME" "$t missing"; done

# shellcheck source=tests/e2e/export_lib.sh
source "$REPO/tests/e2e/export_lib.sh"
export_begin export-rw

export_start_scenario synology-replication
DB="$TMP/nasprobe.db"
NPX=("$NP" --db "$DB" --token-file "$TOK" --hosts-file "$TMP/hosts")

PPORT=$(free_port)
PURL="http://127.0.0.1:$PPORT"
RECV=$(prom_receiver_flag)
# No scrape jobs: the TSDB holds only what is remote-written.
printf 'global:\n  scrape_interval: 1m\n' >"$TMP/prometheus.yml"
prom_start "$TMP/prom" "$PPORT" "$TMP/prometheus.yml" "$RECV"
VMPORT=$(free_port)
vm_start "$TMP/vm" "$VMPORT"
say "Prometheus $(prometheus --version 2>&1 | head -1 | awk '{print $3}') ($RECV) on $PPORT, VictoriaMetrics on $VMPORT"

# raw BASE PROMQL: the raw points of a range selector as JSON ({"series": {key: {ts: v}}}).
raw() {
    # The time has its fraction: a whole-second time leaves out the newest samples when the
    # query follows the record within the second.
    curl -fsS --max-time 20 "$1/api/v1/query" --data-urlencode "query=$2" \
        --data-urlencode "time=$(date +%s.%N)"
}

# --- a. record into Prometheus, export into VictoriaMetrics, compare -----------------------------
say "a. recording ${HOSTS[*]} for 8s with --remote-write $PURL/api/v1/write"
timeout 90 "${NPX[@]}" record --duration 8s --remote-write "$PURL/api/v1/write" \
    --remote-write-header 'X-Scope-OrgID: site-1' "${HOSTS[@]}" \
    2>"$TMP/record_a.log" || fail "record: $(cat "$TMP/record_a.log")"
timeout 60 "${NPX[@]}" export --remote-write "http://127.0.0.1:$VMPORT/api/v1/write" \
    2>"$TMP/export_vm.log" || fail "export --remote-write: $(cat "$TMP/export_vm.log")"
grep -q 'pushed' "$TMP/export_vm.log" || fail "export said: $(cat "$TMP/export_vm.log")"
timeout 60 "${NPX[@]}" export --format json >"$TMP/store.jsonl" 2>"$TMP/store.err" ||
    fail "export --format json: $(cat "$TMP/store.err")"
curl -fsS --max-time 30 "http://127.0.0.1:$VMPORT/internal/force_flush" >/dev/null
sleep 3 # VictoriaMetrics shows rows about 1 s after a flush
Q='{__name__=~"nasprobe_sample_interval_seconds|nasprobe_network_receive_bytes_per_second|nasprobe_thread_cpu_ratio",host=~"src|dst"}[1h]'
raw "$PURL" "$Q" >"$TMP/prom_a.json" || fail "Prometheus query"
raw "http://127.0.0.1:$VMPORT" "$Q" >"$TMP/vm_a.json" || fail "VictoriaMetrics query"

cat >"$TMP/compare.py" <<'PY'
import json, sys

WANT = {"nasprobe_sample_interval_seconds", "nasprobe_network_receive_bytes_per_second",
        "nasprobe_thread_cpu_ratio"}


def key(metric, labels):
    return (metric, tuple(sorted((k, v) for k, v in labels.items() if v)))


def engine(path):
    out, collectors = {}, set()
    for s in json.load(open(path))["data"]["result"]:
        labels = dict(s["metric"])
        m = labels.pop("__name__")
        collectors.add(labels.pop("collector", ""))
        out[key(m, labels)] = {round(float(t) * 1000): float(v) for t, v in s["values"]}
    return out, collectors


store = {}
for line in open(sys.argv[1]):
    p = json.loads(line)
    m = p.pop("metric")
    if m not in WANT or p.get("host") not in ("src", "dst"):
        continue
    ts, v = p.pop("timestamp_ms"), p.pop("value")
    p.pop("time")
    store.setdefault(key(m, p), {})[ts] = v
prom, pc = engine(sys.argv[2])
vm, vc = engine(sys.argv[3])
errors = []
if "" in pc or "" in vc or len(pc) != 1 or pc != vc:
    errors.append(f"collector labels: Prometheus {pc}, VictoriaMetrics {vc}")
for name, got in (("Prometheus", prom), ("VictoriaMetrics", vm)):
    if set(got) != set(store):
        errors.append(f"{name}: series differ: only in store {sorted(set(store) - set(got))[:3]}, "
                      f"only in {name} {sorted(set(got) - set(store))[:3]}")
    for k in set(got) & set(store):
        a, b = store[k], got[k]
        if set(a) != set(b):
            errors.append(f"{name} {k}: {len(b)} points, store {len(a)}")
            continue
        bad = [t for t in a if abs(a[t] - b[t]) > 1e-9 * max(1.0, abs(a[t]))]
        if bad:
            errors.append(f"{name} {k} at {bad[0]}: {b[bad[0]]}, store {a[bad[0]]}")
n = sum(len(v) for v in store.values())
if n < 50 or not any(k[0] == "nasprobe_thread_cpu_ratio" for k in store):
    errors.append(f"too little in the store: {n} points")
if errors:
    print("\n".join(errors[:10]))
    sys.exit(1)
print(f"{len(store)} series, {n} points: the same in Prometheus, VictoriaMetrics and the store")
PY
python3 "$TMP/compare.py" "$TMP/store.jsonl" "$TMP/prom_a.json" "$TMP/vm_a.json" >"$TMP/cmp_a.out" ||
    fail "a. $(cat "$TMP/cmp_a.out")"
say "a. $(cat "$TMP/cmp_a.out")"

# --- b. the receiver away for 8 s ---------------------------------------------------------------
say "b. recording 16s with --remote-write; Prometheus killed at 3s, back at 11s"
timeout 90 "${NPX[@]}" record --duration 16s --remote-write "$PURL" "${HOSTS[@]}" \
    2>"$TMP/record_b.log" &
REC=$!
PIDS+=("$REC")
sleep 3
{
    kill -9 "$PROM_PID"
    wait "$PROM_PID"
} 2>/dev/null || true
sleep 8
prom_start "$TMP/prom" "$PPORT" "$TMP/prometheus.yml" "$RECV"
wait "$REC" || fail "record (b): $(cat "$TMP/record_b.log")"
grep -q 'export: ' "$TMP/record_b.log" || fail "record (b) said no failed push: $(cat "$TMP/record_b.log")"
! grep -q 'points refused\|points dropped' "$TMP/record_b.log" || fail "record (b) dropped: $(cat "$TMP/record_b.log")"
timeout 60 "${NPX[@]}" export --format json >"$TMP/store_b.jsonl" 2>/dev/null
raw "$PURL" 'nasprobe_sample_interval_seconds[1h]' >"$TMP/prom_b.json" || fail "Prometheus query (b)"
# every_sample.py STORE-JSONL PROM-JSON: every stored sample timestamp of every host is in the
# engine's answer to nasprobe_sample_interval_seconds[1h].
cat >"$TMP/every_sample.py" <<'PY'
import json, sys
store = {}
for line in open(sys.argv[1]):
    p = json.loads(line)
    if p["metric"] == "nasprobe_sample_interval_seconds":
        store.setdefault(p["host"], set()).add(p["timestamp_ms"])
prom = {}
for s in json.load(open(sys.argv[2]))["data"]["result"]:
    prom.setdefault(s["metric"]["host"], set()).update(round(float(t) * 1000) for t, _ in s["values"])
bad = [f"{h}: {len(store[h] - prom.get(h, set()))} of {len(store[h])} samples missing"
       for h in store if store[h] - prom.get(h, set())]
if bad or not store:
    print("; ".join(bad) or "nothing stored")
    sys.exit(1)
print(", ".join(f"{h}: all {len(t)} samples" for h, t in sorted(store.items())))
PY
python3 "$TMP/every_sample.py" "$TMP/store_b.jsonl" "$TMP/prom_b.json" >"$TMP/cmp_b.out" ||
    fail "b. $(cat "$TMP/cmp_b.out")"
say "b. after the outage Prometheus holds every stored sample ($(cat "$TMP/cmp_b.out"))"

# --- c. a receiver that refuses -----------------------------------------------------------------
BPORT=$(free_port)
cat >"$TMP/refuse.py" <<'PY'
import hashlib, http.server, sys

log = open(sys.argv[2], "a")


class H(http.server.BaseHTTPRequestHandler):
    def do_POST(self):
        body = self.rfile.read(int(self.headers.get("Content-Length", 0)))
        h = self.headers
        log.write(" ".join([hashlib.sha256(body).hexdigest(), h.get("Content-Encoding", "-"),
                            h.get("Content-Type", "-"),
                            h.get("X-Prometheus-Remote-Write-Version", "-"),
                            h.get("Authorization", "-").replace(" ", "_"),
                            h.get("X-Scope-OrgID", "-")]) + "\n")
        log.flush()
        msg = b"out of bounds: stand-in refusal\n"
        self.send_response(400)
        self.send_header("Content-Length", str(len(msg)))
        self.end_headers()
        self.wfile.write(msg)

    def log_message(self, *a):
        pass


http.server.HTTPServer(("127.0.0.1", int(sys.argv[1])), H).serve_forever()
PY
python3 "$TMP/refuse.py" "$BPORT" "$TMP/refused.log" &
PIDS+=($!)
wait_http_any() { for _ in $(seq 1 50); do curl -s -o /dev/null "$1" && return 0; sleep 0.1; done; return 1; }
wait_http_any "http://127.0.0.1:$BPORT/" || fail "stand-in did not start"
printf 'bearer s3cret\n' >"$TMP/auth"
chmod 600 "$TMP/auth"
BURL="http://127.0.0.1:$BPORT/api/v1/write"
timeout 60 "${NPX[@]}" export --remote-write "$BURL" --remote-write-auth "$TMP/auth" \
    --remote-write-header 'X-Scope-OrgID: site-1' 2>"$TMP/export_c.log" ||
    fail "export to the stand-in: $(cat "$TMP/export_c.log")"
n=$(wc -l <"$TMP/refused.log")
uniq_n=$(cut -d' ' -f1 "$TMP/refused.log" | sort -u | wc -l)
((n >= 2 && n == uniq_n)) || fail "c. $n requests, $uniq_n distinct bodies (a batch sent twice?)"
said=$(grep -c 'stand-in refusal' "$TMP/export_c.log" || true)
((said == 1)) || fail "c. the refusal said $said times: $(cat "$TMP/export_c.log")"
heads=$(cut -d' ' -f2- "$TMP/refused.log" | sort -u)
[[ $heads == "snappy application/x-protobuf 0.1.0 Bearer_s3cret site-1" ]] || fail "c. headers: $heads"
"${NPX[@]}" hosts list >"$TMP/hosts_list.out" 2>&1 || fail "hosts list: $(cat "$TMP/hosts_list.out")"
grep -E "^# export to remote write $BURL: dst: 0 records waiting, refused [1-9][0-9]* samples .*stand-in refusal" \
    "$TMP/hosts_list.out" >/dev/null || fail "c. hosts list: $(cat "$TMP/hosts_list.out")"
timeout 60 "${NPX[@]}" export --remote-write "$BURL" --remote-write-auth "$TMP/auth" \
    2>"$TMP/export_c2.log" || fail "second export: $(cat "$TMP/export_c2.log")"
(($(wc -l <"$TMP/refused.log") == n)) || fail "c. the second push sent refused batches again"
say "c. 400: $n batches sent once each, refusal said once, counted: $(grep "$BURL: dst" "$TMP/hosts_list.out" | sed 's/.*waiting, //; s/, last.*//')"

# --- d. two collectors, one Prometheus ----------------------------------------------------------
say "d. collectors a and b recording the same agents for 6s into one Prometheus"
for c in a b; do
    timeout 60 "$NP" --db "$TMP/$c.db" --token-file "$TOK" --hosts-file "$TMP/hosts" \
        --collector-name "$c" record --duration 6s --remote-write "$PURL" "${HOSTS[@]}" \
        2>"$TMP/record_$c.log" &
    PIDS+=($!)
    eval "REC_$c=$!"
done
# shellcheck disable=SC2154 # set by the eval above
{ wait "$REC_a" && wait "$REC_b"; } || fail "d. record: $(cat "$TMP/record_a.log" "$TMP/record_b.log")"
! grep -q 'points refused\|points dropped' "$TMP/record_a.log" "$TMP/record_b.log" || fail "d. refused: $(cat "$TMP/record_a.log")"
cols=$(curl -fsS "$PURL/api/v1/query" --data-urlencode \
    'query=count by (collector) (count_over_time(nasprobe_sample_interval_seconds{host="dst",collector=~"a|b"}[1h]))' |
    python3 -c 'import json,sys; print(" ".join(sorted(s["metric"]["collector"] for s in json.load(sys.stdin)["data"]["result"])))')
[[ $cols == "a b" ]] || fail "d. collector series: '$cols'"
curl -fsS "$PURL/metrics" >"$TMP/prom_metrics.txt"
grep -q '^prometheus_tsdb_out_of_order_samples_total' "$TMP/prom_metrics.txt" ||
    fail "d. Prometheus has no prometheus_tsdb_out_of_order_samples_total"
ooo=$(awk '/^prometheus_tsdb_out_of_order_samples_total/ {s += $2} END {print s + 0}' "$TMP/prom_metrics.txt")
[[ $ooo == 0 ]] || fail "d. Prometheus counted $ooo out-of-order samples"
say "d. collector series: $cols; out-of-order samples: $ooo"

# --- e. https ------------------------------------------------------------------------------------
# shellcheck source=tests/e2e/lib/tls.sh
source "$REPO/tests/e2e/lib/tls.sh"
tls_make "$TMP/tls"
CA=(--cacert "$TMP/tls/ca.pem")
printf 'tls_server_config:\n  cert_file: %s\n  key_file: %s\n' "$TMP/tls/server.pem" \
    "$TMP/tls/server.key" >"$TMP/web.yml"
SPORT=$(free_port)
prometheus --config.file "$TMP/prometheus.yml" --storage.tsdb.path "$TMP/prom_tls" \
    --web.listen-address "127.0.0.1:$SPORT" --web.config.file "$TMP/web.yml" "$RECV" \
    >>"$TMP/prom_tls.log" 2>&1 &
PIDS+=($!)
wait_http "https://localhost:$SPORT/-/ready" 60 "${CA[@]}" ||
    fail "e. Prometheus over TLS not ready: $(tail -5 "$TMP/prom_tls.log")"
VTPORT=$(free_port)
mkdir -p "$TMP/vm_tls"
victoria-metrics -storageDataPath "$TMP/vm_tls" -httpListenAddr "127.0.0.1:$VTPORT" \
    -retentionPeriod 100y -tls -tlsCertFile "$TMP/tls/server.pem" \
    -tlsKeyFile "$TMP/tls/server.key" >>"$TMP/vm_tls.log" 2>&1 &
PIDS+=($!)
wait_http "https://localhost:$VTPORT/health" 30 "${CA[@]}" ||
    fail "e. VictoriaMetrics over TLS did not start: $(tail -5 "$TMP/vm_tls.log")"
SURL="https://localhost:$SPORT/api/v1/write"
say "e. https: Prometheus on $SPORT and VictoriaMetrics on $VTPORT with a certificate of the test's CA"
for ca in none other; do
    args=()
    [[ $ca == other ]] && args=(--ca-file "$TMP/tls/other-ca.pem")
    t0=$SECONDS
    rc=0
    timeout 60 "${NPX[@]}" "${args[@]}" export --remote-write "$SURL" 2>"$TMP/export_e_$ca.log" || rc=$?
    ((rc != 0)) || fail "e. export --remote-write over https with CA '$ca' succeeded"
    ((SECONDS - t0 < 20)) || fail "e. a refused certificate was retried ($((SECONDS - t0)) s)"
    want="built-in Mozilla roots"
    [[ $ca == other ]] && want="--ca-file $TMP/tls/other-ca.pem"
    grep -q "invalid peer certificate.*UnknownIssuer.*$want" "$TMP/export_e_$ca.log" ||
        fail "e. CA '$ca': $(cat "$TMP/export_e_$ca.log")"
done
n_tls=$(curl -fsS "${CA[@]}" "https://localhost:$SPORT/api/v1/query" \
    --data-urlencode 'query=count({__name__=~"nasprobe_.+"})' | jq -r '.data.result | length')
[[ $n_tls == 0 ]] || fail "e. something reached the receiver through a refused certificate"
timeout 120 "${NPX[@]}" --ca-file "$TMP/tls/ca.pem" export --remote-write "$SURL" \
    2>"$TMP/export_e.log" || fail "e. export --remote-write over https: $(cat "$TMP/export_e.log")"
timeout 120 "${NPX[@]}" --ca-file "$TMP/tls/ca.pem" export --push-vm "https://localhost:$VTPORT" \
    2>"$TMP/export_e_vm.log" || fail "e. export --push-vm over https: $(cat "$TMP/export_e_vm.log")"
timeout 60 "${NPX[@]}" export --format json >"$TMP/store_e.jsonl" 2>/dev/null
curl -fsS --max-time 20 "${CA[@]}" "https://localhost:$SPORT/api/v1/query" \
    --data-urlencode 'query=nasprobe_sample_interval_seconds[1h]' \
    --data-urlencode "time=$(date +%s.%N)" >"$TMP/prom_e.json" || fail "e. Prometheus query over https"
python3 "$TMP/every_sample.py" "$TMP/store_e.jsonl" "$TMP/prom_e.json" >"$TMP/cmp_e.out" ||
    fail "e. Prometheus over https: $(cat "$TMP/cmp_e.out")"
curl -fsS --max-time 30 "${CA[@]}" "https://localhost:$VTPORT/internal/force_flush" >/dev/null
sleep 3
curl -fsS --max-time 20 "${CA[@]}" "https://localhost:$VTPORT/api/v1/query" \
    --data-urlencode 'query=nasprobe_sample_interval_seconds[1h]' \
    --data-urlencode "time=$(date +%s.%N)" >"$TMP/vm_e.json" || fail "e. VictoriaMetrics query over https"
python3 "$TMP/every_sample.py" "$TMP/store_e.jsonl" "$TMP/vm_e.json" >"$TMP/cmp_e_vm.out" ||
    fail "e. VictoriaMetrics over https: $(cat "$TMP/cmp_e_vm.out")"
say "e. https refused without the CA and with another CA (at once); with --ca-file, Prometheus: $(cat "$TMP/cmp_e.out"); VictoriaMetrics: $(cat "$TMP/cmp_e_vm.out")"

say "PASS ($((SECONDS - START)) s)"
