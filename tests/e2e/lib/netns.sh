# Two-host setups for the end-to-end tests: each "host" is a network namespace plus its own PID
# namespace and mount namespace (its own /proc from --mount-proc, its own /sys from `ip netns
# exec`, so /sys/class/net lists the namespace's interfaces), joined by a veth pair whose
# addresses exist only inside these namespaces. Source it; do not run it.
#
#   nn_setup TAG                    temp dir ($NN_TMP, kept with NASPROBE_KEEP=1), cleanup trap
#                                   on EXIT/INT/TERM; more directories to remove (always) go in
#                                   NN_EXTRA_DIRS
#   nn_host NAME                    a host: netns "np-TAG-PID-NAME", a pidns whose init is a sleep
#   nn_link A IFA ADDRA B IFB ADDRB veth pair IFA (in A, ADDRA/24) <-> IFB (in B, ADDRB/24)
#   nn_run NAME CMD...              run CMD inside the host (net, mount and pid namespaces)
#   nn_bg NAME LOG CMD...           same, in the background, output to LOG; pid in $NN_PID
#   nn_agent NAME ADDR ARGS...      start nasprobe-agent ($AGENT) there, --name NAME, listening
#                                   on ADDR:7451, token $NN_TMP/token, log $NN_TMP/agent-NAME.log
#   nn_wait_port NAME ADDR PORT     wait (bounded) until something listens on ADDR:PORT there
#   nn_sshd NAME ADDR PORT [LINE..] sshd there (root by key $NN_TMP/id, extra sshd_config LINEs;
#                                   started through NN_SSHD_PREFIX, e.g. (chrt -r 10))
#   nn_binaries                     nasprobe and nasprobe-agent (release, lib/base.sh's e2e_build:
#                                   sourced first) in $NASPROBE and $AGENT
#   nn_cleanup                      kill every process of every host (killing a pidns init kills
#                                   the whole namespace), delete the netns, remove the temp dir
#
# Needs root, iproute2 (ip netns, ip link ... netns), util-linux (unshare, nsenter).
# shellcheck shell=bash

NN_TAG=""
NN_TMP=""
NN_HOSTS=()
declare -A NN_NS NN_INIT NN_UNSHARE
NN_BG_PIDS=()
NN_ON_FAIL=""   # a function name the cleanup runs first when the script fails
NN_EXTRA_DIRS=() # more directories the cleanup removes
NN_OUT="" NN_ERR=""

nn_log() { echo "${NN_TAG}: $*"; }
nn_fail() {
    echo "${NN_TAG}: FAIL: $*" >&2
    exit 1
}

nn_setup() {
    NN_TAG=$1
    NN_TMP="$(mktemp -d "/tmp/nasprobe-$NN_TAG.XXXXXX")"
    # The script's own stdout/stderr, for the cleanup: a signal can arrive while a function's
    # output is redirected to a file.
    exec {NN_OUT}>&1 {NN_ERR}>&2
    trap nn_cleanup EXIT
    trap 'exit 130' INT
    trap 'exit 143' TERM
    (umask 077 && od -An -tx1 -N32 /dev/urandom | tr -d ' \n' >"$NN_TMP/token" && echo >>"$NN_TMP/token")
}

nn_cleanup() {
    local rc=$? h p
    trap - EXIT
    set +e # clean up as much as possible, whatever fails
    [[ -n ${NN_OUT:-} ]] && exec 1>&"$NN_OUT" 2>&"$NN_ERR"
    if ((rc != 0)) && [[ -n $NN_ON_FAIL ]]; then
        "$NN_ON_FAIL" || true
    fi
    for p in "${NN_BG_PIDS[@]}"; do kill "$p" 2>/dev/null || true; done
    for h in "${NN_HOSTS[@]}"; do
        # SIGKILL to a pid namespace's init kills every process in it.
        [[ -n ${NN_INIT[$h]:-} ]] && kill -9 "${NN_INIT[$h]}" 2>/dev/null
        [[ -n ${NN_UNSHARE[$h]:-} ]] && kill -9 "${NN_UNSHARE[$h]}" 2>/dev/null
    done
    for h in "${NN_HOSTS[@]}"; do
        local ns=${NN_NS[$h]}
        ip netns list 2>/dev/null | grep -q "^$ns\b" || continue
        for p in $(ip netns pids "$ns" 2>/dev/null); do kill -9 "$p" 2>/dev/null || true; done
        ip netns del "$ns" 2>/dev/null || true
    done
    for p in "${NN_BG_PIDS[@]}"; do wait "$p" 2>/dev/null || true; done
    ((${#NN_EXTRA_DIRS[@]} == 0)) || rm -rf "${NN_EXTRA_DIRS[@]}"
    if [[ -n ${NASPROBE_KEEP:-} ]]; then
        nn_log "kept $NN_TMP"
    elif [[ -n $NN_TMP ]]; then
        rm -rf "$NN_TMP"
    fi
    exit "$rc"
}

nn_host() {
    local h=$1 ns="np-$NN_TAG-$$-$1" i
    ns=${ns:0:60}
    ip netns add "$ns" || nn_fail "ip netns add $ns"
    NN_HOSTS+=("$h")
    NN_NS[$h]=$ns
    ip -n "$ns" link set lo up
    # The namespace's init: a sleep as pid 1 of a new pid namespace, with /proc remounted for
    # it; `ip netns exec` already gave it a mount namespace with the netns's /sys.
    # Started from a subshell so that this shell does not report its death as a job.
    NN_UNSHARE[$h]="$(
        ip netns exec "$ns" unshare --pid --fork --mount-proc --kill-child sleep infinity \
            </dev/null >/dev/null 2>&1 &
        echo $!
    )"
    for i in $(seq 100); do
        NN_INIT[$h]="$(pgrep -P "${NN_UNSHARE[$h]}" 2>/dev/null | head -n 1 || true)"
        [[ -n ${NN_INIT[$h]} ]] && break
        sleep 0.05
    done
    [[ -n ${NN_INIT[$h]} ]] || nn_fail "no pid namespace init for $h"
}

nn_link() {
    local a=$1 ifa=$2 addra=$3 b=$4 ifb=$5 addrb=$6
    ip link add name "$ifa" netns "${NN_NS[$a]}" type veth peer name "$ifb" netns "${NN_NS[$b]}" ||
        nn_fail "veth $ifa <-> $ifb"
    ip -n "${NN_NS[$a]}" addr add "$addra/24" dev "$ifa"
    ip -n "${NN_NS[$b]}" addr add "$addrb/24" dev "$ifb"
    ip -n "${NN_NS[$a]}" link set "$ifa" up
    ip -n "${NN_NS[$b]}" link set "$ifb" up
}

nn_run() {
    local h=$1
    shift
    nsenter --target "${NN_INIT[$h]}" --net --mount --pid -- "$@"
}

nn_bg() {
    local h=$1 log=$2
    shift 2
    nsenter --target "${NN_INIT[$h]}" --net --mount --pid -- "$@" </dev/null >"$log" 2>&1 &
    NN_PID=$!
    NN_BG_PIDS+=($!)
}

nn_wait_port() {
    local h=$1 addr=$2 port=$3 i
    for i in $(seq 100); do
        nn_run "$h" ss -Hltn "src $addr:$port" 2>/dev/null | grep -q . && return 0
        sleep 0.1
    done
    return 1
}

nn_agent() {
    local h=$1 addr=$2
    shift 2
    nn_bg "$h" "$NN_TMP/agent-$h.out" "$AGENT" --listen "$addr:7451" --token-file "$NN_TMP/token" \
        --name "$h" --log-file "$NN_TMP/agent-$h.log" "$@"
    nn_wait_port "$h" "$addr" 7451 || {
        cat "$NN_TMP/agent-$h.out" "$NN_TMP/agent-$h.log" 2>/dev/null
        nn_fail "agent on $h does not listen"
    }
}

# sshd on host NAME listening on ADDR:PORT, root logging in with the key $NN_TMP/id; more
# sshd_config lines may follow. Its log is $NN_TMP/sshd.log.
NN_SSHD_PREFIX=()
nn_sshd() {
    local h=$1 addr=$2 port=$3 line
    shift 3
    ssh-keygen -q -t ed25519 -N '' -f "$NN_TMP/host_key"
    ssh-keygen -q -t ed25519 -N '' -f "$NN_TMP/id"
    cp "$NN_TMP/id.pub" "$NN_TMP/authorized_keys"
    {
        cat <<CFG
Port $port
ListenAddress $addr
HostKey $NN_TMP/host_key
AuthorizedKeysFile $NN_TMP/authorized_keys
PermitRootLogin prohibit-password
PasswordAuthentication no
KbdInteractiveAuthentication no
UsePAM no
StrictModes no
PidFile $NN_TMP/sshd.pid
CFG
        for line in "$@"; do echo "$line"; done
    } >"$NN_TMP/sshd_config"
    mkdir -p /run/sshd
    nn_bg "$h" "$NN_TMP/sshd.out" "${NN_SSHD_PREFIX[@]}" /usr/sbin/sshd -D -f "$NN_TMP/sshd_config" \
        -E "$NN_TMP/sshd.log"
    nn_wait_port "$h" "$addr" "$port" || nn_fail "sshd does not listen on $addr:$port"
}

# Pids (as seen from here) of the processes in host NAME's pid namespace.
nn_pids() {
    local h=$1 want p
    want="$(readlink "/proc/${NN_INIT[$h]}/ns/pid")" || return 0
    for p in /proc/[0-9]*; do
        [[ "$(readlink "$p/ns/pid" 2>/dev/null)" == "$want" ]] && echo "${p#/proc/}"
    done
}

# The collector inside host NAME's network namespace (not its pid namespace: the agents do not
# see it): nn_collector NAME ARGS... runs `$NASPROBE --db $NN_TMP/nasprobe.db --token-file ...`.
nn_collector() {
    local h=$1
    shift
    ip netns exec "${NN_NS[$h]}" "$NASPROBE" --db "$NN_TMP/nasprobe.db" --token-file "$NN_TMP/token" "$@"
}

# Installs Debian packages that are missing (without starting any daemon they ship).
nn_need_packages() {
    local missing=() pkg
    for pkg in "$@"; do
        dpkg-query -W -f='${Status}' "$pkg" 2>/dev/null | grep -q "ok installed" || missing+=("$pkg")
    done
    ((${#missing[@]})) || return 0
    nn_log "installing ${missing[*]}"
    local policy=0
    if [[ ! -e /usr/sbin/policy-rc.d ]]; then
        printf '#!/bin/sh\nexit 101\n' >/usr/sbin/policy-rc.d && chmod 755 /usr/sbin/policy-rc.d
        policy=1
    fi
    local rc=0
    DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends "${missing[@]}" \
        >/dev/null 2>&1 || { apt-get update -q >/dev/null 2>&1 &&
        DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends \
            "${missing[@]}" >/dev/null; } || rc=1
    ((policy)) && rm -f /usr/sbin/policy-rc.d
    return $rc
}

# Builds (release) or finds nasprobe and nasprobe-agent: sets $NASPROBE and $AGENT.
nn_binaries() {
    e2e_build release nasprobe nasprobe-agent
    e2e_bins nasprobe nasprobe-agent
    NASPROBE="$BIN/nasprobe"
    AGENT="$BIN/nasprobe-agent"
}
