//! Analysis of stored samples: rates from deltas, per-resource utilization (the USE method),
//! and the verdict that names the one resource binding a transfer across hosts.
//!
//! Pure: the collector loads a window of samples, events and gaps per host into [`HostData`]
//! and calls [`build`]; nothing here touches a file, a socket or a clock.
//!
//! Read top-down, each module using only those below it:
//! - [`analyze`](mod@analyze): the pipeline, stage by stage, from [`input`] to the [`report`] (the JSON
//!   contract, types only); rendered by [`text`] and [`html`].
//! - [`verdict`]: the flow, each host's candidate walls, the flow's own connections
//!   ([`limit`]), the decision; `summary` gives each host's figures, `advice` the concrete fixes.
//! - `events`: `events[]`, their groups over a long window, restart patterns and the context
//!   of each death, with [`exits`] (how a process ended) and [`conns`] (its connections).
//! - [`copies`]: a window's copies, each judged on its own samples by the pipeline.
//! - [`series`] (rates from deltas), [`transfers`] (the files a copy is on), [`rates`] (the live
//!   views' per-sample figures), [`stats`], [`time`], and `vocab`: the words all of them share
//!   (resources, candidates, the flow, units and formatters).
#![forbid(unsafe_code)]

pub(crate) mod advice;
pub mod analyze;
pub mod conns;
pub mod copies;
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

pub use analyze::{Analysis, Detail, Options, analyze, analyze_led_by, analyze_with_detail, build};
pub use input::{ClockOffset, GapInfo, HostData, Instance, TimedEvent, TimedSample};
pub use report::{REFUSED_PREFIX, Report, is_refusal};
