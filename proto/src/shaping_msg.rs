//! The traffic-control caps an agent reads off its NICs' qdiscs ([`crate::Event::Shaping`]).

use heapless::Vec;
use serde::{Deserialize, Serialize};

use crate::MAX_NICS;

/// Most shaped classes kept per NIC: Synology DSM's Traffic Control makes one htb class per
/// rule (a service or a user) plus the default one, QNAP's QoS a handful; 16 holds a busy box's
/// rules, the lowest caps first, and `NicShaping::more` counts the rest.
pub const MAX_SHAPED_CLASSES: usize = 16;

/// [`crate::Event::Shaping`]: every NIC of the inventory whose egress a root qdisc caps.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Shaping {
    /// One entry per shaped NIC; empty when none is shaped any more.
    pub nics: Vec<NicShaping, MAX_NICS>,
}

/// The root qdisc that caps a NIC.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub enum ShaperKind {
    /// Token bucket filter: one rate for the whole NIC.
    Tbf,
    /// Hierarchical token bucket: classes, each with a ceiling.
    Htb,
    /// CAKE: one bandwidth for the whole NIC.
    Cake,
    /// Hierarchical fair service curve: classes, each with an upper limit.
    Hfsc,
}

impl ShaperKind {
    /// The qdisc's name as `tc` spells it.
    pub fn name(self) -> &'static str {
        match self {
            ShaperKind::Tbf => "tbf",
            ShaperKind::Htb => "htb",
            ShaperKind::Cake => "cake",
            ShaperKind::Hfsc => "hfsc",
        }
    }
}

/// The egress caps of one NIC.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct NicShaping {
    /// Index into `Hello::nics`.
    pub nic: u16,
    /// Its root qdisc.
    pub kind: ShaperKind,
    /// tbf, cake: one entry of class 0 (the whole NIC). htb, hfsc: the leaf classes, each with
    /// the least ceiling on its way to the root; lowest caps first.
    pub classes: Vec<ShapedClass, MAX_SHAPED_CLASSES>,
    /// Classes past `MAX_SHAPED_CLASSES`, left out.
    pub more: u16,
    /// htb: the class of traffic no filter classifies (`default`; 0: such traffic is not
    /// shaped). None for the others.
    pub default_class: Option<u32>,
}

/// Most ports kept per class: a DSM or QNAP rule names a service by its port or two (SMB 445,
/// NFS 2049, iSCSI 3260, rsync 873), a hand-written `tc` line one; 4 holds those, and
/// `ShapedClass::more_ports` counts the rest.
pub const MAX_CLASS_PORTS: usize = 4;

/// One cap: `class` as tc's `major:minor` in one u32 (1:10 is 0x0001_0010), 0 for the NIC.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ShapedClass {
    /// tc's `major:minor` in one u32; 0 for the whole NIC.
    pub class: u32,
    /// The most it lets through, bit/s.
    pub cap_bit_s: u64,
    /// The TCP/UDP ports the u32 filters of the root qdisc test to send packets to this class
    /// (`match ip dport 445 0xffff flowid 1:10`), in the order of the dump; empty when no
    /// filter names a port (tbf, cake, or a class reached by `default` or other keys).
    pub ports: Vec<PortMatch, MAX_CLASS_PORTS>,
    /// Ports past `MAX_CLASS_PORTS`, left out.
    pub more_ports: u16,
}

/// A port a filter key tests: `port` exactly (a 0xffff mask), as the destination (`dst`) or
/// the source port of the packet.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct PortMatch {
    /// The port, host order.
    pub port: u16,
    /// True: the destination port (`dport`); false: the source port (`sport`).
    pub dst: bool,
}

/// tc's way of writing a class id: "1:10" (hex major and minor, as `tc class show` prints
/// them).
pub struct ClassName(pub u32);

impl core::fmt::Display for ClassName {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        write!(f, "{:x}:{:x}", self.0 >> 16, self.0 & 0xFFFF)
    }
}
