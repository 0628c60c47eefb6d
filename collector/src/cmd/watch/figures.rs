//! What a host's panel follows, from one sample: the four sparkline figures with their
//! history, the NIC rows (bonds with their slaves) and the disk rows.

use std::collections::VecDeque;

use nasprobe_proto::Hello;

use crate::model;

/// Points kept per host for the sparklines: three minutes at the agents' default 1 Hz.
const HISTORY: usize = 180;

/// The recent figures of one host, newest last.
#[derive(Debug, Default)]
pub(super) struct HostHistory {
    pub(super) seq: Option<u64>,
    pub(super) flow_mb_s: VecDeque<f64>,
    pub(super) hot: VecDeque<f64>,
    pub(super) disk: VecDeque<f64>,
    pub(super) nic: VecDeque<f64>,
}

impl HostHistory {
    pub(super) fn push(&mut self, f: &Figures) {
        for (q, v) in [
            (&mut self.flow_mb_s, f.flow_mb_s),
            (&mut self.hot, f.hot),
            (&mut self.disk, f.disk),
            (&mut self.nic, f.nic),
        ] {
            if q.len() == HISTORY {
                q.pop_front();
            }
            q.push_back(v);
        }
    }
}

/// The four figures a sparkline follows, from one sample.
pub(super) struct Figures {
    /// The busiest NIC's (or bond's) max(rx, tx), MB/s: the host's end of the flow.
    pub(super) flow_mb_s: f64,
    /// The hottest thread, fraction of one core.
    pub(super) hot: f64,
    /// The busiest disk's util.
    pub(super) disk: f64,
    /// The busiest link's util (for a bond: its busiest slave's, the one link a flow rides).
    pub(super) nic: f64,
}

pub(super) fn figures(hello: &Hello, smp: &nasprobe_proto::Sample) -> Figures {
    let nics = nic_rows(hello, smp);
    let top = nics.iter().filter(|n| !n.slave);
    Figures {
        flow_mb_s: top.clone().map(|n| n.rx.max(n.tx)).fold(0.0, f64::max),
        hot: model::hottest_thread(hello, smp).map_or(0.0, |t| t.core_fraction),
        disk: disk_rows(hello, smp)
            .iter()
            .map(|d| d.figures.util)
            .fold(0.0, f64::max),
        nic: top.filter_map(|n| n.util).fold(0.0, f64::max),
    }
}

/// One line of the NIC list: every NIC of the Hello's inventory, idle ones included; a bond's
/// slaves under it.
#[derive(Debug, Clone)]
pub(super) struct NicRow {
    pub(super) name: String,
    /// A bond's slave (listed under its bond).
    pub(super) slave: bool,
    /// In this sample (an idle NIC is left out of a sample by the agent).
    pub(super) seen: bool,
    pub(super) up: bool,
    pub(super) rx: f64,
    pub(super) tx: f64,
    pub(super) speed_mbit: u32,
    /// Of the link; for a bond, of the slave that carries the flow.
    pub(super) util: Option<f64>,
    /// For a bond: its slave count and the one carrying the most traffic.
    pub(super) bond: Option<(usize, Option<String>)>,
    /// For a slave: it carries the bond's flow.
    pub(super) carries_flow: bool,
}

/// The traffic-control cap of NIC `name` as the views show it beside the link speed ("tc cap
/// 200 Mbit/s (tbf)", "tc caps 200..900 Mbit/s (htb)"); None when it is not shaped.
pub(super) fn cap_text(
    hello: &Hello,
    shaping: Option<&nasprobe_proto::Shaping>,
    name: &str,
) -> Option<String> {
    let n = shaping?.nics.iter().find(|n| {
        hello
            .nics
            .get(usize::from(n.nic))
            .is_some_and(|i| i.name == name)
    })?;
    let mbit = |c: &nasprobe_proto::ShapedClass| c.cap_bit_s.div_ceil(1_000_000);
    let lo = n.classes.iter().map(mbit).min()?;
    let hi = n.classes.iter().map(mbit).max()?;
    Some(if lo == hi {
        format!("tc cap {lo} Mbit/s ({})", n.kind.name())
    } else {
        format!("tc caps {lo}..{hi} Mbit/s ({})", n.kind.name())
    })
}

/// Traffic below this is no flow (keep-alives, ARP).
const FLOW_MIN_MB_S: f64 = 0.1;

pub(super) fn nic_rows(hello: &Hello, smp: &nasprobe_proto::Sample) -> Vec<NicRow> {
    let rate_of = |i: usize| {
        smp.nics
            .iter()
            .find(|n| usize::from(n.nic) == i)
            .and_then(|n| model::nic_rate(hello, smp, n))
    };
    let row = |i: usize, slave: bool| {
        let name = hello.nics[i].name.to_string();
        match rate_of(i) {
            Some(r) => NicRow {
                name,
                slave,
                seen: true,
                up: r.figures.up,
                rx: r.figures.rx_bps / 1e6,
                tx: r.figures.tx_bps / 1e6,
                speed_mbit: r.speed_mbit,
                util: r.figures.util,
                bond: None,
                carries_flow: false,
            },
            None => NicRow {
                name,
                slave,
                seen: false,
                up: false,
                rx: 0.0,
                tx: 0.0,
                speed_mbit: 0,
                util: None,
                bond: None,
                carries_flow: false,
            },
        }
    };
    let is_slave = |name: &str| {
        hello
            .nics
            .iter()
            .any(|b| b.is_bond && b.slaves.iter().any(|s| s.as_str() == name))
    };
    let mut rows = Vec::new();
    for (i, info) in hello.nics.iter().enumerate() {
        if info.name.as_str() == "lo" || is_slave(info.name.as_str()) {
            continue;
        }
        let mut r = row(i, false);
        if info.is_bond {
            let mut slaves: Vec<NicRow> = info
                .slaves
                .iter()
                .filter_map(|s| hello.nics.iter().position(|n| n.name == *s))
                .map(|j| row(j, true))
                .collect();
            let carrier = slaves
                .iter_mut()
                .filter(|s| s.rx.max(s.tx) >= FLOW_MIN_MB_S)
                .max_by(|a, b| a.rx.max(a.tx).total_cmp(&b.rx.max(b.tx)));
            let carrier_name = carrier.map(|c| {
                c.carries_flow = true;
                c.name.clone()
            });
            r.util = slaves
                .iter()
                .find(|s| s.carries_flow)
                .and_then(|s| s.util)
                .or(r.util);
            r.bond = Some((slaves.len(), carrier_name));
            rows.push(r);
            rows.extend(slaves);
        } else {
            rows.push(r);
        }
    }
    rows
}

/// Every disk of the Hello's inventory with its rate in this sample (idle ones at 0), busiest first.
pub(super) fn disk_rows(hello: &Hello, smp: &nasprobe_proto::Sample) -> Vec<model::DiskRate> {
    let mut rows: Vec<model::DiskRate> = hello
        .disks
        .iter()
        .enumerate()
        .map(|(i, info)| {
            smp.disks
                .iter()
                .find(|d| usize::from(d.disk) == i)
                .and_then(|d| model::disk_rate(hello, smp, d))
                .unwrap_or(model::DiskRate {
                    name: info.name.to_string(),
                    is_md: info.is_md,
                    figures: Default::default(),
                })
        })
        .collect();
    rows.sort_by(|a, b| b.figures.util.total_cmp(&a.figures.util));
    rows
}

#[cfg(test)]
mod tests {
    use super::*;
    use nasprobe_proto::{NicInfo, NicShaping, ShapedClass, ShaperKind, Shaping};

    fn hello() -> Hello {
        let mut h = Hello::default();
        for name in ["eth0", "eth1"] {
            h.nics
                .push(NicInfo {
                    name: name.try_into().unwrap(),
                    mtu: 1500,
                    is_bond: false,
                    slaves: Default::default(),
                    speed_override_mbit: None,
                    mac: Default::default(),
                })
                .unwrap();
        }
        h
    }

    fn shaping(kind: ShaperKind, caps: &[u64]) -> Shaping {
        let mut n = NicShaping {
            nic: 1,
            kind,
            classes: Default::default(),
            more: 0,
            default_class: None,
        };
        for (i, &c) in caps.iter().enumerate() {
            n.classes
                .push(ShapedClass {
                    class: 0x0001_0010 + i as u32,
                    cap_bit_s: c,
                    ports: Default::default(),
                    more_ports: 0,
                })
                .unwrap();
        }
        let mut s = Shaping {
            nics: Default::default(),
        };
        s.nics.push(n).unwrap();
        s
    }

    #[test]
    fn the_cap_is_shown_on_the_shaped_nic_only() {
        let h = hello();
        let tbf = shaping(ShaperKind::Tbf, &[200_000_000]);
        assert_eq!(
            cap_text(&h, Some(&tbf), "eth1").as_deref(),
            Some("tc cap 200 Mbit/s (tbf)")
        );
        assert_eq!(cap_text(&h, Some(&tbf), "eth0"), None);
        assert_eq!(cap_text(&h, None, "eth1"), None);
        let htb = shaping(ShaperKind::Htb, &[900_000_000, 200_000_000]);
        assert_eq!(
            cap_text(&h, Some(&htb), "eth1").as_deref(),
            Some("tc caps 200..900 Mbit/s (htb)")
        );
    }
}
