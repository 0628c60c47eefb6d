//! `nasprobe hosts add|list|remove`: the host list file (see [`crate::hosts`]).

use crate::cli::HostsCommand;
use crate::context::Context;
use crate::hosts::parse_host_arg;
use crate::output;

/// Per export target and host of the store: the records still waiting to be sent and what the
/// receiver refused for good (with its last message), as `# export ...` lines after the hosts.
fn export_lines(c: &Context) -> anyhow::Result<Vec<String>> {
    if !c.db.exists() {
        return Ok(Vec::new());
    }
    let store = c.open_store_read()?;
    let unsent = store.export_unsent()?;
    let mut out = Vec::new();
    let name = |key: &str| match key.split_once(' ') {
        Some(("rw", url)) => format!("remote write {url}"),
        Some(("vm", url)) => format!("VictoriaMetrics {url}"),
        _ => key.to_string(),
    };
    let mut rows = store.export_behind()?;
    for u in &unsent {
        if !rows.iter().any(|r| r.0 == u.target && r.1 == u.host) {
            rows.push((u.target.clone(), u.host.clone(), 0));
        }
    }
    for (target, host, waiting) in rows {
        let mut line = format!(
            "# export to {}: {}: {waiting} records waiting",
            name(&target),
            nasprobe_proto::sanitize::text(&host)
        );
        if let Some(u) = unsent.iter().find(|u| u.target == target && u.host == host) {
            line.push_str(&format!(
                ", refused {} samples and {} events ({} points), last: {}",
                u.samples, u.events, u.points, u.last_error
            ));
        }
        out.push(line);
    }
    Ok(out)
}

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
            // The export lines are extra: a store that cannot be read (an older schema, in use
            // by a migration) leaves them out, not the host list.
            match export_lines(c) {
                Ok(lines) => {
                    for line in lines {
                        out.line(&line)?;
                    }
                }
                Err(e) => log::info!("hosts list: no export figures: {e}"),
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
