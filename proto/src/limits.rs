//! The capacities of the wire's lists and strings (a value past one is refused as malformed),
//! and the string types they make.

use heapless::String;

/// Most CPUs a sample describes. 256 covers every NAS and most servers; a bigger machine is
/// refused with a typed error by the agent rather than silently truncated.
pub const MAX_CPUS: usize = 256;
/// Most top processes per sample (the agent default is 8; `--top` may raise it to this).
pub const MAX_TOP_PROCS: usize = 16;
/// Most block devices in the inventory: 8-bay NAS plus md arrays, flash, USB and loop headroom.
pub const MAX_DISKS: usize = 48;
/// Most md arrays in the inventory.
pub const MAX_MD_ARRAYS: usize = 16;
/// Most members of one md array (24-bay boxes exist).
pub const MAX_MD_MEMBERS: usize = 24;
/// Most network interfaces in the inventory (physical, bonds, bridges, VLANs, docker veths).
pub const MAX_NICS: usize = 32;
/// Most slaves of one bond.
pub const MAX_BOND_SLAVES: usize = 8;
/// Most filesystems sampled through `--mount`.
pub const MAX_MOUNTS: usize = 8;
/// Length of a kernel task name (TASK_COMM_LEN 16, less the NUL).
pub const COMM_LEN: usize = 15;
/// Command lines are truncated to this many bytes (the agent default, `--cmdline-bytes` lowers it).
pub const CMDLINE_LEN: usize = 256;
/// Device names: IFNAMSIZ is 16, block names are short, but dm/nvme names can reach ~32.
pub const DEV_NAME_LEN: usize = 32;
/// Host names (HOST_NAME_MAX is 64).
pub const HOST_NAME_LEN: usize = 64;
/// Kernel release strings ("3.10.39", "4.4.302+", "6.1.0-28-amd64").
pub const KERNEL_LEN: usize = 64;
/// Processes whose TCP connections a sample reports (the busiest first).
pub const MAX_CONN_PROCS: usize = 4;
/// TCP connections reported per process.
pub const MAX_PROC_CONNS: usize = 8;
/// Processes whose open regular files an [`OpenFiles`](crate::events::OpenFiles) event
/// reports (the transfer's movers: busiest by disk I/O, then by CPU).
pub const MAX_FILE_PROCS: usize = 4;
/// Open regular files reported per process (read or written; the rest counted in `more`).
pub const MAX_PROC_FILES: usize = 8;
/// Longest file descriptor number the kernel allows (`fs.nr_open` at most 1073741816).
pub const MAX_FD: u32 = 1_073_741_816;
/// Mount paths named with `--mount`.
pub const PATH_LEN: usize = 128;
/// Short texts: architecture, versions, md level, boot id (36).
pub const SHORT_LEN: usize = 40;
/// Reasons in refusals and errors.
pub const REASON_LEN: usize = 128;

/// A kernel task name (`comm`), at most [`COMM_LEN`] bytes.
pub type Comm = String<COMM_LEN>;
/// A command line (arguments joined by spaces), redacted, at most [`CMDLINE_LEN`] bytes.
pub type Cmdline = String<CMDLINE_LEN>;
/// A block device or network interface name.
pub type DevName = String<DEV_NAME_LEN>;
/// A short text (architecture, version, md level, boot id).
pub type Short = String<SHORT_LEN>;
