#!/usr/bin/env bash
# Alerts (issue 27): full. A 160 MB ext4 on a loop device, sampled by the agent (--mount);
# a writer lands about 8 MB/s on it, and `nasprobe record --expect 1G --alert full.over=10s`
# is told the transfer is 1 GB: `full` fires before the file system is full, with both ETAs
# (when it will be full, when the transfer would end), and the writer is stopped before it
# fills it (resolved: nothing lands any more).
#
#   tests/e2e/alerts_full.sh          needs root (losetup, mount; else skipped; a failure
#                                     under CI=true)
#   NASPROBE_BIN_DIR=DIR ...          use nasprobe and nasprobe-agent from DIR, no build
#   NASPROBE_KEEP=1 ...               keep the temp folder
set -euo pipefail
E2E_NAME=alerts_full
T=$E2E_NAME
# shellcheck source=tests/e2e/lib/base.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib/base.sh"
[[ $(id -u) == 0 ]] || e2e_skip $T "needs root (a loop device and a mount)"
fail() {
    echo "$T: FAIL: $*" >&2
    for f in record.log alerts.json; do
        [[ -f ${TMP:-/nonexistent}/$f ]] && { echo "--- $f" >&2; tail -20 "$TMP/$f" >&2; }
    done
    exit 1
}
for c in jq losetup mkfs.ext4 mount python3; do command -v $c >/dev/null || fail "$c missing (scripts/setup installs it)"; done
e2e_build release nasprobe nasprobe-agent
e2e_bins nasprobe nasprobe-agent
NP="$BIN/nasprobe"
AGENT="$BIN/nasprobe-agent"
TMP="$(mktemp -d /tmp/nasprobe-alerts-full.XXXXXX)"
PIDS=()
LOOP=""
MNT="$TMP/mnt"
cleanup() {
    for p in "${PIDS[@]}"; do kill -9 "$p" 2>/dev/null || true; done
    wait 2>/dev/null || true
    mountpoint -q "$MNT" && umount "$MNT"
    [[ -n $LOOP ]] && losetup -d "$LOOP" 2>/dev/null
    if [[ -n ${NASPROBE_KEEP:-} ]]; then say "kept $TMP"; else rm -rf "$TMP"; fi
}
trap cleanup EXIT
TOK="$TMP/token"
DB="$TMP/nasprobe.db"
PORT=$((20000 + RANDOM % 20000))
start=$SECONDS
truncate -s 160M "$TMP/fs.img"
mkfs.ext4 -q -F "$TMP/fs.img"
LOOP=$(losetup --find --show "$TMP/fs.img") || fail "losetup"
mkdir -p "$MNT"
mount "$LOOP" "$MNT" || fail "mount $LOOP"
e2e_agent "$TMP/agent.log" --interval 500 --name dst --mount "$MNT"
"$NP" --db "$DB" --token-file "$TOK" --hosts-file "$TMP/hosts" record --expect 1G \
    --alert full.over=10s --no-alert stall --no-alert death --no-alert host_lost \
    dst=127.0.0.1:$PORT 2>"$TMP/record.log" &
REC=$!
PIDS+=($REC)
sleep 2
# 1 MB every 0.125 s, synced (about 8 MB/s).
python3 -c '
import os, sys, time
f = open(sys.argv[1], "wb"); b = b"x" * 1000000
while True:
    f.write(b); f.flush(); os.fsync(f.fileno()); time.sleep(0.125)' "$MNT/landing" 2>/dev/null &
W=$!
PIDS+=($W)
alerts_json() { "$NP" --db "$DB" alerts --json 2>/dev/null || echo '{}'; }
until_t=$((SECONDS + 40))
while ((SECONDS < until_t)); do
    [[ $(alerts_json | jq '[.alerts[] | select(.rule == "full" and .state == "firing")] | length') == 1 ]] && break
    sleep 0.5
done
free_at_fire=$(df -B1 --output=avail "$MNT" | tail -1 | tr -d ' ')
alerts_json >"$TMP/alerts.json"
[[ $(jq '[.alerts[] | select(.rule == "full" and .state == "firing")] | length' "$TMP/alerts.json") == 1 ]] ||
    fail "no full alert within 40 s"
kill -KILL $W
wait $W 2>/dev/null || true
((free_at_fire > 0)) || fail "fired only once the file system was full"
jq -e '[.alerts[] | select(.rule == "full")][0] | .host == "dst" and (.summary | test("full in .* before the transfer ends"))
    and (.evidence | join(" ") | test("full in .*; the transfer ends in"))' "$TMP/alerts.json" >/dev/null ||
    fail "full alert: $(jq -c '.alerts' "$TMP/alerts.json")"
say "$(jq -r '[.alerts[] | select(.rule == "full")][0] | .summary + " | " + (.evidence | join(" | "))' "$TMP/alerts.json")"
say "the writer stopped with $((free_at_fire / 1000000)) MB free; waiting for resolved"
until_t=$((SECONDS + 30))
while ((SECONDS < until_t)); do
    [[ $(alerts_json | jq '[.alerts[] | select(.rule == "full" and .state == "resolved")] | length') == 1 ]] && break
    sleep 0.5
done
[[ $(alerts_json | jq '[.alerts[] | select(.rule == "full")] | length') == 1 ]] || fail "want one full alert"
[[ $(alerts_json | jq '[.alerts[] | select(.rule == "full" and .state == "resolved")] | length') == 1 ]] ||
    fail "not resolved once nothing lands"
kill -INT $REC
wait $REC || fail "record exited non-zero"
say "FIGURES alerts_full: free_mb_when_fired=$((free_at_fire / 1000000)) fs_mb=160 took_s=$((SECONDS - start))"
echo "$T: 1 passed, 0 failed"
