# Shared helpers of the export e2e tests (tests/e2e/export_*.sh). Source it; not a test step
# (not executable). Expects: TMP (temp dir), say(), fail(), and a PIDS array for cleanup.
# shellcheck shell=bash

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

# wait_http URL SECONDS: waits until URL answers 2xx.
wait_http() {
    local url=$1 secs=$2 t=0
    while ! curl -fsS -o /dev/null --max-time 2 "$url" 2>/dev/null; do
        t=$((t + 1))
        ((t > secs * 5)) && return 1
        sleep 0.2
    done
}

# vm_start DIR PORT: starts VictoriaMetrics on 127.0.0.1:PORT with data in DIR; sets VM_PID.
vm_start() {
    local dir=$1 port=$2
    mkdir -p "$dir"
    victoria-metrics -storageDataPath "$dir" -httpListenAddr "127.0.0.1:$port" \
        -retentionPeriod 100y >>"$dir.log" 2>&1 &
    VM_PID=$!
    PIDS+=("$VM_PID")
    wait_http "http://127.0.0.1:$port/health" 30 || fail "VictoriaMetrics did not start ($dir.log)"
}

# vm_export PORT SELECTOR: raw points (JSON lines). Rows show in queries about 1 s after they
# were received, even after a flush: flush, wait 3 s, export.
vm_export() {
    curl -fsS --max-time 30 "http://127.0.0.1:$1/internal/force_flush" >/dev/null
    sleep 3
    curl -fsS --max-time 60 "http://127.0.0.1:$1/api/v1/export" --data-urlencode "match[]=$2"
}
