#!/bin/sh
# Copies what nasprobe-agent reads from a live Linux system into a fixture tree:
#   capture.sh OUTDIR
# Works with busybox sh (run it on a NAS to add a fixture for its kernel). Process files are
# taken only for this script's own `sleep` child (a multi-threaded process is not needed for
# the parsers) and for kthreadd (pid 2): command lines of other processes may hold secrets.
set -eu
out=${1:?usage: capture.sh OUTDIR}
mkdir -p "$out/proc/net" "$out/proc/sys/kernel/random" "$out/proc/sys/vm" "$out/sys/block" "$out/sys/class/net"
for f in stat meminfo vmstat diskstats uptime net/dev net/snmp net/netstat \
         sys/kernel/osrelease sys/kernel/hostname sys/kernel/random/boot_id sys/vm/min_free_kbytes; do
    cat "/proc/$f" > "$out/proc/$f" 2>/dev/null || rm -f "$out/proc/$f"
done
sleep 30 &
child=$!
for pid in 2 "$child"; do
    mkdir -p "$out/proc/$pid/task/$pid"
    for f in stat schedstat cmdline; do
        cat "/proc/$pid/$f" > "$out/proc/$pid/$f" 2>/dev/null || true
    done
    cat "/proc/$pid/task/$pid/stat" > "$out/proc/$pid/task/$pid/stat" 2>/dev/null || true
done
kill "$child" 2>/dev/null || true
for d in /sys/block/*; do
    n=${d##*/}
    mkdir -p "$out/sys/block/$n/queue"
    for f in size queue/rotational md/level; do
        [ -r "$d/$f" ] || continue
        mkdir -p "$(dirname "$out/sys/block/$n/$f")"
        cat "$d/$f" > "$out/sys/block/$n/$f" 2>/dev/null || true
    done
    if [ -d "$d/slaves" ]; then
        mkdir -p "$out/sys/block/$n/slaves"
        for s in "$d"/slaves/*; do [ -e "$s" ] && : > "$out/sys/block/$n/slaves/${s##*/}"; done
    fi
done
for d in /sys/class/net/*; do
    n=${d##*/}
    mkdir -p "$out/sys/class/net/$n"
    for f in speed duplex mtu operstate carrier address; do
        cat "$d/$f" > "$out/sys/class/net/$n/$f" 2>/dev/null || true
    done
    if [ -r "$d/bonding/slaves" ]; then
        mkdir -p "$out/sys/class/net/$n/bonding"
        cat "$d/bonding/slaves" > "$out/sys/class/net/$n/bonding/slaves"
    fi
done
uname -a > "$out/uname.txt"
