//! The item a copy is on: the regular files the transfer's processes (busiest by storage I/O
//! from `/proc/PID/io`, then by CPU; at most [`MAX_FILE_PROCS`]) have open for reading or
//! writing, with each descriptor's position (`fdinfo`), access mode and the file's size.
//!
//! Read in the same walk of `/proc/PID/fd` as the connections ([`super::conns`]), so at the
//! same cadence (at most every 2 s). Bounded: [`IO_CANDIDATES`] `/proc/PID/io` reads per round,
//! [`FILES_READ_PER_PROC`] regular files looked at per process, [`MAX_PROC_FILES`] sent per
//! process (those whose position or size moved since the last round first; the rest counted in
//! `more`). Sparse:
//! an event only when a process has such a file and the list changed, or every
//! [`RESEND_AFTER`] while it stays the same (a stalled copy keeps its item visible).

use std::os::fd::{AsFd, BorrowedFd, OwnedFd};
use std::time::{Duration, Instant};

use nasprobe_proto::{
    Cmdline, Comm, Event, FileMode, MAX_FILE_PROCS, MAX_PROC_FILES, OpenFile, OpenFiles, ProcFiles,
};

use super::io::{self, Once, PathBuf64, Root};
use crate::parse::fdinfo::{access, parse_fdinfo};
use crate::parse::pid_io::parse_pid_io;
use crate::sys;

/// Processes whose `/proc/PID/io` is read per round (the running, I/O-sleeping and busy ones;
/// usually a handful).
pub(crate) const IO_CANDIDATES: usize = 64;
/// Regular files of one process whose fdinfo is read per round; more are counted in `more`.
pub(crate) const FILES_READ_PER_PROC: usize = 64;
/// An unchanged list is sent again after this long.
pub(crate) const RESEND_AFTER: Duration = Duration::from_secs(10);
/// `O_PATH`: a descriptor that only names a file (no read, no write).
const O_PATH: u32 = 0o10000000;

/// A regular file found in this round's walk, before the choice of what is sent.
struct Found {
    proc: u8,
    moved: bool,
    file: OpenFile,
}

pub(crate) struct Files {
    /// (pid, read_bytes + write_bytes) at the last round, sorted by pid.
    io_prev: Vec<(u32, u64)>,
    io_next: Vec<(u32, u64)>,
    /// The processes looked at this round, in order of choice.
    movers: Vec<(u32, Comm)>,
    /// (pid, fd, pos, size) of the files seen at the last round, sorted.
    pos_prev: Vec<(u32, u32, u64, u64)>,
    pos_next: Vec<(u32, u32, u64, u64)>,
    found: Vec<Found>,
    /// Regular files per process left out this round (past FILES_READ_PER_PROC or MAX_PROC_FILES).
    more: [u16; MAX_FILE_PROCS],
    looked: [usize; MAX_FILE_PROCS],
    fdinfo: Option<OwnedFd>,
    path: PathBuf64,
    buf: [u8; 512],
    last: Option<(Instant, OpenFiles)>,
    log_full: Once,
}

impl Files {
    pub(crate) fn new() -> Files {
        Files {
            io_prev: Vec::with_capacity(IO_CANDIDATES),
            io_next: Vec::with_capacity(IO_CANDIDATES),
            movers: Vec::with_capacity(MAX_FILE_PROCS),
            pos_prev: Vec::with_capacity(MAX_FILE_PROCS * MAX_PROC_FILES),
            pos_next: Vec::with_capacity(MAX_FILE_PROCS * MAX_PROC_FILES),
            found: Vec::with_capacity(MAX_FILE_PROCS * FILES_READ_PER_PROC),
            more: [0; MAX_FILE_PROCS],
            looked: [0; MAX_FILE_PROCS],
            fdinfo: None,
            path: PathBuf64::default(),
            buf: [0; 512],
            last: None,
            log_full: Once::default(),
        }
    }

    /// Chooses this round's processes: those whose storage bytes grew most since the last
    /// round (among `candidates`), then last round's that still had files, then the CPU `top`;
    /// at most MAX_FILE_PROCS. Returns them (pid, comm).
    pub(crate) fn choose(
        &mut self,
        root: &Root,
        candidates: &[(u32, Comm)],
        top: &[(u32, Comm)],
    ) -> &[(u32, Comm)] {
        self.io_next.clear();
        let mut grew: Vec<(u64, usize)> = Vec::with_capacity(candidates.len());
        for (k, (pid, _)) in candidates.iter().take(IO_CANDIDATES).enumerate() {
            self.path.clear().num(*pid).bytes(b"/io");
            let Ok(b) = root.read_once(self.path.as_cstr(), &mut self.buf) else {
                continue;
            };
            let Ok(now) = parse_pid_io(b) else { continue };
            self.io_next.push((*pid, now));
            if let Ok(i) = self.io_prev.binary_search_by_key(pid, |x| x.0) {
                let d = now.saturating_sub(self.io_prev[i].1);
                if d > 0 {
                    grew.push((d, k));
                }
            }
        }
        self.io_next.sort_unstable_by_key(|x| x.0);
        std::mem::swap(&mut self.io_prev, &mut self.io_next);
        grew.sort_unstable_by_key(|g| std::cmp::Reverse(g.0));
        let before: Vec<(u32, Comm)> = self
            .last
            .iter()
            .flat_map(|(_, o)| o.procs.iter().map(|p| (p.pid, p.comm.clone())))
            .collect();
        self.movers.clear();
        let order = grew
            .iter()
            .map(|g| &candidates[g.1])
            .chain(before.iter())
            .chain(top.iter());
        let me = std::process::id();
        for (pid, comm) in order {
            if self.movers.len() == MAX_FILE_PROCS {
                break;
            }
            if *pid != me && !self.movers.iter().any(|m| m.0 == *pid) {
                self.movers.push((*pid, comm.clone()));
            }
        }
        self.found.clear();
        self.more = [0; MAX_FILE_PROCS];
        self.looked = [0; MAX_FILE_PROCS];
        &self.movers
    }

    /// The index of `pid` among this round's processes.
    pub(crate) fn index(&self, pid: u32) -> Option<u8> {
        self.movers.iter().position(|m| m.0 == pid).map(|i| i as u8)
    }

    /// A new process's walk starts: its fdinfo directory is opened (None when it is gone).
    pub(crate) fn start_proc(&mut self, root: &Root, pid: u32) {
        self.path.clear().num(pid).bytes(b"/fdinfo");
        self.fdinfo = io::open_raw(
            root.fd(),
            self.path.as_cstr(),
            libc::O_RDONLY | libc::O_DIRECTORY,
        )
        .ok();
    }

    /// Descriptor `fd` of process `proc` (its `/proc/PID/fd` directory `dir`) links to `link`:
    /// kept when it is a regular file open for reading or writing.
    pub(crate) fn consider(
        &mut self,
        dir: BorrowedFd<'_>,
        fd: u32,
        link: &[u8],
        proc: u8,
        redact: &dyn Fn(&[u8], &mut Cmdline),
    ) {
        // Terminals, /dev/null, procfs and sysfs files and memfds (`/memfd:x (deleted)`) are
        // no copy's item: left out before the fstatat.
        if !link.starts_with(b"/")
            || [&b"/dev/"[..], b"/proc/", b"/sys/", b"/memfd:"]
                .iter()
                .any(|p| link.starts_with(p))
        {
            return;
        }
        let k = proc as usize;
        if self.looked[k] >= FILES_READ_PER_PROC {
            self.more[k] = self.more[k].saturating_add(1);
            self.log_full.warn(format_args!(
                "a process has more than FILES_READ_PER_PROC={FILES_READ_PER_PROC} regular files \
                 open: the others are counted, not looked at"
            ));
            return;
        }
        self.path.clear().num(fd);
        let Some(size) = sys::fd::regular_file_size_at(dir, self.path.as_cstr()) else {
            return;
        };
        let Some(info_dir) = self.fdinfo.as_ref().map(|d| d.as_fd()) else {
            return;
        };
        let Ok(f) = io::open_raw(Some(info_dir), self.path.as_cstr(), libc::O_RDONLY) else {
            return;
        };
        let Ok(info) = io::read_at(f.as_fd(), &mut self.buf).map(parse_fdinfo) else {
            return;
        };
        let Ok(info) = info else { return };
        let mode = match access(info.flags) {
            _ if info.flags & O_PATH != 0 => return,
            Some((true, false)) => FileMode::Read,
            Some((false, true)) => FileMode::Write,
            Some((true, true)) => FileMode::ReadWrite,
            _ => return,
        };
        self.looked[k] += 1;
        let pid = self.movers[k].0;
        // Moved: its position, or its size (a pwrite writer such as Samba keeps its position).
        let moved = match self
            .pos_prev
            .binary_search_by_key(&(pid, fd), |x| (x.0, x.1))
        {
            Ok(i) => (self.pos_prev[i].2, self.pos_prev[i].3) != (info.pos, size),
            Err(_) => info.pos > 0,
        };
        let mut path = Cmdline::new();
        redact(link, &mut path);
        self.found.push(Found {
            proc,
            moved,
            file: OpenFile {
                fd,
                path,
                pos: info.pos,
                size,
                mode,
            },
        });
    }

    /// The round's event, emitted when some process has a file and the list changed (or
    /// RESEND_AFTER passed).
    pub(crate) fn finish(&mut self, emit: &mut dyn FnMut(Event)) {
        // Per process: moved files first, then the furthest along.
        self.found
            .sort_unstable_by_key(|f| (f.proc, !f.moved, std::cmp::Reverse(f.file.pos)));
        let mut ev = OpenFiles {
            procs: heapless::Vec::new(),
        };
        self.pos_next.clear();
        for (k, (pid, comm)) in self.movers.iter().enumerate() {
            let mut p = ProcFiles {
                pid: *pid,
                comm: comm.clone(),
                files: heapless::Vec::new(),
                more: self.more[k],
            };
            for f in self.found.iter().filter(|f| f.proc as usize == k) {
                self.pos_next
                    .push((*pid, f.file.fd, f.file.pos, f.file.size));
                if p.files.push(f.file.clone()).is_err() {
                    p.more = p.more.saturating_add(1);
                }
            }
            if !p.files.is_empty() || p.more > 0 {
                // Cannot fail: at most MAX_FILE_PROCS movers.
                let _ = ev.procs.push(p);
            }
        }
        self.pos_next.sort_unstable();
        std::mem::swap(&mut self.pos_prev, &mut self.pos_next);
        self.fdinfo = None;
        if ev.procs.is_empty() {
            self.last = None;
            return;
        }
        let now = Instant::now();
        if let Some((at, prev)) = &self.last
            && *prev == ev
            && now.duration_since(*at) < RESEND_AFTER
        {
            return;
        }
        self.last = Some((now, ev.clone()));
        emit(Event::OpenFiles(ev));
    }
}
