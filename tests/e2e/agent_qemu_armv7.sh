#!/usr/bin/env bash
# The armv7 (WD MyCloud) build of the agent serves collectors: runs the agent's server
# end-to-end tests (agent/tests/server_e2e.rs) against dist/nasprobe-agent-armv7-unknown-linux-
# musleabihf under qemu-user. Builds the binary with scripts/build-targets and installs Debian's
# qemu-user when they are missing. Loopback only.
set -euo pipefail
E2E_NAME=agent_qemu_armv7
# shellcheck source=tests/e2e/lib/base.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib/base.sh"

TRIPLE=armv7-unknown-linux-musleabihf
BIN="$REPO/dist/nasprobe-agent-$TRIPLE"
if [[ ! -x "$BIN" ]]; then
    say "building $BIN"
    scripts/build-targets "$TRIPLE"
fi
if ! command -v qemu-arm >/dev/null; then
    say "installing qemu-user"
    [[ $(id -u) == 0 ]] || e2e_skip agent_qemu_armv7 "qemu-arm missing and not root to install it"
    DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends qemu-user >/dev/null ||
        { apt-get update -q >/dev/null &&
            DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends qemu-user >/dev/null; }
fi
say "$(file -b "$BIN" | cut -d, -f1-3)"
NASPROBE_AGENT_BIN="$BIN" NASPROBE_AGENT_RUNNER=qemu-arm \
    cargo test -q -p nasprobe-agent --test server_e2e
