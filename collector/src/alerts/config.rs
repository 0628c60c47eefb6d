//! The rules in force: every rule's keys with their defaults, `--alert RULE.KEY=VALUE`,
//! `--no-alert RULE`, `--notify KIND=TARGET`, `--watch-process PATTERN`, and the same lines in
//! the `alerts.conf` file next to the host list (the command line wins).

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::time::Duration;

use crate::units::{parse_duration, parse_size};

/// The rules this build evaluates, in the order they are listed (their names are the
/// webhook's `rule`, the store's and the command line's).
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, serde::Serialize, serde::Deserialize,
)]
#[serde(rename_all = "snake_case")]
pub(crate) enum Rule {
    HostLost,
    Stall,
    Death,
    Full,
    WallChanged,
    Integrity,
}

impl Rule {
    pub(crate) const ALL: [Rule; 6] = [
        Rule::HostLost,
        Rule::Stall,
        Rule::Death,
        Rule::Full,
        Rule::WallChanged,
        Rule::Integrity,
    ];

    pub(crate) fn name(self) -> &'static str {
        match self {
            Rule::HostLost => "host_lost",
            Rule::Stall => "stall",
            Rule::Death => "death",
            Rule::Full => "full",
            Rule::WallChanged => "wall_changed",
            Rule::Integrity => "integrity",
        }
    }

    pub(crate) fn parse(s: &str) -> Option<Rule> {
        Rule::ALL.into_iter().find(|r| r.name() == s)
    }

    /// Off unless turned on (`--alert RULE=on`).
    fn off_by_default(self) -> bool {
        self == Rule::WallChanged
    }

    fn names() -> String {
        Rule::ALL.map(Rule::name).join(", ")
    }
}

impl std::fmt::Display for Rule {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

/// Where a key's value goes in [`Settings`] (and so how it is parsed).
#[derive(Debug, Clone, Copy)]
pub(crate) enum Slot {
    Repeat,
    HostLostFor,
    StallBelow,
    StallFor,
    StallAbove,
    StallAfterFor,
    DeathQuiet,
    FullOver,
    FullWithin,
    WallChangedFor,
    IntegrityQuiet,
}

/// Every key's value, typed: parsed once when set, so a rule reads a field.
#[derive(Debug, Clone, Default)]
pub(crate) struct Settings {
    pub repeat: Duration,
    pub host_lost_for: Duration,
    /// Bytes per second.
    pub stall_below: u64,
    pub stall_for: Duration,
    pub stall_above: u64,
    pub stall_after_for: Duration,
    pub death_quiet: Duration,
    pub full_over: Duration,
    pub full_within: Duration,
    pub wall_changed_for: Duration,
    pub integrity_quiet: Duration,
}

impl Settings {
    /// Parses `v` into `slot`'s field.
    fn set(&mut self, slot: Slot, v: &str) -> Result<(), String> {
        let d = || parse_duration(v);
        let r = || parse_rate(v);
        match slot {
            Slot::Repeat => self.repeat = d()?,
            Slot::HostLostFor => self.host_lost_for = d()?,
            Slot::StallBelow => self.stall_below = r()?,
            Slot::StallFor => self.stall_for = d()?,
            Slot::StallAbove => self.stall_above = r()?,
            Slot::StallAfterFor => self.stall_after_for = d()?,
            Slot::DeathQuiet => self.death_quiet = d()?,
            Slot::FullOver => self.full_over = d()?,
            Slot::FullWithin => self.full_within = d()?,
            Slot::WallChangedFor => self.wall_changed_for = d()?,
            Slot::IntegrityQuiet => self.integrity_quiet = d()?,
        }
        Ok(())
    }
}

/// One settable key of a rule.
#[derive(Debug)]
pub(crate) struct KeyDef {
    /// None: a key of all rules (`repeat`).
    pub rule: Option<Rule>,
    pub key: &'static str,
    pub slot: Slot,
    pub default: &'static str,
    pub help: &'static str,
}

/// Every key.
pub(crate) const KEYS: &[KeyDef] = &[
    KeyDef {
        rule: None,
        key: "repeat",
        slot: Slot::Repeat,
        default: "1h",
        help: "a firing alert is sent again at most this often while it lasts",
    },
    KeyDef {
        rule: Some(Rule::HostLost),
        key: "for",
        slot: Slot::HostLostFor,
        default: "2m",
        help: "an agent unreachable or silent this long",
    },
    KeyDef {
        rule: Some(Rule::Stall),
        key: "below",
        slot: Slot::StallBelow,
        default: "1MB/s",
        help: "the flow under this rate ...",
    },
    KeyDef {
        rule: Some(Rule::Stall),
        key: "for",
        slot: Slot::StallFor,
        default: "5m",
        help: "... for this long ...",
    },
    KeyDef {
        rule: Some(Rule::Stall),
        key: "above",
        slot: Slot::StallAbove,
        default: "5MB/s",
        help: "... after it was above this rate ...",
    },
    KeyDef {
        rule: Some(Rule::Stall),
        key: "after_for",
        slot: Slot::StallAfterFor,
        default: "1m",
        help: "... for at least this long",
    },
    KeyDef {
        rule: Some(Rule::Death),
        key: "quiet",
        slot: Slot::DeathQuiet,
        default: "10m",
        help: "deaths of one process this close together are one alert (a restart loop, \
               counted); resolved once none came for this long",
    },
    KeyDef {
        rule: Some(Rule::Full),
        key: "over",
        slot: Slot::FullOver,
        default: "5m",
        help: "a --mount's landing rate is its growth over this long; it fires when the free \
               space ends before the transfer (--expect SIZE has landed) ...",
    },
    KeyDef {
        rule: Some(Rule::Full),
        key: "within",
        slot: Slot::FullWithin,
        default: "1h",
        help: "... or, without --expect, when it ends within this long",
    },
    KeyDef {
        rule: Some(Rule::WallChanged),
        key: "for",
        slot: Slot::WallChangedFor,
        default: "5m",
        help: "the verdict's wall moved to another host or resource and stayed there this long",
    },
    KeyDef {
        rule: Some(Rule::Integrity),
        key: "quiet",
        slot: Slot::IntegrityQuiet,
        default: "10m",
        help: "the collector refused frames or records of a host (a wrong MAC, the host marked \
               bad, records rejected or over the caps): one alert per outage, resolved once \
               none came for this long",
    },
];

/// A `--notify` receiver.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Receiver {
    Webhook(String),
    Ntfy(String),
    Alertmanager(String),
    Exec(String),
}

impl Receiver {
    /// `KIND=TARGET`.
    pub(crate) fn parse(s: &str) -> Result<Receiver, String> {
        let (kind, target) = s.split_once('=').ok_or_else(|| {
            format!("--notify {s:?}: want KIND=TARGET (webhook, ntfy, alertmanager, exec)")
        })?;
        let target = target.trim().to_string();
        if target.is_empty() {
            return Err(format!("--notify {s:?}: empty target"));
        }
        let http = |t: String| {
            if t.starts_with("http://") || t.starts_with("https://") {
                Ok(t)
            } else {
                Err(format!("--notify {s:?}: want an http:// or https:// URL"))
            }
        };
        match kind.trim() {
            "webhook" => Ok(Receiver::Webhook(http(target)?)),
            "ntfy" => Ok(Receiver::Ntfy(http(target)?)),
            "alertmanager" => Ok(Receiver::Alertmanager(http(target)?)),
            "exec" => Ok(Receiver::Exec(target)),
            k => Err(format!(
                "--notify: unknown kind {k:?} (webhook, ntfy, alertmanager, exec)"
            )),
        }
    }

    /// `KIND=TARGET` again, the URL's secrets redacted (`user:***@`, `token=***`:
    /// `http::redact`): how deliveries name their receiver in the store and on the screen.
    pub(crate) fn spec(&self) -> String {
        let r = crate::http::redact;
        match self {
            Receiver::Webhook(t) => format!("webhook={}", r(t)),
            Receiver::Ntfy(t) => format!("ntfy={}", r(t)),
            Receiver::Alertmanager(t) => format!("alertmanager={}", r(t)),
            Receiver::Exec(t) => format!("exec={t}"),
        }
    }
}

/// The command line's alert flags (or the file's lines), before they are checked.
#[derive(Debug, Clone, Default)]
pub struct AlertArgs {
    pub alert: Vec<String>,
    pub no_alert: Vec<String>,
    pub notify: Vec<String>,
    pub watch_process: Vec<String>,
    /// `--expect SIZE` as given (the full rule's end of the transfer).
    pub expect: Option<u64>,
}

/// The rules in force.
#[derive(Debug, Clone)]
pub struct AlertConfig {
    /// (rule, key) → value as given (checked), in [`KEYS`] order.
    values: Vec<(&'static KeyDef, String)>,
    /// The same values, typed.
    pub(crate) set: Settings,
    pub(crate) off: BTreeSet<Rule>,
    pub(crate) receivers: Vec<Receiver>,
    pub(crate) watch_process: Vec<String>,
    /// `--expect SIZE`: the bytes the transfer lands in all (the full rule's end).
    pub(crate) expect: Option<u64>,
    /// Where the file was looked for, and whether it was there.
    pub(crate) file: Option<(PathBuf, bool)>,
    /// Each alert sent is also a line on stderr (not under `watch`, whose banner shows them).
    pub(crate) on_stderr: bool,
    /// What the https receivers' certificates are checked against (`--ca-file`).
    pub(crate) trust: crate::http::Trust,
}

/// The file next to the host list.
pub(crate) fn file_next_to(hosts_file: &Path) -> PathBuf {
    hosts_file.with_file_name("alerts.conf")
}

/// `1MB/s` (or `1MB`): bytes per second, through the sizes' parser.
pub(crate) fn parse_rate(v: &str) -> Result<u64, String> {
    let t = v.trim();
    parse_size(t.strip_suffix("/s").unwrap_or(t))
}

impl AlertConfig {
    /// The defaults, then the file's lines (if `file` exists), then the command line.
    pub fn resolve(args: &AlertArgs, file: Option<&Path>) -> anyhow::Result<AlertConfig> {
        let mut set = Settings::default();
        for k in KEYS {
            set.set(k.slot, k.default)
                .map_err(|e| anyhow::anyhow!("the default of {}: {e}", k.key))?;
        }
        let mut c = AlertConfig {
            values: KEYS.iter().map(|k| (k, k.default.to_string())).collect(),
            set,
            off: Rule::ALL
                .into_iter()
                .filter(|r| r.off_by_default())
                .collect(),
            receivers: Vec::new(),
            watch_process: Vec::new(),
            expect: None,
            file: None,
            on_stderr: true,
            trust: crate::http::Trust::default(),
        };
        if let Some(path) = file {
            match std::fs::read_to_string(path) {
                Ok(text) => {
                    let from_file = parse_file(&text)
                        .map_err(|(line, e)| anyhow::anyhow!("{}:{line}: {e}", path.display()))?;
                    c.apply(&from_file)
                        .map_err(|e| anyhow::anyhow!("{}: {e}", path.display()))?;
                    c.file = Some((path.to_path_buf(), true));
                }
                Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
                    c.file = Some((path.to_path_buf(), false));
                }
                Err(e) => anyhow::bail!("cannot read {}: {e}", path.display()),
            }
        }
        c.apply(args).map_err(|e| anyhow::anyhow!(e))?;
        Ok(c)
    }

    fn apply(&mut self, a: &AlertArgs) -> Result<(), String> {
        for s in &a.alert {
            let (name, value) = s
                .split_once('=')
                .ok_or_else(|| format!("--alert {s:?}: want RULE.KEY=VALUE (e.g. stall.for=5m)"))?;
            // RULE=on|off turns a rule on or off.
            if let Some(rule) = Rule::parse(name.trim()) {
                match value.trim() {
                    "on" => self.off.remove(&rule),
                    "off" => self.off.insert(rule),
                    v => return Err(format!("--alert {s:?}: {rule}={v}? (on or off)")),
                };
                continue;
            }
            let (rule, key) = match name.trim().split_once('.') {
                Some((r, k)) => (Rule::parse(r).map(Some), k),
                None => (Some(None), name.trim()),
            };
            let slot = self
                .values
                .iter_mut()
                .find(|(d, _)| Some(d.rule) == rule && d.key == key)
                .ok_or_else(|| {
                    format!("--alert {s:?}: no such key (nasprobe alerts --list shows them)")
                })?;
            self.set
                .set(slot.0.slot, value.trim())
                .map_err(|e| format!("--alert {s:?}: {e}"))?;
            slot.1 = value.trim().to_string();
        }
        for r in &a.no_alert {
            let r = r.trim();
            let rule = Rule::parse(r)
                .ok_or_else(|| format!("--no-alert {r:?}: no such rule ({})", Rule::names()))?;
            self.off.insert(rule);
        }
        for n in &a.notify {
            let r = Receiver::parse(n)?;
            if !self.receivers.contains(&r) {
                self.receivers.push(r);
            }
        }
        if let Some(e) = a.expect {
            self.expect = Some(e);
        }
        for p in &a.watch_process {
            let p = p.trim();
            if p.is_empty() {
                return Err("--watch-process: empty pattern".into());
            }
            self.watch_process.push(p.to_string());
        }
        Ok(())
    }

    pub(crate) fn repeat(&self) -> Duration {
        self.set.repeat
    }

    /// No line on stderr per alert (the caller shows them).
    pub fn quiet(mut self) -> AlertConfig {
        self.on_stderr = false;
        self
    }

    pub(crate) fn is_on(&self, rule: Rule) -> bool {
        !self.off.contains(&rule)
    }

    /// What `nasprobe alerts --list` prints.
    pub fn list_text(&self) -> String {
        let mut o = String::new();
        if let Some((p, there)) = &self.file {
            o.push_str(&format!(
                "config file: {} ({})\n",
                p.display(),
                if *there { "read" } else { "none there" }
            ));
        }
        for (d, v) in self.values.iter().filter(|(d, _)| d.rule.is_none()) {
            o.push_str(&format!("{} = {v}    {}\n", d.key, d.help));
        }
        for rule in Rule::ALL {
            let state = match (self.is_on(rule), rule.off_by_default()) {
                (true, _) => "on".to_string(),
                (false, true) => format!("off (by default; --alert {rule}=on)"),
                (false, false) => "off (--no-alert)".to_string(),
            };
            o.push_str(&format!("{rule}: {state}\n"));
            for (d, v) in self.values.iter().filter(|(d, _)| d.rule == Some(rule)) {
                let changed = if *v == d.default {
                    String::new()
                } else {
                    format!(" (default {})", d.default)
                };
                o.push_str(&format!(
                    "  {rule}.{} = {v}{changed}    {}\n",
                    d.key, d.help
                ));
            }
            if rule == Rule::Death {
                let w = if self.watch_process.is_empty() {
                    "none".to_string()
                } else {
                    self.watch_process.join(", ")
                };
                o.push_str(&format!(
                    "  watched: the processes that moved the flow's files, and --watch-process: {w}\n"
                ));
            }
            if rule == Rule::Full {
                o.push_str(&match self.expect {
                    Some(e) => format!("  --expect: {e} bytes\n"),
                    None => "  --expect: not given (full.within applies)\n".into(),
                });
            }
        }
        if self.receivers.is_empty() {
            o.push_str("notify: none (alerts are kept in the store: nasprobe alerts)\n");
        }
        for r in &self.receivers {
            o.push_str(&format!("notify: {}\n", r.spec()));
        }
        o
    }
}

/// The file's lines: `alert RULE.KEY=VALUE`, `no-alert RULE`, `notify KIND=TARGET`,
/// `watch-process PATTERN`; `#` starts a comment. Errors carry their line number.
pub(crate) fn parse_file(text: &str) -> Result<AlertArgs, (usize, String)> {
    let mut a = AlertArgs::default();
    for (i, line) in text.lines().enumerate() {
        let line = line.split('#').next().unwrap_or("").trim();
        if line.is_empty() {
            continue;
        }
        let (word, rest) = line.split_once(char::is_whitespace).unwrap_or((line, ""));
        let rest = rest.trim().to_string();
        if rest.is_empty() {
            return Err((i + 1, format!("{word}: a value is missing")));
        }
        match word {
            "alert" => a.alert.push(rest),
            "no-alert" => a.no_alert.push(rest),
            "notify" => a.notify.push(rest),
            "watch-process" => a.watch_process.push(rest),
            w => {
                return Err((
                    i + 1,
                    format!("unknown word {w:?} (alert, no-alert, notify, watch-process)"),
                ));
            }
        }
    }
    Ok(a)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn args(alert: &[&str]) -> AlertArgs {
        AlertArgs {
            alert: alert.iter().map(|s| s.to_string()).collect(),
            ..Default::default()
        }
    }

    #[test]
    fn defaults_and_overrides() {
        let c = AlertConfig::resolve(&AlertArgs::default(), None).unwrap();
        assert_eq!(c.set.stall_for, Duration::from_secs(300));
        assert_eq!(c.set.stall_below, 1_000_000);
        assert_eq!(c.repeat(), Duration::from_secs(3600));
        let c = AlertConfig::resolve(
            &args(&["stall.for=10s", "repeat=5m", "stall.below=200KB/s"]),
            None,
        )
        .unwrap();
        assert_eq!(c.set.stall_for, Duration::from_secs(10));
        assert_eq!(c.repeat(), Duration::from_secs(300));
        assert_eq!(c.set.stall_below, 200_000);
        assert!(c.list_text().contains("stall.for = 10s (default 5m)"));
    }

    #[test]
    fn bad_input_is_refused_clearly() {
        let e = AlertConfig::resolve(&args(&["stall.fro=1m"]), None).unwrap_err();
        assert!(e.to_string().contains("no such key"), "{e}");
        let e = AlertConfig::resolve(&args(&["stall.for=soon"]), None).unwrap_err();
        assert!(e.to_string().contains("bad duration"), "{e}");
        let mut a = AlertArgs::default();
        a.no_alert.push("stal".into());
        assert!(AlertConfig::resolve(&a, None).is_err());
        assert!(Receiver::parse("webhook=ftp://x").is_err());
        assert_eq!(
            Receiver::parse("ntfy=https://ntfy.sh/t").unwrap(),
            Receiver::Ntfy("https://ntfy.sh/t".into())
        );
        assert!(Receiver::parse("pager=http://x").is_err());
        assert_eq!(
            Receiver::parse("ntfy=http://127.0.0.1:1/t").unwrap(),
            Receiver::Ntfy("http://127.0.0.1:1/t".into())
        );
    }

    #[test]
    fn the_file_then_the_command_line() {
        let dir = std::env::temp_dir().join(format!("np-alerts-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let f = dir.join("alerts.conf");
        std::fs::write(
            &f,
            "# mine\nalert stall.for=2m\nalert host_lost.for=30s\nno-alert death\nnotify webhook=http://127.0.0.1:9/x\n",
        )
        .unwrap();
        let c = AlertConfig::resolve(&args(&["stall.for=20s"]), Some(&f)).unwrap();
        assert_eq!(c.set.stall_for, Duration::from_secs(20));
        assert_eq!(c.set.host_lost_for, Duration::from_secs(30));
        assert!(!c.is_on(Rule::Death));
        assert_eq!(c.receivers.len(), 1);
        std::fs::write(&f, "alert stall.for=2m\nnotfy x\n").unwrap();
        let e = AlertConfig::resolve(&AlertArgs::default(), Some(&f)).unwrap_err();
        assert!(e.to_string().contains("alerts.conf:2"), "{e}");
        std::fs::remove_dir_all(&dir).ok();
    }
}
