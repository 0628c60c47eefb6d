# e2e_skip NAME WHY: the test NAME cannot run here because WHY (a tool or root is missing).
# Under CI (CI=true) that is a failure: exit 1. Elsewhere the skip is appended to
# $NASPROBE_SKIP_LOG (scripts/test lists every skip in its summary), said, and the script exits 0.
# Sourced, not run. The Rust tests' counterpart is nasprobe_testkit::skip::missing.
# shellcheck shell=bash
e2e_skip() {
    local name=$1 why=$2
    if [[ ${CI:-} == true || ${CI:-} == 1 ]]; then
        echo "$name: FAIL: $why (CI=true: a missing tool fails the test)" >&2
        exit 1
    fi
    echo "$name: SKIPPED: $why"
    [[ -z ${NASPROBE_SKIP_LOG:-} ]] || echo "$name: $why" >>"$NASPROBE_SKIP_LOG"
    exit 0
}
