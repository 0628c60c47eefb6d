//! The commands of the CLI, one file each (`ls cmd` is the CLI): each takes the resolved
//! [`crate::context::Context`] and its own flags and stands on the machinery (`net`, `store`,
//! `export`, the analysis); no command imports another.

pub mod alerts;
pub mod deploy;
pub mod export;
pub mod hosts;
pub mod ladder;
pub mod record;
pub mod report;
pub mod serve;
pub mod shell;
pub mod test;
pub mod watch;
