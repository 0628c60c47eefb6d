//! Embeds the static agents in the collector when asked: with `NASPROBE_EMBED_AGENTS=DIR` (a
//! folder holding `nasprobe-agent-<triple>` for the NAS targets, as scripts/build-targets makes
//! them in dist/; relative to the workspace root) the binaries and their SHA-256 go into
//! `$OUT_DIR/agents.rs`, which `nasprobe deploy` installs from. Without it (every debug build,
//! `cargo build`) nothing is embedded and the collector says how to get them.

use std::fmt::Write as _;
use std::path::{Path, PathBuf};

use sha2::{Digest, Sha256};

/// The NAS targets (scripts/lib.sh AGENT_TARGETS).
const TRIPLES: [&str; 3] = [
    "x86_64-unknown-linux-musl",
    "armv7-unknown-linux-musleabihf",
    "aarch64-unknown-linux-musl",
];

fn main() {
    println!("cargo:rerun-if-env-changed=NASPROBE_EMBED_AGENTS");
    let out = PathBuf::from(std::env::var_os("OUT_DIR").expect("OUT_DIR"));
    let mut code = String::from("pub(crate) const EMBEDDED: &[Embedded] = &[\n");
    if let Some(dir) = std::env::var_os("NASPROBE_EMBED_AGENTS").filter(|d| !d.is_empty()) {
        let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
        let dir = root.join(dir);
        for triple in TRIPLES {
            let file = dir.join(format!("nasprobe-agent-{triple}"));
            println!("cargo:rerun-if-changed={}", file.display());
            let bytes = std::fs::read(&file).unwrap_or_else(|e| {
                panic!(
                    "NASPROBE_EMBED_AGENTS: cannot read {} ({e}): build the agents first \
                     (scripts/build-targets)",
                    file.display()
                )
            });
            let hex = Sha256::digest(&bytes)
                .iter()
                .fold(String::new(), |mut s, b| {
                    write!(s, "{b:02x}").unwrap();
                    s
                });
            let file = file.canonicalize().expect("canonical path");
            writeln!(
                code,
                "    Embedded {{ triple: {triple:?}, bytes: include_bytes!({:?}), sha256: {hex:?} }},",
                file.display().to_string()
            )
            .unwrap();
        }
    }
    code.push_str("];\n");
    std::fs::write(out.join("agents.rs"), code).expect("write agents.rs");
}
