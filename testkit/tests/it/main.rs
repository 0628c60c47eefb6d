//! testkit's integration tests, one binary: atomic tree writes, the scenario runner's command
//! line, kernel file formats, declared rates read back, counter wraps.

mod atomic;
mod cli;
mod common;
mod formats;
mod rates;
mod wrap;
