//! Network: /proc/net/dev, /sys/class/net, /proc/net/snmp and /proc/net/netstat.

use super::helpers::*;
use crate::model::{Kernel, Nic};
use crate::sim::{HostSim, hash_str, mix};
use std::fmt::Write as _;

/// The 16 counters of a /proc/net/dev line, in column order.
pub(crate) type NetCounters = [u64; 16];

fn nic_counters_one(sim: &HostSim, n: &Nic) -> NetCounters {
    let a = sim.nic_active_s(n);
    let rx = n.rx_mbs * MB;
    let tx = n.tx_mbs * MB;
    let pkt = n.packet_bytes.max(64.0);
    let mut rx_p = rx / pkt;
    let mut tx_p = tx / pkt;
    // The quiet direction of a bulk flow is mostly ACKs: one per two data segments.
    if tx < rx * 0.05 && rx_p > 0.0 {
        tx_p = (rx_p / 2.0).max(tx / pkt);
    }
    if rx < tx * 0.05 && tx_p > 0.0 {
        rx_p = (tx_p / 2.0).max(rx / pkt);
    }
    [
        sim.counter_fast(rx, a),
        sim.counter(rx_p, a, true),
        sim.counter(n.rx_errors_s, a, true),
        sim.counter(n.rx_drops_s, a, true),
        0,
        sim.counter(n.rx_errors_s * 0.3, a, true),
        0,
        sim.counter(0.2, a, true),
        sim.counter_fast(tx, a),
        sim.counter(tx_p, a, true),
        sim.counter(n.tx_errors_s, a, true),
        sim.counter(n.tx_drops_s, a, true),
        0,
        0,
        sim.counter(n.tx_errors_s * 0.5, a, true),
        0,
    ]
}

/// Counters of a NIC; a bond sums its slaves (wrapping like the flavour's counters).
pub(crate) fn nic_counters(sim: &HostSim, n: &Nic) -> NetCounters {
    if n.slaves.is_empty() {
        return nic_counters_one(sim, n);
    }
    let mut sum = [0u64; 16];
    for s in &n.slaves {
        if let Some(sn) = sim.host.nic_named(s) {
            let c = nic_counters_one(sim, sn);
            for i in 0..16 {
                sum[i] = sum[i].wrapping_add(c[i]);
                if sim.is32() {
                    sum[i] &= 0xffff_ffff;
                }
            }
        }
    }
    sum
}

/// All NICs in order: `lo` first (unless declared), then as declared.
pub fn nics(sim: &HostSim) -> Vec<Nic> {
    let h = &sim.host;
    let mut v = Vec::new();
    if h.loopback && h.nic_named("lo").is_none() {
        v.push(Nic {
            name: "lo".into(),
            speed_mbit: None,
            mtu: 65536,
            operstate: "unknown".into(),
            rx_mbs: 0.002,
            tx_mbs: 0.002,
            packet_bytes: 200.0,
            ..Default::default()
        });
    }
    v.extend(h.nics.iter().cloned());
    v
}

pub fn net_dev(sim: &HostSim) -> String {
    let mut out = String::from(
        "Inter-|   Receive                                                |  Transmit\n face |bytes    packets errs drop fifo frame compressed multicast|bytes    packets errs drop fifo colls carrier compressed\n",
    );
    for n in nics(sim) {
        let c = nic_counters(sim, &n);
        let _ = writeln!(
            out,
            "{:>6}: {:7} {:7} {:4} {:4} {:4} {:5} {:10} {:9} {:8} {:7} {:4} {:4} {:4} {:5} {:7} {:10}",
            n.name,
            c[0],
            c[1],
            c[2],
            c[3],
            c[4],
            c[5],
            c[6],
            c[7],
            c[8],
            c[9],
            c[10],
            c[11],
            c[12],
            c[13],
            c[14],
            c[15]
        );
    }
    out
}

fn mac_of(sim: &HostSim, n: &Nic) -> String {
    if let Some(a) = &n.address {
        return a.clone();
    }
    if n.name == "lo" {
        return "00:00:00:00:00:00".into();
    }
    let oui = match sim.kernel() {
        Kernel::K3_10 => [0x00, 0x90, 0xa9],
        Kernel::K4_4 => [0x00, 0x11, 0x32],
        Kernel::K6 => [0x52, 0x54, 0x00],
    };
    let h = mix(sim.seed ^ hash_str(&sim.host.name) ^ hash_str(&n.name).rotate_left(17));
    format!(
        "{:02x}:{:02x}:{:02x}:{:02x}:{:02x}:{:02x}",
        oui[0],
        oui[1],
        oui[2],
        (h >> 16) as u8,
        (h >> 8) as u8,
        h as u8
    )
}

/// Speed a NIC shows in sysfs while up: declared, or for a bond the sum of its up slaves.
pub(crate) fn nic_speed(sim: &HostSim, n: &Nic) -> Option<u32> {
    if !n.slaves.is_empty() && n.speed_mbit.is_none() {
        let s: u32 = n
            .slaves
            .iter()
            .filter_map(|s| sim.host.nic_named(s))
            .filter(|s| sim.nic_is_up(s))
            .filter_map(|s| s.speed_mbit)
            .sum();
        return if s > 0 { Some(s) } else { None };
    }
    n.speed_mbit
}

pub fn sys_net(sim: &HostSim) -> Vec<SysEntry> {
    let mut v = Vec::new();
    let all = nics(sim);
    for (idx, n) in all.iter().enumerate() {
        let d = format!("class/net/{}", n.name);
        let f = |name: &str, val: String| SysEntry::File(format!("{d}/{name}"), val);
        let up = sim.nic_is_up(n);
        let lo = n.name == "lo";
        v.push(f("address", format!("{}\n", mac_of(sim, n))));
        v.push(f("mtu", format!("{}\n", n.mtu)));
        v.push(f("ifindex", format!("{}\n", idx + 1)));
        v.push(f("type", format!("{}\n", if lo { 772 } else { 1 })));
        v.push(f("tx_queue_len", "1000\n".into()));
        v.push(f(
            "flags",
            format!(
                "{}\n",
                if n.is_admin_down() {
                    "0x1002"
                } else if lo {
                    "0x9"
                } else {
                    "0x1003"
                }
            ),
        ));
        let oper = if up { n.operstate.as_str() } else { "down" };
        v.push(f("operstate", format!("{oper}\n")));
        // Admin down: carrier, speed and duplex are unreadable (EINVAL): absent here.
        if !n.is_admin_down() {
            v.push(f("carrier", format!("{}\n", if up { 1 } else { 0 })));
            if !lo {
                let speed = if up {
                    nic_speed(sim, n).map(|s| s as i64).unwrap_or(-1)
                } else {
                    -1
                };
                v.push(f("speed", format!("{speed}\n")));
                let duplex = if up { n.duplex.as_str() } else { "unknown" };
                v.push(f("duplex", format!("{duplex}\n")));
            }
        }
        if sim.kernel() != Kernel::K3_10 {
            let starts: u64 = n.down.iter().map(|w| w.starts_before(sim.t)).sum();
            let inside = n.down.iter().filter(|w| w.contains(sim.t)).count() as u64;
            let changes = starts + starts.saturating_sub(inside);
            v.push(f("carrier_changes", format!("{}\n", changes + 1)));
        }
        let c = nic_counters(sim, n);
        let names: [(&str, u64); 9] = [
            ("rx_bytes", c[0]),
            ("rx_packets", c[1]),
            ("rx_errors", c[2]),
            ("rx_dropped", c[3]),
            ("multicast", c[7]),
            ("tx_bytes", c[8]),
            ("tx_packets", c[9]),
            ("tx_errors", c[10]),
            ("tx_dropped", c[11]),
        ];
        for (k, val) in names {
            v.push(f(&format!("statistics/{k}"), format!("{val}\n")));
        }
        for k in [
            "collisions",
            "rx_compressed",
            "rx_crc_errors",
            "rx_fifo_errors",
            "rx_length_errors",
            "rx_missed_errors",
            "rx_over_errors",
            "tx_aborted_errors",
            "tx_compressed",
            "tx_fifo_errors",
            "tx_heartbeat_errors",
            "tx_window_errors",
        ] {
            v.push(f(&format!("statistics/{k}"), "0\n".into()));
        }
        v.push(f("statistics/rx_frame_errors", format!("{}\n", c[5])));
        v.push(f("statistics/tx_carrier_errors", format!("{}\n", c[14])));
        if sim.kernel() == Kernel::K6 {
            v.push(f("statistics/rx_nohandler", "0\n".into()));
        }
        if !n.slaves.is_empty() {
            v.push(f("bonding/slaves", format!("{}\n", n.slaves.join(" "))));
            v.push(f("bonding/mode", format!("{}\n", n.bond_mode)));
            for s in &n.slaves {
                v.push(SysEntry::Symlink(
                    format!("class/net/{s}/master"),
                    format!("../{}", n.name),
                ));
                v.push(SysEntry::Symlink(
                    format!("{d}/lower_{s}"),
                    format!("../{s}"),
                ));
            }
        }
    }
    v
}

// ----- /proc system files -----------------------------------------------------------------------

pub fn net_snmp(sim: &HostSim) -> String {
    let k = sim.kernel();
    let t = sim.t;
    let c = |rate: f64| sim.counter(rate, t, true) as i64;
    let tcp = &sim.host.tcp;
    let (mut in_pps, mut out_pps) = (0.0, 0.0);
    for n in &sim.host.nics {
        if !n.slaves.is_empty() {
            continue;
        }
        let pkt = n.packet_bytes.max(64.0);
        let (rx, tx) = (n.rx_mbs * MB / pkt, n.tx_mbs * MB / pkt);
        in_pps += rx.max(tx / 2.0);
        out_pps += tx.max(rx / 2.0);
    }
    let burst = |f: fn(&crate::model::TcpBurst) -> f64| -> f64 {
        tcp.bursts.iter().map(|b| f(b) * b.window.overlap(t)).sum()
    };
    // counters with bursts: rate x t + burst extra
    let with = |rate: f64, extra: f64| {
        let base = sim.counter(rate, t, true) as f64 + extra;
        let v = base.floor() as u64;
        (if sim.is32() { v & 0xffff_ffff } else { v }) as i64
    };
    let mut out = String::new();
    let mut ip = vec![
        ("Forwarding", 2),
        ("DefaultTTL", 64),
        ("InReceives", c(in_pps)),
        ("InHdrErrors", 0),
        ("InAddrErrors", c(0.01)),
        ("ForwDatagrams", 0),
        ("InUnknownProtos", 0),
        ("InDiscards", 0),
        ("InDelivers", c(in_pps)),
        ("OutRequests", c(out_pps)),
        ("OutDiscards", 0),
        ("OutNoRoutes", 0),
        ("ReasmTimeout", 0),
        ("ReasmReqds", 0),
        ("ReasmOKs", 0),
        ("ReasmFails", 0),
        ("FragOKs", 0),
        ("FragFails", 0),
        ("FragCreates", 0),
    ];
    if k == Kernel::K6 {
        ip.push(("OutTransmits", c(out_pps)));
    }
    header_values(&mut out, "Ip", &ip);
    let mut icmp = vec![
        ("InMsgs", c(0.01)),
        ("InErrors", 0),
        ("InCsumErrors", 0),
        ("InDestUnreachs", c(0.01)),
        ("InTimeExcds", 0),
        ("InParmProbs", 0),
        ("InSrcQuenchs", 0),
        ("InRedirects", 0),
        ("InEchos", 0),
        ("InEchoReps", 0),
        ("InTimestamps", 0),
        ("InTimestampReps", 0),
        ("InAddrMasks", 0),
        ("InAddrMaskReps", 0),
        ("OutMsgs", c(0.01)),
        ("OutErrors", 0),
    ];
    if k == Kernel::K6 {
        icmp.push(("OutRateLimitGlobal", 0));
        icmp.push(("OutRateLimitHost", 0));
    }
    icmp.extend([
        ("OutDestUnreachs", c(0.01)),
        ("OutTimeExcds", 0),
        ("OutParmProbs", 0),
        ("OutSrcQuenchs", 0),
        ("OutRedirects", 0),
        ("OutEchos", 0),
        ("OutEchoReps", 0),
        ("OutTimestamps", 0),
        ("OutTimestampReps", 0),
        ("OutAddrMasks", 0),
        ("OutAddrMaskReps", 0),
    ]);
    header_values(&mut out, "Icmp", &icmp);
    let tcp_pairs = [
        ("RtoAlgorithm", 1),
        ("RtoMin", 200),
        ("RtoMax", 120000),
        ("MaxConn", -1),
        ("ActiveOpens", c(tcp.active_opens_s)),
        ("PassiveOpens", c(tcp.passive_opens_s)),
        ("AttemptFails", c(0.001)),
        (
            "EstabResets",
            with(tcp.estab_resets_s, burst(|b| b.estab_resets_s)),
        ),
        ("CurrEstab", tcp.curr_estab as i64),
        ("InSegs", c(in_pps)),
        ("OutSegs", c(out_pps)),
        ("RetransSegs", with(tcp.retrans_s, burst(|b| b.retrans_s))),
        ("InErrs", 0),
        ("OutRsts", with(tcp.resets_s, burst(|b| b.resets_s))),
        ("InCsumErrors", 0),
    ];
    header_values(&mut out, "Tcp", &tcp_pairs);
    let mut udp = vec![
        ("InDatagrams", c(2.0)),
        ("NoPorts", c(0.05)),
        ("InErrors", 0),
        ("OutDatagrams", c(2.0)),
        ("RcvbufErrors", 0),
        ("SndbufErrors", 0),
        ("InCsumErrors", 0),
    ];
    if k != Kernel::K3_10 {
        udp.push(("IgnoredMulti", c(0.3)));
    }
    if k == Kernel::K6 {
        udp.push(("MemErrors", 0));
    }
    header_values(&mut out, "Udp", &udp);
    let lite: Vec<(&str, i64)> = udp.iter().map(|(n, _)| (*n, 0)).collect();
    header_values(&mut out, "UdpLite", &lite);
    out
}

pub fn net_netstat(sim: &HostSim) -> String {
    let t = sim.t;
    let tcp = &sim.host.tcp;
    let c = |rate: f64| sim.counter(rate, t, true) as i64;
    let with = |rate: f64, f: fn(&crate::model::TcpBurst) -> f64| {
        let extra: f64 = tcp.bursts.iter().map(|b| f(b) * b.window.overlap(t)).sum();
        let v = (sim.counter(rate, t, true) as f64 + extra).floor() as u64;
        (if sim.is32() { v & 0xffff_ffff } else { v }) as i64
    };
    let k = sim.kernel();
    let mut ext: Vec<(&str, i64)> = vec![
        ("SyncookiesSent", 0),
        ("SyncookiesRecv", 0),
        ("SyncookiesFailed", 0),
        ("EmbryonicRsts", 0),
        ("PruneCalled", 0),
        ("RcvPruned", 0),
        ("OfoPruned", 0),
        ("OutOfWindowIcmps", 0),
        ("LockDroppedIcmps", 0),
        ("ArpFilter", 0),
        ("TW", c(0.05)),
        ("TWRecycled", 0),
        ("TWKilled", 0),
    ];
    if k == Kernel::K3_10 {
        ext.push(("PAWSPassive", 0));
    }
    ext.extend([
        ("PAWSActive", 0),
        ("PAWSEstab", 0),
        ("DelayedACKs", c(5.0)),
        ("DelayedACKLocked", 0),
        ("DelayedACKLost", c(0.01)),
        ("ListenOverflows", 0),
        ("ListenDrops", 0),
    ]);
    if k != Kernel::K6 {
        ext.push(("TCPPrequeued", 0));
        ext.push(("TCPDirectCopyFromBacklog", 0));
    }
    ext.extend([
        ("TCPHPHits", c(500.0)),
        ("TCPPureAcks", c(100.0)),
        ("TCPHPAcks", c(100.0)),
        ("TCPRenoRecovery", 0),
        (
            "TCPSackRecovery",
            with(tcp.retrans_s * 0.2, |b| b.retrans_s * 0.2),
        ),
        ("TCPSACKReneging", 0),
        ("TCPSACKReorder", 0),
        ("TCPRenoReorder", 0),
        ("TCPTSReorder", 0),
        ("TCPFullUndo", 0),
        ("TCPPartialUndo", 0),
        ("TCPDSACKUndo", 0),
        ("TCPLossUndo", 0),
        (
            "TCPLostRetransmit",
            with(tcp.retrans_s * 0.05, |b| b.retrans_s * 0.05),
        ),
        ("TCPRenoFailures", 0),
        ("TCPSackFailures", 0),
        ("TCPLossFailures", 0),
        (
            "TCPFastRetrans",
            with(tcp.retrans_s * 0.7, |b| b.retrans_s * 0.7),
        ),
        (
            "TCPSlowStartRetrans",
            with(tcp.retrans_s * 0.1, |b| b.retrans_s * 0.1),
        ),
        ("TCPTimeouts", with(tcp.timeouts_s, |b| b.timeouts_s)),
        ("TCPLossProbes", c(0.1)),
        ("TCPLossProbeRecovery", 0),
        ("TCPRenoRecoveryFail", 0),
        ("TCPSackRecoveryFail", 0),
        ("TCPRcvCollapsed", 0),
        ("TCPDSACKOldSent", 0),
        ("TCPDSACKOfoSent", 0),
        ("TCPDSACKRecv", 0),
        ("TCPDSACKOfoRecv", 0),
        (
            "TCPAbortOnData",
            with(tcp.resets_s * 0.5, |b| b.resets_s * 0.5),
        ),
        (
            "TCPAbortOnClose",
            with(tcp.resets_s * 0.3, |b| b.resets_s * 0.3),
        ),
        ("TCPAbortOnMemory", 0),
        (
            "TCPAbortOnTimeout",
            with(tcp.timeouts_s * 0.1, |b| b.timeouts_s * 0.1),
        ),
        ("TCPAbortOnLinger", 0),
        ("TCPAbortFailed", 0),
        ("TCPMemoryPressures", 0),
        ("TCPSACKDiscard", 0),
        ("TCPDSACKIgnoredOld", 0),
        ("TCPDSACKIgnoredNoUndo", 0),
        ("TCPSpuriousRTOs", 0),
        ("TCPMD5NotFound", 0),
        ("TCPMD5Unexpected", 0),
        ("TCPSackShifted", 0),
        ("TCPSackMerged", 0),
        ("TCPSackShiftFallback", 0),
        ("TCPBacklogDrop", 0),
        ("TCPMinTTLDrop", 0),
        ("TCPDeferAcceptDrop", 0),
        ("IPReversePathFilter", 0),
        ("TCPTimeWaitOverflow", 0),
        ("TCPReqQFullDoCookies", 0),
        ("TCPReqQFullDrop", 0),
        ("TCPRetransFail", 0),
        ("TCPRcvCoalesce", c(50.0)),
        ("TCPOFOQueue", 0),
        ("TCPOFODrop", 0),
        ("TCPOFOMerge", 0),
        ("TCPChallengeACK", 0),
        ("TCPSYNChallenge", 0),
        ("TCPFastOpenActive", 0),
        ("TCPSpuriousRtxHostQueues", 0),
        ("BusyPollRxPackets", 0),
        ("TCPAutoCorking", c(3.0)),
        ("TCPFromZeroWindowAdv", 0),
        ("TCPToZeroWindowAdv", 0),
        ("TCPWantZeroWindowAdv", 0),
        (
            "TCPSynRetrans",
            with(tcp.timeouts_s * 0.2, |b| b.timeouts_s * 0.2),
        ),
        ("TCPOrigDataSent", c(1000.0)),
    ]);
    let mut out = String::new();
    header_values(&mut out, "TcpExt", &ext);
    net_netstat_ipext(sim, &mut out);
    out
}

/// The IpExt lines of /proc/net/netstat: the host's bytes in and out over its NICs (bond
/// members counted once, by their bond).
fn net_netstat_ipext(sim: &HostSim, out: &mut String) {
    let t = sim.t;
    let c = |rate: f64| sim.counter(rate, t, true) as i64;
    let (mut rx, mut tx) = (0.0, 0.0);
    for n in &sim.host.nics {
        if n.slaves.is_empty() {
            rx += n.rx_mbs * MB;
            tx += n.tx_mbs * MB;
        }
    }
    let ipext = [
        ("InNoRoutes", 0),
        ("InTruncatedPkts", 0),
        ("InMcastPkts", c(0.2)),
        ("OutMcastPkts", c(0.05)),
        ("InBcastPkts", c(0.3)),
        ("OutBcastPkts", 0),
        ("InOctets", sim.counter(rx, t, false) as i64),
        ("OutOctets", sim.counter(tx, t, false) as i64),
        ("InMcastOctets", c(30.0)),
        ("OutMcastOctets", c(8.0)),
        ("InBcastOctets", c(60.0)),
        ("OutBcastOctets", 0),
        ("InCsumErrors", 0),
        ("InNoECTPkts", c(rx / 1448.0)),
        ("InECT1Pkts", 0),
        ("InECT0Pkts", 0),
        ("InCEPkts", 0),
    ];
    header_values(out, "IpExt", &ipext);
}
