//! The collector's integration tests, one binary: the store (dedupe, chunks, tiers, a full
//! disk), the client and supervisor against fake, hostile and flooding agents, report and
//! events over stores and the built-in scenarios, the exporters (scrape, CSV/line protocol and
//! their golden output, VictoriaMetrics, https to TLS receivers) and the figures the agent and the collector share.

mod cli;
mod client;
mod deploy_hostile;
mod events_long;
mod export_golden;
mod export_serve;
mod export_vm;
mod figures_agree;
mod full_disk;
mod hostile_caps;
mod hostile_round3;
mod hostile_wire;
mod https;
mod reliability_hostile_agent;
mod report_scenarios;
mod report_store;
mod store;
mod store_chunks;
mod store_tiers;
