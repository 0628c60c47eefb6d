//! `nasprobe-agent`: parses the flags and runs the server or the `sample` command.
#![deny(unsafe_code)]

use nasprobe_agent::config::{self, Command, Config};
use nasprobe_agent::{daemon, server, token};
use std::sync::atomic::{AtomicBool, Ordering};

static LOGS_TO_FILE: AtomicBool = AtomicBool::new(false);

fn cfg_logs_to_file() -> bool {
    LOGS_TO_FILE.load(Ordering::Relaxed)
}

/// The server path: logging, token, signals, priority, listen, pidfile, then the poll loop.
fn serve(cfg: Config) -> Result<(), String> {
    if let Err(e) = daemon::init_logging(cfg.log_file.as_deref()) {
        eprintln!("nasprobe-agent: {e}");
        return Err(e);
    }
    LOGS_TO_FILE.store(cfg.log_file.is_some(), Ordering::Relaxed);
    let token = token::load_or_create(&cfg.token_file)?;
    let signals = daemon::Signals::install()?;
    daemon::set_nice(cfg.nice);
    if let Some(cpu) = cfg.cpu {
        daemon::set_cpu(cpu)?;
    }
    let listener = std::net::TcpListener::bind(cfg.listen)
        .map_err(|e| format!("listen on {}: {e}", cfg.listen))?;
    let _pidfile = match &cfg.pidfile {
        Some(p) => Some(daemon::Pidfile::create(p)?),
        None => None,
    };
    let history = cfg.history_bytes;
    let interval = cfg.interval_ms;
    let mut srv = server::Server::new(cfg, token, listener).map_err(|e| format!("start: {e}"))?;
    let addr = srv.local_addr().map_err(|e| format!("listen: {e}"))?;
    log::info!(
        "nasprobe-agent {} listening on {addr} (instance {:016x}, interval {interval} ms, \
         history {history} bytes, pid {})",
        env!("CARGO_PKG_VERSION"),
        srv.instance_id(),
        std::process::id()
    );
    srv.run(&signals).map_err(|e| format!("poll loop: {e}"))?;
    Ok(())
}

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
            print!("{}", config::usage());
            exit::OK
        }
        Command::Version => {
            println!("nasprobe-agent {}", env!("CARGO_PKG_VERSION"));
            exit::OK
        }
        Command::Sample { count, json } => {
            // Warnings (a malformed file, a full table) go to stderr; the samples to stdout.
            let _ = daemon::init_logging(cfg.log_file.as_deref());
            nasprobe_agent::sample_cmd::run(&cfg, count, json)
        }
        Command::Serve => match serve(cfg) {
            Ok(()) => exit::OK,
            Err(e) => {
                log::error!("{e}");
                // Also on stderr when logging goes to a file, so an init script shows it.
                if log::max_level() == log::LevelFilter::Off || cfg_logs_to_file() {
                    eprintln!("nasprobe-agent: {e}");
                }
                exit::FAILURE
            }
        },
    };
    std::process::exit(code);
}
