//! `watch --local`: runs `nasprobe-agent` for this machine on 127.0.0.1, a free port and a
//! fresh token in a private temp dir, so a new user sees real figures with no NAS at hand.
//!
//! The agent binary is looked up, in order: `$NASPROBE_AGENT`; next to this executable (a release
//! bundle, an install prefix, the same cargo target dir); `PATH`. Nothing is built at run time:
//! when it is not found, one line says how to get it.

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use anyhow::{Context, bail};

/// A running local agent; killed and cleaned up on drop.
pub struct LocalAgent {
    child: Child,
    dir: PathBuf,
    pub addr: String,
    pub token_file: PathBuf,
    /// The agent's log (nasprobe's own file, not a transfer's).
    pub log: PathBuf,
}

impl Drop for LocalAgent {
    fn drop(&mut self) {
        self.child.kill().ok();
        self.child.wait().ok();
        std::fs::remove_dir_all(&self.dir).ok();
    }
}

const AGENT: &str = "nasprobe-agent";

fn on_path(name: &str) -> Option<PathBuf> {
    std::env::var_os("PATH").and_then(|p| {
        std::env::split_paths(&p)
            .map(|d| d.join(name))
            .find(|f| f.is_file())
    })
}

/// Finds the agent binary (see the module doc for where it looks).
pub(crate) fn find_agent() -> anyhow::Result<PathBuf> {
    if let Some(p) = std::env::var_os("NASPROBE_AGENT") {
        let p = PathBuf::from(p);
        anyhow::ensure!(p.is_file(), "NASPROBE_AGENT={} is not a file", p.display());
        return Ok(p);
    }
    let exe = std::env::current_exe().context("cannot find this executable's path")?;
    let exe_dir = exe.parent().map(Path::to_path_buf).unwrap_or_default();
    // Test binaries live in target/<profile>/deps: look one level up too.
    for d in [exe_dir.clone(), exe_dir.join("..")] {
        let p = d.join(AGENT);
        if p.is_file() {
            return Ok(p);
        }
    }
    if let Some(p) = on_path(AGENT) {
        return Ok(p);
    }
    bail!(
        "{AGENT} not found next to {} nor on PATH: put it beside nasprobe (the release bundle \
         has both), or build it (cargo build --release -p {AGENT}), or set NASPROBE_AGENT=PATH",
        exe_dir.display()
    )
}

fn free_port() -> anyhow::Result<u16> {
    let l = std::net::TcpListener::bind("127.0.0.1:0").context("no free port on 127.0.0.1")?;
    Ok(l.local_addr()?.port())
}

/// Starts the local agent.
pub fn start() -> anyhow::Result<LocalAgent> {
    if !cfg!(target_os = "linux") {
        bail!(
            "--local runs nasprobe-agent on this machine, and the agent reads Linux's /proc and \
             /sys: it runs on Linux NAS boxes. Start nasprobe-agent on your NAS and run \
             'nasprobe watch NAS_ADDRESS'"
        );
    }
    let bin = find_agent()?;
    let dir = std::env::temp_dir().join(format!(
        "nasprobe-local-{}-{:08x}",
        std::process::id(),
        u32::from_le_bytes(
            crate::token::random_bytes()[..4]
                .try_into()
                .expect("4 bytes")
        )
    ));
    create_private_dir(&dir)?;
    let token_file = dir.join("token");
    crate::token::create(&token_file)?;
    let port = free_port()?;
    let addr = format!("127.0.0.1:{port}");
    let log = dir.join("agent.log");
    let child = Command::new(&bin)
        .args(["--listen", &addr, "--token-file"])
        .arg(&token_file)
        .arg("--log-file")
        .arg(&log)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .with_context(|| format!("cannot start {}", bin.display()))?;
    let mut agent = LocalAgent {
        child,
        dir,
        addr: addr.clone(),
        token_file,
        log: log.clone(),
    };
    // Wait until it listens (or died).
    let t0 = Instant::now();
    while t0.elapsed() < Duration::from_secs(5) {
        if let Some(st) = agent.child.try_wait()? {
            let text = std::fs::read_to_string(&log).unwrap_or_default();
            bail!("{} exited at start ({st}): {}", bin.display(), text.trim());
        }
        if std::net::TcpStream::connect(&addr).is_ok() {
            return Ok(agent);
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    bail!("{} did not listen on {addr} within 5 s", bin.display())
}

fn create_private_dir(dir: &Path) -> anyhow::Result<()> {
    #[cfg(unix)]
    {
        use std::os::unix::fs::DirBuilderExt;
        std::fs::DirBuilder::new()
            .mode(0o700)
            .create(dir)
            .with_context(|| format!("cannot create {}", dir.display()))
    }
    #[cfg(not(unix))]
    std::fs::create_dir(dir).with_context(|| format!("cannot create {}", dir.display()))
}
