//! Hosts: parsing of host arguments and the host list file in the user's config dir.
//!
//! A host argument is `NAME=ADDR[:PORT]` (a label), `ADDR[:PORT]` (labelled by itself), or the
//! NAME of an entry in the host list file. `ADDR` may be a DNS name, an IPv4 address or an IPv6
//! address in brackets (`[::1]:7451`); a bare IPv6 address without port is accepted too.
//!
//! The host list file holds one host per line: `NAME ADDR:PORT [TOKEN_FILE]`; `#` starts a
//! comment. `nasprobe hosts add|list|remove` edits it.

use std::fmt;
use std::path::{Path, PathBuf};

use nasprobe_proto::DEFAULT_PORT;

/// One agent to talk to.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HostSpec {
    /// The label: how the host is called in the store and on screen.
    pub name: String,
    /// `host:port` ready for connecting (IPv6 in brackets).
    pub addr: String,
    /// Token file for this host; `None` means the common `--token-file`.
    pub token_file: Option<PathBuf>,
}

#[derive(Debug, thiserror::Error, PartialEq, Eq)]
#[non_exhaustive]
pub enum HostArgError {
    #[error("empty host argument")]
    Empty,
    #[error("host label in {0:?} is empty")]
    EmptyName(String),
    #[error("host label {0:?} may not contain spaces or '='")]
    BadName(String),
    #[error("no address in host argument {0:?}")]
    NoAddress(String),
    #[error("bad port in host argument {0:?} (want 1-65535)")]
    BadPort(String),
    #[error("bad address in host argument {0:?}")]
    BadAddress(String),
}

fn check_name(name: &str, arg: &str) -> Result<(), HostArgError> {
    if name.is_empty() {
        return Err(HostArgError::EmptyName(arg.to_string()));
    }
    if name.chars().any(|c| c.is_whitespace() || c == '=') {
        return Err(HostArgError::BadName(name.to_string()));
    }
    Ok(())
}

fn parse_port(p: &str, arg: &str) -> Result<u16, HostArgError> {
    match p.parse::<u16>() {
        Ok(0) | Err(_) => Err(HostArgError::BadPort(arg.to_string())),
        Ok(n) => Ok(n),
    }
}

/// Normalizes `ADDR[:PORT]` into `host:port` (default port 7451).
pub(crate) fn parse_addr(s: &str) -> Result<String, HostArgError> {
    let s = s.trim();
    if s.is_empty() {
        return Err(HostArgError::NoAddress(s.to_string()));
    }
    if let Some(rest) = s.strip_prefix('[') {
        let (ip, after) = rest
            .split_once(']')
            .ok_or_else(|| HostArgError::BadAddress(s.to_string()))?;
        if ip.is_empty() || ip.parse::<std::net::Ipv6Addr>().is_err() {
            return Err(HostArgError::BadAddress(s.to_string()));
        }
        let port = match after {
            "" => DEFAULT_PORT,
            p => parse_port(
                p.strip_prefix(':')
                    .ok_or_else(|| HostArgError::BadAddress(s.to_string()))?,
                s,
            )?,
        };
        return Ok(format!("[{ip}]:{port}"));
    }
    if s.matches(':').count() > 1 {
        // A bare IPv6 address: no port possible without brackets.
        if s.parse::<std::net::Ipv6Addr>().is_err() {
            return Err(HostArgError::BadAddress(s.to_string()));
        }
        return Ok(format!("[{s}]:{DEFAULT_PORT}"));
    }
    let (host, port) = match s.split_once(':') {
        Some((h, p)) => (h, parse_port(p, s)?),
        None => (s, DEFAULT_PORT),
    };
    if host.is_empty()
        || host
            .chars()
            .any(|c| c.is_whitespace() || c == '/' || c == '@' || c == '=' || c == '[' || c == ']')
    {
        return Err(HostArgError::BadAddress(s.to_string()));
    }
    Ok(format!("{host}:{port}"))
}

/// Parses one host argument without consulting the host list.
pub fn parse_host_arg(arg: &str) -> Result<HostSpec, HostArgError> {
    let arg = arg.trim();
    if arg.is_empty() {
        return Err(HostArgError::Empty);
    }
    if let Some((name, addr)) = arg.split_once('=') {
        check_name(name, arg)?;
        if addr.is_empty() {
            return Err(HostArgError::NoAddress(arg.to_string()));
        }
        return Ok(HostSpec {
            name: name.to_string(),
            addr: parse_addr(addr)?,
            token_file: None,
        });
    }
    Ok(HostSpec {
        name: arg.to_string(),
        addr: parse_addr(arg)?,
        token_file: None,
    })
}

/// Resolves host arguments: a bare word naming an entry of the list wins over an address.
pub fn resolve(args: &[String], list: &HostList) -> Result<Vec<HostSpec>, HostArgError> {
    let mut out: Vec<HostSpec> = Vec::new();
    for a in args {
        let spec = match list.get(a.trim()) {
            Some(h) if !a.contains('=') => h.clone(),
            _ => parse_host_arg(a)?,
        };
        if let Some(i) = out.iter().position(|h| h.name == spec.name) {
            out[i] = spec; // the last one with a label wins
        } else {
            out.push(spec);
        }
    }
    Ok(out)
}

/// The host list file.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct HostList {
    pub hosts: Vec<HostSpec>,
}

#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum HostListError {
    #[error("cannot read host list {path}: {source}")]
    Read {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error("cannot write host list {path}: {source}")]
    Write {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error("{path}:{line}: {msg}")]
    Syntax {
        path: PathBuf,
        line: usize,
        msg: String,
    },
}

impl HostList {
    /// The default location: `$XDG_CONFIG_HOME/nasprobe/hosts` (or the platform's config dir).
    pub(crate) fn default_path() -> PathBuf {
        dirs::config_dir()
            .unwrap_or_else(|| PathBuf::from("."))
            .join("nasprobe")
            .join("hosts")
    }

    pub fn get(&self, name: &str) -> Option<&HostSpec> {
        self.hosts.iter().find(|h| h.name == name)
    }

    /// Parses the file's text.
    pub fn parse(text: &str, path: &Path) -> Result<Self, HostListError> {
        let mut hosts: Vec<HostSpec> = Vec::new();
        for (i, line) in text.lines().enumerate() {
            let line = line.split('#').next().unwrap_or("").trim();
            if line.is_empty() {
                continue;
            }
            let syntax = |msg: String| HostListError::Syntax {
                path: path.to_path_buf(),
                line: i + 1,
                msg,
            };
            let mut f = line.split_whitespace();
            let (Some(name), Some(addr)) = (f.next(), f.next()) else {
                return Err(syntax("want: NAME ADDR:PORT [TOKEN_FILE]".into()));
            };
            let token_file = f.next().map(PathBuf::from);
            if f.next().is_some() {
                return Err(syntax("too many fields".into()));
            }
            check_name(name, line).map_err(|e| syntax(e.to_string()))?;
            let addr = parse_addr(addr).map_err(|e| syntax(e.to_string()))?;
            hosts.retain(|h: &HostSpec| h.name != name);
            hosts.push(HostSpec {
                name: name.to_string(),
                addr,
                token_file,
            });
        }
        Ok(HostList { hosts })
    }

    /// Loads the file; a missing file is an empty list.
    pub fn load(path: &Path) -> Result<Self, HostListError> {
        match std::fs::read_to_string(path) {
            Ok(t) => Self::parse(&t, path),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(HostList::default()),
            Err(source) => Err(HostListError::Read {
                path: path.to_path_buf(),
                source,
            }),
        }
    }

    /// Writes the file atomically (temp file + rename).
    pub fn save(&self, path: &Path) -> Result<(), HostListError> {
        let w = |source| HostListError::Write {
            path: path.to_path_buf(),
            source,
        };
        if let Some(dir) = path.parent() {
            crate::private::create_dirs(dir).map_err(w)?;
        }
        let mut text = String::from("# nasprobe hosts: NAME ADDR:PORT [TOKEN_FILE]\n");
        for h in &self.hosts {
            text.push_str(&h.to_string());
            text.push('\n');
        }
        let tmp = path.with_extension("tmp");
        // A fresh temp file, so it is created 0600 whatever an old one's mode was.
        std::fs::remove_file(&tmp).ok();
        std::io::Write::write_all(
            &mut crate::private::create(&tmp).map_err(w)?,
            text.as_bytes(),
        )
        .map_err(w)?;
        std::fs::rename(&tmp, path).map_err(w)
    }

    /// Adds or replaces an entry by name.
    pub fn upsert(&mut self, h: HostSpec) {
        if let Some(old) = self.hosts.iter_mut().find(|o| o.name == h.name) {
            *old = h;
        } else {
            self.hosts.push(h);
        }
    }

    /// Removes an entry; false when there was none.
    pub fn remove(&mut self, name: &str) -> bool {
        let n = self.hosts.len();
        self.hosts.retain(|h| h.name != name);
        n != self.hosts.len()
    }
}

impl fmt::Display for HostSpec {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} {}", self.name, self.addr)?;
        if let Some(t) = &self.token_file {
            write!(f, " {}", t.display())?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn host_args() {
        let h = parse_host_arg("dst=10.0.0.2:7452").unwrap();
        assert_eq!((h.name.as_str(), h.addr.as_str()), ("dst", "10.0.0.2:7452"));
        let h = parse_host_arg("nas.local").unwrap();
        assert_eq!(
            (h.name.as_str(), h.addr.as_str()),
            ("nas.local", "nas.local:7451")
        );
        let h = parse_host_arg("127.0.0.1:9000").unwrap();
        assert_eq!(h.name, "127.0.0.1:9000");
        assert_eq!(h.addr, "127.0.0.1:9000");
        assert_eq!(parse_host_arg("a=[::1]:99").unwrap().addr, "[::1]:99");
        assert_eq!(parse_host_arg("[::1]").unwrap().addr, "[::1]:7451");
        assert_eq!(parse_host_arg("::1").unwrap().addr, "[::1]:7451");
        assert_eq!(
            parse_host_arg("fe80::1:2").unwrap().addr,
            "[fe80::1:2]:7451"
        );
    }

    #[test]
    fn bad_host_args() {
        assert_eq!(parse_host_arg(""), Err(HostArgError::Empty));
        assert!(matches!(
            parse_host_arg("=1.2.3.4"),
            Err(HostArgError::EmptyName(_))
        ));
        assert!(matches!(
            parse_host_arg("a="),
            Err(HostArgError::NoAddress(_))
        ));
        assert!(matches!(
            parse_host_arg("a=b:0"),
            Err(HostArgError::BadPort(_))
        ));
        assert!(matches!(
            parse_host_arg("a=b:70000"),
            Err(HostArgError::BadPort(_))
        ));
        assert!(matches!(
            parse_host_arg("b:x"),
            Err(HostArgError::BadPort(_))
        ));
        assert!(matches!(
            parse_host_arg("[zz]:1"),
            Err(HostArgError::BadAddress(_))
        ));
        assert!(matches!(
            parse_host_arg("a b=c"),
            Err(HostArgError::BadName(_))
        ));
    }

    #[test]
    fn host_list_round_trip_and_resolve() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("sub/hosts");
        let mut l = HostList::load(&p).unwrap();
        assert!(l.hosts.is_empty());
        l.upsert(parse_host_arg("src=10.0.0.1").unwrap());
        l.upsert(HostSpec {
            name: "dst".into(),
            addr: "10.0.0.2:7451".into(),
            token_file: Some("/etc/tok".into()),
        });
        l.save(&p).unwrap();
        let l2 = HostList::load(&p).unwrap();
        assert_eq!(l, l2);
        let r = resolve(&["dst".into(), "x=1.2.3.4:5".into()], &l2).unwrap();
        assert_eq!(r[0].token_file.as_deref(), Some(Path::new("/etc/tok")));
        assert_eq!(r[1].addr, "1.2.3.4:5");
        let mut l3 = l2.clone();
        assert!(l3.remove("src"));
        assert!(!l3.remove("src"));
        assert_eq!(l3.hosts.len(), 1);
        let e = HostList::parse("ok 1.2.3.4\nbad\n", Path::new("/h")).unwrap_err();
        assert!(e.to_string().starts_with("/h:2:"), "{e}");
    }
}
