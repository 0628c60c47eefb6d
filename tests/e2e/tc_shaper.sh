#!/usr/bin/env bash
# A traffic-control rule is a wall (issue 29): two agents in namespaces over a veth, started
# WITHOUT --link-speed (the veth says 10000 Mb/s), the sender's side shaped with tc.
#   tbf 200mbit                      → `test net` and `report` name the shaper on src/vsrc at 200 Mbit/s
#   htb: 1:10 200mbit for the test port (u32 filter), default 1:20 at 5gbit
#                                    → the flow rides class 1:10 at 200 Mbit/s (by its rate:
#                                      the agents do not report their own test stream's
#                                      connection, so its port cannot be matched to the filter
#                                      the agent reads; analysis unit tests cover the match)
#   no qdisc                         → no shaper named
# Each phase has its own pair of agents (one test a minute per agent) and its own store.
#
#   tests/e2e/tc_shaper.sh           build (release) and run; needs root
set -euo pipefail
E2E_NAME=tc_shaper
# shellcheck source=tests/e2e/lib/base.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib/base.sh"
# shellcheck source=tests/e2e/lib/netns.sh
source "$REPO/tests/e2e/lib/netns.sh"
NN_TAG=tc_shaper
[[ $(id -u) == 0 ]] || e2e_skip tc_shaper "needs root for network namespaces"
for c in jq tc; do command -v "$c" >/dev/null || nn_fail "$c is missing"; done
nn_binaries
nn_setup tc_shaper
T=$NN_TMP
show() { cat "$T"/*.json "$T"/*.err 2>/dev/null | tail -60; tail -n 5 "$T"/agent-*.log; }
NN_ON_FAIL=show

nn_host src
nn_host dst
nn_link src vsrc 10.252.0.1 dst vdst 10.252.0.2
tc_src() { ip netns exec "${NN_NS[src]}" tc "$@" || nn_fail "tc $*"; }

# start_pair PHASE PORT: agents on src and dst listening on PORT, test port PORT+1.
start_pair() {
    local phase=$1 port=$2 hv h a
    for hv in src:10.252.0.1 dst:10.252.0.2; do
        h=${hv%%:*} a=${hv#*:}
        nn_bg "$h" "$T/agent-$phase-$h.out" "$AGENT" --listen "$a:$port" --test-port $((port + 1)) \
            --allow-tests --token-file "$T/token" --name "$h" --interval 500 --nice 0 \
            --log-file "$T/agent-$phase-$h.log"
        nn_wait_port "$h" "$a" "$port" || nn_fail "agent of $phase on $h"
    done
}

# run_phase PHASE PORT: `test net` src → dst, then `report --json` over the same store.
run_phase() {
    local phase=$1 port=$2
    ip netns exec "${NN_NS[src]}" "$NASPROBE" --db "$T/$phase.db" --token-file "$T/token" test net \
        src=10.252.0.1:"$port" dst=10.252.0.2:"$port" --seconds 5 --streams 1 --json \
        >"$T/$phase-net.json" 2>"$T/$phase-net.err" ||
        nn_fail "$phase: test net failed: $(cat "$T/$phase-net.err")"
    "$NASPROBE" --db "$T/$phase.db" report --json >"$T/$phase-report.json" 2>"$T/$phase-report.err" ||
        nn_fail "$phase: report failed: $(cat "$T/$phase-report.err")"
    nn_log "$phase: $(jq -r '.results[0] | "\(.mbit_s) Mbit/s; wall \(.wall.resource) \(.wall.host) \(.wall.device)"' "$T/$phase-net.json")"
    nn_log "$phase: test net says: $(jq -r .verdict "$T/$phase-net.json")"
    nn_log "$phase: report says: $("$NASPROBE" --db "$T/$phase.db" report 2>&1 | grep -m1 '^Verdict')"
}

# The sentences of a report: every string under its verdict and walls, one per line.
report_text() { jq -r '[.. | strings] | .[]' "$1"; }

# shaped PHASE NET_SENTENCE REPORT_SENTENCE: the run was capped near 200 Mbit/s, `test net` names
# src's vsrc as the wall with NET_SENTENCE, and the report says REPORT_SENTENCE; its verdict line
# says the NIC is at its traffic-control cap.
shaped() {
    local p=$1
    jq -e '.results[0].mbit_s >= 150 and .results[0].mbit_s <= 205' "$T/$p-net.json" >/dev/null ||
        nn_fail "$p: $(jq .results[0].mbit_s "$T/$p-net.json") Mbit/s, want 150-205"
    jq -e '.results[0].wall | .resource == "nic" and .host == "src" and .device == "vsrc"' \
        "$T/$p-net.json" >/dev/null || nn_fail "$p: test net does not name src's vsrc"
    jq -r .verdict "$T/$p-net.json" | grep -qF "$2" || nn_fail "$p: test net does not say: $2"
    # Not grep -q: with pipefail, grep leaving at the first match gives jq a SIGPIPE once the
    # report is larger than a pipe buffer (copies[] repeats the verdict per copy).
    report_text "$T/$p-report.json" | grep -F "$3" >/dev/null || nn_fail "$p: report does not say: $3"
    # The verdict line names the cap, not the link (the link is 50 times the flow).
    "$NASPROBE" --db "$T/$p.db" report 2>&1 | grep -m1 '^Verdict' |
        grep -qF "the wall is on src: NIC vsrc at" || nn_fail "$p: the report's verdict line does not name src's vsrc"
    "$NASPROBE" --db "$T/$p.db" report 2>&1 | grep -m1 '^Verdict' | grep -qF "of its traffic-control cap." ||
        nn_fail "$p: the report's verdict line does not say the NIC is at its traffic-control cap"
}

# --- tbf ------------------------------------------------------------------------------------------
tc_src qdisc add dev vsrc root tbf rate 200mbit burst 64kb latency 50ms
start_pair tbf 7451
run_phase tbf 7451
shaped tbf "traffic control on vsrc caps egress at 200 Mbit/s (tbf); the link is 10000 Mb/s" \
    "traffic control on vsrc caps egress at 200 Mbit/s (tbf)"
tc_src qdisc del dev vsrc root

# --- htb with a class for the test port -----------------------------------------------------------
tc_src qdisc add dev vsrc root handle 1: htb default 20 r2q 2000
tc_src class add dev vsrc parent 1: classid 1:1 htb rate 5gbit
tc_src class add dev vsrc parent 1:1 classid 1:10 htb rate 200mbit ceil 200mbit
tc_src class add dev vsrc parent 1:1 classid 1:20 htb rate 5gbit
tc_src filter add dev vsrc parent 1: protocol ip prio 1 u32 match ip dport 7462 0xffff flowid 1:10
start_pair htb 7461
run_phase htb 7461
shaped htb "traffic control on vsrc shapes egress with caps 200 Mbit/s..5000 Mbit/s (htb); the flow rides near class 1:10 at 200 Mbit/s" \
    "class 1:10 at 200 Mbit/s"
tc_src qdisc del dev vsrc root

# --- unshaped -------------------------------------------------------------------------------------
start_pair free 7471
run_phase free 7471
jq -e '.results[0].mbit_s > 400' "$T/free-net.json" >/dev/null || nn_fail "unshaped: too slow"
if grep -q "traffic control" "$T/free-net.json" "$T/free-report.json"; then
    nn_fail "unshaped: a shaper is named"
fi
nn_log "OK in $((SECONDS - START)) s"
echo "tc_shaper: 1 passed, 0 failed"
