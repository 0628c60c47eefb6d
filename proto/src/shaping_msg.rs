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

/// One cap: `class` as tc's `major:minor` in one u32 (1:10 is 0x0001_0010), 0 for the NIC.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct ShapedClass {
    /// tc's `major:minor` in one u32; 0 for the whole NIC.
    pub class: u32,
    /// The most it lets through, bit/s.
    pub cap_bit_s: u64,
}

/// tc's way of writing a class id: "1:10" (hex major and minor, as `tc class show` prints
/// them).
pub struct ClassName(pub u32);

impl core::fmt::Display for ClassName {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        write!(f, "{:x}:{:x}", self.0 >> 16, self.0 & 0xFFFF)
    }
}
