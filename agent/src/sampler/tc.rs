//! Traffic-control caps of the inventory's NICs: the root qdisc of every interface (one
//! `RTM_GETQDISC` dump over rtnetlink) and, under htb or hfsc, its classes (`RTM_GETTCLASS`
//! of that interface), turned into [`NicShaping`]: the caps a flow leaving the NIC meets.
//! Read at the first sample, whenever the inventory grows and every [`CHECK_EVERY_SAMPLES`]
//! samples; an [`Event::Shaping`] goes out when the caps change (the first one found; an
//! empty one when the last shaper went away; never on a host that has none) and again every
//! [`REPEAT_EVERY_CHECKS`] checks while a NIC is shaped, so that the ring always holds one for a
//! collector that comes late. A report over a window takes the last one before it.

use std::os::fd::{AsFd, OwnedFd};

use nasprobe_proto::{
    MAX_NICS, MAX_SHAPED_CLASSES, NicInfo, NicShaping, ShapedClass, ShaperKind, Shaping,
};

use super::io::{self, Once, Root};
use crate::parse::sysfs;
use crate::parse::tc::{
    RTM_GETQDISC, RTM_GETTCLASS, TC_H_ROOT, TcItem, TcKind, TcObject, dump_messages, dump_request,
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
            if classful && !self.dump(RTM_GETTCLASS, ifindex) {
                return None;
            }
            if let Some(s) = nic_shaping(&self.objs, ifindex, i as u16) {
                let _ = out.nics.push(s);
            }
        }
        Some(out)
    }

    /// One dump into `self.objs`; false when it failed (refused, cut, timed out).
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
            let n = match netlink::recv(fd, &mut self.buf, 0) {
                Ok(n) if n > 0 => n,
                r => {
                    let e = match r {
                        Err(e) => std::io::Error::from(e),
                        Ok(_) => std::io::Error::last_os_error(),
                    };
                    self.log.warn(format_args!("traffic-control dump: {e}"));
                    return false;
                }
            };
            for m in dump_messages(&self.buf[..n]) {
                match m {
                    Ok(TcItem::Object(o)) => {
                        if self.objs.len() < MAX_TC_OBJECTS {
                            self.objs.push(o);
                        } else {
                            self.log.warn(format_args!(
                                "more than MAX_TC_OBJECTS={MAX_TC_OBJECTS} qdiscs and classes: the rest left out"
                            ));
                        }
                    }
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

/// The caps of interface `ifindex` (inventory index `nic`) from the qdiscs and classes read;
/// None when its root qdisc caps nothing.
pub(crate) fn nic_shaping(objs: &[TcObject], ifindex: i32, nic: u16) -> Option<NicShaping> {
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
                caps.push(ShapedClass {
                    class: leaf.handle,
                    cap_bit_s: c.saturating_mul(8),
                });
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
        classes: heapless::Vec::from_slice(&caps).unwrap_or_default(),
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

#[cfg(test)]
mod tests {
    use super::*;

    fn objects(names: &[&str]) -> Vec<TcObject> {
        let mut v = Vec::new();
        for n in names {
            let b =
                std::fs::read(format!("{}/tests/data/{n}", env!("CARGO_MANIFEST_DIR"))).unwrap();
            for m in dump_messages(&b) {
                if let Ok(TcItem::Object(o)) = m {
                    v.push(o);
                }
            }
        }
        v
    }

    /// The ifindex the captures were taken on.
    fn ifindex(objs: &[TcObject]) -> i32 {
        objs[0].ifindex
    }

    #[test]
    fn captured_tbf_caps_the_nic() {
        let o = objects(&["tc-tbf-qdisc-6.18.44.bin"]);
        let s = nic_shaping(&o, ifindex(&o), 3).unwrap();
        assert_eq!((s.nic, s.kind, s.default_class), (3, ShaperKind::Tbf, None));
        assert_eq!(
            s.classes.as_slice(),
            &[ShapedClass {
                class: 0,
                cap_bit_s: 200_000_000
            }]
        );
    }

    #[test]
    fn captured_htb_lists_its_classes_lowest_first() {
        let o = objects(&["tc-htb-qdisc-6.18.44.bin", "tc-htb-class-6.18.44.bin"]);
        let s = nic_shaping(&o, ifindex(&o), 0).unwrap();
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
            assert_eq!(nic_shaping(&o, ifindex(&o), 0), None, "{f}");
        }
        let o = objects(&["tc-tbf-qdisc-6.18.44.bin"]);
        assert_eq!(nic_shaping(&o, ifindex(&o) + 1, 0), None);
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
        let s = nic_shaping(&o, 4, 0).unwrap();
        assert_eq!(s.default_class, Some(0));
        assert_eq!(
            s.classes.as_slice(),
            &[ShapedClass {
                class: 0x0001_0010,
                cap_bit_s: 100_000_000
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
