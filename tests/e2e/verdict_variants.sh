#!/usr/bin/env bash
# End-to-end test of the verdict beyond the built-in scenarios: variants of them with other NAS
# families, process and thread names, kernels and NICs, written as scenario files from
# `nasprobe-scenario show --builtin ...` and run like tests/e2e/verdict_scenarios.sh (real
# agents at --interval 200 over the generated trees, nasprobe record, report --json):
#
#   qnap-hbs-sender     k6, enp2s0 NICs under a bond, `hbs3` on the SENDER at 93%  -> cpu_thread src hbs3
#   named-thread        java whose thread `Replicator` is at 95%, 5 workers at 15% -> cpu_thread dst java
#   gige-full           117 MB/s on 1 GbE, rsync at 60%                             -> nic
#   bond-slave-full     bond0 over eth0+eth1, the one flow fills eth0               -> nic eth0 (a slave)
#   sender-disks        the sender's md raid1 members at ~98%                       -> disk src (a member)
#   armv7-parallel      3.10 armv7, 2 cores, par2 with 4 threads at 49%             -> cpu_all dst
#   swap-3.10           the swap storm on 3.10 (no MemAvailable)                    -> memory dst
#   wd-busy-indexers    wd-ssh with indexers filling dst's other core               -> cpu_thread sshd/ssh
#   half-duplex-100     100 Mb/s half duplex, 8 + 0.8 MB/s (70%)                     -> nic dst
#
#   tests/e2e/verdict_variants.sh [NAME...]   NASPROBE_BIN_DIR, NASPROBE_RECORD (12s),
#                                             NASPROBE_PARALLEL (3), NASPROBE_KEEP as there
set -euo pipefail
E2E_NAME=verdict_variants
# shellcheck source=tests/e2e/lib/common.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib/common.sh"
command -v python3 >/dev/null || fail "python3 missing"
# shellcheck source=tests/e2e/verdict_lib.sh
source "$REPO/tests/e2e/verdict_lib.sh"
RECORD="${NASPROBE_RECORD:-12s}"
PARALLEL="${NASPROBE_PARALLEL:-3}"

TMP="$(e2e_tmpdir variants)"
cleanup() {
    local d
    for d in "$TMP"/*/; do vr_stop "$d"; done
    wait 2>/dev/null || true
    if [[ -n ${NASPROBE_KEEP:-} ]]; then say "kept $TMP"; else rm -rf "$TMP"; fi
}
trap cleanup EXIT

for b in synology-replication wd-ssh md-disk-bound link-100mbit swap-storm all-cores-busy idle-pair; do
    "$SCEN" show --builtin "$b" >"$TMP/$b.json" || fail "nasprobe-scenario show --builtin $b"
done

# Writes $TMP/NAME.json for every variant and $TMP/expect.json.
python3 - "$TMP" <<'PY' || fail "writing the variants"
import copy, json, sys

tmp = sys.argv[1]


def load(n):
    return json.load(open(f"{tmp}/{n}.json"))


def host(s, n):
    return next(h for h in s["hosts"] if h["name"] == n)


def proc(h, comm):
    return next(p for p in h["processes"] if p["comm"] == comm)


def thread(pct, comm=None, sys_frac=0.1):
    return {"tid": None, "comm": comm, "cpu_pct": pct, "sys_frac": sys_frac}


v = {}  # name -> (scenario, expectation)

s = load("synology-replication")
ren = {"eth0": "enp2s0", "eth1": "enp3s0"}
for h in s["hosts"]:
    h["kernel"] = "k6"
    for n in h["nics"]:
        n["name"] = ren.get(n["name"], n["name"])
        n["slaves"] = [ren.get(x, x) for x in n["slaves"]]
p = proc(host(s, "src"), "synoreplicad")
p["comm"], p["cmdline"] = "hbs3", ["/share/CACHEDEV1_DATA/.qpkg/HybridBackup/bin/hbs3", "-j", "7"]
p["threads"][1]["cpu_pct"] = 93.0
p = proc(host(s, "dst"), "synoreplicad")
p["comm"], p["cmdline"] = "rtrr_server", ["rtrr_server", "-d"]
for t in p["threads"]:
    t["cpu_pct"] = min(t["cpu_pct"], 30.0)
v["qnap-hbs-sender"] = (s, {"resource": "cpu_thread", "host": "src", "process": ["hbs3"]})

s = load("synology-replication")
p = proc(host(s, "dst"), "synoreplicad")
p["comm"], p["cmdline"] = "java", ["/usr/bin/java", "-jar", "/opt/sync/sync.jar"]
p["threads"] = [thread(1.0), thread(95.0, "Replicator", 0.2)] + [thread(15.0, "worker")] * 5
v["named-thread"] = (s, {"resource": "cpu_thread", "host": "dst", "process": ["java"],
                         "thread": "Replicator"})

s = load("idle-pair")
for h in s["hosts"]:
    for n in h["nics"]:
        n["tx_mbs" if h["name"] == "src" else "rx_mbs"] = 117.0
    proc(h, "rsync")["threads"][0]["cpu_pct"] = 60.0
v["gige-full"] = (s, {"resource": "nic", "device": ["eth0"]})

s = load("synology-replication")
for n in host(s, "src")["nics"]:
    if n["name"] == "eth0":
        n["tx_mbs"] = 116.0
for n in host(s, "dst")["nics"]:
    if n["name"] == "eth0":
        n["rx_mbs"] = 116.0
proc(host(s, "dst"), "synoreplicad")["threads"][1]["cpu_pct"] = 50.0
v["bond-slave-full"] = (s, {"resource": "nic", "device": ["eth0"]})

s = load("md-disk-bound")
src, dst = host(s, "src"), host(s, "dst")
src["disks"], dst["disks"] = copy.deepcopy(dst["disks"]), copy.deepcopy(src["disks"])
for d in src["disks"] + dst["disks"]:
    d["read_mbs"], d["write_mbs"] = d["write_mbs"], d["read_mbs"]
src["md"][0]["level"] = "raid1"
src["cpu"]["iowait_pct"], dst["cpu"]["iowait_pct"] = 20.0, 0.0
v["sender-disks"] = (s, {"resource": "disk", "host": "src", "member_disk": True})

s = load("all-cores-busy")
for h in s["hosts"]:
    h["kernel"], h["cores"] = "k3_10", 2
p = proc(host(s, "dst"), "pigz")
p["comm"], p["cmdline"] = "par2", ["par2", "create", "-t4", "set.par2"]
p["threads"] = [thread(49.0, sys_frac=0.02)] * 4
v["armv7-parallel"] = (s, {"resource": "cpu_all", "host": "dst"})

s = load("swap-storm")
for h in s["hosts"]:
    h["kernel"] = "k3_10"
v["swap-3.10"] = (s, {"resource": "memory", "host": "dst"})

s = load("wd-ssh")
proc(host(s, "dst"), "wdmcserverd")["threads"] = [thread(60.0), thread(30.0)]
v["wd-busy-indexers"] = (s, {"resource": "cpu_thread", "process": ["ssh", "sshd"],
                             "pairs": [["src", "ssh"], ["dst", "sshd"]]})

s = load("link-100mbit")
n = host(s, "dst")["nics"][0]
n["duplex"], n["rx_mbs"], n["tx_mbs"] = "half", 8.0, 0.8
host(s, "src")["nics"][0]["tx_mbs"] = 8.0
v["half-duplex-100"] = (s, {"resource": "nic", "host": "dst", "device": ["eth0"]})

for name, (s, e) in v.items():
    s["name"] = name
    json.dump(s, open(f"{tmp}/{name}.json", "w"), indent=1)
json.dump({k: e for k, (_, e) in v.items()}, open(f"{tmp}/expect.json", "w"), indent=1)
PY

cat >"$TMP/check.py" <<'PY'
import json, sys

name, path, expect = sys.argv[1], sys.argv[2], sys.argv[3]
r = json.load(open(path))
e = json.load(open(expect))[name]
b = r["bottleneck"]
err = []
if b["resource"] != e["resource"]:
    err.append(f"resource {b['resource']!r}, want {e['resource']!r}")
if "host" in e and b["host"] != e["host"]:
    err.append(f"host {b['host']!r}, want {e['host']!r}")
if "process" in e and b["process"] not in e["process"]:
    err.append(f"process {b['process']!r}, want one of {e['process']}")
if "thread" in e and b.get("thread") != e["thread"]:
    err.append(f"thread {b.get('thread')!r}, want {e['thread']!r}")
if "device" in e and b["device"] not in e["device"]:
    err.append(f"device {b['device']!r}, want one of {e['device']}")
if "pairs" in e and [b["host"], b["process"]] not in e["pairs"]:
    err.append(f"{b['process']} on {b['host']}: the process is on the other host")
if e.get("member_disk"):
    disks = {d["name"]: d for h in r["hosts"] if h["name"] == b["host"] for d in h["disks"]}
    if b["device"] not in disks or disks[b["device"]]["is_md"]:
        err.append(f"device {b['device']!r} is not a member disk")
for h in r["hosts"]:
    if h["samples"] <= 0:
        err.append(f"{h['name']}: no samples")
    if not any(x["kind"] == "agent_start" and x["host"] == h["name"] for x in r["events"]):
        err.append(f"{h['name']}: no agent_start")
if r["gaps"]:
    err.append(f"gaps {r['gaps']}")
if err:
    print(f"{name}: " + "; ".join(err))
    sys.exit(1)
who = f" on {b['host']}" if b["host"] else ""
print(f"{name}: {b['resource']}{who} {b['process'] or b['device'] or ''} ({b['utilization']})")
PY

ALL=(qnap-hbs-sender named-thread gige-full bond-slave-full sender-disks armv7-parallel swap-3.10
    wd-busy-indexers half-duplex-100)
if [[ $# -gt 0 ]]; then VARIANTS=("$@"); else VARIANTS=("${ALL[@]}"); fi

run_one() {
    local name=$1 dir="$TMP/run-$1"
    vr_record "$TMP/$name.json" "$dir" "$RECORD" || return 0
    "$NP" --db "$dir/nasprobe.db" report --json >"$dir/report.json" 2>"$dir/report.err" || {
        echo "report --json failed: $(cat "$dir/report.err")" >"$dir/result"
        return
    }
    "$NP" --db "$dir/nasprobe.db" report >"$dir/report.txt" 2>&1 || true
    if python3 "$TMP/check.py" "$name" "$dir/report.json" "$TMP/expect.json" >"$dir/check.out" 2>&1; then
        echo ok >"$dir/result"
    else
        cat "$dir/check.out" >"$dir/result"
    fi
}

say "running ${#VARIANTS[@]} variant(s), $PARALLEL at a time, recording $RECORD each"
running=0
for s in "${VARIANTS[@]}"; do
    [[ -f $TMP/$s.json ]] || fail "no variant $s (known: ${ALL[*]})"
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
for s in "${VARIANTS[@]}"; do
    d="$TMP/run-$s"
    if [[ "$(cat "$d/result" 2>/dev/null)" == ok ]]; then
        passed=$((passed + 1))
        say "PASS $(cat "$d/check.out")"
    else
        failed=$((failed + 1))
        say "FAIL $s: $(cat "$d/result" 2>/dev/null || echo 'no result')"
        [[ -f $d/report.txt ]] && { echo "----- $s: nasprobe report -----"; cat "$d/report.txt"; }
        [[ -f $d/report.json ]] && { echo "----- $s: nasprobe report --json -----"; cat "$d/report.json"; }
        echo "----- $s: end -----"
    fi
done
say "$((SECONDS - START)) s"
echo "verdict_variants: $passed passed, $failed failed"
[[ $failed == 0 ]]
