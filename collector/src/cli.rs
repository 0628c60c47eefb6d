//! The command line: flags, commands and the small value parsers (durations).

// The doc comments of the clap types are the help text users read (`ADDR[:PORT]`), not rustdoc
// links.
#![allow(rustdoc::broken_intra_doc_links)]

use std::path::PathBuf;
use std::time::Duration;

use clap::{Args, Parser, Subcommand};

pub(crate) use crate::units::parse_size;
pub use crate::units::{parse_duration, parse_since};

/// `report --copy`: which copy's verdict leads.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum CopyPick {
    /// The newest copy's (the default).
    #[default]
    Latest,
    /// Copy number N of the window (1 = the first by start time).
    Number(usize),
    /// The newest leads; every copy's full verdict follows.
    All,
}

/// `--copy N|latest|all`.
pub fn parse_copy(s: &str) -> Result<CopyPick, String> {
    match s.trim() {
        "latest" => Ok(CopyPick::Latest),
        "all" => Ok(CopyPick::All),
        n => match n.parse::<usize>() {
            Ok(k) if k >= 1 => Ok(CopyPick::Number(k)),
            _ => Err(format!(
                "bad --copy {s:?}: a copy number (1, 2, ... as the Copies table lists them), latest or all"
            )),
        },
    }
}

/// Exit codes, fixed so scripts and tests can rely on them.
pub mod exit {
    pub const OK: i32 = 0;
    pub const FAILURE: i32 = 1;
    pub const USAGE: i32 = 2;
}

/// The exit codes of the commands that connect to agents (`record`, `watch`, `test`), as their
/// `--help` says them ([`crate::net::outcome`]).
pub const CONNECTING_EXIT_HELP: &str = "Exit status: 0 when every host delivered records; 1 \
     with one line naming each host that was never reached, never authenticated (wrong token, \
     another protocol) or unreachable for most of the run; 2 for a usage error.";

#[derive(Debug, Parser)]
#[command(
    name = "nasprobe",
    version,
    about = "Tells why a copy between NAS boxes is slow: connects to nasprobe agents, stores \
             what they send, shows them side by side and names the wall of a transfer.",
    after_help = "Hosts: NAME=ADDR:PORT, ADDR[:PORT] (default port 7451), or a NAME from \
                  'nasprobe hosts list'.\nFirst try: nasprobe watch --local"
)]
pub struct Cli {
    #[command(flatten)]
    pub common: Common,
    #[command(subcommand)]
    pub command: Command,
}

impl Common {
    /// The global flags resolved into what every command runs with (defaults filled in).
    pub fn context(&self) -> crate::context::Context {
        crate::context::Context {
            db: self.db.clone().unwrap_or_else(crate::store::default_path),
            token_file: self
                .token_file
                .clone()
                .unwrap_or_else(crate::token::default_path),
            hosts_file: self
                .hosts_file
                .clone()
                .unwrap_or_else(crate::hosts::HostList::default_path),
            retention: self.retention.unwrap_or(crate::store::Retention::DEFAULT),
            collector: self
                .collector_name
                .clone()
                .unwrap_or_else(crate::export::default_collector_name),
            trust: self.ca_file.clone().unwrap_or_default(),
        }
    }
}

/// `--ca-file FILE`, read and checked when the command line is.
fn parse_ca_file(s: &str) -> Result<crate::http::Trust, String> {
    crate::http::Trust::from_ca_file(std::path::Path::new(s)).map_err(|e| e.to_string())
}

#[derive(Debug, Args, Clone)]
pub struct Common {
    /// SQLite database [default: $XDG_DATA_HOME/nasprobe/nasprobe.db]
    #[arg(long, global = true, value_name = "PATH")]
    pub db: Option<PathBuf>,
    /// Shared token file of the agents (hosts in the host list may name their own)
    /// [default: $XDG_CONFIG_HOME/nasprobe/token]
    #[arg(long, global = true, value_name = "PATH")]
    pub token_file: Option<PathBuf>,
    /// Host list file [default: $XDG_CONFIG_HOME/nasprobe/hosts]
    #[arg(long, global = true, value_name = "PATH")]
    pub hosts_file: Option<PathBuf>,
    /// How long each tier of the store is kept: raw samples, 1-minute and 1-hour rollups
    /// (e.g. raw=14d,1m=180d,1h=5y; one DUR sets raw only) [default: raw=14d,1m=180d,1h=5y]
    #[arg(long, global = true, value_name = "TIERS", value_parser = parse_retention)]
    pub retention: Option<crate::store::Retention>,
    /// The `collector` label of every exported series (scrape, VictoriaMetrics, remote
    /// write), so that collectors writing into one TSDB never overwrite each other
    /// [default: this machine's host name]
    #[arg(long, global = true, value_name = "NAME")]
    pub collector_name: Option<String>,
    /// PEM file of the certificates that https receivers (--remote-write, --export-vm,
    /// --notify) are checked against, instead of the Mozilla roots built in: a private CA, or
    /// the system's bundle (e.g. /etc/ssl/certs/ca-certificates.crt)
    #[arg(long, global = true, value_name = "FILE", value_parser = parse_ca_file)]
    pub ca_file: Option<crate::http::Trust>,
    /// Say only what went wrong: no progress or summary lines on stderr, log level error
    /// (errors, alerts and the lines that explain a non-zero exit are still said)
    #[arg(short, long, global = true, conflicts_with = "verbose")]
    pub quiet: bool,
    /// Say more on stderr: -v the connections' and the store's log (info), -vv debug, -vvv
    /// trace (RUST_LOG, when set, decides instead)
    #[arg(short, long, global = true, action = clap::ArgAction::Count)]
    pub verbose: u8,
}

impl Common {
    /// The log level of `-q`/`-v` (warn when neither is given).
    pub fn log_level(&self) -> log::LevelFilter {
        match (self.quiet, self.verbose) {
            (true, _) => log::LevelFilter::Error,
            (false, 0) => log::LevelFilter::Warn,
            (false, 1) => log::LevelFilter::Info,
            (false, 2) => log::LevelFilter::Debug,
            (false, _) => log::LevelFilter::Trace,
        }
    }
}

/// The NAS families `deploy` knows, each with its own places and init system
/// (targets/*/README.md; their layouts are `cmd::deploy`'s).
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum Family {
    Sysv,
    WdMycloud,
    SynologyDsm,
    Systemd,
}

/// Where the commands that record also push what they store (docs/metrics.md).
#[derive(Debug, Args, Clone, Default)]
pub struct PushFlags {
    /// Also push every stored sample and event to this VictoriaMetrics (e.g.
    /// http://127.0.0.1:8428), exactly once; while it is down records wait in the store
    #[arg(long, value_name = "URL")]
    pub export_vm: Option<String>,
    /// Also push every stored sample and event with Prometheus remote write to this receiver
    /// (e.g. http://127.0.0.1:9090/api/v1/write); while it is down records wait in the store,
    /// a batch it refuses (4xx) is counted ('nasprobe hosts list')
    #[arg(long, value_name = "URL")]
    pub remote_write: Option<String>,
    /// Credentials of the remote write receiver: a file with one line, 'bearer TOKEN' or
    /// 'basic USER:PASSWORD'
    #[arg(long, value_name = "FILE", requires = "remote_write")]
    pub remote_write_auth: Option<PathBuf>,
    /// One more header of every remote write request, e.g. 'X-Scope-OrgID: site1' (the tenant
    /// of a multi-tenant Mimir or Cortex); repeatable
    #[arg(long, value_name = "'NAME: VALUE'", requires = "remote_write",
          value_parser = crate::export::remote_write::parse_header)]
    pub remote_write_header: Vec<(String, String)>,
}

impl PushFlags {
    /// The targets, as the exporters take them.
    pub fn to(&self) -> crate::export::PushTo {
        crate::export::PushTo {
            export_vm: self.export_vm.clone(),
            remote_write: self.remote_write.clone(),
            remote_write_auth: self.remote_write_auth.clone(),
            remote_write_headers: self.remote_write_header.clone(),
        }
    }
}

#[derive(Debug, Subcommand)]
pub enum Command {
    /// Connect to agents and store what they send, until stopped or DUR has passed
    #[command(after_help = CONNECTING_EXIT_HELP)]
    Record {
        /// Stop after this long (e.g. 30s, 10m, 2h)
        #[arg(long, value_name = "DUR", value_parser = parse_duration)]
        duration: Option<Duration>,
        #[command(flatten)]
        push: PushFlags,
        #[command(flatten)]
        alerts: AlertFlags,
        /// Agents (NAME=ADDR:PORT, ADDR[:PORT] or a NAME from the host list) [default: the host list]
        #[arg(value_name = "HOST")]
        hosts: Vec<String>,
    },
    /// Live side-by-side view of agents (also stores what they send)
    #[command(after_help = CONNECTING_EXIT_HELP)]
    Watch {
        /// Also start an agent for this machine (Linux) on 127.0.0.1; nasprobe's own process
        /// and files (the store, its WAL, the agent's log) are left out of its panel
        #[arg(long)]
        local: bool,
        /// With --local: keep nasprobe's own process among the busiest and its files as items
        #[arg(long, requires = "local")]
        show_self: bool,
        /// Stop after this long (e.g. 30s, 10m)
        #[arg(long, value_name = "DUR", value_parser = parse_duration)]
        duration: Option<Duration>,
        /// Print plain lines even on a terminal
        #[arg(long)]
        plain: bool,
        #[command(flatten)]
        push: PushFlags,
        #[command(flatten)]
        alerts: AlertFlags,
        /// Agents (NAME=ADDR:PORT, ADDR[:PORT] or a NAME from the host list) [default: the host list]
        #[arg(value_name = "HOST")]
        hosts: Vec<String>,
    },
    /// The verdict: the wall of the transfer across hosts, with evidence, then per-host figures,
    /// restart patterns, progress and gaps
    Report {
        /// Only the last DUR (30m, 2h), or from a time on, UTC (2026-12-01T09:00, yesterday
        /// 18:00, today 06:00) [default: everything stored]
        #[arg(long, value_name = "DUR|TIME", value_parser = parse_since)]
        since: Option<Duration>,
        /// The window ends DUR ago (30m), or at a time, UTC (as --since) [default: now]
        #[arg(long, value_name = "DUR|TIME", value_parser = parse_since)]
        until: Option<Duration>,
        /// Whose verdict leads: copy N of the Copies table, the newest (latest), or every
        /// copy's full verdict after the report (all)
        #[arg(long, value_name = "N|latest|all", value_parser = parse_copy, default_value = "latest")]
        copy: CopyPick,
        /// One JSON object on stdout (fields: docs/report-json.md)
        #[arg(long)]
        json: bool,
        /// Total size the transfer should land, for an ETA (with --mount on the receiving
        /// agent): 11T, 500G, 1.5TiB, 800GB; K/M/G/T/P are decimal (T = 10^12), KiB..PiB binary
        #[arg(long, value_name = "SIZE", value_parser = parse_size)]
        expect: Option<u64>,
        /// Also write the report as one self-contained HTML file
        #[arg(long, value_name = "FILE")]
        html: Option<PathBuf>,
        /// Only this host (repeatable) [default: every host stored]
        #[arg(long = "host", value_name = "NAME")]
        host: Vec<String>,
    },
    /// Events (process start/exit, link changes, agent starts), restart patterns and the
    /// context of each death
    Events {
        /// Only the last DUR (30m, 2h), or from a time on, UTC (2026-12-01T09:00, yesterday
        /// 18:00, today 06:00) [default: everything stored]
        #[arg(long, value_name = "DUR|TIME", value_parser = parse_since)]
        since: Option<Duration>,
        /// One JSON object on stdout: {window, events, patterns, gaps}
        #[arg(long)]
        json: bool,
    },
    /// Stored samples and events as points (metrics of docs/metrics.md) on stdout, or pushed
    /// to VictoriaMetrics with --push-vm
    Export {
        /// Output format
        #[arg(long, value_enum, default_value = "csv")]
        format: crate::export::Format,
        /// Only the last DUR (30m, 2h), or from a time on, UTC (2026-12-01T09:00, yesterday
        /// 18:00, today 06:00) [default: everything stored]
        #[arg(long, value_name = "DUR|TIME", value_parser = parse_since)]
        since: Option<Duration>,
        /// Only this host (repeatable)
        #[arg(long = "host", value_name = "H")]
        host: Vec<String>,
        /// Instead of printing: push everything not yet pushed to this VictoriaMetrics, then exit
        #[arg(long, value_name = "URL", conflicts_with_all = ["format", "since", "host"])]
        push_vm: Option<String>,
        /// Instead of printing: push everything not yet pushed to this remote write receiver
        /// (Prometheus remote write 1.0), then exit
        #[arg(long, value_name = "URL", conflicts_with_all = ["format", "since", "host", "push_vm"])]
        remote_write: Option<String>,
        /// Credentials of the remote write receiver (see record --remote-write-auth)
        #[arg(long, value_name = "FILE", requires = "remote_write")]
        remote_write_auth: Option<PathBuf>,
        /// One more header of every request (see record --remote-write-header); repeatable
        #[arg(long, value_name = "'NAME: VALUE'", requires = "remote_write",
              value_parser = crate::export::remote_write::parse_header)]
        remote_write_header: Vec<(String, String)>,
    },
    /// Prometheus scrape endpoint with the newest rates of every host in the store (and, given
    /// hosts, recording them meanwhile)
    Serve {
        /// Listen address of the endpoint, e.g. 127.0.0.1:9451 (path /metrics)
        #[arg(long, value_name = "ADDR:PORT")]
        metrics: String,
        /// Leave out the rates of hosts whose newest sample is older than this (0: never)
        #[arg(long, value_name = "DUR", default_value = "5m", value_parser = parse_duration)]
        max_age: Duration,
        /// Stop after this long
        #[arg(long, value_name = "DUR", value_parser = parse_duration)]
        duration: Option<Duration>,
        #[command(flatten)]
        push: PushFlags,
        #[command(flatten)]
        alerts: AlertFlags,
        /// Agents to record meanwhile (NAME=ADDR:PORT, ADDR[:PORT] or a NAME from the host list)
        #[arg(value_name = "HOST")]
        hosts: Vec<String>,
    },
    /// Tests an agent runs on its NAS (it must be started with --allow-tests), recorded
    /// meanwhile so each result comes with the wall that set it
    #[command(after_help = CONNECTING_EXIT_HELP)]
    Test {
        #[command(subcommand)]
        command: TestCommand,
    },
    /// The field's file-copy ladder through a mounted share (SMB, NFS, sshfs): one big file
    /// written then read back, then a series of files from 2 MB to 2 GB, past the page cache,
    /// each step graded; with agents named, the wall on the NAS side during each step
    Ladder {
        /// A folder on the mounted share (the test files go in a folder of their own there)
        #[arg(value_name = "DIR")]
        dir: PathBuf,
        /// Agent on the NAS side to record meanwhile (NAME=ADDR:PORT, ADDR[:PORT] or a NAME
        /// from the host list; repeatable)
        #[arg(long = "agent", value_name = "HOST")]
        agents: Vec<String>,
        /// Size of the single big file
        #[arg(long, value_name = "SIZE", default_value = "5G", value_parser = parse_size)]
        big: u64,
        /// The series: FROM..TO, doubling from FROM (e.g. 2M..2G)
        #[arg(long, value_name = "FROM..TO", default_value = "2M..2G", value_parser = parse_size_range)]
        series: (u64, u64),
        /// Link speed to grade against, Mbit/s [default: the agents' link, else 1000]
        #[arg(long, value_name = "MBIT")]
        link_mbit: Option<u32>,
        /// One JSON object on stdout
        #[arg(long)]
        json: bool,
    },
    /// Check the database: integrity, and per agent instance that every sequence number is
    /// stored exactly once or recorded as a gap (exit 1 otherwise)
    Check,
    /// The alerts of the store (firing, resolved) and the notifications not delivered; with
    /// --list, the rules in force (docs/alerts.md)
    Alerts {
        /// Print the rules in force with their keys and values (defaults, the config file
        /// alerts.conf next to the host list, then the flags given here)
        #[arg(long)]
        list: bool,
        /// Only the alerts of the last DUR, or from a time on, UTC (as `report --since`)
        /// [default: everything stored]
        #[arg(long, value_name = "DUR|TIME", value_parser = parse_since)]
        since: Option<Duration>,
        /// One JSON object on stdout: {alerts, undelivered, delivered}
        #[arg(long)]
        json: bool,
        #[command(flatten)]
        alerts: AlertFlags,
    },
    /// Put the agent on a NAS over ssh (the system's OpenSSH, key login): detects its
    /// architecture and family, copies the agent (inside this collector, or --agent), checks its
    /// SHA-256 there, installs the init script and starts it, fetches the token and adds the host
    /// to the host list. Again: nothing changes (or it upgrades); --uninstall removes it all
    Deploy(DeployFlags),
    /// Edit the host list
    Hosts {
        #[command(subcommand)]
        command: HostsCommand,
    },
    /// A completion script for SHELL on stdout (bash: `source <(nasprobe completions bash)`;
    /// zsh: into a folder of $fpath as `_nasprobe`; fish: ~/.config/fish/completions/nasprobe.fish;
    /// PowerShell: `nasprobe completions powershell | Out-String | Invoke-Expression`)
    Completions {
        #[arg(value_enum)]
        shell: clap_complete::Shell,
    },
    /// The manual page (roff) on stdout: `nasprobe man | man -l -`
    Man,
}

/// The flags of `nasprobe deploy`.
#[derive(Debug, Args, Clone)]
pub struct DeployFlags {
    /// Where to log in: USER@HOST (root, or a user with sudo without a password)
    #[arg(value_name = "USER@HOST")]
    pub dest: String,
    /// The NAS family [default: detected: Synology DSM, WD My Cloud, systemd, else SysV]
    #[arg(long, value_enum)]
    pub target: Option<Family>,
    /// Name in the host list [default: HOST]
    #[arg(long, value_name = "NAME")]
    pub name: Option<String>,
    /// The agent's port
    #[arg(long, default_value_t = nasprobe_proto::DEFAULT_PORT)]
    pub port: u16,
    /// Where the binary, token, log and settings live on the NAS [default: per target]
    #[arg(long, value_name = "DIR")]
    pub prefix: Option<String>,
    /// Where the init script (or unit) goes [default: per target]
    #[arg(long, value_name = "DIR")]
    pub init_dir: Option<String>,
    /// Deploy this agent binary instead of the one inside this collector for the NAS's
    /// architecture
    #[arg(long, value_name = "FILE")]
    pub agent: Option<PathBuf>,
    /// Extra agent flags, e.g. "--interval 500 --mount /volume1"
    #[arg(
        long,
        value_name = "ARGS",
        default_value = "",
        allow_hyphen_values = true
    )]
    pub agent_args: String,
    /// Passed as `-o OPT` to ssh and scp (repeatable), e.g. Port=2222
    #[arg(long = "ssh-opt", value_name = "OPT")]
    pub ssh_opt: Vec<String>,
    /// Where this machine reaches the agent when that is not HOST:PORT (a port forward, NAT)
    #[arg(long, value_name = "ADDR:PORT")]
    pub reach: Option<String>,
    /// Stop the agent and remove what deploy installed, its token here and the host entry
    #[arg(long)]
    pub uninstall: bool,
}

/// The alert flags of the commands that record (also lines of `alerts.conf`, see
/// docs/alerts.md).
#[derive(Debug, Args, Clone, Default)]
pub struct AlertFlags {
    /// Set a rule's key: RULE.KEY=VALUE, e.g. stall.below=1MB/s, stall.for=5m,
    /// host_lost.for=2m, repeat=1h (repeatable; `nasprobe alerts --list` shows them all)
    #[arg(long = "alert", value_name = "RULE.KEY=VALUE")]
    pub alert: Vec<String>,
    /// Turn a rule off (host_lost, stall, death, full, integrity; repeatable)
    #[arg(long = "no-alert", value_name = "RULE")]
    pub no_alert: Vec<String>,
    /// Send alerts to KIND=TARGET: webhook=URL, ntfy=URL, alertmanager=URL, exec=CMD
    /// (repeatable)
    #[arg(long = "notify", value_name = "KIND=TARGET")]
    pub notify: Vec<String>,
    /// Also alert when a process whose name or command line contains PATTERN ends
    /// (repeatable)
    #[arg(long = "watch-process", value_name = "PATTERN")]
    pub watch_process: Vec<String>,
    /// Total size the transfer lands (with an agent's --mount on the receiving side): the
    /// full alert fires when the free space ends before that much has landed
    #[arg(long = "expect", value_name = "SIZE", value_parser = parse_size)]
    pub expect: Option<u64>,
}

impl AlertFlags {
    pub fn args(&self) -> crate::alerts::AlertArgs {
        crate::alerts::AlertArgs {
            alert: self.alert.clone(),
            no_alert: self.no_alert.clone(),
            notify: self.notify.clone(),
            watch_process: self.watch_process.clone(),
            expect: self.expect,
        }
    }
}

#[derive(Debug, Subcommand)]
pub enum TestCommand {
    /// Plain TCP from SRC's agent to DST's (no encryption), one stream then more; each run
    /// with the wall on both hosts meanwhile
    Net {
        /// The sending agent
        #[arg(value_name = "SRC")]
        src: String,
        /// The receiving agent (its --test-port must be reachable from SRC)
        #[arg(value_name = "DST")]
        dst: String,
        /// Seconds of each run (runs x seconds at most 60)
        #[arg(long, default_value = "10")]
        seconds: u16,
        /// Streams of each run, in order
        #[arg(long, value_delimiter = ',', default_value = "1,4")]
        streams: Vec<u8>,
        /// Stop after this many bytes in all
        #[arg(long, value_name = "SIZE", default_value = "75G", value_parser = parse_size)]
        max_bytes: u64,
        /// One JSON object on stdout
        #[arg(long)]
        json: bool,
    },
    /// Write a file in DIR on the NAS with 1 MiB blocks (synced), read it back from the disk,
    /// then once with a single big block (the `dd bs=1G` trap); the file is deleted
    Disk {
        /// The agent (NAME=ADDR:PORT, ADDR[:PORT] or a NAME from the host list)
        #[arg(value_name = "HOST")]
        host: String,
        /// The folder on the NAS
        #[arg(long, value_name = "DIR")]
        path: String,
        /// Bytes to write (at most 25% of the free space; the agent stops at 60 s)
        #[arg(long, value_name = "SIZE", default_value = "1G", value_parser = parse_size)]
        size: u64,
        /// Also on tmpfs/ramfs (which measures memory, not a disk)
        #[arg(long)]
        allow_tmpfs: bool,
        /// One JSON object on stdout
        #[arg(long)]
        json: bool,
    },
}

#[derive(Debug, Subcommand)]
pub enum HostsCommand {
    /// Add or replace a host
    Add {
        name: String,
        /// ADDR[:PORT]
        address: String,
        /// Token file for this host (else the common --token-file)
        #[arg(long = "host-token-file", value_name = "PATH")]
        host_token_file: Option<PathBuf>,
    },
    /// List the hosts
    List,
    /// Remove a host
    Remove { name: String },
}

/// `FROM..TO`, two sizes as `parse_size` reads them.
pub fn parse_size_range(s: &str) -> Result<(u64, u64), String> {
    let (a, b) = s
        .split_once("..")
        .ok_or_else(|| format!("{s:?}: want FROM..TO, e.g. 2M..2G"))?;
    let (a, b) = (parse_size(a)?, parse_size(b)?);
    if a == 0 || a > b {
        return Err(format!("{s:?}: want 0 < FROM <= TO"));
    }
    Ok((a, b))
}

/// `--retention`: `raw=DUR,1m=DUR,1h=DUR` (any of them; the rest default, at least as long as
/// the finer tier), or one DUR for raw samples. A coarser tier kept shorter than a finer one is
/// refused: a long report would find holes where the finer steps were gone first.
pub fn parse_retention(s: &str) -> Result<crate::store::Retention, String> {
    use crate::store::Retention;
    let d = Retention::DEFAULT;
    let (mut raw, mut minute, mut hour) = (None, None, None);
    for part in s.split(',').map(str::trim) {
        let (tier, dur) = part.split_once('=').unwrap_or(("raw", part));
        let v = parse_duration(dur)?;
        let slot = match tier.trim() {
            "raw" => &mut raw,
            "1m" => &mut minute,
            "1h" => &mut hour,
            t => return Err(format!("unknown tier {t:?} in --retention (raw, 1m, 1h)")),
        };
        if slot.replace(v).is_some() {
            return Err(format!("tier {} given twice in --retention", tier.trim()));
        }
    }
    // A tier not given takes its default, moved to fit between the tiers given.
    let raw = raw.unwrap_or(
        d.raw
            .min(minute.unwrap_or(d.raw))
            .min(hour.unwrap_or(d.raw)),
    );
    let minute = minute.unwrap_or(d.minute.max(raw).min(hour.unwrap_or(Duration::MAX)));
    let hour = hour.unwrap_or(d.hour.max(minute));
    let words = |x: Duration| format!("{} s", x.as_secs());
    if minute < raw {
        return Err(format!(
            "--retention: 1m ({}) is shorter than raw ({}): a coarser tier is kept at least as long",
            words(minute),
            words(raw)
        ));
    }
    if hour < minute {
        return Err(format!(
            "--retention: 1h ({}) is shorter than 1m ({}): a coarser tier is kept at least as long",
            words(hour),
            words(minute)
        ));
    }
    Ok(Retention { raw, minute, hour })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn durations() {
        let d = |s| parse_duration(s).unwrap();
        assert_eq!(d("30s"), Duration::from_secs(30));
        assert_eq!(d("10m"), Duration::from_secs(600));
        assert_eq!(d("2h"), Duration::from_secs(7200));
        assert_eq!(d("30d"), Duration::from_secs(30 * 86400));
        assert_eq!(d("1w"), Duration::from_secs(7 * 86400));
        assert_eq!(d("500ms"), Duration::from_millis(500));
        assert_eq!(d("1h30m"), Duration::from_secs(5400));
        assert_eq!(d("45"), Duration::from_secs(45));
        for bad in ["", "s", "10x", "1.5h", "-3s", "h1", "99999999999999999999d"] {
            assert!(parse_duration(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn retention_tiers() {
        use crate::store::Retention;
        let day = |n: u64| Duration::from_secs(n * 86_400);
        let r = |s| parse_retention(s).unwrap();
        assert_eq!(
            r("raw=14d,1m=180d,1h=5y"),
            Retention {
                raw: day(14),
                minute: day(180),
                hour: day(5 * 365)
            }
        );
        assert_eq!(
            r("raw=14d,1m=180d,1h=5y"),
            Retention::DEFAULT,
            "the defaults are what the README says"
        );
        // One duration: raw; the coarser tiers keep their defaults.
        assert_eq!(r("30d").raw, day(30));
        assert_eq!(r("30d").minute, day(180));
        // A raw retention above a default lifts the coarser tiers with it.
        assert_eq!(r("1y").minute, day(365));
        assert_eq!(r("1h=10y").hour, day(3650));
        assert_eq!((r("1m=2d").raw, r("1m=2d").minute), (day(2), day(2)));
        assert_eq!(
            r("1h=1d"),
            Retention {
                raw: day(1),
                minute: day(1),
                hour: day(1)
            }
        );
        for bad in [
            "raw=14d,1m=7d",
            "1m=200d,1h=100d",
            "raw=3d,1h=2d",
            "daily=3d",
            "raw=1d,raw=2d",
            "raw=",
            "x",
        ] {
            assert!(parse_retention(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn sizes() {
        let z = |s| parse_size(s).unwrap();
        assert_eq!(z("11T"), 11_000_000_000_000);
        assert_eq!(z("11TB"), 11_000_000_000_000);
        assert_eq!(z("500G"), 500_000_000_000);
        assert_eq!(z("500 g"), 500_000_000_000);
        assert_eq!(z("1.5TiB"), 1_649_267_441_664);
        assert_eq!(z("2GiB"), 2 * 1024 * 1024 * 1024);
        assert_eq!(z("4096"), 4096);
        assert_eq!(z("2e12"), 2_000_000_000_000);
        assert_eq!(z("1_000k"), 1_000_000);
        for bad in ["", "T", "10X", "-1G", "1.2.3G", "1e999"] {
            assert!(parse_size(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn cli_parses() {
        use clap::Parser;
        let c =
            Cli::try_parse_from(["nasprobe", "record", "--duration", "2m", "a=b:1", "c"]).unwrap();
        match c.command {
            Command::Record {
                duration, hosts, ..
            } => {
                assert_eq!(duration, Some(Duration::from_secs(120)));
                assert_eq!(hosts, vec!["a=b:1", "c"]);
            }
            _ => panic!(),
        }
        let c = Cli::try_parse_from(["nasprobe", "watch", "--local", "--db", "/x.db"]).unwrap();
        assert_eq!(c.common.db.as_deref(), Some(std::path::Path::new("/x.db")));
        assert!(Cli::try_parse_from(["nasprobe", "record", "--duration", "zz"]).is_err());
    }
}
