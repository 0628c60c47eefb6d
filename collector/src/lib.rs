//! The nasprobe collector as a library: the binary in `main.rs` only parses flags and maps
//! errors to exit codes.
//!
//! - [`cli`]: flags and commands; [`hosts`]: host arguments and the host list file;
//! - [`client`]: one agent connection (the protocol's collector side);
//! - [`conn`]: the smol supervisor (one task per agent, one store task);
//! - [`store`]: SQLite (WAL, migrations, batched writes, `load_window` for the analysis);
//! - [`model`]: decoded samples and rates; [`watch`], [`record`], [`report`]: the commands;
//! - [`local`]: `watch --local` runs an agent on this machine.

pub mod cli;
pub mod client;
pub mod conn;
pub mod export;
pub mod hosts;
pub mod ladder;
pub mod live_verdict;
pub mod local;
pub mod model;
pub mod output;
pub mod record;
pub mod report;
pub mod store;
#[doc(hidden)]
pub mod testing;
pub mod validate;
pub mod watch;

use std::path::{Path, PathBuf};
use std::sync::Arc;

use anyhow::Context;

use crate::cli::Common;
use crate::conn::Target;
use crate::hosts::{HostList, HostSpec};

/// Default token file when neither the host nor `--token-file` names one.
pub fn default_token_file() -> PathBuf {
    dirs::config_dir()
        .unwrap_or_else(|| PathBuf::from("."))
        .join("nasprobe")
        .join("token")
}

/// The database path of this run.
pub fn db_path(c: &Common) -> PathBuf {
    c.db.clone().unwrap_or_else(store::default_path)
}

/// The host list of this run.
pub fn host_list(c: &Common) -> anyhow::Result<(PathBuf, HostList)> {
    let p = c.hosts_file.clone().unwrap_or_else(HostList::default_path);
    let l = HostList::load(&p)?;
    Ok((p, l))
}

/// Resolves host arguments (or the whole host list when there are none) and reads the tokens.
pub fn targets(c: &Common, args: &[String], allow_empty: bool) -> anyhow::Result<Vec<Target>> {
    let (path, list) = host_list(c)?;
    let specs: Vec<HostSpec> = if args.is_empty() {
        list.hosts.clone()
    } else {
        hosts::resolve(args, &list)?
    };
    if specs.is_empty() && !allow_empty {
        anyhow::bail!(
            "no hosts: name them (NAME=ADDR:PORT or ADDR[:PORT]) or add them with \
             'nasprobe hosts add NAME ADDR' (host list: {})",
            path.display()
        );
    }
    let common = c.token_file.clone().unwrap_or_else(default_token_file);
    let mut cache: Vec<(PathBuf, Arc<Vec<u8>>)> = Vec::new();
    let mut out = Vec::new();
    for spec in specs {
        let tf = spec.token_file.clone().unwrap_or_else(|| common.clone());
        let token = match cache.iter().find(|(p, _)| *p == tf) {
            Some((_, t)) => t.clone(),
            None => {
                let t = Arc::new(
                    client::read_token(&tf)
                        .with_context(|| format!("token for host {}", spec.name))?,
                );
                cache.push((tf, t.clone()));
                t
            }
        };
        out.push(Target { spec, token });
    }
    Ok(out)
}

/// Opens the store, naming the file in any error.
pub fn open_store(path: &Path) -> anyhow::Result<store::Store> {
    Ok(store::Store::open(path)?)
}
