#!/usr/bin/env bash
# End-to-end test of `nasprobe deploy` (issue 31): an OpenSSH server in a network, pid and mount
# namespace made here (lib/netns.sh nn_sshd) is the NAS. `nasprobe deploy root@nas1` puts the
# agent there, `nas1` a `Host` alias of a test ssh config (HostName 127.0.0.1, Port 2222; ssh and
# scp wrappers pass `-F` it): the host list gets 127.0.0.1:7451, what ssh -G resolves it to
# (issue 41). --target sysv, prefix and init dir in a temp folder with a busybox-style rcS that
# runs S??* (nothing goes into /opt or /etc): the boot line names the S99 link, and after the
# agent is killed ("a reboot") running that rcS as at boot brings it back. `nasprobe record`
# gets records through the host list deploy wrote, a second deploy changes nothing, new
# --agent-args say "new settings", a deploy of another build over `ssh 'cat >'` (no scp)
# replaces it, `--uninstall` leaves nothing behind and a second says there was nothing. Each
# failure is checked for its one line: no agent inside this build, a login refused, a read-only
# prefix, a port taken by another agent, a port taken by an older agent speaking protocol 1, an
# agent that does not answer at --reach (nothing added to the host list).
#
# The agent is the x86_64 static build from dist/ when scripts/build-targets made it, else the
# host build. Needs root (namespaces), sshd (openssh-server), python3.
set -euo pipefail
E2E_NAME=deploy_cmd
# shellcheck source=tests/e2e/lib/base.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib/base.sh"
# shellcheck source=tests/e2e/lib/netns.sh
source "$REPO/tests/e2e/lib/netns.sh"

[[ $(id -u) == 0 ]] || e2e_skip deploy_cmd "needs root for namespaces"
[[ -x /usr/sbin/sshd ]] || nn_need_packages openssh-server openssh-client ||
    fail "openssh-server missing"
command -v python3 >/dev/null || fail "python3 missing"
nn_binaries
AGENT_BIN="$REPO/dist/nasprobe-agent-x86_64-unknown-linux-musl"
[[ -x $AGENT_BIN && $(uname -m) == x86_64 ]] || AGENT_BIN="$AGENT"

nn_setup deploy_cmd
nn_host nas
nn_sshd nas 127.0.0.1 2222
NS=${NN_NS[nas]}
on_fail() {
    echo "--- sshd log"; tail -n 20 "$NN_TMP/sshd.log" 2>/dev/null
    echo "--- agent log"; tail -n 20 "$PREFIX/agent.log" 2>/dev/null
}
NN_ON_FAIL=on_fail

PREFIX="$NN_TMP/nas/opt/nasprobe"
INITD="$NN_TMP/nas/etc/init.d"
HOSTS="$NN_TMP/conf/hosts"
SSH=(--ssh-opt Port=2222 --ssh-opt "IdentityFile=$NN_TMP/id" --ssh-opt IdentitiesOnly=yes
    --ssh-opt "UserKnownHostsFile=$NN_TMP/known_hosts" --ssh-opt StrictHostKeyChecking=accept-new)
# The NAS as most are reached: a Host alias in the user's ssh config.
cat >"$NN_TMP/ssh_config" <<CFG
Host nas1
    HostName 127.0.0.1
    Port 2222
    IdentityFile $NN_TMP/id
    IdentitiesOnly yes
    UserKnownHostsFile $NN_TMP/known_hosts
    StrictHostKeyChecking accept-new
CFG
for t in ssh scp; do
    printf '#!/bin/sh\nexec %s -F %q "$@"\n' "$t" "$NN_TMP/ssh_config" >"$NN_TMP/$t-alias"
    chmod 755 "$NN_TMP/$t-alias"
done
# busybox's boot: rcS runs every S??* of the init folder with `start`.
mkdir -p "$INITD"
printf '#!/bin/sh\nfor s in %q/S??*; do [ -x "$s" ] && "$s" start; done\n' "$INITD" >"$INITD/rcS"
chmod 755 "$INITD/rcS"
# nasprobe in the NAS's network namespace (the collector and the NAS share its loopback).
np() { ip netns exec "$NS" "$NASPROBE" --hosts-file "$HOSTS" --db "$NN_TMP/nasprobe.db" "$@"; }
deploy() {
    NASPROBE_SSH="${NASPROBE_SSH:-$NN_TMP/ssh-alias}" NASPROBE_SCP="${NASPROBE_SCP:-$NN_TMP/scp-alias}" \
        np deploy --target sysv --name nas --prefix "$PREFIX" --init-dir "$INITD" \
        --agent-args "${AGENT_ARGS:---interval 100}" "$@" root@nas1
}
# expect_fail WHAT PATTERN ARGS...: deploy ARGS fails with one line matching PATTERN.
expect_fail() {
    local what=$1 pat=$2 out
    shift 2
    if out="$("$@" 2>&1)"; then fail "$what: deploy succeeded"; fi
    grep -q -- "$pat" <<<"$out" || { echo "$out"; fail "$what: no line matching '$pat'"; }
    say "$what: $(grep -- "$pat" <<<"$out" | head -n 1)"
}

expect_fail "no agent inside" "this build has no agents inside" deploy
[[ ! -e $PREFIX ]] || fail "a failed deploy left $PREFIX"

say "deploying $AGENT_BIN over ssh into namespace $NS"
out="$(deploy --agent "$AGENT_BIN" 2>&1)" || { echo "$out"; fail "deploy failed"; }
echo "$out" | sed 's/^/    /'
grep -q "installed nasprobe-agent" <<<"$out" || fail "first deploy did not say installed"
grep -q "starts at boot: $INITD/S99nasprobe-agent -> nasprobe-agent (done)" <<<"$out" ||
    fail "the boot line does not name the rcS link"
[[ -L $INITD/S99nasprobe-agent ]] || fail "no S99 link"
grep -q "record with: nasprobe record nas" <<<"$out" || fail "no record line"
[[ -x "$INITD/nasprobe-agent" ]] || fail "init script not installed"
TOKEN="$NN_TMP/conf/tokens/nas.token"
[[ "$(stat -c %a "$PREFIX/token")" == 600 && "$(stat -c %a "$TOKEN")" == 600 ]] ||
    fail "token files are not mode 0600"
cmp -s "$PREFIX/token" "$TOKEN" || fail "fetched token differs"
grep -q "^nas 127.0.0.1:7451 $TOKEN\$" "$HOSTS" || { cat "$HOSTS"; fail "host not in the host list"; }
pid1="$(cat "$PREFIX/agent.pid")"

say "recording 3 s from the deployed agent by its host-list name"
out="$(np record --duration 3s nas 2>&1)" || { echo "$out"; fail "record failed"; }
n="$(sed -n 's/.*stored \([0-9]*\) records.*/\1/p' <<<"$out")"
((${n:-0} > 5)) || { echo "$out"; fail "record stored ${n:-no} records"; }
say "record stored $n records"

say "a reboot: the agent is stopped as at shutdown (SIGTERM), rcS runs as at boot"
# (SIGTERM: the agent removes its pidfile; the namespace's init does not reap, so a SIGKILLed
# agent would stay a zombie that its pidfile check takes for a live agent, which no reboot has.)
nn_run nas kill -TERM "$pid1"
for _ in $(seq 50); do [[ -e $PREFIX/agent.pid ]] || break; sleep 0.1; done
[[ ! -e $PREFIX/agent.pid ]] || fail "the agent did not stop"
nn_run nas "$INITD/rcS" >/dev/null || fail "rcS failed"
pid1="$(cat "$PREFIX/agent.pid")"
nn_run nas "$INITD/nasprobe-agent" status >/dev/null || fail "rcS did not start the agent"
say "rcS started the agent again (pid $pid1)"

say "deploying again: nothing changes"
out="$(deploy --agent "$AGENT_BIN" 2>&1)" || { echo "$out"; fail "second deploy failed"; }
grep -q "already installed, same version" <<<"$out" || { echo "$out"; fail "second deploy was not a no-op"; }
[[ "$(cat "$PREFIX/agent.pid")" == "$pid1" ]] || fail "second deploy restarted the agent"

say "new --agent-args only: the settings changed, not the agent"
out="$(AGENT_ARGS="--interval 200" deploy --agent "$AGENT_BIN" 2>&1)" || { echo "$out"; fail "deploy with new args failed"; }
grep -q "same agent (.*), new settings (agent.conf): restarted" <<<"$out" || { echo "$out"; fail "new args not said"; }
grep -q "^ARGS='--interval 200'\$" "$PREFIX/agent.conf" || fail "agent.conf lacks the new args"
pid1="$(cat "$PREFIX/agent.pid")"

say "another build, copied with ssh 'cat >' (no scp here): replaced and restarted"
cp "$AGENT_BIN" "$NN_TMP/agent2" && printf 'x' >>"$NN_TMP/agent2"
out="$(NASPROBE_SCP=/nonexistent/scp deploy --agent "$NN_TMP/agent2" 2>&1)" ||
    { echo "$out"; fail "deploy over cat failed"; }
grep -q "replaced the agent" <<<"$out" || { echo "$out"; fail "no replace"; }
cmp -s "$PREFIX/nasprobe-agent" "$NN_TMP/agent2" || fail "the installed agent is not the new build"
[[ "$(cat "$PREFIX/agent.pid")" != "$pid1" ]] || fail "the agent was not restarted"

say "failures, one line each"
expect_fail "login refused" "refused the login" np deploy --agent "$AGENT_BIN" "${SSH[@]}" nobody@127.0.0.1
nn_run nas mkdir -p "$NN_TMP/ro"
nn_run nas mount -t tmpfs -o ro tmpfs "$NN_TMP/ro"
expect_fail "read-only prefix" "read-only" np deploy --target sysv --agent "$AGENT_BIN" --name ro --port 7462 \
    --prefix "$NN_TMP/ro/nasprobe" --init-dir "$NN_TMP/ro/init.d" "${SSH[@]}" root@127.0.0.1
nn_run nas umount "$NN_TMP/ro"
nn_bg nas "$NN_TMP/agent-other.log" "$AGENT" --listen 127.0.0.1:7460 --token-file "$NN_TMP/token"
nn_wait_port nas 127.0.0.1 7460 || fail "the other agent does not listen"
# deploy_other PORT: a second install (its own prefix) onto PORT.
deploy_other() {
    local port=$1
    shift
    np deploy --target sysv --name "other$port" --agent "$AGENT_BIN" --port "$port" \
        --prefix "$NN_TMP/nas/other$port" --init-dir "$NN_TMP/nas/init$port" "${SSH[@]}" "$@" root@127.0.0.1
}
expect_fail "port of another agent" "port 7460 is in use.*another nasprobe agent" deploy_other 7460
# An older agent: its challenge frame says protocol 1 (length, version byte, variant 0).
nn_bg nas "$NN_TMP/old.log" python3 -c '
import socket
s = socket.socket(); s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
s.bind(("127.0.0.1", 7461)); s.listen(8)
while True:
    c, _ = s.accept(); c.sendall(b"\x22\0\0\0\x01\0" + bytes(32)); c.close()'
nn_wait_port nas 127.0.0.1 7461 || fail "the protocol-1 stand-in does not listen"
expect_fail "port of a protocol-1 agent" "older nasprobe agent (protocol 1)" deploy_other 7461
expect_fail "no answer at --reach" "nothing listens on 127.0.0.1:1 .*nothing was added here" \
    deploy_other 7463 --reach 127.0.0.1:1
! grep -q "^other7463 " "$HOSTS" || fail "a failed check left its host in the list"

say "uninstall"
out="$(deploy --uninstall 2>&1)" || { echo "$out"; fail "uninstall failed"; }
grep -q "removed: stopped the agent, its boot entry, the init script in $INITD, $PREFIX, the token here" <<<"$out" ||
    { echo "$out"; fail "uninstall did not say what it removed"; }
[[ ! -e $PREFIX && ! -e $INITD/nasprobe-agent && ! -L $INITD/S99nasprobe-agent ]] ||
    fail "uninstall left files on the NAS"
[[ ! -e $TOKEN ]] || fail "uninstall left the local token"
! grep -q "^nas " "$HOSTS" || fail "uninstall left the host in the list"
sleep 0.2
# (A zombie left to the namespace's init, which does not reap, has no command line.)
! nn_run nas pgrep -f "$PREFIX/nasprobe-agent" >/dev/null || fail "agent still running after uninstall"
out="$(deploy --uninstall 2>&1)" || { echo "$out"; fail "second uninstall failed"; }
grep -q "nothing to remove: no nasprobe-agent at $PREFIX" <<<"$out" || { echo "$out"; fail "second uninstall claimed a removal"; }

say "OK ($((SECONDS - START)) s)"
echo "deploy_cmd: 1 passed, 0 failed"
