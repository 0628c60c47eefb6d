# Installs, enables and starts nasprobe-agent: run by `nasprobe deploy` over ssh (sh -s) after
# these lines it puts first: PREFIX INIT_DIR INIT_NAME TARGET STAGE PORT NAME AGENT_ARGS.
# The staged files are $STAGE/agent.bin and $STAGE/init.src. Replaces only what differs (atomic
# renames: a running agent keeps its old inode) and restarts the agent only then. Its last line
# is `result=installed|upgraded|same old=VERSION new=VERSION`; a failure exits with a code
# the collector names: 10 read-only, 11 no space, 12 port in use, 13 did not come up.
fail() { # code message
    echo "$2" >&2
    exit "$1"
}
# The error of a command that wrote something, classified by its message.
write_failed() {
    case "$1" in
        *"Read-only file system"*) fail 10 "$1" ;;
        *"No space left"*) fail 11 "$1" ;;
        *) fail 1 "$1" ;;
    esac
}
run() { out=$("$@" 2>&1) || write_failed "$out"; }
init="$INIT_DIR/$INIT_NAME"
running() {
    if [ "$TARGET" = systemd ]; then
        systemctl is-active --quiet nasprobe-agent
    else
        [ -x "$init" ] && "$init" status >/dev/null 2>&1
    fi
}
# Something listening on PORT (from /proc/net/tcp*, state 0A) that is not this agent.
port_hex=$(printf '%04X' "$PORT")
if ! running && cat /proc/net/tcp /proc/net/tcp6 2>/dev/null |
    awk -v p=":$port_hex" '$2 ~ p"$" && $4 == "0A" { found = 1 } END { exit !found }'; then
    fail 12 "port $PORT is in use on this NAS"
fi
old=$("$PREFIX/nasprobe-agent" --version 2>/dev/null || true)
new=$(chmod 755 "$STAGE/agent.bin" && "$STAGE/agent.bin" --version 2>/dev/null || true)
changed=0
run mkdir -p "$PREFIX" "$INIT_DIR"
chmod 700 "$PREFIX"
put() { # src dst mode
    if ! cmp -s "$1" "$2" 2>/dev/null; then
        run cp "$1" "$2.new"
        chmod "$3" "$2.new" && mv -f "$2.new" "$2"
        changed=1
    fi
}
put "$STAGE/agent.bin" "$PREFIX/nasprobe-agent" 755
printf 'PORT=%s\nLISTEN=0.0.0.0\nNAME=%s\nARGS=%s\n' "$PORT" "$NAME" "'$AGENT_ARGS'" >"$STAGE/agent.conf"
if [ "$TARGET" = systemd ]; then
    sed -e "s#/opt/nasprobe#$PREFIX#g" -e "s#0.0.0.0:7451#0.0.0.0:$PORT --name $NAME $AGENT_ARGS#" \
        "$STAGE/init.src" >"$STAGE/init"
    put "$STAGE/init" "$init" 644
    systemctl daemon-reload
    systemctl enable nasprobe-agent >/dev/null 2>&1
    if [ $changed = 1 ]; then systemctl restart nasprobe-agent; else systemctl start nasprobe-agent; fi
else
    put "$STAGE/agent.conf" "$PREFIX/agent.conf" 600
    sed -e "s#^DIR=.*#DIR=$PREFIX#" "$STAGE/init.src" >"$STAGE/init"
    put "$STAGE/init" "$init" 755
    if [ "$TARGET" = sysv ] && [ "$INIT_DIR" = /etc/init.d ]; then
        if command -v update-rc.d >/dev/null 2>&1; then update-rc.d nasprobe-agent defaults >/dev/null 2>&1 || true
        elif command -v chkconfig >/dev/null 2>&1; then chkconfig --add nasprobe-agent >/dev/null 2>&1 || true
        fi
    fi
    if [ $changed = 1 ]; then verb=restart; else verb=start; fi
    "$init" $verb >/dev/null || fail 13 "the init script's $verb failed"
fi
# Wait for the token file and a running agent (10 s).
i=0
while [ $i -lt 100 ]; do
    [ -s "$PREFIX/token" ] && running && break
    sleep 0.1 2>/dev/null || sleep 1
    i=$((i + 1))
done
if [ $i -ge 100 ]; then
    echo "the agent did not come up" >&2
    [ -f "$PREFIX/agent.log" ] && tail -n 5 "$PREFIX/agent.log" >&2
    exit 13
fi
if [ -z "$old" ]; then result=installed
elif [ $changed = 1 ]; then result=upgraded
else result=same
fi
echo "result=$result old=$(echo "$old" | tr ' ' _) new=$(echo "$new" | tr ' ' _)"
