#!/bin/sh
# nasprobe-agent for WD MyCloud (OS 3 / OS 5, armv7, Linux 3.10, busybox) (start|stop|status|restart).
#
# Everything lives in DIR: the binary, the token, the log and agent.conf (optional, sourced:
# PORT=7451, LISTEN=0.0.0.0, NAME=..., ARGS="--interval 1000 ..."). scripts/deploy rewrites
# the DIR= line below when it installs this script elsewhere.
### BEGIN INIT INFO
# Provides:          nasprobe-agent
# Required-Start:    $network $local_fs
# Required-Stop:     $network $local_fs
# Default-Start:     2 3 4 5
# Default-Stop:      0 1 6
# Short-Description: nasprobe agent (samples the box for nasprobe collectors)
### END INIT INFO

DIR=/mnt/HD/HD_a2/.nasprobe

BIN="$DIR/nasprobe-agent"
TOKEN="$DIR/token"
LOG="$DIR/agent.log"
PIDFILE="$DIR/agent.pid"
PORT=7451
LISTEN=0.0.0.0
NAME=
ARGS=
[ -r "$DIR/agent.conf" ] && . "$DIR/agent.conf"

pid_running() {
    [ -r "$PIDFILE" ] || return 1
    pid=$(cat "$PIDFILE" 2>/dev/null)
    [ -n "$pid" ] && kill -0 "$pid" 2>/dev/null || return 1
    # A stale pidfile whose pid now belongs to another program does not count.
    if [ -r "/proc/$pid/comm" ]; then
        case "$(cat "/proc/$pid/comm")" in nasprobe*) ;; *) return 1 ;; esac
    fi
    return 0
}

do_start() {
    if pid_running; then
        echo "nasprobe-agent already running (pid $pid)"
        return 0
    fi
    [ -x "$BIN" ] || { echo "nasprobe-agent: $BIN missing" >&2; return 1; }
    # Keep the log bounded: rotate once past 1 MiB.
    if [ -f "$LOG" ] && [ "$(wc -c <"$LOG")" -gt 1048576 ]; then
        mv -f "$LOG" "$LOG.1"
    fi
    set -- --listen "$LISTEN:$PORT" --token-file "$TOKEN" --pidfile "$PIDFILE" --log-file "$LOG"
    [ -n "$NAME" ] && set -- "$@" --name "$NAME"
    # shellcheck disable=SC2086 # ARGS is a list of flags on purpose
    nohup "$BIN" "$@" $ARGS </dev/null >>"$LOG" 2>&1 &
    # The agent writes its pidfile once it listens; wait for it (5 s).
    i=0
    while [ $i -lt 50 ]; do
        if pid_running; then
            echo "nasprobe-agent started (pid $pid, port $PORT)"
            return 0
        fi
        sleep 0.1 2>/dev/null || sleep 1
        i=$((i + 1))
    done
    echo "nasprobe-agent failed to start; last log lines:" >&2
    tail -n 5 "$LOG" >&2
    return 1
}

do_stop() {
    if ! pid_running; then
        echo "nasprobe-agent not running"
        rm -f "$PIDFILE"
        return 0
    fi
    kill -TERM "$pid"
    i=0
    while [ $i -lt 100 ] && kill -0 "$pid" 2>/dev/null; do
        sleep 0.1 2>/dev/null || sleep 1
        i=$((i + 1))
    done
    if kill -0 "$pid" 2>/dev/null; then
        kill -KILL "$pid"
        echo "nasprobe-agent killed (pid $pid)"
    else
        echo "nasprobe-agent stopped"
    fi
    rm -f "$PIDFILE"
}

case "$1" in
    start) do_start ;;
    stop) do_stop ;;
    restart) do_stop; do_start ;;
    status)
        if pid_running; then
            echo "nasprobe-agent running (pid $pid)"
            exit 0
        fi
        echo "nasprobe-agent not running"
        exit 3
        ;;
    *)
        echo "usage: $0 start|stop|status|restart" >&2
        exit 2
        ;;
esac
