//! The flow's own TCP connections over the window, from the agents' `Connections` records:
//! one [`ConnStat`] per connection (first and last tcp_info, queue medians), and the flow's
//! sending and receiving ones among them.

use std::collections::BTreeMap;

use nasprobe_proto::{Event, SockAddr, TcpConn};

use crate::conns::addr_text;
use crate::input::HostData;
use crate::stats::median;

/// Samples of a connection at least this far apart give rates.
const MIN_SPAN_MS: u64 = 1_500;

/// One connection of one process on one host over the window: first and last tcp_info,
/// queue medians.
#[derive(Debug, Clone)]
pub(crate) struct ConnStat {
    pub host: String,
    pub pid: u32,
    pub comm: String,
    pub local: SockAddr,
    pub remote: SockAddr,
    pub span_ms: u64,
    pub sent: Option<u64>,
    pub received: Option<u64>,
    pub busy_us: Option<u64>,
    pub rwnd_us: Option<u64>,
    pub sndbuf_us: Option<u64>,
    pub retrans: u32,
    pub send_queue: f64,
    pub recv_queue: f64,
    pub rtt_us: f64,
    pub cwnd: f64,
    pub probes: u8,
}

impl ConnStat {
    pub(crate) fn frac(&self, us: Option<u64>) -> Option<f64> {
        (self.span_ms >= MIN_SPAN_MS)
            .then_some(us)
            .flatten()
            .map(|u| (u as f64 / (self.span_ms as f64 * 1000.0)).clamp(0.0, 1.0))
    }

    pub(crate) fn ends(&self) -> String {
        format!("{} → {}", addr_text(&self.local), addr_text(&self.remote))
    }

    pub(crate) fn who(&self) -> String {
        format!("{}: `{}` (pid {})", self.host, self.comm, self.pid)
    }
}

/// The connections of every host in `[from, to]`, one [`ConnStat`] each.
pub(crate) fn conn_stats(hosts: &[HostData], range: (u64, u64)) -> Vec<ConnStat> {
    let mut out = Vec::new();
    for h in hosts {
        // (pid, local address and port, remote address and port) → comm, times seen.
        type Key = (u32, Vec<u8>, u16, Vec<u8>, u16);
        type Seen = (String, Vec<(u64, TcpConn)>);
        let mut seen: BTreeMap<Key, Seen> = BTreeMap::new();
        for e in h.events_between(range.0, range.1) {
            if !e.is_connections() {
                continue;
            }
            let Event::Connections(c) = e.event() else {
                continue;
            };
            for p in c.procs {
                for c in p.conns {
                    let k = (
                        p.pid,
                        c.local.addr.to_vec(),
                        c.local.port,
                        c.remote.addr.to_vec(),
                        c.remote.port,
                    );
                    seen.entry(k)
                        .or_insert_with(|| (p.comm.to_string(), Vec::new()))
                        .1
                        .push((e.time_ms, c));
                }
            }
        }
        for ((pid, ..), (comm, v)) in seen {
            let (Some((t0, a)), Some((t1, b))) = (v.first(), v.last()) else {
                continue;
            };
            let (t0, t1) = (*t0, *t1);
            let d = |f: fn(&nasprobe_proto::TcpConnInfo) -> Option<u64>| {
                let (x, y) = (f(a.info.as_ref()?)?, f(b.info.as_ref()?)?);
                Some(y.saturating_sub(x))
            };
            let q = |f: fn(&TcpConn) -> u32| {
                median(&v.iter().map(|(_, c)| f(c) as f64).collect::<Vec<_>>()).unwrap_or(0.0)
            };
            let infos: Vec<_> = v.iter().filter_map(|(_, c)| c.info).collect();
            out.push(ConnStat {
                host: h.name.clone(),
                pid,
                comm,
                local: b.local.clone(),
                remote: b.remote.clone(),
                span_ms: t1.saturating_sub(t0),
                sent: d(|i| i.bytes_acked),
                received: d(|i| i.bytes_received),
                busy_us: d(|i| i.busy_time_us),
                rwnd_us: d(|i| i.rwnd_limited_us),
                sndbuf_us: d(|i| i.sndbuf_limited_us),
                retrans: match (a.info, b.info) {
                    (Some(x), Some(y)) => y.total_retrans.saturating_sub(x.total_retrans),
                    _ => v
                        .iter()
                        .map(|(_, c)| u32::from(c.retransmits))
                        .max()
                        .unwrap_or(0),
                },
                send_queue: q(|c| c.send_queue),
                recv_queue: q(|c| c.recv_queue),
                rtt_us: median(&infos.iter().map(|i| i.rtt_us as f64).collect::<Vec<_>>())
                    .unwrap_or(0.0),
                cwnd: median(&infos.iter().map(|i| i.snd_cwnd as f64).collect::<Vec<_>>())
                    .unwrap_or(0.0),
                probes: infos.iter().map(|i| i.probes).max().unwrap_or(0),
            });
        }
    }
    out
}

/// Sending and receiving connection of the flow: the one that sent the most bytes and the one
/// that received the most (the receiver preferably the sender's other end); without byte
/// counts (the /proc/net/tcp fallback) the fullest queues on the flow's hosts.
pub(crate) fn flow_conns<'a>(
    stats: &'a [ConnStat],
    from: Option<&str>,
    to: Option<&str>,
) -> (Option<&'a ConnStat>, Option<&'a ConnStat>) {
    let by = |f: fn(&ConnStat) -> f64, host: Option<&str>| {
        stats
            .iter()
            .filter(|c| f(c) > 0.0 && host.is_none_or(|h| h == c.host))
            .max_by(|a, b| f(a).total_cmp(&f(b)))
    };
    let snd = by(|c| c.sent.unwrap_or(0) as f64, None)
        .or_else(|| by(|c| c.send_queue, from))
        .or_else(|| {
            stats
                .iter()
                .find(|c| from == Some(c.host.as_str()) && c.sent.is_none())
        });
    let tied = snd.and_then(|s| {
        stats
            .iter()
            .find(|c| c.host != s.host && c.local == s.remote && c.remote == s.local)
    });
    let rcv = tied
        .or_else(|| by(|c| c.received.unwrap_or(0) as f64, None))
        .or_else(|| by(|c| c.recv_queue, to));
    (
        snd,
        rcv.filter(|r| snd.is_none_or(|s| !std::ptr::eq(*r, s))),
    )
}
