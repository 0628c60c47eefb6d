//! The system's OpenSSH (`ssh`, `scp`; Linux, macOS and Windows 10+ ship both) as `nasprobe
//! deploy` uses it: batch mode (keys, no password prompts), the user's `-o` options, remote
//! shell programs fed on stdin, files copied by scp or `cat >` when the NAS has no scp, and
//! ssh's own failures turned into one line with the remedy. `NASPROBE_SSH` / `NASPROBE_SCP`
//! name other programs (a wrapper, a full path).
//!
//! The NAS is not trusted: every answer is read up to [`MAX_ANSWER_BYTES`] and every step has a
//! deadline ([`STEP_DEADLINE`], [`COPY_DEADLINE`]; `NASPROBE_SSH_DEADLINE` seconds overrides
//! both); `--` comes before the destination in every ssh and scp call, and a destination that
//! starts with `-` is refused before any is run.

use std::io::{Read as _, Write as _};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::mpsc;
use std::time::{Duration, Instant};

use anyhow::{Context as _, bail};

/// Most bytes deploy reads of one answer (stdout or stderr) of the NAS: the probe, the token, a
/// checksum and the install's result are a few lines; a NAS that sends more is cut off and the
/// step fails (a hostile one sent 1 GiB).
pub(crate) const MAX_ANSWER_BYTES: usize = 64 * 1024;
/// How long one remote command may take: the install waits 10 s for the agent, the init script
/// 5 s more; a login is 10 s (ConnectTimeout).
pub(crate) const STEP_DEADLINE: Duration = Duration::from_secs(60);
/// How long a copy of the agent may take: a few MB over a slow NAS's ssh (dropbear on one ARM
/// core moves ~2 MB/s).
pub(crate) const COPY_DEADLINE: Duration = Duration::from_secs(300);

/// One `USER@HOST` and the options every ssh and scp to it gets. On Unix the connections share
/// one master connection (ControlMaster, in a private folder), so a deploy logs in once; the
/// master ends when this is dropped (or 30 s after, if this process dies).
pub(crate) struct Remote {
    pub dest: String,
    opts: Vec<String>,
    control: Option<PathBuf>,
}

/// What one remote command did.
pub(crate) struct Ran {
    pub code: i32,
    pub stdout: String,
    pub stderr: String,
}

/// Single-quotes a string for the remote POSIX shell.
pub(crate) fn quote(s: &str) -> String {
    format!("'{}'", s.replace('\'', r"'\''"))
}

/// The deadline `d`, or `NASPROBE_SSH_DEADLINE` seconds when set (tests of a NAS that hangs).
fn deadline(d: Duration) -> Duration {
    std::env::var("NASPROBE_SSH_DEADLINE")
        .ok()
        .and_then(|s| s.parse::<u64>().ok())
        .map_or(d, Duration::from_secs)
}

/// Whether `dest` may be handed to ssh: not an option, no spaces or control characters.
pub(crate) fn check_dest(dest: &str) -> anyhow::Result<()> {
    anyhow::ensure!(
        !dest.is_empty()
            && !dest.starts_with('-')
            && !dest.chars().any(|c| c.is_whitespace() || c.is_control()),
        "deploy: {:?} is not a USER@HOST: it must not start with '-' or hold spaces or \
         control characters",
        nasprobe_proto::sanitize::text(dest)
    );
    Ok(())
}

/// What ssh's configuration makes of a destination (`ssh -G`): the address it connects to,
/// the port and the user.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Resolved {
    pub hostname: String,
    pub port: u16,
    pub user: String,
}

/// Parses `ssh -G`'s output (`key value` lines).
pub(crate) fn parse_ssh_g(out: &str) -> Option<Resolved> {
    let get = |k: &str| {
        out.lines().find_map(|l| {
            let (key, v) = l.split_once(' ')?;
            (key == k).then(|| v.trim().to_string())
        })
    };
    Some(Resolved {
        hostname: get("hostname").filter(|h| !h.is_empty())?,
        port: get("port")?.parse().ok()?,
        user: get("user").unwrap_or_default(),
    })
}

/// Runs a spawned child to its end within `limit`, its stdin fed `input` and its stdout and
/// stderr read up to [`MAX_ANSWER_BYTES`] each; killed when it sends more or takes longer.
fn finish(mut child: Child, input: &[u8], limit: Duration, what: &str) -> anyhow::Result<Ran> {
    if let Some(mut stdin) = child.stdin.take() {
        // Written from a thread: a remote command that fails early stops reading.
        let input = input.to_vec();
        std::thread::spawn(move || stdin.write_all(&input).ok());
    }
    let (tx, rx) = mpsc::channel();
    let pipes: [(usize, Option<Box<dyn std::io::Read + Send>>); 2] = [
        (0, child.stdout.take().map(|p| Box::new(p) as _)),
        (1, child.stderr.take().map(|p| Box::new(p) as _)),
    ];
    for (i, pipe) in pipes {
        let tx = tx.clone();
        std::thread::spawn(move || {
            let mut buf = Vec::new();
            if let Some(p) = pipe {
                p.take(MAX_ANSWER_BYTES as u64 + 1)
                    .read_to_end(&mut buf)
                    .ok();
            }
            tx.send((i, buf)).ok();
        });
    }
    let end = Instant::now() + limit;
    let mut got: [Option<Vec<u8>>; 2] = [None, None];
    for _ in 0..2 {
        let left = end.saturating_duration_since(Instant::now());
        let Ok((i, buf)) = rx.recv_timeout(left) else {
            child.kill().ok();
            child.wait().ok();
            bail!(
                "{what} gave no complete answer in {} s: the NAS hangs (or the link is too \
                 slow); check it with `ssh` by hand",
                limit.as_secs()
            );
        };
        if buf.len() > MAX_ANSWER_BYTES {
            child.kill().ok();
            child.wait().ok();
            bail!(
                "{what} answered more than {} KiB, far more than deploy asks for: is it a \
                 NAS running a POSIX shell? (cut off there)",
                MAX_ANSWER_BYTES / 1024
            );
        }
        got[i] = Some(buf);
    }
    let status = child.wait().context("ssh")?;
    let [out, err] = got.map(Option::unwrap_or_default);
    Ok(Ran {
        code: status.code().unwrap_or(-1),
        stdout: String::from_utf8_lossy(&out).into_owned(),
        stderr: String::from_utf8_lossy(&err).trim().to_string(),
    })
}

fn program(var: &str, default: &str) -> String {
    std::env::var(var)
        .ok()
        .filter(|s| !s.is_empty())
        .unwrap_or_else(|| default.to_string())
}

/// A spawn that failed because the program is not there.
fn missing(e: &std::io::Error, what: &str) -> anyhow::Error {
    if e.kind() == std::io::ErrorKind::NotFound {
        anyhow::anyhow!(
            "no `{what}` on this machine: install OpenSSH's client (Windows: Settings > Apps > \
             Optional features > OpenSSH Client; Debian/Ubuntu: apt install openssh-client; \
             macOS has it)"
        )
    } else {
        anyhow::anyhow!("cannot run {what}: {e}")
    }
}

impl Remote {
    pub(crate) fn new(dest: &str, user_opts: &[String]) -> Self {
        // ssh takes the first value of an option: the user's come first.
        let mut opts = user_opts.to_vec();
        opts.extend(["BatchMode=yes".to_string(), "ConnectTimeout=10".to_string()]);
        let control = control_dir();
        if let Some(dir) = &control {
            opts.extend([
                "ControlMaster=auto".to_string(),
                format!("ControlPath={}/%C", dir.display()),
                "ControlPersist=30".to_string(),
            ]);
        }
        Remote {
            dest: dest.to_string(),
            opts,
            control,
        }
    }

    fn opt_args(&self) -> Vec<String> {
        self.opts
            .iter()
            .flat_map(|o| ["-o".to_string(), o.clone()])
            .collect()
    }

    /// Runs `cmd` on the NAS with `input` on its stdin. ssh's own failures (exit 255: no route,
    /// refused, permission denied, host key) are an error naming the remedy; the remote
    /// command's exit status is the caller's to read.
    pub(crate) fn run(&self, cmd: &str, input: &[u8]) -> anyhow::Result<Ran> {
        self.run_within(cmd, input, deadline(STEP_DEADLINE))
    }

    /// [`Remote::run`] with its own deadline.
    fn run_within(&self, cmd: &str, input: &[u8], limit: Duration) -> anyhow::Result<Ran> {
        let ssh = program("NASPROBE_SSH", "ssh");
        let child = Command::new(&ssh)
            .args(self.opt_args())
            .arg("--")
            .arg(&self.dest)
            .arg(cmd)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .map_err(|e| missing(&e, &ssh))?;
        let ran = finish(child, input, limit, &self.dest)?;
        if ran.code == 255 {
            bail!("{}", self.ssh_failure(&ran.stderr));
        }
        Ok(ran)
    }

    /// What ssh's configuration makes of the destination (`ssh -G`, which reads
    /// ~/.ssh/config: a `Host` alias gives its HostName, Port and User); None when this ssh
    /// cannot say (an old one, a wrapper).
    pub(crate) fn resolve(&self) -> Option<Resolved> {
        let ssh = program("NASPROBE_SSH", "ssh");
        let child = Command::new(&ssh)
            .arg("-G")
            .args(self.opt_args())
            .arg("--")
            .arg(&self.dest)
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .ok()?;
        let ran = finish(child, b"", deadline(STEP_DEADLINE), "ssh -G").ok()?;
        if ran.code != 0 {
            return None;
        }
        parse_ssh_g(&ran.stdout)
    }

    /// ssh's own error in words, with what to do.
    fn ssh_failure(&self, err: &str) -> String {
        let host = self.dest.rsplit('@').next().unwrap_or(&self.dest);
        let last = err.lines().last().unwrap_or("").trim();
        let last = nasprobe_proto::sanitize::text(last);
        if err.contains("Permission denied") {
            format!(
                "{} refused the login ({last}): deploy logs in with a key, never a password; \
                 put yours on the NAS (ssh-copy-id {}) or name it (--ssh-opt IdentityFile=KEY)",
                self.dest, self.dest
            )
        } else if err.contains("Host key verification failed") {
            format!(
                "{host}'s host key is not known here: connect once with `ssh {}` and accept it, \
                 or pass --ssh-opt StrictHostKeyChecking=accept-new",
                self.dest
            )
        } else {
            format!(
                "cannot reach {host} over ssh ({last}): turn SSH on in the NAS's settings \
                 (Synology: Control Panel > Terminal & SNMP; WD: Settings > Network > SSH), \
                 check the address, or pass --ssh-opt Port=N"
            )
        }
    }

    /// Copies a local file to `remote` (a path on the NAS): scp when both sides have it, else
    /// `cat > FILE` through ssh.
    pub(crate) fn copy(&self, local: &Path, remote: &str, nas_has_scp: bool) -> anyhow::Result<()> {
        if nas_has_scp && self.scp(local, remote)? {
            return Ok(());
        }
        let bytes =
            std::fs::read(local).with_context(|| format!("cannot read {}", local.display()))?;
        let r = self.run_within(
            &format!("cat > {}", quote(remote)),
            &bytes,
            deadline(COPY_DEADLINE),
        )?;
        anyhow::ensure!(r.code == 0, "{}", r.stderr);
        Ok(())
    }

    /// scp (the legacy protocol, `-O`, which busybox and dropbear boxes speak, when this scp
    /// knows it); false when there is no scp here or it failed for another reason than ssh.
    fn scp(&self, local: &Path, remote: &str) -> anyhow::Result<bool> {
        let scp = program("NASPROBE_SCP", "scp");
        let legacy = Command::new(&scp)
            .arg("-O")
            .stderr(Stdio::piped())
            .stdout(Stdio::null())
            .output();
        let Ok(probe) = legacy else {
            return Ok(false); // no scp here: cat does it
        };
        let mut cmd = Command::new(&scp);
        cmd.arg("-q");
        if !String::from_utf8_lossy(&probe.stderr).contains("unknown option") {
            cmd.arg("-O");
        }
        let child = cmd
            .args(self.opt_args())
            .arg("--")
            .arg(local)
            .arg(format!("{}:{remote}", self.dest))
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .map_err(|e| missing(&e, &scp))?;
        let out = finish(child, b"", deadline(COPY_DEADLINE), &self.dest)?;
        if out.code == 0 {
            return Ok(true);
        }
        log::info!(
            "scp failed ({}), copying with cat",
            nasprobe_proto::sanitize::text(&out.stderr)
        );
        Ok(false)
    }
}

impl Drop for Remote {
    fn drop(&mut self) {
        if let Some(dir) = &self.control {
            Command::new(program("NASPROBE_SSH", "ssh"))
                .args(self.opt_args())
                .args(["-O", "exit", "--"])
                .arg(&self.dest)
                .stdin(Stdio::null())
                .stdout(Stdio::null())
                .stderr(Stdio::null())
                .status()
                .ok();
            std::fs::remove_dir_all(dir).ok();
        }
    }
}

/// A private folder for the master connection's socket (Unix; Windows' OpenSSH has none).
fn control_dir() -> Option<PathBuf> {
    if !cfg!(unix) {
        return None;
    }
    // Short: a Unix socket path has ~100 bytes.
    let dir = std::env::temp_dir().join(format!("nasprobe-ssh-{}", std::process::id()));
    #[cfg(unix)]
    let b = {
        let mut b = std::fs::DirBuilder::new();
        std::os::unix::fs::DirBuilderExt::mode(&mut b, 0o700);
        b
    };
    #[cfg(not(unix))]
    let b = std::fs::DirBuilder::new();
    b.create(&dir).ok().map(|()| dir)
}

#[cfg(test)]
mod tests {
    #[test]
    fn ssh_g_gives_the_alias_address() {
        let out = "user root\nhostname 192.0.2.7\nport 2222\naddressfamily any\n";
        assert_eq!(
            super::parse_ssh_g(out),
            Some(super::Resolved {
                hostname: "192.0.2.7".into(),
                port: 2222,
                user: "root".into()
            })
        );
        assert_eq!(super::parse_ssh_g("user root\n"), None);
        assert!(super::check_dest("-oProxyCommand=x").is_err());
        assert!(super::check_dest("root@nas1").is_ok());
        assert!(super::check_dest("a b").is_err());
    }

    #[test]
    fn quoting() {
        assert_eq!(super::quote("a b"), "'a b'");
        assert_eq!(super::quote("it's"), r"'it'\''s'");
    }
}
