//! The thresholds of the verdict: at what share of its ceiling each resource is a wall, and the
//! figures that rank walls against each other.

/// One thread at or above this fraction of a core is a wall.
pub(crate) const THREAD_WALL: f64 = 0.85;
/// All CPUs together at or above this busy fraction: the box is out of CPU.
pub(crate) const CPU_ALL_WALL: f64 = 0.85;
/// A disk at or above this busy fraction is a wall.
pub(crate) const DISK_WALL: f64 = 0.85;
/// A NIC at or above this fraction of its line rate is a wall (TCP payload tops out near 94%
/// of the line rate, so 0.80 of the line is 0.85 of what a flow can get).
pub(crate) const NIC_WALL: f64 = 0.80;
/// A NIC at this share of its line rate or more is full: the flow runs at the link's payload
/// ceiling, so the link is the wall even when cores or disks are busy too.
pub(crate) const NIC_FULL: f64 = 0.9;
/// Practical share of the line rate a TCP flow can carry (Ethernet + IP + TCP headers).
pub(crate) const NIC_PRACTICAL: f64 = 0.94;
/// Swapping (pages in + out per second, sustained) that stalls work.
pub(crate) const SWAP_WALL_PAGES_PS: f64 = 256.0;
/// Swapping this hard (pages in + out per second: 4 MiB/s of 4 KiB pages) or with this many
/// allocation stalls per second is a storm: everything else on the host is its symptom.
pub(crate) const SWAP_STORM_PAGES_PS: f64 = 1024.0;
pub(crate) const STORM_STALLS_PS: f64 = 10.0;
/// The score of a swap storm: above every other wall's.
pub(crate) const MEMORY_STORM_SCORE: f64 = 2.0;
/// A link negotiated below gigabit is the wall from this share of its speed on (nothing else
/// explains a flow that fills most of a slow link).
pub(crate) const NIC_SLOW_LINK_WALL: f64 = 0.6;
/// A NIC moving more than this share of its stated link is not held by that link: the speed is
/// a virtual device's (veth, tun: "10000") or a wrong `--link-speed`; it is never the wall.
pub(crate) const NIC_OVER_LINK: f64 = 1.25;
/// Below this a host carries no transfer (bytes/s).
pub(crate) const FLOW_MIN_BPS: f64 = 1_000_000.0;
/// Two walls of the same kind whose scores differ by less than this are a tie.
pub(crate) const TIE_MARGIN: f64 = 0.05;
/// A pegged thread whose process runs on fewer cores than this is the wall even when every
/// core is busy (the rest of the load is other work; more cores would not speed the thread).
pub(crate) const LONE_THREAD_CORES: f64 = 1.5;
/// On a host with one core, a thread holding at least this much of it while the core is full,
/// and [`ONE_CORE_THREAD_LEAD`] times the busiest other process, is the wall: its ceiling is what
/// the rest (its own pipe's reader, the kernel's network work) leaves it, not a whole core (the
/// emulated NAS's dropbear at 69-83% of its one core, 98-100% busy, `cat` at 10%).
pub(crate) const ONE_CORE_THREAD_SHARE: f64 = 0.5;
/// ... and this many times the busiest other process: a thread that shares the core with other
/// work of its size (dropbear 60%, par2 38%) is starved by it, and the core is the wall.
pub(crate) const ONE_CORE_THREAD_LEAD: f64 = 2.0;
