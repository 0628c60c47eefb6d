//! Test support for nasprobe: scenario trees (/proc and /sys written from declared rates).
//!
//! - [`model`]: the declared scenario (structs with builders, JSON via serde).
//! - [`sim`]: one host's state over time (CPU per core and thread, processes, pids).
//! - [`render`]: the text of every file in the flavour's kernel format.
//! - [`writer`]: materialises a host's tree on disk, atomically.
//! - [`builtins`]: the named scenarios later tests rely on.
//! - [`runner`]: drives all hosts of a scenario in real time (the `nasprobe-scenario` binary).
//! - [`skip`]: tests that cannot run here (recorded; failed under CI).

pub mod builtins;
pub mod model;
pub mod render;
pub mod runner;
pub mod sim;
pub mod skip;
pub mod writer;

pub use model::*;
pub use runner::{HostPaths, Runner};
pub use sim::HostSim;
pub use writer::TreeWriter;
