//! `nasprobe-agent`: parses the flags and runs the server or the `sample` command.

use nasprobe_agent::config::{self, Command};

/// Exit codes, fixed so init scripts and tests can rely on them.
mod exit {
    pub const OK: i32 = 0;
    pub const FAILURE: i32 = 1;
    pub const USAGE: i32 = 2;
}

fn main() {
    let cfg = match config::parse_args(std::env::args_os().skip(1)) {
        Ok(c) => c,
        Err(e) => {
            eprintln!("nasprobe-agent: {e}\n\nRun 'nasprobe-agent --help' for the flags.");
            std::process::exit(exit::USAGE);
        }
    };
    let code = match cfg.command {
        Command::Help => {
            print!("{}", config::USAGE);
            exit::OK
        }
        Command::Version => {
            println!("nasprobe-agent {}", env!("CARGO_PKG_VERSION"));
            exit::OK
        }
        Command::Sample { .. } | Command::Serve => {
            eprintln!("nasprobe-agent: not implemented yet");
            exit::FAILURE
        }
    };
    std::process::exit(code);
}
