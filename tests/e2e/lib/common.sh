# Shared start of the end-to-end scripts that drive the debug binaries over scenario trees:
# lib/base.sh (say, fail, REPO, TARGET_DIR, START, e2e_skip, e2e_build, e2e_tmpdir), then
#   NP AGENT SCEN      nasprobe, nasprobe-agent and nasprobe-scenario: built (debug) unless
#                      NASPROBE_BIN_DIR names a folder that holds them
# Sourced (not run) after setting E2E_NAME.
# shellcheck shell=bash
# shellcheck source=tests/e2e/lib/base.sh
source "$(dirname "${BASH_SOURCE[0]}")/base.sh"
e2e_build debug nasprobe nasprobe-agent nasprobe-testkit
e2e_bins nasprobe nasprobe-agent nasprobe-scenario
# shellcheck disable=SC2034 # used by the scripts that source this file
NP="$BIN/nasprobe"
# shellcheck disable=SC2034
AGENT="$BIN/nasprobe-agent"
# shellcheck disable=SC2034
SCEN="$BIN/nasprobe-scenario"
