# Stops nasprobe-agent and removes what `nasprobe deploy` installed: run over ssh (sh -s) after
# the lines PREFIX INIT_DIR INIT_NAME TARGET RCS_LINK it puts first. Its last line says what it
# found to remove: `removed=stopped,boot,init,prefix` (any of them; empty when nothing was there).
set -e
# The collector refuses such prefixes already (cmd/deploy.rs SYSTEM_DIRS); never rm -rf them.
case "$PREFIX" in "" | / | /*/.. | /*/../*) echo "refusing prefix $PREFIX" >&2; exit 1 ;; esac
init="$INIT_DIR/$INIT_NAME"
did=
if [ "$TARGET" = systemd ]; then
    if [ -f "$init" ]; then
        systemctl is-active --quiet nasprobe-agent && did="$did,stopped"
        systemctl is-enabled --quiet nasprobe-agent && did="$did,boot"
        systemctl disable --now nasprobe-agent >/dev/null 2>&1 || true
        rm -f "$init"
        did="$did,init"
        systemctl daemon-reload || true
    fi
elif [ -x "$init" ]; then
    if "$init" status >/dev/null 2>&1; then
        "$init" stop >/dev/null || true
        did="$did,stopped"
    fi
fi
if [ "$TARGET" = sysv ] && [ "$INIT_DIR" = /etc/init.d ]; then
    if ls /etc/rc?.d/[SK]*"$INIT_NAME" >/dev/null 2>&1; then
        if command -v update-rc.d >/dev/null 2>&1; then update-rc.d -f "$INIT_NAME" remove >/dev/null 2>&1 || true
        elif command -v chkconfig >/dev/null 2>&1; then chkconfig --del "$INIT_NAME" >/dev/null 2>&1 || true
        fi
        did="$did,boot"
    fi
fi
if [ -L "$INIT_DIR/$RCS_LINK" ]; then
    rm -f "$INIT_DIR/$RCS_LINK"
    did="$did,boot"
fi
if [ -e "$init" ]; then
    rm -f "$init"
    did="$did,init"
fi
if [ -e "$PREFIX" ]; then
    rm -rf "$PREFIX"
    did="$did,prefix"
fi
echo "removed=${did#,}"
