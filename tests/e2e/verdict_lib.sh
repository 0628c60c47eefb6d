# Records a built-in scenario through real programs: `nasprobe-scenario run` writes a /proc and
# /sys tree per host and keeps it updated, one `nasprobe-agent` per host samples its tree
# (--proc-root/--sys-root), `nasprobe record` stores them. Source it; do not run it (not
# executable, so scripts/test does not take it for a step).
#
#   vr_start NAME DIR [SCENARIO ARGS...]   (the generator and agents only; see below)
#   vr_record NAME DIR DUR [SCENARIO ARGS...]
#       NAME: a built-in scenario, or a scenario file FILE.json;
#       writes DIR/tree (the trees), DIR/nasprobe.db, DIR/token, logs in DIR; returns non-zero
#       with the reason in DIR/result on failure; every process it started is listed in
#       DIR/pids and stopped before it returns.
#
# Needs: $NP, $AGENT, $SCEN (the three binaries), python3 (free ports). Agents sample every
# ${VR_INTERVAL:-200} ms; the scenario ticks every 100 ms.
# shellcheck shell=bash

vr_free_port() {
    python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'
}

vr_stop() { # DIR: stops what vr_record started there
    local p
    [[ -f $1/pids ]] || return 0
    while read -r p; do kill "$p" 2>/dev/null || true; done <"$1/pids"
    while read -r p; do
        for _ in $(seq 1 50); do kill -0 "$p" 2>/dev/null || break; sleep 0.05; done
    done <"$1/pids"
    : >"$1/pids"
}

vr_record() { # NAME DIR DUR [scenario args...]
    local name=$1 dir=$2 dur=$3
    shift 3
    vr_start "$name" "$dir" "$@" || return 1
    local hosts
    read -r -a hosts <"$dir/hosts.args"
    if ! "$NP" --db "$dir/nasprobe.db" --token-file "$dir/token" --hosts-file "$dir/hosts" record \
        --duration "$dur" "${hosts[@]}" 2>"$dir/record.log"; then
        echo "record failed: $(cat "$dir/record.log")" >"$dir/result"
        vr_stop "$dir"
        return 1
    fi
    vr_stop "$dir"
}

# vr_start NAME DIR [scenario args...]: the scenario generator and one agent per host, running;
# DIR/hosts.args holds the host arguments (NAME=127.0.0.1:PORT ...) on one line, DIR/token the
# token. vr_stop DIR ends them.
vr_start() {
    local name=$1 dir=$2
    shift 2
    mkdir -p "$dir"
    : >"$dir/pids"
    rm -f "$dir/result"
    local tok="$dir/token"
    head -c 32 /dev/urandom | od -An -tx1 | tr -d ' \n' >"$tok"
    chmod 600 "$tok"
    local what=(--builtin "$name")
    [[ $name == *.json ]] && what=(--scenario "$name")
    "$SCEN" run "${what[@]}" --out "$dir/tree" --tick-ms 100 "$@" >"$dir/scenario.out" \
        2>"$dir/scenario.err" &
    echo $! >>"$dir/pids"
    local i
    for i in $(seq 1 200); do
        grep -q '^ready' "$dir/scenario.out" 2>/dev/null && break
        sleep 0.05
    done
    if ! grep -q '^ready' "$dir/scenario.out"; then
        echo "scenario generator not ready: $(cat "$dir/scenario.err")" >"$dir/result"
        vr_stop "$dir"
        return 1
    fi
    local hosts=() line host proc sys port
    while read -r line; do
        [[ $line == host=* ]] || continue
        host=$(sed -E 's/.*host=([^ ]+).*/\1/' <<<"$line")
        proc=$(sed -E 's/.*proc=([^ ]+).*/\1/' <<<"$line")
        sys=$(sed -E 's/.*sys=([^ ]+).*/\1/' <<<"$line")
        port=$(vr_free_port)
        "$AGENT" --listen "127.0.0.1:$port" --token-file "$tok" --interval "${VR_INTERVAL:-200}" \
            --name "$host" --proc-root "$proc" --sys-root "$sys" --log-file "$dir/agent-$host.log" &
        echo $! >>"$dir/pids"
        hosts+=("$host=127.0.0.1:$port")
    done <"$dir/scenario.out"
    echo "${hosts[*]}" >"$dir/hosts.args"
    sleep 0.3
}
