# Shared start of the end-to-end scripts that drive the debug binaries over scenario trees.
# Sourced (not run) after setting E2E_NAME; then:
#   say / fail         messages prefixed with the script's name (fail exits 1)
#   REPO, TARGET_DIR   the repository root (also the working directory) and cargo's target dir
#   START              $SECONDS at the start, for the closing line
#   NP AGENT SCEN      nasprobe, nasprobe-agent and nasprobe-scenario: built (debug) unless
#                      NASPROBE_BIN_DIR names a folder that holds them
#   e2e_tmpdir PREFIX  a fresh temp folder, on tmpfs when there is one (scenario trees rename
#                      files every tick; on ext4 that is slow)
# shellcheck shell=bash
REPO="$(cd "$(dirname "${BASH_SOURCE[0]}")/../../.." && pwd)"
cd "$REPO"
say() { echo "$E2E_NAME: $*"; }
fail() {
    echo "$E2E_NAME: FAIL: $*" >&2
    exit 1
}
START=$SECONDS
TARGET_DIR="${CARGO_TARGET_DIR:-$REPO/target}"
if [[ -z ${NASPROBE_BIN_DIR:-} ]]; then
    say "building nasprobe, nasprobe-agent and nasprobe-scenario"
    cargo build -q -p nasprobe -p nasprobe-agent -p nasprobe-testkit
    BIN="$TARGET_DIR/debug"
else
    BIN="$NASPROBE_BIN_DIR"
fi
# shellcheck disable=SC2034 # used by the scripts that source this file
NP="$BIN/nasprobe"
AGENT="$BIN/nasprobe-agent"
SCEN="$BIN/nasprobe-scenario"
for b in "$NP" "$AGENT" "$SCEN"; do [[ -x $b ]] || fail "missing $b"; done

e2e_tmpdir() {
    local base=/tmp
    [[ -d /dev/shm && -w /dev/shm ]] && base=/dev/shm
    mktemp -d "$base/nasprobe-$1.XXXXXX"
}
