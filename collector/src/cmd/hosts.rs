//! `nasprobe hosts add|list|remove`: the host list file (see [`crate::hosts`]).

use crate::cli::HostsCommand;
use crate::context::Context;
use crate::hosts::parse_host_arg;
use crate::output;

/// Adds (or replaces) a host, lists them, or removes one; the list file is rewritten after a
/// change.
pub fn run(c: &Context, command: HostsCommand) -> anyhow::Result<()> {
    let (path, mut list) = (&c.hosts_file, c.host_list()?);
    match command {
        HostsCommand::Add {
            name,
            address,
            host_token_file,
        } => {
            let mut spec = parse_host_arg(&format!("{name}={address}"))?;
            spec.token_file = host_token_file;
            let mut out = output::stdout();
            out.line(&spec.to_string())?;
            out.finish()?;
            list.upsert(spec);
            list.save(path)?;
        }
        HostsCommand::List => {
            let mut out = output::stdout();
            for h in &list.hosts {
                out.line(&h.to_string())?;
            }
            out.finish()?;
        }
        HostsCommand::Remove { name } => {
            anyhow::ensure!(list.remove(&name), "no host {name:?} in {}", path.display());
            list.save(path)?;
        }
    }
    Ok(())
}
