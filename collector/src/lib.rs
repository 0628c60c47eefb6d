//! The nasprobe collector as a library: the binary in `main.rs` only parses flags and maps
//! errors to exit codes.
//!
//! - [`cli`]: flags and commands, resolved into a [`context::Context`] (database, token,
//!   host list, retention) that the commands take; [`hosts`]: host arguments and the host
//!   list file; [`token`]: the token file; [`units`]: sizes and durations; [`signals`]:
//!   SIGINT/SIGTERM; [`output`]: stdout; `ssh`: the system's OpenSSH, `agents`: the agents
//!   embedded for `deploy`;
//! - [`cmd`]: the commands, one file each (record, watch, report/events/check, export, serve,
//!   test, ladder, hosts), none importing another;
//! - [`net`]: the agents on the network (connection, supervisor, plausibility checks);
//! - [`store`]: SQLite (WAL, migrations, batched writes, reads; `store::window`, the bridge to
//!   the analysis);
//! - [`export`]: VictoriaMetrics, the scrape endpoint, the point formats;
//! - [`model`]: decoded samples and rates; [`live_verdict`]: the verdict over the last minute;
//!   [`local`]: `watch --local` runs an agent on this machine, [`own`]: what of it is nasprobe's;
//! - [`http`]: the HTTP client of every push (https through rustls, `--ca-file`);
//! - [`alerts`]: the rules evaluated while recording, their state and their delivery;
//! - `private`: files created 0600 in 0700 folders, open ones warned about;
//! - `sys`: every `unsafe` (the signal pipe, aligned uncached I/O); denied elsewhere.

#![deny(unsafe_code)]
// stderr through `errln!` (output::err_text): `eprintln!` panics on a closed pipe.
#![deny(clippy::print_stderr)]

mod agents;
pub mod alerts;
pub mod cli;
pub mod cmd;
pub mod context;
pub mod export;
pub mod hosts;
pub mod http;
pub mod live_verdict;
pub mod local;
pub mod model;
pub mod net;
pub mod output;
pub mod own;
mod private;
pub mod store;
#[allow(unsafe_code)]
mod sys;
pub use sys::signals;
mod ssh;
#[cfg(any(test, feature = "testing"))]
pub mod testing;
pub mod token;
pub mod units;
