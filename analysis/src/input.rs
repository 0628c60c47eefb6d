//! What the analysis reads: per host, the agent instances seen, the samples, events and gaps of
//! the window, as the collector's store holds them.

use nasprobe_proto::{Event, Hello, Sample};

/// One agent instance of a host: its `Hello` resolves the disk and NIC indices of its samples.
#[derive(Debug, Clone)]
pub struct Instance {
    pub id: u64,
    pub hello: Hello,
}

#[derive(Debug, Clone)]
pub struct TimedSample {
    /// Agent wall clock at the end of the interval, ms since the Unix epoch.
    pub time_ms: u64,
    /// Index into `HostData::instances`.
    pub instance: usize,
    pub seq: u64,
    pub sample: Sample,
}

#[derive(Debug, Clone)]
pub struct TimedEvent {
    pub time_ms: u64,
    pub instance: usize,
    pub seq: u64,
    pub event: Event,
}

/// A range of records known to be missing.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct GapInfo {
    pub from_ms: u64,
    pub to_ms: u64,
    /// How many records are missing, when known.
    pub samples: Option<u64>,
    pub reason: String,
}

/// Everything of one host in the window, samples and events in time order.
#[derive(Debug, Clone, Default)]
pub struct HostData {
    pub name: String,
    pub instances: Vec<Instance>,
    pub samples: Vec<TimedSample>,
    pub events: Vec<TimedEvent>,
    pub gaps: Vec<GapInfo>,
}
