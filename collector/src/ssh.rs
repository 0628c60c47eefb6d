//! The system's OpenSSH (`ssh`, `scp`; Linux, macOS and Windows 10+ ship both) as `nasprobe
//! deploy` uses it: batch mode (keys, no password prompts), the user's `-o` options, remote
//! shell programs fed on stdin, files copied by scp or `cat >` when the NAS has no scp, and
//! ssh's own failures turned into one line with the remedy. `NASPROBE_SSH` / `NASPROBE_SCP`
//! name other programs (a wrapper, a full path).

use std::io::Write as _;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use anyhow::{Context as _, bail};

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
        let ssh = program("NASPROBE_SSH", "ssh");
        let mut child = Command::new(&ssh)
            .args(self.opt_args())
            .arg(&self.dest)
            .arg(cmd)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .map_err(|e| missing(&e, &ssh))?;
        let mut stdin = child.stdin.take().expect("piped stdin");
        // Written from a thread: a remote command that fails early stops reading.
        let input = input.to_vec();
        let writer = std::thread::spawn(move || stdin.write_all(&input).ok());
        let out = child.wait_with_output().context("ssh")?;
        writer.join().ok();
        let ran = Ran {
            code: out.status.code().unwrap_or(-1),
            stdout: String::from_utf8_lossy(&out.stdout).into_owned(),
            stderr: String::from_utf8_lossy(&out.stderr).trim().to_string(),
        };
        if ran.code == 255 {
            bail!("{}", self.ssh_failure(&ran.stderr));
        }
        Ok(ran)
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
        let r = self.run(&format!("cat > {}", quote(remote)), &bytes)?;
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
        let out = cmd
            .args(self.opt_args())
            .arg(local)
            .arg(format!("{}:{remote}", self.dest))
            .stdin(Stdio::null())
            .output()
            .map_err(|e| missing(&e, &scp))?;
        if out.status.success() {
            return Ok(true);
        }
        log::info!(
            "scp failed ({}), copying with cat",
            String::from_utf8_lossy(&out.stderr).trim()
        );
        Ok(false)
    }
}

impl Drop for Remote {
    fn drop(&mut self) {
        if let Some(dir) = &self.control {
            Command::new(program("NASPROBE_SSH", "ssh"))
                .args(self.opt_args())
                .args(["-O", "exit"])
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
    fn quoting() {
        assert_eq!(super::quote("a b"), "'a b'");
        assert_eq!(super::quote("it's"), r"'it'\''s'");
    }
}
