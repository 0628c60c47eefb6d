//! The process table's reads: the merge of a /proc listing (full scan), the re-read of the busy
//! processes (partial scan), the pids the connector announced, and a process's exit.

use super::*;

impl Procs {
    /// Takes the announced pids into the table (a merge: both are sorted by pid).
    pub(super) fn add_pending(&mut self, root: &Root, buf: &mut [u8], now_ms: u64) {
        if self.pending.is_empty() {
            return;
        }
        let mut pend = std::mem::take(&mut self.pending);
        pend.sort_unstable_by_key(|p| p.0);
        let mut old = std::mem::take(&mut self.table);
        let mut new = std::mem::take(&mut self.next);
        new.clear();
        let mut olds = old.drain(..).peekable();
        for &(pid, exit) in &pend {
            while let Some(p) = olds.next_if(|p| p.pid < pid) {
                new.push(p);
            }
            if let Some(p) = olds.peek_mut().filter(|p| p.pid == pid) {
                // Tracked already (a fork read idle, now an exec): read it in this sample.
                p.flags |= F_ACTIVE;
                if let Some((e, ns)) = exit {
                    p.flags |= F_EXITED;
                    p.exit_raw = e;
                    p.exit_ns = ns;
                }
                continue;
            }
            if new.len() + olds.len() >= PROC_TABLE_CAP {
                self.table_full += 1;
                continue;
            }
            let mut fd = None;
            // Gone already (reaped): only the counters of the next scan show it.
            let Ok(st) = self.read_stat(root, buf, pid, &mut fd) else {
                continue;
            };
            let mut p = self.new_proc(&st, fd, now_ms, false);
            if let Some((e, ns)) = exit {
                p.flags |= F_EXITED;
                p.exit_raw = e;
                p.exit_ns = ns;
            }
            new.push(p);
        }
        new.extend(olds);
        old.clear();
        self.table = new;
        self.next = old;
        pend.clear();
        self.pending = pend;
    }

    /// Reads /proc/PID/stat through a kept descriptor or a fresh one (kept if allowed).
    pub(super) fn read_stat(
        &mut self,
        root: &Root,
        buf: &mut [u8],
        pid: u32,
        fd: &mut Option<OwnedFd>,
    ) -> Result<PidStat, ReadError> {
        if let Some(kept) = fd.as_ref() {
            match io::read_at(kept.as_fd(), buf) {
                Ok(b) => return self.parse(b, pid),
                Err(e) => {
                    *fd = None;
                    self.kept -= 1;
                    return Err(e);
                }
            }
        }
        self.path.clear().num(pid).bytes(b"/stat");
        let f = io::open_raw(root.fd(), self.path.as_cstr(), libc::O_RDONLY)
            .map_err(ReadError::from_errno)?;
        let st = match io::read_at(f.as_fd(), buf) {
            Ok(b) => self.parse(b, pid)?,
            Err(e) => return Err(e),
        };
        if root.real && self.kept < KEPT_PID_FDS {
            self.kept += 1;
            *fd = Some(f);
        }
        Ok(st)
    }

    pub(super) fn parse(&mut self, b: &[u8], pid: u32) -> Result<PidStat, ReadError> {
        match parse_pid_stat(b) {
            Ok(st) => Ok(st),
            Err(e) => {
                self.log_stat
                    .warn(format_args!("/proc/{pid}/stat: {e}; process skipped"));
                Err(ReadError::Io(nix::errno::Errno::EINVAL))
            }
        }
    }

    /// Lists /proc and merges the sorted pids with the sorted table. Returns short-lived exits.
    pub(super) fn full_scan(
        &mut self,
        root: &Root,
        buf: &mut [u8],
        priming: bool,
        now_ms: u64,
        emit: &mut dyn FnMut(Event),
    ) -> u32 {
        let mut scan = std::mem::take(&mut self.scan);
        match io::list_numeric(root.fd(), &mut self.dents, &mut scan, PROC_TABLE_CAP) {
            Ok(true) => {}
            Ok(false) => {
                self.table_full += 1;
                self.log_full.warn(format_args!(
                    "more than PROC_TABLE_CAP={PROC_TABLE_CAP} processes: the highest pids are not tracked"
                ));
            }
            Err(e) => {
                self.log_list
                    .warn(format_args!("{}: cannot list: {e}", root.path.display()));
                self.scan = scan;
                return 0;
            }
        }
        let mut old = std::mem::take(&mut self.table);
        let mut new = std::mem::take(&mut self.next);
        new.clear();
        let mut short = 0;
        let mut j = 0;
        // The next old entry's pid is read in place (`as_slice`), not through `Peekable`,
        // whose peeked slot would move every `Proc` twice more (+210 Ir a pid on `--scan all`).
        let mut olds = old.drain(..);
        loop {
            let o = olds.as_slice().first().map_or(u32::MAX, |p| p.pid);
            if o == u32::MAX && j >= scan.len() {
                break;
            }
            let s = scan.get(j).copied().unwrap_or(u32::MAX);
            if o < s || j >= scan.len() {
                if let Some(mut p) = olds.next() {
                    short += self.exit(&mut p, now_ms, emit);
                }
                continue;
            }
            if o == s {
                let Some(p) = olds.next() else { break };
                j += 1;
                // Moved once, into the new table, and read and updated there (taken out again
                // if it ended): a `Proc` moved through locals costs ~100 Ir a copy.
                new.push(p);
                let k = new.len() - 1;
                let p = &mut new[k];
                if p.flags & F_EXITED != 0 {
                    // Ended (a zombie until its parent reaps it).
                    short += self.exit(p, now_ms, emit);
                    new.pop();
                    continue;
                }
                if p.read_at == self.sample_no && !priming {
                    // Read in this sample already (announced by the connector, or busy before
                    // an adaptive scan): a second read would only see zero.
                    continue;
                }
                match self.read_stat(root, buf, p.pid, &mut p.fd) {
                    Ok(st) if st.starttime == p.start => {
                        let before = p.utime.saturating_add(p.stime);
                        self.update(p, &st);
                        self.found_ticks += p.utime.saturating_add(p.stime).saturating_sub(before);
                    }
                    Ok(st) => {
                        // Same pid, another start time: the old process is gone, a new one runs.
                        let fd = p.fd.take();
                        short += self.exit(p, now_ms, emit);
                        new.pop();
                        new.push(self.new_proc(&st, fd, now_ms, priming));
                    }
                    Err(ReadError::Missing) => {
                        short += self.exit(p, now_ms, emit);
                        new.pop();
                    }
                    Err(_) => {
                        // Unreadable this time: keep it as it was rather than invent an exit.
                    }
                }
                continue;
            }
            // s < o: a pid not in the table.
            j += 1;
            let mut fd = None;
            if let Ok(st) = self.read_stat(root, buf, s, &mut fd) {
                if self.kernel_exits && st.state == b'Z' {
                    if fd.take().is_some() {
                        self.kept -= 1;
                    }
                    continue;
                }
                self.found_ticks += st.utime.saturating_add(st.stime);
                new.push(self.new_proc(&st, fd, now_ms, priming));
            }
        }
        drop(olds);
        self.table = new;
        self.next = old;
        self.scan = scan;
        short
    }

    /// Re-reads only the processes that used CPU at their last read.
    pub(super) fn partial_scan(
        &mut self,
        root: &Root,
        buf: &mut [u8],
        now_ms: u64,
        emit: &mut dyn FnMut(Event),
    ) -> u32 {
        let mut table = std::mem::take(&mut self.table);
        let mut short = 0;
        table.retain_mut(|p| {
            if p.flags & F_EXITED != 0 {
                short += self.exit(p, now_ms, emit);
                return false;
            }
            if p.flags & F_ACTIVE != 0 {
                match self.read_stat(root, buf, p.pid, &mut p.fd) {
                    Ok(st) if st.starttime == p.start => self.update(p, &st),
                    Ok(_) | Err(ReadError::Missing) => {
                        // Gone (or replaced: the next full scan picks the new one up).
                        short += self.exit(p, now_ms, emit);
                        return false;
                    }
                    Err(_) => {}
                }
            }
            true
        });
        self.table = table;
        short
    }

    pub(super) fn update(&mut self, p: &mut Proc, st: &PidStat) {
        let elapsed = self.sample_no.saturating_sub(p.read_at).max(1) as u64;
        let du = step(p.utime, st.utime).unwrap_or(0);
        let ds = step(p.stime, st.stime).unwrap_or(0);
        p.d_utime = u32s(avg(du, elapsed));
        p.d_stime = u32s(avg(ds, elapsed));
        p.utime = st.utime;
        p.stime = st.stime;
        p.read_at = self.sample_no;
        p.state = st.state;
        p.threads = st.num_threads;
        p.ppid = st.ppid;
        set_comm(p, st.comm());
        // Any CPU since the last read, even less than a tick per interval on average: read it
        // again next sample, where its CPU shows per interval.
        if du + ds > 0 {
            p.flags |= F_ACTIVE;
        } else {
            p.flags &= !F_ACTIVE;
        }
    }

    pub(super) fn new_proc(
        &mut self,
        st: &PidStat,
        fd: Option<OwnedFd>,
        now_ms: u64,
        priming: bool,
    ) -> Proc {
        let mut p = Proc {
            pid: st.pid,
            ppid: st.ppid,
            start: st.starttime,
            utime: st.utime,
            stime: st.stime,
            run_delay: 0,
            fd,
            read_at: self.sample_no,
            rd_at: 0,
            threads: st.num_threads,
            d_utime: 0,
            d_stime: 0,
            comm: [0; COMM_LEN],
            comm_len: 0,
            state: st.state,
            flags: 0,
            slot: NO_SLOT,
            exit_raw: 0,
            exit_ns: 0,
        };
        set_comm(&mut p, st.comm());
        let start_ms = st.starttime * 1000 / self.hz;
        if !priming && start_ms >= self.last_full_ms {
            // Started since the previous full scan: all its CPU time belongs to the intervals
            // since it started (at least one, at most the samples since that scan).
            let age_ms = now_ms.saturating_sub(start_ms);
            let since = self.sample_no.saturating_sub(self.last_full).max(1) as u64;
            let intervals = age_ms.div_ceil(self.interval_ms).clamp(1, since);
            p.d_utime = u32s(avg(st.utime, intervals));
            p.d_stime = u32s(avg(st.stime, intervals));
        }
        if !priming && st.utime + st.stime > 0 {
            // New to the table and has used CPU: read again next sample for its rate.
            p.flags |= F_ACTIVE;
        }
        p
    }

    /// A tracked process is gone: emits its exit when it lived long enough or was in a top
    /// list; returns 1 when it is only counted as short-lived.
    pub(super) fn exit(&mut self, p: &mut Proc, now_ms: u64, emit: &mut dyn FnMut(Event)) -> u32 {
        if p.fd.take().is_some() {
            self.kept -= 1;
        }
        let lifetime_ms = now_ms.saturating_sub(p.start * 1000 / self.hz);
        let r = if p.flags & F_WAS_TOP != 0 || lifetime_ms >= self.min_life_ms {
            let mut comm = Comm::new();
            crate::parse::to_label(p.comm(), COMM_LEN, &mut comm);
            let mut cmdline = Cmdline::new();
            if p.slot != NO_SLOT {
                let s = p.slot as usize;
                let _ = cmdline.push_str(
                    core::str::from_utf8(&self.cmd_slots[s][..self.cmd_lens[s] as usize])
                        .unwrap_or(""),
                );
            }
            let status = if p.flags & F_EXITED != 0 {
                let c = ExitCode::from_wait_status(p.exit_raw);
                ExitStatus {
                    seen: ExitSeen::Kernel,
                    code: c.code,
                    signal: c.signal,
                    core_dumped: c.core_dumped,
                    oom_killed: p.flags & F_OOM != 0,
                    before_ms: mono_ns()
                        .saturating_sub(p.exit_ns)
                        .div_ceil(1_000_000)
                        .min(u32::MAX as u64) as u32,
                }
            } else {
                ExitStatus {
                    seen: ExitSeen::Scan,
                    code: None,
                    signal: None,
                    core_dumped: false,
                    oom_killed: p.flags & F_OOM != 0,
                    before_ms: 0,
                }
            };
            emit(Event::ProcessEnd(ProcessEnd {
                exit: ProcessExit {
                    process: ProcessInfo {
                        pid: p.pid,
                        ppid: p.ppid,
                        comm,
                        cmdline,
                        start_ticks: p.start,
                    },
                    lifetime_ms,
                    cpu_ticks: p.utime.saturating_add(p.stime),
                },
                status,
            }));
            0
        } else {
            1
        };
        if p.slot != NO_SLOT {
            self.cmd_free.push(p.slot);
            p.slot = NO_SLOT;
        }
        r
    }
}
