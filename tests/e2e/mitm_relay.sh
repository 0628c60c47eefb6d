#!/usr/bin/env bash
# Frame integrity (issue 20): a man-in-the-middle relay on loopback between a real agent and
# `nasprobe record` passes the handshake through, then on its first five connections alters
# the agent's stream once each: (a) flips one bit in a Record, (b) drops a Record, (c) replays
# an earlier Record, (d) injects a frame of its own, (e) swaps two Records. From the sixth
# connection on it stops tampering. A second `nasprobe record` connected to the agent directly
# stores the same stream as the reference.
#  - each tampering is detected: the collector logs "authentication failed" naming the host and
#    reconnects (five times);
#  - nothing altered is stored: the relayed store holds exactly the reference's points over the
#    time both cover, `check` passes, and the report has no gap (the resumes filled it all).
#
#   tests/e2e/mitm_relay.sh          needs python3 and sqlite3-free: only loopback
#   NASPROBE_BIN_DIR=DIR / NASPROBE_KEEP=1
set -euo pipefail
E2E_NAME=mitm_relay
# shellcheck source=tests/e2e/lib/common.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib/common.sh"
command -v python3 >/dev/null || fail "python3 missing"
TMP=$(e2e_tmpdir mitm)
PIDS=()
cleanup() {
    for p in "${PIDS[@]}"; do kill "$p" 2>/dev/null || true; done
    wait 2>/dev/null || true
    [[ ${NASPROBE_KEEP:-} == 1 ]] && echo "kept $TMP" || rm -rf "$TMP"
}
trap cleanup EXIT
dump() {
    for f in "$TMP"/*.log; do
        [[ -f $f ]] && { echo "--- $f"; tail -20 "$f"; }
    done
}
die() {
    dump >&2
    fail "$*"
}
free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }
PA=$(free_port)
PR=$(free_port)
T="$TMP/token"
"$AGENT" --listen "127.0.0.1:$PA" --token-file "$T" --interval 200 --nice 0 \
    --log-file "$TMP/agent.log" &
PIDS+=($!)
for _ in $(seq 100); do
    [[ -s $T ]] && grep -q "listening on" "$TMP/agent.log" 2>/dev/null && break
    sleep 0.1
done
grep -q "listening on" "$TMP/agent.log" || die "the agent did not start"
python3 tests/e2e/lib/mitm_relay.py "$PR" "$PA" "$TMP/relay.log" flip,drop,replay,inject,reorder &
PIDS+=($!)
for _ in $(seq 50); do grep -q listening "$TMP/relay.log" 2>/dev/null && break; sleep 0.1; done
DUR=${NASPROBE_MITM_SECONDS:-50}
say "recording ${DUR}s through the relay and directly"
"$NP" --db "$TMP/relay.db" --token-file "$T" --hosts-file "$TMP/none" record --duration "${DUR}s" \
    "nas=127.0.0.1:$PR" >"$TMP/record-relay.log" 2>&1 &
REC_RELAY=$!
"$NP" --db "$TMP/direct.db" --token-file "$T" --hosts-file "$TMP/none" record --duration "${DUR}s" \
    "nas=127.0.0.1:$PA" >"$TMP/record-direct.log" 2>&1 &
REC_DIRECT=$!
wait "$REC_RELAY" || die "record through the relay exited non-zero"
wait "$REC_DIRECT" || die "record direct exited non-zero"

say "checks"
for m in flip drop replay inject reorder; do
    grep -q "^$m at sealed frame" "$TMP/relay.log" || die "the relay never did '$m'"
done
grep -q "connection 6: pass" "$TMP/relay.log" || die "no untampered connection after the five"
n=$(grep -c "nas: authentication failed: frame .* has a wrong MAC" "$TMP/record-relay.log" || true)
((n == 5)) || die "expected 5 detections naming the host, got $n"
grep -q "authentication failed" "$TMP/record-direct.log" && die "the direct collector saw tampering"
"$NP" --db "$TMP/relay.db" check >"$TMP/check.log" 2>&1 || die "check: $(cat "$TMP/check.log")"
"$NP" --db "$TMP/relay.db" report --json >"$TMP/report.json" 2>"$TMP/report.log" || die "report failed"
python3 - "$TMP/report.json" <<'PY' || die "the relayed store has gaps"
import json, sys
r = json.load(open(sys.argv[1]))
assert r["gaps"] == [], r["gaps"]
# The five tamperings are stored refusals (issue 28), shown by report after the fact.
n = sum(x["samples"] for x in r["refusals"] if "failed authentication" in x["reason"])
assert n == 5, r["refusals"]
PY
"$NP" --db "$TMP/relay.db" export --format csv >"$TMP/relay.csv" || die "export relay"
"$NP" --db "$TMP/direct.db" export --format csv >"$TMP/direct.csv" || die "export direct"
python3 - "$TMP/relay.csv" "$TMP/direct.csv" <<'PY' || die "the relayed store differs from the direct one"
import csv, sys
def load(p):
    rows = list(csv.reader(open(p)))
    head, rows = rows[0], rows[1:]
    h = head.index("host")
    return [tuple(c for i, c in enumerate(r) if i != h) for r in rows]
a, b = load(sys.argv[1]), load(sys.argv[2])
assert a and b, "empty export"
# Over the time both stores cover (the two collectors stop a moment apart).
t = min(max(int(r[0]) for r in a), max(int(r[0]) for r in b))
sa = sorted(r for r in a if int(r[0]) <= t)
sb = sorted(r for r in b if int(r[0]) <= t)
missing = set(sb) - set(sa)
extra = set(sa) - set(sb)
assert not missing and not extra, f"{len(missing)} missing, {len(extra)} extra, e.g. {sorted(extra)[:3]} {sorted(missing)[:3]}"
assert len(sa) == len(sb), (len(sa), len(sb))
print(f"{len(sa)} points identical up to {t}")
PY
say "PASS ($((SECONDS - START)) s): five tamperings detected and refused, the store equals the direct one"
