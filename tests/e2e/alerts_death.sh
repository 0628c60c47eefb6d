#!/usr/bin/env bash
# Alerts (issue 27): death. A real process (np27mover, python3 under a name of its own) moves
# bytes over loopback to a sink; it is killed with SIGKILL three times and restarted each time,
# under `nasprobe record --watch-process np27mover --alert death.quiet=15s` with a webhook and
# an exec receiver:
#  - one death alert (a restart loop is one alert), naming np27mover and SIGKILL, counted 3;
#  - each receiver gets it once firing, once resolved (after 15 s without a death), the
#    resolved one with count 3; the exec receiver gets the same JSON on its stdin;
#  - np27hog (watched too), OOM-killed in a 64 MiB memory cgroup → its death alert says the
#    OOM killer, cause oom.
# Needs root: the agent reads exit statuses from the kernel's process connector.
#
#   tests/e2e/alerts_death.sh
#   NASPROBE_BIN_DIR=DIR         use nasprobe and nasprobe-agent from DIR, no build
#   NASPROBE_KEEP=1              keep the temp folder
set -euo pipefail
E2E_NAME=alerts_death
T=$E2E_NAME
# shellcheck source=tests/e2e/lib/base.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib/base.sh"
[[ $(id -u) == 0 ]] || e2e_skip $T "needs root (the process connector needs CAP_NET_ADMIN)"
fail() {
    echo "$T: FAIL: $*" >&2
    for f in record.log hook.jsonl exec.jsonl alerts.json; do
        [[ -f ${TMP:-/nonexistent}/$f ]] && { echo "--- $f" >&2; tail -20 "$TMP/$f" >&2; }
    done
    exit 1
}
for c in python3 jq; do command -v $c >/dev/null || fail "$c missing (scripts/setup installs it)"; done
e2e_build release nasprobe nasprobe-agent
e2e_bins nasprobe nasprobe-agent
NP="$BIN/nasprobe"
AGENT="$BIN/nasprobe-agent"
TMP="$(mktemp -d /tmp/nasprobe-alerts-death.XXXXXX)"
PIDS=()
CG=""
cleanup() {
    for p in "${PIDS[@]}"; do kill -9 "$p" 2>/dev/null || true; done
    wait 2>/dev/null || true
    [[ -n $CG && -d $CG ]] && rmdir "$CG" 2>/dev/null
    if [[ -n ${NASPROBE_KEEP:-} ]]; then say "kept $TMP"; else rm -rf "$TMP"; fi
}
trap cleanup EXIT
TOK="$TMP/token"
DB="$TMP/nasprobe.db"
PORT=$((20000 + RANDOM % 20000))
HPORT=$((PORT + 1))
SPORT=$((PORT + 2))
HOOK="$TMP/hook.jsonl"
start=$SECONDS
PY="$(python3 -c 'import os, sys; print(os.path.realpath(sys.executable))')"
ln -s "$PY" "$TMP/np27mover"
ln -s "$PY" "$TMP/np27sink"
ln -s "$PY" "$TMP/np27hog"
# A memory cgroup of 64 MiB (v1 hierarchy, or v2 with the memory controller), no swap.
if [[ -d /sys/fs/cgroup/memory ]]; then
    CG=/sys/fs/cgroup/memory/nasprobe-alerts-$$
    mkdir "$CG"
    echo 64M >"$CG/memory.limit_in_bytes"
    echo 64M >"$CG/memory.memsw.limit_in_bytes" 2>/dev/null || true
else
    for root in /sys/fs/cgroup /sys/fs/cgroup/unified; do
        if grep -qw memory "$root/cgroup.controllers" 2>/dev/null; then
            grep -qw memory "$root/cgroup.subtree_control" || echo +memory >"$root/cgroup.subtree_control"
            CG=$root/nasprobe-alerts-$$
            mkdir "$CG"
            echo 64M >"$CG/memory.max"
            echo 0 >"$CG/memory.swap.max" 2>/dev/null || true
            break
        fi
    done
fi
[[ -n $CG ]] || fail "no memory cgroup controller (v1 or v2) to run the OOM case in"
cat >"$TMP/sink.py" <<PY
import socket, threading
s = socket.socket(); s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
s.bind(("127.0.0.1", $SPORT)); s.listen(8)
def drain(c):
    while c.recv(1 << 16): pass
while True:
    c, _ = s.accept(); threading.Thread(target=drain, args=(c,), daemon=True).start()
PY
# About 20 MB/s: 256 KiB every 12 ms.
cat >"$TMP/mover.py" <<PY
import socket, time
c = socket.create_connection(("127.0.0.1", $SPORT)); b = b"x" * (256 << 10)
while True:
    c.sendall(b); time.sleep(0.012)
PY
"$TMP/np27sink" "$TMP/sink.py" &
PIDS+=($!)
python3 "$REPO/tests/e2e/lib/alert_receiver.py" "$HPORT" "$HOOK" &
PIDS+=($!)
e2e_agent "$TMP/agent.log" --interval 200 --event-min-lifetime 500 --name nas
"$NP" --db "$DB" --token-file "$TOK" --hosts-file "$TMP/hosts" record \
    --watch-process np27mover --watch-process np27hog --alert death.quiet=15s --no-alert stall --no-alert host_lost \
    --notify "webhook=http://127.0.0.1:$HPORT/hook" --notify "exec=cat >> '$TMP/exec.jsonl'; echo >> '$TMP/exec.jsonl'" \
    nas=127.0.0.1:$PORT 2>"$TMP/record.log" &
REC=$!
PIDS+=($REC)
sleep 2
for i in 1 2 3; do
    "$TMP/np27mover" "$TMP/mover.py" &
    M=$!
    sleep 3
    say "SIGKILL np27mover ($i of 3, pid $M)"
    kill -KILL $M
    wait $M 2>/dev/null || true
done
say "np27hog allocates past its 64 MiB cgroup"
{
    (
        echo "$BASHPID" >"$CG/cgroup.procs"
        exec "$TMP/np27hog" -c 'import time
a = []
while True:
    a.append(bytearray(2 << 20))
    time.sleep(0.05)'
    ) || true
} 2>/dev/null
alerts_json() { "$NP" --db "$DB" alerts --json 2>/dev/null || echo '{}'; }
until_t=$((SECONDS + 15))
while ((SECONDS < until_t)); do
    [[ $(alerts_json | jq '[.alerts[] | select(.key == "nas/np27mover")][0].count // 0') == 3 ]] && break
    sleep 0.5
done
alerts_json >"$TMP/alerts.json"
# (Other processes of this machine that moved files may have alerts of their own: only
# np27mover's are counted.)
[[ $(jq '[.alerts[] | select(.key == "nas/np27mover")] | length' "$TMP/alerts.json") == 1 ]] || fail "want one death alert"
jq -e '[.alerts[] | select(.key == "nas/np27mover")][0] | .count == 3 and .state == "firing" and (.summary | test("np27mover.*SIGKILL"))' "$TMP/alerts.json" >/dev/null ||
    fail "death alert: $(jq -c '[.alerts[] | select(.key == "nas/np27mover")]' "$TMP/alerts.json")"
say "$(jq -r '.alerts[] | select(.key == "nas/np27mover") | .summary' "$TMP/alerts.json")"
say "waiting for death.quiet (15 s) to resolve it"
until_t=$((SECONDS + 30))
while ((SECONDS < until_t)); do
    [[ -f $HOOK && $(grep -c 'np27mover.*"resolved"' "$HOOK") -ge 1 && -f $TMP/exec.jsonl &&
        $(grep -c 'np27mover.*"resolved"' "$TMP/exec.jsonl") -ge 1 ]] && break
    sleep 1
done
sleep 3
for f in "$HOOK" "$TMP/exec.jsonl"; do
    [[ -f $f ]] || fail "nothing delivered to $f"
    got=$(jq -r 'select(.key == "nas/np27mover") | .state + ":" + (.count | tostring)' "$f" | paste -sd,)
    [[ $got == "firing:1,resolved:3" ]] || fail "$f: $got"
done
jq -e -s 'map(select(.key == "nas/np27mover" and .state == "resolved")) | length == 1 and (.[0].summary | test("np27mover died 3 time"))' "$HOOK" >/dev/null || fail "resolved summary"
until_t=$((SECONDS + 15))
while ((SECONDS < until_t)); do
    alerts_json >"$TMP/alerts.json"
    [[ $(jq '[.alerts[] | select(.key == "nas/np27hog")] | length' "$TMP/alerts.json") == 1 ]] && break
    sleep 0.5
done
jq -e '[.alerts[] | select(.key == "nas/np27hog")] | length == 1 and (.[0].summary | test("OOM killer.*cause: oom"))' \
    "$TMP/alerts.json" >/dev/null || fail "OOM death: $(jq -c '[.alerts[] | select(.key == "nas/np27hog")]' "$TMP/alerts.json")"
say "$(jq -r '.alerts[] | select(.key == "nas/np27hog") | .summary' "$TMP/alerts.json")"
kill -INT $REC
wait $REC || fail "record exited non-zero"
say "FIGURES alerts_death: deaths=3 alerts=1 deliveries_webhook=$(grep -c np27mover "$HOOK") deliveries_exec=$(grep -c np27mover "$TMP/exec.jsonl") took_s=$((SECONDS - start))"
echo "$T: 1 passed, 0 failed"
