//! Command-line flags of `nasprobe-agent`, parsed with lexopt into one [`Config`].

use std::net::SocketAddr;
use std::path::PathBuf;

/// What to run.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Command {
    /// Serve samples to collectors (the default).
    Serve,
    /// Print what the agent sees: `sample [--count N] [--json]`.
    Sample {
        count: u32,
        json: bool,
    },
    Help,
    Version,
}

/// How much of /proc/PID the sampler scans per sample.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ScanPolicy {
    /// Every pid every sample.
    All,
    /// Every pid every N samples, only the current top (and their threads) in between.
    Every(u32),
    /// Only the busy processes (and the new pids the process connector announces) each sample;
    /// every pid when the host's busy CPU is not accounted for by the processes read, and at the
    /// latest every this many seconds (see [`crate::sampler`]'s process module).
    Adaptive(u32),
}

/// `--scan adaptive`'s longest time between two full scans, in seconds, by default. With the
/// connector, exits and new pids come from the kernel and busy newcomers trigger a scan, so the
/// timed scan only catches idle processes and pids whose announcements were dropped.
pub const ADAPTIVE_MAX_SECONDS: u32 = 120;

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Config {
    pub command: Command,
    pub listen: SocketAddr,
    pub token_file: PathBuf,
    pub interval_ms: u32,
    pub history_bytes: usize,
    pub name: Option<String>,
    pub proc_root: PathBuf,
    pub sys_root: PathBuf,
    pub pidfile: Option<PathBuf>,
    pub log_file: Option<PathBuf>,
    pub mounts: Vec<PathBuf>,
    /// `--link-speed IF=MBIT`, repeatable.
    pub link_speeds: Vec<(String, u32)>,
    /// Top processes per sample.
    pub top: usize,
    /// Command lines are cut to this many bytes.
    pub cmdline_bytes: usize,
    pub scan: ScanPolicy,
    /// Processes that lived at least this long get start/exit events (top ones always do).
    pub event_min_lifetime_ms: u32,
    /// Report partitions as their own devices instead of folding them into their disk.
    pub partitions: bool,
    pub max_clients: usize,
    /// A collector must finish the handshake (Auth, Resume) within this.
    pub handshake_timeout_ms: u32,
    /// A collector whose socket accepts nothing for this long while records wait is dropped.
    pub stall_timeout_ms: u32,
    /// SO_SNDBUF of collector sockets in bytes; 0 keeps the kernel's default.
    pub client_sndbuf: usize,
    pub nice: i32,
    pub cpu: Option<usize>,
    /// Extra patterns masked in command lines (`--redact`), on top of the default list.
    pub redact: Vec<String>,
    /// `--allow-tests`: run the tests collectors ask for (`nasprobe test disk`); off by default,
    /// the agent stays read-only unless its owner says so.
    pub allow_tests: bool,
    /// `--test-port P`: where `nasprobe test net` streams arrive (on the --listen address).
    pub test_port: u16,
    /// Learn exits (with their status) from the kernel's process connector; false
    /// (`--no-connector`) keeps to /proc scanning, as when the kernel refuses it.
    pub connector: bool,
    /// Send the open files of the transfer's processes (`OpenFiles`); false with
    /// `--no-open-files` (no file paths leave the agent).
    pub open_files: bool,
}

/// The port `nasprobe test net` streams arrive on, next to the agent's 7451.
pub(crate) const DEFAULT_TEST_PORT: u16 = 7452;

/// Smallest sampling interval allowed (DESIGN.md).
pub(crate) const MIN_INTERVAL_MS: u32 = 100;
/// Smallest interval with `NASPROBE_ALLOW_FAST=1` in the environment. For tests only (the
/// compressed soak runs the agent at 100 Hz); never set it on a NAS.
pub(crate) const MIN_INTERVAL_MS_TESTING: u32 = 10;

/// The smallest `--interval` accepted: [`MIN_INTERVAL_MS`], or [`MIN_INTERVAL_MS_TESTING`] when
/// the environment has `NASPROBE_ALLOW_FAST=1` (test-only, not in `--help` on purpose).
pub fn min_interval_ms() -> u32 {
    if std::env::var_os("NASPROBE_ALLOW_FAST").is_some_and(|v| v == "1") {
        MIN_INTERVAL_MS_TESTING
    } else {
        MIN_INTERVAL_MS
    }
}
/// Smallest history ring allowed. Tests use tiny rings to see them wrap; below 65540 bytes
/// (one maximal frame) a huge record could be refused by the ring (it is then logged, not sent).
pub(crate) const MIN_HISTORY_BYTES: usize = 4096;
/// Default history ring: hours of samples at 1 Hz.
pub(crate) const DEFAULT_HISTORY_BYTES: usize = 4 * 1024 * 1024;
/// Default token file (kept next to the binary by the init scripts, which pass their own).
pub(crate) const DEFAULT_TOKEN_FILE: &str = "/etc/nasprobe/token";

impl Default for Config {
    fn default() -> Self {
        Config {
            command: Command::Serve,
            listen: SocketAddr::from(([0, 0, 0, 0], nasprobe_proto::DEFAULT_PORT)),
            token_file: PathBuf::from(DEFAULT_TOKEN_FILE),
            interval_ms: 1000,
            history_bytes: DEFAULT_HISTORY_BYTES,
            name: None,
            proc_root: PathBuf::from("/proc"),
            sys_root: PathBuf::from("/sys"),
            pidfile: None,
            log_file: None,
            mounts: Vec::new(),
            link_speeds: Vec::new(),
            top: 8,
            cmdline_bytes: nasprobe_proto::CMDLINE_LEN,
            scan: ScanPolicy::Adaptive(ADAPTIVE_MAX_SECONDS),
            event_min_lifetime_ms: 5000,
            partitions: false,
            allow_tests: false,
            test_port: DEFAULT_TEST_PORT,
            max_clients: 4,
            handshake_timeout_ms: 5000,
            stall_timeout_ms: 15000,
            client_sndbuf: 0,
            nice: 19,
            cpu: None,
            redact: Vec::new(),
            connector: true,
            open_files: true,
        }
    }
}

pub const USAGE: &str = "\
nasprobe-agent: samples CPU (per core and per thread), processes, disks, NICs and memory,
and serves them to nasprobe collectors.

USAGE:
    nasprobe-agent [FLAGS]                 serve samples (default)
    nasprobe-agent sample [--count N] [--json]   print what the agent sees and exit

FLAGS:
    --listen ADDR:PORT      address to listen on [default: 0.0.0.0:7451]
    --token-file PATH       shared token (created with 32 random bytes, mode 0600, if missing)
                            [default: /etc/nasprobe/token]
    --interval MS           sampling interval [default: 1000, minimum 100]
    --history-bytes N       history ring size [default: 4194304]
    --name NAME             host name reported to collectors [default: the host name]
    --proc-root DIR         where procfs is [default: /proc]
    --sys-root DIR          where sysfs is [default: /sys]
    --pidfile PATH          write the pid here
    --log-file PATH         log here instead of stderr
    --mount PATH            sample used/free bytes of this filesystem (repeatable)
    --link-speed IF=MBIT    link speed of IF when the kernel reports none or a wrong one (repeatable)
    --top N                 top processes per sample [default: 8, at most 16]
    --cmdline-bytes N       cut command lines to N bytes [default: 256]
    --scan POLICY           which /proc/PID to read each sample: `all`; `every:N` (every pid
                            every N samples, the busy ones in between); `adaptive[:S]` (the
                            busy ones and new pids; every pid when the host's busy CPU is not
                            accounted for, or S seconds after the last time; without the
                            process connector at most 5 samples apart) [default: adaptive:120]
    --event-min-lifetime MS processes living this long get start/exit events [default: 5000]
    --partitions            report partitions on their own instead of folding them into the disk
    --max-clients N         concurrent collectors [default: 4]
    --handshake-timeout MS  time a collector has to authenticate and resume [default: 5000]
    --stall-timeout MS      drop a collector that reads nothing for this long [default: 15000]
    --client-sndbuf BYTES   socket send buffer per collector [default: the kernel's]
    --nice N                scheduling niceness [default: 19]
    --cpu N                 pin the agent to CPU N
    --redact PATTERN        mask what follows PATTERN in command lines (repeatable; added to
                            password=, --password, token=, key=)
    --allow-tests           run the tests collectors ask for (nasprobe test disk / net): a
                            file written and read in the folder named (at most 25% of the
                            free space), or plain TCP streams sent or received; at most 60 s,
                            one at a time, one a minute [default: off]
    --test-port PORT        where test net streams arrive [default: 7452]
    --no-connector          do not use the kernel's process connector (exit status): find
                            exits by scanning /proc only, as on a kernel that refuses it
    --no-open-files         do not send which files the transfer's processes have open
                            (paths, positions, sizes: the item a copy is on)
    -h, --help              this text
    -V, --version           version
";

/// Parses the agent's arguments (without the program name).
pub fn parse_args<I>(args: I) -> Result<Config, String>
where
    I: IntoIterator,
    I::Item: Into<std::ffi::OsString>,
{
    use lexopt::prelude::*;
    let mut cfg = Config::default();
    let mut parser = lexopt::Parser::from_args(args);
    let mut sample_count = 1u32;
    let mut sample_json = false;
    let err = |e: lexopt::Error| e.to_string();
    while let Some(arg) = parser.next().map_err(err)? {
        match arg {
            Value(v) if v == "sample" && cfg.command == Command::Serve => {
                cfg.command = Command::Sample {
                    count: 1,
                    json: false,
                };
            }
            Long("count") => sample_count = parse_num(&mut parser, "--count")?,
            Long("json") => sample_json = true,
            Long("listen") => {
                let v = string(&mut parser)?;
                cfg.listen = v
                    .parse()
                    .map_err(|_| format!("--listen: '{v}' is not ADDR:PORT (e.g. 0.0.0.0:7451)"))?;
            }
            Long("token-file") => cfg.token_file = path(&mut parser)?,
            Long("interval") => {
                cfg.interval_ms = parse_num(&mut parser, "--interval")?;
                let min = min_interval_ms();
                if cfg.interval_ms < min {
                    return Err(format!("--interval: at least {min} ms"));
                }
            }
            Long("history-bytes") => {
                cfg.history_bytes = parse_num(&mut parser, "--history-bytes")?;
                if cfg.history_bytes < MIN_HISTORY_BYTES {
                    return Err(format!("--history-bytes: at least {MIN_HISTORY_BYTES}"));
                }
            }
            Long("name") => cfg.name = Some(string(&mut parser)?),
            Long("proc-root") => cfg.proc_root = path(&mut parser)?,
            Long("sys-root") => cfg.sys_root = path(&mut parser)?,
            Long("pidfile") => cfg.pidfile = Some(path(&mut parser)?),
            Long("log-file") => cfg.log_file = Some(path(&mut parser)?),
            Long("mount") => cfg.mounts.push(path(&mut parser)?),
            Long("link-speed") => {
                let v = string(&mut parser)?;
                let (ifname, mbit) = v
                    .split_once('=')
                    .and_then(|(i, m)| Some((i.to_string(), m.parse::<u32>().ok()?)))
                    .filter(|(i, m)| !i.is_empty() && *m > 0)
                    .ok_or_else(|| {
                        format!("--link-speed: '{v}' is not IF=MBIT (e.g. eth0=1000)")
                    })?;
                cfg.link_speeds.push((ifname, mbit));
            }
            Long("top") => {
                cfg.top = parse_num(&mut parser, "--top")?;
                if cfg.top > nasprobe_proto::MAX_TOP_PROCS {
                    return Err(format!("--top: at most {}", nasprobe_proto::MAX_TOP_PROCS));
                }
            }
            Long("cmdline-bytes") => {
                cfg.cmdline_bytes = parse_num(&mut parser, "--cmdline-bytes")?;
                cfg.cmdline_bytes = cfg.cmdline_bytes.min(nasprobe_proto::CMDLINE_LEN);
            }
            Long("scan") => {
                let v = string(&mut parser)?;
                cfg.scan = match v.as_str() {
                    "all" => ScanPolicy::All,
                    "adaptive" => ScanPolicy::Adaptive(ADAPTIVE_MAX_SECONDS),
                    _ => match (
                        v.strip_prefix("every:").and_then(|n| n.parse().ok()),
                        v.strip_prefix("adaptive:").and_then(|n| n.parse().ok()),
                    ) {
                        (Some(n), _) if n >= 1 => ScanPolicy::Every(n),
                        (_, Some(s)) if s >= 1 => ScanPolicy::Adaptive(s),
                        _ => {
                            return Err(format!(
                                "--scan: '{v}' is not 'all', 'every:N' or 'adaptive[:SECONDS]'"
                            ));
                        }
                    },
                };
            }
            Long("event-min-lifetime") => {
                cfg.event_min_lifetime_ms = parse_num(&mut parser, "--event-min-lifetime")?
            }
            Long("partitions") => cfg.partitions = true,
            Long("allow-tests") => cfg.allow_tests = true,
            Long("test-port") => {
                cfg.test_port = parse_num(&mut parser, "--test-port")?;
                if cfg.test_port == 0 {
                    return Err("--test-port must be 1..65535".into());
                }
            }
            Long("max-clients") => {
                cfg.max_clients = parse_num(&mut parser, "--max-clients")?;
                if cfg.max_clients == 0 {
                    return Err("--max-clients: at least 1".into());
                }
            }
            Long("handshake-timeout") => {
                cfg.handshake_timeout_ms = parse_num(&mut parser, "--handshake-timeout")?;
                cfg.handshake_timeout_ms = cfg.handshake_timeout_ms.max(100);
            }
            Long("stall-timeout") => {
                cfg.stall_timeout_ms = parse_num(&mut parser, "--stall-timeout")?;
                cfg.stall_timeout_ms = cfg.stall_timeout_ms.max(100);
            }
            Long("client-sndbuf") => cfg.client_sndbuf = parse_num(&mut parser, "--client-sndbuf")?,
            Long("nice") => {
                let v = string(&mut parser)?;
                cfg.nice = v
                    .parse()
                    .ok()
                    .filter(|n| (-20..=19).contains(n))
                    .ok_or_else(|| format!("--nice: '{v}' is not in -20..=19"))?;
            }
            Long("cpu") => cfg.cpu = Some(parse_num(&mut parser, "--cpu")?),
            Long("redact") => cfg.redact.push(string(&mut parser)?),
            Long("no-connector") => cfg.connector = false,
            Long("no-open-files") => cfg.open_files = false,
            Short('h') | Long("help") => cfg.command = Command::Help,
            Short('V') | Long("version") => cfg.command = Command::Version,
            _ => return Err(arg.unexpected().to_string()),
        }
    }
    if let Command::Sample { .. } = cfg.command {
        cfg.command = Command::Sample {
            count: sample_count,
            json: sample_json,
        };
    }
    Ok(cfg)
}

fn string(p: &mut lexopt::Parser) -> Result<String, String> {
    p.value()
        .map_err(|e| e.to_string())?
        .into_string()
        .map_err(|v| format!("not valid UTF-8: {v:?}"))
}

fn path(p: &mut lexopt::Parser) -> Result<PathBuf, String> {
    Ok(PathBuf::from(p.value().map_err(|e| e.to_string())?))
}

fn parse_num<T: std::str::FromStr>(p: &mut lexopt::Parser, flag: &str) -> Result<T, String> {
    let v = string(p)?;
    v.parse()
        .map_err(|_| format!("{flag}: '{v}' is not a valid number"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn defaults_and_flags() {
        let c = parse_args([
            "--listen",
            "127.0.0.1:9000",
            "--interval",
            "250",
            "--mount",
            "/a",
        ])
        .unwrap();
        assert_eq!(c.listen.port(), 9000);
        assert_eq!(c.interval_ms, 250);
        assert_eq!(c.mounts, vec![PathBuf::from("/a")]);
        assert_eq!(c.command, Command::Serve);
        let c = parse_args(["sample", "--count", "3", "--json"]).unwrap();
        assert_eq!(
            c.command,
            Command::Sample {
                count: 3,
                json: true
            }
        );
    }

    #[test]
    fn bad_values_are_clear_errors() {
        assert!(
            parse_args(["--interval", "50"])
                .unwrap_err()
                .contains("at least 100")
        );
        assert!(
            parse_args(["--link-speed", "eth0"])
                .unwrap_err()
                .contains("IF=MBIT")
        );
        assert!(
            parse_args(["--scan", "sometimes"])
                .unwrap_err()
                .contains("every:N")
        );
        assert!(parse_args(["--scan", "adaptive:0"]).is_err());
        assert_eq!(
            parse_args(["--scan", "adaptive:30"]).unwrap().scan,
            ScanPolicy::Adaptive(30)
        );
        assert_eq!(
            parse_args(["--scan", "adaptive"]).unwrap().scan,
            ScanPolicy::Adaptive(ADAPTIVE_MAX_SECONDS)
        );
        assert!(parse_args(["--bogus"]).is_err());
        let c = parse_args(["--link-speed", "veth0=100"]).unwrap();
        assert_eq!(c.link_speeds, vec![("veth0".to_string(), 100)]);
    }

    #[test]
    fn connector_is_on_unless_turned_off() {
        assert!(Config::default().connector);
        assert!(!parse_args(["--no-connector"]).unwrap().connector);
        assert!(USAGE.contains("--no-connector"));
        assert!(!parse_args(["--no-open-files"]).unwrap().open_files);
        assert!(parse_args(Vec::<String>::new()).unwrap().open_files);
    }
}
