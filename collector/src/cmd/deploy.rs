//! `nasprobe deploy USER@HOST`: puts the agent on a NAS with the system's OpenSSH (`ssh`)
//! — detects the architecture and the family (Synology DSM, WD My Cloud, systemd, plain SysV),
//! copies the static agent (embedded: `agents`; or `--agent FILE`) and checks its
//! SHA-256 there, installs and starts the family's init script (targets/), fetches the token and
//! adds the host to the host list. Running it again changes nothing that is right (or upgrades);
//! `--uninstall` removes it all. Each failure is one line: the step, what happened, the remedy.
//! The shell run on the NAS is in targets/deploy/ (probe, install, uninstall).
//!
//! The destination is resolved the way ssh does (`ssh -G`: a `Host` alias's HostName), the agent
//! is checked from here before the host list gets its entry, and the boot line says what the
//! install really enabled. The NAS is not trusted (issue 39): its answers are bounded
//! (`ssh::MAX_ANSWER_BYTES`, a deadline per step), sanitized before printing, its token checked
//! before it is written; the prefix is normalised and refused when it is a system folder
//! (`SYSTEM_DIRS`); the init script, agent.conf and the systemd unit are rendered here, every
//! value quoted for the shell (or systemd) that reads it, or refused.

use std::io::{Read as _, Write as _};
use std::net::{TcpStream, ToSocketAddrs};
use std::path::{Path, PathBuf};
use std::time::Duration;

use anyhow::{Context as _, anyhow, bail};
use nasprobe_proto::PROTOCOL_VERSION;

use crate::agents;
use crate::cli::{DeployFlags, Family};
use crate::context::Context;
use crate::hosts::{HostSpec, parse_addr};
use crate::output;
use crate::ssh::{Remote, check_dest, quote};

const PROBE: &str = include_str!("../../../targets/deploy/probe.sh");
const INSTALL: &str = include_str!("../../../targets/deploy/install.sh");
const UNINSTALL: &str = include_str!("../../../targets/deploy/uninstall.sh");
const SYSV_INIT: &str = include_str!("../../../targets/sysv/nasprobe-agent");
const SYSTEMD_UNIT: &str = include_str!("../../../targets/systemd/nasprobe-agent.service");

/// Folders `--prefix` may never be (uninstall removes the prefix with `rm -rf`, install makes it
/// mode 0700): the system's own and the data volumes' roots. A prefix is also at least two
/// levels deep, so `/` and every top-level folder are refused too.
pub(crate) const SYSTEM_DIRS: &[&str] = &[
    "/usr/bin",
    "/usr/lib",
    "/usr/lib64",
    "/usr/libexec",
    "/usr/local",
    "/usr/local/bin",
    "/usr/local/etc",
    "/usr/local/lib",
    "/usr/local/sbin",
    "/usr/local/share",
    "/usr/local/etc/rc.d",
    "/usr/sbin",
    "/usr/share",
    "/var/lib",
    "/var/log",
    "/var/run",
    "/var/spool",
    "/etc/init.d",
    "/etc/systemd",
    "/etc/systemd/system",
    "/etc/ssh",
    "/etc/default",
    "/run/systemd",
    "/mnt/HD",
    "/mnt/HD/HD_a2",
    "/mnt/HD/HD_b2",
    "/mnt/HD/HD_a4",
    "/opt/bin",
    "/opt/etc",
    "/opt/lib",
];

/// The link busybox's rcS runs at boot (`for s in /etc/init.d/S??*`): late, after the network.
const RCS_LINK: &str = "S99nasprobe-agent";

/// A lexically normalised absolute path: `//`, `.` and `..` resolved (`..` above `/` stays at
/// `/`), no trailing `/`; control characters refused.
fn normalise(flag: &str, p: &str) -> anyhow::Result<String> {
    anyhow::ensure!(
        p.starts_with('/') && !p.chars().any(char::is_control),
        "{flag} {:?}: an absolute path without control characters",
        nasprobe_proto::sanitize::text(p)
    );
    let mut parts: Vec<&str> = Vec::new();
    for c in p.split('/') {
        match c {
            "" | "." => {}
            ".." => {
                parts.pop();
            }
            c => parts.push(c),
        }
    }
    Ok(format!("/{}", parts.join("/")))
}

/// `--prefix`, normalised, when it is a folder deploy may own (and remove).
fn check_prefix(p: &str) -> anyhow::Result<String> {
    let n = normalise("--prefix", p)?;
    let depth = n.matches('/').count();
    anyhow::ensure!(
        depth >= 2 && !SYSTEM_DIRS.contains(&n.as_str()),
        "--prefix {:?} is {n}, {}: pass a folder of its own two levels deep or more, e.g. \
         /opt/nasprobe (--uninstall removes it whole)",
        nasprobe_proto::sanitize::text(p),
        if depth < 2 {
            "the root or a top-level folder"
        } else {
            "a system folder"
        }
    );
    Ok(n)
}

/// Characters a value may have to be written into the systemd unit unquoted (systemd expands
/// `$`, `%` and `\\` and splits at spaces and quotes).
fn unit_safe(s: &str) -> bool {
    s.chars()
        .all(|c| c.is_ascii_alphanumeric() || "._/:=,+@-".contains(c))
}

impl Family {
    fn name(self) -> &'static str {
        match self {
            Family::Sysv => "sysv",
            Family::WdMycloud => "wd-mycloud",
            Family::SynologyDsm => "synology-dsm",
            Family::Systemd => "systemd",
        }
    }

    /// Default prefix, init dir (None: the prefix), init script source and its installed name.
    fn layout(
        self,
    ) -> (
        &'static str,
        Option<&'static str>,
        &'static str,
        &'static str,
    ) {
        match self {
            Family::Sysv => (
                "/opt/nasprobe",
                Some("/etc/init.d"),
                SYSV_INIT,
                "nasprobe-agent",
            ),
            Family::WdMycloud => (
                "/mnt/HD/HD_a2/.nasprobe",
                None,
                SYSV_INIT,
                "nasprobe-agent.sh",
            ),
            Family::SynologyDsm => (
                "/usr/local/nasprobe",
                Some("/usr/local/etc/rc.d"),
                SYSV_INIT,
                "nasprobe-agent.sh",
            ),
            Family::Systemd => (
                "/opt/nasprobe",
                Some("/etc/systemd/system"),
                SYSTEMD_UNIT,
                "nasprobe-agent.service",
            ),
        }
    }
}

/// What the probe found on the NAS.
struct Probe {
    arch: String,
    root: bool,
    family: Family,
    sha256sum: bool,
    scp: bool,
    sudo: bool,
}

fn probe(remote: &Remote) -> anyhow::Result<Probe> {
    let r = remote.run("sh -s", PROBE.as_bytes())?;
    let lines: Vec<&str> = r.stdout.lines().map(str::trim).collect();
    let has = |m: &str| lines.contains(&m);
    let (Some(arch), Some(uid)) = (lines.first(), lines.get(1)) else {
        bail!(
            "{} answered nothing to `uname -m; id -u` ({}): is it a Linux NAS with a POSIX shell?",
            remote.dest,
            nasprobe_proto::sanitize::text(&r.stderr)
        );
    };
    let family = if has("has_synology") {
        Family::SynologyDsm
    } else if has("has_wd") {
        Family::WdMycloud
    } else if has("has_systemd") {
        Family::Systemd
    } else {
        Family::Sysv
    };
    Ok(Probe {
        arch: arch.to_string(),
        root: *uid == "0",
        family,
        sha256sum: has("has_sha256sum"),
        scp: has("has_scp"),
        sudo: has("has_sudo"),
    })
}

/// Everything a step needs to know about the install.
struct Plan {
    remote: Remote,
    host: String,
    name: String,
    /// Where this machine reaches the agent (`HOST:PORT` or `--reach`).
    reach: String,
    family: Family,
    prefix: String,
    /// `sudo -n ` when the login is not root, else empty.
    sudo: &'static str,
    /// The folder of the init script.
    init_dir: String,
    /// The shell variables the NAS-side scripts start from.
    vars: String,
}

/// A failure of STEP, as one line.
fn at(step: &'static str) -> impl FnOnce(anyhow::Error) -> anyhow::Error {
    move |e| anyhow!("deploy: {step}: {e:#}")
}

/// The remote command's failure at step `what` in one line: root, sudo, a read-only or full
/// file system.
fn remote_failure(plan: &Plan, what: &str, stderr: &str) -> anyhow::Error {
    let err = nasprobe_proto::sanitize::text(stderr.lines().last().unwrap_or("").trim());
    let what = format!("deploy: {what}");
    if stderr.contains("sudo:") {
        anyhow!(
            "{what}: {err}: {} is not root and sudo asks for a password; log in as root \
             (root@{}) or allow this user `sudo` without a password",
            plan.remote.dest,
            plan.host
        )
    } else if stderr.contains("Read-only file system") {
        anyhow!(
            "{what}: {err}: that file system is read-only on this NAS; pass --prefix (and \
             --init-dir) on a writable volume, e.g. --prefix /volume1/nasprobe"
        )
    } else if stderr.contains("No space left") {
        anyhow!(
            "{what}: {err}: the NAS is out of space there; free some (or pass --prefix elsewhere)"
        )
    } else if stderr.contains("Permission denied") {
        anyhow!(
            "{what}: {err}: {} may not write there; log in as root or pass --prefix and \
             --init-dir in a folder it owns",
            plan.remote.dest
        )
    } else {
        anyhow!("{what}: {err}")
    }
}

/// Runs `nasprobe deploy`.
pub fn run(c: &Context, a: &DeployFlags) -> anyhow::Result<()> {
    let mut out = output::stdout();
    let mut say = |s: String| -> anyhow::Result<()> {
        out.line(&format!("deploy: {s}"))?;
        out.writer().flush()?;
        Ok(())
    };
    let (plan, p) = plan(a)?;
    say(format!(
        "{}: {}, target {}, prefix {}{}",
        a.dest,
        nasprobe_proto::sanitize::text(&p.arch),
        plan.family.name(),
        plan.prefix,
        if p.root { "" } else { " (via sudo)" }
    ))?;
    let token_out = c
        .hosts_file
        .parent()
        .unwrap_or(Path::new("."))
        .join("tokens")
        .join(format!("{}.token", plan.name));
    if a.uninstall {
        return uninstall(c, &plan, &token_out, &mut say);
    }
    let binary = agent_binary(a, &p.arch)?;
    let done = install(a, &plan, &p, &binary)?;
    say(format!("{}; running on port {}", done.what, a.port))?;
    say(boot_line(&plan, &done.boot, &a.dest))?;

    // --- token, check from here, then the host list ---------------------------------------------
    let t = plan.remote.run(
        &format!(
            "{}cat {}",
            plan.sudo,
            quote(&format!("{}/token", plan.prefix))
        ),
        b"",
    )?;
    if t.code != 0 || t.stdout.trim().is_empty() {
        return Err(remote_failure(&plan, "token", &t.stderr));
    }
    let token = nasprobe_proto::token::token_from_file(t.stdout.as_bytes()).map_err(|e| {
        anyhow!(
            "deploy: token: {}/token on the NAS is no token ({e}); nothing was written here",
            plan.prefix
        )
    })?;
    check_answer(&plan, a)?;
    write_private(&token_out, &[token, b"\n"].concat()).map_err(at("token"))?;
    let mut list = c.host_list()?;
    let spec = HostSpec {
        name: plan.name.clone(),
        addr: plan.reach.clone(),
        token_file: Some(token_out.clone()),
    };
    say(format!("host list: {spec}"))?;
    list.upsert(spec);
    list.save(&c.hosts_file)?;
    say(format!(
        "{} answers; record with: nasprobe record {}",
        plan.reach, plan.name
    ))
}

/// The line that says whether the agent starts at the next boot, from the install's `boot=`.
fn boot_line(plan: &Plan, boot: &str, dest: &str) -> String {
    let init = format!("{}/{}", plan.init_dir, plan.family.layout().3);
    let by_hand = format!("add `{init} start` to the NAS's boot script");
    match boot.split_once(':').unwrap_or((boot, "")) {
        ("systemd", _) => "starts at boot: systemctl enable nasprobe-agent (done)".into(),
        ("update-rc.d", _) => "starts at boot: update-rc.d nasprobe-agent defaults (done)".into(),
        ("chkconfig", _) => "starts at boot: chkconfig --add nasprobe-agent (done)".into(),
        ("rcS", link) => format!(
            "starts at boot: {}/{link} -> {} (done), run by busybox's {}/rcS",
            plan.init_dir,
            plan.family.layout().3,
            plan.init_dir
        ),
        ("dsm", _) => format!("starts at boot: DSM runs {init} start at boot"),
        ("none", "wd") => format!(
            "not started at boot: WD's firmware rebuilds / at each boot and runs no script of \
             ours; after a reboot run `nasprobe deploy {dest}` again (it only starts the agent)"
        ),
        ("none", "initdir") => format!(
            "not started at boot: --init-dir {} is not a folder this NAS's boot runs; {by_hand}",
            plan.init_dir
        ),
        ("failed", cmd) => {
            let cmd = match cmd {
                "update-rc.d" => "update-rc.d nasprobe-agent defaults",
                "chkconfig" => "chkconfig --add nasprobe-agent",
                "systemd" => "systemctl enable nasprobe-agent",
                _ => "ln -s",
            };
            format!("not started at boot: `{cmd}` failed on the NAS; run it there to see why")
        }
        _ => format!(
            "not started at boot: this NAS has no update-rc.d, no chkconfig and no {}/rcS \
             running S?? links; {by_hand}",
            plan.init_dir
        ),
    }
}

/// Logs in, probes the NAS and works out where everything goes.
fn plan(a: &DeployFlags) -> anyhow::Result<(Plan, Probe)> {
    check_dest(&a.dest)?;
    let host = a.dest.rsplit('@').next().unwrap_or(&a.dest).to_string();
    let name = a.name.clone().unwrap_or_else(|| host.clone());
    anyhow::ensure!(
        !name.is_empty()
            && name
                .chars()
                .all(|ch| ch.is_ascii_alphanumeric() || "._-".contains(ch)),
        "--name {name:?}: use letters, digits, '.', '_' and '-'"
    );
    let given_prefix = a.prefix.as_deref().map(check_prefix).transpose()?;
    let given_init = a
        .init_dir
        .as_deref()
        .map(|d| normalise("--init-dir", d))
        .transpose()?;
    anyhow::ensure!(
        !a.agent_args.chars().any(char::is_control),
        "--agent-args: control characters cannot go into an init script"
    );
    let remote = Remote::new(&a.dest, &a.ssh_opt);
    // The address ssh connects to (a `Host` alias's HostName), which the collector reaches too.
    let address = remote
        .resolve()
        .map(|r| r.hostname)
        .filter(|h| !h.starts_with('-') && !h.chars().any(char::is_whitespace))
        .unwrap_or_else(|| host.clone());
    let address = if address.contains(':') {
        format!("[{address}]")
    } else {
        address
    };
    let reach = parse_addr(
        a.reach
            .as_deref()
            .unwrap_or(&format!("{address}:{}", a.port)),
    )
    .map_err(|e| anyhow!("--reach: {e}"))?;
    let p = probe(&remote).map_err(at("ssh"))?;
    let family = a.target.unwrap_or(p.family);
    let (def_prefix, def_init, _, init_name) = family.layout();
    let prefix = given_prefix.unwrap_or_else(|| def_prefix.to_string());
    let init_dir = given_init.unwrap_or_else(|| def_init.unwrap_or(&prefix).to_string());
    anyhow::ensure!(
        format!("{init_dir}/{init_name}") != format!("{prefix}/nasprobe-agent"),
        "--init-dir {init_dir}: the init script would overwrite the agent in --prefix; pass \
         another folder"
    );
    if family == Family::Systemd {
        let words = a.agent_args.split_whitespace();
        if let Some(bad) = std::iter::once(prefix.as_str())
            .chain(words)
            .find(|w| !unit_safe(w))
        {
            bail!(
                "deploy: {:?} cannot go into a systemd unit unquoted: use letters, digits and \
                 ._/:=,+@- in --prefix and --agent-args",
                nasprobe_proto::sanitize::text(bad)
            );
        }
    }
    if !p.root && !p.sudo {
        bail!(
            "deploy: permissions: {} is not root and the NAS has no sudo: log in as root \
             (root@{host}; Synology: an administrator with sudo)",
            a.dest
        );
    }
    let vars = format!(
        "PREFIX={} INIT_DIR={} INIT_NAME={} TARGET={} RCS_LINK={RCS_LINK}\n",
        quote(&prefix),
        quote(&init_dir),
        quote(init_name),
        family.name()
    );
    let plan = Plan {
        remote,
        host,
        name,
        reach,
        family,
        prefix,
        sudo: if p.root { "" } else { "sudo -n " },
        init_dir,
        vars,
    };
    Ok((plan, p))
}

/// The agent to send: `--agent FILE`, else the one inside for the NAS's architecture.
fn agent_binary(a: &DeployFlags, arch: &str) -> anyhow::Result<Vec<u8>> {
    let triple = agents::triple_for(arch).ok_or_else(|| {
        anyhow!(
            "deploy: architecture: no agent build for {:?} (x86_64, aarch64 and armv7 are \
             supported)",
            nasprobe_proto::sanitize::text(arch)
        )
    })?;
    if let Some(f) = &a.agent {
        return std::fs::read(f).with_context(|| format!("deploy: agent: --agent {}", f.display()));
    }
    match agents::embedded(triple).map_err(at("agent"))? {
        Some(b) => Ok(b.to_vec()),
        None => bail!(
            "deploy: agent: no agent for {triple} inside: {} (inside: {})",
            agents::NONE_INSIDE,
            match agents::inside() {
                v if v.is_empty() => "none".to_string(),
                v => v.join(", "),
            }
        ),
    }
}

/// The init script (or unit) and agent.conf for this install, every value quoted for what
/// reads it: the shell sources agent.conf and runs the init script; systemd reads the unit (its
/// values were checked by `unit_safe` in `plan`).
fn render(plan: &Plan, port: u16, agent_args: &str) -> (String, String) {
    let src = plan.family.layout().2;
    if plan.family == Family::Systemd {
        let exec = format!(
            "0.0.0.0:{port} --name {}{}{}",
            plan.name,
            if agent_args.trim().is_empty() {
                ""
            } else {
                " "
            },
            agent_args.split_whitespace().collect::<Vec<_>>().join(" ")
        );
        let unit = src
            .replace("/opt/nasprobe", &plan.prefix)
            .replace("0.0.0.0:7451", &exec);
        return (unit, String::new());
    }
    let init = src
        .lines()
        .map(|l| {
            if l.starts_with("DIR=") {
                format!("DIR={}", quote(&plan.prefix))
            } else {
                l.to_string()
            }
        })
        .collect::<Vec<_>>()
        .join("\n")
        + "\n";
    let conf = format!(
        "PORT={port}\nLISTEN=0.0.0.0\nNAME={}\nARGS={}\n",
        quote(&plan.name),
        quote(agent_args)
    );
    (init, conf)
}

/// What the install did: its words, and the `boot=` it reported.
struct Installed {
    what: String,
    boot: String,
}

/// Stages the agent, the init script and agent.conf on the NAS, checks the agent's SHA-256
/// there, runs the install; what it did, in words.
fn install(a: &DeployFlags, plan: &Plan, p: &Probe, binary: &[u8]) -> anyhow::Result<Installed> {
    let stage = Stage::make(&plan.remote).map_err(at("staging"))?;
    let (init, conf) = render(plan, a.port, &a.agent_args);
    let local = LocalFiles::new(&[
        ("agent.bin", binary),
        ("init", init.as_bytes()),
        ("agent.conf", conf.as_bytes()),
    ])
    .map_err(at("staging"))?;
    for f in ["agent.bin", "init", "agent.conf"] {
        plan.remote
            .copy(&local.dir.join(f), &format!("{}/{f}", stage.path), p.scp)
            .map_err(|e| remote_failure(plan, "copy", &format!("{e:#}")))?;
    }
    if p.sha256sum {
        let sha = agents::sha256_hex(binary);
        let r = plan
            .remote
            .run(&format!("sha256sum {}/agent.bin", quote(&stage.path)), b"")?;
        let got = r.stdout.split_whitespace().next().unwrap_or("");
        if got != sha {
            bail!(
                "deploy: copy: the agent arrived damaged on the NAS (SHA-256 {}, sent {sha}): \
                 run deploy again; if it repeats, check the NAS's free space in /tmp",
                nasprobe_proto::sanitize::text(got)
            );
        }
    }
    let script = format!(
        "{}STAGE={} PORT={}\n{INSTALL}",
        plan.vars,
        quote(&stage.path),
        a.port,
    );
    let r = plan
        .remote
        .run(&format!("{}sh -s", plan.sudo), script.as_bytes())?;
    if r.code != 0 {
        return Err(install_failure(plan, a.port, &r));
    }
    let result = r.stdout.lines().rev().find(|l| l.starts_with("result="));
    let field = |k: &str| {
        result
            .and_then(|l| l.split_whitespace().find_map(|f| f.strip_prefix(k)))
            .map(|v| nasprobe_proto::sanitize::text(&v.replace('_', " ")))
            .unwrap_or_default()
    };
    let changed = field("changed=");
    let changed: Vec<&str> = changed.split(',').filter(|c| !c.is_empty()).collect();
    let (old, new) = (field("old="), field("new="));
    let what = if old.is_empty() {
        format!("installed {new}")
    } else if changed.contains(&"agent") && old == new {
        format!("replaced the agent with another build of {new}")
    } else if changed.contains(&"agent") {
        format!("upgraded: {old} -> {new}")
    } else if !changed.is_empty() {
        let words: Vec<&str> = changed
            .iter()
            .map(|c| match *c {
                "settings" => "settings (agent.conf)",
                "unit" => "systemd unit",
                _ => "init script",
            })
            .collect();
        format!("same agent ({new}), new {}: restarted", words.join(" and "))
    } else {
        format!("already installed, same version ({new})")
    };
    Ok(Installed {
        what,
        boot: field("boot="),
    })
}

/// Whether the agent answers from here, speaking this collector's protocol; nothing is written
/// here (token, host list) before it does.
fn check_answer(plan: &Plan, a: &DeployFlags) -> anyhow::Result<()> {
    let reach = &plan.reach;
    let mut answer = Err(anyhow!("no answer"));
    for _ in 0..10 {
        answer = challenge(reach);
        if answer.is_ok() {
            break;
        }
        std::thread::sleep(Duration::from_millis(300));
    }
    let kept = format!(
        "nothing was added here; the agent stays installed on the NAS (remove it: nasprobe \
         deploy --uninstall {})",
        a.dest
    );
    match answer {
        Ok(v) if v == PROTOCOL_VERSION => Ok(()),
        Ok(v) => bail!(
            "deploy: check: {reach} answers with protocol {v}, this collector speaks \
             {PROTOCOL_VERSION}: another agent holds the port; stop it or pass --port; {kept}"
        ),
        Err(e) => {
            let cause = match e.downcast_ref::<std::io::Error>() {
                Some(io) if io.kind() == std::io::ErrorKind::ConnectionRefused => format!(
                    "nothing listens on {reach} as seen from here: is {reach} the NAS? pass \
                     --reach ADDR:PORT"
                ),
                Some(io)
                    if matches!(
                        io.kind(),
                        std::io::ErrorKind::TimedOut | std::io::ErrorKind::WouldBlock
                    ) =>
                {
                    format!(
                        "no answer in 5 s: a firewall? open TCP port {} on the NAS, or pass \
                         --reach ADDR:PORT",
                        a.port
                    )
                }
                Some(_) if e.to_string().contains("resolve") || resolves_not(reach) => format!(
                    "{reach} does not resolve on this machine: pass --reach ADDR:PORT (the \
                     NAS's address)"
                ),
                _ => "pass --reach ADDR:PORT if the NAS is reached another way".to_string(),
            };
            bail!(
                "deploy: check: the agent runs on {} but {reach} does not answer from here \
                 ({}): {cause}; {kept}",
                plan.host,
                nasprobe_proto::sanitize::text(&format!("{e:#}"))
            )
        }
    }
}

/// True when `addr` gives no socket address here (a name this machine cannot resolve).
fn resolves_not(addr: &str) -> bool {
    addr.to_socket_addrs()
        .map_or(true, |mut a| a.next().is_none())
}

/// The install script's failure (its exit code says which) in one line.
fn install_failure(plan: &Plan, port: u16, r: &crate::ssh::Ran) -> anyhow::Error {
    let err = nasprobe_proto::sanitize::text(&r.stderr.replace('\n', "; "));
    match r.code {
        12 => {
            let who = match challenge(&plan.reach) {
                Ok(v) if v < PROTOCOL_VERSION => format!(
                    "an older nasprobe agent (protocol {v}) already runs there, not the one of \
                     {}: stop it (its init script's stop, or uninstall it) and deploy again",
                    plan.prefix
                ),
                Ok(_) => format!(
                    "another nasprobe agent already runs there (not installed at {}): uninstall \
                     it, or pass --prefix of that install",
                    plan.prefix
                ),
                Err(_) => "another program listens there".to_string(),
            };
            anyhow!(
                "deploy: port: port {port} is in use on {}: {who}; or pass --port",
                plan.host
            )
        }
        13 => anyhow!(
            "deploy: start: the agent did not come up: {err} (its log: {}/agent.log)",
            plan.prefix
        ),
        _ => remote_failure(plan, "install", &r.stderr),
    }
}

/// Stops the agent and removes what deploy installed, the local token and the host entry;
/// says what it found to remove (or that there was nothing).
fn uninstall(
    c: &Context,
    plan: &Plan,
    token_out: &Path,
    say: &mut dyn FnMut(String) -> anyhow::Result<()>,
) -> anyhow::Result<()> {
    let script = format!("{}{UNINSTALL}", plan.vars);
    let r = plan
        .remote
        .run(&format!("{}sh -s", plan.sudo), script.as_bytes())?;
    if r.code != 0 {
        return Err(remote_failure(plan, "uninstall", &r.stderr));
    }
    let removed = r
        .stdout
        .lines()
        .rev()
        .find_map(|l| l.strip_prefix("removed="))
        .unwrap_or("");
    let mut words: Vec<&str> = removed.split(',').collect();
    words.dedup();
    let mut did: Vec<String> = words
        .into_iter()
        .filter_map(|w| match w {
            "stopped" => Some("stopped the agent".to_string()),
            "boot" => Some("its boot entry".to_string()),
            "init" => Some(format!("the init script in {}", plan.init_dir)),
            "prefix" => Some(plan.prefix.clone()),
            _ => None,
        })
        .collect();
    match std::fs::remove_file(token_out) {
        Ok(()) => did.push(format!("the token here ({})", token_out.display())),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
        Err(e) => return Err(anyhow!("deploy: uninstall: {}: {e}", token_out.display())),
    }
    let mut list = c.host_list()?;
    if list.remove(&plan.name) {
        list.save(&c.hosts_file)?;
        did.push(format!("host {} from the host list", plan.name));
    }
    if did.is_empty() {
        return say(format!(
            "nothing to remove: no nasprobe-agent at {} on {}, no token here and no host {} in \
             the list",
            plan.prefix, plan.remote.dest, plan.name
        ));
    }
    say(format!("removed: {}", did.join(", ")))
}

/// The protocol version of the agent answering at `addr`: its first frame is a Challenge
/// (u32 LE length, the version byte, variant 0).
fn challenge(addr: &str) -> anyhow::Result<u8> {
    let sa = addr
        .to_socket_addrs()?
        .next()
        .ok_or_else(|| anyhow!("{addr} resolves to nothing"))?;
    let mut s = TcpStream::connect_timeout(&sa, Duration::from_secs(5))?;
    s.set_read_timeout(Some(Duration::from_secs(5)))?;
    let mut head = [0u8; 6];
    s.read_exact(&mut head)?;
    let len = u32::from_le_bytes([head[0], head[1], head[2], head[3]]);
    anyhow::ensure!(
        (8..=256).contains(&len) && head[5] == 0,
        "{addr} does not speak the nasprobe protocol"
    );
    Ok(head[4])
}

/// Writes a token file of mode 0600 (the rules both sides read tokens by).
fn write_private(path: &Path, bytes: &[u8]) -> anyhow::Result<()> {
    if let Some(d) = path.parent() {
        std::fs::create_dir_all(d).with_context(|| format!("cannot create {}", d.display()))?;
    }
    let tmp = path.with_extension("tmp");
    let mut o = std::fs::OpenOptions::new();
    o.write(true).create(true).truncate(true);
    #[cfg(unix)]
    std::os::unix::fs::OpenOptionsExt::mode(&mut o, 0o600);
    let mut f = o
        .open(&tmp)
        .with_context(|| format!("cannot write {}", tmp.display()))?;
    f.write_all(bytes)?;
    drop(f);
    std::fs::rename(&tmp, path).with_context(|| format!("cannot write {}", path.display()))
}

/// The staging folder on the NAS (/tmp), removed when dropped.
struct Stage<'a> {
    remote: &'a Remote,
    path: String,
}

impl<'a> Stage<'a> {
    fn make(remote: &'a Remote) -> anyhow::Result<Self> {
        let r = remote.run("mktemp -d /tmp/nasprobe-deploy.XXXXXX", b"")?;
        let path = r.stdout.trim().to_string();
        anyhow::ensure!(
            r.code == 0 && path.starts_with("/tmp/nasprobe-deploy."),
            "cannot make a folder in the NAS's /tmp: {}",
            nasprobe_proto::sanitize::text(&r.stderr)
        );
        Ok(Stage { remote, path })
    }
}

impl Drop for Stage<'_> {
    fn drop(&mut self) {
        self.remote
            .run(&format!("rm -rf {}", quote(&self.path)), b"")
            .ok();
    }
}

/// The files to send, in a private local temp folder removed when dropped.
struct LocalFiles {
    dir: PathBuf,
}

impl LocalFiles {
    fn new(files: &[(&str, &[u8])]) -> anyhow::Result<Self> {
        let dir = std::env::temp_dir().join(format!(
            "nasprobe-deploy-{}-{}",
            std::process::id(),
            &agents::sha256_hex(&crate::token::random_bytes())[..8]
        ));
        std::fs::create_dir_all(&dir)
            .with_context(|| format!("cannot create {}", dir.display()))?;
        let me = LocalFiles { dir };
        for (name, bytes) in files {
            std::fs::write(me.dir.join(name), bytes)?;
        }
        Ok(me)
    }
}

impl Drop for LocalFiles {
    fn drop(&mut self) {
        std::fs::remove_dir_all(&self.dir).ok();
    }
}

#[cfg(test)]
mod tests;
