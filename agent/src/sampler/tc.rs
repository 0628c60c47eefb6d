//! Traffic-control caps of the inventory's NICs: the root qdisc of every interface (one
//! `RTM_GETQDISC` dump over rtnetlink) and, under htb or hfsc, its classes (`RTM_GETTCLASS`
//! of that interface) and the filters of its root (`RTM_GETTFILTER`: the ports u32 keys send
//! to each class), turned into [`NicShaping`]: the caps a flow leaving the NIC meets.
//! Read at the first sample, whenever the inventory grows and every [`CHECK_EVERY_SAMPLES`]
//! samples; an [`Event::Shaping`] goes out when the caps change (the first one found; an
//! empty one when the last shaper went away; never on a host that has none) and again every
//! [`REPEAT_EVERY_CHECKS`] checks while a NIC is shaped, so that the ring always holds one for a
//! collector that comes late. A report over a window takes the last one before it.

use std::os::fd::{AsFd, OwnedFd};

use nasprobe_proto::{
    MAX_CLASS_PORTS, MAX_NICS, MAX_SHAPED_CLASSES, NicInfo, NicShaping, ShapedClass, ShaperKind,
    Shaping,
};

use super::io::{self, Once, Root};
use crate::parse::sysfs;
use crate::parse::tc::{
    RTM_GETQDISC, RTM_GETTCLASS, RTM_GETTFILTER, TC_H_ROOT, TcFilter, TcItem, TcKind, TcObject,
    dump_messages, dump_request,
};
use crate::sys::netlink;

/// The qdiscs are read again every this many samples (10 s at the default 1 s interval): a
/// `tc` line or a DSM rule set while the agent runs is seen within that. One qdisc dump of the
/// build machine's two interfaces took 8.4 us (debug build, x86_64, `tc_read_cost` test), so a
/// check every 10 samples is noise next to a sample's own cost.
pub(crate) const CHECK_EVERY_SAMPLES: u32 = 10;
/// Unchanged caps are sent again after this many checks (an hour at the default interval: 24
/// events a day in the store, and the ring holds hours).
pub(crate) const REPEAT_EVERY_CHECKS: u32 = 360;
/// Most qdiscs and classes kept from one read: a NAS has a root qdisc per interface (32 at
/// most, `MAX_NICS`), mq's per-queue children and DSM's classes; more is logged and cut.
pub(crate) const MAX_TC_OBJECTS: usize = 512;
/// Datagrams read per dump before it is given up (a dump is a handful).
const DUMP_DGRAMS_MAX: usize = 64;
const DGRAM_BUF: usize = 32 * 1024;
/// A dump that does not answer within this is given up (the kernel answers at once).
const DUMP_TIMEOUT_US: u32 = 100_000;

pub(crate) struct Shapers {
    fd: Option<OwnedFd>,
    buf: Vec<u8>,
    objs: Vec<TcObject>,
    filters: Vec<TcFilter>,
    seq: u32,
    sample_no: u32,
    nics_seen: usize,
    last: Option<Shaping>,
    /// Checks since the last event sent.
    checks_since_sent: u32,
    log: Once,
}

impl Shapers {
    /// `real`: the sysfs is the kernel's own (a generated tree has no qdiscs to read).
    pub fn new(real: bool) -> Shapers {
        let fd = if real {
            match netlink::socket(libc::NETLINK_ROUTE, 0) {
                Ok(fd) => {
                    netlink::set_recv_timeout(fd.as_fd(), DUMP_TIMEOUT_US);
                    Some(fd)
                }
                Err(e) => {
                    log::warn!("rtnetlink unavailable ({e}): traffic-control caps not read");
                    None
                }
            }
        } else {
            None
        };
        Shapers {
            fd,
            buf: vec![0; DGRAM_BUF],
            objs: Vec::with_capacity(64),
            filters: Vec::new(),
            seq: 0,
            sample_no: 0,
            nics_seen: 0,
            last: None,
            checks_since_sent: 0,
            log: Once::default(),
        }
    }

    /// When due, reads the caps; `Some` when they changed (once, empty, when no NIC is shaped
    /// any more) or are due again.
    pub fn poll(&mut self, sys: &Root, nics: &[NicInfo]) -> Option<Shaping> {
        self.sample_no = self.sample_no.wrapping_add(1);
        let due = self.sample_no % CHECK_EVERY_SAMPLES == 1 || nics.len() != self.nics_seen;
        if !due || self.fd.is_none() {
            return None;
        }
        self.nics_seen = nics.len();
        let now = self.read(sys, nics)?;
        self.checks_since_sent = self.checks_since_sent.saturating_add(1);
        let send = match &self.last {
            Some(l) => {
                *l != now || (!now.nics.is_empty() && self.checks_since_sent >= REPEAT_EVERY_CHECKS)
            }
            None => !now.nics.is_empty(),
        };
        self.last = Some(now.clone());
        if send {
            self.checks_since_sent = 0;
        }
        send.then_some(now)
    }

    /// The caps of `nics` now; None when a dump failed (nothing is concluded from half a read).
    pub fn read(&mut self, sys: &Root, nics: &[NicInfo]) -> Option<Shaping> {
        self.objs.clear();
        self.filters.clear();
        if !self.dump(RTM_GETQDISC, 0) {
            return None;
        }
        let mut out = Shaping {
            nics: heapless::Vec::new(),
        };
        for (i, n) in nics.iter().enumerate().take(MAX_NICS) {
            let Some(ifindex) = io::read_small(sys, &format!("class/net/{}/ifindex", n.name))
                .and_then(|b| sysfs::parse_num(&b).ok())
                .and_then(|v| i32::try_from(v).ok())
            else {
                continue;
            };
            let classful = self.objs.iter().any(|o| {
                !o.is_class
                    && o.ifindex == ifindex
                    && o.parent == TC_H_ROOT
                    && matches!(o.kind, TcKind::Htb | TcKind::Hfsc)
            });
            if classful
                && !(self.dump(RTM_GETTCLASS, ifindex) && self.dump(RTM_GETTFILTER, ifindex))
            {
                return None;
            }
            if let Some(s) = nic_shaping(&self.objs, &self.filters, ifindex, i as u16) {
                let _ = out.nics.push(s);
            }
        }
        Some(out)
    }

    /// One dump into `self.objs` and `self.filters`; false when it failed (refused, cut, timed out).
    fn dump(&mut self, kind: u16, ifindex: i32) -> bool {
        let Some(fd) = self.fd.as_ref().map(|f| f.as_fd()) else {
            return false;
        };
        self.seq = self.seq.wrapping_add(1);
        if let Err(e) = netlink::send_to_kernel(fd, &dump_request(kind, ifindex, self.seq)) {
            self.log
                .warn(format_args!("traffic-control dump request: {e}"));
            return false;
        }
        for _ in 0..DUMP_DGRAMS_MAX {
            let n = match netlink::recv_dump(fd, &mut self.buf) {
                Ok(n) => n,
                Err(e) => {
                    self.log.warn(format_args!("traffic-control dump: {e}"));
                    return false;
                }
            };
            for m in dump_messages(&self.buf[..n]) {
                match m {
                    Ok(TcItem::Object(o)) => {
                        keep(&mut self.objs, o, &mut self.log, "qdiscs and classes");
                    }
                    // Only key nodes that send to a class matter (heads and hash tables not).
                    Ok(TcItem::Filter(f)) if f.classid.is_none() => {}
                    Ok(TcItem::Filter(f)) => keep(&mut self.filters, f, &mut self.log, "filters"),
                    Ok(TcItem::Done) => return true,
                    Ok(TcItem::Error(e)) => {
                        self.log.warn(format_args!(
                            "traffic-control dump refused: {}",
                            std::io::Error::from_raw_os_error(e as i32)
                        ));
                        return false;
                    }
                    Err(e) => {
                        self.log.warn(format_args!("traffic-control dump: {e}"));
                        return false;
                    }
                }
            }
        }
        false
    }
}

/// Pushes `x` while `v` holds fewer than MAX_TC_OBJECTS; says once that the rest is cut.
fn keep<T>(v: &mut Vec<T>, x: T, log: &mut Once, what: &str) {
    if v.len() < MAX_TC_OBJECTS {
        v.push(x);
    } else {
        log.warn(format_args!(
            "more than MAX_TC_OBJECTS={MAX_TC_OBJECTS} {what}: the rest left out"
        ));
    }
}

/// The caps of interface `ifindex` (inventory index `nic`) from the qdiscs, classes and
/// filters read; None when its root qdisc caps nothing.
pub(crate) fn nic_shaping(
    objs: &[TcObject],
    filters: &[TcFilter],
    ifindex: i32,
    nic: u16,
) -> Option<NicShaping> {
    let root = objs
        .iter()
        .find(|o| !o.is_class && o.ifindex == ifindex && o.parent == TC_H_ROOT)?;
    let kind = match root.kind {
        TcKind::Tbf => ShaperKind::Tbf,
        TcKind::Cake => ShaperKind::Cake,
        TcKind::Htb => ShaperKind::Htb,
        TcKind::Hfsc => ShaperKind::Hfsc,
        TcKind::Ingress | TcKind::Other => return None,
    };
    let mut caps: Vec<ShapedClass> = Vec::new();
    if matches!(kind, ShaperKind::Tbf | ShaperKind::Cake) {
        caps.push(ShapedClass {
            class: 0,
            cap_bit_s: root.cap_bytes_ps?.saturating_mul(8),
            ports: heapless::Vec::new(),
            more_ports: 0,
        });
    } else {
        let classes: Vec<&TcObject> = objs
            .iter()
            .filter(|o| o.is_class && o.ifindex == ifindex && o.handle >> 16 == root.handle >> 16)
            .collect();
        for leaf in classes
            .iter()
            .filter(|c| !classes.iter().any(|d| d.parent == c.handle))
        {
            // The least cap on the way to the root: a child cannot pass its parent's ceiling.
            let mut cap = leaf.cap_bytes_ps;
            let mut at = leaf.parent;
            for _ in 0..classes.len() {
                let Some(p) = classes.iter().find(|c| c.handle == at) else {
                    break;
                };
                cap = match (cap, p.cap_bytes_ps) {
                    (Some(a), Some(b)) => Some(a.min(b)),
                    (a, b) => a.or(b),
                };
                at = p.parent;
            }
            if let Some(c) = cap {
                caps.push(class_ports(
                    ShapedClass {
                        class: leaf.handle,
                        cap_bit_s: c.saturating_mul(8),
                        ports: heapless::Vec::new(),
                        more_ports: 0,
                    },
                    filters
                        .iter()
                        .filter(|f| f.ifindex == ifindex && f.parent == root.handle && f.is_u32),
                ));
            }
        }
        if caps.is_empty() {
            return None;
        }
    }
    caps.sort_by_key(|c| (c.cap_bit_s, c.class));
    let more = caps.len().saturating_sub(MAX_SHAPED_CLASSES);
    caps.truncate(MAX_SHAPED_CLASSES);
    Some(NicShaping {
        nic,
        kind,
        classes: caps.into_iter().collect(),
        more: u16::try_from(more).unwrap_or(u16::MAX),
        default_class: root.default_class.map(|d| {
            if d == 0 {
                0
            } else {
                (root.handle & 0xFFFF_0000) | d
            }
        }),
    })
}

/// `c` with the ports of the `filters` that send to it, each once, in the order of the dump.
fn class_ports<'a>(mut c: ShapedClass, filters: impl Iterator<Item = &'a TcFilter>) -> ShapedClass {
    for f in filters.filter(|f| f.classid == Some(c.class)) {
        c.more_ports = c.more_ports.saturating_add(f.more_ports);
        for p in &f.ports {
            if c.ports.contains(p) {
                continue;
            }
            if c.ports.len() == MAX_CLASS_PORTS {
                c.more_ports = c.more_ports.saturating_add(1);
            } else {
                let _ = c.ports.push(*p);
            }
        }
    }
    c
}

#[cfg(test)]
mod tests {
    use super::*;
    use nasprobe_proto::PortMatch;

    /// The objects (qdiscs, classes) and the filters of captured dumps.
    fn read(names: &[&str]) -> (Vec<TcObject>, Vec<TcFilter>) {
        let (mut o, mut f) = (Vec::new(), Vec::new());
        for n in names {
            let b =
                std::fs::read(format!("{}/tests/data/{n}", env!("CARGO_MANIFEST_DIR"))).unwrap();
            for m in dump_messages(&b) {
                match m {
                    Ok(TcItem::Object(x)) => o.push(x),
                    Ok(TcItem::Filter(x)) => f.push(x),
                    _ => {}
                }
            }
        }
        (o, f)
    }

    fn objects(names: &[&str]) -> Vec<TcObject> {
        read(names).0
    }

    fn port(port: u16, dst: bool) -> PortMatch {
        PortMatch { port, dst }
    }

    /// The htb capture with the u32 filters of `capture_tc.py` on its root: each class gets
    /// the ports its filters send to it, each once.
    #[test]
    fn captured_u32_filters_give_each_class_its_ports() {
        let o = objects(&["tc-htb-qdisc-6.18.44.bin", "tc-htb-class-6.18.44.bin"]);
        let f = read(&["tc-u32-filter-6.18.44.bin"]).1;
        let s = nic_shaping(&o, &f, ifindex(&o), 0).unwrap();
        let ports: Vec<(u32, &[PortMatch], u16)> = s
            .classes
            .iter()
            .map(|c| (c.class, c.ports.as_slice(), c.more_ports))
            .collect();
        assert_eq!(
            ports,
            vec![
                (
                    0x0001_0010,
                    &[port(7462, true), port(5201, false), port(3260, true)][..],
                    0
                ),
                (
                    0x0001_0020,
                    &[port(445, true), port(22, false), port(2049, true)][..],
                    0
                ),
            ]
        );
        // The filters of another interface are not this one's.
        let s = nic_shaping(&o, &f, ifindex(&o), 0).unwrap();
        let mut other = f.clone();
        for x in &mut other {
            x.ifindex += 1;
        }
        let t = nic_shaping(&o, &other, ifindex(&o), 0).unwrap();
        assert!(t.classes.iter().all(|c| c.ports.is_empty()));
        assert_ne!(s, t);
    }

    /// More ports than MAX_CLASS_PORTS are counted, and a filter's own overflow too.
    #[test]
    fn ports_past_the_cap_are_counted() {
        let f = |p: &[u16], more| TcFilter {
            ifindex: 1,
            parent: 0x0001_0000,
            is_u32: true,
            classid: Some(0x0001_0010),
            ports: p.iter().map(|&p| port(p, true)).collect(),
            more_ports: more,
        };
        let c = ShapedClass {
            class: 0x0001_0010,
            cap_bit_s: 1,
            ports: heapless::Vec::new(),
            more_ports: 0,
        };
        let fs = [f(&[1, 2, 3], 0), f(&[3, 4, 5, 6], 2)];
        let c = class_ports(c, fs.iter());
        assert_eq!(
            c.ports.iter().map(|p| p.port).collect::<Vec<_>>(),
            [1, 2, 3, 4]
        );
        assert_eq!(c.more_ports, 2 + 2);
    }

    /// The ifindex the captures were taken on.
    fn ifindex(objs: &[TcObject]) -> i32 {
        objs[0].ifindex
    }

    #[test]
    fn captured_tbf_caps_the_nic() {
        let o = objects(&["tc-tbf-qdisc-6.18.44.bin"]);
        let s = nic_shaping(&o, &[], ifindex(&o), 3).unwrap();
        assert_eq!((s.nic, s.kind, s.default_class), (3, ShaperKind::Tbf, None));
        assert_eq!(
            s.classes.as_slice(),
            &[ShapedClass {
                class: 0,
                cap_bit_s: 200_000_000,
                ports: heapless::Vec::new(),
                more_ports: 0,
            }]
        );
    }

    #[test]
    fn captured_htb_lists_its_classes_lowest_first() {
        let o = objects(&["tc-htb-qdisc-6.18.44.bin", "tc-htb-class-6.18.44.bin"]);
        let s = nic_shaping(&o, &[], ifindex(&o), 0).unwrap();
        assert_eq!(s.kind, ShaperKind::Htb);
        assert_eq!(s.default_class, Some(0x0001_0020));
        let caps: Vec<(u32, u64)> = s.classes.iter().map(|c| (c.class, c.cap_bit_s)).collect();
        assert_eq!(
            caps,
            vec![(0x0001_0010, 200_000_000), (0x0001_0020, 40_000_000_000)]
        );
    }

    #[test]
    fn no_shaper_on_noqueue_or_ingress() {
        for f in ["tc-none-qdisc-6.18.44.bin", "tc-ingress-qdisc-6.18.44.bin"] {
            let o = objects(&[f]);
            assert_eq!(nic_shaping(&o, &[], ifindex(&o), 0), None, "{f}");
        }
        let o = objects(&["tc-tbf-qdisc-6.18.44.bin"]);
        assert_eq!(nic_shaping(&o, &[], ifindex(&o) + 1, 0), None);
    }

    /// A parent's ceiling caps its children: 1:1 at 100 Mbit/s over 1:10 at 200 Mbit/s.
    #[test]
    fn a_parent_ceiling_caps_the_leaf() {
        let class = |handle, parent, cap| TcObject {
            is_class: true,
            ifindex: 4,
            handle,
            parent,
            kind: TcKind::Htb,
            cap_bytes_ps: Some(cap),
            rate_bytes_ps: Some(cap),
            default_class: None,
        };
        let o = vec![
            TcObject {
                is_class: false,
                handle: 0x0001_0000,
                parent: TC_H_ROOT,
                default_class: Some(0),
                cap_bytes_ps: None,
                ..class(0, 0, 0)
            },
            class(0x0001_0001, 0x0001_0000, 12_500_000),
            class(0x0001_0010, 0x0001_0001, 25_000_000),
        ];
        let s = nic_shaping(&o, &[], 4, 0).unwrap();
        assert_eq!(s.default_class, Some(0));
        assert_eq!(
            s.classes.as_slice(),
            &[ShapedClass {
                class: 0x0001_0010,
                cap_bit_s: 100_000_000,
                ports: heapless::Vec::new(),
                more_ports: 0,
            }]
        );
    }

    /// Real dumps of this machine's qdiscs: what one periodic check costs (printed, not
    /// asserted beyond a bound many times the expected one).
    #[test]
    fn tc_read_cost() {
        let mut s = Shapers::new(true);
        if s.fd.is_none() {
            return;
        }
        let root = Root::open(std::path::Path::new("/sys"), io::SYSFS_MAGIC);
        let nics: Vec<NicInfo> = Vec::new();
        // qemu-user translates only some of netlink: its RTM_GETQDISC answers EOPNOTSUPP (the
        // agent logs it once and reads no caps). Natively the dump must work.
        if std::env::var_os("NASPROBE_AGENT_RUNNER").is_some() && s.read(&root, &nics).is_none() {
            println!("rtnetlink tc dumps are not translated by this emulator");
            return;
        }
        let t = std::time::Instant::now();
        const N: u32 = 200;
        for _ in 0..N {
            assert!(s.read(&root, &nics).is_some());
        }
        let us = t.elapsed().as_micros() as f64 / f64::from(N);
        println!("one qdisc dump: {us:.1} us");
        assert!(us < 50_000.0);
    }
}
