//! The agents inside the collector: the static `nasprobe-agent` of each NAS target, embedded at
//! build time when `NASPROBE_EMBED_AGENTS` names the folder that holds them (build.rs;
//! scripts/release does it), with the SHA-256 each had then; and which target a NAS's
//! `uname -m` needs.

use sha2::{Digest, Sha256};

/// One embedded agent binary.
pub(crate) struct Embedded {
    /// Its target triple (`x86_64-unknown-linux-musl`, ...).
    pub triple: &'static str,
    pub bytes: &'static [u8],
    /// Hex SHA-256 of the file embedded.
    pub sha256: &'static str,
}

include!(concat!(env!("OUT_DIR"), "/agents.rs"));

/// What a collector without agents inside says.
pub(crate) const NONE_INSIDE: &str = "this build has no agents inside: build with \
     scripts/release (or NASPROBE_EMBED_AGENTS=dist cargo build --release -p nasprobe after \
     scripts/build-targets), or pass --agent FILE";

/// The target triple of the static agent for an architecture as `uname -m` names it.
pub(crate) fn triple_for(arch: &str) -> Option<&'static str> {
    match arch {
        "x86_64" | "amd64" => Some("x86_64-unknown-linux-musl"),
        "aarch64" | "arm64" => Some("aarch64-unknown-linux-musl"),
        a if a.starts_with("armv8l") || a.starts_with("armv7") => {
            Some("armv7-unknown-linux-musleabihf")
        }
        a if a.starts_with("armv8") => Some("aarch64-unknown-linux-musl"),
        _ => None,
    }
}

/// The embedded agent for a triple, checked against the SHA-256 it had at build time.
pub(crate) fn embedded(triple: &str) -> anyhow::Result<Option<&'static [u8]>> {
    let Some(e) = EMBEDDED.iter().find(|e| e.triple == triple) else {
        return Ok(None);
    };
    let got = sha256_hex(e.bytes);
    anyhow::ensure!(
        got == e.sha256,
        "the agent for {triple} inside this collector is damaged (SHA-256 {got}, built with \
         {}): download the collector again, or pass --agent FILE",
        e.sha256
    );
    Ok(Some(e.bytes))
}

/// The triples of the agents inside, for the help and the error lines.
pub(crate) fn inside() -> Vec<&'static str> {
    EMBEDDED.iter().map(|e| e.triple).collect()
}

/// Lower-case hex SHA-256, as `sha256sum` prints it.
pub(crate) fn sha256_hex(bytes: &[u8]) -> String {
    Sha256::digest(bytes)
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn architectures() {
        assert_eq!(triple_for("x86_64"), Some("x86_64-unknown-linux-musl"));
        assert_eq!(triple_for("armv7l"), Some("armv7-unknown-linux-musleabihf"));
        assert_eq!(triple_for("armv8l"), Some("armv7-unknown-linux-musleabihf"));
        assert_eq!(triple_for("aarch64"), Some("aarch64-unknown-linux-musl"));
        assert_eq!(triple_for("mips"), None);
        assert_eq!(triple_for("armv5tel"), None);
    }

    #[test]
    fn sha256_as_sha256sum_prints_it() {
        assert_eq!(
            sha256_hex(b"abc"),
            "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"
        );
    }
}
