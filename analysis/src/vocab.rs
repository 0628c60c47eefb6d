//! The shared words of the analysis: the resources a wall can be on, a candidate wall, the flow
//! and who holds it back, the peer at a connection's other end, units and the formatters of
//! figures. Every other module may use these; this one uses none of them.

use nasprobe_proto::ExitStatus;
use serde::Serialize;

/// Span of the peak window.
pub const PEAK_SPAN_MS: f64 = 10_000.0;

/// The report's megabyte (MB/s figures): 10^6 bytes.
pub const MB: f64 = 1_000_000.0;

/// `flow.limited_by`.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum LimitedBy {
    Receiver,
    Sender,
    Network,
    #[default]
    Unknown,
}

/// The transfer seen across hosts.
#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct Flow {
    /// Host sending the most (None when only the receiver is observed).
    pub from: Option<String>,
    pub from_device: Option<String>,
    /// Host receiving the most.
    pub to: Option<String>,
    pub to_device: Option<String>,
    /// Median over the active period, MB/s (10^6 bytes).
    pub sustained_mb_s: f64,
    pub mean_mb_s: f64,
    /// Best 10 s, MB/s.
    pub peak_mb_s: f64,
    /// Seconds the flow was active.
    pub active_seconds: f64,
    /// Link speed of the busier end, Mbit/s (0 unknown).
    pub link_mbit: u32,
    /// On 1 GbE: excellent / good / fair / misconfigured / seriously_wrong; null otherwise.
    pub grade: Option<String>,
    /// Who holds the flow back, from its own TCP connections (`crate::limit`).
    pub limited_by: LimitedBy,
    /// The sentences with the numbers behind `limited_by`.
    pub limit_evidence: Vec<String>,
}

/// The kind of resource a candidate (and the verdict) is about. Serialized as the report's
/// strings: "cpu_thread", "cpu_all", "disk", "nic", "memory", "app" (an application that
/// holds the flow back), "network" (the path between the hosts), and "none" for no wall.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Resource {
    CpuThread,
    CpuAll,
    Disk,
    Nic,
    Memory,
    App,
    Network,
    #[default]
    None,
}

impl Resource {
    /// Every resource a wall can be on, in the order the views list them.
    pub(crate) const WALLS: [Resource; 5] = [
        Resource::CpuThread,
        Resource::CpuAll,
        Resource::Disk,
        Resource::Nic,
        Resource::Memory,
    ];

    /// The report's name of it (the serialized form).
    pub fn as_str(self) -> &'static str {
        match self {
            Resource::CpuThread => "cpu_thread",
            Resource::CpuAll => "cpu_all",
            Resource::Disk => "disk",
            Resource::Nic => "nic",
            Resource::Memory => "memory",
            Resource::App => "app",
            Resource::Network => "network",
            Resource::None => "none",
        }
    }
}

impl std::fmt::Display for Resource {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

impl PartialEq<&str> for Resource {
    fn eq(&self, other: &&str) -> bool {
        self.as_str() == *other
    }
}

/// A resource near (or not near) its ceiling on one host.
#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct Candidate {
    pub host: String,
    pub resource: Resource,
    pub device: Option<String>,
    pub process: Option<String>,
    /// cpu_thread: the thread's name (comm) when it differs from the process's.
    pub thread: Option<String>,
    pub utilization: f64,
    /// Utilization against what is practically reachable (NIC: payload ceiling), for ranking.
    #[serde(skip)]
    pub score: f64,
    #[serde(skip)]
    pub wall: bool,
    /// cpu_thread: the thread's process runs on about one core (its work is that thread), so
    /// busy cores elsewhere neither slow the thread nor would more cores help it. app: the
    /// application rarely waits for a CPU (`limit::APP_RUN_DELAY_MAX`), so busy cores are other
    /// work's and do not hold the flow.
    #[serde(skip)]
    pub lone: bool,
    #[serde(skip)]
    pub sentence: String,
}

/// The process at the other end of one of `pid`'s connections, on another host, and its end.
#[derive(Debug, Clone, PartialEq)]
pub struct PeerEnd {
    pub host: String,
    pub comm: String,
    pub pid: u32,
    /// When it ended, on our host's clock: its agent's time corrected by both hosts' clock
    /// offsets when the collector measured them (else its agent's time as it is).
    pub ended_ms: u64,
    /// How exact `ended_ms` is against our clock (the two offsets' precisions added); None
    /// when an offset is unknown and the agents' clocks are taken as they are.
    pub clock_precision_ms: Option<u64>,
    pub status: Option<ExitStatus>,
    pub lifetime_ms: u64,
}

/// How the sentence of a NIC whose ceiling is a traffic-control cap starts ("nas: traffic
/// control on eth0 caps egress at ..."): written by the NIC candidate, read back by
/// `text::nic_ceiling`.
pub(crate) fn shaped_nic_words(host: &str, nic: &str) -> String {
    format!("{host}: traffic control on {nic} ")
}

/// `x` rounded to two decimals, as every figure of the report is (0 for NaN and infinities).
pub fn round2(x: f64) -> f64 {
    if x.is_finite() {
        // `+ 0.0` turns -0.0 into 0.0 (it would print as "-0").
        (x * 100.0).round() / 100.0 + 0.0
    } else {
        0.0
    }
}

/// `x` (a fraction) as a whole percentage: "42%".
pub fn pct(x: f64) -> String {
    format!("{:.0}%", x * 100.0)
}
