//! rtnetlink traffic-control dumps (`RTM_GETQDISC`, `RTM_GETTCLASS` replies): the kind of each
//! qdisc and class and the rate it caps traffic at, from the `TCA_OPTIONS` of tbf, htb, cake
//! and hfsc. Kernels before 3.13 have no `TCA_TBF_RATE64`/`TCA_HTB_RATE64` (their rates are
//! the 32-bit bytes/s of the ratespec); later ones add the 64-bit attribute only for rates of
//! 2^32 bytes/s and more, so both forms are read and the 64-bit one wins. Host byte order.

use super::ParseError;
use super::netlink::{
    NLMSG_DONE, NLMSG_ERROR, NLMSG_HDR, error_code, frames, u16_at, u32_at, u64_at,
};

/// RTM_NEWQDISC / RTM_GETQDISC, RTM_NEWTCLASS / RTM_GETTCLASS (linux/rtnetlink.h).
pub const RTM_NEWQDISC: u16 = 36;
pub const RTM_GETQDISC: u16 = 38;
pub const RTM_NEWTCLASS: u16 = 40;
pub const RTM_GETTCLASS: u16 = 42;
/// `struct tcmsg`: family, 3 pad, ifindex, handle, parent, info.
const TCMSG_LEN: usize = 20;
/// `tcm_parent` of a root qdisc (TC_H_ROOT) and of ingress/clsact (TC_H_INGRESS).
pub const TC_H_ROOT: u32 = 0xFFFF_FFFF;
pub const TC_H_INGRESS: u32 = 0xFFFF_FFF1;
const TCA_KIND: u16 = 1;
const TCA_OPTIONS: u16 = 2;
/// Longest qdisc kind the kernel has (IFNAMSIZ, "fq_codel", "pfifo_fast").
pub const KIND_LEN: usize = 16;
/// `struct tc_ratespec`: cell_log, linklayer, overhead, cell_align, mpu, rate (u32 bytes/s).
const RATESPEC_LEN: usize = 12;
const TCA_TBF_PARMS: u16 = 1;
const TCA_TBF_RATE64: u16 = 4;
const TCA_HTB_PARMS: u16 = 1;
const TCA_HTB_INIT: u16 = 2;
const TCA_HTB_RATE64: u16 = 6;
const TCA_HTB_CEIL64: u16 = 7;
const TCA_CAKE_BASE_RATE64: u16 = 2;
const TCA_HFSC_USC: u16 = 3;

/// What kind of qdisc or class a message describes, as far as caps go.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TcKind {
    Tbf,
    Htb,
    Cake,
    Hfsc,
    /// The ingress (or clsact) qdisc: shapes nothing itself, its filters may police.
    Ingress,
    /// Anything else (noqueue, pfifo_fast, fq_codel, mq, ...): no cap of its own.
    Other,
}

impl TcKind {
    fn of(kind: &[u8]) -> TcKind {
        match kind {
            b"tbf" => TcKind::Tbf,
            b"htb" => TcKind::Htb,
            b"cake" => TcKind::Cake,
            b"hfsc" => TcKind::Hfsc,
            b"ingress" | b"clsact" => TcKind::Ingress,
            _ => TcKind::Other,
        }
    }
}

/// One qdisc or class of a dump.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TcObject {
    /// True for a class (RTM_NEWTCLASS), false for a qdisc.
    pub is_class: bool,
    pub ifindex: i32,
    /// `major:minor` as one u32 (1:10 is 0x0001_0010).
    pub handle: u32,
    pub parent: u32,
    pub kind: TcKind,
    /// The most it lets through, bytes/s: tbf's rate, htb's ceil, cake's bandwidth, hfsc's
    /// upper-limit curve; None when it sets none (cake unlimited, htb's qdisc itself).
    pub cap_bytes_ps: Option<u64>,
    /// htb: its guaranteed rate, bytes/s.
    pub rate_bytes_ps: Option<u64>,
    /// htb qdisc: the class of unclassified traffic (`default`; 0 = sent unshaped).
    pub default_class: Option<u32>,
}

/// One message of a traffic-control dump.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TcItem {
    Object(TcObject),
    /// The dump is complete.
    Done,
    /// The kernel refused the request (errno).
    Error(u32),
}

/// The messages of one datagram of a dump; it ends at the first Done, error or unframeable
/// message.
pub fn dump_messages(buf: &[u8]) -> impl Iterator<Item = Result<TcItem, ParseError>> + '_ {
    let mut ended = false;
    frames(buf).map_while(move |f| {
        if ended {
            return None;
        }
        let item = f.and_then(|(kind, p)| match kind {
            NLMSG_DONE => Ok(TcItem::Done),
            NLMSG_ERROR => error_code(p).map(TcItem::Error),
            RTM_NEWQDISC => parse_tcmsg(p, false).map(TcItem::Object),
            RTM_NEWTCLASS => parse_tcmsg(p, true).map(TcItem::Object),
            _ => Err(ParseError::Malformed("nlmsg_type")),
        });
        ended = !matches!(item, Ok(TcItem::Object(_)));
        Some(item)
    })
}

/// The attributes of `a` as (type without the nested/byte-order flags, payload).
fn attrs(mut a: &[u8]) -> impl Iterator<Item = Result<(u16, &[u8]), ParseError>> {
    let mut failed = false;
    core::iter::from_fn(move || {
        if failed || a.len() < 4 {
            return None;
        }
        let len = u16_at(a, 0) as usize;
        if len < 4 || len > a.len() {
            failed = true;
            return Some(Err(ParseError::Malformed("rtattr len")));
        }
        let item = (u16_at(a, 2) & 0x3FFF, &a[4..len]);
        a = &a[(len.div_ceil(4) * 4).min(a.len())..];
        Some(Ok(item))
    })
}

fn ratespec_rate(b: &[u8], at: usize) -> Result<u64, ParseError> {
    if b.len() < at + RATESPEC_LEN {
        return Err(ParseError::Truncated("tc_ratespec"));
    }
    Ok(u64::from(u32_at(b, at + 8)))
}

fn attr_u64(p: &[u8], what: &'static str) -> Result<u64, ParseError> {
    u64_at(p, 0).ok_or(ParseError::Truncated(what))
}

fn parse_tcmsg(p: &[u8], is_class: bool) -> Result<TcObject, ParseError> {
    if p.len() < TCMSG_LEN {
        return Err(ParseError::Truncated("tcmsg"));
    }
    let mut o = TcObject {
        is_class,
        ifindex: u32_at(p, 4) as i32,
        handle: u32_at(p, 8),
        parent: u32_at(p, 12),
        kind: TcKind::Other,
        cap_bytes_ps: None,
        rate_bytes_ps: None,
        default_class: None,
    };
    let mut options: Option<&[u8]> = None;
    for a in attrs(&p[TCMSG_LEN..]) {
        let (t, v) = a?;
        match t {
            TCA_KIND => {
                let name = v.split(|&b| b == 0).next().unwrap_or(v);
                if name.len() > KIND_LEN {
                    return Err(ParseError::Malformed("TCA_KIND"));
                }
                o.kind = TcKind::of(name);
            }
            TCA_OPTIONS => options = Some(v),
            _ => {}
        }
    }
    // Only these kinds nest attributes in TCA_OPTIONS: pfifo_fast and prio put a raw
    // struct there, others their own layouts, none of them a cap.
    if let Some(opts) = options
        && matches!(
            o.kind,
            TcKind::Tbf | TcKind::Htb | TcKind::Cake | TcKind::Hfsc
        )
    {
        read_options(&mut o, opts)?;
    }
    Ok(o)
}

/// Fills the caps of `o` from its `TCA_OPTIONS` (nested attributes of its kind).
fn read_options(o: &mut TcObject, opts: &[u8]) -> Result<(), ParseError> {
    let (mut rate32, mut ceil32, mut rate64, mut ceil64) = (None, None, None, None);
    for a in attrs(opts) {
        let (t, v) = a?;
        match (o.kind, t) {
            (TcKind::Tbf, TCA_TBF_PARMS) => rate32 = Some(ratespec_rate(v, 0)?),
            (TcKind::Tbf, TCA_TBF_RATE64) => rate64 = Some(attr_u64(v, "TCA_TBF_RATE64")?),
            (TcKind::Htb, TCA_HTB_PARMS) if o.is_class => {
                rate32 = Some(ratespec_rate(v, 0)?);
                ceil32 = Some(ratespec_rate(v, RATESPEC_LEN)?);
            }
            (TcKind::Htb, TCA_HTB_INIT) if !o.is_class => {
                // struct tc_htb_glob: version, rate2quantum, defcls, debug, direct_pkts.
                if v.len() < 12 {
                    return Err(ParseError::Truncated("tc_htb_glob"));
                }
                o.default_class = Some(u32_at(v, 8));
            }
            (TcKind::Htb, TCA_HTB_RATE64) => rate64 = Some(attr_u64(v, "TCA_HTB_RATE64")?),
            (TcKind::Htb, TCA_HTB_CEIL64) => ceil64 = Some(attr_u64(v, "TCA_HTB_CEIL64")?),
            (TcKind::Cake, TCA_CAKE_BASE_RATE64) => {
                rate64 = Some(attr_u64(v, "TCA_CAKE_BASE_RATE64")?).filter(|&r| r > 0);
            }
            (TcKind::Hfsc, TCA_HFSC_USC) => {
                // struct tc_service_curve: m1, d, m2 (bytes/s of the long-term slope).
                if v.len() < 12 {
                    return Err(ParseError::Truncated("tc_service_curve"));
                }
                rate32 = Some(u64::from(u32_at(v, 8))).filter(|&r| r > 0);
            }
            _ => {}
        }
    }
    let rate = rate64.or(rate32);
    match o.kind {
        TcKind::Htb => {
            o.rate_bytes_ps = rate;
            o.cap_bytes_ps = ceil64.or(ceil32);
        }
        _ => o.cap_bytes_ps = rate,
    }
    Ok(())
}

/// A dump request of every qdisc (`RTM_GETQDISC`) or of the classes of `ifindex`
/// (`RTM_GETTCLASS`: the kernel dumps classes only of the interface the request names).
pub fn dump_request(kind: u16, ifindex: i32, seq: u32) -> [u8; NLMSG_HDR + TCMSG_LEN] {
    let mut m = [0u8; NLMSG_HDR + TCMSG_LEN];
    let total = m.len() as u32;
    m[0..4].copy_from_slice(&total.to_ne_bytes());
    m[4..6].copy_from_slice(&kind.to_ne_bytes());
    // NLM_F_REQUEST | NLM_F_DUMP.
    m[6..8].copy_from_slice(&0x301u16.to_ne_bytes());
    m[8..12].copy_from_slice(&seq.to_ne_bytes());
    m[NLMSG_HDR + 4..NLMSG_HDR + 8].copy_from_slice(&ifindex.to_ne_bytes());
    m
}

#[cfg(test)]
mod tests {
    use super::*;

    fn attr(t: u16, v: &[u8]) -> Vec<u8> {
        let mut a = ((4 + v.len()) as u16).to_ne_bytes().to_vec();
        a.extend(t.to_ne_bytes());
        a.extend(v);
        while !a.len().is_multiple_of(4) {
            a.push(0);
        }
        a
    }

    fn msg(kind: u16, parent: u32, tc: &[u8], opts: &[u8]) -> Vec<u8> {
        let mut p = vec![0u8; TCMSG_LEN];
        p[4..8].copy_from_slice(&7i32.to_ne_bytes());
        p[8..12].copy_from_slice(&0x0001_0000u32.to_ne_bytes());
        p[12..16].copy_from_slice(&parent.to_ne_bytes());
        p.extend(attr(TCA_KIND, tc));
        p.extend(attr(TCA_OPTIONS | 0x8000, opts));
        let mut m = ((NLMSG_HDR + p.len()) as u32).to_ne_bytes().to_vec();
        m.extend(kind.to_ne_bytes());
        m.extend([0u8; 10]);
        m.extend(p);
        m
    }

    fn one(m: &[u8]) -> Result<TcObject, ParseError> {
        match dump_messages(m).next() {
            Some(Ok(TcItem::Object(o))) => Ok(o),
            Some(Err(e)) => Err(e),
            other => panic!("not an object: {other:?}"),
        }
    }

    /// Every object of a captured dump (agent/tests/data, see its README).
    fn objects(dump: &[u8]) -> Vec<TcObject> {
        let mut v = Vec::new();
        for m in dump_messages(dump) {
            match m.unwrap() {
                TcItem::Object(o) => v.push(o),
                TcItem::Done => return v,
                TcItem::Error(e) => panic!("errno {e}"),
            }
        }
        panic!("no NLMSG_DONE");
    }

    const DATA: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/data/");

    fn data(name: &str) -> Vec<u8> {
        std::fs::read(format!("{DATA}{name}")).unwrap()
    }

    #[test]
    fn captured_none_has_no_cap() {
        let q = objects(&data("tc-none-qdisc-6.18.44.bin"));
        assert_eq!(q.len(), 1);
        assert_eq!(
            (q[0].kind, q[0].parent, q[0].cap_bytes_ps),
            (TcKind::Other, TC_H_ROOT, None)
        );
        assert!(objects(&data("tc-none-class-6.18.44.bin")).is_empty());
    }

    #[test]
    fn captured_tbf_200mbit() {
        let q = objects(&data("tc-tbf-qdisc-6.18.44.bin"));
        let root: Vec<_> = q.iter().filter(|o| o.parent == TC_H_ROOT).collect();
        assert_eq!(root.len(), 1);
        assert_eq!(root[0].kind, TcKind::Tbf);
        assert_eq!(root[0].cap_bytes_ps, Some(25_000_000));
    }

    #[test]
    fn captured_htb_two_classes_and_rate64() {
        let q = objects(&data("tc-htb-qdisc-6.18.44.bin"));
        let root = q.iter().find(|o| o.parent == TC_H_ROOT).unwrap();
        assert_eq!(
            (root.kind, root.handle, root.default_class),
            (TcKind::Htb, 0x0001_0000, Some(0x20))
        );
        let c = objects(&data("tc-htb-class-6.18.44.bin"));
        assert_eq!(c.len(), 2);
        let c10 = c.iter().find(|o| o.handle == 0x0001_0010).unwrap();
        assert_eq!(
            (c10.is_class, c10.cap_bytes_ps, c10.rate_bytes_ps),
            (true, Some(25_000_000), Some(25_000_000))
        );
        // 40 Gbit/s is past the ratespec's u32: only TCA_HTB_RATE64/CEIL64 carry it.
        let c20 = c.iter().find(|o| o.handle == 0x0001_0020).unwrap();
        assert_eq!(c20.cap_bytes_ps, Some(5_000_000_000));
    }

    #[test]
    fn htb_without_rate64_as_on_3_10() {
        let c = objects(&data("tc-htb-class-3.10-shaped.bin"));
        assert_eq!(c.len(), 2);
        let c10 = c.iter().find(|o| o.handle == 0x0001_0010).unwrap();
        assert_eq!(c10.cap_bytes_ps, Some(25_000_000));
        // Without the 64-bit attribute the ratespec's saturated u32 is all there is.
        let c20 = c.iter().find(|o| o.handle == 0x0001_0020).unwrap();
        assert_eq!(c20.cap_bytes_ps, Some(u64::from(u32::MAX)));
    }

    #[test]
    fn captured_ingress_is_not_a_cap() {
        let q = objects(&data("tc-ingress-qdisc-6.18.44.bin"));
        let ing = q.iter().find(|o| o.parent == TC_H_INGRESS).unwrap();
        assert_eq!((ing.kind, ing.cap_bytes_ps), (TcKind::Ingress, None));
    }

    #[test]
    fn every_cut_of_a_capture_is_refused_or_shorter() {
        let full = data("tc-htb-class-6.18.44.bin");
        for n in 0..full.len() {
            for m in dump_messages(&full[..n]) {
                let _ = m;
            }
        }
    }

    #[test]
    fn cake_bandwidth_and_unlimited() {
        let m = msg(
            RTM_NEWQDISC,
            TC_H_ROOT,
            b"cake\0",
            &attr(2, &12_500_000u64.to_ne_bytes()),
        );
        let o = one(&m).unwrap();
        assert_eq!((o.kind, o.cap_bytes_ps), (TcKind::Cake, Some(12_500_000)));
        let m = msg(
            RTM_NEWQDISC,
            TC_H_ROOT,
            b"cake\0",
            &attr(2, &0u64.to_ne_bytes()),
        );
        assert_eq!(one(&m).unwrap().cap_bytes_ps, None);
    }

    /// pfifo_fast (a NAS's default root qdisc) puts a raw `struct tc_prio_qopt` (bands, then
    /// the 16-byte priomap) in TCA_OPTIONS, not attributes.
    #[test]
    fn pfifo_fast_raw_options_are_not_attributes() {
        let mut qopt = 3u32.to_ne_bytes().to_vec();
        qopt.extend([1, 2, 2, 2, 1, 2, 0, 0, 1, 1, 1, 1, 1, 1, 1, 1]);
        let o = one(&msg(RTM_NEWQDISC, TC_H_ROOT, b"pfifo_fast\0", &qopt)).unwrap();
        assert_eq!((o.kind, o.cap_bytes_ps), (TcKind::Other, None));
    }

    #[test]
    fn hfsc_upper_limit() {
        let mut sc = 0u32.to_ne_bytes().to_vec();
        sc.extend(0u32.to_ne_bytes());
        sc.extend(18_750_000u32.to_ne_bytes());
        let o = one(&msg(RTM_NEWTCLASS, 0x0001_0000, b"hfsc\0", &attr(3, &sc))).unwrap();
        assert_eq!(
            (o.kind, o.is_class, o.cap_bytes_ps),
            (TcKind::Hfsc, true, Some(18_750_000))
        );
    }

    #[test]
    fn short_options_are_errors() {
        let m = msg(RTM_NEWQDISC, TC_H_ROOT, b"tbf\0", &attr(1, &[0u8; 8]));
        assert_eq!(one(&m), Err(ParseError::Truncated("tc_ratespec")));
        let m = msg(RTM_NEWQDISC, TC_H_ROOT, b"tbf\0", &attr(4, &[0u8; 4]));
        assert_eq!(one(&m), Err(ParseError::Truncated("TCA_TBF_RATE64")));
        let mut m = msg(RTM_NEWQDISC, TC_H_ROOT, b"tbf\0", &[]);
        let at = NLMSG_HDR + TCMSG_LEN;
        m[at..at + 2].copy_from_slice(&200u16.to_ne_bytes());
        assert_eq!(one(&m), Err(ParseError::Malformed("rtattr len")));
    }

    #[test]
    fn request_names_the_interface() {
        let r = dump_request(RTM_GETTCLASS, 9, 3);
        assert_eq!(u16_at(&r, 4), RTM_GETTCLASS);
        assert_eq!(u32_at(&r, NLMSG_HDR + 4), 9);
        assert_eq!(u32_at(&r, 0) as usize, r.len());
    }
}
