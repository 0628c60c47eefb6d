//! `nasprobe deploy USER@HOST`: puts the agent on a NAS with the system's OpenSSH (`ssh`)
//! — detects the architecture and the family (Synology DSM, WD My Cloud, systemd, plain SysV),
//! copies the static agent (embedded: `agents`; or `--agent FILE`) and checks its
//! SHA-256 there, installs and starts the family's init script (targets/), fetches the token and
//! adds the host to the host list. Running it again changes nothing that is right (or upgrades);
//! `--uninstall` removes it all. Each failure is one line: the step, what happened, the remedy.
//! The shell run on the NAS is in targets/deploy/ (probe, install, uninstall).

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
use crate::ssh::{Remote, quote};

const PROBE: &str = include_str!("../../../targets/deploy/probe.sh");
const INSTALL: &str = include_str!("../../../targets/deploy/install.sh");
const UNINSTALL: &str = include_str!("../../../targets/deploy/uninstall.sh");
const SYSV_INIT: &str = include_str!("../../../targets/sysv/nasprobe-agent");
const SYSTEMD_UNIT: &str = include_str!("../../../targets/systemd/nasprobe-agent.service");

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
            r.stderr
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
    let how = install(a, &plan, &p, &binary)?;
    say(format!(
        "{how}; running on port {}, starts at boot ({})",
        a.port,
        plan.family.name()
    ))?;

    // --- token and host list -------------------------------------------------------------------
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
    write_private(&token_out, t.stdout.as_bytes()).map_err(at("token"))?;
    let mut list = c.host_list()?;
    let spec = HostSpec {
        name: plan.name.clone(),
        addr: plan.reach.clone(),
        token_file: Some(token_out.clone()),
    };
    say(format!("host list: {spec}"))?;
    list.upsert(spec);
    list.save(&c.hosts_file)?;
    check_answer(&plan, a.port)?;
    say(format!(
        "{} answers; record with: nasprobe record {}",
        plan.reach, plan.name
    ))
}

/// Logs in, probes the NAS and works out where everything goes.
fn plan(a: &DeployFlags) -> anyhow::Result<(Plan, Probe)> {
    let host = a.dest.rsplit('@').next().unwrap_or(&a.dest).to_string();
    let name = a.name.clone().unwrap_or_else(|| host.clone());
    anyhow::ensure!(
        !name.is_empty()
            && name
                .chars()
                .all(|ch| ch.is_ascii_alphanumeric() || "._-".contains(ch)),
        "--name {name:?}: use letters, digits, '.', '_' and '-'"
    );
    let reach = parse_addr(a.reach.as_deref().unwrap_or(&format!("{host}:{}", a.port)))
        .map_err(|e| anyhow!("--reach: {e}"))?;
    let remote = Remote::new(&a.dest, &a.ssh_opt);
    let p = probe(&remote).map_err(at("ssh"))?;
    let family = a.target.unwrap_or(p.family);
    let (def_prefix, def_init, _, init_name) = family.layout();
    let prefix = a.prefix.clone().unwrap_or_else(|| def_prefix.to_string());
    anyhow::ensure!(
        prefix.starts_with('/') && prefix.trim_end_matches('/').matches('/').count() >= 2
            || prefix == "/opt/nasprobe",
        "--prefix {prefix:?}: an absolute path two levels deep (it is removed by --uninstall)"
    );
    let init_dir = a
        .init_dir
        .clone()
        .unwrap_or_else(|| def_init.unwrap_or(&prefix).to_string());
    if !p.root && !p.sudo {
        bail!(
            "deploy: permissions: {} is not root and the NAS has no sudo: log in as root              (root@{host}; Synology: an administrator with sudo)",
            a.dest
        );
    }
    let vars = format!(
        "PREFIX={} INIT_DIR={} INIT_NAME={} TARGET={}\n",
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

/// Stages the agent and the init script on the NAS, checks the agent's SHA-256 there, runs the
/// install; what it did, in words.
fn install(a: &DeployFlags, plan: &Plan, p: &Probe, binary: &[u8]) -> anyhow::Result<String> {
    let stage = Stage::make(&plan.remote).map_err(at("staging"))?;
    let init_src = plan.family.layout().2;
    let local = LocalFiles::new(&[("agent.bin", binary), ("init.src", init_src.as_bytes())])
        .map_err(at("staging"))?;
    for f in ["agent.bin", "init.src"] {
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
        "{}STAGE={} PORT={} NAME={} AGENT_ARGS={}\n{INSTALL}",
        plan.vars,
        quote(&stage.path),
        a.port,
        quote(&plan.name),
        quote(&a.agent_args)
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
    Ok(match field("result=").as_str() {
        "same" => format!("already installed, same version ({})", field("new=")),
        "upgraded" if field("old=") == field("new=") => {
            format!("replaced the agent with another build of {}", field("new="))
        }
        "upgraded" => format!("upgraded: {} -> {}", field("old="), field("new=")),
        _ => format!("installed {}", field("new=")),
    })
}

/// Whether the agent answers from here, speaking this collector's protocol.
fn check_answer(plan: &Plan, port: u16) -> anyhow::Result<()> {
    let reach = &plan.reach;
    let mut answer = Err(anyhow!("no answer"));
    for _ in 0..10 {
        answer = challenge(reach);
        if answer.is_ok() {
            break;
        }
        std::thread::sleep(Duration::from_millis(300));
    }
    match answer {
        Ok(v) if v == PROTOCOL_VERSION => Ok(()),
        Ok(v) => bail!(
            "deploy: check: {reach} answers with protocol {v}, this collector speaks \
             {PROTOCOL_VERSION}: another agent holds the port; stop it or pass --port"
        ),
        Err(e) => bail!(
            "deploy: check: the agent runs on {} but {reach} does not answer from here ({e:#}): \
             a firewall? open TCP port {port} on the NAS, or pass --reach ADDR:PORT",
            plan.host
        ),
    }
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

/// Stops the agent and removes what deploy installed, the local token and the host entry.
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
    match std::fs::remove_file(token_out) {
        Ok(()) => {}
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
        Err(e) => return Err(anyhow!("deploy: uninstall: {}: {e}", token_out.display())),
    }
    let mut list = c.host_list()?;
    if list.remove(&plan.name) {
        list.save(&c.hosts_file)?;
    }
    say(format!(
        "removed nasprobe-agent from {} (prefix {}), its token here and host {} from the list",
        plan.remote.dest, plan.prefix, plan.name
    ))
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
            r.stderr
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
