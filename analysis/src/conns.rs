//! A process's own TCP connections, from the agents' per-sample `Connections` records: the
//! trouble they had before the process ended, and the process at their other end on another
//! observed host (matched by address and port pairs) with how and when it ended.

use nasprobe_proto::{Event, SockAddr, TcpConn};

use crate::input::HostData;

/// How far before a death its connections are looked at.
pub const TROUBLE_WINDOW_MS: u64 = 40_000;
/// A peer's exit this far from the death (either way) can be the other end of it.
const PEER_WINDOW_MS: u64 = 120_000;

/// "10.0.0.2:873", "\[fd00::2\]:873".
pub fn addr_text(a: &SockAddr) -> String {
    match a.addr.len() {
        4 => format!(
            "{}.{}.{}.{}:{}",
            a.addr[0], a.addr[1], a.addr[2], a.addr[3], a.port
        ),
        16 => {
            let mut b = [0u8; 16];
            b.copy_from_slice(&a.addr);
            format!("[{}]:{}", std::net::Ipv6Addr::from(b), a.port)
        }
        _ => format!("?:{}", a.port),
    }
}

/// The connections of `pid` on host `h` in `[from, to]`, each with the time it was seen.
fn conns_of(h: &HostData, pid: u32, from: u64, to: u64) -> Vec<(u64, TcpConn)> {
    let mut out = Vec::new();
    for e in h.events_between(from, to) {
        if !e.is_connections() {
            continue;
        }
        if let Event::Connections(c) = e.event() {
            for p in c.procs.into_iter().filter(|p| p.pid == pid) {
                out.extend(p.conns.into_iter().map(|c| (e.time_ms, c)));
            }
        }
    }
    out
}

/// What went wrong on the connections of `pid` in the 40 s before `t`: retransmission
/// timeouts (RTO backoff), retransmitted segments, unanswered probes. None when nothing did.
pub fn trouble_before(h: &HostData, pid: u32, t: u64) -> Option<String> {
    let seen = conns_of(h, pid, t.saturating_sub(TROUBLE_WINDOW_MS), t);
    // Per remote end: first and last total_retrans, the worst backoff, probes, retransmits.
    let mut per: Vec<(String, u32, u32, u8, u8, u8)> = Vec::new();
    for (_, c) in seen {
        let key = addr_text(&c.remote);
        let (tr, backoff, probes) = c
            .info
            .map_or((0, 0, 0), |i| (i.total_retrans, i.backoff, i.probes));
        match per.iter_mut().find(|p| p.0 == key) {
            Some(p) => {
                p.1 = p.1.min(tr);
                p.2 = p.2.max(tr);
                p.3 = p.3.max(backoff);
                p.4 = p.4.max(probes);
                p.5 = p.5.max(c.retransmits);
            }
            None => per.push((key, tr, tr, backoff, probes, c.retransmits)),
        }
    }
    let bad: Vec<String> = per
        .iter()
        .filter(|p| p.2 > p.1 || p.3 > 0 || p.4 > 0 || p.5 > 0)
        .map(|(remote, lo, hi, backoff, probes, rtx)| {
            let mut what = Vec::new();
            if hi > lo {
                what.push(format!("{} retransmitted segments", hi - lo));
            }
            if *backoff > 0 || *rtx > 0 {
                let row = if *rtx > 0 {
                    format!(", {rtx} in a row")
                } else {
                    String::new()
                };
                what.push(format!(
                    "retransmission timeouts (backoff up to {backoff}{row})"
                ));
            }
            if *probes > 0 {
                what.push(format!(
                    "{probes} unanswered probes (keepalive or zero window)"
                ));
            }
            format!("its connection to {remote} had {}", what.join(", "))
        })
        .collect();
    if bad.is_empty() {
        None
    } else {
        Some(format!(
            "{} in the {} s before",
            bad.join("; "),
            TROUBLE_WINDOW_MS / 1000
        ))
    }
}

pub use crate::vocab::PeerEnd;

/// The peer of `pid` (host `hosts[at]`, ended at `t`): a process on another host with a
/// connection whose local end is one of ours' remote end and whose remote end is ours' local
/// end (no NAT between them), which itself ended within 2 min of `t`.
pub fn peer_end(hosts: &[HostData], at: usize, pid: u32, t: u64) -> Option<PeerEnd> {
    let mine = conns_of(&hosts[at], pid, t.saturating_sub(PEER_WINDOW_MS), t);
    if mine.is_empty() {
        return None;
    }
    let lo = t.saturating_sub(PEER_WINDOW_MS);
    let hi = t + PEER_WINDOW_MS;
    for (k, o) in hosts.iter().enumerate() {
        if k == at {
            continue;
        }
        for e in o.events_between(lo, hi) {
            if !e.is_connections() {
                continue;
            }
            let Event::Connections(c) = e.event() else {
                continue;
            };
            for p in &c.procs {
                let tied = p.conns.iter().any(|theirs| {
                    mine.iter()
                        .any(|(_, m)| m.remote == theirs.local && m.local == theirs.remote)
                });
                if !tied {
                    continue;
                }
                // Its end, if it ended near ours.
                let end = o
                    .events_between(lo, hi)
                    .iter()
                    .filter(|x| !x.is_measurement())
                    .find_map(|x| match x.event().as_exit() {
                        Some((ex, st)) if ex.process.pid == p.pid => Some((
                            crate::exits::exit_time(x.time_ms, st),
                            st.copied(),
                            ex.lifetime_ms,
                        )),
                        _ => None,
                    });
                if let Some((ended_ms, status, lifetime_ms)) = end {
                    // Its clock to ours: t_ours = t_theirs - their offset + our offset.
                    let clocks = hosts[at].clock().zip(o.clock());
                    let ended_ms = clocks.map_or(ended_ms, |(ours, theirs)| {
                        (ended_ms as i64 - theirs.offset_ms + ours.offset_ms).max(0) as u64
                    });
                    return Some(PeerEnd {
                        host: o.name.clone(),
                        comm: p.comm.to_string(),
                        pid: p.pid,
                        ended_ms,
                        clock_precision_ms: clocks
                            .map(|(a, b)| a.precision_ms.saturating_add(b.precision_ms)),
                        status,
                        lifetime_ms,
                    });
                }
            }
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::input::TimedEvent;
    use nasprobe_proto::ExitStatus;
    use nasprobe_proto::{
        Comm, Connections, ExitSeen, ProcConnections, ProcessEnd, ProcessExit, ProcessInfo,
        TcpConnInfo,
    };

    fn sa(ip: [u8; 4], port: u16) -> SockAddr {
        SockAddr {
            addr: heapless::Vec::from_slice(&ip).unwrap(),
            port,
        }
    }

    fn conn(local: SockAddr, remote: SockAddr, total_retrans: u32, backoff: u8) -> TcpConn {
        TcpConn {
            local,
            remote,
            state: 1,
            send_queue: 0,
            recv_queue: 0,
            info: Some(TcpConnInfo {
                probes: 0,
                backoff,
                rto_us: 200_000,
                rtt_us: 1000,
                snd_cwnd: 10,
                total_retrans,
                last_data_sent_ms: 0,
                last_data_recv_ms: 0,
                bytes_acked: None,
                bytes_received: None,
                delivery_rate: None,
                busy_time_us: None,
                rwnd_limited_us: None,
                sndbuf_limited_us: None,
            }),
            retransmits: backoff,
        }
    }

    fn conns_ev(t: u64, pid: u32, comm: &str, c: TcpConn) -> TimedEvent {
        let mut conns = heapless::Vec::new();
        conns.push(c).unwrap();
        let mut procs = heapless::Vec::new();
        procs
            .push(ProcConnections {
                pid,
                comm: Comm::try_from(comm).unwrap(),
                conns,
                more: 0,
            })
            .unwrap();
        TimedEvent::new(t, 0, t, &Event::Connections(Connections { procs }))
    }

    fn end_ev(t: u64, pid: u32, comm: &str, code: Option<u8>, signal: Option<u8>) -> TimedEvent {
        TimedEvent::new(
            t,
            0,
            t,
            &Event::ProcessEnd(ProcessEnd {
                exit: ProcessExit {
                    process: ProcessInfo {
                        pid,
                        ppid: 1,
                        comm: Comm::try_from(comm).unwrap(),
                        cmdline: Default::default(),
                        start_ticks: 0,
                    },
                    lifetime_ms: 60_000,
                    cpu_ticks: 0,
                },
                status: ExitStatus {
                    seen: ExitSeen::Kernel,
                    code,
                    signal,
                    core_dumped: false,
                    oom_killed: false,
                    before_ms: 0,
                },
            }),
        )
    }

    #[test]
    fn trouble_names_the_connection_and_the_numbers() {
        let (a, b) = (sa([10, 0, 0, 1], 40000), sa([10, 0, 0, 2], 873));
        let h = HostData {
            name: "src".into(),
            events: vec![
                conns_ev(100_000, 7, "rsync", conn(a.clone(), b.clone(), 3, 0)),
                conns_ev(120_000, 7, "rsync", conn(a.clone(), b.clone(), 10, 3)),
            ],
            ..HostData::default()
        };
        assert_eq!(
            trouble_before(&h, 7, 125_000).unwrap(),
            "its connection to 10.0.0.2:873 had 7 retransmitted segments, retransmission \
             timeouts (backoff up to 3, 3 in a row) in the 40 s before"
        );
        // Another pid, or long before: nothing.
        assert_eq!(trouble_before(&h, 8, 125_000), None);
        assert_eq!(trouble_before(&h, 7, 500_000), None);
    }

    #[test]
    fn the_peer_is_the_other_end_on_another_host() {
        let (a, b) = (sa([10, 0, 0, 1], 40000), sa([10, 0, 0, 2], 873));
        let src = HostData {
            name: "src".into(),
            events: vec![
                conns_ev(100_000, 7, "rsync", conn(a.clone(), b.clone(), 0, 0)),
                end_ev(101_000, 7, "rsync", Some(12), None),
            ],
            ..HostData::default()
        };
        let dst = HostData {
            name: "dst".into(),
            events: vec![
                conns_ev(100_000, 90, "rsyncd", conn(b.clone(), a.clone(), 0, 0)),
                // A process with the ports the other way round is not the peer.
                conns_ev(100_000, 91, "other", conn(a.clone(), b.clone(), 0, 0)),
                end_ev(100_600, 90, "rsyncd", None, Some(9)),
            ],
            ..HostData::default()
        };
        let hosts = [src, dst];
        let p = peer_end(&hosts, 0, 7, 101_000).unwrap();
        assert_eq!(
            (p.host.as_str(), p.comm.as_str(), p.pid),
            ("dst", "rsyncd", 90)
        );
        assert_eq!(p.ended_ms, 100_600);
        assert_eq!(p.status.unwrap().signal, Some(9));
        assert_eq!(p.clock_precision_ms, None);
        // No connection seen for the pid: no peer.
        assert_eq!(peer_end(&hosts, 0, 8, 101_000), None);
        // dst's clock runs 1.5 s ahead of the collector's, src's 0.2 s behind: on src's clock
        // dst's end (100 600 on dst's) was at 100 600 - 1500 - 200 = 98 900.
        let clock = |offset_ms, precision_ms| {
            Some(crate::input::ClockOffset {
                offset_ms,
                precision_ms,
            })
        };
        let [mut src, mut dst] = hosts;
        src.instances = vec![crate::input::Instance {
            id: 1,
            hello: Default::default(),
            clock: clock(-200, 2),
        }];
        dst.instances = vec![crate::input::Instance {
            id: 2,
            hello: Default::default(),
            clock: clock(1500, 3),
        }];
        let hosts = [src, dst];
        let p = peer_end(&hosts, 0, 7, 101_000).unwrap();
        assert_eq!((p.ended_ms, p.clock_precision_ms), (98_900, Some(5)));
    }

    #[test]
    fn a_clock_offset_from_the_handshake() {
        use crate::input::ClockOffset;
        // Auth sent at 1000, Hello read at 1010, stamped 6005 by the agent: 5000 ahead, ±5 ms.
        let c = ClockOffset::measure(1000, 1010, 6005).unwrap();
        assert_eq!((c.offset_ms, c.precision_ms), (5000, 5));
        let c = ClockOffset::measure(1000, 1003, 900).unwrap();
        assert_eq!((c.offset_ms, c.precision_ms), (-101, 2));
        // The collector's clock stepped back in between: no measurement.
        assert_eq!(ClockOffset::measure(1000, 990, 1000), None);
    }

    #[test]
    fn addresses() {
        assert_eq!(addr_text(&sa([10, 0, 0, 2], 873)), "10.0.0.2:873");
        let mut v6 = [0u8; 16];
        v6[15] = 1;
        let a = SockAddr {
            addr: heapless::Vec::from_slice(&v6).unwrap(),
            port: 22,
        };
        assert_eq!(addr_text(&a), "[::1]:22");
    }
}
