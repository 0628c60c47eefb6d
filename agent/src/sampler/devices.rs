//! Block devices (/proc/diskstats + /sys/block) and network interfaces (/proc/net/dev +
//! /sys/class/net), with a stable inventory and per-interval deltas.

use nasprobe_proto::{
    DevName, DeviceAdded, DiskInfo, DiskSample, Event, LinkChange, MAX_BOND_SLAVES, MAX_DISKS,
    MAX_MD_ARRAYS, MAX_MD_MEMBERS, MAX_NICS, MdInfo, NicInfo, NicSample, Sample, Short, flags,
};

use super::delta::{steps, u32s};
use super::io::{self, Once, Root, Src};
use crate::parse::diskstats::{self, DISK_FIELDS, IN_FLIGHT, diskstats, partition_parent};
use crate::parse::net_dev::{self, NET_FIELDS, net_dev};
use crate::parse::sysfs::{self, Duplex, OperState};
use crate::parse::to_label;

/// Names of /proc/diskstats remembered with their verdict (disk, partition, skipped): a NAS
/// lists 20-60 (ram0-15, loop0-7, sdX and partitions, md, mtdblock). 256 covers 24-bay boxes
/// with partitions; past it new names are ignored (logged once).
pub(crate) const KNOWN_BLOCK_CAP: usize = 256;
/// Speed, duplex, mtu and carrier are re-read every this many samples, and at once when
/// operstate changes (operstate is read every sample: it costs no driver call, speed may).
pub(crate) const LINK_REFRESH_SAMPLES: u32 = 10;

#[derive(Clone, Copy, PartialEq, Eq)]
enum Kind {
    /// Index into the inventory.
    Disk(u16),
    /// Partition (folded), ram disk, or past a capacity.
    Skip,
    /// All counters zero so far (unused loop/zram/md): looked at again when it moves.
    Unused,
}

struct Block {
    name: DevName,
    kind: Kind,
    prev: [u64; DISK_FIELDS],
    have_prev: bool,
}

pub struct Disks {
    blocks: Vec<Block>,
    /// diskstats line number → index in `blocks` (lines keep their order between reads).
    hint: Vec<u16>,
    pub info: heapless::Vec<DiskInfo, MAX_DISKS>,
    pub md: heapless::Vec<MdInfo, MAX_MD_ARRAYS>,
    src: Src,
    partitions: bool,
    log_line: Once,
    log_full: Once,
}

const GAUGES: [bool; DISK_FIELDS] = {
    let mut g = [false; DISK_FIELDS];
    g[IN_FLIGHT] = true;
    g
};

impl Disks {
    pub fn new(partitions: bool) -> Disks {
        Disks {
            blocks: Vec::with_capacity(KNOWN_BLOCK_CAP),
            hint: Vec::with_capacity(KNOWN_BLOCK_CAP),
            info: heapless::Vec::new(),
            md: heapless::Vec::new(),
            src: Src::new("diskstats"),
            partitions,
            log_line: Once::default(),
            log_full: Once::default(),
        }
    }

    /// Reads /proc/diskstats. `announce`: emit DeviceAdded for devices found now. `out`:
    /// where the deltas go (None while discovering/priming).
    pub fn sample(
        &mut self,
        proc: &Root,
        sys: &Root,
        buf: &mut [u8],
        announce: bool,
        mut out: Option<&mut Sample>,
        emit: &mut dyn FnMut(Event),
    ) {
        let Ok(content) = self.src.read(proc, buf) else {
            return;
        };
        for (n, line) in diskstats(content).enumerate() {
            let d = match line {
                Ok(d) => d,
                Err(e) => {
                    self.log_line.warn(format_args!(
                        "{}/diskstats: {e}; line skipped",
                        proc.path.display()
                    ));
                    continue;
                }
            };
            let b = match self.find(n, d.name) {
                Some(b) => b,
                None => {
                    if self.blocks.len() >= KNOWN_BLOCK_CAP {
                        self.log_full.warn(format_args!(
                            "more than KNOWN_BLOCK_CAP={KNOWN_BLOCK_CAP} block devices: the rest are ignored"
                        ));
                        continue;
                    }
                    let mut name = DevName::new();
                    to_label(d.name, nasprobe_proto::DEV_NAME_LEN, &mut name);
                    let kind = self.classify(sys, &name);
                    self.blocks.push(Block {
                        name,
                        kind,
                        prev: [0; DISK_FIELDS],
                        have_prev: false,
                    });
                    self.blocks.len() - 1
                }
            };
            if n < KNOWN_BLOCK_CAP {
                if self.hint.len() <= n {
                    self.hint.resize(n + 1, u16::MAX);
                }
                self.hint[n] = b as u16;
            }
            if self.blocks[b].kind == Kind::Unused && d.c.iter().any(|&v| v != 0) {
                let name = self.blocks[b].name.clone();
                self.blocks[b].kind = self.add_disk(sys, &name);
                if announce && let Kind::Disk(_) = self.blocks[b].kind {
                    emit(Event::DeviceAdded(DeviceAdded::Disk(name)));
                }
            }
            let blk = &mut self.blocks[b];
            let Kind::Disk(idx) = blk.kind else { continue };
            let had = blk.have_prev;
            let prev = blk.prev;
            blk.prev = d.c;
            blk.have_prev = true;
            let Some(out) = out.as_deref_mut() else {
                continue;
            };
            if !had {
                continue;
            }
            let mut s = DiskSample {
                disk: idx,
                ..Default::default()
            };
            match steps(&prev, &d.c, &GAUGES) {
                Some(c) => {
                    if c.iter().all(|&v| v == 0) {
                        continue;
                    }
                    s.reads = u32s(c[diskstats::READS]);
                    s.reads_merged = u32s(c[diskstats::READS_MERGED]);
                    s.sectors_read = c[diskstats::SECTORS_READ];
                    s.read_ms = u32s(c[diskstats::READ_MS]);
                    s.writes = u32s(c[diskstats::WRITES]);
                    s.writes_merged = u32s(c[diskstats::WRITES_MERGED]);
                    s.sectors_written = c[diskstats::SECTORS_WRITTEN];
                    s.write_ms = u32s(c[diskstats::WRITE_MS]);
                    s.in_flight = u32s(c[IN_FLIGHT]);
                    s.io_ms = u32s(c[diskstats::IO_MS]);
                    s.weighted_ms = u32s(c[diskstats::WEIGHTED_MS]);
                }
                None => s.flags = flags::RESET,
            }
            let _ = out.disks.push(s);
        }
    }

    fn find(&self, line: usize, name: &[u8]) -> Option<usize> {
        if let Some(&h) = self.hint.get(line)
            && let Some(b) = self.blocks.get(h as usize)
            && b.name.as_bytes() == name
        {
            return Some(h as usize);
        }
        self.blocks.iter().position(|b| b.name.as_bytes() == name)
    }

    fn classify(&mut self, sys: &Root, name: &str) -> Kind {
        let nb = name.as_bytes();
        if nb.starts_with(b"ram") && nb[3..].iter().all(|b| b.is_ascii_digit()) {
            return Kind::Skip;
        }
        let whole = io::exists(sys, &format!("block/{name}"))
            || (!io::exists(sys, &format!("class/block/{name}/partition"))
                && partition_parent(nb).is_none());
        if !whole && !self.partitions {
            return Kind::Skip;
        }
        Kind::Unused
    }

    fn add_disk(&mut self, sys: &Root, name: &DevName) -> Kind {
        if self.info.is_full() {
            self.log_full.warn(format_args!(
                "more than MAX_DISKS={MAX_DISKS} disks: {name} and later ones left out"
            ));
            return Kind::Skip;
        }
        let base = if io::exists(sys, &format!("block/{name}")) {
            format!("block/{name}")
        } else {
            format!("class/block/{name}")
        };
        let rotational = io::read_small(sys, &format!("{base}/queue/rotational"))
            .or_else(|| {
                let parent = partition_parent(name.as_bytes())?;
                io::read_small(
                    sys,
                    &format!("block/{}/queue/rotational", String::from_utf8_lossy(parent)),
                )
            })
            .and_then(|b| sysfs::parse_bool(&b).ok());
        let size_sectors = io::read_small(sys, &format!("{base}/size"))
            .and_then(|b| sysfs::parse_num(&b).ok())
            .unwrap_or(0);
        let is_md = name.starts_with("md")
            && (io::exists(sys, &format!("{base}/md"))
                || name[2..].bytes().all(|b| b.is_ascii_digit()));
        if is_md && !self.md.is_full() {
            let level = io::read_small(sys, &format!("{base}/md/level"))
                .and_then(|b| sysfs::parse_word(&b).ok().map(|w| w.to_vec()))
                .unwrap_or_default();
            let mut md = MdInfo {
                name: name.clone(),
                level: Short::new(),
                members: heapless::Vec::new(),
            };
            to_label(&level, nasprobe_proto::SHORT_LEN, &mut md.level);
            for m in io::list_names(sys, &format!("{base}/slaves")) {
                let m = if self.partitions {
                    &m[..]
                } else {
                    partition_parent(&m).unwrap_or(&m)
                };
                let mut dn = DevName::new();
                to_label(m, nasprobe_proto::DEV_NAME_LEN, &mut dn);
                if !md.members.contains(&dn) && md.members.len() < MAX_MD_MEMBERS {
                    let _ = md.members.push(dn);
                }
            }
            let _ = self.md.push(md);
        }
        let idx = self.info.len() as u16;
        let _ = self.info.push(DiskInfo {
            name: name.clone(),
            rotational,
            size_sectors,
            is_md,
        });
        Kind::Disk(idx)
    }
}

#[derive(Clone, Copy, PartialEq, Eq, Debug, Default)]
struct Link {
    up: bool,
    speed: u32,
    duplex: Option<bool>,
    mtu: u32,
}

struct Nic {
    idx: u16,
    name: DevName,
    prev: [u64; NET_FIELDS],
    have_prev: bool,
    oper_state: Option<OperState>,
    link: Option<Link>,
    speed_override: Option<u32>,
    oper: Src,
    carrier: Src,
    speed: Src,
    duplex: Src,
    mtu: Src,
}

pub(crate) struct Nics {
    nics: Vec<Nic>,
    hint: Vec<u16>,
    pub info: heapless::Vec<NicInfo, MAX_NICS>,
    src: Src,
    overrides: Vec<(String, u32)>,
    sample_no: u32,
    log_line: Once,
    log_full: Once,
}

impl Nics {
    pub fn new(overrides: &[(String, u32)]) -> Nics {
        Nics {
            nics: Vec::with_capacity(MAX_NICS),
            hint: Vec::with_capacity(MAX_NICS * 2),
            info: heapless::Vec::new(),
            src: Src::new("net/dev"),
            overrides: overrides.to_vec(),
            sample_no: 0,
            log_line: Once::default(),
            log_full: Once::default(),
        }
    }

    pub fn sample(
        &mut self,
        proc: &Root,
        sys: &Root,
        buf: &mut [u8],
        announce: bool,
        mut out: Option<&mut Sample>,
        emit: &mut dyn FnMut(Event),
    ) {
        self.sample_no += 1;
        let refresh = self.sample_no % LINK_REFRESH_SAMPLES == 1;
        // The link files are read into a small stack buffer: `buf` holds net/dev meanwhile.
        let mut small = [0u8; 128];
        let Ok(content) = self.src.read(proc, buf) else {
            return;
        };
        for (n, line) in net_dev(content).enumerate() {
            let d = match line {
                Ok(d) => d,
                Err(e) => {
                    self.log_line.warn(format_args!(
                        "{}/net/dev: {e}; line skipped",
                        proc.path.display()
                    ));
                    continue;
                }
            };
            if d.name == b"lo" {
                continue;
            }
            let k = match self.find(n, d.name) {
                Some(k) => k,
                None => {
                    let Some(k) = self.add(sys, d.name) else {
                        continue;
                    };
                    if announce {
                        emit(Event::DeviceAdded(DeviceAdded::Nic(
                            self.nics[k].name.clone(),
                        )));
                    }
                    k
                }
            };
            if n < MAX_NICS * 2 {
                if self.hint.len() <= n {
                    self.hint.resize(n + 1, u16::MAX);
                }
                self.hint[n] = k as u16;
            }
            let nic = &mut self.nics[k];
            let changed = nic.read_link(sys, &mut small, refresh);
            if changed
                && announce
                && let Some(l) = nic.link
            {
                emit(Event::LinkChange(LinkChange {
                    nic: nic.name.clone(),
                    up: l.up,
                    speed_mbit: l.speed,
                    full_duplex: l.duplex,
                    mtu: l.mtu,
                }));
            }
            let had = nic.have_prev;
            let prev = nic.prev;
            nic.prev = d.c;
            nic.have_prev = true;
            let Some(out) = out.as_deref_mut() else {
                continue;
            };
            if !had {
                continue;
            }
            let link = nic.link.unwrap_or_default();
            let mut s = NicSample {
                nic: nic.idx,
                ..Default::default()
            };
            if link.up {
                s.flags |= flags::LINK_UP;
                s.speed_mbit = nic.speed_override.unwrap_or(link.speed);
            }
            match link.duplex {
                Some(true) => s.flags |= flags::FULL_DUPLEX,
                Some(false) => {}
                None => s.flags |= flags::DUPLEX_UNKNOWN,
            }
            match steps(&prev, &d.c, &[false; NET_FIELDS]) {
                Some(c) => {
                    if c.iter().all(|&v| v == 0) && !changed {
                        continue;
                    }
                    s.rx_bytes = c[net_dev::RX_BYTES];
                    s.tx_bytes = c[net_dev::TX_BYTES];
                    s.rx_packets = u32s(c[net_dev::RX_PACKETS]);
                    s.tx_packets = u32s(c[net_dev::TX_PACKETS]);
                    s.rx_errors = u32s(c[net_dev::RX_ERRORS]);
                    s.tx_errors = u32s(c[net_dev::TX_ERRORS]);
                    s.rx_dropped = u32s(c[net_dev::RX_DROPPED]);
                    s.tx_dropped = u32s(c[net_dev::TX_DROPPED]);
                }
                None => s.flags |= flags::RESET,
            }
            let _ = out.nics.push(s);
        }
    }

    fn find(&self, line: usize, name: &[u8]) -> Option<usize> {
        if let Some(&h) = self.hint.get(line)
            && let Some(n) = self.nics.get(h as usize)
            && n.name.as_bytes() == name
        {
            return Some(h as usize);
        }
        self.nics.iter().position(|n| n.name.as_bytes() == name)
    }

    fn add(&mut self, sys: &Root, raw: &[u8]) -> Option<usize> {
        let mut name = DevName::new();
        to_label(raw, nasprobe_proto::DEV_NAME_LEN, &mut name);
        if self.info.is_full() {
            self.log_full.warn(format_args!(
                "more than MAX_NICS={MAX_NICS} interfaces: {name} and later ones left out"
            ));
            return None;
        }
        let base = format!("class/net/{name}");
        let mtu = io::read_small(sys, &format!("{base}/mtu"))
            .and_then(|b| sysfs::parse_num(&b).ok())
            .unwrap_or(0) as u32;
        let is_bond = io::exists(sys, &format!("{base}/bonding"));
        let mut slaves = heapless::Vec::<DevName, MAX_BOND_SLAVES>::new();
        if let Some(b) = io::read_small(sys, &format!("{base}/bonding/slaves")) {
            for w in sysfs::words(&b) {
                let mut s = DevName::new();
                to_label(w, nasprobe_proto::DEV_NAME_LEN, &mut s);
                if slaves.push(s).is_err() {
                    self.log_full.warn(format_args!(
                        "{name}: more than MAX_BOND_SLAVES={MAX_BOND_SLAVES} slaves"
                    ));
                    break;
                }
            }
        }
        let mut mac = Short::new();
        if let Some(b) = io::read_small(sys, &format!("{base}/address"))
            && let Ok(w) = sysfs::parse_word(&b)
        {
            to_label(w, nasprobe_proto::SHORT_LEN, &mut mac);
        }
        let speed_override = self
            .overrides
            .iter()
            .find(|(i, _)| i.as_str() == name.as_str())
            .map(|(_, m)| *m);
        let idx = self.info.len() as u16;
        let _ = self.info.push(NicInfo {
            name: name.clone(),
            mtu,
            is_bond,
            slaves,
            speed_override_mbit: speed_override,
            mac,
        });
        self.nics.push(Nic {
            idx,
            name,
            prev: [0; NET_FIELDS],
            have_prev: false,
            oper_state: None,
            link: None,
            speed_override,
            oper: Src::new(&format!("{base}/operstate")),
            carrier: Src::new(&format!("{base}/carrier")),
            speed: Src::new(&format!("{base}/speed")),
            duplex: Src::new(&format!("{base}/duplex")),
            mtu: Src::new(&format!("{base}/mtu")),
        });
        Some(self.nics.len() - 1)
    }
}

impl Nic {
    /// Reads operstate (every sample) and the rest when due; true when the link changed
    /// (not on the first read).
    fn read_link(&mut self, sys: &Root, buf: &mut [u8], refresh: bool) -> bool {
        let oper = self
            .oper
            .read(sys, buf)
            .ok()
            .and_then(|b| sysfs::parse_operstate(b).ok());
        let first = self.link.is_none();
        if !first && !refresh && oper == self.oper_state {
            return false;
        }
        self.oper_state = oper;
        let carrier = self
            .carrier
            .read(sys, buf)
            .ok()
            .and_then(|b| sysfs::parse_bool(b).ok());
        let up = match oper {
            Some(OperState::Up) => carrier != Some(false),
            Some(OperState::Unknown) | None => carrier == Some(true),
            _ => false,
        };
        let speed = if up {
            self.speed
                .read(sys, buf)
                .ok()
                .and_then(|b| sysfs::parse_speed(b).ok())
                .unwrap_or(0)
        } else {
            0
        };
        let duplex = match self
            .duplex
            .read(sys, buf)
            .ok()
            .and_then(|b| sysfs::parse_duplex(b).ok())
        {
            Some(Duplex::Full) if up => Some(true),
            Some(Duplex::Half) if up => Some(false),
            _ => None,
        };
        let mtu = self
            .mtu
            .read(sys, buf)
            .ok()
            .and_then(|b| sysfs::parse_num(b).ok())
            .unwrap_or(0) as u32;
        let link = Link {
            up,
            speed,
            duplex,
            mtu,
        };
        let changed = self.link.is_some_and(|l| l != link);
        self.link = Some(link);
        changed
    }
}
