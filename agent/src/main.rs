//! `nasprobe-agent`: entry point; parses flags and runs the sampler and server.

fn main() {
    println!("nasprobe-agent {}", env!("CARGO_PKG_VERSION"));
}
