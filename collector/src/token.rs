//! The collector's token code: where the token file is by default, reading one by the agent's
//! rules, and creating a fresh one (`watch --local`).

use std::path::{Path, PathBuf};

/// Default token file when neither the host nor `--token-file` names one.
pub(crate) fn default_path() -> PathBuf {
    dirs::config_dir()
        .unwrap_or_else(|| PathBuf::from("."))
        .join("nasprobe")
        .join("token")
}

/// Reads a token file by the rules the agent reads and writes it by
/// (`nasprobe_proto::token::file`, one module for both): a regular file (or a symlink to one in
/// its own directory), mode 0600, at most 4096 bytes, the token 16+ printable ASCII characters.
pub fn read_token(path: &Path) -> anyhow::Result<Vec<u8>> {
    Ok(nasprobe_proto::token::file::read(path)?)
}

/// 32 random bytes from the OS (tokens, handshake and test nonces).
pub(crate) fn random_bytes() -> [u8; 32] {
    let mut n = [0u8; 32];
    getrandom::fill(&mut n).expect("the OS random source failed");
    n
}

/// Writes a fresh token (32 random bytes as hex, a newline) to a new file of mode 0600, by the
/// shared rules (`nasprobe_proto::token::file::create`).
pub(crate) fn create(path: &Path) -> anyhow::Result<()> {
    Ok(nasprobe_proto::token::file::create(path, &random_bytes())?)
}
