#!/usr/bin/env bash
# End-to-end (issue 15): who holds the flow back when no host resource is full, from the flow's
# own TCP connections (sock_diag tcp_info: busy / rwnd_limited / sndbuf_limited) as two real
# agents sample them, told by `nasprobe report --json` after `nasprobe record`:
#
#  (a) a receiver on dst that reads 64 KiB then sleeps 12 ms (0.5 ms of it work) (about 5 MB/s; the sender on src
#      writes as fast as it can): `bottleneck.resource` `app` on dst naming the receiver's comm,
#      `flow.limited_by` `receiver`, the evidence giving the rwnd_limited share;
#  (b) a sender on src that writes 64 KiB then sleeps 12 ms, work included (the receiver reads as fast as it
#      can): `app` on src naming the sender, `flow.limited_by` `sender`;
#  (c) a bulk flow through a router whose token-bucket shaper drops what overflows its queue (no
#      netem on this kernel): `bottleneck.resource` `network`, `flow.limited_by` `network`, the
#      evidence counting the retransmitted segments.
#
# Two "hosts" (network + pid namespaces, tests/e2e/lib/netns.sh) joined by a veth pair
# (10.249.0.1/24 in src, 10.249.0.2/24 in dst), and for (c) through a third one routing between
# them; the collector runs in src's network namespace.
# The workload programs are python3 under names of their own (symlinks np15rd, np15wr), so
# each agent sees its host's few processes only. Each phase has its own database and the
# report covers that phase only (--since).
#
#   tests/e2e/flow_limit.sh           build (debug) and run; needs root (else skipped; a
#                                     failure under CI=true)
#   NASPROBE_BIN_DIR=DIR ...          use nasprobe and nasprobe-agent from DIR, no build
#   NASPROBE_KEEP=1 ...               keep the temp folder
set -euo pipefail
E2E_NAME=flow_limit
# shellcheck source=tests/e2e/lib/base.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib/base.sh"
[[ $(id -u) == 0 ]] || e2e_skip flow_limit "needs root (network and pid namespaces)"
# shellcheck source=tests/e2e/lib/netns.sh
source "$REPO/tests/e2e/lib/netns.sh"
NN_TAG=flow_limit
for c in ip tc jq python3 unshare nsenter sysctl; do command -v "$c" >/dev/null || nn_fail "$c missing (scripts/setup installs it)"; done
e2e_build debug nasprobe nasprobe-agent
e2e_bins nasprobe nasprobe-agent
NASPROBE="$BIN/nasprobe"
AGENT="$BIN/nasprobe-agent"

nn_setup flow_limit
T=$NN_TMP
PY="$(python3 -c 'import os, sys; print(os.path.realpath(sys.executable))')"
ln -s "$PY" "$T/np15rd"
ln -s "$PY" "$T/np15wr"
show() {
    for j in "$T"/*.json; do
        [[ -e $j ]] || continue
        echo "--- $j"
        jq -c '{flow, bottleneck: (.bottleneck | {host, resource, process, utilization, evidence})}' "$j" 2>/dev/null || cat "$j"
    done
    tail -n 5 "$T"/agent-*.log "$T"/*.err 2>/dev/null
}
NN_ON_FAIL=show

nn_host src
nn_host dst
nn_link src vsrc 10.249.0.1 dst vdst 10.249.0.2
# For (c), made before the agents start so that their inventories hold these NICs:
nn_host mid
nn_link src vmid 10.248.0.1 mid vmsrc 10.248.0.254
nn_link mid vmdst 10.248.1.254 dst vdmid 10.248.1.2
ip netns exec "${NN_NS[mid]}" sysctl -qw net.ipv4.ip_forward=1 || nn_fail "forwarding on mid"
ip -n "${NN_NS[src]}" route add 10.248.1.0/24 via 10.248.0.254 || nn_fail "route on src"
ip -n "${NN_NS[dst]}" route add 10.248.0.0/24 via 10.248.1.254 || nn_fail "route on dst"
ip netns exec "${NN_NS[mid]}" tc qdisc add dev vmdst root tbf rate 40mbit burst 16kb latency 10ms ||
    nn_fail "tc tbf on mid"
nn_agent src 10.249.0.1 --interval 500 --nice 0
nn_agent dst 10.249.0.2 --interval 500 --nice 0

# Both sides checksum each block and work on it for 0.5 ms (the slow side before its pause): a
# few % of a core, far from a full one, but enough for the agent's busiest-process list (the
# agent samples the connections of its busiest processes; a pure sleeper would not be there).
WORK='import hashlib, time
def work(b):
    hashlib.sha256(b).digest()
    t = time.perf_counter() + 0.0005
    while time.perf_counter() < t: pass
'
# A reader on $3:$2 that takes 64 KiB at a time (MSG_WAITALL), sleeping $1 s between reads
# (0: none).
READER="$WORK"'
import socket, sys
pause = float(sys.argv[1])
s = socket.socket(); s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
s.bind((sys.argv[3], int(sys.argv[2]))); s.listen(1)
c, _ = s.accept()
while True:
    b = c.recv(1 << 16, socket.MSG_WAITALL)
    if not b: break
    work(b)
    if pause: time.sleep(pause)'
# A writer to $4:$2 of 64 KiB at a time, sleeping $1 s between writes (0: none), for $3 s.
WRITER="$WORK"'
import socket, sys
pause = float(sys.argv[1])
c = socket.create_connection((sys.argv[4], int(sys.argv[2])))
b = b"x" * (1 << 16)
end = time.time() + float(sys.argv[3])
while time.time() < end:
    c.sendall(b)
    work(b)
    if pause: time.sleep(pause)'

# phase NAME READ_PAUSE WRITE_PAUSE PORT [ADDR]: 18 s of the flow to the reader on dst's ADDR
# (10.249.0.2) under `nasprobe record`, then the report of those seconds in $T/NAME.json.
phase() {
    local name=$1 rpause=$2 wpause=$3 port=$4 addr=${5:-10.249.0.2} rec
    ip netns exec "${NN_NS[src]}" "$NASPROBE" --db "$T/$name.db" --token-file "$T/token" record \
        --duration 24s src=10.249.0.1:7451 dst=10.249.0.2:7451 >"$T/record-$name.log" 2>&1 &
    rec=$!
    NN_BG_PIDS+=("$rec")
    nn_bg dst "$T/reader-$name.err" "$T/np15rd" -c "$READER" "$rpause" "$port" "$addr"
    nn_wait_port dst "$addr" "$port" || nn_fail "$name: the reader does not listen"
    sleep 1
    nn_bg src "$T/writer-$name.err" "$T/np15wr" -c "$WRITER" "$wpause" "$port" 18 "$addr"
    local wr=$NN_PID
    wait "$wr" || nn_fail "$name: the writer failed: $(cat "$T/writer-$name.err")"
    wait "$rec" || true
    ip netns exec "${NN_NS[src]}" "$NASPROBE" --db "$T/$name.db" --token-file "$T/token" report \
        --since 26s --json >"$T/$name.json" 2>"$T/report-$name.err" ||
        nn_fail "$name: report failed: $(cat "$T/report-$name.err")"
    ip netns exec "${NN_NS[src]}" "$NASPROBE" --db "$T/$name.db" --token-file "$T/token" report \
        --since 26s >"$T/$name.txt" 2>>"$T/report-$name.err" ||
        nn_fail "$name: text report failed: $(cat "$T/report-$name.err")"
    jq -c '{flow: (.flow | {from, to, sustained_mb_s, limited_by, limit_evidence}), bottleneck: (.bottleneck | {host, resource, process, utilization})}' "$T/$name.json"
}

# quiet_phase NAME ARGS...: `phase`, again (at most twice more) when the verdict is cpu_all
# while the host's own processes are far from it: this machine's other work (outside these pid
# namespaces, where the agents do not see it) filled every core, which the hosts' /proc/stat
# shares. The report kept is $T/NAME.json of the last try.
quiet_phase() {
    local name=$1 try
    shift
    for try in 1 2 3; do
        phase "$name-$try" "$@"
        cp "$T/$name-$try.json" "$T/$name.json"
        cp "$T/$name-$try.txt" "$T/$name.txt"
        jq -e '.bottleneck.resource == "cpu_all" and ([.hosts[].top_processes[].cpu_cores] | add // 0) < 0.5' \
            "$T/$name.json" >/dev/null || return 0
        nn_log "$name: every core busy with work outside these hosts (cpu_all, their own processes under half a core): again"
    done
}

# expect_app NAME WHAT LIMITED_BY HOST PROCESS EVIDENCE: the report of phase NAME has a flow of
# about 5 MB/s limited by LIMITED_BY, `app` on HOST naming PROCESS, a limit_evidence sentence
# matching the jq regex EVIDENCE, and the text report's verdict line saying it.
expect_app() {
    local name=$1 what=$2 by=$3 host=$4 proc=$5 re=$6 J="$T/$1.json" side=sending
    [[ $by == receiver ]] && side=receiving
    grep -q "^Verdict: the $side application \`$proc\` on $host holds the flow back" "$T/$name.txt" ||
        nn_fail "$what: text verdict '$(grep '^Verdict' "$T/$name.txt")'"
    jq -e '.flow.sustained_mb_s >= 2 and .flow.sustained_mb_s <= 8' "$J" >/dev/null ||
        nn_fail "$what: flow $(jq -c '.flow.sustained_mb_s' "$J") MB/s, want about 5"
    jq -e --arg by "$by" '.flow.limited_by == $by' "$J" >/dev/null ||
        nn_fail "$what: flow.limited_by $(jq -c .flow.limited_by "$J"), want $by"
    jq -e --arg h "$host" --arg p "$proc" \
        '.bottleneck.resource == "app" and .bottleneck.host == $h and .bottleneck.process == $p' "$J" >/dev/null ||
        nn_fail "$what: bottleneck $(jq -c '.bottleneck | {host, resource, process}' "$J"), want app on $host, $proc"
    jq -e --arg re "$re" '[.flow.limit_evidence[] | test($re)] | any' "$J" >/dev/null ||
        nn_fail "$what: no evidence sentence matches /$re/"
    # Both agents' clocks were measured over their handshakes; they are this machine's clock,
    # so the true offset is 0 and must lie within the stated precision (+1 ms of rounding).
    jq -e '[.hosts[] | (.clock_offset_ms | type == "number") and .clock_offset_precision_ms < 1000
            and (if .clock_offset_ms < 0 then -.clock_offset_ms else .clock_offset_ms end) <= .clock_offset_precision_ms + 1]
        | all and length == 2' \
        "$J" >/dev/null || nn_fail "$what: clock offsets $(jq -c '[.hosts[] | {name, clock_offset_ms, clock_offset_precision_ms}]' "$J")"
    nn_log "$what: $(jq -r '.flow.limit_evidence[0]' "$J")"
}

# --- (a) the receiver does not read -----------------------------------------------------------
quiet_phase slow-reader 0.0115 0 5001
expect_app slow-reader "(a) slow reader" receiver dst np15rd \
    "waited on the receiver.s window [0-9]+%|[0-9.]+ [KM]iB unread in its receive queue"

# --- (b) the sender does not write ------------------------------------------------------------
quiet_phase slow-writer 0 0.0115 5002
expect_app slow-writer "(b) slow writer" sender src np15wr "had data to send [0-9]+% of the time"

# --- (c) the path drops: a shaper in between ---------------------------------------------------
# The router "mid" set up above (no agent: a switch on the way) between src (10.248.0.1) and dst (10.248.1.2);
# this kernel has no netem, so a token bucket on mid's egress to dst (40 Mbit/s, a 10 ms queue)
# stands for a shaper dropping what overflows its queue: real losses for src's TCP (a shaper on
# src's own NIC would push back on its socket instead of dropping). The veths say 10 Gb/s, so no
# local link is near its ceiling; both programs move data as fast as they can.
quiet_phase lossy-path 0 0 5003 10.248.1.2
J="$T/lossy-path.json"
jq -e '.flow.limited_by == "network"' "$J" >/dev/null ||
    nn_fail "lossy path: flow.limited_by $(jq -c .flow.limited_by "$J"), want network"
grep -q '^Verdict: the network between src and dst holds the flow back' "$T/lossy-path.txt" ||
    nn_fail "lossy path: text verdict '$(grep '^Verdict' "$T/lossy-path.txt")'"
jq -e '.bottleneck.resource == "network" and .bottleneck.host == "src"' "$J" >/dev/null ||
    nn_fail "lossy path: bottleneck $(jq -c '.bottleneck | {host, resource, process}' "$J"), want network (src's connection)"
# The shaper drops what overflows its queue, but whether TCP overflows it within the phase
# depends on how far cubic has grown: the count must be there, it may be 0.
jq -e '[.flow.limit_evidence[] | test("[0-9]+ retransmitted segments")] | any' "$J" >/dev/null ||
    nn_fail "lossy path: the evidence does not count the retransmitted segments"
nn_log "(c) $(jq -r '.flow.limit_evidence | join(" / ")' "$J")"
nn_log "OK ($((SECONDS - START)) s)"
echo "flow_limit: 3 passed, 0 failed"
