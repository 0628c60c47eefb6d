# A disk wall made real, for the e2e scripts that need one (test_disk, crawl_item): an ext4
# filesystem on a loop device mounted at $TMP/mnt, and a cgroup whose writes to that device are
# throttled (cgroup v1 blkio.throttle.write_bps_device, or v2 io.max). Sourced, not run; needs
# TMP (the script's temp folder) and fail (lib/common.sh). Then:
#   ld_setup SIZE BYTES_PER_S TAG   makes it; sets LOOP (/dev/loopN), DEV (loopN), MAJMIN, CG
#                                   (the cgroup's folder: echo a pid to $CG/cgroup.procs)
#   ld_cleanup                      unmounts, detaches, removes the cgroup (after the processes
#                                   in the cgroup were stopped)
#   ld_exit                         the EXIT trap: stops the processes in PIDS (the script adds
#                                   the ones it starts), ld_cleanup, removes TMP
# shellcheck shell=bash
LOOP="" CG="" DEV="" MAJMIN="" PIDS=()
ld_setup() {
    local size=$1 rate=$2 tag=$3 c
    for c in losetup mkfs.ext4 lsblk mount; do command -v "$c" >/dev/null || fail "$c is missing"; done
    truncate -s "$size" "$TMP/disk.img"
    LOOP=$(losetup -f --show "$TMP/disk.img")
    mkfs.ext4 -q -F "$LOOP"
    mkdir -p "$TMP/mnt"
    mount "$LOOP" "$TMP/mnt"
    DEV=$(basename "$LOOP")
    MAJMIN=$(lsblk -dno MAJ:MIN "$LOOP" | tr -d ' ')
    if [[ -d /sys/fs/cgroup/blkio ]]; then
        CG=/sys/fs/cgroup/blkio/nasprobe-$tag-$$
        mkdir "$CG"
        echo "$MAJMIN $rate" >"$CG/blkio.throttle.write_bps_device"
    elif [[ -f /sys/fs/cgroup/cgroup.controllers ]]; then
        CG=/sys/fs/cgroup/nasprobe-$tag-$$
        echo +io >/sys/fs/cgroup/cgroup.subtree_control 2>/dev/null || true
        mkdir "$CG"
        echo "$MAJMIN wbps=$rate" >"$CG/io.max"
    else
        fail "no blkio/io cgroup controller here"
    fi
}
ld_cleanup() {
    mountpoint -q "$TMP/mnt" 2>/dev/null && umount "$TMP/mnt"
    [[ -z $LOOP ]] || losetup -d "$LOOP" 2>/dev/null || true
    [[ -z $CG ]] || rmdir "$CG" 2>/dev/null || true
}
ld_exit() {
    local p
    for p in "${PIDS[@]}"; do kill "$p" 2>/dev/null || true; done
    wait 2>/dev/null || true
    ld_cleanup
    rm -rf "$TMP"
}
