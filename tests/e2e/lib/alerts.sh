# The start of the alert scripts that run a real agent on loopback. Sourced (not run) after
# lib/base.sh; then:
#   NP AGENT           nasprobe and nasprobe-agent (release build unless NASPROBE_BIN_DIR)
#   TMP                a fresh temp folder (kept with NASPROBE_KEEP=1), TOK its token file
#   PIDS               processes killed (-9) at the exit
#   free_port, wait_http URL SECONDS   (tests/e2e/export_lib.sh)
#   alerts_agent PORT  starts an agent named nas on 127.0.0.1:PORT (token $TOK, 200 ms
#                      interval), waits until it listens; AGENT_PID
# shellcheck shell=bash
e2e_build release nasprobe nasprobe-agent
e2e_bins nasprobe nasprobe-agent
NP="$BIN/nasprobe"
AGENT="$BIN/nasprobe-agent"
TMP="$(e2e_tmpdir "$E2E_NAME")"
TOK="$TMP/token"
PIDS=()
cleanup() {
    for p in "${PIDS[@]}"; do kill -9 "$p" 2>/dev/null || true; done
    wait 2>/dev/null || true
    if [[ -n ${NASPROBE_KEEP:-} ]]; then say "kept $TMP"; else rm -rf "$TMP"; fi
}
trap cleanup EXIT
# shellcheck source=tests/e2e/export_lib.sh
source "$REPO/tests/e2e/export_lib.sh"

alerts_agent() {
    "$AGENT" --listen "127.0.0.1:$1" --token-file "$TOK" --interval 200 --name nas \
        --log-file "$TMP/agent.log" &
    AGENT_PID=$!
    PIDS+=($!)
    for _ in $(seq 100); do
        [[ -s $TOK ]] && grep -q "listening on" "$TMP/agent.log" 2>/dev/null && return 0
        sleep 0.1
    done
    fail "the agent did not start: $(tail -3 "$TMP/agent.log" 2>/dev/null)"
}
