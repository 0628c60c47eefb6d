//! nasprobe-scenario: writes /proc and /sys trees of a declared scenario and keeps them updated.

#![forbid(unsafe_code)]

use nasprobe_testkit::builtins::{self, BuiltinOptions};
use nasprobe_testkit::{Runner, Scenario};
use std::io::Write;
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

const USAGE: &str = "\
usage:
  nasprobe-scenario run (--scenario FILE.json | --builtin NAME) --out DIR
                        [--tick-ms 100] [--duration DUR] [--once [--at SECS]]
                        [--procs N] [--cores N] [--churn-per-s X] [--churn-life-ms N]
                        [--restart-every SECS] [--wrap-at SECS] [--seed N]
  nasprobe-scenario show (--builtin NAME | --scenario FILE.json) [same knobs]   print as JSON
  nasprobe-scenario list                                                      built-in names

run writes DIR/<host>/proc and DIR/<host>/sys, prints one line per host
  host=NAME kernel=K proc=PATH sys=PATH
then `ready`, and updates the trees every tick until SIGTERM/SIGINT or --duration
(DUR: 500ms, 30s, 5m, 1h or plain seconds). --once writes one snapshot (at t=0, or --at) and exits.";

static STOP: AtomicBool = AtomicBool::new(false);

/// SIGTERM and SIGINT set [`STOP`]: blocked in every thread (call before any other thread
/// starts) and awaited by one of their own, so no handler is needed.
fn stop_on_signals() {
    use nix::sys::signal::{SigSet, Signal};
    let mut set = SigSet::empty();
    set.add(Signal::SIGTERM);
    set.add(Signal::SIGINT);
    if set.thread_block().is_ok() {
        std::thread::spawn(move || {
            if set.wait().is_ok() {
                STOP.store(true, Ordering::Relaxed);
            }
        });
    }
}

fn parse_duration(s: &str) -> Result<Duration, String> {
    let (num, mul) = if let Some(n) = s.strip_suffix("ms") {
        (n, 0.001)
    } else if let Some(n) = s.strip_suffix('s') {
        (n, 1.0)
    } else if let Some(n) = s.strip_suffix('m') {
        (n, 60.0)
    } else if let Some(n) = s.strip_suffix('h') {
        (n, 3600.0)
    } else {
        (s, 1.0)
    };
    let v: f64 = num
        .trim()
        .parse()
        .map_err(|_| format!("bad duration {s:?}"))?;
    if !(v >= 0.0 && v.is_finite()) {
        return Err(format!("bad duration {s:?}"));
    }
    Ok(Duration::from_secs_f64(v * mul))
}

struct Args {
    cmd: String,
    scenario: Option<PathBuf>,
    builtin: Option<String>,
    out: Option<PathBuf>,
    tick: Duration,
    duration: Option<Duration>,
    once: bool,
    at: f64,
    opts: BuiltinOptions,
}

fn parse() -> Result<Args, lexopt::Error> {
    use lexopt::prelude::*;
    let mut p = lexopt::Parser::from_env();
    let mut a = Args {
        cmd: String::new(),
        scenario: None,
        builtin: None,
        out: None,
        tick: Duration::from_millis(100),
        duration: None,
        once: false,
        at: 0.0,
        opts: BuiltinOptions::default(),
    };
    while let Some(arg) = p.next()? {
        match arg {
            Value(v) if a.cmd.is_empty() => a.cmd = v.string()?,
            Long("scenario") => a.scenario = Some(p.value()?.into()),
            Long("builtin") => a.builtin = Some(p.value()?.string()?),
            Long("out") => a.out = Some(p.value()?.into()),
            Long("tick-ms") => {
                let ms: u64 = p.value()?.parse()?;
                a.tick = Duration::from_millis(ms.max(1));
            }
            Long("duration") => a.duration = Some(parse_duration(&p.value()?.string()?)?),
            Long("once") => a.once = true,
            Long("at") => a.at = p.value()?.parse()?,
            Long("procs") => a.opts.procs = p.value()?.parse()?,
            Long("cores") => a.opts.cores = Some(p.value()?.parse()?),
            Long("churn-per-s") => a.opts.churn_per_s = p.value()?.parse()?,
            Long("churn-life-ms") => a.opts.churn_lifetime_s = p.value()?.parse::<f64>()? / 1000.0,
            Long("restart-every") => a.opts.restart_every_s = Some(p.value()?.parse()?),
            Long("wrap-at") => a.opts.wrap_at_s = Some(p.value()?.parse()?),
            Long("seed") => a.opts.seed = p.value()?.parse()?,
            Short('h') | Long("help") => {
                println!("{USAGE}");
                std::process::exit(0);
            }
            _ => return Err(arg.unexpected()),
        }
    }
    Ok(a)
}

fn load(a: &Args) -> Result<Scenario, String> {
    match (&a.scenario, &a.builtin) {
        (Some(path), None) => {
            let mut s = Scenario::load(path)?;
            if let Some(w) = a.opts.wrap_at_s {
                s.hosts.iter_mut().for_each(|h| h.wrap_at_s = Some(w));
            }
            Ok(s)
        }
        (None, Some(name)) => builtins::builtin(name, &a.opts).ok_or_else(|| {
            format!(
                "unknown builtin {name:?}; known: {}",
                builtins::NAMES.join(", ")
            )
        }),
        _ => Err("give exactly one of --scenario FILE or --builtin NAME".into()),
    }
}

fn main() {
    let a = match parse() {
        Ok(a) => a,
        Err(e) => {
            eprintln!("nasprobe-scenario: {e}\n{USAGE}");
            std::process::exit(2);
        }
    };
    let code = match a.cmd.as_str() {
        "list" => {
            for n in builtins::NAMES {
                println!("{n}\t{}", builtins::describe(n).unwrap_or_default());
            }
            0
        }
        "show" => match load(&a) {
            Ok(s) => {
                println!("{}", s.to_json());
                0
            }
            Err(e) => {
                eprintln!("nasprobe-scenario: {e}");
                2
            }
        },
        "run" => run(&a),
        _ => {
            eprintln!("nasprobe-scenario: expected a command: run, show or list\n{USAGE}");
            2
        }
    };
    std::process::exit(code);
}

fn run(a: &Args) -> i32 {
    let scn = match load(a) {
        Ok(s) => s,
        Err(e) => {
            eprintln!("nasprobe-scenario: {e}");
            return 2;
        }
    };
    let Some(out) = &a.out else {
        eprintln!("nasprobe-scenario: --out DIR is required");
        return 2;
    };
    stop_on_signals();
    let mut runner = match Runner::new(&scn, out, nasprobe_testkit::runner::now_epoch()) {
        Ok(r) => r,
        Err(e) => {
            eprintln!("nasprobe-scenario: {e}");
            return 1;
        }
    };
    if a.once
        && a.at > 0.0
        && let Err(e) = runner.step_to(a.at)
    {
        eprintln!("nasprobe-scenario: {e}");
        return 1;
    }
    if !a.once
        && !runner
            .paths()
            .first()
            .is_some_and(|p| nasprobe_testkit::runner::on_tmpfs(&p.proc_root))
    {
        eprintln!(
            "nasprobe-scenario: note: {} is not on tmpfs; fast ticks may fall behind (try /dev/shm)",
            out.display()
        );
    }
    let mut stdout = std::io::stdout();
    for p in runner.paths() {
        let _ = writeln!(stdout, "{}", p.line());
    }
    let _ = writeln!(stdout, "ready");
    let _ = stdout.flush();
    if a.once {
        return 0;
    }
    let started = std::time::Instant::now();
    match runner.run_realtime(a.tick, a.duration, &STOP) {
        Ok(ticks) => {
            let writes: u64 = runner.hosts.iter().map(|(_, w)| w.writes).sum();
            eprintln!(
                "nasprobe-scenario: stopped at t={:.3}s after {ticks} ticks ({writes} file writes) in {:.3}s",
                runner.t(),
                started.elapsed().as_secs_f64()
            );
            0
        }
        Err(e) => {
            eprintln!("nasprobe-scenario: {e}");
            1
        }
    }
}
