//! The nasprobe collector as a library: the binary in `main.rs` only parses flags and maps
//! errors to exit codes.
//!
//! - [`cli`]: flags and commands, resolved into a [`context::Context`] (database, token,
//!   host list, retention) that the commands take; [`hosts`]: host arguments and the host
//!   list file; [`signals`]: SIGINT/SIGTERM;
//! - [`client`]: one agent connection (the protocol's collector side);
//! - [`conn`]: the smol supervisor (one task per agent, one store task);
//! - [`store`]: SQLite (WAL, migrations, batched writes, `load_window` for the analysis);
//! - [`model`]: decoded samples and rates; [`watch`], [`record`], [`report`]: the commands;
//! - [`local`]: `watch --local` runs an agent on this machine.

pub mod cli;
pub mod client;
pub mod conn;
pub mod context;
pub mod export;
pub mod hosts;
pub mod ladder;
pub mod live_verdict;
pub mod local;
pub mod model;
pub mod output;
pub mod record;
pub mod report;
pub mod signals;
pub mod store;
pub mod test_cmd;
#[cfg(any(test, feature = "testing"))]
pub mod testing;
pub mod validate;
pub mod watch;

use std::path::PathBuf;

/// Default token file when neither the host nor `--token-file` names one.
pub(crate) fn default_token_file() -> PathBuf {
    dirs::config_dir()
        .unwrap_or_else(|| PathBuf::from("."))
        .join("nasprobe")
        .join("token")
}
