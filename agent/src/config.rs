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
    /// `--allow-tests[=SCOPE]`: the tests collectors may ask for (`nasprobe test disk / net`);
    /// none by default, the agent stays read-only unless its owner says so.
    pub allow_tests: TestScope,
    /// `--test-port P`: where `nasprobe test net` streams arrive (on the --listen address).
    pub test_port: u16,
    /// Learn exits (with their status) from the kernel's process connector; false
    /// (`--no-connector`) keeps to /proc scanning, as when the kernel refuses it.
    pub connector: bool,
    /// Send the open files of the transfer's processes (`OpenFiles`); false with
    /// `--no-open-files` (no file paths leave the agent).
    pub open_files: bool,
    /// Read the NICs' traffic-control caps and send them (`Event::Shaping`); false with
    /// `--no-shaping`. Collectors that do not say they decode them get a one-record `Gone`.
    pub shaping: bool,
}

/// The port `nasprobe test net` streams arrive on, next to the agent's 7451.
pub(crate) const DEFAULT_TEST_PORT: u16 = 7452;

/// Smallest sampling interval allowed (DESIGN.md).
pub(crate) const MIN_INTERVAL_MS: u32 = 100;
/// Smallest interval with `NASPROBE_ALLOW_FAST=1` in the environment. For tests only (the
/// compressed soak runs the agent at 100 Hz); never set it on a NAS.
pub(crate) const MIN_INTERVAL_MS_TESTING: u32 = 10;

/// The smallest `--interval` accepted: `MIN_INTERVAL_MS`, or `MIN_INTERVAL_MS_TESTING` when
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
            allow_tests: TestScope::default(),
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
            shaping: true,
        }
    }
}

/// The help text's head: what the agent is and its two forms (the flags follow, from [`FLAGS`]).
const USAGE_HEAD: &str = "\
nasprobe-agent: samples CPU (per core and per thread), processes, disks, NICs and memory,
and serves them to nasprobe collectors.

USAGE:
    nasprobe-agent [FLAGS]                 serve samples (default)
    nasprobe-agent sample [--count N] [--json]   print what the agent sees and exit

FLAGS:
";

/// Where a flag's help starts (and its continuation lines are indented to).
const HELP_COLUMN: usize = 28;

/// The flags being parsed: the config, and `sample`'s own two flags until the end.
pub(crate) struct Parsing {
    cfg: Config,
    sample_count: u32,
    sample_json: bool,
}

/// Where a disk test may write.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub enum DiskScope {
    /// No disk test.
    #[default]
    Off,
    /// Any folder (plain `--allow-tests`, as before scopes existed); no symlink on the way.
    Anywhere,
    /// These folders and the folders under them (`disk:DIR`); no symlink under them.
    Folders(Vec<PathBuf>),
}

/// What `--allow-tests` lets collectors run.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct TestScope {
    pub disk: DiskScope,
    /// `test net`: send to or receive from the receiving agent of the run.
    pub net: bool,
}

impl TestScope {
    /// Every test, disk in any folder: plain `--allow-tests`, what it meant before scopes.
    pub fn everything() -> TestScope {
        TestScope {
            disk: DiskScope::Anywhere,
            net: true,
        }
    }

    pub fn any(&self) -> bool {
        self.net || self.disk != DiskScope::Off
    }

    /// Parses `disk:DIR,disk:DIR2,net` (items in any order, `disk:` repeated per folder).
    pub fn parse(v: &str) -> Result<TestScope, String> {
        let mut scope = TestScope::default();
        let mut folders = Vec::new();
        for item in v.split(',') {
            match item {
                "net" => scope.net = true,
                _ => match item.strip_prefix("disk:") {
                    Some(dir) if dir.starts_with('/') => folders.push(PathBuf::from(dir)),
                    Some(_) => {
                        return Err(format!(
                            "--allow-tests: '{item}': a disk test's folder is an absolute path \
                             (disk:/volume1/share)"
                        ));
                    }
                    None => {
                        return Err(format!(
                            "--allow-tests: '{item}' is not 'net' or 'disk:DIR' (e.g. \
                             --allow-tests=disk:/volume1/share,net; plain --allow-tests allows \
                             every test in any folder)"
                        ));
                    }
                },
            }
        }
        if !folders.is_empty() {
            scope.disk = DiskScope::Folders(folders);
        }
        Ok(scope)
    }
}

/// One flag: how `--help` shows it and what it does. [`FLAGS`] is the one list of them.
pub(crate) struct Flag {
    /// `--long` without the dashes.
    pub long: &'static str,
    pub short: Option<char>,
    /// The value's name in the help (`""`: the flag takes none).
    pub value: &'static str,
    /// The help text, lines after the first indented under it; `""`: not listed under FLAGS
    /// (`sample`'s flags, shown in the USAGE lines).
    pub help: &'static str,
    /// Applies the flag (reading its value from the parser).
    pub set: fn(&mut Parsing, &mut lexopt::Parser) -> Result<(), String>,
}

type P<'a> = &'a mut lexopt::Parser;

/// Every flag of the agent, in the order `--help` lists them.
pub(crate) const FLAGS: &[Flag] = &[
    Flag {
        long: "count",
        short: None,
        value: "N",
        help: "",
        set: |a, p: P| {
            a.sample_count = parse_num(p, "--count")?;
            Ok(())
        },
    },
    Flag {
        long: "json",
        short: None,
        value: "",
        help: "",
        set: |a, _| {
            a.sample_json = true;
            Ok(())
        },
    },
    Flag {
        long: "listen",
        short: None,
        value: "ADDR:PORT",
        help: "address to listen on [default: 0.0.0.0:7451]",
        set: |a, p: P| {
            let v = string(p)?;
            a.cfg.listen = v
                .parse()
                .map_err(|_| format!("--listen: '{v}' is not ADDR:PORT (e.g. 0.0.0.0:7451)"))?;
            Ok(())
        },
    },
    Flag {
        long: "token-file",
        short: None,
        value: "PATH",
        help: "shared token (created with 32 random bytes, mode 0600, if missing)\n\
               [default: /etc/nasprobe/token]",
        set: |a, p: P| {
            a.cfg.token_file = path(p)?;
            Ok(())
        },
    },
    Flag {
        long: "interval",
        short: None,
        value: "MS",
        help: "sampling interval [default: 1000, minimum 100]",
        set: |a, p: P| {
            a.cfg.interval_ms = parse_num(p, "--interval")?;
            let min = min_interval_ms();
            if a.cfg.interval_ms < min {
                return Err(format!("--interval: at least {min} ms"));
            }
            Ok(())
        },
    },
    Flag {
        long: "history-bytes",
        short: None,
        value: "N",
        help: "history ring size [default: 4194304]",
        set: |a, p: P| {
            a.cfg.history_bytes = parse_num(p, "--history-bytes")?;
            if a.cfg.history_bytes < MIN_HISTORY_BYTES {
                return Err(format!("--history-bytes: at least {MIN_HISTORY_BYTES}"));
            }
            Ok(())
        },
    },
    Flag {
        long: "name",
        short: None,
        value: "NAME",
        help: "host name reported to collectors [default: the host name]",
        set: |a, p: P| {
            a.cfg.name = Some(string(p)?);
            Ok(())
        },
    },
    Flag {
        long: "proc-root",
        short: None,
        value: "DIR",
        help: "where procfs is [default: /proc]",
        set: |a, p: P| {
            a.cfg.proc_root = path(p)?;
            Ok(())
        },
    },
    Flag {
        long: "sys-root",
        short: None,
        value: "DIR",
        help: "where sysfs is [default: /sys]",
        set: |a, p: P| {
            a.cfg.sys_root = path(p)?;
            Ok(())
        },
    },
    Flag {
        long: "pidfile",
        short: None,
        value: "PATH",
        help: "write the pid here",
        set: |a, p: P| {
            a.cfg.pidfile = Some(path(p)?);
            Ok(())
        },
    },
    Flag {
        long: "log-file",
        short: None,
        value: "PATH",
        help: "log here instead of stderr",
        set: |a, p: P| {
            a.cfg.log_file = Some(path(p)?);
            Ok(())
        },
    },
    Flag {
        long: "mount",
        short: None,
        value: "PATH",
        help: "sample used/free bytes of this filesystem (repeatable)",
        set: |a, p: P| {
            a.cfg.mounts.push(path(p)?);
            Ok(())
        },
    },
    Flag {
        long: "link-speed",
        short: None,
        value: "IF=MBIT",
        help: "link speed of IF when the kernel reports none or a wrong one (repeatable)",
        set: |a, p: P| {
            let v = string(p)?;
            let (ifname, mbit) = v
                .split_once('=')
                .and_then(|(i, m)| Some((i.to_string(), m.parse::<u32>().ok()?)))
                .filter(|(i, m)| !i.is_empty() && *m > 0)
                .ok_or_else(|| format!("--link-speed: '{v}' is not IF=MBIT (e.g. eth0=1000)"))?;
            a.cfg.link_speeds.push((ifname, mbit));
            Ok(())
        },
    },
    Flag {
        long: "top",
        short: None,
        value: "N",
        help: "top processes per sample [default: 8, at most 16]",
        set: |a, p: P| {
            a.cfg.top = parse_num(p, "--top")?;
            if a.cfg.top > nasprobe_proto::MAX_TOP_PROCS {
                return Err(format!("--top: at most {}", nasprobe_proto::MAX_TOP_PROCS));
            }
            Ok(())
        },
    },
    Flag {
        long: "cmdline-bytes",
        short: None,
        value: "N",
        help: "cut command lines to N bytes [default: 256]",
        set: |a, p: P| {
            let n: usize = parse_num(p, "--cmdline-bytes")?;
            a.cfg.cmdline_bytes = n.min(nasprobe_proto::CMDLINE_LEN);
            Ok(())
        },
    },
    Flag {
        long: "scan",
        short: None,
        value: "POLICY",
        help: "which /proc/PID to read each sample: `all`; `every:N` (every pid\n\
               every N samples, the busy ones in between); `adaptive[:S]` (the\n\
               busy ones and new pids; every pid when the host's busy CPU is not\n\
               accounted for, or S seconds after the last time; without the\n\
               process connector at most 5 samples apart) [default: adaptive:120]",
        set: |a, p: P| {
            a.cfg.scan = scan_policy(&string(p)?)?;
            Ok(())
        },
    },
    Flag {
        long: "event-min-lifetime",
        short: None,
        value: "MS",
        help: "processes living this long get start/exit events [default: 5000]",
        set: |a, p: P| {
            a.cfg.event_min_lifetime_ms = parse_num(p, "--event-min-lifetime")?;
            Ok(())
        },
    },
    Flag {
        long: "partitions",
        short: None,
        value: "",
        help: "report partitions on their own instead of folding them into the disk",
        set: |a, _| {
            a.cfg.partitions = true;
            Ok(())
        },
    },
    Flag {
        long: "max-clients",
        short: None,
        value: "N",
        help: "concurrent collectors [default: 4]",
        set: |a, p: P| {
            a.cfg.max_clients = parse_num(p, "--max-clients")?;
            if a.cfg.max_clients == 0 {
                return Err("--max-clients: at least 1".into());
            }
            Ok(())
        },
    },
    Flag {
        long: "handshake-timeout",
        short: None,
        value: "MS",
        help: "time a collector has to authenticate and resume [default: 5000]",
        set: |a, p: P| {
            let ms: u32 = parse_num(p, "--handshake-timeout")?;
            a.cfg.handshake_timeout_ms = ms.max(100);
            Ok(())
        },
    },
    Flag {
        long: "stall-timeout",
        short: None,
        value: "MS",
        help: "drop a collector that reads nothing for this long [default: 15000]",
        set: |a, p: P| {
            let ms: u32 = parse_num(p, "--stall-timeout")?;
            a.cfg.stall_timeout_ms = ms.max(100);
            Ok(())
        },
    },
    Flag {
        long: "client-sndbuf",
        short: None,
        value: "BYTES",
        help: "socket send buffer per collector [default: the kernel's]",
        set: |a, p: P| {
            a.cfg.client_sndbuf = parse_num(p, "--client-sndbuf")?;
            Ok(())
        },
    },
    Flag {
        long: "nice",
        short: None,
        value: "N",
        help: "scheduling niceness [default: 19]",
        set: |a, p: P| {
            let v = string(p)?;
            a.cfg.nice = v
                .parse()
                .ok()
                .filter(|n| (-20..=19).contains(n))
                .ok_or_else(|| format!("--nice: '{v}' is not in -20..=19"))?;
            Ok(())
        },
    },
    Flag {
        long: "cpu",
        short: None,
        value: "N",
        help: "pin the agent to CPU N",
        set: |a, p: P| {
            a.cfg.cpu = Some(parse_num(p, "--cpu")?);
            Ok(())
        },
    },
    Flag {
        long: "redact",
        short: None,
        value: "PATTERN",
        help: "mask what follows PATTERN in command lines (repeatable; added to\n\
               password=, --password, token=, key=)",
        set: |a, p: P| {
            a.cfg.redact.push(string(p)?);
            Ok(())
        },
    },
    Flag {
        long: "allow-tests",
        short: None,
        value: "[=SCOPE]",
        help: "run the tests collectors ask for (nasprobe test disk / net): a\n\
               file written and read in the folder named (at most 25% of the\n\
               free space), or plain TCP streams sent to or received from the\n\
               receiving agent of the run; at most 60 s, one at a time, one a\n\
               minute. SCOPE names what: disk:DIR (repeat it per folder; the\n\
               folders under DIR too, no symlink) and net, comma-separated, e.g.\n\
               --allow-tests=disk:/volume1/share,net; plain --allow-tests allows\n\
               both, disk in any folder [default: off]",
        set: |a, p: P| {
            a.cfg.allow_tests = match p.optional_value() {
                None => TestScope::everything(),
                Some(v) => {
                    let v = v
                        .into_string()
                        .map_err(|_| "--allow-tests: not valid UTF-8".to_string())?;
                    TestScope::parse(&v)?
                }
            };
            Ok(())
        },
    },
    Flag {
        long: "test-port",
        short: None,
        value: "PORT",
        help: "where test net streams arrive [default: 7452]",
        set: |a, p: P| {
            a.cfg.test_port = parse_num(p, "--test-port")?;
            if a.cfg.test_port == 0 {
                return Err("--test-port must be 1..65535".into());
            }
            Ok(())
        },
    },
    Flag {
        long: "no-connector",
        short: None,
        value: "",
        help: "do not use the kernel's process connector (exit status): find\n\
               exits by scanning /proc only, as on a kernel that refuses it",
        set: |a, _| {
            a.cfg.connector = false;
            Ok(())
        },
    },
    Flag {
        long: "no-open-files",
        short: None,
        value: "",
        help: "do not send which files the transfer's processes have open\n\
               (paths, positions, sizes: the item a copy is on)",
        set: |a, _| {
            a.cfg.open_files = false;
            Ok(())
        },
    },
    Flag {
        long: "no-shaping",
        short: None,
        value: "",
        help: "do not read the NICs' traffic-control caps (tbf, htb, cake, hfsc)",
        set: |a, _| {
            a.cfg.shaping = false;
            Ok(())
        },
    },
    Flag {
        long: "help",
        short: Some('h'),
        value: "",
        help: "this text",
        set: |a, _| {
            a.cfg.command = Command::Help;
            Ok(())
        },
    },
    Flag {
        long: "version",
        short: Some('V'),
        value: "",
        help: "version",
        set: |a, _| {
            a.cfg.command = Command::Version;
            Ok(())
        },
    },
];

/// `--help`: `USAGE_HEAD`, then every listed flag of `FLAGS`.
pub fn usage() -> String {
    let mut out = String::from(USAGE_HEAD);
    for f in FLAGS.iter().filter(|f| !f.help.is_empty()) {
        let mut spec = match f.short {
            Some(c) => format!("-{c}, --{}", f.long),
            None => format!("--{}", f.long),
        };
        if !f.value.is_empty() {
            // `--allow-tests[=SCOPE]`: an optional value sticks to its flag.
            if !f.value.starts_with('[') {
                spec.push(' ');
            }
            spec.push_str(f.value);
        }
        let mut lines = f.help.lines();
        let first = lines.next().unwrap_or("");
        out.push_str(&format!("    {spec:<w$}{first}\n", w = HELP_COLUMN - 4));
        for l in lines {
            out.push_str(&format!("{:HELP_COLUMN$}{l}\n", ""));
        }
    }
    out
}

/// `--scan`'s value.
fn scan_policy(v: &str) -> Result<ScanPolicy, String> {
    Ok(match v {
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
    })
}

/// Parses the agent's arguments (without the program name).
pub fn parse_args<I>(args: I) -> Result<Config, String>
where
    I: IntoIterator,
    I::Item: Into<std::ffi::OsString>,
{
    use lexopt::prelude::*;
    let mut a = Parsing {
        cfg: Config::default(),
        sample_count: 1,
        sample_json: false,
    };
    let mut parser = lexopt::Parser::from_args(args);
    let err = |e: lexopt::Error| e.to_string();
    while let Some(arg) = parser.next().map_err(err)? {
        let flag = match &arg {
            Value(v) if v == "sample" && a.cfg.command == Command::Serve => {
                a.cfg.command = Command::Sample {
                    count: 1,
                    json: false,
                };
                continue;
            }
            Long(name) => FLAGS.iter().find(|f| f.long == *name),
            Short(c) => FLAGS.iter().find(|f| f.short == Some(*c)),
            _ => None,
        };
        match flag {
            Some(f) => (f.set)(&mut a, &mut parser)?,
            None => return Err(arg.unexpected().to_string()),
        }
    }
    let mut cfg = a.cfg;
    if let Command::Sample { .. } = cfg.command {
        cfg.command = Command::Sample {
            count: a.sample_count,
            json: a.sample_json,
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
    fn help_text_is_the_flag_table() {
        assert_eq!(usage(), include_str!("../tests/data/usage.txt"));
        // Every flag of the table is dispatched (a bad value is its own error, not an unknown
        // flag), by its long and its short name.
        let unknown = parse_args(["--bogus"]).unwrap_err();
        let unknown = unknown.split('\'').next().unwrap();
        for f in FLAGS {
            let mut args = vec![format!("--{}", f.long)];
            if !f.value.is_empty() && !f.value.starts_with('[') {
                args.push("1".into());
            }
            let r = parse_args(args);
            assert!(
                r.as_ref().err().is_none_or(|e| !e.starts_with(unknown)),
                "--{}: {r:?}",
                f.long
            );
        }
        assert_eq!(parse_args(["-h"]).unwrap().command, Command::Help);
        assert_eq!(parse_args(["-V"]).unwrap().command, Command::Version);
    }

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
        assert!(usage().contains("--no-connector"));
        assert!(!parse_args(["--no-open-files"]).unwrap().open_files);
        assert!(parse_args(Vec::<String>::new()).unwrap().open_files);
    }

    #[test]
    fn allow_tests_takes_a_scope() {
        let scope = |args: &[&str]| parse_args(args.iter().copied()).map(|c| c.allow_tests);
        assert_eq!(scope(&[]).unwrap(), TestScope::default());
        assert_eq!(scope(&["--allow-tests"]).unwrap(), TestScope::everything());
        let s = scope(&["--allow-tests=disk:/volume1/share,net,disk:/volume2/x"]).unwrap();
        assert!(s.net);
        assert_eq!(
            s.disk,
            DiskScope::Folders(vec!["/volume1/share".into(), "/volume2/x".into()])
        );
        let s = scope(&["--allow-tests=net"]).unwrap();
        assert!(s.net && s.disk == DiskScope::Off);
        for bad in [
            "--allow-tests=disk",
            "--allow-tests=disk:share",
            "--allow-tests=nett",
        ] {
            let e = scope(&[bad]).unwrap_err();
            assert!(e.starts_with("--allow-tests"), "{bad}: {e}");
        }
    }
}
