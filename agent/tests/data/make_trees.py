#!/usr/bin/env python3
"""Writes the fixture trees of kernels we cannot capture here, from those kernels' documented
formats. Run from this folder; the output is committed, this script documents how it was made.

Sources of the formats (the kernel's own printers):
- /proc/stat: fs/proc/stat.c (3.10: 10 cpu fields incl. guest_nice; intr, ctxt, btime,
  processes, procs_running, procs_blocked, softirq).
- /proc/meminfo: fs/proc/meminfo.c; MemAvailable appeared in 3.14 (absent on 3.10).
- /proc/vmstat: mm/vmstat.c; 3.10/4.4 print per-zone pgscan_direct_<zone> and one allocstall;
  4.8+ print pgscan_direct, 4.10+ allocstall_<zone>.
- /proc/diskstats: block/genhd.c; 14 fields before 4.18 (3.10, 4.4), counters `unsigned long`
  (32 bits on armv7).
- /proc/net/dev: net/core/net-procfs.c; /proc/net/snmp and netstat: net/ipv4/proc.c
  (field lists of the matching release).
- /proc/PID/stat: fs/proc/array.c do_task_stat (52 fields on 3.10 and 4.4: 3.3 and 3.5 appended
  the data/brk/arg/env bounds and exit_code; testkit renders the same 52).
- sysfs: Documentation/ABI/testing/sysfs-block, sysfs-class-net, sysfs-class-net-bonding, md.txt.
"""
import os

def w(root, rel, text, mode="w"):
    p = os.path.join(root, rel)
    os.makedirs(os.path.dirname(p), exist_ok=True)
    with open(p, mode) as f:
        f.write(text)

def pidstat(pid, comm, state, ppid, utime, stime, threads, start, nfields=52):
    # pid (comm) state ppid pgrp session tty_nr tpgid flags minflt cminflt majflt cmajflt
    # utime stime cutime cstime priority nice num_threads itrealvalue starttime vsize rss ...
    head = f"{pid} ({comm}) {state} {ppid} {pid} {pid} 0 -1 4202752 120 0 2 0 {utime} {stime} 0 0 20 0 {threads} 0 {start} 8163328 512"
    rest = " ".join(["0"] * (nfields - 24))
    return head + " " + rest + "\n"

NETSTAT_310 = ("SyncookiesSent SyncookiesRecv SyncookiesFailed EmbryonicRsts PruneCalled RcvPruned OfoPruned "
 "OutOfWindowIcmps LockDroppedIcmps ArpFilter TW TWRecycled TWKilled PAWSPassive PAWSActive PAWSEstab "
 "DelayedACKs DelayedACKLocked DelayedACKLost ListenOverflows ListenDrops TCPPrequeued "
 "TCPDirectCopyFromBacklog TCPDirectCopyFromPrequeue TCPPrequeueDropped TCPHPHits TCPHPHitsToUser "
 "TCPPureAcks TCPHPAcks TCPRenoRecovery TCPSackRecovery TCPSACKReneging TCPFACKReorder TCPSACKReorder "
 "TCPRenoReorder TCPTSReorder TCPFullUndo TCPPartialUndo TCPDSACKUndo TCPLossUndo TCPLostRetransmit "
 "TCPRenoFailures TCPSackFailures TCPLossFailures TCPFastRetrans TCPForwardRetrans TCPSlowStartRetrans "
 "TCPTimeouts TCPLossProbes TCPLossProbeRecovery TCPRenoRecoveryFail TCPSackRecoveryFail "
 "TCPSchedulerFailed TCPRcvCollapsed TCPDSACKOldSent TCPDSACKOfoSent TCPDSACKRecv TCPDSACKOfoRecv "
 "TCPAbortOnData TCPAbortOnClose TCPAbortOnMemory TCPAbortOnTimeout TCPAbortOnLinger TCPAbortFailed "
 "TCPMemoryPressures TCPSACKDiscard TCPDSACKIgnoredOld TCPDSACKIgnoredNoUndo TCPSpuriousRTOs "
 "TCPMD5NotFound TCPMD5Unexpected TCPSackShifted TCPSackMerged TCPSackShiftFallback TCPBacklogDrop "
 "TCPMinTTLDrop TCPDeferAcceptDrop IPReversePathFilter TCPTimeWaitOverflow TCPReqQFullDoCookies "
 "TCPReqQFullDrop TCPRetransFail TCPRcvCoalesce TCPOFOQueue TCPOFODrop TCPOFOMerge TCPChallengeACK "
 "TCPSYNChallenge TCPFastOpenActive TCPFastOpenPassive TCPFastOpenPassiveFail "
 "TCPFastOpenListenOverflow TCPFastOpenCookieReqd TCPSpuriousRtxHostQueues BusyPollRxPackets").split()
NETSTAT_44_EXTRA = ("TCPAutoCorking TCPFromZeroWindowAdv TCPToZeroWindowAdv TCPWantZeroWindowAdv "
 "TCPSynRetrans TCPOrigDataSent TCPHystartTrainDetect TCPHystartTrainCwnd TCPHystartDelayDetect "
 "TCPHystartDelayCwnd TCPACKSkippedSynRecv TCPACKSkippedPAWS TCPACKSkippedSeq TCPACKSkippedFinWait2 "
 "TCPACKSkippedTimeWait TCPACKSkippedChallenge TCPWinProbe TCPKeepAlive").split()
IPEXT = "InNoRoutes InTruncatedPkts InMcastPkts OutMcastPkts InBcastPkts OutBcastPkts InOctets OutOctets InMcastOctets OutMcastOctets InBcastOctets OutBcastOctets"

def netstat(names, known):
    vals = [str(known.get(n, (i * 7) % 50)) for i, n in enumerate(names)]
    ip = IPEXT.split()
    return ("TcpExt: " + " ".join(names) + "\nTcpExt: " + " ".join(vals) + "\n"
            "IpExt: " + " ".join(ip) + "\nIpExt: " + " ".join(str(i) for i in range(len(ip))) + "\n")

SNMP_HEAD = """Ip: Forwarding DefaultTTL InReceives InHdrErrors InAddrErrors ForwDatagrams InUnknownProtos InDiscards InDelivers OutRequests OutDiscards OutNoRoutes ReasmTimeout ReasmReqds ReasmOKs ReasmFails FragOKs FragFails FragCreates
Ip: 2 64 81234567 0 3 0 0 0 81230000 60123456 0 12 0 0 0 0 0 0 0
Icmp: InMsgs InErrors InCsumErrors InDestUnreachs InTimeExcds InParmProbs InSrcQuenchs InRedirects InEchos InEchoReps InTimestamps InTimestampReps InAddrMasks InAddrMaskReps OutMsgs OutErrors OutDestUnreachs OutTimeExcds OutParmProbs OutSrcQuenchs OutRedirects OutEchos OutEchoReps OutTimestamps OutTimestampReps OutAddrMasks OutAddrMaskReps
Icmp: 45 0 0 40 0 0 0 0 5 0 0 0 0 0 45 0 40 0 0 0 0 0 5 0 0 0 0
IcmpMsg: InType3 InType8 OutType0 OutType3
IcmpMsg: 40 5 5 40
"""
TCP_HEAD = "Tcp: RtoAlgorithm RtoMin RtoMax MaxConn ActiveOpens PassiveOpens AttemptFails EstabResets CurrEstab InSegs OutSegs RetransSegs InErrs OutRsts InCsumErrors\n"
UDP = """Udp: InDatagrams NoPorts InErrors OutDatagrams RcvbufErrors SndbufErrors InCsumErrors
Udp: 5123 40 0 5200 0 0 0
UdpLite: InDatagrams NoPorts InErrors OutDatagrams RcvbufErrors SndbufErrors InCsumErrors
UdpLite: 0 0 0 0 0 0 0
"""

NETDEV_HEAD = """Inter-|   Receive                                                |  Transmit
 face |bytes    packets errs drop fifo frame compressed multicast|bytes    packets errs drop fifo colls carrier compressed
"""

def tree_310(root):
    """WD My Cloud EX2 Ultra style: Armada 385, 2 cores, kernel 3.10.39, md1 raid1 over sda2/sdb2."""
    w(root, "README.md", """# Linux 3.10.39 armv7 — WD My Cloud (EX2 Ultra style), generated

Built by `../make_trees.py` from the formats of Linux 3.10 (see the script's docstring for the
kernel source files each one follows); values are invented but shaped like a dual-core Armada
385 box with 1 GiB RAM, two disks in an md raid1 (`md1` over `sda2`+`sdb2`, `md0` raid1 swap
over `sda1`+`sdb1`) and one GbE port `egiga0` (the Marvell driver's name).

What makes it 3.10: no MemAvailable (the agent estimates it), 14-field diskstats, per-zone
`pgscan_direct_*` and one `allocstall` in vmstat, 52-field /proc/PID/stat, ram0-15 listed in
diskstats, 32-bit `unsigned long` counters: `sda` sectors written and `egiga0` rx bytes sit just
below 2^32 and `*.next` files hold the same files one second later, after the wrap.

Damaged on purpose: `proc/1600/stat` is truncated, `proc/1700/stat` is garbage,
`sys/class/net/egiga0/duplex` is garbage (logged once, duplex unknown).
Comm names with spaces and parentheses: pid 901 `(sd-pam)`, pid 1501 `a) b (c`.
""")
    w(root, "proc/stat", """cpu  2255103 1201 830021 9187343 410233 0 21032 0 0 0
cpu0 1301223 600 421010 4390231 220001 0 15000 0 0 0
cpu1 953880 601 409011 4797112 190232 0 6032 0 0 0
intr 120312311 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 30221 0 0 0 0 0 0 0 0 0 0 2311 0 0 0 0 4122 0 0 0 0 0 0 0
ctxt 301244512
btime 1717171717
processes 1212331
procs_running 3
procs_blocked 1
softirq 50123122 0 12312312 10234 8123123 2312 0 123123 12312312 0 17000000
""")
    w(root, "proc/meminfo", """MemTotal:        1034148 kB
MemFree:           40120 kB
Buffers:           81240 kB
Cached:           612044 kB
SwapCached:         2100 kB
Active:           402112 kB
Inactive:         430020 kB
Active(anon):      90112 kB
Inactive(anon):    60304 kB
Active(file):     312000 kB
Inactive(file):   369716 kB
Unevictable:           0 kB
Mlocked:               0 kB
HighTotal:        270336 kB
HighFree:           1024 kB
LowTotal:         763812 kB
LowFree:           39096 kB
SwapTotal:        522228 kB
SwapFree:         500112 kB
Dirty:             48120 kB
Writeback:          2048 kB
AnonPages:        139012 kB
Mapped:            30112 kB
Shmem:             11404 kB
Slab:              52010 kB
SReclaimable:      40004 kB
SUnreclaim:        12006 kB
KernelStack:        1512 kB
PageTables:         3012 kB
NFS_Unstable:          0 kB
Bounce:                0 kB
WritebackTmp:          0 kB
CommitLimit:     1039300 kB
Committed_AS:     412300 kB
VmallocTotal:     245760 kB
VmallocUsed:       12300 kB
VmallocChunk:     200012 kB
""")
    w(root, "proc/sys/vm/min_free_kbytes", "4096\n")
    w(root, "proc/vmstat", """nr_free_pages 10030
nr_inactive_anon 15076
nr_active_anon 22528
nr_inactive_file 92429
nr_active_file 78000
nr_dirty 12030
nr_writeback 512
pgpgin 401231233
pgpgout 912312312
pswpin 5120
pswpout 9210
pgalloc_normal 1923123123
pgalloc_high 123123123
pgalloc_movable 0
pgfree 2100000000
pgactivate 1231231
pgdeactivate 1121211
pgfault 912312312
pgmajfault 40123
pgrefill_normal 120312
pgrefill_high 30123
pgrefill_movable 0
pgsteal_kswapd_normal 1231231
pgsteal_kswapd_high 123123
pgsteal_kswapd_movable 0
pgsteal_direct_normal 40123
pgsteal_direct_high 2012
pgsteal_direct_movable 0
pgscan_kswapd_normal 1400123
pgscan_kswapd_high 150123
pgscan_kswapd_movable 0
pgscan_direct_normal 50123
pgscan_direct_high 3012
pgscan_direct_movable 0
pgscan_direct_throttle 7
pginodesteal 0
slabs_scanned 123123
kswapd_inodesteal 1231
kswapd_low_wmark_hit_quickly 120
kswapd_high_wmark_hit_quickly 30
pageoutrun 5123
allocstall 812
pgrotated 1231
""")
    disks = [("1", "0", "ram0")] + [("1", str(i), f"ram{i}") for i in range(1, 16)]
    lines = []
    for ma, mi, n in disks:
        lines.append(f"{ma:>4} {mi:>7} {n} 0 0 0 0 0 0 0 0 0 0 0")
    for i in range(8):
        lines.append(f"{7:>4} {i:>7} loop{i} 0 0 0 0 0 0 0 0 0 0 0")
    lines += [
        "   8       0 sda 1231233 40123 98123123 8123123 3123123 912312 4294960000 91231231 2 9123123 99123123",
        "   8       1 sda1 1200 10 40000 1200 300 20 9000 900 0 1500 2100",
        "   8       2 sda2 1230000 40113 98083123 8121923 3122823 912292 4294951000 91230331 2 9121623 99121023",
        "   8      16 sdb 1131233 30123 88123123 7123123 3123000 912300 4294959000 91231000 1 9023123 98123123",
        "   8      17 sdb1 1100 10 38000 1100 300 20 9000 800 0 1400 1900",
        "   8      18 sdb2 1130133 30113 88085123 7122023 3122700 912280 4294950000 91230200 1 9021723 98121223",
        "   9       1 md1 2400000 0 186000000 0 3100000 0 4294000000 0 0 0 0",
        "   9       0 md0 2300 0 78000 0 600 0 18000 0 0 0 0",
        "  31       0 mtdblock0 12 0 96 10 0 0 0 0 0 10 10",
    ]
    w(root, "proc/diskstats", "\n".join(lines) + "\n")
    # one second later: sda/sdb sectors written wrapped at 2^32, md1 too; sda did 2,000 sectors.
    nxt = []
    for l in lines:
        f = l.split()
        if f[2] == "sda":
            l = "   8       0 sda 1231333 40123 98125123 8123223 3123223 912312 1704 91231331 3 9124123 99124123"
        elif f[2] == "sdb":
            l = "   8      16 sdb 1131333 30123 88125123 7123223 3123100 912300 704 91231100 1 9024123 98124123"
        elif f[2] == "md1":
            l = "   9       1 md1 2400100 0 186002000 0 3100200 0 704 0 0 0 0"
        nxt.append(l)
    w(root, "proc/diskstats.next", "\n".join(nxt) + "\n")
    dev = NETDEV_HEAD + """    lo: 1231231    9123    0    0    0     0          0         0  1231231    9123    0    0    0     0       0          0
egiga0:4294000000 3123123    0   12    0     0          0      1231 912312312 2012312    0    0    0     0       0          0
"""
    w(root, "proc/net/dev", dev)
    w(root, "proc/net/dev.next", dev.replace("egiga0:4294000000 3123123", "egiga0:   32704 3123900"))
    w(root, "proc/net/snmp", SNMP_HEAD + TCP_HEAD + "Tcp: 1 200 120000 -1 1231 4123 12 31 3 91231231 81231231 4123 2 912 0\n" + UDP)
    w(root, "proc/net/netstat", netstat(NETSTAT_310, {"ListenDrops": 3, "TCPTimeouts": 77, "TCPAbortOnTimeout": 5}))
    w(root, "proc/uptime", "123456.78 201234.56\n")
    w(root, "proc/sys/kernel/osrelease", "3.10.39\n")
    w(root, "proc/sys/kernel/hostname", "WDMyCloudEX2Ultra\n")
    w(root, "proc/sys/kernel/random/boot_id", "5b1e2c8a-7d3f-4e0b-9a61-2f4c8d9e0a13\n")
    procs = [
        (1, "init", "S", 0, 120, 300, 1, 5, b"/sbin/init\0"),
        (812, "wdmcserverd", "S", 1, 912312, 40123, 9, 3012, b"/usr/sbin/wdmcserverd\0-c\0/etc/wdmcserver.conf\0"),
        (901, "(sd-pam)", "S", 900, 0, 1, 1, 4100, b"(sd-pam)\0"),
        (1500, "sshd", "R", 1, 1923123, 301231, 1, 11200000, b"sshd: admin@notty\0"),
        (1501, "a) b (c", "S", 1500, 12, 3, 1, 11200100, b"rsync\0--server\0-vlogDtpre.iLsfxC\0--password=hunter2\0.\0/mnt/HD/HD_a2/\0"),
    ]
    for pid, comm, st, ppid, ut, stt, th, start, cmd in procs:
        w(root, f"proc/{pid}/stat", pidstat(pid, comm, st, ppid, ut, stt, th, start))
        w(root, f"proc/{pid}/task/{pid}/stat", pidstat(pid, comm, st, ppid, ut, stt, 1, start))
        w(root, f"proc/{pid}/cmdline", cmd.decode("latin1"))
        w(root, f"proc/{pid}/schedstat", f"{(ut + stt) * 10000000} {pid * 1000} {pid}\n")
    w(root, "proc/1600/stat", pidstat(1600, "truncated", "S", 1, 1, 1, 1, 5)[:40])
    w(root, "proc/1700/stat", "\x00\x01garbage \xff not a stat line\n", mode="w")
    for n, size, rot in (("sda", 3907029168, "1"), ("sdb", 3907029168, "1"), ("md0", 4192192, None), ("md1", 3897586944, None), ("mtdblock0", 2048, "0")):
        w(root, f"sys/block/{n}/size", f"{size}\n")
        if rot is not None:
            w(root, f"sys/block/{n}/queue/rotational", rot + "\n")
    for md, parts in (("md0", ("sda1", "sdb1")), ("md1", ("sda2", "sdb2"))):
        w(root, f"sys/block/{md}/md/level", "raid1\n")
        for p in parts:
            w(root, f"sys/block/{md}/slaves/{p}", "")
        w(root, f"sys/block/{md}/queue/rotational", "1\n")
    for i in range(16):
        w(root, f"sys/block/ram{i}/size", "8192\n")
    for i in range(8):
        w(root, f"sys/block/loop{i}/size", "0\n")
    for n, speed, duplex, mtu, oper, carrier, mac in (
        ("egiga0", "1000", "fu11\n", "1500", "up", "1", "00:90:a9:12:34:56"),
        ("lo", "", "", "65536", "unknown", "1", "00:00:00:00:00:00"),
    ):
        base = f"sys/class/net/{n}/"
        w(root, base + "speed", speed + "\n" if speed else "")
        w(root, base + "duplex", duplex)
        w(root, base + "mtu", mtu + "\n")
        w(root, base + "operstate", oper + "\n")
        w(root, base + "carrier", carrier + "\n")
        w(root, base + "address", mac + "\n")

def tree_44(root):
    """Synology DSM 6.2 style: Atom C2538 (4 cores), kernel 4.4.59+, md2 raid5 over sda3..sdd3."""
    w(root, "README.md", """# Linux 4.4.59+ x86_64 — Synology DSM 6.2 (Atom C2538), generated

Built by `../make_trees.py` from the formats of Linux 4.4 (see the script's docstring); values
are invented but shaped like a 4-bay Synology with an Atom C2538 (4 cores), 2 GiB RAM, the DSM
layout of md arrays (`md0` raid1 system over sdX1, `md1` raid1 swap over sdX2, `md2` raid5
data over sda3..sdd3), `eth0`+`eth1` enslaved to `bond0`, and a replication in progress
(`synoreplicad` one core busy, `btrfs send` with a resume token).

What makes it 4.4: MemAvailable present, 14-field diskstats (discard fields came in 4.18),
per-zone `pgscan_direct_*` and one `allocstall`, TcpExt with TCPKeepAlive, 52-field
/proc/PID/stat.

Damaged on purpose: one garbage line in `proc/diskstats` (`sdq`), `sys/class/net/eth1/speed`
empty, `proc/net/netstat` cut after the TcpExt header (its counters are then unknown).
""")
    cpus = ["cpu  9123123 4123 3123123 81231231 212312 0 41231 0 0 0"]
    for i in range(4):
        cpus.append(f"cpu{i} {2280000 + i} {1030 + i} {780000 + i} {20307000 + i} {53078 + i} 0 {10307 + i} 0 0 0")
    w(root, "proc/stat", "\n".join(cpus) + """
intr 912312312 27 3 0 0 0 0 0 0 1 0 0 0 4 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0
ctxt 1912312312
btime 1717000000
processes 8123123
procs_running 2
procs_blocked 0
softirq 412312312 0 91231231 123123 81231231 1231231 0 12312 101231231 0 120000000
""")
    w(root, "proc/meminfo", """MemTotal:        2033280 kB
MemFree:          112340 kB
MemAvailable:    1301232 kB
Buffers:           61232 kB
Cached:          1312312 kB
SwapCached:        12312 kB
Active:           812312 kB
Inactive:         912312 kB
Active(anon):     212312 kB
Inactive(anon):   101231 kB
Active(file):     600000 kB
Inactive(file):   811081 kB
Unevictable:        1231 kB
Mlocked:            1231 kB
SwapTotal:       2097084 kB
SwapFree:        2001234 kB
Dirty:            123120 kB
Writeback:         12312 kB
AnonPages:        312312 kB
Mapped:            81231 kB
Shmem:             31231 kB
Slab:             121231 kB
SReclaimable:      81231 kB
SUnreclaim:        40000 kB
KernelStack:        5120 kB
PageTables:        12312 kB
NFS_Unstable:          0 kB
Bounce:                0 kB
WritebackTmp:          0 kB
CommitLimit:     3113724 kB
Committed_AS:    1231231 kB
VmallocTotal:   34359738367 kB
VmallocUsed:           0 kB
VmallocChunk:          0 kB
AnonHugePages:         0 kB
HugePages_Total:       0
HugePages_Free:        0
HugePages_Rsvd:        0
HugePages_Surp:        0
Hugepagesize:       2048 kB
DirectMap4k:       12312 kB
DirectMap2M:     2078720 kB
""")
    w(root, "proc/vmstat", """nr_free_pages 28085
nr_dirty 30780
nr_writeback 3078
pgpgin 8123123123
pgpgout 9123123123
pswpin 23123
pswpout 41231
pgalloc_dma 1231
pgalloc_dma32 912312312
pgalloc_normal 1231231231
pgalloc_movable 0
pgfault 4123123123
pgmajfault 91231
pgscan_kswapd_dma 0
pgscan_kswapd_dma32 9123123
pgscan_kswapd_normal 1231231
pgscan_kswapd_movable 0
pgscan_direct_dma 0
pgscan_direct_dma32 81231
pgscan_direct_normal 41231
pgscan_direct_movable 0
pgscan_direct_throttle 0
allocstall 1231
pgrotated 12312
""")
    lines = []
    for i in range(8):
        lines.append(f"{7:>4} {i:>7} loop{i} 0 0 0 0 0 0 0 0 0 0 0")
    base = 0
    for d, letter in enumerate("abcd"):
        maj_min = 16 * d
        r, s = 912312 + d * 1000, 400000000 + d * 10000
        lines.append(f"   8 {maj_min:>7} sd{letter} {r} 1231 {s} 812312 {r * 2} 51231 {s * 3} 9123123 1 1312312 10123123")
        for p in (1, 2, 3):
            lines.append(f"   8 {maj_min + p:>7} sd{letter}{p} {r // 3} 400 {s // 3} 270000 {r * 2 // 3} 17000 {s} 3041041 0 437437 3374374")
    lines.append("   8     256 sdq 1 2 3 4 five 6 7 8 9 10 11")
    lines += [
        "   9       0 md0 123123 0 4123123 0 81231 0 1231231 0 0 0 0",
        "   9       1 md1 1231 0 9848 0 4123 0 32984 0 0 0 0",
        "   9       2 md2 3612312 0 1601231231 0 7212312 0 4812312312 0 0 0 0",
        " 253       0 dm-0 3612312 0 1601231231 0 7212312 0 4812312312 912312 0 1231231 10123123",
    ]
    w(root, "proc/diskstats", "\n".join(lines) + "\n")
    w(root, "proc/net/dev", NETDEV_HEAD + """    lo: 91231231  812312    0    0    0     0          0         0 91231231  812312    0    0    0     0       0          0
  eth0: 912312312123 712312312    0    0    0     0          0     12312 41231231231 312312312    0    0    0     0       0          0
  eth1: 12312312 91231    0    0    0     0          0       123 4123123 41231    0    0    0     0       0          0
 bond0: 912324624435 712403543    0    0    0     0          0     12435 41235354354 312353543    0    0    0     0       0          0
""")
    w(root, "proc/net/snmp", SNMP_HEAD + TCP_HEAD + "Tcp: 1 200 120000 -1 91231 41231 123 456 12 9123123123 8123123123 91231 5 4123 0\n" + UDP)
    w(root, "proc/net/netstat", "TcpExt: " + " ".join(NETSTAT_310 + NETSTAT_44_EXTRA) + "\n")
    w(root, "proc/uptime", "2123456.12 7912312.34\n")
    w(root, "proc/sys/kernel/osrelease", "4.4.59+\n")
    w(root, "proc/sys/kernel/hostname", "DS1517\n")
    w(root, "proc/sys/kernel/random/boot_id", "0f0e9c1d-2b3a-4c5d-8e7f-9a0b1c2d3e4f\n")
    w(root, "proc/sys/vm/min_free_kbytes", "8192\n")
    procs = [
        (1, "systemd", "S", 0, 1231, 4123, 1, 3, b"/sbin/init\0"),
        (10233, "synoreplicad", "S", 1, 91231231, 1231231, 14, 800, b"/var/packages/SnapshotReplication/target/sbin/synoreplicad\0"),
        (15234, "btrfs", "S", 10233, 412312, 5123123, 1, 212000000, b"btrfs\0send\0-p\0/volume1/@sharesnap/data/GMT+02-2024.05.01-02.00.00\0-k\x0028399387\0/volume1/@sharesnap/data/GMT+02-2024.05.02-02.00.00\0"),
    ]
    for pid, comm, st, ppid, ut, stt, th, start, cmd in procs:
        w(root, f"proc/{pid}/stat", pidstat(pid, comm, st, ppid, ut, stt, th, start))
        w(root, f"proc/{pid}/cmdline", cmd.decode("latin1"))
        w(root, f"proc/{pid}/schedstat", f"{(ut + stt) * 10000000} {pid * 3000} {pid}\n")
        w(root, f"proc/{pid}/task/{pid}/stat", pidstat(pid, comm, st, ppid, ut // 2, stt // 2, th, start))
    for tid, tcomm in ((10240, "synoreplicad"), (10241, "repl-send")):
        w(root, f"proc/10233/task/{tid}/stat", pidstat(tid, tcomm, "R", 1, 45000000, 600000, 14, 900))
    for d in "abcd":
        w(root, f"sys/block/sd{d}/size", "7814037168\n")
        w(root, f"sys/block/sd{d}/queue/rotational", "1\n")
    for md, level, size in (("md0", "raid1", 4980352), ("md1", "raid1", 4194176), ("md2", "raid5", 23413893120)):
        w(root, f"sys/block/{md}/size", f"{size}\n")
        w(root, f"sys/block/{md}/md/level", level + "\n")
        for d in "abcd":
            w(root, f"sys/block/{md}/slaves/sd{d}{ {'md0': 1, 'md1': 2, 'md2': 3}[md] }", "")
    w(root, "sys/block/dm-0/size", "23413893120\n")
    for i in range(8):
        w(root, f"sys/block/loop{i}/size", "0\n")
    for n, speed, duplex, mtu, oper, carrier, mac in (
        ("eth0", "1000", "full", "1500", "up", "1", "00:11:32:aa:bb:01"),
        ("eth1", "", "full", "1500", "up", "1", "00:11:32:aa:bb:02"),
        ("bond0", "2000", "full", "1500", "up", "1", "00:11:32:aa:bb:01"),
        ("lo", "", "", "65536", "unknown", "1", "00:00:00:00:00:00"),
    ):
        base = f"sys/class/net/{n}/"
        w(root, base + "speed", speed + "\n" if speed else "")
        w(root, base + "duplex", duplex + "\n" if duplex else "")
        w(root, base + "mtu", mtu + "\n")
        w(root, base + "operstate", oper + "\n")
        w(root, base + "carrier", carrier + "\n")
        w(root, base + "address", mac + "\n")
    w(root, "sys/class/net/bond0/bonding/slaves", "eth0 eth1\n")
    w(root, "sys/class/net/bond0/bonding/mode", "802.3ad 4\n")

if __name__ == "__main__":
    tree_310("linux-3.10.39-armv7-wdmycloud")
    tree_44("linux-4.4.59-x86_64-synology")
