#!/usr/bin/env bash
# `nasprobe test net` between two agents in network + PID namespaces joined by a veth: shaped
# with tc to 200 Mbit/s (agents told --link-speed 200), one stream must give 150-200 Mbit/s and
# the verdict must name the NIC; unshaped, the same test must name no NIC wall. Then the
# refusals and the collector killed in the middle of a test (the sender stops within a second).
#
#   tests/e2e/test_net.sh              build (release) and run; needs root
set -euo pipefail
E2E_NAME=test_net
# shellcheck source=tests/e2e/lib/base.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib/base.sh"
# shellcheck source=tests/e2e/lib/netns.sh
source "$REPO/tests/e2e/lib/netns.sh"
NN_TAG=test_net
[[ $(id -u) == 0 ]] || e2e_skip test_net "needs root for network namespaces"
for c in jq tc; do command -v "$c" >/dev/null || nn_fail "$c is missing"; done
nn_binaries
nn_setup test_net
T=$NN_TMP
MBIT=200
show() { cat "$T"/net*.json "$T"/*.err 2>/dev/null | tail -40; tail -n 5 "$T"/agent-*.log; }
NN_ON_FAIL=show

nn_host src
nn_host dst
nn_link src vsrc 10.253.0.1 dst vdst 10.253.0.2
nn_agent src 10.253.0.1 --interval 500 --nice 0 --allow-tests --link-speed vsrc=$MBIT
nn_agent dst 10.253.0.2 --interval 500 --nice 0 --allow-tests --link-speed vdst=$MBIT

# --- shaped ---------------------------------------------------------------------------------------
for hv in src:vsrc dst:vdst; do
    ip netns exec "${NN_NS[${hv%%:*}]}" tc qdisc add dev "${hv#*:}" root tbf rate ${MBIT}mbit \
        burst 64kb latency 50ms || nn_fail "tc on ${hv#*:}"
done
nn_collector src test net src=10.253.0.1:7451 dst=10.253.0.2:7451 --seconds 6 --streams 1,4 \
    --json >"$T/net-shaped.json" 2>"$T/shaped.err" || nn_fail "test net failed: $(cat "$T/shaped.err")"
jq -c '{verdict, results: [.results[] | {streams, mbit_s, retransmits, wall: "\(.wall.resource) \(.wall.host) \(.wall.device)"}]}' "$T/net-shaped.json"
jq -e '.from == "src" and .to == "dst" and (.results | length) == 2' "$T/net-shaped.json" >/dev/null ||
    nn_fail "not two runs src → dst"
jq -e '.results[0].streams == 1 and .results[0].mbit_s >= 150 and .results[0].mbit_s <= 205' \
    "$T/net-shaped.json" >/dev/null || nn_fail "one stream: $(jq .results[0].mbit_s "$T/net-shaped.json") Mbit/s, want 150-200"
jq -e '.results[0].wall.resource == "nic" and (.results[0].wall.device == "vsrc" or .results[0].wall.device == "vdst")' \
    "$T/net-shaped.json" >/dev/null || nn_fail "the shaped run does not name the NIC"
jq -e '[.results[0].hosts[].host] | sort == ["dst", "src"]' "$T/net-shaped.json" >/dev/null ||
    nn_fail "the run does not show both hosts"
nn_log "shaped: $(jq -r .verdict "$T/net-shaped.json")"

# --- unshaped -------------------------------------------------------------------------------------
for hv in src:vsrc dst:vdst; do
    ip netns exec "${NN_NS[${hv%%:*}]}" tc qdisc del dev "${hv#*:}" root
done
# The agents allow one test a minute: wait the rest of it.
sleep 61
nn_collector src test net src=10.253.0.1:7451 dst=10.253.0.2:7451 --seconds 4 --streams 1 \
    --json >"$T/net-free.json" 2>"$T/free.err" || nn_fail "unshaped test net failed: $(cat "$T/free.err")"
jq -c '{verdict, results: [.results[] | {streams, mbit_s, wall: .wall.resource}]}' "$T/net-free.json"
jq -e '.results[0].mbit_s > 400' "$T/net-free.json" >/dev/null || nn_fail "unshaped: too slow"
jq -e '.results[0].wall.resource != "nic"' "$T/net-free.json" >/dev/null ||
    nn_fail "unshaped: a NIC named the wall at $(jq .results[0].mbit_s "$T/net-free.json") Mbit/s, over its stated 200 Mbit/s"
nn_log "unshaped: $(jq -r .verdict "$T/net-free.json")"

# --- refusals and a collector that goes away ------------------------------------------------------
rc=0
nn_collector src test net src=10.253.0.1:7451 dst=10.253.0.2:7451 --seconds 2 --streams 1 \
    >/dev/null 2>"$T/again.err" || rc=$?
((rc != 0)) && grep -q "one test a minute" "$T/again.err" || nn_fail "a second test within a minute: $(cat "$T/again.err")"
nn_log "refused: $(head -1 "$T/again.err")"
nn_host off
nn_link src vsrc2 10.254.0.1 off voff 10.254.0.2
nn_agent off 10.254.0.2 --interval 500 --nice 0
rc=0
nn_collector src test net src=10.253.0.1:7451 off=10.254.0.2:7451 --seconds 2 --streams 1 \
    >/dev/null 2>"$T/off.err" || rc=$?
((rc != 0)) && grep -q "off: the agent refused the test: .*--allow-tests" "$T/off.err" ||
    nn_fail "no --allow-tests on off: $(cat "$T/off.err")"
nn_log "refused: $(head -1 "$T/off.err")"

# The collector killed mid-test: a second pair of agents (fresh: no test yet this minute).
for hv in src:10.253.0.1 dst:10.253.0.2; do
    h=${hv%%:*} a=${hv#*:}
    nn_bg "$h" "$T/agent2-$h.out" "$AGENT" --listen "$a:7461" --test-port 7462 --allow-tests \
        --token-file "$T/token" --name "$h" --interval 500 --log-file "$T/agent2-$h.log"
    nn_wait_port "$h" "$a" 7461 || nn_fail "second agent on $h"
done
ip netns exec "${NN_NS[src]}" "$NASPROBE" --db "$T/kill.db" --token-file "$T/token" test net \
    src=10.253.0.1:7461 dst=10.253.0.2:7461 --seconds 30 --streams 1 >/dev/null 2>&1 &
KPID=$!
for _ in $(seq 100); do
    grep -q "test started" "$T/agent2-src.log" 2>/dev/null && break
    sleep 0.1
done
grep -q "test started" "$T/agent2-src.log" || nn_fail "the test to interrupt did not start"
sleep 2
kill -9 "$KPID"
killed_at=$SECONDS
stopped=""
for _ in $(seq 15); do
    sleep 0.1
    grep -q "test ended after its collector went away" "$T/agent2-src.log" && { stopped=1; break; }
done
[[ -n $stopped ]] || nn_fail "the sender did not stop within 1.5 s of the collector's death"
for _ in $(seq 100); do
    grep -q "test ended after its collector went away" "$T/agent2-dst.log" && break
    sleep 0.1
done
grep -q "test ended after its collector went away" "$T/agent2-dst.log" || nn_fail "the receiver did not stop"
nn_log "collector killed mid-test: the sender stopped within $((SECONDS - killed_at + 1)) s, the receiver too"
nn_log "OK"
echo "test_net: 1 passed, 0 failed"
