//! The agents on the network: [`client`], one agent connection (the protocol's collector side);
//! [`conn`], the smol supervisor (one task per agent, one store task); `gate`, the caps and
//! checks between a connection and the store; [`live`], the shared state of a run as views
//! read it; [`outcome`], whether every host delivered (the exit code of record, watch and
//! test); [`validate`], the plausibility checks on what an
//! agent sends, before anything is stored.

pub mod client;
pub mod conn;
pub(crate) mod gate;
pub mod live;
pub mod outcome;
pub mod validate;
