#!/usr/bin/env bash
# Alerts (issue 27): stall. Two "hosts" (network + pid namespaces, tests/e2e/lib/netns.sh)
# joined by a veth pair; src sends to dst through a token-bucket shaper on src's veth at
# 160 Mbit/s (20 MB/s), recorded by `nasprobe record --alert stall.for=10s --alert
# stall.after_for=3s` (below 1 MB/s, above 5 MB/s: the defaults) with a webhook receiver:
#  - the shaper dropped to 80 kbit/s (a trickle) → one stall firing within stall.for + 15 s
#    (the flow is judged over its last 5 s), and no second one while it lasts;
#  - the shaper back at 160 Mbit/s → one resolved;
#  - report --json lists the alert in alerts[].
#
#   tests/e2e/alerts_stall.sh         build (release) and run; needs root (else skipped; a
#                                     failure under CI=true)
#   NASPROBE_BIN_DIR=DIR ...          use nasprobe and nasprobe-agent from DIR, no build
#   NASPROBE_KEEP=1 ...               keep the temp folder
set -euo pipefail
E2E_NAME=alerts_stall
# shellcheck source=tests/e2e/lib/base.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib/base.sh"
[[ $(id -u) == 0 ]] || e2e_skip alerts_stall "needs root (network and pid namespaces, tc)"
# shellcheck source=tests/e2e/lib/netns.sh
source "$REPO/tests/e2e/lib/netns.sh"
NN_TAG=alerts_stall
for c in ip tc jq python3 unshare nsenter; do command -v "$c" >/dev/null || nn_fail "$c missing (scripts/setup installs it)"; done
e2e_build release nasprobe nasprobe-agent
e2e_bins nasprobe nasprobe-agent
NASPROBE="$BIN/nasprobe"
AGENT="$BIN/nasprobe-agent"

nn_setup alerts_stall
T=$NN_TMP
HOOK=$T/hook.jsonl
show() {
    tail -n 20 "$T/record.log" "$HOOK" 2>/dev/null
    ip netns exec "${NN_NS[src]}" "$NASPROBE" --db "$T/db" alerts 2>&1 | tail -5
}
NN_ON_FAIL=show
PY="$(python3 -c 'import os, sys; print(os.path.realpath(sys.executable))')"
ln -s "$PY" "$T/np27rd"
ln -s "$PY" "$T/np27wr"

nn_host src
nn_host dst
nn_link src vsrc 10.249.0.1 dst vdst 10.249.0.2
shape() { # RATE
    ip netns exec "${NN_NS[src]}" tc qdisc replace dev vsrc root tbf rate "$1" burst 32kb latency 50ms ||
        nn_fail "tc tbf $1 on vsrc"
}
shape 160mbit
nn_agent src 10.249.0.1 --interval 500
nn_agent dst 10.249.0.2 --interval 500
# The receiver (the test's webhook) listens on src's loopback, where record runs.
nn_bg src "$T/hook.err" python3 "$REPO/tests/e2e/lib/alert_receiver.py" 9527 "$HOOK"
nn_wait_port src 127.0.0.1 9527 || nn_fail "the webhook receiver does not listen"
nn_bg dst "$T/reader.err" "$T/np27rd" -c '
import socket
s = socket.socket(); s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
s.bind(("10.249.0.2", 9000)); s.listen(1)
c, _ = s.accept()
while c.recv(1 << 16): pass'
nn_wait_port dst 10.249.0.2 9000 || nn_fail "the reader does not listen"
nn_bg src "$T/record.log" "$NASPROBE" --db "$T/db" --token-file "$T/token" --hosts-file "$T/hosts" \
    record --alert stall.for=10s --alert stall.after_for=3s --no-alert death \
    --notify webhook=http://127.0.0.1:9527/hook src=10.249.0.1:7451 dst=10.249.0.2:7451
nn_bg src "$T/writer.err" "$T/np27wr" -c '
import socket
c = socket.create_connection(("10.249.0.2", 9000)); b = b"x" * (1 << 16)
while True: c.sendall(b)'
alerts() { ip netns exec "${NN_NS[src]}" "$NASPROBE" --db "$T/db" alerts --json 2>/dev/null || echo '{}'; }
stalls() { alerts | jq -r "[.alerts[] | select(.rule == \"stall\" and .state == \"$1\")] | length"; }
nn_log "20 s of the flow at 20 MB/s"
sleep 20
[[ $(stalls firing) == 0 ]] || nn_fail "a stall while the flow runs"
nn_log "the shaper down to 80 kbit/s"
shape 80kbit
stalled_at=$SECONDS
until_t=$((SECONDS + 22))
while ((SECONDS < until_t)); do
    [[ $(stalls firing) == 1 ]] && break
    sleep 0.5
done
[[ $(stalls firing) == 1 ]] || nn_fail "no stall firing within 22 s (stall.for=10s)"
fired_s=$((SECONDS - stalled_at))
nn_log "stall firing after $fired_s s: $(alerts | jq -r '.alerts[] | select(.rule == "stall") | .summary')"
sleep 10
[[ $(alerts | jq '[.alerts[] | select(.rule == "stall")] | length') == 1 ]] || nn_fail "a second stall alert"
nn_log "the shaper back at 160 Mbit/s"
shape 160mbit
lifted_at=$SECONDS
until_t=$((SECONDS + 20))
while ((SECONDS < until_t)); do
    [[ $(stalls resolved) == 1 ]] && break
    sleep 0.5
done
[[ $(stalls resolved) == 1 ]] || nn_fail "the stall not resolved within 20 s of the shaper lifted"
resolved_s=$((SECONDS - lifted_at))
sleep 3
got=$(jq -r 'select(.rule == "stall") | .state' "$HOOK" | paste -sd,)
[[ $got == "firing,resolved" ]] || nn_fail "webhook deliveries: $got"
ip netns exec "${NN_NS[src]}" "$NASPROBE" --db "$T/db" report --since 2m --json >"$T/report.json" ||
    nn_fail "report"
jq -e '[.alerts[] | select(.rule == "stall" and .state == "resolved")] | length == 1' "$T/report.json" >/dev/null ||
    nn_fail "report --json alerts[]: $(jq -c '.alerts' "$T/report.json")"
nn_log "FIGURES alerts_stall: fired_after_s=$fired_s (stall.for=10s) resolved_after_s=$resolved_s stall_alerts=1 deliveries=2 took_s=$((SECONDS - START))"
echo "alerts_stall: 1 passed, 0 failed"
