#!/usr/bin/env bash
# The item a copy is stuck on (issue 16): a real `dd` writes a big file with O_DIRECT into an
# ext4 filesystem on a loop device whose writes the blkio cgroup throttles to 3 MB/s (cgroup v1
# blkio.throttle.write_bps_device, or v2 io.max; the dd runs in that cgroup, the agent does not),
# while an agent runs and `nasprobe record` records, twice. Checks, from `report --json` after
# each recording: `transfers[]` names that file (pid, process dd, mode write, the file's size)
# with a position that grew between the two reports and an MB/s under 5; `stalls[]` holds the
# crawl (at least 5 s under 5 MB/s) with that file as its item; the text report says so; and
# `watch` shows it as the host's current item.
#
#   tests/e2e/crawl_item.sh        build (debug) and run; needs root
set -euo pipefail
E2E_NAME=crawl_item
# shellcheck source=tests/e2e/lib/common.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib/common.sh"
# shellcheck source=tests/e2e/lib/skip.sh
source "$REPO/tests/e2e/lib/skip.sh"
[[ $(id -u) == 0 ]] || e2e_skip crawl_item "needs root for a loop device and the blkio cgroup"
for c in losetup mkfs.ext4 jq dd; do command -v "$c" >/dev/null || fail "$c is missing"; done

# shellcheck source=tests/e2e/lib/loopdisk.sh
source "$REPO/tests/e2e/lib/loopdisk.sh"
TMP="$(mktemp -d /tmp/nasprobe-crawl.XXXXXX)"
trap ld_exit EXIT

# dd (not the agent) goes in the cgroup: its writes to the loop device at 3 MB/s.
ld_setup 300M $((3 * 1000 * 1000)) crawl

PORT=$((20000 + RANDOM % 20000))
"$AGENT" --listen "127.0.0.1:$PORT" --token-file "$TMP/token" --interval 500 --nice 0 \
    --log-file "$TMP/agent.log" &
PIDS+=($!)
for _ in $(seq 50); do
    grep -q listening "$TMP/agent.log" 2>/dev/null && break
    sleep 0.1
done
grep -q listening "$TMP/agent.log" || fail "agent did not start"

# The crawling copy: 200 MB at 3 MB/s would take a minute; it is stopped at the end.
ITEM="$TMP/mnt/big file.img"
sh -c 'echo $$ >"$1/cgroup.procs" && exec dd if=/dev/zero of="$2" bs=1M count=200 oflag=direct status=none' \
    sh "$CG" "$ITEM" &
DD=$!
PIDS+=("$DD")
NPX=("$NP" --db "$TMP/np.db" --token-file "$TMP/token")
report() { # N: record 10 s, then report --json into report-N.json
    "${NPX[@]}" record --duration 10s "nas=127.0.0.1:$PORT" >"$TMP/record-$1.out" 2>&1 ||
        fail "record $1 failed: $(cat "$TMP/record-$1.out")"
    "${NPX[@]}" report --json >"$TMP/report-$1.json" 2>"$TMP/report-$1.err" ||
        fail "report $1 failed: $(cat "$TMP/report-$1.err")"
    kill -0 "$DD" 2>/dev/null || fail "dd ended early: the throttle did not hold"
}
report 1
report 2

item() { # N: the transfer on ITEM of report N
    jq -c --arg p "$ITEM" '[.transfers[] | select(.path == $p)][0]' "$TMP/report-$1.json"
}
say "report 1: $(item 1)"
say "report 2: $(item 2)"
for n in 1 2; do
    jq -e --arg p "$ITEM" --argjson pid "$DD" \
        'any(.transfers[]; .path == $p and .pid == $pid and .process == "dd" and .mode == "write")' \
        "$TMP/report-$n.json" >/dev/null ||
        fail "report $n: transfers[] does not name $ITEM written by dd [$DD]: $(jq -c .transfers "$TMP/report-$n.json")"
done
P1=$(item 1 | jq .position_bytes)
P2=$(item 2 | jq .position_bytes)
((P2 > P1)) || fail "the position did not grow: $P1 then $P2"
item 2 | jq -e '.size_bytes >= .position_bytes and .mb_s > 0 and .mb_s < 5' >/dev/null ||
    fail "size or MB/s off: $(item 2)"
jq -e --arg p "$ITEM" \
    'any(.stalls[]; .item == $p and .process == "dd" and .mb_s < 5 and .seconds >= 5)' \
    "$TMP/report-2.json" >/dev/null ||
    fail "stalls[] does not hold the crawl on $ITEM: $(jq -c .stalls "$TMP/report-2.json")"
say "stall: $(jq -c --arg p "$ITEM" '[.stalls[] | select(.item == $p)][0] | {from, to, seconds, mb_s, item}' "$TMP/report-2.json")"
"${NPX[@]}" report >"$TMP/report.txt"
grep -F "Crawl on nas: " "$TMP/report.txt" | grep -qF "on $ITEM (dd [$DD])" ||
    fail "the text report does not show the crawl: $(grep -E '^(Crawl|Transfer)' "$TMP/report.txt")"
grep -E '^(Crawl|Transfer)' "$TMP/report.txt" | head -3
# watch (plain lines: stdout is not a terminal) shows the current item of the host.
"${NPX[@]}" watch --duration 6s "nas=127.0.0.1:$PORT" >"$TMP/watch.txt" 2>&1 ||
    fail "watch failed: $(cat "$TMP/watch.txt")"
grep -F "| item dd [$DD] writing $ITEM " "$TMP/watch.txt" >/dev/null ||
    fail "watch does not show the item: $(tail -2 "$TMP/watch.txt")"
say "watch: $(grep -o '| item .*' "$TMP/watch.txt" | tail -1)"
say "PASS in $((SECONDS - START)) s"
