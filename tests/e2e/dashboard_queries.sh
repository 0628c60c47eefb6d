#!/usr/bin/env bash
# End-to-end test of the Grafana dashboard docs/dashboards/nasprobe.json (issue 30): every query
# it holds returns data from a real Prometheus and a real VictoriaMetrics.
#
#  a. The JSON model is checked: a title, uid and schemaVersion; the datasource, collector and
#     host variables; every panel with a unique id and a gridPos inside the 24 columns; every
#     non-row panel with targets, each an expr and a unique refId, on the ${datasource} source;
#     every nasprobe_ series it names listed in docs/metrics.md.
#  b. `nasprobe-scenario` runs synology-replication (btrfs on src exiting every 6 s) with one real
#     `nasprobe-agent` per host; `nasprobe serve --metrics --remote-write PROMETHEUS` records
#     them for 12 s, remote-writes into Prometheus, and serves its scrape endpoint, which both
#     engines scrape for the verdict alone (recording pushes the verdict once a minute, at the
#     minute: a 12 s recording may not cross one); then `nasprobe export --remote-write
#     VICTORIAMETRICS` sends the same store.
#  c. Each engine: the variables' label_values give the collector and both hosts; every panel
#     target and annotation, with $collector, $host (src: the host with exits), $__interval and
#     $__range substituted, returns at least one series, run as Grafana runs it: an instant
#     query at the end, or a range query over the last 5 minutes (step 5 s). A failure names the
#     panel, the target and the engine.
#
#   tests/e2e/dashboard_queries.sh       build (debug) and run
#   NASPROBE_BIN_DIR=DIR ...             use nasprobe, nasprobe-agent, nasprobe-scenario from DIR
#   NASPROBE_KEEP=1 ...                  keep the temp folder
set -euo pipefail
E2E_NAME=dashboard_queries
# shellcheck source=tests/e2e/lib/common.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib/common.sh"
for t in python3 curl; do command -v $t >/dev/null || e2e_skip "$E2E_NAME" "$t missing"; done

# shellcheck source=tests/e2e/export_lib.sh
source "$REPO/tests/e2e/export_lib.sh"
export_begin dashboard
DASH="$REPO/docs/dashboards/nasprobe.json"
COLLECTOR=dash

# --- a. the JSON model -------------------------------------------------------------------------
# queries.py DASHBOARD METRICS_MD: checks the model; prints one line per query,
# "WHAT<TAB>MODE<TAB>EXPR" (WHAT: panel title and refId, or the annotation's name; MODE: instant
# or range, as Grafana runs it), variables substituted.
cat >"$TMP/queries.py" <<'PY'
import json, re, sys

dash = json.load(open(sys.argv[1]))
documented = set(re.findall(r"^\| `(nasprobe_[a-z_]+)` \|", open(sys.argv[2]).read(), re.M))
errors = []
SUBST = {"$collector": sys.argv[3], "$host": sys.argv[4], "$__interval": "1m", "$__range": "1h"}


def want(cond, msg):
    if not cond:
        errors.append(msg)


def subst(expr, where):
    for k in sorted(SUBST, key=len, reverse=True):
        expr = expr.replace(k, SUBST[k])
    want("$" not in expr, f"{where}: a variable left in {expr!r}")
    for m in re.findall(r"\bnasprobe_[a-z_]+", expr):
        want(m in documented, f"{where}: {m} is not in docs/metrics.md")
    return expr


for k in ("title", "uid", "schemaVersion", "panels", "templating"):
    want(k in dash, f"no {k}")
want(dash.get("schemaVersion", 0) >= 36, f"schemaVersion {dash.get('schemaVersion')}")
names = [v.get("name") for v in dash.get("templating", {}).get("list", [])]
want(names[:1] == ["datasource"] and {"collector", "host"} <= set(names), f"variables {names}")
ds = {"type": "prometheus", "uid": "${datasource}"}
ids, out = set(), []
for p in dash.get("panels", []):
    title = p.get("title", "?")
    want(isinstance(p.get("id"), int) and p["id"] not in ids, f"panel {title}: id {p.get('id')}")
    ids.add(p.get("id"))
    gp = p.get("gridPos", {})
    want(all(isinstance(gp.get(k), int) for k in "xywh") and gp.get("w", 0) > 0 and
         gp.get("h", 0) > 0 and gp.get("x", 0) + gp.get("w", 0) <= 24,
         f"panel {title}: gridPos {gp}")
    if p.get("type") == "row":
        continue
    want(p.get("datasource") == ds, f"panel {title}: datasource {p.get('datasource')}")
    targets = p.get("targets", [])
    want(targets, f"panel {title}: no targets")
    refs = [t.get("refId") for t in targets]
    want(len(set(refs)) == len(refs) and None not in refs, f"panel {title}: refIds {refs}")
    for t in targets:
        want(t.get("datasource") == ds and t.get("expr"), f"panel {title} {t.get('refId')}: {t}")
        where = f"panel '{title}' {t.get('refId')}"
        mode = "instant" if t.get("instant") and not t.get("range") else "range"
        out.append(f"{where}\t{mode}\t{subst(t.get('expr', ''), where)}")
for a in dash.get("annotations", {}).get("list", []):
    if "expr" in a:
        where = f"annotation '{a.get('name')}'"
        out.append(f"{where}\trange\t{subst(a['expr'], where)}")
want(len(out) >= 10, f"only {len(out)} queries")
if errors:
    print("\n".join(errors), file=sys.stderr)
    sys.exit(1)
print("\n".join(out))
PY
python3 "$TMP/queries.py" "$DASH" "$REPO/docs/metrics.md" "$COLLECTOR" src >"$TMP/queries.tsv" \
    2>"$TMP/queries.err" || fail "a. docs/dashboards/nasprobe.json: $(cat "$TMP/queries.err")"
say "a. the JSON model holds $(grep -c . "$TMP/queries.tsv") queries, all on documented series"

# --- b. the data -------------------------------------------------------------------------------
export_start_scenario synology-replication --restart-every 6
NPX=("$NP" --db "$TMP/nasprobe.db" --token-file "$TOK" --hosts-file "$TMP/hosts"
    --collector-name "$COLLECTOR")
SPORT=$(free_port)
cat >"$TMP/scrape.yml" <<EOF
global:
  scrape_interval: 1s
  scrape_timeout: 1s
scrape_configs:
  - job_name: nasprobe
    static_configs: [{targets: ["127.0.0.1:$SPORT"]}]
    metric_relabel_configs:
      - {source_labels: [__name__], regex: nasprobe_verdict_utilization_ratio, action: keep}
EOF
PPORT=$(free_port)
PURL="http://127.0.0.1:$PPORT"
prom_start "$TMP/prom" "$PPORT" "$TMP/scrape.yml" "$(prom_receiver_flag)"
VMPORT=$(free_port)
VMURL="http://127.0.0.1:$VMPORT"
# Points of the last 30 s are hidden from queries by default (-search.latencyOffset): show them.
vm_start "$TMP/vm" "$VMPORT" -promscrape.config "$TMP/scrape.yml" -search.latencyOffset 0s
say "b. serve --metrics 127.0.0.1:$SPORT --remote-write Prometheus ($PPORT) for 12s; VictoriaMetrics on $VMPORT"
timeout 90 "${NPX[@]}" serve --metrics "127.0.0.1:$SPORT" --remote-write "$PURL/api/v1/write" \
    --duration 12s "${HOSTS[@]}" 2>"$TMP/serve.log" || fail "serve: $(cat "$TMP/serve.log")"
timeout 60 "${NPX[@]}" export --remote-write "$VMURL/api/v1/write" 2>"$TMP/export_vm.log" ||
    fail "export --remote-write: $(cat "$TMP/export_vm.log")"
curl -fsS --max-time 30 "$VMURL/internal/force_flush" >/dev/null
sleep 3 # VictoriaMetrics shows rows about 1 s after a flush

# --- c. every query on both engines ------------------------------------------------------------
# series BASE PATH ARGS...: the number of series (or label values) an API answer holds.
series() {
    local base=$1 path=$2
    shift 2
    curl -fsS --max-time 20 "$base$path" "$@" |
        python3 -c 'import json,sys; d=json.load(sys.stdin)["data"]; print(len(d["result"] if isinstance(d, dict) else d))'
}
# label_values BASE LABEL SELECTOR: what Grafana's label_values(SELECTOR, LABEL) lists, sorted.
label_values() {
    curl -fsS -G --max-time 20 "$1/api/v1/label/$2/values" --data-urlencode "match[]=$3" |
        python3 -c 'import json,sys; print(" ".join(sorted(json.load(sys.stdin)["data"])))'
}
for engine in "Prometheus $PURL" "VictoriaMetrics $VMURL"; do
    name=${engine%% *}
    base=${engine#* }
    cols=$(label_values "$base" collector nasprobe_sample_interval_seconds) ||
        fail "c. $name: label values of collector"
    [[ $cols == "$COLLECTOR" ]] || fail "c. $name: variable collector: '$cols'"
    hosts=$(label_values "$base" host "nasprobe_sample_interval_seconds{collector=~\"$COLLECTOR\"}") ||
        fail "c. $name: label values of host"
    [[ $hosts == "dst src" ]] || fail "c. $name: variable host: '$hosts'"
    now=$(date +%s)
    n=0
    while IFS=$'\t' read -r what mode expr; do
        if [[ $mode == instant ]]; then
            got=$(series "$base" /api/v1/query --data-urlencode "query=$expr" \
                --data-urlencode "time=$now") || fail "c. $name: $what: the query failed: $expr"
        else
            got=$(series "$base" /api/v1/query_range --data-urlencode "query=$expr" \
                --data-urlencode "start=$((now - 300))" --data-urlencode "end=$now" \
                --data-urlencode step=5) || fail "c. $name: $what: the range query failed: $expr"
        fi
        ((got > 0)) || fail "c. $name: $what has no data ($mode query): $expr"
        n=$((n + 1))
    done <"$TMP/queries.tsv"
    say "c. $name: variables collector=$cols host=($hosts); all $n queries return series"
done

say "PASS ($((SECONDS - START)) s)"
