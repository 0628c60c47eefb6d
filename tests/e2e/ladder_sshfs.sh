#!/usr/bin/env bash
# `nasprobe ladder` through a real network filesystem: a "desktop" and a "NAS" network + PID
# namespace joined by a veth shaped with tc to 200 Mbit/s; sshd on the NAS side exports a folder,
# the desktop mounts it with sshfs (FUSE) and runs the ladder with the NAS's agent named. Checks:
# every step ran at about the shaped rate (15-26 MB/s), its grade is the one its MB/s earns on a
# 200 Mbit/s link, each step names a wall on the NAS (the shaped NIC vnas when the machine is
# otherwise idle), the test files are gone afterwards,
# the recording is in the store (`report` covers it); then Ctrl-C in the middle of a ladder ends
# it with its files removed.
#
#   tests/e2e/ladder_sshfs.sh              build (release) and run; needs root
#   NASPROBE_BIN_DIR=DIR ...               use nasprobe and nasprobe-agent from DIR
set -euo pipefail
E2E_NAME=ladder_sshfs
# shellcheck source=tests/e2e/lib/base.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib/base.sh"
# shellcheck source=tests/e2e/lib/netns.sh
source "$REPO/tests/e2e/lib/netns.sh"
NN_TAG=ladder_sshfs
[[ $(id -u) == 0 ]] || e2e_skip ladder_sshfs "needs root for network namespaces and FUSE mounts"
for c in sshfs sshd fusermount3 jq tc; do
    command -v "$c" >/dev/null || [[ -x /usr/sbin/$c ]] || nn_fail "$c is missing (scripts/setup installs it)"
done
nn_binaries
nn_setup ladder_sshfs
T=$NN_TMP
MBIT=200
PORT=2222
SHARE="$T/share"
MNT="$T/mnt"
mkdir -p "$SHARE" "$MNT"

show_logs() {
    echo "---- ladder"
    cat "$T/ladder.json" "$T/ladder.err" 2>/dev/null || true
    echo "---- agent"
    tail -n 5 "$T"/agent-*.log 2>/dev/null || true
    echo "---- sshd"
    tail -n 10 "$T/sshd.log" 2>/dev/null || true
}
NN_ON_FAIL=show_logs
unmount() { nn_run desk fusermount3 -u "$MNT" 2>/dev/null || true; }

nn_host desk
nn_host nas
nn_link desk vdesk 10.252.0.1 nas vnas 10.252.0.2
for hv in desk:vdesk nas:vnas; do
    ip netns exec "${NN_NS[${hv%%:*}]}" tc qdisc add dev "${hv#*:}" root tbf rate ${MBIT}mbit \
        burst 64kb latency 50ms || nn_fail "tc on ${hv#*:}"
done
nn_agent nas 10.252.0.2 --interval 500 --nice 0 --link-speed vnas=$MBIT

# --- sshd on the NAS, sshfs on the desktop ----------------------------------------------------
nn_sshd nas 10.252.0.2 $PORT "Subsystem sftp internal-sftp"
nn_run desk sshfs -p $PORT -o IdentityFile="$T/id" -o StrictHostKeyChecking=no \
    -o UserKnownHostsFile=/dev/null -o BatchMode=yes -o cache=no \
    "root@10.252.0.2:$SHARE" "$MNT" || nn_fail "sshfs mount failed"
NN_ON_FAIL=show_logs_and_unmount
show_logs_and_unmount() { show_logs; unmount; }
nn_run desk findmnt -n "$MNT" | grep -q fuse.sshfs || nn_fail "$MNT is not an sshfs mount"

# --- the ladder -------------------------------------------------------------------------------
nn_log "ladder over sshfs, $MBIT Mbit/s"
nn_run desk "$NASPROBE" --db "$T/nasprobe.db" --token-file "$T/token" ladder "$MNT" \
    --agent nas=10.252.0.2:7451 --big 96M --series 2M..32M --json >"$T/ladder.json" \
    2>"$T/ladder.err" || nn_fail "ladder failed: $(cat "$T/ladder.err")"
jq -c '{cache_bypass, link_mbit, steps: [.steps[] | {name, mb_s, grade, wall: .wall.resource}]}' \
    "$T/ladder.json"
python3 - "$T/ladder.json" <<'PY' || nn_fail "the ladder's figures are off"
import json, sys
l = json.load(open(sys.argv[1]))
errors = []
names = [s["name"] for s in l["steps"]]
if names != ["single_write", "single_read", "series_write", "series_read"]:
    errors.append(f"steps {names}")
if l["link_mbit"] != 200:
    errors.append(f"link_mbit {l['link_mbit']} (the agent's --link-speed is 200)")
def grade(mb_s, link):
    x = mb_s * 1000 / link
    return ("excellent" if x >= 90 else "good" if x >= 70 else "fair" if x >= 50
            else "misconfigured" if x >= 30 else "seriously_wrong")
for s in l["steps"]:
    if not 15 <= s["mb_s"] <= 26:
        errors.append(f"{s['name']}: {s['mb_s']} MB/s, not about 200 Mbit/s")
    if s["grade"] != grade(s["mb_s"], 200):
        errors.append(f"{s['name']}: grade {s['grade']} for {s['mb_s']} MB/s on 200 Mbit/s")
    # The wall of each step on the NAS side: on an idle machine the shaped NIC (vnas); on a busy
    # one (this VM's two cores shared with builds) the cores may be the truth instead. Either
    # way a named resource of the NAS, never "none" or another host.
    w = s.get("wall") or {}
    if w.get("resource") in (None, "none") or w.get("host") != "nas":
        errors.append(f"{s['name']}: wall {w.get('resource')} on {w.get('host')}, want a resource of nas")
    if w.get("resource") == "nic" and w.get("device") != "vnas":
        errors.append(f"{s['name']}: NIC wall on {w.get('device')}, want vnas")
    if s["bytes"] <= 0 or s["seconds"] <= 0:
        errors.append(f"{s['name']}: {s['bytes']} bytes in {s['seconds']} s")
if "slowest:" not in l["verdict"]:
    errors.append(f"verdict {l['verdict']!r}")
if errors:
    print("\n".join(errors), file=sys.stderr)
    sys.exit(1)
PY
[[ -z $(ls -A "$SHARE") ]] || nn_fail "test files left on the share: $(ls -A "$SHARE")"
nn_run desk "$NASPROBE" --db "$T/nasprobe.db" report --json >"$T/report.json" || nn_fail "report failed"
[[ $(jq '.hosts[] | select(.name == "nas") | .samples' "$T/report.json") -ge 10 ]] ||
    nn_fail "the ladder's recording is not in the store"
nn_log "text output:"
nn_run desk "$NASPROBE" --db "$T/nasprobe2.db" --token-file "$T/token" ladder "$MNT" \
    --big 32M --series 2M..8M | sed 's/^/    /'

# --- Ctrl-C in the middle ---------------------------------------------------------------------
nn_bg desk "$T/int.out" "$NASPROBE" --db "$T/nasprobe3.db" ladder "$MNT" --big 400M --series 2M..4M
LPID=$NN_PID
for _ in $(seq 50); do
    [[ -n $(ls -A "$SHARE" 2>/dev/null) ]] && break
    sleep 0.1
done
sleep 1
[[ -n $(ls -A "$SHARE") ]] || nn_fail "the interrupted ladder never wrote"
# The ladder runs in the desk pid namespace; signal it there by its host pid's child.
kill -INT "$(pgrep -P "$LPID" -f 'nasprobe' || echo "$LPID")" 2>/dev/null || kill -INT "$LPID"
rc=0
wait "$LPID" || rc=$?
((rc != 0)) || nn_fail "an interrupted ladder exited 0"
grep -q "interrupted" "$T/int.out" || nn_fail "no 'interrupted' message: $(cat "$T/int.out")"
[[ -z $(ls -A "$SHARE") ]] || nn_fail "Ctrl-C left test files: $(ls -A "$SHARE")"
nn_log "Ctrl-C: $(grep -m1 interrupted "$T/int.out")"
unmount
nn_log "OK"
echo "ladder_sshfs: 1 passed, 0 failed"
