# The start every end-to-end script shares. Sourced (not run) after setting E2E_NAME; then:
#   say / fail         messages prefixed with the script's name (fail exits 1)
#   REPO, TARGET_DIR   the repository root (also the working directory) and cargo's target dir
#   START              $SECONDS at the start, for the closing line
#   e2e_skip NAME WHY  (lib/skip.sh) a test that cannot run here: a failure under CI=true
#   e2e_build PROFILE PKG...
#                      builds the packages (debug or release) unless NASPROBE_BIN_DIR names a
#                      folder that holds the binaries; sets BIN to the folder they are in
#   e2e_bins NAME...   fails unless each $BIN/NAME is executable
#   e2e_tmpdir PREFIX  a fresh temp folder, on tmpfs when there is one (scenario trees rename
#                      files every tick; on ext4 that is slow)
#   e2e_agent LOG ARG...
#                      starts $AGENT on 127.0.0.1:$PORT with the token file $TOK (the agent
#                      makes it on its first start), logging to LOG, with ARG... (interval,
#                      name, ...); sets AGENT_PID, adds it to PIDS; returns once LOG says
#                      "listening on" once more than before (5 s), else fails with LOG's tail
#   e2e_alive PID      whether process PID lives: a zombie (exited, its parent gone, and an init
#                      here that is slow to reap) does not count, as in targets/sysv's alive()
# shellcheck shell=bash
REPO="$(cd "$(dirname "${BASH_SOURCE[0]}")/../../.." && pwd)"
cd "$REPO"
: "${E2E_NAME:?set E2E_NAME before sourcing tests/e2e/lib/base.sh}"
say() { echo "$E2E_NAME: $*"; }
fail() {
    echo "$E2E_NAME: FAIL: $*" >&2
    exit 1
}
# shellcheck source=tests/e2e/lib/skip.sh
source "$REPO/tests/e2e/lib/skip.sh"
START=$SECONDS
TARGET_DIR="${CARGO_TARGET_DIR:-$REPO/target}"

e2e_build() {
    local profile=$1
    shift
    if [[ -n ${NASPROBE_BIN_DIR:-} ]]; then
        BIN="$NASPROBE_BIN_DIR"
        return
    fi
    local pkgs=() p
    for p in "$@"; do pkgs+=(-p "$p"); done
    say "building $* ($profile)"
    if [[ $profile == release ]]; then
        cargo build -q --release "${pkgs[@]}"
    else
        cargo build -q "${pkgs[@]}"
    fi
    BIN="$TARGET_DIR/$profile"
}

e2e_alive() {
    kill -0 "$1" 2>/dev/null || return 1
    [[ $(sed -n 's/.*) \(.\).*/\1/p' "/proc/$1/stat" 2>/dev/null) != Z ]]
}

e2e_bins() {
    local b
    for b in "$@"; do [[ -x $BIN/$b ]] || fail "missing $BIN/$b"; done
}

e2e_tmpdir() {
    local base=/tmp
    [[ -d /dev/shm && -w /dev/shm ]] && base=/dev/shm
    mktemp -d "$base/nasprobe-$1.XXXXXX"
}

# How many times the agent log $1 says it listens (0 while it does not exist).
_e2e_listens() { { cat "$1" 2>/dev/null || true; } | grep -c "listening on" || true; }

e2e_agent() {
    local log=$1 before
    shift
    before=$(_e2e_listens "$log")
    "$AGENT" --listen "127.0.0.1:$PORT" --token-file "$TOK" --log-file "$log" "$@" &
    AGENT_PID=$!
    PIDS+=("$AGENT_PID")
    for _ in $(seq 50); do
        (($(_e2e_listens "$log") > before)) && return 0
        sleep 0.1
    done
    fail "the agent ($*) did not listen: $(tail -5 "$log" 2>/dev/null)"
}
