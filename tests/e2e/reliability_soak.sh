#!/usr/bin/env bash
# Reliability (issue 10): the agent over time and under load, as release builds.
#
#  - soak_fast_churn: the agent at 100 Hz (test-only NASPROBE_ALLOW_FAST=1 --interval 10) against
#    `nasprobe-scenario run --builtin churn` for NASPROBE_SOAK_SECONDS (default 120; the 15-minute
#    figure in RELIABILITY.md is NASPROBE_SOAK_SECONDS=900): every seq contiguous, RSS flat,
#    fd count flat, no panic.
#  - stress_cpu_and_memory: stress-ng pegs every core and fills a 256 MiB memory cgroup the agent
#    shares for NASPROBE_STRESS_SECONDS (default 30): samples keep coming with their real
#    interval, RSS does not grow, CPU per sample stays in budget.
#
# Both are #[ignore]d tests in agent/tests/reliability_soak.rs; each prints a FIGURES line.
#   tests/e2e/reliability_soak.sh                 both
#   tests/e2e/reliability_soak.sh soak_fast_churn one of them
set -euo pipefail
E2E_NAME=reliability_soak
# shellcheck source=tests/e2e/lib/base.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib/base.sh"
export NASPROBE_SOAK_SECONDS="${NASPROBE_SOAK_SECONDS:-120}"
export NASPROBE_STRESS_SECONDS="${NASPROBE_STRESS_SECONDS:-30}"
command -v stress-ng >/dev/null || say "note: stress-ng missing (apt-get install stress-ng): busy loops instead"
say "building (release): nasprobe-scenario and the agent's reliability tests"
cargo build -q --release -p nasprobe-testkit
export NASPROBE_SCENARIO_BIN="$TARGET_DIR/release/nasprobe-scenario"
filter=()
[[ $# -gt 0 ]] && filter=("$@")
start=$SECONDS
set +e
cargo test -q --release -p nasprobe-agent --test reliability_soak -- --ignored --nocapture \
    --test-threads 1 "${filter[@]}" 2>&1 | tee "${TMPDIR:-/tmp}/reliability_soak.$$.log"
rc=${PIPESTATUS[0]}
set -e
grep '^FIGURES' "${TMPDIR:-/tmp}/reliability_soak.$$.log" || true
rm -f "${TMPDIR:-/tmp}/reliability_soak.$$.log"
say "took $((SECONDS - start)) s"
exit "$rc"
