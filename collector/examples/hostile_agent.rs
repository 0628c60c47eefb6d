//! A hostile fake agent for end-to-end tests: `hostile_agent MODE TOKEN_FILE [ADDR]` completes
//! the real handshake with the token in TOKEN_FILE, then follows the attack MODE
//! (`nasprobe::testing::Attack`: names, times, values, hello-ticks0, hello-cpus0, gone-max,
//! gone-half, flood, formulas) and keeps the connection open. Prints `listening ADDR` once
//! bound (ADDR default 127.0.0.1:0), then serves until killed. Loopback only.

use nasprobe::testing::{Attack, HostileAgent};

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let usage = "usage: hostile_agent MODE TOKEN_FILE [ADDR]";
    let (Some(mode), Some(tok)) = (args.first(), args.get(1)) else {
        eprintln!("{usage}");
        std::process::exit(2);
    };
    let attack = match mode.as_str() {
        "names" => Attack::Names,
        "times" => Attack::Times,
        "values" => Attack::Values,
        "hello-ticks0" => Attack::HelloTicks0,
        "hello-cpus0" => Attack::HelloCpus0,
        "gone-max" => Attack::GoneMax,
        "gone-half" => Attack::GoneHalf,
        "flood" => Attack::Flood,
        "formulas" => Attack::Formulas,
        other => {
            eprintln!("unknown mode {other:?}; {usage}");
            std::process::exit(2);
        }
    };
    let addr = args.get(2).map_or("127.0.0.1:0", String::as_str);
    let ip = addr.rsplit_once(':').map_or(addr, |x| x.0);
    if ip != "127.0.0.1" && ip != "[::1]" {
        eprintln!("hostile_agent listens on loopback only, not {addr}");
        std::process::exit(2);
    }
    let token = match nasprobe::token::read_token(std::path::Path::new(tok)) {
        Ok(t) => t,
        Err(e) => {
            eprintln!("hostile_agent: {e:#}");
            std::process::exit(1);
        }
    };
    let agent = HostileAgent::start_on(addr, token, attack);
    println!("listening {}", agent.addr);
    loop {
        std::thread::sleep(std::time::Duration::from_secs(3600));
    }
}
