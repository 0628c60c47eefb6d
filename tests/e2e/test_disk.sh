#!/usr/bin/env bash
# `nasprobe test disk` against a disk wall made real: a loop device with an ext4 filesystem whose
# writes the blkio cgroup throttles to 20 MB/s for the agent (cgroup v1
# blkio.throttle.write_bps_device, or v2 io.max). Checks: about 20 MB/s write on that loop
# device, the big-block pass reported, the file gone; and the refusals — an agent without
# --allow-tests (the flag named), a second test while one runs, a test within a minute of the
# last, a size over 25% of the free space, a folder on tmpfs — and the collector killed mid-test
# (the agent deletes its file within a second, says so, and keeps serving).
#
#   tests/e2e/test_disk.sh        build (debug) and run; needs root
set -euo pipefail
E2E_NAME=test_disk
# shellcheck source=tests/e2e/lib/common.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib/common.sh"
# shellcheck source=tests/e2e/lib/skip.sh
source "$REPO/tests/e2e/lib/skip.sh"
[[ $(id -u) == 0 ]] || e2e_skip test_disk "needs root for a loop device and the blkio cgroup"
for c in losetup mkfs.ext4 jq; do command -v "$c" >/dev/null || fail "$c is missing"; done

# shellcheck source=tests/e2e/lib/loopdisk.sh
source "$REPO/tests/e2e/lib/loopdisk.sh"
TMP="$(mktemp -d /tmp/nasprobe-testdisk.XXXXXX)"
trap ld_exit EXIT

# The agent in a cgroup whose writes to the loop device are throttled to 20 MB/s.
ld_setup 600M $((20 * 1000 * 1000)) testdisk

start_agent() { # PORT ARGS...
    local port=$1
    shift
    "$AGENT" --listen "127.0.0.1:$port" --token-file "$TMP/token" --interval 500 --nice 0 \
        --log-file "$TMP/agent-$port.log" "$@" &
    PIDS+=($!)
    echo $! >"$CG/cgroup.procs"
    for _ in $(seq 50); do
        grep -q listening "$TMP/agent-$port.log" 2>/dev/null && return 0
        sleep 0.1
    done
    fail "agent on $port did not start"
}
PORT=$((20000 + RANDOM % 20000))
start_agent "$PORT" --allow-tests
NPT=("$NP" --db "$TMP/np.db" --token-file "$TMP/token" test disk "nas=127.0.0.1:$PORT")

# --- the measurement -------------------------------------------------------------------------------
"${NPT[@]}" --path "$TMP/mnt" --size 100M --json >"$TMP/disk.json" 2>"$TMP/disk.err" ||
    fail "test disk failed: $(cat "$TMP/disk.err")"
jq -c '{device, fs_type, write_mb_s, read_mb_s, big_block_bytes, big_block_write_mb_s, wall: .wall.resource}' "$TMP/disk.json"
jq -e --arg dev "$DEV" '.device == $dev' "$TMP/disk.json" >/dev/null ||
    fail "the result names device $(jq -r .device "$TMP/disk.json"), want $DEV"
jq -e '.write_mb_s >= 15 and .write_mb_s <= 23' "$TMP/disk.json" >/dev/null ||
    fail "write $(jq .write_mb_s "$TMP/disk.json") MB/s, want about 20 (the throttle)"
jq -e '.block_bytes == 1048576 and .bytes == 100000000 and .read_mb_s > 0' "$TMP/disk.json" >/dev/null ||
    fail "block, bytes or read figure off"
jq -e '.big_block_bytes >= 16777216 and .big_block_write_mb_s > 0' "$TMP/disk.json" >/dev/null ||
    fail "no big-block pass reported"
jq -e '.wall.resource != null' "$TMP/disk.json" >/dev/null || fail "no wall in the result"
[[ -z $(ls -A "$TMP/mnt" | grep -v lost+found) ]] || fail "test file left: $(ls -A "$TMP/mnt")"
say "measured: $(jq -r '"\(.write_mb_s) MB/s write on \(.device)"' "$TMP/disk.json")"

# --- refusals ----------------------------------------------------------------------------------------
expect_refusal() { # WHAT PATTERN CMD...
    local what=$1 pat=$2 rc=0
    shift 2
    "$@" >"$TMP/r.out" 2>"$TMP/r.err" || rc=$?
    ((rc != 0)) || fail "$what: exit 0"
    grep -q -- "$pat" "$TMP/r.err" || fail "$what: no '$pat' in: $(cat "$TMP/r.err")"
    say "refused ($what): $(head -1 "$TMP/r.err")"
}
expect_refusal "within a minute" "one test a minute" "${NPT[@]}" --path "$TMP/mnt" --size 10M
PORT2=$((PORT + 1))
start_agent "$PORT2"
expect_refusal "no --allow-tests" "start nasprobe-agent with --allow-tests" \
    "$NP" --db "$TMP/np.db" --token-file "$TMP/token" test disk "127.0.0.1:$PORT2" --path "$TMP/mnt" --size 10M
PORT3=$((PORT + 2))
start_agent "$PORT3" --allow-tests
NP3=("$NP" --db "$TMP/np.db" --token-file "$TMP/token" test disk "box3=127.0.0.1:$PORT3")
expect_refusal "over 25% of the free space" "25%" "${NP3[@]}" --path "$TMP/mnt" --size 5G
mkdir -p /dev/shm/nasprobe-testdisk-$$
expect_refusal "tmpfs" "tmpfs" "${NP3[@]}" --path /dev/shm/nasprobe-testdisk-$$ --size 10M
rmdir /dev/shm/nasprobe-testdisk-$$
# One running (130 MB at 20 MB/s: ~7 s) and a second asked for meanwhile.
"${NP3[@]}" --path "$TMP/mnt" --size 130M >"$TMP/long.out" 2>&1 &
LONG=$!
for _ in $(seq 50); do
    ls -A "$TMP/mnt" | grep -q nasprobe-test && break
    sleep 0.1
done
ls -A "$TMP/mnt" | grep -q nasprobe-test || fail "the long test did not start"
expect_refusal "one at a time" "already running" "${NP3[@]}" --path "$TMP/mnt" --size 10M
# --- the collector killed mid-test --------------------------------------------------------------------
kill -9 "$LONG"
wait "$LONG" 2>/dev/null || true
gone=""
for _ in $(seq 10); do
    sleep 0.1
    ls -A "$TMP/mnt" | grep -q nasprobe-test || { gone=1; break; }
done
[[ -n $gone ]] || fail "the agent kept its test file over a second after the collector died"
for _ in $(seq 300); do
    grep -q "test ended after its collector went away" "$TMP/agent-$PORT3.log" && break
    sleep 0.1
done
grep -q "test ended after its collector went away" "$TMP/agent-$PORT3.log" || fail "no end of the test in the log"
kill -0 "${PIDS[2]}" || fail "the agent died"
"$NP" --db "$TMP/np.db" --token-file "$TMP/token" record --duration 2s "box3=127.0.0.1:$PORT3" \
    >/dev/null 2>&1 || fail "the agent does not serve after the cancelled test"
say "collector killed mid-test: file removed within a second, agent still serving"
say "PASS in $((SECONDS - START)) s"
