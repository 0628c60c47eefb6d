# Shared helpers of the export e2e tests (tests/e2e/export_*.sh). Source it; not a test step
# (not executable). Expects say() and fail() (lib/base.sh); export_begin sets TMP and PIDS.
# shellcheck shell=bash

# export_begin PREFIX: a fresh temp folder TMP (kept with NASPROBE_KEEP=1), the PIDS array whose
# processes are killed at exit, and the engines installed.
export_begin() {
    TMP="$(e2e_tmpdir "$1")"
    PIDS=()
    trap export_cleanup EXIT
    export_install_engines
}

export_cleanup() {
    local p
    for p in "${PIDS[@]}"; do kill -9 "$p" 2>/dev/null || true; done
    wait 2>/dev/null || true
    if [[ -n ${NASPROBE_KEEP:-} ]]; then say "kept $TMP"; else rm -rf "$TMP"; fi
}

# Installs the Debian packages victoria-metrics and prometheus when their binaries are missing.
# The packages' systemd units do not matter: the tests start the binaries by hand.
export_install_engines() {
    local missing=()
    command -v victoria-metrics >/dev/null || missing+=(victoria-metrics)
    command -v prometheus >/dev/null || missing+=(prometheus)
    command -v promtool >/dev/null || [[ " ${missing[*]} " == *" prometheus "* ]] ||
        missing+=(prometheus)
    ((${#missing[@]} == 0)) && return 0
    say "installing ${missing[*]} (Debian packages)"
    local sudo=()
    [[ $(id -u) -eq 0 ]] || sudo=(sudo)
    local i
    for i in 1 2 3; do
        if "${sudo[@]}" env DEBIAN_FRONTEND=noninteractive apt-get install -y -q \
            --no-install-recommends "${missing[@]}" >"$TMP/apt.log" 2>&1; then
            return 0
        fi
        # A stale index, or another apt holding the lock: refresh and retry.
        "${sudo[@]}" env DEBIAN_FRONTEND=noninteractive apt-get update -q >>"$TMP/apt.log" 2>&1 ||
            true
        sleep $((i * 5))
    done
    tail -20 "$TMP/apt.log" >&2
    fail "could not install ${missing[*]}"
}

free_port() {
    python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'
}

# wait_http URL SECONDS [CURL-ARG...]: waits until URL answers 2xx.
wait_http() {
    local url=$1 secs=$2 t=0
    shift 2
    while ! curl -fsS -o /dev/null --max-time 2 "$@" "$url" 2>/dev/null; do
        t=$((t + 1))
        ((t > secs * 5)) && return 1
        sleep 0.2
    done
}

# vm_start DIR PORT [FLAG...]: starts VictoriaMetrics on 127.0.0.1:PORT with data in DIR (and
# the extra flags); sets VM_PID.
vm_start() {
    local dir=$1 port=$2
    shift 2
    mkdir -p "$dir"
    victoria-metrics -storageDataPath "$dir" -httpListenAddr "127.0.0.1:$port" \
        -retentionPeriod 100y "$@" >>"$dir.log" 2>&1 &
    VM_PID=$!
    PIDS+=("$VM_PID")
    wait_http "http://127.0.0.1:$port/health" 30 || fail "VictoriaMetrics did not start ($dir.log)"
}

# prom_start DIR PORT CONFIG [FLAG...]: starts Prometheus on 127.0.0.1:PORT with its TSDB in DIR
# and the config file CONFIG; sets PROM_PID. Log: DIR.log.
prom_start() {
    local dir=$1 port=$2 config=$3
    shift 3
    prometheus --config.file "$config" --storage.tsdb.path "$dir" \
        --web.listen-address "127.0.0.1:$port" "$@" >>"$dir.log" 2>&1 &
    PROM_PID=$!
    PIDS+=("$PROM_PID")
    wait_http "http://127.0.0.1:$port/-/ready" 60 || fail "Prometheus not ready: $(tail -5 "$dir.log")"
}

# The flag that turns on Prometheus' remote write receiver (2.33 and later; older: a feature).
prom_receiver_flag() {
    local help
    help=$(prometheus --help 2>&1 || true)
    if [[ $help == *--web.enable-remote-write-receiver* ]]; then
        echo --web.enable-remote-write-receiver
    else
        echo --enable-feature=remote-write-receiver
    fi
}

# vm_export PORT SELECTOR: raw points (JSON lines). Rows show in queries about 1 s after they
# were received, even after a flush: flush, wait 3 s, export.
vm_export() {
    curl -fsS --max-time 30 "http://127.0.0.1:$1/internal/force_flush" >/dev/null
    sleep 3
    curl -fsS --max-time 60 "http://127.0.0.1:$1/api/v1/export" --data-urlencode "match[]=$2"
}

# export_start_scenario NAME [OPTION...]: runs the built-in scenario NAME (trees under $TMP/tree,
# with nasprobe-scenario's options, e.g. --restart-every 6) and one real agent per host (--interval 200); sets TOK (token file), HOSTS (NAME=127.0.0.1:PORT ...) and
# AGENT_PIDS. Needs SCEN and AGENT (binaries).
export_start_scenario() {
    TOK="$TMP/token"
    head -c 32 /dev/urandom | od -An -tx1 | tr -d ' \n' >"$TOK"
    chmod 600 "$TOK"
    "$SCEN" run --builtin "$1" --out "$TMP/tree" --tick-ms 100 "${@:2}" >"$TMP/scenario.out" \
        2>"$TMP/scenario.err" &
    PIDS+=($!)
    local i line host proc sys port
    for i in $(seq 1 100); do
        grep -q '^ready' "$TMP/scenario.out" 2>/dev/null && break
        sleep 0.1
    done
    grep -q '^ready' "$TMP/scenario.out" ||
        fail "scenario generator not ready: $(cat "$TMP/scenario.err")"
    HOSTS=()
    AGENT_PIDS=()
    while read -r line; do
        [[ $line == host=* ]] || continue
        host=$(sed -E 's/.*host=([^ ]+).*/\1/' <<<"$line")
        proc=$(sed -E 's/.*proc=([^ ]+).*/\1/' <<<"$line")
        sys=$(sed -E 's/.*sys=([^ ]+).*/\1/' <<<"$line")
        port=$(free_port)
        "$AGENT" --listen "127.0.0.1:$port" --token-file "$TOK" --interval 200 --name "$host" \
            --proc-root "$proc" --sys-root "$sys" --log-file "$TMP/agent-$host.log" &
        PIDS+=($!)
        AGENT_PIDS+=($!)
        HOSTS+=("$host=127.0.0.1:$port")
    done <"$TMP/scenario.out"
    sleep 0.3
}
