//! The verdict: per host and resource, utilization over the transfer's active period (the USE
//! method), then the one resource that binds the flow, with the numbers behind it, what was
//! ruled out with its headroom, and what would not help.
//!
//! By stage: `flow` finds the transfer and when it was active, `candidates` weighs each host's
//! resources against their ceilings (`walls`), [`limit`] judges the flow's own TCP connections
//! (`connections`: the application or the network), and [`decide`] names the wall.

pub(crate) mod candidates;
pub(crate) mod connections;
pub(crate) mod decide;
pub(crate) mod flow;
pub mod limit;
pub(crate) mod starved;
pub(crate) mod walls;

pub use crate::report::Bottleneck;
pub use crate::vocab::{Candidate, Flow, MB, PEAK_SPAN_MS, Resource, pct, round2};
pub use decide::decide;
pub use flow::grade_for_link;
