#!/usr/bin/env bash
# The collector for Windows (x86_64-pc-windows-gnu, cross-built with Debian's mingw-w64, bundled
# SQLite included) run under Debian's wine: `nasprobe.exe --version`, then `report --json` over a
# store recorded on Linux from a real agent. The store file is portable: the Windows report must be
# byte-identical to the Linux one. Wine 8.0 (Debian 12) lacks bcryptprimitives.dll, which Windows
# 10+ has and Rust's std imports: tests/wine/bcryptprimitives.c stands in for it, beside the exe
# in the test's folder only.
#
# Then `nasprobe.exe deploy root@127.0.0.1` under wine against a real OpenSSH server in a network,
# pid and mount namespace made here (lib/netns.sh, as deploy_cmd.sh; wine and its wineserver run
# in that namespace too, so every connection stays on its loopback). Windows' OpenSSH client is
# stood in for by ssh.exe and scp.exe (tests/wine/openssh.c), in a folder on wine's PATH, which
# run this machine's /usr/bin/ssh and /usr/bin/scp: nasprobe.exe finds `ssh` and `scp` as it does
# on Windows, and the agent goes over scp. Checked: the first deploy installs the agent (--agent, a
# Windows path; --target sysv, prefix and init dir in a temp folder), it answers, the host list
# (a Windows path) names it with its token, `nasprobe.exe record` gets records from it by that
# name, a second deploy changes nothing, and `--uninstall` leaves nothing behind. Needs root.
#
#   tests/e2e/windows_wine.sh
set -euo pipefail
REPO="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
cd "$REPO"
E2E_NAME=windows_wine
# shellcheck source=tests/e2e/lib/common.sh
source "$REPO/tests/e2e/lib/common.sh"
# shellcheck source=tests/e2e/lib/netns.sh
source "$REPO/tests/e2e/lib/netns.sh"
for c in wine x86_64-w64-mingw32-gcc; do
    command -v "$c" >/dev/null || fail "$c is missing (scripts/setup installs it)"
done
WIN=x86_64-pc-windows-gnu
say "building nasprobe.exe ($WIN, release)"
cargo build -q --release --locked -p nasprobe --target "$WIN"
EXE="$TARGET_DIR/$WIN/release/nasprobe.exe"
[[ -f $EXE ]] || fail "no $EXE"

TMP="$(mktemp -d /tmp/nasprobe-wine.XXXXXX)"
AGENT_PID=""
cleanup() {
    local rc=$?
    set +e
    [[ -z $AGENT_PID ]] || kill "$AGENT_PID" 2>/dev/null || true
    [[ -z ${RW_PID:-} ]] || kill "$RW_PID" 2>/dev/null || true
    wineserver -k 2>/dev/null || true
    # The deploy step's namespaces (lib/netns.sh): nn_cleanup prints NN_ON_FAIL's logs, removes
    # $TMP too and exits with the script's status.
    if [[ -n $NN_TAG ]]; then
        NN_EXTRA_DIRS+=("$TMP")
        (exit "$rc")
        nn_cleanup
    fi
    rm -rf "$TMP"
    exit "$rc"
}
trap cleanup EXIT
export WINEPREFIX="$TMP/wine" WINEDEBUG=-all
mkdir -p "$TMP/win"
cp "$EXE" "$TMP/win/"
x86_64-w64-mingw32-gcc -O2 -shared -o "$TMP/win/bcryptprimitives.dll" \
    tests/wine/bcryptprimitives.c tests/wine/bcryptprimitives.def -ladvapi32

# --- --version ------------------------------------------------------------------------------------
out=$(timeout 300 wine "$TMP/win/nasprobe.exe" --version 2>"$TMP/wine.err") ||
    fail "nasprobe.exe --version failed: $(tail -5 "$TMP/wine.err")"
out=${out//$'\r'/}
want="nasprobe $(sed -n 's/^version = "\(.*\)"/\1/p' Cargo.toml | head -n 1)"
[[ $out == "$want" ]] || fail "nasprobe.exe --version said '$out', want '$want'"
say "under wine: $out"

# --- a store recorded on Linux, reported on Windows ------------------------------------------------
PORT=$((20000 + RANDOM % 30000))
"$AGENT" --listen "127.0.0.1:$PORT" --token-file "$TMP/token" --interval 500 --name winbox \
    --log-file "$TMP/agent.log" &
AGENT_PID=$!
sleep 0.5
"$NP" --db "$TMP/store.db" --token-file "$TMP/token" record --duration 5s "box=127.0.0.1:$PORT" \
    >"$TMP/record.txt" 2>&1 || fail "record failed: $(cat "$TMP/record.txt")"
kill "$AGENT_PID"
AGENT_PID=""
"$NP" --db "$TMP/store.db" report --json >"$TMP/linux.json" || fail "report on Linux failed"
# Wine's file system has the Unix root as drive Z:.
windb="Z:${TMP//\//\\}\\store.db"
timeout 300 wine "$TMP/win/nasprobe.exe" --db "$windb" report --json >"$TMP/windows.json" \
    2>"$TMP/wine.err" || fail "report --json under wine failed: $(tail -5 "$TMP/wine.err")"
sed -i 's/\r$//' "$TMP/windows.json"
samples=$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["hosts"][0]["samples"])' \
    "$TMP/windows.json") || fail "the Windows report is not the report JSON: $(head -c 300 "$TMP/windows.json")"
((samples >= 5)) || fail "the Windows report counts $samples samples of box (want >= 5)"
cmp -s "$TMP/linux.json" "$TMP/windows.json" ||
    fail "the Windows report differs from the Linux one: $(diff "$TMP/linux.json" "$TMP/windows.json" | head -20)"
say "report --json under wine over a Linux store: $samples samples of box, identical to Linux"
# --- https from Windows: rustls and ring in nasprobe.exe -------------------------------------------
# shellcheck source=tests/e2e/lib/tls.sh
source "$REPO/tests/e2e/lib/tls.sh"
tls_make "$TMP/tls"
HPORT=$((PORT + 1))
python3 "$REPO/tests/e2e/lib/alert_receiver.py" "$HPORT" "$TMP/rw.jsonl" 0 "$TMP/tls/server.pem" \
    "$TMP/tls/server.key" &
RW_PID=$!
for _ in $(seq 50); do curl -fsS -o /dev/null --cacert "$TMP/tls/ca.pem" -X POST -d '{}' \
    "https://localhost:$HPORT/probe" 2>/dev/null && break; sleep 0.1; done
rm -f "$TMP/rw.jsonl"
rc=0
timeout 300 wine "$TMP/win/nasprobe.exe" --db "$windb" export --remote-write \
    "https://localhost:$HPORT/api/v1/write" 2>"$TMP/wine_https.err" || rc=$?
((rc != 0)) && grep -q "UnknownIssuer.*built-in Mozilla roots" "$TMP/wine_https.err" ||
    fail "https without --ca-file under wine: exit $rc: $(tail -3 "$TMP/wine_https.err")"
[[ ! -s $TMP/rw.jsonl ]] || fail "something was sent through a refused certificate"
timeout 300 wine "$TMP/win/nasprobe.exe" --db "$windb" --ca-file "Z:${TMP//\//\\}\\tls\\ca.pem" \
    export --remote-write "https://localhost:$HPORT/api/v1/write" 2>"$TMP/wine_https.err" ||
    fail "export --remote-write over https under wine: $(tail -3 "$TMP/wine_https.err")"
kill "$RW_PID" 2>/dev/null || true
sent=$(grep -ci '"content-encoding": "snappy"' "$TMP/rw.jsonl" 2>/dev/null || true)
((${sent:-0} >= 1)) || fail "the TLS receiver got no remote write batch: $(head -c 300 "$TMP/rw.jsonl" 2>/dev/null)"
say "nasprobe.exe over https: refused without --ca-file (UnknownIssuer), $sent batches with it"
# --- deploy over ssh under wine, into a namespace's sshd ------------------------------------------
[[ $(id -u) == 0 ]] || e2e_skip "windows_wine deploy" "needs root for namespaces"
[[ -x /usr/sbin/sshd && -x /usr/bin/ssh && -x /usr/bin/scp ]] ||
    nn_need_packages openssh-server openssh-client || fail "openssh-server missing"
DEPLOY_START=$SECONDS
AGENT_BIN="${NASPROBE_DIST:-$REPO/dist}/nasprobe-agent-x86_64-unknown-linux-musl"
[[ -x $AGENT_BIN && $(uname -m) == x86_64 ]] || AGENT_BIN="$AGENT"
nn_setup windows_wine
trap cleanup EXIT # nn_setup set its own; cleanup calls it
nn_host nas
nn_sshd nas 127.0.0.1 2222
NS=${NN_NS[nas]}
# Wine's sockets are made by its wineserver: it must run in the namespace. The one the steps
# above started (in this machine's network) is stopped first.
wineserver -k 2>/dev/null || true
wineserver -w 2>/dev/null || true
ip netns exec "$NS" wineserver -p
for p in $(ip netns pids "$NS"); do
    [[ $(cat "/proc/$p/comm" 2>/dev/null) == wineserver* ]] && break
    p=""
done
[[ -n $p ]] || fail "no wineserver in namespace $NS"
# Windows' OpenSSH client is on PATH (C:\Windows\System32\OpenSSH); the stand-ins are too.
mkdir -p "$TMP/openssh"
x86_64-w64-mingw32-gcc -O2 -municode -o "$TMP/openssh/ssh.exe" tests/wine/openssh.c
x86_64-w64-mingw32-gcc -O2 -municode -DUNIX_PROGRAM='"/usr/bin/scp"' -o "$TMP/openssh/scp.exe" \
    tests/wine/openssh.c
winpath() { local p=$1; echo "Z:${p//\//\\}"; }
export WINEPATH
WINEPATH="$(winpath "$TMP/openssh")"
PREFIX="$NN_TMP/nas/opt/nasprobe"
INITD="$NN_TMP/nas/etc/init.d"
HOSTS="$NN_TMP/conf/hosts"
TOKEN="$NN_TMP/conf/tokens/nas.token"
on_fail() {
    echo "--- sshd log"; tail -n 20 "$NN_TMP/sshd.log" 2>/dev/null
    echo "--- agent log"; tail -n 20 "$PREFIX/agent.log" 2>/dev/null
    echo "--- wine"; tail -n 20 "$TMP/wine.err" 2>/dev/null
}
NN_ON_FAIL=on_fail
# nasprobe.exe in the NAS's network namespace; the ssh options are the stand-ins' (Unix paths).
npw() {
    ip netns exec "$NS" timeout 120 wine "$TMP/win/nasprobe.exe" --hosts-file "$(winpath "$HOSTS")" \
        --db "$(winpath "$NN_TMP/nasprobe.db")" "$@" 2>"$TMP/wine.err" | tr -d '\r'
}
wdeploy() {
    npw deploy --target sysv --name nas --prefix "$PREFIX" --init-dir "$INITD" \
        --agent "$(winpath "$AGENT_BIN")" --agent-args "--interval 100" --ssh-opt Port=2222 \
        --ssh-opt "IdentityFile=$NN_TMP/id" --ssh-opt IdentitiesOnly=yes \
        --ssh-opt "UserKnownHostsFile=$NN_TMP/known_hosts" \
        --ssh-opt StrictHostKeyChecking=accept-new "$@" root@127.0.0.1
}

say "nasprobe.exe deploy root@127.0.0.1 (sshd in namespace $NS) with ssh.exe/scp.exe stand-ins"
out="$(RUST_LOG=nasprobe=info wdeploy)" || { echo "$out"; fail "deploy under wine failed: $(tail -3 "$TMP/wine.err")"; }
echo "$out" | sed 's/^/    /'
grep -q "installed nasprobe-agent" <<<"$out" || fail "first deploy did not say installed"
grep -q "127.0.0.1:7451 answers; record with: nasprobe record nas" <<<"$out" || fail "no answer/record line"
! grep -q "scp failed" "$TMP/wine.err" || fail "scp.exe failed: $(grep "scp failed" "$TMP/wine.err")"
[[ -x "$INITD/nasprobe-agent" && -x "$PREFIX/nasprobe-agent" ]] || fail "agent or init script not installed"
cmp -s "$AGENT_BIN" "$PREFIX/nasprobe-agent" || fail "the installed agent is not the one sent"
cmp -s "$PREFIX/token" "$TOKEN" || fail "the fetched token differs from the NAS's"
want="nas 127.0.0.1:7451 $(winpath "$TOKEN")"
grep -qxF "$want" <<<"$(tr -d '\r' <"$HOSTS")" || { cat "$HOSTS"; fail "no '$want' in the host list"; }
pid1="$(cat "$PREFIX/agent.pid")"

npw record --duration 2s nas >/dev/null || { cat "$TMP/wine.err"; fail "nasprobe.exe record nas failed"; }
n="$(sed -n 's/.*stored \([0-9]*\) records.*/\1/p' "$TMP/wine.err")"
((${n:-0} > 5)) || { cat "$TMP/wine.err"; fail "record stored ${n:-no} records"; }
say "nasprobe.exe record nas (by the host list's name): $n records"

out="$(wdeploy)" || { echo "$out"; fail "second deploy under wine failed: $(tail -3 "$TMP/wine.err")"; }
grep -q "already installed, same version" <<<"$out" || { echo "$out"; fail "second deploy was not a no-op"; }
[[ "$(cat "$PREFIX/agent.pid")" == "$pid1" ]] || fail "second deploy restarted the agent"
say "second deploy: $(grep -o "already installed, same version[^;]*" <<<"$out")"

out="$(wdeploy --uninstall)" || { echo "$out"; fail "deploy --uninstall under wine failed: $(tail -3 "$TMP/wine.err")"; }
[[ ! -e $PREFIX && ! -e $INITD/nasprobe-agent ]] || fail "uninstall left files on the NAS"
[[ ! -e $TOKEN ]] || fail "uninstall left the local token"
! grep -q "^nas " <<<"$(tr -d '\r' <"$HOSTS")" || fail "uninstall left the host in the list"
say "deploy, record, deploy again, uninstall under wine: $((SECONDS - DEPLOY_START)) s"
say "PASS in $((SECONDS - START)) s"
