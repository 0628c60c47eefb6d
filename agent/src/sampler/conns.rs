//! The TCP connections of the top processes, and for a minute more of those that had some
//! worth sending: a transfer that stalls (a peer gone quiet, a keepalive timing out) leaves
//! the CPU top list just when its connections get interesting. `/proc/PID/fd` → socket inodes → one netlink
//! sock_diag dump per address family, at most every 2 s (all TCP sockets with their `tcp_info`, matched by inode),
//! or `/proc/net/tcp(6)` (addresses, state, queues, retransmits; no tcp_info) where sock_diag
//! is refused or missing. Bounded: [`MAX_CONN_PROCS`] processes, [`FDS_PER_PROC`] descriptors
//! each, [`nasprobe_proto::MAX_PROC_CONNS`] connections each; sparse on the wire (only active or troubled
//! connections). Only on the kernel's own procfs (a generated tree has no sockets).
//!
//! The same walk of `/proc/PID/fd` finds the regular files of the transfer's processes
//! ([`super::files`]): each descriptor is read with readlink once for both.

use std::os::fd::{AsFd, OwnedFd};

use nasprobe_proto::{
    Cmdline, Comm, Connections, Event, MAX_CONN_PROCS, ProcConnections, SockAddr, TcpConn,
};

use super::files::Files;
use super::io::{self, Once, PathBuf64, Root};
use crate::parse::proc_net_tcp::{ProcTcp, proc_net_tcp, socket_inode};
use crate::parse::sock_diag::{DiagItem, DiagSock, dump_messages, dump_request};
use crate::sys::{self, netlink};

/// Descriptors looked at per process (a server with thousands of clients is cut here).
pub const FDS_PER_PROC: usize = 1024;
/// Longest link target read (PATH_MAX); a longer path is left out.
const LINK_MAX: usize = 4096;
/// Datagrams read per dump (each holds tens of sockets).
const DUMP_DGRAMS_MAX: usize = 256;
const DGRAM_BUF: usize = 32 * 1024;
/// A dump that does not end within this long is given up for this sample.
const DUMP_TIMEOUT_MS: i64 = 100;
/// Rounds a process stays followed after it had connections worth sending (a minute).
const FOLLOW_SAMPLES: u32 = 30;
/// Connections are read at most this often, whatever the sampling interval: one sock_diag dump
/// walks the kernel's whole TCP hash table (~240 µs on a 24 GiB machine, whose table is large)
/// and every descriptor of the chosen processes is read with readlink. Every 2 s is enough for
/// the 40 s before a death and the trend of a flow (measured: 0.45 ms per sample without this
/// work, 1.2-2.5 ms with it every sample at 10 Hz on this machine).
const MIN_GAP: std::time::Duration = std::time::Duration::from_secs(2);

pub struct Conns {
    /// The sock_diag socket; None once refused (then /proc/net/tcp).
    diag: Option<OwnedFd>,
    tried: bool,
    fds: Vec<u32>,
    /// (inode, process index) of the top processes' sockets, sorted by inode.
    inodes: Vec<(u32, u8)>,
    dents: Box<[u8]>,
    buf: Box<[u8]>,
    path: PathBuf64,
    seq: u32,
    log_diag: Once,
    /// Processes followed: (pid, comm, last sample they had connections worth sending).
    followed: Vec<(u32, Comm, u32)>,
    /// When connections were last read.
    last: Option<std::time::Instant>,
    /// The chosen processes of this sample, with their connections as they are found.
    work: Vec<ProcConnections>,
    sample_no: u32,
    /// The open regular files of the transfer's processes, found in the same walk; None with
    /// `--no-open-files`.
    files: Option<Files>,
    link: Box<[u8]>,
}

fn diag_socket() -> Result<OwnedFd, std::io::Error> {
    let fd = netlink::socket(libc::NETLINK_SOCK_DIAG, 0)?;
    netlink::set_recv_timeout(fd.as_fd(), (DUMP_TIMEOUT_MS * 1000) as u32);
    Ok(fd)
}

/// Worth sending: data moving, data waiting, or trouble (retransmits, backoff, probes).
fn active(c: &TcpConn) -> bool {
    c.send_queue > 0
        || c.recv_queue > 0
        || c.retransmits > 0
        || c.info.is_some_and(|i| {
            i.backoff > 0
                || i.probes > 0
                || i.last_data_sent_ms < 5_000
                || i.last_data_recv_ms < 5_000
        })
}

fn sock_addr(family_v6: bool, ip: &[u8; 16], port: u16) -> SockAddr {
    let n = if family_v6 { 16 } else { 4 };
    SockAddr {
        addr: heapless::Vec::from_slice(&ip[..n]).unwrap_or_default(),
        port,
    }
}

fn from_diag(s: &DiagSock) -> TcpConn {
    let v6 = s.family == libc::AF_INET6 as u8;
    TcpConn {
        local: sock_addr(v6, &s.local, s.local_port),
        remote: sock_addr(v6, &s.remote, s.remote_port),
        state: s.state,
        send_queue: s.wqueue,
        recv_queue: s.rqueue,
        retransmits: s.info.map_or(0, |i| i.retransmits),
        info: s.info.map(|i| i.info),
    }
}

fn from_proc(t: &ProcTcp, v6: bool) -> TcpConn {
    TcpConn {
        local: sock_addr(v6, &t.local, t.local_port),
        remote: sock_addr(v6, &t.remote, t.remote_port),
        state: t.state,
        send_queue: t.tx_queue,
        recv_queue: t.rx_queue,
        retransmits: t.retransmits.min(255) as u8,
        info: None,
    }
}

impl Conns {
    /// `open_files`: also find the open files of the transfer's processes.
    pub fn new(open_files: bool) -> Conns {
        Conns {
            diag: None,
            tried: false,
            fds: Vec::with_capacity(FDS_PER_PROC),
            inodes: Vec::with_capacity(MAX_CONN_PROCS * FDS_PER_PROC),
            dents: vec![0u8; 8 * 1024].into_boxed_slice(),
            buf: vec![0u8; DGRAM_BUF].into_boxed_slice(),
            path: PathBuf64::default(),
            seq: 0,
            log_diag: Once::default(),
            followed: Vec::with_capacity(4 * MAX_CONN_PROCS + MAX_CONN_PROCS),
            work: Vec::with_capacity(2 * MAX_CONN_PROCS),
            sample_no: 0,
            last: None,
            files: open_files.then(Files::new),
            link: vec![0u8; LINK_MAX].into_boxed_slice(),
        }
    }

    /// Which processes to look at: the top ones (at most MAX_CONN_PROCS, the agent itself
    /// left out: its connections are its collectors), then up to as many of those followed
    /// (that had connections worth sending within FOLLOW_SAMPLES rounds), most recent first.
    fn choose(&mut self, top: &[(u32, Comm)]) {
        self.sample_no = self.sample_no.wrapping_add(1);
        let now = self.sample_no;
        let me = std::process::id();
        self.followed
            .retain(|f| now.wrapping_sub(f.2) <= FOLLOW_SAMPLES);
        self.followed.sort_by_key(|f| std::cmp::Reverse(f.2));
        self.followed.truncate(4 * MAX_CONN_PROCS);
        self.work.clear();
        let fresh = |pid: u32, comm: &Comm| ProcConnections {
            pid,
            comm: comm.clone(),
            conns: heapless::Vec::new(),
            more: 0,
        };
        for (pid, comm) in top.iter().filter(|t| t.0 != me).take(MAX_CONN_PROCS) {
            self.work.push(fresh(*pid, comm));
        }
        for f in self.followed.iter().take(MAX_CONN_PROCS) {
            if !self.work.iter().any(|w| w.pid == f.0) {
                self.work.push(fresh(f.0, &f.1));
            }
        }
    }

    /// True when open files are looked for (not `--no-open-files`).
    pub fn open_files(&self) -> bool {
        self.files.is_some()
    }

    /// True when the next `sample` reads (the kernel's procfs, MIN_GAP since the last).
    pub fn due(&self, root: &Root) -> bool {
        root.real
            && self
                .last
                .is_none_or(|l| std::time::Instant::now().duration_since(l) >= MIN_GAP)
    }

    /// The connections of the chosen processes (see `choose`) as one `Connections` event of
    /// at most MAX_CONN_PROCS processes (the top ones first), when any is worth sending; and
    /// the open files of the transfer's processes (chosen among `candidates` by I/O, then
    /// `top`) as one `OpenFiles` event, their paths redacted by `redact`.
    pub fn sample(
        &mut self,
        root: &Root,
        top: &[(u32, Comm)],
        candidates: &[(u32, Comm)],
        redact: &dyn Fn(&[u8], &mut Cmdline),
        emit: &mut dyn FnMut(Event),
    ) {
        if !self.due(root) {
            return;
        }
        self.last = Some(std::time::Instant::now());
        self.choose(top);
        self.inodes.clear();
        let mut pids: Vec<(u32, Option<u8>)> = self
            .work
            .iter()
            .enumerate()
            .map(|(k, w)| (w.pid, Some(k as u8)))
            .collect();
        if let Some(files) = self.files.as_mut() {
            for (pid, _) in files.choose(root, candidates, top) {
                if !pids.iter().any(|p| p.0 == *pid) {
                    pids.push((*pid, None));
                }
            }
        }
        for (pid, k) in pids {
            self.walk_fds(root, pid, k, redact);
        }
        if let Some(files) = self.files.as_mut() {
            files.finish(emit);
        }
        if self.work.is_empty() || self.inodes.is_empty() {
            return;
        }
        self.inodes.sort_unstable();
        let mut out = std::mem::take(&mut self.work);
        if !self.tried {
            self.tried = true;
            match diag_socket() {
                Ok(fd) => self.diag = Some(fd),
                Err(e) => log::warn!(
                    "sock_diag unavailable ({e}): per-connection TCP from /proc/net/tcp, without tcp_info"
                ),
            }
        }
        let mut ok = false;
        if self.diag.is_some() {
            ok = self.dump(libc::AF_INET as u8, &mut out)
                && self.dump(libc::AF_INET6 as u8, &mut out);
            if !ok {
                for p in out.iter_mut() {
                    p.conns.clear();
                    p.more = 0;
                }
            }
        }
        if !ok {
            self.proc_net(root, c"net/tcp", false, &mut out);
            self.proc_net(root, c"net/tcp6", true, &mut out);
        }
        let now = self.sample_no;
        let mut ev = Connections {
            procs: heapless::Vec::new(),
        };
        for p in out.drain(..).filter(|p| !p.conns.is_empty()) {
            log::trace!(
                "connections of {} [{}]: {} sent, {} more",
                p.comm,
                p.pid,
                p.conns.len(),
                p.more
            );
            match self.followed.iter_mut().find(|f| f.0 == p.pid) {
                Some(f) => f.2 = now,
                None => self.followed.push((p.pid, p.comm.clone(), now)),
            }
            let _ = ev.procs.push(p);
        }
        self.work = out;
        if !ev.procs.is_empty() {
            emit(Event::Connections(ev));
        }
    }

    /// One walk of `/proc/PID/fd`: sockets for the connections (when `k`, the process's
    /// index among them, is set), regular files for the open files (when it is a mover).
    fn walk_fds(
        &mut self,
        root: &Root,
        pid: u32,
        k: Option<u8>,
        redact: &dyn Fn(&[u8], &mut Cmdline),
    ) {
        let mover = self.files.as_ref().and_then(|f| f.index(pid));
        if k.is_none() && mover.is_none() {
            return;
        }
        self.path.clear().num(pid).bytes(b"/fd");
        let Ok(dir) = io::open_raw(
            root.fd(),
            self.path.as_cstr(),
            libc::O_RDONLY | libc::O_DIRECTORY,
        ) else {
            return;
        };
        let mut fds = std::mem::take(&mut self.fds);
        let _ = io::list_numeric(Some(dir.as_fd()), &mut self.dents, &mut fds, FDS_PER_PROC);
        if let (Some(files), Some(_)) = (self.files.as_mut(), mover) {
            files.start_proc(root, pid);
        }
        for &fd in &fds {
            self.path.clear().num(fd);
            let Some(link) = sys::fd::readlinkat(dir.as_fd(), self.path.as_cstr(), &mut self.link)
            else {
                continue;
            };
            match (socket_inode(link), k, mover, self.files.as_mut()) {
                (Some(ino), Some(k), _, _) => self.inodes.push((ino, k)),
                (None, _, Some(m), Some(files)) => files.consider(dir.as_fd(), fd, link, m, redact),
                _ => {}
            }
        }
        self.fds = fds;
    }

    fn add(&self, ino: u32, conn: TcpConn, out: &mut [ProcConnections]) {
        let Ok(at) = self.inodes.binary_search_by_key(&ino, |x| x.0) else {
            return;
        };
        let p = &mut out[self.inodes[at].1 as usize];
        if !active(&conn) || p.conns.push(conn).is_err() {
            p.more = p.more.saturating_add(1);
        }
    }

    /// One sock_diag dump; false when it failed (refused, cut, timed out).
    fn dump(&mut self, family: u8, out: &mut [ProcConnections]) -> bool {
        let Some(fd) = self.diag.as_ref().map(|f| f.as_fd()) else {
            return false;
        };
        self.seq = self.seq.wrapping_add(1);
        let req = dump_request(family, self.seq);
        if let Err(e) = netlink::send_to_kernel(fd, &req) {
            self.log_diag
                .warn(format_args!("sock_diag request: {e}; using /proc/net/tcp"));
            return false;
        }
        for _ in 0..DUMP_DGRAMS_MAX {
            let n = match netlink::recv_dump(fd, &mut self.buf) {
                Ok(n) => n,
                Err(e) => {
                    self.log_diag
                        .warn(format_args!("sock_diag dump: {e}; using /proc/net/tcp"));
                    return false;
                }
            };
            let buf = std::mem::take(&mut self.buf);
            let mut end = None;
            for m in dump_messages(&buf[..n]) {
                match m {
                    Ok(DiagItem::Sock(s)) => self.add(s.inode, from_diag(&s), out),
                    Ok(DiagItem::Done) => end = Some(true),
                    Ok(DiagItem::Error(e)) => {
                        self.log_diag.warn(format_args!(
                            "sock_diag refused: {}; using /proc/net/tcp",
                            std::io::Error::from_raw_os_error(e as i32)
                        ));
                        end = Some(false);
                    }
                    Err(e) => {
                        self.log_diag
                            .warn(format_args!("sock_diag dump: {e}; using /proc/net/tcp"));
                        end = Some(false);
                    }
                }
            }
            self.buf = buf;
            if let Some(ok) = end {
                return ok;
            }
        }
        false
    }

    fn proc_net(
        &mut self,
        root: &Root,
        rel: &std::ffi::CStr,
        v6: bool,
        out: &mut [ProcConnections],
    ) {
        let mut buf = std::mem::take(&mut self.buf);
        if let Ok(b) = root.read_once(rel, &mut buf) {
            for t in proc_net_tcp(b).flatten() {
                self.add(t.inode, from_proc(&t, v6), out);
            }
        }
        self.buf = buf;
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use nasprobe_proto::FileMode;

    /// A real process with a file open for reading (1000 bytes in) and one for writing (3
    /// bytes written, a name with a secret): one walk finds both, with positions, sizes,
    /// modes and the secret masked; an unchanged list is not sent again at once.
    #[test]
    fn open_files_of_a_real_process() {
        let dir = std::env::temp_dir().join(format!("nasprobe-files-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let src = dir.join("film.mkv");
        std::fs::write(&src, vec![7u8; 5000]).unwrap();
        let dst = dir.join("token=abc");
        let mut child = std::process::Command::new("sh")
            .args([
                "-c",
                "exec 3<\"$0\" 4>\"$1\"; head -c 1000 <&3 >/dev/null; printf abc >&4; echo ok; exec sleep 30",
            ])
            .arg(&src)
            .arg(&dst)
            .stdout(std::process::Stdio::piped())
            // Not the test's stderr: a log file that grows between the two rounds would be a
            // moving open file (CI writes the test output to one).
            .stdin(std::process::Stdio::null())
            .stderr(std::process::Stdio::null())
            .spawn()
            .unwrap();
        let mut ok = [0u8; 3];
        std::io::Read::read_exact(child.stdout.as_mut().unwrap(), &mut ok).unwrap();
        let pid = child.id();
        let root = Root::open(std::path::Path::new("/proc"), io::PROC_SUPER_MAGIC);
        let mut off = Conns::new(false);
        let mut c = Conns::new(true);
        let top = [(pid, Comm::try_from("sleep").unwrap())];
        let redact = |raw: &[u8], out: &mut Cmdline| {
            crate::parse::cmdline::format_cmdline(
                raw,
                crate::parse::cmdline::DEFAULT_REDACT.iter().copied(),
                nasprobe_proto::CMDLINE_LEN,
                out,
            )
        };
        let mut got = Vec::new();
        let mut none = Vec::new();
        off.sample(&root, &top, &[], &redact, &mut |e| none.push(e));
        c.sample(&root, &top, &[], &redact, &mut |e| got.push(e));
        c.last = None;
        c.sample(&root, &top, &[], &redact, &mut |e| got.push(e));
        let _ = child.kill();
        let _ = child.wait();
        let _ = std::fs::remove_dir_all(&dir);
        assert!(root.real, "/proc is the kernel's procfs here");
        let files: Vec<_> = got
            .iter()
            .filter_map(|e| match e {
                Event::OpenFiles(o) => Some(o),
                _ => None,
            })
            .collect();
        assert_eq!(
            files.len(),
            1,
            "one event, the unchanged second list held back: {got:?}"
        );
        assert!(
            !none.iter().any(|e| matches!(e, Event::OpenFiles(_))),
            "--no-open-files: {none:?}"
        );
        let p = &files[0].procs[0];
        assert_eq!((p.pid, p.more), (pid, 0));
        let find = |end: &str| p.files.iter().find(|f| f.path.ends_with(end)).cloned();
        let r = find("/film.mkv").expect("the file read");
        assert_eq!(
            (r.fd, r.pos, r.size, r.mode),
            (3, 1000, 5000, FileMode::Read)
        );
        assert!(r.path.starts_with('/'), "{}", r.path);
        let w = find("/token=***").expect("the file written, its secret masked");
        assert_eq!((w.fd, w.pos, w.size, w.mode), (4, 3, 3, FileMode::Write));
        assert!(!format!("{files:?}").contains("abc"), "{files:?}");
    }
}
