//! Who holds the flow back when no host resource is full: the receiving application (it does
//! not read), the sending application (it does not write) or the network (loss, or a small
//! window on a long round trip), judged from the flow's own TCP connections as the agents
//! sampled them (`Event::Connections`: tcp_info's busy / rwnd_limited / sndbuf_limited times
//! where the kernel has them, 4.10+; else the send and receive queues, zero-window probes and
//! retransmissions). The one place of that rule: `flow.limited_by`, `flow.limit_evidence` and
//! the `app` / `network` candidates of the verdict come from here.

use super::connections::{ConnStat, flow_conns};
use crate::conns::addr_text;
pub use crate::vocab::LimitedBy;
use crate::vocab::{Candidate, Resource, pct, round2};

/// The sender waited on the receiver's window this share of the time or more: the receiver
/// holds the flow (`tcpi_rwnd_limited` over the time between two samples).
pub(crate) const RWND_LIMITED: f64 = 0.2;
/// The sender's own send buffer held it (everything in flight, the application blocked on a
/// full buffer) this share of the time or more (`tcpi_sndbuf_limited`).
pub(crate) const SNDBUF_LIMITED: f64 = 0.2;
/// The connection had data to send (`tcpi_busy_time`) less than this share of the time: the
/// sending application did not write.
pub(crate) const APP_IDLE_BUSY: f64 = 0.5;
/// A round trip this long or longer is long: a small window on it limits the flow.
pub(crate) const LONG_RTT_US: f64 = 20_000.0;
/// Retransmitted segments at this share of the segments delivered (bytes acked / MSS) or more:
/// loss.
pub(crate) const LOSS_SHARE: f64 = 0.005;
/// A receive queue holding this much (median) is a receiver that does not read.
pub(crate) const RECV_FULL_BYTES: f64 = 32.0 * 1024.0;
/// A send queue below this (median) is empty: the sender has nothing to send (fallback).
pub(crate) const SEND_EMPTY_BYTES: f64 = 4.0 * 1024.0;
/// The application's hottest thread at this share of a core or more: it is busy computing,
/// not pacing itself; not named `app`.
pub(crate) const APP_THREAD_MAX: f64 = 0.6;
/// Disks at this util or more are not idle; a NIC at this share of its link is near its ceiling.
pub(crate) const DISK_BUSY: f64 = 0.5;
pub(crate) const NIC_NEAR: f64 = 0.5;
/// The application waits for a CPU (schedstat run_delay) less than this share of its time:
/// busy cores do not hold it back, its own pacing does.
pub(crate) const APP_RUN_DELAY_MAX: f64 = 0.25;
/// Segment size for the loss share when only bytes are known (Ethernet MSS).
const MSS: f64 = 1448.0;

/// Who holds the flow back, with the sentences behind it.
#[derive(Debug, Clone, Default, PartialEq)]
pub(crate) struct Limit {
    pub by: LimitedBy,
    pub evidence: Vec<String>,
    /// The host and process of the application that holds it (receiver or sender), when
    /// observed.
    pub host: Option<String>,
    pub process: Option<String>,
    /// Share of the time the flow was held this way (0..1), for the verdict's utilization.
    pub share: f64,
    /// The sending and receiving hosts of the connection (for the network's sentence).
    pub ends: (Option<String>, Option<String>),
}

fn kib(b: f64) -> String {
    if b >= 1024.0 * 1024.0 {
        format!("{:.1} MiB", b / (1024.0 * 1024.0))
    } else {
        format!("{:.0} KiB", b / 1024.0)
    }
}

fn ms(us: f64) -> String {
    if us >= 10_000.0 {
        format!("{:.0} ms", us / 1000.0)
    } else {
        format!("{:.2} ms", us / 1000.0)
    }
}

/// The rule: who limits the flow whose connections are `stats` (see the module doc).
pub(crate) fn judge(stats: &[ConnStat], from: Option<&str>, to: Option<&str>) -> Limit {
    let (snd, rcv) = flow_conns(stats, from, to);
    let v = Verdicts {
        ends: (
            snd.map(|s| s.host.clone()),
            rcv.map(|r| r.host.clone())
                .or_else(|| to.map(str::to_string)),
        ),
    };
    let unread = rcv.filter(|r| r.recv_queue >= RECV_FULL_BYTES);
    let Some(s) = snd else {
        // Only the receiving end observed: its queue says whether it reads.
        return match unread {
            Some(r) => v.app(
                r,
                LimitedBy::Receiver,
                1.0,
                vec![format!("{} — it does not read as fast as the data comes", unread_text(r))],
            ),
            None => v.other(
                LimitedBy::Unknown,
                0.0,
                vec!["the sending end of the flow's connection was not observed, and the receiver read what came".into()],
            ),
        };
    };
    let loss = match s.sent {
        Some(b) if b > 0 => f64::from(s.retrans) * MSS / b as f64,
        _ => f64::from(s.retrans.min(1)),
    };
    let path = format!(
        "rtt {}, cwnd {:.0} segments, {} retransmitted segments{}",
        ms(s.rtt_us),
        s.cwnd,
        s.retrans,
        s.sent
            .filter(|&b| b > 0)
            .map(|_| format!(" ({:.2}% of the segments delivered)", loss * 100.0))
            .unwrap_or_default()
    );
    let j = Judging {
        v,
        s,
        rcv,
        unread,
        loss,
        path,
    };
    match (s.frac(s.busy_us), s.frac(s.rwnd_us), s.frac(s.sndbuf_us)) {
        (Some(busy), Some(rwnd), Some(sndbuf)) => j.by_chronographs(busy, rwnd, sndbuf),
        _ => j.by_queues(),
    }
}

/// The [`Limit`]s of one flow: each carries the flow's sending and receiving hosts.
struct Verdicts {
    ends: (Option<String>, Option<String>),
}

impl Verdicts {
    /// The application of connection `c` holds the flow.
    fn app(&self, c: &ConnStat, by: LimitedBy, share: f64, evidence: Vec<String>) -> Limit {
        Limit {
            by,
            evidence,
            host: Some(c.host.clone()),
            process: Some(c.comm.clone()),
            share,
            ends: self.ends.clone(),
        }
    }

    /// Something else (the network, an end not observed, nothing known) holds it.
    fn other(&self, by: LimitedBy, share: f64, evidence: Vec<String>) -> Limit {
        Limit {
            by,
            evidence,
            host: None,
            process: None,
            share,
            ends: self.ends.clone(),
        }
    }
}

/// "`np15recv` (pid 90) left 2.0 MiB unread in its receive queue (median) on a → b".
fn unread_text(r: &ConnStat) -> String {
    format!(
        "{} left {} unread in its receive queue (median) on {}",
        r.who(),
        kib(r.recv_queue),
        r.ends()
    )
}

/// The flow's connections as [`judge`] weighs them once the sending one is known.
struct Judging<'a> {
    v: Verdicts,
    /// The sending connection.
    s: &'a ConnStat,
    /// The receiving one, when observed.
    rcv: Option<&'a ConnStat>,
    /// The receiving one when its receive queue is full.
    unread: Option<&'a ConnStat>,
    /// Retransmitted segments over those delivered.
    loss: f64,
    /// The path's sentence: round trip, congestion window, retransmissions.
    path: String,
}

impl Judging<'_> {
    /// With the kernel's chronographs (4.10+): the shares of the time the sender had data to
    /// send (`busy`), waited on the receiver's window (`rwnd`) and on its own send buffer.
    fn by_chronographs(&self, busy: f64, rwnd: f64, sndbuf: f64) -> Limit {
        let (s, rcv, unread, loss, path) = (self.s, self.rcv, self.unread, self.loss, &self.path);
        let chrono = format!(
            "{}'s connection {} had data to send {} of the time, waited on the receiver's window {} and on its own send buffer {} (tcp_info busy / rwnd_limited / sndbuf_limited over {:.0} s); {path}",
            s.who(),
            s.ends(),
            pct(busy),
            pct(rwnd),
            pct(sndbuf),
            s.span_ms as f64 / 1000.0
        );
        if rwnd >= RWND_LIMITED {
            if let Some(r) = unread.or(rcv.filter(|_| s.rtt_us < LONG_RTT_US)) {
                let mut ev = vec![chrono];
                if r.recv_queue >= RECV_FULL_BYTES {
                    ev.push(format!(
                        "{} — the receiving application does not read as fast as the data comes",
                        unread_text(r)
                    ));
                } else {
                    ev.push(format!("{} kept its receive queue near empty ({}) but its window small: its receive buffer (SO_RCVBUF) limits the flow", r.who(), kib(r.recv_queue)));
                }
                return self.v.app(r, LimitedBy::Receiver, rwnd, ev);
            }
            if s.rtt_us >= LONG_RTT_US {
                return self.v.other(
                    LimitedBy::Network,
                    rwnd,
                    vec![
                        chrono,
                        format!(
                            "a window too small for a {} round trip: window over rtt caps one connection; larger TCP buffers (tcp_rmem/tcp_wmem) or parallel streams would help",
                            ms(s.rtt_us)
                        ),
                    ],
                );
            }
            return self.v.other(
                LimitedBy::Receiver,
                rwnd,
                vec![
                    chrono,
                    format!(
                        "the receiving end ({}) was not observed",
                        addr_text(&s.remote)
                    ),
                ],
            );
        }
        if sndbuf >= SNDBUF_LIMITED {
            return self.v.app(
                s,
                LimitedBy::Sender,
                sndbuf,
                vec![
                    chrono,
                    format!(
                        "its send buffer (SO_SNDBUF, tcp_wmem) is smaller than what the path holds in flight: a larger one would let it send more"
                    ),
                ],
            );
        }
        if busy < APP_IDLE_BUSY {
            return self.v.app(
                s,
                LimitedBy::Sender,
                1.0 - busy,
                vec![
                    chrono,
                    format!(
                        "the sending application wrote slower than the path carries: the connection sat idle with nothing to send {} of the time (send queue {} median)",
                        pct(1.0 - busy),
                        kib(s.send_queue)
                    ),
                ],
            );
        }
        let why = if loss >= LOSS_SHARE {
            "loss: the sender kept data queued and was held by its congestion window"
        } else if s.rtt_us >= LONG_RTT_US {
            "a long round trip: the sender kept data queued and was held by its congestion window"
        } else {
            "the path: the sender kept data queued, neither application nor window held it"
        };
        self.v.other(
            LimitedBy::Network,
            busy,
            vec![chrono, format!("limited by {why}")],
        )
    }

    /// Without them: the send and receive queues, zero-window probes and retransmissions.
    fn by_queues(&self) -> Limit {
        let (s, rcv, unread, loss, path) = (self.s, self.rcv, self.unread, self.loss, &self.path);
        // Without the kernel's chronographs (before 4.10, or the /proc/net/tcp fallback): queues,
        // zero-window probes and retransmissions.
        let basis = format!(
            "{}'s connection {}: send queue {} (median){}; {path} (the kernel gives no busy / rwnd_limited times here: judged by the queues)",
            s.who(),
            s.ends(),
            kib(s.send_queue),
            if s.probes > 0 {
                format!(", {} window probes", s.probes)
            } else {
                String::new()
            }
        );
        if let Some(r) = unread {
            return self.v.app(
                r,
                LimitedBy::Receiver,
                1.0,
                vec![
                    basis,
                    format!(
                        "{} — the receiving application does not read as fast as the data comes",
                        unread_text(r)
                    ),
                ],
            );
        }
        if s.send_queue >= SEND_EMPTY_BYTES && s.probes > 0 && rcv.is_none() {
            return self.v.other(
                LimitedBy::Receiver,
                1.0,
                vec![
                    basis,
                    "the sender probed a closed window: the receiving end (not observed) does not read"
                        .into(),
                ],
            );
        }
        if s.send_queue < SEND_EMPTY_BYTES && loss < LOSS_SHARE {
            return self.v.app(
                s,
                LimitedBy::Sender,
                1.0,
                vec![basis, "its send queue stayed empty: the sending application wrote slower than the path carries".into()],
            );
        }
        if s.send_queue >= SEND_EMPTY_BYTES && (loss >= LOSS_SHARE || s.rtt_us >= LONG_RTT_US) {
            return self.v.other(
                LimitedBy::Network,
                1.0,
                vec![basis, "data waited in the send queue while the receiver read what came: the path (loss or a long round trip) holds it".into()],
            );
        }
        self.v.other(LimitedBy::Unknown, 0.0, vec![basis])
    }
}

/// The `app` or `network` candidate of `limit`, a wall only when the rest agrees: the
/// application's thread far from a full core and its disks idle (`app`), no local link near its
/// ceiling (`network`). `all` are the hosts' resource candidates; `run_delay` the application's
/// share of its time waiting for a CPU (median), when known: below [`APP_RUN_DELAY_MAX`] the
/// candidate is `lone` (busy cores do not hold it: `verdict::decide` lets it pass a `cpu_all`
/// wall).
pub(crate) fn candidate(
    limit: &Limit,
    all: &[Candidate],
    run_delay: Option<f64>,
) -> Option<Candidate> {
    let (resource, host) = match limit.by {
        LimitedBy::Receiver | LimitedBy::Sender => (Resource::App, limit.host.clone()?),
        LimitedBy::Network => (
            Resource::Network,
            limit.ends.0.clone().or(limit.ends.1.clone())?,
        ),
        LimitedBy::Unknown => return None,
    };
    let on = |h: &str, r: Resource| {
        all.iter()
            .filter(|c| c.host == h && c.resource == r)
            .collect::<Vec<_>>()
    };
    let mut against = Vec::new();
    if resource == Resource::App {
        let p = limit.process.as_deref();
        against.extend(
            on(&host, Resource::CpuThread)
                .into_iter()
                .filter(|c| c.process.as_deref() == p && c.utilization >= APP_THREAD_MAX)
                .map(|c| c.sentence.clone()),
        );
        against.extend(
            on(&host, Resource::Disk)
                .into_iter()
                .filter(|c| c.utilization >= DISK_BUSY)
                .map(|c| c.sentence.clone()),
        );
    } else {
        against.extend(
            all.iter()
                .filter(|c| c.resource == Resource::Nic && c.score >= NIC_NEAR)
                .map(|c| c.sentence.clone()),
        );
    }
    if !against.is_empty() {
        return None;
    }
    let sentence = match resource {
        Resource::App => {
            let side = if limit.by == LimitedBy::Receiver {
                "receiving"
            } else {
                "sending"
            };
            format!(
                "{host}: the {side} application `{}` holds the flow back ({} of the time), while its thread is far from a full core{} and its disks are idle",
                limit.process.as_deref().unwrap_or("?"),
                pct(limit.share),
                run_delay
                    .map(|r| format!(" (waiting for a CPU {} of its time)", pct(r)))
                    .unwrap_or_default()
            )
        }
        _ => format!(
            "the network between {} and {} holds the flow back, with no local link near its ceiling",
            limit.ends.0.as_deref().unwrap_or("?"),
            limit.ends.1.as_deref().unwrap_or("the other end")
        ),
    };
    Some(Candidate {
        host,
        resource,
        device: None,
        process: (resource == Resource::App)
            .then(|| limit.process.clone())
            .flatten(),
        thread: None,
        utilization: round2(limit.share),
        score: limit.share,
        wall: true,
        lone: resource == Resource::App && run_delay.is_some_and(|r| r < APP_RUN_DELAY_MAX),
        sentence,
    })
}

/// The verdict's words for an `app` or `network` bottleneck ("the receiving application
/// `np15recv` on dst holds the flow back: it does not read as fast as the data comes"); None for
/// the other resources. The text report, the live verdict and the HTML headline say it so.
pub(crate) fn verdict_words(
    b: &crate::report::Bottleneck,
    flow: Option<&crate::vocab::Flow>,
) -> Option<String> {
    let host = b.host.as_deref().unwrap_or("?");
    match b.resource {
        Resource::App => {
            let p = b.process.as_deref().unwrap_or("?");
            Some(match flow.map(|f| f.limited_by) {
                Some(LimitedBy::Receiver) => format!(
                    "the receiving application `{p}` on {host} holds the flow back: it does not read as fast as the data comes"
                ),
                _ => format!(
                    "the sending application `{p}` on {host} holds the flow back: it does not write as fast as the path carries"
                ),
            })
        }
        Resource::Network => {
            let to = flow
                .and_then(|f| f.to.as_deref())
                .filter(|t| *t != host)
                .unwrap_or("the other end");
            Some(format!(
                "the network between {host} and {to} holds the flow back (loss or a small window on a long round trip), no local link near its ceiling"
            ))
        }
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::input::HostData;
    use crate::verdict::connections::conn_stats;
    use crate::verdict::decide;
    use nasprobe_proto::{Event, SockAddr, TcpConn};

    fn sa(ip: [u8; 4], port: u16) -> SockAddr {
        SockAddr {
            addr: heapless::Vec::from_slice(&ip).unwrap(),
            port,
        }
    }

    /// A connection seen over 10 s; `chrono` = (busy, rwnd, sndbuf) shares, None: no chronographs.
    fn conn(host: &str, comm: &str, out: bool, chrono: Option<(f64, f64, f64)>) -> ConnStat {
        let (a, b) = (sa([10, 0, 0, 1], 40000), sa([10, 0, 0, 2], 873));
        let us = |f: f64| Some((f * 10_000_000.0) as u64);
        ConnStat {
            host: host.into(),
            pid: if out { 7 } else { 90 },
            comm: comm.into(),
            local: if out { a.clone() } else { b.clone() },
            remote: if out { b } else { a },
            span_ms: 10_000,
            sent: (out && chrono.is_some()).then_some(50_000_000),
            received: (!out && chrono.is_some()).then_some(50_000_000),
            busy_us: chrono.and_then(|c| us(c.0)),
            rwnd_us: chrono.and_then(|c| us(c.1)),
            sndbuf_us: chrono.and_then(|c| us(c.2)),
            retrans: 0,
            send_queue: 0.0,
            recv_queue: 0.0,
            rtt_us: 500.0,
            cwnd: 40.0,
            probes: 0,
        }
    }

    fn cand(
        host: &str,
        resource: Resource,
        process: Option<&str>,
        util: f64,
        wall: bool,
    ) -> Candidate {
        Candidate {
            host: host.into(),
            resource,
            device: None,
            process: process.map(str::to_string),
            thread: None,
            utilization: util,
            score: util,
            wall,
            lone: true,
            sentence: format!("{host}: {resource} at {util}"),
        }
    }

    /// A `Connections` event of one process with one connection at `t`.
    fn conns_ev(t: u64, pid: u32, c: TcpConn) -> crate::input::TimedEvent {
        let mut conns = heapless::Vec::new();
        conns.push(c).unwrap();
        let mut procs = heapless::Vec::new();
        procs
            .push(nasprobe_proto::ProcConnections {
                pid,
                comm: nasprobe_proto::Comm::try_from("rsync").unwrap(),
                conns,
                more: 0,
            })
            .unwrap();
        crate::input::TimedEvent::new(
            t,
            0,
            t,
            &Event::Connections(nasprobe_proto::Connections { procs }),
        )
    }

    fn tcp(acked: u64, busy_us: u64, rwnd_us: u64, total_retrans: u32, send_queue: u32) -> TcpConn {
        TcpConn {
            local: sa([10, 0, 0, 1], 40000),
            remote: sa([10, 0, 0, 2], 873),
            state: 1,
            send_queue,
            recv_queue: 0,
            info: Some(nasprobe_proto::TcpConnInfo {
                probes: 0,
                backoff: 0,
                rto_us: 204_000,
                rtt_us: 800,
                snd_cwnd: 30,
                total_retrans,
                last_data_sent_ms: 0,
                last_data_recv_ms: 0,
                bytes_acked: Some(acked),
                bytes_received: Some(0),
                delivery_rate: None,
                busy_time_us: Some(busy_us),
                rwnd_limited_us: Some(rwnd_us),
                sndbuf_limited_us: Some(0),
            }),
            retransmits: 0,
        }
    }

    #[test]
    fn connection_figures_are_differences_over_the_window() {
        let h = HostData {
            name: "src".into(),
            events: vec![
                conns_ev(1_000, 7, tcp(1_000_000, 5_000_000, 1_000_000, 10, 4096)),
                conns_ev(3_000, 7, tcp(9_000_000, 6_000_000, 1_000_000, 12, 0)),
                conns_ev(5_000, 7, tcp(21_000_000, 6_200_000, 1_100_000, 12, 8192)),
                // Outside the window.
                conns_ev(9_000, 7, tcp(99_000_000, 9_000_000, 9_000_000, 99, 0)),
            ],
            ..HostData::default()
        };
        let st = conn_stats(&[h], (0, 6_000));
        assert_eq!(st.len(), 1);
        let c = &st[0];
        assert_eq!(
            (c.host.as_str(), c.pid, c.comm.as_str()),
            ("src", 7, "rsync")
        );
        assert_eq!(c.span_ms, 4_000);
        assert_eq!(c.sent, Some(20_000_000));
        assert_eq!(
            (c.busy_us, c.rwnd_us, c.retrans),
            (Some(1_200_000), Some(100_000), 2)
        );
        assert_eq!(c.send_queue, 4096.0);
        // Busy 30% of the 4 s: the sender did not write.
        let l = judge(&st, Some("src"), Some("dst"));
        assert_eq!((l.by, l.host.as_deref()), (LimitedBy::Sender, Some("src")));
        assert!(
            l.evidence[0].contains("had data to send 30% of the time"),
            "{:?}",
            l.evidence
        );
    }

    #[test]
    fn a_receiver_that_does_not_read() {
        let snd = conn("src", "rsync", true, Some((1.0, 0.86, 0.0)));
        let mut rcv = conn("dst", "rsyncd", false, Some((0.0, 0.0, 0.0)));
        rcv.recv_queue = 3.8 * 1024.0 * 1024.0;
        let l = judge(&[snd.clone(), rcv], Some("src"), Some("dst"));
        assert_eq!(l.by, LimitedBy::Receiver);
        assert_eq!(
            (l.host.as_deref(), l.process.as_deref()),
            (Some("dst"), Some("rsyncd"))
        );
        assert!((l.share - 0.86).abs() < 1e-9);
        assert!(
            l.evidence[0].contains("waited on the receiver's window 86%"),
            "{:?}",
            l.evidence
        );
        assert!(
            l.evidence[1].contains("left 3.8 MiB unread"),
            "{:?}",
            l.evidence
        );
        // The receiving end not observed: still the receiver, but no application to name.
        let l = judge(&[snd], Some("src"), Some("dst"));
        assert_eq!((l.by, l.host.as_deref()), (LimitedBy::Receiver, None));
        assert_eq!(candidate(&l, &[], None), None);
    }

    #[test]
    fn a_sender_that_does_not_write() {
        let snd = conn("src", "rsync", true, Some((0.05, 0.0, 0.0)));
        let rcv = conn("dst", "rsyncd", false, Some((0.0, 0.0, 0.0)));
        let l = judge(&[rcv, snd], Some("src"), Some("dst"));
        assert_eq!(l.by, LimitedBy::Sender);
        assert_eq!(l.process.as_deref(), Some("rsync"));
        assert!((l.share - 0.95).abs() < 1e-9);
        assert!(
            l.evidence[1].contains("nothing to send 95% of the time"),
            "{:?}",
            l.evidence
        );
        // A send buffer too small for the path is the sender's too.
        let l = judge(
            &[conn("src", "rsync", true, Some((0.9, 0.0, 0.6)))],
            None,
            None,
        );
        assert_eq!(l.by, LimitedBy::Sender);
        assert!(l.evidence[1].contains("SO_SNDBUF"));
    }

    #[test]
    fn loss_or_a_small_window_on_a_long_round_trip_is_the_network() {
        let mut snd = conn("src", "rsync", true, Some((0.99, 0.02, 0.0)));
        snd.retrans = 400; // 400 of ~34 500 segments: 1.2%
        let l = judge(&[snd.clone()], Some("src"), Some("dst"));
        assert_eq!(l.by, LimitedBy::Network);
        assert!(l.evidence[1].contains("loss"), "{:?}", l.evidence);
        // The window on a 40 ms round trip while the receiver reads what comes.
        let mut snd = conn("src", "rsync", true, Some((1.0, 0.7, 0.0)));
        snd.rtt_us = 40_000.0;
        let rcv = conn("dst", "rsyncd", false, Some((0.0, 0.0, 0.0)));
        let l = judge(&[snd, rcv], Some("src"), Some("dst"));
        assert_eq!(l.by, LimitedBy::Network);
        assert!(
            l.evidence[1].contains("40 ms round trip"),
            "{:?}",
            l.evidence
        );
        // A NIC near its ceiling: not named `network`.
        let nic = cand("src", Resource::Nic, None, 0.7, false);
        assert_eq!(candidate(&l, &[nic], None), None);
        let c = candidate(&l, &[], None).unwrap();
        assert_eq!((c.resource, c.host.as_str()), (Resource::Network, "src"));
    }

    #[test]
    fn without_chronographs_the_queues_decide() {
        // 3.10: /proc/net/tcp, queues only.
        let mut snd = conn("src", "rsync", true, None);
        snd.send_queue = 2.0 * 1024.0 * 1024.0;
        let mut rcv = conn("dst", "rsyncd", false, None);
        rcv.recv_queue = 1024.0 * 1024.0;
        let l = judge(&[snd.clone(), rcv.clone()], Some("src"), Some("dst"));
        assert_eq!(
            (l.by, l.process.as_deref()),
            (LimitedBy::Receiver, Some("rsyncd"))
        );
        assert!(l.evidence[0].contains("judged by the queues"));
        rcv.recv_queue = 0.0;
        snd.send_queue = 0.0;
        let l = judge(&[snd.clone(), rcv.clone()], Some("src"), Some("dst"));
        assert_eq!(
            (l.by, l.process.as_deref()),
            (LimitedBy::Sender, Some("rsync"))
        );
        snd.send_queue = 1024.0 * 1024.0;
        snd.retrans = 3;
        let l = judge(&[snd.clone(), rcv.clone()], Some("src"), Some("dst"));
        assert_eq!(l.by, LimitedBy::Network);
        snd.retrans = 0;
        let l = judge(&[snd, rcv], Some("src"), Some("dst"));
        assert_eq!(l.by, LimitedBy::Unknown);
        assert_eq!(judge(&[], None, None).by, LimitedBy::Unknown);
    }

    #[test]
    fn a_resource_at_its_ceiling_keeps_priority() {
        let snd = conn("src", "rsync", true, Some((1.0, 0.9, 0.0)));
        let mut rcv = conn("dst", "rsyncd", false, Some((0.0, 0.0, 0.0)));
        rcv.recv_queue = 1024.0 * 1024.0;
        let l = judge(&[snd, rcv], Some("src"), Some("dst"));
        let idle = vec![
            cand("dst", Resource::CpuThread, Some("rsyncd"), 0.2, false),
            cand("dst", Resource::Disk, None, 0.1, false),
        ];
        let app = candidate(&l, &idle, Some(0.05)).unwrap();
        assert_eq!(
            (app.resource, app.process.as_deref()),
            (Resource::App, Some("rsyncd"))
        );
        let mut all = idle.clone();
        all.push(app.clone());
        let b = decide(&all, None);
        assert_eq!(
            (b.resource, b.host.as_deref()),
            (Resource::App, Some("dst"))
        );
        // A disk at its ceiling on either host is the wall; the app is not listed as one.
        let mut all = vec![cand("src", Resource::Disk, None, 0.95, true)];
        all.extend(idle.iter().cloned());
        all.push(app);
        let b = decide(&all, None);
        assert_eq!(
            (b.resource, b.host.as_deref()),
            (Resource::Disk, Some("src"))
        );
        assert!(
            !b.evidence.iter().any(|e| e.contains("also at its ceiling")),
            "{:?}",
            b.evidence
        );
        // Every core busy: the wall, unless the application rarely waits for a CPU (then the
        // cores are other work's).
        let cpu = cand("dst", Resource::CpuAll, None, 0.97, true);
        let mut all = vec![cpu.clone()];
        all.extend(idle.iter().cloned());
        all.push(candidate(&l, &idle, Some(0.4)).unwrap());
        assert_eq!(decide(&all, None).resource, Resource::CpuAll);
        let mut all = vec![cpu];
        all.extend(idle.iter().cloned());
        let app = candidate(&l, &idle, Some(0.1)).unwrap();
        assert!(
            app.sentence.contains("waiting for a CPU 10% of its time"),
            "{}",
            app.sentence
        );
        all.push(app);
        let b = decide(&all, None);
        assert_eq!(
            (b.resource, b.process.as_deref()),
            (Resource::App, Some("rsyncd"))
        );
        assert!(
            b.ruled_out
                .iter()
                .any(|r| r.contains("other work: `rsyncd` on dst")),
            "{:?}",
            b.ruled_out
        );
        // The application's thread near a core, or its disks busy: not `app`.
        let busy = [cand("dst", Resource::CpuThread, Some("rsyncd"), 0.7, false)];
        assert_eq!(candidate(&l, &busy, None), None);
        let disk = [cand("dst", Resource::Disk, None, 0.6, false)];
        assert_eq!(candidate(&l, &disk, None), None);
    }
}
