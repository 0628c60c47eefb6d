//! Analysis of stored samples: rates from deltas, per-resource utilization (the USE method),
//! and the verdict that names the one resource binding a transfer across hosts.
//!
//! Pure: the collector loads a window of samples, events and gaps per host into [`HostData`]
//! and calls [`report::build`]; nothing here touches a file, a socket or a clock.

pub(crate) mod advice;
pub mod conns;
pub mod exits;
pub mod html;
pub mod input;
pub mod limit;
pub mod rates;
pub mod report;
pub mod series;
pub mod stats;
pub mod text;
pub mod time;
pub mod transfers;
pub mod verdict;

pub use input::{ClockOffset, GapInfo, HostData, Instance, TimedEvent, TimedSample};
pub use report::{Analysis, Detail, Options, Report, analyze, analyze_with_detail, build};
