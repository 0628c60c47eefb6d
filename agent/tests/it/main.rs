//! The agent's integration tests, one binary: the sampler over captures, fixtures and
//! generated trees, the server end to end (handshake, resume, floods, hostile clients, seccomp,
//! a remote agent), the tests' hostile peers, redaction, the soak (ignored; tests/e2e/reliability_soak.sh).

mod captures;
mod reliability_flood;
mod reliability_hostile;
mod reliability_redact;
mod reliability_soak;
mod sample_json;
mod sampler_cycle;
mod sampler_fixtures;
mod sampler_generated;
mod server_common;
mod server_e2e;
mod server_remote;
mod server_seccomp;
mod test_disk_hostile;
mod test_net_hostile;
