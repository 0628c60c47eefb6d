//! `watch --local`: runs `nasprobe-agent` for this machine on 127.0.0.1, a free port and a
//! fresh token in a private temp dir, so a new user sees real figures with no NAS at hand.
//!
//! The agent binary is looked up, in order: `$NASPROBE_AGENT`; next to this executable (the
//! same cargo target dir, or an install prefix); `PATH`. When it is missing and this binary was
//! built by cargo from the workspace (so `cargo run --release -p nasprobe -- watch --local`),
//! the agent is built once into the same target dir with `cargo build -p nasprobe-agent`.

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

/// Finds the agent binary, building it with cargo when this is a workspace build.
pub fn find_agent() -> anyhow::Result<PathBuf> {
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
    build_agent(&exe_dir)
}

fn build_agent(exe_dir: &Path) -> anyhow::Result<PathBuf> {
    let hint = "build it with: cargo build --release -p nasprobe-agent \
                (or set NASPROBE_AGENT=/path/to/nasprobe-agent)";
    let workspace = Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
    let profile_dir = exe_dir;
    let profile = profile_dir
        .file_name()
        .and_then(|n| n.to_str())
        .unwrap_or_default()
        .to_string();
    let target_dir = profile_dir.parent();
    if !workspace.join("agent/Cargo.toml").is_file()
        || !(profile == "release" || profile == "debug")
        || target_dir.is_none()
    {
        bail!(
            "{AGENT} not found next to {} nor on PATH; {hint}",
            exe_dir.display()
        );
    }
    let cargo = std::env::var_os("CARGO").unwrap_or_else(|| "cargo".into());
    eprintln!(
        "nasprobe: {AGENT} is not built yet; building it once (cargo build{} -p nasprobe-agent)...",
        if profile == "release" {
            " --release"
        } else {
            ""
        }
    );
    let mut cmd = Command::new(&cargo);
    cmd.current_dir(&workspace)
        .args(["build", "-p", "nasprobe-agent"])
        .env("CARGO_TARGET_DIR", target_dir.expect("checked"));
    if profile == "release" {
        cmd.arg("--release");
    }
    let st = cmd
        .status()
        .with_context(|| format!("cannot run cargo to build {AGENT}; {hint}"))?;
    anyhow::ensure!(st.success(), "building {AGENT} failed; {hint}");
    let p = profile_dir.join(AGENT);
    anyhow::ensure!(p.is_file(), "cargo built no {}; {hint}", p.display());
    Ok(p)
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
            crate::client::random_nonce()[..4]
                .try_into()
                .expect("4 bytes")
        )
    ));
    create_private_dir(&dir)?;
    let token_file = dir.join("token");
    write_token(&token_file)?;
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

fn write_token(path: &Path) -> anyhow::Result<()> {
    let n = crate::client::random_nonce();
    let hex: String = n.iter().map(|b| format!("{b:02x}")).collect();
    let mut o = std::fs::OpenOptions::new();
    o.write(true).create_new(true);
    #[cfg(unix)]
    {
        use std::os::unix::fs::OpenOptionsExt;
        o.mode(0o600);
    }
    use std::io::Write;
    o.open(path)
        .and_then(|mut f| f.write_all(format!("{hex}\n").as_bytes()))
        .with_context(|| format!("cannot write {}", path.display()))
}
