//! `nasprobe`: the collector command line.

fn main() {
    println!("nasprobe {}", env!("CARGO_PKG_VERSION"));
}
