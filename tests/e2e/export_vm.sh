#!/usr/bin/env bash
# End-to-end test of `nasprobe record --export-vm` against a real VictoriaMetrics (issue 8):
#
#  a. `nasprobe-scenario` runs synology-replication; one real `nasprobe-agent` per host samples
#     its tree; `nasprobe record --export-vm URL` stores and pushes. Queried back through
#     /api/v1/export: the NIC rate and the hot thread's CPU are, point for point, what
#     `nasprobe export --format json` computes from the store, and their medians match what
#     `nasprobe report --json` says (and what the scenario declares: dst eth0 rx 97 MB/s,
#     synoreplicad's hot thread at 96% of a core); agent_start events are there once per host.
#  b. Recording goes on with --export-vm; VictoriaMetrics is killed (SIGKILL) in the middle and
#     restarted on the same data dir: every sample timestamp of every host is in the engine
#     exactly once (no gap, no duplicate).
#  c. The Rust engine tests (collector/tests/it/export_vm.rs: SIGKILL in the middle of a backfill
#     request and right after an acknowledgement) run with NASPROBE_REQUIRE_ENGINES=1.
#
# Installs the Debian package victoria-metrics if missing; starts it by hand on a loopback port
# with a temp data dir.
#
#   tests/e2e/export_vm.sh               build (debug) and run
#   NASPROBE_BIN_DIR=DIR ...             use nasprobe, nasprobe-agent, nasprobe-scenario from DIR
#   NASPROBE_KEEP=1 ...                  keep the temp folder
set -euo pipefail
E2E_NAME=export_vm
# shellcheck source=tests/e2e/lib/common.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib/common.sh"
for t in python3 curl; do command -v $t >/dev/null || fail "$t missing"; done

# shellcheck source=tests/e2e/export_lib.sh
source "$REPO/tests/e2e/export_lib.sh"
export_begin export-vm

# --- scenario and agents -----------------------------------------------------------------------
DB="$TMP/nasprobe.db"
export_start_scenario synology-replication

VMPORT=$(free_port)
VMURL="http://127.0.0.1:$VMPORT"
vm_start "$TMP/vm" "$VMPORT"
NPX=("$NP" --db "$DB" --token-file "$TOK" --hosts-file "$TMP/hosts")

# --- a. record and push; query back ------------------------------------------------------------
say "a. recording ${HOSTS[*]} for 10s with --export-vm $VMURL"
timeout 90 "${NPX[@]}" record --duration 10s --export-vm "$VMURL" "${HOSTS[@]}" \
    2>"$TMP/record_a.log" || fail "record: $(cat "$TMP/record_a.log")"
timeout 60 "${NPX[@]}" report --json >"$TMP/report.json" 2>"$TMP/report.err" ||
    fail "report --json: $(cat "$TMP/report.err")"
timeout 60 "${NPX[@]}" export --format json >"$TMP/export.jsonl" 2>"$TMP/export.err" ||
    fail "export --format json: $(cat "$TMP/export.err")"
SEL='{__name__=~"nasprobe_network_receive_bytes_per_second|nasprobe_thread_cpu_ratio|nasprobe_sample_interval_seconds|nasprobe_event"}'
vm_export "$VMPORT" "$SEL" >"$TMP/vm_a.jsonl" || fail "VictoriaMetrics export"

cat >"$TMP/check_a.py" <<'PY'
import json, statistics, sys

report = json.load(open(sys.argv[1]))
WANT = {"nasprobe_network_receive_bytes_per_second", "nasprobe_thread_cpu_ratio",
        "nasprobe_sample_interval_seconds", "nasprobe_event"}
errors = []


def want(cond, msg):
    if not cond:
        errors.append(msg)


def key(metric, labels):
    return (metric, tuple(sorted((k, v) for k, v in labels.items() if v)))


# The store, as nasprobe computes it.
store = {}
for line in open(sys.argv[2]):
    p = json.loads(line)
    m = p.pop("metric")
    if m not in WANT:
        continue
    ts, v = p.pop("timestamp_ms"), p.pop("value")
    p.pop("time")
    store.setdefault(key(m, p), {})[ts] = v
# The engine.
engine = {}
for line in open(sys.argv[3]):
    if not line.strip():
        continue
    s = json.loads(line)
    labels = dict(s["metric"])
    m = labels.pop("__name__")
    # Every series carries the collector's name (the store's points do not).
    want(labels.pop("collector", "") != "", f"{m} {labels}: no collector label")
    k = key(m, labels)
    want(k not in engine, f"{k}: two series")
    want(len(set(s["timestamps"])) == len(s["timestamps"]), f"{k}: duplicate timestamps")
    engine[k] = dict(zip(s["timestamps"], s["values"]))

want(set(store) == set(engine),
     f"series differ: only in store {sorted(set(store) - set(engine))[:5]}, "
     f"only in engine {sorted(set(engine) - set(store))[:5]}")
points = 0
for k in set(store) & set(engine):
    a, b = store[k], engine[k]
    want(set(a) == set(b), f"{k}: timestamps differ ({len(a)} in store, {len(b)} in engine)")
    for t in set(a) & set(b):
        points += 1
        if abs(a[t] - b[t]) > 1e-9 * max(1.0, abs(a[t])):
            errors.append(f"{k} at {t}: store {a[t]} engine {b[t]}")
            break

hosts = {h["name"]: h for h in report["hosts"]}
dst = hosts["dst"]
# NIC: the report's median receive rate of dst's busiest NIC.
nic = max(dst["nics"], key=lambda n: n["rx_mb_s"])
rx = [v / 1e6 for v in engine[key("nasprobe_network_receive_bytes_per_second",
                                  {"host": "dst", "device": nic["name"]})].values()]
rx_med = statistics.median(rx)
want(abs(rx_med - nic["rx_mb_s"]) <= max(1.0, 0.02 * nic["rx_mb_s"]),
     f"dst {nic['name']} rx: engine median {rx_med:.2f} MB/s, report {nic['rx_mb_s']}")
want(nic["name"] == "eth0" and 90 <= rx_med <= 104, f"dst {nic['name']} rx {rx_med:.1f} MB/s, scenario 97")
# The hot thread.
ht = dst["cpu"]["hottest_thread"]
tk = key("nasprobe_thread_cpu_ratio", {"host": "dst", "process": ht["process"], "thread": ht["thread"]})
want(tk in engine, f"no series {tk} in the engine")
if tk in engine:
    th_med = statistics.median(min(1.0, v) for v in engine[tk].values())
    want(abs(th_med - ht["core_fraction"]) <= 0.03,
         f"hot thread {ht['process']}/{ht['thread']}: engine median {th_med:.3f}, report {ht['core_fraction']}")
    want(ht["process"] == "synoreplicad" and 0.88 <= th_med <= 1.0,
         f"hot thread {ht['process']} at {th_med:.2f}, scenario synoreplicad at 0.96")
# Events: agent_start once per host, as the report lists them.
for h in hosts:
    n_rep = sum(1 for e in report["events"] if e["host"] == h and e["kind"] == "agent_start")
    n_eng = len(engine.get(key("nasprobe_event", {"host": h, "kind": "agent_start"}), {}))
    want(n_rep >= 1 and n_rep == n_eng, f"{h}: agent_start events: report {n_rep}, engine {n_eng}")
samples = {h: len(engine.get(key("nasprobe_sample_interval_seconds", {"host": h}), {})) for h in hosts}
for h in hosts:
    want(samples[h] == hosts[h]["samples"], f"{h}: {samples[h]} samples in the engine, report {hosts[h]['samples']}")
if errors:
    print("; ".join(errors[:10]))
    sys.exit(1)
print(f"{points} points equal in store and engine; dst {nic['name']} rx median {rx_med:.1f} MB/s "
      f"(report {nic['rx_mb_s']}); hot thread {ht['process']} {th_med:.3f} (report "
      f"{ht['core_fraction']}); samples {samples}")
PY
out=$(python3 "$TMP/check_a.py" "$TMP/report.json" "$TMP/export.jsonl" "$TMP/vm_a.jsonl") ||
    fail "a: $out"
say "a. ok: $out"

# --- b. record on; SIGKILL the engine in the middle; restart it ---------------------------------
say "b. recording 24s more with --export-vm; VictoriaMetrics is killed at 6s, back at 11s"
timeout 120 "${NPX[@]}" record --duration 24s --export-vm "$VMURL" "${HOSTS[@]}" \
    2>"$TMP/record_b.log" &
REC=$!
PIDS+=($REC)
sleep 6
kill -9 "$VM_PID"
wait "$VM_PID" 2>/dev/null || true
sleep 5
vm_start "$TMP/vm" "$VMPORT"
wait "$REC" || fail "record (b): $(cat "$TMP/record_b.log")"
grep -q "records wait in the store" "$TMP/record_b.log" ||
    fail "b: the exporter never saw the engine down: $(cat "$TMP/record_b.log")"
timeout 60 "${NPX[@]}" export --format csv >"$TMP/export_b.csv" 2>"$TMP/export_b.err" ||
    fail "export --format csv: $(cat "$TMP/export_b.err")"
vm_export "$VMPORT" '{__name__=~"nasprobe_sample_interval_seconds|nasprobe_cpu_all_busy_ratio"}' \
    >"$TMP/vm_b.jsonl"
cat >"$TMP/check_b.py" <<'PY'
import csv, json, sys

store = {}
for row in csv.DictReader(open(sys.argv[1])):
    if row["metric"] in ("nasprobe_sample_interval_seconds", "nasprobe_cpu_all_busy_ratio"):
        store.setdefault((row["metric"], row["host"]), []).append(int(row["timestamp_ms"]))
errors = []
seen = set()
for line in open(sys.argv[2]):
    if not line.strip():
        continue
    s = json.loads(line)
    k = (s["metric"]["__name__"], s["metric"]["host"])
    seen.add(k)
    got = sorted(s["timestamps"])
    want = sorted(store.get(k, []))
    dupes = len(got) - len(set(got))
    missing = len(set(want) - set(got))
    extra = len(set(got) - set(want))
    if dupes or missing or extra:
        errors.append(f"{k}: {dupes} duplicates, {missing} missing, {extra} unexpected of {len(want)}")
if seen != set(store):
    errors.append(f"series: engine {sorted(seen)}, store {sorted(store)}")
if errors:
    print("; ".join(errors))
    sys.exit(1)
print(", ".join(f"{m.split('_', 1)[1]}{{{h}}}: {len(v)}" for (m, h), v in sorted(store.items())) +
      " timestamps, each exactly once")
PY
out=$(python3 "$TMP/check_b.py" "$TMP/export_b.csv" "$TMP/vm_b.jsonl") || fail "b: $out"
say "b. ok: $out"

# --- c. the Rust engine tests ---------------------------------------------------------------
if command -v cargo >/dev/null && [[ -z ${NASPROBE_BIN_DIR:-} ]]; then
    say "c. collector/tests/it/export_vm.rs (SIGKILL mid-request and after an acknowledgement)"
    NASPROBE_REQUIRE_ENGINES=1 timeout 600 cargo test -q -p nasprobe --test it export_vm:: \
        >"$TMP/cargo_test.log" 2>&1 || {
        tail -40 "$TMP/cargo_test.log"
        fail "c: cargo test --test it export_vm::"
    }
    say "c. ok: $(grep -E '^test result' "$TMP/cargo_test.log" | tail -1)"
fi
say "PASS in $((SECONDS - START))s"
