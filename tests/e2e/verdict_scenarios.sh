#!/usr/bin/env bash
# End-to-end test of the verdict on the built-in scenarios (issue 6, "Tests"): for each scenario,
# `nasprobe-scenario run` writes a /proc and /sys tree per host and keeps it updated; one real
# `nasprobe-agent` per host samples that tree (--proc-root/--sys-root, --interval 200);
# `nasprobe record` stores them for a few seconds; `nasprobe report --json` is asserted:
#
#   synology-replication  cpu_thread on dst naming synoreplicad
#   wd-ssh                cpu_thread naming ssh/sshd
#   md-disk-bound         disk on a member disk (not the md device), on dst
#   link-100mbit          nic on dst
#   swap-storm            memory on dst
#   all-cores-busy        cpu_all on dst
#   idle-pair             none, host null
#   process-restarts      a pattern with restarts >= 2 and process_exit events
#
# and for every scenario: samples > 0 per host, an agent_start event per host, no gaps.
# Scenarios run in parallel (NASPROBE_PARALLEL, default 4); a failure prints the report.
#
#   tests/e2e/verdict_scenarios.sh                 build (debug) and run all
#   tests/e2e/verdict_scenarios.sh wd-ssh idle-pair   run only these
#   NASPROBE_BIN_DIR=DIR ...                       use nasprobe, nasprobe-agent and
#                                                  nasprobe-scenario from DIR, no build
#   NASPROBE_RECORD=12s ...                        record this long per scenario (default 12s)
#   NASPROBE_KEEP=1 ...                            keep the temp folder (trees, dbs, reports)
set -euo pipefail
E2E_NAME=verdict_scenarios
# shellcheck source=tests/e2e/lib/common.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib/common.sh"
command -v python3 >/dev/null || fail "python3 missing"
# shellcheck source=tests/e2e/verdict_lib.sh
source "$REPO/tests/e2e/verdict_lib.sh"

RECORD="${NASPROBE_RECORD:-12s}"
PARALLEL="${NASPROBE_PARALLEL:-4}"
ALL=(synology-replication wd-ssh md-disk-bound link-100mbit swap-storm all-cores-busy idle-pair
    process-restarts)
if [[ $# -gt 0 ]]; then SCENARIOS=("$@"); else SCENARIOS=("${ALL[@]}"); fi

TMP="$(e2e_tmpdir verdict)"
cleanup() {
    local d
    for d in "$TMP"/*/; do vr_stop "$d"; done
    wait 2>/dev/null || true
    if [[ -n ${NASPROBE_KEEP:-} ]]; then say "kept $TMP"; else rm -rf "$TMP"; fi
}
trap cleanup EXIT

# The assertions on one scenario's report (argv: scenario, report.json).
cat >"$TMP/check.py" <<'PY'
import json, sys

name, path = sys.argv[1], sys.argv[2]
r = json.load(open(path))
b = r["bottleneck"]
errors = []


def want(cond, msg):
    if not cond:
        errors.append(msg)


for key in ("window", "hosts", "bottleneck", "events", "gaps"):
    want(key in r, f"missing top-level key {key}")
hosts = {h["name"]: h for h in r["hosts"]}
for h in r["hosts"]:
    want(h["samples"] > 0, f"host {h['name']}: samples = {h['samples']}")
    for k in ("cpu", "top_processes", "disks", "nics", "memory"):
        want(k in h, f"host {h['name']}: missing {k}")
    starts = [e for e in r["events"] if e["host"] == h["name"] and e["kind"] == "agent_start"]
    want(starts, f"host {h['name']}: no agent_start event")
want(r["gaps"] == [], f"gaps: {r['gaps']}")
want(b["resource"] in ("cpu_thread", "cpu_all", "disk", "nic", "memory", "none"),
     f"resource {b['resource']!r} not in the contract")
want(isinstance(b["evidence"], list) and b["evidence"], "no evidence")


def verdict(resource, host=None, process=None, device=None):
    want(b["resource"] == resource, f"resource {b['resource']!r}, want {resource!r}")
    if host is not None:
        want(b["host"] == host, f"host {b['host']!r}, want {host!r}")
    if process is not None:
        want(b["process"] in process, f"process {b['process']!r}, want one of {process}")
    if device is not None:
        want(device(b["device"]), f"device {b['device']!r}")


def member_disk(dev):
    if not dev or dev.startswith("md"):
        return False
    disks = {d["name"]: d for d in hosts.get(b["host"], {}).get("disks", [])}
    return dev in disks and not disks[dev]["is_md"]


if name == "synology-replication":
    verdict("cpu_thread", "dst", ["synoreplicad"])
elif name == "wd-ssh":
    # Both ends pin a core (ssh on src at 97%, sshd on dst at 98%): either names the wall.
    verdict("cpu_thread", process=["ssh", "sshd"])
    want((b["host"], b["process"]) in (("src", "ssh"), ("dst", "sshd")),
         f"{b['process']} on {b['host']}: the process is on the other host")
elif name == "md-disk-bound":
    verdict("disk", "dst", device=member_disk)
elif name == "link-100mbit":
    verdict("nic", "dst", device=lambda d: d == "eth0")
elif name == "swap-storm":
    verdict("memory", "dst")
elif name == "all-cores-busy":
    verdict("cpu_all", "dst")
elif name == "idle-pair":
    verdict("none")
    want(b["host"] is None, f"host {b['host']!r}, want null")
elif name == "process-restarts":
    pats = [p for p in r.get("patterns", []) if p["restarts"] >= 2]
    want(pats, f"no pattern with restarts >= 2: {r.get('patterns')}")
    exits = [e for e in r["events"] if e["kind"] == "process_exit"]
    want(len(exits) >= 2, f"{len(exits)} process_exit events")
else:
    errors.append(f"no expectation for scenario {name}")

if errors:
    print(f"{name}: " + "; ".join(errors))
    sys.exit(1)
who = f" on {b['host']}" if b["host"] else ""
what = b["process"] or b["device"] or ""
print(f"{name}: {b['resource']}{who} {what} ({b['utilization']})".rstrip())
PY

# Runs one scenario; writes $TMP/NAME/result (ok / failure text).
run_one() {
    local name=$1 dir="$TMP/$1"
    vr_record "$name" "$dir" "$RECORD" || return 0
    local db="$dir/nasprobe.db"
    if ! "$NP" --db "$db" report --json >"$dir/report.json" 2>"$dir/report.err"; then
        echo "report --json failed: $(cat "$dir/report.err")" >"$dir/result"
        return
    fi
    "$NP" --db "$db" report >"$dir/report.txt" 2>&1 || true
    if python3 "$TMP/check.py" "$name" "$dir/report.json" >"$dir/check.out" 2>&1; then
        echo ok >"$dir/result"
    else
        cat "$dir/check.out" >"$dir/result"
    fi
}

say "running ${#SCENARIOS[@]} scenario(s), $PARALLEL at a time, recording $RECORD each"
running=0
for s in "${SCENARIOS[@]}"; do
    run_one "$s" &
    running=$((running + 1))
    if [[ $running -ge $PARALLEL ]]; then
        wait -n || true
        running=$((running - 1))
    fi
done
wait || true

passed=0
failed=0
for s in "${SCENARIOS[@]}"; do
    d="$TMP/$s"
    if [[ "$(cat "$d/result" 2>/dev/null)" == ok ]]; then
        passed=$((passed + 1))
        say "PASS $(cat "$d/check.out")"
    else
        failed=$((failed + 1))
        say "FAIL $s: $(cat "$d/result" 2>/dev/null || echo 'no result')"
        if [[ -f $d/report.txt ]]; then
            echo "----- $s: nasprobe report -----"
            cat "$d/report.txt"
        fi
        if [[ -f $d/report.json ]]; then
            echo "----- $s: nasprobe report --json -----"
            cat "$d/report.json"
        fi
        echo "----- $s: end -----"
    fi
done
say "$((SECONDS - START)) s"
echo "verdict_scenarios: $passed passed, $failed failed"
[[ $failed == 0 ]]
