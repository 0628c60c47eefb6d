#!/usr/bin/env bash
# Reliability (issue 10): network cuts between two test network namespaces joined by a veth pair
# (private addresses that exist only inside the namespaces this script creates).
#
# Host "nas" runs two agents: A with the default 4 MiB ring, B with a 4 KiB ring (a second or
# two of history). Host "desk" runs `nasprobe watch` (stdout is a pipe: the plain per-second
# lines), which stores what it receives. The nas side of the link goes down (ip link set down)
# for NASPROBE_CUT_SECONDS (default 30), then up again:
#  - A: the stream resumes with no gap: the ring covered the cut; check finds seq 1..N stored
#    once each; the report window spans the pause with every sample counted, gaps [].
#  - B: the cut is longer than its ring: exactly one gap "ring overwrote" whose seq range is
#    exact (the seq before it and the seq after it are stored, nothing inside is), and it shows
#    in `report --json` gaps[], in `events` and on watch's line for B.
#
#   tests/e2e/reliability_netcut.sh          needs root, iproute2, util-linux
#   NASPROBE_BIN_DIR=DIR / NASPROBE_KEEP=1
set -euo pipefail
E2E_NAME=reliability_netcut
# shellcheck source=tests/e2e/lib/base.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib/base.sh"
# shellcheck source=tests/e2e/lib/netns.sh
source tests/e2e/lib/netns.sh
command -v sqlite3 >/dev/null || fail "sqlite3 missing"
((EUID == 0)) || fail "needs root (network namespaces)"
e2e_build release nasprobe nasprobe-agent
e2e_bins nasprobe nasprobe-agent
NP="$BIN/nasprobe"
AGENT="$BIN/nasprobe-agent"
CUT=${NASPROBE_CUT_SECONDS:-30}
start=$SECONDS

dump() {
    for f in "$NN_TMP"/*.log "$NN_TMP"/*.out "$NN_TMP"/plain.txt; do
        [[ -f $f ]] && { echo "--- $f"; tail -15 "$f"; }
    done
}
nn_setup netcut
NN_ON_FAIL=dump
nn_host nas
nn_host desk
nn_link nas np-nas 10.251.7.1 desk np-desk 10.251.7.2
ip -n "${NN_NS[nas]}" addr add 10.251.7.3/24 dev np-nas
DB="$NN_TMP/nasprobe.db"

nn_agent nas 10.251.7.1 --interval 100
nn_bg nas "$NN_TMP/agent-b.out" "$AGENT" --listen 10.251.7.3:7451 --token-file "$NN_TMP/token" \
    --name nasb --log-file "$NN_TMP/agent-b.log" --interval 100 --history-bytes 4096
nn_wait_port nas 10.251.7.3 7451 || nn_fail "agent B does not listen"

# watch, not a terminal: plain lines; it also stores.
nn_bg desk "$NN_TMP/watch.log" sh -c "exec '$NP' --db '$DB' --token-file '$NN_TMP/token' watch \
    --duration $((CUT + 45))s a=10.251.7.1:7451 b=10.251.7.3:7451 >'$NN_TMP/plain.txt'"
WATCH=$NN_PID
sleep 6
ip -n "${NN_NS[desk]}" link show np-desk | grep -q 'state UP' || nn_fail "no link before the cut"
before_a=$(sqlite3 "$DB" "SELECT max(last_seq) FROM instances i JOIN hosts h ON h.id=i.host WHERE h.name='a'")
nn_log "cutting the link for $CUT s (a stored up to seq $before_a)"
ip -n "${NN_NS[nas]}" link set np-nas down
sleep "$CUT"
ip -n "${NN_NS[desk]}" link show np-desk | grep -q 'NO-CARRIER' || nn_fail "the link was not down"
ip -n "${NN_NS[nas]}" link set np-nas up
nn_log "link up again; waiting for watch to end"
wait "$WATCH" || nn_fail "watch exited non-zero"

nn_log "checks"
"$NP" --db "$DB" check >"$NN_TMP/check.txt" || nn_fail "check: $(cat "$NN_TMP/check.txt")"
cat "$NN_TMP/check.txt"
q() { sqlite3 "$DB" "$1"; }
HA="(SELECT i.id FROM instances i JOIN hosts h ON h.id=i.host WHERE h.name='a')"
HB="(SELECT i.id FROM instances i JOIN hosts h ON h.id=i.host WHERE h.name='b')"
[[ $(q "SELECT count(*) FROM instances") == 2 ]] || nn_fail "one instance per agent expected"
# A: everything, no gap, and well past the cut.
# Samples stored: the raw rows of the open 15-minute window plus the folded chunks' counts (a
# run that crosses a quarter hour has most of them in chunks).
n_samples() { q "SELECT (SELECT count(*) FROM samples WHERE instance=$1) + (SELECT coalesce(sum(n), 0) FROM sample_chunks WHERE instance=$1)"; }
read -r a_last a_events <<<"$(q "SELECT i.last_seq, (SELECT count(*) FROM events WHERE instance=i.id) FROM instances i WHERE i.id=$HA" | tr '|' ' ')"
a_stored=$(($(n_samples "$HA") + a_events))
[[ $a_last == "$a_stored" ]] || nn_fail "a: $a_stored stored of 1..$a_last"
[[ $(q "SELECT count(*) FROM gaps WHERE instance=$HA") == 0 ]] || nn_fail "a has a gap"
((a_last >= before_a + CUT * 10)) || nn_fail "a did not resume past the cut: $a_last"
# The cut itself is inside A's data: some consecutive samples have the cut between their
# arrival... but not between their times: the largest time step between stored samples is ~100 ms.
max_step=$(q "SELECT max(d) FROM (SELECT time_ms - lag(time_ms) OVER (ORDER BY seq) AS d FROM samples WHERE instance=$HA)")
((max_step < 2000)) || nn_fail "a: a $max_step ms hole in sample times"
# B: exactly one gap, reason ring overwrote, exact range.
[[ $(q "SELECT count(*) FROM gaps WHERE instance=$HB") == 1 ]] || nn_fail "b: gaps $(q "SELECT * FROM gaps")"
read -r g_from g_to g_n g_reason <<<"$(q "SELECT from_seq, to_seq, samples, reason FROM gaps WHERE instance=$HB" | tr '|' ' ')"
[[ $g_reason == ring* ]] || nn_fail "b: reason $g_reason"
inside=$(q "SELECT (SELECT count(*) FROM samples WHERE instance=$HB AND seq BETWEEN $g_from AND $g_to) + (SELECT count(*) FROM events WHERE instance=$HB AND seq BETWEEN $g_from AND $g_to)")
[[ $inside == 0 ]] || nn_fail "b: $inside records stored inside the gap"
# Records on both edges: a sample or an event (since issue 15 events come more often).
# (A seq inside a chunk's seq range is stored: check proved no holes and the gap is exactly this.)
held() { q "SELECT (SELECT count(*) FROM samples WHERE instance=$HB AND seq = $1) + (SELECT count(*) FROM sample_chunks WHERE instance=$HB AND $1 BETWEEN first_seq AND last_seq) + (SELECT count(*) FROM events WHERE instance=$HB AND seq = $1)"; }
for edge in $((g_from - 1)) $((g_to + 1)); do
    (($(held "$edge") >= 1)) || nn_fail "b: the gap $g_from..$g_to is not bounded by stored records (seq $edge)"
done
[[ $g_n == $((g_to - g_from + 1)) ]] || nn_fail "b: gap samples $g_n for $g_from..$g_to"
grep -q "resuming at $((g_to + 1)) (instance same" "$NN_TMP/agent-b.log" ||
    nn_fail "agent B's log does not show a resume at $((g_to + 1))"
((g_n >= (CUT - 5) * 10)) || nn_fail "b: gap of only $g_n records for a $CUT s cut"
# Shown everywhere: report gaps[], events, watch.
"$NP" --db "$DB" report --json >"$NN_TMP/report.json"
grep -A8 '"gaps"' "$NN_TMP/report.json" | grep -q '"host": "b"' || nn_fail "report gaps[] lacks b"
grep -q "\"samples\": $g_n" "$NN_TMP/report.json" || nn_fail "report: gap of $g_n samples missing"
"$NP" --db "$DB" events >"$NN_TMP/events.txt"
grep -q "ring overwrote" "$NN_TMP/events.txt" || nn_fail "events do not show the gap: $(cat "$NN_TMP/events.txt")"
grep -q "^b .*gap: ring overwrote seq $g_from..$g_to" "$NN_TMP/plain.txt" ||
    nn_fail "watch does not show b's gap $g_from..$g_to"
# The report window covers the pause: every sample of A is counted in its window.
a_samples=$(n_samples "$HA")
grep -q "\"samples\": $a_samples" "$NN_TMP/report.json" || nn_fail "report: a's $a_samples samples"
! grep -q rejected "$NN_TMP/watch.log" || nn_fail "records rejected"
b_stored=$(n_samples "$HB")
nn_log "FIGURES netcut: cut_s=$CUT a: records=$a_last stored=$a_stored gaps=0 lost=0 max_sample_step_ms=$max_step; b (4 KiB ring): gap seq $g_from..$g_to ($g_n records, exact, in report/events/watch) samples_stored=$b_stored; took_s=$((SECONDS - start))"
echo "reliability_netcut: 1 passed, 0 failed"
