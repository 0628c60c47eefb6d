//! Test support for nasprobe: scenario trees (/proc and /sys written from declared rates).
//!
//! - [`model`]: the declared scenario (structs with builders, JSON via serde).
//! - [`sim`]: one host's state over time (CPU per core and thread, processes, pids).
//! - [`render`]: the text of every file in the flavour's kernel format.
//! - [`writer`]: materialises a host's tree on disk, atomically.
//! - [`builtins`]: the named scenarios later tests rely on.
//! - [`runner`]: drives all hosts of a scenario in real time (the `nasprobe-scenario` binary).
//! - [`skip`]: tests that cannot run here (recorded; failed under CI); [`big_stack`] for tests
//!   that hold protocol messages.

#![forbid(unsafe_code)]

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

/// Runs a test body on a thread with a big stack, passing its panic on: a decoded protocol
/// `Message` is ~35 KB (fixed-capacity lists) and debug builds keep several copies of it on
/// the stack.
pub fn big_stack<T: Send + 'static>(f: impl FnOnce() -> T + Send + 'static) -> T {
    let h = std::thread::Builder::new()
        .stack_size(64 << 20)
        .spawn(f)
        .expect("spawn a test thread");
    h.join().unwrap_or_else(|e| std::panic::resume_unwind(e))
}
