//! The nasprobe agent as a library: flags, pure /proc and /sys parsers, the samplers that read
//! through `--proc-root`/`--sys-root`, and the single-threaded server with its history ring.
//! Every `unsafe` is in `sys/`, behind safe functions.
#![deny(unsafe_code)]

pub mod config;
pub mod daemon;
pub mod events;
pub mod parse;
pub mod ring;
pub mod sample_cmd;
pub mod sampler;
pub(crate) mod selftest;
pub mod server;
#[allow(unsafe_code)]
mod sys;
pub mod token;
