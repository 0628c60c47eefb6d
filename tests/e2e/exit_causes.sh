#!/usr/bin/env bash
# End-to-end (issue 15): how real processes end, seen by a real native agent (root, in the
# initial pid and network namespaces, where the kernel's process connector answers) and told by
# `nasprobe events --json`:
#
#  1. with the connector: a process killed with SIGKILL by another process on a timer (a
#     "watchdog"), restarted twice (three deaths) → its exits carry signal SIGKILL,
#     exit_seen "kernel", and its pattern has cause `killed`; a program that exits with status 3
#     → exit_code 3, a pattern (it runs twice) with cause `error_exit`; a process in a memory
#     cgroup (64 MiB) that allocates past the limit, twice → oom_killed true (from the kernel
#     log), cause `oom`, and a kernel_message event naming its pid;
#  2. the peer: a TCP client whose server is killed (SIGKILL from a watchdog), twice, with two
#     agents ("src" and "dst", both recorded): the client's deaths get cause `peer`, the
#     evidence names the server and how it ended, matched through the per-connection TCP
#     records (sock_diag) by address and port pairs; the server's own deaths stay `killed`. (Both
#     agents run in the initial namespaces, where the kernel gives exit status, so both see
#     both processes; the tie goes across hosts all the same);
#  3. the same agent with --no-connector (the fallback when the kernel refuses it): the same
#     watchdog kills give exits with exit_seen "scan", exit_code and signal null, cause
#     `unknown`, and the agent still samples.
#
# The workload programs have names of their own (symlinks np15victim → sleep, np15exit → sh),
# so the other processes of this machine do not matter. Loopback only.
#
#   tests/e2e/exit_causes.sh          build (debug) and run; needs root (else skipped; a
#                                     failure under CI=true)
#   NASPROBE_BIN_DIR=DIR ...          use nasprobe and nasprobe-agent from DIR, no build
#   NASPROBE_KEEP=1 ...               keep the temp folder
set -euo pipefail
E2E_NAME=exit_causes
# shellcheck source=tests/e2e/lib/skip.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib/skip.sh"
[[ $(id -u) == 0 ]] || e2e_skip exit_causes "needs root (the process connector needs CAP_NET_ADMIN)"
# shellcheck source=tests/e2e/lib/common.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib/common.sh"
command -v jq >/dev/null || fail "jq missing (scripts/setup installs it)"

T="$(e2e_tmpdir exit-causes)"
PIDS=()
cleanup() {
    for p in "${PIDS[@]}"; do kill -9 "$p" 2>/dev/null || true; done
    wait 2>/dev/null || true
    [[ -z $CG ]] || rmdir "$CG" 2>/dev/null || true
    if [[ -n ${NASPROBE_KEEP:-} ]]; then say "kept $T"; else rm -rf "$T"; fi
}
trap cleanup EXIT
(umask 077 && od -An -tx1 -N32 /dev/urandom | tr -d ' \n' >"$T/token" && echo >>"$T/token")
ln -s "$(command -v sleep)" "$T/np15victim"
ln -s "$(command -v sh)" "$T/np15exit"
# (the interpreter itself: python3 on PATH may be a wrapper script, e.g. a pyenv shim)
ln -s "$(python3 -c 'import os, sys; print(os.path.realpath(sys.executable))')" "$T/np15hog"
ln -s "$T/np15hog" "$T/np15srv"
ln -s "$T/np15hog" "$T/np15cli"

# A memory cgroup of 64 MiB (v1 hierarchy, or v2 with the memory controller), no swap.
CG=""
if [[ -d /sys/fs/cgroup/memory ]]; then
    CG=/sys/fs/cgroup/memory/nasprobe-e2e-$$
    mkdir "$CG"
    echo 64M >"$CG/memory.limit_in_bytes"
    echo 64M >"$CG/memory.memsw.limit_in_bytes" 2>/dev/null || true
else
    for root in /sys/fs/cgroup /sys/fs/cgroup/unified; do
        if grep -qw memory "$root/cgroup.controllers" 2>/dev/null; then
            grep -qw memory "$root/cgroup.subtree_control" || echo +memory >"$root/cgroup.subtree_control"
            CG=$root/nasprobe-e2e-$$
            mkdir "$CG"
            echo 64M >"$CG/memory.max"
            echo 0 >"$CG/memory.swap.max" 2>/dev/null || true
            break
        fi
    done
fi
[[ -n $CG ]] || fail "no memory cgroup controller (v1 or v2) to run the OOM case in"

# One run: an agent (extra flags in $@) on a free loopback port, `nasprobe record` of it, the
# workload, then the report of the run as JSON in $T/$tag.json.
run() {
    local tag=$1
    shift
    local port=$((20000 + RANDOM % 30000)) db="$T/$tag.db"
    "$AGENT" --listen "127.0.0.1:$port" --token-file "$T/token" --name "$tag" \
        --log-file "$T/agent-$tag.log" --interval 250 --event-min-lifetime 500 --nice 0 "$@" &
    local agent=$!
    PIDS+=("$agent")
    local i
    for i in $(seq 50); do
        grep -q "listening on" "$T/agent-$tag.log" 2>/dev/null && break
        sleep 0.1
    done
    grep -q "listening on" "$T/agent-$tag.log" || fail "$tag: agent does not listen: $(cat "$T/agent-$tag.log")"
    "$NP" --db "$db" --token-file "$T/token" record --duration 30s "$tag=127.0.0.1:$port" \
        >"$T/record-$tag.log" 2>&1 &
    local rec=$!
    PIDS+=("$rec")
    sleep 1
    # The watchdog: starts the victim, kills it with SIGKILL 2 s later, three times.
    (
        for i in 1 2 3; do
            "$T/np15victim" 1000 &
            v=$!
            (sleep 2 && kill -KILL "$v") &
            wait "$v" 2>/dev/null || true
            sleep 0.3
        done
    )
    # A program that fails with status 3, twice.
    for i in 1 2; do "$T/np15exit" -c 'sleep 1.2; exit 3' || true; done
    # A process that allocates 2 MiB every 50 ms in the 64 MiB cgroup, twice.
    # (In braces with stderr away: bash's own "Killed" line for it is expected.)
    for i in 1 2; do
        {
            (
                echo "$BASHPID" >"$CG/cgroup.procs"
                exec "$T/np15hog" -c 'import time
a = []
while True:
    a.append(bytearray(2 << 20))
    time.sleep(0.05)'
            ) || true
        } 2>/dev/null
    done
    sleep 1.5
    kill -TERM "$rec" 2>/dev/null || true
    wait "$rec" 2>/dev/null || true
    kill -TERM "$agent"
    wait "$agent" 2>/dev/null || true
    "$NP" --db "$db" events --since 5m --json >"$T/$tag.json" 2>"$T/events-$tag.err" ||
        fail "$tag: nasprobe events failed: $(cat "$T/events-$tag.err")"
}

show() {
    echo "---- $1: events of the workload"
    jq -c '.events[] | select(.kind == "process_exit" and (.process | startswith("np15")))' "$T/$1.json"
    echo "---- $1: patterns"
    jq -c '.patterns[] | select(.process | startswith("np15")) | {process, cause, cause_evidence}' "$T/$1.json"
    echo "---- $1: agent log"
    cat "$T/agent-$1.log"
}

# --- 1. with the process connector -------------------------------------------------------
run kernel
grep -q "process connector on" "$T/agent-kernel.log" || {
    show kernel
    fail "the agent did not get the process connector (root in the initial namespaces?)"
}
J="$T/kernel.json"
victims=$(jq '[.events[] | select(.kind == "process_exit" and .process == "np15victim")]' "$J")
n=$(jq 'length' <<<"$victims")
[[ $n == 3 ]] || { show kernel; fail "kernel: $n exits of np15victim, want 3"; }
bad=$(jq '[.[] | select(.signal != "SIGKILL" or .exit_code != null or .exit_seen != "kernel"
    or .core_dumped != false or .oom_killed != false)] | length' <<<"$victims")
[[ $bad == 0 ]] || { show kernel; fail "kernel: np15victim exits without SIGKILL/kernel"; }
jq -e '[.events[] | select(.kind == "process_exit" and .process == "np15victim")][0].detail
    | test("^died by SIGKILL after [0-9]+ s$")' "$J" >/dev/null || { show kernel; fail "kernel: exit text"; }
cause=$(jq -r '[.patterns[] | select(.process == "np15victim")][0].cause // "none"' "$J")
[[ $cause == killed ]] || { show kernel; fail "kernel: np15victim pattern cause '$cause', want killed"; }
jq -e '[.patterns[] | select(.process == "np15victim")][0].cause_evidence[0] | test("^3 of 3 deaths died by SIGKILL")' \
    "$J" >/dev/null || { show kernel; fail "kernel: cause evidence"; }
codes=$(jq -c '[.events[] | select(.kind == "process_exit" and .process == "np15exit") | [.exit_code, .signal, .exit_seen]]' "$J")
[[ $codes == '[[3,null,"kernel"],[3,null,"kernel"]]' ]] || { show kernel; fail "kernel: np15exit exits $codes, want status 3 twice"; }
cause=$(jq -r '[.patterns[] | select(.process == "np15exit")][0].cause // "none"' "$J")
[[ $cause == error_exit ]] || { show kernel; fail "kernel: np15exit pattern cause '$cause', want error_exit"; }
jq -e '[.events[] | select(.kind == "exit_watch")][0].detail | test("process connector")' "$J" >/dev/null ||
    { show kernel; fail "kernel: no exit_watch event naming the connector"; }
hogs=$(jq -c '[.events[] | select(.kind == "process_exit" and .process == "np15hog") | [.oom_killed, .signal, .exit_seen]]' "$J")
[[ $hogs == '[[true,"SIGKILL","kernel"],[true,"SIGKILL","kernel"]]' ]] || { show kernel; fail "kernel: np15hog exits $hogs, want two OOM kills"; }
cause=$(jq -r '[.patterns[] | select(.process == "np15hog")][0].cause // "none"' "$J")
[[ $cause == oom ]] || { show kernel; fail "kernel: np15hog pattern cause '$cause', want oom"; }
jq -e '[.events[] | select(.kind == "process_exit" and .process == "np15hog")][0].detail
    | test("^killed by the OOM killer \\(SIGKILL\\) after")' "$J" >/dev/null || { show kernel; fail "kernel: OOM exit text"; }
# The kill's kernel line as an event, naming the pid: unless other work on this machine filled
# the agent's kernel-message rate limit (12 a minute) first, which its log then says.
pids=$(jq -c '[.events[] | select(.kind == "process_exit" and .process == "np15hog") | .pid]' "$J")
named=$(jq --argjson ps "$pids" '[.events[] | select(.kind == "kernel_message" and (.pid as $p | $ps | index($p))
    and (.detail | test("Killed process|oom-kill:")))] | length' "$J")
if [[ $named == 0 ]]; then
    grep -q "kernel messages: more than 12 a minute" "$T/agent-kernel.log" ||
        { show kernel; fail "kernel: no kernel_message naming the OOM-killed pids $pids, and no rate limit"; }
    say "kernel: the OOM lines were rate-limited (other OOM kills on this machine); oom_killed still set"
fi
say "connector: 3 x SIGKILL (cause killed), 2 x status 3 (cause error_exit), 2 x OOM (cause oom)"

# --- 2. the peer ---------------------------------------------------------------------------
port=$((20000 + RANDOM % 30000))
run_peer() {
    local pa=$((port + 1)) pb=$((port + 2)) i
    for tag in src dst; do
        local p=$pa
        [[ $tag == dst ]] && p=$pb
        "$AGENT" --listen "127.0.0.1:$p" --token-file "$T/token" --name "$tag" \
            --log-file "$T/agent-$tag.log" --interval 250 --event-min-lifetime 500 --nice 0 &
        PIDS+=("$!")
    done
    for i in $(seq 50); do
        grep -q "listening on" "$T/agent-src.log" 2>/dev/null && grep -q "listening on" "$T/agent-dst.log" 2>/dev/null && break
        sleep 0.1
    done
    "$NP" --db "$T/peer.db" --token-file "$T/token" record --duration 40s "src=127.0.0.1:$pa" \
        "dst=127.0.0.1:$pb" >"$T/record-peer.log" 2>&1 &
    local rec=$!
    PIDS+=("$rec")
    sleep 1
    for i in 1 2; do
        # The server reads as fast as it can; the client writes as fast as it can (both busy:
        # the agents report the connections of their busiest processes).
        "$T/np15srv" -c 'import socket, sys
s = socket.socket(); s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
s.bind(("127.0.0.1", int(sys.argv[1]))); s.listen(1)
c, _ = s.accept()
while c.recv(1 << 16): pass' "$port" &
        local srv=$!
        sleep 0.3
        "$T/np15cli" -c 'import socket, sys
c = socket.create_connection(("127.0.0.1", int(sys.argv[1])))
b = b"x" * (1 << 16)
while True: c.sendall(b)' "$port" 2>/dev/null &
        local cli=$!
        sleep 3
        kill -KILL "$srv"
        wait "$srv" 2>/dev/null || true
        wait "$cli" 2>/dev/null || true
        sleep 0.5
    done
    sleep 1.5
    kill -TERM "$rec" 2>/dev/null || true
    wait "$rec" 2>/dev/null || true
    "$NP" --db "$T/peer.db" events --since 5m --json >"$T/peer.json" 2>"$T/events-peer.err" ||
        fail "peer: nasprobe events failed: $(cat "$T/events-peer.err")"
}
run_peer
J="$T/peer.json"
showp() {
    echo "---- peer: exits and patterns of the workload"
    jq -c '.events[] | select(.kind == "process_exit" and (.process | startswith("np15")))' "$J"
    jq -c '.patterns[] | select(.process | startswith("np15")) | {host, process, cause, cause_evidence, deaths: [.deaths[] | {at, cause}]}' "$J"
    tail -n 3 "$T"/agent-src.log "$T"/agent-dst.log
}
cli_exit=$(jq -c '[.events[] | select(.kind == "process_exit" and .process == "np15cli" and .host == "src") | [.exit_code, .exit_seen]] | unique' "$J")
[[ $cli_exit == '[[1,"kernel"]]' ]] || { showp; fail "peer: client exits $cli_exit, want status 1 (kernel)"; }
cause=$(jq -r '[.patterns[] | select(.process == "np15cli" and .host == "src")][0].cause // "none"' "$J")
[[ $cause == peer ]] || { showp; fail "peer: client pattern cause '$cause', want peer"; }
jq -e '[.patterns[] | select(.process == "np15cli" and .host == "src")][0].cause_evidence[0]
    | test("the peer `np15srv` \\(pid [0-9]+\\) on dst ended [0-9.]+ m?s earlier: died by SIGKILL")' "$J" >/dev/null ||
    { showp; fail "peer: evidence does not name the server's end"; }
# Both agents' clocks were measured over their handshakes: the timeline says how exact it is.
jq -e '[.patterns[] | select(.process == "np15cli" and .host == "src")][0].cause_evidence[0]
    | test("died by SIGKILL after [^)]*\\(clocks matched to within ±[0-9]+ ms by the collector\\)")' "$J" >/dev/null ||
    { showp; fail "peer: the timeline does not give the clocks' precision"; }
cause=$(jq -r '[.patterns[] | select(.process == "np15srv" and .host == "dst")][0].cause // "none"' "$J")
[[ $cause == killed ]] || { showp; fail "peer: server pattern cause '$cause', want killed"; }
say "peer: the client's 2 deaths have cause peer naming the server killed by SIGKILL"

# --- 3. the fallback: --no-connector -----------------------------------------------------
run scan --no-connector
J="$T/scan.json"
grep -q "process connector off (--no-connector)" "$T/agent-scan.log" || { show scan; fail "scan: log does not say the connector is off"; }
victims=$(jq '[.events[] | select(.kind == "process_exit" and .process == "np15victim")]' "$J")
n=$(jq 'length' <<<"$victims")
[[ $n == 3 ]] || { show scan; fail "scan: $n exits of np15victim, want 3"; }
bad=$(jq '[.[] | select(.signal != null or .exit_code != null or .exit_seen != "scan")] | length' <<<"$victims")
[[ $bad == 0 ]] || { show scan; fail "scan: exits with a status or not seen by scan"; }
cause=$(jq -r '[.patterns[] | select(.process == "np15victim")][0].cause // "none"' "$J")
[[ $cause == unknown ]] || { show scan; fail "scan: cause '$cause', want unknown"; }
[[ $(jq '[.events[] | select(.kind == "exit_watch")][0].detail | test("scanning /proc")' "$J") == true ]] ||
    { show scan; fail "scan: no exit_watch event naming the scan"; }
say "fallback: 3 exits seen by scan, null codes, cause unknown"
say "OK ($((SECONDS - START)) s)"
