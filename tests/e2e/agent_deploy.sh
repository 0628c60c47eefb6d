#!/usr/bin/env bash
# End-to-end test of the deploy path: an OpenSSH server (Debian's openssh-server) in a network
# namespace made here, `scripts/deploy --target sysv` into it over ssh, then a collector-side
# client reads samples from the deployed agent, a second deploy changes nothing, and
# `--uninstall` removes everything.
#
# Needs root (ip netns). Everything runs on the namespace's own loopback: no traffic leaves
# this machine. The "NAS" file system is a temporary directory (--prefix/--init-dir), so nothing
# is installed in /opt or /etc. Cleans up on any exit.
set -euo pipefail
E2E_NAME=agent_deploy
# shellcheck source=tests/e2e/lib/base.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib/base.sh"

[[ $(id -u) == 0 ]] || e2e_skip agent_deploy "needs root for ip netns"
command -v ip >/dev/null || fail "ip (iproute2) missing"

# --- openssh-server, without letting its package start a daemon on this machine -------------
if [[ ! -x /usr/sbin/sshd ]]; then
    say "installing openssh-server"
    policy=0
    if [[ ! -e /usr/sbin/policy-rc.d ]]; then
        printf '#!/bin/sh\nexit 101\n' >/usr/sbin/policy-rc.d && chmod 755 /usr/sbin/policy-rc.d
        policy=1
    fi
    DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends openssh-server \
        openssh-client >/dev/null || { apt-get update -q >/dev/null &&
        DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends \
            openssh-server openssh-client >/dev/null; }
    ((policy)) && rm -f /usr/sbin/policy-rc.d
fi

NS="nasprobe-e2e-$$"
TMP="$(mktemp -d /tmp/nasprobe-e2e.XXXXXX)"
cleanup() {
    local rc=$?
    if ip netns list 2>/dev/null | grep -q "^$NS"; then
        for pid in $(ip netns pids "$NS" 2>/dev/null); do kill "$pid" 2>/dev/null || true; done
        sleep 0.3
        for pid in $(ip netns pids "$NS" 2>/dev/null); do kill -9 "$pid" 2>/dev/null || true; done
        ip netns del "$NS" 2>/dev/null || true
    fi
    if ((rc != 0)); then
        echo "--- sshd log"; cat "$TMP/sshd.log" 2>/dev/null | tail -n 20 || true
        echo "--- agent log"; cat "$TMP"/nas/opt/nasprobe/agent.log 2>/dev/null | tail -n 20 || true
    fi
    rm -rf "$TMP"
    exit $rc
}
trap cleanup EXIT INT TERM

ip netns add "$NS"
ip -n "$NS" link set lo up

# --- keys and sshd ------------------------------------------------------------------------------
ssh-keygen -q -t ed25519 -N '' -f "$TMP/host_key"
ssh-keygen -q -t ed25519 -N '' -f "$TMP/id"
cp "$TMP/id.pub" "$TMP/authorized_keys"
cat >"$TMP/sshd_config" <<CFG
Port 2222
ListenAddress 127.0.0.1
HostKey $TMP/host_key
AuthorizedKeysFile $TMP/authorized_keys
PermitRootLogin prohibit-password
PasswordAuthentication no
KbdInteractiveAuthentication no
UsePAM no
StrictModes no
PidFile $TMP/sshd.pid
Subsystem sftp internal-sftp
CFG
mkdir -p /run/sshd
ip netns exec "$NS" /usr/sbin/sshd -f "$TMP/sshd_config" -E "$TMP/sshd.log"
for _ in $(seq 50); do [[ -s "$TMP/sshd.pid" ]] && break; sleep 0.1; done
[[ -s "$TMP/sshd.pid" ]] || fail "sshd did not start"

SSH_OPTS=(--ssh-opt Port=2222 --ssh-opt "IdentityFile=$TMP/id" --ssh-opt IdentitiesOnly=yes
    --ssh-opt "UserKnownHostsFile=$TMP/known_hosts" --ssh-opt StrictHostKeyChecking=accept-new)

# --- the agent binary: the static build if scripts/build-targets made it, else the host build --
TARGET_DIR="${CARGO_TARGET_DIR:-$REPO/target}"
BIN="$REPO/dist/nasprobe-agent-x86_64-unknown-linux-musl"
if [[ "$(uname -m)" != x86_64 || ! -x "$BIN" ]]; then
    cargo build -q -p nasprobe-agent
    BIN="$TARGET_DIR/debug/nasprobe-agent"
fi
# The collector-side check (a test binary that connects, authenticates, resumes and reads).
CLIENT="$(cargo test -q -p nasprobe-agent --test it --no-run --message-format=json 2>/dev/null |
    grep -o '"executable":"[^"]*/it-[^"]*"' | tail -n 1 | cut -d'"' -f4)"
[[ -x "$CLIENT" ]] || fail "could not build the test client"

PREFIX="$TMP/nas/opt/nasprobe"
INITD="$TMP/nas/etc/init.d"
AGENT_FROM=(--binary "$BIN")
deploy() {
    ip netns exec "$NS" "$REPO/scripts/deploy" --target sysv --name e2e "${AGENT_FROM[@]}" \
        --prefix "$PREFIX" --init-dir "$INITD" --token-out "$TMP/e2e.token" \
        --agent-args "--interval 100" "${SSH_OPTS[@]}" "$@" root@127.0.0.1
}

say "deploying over ssh into namespace $NS"
out="$(deploy 2>&1)" || { echo "$out"; fail "deploy failed"; }
echo "$out" | sed 's/^/    /'
grep -q "nasprobe hosts add e2e=127.0.0.1:7451 --token-file $TMP/e2e.token" <<<"$out" ||
    fail "deploy did not print the host line"
grep -q "installed and (re)started" <<<"$out" || fail "first deploy did not install"
[[ -x "$INITD/nasprobe-agent" ]] || fail "init script not installed"
[[ "$(stat -c %a "$PREFIX/token")" == 600 ]] || fail "token is not mode 0600"
[[ "$(stat -c %a "$TMP/e2e.token")" == 600 ]] || fail "local token copy is not mode 0600"
cmp -s <(tr -d '\n' <"$PREFIX/token") <(tr -d '\n' <"$TMP/e2e.token") || fail "fetched token differs"
pid1="$(cat "$PREFIX/agent.pid")"

say "reading samples from the deployed agent"
NASPROBE_REMOTE_ADDR=127.0.0.1:7451 NASPROBE_REMOTE_TOKEN_FILE="$TMP/e2e.token" \
    ip netns exec "$NS" "$CLIENT" server_remote:: --nocapture 2>&1 | sed 's/^/    /'
[[ ${PIPESTATUS[0]} == 0 ]] || fail "the client could not read samples"

say "deploying again: nothing changes, the agent keeps running"
out="$(deploy 2>&1)" || { echo "$out"; fail "second deploy failed"; }
grep -q "already installed and running" <<<"$out" || { echo "$out"; fail "second deploy was not a no-op"; }
[[ "$(cat "$PREFIX/agent.pid")" == "$pid1" ]] || fail "second deploy restarted the agent"

say "init script: status, restart, stop"
ip netns exec "$NS" "$INITD/nasprobe-agent" status >/dev/null || fail "status says not running"
ip netns exec "$NS" "$INITD/nasprobe-agent" restart >/dev/null || fail "restart failed"
pid2="$(cat "$PREFIX/agent.pid")"
[[ "$pid2" != "$pid1" ]] || fail "restart kept the old pid"
ip netns exec "$NS" "$INITD/nasprobe-agent" stop >/dev/null
if ip netns exec "$NS" "$INITD/nasprobe-agent" status >/dev/null; then fail "still running after stop"; fi
e2e_alive "$pid2" && fail "agent process survived stop"
[[ ! -e "$PREFIX/agent.pid" ]] || fail "pidfile left after stop"
grep -q "signal 15: exiting" "$PREFIX/agent.log" || fail "no clean exit in the log"

say "deploy after a stop starts it again; then uninstall"
deploy >/dev/null 2>&1 || fail "redeploy failed"
pid3="$(cat "$PREFIX/agent.pid")"
out="$(deploy --uninstall 2>&1)" || { echo "$out"; fail "uninstall failed"; }
[[ ! -e "$PREFIX" && ! -e "$INITD/nasprobe-agent" ]] || fail "uninstall left files"
[[ ! -e "$TMP/e2e.token" ]] || fail "uninstall left the local token"
sleep 0.2
e2e_alive "$pid3" && fail "agent still running after uninstall"

# --- from a release bundle (scripts/release; the suite's release step made it) -------------------
if [[ ! -f $REPO/dist/SHA256SUMS ]]; then
    [[ ${CI:-} != true ]] || fail "no release bundle in dist/ (scripts/release)"
    say "no release bundle in dist/: the --bundle deploy is left out (run scripts/release)"
else
    say "deploying from the release bundle in dist/"
    AGENT_FROM=(--bundle "$REPO/dist")
    out="$(deploy 2>&1)" || { echo "$out"; fail "deploy --bundle failed"; }
    grep -q "agent from nasprobe-.*-x86_64-unknown-linux-musl.tar.gz" <<<"$out" ||
        { echo "$out"; fail "deploy --bundle did not take the agent from the bundle"; }
    cmp -s "$PREFIX/nasprobe-agent" "$REPO/dist/nasprobe-agent-x86_64-unknown-linux-musl" ||
        fail "the installed agent is not the bundle's"
    ip netns exec "$NS" "$INITD/nasprobe-agent" status >/dev/null || fail "bundle agent not running"
    out="$(deploy --uninstall 2>&1)" || { echo "$out"; fail "uninstall after --bundle failed"; }
    # A bundle whose tarball does not match SHA256SUMS is refused.
    cp -a "$REPO/dist" "$TMP/badbundle"
    printf 'x' >>"$TMP/badbundle/"nasprobe-*-x86_64-unknown-linux-musl.tar.gz
    AGENT_FROM=(--bundle "$TMP/badbundle")
    if out="$(deploy 2>&1)"; then fail "a bundle that fails SHA256SUMS was deployed"; fi
    grep -q "does not match" <<<"$out" || { echo "$out"; fail "no SHA256SUMS error"; }
fi

say "OK"
echo "agent_deploy: 1 passed, 0 failed"
