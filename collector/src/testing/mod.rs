//! Test support: realistic samples and events, and two small in-process agents speaking the
//! protocol: [`FakeAgent`] (a stepping stone and a load tool; the end-to-end tests use the real
//! `nasprobe-agent`), [`HostileAgent`] (one attack of issue 19 each) and [`FloodAgent`] (a live
//! stream far over its `Hello`'s rate, issue 28).

mod fake;
mod flood;
mod hostile;
mod samples;

pub use fake::*;
pub use flood::*;
pub use hostile::*;
pub use samples::*;
