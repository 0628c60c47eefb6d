# Installs, enables and starts nasprobe-agent: run by `nasprobe deploy` over ssh (sh -s) after
# these lines it puts first: PREFIX INIT_DIR INIT_NAME TARGET RCS_LINK STAGE PORT.
# The staged files are $STAGE/agent.bin, $STAGE/init (the init script or systemd unit) and
# $STAGE/agent.conf, rendered (and quoted) by the collector: nothing from the user is expanded
# here. Replaces only what differs (atomic renames: a running agent keeps its old inode) and
# restarts the agent only then. Its last line is `result=installed|upgraded|same old=VERSION
# new=VERSION changed=agent,settings,init,unit boot=HOW`, HOW what starts it at boot:
# systemd, update-rc.d, chkconfig, rcS:LINK, dsm, failed:WHAT or none:WHY (wd, initdir, none).
# A failure exits with a code the collector names: 10 read-only, 11 no space, 12 port in use,
# 13 did not come up.
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
changed=
run mkdir -p "$PREFIX" "$INIT_DIR"
chmod 700 "$PREFIX"
put() { # src dst mode what
    if ! cmp -s "$1" "$2" 2>/dev/null; then
        run cp "$1" "$2.new"
        chmod "$3" "$2.new" && mv -f "$2.new" "$2"
        changed="$changed,$4"
    fi
}
put "$STAGE/agent.bin" "$PREFIX/nasprobe-agent" 755 agent
# What starts it at boot: the init system's own mechanism, checked by its effect.
boot=none:initdir
if [ "$TARGET" = systemd ]; then
    put "$STAGE/init" "$init" 644 unit
    systemctl daemon-reload
    if systemctl enable nasprobe-agent >/dev/null 2>&1 && systemctl is-enabled --quiet nasprobe-agent; then
        boot=systemd
    else
        boot=failed:systemd
    fi
    if [ -n "$changed" ]; then systemctl restart nasprobe-agent; else systemctl start nasprobe-agent; fi
else
    put "$STAGE/agent.conf" "$PREFIX/agent.conf" 600 settings
    put "$STAGE/init" "$init" 755 init
    case "$TARGET" in
        wd-mycloud) boot=none:wd ;;
        synology-dsm) [ "$INIT_DIR" = /usr/local/etc/rc.d ] && boot=dsm ;;
        sysv)
            if [ "$INIT_DIR" = /etc/init.d ] && command -v update-rc.d >/dev/null 2>&1; then
                boot=failed:update-rc.d
                update-rc.d "$INIT_NAME" defaults >/dev/null 2>&1 &&
                    ls /etc/rc?.d/S*"$INIT_NAME" >/dev/null 2>&1 && boot=update-rc.d
            elif [ "$INIT_DIR" = /etc/init.d ] && command -v chkconfig >/dev/null 2>&1; then
                boot=failed:chkconfig
                chkconfig --add "$INIT_NAME" >/dev/null 2>&1 && boot=chkconfig
            elif [ -f "$INIT_DIR/rcS" ] && grep -q 'S??' "$INIT_DIR/rcS"; then
                # busybox init: rcS runs every $INIT_DIR/S??* with `start`.
                boot=failed:link
                ln -sf "$INIT_NAME" "$INIT_DIR/$RCS_LINK" && [ -x "$INIT_DIR/$RCS_LINK" ] &&
                    boot="rcS:$RCS_LINK"
            elif [ "$INIT_DIR" = /etc/init.d ]; then
                boot=none:none
            fi
            ;;
    esac
    if [ -n "$changed" ]; then verb=restart; else verb=start; fi
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
elif [ -n "$changed" ]; then result=upgraded
else result=same
fi
echo "result=$result old=$(echo "$old" | tr ' ' _) new=$(echo "$new" | tr ' ' _) changed=${changed#,} boot=$boot"
