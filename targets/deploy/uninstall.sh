# Stops nasprobe-agent and removes what `nasprobe deploy` installed: run over ssh (sh -s) after
# the lines PREFIX INIT_DIR INIT_NAME TARGET it puts first.
set -e
init="$INIT_DIR/$INIT_NAME"
if [ "$TARGET" = systemd ]; then
    systemctl disable --now nasprobe-agent >/dev/null 2>&1 || true
    rm -f "$init"
    systemctl daemon-reload || true
elif [ -x "$init" ]; then
    "$init" stop >/dev/null || true
fi
if [ "$TARGET" = sysv ] && [ "$INIT_DIR" = /etc/init.d ]; then
    if command -v update-rc.d >/dev/null 2>&1; then update-rc.d -f nasprobe-agent remove >/dev/null 2>&1 || true
    elif command -v chkconfig >/dev/null 2>&1; then chkconfig --del nasprobe-agent >/dev/null 2>&1 || true
    fi
fi
rm -f "$init"
rm -rf "$PREFIX"
echo removed
