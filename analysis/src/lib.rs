//! Analysis of stored samples: rates from deltas, per-resource utilization (the USE method),
//! and the verdict that names the one resource binding a transfer across hosts.
//!
//! Pure: the collector loads a window of samples, events and gaps per host into [`HostData`]
//! and calls [`build`]; nothing here touches a file, a socket or a clock.

pub(crate) mod advice;
pub mod analyze;
pub mod conns;
pub(crate) mod events;
pub mod exits;
pub mod html;
pub mod input;
pub mod rates;
pub mod report;
pub mod series;
pub mod stats;
pub(crate) mod summary;
pub mod text;
pub mod time;
pub mod transfers;
pub mod verdict;
pub(crate) mod vocab;

pub use verdict::limit;

pub use analyze::{Analysis, Detail, Options, analyze, analyze_with_detail, build};
pub use input::{ClockOffset, GapInfo, HostData, Instance, TimedEvent, TimedSample};
pub use report::Report;
