//! What every command runs with — the database, the shared token file, the host list and the
//! retention, resolved from the global flags once — and the helpers that open them. Commands
//! take a `Context`, not the command line, so that nothing below `cli` depends on it.

use std::path::PathBuf;
use std::sync::Arc;

use anyhow::Context as _;

use crate::hosts::{self, HostList, HostSpec};
use crate::net::conn::Target;
use crate::store::{Store, StoreReader};

#[derive(Debug, Clone)]
pub struct Context {
    /// SQLite database.
    pub db: PathBuf,
    /// Shared token file of the agents (a host in the list may name its own).
    pub token_file: PathBuf,
    /// Host list file.
    pub hosts_file: PathBuf,
    /// How long each tier of the store is kept.
    pub retention: crate::store::Retention,
    /// The `collector` label of every exported series (`--collector-name`).
    pub collector: String,
    /// What the https of every push is checked against (`--ca-file`).
    pub trust: crate::http::Trust,
}

impl Context {
    /// The host list (empty when the file does not exist yet).
    pub fn host_list(&self) -> anyhow::Result<HostList> {
        Ok(HostList::load(&self.hosts_file)?)
    }

    /// Resolves host arguments (or the whole host list when there are none) and reads the
    /// tokens.
    pub fn targets(&self, args: &[String], allow_empty: bool) -> anyhow::Result<Vec<Target>> {
        let list = self.host_list()?;
        let specs: Vec<HostSpec> = if args.is_empty() {
            list.hosts.clone()
        } else {
            hosts::resolve(args, &list)?
        };
        if specs.is_empty() && !allow_empty {
            anyhow::bail!(
                "no hosts: name them (NAME=ADDR:PORT or ADDR[:PORT]) or add them with \
                 'nasprobe hosts add NAME ADDR' (host list: {})",
                self.hosts_file.display()
            );
        }
        let mut cache: Vec<(PathBuf, Arc<Vec<u8>>)> = Vec::new();
        let mut out = Vec::new();
        for spec in specs {
            let tf = spec
                .token_file
                .clone()
                .unwrap_or_else(|| self.token_file.clone());
            let token = match cache.iter().find(|(p, _)| *p == tf) {
                Some((_, t)) => t.clone(),
                None => {
                    let t = Arc::new(
                        crate::token::read_token(&tf)
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

    /// The alert rules in force: defaults, `alerts.conf` next to the host list, then `args`.
    pub fn alert_config(
        &self,
        args: &crate::alerts::AlertArgs,
    ) -> anyhow::Result<crate::alerts::AlertConfig> {
        let file = crate::alerts::config::file_next_to(&self.hosts_file);
        crate::private::warn_if_open(&file, "the alert receivers' URLs");
        crate::private::warn_if_open(&self.hosts_file, "the hosts and their token files");
        let mut cfg = crate::alerts::AlertConfig::resolve(args, Some(&file))?;
        cfg.trust = self.trust.clone();
        Ok(cfg)
    }

    /// Opens (or creates) the store, naming the file in any error.
    pub(crate) fn open_store(&self) -> anyhow::Result<Store> {
        let s = Store::open(&self.db)?;
        crate::private::warn_if_open(&self.db, "every sample and the alerts' outbox");
        Ok(s)
    }

    /// Opens the existing store for a read command: nothing is created, migrated or written
    /// (see [`StoreReader::open_read_only`]); says on stderr when it could only be read as a snapshot.
    pub(crate) fn open_store_read(&self) -> anyhow::Result<StoreReader> {
        anyhow::ensure!(
            self.db.exists(),
            "no database at {} (record something first: nasprobe record HOST)",
            self.db.display()
        );
        let (s, note) = StoreReader::open_read_only(&self.db)?;
        if let Some(n) = note {
            crate::errln!("nasprobe: {n}");
        }
        Ok(s)
    }
}
